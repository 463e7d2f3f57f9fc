/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-owner - the daemon behind the bus name: who, what it offers, restarts
 */

#include "watchd-core.h"

extern const WatchdBusCallbacks core_bus_callbacks;
