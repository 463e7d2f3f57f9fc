/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-events - the kernel's records, to the subscriptions they are for
 *
 * events.c on its own: the parts it calls (watch table, tree, missing-path
 * and rename followers, remote) built on the fake backend, a client whose
 * transport is a sink, and the layer above replaced by callbacks that
 * record what events.c asks of it (EventsOps: end a subscription with a
 * reason, its object gone, Overflow to everyone). Records are queued in the
 * kernel's byte layout; each case says what the client receives and what
 * was asked above. Real files in a temporary directory.
 */

#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"
#include "config.h"
#include "event_bits.h"
#include "events.h"
#include "fake-backend.h"
#include "fswork.h"
#include "hold.h"
#include "log.h"
#include "sink.h"
#include "tree.h"
#include "watchd-api.h"

typedef struct Fixture {
        FakeBackend *fake;
        Config config;
        Accounting *accounting;
        Delivery *delivery;
        WatchTable *table;
        Tree *tree;
        Missing *missing;
        Moves *moves;
        Remote *remote;
        SelfEvents *self;
        Events *events;
        Client *c;
        Sink sink;
        GPtrArray *asked; /* what events.c asked of the layer above, a line each */
        char *dir;
        gid_t gid;
} Fixture;

/* The layer above, as the manager would be: it records, and ends what it is asked to end. */
static void on_end(Subscription *s, const char *reason, uint64_t now, void *userdata) {
        Fixture *f = userdata;

        g_ptr_array_add(f->asked, g_strdup_printf("end %u %s", s->id, reason));
        client_queue_removed(s, reason, now);
        client_unlink_subscription(s->owner, s);
        watch_table_unsubscribe(f->table, s);
}

static void on_object_gone(Subscription *s, const char *reason, void *userdata) {
        Fixture *f = userdata;

        g_ptr_array_add(f->asked, g_strdup_printf("gone %u %s", s->id, reason));
        client_unlink_subscription(s->owner, s);
        watch_table_unsubscribe(f->table, s);
}

static void on_overflow_all(void *userdata) {
        Fixture *f = userdata;

        g_ptr_array_add(f->asked, g_strdup("overflow-all"));
}

static void on_tree_end(Subscription *s, void *userdata) {
}

static int on_appeared(Subscription *s, int fd, const struct stat *st, const RemoteHint *hint, void *userdata) {
        return -ENOENT;
}

static void on_missing_gone(Subscription *s, int r, void *userdata) {
}

static bool on_remote_deliver(Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                              size_t name_len, uint64_t now, void *userdata) {
        return false;
}

static void on_remote_gone(Subscription *s, void *userdata) {
}

static void setup(Fixture *f, gconstpointer data) {
        AccountingLimits al = {
                .max_watches_per_client = 1000,
                .max_watches_per_user = 1000,
                .max_watches_unprivileged = 1000,
                .max_clients_per_user = 10,
        };
        DeliveryLimits dl = { .max_pending = 1000,
                              .max_bytes = UINT64_MAX,
                              .max_pending_user = UINT32_MAX,
                              .max_bytes_user = UINT64_MAX,
                              .batch_max = 100,
                              .pair_timeout_usec = 1000000,
                              .pair_max_distance = 100 };
        Caller caller;

        log_set_max_level(LOG_ERR);
        f->fake = fake_backend_new();
        g_assert_cmpint(config_init(&f->config), ==, 0);
        g_assert_cmpint(accounting_new(&al, &f->accounting), ==, 0);
        g_assert_cmpint(delivery_new(&dl, &f->delivery), ==, 0);
        g_assert_cmpint(watch_table_new(&f->fake->backend, &f->table), ==, 0);
        g_assert_cmpint(self_events_new(f->table, &f->fake->backend, &f->self), ==, 0);
        g_assert_cmpint(tree_new(f->table, &f->fake->backend, f->self, &(TreeOps) { .end = on_tree_end }, f, &f->tree),
                        ==, 0);
        g_assert_cmpint(missing_new(f->table, &(MissingOps) { .appeared = on_appeared, .gone = on_missing_gone }, f,
                                    &f->missing),
                        ==, 0);
        g_assert_cmpint(moves_new(f->table, &f->moves), ==, 0);
        g_assert_cmpint(remote_new(f->table, f->self, &f->config, NULL,
                                   &(RemoteOps) { .deliver = on_remote_deliver, .gone = on_remote_gone }, f, &f->remote),
                        ==, 0);
        g_assert_cmpint(events_new(&f->fake->backend, f->table, f->tree, f->missing, f->moves, f->remote, f->self,
                                   &(EventsOps) {
                                           .end = on_end,
                                           .object_gone = on_object_gone,
                                           .overflow_all = on_overflow_all,
                                   },
                                   f, &f->events),
                        ==, 0);
        f->gid = getgid();
        caller = (Caller) { .uid = getuid(), .gid = f->gid, .gids = &f->gid, .n_gids = 1 };
        g_assert_cmpint(client_new(f->accounting, f->delivery, ":1.1", &caller, &f->c), ==, 0);
        sink_init(&f->sink);
        delivery_queue_set_transport(&f->c->queue, &sink_ops, &f->sink);
        f->asked = g_ptr_array_new_with_free_func(g_free);
        f->dir = g_dir_make_tmp("test-events-XXXXXX", NULL);
        g_assert_nonnull(f->dir);
}

static void teardown(Fixture *f, gconstpointer data) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->dir);

        while (f->c->subscriptions) {
                Subscription *s = f->c->subscriptions;

                client_unlink_subscription(f->c, s);
                watch_table_unsubscribe(f->table, s);
        }
        events_free(f->events);
        tree_free(f->tree);
        missing_free(f->missing);
        moves_free(f->moves);
        remote_free(f->remote);
        self_events_free(f->self);
        client_free(f->c);
        watch_table_free(f->table);
        delivery_free(f->delivery);
        accounting_free(f->accounting);
        config_done(&f->config);
        fake_backend_free(f->fake);
        sink_done(&f->sink);
        g_ptr_array_unref(f->asked);
        g_assert_cmpint(system(cmd), ==, 0);
        g_free(f->dir);
}

static char *in(Fixture *f, const char *rel) {
        return g_build_filename(f->dir, rel, NULL);
}

static Subscription *add(Fixture *f, const char *path, uint32_t mask, uint32_t flags) {
        Subscription *s = NULL;
        struct stat st;
        int fd = open(path, O_PATH | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(watch_table_subscribe(f->table, fd, &st, path, f->c, &f->c->account, mask, flags, &s), ==, 0);
        client_link_subscription(f->c, s);
        close(fd);
        return s;
}

static int wd_of(Fixture *f, const char *path) {
        int wd = fake_backend_wd(f->fake, path);

        g_assert_cmpint(wd, >=, 0);
        return wd;
}

/* Everything queued in the kernel read and handled, the queue flushed. */
static void turn(Fixture *f) {
        while (events_slice(f->events, 100000))
                ;
        delivery_flush(f->delivery, UINT64_MAX);
}

/* A record reaches the subscriptions whose mask asks for it, with the watched path and the name. */
static void test_mask_and_path(Fixture *f, gconstpointer data) {
        g_autofree char *x = in(f, "x");
        Subscription *creates = add(f, f->dir, IN_CREATE, 0), *mods = add(f, f->dir, IN_MODIFY, 0);
        int wd = wd_of(f, f->dir);

        fake_backend_push(f->fake, wd, IN_CREATE, 0, "x");
        fake_backend_push(f->fake, wd, IN_MODIFY, 0, "x");
        fake_backend_push(f->fake, wd, IN_ACCESS, 0, "x"); /* no one's */
        turn(f);
        g_assert_cmpuint(f->sink.events->len, ==, 2);
        g_assert_cmpuint(sink_event(&f->sink, 0)->id, ==, creates->id);
        g_assert_cmpuint(sink_event(&f->sink, 0)->mask, ==, IN_CREATE);
        g_assert_cmpstr(sink_event(&f->sink, 0)->path, ==, x);
        g_assert_cmpuint(sink_event(&f->sink, 1)->id, ==, mods->id);
        g_assert_cmpuint(events_get_stats(f->events)->events_read, ==, 3);
        g_assert_cmpuint(f->asked->len, ==, 0);
}

/* events_deliver() is the same way in for what the kernel did not report (a poll, an appearance). */
static void test_deliver(Fixture *f, gconstpointer data) {
        Subscription *s = add(f, f->dir, IN_CREATE | IN_DELETE, 0);

        g_assert_true(events_deliver(f->events, s, IN_CREATE | WATCHD_IN_POLLED, 0, f->dir, "n", 1, 1));
        g_assert_false(events_deliver(f->events, s, IN_MODIFY, 0, f->dir, "n", 1, 2));
        g_assert_true(events_deliver(f->events, s, IN_UNMOUNT, 0, f->dir, NULL, 0, 3)); /* reaches everyone */
        delivery_flush(f->delivery, UINT64_MAX);
        g_assert_cmpuint(f->sink.events->len, ==, 2);
        g_assert_cmpuint(sink_event(&f->sink, 0)->mask, ==, IN_CREATE | WATCHD_IN_POLLED);
        g_assert_cmpuint(sink_event(&f->sink, 1)->mask, ==, IN_UNMOUNT);
        g_assert_cmpstr(sink_event(&f->sink, 1)->path, ==, f->dir);
}

/* ONESHOT: its first record, then the layer above is asked to end it with "oneshot"; nothing more. */
static void test_oneshot(Fixture *f, gconstpointer data) {
        Subscription *s = add(f, f->dir, IN_CREATE, WATCHD_FLAG_ONESHOT);
        g_autofree char *want = g_strdup_printf("end %u oneshot", s->id);
        g_autofree char *notice = g_strdup_printf("removed %u oneshot", s->id);
        int wd = wd_of(f, f->dir);

        fake_backend_push(f->fake, wd, IN_CREATE, 0, "a");
        fake_backend_push(f->fake, wd, IN_CREATE, 0, "b");
        turn(f);
        g_assert_cmpuint(f->sink.events->len, ==, 1);
        g_assert_cmpuint(f->asked->len, ==, 1);
        g_assert_cmpstr(f->asked->pdata[0], ==, want);
        g_assert_cmpuint(f->sink.notices->len, ==, 1);
        g_assert_cmpstr(f->sink.notices->pdata[0], ==, notice);
        g_assert_cmpuint(f->c->n_subscriptions, ==, 0);
}

/* IN_IGNORED: the root's object is gone, "deleted", or "unmounted" after
 * IN_UNMOUNT (which reaches everyone); the layer above decides. */
static void test_ignored(Fixture *f, gconstpointer data) {
        g_autofree char *a = in(f, "a"), *b = in(f, "b");
        g_autofree char *ga = NULL, *gb = NULL;
        Subscription *sa, *sb;

        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(b, 0755), ==, 0);
        sa = add(f, a, IN_CREATE, 0);
        sb = add(f, b, IN_CREATE, 0);
        ga = g_strdup_printf("gone %u deleted", sa->id);
        gb = g_strdup_printf("gone %u unmounted", sb->id);
        fake_backend_push(f->fake, wd_of(f, a), IN_IGNORED, 0, NULL);
        fake_backend_push(f->fake, wd_of(f, b), IN_UNMOUNT, 0, NULL);
        fake_backend_push(f->fake, wd_of(f, b), IN_IGNORED, 0, NULL);
        turn(f);
        g_assert_cmpuint(f->asked->len, ==, 2);
        g_assert_cmpstr(f->asked->pdata[0], ==, ga);
        g_assert_cmpstr(f->asked->pdata[1], ==, gb);
        g_assert_cmpuint(f->sink.events->len, ==, 1);
        g_assert_cmpuint(sink_event(&f->sink, 0)->mask, ==, IN_UNMOUNT);
}

/* PERSIST: the syscalls' IN_MOVE_SELF of its root means its object left its path. */
static void test_move_self(Fixture *f, gconstpointer data) {
        g_autofree char *a = in(f, "a"), *want = NULL;
        Subscription *s;

        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        s = add(f, a, IN_DELETE_SELF, WATCHD_FLAG_PERSIST);
        want = g_strdup_printf("gone %u deleted", s->id);
        fake_backend_push(f->fake, wd_of(f, a), IN_MOVE_SELF, 0, NULL);
        turn(f);
        g_assert_cmpuint(f->sink.events->len, ==, 1); /* delivered first: it asked for IN_DELETE_SELF */
        g_assert_cmpuint(sink_event(&f->sink, 0)->mask, ==, IN_MOVE_SELF);
        g_assert_cmpuint(f->asked->len, ==, 1);
        g_assert_cmpstr(f->asked->pdata[0], ==, want);
}

/* The kernel's overflow: counted, and the layer above is asked to tell everyone. */
static void test_overflow(Fixture *f, gconstpointer data) {
        add(f, f->dir, IN_CREATE, 0);
        fake_backend_push(f->fake, -1, IN_Q_OVERFLOW, 0, NULL);
        turn(f);
        g_assert_cmpuint(f->asked->len, ==, 1);
        g_assert_cmpstr(f->asked->pdata[0], ==, "overflow-all");
        g_assert_cmpuint(events_get_stats(f->events)->kernel_overflows, ==, 1);
        g_assert_cmpuint(f->sink.events->len, ==, 0);
}

/* A record of a watch no longer ours is dropped; one of a subscription ended is no one's. */
static void test_unknown_wd(Fixture *f, gconstpointer data) {
        Subscription *s = add(f, f->dir, IN_CREATE, 0);
        int wd = wd_of(f, f->dir);

        client_unlink_subscription(f->c, s);
        watch_table_unsubscribe(f->table, s);
        fake_backend_push(f->fake, wd, IN_CREATE, 0, "late");
        fake_backend_push(f->fake, 4000, IN_CREATE, 0, "never");
        turn(f);
        g_assert_cmpuint(f->sink.events->len, ==, 0);
        g_assert_cmpuint(events_get_stats(f->events)->events_read, ==, 2);
}

/* A slice with no budget handles one record and keeps the rest of the read (events_backlog()). */
static void test_slices(Fixture *f, gconstpointer data) {
        Subscription *s = add(f, f->dir, IN_CREATE, 0);
        int wd = wd_of(f, f->dir);
        uint64_t t;

        for (int i = 0; i < 10; i++) {
                char name[8];

                g_snprintf(name, sizeof(name), "n%d", i);
                fake_backend_push(f->fake, wd, IN_CREATE, 0, name);
        }
        g_assert_true(events_slice(f->events, 0));
        g_assert_true(events_backlog(f->events, &t));
        g_assert_cmpuint(events_get_stats(f->events)->events_read, ==, 1);
        turn(f);
        g_assert_false(events_backlog(f->events, &t));
        g_assert_cmpuint(f->sink.events->len, ==, 10);
        for (guint i = 0; i < 10; i++) {
                g_autofree char *want = g_strdup_printf("%s/n%u", f->dir, i);

                g_assert_cmpuint(sink_event(&f->sink, i)->id, ==, s->id);
                g_assert_cmpstr(sink_event(&f->sink, i)->path, ==, want); /* kernel order */
        }
}

/* A read that left room for the longest record took all there was: no read
 * that would get EAGAIN follows it (the loop is woken again by the fd). */
static void test_short_read(Fixture *f, gconstpointer data) {
        int wd;

        add(f, f->dir, IN_CREATE, 0);
        wd = wd_of(f, f->dir);
        fake_backend_push(f->fake, wd, IN_CREATE, 0, "a");
        fake_backend_push(f->fake, wd, IN_CREATE, 0, "b");
        turn(f);
        g_assert_cmpuint(f->fake->n_read, ==, 1);
        g_assert_cmpuint(f->sink.events->len, ==, 2);
        fake_backend_push(f->fake, wd, IN_CREATE, 0, "c");
        turn(f);
        g_assert_cmpuint(f->fake->n_read, ==, 2);
        g_assert_cmpuint(f->sink.events->len, ==, 3);
        /* Nothing queued: the one read gets EAGAIN. */
        turn(f);
        g_assert_cmpuint(f->fake->n_read, ==, 3);
}

/* Full reads are followed by another until one is short. */
static void test_full_reads(Fixture *f, gconstpointer data) {
        int wd;

        add(f, f->dir, IN_CREATE, 0);
        wd = wd_of(f, f->dir);
        /* 700 records of 16 + 208 bytes (a name of 200): 156,800 bytes, two full reads of the
         * 64 KiB buffer (292 records each) and a short one. */
        for (int i = 0; i < 700; i++) {
                char name[201];

                memset(name, 'n', 200);
                g_snprintf(name, 8, "f%06d", i);
                name[7] = 'n';
                name[200] = '\0';
                fake_backend_push(f->fake, wd, IN_CREATE, 0, name);
        }
        turn(f);
        g_assert_cmpuint(f->sink.events->len, ==, 700);
        g_assert_cmpuint(f->fake->n_read, ==, 3);
}

/* What waits for the queue to be read empty gets a read that finds it so,
 * after the records handled, even after a short read: here the names a scan
 * of a new directory reported, whose kernel records (queued before the scan
 * saw them, maybe after the read) are dropped until then (tree.h). */
static void test_short_read_waits(Fixture *f, gconstpointer data) {
        g_autofree char *sub = in(f, "sub"), *subf = in(f, "sub/f");

        add(f, f->dir, IN_CREATE, WATCHD_FLAG_RECURSIVE);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        g_assert_true(g_file_set_contents(subf, "", 0, NULL));
        fake_backend_push(f->fake, wd_of(f, f->dir), IN_CREATE | IN_ISDIR, 0, "sub");
        turn(f);
        g_assert_cmpuint(f->sink.events->len, ==, 2); /* sub, and f from the scan */
        g_assert_cmpstr(sink_event(&f->sink, 1)->path, ==, subf);
        g_assert_cmpuint(f->fake->n_read, ==, 2); /* the second found the queue empty */
        g_assert_false(tree_waits_read_empty(f->tree));
}

/* A rename's two halves are queued one after the other, and a read can find
 * the queue empty between them. The directory renamed inside the tree keeps
 * its link (and watch) across that read, so a file made in it at once is
 * reported at its new path. Before, the read that found the queue empty
 * ended the move: the directory was unlinked as if it had left the tree (its
 * watch removed), walked again at its new name without reports, and the file
 * made meanwhile was never reported. A directory whose IN_MOVED_TO does not
 * come leaves the tree once TREE_MOVE_GRACE_USEC has passed. */
static void test_rename_split(Fixture *f, gconstpointer data) {
        g_autofree char *a = in(f, "a"), *b = in(f, "b"), *bf = in(f, "b/f");
        unsigned removed, reads;
        bool seen = false;
        int wd;

        add(f, f->dir, IN_CREATE | IN_MOVE, WATCHD_FLAG_RECURSIVE);
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        fake_backend_push(f->fake, wd_of(f, f->dir), IN_CREATE | IN_ISDIR, 0, "a");
        turn(f);
        wd = wd_of(f, a);
        removed = f->fake->n_rm;

        g_assert_cmpint(rename(a, b), ==, 0);
        fake_backend_push(f->fake, wd_of(f, f->dir), IN_MOVED_FROM | IN_ISDIR, 9, "a");
        reads = f->fake->n_read;
        turn(f);
        g_assert_cmpuint(f->fake->n_read, >, reads + 1); /* a read found the queue empty */
        g_assert_cmpuint(f->fake->n_rm, ==, removed);    /* b's watch stays */
        g_assert_cmpuint(tree_next_deadline(f->tree), !=, UINT64_MAX);

        g_assert_true(g_file_set_contents(bf, "", 0, NULL));
        fake_backend_push(f->fake, wd_of(f, f->dir), IN_MOVED_TO | IN_ISDIR, 9, "b");
        fake_backend_push(f->fake, wd, IN_CREATE, 0, "f");
        turn(f);
        g_assert_cmpuint(f->fake->n_rm, ==, removed);
        g_assert_cmpint(wd_of(f, b), ==, wd);
        g_assert_cmpuint(tree_next_deadline(f->tree), ==, UINT64_MAX);
        for (guint i = 0; i < f->sink.events->len; i++)
                seen = seen ||
                        (sink_event(&f->sink, i)->mask == IN_CREATE && strcmp(sink_event(&f->sink, i)->path, bf) == 0);
        g_assert_true(seen);

        /* Moved out (here: its IN_MOVED_TO never comes): it leaves the tree after the grace. */
        fake_backend_push(f->fake, wd_of(f, f->dir), IN_MOVED_FROM | IN_ISDIR, 10, "b");
        turn(f);
        g_assert_cmpuint(f->fake->n_rm, ==, removed);
        tree_expire(f->tree, tree_next_deadline(f->tree) - 1);
        g_assert_cmpuint(f->fake->n_rm, ==, removed);
        tree_expire(f->tree, tree_next_deadline(f->tree));
        g_assert_cmpuint(f->fake->n_rm, ==, removed + 1);
        g_assert_cmpuint(tree_next_deadline(f->tree), ==, UINT64_MAX);
}

/* Until a job has ended (its completion waits), without running it. */
static void fswork_await_ended(FsWork *w) {
        for (int i = 0; i < 6000; i++) {
                struct pollfd p = { .fd = fswork_fd(w), .events = POLLIN };
                FsWorkStats st;

                fswork_get_stats(w, &st);
                if (st.running == 0 && st.queued == 0 && poll(&p, 1, 0) == 1)
                        return;
                g_usleep(1000);
        }
        g_assert_not_reached();
}

/* A walk's job opens a directory by the name it read (a); the loop reads its
 * rename (a to b) before the job's completion: not linked yet, so the
 * IN_MOVED_TO scans b (an open of its parent in a job, holding the owner).
 * The completion must not link it as a: it is b now, and the scan of b,
 * finding it linked, would leave it under its old name for good (a file
 * made in it reported as a/f). So a name the kernel told of while the job
 * was out is left to its records (Tree.unread, Frame.told). */
static void test_walk_job_renamed(Fixture *f, gconstpointer data) {
        g_autofree char *a = in(f, "a"), *b = in(f, "b"), *bf = in(f, "b/f"), *af = in(f, "a/f");
        Subscription *s = add(f, f->dir, IN_CREATE | IN_MOVE, WATCHD_FLAG_RECURSIVE);
        TreeWalk *walk = NULL;
        Holds *holds = NULL;
        FsWork *fw = NULL;
        bool seen_b = false, seen_a = false;
        int fd;

        if (getuid() != 0) {
                g_test_skip("a job takes on its owner's credentials: needs root");
                return;
        }
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_cmpint(fswork_new(&(FsWorkOps) {}, NULL, &fw), ==, 0);
        g_assert_cmpint(holds_new(&(HoldsOps) {}, NULL, &holds), ==, 0);
        tree_set_fswork(f->tree, fw);
        tree_set_holds(f->tree, holds);

        fd = open(f->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(tree_walk_below(f->tree, s, fd, /* all_or_nothing= */ true, &walk), ==, 0);
        close(fd);
        g_assert_nonnull(walk); /* in a job: it read the root and opened a */
        fswork_await_ended(fw);

        g_assert_cmpint(rename(a, b), ==, 0);
        fake_backend_push(f->fake, wd_of(f, f->dir), IN_MOVED_FROM | IN_ISDIR, 5, "a");
        fake_backend_push(f->fake, wd_of(f, f->dir), IN_MOVED_TO | IN_ISDIR, 5, "b");
        turn(f);
        fswork_settle(fw); /* the walk's completion first, then the scan's */
        turn(f);

        g_assert_true(g_file_set_contents(bf, "", 0, NULL));
        fake_backend_push(f->fake, wd_of(f, b), IN_CREATE, 0, "f");
        turn(f);
        for (guint i = 0; i < f->sink.events->len; i++) {
                seen_b = seen_b || strcmp(sink_event(&f->sink, i)->path, bf) == 0;
                seen_a = seen_a || strcmp(sink_event(&f->sink, i)->path, af) == 0;
        }
        g_assert_false(seen_a);
        g_assert_true(seen_b);

        tree_set_fswork(f->tree, NULL);
        fswork_free(fw);
        tree_set_holds(f->tree, NULL);
        holds_free(holds);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
#define ADD(name, fn) g_test_add(name, Fixture, NULL, setup, fn, teardown)
        ADD("/events/short-read", test_short_read);
        ADD("/events/full-reads", test_full_reads);
        ADD("/events/short-read-waits", test_short_read_waits);
        ADD("/events/mask-and-path", test_mask_and_path);
        ADD("/events/deliver", test_deliver);
        ADD("/events/oneshot", test_oneshot);
        ADD("/events/ignored", test_ignored);
        ADD("/events/move-self", test_move_self);
        ADD("/events/overflow", test_overflow);
        ADD("/events/unknown-wd", test_unknown_wd);
        ADD("/events/slices", test_slices);
        ADD("/events/rename-split", test_rename_split);
        ADD("/events/walk-job-renamed", test_walk_job_renamed);
        return g_test_run();
}
