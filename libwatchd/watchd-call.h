/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-call - a call to watchd waited for in the calling thread
 */

#include "watchd-core.h"

GVariant *core_call_sync(Core *core, const char *interface, const char *method, GVariant *params,
                         const GVariantType *reply_type, GCancellable *cancellable, GError **error);
