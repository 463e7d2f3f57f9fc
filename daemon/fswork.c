/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fswork - file system work off the event loop, one queue per file system
 *
 * One mutex guards everything shared: the lanes, the ring of lanes with work
 * (ready: queued jobs, none running), the completions. Workers sleep on one
 * condition variable; a worker takes the first ready lane, the lane's next
 * user in turn, and that user's oldest job, and runs it without the lock.
 * A completion is queued under the lock and the eventfd written; the loop's
 * thread reads it and runs the completions in order.
 *
 * Credentials: a worker sets its own (access_become(): fsuid, fsgid, and the
 * groups with the raw system call) around each job and restores them
 * after, so the loop's thread, and every other worker, stays the daemon.
 */

#include <assert.h>
#include <errno.h>
#include <glib.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "fswork.h"
#include "log.h"
#include "macro.h"

typedef struct FsJob {
        GList link;    /* in its LaneUser's jobs, then in the completions */
        Caller caller; /* owns gids */
        bool as_caller;
        FsJobRun run;
        FsJobDone done;
        void *data;
        int error; /* its credentials could not be taken: not run */
} FsJob;

typedef struct Lane Lane;

/* A uid's jobs in a lane. */
typedef struct LaneUser {
        uid_t uid;
        GQueue jobs; /* FsJob */
        GList link;  /* in lane->users while it has jobs */
} LaneUser;

struct Lane {
        dev_t dev;
        GQueue users;       /* LaneUser with jobs, the one whose turn it is first */
        GHashTable *by_uid; /* uid -> LaneUser */
        uint32_t queued;
        bool running;
        bool stalled;          /* told: stalled(dev, true) */
        bool recovered;        /* its stalled job returned: stalled(dev, false) to tell */
        uint64_t started_usec; /* of the job running */
        uid_t running_uid;     /* of the job running: a stalled lane counts against it */
        GList ready_link;      /* in w->ready */
        bool in_ready;
};

struct FsWork {
        FsWorkOps ops;
        void *userdata;
        int efd;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        GHashTable *lanes;        /* dev -> Lane */
        GQueue ready;             /* Lane */
        GQueue done;              /* FsJob, ended */
        GHashTable *stuck_by_uid; /* uid -> the stalled lanes its jobs hold (> 0) */
        unsigned threads, idle, stuck;
        bool stopping;
        FsWorkStats stats;
};

static uint64_t now_mono_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static void job_free(FsJob *j) {
        free(j->caller.gids);
        free(j);
}

/* At fswork_free(): the completion is told the loop is gone, to free the job's data. */
static void job_discard(FsJob *j) {
        j->done(j->data, -ESHUTDOWN);
        job_free(j);
}

static void lane_user_free(gpointer p) {
        LaneUser *u = p;

        assert(g_queue_is_empty(&u->jobs));
        free(u);
}

static void lane_free(gpointer p) {
        Lane *l = p;

        g_hash_table_unref(l->by_uid);
        free(l);
}

int fswork_new(const FsWorkOps *ops, void *userdata, FsWork **ret) {
        FsWork *w = calloc(1, sizeof(FsWork));

        if (!w)
                return -ENOMEM;
        w->ops = *ops;
        w->userdata = userdata;
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0) {
                int r = negative_errno();

                free(w);
                return r;
        }
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        w->lanes = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, lane_free);
        w->stuck_by_uid = g_hash_table_new(g_direct_hash, g_direct_equal);
        *ret = w;
        return 0;
}

FsWork *fswork_free(FsWork *w) {
        if (!w)
                return NULL;
        pthread_mutex_lock(&w->lock);
        w->stopping = true;
        pthread_cond_broadcast(&w->cond);
        /* The jobs running return, unless their file system does not answer:
         * those threads are left to the process's exit, and w with them. */
        for (uint64_t until = now_mono_usec() + FSWORK_DEADLINE_USEC; w->threads > 0;) {
                struct timespec ts;

                if (now_mono_usec() >= until) {
                        log_notice("%u file system job(s) still wait for their file system: not waited for.", w->threads);
                        pthread_mutex_unlock(&w->lock);
                        return NULL;
                }
                (void) clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 100 * 1000 * 1000;
                if (ts.tv_nsec >= 1000000000) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000;
                }
                (void) pthread_cond_timedwait(&w->cond, &w->lock, &ts);
        }
        pthread_mutex_unlock(&w->lock);
        /* What ended without its completion, and what never ran: their owners free their data. */
        for (GList *l = w->done.head; l;) {
                GList *next = l->next;

                job_discard(l->data);
                l = next;
        }
        {
                GHashTableIter it;
                gpointer v;

                g_hash_table_iter_init(&it, w->lanes);
                while (g_hash_table_iter_next(&it, NULL, &v)) {
                        Lane *lane = v;
                        GHashTableIter ui;
                        gpointer uv;

                        g_hash_table_iter_init(&ui, lane->by_uid);
                        while (g_hash_table_iter_next(&ui, NULL, &uv)) {
                                LaneUser *u = uv;
                                FsJob *j;

                                while ((j = g_queue_peek_head(&u->jobs))) {
                                        g_queue_unlink(&u->jobs, &j->link);
                                        job_discard(j);
                                }
                        }
                }
        }
        g_hash_table_unref(w->lanes);
        g_hash_table_unref(w->stuck_by_uid);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        safe_close(w->efd);
        free(w);
        return NULL;
}

int fswork_fd(const FsWork *w) {
        return w->efd;
}

/* Called with the lock held. */
static void lane_set_ready(FsWork *w, Lane *l) {
        bool ready = l->queued > 0 && !l->running;

        if (ready && !l->in_ready) {
                l->ready_link.data = l;
                g_queue_push_tail_link(&w->ready, &l->ready_link);
                l->in_ready = true;
        } else if (!ready && l->in_ready) {
                g_queue_unlink(&w->ready, &l->ready_link);
                l->in_ready = false;
        }
}

/* Called with the lock held: the stalled lanes uid's jobs hold. */
static unsigned user_stuck(const FsWork *w, uid_t uid) {
        return GPOINTER_TO_UINT(g_hash_table_lookup(w->stuck_by_uid, GUINT_TO_POINTER(uid)));
}

/* Called with the lock held: a stalled lane's job of uid started (+1) or returned (-1). */
static void user_stuck_add(FsWork *w, uid_t uid, int delta) {
        unsigned n = user_stuck(w, uid) + (unsigned) delta;

        if (n == 0)
                g_hash_table_remove(w->stuck_by_uid, GUINT_TO_POINTER(uid));
        else
                g_hash_table_insert(w->stuck_by_uid, GUINT_TO_POINTER(uid), GUINT_TO_POINTER(n));
}

/* Called with the lock held: the next job to run, and its lane. The ready
 * lanes in turn, in each the users in turn, past those whose jobs hold
 * FSWORK_USER_STUCK_MAX stalled lanes already: their jobs wait until one
 * answers. NULL: nothing can run now. */
static FsJob *next_job(FsWork *w, Lane **ret) {
        for (GList *rl = w->ready.head; rl; rl = rl->next) {
                Lane *l = rl->data;

                for (GList *ul = l->users.head; ul; ul = ul->next) {
                        LaneUser *u = ul->data;
                        FsJob *j;

                        if (user_stuck(w, u->uid) >= FSWORK_USER_STUCK_MAX)
                                continue;
                        j = g_queue_pop_head_link(&u->jobs)->data;
                        g_queue_unlink(&l->users, &u->link);
                        if (!g_queue_is_empty(&u->jobs))
                                g_queue_push_tail_link(&l->users, &u->link);
                        l->queued--;
                        l->running_uid = u->uid;
                        *ret = l;
                        return j;
                }
        }
        return NULL;
}

static void *worker(void *arg) {
        FsWork *w = arg;
        sigset_t all;

        /* Signals are the loop's (signalfd): none may land here. */
        sigfillset(&all);
        (void) pthread_sigmask(SIG_BLOCK, &all, NULL);

        pthread_mutex_lock(&w->lock);
        for (;;) {
                AccessSaved saved;
                Lane *l = NULL;
                FsJob *j = NULL;
                int r;

                while (!w->stopping && !(j = next_job(w, &l))) {
                        w->idle++;
                        pthread_cond_wait(&w->cond, &w->lock);
                        w->idle--;
                }
                if (w->stopping)
                        break;
                l->running = true;
                l->started_usec = now_mono_usec();
                lane_set_ready(w, l);
                w->stats.running++;
                w->stats.queued--;
                /* The loop arms its deadline timer after a dispatch: one now. */
                (void) eventfd_write(w->efd, 1);
                pthread_mutex_unlock(&w->lock);

                r = j->as_caller ? access_become(&j->caller, &saved) : 0;
                if (r >= 0) {
                        j->run(j->data);
                        if (j->as_caller)
                                access_restore(&saved);
                }

                pthread_mutex_lock(&w->lock);
                w->stats.running--;
                l->running = false;
                if (l->stalled) {
                        l->stalled = false;
                        l->recovered = true;
                        w->stuck--;
                        w->stats.stalled_lanes--;
                        /* Its user's jobs that waited for this may run now, in any lane. */
                        if (user_stuck(w, l->running_uid) == FSWORK_USER_STUCK_MAX)
                                pthread_cond_broadcast(&w->cond);
                        user_stuck_add(w, l->running_uid, -1);
                }
                lane_set_ready(w, l);
                if (l->in_ready)
                        pthread_cond_signal(&w->cond);
                j->error = r < 0 ? r : 0;
                g_queue_push_tail_link(&w->done, &j->link);
                (void) eventfd_write(w->efd, 1);
        }
        w->threads--;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

/* Called with the lock held: one more thread if the lanes that answer need one. */
static int maybe_start_thread(FsWork *w) {
        pthread_attr_t attr;
        pthread_t t;
        int r;

        if (w->idle >= w->ready.length)
                return 0;
        /* Past the bounds the job waits in its lane, for a thread that
         * serves or one that returns: with every thread held by file systems
         * that do not answer too, never on the loop (a caller's fallback
         * there would wait as long, for everyone). */
        if (w->threads - w->stuck >= FSWORK_THREADS_MAX || w->threads >= FSWORK_THREADS_HARD_MAX)
                return 0;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* Small stacks: a job is a few system calls (a getdents64 buffer at most). */
        pthread_attr_setstacksize(&attr, 256 * 1024);
        r = -pthread_create(&t, &attr, worker, w);
        pthread_attr_destroy(&attr);
        if (r < 0)
                return w->threads > 0 ? 0 : r;
        w->threads++;
        w->stats.threads = w->threads;
        return 0;
}

/* caller NULL: as the daemon, taking turns and counted as uid's. */
static int submit(FsWork *w, dev_t dev, const Caller *caller, uid_t uid, FsJobRun run, FsJobDone done, void *data) {
        int64_t key = (int64_t) dev;
        LaneUser *u;
        Lane *l;
        FsJob *j;
        int r;

        j = calloc(1, sizeof(FsJob));
        if (!j)
                return -ENOMEM;
        *j = (FsJob) { .run = run, .done = done, .data = data, .link.data = j };
        if (caller) {
                j->as_caller = true;
                j->caller = *caller;
                j->caller.gids = calloc(caller->n_gids + 1, sizeof(gid_t));
                if (!j->caller.gids) {
                        free(j);
                        return -ENOMEM;
                }
                if (caller->n_gids > 0)
                        memcpy(j->caller.gids, caller->gids, caller->n_gids * sizeof(gid_t));
        }

        pthread_mutex_lock(&w->lock);
        l = g_hash_table_lookup(w->lanes, &key);
        if (!l) {
                l = calloc(1, sizeof(Lane));
                if (!l) {
                        pthread_mutex_unlock(&w->lock);
                        job_free(j);
                        return -ENOMEM;
                }
                l->dev = dev;
                l->by_uid = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, lane_user_free);
                /* The key lives in the lane: dev_t is 64 bits. */
                g_hash_table_insert(w->lanes, (gpointer) &l->dev, l);
        }
        u = g_hash_table_lookup(l->by_uid, GUINT_TO_POINTER(uid));
        if (!u) {
                u = calloc(1, sizeof(LaneUser));
                if (!u) {
                        pthread_mutex_unlock(&w->lock);
                        job_free(j);
                        return -ENOMEM;
                }
                u->uid = uid;
                u->link.data = u;
                g_hash_table_insert(l->by_uid, GUINT_TO_POINTER(u->uid), u);
        }
        if (g_queue_is_empty(&u->jobs))
                g_queue_push_tail_link(&l->users, &u->link);
        g_queue_push_tail_link(&u->jobs, &j->link);
        l->queued++;
        w->stats.queued++;
        w->stats.jobs++;
        lane_set_ready(w, l);
        r = maybe_start_thread(w);
        if (r < 0) {
                /* No thread at all: take it back. */
                g_queue_unlink(&u->jobs, &j->link);
                if (g_queue_is_empty(&u->jobs))
                        g_queue_unlink(&l->users, &u->link);
                l->queued--;
                w->stats.queued--;
                lane_set_ready(w, l);
                pthread_mutex_unlock(&w->lock);
                job_free(j);
                return r;
        }
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        return 0;
}

int fswork_submit(FsWork *w, dev_t dev, const Caller *caller, FsJobRun run, FsJobDone done, void *data) {
        return submit(w, dev, caller, caller ? caller->uid : 0, run, done, data);
}

int fswork_submit_daemon(FsWork *w, dev_t dev, uid_t uid, FsJobRun run, FsJobDone done, void *data) {
        return submit(w, dev, NULL, uid, run, done, data);
}

void fswork_dispatch(FsWork *w) {
        GQueue done = G_QUEUE_INIT;
        GList *stalled_over = NULL;
        eventfd_t v;
        FsJob *j;

        (void) eventfd_read(w->efd, &v);
        pthread_mutex_lock(&w->lock);
        done = w->done;
        g_queue_init(&w->done);
        /* Lanes that answered again: told once their completions have run. */
        {
                GHashTableIter it;
                gpointer val;

                g_hash_table_iter_init(&it, w->lanes);
                while (g_hash_table_iter_next(&it, NULL, &val)) {
                        Lane *l = val;

                        if (l->recovered) {
                                l->recovered = false;
                                stalled_over = g_list_prepend(stalled_over, l);
                        }
                }
        }
        pthread_mutex_unlock(&w->lock);

        while ((j = g_queue_peek_head(&done))) {
                g_queue_unlink(&done, &j->link);
                if (j->done)
                        j->done(j->data, j->error);
                job_free(j);
        }
        for (GList *l = stalled_over; l; l = l->next) {
                Lane *lane = l->data;

                log_notice("The file system of device %u:%u answers again.", major(lane->dev), minor(lane->dev));
                if (w->ops.stalled)
                        w->ops.stalled(lane->dev, false, w->userdata);
        }
        g_list_free(stalled_over);
}

uint64_t fswork_next_deadline(FsWork *w) {
        uint64_t next = UINT64_MAX;
        GHashTableIter it;
        gpointer v;

        pthread_mutex_lock(&w->lock);
        if (w->stats.running > 0) {
                g_hash_table_iter_init(&it, w->lanes);
                while (g_hash_table_iter_next(&it, NULL, &v)) {
                        Lane *l = v;

                        if (l->running && !l->stalled)
                                next = MIN(next, l->started_usec + FSWORK_DEADLINE_USEC);
                }
        }
        pthread_mutex_unlock(&w->lock);
        return next;
}

void fswork_check(FsWork *w, uint64_t now_usec) {
        GList *newly = NULL, *capped = NULL;
        GHashTableIter it;
        gpointer v;

        pthread_mutex_lock(&w->lock);
        g_hash_table_iter_init(&it, w->lanes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                Lane *l = v;

                if (l->running && !l->stalled && now_usec >= l->started_usec + FSWORK_DEADLINE_USEC) {
                        l->stalled = true;
                        w->stuck++;
                        w->stats.stalled_lanes++;
                        w->stats.stalls++;
                        newly = g_list_prepend(newly, l);
                        user_stuck_add(w, l->running_uid, +1);
                        if (user_stuck(w, l->running_uid) == FSWORK_USER_STUCK_MAX)
                                capped = g_list_prepend(capped, GUINT_TO_POINTER(l->running_uid));
                }
        }
        /* The lanes that answer may need a thread in place of the stuck ones. */
        if (newly && !g_queue_is_empty(&w->ready))
                (void) maybe_start_thread(w);
        pthread_mutex_unlock(&w->lock);

        for (GList *l = newly; l; l = l->next) {
                Lane *lane = l->data;

                log_warning("The file system of device %u:%u has not answered for %u s: its subscriptions "
                            "are told (Overflow), the others go on.",
                            major(lane->dev), minor(lane->dev), FSWORK_DEADLINE_USEC / 1000000u);
                if (w->ops.stalled)
                        w->ops.stalled(lane->dev, true, w->userdata);
        }
        g_list_free(newly);
        for (GList *l = capped; l; l = l->next)
                log_warning("The jobs of uid %u wait for %u file systems that do not answer: its other file system "
                            "work waits until one answers, the other users' goes on.",
                            GPOINTER_TO_UINT(l->data), FSWORK_USER_STUCK_MAX);
        g_list_free(capped);
}

bool fswork_stalled(FsWork *w, dev_t dev) {
        int64_t key = (int64_t) dev;
        Lane *l;
        bool r;

        pthread_mutex_lock(&w->lock);
        l = g_hash_table_lookup(w->lanes, &key);
        r = l && l->stalled;
        pthread_mutex_unlock(&w->lock);
        return r;
}

void fswork_get_stats(FsWork *w, FsWorkStats *ret) {
        pthread_mutex_lock(&w->lock);
        *ret = w->stats;
        ret->threads = w->threads;
        pthread_mutex_unlock(&w->lock);
}
