// SPDX-License-Identifier: GPL-2.0
/*
 * stress.c - /dev/inotify under concurrent use, for SECONDS (default 30).
 *
 * Processes, all at once:
 *  - 4 watchers: open instances (some O_NONBLOCK, some polled), add watches
 *    on two directories, a mount point and files that come and go, remove
 *    them (by value and by pointer), read and check every record, close and
 *    reopen; one of them exits with watches and unread records still held,
 *    another shares its first instance with a child that reads it too;
 *  - 3 mutators: create, write, chmod, rename (within and across the two
 *    directories), unlink, mkdir and rmdir;
 *  - 1 mounter: mounts a tmpfs, fills it, unmounts it (IN_UNMOUNT paths);
 *  - 1 knob turner: flips max_queued_events between 32 and 16384, so that
 *    instances opened meanwhile overflow;
 *  - an IN_ONESHOT pair on one file that always has a link: one process
 *    re-adds its oneshot watch as fast as it can, the other changes the file,
 *    so that fsnotify destroys the mark (from the handler) while the add
 *    looks it up. Every add must succeed (a found mark that died meanwhile
 *    is replaced by a new watch, never ENOENT nor a kernel warning).
 *
 * Watchers place a third of their watches with INOTIFY_ADD_WATCH (IN_MOVE_SELF,
 * and at random IN_ONESHOT, IN_EXCL_UNLINK, IN_MASK_ADD) and now and then
 * turn INOTIFY_DEV_EXCL_SELF on or off.
 *
 * Every record read is checked: len a multiple of 16 (at most 256), the name
 * NUL-terminated, only the device's bits (IN_MOVE_SELF only on a wd placed
 * with INOTIFY_ADD_WATCH), wd -1 exactly for IN_Q_OVERFLOW, the wd one
 * this instance was given, and no record for a wd after its IN_IGNORED.
 * Prints "PASS stress: <figures>" or "FAIL stress: <why>". The guest script
 * then checks that the module's counters are back to zero and unloads it.
 *
 * stress --unload SECONDS KO: rmmod under concurrent open and close.
 * 3 openers open the device, watch files that a mutator keeps unlinking (so
 * that now and then a mark outlives close() for a moment, held by the unlink,
 * and is freed afterwards by fsnotify's reaper, which calls into the module),
 * read and close; one process unloads the module whenever it can
 * (delete_module with O_NONBLOCK: EAGAIN while an instance is open) and
 * loads KO again at once. Prints "PASS stress_unload: <figures>" or "FAIL
 * stress_unload: <why>"; a crash shows in the kernel log the run checks.
 */
#define _GNU_SOURCE
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include "vmtest.h"

#define DEV    "/dev/inotify"
#define TOP    "/tmp/stress"
#define MAXWD  65536
#define NFILES 32

struct counts {
        long opens, adds, removes, records, overflows, ignored, mutations, unmounts;
        long unloads, busy, refused; /* --unload */
        long rearms;                 /* the IN_ONESHOT pair */
};

static double deadline;
static struct counts cnt;

/* A child's result: counts on stdout through a pipe, or a failure line. */
static int report_fd = -1;

/* The name on the result line: "stress" or "stress_unload". */
static const char *test_name = "stress";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
        char msg[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        vt_line("FAIL %s: pid %d: %s", test_name, (int) getpid(), msg);
        _exit(1);
}

static unsigned rnd(unsigned n) {
        return (unsigned) random() % n;
}

static void random_path(char *buf, size_t size) {
        static const char *const dirs[] = { TOP "/a", TOP "/b", TOP "/m" };
        unsigned d = rnd(3), k = rnd(4);

        if (k == 0)
                snprintf(buf, size, "%s", dirs[d]);
        else if (k == 1)
                snprintf(buf, size, "%s/d%u", dirs[d], rnd(4));
        else
                snprintf(buf, size, "%s/f%u", dirs[d], rnd(NFILES));
}

/* One watcher instance and what it knows of its wds. */
struct inst {
        int fd;
        int maxwd;
        unsigned char state[MAXWD]; /* 0 never given, 1 live, 2 removed by us, 3 ignored */
        unsigned char v2[MAXWD];    /* placed with INOTIFY_ADD_WATCH at some point: IN_MOVE_SELF allowed */
};

static void inst_open(struct inst *in, int flags) {
        in->fd = open(DEV, O_RDONLY | O_CLOEXEC | flags);
        if (in->fd < 0)
                die("open %s: %s", DEV, strerror(errno));
        in->maxwd = 0;
        memset(in->state, 0, sizeof(in->state));
        memset(in->v2, 0, sizeof(in->v2));
        cnt.opens++;
}

static void check_record(struct inst *in, const struct inotify_event *ev, size_t avail) {
        if (sizeof(*ev) + ev->len > avail)
                die("record overruns the read (len %u, %zu bytes left)", ev->len, avail);
        if (ev->len % 16 || ev->len > 256)
                die("bad len %u", ev->len);
        if (ev->len && !memchr(ev->name, '\0', ev->len))
                die("name not NUL-terminated");
        if (ev->mask & ~INOTIFY_DEV_REPORTED_BITS)
                die("mask %#x has bits outside the device's", ev->mask);
        if (ev->wd == -1) {
                if (ev->mask != IN_Q_OVERFLOW || ev->len)
                        die("wd -1 with mask %#x len %u", ev->mask, ev->len);
                cnt.overflows++;
                return;
        }
        if (ev->mask == IN_Q_OVERFLOW)
                die("IN_Q_OVERFLOW with wd %d", ev->wd);
        if (ev->wd <= 0 || ev->wd > in->maxwd)
                die("record for wd %d, never given (max %d), mask %#x", ev->wd, in->maxwd, ev->mask);
        if ((ev->mask & IN_MOVE_SELF) && ev->wd < MAXWD && !in->v2[ev->wd] && in->maxwd < MAXWD - 1)
                die("IN_MOVE_SELF for wd %d, which no INOTIFY_ADD_WATCH asked for", ev->wd);
        if (ev->wd < MAXWD) {
                if (in->state[ev->wd] == 3)
                        die("record (mask %#x) for wd %d after its IN_IGNORED", ev->mask, ev->wd);
                if (ev->mask & IN_IGNORED) {
                        if (ev->mask != IN_IGNORED)
                                die("IN_IGNORED with other bits: %#x", ev->mask);
                        in->state[ev->wd] = 3;
                        cnt.ignored++;
                }
        }
        if (!(ev->mask & (INOTIFY_DEV_EVENTS | IN_UNMOUNT | IN_IGNORED)))
                die("record without an event bit: %#x", ev->mask);
}

static void inst_read(struct inst *in, bool block) {
        char buf[4096] __attribute__((aligned(8)));
        ssize_t n;
        size_t off;

        if (block) {
                struct pollfd p = { .fd = in->fd, .events = POLLIN };

                if (poll(&p, 1, 10) <= 0)
                        return;
        }
        n = read(in->fd, buf, sizeof(buf));
        if (n < 0) {
                if (errno == EAGAIN)
                        return;
                die("read: %s", strerror(errno));
        }
        if (n == 0)
                die("read returned 0");
        for (off = 0; off < (size_t) n;) {
                const struct inotify_event *ev = (const void *) (buf + off);

                check_record(in, ev, (size_t) n - off);
                cnt.records++;
                off += sizeof(*ev) + ev->len;
        }
}

static void inst_add(struct inst *in) {
        struct inotify_watch_request req;
        char path[128];
        int fd, wd;
        bool v2;

        random_path(path, sizeof(path));
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return; /* came and went */
        req.fd = fd;
        req.mask = rnd(4) ? INOTIFY_DEV_ALL_EVENTS : (1u << rnd(11)) | IN_CREATE;
        /* A third of them the syscalls' way: IN_MOVE_SELF, oneshot watches
         * destroyed from the handler, IN_EXCL_UNLINK, IN_MASK_ADD. */
        v2 = rnd(3) == 0;
        if (v2)
                req.mask |= IN_MOVE_SELF | (rnd(2) ? IN_ONESHOT : 0) | (rnd(2) ? IN_EXCL_UNLINK : 0) |
                        (rnd(2) ? IN_MASK_ADD : 0);
        wd = ioctl(in->fd, v2 ? INOTIFY_ADD_WATCH : INOTIFY_WATCH, &req);
        close(fd);
        if (wd < 0) {
                /* ENOENT: the inode is being deleted or unmounted right now. */
                if (errno != ENOENT)
                        die("%s %s: %s", v2 ? "INOTIFY_ADD_WATCH" : "INOTIFY_WATCH", path, strerror(errno));
                return;
        }
        cnt.adds++;
        if (wd > in->maxwd)
                in->maxwd = wd;
        if (wd < MAXWD && in->state[wd] == 0)
                in->state[wd] = 1;
        if (wd < MAXWD && v2)
                in->v2[wd] = 1;
}

/* Leaves out its own events, or not: the pid reference taken and dropped
 * while events come from every side (its own adds open files too). */
static void inst_flags(struct inst *in) {
        uint32_t flags = rnd(2) ? INOTIFY_DEV_EXCL_SELF : 0;

        if (ioctl(in->fd, INOTIFY_SET_FLAGS, &flags) < 0)
                die("INOTIFY_SET_FLAGS: %s", strerror(errno));
}

static void inst_remove(struct inst *in) {
        int wd, r, tries;

        for (tries = 0; tries < 8 && in->maxwd; tries++) {
                wd = 1 + (int) rnd((unsigned) in->maxwd);
                if (wd >= MAXWD || in->state[wd] != 1)
                        continue;
                r = rnd(2) ? ioctl(in->fd, INOTIFY_IGNORE, wd) : ioctl(in->fd, INOTIFY_IGNORE, &wd);
                /* EINVAL: it died meanwhile (deleted, unmounted); its IGNORED is queued. */
                if (r < 0 && errno != EINVAL)
                        die("INOTIFY_IGNORE %d: %s", wd, strerror(errno));
                if (r == 0)
                        cnt.removes++;
                in->state[wd] = 2;
                return;
        }
}

/*
 * Reads an instance it shares with its parent watcher (fork()ed fd), until
 * the deadline: two readers take batches off one queue at once, and the
 * parent's close() must not end the instance while this one holds it.
 * Records are checked for form and for nothing after an IN_IGNORED seen here.
 */
static void co_reader(int fd) {
        static struct inst in;

        in.fd = fd;
        in.maxwd = MAXWD - 1; /* wds are the parent's: any is plausible */
        while (vt_now() < deadline)
                inst_read(&in, true);
        close(fd);
}

static void watcher(int id) {
        static struct inst in;
        int flags = id % 2 ? O_NONBLOCK : 0, status;
        pid_t co = -1;

        srandom((unsigned) getpid());
        inst_open(&in, flags);
        if (id == 1) {
                co = fork();
                if (co < 0)
                        die("fork: %s", strerror(errno));
                if (co == 0) {
                        co_reader(in.fd);
                        _exit(0);
                }
        }
        while (vt_now() < deadline) {
                unsigned op = rnd(100);

                if (op < 2) {
                        /* Close with watches and unread records, then a fresh one. */
                        close(in.fd);
                        inst_open(&in, flags);
                } else if (op < 3) {
                        inst_flags(&in);
                } else if (op < 40) {
                        inst_add(&in);
                } else if (op < 55) {
                        inst_remove(&in);
                } else {
                        inst_read(&in, !flags);
                }
        }
        /* Watcher 0 leaves with its instance open: exit() must clean up. */
        if (id != 0)
                close(in.fd);
        if (co > 0 && (waitpid(co, &status, 0) != co || !WIFEXITED(status) || WEXITSTATUS(status)))
                die("the co-reader failed");
}

static void mutator(void) {
        char a[160], b[160];
        static const char *const dirs[] = { TOP "/a", TOP "/b", TOP "/m" };

        srandom((unsigned) getpid());
        while (vt_now() < deadline) {
                const char *d1 = dirs[rnd(3)], *d2 = dirs[rnd(3)];
                unsigned op = rnd(8);
                int fd;

                snprintf(a, sizeof(a), "%s/f%u", d1, rnd(NFILES));
                switch (op) {
                case 0:
                case 1:
                        fd = open(a, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                        if (fd >= 0) {
                                if (write(fd, "data", 4) < 0)
                                        die("write: %s", strerror(errno));
                                close(fd);
                        }
                        break;
                case 2:
                        snprintf(b, sizeof(b), "%s/f%u", d2, rnd(NFILES));
                        (void) rename(a, b);
                        break;
                case 3:
                        (void) unlink(a);
                        break;
                case 4:
                        (void) chmod(a, 0600 | rnd(2) * 044);
                        break;
                case 5:
                        snprintf(b, sizeof(b), "%s/d%u", d1, rnd(4));
                        (void) mkdir(b, 0755);
                        break;
                case 6:
                        snprintf(b, sizeof(b), "%s/d%u", d1, rnd(4));
                        (void) rmdir(b);
                        break;
                case 7:
                        fd = open(a, O_RDONLY | O_CLOEXEC);
                        if (fd >= 0) {
                                char c;

                                (void) !read(fd, &c, 1);
                                close(fd);
                        }
                        break;
                }
                cnt.mutations++;
        }
}

static void mounter(void) {
        char path[160];
        int i, tries;

        srandom((unsigned) getpid());
        while (vt_now() < deadline) {
                if (mount("tmpfs", TOP "/m", "tmpfs", 0, "size=4m") < 0)
                        die("mount: %s", strerror(errno));
                for (i = 0; i < 8; i++) {
                        int fd;

                        snprintf(path, sizeof(path), TOP "/m/f%u", rnd(NFILES));
                        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                        if (fd >= 0)
                                close(fd);
                }
                /* A watcher may hold an fd for an instant while it adds a watch. */
                for (tries = 0; umount(TOP "/m") < 0; tries++) {
                        if (errno != EBUSY || tries > 1000)
                                die("umount: %s", strerror(errno));
                        usleep(1000);
                }
                cnt.unmounts++;
        }
}

static void knob_turner(void) {
        bool small = false;

        while (vt_now() < deadline) {
                small = !small;
                if (vt_sysfs_set(SYSFS_DIR "/max_queued_events", small ? "32" : "16384") < 0)
                        die("set max_queued_events");
                usleep(50000);
        }
        vt_sysfs_set(SYSFS_DIR "/max_queued_events", "16384");
}

/* ---- --unload ---- */

#define UTOP TOP "/u"
static const char *ko_path;

/* Opens, watches a few files (which the mutator unlinks), reads, closes. */
static void opener(int arg) {
        (void) arg;
        srandom((unsigned) getpid());
        while (vt_now() < deadline) {
                char buf[4096], path[64];
                int dev, i, n;

                dev = open(DEV, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
                if (dev < 0) {
                        /* Unloaded (node gone), or going (no fops). */
                        if (errno != ENOENT && errno != ENODEV && errno != ENXIO)
                                die("open %s: %s", DEV, strerror(errno));
                        cnt.refused++;
                        usleep(rnd(1000));
                        continue;
                }
                cnt.opens++;
                for (i = 0, n = 1 + (int) rnd(4); i < n; i++) {
                        struct inotify_watch_request req;
                        int fd;

                        snprintf(path, sizeof(path), UTOP "/f%u", rnd(8));
                        fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
                        if (fd < 0)
                                continue;
                        req.fd = fd;
                        req.mask = INOTIFY_DEV_ALL_EVENTS;
                        /* ENOENT: the inode is being deleted right now. */
                        if (ioctl(dev, INOTIFY_WATCH, &req) >= 0)
                                cnt.adds++;
                        else if (errno != ENOENT)
                                die("INOTIFY_WATCH %s: %s", path, strerror(errno));
                        close(fd);
                }
                if (read(dev, buf, sizeof(buf)) < 0 && errno != EAGAIN)
                        die("read: %s", strerror(errno));
                close(dev);
                /* Leave gaps with nothing open, for the unloader. */
                usleep(rnd(2000));
        }
}

static void unlinker(int arg) {
        char path[64];

        (void) arg;
        srandom((unsigned) getpid());
        while (vt_now() < deadline) {
                snprintf(path, sizeof(path), UTOP "/f%u", rnd(8));
                (void) unlink(path);
                cnt.mutations++;
        }
}

static void load_module(void) {
        int fd = open(ko_path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                die("open %s: %s", ko_path, strerror(errno));
        if (syscall(SYS_finit_module, fd, "", 0) < 0)
                die("finit_module %s: %s", ko_path, strerror(errno));
        close(fd);
}

static void unloader(int arg) {
        (void) arg;
        srandom((unsigned) getpid());
        while (vt_now() < deadline) {
                if (syscall(SYS_delete_module, "inotify_dev", O_NONBLOCK) == 0) {
                        cnt.unloads++;
                        load_module();
                } else if (errno == EAGAIN || errno == EBUSY) {
                        cnt.busy++;
                } else {
                        die("delete_module: %s", strerror(errno));
                }
                usleep(rnd(1000));
        }
}

#define ONCE TOP "/once"

/* Re-adds an IN_ONESHOT watch on ONCE; reads and checks what comes. */
static void oneshot_adder(int arg) {
        static struct inst in;
        struct inotify_watch_request req;
        int fd, wd, last = -1;

        (void) arg;
        inst_open(&in, O_NONBLOCK);
        fd = open(ONCE, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                die("open %s: %s", ONCE, strerror(errno));
        req.fd = fd;
        req.mask = IN_ATTRIB | IN_ONESHOT;
        while (vt_now() < deadline) {
                wd = ioctl(in.fd, INOTIFY_ADD_WATCH, &req);
                if (wd < 0)
                        die("INOTIFY_ADD_WATCH %s (linked, open, oneshot): %s", ONCE, strerror(errno));
                cnt.adds++;
                if (wd != last)
                        cnt.rearms++;
                last = wd;
                if (wd > in.maxwd)
                        in.maxwd = wd;
                if (wd < MAXWD) {
                        in.state[wd] = 1;
                        in.v2[wd] = 1;
                }
                inst_read(&in, false);
        }
        close(fd);
        close(in.fd);
}

/* Changes ONCE's attributes, firing the oneshot watch. */
static void oneshot_toucher(int arg) {
        int fd = open(ONCE, O_RDONLY | O_CLOEXEC);

        (void) arg;
        if (fd < 0)
                die("open %s: %s", ONCE, strerror(errno));
        while (vt_now() < deadline) {
                if (fchmod(fd, cnt.mutations % 2 ? 0644 : 0600) < 0)
                        die("fchmod %s: %s", ONCE, strerror(errno));
                cnt.mutations++;
        }
        close(fd);
}

static pid_t spawn(void (*fn)(int), int arg) {
        pid_t pid = fork();

        if (pid < 0) {
                vt_line("FAIL stress: fork: %s", strerror(errno));
                exit(1);
        }
        if (pid == 0) {
                fn(arg);
                if (write(report_fd, &cnt, sizeof(cnt)) != (ssize_t) sizeof(cnt))
                        _exit(2);
                _exit(0);
        }
        return pid;
}

static void run_mutator(int arg) {
        (void) arg;
        mutator();
}

static void run_mounter(int arg) {
        (void) arg;
        mounter();
}

static void run_knob(int arg) {
        (void) arg;
        knob_turner();
}

int main(int argc, char **argv) {
        bool unload = argc > 3 && strcmp(argv[1], "--unload") == 0;
        int seconds = unload ? atoi(argv[2]) : argc > 1 ? atoi(argv[1]) : 30;
        struct counts total = { 0 }, c;
        int pipefd[2], i, status, failed = 0, nchild = 0;
        double t0;
        pid_t pid;

        if (unload) {
                test_name = "stress_unload";
                ko_path = argv[3];
        }
        if (seconds <= 0)
                seconds = 30;
        if ((mkdir(TOP, 0755) < 0 && errno != EEXIST) || (mkdir(TOP "/a", 0755) < 0 && errno != EEXIST) ||
            (mkdir(TOP "/b", 0755) < 0 && errno != EEXIST) || (mkdir(TOP "/m", 0755) < 0 && errno != EEXIST) ||
            (mkdir(UTOP, 0755) < 0 && errno != EEXIST)) {
                vt_line("FAIL %s: mkdir: %s", test_name, strerror(errno));
                return 1;
        }
        i = open(ONCE, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (i < 0) {
                vt_line("FAIL %s: create %s: %s", test_name, ONCE, strerror(errno));
                return 1;
        }
        close(i);
        if (pipe(pipefd) < 0) {
                vt_line("FAIL %s: pipe: %s", test_name, strerror(errno));
                return 1;
        }
        report_fd = pipefd[1];
        t0 = vt_now();
        deadline = t0 + seconds;
        if (unload) {
                for (i = 0; i < 3; i++, nchild++)
                        spawn(opener, i);
                spawn(unlinker, 0);
                spawn(unloader, 0);
                nchild += 2;
        } else {
                for (i = 0; i < 4; i++, nchild++)
                        spawn(watcher, i);
                for (i = 0; i < 3; i++, nchild++)
                        spawn(run_mutator, 0);
                spawn(run_mounter, 0);
                spawn(run_knob, 0);
                spawn(oneshot_adder, 0);
                spawn(oneshot_toucher, 0);
                nchild += 4;
        }
        close(pipefd[1]);

        /* Children that hang are killed 30 s after the deadline. */
        alarm((unsigned) seconds + 30);
        while ((pid = wait(&status)) > 0) {
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        if (WIFSIGNALED(status))
                                vt_line("FAIL %s: child %d killed by signal %d", test_name, (int) pid, WTERMSIG(status));
                        failed++;
                }
        }
        while (read(pipefd[0], &c, sizeof(c)) == (ssize_t) sizeof(c)) {
                total.opens += c.opens;
                total.adds += c.adds;
                total.removes += c.removes;
                total.records += c.records;
                total.overflows += c.overflows;
                total.ignored += c.ignored;
                total.mutations += c.mutations;
                total.unmounts += c.unmounts;
                total.unloads += c.unloads;
                total.busy += c.busy;
                total.refused += c.refused;
                total.rearms += c.rearms;
                nchild--;
        }
        if (failed || nchild) {
                vt_line("FAIL %s: %d children failed, %d did not report", test_name, failed, nchild);
                return 1;
        }
        if (unload) {
                /* Both outcomes must have happened, or the test showed nothing. */
                if (!total.unloads || !total.busy || !total.opens) {
                        vt_line("FAIL stress_unload: %ld unloads, %ld refused as busy, %ld opens: "
                                "want some of each",
                                total.unloads, total.busy, total.opens);
                        return 1;
                }
                vt_line("PASS stress_unload: %.0f s, %ld unloads and reloads, %ld refused (busy), "
                        "%ld instances (%ld opens refused while unloaded), %ld watches, %ld unlinks",
                        vt_now() - t0, total.unloads, total.busy, total.opens, total.refused, total.adds,
                        total.mutations);
                return 0;
        }
        /* The oneshot pair showed nothing unless its watch died and came back. */
        if (total.rearms < 2) {
                vt_line("FAIL stress: the IN_ONESHOT watch was re-armed %ld times: want many", total.rearms);
                return 1;
        }
        vt_line("PASS stress: %.0f s, %ld instances, %ld watches added, %ld removed, %ld records read "
                "(%ld IN_IGNORED, %ld IN_Q_OVERFLOW), %ld file operations, %ld unmounts, "
                "%ld IN_ONESHOT re-arms",
                vt_now() - t0, total.opens, total.adds, total.removes, total.records, total.ignored, total.overflows,
                total.mutations, total.unmounts, total.rearms);
        return 0;
}
