/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-accounting - the watch limits: per client, per user, all users but
 * root together, clients per user; and their sizes from the kernel's limit
 */

#include <errno.h>
#include <glib.h>

#include "accounting.h"
#include "error.h"

static Accounting *new_accounting(uint32_t per_client, uint32_t per_user, uint32_t unprivileged, uint32_t clients) {
        AccountingLimits l = {
                .max_watches_per_client = per_client,
                .max_watches_per_user = per_user,
                .max_watches_unprivileged = unprivileged,
                .max_clients_per_user = clients,
        };
        Accounting *a = NULL;

        g_assert_cmpint(accounting_new(&l, &a), ==, 0);
        return a;
}

/* Each limit in turn is the one that stops a charge, and the error names it. */
static void test_limits(void) {
        Accounting *a = new_accounting(4, 5, 8, 2);
        Account x1, x2, y, root;

        g_assert_cmpint(account_open(a, 1000, &x1), ==, 0);
        g_assert_cmpint(account_open(a, 1000, &x2), ==, 0);
        g_assert_cmpint(account_open(a, 1001, &y), ==, 0);
        g_assert_cmpint(account_open(a, 0, &root), ==, 0);
        g_assert_cmpuint(accounting_n_users(a), ==, 3);

        /* Per client. */
        g_assert_cmpint(account_charge(&x1, 4), ==, 0);
        g_assert_cmpint(account_charge(&x1, 1), ==, -WATCHD_E_CLIENT_WATCHES);
        /* Per user: x2 is the same uid. */
        g_assert_cmpint(account_charge(&x2, 1), ==, 0);
        g_assert_cmpint(account_check(&x2, 1), ==, -WATCHD_E_USER_WATCHES);
        /* All but root: y is under its own limits, but the total is 8 of 8. */
        g_assert_cmpint(account_charge(&y, 3), ==, 0);
        g_assert_cmpint(accounting_n_unprivileged(a), ==, 8);
        g_assert_cmpint(account_charge(&y, 1), ==, -WATCHD_E_UNPRIVILEGED_WATCHES);
        /* Root is not held back by the others. */
        g_assert_cmpint(account_charge(&root, 4), ==, 0);
        g_assert_cmpint(accounting_n_unprivileged(a), ==, 8);
        g_assert_cmpint(account_charge(&root, 1), ==, -WATCHD_E_CLIENT_WATCHES);

        /* A refused charge changed nothing; a returned one frees room for anyone. */
        g_assert_cmpuint(y.n_watches, ==, 3);
        account_uncharge(&x1, 2);
        g_assert_cmpint(account_charge(&y, 1), ==, 0);
        g_assert_cmpint(account_check(&y, 1), ==, -WATCHD_E_CLIENT_WATCHES);

        /* Clients per user. */
        {
                Account x3;

                g_assert_cmpint(account_open(a, 1000, &x3), ==, -WATCHD_E_USER_CLIENTS);
                account_close(&x1); /* returns its charge too */
                g_assert_cmpint(account_open(a, 1000, &x3), ==, 0);
                account_close(&x3);
        }
        account_close(&x2);
        account_close(&y);
        account_close(&root);
        g_assert_cmpuint(accounting_n_users(a), ==, 0);
        g_assert_cmpuint(accounting_n_unprivileged(a), ==, 0);
        accounting_free(a);
}

/* New limits apply to later charges; what is held stays. */
static void test_set_limits(void) {
        Accounting *a = new_accounting(10, 10, 10, 1);
        AccountingLimits l = *accounting_get_limits(a);
        Account x;

        g_assert_cmpint(account_open(a, 5, &x), ==, 0);
        g_assert_cmpint(account_charge(&x, 6), ==, 0);
        l.max_watches_per_client = 4;
        accounting_set_limits(a, &l);
        g_assert_cmpint(account_charge(&x, 1), ==, -WATCHD_E_CLIENT_WATCHES);
        g_assert_cmpuint(x.n_watches, ==, 6);
        account_close(&x);
        accounting_free(a);
}

/* "auto": sized from the kernel's limit (watchd.conf(5) says why). */
static void test_size(void) {
        static const struct {
                uint32_t kernel;
                AccountingLimits given, want;
        } cases[] = {
                /* The module's default and the syscalls' on a 8 GB machine: a 50,000-directory home fits. */
                { 65536, {}, { 57344, 57344, 61440, 0 } },
                /* The kernel's minimum: reserves of 1,024. */
                { 8192, {}, { 6144, 6144, 7168, 0 } },
                { 1048576, {}, { 917504, 917504, 983040, 0 } },
                /* Tiny: the reserve is a quarter at most. */
                { 100, {}, { 50, 50, 75, 0 } },
                /* Numbers given are kept; the client limit follows the user limit only when "auto". */
                { 65536, { 100, 0, 0, 7 }, { 100, 57344, 61440, 7 } },
                { 65536, { 0, 1000, 2000, 0 }, { 1000, 1000, 2000, 0 } },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                AccountingLimits l = cases[i].given;

                accounting_limits_size(&l, cases[i].kernel);
                g_assert_cmpuint(l.max_watches_per_client, ==, cases[i].want.max_watches_per_client);
                g_assert_cmpuint(l.max_watches_per_user, ==, cases[i].want.max_watches_per_user);
                g_assert_cmpuint(l.max_watches_unprivileged, ==, cases[i].want.max_watches_unprivileged);
                g_assert_cmpuint(l.max_clients_per_user, ==, cases[i].want.max_clients_per_user);
        }
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/accounting/limits", test_limits);
        g_test_add_func("/accounting/set-limits", test_set_limits);
        g_test_add_func("/accounting/size", test_size);
        return g_test_run();
}
