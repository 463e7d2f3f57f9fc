/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bus_methods - the clients on the bus, and the methods on their subscriptions
 *
 * The path of an AddWatch call: bus_method_add_watch() reads (path, mask,
 * flags), validates them (the rules of watchd(8), "D-BUS INTERFACE"), takes the caller's
 * uid and groups from the bus (bus_caller.h; never augmented from /proc,
 * and refused if the bus did not say), finds or makes the caller's Client
 * (and tracks its name), and calls manager_add_watch_path(), which opens
 * the path as the caller and hands the fd to the watch table, which asks
 * the backend for a kernel watch. Errors come back as -errno and become
 * D-Bus errors in bus_error_for().
 *
 * A connection becomes a client at its first call that needs one, with the
 * signal transport (bus_signals.h) for its queue, and stays one until its
 * name leaves the bus (sd_bus_track).
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "access.h"
#include "bus.h"
#include "bus_caller.h"
#include "bus_methods.h"
#include "bus_signals.h"
#include "error.h"
#include "fswork.h"
#include "log.h"
#include "macro.h"
#include "path.h"
#include "path_escape.h"
#include "tree.h"

BusClient *bus_client_free(BusClient *bc) {
        if (!bc)
                return NULL;
        LIST_REMOVE(clients, bc->iface->clients, bc);
        /* Its Pings were ended while its client was there (bus_pings_end()). */
        sd_bus_slot_unref(bc->ping);
        sd_bus_slot_unref(bc->durable_ping);
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

void bus_client_end(DbusIface *d, Client *c) {
        BusClient *bc = c->queue.data;

        bus_pings_end(bc); /* its Pings, if any, are no longer ours to count */
        if (d->durable)
                durable_client_gone(d->durable, c);
        manager_client_gone(d->manager, c); /* frees c */
        bus_client_free(bc);
}

static int on_client_gone(sd_bus_track *track, void *userdata) {
        BusClient *bc = userdata;

        bus_client_end(bc->iface, bc->client);
        return 0;
}

/* The caller's Client. A new one gets the caller's credentials from the bus
 * (a connection's credentials never change, so once is enough) and is
 * tracked so that it ends when its connection does. */
int bus_client_for_call(DbusIface *d, sd_bus_message *msg, Client **ret, sd_bus_error *error) {
        _cleanup_free_ gid_t *gids = NULL;
        const char *sender = sd_bus_message_get_sender(msg);
        BusClient *bc;
        Caller caller;
        Client *c;
        pid_t pid;
        int r;

        c = manager_get_client(d->manager, sender);
        if (c) {
                *ret = c;
                return 0;
        }

        r = bus_caller_from_message(d->bus, msg, &caller, &gids, &pid);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(
                        error, SD_BUS_ERROR_ACCESS_DENIED,
                        "The bus did not tell who you are (uid and groups), so nothing is opened for you.");

        bc = calloc(1, sizeof(BusClient));
        if (!bc)
                return -ENOMEM;
        r = manager_new_client(d->manager, sender, &caller, &c);
        if (r < 0) {
                free(bc);
                return bus_error_for(d->manager, r, "the path", error);
        }
        c->pid = pid;
        *bc = (BusClient) {
                .iface = d,
                .client = c,
        };
        LIST_PREPEND(clients, d->clients, bc);
        delivery_queue_set_transport(&c->queue, &bus_delivery_ops, bc);
        r = sd_bus_track_new(d->bus, &bc->track, on_client_gone, bc);
        if (r >= 0)
                r = sd_bus_track_add_sender(bc->track, msg);
        if (r < 0) {
                bus_client_end(d, c);
                return r;
        }
        *ret = c;
        return 0;
}

/*
 * An AddWatch whose subscription is made but not whole yet: a RECURSIVE
 * walk that goes on from the loop or in workers, or a pending path's look-up
 * in workers (its chain of directories from "/" opened as the caller), then
 * the first snapshots of its polled directories, taken in workers. Answered
 * when they end, or
 * at the call's deadline with Timeout (add_watch_timeout_ms after it came,
 * pushed back by as much each time the walk has linked directories since:
 * a big tree is not refused, a walk that stops going on is): the walk is
 * left to end (its reads in workers cannot be taken back) and
 * discarded, and the subscription goes before anything more of it is sent.
 */
struct PendingAdd {
        DbusIface *iface;
        sd_bus_message *msg; /* its sender names the client: it may be gone at the deadline */
        uint32_t id;
        TreeWalk *walk;                        /* while the walk runs: it calls add_watch_done() */
        unsigned progress;                     /* the subscription's links when the deadline was last armed */
        bool looking_up;                       /* its pending path's look-up was waited for (for the log) */
        char *sent;                            /* the path as sent (NULL: a descriptor), for the Timeout's message */
        sd_event_source *timer;                /* the call's deadline; NULL: none (out of memory) */
        LIST_FIELDS(PendingAdd, pending_adds); /* in iface's, from its making to its free */
};

static PendingAdd *pending_add_free(PendingAdd *p) {
        if (!p)
                return NULL;
        LIST_REMOVE(pending_adds, p->iface->pending_adds, p);
        sd_event_source_disable_unref(p->timer);
        sd_bus_message_unref(p->msg);
        free(p->sent);
        free(p);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(PendingAdd *, pending_add_free);

static void add_watch_primed(int r, void *userdata) {
        _cleanup_(pending_add_freep) PendingAdd *p = userdata;

        /* Never at exit (-ESHUTDOWN): bus_pending_adds_end() took the wait back before. */
        r = sd_bus_reply_method_return(p->msg, "u", p->id);
        if (r < 0)
                log_debug_errno(r, "Failed to answer AddWatch of subscription %" PRIu32 ", ignoring: %m", p->id);
}

/* The pending path's look-up is over: the answer, or the first snapshot's
 * wait if it was placed on a polled directory. */
static void add_watch_looked_up(int r, void *userdata) {
        _cleanup_(pending_add_freep) PendingAdd *p = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        Manager *m;
        Client *c;

        /* Never at exit (-ESHUTDOWN): bus_pending_adds_end() took the wait back before. */
        m = p->iface->manager;
        p->looking_up = false;
        if (r >= 0) {
                c = manager_get_client(m, sd_bus_message_get_sender(p->msg));
                if (c && manager_when_primed(m, c, p->id, add_watch_primed, p) > 0) {
                        TAKE_PTR(p);
                        return; /* answered when its first snapshots are taken, or at the deadline */
                }
                r = sd_bus_reply_method_return(p->msg, "u", p->id);
        } else if (r == -ECANCELED)
                /* Removed (RemoveWatch of an id not answered yet), or its client gone. */
                r = sd_bus_reply_method_errorf(p->msg, SD_BUS_ERROR_FAILED,
                                               "The subscription was removed before its path was looked up.");
        else {
                what = p->sent ? bus_what_of(p->sent) : NULL;
                (void) bus_error_for(m, r, what ?: "the path", &error);
                r = sd_bus_reply_method_error(p->msg, &error);
        }
        if (r < 0)
                log_debug_errno(r, "Failed to answer AddWatch of subscription %" PRIu32 ", ignoring: %m", p->id);
}

/* The walk has linked nothing in add_watch_timeout_ms, or the first snapshot
 * has not ended by the call's deadline: its file system stopped answering.
 * The caller is told, and the subscription it would have had goes. */
static int add_watch_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        _cleanup_(pending_add_freep) PendingAdd *p = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = p->sent ? bus_what_of(p->sent) : NULL;
        Manager *m = p->iface->manager;
        const char *sender = sd_bus_message_get_sender(p->msg);
        Client *c = manager_get_client(m, sender);
        bool looking_up = false;
        int r;

        /* A walk that linked directories since the deadline was armed is not
         * stuck: a big tree. It gets another add_watch_timeout_ms, so the
         * bound is on a file system that stops answering, not on the size of
         * a tree (plain inotify watches any size, however long it takes). */
        if (p->walk) {
                const Subscription *sub = manager_get_subscription(m, p->id);

                if (sub && sub->n_links != p->progress &&
                    sd_event_source_set_time_relative(
                            s, (uint64_t) manager_get_config(m)->add_watch_timeout_ms * 1000u) >= 0 &&
                    sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) >= 0) {
                        p->progress = sub->n_links;
                        TAKE_PTR(p);
                        return 0;
                }
        }
        /* The waiter goes first: the removal below ends the walk or the wait, which would call it. */
        if (p->walk)
                tree_walk_set_done(p->walk, NULL, NULL);
        else {
                looking_up = p->looking_up;
                manager_when_looked_up_cancel(m, p->id, add_watch_looked_up, p);
                manager_when_primed_cancel(m, p->id, add_watch_primed, p);
        }
        log_info("AddWatch of %s on %s: %s in %" PRIu32 " ms, answered with Timeout; subscription %" PRIu32 " removed.",
                 sender, p->sent ?: "a descriptor",
                 p->walk            ? "its walk has not ended" :
                         looking_up ? "its pending path's look-up has not ended" :
                                      "its file system has not given the first snapshot",
                 manager_get_config(m)->add_watch_timeout_ms, p->id);
        (void) bus_error_for(m, -ETIMEDOUT, what ?: (p->sent ? "the path" : "the descriptor"), &error);
        r = sd_bus_reply_method_error(p->msg, &error);
        if (r < 0)
                log_debug_errno(r, "Failed to answer AddWatch of %s, ignoring: %m", sender);
        if (!c)
                return 0; /* gone: its subscriptions went with it */
        r = manager_remove_watch(m, c, p->id);
        if (r < 0)
                log_debug_errno(r, "Failed to remove subscription %" PRIu32 " after its Timeout, ignoring: %m", p->id);
        return 0;
}

static void add_watch_done(uint32_t id, int r, void *userdata) {
        _cleanup_(pending_add_freep) PendingAdd *p = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        Manager *m = p->iface->manager;
        const char *path = NULL;
        Client *c;

        p->walk = NULL; /* it ends */
        if (r >= 0) {
                p->id = id;
                c = manager_get_client(m, sd_bus_message_get_sender(p->msg));
                if (c && manager_when_primed(m, c, id, add_watch_primed, p) > 0) {
                        TAKE_PTR(p);
                        return; /* answered when its first snapshots are taken, or at the deadline */
                }
        }
        if (r < 0) {
                if (strcmp(sd_bus_message_get_signature(p->msg, true), "suu") == 0) {
                        (void) sd_bus_message_rewind(p->msg, true);
                        (void) sd_bus_message_read(p->msg, "s", &path);
                }
                what = bus_what_of(path);
                (void) bus_error_for(m, r, what ?: "the path", &error);
                r = sd_bus_reply_method_error(p->msg, &error);
        } else
                r = sd_bus_reply_method_return(p->msg, "u", id);
        if (r < 0)
                log_debug_errno(r, "Failed to answer AddWatch of subscription %" PRIu32 ", ignoring: %m", id);
}

void bus_pending_adds_end(DbusIface *d) {
        while (d->pending_adds) {
                _cleanup_(pending_add_freep) PendingAdd *p = d->pending_adds;
                int r;

                if (p->walk)
                        tree_walk_set_done(p->walk, NULL, NULL);
                else {
                        manager_when_looked_up_cancel(d->manager, p->id, add_watch_looked_up, p);
                        manager_when_primed_cancel(d->manager, p->id, add_watch_primed, p);
                }
                r = sd_bus_reply_method_errorf(p->msg, SD_BUS_ERROR_FAILED, "The daemon is exiting.");
                if (r < 0)
                        log_debug_errno(r, "Failed to answer AddWatch of subscription %" PRIu32 ", ignoring: %m", p->id);
        }
}

/* The answer of an AddWatch whose subscription exists (id) or failed (r);
 * deadline: when it must be answered (CLOCK_MONOTONIC µs), 0: none. */
static int add_watch_reply(DbusIface *d, sd_bus_message *msg, Client *c, const char *sent, int r, uint32_t id,
                           TreeWalk *walk, uint64_t deadline) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Manager *m = d->manager;
        PendingAdd *p;

        if (r < 0) {
                _cleanup_free_ char *what = bus_what_of(sent);

                (void) bus_error_for(m, r, what ?: "the path", &error);
                return sd_bus_reply_method_error(msg, &error);
        }
        if (!walk && !manager_get_fswork(m))
                return sd_bus_reply_method_return(msg, "u", id);
        p = calloc(1, sizeof(PendingAdd));
        if (!p) {
                if (walk)
                        return -ENOMEM; /* the walk goes on; its subscription stays, unanswered: rare enough */
                return sd_bus_reply_method_return(msg, "u", id);
        }
        *p = (PendingAdd) { d, sd_bus_message_ref(msg), id, walk };
        LIST_PREPEND(pending_adds, d->pending_adds, p);
        if (walk) {
                const Subscription *sub = manager_get_subscription(m, id);

                /* A big tree: answered when its walk ends (add_watch_done), its
                 * events already flowing for the part watched so far. */
                tree_walk_set_done(walk, add_watch_done, p);
                p->progress = sub ? sub->n_links : 0;
        } else {
                /* A pending path is looked up in workers: the answer waits for
                 * it (its chain in place, placed, or an error), as it came at
                 * once when the look-up was made on the loop. A polled
                 * directory's first snapshot is taken in a worker: the answer
                 * waits for it, so that what changes after it is found. */
                r = manager_when_looked_up(m, c, id, add_watch_looked_up, p);
                p->looking_up = r > 0;
                if (r <= 0)
                        r = manager_when_primed(m, c, id, add_watch_primed, p);
                if (r <= 0) {
                        pending_add_free(p);
                        return sd_bus_reply_method_return(msg, "u", id);
                }
        }
        /* Without its copy of the path, or the timer (out of memory), the call
         * waits for the walk and the file system, as it did before the deadline. */
        if (deadline > 0 && (!sent || (p->sent = strdup(sent))) &&
            sd_event_add_time(d->event, &p->timer, CLOCK_MONOTONIC, deadline, 0, add_watch_timeout, p) >= 0)
                return 1;
        log_debug("Failed to arm the deadline of AddWatch of %s, ignoring.", c->name);
        return 1;
}

/* When a call that came now must be answered: add_watch_timeout_ms on (CLOCK_MONOTONIC µs), 0 if unknown. */
static uint64_t add_watch_deadline(DbusIface *d) {
        uint64_t now;

        if (sd_event_now(d->event, CLOCK_MONOTONIC, &now) < 0)
                return 0;
        return now + (uint64_t) manager_get_config(d->manager)->add_watch_timeout_ms * 1000u;
}

/*
 * An AddWatch by path whose open, as the caller, is made in a worker
 * (manager_add_watch_path_async()): a path on a file system that does not
 * answer holds that worker (in the caller's own lane: one user's opens wait
 * behind each other, no one else's), never the loop. The rest is done on
 * the loop when it returns, if the client is still there, and the call is
 * answered then, or at add_watch_timeout_ms after the submission with
 * Timeout (the open is given up: what it gives is closed unused).
 * AddWatchFd the same (manager_add_watch_fd_async()): what it asks of the
 * descriptor's file system (fstat, fstatfs: a FUSE_STATFS is never answered
 * from a cache) is a job too. sent is NULL then.
 */
typedef struct OpenJob {
        DbusIface *iface;
        sd_bus_message *msg;
        char *client; /* its unique name: it may be gone at the timeout */
        char *sent;   /* the path as sent, for errors */
        uint32_t mask, flags;
        ManagerOpen *open;
        uint64_t deadline;      /* CLOCK_MONOTONIC µs: add_watch_timeout_ms after the submission */
        sd_event_source *timer; /* at the deadline */
} OpenJob;

static void open_job_free(OpenJob *j) {
        sd_event_source_disable_unref(j->timer);
        sd_bus_message_unref(j->msg);
        free(j->client);
        free(j->sent);
        free(j);
}

/* The open has not returned in add_watch_timeout_ms: the caller is told now,
 * and whatever the open gives later is closed unused. */
static int open_job_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        OpenJob *j = userdata;
        Client *c = manager_get_client(j->iface->manager, j->client);
        int r;

        manager_add_watch_cancel(j->open);
        log_info("AddWatch%s of %s on %s: its file system has not answered in %" PRIu32 " ms, answered with "
                 "Timeout; nothing will be subscribed.",
                 j->sent ? "" : "Fd", j->client, j->sent ?: "a descriptor",
                 manager_get_config(j->iface->manager)->add_watch_timeout_ms);
        if (c) { /* else gone: its call went with it */
                r = add_watch_reply(j->iface, j->msg, c, j->sent, -ETIMEDOUT, 0, NULL, 0);
                if (r < 0)
                        log_debug_errno(r, "Failed to answer AddWatch of %s, ignoring: %m", c->name);
        }
        open_job_free(j);
        return 0;
}

static void open_job_done(Client *c, int r, uint32_t id, TreeWalk *walk, void *userdata) {
        OpenJob *j = userdata;

        if (!c) {
                /* Gone meanwhile (its subscriptions went with it), or at exit
                 * (-ESHUTDOWN: the bus layer is gone). */
                open_job_free(j);
                return;
        }
        if (r >= 0)
                /* The same line as on the loop (tests and administrators look for it). */
                log_debug("%s: subscription %" PRIu32 " on %s, mask 0x%" PRIx32 ", flags 0x%" PRIx32 "%s.", c->name, id,
                          j->sent ?: "fd", j->mask, j->flags, walk ? ", its tree walked from the loop" : "");
        /* The walk and the first snapshot have what is left of the call's add_watch_timeout_ms. */
        r = add_watch_reply(j->iface, j->msg, c, j->sent, r, id, walk, j->deadline);
        if (r < 0)
                log_debug_errno(r, "Failed to answer AddWatch of %s, ignoring: %m", c->name);
        open_job_free(j);
}

/* path, or fd (sent and path NULL). */
static int add_watch_in_worker(DbusIface *d, sd_bus_message *msg, Client *c, const char *sent, const char *path, int fd,
                               uint32_t mask, uint32_t flags) {
        OpenJob *j;
        int r;

        r = account_check(&c->account, 1); /* a client over its limits costs no open */
        if (r < 0)
                return add_watch_reply(d, msg, c, sent, r, 0, NULL, 0);
        j = calloc(1, sizeof(OpenJob));
        if (!j)
                return -ENOMEM;
        *j = (OpenJob) {
                .iface = d,
                .msg = sd_bus_message_ref(msg),
                .client = strdup(c->name),
                .sent = sent ? strdup(sent) : NULL,
                .mask = mask,
                .flags = flags,
        };
        if (!j->client || (sent && !j->sent)) {
                open_job_free(j);
                return -ENOMEM;
        }
        r = path ? manager_add_watch_path_async(d->manager, c, path, mask, flags, open_job_done, j, &j->open) :
                   manager_add_watch_fd_async(d->manager, c, fd, mask, flags, open_job_done, j, &j->open);
        if (r < 0) {
                open_job_free(j);
                if (r == -EAGAIN || r == -ENOMEM)
                        return r;                                       /* the caller does it on the loop */
                return add_watch_reply(d, msg, c, sent, r, 0, NULL, 0); /* a descriptor that cannot be copied */
        }
        /* Without the timer (out of memory) the call waits for the file system, as it did before it. */
        j->deadline = add_watch_deadline(d);
        r = j->deadline > 0 ?
                sd_event_add_time(d->event, &j->timer, CLOCK_MONOTONIC, j->deadline, 0, open_job_timeout, j) :
                -EINVAL;
        if (r < 0)
                log_debug_errno(r, "Failed to arm the timeout of an AddWatch of %s, ignoring: %m", c->name);
        return 1;
}

static int method_add_watch_common(sd_bus_message *msg, DbusIface *d, bool by_fd, sd_bus_error *error) {
        Manager *m = d->manager;
        _cleanup_free_ char *path = NULL;
        const char *sent = NULL;
        uint32_t mask, flags, id;
        TreeWalk *walk = NULL;
        Client *c = NULL;
        uint64_t deadline = add_watch_deadline(d);
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
        r = bus_check_mask_flags(mask, flags, error);
        if (r < 0)
                return r;
        if (by_fd && (flags & WATCHD_FLAG_PERSIST))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "PERSIST (0x%x) follows a path: AddWatch takes one, a descriptor names an object.",
                                         WATCHD_FLAG_PERSIST);
        if (sent) {
                r = bus_path_from_call(sent, escaped, &path, error);
                if (r < 0)
                        return r;
        }

        r = bus_client_for_call(d, msg, &c, error);
        if (r < 0)
                return r;

        if (manager_get_fswork(m)) {
                r = add_watch_in_worker(d, msg, c, sent, path, by_fd ? fd : -EBADF, mask, flags);
                if (r != -EAGAIN && r != -ENOMEM)
                        return r;
        }
        if (by_fd)
                r = manager_add_watch_fd(m, c, fd, mask, flags, &id, &walk);
        else
                r = manager_add_watch_path(m, c, path, mask, flags, &id, &walk);
        if (r < 0) {
                _cleanup_free_ char *what = bus_what_of(sent);

                return bus_error_for(d->manager, r, what ?: "the path", error);
        }

        log_debug("%s: subscription %" PRIu32 " on %s%s, mask 0x%" PRIx32 ", flags 0x%" PRIx32 "%s.", c->name, id,
                  by_fd ? "fd " : "", by_fd ? "" : sent, mask, flags, walk ? ", its tree walked from the loop" : "");
        return add_watch_reply(d, msg, c, sent, 0, id, walk, deadline);
}

int bus_method_add_watch(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_add_watch_common(msg, userdata, false, error);
}

int bus_method_add_watch_fd(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_add_watch_common(msg, userdata, true, error);
}

int bus_method_remove_watch(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
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
                return bus_error_for(d->manager, -WATCHD_E_NO_SUCH_WATCH, what, error);
        r = manager_remove_watch(d->manager, c, id);
        if (r < 0)
                return bus_error_for(d->manager, r, what, error);
        return sd_bus_reply_method_return(msg, NULL);
}

int bus_method_list_watches(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
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
int bus_method_get_stats(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        DbusIface *d = userdata;
        Manager *m = d->manager;
        SubscriptionsStats own = {};
        uint64_t queued = 0;
        ManagerStats st;
        bool known, all;
        uid_t uid;
        int r;

        manager_get_stats(m, &st);
        known = bus_sender_uid(msg, &uid) >= 0;
        all = known && (uid == 0 || uid == geteuid());
        if (known)
                manager_get_user_stats(m, uid, &own);

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{sv}");
        if (r >= 0)
                r = append_stat(reply, "backend", 's', backend_name(manager_get_backend(m)));
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
                r = append_u(reply, "own_clients", own.clients);
                if (r >= 0)
                        r = append_u(reply, "own_subscriptions", own.subscriptions);
                if (r >= 0)
                        r = append_u(reply, "own_watches", own.watches);
                if (r >= 0)
                        r = append_t(reply, "own_events_delivered", own.events_delivered);
                if (r >= 0)
                        r = append_t(reply, "own_pending_events", own.pending_events);
                if (r >= 0)
                        r = append_t(reply, "own_events_dropped", own.events_dropped);
                if (r >= 0)
                        r = append_t(reply, "own_overflows", own.overflows);
        }
        if (r >= 0 && all) {
                (void) sd_bus_get_n_queued_write(d->bus, &queued);
                r = append_t(reply, "events_read", st.events_read);
                if (r >= 0)
                        r = append_t(reply, "kernel_reads", st.kernel_reads);
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
                        r = append_t(reply, "self_events_dropped", st.self_events_dropped);
                if (r >= 0)
                        r = append_t(reply, "bus_queued_messages", queued);
                if (r >= 0 && manager_get_fswork(m)) {
                        FsWorkStats fs;

                        fswork_get_stats(manager_get_fswork(m), &fs);
                        r = append_t(reply, "fs_jobs", fs.jobs);
                        if (r >= 0)
                                r = append_u(reply, "fs_stalled", fs.stalled_lanes);
                        if (r >= 0)
                                r = append_t(reply, "fs_stalls", fs.stalls);
                }
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/*
 * ListClients: who watchd serves (watchctl clients). A client is a bus
 * connection that made a subscription (or a stream, a durable one); each
 * entry is its unique name, its pid and uid as the bus reported them at its
 * first call (pid 0 if the bus did not say), its subscriptions and the
 * kernel watches charged to it. Root sees every client, any other caller
 * those of its own uid. No command line: watchd's unit hides other users'
 * processes from it (ProtectProc=invisible), and the caller can read
 * /proc/PID itself as far as it may (watchctl does).
 */
int bus_method_list_clients(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        DbusIface *d = userdata;
        uid_t uid;
        int r;

        if (bus_sender_uid(msg, &uid) < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "The bus did not tell who you are, so no client is shown to you.");
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(suuuu)");
        if (r < 0)
                return r;
        LIST_FOREACH(clients, bc, d->clients) {
                const Client *c = bc->client;

                if (uid != 0 && c->account.uid != uid)
                        continue;
                r = sd_bus_message_append(reply, "(suuuu)", c->name, (uint32_t) c->pid, (uint32_t) c->account.uid,
                                          c->n_subscriptions, c->account.n_watches);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}
