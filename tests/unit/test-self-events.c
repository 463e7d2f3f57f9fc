/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-self-events - the daemon's own reads of directories, told from anyone's
 *
 * On the kernel's own inotify (the syscall backend), not a fake: what is
 * tested is how the kernel queues, merges and orders the records of the
 * daemon's open, getdents64 and close against another process's. The
 * "daemon" here is the test calling self_events_before()/_did() around its
 * system calls, as tree.c and the poller do; the "user" is the same process
 * reading a directory without saying so. The records are read and checked
 * as events.c does (self_events_read(), _read_done(), _check() with each
 * record's offset).
 *
 * Each case compares what is reported with what the user's own reads give
 * alone, read the same way before the case (the reference), so no list of
 * records is written down here: the daemon's must all be dropped and the
 * user's all kept, in every order the cases play, but one: the window of
 * self_events.h, which /self-events/window shows as documented.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "event_bits.h"
#include "event_decode.h"
#include "self_events.h"
#include "watch_table.h"

#define READS (IN_OPEN | IN_ACCESS | IN_CLOSE_NOWRITE)

typedef struct Rec {
        int wd;
        uint32_t mask;
        char name[256];
} Rec;

typedef struct Fixture {
        Backend *b;
        WatchTable *t;
        SelfEvents *se;
        char *top;           /* the parent: P */
        char *child;         /* P/c */
        GArray *reported;    /* Rec: what the check let through */
        unsigned read_total; /* records read */
} Fixture;

/* A directory the "daemon" has open. */
typedef struct DDir {
        int fd;
        SelfDir sd;
} DDir;

static void setup(Fixture *f, gconstpointer data) {
        g_assert_cmpint(backend_syscall_new(&f->b), ==, 0);
        g_assert_cmpint(watch_table_new(f->b, &f->t), ==, 0);
        g_assert_cmpint(self_events_new(f->t, f->b, &f->se), ==, 0);
        f->top = g_dir_make_tmp("test-self-events-XXXXXX", NULL);
        g_assert_nonnull(f->top);
        f->child = g_build_filename(f->top, "c", NULL);
        g_assert_cmpint(g_mkdir(f->child, 0755), ==, 0);
        f->reported = g_array_new(FALSE, TRUE, sizeof(Rec));
}

static void teardown(Fixture *f, gconstpointer data) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->top);

        self_events_free(f->se);
        watch_table_free(f->t);
        backend_free(f->b);
        g_assert_cmpint(system(cmd), ==, 0);
        g_free(f->top);
        g_free(f->child);
        g_array_unref(f->reported);
}

static void watch(Fixture *f, const char *path, uint32_t mask) {
        Subscription *s;
        struct stat st;
        int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(watch_table_subscribe(f->t, fd, &st, path, NULL, NULL, mask, 0, &s), ==, 0);
        close(fd);
}

/* Reads the kernel until it is empty, as events.c does: what is not the daemon's goes to f->reported. */
static void drain(Fixture *f) {
        static uint8_t buf[64 * 1024];

        for (;;) {
                ssize_t n;
                size_t off = 0;

                self_events_read(f->se);
                n = backend_read(f->b, buf, sizeof(buf));
                self_events_read_done(f->se, n, sizeof(buf));
                if (n == -EAGAIN)
                        return;
                g_assert_cmpint(n, >, 0);
                for (;;) {
                        size_t at = off;
                        RawEvent ev;
                        Rec r = {};

                        if (event_decode(buf, (size_t) n, &off, &ev) <= 0)
                                break;
                        f->read_total++;
                        if (self_events_check(f->se, &ev, at))
                                continue;
                        r.wd = ev.wd;
                        r.mask = ev.mask;
                        if (ev.name)
                                memcpy(r.name, ev.name, MIN(ev.name_len, sizeof(r.name) - 1));
                        g_array_append_val(f->reported, r);
                }
        }
}

/* What drain() reported since the last call, taken. */
static GArray *take(Fixture *f) {
        GArray *a = f->reported;

        f->reported = g_array_new(FALSE, TRUE, sizeof(Rec));
        return a;
}

static void assert_same(GArray *got, GArray *want) {
        GString *s = g_string_new(NULL);
        bool same = got->len == want->len;

        for (guint i = 0; same && i < got->len; i++) {
                Rec *a = &g_array_index(got, Rec, i), *b = &g_array_index(want, Rec, i);

                same = a->wd == b->wd && a->mask == b->mask && strcmp(a->name, b->name) == 0;
        }
        if (same) {
                g_string_free(s, TRUE);
                return;
        }
        g_string_append(s, "got:");
        for (guint i = 0; i < got->len; i++) {
                Rec *a = &g_array_index(got, Rec, i);
                g_string_append_printf(s, " (%d %#x '%s')", a->wd, a->mask, a->name);
        }
        g_string_append(s, "; want:");
        for (guint i = 0; i < want->len; i++) {
                Rec *a = &g_array_index(want, Rec, i);
                g_string_append_printf(s, " (%d %#x '%s')", a->wd, a->mask, a->name);
        }
        g_error("%s", s->str);
}

/* ---- the daemon's reads, told ---- */

static void d_open(Fixture *f, DDir *d, const char *path) {
        g_autofree char *parent = g_path_get_dirname(path);
        struct stat st, pst;

        g_assert_cmpint(stat(parent, &pst), ==, 0);
        self_events_before(f->se);
        d->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(d->fd, >=, 0);
        g_assert_cmpint(fstat(d->fd, &st), ==, 0);
        self_events_root(f->se, &d->sd, d->fd, st.st_dev, st.st_ino, path);
        /* Looked up only when keeping account (not in /self-events/disabled). */
        if (d->sd.has_parent)
                g_assert_true(d->sd.pdev == pst.st_dev && d->sd.pino == pst.st_ino);
        self_events_did(f->se, IN_OPEN, &d->sd);
}

/* One getdents64; its return. */
static long d_getdents(Fixture *f, DDir *d) {
        char buf[4096];
        long n;

        self_events_before(f->se);
        n = getdents64(d->fd, buf, sizeof(buf));
        g_assert_cmpint(n, >=, 0);
        self_events_did(f->se, IN_ACCESS, &d->sd);
        return n;
}

static void d_list(Fixture *f, DDir *d) {
        while (d_getdents(f, d) > 0)
                ;
}

static void d_close(Fixture *f, DDir *d) {
        self_events_before(f->se);
        g_assert_cmpint(close(d->fd), ==, 0);
        self_events_did(f->se, IN_CLOSE_NOWRITE, &d->sd);
}

static void d_scan(Fixture *f, const char *path) {
        DDir d;

        d_open(f, &d, path);
        d_list(f, &d);
        d_close(f, &d);
}

/* ---- the user's, not told ---- */

static void u_ls(const char *path) {
        DIR *d = opendir(path);

        g_assert_nonnull(d);
        while (readdir(d))
                ;
        closedir(d);
}

/* The user opens path and closes it, and lists nothing: records the
 * daemon's scan makes too, but not all of them, so that the daemon's
 * taken for the user's would show (the same records, swapped, would not). */
static void u_peek(const char *path) {
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        close(fd);
}

/* What the user's fn(path) gives alone, read as the daemon reads. */
static GArray *reference(Fixture *f, void (*fn)(const char *), const char *path) {
        drain(f);
        g_array_set_size(take(f), 0);
        fn(path);
        drain(f);
        return take(f);
}

static uint64_t dropped(Fixture *f) {
        SelfEventsStats st;

        self_events_get_stats(f->se, &st);
        return st.dropped;
}

static unsigned pending(Fixture *f) {
        SelfEventsStats st;

        self_events_get_stats(f->se, &st);
        return st.pending;
}

/* The daemon's scan of a directory whose parent is watched too: nothing reported. */
static void test_quiet(Fixture *f, gconstpointer data) {
        g_autoptr(GArray) none = g_array_new(FALSE, TRUE, sizeof(Rec)), got = NULL;

        watch(f, f->top, READS);
        watch(f, f->child, READS);
        d_scan(f, f->child);
        drain(f);
        got = take(f);
        assert_same(got, none);
        /* OPEN, ACCESS x2, CLOSE on each watch: none merged (they alternate). */
        g_assert_cmpuint(f->read_total, ==, 8);
        g_assert_cmpuint(dropped(f), ==, 8);
        g_assert_cmpuint(pending(f), ==, 0);
}

/* A user's ls after the daemon's scan, before the daemon reads: all of it reported. */
static void test_user_after(Fixture *f, gconstpointer data) {
        g_autoptr(GArray) ref = NULL, got = NULL;

        watch(f, f->top, READS);
        watch(f, f->child, READS);
        ref = reference(f, u_ls, f->child);
        g_assert_cmpuint(ref->len, >=, 6);
        d_scan(f, f->child);
        u_ls(f->child);
        drain(f);
        got = take(f);
        assert_same(got, ref);
        g_assert_cmpuint(pending(f), ==, 0);
}

/*
 * A user's open and close before the daemon's scan, not read yet when the
 * daemon scans (a daemon behind its queue): the user's records are
 * identical to some the daemon expects and come first, but were queued
 * before the daemon's calls (FIONREAD): all reported, the daemon's all
 * dropped.
 */
static void test_user_before(Fixture *f, gconstpointer data) {
        g_autoptr(GArray) ref = NULL, got = NULL;

        watch(f, f->top, READS);
        watch(f, f->child, READS);
        ref = reference(f, u_peek, f->child);
        g_assert_cmpuint(ref->len, ==, 4);
        u_peek(f->child);
        d_scan(f, f->child);
        drain(f);
        got = take(f);
        assert_same(got, ref);
        g_assert_cmpuint(pending(f), ==, 0);
}

/*
 * Only the directory itself is watched (a tree's root): the daemon's two
 * getdents64 give one IN_ACCESS (merged), so one expectation is never met;
 * the daemon's close, met next, retires it, and the user's ls right after
 * is reported whole.
 */
static void test_merged(Fixture *f, gconstpointer data) {
        g_autoptr(GArray) ref = NULL, got = NULL;

        watch(f, f->child, READS);
        ref = reference(f, u_ls, f->child);
        d_scan(f, f->child);
        u_ls(f->child);
        drain(f);
        got = take(f);
        assert_same(got, ref);
        g_assert_cmpuint(dropped(f), ==, 3); /* OPEN, ACCESS (two merged), CLOSE */
        g_assert_cmpuint(pending(f), ==, 0);
}

/*
 * The daemon's listing read before its close, the queue read empty, then
 * the user's ls, then the daemon's close: the expectation left by the
 * merge is forgotten at the empty read, so the user's ACCESS is reported.
 */
static void test_drained(Fixture *f, gconstpointer data) {
        g_autoptr(GArray) ref = NULL, got = NULL;
        DDir d;

        watch(f, f->child, READS);
        ref = reference(f, u_ls, f->child);
        d_open(f, &d, f->child);
        d_list(f, &d);
        drain(f);
        g_assert_cmpuint(pending(f), ==, 0);
        u_ls(f->child);
        d_close(f, &d);
        drain(f);
        got = take(f);
        assert_same(got, ref);
}

/*
 * Another record between the daemon's two getdents64 (a file created in
 * the parent): the daemon's ACCESS records are not merged, both are its
 * own, both dropped; the creation is reported.
 */
static void test_interleaved(Fixture *f, gconstpointer data) {
        g_autoptr(GArray) got = NULL;
        g_autofree char *x = g_build_filename(f->top, "x", NULL);
        Rec *r;
        DDir d;

        watch(f, f->top, IN_CREATE);
        watch(f, f->child, READS);
        d_open(f, &d, f->child);
        g_assert_cmpint(d_getdents(f, &d), >, 0);
        g_assert_cmpint(close(open(x, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)), ==, 0);
        g_assert_cmpint(d_getdents(f, &d), ==, 0);
        d_close(f, &d);
        drain(f);
        got = take(f);
        g_assert_cmpuint(got->len, >=, 1);
        r = &g_array_index(got, Rec, 0);
        g_assert_cmpuint(r->mask, ==, IN_CREATE);
        g_assert_cmpstr(r->name, ==, "x");
        for (guint i = 1; i < got->len; i++)
                g_assert_false(g_array_index(got, Rec, i).mask & READS); /* the rest: x's file events */
        g_assert_cmpuint(dropped(f), ==, 4);                             /* OPEN, ACCESS, ACCESS, CLOSE */
        g_assert_cmpuint(pending(f), ==, 0);
}

/*
 * The window (self_events.h): a user's getdents64 of the same directory
 * right after the daemon's, nothing in between, is merged by the kernel
 * into the daemon's record, and goes with it. The user's open (read
 * before) and close (after the daemon's records were read) are reported.
 */
static void test_window(Fixture *f, gconstpointer data) {
        g_autoptr(GArray) before = NULL, during = NULL, after = NULL;
        char buf[4096];
        int ufd;
        DDir d;

        watch(f, f->child, READS);
        ufd = open(f->child, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(ufd, >=, 0);
        drain(f);
        before = take(f);
        g_assert_cmpuint(before->len, ==, 1);
        g_assert_cmpuint(g_array_index(before, Rec, 0).mask, ==, IN_OPEN | IN_ISDIR);

        d_open(f, &d, f->child);
        g_assert_cmpint(d_getdents(f, &d), >, 0);
        g_assert_cmpint(getdents64(ufd, buf, sizeof(buf)), >, 0); /* the user's, merged */
        g_assert_cmpint(d_getdents(f, &d), ==, 0);
        d_close(f, &d);
        drain(f);
        during = take(f);
        g_assert_cmpuint(during->len, ==, 0);

        close(ufd);
        drain(f);
        after = take(f);
        g_assert_cmpuint(after->len, ==, 1);
        g_assert_cmpuint(g_array_index(after, Rec, 0).mask, ==, IN_CLOSE_NOWRITE | IN_ISDIR);
}

/* An overflow may have taken the daemon's records: what was noted before its read is forgotten. */
static void test_overflow(Fixture *f, gconstpointer data) {
        RawEvent ov = { .wd = -1, .mask = IN_Q_OVERFLOW };
        DDir d;

        watch(f, f->child, READS);
        d_open(f, &d, f->child);
        g_assert_cmpuint(pending(f), ==, 1);
        self_events_read(f->se);
        g_assert_false(self_events_check(f->se, &ov, 0));
        g_assert_cmpuint(pending(f), ==, 0);
        d_close(f, &d);
        drain(f);
}

/* Off (the device leaves the daemon's events out): nothing noted, nothing dropped. */
static void test_disabled(Fixture *f, gconstpointer data) {
        g_autoptr(GArray) got = NULL;

        watch(f, f->child, READS);
        self_events_set_enabled(f->se, false);
        d_scan(f, f->child);
        g_assert_cmpuint(pending(f), ==, 0);
        drain(f);
        got = take(f);
        g_assert_cmpuint(got->len, ==, 3);
        g_assert_cmpuint(dropped(f), ==, 0);
}

/* Only what a watch's kernel mask asks for is noted: a mask without them notes nothing. */
static void test_mask(Fixture *f, gconstpointer data) {
        watch(f, f->top, IN_CREATE);
        watch(f, f->child, IN_OPEN);
        d_scan(f, f->child);
        g_assert_cmpuint(pending(f), ==, 1);
        drain(f);
        g_assert_cmpuint(dropped(f), ==, 1);
        g_assert_cmpuint(pending(f), ==, 0);
}

/* Past SELF_EVENTS_MAX the oldest notes go, and their records are reported: nothing of anyone's lost. */
static void test_bounded(Fixture *f, gconstpointer data) {
        SelfDir sd = {};
        struct stat st;

        watch(f, f->child, READS);
        g_assert_cmpint(stat(f->child, &st), ==, 0);
        sd.dev = st.st_dev;
        sd.ino = st.st_ino;
        for (unsigned i = 0; i < SELF_EVENTS_MAX + 10; i++)
                self_events_did(f->se, IN_ACCESS, &sd);
        g_assert_cmpuint(pending(f), ==, SELF_EVENTS_MAX);
        self_events_set_enabled(f->se, false);
        g_assert_cmpuint(pending(f), ==, 0);
}

/*
 * A worker's reads, announced, then ended (unannounced): their records are
 * dropped as the daemon's own, and once they are all read the announcement
 * goes at the next read, though no read found the queue empty (EAGAIN): the
 * loop makes none after a short read. Before, announcements waited for an
 * EAGAIN (and none is made while nothing is queued), and a RECURSIVE walk
 * of 10,001 directories kept ~60,000 of them (4 MB) until it ended.
 */
static void test_announced_ended(Fixture *f, gconstpointer data) {
        static uint8_t buf[64 * 1024];
        SelfEventsStats st;
        size_t off = 0;
        ssize_t n;

        watch(f, f->child, READS);
        self_events_announce(f->se, 1, -1, NULL, 0, /* any_name= */ false, 1, 65536, 1);
        u_ls(f->child);
        self_events_unannounce(f->se, 1);
        self_events_get_stats(f->se, &st);
        g_assert_cmpuint(st.announced, ==, 1);

        /* One read, as the loop makes it: short, so no read after it. */
        self_events_read(f->se);
        n = backend_read(f->b, buf, sizeof(buf));
        self_events_read_done(f->se, n, sizeof(buf));
        g_assert_cmpint(n, >, 0);
        for (;;) {
                size_t at = off;
                RawEvent ev;

                if (event_decode(buf, (size_t) n, &off, &ev) <= 0)
                        break;
                g_assert_true(self_events_check(f->se, &ev, at));
        }
        self_events_read(f->se);
        self_events_get_stats(f->se, &st);
        g_assert_cmpuint(st.announced, ==, 0);

        /* A job whose reads made no record (no watch asks for opens and
         * reads): nothing queued when it ends, so nothing to wait for. */
        self_events_announce(f->se, 2, -1, NULL, 0, /* any_name= */ false, 1, 65536, 1);
        self_events_unannounce(f->se, 2);
        self_events_get_stats(f->se, &st);
        g_assert_cmpuint(st.announced, ==, 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/self-events/quiet", Fixture, NULL, setup, test_quiet, teardown);
        g_test_add("/self-events/user-after", Fixture, NULL, setup, test_user_after, teardown);
        g_test_add("/self-events/user-before", Fixture, NULL, setup, test_user_before, teardown);
        g_test_add("/self-events/merged", Fixture, NULL, setup, test_merged, teardown);
        g_test_add("/self-events/drained", Fixture, NULL, setup, test_drained, teardown);
        g_test_add("/self-events/interleaved", Fixture, NULL, setup, test_interleaved, teardown);
        g_test_add("/self-events/window", Fixture, NULL, setup, test_window, teardown);
        g_test_add("/self-events/overflow", Fixture, NULL, setup, test_overflow, teardown);
        g_test_add("/self-events/disabled", Fixture, NULL, setup, test_disabled, teardown);
        g_test_add("/self-events/mask", Fixture, NULL, setup, test_mask, teardown);
        g_test_add("/self-events/bounded", Fixture, NULL, setup, test_bounded, teardown);
        g_test_add("/self-events/announced-ended", Fixture, NULL, setup, test_announced_ended, teardown);
        return g_test_run();
}
