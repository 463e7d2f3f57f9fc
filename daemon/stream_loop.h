/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * stream_loop - a client's stream on the event loop
 *
 * Makes the socket pair of a stream (stream.h), keeps the daemon's end and
 * watches it with sd-event: for room, only while frames wait for it (an
 * idle stream costs no wake-up), and for the client's end closing, which
 * ends the stream: the owner hears it (ended()) and frees the StreamLoop.
 *
 * The client writes nothing (watchd-stream(5)): the daemon's end is shut
 * for reading, so a client's write fails with EPIPE at once and nothing it
 * writes reaches the daemon, costs it a wake-up or fills a buffer.
 */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "stream.h"

typedef struct StreamLoop StreamLoop;

/* The client closed its end: free the StreamLoop (stream_loop_free()) and go back to signals. */
typedef void (*StreamEndedFunc)(void *userdata);

/* A socket pair, the Stream on the daemon's end, and its watch on event.
 * *ret_peer_fd is the client's end (the caller sends it and closes it).
 * Return: 0, or -errno (-EMFILE, -ENFILE: out of descriptors). */
int stream_loop_new(sd_event *event, DeliveryQueue *q, uint16_t version, StreamEndedFunc ended, void *userdata,
                    StreamLoop **ret, int *ret_peer_fd);
StreamLoop *stream_loop_free(StreamLoop *l);

Stream *stream_loop_get(StreamLoop *l);
/* Whether the client's end is still open (looked at now, not at the loop's next turn). */
bool stream_loop_alive(StreamLoop *l);
