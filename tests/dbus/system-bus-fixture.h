/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * system-bus-fixture - what the programs of the system-style bus share
 *
 * test-system-bus.c (flow control), test-hung-calls.c and
 * test-hung-changes.c (a FUSE file system that stops answering) run their
 * cases on a bus built from Debian's own system.conf with our installed
 * policy (wt_system_bus_start(), watchd as root), or on the session-style
 * bus of the other D-Bus tests. What they share is here: the fixture (the
 * bus, watchd with its config, a tmpfs directory) and its Params, root's
 * reading client (GDBus: it counts records and Overflows and answers Ping
 * as told), and the parent's end of a child that becomes nobody and speaks
 * sd-bus (Stuck: its pipes; its lines and its byte to go on; StuckReport
 * and stuck_on_message(), what it counts). Moved from test-system-bus.c
 * unchanged; hung-mount.h builds on it.
 */

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "wt-fixture.h"

#define TIMEOUT_MS 60000
#define NOBODY     65534

/* Records a client may have unconfirmed, and its queue's limit (watchd.conf's
 * max_pending_events_per_client): small, so that a storm is many windows long. */
#define WINDOW        1024u
#define WINDOW_CONFIG "[limits]\nmax_pending_events_per_client = 1024\n"

/* A storm: STORM_PAIRS files created and removed (two records each), in
 * rounds of ROUND_PAIRS that the reading client receives before the next
 * round starts (so the kernel's queue, 16,384 records by default, never
 * overflows however slow the machine, and each round is less than a
 * window's queue). Names are long, so that each record weighs on the bus
 * what a deep path would: about 250 bytes. */
#define STORM_PAIRS 30000u
#define ROUND_PAIRS 256u
#define NAME_PAD    200

typedef enum PingMode {
        PING_ANSWER, /* GDBus answers, as every D-Bus library does */
        PING_ERROR,  /* answered with UnknownMethod by the client itself */
} PingMode;

typedef struct Params {
        gboolean system;    /* the system-style bus, else the session-style one */
        gboolean deny_ping; /* on it, our policy without its Ping rule */
        PingMode mode;      /* how the reading client answers Pings */
        /* sd-bus's default method call timeout in watchd (SYSTEMD_BUS_TIMEOUT),
         * and how long the client stays stuck before the storm. */
        const char *bus_timeout;
        int stuck_ms;
        const char *config; /* watchd.conf, else WINDOW_CONFIG */
} Params;

/* ---------------------------------------------------------------- the reading client */

typedef struct Reader {
        GDBusConnection *conn;
        WatchdInotify *proxy;
        guint filter;
        PingMode mode;
        guint32 id;
        gint n_pings; /* Pings received (GDBus's worker thread) */
        guint n_records, n_overflows;
} Reader;

void reader_init(Reader *r, WtBus *bus, PingMode mode);
void reader_done(Reader *r);
void await_records(Reader *r, guint n);

/* ---------------------------------------------------------------- the client that stops reading */

typedef struct Stuck {
        pid_t pid;
        int report_fd; /* the child's lines: its subscription id and name, then its report */
        int go_fd;     /* one byte: read on */
        guint32 id;
        char *name; /* its unique bus name */
} Stuck;

typedef struct StuckReport {
        unsigned records, records_after_overflow, overflows, overflow_id;
        unsigned pings_before_overflow; /* Pings the bus held for it while it was stuck */
        bool done;
        bool until_quiet; /* no marker will come: stop after a quiet second */
} StuckReport;

int stuck_on_message(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);
char *stuck_read_line(Stuck *st);
void stuck_go(Stuck *st);

/* ---------------------------------------------------------------- fixture */

gboolean watchd_wrapped(void);

typedef struct Fixture {
        WtBus *bus;
        WtDaemon *daemon;
        char *dir;    /* the storm's directory: tmpfs, 0755 (nobody watches it) */
        char *policy; /* a changed copy of our policy, or NULL */
} Fixture;

void fixture_setup(Fixture *f, gconstpointer data);
void fixture_teardown(Fixture *f, gconstpointer data);
void create_remove(Fixture *f, const char *prefix, guint i);
guint32 add_watch(WatchdInotify *proxy, const char *path);
