/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#if !defined(WATCHD_INSIDE) && !defined(WATCHD_COMPILATION)
#error "Only <watchd.h> can be included directly."
#endif

#include <gio/gio.h>

#include "watchd-client.h"
#include "watchd-types.h"

G_BEGIN_DECLS

#define WATCHD_TYPE_SUBSCRIPTION (watchd_subscription_get_type())
WATCHD_EXPORT G_DECLARE_FINAL_TYPE(WatchdSubscription, watchd_subscription, WATCHD, SUBSCRIPTION, GObject)

WATCHD_EXPORT WatchdSubscription *watchd_subscription_new(WatchdClient *client, const char *path, WatchdEventMask mask,
                                                          WatchdWatchFlags flags);
WATCHD_EXPORT void watchd_subscription_start(WatchdSubscription *subscription, GCancellable *cancellable,
                                             GAsyncReadyCallback callback, gpointer user_data);
WATCHD_EXPORT gboolean watchd_subscription_start_finish(WatchdSubscription *subscription, GAsyncResult *result,
                                                        GError **error);
WATCHD_EXPORT gboolean watchd_subscription_start_sync(WatchdSubscription *subscription, GCancellable *cancellable,
                                                      GError **error);
WATCHD_EXPORT void watchd_subscription_cancel(WatchdSubscription *subscription);

WATCHD_EXPORT WatchdClient *watchd_subscription_get_client(WatchdSubscription *subscription);
WATCHD_EXPORT const char *watchd_subscription_get_path(WatchdSubscription *subscription);
WATCHD_EXPORT WatchdEventMask watchd_subscription_get_mask(WatchdSubscription *subscription);
WATCHD_EXPORT WatchdWatchFlags watchd_subscription_get_flags(WatchdSubscription *subscription);
WATCHD_EXPORT guint32 watchd_subscription_get_id(WatchdSubscription *subscription);
WATCHD_EXPORT gboolean watchd_subscription_is_active(WatchdSubscription *subscription);

G_END_DECLS
