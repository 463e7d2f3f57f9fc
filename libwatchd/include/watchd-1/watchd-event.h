/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#if !defined(WATCHD_INSIDE) && !defined(WATCHD_COMPILATION)
#error "Only <watchd.h> can be included directly."
#endif

#include <glib-object.h>

#include "watchd-types.h"

G_BEGIN_DECLS

/**
 * WatchdEvent:
 *
 * One event of a subscription: what happened (a #WatchdEventMask) and to
 * which path. Paths are file names, bytes in the GLib file name encoding,
 * not necessarily UTF-8. A rename whose two halves were seen is one event
 * with both paths. Immutable and reference counted; any thread may read it.
 */
typedef struct _WatchdEvent WatchdEvent;

#define WATCHD_TYPE_EVENT (watchd_event_get_type())
WATCHD_EXPORT GType watchd_event_get_type(void) G_GNUC_CONST;

WATCHD_EXPORT WatchdEvent *watchd_event_new(WatchdEventMask mask, guint32 cookie, const char *path, const char *new_path);
WATCHD_EXPORT WatchdEvent *watchd_event_ref(WatchdEvent *event);
WATCHD_EXPORT void watchd_event_unref(WatchdEvent *event);

WATCHD_EXPORT guint64 watchd_event_get_id(const WatchdEvent *event);
WATCHD_EXPORT WatchdEventMask watchd_event_get_mask(const WatchdEvent *event);
WATCHD_EXPORT guint32 watchd_event_get_cookie(const WatchdEvent *event);
WATCHD_EXPORT const char *watchd_event_get_path(const WatchdEvent *event);
WATCHD_EXPORT const char *watchd_event_get_new_path(const WatchdEvent *event);
WATCHD_EXPORT gboolean watchd_event_is_dir(const WatchdEvent *event);
WATCHD_EXPORT gboolean watchd_event_is_rename(const WatchdEvent *event);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(WatchdEvent, watchd_event_unref)

G_END_DECLS
