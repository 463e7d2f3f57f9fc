/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watchctl-watch - the watches of the command line and the "watch" command
 *
 * The selection (mask, flags, one Watch a PATH) and its subscriptions, made
 * by "watch" and by "list" (watchctl-report.c), with what the library says
 * of them: the events printed one a line, the subscriptions that lost
 * events, a watch removed, the daemon gone and back. "watch" runs the main
 * loop until --count, --timeout, a signal or no watch left.
 *
 * It calls only watchctl-common.c (watchctl-common.h gives the files' order).
 */

#include <signal.h>
#include <stdio.h>
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
/* The watches */

static void watch_free(Watch *w) {
        if (w->sub) {
                g_signal_handlers_disconnect_by_data(w->sub, w);
                watchd_subscription_cancel(w->sub);
                g_object_unref(w->sub);
        }
        g_free(w->path);
        g_free(w->display);
        g_free(w);
}

static void drop_watch(Context *c, Watch *w) {
        if (c->lost)
                g_ptr_array_remove(c->lost, w);
        g_ptr_array_remove(c->watches, w); /* frees w */
        if (c->watches->len == 0) {
                if (!c->opt_quiet)
                        watchctl_warn("no watch left");
                watchctl_quit(c, c->opt_oneshot ? EXIT_OK : EXIT_NO_WATCHES);
        }
}

/* ------------------------------------------------------------------------ */
/* What the library says */

static void on_events(WatchdSubscription *sub, GPtrArray *events, gpointer userdata) {
        Watch *w = userdata;
        Context *c = w->c;

        if (c->stopping)
                return;
        for (guint i = 0; i < events->len; i++) {
                WatchdEvent *e = events->pdata[i];
                EventRecord r = {
                        .id = watchd_subscription_get_id(sub),
                        .mask = watchd_event_get_mask(e),
                        .cookie = watchd_event_get_cookie(e),
                        .path = watchd_event_get_path(e),
                        .new_path = watchd_event_get_new_path(e) ? watchd_event_get_new_path(e) : "",
                        .watch = w->path,
                };
                g_autofree char *line = c->opt_json ? event_format_json(&r) : event_format_record(c->format, &r);

                puts(line);
                c->printed++;
                if (c->count > 0 && c->printed >= c->count) {
                        watchctl_quit(c, EXIT_OK);
                        break;
                }
        }
        watchctl_flush_output(c);
}

/* The subscriptions that lost events in one go (one Overflow of watchd
 * names them all) are said in one line, once the library has emitted them. */
static gboolean say_lost(gpointer userdata) {
        Context *c = userdata;
        g_autoptr(JsonBuilder) b = json_builder_new();
        g_autoptr(GString) paths = g_string_new(NULL);

        c->lost_idle = 0;
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "type");
        json_builder_add_string_value(b, "overflow");
        json_builder_set_member_name(b, "ids");
        json_builder_begin_array(b);
        for (guint i = 0; i < c->lost->len; i++) {
                Watch *w = c->lost->pdata[i];

                json_builder_add_int_value(b, watchd_subscription_get_id(w->sub));
                g_string_append_printf(paths, "%s\"%s\"", paths->len ? ", " : "", w->display);
        }
        json_builder_end_array(b);
        json_builder_end_object(b);
        g_ptr_array_set_size(c->lost, 0);
        if (paths->len == 0 || c->stopping)
                return G_SOURCE_REMOVE;
        watchctl_warn("events were lost under %s (overflow): rescan if you keep state", paths->str);
        if (c->opt_json) {
                watchctl_print_json(b);
                watchctl_flush_output(c);
        }
        return G_SOURCE_REMOVE;
}

static void on_overflow(WatchdSubscription *sub, WatchdOverflowReason reason, gpointer userdata) {
        Watch *w = userdata;
        Context *c = w->c;

        /* A restart is said once for all watches, by on_daemon_restarted(). */
        if (reason == WATCHD_OVERFLOW_RESTARTED)
                return;
        if (!g_ptr_array_find(c->lost, w, NULL))
                g_ptr_array_add(c->lost, w);
        if (!c->lost_idle)
                c->lost_idle = g_idle_add(say_lost, c);
}

static void on_removed(WatchdSubscription *sub, WatchdRemovedReason reason, const char *detail, const GError *error,
                       gpointer userdata) {
        Watch *w = userdata;
        Context *c = w->c;

        if (c->stopping)
                return;
        if (reason == WATCHD_REMOVED_ERROR) {
                /* The daemon that came back refused it. */
                watchctl_report_call_error(c, w->display, error);
                watchctl_warn("\"%s\" is no longer watched", w->display);
                drop_watch(c, w);
                return;
        }
        if (!c->opt_quiet || reason != WATCHD_REMOVED_ONESHOT)
                watchctl_warn("\"%s\" is no longer watched (%s)", w->display, detail);
        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();

                json_builder_begin_object(b);
                json_builder_set_member_name(b, "type");
                json_builder_add_string_value(b, "removed");
                json_builder_set_member_name(b, "id");
                json_builder_add_int_value(b, watchd_subscription_get_id(sub));
                event_json_add_path(b, "watch", w->path, path_needs_escape(w->path));
                json_builder_set_member_name(b, "reason");
                json_builder_add_string_value(b, detail);
                json_builder_set_member_name(b, "escaped");
                json_builder_add_boolean_value(b, path_needs_escape(w->path));
                json_builder_end_object(b);
                watchctl_print_json(b);
                if (!watchctl_flush_output(c))
                        return;
        }
        drop_watch(c, w);
}

/* ------------------------------------------------------------------------ */
/* Daemon restarts */

static char *time_of_day(GDateTime *t) {
        return g_date_time_format(t, "%H:%M:%S");
}

static void on_daemon_vanished(WatchdClient *client, gpointer userdata) {
        Context *c = userdata;
        g_autoptr(GDateTime) now = g_date_time_new_now_local();
        g_autofree char *when = time_of_day(now);

        if (c->stopping)
                return;
        watchctl_warn("watchd left the bus at %s; waiting for it to come back", when);
        /* If it left again while the watches were being added again, the
         * events have been unwatched since the first time. */
        if (!c->gone_since)
                c->gone_since = g_steal_pointer(&now);
}

static void on_daemon_restarted(WatchdClient *client, gpointer userdata) {
        Context *c = userdata;
        g_autoptr(GDateTime) now = g_date_time_new_now_local();
        g_autofree char *from = NULL, *until = time_of_day(now);

        if (c->stopping || !c->gone_since || c->watches->len == 0)
                return;
        from = time_of_day(c->gone_since);
        watchctl_warn("watchd restarted; events between %s and %s may have been missed", from, until);
        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();
                g_autofree char *from_iso = g_date_time_format_iso8601(c->gone_since);
                g_autofree char *until_iso = g_date_time_format_iso8601(now);

                json_builder_begin_object(b);
                json_builder_set_member_name(b, "type");
                json_builder_add_string_value(b, "restarted");
                json_builder_set_member_name(b, "missed_from");
                json_builder_add_string_value(b, from_iso);
                json_builder_set_member_name(b, "missed_until");
                json_builder_add_string_value(b, until_iso);
                json_builder_end_object(b);
                watchctl_print_json(b);
                watchctl_flush_output(c);
        }
        g_clear_pointer(&c->gone_since, g_date_time_unref);
}

static gboolean on_timeout(gpointer userdata) {
        Context *c = userdata;

        /* Without --count the goal was one event at least. */
        watchctl_quit(c, c->printed > 0 && c->count == 0 ? EXIT_OK : EXIT_TIMEOUT);
        return G_SOURCE_REMOVE;
}

/* ------------------------------------------------------------------------ */
/* The selection: the watches "watch" and "list" add */

static gboolean watch_path_equal(gconstpointer a, gconstpointer b) {
        return g_str_equal(((const Watch *) a)->path, ((const Watch *) b)->path);
}

/* The watch selection shared by "watch" and "list": mask, flags, paths. */
int watchctl_check_selection(Context *c, const char *command, gboolean need_paths) {
        g_autoptr(GError) error = NULL;

        c->mask = 0;
        for (char **e = c->opt_events; e && *e; e++)
                if (!event_mask_parse(*e, &c->mask, &error))
                        return watchctl_usage_error(command, "-e: %s", error->message);
        if (!c->opt_events)
                c->mask = INOTIFY_DEV_ALL_EVENTS;
        else if (c->mask == 0)
                return watchctl_usage_error(command,
                                            "-e: no event to watch (unmount is always reported: name another event)");

        c->flags = (c->opt_recursive ? WATCHD_FLAG_RECURSIVE : 0) | (c->opt_onlydir ? WATCHD_FLAG_ONLYDIR : 0) |
                (c->opt_dont_follow ? WATCHD_FLAG_DONT_FOLLOW : 0) | (c->opt_oneshot ? WATCHD_FLAG_ONESHOT : 0) |
                (c->opt_persist ? WATCHD_FLAG_PERSIST : 0) | (c->opt_no_poll ? WATCHD_FLAG_NO_POLL : 0);

        if (need_paths && (!c->opt_paths || !c->opt_paths[0]))
                return watchctl_usage_error(command, "no PATH to watch");

        c->watches = g_ptr_array_new_with_free_func((GDestroyNotify) watch_free);
        c->lost = g_ptr_array_new();
        for (char **p = c->opt_paths; p && *p; p++) {
                Watch *w;

                if (!**p)
                        return watchctl_usage_error(command, "empty PATH");
                w = g_new0(Watch, 1);
                w->path = watchctl_absolute_path(*p);
                w->display = event_path_display(w->path);
                /* The same path twice would print each event twice. */
                if (g_ptr_array_find_with_equal_func(c->watches, w, watch_path_equal, NULL)) {
                        watch_free(w);
                        continue;
                }
                g_ptr_array_add(c->watches, w);
        }
        return -1;
}

/* Adds every watch of the selection; returns -1 on success, else the status. */
int watchctl_add_all_watches(Context *c) {
        for (guint i = 0; i < c->watches->len; i++) {
                Watch *w = c->watches->pdata[i];
                g_autoptr(GError) error = NULL;

                w->c = c;
                w->sub = watchd_subscription_new(c->client, w->path, c->mask, c->flags);
                g_signal_connect(w->sub, "events", G_CALLBACK(on_events), w);
                g_signal_connect(w->sub, "overflow", G_CALLBACK(on_overflow), w);
                g_signal_connect(w->sub, "removed", G_CALLBACK(on_removed), w);
                if (!watchd_subscription_start_sync(w->sub, NULL, &error))
                        return watchctl_report_call_error(c, w->display, error);
        }
        return -1;
}

/* ------------------------------------------------------------------------ */
/* The command */

int cmd_watch(Context *c, int argc, char **argv) {
        const GOptionEntry entries[] = {
                { "recursive", 'r', 0, G_OPTION_ARG_NONE, &c->opt_recursive,
                  "Watch whole trees, following new directories", NULL },
                { "event", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &c->opt_events,
                  "Watch only these events (comma-separated; repeatable)", "EVENTS" },
                { "format", 0, 0, G_OPTION_ARG_STRING, &c->opt_format,
                  "Print each event by FMT: %w %f %e %Xe %c %p %n %i %%", "FMT" },
                { "json", 0, 0, G_OPTION_ARG_NONE, &c->opt_json, "Print JSON Lines, one object an event", NULL },
                { "count", 'c', 0, G_OPTION_ARG_STRING, &c->opt_count, "Exit after N events", "N" },
                { "timeout", 't', 0, G_OPTION_ARG_STRING, &c->opt_timeout,
                  "Exit after SECONDS (status 3 if --count was not reached)", "SECONDS" },
                { "onlydir", 0, 0, G_OPTION_ARG_NONE, &c->opt_onlydir, "Refuse a PATH that is not a directory", NULL },
                { "no-dereference", 'P', 0, G_OPTION_ARG_NONE, &c->opt_dont_follow,
                  "Refuse a PATH that is a symbolic link instead of following it", NULL },
                { "oneshot", 0, 0, G_OPTION_ARG_NONE, &c->opt_oneshot, "End each watch after its first event", NULL },
                { "persist", 0, 0, G_OPTION_ARG_NONE, &c->opt_persist,
                  "Follow each PATH, not the object: watch what appears there again", NULL },
                { "no-poll", 0, 0, G_OPTION_ARG_NONE, &c->opt_no_poll,
                  "Do not poll directories on remote file systems (NFS, SMB, FUSE...)", NULL },
                { "quiet", 'q', 0, G_OPTION_ARG_NONE, &c->opt_quiet,
                  "Do not say on stderr when watches are established", NULL },
                { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &c->opt_paths, NULL, "PATH..." },
                { NULL }
        };
        g_autoptr(GError) error = NULL;
        int r;

        r = watchctl_parse_command(c, "watch", NULL,
                                   "Print the events under each PATH as they arrive, one a line.\n"
                                   "Events: access, modify, attrib, close_write, close_nowrite, close, open,\n"
                                   "moved_from, moved_to, move (or moved), create, delete, delete_self, unmount, all.\n"
                                   "Exit status: 0 done, 1 error, 2 usage, 3 timeout, 4 no watch left.",
                                   entries, &argc, &argv);
        if (r >= 0)
                return r;
        r = watchctl_check_selection(c, "watch", TRUE);
        if (r >= 0)
                return r;
        if (c->opt_json && c->opt_format)
                return watchctl_usage_error("watch", "--format and --json exclude each other");
        c->format = event_format_new(c->opt_format, &error);
        if (!c->format)
                return watchctl_usage_error("watch", "--format: %s", error->message);
        if (c->opt_count && !g_ascii_string_to_unsigned(c->opt_count, 10, 1, G_MAXUINT64, &c->count, &error))
                return watchctl_usage_error("watch", "--count: %s", error->message);
        if (c->opt_timeout) {
                char *end = NULL;
                double s = g_ascii_strtod(c->opt_timeout, &end);

                if (end == c->opt_timeout || *end || !(s > 0) || s > TIMEOUT_MAX_SECONDS)
                        return watchctl_usage_error("watch", "--timeout: \"%s\" is not a number of seconds in (0, %.0f]",
                                                    c->opt_timeout, TIMEOUT_MAX_SECONDS);
                c->timeout_ms = MAX(1, (guint) (s * 1000.0));
        }

        r = watchctl_connect_bus(c);
        if (r >= 0)
                return r;
        g_signal_connect(c->client, "closed", G_CALLBACK(watchctl_on_client_closed), c);
        g_signal_connect(c->client, "daemon-vanished", G_CALLBACK(on_daemon_vanished), c);
        g_signal_connect(c->client, "daemon-restarted", G_CALLBACK(on_daemon_restarted), c);
        /* The handlers are connected before each watch starts: no event is
         * missed, and none is emitted before the main loop runs. */
        r = watchctl_add_all_watches(c);
        if (r >= 0)
                return r;

        c->loop = g_main_loop_new(NULL, FALSE);
        g_unix_signal_add(SIGINT, watchctl_on_stop_signal, c);
        g_unix_signal_add(SIGTERM, watchctl_on_stop_signal, c);
        g_unix_fd_add(STDOUT_FILENO, G_IO_ERR, watchctl_on_stdout_error, c);
        if (c->timeout_ms)
                g_timeout_add(c->timeout_ms, on_timeout, c);
        if (!c->opt_quiet)
                watchctl_warn("watches established");

        c->exit_status = EXIT_OK;
        g_main_loop_run(c->loop);
        watchctl_flush_output(c);
        return c->exit_status;
}
