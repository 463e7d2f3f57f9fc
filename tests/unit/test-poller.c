/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-poller - polling real directories with a fake clock
 *
 * Each case works in a fresh temporary directory with two subdirectories, A
 * and B, polled as one group: a table of changes made between two polls and
 * the records that must come out, in order. Then the parts that are not one
 * poll: kernel notes that keep a change from being told twice, a directory
 * found after the start, the spread of many groups over the interval, the
 * bound on system calls per run and per interval, the per-user budget, a
 * directory that goes away, and a group freed from its own record.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "event_bits.h"
#include "macro.h"
#include "poll_snapshot.h"
#include "poller.h"

#define SEC 1000000u

typedef struct Fixture {
        char *root;
        int rootfd;
        Poller *poller;
        PollGroup *group;
        PollDir *a, *b;
        uint64_t now;
        GPtrArray *records;      /* "MASK dir/name[ -> dir/name]" */
        GArray *begins;          /* uint64_t: when a read began (the fake clock) */
        GPtrArray *begin_groups; /* the group of each */
        GPtrArray *begin_dirs;   /* and the directory */
        GPtrArray *errors;       /* "dir error" */
        GPtrArray *read_ops;     /* "dir OPEN|ACCESS|CLOSE_NOWRITE" */
        int held[8];             /* fds kept open by "hold" */
        size_t n_held;
        bool free_group_on_record;
} Fixture;

static const char *mask_name(uint32_t m) {
        switch (m & ~IN_ISDIR) {
        case IN_CREATE:
                return "CREATE";
        case IN_DELETE:
                return "DELETE";
        case IN_MODIFY:
                return "MODIFY";
        case IN_ATTRIB:
                return "ATTRIB";
        case IN_MOVED_FROM | IN_MOVED_TO:
                return "MOVED";
        default:
                return "?";
        }
}

static int on_begin(void *group, void *dir, void *userdata) {
        Fixture *f = userdata;

        g_array_append_val(f->begins, f->now);
        g_ptr_array_add(f->begin_groups, group);
        g_ptr_array_add(f->begin_dirs, dir);
        return 0;
}

static void on_record(void *group, const PollRecord *r, void *userdata) {
        Fixture *f = userdata;
        GString *s = g_string_new(mask_name(r->mask));

        if (r->mask & IN_ISDIR)
                g_string_append(s, ",ISDIR");
        g_string_append_printf(s, " %s/%s", (const char *) r->dir, r->name);
        if (r->new_name)
                g_string_append_printf(s, " -> %s/%s", (const char *) r->new_dir, r->new_name);
        g_ptr_array_add(f->records, g_string_free(s, false));
        if (f->free_group_on_record) {
                poller_group_free(f->group);
                f->group = NULL;
                f->a = f->b = NULL;
        }
}

static void on_error(void *group, void *dir, int error, void *userdata) {
        Fixture *f = userdata;

        g_ptr_array_add(f->errors, g_strdup_printf("%s %s", (const char *) dir, error ? g_strerror(-error) : "ok"));
}

static void on_read_op(void *group, void *dir, uint32_t what, void *userdata) {
        Fixture *f = userdata;

        g_ptr_array_add(f->read_ops,
                        g_strdup_printf("%s %s", (const char *) dir,
                                        what == IN_OPEN                  ? "OPEN" :
                                                what == IN_ACCESS        ? "ACCESS" :
                                                what == IN_CLOSE_NOWRITE ? "CLOSE_NOWRITE" :
                                                                           "?"));
}

static const PollerCallbacks callbacks = {
        .begin = on_begin,
        .record = on_record,
        .error = on_error,
        .read_op = on_read_op,
};

static int open_dir(Fixture *f, const char *name) {
        int fd = openat(f->rootfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        return fd;
}

static void setup(Fixture *f, gconstpointer data) {
        _cleanup_close_ int a = -1, b = -1;

        *f = (Fixture) {};
        f->root = g_dir_make_tmp("test-poller-XXXXXX", NULL);
        g_assert_nonnull(f->root);
        f->rootfd = open(f->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(f->rootfd, >=, 0);
        g_assert_cmpint(mkdirat(f->rootfd, "A", 0755), ==, 0);
        g_assert_cmpint(mkdirat(f->rootfd, "B", 0755), ==, 0);
        f->records = g_ptr_array_new_with_free_func(g_free);
        f->errors = g_ptr_array_new_with_free_func(g_free);
        f->read_ops = g_ptr_array_new_with_free_func(g_free);
        f->begins = g_array_new(false, false, sizeof(uint64_t));
        f->begin_groups = g_ptr_array_new();
        f->begin_dirs = g_ptr_array_new();
        f->now = 1000 * SEC;
        g_assert_cmpint(poller_new(&callbacks, f, 1000, &f->poller), ==, 0);
        g_assert_cmpint(poller_group_new(f->poller, 1000, 5 * SEC, f->now, "group", &f->group), ==, 0);
        a = open_dir(f, "A");
        b = open_dir(f, "B");
        g_assert_cmpint(poller_dir_add(f->group, a, false, "A", &f->a), ==, 0);
        g_assert_cmpint(poller_dir_add(f->group, b, false, "B", &f->b), ==, 0);
}

static void teardown(Fixture *f, gconstpointer data) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->root);

        poller_free(f->poller);
        for (size_t i = 0; i < f->n_held; i++)
                safe_close(f->held[i]);
        safe_close(f->rootfd);
        g_assert_cmpint(system(cmd), ==, 0);
        g_free(f->root);
        g_ptr_array_unref(f->records);
        g_ptr_array_unref(f->errors);
        g_ptr_array_unref(f->read_ops);
        g_array_unref(f->begins);
        g_ptr_array_unref(f->begin_groups);
        g_ptr_array_unref(f->begin_dirs);
}

/* Runs everything due now, as an event loop would: until nothing is. */
static unsigned drain(Fixture *f) {
        unsigned runs = 0;
        int r;

        do {
                r = poller_run(f->poller, f->now);
                g_assert_cmpint(r, >=, 0);
                runs++;
                g_assert_cmpuint(runs, <, 100000);
        } while (r > 0);
        return runs;
}

/* Moves the clock to the next thing due and runs it. */
static void next_poll(Fixture *f) {
        uint64_t t = poller_next(f->poller);

        g_assert_cmpuint(t, !=, UINT64_MAX);
        if (t > f->now)
                f->now = t;
        drain(f);
}

/* ---- a small language for changes: "op path [path]" ---- */

/* Names may hold newlines and bytes that are not UTF-8: written \n and \xHH. */
static char *unescape(const char *s) {
        GString *o = g_string_new(NULL);

        for (; *s; s++) {
                if (s[0] == '\\' && s[1] == 'n') {
                        g_string_append_c(o, '\n');
                        s++;
                } else if (s[0] == '\\' && s[1] == 'x' && g_ascii_isxdigit(s[2]) && g_ascii_isxdigit(s[3])) {
                        g_string_append_c(o, (char) (g_ascii_xdigit_value(s[2]) * 16 + g_ascii_xdigit_value(s[3])));
                        s += 3;
                } else
                        g_string_append_c(o, *s);
        }
        return g_string_free(o, false);
}

static void op(Fixture *f, const char *line) {
        g_auto(GStrv) w = g_strsplit(line, " ", 3);
        const char *p = w[1], *q = w[1] ? w[2] : NULL;
        int fd;

        g_autofree char *pp = p ? unescape(p) : NULL, *qq = q ? unescape(q) : NULL;

        if (strcmp(w[0], "touch") == 0) {
                fd = openat(f->rootfd, pp, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                g_assert_cmpint(fd, >=, 0);
                close(fd);
        } else if (strcmp(w[0], "write") == 0) {
                fd = openat(f->rootfd, pp, O_WRONLY | O_APPEND | O_CLOEXEC);
                g_assert_cmpint(fd, >=, 0);
                g_assert_cmpint(write(fd, "x", 1), ==, 1);
                close(fd);
        } else if (strcmp(w[0], "mkdir") == 0)
                g_assert_cmpint(mkdirat(f->rootfd, pp, 0755), ==, 0);
        else if (strcmp(w[0], "rm") == 0)
                g_assert_cmpint(unlinkat(f->rootfd, pp, 0), ==, 0);
        else if (strcmp(w[0], "rmdir") == 0)
                g_assert_cmpint(unlinkat(f->rootfd, pp, AT_REMOVEDIR), ==, 0);
        else if (strcmp(w[0], "chmod") == 0)
                g_assert_cmpint(fchmodat(f->rootfd, pp, 0700, 0), ==, 0);
        else if (strcmp(w[0], "mtime") == 0) {
                /* mtime only, a second into the future: what touch -m does. */
                struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = time(NULL) + 1 } };

                g_assert_cmpint(utimensat(f->rootfd, pp, ts, 0), ==, 0);
        } else if (strcmp(w[0], "mv") == 0)
                g_assert_cmpint(renameat(f->rootfd, pp, f->rootfd, qq), ==, 0);
        else if (strcmp(w[0], "ln") == 0)
                g_assert_cmpint(linkat(f->rootfd, pp, f->rootfd, qq, 0), ==, 0);
        else if (strcmp(w[0], "symlink") == 0)
                g_assert_cmpint(symlinkat(pp, f->rootfd, qq), ==, 0);
        else if (strcmp(w[0], "hold") == 0) {
                /* Keeps the inode alive, so that its number is not reused. */
                g_assert_cmpuint(f->n_held, <, ELEMENTSOF(f->held));
                fd = openat(f->rootfd, pp, O_RDONLY | O_CLOEXEC);
                g_assert_cmpint(fd, >=, 0);
                f->held[f->n_held++] = fd;
        } else
                g_error("unknown op '%s'", line);
}

typedef struct Case {
        const char *what;
        const char *before[6];  /* made before the first snapshot */
        const char *changes[6]; /* between it and the next poll */
        const char *records[6]; /* what that poll must give, in order */
} Case;

static const Case cases[] = {
        { "a file created", {}, { "touch A/f" }, { "CREATE A/f" } },
        { "a directory created", {}, { "mkdir A/d" }, { "CREATE,ISDIR A/d" } },
        { "a symbolic link created, not followed", {}, { "symlink /nonexistent A/s" }, { "CREATE A/s" } },
        { "a file deleted", { "touch A/f" }, { "rm A/f" }, { "DELETE A/f" } },
        { "a directory deleted", { "mkdir A/d" }, { "rmdir A/d" }, { "DELETE,ISDIR A/d" } },
        { "a file written", { "touch A/f" }, { "write A/f" }, { "MODIFY A/f" } },
        { "a file's mode changed", { "touch A/f" }, { "chmod A/f" }, { "ATTRIB A/f" } },
        { "a directory's mode changed", { "mkdir A/d" }, { "chmod A/d" }, { "ATTRIB,ISDIR A/d" } },
        { "mtime alone reads as a modification", { "touch A/f" }, { "mtime A/f" }, { "MODIFY A/f" } },
        { "a change inside a subdirectory is not its parent's", { "mkdir A/d" }, { "touch A/d/f", "mkdir A/d/e" }, {} },
        { "a rename", { "touch A/a" }, { "mv A/a A/b" }, { "MOVED A/a -> A/b" } },
        { "a directory renamed", { "mkdir A/d" }, { "mv A/d A/e" }, { "MOVED,ISDIR A/d -> A/e" } },
        { "a rename and a write", { "touch A/a" }, { "mv A/a A/b", "write A/b" }, { "MOVED A/a -> A/b", "MODIFY A/b" } },
        { "a rename over another file", { "touch A/a", "touch A/b" }, { "mv A/a A/b" }, { "DELETE A/b", "MOVED A/a -> A/b" } },
        { "a chain of renames goes in the order that keeps names apart",
          { "touch A/a", "touch A/b" },
          { "mv A/b A/c", "mv A/a A/b" },
          { "MOVED A/b -> A/c", "MOVED A/a -> A/b" } },
        { "a swap is two moves",
          { "touch A/a", "touch A/b" },
          { "mv A/a A/t", "mv A/b A/a", "mv A/t A/b" },
          { "MOVED A/a -> A/b", "MOVED A/b -> A/a" } },
        { "a name given to a new inode",
          { "touch A/f", "hold A/f" },
          { "rm A/f", "touch A/f" },
          { "DELETE A/f", "CREATE A/f" } },
        { "a move between two directories of the group", { "touch A/x" }, { "mv A/x B/y" }, { "MOVED A/x -> B/y" } },
        { "a directory moved between them", { "mkdir A/d" }, { "mv A/d B/d" }, { "MOVED,ISDIR A/d -> B/d" } },
        { "a hard link kept, the other name renamed",
          { "touch A/a", "ln A/a A/l" },
          { "mv A/a A/b" },
          { "MOVED A/a -> A/b" } },
        { "a new hard link: a creation, and the link count's change",
          { "touch A/a" },
          { "ln A/a A/l" },
          { "CREATE A/l", "ATTRIB A/a" } },
        { "two new names of one inode are no move",
          { "touch A/a", "hold A/a" },
          { "ln A/a A/l", "ln A/a B/m", "rm A/a" },
          { "DELETE A/a", "CREATE A/l", "CREATE B/m" } },
        { "a name that is not UTF-8", {}, { "touch A/\\xff\\xfe" }, { "CREATE A/\xff\xfe" } },
        { "a name with a newline, renamed", { "touch A/a\\nb" }, { "mv A/a\\nb A/c\\nd" }, { "MOVED A/a\nb -> A/c\nd" } },
        { "deletions, moves, creations, modifications",
          { "touch A/z", "touch A/m", "touch A/w" },
          { "touch A/new", "write A/w", "mv A/m A/n", "rm A/z" },
          { "DELETE A/z", "MOVED A/m -> A/n", "CREATE A/new", "MODIFY A/w" } },
};

static void run_case(Fixture *f, const Case *c) {
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(c->before) && c->before[i]; i++)
                op(f, c->before[i]);
        drain(f); /* the first snapshots */
        g_assert_cmpuint(f->records->len, ==, 0);
        for (size_t i = 0; i < ELEMENTSOF(c->changes) && c->changes[i]; i++)
                op(f, c->changes[i]);
        next_poll(f);
        for (size_t i = 0; i < ELEMENTSOF(c->records) && c->records[i]; i++, n++) {
                g_assert_cmpuint(f->records->len, >, i);
                g_assert_cmpstr(g_ptr_array_index(f->records, i), ==, c->records[i]);
        }
        g_assert_cmpuint(f->records->len, ==, n);

        /* Nothing more at the next poll: the snapshot is the new state. */
        g_ptr_array_set_size(f->records, 0);
        next_poll(f);
        g_assert_cmpuint(f->records->len, ==, 0);
}

static void test_changes(Fixture *f, gconstpointer data) {
        /* One fixture per case, made here: g_test_add per case would need a path each. */
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Fixture each;

                g_test_message("case: %s", cases[i].what);
                setup(&each, NULL);
                run_case(&each, &cases[i]);
                teardown(&each, NULL);
        }
}

/* A change made here is reported by the kernel, which the daemon notes:
 * the poll must not report it again, and must still report what follows. */
static void test_note(Fixture *f, gconstpointer data) {
        op(f, "touch A/old");
        drain(f);
        op(f, "touch A/f");
        op(f, "write A/old");
        op(f, "mv A/old B/moved");
        g_assert_cmpint(poller_dir_note(f->a, "f"), ==, 0);
        g_assert_cmpint(poller_dir_note(f->a, "old"), ==, 0);
        g_assert_cmpint(poller_dir_note(f->b, "moved"), ==, 0);
        drain(f); /* the notes are stat'ed at once, before any poll */
        next_poll(f);
        g_assert_cmpuint(f->records->len, ==, 0);

        /* A change the kernel did not see, after the notes: reported. */
        op(f, "write A/f");
        next_poll(f);
        g_assert_cmpuint(f->records->len, ==, 1);
        g_assert_cmpstr(g_ptr_array_index(f->records, 0), ==, "MODIFY A/f");
}

/* A note that comes while the directory is being read, and one for a change
 * that a round has found and holds until its last directory is read. */
static void test_note_during_read(Fixture *f, gconstpointer data) {
        char line[32];
        int r;

        for (int i = 0; i < 200; i++) {
                g_snprintf(line, sizeof(line), "touch A/f%03d", i);
                op(f, line);
                g_snprintf(line, sizeof(line), "touch B/g%03d", i);
                op(f, line);
        }
        drain(f);
        poller_set_limits(f->poller, 16, 1000);

        /* The round starts and lists A; f199 is stat'ed near the end, f000 at first. */
        f->now = poller_next(f->poller);
        g_assert_cmpint(poller_run(f->poller, f->now), >, 0);
        g_assert_cmpint(poller_run(f->poller, f->now), >, 0);
        /* Changed here, and noted, while A is half read. */
        op(f, "write A/f199");
        op(f, "write A/f000");
        g_assert_cmpint(poller_dir_note(f->a, "f199"), ==, 0);
        g_assert_cmpint(poller_dir_note(f->a, "f000"), ==, 0);
        drain(f);
        g_assert_cmpuint(f->records->len, ==, 0);

        /* Found by the next round in A, then noted while the round reads B. */
        op(f, "touch A/late");
        op(f, "touch A/remote");
        f->now = poller_next(f->poller);
        g_ptr_array_set_size(f->begin_dirs, 0);
        do {
                r = poller_run(f->poller, f->now);
                g_assert_cmpint(r, >, 0);
        } while (strcmp(g_ptr_array_index(f->begin_dirs, f->begin_dirs->len - 1), "B") != 0);
        g_assert_cmpuint(f->records->len, ==, 0); /* held until B is read */
        g_assert_cmpint(poller_dir_note(f->a, "late"), ==, 0);
        drain(f);
        g_assert_cmpuint(f->records->len, ==, 1);
        g_assert_cmpstr(g_ptr_array_index(f->records, 0), ==, "CREATE A/remote");
}

static void test_report_existing(Fixture *f, gconstpointer data) {
        _cleanup_close_ int fd = -1;
        PollDir *d;

        op(f, "mkdir A/new");
        op(f, "touch A/new/f");
        op(f, "mkdir A/new/sub");
        drain(f);
        g_assert_cmpuint(f->records->len, ==, 0);
        fd = open_dir(f, "A/new");
        g_assert_cmpint(poller_dir_add(f->group, fd, true, "A/new", &d), ==, 0);
        drain(f);
        g_assert_cmpuint(f->records->len, ==, 2);
        g_assert_cmpstr(g_ptr_array_index(f->records, 0), ==, "CREATE A/new/f");
        g_assert_cmpstr(g_ptr_array_index(f->records, 1), ==, "CREATE,ISDIR A/new/sub");
        g_assert_cmpuint(poller_group_size(f->group), ==, 3);
}

/* 100 groups made at once: their rounds spread over the interval. */
static void test_spread(Fixture *f, gconstpointer data) {
        enum {
                N = 100,
                BUCKETS = 10
        };
        PollGroup *groups[N];
        uint64_t first[N], second[N];
        unsigned bucket[BUCKETS] = {};
        uint64_t t0 = f->now, interval = 5 * SEC;

        for (int i = 0; i < N; i++) {
                _cleanup_close_ int fd = open_dir(f, "B");

                g_assert_cmpint(poller_group_new(f->poller, 2000, interval, t0, GINT_TO_POINTER(i + 1), &groups[i]), ==,
                                0);
                g_assert_cmpint(poller_dir_add(groups[i], fd, false, "B", NULL), ==, 0);
                first[i] = second[i] = 0;
        }
        drain(f); /* first snapshots, all at t0 */
        g_array_set_size(f->begins, 0);
        g_ptr_array_set_size(f->begin_groups, 0);

        /* Two intervals, in steps of 10 ms. */
        for (f->now = t0; f->now <= t0 + 2 * interval; f->now += 10000)
                drain(f);

        for (size_t k = 0; k < f->begins->len; k++) {
                int i = GPOINTER_TO_INT(g_ptr_array_index(f->begin_groups, k)) - 1;
                uint64_t t = g_array_index(f->begins, uint64_t, k);

                if (i < 0 || i >= N)
                        continue; /* the fixture's own group */
                if (!first[i])
                        first[i] = t;
                else if (!second[i])
                        second[i] = t;
                else
                        g_assert_not_reached(); /* a third round within 2 intervals: too many */
        }
        for (int i = 0; i < N; i++) {
                g_assert_cmpuint(first[i], >, t0);
                g_assert_cmpuint(first[i], <=, t0 + interval + 10000);
                /* Steady: the next round one interval later (to the 10 ms step). */
                g_assert_cmpuint(second[i] - first[i], >=, interval);
                g_assert_cmpuint(second[i] - first[i], <=, interval + 10000);
                bucket[MIN((first[i] - t0 - 1) * BUCKETS / interval, BUCKETS - 1)]++;
        }
        for (int b = 0; b < BUCKETS; b++) {
                g_test_message("bucket %d: %u groups", b, bucket[b]);
                /* Evenly: 10 a bucket; never a crowd, never a gap. */
                g_assert_cmpuint(bucket[b], >=, 7);
                g_assert_cmpuint(bucket[b], <=, 13);
        }
        for (int i = 0; i < N; i++)
                poller_group_free(groups[i]);
        g_assert_cmpuint(poller_user_dirs(f->poller, 2000), ==, 0);
}

/* System calls: at most ops_per_run a run, and per interval what one read of
 * each directory costs (open, statx of it, getdents64 to the end, a statx a
 * name); each directory read once per interval. */
static void test_io_bound(Fixture *f, gconstpointer data) {
        enum {
                NAMES = 300,
                BUDGET = 64,
                INTERVALS = 10
        };
        const PollIo *io = poller_io(f->poller);
        uint64_t t0, total_before, opens_before, interval = 5 * SEC;
        uint64_t max_run = 0, getdents_before;
        char line[32];

        for (int i = 0; i < NAMES; i++) {
                g_snprintf(line, sizeof(line), "touch A/n%03d", i);
                op(f, line);
        }
        poller_set_limits(f->poller, BUDGET, 1000);
        drain(f);
        t0 = f->now;
        total_before = poll_io_total(io);
        opens_before = io->opens;
        getdents_before = io->getdents;

        for (; f->now < t0 + INTERVALS * interval; f->now += 100000) {
                int r;

                do {
                        uint64_t before = poll_io_total(io);

                        r = poller_run(f->poller, f->now);
                        g_assert_cmpint(r, >=, 0);
                        max_run = MAX(max_run, poll_io_total(io) - before);
                } while (r > 0);
        }

        g_test_message("%" G_GUINT64_FORMAT " system calls in %d intervals: %" G_GUINT64_FORMAT " opens, %" G_GUINT64_FORMAT
                       " getdents64, %" G_GUINT64_FORMAT " statx; at most %" G_GUINT64_FORMAT " a run",
                       poll_io_total(io) - total_before, INTERVALS, io->opens - opens_before,
                       io->getdents - getdents_before, io->stats, max_run);
        g_assert_cmpuint(max_run, <=, BUDGET);
        /* Two directories, read once an interval each: INTERVALS rounds. */
        g_assert_cmpuint(io->opens - opens_before, ==, 2 * INTERVALS);
        /* 300 short names fit one getdents64 buffer; one more call sees the end. */
        g_assert_cmpuint(io->getdents - getdents_before, ==, 2 * 2 * INTERVALS);
        g_assert_cmpuint(poll_io_total(io) - total_before, ==, INTERVALS * ((1 + 1 + 2 + NAMES) + (1 + 1 + 2 + 0)));
        g_assert_cmpuint(f->records->len, ==, 0);
}

static void test_user_budget(Fixture *f, gconstpointer data) {
        _cleanup_close_ int fd = open_dir(f, "B");
        PollGroup *g, *other;
        PollDir *d[3];

        /* The fixture's group holds 2 of uid 1000's directories. */
        poller_set_limits(f->poller, POLLER_OPS_PER_RUN, 4);
        g_assert_cmpuint(poller_user_dirs(f->poller, 1000), ==, 2);
        g_assert_cmpint(poller_group_new(f->poller, 1000, SEC, f->now, "g", &g), ==, 0);
        g_assert_cmpint(poller_dir_add(g, fd, false, "B", &d[0]), ==, 0);
        g_assert_cmpint(poller_dir_add(g, fd, false, "B", &d[1]), ==, 0);
        g_assert_cmpint(poller_dir_add(g, fd, false, "B", &d[2]), ==, -EDQUOT);
        g_assert_cmpuint(poller_user_dirs(f->poller, 1000), ==, 4);

        /* Another user is not held back by this one. */
        g_assert_cmpint(poller_group_new(f->poller, 1001, SEC, f->now, "o", &other), ==, 0);
        g_assert_cmpint(poller_dir_add(other, fd, false, "B", NULL), ==, 0);

        poller_dir_remove(d[0]);
        g_assert_cmpint(poller_dir_add(g, fd, false, "B", &d[2]), ==, 0);
        poller_group_free(g);
        g_assert_cmpuint(poller_user_dirs(f->poller, 1000), ==, 2);
        poller_group_free(other);
        g_assert_cmpuint(poller_user_dirs(f->poller, 1001), ==, 0);
        g_assert_cmpint(poller_group_new(f->poller, 1, 0, f->now, "zero", &g), ==, -EINVAL);
}

/*
 * Users take turns: while one user's round reads a directory of 3,000 names
 * (about a hundred runs at 32 system calls), another user's small directory,
 * due meanwhile, is polled within a few runs, not after the large one.
 */
static void test_user_turns(Fixture *f, gconstpointer data) {
        enum {
                NAMES = 3000,
                BUDGET = 32
        };
        _cleanup_close_ int cfd = -1;
        PollGroup *other;
        PollDir *c;
        unsigned runs = 0, a_opens;
        char line[32];

        for (int i = 0; i < NAMES; i++) {
                g_snprintf(line, sizeof(line), "touch A/n%04d", i);
                op(f, line);
        }
        op(f, "mkdir C");
        cfd = open_dir(f, "C");
        poller_set_limits(f->poller, BUDGET, 1000);
        drain(f);

        /* uid 1000's round begins: A is being read. */
        f->now = poller_next(f->poller);
        g_assert_cmpint(poller_run(f->poller, f->now), >, 0);

        /* uid 1001's directory, polled every second, changes. */
        g_assert_cmpint(poller_group_new(f->poller, 1001, SEC, f->now, "other", &other), ==, 0);
        g_assert_cmpint(poller_dir_add(other, cfd, false, "C", &c), ==, 0);
        g_assert_cmpint(poller_dir_prime(c, 100), ==, 0);
        op(f, "touch C/new");
        f->now += 2 * SEC;

        a_opens = poller_io(f->poller)->opens;
        while (f->records->len == 0) {
                g_assert_cmpint(poller_run(f->poller, f->now), >, 0);
                runs++;
                g_assert_cmpuint(runs, <, 200);
        }
        g_test_message("uid 1001's change found after %u runs of %u system calls", runs, BUDGET);
        g_assert_cmpstr(g_ptr_array_index(f->records, 0), ==, "CREATE C/new");
        /* Within two of uid 1000's turns and its own: A is not read to its end first. */
        g_assert_cmpuint(runs, <=, 2 * 64 / BUDGET + 2);
        g_assert_cmpuint(poller_io(f->poller)->opens - a_opens, ==, 1);

        /* And uid 1000's round still ends, with nothing changed in A or B. */
        drain(f);
        g_assert_cmpuint(f->records->len, ==, 1);
        poller_group_free(other);
        g_assert_cmpuint(poller_user_dirs(f->poller, 1001), ==, 0);
}

/* A polled directory removed: told once, not at every round. */
static void test_gone(Fixture *f, gconstpointer data) {
        drain(f);
        op(f, "rmdir B");
        next_poll(f);
        next_poll(f);
        g_assert_cmpuint(f->errors->len, ==, 1);
        g_assert_cmpstr(g_ptr_array_index(f->errors, 0), ==, "B No such file or directory");
        /* A still works. */
        op(f, "touch A/f");
        next_poll(f);
        g_assert_cmpuint(f->records->len, ==, 1);
}

/* A record's callback ends the subscription (ONESHOT): no use after free. */
static void test_free_from_record(Fixture *f, gconstpointer data) {
        drain(f);
        op(f, "touch A/1");
        op(f, "touch A/2");
        op(f, "touch B/3");
        f->free_group_on_record = true;
        next_poll(f);
        g_assert_cmpuint(f->records->len, ==, 1);
        g_assert_null(f->group);
        g_assert_cmpuint(poller_next(f->poller), ==, UINT64_MAX);
        g_assert_cmpuint(poller_user_dirs(f->poller, 1000), ==, 0);
}

/* The same from the records of a directory's first snapshot (report_existing). */
static void test_free_from_first_records(Fixture *f, gconstpointer data) {
        _cleanup_close_ int fd = -1;

        op(f, "mkdir A/new");
        op(f, "touch A/new/f");
        op(f, "touch A/new/g");
        drain(f);
        fd = open_dir(f, "A/new");
        g_assert_cmpint(poller_dir_add(f->group, fd, true, "A/new", NULL), ==, 0);
        f->free_group_on_record = true;
        drain(f);
        g_assert_cmpuint(f->records->len, ==, 1);
        g_assert_cmpstr(g_ptr_array_index(f->records, 0), ==, "CREATE A/new/f");
        g_assert_cmpuint(poller_user_dirs(f->poller, 1000), ==, 0);
}

/* A first snapshot taken at once (AddWatch), within its budget: a change
 * right after is found by the first poll. */
static void test_prime(Fixture *f, gconstpointer data) {
        _cleanup_close_ int fd = open_dir(f, "A");
        PollGroup *g;
        PollDir *d, *big;
        char line[32];

        /* Without the fixture's group, which reads A too. */
        poller_group_free(f->group);
        f->group = NULL;
        op(f, "touch A/before");
        for (int i = 0; i < 100; i++) {
                g_snprintf(line, sizeof(line), "touch B/n%03d", i);
                op(f, line);
        }
        g_assert_cmpint(poller_group_new(f->poller, 1000, SEC, f->now, "g", &g), ==, 0);
        g_assert_cmpint(poller_dir_add(g, fd, false, "A2", &d), ==, 0);
        g_assert_cmpint(poller_dir_prime(d, 64), ==, 0);
        /* Its read: open, statx of it, getdents64 to the end, a statx a name. */
        g_assert_cmpuint(f->read_ops->len, ==, 4);
        g_assert_cmpstr(g_ptr_array_index(f->read_ops, 0), ==, "A2 OPEN");
        g_assert_cmpstr(g_ptr_array_index(f->read_ops, 1), ==, "A2 ACCESS");
        g_assert_cmpstr(g_ptr_array_index(f->read_ops, 2), ==, "A2 ACCESS");
        g_assert_cmpstr(g_ptr_array_index(f->read_ops, 3), ==, "A2 CLOSE_NOWRITE");
        op(f, "touch A/after");
        op(f, "rm A/before");

        /* B: 100 names do not fit in 64 calls; the loop finishes its first snapshot. */
        {
                _cleanup_close_ int bfd = open_dir(f, "B");

                g_assert_cmpint(poller_dir_add(g, bfd, false, "B2", &big), ==, 0);
                g_assert_cmpint(poller_dir_prime(big, 64), ==, 0);
                g_assert_cmpstr(g_ptr_array_index(f->read_ops, f->read_ops->len - 1), !=, "B2 CLOSE_NOWRITE");
        }
        drain(f);
        g_assert_cmpstr(g_ptr_array_index(f->read_ops, f->read_ops->len - 1), ==, "B2 CLOSE_NOWRITE");
        g_assert_cmpuint(f->records->len, ==, 0);
        f->now += SEC;
        drain(f);
        g_assert_cmpuint(f->records->len, ==, 2);
        g_assert_cmpstr(g_ptr_array_index(f->records, 0), ==, "DELETE A2/before");
        g_assert_cmpstr(g_ptr_array_index(f->records, 1), ==, "CREATE A2/after");
        poller_group_free(g);
}

/* A directory of a thousand names, read a bit at a time: a file created
 * while it is read is found at once or at the next round, never lost. */
static void test_resumable(Fixture *f, gconstpointer data) {
        char line[32];
        unsigned runs;

        for (int i = 0; i < 1000; i++) {
                g_snprintf(line, sizeof(line), "touch A/name%04d", i);
                op(f, line);
        }
        poller_set_limits(f->poller, 8, 1000);
        runs = drain(f);
        g_assert_cmpuint(runs, >=, 1000 / 8);
        f->now = poller_next(f->poller);
        g_assert_cmpint(poller_run(f->poller, f->now), >, 0);
        op(f, "touch A/name9999");
        op(f, "rm A/name0000");
        drain(f);
        next_poll(f);
        g_assert_cmpuint(f->records->len, ==, 2);
        g_assert_cmpstr(g_ptr_array_index(f->records, 0), ==, "DELETE A/name0000");
        g_assert_cmpstr(g_ptr_array_index(f->records, 1), ==, "CREATE A/name9999");
}

/* poll_snapshot_read() as a whole: sorted names, . and .. left out. */
static void test_snapshot(Fixture *f, gconstpointer data) {
        _cleanup_close_ int fd = open_dir(f, "A");
        PollSnapshot s = {};
        PollIo io = {};

        op(f, "touch A/b");
        op(f, "mkdir A/a");
        op(f, "write A/b");
        g_assert_cmpint(poll_snapshot_read(fd, &io, &s), ==, 0);
        g_assert_cmpuint(poll_snapshot_size(&s), ==, 2);
        g_assert_cmpstr(poll_snapshot_entry(&s, 0)->name, ==, "a");
        g_assert_true(S_ISDIR(poll_snapshot_entry(&s, 0)->mode));
        g_assert_cmpstr(poll_snapshot_entry(&s, 1)->name, ==, "b");
        g_assert_cmpuint(poll_snapshot_entry(&s, 1)->size, ==, 1);
        g_assert_false(poll_snapshot_entry(&s, 1)->no_stat);
        g_assert_cmpuint(io.opens, ==, 1);
        g_assert_cmpuint(io.getdents, ==, 2);
        g_assert_cmpuint(io.stats, ==, 3);
        poll_snapshot_done(&s);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/poller/changes", Fixture, NULL, NULL, test_changes, NULL);
        g_test_add("/poller/snapshot", Fixture, NULL, setup, test_snapshot, teardown);
        g_test_add("/poller/note", Fixture, NULL, setup, test_note, teardown);
        g_test_add("/poller/note-during-read", Fixture, NULL, setup, test_note_during_read, teardown);
        g_test_add("/poller/report-existing", Fixture, NULL, setup, test_report_existing, teardown);
        g_test_add("/poller/spread", Fixture, NULL, setup, test_spread, teardown);
        g_test_add("/poller/io-bound", Fixture, NULL, setup, test_io_bound, teardown);
        g_test_add("/poller/user-budget", Fixture, NULL, setup, test_user_budget, teardown);
        g_test_add("/poller/user-turns", Fixture, NULL, setup, test_user_turns, teardown);
        g_test_add("/poller/gone", Fixture, NULL, setup, test_gone, teardown);
        g_test_add("/poller/free-from-record", Fixture, NULL, setup, test_free_from_record, teardown);
        g_test_add("/poller/free-from-first-records", Fixture, NULL, setup, test_free_from_first_records, teardown);
        g_test_add("/poller/prime", Fixture, NULL, setup, test_prime, teardown);
        g_test_add("/poller/resumable", Fixture, NULL, setup, test_resumable, teardown);
        return g_test_run();
}
