/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#if !defined(WATCHD_INSIDE) && !defined(WATCHD_COMPILATION)
#error "Only <watchd.h> can be included directly."
#endif

#include <gio/gio.h>

#include "watchd-types.h"

G_BEGIN_DECLS

#define WATCHD_TYPE_CLIENT (watchd_client_get_type())
WATCHD_EXPORT G_DECLARE_FINAL_TYPE(WatchdClient, watchd_client, WATCHD, CLIENT, GObject)

        /* Defined in watchd-subscription.h. */
        typedef struct _WatchdSubscription WatchdSubscription;

WATCHD_EXPORT void watchd_client_new(GBusType bus_type, GCancellable *cancellable, GAsyncReadyCallback callback,
                                     gpointer user_data);
WATCHD_EXPORT void watchd_client_new_for_address(const char *address, GCancellable *cancellable,
                                                 GAsyncReadyCallback callback, gpointer user_data);
WATCHD_EXPORT WatchdClient *watchd_client_new_finish(GAsyncResult *result, GError **error);
WATCHD_EXPORT WatchdClient *watchd_client_new_sync(GBusType bus_type, GCancellable *cancellable, GError **error);
WATCHD_EXPORT WatchdClient *watchd_client_new_for_address_sync(const char *address, GCancellable *cancellable,
                                                               GError **error);
WATCHD_EXPORT WatchdClient *watchd_client_new_for_connection_sync(GDBusConnection *connection,
                                                                  GCancellable *cancellable, GError **error);

WATCHD_EXPORT GDBusConnection *watchd_client_get_connection(WatchdClient *client);
WATCHD_EXPORT GMainContext *watchd_client_get_main_context(WatchdClient *client);
WATCHD_EXPORT gboolean watchd_client_get_daemon_running(WatchdClient *client);
WATCHD_EXPORT char *watchd_client_dup_daemon_owner(WatchdClient *client);
WATCHD_EXPORT char *watchd_client_dup_daemon_version(WatchdClient *client);
WATCHD_EXPORT WatchdCapabilities watchd_client_get_capabilities(WatchdClient *client);

WATCHD_EXPORT void watchd_client_add_watch(WatchdClient *client, const char *path, WatchdEventMask mask,
                                           WatchdWatchFlags flags, GCancellable *cancellable,
                                           GAsyncReadyCallback callback, gpointer user_data);
WATCHD_EXPORT WatchdSubscription *watchd_client_add_watch_finish(WatchdClient *client, GAsyncResult *result,
                                                                 GError **error);
WATCHD_EXPORT WatchdSubscription *watchd_client_add_watch_sync(WatchdClient *client, const char *path,
                                                               WatchdEventMask mask, WatchdWatchFlags flags,
                                                               GCancellable *cancellable, GError **error);

WATCHD_EXPORT GVariant *watchd_client_list_watches_sync(WatchdClient *client, GCancellable *cancellable, GError **error);
WATCHD_EXPORT GVariant *watchd_client_get_stats_sync(WatchdClient *client, GCancellable *cancellable, GError **error);
WATCHD_EXPORT GVariant *watchd_client_get_daemon_property_sync(WatchdClient *client, const char *name,
                                                               GCancellable *cancellable, GError **error);
WATCHD_EXPORT void watchd_client_close(WatchdClient *client);

G_END_DECLS
