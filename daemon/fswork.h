/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * fswork - file system work off the event loop, one queue per file system
 *
 * A system call on a file system can wait as long as the file system takes
 * to answer: a FUSE daemon that is stopped, an NFS server that is gone (a
 * hard mount waits for ever). Done on the loop's thread, it stops every
 * client's events and every method call. What can wait so runs here: a job
 * is a function run in a worker thread with a caller's credentials (fsuid,
 * fsgid and groups are per thread in the kernel: access_become() sets the
 * calling thread's only), then a completion run on the loop's thread.
 *
 * - Lanes: jobs are queued per file system (st_dev). A lane runs one job at
 *   a time, so a file system that stops answering holds one worker and its
 *   own lane; the other lanes have workers of their own.
 * - Users take turns in a lane (a queue per uid, round robin): one user's
 *   many jobs delay that user's, not another's beyond the job running.
 * - A job still running FSWORK_DEADLINE_USEC after it started marks its
 *   lane stalled: FsWorkOps.stalled(dev, true), once; when the job returns,
 *   stalled(dev, false). Its jobs wait meanwhile (nothing else can be done
 *   on a file system that does not answer), and its completions come when
 *   it answers again.
 * - Threads are started as lanes need them, at most FSWORK_THREADS_MAX
 *   serving lanes that answer; a thread held by a stalled lane does not
 *   count against that, up to FSWORK_THREADS_HARD_MAX in all. Past that
 *   (every thread held by file systems that do not answer: several users'
 *   worth, below) a job waits in its lane until one returns.
 * - A user's share of the stuck threads is bounded: once its jobs hold
 *   FSWORK_USER_STUCK_MAX stalled lanes, no other job of that uid starts, in
 *   any lane, until one of them returns. So one user's file systems that do
 *   not answer hold at most that many threads (and the few running when it
 *   was reached), and every other user's work still has threads; without the
 *   bound, one user's many stopped FUSE mounts took all of them, and the
 *   work of everyone then fell back to the loop.
 *
 * The loop watches fswork_fd() and calls fswork_dispatch() when it is
 * readable, and fswork_check() at fswork_next_deadline(). Completions run
 * on the loop's thread, in the order the jobs ended; a job's data is the
 * caller's to keep alive until its completion (a job cannot be taken back
 * from a worker: an owner that goes meanwhile marks its data dead and frees
 * it in the completion).
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "access.h"

#define FSWORK_DEADLINE_USEC    (2u * 1000000u)
#define FSWORK_THREADS_MAX      4u
#define FSWORK_THREADS_HARD_MAX 64u
#define FSWORK_USER_STUCK_MAX   8u

typedef struct FsWork FsWork;

typedef struct FsWorkOps {
        /* The lane of dev stopped answering (a job on it passed the deadline), or answers again. */
        void (*stalled)(dev_t dev, bool stalled, void *userdata);
} FsWorkOps;

/* In a worker, as the job's caller (or as the daemon: caller NULL). */
typedef void (*FsJobRun)(void *data);
/* On the loop's thread, after run; error: 0, or why run was not called (the
 * caller's credentials could not be taken: -EPERM...). -ESHUTDOWN: called from
 * fswork_free() for a job that ended or never ran, after the layers above may
 * be gone: free data, touch nothing else. */
typedef void (*FsJobDone)(void *data, int error);

int fswork_new(const FsWorkOps *ops, void *userdata, FsWork **ret);
/* Waits for the jobs running to return, then calls the completions of those
 * that ended and of those that never ran with -ESHUTDOWN; a job still running
 * after FSWORK_DEADLINE_USEC is left, with w (at exit). */
FsWork *fswork_free(FsWork *w);

/* Readable when completions wait: the loop calls fswork_dispatch(). */
int fswork_fd(const FsWork *w);
void fswork_dispatch(FsWork *w);
/* When fswork_check() must look at the lanes (a job's deadline), UINT64_MAX if none runs. */
uint64_t fswork_next_deadline(FsWork *w);
void fswork_check(FsWork *w, uint64_t now_usec);

/*
 * Queues run(data) on dev's lane as caller (copied; NULL: the daemon), then
 * done(data) on the loop. Return: 0, -ENOMEM, -EAGAIN (no thread could be
 * started and there is none at all: the caller does the work itself or
 * fails).
 */
int fswork_submit(FsWork *w, dev_t dev, const Caller *caller, FsJobRun run, FsJobDone done, void *data);

/* As fswork_submit(), run as the daemon (work no one caller could do: a
 * watch shared by several users), but taking turns and counted as uid's:
 * the user whose action asked for it, whose share of the stuck threads it
 * then takes if its file system does not answer. */
int fswork_submit_daemon(FsWork *w, dev_t dev, uid_t uid, FsJobRun run, FsJobDone done, void *data);

/* A lane of its own per user, for work whose file system is not known before it
 * runs (an open by path, a probe that may cross a symlink or a mount point into
 * any file system): a file system that stops answering there holds that user's
 * lane, not the lane of a file system others use. */
#define FSWORK_USER_LANE(uid) ((dev_t) (UINT64_C(1) << 63 | (uint64_t) (uid)))

/* Whether dev's lane is stalled now. */
bool fswork_stalled(FsWork *w, dev_t dev);

typedef struct FsWorkStats {
        uint64_t jobs;            /* submitted */
        uint32_t running, queued; /* now */
        uint32_t threads;         /* started, alive */
        uint32_t stalled_lanes;   /* now */
        uint64_t stalls;          /* lanes that stalled, ever */
} FsWorkStats;
void fswork_get_stats(FsWork *w, FsWorkStats *ret);
