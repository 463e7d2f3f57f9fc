/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-glib-semantics - what the daemon offers for GLib's file-monitor
 * semantics (issue 14 item 3), over D-Bus against a real watchd
 *
 * A pending path's appearance is a record ("report-appearance"), followed
 * by what a directory already holds; a rename between two subscriptions of
 * one client reaches both ids ("pair-per-subscription"); the Capabilities
 * property says exactly the words the daemon implements, and the API XML
 * and watchd(8) say the same.
 *
 * Each case starts its own bus and daemon (the shared harness,
 * wt-fixture.h). Events are awaited, never slept for: "nothing more came"
 * is checked with a sentinel, a later change whose record can only come
 * after the ones before it (a client's records are in kernel order).
 */

#include <glib/gstdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "watchd-api.h"
#include "wt-fixture.h"

#define TIMEOUT_MS 5000

/* The words this daemon says in Capabilities, in no order. */
static const char *const implemented[] = {
        WATCHD_CAP_PAIR_PER_SUBSCRIPTION,
        WATCHD_CAP_REPORT_APPEARANCE,
        NULL,
};

/* ---------------------------------------------------------------- helpers */

static char *path_in(WtFixture *f, const char *rel) {
        return wt_fixture_path(f, rel);
}

static char *mkdir_in(WtFixture *f, const char *rel) {
        char *p = path_in(f, rel);

        g_assert_cmpint(g_mkdir_with_parents(p, 0755), ==, 0);
        return p;
}

/* Records of c for id, from index from on. */
static guint n_records_for(WtCollector *c, guint32 id, guint from) {
        guint n = 0;

        for (guint i = from; i < c->records->len; i++)
                n += wt_collector_record(c, i)->id == id;
        return n;
}

/* Touches a file in dir (a directory id watches for IN_CREATE) and awaits its
 * record: every record queued before it has come by then. Returns its index. */
static guint sentinel(WtCollector *c, const char *dir) {
        static unsigned n;
        g_autofree char *name = g_strdup_printf("%s/sentinel-%u", dir, n++);

        wt_touch(name);
        wt_await_record(c, name, IN_CREATE, TIMEOUT_MS);
        return (guint) wt_collector_find(c, name, IN_CREATE);
}

static GStrv words_of_property(WatchdInotify *proxy) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) r = NULL, v = NULL;

        r = g_dbus_connection_call_sync(g_dbus_proxy_get_connection(G_DBUS_PROXY(proxy)), WATCHD_BUS_NAME,
                                        WATCHD_OBJECT_PATH, "org.freedesktop.DBus.Properties", "Get",
                                        g_variant_new("(ss)", WATCHD_INTERFACE, "Capabilities"),
                                        G_VARIANT_TYPE("(v)"), G_DBUS_CALL_FLAGS_NONE, TIMEOUT_MS, NULL, &error);
        g_assert_no_error(error);
        g_variant_get(r, "(v)", &v);
        g_assert_true(g_variant_is_of_type(v, G_VARIANT_TYPE("as")));
        return g_variant_dup_strv(v, NULL);
}

/* The words quoted in the XML comment right before the Capabilities property. */
static GStrv words_of_xml(void) {
        g_autofree char *xml = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(GRegex) re = g_regex_new("\"([a-z][a-z-]*)\"", 0, 0, NULL);
        g_autoptr(GMatchInfo) mi = NULL;
        g_autoptr(GPtrArray) words = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *before = NULL, *comment = NULL;
        const char *prop, *start, *end;

        g_assert_true(g_file_get_contents(API_XML, &xml, NULL, &error));
        prop = strstr(xml, "<property name=\"Capabilities\"");
        g_assert_nonnull(prop);
        before = g_strndup(xml, prop - xml);
        start = g_strrstr(before, "<!--");
        g_assert_nonnull(start);
        end = strstr(start, "-->");
        g_assert_nonnull(end);
        /* The comment is the property's own: nothing but blanks between them. */
        for (const char *p = end + 3; *p; p++)
                g_assert_true(g_ascii_isspace(*p));
        comment = g_strndup(start, end - start);
        for (g_regex_match(re, comment, 0, &mi); g_match_info_matches(mi); g_match_info_next(mi, NULL))
                g_ptr_array_add(words, g_match_info_fetch(mi, 1));
        g_ptr_array_add(words, NULL);
        return (GStrv) g_ptr_array_free(g_steal_pointer(&words), FALSE);
}

/* The words watchd(8) lists under Capabilities ("- *word*: ..." lines of the
 * paragraph that names the property, up to the next section). */
static GStrv words_of_manual(void) {
        g_autofree char *man = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(GRegex) re = g_regex_new("^- \\*([a-z][a-z-]*)\\*:", G_REGEX_MULTILINE, 0, NULL);
        g_autoptr(GMatchInfo) mi = NULL;
        g_autoptr(GPtrArray) words = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *part = NULL;
        const char *from, *to;

        g_assert_true(g_file_get_contents(WATCHD_MAN, &man, NULL, &error));
        from = strstr(man, "*Capabilities* (as)");
        g_assert_nonnull(from);
        to = strstr(from, "\n# ");
        g_assert_nonnull(to);
        part = g_strndup(from, to - from);
        for (g_regex_match(re, part, 0, &mi); g_match_info_matches(mi); g_match_info_next(mi, NULL))
                g_ptr_array_add(words, g_match_info_fetch(mi, 1));
        g_ptr_array_add(words, NULL);
        return (GStrv) g_ptr_array_free(g_steal_pointer(&words), FALSE);
}

static void assert_same_words(const char *what, const char *const *got, const char *const *want) {
        g_autofree char *g = g_strjoinv(" ", (char **) got), *w = g_strjoinv(" ", (char **) want);

        for (const char *const *p = want; *p; p++)
                if (!g_strv_contains(got, *p))
                        g_error("%s: \"%s\" is missing (has: %s; want: %s)", what, *p, g, w);
        for (const char *const *p = got; *p; p++)
                if (!g_strv_contains(want, *p))
                        g_error("%s: \"%s\" is not implemented (has: %s; want: %s)", what, *p, g, w);
        g_assert_cmpuint(g_strv_length((char **) got), ==, g_strv_length((char **) want));
}

/* ---------------------------------------------------------------- Capabilities */

/* The property says exactly the words implemented, and so do the XML and watchd(8). */
static void test_capabilities(WtFixture *f, gconstpointer data) {
        g_auto(GStrv) live = words_of_property(f->proxy);
        g_auto(GStrv) xml = words_of_xml();
        g_auto(GStrv) man = words_of_manual();

        assert_same_words("the Capabilities property", (const char *const *) live, implemented);
        assert_same_words("the XML's comment on Capabilities", (const char *const *) xml, implemented);
        assert_same_words("watchd(8) on Capabilities", (const char *const *) man, implemented);
}

/* ---------------------------------------------------------------- report-appearance */

/* Asserts that the records of id from index from on are exactly want (paths,
 * in any order after the first, which must be want[0]), each once. */
static void assert_records(WtCollector *c, guint32 id, guint from, guint end, const char *const *want) {
        g_autoptr(GPtrArray) got = g_ptr_array_new();

        for (guint i = from; i < end; i++) {
                WtRecord *r = wt_collector_record(c, i);

                if (r->id == id)
                        g_ptr_array_add(got, r->path);
        }
        if (got->len != g_strv_length((char **) want)) {
                GString *s = g_string_new(NULL);

                for (guint i = 0; i < got->len; i++)
                        g_string_append_printf(s, " %s", (char *) got->pdata[i]);
                g_error("%u records for id %u (%s ), want %u", got->len, id, s->str, g_strv_length((char **) want));
        }
        g_assert_cmpstr(got->pdata[0], ==, want[0]);
        for (const char *const *w = want; *w; w++) {
                guint n = 0;

                for (guint i = 0; i < got->len; i++)
                        n += g_str_equal(got->pdata[i], *w);
                if (n != 1)
                        g_error("%s reported %u times, want once", *w, n);
        }
}

/* A pending directory D with IN_CREATE: mkdir D is one record (id,
 * IN_CREATE|IN_ISDIR, 0, D, ""), before the IN_CREATE of a file made in D
 * at once; with a mask without IN_CREATE, nothing for the appearance. */
static void test_appearance(WtFixture *f, gconstpointer data) {
        g_autofree char *d = path_in(f, "D"), *df = path_in(f, "D/f"), *e = path_in(f, "E");
        guint32 id, quiet;
        guint end;
        int k;
        WtRecord *r;

        wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);     /* the sentinels' */
        id = wt_add_watch(f->proxy, d, IN_CREATE | IN_DELETE, 0, NULL);
        quiet = wt_add_watch(f->proxy, e, IN_DELETE | IN_DELETE_SELF, 0, NULL);
        g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        wt_touch(df);
        g_assert_cmpint(g_mkdir(e, 0755), ==, 0);
        end = sentinel(&f->a, f->dir);

        k = wt_collector_find(&f->a, d, IN_CREATE | IN_ISDIR);
        for (; k >= 0 && wt_collector_record(&f->a, k)->id != id; k++)
                ;
        g_assert_cmpint(k, >=, 0);
        r = wt_collector_record(&f->a, k);
        g_assert_cmpuint(r->id, ==, id);
        g_assert_cmpuint(r->mask, ==, IN_CREATE | IN_ISDIR);
        g_assert_cmpuint(r->cookie, ==, 0);
        g_assert_cmpstr(r->new_path, ==, "");
        assert_records(&f->a, id, 0, end, (const char *const[]) { d, df, NULL });
        g_assert_cmpuint(n_records_for(&f->a, quiet, 0), ==, 0);
        g_assert_cmpuint(f->a.removed->len, ==, 0);
}

/* mkdir -p D/sub && touch D/f D/g in one go, and the same made elsewhere and
 * moved in: the appearance, then each entry once (the scan, or the kernel
 * for what came after the watch). */
static void test_appearance_scan(WtFixture *f, gconstpointer data) {
        g_autofree char *d = path_in(f, "D"), *sub = path_in(f, "D/sub"), *df = path_in(f, "D/f");
        g_autofree char *dg = path_in(f, "D/g"), *staging = path_in(f, "staging"), *m = path_in(f, "M");
        g_autofree char *ssub = path_in(f, "staging/sub"), *sf = path_in(f, "staging/f");
        g_autofree char *msub = path_in(f, "M/sub"), *mf = path_in(f, "M/f");
        guint32 id, id2;
        guint end;

        wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        id = wt_add_watch(f->proxy, d, IN_CREATE, 0, NULL);
        id2 = wt_add_watch(f->proxy, m, IN_CREATE, 0, NULL);
        g_assert_cmpint(g_mkdir_with_parents(sub, 0755), ==, 0);
        wt_touch(df);
        wt_touch(dg);
        g_assert_cmpint(g_mkdir_with_parents(ssub, 0755), ==, 0);
        wt_touch(sf);
        g_assert_cmpint(rename(staging, m), ==, 0);
        end = sentinel(&f->a, f->dir);
        assert_records(&f->a, id, 0, end, (const char *const[]) { d, sub, df, dg, NULL });
        assert_records(&f->a, id2, 0, end, (const char *const[]) { m, msub, mf, NULL });
        g_assert_cmpuint(wt_collector_record(&f->a, wt_collector_find(&f->a, sub, IN_CREATE))->mask, ==,
                         IN_CREATE | IN_ISDIR);
}

/* A pending file path: created, or moved in, it is IN_CREATE without IN_ISDIR. */
static void test_appearance_file(WtFixture *f, gconstpointer data) {
        g_autofree char *x = path_in(f, "sub/x"), *y = path_in(f, "sub/y"), *tmp = path_in(f, "tmp");
        g_autofree char *sub = path_in(f, "sub");
        guint32 ix, iy;
        guint end;
        int k;

        wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        ix = wt_add_watch(f->proxy, x, IN_CREATE | IN_MODIFY, 0, NULL);
        iy = wt_add_watch(f->proxy, y, IN_CREATE | IN_MODIFY, 0, NULL);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        wt_touch(x);
        wt_touch(tmp);
        g_assert_cmpint(rename(tmp, y), ==, 0);
        end = sentinel(&f->a, f->dir);
        assert_records(&f->a, ix, 0, end, (const char *const[]) { x, NULL });
        assert_records(&f->a, iy, 0, end, (const char *const[]) { y, NULL });
        k = wt_collector_find(&f->a, x, IN_CREATE);
        g_assert_cmpuint(wt_collector_record(&f->a, k)->mask, ==, IN_CREATE);
        k = wt_collector_find(&f->a, y, IN_CREATE);
        g_assert_cmpuint(wt_collector_record(&f->a, k)->mask, ==, IN_CREATE);
}

/* ---------------------------------------------------------------- pair-per-subscription */

/* One client, subscriptions on A and B: mv A/x B/x reaches both ids, each
 * record with both paths, A's (the MOVED_FROM side) first. */
static void test_pair_per_subscription(WtFixture *f, gconstpointer data) {
        g_autofree char *a = mkdir_in(f, "A"), *b = mkdir_in(f, "B");
        g_autofree char *ax = path_in(f, "A/x"), *bx = path_in(f, "B/x");
        guint32 ia, ib;
        guint end;
        int k;
        WtRecord *r;

        wt_touch(ax);
        ia = wt_add_watch(f->proxy, a, IN_MOVE | IN_CREATE, 0, NULL);
        ib = wt_add_watch(f->proxy, b, IN_MOVE | IN_CREATE, 0, NULL);
        g_assert_cmpint(rename(ax, bx), ==, 0);
        end = sentinel(&f->a, b);

        k = wt_collector_find(&f->a, ax, IN_MOVED_FROM | IN_MOVED_TO);
        g_assert_cmpint(k, >=, 0);
        r = wt_collector_record(&f->a, k);
        g_assert_cmpuint(r->id, ==, ia);
        g_assert_cmpstr(r->new_path, ==, bx);
        g_assert_cmpint(k + 1, <, (int) end);
        r = wt_collector_record(&f->a, k + 1);
        g_assert_cmpuint(r->id, ==, ib);
        g_assert_cmpuint(r->mask & (IN_MOVED_FROM | IN_MOVED_TO), ==, IN_MOVED_FROM | IN_MOVED_TO);
        g_assert_cmpstr(r->path, ==, ax);
        g_assert_cmpstr(r->new_path, ==, bx);
        g_assert_cmpuint(r->cookie, ==, wt_collector_record(&f->a, k)->cookie);
        /* Nothing else about it: one record each. */
        g_assert_cmpuint(n_records_for(&f->a, ia, 0), ==, 1);
        g_assert_cmpuint(n_records_for(&f->a, ib, 0), ==, 2);         /* the pair, the sentinel */
}

/* Two clients on A and B: each hears its own half, as before. */
static void test_pair_two_clients(WtFixture *f, gconstpointer data) {
        g_autofree char *a = mkdir_in(f, "A"), *b = mkdir_in(f, "B");
        g_autofree char *ax = path_in(f, "A/x"), *bx = path_in(f, "B/x");
        guint32 ia, ib;
        WtRecord *r;

        wt_touch(ax);
        ia = wt_add_watch(f->proxy, a, IN_MOVE | IN_CREATE, 0, NULL);
        ib = wt_add_watch(f->proxy2, b, IN_MOVE | IN_CREATE, 0, NULL);
        g_assert_cmpint(rename(ax, bx), ==, 0);
        sentinel(&f->a, a);
        sentinel(&f->b, b);

        r = wt_collector_record(&f->a, 0);
        g_assert_cmpuint(r->id, ==, ia);
        g_assert_cmpuint(r->mask, ==, IN_MOVED_FROM);
        g_assert_cmpstr(r->path, ==, ax);
        g_assert_cmpstr(r->new_path, ==, "");
        r = wt_collector_record(&f->b, 0);
        g_assert_cmpuint(r->id, ==, ib);
        g_assert_cmpuint(r->mask, ==, IN_MOVED_TO);
        g_assert_cmpstr(r->path, ==, bx);
        g_assert_cmpstr(r->new_path, ==, "");
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        WT_CASE("/glib-semantics/capabilities", NULL, test_capabilities);
        WT_CASE("/glib-semantics/appearance", NULL, test_appearance);
        WT_CASE("/glib-semantics/appearance-scan", NULL, test_appearance_scan);
        WT_CASE("/glib-semantics/appearance-file", NULL, test_appearance_file);
        WT_CASE("/glib-semantics/pair-per-subscription", NULL, test_pair_per_subscription);
        WT_CASE("/glib-semantics/pair-two-clients", NULL, test_pair_two_clients);
        return g_test_run();
}
