/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-start - starting, adding again and cancelling subscriptions
 */

#include "watchd-core.h"

gboolean core_follows_path(Core *core, WatchdSubscription *sub, WatchdRemovedReason reason);
void core_follow_again(Core *core, WatchdSubscription *sub);
void core_readd_one(Core *core, WatchdSubscription *sub);
