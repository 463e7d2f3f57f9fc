/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <assert.h>
#include <errno.h>
#include <glib.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "macro.h"
#include "watch_narrow.h"

/* The inodes of the last kernel calls of the narrowings (of every
 * narrower: workers may outlive one), NARROWER_TOUCHED_RING of them, for
 * narrower_touched(): a watch placed in a worker meanwhile may have lost
 * its bits to one. */

typedef struct Touched {
        dev_t dev;
        ino_t ino;
} Touched;

static pthread_mutex_t touched_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t touched_seq;                   /* kernel calls recorded (under touched_lock, or an atomic read) */
static Touched touched[NARROWER_TOUCHED_RING]; /* call k at k % NARROWER_TOUCHED_RING */

struct Narrower {
        Backend *backend;
        FsWork *fswork;
        NarrowDone done;
        void *userdata;
        GHashTable *jobs; /* key -> its NarrowJob out */
};

typedef enum NarrowState {
        NARROW_WAITING,   /* not started */
        NARROW_APPLYING,  /* the worker is in the kernel call */
        NARROW_DONE,      /* r says how it went */
        NARROW_CANCELLED, /* the loop took it back before it started */
} NarrowState;

typedef struct NarrowJob {
        Narrower *n;     /* NULL once the narrower went */
        const void *key; /* NULL once settled: the result is not the key's */
        Backend *backend;
        char *path;
        dev_t dev;
        ino_t ino;
        int wd;
        int other_wd;  /* the add gave another wd, or -1 */
        uint32_t mask; /* what it sets */
        pthread_mutex_t lock;
        pthread_cond_t cond; /* signalled when it leaves NARROW_APPLYING */
        NarrowState state;   /* under lock, as r and other_wd */
        int r;               /* 0: the kernel mask is mask; or -errno */
} NarrowJob;

static void job_free(NarrowJob *j) {
        pthread_mutex_destroy(&j->lock);
        pthread_cond_destroy(&j->cond);
        free(j->path);
        free(j);
}

int narrower_new(Backend *backend, NarrowDone done, void *userdata, Narrower **ret) {
        Narrower *n;

        n = calloc(1, sizeof(Narrower));
        if (!n)
                return -ENOMEM;
        *n = (Narrower) {
                .backend = backend,
                .done = done,
                .userdata = userdata,
                .jobs = g_hash_table_new(g_direct_hash, g_direct_equal),
        };
        *ret = n;
        return 0;
}

Narrower *narrower_free(Narrower *n) {
        GHashTableIter i;
        gpointer v;

        if (!n)
                return NULL;
        g_hash_table_iter_init(&i, n->jobs);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                NarrowJob *j = v;

                pthread_mutex_lock(&j->lock);
                if (j->state == NARROW_WAITING)
                        j->state = NARROW_CANCELLED;
                pthread_mutex_unlock(&j->lock);
                j->key = NULL;
                j->n = NULL;
        }
        g_hash_table_destroy(n->jobs);
        free(n);
        return NULL;
}

void narrower_set_fswork(Narrower *n, FsWork *fswork) {
        n->fswork = fswork;
}

bool narrower_has_fswork(const Narrower *n) {
        return n->fswork;
}

static void narrower_touch(dev_t dev, ino_t ino) {
        pthread_mutex_lock(&touched_lock);
        touched[touched_seq % NARROWER_TOUCHED_RING] = (Touched) { .dev = dev, .ino = ino };
        __atomic_store_n(&touched_seq, touched_seq + 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&touched_lock);
}

uint64_t narrower_seq(void) {
        return __atomic_load_n(&touched_seq, __ATOMIC_ACQUIRE);
}

bool narrower_touched(dev_t dev, ino_t ino, uint64_t seq) {
        bool found;

        pthread_mutex_lock(&touched_lock);
        found = touched_seq - seq > NARROWER_TOUCHED_RING; /* the ring went round: it may have */
        for (uint64_t k = seq; k < touched_seq && !found; k++)
                found = touched[k % NARROWER_TOUCHED_RING].dev == dev && touched[k % NARROWER_TOUCHED_RING].ino == ino;
        pthread_mutex_unlock(&touched_lock);
        return found;
}

/* In a worker, as the daemon: the path opened, checked, and the watch added again with j->mask. */
static void job_run(void *data) {
        NarrowJob *j = data;
        _cleanup_close_ int pfd = -1;
        struct stat st;
        int wd, r = 0;

        pfd = access_open_path(j->path, 0);
        if (pfd < 0)
                r = pfd;
        else if (fstat(pfd, &st) < 0)
                r = negative_errno();
        else if (st.st_dev != j->dev || st.st_ino != j->ino || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
                r = -ESTALE;

        pthread_mutex_lock(&j->lock);
        if (j->state == NARROW_CANCELLED || r < 0) {
                if (j->state != NARROW_CANCELLED) {
                        j->state = NARROW_DONE;
                        j->r = r;
                }
                pthread_mutex_unlock(&j->lock);
                return;
        }
        j->state = NARROW_APPLYING;
        pthread_mutex_unlock(&j->lock);

        r = backend_add_watch_any_thread(j->backend, pfd, j->mask, &wd); /* O_PATH: see backend.h */
        narrower_touch(j->dev, j->ino);

        pthread_mutex_lock(&j->lock);
        j->state = NARROW_DONE;
        j->r = r < 0 ? r : 0;
        if (r >= 0 && wd != j->wd) {
                /* Not the watch it narrowed (removed meanwhile): the completion says so. */
                j->r = -ESTALE;
                j->other_wd = wd;
        }
        pthread_cond_broadcast(&j->cond);
        pthread_mutex_unlock(&j->lock);
}

/* On the loop, after job_run(); the worker is done with j. */
static void job_done(void *data, int error) {
        NarrowJob *j = data;
        Narrower *n = j->n;
        NarrowResult res = {
                .error = error,
                .applied = error == 0 && j->state == NARROW_DONE && j->r >= 0,
                .mask = j->mask,
                .other_wd = error == 0 && j->state == NARROW_DONE ? j->other_wd : -1,
                .path = j->path,
                .r = j->state == NARROW_CANCELLED ? -ECANCELED : j->r,
        };

        if (n) {
                if (j->key)
                        g_hash_table_remove(n->jobs, j->key);
                n->done(j->key, &res, n->userdata);
        }
        job_free(j);
}

int narrower_submit(Narrower *n, const void *key, const char *path, dev_t dev, ino_t ino, int wd, uint32_t mask,
                    uid_t uid) {
        NarrowJob *j;
        int r;

        if (!n->fswork)
                return -EOPNOTSUPP;
        assert(!g_hash_table_contains(n->jobs, key));
        j = calloc(1, sizeof(NarrowJob));
        if (!j)
                return -ENOMEM;
        *j = (NarrowJob) {
                .n = n,
                .key = key,
                .backend = n->backend,
                .path = strdup(path),
                .dev = dev,
                .ino = ino,
                .wd = wd,
                .other_wd = -1,
                .mask = mask,
        };
        pthread_mutex_init(&j->lock, NULL);
        pthread_cond_init(&j->cond, NULL);
        if (!j->path) {
                job_free(j);
                return -ENOMEM;
        }
        r = fswork_submit_daemon(n->fswork, dev, uid, job_run, job_done, j);
        if (r < 0) {
                job_free(j);
                return r;
        }
        g_hash_table_insert(n->jobs, (gpointer) key, j);
        return 0;
}

bool narrower_out(Narrower *n, const void *key, uint32_t *ret_mask) {
        NarrowJob *j = g_hash_table_lookup(n->jobs, key);

        if (j && ret_mask)
                *ret_mask = j->mask;
        return j;
}

bool narrower_settle(Narrower *n, const void *key, bool wait, uint32_t *ret_mask) {
        NarrowJob *j = g_hash_table_lookup(n->jobs, key);
        bool applied = false;

        if (!j)
                return false;
        pthread_mutex_lock(&j->lock);
        while (wait && j->state == NARROW_APPLYING)
                pthread_cond_wait(&j->cond, &j->lock);
        if (j->state == NARROW_WAITING)
                j->state = NARROW_CANCELLED;
        else if (wait && j->state == NARROW_DONE && j->r >= 0) {
                applied = true;
                *ret_mask = j->mask;
        }
        pthread_mutex_unlock(&j->lock);
        g_hash_table_remove(n->jobs, key);
        j->key = NULL;
        return applied;
}
