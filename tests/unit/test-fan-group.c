/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-fan-group - watchd-fanotify (the helper) and fan_group.c (watchd's
 * side) together: a group from the helper, a filesystem mark on a tmpfs of
 * the test's own, events read from the group, the helper's refusals.
 * Needs root (a mount, CAP_SYS_ADMIN for the helper); skipped otherwise.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <linux/fanotify.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fan_decode.h"
#include "fan_group.h"
#include "fan_helper.h"

typedef struct Fixture {
        char *dir; /* the socket's directory and the tmpfs mount point */
        char *sock;
        char *mnt;
        GPid helper;
        bool ok;
} Fixture;

/* The helper goes with the test, even one that fails an assertion (no
 * teardown then): an orphan holding the test's output open would make meson
 * wait for it until its timeout. */
static void child_setup(gpointer data) {
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

static void fixture_setup(Fixture *f, gconstpointer data) {
        const char *argv[] = { WATCHD_FANOTIFY, "--listen", NULL, NULL };
        g_autoptr(GError) error = NULL;

        if (geteuid() != 0) {
                g_test_skip("needs root: a tmpfs mount, and CAP_SYS_ADMIN for the helper");
                return;
        }
        f->dir = g_dir_make_tmp("test-fan-group-XXXXXX", NULL);
        g_assert_nonnull(f->dir);
        f->sock = g_build_filename(f->dir, "sock", NULL);
        f->mnt = g_build_filename(f->dir, "mnt", NULL);
        g_assert_cmpint(g_mkdir(f->mnt, 0755), ==, 0);
        if (mount("test-fan-group", f->mnt, "tmpfs", 0, "size=1m") < 0) {
                g_test_skip("cannot mount a tmpfs");
                return;
        }
        argv[2] = f->sock;
        g_assert_true(g_spawn_async(NULL, (char **) argv, NULL,
                                    G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                                    child_setup, NULL, &f->helper, &error));
        /* Ready once its socket is there (a generous bound: a loaded machine). */
        for (int i = 0; i < 3000 && !g_file_test(f->sock, G_FILE_TEST_EXISTS); i++)
                g_usleep(10000);
        g_assert_true(g_file_test(f->sock, G_FILE_TEST_EXISTS));
        f->ok = true;
}

static void fixture_teardown(Fixture *f, gconstpointer data) {
        if (f->helper) {
                kill(f->helper, SIGTERM);
                waitpid(f->helper, NULL, 0);
        }
        if (f->mnt) {
                (void) umount2(f->mnt, MNT_DETACH);
                g_rmdir(f->mnt);
        }
        if (f->sock)
                g_unlink(f->sock);
        if (f->dir)
                g_rmdir(f->dir);
        g_free(f->dir);
        g_free(f->sock);
        g_free(f->mnt);
}

/* Reads the group until an event with mask bits comes (a generous bound: the kernel queues it at once). */
static bool read_until(int fd, uint64_t mask, const char *name) {
        uint8_t buf[4096];

        for (int i = 0; i < 100; i++) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                FanRawEvent ev;
                size_t off = 0;
                ssize_t n;

                if (poll(&p, 1, 100) <= 0)
                        continue;
                n = read(fd, buf, sizeof(buf));
                if (n <= 0)
                        continue;
                while (fan_decode(buf, (size_t) n, &off, &ev) == 1)
                        if ((ev.mask & mask) && ev.has_entry && ev.entry.name && ev.entry.name_len == strlen(name) &&
                            memcmp(ev.entry.name, name, ev.entry.name_len) == 0)
                                return true;
        }
        return false;
}

static void test_mark(Fixture *f, gconstpointer data) {
        g_autofree char *a = NULL, *b = NULL;
        FanGroup *g = NULL;
        int dfd;

        if (!f->ok)
                return;
        g_assert_cmpint(fan_group_new(f->sock, &g), ==, 0);
        g_assert_cmpint(fan_group_fd(g), >=, 0);
        g_assert_true(fcntl(fan_group_fd(g), F_GETFL) & O_NONBLOCK);

        dfd = open(f->mnt, O_PATH | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(dfd, >=, 0);
        g_assert_cmpint(fan_group_mark(g, dfd, FAN_CREATE | FAN_ONDIR), ==, 0);
        a = g_build_filename(f->mnt, "a", NULL);
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_true(read_until(fan_group_fd(g), FAN_CREATE, "a"));

        /* Removed: the next creation is not reported, the one after a new mark is. */
        g_assert_cmpint(fan_group_unmark(g, dfd, FAN_CREATE | FAN_ONDIR), ==, 0);
        b = g_build_filename(a, "b", NULL);
        g_assert_cmpint(g_mkdir(b, 0755), ==, 0);
        g_assert_cmpint(fan_group_mark(g, dfd, FAN_DELETE | FAN_ONDIR), ==, 0);
        g_assert_cmpint(g_rmdir(b), ==, 0);
        g_assert_true(read_until(fan_group_fd(g), FAN_DELETE, "b"));
        g_assert_cmpint(g_rmdir(a), ==, 0);

        /* What the helper refuses: a mask that is not only notifications, no fd. */
        g_assert_cmpint(fan_group_mark(g, dfd, FAN_OPEN_PERM), ==, -EINVAL);
        g_assert_cmpint(fan_group_mark(g, dfd, 0), ==, -EINVAL);
        g_assert_cmpint(fan_group_mark(g, -1, FAN_CREATE), ==, -EBADF);
        /* A filesystem with no fsid (procfs): the kernel's answer comes back. */
        {
                int pfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);

                g_assert_cmpint(pfd, >=, 0);
                g_assert_cmpint(fan_group_mark(g, pfd, FAN_CREATE), <, 0);
                close(pfd);
        }
        /* Still serving. */
        g_assert_cmpint(fan_group_mark(g, dfd, FAN_CREATE), ==, 0);
        close(dfd);
        fan_group_free(g);
}

/* A peer that is not root is closed unanswered. */
static void test_not_root(Fixture *f, gconstpointer data) {
        pid_t pid;
        int status;

        if (!f->ok)
                return;
        /* The socket's directory must let nobody reach it (the socket itself is 0600:
         * connecting needs write permission, which is the point of the test's
         * chmod below: the helper's own check is what is tested). */
        g_assert_cmpint(chmod(f->dir, 0755), ==, 0);
        g_assert_cmpint(chmod(f->sock, 0666), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                FanGroup *g = NULL;
                int r;

                if (setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(2);
                r = fan_group_new(f->sock, &g);
                _exit(r == -ECONNRESET || r == -EPIPE ? 0 : 1);
        }
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        /* And root still is served. */
        {
                FanGroup *g = NULL;

                g_assert_cmpint(fan_group_new(f->sock, &g), ==, 0);
                fan_group_free(g);
        }
}

/* No helper: connecting says so. */
static void test_no_helper(void) {
        FanGroup *g = NULL;

        g_assert_cmpint(fan_group_new("/nonexistent/watchd-fanotify.sock", &g), ==, -ENOENT);
        g_assert_null(g);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/fan-group/mark", Fixture, NULL, fixture_setup, test_mark, fixture_teardown);
        g_test_add("/fan-group/not-root", Fixture, NULL, fixture_setup, test_not_root, fixture_teardown);
        g_test_add_func("/fan-group/no-helper", test_no_helper);
        return g_test_run();
}
