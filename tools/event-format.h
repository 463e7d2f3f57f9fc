/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * event-format - how watchctl names and prints events
 *
 * The pure part of watchctl: event names to and from IN_* masks (as
 * inotifywait spells them), the --format expander and the JSON Lines
 * objects. No D-Bus here, so the unit test can drive it with tables.
 */

#include <stdint.h>
#include <glib.h>
#include <json-glib/json-glib.h>

#include "watchd-api.h"

/* One record of an Events signal, with the watched path it belongs to.
 * Paths are bytes: unescaped if the record was (WATCHD_PATH_ESCAPED), and
 * the mask without that bit. */
typedef struct EventRecord {
        uint32_t id;
        uint32_t mask;
        uint32_t cookie;
        const char *path;     /* absolute path the event is about */
        const char *new_path; /* new path of a paired rename, else "" */
        const char *watch;    /* path of subscription id, "" if unknown */
} EventRecord;

/* A format checked once and expanded for each record. */
typedef struct EventFormat EventFormat;

#define EVENT_FORMAT_ERROR (event_format_error_quark())
GQuark event_format_error_quark(void);

/* Adds the events of a comma-separated list ("create,delete,moved") to
 * *mask. Names are case-insensitive; "unmount" is accepted and adds nothing,
 * as the daemon always reports it. */
gboolean event_mask_parse(const char *list, uint32_t *mask, GError **error);

/* "CREATE,ISDIR": the names of the bits of mask in bit order, joined by sep;
 * a bit without a name is printed as hex. "" for mask 0. */
char *event_mask_to_string(uint32_t mask, char sep);

/* The names of the bits of mask, as a NULL-terminated array. */
char **event_mask_to_strv(uint32_t mask);

/* "recursive,oneshot", or "-" for no flag. */
char *event_flags_to_string(uint32_t flags);

/* True for a paired rename: one record carrying both paths. */
gboolean event_record_is_paired_move(const EventRecord *r);

/* The path of r relative to its watch ("" for the watched object itself);
 * the whole path when it is not under the watch. */
const char *event_record_name(const EventRecord *r);

/* Checks fmt (NULL: the default format). */
EventFormat *event_format_new(const char *fmt, GError **error);
EventFormat *event_format_free(EventFormat *f);

/* One output line for r, without the newline. */
char *event_format_record(const EventFormat *f, const EventRecord *r);

/* A path (bytes) as watchctl prints it for people: the escaped form of
 * shared/path_escape.h, always, so that a backslash ("\\"), a byte that
 * is not UTF-8 and a control character ("\xHH") read one way only and a
 * name cannot break its line. Other names print as they are. */
char *event_path_display(const char *path);

/* Adds member name with path (bytes): escaped (path_escape.h) if escaped,
 * else as it is. Either way a valid JSON string. */
void event_json_add_path(JsonBuilder *b, const char *name, const char *path, gboolean escaped);

/* Adds the members "mask" (a number) and "events" (its names) to the object
 * being built. */
void event_json_add_mask(JsonBuilder *b, uint32_t mask);

/* One JSON Lines object for r, without the newline. If any of its paths
 * cannot go in a JSON string as it is (not UTF-8, or a noncharacter), all
 * of them (watch, file, path, new_path) are escaped and "escaped" is true. */
char *event_format_json(const EventRecord *r);
