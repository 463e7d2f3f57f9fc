/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#if !defined(WATCHD_INSIDE) && !defined(WATCHD_COMPILATION)
#error "Only <watchd.h> can be included directly."
#endif

#include <gio/gio.h>

#include "watchd-types.h"
#include "watchd-client.h"

G_BEGIN_DECLS

/*
 * Durable subscriptions (watchd(8), DURABLE SUBSCRIPTIONS): kept by the
 * daemon across disconnects and restarts, their records in a journal, each
 * with a 64-bit id. A program resumes one with the cursor it stored (the id
 * of the last record it processed) and gets what followed, then
 * "caught-up", then what comes live; where records were lost, "rescan".
 */

#define WATCHD_TYPE_DURABLE (watchd_durable_get_type())
WATCHD_EXPORT G_DECLARE_FINAL_TYPE(WatchdDurable, watchd_durable, WATCHD, DURABLE, GObject)

WATCHD_EXPORT gboolean watchd_client_create_durable_sync(WatchdClient *client, const char *name, const char *path,
                                                         WatchdEventMask mask, WatchdWatchFlags flags, char **out_journal,
                                                         guint64 *out_cursor, GCancellable *cancellable, GError **error);
WATCHD_EXPORT gboolean watchd_client_remove_durable_sync(WatchdClient *client, const char *name,
                                                         GCancellable *cancellable, GError **error);
WATCHD_EXPORT GVariant *watchd_client_list_durable_sync(WatchdClient *client, GCancellable *cancellable, GError **error);
WATCHD_EXPORT WatchdDurable *watchd_client_resume_durable_sync(WatchdClient *client, const char *name,
                                                               const char *journal, guint64 cursor,
                                                               GCancellable *cancellable, GError **error);

WATCHD_EXPORT const char *watchd_durable_get_name(WatchdDurable *durable);
WATCHD_EXPORT const char *watchd_durable_get_journal(WatchdDurable *durable);
WATCHD_EXPORT guint64 watchd_durable_get_cursor(WatchdDurable *durable);
WATCHD_EXPORT gboolean watchd_durable_get_caught_up(WatchdDurable *durable);

G_END_DECLS
