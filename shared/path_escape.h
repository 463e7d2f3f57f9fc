/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "watchd-api.h"

/*
 * path_escape - file names that are not UTF-8, in D-Bus strings
 *
 * A Linux file name is bytes; a D-Bus string ('s') must be UTF-8, and
 * sd-bus, which watchd uses, refuses more than the D-Bus specification does
 * (the noncharacters U+FDD0..U+FDEF and U+xFFFE, U+xFFFF, which libdbus and
 * GLib let through). A string it refuses cannot be sent at all, so watchd
 * sends such a path in an escaped form and says so with WATCHD_PATH_ESCAPED:
 * in an Events record's mask, in a ListWatches entry's flags, and in
 * AddWatch's flags when a client sends one.
 *
 * The escaped form (the one definition; watchd(8) and the API XML say the
 * same):
 *   - a backslash is written "\\";
 *   - a byte that does not begin a UTF-8 character sd-bus accepts, and each
 *     byte of a control character (U+0001..U+001F, U+007F, U+0080..U+009F),
 *     is written "\xHH", two lower-case hexadecimal digits;
 *   - every other character is written as it is.
 * Unescaping turns "\\" into a backslash and "\xHH" (HH not 00, either case)
 * into the byte HH; any other backslash is an error. So
 * path_unescape(path_escape(b)) == b for every byte string b, and a path
 * that needs no escape is sent as it is, readable in dbus-monitor.
 *
 * The same form is watchctl's human-readable output of every path: a
 * backslash, a byte that is not UTF-8 or a control character can then not
 * be mistaken for anything else, and a name cannot break its line or send
 * escape sequences to a terminal.
 *
 * Pure C (no GLib, no sd-bus): linked by the daemon, watchctl, the tests and
 * the fuzzers alike, and built into libwatchd (libwatchd/watchd-wire.c):
 * LGPL like the library, with watchd-api.h, so that both ends of the wire
 * share one definition.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The bit that says "the paths here are escaped". Not an IN_* bit and not a
 * request flag: Events masks carry IN_* bits below it, AddWatch flags are
 * 0x1..0x8. 0x00200000 is left free for another record bit.
 */
#define WATCHD_PATH_ESCAPED WATCHD_FLAG_PATH_ESCAPED /* watchd-api.h */

/* Whether s cannot go in a D-Bus string as it is (sd-bus would refuse it). */
bool path_needs_escape(const char *s);
/* The same for s of len bytes (its strlen), eight bytes at a time while they are ASCII. */
bool path_needs_escape_n(const char *s, size_t len);

/* The escaped form of s (malloc'd), or NULL when out of memory. At most
 * 4 * strlen(s) + 1 bytes. */
char *path_escape(const char *s);

/* Bytes of the escaped form of s, without the terminating NUL. */
size_t path_escaped_len(const char *s);

/*
 * The bytes s stands for (malloc'd) into *ret.
 * Return: 0, -EINVAL (a backslash not followed by "\" or "x" and two hex
 * digits, or "\x00", which no path can hold), -ENOMEM.
 */
int path_unescape(const char *s, char **ret);
