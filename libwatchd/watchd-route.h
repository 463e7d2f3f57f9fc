/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-route - a record of watchd to the subscriptions it is for
 */

#include "watchd-core.h"

WatchdRemovedReason removed_reason_from_string(const char *s);
/* Lock held. Turns one record into an event for sub. */
void core_deliver_record(Core *core, WatchdSubscription *sub, guint32 mask, guint32 cookie, const char *wire_path,
                         const char *wire_new_path);
/* What arrived for id before its AddWatch answered goes to sub, in order. */
void core_claim(Core *core, WatchdSubscription *sub, const char *sender, guint32 id);
