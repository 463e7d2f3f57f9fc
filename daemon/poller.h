/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * poller - finding by polling the changes the kernel cannot report
 *
 * A directory on a remote or FUSE file system (fstype.h) keeps its kernel
 * watch, which reports the changes made through this kernel at once; what
 * another machine, or a FUSE daemon's backing store, changes is found here:
 * by reading the directory again every interval and comparing.
 *
 * A snapshot of a directory is its names, each with inode, type and mode,
 * owner, size, mtime and ctime: getdents64 on the directory opened afresh,
 * then one statx per name, relative to it, AT_SYMLINK_NOFOLLOW and
 * AT_STATX_FORCE_SYNC (so that NFS and FUSE ask the server rather than
 * answer from their attribute caches, which can be a minute old). Two
 * snapshots give records, in inotify's words: IN_CREATE, IN_DELETE,
 * IN_MODIFY (size or mtime), IN_ATTRIB (ctime, mode or owner, with neither
 * size nor mtime), IN_ISDIR for directories (whose own size and mtime change
 * with their contents and are not compared), and IN_MOVED_FROM|IN_MOVED_TO
 * when one inode left one name and took another. A kernel event for a name
 * updates the snapshot (poller_dir_note()), so that a change made here, which
 * the kernel has reported, is not reported a second time by the next poll.
 *
 * Directories are polled in groups: a group is one subscription's
 * directories on one mount, read one after the other in a "round". Renames
 * cannot cross mounts, so an inode that left a name in one directory of the
 * round and appeared under a name in another is paired into one move too;
 * the round's records are given out when it ends, in this order: deletions,
 * moves (a move into a name waits for the move out of it), creations,
 * modifications. Each group has an interval and a phase: its rounds start at
 * a steady interval, shifted from other groups' by a low-discrepancy
 * sequence, so that many groups made at once do not poll at once. A round
 * that outlasts its interval is followed by the next at once, never
 * overlapped: each directory is read at most once per interval.
 *
 * Work is bounded: poller_run() makes at most ops_per_run system calls
 * (open, getdents64, statx: counted in PollIo) and resumes where it stopped
 * on the next call. A user (uid) may have at most max_dirs_per_user
 * directories polled, and users take turns of a few dozen system calls: one
 * user's large directories delay its own polling, not other users'.
 *
 * No clock, no event loop, no credentials here: the time is passed in, the
 * caller runs poller_run() when poller_next() says, and the begin/end
 * callbacks surround every stretch of reads of a directory, for the caller to
 * take on the subscriber's credentials (access.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "poll_io.h" /* PollIo: what polling cost */
#include "poller_types.h"

/* In a worker (PollerCallbacks.submit): d's reads, as far as a job goes. */
void poller_dir_job_run(void *d);
/* On the poller's thread when the job returned (error: it did not run). */
void poller_dir_job_done(void *d, int error);
/* Whether d has a job in a worker. */
bool poller_dir_busy(const PollDir *d);

#define POLLER_OPS_PER_RUN 256u

int poller_new(const PollerCallbacks *cb, void *userdata, uint32_t max_dirs_per_user, Poller **ret);
Poller *poller_free(Poller *p);

/* Limits: the budget of one poller_run(), and the directories a uid may have
 * polled (for later additions: those already polled stay). */
void poller_set_limits(Poller *p, unsigned ops_per_run, uint32_t max_dirs_per_user);

/* A group of directories polled together, for uid, every interval_usec
 * (> 0). now_usec: the time of its creation, from which its phase counts. */
int poller_group_new(Poller *p, uid_t uid, uint64_t interval_usec, uint64_t now_usec, void *userdata, PollGroup **ret);
/* Frees the group and its directories; nothing is called back. */
void poller_group_free(PollGroup *g);
size_t poller_group_size(const PollGroup *g);

/*
 * Adds the directory open at fd (duplicated: the caller keeps fd) to g. Its
 * first snapshot is taken by the next poller_run() and gives no record,
 * unless report_existing: then every name found in it is an IN_CREATE (a
 * directory that appeared after the subscription began).
 * Return: 0, -EDQUOT (the uid has max_dirs_per_user directories polled),
 * -errno.
 */
int poller_dir_add(PollGroup *g, int fd, bool report_existing, void *userdata, PollDir **ret);
void poller_dir_remove(PollDir *d);
/*
 * Takes d's first snapshot now, making at most budget system calls (the
 * rest, if any, from poller_run()): so that a change made right after the
 * directory was added is found by the next poll. Nothing for a directory
 * added with report_existing (its first snapshot gives records: they come
 * from poller_run()). With PollerCallbacks.submit, the snapshot is taken in
 * a worker, whole, and PollerCallbacks.primed says when. Return: 0 (taken,
 * or nothing to take), 1 (submitted: primed() comes), -ENOMEM.
 */
int poller_dir_prime(PollDir *d, unsigned budget);
/* d's own descriptor of its directory (the duplicate poller_dir_add() made). */
int poller_dir_fd(const PollDir *d);

/* The kernel reported an event for name in d: the next poller_run() stats
 * name and puts what it finds into d's snapshot, and a record of the round
 * in progress for that name is dropped (the kernel's record stands for it). */
int poller_dir_note(PollDir *d, const char *name);

/* When poller_run() has work: now_usec or earlier if it has some at once,
 * UINT64_MAX if none at all. */
uint64_t poller_next(const Poller *p);

/* Does at most ops_per_run system calls of what is due at now_usec.
 * Return: > 0 if more is due at once, 0 if not, -ENOMEM. */
int poller_run(Poller *p, uint64_t now_usec);

const PollIo *poller_io(const Poller *p);
/* Directories polled for uid. */
uint32_t poller_user_dirs(const Poller *p, uid_t uid);
