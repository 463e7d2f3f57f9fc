/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-durable-router - a durable subscription's records, in (see
 * watchd-durable-router.h)
 *
 * The client's DurableRouter hands the durable frames of its record stream
 * to the DurableCores resumed on it, by name; the filter of a DurableCore
 * takes the Durable* signals of the daemon that resumed it. Both put the
 * records on the DurableCore's queue, in batches, and say when it is full;
 * watchd-durable.c, above, takes them off in the main context.
 */

#include <errno.h>
#include <unistd.h>

#include "watchd-durable-router.h"
#include "watchd-bus.h"
#include "watchd-wire.h"

#include "stream_frame.h"

/* ------------------------------------------------------------------------ */
/* The router: a client's stream, to its WatchdDurables by name */

WatchdDurableRouter *watchd_durable_router_new(void) {
        WatchdDurableRouter *r = g_new0(WatchdDurableRouter, 1);

        r->ref_count = 1;
        g_mutex_init(&r->lock);
        r->cores = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, durable_core_unref);
        r->resume_fd = -1;
        return r;
}

WatchdDurableRouter *watchd_durable_router_ref(WatchdDurableRouter *r) {
        g_atomic_int_inc(&r->ref_count);
        return r;
}

void watchd_durable_router_unref(WatchdDurableRouter *r) {
        if (!r || !g_atomic_int_dec_and_test(&r->ref_count))
                return;
        g_hash_table_destroy(r->cores);
        if (r->resume_fd >= 0)
                close(r->resume_fd);
        g_mutex_clear(&r->lock);
        g_free(r);
}

void watchd_durable_router_set_stream(WatchdDurableRouter *r, int resume_fd) {
        g_mutex_lock(&r->lock);
        if (r->resume_fd >= 0)
                close(r->resume_fd);
        r->resume_fd = resume_fd;
        r->paused = FALSE;
        g_mutex_unlock(&r->lock);
}

/* Lock held: a paused stream reads again. */
void watchd_durable_router_resume(WatchdDurableRouter *r) {
        uint64_t one = 1;

        if (!r->paused)
                return;
        r->paused = FALSE;
        if (r->resume_fd >= 0 && write(r->resume_fd, &one, sizeof one) < 0)
                g_warning("libwatchd: cannot resume the record stream: %s", g_strerror(errno));
}

void watchd_durable_router_add(WatchdDurableRouter *r, DurableCore *c) {
        g_mutex_lock(&r->lock);
        /* A second resume of the same name on this connection takes its records over. */
        g_hash_table_replace(r->cores, c->name, durable_core_ref(c));
        g_mutex_unlock(&r->lock);
}

void watchd_durable_router_remove(WatchdDurableRouter *r, DurableCore *c) {
        g_mutex_lock(&r->lock);
        if (g_hash_table_lookup(r->cores, c->name) == c)
                g_hash_table_remove(r->cores, c->name);
        watchd_durable_router_resume(r); /* nothing of it holds the stream any more */
        g_mutex_unlock(&r->lock);
}

static char *dup_len(const char *s, size_t len) {
        return g_strndup(s, len);
}

static WatchdEvent *event_of_frame(const StreamFrame *f) {
        return watchd_event_new_with_id(f->cursor, f->mask & ~WATCHD_WIRE_PATH_ESCAPED, f->cookie, f->path,
                                        f->new_path_len > 0 ? f->new_path : NULL);
}

static GVariant *dirs_of_frame(const StreamFrame *f) {
        GVariantBuilder b;
        const char *path;
        size_t off = 0, len;
        uint32_t flags;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a(ayu)"));
        while (stream_frame_rescan_dir(f, &off, &path, &len, &flags) > 0)
                g_variant_builder_add(&b, "(@ayu)", g_variant_new_bytestring(path), flags);
        return g_variant_ref_sink(g_variant_builder_end(&b));
}

/* The stream reader's thread: the durable frames of one read, in order. */
gboolean watchd_durable_router_frames(WatchdDurableRouter *r, const StreamFrame *frames, guint n) {
        gboolean more = TRUE;

        g_mutex_lock(&r->lock);
        for (guint i = 0; i < n;) {
                const StreamFrame *f = &frames[i];
                g_autofree char *name = dup_len(f->name, f->name_len);
                DurableCore *c = g_hash_table_lookup(r->cores, name);
                DurableItem *it;

                if (!c) {
                        i++; /* not (or no longer) resumed here */
                        continue;
                }
                it = g_new0(DurableItem, 1);
                if (f->type == STREAM_FRAME_DURABLE_EVENT) {
                        /* The records of this name that follow, in one batch. */
                        it->kind = DURABLE_ITEM_EVENTS;
                        it->events = g_ptr_array_new_full(MIN(n - i, BATCH_MAX), (GDestroyNotify) watchd_event_unref);
                        while (i < n && it->events->len < BATCH_MAX && frames[i].type == STREAM_FRAME_DURABLE_EVENT &&
                               frames[i].name_len == f->name_len && memcmp(frames[i].name, f->name, f->name_len) == 0)
                                g_ptr_array_add(it->events, event_of_frame(&frames[i++]));
                        more = durable_core_push(c, it, it->events->len) && more;
                        continue;
                }
                if (f->type == STREAM_FRAME_DURABLE_RESCAN) {
                        it->kind = DURABLE_ITEM_RESCAN;
                        it->id = f->cursor;
                        it->reason = dup_len(f->reason, f->reason_len);
                        it->dirs = dirs_of_frame(f);
                } else if (f->type == STREAM_FRAME_DURABLE_CAUGHT_UP) {
                        it->kind = DURABLE_ITEM_CAUGHT_UP;
                        it->id = f->cursor;
                } else {
                        it->kind = DURABLE_ITEM_STOPPED;
                        it->reason = dup_len(f->reason, f->reason_len);
                }
                more = durable_core_push(c, it, 0) && more;
                i++;
        }
        if (!more)
                r->paused = TRUE;
        g_mutex_unlock(&r->lock);
        return more;
}

/* ------------------------------------------------------------------------ */
/* The core: its queue, filled; the filter */

void durable_item_free(DurableItem *it) {
        g_clear_pointer(&it->events, g_ptr_array_unref);
        g_free(it->reason);
        g_clear_pointer(&it->dirs, g_variant_unref);
        g_free(it);
}

DurableCore *durable_core_ref(DurableCore *c) {
        g_atomic_int_inc(&c->ref_count);
        return c;
}

void durable_core_unref(gpointer p) {
        DurableCore *c = p;

        if (!c || !g_atomic_int_dec_and_test(&c->ref_count))
                return;
        if (c->source) {
                g_source_destroy(c->source);
                g_source_unref(c->source);
        }
        g_queue_clear_full(&c->items, (GDestroyNotify) durable_item_free);
        g_queue_clear_full(&c->held_pings, g_object_unref);
        watchd_durable_router_unref(c->router);
        g_clear_object(&c->connection);
        g_weak_ref_clear(&c->object);
        g_free(c->name);
        g_free(c->owner);
        g_mutex_clear(&c->lock);
        g_free(c);
}

/* Any thread: it, with records of them, at the end of the queue. Returns
 * whether more may come (the queue is under QUEUE_HIGH). */
gboolean durable_core_push(DurableCore *c, DurableItem *it, guint records) {
        gboolean more;

        g_mutex_lock(&c->lock);
        if (c->ended) {
                g_mutex_unlock(&c->lock);
                durable_item_free(it);
                return TRUE;
        }
        g_queue_push_tail(&c->items, it);
        c->queued += records;
        more = c->queued < QUEUE_HIGH;
        g_mutex_unlock(&c->lock);
        g_source_set_ready_time(c->source, 0);
        return more;
}

static void add_event(GPtrArray *events, guint64 id, guint32 mask, guint32 cookie, const char *p, const char *np) {
        gboolean escaped = (mask & WATCHD_WIRE_PATH_ESCAPED) != 0;
        g_autofree char *path = NULL, *new_path = NULL;

        if (escaped) {
                path = watchd_wire_path_decode(p, TRUE, NULL);
                new_path = *np ? watchd_wire_path_decode(np, TRUE, NULL) : NULL;
                if (!path)
                        return;
        }
        g_ptr_array_add(events,
                        watchd_event_new_with_id(id, mask & ~WATCHD_WIRE_PATH_ESCAPED, cookie, path ?: p,
                                                 escaped ? new_path : (*np ? np : NULL)));
}

/*
 * A DurableEvents signal as an item. GDBus (2.74) hands the body over as a
 * tree of values, six a record: they are walked value by value (a format
 * string with "&" would have the whole body serialised first, and
 * serialising costs more than the walk: 500 against 400 ns a record, the
 * GDBus parse itself 890).
 */
static DurableItem *item_of_events(GVariant *body) {
        g_autoptr(GVariant) records = g_variant_get_child_value(body, 1);
        gsize n = g_variant_n_children(records);
        DurableItem *it = g_new0(DurableItem, 1);

        it->kind = DURABLE_ITEM_EVENTS;
        it->events = g_ptr_array_new_full((guint) n, (GDestroyNotify) watchd_event_unref);
        for (gsize i = 0; i < n; i++) {
                g_autoptr(GVariant) rec = g_variant_get_child_value(records, i);
                g_autoptr(GVariant) v_id = g_variant_get_child_value(rec, 0), v_mask = g_variant_get_child_value(rec, 1);
                g_autoptr(GVariant) v_cookie = g_variant_get_child_value(rec, 2);
                g_autoptr(GVariant) v_path = g_variant_get_child_value(rec, 3), v_new = g_variant_get_child_value(rec, 4);

                add_event(it->events, g_variant_get_uint64(v_id), g_variant_get_uint32(v_mask),
                          g_variant_get_uint32(v_cookie), g_variant_get_string(v_path, NULL),
                          g_variant_get_string(v_new, NULL));
        }
        return it;
}

/* A DurableRescan signal as an item: its directories as bytes; one that cannot be named makes it whole. */
static DurableItem *item_of_rescan(GVariant *body) {
        g_autoptr(GVariantIter) iter = NULL;
        gboolean whole = FALSE;
        GVariantBuilder b;
        const char *reason, *dir;
        guint32 flags;
        DurableItem *it = g_new0(DurableItem, 1);

        it->kind = DURABLE_ITEM_RESCAN;
        g_variant_get(body, "(&st&sa(su))", NULL, &it->id, &reason, &iter);
        it->reason = g_strdup(reason);
        g_variant_builder_init(&b, G_VARIANT_TYPE("a(ayu)"));
        while (g_variant_iter_next(iter, "(&su)", &dir, &flags)) {
                g_autofree char *bytes = watchd_wire_path_decode(dir, (flags & WATCHD_WIRE_PATH_ESCAPED) != 0, NULL);

                if (!bytes) {
                        whole = TRUE;
                        continue;
                }
                g_variant_builder_add(&b, "(@ayu)", g_variant_new_bytestring(bytes), flags & ~WATCHD_WIRE_PATH_ESCAPED);
        }
        it->dirs = g_variant_ref_sink(g_variant_builder_end(&b));
        if (whole) {
                g_variant_unref(it->dirs);
                it->dirs = g_variant_ref_sink(g_variant_new_array(G_VARIANT_TYPE("(ayu)"), NULL, 0));
        }
        return it;
}

/*
 * GDBus's worker thread, for every message in and out: the owner's Durable*
 * signals for this name become items; its Peer.Ping is held while the queue
 * is full (its answer would tell the daemon everything before it was taken).
 */
GDBusMessage *durable_core_on_filter(GDBusConnection *connection, GDBusMessage *m, gboolean incoming, gpointer userdata) {
        DurableCore *c = userdata;
        const char *member = g_dbus_message_get_member(m);
        GVariant *body;
        const char *name = NULL;
        DurableItem *it = NULL;
        guint records = 0;

        if (!incoming || g_strcmp0(g_dbus_message_get_sender(m), c->owner) != 0 || !member)
                return m;
        if (g_dbus_message_get_message_type(m) == G_DBUS_MESSAGE_TYPE_METHOD_CALL) {
                if (g_strcmp0(g_dbus_message_get_interface(m), "org.freedesktop.DBus.Peer") != 0 ||
                    strcmp(member, "Ping") != 0)
                        return m;
                g_mutex_lock(&c->lock);
                if (c->ended || c->queued < QUEUE_HIGH) {
                        g_mutex_unlock(&c->lock);
                        return m; /* GDBus answers it */
                }
                g_queue_push_tail(&c->held_pings, m); /* answered by on_dispatch() (watchd-durable.c) */
                g_mutex_unlock(&c->lock);
                return NULL;
        }
        if (g_dbus_message_get_message_type(m) != G_DBUS_MESSAGE_TYPE_SIGNAL ||
            g_strcmp0(g_dbus_message_get_interface(m), WATCHD_INTERFACE) != 0 ||
            g_strcmp0(g_dbus_message_get_path(m), WATCHD_OBJECT_PATH) != 0 || !g_str_has_prefix(member, "Durable"))
                return m;
        body = g_dbus_message_get_body(m);
        /* Every Durable* signal starts with the subscription's name. */
        if (!body || !g_str_has_prefix(g_variant_get_type_string(body), "(s"))
                return m;
        {
                g_autoptr(GVariant) v = g_variant_get_child_value(body, 0);

                name = g_variant_get_string(v, NULL);
                if (!g_str_equal(name, c->name))
                        return m;
        }

        if (g_str_equal(member, "DurableEvents") && g_variant_is_of_type(body, G_VARIANT_TYPE("(sa(tuuss))"))) {
                it = item_of_events(body);
                records = it->events->len;
        } else if (g_str_equal(member, "DurableRescan") && g_variant_is_of_type(body, G_VARIANT_TYPE("(stsa(su))")))
                it = item_of_rescan(body);
        else if (g_str_equal(member, "DurableCaughtUp") && g_variant_is_of_type(body, G_VARIANT_TYPE("(st)"))) {
                it = g_new0(DurableItem, 1);
                it->kind = DURABLE_ITEM_CAUGHT_UP;
                g_variant_get(body, "(&st)", NULL, &it->id);
        } else if (g_str_equal(member, "DurableStopped") && g_variant_is_of_type(body, G_VARIANT_TYPE("(ss)"))) {
                const char *reason;

                it = g_new0(DurableItem, 1);
                it->kind = DURABLE_ITEM_STOPPED;
                g_variant_get(body, "(&s&s)", NULL, &reason);
                it->reason = g_strdup(reason);
        }
        if (it)
                (void) durable_core_push(c, it, records);
        return m;
}
