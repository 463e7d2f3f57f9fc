/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-event - one event as the library hands it to programs
 *
 * One allocation holds the event and both of its paths: a storm of events
 * costs one malloc each. Events are immutable once made, so they are shared
 * between threads by reference without a lock.
 */

#include <string.h>

#include "watchd-private.h"

struct _WatchdEvent {
        gint ref_count;
        guint64 id; /* a durable subscription's: its id in the journal; else 0 */
        WatchdEventMask mask;
        guint32 cookie;
        char *new_path; /* into path[], or NULL */
        char path[];
};

G_DEFINE_BOXED_TYPE(WatchdEvent, watchd_event, watchd_event_ref, watchd_event_unref)

/**
 * watchd_event_new:
 * @mask: what happened
 * @cookie: the rename cookie, or 0
 * @path: (type filename): the absolute path the event is about
 * @new_path: (type filename) (nullable): the new path of a rename seen whole
 *
 * An event as the library hands them out, for programs that replay or
 * test their handling of events.
 *
 * Returns: (transfer full): the event
 */
WatchdEvent *watchd_event_new(WatchdEventMask mask, guint32 cookie, const char *path, const char *new_path) {
        size_t len, new_len;
        WatchdEvent *e;

        g_return_val_if_fail(path != NULL, NULL);
        len = strlen(path);
        new_len = new_path ? strlen(new_path) : 0;
        e = g_malloc(sizeof(WatchdEvent) + len + 1 + (new_path ? new_len + 1 : 0));

        e->ref_count = 1;
        e->id = 0;
        e->mask = mask;
        e->cookie = cookie;
        memcpy(e->path, path, len + 1);
        if (new_path) {
                e->new_path = e->path + len + 1;
                memcpy(e->new_path, new_path, new_len + 1);
        } else
                e->new_path = NULL;
        return e;
}

WatchdEvent *watchd_event_new_with_id(guint64 id, WatchdEventMask mask, guint32 cookie, const char *path,
                                      const char *new_path) {
        WatchdEvent *e = watchd_event_new(mask, cookie, path, new_path);

        e->id = id;
        return e;
}

/**
 * watchd_event_ref:
 * @event: a #WatchdEvent
 *
 * Returns: (transfer full): @event, with one more reference
 */
WatchdEvent *watchd_event_ref(WatchdEvent *event) {
        g_return_val_if_fail(event, NULL);
        g_atomic_int_inc(&event->ref_count);
        return event;
}

/**
 * watchd_event_unref:
 * @event: (transfer full): a #WatchdEvent
 *
 * Drops a reference; the last one frees the event.
 */
void watchd_event_unref(WatchdEvent *event) {
        g_return_if_fail(event);
        if (g_atomic_int_dec_and_test(&event->ref_count))
                g_free(event);
}

/**
 * watchd_event_get_id:
 * @event: a #WatchdEvent
 *
 * The record's id in its durable subscription's journal (see
 * #WatchdDurable::events): the cursor to keep once it is processed. 0 for
 * the events of an ordinary subscription.
 *
 * Returns: the id, or 0
 */
guint64 watchd_event_get_id(const WatchdEvent *event) {
        g_return_val_if_fail(event, 0);
        return event->id;
}

/**
 * watchd_event_get_mask:
 * @event: a #WatchdEvent
 *
 * What happened: one event bit (two for a rename), with
 * %WATCHD_EVENT_ISDIR if the object is a directory.
 *
 * Returns: the event's bits
 */
WatchdEventMask watchd_event_get_mask(const WatchdEvent *event) {
        g_return_val_if_fail(event, 0);
        return event->mask;
}

/**
 * watchd_event_get_cookie:
 * @event: a #WatchdEvent
 *
 * The kernel's cookie that links the two halves of a rename, 0 for other
 * events. A half delivered alone (moved in or out of what is watched) keeps
 * its cookie.
 *
 * Returns: the cookie
 */
guint32 watchd_event_get_cookie(const WatchdEvent *event) {
        g_return_val_if_fail(event, 0);
        return event->cookie;
}

/**
 * watchd_event_get_path:
 * @event: a #WatchdEvent
 *
 * The absolute path of the object the event is about: the watched path, or
 * the watched directory's path and a child's name. For a rename, the old path.
 *
 * Returns: (type filename): the path, bytes in the GLib file name encoding
 */
const char *watchd_event_get_path(const WatchdEvent *event) {
        g_return_val_if_fail(event, NULL);
        return event->path;
}

/**
 * watchd_event_get_new_path:
 * @event: a #WatchdEvent
 *
 * Returns: (type filename) (nullable): the new path of a rename whose two
 *   halves were seen, else %NULL
 */
const char *watchd_event_get_new_path(const WatchdEvent *event) {
        g_return_val_if_fail(event, NULL);
        return event->new_path;
}

/**
 * watchd_event_is_dir:
 * @event: a #WatchdEvent
 *
 * Returns: whether the object of the event is a directory
 */
gboolean watchd_event_is_dir(const WatchdEvent *event) {
        g_return_val_if_fail(event, FALSE);
        return (event->mask & WATCHD_EVENT_ISDIR) != 0;
}

/**
 * watchd_event_is_rename:
 * @event: a #WatchdEvent
 *
 * Returns: whether the event is a whole rename, with both paths
 */
gboolean watchd_event_is_rename(const WatchdEvent *event) {
        g_return_val_if_fail(event, FALSE);
        return (event->mask & WATCHD_EVENT_MOVE) == WATCHD_EVENT_MOVE && event->new_path != NULL;
}
