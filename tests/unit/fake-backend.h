/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * fake-backend - a kernel interface for unit tests
 *
 * Behaves like the kernel's inode-keyed watch list: the same inode gives the
 * same wd, a new mask replaces the old (IN_MASK_ADD adds to it and
 * IN_MASK_CREATE is EEXIST on a watched inode, once a test sets
 * backend.mask_add), and it records every call. What a
 * test wants the daemon to read it queues as records (fake_backend_push),
 * in the kernel's byte layout, so the decoder and everything above it run
 * as they do on the real fd. Files are real (the tests use a temporary
 * directory), so the opens and fstats of the daemon run too.
 */

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "fswork.h"

#define FAKE_WATCHES_MAX 8192 /* wds are not reused: past PLACED_RELEASED_MAX removals */

typedef struct FakeWatch {
        dev_t dev;
        ino_t ino;
        uint32_t mask;
        bool live;
} FakeWatch;

typedef struct FakeBackend {
        Backend backend;
        FakeWatch watches[FAKE_WATCHES_MAX]; /* index = wd; wd 0 is used, as on the device */
        int next_wd;
        unsigned n_add, n_rm;
        unsigned n_read;   /* read calls, those that got EAGAIN too */
        int fail_add;      /* -errno for the next add, 0 for none */
        GByteArray *queue; /* records to read */
} FakeBackend;

FakeBackend *fake_backend_new(void);
void fake_backend_free(FakeBackend *f);

/* The live wd on path's inode, or -1. */
int fake_backend_wd(FakeBackend *f, const char *path);
/* Live kernel watches. */
unsigned fake_backend_n_live(const FakeBackend *f);
/* Queues a record for the daemon to read (name may be NULL). */
void fake_backend_push(FakeBackend *f, int wd, uint32_t mask, uint32_t cookie, const char *name);

/* Runs the completions of the jobs of w until none is queued or running. */
void fswork_settle(FsWork *w);
/* Waits until none of w's jobs is queued or running, and runs no completion. */
void fswork_await_idle(FsWork *w);
