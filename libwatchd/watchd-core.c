/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-core - the state of a client of watchd, under one lock (see watchd-core.h)
 */

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

void unclaimed_free(Unclaimed *u) {
        g_free(u->sender);
        g_clear_pointer(&u->event, watchd_event_unref);
        g_free(u->reason);
        g_free(u);
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
        g_queue_clear_full(&core->items, (GDestroyNotify) item_free);
        g_queue_clear_full(&core->unclaimed, (GDestroyNotify) unclaimed_free);
        g_hash_table_destroy(core->by_id);
        g_hash_table_destroy(core->live);
        g_hash_table_destroy(core->by_dir);
        g_free(core->owner);
        g_free(core->version);
        g_free(core->stream_owner);
        g_mutex_clear(&core->lock);
        g_cond_clear(&core->cond);
        g_free(core);
}

void core_wake(Core *core) {
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
void core_queue_event(Core *core, WatchdSubscription *sub, WatchdEvent *ev) {
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
void core_queue_notice(Core *core, ItemKind kind, WatchdSubscription *sub, int reason, const char *detail,
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

void core_add_live(Core *core, WatchdSubscription *sub) {
        if (g_hash_table_add(core->live, g_object_ref(sub)))
                by_dir_add(core, sub);
        else
                g_object_unref(sub);
}

/* Returns the reference live held, or NULL. */
WatchdSubscription *core_steal_live(Core *core, WatchdSubscription *sub) {
        if (!g_hash_table_steal(core->live, sub))
                return NULL;
        by_dir_remove(core, sub);
        return sub;
}

void core_forget_id(Core *core, WatchdSubscription *sub) {
        if (PRIV(sub)->id != 0)
                g_hash_table_remove(core->by_id, GUINT_TO_POINTER(PRIV(sub)->id));
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
                g_object_unref(ref);    /* the item holds one */
}

void core_keep_unclaimed(Core *core, const char *sender, guint32 id, ItemKind kind, WatchdEvent *ev,
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

void core_drop_unclaimed(Core *core) {
        g_queue_clear_full(&core->unclaimed, (GDestroyNotify) unclaimed_free);
        g_queue_init(&core->unclaimed);
        core->unclaimed_lost = FALSE;
}

typedef struct DispatchSource {
        GSource source;
        Core *core;
} DispatchSource;

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
        core->by_dir = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_ptr_array_unref);
        g_queue_init(&core->items);
        g_queue_init(&core->unclaimed);
        core->dispatch = g_source_new(&dispatch_source_funcs, sizeof(DispatchSource));
        ((DispatchSource *) core->dispatch)->core = core;       /* no reference: the core owns the source */
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
