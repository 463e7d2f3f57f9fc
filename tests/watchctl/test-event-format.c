/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-event-format - event names, --format and JSON of watchctl, by tables
 *
 * The pure part of watchctl, without a bus: what "-e" accepts, how masks are
 * named, what each --format field expands to, and that the JSON Lines
 * objects parse back (with json-glib) to the fields they were built from,
 * for names that are not UTF-8 too.
 */

#include <json-glib/json-glib.h>
#include "inotify_dev.h"
#include "event-format.h"
#include "path_escape.h"

static void test_mask_parse(void) {
        static const struct {
                const char *list;
                uint32_t mask;
        } ok[] = {
                { "create", IN_CREATE },
                { "CREATE,Delete", IN_CREATE | IN_DELETE },
                { " modify , attrib ", IN_MODIFY | IN_ATTRIB },
                { "close", IN_CLOSE_WRITE | IN_CLOSE_NOWRITE },
                { "move", IN_MOVED_FROM | IN_MOVED_TO },
                { "moved", IN_MOVED_FROM | IN_MOVED_TO },
                { "moved_to", IN_MOVED_TO },
                { "delete_self,open,access", IN_DELETE_SELF | IN_OPEN | IN_ACCESS },
                { "close_write,close_nowrite", IN_CLOSE },
                { "unmount", 0 },
                { "all", 0x7ff },
        };
        static const char *const bad[] = { "", "crate", "create,", "in_create", "create;delete", "0x100" };

        for (size_t i = 0; i < G_N_ELEMENTS(ok); i++) {
                g_autoptr(GError) error = NULL;
                uint32_t mask = 0;

                g_test_message("-e %s", ok[i].list);
                g_assert_true(event_mask_parse(ok[i].list, &mask, &error));
                g_assert_no_error(error);
                g_assert_cmphex(mask, ==, ok[i].mask);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autoptr(GError) error = NULL;
                uint32_t mask = 0;

                g_test_message("-e '%s' must be refused", bad[i]);
                g_assert_false(event_mask_parse(bad[i], &mask, &error));
                g_assert_error(error, EVENT_FORMAT_ERROR, 0);
                g_assert_nonnull(strstr(error->message, "unknown event"));
        }
}

static void test_mask_names(void) {
        static const struct {
                uint32_t mask;
                char sep;
                const char *text;
        } table[] = {
                { IN_CREATE, ',', "CREATE" },
                { IN_CREATE | IN_ISDIR, ',', "CREATE,ISDIR" },
                { IN_MOVED_TO | IN_MOVED_FROM, ',', "MOVED_FROM,MOVED_TO" },
                { IN_MOVE | IN_ISDIR, '|', "MOVED_FROM|MOVED_TO|ISDIR" },
                { IN_CLOSE_WRITE, ',', "CLOSE_WRITE" },
                { IN_DELETE_SELF | IN_IGNORED, ',', "DELETE_SELF,IGNORED" },
                { IN_UNMOUNT | IN_Q_OVERFLOW, ',', "UNMOUNT,Q_OVERFLOW" },
                { 0x7ff, ',',
                  "ACCESS,MODIFY,ATTRIB,CLOSE_WRITE,CLOSE_NOWRITE,OPEN,MOVED_FROM,"
                  "MOVED_TO,CREATE,DELETE,DELETE_SELF" },
                { 0x1000 | IN_MODIFY, ',', "MODIFY,0x1000" }, /* no name: hex, not dropped */
                { 0, ',', "" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(table); i++) {
                g_autofree char *text = event_mask_to_string(table[i].mask, table[i].sep);

                g_assert_cmpstr(text, ==, table[i].text);
        }
}

static void test_flags_names(void) {
        g_autofree char *none = event_flags_to_string(0);
        g_autofree char *some = event_flags_to_string(WATCHD_FLAG_RECURSIVE | WATCHD_FLAG_ONESHOT);
        g_autofree char *odd = event_flags_to_string(WATCHD_FLAG_ONLYDIR | 0x100);

        g_assert_cmpstr(none, ==, "-");
        g_assert_cmpstr(some, ==, "recursive,oneshot");
        g_assert_cmpstr(odd, ==, "onlydir,0x100");
}

static const EventRecord create_rec = {
        .id = 7,
        .mask = IN_CREATE | IN_ISDIR,
        .cookie = 0,
        .path = "/srv/in/sub",
        .new_path = "",
        .watch = "/srv/in",
};
static const EventRecord move_rec = {
        .id = 9,
        .mask = IN_MOVE,
        .cookie = 4242,
        .path = "/srv/in/a b",
        .new_path = "/srv/in/done/b\"c",
        .watch = "/srv/in",
};
static const EventRecord self_rec = {
        .id = 3,
        .mask = IN_DELETE_SELF,
        .cookie = 0,
        .path = "/srv/file",
        .new_path = "",
        .watch = "/srv/file",
};
static const EventRecord root_rec = {
        .id = 1,
        .mask = IN_MODIFY,
        .cookie = 0,
        .path = "/etc",
        .new_path = "",
        .watch = "/",
};
static const EventRecord sibling_rec = {
        /* /srv/inbox is not under /srv/in */
        .id = 2, .mask = IN_MODIFY, .cookie = 0, .path = "/srv/inbox", .new_path = "", .watch = "/srv/in",
};
/* File names are bytes: not UTF-8, a backslash, control characters. */
static const EventRecord bytes_rec = {
        .id = 5,
        .mask = IN_MOVE,
        .cookie = 77,
        .path = "/srv/in/caf\xe9",
        .new_path = "/srv/in/a\\b\n",
        .watch = "/srv/in",
};
static const EventRecord bytes_watch_rec = {
        /* the watch is not UTF-8, the name is */
        .id = 6, .mask = IN_CREATE, .cookie = 0, .path = "/srv/\xff/\xc3\xa9", .new_path = "", .watch = "/srv/\xff",
};
static const EventRecord terminal_rec = {
        /* a name that would drive a terminal */
        .id = 8,
        .mask = IN_CREATE,
        .cookie = 0,
        .path = "/srv/in/\x1b]0;owned\x07\xc2\x9b"
                "2J",
        .new_path = "",
        .watch = "/srv/in",
};

static void test_format(void) {
        static const struct {
                const char *fmt;
                const EventRecord *rec;
                const char *line;
        } table[] = {
                /* the default: "%e %p", a rename as "%e %p -> %n" */
                { NULL, &create_rec, "CREATE,ISDIR /srv/in/sub" },
                { NULL, &move_rec, "MOVED_FROM,MOVED_TO /srv/in/a b -> /srv/in/done/b\"c" },
                { "%w %e %f", &create_rec, "/srv/in CREATE,ISDIR sub" },
                { "%f", &move_rec, "a b" },
                { "%f", &self_rec, "" },
                { "%f", &root_rec, "etc" },
                { "%f", &sibling_rec, "/srv/inbox" },
                { "%p|%n|%c|%i", &move_rec, "/srv/in/a b|/srv/in/done/b\"c|4242|9" },
                { "%n.", &create_rec, "." },
                { "%:e", &create_rec, "CREATE:ISDIR" },
                { "%|e %e", &move_rec, "MOVED_FROM|MOVED_TO MOVED_FROM,MOVED_TO" },
                { "100%% %e", &self_rec, "100% DELETE_SELF" },
                { "plain", &self_rec, "plain" },
                { "", &self_rec, "" },
                /* paths in the escaped form: a backslash doubled, \xHH for the rest */
                { NULL, &bytes_rec, "MOVED_FROM,MOVED_TO /srv/in/caf\\xe9 -> /srv/in/a\\\\b\\x0a" },
                { "%f|%n", &bytes_rec, "caf\\xe9|/srv/in/a\\\\b\\x0a" },
                { "%w|%f|%p", &bytes_watch_rec, "/srv/\\xff|\xc3\xa9|/srv/\\xff/\xc3\xa9" },
                { NULL, &terminal_rec, "CREATE /srv/in/\\x1b]0;owned\\x07\\xc2\\x9b2J" },
        };
        static const char *const bad[] = { "%", "%e %", "%z", "%xy", "%T" };

        for (size_t i = 0; i < G_N_ELEMENTS(table); i++) {
                g_autoptr(GError) error = NULL;
                EventFormat *f = event_format_new(table[i].fmt, &error);
                g_autofree char *line = NULL;

                g_test_message("--format '%s'", table[i].fmt ? table[i].fmt : "(default)");
                g_assert_no_error(error);
                g_assert_nonnull(f);
                line = event_format_record(f, table[i].rec);
                g_assert_cmpstr(line, ==, table[i].line);
                event_format_free(f);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autoptr(GError) error = NULL;

                g_test_message("--format '%s' must be refused", bad[i]);
                g_assert_null(event_format_new(bad[i], &error));
                g_assert_error(error, EVENT_FORMAT_ERROR, 0);
        }
}

static JsonObject *parse_object(const char *text, JsonParser *parser) {
        g_autoptr(GError) error = NULL;

        g_assert_null(strchr(text, '\n')); /* JSON Lines: one line */
        g_assert_true(json_parser_load_from_data(parser, text, -1, &error));
        g_assert_no_error(error);
        g_assert_true(JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser)));
        return json_node_get_object(json_parser_get_root(parser));
}

static void test_json(void) {
        g_autoptr(JsonParser) parser = json_parser_new();
        g_autofree char *move = event_format_json(&move_rec);
        g_autofree char *create = event_format_json(&create_rec);
        JsonObject *o;
        JsonArray *events;

        o = parse_object(move, parser);
        g_assert_cmpstr(json_object_get_string_member(o, "type"), ==, "event");
        g_assert_cmpint(json_object_get_int_member(o, "id"), ==, 9);
        g_assert_cmpint(json_object_get_int_member(o, "mask"), ==, IN_MOVE);
        g_assert_cmpint(json_object_get_int_member(o, "cookie"), ==, 4242);
        g_assert_cmpstr(json_object_get_string_member(o, "watch"), ==, "/srv/in");
        g_assert_cmpstr(json_object_get_string_member(o, "file"), ==, "a b");
        g_assert_cmpstr(json_object_get_string_member(o, "path"), ==, "/srv/in/a b");
        /* the quote went through the generator and back */
        g_assert_cmpstr(json_object_get_string_member(o, "new_path"), ==, "/srv/in/done/b\"c");
        events = json_object_get_array_member(o, "events");
        g_assert_cmpuint(json_array_get_length(events), ==, 2);
        g_assert_cmpstr(json_array_get_string_element(events, 0), ==, "MOVED_FROM");
        g_assert_cmpstr(json_array_get_string_element(events, 1), ==, "MOVED_TO");

        g_assert_false(json_object_get_boolean_member(o, "escaped"));

        o = parse_object(create, parser);
        g_assert_false(json_object_get_boolean_member(o, "escaped"));
        g_assert_true(json_object_get_null_member(o, "new_path"));
        g_assert_cmpstr(json_object_get_string_member(o, "file"), ==, "sub");
        events = json_object_get_array_member(o, "events");
        g_assert_cmpuint(json_array_get_length(events), ==, 2);
        g_assert_cmpstr(json_array_get_string_element(events, 1), ==, "ISDIR");
}

/* Every path member of o, unescaped if o says so, is the record's. */
static void assert_json_paths(JsonObject *o, const EventRecord *r, gboolean escaped) {
        const char *members[] = { "watch", "file", "path", "new_path" };
        const char *want[] = { r->watch, event_record_name(r), r->path, r->new_path };

        g_assert_cmpint(json_object_get_boolean_member(o, "escaped"), ==, escaped);
        for (size_t i = 0; i < G_N_ELEMENTS(members); i++) {
                const char *got = json_object_get_null_member(o, members[i]) ?
                        "" :
                        json_object_get_string_member(o, members[i]);
                g_autofree char *bytes = NULL;

                g_assert_true(g_utf8_validate(got, -1, NULL));
                if (escaped)
                        g_assert_cmpint(path_unescape(got, &bytes), ==, 0);
                else
                        bytes = g_strdup(got);
                g_assert_cmpstr(bytes, ==, want[i]);
        }
}

/* JSON must be UTF-8: a record with any path that is not goes escaped, all
 * its paths, and says so; the generator's own escaping (quotes, control
 * characters) still applies to what goes as it is. */
static void test_json_bytes(void) {
        static const EventRecord newline_rec = {
                .id = 4,
                .mask = IN_CREATE,
                .cookie = 0,
                .path = "/srv/in/a\nb\\c",
                .new_path = "",
                .watch = "/srv/in",
        };
        static const struct {
                const EventRecord *rec;
                gboolean escaped;
        } table[] = {
                { &bytes_rec, TRUE },     { &bytes_watch_rec, TRUE },
                { &terminal_rec, FALSE }, /* UTF-8: JSON escapes the controls itself */
                { &newline_rec, FALSE },  { &move_rec, FALSE },
        };
        g_autoptr(JsonParser) parser = json_parser_new();

        for (size_t i = 0; i < G_N_ELEMENTS(table); i++) {
                g_autofree char *text = event_format_json(table[i].rec);

                g_test_message("%s", text);
                g_assert_true(g_utf8_validate(text, -1, NULL));
                assert_json_paths(parse_object(text, parser), table[i].rec, table[i].escaped);
        }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/watchctl/event-format/mask-parse", test_mask_parse);
        g_test_add_func("/watchctl/event-format/mask-names", test_mask_names);
        g_test_add_func("/watchctl/event-format/flags-names", test_flags_names);
        g_test_add_func("/watchctl/event-format/format", test_format);
        g_test_add_func("/watchctl/event-format/json", test_json);
        g_test_add_func("/watchctl/event-format/json-bytes", test_json_bytes);
        return g_test_run();
}
