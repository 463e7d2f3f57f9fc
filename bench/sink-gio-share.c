/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sink-gio-share: one of the GLib processes of the sharing workload (W7)
 *
 *   sink-gio-share --root ROOT --dirs D --expect N --rx-file F [--timeout-ms T] [--idle-ms I]
 *
 * Monitors ROOT/d0000 .. ROOT/d(D-1) with GFileMonitor, as a file manager or
 * an indexer does, through whatever implementation GLib picks
 * (GIO_USE_FILE_MONITOR=inotify or =watchd, set by bench/run). Counts the
 * files fNNNNNNN it is told were CREATED, and writes "index receipt_ns" for
 * each to F, so that bench/run can pair them with the writer's times. Says
 * "ready monitor=TYPE" once every monitor is in place, "key=value" lines at
 * the end (the same protocol as the other consumers, sink.h).
 */

#include <gio/gio.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

typedef struct Ctx {
        unsigned expect;
        guint64 *rx; /* index -> first receipt, 0 if none */
        unsigned distinct;
        guint64 records;
        guint64 t_last;
        guint64 idle_ns;
        guint64 deadline;
        GMainLoop *loop;
} Ctx;

static guint64 now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (guint64) ts.tv_sec * 1000000000u + (guint64) ts.tv_nsec;
}

static void on_changed(GFileMonitor *m, GFile *file, GFile *other, GFileMonitorEvent event, gpointer data) {
        Ctx *c = data;
        const char *path = g_file_peek_path(file), *base = path ? strrchr(path, '/') : NULL;
        guint64 now = now_ns();
        unsigned i;

        c->records++;
        if (event != G_FILE_MONITOR_EVENT_CREATED || !base || sscanf(base, "/f%7u", &i) != 1 || i >= c->expect)
                return;
        if (c->rx[i] == 0) {
                c->rx[i] = now;
                c->distinct++;
                c->t_last = now;
        }
        if (c->distinct == c->expect)
                g_main_loop_quit(c->loop);
}

static gboolean on_tick(gpointer data) {
        Ctx *c = data;
        guint64 now = now_ns();

        if (now > c->deadline || (c->t_last && now - c->t_last > c->idle_ns)) {
                g_main_loop_quit(c->loop);
                return G_SOURCE_REMOVE;
        }
        return G_SOURCE_CONTINUE;
}

int main(int argc, char **argv) {
        const char *root = NULL, *rx_file = NULL;
        unsigned dirs = 0, timeout_ms = 60000, idle_ms = 3000;
        GPtrArray *monitors = g_ptr_array_new_with_free_func(g_object_unref);
        Ctx c = { 0 };
        struct rusage ru;
        FILE *f;

        for (int i = 1; i + 1 < argc; i += 2) {
                if (g_str_equal(argv[i], "--root"))
                        root = argv[i + 1];
                else if (g_str_equal(argv[i], "--dirs"))
                        dirs = (unsigned) strtoul(argv[i + 1], NULL, 10);
                else if (g_str_equal(argv[i], "--expect"))
                        c.expect = (unsigned) strtoul(argv[i + 1], NULL, 10);
                else if (g_str_equal(argv[i], "--rx-file"))
                        rx_file = argv[i + 1];
                else if (g_str_equal(argv[i], "--timeout-ms"))
                        timeout_ms = (unsigned) strtoul(argv[i + 1], NULL, 10);
                else if (g_str_equal(argv[i], "--idle-ms"))
                        idle_ms = (unsigned) strtoul(argv[i + 1], NULL, 10);
        }
        if (!root || !rx_file || dirs == 0 || c.expect == 0) {
                fprintf(stderr, "usage: sink-gio-share --root ROOT --dirs D --expect N --rx-file F\n");
                return 2;
        }
        c.rx = g_new0(guint64, c.expect);
        c.loop = g_main_loop_new(NULL, FALSE);
        c.idle_ns = (guint64) idle_ms * 1000000u;
        for (unsigned i = 0; i < dirs; i++) {
                g_autofree char *path = g_strdup_printf("%s/d%04u", root, i);
                g_autoptr(GFile) file = g_file_new_for_path(path);
                g_autoptr(GError) error = NULL;
                GFileMonitor *m = g_file_monitor_directory(file, G_FILE_MONITOR_NONE, NULL, &error);

                if (!m) {
                        fprintf(stderr, "cannot monitor \"%s\": %s\n", path, error->message);
                        g_ptr_array_unref(monitors);
                        g_main_loop_unref(c.loop);
                        g_free(c.rx);
                        return 1;
                }
                g_signal_connect(m, "changed", G_CALLBACK(on_changed), &c);
                g_ptr_array_add(monitors, m);
        }
        printf("ready monitor=%s\n", G_OBJECT_TYPE_NAME(monitors->pdata[0]));
        fflush(stdout);

        c.deadline = now_ns() + (guint64) timeout_ms * 1000000u;
        g_timeout_add(50, on_tick, &c);
        g_main_loop_run(c.loop);

        f = fopen(rx_file, "we");
        if (!f) {
                fprintf(stderr, "cannot write \"%s\": %m\n", rx_file);
                g_ptr_array_unref(monitors);
                g_main_loop_unref(c.loop);
                g_free(c.rx);
                return 1;
        }
        for (unsigned i = 0; i < c.expect; i++)
                if (c.rx[i])
                        fprintf(f, "%u %" G_GUINT64_FORMAT "\n", i, c.rx[i]);
        fclose(f);
        getrusage(RUSAGE_SELF, &ru);
        printf("records=%" G_GUINT64_FORMAT "\ndistinct=%u\nt_last=%" G_GUINT64_FORMAT "\noverflow=0\n"
               "cpu_self_ns=%" G_GUINT64_FORMAT "\n",
               c.records, c.distinct, c.t_last,
               (guint64) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
                       (guint64) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u);
        g_ptr_array_unref(monitors);
        g_main_loop_unref(c.loop);
        g_free(c.rx);
        return 0;
}
