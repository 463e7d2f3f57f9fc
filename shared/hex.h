/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * hex - hexadecimal digits, written and read in one place
 *
 * watchd writes lower-case digits everywhere (escaped paths, journal
 * identities and segment names, the durable store's files). What it reads
 * back of its own is lower-case only; an escaped path from a client may use
 * either case (path_escape.h). A header only: the client library, which
 * builds path_escape.c itself, needs nothing more.
 */

#include <errno.h>
#include <stdbool.h>

/* The lower-case digit of the low four bits of x. */
static inline char hex_char(unsigned x) {
        return "0123456789abcdef"[x & 0xf];
}

/* The value of the digit c (0-9, a-f; A-F too if any_case), or -EINVAL. */
static inline int hex_value(char c, bool any_case) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (any_case && c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -EINVAL;
}

/* The byte the two digits at s write, or -EINVAL. s[1] is read only if
 * s[0] is a digit, so s may end after s[0]. */
static inline int hex_byte(const char *s, bool any_case) {
        int hi, lo;

        hi = hex_value(s[0], any_case);
        if (hi < 0)
                return hi;
        lo = hex_value(s[1], any_case);
        if (lo < 0)
                return lo;
        return hi << 4 | lo;
}
