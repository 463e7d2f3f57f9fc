/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * poller - finding by polling the changes the kernel cannot report
 *
 * Work is taken in this order by poller_run(), all paid from one budget of
 * system calls: names the kernel reported (one statx each, so that the
 * snapshot holds what the kernel's record already told), then the users'
 * work in turns (PollUser): each user's first snapshots of new directories,
 * then the rounds of its groups that are due, at most USER_TURN system calls
 * before the next user with work has its turn. The groups that are not due
 * wait in a heap ordered by the start of their next round. A directory being
 * read keeps its open fd and the names listed so far between runs
 * (PollReader, poll_snapshot.c), so a large directory costs several runs,
 * not one long one, and a user has at most two directories open at a time
 * (a first snapshot and a round's).
 *
 * A round's records wait in the group (Change) until its last directory is
 * read, for the pairing of moves across its directories (poll_round.c); a
 * kernel event for a name drops that name's waiting change, since the
 * kernel's record has been or will be delivered. The groups between rounds
 * are in a heap (poll_heap.c). This file is the top of the poller's layers
 * (poller_internal.h): it calls the others, and none calls it; the structs
 * it shares with poll_heap.c are in poll_group.h.
 */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "poller.h"
#include "poller_internal.h"

enum {
        JOB_READ,
        JOB_RESTAT,
};

/* System calls of one read job: well within the lane's deadline (FSWORK_DEADLINE_USEC)
 * on a slow NFS server (a round trip a statx), so that only a file system
 * that does not answer is taken for one. */
#define JOB_OPS 1024u

/* System calls of one user's turn: a directory of about fifty names. */
#define USER_TURN 64u

/* ---- the poller ---- */

int poller_new(const PollerCallbacks *cb, void *userdata, uint32_t max_dirs_per_user, Poller **ret) {
        Poller *p = calloc(1, sizeof(Poller));

        if (!p)
                return -ENOMEM;
        p->cb = *cb;
        p->userdata = userdata;
        p->ops_per_run = POLLER_OPS_PER_RUN;
        p->max_dirs_per_user = max_dirs_per_user;
        p->users = g_hash_table_new(g_direct_hash, g_direct_equal);
        p->heap = g_ptr_array_new();
        g_queue_init(&p->turns);
        g_queue_init(&p->stale);
        *ret = p;
        return 0;
}

Poller *poller_free(Poller *p) {
        if (!p)
                return NULL;
        while (p->heap && p->heap->len > 0)
                poller_group_free(poll_heap_at(p->heap, 0));
        /* Left: users with groups in a round. */
        while (p->turns.head) {
                PollUser *u = p->turns.head->data;

                assert(u->active.head);
                poller_group_free(u->active.head->data);
        }
        if (p->heap)
                g_ptr_array_unref(p->heap);
        g_hash_table_destroy(p->users);
        free(p);
        return NULL;
}

void poller_set_limits(Poller *p, unsigned ops_per_run, uint32_t max_dirs_per_user) {
        p->ops_per_run = MAX(ops_per_run, 1u);
        p->max_dirs_per_user = max_dirs_per_user;
}

const PollIo *poller_io(const Poller *p) {
        return &p->io;
}

uint32_t poller_user_dirs(const Poller *p, uid_t uid) {
        const PollUser *u = g_hash_table_lookup(p->users, GUINT_TO_POINTER(uid));

        return u ? u->dirs : 0;
}

static PollUser *user_get(Poller *p, uid_t uid) {
        PollUser *u = g_hash_table_lookup(p->users, GUINT_TO_POINTER(uid));

        if (u)
                return u;
        u = calloc(1, sizeof(PollUser));
        if (!u)
                return NULL;
        u->uid = uid;
        u->turn_link.data = u;
        g_queue_init(&u->baseline);
        g_queue_init(&u->active);
        g_hash_table_insert(p->users, GUINT_TO_POINTER(uid), u);
        return u;
}

static void user_put(Poller *p, PollUser *u) {
        assert(u->groups > 0);
        if (--u->groups > 0)
                return;
        assert(!u->in_turns && u->dirs == 0);
        g_hash_table_remove(p->users, GUINT_TO_POINTER(u->uid));
        free(u);
}

/* Puts u in the ring of turns when it has work, takes it out when it has none. */
static void user_update_turn(Poller *p, PollUser *u) {
        bool work = (u->baseline.length > 0 || u->active.length > 0) && !u->blocked_on;

        if (work && !u->in_turns) {
                g_queue_push_tail_link(&p->turns, &u->turn_link);
                u->in_turns = true;
                u->spent = 0;
        } else if (!work && u->in_turns) {
                g_queue_unlink(&p->turns, &u->turn_link);
                u->in_turns = false;
        }
}

/* Frees what is left of g once it is out of every queue. */
static void group_release(PollGroup *g) {
        user_put(g->poller, g->user);
        g_ptr_array_unref(g->changes);
        free(g);
}

/* d has its first snapshot, or is to be read as a round's. */
static void dir_baseline_done(PollDir *d) {
        PollUser *u = d->group->user;

        g_queue_unlink(&u->baseline, &d->baseline_link);
        d->in_baseline = false;
        user_update_turn(d->group->poller, u);
}

/*
 * The phase of the sequence-th group, as a fraction of its interval: the
 * fractional parts of k times the golden ratio, which fill [0, 1) evenly
 * whatever the number of groups (a low-discrepancy sequence), so that groups
 * made together poll spread over the interval. Fixed point, 64 bits.
 */
static uint64_t phase_of(uint64_t sequence, uint64_t interval) {
        uint64_t frac = sequence * UINT64_C(0x9E3779B97F4A7C15);

        return (uint64_t) (((unsigned __int128) frac * interval) >> 64);
}

int poller_group_new(Poller *p, uid_t uid, uint64_t interval_usec, uint64_t now_usec, void *userdata, PollGroup **ret) {
        PollGroup *g;
        int r;

        if (interval_usec == 0)
                return -EINVAL;
        g = calloc(1, sizeof(PollGroup));
        if (!g)
                return -ENOMEM;
        g->poller = p;
        g->user = user_get(p, uid);
        if (!g->user) {
                free(g);
                return -ENOMEM;
        }
        g->user->groups++;
        g->uid = uid;
        g->interval = interval_usec;
        /* The first round comes within one interval, never at once: the
         * first snapshots are taken apart (baseline), as soon as can be. */
        g->next_round = now_usec + 1 + phase_of(++p->sequence, interval_usec);
        g->userdata = userdata;
        g->changes = g_ptr_array_new_with_free_func(poll_change_free);
        g->active_link.data = g;
        g_queue_init(&g->dirs);
        r = poll_heap_push(p->heap, g);
        if (r < 0) {
                group_release(g);
                return r;
        }
        *ret = g;
        return 0;
}

size_t poller_group_size(const PollGroup *g) {
        return g->dirs.length;
}

static void dir_unstale(PollDir *d) {
        if (d->in_stale) {
                g_queue_unlink(&d->group->poller->stale, &d->stale_link);
                d->in_stale = false;
        }
        g_hash_table_remove_all(d->noted);
}

static void dir_stop_reading(PollDir *d) {
        poll_reader_done(&d->reader);
        d->reading = false;
}

static void dir_read_op(uint32_t what, void *data) {
        PollDir *d = data;
        Poller *p;

        if (d->busy)
                return; /* in a worker: the layer above expects those itself (submit) */
        p = d->group->poller;
        if (p->cb.read_op)
                p->cb.read_op(d->group->userdata, d->userdata, what, p->userdata);
}

static void changes_forget_dir(GPtrArray *changes, PollDir *d) {
        for (size_t i = 0; i < changes->len; i++) {
                Change *c = g_ptr_array_index(changes, i);

                if (c->dir == d) {
                        c->dropped = true;
                        c->dir = NULL;
                }
        }
}

/* What is left of d once no job holds it. */
static void dir_destroy(PollDir *d) {
        dir_stop_reading(d);
        poll_snapshot_done(&d->snap);
        safe_close(d->fd);
        g_hash_table_destroy(d->noted);
        if (d->job_names)
                g_hash_table_destroy(d->job_names);
        if (d->noted_busy)
                g_hash_table_destroy(d->noted_busy);
        free(d);
}

static void dir_free(PollDir *d) {
        PollGroup *g = d->group;
        Poller *p = g->poller;

        if (g->user->blocked_on == d) {
                g->user->blocked_on = NULL;
                user_update_turn(p, g->user);
        }
        if (g->cursor == &d->group_link)
                g->cursor = d->group_link.next;
        g_queue_unlink(&g->dirs, &d->group_link);
        if (d->in_baseline) {
                g_queue_unlink(&g->user->baseline, &d->baseline_link);
                user_update_turn(p, g->user);
        }
        dir_unstale(d);
        /* The round's changes, and those being given out, keep their names,
         * not the directory. */
        changes_forget_dir(g->changes, d);
        if (g->emitting)
                changes_forget_dir(g->emitting, d);
        g->user->dirs--;
        if (d->busy) {
                /* A worker reads it: freed when its job is done. */
                d->dead = true;
                d->group = NULL;
                return;
        }
        dir_destroy(d);
}

void poller_group_free(PollGroup *g) {
        Poller *p;

        if (!g || g->dead)
                return;
        p = g->poller;
        while (g->dirs.head)
                dir_free(g->dirs.head->data);
        if (g->in_round) {
                g_queue_unlink(&g->user->active, &g->active_link);
                g->in_round = false;
                user_update_turn(p, g->user);
        } else if (g->heap_index != SIZE_MAX)
                poll_heap_remove(p->heap, g);
        if (g->emitting) {
                /* Called back from its own records: freed when they end. */
                g->dead = true;
                return;
        }
        group_release(g);
}

int poller_dir_add(PollGroup *g, int fd, bool report_existing, void *userdata, PollDir **ret) {
        Poller *p = g->poller;
        PollDir *d;

        if (g->user->dirs >= p->max_dirs_per_user)
                return -EDQUOT;
        d = calloc(1, sizeof(PollDir));
        if (!d)
                return -ENOMEM;
        d->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (d->fd < 0) {
                int r = negative_errno();

                free(d);
                return r;
        }
        d->group = g;
        d->userdata = userdata;
        d->report_existing = report_existing;
        d->noted = g_hash_table_new_full(g_str_hash, g_str_equal, free, NULL);
        poll_reader_init(&d->reader, &(PollReadHook) { dir_read_op, d });
        d->group_link.data = d->baseline_link.data = d->stale_link.data = d;
        g_queue_push_tail_link(&g->dirs, &d->group_link);
        g_queue_push_tail_link(&g->user->baseline, &d->baseline_link);
        d->in_baseline = true;
        user_update_turn(p, g->user);
        /* Added during a round: not part of it (it has no snapshot yet). */
        d->round_done = true;
        g->user->dirs++;
        if (ret)
                *ret = d;
        return 0;
}

int poller_dir_fd(const PollDir *d) {
        return d->fd;
}

void poller_dir_remove(PollDir *d) {
        if (d)
                dir_free(d);
}

int poller_dir_note(PollDir *d, const char *name) {
        PollGroup *g = d->group;
        char *copy;

        /* The first snapshot, still to come, will see it as it is. */
        if (!d->have_snap)
                return 0;

        for (size_t i = 0; i < g->changes->len; i++) {
                Change *c = g_ptr_array_index(g->changes, i);

                if (c->dir == d && strcmp(c->name, name) == 0)
                        c->dropped = true;
        }
        if (d->busy || d->job_done) {
                /* The worker's read may have listed it before the change, or
                 * after: its change from that read is dropped, and the name
                 * stat'ed again once the job is done. */
                if (!d->noted_busy)
                        d->noted_busy = g_hash_table_new_full(g_str_hash, g_str_equal, free, NULL);
                copy = strdup(name);
                if (!copy)
                        return -ENOMEM;
                g_hash_table_add(d->noted_busy, copy);
                copy = strdup(name);
                if (!copy)
                        return -ENOMEM;
                g_hash_table_add(d->noted, copy);
                return 0; /* to the stale queue at the job's end */
        }
        if (d->reading) {
                if (!d->reader.dirty)
                        d->reader.dirty = g_hash_table_new_full(g_str_hash, g_str_equal, free, NULL);
                copy = strdup(name);
                if (!copy)
                        return -ENOMEM;
                g_hash_table_add(d->reader.dirty, copy);
        }
        copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        g_hash_table_add(d->noted, copy);
        if (!d->in_stale) {
                g_queue_push_tail_link(&g->poller->stale, &d->stale_link);
                d->in_stale = true;
        }
        return 0;
}

uint64_t poller_next(const Poller *p) {
        if (p->stale.length > 0 || p->turns.length > 0)
                return 0;
        return p->heap->len > 0 ? poll_heap_at(p->heap, 0)->next_round : UINT64_MAX;
}

static int dir_begin(PollDir *d) {
        Poller *p = d->group->poller;

        return p->cb.begin ? p->cb.begin(d->group->userdata, d->userdata, p->userdata) : 0;
}

static void dir_end(PollDir *d) {
        Poller *p = d->group->poller;

        if (p->cb.end)
                p->cb.end(d->group->userdata, d->userdata, p->userdata);
}

/* Stats the names the kernel reported in d into its snapshot. */
static int dir_refresh_noted(PollDir *d) {
        Poller *p = d->group->poller;
        GHashTableIter it;
        gpointer key;
        int r;

        r = dir_begin(d);
        if (r < 0) {
                /* Cannot look: the next round will. */
                dir_unstale(d);
                return 0;
        }
        g_hash_table_iter_init(&it, d->noted);
        while (p->budget > 0 && g_hash_table_iter_next(&it, &key, NULL)) {
                p->budget--;
                if (poll_snapshot_restat(&d->snap, d->fd, key, &p->io) < 0) {
                        dir_end(d);
                        return -ENOMEM;
                }
                g_hash_table_iter_remove(&it);
        }
        dir_end(d);
        if (g_hash_table_size(d->noted) == 0)
                dir_unstale(d);
        return 0;
}

/*
 * Reads d as far as the budget goes. Return: 1 when its new snapshot is whole
 * (its changes appended to changes if it had one before; changes NULL: none
 * wanted), 0 if not yet, -ENOMEM. A directory that cannot be read counts as
 * read, with no change, and *ret_error says why (else 0): the caller tells,
 * once it is done with d.
 */
static int dir_submit(PollDir *d, int kind) {
        Poller *p = d->group->poller;
        int r;

        if (!p->cb.submit)
                return -EOPNOTSUPP;
        d->busy = true;
        d->job_kind = kind;
        d->job_result = 0;
        r = p->cb.submit(d->group->userdata, d->userdata, d, p->userdata);
        if (r < 0) {
                d->busy = false;
                return r;
        }
        if (kind == JOB_READ) {
                d->reading = true;
                d->job_reading = true;
        }
        return 0;
}

/* The changes of d's read for names the kernel reported while it ran. */
static void changes_drop_noted_busy(PollDir *d, GPtrArray *changes) {
        if (!d->noted_busy)
                return;
        if (changes)
                for (size_t i = 0; i < changes->len; i++) {
                        Change *c = g_ptr_array_index(changes, i);

                        if (c->dir == d && g_hash_table_contains(d->noted_busy, c->name))
                                c->dropped = true;
                }
        g_hash_table_remove_all(d->noted_busy);
}

static void dir_job_end(PollDir *d) {
        Poller *p = d->group->poller;

        if (!d->job_reading)
                return;
        d->job_reading = false;
        if (p->cb.job_end)
                p->cb.job_end(d->group->userdata, d->userdata, p->userdata);
}

static int dir_read(PollDir *d, GPtrArray *changes, int *ret_error) {
        Poller *p = d->group->poller;
        size_t n_before = changes ? changes->len : 0;
        bool from_job = false;
        int r;

        *ret_error = 0;
        if (d->busy)
                return -EINPROGRESS;
        if (d->job_done) {
                d->job_done = false;
                r = d->job_result;
                if (r == 0 && dir_submit(d, JOB_READ) >= 0)
                        return -EINPROGRESS; /* more to read */
                from_job = true;
        } else if (dir_submit(d, JOB_READ) >= 0)
                return -EINPROGRESS;
        if (!from_job) {
                /* Here and now: no worker (unit tests), or none could take it. */
                r = dir_begin(d);
                if (r >= 0) {
                        d->reading = true;
                        r = poll_reader_step(&d->reader, d->fd, &p->budget, &p->io);
                        dir_end(d);
                }
        }
        if (r != 0)
                dir_job_end(d);
        if (r == -ENOMEM) {
                dir_stop_reading(d);
                return r;
        }
        if (r < 0) {
                dir_stop_reading(d);
                *ret_error = r;
                return 1;
        }
        if (r == 0)
                return 0;

        if (changes) {
                PollSnapshot empty = {};

                r = poll_snapshot_diff(d, d->have_snap ? &d->snap : &empty, &d->reader.snap, changes);
                if (r < 0) {
                        dir_stop_reading(d);
                        return r;
                }
                if (from_job && d->noted_busy && changes->len > n_before) {
                        g_autoptr(GPtrArray) added = g_ptr_array_new();

                        for (size_t i = n_before; i < changes->len; i++)
                                g_ptr_array_add(added, g_ptr_array_index(changes, i));
                        changes_drop_noted_busy(d, added);
                }
        }
        if (d->noted_busy)
                g_hash_table_remove_all(d->noted_busy);
        poll_snapshot_done(&d->snap);
        d->snap = d->reader.snap;
        d->reader.snap = (PollSnapshot) {};
        d->have_snap = true;
        dir_stop_reading(d);
        return 1;
}

int poller_dir_prime(PollDir *d, unsigned budget) {
        Poller *p = d->group->poller;
        int r, error;

        if (!d->in_baseline || d->report_existing)
                return 0;
        if (!d->busy && !d->job_done && dir_submit(d, JOB_READ) >= 0) {
                d->priming = true;
                return 1;
        }
        p->budget = budget;
        r = dir_read(d, NULL, &error);
        p->budget = 0;
        if (r < 0)
                return r;
        /* Done: off the queue. Failed: the loop reads it again, and tells. */
        if (r > 0 && error == 0)
                dir_baseline_done(d);
        return 0;
}

bool poller_dir_busy(const PollDir *d) {
        return d->busy;
}

void poller_dir_job_run(void *data) {
        PollDir *d = data;

        if (d->job_kind == JOB_READ) {
                unsigned budget = JOB_OPS;

                d->job_result = poll_reader_step(&d->reader, d->fd, &budget, &d->job_io);
                return;
        }
        {
                GHashTableIter it;
                gpointer key;

                g_hash_table_iter_init(&it, d->job_names);
                while (g_hash_table_iter_next(&it, &key, NULL))
                        if (poll_snapshot_restat(&d->snap, d->fd, key, &d->job_io) < 0) {
                                d->job_result = -ENOMEM;
                                return;
                        }
        }
}

static void io_add(PollIo *to, PollIo *from) {
        to->opens += from->opens;
        to->getdents += from->getdents;
        to->stats += from->stats;
        *from = (PollIo) {};
}

/* A prime's job returned: the snapshot is d's if whole, else the loop reads it again. */
static void dir_prime_done(PollDir *d) {
        Poller *p = d->group->poller;
        int r, error;

        r = dir_read(d, NULL, &error);
        if (r == -EINPROGRESS)
                return; /* more to read: the next job */
        d->priming = false;
        if (r > 0 && error == 0)
                dir_baseline_done(d);
        if (p->cb.primed)
                p->cb.primed(d->group->userdata, d->userdata, p->userdata);
}

void poller_dir_job_done(void *data, int error) {
        PollDir *d = data;
        Poller *p;
        PollUser *u;

        assert(d->busy);
        d->busy = false;
        if (d->dead) {
                dir_destroy(d);
                return;
        }
        if (error == -ESHUTDOWN)
                return; /* at exit: d is freed with its group */
        p = d->group->poller;
        u = d->group->user;
        io_add(&p->io, &d->job_io);
        if (d->job_kind == JOB_RESTAT) {
                g_hash_table_destroy(d->job_names);
                d->job_names = NULL;
        } else {
                d->job_done = true;
                if (error < 0)
                        d->job_result = error;
        }
        if (g_hash_table_size(d->noted) > 0 && !d->in_stale && d->have_snap) {
                g_queue_push_tail_link(&p->stale, &d->stale_link);
                d->in_stale = true;
        }
        if (u->blocked_on == d) {
                u->blocked_on = NULL;
                user_update_turn(p, u);
        }
        if (d->job_kind == JOB_READ && d->priming)
                dir_prime_done(d);
}

/* Stats d's noted names in a worker; Return: 0 (submitted), or -errno (not: stat here). */
static int dir_restat_submit(PollDir *d) {
        int r;

        if (d->busy || d->job_done)
                return -EBUSY;
        d->job_names = d->noted;
        d->noted = g_hash_table_new_full(g_str_hash, g_str_equal, free, NULL);
        r = dir_submit(d, JOB_RESTAT);
        if (r < 0) {
                g_hash_table_destroy(d->noted);
                d->noted = d->job_names;
                d->job_names = NULL;
                return r;
        }
        /* Out of the stale queue (keeping no names: they are the job's). */
        if (d->in_stale) {
                g_queue_unlink(&d->group->poller->stale, &d->stale_link);
                d->in_stale = false;
        }
        return 0;
}

/* Tells the error of d's last read if it changed. d may be gone after. */
static void dir_tell_error(PollDir *d, int error) {
        Poller *p = d->group->poller;

        if (d->error == error)
                return;
        d->error = error;
        if (p->cb.error)
                p->cb.error(d->group->userdata, d->userdata, error, p->userdata);
}

/* One of g's records (PollRoundEmit), to PollerCallbacks.record. */
static void group_record(void *data, uint32_t mask, PollDir *d, const char *name, PollDir *nd, const char *new_name) {
        PollGroup *g = data;
        Poller *p = g->poller;
        PollRecord rec = {
                .mask = mask,
                .dir = d->userdata,
                .name = name,
                .new_dir = nd ? nd->userdata : NULL,
                .new_name = new_name,
        };

        if (p->cb.record)
                p->cb.record(g->userdata, &rec, p->userdata);
}

/* Gives out changes as g's records. g may be freed from a record's callback:
 * it is then freed here, and true returned. */
static bool group_emit(PollGroup *g, GPtrArray *changes) {
        g->emitting = changes;
        poll_round_emit(changes, group_record, g);
        g->emitting = NULL;
        if (g->dead) {
                group_release(g);
                return true;
        }
        return false;
}

static void start_due_rounds(Poller *p, uint64_t now) {
        while (p->heap->len > 0 && poll_heap_at(p->heap, 0)->next_round <= now) {
                PollGroup *g = poll_heap_at(p->heap, 0);

                poll_heap_remove(p->heap, g);
                g->in_round = true;
                g->cursor = g->dirs.head;
                for (GList *l = g->dirs.head; l; l = l->next)
                        ((PollDir *) l->data)->round_done = false;
                g_queue_push_tail_link(&g->user->active, &g->active_link);
                user_update_turn(p, g->user);
        }
}

static int end_round(Poller *p, PollGroup *g, uint64_t now) {
        g_queue_unlink(&g->user->active, &g->active_link);
        g->in_round = false;
        user_update_turn(p, g->user);
        if (group_emit(g, g->changes))
                return 0;
        g_ptr_array_set_size(g->changes, 0);
        /* Rounds start an interval apart, in step with the phase; a round
         * that took longer is followed by the next at once. */
        g->next_round += g->interval;
        if (g->next_round < now)
                g->next_round = now;
        return poll_heap_push(p->heap, g);
}

/*
 * One step of u's work, paid from p->budget: of its first snapshots, then of
 * its oldest round. Return: 0 (the budget may have run out), -ENOMEM.
 */
static int user_step(Poller *p, PollUser *u, uint64_t now) {
        PollGroup *g;
        PollDir *d;
        int r, error;

        if (u->baseline.head) {
                g_autoptr(GPtrArray) changes = NULL;

                d = u->baseline.head->data;
                if (d->report_existing)
                        changes = g_ptr_array_new_with_free_func(poll_change_free);
                r = dir_read(d, changes, &error);
                if (r == -EINPROGRESS) {
                        u->blocked_on = d;
                        user_update_turn(p, u);
                        return 0;
                }
                if (r <= 0)
                        return r;
                if (d->priming) {
                        /* Its prime's own job finished it: primed() is told here. */
                        d->priming = false;
                        dir_baseline_done(d);
                        if (p->cb.primed)
                                p->cb.primed(d->group->userdata, d->userdata, p->userdata);
                        return 0;
                }
                dir_baseline_done(d);
                if (changes && changes->len > 0)
                        group_emit(d->group, changes); /* d may be gone after */
                else
                        dir_tell_error(d, error);
                return 0;
        }

        g = u->active.head->data;
        if (!g->cursor)
                return end_round(p, g, now);
        d = g->cursor->data;
        if (d->in_baseline || d->round_done) {
                g->cursor = g->cursor->next;
                return 0;
        }
        /* A directory whose first snapshot failed takes it now. */
        r = dir_read(d, d->have_snap ? g->changes : NULL, &error);
        if (r == -EINPROGRESS) {
                u->blocked_on = d;
                user_update_turn(p, u);
                return 0;
        }
        if (r <= 0)
                return r;
        d->round_done = true;
        g->cursor = g->cursor->next;
        dir_tell_error(d, error); /* d, even g, may be gone after */
        return 0;
}

int poller_run(Poller *p, uint64_t now_usec) {
        int r;

        p->budget = p->ops_per_run;

        /* What the kernel reported first, before any read compares with it:
         * a directory with names to stat is read only after (it is busy). */
        while (p->budget > 0 && p->stale.head) {
                PollDir *d = p->stale.head->data;

                if (dir_restat_submit(d) >= 0) {
                        p->budget--;
                        continue;
                }
                if (d->busy || d->job_done) {
                        /* Its read's end puts it back. */
                        g_queue_unlink(&p->stale, &d->stale_link);
                        d->in_stale = false;
                        continue;
                }
                r = dir_refresh_noted(d);
                if (r < 0)
                        return r;
        }

        start_due_rounds(p, now_usec);
        while (p->budget > 0 && p->turns.head) {
                PollUser *u = p->turns.head->data;
                unsigned budget = p->budget, turn;

                /* Held: a record may free the user's last group. */
                u->groups++;
                turn = MIN(budget, USER_TURN - u->spent);
                p->budget = turn;
                r = user_step(p, u, now_usec);
                u->spent += turn - p->budget;
                p->budget = budget - (turn - p->budget);
                if (u->in_turns && u->spent >= USER_TURN) {
                        /* Its turn is over: to the back of the ring. */
                        g_queue_unlink(&p->turns, &u->turn_link);
                        g_queue_push_tail_link(&p->turns, &u->turn_link);
                        u->spent = 0;
                }
                user_put(p, u);
                if (r < 0)
                        return r;
        }

        return poller_next(p) <= now_usec;
}
