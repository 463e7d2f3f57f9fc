/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watch_placed - the loop's ledger of the watches jobs place in workers
 * (see watch_placed.h).
 */

#include <assert.h>
#include <stdlib.h>

#include "watch_placed.h"

void placed_ledger_init(PlacedLedger *l, PlacedSweep sweep, void *userdata) {
        *l = (PlacedLedger) {
                .sweep = sweep,
                .userdata = userdata,
        };
}

void placed_ledger_done(PlacedLedger *l) {
        if (l->strays)
                g_array_unref(l->strays);
        if (l->released)
                g_hash_table_destroy(l->released);
        free(l->ring);
}

uint64_t placed_ledger_seq(const PlacedLedger *l) {
        return __atomic_load_n(&l->seq, __ATOMIC_ACQUIRE);
}

/* wd's removal seq kept; the oldest kept forgotten past PLACED_RELEASED_MAX. */
static void released_add(PlacedLedger *l, int wd, uint64_t seq) {
        if (!l->ring) {
                l->ring = calloc(PLACED_RELEASED_MAX, sizeof(PlacedRemoval));
                if (!l->ring) {
                        l->forgot = seq; /* any may be gone */
                        return;
                }
                l->released = g_hash_table_new(g_direct_hash, g_direct_equal);
        }
        if (l->n_ring == PLACED_RELEASED_MAX) {
                PlacedRemoval *old = &l->ring[l->head];

                if (GPOINTER_TO_SIZE(g_hash_table_lookup(l->released, GINT_TO_POINTER(old->wd))) == old->seq)
                        g_hash_table_remove(l->released, GINT_TO_POINTER(old->wd));
                l->forgot = old->seq;
                *old = (PlacedRemoval) { wd, seq };
                l->head = (l->head + 1) % PLACED_RELEASED_MAX;
        } else
                l->ring[l->n_ring++] = (PlacedRemoval) { wd, seq };
        g_hash_table_insert(l->released, GINT_TO_POINTER(wd), GSIZE_TO_POINTER(seq));
}

void placed_ledger_removed(PlacedLedger *l, int wd) {
        uint64_t seq = l->seq + 1;

        /* After the kernel's removal: a job that read the seq before may
         * have found the watch, one that read it after cannot have. */
        __atomic_store_n(&l->seq, seq, __ATOMIC_RELEASE);
        if (l->placing > 0)
                released_add(l, wd, seq);
}

bool placed_ledger_gone(const PlacedLedger *l, int wd, uint64_t seq) {
        gpointer removed;

        if (l->released && g_hash_table_lookup_extended(l->released, GINT_TO_POINTER(wd), NULL, &removed) &&
            GPOINTER_TO_SIZE(removed) > seq)
                return true;
        return l->forgot > seq; /* so many removals since that its own is not known */
}

/* Removes the strays no link took since (the sweep checks). */
static void strays_sweep(PlacedLedger *l) {
        if (!l->strays)
                return;
        for (guint i = 0; i < l->strays->len; i++)
                l->sweep(g_array_index(l->strays, int, i), l->userdata);
        g_array_set_size(l->strays, 0);
}

void placed_ledger_stray(PlacedLedger *l, int wd) {
        if (!l->strays)
                l->strays = g_array_new(FALSE, FALSE, sizeof(int));
        g_array_append_val(l->strays, wd);
        if (l->strays->len > PLACED_STRAYS_MAX)
                strays_sweep(l); /* a job that found one of them gets -WATCHD_E_PLACED_GONE */
}

void placed_ledger_begin(PlacedLedger *l) {
        l->placing++;
}

void placed_ledger_end(PlacedLedger *l) {
        assert(l->placing > 0);
        if (--l->placing > 0)
                return;
        strays_sweep(l);
        /* No job out: none can have found a watch removed so far. */
        if (l->released)
                g_hash_table_remove_all(l->released);
        l->n_ring = l->head = 0;
        l->forgot = 0;
}
