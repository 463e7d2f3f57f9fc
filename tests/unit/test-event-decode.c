/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-event-decode - the decoder on tables of byte buffers, and on noise
 */

#include <errno.h>
#include <glib.h>
#include <string.h>

#include "event_bits.h"
#include "event_decode.h"

/* Appends one record; name_field is copied into len bytes (NUL-padded), as the kernel lays it out. */
static void append(GByteArray *b, int32_t wd, uint32_t mask, uint32_t cookie, const char *name_field, uint32_t len,
                   uint32_t len_claimed) {
        struct {
                int32_t wd;
                uint32_t mask, cookie, len;
        } h = { wd, mask, cookie, len_claimed };
        guint8 *pad = g_malloc0(len);

        if (name_field)
                memcpy(pad, name_field, MIN(strlen(name_field), len));
        g_byte_array_append(b, (guint8 *) &h, sizeof(h));
        g_byte_array_append(b, pad, len);
        g_free(pad);
}

typedef struct Expect {
        int r; /* what event_decode returns */
        int32_t wd;
        uint32_t mask, cookie;
        const char *name; /* NULL: no name */
} Expect;

typedef struct Case {
        const char *what;
        struct {
                int32_t wd;
                uint32_t mask, cookie;
                const char *name;
                uint32_t len, len_claimed;
        } in[4];
        size_t n_in;
        size_t truncate; /* bytes cut from the end, to make a buffer short */
        Expect out[5];
} Case;

/* NAME_MAX 'a's, filled in by main(). */
static char long_name[256];

#define REC(wd, mask, cookie, name, len) \
        { wd, mask, cookie, name, len, len }

static const Case cases[] = {
        { "empty buffer", {}, 0, 0, { { 0 } } },
        { "one record, no name", { REC(1, IN_MODIFY, 0, NULL, 0) }, 1, 0, { { 1, 1, IN_MODIFY, 0, NULL }, { 0 } } },
        { "wd 0 is a wd (device backend)", { REC(0, IN_CREATE, 0, "a", 16) }, 1, 0, { { 1, 0, IN_CREATE, 0, "a" }, { 0 } } },
        { "overflow record, wd -1",
          { REC(-1, IN_Q_OVERFLOW, 0, NULL, 0) },
          1,
          0,
          { { 1, -1, IN_Q_OVERFLOW, 0, NULL }, { 0 } } },
        { "rename pair",
          { REC(3, IN_MOVED_FROM, 7, "old", 16), REC(3, IN_MOVED_TO, 7, "new-name", 16) },
          2,
          0,
          { { 1, 3, IN_MOVED_FROM, 7, "old" }, { 1, 3, IN_MOVED_TO, 7, "new-name" }, { 0 } } },
        { "longest name (255) in 256 bytes",
          { REC(2, IN_CREATE, 0, long_name, 256) },
          1,
          0,
          { { 1, 2, IN_CREATE, 0, long_name }, { 0 } } },
        { "padding only: no name", { REC(1, IN_ATTRIB, 0, NULL, 16) }, 1, 0, { { 1, 1, IN_ATTRIB, 0, NULL }, { 0 } } },
        { "unusual padding (not 16) still decodes",
          { REC(1, IN_CREATE, 0, "x", 5) },
          1,
          0,
          { { 1, 1, IN_CREATE, 0, "x" }, { 0 } } },
        { "header cut short", { REC(1, IN_CREATE, 0, NULL, 0) }, 1, 1, { { -EBADMSG }, { 0 } } },
        { "name cut short",
          { REC(1, IN_CREATE, 0, NULL, 0), REC(1, IN_CREATE, 0, "abc", 16) },
          2,
          8,
          { { 1, 1, IN_CREATE, 0, NULL }, { -EBADMSG } } },
        { "len past the buffer", { { 1, IN_CREATE, 0, "abc", 16, 4096 } }, 1, 0, { { -EBADMSG } } },
        { "len 0xffffffff (no wrap-around)", { { 1, IN_CREATE, 0, NULL, 0, 0xffffffffu } }, 1, 0, { { -EBADMSG } } },
        { "name without NUL", { REC(1, IN_CREATE, 0, "0123456789abcdef", 16) }, 1, 0, { { -EBADMSG } } },
        { "name with a slash", { REC(1, IN_CREATE, 0, "../etc", 16) }, 1, 0, { { -EBADMSG } } },
        { "name '..'", { REC(1, IN_CREATE, 0, "..", 16) }, 1, 0, { { -EBADMSG } } },
        { "name '.'", { REC(1, IN_CREATE, 0, ".", 16) }, 1, 0, { { -EBADMSG } } },
};

static void test_table(gconstpointer data) {
        const Case *c = data;
        g_autoptr(GByteArray) b = g_byte_array_new();
        size_t off = 0, size;

        for (size_t i = 0; i < c->n_in; i++)
                append(b, c->in[i].wd, c->in[i].mask, c->in[i].cookie, c->in[i].name, c->in[i].len, c->in[i].len_claimed);
        size = b->len - c->truncate;

        for (size_t k = 0;; k++) {
                const Expect *e = &c->out[k];
                size_t before = off;
                RawEvent ev;
                int r;

                g_assert_cmpuint(k, <, G_N_ELEMENTS(c->out));
                r = event_decode(b->data, size, &off, &ev);
                g_assert_cmpint(r, ==, e->r);
                if (r <= 0) {
                        g_assert_cmpuint(off, ==, before); /* not moved on failure or at the end */
                        break;
                }
                g_assert_cmpint(ev.wd, ==, e->wd);
                g_assert_cmpuint(ev.mask, ==, e->mask);
                g_assert_cmpuint(ev.cookie, ==, e->cookie);
                if (e->name) {
                        g_assert_nonnull(ev.name);
                        g_assert_cmpuint(ev.name_len, ==, strlen(e->name));
                        g_assert_true(memcmp(ev.name, e->name, ev.name_len) == 0);
                } else
                        g_assert_null(ev.name);
                g_assert_cmpuint(off, <=, size);
        }
}

/* Noise: whatever the bytes, the decoder stays inside the buffer and always moves forward. */
static void test_noise(void) {
        g_autoptr(GRand) rand = g_rand_new_with_seed(20050503);
        guint8 buf[512];

        for (int iter = 0; iter < 100000; iter++) {
                size_t size = (size_t) g_rand_int_range(rand, 0, sizeof(buf) + 1), off = 0;
                RawEvent ev;
                int r;

                for (size_t i = 0; i < size; i++)
                        buf[i] = (guint8) g_rand_int(rand);
                /* Small lens, so that some records are well formed. */
                if (size >= 16 && g_rand_boolean(rand))
                        memcpy(buf + 12, &(uint32_t) { (uint32_t) g_rand_int_range(rand, 0, 64) }, 4);

                while ((r = event_decode(buf, size, &off, &ev)) > 0) {
                        g_assert_cmpuint(off, <=, size);
                        if (ev.name) {
                                g_assert_true((const guint8 *) ev.name >= buf);
                                g_assert_true((const guint8 *) ev.name + ev.name_len < buf + size);
                                g_assert_null(memchr(ev.name, '/', ev.name_len));
                                g_assert_cmpuint(ev.name_len, >, 0);
                        }
                }
                g_assert_true(r == 0 || r == -EBADMSG);
        }
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        memset(long_name, 'a', 255);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *name = g_strdup_printf("/event-decode/%s", cases[i].what);
                g_test_add_data_func(name, &cases[i], test_table);
        }
        g_test_add_func("/event-decode/noise", test_noise);
        return g_test_run();
}
