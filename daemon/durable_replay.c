/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * durable_replay - the clients that resumed a durable subscription, pumped from disk
 *
 * An Attach is a client that resumed a subscription (durable_resume()):
 * a reader of its journal and the transport the layer above gave. At each
 * turn of durable.c's pump (after every flush of the manager, once the
 * subscriptions are tended), durable_replay_pump() sends each attachment
 * what its window allows, a slice at a time, asking it to confirm as its
 * transport does (signals: the client's own answer to a Ping; a stream:
 * the socket's room, nothing to ask). The window is the attachment's own,
 * apart from the client's live records (delivery.h). The subscriptions
 * themselves are durable.c's, the layer above: this file calls nothing of
 * it (durable_replay.h has what the two share).
 */

#include <errno.h>
#include <stdlib.h>

#include "durable_replay.h"
#include "log.h"
#include "macro.h"

/* Entries one attachment is sent at most per turn: the others, and the bus, get theirs. */
#define PUMP_MAX_ENTRIES 4096u

void durable_attach_free(Durable *d, Attach *a) {
        if (a->sub)
                a->sub->attach = NULL;
        journal_reader_free(a->reader);
        g_ptr_array_remove_fast(d->attaches, a);
        free(a);
}

void durable_attach_stop(Durable *d, Attach *a, const char *reason) {
        (void) a->ops->stopped(a->client, a->sub->def.name, reason, a->data);
        durable_attach_free(d, a);
}

/* Entries an attachment may have unconfirmed before it is asked: one now and
 * then (live, once caught up) is not followed by a request of its own, as
 * for live delivery; half the window at most. */
static uint64_t confirm_min(const Config *c) {
        return MAX(MIN((uint64_t) 16, (uint64_t) c->max_pending_events_per_client / 2), 1u);
}

static void attach_ask_confirm(Durable *d, Attach *a, uint64_t now) {
        const Config *c = manager_get_config(d->m);
        uint64_t unread = a->sent - a->read;
        int r;

        if (a->confirming || unread == 0)
                return;
        if (unread < confirm_min(c) && unread < c->max_pending_events_per_client &&
            a->sent_bytes - a->read_bytes < c->max_pending_bytes_per_client / 2)
                return;
        r = a->ops->ask_confirm ? a->ops->ask_confirm(a->client, a->data) : 1;
        if (r > 0) {
                a->read = a->sent; /* the transport holds what is unread */
                a->read_bytes = a->sent_bytes;
        } else if (r == 0) {
                a->confirming = true;
                a->confirm_at = a->sent;
                a->confirm_bytes = a->sent_bytes;
        } else {
                if (r != -EAGAIN)
                        log_warning_errno(r,
                                          "Failed to ask %s whether it read durable subscription %s, "
                                          "asking again: %m",
                                          a->client->name, a->sub->key);
                d->wake_at = MIN(d->wake_at, now + DELIVERY_RETRY_USEC);
        }
}

/* Sends a what its window lets go now. Return: whether it has more it could send now. */
static bool pump_one(Durable *d, Attach *a, uint64_t now) {
        const DurableOps *ops = a->ops;
        const Config *c = manager_get_config(d->m);
        const char *name = a->sub->def.name;
        uint64_t unread = a->sent - a->read, unread_bytes = a->sent_bytes - a->read_bytes;
        uint64_t budget, bytes_budget, bytes = 0;
        size_t in_batch = 0, sent = 0;
        JournalEntry e;
        int k = 0, r = 0;

        if (ops->congested && ops->congested(a->client, a->data)) {
                if (!ops->wakes_itself)
                        d->wake_at = MIN(d->wake_at, now + DELIVERY_RETRY_USEC);
                return false;
        }
        /* Its window, in records and bytes, as for its live records: a replay
         * of long paths weighs what it weighs in the bus too. */
        if (unread >= c->max_pending_events_per_client ||
            (unread > 0 && unread_bytes >= c->max_pending_bytes_per_client)) {
                attach_ask_confirm(d, a, now); /* its answer's flush brings us back */
                return false;
        }
        budget = MIN(c->max_pending_events_per_client - unread, (uint64_t) PUMP_MAX_ENTRIES);
        bytes_budget = unread_bytes < c->max_pending_bytes_per_client ? c->max_pending_bytes_per_client - unread_bytes :
                                                                        0;

        while (sent < budget && (bytes < bytes_budget || sent == 0) && r >= 0) {
                k = journal_reader_next(a->reader, &e);
                if (k < 0)
                        break;
                if (k == 0) {
                        /* Caught up means watching too: not while its path is opened in a
                         * worker or its tree walked (after a start, the daemon-down gap comes
                         * when that ends). */
                        if (!a->caught_up && a->sub->state != DURABLE_WALKING && a->sub->state != DURABLE_OPENING) {
                                if (in_batch > 0)
                                        r = ops->events_end(a->client, a->data);
                                in_batch = 0;
                                if (r >= 0)
                                        r = ops->caught_up(a->client, name, journal_reader_position(a->reader), a->data);
                                a->caught_up = true;
                                sent++;
                        }
                        break;
                }
                if (e.type == JOURNAL_ENTRY_GAP) {
                        if (in_batch > 0)
                                r = ops->events_end(a->client, a->data);
                        in_batch = 0;
                        if (r >= 0)
                                r = ops->rescan(a->client, name, &e, a->data);
                        sent++;
                        continue;
                }
                if (in_batch == 0)
                        r = ops->events_begin(a->client, name, a->data);
                if (r >= 0)
                        r = ops->events_add(a->client, &e, a->data);
                in_batch++;
                sent++;
                bytes += sizeof(Record) + strlen(e.path) + 1 + (e.new_path ? strlen(e.new_path) + 1 : 0);
                if (r >= 0 && in_batch >= c->batch_max_events) {
                        r = ops->events_end(a->client, a->data);
                        in_batch = 0;
                }
        }
        if (in_batch > 0 && r >= 0)
                r = ops->events_end(a->client, a->data);
        if (k < 0 || r < 0) {
                /* What was read and not sent is not lost: the client's cursor is before it. */
                log_warning_errno(k < 0 ? k : r,
                                  "Failed to send durable subscription %s to %s (%m): it must resume again.",
                                  a->sub->key, a->client->name);
                durable_attach_stop(d, a, DURABLE_STOPPED_ERROR);
                return false;
        }
        a->sent += sent;
        a->sent_bytes += bytes;
        attach_ask_confirm(d, a, now);
        return sent >= budget || bytes >= bytes_budget;
}

void durable_replay_pump(Durable *d, uint64_t now) {
        bool more = false;

        for (guint k = 0; k < d->attaches->len; k++) {
                Attach *a = d->attaches->pdata[k];
                guint before = d->attaches->len;

                more = pump_one(d, a, now) || more;
                if (d->attaches->len < before)
                        k--; /* a was stopped: the last one took its place */
        }
        if (more)
                d->wake_at = now; /* another turn soon, after the others' */
}
