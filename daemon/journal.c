/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal - a durable subscription's change journal, on disk
 *
 * The layout (docs/JOURNAL.md has it byte by byte):
 *
 *   meta              two 512-byte slots, written in turn: identity, the id
 *                     ceiling, a "losing" flag; the valid slot with the
 *                     higher sequence number wins, so a torn write of one
 *                     slot leaves the other
 *   seg-<16 hex>      a segment: a header (identity, the id of the last
 *                     record before it), then frames; the name is the first
 *                     id it may hold, so names sort as ids do
 *
 * A frame is what one flush writes: a 24-byte header (magic, size, first
 * id, count, CRC-32C over header and payload) and records whose ids follow
 * from the first, each path stored as the bytes it shares with the previous
 * path and the bytes it does not. One checksum a frame, not a record: a
 * storm writes frames of thousands of records, where four bytes a record
 * would be a third of the journal.
 *
 * Ids never repeat: before an id is handed out, the meta file says that ids
 * below a ceiling may be in use (reserved a block at a time, written in
 * place in a file allocated at creation, so even a full disk does not stop
 * it). After a crash the journal starts at the ceiling: ids skip, they do
 * not repeat. Records are written without fsync (a storm would wait on the
 * disk); what a power cut loses is a torn tail, cut at the next open and
 * recorded as a gap, as is the daemon's down time by its caller.
 *
 * Readers (journal_reader.c) find damage by the checksums, the ids (which
 * must grow) and the chain of segments (each header names the last id
 * before it): they report a gap, resynchronise on the next valid frame and
 * go on. Nothing in a journal's bytes can make a reader crash or loop:
 * tested by fuzz-journal.
 */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "journal.h"
#include "journal_internal.h"
#include "log.h"
#include "macro.h"

#define META_NAME               "meta"
#define META_SLOT_SIZE          512u
#define META_SLOT_BYTES         52u
#define META_MAGIC              0x4d4a5457u     /* "WTJM" */
#define META_VERSION            1u
#define META_FLAG_LOSING        0x1u

#define SEGMENT_MAGIC           "WATCHDJ1"
#define SEGMENT_VERSION         1u

#define FRAME_MAGIC             0x1f4a57f7u     /* f7 57 4a 1f: not text, not UTF-8 */
#define FRAME_READ_MAX          (1024u * 1024u) /* what a reader accepts */
#define FRAME_WRITE_MAX         (64u * 1024u)   /* what a flush writes at most (but one record) */

/* Ids reserved a block at a time: one meta write (and fdatasync) per block. */
#define ID_BLOCK                UINT64_C(65536)

/* A gap's scope paths together: past it, the whole subscription. */
#define GAP_SCOPE_BYTES_MAX     (256u * 1024u)

/* Record tags: the kind in the low two bits, flags above. */
#define TAG_KIND                0x03u
#define TAG_EVENT               0x00u
#define TAG_GAP                 0x01u
#define TAG_EVENT_NEW_PATH      0x04u
#define TAG_EVENT_ISDIR         0x08u
#define TAG_EVENT_COOKIE        0x10u
#define TAG_EVENT_VALID         (TAG_KIND | TAG_EVENT_NEW_PATH | TAG_EVENT_ISDIR | TAG_EVENT_COOKIE)
#define TAG_GAP_WHOLE           0x04u
#define TAG_GAP_VALID           (TAG_KIND | TAG_GAP_WHOLE)
#define SCOPE_RECURSIVE         0x01u

/* IN_ISDIR, stored as a tag bit: it would cost a varint four bytes. */
#define JOURNAL_ISDIR           0x40000000u

/* IN_CREATE | IN_MOVED_TO: a directory that appeared, whose tree is unknown. */
#define EVENTS_NEW_OBJECT       0x00000180u

/* ---------------------------------------------------------------------- */
/* Little helpers: byte order, varints, growing buffers, CRC-32C */

static void put_le32(uint8_t *p, uint32_t v) {
        for (unsigned i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v) {
        for (unsigned i = 0; i < 8; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p) {
        uint32_t v = 0;

        for (unsigned i = 0; i < 4; i++)
                v |= (uint32_t) p[i] << (8 * i);
        return v;
}

static uint64_t get_le64(const uint8_t *p) {
        uint64_t v = 0;

        for (unsigned i = 0; i < 8; i++)
                v |= (uint64_t) p[i] << (8 * i);
        return v;
}

void journal_buf_done(Buf *b) {
        free(b->data);
        *b = (Buf) {};
}

static int buf_reserve(Buf *b, size_t more) {
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

static int buf_put(Buf *b, const void *p, size_t n) {
        int r = buf_reserve(b, n);

        if (r < 0)
                return r;
        if (n > 0)
                memcpy(b->data + b->size, p, n);
        b->size += n;
        return 0;
}

static int buf_put_varint(Buf *b, uint64_t v) {
        uint8_t tmp[10];
        size_t n = 0;

        do {
                tmp[n] = (uint8_t) (v & 0x7f);
                v >>= 7;
                if (v)
                        tmp[n] |= 0x80;
                n++;
        } while (v);
        return buf_put(b, tmp, n);
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
                        return -EBADMSG;        /* past 64 bits */
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

/* Slicing-by-8 tables, made at first use (the daemon is one thread). */
static uint32_t crc_table[8][256];
static bool crc_ready;

static void crc_init(void) {
        for (uint32_t i = 0; i < 256; i++) {
                uint32_t c = i;

                for (unsigned k = 0; k < 8; k++)
                        c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
                crc_table[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; i++)
                for (unsigned t = 1; t < 8; t++)
                        crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
        crc_ready = true;
}

uint32_t journal_crc32c(uint32_t crc, const void *buf, size_t size) {
        const uint8_t *p = buf;

        if (!crc_ready)
                crc_init();
        crc = ~crc;
        while (size >= 8) {
                uint32_t lo = crc ^ get_le32(p), hi = get_le32(p + 4);

                crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
                      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
                      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
                      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
                p += 8;
                size -= 8;
        }
        while (size--)
                crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
        return ~crc;
}

static int pread_full(int fd, void *buf, size_t size, uint64_t off) {
        size_t done = 0;

        while (done < size) {
                ssize_t n = pread(fd, (uint8_t *) buf + done, size - done, (off_t) (off + done));

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        return -ENODATA;        /* the file is shorter */
                done += (size_t) n;
        }
        return 0;
}

void journal_id_to_string(const JournalId *id, char ret[static JOURNAL_ID_STRING_MAX]) {
        static const char hex[] = "0123456789abcdef";

        for (size_t i = 0; i < sizeof(id->bytes); i++) {
                ret[2 * i] = hex[id->bytes[i] >> 4];
                ret[2 * i + 1] = hex[id->bytes[i] & 0xf];
        }
        ret[2 * sizeof(id->bytes)] = '\0';
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

int journal_id_from_string(const char *s, JournalId *ret) {
        JournalId id;

        if (strlen(s) != 2 * sizeof(id.bytes))
                return -EINVAL;
        for (size_t i = 0; i < sizeof(id.bytes); i++) {
                int hi = unhex(s[2 * i]), lo = unhex(s[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -EINVAL;
                id.bytes[i] = (uint8_t) (hi << 4 | lo);
        }
        *ret = id;
        return 0;
}

const char *journal_gap_reason_to_string(uint32_t reason) {
        switch (reason) {
        case JOURNAL_GAP_DAEMON_DOWN:   return "daemon-down";
        case JOURNAL_GAP_OVERFLOW:      return "overflow";
        case JOURNAL_GAP_DISK_FULL:     return "disk-full";
        case JOURNAL_GAP_CORRUPT:       return "corrupt";
        case JOURNAL_GAP_HISTORY_LOST:  return "history-lost";
        case JOURNAL_GAP_FOREIGN:       return "foreign";
        case JOURNAL_GAP_ACCESS:        return "access";
        case JOURNAL_GAP_REMOVED:       return "removed";
        default:                        return "unknown";
        }
}

/* ---------------------------------------------------------------------- */
/* Records: encoding and decoding */

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

        r = buf_put_varint(b, shared);
        if (r >= 0)
                r = buf_put_varint(b, len - shared);
        if (r >= 0)
                r = buf_put(b, path + shared, len - shared);
        return r;
}

static int set_prev(Buf *prev, const char *path, size_t len) {
        prev->size = 0;
        return buf_put(prev, path, len);
}

static int encode_event(Buf *b, Buf *prev, uint32_t mask, uint32_t cookie,
                        const char *path, const char *new_path) {
        size_t len = strlen(path);
        uint8_t tag = TAG_EVENT;
        int r;

        if (new_path)
                tag |= TAG_EVENT_NEW_PATH;
        if (mask & JOURNAL_ISDIR)
                tag |= TAG_EVENT_ISDIR;
        if (cookie)
                tag |= TAG_EVENT_COOKIE;

        r = buf_put(b, &tag, 1);
        if (r >= 0)
                r = buf_put_varint(b, mask & ~JOURNAL_ISDIR);
        if (r >= 0 && cookie)
                r = buf_put_varint(b, cookie);
        if (r >= 0)
                r = encode_path(b, prev, path, len);
        if (r >= 0)
                r = set_prev(prev, path, len);
        /* The new path shares with the old one (a rename in one directory). */
        if (r >= 0 && new_path)
                r = encode_path(b, prev, new_path, strlen(new_path));
        return r;
}

static int encode_gap(Buf *b, Buf *prev, uint32_t reason, bool whole, const JournalScope *scope, size_t n) {
        uint8_t tag = TAG_GAP | (whole ? TAG_GAP_WHOLE : 0);
        int r;

        r = buf_put(b, &tag, 1);
        if (r >= 0)
                r = buf_put_varint(b, reason);
        if (whole || r < 0)
                return r;
        r = buf_put_varint(b, n);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                uint8_t flags = scope[i].recursive ? SCOPE_RECURSIVE : 0;
                size_t len = strlen(scope[i].path);

                r = buf_put(b, &flags, 1);
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
        if (shared > d->prev.size || rest > (uint64_t) (d->end - d->p) ||
            shared + rest == 0 || shared + rest > JOURNAL_PATH_MAX)
                return -EBADMSG;
        if (memchr(d->p, '\0', rest))
                return -EBADMSG;

        r = buf_reserve(&d->str, shared + rest + 1);
        if (r < 0)
                return r;
        buf_put(&d->str, d->prev.data, shared);
        buf_put(&d->str, d->p, rest);
        buf_put(&d->str, "", 1);
        d->p += rest;
        if (d->str.data[off] != '/')
                return -EBADMSG;        /* paths are absolute */

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
                        return -EBADMSG;        /* stored as a tag bit, never in the mask */
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

/* ---------------------------------------------------------------------- */
/* The scope of records that could not be written */

static void gap_scope_clear(GapScope *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->path[i]);
        *s = (GapScope) {};
}

static void gap_scope_set_whole(GapScope *s) {
        gap_scope_clear(s);
        s->whole = true;
}

/* Is path at or below dir? */
static bool path_below(const char *path, const char *dir) {
        size_t l = strlen(dir);

        if (strncmp(path, dir, l) != 0)
                return false;
        return path[l] == '\0' || path[l] == '/' || (l > 0 && dir[l - 1] == '/');
}

static void gap_scope_add(GapScope *s, const char *path, size_t len, bool recursive) {
        _cleanup_free_ char *p = NULL;
        size_t k = 0;

        if (s->whole)
                return;
        p = strndup(path, len);
        if (!p)
                return gap_scope_set_whole(s);  /* the honest answer when we cannot say more */

        for (size_t i = 0; i < s->n; i++) {
                if (strcmp(s->path[i], p) == 0 && (s->recursive[i] || !recursive))
                        return;
                if (s->recursive[i] && path_below(p, s->path[i]))
                        return;
        }
        /* A recursive entry covers what is below it: those go. */
        for (size_t i = 0; i < s->n; i++) {
                if ((recursive && path_below(s->path[i], p)) || strcmp(s->path[i], p) == 0) {
                        s->bytes -= strlen(s->path[i]);
                        free(s->path[i]);
                        continue;
                }
                s->path[k] = s->path[i];
                s->recursive[k++] = s->recursive[i];
        }
        s->n = k;

        if (s->n >= JOURNAL_GAP_MAX_SCOPE || s->bytes + len > GAP_SCOPE_BYTES_MAX)
                return gap_scope_set_whole(s);
        s->path[s->n] = TAKE_PTR(p);
        s->recursive[s->n++] = recursive;
        s->bytes += len;
}

static size_t parent_len(const char *path) {
        const char *slash = strrchr(path, '/');

        if (!slash || slash == path)
                return 1;       /* "/" */
        return (size_t) (slash - path);
}

/*
 * What a lost event leaves to rescan: the directory it happened in (its
 * entries: a file created, changed or deleted there shows in a listing with
 * stat), and a directory that appeared, whole (what it holds is unknown).
 * For the watched directory itself that is its parent, which may lie
 * outside the subscription: a client rescans the part inside.
 */
static void gap_scope_add_event(GapScope *s, uint32_t mask, const char *path, const char *new_path) {
        const char *where = new_path ?: path;

        gap_scope_add(s, path, parent_len(path), false);
        if (new_path)
                gap_scope_add(s, new_path, parent_len(new_path), false);
        if ((mask & JOURNAL_ISDIR) && (new_path || (mask & EVENTS_NEW_OBJECT)))
                gap_scope_add(s, where, strlen(where), true);
}

/* ---------------------------------------------------------------------- */
/* The journal */

void journal_segment_name(uint64_t name, char ret[static SEGMENT_NAME_MAX]) {
        snprintf(ret, SEGMENT_NAME_MAX, SEGMENT_PREFIX "%016" PRIx64, name);
}

static bool segment_name_parse(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        if (strncmp(s, SEGMENT_PREFIX, strlen(SEGMENT_PREFIX)) != 0)
                return false;
        s += strlen(SEGMENT_PREFIX);
        if (strlen(s) != 16)
                return false;
        for (unsigned i = 0; i < 16; i++) {
                int x = unhex(s[i]);

                if (x < 0)
                        return false;
                v = v << 4 | (uint64_t) x;
        }
        *ret = v;
        return true;
}

/* Segment size: an eighth of the cap, so that dropping one keeps most of the history. */
static uint64_t segment_max_for(uint64_t max_bytes) {
        uint64_t s = max_bytes / 8;

        if (s < 8 * 1024)
                s = 8 * 1024;
        if (s > 16 * 1024 * 1024)
                s = 16 * 1024 * 1024;
        return s;
}

static uint64_t frame_max(const Journal *j) {
        uint64_t f = j->segment_max / 2;

        return f < FRAME_WRITE_MAX ? f : FRAME_WRITE_MAX;
}

static void meta_encode(const Journal *j, uint64_t seq, uint64_t ceiling, bool losing, uint8_t slot[static META_SLOT_BYTES]) {
        memset(slot, 0, META_SLOT_BYTES);
        put_le32(slot, META_MAGIC);
        put_le32(slot + 4, META_VERSION);
        put_le32(slot + 8, losing ? META_FLAG_LOSING : 0);
        /* 12..16 reserved */
        memcpy(slot + 16, j->identity.bytes, 16);
        put_le64(slot + 32, seq);
        put_le64(slot + 40, ceiling);
        put_le32(slot + 48, journal_crc32c(0, slot, 48));
}

static bool meta_decode(const uint8_t slot[static META_SLOT_BYTES], JournalId *ret_id,
                        uint64_t *ret_seq, uint64_t *ret_ceiling, bool *ret_losing) {
        uint32_t flags;

        if (get_le32(slot) != META_MAGIC || get_le32(slot + 4) != META_VERSION)
                return false;
        if (get_le32(slot + 48) != journal_crc32c(0, slot, 48))
                return false;
        flags = get_le32(slot + 8);
        if (flags & ~META_FLAG_LOSING)
                return false;
        memcpy(ret_id->bytes, slot + 16, 16);
        *ret_seq = get_le64(slot + 32);
        *ret_ceiling = get_le64(slot + 40);
        *ret_losing = flags & META_FLAG_LOSING;
        return true;
}

/* Writes the older slot in place, and waits for it: ids past the old ceiling are used only after. */
static int meta_write(Journal *j, uint64_t ceiling, bool losing) {
        uint8_t slot[META_SLOT_BYTES];
        uint64_t seq = j->meta_seq + 1;
        ssize_t n;

        meta_encode(j, seq, ceiling, losing, slot);
        n = pwrite(j->meta_fd, slot, sizeof(slot), (off_t) ((seq % 2) * META_SLOT_SIZE));
        if (n < 0)
                return negative_errno();
        if ((size_t) n != sizeof(slot))
                return -ENOSPC;
        if (fdatasync(j->meta_fd) < 0)
                return negative_errno();
        j->meta_seq = seq;
        j->ceiling = ceiling;
        j->meta_losing = losing;
        return 0;
}

/* 0 and the newer valid slot's content; -ENODATA if neither is valid. */
static int meta_read(Journal *j, uint64_t *ret_ceiling, bool *ret_losing) {
        uint8_t buf[2 * META_SLOT_SIZE] = {};
        bool found = false;
        ssize_t n;

        n = pread(j->meta_fd, buf, sizeof(buf), 0);
        if (n < 0)
                return negative_errno();
        for (unsigned i = 0; i < 2; i++) {
                uint64_t seq, ceiling;
                JournalId id;
                bool losing;

                if ((size_t) n < i * META_SLOT_SIZE + META_SLOT_BYTES)
                        continue;
                if (!meta_decode(buf + i * META_SLOT_SIZE, &id, &seq, &ceiling, &losing))
                        continue;
                if (found && seq <= j->meta_seq)
                        continue;
                found = true;
                j->identity = id;
                j->meta_seq = seq;
                *ret_ceiling = ceiling;
                *ret_losing = losing;
        }
        return found ? 0 : -ENODATA;
}

/* A new journal's meta: both slots written whole, so the file's blocks exist before the disk fills up. */
static int meta_create(Journal *j) {
        uint8_t buf[2 * META_SLOT_SIZE] = {};
        ssize_t n;

        if (getrandom(j->identity.bytes, sizeof(j->identity.bytes), 0) != sizeof(j->identity.bytes))
                return negative_errno();
        j->meta_seq = 1;
        meta_encode(j, 0, 1, false, buf);
        meta_encode(j, 1, 1, false, buf + META_SLOT_SIZE);
        n = pwrite(j->meta_fd, buf, sizeof(buf), 0);
        if (n < 0)
                return negative_errno();
        if ((size_t) n != sizeof(buf))
                return -ENOSPC;
        if (fsync(j->meta_fd) < 0)
                return negative_errno();
        j->ceiling = 1;
        j->meta_losing = false;
        return 0;
}

/* Ids up to next_id + count - 1 may be handed out once this returns 0. */
static int journal_reserve(Journal *j, uint64_t count) {
        if (j->next_id + count <= j->ceiling)
                return 0;
        return meta_write(j, j->next_id + count + ID_BLOCK, j->meta_losing);
}

static void segment_header_encode(const Journal *j, uint64_t name, uint64_t prev_id,
                                  uint8_t h[static SEGMENT_HEADER_SIZE]) {
        memset(h, 0, SEGMENT_HEADER_SIZE);
        memcpy(h, SEGMENT_MAGIC, 8);
        put_le32(h + 8, SEGMENT_VERSION);
        put_le32(h + 12, SEGMENT_HEADER_SIZE);
        memcpy(h + 16, j->identity.bytes, 16);
        put_le64(h + 32, name);
        put_le64(h + 40, prev_id);
        /* 48..52 reserved */
        put_le32(h + 52, journal_crc32c(0, h, 52));
}

/* Reads and checks a segment's header: 0 and its prev_id, or -EBADMSG. */
int journal_segment_header_read(const Journal *j, int fd, uint64_t name, uint64_t *ret_prev_id) {
        uint8_t h[SEGMENT_HEADER_SIZE];
        int r;

        r = pread_full(fd, h, sizeof(h), 0);
        if (r == -ENODATA)
                return -EBADMSG;
        if (r < 0)
                return r;
        if (memcmp(h, SEGMENT_MAGIC, 8) != 0 || get_le32(h + 8) != SEGMENT_VERSION ||
            get_le32(h + 12) != SEGMENT_HEADER_SIZE || get_le32(h + 52) != journal_crc32c(0, h, 52) ||
            memcmp(h + 16, j->identity.bytes, 16) != 0 || get_le64(h + 32) != name ||
            get_le64(h + 40) >= name)
                return -EBADMSG;
        *ret_prev_id = get_le64(h + 40);
        return 0;
}

/*
 * Reads the frame at off (before limit) into payload and checks it: its
 * ids must lie after after_id and below end_id (the next segment's name).
 * 1 if valid, 0 if not, -errno on I/O error.
 */
bool journal_frame_header_check(const uint8_t h[static FRAME_HEADER_SIZE], uint64_t off, uint64_t limit,
                                uint64_t after_id, uint64_t end_id, FrameInfo *ret) {
        uint64_t first_id = get_le64(h + 8);
        uint32_t size = get_le32(h + 4), count = get_le32(h + 16);

        if (off > limit || limit - off < FRAME_HEADER_SIZE)
                return false;
        if (get_le32(h) != FRAME_MAGIC || size > FRAME_READ_MAX || size > limit - off - FRAME_HEADER_SIZE ||
            count == 0 || count > size || first_id <= after_id || first_id > UINT64_MAX - count ||
            first_id + count > end_id)
                return false;
        *ret = (FrameInfo) { .first_id = first_id, .count = count, .size = size };
        return true;
}

bool journal_frame_crc_check(const uint8_t h[static FRAME_HEADER_SIZE], const uint8_t *payload, size_t size) {
        uint32_t crc = journal_crc32c(0, h, 20);

        return journal_crc32c(crc, payload, size) == get_le32(h + 20);
}

int journal_frame_read(int fd, uint64_t off, uint64_t limit, uint64_t after_id, uint64_t end_id,
                      Buf *payload, FrameInfo *ret) {
        uint8_t h[FRAME_HEADER_SIZE];
        FrameInfo fi;
        uint32_t size;
        int r;

        if (off > limit || limit - off < FRAME_HEADER_SIZE)
                return 0;
        r = pread_full(fd, h, sizeof(h), off);
        if (r == -ENODATA)
                return 0;
        if (r < 0)
                return r;
        if (!journal_frame_header_check(h, off, limit, after_id, end_id, &fi))
                return 0;
        size = fi.size;

        payload->size = 0;
        r = buf_reserve(payload, size);
        if (r < 0)
                return r;
        r = pread_full(fd, payload->data, size, off + FRAME_HEADER_SIZE);
        if (r == -ENODATA)
                return 0;
        if (r < 0)
                return r;
        if (!journal_frame_crc_check(h, payload->data, size))
                return 0;
        payload->size = size;
        *ret = fi;
        return 1;
}

/*
 * After damage at off: the offset of the next valid frame (whose ids come
 * after after_id) before limit, and 1; or 0 if there is none.
 */
int journal_frame_resync(int fd, uint64_t off, uint64_t limit, uint64_t after_id, uint64_t end_id, Buf *payload,
                        uint64_t *ret_off, FrameInfo *ret) {
        static const uint8_t magic[4] = { 0xf7, 0x57, 0x4a, 0x1f };
        uint8_t chunk[64 * 1024];
        uint64_t pos = off + 1;

        while (pos < limit && limit - pos >= FRAME_HEADER_SIZE) {
                size_t want = (size_t) (limit - pos < sizeof(chunk) ? limit - pos : sizeof(chunk));
                const uint8_t *p = chunk, *hit;
                ssize_t n;

                n = pread(fd, chunk, want, (off_t) pos);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n < (ssize_t) sizeof(magic))
                        return 0;
                while ((hit = memmem(p, (size_t) n - (size_t) (p - chunk), magic, sizeof(magic)))) {
                        uint64_t at = pos + (uint64_t) (hit - chunk);
                        int r = journal_frame_read(fd, at, limit, after_id, end_id, payload, ret);

                        if (r != 0) {
                                if (r > 0)
                                        *ret_off = at;
                                return r;
                        }
                        p = hit + 1;
                }
                /* The magic may straddle two chunks. */
                pos += (uint64_t) n - (sizeof(magic) - 1);
        }
        return 0;
}

typedef struct SegmentScan {
        uint64_t valid_end;     /* where the first run of valid frames ends */
        uint64_t last_id;       /* the newest id in that run (prev_id if none) */
        uint64_t highest_id;    /* the newest id of any valid frame */
        bool damaged;           /* valid frames lie after invalid bytes */
} SegmentScan;

/* The active segment at open: its ids after after_id (the larger of its prev id and its name - 1). */
static int segment_scan(int fd, uint64_t size, uint64_t after_id, SegmentScan *ret) {
        uint64_t off = SEGMENT_HEADER_SIZE, last = after_id;
        Buf payload = {};
        FrameInfo fi;
        int r;

        *ret = (SegmentScan) {};
        for (;;) {
                r = journal_frame_read(fd, off, size, last, UINT64_MAX, &payload, &fi);
                if (r <= 0)
                        break;
                last = fi.first_id + fi.count - 1;
                off += FRAME_HEADER_SIZE + fi.size;
        }
        if (r < 0)
                goto out;
        ret->valid_end = off;
        ret->last_id = last;
        while (off < size) {
                uint64_t at;

                r = journal_frame_resync(fd, off, size, last, UINT64_MAX, &payload, &at, &fi);
                if (r <= 0)
                        break;
                ret->damaged = true;
                last = fi.first_id + fi.count - 1;
                off = at + FRAME_HEADER_SIZE + fi.size;
                /* Valid frames in a row after it. */
                while ((r = journal_frame_read(fd, off, size, last, UINT64_MAX, &payload, &fi)) > 0) {
                        last = fi.first_id + fi.count - 1;
                        off += FRAME_HEADER_SIZE + fi.size;
                }
                if (r < 0)
                        break;
        }
        ret->highest_id = last;
out:
        journal_buf_done(&payload);
        return r < 0 ? r : 0;
}

static uint64_t journal_usage(const Journal *j) {
        uint64_t sum = 2 * META_SLOT_SIZE;

        for (size_t i = 0; i < j->n_segments; i++)
                sum += j->segments[i].size;
        return sum;
}

static int fsync_dir(Journal *j) {
        return fsync(j->dir_fd) < 0 ? negative_errno() : 0;
}

/* A new active segment whose records follow prev_id. */
static int segment_create(Journal *j, uint64_t prev_id) {
        uint8_t h[SEGMENT_HEADER_SIZE];
        char name[SEGMENT_NAME_MAX];
        _cleanup_close_ int fd = -1;
        Segment *last = journal_active(j);
        ssize_t n;
        int r;

        /* Names grow: a segment made before any record of the last one took an id skips one. */
        if (last && j->next_id <= last->name)
                j->next_id = last->name + 1;
        if (j->next_id <= prev_id)
                j->next_id = prev_id + 1;
        r = journal_reserve(j, 1);
        if (r < 0)
                return r;

        if (j->n_segments == j->n_allocated) {
                size_t a = j->n_allocated ? j->n_allocated * 2 : 8;
                Segment *s = reallocarray(j->segments, a, sizeof(Segment));

                if (!s)
                        return -ENOMEM;
                j->segments = s;
                j->n_allocated = a;
        }

        journal_segment_name(j->next_id, name);
        fd = openat(j->dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        segment_header_encode(j, j->next_id, prev_id, h);
        n = pwrite(fd, h, sizeof(h), 0);
        if (n != (ssize_t) sizeof(h)) {
                r = n < 0 ? negative_errno() : -ENOSPC;
                (void) unlinkat(j->dir_fd, name, 0);
                return r;
        }
        (void) fsync_dir(j);

        j->segments[j->n_segments++] = (Segment) { .name = j->next_id, .prev_id = prev_id, .size = SEGMENT_HEADER_SIZE };
        safe_close(j->active_fd);
        j->active_fd = TAKE_FD(fd);
        return 0;
}

static int segment_unlink_oldest(Journal *j) {
        char name[SEGMENT_NAME_MAX];

        assert(j->n_segments > 1);
        journal_segment_name(j->segments[0].name, name);
        if (unlinkat(j->dir_fd, name, 0) < 0 && errno != ENOENT)
                return log_warning_errno(negative_errno(), "Failed to remove journal segment '%s/%s': %m", j->dir, name);
        memmove(j->segments, j->segments + 1, (j->n_segments - 1) * sizeof(Segment));
        j->n_segments--;
        return 0;
}

int journal_drop_oldest(Journal *j) {
        Segment *active = journal_active(j);
        int r;

        if (j->n_segments == 1) {
                if (active->size <= SEGMENT_HEADER_SIZE)
                        return -ENOENT;         /* nothing in it */
                r = segment_create(j, j->last_written);
                if (r < 0)
                        return r;
        }
        return segment_unlink_oldest(j);
}

/* Room is kept for the active segment to grow to its size: the cap holds between rotations too. */
static int journal_enforce_own_cap(Journal *j) {
        while (journal_usage(j) - journal_active(j)->size + j->segment_max > j->max_bytes && j->n_segments > 1) {
                int r = segment_unlink_oldest(j);

                if (r < 0)
                        return r;
        }
        return 0;
}

int journal_set_max_bytes(Journal *j, uint64_t max_bytes) {
        if (max_bytes < JOURNAL_MAX_BYTES_MIN || max_bytes > JOURNAL_MAX_BYTES_MAX)
                return -EINVAL;
        j->max_bytes = max_bytes;
        j->segment_max = segment_max_for(max_bytes);
        return journal_enforce_own_cap(j);
}

int journal_enforce_cap(Journal *const *journals, size_t n, uint64_t cap) {
        for (;;) {
                uint64_t total = 0, biggest_usage = 0;
                Journal *biggest = NULL;

                for (size_t i = 0; i < n; i++) {
                        uint64_t u = journal_usage(journals[i]);

                        total += u;
                        if (u > biggest_usage &&
                            (journals[i]->n_segments > 1 || journal_active(journals[i])->size > SEGMENT_HEADER_SIZE)) {
                                biggest = journals[i];
                                biggest_usage = u;
                        }
                }
                if (total <= cap || !biggest)
                        return 0;
                int r = journal_drop_oldest(biggest);
                if (r < 0)
                        return r;
        }
}

/* Writes one frame of count records; ids are handed out only once it is written. */
static int frame_write(Journal *j, const Buf *payload, uint32_t count) {
        uint8_t h[FRAME_HEADER_SIZE];
        struct iovec iov[2];
        Segment *active = journal_active(j);
        uint64_t total = FRAME_HEADER_SIZE + payload->size;
        ssize_t n;
        int r;

        if (active->size > SEGMENT_HEADER_SIZE && active->size + total > j->segment_max) {
                r = segment_create(j, j->last_written);
                if (r < 0)
                        return r;
                active = journal_active(j);
                r = journal_enforce_own_cap(j);
                if (r < 0)
                        return r;
                active = journal_active(j);
        }
        r = journal_reserve(j, count);
        if (r < 0)
                return r;

        put_le32(h, FRAME_MAGIC);
        put_le32(h + 4, (uint32_t) payload->size);
        put_le64(h + 8, j->next_id);
        put_le32(h + 16, count);
        put_le32(h + 20, journal_crc32c(journal_crc32c(0, h, 20), payload->data, payload->size));
        iov[0] = (struct iovec) { .iov_base = h, .iov_len = sizeof(h) };
        iov[1] = (struct iovec) { .iov_base = payload->data, .iov_len = payload->size };

        n = pwritev(j->active_fd, iov, 2, (off_t) active->size);
        if (n >= 0 && (uint64_t) n < total) {
                /* A short write: the rest tells why (ENOSPC, EDQUOT, EFBIG), or goes through. */
                uint64_t done = (uint64_t) n;
                ssize_t m;

                if (done < sizeof(h))
                        m = pwrite(j->active_fd, h + done, sizeof(h) - done, (off_t) (active->size + done));
                else
                        m = pwrite(j->active_fd, payload->data + (done - sizeof(h)), total - done,
                                   (off_t) (active->size + done));
                if (m > 0)
                        n += m;
                else if (m < 0)
                        n = -1;
        }
        if (n < 0 || (uint64_t) n != total) {
                r = n < 0 ? negative_errno() : -ENOSPC;
                /* What was written stays past the end: the next frame overwrites it, the next open cuts it. */
                (void) ftruncate(j->active_fd, (off_t) active->size);
                return r;
        }
        active->size += total;
        j->last_written = j->next_id + count - 1;
        j->next_id += count;
        return 0;
}

/* Folds the records of the unwritten frame into the lost scope. */
static void journal_lose_frame(Journal *j, int error) {
        Decoder d = {};

        if (!j->losing) {
                log_warning_errno(error, "Failed to write to journal '%s': %m; the records lost will be "
                                  "reported as a gap once it can be written", j->dir);
                j->losing = true;
                if (!j->meta_losing)
                        (void) meta_write(j, j->ceiling, true);
        }

        journal_decoder_start(&d, j->frame.data, j->frame.size);
        for (uint32_t i = 0; i < j->frame_count; i++) {
                JournalEntry e = {};

                if (journal_decode_record(&d, &e) < 0) {
                        gap_scope_set_whole(&j->lost);
                        break;
                }
                if (e.type == JOURNAL_ENTRY_EVENT)
                        gap_scope_add_event(&j->lost, e.mask, e.path, e.new_path);
                else if (e.whole)
                        gap_scope_set_whole(&j->lost);
                else
                        for (size_t k = 0; k < e.n_scope; k++)
                                gap_scope_add(&j->lost, e.scope[k].path, strlen(e.scope[k].path), e.scope[k].recursive);
        }
        journal_decoder_done(&d);
        j->frame.size = 0;
        j->frame_count = 0;
        j->prev.size = 0;
}

static int scope_compare(const void *a, const void *b) {
        return strcmp(((const JournalScope *) a)->path, ((const JournalScope *) b)->path);
}

/* The lost records' gap, before anything newer. */
static int journal_write_lost(Journal *j) {
        _cleanup_free_ JournalScope *scope = NULL;
        Buf payload = {}, prev = {};
        int r;

        if (!j->losing)
                return 0;
        if (!j->lost.whole) {
                scope = calloc(j->lost.n ?: 1, sizeof(JournalScope));
                if (!scope)
                        return -ENOMEM;
                for (size_t i = 0; i < j->lost.n; i++)
                        scope[i] = (JournalScope) { .path = j->lost.path[i], .recursive = j->lost.recursive[i] };
                /* In byte order: the same loss reads the same whatever record came first. */
                qsort(scope, j->lost.n, sizeof(JournalScope), scope_compare);
        }
        r = encode_gap(&payload, &prev, JOURNAL_GAP_DISK_FULL, j->lost.whole || j->lost.n == 0, scope, j->lost.n);
        if (r >= 0)
                r = frame_write(j, &payload, 1);
        journal_buf_done(&payload);
        journal_buf_done(&prev);
        if (r < 0)
                return r;

        log_notice("Journal '%s' is written again; the records lost are reported as a gap (id %" PRIu64 ")",
                   j->dir, j->last_written);
        j->losing = false;
        gap_scope_clear(&j->lost);
        (void) meta_write(j, j->ceiling, false);
        return 0;
}

int journal_flush(Journal *j) {
        int r;

        r = journal_write_lost(j);
        if (r >= 0 && j->frame_count > 0) {
                r = frame_write(j, &j->frame, j->frame_count);
                if (r >= 0) {
                        j->frame.size = 0;
                        j->frame_count = 0;
                        j->prev.size = 0;
                }
        }
        if (r < 0 && j->frame_count > 0)
                journal_lose_frame(j, r);
        return r;
}

static int check_path(const char *path) {
        size_t l;

        if (!path || path[0] != '/')
                return -EINVAL;
        l = strlen(path);
        if (l > JOURNAL_PATH_MAX)
                return -ENAMETOOLONG;
        return 0;
}

/* After a record is buffered: a full frame goes out. */
static int journal_frame_done(Journal *j) {
        j->frame_count++;
        if (j->frame.size >= frame_max(j))
                (void) journal_flush(j);        /* a failure is a gap now, reported then */
        return 0;
}

int journal_append_event(Journal *j, uint32_t mask, uint32_t cookie, const char *path, const char *new_path) {
        size_t before = j->frame.size;
        int r;

        r = check_path(path);
        if (r >= 0 && new_path)
                r = check_path(new_path);
        if (r < 0)
                return r;

        r = encode_event(&j->frame, &j->prev, mask, cookie, path, new_path);
        if (r < 0) {
                j->frame.size = before;
                j->prev.size = 0;       /* the next record is encoded against "" : still valid */
                gap_scope_add_event(&j->lost, mask, path, new_path);
                journal_lose_frame(j, r);
                return 0;
        }
        return journal_frame_done(j);
}

int journal_append_gap(Journal *j, JournalGapReason reason, bool whole, const JournalScope *scope, size_t n) {
        size_t before = j->frame.size;
        int r;

        if (reason == 0 || (!whole && (n == 0 || !scope)))
                return -EINVAL;
        if (!whole && n > JOURNAL_GAP_MAX_SCOPE)
                whole = true;
        for (size_t i = 0; !whole && i < n; i++) {
                r = check_path(scope[i].path);
                if (r < 0)
                        return r;
        }

        r = encode_gap(&j->frame, &j->prev, reason, whole, scope, whole ? 0 : n);
        if (r < 0) {
                j->frame.size = before;
                j->prev.size = 0;
                gap_scope_set_whole(&j->lost);
                journal_lose_frame(j, r);
                return 0;
        }
        return journal_frame_done(j);
}

bool journal_is_losing(const Journal *j) {
        return j->losing;
}

uint64_t journal_last_id(const Journal *j) {
        return j->next_id - 1;
}

const JournalId *journal_identity(const Journal *j) {
        return &j->identity;
}

void journal_stats(const Journal *j, JournalStats *ret) {
        *ret = (JournalStats) {
                .oldest_cursor = j->n_segments > 0 ? j->segments[0].prev_id : 0,
                .last_id = journal_last_id(j),
                .bytes = journal_usage(j),
                .segments = (unsigned) j->n_segments,
                .losing = j->losing,
        };
}

static int segment_compare(const void *a, const void *b) {
        const Segment *x = a, *y = b;

        return x->name < y->name ? -1 : x->name > y->name;
}

/* Reads the directory's segments, oldest first; those whose header is damaged are removed. */
static int journal_load_segments(Journal *j, bool *ret_damaged) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r;

        r = fdopendir_take(openat(j->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), &d);
        if (r < 0)
                return r;

        while ((errno = 0, de = readdir(d))) {
                _cleanup_close_ int sfd = -1;
                uint64_t name, prev_id;
                struct stat st;

                if (!segment_name_parse(de->d_name, &name))
                        continue;
                sfd = openat(j->dir_fd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (sfd < 0)
                        return negative_errno();
                if (fstat(sfd, &st) < 0)
                        return negative_errno();
                r = S_ISREG(st.st_mode) ? journal_segment_header_read(j, sfd, name, &prev_id) : -EBADMSG;
                if (r == -EBADMSG) {
                        log_warning("Journal segment '%s/%s' has no valid header: removed, reported as a gap",
                                    j->dir, de->d_name);
                        if (unlinkat(j->dir_fd, de->d_name, 0) < 0)
                                return negative_errno();
                        *ret_damaged = true;
                        continue;
                }
                if (r < 0)
                        return r;

                if (j->n_segments == j->n_allocated) {
                        size_t a = j->n_allocated ? j->n_allocated * 2 : 8;
                        Segment *s = reallocarray(j->segments, a, sizeof(Segment));

                        if (!s)
                                return -ENOMEM;
                        j->segments = s;
                        j->n_allocated = a;
                }
                j->segments[j->n_segments++] = (Segment) {
                        .name = name, .prev_id = prev_id, .size = (uint64_t) st.st_size,
                };
        }
        if (errno != 0)
                return negative_errno();

        if (j->n_segments > 1)
                qsort(j->segments, j->n_segments, sizeof(Segment), segment_compare);
        return 0;
}

/* A journal whose meta is unreadable cannot vouch for its ids: its segments go, a new identity comes. */
static int journal_remove_segments(Journal *j, bool *ret_any) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r;

        r = fdopendir_take(openat(j->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), &d);
        if (r < 0)
                return r;
        while ((errno = 0, de = readdir(d))) {
                uint64_t name;

                if (!segment_name_parse(de->d_name, &name))
                        continue;
                if (unlinkat(j->dir_fd, de->d_name, 0) < 0)
                        return negative_errno();
                *ret_any = true;
        }
        return errno != 0 ? negative_errno() : 0;
}

/* Frees without any I/O but closing: for a journal that did not open. */
static Journal *journal_release(Journal *j) {
        if (!j)
                return NULL;
        safe_close(j->active_fd);
        safe_close(j->meta_fd);
        safe_close(j->dir_fd);
        journal_buf_done(&j->frame);
        journal_buf_done(&j->prev);
        gap_scope_clear(&j->lost);
        free(j->segments);
        free(j->dir);
        free(j);
        return NULL;
}

/* Opens (or makes) the journal's files for a Journal that has its fields set. */
static int journal_load(Journal *j, const char *dir) {
        bool damaged = false, cut = false, losing = false, new_segment = false;
        uint64_t ceiling = 0;
        int r;

        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        j->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (j->dir_fd < 0)
                return negative_errno();
        j->meta_fd = openat(j->dir_fd, META_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (j->meta_fd < 0)
                return negative_errno();
        if (flock(j->meta_fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EBUSY : negative_errno();

        r = meta_read(j, &ceiling, &losing);
        if (r == -ENODATA) {
                bool any = false;

                r = journal_remove_segments(j, &any);
                if (r < 0)
                        return r;
                if (any)
                        log_warning("Journal '%s' has no valid meta file: its history is dropped, "
                                    "a new identity makes every cursor foreign", dir);
                r = meta_create(j);
                if (r < 0)
                        return r;
                ceiling = j->ceiling;
        } else if (r < 0)
                return r;
        j->ceiling = ceiling;
        j->meta_losing = losing;
        j->next_id = ceiling > 0 ? ceiling : 1;

        r = journal_load_segments(j, &damaged);
        if (r < 0)
                return r;

        if (j->n_segments > 0) {
                Segment *active = journal_active(j);
                char name[SEGMENT_NAME_MAX];
                SegmentScan scan;

                journal_segment_name(active->name, name);
                j->active_fd = openat(j->dir_fd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
                if (j->active_fd < 0)
                        return negative_errno();
                /* Its records' ids are at least its name (a journal we wrote), whatever meta says. */
                if (j->next_id < active->name)
                        j->next_id = active->name;
                r = segment_scan(j->active_fd, active->size, max_u64(active->prev_id, active->name - 1), &scan);
                if (r < 0)
                        return r;
                if (scan.damaged) {
                        /* Valid frames after damage: a reader reports it; writing goes on in a new segment. */
                        log_warning("Journal segment '%s/%s' is damaged at offset %" PRIu64 ": readers will report a gap",
                                    dir, name, scan.valid_end);
                        j->last_written = scan.highest_id;
                        damaged = new_segment = true;
                } else {
                        if (scan.valid_end < active->size) {
                                log_warning("Journal segment '%s/%s' ends in %" PRIu64 " bytes of a torn write: cut, reported as a gap",
                                            dir, name, active->size - scan.valid_end);
                                if (ftruncate(j->active_fd, (off_t) scan.valid_end) < 0)
                                        return negative_errno();
                                active->size = scan.valid_end;
                                cut = true;
                        }
                        j->last_written = scan.last_id;
                }
                if (j->next_id <= j->last_written)
                        j->next_id = j->last_written + 1;
        }

        /* This run's ids start here: a block of them reserved before any is handed out. */
        r = meta_write(j, j->next_id + ID_BLOCK, losing);
        if (r < 0)
                return r;

        if (j->n_segments == 0)
                /* Nothing before it can be vouched for: a cursor below next_id - 1 lost its history. */
                r = segment_create(j, j->next_id - 1);
        else if (new_segment)
                r = segment_create(j, j->last_written);
        if (r < 0)
                return r;

        if (cut || damaged) {
                r = journal_append_gap(j, JOURNAL_GAP_CORRUPT, true, NULL, 0);
                if (r < 0)
                        return r;
        }
        if (losing) {
                /* It stopped while losing records: their gap was never written. */
                r = journal_append_gap(j, JOURNAL_GAP_DISK_FULL, true, NULL, 0);
                if (r < 0)
                        return r;
        }
        if (journal_flush(j) >= 0 && j->meta_losing && !j->losing)
                (void) meta_write(j, j->ceiling, false);

        return journal_enforce_own_cap(j);
}

int journal_open(const char *dir, uint64_t max_bytes, Journal **ret) {
        Journal *j;     /* freed by hand: cppcheck does not know _cleanup_ and would call it a leak */
        int r;

        if (max_bytes < JOURNAL_MAX_BYTES_MIN || max_bytes > JOURNAL_MAX_BYTES_MAX)
                return -EINVAL;

        j = calloc(1, sizeof(Journal));
        if (!j)
                return -ENOMEM;
        j->dir_fd = j->meta_fd = j->active_fd = -1;
        j->max_bytes = max_bytes;
        j->segment_max = segment_max_for(max_bytes);
        j->dir = strdup(dir);
        r = j->dir ? journal_load(j, dir) : -ENOMEM;
        if (r < 0) {
                journal_release(j);
                return r;
        }
        *ret = j;
        return 0;
}

Journal *journal_free(Journal *j) {
        if (!j)
                return NULL;
        assert(j->n_readers == 0);

        (void) journal_flush(j);
        if (!j->losing) {
                /* A clean stop: the next start goes on at next_id, skipping none. */
                if (fdatasync(j->active_fd) < 0)
                        log_warning_errno(negative_errno(), "Failed to sync journal '%s', ignoring: %m", j->dir);
                else
                        (void) meta_write(j, j->next_id, false);
        }
        return journal_release(j);
}
