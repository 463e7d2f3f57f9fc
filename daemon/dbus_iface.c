/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dbus_iface - org.example.Inotify on the bus
 *
 * The path of an AddWatch call: method_add_watch() reads (path, mask,
 * flags), validates them (the rules of design.md §3), takes the caller's
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
 * (one in flight at a time; what counts as an answer: ping_confirms()).
 * While that Ping is in flight, records for the
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

#include "config.h"
#include "dbus_iface.h"
#include "event_bits.h"
#include "events_batch.h"
#include "log.h"
#include "macro.h"
#include "path_escape.h"
#include "tree.h"


static void creds_unrefp(sd_bus_creds **c) {
        sd_bus_creds_unref(*c);
}

static void message_unrefp(sd_bus_message **m) {
        sd_bus_message_unref(*m);
}

/* UnixUserID and UnixGroupIDs of sender, from the bus driver (dbus-daemon, dbus-broker). */
static int caller_from_driver(Manager *m, const char *sender, uid_t *ret_uid, gid_t **ret_gids, size_t *ret_n) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ gid_t *gids = NULL;
        bool have_uid = false, have_gids = false;
        size_t n = 0;
        uid_t uid = 0;
        int r;

        r = sd_bus_call_method(m->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
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
static int caller_from_message(Manager *m, sd_bus_message *msg, Caller *ret, gid_t **ret_gids) {
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
                r = caller_from_driver(m, sd_bus_message_get_sender(msg), &driver_uid, &gids, &n);
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
static int error_for(Manager *m, int r, const char *what, sd_bus_error *error) {
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
        case -EMEDIUMTYPE:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Not a regular file or a directory (FIFOs, sockets, device nodes and "
                                         "anonymous inodes cannot be watched): %s.", what);
        case -ENOLINK:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The descriptor is not a file with a name on a mounted file system (a "
                                         "memfd, an anonymous inode, an O_TMPFILE file, or a file or directory "
                                         "deleted since it was opened): there is no path to report its events under.");
        case -EBADFD:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The descriptor was opened with O_PATH: open it for reading.");
        case -EBADF:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The descriptor is not open for reading.");
        case -EDQUOT:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "This connection holds %" PRIu32 " watches, the most allowed "
                                         "(max_watches_per_client in watchd.conf; a RECURSIVE subscription "
                                         "counts each directory).",
                                         m->config.max_watches_per_client);
        case -EMLINK:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Your user holds %" PRIu32 " watches, the most allowed "
                                         "(max_watches_per_user in watchd.conf; a RECURSIVE subscription "
                                         "counts each directory).",
                                         m->config.max_watches_per_user);
        case -EUSERS:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Your user has %" PRIu32 " connections with subscriptions, the most allowed "
                                         "(max_clients_per_user in watchd.conf).",
                                         m->config.max_clients_per_user);
        case -ENOSPC:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "The kernel's limit on inotify watches (max_user_watches) is reached; "
                                         "an administrator can raise it in %s.", m->backend->limit_hint);
        case -EOVERFLOW:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "The daemon has used up its subscription ids; restart it.");
        case -ESRCH:
                return sd_bus_error_setf(error, WATCHD_ERROR_NO_SUCH_WATCH, "You have no subscription %s.", what);
        default:
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
                                         "Unknown flags 0x%" PRIx32 " (RECURSIVE 0x1, ONLYDIR 0x2, DONT_FOLLOW 0x4, ONESHOT 0x8).",
                                         flags & ~WATCHD_FLAGS_VALID);
        return 0;
}

static void client_ping_end(Manager *m, Client *c);

static int on_client_gone(sd_bus_track *track, void *userdata) {
        Client *c = userdata;

        client_ping_end(c->manager, c);         /* its Ping, if any, is no longer ours to count */
        manager_client_gone(c->manager, c);     /* frees c and unrefs track */
        return 0;
}

/* The caller's Client. A new one gets the caller's credentials from the bus
 * (a connection's credentials never change, so once is enough) and is
 * tracked so that it ends when its connection does. */
static int client_for_call(Manager *m, sd_bus_message *msg, Client **ret, sd_bus_error *error) {
        _cleanup_free_ gid_t *gids = NULL;
        const char *sender = sd_bus_message_get_sender(msg);
        Caller caller;
        Client *c;
        int r;

        if (manager_get_client(m, sender, ret) >= 0)
                return 0;

        r = caller_from_message(m, msg, &caller, &gids);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "The bus did not tell who you are (uid and groups), so nothing is opened for you.");

        r = manager_new_client(m, sender, &caller, &c);
        if (r < 0)
                return error_for(m, r, "the path", error);
        r = sd_bus_track_new(m->bus, &c->track, on_client_gone, c);
        if (r >= 0)
                r = sd_bus_track_add_sender(c->track, msg);
        if (r < 0) {
                manager_client_gone(m, c);
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

/* A RECURSIVE AddWatch whose walk went on from the loop: answered now. */
static void add_watch_done(Manager *m, uint32_t id, int r, void *userdata) {
        _cleanup_(message_unrefp) sd_bus_message *msg = userdata;
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
                (void) error_for(m, r, what ?: "the path", &error);
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

static int method_add_watch_common(sd_bus_message *msg, Manager *m, bool by_fd, sd_bus_error *error) {
        _cleanup_free_ char *path = NULL;
        const char *sent = NULL;
        uint32_t mask, flags, id;
        TreeWalk *walk = NULL;
        bool escaped;
        Client *c;
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
        if (sent) {
                r = path_from_call(sent, escaped, &path, error);
                if (r < 0)
                        return r;
        }

        r = client_for_call(m, msg, &c, error);
        if (r < 0)
                return r;

        if (by_fd)
                r = manager_add_watch_fd(m, c, fd, mask, flags, &id, &walk);
        else
                r = manager_add_watch_path(m, c, path, mask, flags, &id, &walk);
        if (r < 0) {
                _cleanup_free_ char *what = what_of(sent);

                return error_for(m, r, what ?: "the path", error);
        }

        log_debug("%s: subscription %" PRIu32 " on %s%s, mask 0x%" PRIx32 ", flags 0x%" PRIx32 "%s.",
                  c->name, id, by_fd ? "fd " : "", by_fd ? "" : sent, mask, flags,
                  walk ? ", its tree walked from the loop" : "");
        if (walk) {
                /* A big tree: answered when its walk ends (add_watch_done), its
                 * events already flowing for the part watched so far. */
                tree_walk_set_done(walk, add_watch_done, sd_bus_message_ref(msg));
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
        Manager *m = userdata;
        char what[16];
        uint32_t id;
        Client *c;
        int r;

        r = sd_bus_message_read(msg, "u", &id);
        if (r < 0)
                return r;

        snprintf(what, sizeof(what), "%" PRIu32, id);
        r = manager_get_client(m, sd_bus_message_get_sender(msg), &c);
        if (r < 0)
                return error_for(m, -ESRCH, what, error);
        r = manager_remove_watch(m, c, id);
        if (r < 0)
                return error_for(m, r, what, error);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_list_watches(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        Client *c = NULL;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(usuu)");
        if (r < 0)
                return r;
        if (manager_get_client(m, sd_bus_message_get_sender(msg), &c) >= 0)
                for (Subscription *s = c->subscriptions; s; s = s->owner_next) {
                        /* A path that is not UTF-8 (AddWatchFd, a rename) goes escaped, flagged. */
                        _cleanup_free_ char *escaped = path_needs_escape(s->path) ? path_escape(s->path) : NULL;

                        if (!escaped && path_needs_escape(s->path))
                                return -ENOMEM;
                        r = sd_bus_message_append(reply, "(usuu)", s->id, escaped ?: s->path, s->mask,
                                                  s->flags | (escaped ? WATCHD_FLAG_PATH_ESCAPED : 0));
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
        Manager *m = userdata;
        uint32_t own_clients = 0, own_subscriptions = 0, own_watches = 0;
        uint64_t own_delivered = 0, own_pending = 0, own_dropped = 0, own_overflows = 0, queued = 0;
        bool known, all;
        GHashTableIter i;
        gpointer v;
        uid_t uid;
        int r;

        known = sender_uid(msg, &uid) >= 0;
        all = known && (uid == 0 || uid == geteuid());
        if (known) {
                g_hash_table_iter_init(&i, m->clients);
                while (g_hash_table_iter_next(&i, NULL, &v)) {
                        Client *c = v;

                        if (c->uid != uid)
                                continue;
                        own_clients++;
                        own_subscriptions += c->n_subscriptions;
                        own_watches += c->n_watches;
                        own_delivered += c->sent;
                        own_pending += move_pairer_size(&c->queue);
                        own_dropped += c->events_dropped;
                        own_overflows += c->overflows;
                }
        }

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{sv}");
        if (r >= 0)
                r = append_stat(reply, "backend", 's', backend_name(m->backend));
        if (r >= 0)
                r = append_u(reply, "clients", (uint32_t) g_hash_table_size(m->clients));
        if (r >= 0)
                r = append_u(reply, "users", (uint32_t) g_hash_table_size(m->users));
        if (r >= 0)
                r = append_u(reply, "subscriptions", (uint32_t) watch_table_n_subscriptions(m->table));
        if (r >= 0)
                r = append_u(reply, "kernel_watches", (uint32_t) watch_table_n_watches(m->table));
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
                (void) sd_bus_get_n_queued_write(m->bus, &queued);
                r = append_t(reply, "events_read", m->stats.events_read);
                if (r >= 0)
                        r = append_t(reply, "events_delivered", m->stats.events_delivered);
                if (r >= 0)
                        r = append_t(reply, "signals_sent", m->stats.signals_sent);
                if (r >= 0)
                        r = append_t(reply, "pending_events", manager_pending_events(m));
                if (r >= 0)
                        r = append_t(reply, "events_dropped", m->stats.events_dropped);
                if (r >= 0)
                        r = append_t(reply, "overflows", m->stats.overflows);
                if (r >= 0)
                        r = append_t(reply, "kernel_overflows", m->stats.kernel_overflows);
                if (r >= 0)
                        r = append_t(reply, "bus_queued_messages", queued);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", WATCHD_VERSION);
}

static int property_get_backend(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", backend_name(m->backend));
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
        SD_BUS_SIGNAL_WITH_ARGS("Events", SD_BUS_ARGS("a(uuuss)", events), 0),
        SD_BUS_SIGNAL_WITH_ARGS("Overflow", SD_BUS_ARGS("au", ids), 0),
        SD_BUS_SIGNAL_WITH_ARGS("WatchRemoved", SD_BUS_ARGS("u", id, "s", reason), 0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Backend", "s", property_get_backend, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_VTABLE_END,
};

static int signal_new(Manager *m, Client *c, const char *member, bool unicast, sd_bus_message **ret) {
        int r;

        r = sd_bus_message_new_signal(m->bus, ret, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, member);
        if (r < 0)
                return r;
        if (unicast) {
                r = sd_bus_message_set_destination(*ret, c->name);
                if (r < 0)
                        *ret = sd_bus_message_unref(*ret);
        }
        return r;
}

static void notice_send(Manager *m, Client *c, const Record *rec) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_free_ uint32_t *ids = NULL;
        size_t n = 0;
        int r;

        if (rec->kind == RECORD_OVERFLOW) {
                ids = client_take_lost_ids(c, &n);
                r = signal_new(m, c, "Overflow", true, &msg);
                if (r >= 0)
                        r = sd_bus_message_append_array(msg, 'u', ids, n * sizeof(uint32_t));
        } else {
                r = signal_new(m, c, "WatchRemoved", true, &msg);
                if (r >= 0)
                        r = sd_bus_message_append(msg, "us", rec->id, rec->reason);
        }
        if (r >= 0)
                r = sd_bus_send(m->bus, msg, NULL);
        if (r < 0) {
                log_warning_errno(r, "Failed to send a notice to %s, ignoring: %m", c->name);
                return;
        }
        if (rec->kind == RECORD_OVERFLOW) {
                m->stats.overflows++;
                c->overflows++;
        }
}

static void client_ping(Manager *m, Client *c);

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
 * confirmation (dbus_iface_flush_client()).
 */
#define PING_RETRY_MIN_USEC (10u * 1000u)
#define PING_RETRY_MAX_USEC (5u * 1000u * 1000u)
#define PINGS_PER_USER_MAX 16u

static bool ping_confirms(const Client *c, sd_bus_message *reply) {
        const char *sender = sd_bus_message_get_sender(reply);

        return sender && strcmp(sender, c->name) == 0;
}

static int on_ping_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Client *c = userdata;

        c->ping_retry = sd_event_source_disable_unref(c->ping_retry);
        client_ping(c->manager, c);
        return 0;
}

/* The account of c's uid, where its Pings in flight are counted (it exists
 * while the uid has a client). */
static UserAccount *client_user(Manager *m, const Client *c) {
        return g_hash_table_lookup(m->users, GUINT_TO_POINTER(c->uid));
}

/* c's Ping is answered, or c is gone: it no longer holds one of its uid's Pings. */
static void client_ping_end(Manager *m, Client *c) {
        UserAccount *u;

        if (!c->ping)
                return;
        c->ping = sd_bus_slot_unref(c->ping);
        u = client_user(m, c);
        assert(u && u->n_pings > 0);
        u->n_pings--;
}

/* The next Ping to c goes later: after an answer that confirmed nothing, or
 * while its uid has PINGS_PER_USER_MAX in flight. */
static void ping_retry_later(Manager *m, Client *c) {
        uint64_t now;
        int r;

        c->ping_retry_usec = c->ping_retry_usec == 0 ? PING_RETRY_MIN_USEC
                                                     : MIN(2 * c->ping_retry_usec, (uint64_t) PING_RETRY_MAX_USEC);
        r = sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        if (r >= 0)
                r = sd_event_add_time(m->event, &c->ping_retry, CLOCK_MONOTONIC, now + c->ping_retry_usec,
                                      /* accuracy= */ 0, on_ping_retry, c);
        if (r < 0)
                /* Then the next flush for c asks again. */
                log_warning_errno(r, "Failed to arm the timer of the next Ping to %s, ignoring: %m", c->name);
}

/* The answer to c's Ping confirmed nothing: say so (once, if the bus refused
 * it) and ask again later. */
static void ping_unconfirmed(Manager *m, Client *c, sd_bus_message *reply) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e && sd_bus_error_has_names(e, SD_BUS_ERROR_ACCESS_DENIED, SD_BUS_ERROR_LIMITS_EXCEEDED) &&
            !c->ping_refusal_logged) {
                c->ping_refusal_logged = true;
                log_warning("The bus refused our Ping to %s (%s: %s): until %s answers one, it is sent at most "
                            "%" PRIu32 " records (max_pending_events_per_client)%s.",
                            c->name, e->name, e->message ?: "no message", c->name,
                            m->config.max_pending_events_per_client,
                            sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED)
                            ? "; the bus policy org.example.Inotify.conf must let root send Peer.Ping" : "");
        } else
                log_debug("Our Ping to %s confirmed nothing (%s), asking again later.",
                          c->name, e ? e->name : "an answer from someone else");
        ping_retry_later(m, c);
}

static int on_ping_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Client *c = userdata;
        Manager *m = c->manager;

        client_ping_end(m, c);
        c->answers_ping = ping_confirms(c, reply);
        if (!c->answers_ping) {
                ping_unconfirmed(m, c, reply);
                return 0;
        }
        c->read = c->ping_at;
        c->ping_retry_usec = 0;
        /* What was held back for it goes now, as one signal (manager_flush
         * walks the dirty clients), and only then the next Ping: sent first,
         * that Ping would vouch for none of it and hold it for one more round
         * trip. The flush pings c itself if it sent anything; the call below
         * is for the records sent before this Ping went out and not yet
         * vouched for, and for a flush that did not run (the bus stalled). */
        manager_mark_dirty(m, c);
        manager_flush(m);
        client_ping(m, c);
        return 0;
}

/* One Ping in flight per client at most, sent after the records it vouches
 * for, with no timeout, and PINGS_PER_USER_MAX per uid (see ping_confirms()). */
static void client_ping(Manager *m, Client *c) {
        _cleanup_(message_unrefp) sd_bus_message *ping = NULL;
        UserAccount *u = client_user(m, c);
        int r;

        assert(u);
        if (c->ping || c->ping_retry || c->read == c->sent)
                return;
        if (u->n_pings >= PINGS_PER_USER_MAX) {
                ping_retry_later(m, c);
                return;
        }
        r = sd_bus_message_new_method_call(m->bus, &ping, c->name, "/", "org.freedesktop.DBus.Peer", "Ping");
        if (r >= 0)
                r = sd_bus_call_async(m->bus, &c->ping, ping, on_ping_reply, c, /* usec= */ UINT64_MAX);
        if (r < 0) {
                /* Then nothing more is sent to it until the next record tries again. */
                log_warning_errno(r, "Failed to ask %s whether it reads its events, ignoring: %m", c->name);
                return;
        }
        u->n_pings++;
        c->ping_at = c->sent;
}

/*
 * Whether c's queued records wait for the answer to its Ping rather than go
 * out now. While a Ping is in flight the client has not yet confirmed
 * reading the last signal; what arrives meanwhile is sent as one signal when
 * it answers (on_ping_reply). So the batch size follows the client's round
 * trip, with no delay of our own: a record waits at most one round trip, and
 * only in a burst (HOLD_MIN_UNREAD records unconfirmed); one after a quiet
 * moment finds no Ping in flight and goes at once. Without
 * this, each kernel read of a few events became a signal of its own, and the
 * per-message costs (sd-bus, dbus-daemon, the client's dispatch) were most
 * of the CPU under a storm.
 */
/* Records the client may have unread before its next ones wait for its
 * Ping: below it, nothing is held, so a slow client's round trip never adds
 * to the latency of events that come one at a time (W4: 200 a second). */
#define HOLD_MIN_UNREAD 16u

static bool client_hold(Manager *m, Client *c, uint64_t now_usec) {
        /* Half the backlog limit: holding must never be what overflows it. */
        size_t enough = MIN((size_t) m->config.batch_max_events,
                            (size_t) m->config.max_pending_events_per_client / 2);

        if (!c->ping || !c->answers_ping)
                return false;   /* nothing to wait for, or an answer that may never come */
        if (c->sent - c->read < HOLD_MIN_UNREAD)
                return false;   /* not a burst: a record every few ms goes at once, whatever the round trip */
        if (c->n_notices > 0)
                return false;   /* notices go now, and the events before them first */
        if (move_pairer_size(&c->queue) >= enough)
                return false;   /* a full signal gains nothing by waiting */
        /* A rename half whose pairing time is up goes now: the pairing timer
         * would otherwise fire again at once, for as long as the Ping waits. */
        return move_pairer_next_deadline(&c->queue) > now_usec;
}

/* The Events signals of a flush (events_batch.c builds them). */
static int events_new_signal(void *userdata, sd_bus_message **ret) {
        Client *c = userdata;
        Manager *m = c->manager;

        return signal_new(m, c, "Events", m->config.delivery == DELIVERY_UNICAST, ret);
}

static int events_send(void *userdata, sd_bus_message *msg, size_t n) {
        Client *c = userdata;
        Manager *m = c->manager;
        int r;

        r = sd_bus_send(m->bus, msg, NULL);
        if (r < 0)
                return log_warning_errno(r, "Failed to send %zu events to %s, naming them in an Overflow: %m",
                                         n, c->name);
        m->stats.events_delivered += n;
        m->stats.signals_sent++;
        c->sent += n;
        return 0;
}

/* A record that could not be built or sent: it costs only itself, and the client hears of it. */
static void events_lost(void *userdata, uint32_t id) {
        Client *c = userdata;

        c->manager->stats.events_dropped++;
        if (client_queue_overflow(c, id) < 0)
                log_warning("Out of memory queueing Overflow for %s, ignoring.", c->name);
}

static const EventsBatchOps events_ops = {
        .new_signal = events_new_signal,
        .send = events_send,
        .lost = events_lost,
};

/*
 * Sends c what its queue lets go, but never more than
 * max_pending_events_per_client records that c has not yet read: past that
 * its records wait in its queue, which is bounded by the same limit (then
 * its backlog is dropped and it gets Overflow, sent once it reads again).
 * So a client that stops reading costs at most twice that many records, in
 * the daemon and the bus together, and the other clients are not delayed.
 * While c has a Ping in flight, a small batch waits for its answer
 * (client_hold()). A record that cannot be sent is named in an Overflow
 * queued behind the others (events_lost), which this flush sends too.
 */
void dbus_iface_flush_client(Manager *m, Client *c, uint64_t now_usec) {
        EventsBatch batch;
        bool again;
        Record *rec;

        if (client_hold(m, c, now_usec))
                return;

        events_batch_init(&batch, &events_ops, c, m->config.batch_max_events);
        do {
                while (c->sent + batch.n_records - c->read < m->config.max_pending_events_per_client &&
                       (rec = move_pairer_pop(&c->queue, now_usec))) {
                        if (rec->kind != RECORD_EVENT) {
                                /* Notices keep their place: what came before goes first. */
                                assert(c->n_notices > 0);
                                c->n_notices--;
                                (void) events_batch_send(&batch);
                                notice_send(m, c, rec);
                                record_free(rec);
                                continue;
                        }
                        (void) events_batch_add(&batch, rec);
                }
                /* A last signal that failed queued its Overflow: that goes now, not at the next event. */
                again = events_batch_send(&batch) < 0;
        } while (again);
        events_batch_done(&batch);
        client_ping(m, c);
}

int dbus_iface_attach(Manager *m, sd_bus *bus) {
        int r;

        m->bus = sd_bus_ref(bus);

        r = sd_bus_add_object_vtable(bus, NULL, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, watchd_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Failed to publish %s: %m", WATCHD_OBJECT_PATH);

        r = sd_bus_request_name(bus, WATCHD_BUS_NAME, 0);
        if (r == -EEXIST)
                return log_error_errno(r, "The name %s is already taken: is another watchd running?", WATCHD_BUS_NAME);
        if (r < 0)
                return log_error_errno(r, "Failed to take the name %s: %m", WATCHD_BUS_NAME);

        r = sd_bus_attach_event(bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        return 0;
}
