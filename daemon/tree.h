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
 * When a directory appears (IN_CREATE or IN_MOVED_TO with IN_ISDIR), it is
 * linked first and read after, so nothing created in it is missed: what the
 * scan finds in a directory that was just created is reported as IN_CREATE
 * records (mkdir -p a/b/c && touch a/b/c/f gives a, b, c and f), each
 * once: a name the scan reported is remembered (Manager.scanned) until the
 * kernel queue is next read empty, and the kernel's IN_CREATE/IN_MOVED_TO
 * for it, queued before the scan could see it (the kernel queues it under
 * the directory's lock, which getdents also takes), is not reported again;
 * an IN_DELETE/IN_MOVED_FROM of the name ends that. A directory that leaves the tree
 * (IN_MOVED_FROM) is unlinked with everything below it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "manager.h"

/*
 * Links every directory below the one open at dir_fd (already linked, at
 * dir_path). Return: 0, or the error that stopped the walk: -EDQUOT/-EMLINK
 * (the owner's limits), -ENOSPC (the kernel's), -ENOMEM.
 */
int tree_add_below(Manager *m, Subscription *s, int dir_fd, const char *dir_path, bool synthesize, uint64_t now_usec);

/* A directory appeared at path: link it and what is below; if synthesize,
 * report what it holds. A limit met on the way gives the owner Overflow. */
void tree_add(Manager *m, Subscription *s, const char *path, bool synthesize, uint64_t now_usec);

/* The directory at path left s's tree: unlink it and everything below. */
void tree_remove(Manager *m, Subscription *s, const char *path);

/* dir + "/" + name (dir "/" gives "/name"); NULL on ENOMEM. */
char *tree_path_join(const char *dir, const char *name, size_t name_len);
