/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * path_escape - file names that are not UTF-8, in D-Bus strings
 *
 * See path_escape.h for the form. The decoder below is the rule sd-bus
 * applies to a string it is asked to append (shortest form, no surrogate,
 * nothing past U+10FFFF, no noncharacter): a path escaped by anything
 * laxer would still be refused, and would spoil the signal it was in.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "path_escape.h"

/* Bytes of the character at s that sd-bus accepts in a string, 0 if there
 * is none there (a byte that cannot begin one, a truncated or overlong
 * sequence, a surrogate, a noncharacter, or the end of s). */
static size_t utf8_char_len(const uint8_t *s) {
        uint32_t cp;
        size_t n;

        if (s[0] < 0x80)
                return s[0] ? 1 : 0;
        if (s[0] < 0xc2) /* a continuation byte, or a 2-byte overlong form */
                return 0;
        if (s[0] < 0xe0)
                n = 2, cp = s[0] & 0x1f;
        else if (s[0] < 0xf0)
                n = 3, cp = s[0] & 0x0f;
        else if (s[0] < 0xf5)
                n = 4, cp = s[0] & 0x07;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
                        return 0;
                cp = cp << 6 | (s[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
                return 0;
        if ((cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe)
                return 0;
        return n;
}

/* A control character: C0, DEL, or C1 (U+0080..U+009F, "\xc2\x80".."\xc2\x9f"). */
static bool is_control(const uint8_t *s, size_t n) {
        return (n == 1 && (s[0] < 0x20 || s[0] == 0x7f)) || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

bool path_needs_escape(const char *s) {
        const uint8_t *p = (const uint8_t *) s;

        /* Called for every path of every record: ASCII, the common case, is
         * passed over without decoding. */
        for (;;) {
                size_t n;

                while (*p && *p < 0x80)
                        p++;
                if (!*p)
                        return false;
                n = utf8_char_len(p);
                if (n == 0)
                        return true;
                p += n;
        }
}

bool path_needs_escape_n(const char *s, size_t len) {
        size_t i = 0;

        /* The bytes before s + i are ASCII, so s + i begins a character. */
        for (; i + 8 <= len; i += 8) {
                uint64_t w;

                memcpy(&w, s + i, sizeof(w));
                if (w & UINT64_C(0x8080808080808080))
                        break;
        }
        return path_needs_escape(s + i);
}

/* Walks s, writing its escaped form to out if out is not NULL; returns its length. */
static size_t escape(const char *s, char *out) {
        const uint8_t *p = (const uint8_t *) s;
        size_t len = 0;

        while (*p) {
                size_t n = utf8_char_len(p);

                if (n > 0 && *p != '\\' && !is_control(p, n)) {
                        for (size_t i = 0; i < n; i++)
                                if (out)
                                        out[len + i] = (char) p[i];
                        len += n;
                        p += n;
                        continue;
                }
                if (n == 0)
                        n = 1; /* one byte that is not UTF-8: the next may begin a character */
                for (size_t i = 0; i < n; i++, p++) {
                        if (out) {
                                out[len] = '\\';
                                if (*p == '\\')
                                        out[len + 1] = '\\';
                                else {
                                        out[len + 1] = 'x';
                                        out[len + 2] = hex_char(*p >> 4);
                                        out[len + 3] = hex_char(*p);
                                }
                        }
                        len += *p == '\\' ? 2 : 4;
                }
        }
        if (out)
                out[len] = '\0';
        return len;
}

size_t path_escaped_len(const char *s) {
        return escape(s, NULL);
}

char *path_escape(const char *s) {
        char *out = malloc(escape(s, NULL) + 1);

        if (out)
                escape(s, out);
        return out;
}

int path_unescape(const char *s, char **ret) {
        size_t len = 0;
        char *out;

        /* The bytes never outnumber the characters of the escaped form. */
        while (s[len])
                len++;
        out = malloc(len + 1);
        if (!out)
                return -ENOMEM;

        len = 0;
        for (const char *p = s; *p; p++) {
                int b;

                if (*p != '\\') {
                        out[len++] = *p;
                        continue;
                }
                if (p[1] == '\\') {
                        out[len++] = '\\';
                        p++;
                        continue;
                }
                if (p[1] != 'x' || (b = hex_byte(p + 2, /* any_case= */ true)) <= 0) {
                        free(out);
                        return -EINVAL;
                }
                out[len++] = (char) b;
                p += 3;
        }
        out[len] = '\0';
        *ret = out;
        return 0;
}
