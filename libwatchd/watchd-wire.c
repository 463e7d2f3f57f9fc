/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-wire - how paths travel in the D-Bus API (see watchd-wire.h)
 */

#include <errno.h>

#include "path_escape.h"
#include "watchd-private.h"
#include "watchd-wire.h"

gboolean watchd_wire_path_needs_escape(const char *path) {
        return path_needs_escape(path);
}

char *watchd_wire_path_escape(const char *path) {
        char *s = path_escape(path);

        if (!s)
                g_error("out of memory");
        return s; /* malloc'd: g_free() is free() */
}

char *watchd_wire_path_decode(const char *wire, gboolean escaped, GError **error) {
        char *bytes = NULL;
        int r;

        if (!escaped)
                return g_strdup(wire);
        r = path_unescape(wire, &bytes);
        if (r == -ENOMEM)
                g_error("out of memory");
        if (r < 0) {
                g_set_error(error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL, "watchd sent a malformed escaped path \"%s\"",
                            wire);
                return NULL;
        }
        return bytes;
}
