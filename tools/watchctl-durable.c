/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watchctl-durable - the "durable" command: create, list, resume or remove
 * a durable subscription (watchd(8), DURABLE SUBSCRIPTIONS). A resume (the
 * Resume callbacks) prints the records that followed --since in the
 * journal's order, "caught-up", then the live records, until --count,
 * --timeout, --until-caught-up, a signal or the subscription stopped.
 *
 * It calls only watchctl-common.c (watchctl-common.h gives the files' order).
 */

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <json-glib/json-glib.h>

#include "inotify_dev.h"
#include "event-format.h"
#include "path_escape.h"
#include "watchctl-common.h"
#include <watchd.h>

/* ------------------------------------------------------------------------ */
/* Durable subscriptions (watchd(8), DURABLE SUBSCRIPTIONS) */

typedef struct Resume {
        Context *c;
        WatchdDurable *d;
        gboolean caught_up;
        GHashTable *masks; /* mask -> its names, as printed ("CREATE,ISDIR") */
        GString *out;      /* the text lines of a batch */
} Resume;

static void json_begin(JsonBuilder *b, const char *type, guint64 id) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "type");
        json_builder_add_string_value(b, type);
        json_builder_set_member_name(b, "id");
        json_builder_add_int_value(b, (gint64) id);
}

/* Appends a path as the text lines show it to out: as it is when it is
 * printable ASCII with no backslash (most paths, with no copy of their
 * own), else in the escaped form. */
static void append_display_path(GString *out, const char *path) {
        const unsigned char *p = (const unsigned char *) path;

        while (*p >= 0x20 && *p < 0x7f && *p != '\\')
                p++;
        if (*p == '\0')
                g_string_append_len(out, path, (gssize) ((const char *) p - path));
        else {
                g_autofree char *e = event_path_display(path);

                g_string_append(out, e);
        }
}

/* One record: "ID EVENTS PATH", "ID EVENTS OLD -> NEW"; or a JSON object. A
 * replay prints a million of these: a line is built in out (the events'
 * names made once a mask) and the batch written at once. */
static void print_durable_event(Resume *res, WatchdEvent *e, GString *out) {
        Context *c = res->c;
        guint64 id = watchd_event_get_id(e);
        guint mask = watchd_event_get_mask(e);
        const char *path = watchd_event_get_path(e), *new_path = watchd_event_get_new_path(e);
        const char *events;
        char num[24], *n = num + sizeof num;

        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();

                json_begin(b, "event", id);
                event_json_add_path(b, "path", path, path_needs_escape(path));
                if (new_path)
                        event_json_add_path(b, "new_path", new_path, path_needs_escape(new_path));
                event_json_add_mask(b, mask);
                json_builder_set_member_name(b, "cookie");
                json_builder_add_int_value(b, watchd_event_get_cookie(e));
                json_builder_set_member_name(b, "escaped");
                json_builder_add_boolean_value(b, path_needs_escape(path) || (new_path && path_needs_escape(new_path)));
                json_builder_end_object(b);
                watchctl_print_json(b);
                return;
        }
        events = g_hash_table_lookup(res->masks, GUINT_TO_POINTER(mask));
        if (!events) {
                char *names = event_mask_to_string(mask, ',');

                g_hash_table_insert(res->masks, GUINT_TO_POINTER(mask), names);
                events = names;
        }
        do
                *--n = (char) ('0' + id % 10);
        while ((id /= 10) > 0);
        g_string_append_len(out, n, num + sizeof num - n);
        g_string_append_c(out, ' ');
        g_string_append(out, events);
        g_string_append_c(out, ' ');
        append_display_path(out, path);
        if (new_path) {
                g_string_append_len(out, " -> ", 4);
                append_display_path(out, new_path);
        }
        g_string_append_c(out, '\n');
}

/* A batch of records, in the journal's order. */
static void on_durable_events(WatchdDurable *d, GPtrArray *events, gpointer userdata) {
        Resume *res = userdata;
        Context *c = res->c;

        g_string_truncate(res->out, 0);
        for (guint i = 0; i < events->len && !c->stopping; i++) {
                print_durable_event(res, events->pdata[i], res->out);
                c->printed++;
                if (c->count && c->printed >= c->count)
                        watchctl_quit(c, EXIT_OK);
        }
        fwrite(res->out->str, 1, res->out->len, stdout);
        watchctl_flush_output(c);
}

/* "ID rescan REASON DIR..." (a tree: DIR followed by slash and two stars; "whole" for everything), or a JSON object. */
static void on_durable_rescan(WatchdDurable *d, guint64 id, const char *reason, GVariant *dirs, gpointer userdata) {
        Context *c = ((Resume *) userdata)->c;
        GVariantIter it;
        GVariant *path;
        guint32 flags;

        if (c->stopping)
                return;
        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();

                json_begin(b, "rescan", id);
                json_builder_set_member_name(b, "reason");
                json_builder_add_string_value(b, reason);
                json_builder_set_member_name(b, "whole");
                json_builder_add_boolean_value(b, g_variant_n_children(dirs) == 0);
                json_builder_set_member_name(b, "directories");
                json_builder_begin_array(b);
                g_variant_iter_init(&it, dirs);
                while (g_variant_iter_next(&it, "(@ayu)", &path, &flags)) {
                        const char *bytes = g_variant_get_bytestring(path);

                        json_builder_begin_object(b);
                        event_json_add_path(b, "path", bytes, path_needs_escape(bytes));
                        json_builder_set_member_name(b, "recursive");
                        json_builder_add_boolean_value(b, flags & WATCHD_RESCAN_RECURSIVE);
                        json_builder_end_object(b);
                        g_variant_unref(path);
                }
                json_builder_end_array(b);
                json_builder_end_object(b);
                watchctl_print_json(b);
        } else {
                printf("%" G_GUINT64_FORMAT " rescan %s", id, reason);
                if (g_variant_n_children(dirs) == 0)
                        printf(" whole");
                g_variant_iter_init(&it, dirs);
                while (g_variant_iter_next(&it, "(@ayu)", &path, &flags)) {
                        g_autofree char *p = event_path_display(g_variant_get_bytestring(path));

                        printf(" %s%s", p, flags & WATCHD_RESCAN_RECURSIVE ? "/**" : "");
                        g_variant_unref(path);
                }
                printf("\n");
        }
}

static void on_durable_caught_up(WatchdDurable *d, guint64 id, gpointer userdata) {
        Resume *res = userdata;
        Context *c = res->c;

        res->caught_up = TRUE;
        if (c->stopping)
                return;
        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();

                json_begin(b, "caught-up", id);
                json_builder_end_object(b);
                watchctl_print_json(b);
        } else
                printf("%" G_GUINT64_FORMAT " caught-up\n", id);
        watchctl_flush_output(c);
        if (c->opt_until_caught_up)
                watchctl_quit(c, EXIT_OK);
}

/* --timeout: status 3 unless it was caught up (or printed its --count): a
 * script tells "caught up" from "gave up" by the status alone. */
static gboolean on_resume_timeout(gpointer userdata) {
        Resume *res = userdata;
        Context *c = res->c;

        watchctl_quit(c, (c->count ? c->printed >= c->count : res->caught_up) ? EXIT_OK : EXIT_TIMEOUT);
        return G_SOURCE_REMOVE;
}

static void on_durable_stopped(WatchdDurable *d, const char *reason, gpointer userdata) {
        Context *c = ((Resume *) userdata)->c;

        if (c->stopping)
                return;
        watchctl_warn("durable subscription %s stopped: %s", watchd_durable_get_name(d), reason);
        watchctl_quit(c, strcmp(reason, WATCHD_DURABLE_STOPPED_REMOVED) == 0 ? EXIT_NO_WATCHES : EXIT_ERROR);
}

static void print_durable_list(Context *c, GVariant *list) {
        GVariantIter it;
        GVariant *path;
        const char *name, *journal, *state;
        guint32 mask, flags;
        guint64 oldest, last, bytes;
        gboolean attached;

        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(&s@ayuu&stttb&s)", &name, &path, &mask, &flags, &journal, &oldest, &last,
                                   &bytes, &attached, &state)) {
                const char *p = g_variant_get_bytestring(path);

                if (c->opt_json) {
                        g_autoptr(JsonBuilder) b = json_builder_new();

                        json_builder_begin_object(b);
                        json_builder_set_member_name(b, "name");
                        json_builder_add_string_value(b, name);
                        event_json_add_path(b, "path", p, path_needs_escape(p));
                        event_json_add_mask(b, mask);
                        json_builder_set_member_name(b, "flags");
                        json_builder_add_int_value(b, flags);
                        json_builder_set_member_name(b, "journal");
                        json_builder_add_string_value(b, journal);
                        json_builder_set_member_name(b, "oldest_cursor");
                        json_builder_add_int_value(b, (gint64) oldest);
                        json_builder_set_member_name(b, "last_id");
                        json_builder_add_int_value(b, (gint64) last);
                        json_builder_set_member_name(b, "bytes");
                        json_builder_add_int_value(b, (gint64) bytes);
                        json_builder_set_member_name(b, "attached");
                        json_builder_add_boolean_value(b, attached);
                        json_builder_set_member_name(b, "state");
                        json_builder_add_string_value(b, state);
                        json_builder_end_object(b);
                        watchctl_print_json(b);
                } else {
                        g_autofree char *events = event_mask_to_string(mask, ',');
                        g_autofree char *flagnames = event_flags_to_string(flags);
                        g_autofree char *display = event_path_display(p);

                        printf("%s %s %s %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %s %s %s %s\n",
                               name, state, journal, oldest, last, bytes, attached ? "attached" : "-", events,
                               flagnames, display);
                }
                g_variant_unref(path);
        }
}

int cmd_durable(Context *c, int argc, char **argv) {
        const GOptionEntry entries[] = {
                { "recursive", 'r', 0, G_OPTION_ARG_NONE, &c->opt_recursive,
                  "create: watch the whole tree, following new directories", NULL },
                { "event", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &c->opt_events,
                  "create: only these events (comma-separated; repeatable)", "EVENTS" },
                { "onlydir", 0, 0, G_OPTION_ARG_NONE, &c->opt_onlydir, "create: refuse a PATH that is not a directory",
                  NULL },
                { "no-dereference", 'P', 0, G_OPTION_ARG_NONE, &c->opt_dont_follow,
                  "create: refuse a PATH that is a symbolic link", NULL },
                { "since", 's', 0, G_OPTION_ARG_STRING, &c->opt_since,
                  "resume: after this id (the last one processed; default 0)", "ID" },
                { "journal", 'j', 0, G_OPTION_ARG_STRING, &c->opt_journal, "resume: the journal the id came from",
                  "JOURNAL" },
                { "until-caught-up", 'u', 0, G_OPTION_ARG_NONE, &c->opt_until_caught_up, "resume: exit once caught up",
                  NULL },
                { "count", 'c', 0, G_OPTION_ARG_STRING, &c->opt_count, "resume: exit after N events", "N" },
                { "timeout", 't', 0, G_OPTION_ARG_STRING, &c->opt_timeout, "resume: exit after SECONDS (status 3)",
                  "SECONDS" },
                { "json", 0, 0, G_OPTION_ARG_NONE, &c->opt_json, "Print JSON Lines, one object a line", NULL },
                { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &c->opt_paths, NULL, "ACTION [NAME [PATH]]" },
                { NULL }
        };
        g_autoptr(GError) error = NULL;
        const char *action, *name;
        guint n = 0;
        int r;

        r = watchctl_parse_command(c, "durable", NULL,
                                   "Durable subscriptions: kept by watchd across disconnects and restarts,\n"
                                   "their records in a journal, resumed where the client stopped.\n"
                                   "  create NAME PATH   make one (-r, -e, --onlydir, -P); prints NAME JOURNAL CURSOR\n"
                                   "  list               show yours: name, state, journal, oldest cursor, last id,\n"
                                   "                     bytes, attached, events, flags, path\n"
                                   "  resume NAME        print what followed --since, \"caught-up\", then live events\n"
                                   "  remove NAME        remove one, journal and all\n"
                                   "Exit status: 0 done, 1 error, 2 usage, 3 --timeout before caught up (or --count),\n"
                                   "4 removed meanwhile.",
                                   entries, &argc, &argv);
        if (r >= 0)
                return r;
        while (c->opt_paths && c->opt_paths[n])
                n++;
        if (n == 0)
                return watchctl_usage_error("durable", "no action (create, list, resume or remove)");
        action = c->opt_paths[0];
        name = n > 1 ? c->opt_paths[1] : NULL;
        if (g_str_equal(action, "create")                                            ? n != 3 :
                    g_str_equal(action, "list")                                      ? n != 1 :
                    (g_str_equal(action, "resume") || g_str_equal(action, "remove")) ? n != 2 :
                                                                                       TRUE) {
                if (!g_str_equal(action, "create") && !g_str_equal(action, "list") && !g_str_equal(action, "resume") &&
                    !g_str_equal(action, "remove"))
                        return watchctl_usage_error("durable", "unknown action \"%s\" (create, list, resume or remove)",
                                                    action);
                return watchctl_usage_error("durable", "%s takes %s", action,
                                            g_str_equal(action, "create")       ? "NAME PATH" :
                                                    g_str_equal(action, "list") ? "nothing" :
                                                                                  "NAME");
        }
        if (c->opt_count && !g_ascii_string_to_unsigned(c->opt_count, 10, 1, G_MAXUINT64, &c->count, &error))
                return watchctl_usage_error("durable", "--count: %s", error->message);
        if (c->opt_timeout) {
                char *end = NULL;
                double s = g_ascii_strtod(c->opt_timeout, &end);

                if (end == c->opt_timeout || *end || !(s > 0) || s > TIMEOUT_MAX_SECONDS)
                        return watchctl_usage_error("durable",
                                                    "--timeout: \"%s\" is not a number of seconds in (0, %.0f]",
                                                    c->opt_timeout, TIMEOUT_MAX_SECONDS);
                c->timeout_ms = MAX(1, (guint) (s * 1000.0));
        }

        if (g_str_equal(action, "create")) {
                g_autofree char *path = watchctl_absolute_path(c->opt_paths[2]), *journal = NULL;
                guint64 cursor = 0;

                c->mask = 0;
                for (char **e = c->opt_events; e && *e; e++) {
                        uint32_t m = 0;

                        if (!event_mask_parse(*e, &m, &error))
                                return watchctl_usage_error("durable", "-e: %s", error->message);
                        c->mask |= m;
                }
                if (!c->opt_events)
                        c->mask = INOTIFY_DEV_ALL_EVENTS;
                c->flags = (c->opt_recursive ? WATCHD_FLAG_RECURSIVE : 0) | (c->opt_onlydir ? WATCHD_FLAG_ONLYDIR : 0) |
                        (c->opt_dont_follow ? WATCHD_FLAG_DONT_FOLLOW : 0);
                r = watchctl_connect_bus(c);
                if (r >= 0)
                        return r;
                if (!watchd_client_create_durable_sync(c->client, name, path, c->mask, c->flags, &journal, &cursor,
                                                       NULL, &error))
                        return watchctl_report_call_error(c, name, error);
                if (c->opt_json) {
                        g_autoptr(JsonBuilder) b = json_builder_new();

                        json_builder_begin_object(b);
                        json_builder_set_member_name(b, "name");
                        json_builder_add_string_value(b, name);
                        json_builder_set_member_name(b, "journal");
                        json_builder_add_string_value(b, journal);
                        json_builder_set_member_name(b, "cursor");
                        json_builder_add_int_value(b, (gint64) cursor);
                        json_builder_end_object(b);
                        watchctl_print_json(b);
                } else
                        printf("%s %s %" G_GUINT64_FORMAT "\n", name, journal, cursor);
                return watchctl_flush_output(c) ? EXIT_OK : c->exit_status;
        }

        r = watchctl_connect_bus(c);
        if (r >= 0)
                return r;
        if (g_str_equal(action, "list")) {
                g_autoptr(GVariant) list = watchd_client_list_durable_sync(c->client, NULL, &error);

                if (!list)
                        return watchctl_report_call_error(c, NULL, error);
                print_durable_list(c, list);
                return watchctl_flush_output(c) ? EXIT_OK : c->exit_status;
        }
        if (g_str_equal(action, "remove")) {
                if (!watchd_client_remove_durable_sync(c->client, name, NULL, &error))
                        return watchctl_report_call_error(c, name, error);
                return EXIT_OK;
        }

        /* resume */
        {
                g_autoptr(WatchdDurable) d = NULL;
                g_autoptr(GHashTable) masks = g_hash_table_new_full(NULL, NULL, NULL, g_free);
                g_autoptr(GString) out = g_string_sized_new(256 * 1024);
                Resume res = { .c = c, .masks = masks, .out = out };
                guint64 since = 0;

                if (c->opt_since && !g_ascii_string_to_unsigned(c->opt_since, 10, 0, G_MAXUINT64, &since, &error))
                        return watchctl_usage_error("durable", "--since: %s", error->message);
                c->loop = g_main_loop_new(NULL, FALSE);
                d = watchd_client_resume_durable_sync(c->client, name, c->opt_journal, since, NULL, &error);
                if (!d)
                        return watchctl_report_call_error(c, name, error);
                res.d = d;
                g_signal_connect(d, "events", G_CALLBACK(on_durable_events), &res);
                g_signal_connect(d, "rescan", G_CALLBACK(on_durable_rescan), &res);
                g_signal_connect(d, "caught-up", G_CALLBACK(on_durable_caught_up), &res);
                g_signal_connect(d, "stopped", G_CALLBACK(on_durable_stopped), &res);
                g_signal_connect(c->client, "closed", G_CALLBACK(watchctl_on_client_closed), c);
                if (c->opt_json) {
                        g_autoptr(JsonBuilder) b = json_builder_new();

                        json_builder_begin_object(b);
                        json_builder_set_member_name(b, "type");
                        json_builder_add_string_value(b, "resumed");
                        json_builder_set_member_name(b, "name");
                        json_builder_add_string_value(b, name);
                        json_builder_set_member_name(b, "journal");
                        json_builder_add_string_value(b, watchd_durable_get_journal(d));
                        json_builder_set_member_name(b, "since");
                        json_builder_add_int_value(b, (gint64) since);
                        json_builder_end_object(b);
                        watchctl_print_json(b);
                } else
                        watchctl_warn("resuming %s after %" G_GUINT64_FORMAT " (journal %s)", name, since,
                                      watchd_durable_get_journal(d));
                g_unix_signal_add(SIGINT, watchctl_on_stop_signal, c);
                g_unix_signal_add(SIGTERM, watchctl_on_stop_signal, c);
                g_unix_fd_add(STDOUT_FILENO, G_IO_ERR, watchctl_on_stdout_error, c);
                if (c->timeout_ms)
                        g_timeout_add(c->timeout_ms, on_resume_timeout, &res);
                c->exit_status = EXIT_OK;
                g_main_loop_run(c->loop);
                watchctl_flush_output(c);
                return c->exit_status;
        }
}
