/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-core - the state of a client of watchd, under one lock (see watchd-core.h)
 *
 * What the core holds of the daemon's records is bounded: at most
 * max-queued-events of them wait for the program's context and, in bytes,
 * at most max-queued-bytes of those together with the records kept for
 * an id not answered yet and those held while the daemon is asked where
 * its subscriptions are. Past either, all of them are dropped at once and
 * each subscription that lost some hears one overflow, as watchd does for
 * a client that falls behind (docs/CLIENTS.md).
 */

#include <stdarg.h>

#include "watchd-core.h"

/* ------------------------------------------------------------------------ */
/* Core and items */

Core *core_ref(Core *core) {
        g_atomic_int_inc(&core->ref_count);
        return core;
}

void item_free(Item *it) {
        g_clear_object(&it->sub);
        g_clear_pointer(&it->events, g_ptr_array_unref);
        g_free(it->detail);
        g_clear_error(&it->error);
        g_free(it);
}

void held_free(Held *h) {
        g_free(h->sender);
        g_clear_pointer(&h->event, watchd_event_unref);
        g_free(h->reason);
        g_free(h);
}

static void item_forget(Item *it) {
        if (it->sub && PRIV(it->sub)->last_overflow == it)
                PRIV(it->sub)->last_overflow = NULL;
        item_free(it);
}

void core_unref(gpointer p) {
        Core *core = p;

        if (!g_atomic_int_dec_and_test(&core->ref_count))
                return;
        g_weak_ref_clear(&core->client);
        if (core->dispatch) {
                g_source_destroy(core->dispatch);
                g_source_unref(core->dispatch);
        }
        g_main_context_unref(core->context);
        g_queue_clear_full(&core->items, (GDestroyNotify) item_forget);
        g_queue_clear_full(&core->unclaimed, (GDestroyNotify) held_free);
        g_queue_clear_full(&core->held, (GDestroyNotify) held_free);
        g_hash_table_destroy(core->doomed); /* drops the references (nobody holds the lock now) */
        g_hash_table_destroy(core->by_id);
        g_hash_table_destroy(core->live);
        path_index_free(core->by_path);
        g_hash_table_destroy(core->ended);
        g_queue_clear(&core->ended_order);
        g_free(core->owner);
        g_free(core->version);
        g_free(core->stream_owner);
        watchd_durable_router_unref(core->durables);
        g_mutex_clear(&core->lock);
        g_cond_clear(&core->cond);
        g_free(core);
}

void core_wake(Core *core) {
        g_source_set_ready_time(core->dispatch, 0);
}

/* What an event costs the core: the event (one allocation, both paths) and
 * its slot in an array. */
static gsize event_cost(const WatchdEvent *ev) {
        const char *np = watchd_event_get_new_path(ev);

        return 48 + strlen(watchd_event_get_path(ev)) + 1 + (np ? strlen(np) + 1 : 0) + sizeof(gpointer);
}

static gsize held_cost(const Held *h) {
        return sizeof(Held) + 32 + (h->event ? event_cost(h->event) : 0) + (h->sender ? strlen(h->sender) : 0) +
                (h->reason ? strlen(h->reason) : 0);
}

/* Lock held. Drops a reference to sub that may be its last: then its
 * finalization would drop the client's, whose dispose takes the lock. So
 * one such reference a subscription is kept, to be dropped by the dispatch
 * source without the lock, and the others, then not the last, go now. */
static void core_drop_sub(Core *core, WatchdSubscription *sub) {
        if (g_hash_table_contains(core->doomed, sub))
                g_object_unref(sub);
        else
                g_hash_table_add(core->doomed, sub);
        core_wake(core);
}

static gboolean is_loss(int reason) {
        return reason == WATCHD_OVERFLOW_DAEMON || reason == WATCHD_OVERFLOW_CLIENT;
}

/* Past a limit: every record held is dropped; each subscription that lost
 * some gets an overflow after what remains of it (its notices). */
static void core_drop_all(Core *core) {
        g_autoptr(GHashTable) hit = g_hash_table_new(NULL, NULL); /* sub -> its last item left */
        GHashTableIter iter;
        gpointer key, value;
        guint lost = 0;

        for (GList *l = core->items.head, *next; l; l = next) {
                Item *it = l->data;

                next = l->next;
                if (it->kind != ITEM_EVENTS)
                        continue;
                g_hash_table_insert(hit, it->sub, NULL);
                lost += it->events->len;
                core->queued_events -= it->events->len;
                core->held_bytes -= it->bytes;
                g_queue_delete_link(&core->items, l);
                core_drop_sub(core, g_steal_pointer(&it->sub));
                item_free(it);
        }
        for (GList *l = core->unclaimed.head, *next; l; l = next) {
                Held *h = l->data;

                next = l->next;
                if (h->kind != ITEM_EVENTS)
                        continue;
                core->held_bytes -= h->bytes;
                core->unclaimed_lost = TRUE; /* its subscription hears it when it is claimed */
                lost++;
                g_queue_delete_link(&core->unclaimed, l);
                held_free(h);
        }
        for (GList *l = core->held.head, *next; l; l = next) {
                Held *h = l->data;
                WatchdSubscription *sub;

                next = l->next;
                if (h->kind != ITEM_EVENTS)
                        continue;
                sub = g_hash_table_lookup(core->by_id, GUINT_TO_POINTER(h->id));
                if (sub)
                        g_hash_table_insert(hit, sub, NULL);
                core->held_bytes -= h->bytes;
                lost++;
                g_queue_delete_link(&core->held, l);
                held_free(h);
        }

        for (GList *l = core->items.head; l; l = l->next) {
                Item *it = l->data;

                if (it->sub && g_hash_table_contains(hit, it->sub))
                        g_hash_table_insert(hit, it->sub, it);
        }
        g_hash_table_iter_init(&iter, hit);
        while (g_hash_table_iter_next(&iter, &key, &value)) {
                Item *last = value;

                if (last && last->kind == ITEM_OVERFLOW && is_loss(last->reason))
                        PRIV(key)->last_overflow = last; /* it says this loss too */
                else
                        core_queue_notice(core, ITEM_OVERFLOW, key, WATCHD_OVERFLOW_CLIENT, NULL, NULL);
        }
        g_debug("libwatchd: dropped %u records: more than %u records or %zu bytes waited for the program", lost,
                core->max_queued_events, core->max_held_bytes);
}

static void core_check_limits(Core *core) {
        if (core->queued_events > core->max_queued_events || core->held_bytes > core->max_held_bytes)
                core_drop_all(core);
}

void core_queue_event(Core *core, WatchdSubscription *sub, WatchdEvent *ev) {
        Item *tail = g_queue_peek_tail(&core->items);
        gsize cost = event_cost(ev);

        if (!tail || tail->kind != ITEM_EVENTS || tail->sub != sub) {
                tail = g_new0(Item, 1);
                tail->kind = ITEM_EVENTS;
                tail->sub = g_object_ref(sub);
                tail->events = g_ptr_array_new_with_free_func((GDestroyNotify) watchd_event_unref);
                g_queue_push_tail(&core->items, tail);
        }
        g_ptr_array_add(tail->events, ev);
        tail->bytes += cost;
        core->held_bytes += cost;
        core->queued_events++;
        PRIV(sub)->last_overflow = NULL;
        core_check_limits(core);
        core_wake(core);
}

void core_queue_notice(Core *core, ItemKind kind, WatchdSubscription *sub, int reason, const char *detail,
                       const GError *error) {
        Item *it;

        if (kind == ITEM_OVERFLOW && is_loss(reason) && PRIV(sub)->last_overflow)
                return; /* the same loss: one overflow says it */
        it = g_new0(Item, 1);
        it->kind = kind;
        it->sub = sub ? g_object_ref(sub) : NULL;
        it->reason = reason;
        it->detail = g_strdup(detail);
        it->error = error ? g_error_copy(error) : NULL;
        g_queue_push_tail(&core->items, it);
        if (kind == ITEM_OVERFLOW && is_loss(reason))
                PRIV(sub)->last_overflow = it;
        core_wake(core);
}

void core_violation(Core *core, Violation kind, const char *format, ...) {
        g_autofree char *what = NULL;
        va_list ap;

        va_start(ap, format);
        what = g_strdup_vprintf(format, ap);
        va_end(ap);
        if (core->warned & kind) {
                g_debug("libwatchd: watchd (%s) %s", core->owner ?: "?", what);
                return;
        }
        core->warned |= kind;
        g_warning("libwatchd: watchd (%s) %s; it is not trusted for it, and more of the kind are not reported",
                  core->owner ?: "?", what);
}

/* ------------------------------------------------------------------------ */
/* The subscriptions' bookkeeping */

void core_add_live(Core *core, WatchdSubscription *sub) {
        if (!g_hash_table_add(core->live, g_object_ref(sub))) {
                g_object_unref(sub);
                return;
        }
        if (!PRIV(sub)->current)
                PRIV(sub)->current = g_strdup(PRIV(sub)->canonical);
        path_index_add(core->by_path, PRIV(sub)->current, sub);
}

/* Returns the reference live held, or NULL. */
WatchdSubscription *core_steal_live(Core *core, WatchdSubscription *sub) {
        if (!g_hash_table_steal(core->live, sub))
                return NULL;
        path_index_remove(core->by_path, PRIV(sub)->current, sub);
        /* Started again, it is where its path leads then. */
        g_clear_pointer(&PRIV(sub)->current, g_free);
        return sub;
}

void core_set_current_path(Core *core, WatchdSubscription *sub, const char *path) {
        if (!PRIV(sub)->current || g_str_equal(PRIV(sub)->current, path))
                return; /* not live, or there already */
        path_index_remove(core->by_path, PRIV(sub)->current, sub);
        g_free(PRIV(sub)->current);
        PRIV(sub)->current = g_strdup(path);
        path_index_add(core->by_path, PRIV(sub)->current, sub);
}

void core_remember_ended(Core *core, guint32 id) {
        if (id == 0 || !g_hash_table_add(core->ended, GUINT_TO_POINTER(id)))
                return;
        g_queue_push_tail(&core->ended_order, GUINT_TO_POINTER(id));
        if (core->ended_order.length > ENDED_IDS_MAX)
                g_hash_table_remove(core->ended, g_queue_pop_head(&core->ended_order));
}

gboolean core_id_ended(Core *core, guint32 id) {
        return g_hash_table_contains(core->ended, GUINT_TO_POINTER(id));
}

void core_forget_ended(Core *core) {
        g_hash_table_remove_all(core->ended);
        g_queue_clear(&core->ended_order);
}

void core_forget_id(Core *core, WatchdSubscription *sub) {
        guint32 id = PRIV(sub)->id;

        /* Only its own: an id watchd gave twice is not taken from the first holder. */
        if (g_hash_table_lookup(core->by_id, GUINT_TO_POINTER(id)) == sub) {
                g_hash_table_remove(core->by_id, GUINT_TO_POINTER(id));
                core_remember_ended(core, id);
        }
        PRIV(sub)->id = 0;
}

/* The daemon (or a refused re-add) ended sub: it emits "removed" and is no
 * longer live. */
void core_end_sub(Core *core, WatchdSubscription *sub, WatchdRemovedReason reason, const char *detail,
                  const GError *error) {
        WatchdSubscription *ref;

        core_forget_id(core, sub);
        PRIV(sub)->state = SUB_ENDED;
        ref = core_steal_live(core, sub);
        core_queue_notice(core, ITEM_REMOVED, sub, reason, detail, error);
        if (ref)
                g_object_unref(ref); /* the item holds one */
}

/* ------------------------------------------------------------------------ */
/* Records held back */

static Held *held_new(const char *sender, guint32 id, ItemKind kind, WatchdEvent *ev, const char *reason) {
        Held *h = g_new0(Held, 1);

        h->sender = g_strdup(sender);
        h->id = id;
        h->kind = kind;
        h->event = ev;
        h->reason = g_strdup(reason);
        h->bytes = held_cost(h);
        return h;
}

void core_keep_unclaimed(Core *core, const char *sender, guint32 id, ItemKind kind, WatchdEvent *ev, const char *reason) {
        Held *h;

        if (core->unclaimed.length >= MAX_UNCLAIMED) {
                h = g_queue_pop_head(&core->unclaimed);
                core->held_bytes -= h->bytes;
                held_free(h);
                core->unclaimed_lost = TRUE;
        }
        h = held_new(sender, id, kind, ev, reason);
        g_queue_push_tail(&core->unclaimed, h);
        core->held_bytes += h->bytes;
        core_check_limits(core);
}

gboolean core_drop_unclaimed(Core *core, const char *sender) {
        gboolean theirs = FALSE;
        Held *h;

        while ((h = g_queue_pop_head(&core->unclaimed))) {
                theirs |= sender && g_strcmp0(h->sender, sender) == 0;
                core->held_bytes -= h->bytes;
                held_free(h);
        }
        core->unclaimed_lost = FALSE;
        return theirs;
}

void core_drop_unclaimed_id(Core *core, guint32 id) {
        for (GList *l = core->unclaimed.head, *next; l; l = next) {
                Held *h = l->data;

                next = l->next;
                if (h->id != id)
                        continue;
                core->held_bytes -= h->bytes;
                g_queue_delete_link(&core->unclaimed, l);
                held_free(h);
        }
}

void core_hold(Core *core, WatchdSubscription *sub, ItemKind kind, WatchdEvent *ev, const char *reason) {
        Held *h = held_new(NULL, PRIV(sub)->id, kind, ev, reason);

        g_queue_push_tail(&core->held, h);
        core->held_bytes += h->bytes;
        core_check_limits(core);
}

void core_take_held(Core *core, GQueue *ret) {
        *ret = core->held;
        g_queue_init(&core->held);
        for (GList *l = ret->head; l; l = l->next)
                core->held_bytes -= ((Held *) l->data)->bytes;
}

void core_drop_held(Core *core) {
        GQueue q;

        core_take_held(core, &q);
        g_queue_clear_full(&q, (GDestroyNotify) held_free);
        core->resync_pending = FALSE;
}

/* ------------------------------------------------------------------------ */
/* The dispatch source (the client's context) */

typedef struct DispatchSource {
        GSource source;
        Core *core;
} DispatchSource;

static gboolean dispatch_source_dispatch(GSource *source, GSourceFunc callback, gpointer userdata) {
        Core *core = ((DispatchSource *) source)->core;
        GQueue ready = G_QUEUE_INIT;
        g_autoptr(GHashTable) doomed = NULL;
        WatchdClient *client;
        Item *it;

        g_mutex_lock(&core->lock);
        g_source_set_ready_time(source, -1);
        if (g_hash_table_size(core->doomed) > 0) {
                /* Dropped once the lock is released. */
                doomed = g_steal_pointer(&core->doomed);
                core->doomed = g_hash_table_new_full(NULL, NULL, g_object_unref, NULL);
        }
        for (GList *l = core->items.head, *next; l; l = next) {
                next = l->next;
                it = l->data;
                if (it->sub && PRIV(it->sub)->held)
                        continue; /* its handlers are not connected yet */
                if (it->kind == ITEM_EVENTS) {
                        core->queued_events -= it->events->len;
                        core->held_bytes -= it->bytes;
                }
                if (it->sub && PRIV(it->sub)->last_overflow == it)
                        PRIV(it->sub)->last_overflow = NULL;
                g_queue_unlink(&core->items, l);
                g_queue_push_tail_link(&ready, l);
        }
        g_mutex_unlock(&core->lock);

        client = g_weak_ref_get(&core->client);
        while ((it = g_queue_pop_head(&ready))) {
                /* Cancelled (maybe by a handler of the item before): silent. */
                if (!it->sub || !g_atomic_int_get(&PRIV(it->sub)->cancelled))
                        core->emit(client, it);
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

Core *core_new(WatchdClient *client, CoreEmitFunc emit) {
        Core *core = g_new0(Core, 1);

        core->ref_count = 1;
        g_weak_ref_init(&core->client, client);
        core->emit = emit;
        /* Every signal of the client and its subscriptions is emitted here. */
        core->context = g_main_context_ref_thread_default();
        g_mutex_init(&core->lock);
        g_cond_init(&core->cond);
        core->by_id = g_hash_table_new(NULL, NULL);
        core->live = g_hash_table_new(NULL, NULL);
        core->by_path = path_index_new();
        core->ended = g_hash_table_new(NULL, NULL);
        g_queue_init(&core->ended_order);
        g_queue_init(&core->items);
        g_queue_init(&core->unclaimed);
        g_queue_init(&core->held);
        core->doomed = g_hash_table_new_full(NULL, NULL, g_object_unref, NULL);
        core->durables = watchd_durable_router_new();
        core->dispatch = g_source_new(&dispatch_source_funcs, sizeof(DispatchSource));
        ((DispatchSource *) core->dispatch)->core = core; /* no reference: the core owns the source */
        g_source_set_static_name(core->dispatch, "WatchdClient dispatch");
        g_source_attach(core->dispatch, core->context);
        return core;
}

guint32 core_get_last_id(Core *core, WatchdSubscription *sub) {
        guint32 id;

        g_mutex_lock(&core->lock);
        id = PRIV(sub)->last_id;
        g_mutex_unlock(&core->lock);
        return id;
}

gboolean core_is_active(Core *core, WatchdSubscription *sub) {
        gboolean active;

        g_mutex_lock(&core->lock);
        active = PRIV(sub)->state == SUB_ACTIVE;
        g_mutex_unlock(&core->lock);
        return active;
}
