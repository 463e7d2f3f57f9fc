/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stream_frame - the binary framing of a client's record stream
 *
 * The encoder trusts its caller (the daemon) for what only the caller
 * knows and checks what would make a frame the decoder refuses; the
 * decoder trusts nothing: every length is checked against what is left
 * of its frame before it is used, in arithmetic that cannot wrap, so
 * any bytes at all give a frame, "more please" or -EBADMSG (fuzz/
 * fuzz-stream-frame.c holds it to that). Integers go through memcpy: a
 * frame is not aligned in its buffer.
 */

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stream_frame.h"

static void put16(uint8_t *p, uint16_t v) {
        v = htole16(v);
        memcpy(p, &v, sizeof v);
}

static void put32(uint8_t *p, uint32_t v) {
        v = htole32(v);
        memcpy(p, &v, sizeof v);
}

static void put64(uint8_t *p, uint64_t v) {
        v = htole64(v);
        memcpy(p, &v, sizeof v);
}

static uint16_t get16(const uint8_t *p) {
        uint16_t v;

        memcpy(&v, p, sizeof v);
        return le16toh(v);
}

static uint32_t get32(const uint8_t *p) {
        uint32_t v;

        memcpy(&v, p, sizeof v);
        return le32toh(v);
}

static uint64_t get64(const uint8_t *p) {
        uint64_t v;

        memcpy(&v, p, sizeof v);
        return le64toh(v);
}

/* --- encoding -------------------------------------------------------------------------------- */

size_t stream_frame_header_encode(void *buf, uint16_t version) {
        uint8_t *p = buf;

        memcpy(p, STREAM_FRAME_MAGIC, 4);
        put16(p + 4, version);
        put16(p + 6, STREAM_FRAME_HEADER_SIZE);
        return STREAM_FRAME_HEADER_SIZE;
}

static size_t fields_size(const StreamFields *fields) {
        return fields && fields->has_cursor ? 4 + 8 : 0;
}

static uint8_t *fields_encode(uint8_t *p, const StreamFields *fields) {
        if (fields && fields->has_cursor) {
                put16(p, STREAM_FIELD_CURSOR);
                put16(p + 2, 8);
                put64(p + 4, fields->cursor);
                p += 12;
        }
        return p;
}

static void prefix_encode(uint8_t *p, size_t size, uint16_t type) {
        put32(p, (uint32_t) size);
        put16(p + 4, type);
        put16(p + 6, 0);
}

size_t stream_frame_event_size(size_t path_len, size_t new_path_len, const StreamFields *fields) {
        /* Saturates rather than wraps: anything past STREAM_FRAME_MAX is "too long" alike. */
        if (path_len > STREAM_FRAME_MAX || new_path_len > STREAM_FRAME_MAX)
                return (size_t) STREAM_FRAME_MAX + 1;
        return STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_EVENT_FIXED + path_len + 1 + new_path_len + 1 +
                fields_size(fields);
}

int stream_frame_encode_event(void *buf, size_t size, uint32_t id, uint32_t mask, uint32_t cookie, const char *path,
                              size_t path_len, const char *new_path, size_t new_path_len, const StreamFields *fields) {
        size_t need;
        uint8_t *p = buf;

        if (!new_path)
                new_path_len = 0;
        need = stream_frame_event_size(path_len, new_path_len, fields);
        if (need > STREAM_FRAME_MAX)
                return -E2BIG;
        if (need > size)
                return -ENOBUFS;
        if (memchr(path, 0, path_len) || (new_path_len > 0 && memchr(new_path, 0, new_path_len)))
                return -EINVAL;

        prefix_encode(p, need, STREAM_FRAME_EVENT);
        p += STREAM_FRAME_PREFIX_SIZE;
        put32(p, id);
        put32(p + 4, mask);
        put32(p + 8, cookie);
        put32(p + 12, (uint32_t) path_len);
        put32(p + 16, (uint32_t) new_path_len);
        p += STREAM_FRAME_EVENT_FIXED;
        memcpy(p, path, path_len);
        p += path_len;
        *p++ = 0;
        if (new_path_len > 0)
                memcpy(p, new_path, new_path_len);
        p += new_path_len;
        *p++ = 0;
        fields_encode(p, fields);
        return (int) need;
}

int stream_frame_encode_overflow(void *buf, size_t size, const uint32_t *ids, size_t n) {
        size_t need;
        uint8_t *p = buf;

        if (n > STREAM_FRAME_OVERFLOW_MAX_IDS)
                return -E2BIG;
        need = STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_OVERFLOW_FIXED + n * 4;
        if (need > size)
                return -ENOBUFS;
        for (size_t i = 1; i < n; i++)
                if (ids[i] <= ids[i - 1])
                        return -EINVAL;

        prefix_encode(p, need, STREAM_FRAME_OVERFLOW);
        p += STREAM_FRAME_PREFIX_SIZE;
        put32(p, (uint32_t) n);
        p += 4;
        for (size_t i = 0; i < n; i++, p += 4)
                put32(p, ids[i]);
        return (int) need;
}

int stream_frame_encode_removed(void *buf, size_t size, uint32_t id, const char *reason, size_t reason_len) {
        size_t need;
        uint8_t *p = buf;

        if (reason_len > STREAM_FRAME_MAX)
                return -E2BIG;
        need = STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_REMOVED_FIXED + reason_len + 1;
        if (need > STREAM_FRAME_MAX)
                return -E2BIG;
        if (need > size)
                return -ENOBUFS;
        if (memchr(reason, 0, reason_len))
                return -EINVAL;

        prefix_encode(p, need, STREAM_FRAME_REMOVED);
        p += STREAM_FRAME_PREFIX_SIZE;
        put32(p, id);
        put32(p + 4, (uint32_t) reason_len);
        memcpy(p + 8, reason, reason_len);
        p[8 + reason_len] = 0;
        return (int) need;
}

static uint8_t *string_encode(uint8_t *p, const char *s, size_t len) {
        memcpy(p, s, len);
        p[len] = 0;
        return p + len + 1;
}

size_t stream_frame_durable_event_size(size_t name_len, size_t path_len, size_t new_path_len) {
        if (name_len > STREAM_FRAME_MAX || path_len > STREAM_FRAME_MAX || new_path_len > STREAM_FRAME_MAX)
                return (size_t) STREAM_FRAME_MAX + 1;
        return STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_DURABLE_EVENT_FIXED + name_len + 1 + path_len + 1 +
                new_path_len + 1;
}

int stream_frame_encode_durable_event(void *buf, size_t size, uint64_t cursor, uint32_t mask, uint32_t cookie,
                                      const char *name, size_t name_len, const char *path, size_t path_len,
                                      const char *new_path, size_t new_path_len) {
        size_t need;
        uint8_t *p = buf;

        if (!new_path)
                new_path_len = 0;
        need = stream_frame_durable_event_size(name_len, path_len, new_path_len);
        if (need > STREAM_FRAME_MAX)
                return -E2BIG;
        if (need > size)
                return -ENOBUFS;
        if (memchr(name, 0, name_len) || memchr(path, 0, path_len) ||
            (new_path_len > 0 && memchr(new_path, 0, new_path_len)))
                return -EINVAL;

        prefix_encode(p, need, STREAM_FRAME_DURABLE_EVENT);
        p += STREAM_FRAME_PREFIX_SIZE;
        put64(p, cursor);
        put32(p + 8, mask);
        put32(p + 12, cookie);
        put32(p + 16, (uint32_t) name_len);
        put32(p + 20, (uint32_t) path_len);
        put32(p + 24, (uint32_t) new_path_len);
        p += STREAM_FRAME_DURABLE_EVENT_FIXED;
        p = string_encode(p, name, name_len);
        p = string_encode(p, path, path_len);
        string_encode(p, new_path ?: "", new_path_len);
        return (int) need;
}

size_t stream_frame_durable_rescan_size(const char *name, const char *reason, const StreamRescanDir *dirs, size_t n) {
        size_t need = STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_DURABLE_RESCAN_FIXED;

        need += strnlen(name, STREAM_FRAME_MAX + 1) + 1 + strnlen(reason, STREAM_FRAME_MAX + 1) + 1;
        for (size_t i = 0; i < n && need <= STREAM_FRAME_MAX; i++)
                need += STREAM_FRAME_DURABLE_RESCAN_DIR_FIXED + strnlen(dirs[i].path, STREAM_FRAME_MAX + 1) + 1;
        return need > STREAM_FRAME_MAX ? (size_t) STREAM_FRAME_MAX + 1 : need;
}

int stream_frame_encode_durable_rescan(void *buf, size_t size, uint64_t cursor, const char *name, const char *reason,
                                       const StreamRescanDir *dirs, size_t n) {
        size_t need = stream_frame_durable_rescan_size(name, reason, dirs, n);
        uint8_t *p = buf;

        if (need > STREAM_FRAME_MAX)
                return -E2BIG;
        if (need > size)
                return -ENOBUFS;

        prefix_encode(p, need, STREAM_FRAME_DURABLE_RESCAN);
        p += STREAM_FRAME_PREFIX_SIZE;
        put64(p, cursor);
        put32(p + 8, (uint32_t) strlen(name));
        put32(p + 12, (uint32_t) strlen(reason));
        put32(p + 16, (uint32_t) n);
        p += STREAM_FRAME_DURABLE_RESCAN_FIXED;
        p = string_encode(p, name, strlen(name));
        p = string_encode(p, reason, strlen(reason));
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(dirs[i].path);

                put32(p, dirs[i].flags);
                put32(p + 4, (uint32_t) len);
                p = string_encode(p + STREAM_FRAME_DURABLE_RESCAN_DIR_FIXED, dirs[i].path, len);
        }
        return (int) need;
}

int stream_frame_encode_durable_caught_up(void *buf, size_t size, uint64_t cursor, const char *name) {
        size_t len = strnlen(name, STREAM_FRAME_MAX), need;
        uint8_t *p = buf;

        need = STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_DURABLE_CAUGHT_UP_FIXED + len + 1;
        if (need > STREAM_FRAME_MAX)
                return -E2BIG;
        if (need > size)
                return -ENOBUFS;
        prefix_encode(p, need, STREAM_FRAME_DURABLE_CAUGHT_UP);
        p += STREAM_FRAME_PREFIX_SIZE;
        put64(p, cursor);
        put32(p + 8, (uint32_t) len);
        string_encode(p + STREAM_FRAME_DURABLE_CAUGHT_UP_FIXED, name, len);
        return (int) need;
}

int stream_frame_encode_durable_stopped(void *buf, size_t size, const char *name, const char *reason) {
        size_t name_len = strnlen(name, STREAM_FRAME_MAX), reason_len = strnlen(reason, STREAM_FRAME_MAX), need;
        uint8_t *p = buf;

        need = STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_DURABLE_STOPPED_FIXED + name_len + 1 + reason_len + 1;
        if (need > STREAM_FRAME_MAX)
                return -E2BIG;
        if (need > size)
                return -ENOBUFS;
        prefix_encode(p, need, STREAM_FRAME_DURABLE_STOPPED);
        p += STREAM_FRAME_PREFIX_SIZE;
        put32(p, (uint32_t) name_len);
        put32(p + 4, (uint32_t) reason_len);
        p = string_encode(p + STREAM_FRAME_DURABLE_STOPPED_FIXED, name, name_len);
        string_encode(p, reason, reason_len);
        return (int) need;
}

/* --- decoding -------------------------------------------------------------------------------- */

int stream_frame_header_decode(const void *buf, size_t size, uint16_t *ret_version) {
        const uint8_t *p = buf;
        uint16_t version, header_size;

        /* A wrong magic is told at once, not after 8 bytes: a client that
         * was handed something else must not wait for more. */
        if (memcmp(p, STREAM_FRAME_MAGIC, size < 4 ? size : 4) != 0)
                return -EBADMSG;
        if (size < STREAM_FRAME_HEADER_SIZE)
                return 0;
        version = get16(p + 4);
        header_size = get16(p + 6);
        if (version == 0 || header_size < STREAM_FRAME_HEADER_SIZE || header_size > STREAM_FRAME_HEADER_MAX)
                return -EBADMSG;
        if (version > STREAM_FRAME_VERSION)
                return -EPROTONOSUPPORT;
        if (size < header_size)
                return 0;
        *ret_version = version;
        return header_size;
}

/* A string of len bytes at p, then its NUL, within [p, end): no NUL inside. */
static bool string_ok(const uint8_t *p, const uint8_t *end, uint32_t len) {
        if ((size_t) (end - p) <= len) /* room for len bytes and the NUL */
                return false;
        return p[len] == 0 && !memchr(p, 0, len);
}

/* The optional fields in [p, end). */
static int fields_decode(const uint8_t *p, const uint8_t *end, StreamFrame *f) {
        while (p < end) {
                uint16_t tag, len;

                if (end - p < 4)
                        return -EBADMSG;
                tag = get16(p);
                len = get16(p + 2);
                p += 4;
                if ((size_t) (end - p) < len)
                        return -EBADMSG;
                switch (tag) {
                case STREAM_FIELD_CURSOR:
                        /* Any frame may carry one (version 1's daemon puts it on events). */
                        if (len != 8 || f->fields.has_cursor)
                                return -EBADMSG; /* twice: which one? */
                        f->fields.has_cursor = true;
                        f->fields.cursor = get64(p);
                        break;
                default:
                        f->n_unknown_fields++;
                        break;
                }
                p += len;
        }
        return 0;
}

/* An event's path and new path at p (each with its NUL), then the frame's fields. */
static int paths_decode(const uint8_t *p, const uint8_t *end, uint32_t path_len, uint32_t new_path_len, StreamFrame *f) {
        if (!string_ok(p, end, path_len))
                return -EBADMSG;
        f->path = (const char *) p;
        f->path_len = path_len;
        p += path_len + 1;
        if (!string_ok(p, end, new_path_len))
                return -EBADMSG;
        f->new_path = (const char *) p;
        f->new_path_len = new_path_len;
        p += new_path_len + 1;
        return fields_decode(p, end, f);
}

static int event_decode(const uint8_t *p, const uint8_t *end, StreamFrame *f) {
        if (end - p < (ptrdiff_t) STREAM_FRAME_EVENT_FIXED)
                return -EBADMSG;
        f->id = get32(p);
        f->mask = get32(p + 4);
        f->cookie = get32(p + 8);
        return paths_decode(p + STREAM_FRAME_EVENT_FIXED, end, get32(p + 12), get32(p + 16), f);
}

static int overflow_decode(const uint8_t *p, const uint8_t *end, StreamFrame *f) {
        uint32_t n;

        if (end - p < (ptrdiff_t) STREAM_FRAME_OVERFLOW_FIXED)
                return -EBADMSG;
        n = get32(p);
        p += 4;
        if ((size_t) (end - p) / 4 < n)
                return -EBADMSG;
        f->n_ids = n;
        f->ids = p;
        for (uint32_t i = 1; i < n; i++)
                if (get32(p + 4 * i) <= get32(p + 4 * (i - 1)))
                        return -EBADMSG;
        return fields_decode(p + 4 * (size_t) n, end, f);
}

static int removed_decode(const uint8_t *p, const uint8_t *end, StreamFrame *f) {
        uint32_t len;

        if (end - p < (ptrdiff_t) STREAM_FRAME_REMOVED_FIXED)
                return -EBADMSG;
        f->id = get32(p);
        len = get32(p + 4);
        p += STREAM_FRAME_REMOVED_FIXED;
        if (!string_ok(p, end, len))
                return -EBADMSG;
        f->reason = (const char *) p;
        f->reason_len = len;
        return fields_decode(p + len + 1, end, f);
}

/* The name of a durable frame, name_len bytes and a NUL at *p, which moves past it. */
static int name_decode(const uint8_t **p, const uint8_t *end, uint32_t name_len, StreamFrame *f) {
        if (!string_ok(*p, end, name_len))
                return -EBADMSG;
        f->name = (const char *) *p;
        f->name_len = name_len;
        *p += name_len + 1;
        return 0;
}

static int durable_event_decode(const uint8_t *p, const uint8_t *end, StreamFrame *f) {
        uint32_t name_len, path_len, new_path_len;

        if (end - p < (ptrdiff_t) STREAM_FRAME_DURABLE_EVENT_FIXED)
                return -EBADMSG;
        f->cursor = get64(p);
        f->mask = get32(p + 8);
        f->cookie = get32(p + 12);
        name_len = get32(p + 16);
        path_len = get32(p + 20);
        new_path_len = get32(p + 24);
        p += STREAM_FRAME_DURABLE_EVENT_FIXED;
        if (name_decode(&p, end, name_len, f) < 0)
                return -EBADMSG;
        return paths_decode(p, end, path_len, new_path_len, f);
}

static int durable_rescan_decode(const uint8_t *p, const uint8_t *end, StreamFrame *f) {
        uint32_t name_len, reason_len, n;

        if (end - p < (ptrdiff_t) STREAM_FRAME_DURABLE_RESCAN_FIXED)
                return -EBADMSG;
        f->cursor = get64(p);
        name_len = get32(p + 8);
        reason_len = get32(p + 12);
        n = get32(p + 16);
        p += STREAM_FRAME_DURABLE_RESCAN_FIXED;
        if (name_decode(&p, end, name_len, f) < 0 || !string_ok(p, end, reason_len))
                return -EBADMSG;
        f->reason = (const char *) p;
        f->reason_len = reason_len;
        p += reason_len + 1;
        /* Each directory takes 9 bytes at least: a count past what is left is refused before the walk. */
        if ((size_t) (end - p) / (STREAM_FRAME_DURABLE_RESCAN_DIR_FIXED + 1) < n)
                return -EBADMSG;
        f->n_dirs = n;
        f->dirs = p;
        for (uint32_t i = 0; i < n; i++) {
                uint32_t len;

                if (end - p < (ptrdiff_t) STREAM_FRAME_DURABLE_RESCAN_DIR_FIXED)
                        return -EBADMSG;
                len = get32(p + 4);
                p += STREAM_FRAME_DURABLE_RESCAN_DIR_FIXED;
                if (!string_ok(p, end, len))
                        return -EBADMSG;
                p += len + 1;
        }
        f->dirs_size = (size_t) (p - f->dirs);
        return fields_decode(p, end, f);
}

static int durable_caught_up_decode(const uint8_t *p, const uint8_t *end, StreamFrame *f) {
        if (end - p < (ptrdiff_t) STREAM_FRAME_DURABLE_CAUGHT_UP_FIXED)
                return -EBADMSG;
        f->cursor = get64(p);
        p += STREAM_FRAME_DURABLE_CAUGHT_UP_FIXED;
        if (name_decode(&p, end, get32(p - 4), f) < 0)
                return -EBADMSG;
        return fields_decode(p, end, f);
}

static int durable_stopped_decode(const uint8_t *p, const uint8_t *end, StreamFrame *f) {
        uint32_t reason_len;

        if (end - p < (ptrdiff_t) STREAM_FRAME_DURABLE_STOPPED_FIXED)
                return -EBADMSG;
        reason_len = get32(p + 4);
        p += STREAM_FRAME_DURABLE_STOPPED_FIXED;
        if (name_decode(&p, end, get32(p - 8), f) < 0 || !string_ok(p, end, reason_len))
                return -EBADMSG;
        f->reason = (const char *) p;
        f->reason_len = reason_len;
        return fields_decode(p + reason_len + 1, end, f);
}

int stream_frame_decode(const void *buf, size_t size, StreamFrame *ret) {
        const uint8_t *p = buf, *end;
        uint32_t frame_size;
        StreamFrame f = {
                .path = "",
                .new_path = "",
                .reason = "",
                .name = "",
        };
        int r;

        if (size < 4)
                return 0;
        frame_size = get32(p);
        if (frame_size < STREAM_FRAME_PREFIX_SIZE || frame_size > STREAM_FRAME_MAX)
                return -EBADMSG;
        if (size < frame_size)
                return 0;
        f.type = get16(p + 4);
        f.size = frame_size;
        /* p + 6: reserved, 0 when sent, ignored here. */
        end = p + frame_size;
        p += STREAM_FRAME_PREFIX_SIZE;

        switch (f.type) {
        case STREAM_FRAME_EVENT:
                r = event_decode(p, end, &f);
                break;
        case STREAM_FRAME_OVERFLOW:
                r = overflow_decode(p, end, &f);
                break;
        case STREAM_FRAME_REMOVED:
                r = removed_decode(p, end, &f);
                break;
        case STREAM_FRAME_DURABLE_RESCAN:
                r = durable_rescan_decode(p, end, &f);
                break;
        case STREAM_FRAME_DURABLE_CAUGHT_UP:
                r = durable_caught_up_decode(p, end, &f);
                break;
        case STREAM_FRAME_DURABLE_EVENT:
                r = durable_event_decode(p, end, &f);
                break;
        case STREAM_FRAME_DURABLE_STOPPED:
                r = durable_stopped_decode(p, end, &f);
                break;
        case 0:
                return -EBADMSG;
        default:
                r = 0; /* a newer daemon's: skipped whole */
                break;
        }
        if (r < 0)
                return r;
        *ret = f;
        return (int) frame_size;
}

uint32_t stream_frame_overflow_id(const StreamFrame *f, size_t i) {
        return i < f->n_ids ? get32(f->ids + 4 * i) : 0;
}

int stream_frame_rescan_dir(const StreamFrame *f, size_t *offset, const char **ret_path, size_t *ret_len,
                            uint32_t *ret_flags) {
        const uint8_t *p;
        uint32_t len;

        if (f->type != STREAM_FRAME_DURABLE_RESCAN || !f->dirs || *offset >= f->dirs_size)
                return 0;
        p = f->dirs + *offset;
        len = get32(p + 4);
        *ret_flags = get32(p);
        *ret_path = (const char *) p + STREAM_FRAME_DURABLE_RESCAN_DIR_FIXED;
        *ret_len = len;
        *offset += STREAM_FRAME_DURABLE_RESCAN_DIR_FIXED + (size_t) len + 1;
        return 1;
}

/* --- the reader ------------------------------------------------------------------------------ */

void stream_frame_reader_init(StreamFrameReader *r) {
        *r = (StreamFrameReader) {};
}

void stream_frame_reader_done(StreamFrameReader *r) {
        free(r->buf);
        *r = (StreamFrameReader) {};
}

int stream_frame_reader_space(StreamFrameReader *r, size_t min, void **ret_p, size_t *ret_n) {
        size_t have = r->end - r->start, need;

        /* The buffer grows with what arrives, not with what a frame says
         * its size is: a frame longer than the maximum is refused by _next()
         * from its first bytes, so the undecoded bytes are never more than
         * one frame and what the last read brought past it. */
        if (min > STREAM_FRAME_MAX)
                min = STREAM_FRAME_MAX;
        if (min == 0)
                min = 1;
        need = have + min;

        if (r->start > 0 && (have == 0 || r->cap - r->end < min)) {
                memmove(r->buf, r->buf + r->start, have);
                r->start = 0;
                r->end = have;
        }
        if (r->cap - r->start < need) {
                size_t cap = r->cap ? r->cap : 4096;
                uint8_t *b;

                while (cap < need)
                        cap *= 2;
                b = realloc(r->buf, cap);
                if (!b)
                        return -ENOMEM;
                r->buf = b;
                r->cap = cap;
        }
        *ret_p = r->buf + r->end;
        *ret_n = r->cap - r->end;
        return 0;
}

void stream_frame_reader_commit(StreamFrameReader *r, size_t n) {
        r->end += n;
}

int stream_frame_reader_next(StreamFrameReader *r, StreamFrame *ret) {
        size_t have = r->end - r->start;
        int k;

        if (!r->header_seen) {
                if (have == 0)
                        return 0;
                k = stream_frame_header_decode(r->buf + r->start, have, &r->version);
                if (k <= 0)
                        return k;
                r->header_seen = true;
                r->start += (size_t) k;
                have -= (size_t) k;
        }
        if (have == 0)
                return 0;
        k = stream_frame_decode(r->buf + r->start, have, ret);
        if (k <= 0)
                return k;
        r->start += (size_t) k;
        return 1;
}

size_t stream_frame_reader_pending(const StreamFrameReader *r) {
        return r->end - r->start;
}
