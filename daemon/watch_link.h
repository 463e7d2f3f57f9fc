/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * watch_link - what a link of the watch table is on its own: its memory,
 * its place in its subscription's tree, its path, the holds that keep a
 * dead one allocated, and whether its directory's access is denied or
 * being checked. Below the table (watch_table_types.h says the layers):
 * watch_table.c makes and removes links with these, watch_rename.c moves
 * them.
 */

#include <stdbool.h>
#include <stddef.h>

#include "watch_table_types.h"

/* A link's memory, for a name of name_len bytes, and its freeing (its name
 * says its size): cut from pools of its size (pool.h), the longest names'
 * from malloc(). For watch_table.c, watch_rename.c and watch_link.c. */
WatchLink *watch_link_alloc(size_t name_len);
void watch_link_dealloc(WatchLink *l);
/* Whether l's memory can hold a name of name_len bytes and be freed as a
 * link of that name: the same pool, or a malloc() chunk large enough. */
bool watch_link_fits(const WatchLink *l, size_t name_len);

/* The subscription's own object, not a directory below it nor a directory of a pending path. */
static inline bool watch_link_is_root(const WatchLink *l) {
        return l->top && !l->up.subscription->pending;
}

/* A walk (or a follower) keeps a link it will come back to: a link unlinked
 * while held stays allocated (dead, in no list) until its last release. */
void watch_link_hold(WatchLink *l);
void watch_link_release(WatchLink *l);

/* The child link of l named name, or NULL. */
WatchLink *watch_link_child(WatchLink *l, const char *name, size_t name_len);

/* The next link of l's subscription after l, in pre-order (parents before
 * children), or NULL. Start from s->links. */
WatchLink *watch_link_next(WatchLink *l);

/* Writes the absolute path of l into buf. Return: its length, or
 * -ENAMETOOLONG if it does not fit. */
int watch_link_path(const WatchLink *l, char *buf, size_t size);

/* The path of l: for a root link its subscription's, for a top link its
 * name, else built into buf (PATH_MAX bytes). NULL if it would not fit. */
const char *watch_link_get_path(const WatchLink *l, char *buf);

/* l's access as its owner was found lost (denied), or is being checked again:
 * what happens in it, or below it, is not delivered meanwhile. */
void watch_link_set_access(WatchLink *l, bool denied, bool checking);
/* Whether l (a link of s) or a link above it is denied or being checked. */
static inline bool watch_link_blocked(const WatchLink *l, const Subscription *s) {
        if (s->n_blocked == 0)
                return false;
        for (; l; l = watch_link_parent(l))
                if (l->denied || l->checking)
                        return true;
        return false;
}
