/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-fswork - jobs in worker threads, a lane per file system: completions
 * on the caller's thread, a lane that stops answering holding only itself
 * (told once past the deadline, and again when it answers), users taking
 * turns in a lane, and credentials that are the worker's own
 */

#include <errno.h>
#include <glib.h>
#include <poll.h>
#include <pthread.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "fswork.h"

typedef struct Gate {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool open;
} Gate;

static Gate gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };

static void gate_set(bool open) {
        pthread_mutex_lock(&gate.lock);
        gate.open = open;
        pthread_cond_broadcast(&gate.cond);
        pthread_mutex_unlock(&gate.lock);
}

/* A system call on a file system that does not answer. */
static void run_blocked(void *data) {
        pthread_mutex_lock(&gate.lock);
        while (!gate.open)
                pthread_cond_wait(&gate.cond, &gate.lock);
        pthread_mutex_unlock(&gate.lock);
        *(int *) data = 1;
}

static void run_quick(void *data) {
        *(int *) data = 1;
}

static GArray *order; /* int: the data of each completion, in order */

static void done_log(void *data, int error) {
        int v = GPOINTER_TO_INT(data);

        g_assert_cmpint(error, ==, 0);
        g_array_append_val(order, v);
}

static void done_flag(void *data, int error) {
        g_assert_cmpint(error, ==, 0);
        g_assert_cmpint(*(int *) data, ==, 1);
        *(int *) data = 2;
}

static void run_nothing(void *data) {
}

static int stalls, recoveries;
static dev_t last_dev;

static void on_stalled(dev_t dev, bool stalled, void *userdata) {
        last_dev = dev;
        if (stalled)
                stalls++;
        else
                recoveries++;
}

static const FsWorkOps ops = { .stalled = on_stalled };

/* Waits for the completions to come, up to a generous bound. */
static void dispatch_until(FsWork *w, const int *flag, int value) {
        for (int i = 0; i < 6000 && *flag != value; i++) {
                struct pollfd p = { .fd = fswork_fd(w), .events = POLLIN };

                (void) poll(&p, 1, 10);
                fswork_dispatch(w);
        }
        g_assert_cmpint(*flag, ==, value);
}

static void test_run(void) {
        FsWork *w;
        int a = 0;

        g_assert_cmpint(fswork_new(&ops, NULL, &w), ==, 0);
        g_assert_cmpint(fswork_submit(w, 1, NULL, run_quick, done_flag, &a), ==, 0);
        dispatch_until(w, &a, 2);
        fswork_free(w);
}

/* A lane that does not answer: another lane's job goes on; past the deadline
 * the lane is stalled (once), and answers again when its job returns. */
static void test_stall(void) {
        FsWork *w;
        int hung = 0, other = 0, after = 0;
        FsWorkStats st;

        stalls = recoveries = 0;
        gate_set(false);
        g_assert_cmpint(fswork_new(&ops, NULL, &w), ==, 0);
        g_assert_cmpint(fswork_submit(w, 7, NULL, run_blocked, done_flag, &hung), ==, 0);
        g_assert_cmpint(fswork_submit(w, 7, NULL, run_quick, done_flag, &after), ==, 0);
        g_assert_cmpint(fswork_submit(w, 8, NULL, run_quick, done_flag, &other), ==, 0);
        dispatch_until(w, &other, 2);
        g_assert_cmpint(hung, ==, 0);
        g_assert_cmpint(after, ==, 0); /* behind the hung job, in its lane */

        g_assert_cmpuint(fswork_next_deadline(w), !=, UINT64_MAX);
        fswork_check(w, fswork_next_deadline(w) - 1);
        g_assert_cmpint(stalls, ==, 0);
        fswork_check(w, fswork_next_deadline(w));
        g_assert_cmpint(stalls, ==, 1);
        g_assert_cmpuint(last_dev, ==, 7);
        g_assert_true(fswork_stalled(w, 7));
        g_assert_false(fswork_stalled(w, 8));
        fswork_check(w, UINT64_MAX - 1);
        g_assert_cmpint(stalls, ==, 1); /* told once */
        fswork_get_stats(w, &st);
        g_assert_cmpuint(st.stalled_lanes, ==, 1);

        /* Other lanes still have threads: a stuck one does not count. */
        for (int i = 0; i < 20; i++) {
                int x = 0;

                g_assert_cmpint(fswork_submit(w, 100 + (dev_t) i, NULL, run_quick, done_flag, &x), ==, 0);
                dispatch_until(w, &x, 2);
        }

        gate_set(true);
        dispatch_until(w, &after, 2);
        g_assert_cmpint(hung, ==, 2);
        g_assert_cmpint(recoveries, ==, 1);
        g_assert_false(fswork_stalled(w, 7));
        fswork_free(w);
}

/* In one lane, users take turns: uid 2's one job is not behind uid 1's ten. */
static void test_turns(void) {
        gid_t none[1] = { 0 };
        Caller u1 = { .uid = getuid(), .gid = getgid(), .gids = none, .n_gids = 0 };
        Caller u2 = u1;
        int first = 0, end = 0;
        FsWork *w;

        if (getuid() == 0)
                u2.uid = 65534; /* a second uid: root can take it on */
        else {
                g_test_skip("needs root for a second uid");
                return;
        }
        order = g_array_new(FALSE, FALSE, sizeof(int));
        gate_set(false);
        g_assert_cmpint(fswork_new(&ops, NULL, &w), ==, 0);
        g_assert_cmpint(fswork_submit(w, 9, &u1, run_blocked, done_flag, &first), ==, 0);
        for (int i = 1; i <= 10; i++)
                g_assert_cmpint(fswork_submit(w, 9, &u1, run_nothing, done_log, GINT_TO_POINTER(i)), ==, 0);
        g_assert_cmpint(fswork_submit(w, 9, &u2, run_nothing, done_log, GINT_TO_POINTER(100)), ==, 0);
        g_assert_cmpint(fswork_submit(w, 9, &u1, run_quick, done_flag, &end), ==, 0);
        gate_set(true);
        dispatch_until(w, &end, 2);
        g_assert_cmpuint(order->len, ==, 11);
        /* uid 1 had the lane (its blocked job); uid 2's turn came next, or after one more of
         * uid 1's (if uid 1's turn began before uid 2 queued): never after its ten. */
        g_assert_true(g_array_index(order, int, 0) == 100 || g_array_index(order, int, 1) == 100);
        fswork_free(w);
        g_array_unref(order);
}

typedef struct CredSeen {
        uid_t fsuid;
        gid_t fsgid;
        int n_groups;
        gid_t group;
} CredSeen;

static void run_creds(void *data) {
        CredSeen *c = data;
        gid_t g[4];

        c->fsuid = (uid_t) setfsuid((uid_t) -1);
        c->fsgid = (gid_t) setfsgid((gid_t) -1);
        c->n_groups = getgroups(4, g);
        c->group = c->n_groups > 0 ? g[0] : 0;
        /* Seen: the test's thread looks at its own while this one is the caller. */
        pthread_mutex_lock(&gate.lock);
        c[1].n_groups = 1;
        pthread_cond_broadcast(&gate.cond);
        while (!gate.open)
                pthread_cond_wait(&gate.cond, &gate.lock);
        pthread_mutex_unlock(&gate.lock);
}

static void done_creds(void *data, int error) {
        g_assert_cmpint(error, ==, 0);
        ((CredSeen *) data)[1].fsuid = 1; /* done */
}

/* The job runs as its caller, groups included; the calling thread stays itself. */
static void test_credentials(void) {
        gid_t groups[1] = { 4242 };
        Caller c = { .uid = 65534, .gid = 65534, .gids = groups, .n_gids = 1 };
        CredSeen seen[2] = {};
        gid_t mine[64];
        int n_mine;
        FsWork *w;

        if (getuid() != 0) {
                g_test_skip("needs root to take on another uid");
                return;
        }
        n_mine = getgroups(64, mine);
        gate_set(false);
        g_assert_cmpint(fswork_new(&ops, NULL, &w), ==, 0);
        g_assert_cmpint(fswork_submit(w, 3, &c, run_creds, done_creds, seen), ==, 0);
        pthread_mutex_lock(&gate.lock);
        while (seen[1].n_groups == 0)
                pthread_cond_wait(&gate.cond, &gate.lock);
        pthread_mutex_unlock(&gate.lock);
        /* While the worker is the caller, this thread is still the daemon
         * (glibc's setgroups() would have given it the caller's groups: it
         * signals every thread to change). */
        g_assert_cmpuint((uid_t) setfsuid((uid_t) -1), ==, 0);
        g_assert_cmpint(getgroups(64, mine), ==, n_mine);
        for (int i = 0; i < n_mine; i++)
                g_assert_cmpuint(mine[i], !=, 4242);
        gate_set(true);
        dispatch_until(w, (int *) &seen[1].fsuid, 1);
        g_assert_cmpuint(seen[0].fsuid, ==, 65534);
        g_assert_cmpuint(seen[0].fsgid, ==, 65534);
        g_assert_cmpint(seen[0].n_groups, ==, 1);
        g_assert_cmpuint(seen[0].group, ==, 4242);
        fswork_free(w);
}

static int ended;

static void done_count(void *data, int error) {
        g_assert_cmpint(error, ==, 0);
        g_assert_cmpint(*(int *) data, ==, 1);
        ended++;
}

/* Runs the completions until n jobs of done_count() ended. */
static void await_ended(FsWork *w, int n) {
        for (int i = 0; i < 6000 && ended < n; i++) {
                struct pollfd p = { .fd = fswork_fd(w), .events = POLLIN };

                (void) poll(&p, 1, 10);
                fswork_dispatch(w);
        }
        g_assert_cmpint(ended, ==, n);
}

#define MANY_LANES 80

/* One user's jobs on many file systems that do not answer hold at most
 * FSWORK_USER_STUCK_MAX threads (and the few running when that was reached):
 * another user's job still gets a thread. Without the bound, uid 65534's
 * jobs took FSWORK_THREADS_HARD_MAX threads, one stalled lane after the
 * other, and the other user's fswork_submit() failed with -EAGAIN (its work
 * then done on the loop, in the daemon). Nothing of the held user is lost:
 * its jobs run once its file systems answer. */
static void test_user_bound(void) {
        gid_t none[1] = { 0 };
        Caller held = { .uid = 65534, .gid = 65534, .gids = none, .n_gids = 0 };
        int flags[MANY_LANES] = {}, other = 0;
        unsigned threads = 0;
        FsWorkStats st;
        FsWork *w;

        if (getuid() != 0) {
                g_test_skip("needs root to take on another uid");
                return;
        }
        G_STATIC_ASSERT(MANY_LANES > FSWORK_THREADS_HARD_MAX);
        gate_set(false);
        ended = 0;
        g_assert_cmpint(fswork_new(&ops, NULL, &w), ==, 0);
        for (int i = 0; i < MANY_LANES; i++)
                g_assert_cmpint(fswork_submit(w, 1000 + (dev_t) i, &held, run_blocked, done_count, &flags[i]), ==, 0);
        /* Every lane that runs is past its deadline at each check: a thread
         * in place of each stuck one, as long as the bound lets it run. */
        for (int i = 0; i < 4 * MANY_LANES; i++) {
                fswork_check(w, UINT64_MAX - 1);
                g_usleep(2000);
        }
        fswork_get_stats(w, &st);
        g_test_message("uid 65534: %u threads, %u stalled lanes, %u jobs queued", st.threads, st.stalled_lanes,
                       st.queued);
        g_assert_cmpuint(st.stalled_lanes, >=, FSWORK_USER_STUCK_MAX);
        g_assert_cmpuint(st.stalled_lanes, <=, FSWORK_USER_STUCK_MAX + FSWORK_THREADS_MAX);
        g_assert_cmpuint(st.threads, <=, FSWORK_USER_STUCK_MAX + 2 * FSWORK_THREADS_MAX);
        threads = st.threads;

        /* Another user (the daemon, uid 0) on another file system goes on. */
        g_assert_cmpint(fswork_submit(w, 5000, NULL, run_quick, done_flag, &other), ==, 0);
        dispatch_until(w, &other, 2);
        fswork_get_stats(w, &st);
        g_assert_cmpuint(st.threads, <=, threads + FSWORK_THREADS_MAX);

        /* They answer: every job of the held user runs, none lost. */
        gate_set(true);
        await_ended(w, MANY_LANES);
        fswork_free(w);
}

static void run_fsuid(void *data) {
        *(int *) data = 1 + (int) setfsuid((uid_t) -1);
}

static void done_fsuid(void *data, int error) {
        g_assert_cmpint(error, ==, 0);
        *(int *) data += 1000;
}

/* fswork_submit_daemon(): run as the daemon, counted as uid's. uid's jobs
 * so on lanes that do not answer take uid's share of the stuck threads:
 * past it, uid's own jobs wait, the daemon's (uid 0) go on. */
static void test_daemon_counted(void) {
        gid_t none[1] = { 0 };
        Caller held = { .uid = 65534, .gid = 65534, .gids = none, .n_gids = 0 };
        int flags[12] = {}, as = 0, capped = 0, other = 0;
        FsWorkStats st;
        FsWork *w;

        if (getuid() != 0) {
                g_test_skip("needs root to take on another uid");
                return;
        }
        gate_set(false);
        ended = 0;
        g_assert_cmpint(fswork_new(&ops, NULL, &w), ==, 0);
        /* As the daemon (fsuid 0), though counted as 65534's. */
        g_assert_cmpint(fswork_submit_daemon(w, 900, 65534, run_fsuid, done_fsuid, &as), ==, 0);
        dispatch_until(w, &as, 1000 + 1 + 0);

        for (int i = 0; i < (int) G_N_ELEMENTS(flags); i++)
                g_assert_cmpint(fswork_submit_daemon(w, 1000 + (dev_t) i, 65534, run_blocked, done_count, &flags[i]),
                                ==, 0);
        for (int i = 0; i < 4 * (int) G_N_ELEMENTS(flags); i++) {
                fswork_check(w, UINT64_MAX - 1);
                g_usleep(2000);
        }
        fswork_get_stats(w, &st);
        g_assert_cmpuint(st.stalled_lanes, >=, FSWORK_USER_STUCK_MAX);
        g_assert_cmpuint(st.stalled_lanes, <, G_N_ELEMENTS(flags)); /* bounded: not all 12 */

        /* 65534's own job waits for one of them; the daemon's goes on. */
        g_assert_cmpint(fswork_submit(w, 2000, &held, run_quick, done_flag, &capped), ==, 0);
        g_assert_cmpint(fswork_submit(w, 2001, NULL, run_quick, done_flag, &other), ==, 0);
        dispatch_until(w, &other, 2);
        g_assert_cmpint(capped, ==, 0);

        gate_set(true);
        dispatch_until(w, &capped, 2);
        await_ended(w, (int) G_N_ELEMENTS(flags));
        fswork_free(w);
}

#define ALL_STUCK_USERS 9u

/* Every thread held: ALL_STUCK_USERS users, each with more lanes that do not
 * answer than its share, hold FSWORK_THREADS_HARD_MAX threads between them.
 * Another user's job is queued, not refused, and runs once a lane answers:
 * its fswork_submit() returned -EAGAIN before, and its caller did the work on
 * the loop (a file system that did not answer there froze the daemon). */
static void test_all_stuck(void) {
        gid_t none[1] = { 0 };
        int flags[ALL_STUCK_USERS * 10] = {}, other = 0;
        FsWorkStats st;
        FsWork *w;

        if (getuid() != 0) {
                g_test_skip("needs root to take on another uid");
                return;
        }
        G_STATIC_ASSERT(ALL_STUCK_USERS * FSWORK_USER_STUCK_MAX > FSWORK_THREADS_HARD_MAX);
        gate_set(false);
        ended = 0;
        g_assert_cmpint(fswork_new(&ops, NULL, &w), ==, 0);
        for (guint u = 0; u < ALL_STUCK_USERS; u++) {
                Caller held = { .uid = 60000 + u, .gid = 60000 + u, .gids = none, .n_gids = 0 };

                for (guint i = 0; i < 10; i++)
                        g_assert_cmpint(fswork_submit(w, 1000 + (dev_t) (u * 10 + i), &held, run_blocked, done_count,
                                                      &flags[u * 10 + i]),
                                        ==, 0);
        }
        for (int i = 0; i < 4 * (int) G_N_ELEMENTS(flags); i++) {
                fswork_check(w, UINT64_MAX - 1);
                g_usleep(2000);
        }
        fswork_get_stats(w, &st);
        g_test_message("%u users: %u threads, %u stalled lanes, %u jobs queued", ALL_STUCK_USERS, st.threads,
                       st.stalled_lanes, st.queued);
        g_assert_cmpuint(st.threads, ==, FSWORK_THREADS_HARD_MAX);
        g_assert_cmpuint(st.stalled_lanes, ==, FSWORK_THREADS_HARD_MAX);

        /* uid 0's job on a file system that answers: queued, not refused. */
        g_assert_cmpint(fswork_submit(w, 5000, NULL, run_quick, done_flag, &other), ==, 0);
        g_usleep(100000);
        fswork_dispatch(w);
        g_assert_cmpint(other, ==, 0); /* it waits for a thread */

        gate_set(true);
        dispatch_until(w, &other, 2);
        await_ended(w, (int) G_N_ELEMENTS(flags));
        fswork_free(w);
}

static int discarded;

static void done_discarded(void *data, int error) {
        g_assert_cmpint(error, ==, -ESHUTDOWN);
        discarded++;
}

/* Freed with jobs ended but not dispatched, one running and one queued: each
 * completion is called once, with -ESHUTDOWN, so its owner frees its data
 * (a poll's directory leaked at exit before). */
static void test_shutdown(void) {
        FsWork *w;
        int a = 0, b = 0, c = 0;

        gate_set(false);
        discarded = 0;
        g_assert_cmpint(fswork_new(&ops, NULL, &w), ==, 0);
        g_assert_cmpint(fswork_submit(w, 1, NULL, run_quick, done_discarded, &a), ==, 0);
        g_assert_cmpint(fswork_submit(w, 2, NULL, run_blocked, done_discarded, &b), ==, 0);
        g_assert_cmpint(fswork_submit(w, 2, NULL, run_quick, done_discarded, &c), ==, 0);
        for (int i = 0; i < 6000 && !a; i++)
                g_usleep(1000);
        g_assert_cmpint(a, ==, 1);
        gate_set(true);
        fswork_free(w);
        g_assert_cmpint(discarded, ==, 3);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/fswork/run", test_run);
        g_test_add_func("/fswork/stall", test_stall);
        g_test_add_func("/fswork/turns", test_turns);
        g_test_add_func("/fswork/credentials", test_credentials);
        g_test_add_func("/fswork/shutdown", test_shutdown);
        g_test_add_func("/fswork/user-bound", test_user_bound);
        g_test_add_func("/fswork/all-stuck", test_all_stuck);
        g_test_add_func("/fswork/daemon-counted", test_daemon_counted);
        return g_test_run();
}
