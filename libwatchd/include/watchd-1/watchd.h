/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * libwatchd - the client library of watchd, the file-change notification
 * service. One header for all of it: #include <watchd.h> (pkg-config watchd-1).
 */

#define WATCHD_INSIDE
#include "watchd-types.h"
#include "watchd-enum-types.h"
#include "watchd-event.h"
#include "watchd-client.h"
#include "watchd-subscription.h"
#include "watchd-durable.h"
#include "watchd-snapshot.h"
#undef WATCHD_INSIDE
