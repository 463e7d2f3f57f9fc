/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * client - one bus connection that holds subscriptions
 */

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "macro.h"

int client_new(const char *name, const Caller *caller, uint64_t pair_timeout_usec, size_t pair_max_distance,
               Client **ret) {
        Client *c;

        c = calloc(1, sizeof(Client));
        if (!c)
                return -ENOMEM;
        c->name = strdup(name);
        c->caller = *caller;
        c->caller.gids = calloc(caller->n_gids + 1, sizeof(gid_t));
        if (!c->name || !c->caller.gids) {
                free(c->caller.gids);
                free(c->name);
                free(c);
                return -ENOMEM;
        }
        if (caller->n_gids > 0)
                memcpy(c->caller.gids, caller->gids, caller->n_gids * sizeof(gid_t));
        c->uid = caller->uid;
        move_pairer_init(&c->queue, pair_timeout_usec, pair_max_distance);
        *ret = c;
        return 0;
}

Client *client_free(Client *c) {
        if (!c)
                return NULL;
        sd_bus_slot_unref(c->ping);
        sd_event_source_disable_unref(c->ping_retry);
        move_pairer_done(&c->queue);
        free(c->lost_ids);
        free(c->caller.gids);
        free(c->name);
        free(c);
        return NULL;
}

void client_link_subscription(Client *c, Subscription *s) {
        s->owner_prev = NULL;
        s->owner_next = c->subscriptions;
        if (c->subscriptions)
                c->subscriptions->owner_prev = s;
        c->subscriptions = s;
        c->n_subscriptions++;
}

void client_unlink_subscription(Client *c, Subscription *s) {
        if (s->owner_prev)
                s->owner_prev->owner_next = s->owner_next;
        else
                c->subscriptions = s->owner_next;
        if (s->owner_next)
                s->owner_next->owner_prev = s->owner_prev;
        s->owner_prev = s->owner_next = NULL;
        c->n_subscriptions--;
}

static int lost_id_add(Client *c, uint32_t id) {
        if (c->n_lost_ids == c->cap_lost_ids) {
                size_t cap = c->cap_lost_ids ? c->cap_lost_ids * 2 : 16;
                uint32_t *ids = realloc(c->lost_ids, cap * sizeof(uint32_t));

                if (!ids)
                        return -ENOMEM;
                c->lost_ids = ids;
                c->cap_lost_ids = cap;
        }
        c->lost_ids[c->n_lost_ids++] = id;
        return 0;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

/* Keeps the id list short: a flood of drops must not grow it without bound. */
static void lost_ids_compact(Client *c) {
        size_t k = 0;

        if (c->n_lost_ids == 0)
                return;
        qsort(c->lost_ids, c->n_lost_ids, sizeof(uint32_t), cmp_u32);
        for (size_t i = 0; i < c->n_lost_ids; i++)
                if (k == 0 || c->lost_ids[k - 1] != c->lost_ids[i])
                        c->lost_ids[k++] = c->lost_ids[i];
        c->n_lost_ids = k;
}

static void on_dropped(uint32_t id, void *userdata) {
        Client *c = userdata;

        /* The ids repeat a lot: compact when the list doubles past the subscriptions. */
        if (c->n_lost_ids >= 2 * (size_t) c->n_subscriptions + 64)
                lost_ids_compact(c);
        (void) lost_id_add(c, id);
}

/* Every push goes through here, so that n_notices stays true (dbus_iface.c counts the pops). */
static int queue_push(Client *c, Record *rec) {
        bool notice = rec->kind != RECORD_EVENT;
        int r;

        r = move_pairer_push(&c->queue, rec);
        if (r >= 0 && notice)
                c->n_notices++;
        return r;
}

static int queue_overflow(Client *c, uint64_t now_usec) {
        Record *o;

        if (c->overflow_queued)
                return 0;
        o = record_new(RECORD_OVERFLOW, 0, 0, 0, now_usec, NULL, NULL, 0);
        if (!o)
                return -ENOMEM;
        c->overflow_queued = true;
        return queue_push(c, o);
}

int client_enqueue(Client *c, Record *rec, size_t max_pending) {
        size_t lost;
        int r;

        if (move_pairer_size(&c->queue) < max_pending)
                return queue_push(c, rec);

        lost = move_pairer_drop_events(&c->queue, on_dropped, c) + (rec->kind == RECORD_EVENT);

        if (rec->kind == RECORD_EVENT) {
                r = lost_id_add(c, rec->id);
                record_free(rec);
        } else
                r = queue_push(c, rec);                 /* notices are never dropped */
        if (r < 0)
                return r;
        lost_ids_compact(c);
        r = queue_overflow(c, /* now_usec= */ 0);       /* an overflow never waits: its time is unused */
        if (r < 0)
                return r;
        return lost > INT_MAX ? INT_MAX : (int) (lost > 0 ? lost : 1);
}

int client_queue_overflow(Client *c, uint32_t id) {
        int r;

        r = lost_id_add(c, id);
        if (r < 0)
                return r;
        lost_ids_compact(c);
        return queue_overflow(c, 0);
}

int client_queue_overflow_all(Client *c, uint64_t now_usec) {
        int r;

        for (Subscription *s = c->subscriptions; s; s = s->owner_next) {
                r = lost_id_add(c, s->id);
                if (r < 0)
                        return r;
        }
        lost_ids_compact(c);
        return queue_overflow(c, now_usec);
}

uint32_t *client_take_lost_ids(Client *c, size_t *ret_n) {
        uint32_t *ids;

        lost_ids_compact(c);
        ids = TAKE_PTR(c->lost_ids);
        *ret_n = c->n_lost_ids;
        c->n_lost_ids = c->cap_lost_ids = 0;
        c->overflow_queued = false;
        return ids;
}
