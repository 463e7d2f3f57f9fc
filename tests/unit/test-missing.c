/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-missing - the missing-path follower alone, on the watch table and
 * the fake backend (fake-backend.h), its callbacks recorded: chains shared
 * by credentials, a path followed down when it appears, what cannot be
 * watched appearing, a directory of a chain going, and a look-up begun in
 * worker threads (missing_start(), with a real FsWork): answered through
 * ops->found once at rest, taken back by a removal. Real directories in a
 * temporary directory; the test calls missing_on_event() and
 * missing_on_watch_gone() as the event path would.
 */

#include <errno.h>
#include <glib.h>
#include <poll.h>
#include <glib/gstdio.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "fake-backend.h"
#include "missing.h"
#include "watchd-api.h"

typedef struct Fixture {
        FakeBackend *fake;
        WatchTable *t;
        Accounting *a;
        Account account;
        Missing *m;
        Caller caller, other;
        gid_t gid, gids2[2];
        GArray *appeared, *gone, *found; /* subscription ids */
        int gone_error, found_error;
        char *dir;
        FsWork *w; /* missing_start()'s workers, if the case has them */
} Fixture;

static int on_appeared(Subscription *s, int fd, const struct stat *st, const RemoteHint *hint, void *userdata) {
        Fixture *f = userdata;

        g_assert_cmpint(fd, >=, 0);
        g_array_append_val(f->appeared, s->id);
        return watch_table_link_root(f->t, s, fd, st);
}

static void on_gone(Subscription *s, int r, void *userdata) {
        Fixture *f = userdata;

        g_array_append_val(f->gone, s->id);
        f->gone_error = r;
        watch_table_unsubscribe(f->t, s);
}

static void on_found(uint32_t id, int r, void *userdata) {
        Fixture *f = userdata;

        g_array_append_val(f->found, id);
        f->found_error = r;
}

static void setup(Fixture *f, gconstpointer data) {
        AccountingLimits l = { 1000000, 1000000, 1000000, 100 };

        f->fake = fake_backend_new();
        g_assert_cmpint(watch_table_new(&f->fake->backend, &f->t), ==, 0);
        g_assert_cmpint(accounting_new(&l, &f->a), ==, 0);
        g_assert_cmpint(account_open(f->a, getuid(), &f->account), ==, 0);
        g_assert_cmpint(missing_new(f->t, &(MissingOps) { .appeared = on_appeared, .gone = on_gone, .found = on_found },
                                    f, &f->m),
                        ==, 0);
        f->gid = getgid();
        f->caller = (Caller) { .uid = getuid(), .gid = f->gid, .gids = &f->gid, .n_gids = 1 };
        /* The same uid with one group more: other credentials, another chain. */
        f->gids2[0] = f->gid;
        f->gids2[1] = f->gid + 1;
        f->other = (Caller) { .uid = getuid(), .gid = f->gid, .gids = f->gids2, .n_gids = 2 };
        f->appeared = g_array_new(FALSE, FALSE, sizeof(uint32_t));
        f->gone = g_array_new(FALSE, FALSE, sizeof(uint32_t));
        f->found = g_array_new(FALSE, FALSE, sizeof(uint32_t));
        f->dir = g_dir_make_tmp("test-missing-XXXXXX", NULL);
        g_assert_nonnull(f->dir);
}

static void teardown(Fixture *f, gconstpointer data) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->dir);

        /* As in the daemon: the pool first (its completions with -ESHUTDOWN). */
        fswork_free(f->w);
        missing_free(f->m);
        watch_table_free(f->t);
        account_close(&f->account);
        accounting_free(f->a);
        fake_backend_free(f->fake);
        g_array_unref(f->appeared);
        g_array_unref(f->gone);
        g_array_unref(f->found);
        g_assert_cmpint(system(cmd), ==, 0);
        g_free(f->dir);
}

static unsigned chain_len(const char *dir) {
        unsigned n = 1;

        for (const char *p = dir; *p; p++)
                n += *p == '/';
        return n;
}

static Subscription *pending(Fixture *f, const char *rel, uint32_t flags, const Caller *caller) {
        g_autofree char *path = g_build_filename(f->dir, rel, NULL);
        Subscription *s = NULL;

        g_assert_cmpint(watch_table_subscribe_pending(f->t, path, NULL, &f->account, IN_MODIFY, flags, &s), ==, 0);
        g_assert_cmpint(missing_add(f->m, s, caller), ==, 0);
        return s;
}

/* The first chain link on the directory at rel ("" for f->dir). */
static WatchLink *chain_link(Fixture *f, const char *rel) {
        g_autofree char *path = g_build_filename(f->dir, rel, NULL);
        Watch *w = watch_table_get_watch(f->t, fake_backend_wd(f->fake, path));

        g_assert_nonnull(w);
        LIST_FOREACH(watch, l, w->links)
                if (watch_link_subscription(l)->chain)
                        return l;
        g_assert_not_reached();
}

/* Waiters with the same credentials share one chain; other credentials get their own links,
 * on the same kernel watches. Each waiter is charged as if it had its chain alone. */
static void test_shared(Fixture *f, gconstpointer data) {
        unsigned n = chain_len(f->dir);

        pending(f, "a/b/x", 0, &f->caller);
        pending(f, "a/c/y", 0, &f->caller);
        pending(f, "z", 0, &f->caller);
        g_assert_cmpuint(missing_n_waiting(f->m), ==, 3);
        g_assert_cmpuint(missing_n_links(f->m), ==, n);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, n);
        g_assert_cmpuint(f->account.n_watches, ==, 3 * n);

        pending(f, "a/b/x", 0, &f->other);
        g_assert_cmpuint(missing_n_links(f->m), ==, 2 * n);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, n);
}

/* A component appears: followed down from where it appeared, once for all; the path placed. */
static void test_appears(Fixture *f, gconstpointer data) {
        g_autofree char *ab = g_build_filename(f->dir, "a/b", NULL), *x = g_build_filename(f->dir, "a/b/x", NULL);
        Subscription *s1 = pending(f, "a/b/x", 0, &f->caller), *s2 = pending(f, "a/b/c/y", 0, &f->caller);
        unsigned n = chain_len(f->dir), adds;

        g_assert_cmpint(g_mkdir_with_parents(ab, 0755), ==, 0);
        g_assert_true(g_file_set_contents(x, "", 0, NULL));
        adds = f->fake->n_add;
        missing_on_event(f->m, chain_link(f, ""), IN_CREATE | IN_ISDIR, "a", 1);
        while (missing_run(f->m, 100000))
                ;
        /* a and b linked once for both; x placed (its root link). */
        g_assert_cmpuint(f->fake->n_add - adds, ==, 3);
        g_assert_cmpuint(f->appeared->len, ==, 1);
        g_assert_cmpuint(g_array_index(f->appeared, uint32_t, 0), ==, s1->id);
        g_assert_false(s1->pending);
        g_assert_true(s2->pending);
        g_assert_cmpuint(missing_n_links(f->m), ==, n + 2);
        /* s2 waits in b: charged the chain down to it; s1 its root link. */
        g_assert_cmpuint(f->account.n_watches, ==, n + 2 + 1);

        /* b goes: the chain below a is cut, s2 climbs to a and waits there. */
        {
                g_autofree char *away = g_build_filename(f->dir, "a/away", NULL);

                g_assert_cmpint(g_rename(ab, away), ==, 0);
        }
        missing_on_event(f->m, chain_link(f, "a"), IN_MOVED_FROM | IN_ISDIR, "b", 1);
        g_assert_cmpuint(missing_n_links(f->m), ==, n + 1);
        g_assert_cmpuint(f->account.n_watches, ==, n + 1 + 1);
        missing_remove(f->m, s2);
        g_assert_cmpuint(missing_n_links(f->m), ==, 0);
        g_assert_cmpuint(f->account.n_watches, ==, 1);
}

/* The kernel's queue overflowed, the events of what appeared and went lost: a recheck follows
 * every waiter from where it waits. Failed before missing_recheck() (the waiter stayed put). */
static void test_recheck(Fixture *f, gconstpointer data) {
        g_autofree char *ab = g_build_filename(f->dir, "a/b", NULL), *x = g_build_filename(f->dir, "a/b/x", NULL),
                        *c = g_build_filename(f->dir, "c", NULL);
        Subscription *s1 = pending(f, "a/b/x", 0, &f->caller), *s2 = pending(f, "c/d/y", 0, &f->caller);
        unsigned n = chain_len(f->dir);

        g_assert_cmpint(g_mkdir(c, 0755), ==, 0);
        missing_on_event(f->m, chain_link(f, ""), IN_CREATE | IN_ISDIR, "c", 1);
        g_assert_cmpuint(missing_n_links(f->m), ==, n + 1);
        /* No events for these: a and b appear, c goes. */
        g_assert_cmpint(g_mkdir_with_parents(ab, 0755), ==, 0);
        g_assert_true(g_file_set_contents(x, "", 0, NULL));
        g_assert_cmpint(g_rmdir(c), ==, 0);
        missing_recheck(f->m);
        while (missing_run(f->m, 100000))
                ;
        g_assert_cmpuint(f->appeared->len, ==, 1);
        g_assert_cmpuint(g_array_index(f->appeared, uint32_t, 0), ==, s1->id);
        g_assert_false(s1->pending);
        /* s2 climbed back to the top: c's link is gone. */
        g_assert_true(s2->pending);
        g_assert_cmpuint(missing_n_links(f->m), ==, n);
        g_assert_cmpuint(missing_n_waiting(f->m), ==, 1);
}

/* What appears cannot be watched for the flags (ONLYDIR, a file): the waiter is gone. */
static void test_not_watchable(Fixture *f, gconstpointer data) {
        g_autofree char *x = g_build_filename(f->dir, "x", NULL);
        Subscription *s = pending(f, "x", WATCHD_FLAG_ONLYDIR, &f->caller);
        uint32_t id = s->id;

        g_assert_true(g_file_set_contents(x, "", 0, NULL));
        missing_on_event(f->m, chain_link(f, ""), IN_CREATE, "x", 1);
        g_assert_cmpuint(f->gone->len, ==, 1);
        g_assert_cmpuint(g_array_index(f->gone, uint32_t, 0), ==, id);
        g_assert_cmpint(f->gone_error, ==, -ENOTDIR);
        g_assert_cmpuint(missing_n_waiting(f->m), ==, 0);
        g_assert_cmpuint(f->account.n_watches, ==, 0);
}

/* The kernel drops the watch of a directory of the chain (it was deleted): the waiters climb. */
static void test_watch_gone(Fixture *f, gconstpointer data) {
        g_autofree char *a = g_build_filename(f->dir, "a", NULL);
        unsigned n = chain_len(f->dir);

        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        pending(f, "a/x", 0, &f->caller);
        WatchLink *l;

        g_assert_cmpuint(missing_n_links(f->m), ==, n + 1);
        l = chain_link(f, "a");
        g_assert_cmpint(g_rmdir(a), ==, 0);
        missing_on_watch_gone(f->m, l);
        g_assert_cmpuint(missing_n_links(f->m), ==, n);
        g_assert_cmpuint(missing_n_waiting(f->m), ==, 1);
        g_assert_cmpuint(f->account.n_watches, ==, n);
}

/* A placed subscription made pending again (a PERSIST one whose object left
 * its path, watch_table_unplace()) is followed like a new one: placed at once
 * through ops->appeared if its path is there, else when it appears; charged
 * its chain meanwhile, its root link after. */
static void test_follow_again(Fixture *f, gconstpointer data) {
        g_autofree char *d = g_build_filename(f->dir, "d", NULL);
        Subscription *s;
        unsigned n = chain_len(f->dir);

        g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        s = pending(f, "d", WATCHD_FLAG_PERSIST, &f->caller); /* there already: placed at once */
        g_assert_false(s->pending);
        g_assert_cmpuint(f->appeared->len, ==, 1);
        g_assert_cmpuint(f->account.n_watches, ==, 1);

        /* Its object goes; made pending again while the path is there (replaced at once). */
        watch_table_unplace(f->t, s);
        g_assert_true(s->pending);
        g_assert_cmpuint(f->account.n_watches, ==, 0);
        g_assert_cmpint(missing_add(f->m, s, &f->caller), ==, 0);
        g_assert_false(s->pending);
        g_assert_cmpuint(f->appeared->len, ==, 2);

        /* Gone for good this time: it waits on its path. */
        g_assert_cmpint(g_rmdir(d), ==, 0);
        watch_table_unplace(f->t, s);
        g_assert_cmpint(missing_add(f->m, s, &f->caller), ==, 0);
        g_assert_true(s->pending);
        g_assert_cmpuint(missing_n_waiting(f->m), ==, 1);
        g_assert_cmpuint(f->account.n_watches, ==, n);

        g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        missing_on_event(f->m, chain_link(f, ""), IN_CREATE | IN_ISDIR, "d", 1);
        g_assert_false(s->pending);
        g_assert_cmpuint(f->appeared->len, ==, 3);
        g_assert_cmpuint(missing_n_waiting(f->m), ==, 0);
        g_assert_cmpuint(missing_n_links(f->m), ==, 0);
        g_assert_cmpuint(f->account.n_watches, ==, 1);
        g_assert_cmpuint(f->gone->len, ==, 0);
}

static const FsWorkOps no_ops = {};

static void start_workers(Fixture *f) {
        g_assert_cmpint(fswork_new(&no_ops, NULL, &f->w), ==, 0);
        missing_set_fswork(f->m, f->w);
}

/* Completions dispatched until n look-ups were answered and no job is left, within a generous bound. */
static void dispatch_until_found(Fixture *f, guint n) {
        for (int i = 0; i < 6000; i++) {
                struct pollfd p = { .fd = fswork_fd(f->w), .events = POLLIN };
                FsWorkStats st;

                fswork_get_stats(f->w, &st);
                if (f->found->len >= n && st.running == 0 && st.queued == 0 && poll(&p, 1, 0) == 0)
                        break;
                (void) poll(&p, 1, 10);
                fswork_dispatch(f->w);
        }
        g_assert_cmpuint(f->found->len, ==, n);
}

static Subscription *start(Fixture *f, const char *rel, const Caller *caller) {
        g_autofree char *path = g_build_filename(f->dir, rel, NULL);
        Subscription *s = NULL;

        g_assert_cmpint(watch_table_subscribe_pending(f->t, path, NULL, &f->account, IN_MODIFY, 0, &s), ==, 0);
        g_assert_cmpint(missing_start(f->m, s, caller), ==, 1);
        return s;
}

/* With workers, nothing of the look-up is done inside missing_start(): its
 * answer comes once the waiter is at rest, waiting where its path stops
 * (its chain in place, charged) or placed (ops->appeared before). */
static void test_start_in_worker(Fixture *f, gconstpointer data) {
        g_autofree char *e = g_build_filename(f->dir, "e", NULL);
        unsigned n = chain_len(f->dir);
        Subscription *s, *s2;

        start_workers(f);
        s = start(f, "a/x", &f->caller);
        g_assert_true(missing_looking_up(f->m, s));
        g_assert_cmpuint(missing_n_links(f->m), ==, 0);
        g_assert_cmpuint(missing_n_waiting(f->m), ==, 1);
        dispatch_until_found(f, 1);
        g_assert_cmpuint(g_array_index(f->found, uint32_t, 0), ==, s->id);
        g_assert_cmpint(f->found_error, ==, 0);
        g_assert_false(missing_looking_up(f->m, s));
        g_assert_true(s->pending);
        g_assert_cmpuint(missing_n_links(f->m), ==, n); /* it waits in f->dir, for "a" */
        g_assert_cmpuint(f->account.n_watches, ==, n);

        g_assert_true(g_file_set_contents(e, "", 0, NULL));
        s2 = start(f, "e", &f->caller);
        dispatch_until_found(f, 2);
        g_assert_cmpint(f->found_error, ==, 0);
        g_assert_cmpuint(f->appeared->len, ==, 1);
        g_assert_cmpuint(g_array_index(f->appeared, uint32_t, 0), ==, s2->id);
        g_assert_false(s2->pending);
        g_assert_cmpuint(f->gone->len, ==, 0);
}

/* Removed while its look-up is in a worker: told -ECANCELED at once; the
 * job's completion links nothing, charges nothing, answers nothing more. */
static void test_start_removed(Fixture *f, gconstpointer data) {
        Subscription *s;

        start_workers(f);
        s = start(f, "a/x", &f->caller);
        missing_remove(f->m, s);
        g_assert_cmpuint(f->found->len, ==, 1);
        g_assert_cmpint(f->found_error, ==, -ECANCELED);
        watch_table_unsubscribe(f->t, s);
        dispatch_until_found(f, 1);
        g_assert_cmpuint(missing_n_waiting(f->m), ==, 0);
        g_assert_cmpuint(missing_n_links(f->m), ==, 0);
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0);
        g_assert_cmpuint(f->account.n_watches, ==, 0);
}

/* A caller that may read no directory below "/" on the way (nobody, f->dir
 * being 0700): answered -EACCES, as missing_add() returns it, and left
 * unfollowed. As root only (the credentials are switched). */
static void test_start_denied(Fixture *f, gconstpointer data) {
        gid_t nogid = 65534;
        Caller nobody = { .uid = 65534, .gid = 65534, .gids = &nogid, .n_gids = 1 };
        Subscription *s;

        if (geteuid() != 0) {
                g_test_skip("not root: the caller's credentials cannot be switched");
                return;
        }
        start_workers(f);
        s = start(f, "a/x", &nobody);
        dispatch_until_found(f, 1);
        g_assert_cmpuint(g_array_index(f->found, uint32_t, 0), ==, s->id);
        g_assert_cmpint(f->found_error, ==, -EACCES);
        g_assert_cmpuint(missing_n_waiting(f->m), ==, 0);
        g_assert_cmpuint(missing_n_links(f->m), ==, 0);
        g_assert_cmpuint(f->account.n_watches, ==, 0);
        g_assert_cmpuint(f->gone->len, ==, 0);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/missing/shared", Fixture, NULL, setup, test_shared, teardown);
        g_test_add("/missing/appears", Fixture, NULL, setup, test_appears, teardown);
        g_test_add("/missing/not-watchable", Fixture, NULL, setup, test_not_watchable, teardown);
        g_test_add("/missing/recheck", Fixture, NULL, setup, test_recheck, teardown);
        g_test_add("/missing/watch-gone", Fixture, NULL, setup, test_watch_gone, teardown);
        g_test_add("/missing/follow-again", Fixture, NULL, setup, test_follow_again, teardown);
        g_test_add("/missing/start-in-worker", Fixture, NULL, setup, test_start_in_worker, teardown);
        g_test_add("/missing/start-removed", Fixture, NULL, setup, test_start_removed, teardown);
        g_test_add("/missing/start-denied", Fixture, NULL, setup, test_start_denied, teardown);
        return g_test_run();
}
