/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * event-format - how watchctl names and prints events
 *
 * Names follow inotifywait: upper case in output ("CLOSE_WRITE", "ISDIR"),
 * any case in -e lists, so that a script written for inotifywait reads the
 * same here. The --format language is inotifywait's (%w %f %e %Xe %c) plus
 * %p (full path), %n (new path of a paired rename) and %i (subscription id).
 * JSON objects are built with json-glib, which owns the escaping.
 *
 * File names are bytes. Printed for people, every path is in the escaped
 * form watchd uses on the bus (shared/path_escape.h), so that it reads one
 * way only; in JSON, which must be UTF-8, a record's paths are escaped only
 * if one of them must be, and "escaped" says so.
 */

#include <string.h>
#include <json-glib/json-glib.h>
#include "inotify_dev.h"
#include "event-format.h"
#include "path.h"
#include "path_escape.h"

GQuark event_format_error_quark(void) {
        return g_quark_from_static_string("watchctl-event-format-error-quark");
}

/* Output names of single bits, in bit order. */
static const struct {
        uint32_t bit;
        const char *name;
} bit_names[] = {
        { IN_ACCESS, "ACCESS" },
        { IN_MODIFY, "MODIFY" },
        { IN_ATTRIB, "ATTRIB" },
        { IN_CLOSE_WRITE, "CLOSE_WRITE" },
        { IN_CLOSE_NOWRITE, "CLOSE_NOWRITE" },
        { IN_OPEN, "OPEN" },
        { IN_MOVED_FROM, "MOVED_FROM" },
        { IN_MOVED_TO, "MOVED_TO" },
        { IN_CREATE, "CREATE" },
        { IN_DELETE, "DELETE" },
        { IN_DELETE_SELF, "DELETE_SELF" },
        { WATCHD_IN_MOVE_SELF, "MOVE_SELF" },
        { IN_UNMOUNT, "UNMOUNT" },
        { IN_Q_OVERFLOW, "Q_OVERFLOW" },
        { IN_IGNORED, "IGNORED" },
        { WATCHD_IN_POLLED, "POLLED" },
        { IN_ISDIR, "ISDIR" },
        { IN_ONESHOT, "ONESHOT" },
};

/* Names accepted by -e, and the mask bits each asks for. */
static const struct {
        const char *name;
        uint32_t mask;
} input_names[] = {
        { "access", IN_ACCESS },
        { "modify", IN_MODIFY },
        { "attrib", IN_ATTRIB },
        { "close_write", IN_CLOSE_WRITE },
        { "close_nowrite", IN_CLOSE_NOWRITE },
        { "close", IN_CLOSE },
        { "open", IN_OPEN },
        { "moved_from", IN_MOVED_FROM },
        { "moved_to", IN_MOVED_TO },
        { "move", IN_MOVE },
        { "moved", IN_MOVE },
        { "create", IN_CREATE },
        { "delete", IN_DELETE },
        { "delete_self", IN_DELETE_SELF },
        { "unmount", 0 }, /* always reported */
        { "all", INOTIFY_DEV_ALL_EVENTS },
};

static const struct {
        uint32_t flag;
        const char *name;
} flag_names[] = {
        { WATCHD_FLAG_RECURSIVE, "recursive" },     { WATCHD_FLAG_ONLYDIR, "onlydir" },
        { WATCHD_FLAG_DONT_FOLLOW, "dont_follow" }, { WATCHD_FLAG_ONESHOT, "oneshot" },
        { WATCHD_FLAG_PERSIST, "persist" },         { WATCHD_FLAG_NO_POLL, "no_poll" },
        { WATCHD_FLAG_REMOTE, "remote" },           { WATCHD_FLAG_POLLED, "polled" },
        { WATCHD_FLAG_FANOTIFY, "fanotify" },
};

gboolean event_mask_parse(const char *list, uint32_t *mask, GError **error) {
        g_auto(GStrv) names = g_strsplit(list, ",", -1);

        if (!names[0]) {
                g_set_error_literal(error, EVENT_FORMAT_ERROR, 0, "unknown event \"\" (empty list)");
                return FALSE;
        }
        for (char **n = names; *n; n++) {
                g_autofree char *name = g_strstrip(g_strdup(*n));
                gboolean found = FALSE;

                for (size_t i = 0; i < G_N_ELEMENTS(input_names); i++)
                        if (g_ascii_strcasecmp(name, input_names[i].name) == 0) {
                                *mask |= input_names[i].mask;
                                found = TRUE;
                                break;
                        }
                if (!found) {
                        g_set_error(error, EVENT_FORMAT_ERROR, 0,
                                    "unknown event \"%s\" (known: access, modify, attrib, close_write, "
                                    "close_nowrite, close, open, moved_from, moved_to, move, moved, "
                                    "create, delete, delete_self, unmount, all)",
                                    name);
                        return FALSE;
                }
        }
        return TRUE;
}

static void append_mask_names(GPtrArray *out, uint32_t mask) {
        for (size_t i = 0; i < G_N_ELEMENTS(bit_names); i++)
                if (mask & bit_names[i].bit) {
                        g_ptr_array_add(out, g_strdup(bit_names[i].name));
                        mask &= ~bit_names[i].bit;
                }
        /* Bits this version has no name for are shown, not dropped. */
        for (uint32_t bit = 1; mask != 0; bit <<= 1)
                if (mask & bit) {
                        g_ptr_array_add(out, g_strdup_printf("0x%" G_GINT32_MODIFIER "x", bit));
                        mask &= ~bit;
                }
}

char **event_mask_to_strv(uint32_t mask) {
        GPtrArray *out = g_ptr_array_new();

        append_mask_names(out, mask);
        g_ptr_array_add(out, NULL);
        return (char **) g_ptr_array_free(out, FALSE);
}

char *event_mask_to_string(uint32_t mask, char sep) {
        g_auto(GStrv) names = event_mask_to_strv(mask);
        char s[2] = { sep, '\0' };

        return g_strjoinv(s, names);
}

char *event_flags_to_string(uint32_t flags) {
        GString *s = g_string_new(NULL);

        for (size_t i = 0; i < G_N_ELEMENTS(flag_names); i++)
                if (flags & flag_names[i].flag) {
                        if (s->len > 0)
                                g_string_append_c(s, ',');
                        g_string_append(s, flag_names[i].name);
                        flags &= ~flag_names[i].flag;
                }
        if (flags != 0)
                g_string_append_printf(s, "%s0x%x", s->len > 0 ? "," : "", flags);
        if (s->len == 0)
                g_string_append_c(s, '-');
        return g_string_free(s, FALSE);
}

gboolean event_record_is_paired_move(const EventRecord *r) {
        return (r->mask & IN_MOVE) == IN_MOVE && r->new_path && r->new_path[0];
}

const char *event_record_name(const EventRecord *r) {
        const char *rest;

        if (!r->watch || !r->watch[0])
                return r->path;
        rest = path_startswith(r->path, r->watch);
        return rest ?: r->path;
}

char *event_path_display(const char *path) {
        char *e = path_escape(path);

        if (!e)
                g_error("out of memory");
        return e;
}

static void append_path(GString *out, const char *path) {
        g_autofree char *e = event_path_display(path);

        g_string_append(out, e);
}

void event_json_add_path(JsonBuilder *b, const char *name, const char *path, gboolean escaped) {
        json_builder_set_member_name(b, name);
        if (escaped) {
                g_autofree char *e = event_path_display(path);
                json_builder_add_string_value(b, e);
        } else
                json_builder_add_string_value(b, path);
}

struct EventFormat {
        char *fmt; /* NULL: the default, "%e %p" (+ " -> %n" for a rename) */
};

/* The field letters; any other letter followed by 'e' is %Xe. */
#define FIELD_LETTERS "wfecpni%"

EventFormat *event_format_new(const char *fmt, GError **error) {
        EventFormat *f;

        if (!fmt)
                return g_new0(EventFormat, 1);

        for (const char *p = fmt; *p; p++) {
                if (*p != '%')
                        continue;
                if (p[1] == '\0') {
                        g_set_error_literal(error, EVENT_FORMAT_ERROR, 0,
                                            "format ends with a lone % (write %% for a percent sign)");
                        return NULL;
                }
                if (strchr(FIELD_LETTERS, p[1])) {
                        p++;
                        continue;
                }
                if (p[2] == 'e') {
                        p += 2;
                        continue;
                }
                g_set_error(error, EVENT_FORMAT_ERROR, 0,
                            "unknown format field %%%c (known: %%w %%f %%e %%Xe %%c %%p %%n %%i %%%%)", p[1]);
                return NULL;
        }
        f = g_new0(EventFormat, 1);
        f->fmt = g_strdup(fmt);
        return f;
}

EventFormat *event_format_free(EventFormat *f) {
        if (f) {
                g_free(f->fmt);
                g_free(f);
        }
        return NULL;
}

static void append_events(GString *out, uint32_t mask, char sep) {
        g_autofree char *names = event_mask_to_string(mask, sep);

        g_string_append(out, names);
}

char *event_format_record(const EventFormat *f, const EventRecord *r) {
        GString *out = g_string_new(NULL);

        if (!f->fmt) {
                append_events(out, r->mask, ',');
                g_string_append_c(out, ' ');
                append_path(out, r->path);
                if (event_record_is_paired_move(r)) {
                        g_string_append(out, " -> ");
                        append_path(out, r->new_path);
                }
                return g_string_free(out, FALSE);
        }

        /* The format was checked by event_format_new(). */
        for (const char *p = f->fmt; *p; p++) {
                if (*p != '%') {
                        g_string_append_c(out, *p);
                        continue;
                }
                p++;
                switch (*p) {
                case 'w':
                        append_path(out, r->watch ? r->watch : "");
                        break;
                case 'f':
                        append_path(out, event_record_name(r));
                        break;
                case 'e':
                        append_events(out, r->mask, ',');
                        break;
                case 'c':
                        g_string_append_printf(out, "%" G_GUINT32_FORMAT, r->cookie);
                        break;
                case 'p':
                        append_path(out, r->path);
                        break;
                case 'n':
                        append_path(out, r->new_path ? r->new_path : "");
                        break;
                case 'i':
                        g_string_append_printf(out, "%" G_GUINT32_FORMAT, r->id);
                        break;
                case '%':
                        g_string_append_c(out, '%');
                        break;
                default: /* %Xe */
                        append_events(out, r->mask, *p);
                        p++;
                        break;
                }
        }
        return g_string_free(out, FALSE);
}

void event_json_add_mask(JsonBuilder *b, uint32_t mask) {
        g_auto(GStrv) names = event_mask_to_strv(mask);

        json_builder_set_member_name(b, "mask");
        json_builder_add_int_value(b, mask);
        json_builder_set_member_name(b, "events");
        json_builder_begin_array(b);
        for (char **n = names; *n; n++)
                json_builder_add_string_value(b, *n);
        json_builder_end_array(b);
}

char *event_format_json(const EventRecord *r) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        g_autoptr(JsonGenerator) gen = json_generator_new();
        g_autoptr(JsonNode) root = NULL;
        const char *watch = r->watch ? r->watch : "", *new_path = r->new_path ? r->new_path : "";
        /* One flag for the object, as for the record on the bus: a reader
         * unescapes all of its paths or none. */
        gboolean escaped = path_needs_escape(watch) || path_needs_escape(r->path) || path_needs_escape(new_path);

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "type");
        json_builder_add_string_value(b, "event");
        json_builder_set_member_name(b, "id");
        json_builder_add_int_value(b, r->id);
        event_json_add_path(b, "watch", watch, escaped);
        event_json_add_path(b, "file", event_record_name(r), escaped);
        event_json_add_mask(b, r->mask);
        json_builder_set_member_name(b, "cookie");
        json_builder_add_int_value(b, r->cookie);
        event_json_add_path(b, "path", r->path, escaped);
        if (new_path[0])
                event_json_add_path(b, "new_path", new_path, escaped);
        else {
                json_builder_set_member_name(b, "new_path");
                json_builder_add_null_value(b);
        }
        json_builder_set_member_name(b, "escaped");
        json_builder_add_boolean_value(b, escaped);
        json_builder_end_object(b);

        root = json_builder_get_root(b);
        json_generator_set_root(gen, root);
        return json_generator_to_data(gen, NULL);
}
