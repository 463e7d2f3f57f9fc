/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * stream - a client's records on a socket of its own (watchd-stream(5))
 *
 * The second transport of delivery.h, beside the bus's signals. Records
 * become frames (shared/stream_frame.h) in an output buffer, and a batch
 * goes out in one send() to the daemon's end of the client's socket pair.
 *
 * The socket is the flow control, without a round trip: what the client
 * has not read waits in the kernel's socket buffer, and when that is full
 * send() says EAGAIN. The rest of the batch waits in the output buffer,
 * the transport is congested, and delivery keeps the client's later
 * records in its queue, bounded by max_pending_events_per_client as for
 * signals (past it: the backlog dropped, an Overflow queued, which goes in
 * the stream once the client reads again). The layer above watches the
 * socket for writability while ops->want_writable says so and calls
 * stream_on_writable(). So a client that stops reading costs the daemon
 * at most its queue, one batch of frames and the socket's buffer; a client
 * that keeps up is never held back.
 *
 * The client writes nothing. Its end closed, or anything written on it,
 * ends the stream: the layer above sees the socket readable or hung up and
 * calls stream_free() (and falls back to signals, watchd(8) STREAM). A
 * write that fails (EPIPE) only marks the stream dead: a dead stream takes
 * nothing more (it is congested), so the client's later records wait in
 * its queue for the signals, and the end comes from the loop, never from
 * inside a flush. Whatever a stream took and its client may not have read
 * is covered by the Overflow the layer above queues when it ends
 * (stream_carried_records()).
 *
 * No sd-event here: the fd is watched by the layer above (stream_loop.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "delivery.h"

typedef struct Stream Stream;

typedef struct StreamOps {
        /* Watch the socket for writability (on), or stop (off). */
        void (*want_writable)(bool on, void *userdata);
} StreamOps;

/* The transport's table: delivery_queue_set_transport(q, &stream_delivery_ops, stream). */
extern const DeliveryOps stream_delivery_ops;

/*
 * A stream on fd (taken: closed by stream_free(), made non-blocking here)
 * for the records of queue q, speaking version. Its header waits in the
 * output buffer: the caller watches the socket for room from the start
 * (as if want_writable(true) had been called) and stream_on_writable()
 * sends it. Return: 0, or -errno (fd not taken).
 */
int stream_new(int fd, uint16_t version, DeliveryQueue *q, const StreamOps *ops, void *userdata, Stream **ret);
/* Closes the socket: the client reads the end of the stream. */
Stream *stream_free(Stream *s);

int stream_fd(const Stream *s);
/* Whether a record went to this stream (written, or waiting to be): if it
 * ends before the client says it read them, they are lost. */
bool stream_carried_records(const Stream *s);
/* Whether a write failed: the client is gone or closed its end. */
bool stream_is_dead(const Stream *s);
/* Bytes waiting in the daemon for the socket to take them. */
size_t stream_pending_bytes(const Stream *s);

/* The socket is writable: writes what waits. */
void stream_on_writable(Stream *s);

/*
 * Frames of the layer above (a resumed durable subscription's, which
 * delivery does not count), after what waits: room for n bytes at *ret,
 * then stream_commit() of what was written there, and stream_push() to
 * send. -EPIPE if the stream is dead, -ENOMEM. Such frames do not make the
 * stream "carry records" (stream_carried_records()): their own layer deals
 * with a stream that ends.
 */
int stream_reserve(Stream *s, size_t n, uint8_t **ret);
void stream_commit(Stream *s, size_t n);
/* Writes what waits, as far as the socket takes it (watched for room if not all). */
void stream_push(Stream *s);
