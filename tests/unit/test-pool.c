/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-pool - the pages the watch table's Watches and links are cut from:
 * random allocations and frees of several sizes, each object filled with a
 * pattern of its own and checked before it is freed (no two live objects
 * overlap, none is moved or overwritten by the pool's own free list); pages
 * mapped as objects are needed and given back when their last object goes,
 * but one kept; a freed object is the next one handed out.
 *
 * Built with AddressSanitizer, pools are malloc() (pool.h): the page counts
 * are then not checked, the contents still are.
 */

#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "pool.h"

static void fill(void *obj, size_t size, uint32_t tag) {
        for (size_t i = 0; i < size / 4; i++)
                ((uint32_t *) obj)[i] = tag * 2654435761u + (uint32_t) i;
}

static void check(const void *obj, size_t size, uint32_t tag) {
        for (size_t i = 0; i < size / 4; i++)
                g_assert_cmpuint(((const uint32_t *) obj)[i], ==, tag * 2654435761u + (uint32_t) i);
}

static void test_random(gconstpointer data) {
        size_t size = GPOINTER_TO_SIZE(data);
        Pool p = POOL_INIT(size);
        GPtrArray *live = g_ptr_array_new();
        GArray *tags = g_array_new(false, false, sizeof(uint32_t));
        GRand *rand = g_rand_new_with_seed(27);
        size_t peak = 0;
        uint32_t next_tag = 1;

        g_assert_cmpuint(p.size, ==, (size + 7) & ~(size_t) 7);
        /* Grow to ~3 pages' worth, shrink to nothing, twice. */
        for (int round = 0; round < 2; round++) {
                size_t target = 3 * pool_page_capacity(&p) + 17;

                while (live->len < target) {
                        if (live->len > 0 && g_rand_int_range(rand, 0, 4) == 0) {
                                guint i = (guint) g_rand_int_range(rand, 0, (gint32) live->len);

                                check(live->pdata[i], p.size, g_array_index(tags, uint32_t, i));
                                pool_free(&p, g_ptr_array_steal_index_fast(live, i));
                                g_array_remove_index_fast(tags, i);
                        } else {
                                void *obj = pool_alloc(&p);
                                uint32_t tag = next_tag++;

                                g_assert_nonnull(obj);
                                g_assert_cmpuint((uintptr_t) obj % 8, ==, 0);
                                fill(obj, p.size, tag);
                                g_ptr_array_add(live, obj);
                                g_array_append_val(tags, tag);
                        }
                }
                peak = MAX(peak, pool_n_pages(&p));
                if (pool_uses_pages())
                        /* The live objects need 4 pages; the frees leave holes in them, refilled first. */
                        g_assert_cmpuint(pool_n_pages(&p), <=, 5);
                while (live->len > 0) {
                        guint i = (guint) g_rand_int_range(rand, 0, (gint32) live->len);

                        check(live->pdata[i], p.size, g_array_index(tags, uint32_t, i));
                        pool_free(&p, g_ptr_array_steal_index_fast(live, i));
                        g_array_remove_index_fast(tags, i);
                }
                /* Every page given back but the spare. */
                g_assert_cmpuint(pool_n_pages(&p), ==, pool_uses_pages() ? 1 : 0);
        }
        if (pool_uses_pages())
                g_assert_cmpuint(peak, >=, 4);
        g_rand_free(rand);
        g_array_free(tags, true);
        g_ptr_array_free(live, true);
}

/* Pages mapped one at a time as they fill; a freed object is handed out next. */
static void test_pages(void) {
        Pool p = POOL_INIT(32);
        size_t cap = pool_page_capacity(&p), n = 2 * cap + 1;
        void **objs = g_new(void *, n);
        void *again;

        if (!pool_uses_pages()) {
                g_test_skip("pools are malloc() under AddressSanitizer");
                g_free(objs);
                return;
        }
        g_assert_cmpuint(cap, >, 1000);
        for (size_t i = 0; i < n; i++) {
                objs[i] = pool_alloc(&p);
                g_assert_nonnull(objs[i]);
                g_assert_cmpuint(pool_n_pages(&p), ==, i / cap + 1);
        }
        /* Two full pages and one object on a third. */
        pool_free(&p, objs[cap + 5]);
        again = pool_alloc(&p);
        g_assert_true(again == objs[cap + 5]);

        /* The third page's one object: the page becomes the spare. */
        pool_free(&p, objs[2 * cap]);
        g_assert_cmpuint(pool_n_pages(&p), ==, 3);
        /* The first page emptied: given back (a spare is kept already). */
        for (size_t i = 0; i < cap; i++)
                pool_free(&p, objs[i]);
        g_assert_cmpuint(pool_n_pages(&p), ==, 2);
        /* The second page, full, refills no new page. */
        pool_free(&p, objs[cap]);
        objs[cap] = pool_alloc(&p);
        g_assert_cmpuint(pool_n_pages(&p), ==, 2);
        for (size_t i = cap; i < 2 * cap; i++)
                pool_free(&p, objs[i]);
        g_assert_cmpuint(pool_n_pages(&p), ==, 1);
        pool_free(&p, NULL);
        g_free(objs);
}

int main(int argc, char **argv) {
        static const size_t sizes[] = { 8, 32, 70, 128, POOL_MAX };

        g_test_init(&argc, &argv, NULL);
        for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
                g_autofree char *name = g_strdup_printf("/pool/random/%zu", sizes[i]);

                g_test_add_data_func(name, GSIZE_TO_POINTER(sizes[i]), test_random);
        }
        g_test_add_func("/pool/pages", test_pages);
        return g_test_run();
}
