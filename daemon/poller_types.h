/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * poller_types - the words of poller.h that poller_internal.h needs too:
 * the Poller, its groups and directories (opaque here), the records it
 * finds and the callbacks it is given (PollerCallbacks, which the Poller
 * holds). poller.h and poller_internal.h include it; it includes no header
 * of the poller.
 */

#include <stdint.h>

typedef struct Poller Poller;
typedef struct PollGroup PollGroup;

/* A record found by polling. */
typedef struct PollRecord {
        uint32_t mask; /* one of IN_CREATE, IN_DELETE, IN_MODIFY, IN_ATTRIB,
                        * IN_MOVED_FROM|IN_MOVED_TO; with IN_ISDIR for a directory */
        void *dir;     /* the userdata of name's directory */
        const char *name;
        void *new_dir;        /* a move's destination directory, else NULL */
        const char *new_name; /* a move's new name, else NULL */
} PollRecord;

typedef struct PollDir PollDir;

typedef struct PollerCallbacks {
        /* Before reads of dir (its userdata) as group's subscriber. Return:
         * 0, or -errno: then dir is not read this round, as if it failed. */
        int (*begin)(void *group, void *dir, void *userdata);
        /* After them; every begin() that returned 0 gets its end(). */
        void (*end)(void *group, void *dir, void *userdata);
        /* A record of group's round. */
        void (*record)(void *group, const PollRecord *r, void *userdata);
        /* dir could not be read (-errno: -ENOENT, -ESTALE, -EACCES...), or can
         * again (0). Called when that changes, not every round. */
        void (*error)(void *group, void *dir, int error, void *userdata);
        /* The poller opened dir's directory for reading (what: IN_OPEN), read
         * it with one getdents64 (IN_ACCESS) or closed it (IN_CLOSE_NOWRITE):
         * the kernel reports that to the directory's watchers, and to its
         * parent's, as if anyone had. Optional. */
        void (*read_op)(void *group, void *dir, uint32_t what, void *userdata);

        /*
         * Optional: the reads of a directory in a worker thread. Called
         * instead of begin/read/end: the layer above runs poller_dir_job_run(d)
         * elsewhere, with group's subscriber's credentials, and calls
         * poller_dir_job_done(d, error) back on the poller's thread when it
         * returns. Until then d's reading is the worker's: d's user waits for
         * it (the other users go on), and read_op is not called for what
         * it does (the layer above expects those records itself from the
         * call of submit to its job_end). Return: 0, or -errno: then the
         * reads are made here, as without it.
         */
        int (*submit)(void *group, void *dir, PollDir *d, void *userdata);
        /* The reads submitted for dir are over (its last job's completion). Optional. */
        void (*job_end)(void *group, void *dir, void *userdata);
        /* The first snapshot poller_dir_prime() submitted is taken (or could not be). Optional. */
        void (*primed)(void *group, void *dir, void *userdata);
} PollerCallbacks;
