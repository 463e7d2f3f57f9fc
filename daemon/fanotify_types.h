/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * fanotify_types - the words of fanotify.h that fanotify_internal.h needs
 * too: the Fanotify (opaque here), what the layer above is asked through
 * (FanotifyOps) and the counters (FanotifyStats), both kept in the
 * Fanotify. fanotify.h and fanotify_internal.h include it; it includes no
 * other header of the fanotify backend, so that fanotify_internal.h need
 * not include fanotify.h: fanotify.c and fanotify_marks.c include both.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "watch_table.h"

typedef struct Fanotify Fanotify;

typedef struct FanotifyOps {
        /* A record for s: events_deliver() (s may end: ONESHOT). */
        bool (*deliver)(Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                        size_t name_len, uint64_t now_usec, void *userdata);
        /* s lost records, or part of its tree cannot be reported: Overflow. */
        void (*lost)(Subscription *s, void *userdata);
        /* The subscription with that id, or NULL (it ended meanwhile). */
        Subscription *(*get)(uint32_t id, void *userdata);
} FanotifyOps;

typedef struct FanotifyStats {
        unsigned marks;         /* filesystems marked */
        unsigned subscriptions; /* served here */
        uint64_t events_read;
        uint64_t own_events; /* watchd's own, dropped */
        uint64_t overflows;  /* FAN_Q_OVERFLOW */
        uint64_t lookups;    /* directories looked up by handle */
} FanotifyStats;
