/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-route - a record of watchd to the subscriptions it is for
 */

#include "watchd-core.h"

WatchdRemovedReason removed_reason_from_string(const char *s);

/* Lock held. An event of sub (its paths checked canonical): queued for sub
 * if sub may see it (TRUE, ev taken), handed to the other subscriptions
 * that see only its new path (a rename pair from a watchd that pairs per
 * client); FALSE if a path of it is outside sub, or outside every
 * subscription of the client (ev left to the caller). */
gboolean core_route_event(Core *core, WatchdSubscription *sub, WatchdEvent *ev);
/* Lock held. ev (taken) was outside: dropped, with an overflow and a warning. */
void core_drop_outside(Core *core, WatchdSubscription *sub, WatchdEvent *ev);
/* Lock held. What arrived for id before its AddWatch answered goes to sub, in order. */
void core_claim(Core *core, WatchdSubscription *sub, const char *sender, guint32 id);
