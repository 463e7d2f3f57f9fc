/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-watch-table - coalescing, against the fake backend (fake-backend.h),
 * which behaves like the kernel's inode-keyed watch list and records every
 * call. Files are real (in a temporary directory), so the table's own
 * reopen for narrowing runs.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "event_bits.h"
#include "fake-backend.h"
#include "moves.h"
#include "watch_narrow.h"
#include "watch_placed.h"
#include "watch_table.h"

typedef struct Fixture {
        FakeBackend *fake;
        WatchTable *t;
        char *dir;
        char *a, *b, *link_a, *hard_b;
} Fixture;

static void setup(Fixture *f, gconstpointer data) {
        f->fake = fake_backend_new();
        g_assert_cmpint(watch_table_new(&f->fake->backend, &f->t), ==, 0);
        f->dir = g_dir_make_tmp("test-watch-table-XXXXXX", NULL);
        f->a = g_build_filename(f->dir, "a", NULL);
        f->b = g_build_filename(f->dir, "b", NULL);
        f->link_a = g_build_filename(f->dir, "link-a", NULL);
        f->hard_b = g_build_filename(f->dir, "hard-b", NULL);
        g_assert_cmpint(g_mkdir(f->a, 0755), ==, 0);
        g_assert_true(g_file_set_contents(f->b, "", 0, NULL));
        g_assert_cmpint(symlink(f->a, f->link_a), ==, 0);
        g_assert_cmpint(link(f->b, f->hard_b), ==, 0);
}

static void teardown(Fixture *f, gconstpointer data) {
        watch_table_free(f->t);
        fake_backend_free(f->fake);
        g_unlink(f->link_a);
        g_unlink(f->hard_b);
        g_unlink(f->b);
        g_rmdir(f->a);
        g_rmdir(f->dir);
        g_free(f->a);
        g_free(f->b);
        g_free(f->link_a);
        g_free(f->hard_b);
        g_free(f->dir);
}

static Subscription *sub_flags(Fixture *f, const char *path, Client *owner, uint32_t mask, uint32_t flags) {
        Subscription *s = NULL;
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(watch_table_subscribe(f->t, fd, &st, path, owner, NULL, mask, flags, &s), ==, 0);
        close(fd);
        return s;
}

static Subscription *sub(Fixture *f, const char *path, Client *owner, uint32_t mask) {
        return sub_flags(f, path, owner, mask, 0);
}

static uint32_t kmask(Fixture *f, const Subscription *s) {
        g_assert_nonnull(s->links->watch);
        g_assert_true(f->fake->watches[s->links->watch->wd].live);
        return f->fake->watches[s->links->watch->wd].mask;
}

/* A step of a coalescing scenario on the directory a (by two paths) and the file b (by two links). */
typedef struct Step {
        char op;  /* '+' subscribe, '-' unsubscribe */
        int slot; /* which subscription (0-5) */
        int path; /* 0 a, 1 link-a, 2 b, 3 hard-b */
        uint32_t mask;
        /* after the step: */
        unsigned watches, subscriptions;
        uint32_t mask_a, mask_b; /* kernel masks, 0 = no kernel watch */
} Step;

typedef struct Scenario {
        const char *what;
        Step steps[12];
} Scenario;

/* clang-format off */
static const Scenario scenarios[] = {
        { "one inode, two paths, one kernel watch with the union", {
                { '+', 0, 0, IN_CREATE, 1, 1, IN_CREATE, 0 },
                { '+', 1, 1, IN_DELETE, 1, 2, IN_CREATE | IN_DELETE, 0 },
                { '-', 0, 0, 0, 1, 1, IN_DELETE, 0 },           /* narrowed to what is left */
                { '-', 1, 0, 0, 0, 0, 0, 0 },                   /* released */
        } },
        { "hard links are one inode", {
                { '+', 0, 2, IN_MODIFY, 1, 1, 0, IN_MODIFY },
                { '+', 1, 3, IN_ATTRIB, 1, 2, 0, IN_MODIFY | IN_ATTRIB },
                { '+', 2, 0, IN_CREATE, 2, 3, IN_CREATE, IN_MODIFY | IN_ATTRIB },
                { '-', 1, 0, 0, 2, 2, IN_CREATE, IN_MODIFY },
                { '-', 0, 0, 0, 1, 1, IN_CREATE, 0 },
                { '-', 2, 0, 0, 0, 0, 0, 0 },
        } },
        { "a subset mask changes nothing in the kernel", {
                { '+', 0, 0, IN_CREATE | IN_DELETE, 1, 1, IN_CREATE | IN_DELETE, 0 },
                { '+', 1, 0, IN_CREATE, 1, 2, IN_CREATE | IN_DELETE, 0 },
                { '+', 2, 1, IN_DELETE, 1, 3, IN_CREATE | IN_DELETE, 0 },
                { '-', 0, 0, 0, 1, 2, IN_CREATE | IN_DELETE, 0 },
                { '-', 2, 0, 0, 1, 1, IN_CREATE, 0 },
                { '-', 1, 0, 0, 0, 0, 0, 0 },
        } },
};
/* clang-format on */

static void test_scenario(Fixture *f, gconstpointer data) {
        const Scenario *sc = data;
        const char *paths[] = { f->a, f->link_a, f->b, f->hard_b };
        Subscription *slots[6] = {};
        uint32_t last_id = 0;

        for (const Step *s = sc->steps; s->op; s++) {
                uint32_t ka = 0, kb = 0;

                if (s->op == '+') {
                        slots[s->slot] = sub(f, paths[s->path], NULL, s->mask);
                        g_assert_cmpuint(slots[s->slot]->id, >, last_id); /* ids only grow */
                        last_id = slots[s->slot]->id;
                } else {
                        watch_table_unsubscribe(f->t, slots[s->slot]);
                        slots[s->slot] = NULL;
                }
                g_assert_cmpuint(watch_table_n_watches(f->t), ==, s->watches);
                g_assert_cmpuint(watch_table_n_subscriptions(f->t), ==, s->subscriptions);
                for (int i = 0; i < f->fake->next_wd; i++)
                        if (f->fake->watches[i].live) {
                                struct stat st;
                                g_assert_cmpint(stat(f->a, &st), ==, 0);
                                if (f->fake->watches[i].ino == st.st_ino)
                                        ka = f->fake->watches[i].mask;
                                else
                                        kb = f->fake->watches[i].mask;
                        }
                /* A directory is watched for its attributes too (WATCH_ACCESS_BITS: who may read it). */
                g_assert_cmpuint(ka, ==, s->mask_a ? s->mask_a | WATCH_ACCESS_BITS : 0);
                g_assert_cmpuint(kb, ==, s->mask_b);
        }
}

/* The kernel's refusal leaves nothing behind and is passed up as is. */
static void test_enospc(Fixture *f, gconstpointer data) {
        Subscription *s = NULL;
        struct stat st;
        int fd = open(f->a, O_RDONLY | O_CLOEXEC);

        g_assert_cmpint(fstat(fd, &st), ==, 0);
        f->fake->fail_add = -ENOSPC;
        g_assert_cmpint(watch_table_subscribe(f->t, fd, &st, f->a, NULL, NULL, IN_CREATE, 0, &s), ==, -ENOSPC);
        g_assert_null(s);
        g_assert_cmpuint(watch_table_n_watches(f->t), ==, 0);
        g_assert_cmpuint(watch_table_n_subscriptions(f->t), ==, 0);

        /* Widening an existing watch that the kernel refuses: the old subscription is untouched. */
        s = sub(f, f->a, NULL, IN_CREATE);
        f->fake->fail_add = -ENOSPC;
        {
                Subscription *s2 = NULL;
                g_assert_cmpint(watch_table_subscribe(f->t, fd, &st, f->a, NULL, NULL, IN_DELETE, 0, &s2), ==, -ENOSPC);
        }
        g_assert_cmpuint(watch_table_n_subscriptions(f->t), ==, 1);
        g_assert_cmpuint(kmask(f, s), ==, IN_CREATE | WATCH_ACCESS_BITS);
        close(fd);
}

/* A Watch keeps st_dev in 32 bits, as Linux makes them: a larger one (no
 * kernel makes it) is refused, not truncated onto another device's inode. */
static void test_dev_too_large(Fixture *f, gconstpointer data) {
        Subscription *s = NULL;
        struct stat st;
        int fd = open(f->a, O_RDONLY | O_CLOEXEC);

        g_assert_cmpint(fstat(fd, &st), ==, 0);
        st.st_dev |= (dev_t) 1 << 40;
        g_assert_cmpint(watch_table_subscribe(f->t, fd, &st, f->a, NULL, NULL, IN_CREATE, 0, &s), ==, -EOVERFLOW);
        g_assert_null(s);
        g_assert_cmpuint(watch_table_n_watches(f->t), ==, 0);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
        g_assert_null(watch_table_find_watch(f->t, st.st_dev, st.st_ino));

        /* The same inode on its own device: one watch, not found by the larger number. */
        s = sub(f, f->a, NULL, IN_CREATE);
        g_assert_nonnull(watch_table_find_watch(f->t, (uint32_t) st.st_dev, st.st_ino));
        g_assert_null(watch_table_find_watch(f->t, st.st_dev, st.st_ino));
        close(fd);
}

/* IN_IGNORED: the kernel dropped the watch; the table forgets the wd without calling the kernel. */
static void test_watch_gone(Fixture *f, gconstpointer data) {
        Subscription *s1 = sub(f, f->a, NULL, IN_CREATE), *s2 = sub(f, f->a, NULL, IN_DELETE), *s3;
        Watch *w = s1->links->watch;
        int wd = w->wd;
        unsigned rm_before = f->fake->n_rm;

        g_assert_true(watch_table_get_watch(f->t, wd) == w);
        f->fake->watches[wd].live = FALSE; /* the kernel removed it */
        watch_table_watch_gone(f->t, w);
        g_assert_null(watch_table_get_watch(f->t, wd));
        g_assert_cmpuint(watch_table_n_watches(f->t), ==, 0);

        /* A new subscription on the same inode gets a new kernel watch, not the dead one. */
        s3 = sub(f, f->a, NULL, IN_ATTRIB);
        g_assert_true(s3->links->watch != w);
        g_assert_cmpint(s3->links->watch->wd, !=, wd);

        watch_table_unsubscribe(f->t, s1);
        watch_table_unsubscribe(f->t, s2); /* frees the dead watch; no kernel call for it */
        g_assert_cmpuint(f->fake->n_rm, ==, rm_before);
        g_assert_cmpuint(watch_table_n_watches(f->t), ==, 1);
        g_assert_true(watch_table_get_subscription(f->t, s3->id) == s3);
}

/* The kernel reused a wd we still hold (its IN_IGNORED not read yet): the old watch is dropped. */
static void test_wd_reuse(Fixture *f, gconstpointer data) {
        Subscription *s1 = sub(f, f->a, NULL, IN_CREATE), *s2;
        int wd = s1->links->watch->wd;

        /* Found by wd last: the table remembers it (a storm's records are of one watch). */
        g_assert_true(watch_table_get_watch(f->t, wd) == s1->links->watch);
        /* The kernel forgot a's watch and will give the same wd to b. */
        f->fake->watches[wd].live = FALSE;
        f->fake->next_wd = wd;
        s2 = sub(f, f->b, NULL, IN_MODIFY);
        g_assert_cmpint(s2->links->watch->wd, ==, wd);
        g_assert_true(watch_table_get_watch(f->t, wd) == s2->links->watch);
        g_assert_cmpint(s1->links->watch->wd, ==, -1);
        watch_table_unsubscribe(f->t, s1);
        g_assert_true(watch_table_get_watch(f->t, wd) == s2->links->watch);
        g_assert_cmpuint(watch_table_n_watches(f->t), ==, 1);
        /* Gone from the kernel (IN_IGNORED): not found by its wd any more, the last found or not. */
        watch_table_watch_gone(f->t, s2->links->watch);
        g_assert_null(watch_table_get_watch(f->t, wd));
        /* Released with its last link, right after it was found: nothing is read of it after
         * (the sanitizer suite sees a read of the freed watch). */
        s1 = sub(f, f->a, NULL, IN_CREATE);
        wd = s1->links->watch->wd;
        g_assert_true(watch_table_get_watch(f->t, wd) == s1->links->watch);
        watch_table_unsubscribe(f->t, s1);
        g_assert_null(watch_table_get_watch(f->t, wd));
}

/* Links: a RECURSIVE subscription on a directory and one below; the kernel
 * mask carries what following the tree needs; a second link on one inode is
 * refused; unsubscribing drops every link. */
static void test_links(Fixture *f, gconstpointer data) {
        g_autofree char *sub_dir = g_build_filename(f->a, "sub", NULL);
        Subscription *s = NULL, *plain;
        WatchLink *l = NULL, *l2 = NULL;
        struct stat st;
        int fd;

        g_assert_cmpint(g_mkdir(sub_dir, 0755), ==, 0);
        fd = open(f->a, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(watch_table_subscribe(f->t, fd, &st, f->a, NULL, NULL, IN_DELETE, WATCHD_FLAG_RECURSIVE, &s),
                        ==, 0);
        close(fd);
        g_assert_true(watch_link_is_root(s->links));
        g_assert_cmpuint(kmask(f, s), ==, IN_DELETE | WATCH_TREE_BITS | WATCH_ACCESS_BITS);

        fd = open(sub_dir, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(watch_table_link(f->t, s, s->links, fd, &st, "sub", 3, &l), ==, 0);
        g_assert_cmpint(watch_table_link(f->t, s, s->links, fd, &st, "elsewhere", 9, &l2), ==, -EEXIST);
        close(fd);
        g_assert_false(watch_link_is_root(l));
        g_assert_true(watch_link_parent(l) == s->links);
        g_assert_cmpstr(l->name, ==, "sub"); /* a name, its path built on demand */
        {
                char buf[PATH_MAX];

                g_assert_cmpint(watch_link_path(l, buf, sizeof(buf)), ==, (int) strlen(sub_dir));
                g_assert_cmpstr(buf, ==, sub_dir);
                g_assert_cmpint(watch_link_path(l, buf, strlen(sub_dir)), ==, -ENAMETOOLONG);
        }
        g_assert_true(watch_link_next(s->links) == l); /* pre-order: the root, then below */
        g_assert_null(watch_link_next(l));
        g_assert_true(watch_link_is_root(s->links)); /* the root stays first */
        g_assert_cmpuint(s->n_links, ==, 2);
        g_assert_cmpuint(watch_table_n_watches(f->t), ==, 2);
        g_assert_cmpuint(watch_table_n_subscriptions(f->t), ==, 1);

        /* A plain subscription on the same directory shares its watch. */
        plain = sub(f, sub_dir, NULL, IN_ATTRIB);
        g_assert_true(plain->links->watch == l->watch);
        g_assert_cmpuint(f->fake->watches[l->watch->wd].mask, ==, IN_ATTRIB | IN_DELETE | WATCH_TREE_BITS);

        /* Held by a walk: unlinked, it is dead but still there until released. */
        watch_link_hold(l);
        watch_link_hold(l);
        g_assert_false(l->dead);
        g_assert_cmpuint(watch_table_unlink(f->t, l), ==, 1);
        g_assert_true(l->dead);
        g_assert_cmpstr(l->name, ==, "sub"); /* not freed: ASan/valgrind would say */
        watch_link_release(l);
        g_assert_true(l->dead);
        watch_link_release(l); /* the last release frees it */
        g_assert_null(s->links->children);
        g_assert_cmpuint(s->n_links, ==, 1);
        g_assert_cmpuint(kmask(f, plain), ==, IN_ATTRIB); /* narrowed to what is left */
        watch_table_unsubscribe(f->t, s);
        g_assert_cmpuint(watch_table_n_watches(f->t), ==, 1);
        watch_table_unsubscribe(f->t, plain);
        g_assert_cmpuint(watch_table_n_watches(f->t), ==, 0);
        g_rmdir(sub_dir);
}

/* Only a tree's top link holds its subscription; the others find it by
 * walking up. A link unlinked while held outlives its parent: it must still
 * name its subscription (the walks that held it look), without walking up
 * into its freed parent. And the header left room: a name of up to 7 bytes
 * (W3's are 5) takes a link of 64 bytes. */
static void test_dead_link(Fixture *f, gconstpointer data) {
        g_autofree char *mid_dir = g_build_filename(f->a, "mid", NULL);
        g_autofree char *low_dir = g_build_filename(mid_dir, "low", NULL);
        Subscription *s = NULL;
        WatchLink *mid = NULL, *low = NULL;
        struct stat st;
        int fd;

        g_assert_cmpuint(WATCH_LINK_SIZE(7), <=, 64);
        g_assert_cmpint(g_mkdir(mid_dir, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(low_dir, 0755), ==, 0);
        fd = open(f->a, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(watch_table_subscribe(f->t, fd, &st, f->a, NULL, NULL, IN_DELETE, WATCHD_FLAG_RECURSIVE, &s),
                        ==, 0);
        close(fd);
        fd = open(mid_dir, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(watch_table_link(f->t, s, s->links, fd, &st, "mid", 3, &mid), ==, 0);
        close(fd);
        fd = open(low_dir, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(watch_table_link(f->t, s, mid, fd, &st, "low", 3, &low), ==, 0);
        close(fd);
        g_assert_true(watch_link_subscription(low) == s);
        g_assert_true(watch_link_parent(low) == mid && watch_link_parent(mid) == s->links);
        g_assert_null(watch_link_parent(s->links));

        /* mid and low go; low is held, mid is freed. */
        watch_link_hold(low);
        g_assert_cmpuint(watch_table_unlink(f->t, mid), ==, 2);
        g_assert_true(low->dead);
        g_assert_true(watch_link_subscription(low) == s);
        g_assert_null(watch_link_parent(low));
        watch_link_release(low);
        g_assert_null(s->links->children);
        g_assert_cmpuint(s->n_links, ==, 1);
        watch_table_unsubscribe(f->t, s);
        g_assert_cmpuint(watch_table_n_watches(f->t), ==, 0);
        g_rmdir(low_dir);
        g_rmdir(mid_dir);
}

/* A directory's kernel mask, without what every watched directory has (WATCH_ACCESS_BITS). */
static uint32_t dmask(Fixture *f, const Subscription *s) {
        return kmask(f, s) & ~WATCH_ACCESS_BITS;
}

/* A job that holds its lane until the test writes to fd (the jobs behind it wait). */
typedef struct Blocker {
        int fds[2];
        bool done;
} Blocker;

static void block_run(void *data) {
        Blocker *b = data;
        char c;

        g_assert_cmpint(read(b->fds[0], &c, 1), ==, 1);
}

static void block_done(void *data, int error) {
        ((Blocker *) data)->done = true;
}

/* A's lane held by b: a narrowing of a's watch waits behind it. */
static void block_lane(Fixture *f, FsWork *w, Blocker *b) {
        struct stat st;

        g_assert_cmpint(stat(f->a, &st), ==, 0);
        g_assert_cmpint(pipe2(b->fds, O_CLOEXEC), ==, 0);
        g_assert_cmpint(fswork_submit(w, st.st_dev, NULL, block_run, block_done, b), ==, 0);
}

static void unblock_lane(FsWork *w, Blocker *b) {
        g_assert_cmpint(write(b->fds[1], "x", 1), ==, 1);
        fswork_settle(w);
        g_assert_true(b->done);
        close(b->fds[0]);
        close(b->fds[1]);
}

static FsWork *narrow_in_workers(Fixture *f) {
        FsWork *w = NULL;

        g_assert_cmpint(fswork_new(&(FsWorkOps) {}, NULL, &w), ==, 0);
        watch_table_set_fswork(f->t, w);
        return w;
}

static void narrow_done_with(Fixture *f, FsWork *w) {
        fswork_settle(w);
        watch_table_set_fswork(f->t, NULL);
        fswork_free(w);
}

/* With workers, a watch is narrowed in a job (its path reopened off the
 * loop): the kernel mask stays the union until the completion, then is
 * what is left. */
static void test_narrow_job(Fixture *f, gconstpointer data) {
        FsWork *w = narrow_in_workers(f);
        Subscription *s1 = sub(f, f->a, NULL, IN_CREATE), *s2 = sub(f, f->link_a, NULL, IN_DELETE);
        Watch *wa = s2->links->watch;

        g_assert_cmpuint(dmask(f, s2), ==, IN_CREATE | IN_DELETE);
        watch_table_unsubscribe(f->t, s1);
        g_assert_true(wa->narrowing);
        g_assert_cmpuint(dmask(f, s2), ==, IN_CREATE | IN_DELETE); /* out in a job */
        fswork_settle(w);
        g_assert_false(wa->narrowing);
        g_assert_cmpuint(dmask(f, s2), ==, IN_DELETE);
        g_assert_cmpuint(wa->kernel_mask & ~WATCH_ACCESS_BITS, ==, IN_DELETE);
        watch_table_unsubscribe(f->t, s2);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
        narrow_done_with(f, w);
}

/* A link that needs bits a narrowing not started yet would take away
 * cancels it: the job, when it runs, adds nothing, and the kernel keeps
 * the new link's bits (the job, run, narrowed them away: IN_MODIFY lost). */
static void test_narrow_cancelled(Fixture *f, gconstpointer data) {
        FsWork *w = narrow_in_workers(f);
        Subscription *s1 = sub(f, f->a, NULL, IN_CREATE), *s2 = sub(f, f->a, NULL, IN_DELETE), *s3;
        Blocker b = {};
        unsigned adds;

        block_lane(f, w, &b);
        watch_table_unsubscribe(f->t, s2);
        g_assert_true(s1->links->watch->narrowing);
        s3 = sub(f, f->a, NULL, IN_MODIFY);
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE | IN_DELETE | IN_MODIFY);
        adds = f->fake->n_add;
        unblock_lane(w, &b);
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE | IN_DELETE | IN_MODIFY);
        g_assert_cmpuint(f->fake->n_add, ==, adds); /* cancelled: no add */
        g_assert_false(s1->links->watch->narrowing);

        /* The next link to go narrows to what is needed then. */
        watch_table_unsubscribe(f->t, s3);
        fswork_settle(w);
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE);
        watch_table_unsubscribe(f->t, s1);
        narrow_done_with(f, w);
}

/* A narrowing applied in the kernel whose completion has not run yet: a
 * link that needs more takes the job's mask as the kernel's and widens
 * that (the bits the job took away stay away). */
static void test_narrow_applied(Fixture *f, gconstpointer data) {
        FsWork *w = narrow_in_workers(f);
        Subscription *s1 = sub(f, f->a, NULL, IN_CREATE), *s2 = sub(f, f->a, NULL, IN_DELETE), *s3;

        watch_table_unsubscribe(f->t, s2);
        fswork_await_idle(w); /* done, its completion not run */
        g_assert_true(s1->links->watch->narrowing);
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE);
        s3 = sub(f, f->a, NULL, IN_MODIFY);
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE | IN_MODIFY);
        g_assert_cmpuint(s1->links->watch->kernel_mask & ~WATCH_ACCESS_BITS, ==, IN_CREATE | IN_MODIFY);
        fswork_settle(w); /* the completion finds the job settled: nothing */
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE | IN_MODIFY);
        g_assert_false(s1->links->watch->narrowing);
        watch_table_unsubscribe(f->t, s3);
        watch_table_unsubscribe(f->t, s1);
        narrow_done_with(f, w);
}

/* The watch released while its narrowing waits: the job adds nothing (an
 * add would place the watch again, for no one). */
static void test_narrow_watch_gone(Fixture *f, gconstpointer data) {
        FsWork *w = narrow_in_workers(f);
        Subscription *s1 = sub(f, f->a, NULL, IN_CREATE), *s2 = sub(f, f->a, NULL, IN_DELETE);
        Blocker b = {};
        unsigned adds;

        block_lane(f, w, &b);
        watch_table_unsubscribe(f->t, s2);
        watch_table_unsubscribe(f->t, s1);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
        adds = f->fake->n_add;
        unblock_lane(w, &b);
        g_assert_cmpuint(f->fake->n_add, ==, adds);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
        narrow_done_with(f, w);
}

/* What a job would place on path (watch_table_place(), as a walk's job or an
 * AddWatch's open does on a file system that may stop answering). */
static void place(Fixture *f, const char *path, uint32_t mask, WatchPlaced *p) {
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        watch_table_place(f->t, fd, &st, watch_table_need_mask(mask, 0, S_ISDIR(st.st_mode), true), p);
        close(fd);
        g_assert_cmpint(p->r, ==, 0);
}

/* Its completion: subscribes with what was placed. Return: as watch_table_subscribe(). */
static int sub_placed(Fixture *f, const char *path, uint32_t mask, WatchPlaced *p, Subscription **ret) {
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC), r;

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        watch_table_set_placed(f->t, p);
        r = watch_table_subscribe(f->t, fd, &st, path, NULL, NULL, mask, 0, ret);
        watch_table_set_placed(f->t, NULL);
        close(fd);
        watch_table_placed_done(f->t, p);
        return r;
}

/* A watch a job placed (WatchPlaced): the link takes its wd, and the loop
 * adds nothing (its add would wait for the file system); the watch placed
 * on an inode watched already takes the loop's bits and adds its own
 * (IN_MASK_ADD: no add takes bits away). */
static void test_placed(Fixture *f, gconstpointer data) {
        WatchPlaced p1, p2;
        Subscription *s1 = NULL, *s2 = NULL, *s3;
        unsigned adds;

        f->fake->backend.mask_add = true;
        g_assert_true(watch_table_can_place(f->t));
        watch_table_placing(f->t, true);
        place(f, f->a, IN_CREATE, &p1);
        g_assert_true(p1.created);
        adds = f->fake->n_add;
        g_assert_cmpint(sub_placed(f, f->a, IN_CREATE, &p1, &s1), ==, 0);
        watch_table_placing(f->t, false);
        g_assert_cmpuint(f->fake->n_add, ==, adds); /* no add on the loop */
        g_assert_cmpint(s1->links->watch->wd, ==, p1.wd);
        g_assert_false(p1.lost);
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE);

        s3 = sub(f, f->link_a, NULL, IN_MODIFY); /* the loop's own add: IN_MASK_ADD */
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE | IN_MODIFY);
        watch_table_placing(f->t, true);
        place(f, f->a, IN_DELETE, &p2);
        g_assert_false(p2.created); /* found */
        g_assert_cmpint(p2.wd, ==, p1.wd);
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE | IN_MODIFY | IN_DELETE);
        adds = f->fake->n_add;
        g_assert_cmpint(sub_placed(f, f->a, IN_DELETE, &p2, &s2), ==, 0);
        watch_table_placing(f->t, false);
        g_assert_cmpuint(f->fake->n_add, ==, adds);
        g_assert_true(s2->links->watch == s1->links->watch);
        g_assert_cmpuint(s1->links->watch->kernel_mask & ~WATCH_ACCESS_BITS, ==, IN_CREATE | IN_MODIFY | IN_DELETE);

        watch_table_unsubscribe(f->t, s1);
        watch_table_unsubscribe(f->t, s2);
        watch_table_unsubscribe(f->t, s3);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
}

/* A watch a job found (not made) that the loop removed before the
 * completion is gone from the kernel: the link is -WATCHD_E_PLACED_GONE (to be placed
 * again), not a link on a dead wd. */
static void test_placed_released(Fixture *f, gconstpointer data) {
        Subscription *s1 = sub(f, f->a, NULL, IN_CREATE), *s2 = NULL;
        WatchPlaced p;

        f->fake->backend.mask_add = true;
        watch_table_placing(f->t, true);
        place(f, f->a, IN_DELETE, &p);
        g_assert_false(p.created);
        watch_table_unsubscribe(f->t, s1); /* released: the wd the job found is gone */
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
        g_assert_cmpint(sub_placed(f, f->a, IN_DELETE, &p, &s2), ==, -WATCHD_E_PLACED_GONE);
        watch_table_placing(f->t, false);
        g_assert_cmpuint(watch_table_n_watches(f->t), ==, 0);
        g_assert_cmpuint(watch_table_n_subscriptions(f->t), ==, 0);
}

/* A placed watch no link took stays while other jobs are out (one of them
 * may have found it: it links it), and goes once none is. */
static void test_placed_stray(Fixture *f, gconstpointer data) {
        Subscription *s = NULL;
        WatchPlaced pa, pb, pc;

        f->fake->backend.mask_add = true;
        watch_table_placing(f->t, true); /* job A */
        watch_table_placing(f->t, true); /* job B */
        place(f, f->a, IN_CREATE, &pa);
        place(f, f->a, IN_DELETE, &pb);
        g_assert_true(pa.created);
        g_assert_false(pb.created);
        watch_table_placed_done(f->t, &pa); /* A links nothing */
        watch_table_placing(f->t, false);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 1); /* B is out */
        g_assert_cmpint(sub_placed(f, f->a, IN_DELETE, &pb, &s), ==, 0);
        watch_table_placing(f->t, false);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 1); /* B's link has it */
        g_assert_true(f->fake->watches[s->links->watch->wd].live);
        watch_table_unsubscribe(f->t, s);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);

        watch_table_placing(f->t, true);
        place(f, f->a, IN_CREATE, &pc);
        watch_table_placed_done(f->t, &pc);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 1);
        watch_table_placing(f->t, false); /* no job out: it goes */
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
}

/* A narrowing of the inode whose add lands after the job's placed add
 * took the job's bits away: the completion sets the watch to what its
 * links need again (in a job) and says events may have been lost (the
 * kernel was left without IN_MODIFY). */
static void test_placed_narrowed(Fixture *f, gconstpointer data) {
        FsWork *w = narrow_in_workers(f);
        Subscription *s1 = sub(f, f->a, NULL, IN_CREATE), *s2 = sub(f, f->a, NULL, IN_DELETE), *s3 = NULL;
        WatchPlaced p;

        f->fake->backend.mask_add = true;
        watch_table_placing(f->t, true);
        place(f, f->a, IN_MODIFY, &p);
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE | IN_DELETE | IN_MODIFY);
        watch_table_unsubscribe(f->t, s2);
        fswork_settle(w); /* narrowed to s1's, after the placed add */
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE);
        g_assert_cmpint(sub_placed(f, f->a, IN_MODIFY, &p, &s3), ==, 0);
        watch_table_placing(f->t, false);
        g_assert_true(p.lost);
        fswork_settle(w);
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE | IN_MODIFY);
        watch_table_unsubscribe(f->t, s3);
        watch_table_unsubscribe(f->t, s1);
        narrow_done_with(f, w);
}

/* n empty files in a directory of their own under f->dir (named 0 .. n-1),
 * for the tests that need more inodes than the fixture has. */
static char *make_files(Fixture *f, unsigned n) {
        char *dir = g_build_filename(f->dir, "many", NULL);

        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        for (unsigned i = 0; i < n; i++) {
                g_autofree char *name = g_strdup_printf("%s/%u", dir, i);
                g_assert_true(g_file_set_contents(name, "", 0, NULL));
        }
        return dir;
}

static void remove_files(char *dir, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                g_autofree char *name = g_strdup_printf("%s/%u", dir, i);
                g_assert_cmpint(g_unlink(name), ==, 0);
        }
        g_assert_cmpint(g_rmdir(dir), ==, 0);
        g_free(dir);
}

/* A job that places a watch of its own on the i-th of make_files() and
 * links nothing: a stray. */
static void stray_job(Fixture *f, const char *dir, unsigned i) {
        g_autofree char *name = g_strdup_printf("%s/%u", dir, i);
        WatchPlaced p;

        watch_table_placing(f->t, true);
        place(f, name, IN_MODIFY, &p);
        g_assert_true(p.created);
        watch_table_placed_done(f->t, &p);
        watch_table_placing(f->t, false);
}

/* Past PLACED_STRAYS_MAX strays kept while jobs are out, they are
 * removed at once, not when the last job is done: a job still out that
 * found one of them gets -WATCHD_E_PLACED_GONE at its link. At the limit
 * they are all kept, and a job that found one links it. */
static void test_placed_strays_max(Fixture *f, gconstpointer data) {
        unsigned n = PLACED_STRAYS_MAX - 1; /* with a's and b's, one past the limit */
        char *dir = make_files(f, n);
        Subscription *sb = NULL, *sa = NULL;
        WatchPlaced pa, fa, pb, fb;

        f->fake->backend.mask_add = true;
        watch_table_placing(f->t, true); /* job FA, out to the end */
        watch_table_placing(f->t, true); /* job FB */
        watch_table_placing(f->t, true); /* job A */
        place(f, f->a, IN_CREATE, &pa);
        place(f, f->a, IN_DELETE, &fa);
        g_assert_true(pa.created);
        g_assert_false(fa.created);
        watch_table_placed_done(f->t, &pa); /* A links nothing: stray 1 */
        watch_table_placing(f->t, false);
        watch_table_placing(f->t, true); /* job B */
        place(f, f->b, IN_CREATE, &pb);
        place(f, f->b, IN_DELETE, &fb);
        g_assert_true(pb.created);
        g_assert_false(fb.created);
        watch_table_placed_done(f->t, &pb); /* stray 2 */
        watch_table_placing(f->t, false);
        for (unsigned i = 0; i < n - 1; i++)
                stray_job(f, dir, i);

        /* PLACED_STRAYS_MAX strays: all kept, FB links b's. */
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, PLACED_STRAYS_MAX);
        g_assert_cmpint(sub_placed(f, f->b, IN_DELETE, &fb, &sb), ==, 0);
        watch_table_placing(f->t, false);
        g_assert_cmpint(sb->links->watch->wd, ==, pb.wd);
        g_assert_true(f->fake->watches[pb.wd].live);
        g_assert_true(f->fake->watches[pa.wd].live);

        /* One more: every stray no link took is removed now. */
        stray_job(f, dir, n - 1);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 1); /* b's, FB's link has it */
        g_assert_true(f->fake->watches[pb.wd].live);
        g_assert_false(f->fake->watches[pa.wd].live);
        g_assert_cmpint(sub_placed(f, f->a, IN_DELETE, &fa, &sa), ==, -WATCHD_E_PLACED_GONE);
        watch_table_placing(f->t, false);

        watch_table_unsubscribe(f->t, sb);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
        g_assert_cmpuint(watch_table_n_watches(f->t), ==, 0);
        g_assert_cmpuint(watch_table_n_subscriptions(f->t), ==, 0);
        remove_files(dir, n);
}

/* n removals of watches the table made (each a new wd, on b), counted in the fake backend. */
static void remove_b(Fixture *f, unsigned n) {
        unsigned rms = f->fake->n_rm;

        for (unsigned i = 0; i < n; i++)
                watch_table_unsubscribe(f->t, sub(f, f->b, NULL, IN_MODIFY));
        g_assert_cmpuint(f->fake->n_rm - rms, ==, n);
}

/* The table keeps the last PLACED_RELEASED_MAX removals made while
 * jobs are out; a watch placed before an older one counts as gone
 * (-WATCHD_E_PLACED_GONE) if the loop does not know it, though the kernel
 * may still have it. What counts is the removals since each job's own add:
 * a job that never ends (a lane whose file system stopped: here the first
 * placing(true), never ended) does not make the others' watches gone. */
static void test_placed_released_full(Fixture *f, gconstpointer data) {
        Subscription *sa = NULL, *sd = NULL, *sd2 = NULL;
        WatchPlaced pa, fa, pd, fd, fd2;

        f->fake->backend.mask_add = true;
        watch_table_placing(f->t, true); /* a job out the whole time */
        place(f, f->a, IN_CREATE, &pa);
        place(f, f->a, IN_DELETE, &fa);
        place(f, f->dir, IN_CREATE, &pd);
        place(f, f->dir, IN_DELETE, &fd);
        g_assert_true(pa.created && pd.created);
        g_assert_false(fa.created || fd.created);

        /* PLACED_RELEASED_MAX removals since the adds, none of their wds: all kept, a's links. */
        remove_b(f, PLACED_RELEASED_MAX);
        g_assert_cmpint(sub_placed(f, f->a, IN_DELETE, &fa, &sa), ==, 0);
        g_assert_cmpint(sa->links->watch->wd, ==, pa.wd);

        /* One more: the oldest forgotten, the directory's watch (placed before it) may be gone. */
        remove_b(f, 1);
        g_assert_true(f->fake->watches[fd.wd].live); /* it is not, but the table cannot know */
        g_assert_cmpint(sub_placed(f, f->dir, IN_DELETE, &fd, &sd), ==, -WATCHD_E_PLACED_GONE);

        /* Another job, whose add came after those removals, while the first is
         * still out: it finds the same watch, and links. */
        watch_table_placing(f->t, true);
        place(f, f->dir, IN_DELETE, &fd2);
        g_assert_false(fd2.created);
        g_assert_cmpuint(fd2.wd, ==, pd.wd);
        remove_b(f, 1); /* a removal after its add, of another wd: kept, and not its */
        g_assert_cmpint(sub_placed(f, f->dir, IN_DELETE, &fd2, &sd2), ==, 0);
        g_assert_cmpint(sd2->links->watch->wd, ==, pd.wd);
        watch_table_placing(f->t, false);

        watch_table_placed_done(f->t, &pa);
        watch_table_placed_done(f->t, &pd);
        watch_table_placing(f->t, false);
        watch_table_unsubscribe(f->t, sa);
        watch_table_unsubscribe(f->t, sd2);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
        g_assert_cmpuint(watch_table_n_subscriptions(f->t), ==, 0);
}

/* n narrowings of b's watch (which a link that needs less than IN_CLOSE_WRITE keeps), each run to its end. */
static void narrow_b(Fixture *f, FsWork *w, unsigned n) {
        uint64_t seq = narrower_seq();

        for (unsigned i = 0; i < n; i++) {
                watch_table_unsubscribe(f->t, sub(f, f->b, NULL, IN_CLOSE_WRITE));
                fswork_settle(w);
        }
        g_assert_cmpuint(narrower_seq() - seq, ==, n);
}

/* test_placed_narrowed() with n_others narrowings of another inode after
 * a's: the completion finds that a's narrowing may have landed after the
 * job's add. With more than NARROWER_TOUCHED_RING narrowings since, a's
 * call is no longer in the ring: narrower_touched() must say "may have"
 * then, not "did not" (which took the placed bits as the kernel's while a's
 * narrowing had taken IN_MODIFY away for good). */
static void placed_narrowed_then(Fixture *f, FsWork *w, Subscription *s1, unsigned n_others) {
        Subscription *s2 = sub(f, f->a, NULL, IN_DELETE), *s3 = NULL;
        struct stat st, st_dir;
        WatchPlaced p;

        g_assert_cmpint(stat(f->a, &st), ==, 0);
        g_assert_cmpint(stat(f->dir, &st_dir), ==, 0);
        watch_table_placing(f->t, true);
        place(f, f->a, IN_MODIFY, &p);
        watch_table_unsubscribe(f->t, s2);
        fswork_settle(w); /* a narrowed to s1's, after the placed add: IN_MODIFY gone */
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE);
        narrow_b(f, w, n_others);
        g_assert_cmpuint(narrower_seq() - p.seq, ==, 1 + n_others);
        g_assert_true(narrower_touched(st.st_dev, st.st_ino, p.seq));
        /* The ring's answers for the calls it still holds: exact. */
        g_assert_false(narrower_touched(st.st_dev, st.st_ino, narrower_seq() - MIN(n_others, NARROWER_TOUCHED_RING)));
        /* Never narrowed: not touched while the ring holds every call since, may have past it. */
        g_assert_true(narrower_touched(st_dir.st_dev, st_dir.st_ino, p.seq) == (1 + n_others > NARROWER_TOUCHED_RING));

        g_assert_cmpint(sub_placed(f, f->a, IN_MODIFY, &p, &s3), ==, 0);
        watch_table_placing(f->t, false);
        g_assert_true(p.lost);
        fswork_settle(w); /* set again to what the links need */
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE | IN_MODIFY);
        watch_table_unsubscribe(f->t, s3);
        fswork_settle(w);
        g_assert_cmpuint(dmask(f, s1), ==, IN_CREATE);
}

/* The ring of the narrowings' kernel calls (narrower_touched()) at its
 * size (every call since the job's add in it) and past it (a's call
 * overwritten by a later one). */
static void test_placed_narrower_ring(Fixture *f, gconstpointer data) {
        FsWork *w = narrow_in_workers(f);
        Subscription *s1 = sub(f, f->a, NULL, IN_CREATE), *sb;

        f->fake->backend.mask_add = true;
        sb = sub(f, f->b, NULL, IN_MODIFY);
        placed_narrowed_then(f, w, s1, NARROWER_TOUCHED_RING - 1);
        placed_narrowed_then(f, w, s1, NARROWER_TOUCHED_RING);
        placed_narrowed_then(f, w, s1, 2 * NARROWER_TOUCHED_RING);
        watch_table_unsubscribe(f->t, sb);
        watch_table_unsubscribe(f->t, s1);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
        narrow_done_with(f, w);
}

static bool has_id(GArray *ids, uint32_t id) {
        for (guint i = 0; i < ids->len; i++)
                if (g_array_index(ids, uint32_t, i) == id)
                        return true;
        return false;
}

/* A PERSIST subscription: its root asks the kernel for IN_MOVE_SELF (only
 * its root, and only while it is placed); a rename of its directory or of
 * one above it names it (watch_table_persist_at(), and moves_on_event() at
 * the IN_MOVED_FROM, which the rename follower sees on the parent's watch);
 * made pending (watch_table_unplace()) it holds no link and is named no
 * more. A subscription without PERSIST is never named. */
static void test_persist(Fixture *f, gconstpointer data) {
        Client *c = (Client *) 0x1;
        g_autofree char *below = g_build_filename(f->a, "sub", NULL);
        g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(uint32_t));
        Subscription *plain, *persist, *parent;
        Moves *mv = NULL;
        Watch *pw;
        RawEvent ev = { .mask = IN_MOVED_FROM | IN_ISDIR, .cookie = 7, .name = "a", .name_len = 1 };

        plain = sub(f, f->a, c, IN_CREATE | IN_DELETE_SELF);
        g_assert_false(kmask(f, plain) & IN_MOVE_SELF);
        persist = sub_flags(f, f->a, c, IN_CREATE | IN_DELETE_SELF, WATCHD_FLAG_PERSIST);
        g_assert_true(persist->links->watch == plain->links->watch); /* one kernel watch */
        g_assert_true(kmask(f, plain) & IN_MOVE_SELF);
        parent = sub(f, f->dir, c, IN_CREATE);
        g_assert_false(kmask(f, parent) & IN_MOVE_SELF);

        g_assert_cmpint(watch_table_persist_at(f->t, f->a, ids), ==, 1);
        g_assert_true(has_id(ids, persist->id));
        g_array_set_size(ids, 0);
        g_assert_cmpint(watch_table_persist_at(f->t, f->dir, ids), ==, 1); /* a directory above */
        g_assert_true(has_id(ids, persist->id));
        g_array_set_size(ids, 0);
        g_assert_cmpint(watch_table_persist_at(f->t, below, ids), ==, 0); /* below it: not its path */
        g_assert_cmpint(watch_table_persist_at(f->t, f->b, ids), ==, 0);  /* a sibling */
        g_assert_cmpuint(ids->len, ==, 0);

        /* The parent's watch sees a renamed away: the follower names it. */
        g_assert_cmpint(moves_new(f->t, &mv), ==, 0);
        pw = parent->links->watch;
        ev.wd = pw->wd;
        moves_on_event(mv, pw, &ev, ids);
        g_assert_cmpuint(ids->len, ==, 1);
        g_assert_true(has_id(ids, persist->id));
        g_array_set_size(ids, 0);
        /* A file's rename is not followed there; the caller may pass no array. */
        ev.mask = IN_MOVED_FROM;
        ev.cookie = 8;
        moves_on_event(mv, pw, &ev, ids);
        g_assert_cmpuint(ids->len, ==, 0);
        ev.mask = IN_MOVED_FROM | IN_ISDIR;
        ev.cookie = 9;
        moves_on_event(mv, pw, &ev, NULL);
        moves_free(mv);

        /* Pending again: no link, the kernel no longer asked for IN_MOVE_SELF, not named. */
        watch_table_unplace(f->t, persist);
        g_assert_true(persist->pending);
        g_assert_null(persist->links);
        g_assert_false(kmask(f, plain) & IN_MOVE_SELF);
        g_assert_cmpint(watch_table_persist_at(f->t, f->dir, ids), ==, 0);
        watch_table_unsubscribe(f->t, persist);
        watch_table_unsubscribe(f->t, plain);
        watch_table_unsubscribe(f->t, parent);
        g_assert_cmpuint(watch_table_n_subscriptions(f->t), ==, 0);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        for (size_t i = 0; i < G_N_ELEMENTS(scenarios); i++) {
                g_autofree char *name = g_strdup_printf("/watch-table/%s", scenarios[i].what);
                g_test_add(name, Fixture, &scenarios[i], setup, test_scenario, teardown);
        }
        g_test_add("/watch-table/kernel refuses", Fixture, NULL, setup, test_enospc, teardown);
        g_test_add("/watch-table/dev-too-large", Fixture, NULL, setup, test_dev_too_large, teardown);
        g_test_add("/watch-table/watch gone", Fixture, NULL, setup, test_watch_gone, teardown);
        g_test_add("/watch-table/wd reused", Fixture, NULL, setup, test_wd_reuse, teardown);
        g_test_add("/watch-table/links of a recursive subscription", Fixture, NULL, setup, test_links, teardown);
        g_test_add("/watch-table/dead-link", Fixture, NULL, setup, test_dead_link, teardown);
        g_test_add("/watch-table/persist", Fixture, NULL, setup, test_persist, teardown);
        g_test_add("/watch-table/narrow-job", Fixture, NULL, setup, test_narrow_job, teardown);
        g_test_add("/watch-table/narrow-cancelled", Fixture, NULL, setup, test_narrow_cancelled, teardown);
        g_test_add("/watch-table/narrow-applied", Fixture, NULL, setup, test_narrow_applied, teardown);
        g_test_add("/watch-table/narrow-watch-gone", Fixture, NULL, setup, test_narrow_watch_gone, teardown);
        g_test_add("/watch-table/placed", Fixture, NULL, setup, test_placed, teardown);
        g_test_add("/watch-table/placed-released", Fixture, NULL, setup, test_placed_released, teardown);
        g_test_add("/watch-table/placed-stray", Fixture, NULL, setup, test_placed_stray, teardown);
        g_test_add("/watch-table/placed-narrowed", Fixture, NULL, setup, test_placed_narrowed, teardown);
        g_test_add("/watch-table/placed-strays-max", Fixture, NULL, setup, test_placed_strays_max, teardown);
        g_test_add("/watch-table/placed-released-full", Fixture, NULL, setup, test_placed_released_full, teardown);
        g_test_add("/watch-table/placed-narrower-ring", Fixture, NULL, setup, test_placed_narrower_ring, teardown);
        return g_test_run();
}
