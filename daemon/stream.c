/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stream - a client's records on a socket of its own
 *
 * The output buffer holds the frames the socket has not taken yet:
 * out[off..len). It is empty whenever the transport is not congested, so
 * frames are appended to an empty buffer at the start of a batch, and a
 * batch costs one send() (two if the socket fills). Accounting with
 * delivery: every record handed over is delivery_sent(); once the socket
 * has taken all of them, delivery_all_read() (the socket's buffer is the
 * client's to read, bounded by the kernel), so the window of
 * max_pending_events_per_client unconfirmed records is what waits here.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "record.h"
#include "stream.h"
#include "stream_frame.h"

struct Stream {
        int fd;
        DeliveryQueue *queue;
        const StreamOps *ops;
        void *userdata;
        uint8_t *out;
        size_t off, len, cap; /* frames not yet written: out[off..len) */
        bool watching;        /* want_writable(true) is in force */
        bool carried;         /* a record went to it */
        bool dead;            /* a write failed: the client's end is gone */
};

int stream_fd(const Stream *s) {
        return s->fd;
}

bool stream_carried_records(const Stream *s) {
        return s->carried;
}

bool stream_is_dead(const Stream *s) {
        return s->dead;
}

size_t stream_pending_bytes(const Stream *s) {
        return s->len - s->off;
}

/* Room for n more bytes at out + len. */
static int out_reserve(Stream *s, size_t n) {
        size_t cap;
        uint8_t *p;

        if (s->off > 0 && s->off == s->len)
                s->off = s->len = 0;
        if (s->cap - s->len >= n)
                return 0;
        cap = s->cap ? s->cap : 64 * 1024;
        while (cap - s->len < n)
                cap *= 2;
        p = realloc(s->out, cap);
        if (!p)
                return -ENOMEM;
        s->out = p;
        s->cap = cap;
        return 0;
}

static void set_watching(Stream *s, bool on) {
        if (s->watching == on)
                return;
        s->watching = on;
        s->ops->want_writable(on, s->userdata);
}

/* Writes what waits, as far as the socket takes it. */
static void out_flush(Stream *s) {
        while (s->off < s->len && !s->dead) {
                /* MSG_NOSIGNAL: a client that closed its end gets us EPIPE, not SIGPIPE. */
                ssize_t k = send(s->fd, s->out + s->off, s->len - s->off, MSG_NOSIGNAL | MSG_DONTWAIT);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        break;
                if (k < 0) {
                        /* EPIPE, ECONNRESET: the client closed its end. The loop
                         * sees the socket hung up and ends the stream. */
                        log_debug_errno(errno, "The stream of %s broke: %m", s->queue->name);
                        s->dead = true;
                        break;
                }
                s->off += (size_t) k;
        }
        if (s->off == s->len || s->dead) {
                s->off = s->len = 0;
                delivery_all_read(s->queue);
                set_watching(s, false);
        } else
                set_watching(s, true);
}

void stream_on_writable(Stream *s) {
        out_flush(s);
}

int stream_reserve(Stream *s, size_t n, uint8_t **ret) {
        int r;

        if (s->dead)
                return -EPIPE;
        r = out_reserve(s, n);
        if (r < 0)
                return r;
        *ret = s->out + s->len;
        return 0;
}

void stream_commit(Stream *s, size_t n) {
        s->len += n;
}

void stream_push(Stream *s) {
        out_flush(s);
}

static int stream_send_events(DeliveryQueue *q, Record **recs, size_t n, void *data) {
        Stream *s = data;
        size_t sent = 0;

        /* Whatever goes to a stream that died is covered by the Overflow its
         * client gets when the loop ends it (its records are "carried"). */
        s->carried = true;
        for (size_t i = 0; i < n; i++) {
                Record *rec = recs[i];
                size_t path_len = rec->path_len, new_len = rec->new_path ? strlen(rec->new_path) : 0;
                size_t need = stream_frame_event_size(path_len, new_len, NULL);
                int k;

                if (s->dead) {
                        record_free(rec);
                        continue;
                }
                k = need > STREAM_FRAME_MAX ? -E2BIG : out_reserve(s, need);
                if (k >= 0)
                        k = stream_frame_encode_event(s->out + s->len, s->cap - s->len, rec->id, rec->mask, rec->cookie,
                                                      rec->path, path_len, rec->new_path, new_len, NULL);
                if (k < 0) {
                        /* A path too long for a frame (over 1 MiB), or memory: the
                         * record costs only itself, and its client hears of it. */
                        log_warning_errno(k,
                                          "Failed to put a record of %s in its stream, naming it in an "
                                          "Overflow: %m",
                                          q->name);
                        delivery_dropped(q, rec->id);
                } else {
                        s->len += (size_t) k;
                        sent++;
                }
                record_free(rec);
        }
        if (sent > 0)
                delivery_sent(q, sent);
        out_flush(s);
        return 0;
}

static int stream_send_notice(DeliveryQueue *q, const Record *rec, const uint32_t *ids, size_t n_ids, void *data) {
        Stream *s = data;
        int k;

        if (s->dead)
                return -EPIPE;
        if (rec->kind == RECORD_OVERFLOW) {
                /* An id list too long for one frame goes in several. */
                do {
                        size_t n = n_ids < STREAM_FRAME_OVERFLOW_MAX_IDS ? n_ids : STREAM_FRAME_OVERFLOW_MAX_IDS;
                        size_t need = STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_OVERFLOW_FIXED + 4 * n;

                        k = out_reserve(s, need);
                        if (k >= 0)
                                k = stream_frame_encode_overflow(s->out + s->len, s->cap - s->len, ids, n);
                        if (k < 0)
                                break;
                        s->len += (size_t) k;
                        ids += n;
                        n_ids -= n;
                } while (n_ids > 0);
        } else {
                const char *reason = rec->reason ?: ""; /* as sd-bus sends a NULL string */
                size_t len = strlen(reason);

                k = out_reserve(s, STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_REMOVED_FIXED + len + 1);
                if (k >= 0)
                        k = stream_frame_encode_removed(s->out + s->len, s->cap - s->len, rec->id, reason, len);
                if (k >= 0)
                        s->len += (size_t) k;
        }
        if (k < 0)
                return log_warning_errno(k, "Failed to put a notice for %s in its stream, ignoring: %m", q->name);
        s->carried = true;
        out_flush(s);
        return 0;
}

/* Frames wait here (the socket is full), or the stream died: delivery keeps
 * the rest in the queue until the socket drains, or for the signals that
 * follow a dead stream. */
static bool stream_congested(void *data) {
        const Stream *s = data;

        return s->dead || s->off < s->len;
}

const DeliveryOps stream_delivery_ops = {
        .send_events = stream_send_events,
        .send_notice = stream_send_notice,
        .congested = stream_congested,
        .wakes_itself = true,
};

int stream_new(int fd, uint16_t version, DeliveryQueue *q, const StreamOps *ops, void *userdata, Stream **ret) {
        Stream *s;
        int flags;

        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return -errno;
        s = calloc(1, sizeof(Stream));
        if (!s)
                return -ENOMEM;
        *s = (Stream) {
                .fd = fd,
                .queue = q,
                .ops = ops,
                .userdata = userdata,
                .watching = true, /* the header waits for room: the caller watches from the start */
        };
        if (out_reserve(s, STREAM_FRAME_HEADER_SIZE) < 0) {
                free(s);
                return -ENOMEM;
        }
        /* The header goes with the first write (stream_on_writable() or a batch). */
        s->len = stream_frame_header_encode(s->out, version);
        *ret = s;
        return 0;
}

Stream *stream_free(Stream *s) {
        if (!s)
                return NULL;
        safe_close(s->fd);
        free(s->out);
        free(s);
        return NULL;
}
