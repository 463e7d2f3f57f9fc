/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-dbus - the org.example.Inotify API against a real watchd on a
 * private dbus-daemon, with the syscall backend and GIO clients generated
 * from data/org.example.Inotify.xml: its calls and what they report on
 * plain watches (records, batches, renames, pending paths, removals,
 * overflows)
 *
 * Each case starts its own bus and daemon (about 50 ms; the fixture of
 * wt-fixture.h), so no case sees another's state, and each is a meson test
 * of its own. Events are awaited, never slept for: a case iterates the main
 * context until the record it expects arrives or a deadline passes.
 *
 * The other /dbus/ cases are programs of their own on the same fixture:
 * test-recursive.c (RECURSIVE subscriptions as their trees change),
 * test-walks.c (the daemon's own reads: new trees scanned, big trees
 * walked, and no one told of them) and test-daemon.c (who hears a client's
 * signals, a flood and the limits, the daemon as a service, clients in
 * other processes).
 */

#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watchd-api.h"
#include "wt-fixture.h"

#define TIMEOUT_MS 5000

/* ---------------------------------------------------------------- helpers */

/* Appends a line to path: IN_MODIFY. */
static void append(const char *path) {
        FILE *fp = fopen(path, "a");

        g_assert_nonnull(fp);
        fputs("x\n", fp);
        g_assert_cmpint(fclose(fp), ==, 0);
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
        g_autofree char *a = wt_fixture_path(f, "a"), *sub = wt_fixture_path(f, "sub");
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
        g_autofree char *last = wt_fixture_path(f, "f-49");
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
        g_autofree char *a = wt_fixture_path(f, "a");
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
        g_autofree char *d1 = wt_fixture_path(f, "d1"), *d2 = wt_fixture_path(f, "d2"), *out = wt_fixture_path(f, "out");
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
        g_autofree char *p = wt_fixture_path(f, "p"), *q = wt_fixture_path(f, "q"), *d = wt_fixture_path(f, "p/d"),
                        *e = wt_fixture_path(f, "p/e");
        g_autofree char *g = wt_fixture_path(f, "q/g"), *ef = wt_fixture_path(f, "p/e/f"),
                        *gh = wt_fixture_path(f, "q/g/h");
        g_autoptr(GVariant) list = NULL;
        const char *listed = NULL;
        guint32 id, mask, flags;

        wt_fixture_mkdir_p(f, "p/d");
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
        g_autofree char *in = wt_fixture_path(f, "in"), *out = wt_fixture_path(f, "out");
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
        g_autofree char *file = wt_fixture_path(f, "a/b/c/file"), *c = wt_fixture_path(f, "a/b/c"),
                        *other = wt_fixture_path(f, "x/y");
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

        wt_fixture_mkdir_p(f, "a/b/c");
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
        g_autofree char *staging = wt_fixture_path(f, "staging"), *m = wt_fixture_path(f, "m"),
                        *file = wt_fixture_path(f, "m/n/f");
        g_autofree char *staged = wt_fixture_path(f, "staging/n/f");
        g_autofree char *gone = wt_fixture_path(f, "gone"), *under = wt_fixture_path(f, "gone/x/y"), *want = NULL;
        g_autoptr(GError) error = NULL;
        guint64 before = wt_stat(f->proxy, "kernel_watches");
        guint32 id, id2;
        FILE *fp;

        id = wt_add_watch(f->proxy, file, IN_MODIFY, 0, NULL);
        wt_add_watch(f->proxy2, f->dir, IN_MOVED_TO, 0, NULL);
        wt_fixture_mkdir_p(f, "staging/n");
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
        wt_fixture_mkdir_p(f, "gone/x");
        {
                /* Another client on gone/x: once it hears of the creation, the
                 * daemon has placed id2 (the kernel queue is in order). */
                g_autofree char *x = wt_fixture_path(f, "gone/x");

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
        g_autofree char *p = wt_fixture_path(f, "p"), *old = wt_fixture_path(f, "p-old"),
                        *file = wt_fixture_path(f, "p/q/r/file");
        g_autofree char *r = wt_fixture_path(f, "p/q/r");
        guint32 id;

        wt_fixture_mkdir_p(f, "p/q");
        id = wt_add_watch(f->proxy, file, IN_MODIFY, 0, NULL); /* deepest existing: p/q */
        g_assert_cmpint(rename(p, old), ==, 0);
        wt_fixture_mkdir_p(f, "p/q/r");
        wt_add_watch(f->proxy2, r, IN_CREATE, 0, NULL); /* a sync point, as in test_missing_path_moved */
        wt_touch(file);
        wt_await_record(&f->b, file, IN_CREATE, TIMEOUT_MS);
        append(file);
        g_assert_cmpuint(wt_await_record(&f->a, file, IN_MODIFY, TIMEOUT_MS)->id, ==, id);
        g_assert_cmpuint(f->a.removed->len, ==, 0);
}

static void test_bad_input(WtFixture *f, gconstpointer data) {
        g_autofree char *file = wt_fixture_path(f, "file"), *fifo = wt_fixture_path(f, "fifo"),
                        *link = wt_fixture_path(f, "link");
        g_autofree char *loop1 = wt_fixture_path(f, "loop1"), *loop2 = wt_fixture_path(f, "loop2");
        g_autofree char *missing = wt_fixture_path(f, "file/missing");
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
        wt_assert_responsive(f->proxy2);

        /* What does work: a symlink followed, .. resolved. */
        wt_add_watch(f->proxy, link, IN_MODIFY, 0, NULL);
        {
                g_autofree char *up = g_strdup_printf("%s/../files", f->dir);
                wt_add_watch(f->proxy, up, IN_CREATE, 0, NULL);
        }
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 2);
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
        g_autofree char *a = wt_fixture_path(f, "a"), *file = wt_fixture_path(f, "file");
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
        wt_assert_responsive(f->proxy2);
}

static void test_oneshot(WtFixture *f, gconstpointer data) {
        g_autofree char *a = wt_fixture_path(f, "a"), *b = wt_fixture_path(f, "b"), *want = NULL;
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
        g_autofree char *d = wt_fixture_path(f, "gone"), *want = NULL;
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
        g_autofree char *mnt = wt_fixture_path(f, "mnt"), *sub = wt_fixture_path(f, "mnt/sub");
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
        g_autofree char *busy = wt_fixture_path(f, "busy"), *calm = wt_fixture_path(f, "calm"), *c1 = NULL;
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
        g_autofree char *d1 = wt_fixture_path(f, "d1"), *d2 = wt_fixture_path(f, "d2");
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
        g_autofree char *d1 = wt_fixture_path(f, "d1"), *a = wt_fixture_path(f, "a"), *file = wt_fixture_path(f, "a/f");
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
        g_autofree char *d1 = wt_fixture_path(f, "d1"), *tree = wt_fixture_path(f, "t"), *n = wt_fixture_path(f, "t/n"),
                        *nf = wt_fixture_path(f, "t/n/f");
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

int main(int argc, char *argv[]) {
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
        WT_CASE("/dbus/oneshot", NULL, test_oneshot);
        WT_CASE("/dbus/deleted", NULL, test_deleted);
        WT_CASE("/dbus/unmounted", NULL, test_unmounted);
        WT_CASE("/dbus/backlog-overflow", "[limits]\nmax_pending_events_per_client = 16\n", test_backlog_overflow);
        WT_CASE("/dbus/kernel-overflow", NULL, test_kernel_overflow);
        WT_CASE("/dbus/kernel-overflow-pending", NULL, test_kernel_overflow_pending);
        WT_CASE("/dbus/kernel-overflow-recursive", NULL, test_kernel_overflow_recursive);

        return g_test_run();
}
