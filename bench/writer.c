/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * writer: the one load generator of the benchmark, the same for every system.
 *
 *   writer create DIR N            N files f0000000.. (create, write 16 bytes, close)
 *   writer append FILE N HZ TXFILE N appends of 16 bytes at HZ, write times to TXFILE
 *   writer populate DIR N          N empty files a0000000.. (set-up of the renames)
 *   writer rename DIR [DIR2] N     a.. -> DIR/b.. (within) or DIR2/a.. (across)
 *   writer tree ROOT TOP SUB       ROOT/dNNN (TOP of them), each with SUB subdirectories
 *   writer spread ROOT D N HZ TXFILE  N files f0000000.. at HZ, file i in ROOT/d(i mod D)
 *                                  (create, write, close), creation times to TXFILE
 *
 * It prints "t_start=NS" and "t_end=NS" (CLOCK_MONOTONIC, comparable with the
 * consumers' receipt times): t_start just before the first operation, t_end
 * just after the last one returned.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PAYLOAD 16

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int parse_uint(const char *s, unsigned *ret) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || v > 10000000u) {
                fprintf(stderr, "invalid number \"%s\"\n", s);
                return -EINVAL;
        }
        *ret = (unsigned) v;
        return 0;
}

static int do_create(const char *dir, unsigned n) {
        char payload[PAYLOAD];
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (dfd < 0) {
                fprintf(stderr, "cannot open \"%s\": %m\n", dir);
                return -errno;
        }
        memset(payload, 'x', sizeof payload);

        printf("t_start=%" PRIu64 "\n", now_ns());
        for (unsigned i = 0; i < n; i++) {
                char name[16];
                int fd;

                snprintf(name, sizeof name, "f%07u", i);
                fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0 || write(fd, payload, sizeof payload) != (ssize_t) sizeof payload) {
                        fprintf(stderr, "cannot write \"%s/%s\": %m\n", dir, name);
                        if (fd >= 0)
                                close(fd);
                        close(dfd);
                        return -EIO;
                }
                close(fd);
        }
        printf("t_end=%" PRIu64 "\n", now_ns());
        close(dfd);
        return 0;
}

static int do_append(const char *path, unsigned n, unsigned hz, const char *txfile) {
        uint64_t *tx = calloc(n ? n : 1, sizeof(uint64_t));
        uint64_t period = 1000000000u / (hz ? hz : 1), t0;
        FILE *f;
        int fd, r = 0;

        if (!tx)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "cannot open \"%s\": %m\n", path);
                free(tx);
                return -errno;
        }

        t0 = now_ns() + period;
        printf("t_start=%" PRIu64 "\n", t0);
        for (unsigned i = 0; i < n; i++) {
                uint64_t at = t0 + (uint64_t) i * period;
                struct timespec ts = { .tv_sec = (time_t) (at / 1000000000u), .tv_nsec = (long) (at % 1000000000u) };
                char payload[PAYLOAD];

                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                        ;
                tx[i] = now_ns();
                /* The payload carries the write time, for anyone who reads it. */
                memcpy(payload, &tx[i], sizeof tx[i]);
                memset(payload + sizeof tx[i], '\n', sizeof payload - sizeof tx[i]);
                if (write(fd, payload, sizeof payload) != (ssize_t) sizeof payload) {
                        fprintf(stderr, "cannot append to \"%s\": %m\n", path);
                        r = -EIO;
                        break;
                }
        }
        printf("t_end=%" PRIu64 "\n", now_ns());
        close(fd);

        f = fopen(txfile, "we");
        if (!f) {
                fprintf(stderr, "cannot write \"%s\": %m\n", txfile);
                free(tx);
                return -errno;
        }
        for (unsigned i = 0; i < n; i++)
                fprintf(f, "%" PRIu64 "\n", tx[i]);
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        free(tx);
        return r;
}

static int do_populate(const char *dir, unsigned n) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (dfd < 0) {
                fprintf(stderr, "cannot open \"%s\": %m\n", dir);
                return -errno;
        }
        for (unsigned i = 0; i < n; i++) {
                char name[16];
                int fd;

                snprintf(name, sizeof name, "a%07u", i);
                fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0) {
                        fprintf(stderr, "cannot create \"%s/%s\": %m\n", dir, name);
                        close(dfd);
                        return -errno;
                }
                close(fd);
        }
        close(dfd);
        return 0;
}

static int do_rename(const char *dir, const char *dir2, unsigned n) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), dfd2;

        if (dfd < 0) {
                fprintf(stderr, "cannot open \"%s\": %m\n", dir);
                return -errno;
        }
        dfd2 = dir2 ? open(dir2, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : dup(dfd);
        if (dfd2 < 0) {
                fprintf(stderr, "cannot open \"%s\": %m\n", dir2 ? dir2 : dir);
                close(dfd);
                return -errno;
        }

        printf("t_start=%" PRIu64 "\n", now_ns());
        for (unsigned i = 0; i < n; i++) {
                char from[16], to[16];

                snprintf(from, sizeof from, "a%07u", i);
                snprintf(to, sizeof to, "%c%07u", dir2 ? 'a' : 'b', i);
                if (renameat(dfd, from, dfd2, to) < 0) {
                        fprintf(stderr, "cannot rename \"%s/%s\": %m\n", dir, from);
                        close(dfd);
                        close(dfd2);
                        return -errno;
                }
        }
        printf("t_end=%" PRIu64 "\n", now_ns());
        close(dfd);
        close(dfd2);
        return 0;
}

/* The sharing workload: paced creations over D directories, each time kept. */
static int do_spread(const char *root, unsigned dirs, unsigned n, unsigned hz, const char *txfile) {
        uint64_t *tx = calloc(n ? n : 1, sizeof(uint64_t));
        uint64_t period = 1000000000u / (hz ? hz : 1), t0;
        char payload[PAYLOAD], path[4096];
        FILE *f;
        int r = 0;

        if (!tx)
                return -ENOMEM;
        memset(payload, 'x', sizeof payload);
        t0 = now_ns() + period;
        printf("t_start=%" PRIu64 "\n", t0);
        for (unsigned i = 0; i < n; i++) {
                uint64_t at = t0 + (uint64_t) i * period;
                struct timespec ts = { .tv_sec = (time_t) (at / 1000000000u), .tv_nsec = (long) (at % 1000000000u) };
                int fd;

                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                        ;
                snprintf(path, sizeof path, "%s/d%04u/f%07u", root, i % dirs, i);
                tx[i] = now_ns();
                fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0 || write(fd, payload, sizeof payload) != (ssize_t) sizeof payload) {
                        fprintf(stderr, "cannot write \"%s\": %m\n", path);
                        if (fd >= 0)
                                close(fd);
                        r = -EIO;
                        break;
                }
                close(fd);
        }
        printf("t_end=%" PRIu64 "\n", now_ns());

        f = fopen(txfile, "we");
        if (!f) {
                fprintf(stderr, "cannot write \"%s\": %m\n", txfile);
                free(tx);
                return -errno;
        }
        for (unsigned i = 0; i < n; i++)
                fprintf(f, "%" PRIu64 "\n", tx[i]);
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        free(tx);
        return r;
}

static int do_tree(const char *root, unsigned top, unsigned sub) {
        char path[4096];

        for (unsigned i = 0; i < top; i++) {
                int len = snprintf(path, sizeof path, "%s/d%04u", root, i);

                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        goto fail;
                for (unsigned j = 0; j < sub; j++) {
                        snprintf(path + len, sizeof path - (size_t) len, "/s%04u", j);
                        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                                goto fail;
                }
        }
        return 0;
fail:
        fprintf(stderr, "cannot create \"%s\": %m\n", path);
        return -errno;
}

int main(int argc, char **argv) {
        unsigned n = 0, hz = 0, top = 0;
        int r = -EINVAL;

        if (argc == 4 && strcmp(argv[1], "create") == 0 && parse_uint(argv[3], &n) == 0)
                r = do_create(argv[2], n);
        else if (argc == 6 && strcmp(argv[1], "append") == 0 && parse_uint(argv[3], &n) == 0 &&
                 parse_uint(argv[4], &hz) == 0 && hz > 0)
                r = do_append(argv[2], n, hz, argv[5]);
        else if (argc == 4 && strcmp(argv[1], "populate") == 0 && parse_uint(argv[3], &n) == 0)
                r = do_populate(argv[2], n);
        else if (argc == 4 && strcmp(argv[1], "rename") == 0 && parse_uint(argv[3], &n) == 0)
                r = do_rename(argv[2], NULL, n);
        else if (argc == 5 && strcmp(argv[1], "rename") == 0 && parse_uint(argv[4], &n) == 0)
                r = do_rename(argv[2], argv[3], n);
        else if (argc == 7 && strcmp(argv[1], "spread") == 0 && parse_uint(argv[3], &top) == 0 && top > 0 &&
                 parse_uint(argv[4], &n) == 0 && parse_uint(argv[5], &hz) == 0 && hz > 0)
                r = do_spread(argv[2], top, n, hz, argv[6]);
        else if (argc == 5 && strcmp(argv[1], "tree") == 0 && parse_uint(argv[3], &top) == 0 &&
                 parse_uint(argv[4], &n) == 0)
                r = do_tree(argv[2], top, n);
        else
                fprintf(stderr,
                        "usage: writer create DIR N | append FILE N HZ TXFILE | populate DIR N |\n"
                        "              rename DIR [DIR2] N | tree ROOT TOP SUB | spread ROOT D N HZ TXFILE\n");
        fflush(stdout);
        return r < 0 ? 1 : 0;
}
