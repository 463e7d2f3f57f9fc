/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bus_caller - who calls, as the bus says, and what a failed call is told
 *
 * Credentials: dbus-daemon reports UnixUserID (the peer's effective uid at
 * connect time, SO_PEERCRED) and UnixGroupIDs (its primary and
 * supplementary groups, SO_PEERGROUPS). sd-bus gives the first as the EUID
 * credential; libsystemd 252 (Debian 12) does not parse the groups, so they
 * are asked of the bus driver itself (GetConnectionCredentials), once per
 * client (one synchronous call to the driver, at a connection's first
 * AddWatch: a connection's credentials never change). Nothing is taken from
 * /proc, and a caller the bus says too little about is refused. The primary
 * gid is not reported apart from the others, so fsgid is set to the first
 * group and every reported group is a supplementary group: the kernel's
 * check (fsgid or any supplementary group) then gives the caller exactly
 * its own access.
 *
 * Errors: the core returns -errno or -WATCHD_E_*; they become D-Bus errors
 * with a message a person understands here, in one table (bus_error_for()).
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "bus_caller.h"
#include "error.h"
#include "macro.h"
#include "path_escape.h"

static void creds_unrefp(sd_bus_creds **c) {
        sd_bus_creds_unref(*c);
}

/* UnixUserID and UnixGroupIDs of sender, from the bus driver (dbus-daemon, dbus-broker). */
static int caller_from_driver(sd_bus *bus, const char *sender, uid_t *ret_uid, gid_t **ret_gids, size_t *ret_n) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ gid_t *gids = NULL;
        bool have_uid = false, have_gids = false;
        size_t n = 0;
        uid_t uid = 0;
        int r;

        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetConnectionCredentials", NULL, &reply, "s", sender);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *key;

                r = sd_bus_message_read(reply, "s", &key);
                if (r < 0)
                        return r;
                if (strcmp(key, "UnixUserID") == 0) {
                        r = sd_bus_message_read(reply, "v", "u", &uid);
                        have_uid = r >= 0;
                } else if (strcmp(key, "UnixGroupIDs") == 0) {
                        const void *a;
                        size_t sz;

                        r = sd_bus_message_enter_container(reply, 'v', "au");
                        if (r >= 0)
                                r = sd_bus_message_read_array(reply, 'u', &a, &sz);
                        if (r >= 0) {
                                n = sz / sizeof(uint32_t);
                                gids = calloc(n + 1, sizeof(gid_t));
                                if (!gids)
                                        return -ENOMEM;
                                for (size_t i = 0; i < n; i++)
                                        gids[i] = ((const uint32_t *) a)[i];
                                have_gids = true;
                                r = sd_bus_message_exit_container(reply);
                        }
                } else
                        r = sd_bus_message_skip(reply, "v");
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if (!have_uid || !have_gids)
                return -EPERM;
        *ret_uid = uid;
        *ret_gids = TAKE_PTR(gids);
        *ret_n = n;
        return 0;
}

/*
 * The caller's credentials as the bus reported them: the uid from sd-bus's
 * sender credentials (never augmented from /proc), the groups from sd-bus
 * too when it has them (libsystemd >= 254), else from the bus driver's
 * GetConnectionCredentials, which libsystemd 252 does not parse for groups.
 * -EPERM if the bus did not say enough.
 */
int bus_caller_from_message(sd_bus *bus, sd_bus_message *msg, Caller *ret, gid_t **ret_gids, pid_t *ret_pid) {
        _cleanup_(creds_unrefp) sd_bus_creds *creds = NULL;
        _cleanup_free_ gid_t *gids = NULL;
        const gid_t *sd_gids = NULL;
        uint64_t have;
        uid_t uid, driver_uid;
        pid_t pid = 0;
        size_t n = 0;
        int r;

        /* The PID comes in the same answer of the bus driver (for ListClients). */
        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID | SD_BUS_CREDS_SUPPLEMENTARY_GIDS | SD_BUS_CREDS_PID,
                                      &creds);
        if (r < 0)
                return r;
        have = sd_bus_creds_get_mask(creds) & ~sd_bus_creds_get_augmented_mask(creds);
        if (!(have & SD_BUS_CREDS_EUID) || sd_bus_creds_get_euid(creds, &uid) < 0)
                return -EPERM;
        if (!(have & SD_BUS_CREDS_PID) || sd_bus_creds_get_pid(creds, &pid) < 0)
                pid = 0;

        if (have & SD_BUS_CREDS_SUPPLEMENTARY_GIDS) {
                r = sd_bus_creds_get_supplementary_gids(creds, &sd_gids);
                if (r < 0)
                        return -EPERM;
                n = (size_t) r;
                gids = calloc(n + 1, sizeof(gid_t));
                if (!gids)
                        return -ENOMEM;
                if (n > 0)
                        memcpy(gids, sd_gids, n * sizeof(gid_t));
        } else {
                r = caller_from_driver(bus, sd_bus_message_get_sender(msg), &driver_uid, &gids, &n);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || driver_uid != uid)
                        return -EPERM;
        }
        if (n == 0)
                return -EPERM; /* the bus reports the primary group too: none means it could not tell */

        *ret = (Caller) {
                .uid = uid,
                .gid = gids[0],
                .gids = gids,
                .n_gids = n,
        };
        *ret_gids = TAKE_PTR(gids);
        *ret_pid = pid;
        return 0;
}

/* The sender's uid as the bus reports it (never from /proc), or -EPERM. */
int bus_sender_uid(sd_bus_message *msg, uid_t *ret) {
        _cleanup_(creds_unrefp) sd_bus_creds *creds = NULL;
        uint64_t have;
        int r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
        if (r < 0)
                return r;
        have = sd_bus_creds_get_mask(creds) & ~sd_bus_creds_get_augmented_mask(creds);
        if (!(have & SD_BUS_CREDS_EUID) || sd_bus_creds_get_euid(creds, ret) < 0)
                return -EPERM;
        return 0;
}

/* One place turns the core's -errno into a D-Bus error a person understands. */
int bus_error_for(const Manager *m, int r, const char *what, sd_bus_error *error) {
        const AccountingLimits *limits = manager_get_limits(m);
        const Config *config = manager_get_config(m);
        const Backend *backend = manager_get_backend(m);

        switch (r) {
        case -ENOENT:
                return sd_bus_error_setf(error, SD_BUS_ERROR_FILE_NOT_FOUND, "No such file or directory: %s.", what);
        case -EACCES:
        case -EPERM:
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "Permission denied: you may not read %s.",
                                         what);
        case -ENOTDIR:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Not a directory (ONLYDIR), or a component of the path is not: %s.", what);
        case -ELOOP:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "A symbolic link (DONT_FOLLOW), or too many levels of them: %s.", what);
        case -EXDEV:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "%s goes through a link that the kernel resolves by privilege, not by path "
                                         "(/proc/PID/cwd, /proc/PID/root, /proc/PID/fd/N, /dev/fd/N...): watchd "
                                         "follows none for anyone. Open it yourself and pass the descriptor to "
                                         "AddWatchFd.",
                                         what);
        case -ENAMETOOLONG:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "A component of the path is too long.");
        case -ETIMEDOUT:
                return sd_bus_error_setf(error, SD_BUS_ERROR_TIMEOUT,
                                         "The file system of %s, or of a directory below it, did not answer within "
                                         "%" PRIu32 " ms (add_watch_timeout_ms in watchd.conf): nothing is "
                                         "subscribed. It may be hung (a stopped FUSE daemon, an NFS server gone); "
                                         "try again later.",
                                         what, config->add_watch_timeout_ms);
        case -WATCHD_E_PLACED_GONE:
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED,
                                         "The kernel watch of %s went (another subscription of it ended) while a "
                                         "worker placed it (on a file system that may stop answering watches are "
                                         "placed off the daemon's loop): nothing is subscribed; try again.",
                                         what);
        case -WATCHD_E_NOT_WATCHABLE:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Not a regular file or a directory (FIFOs, sockets, device nodes and "
                                         "anonymous inodes cannot be watched): %s.",
                                         what);
        case -WATCHD_E_NO_NAME:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The descriptor is not a file with a name on a mounted file system (a "
                                         "memfd, an anonymous inode, an O_TMPFILE file, or a file or directory "
                                         "deleted since it was opened): there is no path to report its events under.");
        case -WATCHD_E_FD_PATH:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The descriptor was opened with O_PATH: open it for reading.");
        case -WATCHD_E_FD_WRITE_ONLY:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "The descriptor is not open for reading.");
        case -WATCHD_E_CLIENT_WATCHES:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "This connection holds %" PRIu32 " watches, the most allowed "
                                         "(max_watches_per_client in watchd.conf; a RECURSIVE subscription "
                                         "counts each directory).",
                                         limits->max_watches_per_client);
        case -WATCHD_E_USER_WATCHES:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Your user holds %" PRIu32 " watches, the most allowed "
                                         "(max_watches_per_user in watchd.conf; a RECURSIVE subscription "
                                         "counts each directory).",
                                         limits->max_watches_per_user);
        case -WATCHD_E_UNPRIVILEGED_WATCHES:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "All users but root hold %" PRIu32 " watches together, the most allowed "
                                         "(max_watches_unprivileged in watchd.conf, by default sized from the "
                                         "kernel's limit in %s).",
                                         limits->max_watches_unprivileged, backend->limit_hint);
        case -WATCHD_E_USER_CLIENTS:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Your user has %" PRIu32 " connections with subscriptions, the most allowed "
                                         "(max_clients_per_user in watchd.conf).",
                                         limits->max_clients_per_user);
        case -ENOSPC:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "The kernel's limit on inotify watches (max_user_watches) is reached; "
                                         "an administrator can raise it in %s.",
                                         backend->limit_hint);
        case -WATCHD_E_USER_POLLED:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Your user has %" PRIu32 " directories on remote file systems polled, the "
                                         "most allowed (max_polled_dirs_per_user in watchd.conf); the flag NO_POLL "
                                         "watches %s with the kernel alone.",
                                         config->max_polled_dirs_per_user, what);
        case -WATCHD_E_IDS_USED_UP:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "The daemon has used up its subscription ids; restart it.");
        case -WATCHD_E_NO_SUCH_WATCH:
                return sd_bus_error_setf(error, WATCHD_ERROR_NO_SUCH_WATCH, "You have no subscription %s.", what);
        case -WATCHD_E_NO_STATE_DIR:
                return sd_bus_error_setf(error, WATCHD_ERROR_NOT_SUPPORTED,
                                         "This watchd keeps no durable subscriptions: it has no usable state "
                                         "directory (state_directory in watchd.conf, --state-dir).");
        case -WATCHD_E_DURABLE_EXISTS:
                return sd_bus_error_setf(error, WATCHD_ERROR_DURABLE_EXISTS,
                                         "You have a durable subscription %s already.", what);
        case -WATCHD_E_NO_SUCH_DURABLE:
                return sd_bus_error_setf(error, WATCHD_ERROR_NO_SUCH_DURABLE, "You have no durable subscription %s.",
                                         what);
        case -WATCHD_E_DURABLE_LIMIT:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "You have %" PRIu32 " durable subscriptions, the most allowed "
                                         "(max_subscriptions_per_user in [journal] of watchd.conf).",
                                         config->journal_max_subscriptions_per_user);
        default:
                if (error_is_watchd(r)) /* every one has its case above: a forgotten one still reads */
                        return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Failed to watch %s: %s.", what,
                                                 error_to_string(r));
                return sd_bus_error_set_errnof(error, -r, "Failed to watch %s: %m", what);
        }
}

int bus_check_mask_flags(uint32_t mask, uint32_t flags, sd_bus_error *error) {
        if (mask == 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The mask is empty: ask for at least one event (IN_* bits 0x1 to 0x400).");
        if (mask & ~WATCHD_MASK_VALID)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The mask has unknown bits 0x%" PRIx32
                                         " (the events are 0x1 to 0x400, 0x7ff in all).",
                                         mask & ~WATCHD_MASK_VALID);
        if (flags & ~WATCHD_FLAGS_VALID)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Unknown flags 0x%" PRIx32
                                         " (RECURSIVE 0x1, ONLYDIR 0x2, DONT_FOLLOW 0x4, ONESHOT 0x8, "
                                         "PERSIST 0x10, NO_POLL 0x40, PACKED 0x80).",
                                         flags & ~WATCHD_FLAGS_VALID);
        return 0;
}

/* The name errors give the object: "'path'" or "the descriptor". */
char *bus_what_of(const char *path) {
        char *what;

        if (!path)
                return strdup("the descriptor");
        if (asprintf(&what, "'%s'", path) < 0)
                return NULL;
        return what;
}

/* Bytes of s to quote in a message, at most max, not cutting a character in
 * two: s is UTF-8 (it came in a D-Bus string), a message must stay UTF-8
 * too or sd-bus cannot send it. */
int bus_quote_len(const char *s, size_t max) {
        size_t n = strlen(s);

        if (n > max)
                for (n = max; n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80; n--)
                        ;
        return (int) n;
}

/*
 * The path of an AddWatch as bytes: as sent, or unescaped with PATH_ESCAPED
 * (shared/path_escape.h), strictly. Error messages quote the path as sent.
 */
int bus_path_from_call(const char *sent, bool escaped, char **ret, sd_bus_error *error) {
        _cleanup_free_ char *path = NULL;
        const char *more = strlen(sent) > BUS_QUOTE_MAX ? "…" : "";
        int r;

        if (escaped) {
                r = path_unescape(sent, &path);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "The path '%.*s%s' is not in the escaped form PATH_ESCAPED says "
                                                 "it is: a backslash must begin \\\\ or \\xHH (HH not 00).",
                                                 bus_quote_len(sent, BUS_QUOTE_MAX), sent, more);
        } else {
                path = strdup(sent);
                if (!path)
                        return -ENOMEM;
        }
        if (path[0] != '/')
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "The path '%.*s%s' is not absolute.",
                                         bus_quote_len(sent, BUS_QUOTE_MAX), sent, more);
        if (strlen(path) >= PATH_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The path is %zu bytes long, the most is %u.", strlen(path), PATH_MAX - 1);
        *ret = TAKE_PTR(path);
        return 0;
}
