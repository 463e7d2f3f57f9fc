/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hold - the records of the clients a probe concerns, waiting for it
 *
 * Every record that waits gets a number (Holds.seq, counting up); a hold
 * starts at the number the next one will get, so what waits for it is what
 * has a number from its start on. A client held by several holds sends on
 * what is numbered below the earliest start of those left. What a hold's
 * probe finds is put before the first record numbered from its place on
 * (Hold.at: its start, or after the record that set it off, hold_mark()).
 *
 * A burst of new directories in a recursive subscription holds their owner
 * once for each scan queued (tree_open_submit()): thousands of holds of one
 * client, thousands of records waiting. So nothing here is linear in them:
 * the live holds are a queue in the order they end by their time (they all
 * last HOLD_USEC from a clock that does not go back: the order they were
 * made in), a client's holds a tree in the order of their start, its
 * waiting records a sequence in the order of their numbers.
 */

#include <assert.h>
#include <errno.h>
#include <glib.h>
#include <stdlib.h>

#include "delivery.h"
#include "hold.h"
#include "log.h"
#include "macro.h"

typedef struct Waiting {
        uint64_t seq;
        Record *rec;
} Waiting;

struct Holds {
        HoldsOps ops;
        void *userdata;
        uint64_t seq;   /* the next waiting record's number */
        GQueue live;    /* Hold (its link): not ended yet, by until */
        Hold *trigger;  /* the record being handled's */
        Hold *applying; /* what is queued now goes before what waits for it */
};

struct Hold {
        Holds *holds; /* NULL once the holds are freed */
        unsigned n_ref;
        GList link; /* in Holds.live, while it has not ended */
        uint64_t start, until;
        uint64_t at;        /* what the probe finds goes before the records numbered from here on */
        GPtrArray *clients; /* ClientHold, while it has not ended */
        GArray *subs;       /* uint32_t: Overflow if it outlasts its time */
        bool over;
};

struct ClientHold {
        Holds *holds;
        ClientHold **slot; /* the client's: NULL again when it is held no more */
        Delivery *delivery;
        DeliveryQueue *queue;
        const char *name;
        GTree *holds_of;    /* Hold -> Hold: what it waits for, by start (hold_compare()) */
        GSequence *waiting; /* Waiting*, by number (the order they go on in) */
        unsigned n_waiting;
        uint64_t bytes;
};

int holds_new(const HoldsOps *ops, void *userdata, Holds **ret) {
        Holds *hs = calloc(1, sizeof(Holds));

        if (!hs)
                return -ENOMEM;
        hs->ops = *ops;
        hs->userdata = userdata;
        hs->seq = 1;
        g_queue_init(&hs->live);
        *ret = hs;
        return 0;
}

static void hold_end(Hold *h, bool late);

Holds *holds_free(Holds *hs) {
        if (!hs)
                return NULL;
        while (!g_queue_is_empty(&hs->live))
                hold_end(g_queue_peek_head(&hs->live), false);
        free(hs);
        return NULL;
}

/* Holds.live stays in the order of until, so the first to end by its time is
 * its head: every hold lasts HOLD_USEC, and each caller's clock is
 * CLOCK_MONOTONIC. But events.c gives the time of the kernel read its record
 * came in, which is older than now_usec() once a read is handled in slices
 * (events_slice()): such a hold lasts until the latest made before it, at
 * most a read's handling past HOLD_USEC. */
Hold *hold_new(Holds *hs, uint64_t now_usec) {
        Hold *h = calloc(1, sizeof(Hold));
        Hold *last = g_queue_peek_tail(&hs->live);

        if (!h) {
                log_warning("Out of memory holding records for a probe, ignoring.");
                return NULL;
        }
        *h = (Hold) {
                .holds = hs,
                .n_ref = 1,
                .start = hs->seq,
                .at = hs->seq,
                .until = MAX(now_usec + HOLD_USEC, last ? last->until : 0),
                .clients = g_ptr_array_new(),
                .subs = g_array_new(FALSE, FALSE, sizeof(uint32_t)),
        };
        h->link.data = h;
        g_queue_push_tail_link(&hs->live, &h->link);
        return h;
}

Hold *hold_ref(Hold *h) {
        if (h)
                h->n_ref++;
        return h;
}

Hold *hold_unref(Hold *h) {
        if (!h)
                return NULL;
        assert(h->n_ref > 0);
        if (--h->n_ref > 0)
                return NULL;
        hold_end(h, false);
        g_ptr_array_unref(h->clients);
        g_array_unref(h->subs);
        free(h);
        return NULL;
}

bool hold_over(const Hold *h) {
        return !h || h->over;
}

/* ClientHold.holds_of's order: by start, then by address (a client may wait for several holds of one start). */
static gint hold_compare(gconstpointer a, gconstpointer b) {
        const Hold *x = a, *y = b;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        return (uintptr_t) x < (uintptr_t) y ? -1 : (uintptr_t) x > (uintptr_t) y;
}

static uint64_t client_hold_start(const ClientHold *ch) {
        GTreeNode *first = g_tree_node_first(ch->holds_of);

        return first ? ((const Hold *) g_tree_node_key(first))->start : UINT64_MAX;
}

/* What waits in ch and no hold of it waits for goes on; a client no longer held is not a held one. */
static void client_hold_flush(ClientHold *ch) {
        uint64_t start = client_hold_start(ch);

        while (ch->n_waiting > 0) {
                GSequenceIter *i = g_sequence_get_begin_iter(ch->waiting);
                Waiting *w = g_sequence_get(i);
                Record *rec = w->rec;

                if (w->seq >= start)
                        break;
                g_sequence_remove(i);
                g_free(w);
                ch->n_waiting--;
                ch->bytes -= record_bytes(rec);
                delivery_submit(ch->delivery, ch->queue, rec);
        }
        if (g_tree_nnodes(ch->holds_of) > 0)
                return;
        assert(ch->n_waiting == 0);
        *ch->slot = NULL;
        g_tree_unref(ch->holds_of);
        g_sequence_free(ch->waiting);
        free(ch);
}

void hold_add(Hold *h, ClientHold **slot, Delivery *d, DeliveryQueue *q, const char *name) {
        ClientHold *ch;

        if (hold_over(h) || !h->holds)
                return;
        ch = *slot;
        if (!ch) {
                ch = calloc(1, sizeof(ClientHold));
                if (!ch) {
                        log_warning("Out of memory holding records for a probe, ignoring.");
                        return;
                }
                *ch = (ClientHold) {
                        .holds = h->holds,
                        .slot = slot,
                        .delivery = d,
                        .queue = q,
                        .name = name,
                        .holds_of = g_tree_new(hold_compare),
                        .waiting = g_sequence_new(NULL),
                };
                *slot = ch;
        } else if (g_tree_lookup(ch->holds_of, h))
                return;
        g_tree_insert(ch->holds_of, h, h);
        g_ptr_array_add(h->clients, ch);
}

void hold_merge(Hold *into, Hold *from) {
        if (hold_over(into) || hold_over(from) || into == from)
                return;
        /* What into's probes find goes after from's record too: never before what set it off. */
        into->at = MAX(into->at, from->at);
        for (guint k = 0; k < from->clients->len; k++) {
                ClientHold *ch = from->clients->pdata[k];

                hold_add(into, ch->slot, ch->delivery, ch->queue, ch->name);
        }
        for (guint k = 0; k < from->subs->len; k++)
                hold_note_subscription(into, g_array_index(from->subs, uint32_t, k));
}

void hold_mark(Hold *h) {
        if (!hold_over(h) && h->holds)
                h->at = h->holds->seq;
}

void hold_note_subscription(Hold *h, uint32_t id) {
        if (hold_over(h))
                return;
        for (guint k = 0; k < h->subs->len; k++)
                if (g_array_index(h->subs, uint32_t, k) == id)
                        return;
        g_array_append_val(h->subs, id);
}

/* h ends: its clients' records go on (late: it outlasted its time, what it waits for gets Overflow). */
static void hold_end(Hold *h, bool late) {
        Holds *hs = h->holds;

        if (h->over)
                return;
        h->over = true;
        if (hs) {
                g_queue_unlink(&hs->live, &h->link);
                if (hs->trigger == h)
                        hs->trigger = NULL;
                if (hs->applying == h)
                        hs->applying = NULL;
        }
        for (guint k = 0; k < h->subs->len && late && hs && hs->ops.lost; k++)
                hs->ops.lost(g_array_index(h->subs, uint32_t, k), hs->userdata);
        while (h->clients->len > 0) {
                ClientHold *ch = g_ptr_array_steal_index(h->clients, h->clients->len - 1);

                g_tree_remove(ch->holds_of, h);
                client_hold_flush(ch);
        }
        h->holds = NULL;
}

void holds_set_trigger(Holds *hs, Hold *h) {
        hs->trigger = h;
}

Hold *holds_get_trigger(const Holds *hs) {
        return hs->trigger;
}

Hold *holds_apply_begin(Holds *hs, Hold *h) {
        Hold *previous = hs->applying;

        hs->applying = hold_over(h) ? NULL : h;
        return previous;
}

void holds_apply_end(Holds *hs, Hold *previous) {
        hs->applying = hold_over(previous) ? NULL : previous;
}

Hold *holds_get_applying(const Holds *hs) {
        return hs->applying;
}

uint64_t holds_next_deadline(const Holds *hs) {
        const Hold *first = g_queue_peek_head((GQueue *) &hs->live);

        return first ? first->until : UINT64_MAX;
}

void holds_expire(Holds *hs, uint64_t now_usec) {
        Hold *h;

        while ((h = g_queue_peek_head(&hs->live)) && h->until <= now_usec) {
                log_debug("A probe held its clients' records for %u ms: they go on, its subscriptions get Overflow.",
                          HOLD_USEC / 1000u);
                hold_end(h, true); /* removes it from live */
        }
}

/* ch holds more than its delivery limits: its events go, their subscriptions hear. */
static void client_hold_drop(ClientHold *ch) {
        GSequenceIter *i = g_sequence_get_begin_iter(ch->waiting);

        while (!g_sequence_iter_is_end(i)) {
                GSequenceIter *next = g_sequence_iter_next(i);
                Waiting *w = g_sequence_get(i);

                if (w->rec->kind == RECORD_EVENT) {
                        delivery_lost(ch->delivery, ch->queue, w->rec->id);
                        ch->bytes -= record_bytes(w->rec);
                        record_free(w->rec);
                        g_sequence_remove(i);
                        g_free(w);
                        ch->n_waiting--;
                }
                i = next;
        }
        log_warning("%s: records waiting for a probe exceed its limits (max_pending_events_per_client, "
                    "max_pending_bytes_per_client): dropped, it gets Overflow.",
                    ch->name);
}

/* ClientHold.waiting's order, for a record the probe found (w): after every
 * record of its number or below, before those above (whatever the argument
 * order g_sequence_insert_sorted() compares in). */
static gint waiting_compare(gconstpointer a, gconstpointer b, gpointer w) {
        const Waiting *x = a, *y = b;

        if (x->seq != y->seq)
                return x->seq < y->seq ? -1 : 1;
        return x == w ? 1 : y == w ? -1 : 0;
}

bool client_hold_defer(ClientHold *ch, Record *rec) {
        Holds *hs = ch->holds;
        const DeliveryLimits *l = delivery_get_limits(ch->delivery);
        GSequenceIter *at;
        Waiting *w;
        uint64_t seq;
        bool first;

        if (!rec)
                return false; /* delivery_submit() logs it */
        /* GLib's: a failed allocation aborts, as the sequence's own node would. */
        w = g_new(Waiting, 1);
        *w = (Waiting) { .rec = rec };
        if (hs->applying) {
                /* What the probe found: before what came after its record. */
                w->seq = hs->applying->at - 1;
                at = g_sequence_insert_sorted(ch->waiting, w, waiting_compare, w);
        } else {
                w->seq = hs->seq++;
                at = g_sequence_append(ch->waiting, w);
        }
        first = g_sequence_iter_is_begin(at);
        seq = w->seq; /* w may be dropped */
        ch->n_waiting++;
        ch->bytes += record_bytes(rec);
        if (ch->n_waiting > l->max_pending || ch->bytes > l->max_bytes)
                client_hold_drop(ch);
        /* Before every hold of the client: it goes on now (with what is before it). */
        if (first && seq < client_hold_start(ch))
                client_hold_flush(ch);
        return true;
}

void client_hold_detach(ClientHold *ch) {
        ClientHold **slot = ch->slot;

        while (ch->n_waiting > 0) {
                GSequenceIter *i = g_sequence_get_begin_iter(ch->waiting);
                Waiting *w = g_sequence_get(i);

                record_free(w->rec);
                g_sequence_remove(i);
                g_free(w);
                ch->n_waiting--;
        }
        ch->bytes = 0;
        while (g_tree_nnodes(ch->holds_of) > 0) {
                Hold *h = g_tree_node_key(g_tree_node_first(ch->holds_of));

                g_tree_remove(ch->holds_of, h);
                g_ptr_array_remove(h->clients, ch); /* a hold's clients are few */
        }
        client_hold_flush(ch); /* frees it */
        assert(!*slot);
}
