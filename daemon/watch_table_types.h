/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * watch_table_types - the records of the watch table (watch_table.h): a
 * Subscription, a Watch and the WatchLink that joins them, and what a layer
 * above is told of links (WatchTableOps). Apart from the table's functions,
 * and including no header of its own module, so that watch_link.c, which
 * knows a link on its own, can see them without taking anything from
 * watch_table.c, which makes and removes them, and so that the table's own
 * struct (watch_table_internal.h) stands below watch_table.h.
 *
 * The module's files stand in layers, each calling only those before it:
 * watch_placed.c and watch_narrow.c (each on its own, telling the table
 * through a callback), watch_link.c, watch_table.c, watch_rename.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "accounting.h"
#include "list.h"

typedef struct Watch Watch;
typedef struct WatchLink WatchLink;
typedef struct Subscription Subscription;
typedef struct Client Client;

struct Subscription {
        uint32_t id; /* never reused while the daemon runs */
        Client *owner;
        Account *account; /* charged one watch per link; NULL: not counted */
        uint32_t mask;    /* IN_* events asked for */
        uint32_t flags;   /* WATCHD_FLAG_* */
        char *path;       /* as asked (simplified) */
        WatchLink *links; /* the top of its tree of links: the root, or a pending
                           * subscription's links on the existing directories of its path */
        unsigned n_links;
        bool pending;       /* path does not exist (yet, or again with PERSIST): no link of its
                             * own (missing.c follows it), nothing delivered; or a chain (below) */
        bool chain;         /* the missing-path follower's: its links are the existing
                             * directories of pending paths; no id, owner or account */
        unsigned n_blocked; /* its links denied or being checked (watch_link_set_access()) */
        bool missed;        /* a record of a blocked link was not delivered (its owner hears) */
        bool fanotify;      /* RECURSIVE, its tree served by fanotify (fanotify.h): one link,
                             * its root's, for what happens to the root itself */

        LIST_FIELDS(Subscription, owner); /* the owner's list, kept by the owner */
};

/*
 * One per (subscription, watched inode). A subscription's links form a tree
 * that mirrors its directories: the top link holds an absolute path, every
 * other link the name of its directory in its parent link's directory, so a
 * rename above a link changes nothing in it, and a tree of N directories
 * stores N names, not N paths. The path of a link is built by walking up
 * (watch_link_path()).
 */
struct WatchLink {
        /* The top link holds its subscription, every other link its parent:
         * a tree of N directories does not hold the same pointer N times
         * (watch_link_subscription() walks up to it). */
        union {
                WatchLink *parent;          /* !top */
                Subscription *subscription; /* top */
        } up;
        Watch *watch;
        LIST_HEAD(WatchLink, children); /* the links below it */
        LIST_FIELDS(WatchLink, sib);    /* among parent->children */
        SLIST_FIELDS(WatchLink, watch); /* in watch->links (a few each) */
        uint32_t n_holds;               /* watch_link_hold() */
        bool top;                       /* the top link, or a dead one (below) */
        bool dead;                      /* unlinked while held: in no list, freed at the last release;
                                         * it keeps its subscription (a top of its own) */
        bool denied;                    /* its owner may no longer read it: nothing from it or below */
        bool checking;                  /* its owner's access is being checked again: the same meanwhile */
        /* A pending subscription's top link: an absolute path; a root link: "" (its
         * path is the subscription's); others: a name. Allocated to its length: see
         * WATCH_LINK_SIZE(). */
        char name[];
};

/* l's parent link, NULL for the top link (and a dead one). */
static inline WatchLink *watch_link_parent(const WatchLink *l) {
        return l->top ? NULL : l->up.parent;
}

/* l's subscription: its top link's. */
static inline Subscription *watch_link_subscription(const WatchLink *l) {
        while (!l->top)
                l = l->up.parent;
        return l->up.subscription;
}

/* The allocation of a link with a name of name_len bytes: the name starts
 * inside the struct's tail padding (sizeof(WatchLink) would waste it, and a
 * tree of N directories holds N links). */
#define WATCH_LINK_SIZE(name_len)                                                                                      \
        (offsetof(WatchLink, name) + (name_len) + 1 > sizeof(WatchLink) ? offsetof(WatchLink, name) + (name_len) + 1 : \
                                                                          sizeof(WatchLink))

/* 32 bytes, cut from a pool (pool.h): a watched directory holds one. */
#define WATCH_LINKS_MAX ((1u << 28) - 1)
struct Watch {
        int wd;                /* the kernel's; 0 is valid on the device backend; -1 once gone */
        uint32_t kernel_mask;  /* what the kernel was last told */
        uint32_t dev;          /* st_dev: Linux's are 32 bits (12 major, 20 minor; see watch_new()) */
        unsigned n_links : 28; /* < WATCH_LINKS_MAX */
        bool is_dir : 1;
        bool unmounted : 1; /* IN_UNMOUNT seen: the coming IN_IGNORED means "unmounted" */
        bool stale : 1;     /* no longer the watch of (dev, ino) */
        bool narrowing : 1; /* a NarrowJob is out for it (watch_table.c) */
        ino_t ino;
        LIST_HEAD(WatchLink, links);
};

/*
 * What a layer above is told of links (remote.h: which directories to
 * poll). link_added: a link was made, on the object open at fd (st its
 * fstat); a negative return undoes it and is what the call that made it
 * returns. link_gone: a link is about to be removed (not when the table is
 * freed).
 */
typedef struct WatchTableOps {
        int (*link_added)(WatchLink *l, int fd, const struct stat *st, void *userdata);
        void (*link_gone)(WatchLink *l, void *userdata);
} WatchTableOps;
