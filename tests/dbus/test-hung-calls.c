/* SPDX-License-Identifier: GPL-2.0-or-later */

/*
 * test-hung-calls - nobody's calls that meet a FUSE file system that stops
 * answering
 *
 * Issue 24, item 1, as nobody on a bus built from Debian's own system.conf
 * with our installed policy (wt_system_bus_start(), watchd as root): a call
 * of nobody's whose work waits for a FUSE mount that does not answer waits
 * alone. Root's GetStats and root's events go on (figures: worst of 20),
 * and nobody's call is answered once the file system answers:
 *   - nobody's polled subscription on a FUSE mount that stops answering
 *     (bindfs, SIGSTOP), and nobody's AddWatch of a path there: root's
 *     GetStats and root's events go on, nobody's AddWatch waits, nobody is
 *     told (Overflow) and answered once the file system answers
 *     (hung-fuse);
 *   - with a bindfs nobody mounts itself and stops (hung-mount.h): nobody's
 *     RECURSIVE walk into it (hung-walk), nobody's AddWatch of a pending
 *     path whose look-up waits for it (hung-pending-add, as
 *     /remote/hung-pending-add), nobody's AddWatchFd of a directory there
 *     (hung-add-watch-fd), and nobody's walks into 20 of them, which hold
 *     at most 12 lanes stalled (hung-many);
 *   - with hangfs, which does not answer statfs, nobody's RECURSIVE walk
 *     that crosses into it (hung-crossing).
 *
 * The flow-control cases of the same bus are in test-system-bus.c; what
 * watchd does by itself on such a mount (a pending path followed, a new
 * directory scanned, a watch narrowed, a durable subscription opened at
 * start, watches placed from the loop) in test-hung-changes.c.
 */

#include <fcntl.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "hung-mount.h"
#include "watchd-api.h"

/* ---------------------------------------------------------------- a file system that stops answering */

/*
 * The child, as nobody: subscribes to mnt (polled), says "ID NAME"; told to
 * go on, asks for a watch of fresh (a path on mnt never looked up, so its
 * lookup reaches the FUSE daemon) and says "added ID" or "failed ..." when
 * answered; then reads what came meanwhile and after for 3 s and says
 * "overflows N" (Overflow signals naming its first subscription).
 */
static void hung_child(const char *address, const char *mnt, const char *fresh, int report_fd, int go_fd) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *call = NULL, *reply = NULL;
        StuckReport s = {};
        sd_bus *bus = NULL;
        const char *name;
        uint32_t id, id2;
        uint64_t end;
        char c;

        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                _exit(2);
        if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
            sd_bus_start(bus) < 0)
                _exit(3);
        if (sd_bus_call_method(bus, "org.example.Inotify", "/org/example/Inotify", "org.example.Inotify", "AddWatch",
                               &error, &reply, "suu", mnt, (uint32_t) IN_CREATE, (uint32_t) 0) < 0 ||
            sd_bus_message_read(reply, "u", &id) < 0) {
                dprintf(report_fd, "AddWatch failed: %s\n", error.message ? error.message : "?");
                _exit(4);
        }
        reply = sd_bus_message_unref(reply);
        if (sd_bus_add_filter(bus, NULL, stuck_on_message, &s) < 0 || sd_bus_get_unique_name(bus, &name) < 0)
                _exit(5);
        dprintf(report_fd, "%u %s\n", id, name);
        if (read(go_fd, &c, 1) != 1)
                _exit(6);

        /* Answered when the file system answers: a timeout far past the test's. */
        if (sd_bus_message_new_method_call(bus, &call, "org.example.Inotify", "/org/example/Inotify",
                                           "org.example.Inotify", "AddWatch") < 0 ||
            sd_bus_message_append(call, "suu", fresh, (uint32_t) IN_CREATE, (uint32_t) 0) < 0)
                _exit(7);
        if (sd_bus_call(bus, call, (uint64_t) 10 * TIMEOUT_MS * 1000, &error, &reply) < 0 ||
            sd_bus_message_read(reply, "u", &id2) < 0)
                dprintf(report_fd, "failed %s\n", error.message ? error.message : "?");
        else
                dprintf(report_fd, "added %u\n", id2);

        end = g_get_monotonic_time() + 3 * G_USEC_PER_SEC;
        while ((uint64_t) g_get_monotonic_time() < end) {
                int r = sd_bus_process(bus, NULL);

                if (r < 0)
                        _exit(8);
                if (r == 0)
                        (void) sd_bus_wait(bus, 100000);
        }
        dprintf(report_fd, "overflows %u %u\n", s.overflows, s.overflow_id);
        _exit(0);
}

/* Whether fd has something to read now. */
static gboolean readable(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN };

        return poll(&p, 1, 0) > 0;
}

/*
 * Issue 24, item 1, as nobody on the system-policy bus. Root mounts bindfs
 * (allow_other) and nobody subscribes there, polled; the FUSE daemon is
 * stopped and nobody asks for a watch of a path on it. The daemon must not
 * wait for it: root's GetStats round trips and root's events on a local
 * directory go on (their worst of 20 is the figure), nobody's AddWatch is
 * not answered while the file system does not answer (both lanes, the poll's
 * and nobody's opens, show in fs_stalled), nobody's polled subscription is
 * told (Overflow), and after SIGCONT nobody's AddWatch is answered with an
 * id. Before AddWatch's open was made in a worker, the first GetStats timed
 * out; before the poller's reads were, none answered at all.
 */
static void test_hung_fuse(Fixture *f, gconstpointer data) {
        g_autofree char *bindfs = g_find_program_in_path("bindfs");
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *local = g_build_filename(f->dir, "local", NULL), *fresh = NULL, *mfresh = NULL;
        g_autofree char *line = NULL, *line2 = NULL;
        g_autoptr(GError) error = NULL;
        gint64 worst_stats = 0, worst_event = 0;
        guint overflows = 0, overflow_id = 0, added = 0;
        int status = -1;
        pid_t fuse_pid;
        Reader reader;
        Stuck st = {};
        int report[2], go[2];

        /* Under valgrind (tests/robustness/valgrind-dbus) GetStats timed out
         * during the hang: the loop thread waited too. Not understood yet;
         * valgrind runs one thread at a time, and may hold its lock across a
         * worker's system call on the stopped mount. Natively and under ASan
         * the case passes. */
        if (watchd_wrapped()) {
                g_test_skip("under a wrapper (valgrind) the hang stops watchd's loop too: not understood yet");
                return;
        }
        if (!f->bus)
                return;
        if (!bindfs || access("/dev/fuse", R_OK | W_OK) != 0) {
                g_test_skip("no FUSE mount here: bindfs missing, or /dev/fuse unusable");
                return;
        }
        g_assert_cmpint(g_mkdir(back, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(mnt, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        fresh = g_build_filename(back, "fresh", NULL);
        mfresh = g_build_filename(mnt, "fresh", NULL);
        g_assert_cmpint(g_mkdir(fresh, 0755), ==, 0); /* never looked up through the mount */
        g_assert_true(g_spawn_sync(NULL, (char *[]) { bindfs, (char *) "-o", (char *) "allow_other", back, mnt, NULL },
                                   NULL, 0, NULL, NULL, NULL, NULL, &status, &error));
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        fuse_pid = wt_bindfs_pid(mnt);
        g_assert_cmpint(fuse_pid, >, 0);

        g_assert_cmpint(pipe2(report, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(go, O_CLOEXEC), ==, 0);
        st.pid = fork();
        g_assert_cmpint(st.pid, >=, 0);
        if (st.pid == 0) {
                close(report[0]);
                close(go[1]);
                hung_child(f->bus->address, mnt, mfresh, report[1], go[0]);
        }
        close(report[1]);
        close(go[0]);
        st.report_fd = report[0];
        st.go_fd = go[1];
        line = stuck_read_line(&st);
        if (!g_ascii_isdigit(line[0]))
                g_error("nobody could not subscribe to the FUSE mount: %s", line);

        reader_init(&reader, f->bus, PING_ANSWER);
        reader.id = add_watch(reader.proxy, local);
        {
                /* Resumed by a watcher even if this test aborts. */
                g_autofree char *script = g_strdup_printf("while kill -0 %d 2>/dev/null; do sleep 1; done; "
                                                          "kill -CONT %d",
                                                          (int) getpid(), (int) fuse_pid);

                g_assert_true(g_spawn_async(NULL, (char *[]) { (char *) "/bin/sh", (char *) "-c", script, NULL }, NULL,
                                            0, NULL, NULL, NULL, &error));
        }
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        stuck_go(&st);

        /* The poll's lane and nobody's opens' lane stop answering; root is served. */
        if (!wt_await_stat(reader.proxy, "fs_stalled", 2, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 2", wt_stat(reader.proxy, "fs_stalled"));
        for (guint i = 0; i < 20; i++) {
                gint64 t0 = g_get_monotonic_time();

                (void) wt_stat(reader.proxy, "clients");
                worst_stats = MAX(worst_stats, g_get_monotonic_time() - t0);
                t0 = g_get_monotonic_time();
                create_remove(f, "local/hung", i);
                await_records(&reader, 2 * (i + 1));
                worst_event = MAX(worst_event, g_get_monotonic_time() - t0);
        }
        g_test_message("figure: hung-fuse: while nobody's FUSE mount does not answer, root's GetStats round trip "
                       "worst of 20 %" G_GINT64_FORMAT
                       " us, root's create+delete on tmpfs delivered worst of 20 %" G_GINT64_FORMAT " us",
                       worst_stats, worst_event);
        g_assert_cmpint(worst_stats, <, 2 * G_USEC_PER_SEC);
        g_assert_cmpint(worst_event, <, 2 * G_USEC_PER_SEC);
        g_assert_false(readable(st.report_fd)); /* nobody's AddWatch still waits */

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        g_free(line);
        line = stuck_read_line(&st);
        if (sscanf(line, "added %u", &added) != 1)
                g_error("nobody's AddWatch on the FUSE mount: %s", line);
        g_assert_cmpuint(added, >, 0);
        line2 = stuck_read_line(&st);
        g_assert_cmpint(sscanf(line2, "overflows %u %u", &overflows, &overflow_id), ==, 2);
        g_assert_cmpuint(overflows, >=, 1);
        g_assert_cmpint(waitpid(st.pid, &status, 0), ==, st.pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(st.report_fd);
        close(st.go_fd);
        g_assert_cmpuint(wt_stat(reader.proxy, "fs_stalled"), ==, 0);
        reader_done(&reader);
        g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
}

/* ---------------------------------------------------------------- nobody's own FUSE mount */

/* Issue 24 item 1 as nobody: its RECURSIVE AddWatch of its tree, which holds
 * its own stopped FUSE mount (watched by inotify, [poll] fuse = 0, so the
 * walk reads it): the walk waits in a worker of the mount's lane, root goes
 * on, nobody's call is answered with an id once the file system answers. */
static void test_hung_walk(Fixture *f, gconstpointer data) {
        g_autofree char *tree = g_build_filename(f->dir, "tree", NULL), *back = g_build_filename(f->dir, "back", NULL);
        g_autofree char *mnt = g_build_filename(tree, "mnt", NULL), *deep = g_build_filename(back, "a", "b", NULL);
        g_autofree char *ldeep = g_build_filename(tree, "l", "m", NULL), *step = NULL, *line = NULL;
        Reader reader;
        Stuck st = {};
        guint id = 0;
        pid_t fuse_pid;

        fuse_pid = nobody_tree_and_mount(f, HUNG_INOTIFY_CONFIG, tree, back, mnt);
        if (fuse_pid <= 0)
                return;
        g_assert_cmpint(g_mkdir_with_parents(deep, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(ldeep, 0755), ==, 0);
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", tree, (unsigned) WATCHD_FLAG_RECURSIVE);
        nobody_start(&st, f, (const char *const[]) { "go", step, NULL });

        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        stuck_go(&st);
        /* The walk has reached the mount: its job waits past the lane's deadline. */
        if (!wt_await_stat(reader.proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader.proxy, "fs_stalled"));
        root_goes_on(f, &reader, "hung-walk");
        g_assert_false(readable(st.report_fd)); /* nobody's AddWatch waits for its walk */

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        line = stuck_read_line(&st);
        if (sscanf(line, "id %u", &id) != 1)
                g_error("nobody's RECURSIVE AddWatch: %s", line);
        g_assert_cmpuint(id, >, 0);
        nobody_end(&st);
        reader_done(&reader);
        g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
}

/* As nobody: AddWatch PERSIST of a path missing below a directory of
 * nobody's FUSE mount ([poll] fuse = 0), the look-up after the path's own
 * open made to reach the stopped FUSE daemon (watchd stopped while that open
 * waits in a worker, the FUSE daemon let answer it, stopped again, its
 * caches let age, watchd resumed, as /remote/hung-pending-add): the look-up
 * waits in a worker of nobody's lane (stalled a second time), root goes on,
 * nobody's AddWatch waits; once the file system answers, it is answered
 * with an id and the path, created, is reported to nobody. */
static void test_hung_pending_add(Fixture *f, gconstpointer data) {
        g_autofree char *tree = g_build_filename(f->dir, "tree", NULL), *back = g_build_filename(f->dir, "back", NULL);
        g_autofree char *mnt = g_build_filename(f->dir, "mnt", NULL), *sub = g_build_filename(back, "sub", NULL);
        g_autofree char *pending = g_build_filename(mnt, "sub", "missing", NULL), *step = NULL, *await = NULL;
        g_autofree char *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fuse_pid, pid;

        fuse_pid = nobody_tree_and_mount(f, HUNG_INOTIFY_CONFIG, tree, back, mnt);
        if (fuse_pid <= 0)
                return;
        pid = wt_process_pid(f->daemon->process);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0); /* never looked up through the mount */
        g_assert_cmpint(chown(sub, NOBODY, NOBODY), ==, 0);
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", pending, (unsigned) WATCHD_FLAG_PERSIST);
        await = g_strconcat("await ", pending, NULL);
        nobody_start(&st, f, (const char *const[]) { "go", step, await, NULL });

        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        stuck_go(&st);
        /* The path's own open waits in a worker of nobody's lane... */
        if (!wt_await_stat(reader.proxy, "fs_stalls", 1, TIMEOUT_MS))
                g_error("fs_stalls is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader.proxy, "fs_stalls"));
        /* ...is answered (ENOENT) while watchd is stopped; the FUSE daemon is
         * stopped again, and its entries and attributes let age (1 s in libfuse). */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        g_usleep(300 * 1000);
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        g_usleep(1500 * 1000);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        /* The look-up that follows waits for the FUSE daemon, in a worker. */
        if (!wt_await_stat(reader.proxy, "fs_stalls", 2, TIMEOUT_MS))
                g_error("fs_stalls is %" G_GUINT64_FORMAT ", not 2", wt_stat(reader.proxy, "fs_stalls"));
        root_goes_on(f, &reader, "hung-pending-add");
        g_assert_false(readable(st.report_fd)); /* nobody's AddWatch waits for its look-up */

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's pending AddWatch: %s", line);
        make_file(pending);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

/*
 * Issue 24 item 1 as nobody: AddWatchFd of a directory of nobody's own
 * bindfs ([poll] fuse = 0), its FUSE daemon stopped after nobody opened it.
 * What AddWatchFd asks of the descriptor's file system (access_check_fd()'s
 * fstat and its fstatfs for an internal file system, remote.c's fs_detect()
 * and parent fstatat) ran on the loop, and the fstatfs is a FUSE_STATFS
 * request, sent every time (no cache), which the stopped FUSE daemon never
 * answers: watchd froze for everyone (root's GetStats was not answered).
 * Now those run in a job in the lane of the descriptor's file system
 * (manager_add_watch_fd_async()): it stalls (fs_stalled 1), root goes on,
 * the call is answered once the FUSE daemon answers, and nobody's first
 * client still hears of a file made in a.
 */
static void test_hung_add_watch_fd(Fixture *f, gconstpointer data) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *a = g_build_filename(back, "a", NULL), *ma = g_build_filename(mnt, "a", NULL);
        g_autofree char *mfile = g_build_filename(ma, "after", NULL), *step = NULL, *open_step = NULL, *await = NULL;
        g_autofree char *line = NULL, *fd_line = NULL;
        Reader reader;
        Stuck st = {}, fst = {};
        pid_t fuse_pid;

        step = g_strdup_printf("watch %s 0", ma);
        open_step = g_strconcat("open ", ma, NULL);
        await = g_strconcat("await ", mfile, NULL);
        fuse_pid = nobody_watch_in_mount(f, back, mnt, a, NULL, &reader, &st,
                                         (const char *const[]) { step, "go", await, NULL }, &line);
        if (fuse_pid <= 0)
                return;
        nobody_start(&fst, f, (const char *const[]) { open_step, "go", "watchfd 0", NULL });
        fd_line = stuck_read_line(&fst);
        if (strcmp(fd_line, "opened") != 0)
                g_error("nobody's open of %s: %s", ma, fd_line);

        /* No wait for the attributes to age: FUSE_STATFS is never answered from a cache. */
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        stuck_go(&fst); /* AddWatchFd of the descriptor opened before the stop */
        if (!wt_await_stat(reader.proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader.proxy, "fs_stalled"));
        root_goes_on(f, &reader, "hung-add-watch-fd");

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        g_assert_true(wt_await_stat(reader.proxy, "fs_stalled", 0, TIMEOUT_MS));
        g_free(fd_line);
        fd_line = stuck_read_line(&fst);
        if (!g_str_has_prefix(fd_line, "id "))
                g_error("nobody's AddWatchFd: %s", fd_line);
        nobody_end(&fst);
        make_file(mfile);
        stuck_go(&st);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

/*
 * Issue 24 item 1 as nobody: nobody's RECURSIVE AddWatch of its tree, which
 * holds a FUSE mount of its own that does not answer statfs (hangfs). The
 * walk opens the mount's root in a job of the mount's lane (answered); what
 * kind of file system it is (an fstatfs, a FUSE_STATFS, never cached) was
 * asked on the loop as the crossing was linked, and froze watchd for
 * everyone (root's GetStats timed out). Now it is asked in the job
 * (remote_hint_probe()): the lane stalls, root goes on, nobody's AddWatch
 * waits for its walk, and once the file system answers it is answered and
 * a file made in the mount is heard of.
 */
static void test_hung_crossing(Fixture *f, gconstpointer data) {
        g_autofree char *tree = g_build_filename(f->dir, "tree", NULL), *back = g_build_filename(f->dir, "back", NULL);
        g_autofree char *mnt = g_build_filename(tree, "m", NULL), *file = g_build_filename(mnt, "file", NULL);
        g_autofree char *step = NULL, *await = NULL, *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fs_pid;

        if (!f->bus)
                return;
        g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
        g_assert_cmpint(chown(tree, NOBODY, NOBODY), ==, 0);
        fs_pid = nobody_mounts_hangfs(f, HUNG_INOTIFY_CONFIG, back, mnt, "-", /* statfs= */ true);
        if (fs_pid <= 0)
                return;
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", tree, (unsigned) WATCHD_FLAG_RECURSIVE);
        await = g_strconcat("await ", file, NULL);
        nobody_start(&st, f, (const char *const[]) { "go", step, "go", await, NULL });

        stuck_go(&st);
        if (!wt_await_stat(reader.proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader.proxy, "fs_stalled"));
        root_goes_on(f, &reader, "hung-crossing");
        g_assert_false(readable(st.report_fd)); /* nobody's AddWatch waits for its walk */

        g_assert_cmpint(kill(fs_pid, SIGUSR2), ==, 0); /* it answers */
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's AddWatch: %s", line);
        g_assert_true(wt_await_stat(reader.proxy, "fs_stalled", 0, TIMEOUT_MS));
        make_file(file);
        stuck_go(&st);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

#define MANY_MOUNTS 20u

/*
 * Issue 24 item 1 as nobody: one user's share of the threads that wait on
 * file systems is bounded. nobody mounts MANY_MOUNTS bindfs of its own
 * ([poll] fuse = 0), each in a tree of its own, stops every FUSE daemon,
 * and makes a RECURSIVE AddWatch of each tree from a client of its own:
 * each walk's open of its mount waits in a worker of the mount's lane. At
 * most FSWORK_USER_STUCK_MAX (8) lanes of nobody's are held stalled, and the
 * 4 that ran when it was reached: fs_stalled never goes past 12 in 12 s
 * (unbounded, 4 more lanes stalled every 2 s, up to all 20 mounts, and with
 * 64 such mounts every thread was nobody's, everyone's work then falling
 * back to the loop). Root goes on; once the mounts answer, every one of
 * nobody's calls is answered (the walks that waited for the bound run).
 */
static void test_hung_many(Fixture *f, gconstpointer data) {
        g_autofree char *bindfs = g_find_program_in_path("bindfs");
        g_autoptr(GPtrArray) mnts = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GPtrArray) steps = g_ptr_array_new_with_free_func(g_free);
        pid_t pids[MANY_MOUNTS];
        Stuck st[MANY_MOUNTS] = {};
        guint64 most = 0;
        Reader reader;

        for (guint i = 0; i < MANY_MOUNTS; i++) {
                g_autofree char *tree = g_strdup_printf("%s/tree%u", f->dir, i);
                g_autofree char *back = g_strdup_printf("%s/back%u", f->dir, i);
                g_autofree char *sub = g_strdup_printf("%s/a", back);
                char *mnt = g_strdup_printf("%s/mnt", tree);

                g_ptr_array_add(mnts, mnt);
                pids[i] = i == 0 ? nobody_tree_and_mount(f, HUNG_INOTIFY_CONFIG, tree, back, mnt) : 0;
                if (i > 0) {
                        g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
                        g_assert_cmpint(chown(tree, NOBODY, NOBODY), ==, 0);
                        pids[i] = nobody_bindfs(bindfs, back, mnt);
                }
                if (pids[i] <= 0)
                        return;
                g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
                g_ptr_array_add(steps, g_strdup_printf("watch %s %u", tree, (unsigned) WATCHD_FLAG_RECURSIVE));
        }
        reader_on_local(f, &reader);
        for (guint i = 0; i < MANY_MOUNTS; i++)
                nobody_start(&st[i], f, (const char *const[]) { "go", steps->pdata[i], NULL });
        for (guint i = 0; i < MANY_MOUNTS; i++)
                g_assert_cmpint(kill(pids[i], SIGSTOP), ==, 0);
        g_usleep(ENTRY_TIMEOUT_US);
        for (guint i = 0; i < MANY_MOUNTS; i++)
                stuck_go(&st[i]);

        for (gint64 end = g_get_monotonic_time() + 12 * G_USEC_PER_SEC; g_get_monotonic_time() < end;) {
                most = MAX(most, wt_stat(reader.proxy, "fs_stalled"));
                g_usleep(100000);
        }
        g_test_message("figure: hung-many: nobody's walks of %u stopped FUSE mounts: at most %" G_GUINT64_FORMAT
                       " stalled lanes in 12 s",
                       MANY_MOUNTS, most);
        g_assert_cmpuint(most, >=, 8);
        g_assert_cmpuint(most, <=, 12);
        root_goes_on(f, &reader, "hung-many");

        for (guint i = 0; i < MANY_MOUNTS; i++)
                g_assert_cmpint(kill(pids[i], SIGCONT), ==, 0);
        for (guint i = 0; i < MANY_MOUNTS; i++) {
                g_autofree char *line = stuck_read_line(&st[i]);

                /* An id, or the documented Timeout of a call its file system held too long. */
                if (!g_str_has_prefix(line, "id ") && !strstr(line, "did not answer"))
                        g_error("nobody's RECURSIVE AddWatch of tree%u: %s", i, line);
                nobody_end(&st[i]);
        }
        g_assert_true(wt_await_stat(reader.proxy, "fs_stalled", 0, TIMEOUT_MS));
        reader_done(&reader);
        for (guint i = 0; i < MANY_MOUNTS; i++)
                g_assert_cmpint(umount2(mnts->pdata[i], MNT_DETACH), ==, 0);
}

int main(int argc, char *argv[]) {
        static const Params system_bus_hung = { .system = TRUE, .config = HUNG_CONFIG },
                            system_bus_hung_inotify = { .system = TRUE, .config = HUNG_INOTIFY_CONFIG };

        g_test_init(&argc, &argv, NULL);

        g_test_add("/system-bus/hung-fuse", Fixture, &system_bus_hung, fixture_setup, test_hung_fuse, fixture_teardown);
        g_test_add("/system-bus/hung-walk", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_walk,
                   fixture_teardown);
        g_test_add("/system-bus/hung-many", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_many,
                   fixture_teardown);
        g_test_add("/system-bus/hung-pending-add", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_pending_add, fixture_teardown);
        g_test_add("/system-bus/hung-add-watch-fd", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_add_watch_fd, fixture_teardown);
        g_test_add("/system-bus/hung-crossing", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_crossing,
                   fixture_teardown);
        return g_test_run();
}
