/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * sink: what every benchmark consumer shares, whatever system it listens to.
 *
 * One consumer program per system (raw inotify, watchd, GIO, gamin, Watchman,
 * inotifywait) receives notifications in its own way and hands each one to the
 * accounting here, so that every system is counted by the same code: which
 * files were named, when the first and last notification arrived, whether a
 * loss was signalled, receipt times for the latency workload, and how renames
 * were delivered (one record with both paths, or two halves).
 *
 * The protocol with bench/run is plain text on stdout: "ready ..." once the
 * watch is in place (the writer starts only then), and "key=value" lines at
 * the end. Times are CLOCK_MONOTONIC nanoseconds, comparable with the writer's.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum SinkMode {
        SINK_STORM,   /* files f0000000.. created: count distinct names */
        SINK_LATENCY, /* appends to one file: record each receipt time */
        SINK_RENAME,  /* a0000000.. renamed: count pairs and halves */
        SINK_TREE,    /* recursive watch of a tree: set-up time only */
} SinkMode;

typedef enum SinkMove {
        SINK_MOVE_FROM,
        SINK_MOVE_TO,
} SinkMove;

typedef struct Sink {
        SinkMode mode;
        const char *dir;     /* watched directory (or the file, for latency) */
        const char *dir2;    /* second directory of cross-directory renames, or NULL */
        const char *rx_file; /* latency: where receipt times are written */
        const char *extra;   /* system-specific option (--extra) */
        bool linger;         /* after the report, wait for stdin's EOF before leaving (--linger) */
        bool recursive;      /* storm: watch the directory RECURSIVE (--recursive; watchd only) */
        bool move_out;       /* renames: the new names are outside the watch (--move-out) */
        unsigned expect;     /* files, appends or renames the writer makes */
        uint64_t timeout_ns; /* hard limit from start */
        uint64_t idle_ns;    /* give up this long after the last event */

        uint64_t t_start;
        uint64_t t_first;  /* first counted notification */
        uint64_t t_last;   /* last counted notification */
        uint64_t setup_ns; /* tree: time to place the watches */
        uint64_t records;  /* notifications received, counted or not */
        unsigned distinct; /* distinct files named (storm) or renames accounted */
        bool overflow;     /* the system signalled a loss */

        uint8_t *seen; /* index -> SEEN_* bits */

        uint64_t *rx; /* latency: receipt times */
        size_t n_rx, n_rx_alloc;

        unsigned pair_records; /* records carrying both paths, correct */
        unsigned bad_records;  /* records whose paths do not match the writer's */
        unsigned halves;       /* half records (from or to alone) */
} Sink;

uint64_t sink_now(void);

/* Parses the options every consumer takes; exits with a message on error. */
void sink_parse(Sink *s, int argc, char **argv);
void sink_free(Sink *s);

/* Tells bench/run the watch is in place; watcher_pid is the process that
 * holds the kernel watches (for memory and fdinfo), 0 for this one. */
void sink_ready(Sink *s, long watcher_pid);

/* A notification naming a file created/written (storm) or any notification
 * on the file (latency); name may be a full path or a base name. */
void sink_file(Sink *s, const char *name);
/* A rename record carrying both paths. */
void sink_pair(Sink *s, const char *from, const char *to);
/* One half of a rename. */
void sink_half(Sink *s, SinkMove which, const char *name);
/* A notification that is not counted (other event kinds). */
void sink_other(Sink *s);
void sink_lost(Sink *s);

bool sink_done(const Sink *s);
/* Milliseconds to wait for the next notification before giving up: -1 never
 * (not used), 0 now. */
int sink_wait_ms(const Sink *s);

/* Prints the key=value report and writes the receipt times. */
int sink_report(Sink *s);
