/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * missing_internal - what missing.c (the chains and their waiters, on the
 * loop), missing_probe.c (the probes of the components the waiters want
 * next: ProbeJob, Step) and missing_start.c (the look-up of a new waiter's
 * top: StartJob) share: the follower, its chains, waiters, descents and
 * jobs. For those three files only.
 */

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "list.h"
#include "missing.h"

/* Placements, climbs and retries one probe may chain before it gives up on
 * a waiter: a path whose directories are replaced faster than it can look. */
#define PROBE_ROUNDS 64u

typedef struct Chain Chain;
typedef struct Waiter Waiter;
typedef struct Step Step;
typedef struct ProbeJob ProbeJob;
typedef struct StartJob StartJob;

struct Chain {
        Missing *missing;
        char *key;       /* credentials and top, see chain_key() */
        Caller caller;   /* whose credentials every open is made with (owns gids) */
        Subscription *s; /* the chain in the watch table; s->links is the top */
        unsigned n_waiters;
        uint64_t gen;           /* changes made to its links on the loop (missing_cut(), a descent inline) */
        ProbeJob *job;          /* in a worker (fswork) */
        LIST_HEAD(Step, steps); /* descents waiting for a job, deepest first */
        GPtrArray *todo;        /* nodes to probe from the top (held), in order */
        Hold *hold;             /* while it has jobs in workers: what waits for them (a reference) */
};

struct Waiter {
        Subscription *s;
        const Caller *caller; /* its owner's (which outlives s) */
        Chain *chain;
        WatchLink *node;  /* the deepest directory of s->path the chain holds */
        size_t rest;      /* s->path + rest: the part below node's directory */
        unsigned charged; /* watches charged to s's account: the nodes from the top to node */
        bool ready;       /* its path is there (fd): placed once the credentials are back */
        int fd;           /* ready: its path open (st), checked for its flags */
        struct stat st;
        int error;                 /* it cannot be followed: gone once the credentials are back */
        StartJob *start;           /* its top looked up in a worker: in no chain yet */
        bool answer;               /* ops->found is owed (missing_start()), once it is at rest */
        unsigned rounds;           /* its look-ups begun again (a top replaced meanwhile) */
        LIST_FIELDS(Waiter, node); /* the waiters of node */
};

/* The look-up of a waiter's top, as its caller in a worker: the prefixes of
 * its path from "/" opened until one may be read (missing_waiter_start()'s loop). */
struct StartJob {
        Missing *missing; /* NULL once the follower is gone */
        Waiter *w;        /* NULL once it is no longer followed */
        char *path;       /* the waiter's (a copy) */
        size_t end;       /* the top found: path[0, end) */
        int fd;           /* the top open, or -errno: what the look-up ends with */
        struct stat st;
        Hold *hold; /* a PERSIST path followed again: its owner's records wait (hold.h), or NULL */
        LIST_FIELDS(StartJob, starts);
};

/* A directory a descent has reached and will go on from: its node (held)
 * and an fd open on it, made with the chain's credentials (or -EBADF: it is
 * walked to from the top first). */
struct Step {
        Chain *chain; /* held (n_waiters) */
        WatchLink *node;
        int fd;
        LIST_FIELDS(Step, steps);
};

/* A component a node's waiters want next, and what opening it gave. */
typedef struct ProbeComp {
        char *name;
        bool last; /* the waiter's whole path: opened with its flags */
        bool only_dir, no_follow;
        int fd; /* the result: open, or -errno */
        struct stat st;
} ProbeComp;

/* The file system's part of a probe, made as the chain's caller (in a worker,
 * or inline), and what it found, applied on the loop (job_apply()). */
struct ProbeJob {
        Chain *chain;    /* held (n_waiters); NULL once the follower is gone */
        WatchLink *node; /* held */
        uint64_t gen;    /* chain->gen when it was made */
        /* The walk (n_way > 0): from the top (way[0], absolute) down to node,
         * each level checked to be the link's directory (devs, inos). */
        char **way;
        dev_t *devs;
        ino_t *inos;
        size_t n_way, reached; /* the levels found as they were */
        int fd;                /* the directory descended from: given, or the walk's deepest */
        ProbeComp *comps;
        size_t n_comps;
};

struct Missing {
        WatchTable *table;
        MissingOps ops;
        void *userdata;
        GHashTable *chains;          /* key -> Chain (owned) */
        GHashTable *by_chain;        /* chain Subscription -> Chain */
        GHashTable *waiters;         /* pending Subscription -> Waiter (owned) */
        GHashTable *at;              /* WatchLink (a node) -> its first Waiter */
        GPtrArray *done;             /* Waiters to place or end after a probe */
        LIST_HEAD(Step, steps);      /* descents inline to go on with, deepest first */
        FsWork *fswork;              /* NULL: every probe inline, on the loop */
        unsigned n_jobs;             /* in workers */
        Holds *holds;                /* NULL: no records wait for probes */
        LIST_HEAD(StartJob, starts); /* in workers */
};

/* missing.c: the chains and their waiters */
int missing_chain_get(Missing *m, const Caller *caller, const char *top, Chain **ret);
void missing_chain_put(Missing *m, Chain *c);
void missing_chain_kick(Missing *m, Chain *c);
Waiter *missing_waiters_at(Missing *m, WatchLink *node);
void missing_waiter_unplace(Missing *m, Waiter *w);
void missing_waiter_place(Missing *m, Waiter *w, WatchLink *node);
void missing_prune(Missing *m, WatchLink *node);
size_t missing_component_len(const char *p);
void missing_cut(Missing *m, Chain *c, WatchLink *top, GPtrArray *restart);
void missing_waiter_destroy(Missing *m, Waiter *w);
void missing_tell(Missing *m, Subscription *s, uint32_t id, int r, bool answer);
void missing_waiter_restart(Missing *m, Subscription *s, const Caller *caller, bool answer, unsigned rounds);
void missing_restart_all(Missing *m, GPtrArray *restart);
int missing_finish(Missing *m, Waiter *w_sync);

/* missing_probe.c: the probes (ProbeJob) and the descents (Step) */
ProbeJob *missing_probe_job_new(Missing *m, Chain *c, WatchLink *node, bool walk, int fd);
void missing_probe_job_free(ProbeJob *j);
void missing_probe_job_run(void *data);
void missing_probe_job_inline(Missing *m, ProbeJob *j, bool inline_);
void missing_probe_job_release(Missing *m, ProbeJob *j);
void missing_probe_job_done(void *data, int error);
void missing_probe_step_push(Missing *m, Chain *c, WatchLink *node, int fd, bool inline_);
void missing_probe_step_free(Missing *m, Step *st);
bool missing_probe_run(Missing *m, uint64_t deadline);

/* missing_start.c: the look-up of a waiter's top (StartJob) */
int missing_waiter_start(Missing *m, Waiter *w);
int missing_waiter_add_async(Missing *m, Subscription *s, const Caller *caller, bool answer, unsigned rounds);
