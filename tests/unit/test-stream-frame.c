/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-stream-frame - the record stream's framing (watchd-stream(5))
 *
 * A table of byte strings written by hand from the specification, each with
 * what the decoder must make of it: a frame and its fields, "more bytes",
 * or -EBADMSG. The well-formed ones are encoded again from what was decoded
 * and must come out byte for byte (so the encoder writes what the manual
 * says, not merely what the decoder reads). Then: every strict prefix of a
 * good frame asks for more bytes and is never taken for a malformed one;
 * the encoder's refusals; and the reader, fed a whole stream in chunks of
 * every size from 1 byte up, returns the same frames as decoding it at once.
 */

#include <errno.h>
#include <glib.h>
#include <string.h>

#include "stream_frame.h"

#define B(s) .bytes = (const uint8_t *) (s), .len = sizeof(s) - 1

/* u32/u16 little-endian, as string pieces */
#define U32(a, b, c, d) "\x" #a "\x" #b "\x" #c "\x" #d

typedef struct Case {
        const char *what;
        const uint8_t *bytes;
        size_t len;
        int r; /* frame size, 0 (more bytes) or -errno */
        uint16_t type;
        uint32_t id, mask, cookie;
        const char *path, *new_path, *reason;
        size_t n_ids;
        uint32_t ids[3];
        bool has_cursor;
        uint64_t cursor;
        unsigned n_unknown;
        bool roundtrip; /* encoding the decoded frame gives the bytes back */
} Case;

/* The prefix of a frame: size, type, reserved. */
/* clang-format off */
#define EVENT_A_BYTES                                                                   \
        "\x20\x00\x00\x00" "\x01\x00" "\x00\x00"                                        \
        "\x01\x00\x00\x00" "\x00\x01\x00\x00" "\x00\x00\x00\x00"                        \
        "\x02\x00\x00\x00" "\x00\x00\x00\x00" "/a" "\x00" "\x00"

#define RENAME_BYTES                                                                    \
        "\x26\x00\x00\x00" "\x01\x00" "\x00\x00"                                        \
        "\x07\x00\x00\x00" "\xc0\x00\x00\x40" "\x05\x00\x00\x00"                        \
        "\x04\x00\x00\x00" "\x04\x00\x00\x00" "/d/x" "\x00" "/d/y" "\x00"

#define OVERFLOW_BYTES                                                                  \
        "\x14\x00\x00\x00" "\x02\x00" "\x00\x00"                                        \
        "\x02\x00\x00\x00" "\x03\x00\x00\x00" "\x09\x00\x00\x00"

#define REMOVED_BYTES                                                                   \
        "\x18\x00\x00\x00" "\x03\x00" "\x00\x00"                                        \
        "\x04\x00\x00\x00" "\x07\x00\x00\x00" "deleted" "\x00"

#define CURSOR_BYTES                                                                    \
        "\x2c\x00\x00\x00" "\x01\x00" "\x00\x00"                                        \
        "\x01\x00\x00\x00" "\x00\x01\x00\x00" "\x00\x00\x00\x00"                        \
        "\x02\x00\x00\x00" "\x00\x00\x00\x00" "/a" "\x00" "\x00"                        \
        "\x01\x00" "\x08\x00" "\x88\x77\x66\x55\x44\x33\x22\x11"

/* A path that is not UTF-8 travels as it is. */
#define BYTES_BYTES                                                                     \
        "\x21\x00\x00\x00" "\x01\x00" "\x00\x00"                                        \
        "\x02\x00\x00\x00" "\x08\x00\x00\x00" "\x00\x00\x00\x00"                        \
        "\x03\x00\x00\x00" "\x00\x00\x00\x00" "/\xff\x0a" "\x00" "\x00"

static const Case cases[] = {
        { "an event", B(EVENT_A_BYTES), 32, STREAM_FRAME_EVENT, 1, 0x100, 0, "/a", "", .roundtrip = true },
        { "a paired rename of a directory", B(RENAME_BYTES), 38, STREAM_FRAME_EVENT, 7, 0x400000c0, 5,
          "/d/x", "/d/y", .roundtrip = true },
        { "a path that is not UTF-8, with a newline", B(BYTES_BYTES), 33, STREAM_FRAME_EVENT, 2, 0x8, 0,
          "/\xff\n", "", .roundtrip = true },
        { "an overflow", B(OVERFLOW_BYTES), 20, STREAM_FRAME_OVERFLOW, .n_ids = 2, .ids = { 3, 9 },
          .roundtrip = true },
        { "an overflow naming nothing (the kernel lost events before any subscription)",
          B("\x0c\x00\x00\x00" "\x02\x00" "\x00\x00" "\x00\x00\x00\x00"), 12, STREAM_FRAME_OVERFLOW,
          .roundtrip = true },
        { "a removal", B(REMOVED_BYTES), 24, STREAM_FRAME_REMOVED, 4, .reason = "deleted", .roundtrip = true },
        { "an event with its journal cursor", B(CURSOR_BYTES), 44, STREAM_FRAME_EVENT, 1, 0x100, 0, "/a", "",
          .has_cursor = true, .cursor = UINT64_C(0x1122334455667788), .roundtrip = true },
        { "a field this decoder does not know is skipped",
          B("\x27\x00\x00\x00" "\x01\x00" "\x00\x00"
            "\x01\x00\x00\x00" "\x00\x01\x00\x00" "\x00\x00\x00\x00"
            "\x02\x00\x00\x00" "\x00\x00\x00\x00" "/a" "\x00" "\x00"
            "\x99\x00" "\x03\x00" "xyz"), 39, STREAM_FRAME_EVENT, 1, 0x100, 0, "/a", "", .n_unknown = 1 },
        { "a cursor on an overflow (a newer daemon's) is read too",
          B("\x18\x00\x00\x00" "\x02\x00" "\x00\x00" "\x00\x00\x00\x00"
            "\x01\x00" "\x08\x00" "\x01\x00\x00\x00\x00\x00\x00\x00"), 24, STREAM_FRAME_OVERFLOW,
          .has_cursor = true, .cursor = 1 },
        { "a frame type this decoder does not know is skipped whole",
          B("\x0c\x00\x00\x00" "\x77\x00" "\x00\x00" "junk"), 12, 0x77 },
        { "reserved bits are ignored",
          B("\x0c\x00\x00\x00" "\x02\x00" "\xff\xff" "\x00\x00\x00\x00"), 12, STREAM_FRAME_OVERFLOW },
        { "only the first frame is decoded", B(OVERFLOW_BYTES REMOVED_BYTES), 20, STREAM_FRAME_OVERFLOW,
          .n_ids = 2, .ids = { 3, 9 } },

        { "nothing yet", B(""), 0 },
        { "three bytes of a size", B("\x20\x00\x00"), 0 },
        { "a frame one byte short", .bytes = (const uint8_t *) EVENT_A_BYTES, .len = 31, 0 },

        { "a size below the prefix", B("\x07\x00\x00\x00"), -EBADMSG },
        { "a size over the maximum is refused before it is read", B("\x01\x00\x10\x00"), -EBADMSG },
        { "type 0", B("\x08\x00\x00\x00" "\x00\x00" "\x00\x00"), -EBADMSG },
        { "an event shorter than its fixed part",
          B("\x0c\x00\x00\x00" "\x01\x00" "\x00\x00" "\x01\x00\x00\x00"), -EBADMSG },
        { "a path longer than its frame",
          B("\x20\x00\x00\x00" "\x01\x00" "\x00\x00"
            "\x01\x00\x00\x00" "\x00\x01\x00\x00" "\x00\x00\x00\x00"
            "\x03\x00\x00\x00" "\x00\x00\x00\x00" "/a" "\x00" "\x00"), -EBADMSG },
        { "a path length that wraps",
          B("\x20\x00\x00\x00" "\x01\x00" "\x00\x00"
            "\x01\x00\x00\x00" "\x00\x01\x00\x00" "\x00\x00\x00\x00"
            "\xff\xff\xff\xff" "\x00\x00\x00\x00" "/a" "\x00" "\x00"), -EBADMSG },
        { "a path without its NUL",
          B("\x20\x00\x00\x00" "\x01\x00" "\x00\x00"
            "\x01\x00\x00\x00" "\x00\x01\x00\x00" "\x00\x00\x00\x00"
            "\x02\x00\x00\x00" "\x00\x00\x00\x00" "/ab" "\x00"), -EBADMSG },
        { "a path holding a NUL",
          B("\x20\x00\x00\x00" "\x01\x00" "\x00\x00"
            "\x01\x00\x00\x00" "\x00\x01\x00\x00" "\x00\x00\x00\x00"
            "\x02\x00\x00\x00" "\x00\x00\x00\x00" "/" "\x00" "\x00" "\x00"), -EBADMSG },
        { "a new path without its NUL",
          B("\x20\x00\x00\x00" "\x01\x00" "\x00\x00"
            "\x01\x00\x00\x00" "\x00\x01\x00\x00" "\x00\x00\x00\x00"
            "\x02\x00\x00\x00" "\x01\x00\x00\x00" "/a" "\x00" "b"), -EBADMSG },
        { "an overflow counting more ids than it holds",
          B("\x14\x00\x00\x00" "\x02\x00" "\x00\x00"
            "\x03\x00\x00\x00" "\x03\x00\x00\x00" "\x09\x00\x00\x00"), -EBADMSG },
        { "an overflow count that wraps when multiplied",
          B("\x14\x00\x00\x00" "\x02\x00" "\x00\x00"
            "\x01\x00\x00\x40" "\x03\x00\x00\x00" "\x09\x00\x00\x00"), -EBADMSG },
        { "an overflow naming an id twice",
          B("\x14\x00\x00\x00" "\x02\x00" "\x00\x00"
            "\x02\x00\x00\x00" "\x03\x00\x00\x00" "\x03\x00\x00\x00"), -EBADMSG },
        { "an overflow whose ids go down",
          B("\x14\x00\x00\x00" "\x02\x00" "\x00\x00"
            "\x02\x00\x00\x00" "\x09\x00\x00\x00" "\x03\x00\x00\x00"), -EBADMSG },
        { "a removal whose reason runs past its frame",
          B("\x18\x00\x00\x00" "\x03\x00" "\x00\x00"
            "\x04\x00\x00\x00" "\x08\x00\x00\x00" "deleted" "\x00"), -EBADMSG },
        { "a field's header cut by the end of the frame",
          B("\x0e\x00\x00\x00" "\x02\x00" "\x00\x00" "\x00\x00\x00\x00" "\x01\x00"), -EBADMSG },
        { "a field longer than what is left",
          B("\x14\x00\x00\x00" "\x02\x00" "\x00\x00" "\x00\x00\x00\x00"
            "\x01\x00" "\x08\x00" "\x01\x00\x00\x00"), -EBADMSG },
        { "a cursor of the wrong length",
          B("\x14\x00\x00\x00" "\x02\x00" "\x00\x00" "\x00\x00\x00\x00"
            "\x01\x00" "\x04\x00" "\x01\x00\x00\x00"), -EBADMSG },
        { "two cursors",
          B("\x24\x00\x00\x00" "\x02\x00" "\x00\x00" "\x00\x00\x00\x00"
            "\x01\x00" "\x08\x00" "\x01\x00\x00\x00\x00\x00\x00\x00"
            "\x01\x00" "\x08\x00" "\x02\x00\x00\x00\x00\x00\x00\x00"), -EBADMSG },
};
/* clang-format on */

static void check_frame(const Case *c, const StreamFrame *f) {
        g_assert_cmpuint(f->type, ==, c->type);
        g_assert_cmpuint(f->size, ==, (uint32_t) c->r);
        if (c->type == STREAM_FRAME_EVENT || c->type == STREAM_FRAME_REMOVED)
                g_assert_cmpuint(f->id, ==, c->id);
        if (c->type == STREAM_FRAME_EVENT) {
                g_assert_cmpuint(f->mask, ==, c->mask);
                g_assert_cmpuint(f->cookie, ==, c->cookie);
                /* In place and NUL-terminated: usable as C strings. */
                g_assert_cmpstr(f->path, ==, c->path);
                g_assert_cmpuint(f->path_len, ==, strlen(c->path));
                g_assert_cmpstr(f->new_path, ==, c->new_path);
                g_assert_cmpuint(f->new_path_len, ==, strlen(c->new_path));
                g_assert_true((const uint8_t *) f->path > c->bytes && (const uint8_t *) f->path < c->bytes + c->len);
        }
        if (c->type == STREAM_FRAME_OVERFLOW) {
                g_assert_cmpuint(f->n_ids, ==, c->n_ids);
                for (size_t i = 0; i < c->n_ids; i++)
                        g_assert_cmpuint(stream_frame_overflow_id(f, i), ==, c->ids[i]);
        }
        if (c->type == STREAM_FRAME_REMOVED) {
                g_assert_cmpstr(f->reason, ==, c->reason);
                g_assert_cmpuint(f->reason_len, ==, strlen(c->reason));
        }
        g_assert_cmpint(f->fields.has_cursor, ==, c->has_cursor);
        if (c->has_cursor)
                g_assert_cmpuint(f->fields.cursor, ==, c->cursor);
        g_assert_cmpuint(f->n_unknown_fields, ==, c->n_unknown);
}

/* The frame f encoded again, into buf. */
static int encode_again(const StreamFrame *f, uint8_t *buf, size_t size) {
        uint32_t ids[8];

        switch (f->type) {
        case STREAM_FRAME_EVENT:
                return stream_frame_encode_event(buf, size, f->id, f->mask, f->cookie, f->path, f->path_len,
                                                 f->new_path, f->new_path_len, &f->fields);
        case STREAM_FRAME_OVERFLOW:
                g_assert_cmpuint(f->n_ids, <=, G_N_ELEMENTS(ids));
                for (size_t i = 0; i < f->n_ids; i++)
                        ids[i] = stream_frame_overflow_id(f, i);
                return stream_frame_encode_overflow(buf, size, ids, f->n_ids);
        case STREAM_FRAME_REMOVED:
                return stream_frame_encode_removed(buf, size, f->id, f->reason, f->reason_len);
        }
        g_assert_not_reached();
}

static void test_table(void) {
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                const Case *c = &cases[i];
                StreamFrame f;
                int r;

                g_test_message("%s", c->what);
                memset(&f, 0xaa, sizeof f);
                r = stream_frame_decode(c->bytes, c->len, &f);
                g_assert_cmpint(r, ==, c->r);
                if (r <= 0)
                        continue;
                check_frame(c, &f);
                if (c->roundtrip) {
                        uint8_t buf[256];

                        g_assert_cmpint(encode_again(&f, buf, sizeof buf), ==, c->r);
                        g_assert_cmpmem(buf, (size_t) c->r, c->bytes, (size_t) c->r);
                        /* The sizes the encoder's callers use to make room agree. */
                        if (f.type == STREAM_FRAME_EVENT)
                                g_assert_cmpuint(stream_frame_event_size(f.path_len, f.new_path_len, &f.fields), ==,
                                                 (size_t) c->r);
                }
        }
}

/* A frame cut anywhere before its end asks for more, never says malformed. */
static void test_prefixes(void) {
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                const Case *c = &cases[i];

                if (c->r <= 0)
                        continue;
                for (size_t k = 0; k < (size_t) c->r; k++) {
                        StreamFrame f;

                        g_assert_cmpint(stream_frame_decode(c->bytes, k, &f), ==, 0);
                }
        }
}

static void test_header(void) {
        /* clang-format off */
        static const struct {
                const char *what;
                const char *bytes;
                size_t len;
                int r;
                uint16_t version;
        } h[] = {
                { "version 1",                  "WDST\x01\x00\x08\x00",              8, 8, 1 },
                { "followed by a frame",        "WDST\x01\x00\x08\x00\x20",          9, 8, 1 },
                { "a longer header (a newer minor revision): the rest is skipped",
                                                "WDST\x01\x00\x0c\x00" "abcd",      12, 12, 1 },
                { "the longer header, not all here", "WDST\x01\x00\x0c\x00" "ab",   10, 0 },
                { "nothing yet",                "",                                  0, 0 },
                { "half the magic",             "WD",                                2, 0 },
                { "a wrong magic is told at once", "XD",                             2, -EBADMSG },
                { "another stream",             "WDSX\x01\x00\x08\x00",              8, -EBADMSG },
                { "version 0",                  "WDST\x00\x00\x08\x00",              8, -EBADMSG },
                { "a version this decoder does not know", "WDST\x02\x00\x08\x00",   8, -EPROTONOSUPPORT },
                { "a header shorter than version 1's", "WDST\x01\x00\x07\x00",      8, -EBADMSG },
                { "a header over the maximum",  "WDST\x01\x00\x01\x10",              8, -EBADMSG },
        };
        /* clang-format on */
        uint8_t buf[STREAM_FRAME_HEADER_SIZE];

        for (size_t i = 0; i < G_N_ELEMENTS(h); i++) {
                uint16_t v = 0;

                g_test_message("%s", h[i].what);
                g_assert_cmpint(stream_frame_header_decode(h[i].bytes, h[i].len, &v), ==, h[i].r);
                if (h[i].r > 0)
                        g_assert_cmpuint(v, ==, h[i].version);
        }
        g_assert_cmpuint(stream_frame_header_encode(buf, 1), ==, STREAM_FRAME_HEADER_SIZE);
        g_assert_cmpmem(buf, sizeof buf, "WDST\x01\x00\x08\x00", 8);
}

static void test_encode_refusals(void) {
        g_autofree uint8_t *big = g_malloc(STREAM_FRAME_MAX + 64);
        g_autofree char *path = g_malloc(STREAM_FRAME_MAX);
        g_autofree uint32_t *ids = g_new(uint32_t, STREAM_FRAME_OVERFLOW_MAX_IDS + 1);
        size_t longest = STREAM_FRAME_MAX - STREAM_FRAME_PREFIX_SIZE - STREAM_FRAME_EVENT_FIXED - 2;
        uint8_t buf[64];

        memset(path, 'x', STREAM_FRAME_MAX);
        /* One byte short of room. */
        g_assert_cmpint(stream_frame_encode_event(buf, 31, 1, 0x100, 0, "/a", 2, NULL, 0, NULL), ==, -ENOBUFS);
        g_assert_cmpint(stream_frame_encode_event(buf, 32, 1, 0x100, 0, "/a", 2, NULL, 0, NULL), ==, 32);
        g_assert_cmpint(stream_frame_encode_overflow(buf, 19, (const uint32_t[]) { 3, 9 }, 2), ==, -ENOBUFS);
        g_assert_cmpint(stream_frame_encode_removed(buf, 23, 4, "deleted", 7), ==, -ENOBUFS);
        /* A NUL in a path or reason, ids out of order. */
        g_assert_cmpint(stream_frame_encode_event(buf, sizeof buf, 1, 0x100, 0, "/\0a", 3, NULL, 0, NULL), ==, -EINVAL);
        g_assert_cmpint(stream_frame_encode_event(buf, sizeof buf, 1, 0xc0, 1, "/a", 2, "/\0", 2, NULL), ==, -EINVAL);
        g_assert_cmpint(stream_frame_encode_overflow(buf, sizeof buf, (const uint32_t[]) { 9, 3 }, 2), ==, -EINVAL);
        g_assert_cmpint(stream_frame_encode_overflow(buf, sizeof buf, (const uint32_t[]) { 3, 3 }, 2), ==, -EINVAL);
        g_assert_cmpint(stream_frame_encode_removed(buf, sizeof buf, 4, "a\0b", 3), ==, -EINVAL);

        /* The longest event, and one byte more; it decodes. */
        g_assert_cmpint(stream_frame_encode_event(big, STREAM_FRAME_MAX + 64, 1, 2, 3, path, longest, NULL, 0, NULL),
                        ==, (int) STREAM_FRAME_MAX);
        {
                StreamFrame f;

                g_assert_cmpint(stream_frame_decode(big, STREAM_FRAME_MAX, &f), ==, (int) STREAM_FRAME_MAX);
                g_assert_cmpuint(f.path_len, ==, longest);
        }
        g_assert_cmpint(stream_frame_encode_event(big, STREAM_FRAME_MAX + 64, 1, 2, 3, path, longest + 1, NULL, 0, NULL),
                        ==, -E2BIG);
        g_assert_cmpint(stream_frame_encode_event(big, STREAM_FRAME_MAX + 64, 1, 2, 3, path, SIZE_MAX - 1, NULL, 0, NULL),
                        ==, -E2BIG);
        g_assert_cmpint(stream_frame_encode_removed(big, STREAM_FRAME_MAX + 64, 1, path, STREAM_FRAME_MAX), ==, -E2BIG);

        /* The most ids one overflow frame holds, and one more. */
        for (uint32_t i = 0; i <= STREAM_FRAME_OVERFLOW_MAX_IDS; i++)
                ids[i] = i + 1;
        g_assert_cmpint(stream_frame_encode_overflow(big, STREAM_FRAME_MAX + 64, ids, STREAM_FRAME_OVERFLOW_MAX_IDS), >,
                        0);
        g_assert_cmpint(stream_frame_encode_overflow(big, STREAM_FRAME_MAX + 64, ids, STREAM_FRAME_OVERFLOW_MAX_IDS + 1),
                        ==, -E2BIG);
}

/* A stream: the header and every well-formed frame of the table, in order. */
static GByteArray *whole_stream(size_t *ret_frames) {
        GByteArray *s = g_byte_array_new();
        uint8_t h[STREAM_FRAME_HEADER_SIZE];

        stream_frame_header_encode(h, 1);
        g_byte_array_append(s, h, sizeof h);
        *ret_frames = 0;
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
                if (cases[i].r > 0 && (size_t) cases[i].r == cases[i].len) {
                        g_byte_array_append(s, cases[i].bytes, cases[i].len);
                        (*ret_frames)++;
                }
        return s;
}

/* Feeds s to a reader chunk bytes at a time; returns the frames' types and sizes, in order. */
static GArray *read_in_chunks(const GByteArray *s, size_t chunk, int *ret_end) {
        GArray *got = g_array_new(false, false, sizeof(uint32_t));
        StreamFrameReader rd;
        size_t off = 0;
        int r = 0;

        stream_frame_reader_init(&rd);
        while (off < s->len) {
                void *p;
                size_t n;

                g_assert_cmpint(stream_frame_reader_space(&rd, chunk, &p, &n), ==, 0);
                g_assert_cmpuint(n, >=, MIN(chunk, (size_t) STREAM_FRAME_MAX));
                n = MIN(MIN(n, chunk), s->len - off);
                memcpy(p, s->data + off, n);
                off += n;
                stream_frame_reader_commit(&rd, n);
                StreamFrame f;
                while ((r = stream_frame_reader_next(&rd, &f)) > 0) {
                        uint32_t v = (uint32_t) f.type << 16 | f.size;

                        /* In place, as the decoder promises. */
                        if (f.type == STREAM_FRAME_EVENT)
                                g_assert_cmpuint(strlen(f.path), ==, f.path_len);
                        g_array_append_val(got, v);
                }
                if (r < 0)
                        break;
        }
        g_assert_cmpuint(stream_frame_reader_pending(&rd), ==, 0);
        g_assert_cmpuint(rd.version, ==, 1);
        stream_frame_reader_done(&rd);
        *ret_end = r;
        return got;
}

/*
 * The durable frames (types 4 to 7), written by hand from watchd-stream(5):
 * decoded to what they say, encoded again to the same bytes; then what
 * makes each malformed.
 */
/* clang-format off */
#define DURABLE_EVENT_BYTES                                                             \
        "\x2e\x00\x00\x00" "\x06\x00" "\x00\x00"                                        \
        "\x2a\x00\x00\x00\x00\x00\x00\x00" "\xc0\x00\x00\x00" "\x05\x00\x00\x00"    \
        "\x03\x00\x00\x00" "\x02\x00\x00\x00" "\x02\x00\x00\x00"                    \
        "idx" "\x00" "/a" "\x00" "/b" "\x00"

#define DURABLE_RESCAN_BYTES                                                            \
        "\x3f\x00\x00\x00" "\x04\x00" "\x00\x00"                                        \
        "\x07\x00\x00\x00\x00\x00\x00\x00" "\x03\x00\x00\x00" "\x08\x00\x00\x00"    \
        "\x02\x00\x00\x00" "idx" "\x00" "overflow" "\x00"                                 \
        "\x01\x00\x00\x00" "\x02\x00\x00\x00" "/a" "\x00"                              \
        "\x00\x00\x00\x00" "\x02\x00\x00\x00" "/b" "\x00"

#define DURABLE_CAUGHT_UP_BYTES                                                         \
        "\x18\x00\x00\x00" "\x05\x00" "\x00\x00"                                        \
        "\x09\x00\x00\x00\x00\x00\x00\x00" "\x03\x00\x00\x00" "idx" "\x00"

#define DURABLE_STOPPED_BYTES                                                           \
        "\x1c\x00\x00\x00" "\x07\x00" "\x00\x00"                                        \
        "\x03\x00\x00\x00" "\x07\x00\x00\x00" "idx" "\x00" "removed" "\x00"
/* clang-format on */

static void assert_decodes(const char *bytes, size_t len, StreamFrame *f) {
        int k = stream_frame_decode(bytes, len, f);

        g_assert_cmpint(k, ==, (int) len);
        /* Every strict prefix asks for more. */
        for (size_t n = 0; n < len; n++) {
                StreamFrame g;

                g_assert_cmpint(stream_frame_decode(bytes, n, &g), ==, 0);
        }
}

static void test_durable(void) {
        static const StreamRescanDir dirs[] = { { "/a", 1 }, { "/b", 0 } };
        uint8_t buf[128];
        StreamFrame f;
        const char *path;
        size_t off = 0, len;
        uint32_t flags;

        assert_decodes(DURABLE_EVENT_BYTES, sizeof(DURABLE_EVENT_BYTES) - 1, &f);
        g_assert_cmpuint(f.type, ==, STREAM_FRAME_DURABLE_EVENT);
        g_assert_cmpuint(f.cursor, ==, 42);
        g_assert_cmpuint(f.mask, ==, 0xc0);
        g_assert_cmpuint(f.cookie, ==, 5);
        g_assert_cmpstr(f.name, ==, "idx");
        g_assert_cmpstr(f.path, ==, "/a");
        g_assert_cmpstr(f.new_path, ==, "/b");
        g_assert_cmpint(stream_frame_encode_durable_event(buf, sizeof buf, 42, 0xc0, 5, "idx", 3, "/a", 2, "/b", 2), ==,
                        (int) sizeof(DURABLE_EVENT_BYTES) - 1);
        g_assert_cmpmem(buf, sizeof(DURABLE_EVENT_BYTES) - 1, DURABLE_EVENT_BYTES, sizeof(DURABLE_EVENT_BYTES) - 1);
        g_assert_cmpuint(stream_frame_durable_event_size(3, 2, 2), ==, sizeof(DURABLE_EVENT_BYTES) - 1);

        assert_decodes(DURABLE_RESCAN_BYTES, sizeof(DURABLE_RESCAN_BYTES) - 1, &f);
        g_assert_cmpuint(f.type, ==, STREAM_FRAME_DURABLE_RESCAN);
        g_assert_cmpuint(f.cursor, ==, 7);
        g_assert_cmpstr(f.name, ==, "idx");
        g_assert_cmpstr(f.reason, ==, "overflow");
        g_assert_cmpuint(f.n_dirs, ==, 2);
        g_assert_cmpint(stream_frame_rescan_dir(&f, &off, &path, &len, &flags), ==, 1);
        g_assert_cmpstr(path, ==, "/a");
        g_assert_cmpuint(len, ==, 2);
        g_assert_cmpuint(flags, ==, 1);
        g_assert_cmpint(stream_frame_rescan_dir(&f, &off, &path, &len, &flags), ==, 1);
        g_assert_cmpstr(path, ==, "/b");
        g_assert_cmpuint(flags, ==, 0);
        g_assert_cmpint(stream_frame_rescan_dir(&f, &off, &path, &len, &flags), ==, 0);
        g_assert_cmpint(stream_frame_encode_durable_rescan(buf, sizeof buf, 7, "idx", "overflow", dirs, 2), ==,
                        (int) sizeof(DURABLE_RESCAN_BYTES) - 1);
        g_assert_cmpmem(buf, sizeof(DURABLE_RESCAN_BYTES) - 1, DURABLE_RESCAN_BYTES, sizeof(DURABLE_RESCAN_BYTES) - 1);
        /* None: the whole subscription. */
        g_assert_cmpint(stream_frame_encode_durable_rescan(buf, sizeof buf, 7, "idx", "daemon-down", NULL, 0), >, 0);
        g_assert_cmpint(stream_frame_decode(buf, sizeof buf, &f), >, 0);
        g_assert_cmpuint(f.n_dirs, ==, 0);
        off = 0;
        g_assert_cmpint(stream_frame_rescan_dir(&f, &off, &path, &len, &flags), ==, 0);

        assert_decodes(DURABLE_CAUGHT_UP_BYTES, sizeof(DURABLE_CAUGHT_UP_BYTES) - 1, &f);
        g_assert_cmpuint(f.type, ==, STREAM_FRAME_DURABLE_CAUGHT_UP);
        g_assert_cmpuint(f.cursor, ==, 9);
        g_assert_cmpstr(f.name, ==, "idx");
        g_assert_cmpint(stream_frame_encode_durable_caught_up(buf, sizeof buf, 9, "idx"), ==,
                        (int) sizeof(DURABLE_CAUGHT_UP_BYTES) - 1);
        g_assert_cmpmem(buf, sizeof(DURABLE_CAUGHT_UP_BYTES) - 1, DURABLE_CAUGHT_UP_BYTES,
                        sizeof(DURABLE_CAUGHT_UP_BYTES) - 1);

        assert_decodes(DURABLE_STOPPED_BYTES, sizeof(DURABLE_STOPPED_BYTES) - 1, &f);
        g_assert_cmpuint(f.type, ==, STREAM_FRAME_DURABLE_STOPPED);
        g_assert_cmpstr(f.name, ==, "idx");
        g_assert_cmpstr(f.reason, ==, "removed");
        g_assert_cmpint(stream_frame_encode_durable_stopped(buf, sizeof buf, "idx", "removed"), ==,
                        (int) sizeof(DURABLE_STOPPED_BYTES) - 1);
        g_assert_cmpmem(buf, sizeof(DURABLE_STOPPED_BYTES) - 1, DURABLE_STOPPED_BYTES, sizeof(DURABLE_STOPPED_BYTES) - 1);

        /* Malformed: a directory count past what the frame holds, a name longer than its frame, a NUL in a name. */
        {
                char b[sizeof(DURABLE_RESCAN_BYTES)];

                memcpy(b, DURABLE_RESCAN_BYTES, sizeof b);
                b[24] = 3;
                g_assert_cmpint(stream_frame_decode(b, sizeof b - 1, &f), ==, -EBADMSG);
                memcpy(b, DURABLE_RESCAN_BYTES, sizeof b);
                b[24] = (char) 0xff;
                b[27] = 0x7f;
                g_assert_cmpint(stream_frame_decode(b, sizeof b - 1, &f), ==, -EBADMSG);
        }
        {
                char b[sizeof(DURABLE_EVENT_BYTES)];

                memcpy(b, DURABLE_EVENT_BYTES, sizeof b);
                b[24] = 0x40;
                g_assert_cmpint(stream_frame_decode(b, sizeof b - 1, &f), ==, -EBADMSG);
                memcpy(b, DURABLE_EVENT_BYTES, sizeof b);
                b[37] = 0; /* "i\0x" */
                g_assert_cmpint(stream_frame_decode(b, sizeof b - 1, &f), ==, -EBADMSG);
        }
        g_assert_cmpint(stream_frame_encode_durable_event(buf, sizeof buf, 1, 0x100, 0, "i\0x", 3, "/a", 2, NULL, 0),
                        ==, -EINVAL);
        g_assert_cmpint(stream_frame_encode_durable_caught_up(buf, 20, 9, "idx"), ==, -ENOBUFS);
}

static void test_reader_chunks(void) {
        size_t n_frames;
        g_autoptr(GByteArray) s = whole_stream(&n_frames);
        static const size_t chunks[] = { 1, 2, 3, 5, 7, 8, 13, 31, 64, 4096, 1 << 20 };

        g_assert_cmpuint(n_frames, >=, 8);
        for (size_t c = 0; c < G_N_ELEMENTS(chunks); c++) {
                int end;
                g_autoptr(GArray) got = read_in_chunks(s, chunks[c], &end);
                size_t k = 0;

                g_test_message("chunks of %zu bytes", chunks[c]);
                g_assert_cmpint(end, ==, 0);
                g_assert_cmpuint(got->len, ==, n_frames);
                for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
                        if (cases[i].r > 0 && (size_t) cases[i].r == cases[i].len) {
                                uint32_t v = g_array_index(got, uint32_t, k++);

                                g_assert_cmpuint(v >> 16, ==, cases[i].type);
                                g_assert_cmpuint(v & 0xffff, ==, (uint32_t) cases[i].r);
                        }
        }
}

/* A reader handed a frame that says it is longer than the maximum refuses it
 * from its first four bytes, without growing its buffer; one handed another
 * kind of stream refuses it from its first bytes. */
static void test_reader_refuses(void) {
        StreamFrameReader rd;
        StreamFrame f;
        void *p;
        size_t n;

        stream_frame_reader_init(&rd);
        g_assert_cmpint(stream_frame_reader_space(&rd, 64, &p, &n), ==, 0);
        memcpy(p,
               "WDST\x01\x00\x08\x00"
               "\xff\xff\xff\x7f",
               12);
        stream_frame_reader_commit(&rd, 12);
        g_assert_cmpint(stream_frame_reader_next(&rd, &f), ==, -EBADMSG);
        g_assert_cmpuint(rd.cap, <=, 4096); /* it did not make room for the frame announced */
        stream_frame_reader_done(&rd);

        stream_frame_reader_init(&rd);
        g_assert_cmpint(stream_frame_reader_space(&rd, 64, &p, &n), ==, 0);
        memcpy(p, "<?xml", 5);
        stream_frame_reader_commit(&rd, 5);
        g_assert_cmpint(stream_frame_reader_next(&rd, &f), ==, -EBADMSG);
        stream_frame_reader_done(&rd);

        /* A stream cut in the middle of a frame: it says how much is left over. */
        stream_frame_reader_init(&rd);
        g_assert_cmpint(stream_frame_reader_space(&rd, 64, &p, &n), ==, 0);
        memcpy(p, "WDST\x01\x00\x08\x00" EVENT_A_BYTES, 8 + 20);
        stream_frame_reader_commit(&rd, 8 + 20);
        g_assert_cmpint(stream_frame_reader_next(&rd, &f), ==, 0);
        g_assert_cmpuint(stream_frame_reader_pending(&rd), ==, 20);
        /* The rest, a byte at a time. */
        for (size_t i = 0; i < 12; i++) {
                g_assert_cmpint(stream_frame_reader_next(&rd, &f), ==, 0);
                g_assert_cmpint(stream_frame_reader_space(&rd, 1, &p, &n), ==, 0);
                g_assert_cmpuint(n, >=, 1);
                memcpy(p, EVENT_A_BYTES + 20 + i, 1);
                stream_frame_reader_commit(&rd, 1);
        }
        g_assert_cmpint(stream_frame_reader_next(&rd, &f), ==, 1);
        g_assert_cmpstr(f.path, ==, "/a");
        g_assert_cmpuint(stream_frame_reader_pending(&rd), ==, 0);
        stream_frame_reader_done(&rd);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/stream-frame/table", test_table);
        g_test_add_func("/stream-frame/prefixes", test_prefixes);
        g_test_add_func("/stream-frame/header", test_header);
        g_test_add_func("/stream-frame/encode-refusals", test_encode_refusals);
        g_test_add_func("/stream-frame/durable", test_durable);
        g_test_add_func("/stream-frame/reader-chunks", test_reader_chunks);
        g_test_add_func("/stream-frame/reader-refuses", test_reader_refuses);
        return g_test_run();
}
