/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flood-rss - how much memory a libwatchd program takes when watchd floods it
 *
 *   flood-rss [--signals N] [--records N] [--size BYTES] [--stream] [--running]
 *
 * Issue 25 measured a GLib program at 470 MB of RSS after 30 Events signals
 * of 25,000 records of 1 KB. This is that measure, repeatable: a private
 * dbus-daemon, a fake watchd (fake-watchd.c) that sends the flood (as
 * signals, or over the client's stream with --stream), and a client in a
 * process of its own (this program again, with --client) watching one
 * directory, its main context blocked while the flood comes (or running,
 * --running). Once everything was read the client prints its peak and
 * current RSS (VmHWM, VmRSS), then runs its context and prints what it
 * was given. Not a test: a measurement whose command docs/RELIABILITY.md
 * gives, run against any build of the library (LD_LIBRARY_PATH).
 */

#include <stdio.h>
#include <string.h>

#include <watchd.h>

#include "fake-watchd.h"
#include "watchd-test.h"

static guint n_signals = 30, n_records = 25000, size = 1000;
static gboolean stream, running;
static char *client_address;

static const GOptionEntry options[] = {
        { "signals", 0, 0, G_OPTION_ARG_INT, &n_signals, "Batches (Events signals)", "N" },
        { "records", 0, 0, G_OPTION_ARG_INT, &n_records, "Records a batch", "N" },
        { "size", 0, 0, G_OPTION_ARG_INT, &size, "Bytes of a record's path", "BYTES" },
        { "stream", 0, 0, G_OPTION_ARG_NONE, &stream, "Over the client's record stream", NULL },
        { "running", 0, 0, G_OPTION_ARG_NONE, &running, "The client's context runs meanwhile", NULL },
        { "client", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &client_address, NULL, NULL },
        { NULL },
};

static guint64 status_kb(const char *key) {
        g_autofree char *text = NULL;
        const char *p;

        if (!g_file_get_contents("/proc/self/status", &text, NULL, NULL) || !(p = strstr(text, key)))
                return 0;
        return g_ascii_strtoull(p + strlen(key) + 1, NULL, 10);
}

static guint n_events, n_overflows;

static void on_events(WatchdSubscription *sub, GPtrArray *events, gpointer data) {
        n_events += events->len;
}

static void on_overflow(WatchdSubscription *sub, WatchdOverflowReason reason, gpointer data) {
        n_overflows++;
}

static gboolean stdin_line(GIOChannel *ch, GIOCondition cond, gpointer data) {
        *(gboolean *) data = TRUE;
        return G_SOURCE_REMOVE;
}

/* The client: says its name, waits for "done" (its context blocked, or
 * running), makes sure all was read, reports. */
static int client_main(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(WatchdClient) c = g_initable_new(WATCHD_TYPE_CLIENT, NULL, &error, "address", client_address,
                                                   "use-stream", stream, NULL);
        g_autoptr(WatchdSubscription) sentinel = NULL, sub = NULL;
        g_autoptr(GVariant) stats = NULL;
        guint64 hwm, rss;
        char line[64];

        g_assert_no_error(error);
        sentinel = watchd_client_add_watch_sync(c, "/sentinel", WATCHD_EVENT_ALL, 0, NULL, &error);
        g_assert_no_error(error);
        sub = watchd_client_add_watch_sync(c, "/w", WATCHD_EVENT_ALL, 0, NULL, &error);
        g_assert_no_error(error);
        g_signal_connect(sub, "events", G_CALLBACK(on_events), NULL);
        g_signal_connect(sub, "overflow", G_CALLBACK(on_overflow), NULL);
        printf("%s %u\n", g_dbus_connection_get_unique_name(watchd_client_get_connection(c)),
               watchd_subscription_get_id(sub));
        fflush(stdout);
        if (running) {
                g_autoptr(GIOChannel) ch = g_io_channel_unix_new(0);
                gboolean done = FALSE;

                g_io_add_watch(ch, G_IO_IN | G_IO_HUP, stdin_line, &done);
                while (!done)
                        g_main_context_iteration(NULL, TRUE);
        } else if (!fgets(line, sizeof line, stdin))
                return 1;
        /* Everything sent was read: the fake answers this after it; the
         * stream's last frame ends the sentinel. */
        stats = watchd_client_get_stats_sync(c, NULL, &error);
        g_assert_no_error(error);
        while (stream && watchd_subscription_is_active(sentinel))
                g_usleep(1000);
        hwm = status_kb("VmHWM:");
        rss = status_kb("VmRSS:");
        while (g_main_context_iteration(NULL, FALSE))
                ;
        printf("peak %" G_GUINT64_FORMAT " KB, now %" G_GUINT64_FORMAT " KB; %u events, %u overflows emitted\n", hwm,
               rss, n_events, n_overflows);
        watchd_client_close(c);
        return 0;
}

int main(int argc, char **argv) {
        static const char *const caps_signals[] = { "persistent", NULL };
        static const char *const caps_stream[] = { "persistent", "stream", NULL };
        g_autoptr(GOptionContext) oc = g_option_context_new("- a libwatchd client flooded by a fake watchd");
        g_autoptr(GError) error = NULL;
        g_autoptr(GSubprocess) child = NULL;
        g_autoptr(GPtrArray) args = g_ptr_array_new();
        g_autofree char *pad = NULL, *out = NULL, *name = NULL;
        GInputStream *from;
        GOutputStream *to;
        char buf[512];
        gssize n;
        guint32 id = 0;
        FakeWatchd *fake;
        WtBus *bus;

        g_option_context_add_main_entries(oc, options, NULL);
        if (!g_option_context_parse(oc, &argc, &argv, &error)) {
                fprintf(stderr, "%s\n", error->message);
                return 2;
        }
        if (client_address)
                return client_main();

        bus = wt_bus_start();
        fake = fake_watchd_start(bus->address, stream ? caps_stream : caps_signals);
        g_ptr_array_add(args, argv[0]);
        g_ptr_array_add(args, (char *) "--client");
        g_ptr_array_add(args, bus->address);
        if (stream)
                g_ptr_array_add(args, (char *) "--stream");
        if (running)
                g_ptr_array_add(args, (char *) "--running");
        g_ptr_array_add(args, NULL);
        child = g_subprocess_newv((const char *const *) args->pdata,
                                  G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
        g_assert_no_error(error);
        from = g_subprocess_get_stdout_pipe(child);
        to = g_subprocess_get_stdin_pipe(child);
        n = g_input_stream_read(from, buf, sizeof buf - 1, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpint(n, >, 0);
        buf[n] = '\0';
        name = g_strndup(buf, strcspn(buf, " "));
        id = (guint32) g_ascii_strtoull(strchr(buf, ' ') + 1, NULL, 10);

        pad = g_strnfill(size, 'p');
        for (guint s = 0, k = 0; s < n_signals; s++) {
                GVariantBuilder b;

                g_variant_builder_init(&b, G_VARIANT_TYPE("a(uuuss)"));
                for (guint r = 0; r < n_records; r++, k++) {
                        g_autofree char *p = g_strdup_printf("/w/%s%08u", pad, k);

                        if (stream)
                                fake_watchd_stream_event(fake, id, WATCHD_EVENT_CREATE, 0, p, NULL);
                        else
                                g_variant_builder_add(&b, "(uuuss)", id, WATCHD_EVENT_CREATE, 0, p, "");
                }
                if (stream)
                        g_variant_builder_clear(&b);
                else
                        fake_watchd_signal(fake, name, "Events", g_variant_new("(a(uuuss))", &b));
        }
        if (stream)
                fake_watchd_stream_removed(fake, 1, "deleted");
        g_assert_true(g_output_stream_write_all(to, "done\n", 5, NULL, NULL, &error));
        g_assert_no_error(error);
        g_assert_true(g_subprocess_communicate_utf8(child, NULL, NULL, &out, NULL, &error));
        g_assert_no_error(error);
        printf("%u batches of %u records of %u bytes (%s, the context %s): %s", n_signals, n_records, size,
               stream ? "stream" : "signals", running ? "running" : "blocked", out ? out : "(nothing)\n");
        fake_watchd_stop(fake);
        wt_bus_stop(bus);
        return g_subprocess_get_exit_status(child);
}
