/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * poll_snapshot - a directory's names and their attributes, read a system
 * call at a time, and what changed between two snapshots
 *
 * The lowest layer of the poller (poller.h): it knows nothing of groups,
 * rounds or users. A Change points at the poller's directory (PollDir) it
 * was found in, and only points: what a PollDir holds is the poller's.
 */

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "poll_io.h"

/* One name of a directory. */
typedef struct PollEntry {
        char *name;
        uint64_t ino;
        uint32_t mode; /* S_IFMT and permission bits */
        uint32_t uid, gid;
        uint64_t size;
        int64_t mtime_ns, ctime_ns;
        bool no_stat; /* statx failed (no search permission): ino and
                       * type from getdents only, nothing else compared */
} PollEntry;

/* A directory's names. */
typedef struct PollSnapshot {
        GArray *entries; /* PollEntry, sorted by strcmp() of their names; NULL: none yet */
} PollSnapshot;

static inline size_t poll_snapshot_size(const PollSnapshot *s) {
        return s->entries ? s->entries->len : 0;
}

static inline PollEntry *poll_snapshot_entry(const PollSnapshot *s, size_t i) {
        return &g_array_index(s->entries, PollEntry, i);
}

void poll_snapshot_done(PollSnapshot *s);

/* Reads dirfd's directory whole (any fd of it, O_PATH included), counting in
 * *io. Return: 0, or -errno of the open or of getdents64. */
int poll_snapshot_read(int dirfd, PollIo *io, PollSnapshot *ret);

/* Puts name of dirfd's directory into s as it is now: stat'ed again, or
 * taken out if gone; left as it was if it cannot be stat'ed. Return: 0,
 * -ENOMEM. */
int poll_snapshot_restat(PollSnapshot *s, int dirfd, const char *name, PollIo *io);

typedef struct PollReadHook {
        void (*fn)(uint32_t what, void *data);
        void *data;
} PollReadHook;

typedef struct PollReader {
        PollReadHook hook; /* told of each open, getdents64 and close */
        int dfd;           /* the directory open for reading, -1 before */
        bool checked;      /* statx'ed (through dfd) */
        bool listed;       /* getdents64 reached the end; snap sorted */
        PollSnapshot snap; /* names listed so far, stat'ed up to stat_next */
        size_t stat_next;
        GHashTable *dirty; /* names the kernel reported during the read: stat'ed again at its end */
} PollReader;

void poll_reader_done(PollReader *r);

void poll_reader_init(PollReader *r, const PollReadHook *hook);

/*
 * One step of reading the directory at fd: open, one getdents64, or one
 * statx, as long as *budget lasts. Return: 1 when the snapshot is whole,
 * 0 when the budget ran out first, -errno when the directory cannot be read.
 */
int poll_reader_step(PollReader *r, int fd, unsigned *budget, PollIo *io);

/* The poller's directory (poller_internal.h), which a Change points at. */
typedef struct PollDir PollDir;

typedef enum ChangeKind {
        CHANGE_GONE,     /* a name and its inode, no more */
        CHANGE_APPEARED, /* a name with a new inode */
        CHANGE_MODIFIED, /* same name, same inode: mask says what */
} ChangeKind;

typedef struct Change {
        ChangeKind kind;
        PollDir *dir; /* NULL once the directory is gone */
        char *name;
        uint64_t ino;
        uint32_t mode;
        uint32_t mask;          /* CHANGE_MODIFIED: IN_MODIFY or IN_ATTRIB */
        PollEntry before;       /* GONE, MODIFIED: the entry as it was (no name) */
        PollEntry after;        /* APPEARED, MODIFIED: as it is (no name) */
        struct Change *partner; /* a GONE and an APPEARED paired into a move */
        bool dropped;           /* the kernel reported this name meanwhile */
        bool emitted;
} Change;

/* What changed in an entry that kept its name and inode (IN_MODIFY, IN_ATTRIB or 0). */
uint32_t poll_entry_changes(const PollEntry *o, const PollEntry *n, bool moved);

void poll_change_free(gpointer p);

bool poll_same_type(uint32_t a, uint32_t b);

/* Appends to out what changed from o to n in d. */
int poll_snapshot_diff(PollDir *d, const PollSnapshot *o, const PollSnapshot *n, GPtrArray *out);
