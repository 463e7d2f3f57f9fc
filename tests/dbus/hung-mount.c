/* SPDX-License-Identifier: GPL-2.0-or-later */

/*
 * hung-mount - nobody's own FUSE mounts and nobody's child, for the hung-*
 * cases (see hung-mount.h)
 *
 * Linked into test-hung-calls and test-hung-changes (the system-bus-test
 * library of meson.build, built with HANGFS).
 */

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "hung-mount.h"

/* ---------------------------------------------------------------- nobody's own FUSE mount */

/* As a GSpawnChildSetupFunc too. */
static void become_nobody(gpointer unused) {
        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
                _exit(2);
}

/* nobody's bindfs of back on mnt (both made here, nobody's), once
 * nobody_mounts_bindfs() has set the namespace up: the FUSE daemon's pid. */
pid_t nobody_bindfs(char *bindfs, const char *back, const char *mnt) {
        g_autoptr(GError) error = NULL;
        pid_t pid;
        int status = -1;

        g_assert_cmpint(g_mkdir_with_parents(back, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(mnt, 0755), ==, 0);
        g_assert_cmpint(chown(back, NOBODY, NOBODY), ==, 0);
        g_assert_cmpint(chown(mnt, NOBODY, NOBODY), ==, 0);
        g_assert_true(g_spawn_sync(
                NULL, (char *[]) { bindfs, (char *) "-o", (char *) "allow_other", (char *) back, (char *) mnt, NULL },
                NULL, 0, become_nobody, NULL, NULL, NULL, &status, &error));
        g_assert_no_error(error);
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        pid = wt_bindfs_pid(mnt);
        g_assert_cmpint(pid, >, 0);
        {
                /* Resumed by a watcher even if this test aborts, and ended if still
                 * there: its mount is in this process's namespace, gone with it. */
                g_autofree char *script = g_strdup_printf(
                        "while kill -0 %d 2>/dev/null; do sleep 1; done; kill -CONT %d; "
                        "[ \"$(cat /proc/%d/comm 2>/dev/null)\" = bindfs ] && kill -TERM %d",
                        (int) getpid(), (int) pid, (int) pid, (int) pid);

                g_assert_true(g_spawn_async(NULL, (char *[]) { (char *) "/bin/sh", (char *) "-c", script, NULL }, NULL,
                                            0, NULL, NULL, NULL, &error));
        }
        return pid;
}

/*
 * Issue 24's attacker mounts the file system itself: nobody runs bindfs -o
 * allow_other, which fusermount grants only where /etc/fuse.conf says
 * user_allow_other. This machine's does not, and a test does not change
 * /etc: the test moves into a mount namespace of its own, binds such a
 * fuse.conf over /etc/fuse.conf there, and restarts watchd in it (the bus
 * stays) so that it sees the mount. back and mnt (made here) become
 * nobody's. Returns the FUSE daemon's pid, or 0 with the case skipped.
 */
static bool nobody_may_mount(Fixture *f, const char *config, const char *program) {
        g_autofree char *conf = g_build_filename(f->dir, "fuse.conf", NULL);

        if (watchd_wrapped()) {
                g_test_skip("under a wrapper (valgrind) the hang stops watchd's loop too: not understood yet");
                return false;
        }
        if (!f->bus)
                return false;
        if (!program || access("/dev/fuse", R_OK | W_OK) != 0 || access("/etc/fuse.conf", F_OK) != 0) {
                g_test_skip("no FUSE mount here: bindfs (or hangfs) or /etc/fuse.conf missing, or /dev/fuse unusable");
                return false;
        }
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                g_test_skip("no mount namespace of its own here");
                return false;
        }
        g_assert_true(g_file_set_contents(conf, "user_allow_other\n", -1, NULL));
        /* An earlier case of this process bound its own, gone with its directory (ENOENT). */
        (void) umount2("/etc/fuse.conf", MNT_DETACH);
        g_assert_cmpint(mount(conf, "/etc/fuse.conf", NULL, MS_BIND, NULL), ==, 0);
        g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);
        f->daemon = wt_daemon_start(f->bus, config);
        return true;
}

pid_t nobody_mounts_bindfs(Fixture *f, const char *config, const char *back, const char *mnt) {
        g_autofree char *bindfs = g_find_program_in_path("bindfs");

        if (!nobody_may_mount(f, config, bindfs))
                return 0;
        return nobody_bindfs(bindfs, back, mnt);
}

static void become_nobody_dying_with_parent(gpointer unused) {
        become_nobody(NULL);
        /* After the setuid, which clears it. */
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/*
 * As nobody_mounts_bindfs(), with hangfs (tests/dbus/hangfs.c) serving
 * back at mnt as nobody: its opens of a directory named hang for reading
 * (and, with statfs, its statfs calls) wait until it gets SIGUSR2 (SIGUSR1:
 * again). loop: every request of watchd's event loop (its main thread)
 * waits as well. options: more -o options (NULL: none). Returns its
 * pid, or 0 with the case skipped.
 */
pid_t hangfs_mount(Fixture *f, const char *config, const char *back, const char *mnt, const char *hang, bool statfs,
                   bool loop, const char *options) {
#ifdef HANGFS
        g_autoptr(GError) error = NULL;
        g_autofree char *env = g_strconcat("HANGFS_NAME=", hang, NULL), *tid_env = NULL;
        g_autofree char *opts = g_strconcat("allow_other", options ? "," : NULL, options, NULL);
        g_autofree char *exe = g_build_filename(f->dir, "hangfs", NULL), *text = NULL;
        struct stat sb, mb;
        gsize len;
        GPid pid;

        if (!nobody_may_mount(f, config, HANGFS))
                return 0;
        /* watchd as it runs now (nobody_may_mount() started it again): its loop is its main thread. */
        tid_env = g_strdup_printf("HANGFS_TID=%d", loop ? (int) wt_process_pid(f->daemon->process) : 0);
        /* A copy nobody may run: the build tree may be below a directory it
         * cannot enter (a clone in /root, 0700). */
        g_assert_true(g_file_get_contents(HANGFS, &text, &len, NULL));
        g_assert_true(g_file_set_contents(exe, text, (gssize) len, NULL));
        g_assert_cmpint(chmod(exe, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(back, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(mnt, 0755), ==, 0);
        g_assert_cmpint(chown(back, NOBODY, NOBODY), ==, 0);
        g_assert_cmpint(chown(mnt, NOBODY, NOBODY), ==, 0);
        g_assert_cmpint(stat(mnt, &sb), ==, 0); /* its device before the mount */
        g_assert_true(g_spawn_async(NULL, (char *[]) { exe, (char *) back, (char *) mnt, (char *) "-o", opts, NULL },
                                    (char *[]) { env, tid_env, statfs ? (char *) "HANGFS_STATFS=1" : NULL, NULL },
                                    G_SPAWN_DO_NOT_REAP_CHILD, become_nobody_dying_with_parent, NULL, &pid, &error));
        g_assert_no_error(error);
        for (int i = 0; i < 500 && stat(mnt, &mb) == 0 && mb.st_dev == sb.st_dev; i++)
                g_usleep(10 * 1000);
        g_assert_cmpint(mb.st_dev, !=, sb.st_dev);
        return pid;
#else
        g_test_skip("built without libfuse's headers: no hangfs");
        return 0;
#endif
}

pid_t nobody_mounts_hangfs(Fixture *f, const char *config, const char *back, const char *mnt, const char *hang,
                           bool statfs) {
        return hangfs_mount(f, config, back, mnt, hang, statfs, /* loop= */ false, NULL);
}

/* nobody's tree (made here, nobody's) beside nobody's bindfs mount, as
 * nobody_mounts_bindfs(); 0 with the case skipped (no bus, no bindfs). */
pid_t nobody_tree_and_mount(Fixture *f, const char *config, const char *tree, const char *back, const char *mnt) {
        if (!f->bus)
                return 0;
        g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
        g_assert_cmpint(chown(tree, NOBODY, NOBODY), ==, 0);
        return nobody_mounts_bindfs(f, config, back, mnt);
}

typedef struct Seen {
        const char *path;
        uint32_t mask; /* IN_CREATE, or IN_DELETE_SELF */
        bool seen;
        bool told; /* an Overflow came */
} Seen;

static int seen_on_message(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Seen *w = userdata;
        const char *path, *new_path;
        uint32_t id, mask, cookie;
        int r;

        if (sd_bus_message_is_signal(m, "org.example.Inotify", "Overflow"))
                w->told = true;
        if (!sd_bus_message_is_signal(m, "org.example.Inotify", "Events"))
                return 0;
        r = sd_bus_message_enter_container(m, 'a', "(uuuss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(uuuss)", &id, &mask, &cookie, &path, &new_path)) > 0)
                if (strcmp(path, w->path) == 0 && (mask & w->mask))
                        w->seen = true;
        return r < 0 ? r : 0;
}

/*
 * The child, as nobody, runs steps (argv-like, NULL-terminated) and says
 * how each went, a line each:
 *   "watch PATH FLAGS [MASK]"
 *                         AddWatch (MASK, or IN_CREATE | IN_DELETE_SELF): "id N"
 *                         or "failed MESSAGE"
 *   "durable NAME PATH"   CreateDurable (IN_CREATE): "created" or "failed MESSAGE"
 *   "open PATH"           opens the directory PATH (O_RDONLY), kept for "watchfd":
 *                         "opened" or "failed MESSAGE"
 *   "watchfd FLAGS"       AddWatchFd of that descriptor (IN_CREATE | IN_DELETE_SELF):
 *                         "id N" or "failed MESSAGE"
 *   "go"                  waits for the test's byte
 *   "await PATH"          reads its bus until a CREATE of PATH comes (30 s):
 *                         "seen" or "not seen"
 *   "await-told PATH"     the same until an Overflow came too: "seen told",
 *                         or what was missing at the end ("seen untold",
 *                         "not seen told", "not seen untold")
 *   "gone-told PATH"      as await-told, for an IN_DELETE_SELF of PATH
 * Calls wait far past the test's bounds: they are answered when watchd answers.
 */
static void nobody_child(const char *address, const char *const *steps, int report_fd, int go_fd) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        sd_bus *bus = NULL;
        const uint64_t timeout = (uint64_t) 10 * TIMEOUT_MS * 1000;
        int dir_fd = -1;
        char c;

        become_nobody(NULL);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                _exit(2);
        if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
            sd_bus_start(bus) < 0)
                _exit(3);
        for (; *steps; steps++) {
                g_auto(GStrv) w = g_strsplit(*steps, " ", 4);
                sd_bus_message *call = NULL;
                uint32_t id;

                if (strcmp(w[0], "go") == 0) {
                        if (read(go_fd, &c, 1) != 1)
                                _exit(4);
                } else if (strcmp(w[0], "open") == 0) {
                        dir_fd = open(w[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (dir_fd < 0)
                                dprintf(report_fd, "failed %s\n", g_strerror(errno));
                        else
                                dprintf(report_fd, "opened\n");
                } else if (strcmp(w[0], "watchfd") == 0) {
                        if (sd_bus_message_new_method_call(bus, &call, "org.example.Inotify", "/org/example/Inotify",
                                                           "org.example.Inotify", "AddWatchFd") < 0 ||
                            sd_bus_message_append(call, "huu", dir_fd, (uint32_t) (IN_CREATE | IN_DELETE_SELF),
                                                  (uint32_t) strtoul(w[1], NULL, 0)) < 0)
                                _exit(5);
                        if (sd_bus_call(bus, call, timeout, &error, &reply) < 0)
                                dprintf(report_fd, "failed %s\n", error.message ? error.message : "?");
                        else if (sd_bus_message_read(reply, "u", &id) >= 0)
                                dprintf(report_fd, "id %u\n", id);
                        else
                                _exit(6);
                        sd_bus_error_free(&error);
                        reply = sd_bus_message_unref(reply);
                        sd_bus_message_unref(call);
                } else if (strcmp(w[0], "watch") == 0 || strcmp(w[0], "durable") == 0) {
                        bool watch = strcmp(w[0], "watch") == 0;

                        if (sd_bus_message_new_method_call(bus, &call, "org.example.Inotify", "/org/example/Inotify",
                                                           "org.example.Inotify",
                                                           watch ? "AddWatch" : "CreateDurable") < 0 ||
                            (watch ? sd_bus_message_append(call, "suu", w[1],
                                                           w[3] ? (uint32_t) strtoul(w[3], NULL, 0) :
                                                                  (uint32_t) (IN_CREATE | IN_DELETE_SELF),
                                                           (uint32_t) strtoul(w[2], NULL, 0)) :
                                     sd_bus_message_append(call, "ssuu", w[1], w[2], (uint32_t) IN_CREATE,
                                                           (uint32_t) 0)) < 0)
                                _exit(5);
                        if (sd_bus_call(bus, call, timeout, &error, &reply) < 0)
                                dprintf(report_fd, "failed %s\n", error.message ? error.message : "?");
                        else if (!watch)
                                dprintf(report_fd, "created\n");
                        else if (sd_bus_message_read(reply, "u", &id) >= 0)
                                dprintf(report_fd, "id %u\n", id);
                        else
                                _exit(6);
                        sd_bus_error_free(&error);
                        reply = sd_bus_message_unref(reply);
                        sd_bus_message_unref(call);
                } else if (strcmp(w[0], "await") == 0 || strcmp(w[0], "await-told") == 0 ||
                           strcmp(w[0], "gone-told") == 0) {
                        bool told = g_str_has_suffix(w[0], "-told");
                        Seen seen = { .path = w[1], .mask = strcmp(w[0], "gone-told") == 0 ? IN_DELETE_SELF : IN_CREATE };
                        uint64_t end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
                        sd_bus_slot *slot = NULL;

                        if (sd_bus_add_filter(bus, &slot, seen_on_message, &seen) < 0)
                                _exit(7);
                        while (!(seen.seen && (seen.told || !told)) && (uint64_t) g_get_monotonic_time() < end) {
                                int r = sd_bus_process(bus, NULL);

                                if (r < 0)
                                        _exit(8);
                                if (r == 0)
                                        (void) sd_bus_wait(bus, 100000);
                        }
                        dprintf(report_fd, "%s%s\n", seen.seen ? "seen" : "not seen",
                                !told             ? "" :
                                        seen.told ? " told" :
                                                    " untold");
                        sd_bus_slot_unref(slot);
                } else
                        _exit(9);
        }
        _exit(0);
}

void nobody_start(Stuck *st, Fixture *f, const char *const *steps) {
        int report[2], go[2];

        g_assert_cmpint(pipe2(report, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(go, O_CLOEXEC), ==, 0);
        st->pid = fork();
        g_assert_cmpint(st->pid, >=, 0);
        if (st->pid == 0) {
                close(report[0]);
                close(go[1]);
                nobody_child(f->bus->address, steps, report[1], go[0]);
        }
        close(report[1]);
        close(go[0]);
        st->report_fd = report[0];
        st->go_fd = go[1];
}

void nobody_end(Stuck *st) {
        int status = -1;

        g_assert_cmpint(waitpid(st->pid, &status, 0), ==, st->pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(st->report_fd);
        close(st->go_fd);
}

/* Root's GetStats round trips and root's create+delete on f->dir/local, worst
 * of 20 each, with the bounds that say "not frozen" (the daemon used to wait
 * for the file system: seconds, or for ever). */
void root_goes_on(Fixture *f, Reader *reader, const char *what) {
        gint64 worst_stats = 0, worst_event = 0;
        g_autofree char *prefix = g_strconcat("local/", what, NULL);

        for (guint i = 0; i < 20; i++) {
                gint64 t0 = g_get_monotonic_time();

                (void) wt_stat(reader->proxy, "clients");
                worst_stats = MAX(worst_stats, g_get_monotonic_time() - t0);
                t0 = g_get_monotonic_time();
                create_remove(f, prefix, i);
                await_records(reader, reader->n_records + 2);
                worst_event = MAX(worst_event, g_get_monotonic_time() - t0);
        }
        g_test_message("figure: %s: while nobody's FUSE mount does not answer, root's GetStats round trip worst of 20 "
                       "%" G_GINT64_FORMAT " us, root's create+delete on tmpfs delivered worst of 20 %" G_GINT64_FORMAT
                       " us",
                       what, worst_stats, worst_event);
        g_assert_cmpint(worst_stats, <, 2 * G_USEC_PER_SEC);
        g_assert_cmpint(worst_event, <, 2 * G_USEC_PER_SEC);
}

/* path made (empty) as root; the test ends if it cannot be. */
void make_file(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        if (fd < 0)
                g_error("Failed to create '%s': %s", path, g_strerror(errno));
        close(fd);
}

/* nobody's last step, an "await": it saw its record; then nobody, root's
 * reader and the mount go. line: the test's last line read (freed). */
void nobody_sees_last(Stuck *st, Reader *reader, const char *mnt, char *line) {
        g_free(line);
        line = stuck_read_line(st);
        g_assert_cmpstr(line, ==, "seen");
        g_free(line);
        nobody_end(st);
        reader_done(reader);
        g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
}

void reader_on_local(Fixture *f, Reader *reader) {
        g_autofree char *local = g_build_filename(f->dir, "local", NULL);

        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        reader_init(reader, f->bus, PING_ANSWER);
        reader->id = add_watch(reader->proxy, local);
}

/* nobody's own bindfs of back on mnt ([poll] fuse = 0) with a, a directory
 * of back, made nobody's (and file in it, if not NULL), root's reader on
 * local, and nobody's steps started, the first a watch whose answer must be
 * an id (*line, the caller's). Returns the FUSE daemon's pid, 0 with the
 * case skipped. */
pid_t nobody_watch_in_mount(Fixture *f, const char *back, const char *mnt, const char *a, const char *file,
                            Reader *reader, Stuck *st, const char *const *steps, char **line) {
        g_autofree char *tree = g_build_filename(f->dir, "tree", NULL);
        pid_t fuse_pid;

        fuse_pid = nobody_tree_and_mount(f, HUNG_INOTIFY_CONFIG, tree, back, mnt);
        if (fuse_pid <= 0)
                return 0;
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_cmpint(chown(a, NOBODY, NOBODY), ==, 0);
        if (file) {
                make_file(file);
                g_assert_cmpint(chown(file, NOBODY, NOBODY), ==, 0);
        }
        reader_on_local(f, reader);
        nobody_start(st, f, steps);
        *line = stuck_read_line(st);
        if (!g_str_has_prefix(*line, "id "))
                g_error("nobody's AddWatch: %s", *line);
        return fuse_pid;
}
