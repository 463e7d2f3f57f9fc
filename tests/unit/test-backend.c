/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-backend - the kernel interfaces, for real where this machine has them
 *
 * The syscall backend is driven against the running kernel: a watch placed
 * through a daemon-style fd, a record read and decoded, the watch removed.
 * /dev/inotify cannot be loaded here (the module is tested in the VM), so
 * for the device backend this checks what can be checked without it: that
 * something that is not an inotify device is refused, and that "auto" then
 * falls back to the syscalls.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "event_bits.h"
#include "event_decode.h"

static void test_syscall(void) {
        g_autofree char *dir = g_dir_make_tmp("test-backend-XXXXXX", NULL);
        g_autofree char *file = g_build_filename(dir, "new", NULL);
        guint8 buf[4096];
        Backend *b = NULL;
        RawEvent ev;
        size_t off = 0;
        ssize_t n;
        int fd, wd = -1, wd2 = -1;

        g_assert_cmpint(backend_syscall_new(&b), ==, 0);
        g_assert_cmpstr(backend_name(b), ==, "syscall");
        g_assert_nonnull(strstr(b->limit_hint, "max_user_watches"));
        g_assert_cmpint(backend_read(b, buf, sizeof(buf)), ==, -EAGAIN);

        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(backend_add_watch(b, fd, IN_CREATE, &wd), ==, 0);
        g_assert_cmpint(backend_add_watch(b, fd, IN_CREATE | IN_DELETE, &wd2), ==, 0);
        g_assert_cmpint(wd, ==, wd2); /* same inode, same wd */
        close(fd);                    /* the watch does not need the fd */

        g_assert_true(g_file_set_contents(file, "", 0, NULL));
        n = backend_read(b, buf, sizeof(buf));
        g_assert_cmpint(n, >, 0);
        g_assert_cmpint(event_decode(buf, (size_t) n, &off, &ev), ==, 1);
        g_assert_cmpint(ev.wd, ==, wd);
        g_assert_cmpuint(ev.mask, ==, IN_CREATE);
        g_assert_nonnull(ev.name);

        g_assert_cmpint(backend_rm_watch(b, wd), ==, 0);
        g_assert_cmpint(backend_rm_watch(b, wd), ==, -EINVAL);
        g_unlink(file);
        g_rmdir(dir);
        backend_free(b);
}

static void test_device_refuses_non_devices(void) {
        g_autofree char *dir = g_dir_make_tmp("test-backend-XXXXXX", NULL);
        g_autofree char *file = g_build_filename(dir, "not-a-device", NULL);
        Backend *b = NULL;

        g_assert_true(g_file_set_contents(file, "", 0, NULL));
        g_assert_cmpint(backend_device_new("/nonexistent/inotify", &b), ==, -ENOENT);
        g_assert_cmpint(backend_device_new(file, &b), ==, -ENOTTY);
        g_assert_cmpint(backend_device_new("/dev/null", &b), ==, -ENOTTY); /* a char device, not inotify */
        g_assert_null(b);

        g_assert_cmpint(backend_new(BACKEND_AUTO, "/dev/null", &b), ==, 0);
        g_assert_cmpstr(backend_name(b), ==, "syscall");
        backend_free(b);
        g_assert_cmpint(backend_new(BACKEND_DEVICE, file, &b), ==, -ENOTTY);
        g_unlink(file);
        g_rmdir(dir);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/backend/syscall", test_syscall);
        g_test_add_func("/backend/device refuses what is not an inotify device", test_device_refuses_non_devices);
        return g_test_run();
}
