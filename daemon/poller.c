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
 * read, for the pairing of moves across its directories; a kernel event for
 * a name drops that name's waiting change, since the kernel's record has been
 * or will be delivered. Pairing goes by inode number: an inode that left
 * exactly one name and took exactly one other, with the same file type, was
 * moved; any other pattern (hard links coming and going) is deletions and
 * creations. An inode number freed and reused between two polls looks like a
 * move: polling cannot tell them apart.
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

#include "event_bits.h"
#include "macro.h"
#include "poller_internal.h"

struct PollDir {
        PollGroup *group;
        int fd;
        void *userdata;
        GList group_link;       /* in group->dirs */
        GList baseline_link;    /* in group->user->baseline while it has no snapshot */
        GList stale_link;       /* in poller->stale while noted is not empty */
        bool in_baseline, in_stale;
        bool have_snap;
        bool report_existing;   /* the first snapshot's names are creations */
        bool round_done;        /* read in the current round */
        int error;              /* the last read's -errno, 0 if it worked */
        PollSnapshot snap;
        PollReader reader;
        bool reading;
        GHashTable *noted;      /* names the kernel reported, not yet stat'ed */

        /* A job in a worker (PollerCallbacks.submit): until it is done, its
         * reader, snapshot and fd are the worker's, and nothing here touches
         * them. A directory freed meanwhile is dead, freed at the job's end. */
        bool busy, dead;
        bool job_done;          /* a read job returned: job_result waits for dir_read() */
        bool job_reading;       /* its reading is in jobs: job_end() when it is over */
        bool priming;           /* its first snapshot was submitted by poller_dir_prime() */
        int job_kind;
        int job_result;
        PollIo job_io;
        GHashTable *job_names;  /* JOB_RESTAT: the noted names it stats */
        GHashTable *noted_busy; /* names the kernel reported while a read job ran: the
                                 * read's changes for them are the kernel's to report */
};

enum {
        JOB_READ,
        JOB_RESTAT,
};

/* System calls of one read job: well within the lane's deadline (FSWORK_DEADLINE_USEC)
 * on a slow NFS server (a round trip a statx), so that only a file system
 * that does not answer is taken for one. */
#define JOB_OPS 1024u

/*
 * A uid's share of the poller. Its work (first snapshots, then rounds) is
 * done in turns of at most USER_TURN system calls, the users with work
 * taking turns in a ring: so one user's large directories make its own
 * polling slow, not everyone's.
 */
typedef struct PollUser {
        uid_t uid;
        unsigned groups;        /* its groups: it is freed with the last */
        uint32_t dirs;          /* directories polled */
        GQueue baseline;        /* its PollDir without a first snapshot */
        GQueue active;          /* its groups in a round, in the order they became due */
        GList turn_link;        /* in poller->turns while baseline or active is not empty */
        bool in_turns;
        PollDir *blocked_on;    /* its work waits for this directory's job: out of turns */
        unsigned spent;         /* system calls of its current turn */
} PollUser;

/* System calls of one user's turn: a directory of about fifty names. */
#define USER_TURN 64u

struct PollGroup {
        Poller *poller;
        PollUser *user;
        uid_t uid;
        uint64_t interval;
        uint64_t next_round;    /* scheduled start of the next round */
        size_t heap_index;      /* in poller->heap, SIZE_MAX if not there (in a round, or ending one) */
        bool in_round;
        GList active_link;      /* in user->active during a round */
        GQueue dirs;            /* PollDir, in the order they were added */
        GList *cursor;          /* the round's current directory */
        GPtrArray *changes;     /* Change: the round's, until it ends */
        GPtrArray *emitting;    /* the changes being given out (a free waits), or NULL */
        bool dead;              /* freed while emitting */
        void *userdata;
};

struct Poller {
        PollerCallbacks cb;
        void *userdata;
        unsigned ops_per_run;
        uint32_t max_dirs_per_user;
        GHashTable *users;      /* uid -> PollUser */
        GPtrArray *heap;        /* PollGroup: groups between rounds, min-heap on next_round */
        GQueue turns;           /* PollUser with work, the one whose turn it is first */
        GQueue stale;           /* PollDir with names noted */
        uint64_t sequence;      /* groups made: their phases */
        unsigned budget;        /* left in this run */
        PollIo io;
};

/* ---- the heap of groups between rounds ---- */

static bool heap_less(PollGroup *a, PollGroup *b) {
        return a->next_round < b->next_round;
}

static PollGroup *heap_at(const Poller *p, size_t i) {
        return p->heap->pdata[i];
}

static void heap_set(Poller *p, size_t i, PollGroup *g) {
        p->heap->pdata[i] = g;
        g->heap_index = i;
}

static void heap_up(Poller *p, size_t i) {
        PollGroup *g = heap_at(p, i);

        while (i > 0 && heap_less(g, heap_at(p, (i - 1) / 2))) {
                heap_set(p, i, heap_at(p, (i - 1) / 2));
                i = (i - 1) / 2;
        }
        heap_set(p, i, g);
}

static void heap_down(Poller *p, size_t i) {
        PollGroup *g = heap_at(p, i);

        for (;;) {
                size_t c = 2 * i + 1;

                if (c >= p->heap->len)
                        break;
                if (c + 1 < p->heap->len && heap_less(heap_at(p, c + 1), heap_at(p, c)))
                        c++;
                if (!heap_less(heap_at(p, c), g))
                        break;
                heap_set(p, i, heap_at(p, c));
                i = c;
        }
        heap_set(p, i, g);
}

static int heap_push(Poller *p, PollGroup *g) {
        g_ptr_array_add(p->heap, g);
        heap_set(p, p->heap->len - 1, g);
        heap_up(p, p->heap->len - 1);
        return 0;
}

static void heap_remove(Poller *p, PollGroup *g) {
        size_t i = g->heap_index;

        assert(i < p->heap->len && heap_at(p, i) == g);
        if (i < p->heap->len - 1) {
                heap_set(p, i, heap_at(p, p->heap->len - 1));
                g_ptr_array_set_size(p->heap, p->heap->len - 1);
                heap_down(p, i);
                heap_up(p, heap_at(p, i)->heap_index);
        } else
                g_ptr_array_set_size(p->heap, p->heap->len - 1);
        g->heap_index = SIZE_MAX;
}

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
                poller_group_free(heap_at(p, 0));
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

int poller_group_new(Poller *p, uid_t uid, uint64_t interval_usec, uint64_t now_usec,
                     void *userdata, PollGroup **ret) {
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
        r = heap_push(p, g);
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
                return;         /* in a worker: the layer above expects those itself (submit) */
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
                heap_remove(p, g);
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
                return 0;       /* to the stale queue at the job's end */
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
        return p->heap->len > 0 ? heap_at(p, 0)->next_round : UINT64_MAX;
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
                        return -EINPROGRESS;            /* more to read */
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
                return;         /* more to read: the next job */
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

static void emit(PollGroup *g, uint32_t mask, PollDir *d, const char *name, PollDir *nd, const char *new_name) {
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

static uint32_t isdir_bit(uint32_t mode) {
        return S_ISDIR(mode) ? IN_ISDIR : 0;
}

static char *place_key(const PollDir *d, const char *name) {
        /* No name holds a '/': pointer and name cannot run into each other. */
        return g_strdup_printf("%p/%s", (const void *) d, name);
}

/* Pairs GONE and APPEARED of one inode into moves. */
static void pair_moves(GPtrArray *changes) {
        g_autoptr(GHashTable) gone = g_hash_table_new(g_int64_hash, g_int64_equal);
        g_autoptr(GHashTable) appeared = g_hash_table_new(g_int64_hash, g_int64_equal);
        static Change ambiguous;

        for (size_t i = 0; i < changes->len; i++) {
                Change *c = g_ptr_array_index(changes, i);
                GHashTable *h;
                Change *old;

                if (c->dropped || c->kind == CHANGE_MODIFIED)
                        continue;
                h = c->kind == CHANGE_GONE ? gone : appeared;
                old = g_hash_table_lookup(h, &c->ino);
                g_hash_table_insert(h, &c->ino, old ? &ambiguous : c);
        }
        for (size_t i = 0; i < changes->len; i++) {
                Change *c = g_ptr_array_index(changes, i), *from;

                if (c->dropped || c->kind != CHANGE_APPEARED)
                        continue;
                if (g_hash_table_lookup(appeared, &c->ino) != c)
                        continue;
                from = g_hash_table_lookup(gone, &c->ino);
                if (!from || from == &ambiguous || !poll_same_type(from->mode, c->mode))
                        continue;
                from->partner = c;
                c->partner = from;
        }
}

/* A GONE paired with an APPEARED, both still wanted. */
static bool is_move(const Change *c) {
        return c->kind == CHANGE_GONE && c->partner && !c->dropped && c->dir &&
               !c->partner->dropped && c->partner->dir;
}

static void emit_move(PollGroup *g, Change *c, GHashTable *sources, GHashTable *moved) {
        g_autofree char *key = place_key(c->dir, c->name);

        g_hash_table_add(moved, &c->ino);
        emit(g, IN_MOVED_FROM | IN_MOVED_TO | isdir_bit(c->mode), c->dir, c->name,
             c->partner->dir, c->partner->name);
        c->emitted = true;
        g_hash_table_remove(sources, key);
}

/* Gives out a round's changes: deletions, moves, creations, modifications. */
static void round_emit(PollGroup *g, GPtrArray *changes) {
        g_autoptr(GHashTable) sources = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GHashTable) moved = g_hash_table_new(g_int64_hash, g_int64_equal);
        size_t left = 0;

        pair_moves(changes);

        for (size_t i = 0; i < changes->len; i++) {
                Change *c = g_ptr_array_index(changes, i);

                if (c->dropped || !c->dir)
                        continue;
                if (c->kind == CHANGE_GONE && !is_move(c))
                        emit(g, IN_DELETE | isdir_bit(c->mode), c->dir, c->name, NULL, NULL);
                else if (is_move(c)) {
                        g_hash_table_insert(sources, place_key(c->dir, c->name), c);
                        left++;
                }
        }

        /* Moves: one into a name that another moves out of waits for it
         * (b->c before a->b); a cycle (a->b, b->a) is broken where it is
         * found. */
        while (left > 0) {
                bool progress = false;

                for (size_t i = 0; i < changes->len; i++) {
                        Change *c = g_ptr_array_index(changes, i);
                        g_autofree char *dest = NULL;
                        Change *blocker;

                        if (!is_move(c) || c->emitted)
                                continue;
                        dest = place_key(c->partner->dir, c->partner->name);
                        blocker = g_hash_table_lookup(sources, dest);
                        if (blocker && blocker != c)
                                continue;
                        emit_move(g, c, sources, moved);
                        left--;
                        progress = true;
                }
                for (size_t i = 0; !progress && i < changes->len; i++) {
                        Change *c = g_ptr_array_index(changes, i);

                        if (is_move(c) && !c->emitted) {
                                emit_move(g, c, sources, moved);
                                left--;
                                progress = true;
                        }
                }
        }

        for (size_t i = 0; i < changes->len; i++) {
                Change *c = g_ptr_array_index(changes, i);

                if (c->dropped || !c->dir || c->kind != CHANGE_APPEARED)
                        continue;
                if (!c->partner || !is_move(c->partner))
                        emit(g, IN_CREATE | isdir_bit(c->mode), c->dir, c->name, NULL, NULL);
        }
        for (size_t i = 0; i < changes->len; i++) {
                Change *c = g_ptr_array_index(changes, i);
                uint32_t m;

                if (c->dropped || !c->dir)
                        continue;
                if (c->kind == CHANGE_MODIFIED)
                        /* Another name of a moved inode (a hard link) had its
                         * ctime changed by the rename, not by a change of its own. */
                        m = g_hash_table_contains(moved, &c->ino) ?
                                poll_entry_changes(&c->before, &c->after, true) : c->mask;
                else if (c->kind == CHANGE_APPEARED && c->partner && c->partner->emitted)
                        m = poll_entry_changes(&c->partner->before, &c->after, true);
                else
                        continue;
                if (m)
                        emit(g, m | isdir_bit(c->mode), c->dir, c->name, NULL, NULL);
        }
}

/* Gives out changes as g's records. g may be freed from a record's callback:
 * it is then freed here, and true returned. */
static bool group_emit(PollGroup *g, GPtrArray *changes) {
        g->emitting = changes;
        round_emit(g, changes);
        g->emitting = NULL;
        if (g->dead) {
                group_release(g);
                return true;
        }
        return false;
}

static void start_due_rounds(Poller *p, uint64_t now) {
        while (p->heap->len > 0 && heap_at(p, 0)->next_round <= now) {
                PollGroup *g = heap_at(p, 0);

                heap_remove(p, g);
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
        return heap_push(p, g);
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
                        group_emit(d->group, changes);  /* d may be gone after */
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
        dir_tell_error(d, error);       /* d, even g, may be gone after */
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
