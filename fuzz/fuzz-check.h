/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The fuzzers' invariant check: a failed one aborts, which libFuzzer reports
 * as a crash with the input that caused it. (assert() would vanish under
 * NDEBUG.) */

#include <stdio.h>
#include <stdlib.h>

#define CHECK(expr)                                                                              \
        do {                                                                                     \
                if (!(expr)) {                                                                   \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #expr); \
                        abort();                                                                 \
                }                                                                                \
        } while (0)
