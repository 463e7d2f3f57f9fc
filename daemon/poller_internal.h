/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * poller_internal - the Poller itself, which holds poller.h's
 * PollerCallbacks (in poller_types.h): for poller.c only.
 *
 * The poller's files stand in layers, each calling only those before it:
 * poll_snapshot.c (reading a directory a system call at a time, and
 * comparing two snapshots), poll_heap.c (the groups between rounds),
 * poll_round.c (a round's changes paired into moves and given out through
 * a callback), poller.c (the rounds, their scheduling, the users' turns,
 * the jobs in workers). Each has its header; the structs of the
 * directories, users and groups, which poll_heap.c and poller.c share, are
 * in poll_group.h, below both.
 */

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "poll_group.h"
#include "poll_heap.h"
#include "poll_round.h"
#include "poll_snapshot.h"
#include "poller_types.h"

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
