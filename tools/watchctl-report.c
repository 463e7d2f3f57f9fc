/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watchctl-report - the commands that ask watchd once and print its answer:
 * "list" (the subscriptions of this connection, as watchd holds them),
 * "stats" (its version and counters) and "clients" (the programs it
 * serves), as text or JSON.
 *
 * "list" adds its watches as "watch" does, through watchctl-watch.c; the
 * rest is watchctl-common.c's. No file below calls this one (watchctl-common.h
 * gives the files' order).
 */

#include <stdio.h>
#include <string.h>
#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "event-format.h"
#include "path_escape.h"
#include "watchctl-common.h"
#include <watchd.h>

/* ------------------------------------------------------------------------ */
/* The subscriptions of this connection, as watchd holds them */

static int compare_watch_ids(gconstpointer a, gconstpointer b) {
        guint32 x, y;

        g_variant_get_child(*(GVariant *const *) a, 0, "u", &x);
        g_variant_get_child(*(GVariant *const *) b, 0, "u", &y);
        return x < y ? -1 : x > y;
}

int cmd_list(Context *c, int argc, char **argv) {
        const GOptionEntry entries[] = {
                { "recursive", 'r', 0, G_OPTION_ARG_NONE, &c->opt_recursive, "Add the watches recursive", NULL },
                { "event", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &c->opt_events,
                  "Events to ask for (comma-separated; repeatable)", "EVENTS" },
                { "onlydir", 0, 0, G_OPTION_ARG_NONE, &c->opt_onlydir, "Refuse a PATH that is not a directory", NULL },
                { "no-dereference", 'P', 0, G_OPTION_ARG_NONE, &c->opt_dont_follow,
                  "Refuse a PATH that is a symbolic link", NULL },
                { "oneshot", 0, 0, G_OPTION_ARG_NONE, &c->opt_oneshot, "Add the watches oneshot", NULL },
                { "persist", 0, 0, G_OPTION_ARG_NONE, &c->opt_persist, "Add the watches following their paths", NULL },
                { "no-poll", 0, 0, G_OPTION_ARG_NONE, &c->opt_no_poll, "Add the watches without polling", NULL },
                { "json", 0, 0, G_OPTION_ARG_NONE, &c->opt_json, "Print JSON Lines, one object a subscription", NULL },
                { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &c->opt_paths, NULL, "PATH..." },
                { NULL }
        };
        g_autoptr(GVariant) list = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify) g_variant_unref);
        GVariant *entry;
        GVariantIter it;
        guint32 id, mask, flags;
        int r;

        r = watchctl_parse_command(c, "list", NULL,
                                   "Add a watch on each PATH as \"watch\" would, then print the subscriptions\n"
                                   "of this connection as watchd holds them: id, events, flags, path.\n"
                                   "Subscriptions belong to a connection, so those of other watchctl\n"
                                   "processes are not shown (see \"stats\" for the totals).",
                                   entries, &argc, &argv);
        if (r >= 0)
                return r;
        r = watchctl_check_selection(c, "list", FALSE);
        if (r >= 0)
                return r;
        if (c->watches->len == 0)
                /* Still asked, so that "list" checks that watchd answers. */
                watchctl_warn("no PATH: subscriptions belong to the connection that made them, so this "
                              "list is empty; 'watchctl stats' counts those of all clients");
        r = watchctl_connect_bus(c);
        if (r >= 0)
                return r;
        r = watchctl_add_all_watches(c);
        if (r >= 0)
                return r;
        list = watchd_client_list_watches_sync(c->client, NULL, &error);
        if (!list)
                return watchctl_report_call_error(c, NULL, error);

        /* In id order, which is the order they were made in. */
        g_variant_iter_init(&it, list);
        while ((entry = g_variant_iter_next_value(&it)))
                g_ptr_array_add(rows, entry);
        g_ptr_array_sort(rows, compare_watch_ids);
        for (guint i = 0; i < rows->len; i++) {
                g_autofree char *events = NULL, *flagnames = NULL;
                g_autoptr(GVariant) path = NULL;
                const char *bytes;

                /* The path as bytes; the library has unescaped it. */
                g_variant_get(rows->pdata[i], "(u@ayuu)", &id, &path, &mask, &flags);
                bytes = g_variant_get_bytestring(path);
                events = event_mask_to_string(mask, ',');
                flagnames = event_flags_to_string(flags);
                if (c->opt_json) {
                        g_autoptr(JsonBuilder) b = json_builder_new();

                        json_builder_begin_object(b);
                        json_builder_set_member_name(b, "id");
                        json_builder_add_int_value(b, id);
                        event_json_add_path(b, "path", bytes, path_needs_escape(bytes));
                        event_json_add_mask(b, mask);
                        json_builder_set_member_name(b, "flags");
                        json_builder_add_int_value(b, flags);
                        json_builder_set_member_name(b, "escaped");
                        json_builder_add_boolean_value(b, path_needs_escape(bytes));
                        /* What follows the tree of a RECURSIVE subscription. */
                        if (flags & WATCHD_FLAG_RECURSIVE) {
                                json_builder_set_member_name(b, "tree");
                                json_builder_add_string_value(b, flags & WATCHD_FLAG_FANOTIFY ? "fanotify" : "inotify");
                        }
                        json_builder_end_object(b);
                        watchctl_print_json(b);
                } else {
                        g_autofree char *display = event_path_display(bytes);

                        printf("%" G_GUINT32_FORMAT " %s %s %s\n", id, events, flagnames, display);
                }
        }
        return watchctl_flush_output(c) ? EXIT_OK : c->exit_status;
}

/* ------------------------------------------------------------------------ */
/* watchd's version and counters */

/* A stats value as text: strings bare, the rest in GVariant text form. */
static char *variant_to_text(GVariant *v) {
        if (g_variant_is_of_type(v, G_VARIANT_TYPE_STRING))
                return g_variant_dup_string(v, NULL);
        return g_variant_print(v, FALSE);
}

static int compare_strings(gconstpointer a, gconstpointer b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

int cmd_stats(Context *c, int argc, char **argv) {
        const GOptionEntry entries[] = { { "json", 0, 0, G_OPTION_ARG_NONE, &c->opt_json, "Print one JSON object", NULL },
                                         { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &c->opt_paths, NULL,
                                           NULL },
                                         { NULL } };
        g_autoptr(GVariant) stats = NULL, version = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) keys = g_ptr_array_new();
        GVariantIter it;
        const char *key;
        GVariant *value;
        int r;

        r = watchctl_parse_command(c, "stats", NULL,
                                   "Print watchd's version and counters: clients, subscriptions,\n"
                                   "kernel watches, events read and delivered, overflows, backend.",
                                   entries, &argc, &argv);
        if (r >= 0)
                return r;
        if (c->opt_paths && c->opt_paths[0])
                return watchctl_usage_error("stats", "unexpected argument \"%s\"", c->opt_paths[0]);
        r = watchctl_connect_bus(c);
        if (r >= 0)
                return r;
        stats = watchd_client_get_stats_sync(c->client, NULL, &error);
        if (!stats)
                return watchctl_report_call_error(c, NULL, error);
        version = watchd_client_get_daemon_property_sync(c->client, "Version", NULL, &error);
        if (!version)
                return watchctl_report_call_error(c, NULL, error);

        g_variant_iter_init(&it, stats);
        while (g_variant_iter_next(&it, "{&sv}", &key, NULL))
                g_ptr_array_add(keys, (gpointer) key);
        g_ptr_array_sort(keys, compare_strings);

        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();
                g_autoptr(GVariant) v = g_variant_ref(version);

                json_builder_begin_object(b);
                json_builder_set_member_name(b, "version");
                json_builder_add_value(b, json_gvariant_serialize(v));
                for (guint i = 0; i < keys->len; i++) {
                        g_autoptr(GVariant) sv = g_variant_lookup_value(stats, keys->pdata[i], NULL);

                        json_builder_set_member_name(b, keys->pdata[i]);
                        json_builder_add_value(b, json_gvariant_serialize(sv));
                }
                json_builder_end_object(b);
                watchctl_print_json(b);
        } else {
                g_autofree char *text = variant_to_text(version);

                printf("%-24s %s\n", "version", text);
                for (guint i = 0; i < keys->len; i++) {
                        g_autofree char *vt = NULL;

                        value = g_variant_lookup_value(stats, keys->pdata[i], NULL);
                        vt = variant_to_text(value);
                        g_variant_unref(value);
                        printf("%-24s %s\n", (const char *) keys->pdata[i], vt);
                }
        }
        return watchctl_flush_output(c) ? EXIT_OK : c->exit_status;
}

/* ------------------------------------------------------------------------ */
/* The clients watchd serves (ListClients) */

typedef struct ClientRow {
        char *name;
        guint32 pid, uid, subscriptions, watches;
        char *command; /* /proc/PID/cmdline, arguments joined by spaces (bytes); NULL if unreadable */
} ClientRow;

static void client_row_free(ClientRow *row) {
        g_free(row->name);
        g_free(row->command);
        g_free(row);
}

static int compare_client_rows(gconstpointer a, gconstpointer b) {
        const ClientRow *x = *(ClientRow *const *) a, *y = *(ClientRow *const *) b;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return strcmp(x->name, y->name);
}

/* The command line of pid as far as this process may read it (watchd does
 * not send it: its unit hides other users' processes from it), NULL if it
 * cannot. A pid may have been reused since the client connected. */
static char *command_of(guint32 pid) {
        g_autofree char *path = g_strdup_printf("/proc/%" G_GUINT32_FORMAT "/cmdline", pid);
        g_autofree char *raw = NULL;
        gsize len;

        if (pid == 0 || !g_file_get_contents(path, &raw, &len, NULL) || len == 0)
                return NULL;
        while (len > 0 && raw[len - 1] == '\0')
                len--;
        for (gsize i = 0; i < len; i++)
                if (raw[i] == '\0')
                        raw[i] = ' ';
        return g_strndup(raw, len);
}

int cmd_clients(Context *c, int argc, char **argv) {
        const GOptionEntry entries[] = {
                { "json", 0, 0, G_OPTION_ARG_NONE, &c->opt_json, "Print JSON Lines, one object a client", NULL },
                { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &c->opt_paths, NULL, NULL },
                { NULL }
        };
        g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify) client_row_free);
        g_autoptr(GVariant) reply = NULL, list = NULL;
        g_autoptr(GError) error = NULL;
        GVariantIter it;
        const char *name;
        guint32 pid, uid, subs, watches;
        int r;

        r = watchctl_parse_command(c, "clients", NULL,
                                   "Print the programs watchd serves: pid, uid, subscriptions, kernel\n"
                                   "watches, bus name and command. Root sees every client, another user\n"
                                   "only their own.",
                                   entries, &argc, &argv);
        if (r >= 0)
                return r;
        if (c->opt_paths && c->opt_paths[0])
                return watchctl_usage_error("clients", "unexpected argument \"%s\"", c->opt_paths[0]);
        r = watchctl_connect_bus(c);
        if (r >= 0)
                return r;
        reply = g_dbus_connection_call_sync(watchd_client_get_connection(c->client), WATCHD_BUS_NAME,
                                            WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "ListClients", NULL,
                                            G_VARIANT_TYPE("(a(suuuu))"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
        if (!reply) {
                if (g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD)) {
                        watchctl_warn("this watchd does not know ListClients (it is older than watchctl)");
                        return EXIT_ERROR;
                }
                return watchctl_report_call_error(c, NULL, error);
        }
        list = g_variant_get_child_value(reply, 0);
        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(&suuuu)", &name, &pid, &uid, &subs, &watches)) {
                ClientRow *row = g_new0(ClientRow, 1);

                *row = (ClientRow) {
                        .name = g_strdup(name),
                        .pid = pid,
                        .uid = uid,
                        .subscriptions = subs,
                        .watches = watches,
                        .command = command_of(pid),
                };
                g_ptr_array_add(rows, row);
        }
        g_ptr_array_sort(rows, compare_client_rows);

        if (!c->opt_json)
                printf("%7s %6s %13s %7s %-9s %s\n", "PID", "UID", "SUBSCRIPTIONS", "WATCHES", "NAME", "COMMAND");
        for (guint i = 0; i < rows->len; i++) {
                const ClientRow *row = rows->pdata[i];

                if (c->opt_json) {
                        g_autoptr(JsonBuilder) b = json_builder_new();

                        json_builder_begin_object(b);
                        json_builder_set_member_name(b, "name");
                        json_builder_add_string_value(b, row->name);
                        json_builder_set_member_name(b, "pid");
                        json_builder_add_int_value(b, row->pid);
                        json_builder_set_member_name(b, "uid");
                        json_builder_add_int_value(b, row->uid);
                        json_builder_set_member_name(b, "subscriptions");
                        json_builder_add_int_value(b, row->subscriptions);
                        json_builder_set_member_name(b, "watches");
                        json_builder_add_int_value(b, row->watches);
                        if (row->command) {
                                event_json_add_path(b, "command", row->command, path_needs_escape(row->command));
                                json_builder_set_member_name(b, "escaped");
                                json_builder_add_boolean_value(b, path_needs_escape(row->command));
                        } else {
                                json_builder_set_member_name(b, "command");
                                json_builder_add_null_value(b);
                        }
                        json_builder_end_object(b);
                        watchctl_print_json(b);
                } else {
                        g_autofree char *display = row->command ? event_path_display(row->command) : NULL;

                        printf("%7" G_GUINT32_FORMAT " %6" G_GUINT32_FORMAT " %13" G_GUINT32_FORMAT
                               " %7" G_GUINT32_FORMAT " %-9s %s\n",
                               row->pid, row->uid, row->subscriptions, row->watches, row->name, display ? display : "-");
                }
        }
        return watchctl_flush_output(c) ? EXIT_OK : c->exit_status;
}
