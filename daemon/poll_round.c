/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * poll_round - a round's changes given out as records
 *
 * The changes of all the directories of a group's round (or of one first
 * snapshot that reports what exists) are paired into moves, then given out
 * through the caller's emit (poller.c makes each a PollerCallbacks.record)
 * in the order a reader of the kernel's records would expect: deletions,
 * moves, creations, modifications.
 *
 * Pairing goes by inode number: an inode that left exactly one name and took
 * exactly one other, with the same file type, was moved; any other pattern
 * (hard links coming and going) is deletions and creations. An inode number
 * freed and reused between two polls looks like a move: polling cannot tell
 * them apart.
 */

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "event_bits.h"
#include "poll_round.h"

static uint32_t isdir_bit(uint32_t mode) {
        return S_ISDIR(mode) ? IN_ISDIR : 0;
}

static char *place_key(const PollDir *d, const char *name) {
        /* No name holds a '/': pointer and name cannot run into each other. */
        return g_strdup_printf("%p/%s", (const void *) d, name);
}

/* Pairs GONE and APPEARED of one inode into moves. */
static void pair_moves(GPtrArray *changes) {
        g_autoptr(GHashTable) gone = g_hash_table_new(g_int64_hash, g_int64_equal);
        g_autoptr(GHashTable) appeared = g_hash_table_new(g_int64_hash, g_int64_equal);
        static Change ambiguous;

        for (size_t i = 0; i < changes->len; i++) {
                Change *c = g_ptr_array_index(changes, i);
                GHashTable *h;
                Change *old;

                if (c->dropped || c->kind == CHANGE_MODIFIED)
                        continue;
                h = c->kind == CHANGE_GONE ? gone : appeared;
                old = g_hash_table_lookup(h, &c->ino);
                g_hash_table_insert(h, &c->ino, old ? &ambiguous : c);
        }
        for (size_t i = 0; i < changes->len; i++) {
                Change *c = g_ptr_array_index(changes, i), *from;

                if (c->dropped || c->kind != CHANGE_APPEARED)
                        continue;
                if (g_hash_table_lookup(appeared, &c->ino) != c)
                        continue;
                from = g_hash_table_lookup(gone, &c->ino);
                if (!from || from == &ambiguous || !poll_same_type(from->mode, c->mode))
                        continue;
                from->partner = c;
                c->partner = from;
        }
}

/* A GONE paired with an APPEARED, both still wanted. */
static bool is_move(const Change *c) {
        return c->kind == CHANGE_GONE && c->partner && !c->dropped && c->dir && !c->partner->dropped && c->partner->dir;
}

static void emit_move(PollRoundEmit emit, void *data, Change *c, GHashTable *sources, GHashTable *moved) {
        g_autofree char *key = place_key(c->dir, c->name);

        g_hash_table_add(moved, &c->ino);
        emit(data, IN_MOVED_FROM | IN_MOVED_TO | isdir_bit(c->mode), c->dir, c->name, c->partner->dir, c->partner->name);
        c->emitted = true;
        g_hash_table_remove(sources, key);
}

/* Gives out a round's changes: deletions, moves, creations, modifications. */
void poll_round_emit(GPtrArray *changes, PollRoundEmit emit, void *data) {
        g_autoptr(GHashTable) sources = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GHashTable) moved = g_hash_table_new(g_int64_hash, g_int64_equal);
        size_t left = 0;

        pair_moves(changes);

        for (size_t i = 0; i < changes->len; i++) {
                Change *c = g_ptr_array_index(changes, i);

                if (c->dropped || !c->dir)
                        continue;
                if (c->kind == CHANGE_GONE && !is_move(c))
                        emit(data, IN_DELETE | isdir_bit(c->mode), c->dir, c->name, NULL, NULL);
                else if (is_move(c)) {
                        g_hash_table_insert(sources, place_key(c->dir, c->name), c);
                        left++;
                }
        }

        /* Moves: one into a name that another moves out of waits for it
         * (b->c before a->b); a cycle (a->b, b->a) is broken where it is
         * found. */
        while (left > 0) {
                bool progress = false;

                for (size_t i = 0; i < changes->len; i++) {
                        Change *c = g_ptr_array_index(changes, i);
                        g_autofree char *dest = NULL;
                        Change *blocker;

                        if (!is_move(c) || c->emitted)
                                continue;
                        dest = place_key(c->partner->dir, c->partner->name);
                        blocker = g_hash_table_lookup(sources, dest);
                        if (blocker && blocker != c)
                                continue;
                        emit_move(emit, data, c, sources, moved);
                        left--;
                        progress = true;
                }
                for (size_t i = 0; !progress && i < changes->len; i++) {
                        Change *c = g_ptr_array_index(changes, i);

                        if (is_move(c) && !c->emitted) {
                                emit_move(emit, data, c, sources, moved);
                                left--;
                                progress = true;
                        }
                }
        }

        for (size_t i = 0; i < changes->len; i++) {
                Change *c = g_ptr_array_index(changes, i);

                if (c->dropped || !c->dir || c->kind != CHANGE_APPEARED)
                        continue;
                if (!c->partner || !is_move(c->partner))
                        emit(data, IN_CREATE | isdir_bit(c->mode), c->dir, c->name, NULL, NULL);
        }
        for (size_t i = 0; i < changes->len; i++) {
                Change *c = g_ptr_array_index(changes, i);
                uint32_t m;

                if (c->dropped || !c->dir)
                        continue;
                if (c->kind == CHANGE_MODIFIED)
                        /* Another name of a moved inode (a hard link) had its
                         * ctime changed by the rename, not by a change of its own. */
                        m = g_hash_table_contains(moved, &c->ino) ? poll_entry_changes(&c->before, &c->after, true) :
                                                                    c->mask;
                else if (c->kind == CHANGE_APPEARED && c->partner && c->partner->emitted)
                        m = poll_entry_changes(&c->partner->before, &c->after, true);
                else
                        continue;
                if (m)
                        emit(data, m | isdir_bit(c->mode), c->dir, c->name, NULL, NULL);
        }
}
