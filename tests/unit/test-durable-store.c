/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-durable-store - durable subscriptions' definitions on disk
 *
 * What is saved reads back the same (a path of any bytes, any groups);
 * a definition file that is not one, in each way it can fail, is refused
 * with "file:line: what"; names are file names and nothing else; listing
 * and removal see exactly the subscriptions there are.
 */

#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "durable_store.h"

static void rm_rf(const char *path) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", path);

        g_assert_cmpint(system(cmd), ==, 0);
}

static void test_names(void) {
        static const char *const good[] = { "indexer", "a", "Tracker-3.0_miner.fs", "-x",
                                            "0123456789012345678901234567890123456789012345678901234567890123" };
        static const char *const bad[] = { "",
                                           ".hidden",
                                           ".",
                                           "..",
                                           "a/b",
                                           "a b",
                                           "caf\xc3\xa9",
                                           "a\n",
                                           "01234567890123456789012345678901234567890123456789012345678901234" };

        for (size_t i = 0; i < G_N_ELEMENTS(good); i++)
                g_assert_true(durable_name_valid(good[i]));
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
                g_assert_false(durable_name_valid(bad[i]));
}

static void test_roundtrip(void) {
        g_autofree char *state = g_dir_make_tmp("test-durable-store-XXXXXX", NULL);
        gid_t groups[] = { 24, 27, 1000, 4294967294u };
        DurableDef d = {
                .name = (char *) "indexer",
                .uid = 1000,
                .gid = 1000,
                .gids = groups,
                .n_gids = G_N_ELEMENTS(groups),
                .path = (char *) "/home/u/\xff odd\\name=x\n",
                .mask = 0x3c6,
                .flags = 0x1,
                .created = 1733280000,
        };
        DurableDef none = { .name = (char *) "n", .uid = 0, .path = (char *) "/", .mask = 1 };
        DurableDef got = {};
        g_autofree char *error = NULL;

        g_assert_cmpint(durable_def_save(state, &d), ==, 0);
        g_assert_cmpint(durable_def_load(state, 1000, "indexer", &got, &error), ==, 0);
        g_assert_null(error);
        g_assert_cmpstr(got.name, ==, d.name);
        g_assert_cmpuint(got.uid, ==, 1000);
        g_assert_cmpuint(got.gid, ==, 1000);
        g_assert_cmpuint(got.n_gids, ==, d.n_gids);
        for (size_t i = 0; i < d.n_gids; i++)
                g_assert_cmpuint(got.gids[i], ==, groups[i]);
        g_assert_cmpstr(got.path, ==, d.path);
        g_assert_cmphex(got.mask, ==, d.mask);
        g_assert_cmphex(got.flags, ==, d.flags);
        g_assert_cmpuint(got.created, ==, d.created);
        durable_def_done(&got);

        /* Saved again: replaced whole. */
        d.mask = 0x2;
        g_assert_cmpint(durable_def_save(state, &d), ==, 0);
        g_assert_cmpint(durable_def_load(state, 1000, "indexer", &got, NULL), ==, 0);
        g_assert_cmphex(got.mask, ==, 0x2);
        durable_def_done(&got);

        g_assert_cmpint(durable_def_save(state, &none), ==, 0);
        g_assert_cmpint(durable_def_load(state, 0, "n", &got, NULL), ==, 0);
        g_assert_cmpuint(got.n_gids, ==, 0);
        durable_def_done(&got);

        /* Per uid: the same name of another user is another subscription. */
        g_assert_cmpint(durable_def_load(state, 1001, "indexer", &got, NULL), ==, -ENOENT);
        g_assert_cmpint(durable_def_load(state, 1000, "../0/n", &got, NULL), ==, -EINVAL);

        none.name = (char *) "../x";
        g_assert_cmpint(durable_def_save(state, &none), ==, -EINVAL);
        none.name = (char *) "rel";
        none.path = (char *) "relative";
        g_assert_cmpint(durable_def_save(state, &none), ==, -EINVAL);
        rm_rf(state);
}

typedef struct BadCase {
        const char *what;
        const char *text;
        const char *error; /* after "<file>:" */
} BadCase;

#define GOOD_HEAD "name=s\nuid=1000\ngid=1000\ngroups=\n"
#define GOOD_TAIL "mask=0x2\nflags=0x0\ncreated=0\n"

static const BadCase bad_cases[] = {
        { "no newline at the end",
          GOOD_HEAD "path=/\n"
                    "mask=0x2\nflags=0x0\ncreated=0",
          "8: no newline at the end: a torn write?" },
        { "missing key", GOOD_HEAD GOOD_TAIL, "8: keys missing" },
        { "twice", GOOD_HEAD "path=/\npath=/\n" GOOD_TAIL, "6: 'path' given twice" },
        { "unknown key", GOOD_HEAD "path=/\nwho=me\n" GOOD_TAIL, "6: unknown key 'who'" },
        { "no equals sign", GOOD_HEAD "path /\n" GOOD_TAIL, "5: expected key=value" },
        { "relative path", GOOD_HEAD "path=x\n" GOOD_TAIL, "5: path: not an absolute path shorter than PATH_MAX" },
        { "bad escape", GOOD_HEAD "path=/\\x4\n" GOOD_TAIL, "5: path: '/\\x4' is not valid" },
        { "escaped NUL", GOOD_HEAD "path=/\\x00\n" GOOD_TAIL, "5: path: '/\\x00' is not valid" },
        { "decimal mask", GOOD_HEAD "path=/\nmask=2\nflags=0x0\ncreated=0\n",
          "6: mask: '2' is not a hexadecimal number (0x...)" },
        { "mask past 32 bits", GOOD_HEAD "path=/\nmask=0x100000000\nflags=0x0\ncreated=0\n",
          "6: mask: '0x100000000' is not valid" },
        { "bad groups", "name=s\nuid=1000\ngid=1000\ngroups=1 x\npath=/\n" GOOD_TAIL, "4: groups: '1 x' is not valid" },
        { "trailing space in groups", "name=s\nuid=1000\ngid=1000\ngroups=1 \npath=/\n" GOOD_TAIL,
          "4: groups: '1 ' is not valid" },
        { "uid -1", "name=s\nuid=4294967295\ngid=1000\ngroups=\npath=/\n" GOOD_TAIL, "2: uid: '4294967295' is not valid" },
        { "name of another", "name=t\nuid=1000\ngid=1000\ngroups=\npath=/\n" GOOD_TAIL,
          "9: name or uid is not those of its directory" },
        { "bad name", "name=.t\n", "1: name: '.t' is not a valid name" },
};

static void test_bad(gconstpointer data) {
        const BadCase *c = data;
        g_autofree char *state = g_dir_make_tmp("test-durable-store-XXXXXX", NULL);
        g_autofree char *dir = g_strdup_printf("%s/durable/1000/s", state);
        g_autofree char *file = g_strdup_printf("%s/definition", dir);
        g_autofree char *error = NULL, *want = NULL;
        DurableDef d = {};

        g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
        g_assert_true(g_file_set_contents(file, c->text, -1, NULL));
        g_assert_cmpint(durable_def_load(state, 1000, "s", &d, &error), ==, -EBADMSG);
        want = g_strdup_printf("%s:%s", file, c->error);
        g_assert_cmpstr(error, ==, want);
        g_assert_null(d.name);
        rm_rf(state);
}

static int collect(uid_t uid, const char *name, void *userdata) {
        g_ptr_array_add(userdata, g_strdup_printf("%u/%s", (unsigned) uid, name));
        return 0;
}

static void test_foreach_remove(void) {
        g_autofree char *state = g_dir_make_tmp("test-durable-store-XXXXXX", NULL);
        g_autoptr(GPtrArray) a = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *journal = g_strdup_printf("%s/durable/1000/b/journal", state);
        g_autofree char *stray = g_strdup_printf("%s/durable/notauid", state);
        g_autofree char *seg = g_strdup_printf("%s/seg-0000000000000001", journal);
        DurableDef d = { .uid = 1000, .path = (char *) "/tmp", .mask = 2 };

        g_assert_cmpint(durable_store_foreach(state, collect, a), ==, 0); /* nothing yet */
        g_assert_cmpuint(a->len, ==, 0);
        d.name = (char *) "a";
        g_assert_cmpint(durable_def_save(state, &d), ==, 0);
        d.name = (char *) "b";
        g_assert_cmpint(durable_def_save(state, &d), ==, 0);
        d.uid = 0;
        g_assert_cmpint(durable_def_save(state, &d), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(journal, 0700), ==, 0);
        g_assert_true(g_file_set_contents(seg, "x", 1, NULL));
        g_assert_cmpint(g_mkdir_with_parents(stray, 0700), ==, 0);

        g_assert_cmpint(durable_store_foreach(state, collect, a), ==, 0);
        g_ptr_array_sort(a, (GCompareFunc) g_strcmp0);
        g_assert_cmpuint(a->len, ==, 3);

        g_assert_cmpint(durable_store_remove(state, 1000, "b"), ==, 0);
        g_assert_false(g_file_test(journal, G_FILE_TEST_EXISTS));
        g_assert_cmpint(durable_store_remove(state, 1000, "b"), ==, -ENOENT);
        g_ptr_array_set_size(a, 0);
        g_assert_cmpint(durable_store_foreach(state, collect, a), ==, 0);
        g_assert_cmpuint(a->len, ==, 2);
        rm_rf(state);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/durable-store/names", test_names);
        g_test_add_func("/durable-store/roundtrip", test_roundtrip);
        for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
                g_autofree char *name = g_strdup_printf("/durable-store/bad/%s", bad_cases[i].what);
                g_test_add_data_func(name, &bad_cases[i], test_bad);
        }
        g_test_add_func("/durable-store/foreach and remove", test_foreach_remove);
        return g_test_run();
}
