/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-walks - the daemon's own reads of directories, against a real
 * watchd: a new tree scanned past its first slice, big trees walked by
 * AddWatch in workers (every directory watched, few fds open, other clients
 * answered meanwhile, races with mkdir and rename, the time bound, the
 * limit, a stop during the walk), and none of those reads, nor a watch's
 * placement, reported to anyone
 *
 * /dbus/ cases split out of test-dbus.c, on its fixture (wt-fixture.h); the
 * big trees are made on tmpfs (wt_fixture_fast_dir()). RECURSIVE
 * subscriptions as their trees change are test-recursive.c's.
 */

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watchd-api.h"
#include "wt-fixture.h"

#define TIMEOUT_MS 5000

/* ---------------------------------------------------------------- the daemon's own reads, no one's events */

/* The daemon does not report itself: placing a watch (the first on an inode,
 * or one more that widens the kernel mask) opens nothing, so neither the new
 * subscriber nor the inode's existing ones get IN_OPEN/IN_ACCESS/
 * IN_CLOSE_NOWRITE for it (it used to open the path for reading and close it). */
static void test_no_self_events(WtFixture *f, gconstpointer data) {
        g_autofree char *file = wt_fixture_path(f, "file"), *marker = wt_fixture_path(f, "marker");
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
        g_autofree char *t = wt_fixture_path(f, "t"), *a = wt_fixture_path(f, "t/a"), *ab = wt_fixture_path(f, "t/a/b");
        g_autofree char *abc = wt_fixture_path(f, "t/a/b/c"), *abcf = wt_fixture_path(f, "t/a/b/c/f");
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
        g_autofree char *t = wt_fixture_path(f, "t"), *d = wt_fixture_path(f, "t/d"), *x = wt_fixture_path(f, "t/x");
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
        g_autofree char *t = wt_fixture_path(f, "t"), *a = wt_fixture_path(f, "t/a"), *m = wt_fixture_path(f, "t/m");
        const guint32 reads = IN_OPEN | IN_ACCESS | IN_CLOSE_NOWRITE;

        for (int i = 0; i < 5; i++)
                for (int k = 0; k < 5; k++) {
                        g_autofree char *d = g_strdup_printf("t/%c/%d", 'a' + i, k);

                        wt_fixture_mkdir_p(f, d);
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

/* ---------------------------------------------------------------- new trees scanned, big trees walked */

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
        g_autofree char *t = wt_fixture_path(f, "t"), *top = wt_fixture_path(f, "t/new");
        pid_t pid = wt_process_pid(f->daemon->process);
        guint n_top = 40, n_sub = 20;

        wt_fixture_mkdir_p(f, "t");
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
        wt_collector_assert_created_once(&f->a, want);
}

/* The same large new tree, but while the scan goes on the file of each
 * directory is deleted: a walk job may read a directory (and see the file)
 * after the loop delivered the kernel's IN_DELETE of it. What the client is
 * told must leave it knowing that no file is there: for each, no record, or
 * a last record that is IN_DELETE, never IN_CREATE after it. */
static void test_recursive_new_big_delete(WtFixture *f, gconstpointer data) {
        g_autoptr(GHashTable) last = g_hash_table_new(g_str_hash, g_str_equal);
        g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *t = wt_fixture_path(f, "t"), *top = wt_fixture_path(f, "t/new"),
                        *marker = wt_fixture_path(f, "t/marker");
        pid_t pid = wt_process_pid(f->daemon->process);
        guint n_top = 40, n_sub = 20, n_seen = 0;

        wt_fixture_mkdir_p(f, "t");
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

/* A big directory renamed inside its tree keeps its watches: nothing is
 * walked again (a walk would open every directory, which a subscription with
 * IN_OPEN sees), and records name the new place. */
static void test_recursive_rename_big(WtFixture *f, gconstpointer data) {
        g_autofree char *t = wt_fixture_path(f, "t"), *big = wt_fixture_path(f, "t/big"),
                        *big2 = wt_fixture_path(f, "t/big2");
        g_autofree char *marker = wt_fixture_path(f, "t/marker"), *deep = wt_fixture_path(f, "t/big2/d049/s019/f");
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
        h = wt_collector_create_counts(&f->a);
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

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        WT_CASE("/dbus/no-self-events", NULL, test_no_self_events);
        WT_CASE("/dbus/no-self-scan-events", NULL, test_no_self_scan_events);
        WT_CASE("/dbus/self-scan-user-read", NULL, test_self_scan_user_read);
        WT_CASE("/dbus/no-self-walk-events", NULL, test_no_self_walk_events);
        WT_CASE("/dbus/recursive-new-big", NULL, test_recursive_new_big);
        WT_CASE("/dbus/recursive-new-big-delete", NULL, test_recursive_new_big_delete);
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

        return g_test_run();
}
