/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * tree_internal - what tree.c (the tree, a walk on the loop), tree_jobs.c
 * (walks in workers), tree_open.c (where walks start; opens by path in
 * workers), tree_moves.c (directories that appear and renames within a
 * tree, what waits for the kernel queue read empty) and tree_life.c (a tree
 * made and freed) share: the tree, a walk, its frames. For those files only.
 *
 * They stand in layers, each calling only those before it: tree_unread.c,
 * tree.c, tree_jobs.c, tree_open.c, tree_moves.c, tree_life.c. A job's
 * completion walks a tree again through Tree.rescan (tree_rescan(), set by
 * tree_new()). tree_unread.c (the names reported in a directory not read
 * yet), the lowest, does not include this header: it owns its state
 * (TreeUnread, tree_unread.h, embedded as Tree.unread) and takes plain
 * values (a subscription's id, a path, a key); the frames' side of it is
 * in tree.c.
 *
 * What it shares with tree.h (the Tree and TreeWalk typedefs, TreeOps,
 * TreeWalkDone) is in tree_types.h: it does not include tree.h, which
 * tree.c includes beside it.
 */

#include <dirent.h>
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "backend.h"
#include "fswork.h"
#include "hold.h"
#include "list.h"
#include "self_events.h"
#include "tree_types.h"
#include "tree_unread.h"
#include "watch_table.h"

/* Steps between looks at the clock. */
#define STEPS_PER_CLOCK 32u
/* The first slice, inside the AddWatch call or the event that found the directory. */
#define FIRST_SLICE_USEC 2000u
/* A reporting walk in jobs holds its owner's records this long at most (well
 * within HOLD_USEC, past which they would go on with Overflow): a new tree
 * read by then is reported whole before them. */
#define WALK_HOLD_USEC (HOLD_USEC / 4u)
/* A job in a worker: the directories it takes from the top of a walk's
 * stack, and the subdirectories it opens at most. A directory costs a
 * worker's round trip only once in so many. */
#define JOB_FRAMES 64u
#define JOB_OPENS  256u
/* A walk that reports nothing has up to WALK_JOBS jobs out: a worker reads
 * the directories of one while the loop links what another opened. The
 * second takes its frames from below the first's, and they come back on
 * top of the stack, out of depth-first order; so only while the stack
 * holds at most WALK_JOBS_FRAMES frames (each an open directory): past
 * that, one job at a time, depth first, works the stack down again. */
#define WALK_JOBS        4u
#define WALK_JOBS_FRAMES (4u * JOB_OPENS)
/* What a job's reads of a directory announce (self_events.h): its getdents64
 * calls, as many as they are. */
#define JOB_ACCESS_MANY 65536u

typedef struct WalkJob WalkJob;
typedef struct TreeOpen TreeOpen;

struct Tree {
        WatchTable *table;
        Backend *backend;
        SelfEvents *self;
        TreeOps ops;
        void *userdata;
        /* tree_rescan() (tree_open.c), for a job's completion (tree_jobs.c),
         * a layer below it: set by tree_new(). */
        void (*rescan)(Tree *t, Subscription *s);
        LIST_HEAD(TreeWalk, walks);   /* going on from the loop, round robin */
        LIST_HEAD(TreeWalk, working); /* going on in workers: a job of each in a worker's lane */
        FsWork *fswork;               /* NULL: the walks run on the loop */
        Holds *holds;                 /* NULL: a new directory is opened on the loop (tree_open_submit()) */
        uint64_t jobs;                /* jobs submitted */
        GArray *moves;                /* TreeMove: directories moved out of their place, until their IN_MOVED_TO */
        uint64_t moves_until;         /* read empty with moves set aside: they left the tree at this time */
        uint64_t retries_until;       /* retries waiting: the queue is read again then (tree_add_result()), or 0 */
        GArray *retries;              /* TreeRetry: new directories to walk once the kernel queue is read empty */
        LIST_HEAD(TreeOpen, opens);   /* opens by path in workers (add_at(), tree_rescan()) */
        /* "id:path" of each entry a scan of a new directory reported as
         * IN_CREATE, until the kernel queue is next read empty (tree.h). NULL
         * until first used. */
        GHashTable *scanned;
        /* The names the kernel reported in a directory (tree_unread.h) since a
         * reporting walk's job linked it, until a job's read of it is
         * reported: those are not reported again; and while a job opens
         * names of it: those are not linked from the job's opens. */
        TreeUnread unread;
        uint8_t *dents_buf; /* getdents64 buffer of the walks */
};

typedef struct Frame {
        WatchLink *link; /* the directory (a reference is held) */
        int fd;          /* open on it (for openat) */
        bool quiet;      /* fd is O_PATH: closing it is no event */
        SelfDir dir;     /* the directory as the kernel reports it; dir.name is name */
        char *name;
        char *names; /* its subdirectories: "a\0b\0" */
        size_t len, pos;
        size_t path_len; /* of its path, to stop below PATH_MAX */
        bool read;       /* names holds its subdirectories (else it is linked and not read yet) */
        bool reopen;     /* fd is the root's (a dup, quiet): a job opens "." through it */
        bool any_parent; /* its parent's watch is unknown: a job announces on any watch under its name */
        bool closed;     /* a job closed fd: nothing is left to do with it */
        bool cross;      /* its one name is a mount point: opened in a job of lane, that file system's */
        dev_t lane;
        char *unread;                      /* a reporting walk's, linked by a job: its key in Tree.unread, or NULL */
        char *told;                        /* while a job of it is out: its key in Tree.unread, or NULL */
        uint64_t unread_since, told_since; /* Tree.unread.seq when those were taken */
        char *entries;                     /* what a job read of it in a reporting walk: "Da\0Fb\0" (D: a directory) */
        size_t entries_len;
} Frame;

struct TreeWalk {
        Tree *tree;
        uint32_t id;     /* the subscription, looked up at each slice: it may have ended */
        bool synthesize; /* report what the directories hold (they were just created) */
        bool one_level;  /* the root's entries only: a scan, not a walk (not RECURSIVE) */
        bool initial;    /* AddWatch's walk: a limit ends the subscription */
        bool rescan;     /* after a kernel overflow: go down the directories linked already too */
        uint64_t now;
        GArray *frames;           /* Frame, the deepest last */
        WalkJob *jobs[WALK_JOBS]; /* in workers, or NULL (the walk is on Tree.working while one is out) */
        bool worked;              /* it had a job (tree_walk_end() gives back what its jobs left to malloc) */
        bool capped;              /* its stack held over WALK_JOBS_FRAMES frames once (logged once) */
        /* A reporting walk in jobs from its start: its owner's records wait
         * for it (a reference, let go of when it ends, or at the completion
         * of a job that read a directory past hold_until), or NULL. */
        Hold *hold;
        uint64_t hold_until;
        bool off_loop; /* a reporting walk that may start in workers (hold, or its subscription told) */
        int error;
        TreeWalkDone done;
        void *userdata;
        LIST_FIELDS(TreeWalk, walks); /* the walks going on from the loop */
};

/* An open by path in a worker (tree_open.c). */
struct TreeOpen {
        Tree *tree; /* NULL: the tree went first (tree_free()): the completion frees */
        uint32_t id;
        WatchLink *link; /* the parent (add_at()) or the root (tree_rescan()), held */
        char *name;      /* the new directory's name in link; NULL: a rescan of the root */
        char *path;      /* link's path */
        bool synthesize;
        unsigned retry; /* how many times it was tried before (tree_add_result()) */
        uint64_t now;
        uid_t uid;
        dev_t lane;
        int fd; /* or -errno */
        struct stat st;
        Hold *hold;     /* synthesize: the owner's records wait for its scan (a reference), or NULL */
        bool discarded; /* fswork_free() called its completion: tree_opens_free() frees it */
        LIST_FIELDS(TreeOpen, opens);
};

/* How many times a directory whose parent's path led elsewhere (-ESTALE) is
 * tried again before its subscription gets Overflow. Once is not enough: the
 * kernel moves a renamed directory's dentry (d_move()) before it queues the
 * rename's records (fsnotify_move() comes after it in vfs_rename()), so an
 * open in between finds the old path gone while the queue, read empty right
 * after, does not hold the rename yet; the records are there at a later
 * read. After the first, each try waits TREE_STALE_RETRY_USEC for it. */
#define TREE_STALE_RETRIES    3u
#define TREE_STALE_RETRY_USEC (5u * 1000u)

/* A directory that appeared below a link whose path did not lead to it:
 * tried again once the kernel queue is read empty (tree_retries_run), at
 * most TREE_STALE_RETRIES times. */
typedef struct TreeRetry {
        uint32_t id;
        WatchLink *parent; /* held */
        char *name;
        bool synthesize;
        unsigned retry; /* this is its retry-th try again */
        uint64_t now;
} TreeRetry;

/* tree.c */
/* The frames' side of Tree.unread (tree_unread.h): the names the kernel
 * reported in a directory a reporting walk linked and has not read yet. */
/* Whether the kernel reported name in f's directory since a job linked it. */
bool tree_unread_noted(Tree *t, const Frame *f, const char *name);
/* A frame's keys in Tree.unread let go of (tree_frame_done()). */
void tree_unread_drop(Tree *t, Frame *f);
/* link's key in Tree.unread, noting from now on (a reference), or NULL
 * (no memory, too long a path: then nothing is noted for it). */
char *tree_unread_ref_link(Tree *t, uint32_t id, WatchLink *link);
/* f, just linked by a reporting walk's job, noted from now on (Frame.unread). */
void tree_unread_add(Tree *t, uint32_t id, Frame *f);
/* TreeOps.may_stop of l (false without it). */
bool tree_may_stop(const Tree *t, const WatchLink *l);
/* The link of s at path (its root or a directory below), or NULL. */
WatchLink *tree_find(Subscription *s, const char *path);
/* An entry read from the directory open at dfd: 1 a directory, 0 not, -1 "." or ".." (skipped). */
int tree_dirent_kind(int dfd, const struct dirent64 *de, size_t name_len);
void tree_dir_close(Tree *t, int fd, const SelfDir *d);
void tree_frame_done(Tree *t, Frame *f);
int tree_frame_push(TreeWalk *w, Subscription *s, WatchLink *l, int fd, const SelfDir *d, size_t path_len,
                    const Frame *skip);
void tree_frame_pop(TreeWalk *w);
TreeWalk *tree_walk_new(Tree *t, Subscription *s, bool synthesize, uint64_t now);
void tree_walk_free(TreeWalk *w);
bool tree_walk_run(TreeWalk *w, uint64_t deadline);
int tree_walk_end(TreeWalk *w);
void tree_overflow(Tree *t, Subscription *s);
/* A scan reported dir/name to subscription id as IN_CREATE (see Tree.scanned). */
void tree_scanned_add(Tree *t, uint32_t id, const char *dir, const char *name, size_t name_len);

/* tree_jobs.c: return 1 when w went to a worker (it is on t->working), else 0 (it goes on from the loop).
 * A reporting walk stays on the loop for its first slice (tree_walk_go_on_in_worker()). */
int tree_walk_start_in_worker(TreeWalk *w, Subscription *s);
/* A reporting walk after its first slice on the loop: the rest in workers.
 * Return: 1 (w is on t->working), or 0: it goes on from the loop. */
int tree_walk_go_on_in_worker(TreeWalk *w, Subscription *s);
int tree_walk_below_in_worker(TreeWalk *w, Subscription *s, int fd);
/* The frames a job took from its walk. */
GArray *tree_job_frames(WalkJob *j);
void tree_jobs_free(Tree *t);

/* tree_open.c: what follows an open by path: name below parent, parent open
 * at pfd (or its -errno), then what that gave (tree_add_result());
 * tree_add_at() opens parent again. */
int tree_add_opened(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize, uint64_t now_usec,
                    int pfd, const struct stat *st, bool off_loop, Hold *hold);
void tree_add_result(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize, unsigned retry,
                     uint64_t now, int r);
void tree_add_at(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize, unsigned retry,
                 uint64_t now_usec);
/* link's path opened as s's owner in a job, then tree_add_opened() (name)
 * or tree_rescan_opened() (name NULL) on the loop. With synthesize, hold is
 * the hold the scan's records keep their order by (a reference, taken on
 * success), or NULL: one is started. Return: 0, or -errno: no job (the
 * caller opens it itself). */
int tree_open_submit(Tree *t, Subscription *s, WatchLink *link, const char *name, bool synthesize, unsigned retry,
                     uint64_t now, Hold *hold);
/* At exit, before the table: the opens' links let go of. */
void tree_opens_free(Tree *t);

/* tree_moves.c: at exit, before the table: the retries' links let go of. */
void tree_retries_free(Tree *t);
