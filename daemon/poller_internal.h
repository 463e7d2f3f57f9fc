/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * poller_internal - what poller.c (the rounds, their scheduling, the users'
 * turns, the jobs in workers), poll_heap.c (the groups between rounds),
 * poll_round.c (a round's changes paired into moves and given out) and
 * poll_snapshot.c (reading a directory a system call at a time, and
 * comparing two snapshots) share, and no one else
 */

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "poller.h"

#define STATX_WANTED \
        (STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_INO | STATX_SIZE | STATX_MTIME | STATX_CTIME)
#define GETDENTS_BUFFER (32u * 1024u)

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

/* Puts name of dirfd's directory into s as it is now: stat'ed again, or
 * taken out if gone; left as it was if it cannot be stat'ed. Return: 0,
 * -ENOMEM. */
int poll_snapshot_restat(PollSnapshot *s, int dirfd, const char *name, PollIo *io);

void poll_reader_done(PollReader *r);

void poll_reader_init(PollReader *r, const PollReadHook *hook);

/*
 * One step of reading the directory at fd: open, one getdents64, or one
 * statx, as long as *budget lasts. Return: 1 when the snapshot is whole,
 * 0 when the budget ran out first, -errno when the directory cannot be read.
 */
int poll_reader_step(PollReader *r, int fd, unsigned *budget, PollIo *io);

/* What changed in an entry that kept its name and inode (IN_MODIFY, IN_ATTRIB or 0). */
uint32_t poll_entry_changes(const PollEntry *o, const PollEntry *n, bool moved);

void poll_change_free(gpointer p);

bool poll_same_type(uint32_t a, uint32_t b);

/* Appends to out what changed from o to n in d. */
int poll_snapshot_diff(PollDir *d, const PollSnapshot *o, const PollSnapshot *n, GPtrArray *out);

struct PollDir {
        PollGroup *group;
        int fd;
        void *userdata;
        GList group_link;    /* in group->dirs */
        GList baseline_link; /* in group->user->baseline while it has no snapshot */
        GList stale_link;    /* in poller->stale while noted is not empty */
        bool in_baseline, in_stale;
        bool have_snap;
        bool report_existing; /* the first snapshot's names are creations */
        bool round_done;      /* read in the current round */
        int error;            /* the last read's -errno, 0 if it worked */
        PollSnapshot snap;
        PollReader reader;
        bool reading;
        GHashTable *noted; /* names the kernel reported, not yet stat'ed */

        /* A job in a worker (PollerCallbacks.submit): until it is done, its
         * reader, snapshot and fd are the worker's, and nothing here touches
         * them. A directory freed meanwhile is dead, freed at the job's end. */
        bool busy, dead;
        bool job_done;    /* a read job returned: job_result waits for dir_read() */
        bool job_reading; /* its reading is in jobs: job_end() when it is over */
        bool priming;     /* its first snapshot was submitted by poller_dir_prime() */
        int job_kind;
        int job_result;
        PollIo job_io;
        GHashTable *job_names;  /* JOB_RESTAT: the noted names it stats */
        GHashTable *noted_busy; /* names the kernel reported while a read job ran: the
                                 * read's changes for them are the kernel's to report */
};

/*
 * A uid's share of the poller. Its work (first snapshots, then rounds) is
 * done in turns of at most USER_TURN system calls, the users with work
 * taking turns in a ring: so one user's large directories make its own
 * polling slow, not everyone's.
 */
typedef struct PollUser {
        uid_t uid;
        unsigned groups; /* its groups: it is freed with the last */
        uint32_t dirs;   /* directories polled */
        GQueue baseline; /* its PollDir without a first snapshot */
        GQueue active;   /* its groups in a round, in the order they became due */
        GList turn_link; /* in poller->turns while baseline or active is not empty */
        bool in_turns;
        PollDir *blocked_on; /* its work waits for this directory's job: out of turns */
        unsigned spent;      /* system calls of its current turn */
} PollUser;

struct PollGroup {
        Poller *poller;
        PollUser *user;
        uid_t uid;
        uint64_t interval;
        uint64_t next_round; /* scheduled start of the next round */
        size_t heap_index;   /* in poller->heap, SIZE_MAX if not there (in a round, or ending one) */
        bool in_round;
        GList active_link;   /* in user->active during a round */
        GQueue dirs;         /* PollDir, in the order they were added */
        GList *cursor;       /* the round's current directory */
        GPtrArray *changes;  /* Change: the round's, until it ends */
        GPtrArray *emitting; /* the changes being given out (a free waits), or NULL */
        bool dead;           /* freed while emitting */
        void *userdata;
};

struct Poller {
        PollerCallbacks cb;
        void *userdata;
        unsigned ops_per_run;
        uint32_t max_dirs_per_user;
        GHashTable *users; /* uid -> PollUser */
        GPtrArray *heap;   /* PollGroup: groups between rounds, min-heap on next_round */
        GQueue turns;      /* PollUser with work, the one whose turn it is first */
        GQueue stale;      /* PollDir with names noted */
        uint64_t sequence; /* groups made: their phases */
        unsigned budget;   /* left in this run */
        PollIo io;
};

/* poll_heap.c: the groups between rounds, a min-heap on next_round. */
PollGroup *poll_heap_at(const Poller *p, size_t i);
int poll_heap_push(Poller *p, PollGroup *g);
void poll_heap_remove(Poller *p, PollGroup *g);

/* poll_round.c: gives out a round's changes as g's records (PollerCallbacks.record):
 * deletions, moves, creations, modifications. */
void poll_round_emit(PollGroup *g, GPtrArray *changes);
