/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-recursive - RECURSIVE subscriptions against a real watchd, as their
 * trees change: a kernel watch per directory, new directories followed and
 * scanned (mkdir -p, a checkout-like burst), renames followed, a directory
 * made and renamed at once, a parent whose path leads elsewhere, the limit
 * on watches
 *
 * /dbus/ cases split out of test-dbus.c, on its fixture (wt-fixture.h):
 * each starts its own bus and daemon and awaits its records, never sleeps.
 * The daemon's own scans and walks of big trees are test-walks.c's.
 */

#include <fcntl.h>
#include <glib/gstdio.h>
#include <sched.h>
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

/* ---------------------------------------------------------------- tests */

/* RECURSIVE: a kernel watch per directory, new directories followed and
 * scanned (mkdir -p then touch is seen whole), renames followed into the
 * paths, a directory moved out dropped. */
static void test_recursive(WtFixture *f, gconstpointer data) {
        g_autofree char *t = wt_fixture_path(f, "t"), *outside = wt_fixture_path(f, "outside");
        g_autofree char *abf = wt_fixture_path(f, "t/a/b/f"), *x = wt_fixture_path(f, "t/x"),
                        *xyzf = wt_fixture_path(f, "t/x/y/z/f");
        g_autofree char *x2 = wt_fixture_path(f, "t/x2"), *x2yg = wt_fixture_path(f, "t/x2/y/g"),
                        *oyh = wt_fixture_path(f, "outside/x2/y/h");
        g_autofree char *ab = wt_fixture_path(f, "t/a/b"), *ox2 = wt_fixture_path(f, "outside/x2"),
                        *tz = wt_fixture_path(f, "t/zz");
        g_autoptr(GError) error = NULL;
        const guint32 mask = IN_CREATE | IN_DELETE | IN_MOVE;
        guint32 id, plain;
        WtRecord *r;

        wt_fixture_mkdir_p(f, "t/a/b");
        g_assert_cmpint(g_mkdir(outside, 0755), ==, 0);
        id = wt_add_watch(f->proxy, t, mask, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 3); /* t, t/a, t/a/b */
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 1);
        /* Another client's plain subscription on t/a shares the watch. */
        {
                g_autofree char *a = wt_fixture_path(f, "t/a");
                plain = wt_add_watch(f->proxy2, a, IN_CREATE, 0, NULL);
        }
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 3);

        wt_touch(abf);
        r = wt_await_record(&f->a, abf, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(r->id, ==, id);

        /* mkdir -p x/y/z && touch x/y/z/f: all of it, whatever was made before its watch was placed. */
        wt_fixture_mkdir_p(f, "t/x/y/z");
        wt_touch(xyzf);
        wt_await_record(&f->a, x, IN_CREATE | IN_ISDIR, TIMEOUT_MS);
        {
                g_autofree char *y = wt_fixture_path(f, "t/x/y"), *z = wt_fixture_path(f, "t/x/y/z");
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

/* mkdir -p a/b/c/d && touch a/b/c/d/f: each of the five reported created exactly once. */
static void test_recursive_mkdir_p(WtFixture *f, gconstpointer data) {
        g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *t = wt_fixture_path(f, "t"), *marker = wt_fixture_path(f, "t/marker");

        wt_fixture_mkdir_p(f, "t");
        wt_add_watch(f->proxy, t, IN_CREATE | IN_DELETE | IN_MOVE, WATCHD_FLAG_RECURSIVE, NULL);
        for (int round = 0; round < 20; round++) {
                g_autofree char *top = g_strdup_printf("t/r%d", round);
                g_autofree char *d = g_strdup_printf("t/r%d/b/c/d", round);
                g_autofree char *dp = wt_fixture_path(f, d), *file = g_build_filename(dp, "f", NULL);

                wt_fixture_mkdir_p(f, d);
                wt_touch(file);
                g_ptr_array_add(want, wt_fixture_path(f, top));
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
        wt_collector_assert_created_once(&f->a, want);
}

/* A checkout-like burst: 1,000 directories (100 x 10) and 10,000 files, made
 * as fast as this process can. Each is reported created exactly once, or the
 * client got Overflow. */
static void test_recursive_burst(WtFixture *f, gconstpointer data) {
        g_autoptr(GPtrArray) want = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *t = wt_fixture_path(f, "t"), *marker = wt_fixture_path(f, "t/marker");
        gint64 t0;

        wt_fixture_mkdir_p(f, "t");
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
        wt_collector_assert_created_once(&f->a, want);
}

/* A directory created and renamed at once (mkdir -p a/b && touch a/b/f && mv
 * a c), 50 times: whether the daemon linked it before or after the rename,
 * what it held is reported created exactly once, under one name or the other. */
static void test_recursive_rename_race(WtFixture *f, gconstpointer data) {
        g_autofree char *t = wt_fixture_path(f, "t"), *marker = wt_fixture_path(f, "t/marker");
        g_autoptr(GHashTable) h = NULL;
        guint n_late = 0;

        wt_fixture_mkdir_p(f, "t");
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
        h = wt_collector_create_counts(&f->a);
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
        g_autofree char *t = wt_fixture_path(f, "t"), *a = wt_fixture_path(f, "t/a"),
                        *other = wt_fixture_path(f, "other");
        g_autofree char *sub = wt_fixture_path(f, "t/a/sub"), *bf = wt_fixture_path(f, "t/b/f");
        g_autofree char *sub2 = wt_fixture_path(f, "t/a/sub2"), *sub2f = wt_fixture_path(f, "t/a/sub2/f");
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

        wt_fixture_mkdir_p(f, "t/a");
        wt_fixture_mkdir_p(f, "t/b");
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
                wt_assert_responsive(o->proxy);
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

/* A RECURSIVE subscription counts a watch per directory; over the limit, all of it is undone. */
static void test_recursive_limit(WtFixture *f, gconstpointer data) {
        g_autofree char *t = wt_fixture_path(f, "t"), *small = wt_fixture_path(f, "t/a");

        wt_fixture_mkdir_p(f, "t/a/b");
        wt_fixture_mkdir_p(f, "t/c");
        wt_add_watch_fails(f->proxy, t, IN_CREATE, 1, WATCHD_ERROR_LIMITS_EXCEEDED); /* 4 directories, limit 3 */
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 0);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 0);
        wt_add_watch(f->proxy, small, IN_CREATE, 1, NULL); /* 2 directories */
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 2);
        wt_add_watch(f->proxy, t, IN_CREATE, 0, NULL);
        wt_add_watch_fails(f->proxy, t, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        WT_CASE("/dbus/recursive", NULL, test_recursive);
        WT_CASE("/dbus/recursive-mkdir-p", NULL, test_recursive_mkdir_p);
        WT_CASE("/dbus/recursive-burst", "[limits]\nmax_pending_events_per_client = 200000\n", test_recursive_burst);
        WT_CASE("/dbus/recursive-limit", "[limits]\nmax_watches_per_client = 3\n", test_recursive_limit);
        WT_CASE("/dbus/recursive-rename-race", NULL, test_recursive_rename_race);
        WT_CASE("/dbus/recursive-stale-parent", NULL, test_recursive_stale_parent);

        return g_test_run();
}
