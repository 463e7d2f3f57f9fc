/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sink: the accounting every benchmark consumer shares; see sink.h.
 *
 * File names are parsed, not hashed: the writer names its files with one
 * letter and seven digits, so a byte per index records what was seen of it
 * and a consumer pays the same small cost whatever system it listens to.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sink.h"

enum {
        SEEN_FILE = 1 << 0,
        SEEN_PAIR = 1 << 1,
        SEEN_FROM = 1 << 2,
        SEEN_TO = 1 << 3,
        SEEN_DONE = 1 << 4,
};

uint64_t sink_now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static unsigned long parse_ulong(const char *opt, const char *s) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0') {
                fprintf(stderr, "invalid value for --%s: \"%s\"\n", opt, s);
                exit(2);
        }
        return v;
}

void sink_parse(Sink *s, int argc, char **argv) {
        static const struct option options[] = {
                { "mode", required_argument, NULL, 'm' },       { "dir", required_argument, NULL, 'd' },
                { "dir2", required_argument, NULL, 'D' },       { "expect", required_argument, NULL, 'n' },
                { "timeout-ms", required_argument, NULL, 't' }, { "idle-ms", required_argument, NULL, 'i' },
                { "rx-file", required_argument, NULL, 'r' },    { "extra", required_argument, NULL, 'x' },
                { "move-out", no_argument, NULL, 'o' },         { "linger", no_argument, NULL, 'l' },
                { "recursive", no_argument, NULL, 'R' },        {}
        };
        int c;

        *s = (Sink) {
                .mode = SINK_STORM,
                .timeout_ns = 60ull * 1000000000u,
                .idle_ns = 3ull * 1000000000u,
                .t_start = sink_now(),
        };

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'm':
                        if (strcmp(optarg, "storm") == 0)
                                s->mode = SINK_STORM;
                        else if (strcmp(optarg, "latency") == 0)
                                s->mode = SINK_LATENCY;
                        else if (strcmp(optarg, "rename") == 0)
                                s->mode = SINK_RENAME;
                        else if (strcmp(optarg, "tree") == 0)
                                s->mode = SINK_TREE;
                        else {
                                fprintf(stderr, "unknown mode \"%s\"\n", optarg);
                                exit(2);
                        }
                        break;
                case 'd':
                        s->dir = optarg;
                        break;
                case 'D':
                        s->dir2 = optarg;
                        break;
                case 'n':
                        s->expect = parse_ulong("expect", optarg);
                        break;
                case 't':
                        s->timeout_ns = parse_ulong("timeout-ms", optarg) * 1000000ull;
                        break;
                case 'i':
                        s->idle_ns = parse_ulong("idle-ms", optarg) * 1000000ull;
                        break;
                case 'r':
                        s->rx_file = optarg;
                        break;
                case 'x':
                        s->extra = optarg;
                        break;
                case 'o':
                        s->move_out = true;
                        break;
                case 'l':
                        s->linger = true;
                        break;
                case 'R':
                        s->recursive = true;
                        break;
                default:
                        exit(2);
                }

        if (!s->dir || optind != argc || s->expect > 10000000u) {
                fprintf(stderr,
                        "usage: %s --mode storm|latency|rename|tree --dir PATH [--dir2 PATH] "
                        "--expect N [--timeout-ms MS] [--idle-ms MS] [--rx-file PATH] [--extra ARG] [--move-out] [--linger] [--recursive]\n",
                        argv[0]);
                exit(2);
        }

        s->seen = calloc(s->expect + 1, 1);
        if (!s->seen) {
                fprintf(stderr, "out of memory\n");
                exit(1);
        }
}

void sink_free(Sink *s) {
        free(s->seen);
        free(s->rx);
}

void sink_ready(Sink *s, long watcher_pid) {
        if (s->mode == SINK_TREE && s->setup_ns == 0)
                s->setup_ns = sink_now() - s->t_start;
        printf("ready pid=%ld watcher_pid=%ld setup_ns=%" PRIu64 "\n", (long) getpid(),
               watcher_pid > 0 ? watcher_pid : (long) getpid(), s->setup_ns);
        fflush(stdout);
}

static const char *base_name(const char *path) {
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

/* "f0000042" -> 42 when the letter matches and the index is in range, else -1. */
static long name_index(const Sink *s, const char *name, char letter) {
        const char *b = base_name(name);
        unsigned long v = 0;

        if (b[0] != letter || b[1] == '\0')
                return -1;
        for (const char *p = b + 1; *p; p++) {
                if (*p < '0' || *p > '9' || v > s->expect)
                        return -1;
                v = v * 10 + (unsigned) (*p - '0');
        }
        return v < s->expect ? (long) v : -1;
}

/* Does path lie directly in dir? A bare name is taken to (the consumer knew). */
static bool in_dir(const char *path, const char *dir) {
        const char *b = base_name(path);
        size_t n;

        if (b == path)
                return true;
        n = (size_t) (b - path - 1);
        return strlen(dir) == n && memcmp(path, dir, n) == 0;
}

static void stamp(Sink *s) {
        s->t_last = sink_now();
        if (s->t_first == 0)
                s->t_first = s->t_last;
}

static void account(Sink *s, long i, uint8_t bit) {
        s->seen[i] |= bit;
        if (!(s->seen[i] & SEEN_DONE) &&
            ((s->seen[i] & (SEEN_FILE | SEEN_PAIR)) || (s->move_out && (s->seen[i] & SEEN_FROM)) ||
             (s->seen[i] & (SEEN_FROM | SEEN_TO)) == (SEEN_FROM | SEEN_TO))) {
                s->seen[i] |= SEEN_DONE;
                s->distinct++;
        }
}

void sink_file(Sink *s, const char *name) {
        long i;

        s->records++;
        if (s->mode == SINK_LATENCY) {
                stamp(s);
                if (s->n_rx == s->n_rx_alloc) {
                        size_t n = s->n_rx_alloc ? s->n_rx_alloc * 2 : 4096;
                        uint64_t *p = realloc(s->rx, n * sizeof(uint64_t));

                        if (!p)
                                return;
                        s->rx = p;
                        s->n_rx_alloc = n;
                }
                s->rx[s->n_rx++] = s->t_last;
                return;
        }
        if (s->mode != SINK_STORM)
                return;
        i = name_index(s, name, 'f');
        if (i < 0)
                return;
        stamp(s);
        account(s, i, SEEN_FILE);
}

void sink_pair(Sink *s, const char *from, const char *to) {
        long i = name_index(s, from, 'a');
        long j = name_index(s, to, s->dir2 ? 'a' : 'b');

        s->records++;
        if (i < 0 || i != j || !in_dir(from, s->dir) || !in_dir(to, s->dir2 ? s->dir2 : s->dir)) {
                s->bad_records++;
                return;
        }
        stamp(s);
        s->pair_records++;
        account(s, i, SEEN_PAIR);
}

void sink_half(Sink *s, SinkMove which, const char *name) {
        long i;

        s->records++;
        if (which == SINK_MOVE_FROM)
                i = in_dir(name, s->dir) ? name_index(s, name, 'a') : -1;
        else
                i = in_dir(name, s->dir2 ? s->dir2 : s->dir) ? name_index(s, name, s->dir2 ? 'a' : 'b') : -1;
        if (i < 0) {
                s->bad_records++;
                return;
        }
        stamp(s);
        s->halves++;
        account(s, i, which == SINK_MOVE_FROM ? SEEN_FROM : SEEN_TO);
}

void sink_other(Sink *s) {
        s->records++;
}

void sink_lost(Sink *s) {
        s->overflow = true;
}

bool sink_done(const Sink *s) {
        switch (s->mode) {
        case SINK_STORM:
        case SINK_RENAME:
                return s->distinct >= s->expect;
        case SINK_LATENCY:
                return s->n_rx >= s->expect;
        case SINK_TREE:
                return false; /* runs until bench/run has looked at it */
        }
        return true;
}

int sink_wait_ms(const Sink *s) {
        uint64_t now = sink_now(), deadline = s->t_start + s->timeout_ns;

        if (s->mode != SINK_TREE && s->t_last > 0 && s->t_last + s->idle_ns < deadline)
                deadline = s->t_last + s->idle_ns;
        if (sink_done(s) || now >= deadline)
                return 0;
        return (int) ((deadline - now + 999999) / 1000000);
}

static uint64_t tv_ns(struct timeval tv) {
        return (uint64_t) tv.tv_sec * 1000000000u + (uint64_t) tv.tv_usec * 1000u;
}

int sink_report(Sink *s) {
        struct rusage self = {}, children = {};

        /* The consumer's own cost, and that of a tool it runs (inotifywait). */
        (void) getrusage(RUSAGE_SELF, &self);
        (void) getrusage(RUSAGE_CHILDREN, &children);
        printf("cpu_self_ns=%" PRIu64 "\n"
               "cpu_children_ns=%" PRIu64 "\n"
               "maxrss_kb=%ld\n"
               "wakeups=%ld\n",
               tv_ns(self.ru_utime) + tv_ns(self.ru_stime), tv_ns(children.ru_utime) + tv_ns(children.ru_stime),
               self.ru_maxrss, self.ru_nvcsw);
        printf("records=%" PRIu64 "\n"
               "distinct=%u\n"
               "expect=%u\n"
               "t_first=%" PRIu64 "\n"
               "t_last=%" PRIu64 "\n"
               "overflow=%d\n"
               "pair_records=%u\n"
               "bad_records=%u\n"
               "halves=%u\n"
               "setup_ns=%" PRIu64 "\n",
               s->records, s->distinct, s->expect, s->t_first, s->t_last, s->overflow, s->pair_records, s->bad_records,
               s->halves, s->setup_ns);

        /* Which files were missed, as runs of indexes (at most 8): a loss at
         * the start, the end or in the middle of a storm points at different causes. */
        if (s->distinct < s->expect && s->mode != SINK_TREE) {
                unsigned runs = 0;

                printf("missing=");
                for (uint32_t i = 0; i < s->expect && runs < 8;) {
                        uint32_t j = i;

                        if (s->seen[i] & SEEN_DONE) {
                                i++;
                                continue;
                        }
                        while (j + 1 < s->expect && !(s->seen[j + 1] & SEEN_DONE))
                                j++;
                        printf("%s%u-%u", runs ? "," : "", i, j);
                        runs++;
                        i = j + 1;
                }
                printf("\n");
        }

        if (s->rx_file) {
                FILE *f = fopen(s->rx_file, "we");

                if (!f) {
                        fprintf(stderr, "cannot write \"%s\": %m\n", s->rx_file);
                        return -errno;
                }
                for (size_t k = 0; k < s->n_rx; k++)
                        fprintf(f, "%" PRIu64 "\n", s->rx[k]);
                if (fclose(f) != 0)
                        return -errno;
        }
        printf("end\n");
        if (fflush(stdout) != 0)
                return -EIO;
        if (s->linger) {
                /* Stay, holding everything open, until the harness closes our stdin:
                 * a consumer that is done must not tear down its process and its
                 * connection while the others are still reading (W2). */
                char buf[64];

                while (read(STDIN_FILENO, buf, sizeof buf) > 0)
                        ;
        }
        return 0;
}
