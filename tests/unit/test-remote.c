/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-remote - directories the kernel cannot watch for everything, polled
 *
 * remote.c in the core without a bus: the manager on the fake backend, a
 * client whose transport is a sink, and a real FUSE mount (bindfs over a
 * backing directory, as tests/dbus/test-remote.c uses; skipped, and saying
 * so, where this host cannot mount one). A change made in the backing
 * directory passes by no kernel of this machine's watches: only polling
 * finds it. Each case says what ListWatches' flags would be, what records
 * come (WATCHD_IN_POLLED in their mask), and what the limits refuse.
 * Polls are awaited (a generous bound), never timed.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "event_bits.h"
#include "fake-backend.h"
#include "log.h"
#include "manager.h"
#include "sink.h"
#include "watchd-api.h"

#define AWAIT_USEC (30 * G_USEC_PER_SEC)

typedef struct Fixture {
        FakeBackend *fake;
        Manager *m;
        Client *c;
        Sink sink;
        char *dir, *back, *mnt;
        bool mounted;
        gid_t gid;
} Fixture;

/* Mounts bindfs at f->mnt over f->back; false (the test skipped) if this host cannot. */
static bool mount_fuse(Fixture *f) {
        g_autofree char *bindfs = g_find_program_in_path("bindfs");
        int status = -1;

        if (!bindfs || access("/dev/fuse", R_OK | W_OK) < 0 ||
            !g_spawn_sync(NULL, (char *[]) { bindfs, f->back, f->mnt, NULL }, NULL, 0, NULL, NULL, NULL, NULL, &status,
                          NULL) ||
            !g_spawn_check_wait_status(status, NULL)) {
                g_test_skip("no FUSE mount here: bindfs missing, /dev/fuse unusable or not root");
                return false;
        }
        f->mounted = true;
        return true;
}

static void setup(Fixture *f, gconstpointer data) {
        const uint32_t *max_polled = data;
        Config config;
        Caller caller;

        log_set_max_level(LOG_ERR);
        f->fake = fake_backend_new();
        g_assert_cmpint(config_init(&config), ==, 0);
        config.poll_interval_sec[FS_FUSE] = 1;
        if (max_polled)
                config.max_polled_dirs_per_user = *max_polled;
        g_assert_cmpint(manager_new(&config, &f->m), ==, 0);
        config_done(&config);
        manager_set_backend(f->m, &f->fake->backend);
        g_assert_cmpint(manager_start(f->m), ==, 0);

        f->gid = getgid();
        caller = (Caller) { .uid = getuid(), .gid = f->gid, .gids = &f->gid, .n_gids = 1 };
        g_assert_cmpint(manager_new_client(f->m, ":1.1", &caller, &f->c), ==, 0);
        sink_init(&f->sink);
        delivery_queue_set_transport(&f->c->queue, &sink_ops, &f->sink);
        f->dir = g_dir_make_tmp("test-remote-XXXXXX", NULL);
        g_assert_nonnull(f->dir);
        f->back = g_build_filename(f->dir, "back", NULL);
        f->mnt = g_build_filename(f->dir, "mnt", NULL);
        g_assert_cmpint(g_mkdir(f->back, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(f->mnt, 0755), ==, 0);
}

static void teardown(Fixture *f, gconstpointer data) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->dir);

        manager_free(f->m);
        fake_backend_free(f->fake);
        sink_done(&f->sink);
        if (f->mounted)
                g_assert_cmpint(umount2(f->mnt, MNT_DETACH), ==, 0);
        g_assert_cmpint(system(cmd), ==, 0);
        g_free(f->back);
        g_free(f->mnt);
        g_free(f->dir);
}

static int add(Fixture *f, const char *path, uint32_t mask, uint32_t flags, uint32_t *ret_id) {
        TreeWalk *walk = NULL;
        int r;

        r = manager_add_watch_path(f->m, f->c, path, mask, flags, ret_id, &walk);
        g_assert_null(walk);
        return r;
}

static uint32_t flags_of(Fixture *f, uint32_t id) {
        return manager_subscription_remote_flags(f->m, manager_get_subscription(f->m, id));
}

/* Runs the due polls and flushes until the sink holds n records or a notice; false after AWAIT_USEC. */
static bool await_records(Fixture *f, guint n) {
        int64_t deadline = g_get_monotonic_time() + AWAIT_USEC;

        while (f->sink.events->len < n && f->sink.notices->len == 0) {
                if (g_get_monotonic_time() > deadline)
                        return false;
                while (manager_run_walks(f->m, 100000))
                        ;
                manager_flush(f->m);
                if (f->sink.events->len < n && f->sink.notices->len == 0)
                        g_usleep(20 * 1000); /* till the next round is due */
        }
        return true;
}

/* A local directory is not remote; a FUSE one is remote and polled, or remote only with NO_POLL. */
static void test_flags(Fixture *f, gconstpointer data) {
        g_autofree char *sub = NULL;
        uint32_t local, polled, unpolled;

        g_assert_cmpint(add(f, f->dir, IN_CREATE, 0, &local), ==, 0);
        g_assert_cmpuint(flags_of(f, local), ==, 0);
        if (!mount_fuse(f))
                return;
        sub = g_build_filename(f->mnt, "sub", NULL);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        g_assert_cmpint(add(f, f->mnt, IN_CREATE, 0, &polled), ==, 0);
        g_assert_cmpuint(flags_of(f, polled), ==, WATCHD_FLAG_REMOTE | WATCHD_FLAG_POLLED);
        g_assert_cmpint(add(f, sub, IN_CREATE, WATCHD_FLAG_NO_POLL, &unpolled), ==, 0);
        g_assert_cmpuint(flags_of(f, unpolled), ==, WATCHD_FLAG_REMOTE);
}

/* What changes in the backing directory only polling sees: created, modified, deleted, in that order. */
static void test_backing_changes(Fixture *f, gconstpointer data) {
        g_autofree char *bf = g_build_filename(f->back, "f", NULL), *mf = NULL;
        ManagerStats st;
        uint32_t id;

        if (!mount_fuse(f))
                return;
        mf = g_build_filename(f->mnt, "f", NULL);
        g_assert_cmpint(add(f, f->mnt, IN_CREATE | IN_DELETE, 0, &id), ==, 0);
        manager_get_stats(f->m, &st);
        g_assert_cmpuint(st.polled_dirs, ==, 1);

        g_assert_true(g_file_set_contents(bf, "x", -1, NULL));
        g_assert_true(await_records(f, 1));
        g_assert_cmpuint(f->sink.events->len, ==, 1);
        g_assert_cmpuint(sink_event(&f->sink, 0)->id, ==, id);
        g_assert_cmphex(sink_event(&f->sink, 0)->mask, ==, IN_CREATE | WATCHD_IN_POLLED);
        g_assert_cmpstr(sink_event(&f->sink, 0)->path, ==, mf);

        g_assert_cmpint(g_unlink(bf), ==, 0);
        g_assert_true(await_records(f, 2));
        g_assert_cmphex(sink_event(&f->sink, 1)->mask, ==, IN_DELETE | WATCHD_IN_POLLED);
        g_assert_cmpstr(sink_event(&f->sink, 1)->path, ==, mf);
        g_assert_cmpuint(f->sink.notices->len, ==, 0);
        manager_get_stats(f->m, &st);
        g_assert_cmpuint(st.poll_syscalls, >, 0);

        /* Removed: no longer polled. */
        g_assert_cmpint(manager_remove_watch(f->m, f->c, id), ==, 0);
        manager_get_stats(f->m, &st);
        g_assert_cmpuint(st.polled_dirs, ==, 0);
}

/* A rename in the backing directory is one paired record. */
static void test_backing_rename(Fixture *f, gconstpointer data) {
        g_autofree char *ba = g_build_filename(f->back, "a", NULL), *bb = g_build_filename(f->back, "b", NULL);
        g_autofree char *ma = NULL, *mb = NULL;
        uint32_t id;

        g_assert_true(g_file_set_contents(ba, "", 0, NULL));
        if (!mount_fuse(f))
                return;
        ma = g_build_filename(f->mnt, "a", NULL);
        mb = g_build_filename(f->mnt, "b", NULL);
        g_assert_cmpint(add(f, f->mnt, IN_MOVE, 0, &id), ==, 0);
        g_assert_cmpint(g_rename(ba, bb), ==, 0);
        g_assert_true(await_records(f, 1));
        g_assert_cmpuint(f->sink.events->len, ==, 1);
        g_assert_cmphex(sink_event(&f->sink, 0)->mask, ==, IN_MOVE | WATCHD_IN_POLLED);
        g_assert_cmpstr(sink_event(&f->sink, 0)->path, ==, ma);
        g_assert_cmpstr(sink_event(&f->sink, 0)->new_path, ==, mb);
}

/* max_polled_dirs_per_user (1 here): a second polled root is refused, -WATCHD_E_USER_POLLED; NO_POLL is not. */
static void test_budget(Fixture *f, gconstpointer data) {
        g_autofree char *sub = NULL;
        uint32_t id;

        if (!mount_fuse(f))
                return;
        sub = g_build_filename(f->mnt, "sub", NULL);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        g_assert_cmpint(add(f, f->mnt, IN_CREATE, 0, &id), ==, 0);
        g_assert_cmpint(add(f, sub, IN_CREATE, 0, &id), ==, -WATCHD_E_USER_POLLED);
        g_assert_cmpint(add(f, sub, IN_CREATE, WATCHD_FLAG_NO_POLL, &id), ==, 0);
        g_assert_cmpuint(flags_of(f, id), ==, WATCHD_FLAG_REMOTE);
}

/* The polled root deleted on the other side: WatchRemoved "deleted", and it ends. */
static void test_root_gone(Fixture *f, gconstpointer data) {
        g_autofree char *bsub = g_build_filename(f->back, "sub", NULL), *msub = NULL, *want = NULL;
        uint32_t id;

        g_assert_cmpint(g_mkdir(bsub, 0755), ==, 0);
        if (!mount_fuse(f))
                return;
        msub = g_build_filename(f->mnt, "sub", NULL);
        g_assert_cmpint(add(f, msub, IN_CREATE, 0, &id), ==, 0);
        g_assert_cmpint(g_rmdir(bsub), ==, 0);
        g_assert_true(await_records(f, G_MAXUINT));
        want = g_strdup_printf("removed %u deleted", id);
        g_assert_cmpuint(f->sink.notices->len, ==, 1);
        g_assert_cmpstr(f->sink.notices->pdata[0], ==, want);
        g_assert_null(manager_get_subscription(f->m, id));
}

int main(int argc, char *argv[]) {
        static const uint32_t one = 1;

        g_test_init(&argc, &argv, NULL);
        g_test_add("/remote/flags", Fixture, NULL, setup, test_flags, teardown);
        g_test_add("/remote/backing-changes", Fixture, NULL, setup, test_backing_changes, teardown);
        g_test_add("/remote/backing-rename", Fixture, NULL, setup, test_backing_rename, teardown);
        g_test_add("/remote/budget", Fixture, &one, setup, test_budget, teardown);
        g_test_add("/remote/root-gone", Fixture, NULL, setup, test_root_gone, teardown);
        return g_test_run();
}
