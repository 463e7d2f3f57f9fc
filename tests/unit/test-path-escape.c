/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-path-escape - the escaped form of paths that are not UTF-8
 *
 * A table of names and their escaped forms; unescaping's refusals; the
 * round trip of every byte value, of every pair of bytes and of random byte
 * strings; and, for the same strings, that path_needs_escape() says "no"
 * exactly when sd-bus itself accepts the string in a message: the escape
 * exists so that a record can always be appended, so its rule must be
 * sd-bus's and not a laxer one (GLib and libdbus let noncharacters through,
 * sd-bus does not).
 */

#include <errno.h>
#include <glib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "path_escape.h"

typedef struct Case {
        const char *what;
        const char *bytes;
        bool needs_escape;
        const char *escaped;
} Case;

/* clang-format off */
static const Case cases[] = {
        { "plain",                      "/tmp/a",               false, "/tmp/a" },
        { "empty",                      "",                     false, "" },
        { "a byte that is not UTF-8",   "/tmp/x\xff",           true,  "/tmp/x\\xff" },
        { "a backslash is doubled",     "/tmp/a\\b",            false, "/tmp/a\\\\b" },
        { "what looks like an escape",  "/tmp/x\\xff",          false, "/tmp/x\\\\xff" },
        { "two-byte character",         "/tmp/\xc3\xa9t\xc3\xa9", false, "/tmp/\xc3\xa9t\xc3\xa9" },
        { "four-byte character",        "/\xf0\x9f\x98\x80",    false, "/\xf0\x9f\x98\x80" },
        { "U+10000",                    "/\xf0\x90\x80\x80",    false, "/\xf0\x90\x80\x80" },
        { "no-break space",             "/\xc2\xa0",            false, "/\xc2\xa0" },
        { "noncharacter U+FFFE",        "/\xef\xbf\xbe",        true,  "/\\xef\\xbf\\xbe" },
        { "noncharacter U+FDD0",        "/\xef\xb7\x90",        true,  "/\\xef\\xb7\\x90" },
        { "noncharacter U+10FFFF",      "/\xf4\x8f\xbf\xbf",    true,  "/\\xf4\\x8f\\xbf\\xbf" },
        { "surrogate",                  "/\xed\xa0\x80",        true,  "/\\xed\\xa0\\x80" },
        { "overlong slash",             "/\xc0\xaf",            true,  "/\\xc0\\xaf" },
        { "overlong three bytes",       "/\xe0\x80\xaf",        true,  "/\\xe0\\x80\\xaf" },
        { "past U+10FFFF",              "/\xf4\x90\x80\x80",    true,  "/\\xf4\\x90\\x80\\x80" },
        { "five-byte form",             "/\xf8\x88\x80\x80\x80", true, "/\\xf8\\x88\\x80\\x80\\x80" },
        { "truncated at the end",       "/\xe2\x82",            true,  "/\\xe2\\x82" },
        { "truncated, then ASCII",      "/\xe2\x82z",           true,  "/\\xe2\\x82z" },
        { "stray continuation, then a character", "/\x80\xc3\xa9", true, "/\\x80\xc3\xa9" },
        { "Latin-1 name",               "/caf\xe9",             true,  "/caf\\xe9" },
        { "newline",                    "/a\nb",                false, "/a\\x0ab" },
        { "escape (ESC)",               "/\x1b[31m",            false, "/\\x1b[31m" },
        { "DEL",                        "/\x7f",                false, "/\\x7f" },
        { "C1 control CSI",             "/\xc2\x9b" "2J",       false, "/\\xc2\\x9b" "2J" },
};
/* clang-format on */

static void test_table(void) {
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                const Case *c = &cases[i];
                g_autofree char *e = path_escape(c->bytes);
                g_autofree char *back = NULL;

                g_test_message("%s", c->what);
                g_assert_cmpint(path_needs_escape(c->bytes), ==, c->needs_escape);
                g_assert_cmpstr(e, ==, c->escaped);
                g_assert_cmpuint(path_escaped_len(c->bytes), ==, strlen(c->escaped));
                g_assert_cmpint(path_unescape(e, &back), ==, 0);
                g_assert_cmpstr(back, ==, c->bytes);
        }
}

static void test_unescape(void) {
        /* clang-format off */
        static const struct {
                const char *in;
                int r;
                const char *out;
        } u[] = {
                { "/a",          0,       "/a" },
                { "/\\\\",       0,       "/\\" },
                { "/\\xff",      0,       "/\xff" },
                { "/\\xFF",      0,       "/\xff" },          /* either case */
                { "/\\x41",      0,       "/A" },             /* not canonical, still one byte */
                { "\xc3\xa9",    0,       "\xc3\xa9" },
                { "/\\",         -EINVAL, NULL },             /* a lone backslash */
                { "/\\x",        -EINVAL, NULL },
                { "/\\x4",       -EINVAL, NULL },
                { "/\\x4g",      -EINVAL, NULL },
                { "/\\xg4",      -EINVAL, NULL },
                { "/\\x00",      -EINVAL, NULL },             /* no path holds a NUL */
                { "/\\X41",      -EINVAL, NULL },
                { "/\\n",        -EINVAL, NULL },
                { "/\\u00e9",    -EINVAL, NULL },
                { "/\\0",        -EINVAL, NULL },
                { "/a\\x",       -EINVAL, NULL },
        };
        /* clang-format on */

        for (size_t i = 0; i < G_N_ELEMENTS(u); i++) {
                g_autofree char *out = NULL;

                g_test_message("unescape \"%s\"", u[i].in);
                g_assert_cmpint(path_unescape(u[i].in, &out), ==, u[i].r);
                g_assert_cmpstr(out, ==, u[i].out);
        }
}

/* The properties every byte string must have. */
static void check_round_trip(const char *b) {
        g_autofree char *e = path_escape(b);
        g_autofree char *back = NULL, *again = NULL;

        g_assert_nonnull(e);
        g_assert_cmpuint(path_escaped_len(b), ==, strlen(e));
        /* What is sent is always sendable, and holds no control character. */
        g_assert_false(path_needs_escape(e));
        for (const char *p = e; *p; p++)
                g_assert_true((unsigned char) *p >= 0x20 && *p != 0x7f);
        g_assert_cmpint(path_unescape(e, &back), ==, 0);
        g_assert_cmpmem(back, strlen(back), b, strlen(b));
        /* One escaped form per name. */
        again = path_escape(back);
        g_assert_cmpstr(again, ==, e);
}

static void test_all_bytes(void) {
        char s[8];

        for (unsigned a = 1; a < 256; a++) {
                /* alone, between ASCII, and before a character */
                snprintf(s, sizeof(s), "%c", a);
                check_round_trip(s);
                snprintf(s, sizeof(s), "/%c/", a);
                check_round_trip(s);
                snprintf(s, sizeof(s), "%c\xc3\xa9", a);
                check_round_trip(s);
                for (unsigned b = 1; b < 256; b++) {
                        snprintf(s, sizeof(s), "%c%c", a, b);
                        check_round_trip(s);
                }
        }
}

static char *random_bytes(GRand *rand, size_t max) {
        size_t n = g_rand_int_range(rand, 0, (gint32) max + 1);
        char *s = g_malloc(n + 1);

        for (size_t i = 0; i < n; i++) {
                /* Bias towards the bytes of UTF-8 sequences, so valid
                 * characters, noncharacters and surrogates all turn up. */
                static const uint8_t interesting[] = { 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbe, 0xbf, 0xb7, 0xc2, 0xc3, 0xdf,
                                                       0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, '\\', 'x',  '/' };

                if (g_rand_boolean(rand))
                        s[i] = (char) interesting[g_rand_int_range(rand, 0, G_N_ELEMENTS(interesting))];
                else
                        s[i] = (char) g_rand_int_range(rand, 1, 256);
        }
        s[n] = '\0';
        return s;
}

static void test_random(void) {
        g_autoptr(GRand) rand = g_rand_new_with_seed(g_test_rand_int());

        for (int i = 0; i < 100000; i++) {
                g_autofree char *b = random_bytes(rand, 24);

                check_round_trip(b);
        }
}

/* The length-given form (eight bytes at a time while ASCII) answers as the
 * byte-wise one, wherever in the string the first byte that is not ASCII
 * falls: each word boundary, either side of it, and far from it. */
static void test_needs_escape_n(void) {
        g_autoptr(GRand) rand = g_rand_new_with_seed(g_test_rand_int());
        unsigned yes = 0;

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
                g_assert_cmpint(path_needs_escape_n(cases[i].bytes, strlen(cases[i].bytes)), ==, cases[i].needs_escape);
        for (int i = 0; i < 100000; i++) {
                size_t prefix = (size_t) g_rand_int_range(rand, 0, 34);
                g_autofree char *tail = random_bytes(rand, 12);
                g_autofree char *b = g_malloc(prefix + strlen(tail) + 1);
                bool want;

                memset(b, 'a', prefix);
                strcpy(b + prefix, tail);
                want = path_needs_escape(b);
                if (path_needs_escape_n(b, strlen(b)) != want) {
                        g_autofree char *e = path_escape(b);
                        g_error("path_needs_escape_n(\"%s\") says %s", e, want ? "no" : "yes");
                }
                yes += want;
        }
        g_assert_cmpuint(yes, >, 1000);
        g_assert_cmpuint(yes, <, 99000);
}

/* A message of a bus that is never connected: enough for sd-bus to append to. */
static sd_bus *scratch_bus(void) {
        sd_bus *bus = NULL;
        int sv[2];

        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        g_assert_cmpint(sd_bus_new(&bus), >=, 0);
        g_assert_cmpint(sd_bus_set_fd(bus, sv[0], sv[0]), >=, 0);
        g_assert_cmpint(sd_bus_start(bus), >=, 0);
        close(sv[1]);
        return bus;
}

static bool sd_bus_accepts(sd_bus *bus, const char *s) {
        sd_bus_message *m = NULL;
        int r;

        g_assert_cmpint(sd_bus_message_new_signal(bus, &m, "/t", "t.T", "S"), >=, 0);
        r = sd_bus_message_append(m, "s", s);
        sd_bus_message_unref(m);
        return r >= 0;
}

static void test_agrees_with_sd_bus(void) {
        g_autoptr(GRand) rand = g_rand_new_with_seed(g_test_rand_int());
        sd_bus *bus = scratch_bus();
        unsigned refused = 0;

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
                g_assert_cmpint(sd_bus_accepts(bus, cases[i].bytes), ==, !cases[i].needs_escape);
        for (int i = 0; i < 100000; i++) {
                g_autofree char *b = random_bytes(rand, 8);
                bool accepted = sd_bus_accepts(bus, b);

                if (accepted == path_needs_escape(b)) {
                        g_autofree char *e = path_escape(b);
                        g_error("sd-bus %s \"%s\", path_needs_escape() says %s", accepted ? "accepts" : "refuses", e,
                                accepted ? "yes" : "no");
                }
                refused += !accepted;
                /* And the escaped form always goes. */
                if (!accepted) {
                        g_autofree char *e = path_escape(b);
                        g_assert_true(sd_bus_accepts(bus, e));
                }
        }
        /* The strings tried both sides of the rule. */
        g_assert_cmpuint(refused, >, 1000);
        g_assert_cmpuint(refused, <, 99000);
        sd_bus_flush_close_unref(bus);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/path-escape/table", test_table);
        g_test_add_func("/path-escape/unescape", test_unescape);
        g_test_add_func("/path-escape/all-bytes", test_all_bytes);
        g_test_add_func("/path-escape/random", test_random);
        g_test_add_func("/path-escape/needs-escape-n", test_needs_escape_n);
        g_test_add_func("/path-escape/agrees-with-sd-bus", test_agrees_with_sd_bus);
        return g_test_run();
}
