/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * accounting - who holds how many kernel watches, and the limits on it
 *
 * Every watch the daemon places is charged to the account of the client it
 * serves (an Account, embedded in its owner), to that client's uid, and, for
 * a uid other than root, to all unprivileged users together. The kernel
 * counts every one of them against the daemon's own uid (root's, as it runs),
 * so without a cap on the unprivileged total one user could use up the
 * budget of everyone else and of root's own services. accounting_check() is
 * the one place where the limits are compared.
 *
 * The defaults of the watch limits are sized from the kernel's own limit at
 * start (accounting_limits_size(); why those fractions: watchd.conf(5)).
 */

#include <stdint.h>
#include <sys/types.h>

/* A limit of the config given as "auto": sized from the kernel's limit. */
#define ACCOUNTING_AUTO 0u

typedef struct AccountingLimits {
        uint32_t max_watches_per_client;
        uint32_t max_watches_per_user;
        uint32_t max_watches_unprivileged; /* all uids but 0 together */
        uint32_t max_clients_per_user;
} AccountingLimits;

typedef struct Accounting Accounting;
typedef struct AccountUser AccountUser;

/* One owner's share: embedded in it, opened with account_open(). */
typedef struct Account {
        Accounting *accounting;
        AccountUser *user;
        uid_t uid;
        unsigned n_watches;
} Account;

/*
 * Replaces every ACCOUNTING_AUTO of l by its size for a kernel that allows
 * kernel_limit watches to the daemon's uid: root keeps a reserve of 1/16
 * (at least 1,024, at most a quarter), the unprivileged users together get
 * the rest, one user (and one client) all of that but another reserve.
 */
void accounting_limits_size(AccountingLimits *l, uint32_t kernel_limit);

int accounting_new(const AccountingLimits *limits, Accounting **ret);
Accounting *accounting_free(Accounting *a);
void accounting_set_limits(Accounting *a, const AccountingLimits *limits);
const AccountingLimits *accounting_get_limits(const Accounting *a);

/* uids with an open account, and watches charged to all but root. */
unsigned accounting_n_users(const Accounting *a);
unsigned accounting_n_unprivileged(const Accounting *a);

/* A new owner for uid. Return: 0, -WATCHD_E_USER_CLIENTS, -ENOMEM. */
int account_open(Accounting *a, uid_t uid, Account *ret);
/* Its charges must have been returned. Takes a closed (zeroed) account too. */
void account_close(Account *acc);

/*
 * Whether acc may hold n more watches. Return: 0, or
 * -WATCHD_E_CLIENT_WATCHES, -WATCHD_E_USER_WATCHES,
 * -WATCHD_E_UNPRIVILEGED_WATCHES: the first limit it would pass.
 */
int account_check(const Account *acc, unsigned n);
/* account_check(), then charges n. */
int account_charge(Account *acc, unsigned n);
void account_uncharge(Account *acc, unsigned n);
