/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-receive - what watchd sends: its signals and its record stream
 */

#include "watchd-core.h"

void core_on_signal(gpointer userdata, const char *sender, const char *member, GVariant *body);
void core_open_stream(Core *core);
WatchdStreamReader *core_steal_stream(Core *core);
