/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-start - starting, adding again and cancelling subscriptions (see watchd-start.h)
 */

#include "watchd-route.h"
#include "watchd-start.h"
#include "watchd-wire.h"

/* One AddWatch (a start, or an add again after a restart) until its answer. */
typedef struct StartOp {
        gint ref_count;
        Core *core;              /* reference */
        WatchdSubscription *sub; /* reference */
        gboolean readd;
        gboolean follow;  /* a readd of PERSIST done here: the daemon cannot (core_follow_again()) */
        guint generation; /* core->generation when sent (readd) */
        guint32 serial;
        GTask *task;         /* an async start; NULL for sync and readd */
        gboolean return_sub; /* the task returns the subscription (add_watch) */
        gboolean sync;       /* a sync start: its caller disconnects the cancellable */
        GCancellable *cancellable;
        gulong cancel_id;
        GSource *timeout;
        /* under core->lock */
        gboolean finished;  /* the reply came (or the call failed) */
        gboolean abandoned; /* given up (cancel, timeout): a late id is removed */
        GError *error;      /* the outcome for a sync caller */
} StartOp;

static StartOp *start_op_ref(StartOp *op) {
        g_atomic_int_inc(&op->ref_count);
        return op;
}

static void start_op_unref(gpointer p) {
        StartOp *op = p;

        if (!g_atomic_int_dec_and_test(&op->ref_count))
                return;
        g_assert(!op->task);
        if (op->timeout) {
                g_source_destroy(op->timeout);
                g_source_unref(op->timeout);
        }
        g_clear_object(&op->cancellable);
        g_clear_error(&op->error);
        g_object_unref(op->sub);
        core_unref(op->core);
        g_free(op);
}

static gboolean error_means_gone(const GError *error) {
        return g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) ||
                g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER) ||
                g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NO_REPLY) ||
                g_error_matches(error, WATCHD_ERROR, WATCHD_ERROR_DAEMON_GONE) ||
                g_error_matches(error, WATCHD_ERROR, WATCHD_ERROR_NOT_RUNNING);
}

/* The arguments of AddWatch for sub: the path as it is, or in the escaped
 * form with PATH_ESCAPED when a D-Bus string cannot hold it (watchd(8),
 * FILE NAMES). PERSIST goes only to a watchd that says "persistent" (an
 * older one refuses the flag): for another the library follows the path
 * itself (core_follow_again()). PACKED goes to a watchd that says
 * "packed-events", whether records come in the stream or not: if the stream
 * ends they come as signals, and packed ones cost it and the bus less.
 * Needs no lock: a subscription's path, mask and flags never change; caps
 * is the daemon's. */
static GVariant *add_watch_params(WatchdSubscription *sub, WatchdCapabilities caps) {
        const char *path = sub->path;
        guint32 mask = sub->mask, flags = sub->flags;
        g_autofree char *escaped = NULL;

        if (!(caps & WATCHD_CAPABILITY_PERSISTENT))
                flags &= ~(guint32) WATCHD_WATCH_PERSIST;
        if (caps & WATCHD_CAPABILITY_PACKED_EVENTS)
                flags |= WATCHD_WIRE_PACKED;
        if (!watchd_wire_path_needs_escape(path))
                return g_variant_new("(suu)", path, mask, flags);
        escaped = watchd_wire_path_escape(path);
        return g_variant_new("(suu)", escaped, mask, flags | WATCHD_WIRE_PATH_ESCAPED);
}

/* Gives up op (lock held): a late id will be removed. Returns the task to
 * complete with error once the lock is released, if there is one. */
static GTask *start_op_abandon(Core *core, StartOp *op, const GError *error) {
        SubPrivate *p = PRIV(op->sub);
        WatchdSubscription *ref = NULL;

        if (op->finished || op->abandoned)
                return NULL;
        op->abandoned = TRUE;
        op->error = g_error_copy(error);
        if (p->start == op) {
                p->start = NULL;
                if (op->readd)
                        p->state = p->cancelled ? SUB_ENDED : SUB_WAITING;
                else if (!p->cancelled) {
                        p->state = SUB_NEW;
                        ref = core_steal_live(core, op->sub);
                }
        }
        g_cond_broadcast(&core->cond);
        if (ref)
                /* The caller holds the subscription (it is starting it), so
                 * this is not the last reference. */
                g_object_unref(ref);
        return g_steal_pointer(&op->task);
}

static void start_op_return(StartOp *op, GTask *task, const GError *error) {
        if (!task)
                return;
        if (error)
                g_task_return_error(task, g_error_copy(error));
        else if (op->return_sub)
                g_task_return_pointer(task, g_object_ref(op->sub), g_object_unref);
        else
                g_task_return_boolean(task, TRUE);
        g_object_unref(task);
}

static void core_send_remove(Core *core, guint32 id) {
        /* No answer awaited: an id that is gone already is no harm. */
        if (core->bus)
                (void) watchd_bus_call(core->bus, WATCHD_BUS_NAME, WATCHD_INTERFACE, "RemoveWatch",
                                       g_variant_new("(u)", id), NULL, FALSE, NULL, NULL, NULL);
}

static void core_readd_done(Core *core, StartOp *op) {
        if (!op->readd || op->follow || op->generation != core->generation || core->readds_pending == 0)
                return;
        if (--core->readds_pending == 0 && core->gone) {
                core->gone = FALSE;
                core_queue_notice(core, ITEM_DAEMON_RESTARTED, NULL, 0, NULL, NULL);
        }
}

/* The answer to an AddWatch: on GDBus's worker thread, or on the
 * thread that saw the call fail. Owns the reference given with the call. */
static void start_op_on_reply(gpointer userdata, const char *sender, GVariant *body, const GError *error) {
        StartOp *op = userdata;
        Core *core = op->core;
        SubPrivate *p = PRIV(op->sub);
        g_autoptr(GError) err = error ? g_error_copy(error) : NULL;
        GTask *task = NULL;
        guint32 id = 0;

        if (!err && !g_variant_is_of_type(body, G_VARIANT_TYPE("(u)")))
                err = g_error_new(WATCHD_ERROR, WATCHD_ERROR_PROTOCOL, "AddWatch answered with type %s",
                                  g_variant_get_type_string(body));
        else if (!err)
                g_variant_get(body, "(u)", &id);

        g_mutex_lock(&core->lock);
        core->adds_in_flight--;
        if (!err && core->owner && g_strcmp0(sender, core->owner) != 0)
                /* Answered by a daemon that has left since. */
                err = g_error_new_literal(WATCHD_ERROR, WATCHD_ERROR_DAEMON_GONE, "watchd left the bus");
        if (!err) {
                /* An id is never 0 and never given twice (watchd(8)): such an
                 * answer names no subscription of its own, and removing it
                 * could end another one. */
                const char *bad = id == 0                                        ? "which is no id" :
                        g_hash_table_contains(core->by_id, GUINT_TO_POINTER(id)) ? "the id of another subscription" :
                        core_id_ended(core, id)                                  ? "an id it gave before" :
                                                                                   NULL;

                if (bad)
                        err = g_error_new(WATCHD_ERROR, WATCHD_ERROR_PROTOCOL, "watchd answered AddWatch with %u, %s",
                                          id, bad);
        } else if (!error_means_gone(err))
                /* Records it sent under the id it would have given (a walk undone
                 * half-way) are nobody's now. */
                core->unclaimed_orphans = TRUE;
        if (op->abandoned) {
                if (!err) {
                        core_send_remove(core, id);
                        core_remember_ended(core, id);
                        core_drop_unclaimed_id(core, id);
                }
        } else if (!err) {
                if (!core->owner) {
                        /* Started by this call (bus activation); its
                         * NameOwnerChanged has not been read yet. */
                        core->owner = g_strdup(sender);
                        core->owner_known = TRUE;
                }
                p->start = NULL;
                p->id = p->last_id = id;
                p->state = SUB_ACTIVE;
                g_hash_table_insert(core->by_id, GUINT_TO_POINTER(id), op->sub);
                /* Added again, it is at its own path for this watchd. */
                core_set_current_path(core, op->sub, p->canonical);
                if (op->readd)
                        core_queue_notice(core, ITEM_OVERFLOW, op->sub,
                                          op->follow ? WATCHD_OVERFLOW_FOLLOWED : WATCHD_OVERFLOW_RESTARTED, NULL, NULL);
                core_claim(core, op->sub, sender, id);
        } else {
                p->start = NULL;
                if (op->readd && error_means_gone(err)) {
                        p->state = SUB_WAITING; /* the next owner adds it */
                        if (op->generation != core->generation && core->owner && !p->cancelled)
                                /* That next owner came before this answer. */
                                core_readd_one(core, op->sub);
                } else if (op->readd)
                        core_end_sub(core, op->sub, WATCHD_REMOVED_ERROR, err->message, err);
                else {
                        WatchdSubscription *ref = core_steal_live(core, op->sub);

                        p->state = SUB_NEW;
                        if (ref)
                                g_object_unref(ref); /* op holds one */
                }
        }
        core_readd_done(core, op);
        if (core->adds_in_flight == 0) {
                gboolean orphans = core->unclaimed_orphans;

                /* What no answer claimed is of ids watchd never gave. */
                core->unclaimed_orphans = FALSE;
                if (core_drop_unclaimed(core, core->owner) && !orphans && !core->shared_connection)
                        core_violation(core, VIOLATION_UNKNOWN_ID,
                                       "sent records of a subscription it never made (before an answer)");
        }
        op->finished = TRUE;
        if (!op->abandoned) {
                op->error = err ? g_error_copy(err) : NULL;
                task = g_steal_pointer(&op->task);
        }
        g_cond_broadcast(&core->cond);
        g_mutex_unlock(&core->lock);

        if (op->timeout)
                g_source_destroy(op->timeout);
        if (op->cancel_id && !op->sync)
                g_cancellable_disconnect(op->cancellable, op->cancel_id);
        start_op_return(op, task, err);
        start_op_unref(op);
}

static void start_op_on_cancelled(GCancellable *cancellable, gpointer userdata) {
        StartOp *op = userdata;
        g_autoptr(GError) error = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "Operation was cancelled");
        GTask *task;

        g_mutex_lock(&op->core->lock);
        task = start_op_abandon(op->core, op, error);
        g_mutex_unlock(&op->core->lock);
        start_op_return(op, task, error);
}

static gboolean start_op_on_timeout(gpointer userdata) {
        StartOp *op = userdata;
        g_autoptr(GError) error = g_error_new(G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "watchd did not answer in %u ms",
                                              op->core->call_timeout_ms);
        GTask *task;

        g_mutex_lock(&op->core->lock);
        task = start_op_abandon(op->core, op, error);
        g_mutex_unlock(&op->core->lock);
        start_op_return(op, task, error);
        return G_SOURCE_REMOVE;
}

static void start_op_connect_cancellable(StartOp *op, GCancellable *cancellable) {
        if (!cancellable)
                return;
        op->cancellable = g_object_ref(cancellable);
        /* Runs at once if it is cancelled already; no lock is held here. */
        op->cancel_id = g_cancellable_connect(cancellable, G_CALLBACK(start_op_on_cancelled), start_op_ref(op),
                                              start_op_unref);
}

/* An op whose call was never sent: only its cancellation to undo. */
static void start_op_finish_unsent(StartOp *op) {
        if (op->cancel_id)
                g_cancellable_disconnect(op->cancellable, op->cancel_id);
        op->cancel_id = 0;
        start_op_unref(op);
}

static StartOp *start_op_new(Core *core, WatchdSubscription *sub, gboolean readd) {
        StartOp *op = g_new0(StartOp, 1);

        op->ref_count = 1;
        op->core = core_ref(core);
        op->sub = g_object_ref(sub);
        op->readd = readd;
        return op;
}

/* Sends op's call (lock held); on failure returns FALSE with error and
 * changes nothing. */
static gboolean core_send_add(Core *core, StartOp *op, GVariant *params, GError **error) {
        if (!core->bus) {
                g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "The client is closed");
                return FALSE;
        }
        op->serial = watchd_bus_call(core->bus, WATCHD_BUS_NAME, WATCHD_INTERFACE, "AddWatch", params, NULL, TRUE,
                                     start_op_on_reply, start_op_ref(op), error);
        if (op->serial == 0) {
                start_op_unref(op); /* the call's reference */
                return FALSE;
        }
        core->adds_in_flight++;
        op->generation = core->generation;
        PRIV(op->sub)->start = op;
        PRIV(op->sub)->state = SUB_STARTING;
        return TRUE;
}

static StartOp *core_prepare_start(Core *core, WatchdSubscription *sub, GVariant **ret_params) {
        WatchdCapabilities caps;

        g_mutex_lock(&core->lock);
        caps = core->caps;
        g_mutex_unlock(&core->lock);
        *ret_params = g_variant_ref_sink(add_watch_params(sub, caps));
        return start_op_new(core, sub, FALSE);
}

/* Lock held: whether sub may start now. */
static gboolean core_check_startable(Core *core, WatchdSubscription *sub, GError **error) {
        if (core->closed) {
                g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "The client is closed");
                return FALSE;
        }
        if (PRIV(sub)->state != SUB_NEW || PRIV(sub)->cancelled) {
                g_set_error_literal(error, WATCHD_ERROR, WATCHD_ERROR_STATE,
                                    "The subscription was started already, or has ended");
                return FALSE;
        }
        return TRUE;
}

/* Whether the library follows sub's path itself now that watchd removed
 * it for reason: PERSIST asked of a watchd without "persistent", which
 * ends the subscription when its object goes. */
gboolean core_follows_path(Core *core, WatchdSubscription *sub, WatchdRemovedReason reason) {
        return (sub->flags & WATCHD_WATCH_PERSIST) && !(core->caps & WATCHD_CAPABILITY_PERSISTENT) &&
                !PRIV(sub)->cancelled && (reason == WATCHD_REMOVED_DELETED || reason == WATCHD_REMOVED_UNMOUNTED);
}

/* Lock held: sub's object went and watchd ended it; it is added again at
 * once, a pending path until the path is back (as watchd's PERSIST would
 * keep it), and emits "overflow" (WATCHD_OVERFLOW_FOLLOWED) once it is:
 * what happened at the path in between is not known. */
void core_follow_again(Core *core, WatchdSubscription *sub) {
        g_autoptr(GVariant) params = g_variant_ref_sink(add_watch_params(sub, core->caps));
        g_autoptr(GError) error = NULL;
        StartOp *op = start_op_new(core, sub, TRUE);

        op->follow = TRUE;
        core_forget_id(core, sub);
        PRIV(sub)->state = SUB_WAITING;
        if (!core_send_add(core, op, params, &error))
                core_end_sub(core, sub, WATCHD_REMOVED_ERROR, error->message, error);
        start_op_unref(op);
}

/* Lock held: adds sub again for the daemon that now owns the name. */
void core_readd_one(Core *core, WatchdSubscription *sub) {
        g_autoptr(GVariant) params = g_variant_ref_sink(add_watch_params(sub, core->caps));
        g_autoptr(GError) error = NULL;
        StartOp *op = start_op_new(core, sub, TRUE);

        if (!core_send_add(core, op, params, &error))
                core_end_sub(core, sub, WATCHD_REMOVED_ERROR, error->message, error);
        else
                core->readds_pending++;
        start_op_unref(op);
}

void core_start_subscription(Core *core, WatchdSubscription *sub, gboolean held, GCancellable *cancellable, GTask *task) {
        g_autoptr(GVariant) params = NULL;
        g_autoptr(GError) error = NULL;
        StartOp *op;

        if (g_task_return_error_if_cancelled(task)) {
                g_object_unref(task);
                return;
        }
        op = core_prepare_start(core, sub, &params);
        op->task = task;
        op->return_sub = g_task_get_source_object(task) == (gpointer) sub->client;
        start_op_connect_cancellable(op, cancellable);

        g_mutex_lock(&core->lock);
        if (op->abandoned) {
                /* Cancelled since the check: the handler returned the task. */
                g_mutex_unlock(&core->lock);
                start_op_finish_unsent(op);
                return;
        }
        if (!core_check_startable(core, sub, &error) || !core_send_add(core, op, params, &error)) {
                task = g_steal_pointer(&op->task);
                op->finished = TRUE;
                g_mutex_unlock(&core->lock);
                g_task_return_error(task, g_steal_pointer(&error));
                g_object_unref(task);
                start_op_finish_unsent(op);
                return;
        }
        PRIV(sub)->held = held;
        core_add_live(core, sub);
        /* Set before the lock is released, so that the reply sees it. */
        op->timeout = g_timeout_source_new(core->call_timeout_ms);
        g_source_set_callback(op->timeout, start_op_on_timeout, start_op_ref(op), start_op_unref);
        g_source_attach(op->timeout, core->context);
        g_mutex_unlock(&core->lock);
        start_op_unref(op);
}

gboolean core_start_subscription_sync(Core *core, WatchdSubscription *sub, GCancellable *cancellable, GError **error) {
        g_autoptr(GVariant) params = NULL;
        gboolean ok;
        gint64 deadline;
        StartOp *op;

        if (g_cancellable_set_error_if_cancelled(cancellable, error))
                return FALSE;
        op = core_prepare_start(core, sub, &params);
        op->sync = TRUE;
        start_op_connect_cancellable(op, cancellable);

        g_mutex_lock(&core->lock);
        if (!op->abandoned) {
                if (!core_check_startable(core, sub, error) || !core_send_add(core, op, params, error)) {
                        op->finished = TRUE;
                        g_mutex_unlock(&core->lock);
                        start_op_finish_unsent(op);
                        return FALSE;
                }
                core_add_live(core, sub);
        }
        deadline = g_get_monotonic_time() + (gint64) core->call_timeout_ms * G_TIME_SPAN_MILLISECOND;
        while (!op->finished && !op->abandoned)
                if (!g_cond_wait_until(&core->cond, &core->lock, deadline)) {
                        g_autoptr(GError) timeout = g_error_new(G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                                                "watchd did not answer in %u ms", core->call_timeout_ms);

                        (void) start_op_abandon(core, op, timeout);
                }
        ok = op->error == NULL;
        if (!ok)
                g_propagate_error(error, g_error_copy(op->error));
        g_mutex_unlock(&core->lock);

        start_op_finish_unsent(op); /* disconnects the cancellable, drops our reference */
        return ok;
}

void core_cancel_subscription(Core *core, WatchdSubscription *sub) {
        g_autoptr(GError) error = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "The subscription was cancelled");
        SubPrivate *p = PRIV(sub);
        WatchdSubscription *ref;
        StartOp *op = NULL;
        GTask *task = NULL;

        g_mutex_lock(&core->lock);
        if (p->cancelled) {
                g_mutex_unlock(&core->lock);
                return;
        }
        g_atomic_int_set(&p->cancelled, TRUE);
        if (p->start) {
                op = start_op_ref(p->start);
                task = start_op_abandon(core, op, error);
        }
        if (p->state == SUB_ACTIVE)
                core_send_remove(core, p->id);
        core_forget_id(core, sub);
        p->state = SUB_ENDED;
        ref = core_steal_live(core, sub);
        g_mutex_unlock(&core->lock);

        if (op) {
                start_op_return(op, task, error);
                start_op_unref(op);
        }
        if (ref)
                g_object_unref(ref);
}

void core_release_hold(Core *core, WatchdSubscription *sub) {
        g_mutex_lock(&core->lock);
        PRIV(sub)->held = FALSE;
        core_wake(core);
        g_mutex_unlock(&core->lock);
}
