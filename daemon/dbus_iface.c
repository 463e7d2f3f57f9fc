/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dbus_iface - org.example.Inotify on the bus
 *
 * The path of an AddWatch call: method_add_watch() reads (path, mask,
 * flags), validates them (the rules of watchd(8), "D-BUS INTERFACE"), takes the caller's
 * uid and groups from the bus (sd_bus_query_sender_creds; never augmented
 * from /proc, and refused if the bus did not say), finds or makes the
 * caller's Client (and tracks its name), and calls manager_add_watch_path(),
 * which opens the path as the caller and hands the fd to the watch table,
 * which asks the backend for a kernel watch. Errors come back as -errno and
 * become D-Bus errors with a message here, in one table (error_for()).
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
 * Signals go to their client only (destination set), except Events with
 * delivery=broadcast, which watchd refuses on the system bus.
 *
 * Flow control and batching: each client is sent at most
 * max_pending_events_per_client records it has not confirmed reading, and
 * confirms by answering the org.freedesktop.DBus.Peer.Ping sent after them
 * (one in flight at a time). While that Ping is in flight, records for the
 * client are held in its queue and go out as one signal when it answers
 * (or as soon as batch_max_events of them, or a notice, are queued): the
 * batch follows the client's own pace, with no timer of ours, and a record
 * after a quiet moment finds no Ping in flight and goes at once.
 */

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "dbus_iface.h"
#include "durable.h"
#include "durable_store.h"
#include "error.h"
#include "event_bits.h"
#include "log.h"
#include "macro.h"
#include "events_batch.h"
#include "path_escape.h"
#include "stream_frame.h"
#include "stream_loop.h"
#include "tree.h"

struct DbusIface {
        Manager *manager;
        sd_bus *bus;
        sd_event *event;
        sd_bus_slot *vtable_slot;
        bool stalled;                   /* the bus was congested at the last look */
        GHashTable *pings;              /* uid -> Peer.Pings in flight to its clients (see bus_ask_confirm()) */
        unsigned n_streams;             /* clients reading a stream (OpenStream) */
        Durable *durable;               /* durable subscriptions (durable.h) */
};

static void creds_unrefp(sd_bus_creds **c) {
        sd_bus_creds_unref(*c);
}

static void message_unrefp(sd_bus_message **m) {
        sd_bus_message_unref(*m);
}

/* UnixUserID and UnixGroupIDs of sender, from the bus driver (dbus-daemon, dbus-broker). */
static int caller_from_driver(DbusIface *d, const char *sender, uid_t *ret_uid, gid_t **ret_gids, size_t *ret_n) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ gid_t *gids = NULL;
        bool have_uid = false, have_gids = false;
        size_t n = 0;
        uid_t uid = 0;
        int r;

        r = sd_bus_call_method(d->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
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
static int caller_from_message(DbusIface *d, sd_bus_message *msg, Caller *ret, gid_t **ret_gids) {
        _cleanup_(creds_unrefp) sd_bus_creds *creds = NULL;
        _cleanup_free_ gid_t *gids = NULL;
        const gid_t *sd_gids = NULL;
        uint64_t have;
        uid_t uid, driver_uid;
        size_t n = 0;
        int r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID | SD_BUS_CREDS_SUPPLEMENTARY_GIDS, &creds);
        if (r < 0)
                return r;
        have = sd_bus_creds_get_mask(creds) & ~sd_bus_creds_get_augmented_mask(creds);
        if (!(have & SD_BUS_CREDS_EUID) || sd_bus_creds_get_euid(creds, &uid) < 0)
                return -EPERM;

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
                r = caller_from_driver(d, sd_bus_message_get_sender(msg), &driver_uid, &gids, &n);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || driver_uid != uid)
                        return -EPERM;
        }
        if (n == 0)
                return -EPERM;  /* the bus reports the primary group too: none means it could not tell */

        *ret = (Caller) {
                .uid = uid,
                .gid = gids[0],
                .gids = gids,
                .n_gids = n,
        };
        *ret_gids = TAKE_PTR(gids);
        return 0;
}

/* One place turns the core's -errno into a D-Bus error a person understands. */
static int error_for(DbusIface *d, int r, const char *what, sd_bus_error *error) {
        Manager *m = d->manager;
        const AccountingLimits *limits = accounting_get_limits(m->accounting);

        switch (r) {
        case -ENOENT:
                return sd_bus_error_setf(error, SD_BUS_ERROR_FILE_NOT_FOUND, "No such file or directory: %s.", what);
        case -EACCES:
        case -EPERM:
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Permission denied: you may not read %s.", what);
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
                                         "AddWatchFd.", what);
        case -ENAMETOOLONG:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "A component of the path is too long.");
        case -WATCHD_E_NOT_WATCHABLE:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Not a regular file or a directory (FIFOs, sockets, device nodes and "
                                         "anonymous inodes cannot be watched): %s.", what);
        case -WATCHD_E_NO_NAME:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The descriptor is not a file with a name on a mounted file system (a "
                                         "memfd, an anonymous inode, an O_TMPFILE file, or a file or directory "
                                         "deleted since it was opened): there is no path to report its events under.");
        case -WATCHD_E_FD_PATH:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The descriptor was opened with O_PATH: open it for reading.");
        case -WATCHD_E_FD_WRITE_ONLY:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The descriptor is not open for reading.");
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
                                         limits->max_watches_unprivileged, m->backend->limit_hint);
        case -WATCHD_E_USER_CLIENTS:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Your user has %" PRIu32 " connections with subscriptions, the most allowed "
                                         "(max_clients_per_user in watchd.conf).",
                                         limits->max_clients_per_user);
        case -ENOSPC:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "The kernel's limit on inotify watches (max_user_watches) is reached; "
                                         "an administrator can raise it in %s.", m->backend->limit_hint);
        case -WATCHD_E_USER_POLLED:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Your user has %" PRIu32 " directories on remote file systems polled, the "
                                         "most allowed (max_polled_dirs_per_user in watchd.conf); the flag NO_POLL "
                                         "watches %s with the kernel alone.",
                                         m->config.max_polled_dirs_per_user, what);
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
                return sd_bus_error_setf(error, WATCHD_ERROR_NO_SUCH_DURABLE,
                                         "You have no durable subscription %s.", what);
        case -WATCHD_E_DURABLE_LIMIT:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "You have %" PRIu32 " durable subscriptions, the most allowed "
                                         "(max_subscriptions_per_user in [journal] of watchd.conf).",
                                         m->config.journal_max_subscriptions_per_user);
        default:
                if (error_is_watchd(r))         /* every one has its case above: a forgotten one still reads */
                        return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Failed to watch %s: %s.", what,
                                                 error_to_string(r));
                return sd_bus_error_set_errnof(error, -r, "Failed to watch %s: %m", what);
        }
}

static int validate(uint32_t mask, uint32_t flags, sd_bus_error *error) {
        if (mask == 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The mask is empty: ask for at least one event (IN_* bits 0x1 to 0x400).");
        if (mask & ~WATCHD_MASK_VALID)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The mask has unknown bits 0x%" PRIx32 " (the events are 0x1 to 0x400, 0x7ff in all).",
                                         mask & ~WATCHD_MASK_VALID);
        if (flags & ~WATCHD_FLAGS_VALID)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Unknown flags 0x%" PRIx32 " (RECURSIVE 0x1, ONLYDIR 0x2, DONT_FOLLOW 0x4, ONESHOT 0x8, "
                                         "PERSIST 0x10, NO_POLL 0x40).",
                                         flags & ~WATCHD_FLAGS_VALID);
        return 0;
}

/* A client on the bus: its connection's tracking and its outstanding Ping;
 * the transport data of its delivery queue. */
typedef struct BusClient {
        DbusIface *iface;
        Client *client;
        sd_bus_track *track;            /* ends the client when its connection goes */
        sd_bus_slot *ping;              /* the outstanding Peer.Ping, or NULL */
        /* After an answer that confirmed nothing (the bus's error), or while
         * its uid has PINGS_PER_USER_MAX in flight, the next Ping waits on this
         * timer, ping_retry_usec, doubling each time. */
        sd_event_source *ping_retry;
        uint64_t ping_retry_usec;
        bool ping_refusal_logged;       /* the bus's refusal is logged once per client */
        /* Its record stream (OpenStream), or NULL: its records go as signals.
         * The queue's transport data stays this BusClient either way. */
        StreamLoop *stream;

        /* The DurableEvents signal being built for it (durable.h's pump). */
        sd_bus_message *durable_msg;
        char *durable_name;
        size_t durable_n, durable_size;
} BusClient;

static void ping_end(BusClient *bc);

static const DeliveryOps bus_delivery_ops;

static BusClient *bus_client_free(BusClient *bc) {
        if (!bc)
                return NULL;
        /* Its Ping was ended while its client was there (ping_end()). */
        sd_bus_slot_unref(bc->ping);
        sd_event_source_disable_unref(bc->ping_retry);
        sd_bus_track_unref(bc->track);
        if (bc->stream) {
                stream_loop_free(bc->stream);
                bc->iface->n_streams--;
        }
        sd_bus_message_unref(bc->durable_msg);
        free(bc->durable_name);
        free(bc);
        return NULL;
}

static void client_end(DbusIface *d, Client *c) {
        BusClient *bc = c->queue.data;

        ping_end(bc);                           /* its Ping, if any, is no longer ours to count */
        if (d->durable)
                durable_client_gone(d->durable, c);
        manager_client_gone(d->manager, c);     /* frees c */
        bus_client_free(bc);
}

static int on_client_gone(sd_bus_track *track, void *userdata) {
        BusClient *bc = userdata;

        client_end(bc->iface, bc->client);
        return 0;
}

/* The caller's Client. A new one gets the caller's credentials from the bus
 * (a connection's credentials never change, so once is enough) and is
 * tracked so that it ends when its connection does. */
static int client_for_call(DbusIface *d, sd_bus_message *msg, Client **ret, sd_bus_error *error) {
        _cleanup_free_ gid_t *gids = NULL;
        const char *sender = sd_bus_message_get_sender(msg);
        BusClient *bc;
        Caller caller;
        Client *c;
        int r;

        c = manager_get_client(d->manager, sender);
        if (c) {
                *ret = c;
                return 0;
        }

        r = caller_from_message(d, msg, &caller, &gids);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "The bus did not tell who you are (uid and groups), so nothing is opened for you.");

        bc = calloc(1, sizeof(BusClient));
        if (!bc)
                return -ENOMEM;
        r = manager_new_client(d->manager, sender, &caller, &c);
        if (r < 0) {
                free(bc);
                return error_for(d, r, "the path", error);
        }
        *bc = (BusClient) {
                .iface = d,
                .client = c,
        };
        delivery_queue_set_transport(&c->queue, &bus_delivery_ops, bc);
        r = sd_bus_track_new(d->bus, &bc->track, on_client_gone, bc);
        if (r >= 0)
                r = sd_bus_track_add_sender(bc->track, msg);
        if (r < 0) {
                client_end(d, c);
                return r;
        }
        *ret = c;
        return 0;
}

/* The name errors give the object: "'path'" or "the descriptor". */
static char *what_of(const char *path) {
        char *what;

        if (!path)
                return strdup("the descriptor");
        if (asprintf(&what, "'%s'", path) < 0)
                return NULL;
        return what;
}

/* A RECURSIVE AddWatch whose walk goes on from the loop: answered when it ends. */
typedef struct PendingAdd {
        DbusIface *iface;
        sd_bus_message *msg;
} PendingAdd;

static void add_watch_done(uint32_t id, int r, void *userdata) {
        _cleanup_free_ PendingAdd *p = userdata;
        _cleanup_(message_unrefp) sd_bus_message *msg = p->msg;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        const char *path = NULL;

        if (r == -ECANCELED)
                r = sd_bus_reply_method_errorf(msg, SD_BUS_ERROR_FAILED, "The daemon is exiting.");
        else if (r < 0) {
                if (strcmp(sd_bus_message_get_signature(msg, true), "suu") == 0) {
                        (void) sd_bus_message_rewind(msg, true);
                        (void) sd_bus_message_read(msg, "s", &path);
                }
                what = what_of(path);
                (void) error_for(p->iface, r, what ?: "the path", &error);
                r = sd_bus_reply_method_error(msg, &error);
        } else
                r = sd_bus_reply_method_return(msg, "u", id);
        if (r < 0)
                log_debug_errno(r, "Failed to answer AddWatch of subscription %" PRIu32 ", ignoring: %m", id);
}

/* Bytes of s to quote in a message, at most max, not cutting a character in
 * two: s is UTF-8 (it came in a D-Bus string), a message must stay UTF-8
 * too or sd-bus cannot send it. */
static int quote_len(const char *s, size_t max) {
        size_t n = strlen(s);

        if (n > max)
                for (n = max; n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80; n--)
                        ;
        return (int) n;
}

#define QUOTE_MAX 200

/*
 * The path of an AddWatch as bytes: as sent, or unescaped with PATH_ESCAPED
 * (shared/path_escape.h), strictly. Error messages quote the path as sent.
 */
static int path_from_call(const char *sent, bool escaped, char **ret, sd_bus_error *error) {
        _cleanup_free_ char *path = NULL;
        const char *more = strlen(sent) > QUOTE_MAX ? "…" : "";
        int r;

        if (escaped) {
                r = path_unescape(sent, &path);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "The path '%.*s%s' is not in the escaped form PATH_ESCAPED says "
                                                 "it is: a backslash must begin \\\\ or \\xHH (HH not 00).",
                                                 quote_len(sent, QUOTE_MAX), sent, more);
        } else {
                path = strdup(sent);
                if (!path)
                        return -ENOMEM;
        }
        if (path[0] != '/')
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "The path '%.*s%s' is not absolute.",
                                         quote_len(sent, QUOTE_MAX), sent, more);
        if (strlen(path) >= PATH_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The path is %zu bytes long, the most is %u.", strlen(path), PATH_MAX - 1);
        *ret = TAKE_PTR(path);
        return 0;
}

static int method_add_watch_common(sd_bus_message *msg, DbusIface *d, bool by_fd, sd_bus_error *error) {
        Manager *m = d->manager;
        _cleanup_free_ char *path = NULL;
        const char *sent = NULL;
        uint32_t mask, flags, id;
        TreeWalk *walk = NULL;
        Client *c = NULL;
        bool escaped;
        int fd = -1, r;

        if (by_fd)
                r = sd_bus_message_read(msg, "huu", &fd, &mask, &flags);
        else
                r = sd_bus_message_read(msg, "suu", &sent, &mask, &flags);
        if (r == -EBADMSG && !by_fd)
                /* UTF-8 to the bus and GLib, but sd-bus refuses noncharacters. */
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The path is not a string watchd can read (a noncharacter such as "
                                         "U+FFFE?): send it escaped, with PATH_ESCAPED (0x%x).",
                                         WATCHD_FLAG_PATH_ESCAPED);
        if (r < 0)
                return r;

        /* How the path is written, not a property of the subscription. */
        escaped = flags & WATCHD_FLAG_PATH_ESCAPED;
        if (escaped && by_fd)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "PATH_ESCAPED (0x%x) is a flag of AddWatch: a descriptor has no path to escape.",
                                         WATCHD_FLAG_PATH_ESCAPED);
        flags &= ~WATCHD_FLAG_PATH_ESCAPED;
        r = validate(mask, flags, error);
        if (r < 0)
                return r;
        if (by_fd && (flags & WATCHD_FLAG_PERSIST))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "PERSIST (0x%x) follows a path: AddWatch takes one, a descriptor names an object.",
                                         WATCHD_FLAG_PERSIST);
        if (sent) {
                r = path_from_call(sent, escaped, &path, error);
                if (r < 0)
                        return r;
        }

        r = client_for_call(d, msg, &c, error);
        if (r < 0)
                return r;

        if (by_fd)
                r = manager_add_watch_fd(m, c, fd, mask, flags, &id, &walk);
        else
                r = manager_add_watch_path(m, c, path, mask, flags, &id, &walk);
        if (r < 0) {
                _cleanup_free_ char *what = what_of(sent);

                return error_for(d, r, what ?: "the path", error);
        }

        log_debug("%s: subscription %" PRIu32 " on %s%s, mask 0x%" PRIx32 ", flags 0x%" PRIx32 "%s.",
                  c->name, id, by_fd ? "fd " : "", by_fd ? "" : sent, mask, flags,
                  walk ? ", its tree walked from the loop" : "");
        if (walk) {
                /* A big tree: answered when its walk ends (add_watch_done), its
                 * events already flowing for the part watched so far. */
                PendingAdd *p = malloc(sizeof(PendingAdd));

                if (!p)
                        return -ENOMEM;         /* the walk goes on; its subscription stays, unanswered: rare enough */
                *p = (PendingAdd) { d, sd_bus_message_ref(msg) };
                tree_walk_set_done(walk, add_watch_done, p);
                return 1;
        }
        return sd_bus_reply_method_return(msg, "u", id);
}

static int method_add_watch(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_add_watch_common(msg, userdata, false, error);
}

static int method_add_watch_fd(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_add_watch_common(msg, userdata, true, error);
}

static int method_remove_watch(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        DbusIface *d = userdata;
        char what[16];
        uint32_t id;
        Client *c;
        int r;

        r = sd_bus_message_read(msg, "u", &id);
        if (r < 0)
                return r;

        snprintf(what, sizeof(what), "%" PRIu32, id);
        c = manager_get_client(d->manager, sd_bus_message_get_sender(msg));
        if (!c)
                return error_for(d, -WATCHD_E_NO_SUCH_WATCH, what, error);
        r = manager_remove_watch(d->manager, c, id);
        if (r < 0)
                return error_for(d, r, what, error);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_list_watches(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        DbusIface *d = userdata;
        Client *c;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(usuu)");
        if (r < 0)
                return r;
        c = manager_get_client(d->manager, sd_bus_message_get_sender(msg));
        if (c)
                LIST_FOREACH(owner, s, c->subscriptions) {
                        /* A path that is not UTF-8 (AddWatchFd, a rename) goes escaped, flagged. */
                        _cleanup_free_ char *esc = path_needs_escape(s->path) ? path_escape(s->path) : NULL;

                        if (!esc && path_needs_escape(s->path))
                                return -ENOMEM;
                        r = sd_bus_message_append(reply, "(usuu)", s->id, esc ?: s->path, s->mask,
                                                  s->flags | (esc ? WATCHD_FLAG_PATH_ESCAPED : 0) |
                                                  (s->fanotify ? WATCHD_FLAG_FANOTIFY : 0) |
                                                  manager_subscription_remote_flags(d->manager, s));
                        if (r < 0)
                                return r;
                }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* The sender's uid as the bus reports it (never from /proc), or -EPERM. */
static int sender_uid(sd_bus_message *msg, uid_t *ret) {
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

static int append_stat(sd_bus_message *reply, const char *key, char type, const void *value) {
        const char sig[2] = { type, 0 };
        int r;

        r = sd_bus_message_open_container(reply, 'e', "sv");
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", key);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'v', sig);
        if (r >= 0)
                r = sd_bus_message_append_basic(reply, type, value);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static int append_u(sd_bus_message *reply, const char *key, uint32_t value) {
        return append_stat(reply, key, 'u', &value);
}

static int append_t(sd_bus_message *reply, const char *key, uint64_t value) {
        return append_stat(reply, key, 't', &value);
}

/*
 * GetStats answers every caller with the daemon's size (the totals: backend,
 * clients, users, subscriptions, kernel_watches) and its own uid's share
 * (own_*, summed over that uid's connections that hold subscriptions now).
 * The counts of events (events_read, events_delivered, overflows, ...) are
 * the activity of every user's files: only root, and the daemon's own uid,
 * see them. Every key is in watchd(8).
 */
static int method_get_stats(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        DbusIface *d = userdata;
        Manager *m = d->manager;
        uint32_t own_clients = 0, own_subscriptions = 0, own_watches = 0;
        uint64_t own_delivered = 0, own_pending = 0, own_dropped = 0, own_overflows = 0, queued = 0;
        ManagerStats st;
        bool known, all;
        GHashTableIter i;
        gpointer v;
        uid_t uid;
        int r;

        manager_get_stats(m, &st);
        known = sender_uid(msg, &uid) >= 0;
        all = known && (uid == 0 || uid == geteuid());
        if (known) {
                g_hash_table_iter_init(&i, m->clients);
                while (g_hash_table_iter_next(&i, NULL, &v)) {
                        Client *c = v;

                        if (c->account.uid != uid)
                                continue;
                        own_clients++;
                        own_subscriptions += c->n_subscriptions;
                        own_watches += c->account.n_watches;
                        own_delivered += c->queue.sent;
                        own_pending += delivery_queue_size(&c->queue);
                        own_dropped += c->queue.n_dropped;
                        own_overflows += c->queue.n_overflows;
                }
        }

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{sv}");
        if (r >= 0)
                r = append_stat(reply, "backend", 's', backend_name(m->backend));
        if (r >= 0)
                r = append_u(reply, "clients", st.clients);
        if (r >= 0)
                r = append_u(reply, "users", st.users);
        if (r >= 0)
                r = append_u(reply, "subscriptions", st.subscriptions);
        if (r >= 0)
                r = append_u(reply, "kernel_watches", st.kernel_watches);
        if (r >= 0)
                r = append_u(reply, "streams", d->n_streams);
        if (r >= 0)
                r = append_u(reply, "polled_directories", st.polled_dirs);
        if (r >= 0)
                r = append_u(reply, "fanotify_marks", st.fanotify.marks);
        if (r >= 0)
                r = append_u(reply, "fanotify_subscriptions", st.fanotify.subscriptions);
        if (r >= 0 && known) {
                r = append_u(reply, "own_clients", own_clients);
                if (r >= 0)
                        r = append_u(reply, "own_subscriptions", own_subscriptions);
                if (r >= 0)
                        r = append_u(reply, "own_watches", own_watches);
                if (r >= 0)
                        r = append_t(reply, "own_events_delivered", own_delivered);
                if (r >= 0)
                        r = append_t(reply, "own_pending_events", own_pending);
                if (r >= 0)
                        r = append_t(reply, "own_events_dropped", own_dropped);
                if (r >= 0)
                        r = append_t(reply, "own_overflows", own_overflows);
        }
        if (r >= 0 && all) {
                (void) sd_bus_get_n_queued_write(d->bus, &queued);
                r = append_t(reply, "events_read", st.events_read);
                if (r >= 0)
                        r = append_t(reply, "events_delivered", st.events_delivered);
                if (r >= 0)
                        r = append_t(reply, "signals_sent", st.signals_sent);
                if (r >= 0)
                        r = append_t(reply, "pending_events", st.pending_events);
                if (r >= 0)
                        r = append_t(reply, "events_dropped", st.events_dropped);
                if (r >= 0)
                        r = append_t(reply, "overflows", st.overflows);
                if (r >= 0)
                        r = append_t(reply, "kernel_overflows", st.kernel_overflows);
                if (r >= 0)
                        r = append_t(reply, "poll_syscalls", st.poll_syscalls);
                if (r >= 0)
                        r = append_t(reply, "fanotify_events_read", st.fanotify.events_read);
                if (r >= 0)
                        r = append_t(reply, "fanotify_own_events", st.fanotify.own_events);
                if (r >= 0)
                        r = append_t(reply, "fanotify_overflows", st.fanotify.overflows);
                if (r >= 0)
                        r = append_t(reply, "fanotify_lookups", st.fanotify.lookups);
                if (r >= 0)
                        r = append_t(reply, "bus_queued_messages", queued);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/*
 * The record stream (watchd(8), STREAM; the format is watchd-stream(5)).
 *
 * OpenStream hands the caller one end of a socket pair; from the reply on,
 * the caller's records go there and no longer as signals. Its queue keeps
 * this BusClient as its transport's data, and bus_stream_ops forwards to
 * the Stream (stream.h), so that ending the client finds its BusClient
 * whichever way its records go. The stream is the connection's: it ends
 * with it (client_end()), and when the client closes it its records go as
 * signals again, after an Overflow naming all its subscriptions if records
 * went to the stream (what it did not read of them is lost).
 */
static int stream_send_events(DeliveryQueue *q, Record **recs, size_t n, void *data) {
        BusClient *bc = data;

        return stream_delivery_ops.send_events(q, recs, n, stream_loop_get(bc->stream));
}

static int stream_send_notice(DeliveryQueue *q, const Record *rec, const uint32_t *ids, size_t n_ids, void *data) {
        BusClient *bc = data;

        return stream_delivery_ops.send_notice(q, rec, ids, n_ids, stream_loop_get(bc->stream));
}

static bool stream_congested(void *data) {
        BusClient *bc = data;

        return stream_delivery_ops.congested(stream_loop_get(bc->stream));
}

static const DeliveryOps bus_stream_ops = {
        .send_events = stream_send_events,
        .send_notice = stream_send_notice,
        .congested = stream_congested,
        .wakes_itself = true,
};

/* bc's stream is gone (its client closed it, or a new one replaces it): back to signals. */
static void stream_end(BusClient *bc) {
        Client *c = bc->client;
        bool carried = stream_carried_records(stream_loop_get(bc->stream));

        bc->stream = stream_loop_free(bc->stream);
        bc->iface->n_streams--;
        delivery_queue_set_transport(&c->queue, &bus_delivery_ops, bc);
        if (carried)
                manager_client_lost_all(bc->iface->manager, c);
        log_debug("Client %s closed its stream: its records go as signals again%s.", c->name,
                  carried ? ", after an Overflow" : "");
}

static void on_stream_ended(void *userdata) {
        stream_end(userdata);
}

/* OpenStream's options: "version" (u), the newest version of watchd-stream(5) the caller reads. */
static int stream_options(sd_bus_message *msg, uint32_t *ret_version, sd_bus_error *error) {
        uint32_t version = 1;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                const char *key;

                r = sd_bus_message_read(msg, "s", &key);
                if (r < 0)
                        return r;
                if (strcmp(key, "version") != 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "OpenStream has no option '%.*s%s'; it knows \"version\".",
                                                 quote_len(key, QUOTE_MAX), key, strlen(key) > QUOTE_MAX ? "…" : "");
                r = sd_bus_message_enter_container(msg, 'v', "u");
                if (r == -ENXIO)
                        return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                                "The option \"version\" is a number (u).");
                if (r >= 0)
                        r = sd_bus_message_read(msg, "u", &version);
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
                if (r < 0)
                        return r;
                if (version == 0)
                        return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                                "The option \"version\" is the newest version of the stream you "
                                                "read, 1 or more.");
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        *ret_version = version;
        return 0;
}

static int method_open_stream(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_close_ int peer = -EBADF;
        DbusIface *d = userdata;
        uint32_t version = 1;
        BusClient *bc;
        Client *c;
        int r;

        r = stream_options(msg, &version, error);
        if (r < 0)
                return r;
        if (!sd_bus_can_send(d->bus, SD_BUS_TYPE_UNIX_FD))
                return sd_bus_error_set(error, SD_BUS_ERROR_NOT_SUPPORTED,
                                        "This bus does not pass file descriptors: no stream, records go as signals.");
        r = client_for_call(d, msg, &c, error);
        if (r < 0)
                return r;
        bc = c->queue.data;
        if (bc->stream) {
                /* One a connection; one the client closed may not have been seen yet. */
                if (stream_loop_alive(bc->stream))
                        return sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                                "This connection has a stream open already (one a connection); "
                                                "close it, and its records go as signals until you open another.");
                stream_end(bc);
        }

        r = stream_loop_new(d->event, &c->queue, (uint16_t) MIN(version, STREAM_FRAME_VERSION), on_stream_ended, bc,
                            &bc->stream, &peer);
        if (r == -EMFILE || r == -ENFILE)
                return sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                        "watchd has no file descriptor left for a stream; records go as signals.");
        if (r < 0)
                return r;
        d->n_streams++;
        /* A Ping in flight asks about signals no longer sent. */
        ping_end(bc);
        bc->ping_retry = sd_event_source_disable_unref(bc->ping_retry);
        bc->ping_retry_usec = 0;
        delivery_queue_set_transport(&c->queue, &bus_stream_ops, bc);
        log_debug("Client %s reads its records from a stream (version %u) from now on.", c->name,
                  MIN(version, STREAM_FRAME_VERSION));
        /* sd-bus sends a copy of peer: ours is closed on return. */
        return sd_bus_reply_method_return(msg, "h", peer);
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", WATCHD_VERSION);
}

static int property_get_backend(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        DbusIface *d = userdata;
        return sd_bus_message_append(reply, "s", backend_name(d->manager->backend));
}

/* What this daemon offers beyond the first API, a word each (the XML and
 * watchd(8) list them; tests/dbus/test-glib-semantics.c checks that the three
 * agree). libwatchd reads it when the daemon takes the name. */
static int property_get_capabilities(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        static const char *const words[] = {
                WATCHD_CAP_REPORT_APPEARANCE,
                WATCHD_CAP_PERSISTENT,
                WATCHD_CAP_PAIR_PER_SUBSCRIPTION,
                WATCHD_CAP_STREAM,
        };
        DbusIface *d = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "s");
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(words); i++)
                r = sd_bus_message_append(reply, "s", words[i]);
        /* Follows [poll], hence not CONST: a reload may change it. */
        if (r >= 0 && config_polls_remote(&d->manager->config))
                r = sd_bus_message_append(reply, "s", WATCHD_CAP_REMOTE_POLLING);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

/* ---------------------------------------------------------------------- */
/* Durable subscriptions (durable.h; watchd(8), DURABLE SUBSCRIPTIONS) */

/* A quoted name for error messages: "'NAME'" (names are plain ASCII, checked first). */
static char *what_name(const char *name) {
        char *w;

        if (asprintf(&w, "'%.*s'", quote_len(name, QUOTE_MAX), name) < 0)
                return NULL;
        return w;
}

static int check_durable_name(const char *name, bool allow_uid, sd_bus_error *error) {
        const char *slash = allow_uid ? strchr(name, '/') : NULL;

        if (durable_name_valid(slash ? slash + 1 : name))
                return 0;
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                 "'%.*s' is not a durable subscription name: 1 to %u of A-Z a-z 0-9 _ . -, "
                                 "not starting with '.'.", quote_len(name, QUOTE_MAX), name, DURABLE_NAME_MAX);
}

typedef struct PendingCreate {
        DbusIface *iface;
        sd_bus_message *msg;
} PendingCreate;

static void create_durable_done(int r, const char *journal, uint64_t cursor, void *userdata) {
        _cleanup_free_ PendingCreate *p = userdata;
        _cleanup_(message_unrefp) sd_bus_message *msg = p->msg;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *path = NULL;

        if (r == -ECANCELED)
                r = sd_bus_reply_method_errorf(msg, SD_BUS_ERROR_FAILED,
                                               "The daemon is exiting, or the subscription was removed meanwhile.");
        else if (r < 0) {
                _cleanup_free_ char *what = NULL;

                (void) sd_bus_message_rewind(msg, true);
                (void) sd_bus_message_skip(msg, "s");
                (void) sd_bus_message_read(msg, "s", &path);
                what = what_of(path);
                (void) error_for(p->iface, r, what ?: "the path", &error);
                r = sd_bus_reply_method_error(msg, &error);
        } else
                r = sd_bus_reply_method_return(msg, "st", journal, cursor);
        if (r < 0)
                log_debug_errno(r, "Failed to answer CreateDurable, ignoring: %m");
}

static int method_create_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        DbusIface *d = userdata;
        _cleanup_free_ char *path = NULL;
        char journal[JOURNAL_ID_STRING_MAX];
        const char *name, *sent;
        uint32_t mask, flags;
        uint64_t cursor;
        PendingCreate *p;
        Client *c;
        int r;

        r = sd_bus_message_read(msg, "ssuu", &name, &sent, &mask, &flags);
        if (r == -EBADMSG)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The path is not a string watchd can read: send it escaped, with "
                                         "PATH_ESCAPED (0x%x).", WATCHD_FLAG_PATH_ESCAPED);
        if (r < 0)
                return r;
        r = check_durable_name(name, false, error);
        if (r < 0)
                return r;
        if (flags & WATCHD_FLAG_ONESHOT)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "ONESHOT (0x%x) makes no sense for a durable subscription.", WATCHD_FLAG_ONESHOT);
        r = validate(mask, flags & ~WATCHD_FLAG_PATH_ESCAPED, error);
        if (r < 0)
                return r;
        r = path_from_call(sent, flags & WATCHD_FLAG_PATH_ESCAPED, &path, error);
        if (r < 0)
                return r;
        flags &= ~WATCHD_FLAG_PATH_ESCAPED;

        r = client_for_call(d, msg, &c, error);
        if (r < 0)
                return r;
        p = malloc(sizeof(PendingCreate));
        if (!p)
                return -ENOMEM;
        *p = (PendingCreate) { d, msg };
        r = durable_create(d->durable, &c->caller, name, path, mask, flags, create_durable_done, p, journal, &cursor);
        if (r < 0) {
                _cleanup_free_ char *what = what_of(sent);

                free(p);
                if (r == -WATCHD_E_DURABLE_EXISTS) {
                        free(what);
                        what = what_name(name);
                }
                return error_for(d, r, what ?: "the path", error);
        }
        if (r > 0) {
                /* A big tree: answered when its walk ends. */
                sd_bus_message_ref(msg);
                return 1;
        }
        free(p);
        return sd_bus_reply_method_return(msg, "st", journal, cursor);
}

static int method_remove_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        DbusIface *d = userdata;
        _cleanup_free_ char *what = NULL;
        const char *name;
        uid_t uid;
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        r = sender_uid(msg, &uid);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "The bus did not tell who you are.");
        r = check_durable_name(name, uid == 0, error);
        if (r < 0)
                return r;
        r = durable_remove(d->durable, uid, name);
        if (r < 0) {
                what = what_name(name);
                return error_for(d, r, what ?: "the name", error);
        }
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_resume_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        DbusIface *d = userdata;
        _cleanup_free_ char *what = NULL;
        char current[JOURNAL_ID_STRING_MAX];
        const char *name, *journal;
        uint64_t cursor;
        Client *c;
        int r;

        r = sd_bus_message_read(msg, "sst", &name, &journal, &cursor);
        if (r < 0)
                return r;
        r = check_durable_name(name, false, error);
        if (r < 0)
                return r;
        if (journal[0] != '\0' && strlen(journal) != 2 * sizeof(JournalId))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "'%.*s' is not a journal identity (32 hexadecimal digits, or \"\" for none).",
                                         quote_len(journal, QUOTE_MAX), journal);
        r = client_for_call(d, msg, &c, error);
        if (r < 0)
                return r;
        r = durable_resume(d->durable, c, name, journal, cursor, current);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "'%s' is not a journal identity (32 lowercase hexadecimal digits).", journal);
        if (r < 0) {
                what = what_name(name);
                return error_for(d, r, what ?: "the name", error);
        }
        log_debug("%s resumes durable subscription %s after %" PRIu64 ".", c->name, name, cursor);
        return sd_bus_reply_method_return(msg, "s", current);
}

static int list_one(const DurableInfo *i, void *userdata) {
        sd_bus_message *reply = userdata;
        _cleanup_free_ char *esc = path_needs_escape(i->path) ? path_escape(i->path) : NULL;

        if (!esc && path_needs_escape(i->path))
                return -ENOMEM;
        return sd_bus_message_append(reply, "(ssuustttbs)", i->name, esc ?: i->path, i->mask,
                                     i->flags | (esc ? WATCHD_FLAG_PATH_ESCAPED : 0), i->journal,
                                     i->oldest_cursor, i->last_id, i->bytes, i->attached, i->state);
}

static int method_list_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        DbusIface *d = userdata;
        uid_t uid;
        int r;

        r = sender_uid(msg, &uid);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "The bus did not tell who you are.");
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ssuustttbs)");
        if (r >= 0) {
                r = durable_list(d->durable, uid, list_one, reply);
                if (r < 0 && error_is_watchd(r))
                        return error_for(d, r, "", error);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static const sd_bus_vtable watchd_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("AddWatch",
                                SD_BUS_ARGS("s", path, "u", mask, "u", flags),
                                SD_BUS_RESULT("u", id),
                                method_add_watch,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("AddWatchFd",
                                SD_BUS_ARGS("h", fd, "u", mask, "u", flags),
                                SD_BUS_RESULT("u", id),
                                method_add_watch_fd,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemoveWatch",
                                SD_BUS_ARGS("u", id),
                                SD_BUS_NO_RESULT,
                                method_remove_watch,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListWatches",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(usuu)", watches),
                                method_list_watches,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetStats",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a{sv}", stats),
                                method_get_stats,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OpenStream",
                                SD_BUS_ARGS("a{sv}", options),
                                SD_BUS_RESULT("h", stream),
                                method_open_stream,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("CreateDurable",
                                SD_BUS_ARGS("s", name, "s", path, "u", mask, "u", flags),
                                SD_BUS_RESULT("s", journal, "t", cursor),
                                method_create_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResumeDurable",
                                SD_BUS_ARGS("s", name, "s", journal, "t", cursor),
                                SD_BUS_RESULT("s", journal),
                                method_resume_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemoveDurable",
                                SD_BUS_ARGS("s", name),
                                SD_BUS_NO_RESULT,
                                method_remove_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListDurable",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(ssuustttbs)", subscriptions),
                                method_list_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("Events", SD_BUS_ARGS("a(uuuss)", events), 0),
        SD_BUS_SIGNAL_WITH_ARGS("Overflow", SD_BUS_ARGS("au", ids), 0),
        SD_BUS_SIGNAL_WITH_ARGS("WatchRemoved", SD_BUS_ARGS("u", id, "s", reason), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableEvents", SD_BUS_ARGS("s", name, "a(tuuss)", events), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableRescan", SD_BUS_ARGS("s", name, "t", id, "s", reason, "a(su)", directories), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableCaughtUp", SD_BUS_ARGS("s", name, "t", id), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableStopped", SD_BUS_ARGS("s", name, "s", reason), 0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Backend", "s", property_get_backend, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Capabilities", "as", property_get_capabilities, 0, SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_VTABLE_END,
};

/* Messages sd-bus may hold unsent before we stop handing it more. Past it
 * the bus is not reading us: records stay in the clients' queues, which are
 * bounded (max_pending_events_per_client, then Overflow), and delivery
 * tries again after DELIVERY_RETRY_USEC. */
#define BUS_WRITE_QUEUE_HIGH 4096u

static bool bus_congested(void *data) {
        BusClient *bc = data;
        DbusIface *d = bc->iface;
        uint64_t queued = 0;

        if (sd_bus_get_n_queued_write(d->bus, &queued) >= 0 && queued > BUS_WRITE_QUEUE_HIGH) {
                if (!d->stalled)
                        log_warning("The bus is not reading our messages (%" PRIu64 " queued): holding events back.",
                                    queued);
                d->stalled = true;
                return true;
        }
        d->stalled = false;
        return false;
}

static int signal_new(DbusIface *d, Client *c, const char *member, bool unicast, sd_bus_message **ret) {
        int r;

        r = sd_bus_message_new_signal(d->bus, ret, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, member);
        if (r < 0)
                return r;
        if (unicast) {
                r = sd_bus_message_set_destination(*ret, c->name);
                if (r < 0)
                        *ret = sd_bus_message_unref(*ret);
        }
        return r;
}

/* The Events signals of a batch (events_batch.c builds them: escaped names, 1 MiB at most). */
static int batch_new_signal(void *userdata, sd_bus_message **ret) {
        BusClient *bc = userdata;
        DbusIface *d = bc->iface;

        return signal_new(d, bc->client, "Events", d->manager->config.delivery == DELIVERY_UNICAST, ret);
}

static int batch_send(void *userdata, sd_bus_message *msg, size_t n) {
        BusClient *bc = userdata;
        int r;

        r = sd_bus_send(bc->iface->bus, msg, NULL);
        if (r < 0)
                return log_warning_errno(r, "Failed to send %zu events to %s, naming them in an Overflow: %m",
                                         n, bc->client->name);
        delivery_sent(&bc->client->queue, n);
        return 0;
}

/* A record that could not be built or sent: it costs only itself, and the client hears of it. */
static void batch_lost(void *userdata, uint32_t id) {
        BusClient *bc = userdata;

        delivery_dropped(&bc->client->queue, id);
}

static const EventsBatchOps batch_ops = {
        .new_signal = batch_new_signal,
        .send = batch_send,
        .lost = batch_lost,
};

/* Events signals, unicast unless delivery=broadcast: as many as the batch needs. */
static int bus_send_events(DeliveryQueue *q, Record **recs, size_t n, void *data) {
        BusClient *bc = data;
        EventsBatch batch;

        events_batch_init(&batch, &batch_ops, bc, bc->iface->manager->config.batch_max_events);
        for (size_t i = 0; i < n; i++)
                (void) events_batch_add(&batch, recs[i]);
        (void) events_batch_send(&batch);
        events_batch_done(&batch);
        return 0;
}

/* Overflow(ids) or WatchRemoved(id, reason): always unicast. */
static int bus_send_notice(DeliveryQueue *q, const Record *rec, const uint32_t *ids, size_t n_ids, void *data) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = data;
        DbusIface *d = bc->iface;
        int r;

        if (rec->kind == RECORD_OVERFLOW) {
                r = signal_new(d, bc->client, "Overflow", true, &msg);
                if (r >= 0)
                        r = sd_bus_message_append_array(msg, 'u', ids, n_ids * sizeof(uint32_t));
        } else {
                r = signal_new(d, bc->client, "WatchRemoved", true, &msg);
                if (r >= 0)
                        r = sd_bus_message_append(msg, "us", rec->id, rec->reason);
        }
        if (r >= 0)
                r = sd_bus_send(d->bus, msg, NULL);
        if (r < 0)
                return log_warning_errno(r, "Failed to send a notice to %s, ignoring: %m", q->name);
        return 0;
}

/*
 * What counts as read: the rule of flow control, in one place.
 *
 * A client is sent records while fewer than max_pending_events_per_client of
 * those sent are unconfirmed. Records are confirmed by the answer to a
 * Peer.Ping sent after them, and only by an answer the client itself sent
 * (its unique name is the reply's sender, which the bus sets): a method
 * return, or an error such as UnknownMethod from a library without Peer.
 * Either one the client can only send once it has read the Ping, so once it
 * has read everything queued for it before the Ping. An error from anyone
 * else confirms nothing, whatever its name: the bus driver's AccessDenied (a
 * policy that does not let us send the Ping: before our policy allowed it,
 * Debian's system bus denied every Ping, and the error counted as read, so a
 * client that never read was sent everything), LimitsExceeded (our
 * connection has max_replies_per_connection calls pending), ServiceUnknown
 * or NoReply (the client left), or an error sd-bus makes up locally.
 *
 * The Ping has no timeout: it waits at the bus until the client reads it or
 * leaves. A second Ping would only queue behind the first at the bus, and
 * each pending one counts against the bus's limit on replies our connection
 * awaits (max_replies_per_connection: 128 on the system bus, and dbus-daemon
 * never expires them). For the same limit, the clients of one uid have at
 * most PINGS_PER_USER_MAX Pings in flight: a user's clients that never read
 * hold that many of the bus's 128, not all of them (with all of them taken,
 * every other client's Ping would be refused, and every other client held
 * to its window). A client whose uid has none free waits for one, as after
 * an answer that confirmed nothing: the next Ping goes after
 * PING_RETRY_MIN_USEC, doubling up to PING_RETRY_MAX_USEC, so that a bus that
 * refuses at once is not asked in a loop.
 *
 * So a client that is not confirmed, however the bus answers for it, is sent
 * no more than its window; its later records fill its queue (same limit),
 * which is then dropped with an Overflow queued, sent at the next
 * confirmation (delivery.c).
 */
#define PING_RETRY_MIN_USEC (10u * 1000u)
#define PING_RETRY_MAX_USEC (5u * 1000u * 1000u)
#define PINGS_PER_USER_MAX 16u

static bool ping_confirms(const BusClient *bc, sd_bus_message *reply) {
        const char *sender = sd_bus_message_get_sender(reply);

        return sender && strcmp(sender, bc->client->name) == 0;
}

static unsigned *user_pings(DbusIface *d, uid_t uid) {
        unsigned *n = g_hash_table_lookup(d->pings, GUINT_TO_POINTER(uid));

        if (!n) {
                n = g_new0(unsigned, 1);
                g_hash_table_insert(d->pings, GUINT_TO_POINTER(uid), n);
        }
        return n;
}

/* bc's Ping is answered, or bc is gone: it no longer holds one of its uid's Pings. */
static void ping_end(BusClient *bc) {
        unsigned *n;

        if (!bc->ping)
                return;
        bc->ping = sd_bus_slot_unref(bc->ping);
        n = user_pings(bc->iface, bc->client->account.uid);
        assert(*n > 0);
        if (--*n == 0)
                g_hash_table_remove(bc->iface->pings, GUINT_TO_POINTER(bc->client->account.uid));
}

static int on_ping_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        BusClient *bc = userdata;

        bc->ping_retry = sd_event_source_disable_unref(bc->ping_retry);
        delivery_ask_confirm(&bc->client->queue);
        return 0;
}

/* The next Ping to bc goes later: after an answer that confirmed nothing, or
 * while its uid has PINGS_PER_USER_MAX in flight. */
static void ping_retry_later(BusClient *bc) {
        DbusIface *d = bc->iface;
        uint64_t now;
        int r;

        if (bc->ping_retry)
                return;
        bc->ping_retry_usec = bc->ping_retry_usec == 0 ? PING_RETRY_MIN_USEC
                                                       : MIN(2 * bc->ping_retry_usec, (uint64_t) PING_RETRY_MAX_USEC);
        r = sd_event_now(d->event, CLOCK_MONOTONIC, &now);
        if (r >= 0)
                r = sd_event_add_time(d->event, &bc->ping_retry, CLOCK_MONOTONIC, now + bc->ping_retry_usec,
                                      /* accuracy= */ 0, on_ping_retry, bc);
        if (r < 0)
                /* Then the next flush for it asks again. */
                log_warning_errno(r, "Failed to arm the timer of the next Ping to %s, ignoring: %m", bc->client->name);
}

/* The answer to bc's Ping confirmed nothing: say so (once, if the bus refused
 * it) and ask again later. */
static void ping_unconfirmed(BusClient *bc, sd_bus_message *reply) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        Client *c = bc->client;

        if (e && sd_bus_error_has_names(e, SD_BUS_ERROR_ACCESS_DENIED, SD_BUS_ERROR_LIMITS_EXCEEDED) &&
            !bc->ping_refusal_logged) {
                bc->ping_refusal_logged = true;
                log_warning("The bus refused our Ping to %s (%s: %s): until %s answers one, it is sent at most "
                            "%" PRIu32 " records (max_pending_events_per_client)%s.",
                            c->name, e->name, e->message ?: "no message", c->name,
                            bc->iface->manager->config.max_pending_events_per_client,
                            sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED)
                            ? "; the bus policy org.example.Inotify.conf must let root send Peer.Ping" : "");
        } else
                log_debug("Our Ping to %s confirmed nothing (%s), asking again later.",
                          c->name, e ? e->name : "an answer from someone else");
        ping_retry_later(bc);
}

static int on_ping_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        BusClient *bc = userdata;
        bool confirmed;

        ping_end(bc);
        confirmed = ping_confirms(bc, reply);
        if (confirmed)
                bc->ping_retry_usec = 0;
        else
                ping_unconfirmed(bc, reply);
        delivery_confirmed(bc->iface->manager->delivery, &bc->client->queue, confirmed, now_usec());
        return 0;
}

/* Has the client read what was sent? Its own answer to a Peer.Ping sent
 * after them says so; one in flight per client, with no timeout, and
 * PINGS_PER_USER_MAX per uid (see ping_confirms()). */
static int bus_ask_confirm(DeliveryQueue *q, void *data) {
        _cleanup_(message_unrefp) sd_bus_message *ping = NULL;
        BusClient *bc = data;
        DbusIface *d = bc->iface;
        unsigned *n;
        int r;

        if (bc->ping_retry)
                return -EAGAIN;
        n = user_pings(d, bc->client->account.uid);
        if (*n >= PINGS_PER_USER_MAX) {
                ping_retry_later(bc);
                return -EAGAIN;
        }
        r = sd_bus_message_new_method_call(d->bus, &ping, bc->client->name, "/", "org.freedesktop.DBus.Peer", "Ping");
        if (r >= 0)
                r = sd_bus_call_async(d->bus, &bc->ping, ping, on_ping_reply, bc, /* usec= */ UINT64_MAX);
        if (r < 0) {
                if (*n == 0)
                        g_hash_table_remove(d->pings, GUINT_TO_POINTER(bc->client->account.uid));
                return r;
        }
        ++*n;
        return 0;
}

static const DeliveryOps bus_delivery_ops = {
        .send_events = bus_send_events,
        .send_notice = bus_send_notice,
        .ask_confirm = bus_ask_confirm,
        .congested = bus_congested,
};

void dbus_iface_reloaded(DbusIface *d) {
        int r;

        /* Capabilities says whether remote file systems are polled, which [poll] decides. */
        r = sd_bus_emit_properties_changed(d->bus, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "Capabilities", NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to announce that Capabilities changed, ignoring: %m");
}

/* ---------------------------------------------------------------------- */
/* The transport of durable subscriptions to a client that resumed one: always unicast */

static BusClient *bus_client_of(Client *c) {
        return c->queue.data;
}

static int durable_events_begin(Client *c, const char *name, void *userdata) {
        BusClient *bc = bus_client_of(c);
        int r;

        assert(!bc->durable_msg);
        if (!bc->durable_name || strcmp(bc->durable_name, name) != 0) {
                free(bc->durable_name);
                bc->durable_name = strdup(name);
                if (!bc->durable_name)
                        return -ENOMEM;
        }
        r = signal_new(bc->iface, c, "DurableEvents", true, &bc->durable_msg);
        if (r >= 0)
                r = sd_bus_message_append(bc->durable_msg, "s", name);
        if (r >= 0)
                r = sd_bus_message_open_container(bc->durable_msg, 'a', "(tuuss)");
        bc->durable_n = bc->durable_size = 0;
        return r;
}

static int durable_events_end(Client *c, void *userdata) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = bus_client_of(c);
        size_t n = bc->durable_n;
        int r;

        msg = TAKE_PTR(bc->durable_msg);
        if (!msg)
                return 0;
        r = sd_bus_message_close_container(msg);
        if (r >= 0)
                r = sd_bus_send(bc->iface->bus, msg, NULL);
        if (r < 0)
                return r;
        delivery_sent(&c->queue, n);
        return 0;
}

/* An event, its paths escaped as Events' are; a signal is cut before EVENTS_BATCH_MAX_BYTES. */
static int durable_events_add(Client *c, const JournalEntry *e, void *userdata) {
        BusClient *bc = bus_client_of(c);
        _cleanup_free_ char *p = NULL, *np = NULL;
        bool escaped = path_needs_escape(e->path) || (e->new_path && path_needs_escape(e->new_path));
        size_t size;
        int r;

        if (escaped) {
                p = path_escape(e->path);
                np = e->new_path ? path_escape(e->new_path) : strdup("");
                if (!p || !np)
                        return -ENOMEM;
        }
        size = strlen(p ?: e->path) + strlen(np ?: e->new_path ?: "") + 32;
        if (bc->durable_n > 0 && bc->durable_size + size > EVENTS_BATCH_MAX_BYTES) {
                r = durable_events_end(c, userdata);
                if (r >= 0)
                        r = durable_events_begin(c, bc->durable_name, userdata);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_append(bc->durable_msg, "(tuuss)", e->id,
                                  e->mask | (escaped ? WATCHD_FLAG_PATH_ESCAPED : 0), e->cookie,
                                  p ?: e->path, np ?: e->new_path ?: "");
        if (r < 0)
                return r;
        bc->durable_n++;
        bc->durable_size += size;
        return 0;
}

static int durable_rescan(Client *c, const char *name, const JournalEntry *e, void *userdata) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = bus_client_of(c);
        int r;

        r = signal_new(bc->iface, c, "DurableRescan", true, &msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "sts", name, e->id, journal_gap_reason_to_string(e->reason));
        if (r >= 0)
                r = sd_bus_message_open_container(msg, 'a', "(su)");
        for (size_t i = 0; r >= 0 && i < e->n_scope; i++) {
                _cleanup_free_ char *esc = path_needs_escape(e->scope[i].path) ? path_escape(e->scope[i].path) : NULL;

                if (!esc && path_needs_escape(e->scope[i].path))
                        return -ENOMEM;
                r = sd_bus_message_append(msg, "(su)", esc ?: e->scope[i].path,
                                          (e->scope[i].recursive ? WATCHD_RESCAN_RECURSIVE : 0) |
                                          (esc ? WATCHD_FLAG_PATH_ESCAPED : 0));
        }
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        if (r >= 0)
                r = sd_bus_send(bc->iface->bus, msg, NULL);
        if (r < 0)
                return r;
        delivery_sent(&c->queue, 1);
        return 0;
}

static int durable_caught_up(Client *c, const char *name, uint64_t id, void *userdata) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = bus_client_of(c);
        int r;

        r = signal_new(bc->iface, c, "DurableCaughtUp", true, &msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "st", name, id);
        if (r >= 0)
                r = sd_bus_send(bc->iface->bus, msg, NULL);
        if (r < 0)
                return r;
        delivery_sent(&c->queue, 1);
        return 0;
}

static int durable_stopped(Client *c, const char *name, const char *reason, void *userdata) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = bus_client_of(c);
        int r;

        bc->durable_msg = sd_bus_message_unref(bc->durable_msg);
        r = signal_new(bc->iface, c, "DurableStopped", true, &msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "ss", name, reason);
        if (r >= 0)
                r = sd_bus_send(bc->iface->bus, msg, NULL);
        if (r < 0)
                log_debug_errno(r, "Failed to tell %s that durable subscription %s stopped, ignoring: %m", c->name, name);
        return 0;
}

static const DurableOps bus_durable_ops = {
        .events_begin = durable_events_begin,
        .events_add = durable_events_add,
        .events_end = durable_events_end,
        .rescan = durable_rescan,
        .caught_up = durable_caught_up,
        .stopped = durable_stopped,
};

Durable *dbus_iface_durable(DbusIface *d) {
        return d->durable;
}

DbusIface *dbus_iface_free(DbusIface *d) {
        GHashTableIter i;
        gpointer v;

        if (!d)
                return NULL;
        /* Durable subscriptions' owners go, their journals closed cleanly. */
        d->durable = durable_free(d->durable);
        /* The clients stay the manager's; what the bus held for them goes. */
        g_hash_table_iter_init(&i, d->manager->clients);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                Client *c = v;

                ping_end(c->queue.data);
                bus_client_free(c->queue.data);
                delivery_queue_set_transport(&c->queue, NULL, NULL);
        }
        sd_bus_slot_unref(d->vtable_slot);
        sd_bus_unref(d->bus);
        sd_event_unref(d->event);
        if (d->pings)
                g_hash_table_destroy(d->pings);
        free(d);
        return NULL;
}

int dbus_iface_new(Manager *m, sd_bus *bus, sd_event *event, const char *state_dir, DbusIface **ret) {
        _cleanup_(dbus_iface_freep) DbusIface *d = NULL;
        int r;

        d = calloc(1, sizeof(DbusIface));
        if (!d)
                return log_error_errno(-ENOMEM, "Out of memory.");
        d->manager = m;
        d->bus = sd_bus_ref(bus);
        d->event = sd_event_ref(event);
        d->pings = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);

        /* Before the name: a client that calls finds its durable subscriptions there. */
        r = durable_new(m, state_dir, &bus_durable_ops, d, &d->durable);
        if (r < 0)
                return log_error_errno(r, "Failed to set up durable subscriptions: %m");

        r = sd_bus_add_object_vtable(bus, &d->vtable_slot, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, watchd_vtable, d);
        if (r < 0)
                return log_error_errno(r, "Failed to publish %s: %m", WATCHD_OBJECT_PATH);

        r = sd_bus_request_name(bus, WATCHD_BUS_NAME, 0);
        if (r == -EEXIST)
                return log_error_errno(r, "The name %s is already taken: is another watchd running?", WATCHD_BUS_NAME);
        if (r < 0)
                return log_error_errno(r, "Failed to take the name %s: %m", WATCHD_BUS_NAME);

        r = sd_bus_attach_event(bus, event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        *ret = TAKE_PTR(d);
        return 0;
}
