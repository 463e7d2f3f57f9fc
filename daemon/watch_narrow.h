/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * watch_narrow - a shared kernel watch narrowed in a worker
 *
 * When one of the subscriptions sharing a kernel watch ends, the table
 * (watch_table.c) narrows the watch to what is left. No caller's descriptor
 * is open then, so the watch's path is opened again (as the daemon) and the
 * watch added anew: a path walk and a permission check that wait for a file
 * system that does not answer (a stopped FUSE daemon: LOOKUP, GETATTR). Here
 * that runs as a job in the lane of the watch's file system, counted as the
 * user whose link went (fswork_submit_daemon()), and adds through
 * /proc/self/fd/N (backend_add_watch_any_thread(): a batch on the loop moves
 * the whole process's working directory).
 *
 * A job is keyed by the caller's pointer (the table's Watch). The loop and
 * the worker share its state under its lock: before the loop widens the
 * watch with bits the job would take away it settles the job
 * (narrower_settle()): not started, it is cancelled; applied, its mask is the
 * kernel's; in the kernel call, the loop waits for that one add (of the
 * inode the loop is about to add again itself, which would wait as long).
 * A watch that goes forgets its job (wait false): whatever the job does
 * then is not the watch's, and an add that lands after the watch was
 * removed makes a watch of its own, which the completion reports (other_wd)
 * for the table to remove.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "fswork.h"

typedef struct Narrower Narrower;

typedef struct NarrowResult {
        int error;     /* 0: run; -ESHUTDOWN: the pool went (nothing was done) */
        bool applied;  /* the kernel's mask of the watch is mask now */
        uint32_t mask; /* what the job set */
        int other_wd;  /* >= 0: the add found or made this other watch of the inode, with mask */
        const char *path;
        int r; /* why it was not applied (-errno), for the log */
} NarrowResult;

/* On the loop, at a job's end. key: NULL if settled meanwhile (only other_wd
 * then counts). */
typedef void (*NarrowDone)(const void *key, const NarrowResult *res, void *userdata);

int narrower_new(Backend *backend, NarrowDone done, void *userdata, Narrower **ret);
/* The jobs still out are forgotten: their completions free them, and say nothing. */
Narrower *narrower_free(Narrower *n);
/* NULL: no job can be submitted (narrower_submit() says -EOPNOTSUPP). */
void narrower_set_fswork(Narrower *n, FsWork *fswork);
bool narrower_has_fswork(const Narrower *n);

/* Sets the kernel mask of the watch wd on (dev, ino) at path to mask, in a
 * job; key must have none out. Return: 0, or -errno: not submitted. */
int narrower_submit(Narrower *n, const void *key, const char *path, dev_t dev, ino_t ino, int wd, uint32_t mask,
                    uid_t uid);
/* Whether key has a job out, and the mask it sets. */
bool narrower_out(Narrower *n, const void *key, uint32_t *ret_mask);
/*
 * A watch placed in a worker (watch_table_place()) with IN_MASK_ADD may lose
 * its bits to a narrowing's add of the same inode that lands after it. The
 * narrowings' kernel calls are counted, the last NARROWER_TOUCHED_RING with
 * their inodes: narrower_seq() before the add, narrower_touched() at the
 * completion says whether one of (dev, ino) may have come after (true also
 * when more than NARROWER_TOUCHED_RING came). Any thread.
 */
#define NARROWER_TOUCHED_RING 64u
uint64_t narrower_seq(void);
bool narrower_touched(dev_t dev, ino_t ino, uint64_t seq);
/* The loop is done with key's job (see the top). Return: true, with the
 * mask now in the kernel, when wait and it was applied. */
bool narrower_settle(Narrower *n, const void *key, bool wait, uint32_t *ret_mask);
