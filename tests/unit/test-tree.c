/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-tree - the RECURSIVE follower alone, on the watch table, the fake
 * backend (fake-backend.h) and a delivery queue whose transport is a sink:
 * the walk below a root, a new directory followed and what it holds
 * reported, a rename inside the tree keeping its links, a move out of it
 * unlinking, renames to names of every size (a link's memory moves), a
 * limit met half-way (the callback ends the subscription).
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <limits.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "client.h"
#include "error.h"
#include "fake-backend.h"
#include "tree.h"
#include "watchd-api.h"

typedef struct Fixture {
        FakeBackend *fake;
        WatchTable *t;
        Accounting *a;
        Delivery *d;
        Client *c;
        Tree *tree;
        SelfEvents *self;
        GPtrArray *paths; /* what the sink was sent */
        unsigned ended;
        gid_t gid;
        char *dir;
} Fixture;

static int sink_events(DeliveryQueue *q, Record **recs, size_t n, void *data) {
        Fixture *f = data;

        for (size_t i = 0; i < n; i++) {
                g_ptr_array_add(f->paths, g_strdup(recs[i]->path));
                record_free(recs[i]);
        }
        delivery_sent(q, n);
        return 0;
}

static int sink_notice(DeliveryQueue *q, const Record *rec, const uint32_t *ids, size_t n, void *data) {
        Fixture *f = data;

        g_ptr_array_add(f->paths, g_strdup(rec->kind == RECORD_OVERFLOW ? "overflow" : "removed"));
        return 0;
}

static const DeliveryOps sink_ops = { .send_events = sink_events, .send_notice = sink_notice };

static void on_end(Subscription *s, void *userdata) {
        Fixture *f = userdata;

        f->ended++;
        client_unlink_subscription(s->owner, s);
        watch_table_unsubscribe(f->t, s);
}

static void setup(Fixture *f, gconstpointer data) {
        const AccountingLimits *l = data;
        DeliveryLimits dl = { .max_pending = 1000,
                              .max_bytes = UINT64_MAX,
                              .max_pending_user = UINT32_MAX,
                              .max_bytes_user = UINT64_MAX,
                              .batch_max = 100,
                              .pair_timeout_usec = 0,
                              .pair_max_distance = 1 };
        Caller caller;

        f->fake = fake_backend_new();
        g_assert_cmpint(watch_table_new(&f->fake->backend, &f->t), ==, 0);
        g_assert_cmpint(self_events_new(f->t, &f->fake->backend, &f->self), ==, 0);
        g_assert_cmpint(accounting_new(l, &f->a), ==, 0);
        g_assert_cmpint(delivery_new(&dl, &f->d), ==, 0);
        f->gid = getgid();
        caller = (Caller) { .uid = getuid(), .gid = f->gid, .gids = &f->gid, .n_gids = 1 };
        g_assert_cmpint(client_new(f->a, f->d, "c", &caller, &f->c), ==, 0);
        delivery_queue_set_transport(&f->c->queue, &sink_ops, f);
        g_assert_cmpint(tree_new(f->t, &f->fake->backend, f->self, &(TreeOps) { .end = on_end }, f, &f->tree), ==, 0);
        f->paths = g_ptr_array_new_with_free_func(g_free);
        f->dir = g_dir_make_tmp("test-tree-XXXXXX", NULL);
        g_assert_nonnull(f->dir);
}

static void teardown(Fixture *f, gconstpointer data) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->dir);

        tree_free(f->tree);
        self_events_free(f->self);
        while (f->c->subscriptions)
                on_end(f->c->subscriptions, f);
        watch_table_free(f->t);
        client_free(f->c);
        delivery_free(f->d);
        accounting_free(f->a);
        fake_backend_free(f->fake);
        g_ptr_array_unref(f->paths);
        g_assert_cmpint(system(cmd), ==, 0);
        g_free(f->dir);
}

static void mk(Fixture *f, const char *rel) {
        g_autofree char *p = g_build_filename(f->dir, rel, NULL);

        g_assert_cmpint(g_mkdir_with_parents(p, 0755), ==, 0);
}

/* Subscribes RECURSIVE to f->dir and walks it. Return: the walk's result. */
static int subscribe(Fixture *f, Subscription **ret) {
        TreeWalk *walk = NULL;
        struct stat st;
        int fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(watch_table_subscribe(f->t, fd, &st, f->dir, f->c, &f->c->account, IN_CREATE,
                                              WATCHD_FLAG_RECURSIVE, ret),
                        ==, 0);
        client_link_subscription(f->c, *ret);
        r = tree_walk_below(f->tree, *ret, fd, /* all_or_nothing= */ true, &walk);
        g_assert_null(walk);
        close(fd);
        return r;
}

static const AccountingLimits roomy = { 1000, 1000, 1000, 10 };
static const AccountingLimits tight = { 3, 1000, 1000, 10 };

static void test_walk(Fixture *f, gconstpointer data) {
        Subscription *s;

        mk(f, "a/b/c");
        mk(f, "d");
        g_assert_cmpint(subscribe(f, &s), ==, 0);
        g_assert_cmpuint(s->n_links, ==, 5);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 5);
        g_assert_cmpuint(f->c->account.n_watches, ==, 5);
        g_assert_false(tree_has_walks(f->tree));
}

/* A new directory: linked, and what it already holds reported, once. */
static void test_add(Fixture *f, gconstpointer data) {
        g_autofree char *n = g_build_filename(f->dir, "n", NULL), *nf = g_build_filename(f->dir, "n/f", NULL);
        Subscription *s;

        g_assert_cmpint(subscribe(f, &s), ==, 0);
        mk(f, "n/sub");
        g_assert_true(g_file_set_contents(nf, "", 0, NULL));
        tree_add(f->tree, s, n, /* synthesize= */ true, 0);
        delivery_flush(f->d, 0);
        g_assert_cmpuint(s->n_links, ==, 3);
        g_assert_cmpuint(f->paths->len, ==, 2);                               /* n/f and n/sub */
        g_assert_true(tree_scanned_check(f->tree, s, n, IN_CREATE, "f", 1));  /* the kernel's own: dropped */
        g_assert_false(tree_scanned_check(f->tree, s, n, IN_CREATE, "f", 1)); /* once */
}

/* a/b/c and d, watched: the kernel watches added so far. */
static unsigned subscribe_abcd(Fixture *f, Subscription **ret) {
        mk(f, "a/b/c");
        mk(f, "d");
        g_assert_cmpint(subscribe(f, ret), ==, 0);
        return f->fake->n_add;
}

/* Renames from to to, and tells the tree as the kernel would: the links
 * kept (no new kernel watch). */
static void rename_in_tree(Fixture *f, Subscription *s, const char *from, const char *to, uint32_t cookie) {
        unsigned adds = f->fake->n_add;

        g_assert_cmpint(g_rename(from, to), ==, 0);
        tree_moved_from(f->tree, s, from, cookie);
        g_assert_true(tree_moves_pending(f->tree, cookie));
        tree_moved_to(f->tree, s, to, cookie, 0);
        tree_moves_end(f->tree);
        g_assert_cmpuint(f->fake->n_add, ==, adds);
        g_assert_cmpuint(s->n_links, ==, 5);
}

/* A rename inside the tree keeps the links (no new kernel watch); a move out unlinks. */
static void test_moves(Fixture *f, gconstpointer data) {
        g_autofree char *from = g_build_filename(f->dir, "a/b", NULL), *to = g_build_filename(f->dir, "d/b", NULL);
        Subscription *s;

        (void) subscribe_abcd(f, &s);
        rename_in_tree(f, s, from, to, 7);

        /* d/b leaves the tree: unlinked with c. */
        tree_moved_from(f->tree, s, to, 8);
        tree_moves_end(f->tree);
        g_assert_cmpuint(s->n_links, ==, 3);
        g_assert_cmpuint(f->c->account.n_watches, ==, 3);
}

/* A directory renamed in the tree to names of every size keeps its links:
 * a link's memory comes from a pool of its name's size (watch_link.c), so
 * a rename to another size moves it, and what points at it follows (its
 * child's parent, its watch's list, the hold of a pending move). */
static void test_moves_resize(Fixture *f, gconstpointer data) {
        static const size_t lens[] = { 1, 6, 7, 40, 64, 65, 200, 255, 3, 70, 1 };
        g_autofree char *from = g_build_filename(f->dir, "a/b", NULL);
        Subscription *s;
        unsigned adds = subscribe_abcd(f, &s);

        for (size_t i = 0; i < G_N_ELEMENTS(lens); i++) {
                g_autofree char *name = g_strnfill(lens[i], (char) ('e' + i));
                g_autofree char *to = g_build_filename(f->dir, i % 2 ? "a" : "d", name, NULL);
                g_autofree char *c_path = g_build_filename(to, "c", NULL);
                char buf[PATH_MAX];
                WatchLink *parent, *l, *c;

                rename_in_tree(f, s, from, to, 10 + (uint32_t) i);
                g_assert_cmpuint(f->fake->n_add, ==, adds);

                parent = watch_link_child(s->links, i % 2 ? "a" : "d", 1);
                g_assert_nonnull(parent);
                l = watch_link_child(parent, name, lens[i]);
                g_assert_nonnull(l);
                g_assert_true(watch_link_parent(l) == parent);
                c = watch_link_child(l, "c", 1);
                g_assert_nonnull(c);
                g_assert_true(watch_link_parent(c) == l);
                g_assert_cmpint(watch_link_path(c, buf, sizeof(buf)), ==, (int) strlen(c_path));
                g_assert_cmpstr(buf, ==, c_path);
                g_assert_true(l->watch->links == l && !l->watch_next);
                g_free(from);
                from = g_strdup(to);
        }
}

/* AddWatch's walk meets a limit half-way: the whole tree or nothing. */
static void test_limit(Fixture *f, gconstpointer data) {
        Subscription *s;

        mk(f, "a/b/c");
        mk(f, "d");
        g_assert_cmpint(subscribe(f, &s), ==, -WATCHD_E_CLIENT_WATCHES);
        g_assert_cmpuint(f->ended, ==, 1);
        g_assert_cmpuint(f->c->n_subscriptions, ==, 0);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
        g_assert_cmpuint(f->c->account.n_watches, ==, 0);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/tree/walk", Fixture, &roomy, setup, test_walk, teardown);
        g_test_add("/tree/add", Fixture, &roomy, setup, test_add, teardown);
        g_test_add("/tree/moves", Fixture, &roomy, setup, test_moves, teardown);
        g_test_add("/tree/moves-resize", Fixture, &roomy, setup, test_moves_resize, teardown);
        g_test_add("/tree/limit", Fixture, &tight, setup, test_limit, teardown);
        return g_test_run();
}
