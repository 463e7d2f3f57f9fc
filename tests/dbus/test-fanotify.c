/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-fanotify - RECURSIVE subscriptions served by a fanotify mark (issue 29)
 *
 * A real watchd (syscall backend) with its real helper (watchd-fanotify, as
 * root), on two file systems of the test's own: an ext4 image on a loop
 * device and a tmpfs. Needs root (mounts, the
 * helper's CAP_SYS_ADMIN); skipped otherwise, or where a loop device cannot
 * be had.
 *
 * The cases where the file system matters (what is served, the records, a
 * directory looked up by handle) run on both; the rest on ext4, the
 * others' behaviour being the daemon's, not the file system's.
 *
 * What is checked: that fanotify serves (ListWatches' FANOTIFY, one inotify
 * watch and one mark however big the tree); the records of a tree (paths
 * through renames in and out and inside, a rename as one record, a
 * directory moved in followed whole); mkdir -p 20 deep raced by a file at the
 * bottom, each entry reported exactly once; a nobody client told no name it
 * could not list, and told again when a chmod lets it; watchd's own doings
 * (its durable journal on the same file system) never reported; a queue
 * overflow as Overflow; the root's own events from the mark, each once, its
 * inotify watch asking for nothing the mark reports (else every event in
 * the root was read twice), also when a subscription on inotify widens it;
 * nested and shared subscriptions, the mark going with
 * the last; the root's deletion; ONESHOT; where inotify serves instead (a
 * mount below the root, no helper), and tree_backend = fanotify without a
 * helper stopping watchd at start.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdbool.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watchd-api.h"
#include "wt-fixture.h"

#define TIMEOUT_MS 30000
#define ALL        0x7ffu

typedef struct Fixture {
        WtBus *bus;
        WtDaemon *daemon;
        GSubprocess *helper;
        char *sock; /* the helper's socket */
        char *mnt;  /* the file system under test, mounted here */
        char *root; /* mnt/w: the test's files */
        GDBusConnection *conn;
        WatchdInotify *proxy;
        WtCollector a;
        bool ok; /* set up: else the case was skipped */
} Fixture;

static bool run(const char *const *argv) {
        g_autoptr(GError) error = NULL;
        int status = -1;

        return g_spawn_sync(NULL, (char **) argv, NULL,
                            G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                            NULL, NULL, &status, &error) &&
                g_spawn_check_wait_status(status, NULL);
}

/* Mounts the file system named by data ("ext4": a loop image; "tmpfs") at f->mnt. */
static bool mount_fs(Fixture *f, const char *kind) {
        f->mnt = g_build_filename(f->bus->dir, "mnt", NULL);
        g_assert_cmpint(g_mkdir(f->mnt, 0755), ==, 0);
        if (strcmp(kind, "tmpfs") == 0)
                return mount("test-fanotify", f->mnt, "tmpfs", 0, "size=64m,mode=0755") >= 0;
        {
                g_autofree char *img = g_build_filename(f->bus->dir, "ext4.img", NULL);
                const char *mkfs[] = { "mkfs.ext4", "-q", "-F", img, "64M", NULL };
                const char *mnt[] = { "mount", "-o", "loop", img, f->mnt, NULL };

                return run(mkfs) && run(mnt);
        }
}

static void start_helper(Fixture *f) {
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDERR_SILENCE);
        g_autoptr(GError) error = NULL;

        f->sock = g_build_filename(f->bus->dir, "fanotify.sock", NULL);
        g_subprocess_launcher_set_child_setup(l, wt_child_die_with_parent, NULL, NULL);
        f->helper = g_subprocess_launcher_spawn(l, &error, WATCHD_FANOTIFY, "--listen", f->sock, NULL);
        g_assert_no_error(error);
        /* Its socket appears once it takes connections (a generous bound: a loaded machine). */
        for (int i = 0; i < 3000 && !g_file_test(f->sock, G_FILE_TEST_EXISTS); i++)
                g_usleep(10000);
        g_assert_true(g_file_test(f->sock, G_FILE_TEST_EXISTS));
}

/* watchd on f->bus with the helper, tree_backend = fanotify, and extra config. */
static void start_daemon(Fixture *f, const char *extra, const char *const *args) {
        g_autofree char *config = g_strdup_printf("[daemon]\ntree_backend = fanotify\nfanotify_helper = %s\n%s",
                                                  f->sock, extra ? extra : "");

        f->daemon = wt_daemon_start_full(f->bus, config, args);
}

static void connect_client(Fixture *f) {
        f->conn = wt_connect(f->bus);
        f->proxy = wt_proxy(f->conn);
        wt_collector_init(&f->a, f->proxy);
}

static void setup_base(Fixture *f, const char *kind) {
        if (geteuid() != 0) {
                g_test_skip("needs root: mounts of its own, and the helper's CAP_SYS_ADMIN");
                return;
        }
        f->bus = wt_bus_start();
        if (!mount_fs(f, kind)) {
                g_autofree char *why = g_strdup_printf("cannot mount a %s here (no loop device?)", kind);

                g_test_skip(why);
                return;
        }
        f->root = g_build_filename(f->mnt, "w", NULL);
        g_assert_cmpint(g_mkdir(f->root, 0755), ==, 0);
        start_helper(f);
        f->ok = true;
}

static void fixture_setup(Fixture *f, gconstpointer data) {
        setup_base(f, data);
        if (!f->ok)
                return;
        start_daemon(f, NULL, NULL);
        connect_client(f);
}

static void fixture_teardown(Fixture *f, gconstpointer data) {
        if (f->proxy) {
                wt_collector_clear(&f->a);
                g_clear_object(&f->proxy);
                (void) g_dbus_connection_close_sync(f->conn, NULL, NULL);
                g_clear_object(&f->conn);
        }
        if (f->daemon)
                g_assert_cmpint(wt_daemon_stop(g_steal_pointer(&f->daemon)), ==, 0);
        if (f->helper) {
                g_subprocess_send_signal(f->helper, SIGTERM);
                (void) g_subprocess_wait(f->helper, NULL, NULL);
                g_clear_object(&f->helper);
        }
        if (f->mnt) {
                (void) umount2(f->mnt, MNT_DETACH);
                g_rmdir(f->mnt);
        }
        if (f->bus)
                wt_bus_stop(f->bus);
        g_free(f->sock);
        g_free(f->mnt);
        g_free(f->root);
}

static char *at(Fixture *f, const char *rel) {
        return g_build_filename(f->root, rel, NULL);
}

static void mkdir_p(const char *path) {
        g_assert_cmpint(g_mkdir_with_parents(path, 0755), ==, 0);
}

/* A write in place (g_file_set_contents() would rename a new file over it). */
static void append(const char *path) {
        int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, "x", 1), ==, 1);
        g_assert_cmpint(close(fd), ==, 0);
}

static void rename_ok(const char *from, const char *to) {
        g_assert_cmpint(rename(from, to), ==, 0);
}

/* The flags ListWatches shows for id. */
static guint32 listed_flags(WatchdInotify *p, guint32 id) {
        g_autoptr(GVariant) list = NULL;
        g_autoptr(GError) error = NULL;
        GVariantIter it;
        guint32 lid, mask, flags;
        const char *path;

        g_assert_true(watchd_inotify_call_list_watches_sync(p, &list, NULL, &error));
        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(u&suu)", &lid, &path, &mask, &flags))
                if (lid == id)
                        return flags;
        g_error("ListWatches does not list %u", id);
}

/* How many records of the collector have this path and all of mask's bits. */
static guint count_records(WtCollector *c, const char *path, guint32 mask) {
        guint n = 0;

        for (guint i = 0; i < c->records->len; i++) {
                WtRecord *r = wt_collector_record(c, i);

                if (strcmp(r->path, path) == 0 && (r->mask & mask) == mask)
                        n++;
        }
        return n;
}

/* No record whose path contains s. */
static void assert_no_record_with(WtCollector *c, const char *s) {
        for (guint i = 0; i < c->records->len; i++) {
                WtRecord *r = wt_collector_record(c, i);

                if (strstr(r->path, s) || strstr(r->new_path, s))
                        g_error("Unexpected record 0x%x %s -> '%s'", r->mask, r->path, r->new_path);
        }
}

/* Touches root/name and awaits its CREATE: everything the kernel queued before is read. */
static void sentinel(Fixture *f, WtCollector *c, const char *name) {
        g_autofree char *p = at(f, name);

        wt_touch(p);
        (void) wt_await_record(c, p, IN_CREATE, TIMEOUT_MS);
}

/* ---------------------------------------------------------------- served */

static void test_served(Fixture *f, gconstpointer data) {
        g_autofree char *deep = at(f, "a/b/c");
        guint32 id, id2;

        if (!f->ok)
                return;
        /* A tree of 300 directories: one inotify watch (the root), one mark. */
        for (int i = 0; i < 100; i++) {
                g_autofree char *d = g_strdup_printf("%s/t%d/u/v", f->root, i);

                mkdir_p(d);
        }
        mkdir_p(deep);
        id = wt_add_watch(f->proxy, f->root, ALL, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmphex(listed_flags(f->proxy, id), ==, WATCHD_FLAG_RECURSIVE | WATCHD_FLAG_FANOTIFY);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 1);
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_marks"), ==, 1);
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_subscriptions"), ==, 1);
        g_assert_cmpuint(wt_stat(f->proxy, "own_watches"), ==, 1);
        /* Not RECURSIVE: inotify, as always. */
        id2 = wt_add_watch(f->proxy, deep, ALL, 0, NULL);
        g_assert_cmphex(listed_flags(f->proxy, id2), ==, 0);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 2);
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_marks"), ==, 1);
}

/* ---------------------------------------------------------------- records */

static void test_records(Fixture *f, gconstpointer data) {
        g_autofree char *b = at(f, "a/b"), *file = at(f, "a/b/f"), *moved = at(f, "a/g");
        g_autofree char *c = at(f, "a/b/c"), *bb = at(f, "a/bb"), *x = at(f, "a/bb/c/x");
        g_autofree char *out = g_build_filename(f->mnt, "out", NULL), *outy = g_build_filename(f->mnt, "out/c/y", NULL);
        g_autofree char *src = g_build_filename(f->mnt, "src/deep/er", NULL);
        g_autofree char *srctop = g_build_filename(f->mnt, "src", NULL), *in = at(f, "in");
        g_autofree char *z = g_build_filename(f->mnt, "src/deep/er/z", NULL), *inz = at(f, "in/deep/er/z");
        g_autofree char *inz2 = at(f, "in/deep/er/z2");
        WtRecord *r;
        guint32 id;

        if (!f->ok)
                return;
        mkdir_p(b);
        mkdir_p(src);
        wt_touch(z);
        id = wt_add_watch(f->proxy, f->root, ALL, WATCHD_FLAG_RECURSIVE, NULL);

        wt_touch(file);
        r = wt_await_record(&f->a, file, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(r->id, ==, id);
        append(file);
        (void) wt_await_record(&f->a, file, IN_MODIFY, TIMEOUT_MS);
        (void) wt_await_record(&f->a, file, IN_CLOSE_WRITE, TIMEOUT_MS);

        /* A rename inside the tree: one record, both paths. */
        rename_ok(file, moved);
        r = wt_await_record(&f->a, file, IN_MOVED_FROM | IN_MOVED_TO, TIMEOUT_MS);
        g_assert_cmpstr(r->new_path, ==, moved);

        /* A directory renamed: what happens below it is under its new name. */
        mkdir_p(c);
        rename_ok(b, bb);
        r = wt_await_record(&f->a, b, IN_MOVED_FROM | IN_MOVED_TO | IN_ISDIR, TIMEOUT_MS);
        g_assert_cmpstr(r->new_path, ==, bb);
        wt_touch(x);
        (void) wt_await_record(&f->a, x, IN_CREATE, TIMEOUT_MS);

        /* Moved out: a lone MOVED_FROM, and nothing from it afterwards. */
        rename_ok(bb, out);
        r = wt_await_record(&f->a, bb, IN_MOVED_FROM | IN_ISDIR, TIMEOUT_MS);
        g_assert_cmpstr(r->new_path, ==, "");
        g_assert_false(r->mask & IN_MOVED_TO);
        wt_touch(outy);

        /* Moved in, with its tree: followed at once, nothing walked. */
        rename_ok(srctop, in);
        r = wt_await_record(&f->a, in, IN_MOVED_TO | IN_ISDIR, TIMEOUT_MS);
        g_assert_false(r->mask & IN_MOVED_FROM);
        wt_touch(inz2);
        (void) wt_await_record(&f->a, inz2, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpint(unlink(inz), ==, 0);
        (void) wt_await_record(&f->a, inz, IN_DELETE, TIMEOUT_MS);

        sentinel(f, &f->a, "done");
        assert_no_record_with(&f->a, "/out");
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 1);
}

/* ---------------------------------------------------------------- looked up late */

/* n files created in root/j, each event 120 bytes (ext4; 128 on tmpfs):
 * 546 of them fill one read of watchd's (64 KiB of events), 512 on tmpfs. */
static void junk(Fixture *f, int n) {
        for (int i = 0; i < n; i++) {
                g_autofree char *p = g_strdup_printf("%s/j/junk-file-with-a-longish-name-%06d", f->root, i);

                wt_touch(p);
        }
}

/* The recursive subscription of the looked-up tests, then watchd stopped: its pid. */
static pid_t watch_and_stop(Fixture *f) {
        pid_t pid;

        (void) wt_add_watch(f->proxy, f->root, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO,
                            WATCHD_FLAG_RECURSIVE, NULL);
        pid = wt_process_pid(f->daemon->process);
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        return pid;
}

/* r/a renamed r/A, a file made in r/A/b, n_junk files, then r/A moved out of the tree (to out/A). */
static void move_out_after(Fixture *f, int n_junk) {
        g_autofree char *ra = at(f, "r/a"), *rA = at(f, "r/A"), *x = at(f, "r/A/b/x");
        g_autofree char *outA = g_build_filename(f->mnt, "out/A", NULL);

        rename_ok(ra, rA);
        wt_touch(x);
        junk(f, n_junk);
        rename_ok(rA, outA);
}

/*
 * Directories that were there before the subscription are looked up by
 * handle when an event in them is first read: with watchd stopped, so that
 * everything is read at once, a directory renamed and then moved out, and
 * a tree deleted, after the events in them. Each event is reported where it
 * happened, not where the directory is (or is not) by the time it is read.
 * With n_junk files created between an event and the move (the deletion)
 * that follows it, the move is in a later read than the event: it must be
 * read ahead when the directory is looked up (n_junk 1,500: about 180 KB of
 * events each time, nearly three reads, well below the 1 MiB read ahead).
 */
static void looked_up_late(Fixture *f, int n_junk) {
        g_autofree char *a = at(f, "r/a/b"), *ra = at(f, "r/a"), *rA = at(f, "r/A"), *x = at(f, "r/A/b/x");
        g_autofree char *out = g_build_filename(f->mnt, "out", NULL), *outA = g_build_filename(f->mnt, "out/A", NULL);
        g_autofree char *del = at(f, "del"), *dy = at(f, "del/x/y"), *dx = at(f, "del/x"), *df = at(f, "del/x/y/f");
        g_autofree char *j = at(f, "j");
        pid_t pid;
        WtRecord *r;

        if (!f->ok)
                return;
        mkdir_p(a);
        mkdir_p(out);
        mkdir_p(dy);
        mkdir_p(j);
        pid = watch_and_stop(f);
        move_out_after(f, n_junk);
        wt_touch(df);
        junk(f, n_junk);
        wt_remove_tree(del);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);

        r = wt_await_record(&f->a, ra, IN_MOVED_FROM | IN_MOVED_TO | IN_ISDIR, TIMEOUT_MS);
        g_assert_cmpstr(r->new_path, ==, rA);
        (void) wt_await_record(&f->a, x, IN_CREATE, TIMEOUT_MS);
        r = wt_await_record(&f->a, rA, IN_MOVED_FROM | IN_ISDIR, TIMEOUT_MS);
        g_assert_cmpstr(r->new_path, ==, "");
        (void) wt_await_record(&f->a, df, IN_CREATE, TIMEOUT_MS);
        (void) wt_await_record(&f->a, df, IN_DELETE, TIMEOUT_MS);
        (void) wt_await_record(&f->a, dy, IN_DELETE | IN_ISDIR, TIMEOUT_MS);
        (void) wt_await_record(&f->a, dx, IN_DELETE | IN_ISDIR, TIMEOUT_MS);
        (void) wt_await_record(&f->a, del, IN_DELETE | IN_ISDIR, TIMEOUT_MS);
        sentinel(f, &f->a, "done");
        assert_no_record_with(&f->a, "/out");
}

static void test_looked_up_late(Fixture *f, gconstpointer data) {
        looked_up_late(f, 0);
}

static void test_looked_up_past_read(Fixture *f, gconstpointer data) {
        looked_up_late(f, 1500);
}

/*
 * The same, past the read ahead (1 MiB, some 8,700 of these events): a
 * directory renamed and moved out of the tree after an event in it, with
 * 13,000 events between (the whole queue stays below fanotify's 16,384). The
 * lookup made for the event cannot read as far as the move, and finds the
 * directory where it is now (outside the tree). The event is reported
 * where it happened, or the subscription is told with Overflow when the
 * move is read: never lost in silence.
 */
static void test_looked_up_past_read_ahead(Fixture *f, gconstpointer data) {
        g_autofree char *a = at(f, "r/a/b"), *x = at(f, "r/A/b/x"), *j = at(f, "j");
        g_autofree char *out = g_build_filename(f->mnt, "out", NULL);
        pid_t pid;

        if (!f->ok)
                return;
        mkdir_p(a);
        mkdir_p(out);
        mkdir_p(j);
        pid = watch_and_stop(f);
        move_out_after(f, 13000);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        sentinel(f, &f->a, "done");
        assert_no_record_with(&f->a, "/out");
        if (f->a.n_overflows > 0) {
                g_test_message("past the read ahead: told with Overflow");
                return;
        }
        if (count_records(&f->a, x, IN_CREATE) != 1)
                g_error("'%s' reported created %u times, and no Overflow: lost in silence", x,
                        count_records(&f->a, x, IN_CREATE));
}

/*
 * Past the read ahead, the directories looked up are kept to be checked
 * against the renames and deletions read later (daemon/fanotify.c,
 * Fanotify.unsure), 4,096 at most (UNSURE_MAX); past that, any directory's
 * rename or deletion read before the queue is next empty gives Overflow
 * (unsure_all). Here 4,501 directories are looked up past the read ahead,
 * and one more, w/v/b (with w/v), is moved out of the tree after an event
 * in it: looked up after the others, when the set is given up
 * (past-unsure-max: never kept), or before them (before-unsure-max: kept,
 * then given up with the rest at the 4,097th). Either way the event is
 * reported where it happened or the subscription is told with Overflow:
 * never lost in silence.
 *
 * The sizes. A file created is one event: 24 bytes, the directory's record
 * (20 + its handle + the name and a NUL, to 4 bytes) and the file's own
 * (20 + its handle); handles are 8 bytes on ext4, 12 on tmpfs. So a file
 * "x" is 84 bytes (92 on tmpfs), a name of 200 characters 284 (292).
 * watchd reads 64 KiB at a time, and a lookup reads up to 16 reads ahead
 * of the one being handled. With watchd stopped, queued in this order:
 *  - w/m/NNNN/x in each of 4,500 directories made before the subscription:
 *    the first event in a directory not met yet is what makes watchd look
 *    it up (w/m too, with the first): 4,501 lookups, 378 KB of events
 *    (414 KB on tmpfs);
 *  - w/v/b/x, before or after those: b, v (now out/v) and out looked up;
 *  - 4,600 files with names of 200 characters in w/j: 1,306,400 bytes at
 *    least, more than the 17 reads (1,114,112 bytes) of the read holding
 *    the last event above and the 16 read ahead with it. So each lookup
 *    above is made with the read ahead full (past it: kept, or the cap),
 *    and none reads as far as
 *  - w/v moved to out/v.
 * (Measured, past-unsure-max with the cap not consulted: the move is read
 * ahead of w/v/b's lookup with up to 3,733 files (ext4), 3,736 (tmpfs),
 * not with one more.)
 * 9,102 events in all, and the sentinel: fanotify's queue of 16,384 does
 * not overflow (that is /fanotify/ext4/overflow), as the test checks.
 */
#define UNSURE_DIRS   4500
#define UNSURE_JUNK   4600
#define LONG_NAME_LEN 200

/* n files created in root/j, each name LONG_NAME_LEN characters long. */
static void junk_long(Fixture *f, int n) {
        for (int i = 0; i < n; i++) {
                g_autofree char *p = g_strdup_printf("%s/j/%0*d", f->root, LONG_NAME_LEN, i);

                wt_touch(p);
        }
}

static void looked_up_past_unsure_max(Fixture *f, bool victim_first) {
        g_autofree char *b = at(f, "v/b"), *v = at(f, "v"), *x = at(f, "v/b/x"), *j = at(f, "j");
        g_autofree char *out = g_build_filename(f->mnt, "out", NULL), *outv = g_build_filename(f->mnt, "out/v", NULL);
        g_autofree char *log = NULL;
        pid_t pid;

        if (!f->ok)
                return;
        mkdir_p(b);
        mkdir_p(out);
        mkdir_p(j);
        for (int i = 0; i < UNSURE_DIRS; i++) {
                g_autofree char *d = g_strdup_printf("%s/m/%04d", f->root, i);

                mkdir_p(d);
        }
        pid = watch_and_stop(f);
        if (victim_first)
                wt_touch(x);
        for (int i = 0; i < UNSURE_DIRS; i++) {
                g_autofree char *p = g_strdup_printf("%s/m/%04d/x", f->root, i);

                wt_touch(p);
        }
        if (!victim_first)
                wt_touch(x);
        junk_long(f, UNSURE_JUNK);
        rename_ok(v, outv);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        sentinel(f, &f->a, "done");

        assert_no_record_with(&f->a, "/out");
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_overflows"), ==, 0);
        /* More than UNSURE_MAX looked up (that they were past the read ahead, the sizes above say). */
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_lookups"), >, 4096);
        if (f->a.n_overflows > 0) {
                log = wt_daemon_log(f->daemon);
                g_assert_nonnull(strstr(log, "looked up past the fanotify read ahead"));
                g_test_message("past UNSURE_MAX: told with Overflow");
                return;
        }
        if (count_records(&f->a, x, IN_CREATE) != 1)
                g_error("'%s' reported created %u times, and no Overflow: lost in silence", x,
                        count_records(&f->a, x, IN_CREATE));
}

static void test_looked_up_past_unsure_max(Fixture *f, gconstpointer data) {
        looked_up_past_unsure_max(f, false);
}

static void test_looked_up_before_unsure_max(Fixture *f, gconstpointer data) {
        looked_up_past_unsure_max(f, true);
}

/* ---------------------------------------------------------------- mkdir -p */

/* 20 times mkdir -p 20 deep and a file at the bottom, as fast as can be:
 * every directory and the file reported created, each exactly once. */
static void test_mkdir_p(Fixture *f, gconstpointer data) {
        if (!f->ok)
                return;
        (void) wt_add_watch(f->proxy, f->root, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        for (int n = 0; n < 20; n++) {
                g_autoptr(GString) p = g_string_new(f->root);
                g_autofree char *file = NULL;

                g_string_append_printf(p, "/r%d", n);
                for (int d = 1; d < 20; d++)
                        g_string_append_printf(p, "/d%d", d);
                mkdir_p(p->str);
                file = g_build_filename(p->str, "f", NULL);
                wt_touch(file);
        }
        sentinel(f, &f->a, "done");
        for (int n = 0; n < 20; n++) {
                g_autoptr(GString) p = g_string_new(f->root);

                g_string_append_printf(p, "/r%d", n);
                g_assert_cmpuint(count_records(&f->a, p->str, IN_CREATE | IN_ISDIR), ==, 1);
                for (int d = 1; d < 20; d++) {
                        g_string_append_printf(p, "/d%d", d);
                        g_assert_cmpuint(count_records(&f->a, p->str, IN_CREATE | IN_ISDIR), ==, 1);
                }
                g_string_append(p, "/f");
                g_assert_cmpuint(count_records(&f->a, p->str, IN_CREATE), ==, 1);
        }
        /* Nothing else: 20 x (20 directories and a file), and the sentinel. */
        g_assert_cmpuint(f->a.records->len, ==, 20 * 21 + 1);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);
}

/* ---------------------------------------------------------------- a nobody client */

typedef struct Nobody {
        GSubprocess *process;
        GOutputStream *in;
        GDataInputStream *out;
} Nobody;

static Nobody *nobody_start(Fixture *f) {
        g_autoptr(GSubprocessLauncher)
                l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE);
        g_autoptr(GError) error = NULL;
        g_autofree char *self = g_file_read_link("/proc/self/exe", &error), *prog = NULL;
        Nobody *n;

        g_assert_no_error(error);
        prog = wt_launcher_as_nobody(l, f->bus, self, &error);
        if (!prog) {
                g_autofree char *why = g_strdup_printf("nobody cannot run %s (%s)", self, error->message);

                g_test_skip(why);
                return NULL;
        }
        n = g_new0(Nobody, 1);
        n->process = g_subprocess_launcher_spawn(l, &error, prog, "--nobody", f->bus->address, NULL);
        g_assert_no_error(error);
        n->in = g_subprocess_get_stdin_pipe(n->process);
        n->out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(n->process));
        return n;
}

static char *nobody_ask(Nobody *n, const char *cmd) {
        g_autoptr(GError) error = NULL;
        char *line;

        g_assert_true(g_output_stream_write_all(n->in, cmd, strlen(cmd), NULL, NULL, &error) &&
                      g_output_stream_write_all(n->in, "\n", 1, NULL, NULL, &error) &&
                      g_output_stream_flush(n->in, NULL, &error));
        g_assert_no_error(error);
        line = g_data_input_stream_read_line(n->out, NULL, NULL, &error);
        g_assert_no_error(error);
        if (!line)
                g_error("The nobody client exited early");
        return line;
}

/* Awaits nobody's record of path; returns every record it got before, one a line. */
static char *nobody_await(Nobody *n, const char *path) {
        g_autofree char *cmd = g_strconcat("await ", path, NULL);
        g_autoptr(GString) seen = g_string_new(NULL);
        char *line = nobody_ask(n, cmd);

        while (strcmp(line, "end") != 0) {
                if (strcmp(line, "timeout") == 0)
                        g_error("nobody's record of %s did not come; it got: %s", path, seen->str);
                g_string_append_printf(seen, "%s\n", line);
                g_free(line);
                line = g_data_input_stream_read_line(n->out, NULL, NULL, NULL);
                g_assert_nonnull(line);
        }
        g_free(line);
        return g_string_free(g_steal_pointer(&seen), FALSE);
}

static void nobody_stop(Nobody *n) {
        g_object_unref(n->out);
        g_output_stream_close(n->in, NULL, NULL);
        (void) g_subprocess_wait(n->process, NULL, NULL);
        g_object_unref(n->process);
        g_free(n);
}

static void nobody_on_events(WatchdInotify *p, GVariant *events, gpointer userdata) {
        GPtrArray *lines = userdata;
        GVariantIter it;
        guint32 id, mask, cookie;
        const char *path, *new_path;

        g_variant_iter_init(&it, events);
        while (g_variant_iter_next(&it, "(uuu&s&s)", &id, &mask, &cookie, &path, &new_path))
                g_ptr_array_add(lines, g_strdup_printf("%s %s", path, new_path));
}

static gboolean has_line_for(gpointer data) {
        void **d = data;
        GPtrArray *lines = d[0];
        const char *path = d[1];

        for (guint i = 0; i < lines->len; i++)
                if (g_str_has_prefix(lines->pdata[i], path) && ((char *) lines->pdata[i])[strlen(path)] == ' ')
                        return TRUE;
        return FALSE;
}

/* The nobody client: "watch PATH" (RECURSIVE, CREATE|MOVED_TO), "await
 * PATH" (the records until that path's, then "end"). */
static int nobody_main(const char *address) {
        g_autoptr(GDBusConnection) c = NULL;
        g_autoptr(WatchdInotify) p = NULL;
        g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
        WtBus bus = { .address = (char *) address };
        char line[8192];
        guint next = 0;

        setvbuf(stdout, NULL, _IOLBF, 0);
        c = wt_connect(&bus);
        p = wt_proxy(c);
        g_signal_connect(p, "events", G_CALLBACK(nobody_on_events), lines);
        while (fgets(line, sizeof(line), stdin)) {
                line[strcspn(line, "\n")] = '\0';
                if (g_str_has_prefix(line, "watch ")) {
                        g_autoptr(GError) error = NULL;
                        guint id;

                        if (watchd_inotify_call_add_watch_sync(p, line + 6, IN_CREATE | IN_MOVED_TO,
                                                               WATCHD_FLAG_RECURSIVE, &id, NULL, &error))
                                printf("ok %u\n", id);
                        else
                                printf("err %s\n", error->message);
                } else if (g_str_has_prefix(line, "await ")) {
                        void *d[2] = { lines, line + 6 };

                        if (!wt_await(has_line_for, d, TIMEOUT_MS)) {
                                printf("timeout\n");
                                continue;
                        }
                        for (; next < lines->len; next++)
                                printf("rec %s\n", (char *) lines->pdata[next]);
                        printf("end\n");
                } else
                        return 2;
        }
        return 0;
}

/* Names a nobody client could not list are never sent to it; after a chmod
 * that lets it, they are; after one that takes it back, not again. */
static void test_permission(Fixture *f, gconstpointer data) {
        g_autofree char *secret = at(f, "secret"), *hidden = at(f, "secret/hidden-name");
        g_autofree char *deeper = at(f, "secret/sub"), *deep_hidden = at(f, "secret/sub/deep-hidden");
        g_autofree char *pub = at(f, "pub"), *pubx = at(f, "pub/x"), *visible = at(f, "secret/now-visible");
        g_autofree char *again = at(f, "secret/hidden-again"), *answer = NULL, *seen = NULL;
        g_autofree char *cmd = g_strconcat("watch ", f->root, NULL);
        g_autofree char *d1 = at(f, "done1"), *d2 = at(f, "done2"), *d3 = at(f, "done3");
        Nobody *n;

        if (!f->ok)
                return;
        mkdir_p(deeper);
        mkdir_p(pub);
        g_assert_cmpint(chmod(secret, 0700), ==, 0);
        n = nobody_start(f);
        if (!n)
                return;
        answer = nobody_ask(n, cmd);
        g_assert_true(g_str_has_prefix(answer, "ok "));

        wt_touch(hidden);
        wt_touch(deep_hidden);
        wt_touch(pubx);
        wt_touch(d1);
        seen = nobody_await(n, d1);
        g_test_message("nobody got:\n%s", seen);
        g_assert_nonnull(strstr(seen, pubx));
        g_assert_null(strstr(seen, "hidden"));
        g_clear_pointer(&seen, g_free);

        /* Opened to all: its names are nobody's too (its mode change is an event). */
        g_assert_cmpint(chmod(secret, 0755), ==, 0);
        wt_touch(visible);
        wt_touch(d2);
        seen = nobody_await(n, d2);
        g_assert_nonnull(strstr(seen, visible));
        g_clear_pointer(&seen, g_free);

        /* Closed again. */
        g_assert_cmpint(chmod(secret, 0700), ==, 0);
        wt_touch(again);
        wt_touch(d3);
        seen = nobody_await(n, d3);
        g_assert_null(strstr(seen, "hidden-again"));
        nobody_stop(n);
}

/* ---------------------------------------------------------------- watchd's own doings */

/* A durable subscription's journal lives on the marked file system, inside
 * a RECURSIVE subscription's tree: what watchd writes there is its own, and
 * never reported (inotify would report every write of it). */
static void test_own_events(Fixture *f, gconstpointer data) {
        g_autofree char *state = NULL, *src = NULL, *journal = NULL, *srcf = NULL;
        g_autoptr(GError) error = NULL;
        const char *args[] = { "--state-dir", NULL, NULL };
        guint64 cursor;

        setup_base(f, data);
        if (!f->ok)
                return;
        state = g_build_filename(f->root, "state", NULL);
        src = at(f, "src");
        mkdir_p(state);
        mkdir_p(src);
        args[1] = state;
        start_daemon(f, NULL, args);
        connect_client(f);

        (void) wt_add_watch(f->proxy, f->root, ALL, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_true(watchd_inotify_call_create_durable_sync(f->proxy, "d", src, IN_CREATE, 0, &journal, &cursor, NULL,
                                                              &error));
        g_assert_no_error(error);
        for (int i = 0; i < 20; i++) {
                g_autofree char *p = g_strdup_printf("%s/f%d", src, i);

                wt_touch(p);
        }
        srcf = g_strdup_printf("%s/f19", src);
        (void) wt_await_record(&f->a, srcf, IN_CLOSE_WRITE, TIMEOUT_MS);
        sentinel(f, &f->a, "done");
        assert_no_record_with(&f->a, "/state");
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_own_events"), >, 0);
        g_assert_true(watchd_inotify_call_remove_durable_sync(f->proxy, "d", NULL, &error));
}

/* ---------------------------------------------------------------- the root's own events */

/* The event bits of watchd's inotify watches, or'ed (/proc/PID/fdinfo). */
static guint32 kernel_masks(Fixture *f) {
        g_autofree char *dir = g_strdup_printf("/proc/%d/fdinfo", (int) wt_process_pid(f->daemon->process));
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        const char *n;
        guint32 m = 0;

        g_assert_nonnull(d);
        while ((n = g_dir_read_name(d))) {
                g_autofree char *p = g_build_filename(dir, n, NULL), *text = NULL;

                if (!g_file_get_contents(p, &text, NULL, NULL))
                        continue;
                for (const char *l = strstr(text, "inotify wd:"); l; l = strstr(l + 1, "inotify wd:")) {
                        const char *mk = strstr(l, " mask:");

                        if (mk)
                                m |= (guint32) strtoul(mk + strlen(" mask:"), NULL, 16);
                }
        }
        return m & IN_ALL_EVENTS;
}

/* The records of id from the from'th on with this path and all of mask's bits. */
static guint count_id(WtCollector *c, guint from, guint32 id, const char *path, guint32 mask) {
        guint n = 0;

        for (guint i = from; i < c->records->len; i++) {
                WtRecord *r = wt_collector_record(c, i);

                if (r->id == id && strcmp(r->path, path) == 0 && (r->mask & mask) == mask)
                        n++;
        }
        return n;
}

/* Awaits a record of id, from the from'th on, with this path and all of mask's bits. */
static void await_id(WtCollector *c, guint from, guint32 id, const char *path, guint32 mask) {
        gint64 end = g_get_monotonic_time() + TIMEOUT_MS * G_GINT64_CONSTANT(1000);

        while (count_id(c, from, id, path, mask) == 0) {
                if (g_get_monotonic_time() >= end)
                        g_error("No record 0x%x %s for subscription %u", mask, path, id);
                (void) wt_await_records(c, c->records->len + 1, 100);
        }
}

/* The root opened and closed, its mode changed, a file made in it, each
 * awaited (for ids[0..n)) before the next, then a sentinel done: each of
 * the root's own events, and the file's close, once for each id. (Not a
 * listing: each getdents() is an IN_ACCESS, merged or not as the reader
 * keeps up.) */
static void root_once(Fixture *f, const guint32 *ids, size_t n, const char *file, const char *done) {
        const guint32 own[] = { IN_OPEN, IN_CLOSE_NOWRITE, IN_ATTRIB };
        guint from = f->a.records->len;
        struct stat st;
        int fd;

        g_assert_cmpint(stat(f->root, &st), ==, 0);
        fd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        for (size_t k = 0; k < n; k++)
                await_id(&f->a, from, ids[k], f->root, IN_OPEN | IN_ISDIR);
        g_assert_cmpint(close(fd), ==, 0);
        for (size_t k = 0; k < n; k++)
                await_id(&f->a, from, ids[k], f->root, IN_CLOSE_NOWRITE | IN_ISDIR);
        g_assert_cmpint(chmod(f->root, (st.st_mode & 07777) ^ 0050), ==, 0);
        for (size_t k = 0; k < n; k++)
                await_id(&f->a, from, ids[k], f->root, IN_ATTRIB | IN_ISDIR);
        wt_touch(file);
        for (size_t k = 0; k < n; k++)
                await_id(&f->a, from, ids[k], file, IN_CLOSE_WRITE);
        wt_touch(done);
        for (size_t k = 0; k < n; k++)
                await_id(&f->a, from, ids[k], done, IN_CLOSE_WRITE);
        for (size_t k = 0; k < n; k++) {
                for (size_t i = 0; i < G_N_ELEMENTS(own); i++)
                        g_assert_cmpuint(count_id(&f->a, from, ids[k], f->root, own[i]), ==, 1);
                g_assert_cmpuint(count_id(&f->a, from, ids[k], file, IN_CLOSE_WRITE), ==, 1);
                g_assert_cmpuint(count_id(&f->a, from, ids[k], file, IN_CREATE), ==, 1);
        }
}

/*
 * The root's own events come from the mark, each once, and its inotify
 * watch asks only for what the mark does not report: not the bits a
 * directory's watch also gets for every entry in it, each of which was read
 * twice before (from the inotify fd and from the group) and woke the loop
 * on the inotify fd. An inotify subscription on the same root widens the
 * watch: still once each, for both.
 */
static void test_root_own(Fixture *f, gconstpointer data) {
        g_autofree char *file = at(f, "file"), *file2 = at(f, "file2"), *done = at(f, "done"), *done2 = at(f, "done2");
        guint32 ids[2];
        gint64 end;

        if (!f->ok)
                return;
        ids[0] = wt_add_watch(f->proxy, f->root, ALL, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmphex(listed_flags(f->proxy, ids[0]), ==, WATCHD_FLAG_RECURSIVE | WATCHD_FLAG_FANOTIFY);
        g_assert_cmphex(kernel_masks(f), ==, IN_DELETE_SELF);
        root_once(f, ids, 1, file, done);

        /* Widened by a subscription inotify serves: nothing twice to either. */
        ids[1] = wt_add_watch(f->proxy, f->root, ALL, 0, NULL);
        g_assert_cmphex(listed_flags(f->proxy, ids[1]), ==, 0);
        g_assert_cmphex(kernel_masks(f), ==, ALL);
        root_once(f, ids, 2, file2, done2);

        /* Narrowed again when it goes. */
        g_assert_true(watchd_inotify_call_remove_watch_sync(f->proxy, ids[1], NULL, NULL));
        end = g_get_monotonic_time() + TIMEOUT_MS * G_GINT64_CONSTANT(1000);
        while (kernel_masks(f) != IN_DELETE_SELF && g_get_monotonic_time() < end)
                g_usleep(10000);
        g_assert_cmphex(kernel_masks(f), ==, IN_DELETE_SELF);
}

/* ---------------------------------------------------------------- overflow */

static void test_overflow(Fixture *f, gconstpointer data) {
        g_autofree char *dir = at(f, "storm"), *after = at(f, "after");
        g_autofree char *log = NULL;
        GSubprocess *p;
        guint32 id;
        guint max = 0;
        char buf[32] = "";
        FILE *m;

        if (!f->ok)
                return;
        m = fopen("/proc/sys/fs/fanotify/max_queued_events", "re");
        if (m) {
                if (fgets(buf, sizeof(buf), m))
                        max = (guint) g_ascii_strtoull(buf, NULL, 10);
                fclose(m);
        }
        if (max == 0 || max > 65536) {
                g_test_skip("fs.fanotify.max_queued_events unknown or too big to overflow quickly");
                return;
        }
        mkdir_p(dir);
        id = wt_add_watch(f->proxy, f->root, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        p = f->daemon->process;
        /* Each file made and removed is one event (its CREATE and DELETE merge). */
        wt_stop_and_overflow(wt_process_pid(p), dir, 2 * max + 64);
        g_assert_cmpint(kill(wt_process_pid(p), SIGCONT), ==, 0);
        g_assert_true(wt_await_overflows(&f->a, 1, TIMEOUT_MS));
        g_assert_true(wt_collector_has_overflow_id(&f->a, id));
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_overflows"), >=, 1);
        /* And it goes on. */
        wt_touch(after);
        (void) wt_await_record(&f->a, after, IN_CREATE, TIMEOUT_MS);
        log = wt_daemon_log(f->daemon);
        g_assert_nonnull(strstr(log, "fanotify queue overflowed"));
}

/* ---------------------------------------------------------------- several subscriptions */

static void test_nested(Fixture *f, gconstpointer data) {
        g_autofree char *a = at(f, "a"), *x = at(f, "a/x"), *y = at(f, "y");
        g_autoptr(WtClient) c2 = NULL;
        guint32 id1, id2;

        if (!f->ok)
                return;
        mkdir_p(a);
        c2 = wt_client_new(f->bus);
        id1 = wt_add_watch(f->proxy, f->root, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        id2 = wt_add_watch(c2->proxy, a, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_marks"), ==, 1);
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_subscriptions"), ==, 2);
        wt_touch(x);
        g_assert_cmpuint(wt_await_record(&f->a, x, IN_CREATE, TIMEOUT_MS)->id, ==, id1);
        g_assert_cmpuint(wt_await_record(&c2->events, x, IN_CREATE, TIMEOUT_MS)->id, ==, id2);
        /* One goes, the other stays served. */
        g_assert_true(watchd_inotify_call_remove_watch_sync(f->proxy, id1, NULL, NULL));
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_subscriptions"), ==, 1);
        wt_touch(y);
        g_assert_cmpint(unlink(x), ==, 0);
        wt_touch(x);
        g_assert_true(wt_await_records(&c2->events, 2, TIMEOUT_MS));
        g_assert_cmpuint(count_records(&c2->events, x, IN_CREATE), ==, 2);
        g_assert_cmpint(wt_collector_find(&f->a, y, IN_CREATE), <, 0);
        /* The last one takes the mark. */
        g_assert_true(watchd_inotify_call_remove_watch_sync(c2->proxy, id2, NULL, NULL));
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_marks"), ==, 0);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 0);
}

static void test_root_deleted(Fixture *f, gconstpointer data) {
        g_autofree char *a = at(f, "a/b");
        guint32 id;

        if (!f->ok)
                return;
        mkdir_p(a);
        id = wt_add_watch(f->proxy, f->root, IN_CREATE | IN_DELETE, WATCHD_FLAG_RECURSIVE, NULL);
        wt_remove_tree(f->root);
        g_assert_true(wt_await_removed(&f->a, id, WATCHD_REASON_DELETED, TIMEOUT_MS));
        g_assert_true(wt_await_stat(f->proxy, "fanotify_marks", 0, TIMEOUT_MS));
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 0);
}

static void test_oneshot(Fixture *f, gconstpointer data) {
        g_autofree char *a = at(f, "a"), *x = at(f, "a/x"), *y = at(f, "a/y");
        guint32 id;

        if (!f->ok)
                return;
        mkdir_p(a);
        id = wt_add_watch(f->proxy, f->root, IN_CREATE, WATCHD_FLAG_RECURSIVE | WATCHD_FLAG_ONESHOT, NULL);
        wt_touch(x);
        wt_touch(y);
        g_assert_true(wt_await_removed(&f->a, id, WATCHD_REASON_ONESHOT, TIMEOUT_MS));
        g_assert_cmpuint(f->a.records->len, ==, 1);
        g_assert_true(wt_await_stat(f->proxy, "fanotify_marks", 0, TIMEOUT_MS));
}

/* ---------------------------------------------------------------- where inotify serves */

/* Another file system mounted below the root: a mark would not see it. */
static void test_mount_below(Fixture *f, gconstpointer data) {
        g_autofree char *sub = at(f, "sub"), *x = at(f, "sub/x");
        guint32 id;

        if (!f->ok)
                return;
        mkdir_p(sub);
        g_assert_cmpint(mount("test-fanotify-below", sub, "tmpfs", 0, "size=1m"), ==, 0);
        id = wt_add_watch(f->proxy, f->root, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmphex(listed_flags(f->proxy, id), ==, WATCHD_FLAG_RECURSIVE);
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_marks"), ==, 0);
        wt_touch(x);
        (void) wt_await_record(&f->a, x, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpint(umount2(sub, MNT_DETACH), ==, 0);
}

/*
 * A RECURSIVE AddWatch of a FUSE mount with tree_backend = fanotify (issue
 * 24, a leftover of round 10's audit). fanotify_can_serve() asked the
 * mount's file system id with an fstatfs on the loop, in AddWatch's
 * completion: a FUSE_STATFS, never answered from a cache. hangfs answers
 * the first statfs (the one AddWatch's worker makes, remote_hint_probe())
 * and not the next: watchd froze, and AddWatch was never answered. Now
 * what the worker found is used (a remote file system is inotify's, asked
 * nothing more): AddWatch is answered, served by inotify, and a file made
 * in the mount is reported.
 */
static void test_hung_statfs(Fixture *f, gconstpointer data) {
#ifdef HANGFS
        g_autofree char *back = g_build_filename(f->bus->dir, "back", NULL), *fmnt = NULL, *x = NULL;
        g_autoptr(GError) error = NULL;
        struct stat sb, mb;
        GPid pid;
        guint32 id;

        if (!f->ok)
                return;
        fmnt = at(f, "fuse");
        x = at(f, "fuse/x");
        mkdir_p(back);
        mkdir_p(fmnt);
        g_assert_cmpint(stat(fmnt, &sb), ==, 0); /* its device before the mount */
        g_assert_true(g_spawn_async(
                NULL, (char *[]) { (char *) HANGFS, back, fmnt, (char *) "-o", (char *) "allow_other", NULL },
                (char *[]) { (char *) "HANGFS_NAME=-", (char *) "HANGFS_STATFS=1", (char *) "HANGFS_STATFS_SKIP=1", NULL },
                G_SPAWN_DO_NOT_REAP_CHILD, wt_child_die_with_parent, NULL, &pid, &error));
        g_assert_no_error(error);
        for (int i = 0; i < 500 && stat(fmnt, &mb) == 0 && mb.st_dev == sb.st_dev; i++)
                g_usleep(10 * 1000);
        g_assert_cmpint(mb.st_dev, !=, sb.st_dev);

        id = wt_add_watch(f->proxy, fmnt, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmphex(listed_flags(f->proxy, id) & WATCHD_FLAG_RECURSIVE, ==, WATCHD_FLAG_RECURSIVE);
        g_assert_cmpuint(wt_stat(f->proxy, "fanotify_marks"), ==, 0);
        wt_touch(x);
        (void) wt_await_record(&f->a, x, IN_CREATE, TIMEOUT_MS);

        g_assert_cmpint(kill(pid, SIGUSR2), ==, 0);
        g_assert_cmpint(umount2(fmnt, MNT_DETACH), ==, 0);
        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
#else
        if (f->ok)
                g_test_skip("built without libfuse's headers: no hangfs");
#endif
}

/* No helper: auto serves with inotify; fanotify does not start. */
static void test_no_helper(Fixture *f, gconstpointer data) {
        g_autofree char *x = NULL, *conf = NULL, *err = NULL;
        const char *argv[] = { wt_watchd_path(), "--config", NULL, "--address", NULL, "--backend", "syscall", NULL };
        g_autoptr(GSubprocess) p = NULL;
        g_autoptr(GBytes) errb = NULL;
        g_autoptr(GError) error = NULL;
        guint32 id;

        setup_base(f, data);
        if (!f->ok)
                return;
        f->daemon = wt_daemon_start(f->bus, "[daemon]\ntree_backend = auto\nfanotify_helper = /nonexistent.sock\n");
        connect_client(f);
        id = wt_add_watch(f->proxy, f->root, IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
        g_assert_cmphex(listed_flags(f->proxy, id), ==, WATCHD_FLAG_RECURSIVE);
        x = at(f, "x");
        wt_touch(x);
        (void) wt_await_record(&f->a, x, IN_CREATE, TIMEOUT_MS);

        conf = g_build_filename(f->bus->dir, "required.conf", NULL);
        g_assert_true(g_file_set_contents(conf,
                                          "[daemon]\ntree_backend = fanotify\n"
                                          "fanotify_helper = /nonexistent.sock\n",
                                          -1, NULL));
        argv[2] = conf;
        argv[4] = f->bus->address;
        p = g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
        g_assert_no_error(error);
        g_assert_true(g_subprocess_communicate(p, NULL, NULL, NULL, &errb, &error));
        g_assert_cmpint(g_subprocess_get_exit_status(p), ==, 1);
        err = g_strndup(g_bytes_get_data(errb, NULL), g_bytes_get_size(errb));
        g_assert_nonnull(strstr(err,
                                "tree_backend = fanotify, but the helper at '/nonexistent.sock' gave no "
                                "fanotify group"));
}

int main(int argc, char **argv) {
        if (argc == 3 && strcmp(argv[1], "--nobody") == 0)
                return nobody_main(argv[2]);
        g_test_init(&argc, &argv, NULL);
        g_test_add("/fanotify/ext4/served", Fixture, "ext4", fixture_setup, test_served, fixture_teardown);
        g_test_add("/fanotify/tmpfs/served", Fixture, "tmpfs", fixture_setup, test_served, fixture_teardown);
        g_test_add("/fanotify/ext4/records", Fixture, "ext4", fixture_setup, test_records, fixture_teardown);
        g_test_add("/fanotify/tmpfs/records", Fixture, "tmpfs", fixture_setup, test_records, fixture_teardown);
        g_test_add("/fanotify/ext4/looked-up-late", Fixture, "ext4", fixture_setup, test_looked_up_late,
                   fixture_teardown);
        g_test_add("/fanotify/tmpfs/looked-up-late", Fixture, "tmpfs", fixture_setup, test_looked_up_late,
                   fixture_teardown);
        g_test_add("/fanotify/ext4/looked-up-past-read", Fixture, "ext4", fixture_setup, test_looked_up_past_read,
                   fixture_teardown);
        g_test_add("/fanotify/tmpfs/looked-up-past-read", Fixture, "tmpfs", fixture_setup, test_looked_up_past_read,
                   fixture_teardown);
        g_test_add("/fanotify/ext4/looked-up-past-read-ahead", Fixture, "ext4", fixture_setup,
                   test_looked_up_past_read_ahead, fixture_teardown);
        g_test_add("/fanotify/tmpfs/looked-up-past-read-ahead", Fixture, "tmpfs", fixture_setup,
                   test_looked_up_past_read_ahead, fixture_teardown);
        g_test_add("/fanotify/ext4/looked-up-past-unsure-max", Fixture, "ext4", fixture_setup,
                   test_looked_up_past_unsure_max, fixture_teardown);
        g_test_add("/fanotify/tmpfs/looked-up-past-unsure-max", Fixture, "tmpfs", fixture_setup,
                   test_looked_up_past_unsure_max, fixture_teardown);
        g_test_add("/fanotify/ext4/looked-up-before-unsure-max", Fixture, "ext4", fixture_setup,
                   test_looked_up_before_unsure_max, fixture_teardown);
        g_test_add("/fanotify/tmpfs/looked-up-before-unsure-max", Fixture, "tmpfs", fixture_setup,
                   test_looked_up_before_unsure_max, fixture_teardown);
        g_test_add("/fanotify/ext4/mkdir-p", Fixture, "ext4", fixture_setup, test_mkdir_p, fixture_teardown);
        g_test_add("/fanotify/ext4/permission", Fixture, "ext4", fixture_setup, test_permission, fixture_teardown);
        g_test_add("/fanotify/ext4/own-events", Fixture, "ext4", NULL, test_own_events, fixture_teardown);
        g_test_add("/fanotify/ext4/root-own", Fixture, "ext4", fixture_setup, test_root_own, fixture_teardown);
        g_test_add("/fanotify/tmpfs/root-own", Fixture, "tmpfs", fixture_setup, test_root_own, fixture_teardown);
        g_test_add("/fanotify/ext4/overflow", Fixture, "ext4", fixture_setup, test_overflow, fixture_teardown);
        g_test_add("/fanotify/ext4/nested", Fixture, "ext4", fixture_setup, test_nested, fixture_teardown);
        g_test_add("/fanotify/ext4/root-deleted", Fixture, "ext4", fixture_setup, test_root_deleted, fixture_teardown);
        g_test_add("/fanotify/ext4/oneshot", Fixture, "ext4", fixture_setup, test_oneshot, fixture_teardown);
        g_test_add("/fanotify/ext4/mount-below", Fixture, "ext4", fixture_setup, test_mount_below, fixture_teardown);
        g_test_add("/fanotify/tmpfs/no-helper", Fixture, "tmpfs", NULL, test_no_helper, fixture_teardown);
        g_test_add("/fanotify/tmpfs/hung-statfs", Fixture, "tmpfs", fixture_setup, test_hung_statfs, fixture_teardown);
        return g_test_run();
}
