/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-record - one queued record, and the arena a queue's records are cut from
 *
 * The path as it is joined and its length; records cut from an arena stay
 * whole while others are made and freed around them, in any order; a chunk
 * is freed with its last record, so an arena holds no more chunks than it
 * has records alive (plus the one it cuts from); a record too long for a
 * chunk is a block of its own; records that outlive their arena free their
 * chunks themselves (the sanitizer suite runs this test too).
 */

#include <glib.h>
#include <string.h>

#include "record.h"

static void test_join(void) {
        RecordArena a = {};
        Record *r;

        r = record_new_in(&a, RECORD_EVENT, 1, 0x100, 0, 5, "/d", "name", 4);
        g_assert_cmpstr(r->path, ==, "/d/name");
        g_assert_cmpuint(r->path_len, ==, 7);
        g_assert_nonnull(r->chunk);
        /* What the memory caps count: the struct, its path and its new path. */
        g_assert_cmpuint(record_bytes(r), ==, sizeof(Record) + 8);
        r->new_path = g_strdup("/d/other");
        g_assert_cmpuint(record_bytes(r), ==, sizeof(Record) + 8 + 9);
        record_free(r);
        r = record_new_in(&a, RECORD_EVENT, 1, 0x100, 0, 5, "/", "x", 1);
        g_assert_cmpstr(r->path, ==, "/x");
        g_assert_cmpuint(r->path_len, ==, 2);
        g_assert_cmpuint(record_bytes(r), ==, sizeof(Record) + 3);
        record_free(r);
        r = record_new_in(&a, RECORD_OVERFLOW, 0, 0, 0, 0, NULL, NULL, 0);
        g_assert_cmpstr(r->path, ==, "");
        g_assert_cmpuint(r->path_len, ==, 0);
        g_assert_null(r->new_path);
        record_free(r);
        r = record_new(RECORD_EVENT, 2, 0, 0, 0, "/alone", NULL, 0);
        g_assert_null(r->chunk);
        g_assert_cmpstr(r->path, ==, "/alone");
        g_assert_cmpuint(r->path_len, ==, 6);
        record_free(r);
        record_arena_done(&a);
}

static char *name_of(unsigned i) {
        /* Lengths from 1 to 300: records of every size up to a few in a chunk. */
        unsigned len = 1 + (i * 37u) % 300u;
        char *s = g_malloc(len + 1);

        for (unsigned k = 0; k < len; k++)
                s[k] = (char) ('a' + (i + k) % 26);
        s[len] = '\0';
        return s;
}

static void check(const Record *r, unsigned i) {
        g_autofree char *name = name_of(i), *want = g_strconcat("/dir/", name, NULL);

        g_assert_cmpuint(r->id, ==, i);
        g_assert_cmpstr(r->path, ==, want);
        g_assert_cmpuint(r->path_len, ==, strlen(want));
}

/* Freed in random order, with more made in between: each stays as it was made. */
static void test_any_order(void) {
        g_autoptr(GRand) rand = g_rand_new_with_seed(g_test_rand_int());
        g_autoptr(GPtrArray) alive = g_ptr_array_new();
        RecordArena a = {};
        unsigned next = 0;

        for (int round = 0; round < 20000; round++) {
                if (alive->len == 0 || g_rand_int_range(rand, 0, 3) > 0) {
                        g_autofree char *name = name_of(next);
                        Record *r = record_new_in(&a, RECORD_EVENT, next, 0, 0, 0, "/dir", name, strlen(name));

                        g_assert_nonnull(r);
                        next++;
                        g_ptr_array_add(alive, r);
                } else {
                        guint k = (guint) g_rand_int_range(rand, 0, (gint32) alive->len);
                        Record *r = alive->pdata[k];

                        check(r, r->id);
                        record_free(r);
                        g_ptr_array_remove_index_fast(alive, k);
                }
        }
        for (guint k = 0; k < alive->len; k++) {
                check(alive->pdata[k], ((Record *) alive->pdata[k])->id);
                record_free(alive->pdata[k]);
        }
        /* All gone: only the current chunk is left, kept for the next record, and trimmed. */
        g_assert_cmpuint(record_arena_n_chunks(&a), ==, 1);
        g_assert_true(a.chunks == a.current);
        record_arena_trim(&a);
        g_assert_null(a.current);
        g_assert_null(a.chunks);
        record_arena_done(&a);
}

/* A chunk goes with its last record: a queue that keeps one old record keeps one chunk for it. */
static void test_chunk_freed(void) {
        RecordArena a = {};
        Record *old, *r;
        RecordChunk *first;

        old = record_new_in(&a, RECORD_EVENT, 0, 0, 0, 0, "/dir", "old", 3);
        first = old->chunk;
        /* Enough records to fill several chunks, each freed at once. */
        for (unsigned i = 1; i < 1000; i++) {
                r = record_new_in(&a, RECORD_EVENT, i, 0, 0, 0, "/dir", "some-name-of-a-file", 19);
                g_assert_nonnull(r);
                record_free(r);
        }
        g_assert_true(a.current != first); /* the first one filled up */
        g_assert_true(old->chunk == first);
        g_assert_cmpstr(old->path, ==, "/dir/old");
        /* The emptied ones between went at their last record: the old one's and the current. */
        g_assert_cmpuint(record_arena_n_chunks(&a), ==, 2);
        record_free(old); /* its chunk goes with it */
        g_assert_cmpuint(record_arena_n_chunks(&a), ==, 1);
        g_assert_true(a.chunks == a.current);
        record_arena_trim(&a);
        g_assert_null(a.chunks);
        record_arena_done(&a);
}

/* A record too long for a chunk is malloc'd alone. */
static void test_large(void) {
        RecordArena a = {};
        g_autofree char *name = g_malloc(2001);
        Record *r;

        memset(name, 'n', 2000);
        name[2000] = '\0';
        r = record_new_in(&a, RECORD_EVENT, 1, 0, 0, 0, "/dir", name, 2000);
        g_assert_null(r->chunk);
        g_assert_cmpuint(r->path_len, ==, 2005);
        g_assert_null(a.chunks);
        record_free(r);
        record_arena_done(&a);
}

/* Records still alive when their arena is done free their chunks themselves. */
static void test_outlive(void) {
        RecordArena a = {};
        Record *r[200];

        for (unsigned i = 0; i < G_N_ELEMENTS(r); i++)
                r[i] = record_new_in(&a, RECORD_EVENT, i, 0, 0, 0, "/dir", "a-name-of-a-file", 16);
        record_arena_done(&a);
        g_assert_null(a.chunks);
        for (unsigned i = 0; i < G_N_ELEMENTS(r); i++) {
                g_assert_cmpstr(r[i]->path, ==, "/dir/a-name-of-a-file");
                record_free(r[i]);
        }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/record/join", test_join);
        g_test_add_func("/record/any-order", test_any_order);
        g_test_add_func("/record/chunk-freed", test_chunk_freed);
        g_test_add_func("/record/large", test_large);
        g_test_add_func("/record/outlive", test_outlive);
        return g_test_run();
}
