/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#if !defined(WATCHD_INSIDE) && !defined(WATCHD_COMPILATION)
#error "Only <watchd.h> can be included directly."
#endif

#include <gio/gio.h>

#include "watchd-types.h"
#include "watchd-event.h"
#include "watchd-subscription.h"

G_BEGIN_DECLS

/**
 * WATCHD_SNAPSHOT_DEFAULT_MAX_ENTRIES:
 *
 * How many entries a #WatchdSnapshot holds at most unless told otherwise
 * (#WatchdSnapshot:max-entries): about 13 MB of memory.
 */
#define WATCHD_SNAPSHOT_DEFAULT_MAX_ENTRIES 100000

#define WATCHD_TYPE_SNAPSHOT (watchd_snapshot_get_type())
WATCHD_EXPORT G_DECLARE_FINAL_TYPE(WatchdSnapshot, watchd_snapshot, WATCHD, SNAPSHOT, GObject)

WATCHD_EXPORT WatchdSnapshot *watchd_snapshot_new(const char *path, gboolean recursive);
WATCHD_EXPORT const char *watchd_snapshot_get_path(WatchdSnapshot *snapshot);
WATCHD_EXPORT gboolean watchd_snapshot_get_recursive(WatchdSnapshot *snapshot);
WATCHD_EXPORT guint watchd_snapshot_get_max_entries(WatchdSnapshot *snapshot);
WATCHD_EXPORT void watchd_snapshot_set_max_entries(WatchdSnapshot *snapshot, guint max_entries);
WATCHD_EXPORT gboolean watchd_snapshot_is_known(WatchdSnapshot *snapshot);
WATCHD_EXPORT guint watchd_snapshot_get_n_entries(WatchdSnapshot *snapshot);

WATCHD_EXPORT gboolean watchd_snapshot_scan(WatchdSnapshot *snapshot, GError **error);
WATCHD_EXPORT void watchd_snapshot_note_event(WatchdSnapshot *snapshot, const WatchdEvent *event);
WATCHD_EXPORT void watchd_snapshot_note_events(WatchdSnapshot *snapshot, GPtrArray *events);
WATCHD_EXPORT GPtrArray *watchd_snapshot_rescan(WatchdSnapshot *snapshot, GError **error);

WATCHD_EXPORT void watchd_snapshot_follow(WatchdSnapshot *snapshot, WatchdSubscription *subscription);

G_END_DECLS
