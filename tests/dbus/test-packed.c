/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-packed - EventsPacked: a PACKED subscription's records as the
 * stream's frames in one ay, against a real watchd
 *
 * The claim of the API (data/org.example.Inotify.xml, EventsPacked) is that
 * the packed records are the Events records, only written otherwise: the
 * same ids, masks, cookies and paths (as bytes where Events escapes them),
 * renames paired the same way, in the same order among a client's other
 * records, cut at the same limits, with Overflow and flow control as for
 * Events. So each test watches the same directory twice, PACKED and not,
 * and compares what the two subscriptions received. A client that did not
 * ask gets Events only.
 *
 * Each test starts its own bus and daemon. Records are awaited, never slept
 * for.
 */

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path_escape.h"
#include "watchd-api.h"
#include "wt-fixture.h"

#define TIMEOUT_MS 20000
#define ALL_MASK \
        (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB | IN_MODIFY | IN_DELETE_SELF)

/* A record as bytes: a record of Events unescaped if it says so. */
typedef struct Plain {
        guint32 mask, cookie;
        char *path, *new_path;
        gboolean packed, escaped;
} Plain;

static void plain_clear(gpointer p) {
        Plain *r = p;

        g_free(r->path);
        g_free(r->new_path);
}

static char *unescape_or_die(const char *s) {
        char *out = NULL;

        if (path_unescape(s, &out) < 0)
                g_error("watchd sent a path marked escaped that does not unescape: \"%s\"", s);
        return out;
}

/* The records of subscription id, in arrival order, as bytes. */
static GArray *records_of(WtCollector *c, guint32 id) {
        GArray *out = g_array_new(FALSE, TRUE, sizeof(Plain));

        g_array_set_clear_func(out, plain_clear);
        for (guint i = 0; i < c->records->len; i++) {
                WtRecord *r = wt_collector_record(c, i);
                gboolean escaped = (r->mask & WATCHD_FLAG_PATH_ESCAPED) != 0;
                Plain p;

                if (r->id != id)
                        continue;
                /* Packed paths are bytes: never marked escaped. */
                g_assert_false(r->packed && escaped);
                p = (Plain) {
                        .mask = r->mask & ~WATCHD_FLAG_PATH_ESCAPED,
                        .cookie = r->cookie,
                        .path = escaped ? unescape_or_die(r->path) : g_strdup(r->path),
                        .new_path = escaped ? unescape_or_die(r->new_path) : g_strdup(r->new_path),
                        .packed = r->packed,
                        .escaped = escaped,
                };
                g_array_append_val(out, p);
        }
        return out;
}

static gboolean has_record(WtCollector *c, guint32 id, const char *path) {
        for (guint i = 0; i < c->records->len; i++) {
                WtRecord *r = wt_collector_record(c, i);
                g_autofree char *bytes = NULL;

                if (r->id != id)
                        continue;
                bytes = (r->mask & WATCHD_FLAG_PATH_ESCAPED) ? unescape_or_die(r->path) : g_strdup(r->path);
                if (strcmp(bytes, path) == 0)
                        return TRUE;
        }
        return FALSE;
}

/* Awaits a record of id about path (as bytes); fails the test at TIMEOUT_MS. */
static void await_path(WtCollector *c, guint32 id, const char *path) {
        gint64 deadline = g_get_monotonic_time() + (gint64) TIMEOUT_MS * 1000;

        while (!has_record(c, id, path)) {
                if (g_get_monotonic_time() > deadline)
                        g_error("No record of %u about %s in %d ms", id, path, TIMEOUT_MS);
                g_main_context_iteration(NULL, TRUE);
        }
}

/* Awaits as many records of plain as of packed, up to TIMEOUT_MS. */
static void await_same_count(WtCollector *c, guint32 plain, guint32 packed) {
        gint64 deadline = g_get_monotonic_time() + (gint64) TIMEOUT_MS * 1000;

        for (;;) {
                g_autoptr(GArray) a = records_of(c, plain), b = records_of(c, packed);

                if (a->len == b->len || g_get_monotonic_time() > deadline)
                        return;
                if (!g_main_context_iteration(NULL, FALSE))
                        g_usleep(10 * 1000);
        }
}

/* The records of plain (Events) and packed (EventsPacked) are the same, one
 * for one, and came the way each subscription asked. Returns how many. */
static guint assert_same_records(WtCollector *c, guint32 plain, guint32 packed, guint *ret_escaped, guint *ret_pairs) {
        g_autoptr(GArray) a = records_of(c, plain), b = records_of(c, packed);
        guint escaped = 0, pairs = 0;

        g_assert_cmpuint(a->len, >, 0);
        g_assert_cmpuint(a->len, ==, b->len);
        for (guint i = 0; i < a->len; i++) {
                Plain *x = &g_array_index(a, Plain, i), *y = &g_array_index(b, Plain, i);

                g_assert_false(x->packed);
                g_assert_true(y->packed);
                g_assert_cmphex(x->mask, ==, y->mask);
                g_assert_cmpuint(x->cookie, ==, y->cookie);
                g_assert_cmpstr(x->path, ==, y->path);
                g_assert_cmpstr(x->new_path, ==, y->new_path);
                escaped += x->escaped;
                pairs += *x->new_path != '\0';
        }
        if (ret_escaped)
                *ret_escaped = escaped;
        if (ret_pairs)
                *ret_pairs = pairs;
        return a->len;
}

/* A client's records keep their kernel order across Events and EventsPacked:
 * each kernel event reaches both subscriptions in a row, so at every point of
 * the arrival order neither is more than one record ahead. */
static void assert_interleaved(WtCollector *c, guint32 plain, guint32 packed) {
        gint64 ahead = 0;

        for (guint i = 0; i < c->records->len; i++) {
                WtRecord *r = wt_collector_record(c, i);

                if (r->id == plain)
                        ahead++;
                else if (r->id == packed)
                        ahead--;
                g_assert_cmpint(ABS(ahead), <=, 1);
        }
        g_assert_cmpint(ahead, ==, 0);
}

/* 14 levels of 250-byte names below top, made; deep is the bottom's path
 * (~3,550 bytes): with odd, each name holds a byte that is not UTF-8. */
static void make_deep(GString *deep, const char *top, gboolean odd) {
        g_string_assign(deep, top);
        for (int i = 0; i < 14; i++) {
                char name[251];

                memset(name, 'd', 250);
                name[250] = '\0';
                if (odd) {
                        name[0] = (char) ('0' + i % 10);
                        name[1] = '\xff';
                }
                g_string_append_c(deep, '/');
                g_string_append(deep, name);
                g_assert_cmpint(g_mkdir(deep->str, 0755), ==, 0);
        }
}

static void test_capability(WtFixture *f, gconstpointer data) {
        const char *const *caps = watchd_inotify_get_capabilities(f->proxy);

        g_assert_nonnull(caps);
        g_assert_true(g_strv_contains(caps, WATCHD_CAP_PACKED_EVENTS));
}

/* Names that are not UTF-8, a control character, a noncharacter sd-bus
 * refuses, a path of ~3,800 bytes, renames paired, moved out and in: the
 * same records both ways, in the same order. */
static void test_same_records(WtFixture *f, gconstpointer data) {
        static const char *const odd[] = { "caf\xe9", "a\x01z", "\xef\xb7\x90", "back\\slash", "ok" };
        g_autofree char *dir = wt_fixture_path(f, "w"), *out = wt_fixture_path(f, "out");
        g_autoptr(GString) deep = g_string_new(NULL);
        g_autofree char *long_file = NULL, *end = NULL;
        guint32 plain, packed;
        guint n, escaped = 0, pairs = 0;

        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(out, 0755), ==, 0);
        make_deep(deep, dir, TRUE);
        long_file = g_strdup_printf("%s/%0200d\xfe", deep->str, 7);
        g_assert_cmpuint(strlen(long_file), >, 3700);
        g_assert_cmpuint(strlen(long_file), <, 4000);

        plain = wt_add_watch(f->proxy, dir, ALL_MASK, WATCHD_FLAG_RECURSIVE, NULL);
        packed = wt_add_watch(f->proxy, dir, ALL_MASK, WATCHD_FLAG_RECURSIVE | WATCHD_FLAG_PACKED, NULL);

        for (size_t i = 0; i < G_N_ELEMENTS(odd); i++) {
                g_autofree char *p = g_build_filename(dir, odd[i], NULL);
                g_autofree char *q = g_strdup_printf("%s.moved", p);

                wt_touch(p);
                g_assert_cmpint(rename(p, q), ==, 0); /* a pair within the directory */
        }
        wt_touch(long_file);
        {
                g_autofree char *q = g_strdup_printf("%s/%0200d\xfd", deep->str, 8);
                g_autofree char *away = g_build_filename(out, "away", NULL);
                g_autofree char *back = g_build_filename(dir, "back\xe9", NULL);

                g_assert_cmpint(rename(long_file, q), ==, 0); /* a pair of two long paths */
                g_assert_cmpint(rename(q, away), ==, 0);      /* moved out: MOVED_FROM alone */
                g_assert_cmpint(rename(away, back), ==, 0);   /* moved in: MOVED_TO alone */
                g_assert_cmpint(unlink(back), ==, 0);
        }
        end = g_build_filename(dir, "end", NULL);
        wt_touch(end);
        await_path(&f->a, plain, end);
        await_path(&f->a, packed, end);
        /* end's later records (its CLOSE_WRITE) may still be on their way
         * to one of the two: both are awaited, up to TIMEOUT_MS (a record
         * lost to one of them still fails below). */
        await_same_count(&f->a, plain, packed);

        n = assert_same_records(&f->a, plain, packed, &escaped, &pairs);
        assert_interleaved(&f->a, plain, packed);
        g_assert_cmpuint(n, >=, 20);
        g_assert_cmpuint(escaped, >=, 4); /* the test went through escaping on the Events side */
        g_assert_cmpuint(pairs, >=, G_N_ELEMENTS(odd) + 1);
        g_assert_cmpuint(f->a.n_packed, >, 0);
        g_assert_cmpuint(f->a.n_signals, >, f->a.n_packed);
}

/* A client that did not ask gets Events, whoever else watches the same
 * directory PACKED. */
static void test_not_asked(WtFixture *f, gconstpointer data) {
        g_autofree char *dir = wt_fixture_path(f, "w"), *file = NULL;
        guint32 packed, plain;

        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        packed = wt_add_watch(f->proxy, dir, IN_CREATE, WATCHD_FLAG_PACKED, NULL);
        plain = wt_add_watch(f->proxy2, dir, IN_CREATE, 0, NULL);
        for (int i = 0; i < 50; i++) {
                g_autofree char *p = g_strdup_printf("%s/f-%d", dir, i);

                wt_touch(p);
        }
        file = g_strdup_printf("%s/f-49", dir);
        await_path(&f->a, packed, file);
        await_path(&f->b, plain, file);
        g_assert_cmpuint(f->a.n_records, ==, 50);
        g_assert_cmpuint(f->b.n_records, ==, 50);
        g_assert_cmpuint(f->b.n_packed, ==, 0);
        g_assert_cmpuint(f->a.n_packed, ==, f->a.n_signals);
        for (guint i = 0; i < 50; i++) {
                g_autofree char *p = g_strdup_printf("%s/f-%u", dir, i);

                g_assert_cmpstr(wt_collector_record(&f->a, i)->path, ==, p);
                g_assert_cmpstr(wt_collector_record(&f->b, i)->path, ==, p);
                g_assert_true(wt_collector_record(&f->a, i)->packed);
                g_assert_false(wt_collector_record(&f->b, i)->packed);
        }
}

/* A rename from a plain subscription's directory to a PACKED one's: each
 * gets the pair (pair-per-subscription), the PACKED one's made by the pairer
 * from its MOVED_TO half, and packed all the same. */
static void test_pair_across(WtFixture *f, gconstpointer data) {
        g_autofree char *x = wt_fixture_path(f, "x"), *y = wt_fixture_path(f, "y");
        g_autofree char *from = g_build_filename(x, "f\xe9", NULL), *to = g_build_filename(y, "g\xe9", NULL);
        g_autofree char *end = g_build_filename(y, "end", NULL);
        g_autoptr(GArray) a = NULL, b = NULL;
        guint32 plain, packed;

        g_assert_cmpint(g_mkdir(x, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(y, 0755), ==, 0);
        wt_touch(from);
        plain = wt_add_watch(f->proxy, x, IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE, 0, NULL);
        packed = wt_add_watch(f->proxy, y, IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE, WATCHD_FLAG_PACKED, NULL);
        g_assert_cmpint(rename(from, to), ==, 0);
        wt_touch(end);
        await_path(&f->a, packed, end);

        a = records_of(&f->a, plain);
        b = records_of(&f->a, packed);
        g_assert_cmpuint(a->len, ==, 1);
        g_assert_cmpuint(b->len, ==, 2);
        for (guint k = 0; k < 2; k++) {
                Plain *r = k ? &g_array_index(b, Plain, 0) : &g_array_index(a, Plain, 0);

                g_assert_true(r->packed == (k == 1));
                g_assert_cmphex(r->mask & (IN_MOVED_FROM | IN_MOVED_TO), ==, IN_MOVED_FROM | IN_MOVED_TO);
                g_assert_cmpstr(r->path, ==, from);
                g_assert_cmpstr(r->new_path, ==, to);
        }
        g_assert_cmpuint(g_array_index(a, Plain, 0).cookie, ==, g_array_index(b, Plain, 0).cookie);
}

/* A backlog past max_pending_events_per_client (16): one Overflow naming
 * both subscriptions, among their records, and both go on after it alike. */
static void test_overflow(WtFixture *f, gconstpointer data) {
        g_autofree char *dir = wt_fixture_path(f, "w");
        pid_t pid = wt_process_pid(f->daemon->process);
        guint32 plain, packed;
        gboolean saw_plain = FALSE, saw_packed = FALSE;

        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        plain = wt_add_watch(f->proxy, dir, IN_CREATE, 0, NULL);
        packed = wt_add_watch(f->proxy, dir, IN_CREATE, WATCHD_FLAG_PACKED, NULL);

        /* 100 files, 200 records, wait in the kernel queue; one read takes them. */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        for (int i = 0; i < 100; i++) {
                g_autofree char *p = g_strdup_printf("%s/f-%03d", dir, i);

                wt_touch(p);
        }
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        g_assert_true(wt_await_overflows(&f->a, 1, TIMEOUT_MS));
        for (guint i = 0; i < f->a.overflow_ids->len; i++) {
                saw_plain |= g_array_index(f->a.overflow_ids, guint32, i) == plain;
                saw_packed |= g_array_index(f->a.overflow_ids, guint32, i) == packed;
        }
        g_assert_true(saw_plain && saw_packed);
        g_assert_cmpuint(f->a.n_records, <, 200);

        /* What came before the Overflow is in kernel order, each record of one
         * of the 100 files; then the two subscriptions go on alike. */
        for (int i = 0; i < 3; i++) {
                g_autofree char *p = g_strdup_printf("%s/g-%d", dir, i);

                wt_touch(p);
                await_path(&f->a, plain, p);
                await_path(&f->a, packed, p);
        }
        for (guint32 id = MIN(plain, packed), k = 0; k < 2; k++, id = MAX(plain, packed)) {
                g_autoptr(GArray) recs = records_of(&f->a, id);
                const char *last = "";

                g_assert_cmpuint(recs->len, >=, 3);
                for (guint i = 0; i < recs->len; i++) {
                        Plain *r = &g_array_index(recs, Plain, i);

                        g_assert_true(r->packed == (id == packed));
                        g_assert_cmpint(strcmp(last, r->path), <, 0);
                        last = r->path;
                }
                g_assert_true(g_str_has_suffix(g_array_index(recs, Plain, recs->len - 1).path, "/g-2"));
        }
        g_assert_cmpuint(f->a.n_packed, >, 0);
}

/* Signals are cut at about 1 MiB of frames as Events are at 1 MiB of
 * records: 400 paths of ~3,800 bytes (1.5 MB) read at once go in two
 * EventsPacked signals or more, none over the cap, none lost. */
static void test_cut(WtFixture *f, gconstpointer data) {
        g_autofree char *dir = wt_fixture_path(f, "w"), *last = NULL;
        g_autoptr(GString) deep = g_string_new(NULL);
        pid_t pid = wt_process_pid(f->daemon->process);
        guint32 packed, plain;

        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        make_deep(deep, dir, FALSE);
        packed = wt_add_watch(f->proxy, deep->str, IN_CREATE, WATCHD_FLAG_PACKED, NULL);
        plain = wt_add_watch(f->proxy, deep->str, IN_CREATE, 0, NULL);

        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        for (int i = 0; i < 400; i++) {
                g_autofree char *p = g_strdup_printf("%s/%0200d", deep->str, i);

                wt_touch(p);
        }
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        last = g_strdup_printf("%s/%0200d", deep->str, 399);
        await_path(&f->a, packed, last);
        await_path(&f->a, plain, last);
        g_assert_cmpuint(f->a.overflow_ids->len, ==, 0);
        g_assert_cmpuint(assert_same_records(&f->a, plain, packed, NULL, NULL), ==, 400);
        assert_interleaved(&f->a, plain, packed);
        g_assert_cmpuint(f->a.n_packed, >=, 2);
        g_assert_cmpuint(f->a.max_packed_bytes, <=, 1024 * 1024 + 8192);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);

        WT_CASE("/packed/capability", NULL, test_capability);
        WT_CASE("/packed/same-records", NULL, test_same_records);
        WT_CASE("/packed/not-asked", NULL, test_not_asked);
        WT_CASE("/packed/pair-across", NULL, test_pair_across);
        WT_CASE("/packed/overflow", "[limits]\nmax_pending_events_per_client = 16\n", test_overflow);
        WT_CASE("/packed/cut", "[events]\nbatch_max_events = 65536\n[limits]\nmax_pending_events_per_client = 100000\n",
                test_cut);
        return g_test_run();
}
