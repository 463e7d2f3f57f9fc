/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-path - joining and splitting absolute paths, "/" included (shared/path.c)
 */

#include <glib.h>
#include <string.h>

#include "path.h"

static void test_join(void) {
        static const struct {
                const char *dir, *name, *want;
        } cases[] = {
                { "/", "a", "/a" },
                { "/a", "b", "/a/b" },
                { "/a/b", "c d", "/a/b/c d" },
                { "/a", "\xff\xfe", "/a/\xff\xfe" }, /* bytes, not text */
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *p = path_join(cases[i].dir, cases[i].name, strlen(cases[i].name));
                char buf[64];

                g_assert_cmpstr(p, ==, cases[i].want);
                g_assert_cmpuint(path_join_len(cases[i].dir, strlen(cases[i].name)), ==, strlen(cases[i].want));
                g_assert_cmpstr(path_join_to(buf, cases[i].dir, cases[i].name, strlen(cases[i].name)), ==, cases[i].want);
        }
        /* A name given by its length: what follows it is not part of it. */
        g_autofree char *p = path_join("/d", "abc", 2);
        g_assert_cmpstr(p, ==, "/d/ab");
        g_assert_cmpuint(path_prefix_len("/"), ==, 0);
        g_assert_cmpuint(path_prefix_len("/abc"), ==, 4);
}

static void test_startswith(void) {
        static const struct {
                const char *path, *prefix, *rest;
        } cases[] = {
                { "/a/b", "/a", "b" },     { "/a", "/a", "" },   { "/ab", "/a", NULL },  /* component-wise */
                { "/a", "/a/b", NULL },    { "/", "/", "" },     { "/x/y", "/", "x/y" }, /* everything is below "/" */
                { "/a/b/c", "/a/b", "c" }, { "/b", "/a", NULL },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
                g_assert_cmpstr(path_startswith(cases[i].path, cases[i].prefix), ==, cases[i].rest);
}

static void test_split(void) {
        static const struct {
                const char *path, *dir, *base;
        } cases[] = {
                { "/a", "/", "a" },
                { "/a/b", "/a", "b" },
                { "/a/b/c", "/a/b", "c" },
                { "/", "/", "" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *dir = path_dirname(cases[i].path);
                size_t dl;

                g_assert_cmpstr(dir, ==, cases[i].dir);
                g_assert_cmpstr(path_basename(cases[i].path, &dl), ==, cases[i].base);
                g_assert_cmpuint(dl, ==, strlen(cases[i].dir));
                g_assert_cmpstr(path_basename(cases[i].path, NULL), ==, cases[i].base);
        }
}

static void test_simplify(void) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "/", "/" },           { "//", "/" },
                { "//a///b/", "/a/b" }, { "/a/./b/../c", "/a/./b/../c" }, /* the kernel resolves those */
                { "/a/", "/a" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *p = path_simplify(cases[i].in);
                g_assert_cmpstr(p, ==, cases[i].out);
        }
        g_assert_true(path_has_dotdot("/a/.."));
        g_assert_true(path_has_dotdot("/../a"));
        g_assert_true(path_has_dotdot("/a/../b"));
        g_assert_false(path_has_dotdot("/a/..b"));
        g_assert_false(path_has_dotdot("/a..b/c.."));
        g_assert_false(path_has_dotdot("/a/b"));
}

static void test_rebase(void) {
        static const struct {
                const char *path, *old, *new, *want;
        } cases[] = {
                { "/a/b", "/a", "/x", "/x/b" },
                { "/a", "/a", "/x/y", "/x/y" },
                { "/ab", "/a", "/x", NULL },
                { "/a/b/c", "/a/b", "/z", "/z/c" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                bool oom = true;
                g_autofree char *p = path_rebase(cases[i].path, cases[i].old, cases[i].new, &oom);

                g_assert_cmpstr(p, ==, cases[i].want);
                g_assert_false(oom);
        }
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/path/join", test_join);
        g_test_add_func("/path/startswith", test_startswith);
        g_test_add_func("/path/split", test_split);
        g_test_add_func("/path/simplify", test_simplify);
        g_test_add_func("/path/rebase", test_rebase);
        return g_test_run();
}
