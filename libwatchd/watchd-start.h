/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-start - starting, adding again and cancelling subscriptions
 */

#include "watchd-core.h"

gboolean core_follows_path(Core *core, WatchdSubscription *sub, WatchdRemovedReason reason);
void core_follow_again(Core *core, WatchdSubscription *sub);
void core_readd_one(Core *core, WatchdSubscription *sub);

/* For the objects above: a subscription started (async: task returns; held:
 * its items wait for core_release_hold()), started and waited for, cancelled. */
void core_start_subscription(Core *core, WatchdSubscription *sub, gboolean held, GCancellable *cancellable, GTask *task);
gboolean core_start_subscription_sync(Core *core, WatchdSubscription *sub, GCancellable *cancellable, GError **error);
void core_cancel_subscription(Core *core, WatchdSubscription *sub);
void core_release_hold(Core *core, WatchdSubscription *sub);
