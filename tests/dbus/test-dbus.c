/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-dbus - the org.example.Inotify API against a real watchd on a
 * private dbus-daemon, with the syscall backend and GIO clients generated
 * from data/org.example.Inotify.xml
 *
 * Each case starts its own bus and daemon (about 50 ms; the fixture of
 * wt-fixture.h), so no case sees another's state, and each is a meson test
 * of its own. Events are awaited, never slept for: a case iterates the main
 * context until the record it expects arrives or a deadline passes. Cases
 * that need a second uid or a process to kill run this binary again as a
 * helper (--helper ...), as nobody where needed (a copy that nobody can
 * reach, wherever the build tree is).
 */

#include <errno.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watchd-api.h"
#include "wt-fixture.h"


#define TIMEOUT_MS 5000

/* ---------------------------------------------------------------- helpers */

/* Whether a record for path with mask has come (for waits that accept another outcome too). */
typedef struct Want {
        WtCollector *c;
        const char *path;
        guint32 mask;
} Want;

static gboolean want_met(gpointer data) {
        Want *w = data;
        return wt_collector_find(w->c, w->path, w->mask) >= 0;
}

static char *path_in(WtFixture *f, const char *name) {
        return wt_fixture_path(f, name);
}

static void mkdir_p(WtFixture *f, const char *rel) {
        g_autofree char *p = path_in(f, rel);
        g_assert_cmpint(g_mkdir_with_parents(p, 0755), ==, 0);
}

/* Appends a line to path: IN_MODIFY. */
static void append(const char *path) {
        FILE *fp = fopen(path, "a");

        g_assert_nonnull(fp);
        fputs("x\n", fp);
        g_assert_cmpint(fclose(fp), ==, 0);
}

/* Another client is answered within a second: the daemon serves everyone. */
static void assert_responsive(WatchdInotify *other) {
        gint64 t0 = g_get_monotonic_time();

        (void) wt_stat(other, "clients");
        g_assert_cmpint(g_get_monotonic_time() - t0, <, G_USEC_PER_SEC);
}

/* ---------------------------------------------------------------- tests */

/* The live introspection of the object equals the API file, member by member. */
static void test_introspection(WtFixture *f, gconstpointer data) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) r = NULL;
        g_autofree char *file_xml = NULL;
        const char *live_xml;
        GDBusNodeInfo *live, *file;
        GDBusInterfaceInfo *li, *fi;

        r = g_dbus_connection_call_sync(f->conn, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH,
                                        "org.freedesktop.DBus.Introspectable", "Introspect", NULL,
                                        G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NONE, TIMEOUT_MS, NULL, &error);
        g_assert_no_error(error);
        g_variant_get(r, "(&s)", &live_xml);
        g_assert_true(g_file_get_contents(API_XML, &file_xml, NULL, &error));

        live = g_dbus_node_info_new_for_xml(live_xml, &error);
        g_assert_no_error(error);
        file = g_dbus_node_info_new_for_xml(file_xml, &error);
        g_assert_no_error(error);
        li = g_dbus_node_info_lookup_interface(live, WATCHD_INTERFACE);
        fi = g_dbus_node_info_lookup_interface(file, WATCHD_INTERFACE);
        g_assert_nonnull(li);
        g_assert_nonnull(fi);

        /* Methods: same names, in and out arguments with the same names and types. */
        for (guint i = 0; fi->methods && fi->methods[i]; i++) {
                GDBusMethodInfo *fm = fi->methods[i], *lm = g_dbus_interface_info_lookup_method(li, fm->name);
                g_assert_nonnull(lm);
                for (int dir = 0; dir < 2; dir++) {
                        GDBusArgInfo **fa = dir ? fm->out_args : fm->in_args, **la = dir ? lm->out_args : lm->in_args;
                        guint n = 0;
                        for (; fa && fa[n]; n++) {
                                g_assert_nonnull(la && la[n] ? la[n] : NULL);
                                g_assert_cmpstr(la[n]->name, ==, fa[n]->name);
                                g_assert_cmpstr(la[n]->signature, ==, fa[n]->signature);
                        }
                        g_assert_true(!la || !la[n]);
                }
        }
        for (guint i = 0; li->methods && li->methods[i]; i++)
                g_assert_nonnull(g_dbus_interface_info_lookup_method(fi, li->methods[i]->name));

        for (guint i = 0; fi->signals && fi->signals[i]; i++) {
                GDBusSignalInfo *fs = fi->signals[i], *ls = g_dbus_interface_info_lookup_signal(li, fs->name);
                guint n = 0;
                g_assert_nonnull(ls);
                for (; fs->args && fs->args[n]; n++) {
                        g_assert_nonnull(ls->args && ls->args[n] ? ls->args[n] : NULL);
                        g_assert_cmpstr(ls->args[n]->name, ==, fs->args[n]->name);
                        g_assert_cmpstr(ls->args[n]->signature, ==, fs->args[n]->signature);
                }
                g_assert_true(!ls->args || !ls->args[n]);
        }
        for (guint i = 0; li->signals && li->signals[i]; i++)
                g_assert_nonnull(g_dbus_interface_info_lookup_signal(fi, li->signals[i]->name));

        for (guint i = 0; fi->properties && fi->properties[i]; i++) {
                GDBusPropertyInfo *fp = fi->properties[i], *lp = g_dbus_interface_info_lookup_property(li, fp->name);
                g_assert_nonnull(lp);
                g_assert_cmpstr(lp->signature, ==, fp->signature);
                g_assert_cmpint(lp->flags, ==, fp->flags);
        }
        for (guint i = 0; li->properties && li->properties[i]; i++)
                g_assert_nonnull(g_dbus_interface_info_lookup_property(fi, li->properties[i]->name));

        g_dbus_node_info_unref(live);
        g_dbus_node_info_unref(file);
}

static void test_properties_and_stats(WtFixture *f, gconstpointer data) {
        static const char *const keys[] = { "clients",     "subscriptions",    "kernel_watches",
                                            "events_read", "events_delivered", "overflows",
                                            NULL };
        g_autoptr(GVariant) stats = NULL, backend = NULL;
        g_autoptr(GError) error = NULL;

        g_assert_cmpstr(watchd_inotify_get_version(f->proxy), ==, WATCHD_VERSION);
        g_assert_cmpstr(watchd_inotify_get_backend(f->proxy), ==, "syscall");

        watchd_inotify_call_get_stats_sync(f->proxy, &stats, NULL, &error);
        g_assert_no_error(error);
        for (size_t i = 0; keys[i]; i++)
                (void) wt_stat(f->proxy, keys[i]);
        backend = g_variant_lookup_value(stats, "backend", G_VARIANT_TYPE_STRING);
        g_assert_nonnull(backend);
        g_assert_cmpstr(g_variant_get_string(backend, NULL), ==, "syscall");
        g_assert_cmpuint(wt_stat(f->proxy, "clients"), ==, 0);
}

/* A subscription's records: path is the child's absolute path, in kernel order, batched. */
static void test_events(WtFixture *f, gconstpointer data) {
        g_autofree char *a = path_in(f, "a"), *sub = path_in(f, "sub");
        g_autofree char *sloppy = g_strdup_printf("/%s//", f->dir); /* "//dir//": records still say dir/a */
        guint32 id = wt_add_watch(f->proxy, f->dir, IN_CREATE | IN_DELETE | IN_CLOSE_WRITE, 0, NULL);
        guint32 id_b = wt_add_watch(f->proxy2, sloppy, IN_ATTRIB, 0, NULL);
        WtRecord *r;

        wt_touch(a);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        g_assert_cmpint(g_unlink(a), ==, 0);

        r = wt_await_record(&f->a, a, IN_DELETE, TIMEOUT_MS);
        g_assert_cmpuint(r->id, ==, id);
        g_assert_cmpstr(r->new_path, ==, "");
        r = wt_await_record(&f->a, sub, IN_CREATE | IN_ISDIR, TIMEOUT_MS);
        g_assert_cmpuint(r->id, ==, id);
        /* Kernel order: create, close-write, (mkdir), delete. */
        g_assert_cmpint(wt_collector_find(&f->a, a, IN_CREATE), <, wt_collector_find(&f->a, a, IN_CLOSE_WRITE));
        g_assert_cmpint(wt_collector_find(&f->a, a, IN_CLOSE_WRITE), <, wt_collector_find(&f->a, sub, IN_CREATE));
        g_assert_cmpint(wt_collector_find(&f->a, sub, IN_CREATE), <, wt_collector_find(&f->a, a, IN_DELETE));
        /* Only what was asked for: no IN_OPEN, no IN_ATTRIB. */
        for (guint i = 0; i < f->a.records->len; i++)
                g_assert_cmpuint(g_array_index(f->a.records, WtRecord, i).mask & (IN_OPEN | IN_ATTRIB), ==, 0);
        /* The other client asked for IN_ATTRIB only, and got it only. */
        g_assert_cmpint(chmod(sub, 0700), ==, 0);
        r = wt_await_record(&f->b, sub, IN_ATTRIB | IN_ISDIR, TIMEOUT_MS);
        g_assert_cmpuint(r->id, ==, id_b);
        g_assert_cmpuint(f->b.records->len, ==, 1);
        g_assert_cmpuint(wt_stat(f->proxy, "events_delivered"), >=, 4);
}

/* Many records in few signals, at most batch_max_events each, no fixed delay. */
static void test_batching(WtFixture *f, gconstpointer data) {
        g_autofree char *last = path_in(f, "f-49");
        pid_t pid = wt_process_pid(f->daemon->process);

        wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        /* Stop the daemon so that all 50 records wait in the kernel queue for one read. */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        for (int i = 0; i < 50; i++) {
                g_autofree char *n = g_strdup_printf("%s/f-%d", f->dir, i);
                wt_touch(n);
        }
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        wt_await_record(&f->a, last, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(f->a.records->len, ==, 50);
        g_assert_cmpuint(f->a.max_batch, <=, 8);
        g_assert_cmpuint(f->a.n_signals, >=, 7);
        g_assert_cmpuint(f->a.n_signals, <, 50);
}

/* Subscriptions on one inode share one kernel watch, whatever the path or client. */
static void test_coalescing(WtFixture *f, gconstpointer data) {
        g_autofree char *link = g_build_filename(f->bus->dir, "link-to-files", NULL);
        g_autofree char *a = path_in(f, "a");
        g_autoptr(GError) error = NULL;
        guint32 id1, id2, id3;

        g_assert_cmpint(symlink(f->dir, link), ==, 0);
        id1 = wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        id2 = wt_add_watch(f->proxy2, link, IN_DELETE, 0, NULL); /* same inode, other path, other client */
        id3 = wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 3);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 1);
        g_assert_cmpuint(wt_stat(f->proxy, "clients"), ==, 2);

        /* The union of the masks is watched; each gets only its own events. */
        wt_touch(a);
        g_assert_cmpint(g_unlink(a), ==, 0);
        wt_await_record(&f->a, a, IN_CREATE, TIMEOUT_MS);
        {
                g_autofree char *via_link = g_build_filename(link, "a", NULL);
                WtRecord *r = wt_await_record(&f->b, via_link, IN_DELETE, TIMEOUT_MS);
                g_assert_cmpuint(r->id, ==, id2);
        }
        g_assert_cmpint(wt_collector_find(&f->a, a, IN_DELETE), ==, -1);
        g_assert_cmpint(wt_collector_find(&f->b, a, IN_CREATE), ==, -1);

        /* Removing one keeps the kernel watch; removing the last releases it. */
        watchd_inotify_call_remove_watch_sync(f->proxy2, id2, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 1);
        watchd_inotify_call_remove_watch_sync(f->proxy, id1, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 1);
        watchd_inotify_call_remove_watch_sync(f->proxy, id3, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 0);
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 0);
}

/* A rename is one record; a half whose partner is outside the client's watches comes alone. */
static void test_rename(WtFixture *f, gconstpointer data) {
        g_autofree char *d1 = path_in(f, "d1"), *d2 = path_in(f, "d2"), *out = path_in(f, "out");
        g_autofree char *x = g_build_filename(d1, "x", NULL), *y = g_build_filename(d1, "y", NULL);
        g_autofree char *z = g_build_filename(d2, "z", NULL), *o = g_build_filename(out, "o", NULL);
        g_autofree char *in = g_build_filename(d1, "in", NULL), *sub = g_build_filename(d1, "sub", NULL);
        g_autofree char *sub2 = g_build_filename(d1, "sub2", NULL), *out_z = g_build_filename(out, "z", NULL);
        guint32 id1, id2;
        gint64 t0;
        WtRecord *r;

        g_assert_cmpint(g_mkdir(d1, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(d2, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(out, 0755), ==, 0);
        wt_touch(x);
        wt_touch(o);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        id1 = wt_add_watch(f->proxy, d1, IN_MOVE, 0, NULL);
        id2 = wt_add_watch(f->proxy, d2, IN_MOVE, 0, NULL);

        /* Within one directory. */
        g_assert_cmpint(rename(x, y), ==, 0);
        r = wt_await_record(&f->a, x, IN_MOVED_FROM | IN_MOVED_TO, TIMEOUT_MS);
        g_assert_cmpuint(r->id, ==, id1);
        g_assert_cmpstr(r->new_path, ==, y);
        g_assert_cmpuint(r->cookie, !=, 0);
        g_assert_cmpint(wt_collector_find(&f->a, y, IN_MOVED_TO), ==, -1); /* not also as a second record */

        /* Across two of the client's watches. */
        g_assert_cmpint(rename(y, z), ==, 0);
        r = wt_await_record(&f->a, y, IN_MOVED_FROM | IN_MOVED_TO, TIMEOUT_MS);
        g_assert_cmpstr(r->new_path, ==, z);

        /* A directory: ISDIR too. */
        g_assert_cmpint(rename(sub, sub2), ==, 0);
        r = wt_await_record(&f->a, sub, IN_MOVED_FROM | IN_MOVED_TO | IN_ISDIR, TIMEOUT_MS);
        g_assert_cmpstr(r->new_path, ==, sub2);

        /* Moved out: alone, within the pairing timeout (10 ms) and scheduling slack. */
        t0 = g_get_monotonic_time();
        g_assert_cmpint(rename(z, out_z), ==, 0);
        r = wt_await_record(&f->a, z, IN_MOVED_FROM, TIMEOUT_MS);
        g_assert_cmpuint(r->mask & IN_MOVED_TO, ==, 0);
        g_assert_cmpuint(r->id, ==, id2);
        g_assert_cmpstr(r->new_path, ==, "");
        g_assert_cmpint(g_get_monotonic_time() - t0, <, G_USEC_PER_SEC);

        /* Moved in: alone. */
        g_assert_cmpint(rename(o, in), ==, 0);
        r = wt_await_record(&f->a, in, IN_MOVED_TO, TIMEOUT_MS);
        g_assert_cmpuint(r->mask & IN_MOVED_FROM, ==, 0);
}

/* A watched directory renamed where its parent is watched too: its records
 * (and ListWatches) follow it, within one directory and across two. */
static void test_rename_followed(WtFixture *f, gconstpointer data) {
        g_autofree char *p = path_in(f, "p"), *q = path_in(f, "q"), *d = path_in(f, "p/d"), *e = path_in(f, "p/e");
        g_autofree char *g = path_in(f, "q/g"), *ef = path_in(f, "p/e/f"), *gh = path_in(f, "q/g/h");
        g_autoptr(GVariant) list = NULL;
        const char *listed = NULL;
        guint32 id, mask, flags;

        mkdir_p(f, "p/d");
        g_assert_cmpint(g_mkdir(q, 0755), ==, 0);
        wt_add_watch(f->proxy, p, IN_MOVE, 0, NULL);
        wt_add_watch(f->proxy, q, IN_MOVE, 0, NULL);
        wt_add_watch(f->proxy2, d, IN_CREATE, 0, NULL);

        g_assert_cmpint(rename(d, e), ==, 0);
        wt_await_record(&f->a, d, IN_MOVED_FROM | IN_MOVED_TO | IN_ISDIR, TIMEOUT_MS);
        wt_touch(ef);
        wt_await_record(&f->b, ef, IN_CREATE, TIMEOUT_MS);
        watchd_inotify_call_list_watches_sync(f->proxy2, &list, NULL, NULL);
        g_assert_true(g_variant_n_children(list) == 1);
        g_variant_get_child(list, 0, "(u&suu)", &id, &listed, &mask, &flags);
        g_assert_cmpstr(listed, ==, e);

        g_assert_cmpint(rename(e, g), ==, 0);
        wt_await_record(&f->a, e, IN_MOVED_FROM | IN_MOVED_TO | IN_ISDIR, TIMEOUT_MS);
        wt_touch(gh);
        wt_await_record(&f->b, gh, IN_CREATE, TIMEOUT_MS);
}

/* Under a wrapper (valgrind) watchd runs tens of times slower: bounds on time say nothing then. */
static int cmp_int64(gconstpointer a, gconstpointer b) {
        gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
        return x < y ? -1 : x > y;
}

/* A lone MOVED_FROM waits move_pair_timeout_ms (10), not more: the median
 * from rename to record over 20 renames stays far below the 250 ms a
 * coarse timer would add. */
static void test_rename_timeout(WtFixture *f, gconstpointer data) {
        g_autofree char *in = path_in(f, "in"), *out = path_in(f, "out");
        gint64 dt[20];

        g_assert_cmpint(g_mkdir(in, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(out, 0755), ==, 0);
        wt_add_watch(f->proxy, in, IN_MOVED_FROM, 0, NULL);
        for (int i = 0; i < 20; i++) {
                g_autofree char *a = g_strdup_printf("%s/f%d", in, i), *b = g_strdup_printf("%s/f%d", out, i);
                gint64 t0;

                wt_touch(a);
                t0 = g_get_monotonic_time();
                g_assert_cmpint(rename(a, b), ==, 0);
                wt_await_record(&f->a, a, IN_MOVED_FROM, TIMEOUT_MS);
                dt[i] = g_get_monotonic_time() - t0;
        }
        qsort(dt, G_N_ELEMENTS(dt), sizeof(dt[0]), cmp_int64);
        g_test_message("moved out: median %" G_GINT64_FORMAT " us, max %" G_GINT64_FORMAT " us", dt[10], dt[19]);
        g_assert_cmpint(dt[10], >=, 10000); /* it did wait for a partner */
        if (wt_timing_checked())
                g_assert_cmpint(dt[10], <, 100000);
}

static void test_remove_and_list(WtFixture *f, gconstpointer data) {
        g_autoptr(GVariant) list = NULL, list2 = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree char *name = NULL;
        guint32 id1, id2, other;
        GVariantIter it;
        guint32 id, mask, flags;
        const char *path;

        id1 = wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        id2 = wt_add_watch(f->proxy, f->dir, IN_DELETE, 2 /* ONLYDIR */, NULL);
        other = wt_add_watch(f->proxy2, f->dir, IN_CREATE, 0, NULL);
        g_assert_cmpuint(id1, !=, id2);

        watchd_inotify_call_list_watches_sync(f->proxy, &list, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(g_variant_n_children(list), ==, 2);
        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(u&suu)", &id, &path, &mask, &flags)) {
                g_assert_true(id == id1 || id == id2);
                g_assert_cmpstr(path, ==, f->dir);
                g_assert_cmpuint(mask, ==, id == id1 ? IN_CREATE : IN_DELETE);
                g_assert_cmpuint(flags, ==, id == id1 ? 0 : 2);
        }

        /* Another client's id is not yours to remove. */
        g_assert_false(watchd_inotify_call_remove_watch_sync(f->proxy, other, NULL, &error));
        name = g_dbus_error_get_remote_error(error);
        g_assert_cmpstr(name, ==, WATCHD_ERROR_NO_SUCH_WATCH);
        g_clear_error(&error);
        g_clear_pointer(&name, g_free);
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 3);

        watchd_inotify_call_remove_watch_sync(f->proxy, id1, NULL, &error);
        g_assert_no_error(error);
        /* Twice, and an id never given out. */
        for (int i = 0; i < 2; i++) {
                g_assert_false(watchd_inotify_call_remove_watch_sync(f->proxy, i ? 999999 : id1, NULL, &error));
                name = g_dbus_error_get_remote_error(error);
                g_assert_cmpstr(name, ==, WATCHD_ERROR_NO_SUCH_WATCH);
                g_clear_error(&error);
                g_clear_pointer(&name, g_free);
        }
        /* A connection that never subscribed. */
        g_assert_false(watchd_inotify_call_remove_watch_sync(f->proxy2, id2, NULL, &error));
        name = g_dbus_error_get_remote_error(error);
        g_assert_cmpstr(name, ==, WATCHD_ERROR_NO_SUCH_WATCH);

        watchd_inotify_call_list_watches_sync(f->proxy2, &list2, NULL, NULL);
        g_assert_cmpuint(g_variant_n_children(list2), ==, 1);
}

/* A path that does not exist yet: pending on its deepest existing directory
 * (a kernel watch shared like any other), delivering once it is there. */
/* How many directories a pending path's existing part has: "/", then one a component (dir: f->dir or below). */
static guint64 chain_len(const char *dir) {
        guint64 n = 1;

        for (const char *p = dir; *p; p++)
                n += *p == '/';
        return n;
}

static void test_missing_path(WtFixture *f, gconstpointer data) {
        g_autofree char *file = path_in(f, "a/b/c/file"), *c = path_in(f, "a/b/c"), *other = path_in(f, "x/y");
        g_autoptr(GVariant) list = NULL;
        g_autoptr(GError) error = NULL;
        guint64 before = wt_stat(f->proxy, "kernel_watches");
        guint32 id, id2, id3, lid, lmask, lflags;
        const char *lpath;
        FILE *fp;
        WtRecord *r;

        guint64 chain = chain_len(f->dir); /* "/" down to f->dir, the existing part of both */

        /* Pending, then removed: the ancestors' watches go with it. */
        id2 = wt_add_watch(f->proxy, other, IN_MODIFY, 0, NULL);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, before + chain);
        watchd_inotify_call_remove_watch_sync(f->proxy, id2, NULL, &error);
        g_assert_no_error(error);
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", before, TIMEOUT_MS));

        id = wt_add_watch(f->proxy, file, IN_MODIFY, 0, NULL);
        id2 = wt_add_watch(f->proxy, other, IN_MODIFY, 0, NULL);
        /* Both pending on the directories from "/" to f->dir: shared kernel watches. */
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, before + chain);
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 2);
        watchd_inotify_call_list_watches_sync(f->proxy, &list, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(g_variant_n_children(list), ==, 2);
        g_variant_get_child(list, 0, "(u&suu)", &lid, &lpath, &lmask, &lflags);
        g_assert_cmpstr(lpath, ==, lid == id ? file : other);
        g_variant_get_child(list, 1, "(u&suu)", &lid, &lpath, &lmask, &lflags);
        g_assert_cmpstr(lpath, ==, lid == id ? file : other);

        mkdir_p(f, "a/b/c");
        /* Another client on a/b/c: once it hears of the file's creation, the
         * daemon has handled that event, and the pending subscription (on the
         * same kernel watch by then: the kernel queue is in order) went down to the file. */
        id3 = wt_add_watch(f->proxy2, c, IN_CREATE, 0, NULL);
        wt_touch(file);
        wt_await_record(&f->b, file, IN_CREATE, TIMEOUT_MS);
        fp = fopen(file, "a");
        g_assert_nonnull(fp);
        fputs("x\n", fp);
        g_assert_cmpint(fclose(fp), ==, 0);
        r = wt_await_record(&f->a, file, IN_MODIFY, TIMEOUT_MS);
        g_assert_cmpuint(r->id, ==, id);
        g_assert_cmpuint(f->a.removed->len, ==, 0);

        /* id's chain is released: left are "/" to f->dir (id2), a/b/c (id3), the file (id). */
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", before + chain + 2, TIMEOUT_MS));
        watchd_inotify_call_remove_watch_sync(f->proxy, id, NULL, &error);
        g_assert_no_error(error);
        watchd_inotify_call_remove_watch_sync(f->proxy, id2, NULL, &error);
        g_assert_no_error(error);
        watchd_inotify_call_remove_watch_sync(f->proxy2, id3, NULL, &error);
        g_assert_no_error(error);
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", before, TIMEOUT_MS));
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 0);
}

/* A pending path that appears by a rename of a directory holding it, and one
 * whose watched ancestor is deleted. */
static void test_missing_path_moved(WtFixture *f, gconstpointer data) {
        g_autofree char *staging = path_in(f, "staging"), *m = path_in(f, "m"), *file = path_in(f, "m/n/f");
        g_autofree char *staged = path_in(f, "staging/n/f");
        g_autofree char *gone = path_in(f, "gone"), *under = path_in(f, "gone/x/y"), *want = NULL;
        g_autoptr(GError) error = NULL;
        guint64 before = wt_stat(f->proxy, "kernel_watches");
        guint32 id, id2;
        FILE *fp;

        id = wt_add_watch(f->proxy, file, IN_MODIFY, 0, NULL);
        wt_add_watch(f->proxy2, f->dir, IN_MOVED_TO, 0, NULL);
        mkdir_p(f, "staging/n");
        wt_touch(staged);
        g_assert_cmpint(rename(staging, m), ==, 0);
        /* The same kernel watch (f->dir) carries the MOVED_TO: once proxy2 has it, id is placed. */
        wt_await_record(&f->b, m, IN_MOVED_TO, TIMEOUT_MS);
        fp = fopen(file, "a");
        g_assert_nonnull(fp);
        fputs("x\n", fp);
        g_assert_cmpint(fclose(fp), ==, 0);
        g_assert_cmpuint(wt_await_record(&f->a, file, IN_MODIFY, TIMEOUT_MS)->id, ==, id);

        /* Its deepest existing directory deleted: it climbs back, and follows the path when it comes again. */
        g_assert_cmpint(g_mkdir(gone, 0755), ==, 0);
        id2 = wt_add_watch(f->proxy, under, IN_MODIFY, 0, NULL);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, before + 1 + chain_len(gone));
        g_assert_cmpint(g_rmdir(gone), ==, 0);
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", before + 1 + chain_len(f->dir), TIMEOUT_MS));
        mkdir_p(f, "gone/x");
        {
                /* Another client on gone/x: once it hears of the creation, the
                 * daemon has placed id2 (the kernel queue is in order). */
                g_autofree char *x = path_in(f, "gone/x");

                wt_add_watch(f->proxy2, x, IN_CREATE, 0, NULL);
        }
        wt_touch(under);
        wt_await_record(&f->b, under, IN_CREATE, TIMEOUT_MS);
        append(under);
        g_assert_cmpuint(wt_await_record(&f->a, under, IN_MODIFY, TIMEOUT_MS)->id, ==, id2);
        g_assert_cmpuint(f->a.removed->len, ==, 0);
        (void) want;

        watchd_inotify_call_remove_watch_sync(f->proxy, id, NULL, &error);
        g_assert_no_error(error);
        watchd_inotify_call_remove_watch_sync(f->proxy, id2, NULL, &error);
        g_assert_no_error(error);
        /* proxy2's f->dir and gone/x are all that is left. */
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", before + 2, TIMEOUT_MS));
}

/* A directory above the deepest existing one is renamed away: the pending
 * subscription climbs back to what is left of its path (it watches every
 * existing directory of it) and follows the path when it is made again. */
static void test_missing_path_ancestor_renamed(WtFixture *f, gconstpointer data) {
        g_autofree char *p = path_in(f, "p"), *old = path_in(f, "p-old"), *file = path_in(f, "p/q/r/file");
        g_autofree char *r = path_in(f, "p/q/r");
        guint32 id;

        mkdir_p(f, "p/q");
        id = wt_add_watch(f->proxy, file, IN_MODIFY, 0, NULL); /* deepest existing: p/q */
        g_assert_cmpint(rename(p, old), ==, 0);
        mkdir_p(f, "p/q/r");
        wt_add_watch(f->proxy2, r, IN_CREATE, 0, NULL); /* a sync point, as in test_missing_path_moved */
        wt_touch(file);
        wt_await_record(&f->b, file, IN_CREATE, TIMEOUT_MS);
        append(file);
        g_assert_cmpuint(wt_await_record(&f->a, file, IN_MODIFY, TIMEOUT_MS)->id, ==, id);
        g_assert_cmpuint(f->a.removed->len, ==, 0);
}

static void test_bad_input(WtFixture *f, gconstpointer data) {
        g_autofree char *file = path_in(f, "file"), *fifo = path_in(f, "fifo"), *link = path_in(f, "link");
        g_autofree char *loop1 = path_in(f, "loop1"), *loop2 = path_in(f, "loop2");
        g_autofree char *missing = path_in(f, "file/missing");
        g_autofree char *dotdot = g_strdup_printf("%s/../files/../files/./missing/..", f->dir);
        GString *huge = g_string_new("");

        wt_touch(file);
        g_assert_cmpint(mkfifo(fifo, 0644), ==, 0);
        g_assert_cmpint(symlink(file, link), ==, 0);
        g_assert_cmpint(symlink(loop2, loop1), ==, 0);
        g_assert_cmpint(symlink(loop1, loop2), ==, 0);
        while (huge->len < 5000)
                g_string_append(huge, "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");

        wt_add_watch_fails(f->proxy, f->dir, 0, 0, WATCHD_ERROR_INVALID_ARGS);     /* mask 0 */
        wt_add_watch_fails(f->proxy, f->dir, 0x800, 0, WATCHD_ERROR_INVALID_ARGS); /* IN_MOVE_SELF: not in the API */
        wt_add_watch_fails(f->proxy, f->dir, IN_CREATE | IN_ONESHOT, 0,
                           WATCHD_ERROR_INVALID_ARGS);                                     /* a kernel flag as mask */
        wt_add_watch_fails(f->proxy, f->dir, IN_CREATE, 0x200, WATCHD_ERROR_INVALID_ARGS); /* unknown flag */
        wt_add_watch_fails(f->proxy, "relative/path", IN_CREATE, 0, WATCHD_ERROR_INVALID_ARGS);
        wt_add_watch_fails(f->proxy, "", IN_CREATE, 0, WATCHD_ERROR_INVALID_ARGS);
        wt_add_watch_fails(f->proxy, huge->str, IN_CREATE, 0, WATCHD_ERROR_INVALID_ARGS); /* 5,000 bytes */
        wt_add_watch_fails(f->proxy, missing, IN_CREATE, 0, WATCHD_ERROR_INVALID_ARGS); /* below a file: never pending */
        wt_add_watch_fails(f->proxy, dotdot, IN_CREATE, 0, WATCHD_ERROR_FILE_NOT_FOUND); /* .. through a missing dir */
        wt_add_watch_fails(f->proxy, fifo, IN_CREATE, 0, WATCHD_ERROR_INVALID_ARGS);     /* never blocks on a FIFO */
        wt_add_watch_fails(f->proxy, "/dev/null", IN_CREATE, 0, WATCHD_ERROR_INVALID_ARGS); /* device node */
        wt_add_watch_fails(f->proxy, file, IN_CREATE, 2, WATCHD_ERROR_INVALID_ARGS);        /* ONLYDIR on a file */
        wt_add_watch_fails(f->proxy, link, IN_CREATE, 4, WATCHD_ERROR_INVALID_ARGS);  /* DONT_FOLLOW on a symlink */
        wt_add_watch_fails(f->proxy, loop1, IN_CREATE, 0, WATCHD_ERROR_INVALID_ARGS); /* symlink loop */
        g_string_free(huge, TRUE);

        /* None of it left anything behind, and everyone is still served. */
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 0);
        assert_responsive(f->proxy2);

        /* What does work: a symlink followed, .. resolved. */
        wt_add_watch(f->proxy, link, IN_MODIFY, 0, NULL);
        {
                g_autofree char *up = g_strdup_printf("%s/../files", f->dir);
                wt_add_watch(f->proxy, up, IN_CREATE, 0, NULL);
        }
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 2);
}

/* The daemon does not report itself: placing a watch (the first on an inode,
 * or one more that widens the kernel mask) opens nothing, so neither the new
 * subscriber nor the inode's existing ones get IN_OPEN/IN_ACCESS/
 * IN_CLOSE_NOWRITE for it (it used to open the path for reading and close it). */
static void test_no_self_events(WtFixture *f, gconstpointer data) {
        g_autofree char *file = path_in(f, "file"), *marker = path_in(f, "marker");
        const guint32 noise = IN_OPEN | IN_ACCESS | IN_CLOSE_NOWRITE, all = 0x7ff; /* the 0.23 events */

        wt_touch(file);
        wt_add_watch(f->proxy, f->dir, all, 0, NULL);
        wt_add_watch(f->proxy2, f->dir, all, 0, NULL);
        wt_add_watch(f->proxy2, f->dir, IN_ATTRIB, 0, NULL); /* the same inode again */
        wt_add_watch(f->proxy2, file, IN_ATTRIB, 0, NULL);   /* a file in a watched directory */
        /* Widening the file's kernel mask, then narrowing it again (the daemon re-adds the watch by path). */
        {
                g_autoptr(GError) error = NULL;
                guint32 id = wt_add_watch(f->proxy2, file, IN_ATTRIB | IN_MODIFY, 0, NULL);

                watchd_inotify_call_remove_watch_sync(f->proxy2, id, NULL, &error);
                g_assert_no_error(error);
        }
        g_assert_cmpint(g_mkdir(marker, 0755), ==, 0); /* a marker after all that */
        wt_await_record(&f->a, marker, IN_CREATE | IN_ISDIR, TIMEOUT_MS);
        wt_await_record(&f->b, marker, IN_CREATE | IN_ISDIR, TIMEOUT_MS);
        for (guint i = 0; i < f->a.records->len; i++) {
                WtRecord *r = &g_array_index(f->a.records, WtRecord, i);
                if (r->mask & noise)
                        g_error("client a got 0x%x for '%s': the daemon's own open", r->mask, r->path);
        }
        for (guint i = 0; i < f->b.records->len; i++) {
                WtRecord *r = &g_array_index(f->b.records, WtRecord, i);
                if (r->mask & noise)
                        g_error("client b got 0x%x for '%s': the daemon's own open", r->mask, r->path);
        }
}

/* A user's ls: open, list, close, as ls(1) does. */
static void user_ls(const char *path) {
        GDir *d = g_dir_open(path, 0, NULL);

        g_assert_nonnull(d);
        while (g_dir_read_name(d))
                ;
        g_dir_close(d);
}

/* How many records c holds for path with exactly mask. */
static guint n_exact(WtCollector *c, const char *path, guint32 mask) {
        guint n = 0;

        for (guint i = 0; i < c->records->len; i++) {
                WtRecord *r = &g_array_index(c->records, WtRecord, i);

                n += r->mask == mask && strcmp(r->path, path) == 0;
        }
        return n;
}

/*
 * The daemon's own scans are no one's events (issue 28): a RECURSIVE watch
 * for open, access and close_nowrite, then mkdir a; mkdir a/b; mkdir a/b/c;
 * touch a/b/c/f. The root's scan at AddWatch and each new directory's scan
 * read directories that are watched for exactly those (by the tree itself,
 * and the root's parent by another client): nothing of it reaches anyone.
 * A user's ls of a, and of the root, is reported, once each.
 */
static void test_no_self_scan_events(WtFixture *f, gconstpointer data) {
        g_autofree char *t = path_in(f, "t"), *a = path_in(f, "t/a"), *ab = path_in(f, "t/a/b");
        g_autofree char *abc = path_in(f, "t/a/b/c"), *abcf = path_in(f, "t/a/b/c/f");
        const guint32 reads = IN_OPEN | IN_ACCESS | IN_CLOSE_NOWRITE;

        g_assert_cmpint(g_mkdir(t, 0755), ==, 0);
        wt_add_watch(f->proxy2, f->dir, reads, 0, NULL);
        wt_add_watch(f->proxy, t, reads | IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(ab, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(abc, 0755), ==, 0);
        wt_touch(abcf);
        wt_await_record(&f->a, abcf, IN_CREATE, TIMEOUT_MS);
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 5, TIMEOUT_MS)); /* dir, t, a, b, c */

        /* The user's: the first records of their kind, each once. */
        user_ls(a);
        wt_await_record(&f->a, a, IN_CLOSE_NOWRITE | IN_ISDIR, TIMEOUT_MS);
        user_ls(t);
        wt_await_record(&f->b, t, IN_CLOSE_NOWRITE | IN_ISDIR, TIMEOUT_MS);
        wt_await_record(&f->a, t, IN_CLOSE_NOWRITE | IN_ISDIR, TIMEOUT_MS);
        for (guint i = 0; i < f->a.records->len; i++) {
                WtRecord *r = &g_array_index(f->a.records, WtRecord, i);

                if ((r->mask & IN_ISDIR) && (r->mask & reads) && strcmp(r->path, a) != 0 && strcmp(r->path, t) != 0)
                        g_error("the tree's client got 0x%x for '%s': the daemon's own scan", r->mask, r->path);
        }
        g_assert_cmpuint(n_exact(&f->a, a, IN_OPEN | IN_ISDIR), ==, 1);
        g_assert_cmpuint(n_exact(&f->a, a, IN_CLOSE_NOWRITE | IN_ISDIR), ==, 1);
        g_assert_cmpuint(n_exact(&f->a, t, IN_OPEN | IN_ISDIR), ==, 1);
        g_assert_cmpuint(n_exact(&f->a, t, IN_CLOSE_NOWRITE | IN_ISDIR), ==, 1);
        g_assert_cmpuint(n_exact(&f->b, t, IN_OPEN | IN_ISDIR), ==, 1);
        g_assert_cmpuint(n_exact(&f->b, t, IN_CLOSE_NOWRITE | IN_ISDIR), ==, 1);
        /* Dropped, not never made: the kernel did report the scans. */
        g_assert_cmpuint(wt_stat(f->proxy, "self_events_dropped"), >=, 12);
}

/*
 * A user's ls of a new directory, made while the daemon has not read the
 * kernel yet (it is stopped): the daemon reads the directory's creation,
 * scans it, and tells its own scan from the user's ls, which came first and
 * looks the same. The user's is reported, once; the daemon's not.
 */
static void test_self_scan_user_read(WtFixture *f, gconstpointer data) {
        g_autofree char *t = path_in(f, "t"), *d = path_in(f, "t/d"), *x = path_in(f, "t/x");
        const guint32 reads = IN_OPEN | IN_ACCESS | IN_CLOSE_NOWRITE;
        pid_t pid = wt_process_pid(f->daemon->process);

        g_assert_cmpint(g_mkdir(t, 0755), ==, 0);
        wt_add_watch(f->proxy, t, reads | IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        user_ls(d);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        wt_await_record(&f->a, d, IN_CLOSE_NOWRITE | IN_ISDIR, TIMEOUT_MS);
        wt_touch(x);
        wt_await_record(&f->a, x, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(n_exact(&f->a, d, IN_OPEN | IN_ISDIR), ==, 1);
        g_assert_cmpuint(n_exact(&f->a, d, IN_CLOSE_NOWRITE | IN_ISDIR), ==, 1);
}

/* AddWatch's walk of a tree that exists reads its directories in workers
 * (tree.c, "Walks in workers"): the records of those reads reach no one, the
 * tree's client nor a watcher of the tree's parent; a user's ls afterwards is
 * reported, once. */
static void test_no_self_walk_events(WtFixture *f, gconstpointer data) {
        g_autofree char *t = path_in(f, "t"), *a = path_in(f, "t/a"), *m = path_in(f, "t/m");
        const guint32 reads = IN_OPEN | IN_ACCESS | IN_CLOSE_NOWRITE;

        for (int i = 0; i < 5; i++)
                for (int k = 0; k < 5; k++) {
                        g_autofree char *d = g_strdup_printf("t/%c/%d", 'a' + i, k);

                        mkdir_p(f, d);
                }
        wt_add_watch(f->proxy2, f->dir, reads, 0, NULL);
        wt_add_watch(f->proxy, t, reads | IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 1 + 1 + 5 + 25); /* dir, t, a-e, their 25 */
        g_assert_cmpint(g_mkdir(m, 0755), ==, 0);                                  /* a marker after the walk */
        wt_await_record(&f->a, m, IN_CREATE | IN_ISDIR, TIMEOUT_MS);
        for (guint i = 0; i < f->a.records->len; i++) {
                WtRecord *r = &g_array_index(f->a.records, WtRecord, i);

                if ((r->mask & IN_ISDIR) && (r->mask & reads) && !g_str_equal(r->path, m))
                        g_error("the tree's client got 0x%x for '%s': the walk's own read", r->mask, r->path);
        }
        for (guint i = 0; i < f->b.records->len; i++) {
                WtRecord *r = &g_array_index(f->b.records, WtRecord, i);

                if (r->mask & reads)
                        g_error("the parent's client got 0x%x for '%s': the walk's own read", r->mask, r->path);
        }
        /* The user's: reported, each once. */
        user_ls(a);
        wt_await_record(&f->a, a, IN_CLOSE_NOWRITE | IN_ISDIR, TIMEOUT_MS);
        g_assert_cmpuint(n_exact(&f->a, a, IN_OPEN | IN_ISDIR), ==, 1);
        g_assert_cmpuint(n_exact(&f->a, a, IN_CLOSE_NOWRITE | IN_ISDIR), ==, 1);
}

/* RECURSIVE: a kernel watch per directory, new directories followed and
 * scanned (mkdir -p then touch is seen whole), renames followed into the
 * paths, a directory moved out dropped. */
static void test_recursive(WtFixture *f, gconstpointer data) {
        g_autofree char *t = path_in(f, "t"), *outside = path_in(f, "outside");
        g_autofree char *abf = path_in(f, "t/a/b/f"), *x = path_in(f, "t/x"), *xyzf = path_in(f, "t/x/y/z/f");
        g_autofree char *x2 = path_in(f, "t/x2"), *x2yg = path_in(f, "t/x2/y/g"), *oyh = path_in(f, "outside/x2/y/h");
        g_autofree char *ab = path_in(f, "t/a/b"), *ox2 = path_in(f, "outside/x2"), *tz = path_in(f, "t/zz");
        g_autoptr(GError) error = NULL;
        const guint32 mask = IN_CREATE | IN_DELETE | IN_MOVE;
        guint32 id, plain;
        WtRecord *r;

        mkdir_p(f, "t/a/b");
        g_assert_cmpint(g_mkdir(outside, 0755), ==, 0);
        id = wt_add_watch(f->proxy, t, mask, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 3); /* t, t/a, t/a/b */
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 1);
        /* Another client's plain subscription on t/a shares the watch. */
        {
                g_autofree char *a = path_in(f, "t/a");
                plain = wt_add_watch(f->proxy2, a, IN_CREATE, 0, NULL);
        }
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 3);

        wt_touch(abf);
        r = wt_await_record(&f->a, abf, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(r->id, ==, id);

        /* mkdir -p x/y/z && touch x/y/z/f: all of it, whatever was made before its watch was placed. */
        mkdir_p(f, "t/x/y/z");
        wt_touch(xyzf);
        wt_await_record(&f->a, x, IN_CREATE | IN_ISDIR, TIMEOUT_MS);
        {
                g_autofree char *y = path_in(f, "t/x/y"), *z = path_in(f, "t/x/y/z");
                wt_await_record(&f->a, y, IN_CREATE | IN_ISDIR, TIMEOUT_MS);
                wt_await_record(&f->a, z, IN_CREATE | IN_ISDIR, TIMEOUT_MS);
        }
        wt_await_record(&f->a, xyzf, IN_CREATE, TIMEOUT_MS);
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 6, TIMEOUT_MS));

        /* A rename inside the tree: one record, and later paths follow it. */
        g_assert_cmpint(rename(x, x2), ==, 0);
        r = wt_await_record(&f->a, x, IN_MOVED_FROM | IN_MOVED_TO | IN_ISDIR, TIMEOUT_MS);
        g_assert_cmpstr(r->new_path, ==, x2);
        wt_touch(x2yg);
        wt_await_record(&f->a, x2yg, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 6);

        /* Moved out: its watches go, and what happens there is not reported. */
        g_assert_cmpint(rename(x2, ox2), ==, 0);
        wt_await_record(&f->a, x2, IN_MOVED_FROM | IN_ISDIR, TIMEOUT_MS);
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 3, TIMEOUT_MS));
        wt_touch(oyh);
        g_assert_cmpint(g_mkdir(tz, 0755), ==, 0); /* a marker after it */
        wt_await_record(&f->a, tz, IN_CREATE | IN_ISDIR, TIMEOUT_MS);
        g_assert_cmpint(wt_collector_find(&f->a, oyh, IN_CREATE), ==, -1);

        /* A directory deleted: reported by its parent; its watch goes, the subscription stays. */
        g_assert_cmpint(g_unlink(abf), ==, 0);
        g_assert_cmpint(g_rmdir(ab), ==, 0);
        wt_await_record(&f->a, ab, IN_DELETE | IN_ISDIR, TIMEOUT_MS);
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 3, TIMEOUT_MS)); /* t, t/a, t/zz */
        g_assert_cmpuint(f->a.removed->len, ==, 0);

        watchd_inotify_call_remove_watch_sync(f->proxy, id, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 1); /* the other client's t/a */
        watchd_inotify_call_remove_watch_sync(f->proxy2, plain, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 0);
}

/* How many IN_CREATE records each path got (path -> count), over all of c's records. */
static GHashTable *create_counts(WtCollector *c) {
        GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

        for (guint i = 0; i < c->records->len; i++) {
                WtRecord *r = &g_array_index(c->records, WtRecord, i);
                if (r->mask & IN_CREATE)
                        g_hash_table_insert(h, g_strdup(r->path),
                                            GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(h, r->path)) + 1));
        }
        return h;
}

/* Every path in want was reported created exactly once. */
static void assert_created_once(WtCollector *c, GPtrArray *want) {
        g_autoptr(GHashTable) h = create_counts(c);

        for (guint i = 0; i < want->len; i++) {
                const char *p = g_ptr_array_index(want, i);
                guint n = GPOINTER_TO_UINT(g_hash_table_lookup(h, p));

                if (n != 1)
                        g_error("'%s' reported created %u times (want 1)", p, n);
        }
        g_assert_cmpuint(g_hash_table_size(h), ==, want->len);
}

/* mkdir -p a/b/c/d && touch a/b/c/d/f: each of the five reported created exactly once. */
static void test_recursive_mkdir_p(WtFixture *f, gconstpointer data) {
        g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *t = path_in(f, "t"), *marker = path_in(f, "t/marker");

        mkdir_p(f, "t");
        wt_add_watch(f->proxy, t, IN_CREATE | IN_DELETE | IN_MOVE, WATCHD_FLAG_RECURSIVE, NULL);
        for (int round = 0; round < 20; round++) {
                g_autofree char *top = g_strdup_printf("t/r%d", round);
                g_autofree char *d = g_strdup_printf("t/r%d/b/c/d", round);
                g_autofree char *dp = path_in(f, d), *file = g_build_filename(dp, "f", NULL);

                mkdir_p(f, d);
                wt_touch(file);
                g_ptr_array_add(want, path_in(f, top));
                g_ptr_array_add(want, g_strdup_printf("%s/r%d/b", t, round));
                g_ptr_array_add(want, g_strdup_printf("%s/r%d/b/c", t, round));
                g_ptr_array_add(want, g_strdup(dp));
                g_ptr_array_add(want, g_steal_pointer(&file));
        }
        /* Records come in kernel order: once the marker is in, so is everything before it. */
        wt_touch(marker);
        g_ptr_array_add(want, g_strdup(marker));
        wt_await_record(&f->a, marker, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);
        assert_created_once(&f->a, want);
}

/* A checkout-like burst: 1,000 directories (100 x 10) and 10,000 files, made
 * as fast as this process can. Each is reported created exactly once, or the
 * client got Overflow. */
static void test_recursive_burst(WtFixture *f, gconstpointer data) {
        g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *t = path_in(f, "t"), *marker = path_in(f, "t/marker");
        gint64 t0;

        mkdir_p(f, "t");
        wt_add_watch(f->proxy, t, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        t0 = g_get_monotonic_time();
        /* 100 top directories of 9 subdirectories each: 1,000 directories, 10 files in each. */
        for (int i = 0; i < 100; i++) {
                for (int j = -1; j < 9; j++) {
                        char *dir = j < 0 ? g_strdup_printf("%s/d%03d", t, i) : g_strdup_printf("%s/d%03d/s%d", t, i, j);

                        g_assert_cmpint(mkdir(dir, 0755), ==, 0);
                        g_ptr_array_add(want, dir);
                        for (int k = 0; k < 10; k++) {
                                char *file = g_strdup_printf("%s/f%d", dir, k);

                                wt_touch(file);
                                g_ptr_array_add(want, file);
                        }
                }
        }
        g_test_message("burst: %u paths made in %.2f s", want->len, (g_get_monotonic_time() - t0) / 1e6);
        g_assert_cmpuint(want->len, ==, 11000);
        wt_touch(marker);
        g_ptr_array_add(want, g_strdup(marker));
        {
                Want w = { &f->a, marker, IN_CREATE };
                if (!wt_await(want_met, &w, 60000) && f->a.n_overflows == 0)
                        g_error("No marker and no Overflow within 60 s (%u records)", f->a.records->len);
        }
        if (f->a.n_overflows > 0) {
                g_test_message("burst: Overflow received (%u records before it)", f->a.records->len);
                return;
        }
        g_test_message("burst: %u records, no Overflow", f->a.records->len);
        assert_created_once(&f->a, want);
}

/* A tree of n_top x n_sub directories below t; returns how many directories it has, t included. */
static guint make_tree(const char *t, guint n_top, guint n_sub) {
        g_assert_cmpint(g_mkdir_with_parents(t, 0755), ==, 0);
        for (guint i = 0; i < n_top; i++) {
                g_autofree char *d = g_strdup_printf("%s/d%03u", t, i);

                g_assert_cmpint(mkdir(d, 0755), ==, 0);
                for (guint j = 0; j < n_sub; j++) {
                        g_autofree char *s = g_strdup_printf("%s/s%03u", d, j);

                        g_assert_cmpint(mkdir(s, 0755), ==, 0);
                }
        }
        return 1 + n_top * (1 + n_sub);
}

/* A large tree made in a RECURSIVE tree while watchd is stopped: the scan of
 * its top directory runs past its first slice, the rest in walk jobs, whose
 * reads the kernel's records of files made meanwhile race. Every directory
 * and file is reported created exactly once, no Overflow. */
static void test_recursive_new_big(WtFixture *f, gconstpointer data) {
        g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *t = path_in(f, "t"), *top = path_in(f, "t/new");
        pid_t pid = wt_process_pid(f->daemon->process);
        guint n_top = 40, n_sub = 20;

        mkdir_p(f, "t");
        wt_add_watch(f->proxy, t, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        (void) make_tree(top, n_top, n_sub);
        g_ptr_array_add(want, g_strdup(top));
        for (guint i = 0; i < n_top; i++) {
                char *d = g_strdup_printf("%s/d%03u", top, i);

                g_ptr_array_add(want, d);
                for (guint j = 0; j < n_sub; j++) {
                        char *sd = g_strdup_printf("%s/s%03u", d, j), *file = g_build_filename(sd, "f", NULL);

                        wt_touch(file);
                        g_ptr_array_add(want, sd);
                        g_ptr_array_add(want, file);
                }
        }
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        /* While the scan goes on: a file more in each directory. */
        for (guint i = 0; i < n_top; i++)
                for (guint j = 0; j < n_sub; j++) {
                        char *file = g_strdup_printf("%s/d%03u/s%03u/late", top, i, j);

                        wt_touch(file);
                        g_ptr_array_add(want, file);
                }
        for (guint i = 0; i < want->len; i++)
                wt_await_record(&f->a, want->pdata[i], IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);
        assert_created_once(&f->a, want);
}

/* The same large new tree, but while the scan goes on the file of each
 * directory is deleted: a walk job may read a directory (and see the file)
 * after the loop delivered the kernel's IN_DELETE of it. What the client is
 * told must leave it knowing that no file is there: for each, no record, or
 * a last record that is IN_DELETE, never IN_CREATE after it. */
static void test_recursive_new_big_delete(WtFixture *f, gconstpointer data) {
        g_autoptr(GHashTable) last = g_hash_table_new(g_str_hash, g_str_equal);
        g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *t = path_in(f, "t"), *top = path_in(f, "t/new"), *marker = path_in(f, "t/marker");
        pid_t pid = wt_process_pid(f->daemon->process);
        guint n_top = 40, n_sub = 20, n_seen = 0;

        mkdir_p(f, "t");
        wt_add_watch(f->proxy, t, IN_CREATE | IN_DELETE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        (void) make_tree(top, n_top, n_sub);
        for (guint i = 0; i < n_top; i++)
                for (guint j = 0; j < n_sub; j++) {
                        char *file = g_strdup_printf("%s/d%03u/s%03u/f", top, i, j);

                        wt_touch(file);
                        g_ptr_array_add(files, file);
                }
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        for (guint i = files->len; i > 0; i--)
                g_assert_cmpint(unlink(files->pdata[i - 1]), ==, 0);
        wt_touch(marker);
        wt_await_record(&f->a, marker, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);
        for (guint i = 0; i < f->a.records->len; i++) {
                WtRecord *r = &g_array_index(f->a.records, WtRecord, i);

                g_hash_table_insert(last, r->path, GUINT_TO_POINTER(r->mask));
        }
        for (guint i = 0; i < files->len; i++) {
                guint mask = GPOINTER_TO_UINT(g_hash_table_lookup(last, files->pdata[i]));

                if (mask & IN_CREATE)
                        g_error("'%s': deleted, but the last record of it is IN_CREATE", (char *) files->pdata[i]);
                n_seen += mask != 0;
        }
        g_test_message("new tree, files deleted during the scan: %u of %u reported", n_seen, files->len);
}

/* A directory created and renamed at once (mkdir -p a/b && touch a/b/f && mv
 * a c), 50 times: whether the daemon linked it before or after the rename,
 * what it held is reported created exactly once, under one name or the other. */
static void test_recursive_rename_race(WtFixture *f, gconstpointer data) {
        g_autofree char *t = path_in(f, "t"), *marker = path_in(f, "t/marker");
        g_autoptr(GHashTable) h = NULL;
        guint n_late = 0;

        mkdir_p(f, "t");
        wt_add_watch(f->proxy, t, IN_CREATE | IN_MOVE, WATCHD_FLAG_RECURSIVE, NULL);
        for (int i = 0; i < 50; i++) {
                g_autofree char *a = g_strdup_printf("%s/a%d", t, i), *c = g_strdup_printf("%s/c%d", t, i);
                g_autofree char *b = g_strdup_printf("%s/b", a), *file = g_strdup_printf("%s/b/f", a);

                g_assert_cmpint(mkdir(a, 0755), ==, 0);
                g_assert_cmpint(mkdir(b, 0755), ==, 0);
                wt_touch(file);
                g_assert_cmpint(rename(a, c), ==, 0);
        }
        wt_touch(marker);
        wt_await_record(&f->a, marker, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);
        h = create_counts(&f->a);
        for (int i = 0; i < 50; i++)
                for (int k = 0; k < 2; k++) {
                        const char *rel = k == 0 ? "b" : "b/f";
                        g_autofree char *pa = g_strdup_printf("%s/a%d/%s", t, i, rel);
                        g_autofree char *pc = g_strdup_printf("%s/c%d/%s", t, i, rel);
                        guint na = GPOINTER_TO_UINT(g_hash_table_lookup(h, pa));
                        guint nc = GPOINTER_TO_UINT(g_hash_table_lookup(h, pc));

                        if (na + nc != 1)
                                g_error("round %d: '%s' reported created %u times as a%d, %u as c%d (want 1)", i, rel,
                                        na, i, nc, i);
                        n_late += nc;
                }
        /* How often the rename came first: the case a lost event would hide in. */
        g_test_message("rename race: %u of 100 reported at the new name", n_late);
}

/*
 * A directory that appears below a link whose path leads elsewhere for good:
 * tried again TREE_STALE_RETRIES times (daemon/tree_internal.h), and then its
 * subscription gets Overflow, without a later record to wake the daemon; it
 * answers on and follows the rest of the tree as before. The path is made to
 * lead elsewhere without a rename (which the daemon would read and follow): a
 * bind mount of another directory over t/a, in a mount namespace of this
 * case's own (each case is a process of its own; the daemon, started again
 * after the unshare, shares it), and sub made in the real t/a, hidden now,
 * through a descriptor opened before the mount. The kernel reports sub on
 * a's watch; the daemon opens t/a by its path as the parent of sub's walk and
 * finds the other directory there (another inode: -ESTALE) at every try.
 */
static void test_recursive_stale_parent(WtFixture *f, gconstpointer data) {
        g_autofree char *t = path_in(f, "t"), *a = path_in(f, "t/a"), *other = path_in(f, "other");
        g_autofree char *sub = path_in(f, "t/a/sub"), *bf = path_in(f, "t/b/f");
        g_autofree char *sub2 = path_in(f, "t/a/sub2"), *sub2f = path_in(f, "t/a/sub2/f");
        g_autofree char *log = NULL;
        g_autoptr(WtClient) c = NULL, o = NULL;
        gint64 t0;
        guint32 id;
        int afd;

        if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                g_test_skip("needs root and a mount namespace of its own (a bind mount over a watched directory)");
                return;
        }
        /* The fixture's daemon was started before the unshare: it would not see the mount. */
        g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);
        f->daemon = wt_daemon_start(f->bus, data);
        c = wt_client_new(f->bus);
        o = wt_client_new(f->bus);

        mkdir_p(f, "t/a");
        mkdir_p(f, "t/b");
        g_assert_cmpint(g_mkdir(other, 0755), ==, 0);
        afd = open(a, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(afd, >=, 0);
        id = wt_add_watch(c->proxy, t, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpuint(wt_stat(o->proxy, "kernel_watches"), ==, 3); /* t, t/a, t/b */
        if (mount(other, a, NULL, MS_BIND, NULL) < 0) {
                close(afd);
                g_test_skip("cannot bind-mount a directory here");
                return;
        }

        t0 = g_get_monotonic_time();
        g_assert_cmpint(mkdirat(afd, "sub", 0755), ==, 0);
        if (!wt_await_overflows(&c->events, 1, 10000)) {
                log = wt_daemon_log(f->daemon);
                g_error("no Overflow within 10 s for '%s', whose parent's path leads elsewhere for good; "
                        "watchd's log:\n%s",
                        sub, log);
        }
        g_test_message("stale parent: Overflow %" G_GINT64_FORMAT " ms after sub was made",
                       (g_get_monotonic_time() - t0) / 1000);
        g_assert_true(wt_collector_has_overflow_id(&c->events, id));
        /* For this reason: the tries of sub's parent, and no other. */
        log = wt_daemon_log(f->daemon);
        if (!strstr(log, "cannot follow 'sub' (Stale file handle); it gets Overflow."))
                g_error("the Overflow was not for sub's stale parent; watchd's log:\n%s", log);
        if (wt_timing_checked())
                assert_responsive(o->proxy);
        g_assert_cmpuint(wt_stat(o->proxy, "kernel_watches"), ==, 3); /* sub was never reached */

        /* The rest of the tree is followed; t/a again, once its path leads to it. */
        wt_touch(bf);
        wt_await_record(&c->events, bf, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpint(umount2(a, MNT_DETACH), ==, 0);
        g_assert_cmpint(g_mkdir(sub2, 0755), ==, 0);
        wt_touch(sub2f);
        wt_await_record(&c->events, sub2, IN_CREATE | IN_ISDIR, TIMEOUT_MS);
        wt_await_record(&c->events, sub2f, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(wt_stat(o->proxy, "kernel_watches"), ==, 4); /* and t/a/sub2 (sub: the Overflow) */
        close(afd);
}

/* A big directory renamed inside its tree keeps its watches: nothing is
 * walked again (a walk would open every directory, which a subscription with
 * IN_OPEN sees), and records name the new place. */
static void test_recursive_rename_big(WtFixture *f, gconstpointer data) {
        g_autofree char *t = path_in(f, "t"), *big = path_in(f, "t/big"), *big2 = path_in(f, "t/big2");
        g_autofree char *marker = path_in(f, "t/marker"), *deep = path_in(f, "t/big2/d049/s019/f");
        guint n = make_tree(big, 50, 20) + 1, opens = 0;

        wt_add_watch(f->proxy, t, IN_CREATE | IN_MOVE | IN_OPEN, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, n);
        wt_touch(marker);
        wt_await_record(&f->a, marker, IN_CREATE, TIMEOUT_MS);
        g_array_set_size(f->a.records, 0);

        g_assert_cmpint(rename(big, big2), ==, 0);
        wt_touch(deep);
        wt_await_record(&f->a, deep, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, n);
        for (guint i = 0; i < f->a.records->len; i++)
                opens += (g_array_index(f->a.records, WtRecord, i).mask & (IN_OPEN | IN_ISDIR)) == (IN_OPEN | IN_ISDIR);
        if (opens > 0)
                g_error("The renamed tree was walked again: %u directories opened", opens);
        g_assert_cmpint(wt_collector_find(&f->a, big, IN_MOVED_FROM | IN_MOVED_TO), >=, 0);
}

/* A RECURSIVE subscription counts a watch per directory; over the limit, all of it is undone. */
static void test_recursive_limit(WtFixture *f, gconstpointer data) {
        g_autofree char *t = path_in(f, "t"), *small = path_in(f, "t/a");

        mkdir_p(f, "t/a/b");
        mkdir_p(f, "t/c");
        wt_add_watch_fails(f->proxy, t, IN_CREATE, 1, WATCHD_ERROR_LIMITS_EXCEEDED); /* 4 directories, limit 3 */
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 0);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 0);
        wt_add_watch(f->proxy, small, IN_CREATE, 1, NULL); /* 2 directories */
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 2);
        wt_add_watch(f->proxy, t, IN_CREATE, 0, NULL);
        wt_add_watch_fails(f->proxy, t, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED);
}

typedef struct AsyncAdd {
        gboolean done;
        guint32 id;
        GError *error;
        guint recs_at_reply; /* how many records the client had when the answer came */
        WtCollector *c;
} AsyncAdd;

static void on_add_watch_done(GObject *source, GAsyncResult *res, gpointer data) {
        AsyncAdd *a = data;

        (void) watchd_inotify_call_add_watch_finish(WATCHD_INOTIFY(source), &a->id, res, &a->error);
        a->recs_at_reply = a->c ? a->c->records->len : 0;
        a->done = TRUE;
}

/* add_watch_timeout_ms bounds a walk that stops going on, not a big tree:
 * a walk of 29,701 directories that takes several times the bound (200 ms
 * here) is answered with its id, every directory watched. Failed when the
 * bound was on the call as a whole: Timeout. */
static void test_recursive_past_bound(WtFixture *f, gconstpointer data) {
        g_autofree char *t = g_build_filename(wt_fixture_fast_dir(f), "t", NULL);
        AsyncAdd a = {};
        guint n = make_tree(t, 300, 98);
        gint64 start, took;

        if (g_getenv("WATCHD_TEST_WRAPPER")) {
                g_test_skip("under a wrapper (valgrind) a job of the walk may take longer than the bound");
                return;
        }
        start = g_get_monotonic_time();
        watchd_inotify_call_add_watch(f->proxy, t, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL, on_add_watch_done, &a);
        g_assert_true(wt_await_flag(&a.done, 600000));
        took = g_get_monotonic_time() - start;
        g_test_message("past-bound: %u directories walked in %" G_GINT64_FORMAT " ms, bound 200 ms", n, took / 1000);
        g_assert_no_error(a.error);
        g_assert_cmpuint(wt_stat(f->proxy2, "kernel_watches"), ==, n);
        if (took < 400 * 1000)
                g_test_skip("the walk took less than twice the bound here: the bound was not tested");
}

/* A tree too big for one slice (30,000 directories) is walked from the loop:
 * meanwhile other clients are answered and the part already watched
 * delivers its events, before AddWatch answers; then the whole tree is
 * watched. A client that leaves while its walk goes on leaves nothing. */
/* The most fds the daemon had open, its /proc/PID/fd sampled every millisecond. */
typedef struct FdPeak {
        char *dir;
        guint peak;
} FdPeak;

static gboolean fd_peak_sample(gpointer data) {
        FdPeak *p = data;
        g_autoptr(GDir) d = g_dir_open(p->dir, 0, NULL);
        guint n = 0;

        while (d && g_dir_read_name(d))
                n++;
        p->peak = MAX(p->peak, n);
        return G_SOURCE_CONTINUE;
}

static void test_recursive_big(WtFixture *f, gconstpointer data) {
        g_autofree char *t = g_build_filename(wt_fixture_fast_dir(f), "t", NULL);
        g_autofree char *early = g_build_filename(t, "early", NULL), *late = NULL;
        AsyncAdd a = { .c = &f->a };
        guint n = make_tree(t, 300, 99), polls = 0, sampler;
        g_autofree char *fd_dir = NULL;
        FdPeak peak = {};
        guint64 kw = 0;
        int i;

        g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(f->proxy), 600000); /* under valgrind too */
        watchd_inotify_call_add_watch(f->proxy, t, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL, on_add_watch_done, &a);
        /* Another client's calls are answered while the walk goes on. */
        for (;;) {
                kw = wt_stat(f->proxy2, "kernel_watches");
                polls++;
                if (kw > 1 || a.done)
                        break;
        }
        if (a.done)
                g_error("AddWatch of %u directories answered before another client's GetStats saw its walk", n);
        g_assert_cmpuint(kw, <, n);
        g_test_message("big: walk seen at %" G_GUINT64_FORMAT " of %u watches after %u GetStats", kw, n, polls);

        /* The root is watched: its events come before AddWatch's answer. */
        wt_touch(early);
        wt_await_record(&f->a, early, IN_CREATE, TIMEOUT_MS);
        /* Its jobs (up to WALK_JOBS = 4 at once, tree_internal.h) keep
         * few directories open, however wide the tree: the frames on the
         * walk's stack (a second job only while they are at most
         * WALK_JOBS_FRAMES = 1024), what the jobs out opened (JOB_OPENS =
         * 256 each), and the daemon's own fds: under 1024 + 4 * 256 + 64.
         * Breadth first, the 300 directories of 99 would be 29,700. */
        peak.dir = fd_dir = g_strdup_printf("/proc/%s/fd", g_subprocess_get_identifier(f->daemon->process));
        sampler = g_timeout_add(1, fd_peak_sample, &peak);
        g_assert_true(wt_await_flag(&a.done, 600000));
        g_source_remove(sampler);
        g_test_message("big: at most %u fds open in the walk", peak.peak);
        g_assert_cmpuint(peak.peak, <, 1024 + 4 * 256 + 64);
        g_assert_no_error(a.error);
        i = wt_collector_find(&f->a, early, IN_CREATE);
        if ((guint) i >= a.recs_at_reply)
                g_error("The event of the watched root came after AddWatch's answer (record %d, %u at the answer)", i,
                        a.recs_at_reply);
        g_assert_cmpuint(g_array_index(f->a.records, WtRecord, i).id, ==, a.id);
        g_assert_cmpuint(wt_stat(f->proxy2, "kernel_watches"), ==, n);

        /* The walk moved the daemon's working directory into the tree
         * (backend_syscall.c) and put it back: it keeps no filesystem busy. */
        {
                g_autofree char *proc = g_strdup_printf("/proc/%s/cwd", g_subprocess_get_identifier(f->daemon->process));
                g_autofree char *cwd = g_file_read_link(proc, NULL), *mine = g_get_current_dir();

                g_assert_cmpstr(cwd, ==, mine);
        }

        /* The last directory walked is followed like any other. */
        late = g_strdup_printf("%s/d%03u/s%03u/late", t, 299u, 98u);
        wt_touch(late);
        wt_await_record(&f->a, late, IN_CREATE, TIMEOUT_MS);

        /* A third client starts a walk of the same tree (shared watches) and leaves at once. */
        {
                g_autoptr(GDBusConnection) conn = wt_connect(f->bus);
                g_autoptr(WatchdInotify) proxy = wt_proxy(conn);
                AsyncAdd b = {};

                watchd_inotify_call_add_watch(proxy, t, IN_DELETE, 1, NULL, on_add_watch_done, &b);
                g_assert_true(wt_await_stat(f->proxy2, "subscriptions", 2, TIMEOUT_MS));
                g_assert_true(g_dbus_connection_close_sync(conn, NULL, NULL));
                g_assert_true(wt_await_flag(&b.done, TIMEOUT_MS)); /* its call fails: closed */
                g_clear_error(&b.error);
        }
        g_assert_true(wt_await_stat(f->proxy2, "subscriptions", 1, 600000));
        g_assert_cmpuint(wt_stat(f->proxy2, "kernel_watches"), ==, n);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);
}

/* A tree of depth levels below t, each directory with width subdirectories; the number of directories. */
static guint make_bushy_tree(const char *t, guint width, guint depth) {
        guint n = 1;

        g_assert_cmpint(g_mkdir_with_parents(t, 0755), ==, 0);
        if (depth == 0)
                return n;
        for (guint i = 0; i < width; i++) {
                g_autofree char *d = g_strdup_printf("%s/%u", t, i);

                n += make_bushy_tree(d, width, depth - 1);
        }
        return n;
}

/*
 * A tree that holds more directories open on a walk's stack than
 * WALK_JOBS_FRAMES (1,024, tree_internal.h): 4 subdirectories a directory,
 * 7 deep (21,845). A job reads the 64 directories on top of the stack and
 * opens up to 256 below them; with four jobs out, each pushes 256 it did not
 * read, and past 1,024 no second job goes out (the daemon says so at debug
 * level, once). The walk ends, every directory watched, with fewer fds open
 * than the stack's cap, what four jobs open, and one job's climb (256 a
 * level) allow. recursive-big's tree (300 x 99) never reached the cap.
 */
static void test_recursive_deep(WtFixture *f, gconstpointer data) {
        g_autofree char *t = g_build_filename(wt_fixture_fast_dir(f), "t", NULL);
        g_autofree char *fd_dir = NULL, *log = NULL, *deepest = NULL;
        guint n = make_bushy_tree(t, 4, 7), sampler;
        AsyncAdd a = { .c = &f->a };
        FdPeak peak = {};
        const char *pid = g_subprocess_get_identifier(f->daemon->process);
        guint64 fd_table = wt_proc_status(pid, "FDSize");

        g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(f->proxy), 600000); /* under valgrind too */
        peak.dir = fd_dir = g_strdup_printf("/proc/%s/fd", pid);
        sampler = g_timeout_add(1, fd_peak_sample, &peak);
        watchd_inotify_call_add_watch(f->proxy, t, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL, on_add_watch_done, &a);
        g_assert_true(wt_await_flag(&a.done, 600000));
        g_source_remove(sampler);
        g_assert_no_error(a.error);
        g_test_message("deep: %u directories, at most %u fds open in the walk", n, peak.peak);
        g_assert_cmpuint(wt_stat(f->proxy2, "kernel_watches"), ==, n);

        log = wt_daemon_log(f->daemon);
        if (!strstr(log, "directories open on its stack, over 1024"))
                g_error("the walk never held more than 1024 directories on its stack: the cap was not tested");
        g_assert_cmpuint(peak.peak, <, 1024 + 4 * 256 + 7 * 256 + 64);
        /* Those fds fit the table of fds the daemon made before it had threads (watchd.c,
         * grow_fd_table()): grown in the walk, each doubling would wait for an RCU grace period. */
        g_assert_cmpuint(fd_table, >=, 4096);
        g_assert_cmpuint(wt_proc_status(pid, "FDSize"), ==, fd_table);

        deepest = g_build_filename(t, "3/3/3/3/3/3/3/new", NULL);
        wt_touch(deepest);
        wt_await_record(&f->a, deepest, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);
}

/* The daemon is stopped (SIGTERM) while a RECURSIVE walk goes on: the call
 * fails (NoReply: sd-bus closes the daemon's connection when its loop
 * exits), and the daemon exits cleanly (0). Its walks end with the manager,
 * after the bus layer: the walk's end that answered the call read the freed
 * bus layer (found by valgrind in recursive-big's end). */
static void test_recursive_exit(WtFixture *f, gconstpointer data) {
        g_autofree char *t = g_build_filename(wt_fixture_fast_dir(f), "t", NULL);
        AsyncAdd a = {};
        guint n = make_tree(t, 300, 99);

        g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(f->proxy), 600000); /* under valgrind too */
        watchd_inotify_call_add_watch(f->proxy, t, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL, on_add_watch_done, &a);
        while (wt_stat(f->proxy2, "kernel_watches") < 2 && !a.done)
                ;
        if (a.done)
                g_error("AddWatch of %u directories answered before the daemon could be stopped during its walk", n);
        g_assert_cmpint(wt_daemon_stop(g_steal_pointer(&f->daemon)), ==, 0);
        g_assert_true(wt_await_flag(&a.done, TIMEOUT_MS));
        g_assert_nonnull(a.error);
        g_test_message("exit during a walk: answered \"%s\"", a.error->message);
}

/* marker made and its record in (records come in kernel order), no Overflow:
 * then each path of want was reported created exactly once, or why not. */
/* For a failure's log: the records of the directory of file (a/dNNN/sMMM/g)
 * under any of its names (a/dNNN/?MMM), in the order they came. */
static void records_of_dir(WtCollector *c, const char *file) {
        g_autofree char *dir = g_path_get_dirname(file), *parent = g_path_get_dirname(dir);
        g_autofree char *base = g_path_get_basename(dir);
        const char *stem = base[0] ? base + 1 : base;
        guint shown = 0;

        for (guint i = 0; i < c->records->len && shown < 200; i++) {
                WtRecord *r = &g_array_index(c->records, WtRecord, i);

                if ((g_str_has_prefix(r->path, parent) && strstr(r->path + strlen(parent), stem)) ||
                    (r->new_path && g_str_has_prefix(r->new_path, parent) && strstr(r->new_path + strlen(parent), stem))) {
                        g_test_message("record %u: mask 0x%x cookie %u %s%s%s", i, r->mask, r->cookie, r->path,
                                       r->new_path && *r->new_path ? " -> " : "", r->new_path ? r->new_path : "");
                        shown++;
                }
        }
        g_test_message("%u records of %s/?%s, of %u", shown, parent, stem, c->records->len);
}

static void marked_each_created_once(WtFixture *f, const char *marker, GPtrArray *want, const char *why) {
        g_autoptr(GHashTable) h = NULL;

        wt_touch(marker);
        wt_await_record(&f->a, marker, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);
        h = create_counts(&f->a);
        for (guint i = 0; i < want->len; i++) {
                guint n = GPOINTER_TO_UINT(g_hash_table_lookup(h, want->pdata[i]));

                if (n != 1) {
                        records_of_dir(&f->a, want->pdata[i]);
                        g_error("'%s' reported created %u times (want 1): %s", (const char *) want->pdata[i], n, why);
                }
        }
}

/* Directories made all over a tree while AddWatch walks it (its reads in
 * workers): each is watched, whether it was made before its parent was read
 * (the walk finds it) or after its parent's watch was placed (the kernel
 * reports it): the walk places a directory's watch before it reads it. A
 * file made in each once AddWatch is answered is reported. A walk that read
 * a directory before watching it would miss those made in between. */
static void test_recursive_walk_race(WtFixture *f, gconstpointer data) {
        g_autofree char *t = g_build_filename(wt_fixture_fast_dir(f), "t", NULL);
        g_autofree char *marker = g_build_filename(t, "marker", NULL);
        g_autoptr(GPtrArray) made = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func(g_free);
        AsyncAdd a = { .c = &f->a };
        guint top = 20, sub = 24, rounds = 20;

        make_tree(t, top, sub);
        g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(f->proxy), 600000); /* under valgrind too */
        watchd_inotify_call_add_watch(f->proxy, t, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL, on_add_watch_done, &a);
        /* Until it is answered: a new directory in each leaf in turn, round after
         * round (at most rounds: a bound on the watches), so that some are made
         * right as the walk reaches their leaf. */
        for (guint k = 0; !a.done && k < rounds * top * sub; k++) {
                guint leaf = k % (top * sub);
                g_autofree char *d = g_strdup_printf("%s/d%03u/s%03u/n%u", t, leaf / sub, leaf % sub, k / (top * sub));

                g_assert_cmpint(mkdir(d, 0755), ==, 0);
                g_ptr_array_add(made, g_steal_pointer(&d));
                while (g_main_context_iteration(NULL, FALSE))
                        ;
        }
        g_assert_true(wt_await_flag(&a.done, 600000));
        g_assert_no_error(a.error);
        g_test_message("walk race: %u directories made during the walk", made->len);
        for (guint i = 0; i < made->len; i++) {
                g_autofree char *file = g_build_filename(made->pdata[i], "f", NULL);

                wt_touch(file);
                g_ptr_array_add(want, g_steal_pointer(&file));
        }
        marked_each_created_once(f, marker, want, "its directory, made during the walk, is not watched");
}

/* Directories renamed while the AddWatch walk goes on, each in its own
 * directory (dNNN/sMMM -> dNNN/rMMM): a walk job may open one by its old
 * name and link it after the loop read the rename. Then a file made in
 * each is reported created once, at the new name. */
static void test_recursive_walk_rename(WtFixture *f, gconstpointer data) {
        g_autofree char *t = g_build_filename(wt_fixture_fast_dir(f), "t", NULL);
        g_autofree char *marker = g_build_filename(t, "marker", NULL);
        g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func(g_free);
        AsyncAdd a = { .c = &f->a };
        guint top = 40, sub = 24, n = 0;

        make_tree(t, top, sub);
        g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(f->proxy), 600000); /* under valgrind too */
        watchd_inotify_call_add_watch(f->proxy, t, IN_CREATE | IN_MOVE, WATCHD_FLAG_RECURSIVE, NULL, on_add_watch_done,
                                      &a);
        /* Until it is answered (at most 6 rounds: 11,520 kernel records, below
         * the default queue of 16,384 when watchd is slow, under valgrind):
         * each directory renamed in turn, s to r and back, so that some are
         * renamed right as the walk opens them. */
        for (guint k = 0; k < 6 * top * sub && (k % (top * sub) || !a.done); k++) {
                guint leaf = k % (top * sub), round = k / (top * sub);
                g_autofree char *from = g_strdup_printf("%s/d%03u/%c%03u", t, leaf / sub, round % 2 ? 'r' : 's',
                                                        leaf % sub);
                g_autofree char *to = g_strdup_printf("%s/d%03u/%c%03u", t, leaf / sub, round % 2 ? 's' : 'r',
                                                      leaf % sub);

                g_assert_cmpint(rename(from, to), ==, 0);
                if (want->len < top * sub)
                        g_ptr_array_add(want, NULL);
                g_free(want->pdata[leaf]);
                want->pdata[leaf] = g_build_filename(to, "g", NULL);
                n += !a.done;
                while (g_main_context_iteration(NULL, FALSE))
                        ;
        }
        g_assert_true(wt_await_flag(&a.done, 600000));
        g_assert_no_error(a.error);
        g_test_message("walk rename: %u renames during the walk", n);
        for (guint i = 0; i < want->len; i++)
                wt_touch(want->pdata[i]);
        marked_each_created_once(f, marker, want,
                                 "its directory, renamed during the walk, is watched under another name or not at all");
}

/* Over the limit part-way through a walk from the loop: AddWatch fails
 * with LimitsExceeded and nothing of the subscription is left. */
static void test_recursive_big_limit(WtFixture *f, gconstpointer data) {
        g_autofree char *t = g_build_filename(wt_fixture_fast_dir(f), "t", NULL);
        g_autofree char *name = NULL;
        AsyncAdd a = {};

        make_tree(t, 300, 99);
        g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(f->proxy), 600000);
        watchd_inotify_call_add_watch(f->proxy, t, IN_CREATE, 1, NULL, on_add_watch_done, &a);
        g_assert_true(wt_await_flag(&a.done, 600000));
        g_assert_nonnull(a.error);
        name = g_dbus_error_get_remote_error(a.error);
        g_assert_cmpstr(name, ==, WATCHD_ERROR_LIMITS_EXCEEDED);
        g_assert_nonnull(strstr(a.error->message, "max_watches_per_client"));
        g_error_free(a.error);
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 0);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 0);
}

/* AddWatchFd with fd index 0 of fds; returns the id or sets *error. */
static guint32 add_watch_fd(WatchdInotify *p, int fd, guint32 mask, GError **error) {
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
        g_autoptr(GVariant) r = NULL;
        guint32 id = 0;

        g_assert_cmpint(g_unix_fd_list_append(fds, fd, NULL), ==, 0);
        r = g_dbus_proxy_call_with_unix_fd_list_sync(G_DBUS_PROXY(p), "AddWatchFd", g_variant_new("(huu)", 0, mask, 0),
                                                     G_DBUS_CALL_FLAGS_NONE, TIMEOUT_MS, fds, NULL, NULL, error);
        if (r)
                g_variant_get(r, "(u)", &id);
        return id;
}

static void add_watch_fd_fails(WatchdInotify *p, int fd, const char *want) {
        g_autoptr(GError) error = NULL;
        g_autofree char *name = NULL;

        g_assert_cmpuint(add_watch_fd(p, fd, IN_CREATE, &error), ==, 0);
        g_assert_nonnull(error);
        name = g_dbus_error_get_remote_error(error);
        g_assert_cmpstr(name, ==, want);
}

static void test_add_watch_fd(WtFixture *f, gconstpointer data) {
        g_autofree char *a = path_in(f, "a"), *file = path_in(f, "file");
        g_autoptr(GError) error = NULL;
        int fd, pfd, wfd, pipefd[2];
        guint32 id;
        WtRecord *r;

        wt_touch(file);
        fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        id = add_watch_fd(f->proxy, fd, IN_CREATE, &error);
        g_assert_no_error(error);
        close(fd);
        wt_touch(a);
        r = wt_await_record(&f->a, a, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(r->id, ==, id);

        pfd = open(f->dir, O_PATH | O_CLOEXEC);
        g_assert_cmpint(pfd, >=, 0);
        add_watch_fd_fails(f->proxy, pfd, WATCHD_ERROR_INVALID_ARGS);
        close(pfd);

        wfd = open(file, O_WRONLY | O_CLOEXEC);
        g_assert_cmpint(wfd, >=, 0);
        add_watch_fd_fails(f->proxy, wfd, WATCHD_ERROR_INVALID_ARGS);
        close(wfd);

        g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
        add_watch_fd_fails(f->proxy, pipefd[0], WATCHD_ERROR_INVALID_ARGS);
        close(pipefd[0]);
        close(pipefd[1]);

        /* A bad index into the (empty) fd list is refused by the bus library or the daemon, loudly. */
        {
                g_autoptr(GVariant) res = NULL;
                res = g_dbus_proxy_call_sync(G_DBUS_PROXY(f->proxy), "AddWatchFd",
                                             g_variant_new("(huu)", 5, IN_CREATE, 0), G_DBUS_CALL_FLAGS_NONE,
                                             TIMEOUT_MS, NULL, &error);
                g_assert_null(res);
                g_assert_nonnull(error);
                g_clear_error(&error);
        }
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 1);
        assert_responsive(f->proxy2);
}

static void test_oneshot(WtFixture *f, gconstpointer data) {
        g_autofree char *a = path_in(f, "a"), *b = path_in(f, "b"), *want = NULL;
        guint32 id = wt_add_watch(f->proxy, f->dir, IN_CREATE, 8 /* ONESHOT */, NULL);

        wt_add_watch(f->proxy2, f->dir, IN_CREATE, 0, NULL); /* shares the kernel watch, keeps it */
        wt_touch(a);
        wt_await_record(&f->a, a, IN_CREATE, TIMEOUT_MS);
        g_assert_true(wt_await_removed(&f->a, id, "oneshot", TIMEOUT_MS));
        want = g_strdup_printf("%u oneshot", id);
        g_assert_cmpstr(g_ptr_array_index(f->a.removed, 0), ==, want);
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 1);

        wt_touch(b);
        wt_await_record(&f->b, b, IN_CREATE, TIMEOUT_MS);
        /* The oneshot subscriber got exactly one record. */
        g_assert_cmpuint(f->a.records->len, ==, 1);
}

static void test_deleted(WtFixture *f, gconstpointer data) {
        g_autofree char *d = path_in(f, "gone"), *want = NULL;
        guint32 id;

        g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        id = wt_add_watch(f->proxy, d, IN_DELETE_SELF, 0, NULL);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 1);
        g_assert_cmpint(g_rmdir(d), ==, 0);
        wt_await_record(&f->a, d, IN_DELETE_SELF, TIMEOUT_MS);
        g_assert_true(wt_await_removed(&f->a, id, "deleted", TIMEOUT_MS));
        want = g_strdup_printf("%u deleted", id);
        g_assert_cmpstr(g_ptr_array_index(f->a.removed, 0), ==, want);
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 0, TIMEOUT_MS));
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 0);
}

/* An unmounted filesystem: IN_UNMOUNT to every subscriber, then WatchRemoved(id, "unmounted"). */
static void test_unmounted(WtFixture *f, gconstpointer data) {
        g_autofree char *mnt = path_in(f, "mnt"), *sub = path_in(f, "mnt/sub");
        guint32 id, id_sub;

        g_assert_cmpint(g_mkdir(mnt, 0755), ==, 0);
        if (mount("watchd-test", mnt, "tmpfs", 0, NULL) < 0) {
                g_test_skip("cannot mount a tmpfs here");
                return;
        }
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        id = wt_add_watch(f->proxy, mnt, IN_CREATE, 0, NULL);
        id_sub = wt_add_watch(f->proxy, sub, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 2);
        g_assert_cmpint(umount(mnt), ==, 0);

        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 0, TIMEOUT_MS));
        wt_await_record(&f->a, mnt, IN_UNMOUNT, TIMEOUT_MS);
        wt_await_record(&f->a, sub, IN_UNMOUNT, TIMEOUT_MS);
        g_assert_true(wt_await_stat(f->proxy, "subscriptions", 0, TIMEOUT_MS));
        g_assert_true(wt_await_removed(&f->a, id, "unmounted", TIMEOUT_MS));
        g_assert_true(wt_await_removed(&f->a, id_sub, "unmounted", TIMEOUT_MS));
}

/* A client past its backlog limit loses its backlog and gets Overflow; the others are served on. */
static void test_backlog_overflow(WtFixture *f, gconstpointer data) {
        g_autofree char *busy = path_in(f, "busy"), *calm = path_in(f, "calm"), *c1 = NULL;
        pid_t pid = wt_process_pid(f->daemon->process);
        guint32 ida, idb;

        g_assert_cmpint(g_mkdir(busy, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(calm, 0755), ==, 0);
        ida = wt_add_watch(f->proxy, busy, IN_CREATE, 0, NULL);
        idb = wt_add_watch(f->proxy2, calm, IN_CREATE, 0, NULL);

        /* 100 records for A (limit 16) and 3 for B wait in the kernel queue; one read takes them all. */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        for (int i = 0; i < 100; i++) {
                g_autofree char *n = g_strdup_printf("%s/f-%d", busy, i);
                wt_touch(n);
        }
        for (int i = 0; i < 3; i++) {
                g_autofree char *n = g_strdup_printf("%s/c-%d", calm, i);
                wt_touch(n);
        }
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);

        c1 = g_strdup_printf("%s/c-2", calm);
        wt_await_record(&f->b, c1, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(f->b.records->len, ==, 3);
        g_assert_cmpuint(f->b.n_overflows, ==, 0);
        g_assert_true(wt_await_overflows(&f->a, 1, TIMEOUT_MS));
        g_assert_cmpuint(f->a.overflow_ids->len, ==, 1);
        g_assert_cmpuint(g_array_index(f->a.overflow_ids, guint32, 0), ==, ida);
        g_assert_cmpuint(f->a.records->len, <, 100);
        g_assert_cmpuint(wt_stat(f->proxy, "overflows"), >=, 1);
        (void) idb;
}

/* The kernel's IN_Q_OVERFLOW reaches every client as Overflow with all its ids. */
static void test_kernel_overflow(WtFixture *f, gconstpointer data) {
        g_autofree char *d1 = path_in(f, "d1"), *d2 = path_in(f, "d2");
        pid_t pid = wt_process_pid(f->daemon->process);
        guint32 ida, idb1, idb2;
        guint max;

        if (!wt_can_overflow(&max))
                return;
        g_assert_cmpint(g_mkdir(d1, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(d2, 0755), ==, 0);
        ida = wt_add_watch(f->proxy, d1, IN_CREATE | IN_DELETE, 0, NULL);
        idb1 = wt_add_watch(f->proxy2, d2, IN_CREATE, 0, NULL);
        idb2 = wt_add_watch(f->proxy2, d2, IN_DELETE, 0, NULL);

        wt_stop_and_overflow(pid, d1, max);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);

        g_assert_true(wt_await_overflows(&f->a, 1, TIMEOUT_MS));
        g_assert_true(wt_await_overflows(&f->b, 1, TIMEOUT_MS));
        g_assert_cmpuint(f->a.overflow_ids->len, ==, 1);
        g_assert_cmpuint(g_array_index(f->a.overflow_ids, guint32, 0), ==, ida);
        g_assert_cmpuint(f->b.overflow_ids->len, ==, 2);
        g_assert_cmpuint(MIN(g_array_index(f->b.overflow_ids, guint32, 0), g_array_index(f->b.overflow_ids, guint32, 1)),
                         ==, MIN(idb1, idb2));
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_overflows"), >=, 1);
}

/* A pending path whose directory appears after the kernel's queue is full
 * (its IN_CREATE lost in the overflow) is followed all the same: the
 * daemon looks at every pending path again after an overflow. Before, the
 * subscription waited for an event that had already happened. */
static void test_kernel_overflow_pending(WtFixture *f, gconstpointer data) {
        g_autofree char *d1 = path_in(f, "d1"), *a = path_in(f, "a"), *file = path_in(f, "a/f");
        pid_t pid = wt_process_pid(f->daemon->process);
        WtRecord *r;
        guint32 id;
        guint max;
        int fd;

        if (!wt_can_overflow(&max))
                return;
        g_assert_cmpint(g_mkdir(d1, 0755), ==, 0);
        (void) wt_add_watch(f->proxy, d1, IN_CREATE | IN_DELETE, 0, NULL);
        id = wt_add_watch(f->proxy, file, IN_MODIFY, 0, NULL);

        wt_stop_and_overflow(pid, d1, max);
        /* The queue is full: these events are lost. */
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_true(g_file_set_contents(file, "", 0, NULL));
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        g_assert_true(wt_await_overflows(&f->a, 1, TIMEOUT_MS));
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_overflows"), >=, 1);

        /* Its watch is placed once the overflow is read: a write is heard. */
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 2, TIMEOUT_MS));
        fd = open(file, O_WRONLY | O_APPEND | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, "x", 1), ==, 1);
        g_assert_cmpint(close(fd), ==, 0);
        r = wt_await_record(&f->a, file, IN_MODIFY, TIMEOUT_MS);
        g_assert_cmpuint(r->id, ==, id);
}

/* A RECURSIVE tree whose new directory's IN_CREATE was lost in the kernel's
 * overflow: the tree is walked again, and the directory is watched from
 * then on. Before, its files were never heard of. */
static void test_kernel_overflow_recursive(WtFixture *f, gconstpointer data) {
        g_autofree char *d1 = path_in(f, "d1"), *tree = path_in(f, "t"), *n = path_in(f, "t/n"),
                        *nf = path_in(f, "t/n/f");
        pid_t pid = wt_process_pid(f->daemon->process);
        guint32 id;
        guint max;
        int fd;

        if (!wt_can_overflow(&max))
                return;
        g_assert_cmpint(g_mkdir(d1, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
        (void) wt_add_watch(f->proxy, d1, IN_CREATE | IN_DELETE, 0, NULL);
        id = wt_add_watch(f->proxy, tree, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 2);

        wt_stop_and_overflow(pid, d1, max);
        /* The queue is full: its IN_CREATE is lost. */
        g_assert_cmpint(g_mkdir(n, 0755), ==, 0);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        g_assert_true(wt_await_overflows(&f->a, 1, TIMEOUT_MS));

        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 3, TIMEOUT_MS));
        fd = open(nf, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(close(fd), ==, 0);
        g_assert_cmpuint(wt_await_record(&f->a, nf, IN_CREATE, TIMEOUT_MS)->id, ==, id);
}

/* ---------------------------------------------------------------- who hears a client's signals */

/* A passive listener: a connection of its own that never calls watchd, with
 * a match rule for every signal of org.example.Inotify (its collector's),
 * and a filter that counts every message of that interface the bus routes
 * to it, whatever GDBus would make of it. */
typedef struct Listener {
        GDBusConnection *conn;
        guint filter;
        gint n_messages; /* atomic: the filter runs in GDBus's worker thread */
        WtCollector heard;
} Listener;

static GDBusMessage *listener_filter(GDBusConnection *conn, GDBusMessage *msg, gboolean incoming, gpointer data) {
        Listener *l = data;

        if (incoming && g_strcmp0(g_dbus_message_get_interface(msg), WATCHD_INTERFACE) == 0)
                g_atomic_int_inc(&l->n_messages);
        return msg;
}

static GVariant *bus_call(GDBusConnection *c, const char *method, GVariant *args) {
        g_autoptr(GError) error = NULL;
        GVariant *r;

        r = g_dbus_connection_call_sync(c, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        method, args, NULL, G_DBUS_CALL_FLAGS_NONE, TIMEOUT_MS, NULL, &error);
        g_assert_no_error(error);
        return r;
}

static void listener_start(Listener *l, WtBus *bus, gboolean eavesdrop) {
        l->conn = wt_connect(bus);
        l->filter = g_dbus_connection_add_filter(l->conn, listener_filter, l, NULL);
        if (eavesdrop) {
                /* The most a client may ask for: messages addressed to others
                 * too. The bus takes the rule; its policy, like the system
                 * bus's, gives no one the right to eavesdrop. */
                g_autoptr(GVariant) r = bus_call(l->conn, "AddMatch",
                                                 g_variant_new("(s)",
                                                               "type='signal',interface='org.example.Inotify',"
                                                               "eavesdrop=true"));
        }
        wt_collector_init_listener(&l->heard, l->conn); /* its match rule holds on return */
}

static void listener_stop(Listener *l) {
        wt_collector_clear(&l->heard);
        g_dbus_connection_remove_filter(l->conn, l->filter);
        g_dbus_connection_close_sync(l->conn, NULL, NULL);
        g_object_unref(l->conn);
}

/* Everything the bus routed to c before now has reached c's filters and
 * its signal handlers: the bus queues its answer to this call after it,
 * and GDBus attaches a signal's dispatch to the main context when it reads
 * the signal, before it reads the answer. */
static void connection_sync(GDBusConnection *c) {
        g_autoptr(GVariant) r = bus_call(c, "GetId", NULL);

        while (g_main_context_iteration(NULL, FALSE))
                ;
}

/* The owner's client (f->a) gets 20 records of f->dir, one of a ONESHOT
 * watch and its WatchRemoved, then a sentinel record after all of them:
 * once the owner has the sentinel, the bus has routed every signal before
 * it, to whoever it was going to. */
static void owner_signals(WtFixture *f) {
        g_autofree char *once = path_in(f, "once"), *once_x = path_in(f, "once/x");
        g_autofree char *sentinel = path_in(f, "sentinel");
        guint32 id, id_once;

        g_assert_cmpint(g_mkdir(once, 0755), ==, 0);
        id = wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        id_once = wt_add_watch(f->proxy, once, IN_CREATE, 8 /* ONESHOT */, NULL);
        for (int i = 0; i < 20; i++) {
                g_autofree char *p = g_strdup_printf("%s/f-%d", f->dir, i);
                wt_touch(p);
        }
        wt_touch(once_x);
        g_assert_true(wt_await_removed(&f->a, id_once, "oneshot", TIMEOUT_MS));
        wt_touch(sentinel);
        g_assert_cmpuint(wt_await_record(&f->a, sentinel, IN_CREATE, TIMEOUT_MS)->id, ==, id);

        /* All of them, each once. */
        g_assert_cmpuint(f->a.records->len, ==, 22);
        for (int i = 0; i < 20; i++) {
                g_autofree char *p = g_strdup_printf("%s/f-%d", f->dir, i);
                int k = wt_collector_find(&f->a, p, IN_CREATE);

                g_assert_cmpint(k, >=, 0);
                g_assert_cmpuint(wt_collector_record(&f->a, k)->id, ==, id);
        }
        g_assert_cmpint(wt_collector_find(&f->a, once_x, IN_CREATE), >=, 0);
        g_assert_cmpuint(f->a.removed->len, ==, 1);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);
}

/* Unicast (the default): a client's Events and WatchRemoved reach it alone.
 * Neither a listener with a match rule for every signal of the interface
 * and an eavesdrop rule, nor the other client of the same uid (whose proxy
 * listens to watchd's signals), receives any of them. */
static void test_unicast(WtFixture *f, gconstpointer data) {
        Listener l = {};

        listener_start(&l, f->bus, TRUE);
        owner_signals(f);
        connection_sync(l.conn);
        connection_sync(f->conn2);

        if (g_atomic_int_get(&l.n_messages) != 0)
                g_error("A listener received %d messages of org.example.Inotify (%u records, %u WatchRemoved) "
                        "sent to another client",
                        g_atomic_int_get(&l.n_messages), l.heard.records->len, l.heard.removed->len);
        g_assert_cmpuint(l.heard.n_signals + l.heard.removed->len + l.heard.n_overflows, ==, 0);
        g_assert_cmpuint(f->b.n_signals + f->b.removed->len + f->b.n_overflows, ==, 0);
        listener_stop(&l);
}

/* delivery=broadcast (allowed on a private bus): a passive listener, with a
 * match rule only and no call to watchd ever, receives every Events signal
 * of the owner, each record in the owner's order. WatchRemoved stays the
 * owner's own. */
static void test_broadcast(WtFixture *f, gconstpointer data) {
        Listener l = {};

        listener_start(&l, f->bus, FALSE);
        owner_signals(f);
        connection_sync(l.conn);

        g_assert_cmpuint(l.heard.n_signals, ==, f->a.n_signals);
        g_assert_cmpuint(l.heard.records->len, ==, f->a.records->len);
        for (guint i = 0; i < f->a.records->len; i++) {
                WtRecord *want = wt_collector_record(&f->a, i), *got = wt_collector_record(&l.heard, i);

                g_assert_cmpuint(got->id, ==, want->id);
                g_assert_cmpuint(got->mask, ==, want->mask);
                g_assert_cmpuint(got->cookie, ==, want->cookie);
                g_assert_cmpstr(got->path, ==, want->path);
                g_assert_cmpstr(got->new_path, ==, want->new_path);
        }
        g_assert_cmpuint(l.heard.removed->len, ==, 0);
        /* And nothing but those Events signals reached it. */
        g_assert_cmpint(g_atomic_int_get(&l.n_messages), ==, (gint) l.heard.n_signals);
        listener_stop(&l);
}

/* 10,000 calls, 1,000 in flight at any time: eight times what the system
 * bus lets one connection have pending (max_replies_per_connection, 128),
 * so watchd, not the bus, is what limits the flood. */
#define FLOOD_CALLS  10000u
#define FLOOD_WINDOW 1000u

typedef struct Flood {
        WatchdInotify *proxy;
        const char *path;
        guint sent, done, ok, limited, other;
        char *other_error;
} Flood;

static void on_flood_reply(GObject *src, GAsyncResult *res, gpointer data);

static void flood_send(Flood *fl) {
        fl->sent++;
        watchd_inotify_call_add_watch(fl->proxy, fl->path, IN_CREATE, 0, NULL, on_flood_reply, fl);
}

static void on_flood_reply(GObject *src, GAsyncResult *res, gpointer data) {
        Flood *fl = data;
        g_autoptr(GError) error = NULL;
        guint id;

        if (watchd_inotify_call_add_watch_finish(WATCHD_INOTIFY(src), &id, res, &error))
                fl->ok++;
        else {
                g_autofree char *name = g_dbus_error_get_remote_error(error);
                if (g_strcmp0(name, WATCHD_ERROR_LIMITS_EXCEEDED) == 0 && strstr(error->message, "max_watches_per_client"))
                        fl->limited++;
                else {
                        fl->other++;
                        if (!fl->other_error)
                                fl->other_error = g_strdup(error->message);
                }
        }
        fl->done++;
        if (fl->sent < FLOOD_CALLS)
                flood_send(fl);
}

static gboolean flood_done(gpointer data) {
        return ((Flood *) data)->done == FLOOD_CALLS;
}

typedef struct Pinger {
        WtBus *bus;
        volatile gint stop;
        gint64 worst_usec;
        guint n;
} Pinger;

/* Another client, on its own thread and connection, asks GetStats all along. */
static gpointer pinger_thread(gpointer data) {
        Pinger *p = data;
        g_autoptr(GMainContext) ctx = g_main_context_new();
        g_autoptr(GDBusConnection) c = NULL;
        g_autoptr(WatchdInotify) proxy = NULL;

        g_main_context_push_thread_default(ctx);
        c = wt_connect(p->bus);
        proxy = wt_proxy(c);
        while (!g_atomic_int_get(&p->stop)) {
                g_autoptr(GVariant) stats = NULL;
                gint64 t0 = g_get_monotonic_time(), dt;

                g_assert_true(watchd_inotify_call_get_stats_sync(proxy, &stats, NULL, NULL));
                dt = g_get_monotonic_time() - t0;
                p->worst_usec = MAX(p->worst_usec, dt);
                p->n++;
                g_usleep(5000);
        }
        g_dbus_connection_close_sync(c, NULL, NULL);
        g_main_context_pop_thread_default(ctx);
        return NULL;
}

/* CPU time (user + system) of a process so far, in microseconds. */
static gint64 cpu_usec(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int) pid), *s = NULL;
        g_auto(GStrv) fields = NULL;
        const char *after;

        g_assert_true(g_file_get_contents(path, &s, NULL, NULL));
        after = strrchr(s, ')'); /* the command name may hold spaces */
        g_assert_nonnull(after);
        fields = g_strsplit(after + 2, " ", -1);
        /* fields[0] is field 3 (state); utime and stime are fields 14 and 15. */
        return (g_ascii_strtoll(fields[11], NULL, 10) + g_ascii_strtoll(fields[12], NULL, 10)) * G_USEC_PER_SEC /
                sysconf(_SC_CLK_TCK);
}

/* 10,000 AddWatch calls from one client: past the limit, LimitsExceeded; others answered within 1 s. */
static void test_flood(WtFixture *f, gconstpointer data) {
        Flood fl = {};
        Pinger p = { .bus = f->bus };
        gint64 cpu0 = cpu_usec(wt_process_pid(f->daemon->process)), t0 = g_get_monotonic_time();
        GThread *t;

        t = g_thread_new("pinger", pinger_thread, &p);
        fl.proxy = f->proxy;
        fl.path = f->dir;
        while (fl.sent < FLOOD_WINDOW)
                flood_send(&fl);
        g_assert_true(wt_await(flood_done, &fl, 60000));
        g_atomic_int_set(&p.stop, 1);
        g_thread_join(t);

        g_test_message("flood: %u ok, %u limited, %u other in %" G_GINT64_FORMAT " ms, watchd CPU %" G_GINT64_FORMAT
                       " ms; GetStats worst %" G_GINT64_FORMAT " us over %u calls",
                       fl.ok, fl.limited, fl.other, (g_get_monotonic_time() - t0) / 1000,
                       (cpu_usec(wt_process_pid(f->daemon->process)) - cpu0) / 1000, p.worst_usec, p.n);
        if (fl.other)
                g_error("unexpected error in the flood: %s", fl.other_error);
        g_assert_cmpuint(fl.ok, ==, 8192); /* max_watches_per_client here (the old default) */
        g_assert_cmpuint(fl.limited, ==, FLOOD_CALLS - 8192);
        g_assert_cmpuint(p.n, >, 0);
        if (wt_timing_checked())
                g_assert_cmpint(p.worst_usec, <, G_USEC_PER_SEC);
        g_assert_cmpuint(wt_stat(f->proxy2, "kernel_watches"), ==, 1);
        g_free(fl.other_error);
}

static void test_limits(WtFixture *f, gconstpointer data) {
        g_autoptr(GDBusConnection) c3 = wt_connect(f->bus);
        g_autoptr(WatchdInotify) p3 = wt_proxy(c3);

        /* max_watches_per_client = 3, max_watches_per_user = 5, max_clients_per_user = 2 */
        for (int i = 0; i < 3; i++)
                wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        wt_add_watch_fails(f->proxy, f->dir, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED);
        wt_add_watch(f->proxy2, f->dir, IN_CREATE, 0, NULL);
        wt_add_watch(f->proxy2, f->dir, IN_CREATE, 0, NULL);
        wt_add_watch_fails(f->proxy2, f->dir, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED); /* per user */
        wt_add_watch_fails(p3, f->dir, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED); /* a third client of the uid */
        g_assert_cmpuint(wt_stat(f->proxy, "clients"), ==, 2);
        g_dbus_connection_close_sync(c3, NULL, NULL);
}

/* SIGHUP re-reads the config; a bad file on reload keeps the old settings. */
static void test_reload(WtFixture *f, gconstpointer data) {
        pid_t pid = wt_process_pid(f->daemon->process);
        g_autofree char *log = NULL;

        wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        g_assert_true(g_file_set_contents(f->daemon->config_path, "[limits]\nmax_watches_per_client = 1\n", -1, NULL));
        g_assert_cmpint(kill(pid, SIGHUP), ==, 0);
        /* The reload is done when the daemon answers again after the signal; poll with a deadline. */
        {
                gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;
                gboolean limited = FALSE;
                while (!limited && g_get_monotonic_time() < deadline) {
                        g_autoptr(GError) error = NULL;
                        guint id;
                        if (!watchd_inotify_call_add_watch_sync(f->proxy2, f->dir, IN_CREATE, 0, &id, NULL, &error))
                                limited = TRUE;
                        else
                                g_usleep(2000);
                        if (limited)
                                g_assert_true(g_dbus_error_is_remote_error(error));
                }
                g_assert_true(limited);
        }
        wt_add_watch_fails(f->proxy, f->dir, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED);

        g_assert_true(g_file_set_contents(f->daemon->config_path, "[limits]\nmax_watches_per_client = 1\nbogus = 1\n",
                                          -1, NULL));
        g_assert_cmpint(kill(pid, SIGHUP), ==, 0);
        {
                gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;
                do {
                        g_free(log);
                        log = wt_daemon_log(f->daemon);
                        if (strstr(log, "keeping the old settings"))
                                break;
                        g_usleep(2000);
                } while (g_get_monotonic_time() < deadline);
        }
        g_assert_nonnull(strstr(log, "watchd.conf:3: unknown key 'bogus' in section [limits]; keeping the old settings"));
        wt_add_watch_fails(f->proxy, f->dir, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED);
}

/* The systemd protocol: READY=1, WATCHDOG=1 pings, RELOADING=1 on SIGHUP, STOPPING=1 on SIGTERM. */
static gboolean notify_await(GSocket *sock, const char *want, GString *seen) {
        gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;

        while (g_get_monotonic_time() < deadline) {
                char buf[4096];
                gssize n;

                if (!g_socket_condition_timed_wait(sock, G_IO_IN, deadline - g_get_monotonic_time(), NULL, NULL))
                        break;
                n = g_socket_receive(sock, buf, sizeof(buf) - 1, NULL, NULL);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                g_string_append_printf(seen, "[%s]", buf);
                {
                        g_auto(GStrv) lines = g_strsplit(buf, "\n", -1);
                        if (g_strv_contains((const char *const *) lines, want))
                                return TRUE;
                }
        }
        return FALSE;
}

static void test_sd_notify(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GSocket) sock = NULL;
        g_autoptr(GSocketAddress) addr = NULL;
        g_autoptr(GString) seen = g_string_new("");
        g_autofree char *path = NULL;
        WtBus *bus = wt_bus_start();
        WtDaemon *d;
        pid_t pid;

        path = g_build_filename(bus->dir, "notify", NULL);
        sock = g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_DATAGRAM, G_SOCKET_PROTOCOL_DEFAULT, &error);
        g_assert_no_error(error);
        addr = g_unix_socket_address_new(path);
        g_assert_true(g_socket_bind(sock, addr, TRUE, &error));

        g_setenv("NOTIFY_SOCKET", path, TRUE);
        g_setenv("WATCHDOG_USEC", "200000", TRUE);
        d = wt_daemon_start(bus, NULL);
        g_unsetenv("NOTIFY_SOCKET");
        g_unsetenv("WATCHDOG_USEC");
        pid = (pid_t) g_ascii_strtoll(g_subprocess_get_identifier(d->process), NULL, 10);

        g_assert_true(notify_await(sock, "READY=1", seen));
        g_assert_true(notify_await(sock, "WATCHDOG=1", seen));
        g_assert_cmpint(kill(pid, SIGHUP), ==, 0);
        g_assert_true(notify_await(sock, "RELOADING=1", seen));
        g_assert_true(notify_await(sock, "READY=1", seen));
        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        if (!notify_await(sock, "STOPPING=1", seen))
                g_error("no STOPPING=1; seen: %s", seen->str);
        g_assert_cmpint(wt_daemon_stop(d), ==, 0);
        wt_bus_stop(bus);
}

/* backend=auto with something that is not an inotify device: the syscalls, and the log says why. */
static void test_backend_auto(void) {
        const char *const args[] = { "--backend", "auto", NULL }; /* after the harness's --backend syscall */
        WtBus *bus = wt_bus_start();
        WtDaemon *d = wt_daemon_start_full(bus, "[daemon]\ndevice = /dev/null\n", args);
        g_autoptr(GDBusConnection) c = wt_connect(bus);
        g_autoptr(WatchdInotify) p = wt_proxy(c);
        g_autofree char *log = NULL;

        g_assert_cmpstr(watchd_inotify_get_backend(p), ==, "syscall");
        log = wt_daemon_log(d);
        g_assert_nonnull(strstr(log, "Cannot use '/dev/null'"));
        g_assert_nonnull(strstr(log, "Using the syscall backend"));
        g_dbus_connection_close_sync(c, NULL, NULL);
        g_assert_cmpint(wt_daemon_stop(d), ==, 0);
        wt_bus_stop(bus);
}

static void on_exited(GObject *src, GAsyncResult *res, gpointer data) {
        (void) g_subprocess_wait_finish(G_SUBPROCESS(src), res, NULL);
        *(gboolean *) data = TRUE;
}

/* The bus goes away: watchd exits (systemd restarts it) instead of serving no one. */
static void test_bus_gone(void) {
        WtBus *bus = wt_bus_start();
        WtDaemon *d = wt_daemon_start(bus, NULL);
        gboolean exited = FALSE;

        g_subprocess_wait_async(d->process, NULL, on_exited, &exited);
        g_subprocess_send_signal(bus->process, SIGTERM);
        g_assert_true(wt_await_flag(&exited, TIMEOUT_MS));
        g_assert_false(g_subprocess_get_if_signaled(d->process));
        g_assert_cmpint(g_subprocess_get_exit_status(d->process), !=, 0);
        (void) wt_daemon_stop(d);
        wt_bus_stop(bus);
}

/* ---------------------------------------------------------------- command line */

static int run_watchd(const char *const *argv, char **ret_stderr) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GSubprocess) p = NULL;
        g_autoptr(GBytes) err = NULL;

        p = g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDERR_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
        g_assert_no_error(error);
        g_subprocess_communicate(p, NULL, NULL, NULL, &err, &error);
        g_assert_no_error(error);
        *ret_stderr = g_strndup(g_bytes_get_data(err, NULL), g_bytes_get_size(err));
        return g_subprocess_get_exit_status(p);
}

static void test_command_line(void) {
        g_autoptr(GError) error = NULL;
        g_autofree char *dir = g_dir_make_tmp("watchd-cmdline-XXXXXX", &error);
        g_autofree char *conf = g_build_filename(dir, "bad.conf", NULL);
        g_autofree char *err = NULL, *conf2 = g_build_filename(dir, "broadcast.conf", NULL);
        const char *exe = wt_watchd_path();
        int rc;

        g_assert_true(
                g_file_set_contents(conf, "[daemon]\nbackend = syscall\n[events]\nbatch_max_events = 0\n", -1, NULL));
        {
                const char *argv[] = { exe, "--config", conf, "--address", "unix:path=/nonexistent", NULL };
                g_autofree char *want = g_strdup_printf("%s:4: batch_max_events: 0 is out of range (1-65536)", conf);
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, ==, 78);
                g_assert_nonnull(strstr(err, want));
                g_clear_pointer(&err, g_free);
        }
        g_assert_true(g_file_set_contents(conf2, "[events]\ndelivery = broadcast\n", -1, NULL));
        {
                const char *argv[] = { exe, "--config", conf2, NULL }; /* the system bus */
                g_autofree char *want = g_strdup_printf("%s:2: delivery=broadcast is not allowed on the system bus",
                                                        conf2);
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, ==, 78);
                g_assert_nonnull(strstr(err, want));
                g_clear_pointer(&err, g_free);
        }
        {
                const char *argv[] = { exe, "--bogus", NULL };
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, !=, 0);
                g_clear_pointer(&err, g_free);
        }
        {
                /* --backend device where there is no device: a clear message, exit 1 */
                const char *argv2[] = { exe,      "--config",  "/nonexistent",           "--backend",
                                        "device", "--address", "unix:path=/nonexistent", NULL };
                g_autofree char *err2 = NULL;
                rc = run_watchd(argv2, &err2);
                g_assert_cmpint(rc, ==, 1);
                g_assert_nonnull(strstr(err2, "Failed to open '/dev/inotify'"));
        }
        {
                const char *argv[] = { exe, "--backend", "kernel", NULL };
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, ==, 1);
                g_assert_nonnull(strstr(err, "'kernel' is not one of auto, device, syscall"));
                g_clear_pointer(&err, g_free);
        }
        {
                const char *argv[] = { exe, "--version", NULL };
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, ==, 0);
                g_clear_pointer(&err, g_free);
        }
        {
                const char *argv[] = { exe, "--help", NULL };
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, ==, 0);
                g_clear_pointer(&err, g_free);
        }
        g_unlink(conf);
        g_unlink(conf2);
        g_rmdir(dir);
}

/* A second watchd on the same bus exits with a clear message: the name is taken. */
static void test_name_taken(WtFixture *f, gconstpointer data) {
        g_autofree char *err = NULL;
        const char *argv[] = { wt_watchd_path(),       "--address", f->bus->address, "--config",
                               f->daemon->config_path, "--backend", "syscall",       NULL };
        int rc;

        rc = run_watchd(argv, &err);
        g_assert_cmpint(rc, ==, 1);
        g_assert_nonnull(strstr(err, "The name org.example.Inotify is already taken"));
        assert_responsive(f->proxy);
}

/* ---------------------------------------------------------------- helpers in other processes */

/* Runs this test program again as a helper (--helper ARGS...), as nobody if
 * as_nobody. Returns NULL, the test skipped saying why, if nobody cannot
 * run it here. */
static GSubprocess *spawn_helper(WtFixture *f, gboolean as_nobody, GDataInputStream **ret_out, const char *const *args) {
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE);
        g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GError) error = NULL;
        g_autofree char *self = g_file_read_link("/proc/self/exe", &error);
        GSubprocess *p;

        g_assert_no_error(error);
        if (as_nobody) {
                /* A copy nobody can reach, wherever the build tree is. */
                char *copy = wt_launcher_as_nobody(l, f->bus, self, &error);

                if (!copy) {
                        g_test_skip(error->message);
                        return NULL;
                }
                g_ptr_array_add(argv, copy);
        } else {
                g_subprocess_launcher_set_child_setup(l, wt_child_die_with_parent, NULL, NULL);
                g_ptr_array_add(argv, g_steal_pointer(&self));
        }
        g_ptr_array_add(argv, g_strdup("--helper"));
        for (size_t i = 0; args[i]; i++)
                g_ptr_array_add(argv, g_strdup(args[i]));
        g_ptr_array_add(argv, NULL);
        p = g_subprocess_launcher_spawnv(l, (const char *const *) argv->pdata, &error);
        g_assert_no_error(error);
        *ret_out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(p));
        return p;
}

static char *read_line(GDataInputStream *in) {
        g_autoptr(GError) error = NULL;
        char *l = g_data_input_stream_read_line(in, NULL, NULL, &error);
        g_assert_no_error(error);
        g_assert_nonnull(l);
        return l;
}

/* A client killed with SIGKILL loses its subscriptions; the kernel watch goes with the last. */
static void test_sigkill(WtFixture *f, gconstpointer data) {
        g_autoptr(GDataInputStream) out = NULL;
        g_autoptr(GSubprocess) p = NULL;
        g_autofree char *line = NULL, *file = path_in(f, "held");
        const char *args[] = { "hold", f->bus->address, f->dir, file, NULL };

        wt_touch(file);
        wt_add_watch(f->proxy, f->dir, IN_DELETE, 0, NULL); /* shares the helper's directory watch */
        p = spawn_helper(f, FALSE, &out, args);
        line = read_line(out);
        g_assert_true(g_str_has_prefix(line, "id "));
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 3);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 2);
        g_assert_cmpuint(wt_stat(f->proxy, "clients"), ==, 2);

        g_subprocess_force_exit(p); /* SIGKILL */
        g_assert_true(g_subprocess_wait(p, NULL, NULL));
        g_assert_true(g_subprocess_get_if_signaled(p));
        /* Its two subscriptions go; the file's kernel watch goes, the shared directory's stays. */
        g_assert_true(wt_await_stat(f->proxy, "subscriptions", 1, TIMEOUT_MS));
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 1, TIMEOUT_MS));
        g_assert_cmpuint(wt_stat(f->proxy, "clients"), ==, 1);
}

/* A client running as nobody: AccessDenied on a root-only directory, only its
 * own events, and a RECURSIVE subscription that does not enter what nobody
 * may not read. */
static void test_nobody(WtFixture *f, gconstpointer data) {
        g_autofree char *private = path_in(f, "private"), *shared = path_in(f, "shared");
        g_autofree char *secret = path_in(f, "shared/secret"), *s_file = path_in(f, "shared/secret/s");
        g_autofree char *o_file = path_in(f, "shared/open/o");
        g_autofree char *x = NULL, *y = NULL, *done = NULL, *line = NULL, *want = NULL;
        g_autoptr(GDataInputStream) out = NULL;
        g_autoptr(GSubprocess) p = NULL;
        const char *args[] = { "nobody", f->bus->address, private, shared, NULL };
        guint32 root_id, nobody_id = 0;
        guint n_recs = 0;

        if (geteuid() != 0) {
                g_test_skip("needs root to run a client as nobody");
                return;
        }
        g_assert_cmpint(g_mkdir(private, 0700), ==, 0);
        g_assert_cmpint(g_mkdir(shared, 0755), ==, 0);
        mkdir_p(f, "shared/open");
        g_assert_cmpint(g_mkdir(secret, 0700), ==, 0);
        root_id = wt_add_watch(f->proxy, shared, IN_CREATE, 0, NULL);
        wt_add_watch(f->proxy, private, IN_CREATE, 0, NULL);

        p = spawn_helper(f, TRUE, &out, args);
        if (!p)
                return;
        line = read_line(out);
        g_assert_cmpstr(line, ==, "private " WATCHD_ERROR_ACCESS_DENIED);
        g_free(line);
        line = read_line(out);
        g_assert_true(g_str_has_prefix(line, "id "));
        nobody_id = (guint32) g_ascii_strtoull(line + 3, NULL, 10);
        g_assert_cmpuint(nobody_id, !=, root_id);
        /* shared and private for root; shared (the same) and shared/open for nobody; never shared/secret. */
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 3);

        x = g_build_filename(shared, "x", NULL);
        y = g_build_filename(private, "y", NULL);
        done = g_build_filename(shared, "done", NULL);
        wt_touch(y);      /* root's only */
        wt_touch(x);      /* both */
        wt_touch(s_file); /* inside what nobody may not read */
        wt_touch(o_file); /* inside nobody's tree */
        wt_touch(done);
        wt_await_record(&f->a, done, IN_CREATE, TIMEOUT_MS);
        wt_await_record(&f->a, y, IN_CREATE, TIMEOUT_MS);

        /* The helper prints what it received: only its own id, never root's records. */
        for (;;) {
                g_free(line);
                line = read_line(out);
                if (strcmp(line, "end") == 0)
                        break;
                want = g_strdup_printf("rec %u ", nobody_id);
                g_assert_true(g_str_has_prefix(line, want));
                g_clear_pointer(&want, g_free);
                g_assert_null(strstr(line, "private"));
                g_assert_null(strstr(line, "secret"));
                n_recs++;
        }
        g_assert_cmpuint(n_recs, ==, 3); /* x, open/o and done */
        g_assert_true(g_subprocess_wait_check(p, NULL, NULL));
}

static void helper_on_events(WatchdInotify *p, GVariant *events, gpointer data) {
        gboolean *done = data;
        GVariantIter it;
        guint32 id, mask, cookie;
        const char *path, *new_path;

        g_variant_iter_init(&it, events);
        while (g_variant_iter_next(&it, "(uuu&s&s)", &id, &mask, &cookie, &path, &new_path)) {
                printf("rec %u %s\n", id, path);
                if (g_str_has_suffix(path, "/done"))
                        *done = TRUE;
        }
}

static int helper_main(int argc, char *argv[]) {
        g_autoptr(GDBusConnection) c = NULL;
        g_autoptr(WatchdInotify) p = NULL;
        g_autoptr(GError) error = NULL;
        WtBus bus = {};
        guint id;

        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argc < 4)
                return 2;
        bus.address = argv[3];
        c = wt_connect(&bus);
        p = wt_proxy(c);

        if (strcmp(argv[2], "hold") == 0) {
                id = wt_add_watch(p, argv[4], IN_CREATE, 0, NULL);
                wt_add_watch(p, argv[5], IN_MODIFY, 0, NULL); /* and a kernel watch of its own */
                printf("id %u\n", id);
                for (;;)
                        pause();
        }
        if (strcmp(argv[2], "nobody") == 0) {
                gboolean done = FALSE;
                g_autofree char *name = NULL;

                g_assert_false(watchd_inotify_call_add_watch_sync(p, argv[4], IN_CREATE, 0, &id, NULL, &error));
                name = g_dbus_error_get_remote_error(error);
                printf("private %s\n", name);
                g_signal_connect(p, "events", G_CALLBACK(helper_on_events), &done);
                id = wt_add_watch(p, argv[5], IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
                printf("id %u\n", id);
                if (!wt_await_flag(&done, TIMEOUT_MS))
                        return 1;
                printf("end\n");
                return 0;
        }
        return 2;
}

int main(int argc, char *argv[]) {
        if (argc > 1 && strcmp(argv[1], "--helper") == 0)
                return helper_main(argc, argv);

        g_test_init(&argc, &argv, NULL);

        WT_CASE("/dbus/introspection", NULL, test_introspection);
        WT_CASE("/dbus/properties-and-stats", NULL, test_properties_and_stats);
        WT_CASE("/dbus/events", NULL, test_events);
        WT_CASE("/dbus/batching", "[events]\nbatch_max_events = 8\n", test_batching);
        WT_CASE("/dbus/coalescing", NULL, test_coalescing);
        WT_CASE("/dbus/rename", NULL, test_rename);
        WT_CASE("/dbus/rename-timeout", NULL, test_rename_timeout);
        WT_CASE("/dbus/rename-followed", NULL, test_rename_followed);
        WT_CASE("/dbus/remove-and-list", NULL, test_remove_and_list);
        WT_CASE("/dbus/bad-input", NULL, test_bad_input);
        WT_CASE("/dbus/missing-path", NULL, test_missing_path);
        WT_CASE("/dbus/missing-path-moved", NULL, test_missing_path_moved);
        WT_CASE("/dbus/missing-path-ancestor-renamed", NULL, test_missing_path_ancestor_renamed);
        WT_CASE("/dbus/add-watch-fd", NULL, test_add_watch_fd);
        WT_CASE("/dbus/no-self-events", NULL, test_no_self_events);
        WT_CASE("/dbus/no-self-scan-events", NULL, test_no_self_scan_events);
        WT_CASE("/dbus/self-scan-user-read", NULL, test_self_scan_user_read);
        WT_CASE("/dbus/no-self-walk-events", NULL, test_no_self_walk_events);
        WT_CASE("/dbus/recursive", NULL, test_recursive);
        WT_CASE("/dbus/recursive-mkdir-p", NULL, test_recursive_mkdir_p);
        WT_CASE("/dbus/recursive-burst", "[limits]\nmax_pending_events_per_client = 200000\n", test_recursive_burst);
        WT_CASE("/dbus/recursive-limit", "[limits]\nmax_watches_per_client = 3\n", test_recursive_limit);
        WT_CASE("/dbus/recursive-new-big", NULL, test_recursive_new_big);
        WT_CASE("/dbus/recursive-new-big-delete", NULL, test_recursive_new_big_delete);
        WT_CASE("/dbus/recursive-rename-race", NULL, test_recursive_rename_race);
        WT_CASE("/dbus/recursive-stale-parent", NULL, test_recursive_stale_parent);
        WT_CASE("/dbus/recursive-walk-race", NULL, test_recursive_walk_race);
        WT_CASE("/dbus/recursive-walk-rename", NULL, test_recursive_walk_rename);
        WT_CASE("/dbus/recursive-rename-big", NULL, test_recursive_rename_big);
        /* Their walks, under valgrind too, may take longer than the default add_watch_timeout_ms. */
        WT_CASE("/dbus/recursive-big",
                "[limits]\nmax_watches_per_client = 100000\nmax_watches_per_user = 200000\nadd_watch_timeout_ms = 600000\n",
                test_recursive_big);
        WT_CASE("/dbus/recursive-deep",
                "[daemon]\nlog_level = debug\n[limits]\nmax_watches_per_client = 100000\nmax_watches_per_user = "
                "200000\nadd_watch_timeout_ms = 600000\n",
                test_recursive_deep);
        WT_CASE("/dbus/recursive-exit",
                "[limits]\nmax_watches_per_client = 100000\nmax_watches_per_user = 200000\nadd_watch_timeout_ms = 600000\n",
                test_recursive_exit);
        WT_CASE("/dbus/recursive-past-bound",
                "[limits]\nmax_watches_per_client = 100000\nmax_watches_per_user = 200000\nadd_watch_timeout_ms = 200\n",
                test_recursive_past_bound);
        WT_CASE("/dbus/recursive-big-limit",
                "[limits]\nmax_watches_per_client = 20000\nadd_watch_timeout_ms = 600000\n", test_recursive_big_limit);
        WT_CASE("/dbus/oneshot", NULL, test_oneshot);
        WT_CASE("/dbus/deleted", NULL, test_deleted);
        WT_CASE("/dbus/unmounted", NULL, test_unmounted);
        WT_CASE("/dbus/backlog-overflow", "[limits]\nmax_pending_events_per_client = 16\n", test_backlog_overflow);
        WT_CASE("/dbus/kernel-overflow", NULL, test_kernel_overflow);
        WT_CASE("/dbus/kernel-overflow-pending", NULL, test_kernel_overflow_pending);
        WT_CASE("/dbus/kernel-overflow-recursive", NULL, test_kernel_overflow_recursive);
        WT_CASE("/dbus/unicast", NULL, test_unicast);
        WT_CASE("/dbus/broadcast", "[events]\ndelivery = broadcast\n", test_broadcast);
        WT_CASE("/dbus/limits",
                "[limits]\nmax_watches_per_client = 3\nmax_watches_per_user = 5\nmax_clients_per_user = 2\n",
                test_limits);
        WT_CASE("/dbus/flood", "[limits]\nmax_watches_per_client = 8192\n", test_flood);
        WT_CASE("/dbus/reload", NULL, test_reload);
        WT_CASE("/dbus/name-taken", NULL, test_name_taken);
        WT_CASE("/dbus/sigkill", NULL, test_sigkill);
        WT_CASE("/dbus/nobody", NULL, test_nobody);
        WT_CASE_FUNC("/dbus/command-line", test_command_line);
        WT_CASE_FUNC("/dbus/sd-notify", test_sd_notify);
        WT_CASE_FUNC("/dbus/backend-auto", test_backend_auto);
        WT_CASE_FUNC("/dbus/bus-gone", test_bus_gone);

        return g_test_run();
}
