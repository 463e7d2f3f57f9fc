/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * accounting - who holds how many kernel watches, and the limits on it
 *
 * Three counters move together: the owner's (in its Account), its uid's (an
 * AccountUser, which lives while the uid has an open account or a charge),
 * and the unprivileged total. Charging checks all three limits first, in
 * that order, so the error names the narrowest one that is reached.
 */

#include <assert.h>
#include <errno.h>
#include <glib.h>
#include <stdlib.h>

#include "accounting.h"
#include "error.h"
#include "macro.h"

struct AccountUser {
        uid_t uid;
        unsigned n_clients;
        unsigned n_watches;
};

struct Accounting {
        AccountingLimits limits;
        GHashTable *users;       /* uid -> AccountUser (owned) */
        unsigned n_unprivileged; /* watches charged to uids other than 0 */
};

void accounting_limits_size(AccountingLimits *l, uint32_t kernel_limit) {
        uint32_t reserve = kernel_limit / 16;

        if (reserve < 1024)
                reserve = MIN(1024u, kernel_limit / 4);
        if (l->max_watches_unprivileged == ACCOUNTING_AUTO)
                l->max_watches_unprivileged = MAX(kernel_limit - reserve, 1u);
        if (l->max_watches_per_user == ACCOUNTING_AUTO)
                l->max_watches_per_user = MAX(kernel_limit - 2 * reserve, 1u);
        if (l->max_watches_per_client == ACCOUNTING_AUTO)
                l->max_watches_per_client = l->max_watches_per_user;
}

int accounting_new(const AccountingLimits *limits, Accounting **ret) {
        Accounting *a;

        a = calloc(1, sizeof(Accounting));
        if (!a)
                return -ENOMEM;
        a->limits = *limits;
        a->users = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, free);
        *ret = a;
        return 0;
}

Accounting *accounting_free(Accounting *a) {
        if (!a)
                return NULL;
        g_hash_table_destroy(a->users);
        free(a);
        return NULL;
}

void accounting_set_limits(Accounting *a, const AccountingLimits *limits) {
        a->limits = *limits;
}

const AccountingLimits *accounting_get_limits(const Accounting *a) {
        return &a->limits;
}

unsigned accounting_n_users(const Accounting *a) {
        return g_hash_table_size(a->users);
}

unsigned accounting_n_unprivileged(const Accounting *a) {
        return a->n_unprivileged;
}

static void user_put(Accounting *a, AccountUser *u) {
        if (u->n_clients == 0 && u->n_watches == 0)
                g_hash_table_remove(a->users, GUINT_TO_POINTER(u->uid));
}

int account_open(Accounting *a, uid_t uid, Account *ret) {
        AccountUser *u = g_hash_table_lookup(a->users, GUINT_TO_POINTER(uid));

        if (!u) {
                u = calloc(1, sizeof(AccountUser));
                if (!u)
                        return -ENOMEM;
                u->uid = uid;
                g_hash_table_insert(a->users, GUINT_TO_POINTER(uid), u);
        }
        if (u->n_clients >= a->limits.max_clients_per_user) {
                user_put(a, u);
                return -WATCHD_E_USER_CLIENTS;
        }
        u->n_clients++;
        *ret = (Account) {
                .accounting = a,
                .user = u,
                .uid = uid,
        };
        return 0;
}

void account_close(Account *acc) {
        if (!acc->accounting)
                return;
        if (acc->n_watches > 0)
                account_uncharge(acc, acc->n_watches);
        acc->user->n_clients--;
        user_put(acc->accounting, acc->user);
        *acc = (Account) {};
}

int account_check(const Account *acc, unsigned n) {
        const Accounting *a = acc->accounting;
        const AccountingLimits *l = &a->limits;

        if ((uint64_t) acc->n_watches + n > l->max_watches_per_client)
                return -WATCHD_E_CLIENT_WATCHES;
        if ((uint64_t) acc->user->n_watches + n > l->max_watches_per_user)
                return -WATCHD_E_USER_WATCHES;
        if (acc->uid != 0 && (uint64_t) a->n_unprivileged + n > l->max_watches_unprivileged)
                return -WATCHD_E_UNPRIVILEGED_WATCHES;
        return 0;
}

int account_charge(Account *acc, unsigned n) {
        int r;

        r = account_check(acc, n);
        if (r < 0)
                return r;
        acc->n_watches += n;
        acc->user->n_watches += n;
        if (acc->uid != 0)
                acc->accounting->n_unprivileged += n;
        return 0;
}

void account_uncharge(Account *acc, unsigned n) {
        assert(n <= acc->n_watches);
        acc->n_watches -= n;
        acc->user->n_watches -= n;
        if (acc->uid != 0)
                acc->accounting->n_unprivileged -= n;
}
