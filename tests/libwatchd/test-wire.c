/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-wire - libwatchd's escaped paths are the daemon's
 *
 * libwatchd reaches the escaped form of paths that are not UTF-8 through
 * its own GLib-style wrappers (libwatchd/watchd-wire.c) around the daemon's
 * shared/path_escape.c. They must give the same bytes, or a path would not
 * reach the daemon or come back as it was: this compares them on a table,
 * on every byte value and pair of bytes, and on random strings, and checks
 * that a malformed escape is the library's PROTOCOL error.
 */

#include <errno.h>
#include <glib.h>
#include <stdlib.h>

#include "path_escape.h"
#include "watchd.h"
#include "watchd-wire.h"

static void check_one(const char *s) {
        g_autofree char *mine = watchd_wire_path_escape(s);
        g_autofree char *back = NULL;
        char *theirs = path_escape(s), *their_back = NULL;
        g_autoptr(GError) error = NULL;

        g_assert_nonnull(theirs);
        g_assert_cmpint(watchd_wire_path_needs_escape(s), ==, path_needs_escape(s));
        g_assert_cmpstr(mine, ==, theirs);
        /* What the daemon sends, the library reads back to the bytes. */
        back = watchd_wire_path_decode(theirs, TRUE, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(back, ==, s);
        g_assert_cmpint(path_unescape(mine, &their_back), ==, 0);
        g_assert_cmpstr(their_back, ==, s);
        free(theirs);
        free(their_back);
}

static void test_table(void) {
        static const char *const paths[] = {
                "/plain/ascii",
                "/with\\backslash",
                "/x\xff",
                "/\xc3\xa9t\xc3\xa9",
                "/tab\there",
                "/nl\nhere",
                "/del\x7f",
                "/c1\xc2\x85",
                "/nonchar\xef\xb7\x90",
                "/fffe\xef\xbf\xbe",
                "/surrogate\xed\xa0\x80",
                "/overlong\xc0\xaf",
                "/truncated\xe2\x82",
                "/\xf4\x90\x80\x80",
                "/emoji\xf0\x9f\x98\x80",
                "",
        };

        for (size_t i = 0; i < G_N_ELEMENTS(paths); i++)
                check_one(paths[i]);
}

static void test_bytes(void) {
        char s[4] = { 0 };

        for (int a = 1; a < 256; a++) {
                s[0] = (char) a;
                s[1] = 0;
                check_one(s);
                for (int b = 1; b < 256; b++) {
                        s[1] = (char) b;
                        check_one(s);
                }
        }
}

static void test_random(void) {
        GRand *r = g_rand_new_with_seed(14);

        for (int i = 0; i < 100000; i++) {
                char s[24];
                int n = g_rand_int_range(r, 0, (int) sizeof(s));

                for (int k = 0; k < n; k++)
                        s[k] = (char) g_rand_int_range(r, 1, 256);
                s[n] = 0;
                check_one(s);
        }
        g_rand_free(r);
}

static void test_refused(void) {
        static const char *const bad[] = { "\\", "\\q", "\\x0", "\\x00", "\\xg1", "a\\" };

        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autoptr(GError) error = NULL;
                g_autofree char *out = watchd_wire_path_decode(bad[i], TRUE, &error);
                char *theirs = NULL;

                g_assert_null(out);
                g_assert_error(error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL);
                g_assert_cmpint(path_unescape(bad[i], &theirs), ==, -EINVAL);
        }
        /* Without the flag a backslash is a byte like any other. */
        g_autofree char *plain = watchd_wire_path_decode("\\x41", FALSE, NULL);
        g_assert_cmpstr(plain, ==, "\\x41");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/wire/table", test_table);
        g_test_add_func("/wire/bytes", test_bytes);
        g_test_add_func("/wire/random", test_random);
        g_test_add_func("/wire/refused", test_refused);
        return g_test_run();
}
