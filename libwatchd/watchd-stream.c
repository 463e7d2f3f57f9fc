/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-stream - the library's reader of its record stream (see watchd-stream.h)
 *
 * The thread blocks in poll() on the socket and on an eventfd that
 * watchd_stream_reader_free() writes to, so that stopping never waits for
 * the daemon. Each read takes what the socket holds (up to 256 KiB);
 * StreamFrameReader keeps a frame cut by the end of a read for the next.
 * A reader told to pause (the layer above holds enough) polls only the
 * stop eventfd and a resume eventfd, leaving the socket to fill.
 */

#include <errno.h>
#include <gio/gio.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "watchd-private.h"
#include "watchd-stream.h"

#define READ_MIN (256 * 1024)

struct WatchdStreamReader {
        int fd;
        int stop;   /* eventfd: the thread ends when it is readable */
        int resume; /* eventfd: a paused thread reads again */
        GThread *thread;
        WatchdStreamCallbacks cb;
        gpointer userdata;
        GDestroyNotify userdata_free;
};

/* Reads until the end, an error or a stop; returns the error, or NULL. */
static GError *reader_run(WatchdStreamReader *r) {
        g_autoptr(GArray) frames = g_array_new(FALSE, FALSE, sizeof(StreamFrame));
        StreamFrameReader rd;
        GError *error = NULL;
        gboolean paused = FALSE;

        stream_frame_reader_init(&rd);
        for (;;) {
                struct pollfd p[2] = {
                        { .fd = paused ? r->resume : r->fd, .events = POLLIN },
                        { .fd = r->stop, .events = POLLIN },
                };
                StreamFrame f;
                void *buf;
                size_t room;
                ssize_t n;
                int k;

                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        error = g_error_new(G_IO_ERROR, g_io_error_from_errno(errno), "poll: %s", g_strerror(errno));
                        break;
                }
                if (p[1].revents)
                        break; /* stopped: no callback any more */
                if (paused) {
                        uint64_t count;

                        if (p[0].revents && read(r->resume, &count, sizeof count) < 0 && errno != EAGAIN)
                                g_warning("libwatchd: cannot read the stream's resume eventfd: %s", g_strerror(errno));
                        paused = FALSE;
                        continue;
                }
                if (stream_frame_reader_space(&rd, READ_MIN, &buf, &room) < 0) {
                        error = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_FAILED, "Out of memory");
                        break;
                }
                n = read(r->fd, buf, room);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n < 0) {
                        error = g_error_new(G_IO_ERROR, g_io_error_from_errno(errno), "Reading the stream: %s",
                                            g_strerror(errno));
                        break;
                }
                if (n == 0) {
                        if (stream_frame_reader_pending(&rd) > 0)
                                error = g_error_new_literal(WATCHD_ERROR, WATCHD_ERROR_PROTOCOL,
                                                            "The stream ended in the middle of a record");
                        r->cb.ended(r->userdata, error);
                        g_clear_error(&error);
                        stream_frame_reader_done(&rd);
                        return NULL;
                }
                stream_frame_reader_commit(&rd, (size_t) n);
                g_array_set_size(frames, 0);
                while ((k = stream_frame_reader_next(&rd, &f)) > 0)
                        if (f.type >= STREAM_FRAME_EVENT && f.type <= STREAM_FRAME_DURABLE_STOPPED)
                                g_array_append_val(frames, f);
                if (frames->len > 0)
                        paused = !r->cb.frames(r->userdata, (const StreamFrame *) (void *) frames->data, frames->len);
                if (k < 0) {
                        error = g_error_new(WATCHD_ERROR, WATCHD_ERROR_PROTOCOL, "The record stream is %s",
                                            k == -EPROTONOSUPPORT ? "of a version this library does not read" :
                                                                    "malformed");
                        break;
                }
        }
        stream_frame_reader_done(&rd);
        return error;
}

static gpointer reader_thread(gpointer data) {
        WatchdStreamReader *r = data;
        g_autoptr(GError) error = reader_run(r);

        if (error) {
                /* Closing our end tells watchd: this client's records go as signals again. */
                g_warning("libwatchd: %s; the records come as signals again", error->message);
                shutdown(r->fd, SHUT_RDWR);
                r->cb.ended(r->userdata, error);
        }
        return NULL;
}

WatchdStreamReader *watchd_stream_reader_new(int fd, const WatchdStreamCallbacks *callbacks, gpointer userdata,
                                             GDestroyNotify userdata_free, GError **error) {
        WatchdStreamReader *r = g_new0(WatchdStreamReader, 1);

        r->fd = fd;
        r->cb = *callbacks;
        r->userdata = userdata;
        r->userdata_free = userdata_free;
        r->stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        r->resume = r->stop >= 0 ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
        if (r->stop < 0 || r->resume < 0) {
                g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "eventfd: %s", g_strerror(errno));
                r->userdata_free = NULL;
                r->fd = -1;
                close(fd);
                watchd_stream_reader_free(r);
                return NULL;
        }
        r->thread = g_thread_try_new("watchd-stream", reader_thread, r, error);
        if (!r->thread) {
                r->userdata_free = NULL;
                watchd_stream_reader_free(r);
                return NULL;
        }
        return r;
}

int watchd_stream_reader_resume_fd(WatchdStreamReader *r) {
        return r->resume;
}

void watchd_stream_reader_free(WatchdStreamReader *r) {
        if (!r)
                return;
        if (r->thread) {
                uint64_t one = 1;

                if (write(r->stop, &one, sizeof one) < 0)
                        g_warning("libwatchd: cannot stop the stream's reader: %s", g_strerror(errno));
                g_thread_join(r->thread);
        }
        if (r->stop >= 0)
                close(r->stop);
        if (r->resume >= 0)
                close(r->resume);
        if (r->fd >= 0)
                close(r->fd);
        if (r->userdata_free)
                r->userdata_free(r->userdata);
        g_free(r);
}
