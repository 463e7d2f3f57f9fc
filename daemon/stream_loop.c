/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stream_loop - a client's stream on the event loop
 *
 * The watch is one sd-event io source on the daemon's end, for EPOLLOUT
 * while the Stream asks for it and for nothing otherwise: EPOLLHUP and
 * EPOLLERR come anyway, and EPOLLIN would always be set on an end shut for
 * reading. Its priority is the bus's, so a stream and the bus take turns
 * as the kernel fd and the bus do.
 */

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "log.h"
#include "macro.h"
#include "stream_loop.h"

struct StreamLoop {
        Stream *stream;
        sd_event_source *source;
        StreamEndedFunc ended;
        void *userdata;
};

static void want_writable(bool on, void *userdata) {
        StreamLoop *l = userdata;
        int r;

        if (!l->source)
                return; /* at stream_loop_new(), before the watch exists: set there */
        r = sd_event_source_set_io_events(l->source, on ? EPOLLOUT : 0);
        if (r < 0)
                /* Then what waits goes with the next batch: late, not lost. */
                log_warning_errno(r, "Failed to watch a stream for room, ignoring: %m");
}

static const StreamOps stream_ops = {
        .want_writable = want_writable,
};

static int on_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        StreamLoop *l = userdata;

        if (revents & (EPOLLHUP | EPOLLERR)) {
                l->ended(l->userdata); /* frees l */
                return 0;
        }
        if (revents & EPOLLOUT)
                stream_on_writable(l->stream);
        return 0;
}

int stream_loop_new(sd_event *event, DeliveryQueue *q, uint16_t version, StreamEndedFunc ended, void *userdata,
                    StreamLoop **ret, int *ret_peer_fd) {
        _cleanup_close_ int ours = -EBADF, theirs = -EBADF;
        StreamLoop *l;
        int fds[2], r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
                return -errno;
        ours = fds[0];
        theirs = fds[1];
        /* The client only reads: a write there fails (EPIPE) rather than
         * filling a buffer of ours or waking us. */
        if (shutdown(ours, SHUT_RD) < 0)
                return -errno;

        l = calloc(1, sizeof(StreamLoop));
        if (!l)
                return -ENOMEM;
        *l = (StreamLoop) {
                .ended = ended,
                .userdata = userdata,
        };
        r = stream_new(ours, version, q, &stream_ops, l, &l->stream);
        if (r < 0) {
                free(l);
                return r;
        }
        TAKE_FD(ours);
        /* The header waits to be written: watched for room from the start. */
        r = sd_event_add_io(event, &l->source, stream_fd(l->stream), EPOLLOUT, on_io, l);
        if (r < 0) {
                stream_loop_free(l);
                return r;
        }
        (void) sd_event_source_set_description(l->source, "stream");
        *ret = l;
        *ret_peer_fd = TAKE_FD(theirs);
        return 0;
}

StreamLoop *stream_loop_free(StreamLoop *l) {
        if (!l)
                return NULL;
        sd_event_source_disable_unref(l->source);
        stream_free(l->stream);
        free(l);
        return NULL;
}

Stream *stream_loop_get(StreamLoop *l) {
        return l->stream;
}

bool stream_loop_alive(StreamLoop *l) {
        struct pollfd p = { .fd = stream_fd(l->stream) }; /* POLLHUP: the client's end is closed */

        return poll(&p, 1, 0) == 0;
}
