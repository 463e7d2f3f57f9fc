/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * manager_types - the words of manager.h that manager_internal.h needs too:
 * the Manager (opaque here; its struct is manager_internal.h's), the hooks
 * of the layer above (ManagerHooks) and what waits for a subscription
 * (ManagerWaitFunc), both kept in the Manager. manager.h and
 * manager_internal.h include it; it includes no other header of the
 * manager, so that manager_internal.h need not include manager.h:
 * manager.c and manager_calls.c include both.
 */

#include <stdint.h>

typedef struct Manager Manager;

/* What a layer above the manager (durable.c's pump) does at the manager's own
 * moments, given with manager_set_hooks(): it calls nothing up. */
typedef struct ManagerHooks {
        /* After each flush of the clients' queues. */
        void (*after_flush)(void *userdata);
        /* When it next needs a flush for time (CLOCK_MONOTONIC µs), UINT64_MAX: not for time. */
        uint64_t (*next_deadline)(void *userdata);
} ManagerHooks;

/* What waits for a subscription's first snapshots or its look-up: told r once. */
typedef void (*ManagerWaitFunc)(int r, void *userdata);
