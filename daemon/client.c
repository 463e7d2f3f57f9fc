/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * client - an owner of subscriptions
 */

#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "log.h"
#include "macro.h"
#include "watchd-api.h"

int client_new(Accounting *a, Delivery *d, const char *name, const Caller *caller, Client **ret) {
        Client *c;
        int r;

        c = calloc(1, sizeof(Client));
        if (!c)
                return -ENOMEM;
        r = account_open(a, caller->uid, &c->account);
        if (r < 0) {
                free(c);
                return r;
        }
        c->delivery = d;
        c->name = strdup(name);
        c->caller = *caller;
        c->caller.gids = calloc(caller->n_gids + 1, sizeof(gid_t));
        if (!c->name || !c->caller.gids) {
                free(c->caller.gids);
                free(c->name);
                account_close(&c->account);
                free(c);
                return -ENOMEM;
        }
        if (caller->n_gids > 0)
                memcpy(c->caller.gids, caller->gids, caller->n_gids * sizeof(gid_t));
        r = delivery_queue_init(d, &c->queue, c->name, caller->uid);
        if (r < 0) {
                free(c->caller.gids);
                free(c->name);
                account_close(&c->account);
                free(c);
                return r;
        }
        *ret = c;
        return 0;
}

Client *client_free(Client *c) {
        if (!c)
                return NULL;
        if (c->hold)
                client_hold_detach(c->hold);
        delivery_queue_done(c->delivery, &c->queue);
        account_close(&c->account);
        free(c->caller.gids);
        free(c->name);
        free(c);
        return NULL;
}

void client_link_subscription(Client *c, Subscription *s) {
        LIST_PREPEND(owner, c->subscriptions, s);
        c->n_subscriptions++;
}

void client_unlink_subscription(Client *c, Subscription *s) {
        LIST_REMOVE(owner, c->subscriptions, s);
        c->n_subscriptions--;
}

void client_queue_event(Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                        size_t name_len, uint64_t now_usec) {
        Client *c = s->owner;
        /* Waiting for a probe: a block of its own, not cut from the queue's arena. */
        Record *rec = c->hold ? record_new(RECORD_EVENT, s->id, mask, cookie, now_usec, dir, name, name_len) :
                                record_new_in(delivery_queue_arena(&c->queue), RECORD_EVENT, s->id, mask, cookie,
                                              now_usec, dir, name, name_len);

        if (rec)
                rec->packed = (s->flags & WATCHD_FLAG_PACKED) != 0;
        if (c->hold && client_hold_defer(c->hold, rec))
                return;
        delivery_submit(c->delivery, &c->queue, rec);
}

void client_queue_removed(Subscription *s, const char *reason, uint64_t now_usec) {
        Client *c = s->owner;
        Record *rec = c->hold ?
                record_new(RECORD_REMOVED, s->id, 0, 0, now_usec, NULL, NULL, 0) :
                record_new_in(delivery_queue_arena(&c->queue), RECORD_REMOVED, s->id, 0, 0, now_usec, NULL, NULL, 0);

        if (rec)
                rec->reason = reason;
        if (c->hold && client_hold_defer(c->hold, rec))
                return;
        delivery_submit(c->delivery, &c->queue, rec);
}

void client_hold(Client *c, Hold *h) {
        hold_add(h, &c->hold, c->delivery, &c->queue, c->name);
}

void client_queue_lost(Subscription *s) {
        Client *c = s->owner;

        delivery_lost(c->delivery, &c->queue, s->id);
}

void client_queue_lost_all(Client *c) {
        g_autofree uint32_t *ids = NULL;
        size_t n = 0;

        if (c->n_subscriptions == 0)
                return;
        ids = calloc(c->n_subscriptions, sizeof(uint32_t));
        if (!ids) {
                log_warning("Out of memory queueing Overflow for %s, ignoring.", c->name);
                return;
        }
        LIST_FOREACH(owner, s, c->subscriptions)
                ids[n++] = s->id;
        delivery_lost_all(c->delivery, &c->queue, ids, n);
}
