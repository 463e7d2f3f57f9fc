/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-ptr-set - the open-addressed set of the watch table's maps, against
 * GHashTable as the reference: random adds and removes, with hashes that
 * spread, that run in sequence (a wd), and that collide on purpose (long
 * runs that wrap around the end of the slots, where removal shifts back);
 * and with pointers whose top bits are in use, which turn the tags off.
 *
 * The items are not dereferenced: an item is a key in a pointer's clothing,
 * and the hash functions read the key from the pointer's value.
 */

#include <glib.h>
#include <stdint.h>

#include "ptr_set.h"

#define HIGH_BIT ((uintptr_t) 1 << 60)

static uint64_t key_of(const void *p) {
        return (uint64_t) ((uintptr_t) p & ~HIGH_BIT) >> 4;
}

static uint64_t hash_spread(const void *p) {
        return ptr_set_mix(key_of(p));
}

static uint64_t hash_sequence(const void *p) {
        return ptr_set_mix(key_of(p)) << 32 | (uint32_t) key_of(p);
}

/* Eight homes at the end of the slots, so every run is long and wraps
 * around to slot 0; the tags differ. */
static uint64_t hash_collide(const void *p) {
        return (ptr_set_mix(key_of(p)) & ~(uint64_t) 0xffff) | 0xfff8 | (key_of(p) & 7);
}

static bool match_key(const void *item, const void *key) {
        return key_of(item) == *(const uint64_t *) key;
}

static bool match_item(const void *a, const void *b) {
        return key_of(a) == key_of(b);
}

typedef struct Case {
        const char *name;
        PtrSetHash hash;
        unsigned keys; /* drawn from 1..keys */
        bool high;     /* some pointers use bit 60 */
} Case;

static void *item_of(uint64_t key, bool high) {
        return (void *) ((uintptr_t) (key << 4) | (high ? HIGH_BIT : 0));
}

static void check_all(const PtrSet *s, GHashTable *ref, const Case *c) {
        GHashTableIter i;
        gpointer k, v;
        unsigned seen = 0;
        void *item;

        g_assert_cmpuint(ptr_set_size(s), ==, g_hash_table_size(ref));
        g_hash_table_iter_init(&i, ref);
        while (g_hash_table_iter_next(&i, &k, &v)) {
                uint64_t key = GPOINTER_TO_UINT(k);

                g_assert_true(ptr_set_find(s, c->hash(v), match_key, &key) == v);
        }
        for (uint64_t key = 1; key <= c->keys; key++)
                if (!g_hash_table_contains(ref, GUINT_TO_POINTER(key)))
                        g_assert_null(ptr_set_find(s, c->hash(item_of(key, false)), match_key, &key));
        PTR_SET_FOREACH(item, s) {
                g_assert_true(g_hash_table_lookup(ref, GUINT_TO_POINTER(key_of(item))) == item);
                seen++;
        }
        g_assert_cmpuint(seen, ==, g_hash_table_size(ref));
}

static void test_random(gconstpointer data) {
        const Case *c = data;
        g_autoptr(GHashTable) ref = g_hash_table_new(g_direct_hash, g_direct_equal);
        g_autoptr(GRand) rand = g_rand_new_with_seed(27);
        PtrSet s;

        ptr_set_init(&s, c->hash, match_item);
        /* Grow to full, then drain, then again: every size, shrinking included. */
        for (unsigned round = 0; round < 2; round++) {
                for (unsigned n = 0; n < c->keys * 4; n++) {
                        uint64_t key = (uint64_t) g_rand_int_range(rand, 1, (gint32) c->keys + 1);
                        bool add = n < c->keys * 2 ? g_rand_int_range(rand, 0, 4) != 0 :
                                                     g_rand_int_range(rand, 0, 4) == 0;
                        void *old = g_hash_table_lookup(ref, GUINT_TO_POINTER(key));

                        if (add) {
                                void *item = item_of(key, c->high && g_rand_int_range(rand, 0, 64) == 0);

                                g_assert_cmpint(ptr_set_add(&s, item), ==, 0);
                                g_hash_table_insert(ref, GUINT_TO_POINTER(key), item);
                        } else
                                g_assert_true(ptr_set_remove(&s, old ? old : item_of(key, false)) == !!old);
                        if (!add && old)
                                g_hash_table_remove(ref, GUINT_TO_POINTER(key));
                        if (n % 64 == 0)
                                check_all(&s, ref, c);
                }
                check_all(&s, ref, c);
        }
        if (c->high)
                g_assert_true(s.untagged);
        ptr_set_done(&s);
}

/* A wd's hash keeps the slot of a run of wds free of collisions: each
 * lookup of a missing wd lands on an empty slot at once. */
static void test_sequence_fills_in_order(void) {
        PtrSet s;

        ptr_set_init(&s, hash_sequence, match_item);
        for (uint64_t key = 1; key <= 1000; key++)
                g_assert_cmpint(ptr_set_add(&s, item_of(key, false)), ==, 0);
        for (size_t i = 0; i <= s.mask; i++) {
                void *item = ptr_set_slot(&s, i);

                if (item)
                        g_assert_cmpuint(key_of(item) & s.mask, ==, i);
        }
        /* 1000 at most 4/5 full: 2048 slots, 8 bytes each. */
        g_assert_cmpuint(s.mask + 1, ==, 2048);
        ptr_set_done(&s);
}

static const Case cases[] = {
        { "spread", hash_spread, 3000, false },          { "sequence", hash_sequence, 3000, false },
        { "collide", hash_collide, 400, false },         { "spread-untagged", hash_spread, 3000, true },
        { "collide-untagged", hash_collide, 400, true },
};

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *path = g_strdup_printf("/ptr-set/random/%s", cases[i].name);

                g_test_add_data_func(path, &cases[i], test_random);
        }
        g_test_add_func("/ptr-set/sequence-fills-in-order", test_sequence_fills_in_order);
        return g_test_run();
}
