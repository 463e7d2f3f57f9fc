// SPDX-License-Identifier: GPL-2.0
/*
 * conformance.c - /dev/inotify against the 0.23-6 ABI, one test per
 * behaviour and per error code (docs/KERNEL-MODULE.md, "Behaviour"), and
 * against what ABI version 2 adds to it (INOTIFY_ADD_WATCH with the bits
 * inotify gained after 2005, INOTIFY_GET_INFO, INOTIFY_SET_FLAGS, fdinfo). Runs as root inside the VM
 * with inotify_dev loaded; each test runs in its own child with a time
 * limit and prints "PASS name" or "FAIL name: why".
 *
 * Events are awaited with poll(), never slept for. "No event" is shown by a
 * sentinel: after the operation that must not be reported, one that must
 * be; the next record has to be the sentinel's.
 *
 * Usage: conformance [test-name...]   (default: all but the named-only ones)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/select.h>
#include <sys/sysmacros.h>
#include <sys/time.h>

#include "vmtest.h"

#define DEV "/dev/inotify"
#define T   2000 /* ms to wait for an event that must come */

static char dir[256];

/* A fresh, empty directory for the test: /tmp/c-<name>-<pid> (a test may run twice). */
static int setup_dir(const char *name) {
        snprintf(dir, sizeof(dir), "/tmp/c-%s-%d", name, (int) getpid());
        return mkdir(dir, 0755);
}

static const char *p(const char *rel) {
        static char path[4][512];
        static int i;

        i = (i + 1) % 4;
        snprintf(path[i], sizeof(path[i]), "%s/%s", dir, rel);
        return path[i];
}

static int touch(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        if (fd < 0)
                return -1;
        return close(fd);
}

static int write_file(const char *path, const char *s) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ssize_t n;

        if (fd < 0)
                return -1;
        n = write(fd, s, strlen(s));
        close(fd);
        return n < 0 ? -1 : 0;
}

/*
 * Watches @path with the watch ioctl @cmd (INOTIFY_WATCH, INOTIFY_ADD_WATCH)
 * through an fd opened with @oflags, closed right after: a watch pins no
 * fd. The wd, or -1 and the ioctl's errno.
 */
static int watch_cmd(int dev, unsigned long cmd, const char *path, int oflags, uint32_t mask) {
        struct inotify_watch_request req;
        int fd, wd, e;

        fd = open(path, oflags | O_CLOEXEC);
        if (fd < 0)
                return -1;
        req.fd = fd;
        req.mask = mask;
        wd = ioctl(dev, cmd, &req);
        e = errno;
        close(fd);
        errno = e;
        return wd;
}

/* Watches @path (opened read-only, then closed: a watch pins no fd). */
static int add_watch(int dev, const char *path, uint32_t mask) {
        return watch_cmd(dev, INOTIFY_WATCH, path, O_RDONLY, mask);
}

static int open_dev(struct vt_reader *r) {
        r->len = r->off = 0;
        r->fd = open(DEV, O_RDONLY | O_CLOEXEC);
        return r->fd;
}

/* Fails unless the next record is {wd, mask, cookie?, name}. */
static int expect(struct vt_reader *r, int wd, uint32_t mask, const char *name, uint32_t *cookie) {
        const struct inotify_event *ev = vt_next(r, T);

        if (!ev)
                return vt_fail("expected wd=%d mask=%#x name=%s, got nothing (%s)", wd, mask, name ? name : "-",
                               strerror(errno));
        if (ev->wd != wd || ev->mask != mask || (name && (!ev->len || strcmp(ev->name, name))) || (!name && ev->len))
                return vt_fail("expected wd=%d mask=%#x name=%s, got wd=%d mask=%#x name=%s", wd, mask,
                               name ? name : "-", ev->wd, ev->mask, ev->len ? ev->name : "-");
        if (cookie)
                *cookie = ev->cookie;
        else if (ev->cookie)
                return vt_fail("unexpected cookie %u on mask %#x", ev->cookie, ev->mask);
        return 0;
}

struct want {
        int wd;
        uint32_t mask;
        const char *name;
};

/*
 * Fails unless the next @n records are exactly @w, in order for each wd;
 * records of different wds may interleave (their order is the kernel's).
 */
static int expect_set(struct vt_reader *r, const struct want *w, int n) {
        bool done[16] = { false };
        int i, k;

        for (i = 0; i < n; i++) {
                const struct inotify_event *ev = vt_next(r, T);

                if (!ev)
                        return vt_fail("expected %d records, got %d (%s)", n, i, strerror(errno));
                for (k = 0; k < n && (done[k] || w[k].wd != ev->wd); k++)
                        ;
                if (k == n || w[k].mask != ev->mask || (w[k].name && (!ev->len || strcmp(ev->name, w[k].name))) ||
                    (!w[k].name && ev->len))
                        return vt_fail("record %d: got wd=%d mask=%#x name=%s, want wd=%d mask=%#x name=%s", i, ev->wd,
                                       ev->mask, ev->len ? ev->name : "-", k < n ? w[k].wd : -2, k < n ? w[k].mask : 0,
                                       k < n && w[k].name ? w[k].name : "-");
                done[k] = true;
        }
        return 0;
}

/* Fails if a record is pending (non-blocking check, for after a sentinel). */
static int expect_none(struct vt_reader *r) {
        const struct inotify_event *ev = vt_next(r, 0);

        if (ev)
                return vt_fail("unexpected record wd=%d mask=%#x name=%s", ev->wd, ev->mask, ev->len ? ev->name : "-");
        return 0;
}

/* ---- the device ---- */

/* The module's dev_mode parameter (octal, as the module prints it); -1 on error. */
static long dev_mode_param(void) {
        char buf[32] = "";
        ssize_t n;
        int fd;

        fd = open("/sys/module/inotify_dev/parameters/dev_mode", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        return strtol(buf, NULL, 8);
}

static int t_node(void) {
        struct stat st;
        long mode = dev_mode_param();

        CHECK(mode >= 0, "read the dev_mode parameter");
        CHECK(stat(DEV, &st) == 0, "stat " DEV);
        CHECK(S_ISCHR(st.st_mode), "not a character device");
        CHECK(major(st.st_rdev) == 10 && minor(st.st_rdev) == 63, "device is %u:%u, want 10:63", major(st.st_rdev),
              minor(st.st_rdev));
        CHECK((long) (st.st_mode & 07777) == mode, "mode %o, want dev_mode %lo", st.st_mode & 07777, mode);
        return 0;
}

/*
 * The default: the node is root's alone (0600), because the module cannot
 * run the LSM hook security_path_notify (kmod/inotify_dev_user.c): another
 * user's open() is EACCES.
 */
static int t_dev_mode_closed(void) {
        struct stat st;
        long mode = dev_mode_param();
        int status;
        pid_t pid;

        CHECK(stat(DEV, &st) == 0, "stat " DEV);
        CHECK((st.st_mode & 07777) == 0600 && st.st_uid == 0 && st.st_gid == 0,
              "mode %o owner %d:%d, want 600 root:root", st.st_mode & 07777, (int) st.st_uid, (int) st.st_gid);
        pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0) {
                if (setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(10);
                if (open(DEV, O_RDONLY) >= 0)
                        _exit(11);
                _exit(errno == EACCES ? 0 : 12);
        }
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "as nobody, open(" DEV ") must be EACCES (child status %d: 11 it opened, 12 another errno)",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        CHECK(mode == 0600, "the dev_mode parameter reads %lo, want the default 0600", mode);
        return 0;
}

/*
 * Loaded with dev_mode=0666 (guest.sh does it; named only): every user may
 * open the node, and a watch of nobody's works end to end.
 */
static int t_dev_mode_open(void) {
        struct stat st;
        long mode = dev_mode_param();
        int status;
        pid_t pid;

        CHECK(mode >= 0, "read the dev_mode parameter");
        CHECK(mode == 0666, "the module was loaded with dev_mode %lo, want 0666", mode);
        CHECK(stat(DEV, &st) == 0 && (st.st_mode & 07777) == 0666, "mode %o, want 666", st.st_mode & 07777);
        CHECK(setup_dir("devopen") == 0 && chmod(dir, 0755) == 0, "mkdir");
        CHECK(write_file(p("f"), "abc") == 0 && chmod(p("f"), 0644) == 0, "0644 file");
        pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0) {
                struct vt_reader r;
                int wd;

                if (setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(10);
                if (open_dev(&r) < 0)
                        _exit(11);
                wd = add_watch(r.fd, p("f"), IN_OPEN);
                if (wd <= 0)
                        _exit(12);
                if (close(open(p("f"), O_RDONLY | O_CLOEXEC)) < 0)
                        _exit(13);
                if (expect(&r, wd, IN_OPEN, NULL, NULL) < 0 || expect_none(&r) < 0)
                        _exit(14);
                _exit(0);
        }
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "as nobody: open " DEV " (11), watch a 0644 file (12), open it (13), get its IN_OPEN (14); "
              "child status %d",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return 0;
}

/* The article's own code, verbatim where it gives code. */
static int t_article_snippets(void) {
        struct vt_reader r;
        int dev_fd, fd, ret;
        uint32_t mask = IN_CREATE;

        CHECK(setup_dir("article") == 0, "mkdir");
        dev_fd = open_dev(&r);
        CHECK(dev_fd >= 0, "open " DEV);
        fd = open(dir, O_RDONLY);
        CHECK(fd >= 0, "open dir");
        {
                struct inotify_request request = { fd, mask };
                int watch_desc = ioctl(dev_fd, INOTIFY_WATCH, &request);

                CHECK(watch_desc > 0, "INOTIFY_WATCH returned %d", watch_desc);
                close(fd);
                CHECK(touch(p("f")) == 0, "touch");
                if (expect(&r, watch_desc, IN_CREATE, "f", NULL) < 0)
                        return -1;
                ret = ioctl(dev_fd, INOTIFY_IGNORE, watch_desc);
                CHECK(ret == 0, "INOTIFY_IGNORE by value returned %d", ret);
                if (expect(&r, watch_desc, IN_IGNORED, NULL, NULL) < 0)
                        return -1;
        }
        return 0;
}

static int t_ignore_by_pointer(void) {
        struct vt_reader r;
        int wd;

        CHECK(setup_dir("ignptr") == 0, "mkdir");
        CHECK(open_dev(&r) >= 0, "open");
        wd = add_watch(r.fd, dir, IN_CREATE);
        CHECK(wd > 0, "watch");
        CHECK(ioctl(r.fd, INOTIFY_IGNORE, &wd) == 0, "INOTIFY_IGNORE &wd");
        if (expect(&r, wd, IN_IGNORED, NULL, NULL) < 0)
                return -1;
        CHECK(ioctl(r.fd, INOTIFY_IGNORE, &wd) < 0 && errno == EINVAL, "second IGNORE must be EINVAL");
        return expect_none(&r);
}

static int t_ignore_einval(void) {
        int dev = open(DEV, O_RDONLY), wd = 4242, zero = 0, neg = -1;

        CHECK(dev >= 0, "open");
        CHECK(ioctl(dev, INOTIFY_IGNORE, 4242) < 0 && errno == EINVAL, "by value: unknown wd");
        CHECK(ioctl(dev, INOTIFY_IGNORE, &wd) < 0 && errno == EINVAL, "by pointer: unknown wd");
        CHECK(ioctl(dev, INOTIFY_IGNORE, &zero) < 0 && errno == EINVAL, "wd 0");
        CHECK(ioctl(dev, INOTIFY_IGNORE, &neg) < 0 && errno == EINVAL, "wd -1");
        return 0;
}

static int t_ignore_efault(void) {
        int dev = open(DEV, O_RDONLY);

        CHECK(dev >= 0, "open");
        /* Above INT_MAX and not readable: neither a pointer nor a wd. */
        CHECK(ioctl(dev, INOTIFY_IGNORE, (void *) 0xffff800000001000UL) < 0 && errno == EFAULT,
              "kernel address must be EFAULT");
        /*
         * 64 KiB and up is a pointer, always (no wd is that large): an
         * unmapped one is EFAULT, not a wd by value.
         */
        CHECK(msync((void *) INOTIFY_IGNORE_PTR_MIN, 4096, MS_ASYNC) < 0 && errno == ENOMEM,
              "the page at 64 KiB must be unmapped for this test");
        CHECK(ioctl(dev, INOTIFY_IGNORE, INOTIFY_IGNORE_PTR_MIN) < 0 && errno == EFAULT,
              "argument 65536 (an unmapped address) must be EFAULT");
        return 0;
}

/* Watches the file @i of the wd_space test, creating it; the wd, or -1 and errno. */
static int watch_nth(int dev, int i, uint32_t mask) {
        struct inotify_watch_request req;
        char name[32];
        int fd, wd, e;

        snprintf(name, sizeof(name), "f%d", i);
        fd = open(p(name), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                return -1;
        req.fd = fd;
        req.mask = mask;
        wd = ioctl(dev, INOTIFY_WATCH, &req);
        e = errno;
        close(fd);
        errno = e;
        return wd;
}

/*
 * Every wd lies in [1, INOTIFY_WD_MAX], so that INOTIFY_IGNORE by value can
 * never be taken for a pointer. One instance, 65536 files on a tmpfs of
 * their own, max_user_watches raised above that: the watches get wds 1 to
 * 65535 in order, the next new one is ENOSPC; records carry 65534 and
 * 65535; those two are removed by pointer and by value; new watches then
 * get them again (the allocation wraps within the range), and the space is
 * full again.
 */
static int t_wd_space(void) {
        long base = vt_sysfs_get(SYSFS_DIR "/stats/watches"), live;
        int i, wd = 0, over, over_errno, wda, wdb;
        struct vt_reader r;
        char lim[32];

        CHECK(base >= 0, "stats");
        CHECK(setup_dir("wdspace") == 0, "mkdir");
        CHECK(mount("tmpfs", dir, "tmpfs", 0, "size=1m,nr_inodes=70000") == 0, "mount tmpfs");
        CHECK(open_dev(&r) >= 0, "open");
        snprintf(lim, sizeof(lim), "%ld", base + INOTIFY_WD_MAX + 100);
        CHECK(vt_sysfs_set(SYSFS_DIR "/max_user_watches", lim) == 0, "raise max_user_watches");
        for (i = 0; i < INOTIFY_WD_MAX; i++) {
                wd = watch_nth(r.fd, i, IN_ATTRIB);
                if (wd != i + 1)
                        break;
        }
        over = i == INOTIFY_WD_MAX ? watch_nth(r.fd, i, IN_ATTRIB) : 0;
        over_errno = errno;
        live = vt_sysfs_get(SYSFS_DIR "/stats/watches") - base;
        /* Restore before checking, so that a failure does not leak into later tests. */
        CHECK(vt_sysfs_set(SYSFS_DIR "/max_user_watches", "65536") == 0, "restore");
        CHECK(i == INOTIFY_WD_MAX, "watch %d got wd %d, want %d", i + 1, wd, i + 1);
        errno = over_errno;
        CHECK(over < 0 && over_errno == ENOSPC, "watch %d must be ENOSPC: no wd above %d (got wd %d)",
              INOTIFY_WD_MAX + 1, INOTIFY_WD_MAX, over);
        CHECK(live == INOTIFY_WD_MAX, "%ld live watches counted, want %d", live, INOTIFY_WD_MAX);

        wda = INOTIFY_WD_MAX - 1;
        wdb = INOTIFY_WD_MAX;
        CHECK(chmod(p("f65533"), 0600) == 0 && chmod(p("f65534"), 0600) == 0, "chmod");
        if (expect(&r, wda, IN_ATTRIB, NULL, NULL) < 0 || expect(&r, wdb, IN_ATTRIB, NULL, NULL) < 0)
                return -1;
        CHECK(ioctl(r.fd, INOTIFY_IGNORE, wdb) == 0, "INOTIFY_IGNORE 65535 by value");
        if (expect(&r, wdb, IN_IGNORED, NULL, NULL) < 0)
                return -1;
        CHECK(ioctl(r.fd, INOTIFY_IGNORE, &wda) == 0, "INOTIFY_IGNORE &65534");
        if (expect(&r, wda, IN_IGNORED, NULL, NULL) < 0)
                return -1;
        CHECK(ioctl(r.fd, INOTIFY_IGNORE, wdb) < 0 && errno == EINVAL, "65535 is gone");

        /* No wd above the range: the allocation wraps and finds the two free ones. */
        wd = watch_nth(r.fd, INOTIFY_WD_MAX, IN_ATTRIB);
        CHECK(wd == wda, "a new watch got wd %d, want %d (the lowest free one)", wd, wda);
        CHECK(add_watch(r.fd, p("f65533"), IN_ATTRIB) == wdb, "another new watch: want wd %d", wdb);
        CHECK(add_watch(r.fd, p("f0"), IN_ATTRIB | IN_MODIFY) == 1, "re-watching f0 keeps wd 1");
        CHECK(watch_nth(r.fd, INOTIFY_WD_MAX + 1, IN_ATTRIB) < 0 && errno == ENOSPC, "full again: ENOSPC");
        CHECK(close(r.fd) == 0, "close");
        CHECK(umount(dir) == 0, "umount");
        return 0;
}

static int t_watch_ebadf(void) {
        struct inotify_watch_request req = { -1, IN_ALL_EVENTS };
        int dev = open(DEV, O_RDONLY), fd;

        CHECK(dev >= 0, "open");
        CHECK(ioctl(dev, INOTIFY_WATCH, &req) < 0 && errno == EBADF, "fd -1");
        req.fd = 999;
        CHECK(ioctl(dev, INOTIFY_WATCH, &req) < 0 && errno == EBADF, "fd 999");
        /* Closed since: the number is not an open fd any more. */
        fd = open("/tmp", O_PATH | O_CLOEXEC);
        CHECK(fd >= 0 && close(fd) == 0, "O_PATH open and close");
        req.fd = fd;
        CHECK(ioctl(dev, INOTIFY_WATCH, &req) < 0 && errno == EBADF, "closed O_PATH fd must be EBADF");
        return 0;
}

/* Watches @path through an O_PATH fd, closed after the ioctl. */
static int add_watch_opath(int dev, const char *path, int oflags, uint32_t mask) {
        return watch_cmd(dev, INOTIFY_WATCH, path, O_PATH | oflags, mask);
}

/* An O_PATH fd of a file and of a directory: accepted, and events arrive. */
static int t_watch_opath(void) {
        struct vt_reader r;
        int wdd, wdf;

        CHECK(setup_dir("opath") == 0, "mkdir");
        CHECK(write_file(p("f"), "abc") == 0, "create f");
        CHECK(open_dev(&r) >= 0, "open");
        wdd = add_watch_opath(r.fd, dir, O_DIRECTORY, IN_CREATE);
        CHECK(wdd > 0, "O_PATH fd of a directory: INOTIFY_WATCH returned %d", wdd);
        wdf = add_watch_opath(r.fd, p("f"), 0, IN_MODIFY);
        CHECK(wdf > 0 && wdf != wdd, "O_PATH fd of a file: INOTIFY_WATCH returned %d", wdf);
        /* The same inode through an ordinary fd: the same watch, mask replaced. */
        CHECK(add_watch(r.fd, p("f"), IN_MODIFY | IN_ATTRIB) == wdf, "ordinary fd of the same file");
        CHECK(touch(p("new")) == 0, "create");
        if (expect(&r, wdd, IN_CREATE, "new", NULL) < 0)
                return -1;
        CHECK(write_file(p("f"), "x") == 0 && chmod(p("f"), 0600) == 0, "write, chmod");
        if (expect(&r, wdf, IN_MODIFY, NULL, NULL) < 0 || expect(&r, wdf, IN_ATTRIB, NULL, NULL) < 0)
                return -1;
        return expect_none(&r);
}

/*
 * Placing a watch through an O_PATH fd opens nothing: another watch of the
 * directory asking for IN_OPEN|IN_CLOSE_NOWRITE sees no record of it (the
 * sentinel's records come first), nor does the parent's watch, nor does the
 * new watch itself. An ordinary fd, for contrast, does give them.
 */
static int t_watch_opath_no_open(void) {
        struct vt_reader r, r2;
        int wd, wdp, wd2;
        char *sub;

        CHECK(setup_dir("opathnoopen") == 0, "mkdir");
        CHECK(mkdir(p("d"), 0755) == 0 && touch(p("d/sentinel")) == 0, "mkdir d, sentinel");
        sub = strdup(p("d"));
        CHECK(sub, "strdup");
        CHECK(open_dev(&r) >= 0 && open_dev(&r2) >= 0, "open");
        wd = add_watch_opath(r.fd, sub, O_DIRECTORY, IN_OPEN | IN_CLOSE_NOWRITE);
        CHECK(wd > 0, "first watch");
        wdp = add_watch_opath(r.fd, dir, O_DIRECTORY, IN_OPEN | IN_CLOSE_NOWRITE);
        CHECK(wdp > 0 && wdp != wd, "parent watch");
        /* A second instance, and the same instance widening its mask. */
        wd2 = add_watch_opath(r2.fd, sub, O_DIRECTORY, IN_OPEN | IN_CLOSE_NOWRITE | IN_CREATE);
        CHECK(wd2 > 0, "second instance's watch");
        CHECK(add_watch_opath(r.fd, sub, O_DIRECTORY, IN_OPEN | IN_CLOSE_NOWRITE | IN_CREATE) == wd,
              "re-watch through O_PATH");
        /* The sentinel: a read-only open and close of an entry. */
        CHECK(close(open(p("d/sentinel"), O_RDONLY | O_CLOEXEC)) == 0, "sentinel open/close");
        {
                const struct want w[] = { { wd, IN_OPEN, "sentinel" }, { wd, IN_CLOSE_NOWRITE, "sentinel" } };
                const struct want w2[] = { { wd2, IN_OPEN, "sentinel" }, { wd2, IN_CLOSE_NOWRITE, "sentinel" } };

                if (expect_set(&r, w, 2) < 0 || expect_set(&r2, w2, 2) < 0)
                        return -1;
        }
        if (expect_none(&r) < 0 || expect_none(&r2) < 0)
                return -1;
        /* Contrast: the old way, an fd open for reading, is seen by the others. */
        CHECK(add_watch(r2.fd, sub, IN_OPEN | IN_CLOSE_NOWRITE) == wd2, "re-watch through O_RDONLY");
        {
                const struct want w[] = { { wd, IN_OPEN | IN_ISDIR, NULL },
                                          { wd, IN_CLOSE_NOWRITE | IN_ISDIR, NULL },
                                          { wdp, IN_OPEN | IN_ISDIR, "d" },
                                          { wdp, IN_CLOSE_NOWRITE | IN_ISDIR, "d" } };

                if (expect_set(&r, w, 4) < 0)
                        return -1;
        }
        return expect_none(&r);
}

/*
 * An O_PATH open checks no permission on the object, so the ioctl does: as
 * nobody, an O_PATH fd of a 0600 root file or a 0700 root directory (both
 * reachable) is EACCES; of a readable one it is accepted.
 */
static int t_watch_opath_eacces(void) {
        int status;
        pid_t pid;

        CHECK(setup_dir("opatheacces") == 0, "mkdir");
        CHECK(chmod(dir, 0755) == 0, "chmod dir");
        CHECK(touch(p("secret")) == 0 && chmod(p("secret"), 0600) == 0, "0600 file");
        CHECK(mkdir(p("private"), 0700) == 0 && chmod(p("private"), 0700) == 0, "0700 dir");
        CHECK(touch(p("public")) == 0 && chmod(p("public"), 0644) == 0, "0644 file");
        pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0) {
                /* Opened as root (the node is 0600): the ioctl checks the caller's credentials. */
                int dev = open(DEV, O_RDONLY);

                if (dev < 0)
                        _exit(11);
                if (setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(10);
                if (add_watch_opath(dev, p("secret"), 0, IN_ACCESS) >= 0 || errno != EACCES)
                        _exit(12);
                if (add_watch_opath(dev, p("private"), O_DIRECTORY, IN_CREATE) >= 0 || errno != EACCES)
                        _exit(13);
                if (add_watch_opath(dev, p("public"), 0, IN_ACCESS) <= 0)
                        _exit(14);
                _exit(0);
        }
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "as nobody: want EACCES for O_PATH fds of a 0600 file (12) and a 0700 directory (13), "
              "a wd for a 0644 file (14); child status %d",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return 0;
}

static int t_watch_einval_mask(void) {
        struct inotify_watch_request req;
        int dev = open(DEV, O_RDONLY), fd = open("/tmp", O_RDONLY), wd;

        CHECK(dev >= 0 && fd >= 0, "open");
        req.fd = fd;
        req.mask = 0;
        CHECK(ioctl(dev, INOTIFY_WATCH, &req) < 0 && errno == EINVAL, "mask 0");
        req.mask = IN_ONESHOT | IN_ISDIR | IN_IGNORED | 0x800;
        CHECK(ioctl(dev, INOTIFY_WATCH, &req) < 0 && errno == EINVAL, "no 0.23 event bit");
        /* Unknown bits beside a valid one are dropped, as in 0.23. */
        req.mask = IN_CREATE | 0x800 | IN_ONESHOT;
        wd = ioctl(dev, INOTIFY_WATCH, &req);
        CHECK(wd > 0, "valid bit with unknown bits");
        return 0;
}

static int t_watch_efault(void) {
        int dev = open(DEV, O_RDONLY);

        CHECK(dev >= 0, "open");
        CHECK(ioctl(dev, INOTIFY_WATCH, NULL) < 0 && errno == EFAULT, "NULL request");
        CHECK(ioctl(dev, INOTIFY_WATCH, (void *) 8) < 0 && errno == EFAULT, "request at 8");
        CHECK(ioctl(dev, FIONREAD, NULL) < 0 && errno == EFAULT, "FIONREAD NULL");
        return 0;
}

static int t_watch_eacces(void) {
        int dev, status;
        pid_t pid;

        CHECK(setup_dir("eacces") == 0, "mkdir");
        CHECK(touch(p("wo")) == 0 && chmod(p("wo"), 0602) == 0, "make write-only file");
        CHECK(chmod(dir, 0755) == 0, "chmod dir");
        pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0) {
                struct inotify_watch_request req;
                int fd;

                /* Opened as root (the node is 0600): the ioctl checks the caller's credentials. */
                dev = open(DEV, O_RDONLY);
                if (setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(10);
                fd = open(p("wo"), O_WRONLY);
                if (dev < 0 || fd < 0)
                        _exit(11);
                req.fd = fd;
                req.mask = IN_ACCESS;
                if (ioctl(dev, INOTIFY_WATCH, &req) >= 0)
                        _exit(12);
                _exit(errno == EACCES ? 0 : 13);
        }
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "as nobody, a write-only fd of an unreadable file must give EACCES (child status %d)",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return 0;
}

static int t_enotty(void) {
        int dev = open(DEV, O_RDONLY), n = 0;

        CHECK(dev >= 0, "open");
        CHECK(ioctl(dev, _IOR('Q', 3, int), &n) < 0 && errno == ENOTTY, "unknown ioctl");
        CHECK(ioctl(dev, TCGETS, &n) < 0 && errno == ENOTTY, "TCGETS");
        return 0;
}

/* ---- watches ---- */

static int t_same_wd_mask_replaced(void) {
        struct vt_reader r;
        int wd1, wd2, wd3;

        CHECK(setup_dir("samewd") == 0, "mkdir");
        CHECK(touch(p("f")) == 0 && link(p("f"), p("hard")) == 0, "files");
        CHECK(open_dev(&r) >= 0, "open");
        wd1 = add_watch(r.fd, dir, IN_CREATE);
        CHECK(wd1 > 0, "first watch");
        wd2 = add_watch(r.fd, dir, IN_DELETE);
        CHECK(wd2 == wd1, "same inode gave wd %d then %d", wd1, wd2);
        /* The old mask's events stop at once: CREATE is not reported. */
        CHECK(touch(p("new")) == 0, "create");
        CHECK(unlink(p("new")) == 0, "delete");
        if (expect(&r, wd1, IN_DELETE, "new", NULL) < 0)
                return -1;
        if (expect_none(&r) < 0)
                return -1;
        /* Another name of the same inode: same wd. */
        wd3 = add_watch(r.fd, p("f"), IN_ATTRIB);
        CHECK(wd3 > 0 && wd3 != wd1, "file watch");
        CHECK(add_watch(r.fd, p("hard"), IN_ATTRIB) == wd3, "hard link must give the same wd");
        return 0;
}

static int t_wd_not_reused(void) {
        int dev = open(DEV, O_RDONLY), wd1, wd2;

        CHECK(dev >= 0, "open");
        wd1 = add_watch(dev, "/tmp", IN_CREATE);
        CHECK(wd1 > 0, "watch");
        CHECK(ioctl(dev, INOTIFY_IGNORE, &wd1) == 0, "ignore");
        wd2 = add_watch(dev, "/tmp", IN_CREATE);
        CHECK(wd2 > wd1, "a removed wd must not be reused at once (%d then %d)", wd1, wd2);
        return 0;
}

/* The watch pins neither the fd (closed by add_watch) nor the mount. */
static int t_unmount_ignored(void) {
        struct vt_reader r;
        int wdm, wdf;

        CHECK(setup_dir("umount") == 0, "mkdir");
        CHECK(mount("tmpfs", dir, "tmpfs", 0, "size=1m") == 0, "mount tmpfs");
        CHECK(mkdir(p("sub"), 0755) == 0 && touch(p("file")) == 0, "populate");
        CHECK(open_dev(&r) >= 0, "open");
        wdm = add_watch(r.fd, dir, IN_CREATE);
        wdf = add_watch(r.fd, p("file"), IN_MODIFY);
        CHECK(wdm > 0 && wdf > 0, "watches");
        CHECK(umount(dir) == 0, "umount with watches must succeed (no pinned mount)");
        {
                const struct want w[] = { { wdm, IN_UNMOUNT | IN_ISDIR, NULL },
                                          { wdm, IN_IGNORED, NULL },
                                          { wdf, IN_UNMOUNT, NULL },
                                          { wdf, IN_IGNORED, NULL } };

                if (expect_set(&r, w, 4) < 0)
                        return -1;
        }
        return expect_none(&r);
}

static int t_close_destroys_watches(void) {
        long before = vt_sysfs_get(SYSFS_DIR "/stats/watches");
        long inst = vt_sysfs_get(SYSFS_DIR "/stats/instances");
        int dev = open(DEV, O_RDONLY);

        CHECK(before >= 0 && inst >= 0, "read stats");
        CHECK(dev >= 0, "open");
        CHECK(add_watch(dev, "/tmp", IN_CREATE) > 0 && add_watch(dev, "/", IN_CREATE) > 0 &&
                      add_watch(dev, "/dev", IN_CREATE) > 0,
              "watches");
        unlink("/tmp/close-test");
        CHECK(touch("/tmp/close-test") == 0, "queue an event");
        CHECK(vt_sysfs_get(SYSFS_DIR "/stats/watches") == before + 3, "3 watches counted");
        CHECK(vt_sysfs_get(SYSFS_DIR "/stats/instances") == inst + 1, "instance counted");
        CHECK(vt_sysfs_get(SYSFS_DIR "/stats/queued_events") >= 1, "event counted");
        CHECK(close(dev) == 0, "close");
        CHECK(vt_sysfs_get(SYSFS_DIR "/stats/watches") == before, "watches back to %ld", before);
        CHECK(vt_sysfs_get(SYSFS_DIR "/stats/instances") == inst, "instances back");
        CHECK(vt_sysfs_get(SYSFS_DIR "/stats/queued_events") == 0, "queue freed");
        return 0;
}

/* ---- the eleven events ---- */

/* Runs the operation for @mask on @dir/f (which exists). */
static int do_op(uint32_t mask) {
        char c;
        int fd;

        switch (mask) {
        case IN_ACCESS:
                fd = open(p("f"), O_RDONLY);
                if (fd < 0 || read(fd, &c, 1) != 1)
                        return -1;
                return close(fd);
        case IN_MODIFY:
                fd = open(p("f"), O_WRONLY);
                if (fd < 0 || write(fd, "x", 1) != 1)
                        return -1;
                return close(fd);
        case IN_ATTRIB:
                return chmod(p("f"), 0600);
        case IN_CLOSE_WRITE:
        case IN_OPEN:
                fd = open(p("f"), O_WRONLY);
                return fd < 0 ? -1 : close(fd);
        case IN_CLOSE_NOWRITE:
                fd = open(p("f"), O_RDONLY);
                return fd < 0 ? -1 : close(fd);
        case IN_MOVED_FROM:
        case IN_MOVED_TO:
                return rename(p("f"), p("g"));
        case IN_CREATE:
                return touch(p("new"));
        case IN_DELETE:
        case IN_DELETE_SELF:
                return unlink(p("f"));
        }
        return -1;
}

static int event_test(const char *name, uint32_t mask, bool on_self) {
        struct vt_reader r;
        const char *evname;
        uint32_t cookie = 0;
        int wd;

        CHECK(setup_dir(name) == 0, "mkdir");
        CHECK(write_file(p("f"), "abc") == 0, "create f");
        CHECK(open_dev(&r) >= 0, "open");
        wd = add_watch(r.fd, on_self ? p("f") : dir, mask);
        CHECK(wd > 0, "watch");
        /* add_watch() closed its read-only fd of the directory: that is an event too. */
        if (mask == IN_CLOSE_NOWRITE && expect(&r, wd, IN_CLOSE_NOWRITE | IN_ISDIR, NULL, NULL) < 0)
                return -1;
        CHECK(do_op(mask) == 0, "operation");
        evname = on_self ? NULL : mask == IN_MOVED_TO ? "g" : mask == IN_CREATE ? "new" : "f";
        if (expect(&r, wd, mask, evname, mask & IN_MOVE ? &cookie : NULL) < 0)
                return -1;
        if (mask & IN_MOVE)
                CHECK(cookie != 0, "rename cookie must be non-zero");
        if (mask == IN_DELETE_SELF && expect(&r, wd, IN_IGNORED, NULL, NULL) < 0)
                return -1;
        /* Each operation gives exactly that one record for that mask. */
        return expect_none(&r);
}

#define EVENT_TEST(fname, mask, self)                  \
        static int t_##fname(void) {                   \
                return event_test(#fname, mask, self); \
        }
EVENT_TEST(ev_access, IN_ACCESS, false)
EVENT_TEST(ev_modify, IN_MODIFY, false)
EVENT_TEST(ev_attrib, IN_ATTRIB, false)
EVENT_TEST(ev_close_write, IN_CLOSE_WRITE, false)
EVENT_TEST(ev_close_nowrite, IN_CLOSE_NOWRITE, false)
EVENT_TEST(ev_open, IN_OPEN, false)
EVENT_TEST(ev_moved_from, IN_MOVED_FROM, false)
EVENT_TEST(ev_moved_to, IN_MOVED_TO, false)
EVENT_TEST(ev_create, IN_CREATE, false)
EVENT_TEST(ev_delete, IN_DELETE, false)
EVENT_TEST(ev_delete_self, IN_DELETE_SELF, true)

/* Events on the object itself carry no name. */
static int t_self_events_no_name(void) {
        struct vt_reader r;
        int wd;

        CHECK(setup_dir("selfev") == 0, "mkdir");
        CHECK(write_file(p("f"), "abc") == 0, "create f");
        CHECK(open_dev(&r) >= 0, "open");
        wd = add_watch(r.fd, p("f"), IN_ATTRIB | IN_MODIFY);
        CHECK(wd > 0, "watch");
        CHECK(chmod(p("f"), 0600) == 0 && write_file(p("f"), "x") == 0, "ops");
        if (expect(&r, wd, IN_ATTRIB, NULL, NULL) < 0 || expect(&r, wd, IN_MODIFY, NULL, NULL) < 0)
                return -1;
        return 0;
}

/* A child watched too: a record for the directory (with name) and one for the child. */
static int t_child_and_self(void) {
        struct vt_reader r;
        int wdd, wdf;

        CHECK(setup_dir("childself") == 0, "mkdir");
        CHECK(touch(p("f")) == 0, "create f");
        CHECK(open_dev(&r) >= 0, "open");
        wdd = add_watch(r.fd, dir, IN_ATTRIB);
        wdf = add_watch(r.fd, p("f"), IN_ATTRIB);
        CHECK(wdd > 0 && wdf > 0 && wdd != wdf, "watches");
        CHECK(chmod(p("f"), 0600) == 0, "chmod");
        {
                const struct want w[] = { { wdd, IN_ATTRIB, "f" }, { wdf, IN_ATTRIB, NULL } };

                if (expect_set(&r, w, 2) < 0)
                        return -1;
        }
        return expect_none(&r);
}

static int t_name_padding(void) {
        static const struct {
                const char *name;
                uint32_t len;
        } cases[] = { { "a", 16 },
                      { "abcdefghijklmno", 16 },
                      { "abcdefghijklmnop", 32 },
                      { "abcdefghijklmnopqrstuvwxyz0123", 32 } };
        struct vt_reader r;
        unsigned i, k;
        int wd;

        CHECK(setup_dir("padding") == 0, "mkdir");
        CHECK(open_dev(&r) >= 0, "open");
        wd = add_watch(r.fd, dir, IN_CREATE);
        CHECK(wd > 0, "watch");
        for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct inotify_event *ev;

                CHECK(touch(p(cases[i].name)) == 0, "create");
                ev = vt_next(&r, T);
                CHECK(ev && ev->wd == wd && ev->mask == IN_CREATE, "create record");
                CHECK(ev->len == cases[i].len, "name %s: len %u, want %u", cases[i].name, ev->len, cases[i].len);
                CHECK(strcmp(ev->name, cases[i].name) == 0, "name %s", ev->name);
                for (k = strlen(cases[i].name); k < ev->len; k++)
                        CHECK(ev->name[k] == '\0', "padding byte %u not NUL", k);
        }
        /* The longest name (255) fits in 272 bytes. */
        {
                char longname[256];
                char buf[16 + 256];
                ssize_t n;

                memset(longname, 'L', 255);
                longname[255] = '\0';
                CHECK(touch(p(longname)) == 0, "create 255-byte name");
                n = read(r.fd, buf, sizeof(buf));
                CHECK(n == 272, "read %zd, want 272", n);
        }
        return 0;
}

static int t_isdir(void) {
        struct vt_reader r;
        int wd, wds;

        CHECK(setup_dir("isdir") == 0, "mkdir");
        CHECK(open_dev(&r) >= 0, "open");
        wd = add_watch(r.fd, dir, IN_CREATE | IN_DELETE | IN_OPEN | IN_CLOSE_NOWRITE);
        CHECK(wd > 0, "watch");
        /* add_watch() closed its fd of the directory itself: no name. */
        if (expect(&r, wd, IN_CLOSE_NOWRITE | IN_ISDIR, NULL, NULL) < 0)
                return -1;
        CHECK(mkdir(p("sub"), 0755) == 0, "mkdir sub");
        if (expect(&r, wd, IN_CREATE | IN_ISDIR, "sub", NULL) < 0)
                return -1;
        wds = add_watch(r.fd, p("sub"), IN_DELETE_SELF);
        CHECK(wds > 0, "watch sub");
        /* add_watch opened and closed sub: the directory sees it as a child. */
        if (expect(&r, wd, IN_OPEN | IN_ISDIR, "sub", NULL) < 0 ||
            expect(&r, wd, IN_CLOSE_NOWRITE | IN_ISDIR, "sub", NULL) < 0)
                return -1;
        CHECK(rmdir(p("sub")) == 0, "rmdir");
        /* 0.23 marks a removed directory's DELETE_SELF with IN_ISDIR. */
        {
                const struct want w[] = { { wds, IN_DELETE_SELF | IN_ISDIR, NULL },
                                          { wds, IN_IGNORED, NULL },
                                          { wd, IN_DELETE | IN_ISDIR, "sub" } };

                if (expect_set(&r, w, 3) < 0)
                        return -1;
        }
        return expect_none(&r);
}

static int t_rename_cookie_two_dirs(void) {
        struct vt_reader r;
        uint32_t c1, c2, c3, c4;
        int wda, wdb;

        CHECK(setup_dir("rename2") == 0, "mkdir");
        CHECK(mkdir(p("a"), 0755) == 0 && mkdir(p("b"), 0755) == 0 && touch(p("a/x")) == 0, "tree");
        CHECK(open_dev(&r) >= 0, "open");
        wda = add_watch(r.fd, p("a"), IN_MOVE);
        wdb = add_watch(r.fd, p("b"), IN_MOVE);
        CHECK(wda > 0 && wdb > 0, "watches");
        CHECK(rename(p("a/x"), p("b/y")) == 0, "rename");
        if (expect(&r, wda, IN_MOVED_FROM, "x", &c1) < 0 || expect(&r, wdb, IN_MOVED_TO, "y", &c2) < 0)
                return -1;
        CHECK(c1 != 0 && c1 == c2, "cookies %u and %u", c1, c2);
        CHECK(rename(p("b/y"), p("b/z")) == 0, "rename in b");
        if (expect(&r, wdb, IN_MOVED_FROM, "y", &c3) < 0 || expect(&r, wdb, IN_MOVED_TO, "z", &c4) < 0)
                return -1;
        CHECK(c3 != 0 && c3 == c4 && c3 != c1, "second rename cookies %u %u (first %u)", c3, c4, c1);
        return expect_none(&r);
}

static int t_merge_identical(void) {
        struct vt_reader r;
        int wd, fd, i;

        CHECK(setup_dir("merge") == 0, "mkdir");
        CHECK(touch(p("f")) == 0, "create");
        CHECK(open_dev(&r) >= 0, "open");
        wd = add_watch(r.fd, dir, IN_MODIFY | IN_ATTRIB);
        CHECK(wd > 0, "watch");
        fd = open(p("f"), O_WRONLY);
        CHECK(fd >= 0, "open f");
        for (i = 0; i < 5; i++)
                CHECK(write(fd, "x", 1) == 1, "write");
        CHECK(fchmod(fd, 0600) == 0, "fchmod");
        CHECK(write(fd, "x", 1) == 1, "write");
        CHECK(write(fd, "x", 1) == 1, "write");
        close(fd);
        if (expect(&r, wd, IN_MODIFY, "f", NULL) < 0 || expect(&r, wd, IN_ATTRIB, "f", NULL) < 0 ||
            expect(&r, wd, IN_MODIFY, "f", NULL) < 0)
                return -1;
        return expect_none(&r);
}

/* ---- reading ---- */

static int t_poll_select(void) {
        struct pollfd pfd;
        struct timeval tv = { 0, 0 };
        fd_set rfds;
        int dev = open(DEV, O_RDONLY), wd;

        CHECK(dev >= 0, "open");
        CHECK(setup_dir("poll") == 0, "mkdir");
        wd = add_watch(dev, dir, IN_CREATE);
        CHECK(wd > 0, "watch");
        pfd.fd = dev;
        pfd.events = POLLIN;
        CHECK(poll(&pfd, 1, 0) == 0, "readable while empty");
        FD_ZERO(&rfds);
        FD_SET(dev, &rfds);
        CHECK(select(dev + 1, &rfds, NULL, NULL, &tv) == 0, "select readable while empty");
        CHECK(touch(p("f")) == 0, "create");
        CHECK(poll(&pfd, 1, T) == 1 && (pfd.revents & POLLIN), "poll must report POLLIN");
        FD_ZERO(&rfds);
        FD_SET(dev, &rfds);
        tv.tv_sec = 2;
        CHECK(select(dev + 1, &rfds, NULL, NULL, &tv) == 1 && FD_ISSET(dev, &rfds), "select");
        return 0;
}

/* poll() must wake a sleeper when an event arrives from another process. */
static int t_poll_wakeup(void) {
        struct pollfd pfd;
        pid_t pid;
        int dev = open(DEV, O_RDONLY), status;

        CHECK(dev >= 0, "open");
        CHECK(setup_dir("pollwake") == 0, "mkdir");
        CHECK(add_watch(dev, dir, IN_CREATE) > 0, "watch");
        pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0) {
                usleep(200000); /* let the parent block first; correctness does not depend on it */
                _exit(touch(p("f")) == 0 ? 0 : 1);
        }
        pfd.fd = dev;
        pfd.events = POLLIN;
        CHECK(poll(&pfd, 1, 5000) == 1, "poll woke up");
        CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child");
        return 0;
}

static int t_fionread(void) {
        int dev = open(DEV, O_RDONLY), n = -1, wd;
        struct pollfd pfd;

        CHECK(dev >= 0, "open");
        CHECK(setup_dir("fionread") == 0, "mkdir");
        CHECK(ioctl(dev, FIONREAD, &n) == 0 && n == 0, "empty: %d", n);
        wd = add_watch(dev, dir, IN_CREATE | IN_DELETE);
        CHECK(wd > 0, "watch");
        CHECK(touch(p("abc")) == 0, "create");
        pfd.fd = dev;
        pfd.events = POLLIN;
        CHECK(poll(&pfd, 1, T) == 1, "event");
        CHECK(ioctl(dev, FIONREAD, &n) == 0 && n == 32, "one named record: %d, want 32", n);
        CHECK(unlink(p("abc")) == 0, "delete");
        CHECK(ioctl(dev, INOTIFY_IGNORE, &wd) == 0, "ignore");
        CHECK(ioctl(dev, FIONREAD, &n) == 0 && n == 32 + 32 + 16, "three records: %d, want 80", n);
        return 0;
}

static int t_nonblock_eagain(void) {
        char buf[4096];
        int dev = open(DEV, O_RDONLY | O_NONBLOCK);

        CHECK(dev >= 0, "open");
        CHECK(read(dev, buf, sizeof(buf)) < 0 && errno == EAGAIN, "empty O_NONBLOCK read");
        CHECK(fcntl(dev, F_SETFL, 0) == 0 && fcntl(dev, F_SETFL, O_NONBLOCK) == 0, "fcntl");
        CHECK(read(dev, buf, sizeof(buf)) < 0 && errno == EAGAIN, "after F_SETFL O_NONBLOCK");
        return 0;
}

static int t_read_too_small_einval(void) {
        char buf[4096] __attribute__((aligned(8)));
        const struct inotify_event *ev = (const void *) buf;
        int dev = open(DEV, O_RDONLY), wd;
        ssize_t n;

        CHECK(dev >= 0, "open");
        CHECK(setup_dir("small") == 0, "mkdir");
        wd = add_watch(dev, dir, IN_CREATE);
        CHECK(wd > 0, "watch");
        CHECK(touch(p("f")) == 0 && touch(p("g")) == 0, "create");
        CHECK(read(dev, buf, 16) < 0 && errno == EINVAL, "16-byte buffer for a 32-byte record");
        CHECK(read(dev, buf, 31) < 0 && errno == EINVAL, "31-byte buffer");
        /* Nothing was lost; whole records only: 40 bytes take one. */
        n = read(dev, buf, 40);
        CHECK(n == 32 && ev->wd == wd && strcmp(ev->name, "f") == 0, "read %zd", n);
        n = read(dev, buf, sizeof(buf));
        CHECK(n == 32 && strcmp(ev->name, "g") == 0, "second record");
        return 0;
}

static int t_read_efault(void) {
        /* An address no process maps (below mmap_min_addr), hidden from the compiler. */
        volatile uintptr_t bad = 8;
        int dev = open(DEV, O_RDONLY);

        CHECK(dev >= 0, "open");
        CHECK(setup_dir("rdfault") == 0, "mkdir");
        CHECK(add_watch(dev, dir, IN_CREATE) > 0, "watch");
        CHECK(touch(p("f")) == 0, "create");
        {
                struct pollfd pfd = { .fd = dev, .events = POLLIN };

                CHECK(poll(&pfd, 1, T) == 1, "event");
        }
        CHECK(read(dev, (void *) bad, 64) < 0 && errno == EFAULT, "bad buffer");
        /* The record was not lost. */
        {
                char buf[64] __attribute__((aligned(8)));
                const struct inotify_event *ev = (const void *) buf;

                CHECK(read(dev, buf, sizeof(buf)) == 32 && strcmp(ev->name, "f") == 0,
                      "the record must still be queued after EFAULT");
        }
        return 0;
}

static void on_alarm(int sig) {
        (void) sig;
}

static int t_read_signal_eintr(void) {
        struct sigaction sa;
        struct itimerval it = { { 0, 0 }, { 0, 300000 } };
        char buf[4096];
        int dev = open(DEV, O_RDONLY);
        double t0;

        CHECK(dev >= 0, "open");
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_alarm; /* no SA_RESTART */
        CHECK(sigaction(SIGVTALRM, &sa, NULL) == 0 && sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");
        alarm(0);
        CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
        t0 = vt_now();
        CHECK(read(dev, buf, sizeof(buf)) < 0 && errno == EINTR, "blocking read must fail with EINTR");
        CHECK(vt_now() - t0 < 10, "interrupted late");
        return 0;
}

static int t_fasync_sigio(void) {
        const struct timespec tmo = { 2, 0 };
        sigset_t set;
        int dev = open(DEV, O_RDONLY);

        CHECK(dev >= 0, "open");
        CHECK(setup_dir("fasync") == 0, "mkdir");
        CHECK(add_watch(dev, dir, IN_CREATE) > 0, "watch");
        sigemptyset(&set);
        sigaddset(&set, SIGIO);
        CHECK(sigprocmask(SIG_BLOCK, &set, NULL) == 0, "block SIGIO");
        CHECK(fcntl(dev, F_SETOWN, getpid()) == 0 && fcntl(dev, F_SETFL, O_ASYNC) == 0, "O_ASYNC");
        CHECK(touch(p("f")) == 0, "create");
        CHECK(sigtimedwait(&set, NULL, &tmo) == SIGIO, "SIGIO must arrive");
        return 0;
}

/* ---- limits ---- */

static int t_overflow(void) {
        struct vt_reader r;
        const struct inotify_event *ev;
        char name[32];
        int wd, i;

        CHECK(setup_dir("overflow") == 0, "mkdir");
        CHECK(vt_sysfs_set(SYSFS_DIR "/max_queued_events", "8") == 0, "set max_queued_events");
        i = open_dev(&r);
        CHECK(vt_sysfs_set(SYSFS_DIR "/max_queued_events", "16384") == 0, "restore");
        CHECK(i >= 0, "open");
        wd = add_watch(r.fd, dir, IN_CREATE);
        CHECK(wd > 0, "watch");
        for (i = 0; i < 20; i++) {
                snprintf(name, sizeof(name), "f%d", i);
                CHECK(touch(p(name)) == 0, "create");
        }
        for (i = 0; i < 8; i++) {
                snprintf(name, sizeof(name), "f%d", i);
                if (expect(&r, wd, IN_CREATE, name, NULL) < 0)
                        return -1;
        }
        ev = vt_next(&r, T);
        CHECK(ev && ev->wd == -1 && ev->mask == IN_Q_OVERFLOW && ev->len == 0, "overflow record");
        if (expect_none(&r) < 0)
                return -1;
        /* Drained: events are queued again. */
        CHECK(touch(p("after")) == 0, "create");
        if (expect(&r, wd, IN_CREATE, "after", NULL) < 0)
                return -1;
        return expect_none(&r);
}

/* Overflow while the reader has drained part of the queue: still only one record. */
static int t_overflow_once(void) {
        char buf[47]; /* one named record (32) at a time; 32 + 16 does not fit */
        char name[32];
        int dev, wd, i, n = 0, overflows = 0;
        ssize_t k;

        CHECK(setup_dir("overflow1") == 0, "mkdir");
        CHECK(vt_sysfs_set(SYSFS_DIR "/max_queued_events", "4") == 0, "set");
        dev = open(DEV, O_RDONLY | O_NONBLOCK);
        CHECK(vt_sysfs_set(SYSFS_DIR "/max_queued_events", "16384") == 0, "restore");
        CHECK(dev >= 0, "open");
        wd = add_watch(dev, dir, IN_CREATE);
        CHECK(wd > 0, "watch");
        for (i = 0; i < 10; i++) {
                snprintf(name, sizeof(name), "a%d", i);
                CHECK(touch(p(name)) == 0, "create");
        }
        CHECK(read(dev, buf, sizeof(buf)) == 32, "take one record");
        for (i = 0; i < 10; i++) {
                snprintf(name, sizeof(name), "b%d", i);
                CHECK(touch(p(name)) == 0, "create");
        }
        while ((k = read(dev, buf, sizeof(buf))) > 0) {
                const struct inotify_event *ev = (const void *) buf;

                n++;
                overflows += ev->mask == IN_Q_OVERFLOW;
        }
        CHECK(k < 0 && errno == EAGAIN, "drained");
        CHECK(overflows == 1, "%d overflow records, want 1", overflows);
        CHECK(n == 4, "%d records after the first, want 3 creates + 1 overflow", n);
        return 0;
}

static int t_limit_watches_enospc(void) {
        int dev = open(DEV, O_RDONLY), wd1, wd2, over, over_errno, again, param;
        long base = vt_sysfs_get(SYSFS_DIR "/stats/watches");
        char lim[32];

        CHECK(dev >= 0 && base >= 0, "open");
        snprintf(lim, sizeof(lim), "%ld", base + 2);
        CHECK(vt_sysfs_set(SYSFS_DIR "/max_user_watches", lim) == 0, "set max_user_watches");
        param = (int) vt_sysfs_get("/sys/module/inotify_dev/parameters/max_user_watches");
        wd1 = add_watch(dev, "/tmp", IN_CREATE);
        wd2 = add_watch(dev, "/", IN_CREATE);
        over = add_watch(dev, "/dev", IN_CREATE);
        over_errno = errno;
        again = add_watch(dev, "/tmp", IN_DELETE);
        /* Restore before checking, so that a failure does not leak into later tests. */
        CHECK(vt_sysfs_set(SYSFS_DIR "/max_user_watches", "65536") == 0, "restore");
        CHECK(param == base + 2, "module parameter shows %d, sysfs was set to %ld", param, base + 2);
        CHECK(wd1 > 0 && wd2 > 0, "watches under the limit");
        errno = over_errno;
        CHECK(over < 0 && over_errno == ENOSPC, "third watch over the limit must be ENOSPC (got %d)", over);
        CHECK(again == wd1, "re-watching at the limit is not a new watch (%d, want %d)", again, wd1);
        CHECK(add_watch(dev, "/dev", IN_CREATE) > 0, "limit raised again at runtime");
        return 0;
}

static int t_limit_devices_emfile(void) {
        long inst = vt_sysfs_get(SYSFS_DIR "/stats/instances");
        char lim[32];
        int a, b, e;

        CHECK(inst >= 0, "stats");
        snprintf(lim, sizeof(lim), "%ld", inst + 1);
        CHECK(vt_sysfs_set(SYSFS_DIR "/max_user_devices", lim) == 0, "set max_user_devices");
        a = open(DEV, O_RDONLY);
        b = open(DEV, O_RDONLY);
        e = errno;
        vt_sysfs_set(SYSFS_DIR "/max_user_devices", "128");
        CHECK(a >= 0, "first open");
        errno = e;
        CHECK(b < 0 && e == EMFILE, "open over max_user_devices must be EMFILE");
        close(a);
        b = open(DEV, O_RDONLY);
        CHECK(b >= 0, "open after raising the limit");
        return 0;
}

static int t_limits_sysfs_invalid(void) {
        static const char *const files[] = { "max_queued_events", "max_user_watches", "max_user_devices" };
        char path[128];
        unsigned i;

        for (i = 0; i < 3; i++) {
                long v;

                snprintf(path, sizeof(path), SYSFS_DIR "/%s", files[i]);
                v = vt_sysfs_get(path);
                CHECK(v > 0, "%s readable", files[i]);
                CHECK(vt_sysfs_set(path, "0") == -EINVAL, "%s: 0 must be refused", files[i]);
                CHECK(vt_sysfs_set(path, "abc") == -EINVAL, "%s: abc must be refused", files[i]);
                CHECK(vt_sysfs_set(path, "-5") == -EINVAL, "%s: -5 must be refused", files[i]);
                CHECK(vt_sysfs_set(path, "4294967295") == -EINVAL, "%s: > INT_MAX must be refused", files[i]);
                CHECK(vt_sysfs_get(path) == v, "%s unchanged", files[i]);
        }
        return 0;
}

/* exec's FS_OPEN_EXEC must not leak: the record is plain IN_OPEN. */
static int t_reported_bits(void) {
        struct vt_reader r;
        int wd, status;
        pid_t pid;

        CHECK(open_dev(&r) >= 0, "open");
        wd = add_watch(r.fd, "/bin/busybox", IN_OPEN);
        CHECK(wd > 0, "watch");
        pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0) {
                execl("/bin/true", "true", (char *) NULL);
                _exit(127);
        }
        CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "exec");
        return expect(&r, wd, IN_OPEN, NULL, NULL);
}

/* ---- beyond 0.23-6: INOTIFY_ADD_WATCH, INOTIFY_GET_INFO, INOTIFY_SET_FLAGS ---- */

/* INOTIFY_ADD_WATCH on @path opened with @oflags (O_PATH, O_RDONLY...); the wd, or -1 and errno. */
static int add_watch2(int dev, const char *path, int oflags, uint32_t mask) {
        return watch_cmd(dev, INOTIFY_ADD_WATCH, path, oflags, mask);
}

static int set_flags(int dev, uint32_t flags) {
        return ioctl(dev, INOTIFY_SET_FLAGS, &flags);
}

/* Runs @fn in a child process (another thread group); its exit status, or -1. */
static int in_child(int (*fn)(void)) {
        int status;
        pid_t pid = fork();

        if (pid < 0)
                return -1;
        if (pid == 0)
                _exit(fn() < 0 ? 1 : 0);
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
                return -1;
        return WEXITSTATUS(status);
}

static int t_info(void) {
        struct inotify_dev_info info;
        int dev = open(DEV, O_RDONLY);

        CHECK(dev >= 0, "open");
        memset(&info, 0xa5, sizeof(info));
        CHECK(ioctl(dev, INOTIFY_GET_INFO, &info) == 0, "INOTIFY_GET_INFO");
        CHECK(info.version == INOTIFY_DEV_VERSION && INOTIFY_DEV_VERSION == 2, "version %u, want 2", info.version);
        CHECK(info.mask == 0xb7000fffu && info.mask == INOTIFY_DEV_ADD_WATCH_BITS, "mask %#x, want 0xb7000fff",
              info.mask);
        CHECK(info.flags == INOTIFY_DEV_EXCL_SELF, "flags %#x, want %#x", info.flags, INOTIFY_DEV_EXCL_SELF);
        CHECK(info.wd_max == INOTIFY_WD_MAX, "wd_max %u, want %u", info.wd_max, (unsigned) INOTIFY_WD_MAX);
        CHECK(ioctl(dev, INOTIFY_GET_INFO, NULL) < 0 && errno == EFAULT, "NULL must be EFAULT");
        /* The numbers the header writes beside them, and the merged syscalls' bit values. */
        CHECK(INOTIFY_ADD_WATCH == 0x40085103u && INOTIFY_GET_INFO == 0x80105104u && INOTIFY_SET_FLAGS == 0x40045105u &&
                      sizeof(info) == 16,
              "ioctl numbers");
        CHECK(IN_MOVE_SELF == 0x800 && IN_ONLYDIR == 0x01000000 && IN_DONT_FOLLOW == 0x02000000 &&
                      IN_EXCL_UNLINK == 0x04000000 && IN_MASK_CREATE == 0x10000000 && IN_MASK_ADD == 0x20000000 &&
                      IN_ONESHOT == 0x80000000u,
              "the syscall ABI's values");
        return 0;
}

static int t_add_watch_einval(void) {
        int dev = open(DEV, O_RDONLY), wd;

        CHECK(dev >= 0, "open");
        /* Bits the syscall does not know: fsnotify's own. */
        CHECK(add_watch2(dev, "/tmp", O_RDONLY, IN_CREATE | 0x00001000) < 0 && errno == EINVAL, "FS_OPEN_EXEC");
        CHECK(add_watch2(dev, "/tmp", O_RDONLY, IN_CREATE | 0x08000000) < 0 && errno == EINVAL, "FS_EVENT_ON_CHILD");
        CHECK(add_watch2(dev, "/tmp", O_RDONLY, IN_CREATE | 0x00100000) < 0 && errno == EINVAL, "0x00100000");
        CHECK(add_watch2(dev, "/tmp", O_RDONLY, IN_CREATE | IN_MASK_ADD | IN_MASK_CREATE) < 0 && errno == EINVAL,
              "IN_MASK_ADD with IN_MASK_CREATE");
        CHECK(add_watch2(dev, "/tmp", O_RDONLY, IN_ONESHOT | IN_ONLYDIR) < 0 && errno == EINVAL, "no event");
        CHECK(add_watch2(dev, "/tmp", O_RDONLY, IN_ISDIR | IN_IGNORED | IN_UNMOUNT) < 0 && errno == EINVAL,
              "output bits only");
        CHECK(add_watch2(dev, "/tmp", O_RDONLY, 0) < 0 && errno == EINVAL, "mask 0");
        /* The bits records carry are accepted and ignored, as by inotify_add_watch(2). */
        wd = add_watch2(dev, "/tmp", O_PATH, IN_CREATE | IN_ISDIR | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED);
        CHECK(wd > 0, "IN_CREATE with the output bits");
        {
                struct inotify_watch_request req = { .fd = 1000, .mask = IN_CREATE };

                CHECK(ioctl(dev, INOTIFY_ADD_WATCH, &req) < 0 && errno == EBADF, "EBADF");
                CHECK(ioctl(dev, INOTIFY_ADD_WATCH, NULL) < 0 && errno == EFAULT, "EFAULT");
        }
        return 0;
}

/*
 * IN_MOVE_SELF, as LTP's inotify02 checks it: the watched object renamed,
 * no name, no IN_ISDIR; a rename away and back is one record (merged);
 * IN_DELETE_SELF without IN_ISDIR, as inotify(7). INOTIFY_WATCH drops 0x800.
 */
static int t_move_self(void) {
        struct vt_reader r;
        int wdd, wdf, wdold, wds;

        CHECK(setup_dir("moveself") == 0, "mkdir");
        CHECK(mkdir(p("d"), 0755) == 0 && touch(p("f")) == 0 && touch(p("old")) == 0 && touch(p("s")) == 0, "files");
        CHECK(open_dev(&r) >= 0, "open");
        wdd = add_watch2(r.fd, p("d"), O_PATH, IN_MOVE_SELF | IN_DELETE_SELF);
        wdf = add_watch2(r.fd, p("f"), O_RDONLY, IN_MOVE_SELF);
        wdold = add_watch(r.fd, p("old"), IN_MOVE_SELF | IN_DELETE_SELF); /* 0.23: 0x800 dropped */
        wds = add_watch(r.fd, p("s"), IN_ATTRIB);
        CHECK(wdd > 0 && wdf > 0 && wdold > 0 && wds > 0, "watches");

        CHECK(rename(p("f"), p("f2")) == 0, "rename f");
        if (expect(&r, wdf, IN_MOVE_SELF, NULL, NULL) < 0)
                return -1;
        CHECK(rename(p("d"), p("d2")) == 0 && rename(p("d2"), p("d")) == 0, "rename d and back");
        if (expect(&r, wdd, IN_MOVE_SELF, NULL, NULL) < 0)
                return -1;
        CHECK(rename(p("old"), p("old2")) == 0 && chmod(p("s"), 0600) == 0, "rename old, chmod sentinel");
        if (expect(&r, wds, IN_ATTRIB, NULL, NULL) < 0)
                return -1;
        CHECK(rmdir(p("d")) == 0, "rmdir");
        if (expect(&r, wdd, IN_DELETE_SELF, NULL, NULL) < 0 || expect(&r, wdd, IN_IGNORED, NULL, NULL) < 0)
                return -1;
        return expect_none(&r);
}

/*
 * IN_ONESHOT, as LTP's inotify12 checks it: one record, then IN_IGNORED and
 * the wd gone; on a directory too. INOTIFY_WATCH over it makes it a 0.23
 * watch again (no oneshot).
 */
static int t_oneshot(void) {
        struct vt_reader r;
        int wd, wdd, wds, fd, again;

        CHECK(setup_dir("oneshot") == 0, "mkdir");
        CHECK(touch(p("f")) == 0 && touch(p("g")) == 0 && touch(p("s")) == 0, "files");
        CHECK(open_dev(&r) >= 0, "open");
        wd = add_watch2(r.fd, p("f"), O_PATH, IN_MODIFY | IN_ONESHOT);
        wdd = add_watch2(r.fd, dir, O_PATH, IN_CREATE | IN_ONESHOT);
        wds = add_watch(r.fd, p("s"), IN_ATTRIB);
        CHECK(wd > 0 && wdd > 0 && wds > 0, "watches");
        fd = open(p("f"), O_WRONLY | O_CLOEXEC);
        CHECK(fd >= 0 && write(fd, "1", 1) == 1 && write(fd, "2", 1) == 1, "two writes");
        if (expect(&r, wd, IN_MODIFY, NULL, NULL) < 0 || expect(&r, wd, IN_IGNORED, NULL, NULL) < 0)
                return -1;
        CHECK(write(fd, "3", 1) == 1 && chmod(p("s"), 0600) == 0, "a third write, then the sentinel");
        close(fd);
        if (expect(&r, wds, IN_ATTRIB, NULL, NULL) < 0)
                return -1;
        CHECK(ioctl(r.fd, INOTIFY_IGNORE, &wd) < 0 && errno == EINVAL, "the oneshot wd is gone");
        CHECK(touch(p("a")) == 0 && touch(p("b")) == 0, "two creates");
        if (expect(&r, wdd, IN_CREATE, "a", NULL) < 0 || expect(&r, wdd, IN_IGNORED, NULL, NULL) < 0)
                return -1;

        /* Oneshot, then INOTIFY_WATCH on the same inode: 0.23, every event. */
        wd = add_watch2(r.fd, p("g"), O_PATH, IN_MODIFY | IN_ONESHOT);
        again = add_watch(r.fd, p("g"), IN_MODIFY);
        CHECK(wd > 0 && again == wd, "same wd (%d, %d)", wd, again);
        /* Read in between: two MODIFY in a row would be merged into one. */
        CHECK(write_file(p("g"), "x") == 0, "write");
        if (expect(&r, wd, IN_MODIFY, NULL, NULL) < 0)
                return -1;
        CHECK(write_file(p("g"), "y") == 0, "write");
        if (expect(&r, wd, IN_MODIFY, NULL, NULL) < 0)
                return -1;
        return expect_none(&r);
}

/*
 * IN_EXCL_UNLINK, as LTP's inotify12 checks it: a directory's watch hears
 * nothing more of a child once it is unlinked (without the flag it does).
 */
static int t_excl_unlink(void) {
        struct vt_reader r;
        int wd, fd;

        CHECK(setup_dir("exclunlink") == 0, "mkdir");
        CHECK(touch(p("f")) == 0 && touch(p("g")) == 0, "files");
        CHECK(open_dev(&r) >= 0, "open");
        wd = add_watch2(r.fd, dir, O_PATH, IN_MODIFY);
        CHECK(wd > 0, "watch");
        fd = open(p("f"), O_WRONLY | O_CLOEXEC);
        CHECK(fd >= 0 && unlink(p("f")) == 0 && write(fd, "1", 1) == 1, "without: write after unlink");
        if (expect(&r, wd, IN_MODIFY, "f", NULL) < 0)
                return -1;
        close(fd);

        CHECK(add_watch2(r.fd, dir, O_PATH, IN_MODIFY | IN_EXCL_UNLINK) == wd, "same wd");
        fd = open(p("g"), O_WRONLY | O_CLOEXEC);
        CHECK(fd >= 0 && write(fd, "1", 1) == 1, "with: write before unlink");
        if (expect(&r, wd, IN_MODIFY, "g", NULL) < 0)
                return -1;
        CHECK(unlink(p("g")) == 0 && write(fd, "2", 1) == 1, "write after unlink");
        close(fd);
        CHECK(write_file(p("h"), "sentinel") == 0, "sentinel");
        if (expect(&r, wd, IN_MODIFY, "h", NULL) < 0)
                return -1;
        return expect_none(&r);
}

static int t_onlydir_dont_follow(void) {
        struct vt_reader r;
        int wd, e;

        CHECK(setup_dir("onlydir") == 0, "mkdir");
        CHECK(touch(p("f")) == 0 && symlink("f", p("l")) == 0, "file and link");
        CHECK(open_dev(&r) >= 0, "open");
        CHECK(add_watch2(r.fd, p("f"), O_PATH, IN_ATTRIB | IN_ONLYDIR) < 0 && errno == ENOTDIR,
              "IN_ONLYDIR on a file must be ENOTDIR");
        CHECK(add_watch2(r.fd, dir, O_PATH, IN_DELETE_SELF | IN_ONLYDIR) > 0, "IN_ONLYDIR on a directory");
        wd = add_watch2(r.fd, p("l"), O_PATH | O_NOFOLLOW, IN_ATTRIB);
        e = errno;
        CHECK(wd < 0 && e == ELOOP, "a link itself without IN_DONT_FOLLOW must be ELOOP (got %d)", wd);
        wd = add_watch2(r.fd, p("l"), O_PATH | O_NOFOLLOW, IN_ATTRIB | IN_DONT_FOLLOW);
        CHECK(wd > 0, "a link itself with IN_DONT_FOLLOW");
        CHECK(fchownat(AT_FDCWD, p("l"), 0, 0, AT_SYMLINK_NOFOLLOW) == 0, "lchown");
        if (expect(&r, wd, IN_ATTRIB, NULL, NULL) < 0)
                return -1;
        /* Followed (the fd is the target's): IN_DONT_FOLLOW changes nothing then. */
        CHECK(add_watch2(r.fd, p("l"), O_RDONLY, IN_ATTRIB | IN_DONT_FOLLOW) > 0 && wd > 0, "followed link");
        return 0;
}

/* IN_MASK_ADD adds, a plain call replaces, IN_MASK_CREATE refuses an existing watch. */
static int t_mask_add_create(void) {
        struct vt_reader r;
        int wd, other;

        CHECK(setup_dir("maskadd") == 0, "mkdir");
        CHECK(open_dev(&r) >= 0, "open");
        wd = add_watch2(r.fd, dir, O_PATH, IN_CREATE | IN_MASK_CREATE);
        CHECK(wd > 0, "IN_MASK_CREATE on a new watch");
        CHECK(add_watch2(r.fd, dir, O_PATH, IN_DELETE | IN_MASK_CREATE) < 0 && errno == EEXIST,
              "IN_MASK_CREATE on an existing watch must be EEXIST");
        CHECK(add_watch2(r.fd, dir, O_PATH, IN_DELETE | IN_MASK_ADD) == wd, "IN_MASK_ADD: same wd");
        CHECK(touch(p("a")) == 0 && unlink(p("a")) == 0, "create, delete");
        if (expect(&r, wd, IN_CREATE, "a", NULL) < 0 || expect(&r, wd, IN_DELETE, "a", NULL) < 0)
                return -1;
        CHECK(add_watch2(r.fd, dir, O_PATH, IN_DELETE) == wd, "replace: same wd");
        CHECK(touch(p("b")) == 0 && unlink(p("b")) == 0, "create, delete");
        if (expect(&r, wd, IN_DELETE, "b", NULL) < 0)
                return -1;
        /* Another instance does not count: EEXIST is per instance. */
        other = open(DEV, O_RDONLY);
        CHECK(other >= 0 && add_watch2(other, dir, O_PATH, IN_CREATE | IN_MASK_CREATE) > 0, "another instance");
        return expect_none(&r);
}

/* /proc/self/fdinfo of an instance: a line a watch, as inotify's (LTP's inotify12 reads it). */
static int t_fdinfo(void) {
        char path[64], line[256];
        struct stat std, stf;
        int dev, wd1, wd2, found = 0;
        FILE *f;

        CHECK(setup_dir("fdinfo") == 0 && touch(p("f")) == 0, "mkdir");
        dev = open(DEV, O_RDONLY);
        CHECK(dev >= 0, "open");
        wd1 = add_watch(dev, dir, IN_CREATE | IN_DELETE);
        wd2 = add_watch2(dev, p("f"), O_PATH, IN_MODIFY | IN_ONESHOT | IN_EXCL_UNLINK);
        CHECK(wd1 > 0 && wd2 > 0 && stat(dir, &std) == 0 && stat(p("f"), &stf) == 0, "watches");
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", dev);
        f = fopen(path, "re");
        CHECK(f, "open %s", path);
        while (fgets(line, sizeof(line), f)) {
                unsigned wd, sdev, mask;
                unsigned long ino;
                const struct stat *st;

                if (sscanf(line, "inotify wd:%x ino:%lx sdev:%x mask:%x", &wd, &ino, &sdev, &mask) != 4)
                        continue;
                st = (int) wd == wd1 ? &std : &stf;
                CHECK((int) wd == wd1 || (int) wd == wd2, "unknown wd in: %s", line);
                CHECK(ino == st->st_ino && sdev == ((major(st->st_dev) << 20) | minor(st->st_dev)), "ino/sdev in: %s",
                      line);
                CHECK(mask == ((int) wd == wd1 ? (IN_CREATE | IN_DELETE) : (IN_MODIFY | IN_ONESHOT | IN_EXCL_UNLINK)),
                      "mask in: %s", line);
                CHECK(strstr(line, " ignored_mask:0"), "ignored_mask in: %s", line);
                found++;
        }
        fclose(f);
        CHECK(found == 2, "%d watch lines, want 2", found);
        return 0;
}

/* t_excl_self's instance, for its children. */
static int excl_dev;

static int excl_touch(void) {
        return touch(p("child")) == 0 ? 0 : -1;
}

static void *excl_thread(void *arg) {
        (void) arg;
        return (void *) (long) touch(p("thread"));
}

static int excl_set_here(void) {
        return set_flags(excl_dev, INOTIFY_DEV_EXCL_SELF) == 0 && touch(p("ignored-child")) == 0 ? 0 : -1;
}

/*
 * INOTIFY_SET_FLAGS(INOTIFY_DEV_EXCL_SELF): the caller's own thread group's
 * events are left out (its threads too), another process's are not, an
 * IN_ONESHOT watch is not used up by them, IN_UNMOUNT still comes; off by
 * default and again after 0; set from another process, it moves there.
 */
static int t_excl_self(void) {
        struct vt_reader r;
        pthread_t th;
        void *tr;
        int wd, wdo, wdm;
        pid_t pid;

        CHECK(setup_dir("exclself") == 0 && mkdir(p("m"), 0755) == 0 && touch(p("o")) == 0, "mkdir");
        CHECK(open_dev(&r) >= 0, "open");
        excl_dev = r.fd;
        wd = add_watch2(r.fd, dir, O_PATH, IN_CREATE | IN_OPEN | IN_CLOSE | IN_MODIFY);
        CHECK(wd > 0, "watch");
        /* Off by default: the 2005 programs see what they always saw. */
        CHECK(touch(p("own0")) == 0, "touch");
        if (expect(&r, wd, IN_CREATE, "own0", NULL) < 0 || expect(&r, wd, IN_OPEN, "own0", NULL) < 0 ||
            expect(&r, wd, IN_CLOSE_WRITE, "own0", NULL) < 0)
                return -1;

        CHECK(set_flags(r.fd, 2) < 0 && errno == EINVAL, "unknown flag must be EINVAL");
        CHECK(ioctl(r.fd, INOTIFY_SET_FLAGS, NULL) < 0 && errno == EFAULT, "NULL must be EFAULT");
        CHECK(set_flags(r.fd, INOTIFY_DEV_EXCL_SELF) == 0, "INOTIFY_SET_FLAGS");
        CHECK(write_file(p("own1"), "x") == 0 && close(open(dir, O_RDONLY | O_CLOEXEC)) == 0, "own doings");
        CHECK(pthread_create(&th, NULL, excl_thread, NULL) == 0 && pthread_join(th, &tr) == 0 && tr == NULL,
              "a thread's");
        CHECK(in_child(excl_touch) == 0, "a child's");
        if (expect(&r, wd, IN_CREATE, "child", NULL) < 0 || expect(&r, wd, IN_OPEN, "child", NULL) < 0 ||
            expect(&r, wd, IN_CLOSE_WRITE, "child", NULL) < 0)
                return -1;

        /* IN_ONESHOT: not used up by the owner's own event. */
        wdo = add_watch2(r.fd, p("o"), O_PATH, IN_ATTRIB | IN_ONESHOT);
        CHECK(wdo > 0 && chmod(p("o"), 0600) == 0, "oneshot, own chmod");
        pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0)
                _exit(chmod(p("o"), 0644) == 0 ? 0 : 1);
        CHECK(waitpid(pid, NULL, 0) == pid, "wait");
        if (expect(&r, wdo, IN_ATTRIB, NULL, NULL) < 0 || expect(&r, wdo, IN_IGNORED, NULL, NULL) < 0)
                return -1;

        /* IN_UNMOUNT comes, whoever unmounts. */
        CHECK(mount("tmpfs", p("m"), "tmpfs", 0, "size=1m") == 0, "mount");
        wdm = add_watch2(r.fd, p("m"), O_PATH, IN_CREATE);
        CHECK(wdm > 0 && umount(p("m")) == 0, "watch and umount");
        if (expect(&r, wdm, IN_UNMOUNT | IN_ISDIR, NULL, NULL) < 0 || expect(&r, wdm, IN_IGNORED, NULL, NULL) < 0)
                return -1;

        /* Set by a child: the child's are left out now, and ours come again. */
        CHECK(in_child(excl_set_here) == 0, "child sets the flag");
        CHECK(touch(p("own2")) == 0, "touch");
        if (expect(&r, wd, IN_CREATE, "own2", NULL) < 0 || expect(&r, wd, IN_OPEN, "own2", NULL) < 0 ||
            expect(&r, wd, IN_CLOSE_WRITE, "own2", NULL) < 0)
                return -1;
        /* 0: nobody's left out. */
        CHECK(set_flags(r.fd, 0) == 0 && in_child(excl_touch) == 0, "flags 0");
        if (expect(&r, wd, IN_OPEN, "child", NULL) < 0 || expect(&r, wd, IN_CLOSE_WRITE, "child", NULL) < 0)
                return -1;
        return expect_none(&r);
}

static const struct vt_test tests[] = {
        { "node", t_node, 0 },
        { "dev_mode_closed", t_dev_mode_closed, 0 },
        { "article_snippets", t_article_snippets, 0 },
        { "ignore_by_pointer", t_ignore_by_pointer, 0 },
        { "ignore_einval", t_ignore_einval, 0 },
        { "ignore_efault", t_ignore_efault, 0 },
        { "watch_ebadf", t_watch_ebadf, 0 },
        { "watch_opath", t_watch_opath, 0 },
        { "watch_opath_no_open", t_watch_opath_no_open, 0 },
        { "watch_opath_eacces", t_watch_opath_eacces, 0 },
        { "watch_einval_mask", t_watch_einval_mask, 0 },
        { "watch_efault", t_watch_efault, 0 },
        { "watch_eacces", t_watch_eacces, 0 },
        { "ioctl_enotty", t_enotty, 0 },
        { "same_wd_mask_replaced", t_same_wd_mask_replaced, 0 },
        { "wd_not_reused", t_wd_not_reused, 0 },
        { "ev_access", t_ev_access, 0 },
        { "ev_modify", t_ev_modify, 0 },
        { "ev_attrib", t_ev_attrib, 0 },
        { "ev_close_write", t_ev_close_write, 0 },
        { "ev_close_nowrite", t_ev_close_nowrite, 0 },
        { "ev_open", t_ev_open, 0 },
        { "ev_moved_from", t_ev_moved_from, 0 },
        { "ev_moved_to", t_ev_moved_to, 0 },
        { "ev_create", t_ev_create, 0 },
        { "ev_delete", t_ev_delete, 0 },
        { "ev_delete_self", t_ev_delete_self, 0 },
        { "self_events_no_name", t_self_events_no_name, 0 },
        { "child_and_self", t_child_and_self, 0 },
        { "name_padding", t_name_padding, 0 },
        { "isdir", t_isdir, 0 },
        { "rename_cookie_two_dirs", t_rename_cookie_two_dirs, 0 },
        { "merge_identical", t_merge_identical, 0 },
        { "unmount_ignored", t_unmount_ignored, 0 },
        { "poll_select", t_poll_select, 0 },
        { "poll_wakeup", t_poll_wakeup, 0 },
        { "fionread", t_fionread, 0 },
        { "nonblock_eagain", t_nonblock_eagain, 0 },
        { "read_too_small_einval", t_read_too_small_einval, 0 },
        { "read_efault", t_read_efault, 0 },
        { "read_signal_eintr", t_read_signal_eintr, 0 },
        { "fasync_sigio", t_fasync_sigio, 0 },
        { "overflow", t_overflow, 0 },
        { "overflow_once", t_overflow_once, 0 },
        { "limit_watches_enospc", t_limit_watches_enospc, 0 },
        { "limit_devices_emfile", t_limit_devices_emfile, 0 },
        { "limits_sysfs_invalid", t_limits_sysfs_invalid, 0 },
        { "reported_bits", t_reported_bits, 0 },
        { "close_destroys_watches", t_close_destroys_watches, 0 },
        { "wd_space", t_wd_space, 120 },
        { "info", t_info, 0 },
        { "add_watch_einval", t_add_watch_einval, 0 },
        { "move_self", t_move_self, 0 },
        { "oneshot", t_oneshot, 0 },
        { "excl_unlink", t_excl_unlink, 0 },
        { "onlydir_dont_follow", t_onlydir_dont_follow, 0 },
        { "mask_add_create", t_mask_add_create, 0 },
        { "fdinfo", t_fdinfo, 0 },
        { "excl_self", t_excl_self, 0 },
};

/* Run only when named: they need the module loaded with other parameters. */
static const struct vt_test named_only_tests[] = {
        { "dev_mode_open", t_dev_mode_open, 0 },
};

static unsigned run_tests(const struct vt_test *t, size_t n, bool all, int argc, char **argv) {
        unsigned failed = 0;
        size_t i;
        int a;

        for (i = 0; i < n; i++) {
                bool pick = all;

                for (a = 1; a < argc; a++)
                        pick |= strcmp(argv[a], t[i].name) == 0;
                if (pick && !vt_run(&t[i]))
                        failed++;
        }
        return failed;
}

int main(int argc, char **argv) {
        unsigned failed;

        failed = run_tests(tests, sizeof(tests) / sizeof(tests[0]), argc < 2, argc, argv);
        failed += run_tests(named_only_tests, sizeof(named_only_tests) / sizeof(named_only_tests[0]), false, argc, argv);
        return failed ? 1 : 0;
}
