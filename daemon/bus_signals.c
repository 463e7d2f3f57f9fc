/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bus_signals - a client's records as signals, and what counts as read
 *
 * The transport (DeliveryOps) of a client's queue while it reads signals:
 * Events built by events_batch.c (unicast, or broadcast with
 * delivery=broadcast, which watchd refuses on the system bus), Overflow and
 * WatchRemoved always to their client only; the bus's congestion; and the
 * Peer.Ping that confirms reading (bus_ask_confirm(), bus_ping_confirms()).
 *
 * Flow control and batching: each client is sent at most
 * max_pending_events_per_client records it has not confirmed reading, and
 * confirms by answering the org.freedesktop.DBus.Peer.Ping sent after them
 * (one in flight at a time). While that Ping is in flight, records for the
 * client are held in its queue and go out as one signal when it answers
 * (or as soon as batch_max_events of them, or a notice, are queued): the
 * batch follows the client's own pace, with no timer of ours, and a record
 * after a quiet moment finds no Ping in flight and goes at once.
 */

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "bus.h"
#include "bus_signals.h"
#include "events_batch.h"
#include "log.h"
#include "macro.h"
#include "stream_frame.h"
#include "watchd-api.h"

/* Messages sd-bus may hold unsent before we stop handing it more. Past it
 * the bus is not reading us: records stay in the clients' queues, which are
 * bounded (max_pending_events_per_client, then Overflow), and delivery
 * tries again after DELIVERY_RETRY_USEC. */
#define BUS_WRITE_QUEUE_HIGH 4096u

bool bus_congested(void *data) {
        BusClient *bc = data;
        DbusIface *d = bc->iface;
        uint64_t queued = 0;

        if (sd_bus_get_n_queued_write(d->bus, &queued) >= 0 && queued > BUS_WRITE_QUEUE_HIGH) {
                if (!d->stalled)
                        log_warning("The bus is not reading our messages (%" PRIu64 " queued): holding events back.",
                                    queued);
                d->stalled = true;
                return true;
        }
        d->stalled = false;
        return false;
}

int bus_signal_new(DbusIface *d, Client *c, const char *member, bool unicast, sd_bus_message **ret) {
        int r;

        r = sd_bus_message_new_signal(d->bus, ret, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, member);
        if (r < 0)
                return r;
        if (unicast) {
                r = sd_bus_message_set_destination(*ret, c->name);
                if (r < 0)
                        *ret = sd_bus_message_unref(*ret);
        }
        return r;
}

/* The Events signals of a batch (events_batch.c builds them: escaped names, 1 MiB at most). */
static int batch_new_signal(void *userdata, sd_bus_message **ret) {
        BusClient *bc = userdata;
        DbusIface *d = bc->iface;

        return bus_signal_new(d, bc->client, "Events", manager_get_config(d->manager)->delivery == DELIVERY_UNICAST, ret);
}

static int batch_send(void *userdata, sd_bus_message *msg, size_t n) {
        BusClient *bc = userdata;
        int r;

        r = sd_bus_send(bc->iface->bus, msg, NULL);
        if (r < 0)
                return log_warning_errno(r, "Failed to send %zu events to %s, naming them in an Overflow: %m", n,
                                         bc->client->name);
        delivery_sent(&bc->client->queue, n);
        return 0;
}

/* A record that could not be built or sent: it costs only itself, and the client hears of it. */
static void batch_lost(void *userdata, uint32_t id) {
        BusClient *bc = userdata;

        delivery_dropped(&bc->client->queue, id);
}

static const EventsBatchOps batch_ops = {
        .new_signal = batch_new_signal,
        .send = batch_send,
        .lost = batch_lost,
};

/* Events signals, unicast unless delivery=broadcast: as many as the batch needs. */
static void send_structs(BusClient *bc, Record **recs, size_t n) {
        EventsBatch batch;

        events_batch_init(&batch, &batch_ops, bc, manager_get_config(bc->iface->manager)->batch_max_events);
        for (size_t i = 0; i < n; i++)
                (void) events_batch_add(&batch, recs[i]);
        (void) events_batch_send(&batch);
        events_batch_done(&batch);
}

static size_t packed_size(const Record *rec) {
        return stream_frame_event_size(rec->path_len, rec->new_path ? strlen(rec->new_path) : 0, NULL);
}

/* One EventsPacked signal: recs[0..n), whose frames take size bytes, written
 * in place in the space sd-bus makes for the array. Return: 0, or -errno
 * (nothing was sent). */
static int packed_signal(BusClient *bc, Record **recs, size_t n, size_t size) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        DbusIface *d = bc->iface;
        uint8_t *p;
        size_t off = 0;
        int r;

        r = bus_signal_new(d, bc->client, "EventsPacked", manager_get_config(d->manager)->delivery == DELIVERY_UNICAST,
                           &msg);
        if (r >= 0)
                r = sd_bus_message_append_array_space(msg, 'y', size, (void **) &p);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const Record *rec = recs[i];

                r = stream_frame_encode_event(p + off, size - off, rec->id, rec->mask, rec->cookie, rec->path,
                                              rec->path_len, rec->new_path, rec->new_path ? strlen(rec->new_path) : 0,
                                              NULL);
                if (r >= 0)
                        off += (size_t) r;
        }
        if (r >= 0 && off != size)
                r = -EPROTO; /* packed_size() and the encoder disagree: never sent as it is */
        if (r >= 0)
                r = sd_bus_send(d->bus, msg, NULL);
        return r < 0 ? r : 0;
}

/*
 * EventsPacked signals for records of PACKED subscriptions: the stream's
 * EVENT frames (shared/stream_frame.h) in one ay, paths as bytes. Cut as
 * Events are, at batch_max_events records and EVENTS_BATCH_MAX_BYTES of
 * frames. A frame is a few integers and the paths' bytes, where a (uuuss)
 * structure is seven sd-bus calls, each checking signature and alignment
 * (bench/analysis.md, issue 27): the same records for a fraction of the
 * instructions, in watchd and in dbus-daemon. A signal that cannot be
 * built or sent names its records' subscriptions in the next Overflow.
 */
static void send_packed(BusClient *bc, Record **recs, size_t n) {
        DeliveryQueue *q = &bc->client->queue;
        size_t max = manager_get_config(bc->iface->manager)->batch_max_events;
        size_t i = 0;

        while (i < n) {
                size_t k = 0, size = 0;
                int r;

                while (i + k < n && k < MAX(max, (size_t) 1)) {
                        size_t f = packed_size(recs[i + k]);

                        /* STREAM_FRAME_MAX (1 MiB) is far beyond a path of PATH_MAX: one record cannot fill a signal. */
                        if (k > 0 && size + f > EVENTS_BATCH_MAX_BYTES)
                                break;
                        size += f;
                        k++;
                }
                r = packed_signal(bc, recs + i, k, size);
                if (r < 0)
                        log_warning_errno(r, "Failed to send %zu events to %s, naming them in an Overflow: %m", k,
                                          bc->client->name);
                else
                        delivery_sent(q, k);
                for (size_t j = i; j < i + k; j++) {
                        if (r < 0)
                                delivery_dropped(q, recs[j]->id);
                        record_free(recs[j]);
                }
                i += k;
        }
}

/* The records in order, each run of one kind in the signals of its kind:
 * a client's records keep their order across Events and EventsPacked. */
static int bus_send_events(DeliveryQueue *q, Record **recs, size_t n, void *data) {
        BusClient *bc = data;
        size_t i = 0;

        while (i < n) {
                bool packed = recs[i]->packed;
                size_t k = 1;

                while (i + k < n && recs[i + k]->packed == packed)
                        k++;
                if (packed)
                        send_packed(bc, recs + i, k);
                else
                        send_structs(bc, recs + i, k);
                i += k;
        }
        return 0;
}

/* Overflow(ids) or WatchRemoved(id, reason): always unicast. */
static int bus_send_notice(DeliveryQueue *q, const Record *rec, const uint32_t *ids, size_t n_ids, void *data) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = data;
        DbusIface *d = bc->iface;
        int r;

        if (rec->kind == RECORD_OVERFLOW) {
                r = bus_signal_new(d, bc->client, "Overflow", true, &msg);
                if (r >= 0)
                        r = sd_bus_message_append_array(msg, 'u', ids, n_ids * sizeof(uint32_t));
        } else {
                r = bus_signal_new(d, bc->client, "WatchRemoved", true, &msg);
                if (r >= 0)
                        r = sd_bus_message_append(msg, "us", rec->id, rec->reason);
        }
        if (r >= 0)
                r = sd_bus_send(d->bus, msg, NULL);
        if (r < 0)
                return log_warning_errno(r, "Failed to send a notice to %s, ignoring: %m", q->name);
        return 0;
}

/*
 * What counts as read: the rule of flow control, in one place.
 *
 * A client is sent records while fewer than max_pending_events_per_client of
 * those sent are unconfirmed. Records are confirmed by the answer to a
 * Peer.Ping sent after them, and only by an answer the client itself sent
 * (its unique name is the reply's sender, which the bus sets): a method
 * return, or an error such as UnknownMethod from a library without Peer.
 * Either one the client can only send once it has read the Ping, so once it
 * has read everything queued for it before the Ping. An error from anyone
 * else confirms nothing, whatever its name: the bus driver's AccessDenied (a
 * policy that does not let us send the Ping: before our policy allowed it,
 * Debian's system bus denied every Ping, and the error counted as read, so a
 * client that never read was sent everything), LimitsExceeded (our
 * connection has max_replies_per_connection calls pending), ServiceUnknown
 * or NoReply (the client left), or an error sd-bus makes up locally.
 *
 * The Ping has no timeout: it waits at the bus until the client reads it or
 * leaves. A second Ping would only queue behind the first at the bus, and
 * each pending one counts against the bus's limit on replies our connection
 * awaits (max_replies_per_connection: 128 on the system bus, and dbus-daemon
 * never expires them). For the same limit, the clients of one uid have at
 * most PINGS_PER_USER_MAX Pings in flight: a user's clients that never read
 * hold that many of the bus's 128, not all of them (with all of them taken,
 * every other client's Ping would be refused, and every other client held
 * to its window). A client whose uid has none free waits for one, as after
 * an answer that confirmed nothing: the next Ping goes after
 * PING_RETRY_MIN_USEC, doubling up to PING_RETRY_MAX_USEC, so that a bus that
 * refuses at once is not asked in a loop.
 *
 * So a client that is not confirmed, however the bus answers for it, is sent
 * no more than its window; its later records fill its queue (same limit),
 * which is then dropped with an Overflow queued, sent at the next
 * confirmation (delivery.c).
 */
#define PING_RETRY_MIN_USEC (10u * 1000u)
#define PING_RETRY_MAX_USEC (5u * 1000u * 1000u)
#define PINGS_PER_USER_MAX  16u

bool bus_ping_confirms(const BusClient *bc, sd_bus_message *reply) {
        const char *sender = sd_bus_message_get_sender(reply);

        return sender && strcmp(sender, bc->client->name) == 0;
}

static unsigned *user_pings(DbusIface *d, uid_t uid) {
        unsigned *n = g_hash_table_lookup(d->pings, GUINT_TO_POINTER(uid));

        if (!n) {
                n = g_new0(unsigned, 1);
                g_hash_table_insert(d->pings, GUINT_TO_POINTER(uid), n);
        }
        return n;
}

void bus_ping_slot_end(BusClient *bc, sd_bus_slot **slot) {
        unsigned *n;

        if (!*slot)
                return;
        *slot = sd_bus_slot_unref(*slot);
        n = user_pings(bc->iface, bc->client->account.uid);
        assert(*n > 0);
        if (--*n == 0)
                g_hash_table_remove(bc->iface->pings, GUINT_TO_POINTER(bc->client->account.uid));
}

/* bc's Ping is answered, or bc is gone: it no longer holds one of its uid's Pings. */
void bus_ping_end(BusClient *bc) {
        bus_ping_slot_end(bc, &bc->ping);
}

/* bc is gone: neither its Ping nor its replays' (bus_durable.c) holds one of its uid's Pings. */
void bus_pings_end(BusClient *bc) {
        bus_ping_slot_end(bc, &bc->ping);
        bus_ping_slot_end(bc, &bc->durable_ping);
}

int bus_ping_send(BusClient *bc, sd_bus_slot **slot, sd_bus_message_handler_t callback, void *userdata) {
        _cleanup_(message_unrefp) sd_bus_message *ping = NULL;
        DbusIface *d = bc->iface;
        unsigned *n;
        int r;

        n = user_pings(d, bc->client->account.uid);
        if (*n >= PINGS_PER_USER_MAX)
                return -EAGAIN;
        r = sd_bus_message_new_method_call(d->bus, &ping, bc->client->name, "/", "org.freedesktop.DBus.Peer", "Ping");
        if (r >= 0)
                r = sd_bus_call_async(d->bus, slot, ping, callback, userdata, /* usec= */ UINT64_MAX);
        if (r < 0) {
                if (*n == 0)
                        g_hash_table_remove(d->pings, GUINT_TO_POINTER(bc->client->account.uid));
                return r;
        }
        ++*n;
        return 0;
}

static int on_ping_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        BusClient *bc = userdata;

        bc->ping_retry = sd_event_source_disable_unref(bc->ping_retry);
        delivery_ask_confirm(&bc->client->queue);
        return 0;
}

/* The next Ping to bc goes later: after an answer that confirmed nothing, or
 * while its uid has PINGS_PER_USER_MAX in flight. */
static void ping_retry_later(BusClient *bc) {
        DbusIface *d = bc->iface;
        uint64_t now;
        int r;

        if (bc->ping_retry)
                return;
        bc->ping_retry_usec = bc->ping_retry_usec == 0 ? PING_RETRY_MIN_USEC :
                                                         MIN(2 * bc->ping_retry_usec, (uint64_t) PING_RETRY_MAX_USEC);
        r = sd_event_now(d->event, CLOCK_MONOTONIC, &now);
        if (r >= 0)
                r = sd_event_add_time(d->event, &bc->ping_retry, CLOCK_MONOTONIC, now + bc->ping_retry_usec,
                                      /* accuracy= */ 0, on_ping_retry, bc);
        if (r < 0)
                /* Then the next flush for it asks again. */
                log_warning_errno(r, "Failed to arm the timer of the next Ping to %s, ignoring: %m", bc->client->name);
}

/* The answer to bc's Ping confirmed nothing: say so (once, if the bus refused
 * it) and ask again later. */
static void ping_unconfirmed(BusClient *bc, sd_bus_message *reply) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        Client *c = bc->client;

        if (e && sd_bus_error_has_names(e, SD_BUS_ERROR_ACCESS_DENIED, SD_BUS_ERROR_LIMITS_EXCEEDED) &&
            !bc->ping_refusal_logged) {
                bc->ping_refusal_logged = true;
                log_warning("The bus refused our Ping to %s (%s: %s): until %s answers one, it is sent at most "
                            "%" PRIu32 " records (max_pending_events_per_client)%s.",
                            c->name, e->name, e->message ?: "no message", c->name,
                            manager_get_config(bc->iface->manager)->max_pending_events_per_client,
                            sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED) ?
                                    "; the bus policy org.example.Inotify.conf must let root send Peer.Ping" :
                                    "");
        } else
                log_debug("Our Ping to %s confirmed nothing (%s), asking again later.", c->name,
                          e ? e->name : "an answer from someone else");
        ping_retry_later(bc);
}

static int on_ping_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        BusClient *bc = userdata;
        bool confirmed;

        bus_ping_end(bc);
        confirmed = bus_ping_confirms(bc, reply);
        if (confirmed)
                bc->ping_retry_usec = 0;
        else
                ping_unconfirmed(bc, reply);
        delivery_confirmed(bc->client->delivery, &bc->client->queue, confirmed, now_usec());
        return 0;
}

/* Has the client read what was sent? Its own answer to a Peer.Ping sent
 * after them says so; one in flight per client, with no timeout, and
 * PINGS_PER_USER_MAX per uid (see bus_ping_confirms()). */
static int bus_ask_confirm(DeliveryQueue *q, void *data) {
        BusClient *bc = data;
        int r;

        if (bc->ping_retry)
                return -EAGAIN;
        r = bus_ping_send(bc, &bc->ping, on_ping_reply, bc);
        if (r == -EAGAIN)
                ping_retry_later(bc);
        return r;
}

const DeliveryOps bus_delivery_ops = {
        .send_events = bus_send_events,
        .send_notice = bus_send_notice,
        .ask_confirm = bus_ask_confirm,
        .congested = bus_congested,
};
