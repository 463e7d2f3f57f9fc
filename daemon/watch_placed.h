/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * watch_placed - the loop's ledger of the watches jobs place in workers
 *
 * On a file system that may stop answering, the job that opens an object
 * places its watch (WatchPlaced in watch_table.h), and the loop links with
 * the wd it got. Between the two the loop may remove watches. This ledger
 * is what the table keeps to tell a link whether the watch its job found
 * is still the kernel's:
 *   - the jobs that may place out (placed_ledger_begin(), _end());
 *   - the placed watches no link took (strays): another job out may have
 *     found one, so each is removed only once no job is out, or at once
 *     past PLACED_STRAYS_MAX;
 *   - the table's removals, numbered: a job reads the number before its
 *     add (placed_ledger_seq(), any thread), and a watch it found is gone
 *     if its wd was removed after that (placed_ledger_gone()). The last
 *     PLACED_RELEASED_MAX removals made while jobs are out are kept;
 *     a job older than the oldest of them counts its found watch as gone.
 *     So a job that never ends (its file system stopped) costs the others
 *     nothing: what counts is the removals since each one's own add.
 * Split out of watch_table.c, which alone uses it; it calls nothing of the
 * table but the sweep it is given.
 */

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* Bounds of what is kept while jobs are out (see above). */
#define PLACED_STRAYS_MAX   1024u
#define PLACED_RELEASED_MAX 4096u

/* A stray to remove (if the table does not know wd: a link took it since). */
typedef void (*PlacedSweep)(int wd, void *userdata);

typedef struct PlacedRemoval {
        int wd;
        uint64_t seq; /* PlacedLedger.seq after its removal */
} PlacedRemoval;

typedef struct PlacedLedger {
        PlacedSweep sweep;
        void *userdata;
        unsigned placing;      /* jobs out that may place */
        GArray *strays;        /* int: placed wds no link took */
        uint64_t seq;          /* removals so far (written on the loop, read by workers) */
        GHashTable *released;  /* wd -> the seq of its last removal kept */
        PlacedRemoval *ring;   /* the last PLACED_RELEASED_MAX removals, in order */
        unsigned n_ring, head; /* in the ring; the oldest, once it is full */
        uint64_t forgot;       /* the seq of the newest removal no longer kept */
} PlacedLedger;

void placed_ledger_init(PlacedLedger *l, PlacedSweep sweep, void *userdata);
void placed_ledger_done(PlacedLedger *l);

/* Any thread: the removals so far, read by a job before its add. */
uint64_t placed_ledger_seq(const PlacedLedger *l);
/* On the loop, after the kernel removed wd. */
void placed_ledger_removed(PlacedLedger *l, int wd);
/* Whether a watch (wd) a job found, having read seq before its add, may
 * have been removed since. */
bool placed_ledger_gone(const PlacedLedger *l, int wd, uint64_t seq);

/* A placed wd no link took: swept once no job is out (at once, all of
 * them, past PLACED_STRAYS_MAX). */
void placed_ledger_stray(PlacedLedger *l, int wd);
/* A job that may place was submitted. */
void placed_ledger_begin(PlacedLedger *l);
/* Its completion is over: the last one out sweeps the strays and forgets the removals. */
void placed_ledger_end(PlacedLedger *l);
