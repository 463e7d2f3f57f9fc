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

/* A RECURSIVE AddWatch whose walk goes on from the loop, or one whose polled
 * directories' first snapshots are taken in workers: answered when they end. */
typedef struct PendingAdd {
        DbusIface *iface;
        sd_bus_message *msg;
        Client *client;
        uint32_t id;
} PendingAdd;

static void add_watch_primed(void *userdata) {
        _cleanup_free_ PendingAdd *p = userdata;
        _cleanup_(message_unrefp) sd_bus_message *msg = p->msg;
        int r;

        r = sd_bus_reply_method_return(msg, "u", p->id);
        if (r < 0)
                log_debug_errno(r, "Failed to answer AddWatch of subscription %" PRIu32 ", ignoring: %m", p->id);
}

static void add_watch_done(uint32_t id, int r, void *userdata) {
        _cleanup_free_ PendingAdd *p = userdata;
        _cleanup_(message_unrefp) sd_bus_message *msg = p->msg;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        const char *path = NULL;

        if (r >= 0) {
                p->id = id;
                if (manager_when_primed(p->iface->manager, p->client, id, add_watch_primed, p) > 0) {
                        TAKE_PTR(p);
                        TAKE_PTR(msg);
                        return; /* answered when its first snapshots are taken */
                }
        }
        if (r == -ECANCELED)
                r = sd_bus_reply_method_errorf(msg, SD_BUS_ERROR_FAILED, "The daemon is exiting.");
        else if (r < 0) {
                if (strcmp(sd_bus_message_get_signature(msg, true), "suu") == 0) {
                        (void) sd_bus_message_rewind(msg, true);
                        (void) sd_bus_message_read(msg, "s", &path);
                }
                what = bus_what_of(path);
                (void) bus_error_for(p->iface->manager, r, what ?: "the path", &error);
                r = sd_bus_reply_method_error(msg, &error);
        } else
                r = sd_bus_reply_method_return(msg, "u", id);
        if (r < 0)
                log_debug_errno(r, "Failed to answer AddWatch of subscription %" PRIu32 ", ignoring: %m", id);
}

/* The answer of an AddWatch whose subscription exists (id) or failed (r). */
static int add_watch_reply(DbusIface *d, sd_bus_message *msg, Client *c, const char *sent, int r, uint32_t id,
                           TreeWalk *walk) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Manager *m = d->manager;

        if (r < 0) {
                _cleanup_free_ char *what = bus_what_of(sent);

                (void) bus_error_for(m, r, what ?: "the path", &error);
                return sd_bus_reply_method_error(msg, &error);
        }
        if (walk) {
                /* A big tree: answered when its walk ends (add_watch_done), its
                 * events already flowing for the part watched so far. */
                PendingAdd *p = malloc(sizeof(PendingAdd));

                if (!p)
                        return -ENOMEM; /* the walk goes on; its subscription stays, unanswered: rare enough */
                *p = (PendingAdd) { d, sd_bus_message_ref(msg), c, id };
                tree_walk_set_done(walk, add_watch_done, p);
                return 1;
        }
        if (manager_get_fswork(m)) {
                /* A polled directory's first snapshot is taken in a worker: the
                 * answer waits for it, so that what changes after it is found. */
                PendingAdd *p = malloc(sizeof(PendingAdd));

                if (!p)
                        return -ENOMEM;
                *p = (PendingAdd) { d, sd_bus_message_ref(msg), c, id };
                r = manager_when_primed(m, c, id, add_watch_primed, p);
                if (r > 0)
                        return 1;
                sd_bus_message_unref(p->msg);
                free(p);
        }
        return sd_bus_reply_method_return(msg, "u", id);
}

/*
 * An AddWatch by path whose open, as the caller, is made in a worker: a
 * path on a file system that does not answer holds that worker (in the
 * caller's own lane: one user's opens wait behind each other, no one
 * else's), never the loop. The worker also asks the file system what
 * remote.c would (remote_hint_probe()). The rest is done on the loop when
 * it returns, if the client is still there.
 */
typedef struct OpenJob {
        DbusIface *iface;
        sd_bus_message *msg;
        char *client; /* its unique name: it may be gone at the end */
        char *sent;   /* the path as sent, for errors */
        char *path;   /* simplified */
        uint32_t mask, flags;
        int fd; /* or -errno */
        struct stat st;
        RemoteHint hint;
        sd_event_source *timer; /* add_watch_timeout_ms after the submission */
        bool answered;          /* with Timeout, by the timer: the open's result is thrown away */
} OpenJob;

static void open_job_free(OpenJob *j) {
        sd_event_source_disable_unref(j->timer);
        sd_bus_message_unref(j->msg);
        safe_close(j->fd);
        free(j->client);
        free(j->sent);
        free(j->path);
        free(j);
}

static void open_job_run(void *data) {
        OpenJob *j = data;

        j->fd = access_open_at(AT_FDCWD, j->path, j->flags & WATCHD_FLAG_ONLYDIR, j->flags & WATCHD_FLAG_DONT_FOLLOW,
                               &j->st);
        if (j->fd >= 0)
                remote_hint_probe(j->fd, &j->st, &j->hint);
}

/* The open has not returned in add_watch_timeout_ms: the caller is told now,
 * and whatever the open gives later is closed unused (open_job_done()). */
static int open_job_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        OpenJob *j = userdata;
        Client *c = manager_get_client(j->iface->manager, j->client);
        int r;

        j->timer = sd_event_source_disable_unref(j->timer);
        j->answered = true;
        log_info("AddWatch of %s on %s: its file system has not answered in %" PRIu32 " ms, answered with "
                 "Timeout; nothing will be subscribed.",
                 j->client, j->sent, manager_get_config(j->iface->manager)->add_watch_timeout_ms);
        if (!c)
                return 0; /* gone: its call went with it */
        r = add_watch_reply(j->iface, j->msg, c, j->sent, -ETIMEDOUT, 0, NULL);
        if (r < 0)
                log_debug_errno(r, "Failed to answer AddWatch of %s, ignoring: %m", c->name);
        return 0;
}

static void open_job_done(void *data, int error) {
        OpenJob *j = data;
        Manager *m = j->iface->manager;
        TreeWalk *walk = NULL;
        uint32_t id = 0;
        Client *c;
        int r;

        if (error == -ESHUTDOWN) {
                open_job_free(j); /* at exit: the bus layer is gone */
                return;
        }
        if (j->answered) {
                log_debug("AddWatch of %s on %s: its open returned after its Timeout (%s), closed unused.", j->client,
                          j->sent,
                          error < 0          ? "not run" :
                                  j->fd >= 0 ? "opened" :
                                               "failed");
                open_job_free(j);
                return;
        }
        c = manager_get_client(m, j->client);
        if (!c) {
                open_job_free(j); /* gone meanwhile: its subscriptions went with it */
                return;
        }
        if (error < 0)
                r = error;
        else {
                r = manager_add_watch_opened(m, c, j->path, j->fd, &j->st, &j->hint, j->mask, j->flags, &id, &walk);
                j->fd = -EBADF; /* taken */
        }
        if (r >= 0)
                /* The same line as on the loop (tests and administrators look for it). */
                log_debug("%s: subscription %" PRIu32 " on %s, mask 0x%" PRIx32 ", flags 0x%" PRIx32 "%s.", c->name, id,
                          j->sent, j->mask, j->flags, walk ? ", its tree walked from the loop" : "");
        r = add_watch_reply(j->iface, j->msg, c, j->sent, r, id, walk);
        if (r < 0)
                log_debug_errno(r, "Failed to answer AddWatch of %s, ignoring: %m", c->name);
        open_job_free(j);
}

/* A lane of its own per user for opens by path: the file system is not known before the open. */
#define OPEN_LANE(uid) ((dev_t) (UINT64_C(1) << 63 | (uint64_t) (uid)))

static int add_watch_in_worker(DbusIface *d, sd_bus_message *msg, Client *c, const char *sent, const char *path,
                               uint32_t mask, uint32_t flags) {
        OpenJob *j;
        int r;

        r = account_check(&c->account, 1); /* a client over its limits costs no open */
        if (r < 0)
                return add_watch_reply(d, msg, c, sent, r, 0, NULL);
        j = calloc(1, sizeof(OpenJob));
        if (!j)
                return -ENOMEM;
        *j = (OpenJob) {
                .iface = d,
                .msg = sd_bus_message_ref(msg),
                .client = strdup(c->name),
                .sent = strdup(sent),
                .path = path_simplify(path),
                .mask = mask,
                .flags = flags,
                .fd = -EBADF,
        };
        if (!j->client || !j->sent || !j->path) {
                open_job_free(j);
                return -ENOMEM;
        }
        r = fswork_submit(manager_get_fswork(d->manager), OPEN_LANE(c->caller.uid), &c->caller, open_job_run,
                          open_job_done, j);
        if (r < 0) {
                open_job_free(j);
                return r; /* the caller opens on the loop */
        }
        /* Without the timer (out of memory) the call waits for the file system, as it did before it. */
        r = sd_event_add_time_relative(d->event, &j->timer, CLOCK_MONOTONIC,
                                       (uint64_t) manager_get_config(d->manager)->add_watch_timeout_ms * 1000u, 0,
                                       open_job_timeout, j);
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

        if (!by_fd && manager_get_fswork(m)) {
                r = add_watch_in_worker(d, msg, c, sent, path, mask, flags);
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
        return add_watch_reply(d, msg, c, sent, 0, id, walk);
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
