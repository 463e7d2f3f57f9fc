/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * poll_group - the poller's directories, users and groups: the structs
 * that poller.c and poll_heap.c share, and no one else. Below both, it
 * includes no header of theirs: the Poller itself, which holds the
 * callbacks, is in poller_internal.h.
 */

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "poll_snapshot.h"
#include "poller_types.h"

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
