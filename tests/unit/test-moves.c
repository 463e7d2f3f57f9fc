/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-moves - the paths of subscriptions follow their directories' renames
 *
 * Subscriptions placed by the watch table on the fake backend (real
 * directories in a temporary directory), and the records of a rename
 * handed to moves_on_event() as events.c would: each case says which
 * records come, in which order and on which watch, and what every path is
 * after them. A directory renamed within its parent, moved to another
 * watched directory, a pair cut by another cookie or by its halves' order,
 * a file (not followed), a pending path (keeps what it asked for), two
 * spellings of one directory, and the PERSIST subscriptions named at the
 * IN_MOVED_FROM.
 */

#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "event_bits.h"
#include "fake-backend.h"
#include "log.h"
#include "moves.h"
#include "watch_table.h"
#include "watchd-api.h"

typedef struct Fixture {
        FakeBackend *fake;
        WatchTable *t;
        Moves *mv;
        char *dir;
} Fixture;

static Client *const owner = (Client *) 0x1; /* the table only stores it */

static void setup(Fixture *f, gconstpointer data) {
        log_set_max_level(LOG_ERR);
        f->fake = fake_backend_new();
        g_assert_cmpint(watch_table_new(&f->fake->backend, &f->t), ==, 0);
        g_assert_cmpint(moves_new(f->t, &f->mv), ==, 0);
        f->dir = g_dir_make_tmp("test-moves-XXXXXX", NULL);
        g_assert_nonnull(f->dir);
}

static void teardown(Fixture *f, gconstpointer data) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->dir);

        moves_free(f->mv);
        watch_table_free(f->t);
        fake_backend_free(f->fake);
        g_assert_cmpint(system(cmd), ==, 0);
        g_free(f->dir);
}

static char *in(Fixture *f, const char *rel) {
        return g_build_filename(f->dir, rel, NULL);
}

/* A subscription to path (a real directory or file), spelled as given. */
static Subscription *sub(Fixture *f, const char *path, uint32_t flags) {
        Subscription *s = NULL;
        struct stat st;
        int fd = open(path, O_PATH | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(watch_table_subscribe(f->t, fd, &st, path, owner, NULL, IN_ALL_EVENTS, flags, &s), ==, 0);
        close(fd);
        return s;
}

static Watch *watch_of(Subscription *s) {
        return s->links->watch;
}

/* One record on w, as the kernel would have queued it; returns the PERSIST ids named. */
static guint record(Fixture *f, Watch *w, uint32_t mask, uint32_t cookie, const char *name) {
        g_autoptr(GArray) left = g_array_new(FALSE, FALSE, sizeof(uint32_t));
        RawEvent ev = {
                .wd = w->wd,
                .mask = mask,
                .cookie = cookie,
                .name = name,
                .name_len = name ? strlen(name) : 0,
        };

        moves_on_event(f->mv, w, &ev, left);
        return left->len;
}

/* A directory renamed within its parent: every path at or below it follows; others do not. */
static void test_rename(Fixture *f, gconstpointer data) {
        g_autofree char *a = in(f, "a"), *ab = in(f, "a/b"), *z = in(f, "z"), *zb = in(f, "z/b");
        g_autofree char *aside = in(f, "aside");
        Subscription *parent, *sa, *sab, *other;

        g_assert_cmpint(g_mkdir_with_parents(ab, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(aside, 0755), ==, 0);
        parent = sub(f, f->dir, 0);
        sa = sub(f, a, 0);
        sab = sub(f, ab, 0);
        other = sub(f, aside, 0);
        g_assert_cmpint(g_rename(a, z), ==, 0);
        g_assert_cmpuint(record(f, watch_of(parent), IN_MOVED_FROM | IN_ISDIR, 5, "a"), ==, 0);
        g_assert_cmpstr(sa->path, ==, a); /* not before its other half */
        g_assert_cmpuint(record(f, watch_of(parent), IN_MOVED_TO | IN_ISDIR, 5, "z"), ==, 0);
        g_assert_cmpstr(sa->path, ==, z);
        g_assert_cmpstr(sab->path, ==, zb);
        g_assert_cmpstr(other->path, ==, aside);
        g_assert_cmpstr(parent->path, ==, f->dir);
}

/* Moved into another watched directory: the new parent's spelling. */
static void test_across(Fixture *f, gconstpointer data) {
        g_autofree char *p = in(f, "p"), *q = in(f, "q"), *pd = in(f, "p/d"), *qe = in(f, "q/e");
        Subscription *sp, *sq, *sd;

        g_assert_cmpint(g_mkdir(p, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(q, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(pd, 0755), ==, 0);
        sp = sub(f, p, 0);
        sq = sub(f, q, 0);
        sd = sub(f, pd, 0);
        g_assert_cmpint(g_rename(pd, qe), ==, 0);
        record(f, watch_of(sp), IN_MOVED_FROM | IN_ISDIR, 6, "d");
        record(f, watch_of(sq), IN_MOVED_TO | IN_ISDIR, 6, "e");
        g_assert_cmpstr(sd->path, ==, qe);
}

/* What is not one rename of a directory changes nothing. */
static void test_not_followed(Fixture *f, gconstpointer data) {
        g_autofree char *a = in(f, "a"), *file = in(f, "file");
        Subscription *parent, *sa, *sf;

        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_true(g_file_set_contents(file, "", 0, NULL));
        parent = sub(f, f->dir, 0);
        sa = sub(f, a, 0);
        sf = sub(f, file, 0);

        /* Another cookie for the second half. */
        record(f, watch_of(parent), IN_MOVED_FROM | IN_ISDIR, 7, "a");
        record(f, watch_of(parent), IN_MOVED_TO | IN_ISDIR, 8, "b");
        g_assert_cmpstr(sa->path, ==, a);
        /* An IN_MOVED_TO alone (from an unwatched directory). */
        record(f, watch_of(parent), IN_MOVED_TO | IN_ISDIR, 9, "c");
        g_assert_cmpstr(sa->path, ==, a);
        /* The halves of a file: a file subscription keeps its path (the kernel says where only for directories). */
        record(f, watch_of(parent), IN_MOVED_FROM, 10, "file");
        record(f, watch_of(parent), IN_MOVED_TO, 10, "file2");
        g_assert_cmpstr(sf->path, ==, file);
        /* No cookie. */
        record(f, watch_of(parent), IN_MOVED_FROM | IN_ISDIR, 0, "a");
        record(f, watch_of(parent), IN_MOVED_TO | IN_ISDIR, 0, "b");
        g_assert_cmpstr(sa->path, ==, a);
        /* The second half seen twice: the pair is used once. */
        record(f, watch_of(parent), IN_MOVED_FROM | IN_ISDIR, 11, "a");
        record(f, watch_of(parent), IN_MOVED_TO | IN_ISDIR, 11, "b");
        g_assert_cmpstr(sa->path + strlen(f->dir), ==, "/b");
        record(f, watch_of(parent), IN_MOVED_TO | IN_ISDIR, 11, "c");
        g_assert_cmpstr(sa->path + strlen(f->dir), ==, "/b");
}

/* A pending subscription keeps the path it asked for. */
static void test_pending(Fixture *f, gconstpointer data) {
        g_autofree char *a = in(f, "a"), *want = in(f, "a/later");
        Subscription *parent, *pending = NULL;

        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        parent = sub(f, f->dir, 0);
        g_assert_cmpint(watch_table_subscribe_pending(f->t, want, owner, NULL, IN_CREATE, 0, &pending), ==, 0);
        record(f, watch_of(parent), IN_MOVED_FROM | IN_ISDIR, 12, "a");
        record(f, watch_of(parent), IN_MOVED_TO | IN_ISDIR, 12, "b");
        g_assert_cmpstr(pending->path, ==, want);
        g_assert_true(pending->pending);
}

/* One directory, two spellings (through a symbolic link to its parent):
 * within one directory each keeps its own. */
static void test_spellings(Fixture *f, gconstpointer data) {
        g_autofree char *real = in(f, "real"), *alias = in(f, "alias"), *rd = in(f, "real/d");
        g_autofree char *ad = in(f, "alias/d"), *re = in(f, "real/e"), *ae = in(f, "alias/e");
        Subscription *p1, *p2, *s1, *s2;

        g_assert_cmpint(g_mkdir_with_parents(rd, 0755), ==, 0);
        g_assert_cmpint(symlink(real, alias), ==, 0);
        p1 = sub(f, real, 0);
        p2 = sub(f, alias, 0);
        g_assert_true(watch_of(p1) == watch_of(p2)); /* one kernel watch, two links */
        s1 = sub(f, rd, 0);
        s2 = sub(f, ad, 0);
        g_assert_cmpint(g_rename(rd, re), ==, 0);
        record(f, watch_of(p1), IN_MOVED_FROM | IN_ISDIR, 13, "d");
        record(f, watch_of(p1), IN_MOVED_TO | IN_ISDIR, 13, "e");
        g_assert_cmpstr(s1->path, ==, re);
        g_assert_cmpstr(s2->path, ==, ae);
}

/* PERSIST subscriptions at or below the old path are named at the
 * IN_MOVED_FROM (their objects left their paths), and keep their paths. */
static void test_persist(Fixture *f, gconstpointer data) {
        g_autofree char *a = in(f, "a"), *ab = in(f, "a/b"), *c = in(f, "c");
        Subscription *parent, *pa, *pab, *plain;

        g_assert_cmpint(g_mkdir_with_parents(ab, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(c, 0755), ==, 0);
        parent = sub(f, f->dir, 0);
        pa = sub(f, a, WATCHD_FLAG_PERSIST);
        pab = sub(f, ab, WATCHD_FLAG_PERSIST);
        plain = sub(f, c, WATCHD_FLAG_PERSIST);
        g_assert_cmpuint(record(f, watch_of(parent), IN_MOVED_FROM | IN_ISDIR, 14, "a"), ==, 2);
        g_assert_cmpuint(record(f, watch_of(parent), IN_MOVED_TO | IN_ISDIR, 14, "z"), ==, 0);
        g_assert_cmpstr(pa->path, ==, a);
        g_assert_cmpstr(pab->path, ==, ab);
        g_assert_cmpstr(plain->path, ==, c);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
#define ADD(name, fn) g_test_add(name, Fixture, NULL, setup, fn, teardown)
        ADD("/moves/rename", test_rename);
        ADD("/moves/across", test_across);
        ADD("/moves/not-followed", test_not_followed);
        ADD("/moves/pending", test_pending);
        ADD("/moves/spellings", test_spellings);
        ADD("/moves/persist", test_persist);
        return g_test_run();
}
