/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-client - a connection to watchd and the subscriptions made on it
 *
 * Threads. Three kinds meet here:
 *   - GDBus's worker thread reads every message (watchd-bus.c's filter) and
 *     calls core_on_*(): replies to AddWatch, the name's owner changes, the
 *     daemon's signals. It turns them into Items on one queue, in the order
 *     the messages came, under core->lock.
 *   - The client's GMainContext (the thread-default context of the thread
 *     that made the client) runs the dispatch source, which takes the Items
 *     off the queue and emits the signals of the client and of its
 *     subscriptions, without the lock. Every signal is emitted there.
 *   - Any thread may call the public functions: they take core->lock for a
 *     moment, send a call, and the _sync ones wait on core->cond for the
 *     worker thread to handle the reply. None needs a main loop to run.
 * The lock is never held while a signal is emitted or a GTask completes.
 *
 * Why a Core apart from the GObject: GDBus may run a filter once more after
 * it was removed, so what the filter touches (the Core) is freed by the
 * filter's destroy notify, not by the client's finalize.
 *
 * Ids. watchd names a subscription by the id AddWatch returns, and may send
 * events of that id before the answer (a RECURSIVE walk does). While an
 * AddWatch is waiting, records of ids not known yet are kept (unclaimed)
 * and handed to the subscription when its answer comes; once none waits,
 * they are dropped (they belong to subscriptions already cancelled).
 *
 * Restarts. When the owner of org.example.Inotify changes, every active
 * subscription waits; when an owner appears, each is added again, then
 * emits "overflow" (WATCHD_OVERFLOW_RESTARTED) before its new events, and
 * the client emits "daemon-restarted" once all are back (or removed, if the
 * new daemon refused one).
 *
 * The stream. A watchd whose Capabilities say "stream" is asked, once its
 * properties are read, for this connection's record stream (OpenStream,
 * watchd(8) STREAM): from its reply on, the records come on that socket,
 * read by a thread of watchd-stream.c, and no longer as signals. Signals
 * before the reply are handled before it (the filter sees them in order),
 * the stream's records after it: one order, as the daemon sent them. The
 * records of either way go through the same core_on_record() and friends,
 * the stream's with the name of the daemon that gave it as their sender.
 * A reader is freed (its thread joined) without core->lock held, since its
 * thread takes the lock for each read.
 */

#include <fcntl.h>
#include <gio/gunixfdlist.h>

#include "watchd-private.h"
#include "watchd-bus.h"
#include "watchd-stream.h"
#include "watchd-wire.h"

#define DEFAULT_MAX_QUEUED_EVENTS 65536
#define DEFAULT_CALL_TIMEOUT_MS 25000
#define MAX_UNCLAIMED 65536

/**
 * watchd_error_quark:
 *
 * Returns: the %WATCHD_ERROR domain
 */
GQuark watchd_error_quark(void) {
        return g_quark_from_static_string("watchd-error-quark");
}

typedef enum ItemKind {
        ITEM_EVENTS,            /* a subscription's "events" */
        ITEM_OVERFLOW,          /* a subscription's "overflow" */
        ITEM_REMOVED,           /* a subscription's "removed"; it has ended */
        ITEM_DAEMON_VANISHED,   /* the client's "daemon-vanished", notify::daemon-running */
        ITEM_DAEMON_APPEARED,   /* notify::daemon-running */
        ITEM_DAEMON_RESTARTED,  /* the client's "daemon-restarted" */
        ITEM_CLOSED,            /* the client's "closed" */
} ItemKind;

typedef struct Item {
        ItemKind kind;
        WatchdSubscription *sub;        /* reference; NULL for the client's own items */
        GPtrArray *events;              /* ITEM_EVENTS: WatchdEvent* */
        int reason;                     /* WatchdOverflowReason, WatchdRemovedReason */
        char *detail;                   /* ITEM_REMOVED */
        GError *error;                  /* ITEM_REMOVED, ITEM_CLOSED */
} Item;

/* A record or notice for an id not known yet. */
typedef struct Unclaimed {
        char *sender;
        guint32 id;
        ItemKind kind;                  /* ITEM_EVENTS (one event), ITEM_OVERFLOW or ITEM_REMOVED */
        WatchdEvent *event;
        char *reason;
} Unclaimed;

typedef struct Core Core;

/* One AddWatch (a start, or an add again after a restart) until its answer. */
typedef struct StartOp {
        gint ref_count;
        Core *core;                     /* reference */
        WatchdSubscription *sub;        /* reference */
        gboolean readd;
        gboolean follow;                /* a readd of PERSIST done here: the daemon cannot (core_follow_again()) */
        guint generation;               /* core->generation when sent (readd) */
        guint32 serial;
        GTask *task;                    /* an async start; NULL for sync and readd */
        gboolean return_sub;            /* the task returns the subscription (add_watch) */
        gboolean sync;                  /* a sync start: its caller disconnects the cancellable */
        GCancellable *cancellable;
        gulong cancel_id;
        GSource *timeout;
        /* under core->lock */
        gboolean finished;              /* the reply came (or the call failed) */
        gboolean abandoned;             /* given up (cancel, timeout): a late id is removed */
        GError *error;                  /* the outcome for a sync caller */
} StartOp;

struct Core {
        gint ref_count;
        GWeakRef client;                /* the WatchdClient, to emit its signals */
        GMainContext *context;
        GSource *dispatch;
        WatchdBus *bus;

        GMutex lock;                    /* everything below */
        GCond cond;
        gboolean owner_known;           /* GetNameOwner answered */
        char *owner;                    /* unique name of watchd, NULL if none */
        gboolean gone;                  /* the owner left; its subscriptions wait to be added again */
        guint generation;               /* bumped at each change of owner */
        guint readds_pending;
        gboolean props_pending;         /* GetAll sent, not answered */
        char *version;
        WatchdCapabilities caps;
        GHashTable *by_id;              /* id -> WatchdSubscription* (the reference is in live) */
        GHashTable *live;               /* WatchdSubscription* -> itself, referenced: started, not ended */
        GHashTable *by_dir;             /* canonical path -> GPtrArray of live WatchdSubscription* */
        guint adds_in_flight;
        GQueue unclaimed;               /* Unclaimed* */
        gboolean unclaimed_lost;        /* some were dropped at MAX_UNCLAIMED */
        GQueue items;                   /* Item*, for the dispatch source */
        guint queued_events;
        guint max_queued_events;
        guint call_timeout_ms;
        gboolean closed;
        gboolean use_stream;            /* the client's "use-stream" */
        gboolean stream_pending;        /* OpenStream sent, not answered */
        WatchdStreamReader *stream;     /* the stream of stream_owner, or NULL */
        char *stream_owner;             /* the daemon that gave it; NULL once it ended */
        WatchdDurableRouter *durables;  /* the stream's durable frames, to the WatchdDurables */
};

struct _WatchdClient {
        GObject parent_instance;
        GBusType bus_type;
        char *address;
        GDBusConnection *given_connection;
        Core *core;
        gboolean initialized;
};

enum {
        PROP_0,
        PROP_BUS_TYPE,
        PROP_ADDRESS,
        PROP_CONNECTION,
        PROP_DAEMON_RUNNING,
        PROP_MAX_QUEUED_EVENTS,
        PROP_CALL_TIMEOUT,
        PROP_USE_STREAM,
        N_PROPS,
};
static GParamSpec *props[N_PROPS];

enum {
        SIGNAL_DAEMON_VANISHED,
        SIGNAL_DAEMON_RESTARTED,
        SIGNAL_CLOSED,
        N_SIGNALS,
};
static guint signals[N_SIGNALS];

static void client_initable_iface_init(GInitableIface *iface);

G_DEFINE_TYPE_WITH_CODE(WatchdClient, watchd_client, G_TYPE_OBJECT,
                        G_IMPLEMENT_INTERFACE(G_TYPE_INITABLE, client_initable_iface_init)
                        G_IMPLEMENT_INTERFACE(G_TYPE_ASYNC_INITABLE, NULL))

#define PRIV(sub) watchd_subscription_get_private(sub)

/* ------------------------------------------------------------------------ */
/* Core and items */

static Core *core_ref(Core *core) {
        g_atomic_int_inc(&core->ref_count);
        return core;
}

static void item_free(Item *it) {
        g_clear_object(&it->sub);
        g_clear_pointer(&it->events, g_ptr_array_unref);
        g_free(it->detail);
        g_clear_error(&it->error);
        g_free(it);
}

static void unclaimed_free(Unclaimed *u) {
        g_free(u->sender);
        g_clear_pointer(&u->event, watchd_event_unref);
        g_free(u->reason);
        g_free(u);
}

static void core_unref(gpointer p) {
        Core *core = p;

        if (!g_atomic_int_dec_and_test(&core->ref_count))
                return;
        g_weak_ref_clear(&core->client);
        if (core->dispatch) {
                g_source_destroy(core->dispatch);
                g_source_unref(core->dispatch);
        }
        g_main_context_unref(core->context);
        g_queue_clear_full(&core->items, (GDestroyNotify) item_free);
        g_queue_clear_full(&core->unclaimed, (GDestroyNotify) unclaimed_free);
        g_hash_table_destroy(core->by_id);
        g_hash_table_destroy(core->live);
        g_hash_table_destroy(core->by_dir);
        g_free(core->owner);
        g_free(core->version);
        g_free(core->stream_owner);
        watchd_durable_router_unref(core->durables);
        g_mutex_clear(&core->lock);
        g_cond_clear(&core->cond);
        g_free(core);
}

static void core_wake(Core *core) {
        g_source_set_ready_time(core->dispatch, 0);
}

/* Drops every queued event; each subscription that lost some gets one
 * overflow at the end of the queue. Lock held. */
static void core_drop_events(Core *core) {
        g_autoptr(GHashTable) hit = g_hash_table_new(NULL, NULL);
        GList *l = core->items.head;

        while (l) {
                GList *next = l->next;
                Item *it = l->data;

                if (it->kind == ITEM_EVENTS) {
                        if (g_hash_table_add(hit, it->sub)) {
                                Item *o = g_new0(Item, 1);

                                o->kind = ITEM_OVERFLOW;
                                o->sub = g_object_ref(it->sub);
                                o->reason = WATCHD_OVERFLOW_CLIENT;
                                g_queue_push_tail(&core->items, o);
                        }
                        g_queue_delete_link(&core->items, l);
                        item_free(it);
                }
                l = next;
        }
        core->queued_events = 0;
}

/* Lock held. Takes ev. */
static void core_queue_event(Core *core, WatchdSubscription *sub, WatchdEvent *ev) {
        Item *tail = g_queue_peek_tail(&core->items);

        if (!tail || tail->kind != ITEM_EVENTS || tail->sub != sub) {
                tail = g_new0(Item, 1);
                tail->kind = ITEM_EVENTS;
                tail->sub = g_object_ref(sub);
                tail->events = g_ptr_array_new_with_free_func((GDestroyNotify) watchd_event_unref);
                g_queue_push_tail(&core->items, tail);
        }
        g_ptr_array_add(tail->events, ev);
        if (++core->queued_events > core->max_queued_events)
                core_drop_events(core);
        core_wake(core);
}

/* Lock held. */
static void core_queue_notice(Core *core, ItemKind kind, WatchdSubscription *sub, int reason, const char *detail,
                              const GError *error) {
        Item *it = g_new0(Item, 1);

        it->kind = kind;
        it->sub = sub ? g_object_ref(sub) : NULL;
        it->reason = reason;
        it->detail = g_strdup(detail);
        it->error = error ? g_error_copy(error) : NULL;
        g_queue_push_tail(&core->items, it);
        core_wake(core);
}

/* ------------------------------------------------------------------------ */
/* The subscriptions' bookkeeping (lock held) */

static void by_dir_add(Core *core, WatchdSubscription *sub) {
        GPtrArray *a = g_hash_table_lookup(core->by_dir, PRIV(sub)->canonical);

        if (!a) {
                a = g_ptr_array_new();
                g_hash_table_insert(core->by_dir, g_strdup(PRIV(sub)->canonical), a);
        }
        g_ptr_array_add(a, sub);
}

static void by_dir_remove(Core *core, WatchdSubscription *sub) {
        GPtrArray *a = g_hash_table_lookup(core->by_dir, PRIV(sub)->canonical);

        if (!a)
                return;
        g_ptr_array_remove(a, sub);
        if (a->len == 0)
                g_hash_table_remove(core->by_dir, PRIV(sub)->canonical);
}

static void core_add_live(Core *core, WatchdSubscription *sub) {
        if (g_hash_table_add(core->live, g_object_ref(sub)))
                by_dir_add(core, sub);
        else
                g_object_unref(sub);
}

/* Returns the reference live held, or NULL. */
static WatchdSubscription *core_steal_live(Core *core, WatchdSubscription *sub) {
        if (!g_hash_table_steal(core->live, sub))
                return NULL;
        by_dir_remove(core, sub);
        return sub;
}

static void core_forget_id(Core *core, WatchdSubscription *sub) {
        if (PRIV(sub)->id != 0)
                g_hash_table_remove(core->by_id, GUINT_TO_POINTER(PRIV(sub)->id));
        PRIV(sub)->id = 0;
}

/* The daemon (or a refused re-add) ended sub: it emits "removed" and is no
 * longer live. */
static void core_end_sub(Core *core, WatchdSubscription *sub, WatchdRemovedReason reason, const char *detail,
                         const GError *error) {
        WatchdSubscription *ref;

        core_forget_id(core, sub);
        PRIV(sub)->state = SUB_ENDED;
        ref = core_steal_live(core, sub);
        core_queue_notice(core, ITEM_REMOVED, sub, reason, detail, error);
        if (ref)
                g_object_unref(ref);    /* the item holds one */
}

static WatchdRemovedReason removed_reason_from_string(const char *s) {
        if (g_str_equal(s, "deleted"))
                return WATCHD_REMOVED_DELETED;
        if (g_str_equal(s, "unmounted"))
                return WATCHD_REMOVED_UNMOUNTED;
        if (g_str_equal(s, "oneshot"))
                return WATCHD_REMOVED_ONESHOT;
        return WATCHD_REMOVED_OTHER;
}

/* Whether records about path may belong to sub: sub watches the directory
 * path is in, or is RECURSIVE above it. */
static gboolean sub_covers(WatchdSubscription *sub, const char *path) {
        const char *c = PRIV(sub)->canonical;
        size_t n = strlen(c);

        if (strncmp(path, c, n) != 0 || (path[n] != '/' && !(n == 1 && c[0] == '/')))
                return FALSE;
        if (watchd_subscription_get_flags(sub) & WATCHD_WATCH_RECURSIVE)
                return TRUE;
        return strchr(path + n + (n == 1 ? 0 : 1), '/') == NULL;
}

/* watchd pairs the halves of a rename in the client's queue, whatever
 * subscriptions they came from, and sends the pair under the id of the
 * MOVED_FROM's. A subscription of this client that saw only the MOVED_TO
 * would then hear nothing: give it the pair too. Not needed once the daemon
 * delivers a pair to each subscription (docs/proposals/glib-semantics.md). */
static void core_fan_out_rename(Core *core, WatchdSubscription *from, WatchdEvent *ev) {
        const char *old_path = watchd_event_get_path(ev), *new_path = watchd_event_get_new_path(ev);
        g_autofree char *dir = g_path_get_dirname(new_path);

        for (;;) {
                GPtrArray *a = g_hash_table_lookup(core->by_dir, dir);
                char *up;

                for (guint i = 0; a && i < a->len; i++) {
                        WatchdSubscription *s = a->pdata[i];

                        if (s == from || PRIV(s)->state != SUB_ACTIVE || !sub_covers(s, new_path) ||
                            sub_covers(s, old_path))
                                continue;
                        core_queue_event(core, s, watchd_event_ref(ev));
                }
                if (g_str_equal(dir, "/") || g_str_equal(dir, "."))
                        break;
                up = g_path_get_dirname(dir);
                g_free(dir);
                dir = up;
        }
}

/* Lock held. Turns one record into an event for sub. */
static void core_deliver_record(Core *core, WatchdSubscription *sub, guint32 mask, guint32 cookie,
                                const char *wire_path, const char *wire_new_path) {
        g_autoptr(GError) error = NULL;
        gboolean escaped = (mask & WATCHD_WIRE_PATH_ESCAPED) != 0;
        g_autofree char *path = watchd_wire_path_decode(wire_path, escaped, &error);
        g_autofree char *new_path = NULL;
        WatchdEvent *ev;

        if (path && *wire_new_path)
                new_path = watchd_wire_path_decode(wire_new_path, escaped, &error);
        if (!path || (*wire_new_path && !new_path)) {
                /* A record that cannot be read is a lost event: say so. */
                g_warning("libwatchd: %s", error->message);
                core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_DAEMON, NULL, NULL);
                return;
        }
        ev = watchd_event_new(mask & ~WATCHD_WIRE_PATH_ESCAPED, cookie, path, new_path);
        if (watchd_event_is_rename(ev) && !(core->caps & WATCHD_CAPABILITY_PAIR_PER_SUBSCRIPTION))
                core_fan_out_rename(core, sub, ev);
        core_queue_event(core, sub, ev);
}

/* ------------------------------------------------------------------------ */
/* Records for ids not known yet (lock held) */

static void core_keep_unclaimed(Core *core, const char *sender, guint32 id, ItemKind kind, WatchdEvent *ev,
                                const char *reason) {
        Unclaimed *u;

        if (core->unclaimed.length >= MAX_UNCLAIMED) {
                unclaimed_free(g_queue_pop_head(&core->unclaimed));
                core->unclaimed_lost = TRUE;
        }
        u = g_new0(Unclaimed, 1);
        u->sender = g_strdup(sender);
        u->id = id;
        u->kind = kind;
        u->event = ev;
        u->reason = g_strdup(reason);
        g_queue_push_tail(&core->unclaimed, u);
}

static void core_drop_unclaimed(Core *core) {
        g_queue_clear_full(&core->unclaimed, (GDestroyNotify) unclaimed_free);
        g_queue_init(&core->unclaimed);
        core->unclaimed_lost = FALSE;
}

/* What arrived for id before its AddWatch answered goes to sub, in order. */
static void core_claim(Core *core, WatchdSubscription *sub, const char *sender, guint32 id) {
        GList *l = core->unclaimed.head;

        if (core->unclaimed_lost)
                core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_CLIENT, NULL, NULL);
        while (l) {
                GList *next = l->next;
                Unclaimed *u = l->data;

                if (u->id == id && g_strcmp0(u->sender, sender) == 0) {
                        g_queue_delete_link(&core->unclaimed, l);
                        if (PRIV(sub)->state == SUB_ACTIVE) {
                                if (u->kind == ITEM_EVENTS) {
                                        if (watchd_event_is_rename(u->event) &&
                                            !(core->caps & WATCHD_CAPABILITY_PAIR_PER_SUBSCRIPTION))
                                                core_fan_out_rename(core, sub, u->event);
                                        core_queue_event(core, sub, g_steal_pointer(&u->event));
                                } else if (u->kind == ITEM_OVERFLOW)
                                        core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_DAEMON, NULL,
                                                          NULL);
                                else
                                        core_end_sub(core, sub, removed_reason_from_string(u->reason), u->reason,
                                                     NULL);
                        }
                        unclaimed_free(u);
                }
                l = next;
        }
}

/* ------------------------------------------------------------------------ */
/* The daemon's signals (GDBus's worker thread) */

/* Lock held. One record of the daemon sender, whichever way it came. */
static void core_on_record(Core *core, const char *sender, guint32 id, guint32 mask, guint32 cookie,
                           const char *path, const char *new_path) {
        gboolean from_owner = g_strcmp0(sender, core->owner) == 0;
        WatchdSubscription *sub = from_owner ? g_hash_table_lookup(core->by_id, GUINT_TO_POINTER(id)) : NULL;

        if (sub)
                core_deliver_record(core, sub, mask, cookie, path, new_path);
        else if (core->adds_in_flight > 0) {
                g_autoptr(GError) error = NULL;
                gboolean escaped = (mask & WATCHD_WIRE_PATH_ESCAPED) != 0;
                g_autofree char *p = watchd_wire_path_decode(path, escaped, &error);
                g_autofree char *np = p && *new_path ? watchd_wire_path_decode(new_path, escaped, &error) : NULL;

                if (p && (!*new_path || np))
                        core_keep_unclaimed(core, sender, id, ITEM_EVENTS,
                                            watchd_event_new(mask & ~WATCHD_WIRE_PATH_ESCAPED, cookie, p, np), NULL);
                else
                        core->unclaimed_lost = TRUE;
        }
}

/* Lock held. Events of subscription id were lost. */
static void core_on_overflow_id(Core *core, const char *sender, guint32 id) {
        gboolean from_owner = g_strcmp0(sender, core->owner) == 0;
        WatchdSubscription *sub = from_owner ? g_hash_table_lookup(core->by_id, GUINT_TO_POINTER(id)) : NULL;

        if (sub)
                core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_DAEMON, NULL, NULL);
        else if (core->adds_in_flight > 0)
                core_keep_unclaimed(core, sender, id, ITEM_OVERFLOW, NULL, NULL);
}

static gboolean core_follows_path(Core *core, WatchdSubscription *sub, WatchdRemovedReason reason);
static void core_follow_again(Core *core, WatchdSubscription *sub);

/* Lock held. The daemon ended subscription id. */
static void core_on_removed(Core *core, const char *sender, guint32 id, const char *reason) {
        gboolean from_owner = g_strcmp0(sender, core->owner) == 0;
        WatchdSubscription *sub = from_owner ? g_hash_table_lookup(core->by_id, GUINT_TO_POINTER(id)) : NULL;

        if (sub && core_follows_path(core, sub, removed_reason_from_string(reason)))
                core_follow_again(core, sub);
        else if (sub)
                core_end_sub(core, sub, removed_reason_from_string(reason), reason, NULL);
        else if (core->adds_in_flight > 0)
                core_keep_unclaimed(core, sender, id, ITEM_REMOVED, NULL, reason);
}

static void core_on_events(Core *core, const char *sender, GVariant *body) {
        g_autoptr(GVariant) records = g_variant_get_child_value(body, 0);
        const char *path, *new_path;
        guint32 id, mask, cookie;
        GVariantIter it;

        g_variant_iter_init(&it, records);
        while (g_variant_iter_next(&it, "(uuu&s&s)", &id, &mask, &cookie, &path, &new_path))
                core_on_record(core, sender, id, mask, cookie, path, new_path);
}

static void core_on_overflow(Core *core, const char *sender, GVariant *body) {
        g_autoptr(GVariant) ids = g_variant_get_child_value(body, 0);
        GVariantIter it;
        guint32 id;

        g_variant_iter_init(&it, ids);
        while (g_variant_iter_next(&it, "u", &id))
                core_on_overflow_id(core, sender, id);
}

/* Whether the library follows sub's path itself now that watchd removed
 * it for reason: PERSIST asked of a watchd without "persistent", which
 * ends the subscription when its object goes. */
static gboolean core_follows_path(Core *core, WatchdSubscription *sub, WatchdRemovedReason reason) {
        return (watchd_subscription_get_flags(sub) & WATCHD_WATCH_PERSIST) &&
               !(core->caps & WATCHD_CAPABILITY_PERSISTENT) && !PRIV(sub)->cancelled &&
               (reason == WATCHD_REMOVED_DELETED || reason == WATCHD_REMOVED_UNMOUNTED);
}

static GVariant *add_watch_params(WatchdSubscription *sub, WatchdCapabilities caps);
static StartOp *start_op_new(Core *core, WatchdSubscription *sub, gboolean readd);
static gboolean core_send_add(Core *core, StartOp *op, GVariant *params, GError **error);
static void start_op_unref(gpointer p);

/* Lock held: sub's object went and watchd ended it; it is added again at
 * once, a pending path until the path is back (as watchd's PERSIST would
 * keep it), and emits "overflow" (WATCHD_OVERFLOW_FOLLOWED) once it is:
 * what happened at the path in between is not known. */
static void core_follow_again(Core *core, WatchdSubscription *sub) {
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

static void core_on_watch_removed(Core *core, const char *sender, GVariant *body) {
        const char *reason;
        guint32 id;

        g_variant_get(body, "(u&s)", &id, &reason);
        core_on_removed(core, sender, id, reason);
}

static void core_on_signal(gpointer userdata, const char *sender, const char *member, GVariant *body) {
        Core *core = userdata;

        g_mutex_lock(&core->lock);
        /* A signal of anyone else is dropped: on the system bus any peer may
         * send a signal to any other. Before the answer of an AddWatch the
         * owner may not be known yet (bus activation): such records are
         * kept with their sender, and claimed only if the answer came from
         * the same sender. */
        if (g_str_equal(member, "Events") && g_variant_is_of_type(body, G_VARIANT_TYPE("(a(uuuss))")))
                core_on_events(core, sender, body);
        else if (g_str_equal(member, "Overflow") && g_variant_is_of_type(body, G_VARIANT_TYPE("(au)")))
                core_on_overflow(core, sender, body);
        else if (g_str_equal(member, "WatchRemoved") && g_variant_is_of_type(body, G_VARIANT_TYPE("(us)")))
                core_on_watch_removed(core, sender, body);
        g_mutex_unlock(&core->lock);
}

/* ------------------------------------------------------------------------ */
/* The record stream (its reader's thread, and GDBus's worker thread) */

/* The frames of one read of the stream. Paths there are bytes, never escaped.
 * Durable frames go to the WatchdDurables (watchd-durable.c), which say
 * whether the reader may read on. */
static gboolean core_on_stream_frames(gpointer userdata, const StreamFrame *frames, guint n) {
        Core *core = userdata;
        gboolean owner, durable = FALSE;

        g_mutex_lock(&core->lock);
        /* A stream of a daemon that is no longer the owner: its records are
         * dropped, as its signals are. */
        owner = core->stream_owner != NULL;
        if (owner)
                for (guint i = 0; i < n; i++) {
                        const StreamFrame *f = &frames[i];

                        if (f->type >= STREAM_FRAME_DURABLE_RESCAN)
                                durable = TRUE;
                        else if (f->type == STREAM_FRAME_EVENT)
                                core_on_record(core, core->stream_owner, f->id, f->mask & ~WATCHD_WIRE_PATH_ESCAPED,
                                               f->cookie, f->path, f->new_path);
                        else if (f->type == STREAM_FRAME_OVERFLOW)
                                for (size_t k = 0; k < f->n_ids; k++)
                                        core_on_overflow_id(core, core->stream_owner, stream_frame_overflow_id(f, k));
                        else if (f->type == STREAM_FRAME_REMOVED)
                                core_on_removed(core, core->stream_owner, f->id, f->reason);
                }
        g_mutex_unlock(&core->lock);
        /* Without the client's lock: the router's is taken after it nowhere. */
        return !durable || watchd_durable_router_frames(core->durables, frames, n);
}

/* The daemon closed the stream (it is leaving), or the reader could not read it
 * and closed its end (then the daemon sends signals again, Overflow first). */
static void core_on_stream_ended(gpointer userdata, const GError *error) {
        Core *core = userdata;

        g_mutex_lock(&core->lock);
        g_clear_pointer(&core->stream_owner, g_free);
        g_mutex_unlock(&core->lock);
        watchd_durable_router_set_stream(core->durables, -1);
}

static const WatchdStreamCallbacks core_stream_callbacks = {
        .frames = core_on_stream_frames,
        .ended = core_on_stream_ended,
};

static void core_on_stream_opened(gpointer userdata, const char *sender, GVariant *body, GUnixFDList *fds,
                                  const GError *error) {
        Core *core = userdata;
        g_autoptr(GError) local = NULL;
        int fd = -1;

        g_mutex_lock(&core->lock);
        core->stream_pending = FALSE;
        if (error)
                /* An older watchd, a bus without descriptors, no descriptor left: signals. */
                g_debug("libwatchd: no record stream (%s); records come as signals", error->message);
        else if (body && fds && g_variant_is_of_type(body, G_VARIANT_TYPE("(h)")) && !core->closed &&
                 !core->stream && g_strcmp0(sender, core->owner) == 0) {
                gint32 index;

                g_variant_get(body, "(h)", &index);
                fd = g_unix_fd_list_get(fds, index, &local);
        }
        if (fd >= 0) {
                /* The reader's thread waits for the lock before its first frames. */
                core->stream = watchd_stream_reader_new(fd, &core_stream_callbacks, core_ref(core), core_unref, &local);
                if (core->stream) {
                        core->stream_owner = g_strdup(sender);
                        watchd_durable_router_set_stream(core->durables,
                                                         fcntl(watchd_stream_reader_resume_fd(core->stream),
                                                               F_DUPFD_CLOEXEC, 3));
                }
                else
                        core_unref(core);       /* the reader's, not taken; the call's is still held */
        }
        if (local)
                g_warning("libwatchd: cannot read the record stream (%s); records come as signals", local->message);
        g_cond_broadcast(&core->cond);
        g_mutex_unlock(&core->lock);
        core_unref(core);
}

/* Lock held: asks the owner for this connection's stream, if it offers one. */
static void core_open_stream(Core *core) {
        if (!core->use_stream || !(core->caps & WATCHD_CAPABILITY_STREAM) || core->stream || core->stream_pending ||
            !core->owner || !core->bus || core->closed)
                return;
        core->stream_pending = TRUE;
        /* Its durable subscriptions' replays there too, if the daemon can: no round trip through the bus. */
        if (!watchd_bus_call_fds(core->bus, WATCHD_BUS_NAME, WATCHD_INTERFACE, "OpenStream",
                                 core->caps & WATCHD_CAPABILITY_DURABLE_STREAM
                                 ? g_variant_new_parsed("({'durable': <true>},)")
                                 : g_variant_new_parsed("(@a{sv} {},)"),
                                 core_on_stream_opened, core_ref(core), NULL)) {
                core->stream_pending = FALSE;
                core_unref(core);
        }
}

/* Lock held: the stream, to be freed once the lock is released (its thread may wait for it). */
static WatchdStreamReader *core_steal_stream(Core *core) {
        g_clear_pointer(&core->stream_owner, g_free);
        watchd_durable_router_set_stream(core->durables, -1);
        return g_steal_pointer(&core->stream);
}

/* ------------------------------------------------------------------------ */
/* AddWatch */

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
 * itself (core_follow_again()). Needs no lock: a subscription's path,
 * mask and flags never change; caps is the daemon's. */
static GVariant *add_watch_params(WatchdSubscription *sub, WatchdCapabilities caps) {
        const char *path = watchd_subscription_get_path(sub);
        guint32 mask = watchd_subscription_get_mask(sub), flags = watchd_subscription_get_flags(sub);
        g_autofree char *escaped = NULL;

        if (!(caps & WATCHD_CAPABILITY_PERSISTENT))
                flags &= ~(guint32) WATCHD_WATCH_PERSIST;
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
                (void) watchd_bus_call(core->bus, WATCHD_BUS_NAME, WATCHD_INTERFACE, "RemoveWatch", g_variant_new("(u)", id),
                               NULL, FALSE, NULL, NULL, NULL);
}

static void core_readd_one(Core *core, WatchdSubscription *sub);

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
        if (op->abandoned) {
                if (!err && id != 0)
                        core_send_remove(core, id);
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
                if (op->readd)
                        core_queue_notice(core, ITEM_OVERFLOW, op->sub,
                                          op->follow ? WATCHD_OVERFLOW_FOLLOWED : WATCHD_OVERFLOW_RESTARTED, NULL, NULL);
                core_claim(core, op->sub, sender, id);
        } else {
                p->start = NULL;
                if (op->readd && error_means_gone(err)) {
                        p->state = SUB_WAITING;         /* the next owner adds it */
                        if (op->generation != core->generation && core->owner && !p->cancelled)
                                /* That next owner came before this answer. */
                                core_readd_one(core, op->sub);
                }
                else if (op->readd)
                        core_end_sub(core, op->sub, WATCHD_REMOVED_ERROR, err->message, err);
                else {
                        WatchdSubscription *ref = core_steal_live(core, op->sub);

                        p->state = SUB_NEW;
                        if (ref)
                                g_object_unref(ref);    /* op holds one */
                }
        }
        core_readd_done(core, op);
        if (core->adds_in_flight == 0)
                core_drop_unclaimed(core);
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
                start_op_unref(op);     /* the call's reference */
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

void watchd_client_start_subscription(WatchdClient *client, WatchdSubscription *sub, gboolean held,
                                      GCancellable *cancellable, GTask *task) {
        Core *core = client->core;
        g_autoptr(GVariant) params = NULL;
        g_autoptr(GError) error = NULL;
        StartOp *op;

        if (g_task_return_error_if_cancelled(task)) {
                g_object_unref(task);
                return;
        }
        op = core_prepare_start(core, sub, &params);
        op->task = task;
        op->return_sub = g_task_get_source_object(task) == (gpointer) client;
        start_op_connect_cancellable(op, cancellable);

        g_mutex_lock(&core->lock);
        if (op->abandoned) {
                /* Cancelled since the check: the handler returned the task. */
                g_mutex_unlock(&core->lock);
                start_op_finish_unsent(op);
                return;
        }
        if (!core_check_startable(core, sub, &error) ||
            !core_send_add(core, op, params, &error)) {
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

gboolean watchd_client_start_subscription_sync(WatchdClient *client, WatchdSubscription *sub,
                                               GCancellable *cancellable, GError **error) {
        Core *core = client->core;
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
                                                                "watchd did not answer in %u ms",
                                                                core->call_timeout_ms);

                        (void) start_op_abandon(core, op, timeout);
                }
        ok = op->error == NULL;
        if (!ok)
                g_propagate_error(error, g_error_copy(op->error));
        g_mutex_unlock(&core->lock);

        start_op_finish_unsent(op);     /* disconnects the cancellable, drops our reference */
        return ok;
}

void watchd_client_cancel_subscription(WatchdClient *client, WatchdSubscription *sub) {
        Core *core = client->core;
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

void watchd_client_release_hold(WatchdClient *client, WatchdSubscription *sub) {
        Core *core = client->core;

        g_mutex_lock(&core->lock);
        PRIV(sub)->held = FALSE;
        core_wake(core);
        g_mutex_unlock(&core->lock);
}

/* ------------------------------------------------------------------------ */
/* The name's owner (GDBus's worker thread) */

static void core_on_props(gpointer userdata, const char *sender, GVariant *body, const GError *error) {
        Core *core = userdata;
        g_autoptr(GVariant) dict = NULL, version = NULL, caps = NULL;

        g_mutex_lock(&core->lock);
        core->props_pending = FALSE;
        if (body && g_variant_is_of_type(body, G_VARIANT_TYPE("(a{sv})")) && g_strcmp0(sender, core->owner) == 0) {
                dict = g_variant_get_child_value(body, 0);
                version = g_variant_lookup_value(dict, "Version", G_VARIANT_TYPE_STRING);
                caps = g_variant_lookup_value(dict, "Capabilities", G_VARIANT_TYPE_STRING_ARRAY);
                g_free(core->version);
                core->version = version ? g_variant_dup_string(version, NULL) : NULL;
                core->caps = WATCHD_CAPABILITY_NONE;
                for (gsize i = 0; caps && i < g_variant_n_children(caps); i++) {
                        const char *name;

                        g_variant_get_child(caps, i, "&s", &name);
                        if (g_str_equal(name, "report-appearance"))
                                core->caps |= WATCHD_CAPABILITY_REPORT_APPEARANCE;
                        else if (g_str_equal(name, "persistent"))
                                core->caps |= WATCHD_CAPABILITY_PERSISTENT;
                        else if (g_str_equal(name, "pair-per-subscription"))
                                core->caps |= WATCHD_CAPABILITY_PAIR_PER_SUBSCRIPTION;
                        else if (g_str_equal(name, "remote-polling"))
                                core->caps |= WATCHD_CAPABILITY_REMOTE_POLLING;
                        else if (g_str_equal(name, "stream"))
                                core->caps |= WATCHD_CAPABILITY_STREAM;
                        else if (g_str_equal(name, "durable-stream"))
                                core->caps |= WATCHD_CAPABILITY_DURABLE_STREAM;
                }
                core_open_stream(core);
        }
        g_cond_broadcast(&core->cond);
        g_mutex_unlock(&core->lock);
        core_unref(core);
}

/* Lock held: adds sub again for the daemon that now owns the name. */
static void core_readd_one(Core *core, WatchdSubscription *sub) {
        g_autoptr(GVariant) params = g_variant_ref_sink(add_watch_params(sub, core->caps));
        g_autoptr(GError) error = NULL;
        StartOp *op = start_op_new(core, sub, TRUE);

        if (!core_send_add(core, op, params, &error))
                core_end_sub(core, sub, WATCHD_REMOVED_ERROR, error->message, error);
        else
                core->readds_pending++;
        start_op_unref(op);
}

/* Lock held: a new daemon took the name; add every waiting subscription again. */
static void core_readd_all(Core *core) {
        g_autoptr(GPtrArray) waiting = g_ptr_array_new();
        GHashTableIter it;
        gpointer key;

        g_hash_table_iter_init(&it, core->live);
        while (g_hash_table_iter_next(&it, &key, NULL))
                if (PRIV(key)->state == SUB_WAITING)
                        g_ptr_array_add(waiting, key);
        core->readds_pending = 0;
        for (guint i = 0; i < waiting->len; i++)
                core_readd_one(core, waiting->pdata[i]);
        if (core->readds_pending == 0) {
                core->gone = FALSE;
                core_queue_notice(core, ITEM_DAEMON_RESTARTED, NULL, 0, NULL, NULL);
        }
}

static void core_on_owner_changed(gpointer userdata, const char *owner) {
        Core *core = userdata;
        g_autofree char *old = NULL;
        WatchdStreamReader *stream = NULL;

        g_mutex_lock(&core->lock);
        core->owner_known = TRUE;
        if (g_strcmp0(core->owner, owner) == 0) {
                g_cond_broadcast(&core->cond);
                g_mutex_unlock(&core->lock);
                return;
        }
        old = g_steal_pointer(&core->owner);
        core->owner = g_strdup(owner);
        core->generation++;
        if (old) {
                GHashTableIter it;
                gpointer key;

                /* Its ids mean nothing to the next one. Subscriptions being
                 * started get an error from their call. */
                g_hash_table_iter_init(&it, core->live);
                while (g_hash_table_iter_next(&it, &key, NULL))
                        if (PRIV(key)->state == SUB_ACTIVE) {
                                core_forget_id(core, key);
                                PRIV(key)->state = SUB_WAITING;
                        }
                core_drop_unclaimed(core);
                stream = core_steal_stream(core);
                core->gone = TRUE;
                core->readds_pending = 0;
                core_queue_notice(core, ITEM_DAEMON_VANISHED, NULL, 0, NULL, NULL);
        }
        if (owner && core->bus) {
                core->props_pending = TRUE;
                if (!watchd_bus_call(core->bus, WATCHD_BUS_NAME, "org.freedesktop.DBus.Properties", "GetAll",
                                     g_variant_new("(s)", WATCHD_INTERFACE), NULL, FALSE, core_on_props,
                                     core_ref(core), NULL)) {
                        core->props_pending = FALSE;
                        core_unref(core);
                }
                if (core->gone)
                        core_readd_all(core);
                core_queue_notice(core, ITEM_DAEMON_APPEARED, NULL, 0, NULL, NULL);
        }
        g_cond_broadcast(&core->cond);
        g_mutex_unlock(&core->lock);
        watchd_stream_reader_free(stream);
}

static void core_on_closed(gpointer userdata, const GError *error) {
        Core *core = userdata;
        WatchdStreamReader *stream;

        g_mutex_lock(&core->lock);
        if (!core->closed) {
                core->closed = TRUE;
                core_queue_notice(core, ITEM_CLOSED, NULL, 0, NULL, error);
        }
        g_free(g_steal_pointer(&core->owner));
        stream = core_steal_stream(core);
        g_cond_broadcast(&core->cond);
        g_mutex_unlock(&core->lock);
        watchd_stream_reader_free(stream);
}

static const WatchdBusCallbacks core_bus_callbacks = {
        .owner_changed = core_on_owner_changed,
        .signal = core_on_signal,
        .closed = core_on_closed,
};

/* ------------------------------------------------------------------------ */
/* The dispatch source (the client's context) */

typedef struct DispatchSource {
        GSource source;
        Core *core;
} DispatchSource;

static void dispatch_emit(WatchdClient *client, Item *it) {
        switch (it->kind) {
        case ITEM_EVENTS:
                watchd_subscription_emit_events(it->sub, it->events);
                break;
        case ITEM_OVERFLOW:
                watchd_subscription_emit_overflow(it->sub, it->reason);
                break;
        case ITEM_REMOVED:
                watchd_subscription_emit_removed(it->sub, it->reason, it->detail, it->error);
                break;
        case ITEM_DAEMON_VANISHED:
                if (client) {
                        g_signal_emit(client, signals[SIGNAL_DAEMON_VANISHED], 0);
                        g_object_notify_by_pspec(G_OBJECT(client), props[PROP_DAEMON_RUNNING]);
                }
                break;
        case ITEM_DAEMON_APPEARED:
                if (client)
                        g_object_notify_by_pspec(G_OBJECT(client), props[PROP_DAEMON_RUNNING]);
                break;
        case ITEM_DAEMON_RESTARTED:
                if (client)
                        g_signal_emit(client, signals[SIGNAL_DAEMON_RESTARTED], 0);
                break;
        case ITEM_CLOSED:
                if (client)
                        g_signal_emit(client, signals[SIGNAL_CLOSED], 0, it->error);
                break;
        }
}

static gboolean dispatch_source_dispatch(GSource *source, GSourceFunc callback, gpointer userdata) {
        Core *core = ((DispatchSource *) source)->core;
        GQueue ready = G_QUEUE_INIT;
        WatchdClient *client;
        Item *it;

        g_mutex_lock(&core->lock);
        g_source_set_ready_time(source, -1);
        for (GList *l = core->items.head, *next; l; l = next) {
                next = l->next;
                it = l->data;
                if (it->sub && PRIV(it->sub)->held)
                        continue;       /* its handlers are not connected yet */
                if (it->kind == ITEM_EVENTS)
                        core->queued_events -= it->events->len;
                g_queue_unlink(&core->items, l);
                g_queue_push_tail_link(&ready, l);
        }
        g_mutex_unlock(&core->lock);

        client = g_weak_ref_get(&core->client);
        while ((it = g_queue_pop_head(&ready))) {
                /* Cancelled (maybe by a handler of the item before): silent. */
                if (!it->sub || !g_atomic_int_get(&PRIV(it->sub)->cancelled))
                        dispatch_emit(client, it);
                item_free(it);
        }
        g_clear_object(&client);
        return G_SOURCE_CONTINUE;
}

static void dispatch_source_finalize(GSource *source) {
        /* The core owns the source, not the other way round. */
}

static GSourceFuncs dispatch_source_funcs = {
        .dispatch = dispatch_source_dispatch,
        .finalize = dispatch_source_finalize,
};

/* ------------------------------------------------------------------------ */
/* Plain calls */

typedef struct SyncCall {
        Core *core;
        gboolean done;
        GVariant *body;
        GError *error;
} SyncCall;

static void sync_call_on_reply(gpointer userdata, const char *sender, GVariant *body, const GError *error) {
        SyncCall *call = userdata;

        g_mutex_lock(&call->core->lock);
        call->body = body ? g_variant_ref(body) : NULL;
        call->error = error ? g_error_copy(error) : NULL;
        call->done = TRUE;
        g_cond_broadcast(&call->core->cond);
        g_mutex_unlock(&call->core->lock);
}

typedef struct SyncCancel {
        WatchdBus *bus;
        guint32 serial;
} SyncCancel;

static void sync_call_on_cancelled(GCancellable *cancellable, gpointer userdata) {
        SyncCancel *c = userdata;
        g_autoptr(GError) error = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "Operation was cancelled");

        (void) watchd_bus_call_fail(c->bus, c->serial, error);
}

/* A call to watchd, waited for in this thread; the reply's body of type
 * reply_type, or NULL with error. */
static GVariant *core_call_sync(Core *core, const char *interface, const char *method, GVariant *params,
                                const GVariantType *reply_type, GCancellable *cancellable, GError **error) {
        SyncCall call = { .core = core };
        SyncCancel cancel = { 0 };
        gulong cancel_id = 0;
        gint64 deadline;

        if (g_cancellable_set_error_if_cancelled(cancellable, error))
                return NULL;
        g_mutex_lock(&core->lock);
        cancel.bus = core->bus;
        g_mutex_unlock(&core->lock);
        if (!cancel.bus) {
                g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "The client is closed");
                return NULL;
        }
        cancel.serial = watchd_bus_call(core->bus, WATCHD_BUS_NAME, interface, method, params, NULL, TRUE,
                                        sync_call_on_reply, &call, error);
        if (cancel.serial == 0)
                return NULL;
        if (cancellable)
                cancel_id = g_cancellable_connect(cancellable, G_CALLBACK(sync_call_on_cancelled), &cancel, NULL);

        g_mutex_lock(&core->lock);
        deadline = g_get_monotonic_time() + (gint64) core->call_timeout_ms * G_TIME_SPAN_MILLISECOND;
        while (!call.done)
                if (!g_cond_wait_until(&core->cond, &core->lock, deadline)) {
                        g_autoptr(GError) timeout = g_error_new(G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                                                "watchd did not answer in %u ms",
                                                                core->call_timeout_ms);

                        g_mutex_unlock(&core->lock);
                        (void) watchd_bus_call_fail(core->bus, cancel.serial, timeout);
                        g_mutex_lock(&core->lock);
                        /* Either failed now, or the reply won the race: done either way. */
                        while (!call.done)
                                g_cond_wait(&core->cond, &core->lock);
                }
        g_mutex_unlock(&core->lock);
        if (cancel_id)
                g_cancellable_disconnect(cancellable, cancel_id);

        if (call.error) {
                g_propagate_error(error, call.error);
                g_clear_pointer(&call.body, g_variant_unref);
                return NULL;
        }
        if (!g_variant_is_of_type(call.body, reply_type)) {
                g_set_error(error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL, "%s answered with type %s", method,
                            g_variant_get_type_string(call.body));
                g_variant_unref(call.body);
                return NULL;
        }
        return call.body;
}

/* ------------------------------------------------------------------------ */
/* GObject */

static gboolean client_initable_init(GInitable *initable, GCancellable *cancellable, GError **error) {
        WatchdClient *client = WATCHD_CLIENT(initable);
        Core *core = client->core;
        g_autoptr(GDBusConnection) connection = NULL;
        gboolean private_connection = FALSE;
        gint64 deadline;

        if (client->initialized) {
                g_set_error_literal(error, WATCHD_ERROR, WATCHD_ERROR_STATE, "The client is initialized already");
                return FALSE;
        }
        client->initialized = TRUE;

        if (client->given_connection)
                connection = g_object_ref(client->given_connection);
        else {
                g_autofree char *address = NULL;

                if (client->address)
                        address = g_strdup(client->address);
                else if (client->bus_type == G_BUS_TYPE_SYSTEM || client->bus_type == G_BUS_TYPE_SESSION)
                        address = g_dbus_address_get_for_bus_sync(client->bus_type, cancellable, error);
                else
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                    "A client needs the system bus, the session bus or an address");
                if (!address)
                        return FALSE;
                /* A connection of our own: the library's filter and signals
                 * do not meet the program's, and closing it is ours to do. */
                connection = g_dbus_connection_new_for_address_sync(
                        address,
                        G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                        NULL, cancellable, error);
                if (!connection)
                        return FALSE;
                g_dbus_connection_set_exit_on_close(connection, FALSE);
                private_connection = TRUE;
        }

        /* The daemon knows a connection, not the clients on it: the stream of a
         * connection the program shares would carry the records of its other
         * clients (another WatchdClient, its own calls) to this one alone. */
        if (!private_connection)
                core->use_stream = FALSE;
        core->bus = watchd_bus_new(connection, private_connection, &core_bus_callbacks, core_ref(core), core_unref);
        if (!watchd_bus_start(core->bus, error))
                return FALSE;

        /* The owner (and, if there is one, its version and capabilities)
         * before the client is handed out. */
        g_mutex_lock(&core->lock);
        deadline = g_get_monotonic_time() + (gint64) core->call_timeout_ms * G_TIME_SPAN_MILLISECOND;
        while ((!core->owner_known || core->props_pending || core->stream_pending) && !core->closed)
                if (!g_cond_wait_until(&core->cond, &core->lock, deadline))
                        break;
        if (!core->owner_known || core->closed) {
                g_mutex_unlock(&core->lock);
                g_set_error_literal(error, G_IO_ERROR, core->closed ? G_IO_ERROR_CLOSED : G_IO_ERROR_TIMED_OUT,
                                    core->closed ? "The connection to the bus closed"
                                                 : "The bus did not answer GetNameOwner in time");
                return FALSE;
        }
        g_mutex_unlock(&core->lock);
        return TRUE;
}

static void client_initable_iface_init(GInitableIface *iface) {
        iface->init = client_initable_init;
}

static void watchd_client_init(WatchdClient *client) {
        Core *core = g_new0(Core, 1);

        core->ref_count = 1;
        g_weak_ref_init(&core->client, client);
        /* Every signal of the client and its subscriptions is emitted here. */
        core->context = g_main_context_ref_thread_default();
        g_mutex_init(&core->lock);
        g_cond_init(&core->cond);
        core->by_id = g_hash_table_new(NULL, NULL);
        core->live = g_hash_table_new(NULL, NULL);
        core->by_dir = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_ptr_array_unref);
        g_queue_init(&core->items);
        g_queue_init(&core->unclaimed);
        core->max_queued_events = DEFAULT_MAX_QUEUED_EVENTS;
        core->call_timeout_ms = DEFAULT_CALL_TIMEOUT_MS;
        core->use_stream = TRUE;
        core->durables = watchd_durable_router_new();
        core->dispatch = g_source_new(&dispatch_source_funcs, sizeof(DispatchSource));
        ((DispatchSource *) core->dispatch)->core = core;       /* no reference: the core owns the source */
        g_source_set_static_name(core->dispatch, "WatchdClient dispatch");
        g_source_attach(core->dispatch, core->context);
        client->core = core;
        client->bus_type = G_BUS_TYPE_SYSTEM;
}

static void watchd_client_dispose(GObject *object) {
        WatchdClient *client = WATCHD_CLIENT(object);
        Core *core = client->core;
        WatchdStreamReader *stream;
        WatchdBus *bus;

        /* Live subscriptions hold the client: none is left. */
        g_mutex_lock(&core->lock);
        bus = g_steal_pointer(&core->bus);
        core->closed = TRUE;
        stream = core_steal_stream(core);
        g_mutex_unlock(&core->lock);
        watchd_stream_reader_free(stream);
        watchd_bus_close(bus);
        /* Nothing more is emitted: no client to emit on. */
        g_source_destroy(core->dispatch);
        G_OBJECT_CLASS(watchd_client_parent_class)->dispose(object);
}

static void watchd_client_finalize(GObject *object) {
        WatchdClient *client = WATCHD_CLIENT(object);

        g_free(client->address);
        g_clear_object(&client->given_connection);
        core_unref(client->core);
        G_OBJECT_CLASS(watchd_client_parent_class)->finalize(object);
}

static void watchd_client_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
        WatchdClient *client = WATCHD_CLIENT(object);

        switch (prop_id) {
        case PROP_BUS_TYPE:
                client->bus_type = g_value_get_enum(value);
                break;
        case PROP_ADDRESS:
                g_free(client->address);
                client->address = g_value_dup_string(value);
                break;
        case PROP_CONNECTION:
                g_clear_object(&client->given_connection);
                client->given_connection = g_value_dup_object(value);
                break;
        case PROP_MAX_QUEUED_EVENTS:
                g_mutex_lock(&client->core->lock);
                client->core->max_queued_events = g_value_get_uint(value);
                g_mutex_unlock(&client->core->lock);
                break;
        case PROP_CALL_TIMEOUT:
                g_mutex_lock(&client->core->lock);
                client->core->call_timeout_ms = g_value_get_uint(value);
                g_mutex_unlock(&client->core->lock);
                break;
        case PROP_USE_STREAM:
                client->core->use_stream = g_value_get_boolean(value);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
        }
}

static void watchd_client_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
        WatchdClient *client = WATCHD_CLIENT(object);

        switch (prop_id) {
        case PROP_BUS_TYPE:
                g_value_set_enum(value, client->bus_type);
                break;
        case PROP_ADDRESS:
                g_value_set_string(value, client->address);
                break;
        case PROP_CONNECTION:
                g_value_set_object(value, watchd_client_get_connection(client));
                break;
        case PROP_DAEMON_RUNNING:
                g_value_set_boolean(value, watchd_client_get_daemon_running(client));
                break;
        case PROP_MAX_QUEUED_EVENTS:
                g_mutex_lock(&client->core->lock);
                g_value_set_uint(value, client->core->max_queued_events);
                g_mutex_unlock(&client->core->lock);
                break;
        case PROP_CALL_TIMEOUT:
                g_mutex_lock(&client->core->lock);
                g_value_set_uint(value, client->core->call_timeout_ms);
                g_mutex_unlock(&client->core->lock);
                break;
        case PROP_USE_STREAM:
                g_mutex_lock(&client->core->lock);
                g_value_set_boolean(value, client->core->stream_owner != NULL);
                g_mutex_unlock(&client->core->lock);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
        }
}

static void watchd_client_class_init(WatchdClientClass *klass) {
        GObjectClass *object_class = G_OBJECT_CLASS(klass);

        object_class->dispose = watchd_client_dispose;
        object_class->finalize = watchd_client_finalize;
        object_class->set_property = watchd_client_set_property;
        object_class->get_property = watchd_client_get_property;

        /**
         * WatchdClient:bus-type:
         *
         * The bus watchd is on: %G_BUS_TYPE_SYSTEM (the default) or
         * %G_BUS_TYPE_SESSION. Unused if #WatchdClient:address or
         * #WatchdClient:connection is set.
         */
        props[PROP_BUS_TYPE] = g_param_spec_enum("bus-type", "Bus type", "The bus watchd is on", G_TYPE_BUS_TYPE,
                                                 G_BUS_TYPE_SYSTEM,
                                                 G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:address:
         *
         * The D-Bus address of the message bus watchd is on, for a private
         * bus (tests) or one started by hand.
         */
        props[PROP_ADDRESS] = g_param_spec_string("address", "Address", "D-Bus address of the bus", NULL,
                                                  G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:connection:
         *
         * A message bus connection to use rather than one of the client's
         * own. Without it, the client makes its own connection.
         */
        props[PROP_CONNECTION] = g_param_spec_object("connection", "Connection", "The bus connection",
                                                     G_TYPE_DBUS_CONNECTION,
                                                     G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY |
                                                             G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:daemon-running:
         *
         * Whether watchd is on the bus. Notified in the client's context
         * when it leaves or comes back.
         */
        props[PROP_DAEMON_RUNNING] = g_param_spec_boolean("daemon-running", "Daemon running",
                                                          "Whether watchd is on the bus", FALSE,
                                                          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:max-queued-events:
         *
         * How many events may wait for the client's #GMainContext to run.
         * Past it, the waiting events are dropped and their subscriptions
         * emit #WatchdSubscription::overflow with %WATCHD_OVERFLOW_CLIENT:
         * memory stays bounded when the context is blocked.
         */
        props[PROP_MAX_QUEUED_EVENTS] = g_param_spec_uint("max-queued-events", "Maximum queued events",
                                                          "Events that may wait for the main context", 1, G_MAXUINT,
                                                          DEFAULT_MAX_QUEUED_EVENTS,
                                                          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:call-timeout:
         *
         * How long, in milliseconds, a call to watchd may wait for its
         * answer before it fails with %G_IO_ERROR_TIMED_OUT.
         */
        props[PROP_CALL_TIMEOUT] = g_param_spec_uint("call-timeout", "Call timeout",
                                                     "Milliseconds a call waits for its answer", 1, G_MAXUINT,
                                                     DEFAULT_CALL_TIMEOUT_MS,
                                                     G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:use-stream:
         *
         * Whether the records come over a socket of the client's own when
         * watchd offers one (%WATCHD_CAPABILITY_STREAM; watchd(8), STREAM),
         * rather than as D-Bus signals: cheaper for both sides, and not held
         * up by the bus. Set at construction (default %TRUE); read, it says
         * whether they do now (a watchd without the capability, or a stream
         * that could not be read, gives signals, with the same events). A
         * client on a connection given to it (#WatchdClient:connection) never
         * uses the stream: the daemon would send the records of every client
         * of that connection there.
         */
        props[PROP_USE_STREAM] = g_param_spec_boolean("use-stream", "Use the stream",
                                                      "Whether records come over a stream of the client's own", TRUE,
                                                      G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY |
                                                              G_PARAM_STATIC_STRINGS);
        g_object_class_install_properties(object_class, N_PROPS, props);

        /**
         * WatchdClient::daemon-vanished:
         * @client: the client
         *
         * watchd left the bus. Its subscriptions wait and are added again
         * when it (or another watchd) takes the name back; see
         * #WatchdClient::daemon-restarted.
         */
        signals[SIGNAL_DAEMON_VANISHED] = g_signal_new("daemon-vanished", G_TYPE_FROM_CLASS(klass),
                                                       G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
        /**
         * WatchdClient::daemon-restarted:
         * @client: the client
         *
         * watchd came back after #WatchdClient::daemon-vanished and every
         * waiting subscription was added again (each emitted
         * #WatchdSubscription::overflow with %WATCHD_OVERFLOW_RESTARTED) or
         * removed (#WatchdSubscription::removed with %WATCHD_REMOVED_ERROR).
         */
        signals[SIGNAL_DAEMON_RESTARTED] = g_signal_new("daemon-restarted", G_TYPE_FROM_CLASS(klass),
                                                        G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
        /**
         * WatchdClient::closed:
         * @client: the client
         * @error: (nullable): why
         *
         * The connection to the bus closed: nothing more will come.
         */
        signals[SIGNAL_CLOSED] = g_signal_new("closed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                              NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
}

/* ------------------------------------------------------------------------ */
/* Public functions */

/**
 * watchd_client_new:
 * @bus_type: %G_BUS_TYPE_SYSTEM or %G_BUS_TYPE_SESSION
 * @cancellable: (nullable): a #GCancellable
 * @callback: called when the client is ready
 * @user_data: data for @callback
 *
 * Connects to watchd on a message bus, asynchronously. The client's
 * signals, and those of its subscriptions, are emitted in the thread-default
 * #GMainContext of the thread calling this.
 */
void watchd_client_new(GBusType bus_type, GCancellable *cancellable, GAsyncReadyCallback callback,
                       gpointer user_data) {
        g_async_initable_new_async(WATCHD_TYPE_CLIENT, G_PRIORITY_DEFAULT, cancellable, callback, user_data,
                                   "bus-type", bus_type, NULL);
}

/**
 * watchd_client_new_for_address:
 * @address: a D-Bus address
 * @cancellable: (nullable): a #GCancellable
 * @callback: called when the client is ready
 * @user_data: data for @callback
 *
 * Connects to watchd on the message bus at @address, asynchronously.
 */
void watchd_client_new_for_address(const char *address, GCancellable *cancellable, GAsyncReadyCallback callback,
                                   gpointer user_data) {
        g_async_initable_new_async(WATCHD_TYPE_CLIENT, G_PRIORITY_DEFAULT, cancellable, callback, user_data,
                                   "address", address, NULL);
}

/**
 * watchd_client_new_finish:
 * @result: the #GAsyncResult given to the callback
 * @error: return location for a #GError
 *
 * Returns: (transfer full): the client, or %NULL with @error set
 */
WatchdClient *watchd_client_new_finish(GAsyncResult *result, GError **error) {
        g_autoptr(GObject) source = g_async_result_get_source_object(result);
        GObject *object = g_async_initable_new_finish(G_ASYNC_INITABLE(source), result, error);

        return object ? WATCHD_CLIENT(object) : NULL;
}

/**
 * watchd_client_new_sync:
 * @bus_type: %G_BUS_TYPE_SYSTEM or %G_BUS_TYPE_SESSION
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Connects to watchd on a message bus. It is not an error that watchd is
 * not running (see #WatchdClient:daemon-running): adding a watch starts it
 * if the bus can (D-Bus activation), and a client follows watchd as it
 * leaves and comes back.
 *
 * Returns: (transfer full): the client, or %NULL with @error set
 */
WatchdClient *watchd_client_new_sync(GBusType bus_type, GCancellable *cancellable, GError **error) {
        return g_initable_new(WATCHD_TYPE_CLIENT, cancellable, error, "bus-type", bus_type, NULL);
}

/**
 * watchd_client_new_for_address_sync:
 * @address: a D-Bus address
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Connects to watchd on the message bus at @address.
 *
 * Returns: (transfer full): the client, or %NULL with @error set
 */
WatchdClient *watchd_client_new_for_address_sync(const char *address, GCancellable *cancellable,
                                                 GError **error) {
        return g_initable_new(WATCHD_TYPE_CLIENT, cancellable, error, "address", address, NULL);
}

/**
 * watchd_client_new_for_connection_sync:
 * @connection: a message bus connection
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Uses @connection rather than a connection of the client's own. The
 * client leaves the program's other messages alone on it.
 *
 * Returns: (transfer full): the client, or %NULL with @error set
 */
WatchdClient *watchd_client_new_for_connection_sync(GDBusConnection *connection, GCancellable *cancellable,
                                                    GError **error) {
        g_return_val_if_fail(G_IS_DBUS_CONNECTION(connection), NULL);
        return g_initable_new(WATCHD_TYPE_CLIENT, cancellable, error, "connection", connection, NULL);
}

/**
 * watchd_client_get_connection:
 * @client: a #WatchdClient
 *
 * Returns: (transfer none) (nullable): the bus connection, %NULL before the
 *   client is initialized or after it was closed
 */
GDBusConnection *watchd_client_get_connection(WatchdClient *client) {
        GDBusConnection *c;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        g_mutex_lock(&client->core->lock);
        c = client->core->bus ? watchd_bus_get_connection(client->core->bus) : NULL;
        g_mutex_unlock(&client->core->lock);
        return c;
}

/**
 * watchd_client_get_main_context:
 * @client: a #WatchdClient
 *
 * Returns: (transfer none): the #GMainContext the signals of @client and of
 *   its subscriptions are emitted in
 */
GMainContext *watchd_client_get_main_context(WatchdClient *client) {
        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        return client->core->context;
}

/**
 * watchd_client_get_daemon_running:
 * @client: a #WatchdClient
 *
 * Returns: whether watchd is on the bus now
 */
gboolean watchd_client_get_daemon_running(WatchdClient *client) {
        gboolean running;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), FALSE);
        g_mutex_lock(&client->core->lock);
        running = client->core->owner != NULL;
        g_mutex_unlock(&client->core->lock);
        return running;
}

/**
 * watchd_client_dup_daemon_owner:
 * @client: a #WatchdClient
 *
 * Returns: (transfer full) (nullable): the unique bus name of watchd, %NULL
 *   if it is not running
 */
char *watchd_client_dup_daemon_owner(WatchdClient *client) {
        char *s;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        g_mutex_lock(&client->core->lock);
        s = g_strdup(client->core->owner);
        g_mutex_unlock(&client->core->lock);
        return s;
}

/**
 * watchd_client_dup_daemon_version:
 * @client: a #WatchdClient
 *
 * Returns: (transfer full) (nullable): watchd's Version property, as read
 *   when it took the bus name; %NULL if it is not running
 */
char *watchd_client_dup_daemon_version(WatchdClient *client) {
        char *s;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        g_mutex_lock(&client->core->lock);
        s = g_strdup(client->core->owner ? client->core->version : NULL);
        g_mutex_unlock(&client->core->lock);
        return s;
}

/**
 * watchd_client_get_capabilities:
 * @client: a #WatchdClient
 *
 * What the running watchd offers beyond its first API (its Capabilities
 * property; a watchd without it offers none).
 *
 * Returns: the capabilities
 */
WatchdDurableRouter *watchd_client_get_durable_router(WatchdClient *client) {
        return watchd_durable_router_ref(client->core->durables);
}

WatchdCapabilities watchd_client_get_capabilities(WatchdClient *client) {
        WatchdCapabilities caps;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), WATCHD_CAPABILITY_NONE);
        g_mutex_lock(&client->core->lock);
        caps = client->core->caps;
        g_mutex_unlock(&client->core->lock);
        return caps;
}

static void add_watch_done(GObject *source, GAsyncResult *result, gpointer userdata) {
        gpointer *data = userdata;      /* callback, user data, subscription */
        GAsyncReadyCallback callback = (GAsyncReadyCallback) data[0];
        WatchdSubscription *sub = data[2];

        if (callback)
                callback(source, result, data[1]);
        /* The caller has connected its handlers: the events may go. */
        watchd_client_release_hold(WATCHD_CLIENT(source), sub);
        g_object_unref(sub);
        g_free(data);
}

/**
 * watchd_client_add_watch:
 * @client: a #WatchdClient
 * @path: (type filename): an absolute path, bytes in the GLib file name
 *   encoding
 * @mask: the events to report
 * @flags: how to watch
 * @cancellable: (nullable): a #GCancellable
 * @callback: called with the answer, in the thread-default #GMainContext
 *   of the caller
 * @user_data: data for @callback
 *
 * Adds a watch: watchd_subscription_new() and watchd_subscription_start()
 * in one. No event of the new subscription is emitted before @callback has
 * returned, so that it can connect its handlers. Cancelling it makes the
 * call fail with %G_IO_ERROR_CANCELLED at once; if watchd had made the
 * subscription meanwhile, it is removed when its answer comes.
 */
void watchd_client_add_watch(WatchdClient *client, const char *path, WatchdEventMask mask, WatchdWatchFlags flags,
                             GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data) {
        WatchdSubscription *sub;
        gpointer *data;
        GTask *task;

        g_return_if_fail(WATCHD_IS_CLIENT(client));
        g_return_if_fail(path != NULL);
        sub = watchd_subscription_new(client, path, mask, flags);
        data = g_new(gpointer, 3);
        data[0] = (gpointer) callback;
        data[1] = user_data;
        data[2] = sub;
        task = g_task_new(client, cancellable, add_watch_done, data);
        g_task_set_source_tag(task, watchd_client_add_watch);
        watchd_client_start_subscription(client, sub, TRUE, cancellable, task);
}

/**
 * watchd_client_add_watch_finish:
 * @client: a #WatchdClient
 * @result: the #GAsyncResult given to the callback
 * @error: return location for a #GError
 *
 * Returns: (transfer full): the subscription, started; %NULL with @error set
 */
WatchdSubscription *watchd_client_add_watch_finish(WatchdClient *client, GAsyncResult *result, GError **error) {
        g_return_val_if_fail(g_task_is_valid(result, client), NULL);
        return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * watchd_client_add_watch_sync:
 * @client: a #WatchdClient
 * @path: (type filename): an absolute path
 * @mask: the events to report
 * @flags: how to watch
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Adds a watch and waits for watchd's answer (any thread may call this; no
 * main loop needs to run). Its events are emitted in the client's context:
 * from the thread of that context, connect the handlers before returning to
 * it; from another thread, use watchd_subscription_new(), connect, then
 * watchd_subscription_start_sync().
 *
 * Returns: (transfer full): the subscription, started; %NULL with @error set
 */
WatchdSubscription *watchd_client_add_watch_sync(WatchdClient *client, const char *path, WatchdEventMask mask,
                                                 WatchdWatchFlags flags, GCancellable *cancellable, GError **error) {
        g_autoptr(WatchdSubscription) sub = NULL;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        g_return_val_if_fail(path != NULL, NULL);
        sub = watchd_subscription_new(client, path, mask, flags);
        if (!watchd_subscription_start_sync(sub, cancellable, error))
                return NULL;
        return g_steal_pointer(&sub);
}

/**
 * watchd_client_list_watches_sync:
 * @client: a #WatchdClient
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * The subscriptions of this client's connection as watchd holds them
 * (ListWatches): an array of (id, path, mask, flags), the path as a byte
 * string (`ay`, a file name), in watchd's order.
 *
 * Returns: (transfer full): a #GVariant of type `a(uayuu)`, or %NULL with
 *   @error set
 */
GVariant *watchd_client_list_watches_sync(WatchdClient *client, GCancellable *cancellable, GError **error) {
        g_autoptr(GVariant) reply = NULL, list = NULL;
        GVariantBuilder b;
        GVariantIter it;
        const char *path;
        guint32 id, mask, flags;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        reply = core_call_sync(client->core, WATCHD_INTERFACE, "ListWatches", NULL, G_VARIANT_TYPE("(a(usuu))"),
                               cancellable, error);
        if (!reply)
                return NULL;
        list = g_variant_get_child_value(reply, 0);
        g_variant_builder_init(&b, G_VARIANT_TYPE("a(uayuu)"));
        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(u&suu)", &id, &path, &mask, &flags)) {
                g_autofree char *bytes = watchd_wire_path_decode(path, (flags & WATCHD_WIRE_PATH_ESCAPED) != 0, error);

                if (!bytes) {
                        g_variant_builder_clear(&b);
                        return NULL;
                }
                g_variant_builder_add(&b, "(u@ayuu)", id, g_variant_new_bytestring(bytes), mask,
                                      flags & ~WATCHD_WIRE_PATH_ESCAPED);
        }
        return g_variant_ref_sink(g_variant_builder_end(&b));
}

/**
 * watchd_client_get_stats_sync:
 * @client: a #WatchdClient
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * watchd's counters (GetStats; watchd(8) lists them).
 *
 * Returns: (transfer full): a #GVariant of type `a{sv}`, or %NULL with
 *   @error set
 */
GVariant *watchd_client_get_stats_sync(WatchdClient *client, GCancellable *cancellable, GError **error) {
        g_autoptr(GVariant) reply = NULL;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        reply = core_call_sync(client->core, WATCHD_INTERFACE, "GetStats", NULL, G_VARIANT_TYPE("(a{sv})"),
                               cancellable, error);
        return reply ? g_variant_get_child_value(reply, 0) : NULL;
}

/**
 * watchd_client_get_daemon_property_sync:
 * @client: a #WatchdClient
 * @name: a property of org.example.Inotify ("Version", "Backend", ...)
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Reads a property of watchd now (starting watchd if the bus can), rather
 * than the values kept since it took the name.
 *
 * Returns: (transfer full): the property's value, or %NULL with @error set
 */
GVariant *watchd_client_get_daemon_property_sync(WatchdClient *client, const char *name,
                                                 GCancellable *cancellable, GError **error) {
        g_autoptr(GVariant) reply = NULL;
        GVariant *value = NULL;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        g_return_val_if_fail(name != NULL, NULL);
        reply = core_call_sync(client->core, "org.freedesktop.DBus.Properties", "Get",
                               g_variant_new("(ss)", WATCHD_INTERFACE, name), G_VARIANT_TYPE("(v)"), cancellable,
                               error);
        if (reply)
                g_variant_get(reply, "(v)", &value);
        return value;
}

/**
 * watchd_client_close:
 * @client: a #WatchdClient
 *
 * Cancels every subscription of @client and closes its connection (if it
 * is the client's own). Subscriptions hold their client, so a client with
 * subscriptions is only freed once they are cancelled or removed; this does
 * it for all of them.
 */
void watchd_client_close(WatchdClient *client) {
        g_autoptr(GPtrArray) subs = g_ptr_array_new_with_free_func(g_object_unref);
        WatchdStreamReader *stream;
        GHashTableIter it;
        gpointer key;
        WatchdBus *bus;

        g_return_if_fail(WATCHD_IS_CLIENT(client));
        g_mutex_lock(&client->core->lock);
        g_hash_table_iter_init(&it, client->core->live);
        while (g_hash_table_iter_next(&it, &key, NULL))
                g_ptr_array_add(subs, g_object_ref(key));
        g_mutex_unlock(&client->core->lock);
        for (guint i = 0; i < subs->len; i++)
                watchd_subscription_cancel(subs->pdata[i]);

        g_mutex_lock(&client->core->lock);
        bus = g_steal_pointer(&client->core->bus);
        client->core->closed = TRUE;
        stream = core_steal_stream(client->core);
        g_mutex_unlock(&client->core->lock);
        watchd_stream_reader_free(stream);
        watchd_bus_close(bus);
}

/**
 * watchd_subscription_get_id:
 * @subscription: a #WatchdSubscription
 *
 * The id watchd gave the subscription at its last AddWatch: it changes when
 * watchd restarts, and is kept once the subscription has ended (so that a
 * #WatchdSubscription::removed handler can name it). Whether watchd holds it
 * now is watchd_subscription_is_active().
 *
 * Returns: the id, 0 before the subscription was first active
 */
guint32 watchd_subscription_get_id(WatchdSubscription *subscription) {
        WatchdClient *client;
        guint32 id;

        g_return_val_if_fail(WATCHD_IS_SUBSCRIPTION(subscription), 0);
        client = watchd_subscription_get_client(subscription);
        g_mutex_lock(&client->core->lock);
        id = PRIV(subscription)->last_id;
        g_mutex_unlock(&client->core->lock);
        return id;
}

/**
 * watchd_subscription_is_active:
 * @subscription: a #WatchdSubscription
 *
 * Returns: whether watchd holds the subscription now (not while it is being
 *   started, while watchd is away, or after it ended)
 */
gboolean watchd_subscription_is_active(WatchdSubscription *subscription) {
        WatchdClient *client;
        gboolean active;

        g_return_val_if_fail(WATCHD_IS_SUBSCRIPTION(subscription), FALSE);
        client = watchd_subscription_get_client(subscription);
        g_mutex_lock(&client->core->lock);
        active = PRIV(subscription)->state == SUB_ACTIVE;
        g_mutex_unlock(&client->core->lock);
        return active;
}
