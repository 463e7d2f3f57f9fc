/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-error - the daemon's own error codes: apart from every errno, named
 * by error_to_string(), and by "%m" in a log line
 */

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

static void test_codes(void) {
        /* The largest errno the kernel returns is 4095: none is taken for one of ours. */
        for (int e = 1; e < _WATCHD_E_FIRST; e++)
                g_assert_false(error_is_watchd(-e));
        for (int e = _WATCHD_E_FIRST; e < _WATCHD_E_MAX; e++) {
                g_assert_true(error_is_watchd(-e));
                g_assert_nonnull(error_to_string(-e));
        }
        g_assert_false(error_is_watchd(-_WATCHD_E_MAX));
        g_assert_null(error_to_string(-ENOENT));
        g_assert_cmpstr(error_to_string(-WATCHD_E_CLIENT_WATCHES), ==, "max_watches_per_client reached");
}

/* The log line of a failure with our code names it, wherever %m stands. */
static void test_log(void) {
        char path[] = "/tmp/test-error-XXXXXX";
        g_autofree char *text = NULL;
        int fd = mkstemp(path), saved = dup(STDERR_FILENO);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(dup2(fd, STDERR_FILENO), ==, STDERR_FILENO);
        g_assert_cmpint(log_warning_errno(-WATCHD_E_USER_WATCHES, "Cannot follow '%s' (%m); %m.", "/a%m"), ==,
                        -WATCHD_E_USER_WATCHES);
        g_assert_cmpint(log_warning_errno(-ENOENT, "Plain: %m."), ==, -ENOENT);
        fflush(stderr);
        g_assert_cmpint(dup2(saved, STDERR_FILENO), ==, STDERR_FILENO);
        close(saved);
        close(fd);
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        unlink(path);
        g_assert_cmpstr(text, ==,
                        "<4>Cannot follow '/a%m' (max_watches_per_user reached); max_watches_per_user reached.\n"
                        "<4>Plain: No such file or directory.\n");
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/error/codes", test_codes);
        g_test_add_func("/error/log", test_log);
        return g_test_run();
}
