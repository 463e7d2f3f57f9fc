/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-wire - how paths travel in the D-Bus API
 *
 * A file name is bytes; a D-Bus string must be UTF-8 (and sd-bus, which
 * watchd uses, also refuses the Unicode noncharacters). A path that cannot
 * go as it is goes in an escaped form marked by WATCHD_WIRE_PATH_ESCAPED: in
 * a record's mask, in a ListWatches entry's flags, in AddWatch's flags
 * (watchd(8), FILE NAMES; the daemon's side is shared/path_escape.[ch]).
 * These functions are the library's one way to the form ("\\" for a
 * backslash, "\xHH" for a byte that does not begin a character sd-bus
 * accepts and for each byte of a control character): the daemon's own
 * shared/path_escape.c (LGPL, built into the library), in GLib's terms.
 */

#include <glib.h>

#define WATCHD_WIRE_PATH_ESCAPED 0x00100000u
/* AddWatch's flag PACKED: the subscription's records as signals come in
 * EventsPacked, the stream's frames, paths as bytes (watchd(8)). */
#define WATCHD_WIRE_PACKED 0x80u

/* Whether path cannot go in a D-Bus string as it is. */
gboolean watchd_wire_path_needs_escape(const char *path);

/* The escaped form of path (a new string). */
char *watchd_wire_path_escape(const char *path);

/* The bytes of a path received from watchd; escaped: whether its flag bit was
 * set. NULL with error if the escaped form is malformed. */
char *watchd_wire_path_decode(const char *wire, gboolean escaped, GError **error);
