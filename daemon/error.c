/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * error - the daemon's own conditions, each with a name
 */

#include <stddef.h>

#include "error.h"
#include "macro.h"

static const char *const error_names[_WATCHD_E_MAX - _WATCHD_E_FIRST] = {
        [WATCHD_E_CLIENT_WATCHES - _WATCHD_E_FIRST] = "max_watches_per_client reached",
        [WATCHD_E_USER_WATCHES - _WATCHD_E_FIRST] = "max_watches_per_user reached",
        [WATCHD_E_UNPRIVILEGED_WATCHES - _WATCHD_E_FIRST] = "max_watches_unprivileged reached",
        [WATCHD_E_USER_CLIENTS - _WATCHD_E_FIRST] = "max_clients_per_user reached",
        [WATCHD_E_NOT_WATCHABLE - _WATCHD_E_FIRST] = "not a regular file or a directory",
        [WATCHD_E_NO_NAME - _WATCHD_E_FIRST] = "a descriptor with no name on a mounted file system",
        [WATCHD_E_FD_PATH - _WATCHD_E_FIRST] = "an O_PATH descriptor",
        [WATCHD_E_FD_WRITE_ONLY - _WATCHD_E_FIRST] = "a descriptor not open for reading",
        [WATCHD_E_NO_SUCH_WATCH - _WATCHD_E_FIRST] = "no such subscription",
        [WATCHD_E_IDS_USED_UP - _WATCHD_E_FIRST] = "subscription ids used up",
        [WATCHD_E_USER_POLLED - _WATCHD_E_FIRST] = "max_polled_dirs_per_user reached",
        [WATCHD_E_NO_STATE_DIR - _WATCHD_E_FIRST] = "no state directory for durable subscriptions",
        [WATCHD_E_DURABLE_EXISTS - _WATCHD_E_FIRST] = "a durable subscription of that name exists",
        [WATCHD_E_NO_SUCH_DURABLE - _WATCHD_E_FIRST] = "no such durable subscription",
        [WATCHD_E_DURABLE_LIMIT - _WATCHD_E_FIRST] = "max_subscriptions_per_user reached",
        [WATCHD_E_PLACED_GONE - _WATCHD_E_FIRST] = "the watch placed went before it was linked",
};

const char *error_to_string(int r) {
        if (!error_is_watchd(r))
                return NULL;
        return error_names[-r - _WATCHD_E_FIRST];
}
