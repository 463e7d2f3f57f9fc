/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-move-pairer - rename pairing, replayed from tables of steps
 *
 * Each case is a sequence: push a record at a time, pop at a time and say
 * what must come out (or that nothing may), check the next deadline, drop
 * the events. Times are in milliseconds; the pairer runs with a 10 ms
 * timeout and a distance of 3.
 */

#include <glib.h>
#include <string.h>

#include "event_bits.h"
#include "move_pairer.h"

typedef enum Op {
        END,
        PUSH,     /* id, mask, cookie, path at t */
        POP,      /* at t, expect id, mask, path, new_path */
        NONE,     /* at t, nothing may come out */
        DEADLINE, /* next deadline is t (0: none) */
        DROP,     /* drop events; expect id = how many */
        NOTICE,   /* push a RECORD_REMOVED for id */
} Op;

typedef struct Step {
        Op op;
        uint64_t t;
        uint32_t id, mask, cookie;
        const char *path, *new_path;
} Step;

#define MS 1000u
#define F  IN_MOVED_FROM
#define T  IN_MOVED_TO

typedef struct Case {
        const char *what;
        Step steps[16];
} Case;

/* clang-format off */
static const Case cases[] = {
        { "plain records pass at once", {
                { PUSH, 0, 1, IN_CREATE, 0, "/d/a" },
                { PUSH, 0, 1, IN_DELETE, 0, "/d/a" },
                { DEADLINE, 0 },
                { POP, 0, 1, IN_CREATE, 0, "/d/a", "" },
                { POP, 0, 1, IN_DELETE, 0, "/d/a", "" },
                { NONE, 0 },
        } },
        { "a pair is one record", {
                { PUSH, 0, 1, F, 5, "/d/a" },
                { PUSH, 0, 1, T, 5, "/d/b" },
                { POP, 0, 1, F | T, 5, "/d/a", "/d/b" },
                { NONE, 100 * MS },
        } },
        { "a directory pair keeps ISDIR", {
                { PUSH, 0, 1, F | IN_ISDIR, 5, "/d/a" },
                { PUSH, 1 * MS, 1, T | IN_ISDIR, 5, "/d/b" },
                { POP, 1 * MS, 1, F | T | IN_ISDIR, 5, "/d/a", "/d/b" },
        } },
        { "a lone MOVED_FROM waits for the timeout, then leaves alone", {
                { PUSH, 0, 1, F, 5, "/d/a" },
                { DEADLINE, 10 * MS },
                { NONE, 0 },
                { NONE, 9 * MS },
                { POP, 10 * MS, 1, F, 5, "/d/a", "" },
                { DEADLINE, 0 },
        } },
        { "records behind a waiting MOVED_FROM wait too (kernel order)", {
                { PUSH, 0, 1, IN_CREATE, 0, "/d/x" },
                { PUSH, 0, 1, F, 5, "/d/a" },
                { PUSH, 1 * MS, 1, IN_CREATE, 0, "/d/y" },
                { POP, 1 * MS, 1, IN_CREATE, 0, "/d/x", "" },
                { NONE, 1 * MS },
                { PUSH, 2 * MS, 1, T, 5, "/e/b" },
                { POP, 2 * MS, 1, F | T, 5, "/d/a", "/e/b" },
                { POP, 2 * MS, 1, IN_CREATE, 0, "/d/y", "" },
        } },
        { "the distance bound releases it early", {
                { PUSH, 0, 1, F, 5, "/d/a" },
                { PUSH, 0, 1, IN_CREATE, 0, "/d/1" },
                { PUSH, 0, 1, IN_CREATE, 0, "/d/2" },
                { NONE, 0 },
                { PUSH, 0, 1, IN_CREATE, 0, "/d/3" },
                { POP, 0, 1, F, 5, "/d/a", "" },
                { POP, 0, 1, IN_CREATE, 0, "/d/1", "" },
        } },
        { "a MOVED_TO beyond the distance does not pair", {
                { PUSH, 0, 1, F, 5, "/d/a" },
                { PUSH, 0, 1, IN_CREATE, 0, "/d/1" },
                { PUSH, 0, 1, IN_CREATE, 0, "/d/2" },
                { PUSH, 0, 1, IN_CREATE, 0, "/d/3" },
                { PUSH, 0, 1, T, 5, "/d/b" },
                { POP, 0, 1, F, 5, "/d/a", "" },
                { POP, 0, 1, IN_CREATE, 0, "/d/1", "" },
                { POP, 0, 1, IN_CREATE, 0, "/d/2", "" },
                { POP, 0, 1, IN_CREATE, 0, "/d/3", "" },
                { POP, 0, 1, T, 5, "/d/b", "" },
        } },
        { "a lone MOVED_TO passes at once (moved in)", {
                { PUSH, 0, 2, T, 9, "/d/in" },
                { DEADLINE, 0 },
                { POP, 0, 2, T, 9, "/d/in", "" },
        } },
        { "cookies pair with their own", {
                { PUSH, 0, 1, F, 5, "/d/a" },
                { PUSH, 0, 1, F, 6, "/d/b" },
                { PUSH, 0, 1, T, 6, "/d/B" },
                { PUSH, 0, 1, T, 5, "/d/A" },
                { POP, 0, 1, F | T, 5, "/d/a", "/d/A" },
                { POP, 0, 1, F | T, 6, "/d/b", "/d/B" },
        } },
        { "two subscriptions on one directory: each pairs its own", {
                { PUSH, 0, 1, F, 5, "/d/a" },
                { PUSH, 0, 2, F, 5, "/d/a" },
                { PUSH, 0, 1, T, 5, "/d/b" },
                { PUSH, 0, 2, T, 5, "/d/b" },
                { POP, 0, 1, F | T, 5, "/d/a", "/d/b" },
                { POP, 0, 2, F | T, 5, "/d/a", "/d/b" },
                { NONE, 0 },
        } },
        /* pair-per-subscription: a rename between two subscriptions of one
         * owner reaches both ids, each with both paths, in order. */
        { "across subscriptions: each side gets the pair", {
                { PUSH, 0, 1, F, 5, "/a/x" },
                { PUSH, 0, 2, T, 5, "/b/x" },
                { POP, 0, 1, F | T, 5, "/a/x", "/b/x" },
                { POP, 0, 2, F | T, 5, "/a/x", "/b/x" },
                { NONE, 100 * MS },
                { DEADLINE, 0 },
        } },
        { "across subscriptions: ISDIR kept on both", {
                { PUSH, 0, 1, F | IN_ISDIR, 5, "/a/d" },
                { PUSH, 0, 2, T | IN_ISDIR, 5, "/b/d" },
                { POP, 0, 1, F | T | IN_ISDIR, 5, "/a/d", "/b/d" },
                { POP, 0, 2, F | T | IN_ISDIR, 5, "/a/d", "/b/d" },
        } },
        { "a MOVED_FROM side that sees no MOVED_TO of its own is paired by another's", {
                { PUSH, 0, 1, F, 5, "/a/x" },
                { PUSH, 0, 2, F, 5, "/a/x" },
                { PUSH, 0, 1, T, 5, "/b/x" },
                { POP, 0, 1, F | T, 5, "/a/x", "/b/x" },
                { POP, 0, 2, F | T, 5, "/a/x", "/b/x" },
                { NONE, 0 },
                { DEADLINE, 0 },
        } },
        { "three subscriptions: two on the MOVED_FROM side, one on the MOVED_TO side", {
                { PUSH, 0, 1, F, 5, "/a/x" },
                { PUSH, 0, 2, F, 5, "/a/x" },
                { PUSH, 0, 3, T, 5, "/b/x" },
                { POP, 0, 1, F | T, 5, "/a/x", "/b/x" },
                { POP, 0, 2, F | T, 5, "/a/x", "/b/x" },
                { POP, 0, 3, F | T, 5, "/a/x", "/b/x" },
                { NONE, 0 },
        } },
        { "a subscription on both sides keeps its own spelling of the new path", {
                { PUSH, 0, 1, F, 5, "/a/x" },
                { PUSH, 0, 2, F, 5, "/a/x" },
                { PUSH, 0, 1, T, 5, "/b/x" },
                { PUSH, 0, 2, T, 5, "/link-b/x" },
                { POP, 0, 1, F | T, 5, "/a/x", "/b/x" },
                { POP, 0, 2, F | T, 5, "/a/x", "/link-b/x" },
                { NONE, 0 },
        } },
        { "a pair of the MOVED_TO side alone keeps its place in kernel order", {
                { PUSH, 0, 1, IN_CREATE, 0, "/a/0" },
                { PUSH, 0, 1, F, 5, "/a/x" },
                { PUSH, 0, 2, T, 5, "/b/x" },
                { PUSH, 0, 2, IN_CREATE, 0, "/b/y" },
                { POP, 0, 1, IN_CREATE, 0, "/a/0", "" },
                { POP, 0, 1, F | T, 5, "/a/x", "/b/x" },
                { POP, 0, 2, F | T, 5, "/a/x", "/b/x" },
                { POP, 0, 2, IN_CREATE, 0, "/b/y", "" },
        } },
        { "another rename's MOVED_FROM is not taken", {
                { PUSH, 0, 1, F, 5, "/a/x" },
                { PUSH, 0, 1, F, 6, "/a/y" },
                { PUSH, 0, 2, T, 6, "/b/y" },
                { PUSH, 0, 2, T, 5, "/b/x" },
                { POP, 0, 1, F | T, 5, "/a/x", "/b/x" },
                { POP, 0, 1, F | T, 6, "/a/y", "/b/y" },
                { POP, 0, 2, F | T, 6, "/a/y", "/b/y" },
                { POP, 0, 2, F | T, 5, "/a/x", "/b/x" },
        } },
        { "cookie 0 never pairs", {
                { PUSH, 0, 1, F, 0, "/d/a" },
                { POP, 0, 1, F, 0, "/d/a", "" },
        } },
        { "dropping keeps the notices, in order", {
                { PUSH, 0, 1, IN_CREATE, 0, "/d/1" },
                { NOTICE, 0, 7 },
                { PUSH, 0, 1, F, 5, "/d/a" },
                { DROP, 0, 2 },
                { POP, 0, 7, 0, 0, "", "" },
                { NONE, 0 },
                { DEADLINE, 0 },
        } },
};
/* clang-format on */

static void test_case(gconstpointer data) {
        const Case *c = data;
        MovePairer p;

        move_pairer_init(&p, 10 * MS, 3);
        for (const Step *s = c->steps; s->op != END; s++) {
                Record *r;

                switch (s->op) {
                case PUSH:
                case NOTICE:
                        r = record_new(s->op == PUSH ? RECORD_EVENT : RECORD_REMOVED, s->id, s->mask, s->cookie, s->t,
                                       s->path, NULL, 0);
                        g_assert_nonnull(r);
                        g_assert_cmpint(move_pairer_push(&p, r), ==, 0);
                        break;
                case POP:
                        r = move_pairer_pop(&p, s->t);
                        if (!r)
                                g_error("step %td: nothing came out, want '%s'", s - c->steps, s->path);
                        g_assert_cmpuint(r->id, ==, s->id);
                        g_assert_cmpuint(r->mask, ==, s->mask);
                        g_assert_cmpuint(r->cookie, ==, s->cookie);
                        g_assert_cmpstr(r->path, ==, s->path);
                        g_assert_cmpstr(r->new_path ?: "", ==, s->new_path);
                        record_free(r);
                        break;
                case NONE:
                        r = move_pairer_pop(&p, s->t);
                        if (r)
                                g_error("step %td: '%s' came out, want nothing", s - c->steps, r->path);
                        break;
                case DEADLINE:
                        g_assert_cmpuint(move_pairer_next_deadline(&p), ==, s->t ? s->t : UINT64_MAX);
                        break;
                case DROP:
                        g_assert_cmpuint(move_pairer_drop_events(&p, NULL, NULL), ==, s->id);
                        break;
                case END:
                        break;
                }
        }
        move_pairer_done(&p);
}

/* Many records through a small ring: order kept across growth and wrap-around. */
static void test_ring(void) {
        MovePairer p;
        uint32_t next_out = 0;

        move_pairer_init(&p, 10 * MS, 100);
        for (uint32_t i = 0; i < 10000; i++) {
                g_assert_cmpint(move_pairer_push(&p, record_new(RECORD_EVENT, i, IN_CREATE, 0, 0, "/d", NULL, 0)), ==, 0);
                if (i % 3 == 0) {
                        Record *r = move_pairer_pop(&p, 0);
                        g_assert_cmpuint(r->id, ==, next_out);
                        next_out++;
                        record_free(r);
                }
        }
        g_assert_cmpuint(move_pairer_size(&p), ==, 10000 - next_out);
        for (Record *r; (r = move_pairer_pop(&p, 0)); record_free(r)) {
                g_assert_cmpuint(r->id, ==, next_out);
                next_out++;
        }
        g_assert_cmpuint(next_out, ==, 10000);
        move_pairer_done(&p);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *name = g_strdup_printf("/move-pairer/%s", cases[i].what);
                g_test_add_data_func(name, &cases[i], test_case);
        }
        g_test_add_func("/move-pairer/ring", test_ring);
        return g_test_run();
}
