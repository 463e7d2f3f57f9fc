/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sink-gio: GIO's GFileMonitor (the local inotify backend of GLib), as a
 * desktop application uses it.
 *
 * A directory monitor reports a written file as CREATED, then
 * CHANGES_DONE_HINT on close; the close is what is counted, as IN_CLOSE_WRITE
 * is for the others. For the latency workload the file monitor's rate limit is
 * set to 0 so that CHANGED is not held back for 800 ms. Renames use
 * G_FILE_MONITOR_WATCH_MOVES: RENAMED within a directory is one record with
 * both paths; across two monitored directories GIO sends MOVED_OUT and
 * MOVED_IN, each naming the other file. GFileMonitor is not recursive and has
 * no overflow signal.
 */

#include <gio/gio.h>
#include <stdio.h>

#include "sink.h"

typedef struct Ctx {
        Sink sink;
        GMainLoop *loop;
} Ctx;

static void on_changed(GFileMonitor *monitor, GFile *file, GFile *other, GFileMonitorEvent event, gpointer userdata) {
        Ctx *c = userdata;
        Sink *s = &c->sink;

        switch (s->mode) {
        case SINK_STORM:
                if (event == G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT)
                        sink_file(s, g_file_peek_path(file));
                else
                        sink_other(s);
                break;
        case SINK_LATENCY:
                if (event == G_FILE_MONITOR_EVENT_CHANGED)
                        sink_file(s, "");
                else
                        sink_other(s);
                break;
        case SINK_RENAME:
                if (event == G_FILE_MONITOR_EVENT_RENAMED && other)
                        sink_pair(s, g_file_peek_path(file), g_file_peek_path(other));
                else if (event == G_FILE_MONITOR_EVENT_MOVED_OUT && other)
                        sink_pair(s, g_file_peek_path(file), g_file_peek_path(other));
                else if (event == G_FILE_MONITOR_EVENT_MOVED_OUT || event == G_FILE_MONITOR_EVENT_DELETED)
                        sink_half(s, SINK_MOVE_FROM, g_file_peek_path(file));
                else if (event == G_FILE_MONITOR_EVENT_MOVED_IN || event == G_FILE_MONITOR_EVENT_CREATED)
                        /* With a partner this is the second record of a pair already counted. */
                        sink_half(s, SINK_MOVE_TO, g_file_peek_path(file));
                else
                        sink_other(s);
                break;
        case SINK_TREE:
                sink_other(s);
                break;
        }
        if (sink_done(s))
                g_main_loop_quit(c->loop);
}

static gboolean on_tick(gpointer userdata) {
        Ctx *c = userdata;

        if (sink_wait_ms(&c->sink) == 0) {
                g_main_loop_quit(c->loop);
                return G_SOURCE_REMOVE;
        }
        return G_SOURCE_CONTINUE;
}

static GFileMonitor *monitor(Ctx *c, const char *path, gboolean directory, GFileMonitorFlags flags) {
        g_autoptr(GFile) file = g_file_new_for_path(path);
        g_autoptr(GError) error = NULL;
        GFileMonitor *m;

        if (directory)
                m = g_file_monitor_directory(file, flags, NULL, &error);
        else
                m = g_file_monitor_file(file, flags, NULL, &error);
        if (!m) {
                fprintf(stderr, "cannot monitor \"%s\": %s\n", path, error->message);
                return NULL;
        }
        g_signal_connect(m, "changed", G_CALLBACK(on_changed), c);
        return m;
}

int main(int argc, char **argv) {
        GFileMonitor *m1 = NULL, *m2 = NULL;
        Ctx c = {};
        int r;

        sink_parse(&c.sink, argc, argv);
        c.loop = g_main_loop_new(NULL, FALSE);

        switch (c.sink.mode) {
        case SINK_STORM:
                m1 = monitor(&c, c.sink.dir, TRUE, G_FILE_MONITOR_NONE);
                break;
        case SINK_LATENCY:
                m1 = monitor(&c, c.sink.dir, FALSE, G_FILE_MONITOR_NONE);
                if (m1)
                        g_file_monitor_set_rate_limit(m1, 0);
                break;
        case SINK_RENAME:
                m1 = monitor(&c, c.sink.dir, TRUE, G_FILE_MONITOR_WATCH_MOVES);
                if (m1 && c.sink.dir2) {
                        m2 = monitor(&c, c.sink.dir2, TRUE, G_FILE_MONITOR_WATCH_MOVES);
                        if (!m2)
                                return 1;
                }
                break;
        case SINK_TREE:
                fprintf(stderr, "GFileMonitor has no recursive watch\n");
                return 3;
        }
        if (!m1)
                return 1;
        sink_ready(&c.sink, 0);

        g_timeout_add(50, on_tick, &c);
        g_main_loop_run(c.loop);

        r = sink_report(&c.sink);
        g_clear_object(&m1);
        g_clear_object(&m2);
        g_main_loop_unref(c.loop);
        sink_free(&c.sink);
        return r < 0 ? 1 : 0;
}
