/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sink-watchd: a watchd client, written to cost as little as a client can.
 *
 * sd-bus directly (no proxy objects, no main-loop integration): one AddWatch
 * per directory, then Events batches are walked in place with
 * sd_bus_message_read(). What is measured is the daemon and the bus, so the
 * client must not be the bottleneck. The bus address is given with --extra.
 *
 * With --extra stream:ADDRESS it asks for the record stream first
 * (OpenStream, watchd(8)) and reads its records from that socket instead,
 * frames decoded in place (shared/stream_frame.h); the bus is then used only
 * for the calls.
 *
 * With --extra packed:ADDRESS its subscriptions are PACKED (watchd(8)): the
 * records come as signals still, in EventsPacked, the stream's frames in one
 * ay, decoded in place.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "sink.h"
#include "stream_frame.h"
#include "watchd-api.h"

#define TREE_MASK                                                                                             \
        (WATCHD_IN_CREATE | WATCHD_IN_DELETE | WATCHD_IN_MODIFY | WATCHD_IN_MOVED_FROM | WATCHD_IN_MOVED_TO | \
         WATCHD_IN_CLOSE_WRITE | WATCHD_IN_ATTRIB)

static void on_record(Sink *s, uint32_t mask, const char *path, const char *new_path) {
        if (s->mode == SINK_RENAME) {
                if ((mask & (WATCHD_IN_MOVED_FROM | WATCHD_IN_MOVED_TO)) == (WATCHD_IN_MOVED_FROM | WATCHD_IN_MOVED_TO))
                        sink_pair(s, path, new_path);
                else if (mask & WATCHD_IN_MOVED_FROM)
                        sink_half(s, SINK_MOVE_FROM, path);
                else if (mask & WATCHD_IN_MOVED_TO)
                        sink_half(s, SINK_MOVE_TO, path);
                else
                        sink_other(s);
        } else if (s->mode == SINK_TREE)
                sink_other(s);
        else
                sink_file(s, path);
}

static int on_events(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Sink *s = userdata;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(uuuss)");
        if (r < 0)
                return r;
        for (;;) {
                uint32_t id, mask, cookie;
                const char *path, *new_path;

                r = sd_bus_message_read(m, "(uuuss)", &id, &mask, &cookie, &path, &new_path);
                if (r <= 0)
                        break;
                on_record(s, mask, path, new_path);
        }
        return r < 0 ? r : 0;
}

/* EventsPacked: the frames read in place from the message. */
static int on_events_packed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Sink *s = userdata;
        const void *p;
        size_t size;
        int r;

        r = sd_bus_message_read_array(m, 'y', &p, &size);
        if (r < 0)
                return r;
        while (size > 0) {
                StreamFrame f;
                int k = stream_frame_decode(p, size, &f);

                if (k <= 0) {
                        fprintf(stderr, "malformed EventsPacked\n");
                        sink_lost(s);
                        return 0;
                }
                if (f.type == STREAM_FRAME_EVENT)
                        on_record(s, f.mask, f.path, f.new_path);
                p = (const uint8_t *) p + k;
                size -= (size_t) k;
        }
        return 0;
}

/* OpenStream: the client's end of its record stream. */
static int open_stream(sd_bus *bus, int *ret_fd) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        int fd, r;

        r = sd_bus_call_method(bus, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "OpenStream", &error, &reply,
                               "a{sv}", 0);
        if (r >= 0)
                r = sd_bus_message_read(reply, "h", &fd);
        if (r >= 0) {
                *ret_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (*ret_fd < 0)
                        r = -errno;
        }
        if (r < 0)
                fprintf(stderr, "OpenStream: %s\n", error.message ? error.message : strerror(-r));
        sd_bus_error_free(&error);
        sd_bus_message_unref(reply);
        return r;
}

/* Reads the stream until the sink is done or gives up. */
static int read_stream(Sink *s, int fd) {
        StreamFrameReader rd;
        int r = 0;

        stream_frame_reader_init(&rd);
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                StreamFrame f;
                int timeout, k;
                ssize_t n;
                size_t room;
                void *buf;

                timeout = sink_wait_ms(s);
                if (timeout == 0)
                        break;
                k = poll(&p, 1, timeout);
                if (k < 0 && errno != EINTR) {
                        r = -errno;
                        break;
                }
                if (k <= 0)
                        continue;
                r = stream_frame_reader_space(&rd, 256 * 1024, &buf, &room);
                if (r < 0)
                        break;
                n = read(fd, buf, room);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n <= 0) {
                        r = n < 0 ? -errno : 0;
                        fprintf(stderr, "the stream ended (%s)\n", n < 0 ? strerror(errno) : "closed");
                        break;
                }
                stream_frame_reader_commit(&rd, (size_t) n);
                while ((r = stream_frame_reader_next(&rd, &f)) > 0)
                        switch (f.type) {
                        case STREAM_FRAME_EVENT:
                                on_record(s, f.mask, f.path, f.new_path);
                                break;
                        case STREAM_FRAME_OVERFLOW:
                                sink_lost(s);
                                break;
                        default:
                                sink_other(s);
                                break;
                        }
                if (r < 0) {
                        fprintf(stderr, "malformed stream: %s\n", strerror(-r));
                        break;
                }
        }
        stream_frame_reader_done(&rd);
        return r;
}

static int on_overflow(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        sink_lost(userdata);
        return 0;
}

/* PACKED with --extra packed:ADDRESS. */
static uint32_t extra_flags;

static int add_watch(sd_bus *bus, const char *path, uint32_t mask, uint32_t flags) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *call = NULL, *reply = NULL;
        uint32_t id;
        int r;

        /* A recursive watch of a large tree may take longer than sd-bus's default 25 s. */
        r = sd_bus_message_new_method_call(bus, &call, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "AddWatch");
        if (r >= 0)
                r = sd_bus_message_append(call, "suu", path, mask, flags | extra_flags);
        if (r >= 0)
                r = sd_bus_call(bus, call, 300u * 1000000u, &error, &reply);
        sd_bus_message_unref(call);
        if (r < 0) {
                fprintf(stderr, "AddWatch \"%s\": %s\n", path, error.message ? error.message : strerror(-r));
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_read(reply, "u", &id);
        sd_bus_message_unref(reply);
        return r < 0 ? r : 0;
}

int main(int argc, char **argv) {
        const char *address;
        sd_bus *bus = NULL;
        int stream = -1;
        Sink s;
        int r;

        sink_parse(&s, argc, argv);
        if (!s.extra) {
                fprintf(stderr, "the bus address is given with --extra [stream:|packed:]ADDRESS\n");
                return 2;
        }
        address = strncmp(s.extra, "stream:", 7) == 0 ? s.extra + 7 : s.extra;
        if (strncmp(s.extra, "packed:", 7) == 0) {
                address = s.extra + 7;
                extra_flags = WATCHD_FLAG_PACKED;
        }

        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, NULL, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "Events", on_events, &s);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, NULL, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "EventsPacked",
                                        on_events_packed, &s);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, NULL, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "Overflow", on_overflow,
                                        &s);
        if (r < 0) {
                fprintf(stderr, "cannot connect to \"%s\": %s\n", s.extra, strerror(-r));
                return 1;
        }

        s.t_start = sink_now();
        if (strncmp(s.extra, "stream:", 7) == 0 && open_stream(bus, &stream) < 0)
                return 1;
        switch (s.mode) {
        case SINK_STORM:
                r = add_watch(bus, s.dir, WATCHD_IN_CLOSE_WRITE, s.recursive ? WATCHD_FLAG_RECURSIVE : 0);
                break;
        case SINK_LATENCY:
                r = add_watch(bus, s.dir, WATCHD_IN_MODIFY, 0);
                break;
        case SINK_RENAME:
                r = add_watch(bus, s.dir, WATCHD_IN_MOVED_FROM | WATCHD_IN_MOVED_TO, 0);
                if (r >= 0 && s.dir2)
                        r = add_watch(bus, s.dir2, WATCHD_IN_MOVED_FROM | WATCHD_IN_MOVED_TO, 0);
                break;
        case SINK_TREE:
                r = add_watch(bus, s.dir, TREE_MASK, WATCHD_FLAG_RECURSIVE);
                break;
        }
        if (r < 0)
                return 1;
        sink_ready(&s, 0);

        if (stream >= 0) {
                /* The bus stays open: the stream is the connection's, and ends with it. */
                (void) read_stream(&s, stream);
        } else
                for (;;) {
                        int timeout;

                        r = sd_bus_process(bus, NULL);
                        if (r < 0) {
                                fprintf(stderr, "bus: %s\n", strerror(-r));
                                break;
                        }
                        if (r > 0)
                                continue;
                        timeout = sink_wait_ms(&s);
                        if (timeout == 0)
                                break;
                        r = sd_bus_wait(bus, (uint64_t) timeout * 1000u);
                        if (r < 0 && r != -EINTR)
                                break;
                }

        r = sink_report(&s);
        if (stream >= 0)
                close(stream);
        sink_free(&s);
        sd_bus_flush_close_unref(bus);
        return r < 0 ? 1 : 0;
}
