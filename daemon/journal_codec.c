/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal_codec - a journal's records to bytes, and back
 *
 * A record is a tag (its kind, and flags) and varints; a path is stored as
 * the bytes it shares with the previous path of its frame and the bytes it
 * does not (docs/JOURNAL.md). The decoder checks everything it reads: a
 * record that does not parse is -EBADMSG, never a crash or a loop (fuzz-journal).
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "hex.h"
#include "journal.h"
#include "journal_internal.h"
#include "macro.h"

void journal_buf_done(Buf *b) {
        free(b->data);
        *b = (Buf) {};
}

int journal_buf_reserve(Buf *b, size_t more) {
        size_t want;
        uint8_t *p;

        if (more > SIZE_MAX / 2 - b->size)
                return -ENOMEM;
        want = b->size + more;
        if (want <= b->alloc)
                return 0;
        want = want < 256 ? 256 : want;
        if (want < b->alloc * 2)
                want = b->alloc * 2;
        p = realloc(b->data, want);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->alloc = want;
        return 0;
}

int journal_buf_put(Buf *b, const void *p, size_t n) {
        int r = journal_buf_reserve(b, n);

        if (r < 0)
                return r;
        if (n > 0)
                memcpy(b->data + b->size, p, n);
        b->size += n;
        return 0;
}

int journal_buf_put_varint(Buf *b, uint64_t v) {
        uint8_t tmp[10];
        size_t n = 0;

        do {
                tmp[n] = (uint8_t) (v & 0x7f);
                v >>= 7;
                if (v)
                        tmp[n] |= 0x80;
                n++;
        } while (v);
        return journal_buf_put(b, tmp, n);
}

/* A varint of at most 64 bits: 0 and *ret, or -EBADMSG. */
static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret) {
        uint64_t v = 0;

        for (unsigned shift = 0; shift < 64; shift += 7) {
                uint8_t c;

                if (*p >= end)
                        return -EBADMSG;
                c = *(*p)++;
                if (shift == 63 && (c & 0x7e))
                        return -EBADMSG; /* past 64 bits */
                v |= (uint64_t) (c & 0x7f) << shift;
                if (!(c & 0x80)) {
                        *ret = v;
                        return 0;
                }
        }
        return -EBADMSG;
}

static int get_varint32(const uint8_t **p, const uint8_t *end, uint32_t *ret) {
        uint64_t v;
        int r = get_varint(p, end, &v);

        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -EBADMSG;
        *ret = (uint32_t) v;
        return 0;
}

void journal_id_to_string(const JournalId *id, char ret[static JOURNAL_ID_STRING_MAX]) {
        for (size_t i = 0; i < sizeof(id->bytes); i++) {
                ret[2 * i] = hex_char(id->bytes[i] >> 4);
                ret[2 * i + 1] = hex_char(id->bytes[i]);
        }
        ret[2 * sizeof(id->bytes)] = '\0';
}

int journal_id_from_string(const char *s, JournalId *ret) {
        JournalId id;

        if (strlen(s) != 2 * sizeof(id.bytes))
                return -EINVAL;
        for (size_t i = 0; i < sizeof(id.bytes); i++) {
                int b = hex_byte(s + 2 * i, /* any_case= */ false);

                if (b < 0)
                        return -EINVAL;
                id.bytes[i] = (uint8_t) b;
        }
        *ret = id;
        return 0;
}

const char *journal_gap_reason_to_string(uint32_t reason) {
        switch (reason) {
        case JOURNAL_GAP_DAEMON_DOWN:
                return "daemon-down";
        case JOURNAL_GAP_OVERFLOW:
                return "overflow";
        case JOURNAL_GAP_DISK_FULL:
                return "disk-full";
        case JOURNAL_GAP_CORRUPT:
                return "corrupt";
        case JOURNAL_GAP_HISTORY_LOST:
                return "history-lost";
        case JOURNAL_GAP_FOREIGN:
                return "foreign";
        case JOURNAL_GAP_ACCESS:
                return "access";
        case JOURNAL_GAP_REMOVED:
                return "removed";
        default:
                return "unknown";
        }
}

/* Bytes a and b share at their start. */
static size_t common_prefix(const char *a, size_t la, const char *b, size_t lb) {
        size_t n = 0, m = la < lb ? la : lb;

        while (n < m && a[n] == b[n])
                n++;
        return n;
}

/* A path as (shared with prev, rest length, rest). */
static int encode_path(Buf *b, const Buf *prev, const char *path, size_t len) {
        size_t shared = common_prefix((const char *) prev->data, prev->size, path, len);
        int r;

        r = journal_buf_put_varint(b, shared);
        if (r >= 0)
                r = journal_buf_put_varint(b, len - shared);
        if (r >= 0)
                r = journal_buf_put(b, path + shared, len - shared);
        return r;
}

static int set_prev(Buf *prev, const char *path, size_t len) {
        prev->size = 0;
        return journal_buf_put(prev, path, len);
}

int journal_encode_event(Buf *b, Buf *prev, uint32_t mask, uint32_t cookie, const char *path, const char *new_path) {
        size_t len = strlen(path);
        uint8_t tag = TAG_EVENT;
        int r;

        if (new_path)
                tag |= TAG_EVENT_NEW_PATH;
        if (mask & JOURNAL_ISDIR)
                tag |= TAG_EVENT_ISDIR;
        if (cookie)
                tag |= TAG_EVENT_COOKIE;

        r = journal_buf_put(b, &tag, 1);
        if (r >= 0)
                r = journal_buf_put_varint(b, mask & ~JOURNAL_ISDIR);
        if (r >= 0 && cookie)
                r = journal_buf_put_varint(b, cookie);
        if (r >= 0)
                r = encode_path(b, prev, path, len);
        if (r >= 0)
                r = set_prev(prev, path, len);
        /* The new path shares with the old one (a rename in one directory). */
        if (r >= 0 && new_path)
                r = encode_path(b, prev, new_path, strlen(new_path));
        return r;
}

int journal_encode_gap(Buf *b, Buf *prev, uint32_t reason, bool whole, const JournalScope *scope, size_t n) {
        uint8_t tag = TAG_GAP | (whole ? TAG_GAP_WHOLE : 0);
        int r;

        r = journal_buf_put(b, &tag, 1);
        if (r >= 0)
                r = journal_buf_put_varint(b, reason);
        if (whole || r < 0)
                return r;
        r = journal_buf_put_varint(b, n);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                uint8_t flags = scope[i].recursive ? SCOPE_RECURSIVE : 0;
                size_t len = strlen(scope[i].path);

                r = journal_buf_put(b, &flags, 1);
                if (r >= 0)
                        r = encode_path(b, prev, scope[i].path, len);
                if (r >= 0)
                        r = set_prev(prev, scope[i].path, len);
        }
        return r;
}

void journal_decoder_start(Decoder *d, const uint8_t *p, size_t size) {
        d->p = p;
        d->end = p + size;
        d->prev.size = 0;
}

void journal_decoder_done(Decoder *d) {
        journal_buf_done(&d->prev);
        journal_buf_done(&d->str);
}

/* Decodes a path against d->prev into d->str: its offset there; with
 * update, it becomes the previous path. */
static int decode_path(Decoder *d, bool update, size_t *ret_off) {
        uint64_t shared, rest;
        size_t off = d->str.size;
        int r;

        r = get_varint(&d->p, d->end, &shared);
        if (r < 0)
                return r;
        r = get_varint(&d->p, d->end, &rest);
        if (r < 0)
                return r;
        if (shared > d->prev.size || rest > (uint64_t) (d->end - d->p) || shared + rest == 0 ||
            shared + rest > JOURNAL_PATH_MAX)
                return -EBADMSG;
        if (memchr(d->p, '\0', rest))
                return -EBADMSG;

        r = journal_buf_reserve(&d->str, shared + rest + 1);
        if (r < 0)
                return r;
        journal_buf_put(&d->str, d->prev.data, shared);
        journal_buf_put(&d->str, d->p, rest);
        journal_buf_put(&d->str, "", 1);
        d->p += rest;
        if (d->str.data[off] != '/')
                return -EBADMSG; /* paths are absolute */

        if (update) {
                r = set_prev(&d->prev, (const char *) d->str.data + off, shared + rest);
                if (r < 0)
                        return r;
        }
        *ret_off = off;
        return 0;
}

/* One record; e->id is the caller's. 0, or -EBADMSG (or -ENOMEM). */
int journal_decode_record(Decoder *d, JournalEntry *e) {
        uint8_t tag;
        int r;

        d->str.size = 0;
        if (d->p >= d->end)
                return -EBADMSG;
        tag = *d->p++;

        if ((tag & TAG_KIND) == TAG_EVENT) {
                size_t path_off, new_off = 0;
                uint32_t mask, cookie = 0;

                if (tag & ~TAG_EVENT_VALID)
                        return -EBADMSG;
                r = get_varint32(&d->p, d->end, &mask);
                if (r < 0)
                        return r;
                if (mask & JOURNAL_ISDIR)
                        return -EBADMSG; /* stored as a tag bit, never in the mask */
                if (tag & TAG_EVENT_COOKIE) {
                        r = get_varint32(&d->p, d->end, &cookie);
                        if (r < 0)
                                return r;
                        if (cookie == 0)
                                return -EBADMSG;
                }
                r = decode_path(d, true, &path_off);
                if (r < 0)
                        return r;
                if (tag & TAG_EVENT_NEW_PATH) {
                        r = decode_path(d, false, &new_off);
                        if (r < 0)
                                return r;
                }
                *e = (JournalEntry) {
                        .type = JOURNAL_ENTRY_EVENT,
                        .id = e->id,
                        .mask = mask | (tag & TAG_EVENT_ISDIR ? JOURNAL_ISDIR : 0),
                        .cookie = cookie,
                        .path = (const char *) d->str.data + path_off,
                        .new_path = tag & TAG_EVENT_NEW_PATH ? (const char *) d->str.data + new_off : NULL,
                };
                return 0;
        }

        if ((tag & TAG_KIND) == TAG_GAP) {
                uint32_t reason;
                uint64_t n = 0;

                if (tag & ~TAG_GAP_VALID)
                        return -EBADMSG;
                r = get_varint32(&d->p, d->end, &reason);
                if (r < 0)
                        return r;
                if (reason == 0)
                        return -EBADMSG;
                if (!(tag & TAG_GAP_WHOLE)) {
                        r = get_varint(&d->p, d->end, &n);
                        if (r < 0)
                                return r;
                        if (n == 0 || n > JOURNAL_GAP_MAX_SCOPE)
                                return -EBADMSG;
                        for (size_t i = 0; i < n; i++) {
                                uint8_t flags;

                                if (d->p >= d->end)
                                        return -EBADMSG;
                                flags = *d->p++;
                                if (flags & ~SCOPE_RECURSIVE)
                                        return -EBADMSG;
                                r = decode_path(d, true, &d->scope_off[i]);
                                if (r < 0)
                                        return r;
                                d->scope[i].recursive = flags & SCOPE_RECURSIVE;
                        }
                        /* The strings are placed: now their addresses are fixed. */
                        for (size_t i = 0; i < n; i++)
                                d->scope[i].path = (const char *) d->str.data + d->scope_off[i];
                }
                *e = (JournalEntry) {
                        .type = JOURNAL_ENTRY_GAP,
                        .id = e->id,
                        .reason = reason,
                        .whole = tag & TAG_GAP_WHOLE,
                        .n_scope = (size_t) n,
                        .scope = n > 0 ? d->scope : NULL,
                };
                return 0;
        }

        return -EBADMSG;
}
