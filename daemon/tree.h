/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * tree - following the directory tree of a RECURSIVE subscription
 *
 * A RECURSIVE subscription has a link (a kernel watch, shared like any
 * other) on its root and on every directory below it. Directories are
 * opened with the owner's credentials, like the root: a directory the owner
 * cannot read is not entered. Symbolic links are not followed; a directory
 * reached twice (a bind mount loop) is linked once.
 *
 * A walk links a directory first and reads it after, so nothing created in
 * it is missed. Walks run in slices between the loop's other work (the
 * kernel's events, other clients' calls): a tree of a million directories
 * neither stops the daemon nor holds back the events of the part already
 * watched. An AddWatch of a RECURSIVE tree is answered when its walk ends.
 *
 * When a directory appears (IN_CREATE or IN_MOVED_TO with IN_ISDIR), it is
 * walked the same way, and what the walk finds in a directory that was just
 * created is reported as IN_CREATE records (mkdir -p a/b/c && touch
 * a/b/c/f gives a, b, c and f), each once: a name the scan reported is
 * remembered (Tree.scanned) until the kernel queue is next read empty, and
 * the kernel's IN_CREATE/IN_MOVED_TO for it, queued before the scan could see
 * it (the kernel queues it under the directory's lock, which getdents also
 * takes), is not reported again; an IN_DELETE/IN_MOVED_FROM of the name ends
 * that. A pending path that appears as a directory is scanned the same way
 * (tree_appeared()), with or without RECURSIVE.
 *
 * The kernel reports the walk's own reads of directories (IN_OPEN,
 * IN_ACCESS, IN_CLOSE_NOWRITE) to their watchers like anyone's: each is
 * told to self_events.h, which drops those records.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "fswork.h"
#include "hold.h"
#include "self_events.h"
#include "tree_types.h"
#include "watch_table.h"

/* The size of the walks' getdents64 buffer. */
#define TREE_DENTS_BUF (32u * 1024u)

int tree_new(WatchTable *table, Backend *backend, SelfEvents *self, const TreeOps *ops, void *userdata, Tree **ret);
/* The workers the walks' reads run in, by the directories' file system
 * (tree.c, "Walks in workers"); without (NULL, or none to be had), they
 * run on the loop, in slices. */
void tree_set_fswork(Tree *t, FsWork *fswork);
/* The holds (hold.h) a new directory's scan keeps its order with the
 * kernel's records by while its parent is opened in a worker; without
 * (NULL), that open is on the loop. */
void tree_set_holds(Tree *t, Holds *holds);
/* Ends every walk (done gets -ECANCELED): at exit, after the workers are freed. */
Tree *tree_free(Tree *t);

/*
 * Walks everything below the root of s, open at fd (O_PATH or readable; not
 * consumed). Runs a first slice at once: if the walk is done by then, returns
 * 0 (or its error) and *ret is NULL; else *ret is the walk, which goes on
 * from the loop (tree_walks_run) and calls done (set with
 * tree_walk_set_done()) when it ends. With all_or_nothing, a walk that fails
 * on a limit ends s (ops->end; AddWatch: the whole tree or nothing);
 * without, s gets Overflow and 0 is returned.
 */
int tree_walk_below(Tree *t, Subscription *s, int fd, bool all_or_nothing, TreeWalk **ret);
void tree_walk_set_done(TreeWalk *w, TreeWalkDone done, void *userdata);

/*
 * The kernel's queue overflowed: the IN_CREATE of a directory of s's tree
 * may be among the records lost, and that directory would never be watched.
 * So the tree is walked again from its root (in slices, like any walk),
 * going down the directories linked already as well, and what is not linked
 * is linked. The root is opened by its path as the owner in a worker, in a
 * lane of the owner's uid (tree_set_fswork()), the walk started on the loop
 * when it returns. Nothing is reported: s's client gets Overflow and looks itself.
 * Does nothing for a subscription that is not RECURSIVE, is pending, is
 * served by fanotify (fanotify.h), or whose root path no longer leads to
 * its root.
 */
void tree_rescan(Tree *t, Subscription *s);

/*
 * The root of s, a directory open at fd (not consumed), was just placed: a
 * pending path appeared (missing.h). With RECURSIVE, everything below it is
 * walked, as a directory moved into a tree is (a limit gives Overflow).
 * With report, what it holds is reported as IN_CREATE records from a scan,
 * each entry once as for a new directory of a tree (Tree.scanned): the
 * whole tree with RECURSIVE, its own entries without. The first slice runs
 * at once, the rest from the loop. What cannot be walked or reported (a
 * limit, the root unreadable) gives s Overflow: s stays placed.
 */
void tree_appeared(Tree *t, Subscription *s, int fd, bool report, uint64_t now_usec);

/* A directory appeared at path (below s's root): link it and what is
 * below; if synthesize, report what it holds. A limit met on the way gives
 * the owner Overflow. Its parent is opened by its path as the owner, in a
 * worker (as tree_rescan()'s root); with synthesize, the owner's records
 * wait for it meanwhile (hold.h: at most HOLD_USEC, then they go on and s
 * gets Overflow), so that the scan's first slice's records come before the
 * kernel's read after it; the rest of a large scan goes on in workers. If
 * the parent's path does not lead to the parent (a rename of it is still
 * in the kernel queue), it is tried
 * again once the queue is read empty (at once if the records were read
 * meanwhile), and only then Overflow. */
void tree_add(Tree *t, Subscription *s, const char *path, bool synthesize, uint64_t now_usec);

/*
 * A rename inside a tree keeps the moved directory's links (and walks in
 * progress in it): at IN_MOVED_FROM its link is set aside (tree_moved_from);
 * if the next record is the IN_MOVED_TO with the same cookie into the same
 * subscription's tree, the link moves to its new parent and name
 * (tree_moved_to); else it left the tree and is unlinked with everything
 * below (tree_moves_end, called for any other record, or TREE_MOVE_GRACE_USEC
 * after the queue was read empty with it set aside: tree_expire()). The
 * kernel queues a rename's two halves one after the other, not at once: a
 * read can find the queue empty between them. A directory that was not linked yet when it moved (created
 * and renamed at once) is walked at its new place and what it holds
 * reported, as for a new directory; one moved in from elsewhere is walked
 * without reports.
 */
void tree_moved_from(Tree *t, Subscription *s, const char *path, uint32_t cookie);
void tree_moved_to(Tree *t, Subscription *s, const char *path, uint32_t cookie, uint64_t now_usec);
bool tree_moves_pending(Tree *t, uint32_t cookie);
void tree_moves_end(Tree *t);
void tree_retries_run(Tree *t);
/* A rename was read: the scans waiting for their parent's path (tree_add())
 * that lead to it now go at once, in order with the kernel's records. */
void tree_retries_try(Tree *t);

/* The kernel queue was read empty: what waited for that (the scanned names,
 * the retries) is settled; but a move set aside waits for its IN_MOVED_TO
 * up to TREE_MOVE_GRACE_USEC more (and the retries with it). */
void tree_queue_read_empty(Tree *t);
/* The longest a directory moved out of its place waits for its IN_MOVED_TO
 * once the queue was read empty (the renaming thread may be preempted between
 * the two halves): past it, it left the tree. */
#define TREE_MOVE_GRACE_USEC (500u * 1000u)
/* When tree_expire() has work: a move set aside past its grace (UINT64_MAX: none). */
uint64_t tree_next_deadline(const Tree *t);
void tree_expire(Tree *t, uint64_t now_usec);
/* Whether anything waits for that: if not, tree_queue_read_empty() would do nothing. */
bool tree_waits_read_empty(const Tree *t);

/* Whether the record (mask, name in the directory at dir) for s was already
 * reported by a scan: then it is not reported again. */
bool tree_scanned_check(Tree *t, const Subscription *s, const char *dir, uint32_t mask, const char *name,
                        size_t name_len);
/* The kernel reported dir/name (mask) to s, whatever s wants: noted for the
 * walks' jobs out in that directory (what they read or opened there is older). */
void tree_unread_note(Tree *t, const Subscription *s, const char *dir, uint32_t mask, const char *name, size_t name_len);

/* Runs the walks in progress for at most budget_usec. Return: whether any is left. */
bool tree_walks_run(Tree *t, uint64_t budget_usec);
bool tree_has_walks(const Tree *t);
