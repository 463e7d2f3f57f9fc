/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * watch_table - subscriptions and the kernel watches they share
 *
 * A Subscription is what a client asked for (id, path, mask, flags). A
 * Watch is one kernel watch, keyed by the inode it is on (device and inode
 * number, not the path string): every subscription on that inode, whoever
 * owns it, shares it, and its kernel mask is the union of their masks.
 * Removing a subscription recomputes the union; removing the last one
 * releases the kernel watch.
 *
 * The table calls the backend for the kernel side and nothing else. Owners
 * are opaque pointers (the daemon's Client). Room for recursion: a
 * subscription names its root watch; a recursive one will own more watches
 * through the same Watch objects (a kernel watch per directory, shared like
 * any other), so the coalescing rules here do not change.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "backend.h"

typedef struct WatchTable WatchTable;
typedef struct Watch Watch;
typedef struct Subscription Subscription;

struct Subscription {
        uint32_t id;            /* never reused while the daemon runs */
        void *owner;
        uint32_t mask;          /* IN_* events asked for */
        uint32_t flags;         /* WATCHD_FLAG_* */
        char *path;             /* the absolute path records are built from */
        Watch *watch;

        Subscription *watch_prev, *watch_next;  /* in watch->subscriptions */
        Subscription *owner_prev, *owner_next;  /* the owner's list, kept by the owner */
};

struct Watch {
        int wd;                 /* the kernel's; 0 is valid on the device backend */
        dev_t dev;
        ino_t ino;
        uint32_t kernel_mask;   /* what the kernel was last told */
        bool unmounted;         /* IN_UNMOUNT seen: the coming IN_IGNORED means "unmounted" */
        bool stale;             /* no longer the watch of (dev, ino): its wd is being replaced */
        unsigned n_subscriptions;
        Subscription *subscriptions;
};

int watch_table_new(Backend *backend, WatchTable **ret);
/* Frees the table without telling the kernel (the backend's fd is closed after it). */
WatchTable *watch_table_free(WatchTable *t);

/*
 * Subscribes owner to the object open at fd (st is its fstat), for mask.
 * Adds the kernel watch or widens its mask as needed.
 * Return: 0, or -errno from the backend (-ENOSPC: the kernel's watch limit),
 * -ENOMEM, -EOVERFLOW when the ids are used up.
 */
int watch_table_subscribe(WatchTable *t, int fd, const struct stat *st, const char *path,
                          void *owner, uint32_t mask, uint32_t flags, Subscription **ret);

/* Ends a subscription; narrows or releases its kernel watch. Never fails. */
void watch_table_unsubscribe(WatchTable *t, Subscription *s);

/*
 * The kernel dropped the watch (IN_IGNORED): forget its wd. Subscriptions
 * still on it stay until the caller ends them with watch_table_unsubscribe,
 * which then does not call the kernel; the last one frees the watch.
 */
void watch_table_watch_gone(WatchTable *t, Watch *w);

Watch *watch_table_get_watch(WatchTable *t, int wd);
Subscription *watch_table_get_subscription(WatchTable *t, uint32_t id);

unsigned watch_table_n_watches(const WatchTable *t);
unsigned watch_table_n_subscriptions(const WatchTable *t);
