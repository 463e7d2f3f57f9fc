/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * client - an owner of subscriptions
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "macro.h"

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
        delivery_queue_init(d, &c->queue, c->name);
        *ret = c;
        return 0;
}

Client *client_free(Client *c) {
        if (!c)
                return NULL;
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
