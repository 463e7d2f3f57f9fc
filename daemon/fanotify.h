/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * fanotify - RECURSIVE subscriptions served by one fanotify mark a filesystem
 *
 * inotify needs a watch on every directory of a tree, placed by walking it,
 * and learns of a new directory's contents by reading it after its watch is
 * placed. A fanotify filesystem mark (Linux >= 5.17 for what is used here:
 * FAN_REPORT_DFID_NAME with FAN_RENAME and FAN_REPORT_TARGET_FID) reports
 * every change on a filesystem, each by its directory's handle and the
 * entry's name, with the actor's pid: one mark serves every RECURSIVE
 * subscription on that filesystem, whatever the size of their trees, and
 * nothing created in a tree is missed, however fast.
 *
 * A subscription it serves (Subscription.fanotify) keeps one inotify link,
 * on its root, placed as for any subscription: what happens to the root
 * itself (its IN_DELETE_SELF, IN_IGNORED, IN_UNMOUNT, its own IN_OPEN or
 * IN_ATTRIB) reaches it there, exactly as before, and the subscription ends
 * or follows its path as any other. Everything below the root comes from
 * the mark: each event's directory is found in the filesystem's
 * fan_dircache.h, the subscriptions whose roots are above it (or are it)
 * get it, with the path built from the subscription's path and the names
 * below its root, if their owner may read that directory as a walk would
 * (search on every directory from the root down, read on the directory
 * itself: fan_dircache_may_read()). A rename is one event (FAN_RENAME):
 * its halves go to the subscriptions of each side with one cookie (from
 * FAN_COOKIE_BASE up), so delivery pairs them. A merged event (fanotify
 * merges the events of one object by one process) is split into records in
 * the order its bits happen in (create, open, access, modify, attrib,
 * close, delete). What watchd itself does (its own opens of directories,
 * its journal) comes with its pid and is dropped. A queue overflow gives
 * every subscription served here Overflow, and the directory caches start
 * again.
 *
 * Where it can serve (fanotify_can_serve()): a group from the helper
 * (fan_helper.h; watchd keeps no CAP_SYS_ADMIN), a RECURSIVE subscription of
 * a directory without PERSIST, on a local filesystem with a non-zero fsid
 * that encodes file handles and that the kernel lets be marked, with no other
 * mount below the root (a mark sees one filesystem), reached through the
 * mount its filesystem's first subscription was. Anywhere else inotify
 * serves it, as before.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "access.h"
#include "fanotify_types.h"
#include "remote.h"
#include "watch_table.h"

/* Cookies of the renames this backend pairs: above the kernel's (a
 * counter from 1) and below the poller's (0xC0000000 up). */
#define FAN_COOKIE_BASE 0x80000000u
#define FAN_COOKIE_SPAN 0x40000000u

/* How many directories a filesystem's cache holds before it starts again. */
#define FANOTIFY_DIRS_MAX 262144u

/* Connects to the helper at helper_socket and takes a group. Return: 0,
 * or -errno (fan_group_new(): -ENOENT/-ECONNREFUSED no helper, -EINVAL a
 * kernel before 5.17, -EPERM no privilege), logged by the caller. */
int fanotify_new(const char *helper_socket, const FanotifyOps *ops, void *userdata, Fanotify **ret);
Fanotify *fanotify_free(Fanotify *f);

/* The group's fd to poll for readability. */
int fanotify_fd(const Fanotify *f);

/*
 * Whether it can serve a subscription with flags and mask, for caller, on
 * the directory open at fd (st its fstat). The first time on a filesystem,
 * that is where it is marked, for what the subscription will need (before the subscription's root link is placed: the daemon opens
 * the directory once for the mark): a filesystem the kernel will not mark
 * is remembered, and the answer for it is no from then on. Then
 * fanotify_attach(), or fanotify_release_unused() if the subscription is
 * not made after all.
 */
bool fanotify_can_serve(Fanotify *f, int fd, const struct stat *st, uint32_t flags, uint32_t mask, const Caller *caller,
                        const RemoteHint *hint);
/* Unmarks the filesystems no subscription is served on. */
void fanotify_release_unused(Fanotify *f);

/*
 * Serves s (placed with Subscription.fanotify: its root link only), rooted
 * on the directory open at fd, for its owner's caller, on the filesystem
 * fanotify_can_serve() said yes for: widens its mark for s's mask.
 * Return: 0, or -errno; then s is not served.
 */
int fanotify_attach(Fanotify *f, Subscription *s, int fd, const Caller *caller);
/* s ends: not served any more (the mark narrows, or goes with the last). */
void fanotify_detach(Fanotify *f, Subscription *s);

/* Reads and handles the group's events for at most budget_usec. Return: whether any are left. */
bool fanotify_slice(Fanotify *f, uint64_t budget_usec);

void fanotify_get_stats(const Fanotify *f, FanotifyStats *ret);
