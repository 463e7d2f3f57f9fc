/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-wire - how paths travel in the D-Bus API (see watchd-wire.h)
 */

#include "watchd-private.h"
#include "watchd-wire.h"

/* Bytes of the character at s that sd-bus accepts in a string, 0 if none:
 * not a character start, truncated, overlong, surrogate, past U+10FFFF,
 * noncharacter (U+FDD0..U+FDEF, U+xFFFE, U+xFFFF), or the end of s. */
static size_t wire_char_len(const guint8 *s) {
        guint32 cp;
        size_t n;

        if (s[0] < 0x80)
                return s[0] ? 1 : 0;
        if (s[0] < 0xc2)
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
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (s[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
                return 0;
        if ((cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe)
                return 0;
        return n;
}

static gboolean wire_is_control(const guint8 *s, size_t n) {
        return (n == 1 && (s[0] < 0x20 || s[0] == 0x7f)) || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

gboolean watchd_wire_path_needs_escape(const char *path) {
        const guint8 *p = (const guint8 *) path;

        while (*p) {
                size_t n = wire_char_len(p);

                if (n == 0)
                        return TRUE;
                p += n;
        }
        return FALSE;
}

char *watchd_wire_path_escape(const char *path) {
        const guint8 *p = (const guint8 *) path;
        GString *out = g_string_sized_new(strlen(path) + 8);

        while (*p) {
                size_t n = wire_char_len(p);

                if (n > 0 && *p != '\\' && !wire_is_control(p, n)) {
                        g_string_append_len(out, (const char *) p, (gssize) n);
                        p += n;
                        continue;
                }
                for (size_t i = 0; i < MAX(n, 1); i++, p++)
                        if (*p == '\\')
                                g_string_append(out, "\\\\");
                        else
                                g_string_append_printf(out, "\\x%02x", *p);
        }
        return g_string_free(out, FALSE);
}

char *watchd_wire_path_decode(const char *wire, gboolean escaped, GError **error) {
        GString *out;

        if (!escaped)
                return g_strdup(wire);
        out = g_string_sized_new(strlen(wire));
        for (const char *p = wire; *p; p++) {
                int hi, lo;

                if (*p != '\\') {
                        g_string_append_c(out, *p);
                        continue;
                }
                if (p[1] == '\\') {
                        g_string_append_c(out, '\\');
                        p++;
                        continue;
                }
                if (p[1] != 'x' || (hi = g_ascii_xdigit_value(p[2])) < 0 ||
                    (lo = g_ascii_xdigit_value(p[3])) < 0 || (hi | lo) == 0) {
                        g_set_error(error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL,
                                    "watchd sent a malformed escaped path \"%s\"", wire);
                        g_string_free(out, TRUE);
                        return NULL;
                }
                g_string_append_c(out, (char) (hi << 4 | lo));
                p += 3;
        }
        return g_string_free(out, FALSE);
}
