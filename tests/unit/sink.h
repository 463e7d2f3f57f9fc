/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * sink - a delivery transport for unit tests that keeps what it is sent
 *
 * Every record of a batch (id, mask, path, new path) in order, and every
 * notice as a line: "removed ID REASON" or "overflow ID,ID,". A batch counts
 * as read at once (delivery_sent()), so nothing is held for a confirmation.
 */

#include <glib.h>
#include <stdint.h>

#include "delivery.h"

typedef struct SinkRecord {
        uint32_t id, mask;
        char *path, *new_path;
} SinkRecord;

typedef struct Sink {
        GArray *events;     /* SinkRecord */
        GPtrArray *notices; /* char* */
} Sink;

extern const DeliveryOps sink_ops;

void sink_init(Sink *s);
void sink_done(Sink *s);
/* Forgets what was sent so far. */
void sink_clear(Sink *s);
/* The i-th record sent; fails the test if there is none. */
const SinkRecord *sink_event(const Sink *s, guint i);
