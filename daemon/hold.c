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
        uint64_t seq;    /* the next waiting record's number */
        GPtrArray *live; /* Hold: not ended yet */
        Hold *trigger;   /* the record being handled's */
        Hold *applying;  /* what is queued now goes before what waits for it */
};

struct Hold {
        Holds *holds; /* NULL once the holds are freed */
        unsigned n_ref;
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
        GPtrArray *holds_of; /* Hold: what it waits for */
        GArray *waiting;     /* Waiting, in order */
        uint64_t bytes;
};

int holds_new(const HoldsOps *ops, void *userdata, Holds **ret) {
        Holds *hs = calloc(1, sizeof(Holds));

        if (!hs)
                return -ENOMEM;
        hs->ops = *ops;
        hs->userdata = userdata;
        hs->seq = 1;
        hs->live = g_ptr_array_new();
        *ret = hs;
        return 0;
}

static void hold_end(Hold *h, bool late);

Holds *holds_free(Holds *hs) {
        if (!hs)
                return NULL;
        while (hs->live->len > 0) {
                Hold *h = hs->live->pdata[0];

                hold_end(h, false);
        }
        g_ptr_array_unref(hs->live);
        free(hs);
        return NULL;
}

Hold *hold_new(Holds *hs, uint64_t now_usec) {
        Hold *h = calloc(1, sizeof(Hold));

        if (!h) {
                log_warning("Out of memory holding records for a probe, ignoring.");
                return NULL;
        }
        *h = (Hold) {
                .holds = hs,
                .n_ref = 1,
                .start = hs->seq,
                .at = hs->seq,
                .until = now_usec + HOLD_USEC,
                .clients = g_ptr_array_new(),
                .subs = g_array_new(FALSE, FALSE, sizeof(uint32_t)),
        };
        g_ptr_array_add(hs->live, h);
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

static uint64_t client_hold_start(const ClientHold *ch) {
        uint64_t start = UINT64_MAX;

        for (guint k = 0; k < ch->holds_of->len; k++)
                start = MIN(start, ((const Hold *) ch->holds_of->pdata[k])->start);
        return start;
}

/* What waits in ch and no hold of it waits for goes on; a client no longer held is not a held one. */
static void client_hold_flush(ClientHold *ch) {
        uint64_t start = client_hold_start(ch);
        guint n = 0;

        while (n < ch->waiting->len && g_array_index(ch->waiting, Waiting, n).seq < start) {
                Record *rec = g_array_index(ch->waiting, Waiting, n).rec;

                ch->bytes -= record_bytes(rec);
                delivery_submit(ch->delivery, ch->queue, rec);
                n++;
        }
        g_array_remove_range(ch->waiting, 0, n);
        if (ch->holds_of->len > 0)
                return;
        assert(ch->waiting->len == 0);
        *ch->slot = NULL;
        g_ptr_array_unref(ch->holds_of);
        g_array_unref(ch->waiting);
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
                        .holds_of = g_ptr_array_new(),
                        .waiting = g_array_new(FALSE, FALSE, sizeof(Waiting)),
                };
                *slot = ch;
        } else if (g_ptr_array_find(ch->holds_of, h, NULL))
                return;
        g_ptr_array_add(ch->holds_of, h);
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
                g_ptr_array_remove(hs->live, h);
                if (hs->trigger == h)
                        hs->trigger = NULL;
                if (hs->applying == h)
                        hs->applying = NULL;
        }
        for (guint k = 0; k < h->subs->len && late && hs && hs->ops.lost; k++)
                hs->ops.lost(g_array_index(h->subs, uint32_t, k), hs->userdata);
        while (h->clients->len > 0) {
                ClientHold *ch = g_ptr_array_steal_index(h->clients, h->clients->len - 1);

                g_ptr_array_remove(ch->holds_of, h);
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

uint64_t holds_next_deadline(const Holds *hs) {
        uint64_t t = UINT64_MAX;

        for (guint k = 0; k < hs->live->len; k++)
                t = MIN(t, ((const Hold *) hs->live->pdata[k])->until);
        return t;
}

void holds_expire(Holds *hs, uint64_t now_usec) {
        for (guint k = 0; k < hs->live->len;) {
                Hold *h = hs->live->pdata[k];

                if (h->until > now_usec) {
                        k++;
                        continue;
                }
                log_debug("A probe held its clients' records for %u ms: they go on, its subscriptions get Overflow.",
                          HOLD_USEC / 1000u);
                hold_end(h, true); /* removes it from live */
        }
}

/* ch holds more than its delivery limits: its events go, their subscriptions hear. */
static void client_hold_drop(ClientHold *ch) {
        guint n = 0;

        for (guint k = 0; k < ch->waiting->len; k++) {
                Waiting *w = &g_array_index(ch->waiting, Waiting, k);

                if (w->rec->kind == RECORD_EVENT) {
                        delivery_lost(ch->delivery, ch->queue, w->rec->id);
                        ch->bytes -= record_bytes(w->rec);
                        record_free(w->rec);
                } else
                        g_array_index(ch->waiting, Waiting, n++) = *w;
        }
        g_array_set_size(ch->waiting, n);
        log_warning("%s: records waiting for a probe exceed its limits (max_pending_events_per_client, "
                    "max_pending_bytes_per_client): dropped, it gets Overflow.",
                    ch->name);
}

bool client_hold_defer(ClientHold *ch, Record *rec) {
        Holds *hs = ch->holds;
        const DeliveryLimits *l = delivery_get_limits(ch->delivery);
        Waiting w = { .rec = rec };
        guint at = ch->waiting->len;

        if (!rec)
                return false; /* delivery_submit() logs it */
        if (hs->applying) {
                /* What the probe found: before what came after its record. */
                w.seq = hs->applying->at - 1;
                for (at = 0; at < ch->waiting->len; at++)
                        if (g_array_index(ch->waiting, Waiting, at).seq >= hs->applying->at)
                                break;
        } else
                w.seq = hs->seq++;
        g_array_insert_val(ch->waiting, at, w);
        ch->bytes += record_bytes(rec);
        if (ch->waiting->len > l->max_pending || ch->bytes > l->max_bytes)
                client_hold_drop(ch);
        /* Before every hold of the client: it goes on now (with what is before it). */
        if (at == 0 && w.seq < client_hold_start(ch))
                client_hold_flush(ch);
        return true;
}

void client_hold_detach(ClientHold *ch) {
        ClientHold **slot = ch->slot;

        for (guint k = 0; k < ch->waiting->len; k++)
                record_free(g_array_index(ch->waiting, Waiting, k).rec);
        g_array_set_size(ch->waiting, 0);
        ch->bytes = 0;
        while (ch->holds_of->len > 0) {
                Hold *h = g_ptr_array_steal_index(ch->holds_of, ch->holds_of->len - 1);

                g_ptr_array_remove(h->clients, ch);
        }
        client_hold_flush(ch); /* frees it */
        assert(!*slot);
}
