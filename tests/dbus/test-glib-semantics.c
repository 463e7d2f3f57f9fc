/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-glib-semantics - what the daemon offers for GLib's file-monitor
 * semantics (issue 14 item 3), over D-Bus against a real watchd
 *
 * A pending path's appearance is a record ("report-appearance"), followed
 * by what a directory already holds; a subscription with PERSIST outlives
 * its path's object: deleted, unmounted, renamed away or replaced, it is
 * pending again and reports the path's return ("persistent"); a rename
 * between two subscriptions of
 * one client reaches both ids ("pair-per-subscription"); the Capabilities
 * property says exactly the words the daemon implements, and the API XML
 * and watchd(8) say the same.
 *
 * Each case starts its own bus and daemon (the shared harness,
 * wt-fixture.h). Events are awaited, never slept for: "nothing more came"
 * is checked with a sentinel, a later change whose record can only come
 * after the ones before it (a client's records are in kernel order).
 */

#include <errno.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <unistd.h>

#include "watchd-api.h"
#include "wt-fixture.h"

#define TIMEOUT_MS 5000

/* The words this daemon says in Capabilities, in no order. */
static const char *const implemented[] = {
        WATCHD_CAP_PAIR_PER_SUBSCRIPTION,
        WATCHD_CAP_REPORT_APPEARANCE,
        WATCHD_CAP_PERSISTENT,
        WATCHD_CAP_STREAM,
        WATCHD_CAP_DURABLE_STREAM, /* replays in the stream (issue 22) */
        WATCHD_CAP_PACKED_EVENTS,  /* PACKED, EventsPacked (issue 27) */
        WATCHD_CAP_REMOTE_POLLING, /* the default [poll] config polls (issue 17) */
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
                                        g_variant_new("(ss)", WATCHD_INTERFACE, "Capabilities"), G_VARIANT_TYPE("(v)"),
                                        G_DBUS_CALL_FLAGS_NONE, TIMEOUT_MS, NULL, &error);
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

        wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL); /* the sentinels' */
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
        /* Their directory's creation, which set off the look that found them, comes first. */
        g_assert_cmpint(wt_collector_find(&f->a, sub, IN_CREATE | IN_ISDIR), >=, 0);
        g_assert_cmpint(wt_collector_find(&f->a, sub, IN_CREATE | IN_ISDIR), <, wt_collector_find(&f->a, x, IN_CREATE));
}

/* ---------------------------------------------------------------- persistent */

#define PERSIST_MASK (IN_CREATE | IN_DELETE_SELF | IN_MODIFY)

/* id's ListWatches entry: its path and flags; FALSE if it is not listed. */
static gboolean listed(WatchdInotify *proxy, guint32 id, char **ret_path, guint32 *ret_flags) {
        g_autoptr(GVariant) list = NULL;
        g_autoptr(GError) error = NULL;

        watchd_inotify_call_list_watches_sync(proxy, &list, NULL, &error);
        g_assert_no_error(error);
        for (gsize i = 0; i < g_variant_n_children(list); i++) {
                guint32 lid, mask, flags;
                const char *path;

                g_variant_get_child(list, i, "(u&suu)", &lid, &path, &mask, &flags);
                if (lid == id) {
                        *ret_path = g_strdup(path);
                        *ret_flags = flags;
                        return TRUE;
                }
        }
        return FALSE;
}

static void assert_listed(WatchdInotify *proxy, guint32 id, const char *path) {
        g_autofree char *p = NULL;
        guint32 flags = 0;
        gboolean found = listed(proxy, id, &p, &flags);

        g_assert_true(found);
        g_assert_cmpstr(p, ==, path);
        g_assert_cmpuint(flags, ==, WATCHD_FLAG_PERSIST);
}

/* The index of the first record of id with exactly mask and path, from index
 * from on, or -1. IN_ISDIR is not compared for the object's own events
 * (IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT): the syscalls do not set it
 * there, the device may. */
static int find_exact(WtCollector *c, guint from, guint32 id, guint32 mask, const char *path) {
        guint32 ignore = mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT) ? IN_ISDIR : 0;

        for (guint i = from; i < c->records->len; i++) {
                WtRecord *r = wt_collector_record(c, i);

                if (r->id == id && (r->mask & ~ignore) == (mask & ~ignore) && g_str_equal(r->path, path))
                        return (int) i;
        }
        return -1;
}

typedef struct Exact {
        WtCollector *c;
        guint32 id, mask;
        const char *path;
} Exact;

static gboolean exact_met(gpointer data) {
        Exact *x = data;

        return find_exact(x->c, 0, x->id, x->mask, x->path) >= 0;
}

/* Awaits find_exact(c, 0, id, mask, path); returns its index. */
static guint await_exact(WtCollector *c, guint32 id, guint32 mask, const char *path) {
        Exact x = { c, id, mask, path };

        if (!wt_await(exact_met, &x, TIMEOUT_MS))
                g_error("no record (%u, 0x%x, %s) within %d ms", id, mask, path, TIMEOUT_MS);
        return (guint) find_exact(c, 0, id, mask, path);
}

/* PERSIST on D: rmdir D is IN_DELETE_SELF and no WatchRemoved, ListWatches
 * still lists it; mkdir D && touch D/f is the appearance, then f; and again. */
static void test_persist_deleted(WtFixture *f, gconstpointer data) {
        g_autofree char *d = mkdir_in(f, "D"), *df = path_in(f, "D/f");
        guint32 id = wt_add_watch(f->proxy, d, PERSIST_MASK, WATCHD_FLAG_PERSIST, NULL);
        guint end;
        int k;

        wt_add_watch(f->proxy, f->dir, IN_CREATE | IN_DELETE, 0, NULL);
        for (int round = 0; round < 2; round++) {
                guint from = f->a.records->len;

                g_assert_cmpint(g_rmdir(d), ==, 0);
                end = sentinel(&f->a, f->dir);
                g_assert_cmpint(find_exact(&f->a, from, id, IN_DELETE_SELF, d), >=, 0);
                g_assert_cmpuint(n_records_for(&f->a, id, from), ==, 1);
                g_assert_cmpuint(f->a.removed->len, ==, 0);
                assert_listed(f->proxy, id, d);

                from = end + 1;
                g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
                wt_touch(df);
                end = sentinel(&f->a, f->dir);
                k = find_exact(&f->a, from, id, IN_CREATE | IN_ISDIR, d);
                g_assert_cmpint(k, >=, 0);
                assert_records(&f->a, id, from, end, (const char *const[]) { d, df, NULL });
                g_assert_cmpint(unlink(df), ==, 0);
        }
        g_assert_cmpuint(f->a.removed->len, ==, 0);
}

/* Renamed away (its parent not watched): the syscalls' IN_MOVE_SELF, pending
 * on its path, which does not follow the object; back when D is made again. */
static void test_persist_renamed(WtFixture *f, gconstpointer data) {
        g_autofree char *parent = mkdir_in(f, "p"), *d = mkdir_in(f, "p/D"), *e = path_in(f, "p/E");
        g_autofree char *ef = path_in(f, "p/E/f");
        guint32 id = wt_add_watch(f->proxy, d, PERSIST_MASK, WATCHD_FLAG_PERSIST, NULL);
        guint32 other = wt_add_watch(f->proxy2, f->dir, IN_CREATE, 0, NULL);

        g_assert_cmpint(rename(d, e), ==, 0);
        await_exact(&f->a, id, IN_MOVE_SELF, d);
        /* Nothing from the object where it went. */
        wt_touch(ef);
        sentinel(&f->b, f->dir);
        g_assert_cmpint(wt_collector_find(&f->a, ef, IN_CREATE), ==, -1);
        assert_listed(f->proxy, id, d);
        g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        await_exact(&f->a, id, IN_CREATE | IN_ISDIR, d);
        g_assert_cmpuint(n_records_for(&f->a, id, 0), ==, 2);
        g_assert_cmpuint(f->a.removed->len, ==, 0);
        (void) parent;
        (void) other;
}

/* Renamed away while its parent is watched (here by another client): the
 * daemon sees the rename itself and says IN_MOVE_SELF once, not twice. */
static void test_persist_renamed_seen(WtFixture *f, gconstpointer data) {
        g_autofree char *d = mkdir_in(f, "D"), *e = path_in(f, "E"), *x = path_in(f, "x");
        guint32 id = wt_add_watch(f->proxy, d, PERSIST_MASK, WATCHD_FLAG_PERSIST, NULL);
        guint end;

        wt_add_watch(f->proxy2, f->dir, IN_MOVE, 0, NULL);
        wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        g_assert_cmpint(rename(d, e), ==, 0);
        wt_await_record(&f->b, d, IN_MOVED_FROM | IN_MOVED_TO, TIMEOUT_MS);
        wt_touch(x);
        end = sentinel(&f->a, f->dir);
        g_assert_cmpint(find_exact(&f->a, 0, id, IN_MOVE_SELF, d), >=, 0);
        g_assert_cmpuint(n_records_for(&f->a, id, 0), ==, 1);
        g_assert_cmpint(wt_collector_find(&f->a, x, IN_CREATE), <, (int) end);
        assert_listed(f->proxy, id, d);
        g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        await_exact(&f->a, id, IN_CREATE | IN_ISDIR, d);
}

/* A file saved by renaming a new one over it: the old file's IN_DELETE_SELF,
 * then at once the appearance of the new one, whose changes follow. */
static void test_persist_atomic_save(WtFixture *f, gconstpointer data) {
        g_autofree char *file = path_in(f, "doc"), *tmp = path_in(f, ".doc.tmp");
        guint32 id;
        int k, c;
        FILE *fp;

        g_assert_true(g_file_set_contents(file, "one\n", -1, NULL));
        id = wt_add_watch(f->proxy, file, PERSIST_MASK, WATCHD_FLAG_PERSIST, NULL);
        g_assert_true(g_file_set_contents(tmp, "two\n", -1, NULL));
        g_assert_cmpint(rename(tmp, file), ==, 0);
        c = (int) await_exact(&f->a, id, IN_CREATE, file);
        k = find_exact(&f->a, 0, id, IN_DELETE_SELF, file);
        g_assert_cmpint(k, >=, 0);
        g_assert_cmpint(k, <, c);
        fp = fopen(file, "a");
        g_assert_nonnull(fp);
        fputs("three\n", fp);
        g_assert_cmpint(fclose(fp), ==, 0);
        g_assert_cmpuint(wt_await_record(&f->a, file, IN_MODIFY, TIMEOUT_MS)->id, ==, id);
        g_assert_cmpuint(f->a.removed->len, ==, 0);
}

/* An unmounted tmpfs: IN_UNMOUNT, then the path leads to the directory below
 * the mount at once: its appearance, and it is watched from then on. */
static void test_persist_unmounted(WtFixture *f, gconstpointer data) {
        g_autofree char *mnt = mkdir_in(f, "mnt"), *under = path_in(f, "mnt/under");
        guint32 id;
        int k;

        if (geteuid() != 0) {
                g_test_skip("mounting a tmpfs needs root");
                return;
        }
        if (mount("watchd-test", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") < 0) {
                g_test_skip_printf("cannot mount a tmpfs: %s", g_strerror(errno));
                return;
        }
        id = wt_add_watch(f->proxy, mnt, PERSIST_MASK, WATCHD_FLAG_PERSIST, NULL);
        g_assert_cmpint(umount2(mnt, 0), ==, 0);
        await_exact(&f->a, id, IN_CREATE | IN_ISDIR, mnt);
        k = find_exact(&f->a, 0, id, IN_UNMOUNT, mnt);
        g_assert_cmpint(k, >=, 0);
        g_assert_cmpint(k, <, find_exact(&f->a, 0, id, IN_CREATE | IN_ISDIR, mnt));
        g_assert_cmpuint(f->a.removed->len, ==, 0);
        wt_touch(under);
        g_assert_cmpuint(wt_await_record(&f->a, under, IN_CREATE, TIMEOUT_MS)->id, ==, id);
}

/* Pending again, a PERSIST subscription is charged its chain as at AddWatch:
 * over the limit, it cannot follow its path, and ends ("deleted"). */
static void test_persist_limits(WtFixture *f, gconstpointer data) {
        g_autofree char *d = mkdir_in(f, "D");
        guint32 id;

        g_autofree char *missing = path_in(f, "nothing-here");

        /* "/" down to f->dir is more than 3 directories (TMPDIR/bus dir/files):
         * a path pending there is over the limit, a placed one is not. */
        wt_add_watch_fails(f->proxy, missing, IN_CREATE, WATCHD_FLAG_PERSIST, WATCHD_ERROR_LIMITS_EXCEEDED);
        id = wt_add_watch(f->proxy, d, PERSIST_MASK, WATCHD_FLAG_PERSIST, NULL);
        g_assert_cmpint(g_rmdir(d), ==, 0);
        g_assert_true(wt_await_removed(&f->a, id, WATCHD_REASON_DELETED, TIMEOUT_MS));
        g_assert_nonnull(wt_await_record(&f->a, d, IN_DELETE_SELF, TIMEOUT_MS));
        g_assert_true(wt_await_stat(f->proxy, "subscriptions", 0, TIMEOUT_MS));
}

/* PERSIST follows a path: AddWatchFd, which names an object, refuses it. */
static void test_persist_fd(WtFixture *f, gconstpointer data) {
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
        g_autoptr(GVariant) r = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree char *name = NULL;
        int fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(g_unix_fd_list_append(fds, fd, NULL), ==, 0);
        close(fd);
        r = g_dbus_proxy_call_with_unix_fd_list_sync(G_DBUS_PROXY(f->proxy), "AddWatchFd",
                                                     g_variant_new("(huu)", 0, IN_CREATE, WATCHD_FLAG_PERSIST),
                                                     G_DBUS_CALL_FLAGS_NONE, TIMEOUT_MS, fds, NULL, NULL, &error);
        g_assert_null(r);
        name = g_dbus_error_get_remote_error(error);
        g_assert_cmpstr(name, ==, WATCHD_ERROR_INVALID_ARGS);
        g_assert_nonnull(strstr(error->message, "PERSIST"));
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
        g_assert_cmpuint(n_records_for(&f->a, ib, 0), ==, 2); /* the pair, the sentinel */
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
        WT_CASE("/glib-semantics/persist-deleted", NULL, test_persist_deleted);
        WT_CASE("/glib-semantics/persist-renamed", NULL, test_persist_renamed);
        WT_CASE("/glib-semantics/persist-renamed-seen", NULL, test_persist_renamed_seen);
        WT_CASE("/glib-semantics/persist-atomic-save", NULL, test_persist_atomic_save);
        WT_CASE("/glib-semantics/persist-unmounted", NULL, test_persist_unmounted);
        WT_CASE("/glib-semantics/persist-limits", "[limits]\nmax_watches_per_client = 3\n", test_persist_limits);
        WT_CASE("/glib-semantics/persist-fd", NULL, test_persist_fd);
        WT_CASE("/glib-semantics/pair-per-subscription", NULL, test_pair_per_subscription);
        WT_CASE("/glib-semantics/pair-two-clients", NULL, test_pair_two_clients);
        return g_test_run();
}
