/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * watchctl-common - what the files of watchctl share, and no one else: the
 * exit statuses, the context of one run (Context: the options, the client,
 * the watches, the main loop), a PATH of the command line (Watch), and the
 * functions called from one file into another. It stands with
 * watchctl-common.c, the ground floor, so that every file includes the
 * header of the file below it, not of watchctl.c at the top.
 *
 * The files stand in layers, each calling only those before it:
 * watchctl-common.c (messages, output, the bus options and connection),
 * watchctl-watch.c (the watches and the "watch" command),
 * watchctl-report.c ("list", "stats", "clients"), watchctl-durable.c
 * ("durable"), watchctl.c (main and the command table).
 */

#include <stdint.h>
#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "event-format.h"
#include <watchd.h>

enum {
        EXIT_OK = 0,
        EXIT_ERROR = 1,
        EXIT_USAGE = 2,
        EXIT_TIMEOUT = 3,
        EXIT_NO_WATCHES = 4,
};

/* --timeout is kept in milliseconds in a guint. */
#define TIMEOUT_MAX_SECONDS 4000000.0

typedef struct Context Context;

typedef struct Watch {
        Context *c;
        char *path;    /* absolute, bytes */
        char *display; /* path as printed: escaped (event_path_display) */
        WatchdSubscription *sub;
} Watch;

struct Context {
        /* bus options */
        gboolean opt_system;
        gboolean opt_no_stream;
        gboolean opt_session;
        char *opt_address;

        /* watch and list options */
        gboolean opt_recursive;
        gboolean opt_onlydir;
        gboolean opt_dont_follow;
        gboolean opt_oneshot;
        gboolean opt_persist;
        gboolean opt_no_poll;
        gboolean opt_json;
        gboolean opt_quiet;
        char **opt_events;
        char *opt_format;
        char *opt_count;
        char *opt_timeout;
        char **opt_paths;
        char *opt_since;
        char *opt_journal;
        gboolean opt_until_caught_up;

        uint32_t mask;
        uint32_t flags;
        guint64 count;    /* 0: no limit */
        guint timeout_ms; /* 0: none */
        EventFormat *format;

        WatchdClient *client;
        GDateTime *gone_since; /* when the daemon left, NULL while it is here */
        GPtrArray *watches;    /* Watch*, in command-line order */
        GPtrArray *lost;       /* Watch* whose overflow is to be said in one line */
        guint lost_idle;

        guint64 printed;
        gboolean stopping;      /* watchctl_quit() was called: print nothing more */
        gboolean output_failed; /* stdout could not be written */
        int exit_status;
        GMainLoop *loop;
};

/* watchctl-common.c: messages, output, the bus options and connection */
int watchctl_usage_error(const char *command, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
void watchctl_warn(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
int watchctl_report_call_error(const Context *c, const char *subject, const GError *error);
void watchctl_quit(Context *c, int status);
gboolean watchctl_flush_output(Context *c);
void watchctl_print_json(JsonBuilder *b);
void watchctl_on_client_closed(WatchdClient *client, const GError *error, gpointer userdata);
gboolean watchctl_on_stdout_error(int fd, GIOCondition condition, gpointer userdata);
gboolean watchctl_on_stop_signal(gpointer userdata);
void watchctl_add_bus_entries(GOptionContext *octx, Context *c);
int watchctl_parse_command(Context *c, const char *command, const char *params, const char *summary,
                           const GOptionEntry *entries, int *argc, char ***argv);
char *watchctl_absolute_path(const char *p);
int watchctl_connect_bus(Context *c);

/* watchctl-watch.c: the watches of the command line, and "watch" */
int watchctl_check_selection(Context *c, const char *command, gboolean need_paths);
int watchctl_add_all_watches(Context *c);
int cmd_watch(Context *c, int argc, char **argv);

/* watchctl-report.c */
int cmd_list(Context *c, int argc, char **argv);
int cmd_stats(Context *c, int argc, char **argv);
int cmd_clients(Context *c, int argc, char **argv);

/* watchctl-durable.c */
int cmd_durable(Context *c, int argc, char **argv);
