/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * missing_internal - what missing.c (the follower, its chains and waiters),
 * missing_open.c (what a look-up opens, as its caller), missing_follow.c
 * (the probes and look-ups applied on the loop) and missing_events.c (what
 * the kernel tells a chain) share: the follower, a chain, a waiter, the
 * jobs. For those files only.
 *
 * They stand in layers, each calling only those before it: missing.c,
 * missing_open.c, missing_follow.c, missing_events.c.
 */

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "access.h"
#include "fswork.h"
#include "hold.h"
#include "list.h"
#include "missing_types.h"
#include "remote_types.h"
#include "watch_table.h"

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
        RemoteHint hint;           /* ready: remote_hint_probe() of fd, in the job that opened it */
        WatchPlaced placed;        /* ready: its watch, if that job placed it (its root link uses it) */
        int error;                 /* it cannot be followed: gone once the credentials are back */
        StartJob *start;           /* its top looked up in a worker: in no chain yet */
        bool answer;               /* ops->found is owed (missing_start()), once it is at rest */
        unsigned rounds;           /* its look-ups begun again (a top replaced meanwhile) */
        LIST_FIELDS(Waiter, node); /* the waiters of node */
};

/* The look-up of a waiter's top, as its caller in a worker: the prefixes of
 * its path from "/" opened until one may be read (missing_top_open()'s loop). */
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
        RemoteHint hint; /* opened, last or placing: what remote.c asks of its file system, asked in the job */
        /* last: what its waiters' root links need of the kernel (watch_table_need_mask()), by type */
        uint32_t need_dir, need_file;
        WatchPlaced placed; /* opened on a file system that may stop: its watch, placed in the job */
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
        /* Not NULL: in a worker, it places the watches of what it opens on a file
         * system that may stop answering (counted in watch_table_placing()). */
        WatchTable *table;
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

/* missing.c: the chains and their waiters. */
int missing_chain_get(Missing *m, const Caller *caller, const char *top, Chain **ret);
void missing_chain_put(Missing *m, Chain *c);
Waiter *missing_waiters_at(Missing *m, WatchLink *node);
void missing_waiter_unplace(Missing *m, Waiter *w);
void missing_waiter_place(Missing *m, Waiter *w, WatchLink *node);
void missing_prune(Missing *m, WatchLink *node);
size_t missing_component_len(const char *p);
void missing_cut(Missing *m, Chain *c, WatchLink *top, GPtrArray *restart);
bool missing_comp_same(const ProbeComp *pc, const char *name, size_t len, bool last, bool only_dir, bool no_follow);
bool missing_comp_wanted_by(const ProbeComp *pc, const Waiter *w);
void missing_waiter_fail(Missing *m, Waiter *w, int error);
void missing_waiters_settle(Missing *m, WatchLink *node, const ProbeComp *pc);
void missing_waiters_fail(Missing *m, WatchLink *node, const ProbeComp *pc, int error);
void missing_job_release(Missing *m, ProbeJob *j);
void missing_step_push(Missing *m, Chain *c, WatchLink *node, int fd, bool inline_);
void missing_step_free(Missing *m, Step *st);
void missing_chain_hold(Missing *m, Chain *c);
void missing_waiter_destroy(Missing *m, Waiter *w);
void missing_tell(Missing *m, Subscription *s, uint32_t id, int r, bool answer);

/* missing_open.c: what the jobs open, as their caller. */
void missing_job_free(ProbeJob *j);
ProbeJob *missing_job_new(Missing *m, Chain *c, WatchLink *node, bool walk, int fd);
void missing_job_run(void *data);
int missing_top_open(const char *path, size_t *ret_end, struct stat *st);
void missing_start_run(void *data);
void missing_start_free(StartJob *j);

/* missing_follow.c: the probes and look-ups applied. */
void missing_job_inline(Missing *m, ProbeJob *j, bool inline_);
void missing_chain_request(Missing *m, Chain *c, WatchLink *node);
void missing_run_slice(Missing *m, uint64_t budget_usec);
void missing_restart_all(Missing *m, GPtrArray *restart);
int missing_finish(Missing *m, Waiter *w_sync);
