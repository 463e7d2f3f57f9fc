// SPDX-License-Identifier: GPL-2.0
/*
 * storm.c - the same event storm read through /dev/inotify and through the
 * kernel's own inotify syscalls, in the same VM, alternating, REPS times
 * (default 3); prints the medians and their ratio.
 *
 * The storm: FILES files created, written (16 bytes) and closed in a fresh
 * directory on tmpfs, watched for IN_CREATE|IN_OPEN|IN_MODIFY|IN_CLOSE_WRITE:
 * 4 records a file. Two figures per backend:
 *  - live:  a writer process makes the storm while the reader reads it; the
 *           time from the writer's start to the last record (both sides of
 *           the hot path: queueing in the writer's context, reading);
 *  - queue: the storm is made with nobody reading; the writer's time (the
 *           queueing side alone: the handler runs in the writer's context);
 *  - drain: then the queued storm is read; the time of the reads alone (the
 *           read path).
 * Queue limits are raised so that nothing overflows; every record is
 * counted and an overflow or a missing record fails the run.
 *
 * Usage: storm [FILES [REPS]]   (defaults 20000 and 3; tests/vm/run passes 10000 and 5)
 * Output: "STORM ..." lines, then "PASS storm" or "FAIL storm: why".
 */
#define _GNU_SOURCE
#include <sys/inotify.h>
#include <sys/ioctl.h>

#include "vmtest.h"

#define STORM_MASK (IN_CREATE | IN_OPEN | IN_MODIFY | IN_CLOSE_WRITE)
#define DIRNAME    "/tmp/storm"

enum backend {
        DEVICE,
        SYSCALL
};
static const char *const backend_name[] = { "dev", "syscall" };

static int nfiles = 20000;

static int make_storm(void) {
        char path[64];
        int i, fd;

        for (i = 0; i < nfiles; i++) {
                snprintf(path, sizeof(path), DIRNAME "/file%06d", i);
                fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (fd < 0 || write(fd, "0123456789abcdef", 16) != 16)
                        return -1;
                close(fd);
        }
        return 0;
}

static int clean_dir(void) {
        char path[64];
        int i;

        for (i = 0; i < nfiles; i++) {
                snprintf(path, sizeof(path), DIRNAME "/file%06d", i);
                unlink(path);
        }
        if (rmdir(DIRNAME) < 0 && errno != ENOENT)
                return -1;
        return mkdir(DIRNAME, 0755);
}

/* Opens a reader on DIRNAME; returns its fd. */
static int open_backend(enum backend b) {
        int fd, dfd, wd;

        if (b == SYSCALL) {
                fd = inotify_init1(IN_CLOEXEC);
                if (fd < 0)
                        return -1;
                wd = inotify_add_watch(fd, DIRNAME, STORM_MASK);
        } else {
                struct inotify_watch_request req;

                fd = open("/dev/inotify", O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return -1;
                dfd = open(DIRNAME, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
                if (dfd < 0)
                        return -1;
                req.fd = dfd;
                req.mask = STORM_MASK;
                wd = ioctl(fd, INOTIFY_WATCH, &req);
                close(dfd);
        }
        if (wd < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

/* Reads until @want records arrived; returns how many, or -1 on overflow/error. */
static long read_all(int fd, long want) {
        static char buf[65536] __attribute__((aligned(8)));
        long got = 0;

        while (got < want) {
                ssize_t n = read(fd, buf, sizeof(buf));
                size_t off;

                if (n <= 0)
                        return -1;
                for (off = 0; off < (size_t) n;) {
                        const struct inotify_event *ev = (const void *) (buf + off);

                        if (ev->mask & IN_Q_OVERFLOW)
                                return -1;
                        got++;
                        off += sizeof(*ev) + ev->len;
                }
        }
        return got;
}

/* One run: events per second, or a negative value on failure. */
static double run(enum backend b, bool live, double *queue_rate) {
        long want = 4L * nfiles;
        double t0, t;
        pid_t pid;
        int fd, status;

        if (clean_dir() < 0)
                return -1;
        fd = open_backend(b);
        if (fd < 0)
                return -2;
        t0 = vt_now();
        if (live) {
                pid = fork();
                if (pid < 0)
                        return -3;
                if (pid == 0)
                        _exit(make_storm() == 0 ? 0 : 1);
                if (read_all(fd, want) != want)
                        return -4;
                t = vt_now() - t0;
                if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
                        return -5;
        } else {
                int pending = 0;

                if (make_storm() < 0)
                        return -6;
                *queue_rate = (double) want / (vt_now() - t0);
                if (ioctl(fd, FIONREAD, &pending) < 0 || pending <= 0)
                        return -7;
                t0 = vt_now();
                if (read_all(fd, want) != want)
                        return -8;
                t = vt_now() - t0;
        }
        close(fd);
        return (double) want / t;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

int main(int argc, char **argv) {
        int reps = argc > 2 ? atoi(argv[2]) : 3, r, i, mode;
        static const char *const mode_name[] = { "live", "drain", "queue" };
        double rate[3][2][16], ratio[3][16], med[3][2], med_ratio[3];
        char lim[32];

        if (argc > 1)
                nfiles = atoi(argv[1]);
        if (nfiles <= 0 || reps <= 0 || reps > 16) {
                vt_line("FAIL storm: usage: storm [FILES [REPS<=16]]");
                return 2;
        }
        snprintf(lim, sizeof(lim), "%d", 8 * nfiles);
        if (vt_sysfs_set(SYSFS_DIR "/max_queued_events", lim) < 0 ||
            vt_sysfs_set("/proc/sys/fs/inotify/max_queued_events", lim) < 0) {
                vt_line("FAIL storm: cannot raise the queue limits");
                return 1;
        }
        /* Alternate backends inside each repetition so drift hits both alike. */
        for (r = 0; r < reps; r++) {
                for (mode = 0; mode < 2; mode++) {
                        for (i = 0; i < 2; i++) {
                                enum backend b = (enum backend)((r + i) % 2);
                                double q = 0, v = run(b, mode == 0, &q);

                                if (v < 0) {
                                        vt_line("FAIL storm: %s %s run %d failed (%d): %s", backend_name[b],
                                                mode_name[mode], r, (int) v, strerror(errno));
                                        return 1;
                                }
                                rate[mode][b][r] = v;
                                if (mode == 1)
                                        rate[2][b][r] = q;
                        }
                        /* Paired: the two backends ran back to back, under the same load. */
                        ratio[mode][r] = rate[mode][DEVICE][r] / rate[mode][SYSCALL][r];
                        if (mode == 1)
                                ratio[2][r] = rate[2][DEVICE][r] / rate[2][SYSCALL][r];
                }
        }
        vt_sysfs_set(SYSFS_DIR "/max_queued_events", "16384");
        vt_sysfs_set("/proc/sys/fs/inotify/max_queued_events", "16384");
        clean_dir();

        for (mode = 0; mode < 3; mode++) {
                for (i = 0; i < 2; i++) {
                        qsort(rate[mode][i], (size_t) reps, sizeof(double), cmp_double);
                        med[mode][i] = rate[mode][i][reps / 2];
                }
                qsort(ratio[mode], (size_t) reps, sizeof(double), cmp_double);
                med_ratio[mode] = ratio[mode][reps / 2];
                vt_line("STORM %s: %d files, %ld records each run, median of %d: /dev/inotify %.0f "
                        "events/s, "
                        "inotify syscalls %.0f events/s, ratio of medians %.2f, median of paired ratios "
                        "%.2f "
                        "(goal >= 0.9)",
                        mode_name[mode], nfiles, 4L * nfiles, reps, med[mode][DEVICE], med[mode][SYSCALL],
                        med[mode][DEVICE] / med[mode][SYSCALL], med_ratio[mode]);
                {
                        char runs[2][256];
                        int b, len;

                        for (b = 0; b < 2; b++) {
                                runs[b][0] = '\0';
                                for (r = 0, len = 0; r < reps && len < 200; r++)
                                        len += snprintf(runs[b] + len, sizeof(runs[b]) - (size_t) len, " %.0f",
                                                        rate[mode][b][r]);
                        }
                        vt_line("STORM %s runs (sorted, events/s): dev%s; syscall%s", mode_name[mode], runs[DEVICE],
                                runs[SYSCALL]);
                }
        }
        vt_line("PASS storm");
        return 0;
}
