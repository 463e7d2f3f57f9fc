// SPDX-License-Identifier: GPL-2.0
/*
 * pressure.c - /dev/inotify under pressure, inside the VM (tests/vm/pressure)
 *
 *   /pressure [TEST...]      default: all
 *
 * - unmount_flowing: a tmpfs watched by 4 instances (root, a directory, files)
 *   is unmounted while 2 writers create and delete files in it (one every
 *   0.5 ms each) and a thread reads the instances; umount(2) is retried while
 *   a writer's file is open. Every watch must end with IN_UNMOUNT then
 *   IN_IGNORED, and each instance's records must be well formed.
 * - unmount_lazy_held: the same, detached (MNT_DETACH) while the writers keep
 *   writing through open descriptors; the watches end when the last writer
 *   is killed and the filesystem really goes.
 * - close_during_read: 300 rounds of a thread blocked in read() on an
 *   instance whose descriptor another thread closes; the read is then ended
 *   by an event, by a signal (EINTR) or by the watched directory's deletion.
 *   The read must return (no hang) and the instance must be freed after.
 * - queue_memory: 8 instances, each with a watch on one directory, filled to
 *   max_queued_events with 200-byte names in a VM of 128 MiB; each queue
 *   must end with exactly one IN_Q_OVERFLOW, and closing them must give the
 *   memory back (MemAvailable within 4 MiB of before).
 *
 * One "PASS name" / "FAIL name: why" line per test (vmtest.h), and
 * "PRESSURE name: figures" lines for docs/RELIABILITY.md.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mount.h>

#include "vmtest.h"

#define DEV "/dev/inotify"
#define MNT "/tmp/pressure-mnt"

static int watch(int dev, const char *path, uint32_t mask) {
        struct inotify_watch_request req;
        int fd, wd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        req.fd = fd;
        req.mask = mask;
        wd = ioctl(dev, INOTIFY_WATCH, &req);
        close(fd);
        return wd;
}

static void writer(const char *dir, int id, double seconds) {
        char path[256];
        double end;
        struct timespec ts;
        unsigned i = 0;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        end = ts.tv_sec + ts.tv_nsec / 1e9 + seconds;
        for (;;) {
                int fd;

                snprintf(path, sizeof(path), "%s/w%d-%u", dir, id, i++ % 64);
                fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (fd >= 0) {
                        (void) !write(fd, "x", 1);
                        close(fd);
                        unlink(path);
                }
                clock_gettime(CLOCK_MONOTONIC, &ts);
                if (ts.tv_sec + ts.tv_nsec / 1e9 > end)
                        _exit(0);
                usleep(500); /* a steady flow that a reader keeps up with even under TCG */
        }
}

/* A writer that keeps one file open and writes to it until killed. */
static void holder(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        if (fd < 0)
                _exit(1);
        for (;;) {
                (void) !pwrite(fd, "y", 1, 0);
                usleep(500);
        }
}

#define NINST  4
#define NWATCH 6

struct inst {
        struct vt_reader r;
        int wd[NWATCH];
        bool unmount[NWATCH], ignored[NWATCH];
        long records, overflows;
};

static int wd_index(struct inst *in, int wd) {
        for (int k = 0; k < NWATCH; k++)
                if (in->wd[k] == wd)
                        return k;
        return -1;
}

/* Reads all instances until every watch has IN_IGNORED (or timeout_ms passes). */
static int drain_until_ignored(struct inst *ins, int timeout_ms) {
        struct timespec t0, t;
        int left;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                left = 0;
                for (int i = 0; i < NINST; i++) {
                        const struct inotify_event *ev;

                        while ((ev = vt_next(&ins[i].r, 0))) {
                                int k;

                                ins[i].records++;
                                CHECK(ev->len % 16 == 0 && ev->len <= 256, "record len %u", ev->len);
                                if (ev->mask & IN_Q_OVERFLOW) {
                                        CHECK(ev->wd == -1, "overflow with wd %d", ev->wd);
                                        ins[i].overflows++;
                                        continue;
                                }
                                k = wd_index(&ins[i], ev->wd);
                                CHECK(k >= 0, "record for unknown wd %d (mask 0x%x)", ev->wd, ev->mask);
                                CHECK(!ins[i].ignored[k], "record 0x%x for wd %d after its IN_IGNORED", ev->mask, ev->wd);
                                if (ev->mask & IN_UNMOUNT)
                                        ins[i].unmount[k] = true;
                                if (ev->mask & IN_IGNORED)
                                        ins[i].ignored[k] = true;
                        }
                        for (int k = 0; k < NWATCH; k++)
                                left += !ins[i].ignored[k];
                }
                if (left == 0)
                        return 0;
                clock_gettime(CLOCK_MONOTONIC, &t);
                if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
                        return vt_fail("%d watches got no IN_IGNORED within %d ms", left, timeout_ms);
                usleep(2000);
        }
}

/* The instances are read while the writers run and the filesystem goes:
 * a queue left to fill would overflow and drop the very IN_IGNORED awaited. */
struct drainer {
        struct inst *ins;
        int rc;
        char why[sizeof(vt_why)];
};

static void *drain_thread(void *p) {
        struct drainer *d = p;

        d->rc = drain_until_ignored(d->ins, 20000);
        memcpy(d->why, vt_why, sizeof(d->why));
        return NULL;
}

static int unmount_common(bool lazy) {
        static struct inst ins[NINST];
        const char *paths[NWATCH] = { MNT, MNT "/d", MNT "/f0", MNT "/f1", MNT "/d/g0", MNT "/d/g1" };
        pid_t kids[3];
        long records = 0, overflows = 0;
        int nkids = 0;

        mkdir(MNT, 0755);
        CHECK(mount("pressure", MNT, "tmpfs", 0, "size=8m") == 0, "mount tmpfs");
        CHECK(mkdir(MNT "/d", 0755) == 0, "mkdir");
        for (int k = 2; k < NWATCH; k++) {
                int fd = open(paths[k], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                CHECK(fd >= 0, "create %s", paths[k]);
                close(fd);
        }
        for (int i = 0; i < NINST; i++) {
                memset(&ins[i], 0, sizeof(ins[i]));
                ins[i].r.fd = open(DEV, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                CHECK(ins[i].r.fd >= 0, "open " DEV);
                for (int k = 0; k < NWATCH; k++) {
                        ins[i].wd[k] = watch(ins[i].r.fd, paths[k], IN_ALL_EVENTS);
                        CHECK(ins[i].wd[k] >= 0, "watch %s", paths[k]);
                }
        }
        struct drainer dr = { .ins = ins };
        pthread_t reader;

        CHECK(pthread_create(&reader, NULL, drain_thread, &dr) == 0, "pthread_create");
        for (int w = 0; w < 2; w++) {
                pid_t p = fork();
                CHECK(p >= 0, "fork");
                if (p == 0) {
                        if (lazy)
                                holder(w ? MNT "/d/g1" : MNT "/f1");
                        writer(w ? MNT "/d" : MNT, w, 10.0);
                }
                kids[nkids++] = p;
        }
        usleep(300000); /* let events flow */
        if (lazy) {
                CHECK(umount2(MNT, MNT_DETACH) == 0, "umount2 MNT_DETACH");
                usleep(200000); /* they go on writing into the detached tmpfs */
                for (int k = 0; k < nkids; k++)
                        kill(kids[k], SIGKILL);
        } else {
                int tries = 0;

                /* Busy while a writer has a file open: retry, events flowing. */
                while (umount2(MNT, 0) < 0) {
                        CHECK(errno == EBUSY && ++tries < 100000, "umount %s", MNT);
                }
                for (int k = 0; k < nkids; k++)
                        kill(kids[k], SIGKILL);
        }
        for (int k = 0; k < nkids; k++)
                waitpid(kids[k], NULL, 0);

        pthread_join(reader, NULL);
        if (dr.rc < 0) {
                memcpy(vt_why, dr.why, sizeof(vt_why));
                return -1;
        }
        for (int i = 0; i < NINST; i++) {
                CHECK(ins[i].overflows == 0, "instance %d overflowed: its reader fell behind", i);
                for (int k = 0; k < NWATCH; k++)
                        CHECK(ins[i].unmount[k], "instance %d watch %s: IN_IGNORED without IN_UNMOUNT", i, paths[k]);
                records += ins[i].records;
                overflows += ins[i].overflows;
                close(ins[i].r.fd);
        }
        rmdir(MNT);
        vt_line("PRESSURE unmount_%s: %d instances x %d watches, %ld records read, %ld overflows, every watch ended "
                "with IN_UNMOUNT + IN_IGNORED",
                lazy ? "lazy_held" : "flowing", NINST, NWATCH, records, overflows);
        return 0;
}

static int test_unmount_flowing(void) {
        return unmount_common(false);
}

static int test_unmount_lazy_held(void) {
        return unmount_common(true);
}

/* ------------------------------------------------------------------ close during read */

struct blocked {
        int fd;
        pid_t tid;
        volatile int state; /* 0 starting, 1 about to read, 2 returned */
        ssize_t n;
        int err;
};

static void on_usr1(int sig) {
        (void) sig;
}

static void *blocked_reader(void *p) {
        struct blocked *b = p;
        char buf[4096] __attribute__((aligned(8)));

        b->tid = gettid();
        b->state = 1;
        b->n = read(b->fd, buf, sizeof(buf));
        b->err = errno;
        b->state = 2;
        return NULL;
}

/* Waits until thread tid sleeps (state S in /proc): it is blocked in read(). */
static bool sleeping(pid_t tid) {
        char path[64], buf[256], *p;
        int fd;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int) tid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        p = strrchr(buf, ')');
        return p && p[1] == ' ' && p[2] == 'S';
}

static int test_close_during_read(void) {
        struct sigaction sa = { .sa_handler = on_usr1 }; /* no SA_RESTART: read() returns EINTR */
        int by_event = 0, by_signal = 0, by_delete = 0;
        const int rounds = 300;

        sigaction(SIGUSR1, &sa, NULL);
        mkdir("/tmp/pressure-cdr", 0755);
        for (int round = 0; round < rounds; round++) {
                struct blocked b = { .state = 0 };
                struct timespec deadline;
                pthread_t t;
                char path[64];
                int spins = 0;

                mkdir("/tmp/pressure-cdr/d", 0755);
                b.fd = open(DEV, O_RDONLY | O_CLOEXEC);
                CHECK(b.fd >= 0, "open " DEV);
                CHECK(watch(b.fd, "/tmp/pressure-cdr/d", IN_CREATE | IN_DELETE_SELF) >= 0, "watch");
                CHECK(pthread_create(&t, NULL, blocked_reader, &b) == 0, "pthread_create");
                while (b.state == 0 || !sleeping(b.tid)) {
                        CHECK(b.state != 2, "read returned at once: %zd", b.n);
                        CHECK(++spins < 1000000, "the reader never blocked");
                        sched_yield();
                }
                /* The descriptor goes while the other thread is inside read(). */
                CHECK(close(b.fd) == 0, "close");

                switch (round % 3) {
                case 0:
                        snprintf(path, sizeof(path), "/tmp/pressure-cdr/d/f%d", round);
                        CHECK(close(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) == 0, "create");
                        unlink(path);
                        break;
                case 1:
                        pthread_kill(t, SIGUSR1);
                        break;
                default:
                        CHECK(rmdir("/tmp/pressure-cdr/d") == 0, "rmdir");
                }
                clock_gettime(CLOCK_REALTIME, &deadline);
                deadline.tv_sec += 5;
                CHECK(pthread_timedjoin_np(t, NULL, &deadline) == 0, "round %d: the blocked read() did not return",
                      round);
                switch (round % 3) {
                case 0:
                        CHECK(b.n > 0, "round %d: read gave %zd (errno %d), wanted the event", round, b.n, b.err);
                        by_event++;
                        break;
                case 1:
                        CHECK(b.n < 0 && b.err == EINTR, "round %d: read gave %zd errno %d, wanted EINTR", round, b.n,
                              b.err);
                        by_signal++;
                        break;
                default:
                        CHECK(b.n > 0, "round %d: read gave %zd (errno %d), wanted IN_DELETE_SELF", round, b.n, b.err);
                        by_delete++;
                }
                rmdir("/tmp/pressure-cdr/d");
        }
        /* Each instance is freed once its last reader is gone. */
        for (int i = 0; vt_sysfs_get(SYSFS_DIR "/stats/instances") != 0; i++) {
                CHECK(i < 1000, "instances still %ld after the rounds", vt_sysfs_get(SYSFS_DIR "/stats/instances"));
                usleep(10000);
        }
        vt_line("PRESSURE close_during_read: %d rounds: %d reads ended by an event, %d by a signal, %d by the "
                "directory's deletion; no hang, every instance freed",
                rounds, by_event, by_signal, by_delete);
        return 0;
}

/* ------------------------------------------------------------------ queue memory */

static long mem_available_kb(void) {
        char buf[4096], *p;
        int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        p = strstr(buf, "MemAvailable:");
        return p ? strtol(p + 13, NULL, 10) : -1;
}

#define QINST 8

static int test_queue_memory(void) {
        static struct vt_reader r[QINST];
        long before, full, after, maxq = vt_sysfs_get(SYSFS_DIR "/max_queued_events");
        char name[300], path[400];
        long queued;

        CHECK(maxq > 0, "max_queued_events");
        mkdir("/tmp/pressure-q", 0755);
        before = mem_available_kb();
        for (int i = 0; i < QINST; i++) {
                r[i].fd = open(DEV, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                r[i].len = r[i].off = 0;
                CHECK(r[i].fd >= 0, "open " DEV);
                CHECK(watch(r[i].fd, "/tmp/pressure-q", IN_CREATE | IN_DELETE) >= 0, "watch");
        }
        memset(name, 'n', 200);
        for (long e = 0; e < maxq + 16; e++) {
                /* distinct names, so that no two records merge */
                snprintf(name + 200, 40, "%ld", e);
                snprintf(path, sizeof(path), "/tmp/pressure-q/%s", name);
                int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                CHECK(fd >= 0, "create %ld", e);
                close(fd);
                CHECK(unlink(path) == 0, "unlink");
        }
        full = mem_available_kb();
        queued = vt_sysfs_get(SYSFS_DIR "/stats/queued_events");
        for (int i = 0; i < QINST; i++) {
                const struct inotify_event *ev, *last = NULL;
                long n = 0, overflows = 0;

                while ((ev = vt_next(&r[i], 0))) {
                        n++;
                        overflows += !!(ev->mask & IN_Q_OVERFLOW);
                        last = ev;
                }
                CHECK(overflows == 1, "instance %d: %ld IN_Q_OVERFLOW records", i, overflows);
                CHECK(last && (last->mask & IN_Q_OVERFLOW), "instance %d: the overflow is not the last record", i);
                CHECK(n <= maxq + 1, "instance %d: %ld records, more than the %ld allowed", i, n, maxq);
        }
        for (int i = 0; i < QINST; i++)
                close(r[i].fd);
        for (int i = 0; vt_sysfs_get(SYSFS_DIR "/stats/queued_events") != 0; i++) {
                CHECK(i < 1000, "queued_events still %ld", vt_sysfs_get(SYSFS_DIR "/stats/queued_events"));
                usleep(10000);
        }
        usleep(200000); /* RCU-freed marks and slab */
        after = mem_available_kb();
        vt_line("PRESSURE queue_memory: %d instances x %ld events of 200-byte names (%ld queued): MemAvailable %ld kB "
                "before, %ld kB full, %ld kB after close",
                QINST, maxq, queued, before, full, after);
        CHECK(after > before - 4096, "MemAvailable %ld kB after close, %ld kB before: not given back", after, before);
        return 0;
}

static const struct vt_test tests[] = {
        { "unmount_flowing", test_unmount_flowing, 60 },
        { "unmount_lazy_held", test_unmount_lazy_held, 60 },
        { "close_during_read", test_close_during_read, 120 },
        { "queue_memory", test_queue_memory, 180 },
};

int main(int argc, char **argv) {
        bool ok = true;

        for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
                bool wanted = argc < 2;

                for (int k = 1; k < argc; k++)
                        wanted = wanted || strcmp(argv[k], tests[i].name) == 0;
                if (wanted)
                        ok = vt_run(&tests[i]) && ok;
        }
        return ok ? 0 : 1;
}
