/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-stream - the library's reader of its record stream
 *
 * watchd hands a client that asks (OpenStream) one end of a socket pair and
 * writes that client's records there, framed as watchd-stream(5) says
 * (shared/stream_frame.h, the daemon's own encoder's decoder). A thread of
 * the reader's own reads the socket and hands the frames of each read up
 * through callbacks, in the stream's order: like the D-Bus layer, it needs
 * no GMainContext, and the layer above takes its own lock once a read.
 *
 * The reader never writes on the socket (the protocol has the client write
 * nothing). It ends when the daemon closes the stream (the daemon left, or
 * the connection ended) or when the stream is malformed: then it closes
 * its end, which tells the daemon to send this client's records as signals
 * again, after an Overflow naming all its subscriptions.
 */

#include <glib.h>

#include "stream_frame.h"

typedef struct WatchdStreamReader WatchdStreamReader;

typedef struct WatchdStreamCallbacks {
        /* The frames of one read, in order (events, overflows, removals, the
         * durable frames; types this library does not know are not passed).
         * The reader's thread. Returns whether to read on; FALSE: the reader
         * reads nothing more until watchd_stream_reader_resume() (the socket
         * fills, and the daemon holds the client's records: flow control) and
         * its resume eventfd is written to. */
        gboolean (*frames)(gpointer userdata, const StreamFrame *frames, guint n);
        /* The stream ended: the daemon closed it (error NULL) or it could not be
         * read (error set; the reader has closed its end). Called once, last. */
        void (*ended)(gpointer userdata, const GError *error);
} WatchdStreamCallbacks;

/* Reads fd (taken, closed on failure) in a thread of its own. userdata is kept until
 * watchd_stream_reader_free(), then given to userdata_free; on failure (NULL)
 * it stays the caller's. */
WatchdStreamReader *watchd_stream_reader_new(int fd, const WatchdStreamCallbacks *callbacks, gpointer userdata,
                                             GDestroyNotify userdata_free, GError **error);
/* Stops the thread (no callback runs once this returns) and closes the
 * socket. Never from a callback: it waits for the thread. */
void watchd_stream_reader_free(WatchdStreamReader *r);
/* The eventfd that a paused reader (its frames callback said FALSE) waits
 * on: writing 1 to it (or to a dup of it, which may outlive the reader)
 * makes it read again. Owned by the reader. */
int watchd_stream_reader_resume_fd(WatchdStreamReader *r);
