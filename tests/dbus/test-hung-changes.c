/* SPDX-License-Identifier: GPL-2.0-or-later */

/*
 * test-hung-changes - what watchd does by itself on nobody's FUSE file
 * system that stops answering
 *
 * Issue 24, item 1, as nobody on a bus built from Debian's own system.conf
 * with our installed policy (wt_system_bus_start(), watchd as root), each
 * case with a FUSE mount nobody mounts itself (hung-mount.h): what watchd
 * does there on its own, after nobody's call was answered, waits alone.
 * Root's GetStats and root's events go on (figures: worst of 20), and
 * nobody's path is followed, its records reported, its subscription
 * watched once the file system answers:
 *   - with a bindfs nobody stops: nobody's pending path that a symbolic
 *     link leads into it (hung-pending), nobody's durable subscription
 *     there while watchd restarts (hung-durable), a directory made in
 *     nobody's RECURSIVE tree there, whose scan's parent open waits for it
 *     (hung-new-dir: nobody told once its records waited the hold's bound),
 *     nobody's PERSIST file deleted there, its path looked up again
 *     (hung-persist: told too), a kernel watch narrowed when one of
 *     nobody's subscriptions ends (hung-narrow), and a directory made
 *     there while the kernel's caches are fresh, nobody's pending path
 *     (hung-appeared) or in nobody's RECURSIVE tree (hung-new-dir-open);
 *   - with hangfs, which holds one kind of request: the scan of a pending
 *     directory that appears (hung-appeared-scan), and every request of
 *     watchd's loop, as a tree's watches are placed (hung-loop-access,
 *     hung-loop-getattr) and a pending path's chain is (hung-loop-pending).
 *
 * nobody's calls that wait on such a mount are in test-hung-calls.c.
 */

#include <glib/gstdio.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hung-mount.h"
#include "watchd-api.h"

/* A lane of nobody's stalls (fs_stalled 1) and root goes on; then the FUSE
 * daemon goes on, make (if not NULL) is made (as root, through the mount), and nobody's
 * next step, its last, an "await" of it, sees it. line: as nobody_sees_last(). */
static void stalled_then_seen(Fixture *f, Reader *reader, Stuck *st, pid_t fuse_pid, const char *what, const char *mnt,
                              const char *make, char *line) {
        if (!wt_await_stat(reader->proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader->proxy, "fs_stalled"));
        root_goes_on(f, reader, what);
        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        g_assert_true(wt_await_stat(reader->proxy, "fs_stalled", 0, TIMEOUT_MS));
        if (make)
                make_file(make);
        stuck_go(st);
        nobody_sees_last(st, reader, mnt, line);
}

/* As nobody: a PERSIST path waits for "link" in nobody's tree; link appears,
 * a symbolic link into nobody's stopped FUSE mount: the probe that follows it
 * waits in a worker of nobody's lane, root goes on, and once the file system
 * answers the path is followed down and its file reported to nobody. */
static void test_hung_pending(Fixture *f, gconstpointer data) {
        g_autofree char *tree = g_build_filename(f->dir, "tree", NULL), *back = g_build_filename(f->dir, "back", NULL);
        g_autofree char *mnt = g_build_filename(f->dir, "mnt", NULL), *link = g_build_filename(tree, "link", NULL);
        g_autofree char *sub = g_build_filename(back, "sub", NULL), *mx = g_build_filename(mnt, "sub", "x", NULL);
        g_autofree char *pending = g_build_filename(link, "sub", "x", NULL), *step = NULL, *await = NULL;
        g_autofree char *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fuse_pid;

        fuse_pid = nobody_tree_and_mount(f, HUNG_CONFIG, tree, back, mnt);
        if (fuse_pid <= 0)
                return;
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0); /* never looked up through the mount */
        g_assert_cmpint(chown(sub, NOBODY, NOBODY), ==, 0);
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", pending, (unsigned) WATCHD_FLAG_PERSIST);
        await = g_strconcat("await ", pending, NULL);
        nobody_start(&st, f, (const char *const[]) { step, "go", await, NULL });
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's pending AddWatch: %s", line);

        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        /* link appears: following the path opens the mount's root, which waits. */
        g_assert_cmpint(symlink(mnt, link), ==, 0);
        /* Then it answers: the probe goes down to sub, where x is awaited, and x
         * made through the mount (the kernel hears of it) is reported to nobody. */
        stalled_then_seen(f, &reader, &st, fuse_pid, "hung-pending", mnt, mx, g_steal_pointer(&line));
}

/* The FUSE daemon stopped while watchd is (pid), its entries let age past
 * ENTRY_TIMEOUT_US, then watchd goes on: its next look-up there waits. */
static void resume_past_fuse_stop(pid_t pid, pid_t fuse_pid) {
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        g_usleep(ENTRY_TIMEOUT_US);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
}

/* watchd went on with nobody's FUSE daemon stopped, nobody's next step let
 * go (an "await-told" or "gone-told"): watchd's look-up waits in a worker
 * past its lane's deadline, root goes on, nobody gets its record after the
 * hold's bound and is told (Overflow). Then the FUSE daemon goes on, remake
 * (if not NULL) is made, and nobody's last "await" sees its record. */
static void nobody_told_while_hung(Fixture *f, Reader *reader, Stuck *st, pid_t fuse_pid, const char *what,
                                   const char *mnt, const char *remake, char *line) {
        stuck_go(st);
        if (!wt_await_stat(reader->proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader->proxy, "fs_stalled"));
        root_goes_on(f, reader, what);
        g_free(line);
        line = stuck_read_line(st);
        g_assert_cmpstr(line, ==, "seen told");

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        g_assert_true(wt_await_stat(reader->proxy, "fs_stalled", 0, TIMEOUT_MS));
        if (remake)
                make_file(remake);
        stuck_go(st);
        nobody_sees_last(st, reader, mnt, line);
}

/*
 * As nobody, on nobody's own bindfs ([poll] fuse = 0), a look-up of watchd's
 * made to wait for the stopped FUSE daemon: the change is made through the
 * mount while watchd is stopped, then the FUSE daemon is stopped and its
 * entries let age, and watchd goes on (nobody_told_while_hung() says what
 * must follow). As /remote/hung-new-dir and /remote/hung-persist, which run
 * as root on a session bus.
 *
 * persist false (hung-new-dir): nobody's RECURSIVE subscription of a; a
 * directory made in it with a file inside, then a file beside it (mark).
 * The open of the new directory's parent by its path, for the scan that
 * reports its file, waits in a worker of nobody's lane; nobody gets mark
 * after the hold's bound, and Overflow (the scan's record will come late);
 * once the file system answers the scan reports the new directory's file.
 *
 * persist true (hung-persist): nobody's PERSIST subscription of a/file,
 * deleted: its IN_DELETE_SELF is delivered with Overflow, the path's look-up
 * again (subscriptions_object_gone()) waiting in a worker of nobody's lane;
 * once the file system answers, the file made again is reported.
 */
static void hung_look_up(Fixture *f, bool persist) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *a = g_build_filename(back, "a", NULL), *file = g_build_filename(a, "file", NULL);
        g_autofree char *ma = g_build_filename(mnt, "a", NULL), *mfile = g_build_filename(ma, "file", NULL);
        g_autofree char *mnew = g_build_filename(ma, "new", NULL), *mark = g_build_filename(ma, "mark", NULL);
        g_autofree char *nfile = g_build_filename(mnew, "file", NULL), *step = NULL, *told = NULL, *seen = NULL;
        g_autofree char *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fuse_pid, pid;

        step = persist ? g_strdup_printf("watch %s %u", mfile, (unsigned) WATCHD_FLAG_PERSIST) :
                         g_strdup_printf("watch %s %u", ma, (unsigned) WATCHD_FLAG_RECURSIVE);
        told = persist ? g_strconcat("gone-told ", mfile, NULL) : g_strconcat("await-told ", mark, NULL);
        seen = g_strconcat("await ", persist ? mfile : nfile, NULL);
        fuse_pid = nobody_watch_in_mount(f, back, mnt, a, persist ? file : NULL, &reader, &st,
                                         (const char *const[]) { step, "go", told, "go", seen, NULL }, &line);
        if (fuse_pid <= 0)
                return;
        pid = wt_process_pid(f->daemon->process);

        /* Made through the mount (the kernel hears of it) while watchd is stopped. */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        if (persist)
                g_assert_cmpint(unlink(mfile), ==, 0);
        else {
                g_assert_cmpint(g_mkdir(mnew, 0755), ==, 0);
                make_file(nfile);
                make_file(mark);
        }
        resume_past_fuse_stop(pid, fuse_pid);
        nobody_told_while_hung(f, &reader, &st, fuse_pid, persist ? "hung-persist" : "hung-new-dir", mnt,
                               persist ? mfile : NULL, g_steal_pointer(&line));
}

static void test_hung_new_dir(Fixture *f, gconstpointer data) {
        hung_look_up(f, false);
}

static void test_hung_persist(Fixture *f, gconstpointer data) {
        hung_look_up(f, true);
}

/*
 * Issue 24 item 1 as nobody: a kernel watch narrowed when one of its
 * subscriptions ends. Two of nobody's clients watch a, a directory of
 * nobody's own bindfs ([poll] fuse = 0), the second for every event: one
 * kernel watch with the union of the masks. The FUSE daemon is stopped, its
 * entries let age, and the second client goes: the watch is narrowed to
 * the first's mask, which re-opens its path (there is no caller's fd then)
 * and re-adds it. That path walk and the add's permission check wait for
 * the FUSE daemon: on the loop they froze watchd for everyone (root's
 * GetStats never answered); now they wait in a worker of the mount's lane
 * (fs_stalled 1), root goes on, and once the FUSE daemon answers the first
 * client still hears of a file made in a.
 */
static void test_hung_narrow(Fixture *f, gconstpointer data) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *a = g_build_filename(back, "a", NULL), *ma = g_build_filename(mnt, "a", NULL);
        g_autofree char *mfile = g_build_filename(ma, "after", NULL), *step = NULL, *wide = NULL, *await = NULL;
        g_autofree char *line = NULL, *wide_line = NULL;
        Reader reader;
        Stuck st = {}, wst = {};
        pid_t fuse_pid;

        step = g_strdup_printf("watch %s 0", ma);
        wide = g_strdup_printf("watch %s 0 %u", ma, (unsigned) (IN_ALL_EVENTS & ~IN_MOVE_SELF));
        await = g_strconcat("await ", mfile, NULL);
        fuse_pid = nobody_watch_in_mount(f, back, mnt, a, NULL, &reader, &st,
                                         (const char *const[]) { step, "go", await, NULL }, &line);
        if (fuse_pid <= 0)
                return;
        nobody_start(&wst, f, (const char *const[]) { wide, "go", NULL });
        wide_line = stuck_read_line(&wst);
        if (!g_str_has_prefix(wide_line, "id "))
                g_error("nobody's second AddWatch: %s", wide_line);

        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        g_usleep(ENTRY_TIMEOUT_US);
        stuck_go(&wst); /* it goes: its subscription ends, the watch is narrowed */
        nobody_end(&wst);
        stalled_then_seen(f, &reader, &st, fuse_pid, "hung-narrow", mnt, mfile, g_steal_pointer(&line));
}

/*
 * Issue 24 item 1 as nobody, on its own bindfs ([poll] fuse = 0): a
 * directory new is made in a through the mount (the kernel hears of it)
 * while watchd is stopped, the way down to it made fresh in the kernel's
 * caches (entries and attributes last 1 s; the mkdir made a's stale), the
 * FUSE daemon stopped, and watchd goes on at once. What the caches answer
 * (the look-ups, by path, in a job) is answered; what they never answer
 * was asked on the loop and froze watchd for everyone (root's GetStats
 * timed out). Now it is asked in a job: the lane stalls, root goes on, and
 * once the FUSE daemon answers nobody hears of it.
 *
 * tree false (hung-appeared): new is a pending path of nobody's. Placing
 * the subscription once the probe found it asked the file system's kind on
 * the loop (remote.c's fs_detect(): an fstatfs, a FUSE_STATFS); it is asked
 * in the probe's job (remote_hint_probe()). nobody hears of new.
 *
 * tree true (hung-new-dir-open): a is nobody's RECURSIVE subscription, and
 * new has a file. The open of new below a (a FUSE_OPENDIR) and its read for
 * the scan that reports the file ran on the loop, in the completion of a's
 * open by path; on a file system that may stop answering they are jobs of
 * the mount's lane. nobody hears of new/file.
 */
static void hung_made_fresh(Fixture *f, bool tree) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *a = g_build_filename(back, "a", NULL), *ma = g_build_filename(mnt, "a", NULL);
        g_autofree char *mnew = g_build_filename(ma, "new", NULL), *nfile = g_build_filename(mnew, "file", NULL);
        g_autofree char *step = NULL, *await = NULL, *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fuse_pid, pid;
        struct stat sb;

        step = tree ? g_strdup_printf("watch %s %u", ma, (unsigned) WATCHD_FLAG_RECURSIVE) :
                      g_strdup_printf("watch %s 0", mnew);
        await = g_strconcat("await ", tree ? nfile : mnew, NULL);
        fuse_pid = nobody_watch_in_mount(f, back, mnt, a, NULL, &reader, &st,
                                         (const char *const[]) { step, "go", await, NULL }, &line);
        if (fuse_pid <= 0)
                return;
        pid = wt_process_pid(f->daemon->process);

        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        g_assert_cmpint(g_mkdir(mnew, 0755), ==, 0);
        if (tree)
                make_file(nfile);
        g_assert_cmpint(stat(mnt, &sb), ==, 0);
        g_assert_cmpint(stat(ma, &sb), ==, 0);
        g_assert_cmpint(stat(mnew, &sb), ==, 0);
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        stalled_then_seen(f, &reader, &st, fuse_pid, tree ? "hung-new-dir-open" : "hung-appeared", mnt, NULL,
                          g_steal_pointer(&line));
}

static void test_hung_appeared(Fixture *f, gconstpointer data) {
        hung_made_fresh(f, false);
}

static void test_hung_new_dir_open(Fixture *f, gconstpointer data) {
        hung_made_fresh(f, true);
}

/*
 * Issue 24 item 1 as nobody: a pending RECURSIVE path of nobody's, a/new on
 * a FUSE mount of its own that does not answer an open of new for reading
 * (hangfs: bindfs and SIGSTOP cannot stop that request alone). new appears
 * with a file in it, made through the mount: the probe that finds it opens
 * it O_PATH (no request) and asks the file system's kind (answered). The
 * scan that reports what it holds (report-appearance) opened it for
 * reading on the loop, in the probe's completion, and froze watchd for
 * everyone (root's GetStats timed out). Now, on a file system that may
 * stop answering, it is read in jobs of the mount's lane: the lane stalls,
 * root goes on, and once the file system answers the scan reports new/file.
 */
static void test_hung_appeared_scan(Fixture *f, gconstpointer data) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *a = g_build_filename(back, "a", NULL), *mnew = g_build_filename(mnt, "a", "new", NULL);
        g_autofree char *nfile = g_build_filename(mnew, "file", NULL), *step = NULL, *await = NULL, *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fs_pid;

        fs_pid = nobody_mounts_hangfs(f, HUNG_INOTIFY_CONFIG, back, mnt, "new", /* statfs= */ false);
        if (fs_pid <= 0)
                return;
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_cmpint(chown(a, NOBODY, NOBODY), ==, 0);
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", mnew, (unsigned) WATCHD_FLAG_RECURSIVE);
        await = g_strconcat("await ", nfile, NULL);
        nobody_start(&st, f, (const char *const[]) { step, "go", await, NULL });
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's AddWatch: %s", line);

        g_assert_cmpint(g_mkdir(mnew, 0755), ==, 0); /* through the mount: the kernel hears of it */
        make_file(nfile);
        if (!wt_await_stat(reader.proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader.proxy, "fs_stalled"));
        root_goes_on(f, &reader, "hung-appeared-scan");
        g_assert_cmpint(kill(fs_pid, SIGUSR2), ==, 0); /* it answers */
        g_assert_true(wt_await_stat(reader.proxy, "fs_stalled", 0, TIMEOUT_MS));
        stuck_go(&st);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

/* The state of root's ListDurable entry NAME ("UID/NAME" for another user's), or NULL. */
static char *durable_state_of(WatchdInotify *p, const char *name) {
        g_autoptr(GVariant) list = NULL;
        g_autoptr(GError) error = NULL;

        g_assert_true(watchd_inotify_call_list_durable_sync(p, &list, NULL, &error));
        for (gsize i = 0; i < g_variant_n_children(list); i++) {
                const char *n, *state;

                g_variant_get_child(list, i, "(&s&suu&stttb&s)", &n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                    &state);
                if (g_str_equal(n, name))
                        return g_strdup(state);
        }
        return NULL;
}

/* As nobody, whom our policy lets call CreateDurable on the system bus: a
 * durable subscription on nobody's FUSE mount, stopped while watchd
 * restarts. The new watchd takes its name and root goes on; the
 * subscription is "opening" until the file system answers, then watched. */
static void test_hung_durable(Fixture *f, gconstpointer data) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *dir = g_build_filename(back, "dir", NULL), *mdir = g_build_filename(mnt, "dir", NULL);
        g_autofree char *step = NULL, *line = NULL, *state = NULL;
        g_autofree char *name = g_strdup_printf("%u/hung", (unsigned) NOBODY);
        Reader reader;
        Stuck st = {};
        pid_t fuse_pid;
        gint64 t0, started;

        if (!f->bus)
                return;
        fuse_pid = nobody_mounts_bindfs(f, HUNG_CONFIG, back, mnt);
        if (fuse_pid <= 0)
                return;
        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        g_assert_cmpint(chown(dir, NOBODY, NOBODY), ==, 0);
        step = g_strconcat("durable hung ", mdir, NULL);
        nobody_start(&st, f, (const char *const[]) { step, NULL });
        line = stuck_read_line(&st);
        g_assert_cmpstr(line, ==, "created");
        nobody_end(&st);

        g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        t0 = g_get_monotonic_time();
        f->daemon = wt_daemon_start(f->bus, HUNG_CONFIG);
        started = g_get_monotonic_time() - t0;
        g_test_message("figure: hung-durable: watchd restarted with nobody's durable subscription on its stopped "
                       "FUSE mount: name owned after %" G_GINT64_FORMAT " ms",
                       started / 1000);
        reader_on_local(f, &reader);
        root_goes_on(f, &reader, "hung-durable");
        state = durable_state_of(reader.proxy, name);
        g_assert_cmpstr(state, ==, "opening");

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        for (gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;;) {
                g_free(state);
                state = durable_state_of(reader.proxy, name);
                if (g_strcmp0(state, "watching") == 0)
                        break;
                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                g_usleep(20000);
        }
        reader_done(&reader);
        g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
}

/*
 * Issue 24 item 1 as nobody: a FUSE mount of nobody's that answers every
 * request but those of watchd's event loop (hangfs, HANGFS_TID: the kernel
 * names the thread that asks), which it never answers while it hangs. So
 * whatever watchd asks that file system on the loop freezes it, and a test
 * of nobody's RECURSIVE tree there, a new directory with a file in it, and
 * a file made deeper, shows that nothing is. Two ways a user's FUSE server
 * can be asked by the kernel when a watch is placed:
 *
 * getattr false (hung-loop-access): without -o default_permissions, a
 * chdir() asks FUSE_ACCESS. A walk's completion made each directory its
 * working directory to place its watch by "." (backend_syscall.c's batch).
 *
 * getattr true (hung-loop-getattr): with -o default_permissions and
 * attributes that never stay cached (attr_timeout=0), inotify_add_watch()'s
 * check of the right to read asks FUSE_GETATTR.
 *
 * Both froze watchd for everyone (root's GetStats timed out) as it placed
 * the watches of nobody's walk on the loop. On a file system that may stop
 * answering, the watch is placed in the job that opened the directory.
 */
static void hung_loop(Fixture *f, bool getattr) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *deep = g_build_filename(back, "a", "x", "y", NULL);
        g_autofree char *ma = g_build_filename(mnt, "a", NULL), *mnew = g_build_filename(ma, "new", NULL);
        g_autofree char *nfile = g_build_filename(mnew, "file", NULL);
        g_autofree char *yfile = g_build_filename(ma, "x", "y", "file", NULL);
        g_autofree char *step = NULL, *await = NULL, *await2 = NULL, *line = NULL;
        const char *what = getattr ? "hung-loop-getattr" : "hung-loop-access";
        Reader reader;
        Stuck st = {};
        pid_t fs_pid;

        if (!f->bus)
                return;
        g_assert_cmpint(g_mkdir_with_parents(deep, 0755), ==, 0);
        for (char *p = deep; strlen(p) > strlen(back); *strrchr(p, '/') = '\0')
                g_assert_cmpint(chown(p, NOBODY, NOBODY), ==, 0);
        fs_pid = hangfs_mount(f, HUNG_INOTIFY_CONFIG, back, mnt, "-", /* statfs= */ false, /* loop= */ true,
                              getattr ? "default_permissions,attr_timeout=0,entry_timeout=0" : NULL);
        if (fs_pid <= 0)
                return;
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", ma, (unsigned) WATCHD_FLAG_RECURSIVE);
        await = g_strconcat("await ", nfile, NULL);
        await2 = g_strconcat("await ", yfile, NULL);
        nobody_start(&st, f, (const char *const[]) { step, "go", await, "go", await2, NULL });
        root_goes_on(f, &reader, what);
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's AddWatch: %s", line);

        g_assert_cmpint(g_mkdir(mnew, 0755), ==, 0); /* through the mount: the kernel hears of it */
        make_file(nfile);
        root_goes_on(f, &reader, what);
        stuck_go(&st);
        g_free(line);
        line = stuck_read_line(&st);
        g_assert_cmpstr(line, ==, "seen");
        make_file(yfile);                                            /* below the tree's first walk */
        g_assert_cmpint(wt_stat(reader.proxy, "fs_stalled"), ==, 0); /* nothing of nobody's waited either */
        stuck_go(&st);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

static void test_hung_loop_access(Fixture *f, gconstpointer data) {
        hung_loop(f, false);
}

static void test_hung_loop_getattr(Fixture *f, gconstpointer data) {
        hung_loop(f, true);
}

/*
 * The same hang (as hung-loop-getattr: FUSE_GETATTR at every check of the
 * right to read), for a pending path on nobody's mount (MISSING PATHS in
 * watchd(8)): an AddWatch of mnt/a/p/q while only a is there, then p
 * made, then q, then a file in q. The links of the path's chain (the
 * mount's root, a, then p) and q's own watch when it appears were placed
 * on the loop (missing_follow.c), and froze it in inotify_add_watch() as
 * the walk's did. (Without default_permissions placing a watch asks FUSE
 * nothing, and the chain's links were never placed by fchdir().)
 */
static void test_hung_loop_pending(Fixture *f, gconstpointer data) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *ba = g_build_filename(back, "a", NULL), *mp = g_build_filename(mnt, "a", "p", NULL);
        g_autofree char *mq = g_build_filename(mp, "q", NULL), *qfile = g_build_filename(mq, "file", NULL);
        g_autofree char *step = NULL, *await = NULL, *await2 = NULL, *line = NULL;
        const char *what = "hung-loop-pending";
        Reader reader;
        Stuck st = {};
        pid_t fs_pid;

        if (!f->bus)
                return;
        g_assert_cmpint(g_mkdir_with_parents(ba, 0755), ==, 0);
        g_assert_cmpint(chown(ba, NOBODY, NOBODY), ==, 0);
        fs_pid = hangfs_mount(f, HUNG_INOTIFY_CONFIG, back, mnt, "-", /* statfs= */ false, /* loop= */ true,
                              "default_permissions,attr_timeout=0,entry_timeout=0");
        if (fs_pid <= 0)
                return;
        reader_on_local(f, &reader);
        step = g_strconcat("watch ", mq, " 0", NULL);
        await = g_strconcat("await ", mq, NULL); /* its appearance */
        await2 = g_strconcat("await ", qfile, NULL);
        nobody_start(&st, f, (const char *const[]) { step, "go", await, "go", await2, NULL });
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's AddWatch of a pending path: %s", line);
        root_goes_on(f, &reader, what);

        g_assert_cmpint(g_mkdir(mp, 0755), ==, 0); /* through the mount: the kernel hears of it */
        root_goes_on(f, &reader, what);
        g_assert_cmpint(g_mkdir(mq, 0755), ==, 0);
        root_goes_on(f, &reader, what);
        stuck_go(&st);
        g_free(line);
        line = stuck_read_line(&st);
        g_assert_cmpstr(line, ==, "seen");
        make_file(qfile);
        root_goes_on(f, &reader, what);
        g_assert_cmpint(wt_stat(reader.proxy, "fs_stalled"), ==, 0); /* nothing of nobody's waited either */
        stuck_go(&st);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

int main(int argc, char *argv[]) {
        static const Params system_bus_hung = { .system = TRUE, .config = HUNG_CONFIG },
                            system_bus_hung_inotify = { .system = TRUE, .config = HUNG_INOTIFY_CONFIG };

        g_test_init(&argc, &argv, NULL);

        g_test_add("/system-bus/hung-pending", Fixture, &system_bus_hung, fixture_setup, test_hung_pending,
                   fixture_teardown);
        g_test_add("/system-bus/hung-durable", Fixture, &system_bus_hung, fixture_setup, test_hung_durable,
                   fixture_teardown);
        g_test_add("/system-bus/hung-new-dir", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_new_dir,
                   fixture_teardown);
        g_test_add("/system-bus/hung-persist", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_persist,
                   fixture_teardown);
        g_test_add("/system-bus/hung-narrow", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_narrow,
                   fixture_teardown);
        g_test_add("/system-bus/hung-appeared", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_appeared,
                   fixture_teardown);
        g_test_add("/system-bus/hung-new-dir-open", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_new_dir_open, fixture_teardown);
        g_test_add("/system-bus/hung-appeared-scan", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_appeared_scan, fixture_teardown);
        g_test_add("/system-bus/hung-loop-access", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_loop_access, fixture_teardown);
        g_test_add("/system-bus/hung-loop-getattr", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_loop_getattr, fixture_teardown);
        g_test_add("/system-bus/hung-loop-pending", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_loop_pending, fixture_teardown);
        return g_test_run();
}
