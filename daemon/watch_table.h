/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * watch_table - subscriptions and the kernel watches they share
 *
 * A Subscription is what a client asked for (id, path, mask, flags). A
 * Watch is one kernel watch, keyed by the inode it is on (device and inode
 * number, not the path string): every subscription on that inode, whoever
 * owns it, shares it, and its kernel mask is the union of what they need.
 * A WatchLink joins one subscription to one watch, with where that watch
 * is for that subscription: a plain subscription has one link (its root),
 * a RECURSIVE one a link per directory of its tree. Removing a link
 * recomputes the union; removing the last one releases the kernel watch.
 *
 * The table calls the backend for the kernel side. Each link is charged to
 * its subscription's account (accounting.h) when it is made, and the charge
 * returned when it goes: the limits count links, and no count can drift
 * from the links there are. The owner is the daemon's Client, which the
 * table only points to.
 *
 * The records themselves are in watch_table_types.h, and what a link is on
 * its own (its memory, its path, its place in its tree) in watch_link.h,
 * both included here: the table stands above them. What a rename does to
 * the table (a link moved, paths rebased) is watch_rename.c's, above it.
 */

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "accounting.h"
#include "backend.h"
#include "fswork.h"
#include "watch_link.h"

typedef struct WatchTable WatchTable;

/* What a RECURSIVE subscription needs on each directory to follow its tree. */
#define WATCH_TREE_BITS (IN_CREATE | IN_MOVED_FROM | IN_MOVED_TO)
/* What the root of a tree fanotify follows asks of its inotify watch: what
 * the mark does not report (the root's other events come from the mark, as
 * the directory's own; the bits a directory's watch also gets for each entry,
 * IN_OPEN, IN_CLOSE_WRITE..., would be read twice). */
#define WATCH_FANOTIFY_ROOT_BITS (IN_DELETE_SELF | IN_MOVE_SELF)
/* What a pending subscription needs on each existing directory of its path:
 * a component appearing (the deepest) or going away (the others). */
#define WATCH_PENDING_BITS (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE)
/* What every watched directory is watched for besides: a change of its mode,
 * owner or ACL, after which its subscribers' access is checked again. */
#define WATCH_ACCESS_BITS IN_ATTRIB

int watch_table_new(Backend *backend, WatchTable **ret);

/* What a layer above is told of links (WatchTableOps): watch_table_types.h. */
void watch_table_set_ops(WatchTable *t, const WatchTableOps *ops, void *userdata);
/* Narrowings then run in workers (NULL: on the loop). */
void watch_table_set_fswork(WatchTable *t, FsWork *fswork);
/* At exit, before the subscriptions end: no more narrowing (every link goes). */
void watch_table_closing(WatchTable *t);
/* Frees the table without telling the kernel (the backend's fd is closed after it). */
WatchTable *watch_table_free(WatchTable *t);

/*
 * Subscribes owner to the object open at fd (st is its fstat), for mask:
 * the subscription and its root link, charged to account. Adds the kernel
 * watch or widens its mask as needed.
 * Return: 0, or -errno from the backend (-ENOSPC: the kernel's watch limit),
 * -ENOMEM, -WATCHD_E_IDS_USED_UP, or a limit of account_charge().
 */
int watch_table_subscribe(WatchTable *t, int fd, const struct stat *st, const char *path, Client *owner,
                          Account *account, uint32_t mask, uint32_t flags, Subscription **ret);

/* The same for a RECURSIVE subscription whose tree fanotify follows
 * (fanotify.h): its root link asks the kernel only for the
 * WATCH_FANOTIFY_ROOT_BITS s asks for, and always IN_DELETE_SELF. */
int watch_table_subscribe_fanotify(WatchTable *t, int fd, const struct stat *st, const char *path, Client *owner,
                                   Account *account, uint32_t mask, uint32_t flags, Subscription **ret);

/* A pending subscription to path (which does not exist yet), with no link:
 * the caller links it (watch_table_link) and places its root
 * (watch_table_link_root) once path exists. Return: 0, -ENOMEM, -WATCHD_E_IDS_USED_UP. */
int watch_table_subscribe_pending(WatchTable *t, const char *path, Client *owner, Account *account, uint32_t mask,
                                  uint32_t flags, Subscription **ret);
/* A chain for the missing-path follower, with no link yet; its top link
 * (watch_table_link_pending) holds top, an absolute path. Not an API
 * subscription: no id, not counted, not listed; a watch may hold several
 * links of one chain (the same directory by two paths). */
int watch_table_chain_new(WatchTable *t, const char *top, Subscription **ret);
/* Unlinks a chain and frees it. */
void watch_table_chain_free(WatchTable *t, Subscription *s);

/* Places the root link of a subscription that has none (it stops being pending). */
int watch_table_link_root(WatchTable *t, Subscription *s, int fd, const struct stat *st);
/* The opposite: s (placed) loses all its links and is pending again, on its
 * path (a PERSIST subscription whose object left it). */
void watch_table_unplace(WatchTable *t, Subscription *s);

/*
 * Links s to one more object: a directory named name in the directory of
 * parent (a link of s), for RECURSIVE. Return: 0, -EEXIST if s already has
 * a link on that inode (a loop through a bind mount, or a directory seen
 * twice), or -errno as for subscribe.
 */
int watch_table_link(WatchTable *t, Subscription *s, WatchLink *parent, int fd, const struct stat *st, const char *name,
                     size_t name_len, WatchLink **ret);
/* Links pending s to the directory at the absolute path: its top link. */
int watch_table_link_pending(WatchTable *t, Subscription *s, int fd, const struct stat *st, const char *path,
                             WatchLink **ret);

/*
 * A watch placed in a worker (issue 24). On a file system that may stop
 * answering, placing a watch on the loop waits for it: inotify_add_watch()'s
 * check of the right to read asks FUSE with default_permissions for stale
 * attributes (FUSE_GETATTR) and NFS its access cache, and a batch's
 * fchdir() asks FUSE without it (FUSE_ACCESS). There the job that opened
 * the object places its watch as well, as the owner (watch_table_place()):
 * IN_MASK_CREATE, or IN_MASK_ADD on a watch the inode has already, so that
 * adds commute and none takes bits away; and the loop links with what the
 * job got (watch_table_set_placed() around the link) instead of adding.
 * What the kernel queues for a wd the loop does not know yet is dropped:
 * the object is read after it is linked (a walk's next job), or is new to
 * its subscriber.
 *
 * At the link: a watch the loop knows by the wd it got takes its bits
 * (unless a narrowing of the inode may have landed after the add: then it
 * is set to what its links need in another job, and lost says so); a
 * watch it made is new to the loop; a watch it found (not made) that the
 * loop released meanwhile is gone from the kernel: -WATCHD_E_PLACED_GONE,
 * to be placed again. A placed watch no link took is removed once no job that may place
 * is out (watch_table_placing()), for another job may have found it.
 */
typedef struct WatchPlaced {
        bool valid; /* a job placed (or tried to): the links made with it use it */
        int r;      /* the add: 0, or -errno (the link fails with it) */
        int wd;
        bool created; /* a watch of its own (IN_MASK_CREATE); false: the inode's, there already */
        dev_t dev;    /* of the object it was placed on */
        ino_t ino;
        uint32_t mask;   /* what it added */
        uint64_t seq;    /* narrower_seq() before the add */
        uint64_t rm_seq; /* the table's removals before the add (watch_placed.h) */
        bool used;       /* set by the table: a link used it */
        bool lost;       /* set by the table: events of it may be lost (see above) */
} WatchPlaced;

/* Whether the backend can place from a worker (IN_MASK_ADD, IN_MASK_CREATE). */
bool watch_table_can_place(const WatchTable *t);
/* The kernel mask a link of a subscription with mask and flags needs on its
 * object (is_dir; root: its top link), as the table would add it. */
uint32_t watch_table_need_mask(uint32_t mask, uint32_t flags, bool is_dir, bool root);
/* Any thread, with the owner's credentials: places the watch of the object
 * at fd (st: its fstat) with mask. Never fails: ret->r says. */
void watch_table_place(WatchTable *t, int fd, const struct stat *st, uint32_t mask, WatchPlaced *ret);
/* On the loop: a job that may place was submitted (begin), or its
 * completion is over (after watch_table_placed_done() for each of its). */
void watch_table_placing(WatchTable *t, bool begin);
/* The links made until it is set again (NULL) to the object p was placed
 * on use p's watch. */
void watch_table_set_placed(WatchTable *t, WatchPlaced *p);
/* The completion is done with p: its watch, if no link has it, is let go of. */
void watch_table_placed_done(WatchTable *t, WatchPlaced *p);

/* Removes l and every link below it; narrows or releases their kernel
 * watches. Never fails. Return: how many links were removed. */
unsigned watch_table_unlink(WatchTable *t, WatchLink *l);

/*
 * Moves l (not a top link) below new_parent (a link of the same
 * subscription), as name: a directory renamed inside its tree keeps its
 * links and watches. l may be reallocated (its name is inline): the new
 * pointer is returned (the table's own references, its children's parent
 * pointers and its hold count follow), or NULL on ENOMEM (l is unchanged).
 */
WatchLink *watch_table_move_link(WatchTable *t, WatchLink *l, WatchLink *new_parent, const char *name, size_t name_len);

/* Ends a subscription and all its links. Never fails. */
void watch_table_unsubscribe(WatchTable *t, Subscription *s);

/*
 * The kernel dropped the watch (IN_IGNORED): forget its wd. Links still on
 * it stay until the caller removes them (which then does not call the
 * kernel); the last one frees the watch.
 */
void watch_table_watch_gone(WatchTable *t, Watch *w);

/*
 * A directory moved from old_path to new_path: the path of every placed
 * subscription at or below old_path follows (it is its root link's path;
 * links below a root hold names and need nothing). Pending subscriptions
 * keep the path they asked for.
 * Return: how many paths changed, or -ENOMEM (then some may have).
 */
int watch_table_rename_paths(WatchTable *t, const char *old_path, const char *new_path);

/* Appends to ids (uint32_t) the placed PERSIST subscriptions whose path is
 * path or below it: a directory renamed away from path took their objects
 * from their paths. Return: how many. */
int watch_table_persist_at(WatchTable *t, const char *path, GArray *ids);

Watch *watch_table_get_watch(WatchTable *t, int wd);
/* The (current, not stale) watch of an inode, or NULL. */
Watch *watch_table_find_watch(WatchTable *t, dev_t dev, ino_t ino);
Subscription *watch_table_get_subscription(WatchTable *t, uint32_t id);

unsigned watch_table_n_watches(const WatchTable *t);
unsigned watch_table_n_subscriptions(const WatchTable *t);
