// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libwatchd-client - a program built against the installed libwatchd-dev,
 * as docs/CLIENTS.md shows one, for tests/systemd-vm/guest-deb: watches DIR
 * for creations on the system bus's watchd, prints "ready" once watchd holds
 * the watch, then "CREATE PATH" for each creation, and exits 0 after the
 * first (1 on an error, 2 if none came within 60 s).
 *
 * Compiled in the guest with: cc -o libwatchd-client libwatchd-client.c
 *                             $(pkg-config --cflags --libs watchd-1)
 */
#include <stdio.h>
#include <watchd.h>

static GMainLoop *loop;
static int status = 2;

static void on_events(WatchdSubscription *sub, GPtrArray *events, gpointer data) {
        for (guint i = 0; i < events->len; i++) {
                WatchdEvent *e = events->pdata[i];

                if (watchd_event_get_mask(e) & WATCHD_EVENT_CREATE) {
                        printf("CREATE %s\n", watchd_event_get_path(e));
                        status = 0;
                        g_main_loop_quit(loop);
                }
        }
}

static gboolean on_timeout(gpointer data) {
        fprintf(stderr, "libwatchd-client: no event within 60 s\n");
        g_main_loop_quit(loop);
        return G_SOURCE_REMOVE;
}

int main(int argc, char **argv) {
        g_autoptr(GError) error = NULL;
        g_autoptr(WatchdClient) client = NULL;
        g_autoptr(WatchdSubscription) sub = NULL;

        if (argc != 2) {
                fprintf(stderr, "usage: libwatchd-client DIR\n");
                return 1;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        loop = g_main_loop_new(NULL, FALSE);
        client = watchd_client_new_sync(G_BUS_TYPE_SYSTEM, NULL, &error);
        if (!client) {
                fprintf(stderr, "libwatchd-client: %s\n", error->message);
                return 1;
        }
        sub = watchd_subscription_new(client, argv[1], WATCHD_EVENT_CREATE, WATCHD_WATCH_NONE);
        g_signal_connect(sub, "events", G_CALLBACK(on_events), NULL);
        if (!watchd_subscription_start_sync(sub, NULL, &error)) {
                fprintf(stderr, "libwatchd-client: %s: %s\n", argv[1], error->message);
                return 1;
        }
        printf("ready\n");
        g_timeout_add_seconds(60, on_timeout, NULL);
        g_main_loop_run(loop);
        watchd_client_close(client);
        g_main_loop_unref(loop);
        return status;
}
