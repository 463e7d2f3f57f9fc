/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * fan_dircache - directory handles to where the directories are, for one
 * filesystem that a fanotify group reports by handle
 *
 * A fanotify event names a directory by its file handle and an entry in it
 * by name (fan_decode.h). To tell which subscriptions it is for, the tree
 * backend needs to know where that directory is: below which subscription
 * roots, and by what path. This cache keeps a tree of the directories it has
 * met (FanDir), each with its parent and its name, keyed by handle; a path
 * is built by walking up, as watch_link_path() does for inotify links.
 *
 * It is always closed upwards: a directory's parent, and so every ancestor
 * up to a top, is in the cache too. A top is the root of the mount the
 * handles are opened through, or the highest directory reachable from a
 * handle when that mount does not reach it (FanDirOps.lookup says which). So
 * a rename of any directory that has something cached below it names a
 * directory that is cached itself, and moving that one node moves everything
 * below it; a rename of a directory not in the cache changes nothing cached.
 *
 * It learns in three ways:
 *  - from the events themselves, with no system call: a directory created
 *    (FAN_CREATE with FAN_ONDIR reports the new directory's handle) in a
 *    cached one is added below it (fan_dircache_created()); a rename moves
 *    a cached directory (fan_dircache_renamed()); a deletion drops it
 *    (fan_dircache_deleted());
 *  - by asking the filesystem (FanDirOps.lookup: its name and its parent's
 *    handle, now) for a directory that was there before the cache met it,
 *    walking up until a cached directory or a top (fan_dircache_resolve());
 *  - by being told that it may be wrong (a queue overflow lost renames):
 *    fan_dircache_clear() forgets everything but the pinned directories,
 *    which are looked up again at once.
 *
 * A directory asked about after it has been renamed, before the rename's
 * event is read, is found at its new place: its earlier events are reported
 * under its new path (watchd(8) says so). The cache holds at most max_dirs
 * directories besides the pinned ones; past that it is cleared, as at an
 * overflow (without Overflow: nothing was lost).
 *
 * Permission: fan_dircache_may_read() answers whether a caller could read a
 * directory's entries the way a RECURSIVE walk as that caller would reach it
 * (tree.h): search permission on every directory from the subscription's root
 * down to its parent, read permission on the directory itself. The kernel's
 * own answer for each directory (FanDirOps.access, faccessat as the caller)
 * is kept per directory and caller until the directory's attributes change
 * (fan_dircache_attrib()). Caller 0 is root, which may read everything (the
 * daemon's CAP_DAC_READ_SEARCH) and is never asked about.
 *
 * Pure: every system call is behind FanDirOps (tests/unit/test-fan-dircache.c
 * runs it on a filesystem of its own making).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fan_decode.h"
#include "list.h"

typedef struct FanDirCache FanDirCache;
typedef struct FanDir FanDir;

/* FanDirOps.access bits. */
#define FAN_DIR_MAY_READ   0x1u /* list its entries (R_OK) */
#define FAN_DIR_MAY_SEARCH 0x2u /* go through it (X_OK) */

typedef struct FanDirOps {
        /*
         * Where the directory with handle h is now: its name in its parent
         * (ret_name: NAME_MAX + 1 bytes) and its parent's handle (written to
         * ret_parent, whose bytes point to parent_bytes: FAN_HANDLE_MAX
         * bytes). Return: 0, or 1 if it is a top (nothing written), or
         * -ESTALE (it is gone), -errno.
         */
        int (*lookup)(const FanHandle *h, FanHandle *ret_parent, uint8_t *parent_bytes, char *ret_name, void *userdata);
        /* What caller may do with the directory with handle h: FAN_DIR_MAY_* bits, or -errno. */
        int (*access)(const FanHandle *h, uint32_t caller, void *userdata);
} FanDirOps;

typedef struct FanVerdict {
        uint32_t caller;
        uint8_t bits; /* FanDirOps.access's answer; 0 for an error */
} FanVerdict;

/* The cache keeps a few callers' answers per directory (round robin). */
#define FAN_DIR_VERDICTS 4u

struct FanDir {
        FanDir *parent; /* NULL: a top, or detached (below) */
        LIST_HEAD(FanDir, children);
        LIST_FIELDS(FanDir, sib);    /* among parent->children */
        LIST_FIELDS(FanDir, pinned); /* in the cache's pinned list, while n_pins > 0 */
        char *name;                  /* in its parent ("" for a top) */
        void *roots;                 /* the layer above's: what is rooted here, or NULL */
        unsigned n_pins;
        bool top; /* FanDirOps.lookup said so */
        uint8_t n_verdicts, next_verdict;
        FanVerdict verdicts[FAN_DIR_VERDICTS];
        uint32_t hash;
        FanHandle handle; /* its bytes are handle_bytes */
        uint8_t handle_bytes[];
};

int fan_dircache_new(const FanDirOps *ops, void *userdata, size_t max_dirs, FanDirCache **ret);
FanDirCache *fan_dircache_free(FanDirCache *c);

/* The cached directory of h, or NULL. */
FanDir *fan_dircache_get(FanDirCache *c, const FanHandle *h);

/* The directory of h, looked up (and its ancestors up to a cached one or a
 * top) if not cached. Return: 0, or -ESTALE (gone), -errno. */
int fan_dircache_resolve(FanDirCache *c, const FanHandle *h, FanDir **ret);

/* A directory the layer above keeps a pointer to (a subscription's root):
 * resolved, and never forgotten until unpinned. */
int fan_dircache_pin(FanDirCache *c, const FanHandle *h, FanDir **ret);
void fan_dircache_unpin(FanDirCache *c, FanDir *d);

/* The events: a directory created (parent, name, its own handle), renamed,
 * deleted; the attributes (mode, owner, ACL) of a directory changed. */
void fan_dircache_created(FanDirCache *c, const FanHandle *parent, const char *name, size_t name_len,
                          const FanHandle *child);
void fan_dircache_renamed(FanDirCache *c, const FanHandle *new_parent, const char *new_name, size_t new_name_len,
                          const FanHandle *child);
void fan_dircache_deleted(FanDirCache *c, const FanHandle *h);
void fan_dircache_attrib(FanDirCache *c, const FanHandle *h);

/* Forgets every directory but the pinned ones, which are looked up again. */
void fan_dircache_clear(FanDirCache *c);

size_t fan_dircache_size(const FanDirCache *c);

/* The path of d below root ("" for root itself, else "a/b", no leading
 * slash) into buf. Return: its length, or -ENOENT (d is not root nor below
 * it), -ENAMETOOLONG. */
int fan_dir_path_below(const FanDir *d, const FanDir *root, char *buf, size_t size);

/* Whether caller may read the entries of d, reached from root as a
 * RECURSIVE walk would (above). Return: 1, 0, or 0 when d is not below root. */
bool fan_dircache_may_read(FanDirCache *c, const FanDir *root, FanDir *d, uint32_t caller);
