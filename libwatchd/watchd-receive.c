/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-receive - what watchd sends: its signals and its record stream (see watchd-receive.h)
 */

#include <fcntl.h>
#include <gio/gunixfdlist.h>

#include "watchd-receive.h"
#include "watchd-route.h"
#include "watchd-start.h"
#include "watchd-wire.h"

/* ------------------------------------------------------------------------ */
/* Where the subscriptions are: ListWatches (GDBus's worker thread) */

static void core_deliver(Core *core, WatchdSubscription *sub, WatchdEvent *ev, gboolean may_ask);
static void core_on_removed_of(Core *core, WatchdSubscription *sub, const char *reason);

/* Lock held. What was held for the answer, in order; a record still
 * outside is dropped (it is not held twice). */
static void core_release_held(Core *core) {
        GQueue q;
        Held *h;

        core->resync_pending = FALSE;
        core_take_held(core, &q);
        while ((h = g_queue_pop_head(&q))) {
                WatchdSubscription *sub = g_hash_table_lookup(core->by_id, GUINT_TO_POINTER(h->id));

                if (!sub)
                        ; /* ended meanwhile: nothing of it goes out */
                else if (h->kind == ITEM_EVENTS)
                        core_deliver(core, sub, g_steal_pointer(&h->event), FALSE);
                else if (h->kind == ITEM_OVERFLOW)
                        core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_DAEMON, NULL, NULL);
                else
                        core_on_removed_of(core, sub, h->reason);
                held_free(h);
        }
}

typedef struct ListCall {
        Core *core;       /* a reference */
        guint generation; /* the owner it was asked of */
} ListCall;

static void core_on_list(gpointer userdata, const char *sender, GVariant *body, const GError *error) {
        ListCall *call = userdata;
        Core *core = call->core;

        g_mutex_lock(&core->lock);
        if (call->generation != core->generation || !core->resync_pending)
                ; /* another owner now: what was held went when this one left */
        else if (body && g_strcmp0(sender, core->owner) == 0 && g_variant_is_of_type(body, G_VARIANT_TYPE("(a(usuu))"))) {
                g_autoptr(GVariant) list = g_variant_get_child_value(body, 0);
                GVariantIter it;
                const char *wire;
                guint32 id, mask, flags;

                g_variant_iter_init(&it, list);
                while (g_variant_iter_next(&it, "(u&suu)", &id, &wire, &mask, &flags)) {
                        WatchdSubscription *sub = g_hash_table_lookup(core->by_id, GUINT_TO_POINTER(id));
                        g_autofree char *path = NULL;

                        if (!sub)
                                continue;
                        path = watchd_wire_path_decode(wire, (flags & WATCHD_WIRE_PATH_ESCAPED) != 0, NULL);
                        if (path && watchd_path_is_canonical(path, strlen(path)))
                                core_set_current_path(core, sub, path);
                        else
                                core_violation(core, VIOLATION_MALFORMED, "listed a malformed path for %u", id);
                }
                core_release_held(core);
        } else {
                if (body && g_strcmp0(sender, core->owner) == 0)
                        core_violation(core, VIOLATION_SIGNATURE,
                                       "answered ListWatches with the arguments %s, not (a(usuu))",
                                       g_variant_get_type_string(body));
                /* No answer to go by: the held records are judged by what is known. */
                core_release_held(core);
        }
        g_mutex_unlock(&core->lock);
        core_unref(core);
        g_free(call);
}

/* Lock held. Asks watchd where its subscriptions are now; whether it did. */
static gboolean core_ask_paths(Core *core) {
        ListCall *call;

        if (!core->bus || !core->owner)
                return FALSE;
        call = g_new(ListCall, 1);
        call->core = core_ref(core);
        call->generation = core->generation;
        if (!watchd_bus_call(core->bus, WATCHD_BUS_NAME, WATCHD_INTERFACE, "ListWatches", NULL, NULL, FALSE,
                             core_on_list, call, NULL)) {
                core_unref(core);
                g_free(call);
                return FALSE;
        }
        core->resync_pending = TRUE;
        return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Records (GDBus's worker thread, or the stream's) */

/* Lock held. An event of sub, its paths checked: to sub, or held while watchd
 * is asked where the subscriptions are (a path outside sub may be a rename
 * seen by a watch of another program: watchd follows it), or dropped. */
static void core_deliver(Core *core, WatchdSubscription *sub, WatchdEvent *ev, gboolean may_ask) {
        if (core->resync_pending)
                core_hold(core, sub, ITEM_EVENTS, ev, NULL);
        else if (core_route_event(core, sub, ev))
                ;
        else if (may_ask && core_ask_paths(core))
                core_hold(core, sub, ITEM_EVENTS, ev, NULL);
        else
                core_drop_outside(core, sub, ev);
}

/* The record as the library hands it out, or NULL with why it is not one
 * watchd may send: its paths are decoded (escaped in signals, bytes in the
 * stream), absolute, canonical and shorter than PATH_MAX, and a new path
 * is only in a rename pair. */
static WatchdEvent *record_event(guint32 mask, guint32 cookie, const char *wire_path, const char *wire_new_path,
                                 const char **ret_why) {
        gboolean escaped = (mask & WATCHD_WIRE_PATH_ESCAPED) != 0;
        g_autofree char *path = NULL, *new_path = NULL;

        if (*wire_new_path &&
            (mask & (WATCHD_EVENT_MOVED_FROM | WATCHD_EVENT_MOVED_TO)) !=
                    (WATCHD_EVENT_MOVED_FROM | WATCHD_EVENT_MOVED_TO)) {
                *ret_why = "a new path in a record that is not a rename";
                return NULL;
        }
        path = watchd_wire_path_decode(wire_path, escaped, NULL);
        new_path = path && *wire_new_path ? watchd_wire_path_decode(wire_new_path, escaped, NULL) : NULL;
        if (!path || (*wire_new_path && !new_path)) {
                *ret_why = "a malformed escaped path";
                return NULL;
        }
        if (!watchd_path_is_canonical(path, strlen(path)) ||
            (new_path && !watchd_path_is_canonical(new_path, strlen(new_path)))) {
                *ret_why = "a path that is not absolute and canonical, or not shorter than PATH_MAX";
                return NULL;
        }
        return watchd_event_new(mask & ~WATCHD_WIRE_PATH_ESCAPED, cookie, path, new_path);
}

/* Lock held. The subscription id names, if the record is the owner's and
 * id one it gave; NULL otherwise, after keeping what may be claimed by an
 * AddWatch not answered yet (ret_keep) and saying what watchd should not
 * have sent. */
static WatchdSubscription *core_lookup(Core *core, const char *sender, guint32 id, gboolean *ret_keep) {
        gboolean from_owner = g_strcmp0(sender, core->owner) == 0;
        WatchdSubscription *sub = from_owner ? g_hash_table_lookup(core->by_id, GUINT_TO_POINTER(id)) : NULL;

        *ret_keep = FALSE;
        if (sub || (from_owner && core_id_ended(core, id)))
                return sub; /* or late records of one ended: dropped quietly */
        if (core->adds_in_flight > 0)
                /* Before the answer the owner may not be known yet (bus
                 * activation): kept with their sender, claimed only by an
                 * answer from it. */
                *ret_keep = TRUE;
        else if (from_owner && !core->shared_connection)
                core_violation(core, VIOLATION_UNKNOWN_ID, "sent records of a subscription it never made (%u)", id);
        /* Anyone else's signal is dropped: on the system bus any peer may
         * send a signal to any other. */
        return NULL;
}

/* Lock held. One record of sender, whichever way it came. */
static void core_on_record(Core *core, const char *sender, guint32 id, guint32 mask, guint32 cookie, const char *path,
                           const char *new_path) {
        gboolean keep;
        WatchdSubscription *sub = core_lookup(core, sender, id, &keep);
        const char *why = NULL;
        WatchdEvent *ev;

        if (!sub && !keep)
                return;
        ev = record_event(mask, cookie, path, new_path, &why);
        if (!ev) {
                /* A record that cannot be believed is a lost event: say so. */
                if (g_strcmp0(sender, core->owner) == 0)
                        core_violation(core, VIOLATION_MALFORMED, "sent a malformed record (%s)", why);
                if (sub && core->resync_pending)
                        core_hold(core, sub, ITEM_OVERFLOW, NULL, NULL);
                else if (sub)
                        core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_DAEMON, NULL, NULL);
                else
                        core->unclaimed_lost = TRUE;
                return;
        }
        if (sub)
                core_deliver(core, sub, ev, TRUE);
        else
                core_keep_unclaimed(core, sender, id, ITEM_EVENTS, ev, NULL);
}

/* Lock held. Events of subscription id were lost. */
static void core_on_overflow_id(Core *core, const char *sender, guint32 id) {
        gboolean keep;
        WatchdSubscription *sub = core_lookup(core, sender, id, &keep);

        if (sub && core->resync_pending)
                core_hold(core, sub, ITEM_OVERFLOW, NULL, NULL);
        else if (sub)
                core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_DAEMON, NULL, NULL);
        else if (keep)
                core_keep_unclaimed(core, sender, id, ITEM_OVERFLOW, NULL, NULL);
}

static void core_on_removed_of(Core *core, WatchdSubscription *sub, const char *reason) {
        if (core_follows_path(core, sub, removed_reason_from_string(reason)))
                core_follow_again(core, sub);
        else
                core_end_sub(core, sub, removed_reason_from_string(reason), reason, NULL);
}

/* Lock held. The daemon ended subscription id. */
static void core_on_removed(Core *core, const char *sender, guint32 id, const char *reason) {
        gboolean keep;
        WatchdSubscription *sub = core_lookup(core, sender, id, &keep);

        if (sub && core->resync_pending)
                core_hold(core, sub, ITEM_REMOVED, NULL, reason);
        else if (sub)
                core_on_removed_of(core, sub, reason);
        else if (keep)
                core_keep_unclaimed(core, sender, id, ITEM_REMOVED, NULL, reason);
}

/* ------------------------------------------------------------------------ */
/* The daemon's signals (GDBus's worker thread) */

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

/* EventsPacked: the records of PACKED subscriptions as the stream's EVENT
 * frames (watchd(8)), paths as bytes. A frame that does not decode is a
 * record lost, and the rest of the signal with it: the owner's mistake. */
static void core_on_events_packed(Core *core, const char *sender, GVariant *body) {
        g_autoptr(GVariant) frames = g_variant_get_child_value(body, 0);
        gsize size = 0;
        const guint8 *p = g_variant_get_fixed_array(frames, &size, 1);

        while (size > 0) {
                StreamFrame f;
                int k = stream_frame_decode(p, size, &f);

                if (k <= 0) {
                        g_autoptr(GList) ids = NULL;

                        if (g_strcmp0(sender, core->owner) != 0)
                                return;
                        /* Which subscriptions' records were in the rest is unknown: all of them lost some. */
                        core_violation(core, VIOLATION_MALFORMED, "sent EventsPacked with a malformed frame");
                        ids = g_hash_table_get_keys(core->by_id);
                        for (GList *l = ids; l; l = l->next)
                                core_on_overflow_id(core, sender, GPOINTER_TO_UINT(l->data));
                        return;
                }
                if (f.type == STREAM_FRAME_EVENT)
                        core_on_record(core, sender, f.id, f.mask & ~WATCHD_WIRE_PATH_ESCAPED, f.cookie, f.path,
                                       f.new_path);
                /* Another type: a newer watchd's, skipped. */
                p += k;
                size -= (gsize) k;
        }
}

static void core_on_watch_removed(Core *core, const char *sender, GVariant *body) {
        const char *reason;
        guint32 id;

        g_variant_get(body, "(u&s)", &id, &reason);
        core_on_removed(core, sender, id, reason);
}

void core_on_signal(gpointer userdata, const char *sender, const char *member, GVariant *body) {
        static const struct {
                const char *member, *type;
                void (*handle)(Core *core, const char *sender, GVariant *body);
        } signals[] = {
                { "Events", "(a(uuuss))", core_on_events },
                { "EventsPacked", "(ay)", core_on_events_packed },
                { "Overflow", "(au)", core_on_overflow },
                { "WatchRemoved", "(us)", core_on_watch_removed },
        };
        Core *core = userdata;

        g_mutex_lock(&core->lock);
        for (size_t i = 0; i < G_N_ELEMENTS(signals); i++) {
                if (!g_str_equal(member, signals[i].member))
                        continue;
                if (g_variant_is_of_type(body, G_VARIANT_TYPE(signals[i].type)))
                        signals[i].handle(core, sender, body);
                else if (g_strcmp0(sender, core->owner) == 0)
                        core_violation(core, VIOLATION_SIGNATURE, "sent %s with the arguments %s, not %s", member,
                                       g_variant_get_type_string(body), signals[i].type);
                break;
        }
        /* Another member: a newer watchd's, which this library does not know. */
        g_mutex_unlock(&core->lock);
}

/* ------------------------------------------------------------------------ */
/* The record stream (its reader's thread, and GDBus's worker thread) */

/* The frames of one read of the stream. Paths there are bytes, never escaped.
 * Durable frames go to the WatchdDurables (watchd-durable.c), which say
 * whether the reader may read on. */
static gboolean core_on_stream_frames(gpointer userdata, const StreamFrame *frames, guint n) {
        Core *core = userdata;
        gboolean durable = FALSE;

        g_mutex_lock(&core->lock);
        /* A stream of a daemon that is no longer the owner: its records are
         * dropped, as its signals are. */
        if (core->stream_owner)
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
        else if (body && !g_variant_is_of_type(body, G_VARIANT_TYPE("(h)")) && g_strcmp0(sender, core->owner) == 0)
                core_violation(core, VIOLATION_SIGNATURE, "answered OpenStream with the arguments %s, not (h)",
                               g_variant_get_type_string(body));
        else if (body && fds && g_variant_is_of_type(body, G_VARIANT_TYPE("(h)")) && !core->closed && !core->stream &&
                 g_strcmp0(sender, core->owner) == 0) {
                gint32 index;

                g_variant_get(body, "(h)", &index);
                fd = g_unix_fd_list_get(fds, index, &local);
        }
        if (fd >= 0) {
                /* The reader's thread waits for the lock before its first frames. */
                core->stream = watchd_stream_reader_new(fd, &core_stream_callbacks, core_ref(core), core_unref, &local);
                if (core->stream) {
                        core->stream_owner = g_strdup(sender);
                        watchd_durable_router_set_stream(
                                core->durables, fcntl(watchd_stream_reader_resume_fd(core->stream), F_DUPFD_CLOEXEC, 3));
                } else
                        core_unref(core); /* the reader's, not taken; the call's is still held */
        }
        if (local)
                g_warning("libwatchd: cannot read the record stream (%s); records come as signals", local->message);
        g_cond_broadcast(&core->cond);
        g_mutex_unlock(&core->lock);
        core_unref(core);
}

/* Lock held: asks the owner for this connection's stream, if it offers one. */
void core_open_stream(Core *core) {
        if (!core->use_stream || !(core->caps & WATCHD_CAPABILITY_STREAM) || core->stream || core->stream_pending ||
            !core->owner || !core->bus || core->closed)
                return;
        core->stream_pending = TRUE;
        /* Its durable subscriptions' replays there too, if the daemon can: no round trip through the bus. */
        if (!watchd_bus_call_fds(core->bus, WATCHD_BUS_NAME, WATCHD_INTERFACE, "OpenStream",
                                 core->caps & WATCHD_CAPABILITY_DURABLE_STREAM ?
                                         g_variant_new_parsed("({'durable': <true>},)") :
                                         g_variant_new_parsed("(@a{sv} {},)"),
                                 core_on_stream_opened, core_ref(core), NULL)) {
                core->stream_pending = FALSE;
                core_unref(core);
        }
}

/* Lock held: the stream, to be freed once the lock is released (its thread may wait for it). */
WatchdStreamReader *core_steal_stream(Core *core) {
        g_clear_pointer(&core->stream_owner, g_free);
        watchd_durable_router_set_stream(core->durables, -1);
        return g_steal_pointer(&core->stream);
}
