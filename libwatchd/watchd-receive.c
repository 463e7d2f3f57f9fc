/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-receive - what watchd sends: its signals and its record stream (see watchd-receive.h)
 */

#include <gio/gunixfdlist.h>

#include "watchd-receive.h"
#include "watchd-route.h"
#include "watchd-start.h"
#include "watchd-wire.h"

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

static void core_on_watch_removed(Core *core, const char *sender, GVariant *body) {
        const char *reason;
        guint32 id;

        g_variant_get(body, "(u&s)", &id, &reason);
        core_on_removed(core, sender, id, reason);
}

void core_on_signal(gpointer userdata, const char *sender, const char *member, GVariant *body) {
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

/* The frames of one read of the stream. Paths there are bytes, never escaped. */
static void core_on_stream_frames(gpointer userdata, const StreamFrame *frames, guint n) {
        Core *core = userdata;

        g_mutex_lock(&core->lock);
        /* A stream of a daemon that is no longer the owner: its records are
         * dropped, as its signals are. */
        if (core->stream_owner)
                for (guint i = 0; i < n; i++) {
                        const StreamFrame *f = &frames[i];

                        if (f->type == STREAM_FRAME_EVENT)
                                core_on_record(core, core->stream_owner, f->id, f->mask & ~WATCHD_WIRE_PATH_ESCAPED,
                                               f->cookie, f->path, f->new_path);
                        else if (f->type == STREAM_FRAME_OVERFLOW)
                                for (size_t k = 0; k < f->n_ids; k++)
                                        core_on_overflow_id(core, core->stream_owner, stream_frame_overflow_id(f, k));
                        else if (f->type == STREAM_FRAME_REMOVED)
                                core_on_removed(core, core->stream_owner, f->id, f->reason);
                }
        g_mutex_unlock(&core->lock);
}

/* The daemon closed the stream (it is leaving), or the reader could not read it
 * and closed its end (then the daemon sends signals again, Overflow first). */
static void core_on_stream_ended(gpointer userdata, const GError *error) {
        Core *core = userdata;

        g_mutex_lock(&core->lock);
        g_clear_pointer(&core->stream_owner, g_free);
        g_mutex_unlock(&core->lock);
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
                if (core->stream)
                        core->stream_owner = g_strdup(sender);
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
void core_open_stream(Core *core) {
        if (!core->use_stream || !(core->caps & WATCHD_CAPABILITY_STREAM) || core->stream || core->stream_pending ||
            !core->owner || !core->bus || core->closed)
                return;
        core->stream_pending = TRUE;
        if (!watchd_bus_call_fds(core->bus, WATCHD_BUS_NAME, WATCHD_INTERFACE, "OpenStream",
                                 g_variant_new_parsed("(@a{sv} {},)"), core_on_stream_opened, core_ref(core), NULL)) {
                core->stream_pending = FALSE;
                core_unref(core);
        }
}

/* Lock held: the stream, to be freed once the lock is released (its thread may wait for it). */
WatchdStreamReader *core_steal_stream(Core *core) {
        g_clear_pointer(&core->stream_owner, g_free);
        return g_steal_pointer(&core->stream);
}
