/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * error - the daemon's own conditions, each with a name
 *
 * A -errno is what a system call said. What the daemon decides itself (a
 * limit is reached, an object or a descriptor it refuses, an id it does not
 * know) has a code of its own, as dbus-broker's DRIVER_E_* do: the values
 * start above the kernel's largest errno (MAX_ERRNO, 4095), and travel
 * negated in the same int as a -errno (return -WATCHD_E_CLIENT_WATCHES;), so
 * a caller that only forwards failures need not tell them apart and one is
 * never taken for the other. bus_error_for() in bus_caller.c turns each into
 * its D-Bus error; error_to_string() names it, and log.c's "%m" does too.
 */

typedef enum WatchdError {
        _WATCHD_E_FIRST = 4096,
        WATCHD_E_CLIENT_WATCHES = _WATCHD_E_FIRST, /* max_watches_per_client reached */
        WATCHD_E_USER_WATCHES,                     /* max_watches_per_user reached */
        WATCHD_E_UNPRIVILEGED_WATCHES,             /* max_watches_unprivileged reached (all users but root) */
        WATCHD_E_USER_CLIENTS,                     /* max_clients_per_user reached */
        WATCHD_E_NOT_WATCHABLE,                    /* not a regular file or a directory */
        WATCHD_E_NO_NAME,         /* a descriptor with no name on a mounted file system (memfd, deleted...) */
        WATCHD_E_FD_PATH,         /* a client's descriptor is O_PATH */
        WATCHD_E_FD_WRITE_ONLY,   /* a client's descriptor is not open for reading */
        WATCHD_E_NO_SUCH_WATCH,   /* no subscription of the caller's has that id */
        WATCHD_E_IDS_USED_UP,     /* every subscription id has been given out */
        WATCHD_E_USER_POLLED,     /* max_polled_dirs_per_user reached */
        WATCHD_E_NO_STATE_DIR,    /* durable subscriptions need a state directory, there is none */
        WATCHD_E_DURABLE_EXISTS,  /* the caller has a durable subscription of that name */
        WATCHD_E_NO_SUCH_DURABLE, /* the caller has no durable subscription of that name */
        WATCHD_E_DURABLE_LIMIT,   /* max_subscriptions_per_user ([journal]) reached */
        WATCHD_E_PLACED_GONE,     /* a watch a worker placed went before it was linked (watch_table.h) */
        _WATCHD_E_MAX,
} WatchdError;

/* Whether r (negative, as returned) is one of the codes above rather than a -errno. */
static inline int error_is_watchd(int r) {
        return r <= -_WATCHD_E_FIRST && r > -_WATCHD_E_MAX;
}

/* A sentence fragment for logs ("max_watches_per_client reached"); NULL for a -errno. */
const char *error_to_string(int r);
