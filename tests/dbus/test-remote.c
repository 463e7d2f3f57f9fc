/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-remote - a FUSE file system polled for the changes the kernel cannot see
 *
 * Each case mounts bindfs over a directory of its own ("back" at "mnt") and
 * runs watchd with "[poll] fuse = 1". A change made in back does not pass
 * through the FUSE mount: inotify on mnt never hears of it (as a change made
 * by another NFS client would not be heard of here). Checked:
 *
 *   capabilities    the property says "remote-polling", and not when every
 *                   [poll] interval is 0
 *   detected        ListWatches flags a subscription on mnt REMOTE and
 *                   POLLED, one with NO_POLL or of a file in mnt REMOTE
 *                   only, one on a local directory or file neither;
 *                   GetStats counts the polled one
 *   detected-off    every [poll] interval 0: REMOTE all the same
 *   no-poll         with NO_POLL a change in back is not reported: what watchd
 *                   did before polling, for every subscription
 *   backing-changes create, write, chmod, rename, delete and mkdir in back:
 *                   each reported with POLLED within the interval + 1 s
 *   local-once      the same made through mnt: reported by the kernel, at
 *                   once, without POLLED, and never again by a poll; the
 *                   poll's own reads of the directory (OPEN, ACCESS,
 *                   CLOSE_NOWRITE with ISDIR) reach no one
 *   recursive       a tree made in back (mkdir -p, a file), found level by
 *                   level; a move between two of its directories is one
 *                   record; a directory deleted is dropped
 *   budget          max_polled_dirs_per_user: AddWatch past it is refused
 *                   (LimitsExceeded, naming the key), NO_POLL is not; a tree
 *                   that grows past it gives Overflow
 *   root-gone       the watched directory removed in back: WatchRemoved "deleted"
 *   io-bounded      the system calls polling makes per interval, from GetStats:
 *                   what one read of each directory costs, no more
 *   hung            the FUSE daemon stopped (SIGSTOP) while its directory is
 *                   polled: its subscription gets Overflow once the poll has
 *                   waited past the deadline, another client's events on a
 *                   local directory and GetStats go on (figures: their
 *                   worst latency during the hang), and when the file system
 *                   answers again (SIGCONT) another Overflow, and polling
 *                   goes on
 *   hung-add        AddWatch of a path on the stopped FUSE mount: the call
 *                   waits (its open waits in a worker), another client's
 *                   GetStats and events go on, and it is answered with an
 *                   id once the file system answers
 *   hung-add-timeout  the same past add_watch_timeout_ms (1 s here): the
 *                   call is answered with Timeout while the file system is
 *                   still stopped, and when it answers nothing is
 *                   subscribed (ListWatches, kernel watches, no record)
 *   hung-prime-timeout  the open answers, the first snapshot does not (an
 *                   entry of the directory is the root of a second bindfs,
 *                   stopped): past add_watch_timeout_ms the call is answered
 *                   with Timeout, the subscription made at the open is
 *                   removed, and nothing of it comes (no record, no Overflow)
 *   hung-walk       [poll] fuse = 0 (the FUSE mount is watched with inotify
 *                   only, so a RECURSIVE walk reads it): a RECURSIVE AddWatch
 *                   of a local tree with the stopped mount inside it; the
 *                   walk's open of the mount point waits in a worker of the
 *                   mount's lane (fs_stalled), another client's GetStats
 *                   (< 1 s) and events go on, the AddWatch waits; when the
 *                   file system answers the walk ends, the AddWatch is
 *                   answered and what is made below the mount is reported
 *   hung-walk-timeout  the same past add_watch_timeout_ms (1 s here): the
 *                   AddWatch is answered with Timeout while the mount is
 *                   still stopped, its subscription removed; once the file
 *                   system answers the walk ends into nothing (no record,
 *                   no Overflow, no kernel watch of it)
 *   hung-fd-prime-timeout  hung-prime-timeout through AddWatchFd (the
 *                   descriptor opened by the test before the stop)
 *   hung-moved-in   [poll] fuse = 0: a RECURSIVE subscription of a directory
 *                   in the mount; a directory moved into it from elsewhere
 *                   in the mount while watchd is stopped (SIGSTOP), then the
 *                   FUSE daemon stopped: the open of the directory's new
 *                   parent by its path waits in a worker (fs_stalled), its
 *                   IN_MOVED_TO is delivered, another client's GetStats and
 *                   events go on; once the file system answers the directory is watched
 *                   (a file made in it is reported)
 *   hung-new-dir    [poll] fuse = 0: a RECURSIVE subscription of a directory
 *                   in the mount; a directory made in it with a file inside,
 *                   then a file beside it, while watchd is stopped: the scan
 *                   of the new directory reports its file between the two
 *                   (its parent's open in a worker holds the owner's records,
 *                   hold.h); the same with the FUSE daemon stopped before
 *                   watchd reads them: the open waits in a worker
 *                   (fs_stalled), the file beside waits for it HOLD_USEC at
 *                   most and the subscription gets Overflow, another client's
 *                   GetStats and events go on; once the file system answers
 *                   the directory is watched, its file reported, and a file
 *                   made in it later too
 *   hung-rescan     the same subscription, the kernel's queue overflowed
 *                   while the FUSE daemon is stopped: the open of the tree's
 *                   root for its walk after the overflow waits in a worker,
 *                   everyone gets Overflow and GetStats goes on; once the
 *                   file system answers, a directory whose record the
 *                   overflow lost is watched
 *   hung-pending-add  AddWatch PERSIST of a path missing below a directory
 *                   of the mount, the FUSE daemon stopped after the path's
 *                   own open (in a worker) and before the look-up that
 *                   follows it (by stopping watchd meanwhile): that look-up
 *                   waits in a worker too (its lane stalls again), another
 *                   client's GetStats and events go on, the AddWatch waits;
 *                   once the file system answers (within the bound) it is
 *                   answered with an id, and the path's file, created, is
 *                   reported
 *   hung-pending-add-timeout  the same past add_watch_timeout_ms (10 s here):
 *                   the AddWatch is answered with Timeout while the look-up
 *                   still waits, its subscription removed; when the file
 *                   system answers nothing of it is left (no record, no
 *                   Overflow, its directories unwatched)
 *   hung-pending    a PERSIST path waiting for a name that appears as a
 *                   symbolic link into the stopped FUSE mount: following it
 *                   waits in a worker (the lane stalls), another client's
 *                   GetStats goes on (figure: its worst round trip), and
 *                   once the file system answers the path is followed down
 *                   and found when it is created
 *   hung-pending-others  the same, and another client's event in a local
 *                   directory, made right after the link: it arrives well
 *                   under 0.5 s (250 ms): only the clients the probe
 *                   concerns wait for it (hold.h)
 *   hung-pending-heard  a client that hears of a file that appeared on a
 *                   pending path, before the path's chain (its probe hung
 *                   in the mount) got to its directory, waits for that
 *                   chain's probes (hold.h's bound, 0.5 s), and the path's
 *                   subscription gets Overflow; it is found and watched once
 *                   the mount answers
 *   hung-persist    [poll] fuse = 0: a PERSIST subscription of a file in
 *                   the mount, the file deleted through the mount while
 *                   watchd is stopped, then the FUSE daemon stopped: the
 *                   look-up of its path again waits in a worker (its lane
 *                   stalls), its DELETE_SELF is delivered, another client's
 *                   GetStats and events go on; once the file system answers
 *                   the file, made again, is reported created
 *
 * Without bindfs or a usable /dev/fuse every case is skipped, saying why.
 * Records are awaited, never slept for, but for the cases that show that
 * something does not come: they wait the interval and a second, then
 * check.
 */

#include <errno.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watchd-api.h"
#include "wt-fixture.h"

#define INTERVAL_MS 1000
/* The bound the issue sets: the interval and a second. */
#define LATE_MS (INTERVAL_MS + 1000)

/* How long a record that must come is awaited: LATE_MS where bounds on time
 * hold, ten times that under valgrind or the sanitizers, where they say
 * nothing of the daemon (a record that does not come fails all the same). */
static int late_ms(void) {
        return wt_timing_checked() ? LATE_MS : 10 * LATE_MS;
}

#define CONFIG              "[poll]\nfuse = 1\n"
#define CONFIG_OFF          "[poll]\nnfs = 0\ncifs = 0\nfuse = 0\n9p = 0\nafs = 0\nceph = 0\ncoda = 0\n"
#define CONFIG_BUDGET       "[poll]\nfuse = 1\nmax_polled_dirs_per_user = 2\n"
#define CONFIG_ADD_TIMEOUT  "[limits]\nadd_watch_timeout_ms = 1000\n[poll]\nfuse = 1\n"
#define CONFIG_INOTIFY      "[poll]\nfuse = 0\n"
#define CONFIG_WALK_TIMEOUT "[limits]\nadd_watch_timeout_ms = 1000\n[poll]\nfuse = 0\n"
#define CONFIG_PEND_TIMEOUT "[limits]\nadd_watch_timeout_ms = 10000\n[poll]\nfuse = 0\n"

typedef struct Fixture {
        WtFixture f;
        char *back, *mnt;
        gboolean mounted;
} Fixture;

static void setup(Fixture *x, gconstpointer config) {
        g_autofree char *bindfs = g_find_program_in_path("bindfs");
        g_autoptr(GError) error = NULL;
        int status = -1;

        wt_fixture_setup(&x->f, config);
        x->back = g_build_filename(x->f.dir, "back", NULL);
        x->mnt = g_build_filename(x->f.dir, "mnt", NULL);
        g_assert_cmpint(g_mkdir(x->back, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(x->mnt, 0755), ==, 0);
        x->mounted = bindfs && access("/dev/fuse", R_OK | W_OK) == 0 &&
                g_spawn_sync(NULL, (char *[]) { bindfs, x->back, x->mnt, NULL }, NULL, 0, NULL, NULL, NULL, NULL,
                             &status, &error) &&
                g_spawn_check_wait_status(status, NULL);
}

static void teardown(Fixture *x, gconstpointer config) {
        if (x->mounted)
                g_assert_cmpint(umount2(x->mnt, MNT_DETACH), ==, 0);
        g_free(x->back);
        g_free(x->mnt);
        wt_fixture_teardown(&x->f, config);
}

static gboolean skip_unless_mounted(Fixture *x) {
        if (!x->mounted)
                g_test_skip("no FUSE mount here: bindfs missing, or /dev/fuse unusable");
        return !x->mounted;
}

static char *in(const char *dir, const char *name) {
        return g_build_filename(dir, name, NULL);
}

static guint32 list_flags(WatchdInotify *p, guint32 id) {
        g_autoptr(GVariant) list = NULL;
        g_autoptr(GError) error = NULL;
        GVariantIter it;
        guint32 i, mask, flags;
        const char *path;

        g_assert_true(watchd_inotify_call_list_watches_sync(p, &list, NULL, &error));
        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(u&suu)", &i, &path, &mask, &flags))
                if (i == id)
                        return flags;
        g_error("ListWatches has no %u", id);
}

/* The number of records for path with all of mask's bits. */
static guint count(WtCollector *c, const char *path, guint32 mask) {
        guint n = 0;

        for (guint i = 0; i < c->records->len; i++) {
                WtRecord *r = wt_collector_record(c, i);

                if (g_str_equal(r->path, path) && (r->mask & mask) == mask)
                        n++;
        }
        return n;
}

/* Awaits a record of path with mask, which must carry POLLED, within late_ms() of t0. */
static void await_polled(Fixture *x, const char *what, gint64 t0, const char *path, guint32 mask) {
        WtRecord *r = wt_await_record(&x->f.a, path, mask, late_ms());

        g_assert_true(r->mask & WATCHD_IN_POLLED);
        g_test_message("figure: remote: %s reported %" G_GINT64_FORMAT " ms after it was made", what,
                       (g_get_monotonic_time() - t0) / 1000);
}

/* Writes text into path in place (created if need be): not g_file_set_contents(),
 * which writes a new file and renames it over. */
static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        g_assert_nonnull(f);
        g_assert_cmpint(fputs(text, f), >=, 0);
        g_assert_cmpint(fclose(f), ==, 0);
}

/* Awaits n more system calls of polling (GetStats' poll_syscalls: nothing
 * wakes the client when it grows, so it is asked every few ms), dispatching
 * the signals that come meanwhile. */
static gboolean await_polls(Fixture *x, guint64 n, int timeout_ms) {
        guint64 until = wt_stat(x->f.proxy, "poll_syscalls") + n;
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                while (g_main_context_iteration(NULL, FALSE))
                        ;
                if (wt_stat(x->f.proxy, "poll_syscalls") >= until)
                        break;
                if (g_get_monotonic_time() > deadline)
                        return FALSE;
                g_usleep(5000);
        }
        /* What the last poll sent is here too. */
        while (g_main_context_iteration(NULL, FALSE))
                ;
        return TRUE;
}

static GVariant *capabilities(Fixture *x) {
        g_autoptr(GVariant) v = NULL;
        GVariant *caps;

        v = g_dbus_connection_call_sync(x->f.conn, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, "org.freedesktop.DBus.Properties",
                                        "Get", g_variant_new("(ss)", WATCHD_INTERFACE, "Capabilities"),
                                        G_VARIANT_TYPE("(v)"), 0, 5000, NULL, NULL);
        g_assert_nonnull(v);
        g_variant_get(v, "(v)", &caps);
        return caps;
}

/* The Capabilities property says "remote-polling" while some kind is polled. */
static void test_capabilities(Fixture *x, gconstpointer data) {
        g_autoptr(GVariant) caps = capabilities(x);
        g_autofree const char **words = g_variant_get_strv(caps, NULL);

        /* The other words are issue 14's (test-glib-semantics). */
        g_assert_cmpint(g_strv_contains(words, WATCHD_CAP_REMOTE_POLLING), ==, !(data && g_str_equal(data, CONFIG_OFF)));
}

static void test_detected(Fixture *x, gconstpointer data) {
        g_autofree char *local = in(x->f.dir, "local"), *lfile = in(x->f.dir, "local/f"), *mfile = in(x->mnt, "f");
        guint32 remote_id, local_id, nopoll_id;

        if (skip_unless_mounted(x))
                return;
        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        remote_id = wt_add_watch(x->f.proxy, x->mnt, IN_CREATE, 0, NULL);
        local_id = wt_add_watch(x->f.proxy, local, IN_CREATE, 0, NULL);
        nopoll_id = wt_add_watch(x->f.proxy, x->mnt, IN_CREATE, WATCHD_FLAG_NO_POLL, NULL);

        g_assert_cmphex(list_flags(x->f.proxy, remote_id), ==, WATCHD_FLAG_REMOTE | WATCHD_FLAG_POLLED);
        g_assert_cmphex(list_flags(x->f.proxy, local_id), ==, 0);
        /* Not polled, and the client is told that this kernel does not see everything there. */
        g_assert_cmphex(list_flags(x->f.proxy, nopoll_id), ==, WATCHD_FLAG_NO_POLL | WATCHD_FLAG_REMOTE);
        g_assert_cmpuint(wt_stat(x->f.proxy, "polled_directories"), ==, 1);
        /* A file is not polled (its directory can be), but it is on a remote file system all the same. */
        g_assert_true(g_file_set_contents(mfile, "x", 1, NULL));
        g_assert_true(g_file_set_contents(lfile, "x", 1, NULL));
        g_assert_cmphex(list_flags(x->f.proxy, wt_add_watch(x->f.proxy, mfile, IN_MODIFY, 0, NULL)), ==,
                        WATCHD_FLAG_REMOTE);
        g_assert_cmphex(list_flags(x->f.proxy, wt_add_watch(x->f.proxy, lfile, IN_MODIFY, 0, NULL)), ==, 0);
        g_assert_cmpuint(wt_stat(x->f.proxy, "polled_directories"), ==, 1);

        g_assert_true(watchd_inotify_call_remove_watch_sync(x->f.proxy, remote_id, NULL, NULL));
        g_assert_true(wt_await_stat(x->f.proxy, "polled_directories", 0, 5000));
}

/* With every [poll] interval 0: nothing polled, a remote directory still flagged REMOTE. */
static void test_detected_off(Fixture *x, gconstpointer data) {
        g_autofree char *sub = in(x->mnt, "sub");
        guint32 id;

        if (skip_unless_mounted(x))
                return;
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        id = wt_add_watch(x->f.proxy, x->mnt, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmphex(list_flags(x->f.proxy, id), ==, WATCHD_FLAG_RECURSIVE | WATCHD_FLAG_REMOTE);
        g_assert_cmpuint(wt_stat(x->f.proxy, "polled_directories"), ==, 0);
        /* A subscription of the subdirectory alone is remote too. */
        id = wt_add_watch(x->f.proxy, sub, IN_CREATE, 0, NULL);
        g_assert_cmphex(list_flags(x->f.proxy, id), ==, WATCHD_FLAG_REMOTE);
}

/* What watchd did before it polled (and does with NO_POLL): the kernel does
 * not hear of a change in the backing directory, so nobody does. */
static void test_no_poll(Fixture *x, gconstpointer data) {
        g_autofree char *b = in(x->back, "made-in-back"), *m = in(x->mnt, "made-in-back");
        g_autofree char *sentinel = in(x->mnt, "sentinel");

        if (skip_unless_mounted(x))
                return;
        wt_add_watch(x->f.proxy, x->mnt, WATCHD_MASK_VALID, WATCHD_FLAG_NO_POLL, NULL);
        write_file(b, "x");
        /* Longer than a poll would take. */
        g_usleep(LATE_MS * 1000);
        wt_touch(sentinel);
        wt_await_record(&x->f.a, sentinel, IN_CREATE, 5000);
        g_assert_cmpuint(count(&x->f.a, m, 0), ==, 0);
        g_assert_cmpint(wt_collector_find(&x->f.a, m, 0), ==, -1);
}

static void test_backing_changes(Fixture *x, gconstpointer data) {
        g_autofree char *bf = in(x->back, "f"), *mf = in(x->mnt, "f");
        g_autofree char *bg = in(x->back, "g"), *mg = in(x->mnt, "g");
        g_autofree char *bd = in(x->back, "d"), *md = in(x->mnt, "d");
        g_autofree char *bold = in(x->back, "old"), *mold = in(x->mnt, "old");
        WtRecord *r;
        gint64 t0;

        if (skip_unless_mounted(x))
                return;
        write_file(bold, "old");
        wt_add_watch(x->f.proxy, x->mnt, WATCHD_MASK_VALID, 0, NULL);

        t0 = g_get_monotonic_time();
        write_file(bf, "1");
        await_polled(x, "a file created in the backing directory", t0, mf, IN_CREATE);

        t0 = g_get_monotonic_time();
        write_file(bold, "written");
        await_polled(x, "a file written", t0, mold, IN_MODIFY);

        t0 = g_get_monotonic_time();
        g_assert_cmpint(g_chmod(bold, 0600), ==, 0);
        await_polled(x, "a mode changed", t0, mold, IN_ATTRIB);

        t0 = g_get_monotonic_time();
        g_assert_cmpint(g_rename(bf, bg), ==, 0);
        r = wt_await_record(&x->f.a, mf, IN_MOVED_FROM | IN_MOVED_TO, late_ms());
        g_assert_cmpstr(r->new_path, ==, mg);
        g_assert_true(r->mask & WATCHD_IN_POLLED);
        g_test_message("figure: remote: a rename reported %" G_GINT64_FORMAT " ms after it was made",
                       (g_get_monotonic_time() - t0) / 1000);

        t0 = g_get_monotonic_time();
        g_assert_cmpint(g_mkdir(bd, 0755), ==, 0);
        await_polled(x, "a directory created", t0, md, IN_CREATE | IN_ISDIR);

        t0 = g_get_monotonic_time();
        g_assert_cmpint(g_unlink(bg), ==, 0);
        await_polled(x, "a file deleted", t0, mg, IN_DELETE);

        /* Each once. */
        g_assert_cmpuint(count(&x->f.a, mf, IN_CREATE), ==, 1);
        g_assert_cmpuint(count(&x->f.a, mg, IN_DELETE), ==, 1);
        g_assert_cmpuint(count(&x->f.a, md, IN_CREATE), ==, 1);
}

static void test_local_once(Fixture *x, gconstpointer data) {
        g_autofree char *mf = in(x->mnt, "f"), *mg = in(x->mnt, "g");

        if (skip_unless_mounted(x))
                return;
        wt_add_watch(x->f.proxy, x->mnt, WATCHD_MASK_VALID, 0, NULL);
        write_file(mf, "through the mount");
        wt_await_record(&x->f.a, mf, IN_CLOSE_WRITE, 2000);
        g_assert_cmpint(g_rename(mf, mg), ==, 0);
        wt_await_record(&x->f.a, mf, IN_MOVED_FROM | IN_MOVED_TO, 2000);
        g_assert_cmpint(g_chmod(mg, 0600), ==, 0);
        wt_await_record(&x->f.a, mg, IN_ATTRIB, 2000);

        /* A whole poll after them, and then some: a read of the directory is 6
         * calls (open, statx of it, two getdents64, a statx of each name), and
         * the one under way when the wait began may have made 5 of them. */
        g_assert_true(await_polls(x, 5 + 6 + 1, 10000));
        for (guint i = 0; i < x->f.a.records->len; i++) {
                WtRecord *r = wt_collector_record(&x->f.a, i);

                g_test_message("record: 0x%x %s %s", r->mask, r->path, r->new_path);
                g_assert_false(r->mask & WATCHD_IN_POLLED);
                /* The poller's own opens of the directory reach no one. */
                g_assert_cmpstr(r->path, !=, x->mnt);
        }
        g_assert_cmpuint(count(&x->f.a, mf, IN_CREATE), ==, 1);
        g_assert_cmpuint(count(&x->f.a, mf, IN_MOVED_FROM | IN_MOVED_TO), ==, 1);
        g_assert_cmpuint(count(&x->f.a, mg, IN_ATTRIB), ==, 1);
}

static void test_recursive(Fixture *x, gconstpointer data) {
        g_autofree char *ba = in(x->back, "a"), *bab = in(x->back, "a/b"), *babf = in(x->back, "a/b/f");
        g_autofree char *ma = in(x->mnt, "a"), *mab = in(x->mnt, "a/b"), *mabf = in(x->mnt, "a/b/f");
        g_autofree char *bag = in(x->back, "a/g"), *mag = in(x->mnt, "a/g");
        WtRecord *r;
        guint32 id;

        if (skip_unless_mounted(x))
                return;
        id = wt_add_watch(x->f.proxy, x->mnt, IN_CREATE | IN_DELETE | IN_MOVE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpint(g_mkdir_with_parents(bab, 0755), ==, 0);
        write_file(babf, "deep");
        /* a is found by a poll of mnt; b by the first read of a, f by b's. */
        await_polled(x, "a directory made in back", g_get_monotonic_time(), ma, IN_CREATE | IN_ISDIR);
        wt_await_record(&x->f.a, mab, IN_CREATE | IN_ISDIR, late_ms());
        wt_await_record(&x->f.a, mabf, IN_CREATE, late_ms());
        g_assert_cmpuint(wt_stat(x->f.proxy, "polled_directories"), ==, 3);
        g_assert_cmphex(list_flags(x->f.proxy, id), ==, WATCHD_FLAG_RECURSIVE | WATCHD_FLAG_REMOTE | WATCHD_FLAG_POLLED);

        /* From one polled directory to another of the tree: one record. */
        g_assert_cmpint(g_rename(babf, bag), ==, 0);
        r = wt_await_record(&x->f.a, mabf, IN_MOVED_FROM | IN_MOVED_TO, late_ms());
        g_assert_cmpstr(r->new_path, ==, mag);
        g_assert_true(r->mask & WATCHD_IN_POLLED);

        /* A directory gone: reported, and no longer polled. */
        g_assert_cmpint(g_rmdir(bab), ==, 0);
        wt_await_record(&x->f.a, mab, IN_DELETE | IN_ISDIR, late_ms());
        g_assert_true(wt_await_stat(x->f.proxy, "polled_directories", 2, 5000));
        g_assert_cmpuint(count(&x->f.a, mabf, IN_CREATE), ==, 1);
        g_assert_cmpuint(count(&x->f.a, ma, IN_CREATE), ==, 1);
}

static void test_budget(Fixture *x, gconstpointer data) {
        g_autofree char *bsub = in(x->back, "sub"), *msub = in(x->mnt, "sub");
        g_autofree char *bsub2 = in(x->back, "sub/deeper"), *msub2 = in(x->mnt, "sub/deeper");
        g_autoptr(GError) error = NULL;
        g_autofree char *name = NULL;
        guint32 id;

        if (skip_unless_mounted(x))
                return;
        g_assert_cmpint(g_mkdir(bsub, 0755), ==, 0);
        /* Two directories polled: mnt and sub. */
        id = wt_add_watch(x->f.proxy, x->mnt, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpuint(wt_stat(x->f.proxy, "polled_directories"), ==, 2);

        g_assert_cmpuint(wt_add_watch(x->f.proxy2, x->mnt, IN_CREATE, 0, &error), ==, 0);
        name = g_dbus_error_get_remote_error(error);
        g_assert_cmpstr(name, ==, WATCHD_ERROR_LIMITS_EXCEEDED);
        g_assert_nonnull(strstr(error->message, "max_polled_dirs_per_user"));
        g_assert_cmpuint(wt_add_watch(x->f.proxy2, x->mnt, IN_CREATE, WATCHD_FLAG_NO_POLL, NULL), >, 0);

        /* The tree grows past it: the new directory is the kernel's only, and its owner hears so. */
        g_assert_cmpint(g_mkdir(bsub2, 0755), ==, 0);
        wt_await_record(&x->f.a, msub2, IN_CREATE | IN_ISDIR, late_ms());
        g_assert_true(wt_await_overflows(&x->f.a, 1, late_ms()));
        g_assert_true(wt_collector_has_overflow_id(&x->f.a, id));
        g_assert_cmpuint(wt_stat(x->f.proxy, "polled_directories"), ==, 2);
        (void) msub;
}

static void test_root_gone(Fixture *x, gconstpointer data) {
        g_autofree char *bsub = in(x->back, "sub"), *msub = in(x->mnt, "sub");
        guint32 id;

        if (skip_unless_mounted(x))
                return;
        g_assert_cmpint(g_mkdir(bsub, 0755), ==, 0);
        id = wt_add_watch(x->f.proxy, msub, IN_CREATE, 0, NULL);
        g_assert_cmpint(g_rmdir(bsub), ==, 0);
        g_assert_true(wt_await_removed(&x->f.a, id, WATCHD_REASON_DELETED, late_ms()));
        g_assert_true(wt_await_stat(x->f.proxy, "polled_directories", 0, 5000));
}

/* GetStats' poll_syscalls over some intervals: one read of each directory
 * an interval (an open, a statx of it, two getdents64, a statx a name). */
static void test_io_bounded(Fixture *x, gconstpointer data) {
        enum {
                NAMES = 50,
                INTERVALS = 4
        };
        guint64 before, after;
        gint64 t0, elapsed_ms;
        guint64 rounds;

        if (skip_unless_mounted(x))
                return;
        for (int i = 0; i < NAMES; i++) {
                g_autofree char *name = g_strdup_printf("n%02d", i);
                g_autofree char *p = in(x->back, name);

                write_file(p, "x");
        }
        wt_add_watch(x->f.proxy, x->mnt, IN_CREATE, 0, NULL);
        /* The first read is made at once; from then on, one an interval. */
        g_assert_true(await_polls(x, 1 + 1 + 2 + NAMES, 5000));
        t0 = g_get_monotonic_time();
        before = wt_stat(x->f.proxy, "poll_syscalls");
        g_usleep(INTERVALS * INTERVAL_MS * 1000);
        after = wt_stat(x->f.proxy, "poll_syscalls");
        elapsed_ms = (g_get_monotonic_time() - t0) / 1000;
        /* Reads that began in the window: at most one an interval, and one more at its edge. */
        rounds = (guint64) elapsed_ms / INTERVAL_MS + 1;
        g_test_message("figure: remote: %" G_GUINT64_FORMAT " system calls polling %d names for %" G_GINT64_FORMAT
                       " ms (at most %" G_GUINT64_FORMAT " allowed)",
                       after - before, NAMES, elapsed_ms, rounds * (1 + 1 + 2 + NAMES));
        g_assert_cmpuint(after - before, <=, rounds * (1 + 1 + 2 + NAMES));
        /* And it polls: at least a read an interval but the edges. */
        g_assert_cmpuint(after - before, >=, (INTERVALS - 1) * (1 + 1 + 2 + NAMES));
}

static pid_t hung_pid;

static void resume_bindfs(void) {
        if (hung_pid > 0)
                (void) kill(hung_pid, SIGCONT);
}

/* The worst of n GetStats round trips of proxy, in microseconds. */
/* Stops the FUSE daemon (hung_pid): its file system stops answering. A
 * watcher resumes it when this process ends, even if a failed assertion
 * aborts it (which runs no atexit). */
static void stop_bindfs(void) {
        g_autofree char *script = g_strdup_printf("while kill -0 %d 2>/dev/null; do sleep 1; done; kill -CONT %d",
                                                  (int) getpid(), (int) hung_pid);
        g_autoptr(GError) error = NULL;

        g_assert_true(g_spawn_async(NULL, (char *[]) { (char *) "/bin/sh", (char *) "-c", script, NULL }, NULL, 0, NULL,
                                    NULL, NULL, &error));
        g_assert_cmpint(kill(hung_pid, SIGSTOP), ==, 0);
}

static gint64 worst_get_stats(WatchdInotify *proxy, int n) {
        gint64 worst = 0;

        for (int i = 0; i < n; i++) {
                gint64 t0 = g_get_monotonic_time();

                (void) wt_stat(proxy, "clients");
                worst = MAX(worst, g_get_monotonic_time() - t0);
        }
        return worst;
}

/* The worst of 20 files made in dir, each awaited in collector c's records. */
static gint64 worst_event_of_20(WtCollector *c, const char *dir) {
        gint64 worst = 0;

        for (int i = 0; i < 20; i++) {
                g_autofree char *name = g_strdup_printf("f%d", i), *path = in(dir, name);
                gint64 t0 = g_get_monotonic_time();

                wt_touch(path);
                wt_await_record(c, path, IN_CREATE, 5000);
                worst = MAX(worst, g_get_monotonic_time() - t0);
        }
        return worst;
}

static void test_hung(Fixture *x, gconstpointer data) {
        g_autofree char *local = in(x->f.dir, "local"), *before = in(x->back, "before"), *mbefore = in(x->mnt, "before");
        g_autofree char *after = in(x->back, "after"), *mafter = in(x->mnt, "after");
        gint64 worst_stats, worst_event = 0, idle_stats;
        guint32 id;

        if (skip_unless_mounted(x))
                return;
        hung_pid = wt_bindfs_pid(x->mnt);
        g_assert_cmpint(hung_pid, >, 0);
        atexit(resume_bindfs);
        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);

        id = wt_add_watch(x->f.proxy, x->mnt, IN_CREATE, 0, NULL);
        wt_add_watch(x->f.proxy2, local, IN_CREATE, 0, NULL);
        write_file(before, "polled");
        await_polled(x, "a file created before the hang", g_get_monotonic_time(), mbefore, IN_CREATE);
        idle_stats = worst_get_stats(x->f.proxy2, 20);

        /* The file system stops answering: the next poll waits in the kernel. */
        stop_bindfs();
        g_assert_true(wt_await_overflows(&x->f.a, 1, 30000));
        g_assert_true(wt_collector_has_overflow_id(&x->f.a, id));
        g_assert_cmpuint(wt_stat(x->f.proxy2, "fs_stalled"), ==, 1);

        /* Everyone else is served meanwhile: the bus and the kernel's events. */
        worst_stats = worst_get_stats(x->f.proxy2, 20);
        worst_event = worst_event_of_20(&x->f.b, local);
        g_test_message("figure: hung FUSE: GetStats round trip worst of 20 %" G_GINT64_FORMAT " us "
                       "(%" G_GINT64_FORMAT " us before the hang), another client's event worst of 20 %" G_GINT64_FORMAT
                       " us",
                       worst_stats, idle_stats, worst_event);
        /* Bounds that say "not frozen", not how fast: the daemon used to wait for the file system. */
        g_assert_cmpint(worst_stats, <, 2 * G_USEC_PER_SEC);
        g_assert_cmpint(worst_event, <, 2 * G_USEC_PER_SEC);

        /* It answers again: told, and polled as before. */
        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_overflows(&x->f.a, 2, 30000));
        g_assert_cmpuint(wt_stat(x->f.proxy2, "fs_stalled"), ==, 0);
        g_assert_cmpuint(wt_stat(x->f.proxy2, "fs_stalls"), ==, 1);
        write_file(after, "polled again");
        await_polled(x, "a file created after the hang", g_get_monotonic_time(), mafter, IN_CREATE);
}

typedef struct AsyncAdd {
        gboolean done;
        guint32 id;
        GError *error;
} AsyncAdd;

static void on_added(GObject *source, GAsyncResult *res, gpointer data) {
        AsyncAdd *a = data;

        (void) watchd_inotify_call_add_watch_finish(WATCHD_INOTIFY(source), &a->id, res, &a->error);
        a->done = TRUE;
}

/* The cases whose AddWatch opens on the stopped mount: skipped without a
 * mount, or under valgrind (tests/robustness/valgrind-dbus), where GetStats
 * timed out during the hang: the loop thread waited too. Not understood yet;
 * valgrind runs one thread at a time, and may hold its lock across a worker's
 * system call on the stopped mount. Natively and under ASan they pass. Else
 * hung_pid is the FUSE daemon, still running. */
static gboolean skip_unless_hung_open_can_run(Fixture *x) {
        if (g_getenv("WATCHD_TEST_WRAPPER") && *g_getenv("WATCHD_TEST_WRAPPER")) {
                g_test_skip("under a wrapper (valgrind) the hang stops watchd's loop too: not understood yet");
                return TRUE;
        }
        if (skip_unless_mounted(x))
                return TRUE;
        hung_pid = wt_bindfs_pid(x->mnt);
        g_assert_cmpint(hung_pid, >, 0);
        return FALSE;
}

static void test_hung_add(Fixture *x, gconstpointer data) {
        g_autofree char *local = in(x->f.dir, "local"), *fresh = in(x->back, "fresh"), *mfresh = in(x->mnt, "fresh");
        gint64 worst_stats, worst_event = 0;
        AsyncAdd add = {};

        if (skip_unless_hung_open_can_run(x))
                return;
        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(fresh, 0755), ==, 0); /* never looked up through the mount */
        wt_add_watch(x->f.proxy2, local, IN_CREATE, 0, NULL);
        stop_bindfs();

        /* Its lookup goes to the stopped FUSE daemon: the open waits. */
        watchd_inotify_call_add_watch(x->f.proxy, mfresh, IN_CREATE, 0, NULL, on_added, &add);
        worst_stats = worst_get_stats(x->f.proxy2, 20);
        worst_event = worst_event_of_20(&x->f.b, local);
        g_test_message("figure: AddWatch waiting on a hung FUSE: GetStats round trip worst of 20 %" G_GINT64_FORMAT
                       " us, another client's event worst of 20 %" G_GINT64_FORMAT " us; the AddWatch %s meanwhile",
                       worst_stats, worst_event, add.done ? "was answered" : "waited");
        g_assert_cmpint(worst_stats, <, 2 * G_USEC_PER_SEC);
        g_assert_cmpint(worst_event, <, 2 * G_USEC_PER_SEC);
        /* Answered only once the file system answers: its open did reach it. */
        g_assert_false(add.done);
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 1, 30000));

        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_flag(&add.done, 30000));
        g_assert_no_error(add.error);
        g_assert_cmpuint(add.id, >, 0);
}

/* Whether the caller holds any subscription (ListWatches). */
static guint n_listed(WatchdInotify *p) {
        g_autoptr(GVariant) list = NULL;
        g_autoptr(GError) error = NULL;

        g_assert_true(watchd_inotify_call_list_watches_sync(p, &list, NULL, &error));
        return (guint) g_variant_n_children(list);
}

/* An AddWatch(Fd) of the hung tests, started at t0, was answered Timeout
 * and left nothing listed. */
static void assert_add_timed_out(Fixture *x, AsyncAdd *add, gint64 t0, const char *what) {
        g_test_message("figure: %s, add_watch_timeout_ms = 1000, answered after %" G_GINT64_FORMAT " ms: %s", what,
                       (g_get_monotonic_time() - t0) / 1000, add->error ? add->error->message : "an id");
        g_assert_error(add->error, G_DBUS_ERROR, G_DBUS_ERROR_TIMEOUT);
        g_assert_cmpuint(n_listed(x->f.proxy), ==, 0);
}

/* The hung file system answers (SIGCONT): nothing of the subscription its
 * Timeout removed comes, no record and no Overflow, for a file made at late;
 * kernel_watches is what is left then. */
static void assert_nothing_after_timeout(Fixture *x, const char *late, guint kernel_watches) {
        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 0, 30000));
        g_assert_true(wt_await_stat(x->f.proxy2, "kernel_watches", kernel_watches, 30000));
        wt_touch(late);
        g_usleep(2 * INTERVAL_MS * 1000);
        g_assert_cmpuint(count(&x->f.a, late, IN_CREATE), ==, 0);
        g_assert_cmpuint(x->f.a.n_records, ==, 0);
        g_assert_cmpuint(x->f.a.n_overflows, ==, 0);
        g_assert_cmpuint(wt_stat(x->f.proxy2, "kernel_watches"), ==, kernel_watches);
}

static void test_hung_add_timeout(Fixture *x, gconstpointer data) {
        g_autofree char *fresh = in(x->back, "fresh"), *mfresh = in(x->mnt, "fresh");
        g_autofree char *mlate = in(mfresh, "late");
        AsyncAdd add = {};
        gint64 t0;

        if (skip_unless_hung_open_can_run(x))
                return;
        g_assert_cmpint(g_mkdir(fresh, 0755), ==, 0); /* never looked up through the mount */
        stop_bindfs();

        t0 = g_get_monotonic_time();
        watchd_inotify_call_add_watch(x->f.proxy, mfresh, IN_CREATE, 0, NULL, on_added, &add);
        g_assert_true(wt_await_flag(&add.done, 15000));
        g_test_message("figure: AddWatch on a hung FUSE with add_watch_timeout_ms = 1000 answered after %" G_GINT64_FORMAT
                       " ms: %s",
                       (g_get_monotonic_time() - t0) / 1000, add.error ? add.error->message : "an id");
        /* Answered while the file system is still stopped, with Timeout. */
        g_assert_error(add.error, G_DBUS_ERROR, G_DBUS_ERROR_TIMEOUT);
        g_assert_cmpuint(n_listed(x->f.proxy), ==, 0);

        /* The file system answers: the open returns, and its result is thrown away. */
        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 0, 30000));
        /* A later AddWatch of the same user goes through the same lane: once it is
         * answered, the open that timed out has come back and been handled. */
        {
                g_autofree char *local = in(x->f.dir, "after");
                guint32 id;

                g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
                id = wt_add_watch(x->f.proxy, local, IN_CREATE, 0, NULL);
                g_assert_cmpuint(n_listed(x->f.proxy), ==, 1);
                g_assert_cmpuint(list_flags(x->f.proxy, id) & WATCHD_FLAG_REMOTE, ==, 0);
        }
        /* Nothing of the timed-out path comes. */
        wt_touch(mlate);
        g_usleep(1500 * 1000);
        g_assert_cmpuint(count(&x->f.a, mlate, IN_CREATE), ==, 0);
}

/* Mounts a second bindfs at mnt/NAME (through the first), over a directory
 * of its own: its pid. Undone with the first (MNT_DETACH takes submounts). */
static pid_t mount_inner(Fixture *x, const char *dir, const char *name) {
        g_autofree char *bindfs = g_find_program_in_path("bindfs"), *src = in(x->f.dir, "inner-src");
        g_autofree char *at = in(dir, name);
        g_autoptr(GError) error = NULL;
        int status = -1;

        g_assert_cmpint(g_mkdir(src, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(at, 0755), ==, 0);
        g_assert_true(g_spawn_sync(NULL, (char *[]) { bindfs, src, at, NULL }, NULL, 0, NULL, NULL, NULL, NULL, &status,
                                   &error));
        g_assert_no_error(error);
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        return wt_bindfs_pid(at);
}

/* AddWatch of mnt/fresh, whose entry "inner" is the root of another bindfs,
 * stopped: the open of mnt/fresh and its statfs go to the first bindfs,
 * which answers; its first snapshot stats "inner" (AT_STATX_FORCE_SYNC
 * asks the FUSE daemon), which waits. The window between the open and the
 * first snapshot is so made deterministic: the snapshot cannot end before
 * SIGCONT. Past add_watch_timeout_ms the call is answered with Timeout,
 * and the subscription made at the open is removed, nothing of it sent. */
static void test_hung_prime_timeout(Fixture *x, gconstpointer data) {
        g_autofree char *fresh = in(x->back, "fresh"), *mfresh = in(x->mnt, "fresh");
        g_autofree char *mlate = in(mfresh, "late");
        AsyncAdd add = {};
        gint64 t0;

        if (skip_unless_hung_open_can_run(x))
                return;
        g_assert_cmpint(g_mkdir(fresh, 0755), ==, 0);
        hung_pid = mount_inner(x, mfresh, "inner");
        g_assert_cmpint(hung_pid, >, 0);
        stop_bindfs();

        t0 = g_get_monotonic_time();
        watchd_inotify_call_add_watch(x->f.proxy, mfresh, IN_CREATE, 0, NULL, on_added, &add);
        g_assert_true(wt_await_flag(&add.done, 15000));
        assert_add_timed_out(x, &add, t0, "AddWatch whose first snapshot hangs");
        g_assert_cmpuint(wt_stat(x->f.proxy2, "polled_directories"), ==, 0);

        /* The snapshot's read returns (into nothing) once the inner file system answers. */
        assert_nothing_after_timeout(x, mlate, 0);
}

static void on_added_fd(GObject *source, GAsyncResult *res, gpointer data) {
        g_autoptr(GVariant) v = NULL;
        AsyncAdd *a = data;

        v = g_dbus_proxy_call_with_unix_fd_list_finish(G_DBUS_PROXY(source), NULL, res, &a->error);
        if (v)
                g_variant_get(v, "(u)", &a->id);
        a->done = TRUE;
}

/* /remote/hung-prime-timeout through AddWatchFd: the caller opened mnt/fresh
 * itself, so nothing of the call waits in an open; the first snapshot (the
 * statx of "inner", the root of the stopped bindfs) waits. Past
 * add_watch_timeout_ms: Timeout, the subscription removed, nothing of it sent. */
static void test_hung_fd_prime_timeout(Fixture *x, gconstpointer data) {
        g_autofree char *fresh = in(x->back, "fresh"), *mfresh = in(x->mnt, "fresh");
        g_autofree char *mlate = in(mfresh, "late");
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
        AsyncAdd add = {};
        gint64 t0;
        int fd;

        if (skip_unless_hung_open_can_run(x))
                return;
        g_assert_cmpint(g_mkdir(fresh, 0755), ==, 0);
        hung_pid = mount_inner(x, mfresh, "inner");
        g_assert_cmpint(hung_pid, >, 0);
        fd = open(mfresh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(g_unix_fd_list_append(fds, fd, NULL), ==, 0);
        g_assert_cmpint(close(fd), ==, 0);
        stop_bindfs();

        t0 = g_get_monotonic_time();
        g_dbus_proxy_call_with_unix_fd_list(G_DBUS_PROXY(x->f.proxy), "AddWatchFd",
                                            g_variant_new("(huu)", 0, (guint32) IN_CREATE, 0u), G_DBUS_CALL_FLAGS_NONE,
                                            60000, fds, NULL, on_added_fd, &add);
        g_assert_true(wt_await_flag(&add.done, 15000));
        assert_add_timed_out(x, &add, t0, "AddWatchFd whose first snapshot hangs");
        g_assert_cmpuint(wt_stat(x->f.proxy2, "polled_directories"), ==, 0);
        assert_nothing_after_timeout(x, mlate, 0);
}

/* A pending path that leads into the stopped mount: the probe that follows it
 * there waits in a worker, not on the loop. */
static void test_hung_pending(Fixture *x, gconstpointer data) {
        g_autofree char *link = in(x->f.dir, "link"), *sub = in(x->back, "sub"), *msub = in(x->mnt, "sub");
        g_autofree char *pending = g_build_filename(link, "sub", "x", NULL), *mx = in(msub, "x");
        gint64 worst_stats, idle_stats;

        if (skip_unless_hung_open_can_run(x))
                return;
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0); /* never looked up through the mount */
        /* link does not exist: the path waits in x->f.dir, for "link". */
        wt_add_watch(x->f.proxy, pending, IN_CREATE, WATCHD_FLAG_PERSIST, NULL);
        idle_stats = worst_get_stats(x->f.proxy2, 20);
        stop_bindfs();

        /* "link" appears, a symbolic link to the mount: following the path
         * opens the mount's root, and that waits for the stopped FUSE daemon. */
        g_assert_cmpint(symlink(x->mnt, link), ==, 0);
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 1, 30000));
        worst_stats = worst_get_stats(x->f.proxy2, 20);
        g_test_message("figure: pending path probe waiting on a hung FUSE: GetStats round trip worst of 20 %" G_GINT64_FORMAT
                       " us (%" G_GINT64_FORMAT " us before the hang)",
                       worst_stats, idle_stats);
        /* A bound that says "not frozen": the daemon used to wait for the file system. */
        g_assert_cmpint(worst_stats, <, G_USEC_PER_SEC);
        g_assert_cmpuint(count(&x->f.a, pending, IN_CREATE), ==, 0);

        /* It answers: the probe goes on down to sub, where x is awaited, and
         * x made through the mount (the kernel hears of it) is found. */
        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 0, 30000));
        wt_touch(mx);
        wt_await_record(&x->f.a, pending, IN_CREATE, 30000);
}

/* While one user's probe waits in a worker on the stopped mount, another
 * client's records flow: only the clients the probe concerns wait for it
 * (hold.h). The first event after the probe started is timed: with every
 * client's records held for the probe (as before), it waited 0.5 s. */
static void test_hung_pending_others(Fixture *x, gconstpointer data) {
        g_autofree char *link = in(x->f.dir, "link"), *sub = in(x->back, "sub"), *msub = in(x->mnt, "sub");
        g_autofree char *pending = g_build_filename(link, "sub", "x", NULL), *mx = in(msub, "x");
        g_autofree char *other = in(x->f.dir, "other"), *first = in(other, "first"), *warm = in(other, "warm");
        g_autofree char *mine = in(x->f.dir, "mine"), *late = in(mine, "late");
        gint64 t_link, t0, first_event, worst_event, held_event;
        guint32 id;

        if (skip_unless_hung_open_can_run(x))
                return;
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0); /* never looked up through the mount */
        g_assert_cmpint(g_mkdir(other, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(mine, 0755), ==, 0);
        id = wt_add_watch(x->f.proxy, pending, IN_CREATE, WATCHD_FLAG_PERSIST, NULL);
        wt_add_watch(x->f.proxy, mine, IN_CREATE, 0, NULL);
        wt_add_watch(x->f.proxy2, other, IN_CREATE, 0, NULL);
        wt_touch(warm);
        wt_await_record(&x->f.b, warm, IN_CREATE, 30000);
        stop_bindfs();

        /* "link" appears: the probe follows it into the stopped mount. The other
         * client's record is queued by the kernel after it, so it is handled
         * after the probe started. */
        t_link = g_get_monotonic_time();
        g_assert_cmpint(symlink(x->mnt, link), ==, 0);
        t0 = g_get_monotonic_time();
        wt_touch(first);
        wt_touch(late);
        wt_await_record(&x->f.b, first, IN_CREATE, 30000);
        first_event = g_get_monotonic_time() - t0;
        /* The probe's owner waits for it, a while (HOLD_USEC): then its
         * records go on, and the pending subscription gets Overflow (what the
         * probe finds will come after records made after it). */
        wt_await_record(&x->f.a, late, IN_CREATE, 30000);
        held_event = g_get_monotonic_time() - t_link;
        g_assert_true(wt_await_overflows(&x->f.a, 1, 30000));
        g_assert_true(wt_collector_has_overflow_id(&x->f.a, id));
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 1, 30000));
        worst_event = worst_event_of_20(&x->f.b, other);
        g_test_message("figure: pending path probe waiting on a hung FUSE: another client's first event %" G_GINT64_FORMAT
                       " us after the probe started, worst of 20 once the lane stalled %" G_GINT64_FORMAT
                       " us; the probe owner's own event, held, %" G_GINT64_FORMAT " us after the link",
                       first_event, worst_event, held_event);
        /* Well under the 0.5 s every client's records waited for a probe before. */
        if (wt_timing_checked())
                g_assert_cmpint(first_event, <, 250 * 1000);
        /* It waited for the probe, which started after the link was made: a
         * bound that slowness cannot break. */
        g_assert_cmpint(held_event, >=, 500 * 1000);
        g_assert_cmpuint(count(&x->f.a, pending, IN_CREATE), ==, 0);

        /* It answers: the path is followed down, and found when it is made. */
        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 0, 30000));
        wt_touch(mx);
        wt_await_record(&x->f.a, pending, IN_CREATE, 30000);
}

/* AddWatchFd of path for p: no open by path in the caller's lane (its checks in the lane of path's file system). */
static guint32 add_watch_fd_sync(WatchdInotify *p, const char *path, guint32 mask) {
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
        g_autoptr(GVariant) v = NULL;
        g_autoptr(GError) error = NULL;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        guint32 id = 0;

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(g_unix_fd_list_append(fds, fd, NULL), ==, 0);
        g_assert_cmpint(close(fd), ==, 0);
        v = g_dbus_proxy_call_with_unix_fd_list_sync(G_DBUS_PROXY(p), "AddWatchFd", g_variant_new("(huu)", 0, mask, 0u),
                                                     G_DBUS_CALL_FLAGS_NONE, 30000, fds, NULL, NULL, &error);
        g_assert_no_error(error);
        g_variant_get(v, "(u)", &id);
        return id;
}

/* A client that hears of the record that made a pending path appear, before
 * the path's chain linked its directory (the chain's probe still in a
 * worker): it waits for that chain's probes, as if it had heard the record
 * that set them off. Here the chain's probe hangs in the stopped mount, so
 * it waits the hold's bound (HOLD_USEC), and the pending subscription gets
 * Overflow; before, it heard the record at once, while the path was not
 * watched and its subscription told nothing (/dbus/missing-path lost its
 * MODIFY so, under load). */
static void test_hung_pending_heard(Fixture *x, gconstpointer data) {
        g_autofree char *link = in(x->f.dir, "link"), *sub = in(x->back, "sub");
        g_autofree char *pending = g_build_filename(link, "sub", "x", NULL);
        g_autofree char *top = in(x->f.dir, "top"), *d = in(top, "d"), *file = in(d, "file");
        gint64 t_link, heard;
        guint32 id;
        FILE *fp;

        if (skip_unless_hung_open_can_run(x))
                return;
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(top, 0755), ==, 0);
        /* One chain (the same credentials): it waits in f.dir for "link", in top for "d". */
        wt_add_watch(x->f.proxy, pending, IN_CREATE, WATCHD_FLAG_PERSIST, NULL);
        id = wt_add_watch(x->f.proxy, file, IN_CREATE | IN_MODIFY, 0, NULL);
        stop_bindfs();

        /* "link" appears: the chain's probe follows it into the stopped mount
         * and waits there; "d" appears behind it (the chain's next probe). */
        t_link = g_get_monotonic_time();
        g_assert_cmpint(symlink(x->mnt, link), ==, 0);
        g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        /* The other client watches d (by a descriptor: checked in a worker of
         * d's file system's lane, not of the lane of the user's stalled open)
         * and hears "file" appear. */
        add_watch_fd_sync(x->f.proxy2, d, IN_CREATE);
        wt_touch(file);
        wt_await_record(&x->f.b, file, IN_CREATE, 30000);
        heard = g_get_monotonic_time() - t_link;
        g_test_message("figure: a record that made a pending path appear, its chain's probe hung: heard %" G_GINT64_FORMAT
                       " us after the probe's link was made",
                       heard);
        /* It waited for the chain's probe (which started after the link was
         * made) until the hold's bound: a bound that slowness cannot break. */
        g_assert_cmpint(heard, >=, 500 * 1000);
        /* What the path's subscription may have missed, it is told. */
        g_assert_true(wt_await_overflows(&x->f.a, 1, 30000));
        g_assert_true(wt_collector_has_overflow_id(&x->f.a, id));

        /* It answers: the chain goes on, and the path is found and watched. */
        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 0, 30000));
        /* Placed: its appearance is a record of its own (it asks for IN_CREATE). */
        g_assert_cmpuint(wt_await_record(&x->f.a, file, IN_CREATE, 30000)->id, ==, id);
        fp = fopen(file, "a");
        g_assert_nonnull(fp);
        fputs("x\n", fp);
        g_assert_cmpint(fclose(fp), ==, 0);
        g_assert_cmpuint(wt_await_record(&x->f.a, file, IN_MODIFY, 30000)->id, ==, id);
}

static void test_hung_walk(Fixture *x, gconstpointer data) {
        g_autofree char *local = in(x->f.dir, "local"), *deep = in(x->back, "a/b"), *ldeep = in(x->f.dir, "l/m");
        g_autofree char *made = in(x->mnt, "a/b/made"), *lmade = in(x->f.dir, "l/m/made");
        gint64 worst_stats, worst_event = 0, t0;
        AsyncAdd add = {};

        if (skip_unless_hung_open_can_run(x))
                return;
        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(deep, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(ldeep, 0755), ==, 0);
        wt_add_watch(x->f.proxy2, local, IN_CREATE, 0, NULL);
        stop_bindfs();

        /* The tree holds back (local), l (local) and mnt, the stopped mount:
         * its open, in the walk, waits. */
        t0 = g_get_monotonic_time();
        watchd_inotify_call_add_watch(x->f.proxy, x->f.dir, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL, on_added, &add);
        /* The walk has reached the mount: a job on its lane waits past the deadline
         * (on the loop, as before, GetStats would not answer). */
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 1, 30000));
        worst_stats = worst_get_stats(x->f.proxy2, 20);
        worst_event = worst_event_of_20(&x->f.b, local);
        g_test_message("figure: RECURSIVE walk waiting on a hung FUSE: GetStats round trip worst of 20 %" G_GINT64_FORMAT
                       " us, another client's event worst of 20 %" G_GINT64_FORMAT " us; the AddWatch %s meanwhile",
                       worst_stats, worst_event, add.done ? "was answered" : "waited");
        /* Bounds that say "not frozen", not how fast: the loop used to wait for the
         * file system (then GetStats times out, under the sanitizers too). */
        if (wt_timing_checked()) {
                g_assert_cmpint(worst_stats, <, 1 * G_USEC_PER_SEC);
                g_assert_cmpint(worst_event, <, 2 * G_USEC_PER_SEC);
        }
        /* An AddWatch is answered when its walk ends: not before the mount is read. */
        g_assert_false(add.done);

        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_flag(&add.done, 30000));
        g_assert_no_error(add.error);
        g_assert_cmpuint(add.id, >, 0);
        g_test_message("figure: the AddWatch was answered %" G_GINT64_FORMAT " ms after it was sent",
                       (g_get_monotonic_time() - t0) / 1000);
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 0, 30000));
        /* The whole tree is watched: below the mount and beside it. */
        wt_touch(made);
        wt_await_record(&x->f.a, made, IN_CREATE, 5000);
        wt_touch(lmade);
        wt_await_record(&x->f.a, lmade, IN_CREATE, 5000);
}

/* /remote/hung-walk past add_watch_timeout_ms: the AddWatch is answered
 * with Timeout while the walk's job on the mount's lane still waits, and its
 * subscription goes; the walk ends into nothing when the file system answers. */
static void test_hung_walk_timeout(Fixture *x, gconstpointer data) {
        g_autofree char *local = in(x->f.dir, "local"), *deep = in(x->back, "a/b"), *ldeep = in(x->f.dir, "l/m");
        g_autofree char *made = in(x->mnt, "a/b/made"), *lmade = in(x->f.dir, "l/m/made");
        AsyncAdd add = {};
        gint64 t0;

        if (skip_unless_hung_open_can_run(x))
                return;
        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(deep, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(ldeep, 0755), ==, 0);
        wt_add_watch(x->f.proxy2, local, IN_CREATE, 0, NULL);
        stop_bindfs();

        t0 = g_get_monotonic_time();
        watchd_inotify_call_add_watch(x->f.proxy, x->f.dir, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL, on_added, &add);
        g_assert_true(wt_await_flag(&add.done, 15000));
        assert_add_timed_out(x, &add, t0, "RECURSIVE AddWatch whose walk hangs");
        /* The walk's job still waits on the mount's lane. */
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 1, 30000));
        g_assert_cmpuint(wt_stat(x->f.proxy2, "subscriptions"), ==, 1);

        /* The file system answers: the job returns into a walk whose subscription
         * is gone; what it opened is closed, nothing linked. */
        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 0, 30000));
        g_assert_true(wt_await_stat(x->f.proxy2, "kernel_watches", 1, 30000)); /* proxy2's local only */
        wt_touch(made);
        wt_touch(lmade);
        g_usleep(1500 * 1000);
        g_assert_cmpuint(x->f.a.n_records, ==, 0);
        g_assert_cmpuint(x->f.a.n_overflows, ==, 0);
        g_assert_cmpuint(wt_stat(x->f.proxy2, "kernel_watches"), ==, 1);
}

/* The kernel revalidates a name of a FUSE mount once its entry timeout (1 s,
 * libfuse's default, which bindfs keeps) is over: a path walk through it then
 * asks the FUSE daemon. Slept after stopping it, so that watchd's open of a
 * path there waits (a shorter wait would let the open answer from the cache:
 * the test would pass without showing anything, never fail wrongly). */
#define ENTRY_TIMEOUT_US (1500 * 1000)

/* The FUSE daemon stopped while watchd is (SIGSTOP), and its entries left to
 * age past ENTRY_TIMEOUT_US, so that watchd's next lookup there asks it;
 * then watchd goes on. Returns when it did (g_get_monotonic_time()). */
static gint64 resume_past_fuse_stop(pid_t pid) {
        gint64 t0;

        stop_bindfs();
        g_usleep(ENTRY_TIMEOUT_US);
        t0 = g_get_monotonic_time();
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        return t0;
}

/* Bounds that say "not frozen", not how fast: the loop used to wait for the
 * file system (GetStats then timed out). */
static void assert_served(Fixture *x, const char *local, const char *what) {
        gint64 worst_stats = worst_get_stats(x->f.proxy2, 20);
        gint64 worst_event = worst_event_of_20(&x->f.b, local);

        g_test_message("figure: %s waiting on a hung FUSE: GetStats round trip worst of 20 %" G_GINT64_FORMAT
                       " us, another client's event worst of 20 %" G_GINT64_FORMAT " us",
                       what, worst_stats, worst_event);
        if (wt_timing_checked()) {
                g_assert_cmpint(worst_stats, <, 1 * G_USEC_PER_SEC);
                g_assert_cmpint(worst_event, <, 2 * G_USEC_PER_SEC);
        }
}

/* The FUSE daemon goes on: the lane recovers, the tree's new directory is
 * watched (watches in all: the other client's local one, the tree's root
 * and the new one), and a file made in it is reported. */
static void assert_new_dir_followed(Fixture *x, const char *made) {
        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 0, 30000));
        g_assert_true(wt_await_stat(x->f.proxy2, "kernel_watches", 3, 30000));
        wt_touch(made);
        wt_await_record(&x->f.a, made, IN_CREATE, 30000);
}

static void test_hung_moved_in(Fixture *x, gconstpointer data) {
        g_autofree char *local = in(x->f.dir, "local"), *a = in(x->back, "a"), *ma = in(x->mnt, "a");
        g_autofree char *out = in(x->back, "out"), *outnew = in(out, "new"), *mout = in(x->mnt, "out");
        g_autofree char *moutnew = in(mout, "new"), *mnew = in(ma, "new"), *made = in(mnew, "made");
        pid_t pid;

        if (skip_unless_hung_open_can_run(x))
                return;
        pid = wt_process_pid(x->f.daemon->process);
        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(out, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(outnew, 0755), ==, 0);
        wt_add_watch(x->f.proxy2, local, IN_CREATE, 0, NULL);
        wt_add_watch(x->f.proxy, ma, IN_CREATE | IN_MOVED_TO, WATCHD_FLAG_RECURSIVE, NULL);

        /* The directory's IN_MOVED_TO waits in the kernel until the FUSE daemon is stopped. */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        g_assert_cmpint(rename(moutnew, mnew), ==, 0);
        (void) resume_past_fuse_stop(pid);

        /* Its parent's open (a lookup of "a") waits for the FUSE daemon, in a worker. */
        wt_await_record(&x->f.a, mnew, IN_MOVED_TO | IN_ISDIR, 30000);
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 1, 30000));
        assert_served(x, local, "a moved-in directory's parent open");
        assert_new_dir_followed(x, made);
}

static void test_hung_new_dir(Fixture *x, gconstpointer data) {
        g_autofree char *local = in(x->f.dir, "local"), *a = in(x->back, "a"), *ma = in(x->mnt, "a");
        g_autofree char *first = in(ma, "first"), *ffile = in(first, "file"), *mark1 = in(ma, "mark1");
        g_autofree char *mnew = in(ma, "new"), *file = in(mnew, "file"), *mark2 = in(ma, "mark2");
        g_autofree char *made = in(mnew, "made");
        int i_dir, i_file, i_mark;
        gint64 t0, held;
        guint32 id;
        pid_t pid;

        if (skip_unless_hung_open_can_run(x))
                return;
        pid = wt_process_pid(x->f.daemon->process);
        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        wt_add_watch(x->f.proxy2, local, IN_CREATE, 0, NULL);
        id = wt_add_watch(x->f.proxy, ma, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);

        /* One read of the kernel's queue: the directory, then a file beside
         * it. Its scan (after its parent's open in a worker) reports its file
         * between the two. */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        g_assert_cmpint(g_mkdir(first, 0755), ==, 0);
        wt_touch(ffile);
        wt_touch(mark1);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        wt_await_record(&x->f.a, mark1, IN_CREATE, 30000);
        i_dir = wt_collector_find(&x->f.a, first, IN_CREATE | IN_ISDIR);
        i_file = wt_collector_find(&x->f.a, ffile, IN_CREATE);
        i_mark = wt_collector_find(&x->f.a, mark1, IN_CREATE);
        /* Reported before the file beside (not at all yet, if that did not wait). */
        g_assert_cmpint(i_file, >=, 0);
        g_assert_cmpint(i_file, <, i_mark);
        g_assert_cmpint(i_dir, >=, 0);
        g_assert_cmpint(i_dir, <, i_file);
        g_assert_cmpuint(x->f.a.n_overflows, ==, 0);

        /* The same, the FUSE daemon stopped before watchd reads them. */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        g_assert_cmpint(g_mkdir(mnew, 0755), ==, 0);
        wt_touch(file);
        wt_touch(mark2);
        t0 = resume_past_fuse_stop(pid);

        /* Its parent's open (a lookup of "a") waits, in a worker; the file
         * beside waits for it the hold's bound, then goes on, and the
         * subscription is told that the scan will come after it. */
        wt_await_record(&x->f.a, mnew, IN_CREATE | IN_ISDIR, 30000);
        wt_await_record(&x->f.a, mark2, IN_CREATE, 30000);
        held = g_get_monotonic_time() - t0;
        g_assert_true(wt_await_overflows(&x->f.a, 1, 30000));
        g_assert_true(wt_collector_has_overflow_id(&x->f.a, id));
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 1, 30000));
        g_test_message("figure: a new directory's parent open waiting on a hung FUSE: the owner's next record "
                       "delivered %" G_GINT64_FORMAT " ms after watchd went on (HOLD_USEC 500 ms)",
                       held / 1000);
        /* It waited for the hold, which started after watchd went on: a bound slowness cannot break. */
        g_assert_cmpint(held, >=, 500 * 1000);
        assert_served(x, local, "a new directory's parent open");
        g_assert_cmpint(wt_collector_find(&x->f.a, file, IN_CREATE), <, 0);

        /* It answers: the directory is watched (local, a, first and new), its file reported. */
        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 0, 30000));
        wt_await_record(&x->f.a, file, IN_CREATE, 30000);
        g_assert_true(wt_await_stat(x->f.proxy2, "kernel_watches", 4, 30000));
        wt_touch(made);
        wt_await_record(&x->f.a, made, IN_CREATE, 30000);
}

static void test_hung_rescan(Fixture *x, gconstpointer data) {
        g_autofree char *local = in(x->f.dir, "local"), *a = in(x->back, "a"), *ma = in(x->mnt, "a");
        g_autofree char *mlost = in(ma, "lost"), *made = in(mlost, "made");
        guint32 id;
        guint max;
        pid_t pid;

        if (skip_unless_hung_open_can_run(x) || !wt_can_overflow(&max))
                return;
        pid = wt_process_pid(x->f.daemon->process);
        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        wt_add_watch(x->f.proxy2, local, IN_CREATE | IN_DELETE, 0, NULL); /* two records a file made */
        id = wt_add_watch(x->f.proxy, ma, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);

        /* watchd stopped, its kernel queue overflowed by files made in local;
         * then a directory made in the tree, whose record the overflow loses. */
        wt_stop_and_overflow(pid, local, max);
        g_assert_cmpint(g_mkdir(mlost, 0755), ==, 0);
        (void) resume_past_fuse_stop(pid);

        /* Told; the walk after the overflow opens the tree's root by its path: it waits, in a worker. */
        g_assert_true(wt_await_overflows(&x->f.a, 1, 30000));
        g_assert_true(wt_collector_has_overflow_id(&x->f.a, id));
        g_assert_true(wt_await_overflows(&x->f.b, 1, 30000));
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 1, 30000));
        assert_served(x, local, "a walk after an overflow");
        /* The walk (in workers: awaited) finds the directory the overflow hid. */
        assert_new_dir_followed(x, made);
}

/* The look-up of a pending path that AddWatch starts after the path's own
 * open in a worker (missing_start(): in workers too), made to reach the
 * stopped FUSE daemon by stopping watchd while that open waits, letting the
 * FUSE daemon answer it, stopping the FUSE daemon again and letting its
 * entries and attributes age past libfuse's timeouts before watchd goes on.
 * AddWatch PERSIST of mnt/sub/missing, sent at *t0; returns once the look-up
 * waits (its lane stalled a second time), the AddWatch not answered. */
static void start_hung_pending_add(Fixture *x, const char *local, const char *pending, AsyncAdd *add, gint64 *t0) {
        g_autofree char *sub = in(x->back, "sub");
        pid_t pid = wt_process_pid(x->f.daemon->process);

        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0); /* never looked up through the mount */
        wt_add_watch(x->f.proxy2, local, IN_CREATE, 0, NULL);
        stop_bindfs();

        /* The path's own open waits in a worker (its lane stalls)... */
        *t0 = g_get_monotonic_time();
        watchd_inotify_call_add_watch(x->f.proxy, pending, IN_CREATE, WATCHD_FLAG_PERSIST, NULL, on_added, add);
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalls", 1, 30000));
        /* ...is answered (ENOENT) while watchd is stopped, then the FUSE
         * daemon is stopped again, and its cache let age. */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        g_usleep(300 * 1000);
        g_assert_cmpint(kill(hung_pid, SIGSTOP), ==, 0);
        g_usleep(ENTRY_TIMEOUT_US);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);

        /* The look-up that follows waits for the FUSE daemon: in a worker, its lane stalled again. */
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalls", 2, 30000));
        while (g_main_context_iteration(NULL, FALSE))
                ;
        g_assert_false(add->done);
}

/* The FUSE daemon answers within add_watch_timeout_ms (20 s, the default):
 * the AddWatch is answered with an id, and the pending path works. */
static void test_hung_pending_add(Fixture *x, gconstpointer data) {
        g_autofree char *local = in(x->f.dir, "local"), *pending = in(x->mnt, "sub/missing");
        AsyncAdd add = {};
        gint64 t0;

        if (skip_unless_hung_open_can_run(x))
                return;
        start_hung_pending_add(x, local, pending, &add, &t0);
        assert_served(x, local, "a pending path's look-up at AddWatch");
        g_assert_false(add.done);

        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_flag(&add.done, 30000));
        g_assert_no_error(add.error);
        g_assert_cmpuint(add.id, >, 0);
        g_test_message("figure: the AddWatch of a pending path whose look-up waited was answered %" G_GINT64_FORMAT
                       " ms after it was sent",
                       (g_get_monotonic_time() - t0) / 1000);
        wt_touch(pending);
        wt_await_record(&x->f.a, pending, IN_CREATE, 30000);
}

/* /remote/hung-pending-add, the FUSE daemon still stopped past
 * add_watch_timeout_ms (10 s here: the path's own open and the dance above
 * take ~4 s of it): the AddWatch is answered with Timeout while the look-up
 * still waits, its subscription removed; once the file system answers,
 * nothing of it is left (no record of the path made then, no Overflow, the
 * chain of directories it had watched unwatched). */
static void test_hung_pending_add_timeout(Fixture *x, gconstpointer data) {
        g_autofree char *local = in(x->f.dir, "local"), *pending = in(x->mnt, "sub/missing");
        AsyncAdd add = {};
        gint64 t0;

        if (skip_unless_hung_open_can_run(x))
                return;
        start_hung_pending_add(x, local, pending, &add, &t0);
        g_assert_true(wt_await_flag(&add.done, 30000));
        g_test_message("figure: AddWatch of a pending path whose look-up hangs, add_watch_timeout_ms = 10000, answered "
                       "after %" G_GINT64_FORMAT " ms: %s",
                       (g_get_monotonic_time() - t0) / 1000, add.error ? add.error->message : "an id");
        g_assert_error(add.error, G_DBUS_ERROR, G_DBUS_ERROR_TIMEOUT);
        g_assert_cmpuint(n_listed(x->f.proxy), ==, 0);
        /* The look-up's job still waits on the user's lane. */
        g_assert_cmpuint(wt_stat(x->f.proxy2, "fs_stalled"), ==, 1);
        g_assert_cmpuint(wt_stat(x->f.proxy2, "subscriptions"), ==, 1);
        assert_nothing_after_timeout(x, pending, 1); /* proxy2's local only */
}

/* A PERSIST subscription's object deleted: its path is looked up again in
 * a worker, not on the loop (subscriptions_object_gone()). */
static void test_hung_persist(Fixture *x, gconstpointer data) {
        g_autofree char *local = in(x->f.dir, "local"), *a = in(x->back, "a"), *file = in(a, "file");
        g_autofree char *mfile = in(x->mnt, "a/file");
        pid_t pid;

        if (skip_unless_hung_open_can_run(x))
                return;
        pid = wt_process_pid(x->f.daemon->process);
        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        wt_touch(file);
        wt_add_watch(x->f.proxy2, local, IN_CREATE, 0, NULL);
        wt_add_watch(x->f.proxy, mfile, IN_CREATE | IN_DELETE_SELF, WATCHD_FLAG_PERSIST, NULL);

        /* The file's IN_DELETE_SELF waits in the kernel until the FUSE daemon is stopped
         * and its entry of "a" has aged: then the path's look-up must ask the FUSE daemon. */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        g_assert_cmpint(unlink(mfile), ==, 0);
        (void) resume_past_fuse_stop(pid);

        wt_await_record(&x->f.a, mfile, IN_DELETE_SELF, 30000);
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 1, 30000));
        assert_served(x, local, "a PERSIST path looked up again");

        /* The file system answers: the path is followed, and the file made again reported. */
        g_assert_cmpint(kill(hung_pid, SIGCONT), ==, 0);
        hung_pid = 0;
        g_assert_true(wt_await_stat(x->f.proxy2, "fs_stalled", 0, 30000));
        wt_touch(mfile);
        wt_await_record(&x->f.a, mfile, IN_CREATE, 30000);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/remote/capabilities", Fixture, CONFIG, setup, test_capabilities, teardown);
        g_test_add("/remote/capabilities-off", Fixture, CONFIG_OFF, setup, test_capabilities, teardown);
        g_test_add("/remote/detected", Fixture, CONFIG, setup, test_detected, teardown);
        g_test_add("/remote/detected-off", Fixture, CONFIG_OFF, setup, test_detected_off, teardown);
        g_test_add("/remote/no-poll", Fixture, CONFIG, setup, test_no_poll, teardown);
        g_test_add("/remote/backing-changes", Fixture, CONFIG, setup, test_backing_changes, teardown);
        g_test_add("/remote/local-once", Fixture, CONFIG, setup, test_local_once, teardown);
        g_test_add("/remote/recursive", Fixture, CONFIG, setup, test_recursive, teardown);
        g_test_add("/remote/budget", Fixture, CONFIG_BUDGET, setup, test_budget, teardown);
        g_test_add("/remote/root-gone", Fixture, CONFIG, setup, test_root_gone, teardown);
        g_test_add("/remote/io-bounded", Fixture, CONFIG, setup, test_io_bounded, teardown);
        g_test_add("/remote/hung", Fixture, CONFIG, setup, test_hung, teardown);
        g_test_add("/remote/hung-add", Fixture, CONFIG, setup, test_hung_add, teardown);
        g_test_add("/remote/hung-add-timeout", Fixture, CONFIG_ADD_TIMEOUT, setup, test_hung_add_timeout, teardown);
        g_test_add("/remote/hung-prime-timeout", Fixture, CONFIG_ADD_TIMEOUT, setup, test_hung_prime_timeout, teardown);
        g_test_add("/remote/hung-fd-prime-timeout", Fixture, CONFIG_ADD_TIMEOUT, setup, test_hung_fd_prime_timeout,
                   teardown);
        g_test_add("/remote/hung-pending", Fixture, CONFIG, setup, test_hung_pending, teardown);
        g_test_add("/remote/hung-pending-others", Fixture, CONFIG, setup, test_hung_pending_others, teardown);
        g_test_add("/remote/hung-pending-heard", Fixture, CONFIG, setup, test_hung_pending_heard, teardown);
        g_test_add("/remote/hung-walk", Fixture, CONFIG_INOTIFY, setup, test_hung_walk, teardown);
        g_test_add("/remote/hung-moved-in", Fixture, CONFIG_INOTIFY, setup, test_hung_moved_in, teardown);
        g_test_add("/remote/hung-new-dir", Fixture, CONFIG_INOTIFY, setup, test_hung_new_dir, teardown);
        g_test_add("/remote/hung-pending-add", Fixture, CONFIG_INOTIFY, setup, test_hung_pending_add, teardown);
        g_test_add("/remote/hung-pending-add-timeout", Fixture, CONFIG_PEND_TIMEOUT, setup,
                   test_hung_pending_add_timeout, teardown);
        g_test_add("/remote/hung-rescan", Fixture, CONFIG_INOTIFY, setup, test_hung_rescan, teardown);
        g_test_add("/remote/hung-walk-timeout", Fixture, CONFIG_WALK_TIMEOUT, setup, test_hung_walk_timeout, teardown);
        g_test_add("/remote/hung-persist", Fixture, CONFIG_INOTIFY, setup, test_hung_persist, teardown);
        return g_test_run();
}
