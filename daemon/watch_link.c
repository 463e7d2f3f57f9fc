/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watch_link - what a link of the watch table is on its own: its place in
 * its subscription's tree (the next in walk order, a child by name), its
 * path, the holds that keep a dead one allocated, and whether its
 * directory's access is denied or being checked. Split out of
 * watch_table.c, which makes and removes links, and stands with
 * watch_rename.c, which moves them, above this file: it takes nothing from
 * the table but the records (watch_table_types.h). None of it touches a
 * kernel watch.
 */

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "list.h"
#include "path.h"
#include "pool.h"
#include "watch_link.h"

/* Links whose allocation (WATCH_LINK_SIZE) is up to LINK_POOLED bytes are
 * cut from the pool of their size rounded up to 8: link_pools[0] holds
 * sizeof(WatchLink) (a name of up to 0 bytes) and the next each 8 more. A
 * tree's names are mostly short: a link of a name of up to 71 bytes is
 * pooled; longer ones, and pending paths, are malloc()'s. */
#define LINK_POOLED      128
#define LINK_CLASS(size) (((size) + 7) / 8 - (sizeof(WatchLink) + 7) / 8)

static Pool link_pools[LINK_CLASS(LINK_POOLED) + 1] = {
        POOL_INIT(sizeof(WatchLink) + 0 * 8), POOL_INIT(sizeof(WatchLink) + 1 * 8),
        POOL_INIT(sizeof(WatchLink) + 2 * 8), POOL_INIT(sizeof(WatchLink) + 3 * 8),
        POOL_INIT(sizeof(WatchLink) + 4 * 8), POOL_INIT(sizeof(WatchLink) + 5 * 8),
        POOL_INIT(sizeof(WatchLink) + 6 * 8), POOL_INIT(sizeof(WatchLink) + 7 * 8),
        POOL_INIT(sizeof(WatchLink) + 8 * 8), POOL_INIT(sizeof(WatchLink) + 9 * 8),
};
_Static_assert(sizeof(WatchLink) % 8 == 0 && sizeof(WatchLink) + 9 * 8 == LINK_POOLED,
               "link_pools[] covers sizeof(WatchLink) to LINK_POOLED");

/* The pool of a link of size bytes, or NULL (malloc()). */
static Pool *link_pool(size_t size) {
        return size <= LINK_POOLED ? &link_pools[LINK_CLASS(size)] : NULL;
}

bool watch_link_fits(const WatchLink *l, size_t name_len) {
        size_t now = WATCH_LINK_SIZE(strlen(l->name)), then = WATCH_LINK_SIZE(name_len);
        Pool *p = link_pool(now);

        return p == link_pool(then) && (p || then <= now);
}

WatchLink *watch_link_alloc(size_t name_len) {
        size_t size = WATCH_LINK_SIZE(name_len);
        Pool *p = link_pool(size);

        return p ? pool_alloc(p) : malloc(size);
}

void watch_link_dealloc(WatchLink *l) {
        Pool *p;

        if (!l)
                return;
        p = link_pool(WATCH_LINK_SIZE(strlen(l->name)));
        if (p)
                pool_free(p, l);
        else
                free(l);
}

void watch_link_set_access(WatchLink *l, bool denied, bool checking) {
        bool was = l->denied || l->checking, is = denied || checking;

        l->denied = denied;
        l->checking = checking;
        if (was && !is)
                watch_link_subscription(l)->n_blocked--;
        else if (!was && is)
                watch_link_subscription(l)->n_blocked++;
}

void watch_link_hold(WatchLink *l) {
        assert(!l->dead);
        l->n_holds++;
}

void watch_link_release(WatchLink *l) {
        assert(l->n_holds > 0);
        if (--l->n_holds == 0 && l->dead)
                watch_link_dealloc(l);
}

WatchLink *watch_link_next(WatchLink *l) {
        if (l->children)
                return l->children;
        for (; !l->top; l = l->up.parent)
                if (l->sib_next)
                        return l->sib_next;
        return NULL;
}

WatchLink *watch_link_child(WatchLink *l, const char *name, size_t name_len) {
        LIST_FOREACH(sib, c, l->children)
                if (strncmp(c->name, name, name_len) == 0 && c->name[name_len] == '\0')
                        return c;
        return NULL;
}

int watch_link_path(const WatchLink *l, char *buf, size_t size) {
        size_t end = size, tl;
        const char *top;

        /* Right to left: each name and its "/", then the top's absolute path
         * (a root link's is its subscription's path). */
        for (; !l->top; l = l->up.parent) {
                size_t n = strlen(l->name);

                if (n + 1 >= end)
                        return -ENAMETOOLONG;
                end -= n;
                memcpy(buf + end, l->name, n);
                buf[--end] = '/';
        }
        top = watch_link_is_root(l) ? l->up.subscription->path : l->name;
        tl = end < size ? path_prefix_len(top) : strlen(top);
        if (tl + (size - end) >= size)
                return -ENAMETOOLONG;
        memmove(buf + tl, buf + end, size - end);
        memcpy(buf, top, tl);
        tl += size - end;
        buf[tl] = '\0';
        return (int) tl;
}

const char *watch_link_get_path(const WatchLink *l, char *buf) {
        if (l->top)
                return watch_link_is_root(l) ? l->up.subscription->path : l->name;
        return watch_link_path(l, buf, PATH_MAX) < 0 ? NULL : buf;
}
