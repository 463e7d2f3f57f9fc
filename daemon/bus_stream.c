/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bus_stream - a client's records on a socket of its own (OpenStream)
 */

#include <errno.h>
#include <string.h>

#include "bus.h"
#include "bus_caller.h"
#include "bus_durable.h"
#include "bus_methods.h"
#include "bus_signals.h"
#include "bus_stream.h"
#include "log.h"
#include "macro.h"
#include "stream.h"
#include "stream_frame.h"

/*
 * The record stream (watchd(8), STREAM; the format is watchd-stream(5)).
 *
 * OpenStream hands the caller one end of a socket pair; from the reply on,
 * the caller's records go there and no longer as signals. Its queue keeps
 * this BusClient as its transport's data, and bus_stream_ops forwards to
 * the Stream (stream.h), so that ending the client finds its BusClient
 * whichever way its records go. The stream is the connection's: it ends
 * with it (bus_client_end()), and when the client closes it its records go as
 * signals again, after an Overflow naming all its subscriptions if records
 * went to the stream (what it did not read of them is lost).
 */
static int stream_send_events(DeliveryQueue *q, Record **recs, size_t n, void *data) {
        BusClient *bc = data;

        return stream_delivery_ops.send_events(q, recs, n, stream_loop_get(bc->stream));
}

static int stream_send_notice(DeliveryQueue *q, const Record *rec, const uint32_t *ids, size_t n_ids, void *data) {
        BusClient *bc = data;

        return stream_delivery_ops.send_notice(q, rec, ids, n_ids, stream_loop_get(bc->stream));
}

static bool stream_congested(void *data) {
        BusClient *bc = data;

        return stream_delivery_ops.congested(stream_loop_get(bc->stream));
}

static const DeliveryOps bus_stream_ops = {
        .send_events = stream_send_events,
        .send_notice = stream_send_notice,
        .congested = stream_congested,
        .wakes_itself = true,
};

/* bc's stream is gone (its client closed it, or a new one replaces it): back to signals. */
static void stream_end(BusClient *bc) {
        Client *c = bc->client;
        bool carried = stream_carried_records(stream_loop_get(bc->stream));

        /* A replay in it cannot go on: stopped, said as a signal (the client resumes from its cursor). */
        if (bc->iface->durable)
                durable_transport_gone(bc->iface->durable, c, &bus_durable_stream_ops, &bus_durable_signal_ops,
                                       DURABLE_STOPPED_ERROR);
        bc->stream = stream_loop_free(bc->stream);
        bc->stream_durable = false;
        bc->iface->n_streams--;
        delivery_queue_set_transport(&c->queue, &bus_delivery_ops, bc);
        if (carried)
                client_queue_lost_all(c);
        log_debug("Client %s closed its stream: its records go as signals again%s.", c->name,
                  carried ? ", after an Overflow" : "");
}

static void on_stream_ended(void *userdata) {
        stream_end(userdata);
}

/* OpenStream's options: "version" (u), the newest version of watchd-stream(5) the caller reads;
 * "durable" (b), the durable subscriptions it resumes come in the stream too. */
static int stream_options(sd_bus_message *msg, uint32_t *ret_version, bool *ret_durable, sd_bus_error *error) {
        uint32_t version = 1;
        int durable = false;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                bool is_version;
                const char *key;

                r = sd_bus_message_read(msg, "s", &key);
                if (r < 0)
                        return r;
                is_version = strcmp(key, "version") == 0;
                if (!is_version && strcmp(key, "durable") != 0)
                        return sd_bus_error_setf(
                                error, SD_BUS_ERROR_INVALID_ARGS,
                                "OpenStream has no option '%.*s%s'; it knows \"version\" and \"durable\".",
                                bus_quote_len(key, BUS_QUOTE_MAX), key, strlen(key) > BUS_QUOTE_MAX ? "…" : "");
                r = sd_bus_message_enter_container(msg, 'v', is_version ? "u" : "b");
                if (r == -ENXIO)
                        return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                                is_version ? "The option \"version\" is a number (u)." :
                                                             "The option \"durable\" is a boolean (b).");
                if (r >= 0)
                        r = is_version ? sd_bus_message_read(msg, "u", &version) :
                                         sd_bus_message_read(msg, "b", &durable);
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
                if (r < 0)
                        return r;
                if (version == 0)
                        return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                                "The option \"version\" is the newest version of the stream you "
                                                "read, 1 or more.");
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        *ret_version = version;
        *ret_durable = durable;
        return 0;
}

int bus_method_open_stream(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_close_ int peer = -EBADF;
        DbusIface *d = userdata;
        uint32_t version = 1;
        bool durable = false;
        BusClient *bc;
        Client *c;
        int r;

        r = stream_options(msg, &version, &durable, error);
        if (r < 0)
                return r;
        if (!sd_bus_can_send(d->bus, SD_BUS_TYPE_UNIX_FD))
                return sd_bus_error_set(error, SD_BUS_ERROR_NOT_SUPPORTED,
                                        "This bus does not pass file descriptors: no stream, records go as signals.");
        r = bus_client_for_call(d, msg, &c, error);
        if (r < 0)
                return r;
        bc = c->queue.data;
        if (bc->stream) {
                /* One a connection; one the client closed may not have been seen yet. */
                if (stream_loop_alive(bc->stream))
                        return sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                                "This connection has a stream open already (one a connection); "
                                                "close it, and its records go as signals until you open another.");
                stream_end(bc);
        }

        r = stream_loop_new(d->event, &c->queue, (uint16_t) MIN(version, STREAM_FRAME_VERSION), on_stream_ended, bc,
                            &bc->stream, &peer);
        if (r == -EMFILE || r == -ENFILE)
                return sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                        "watchd has no file descriptor left for a stream; records go as signals.");
        if (r < 0)
                return r;
        d->n_streams++;
        bc->stream_durable = durable;
        /* A Ping in flight asks about signals no longer sent. */
        bus_ping_end(bc);
        bc->ping_retry = sd_event_source_disable_unref(bc->ping_retry);
        bc->ping_retry_usec = 0;
        delivery_queue_set_transport(&c->queue, &bus_stream_ops, bc);
        log_debug("Client %s reads its records from a stream (version %u) from now on.", c->name,
                  MIN(version, STREAM_FRAME_VERSION));
        /* sd-bus sends a copy of peer: ours is closed on return. */
        return sd_bus_reply_method_return(msg, "h", peer);
}
