/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz-stream-frame - any bytes through the record stream's decoder
 *
 * What a client reads from the socket watchd handed it is the daemon's to
 * write, but a client must survive anything (a bug, a wrong fd, another
 * program at the other end). The input:
 *
 *   byte 0      the reader's chunk size, 1..256 (read() giving that many
 *               bytes at a time)
 *   byte 1      bit 0: encode mode (below); else the rest is a stream
 *   the rest    a stream: header, then frames
 *
 * Checked on every stream, besides ASan/UBSan's own checks:
 *   - decoding at once: every frame lies within what was given, its size is
 *     what was consumed, its strings (paths, names, reasons, a durable
 *     rescan's directories) are NUL-terminated where their lengths say and
 *     hold no NUL before, an overflow's ids ascend; a known frame
 *     with nothing skipped (no unknown field, reserved 0) encodes again to
 *     exactly its bytes, so decoder and encoder agree on every frame either
 *     accepts;
 *   - the reader, fed the same bytes in chunks, returns the same frames and
 *     ends the same way, and its buffer stays within one maximal frame.
 * Encode mode builds an event from the input (id, mask, cookie, both paths
 * as raw bytes, a cursor or not), encodes it and decodes it back: the same
 * values, or the encoder's refusal for exactly the inputs it must refuse.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream_frame.h"

#include "fuzz-check.h"

#define MAX_FRAMES 4096

typedef struct Seen {
        uint16_t type;
        uint32_t size;
        size_t offset; /* in the stream */
} Seen;

static void check_string(const uint8_t *data, size_t size, const char *s, size_t len) {
        const uint8_t *p = (const uint8_t *) s;

        CHECK(p >= data && p + len < data + size);
        CHECK(p[len] == 0);
        CHECK(strlen(s) == len);
}

static void check_frame(const uint8_t *data, size_t size, const uint8_t *frame, const StreamFrame *f) {
        uint8_t *again;
        int k = -1;

        CHECK(f->size >= STREAM_FRAME_PREFIX_SIZE && f->size <= STREAM_FRAME_MAX);
        CHECK(frame + f->size <= data + size);
        switch (f->type) {
        case STREAM_FRAME_EVENT:
                check_string(frame, f->size, f->path, f->path_len);
                check_string(frame, f->size, f->new_path, f->new_path_len);
                break;
        case STREAM_FRAME_REMOVED:
                check_string(frame, f->size, f->reason, f->reason_len);
                break;
        case STREAM_FRAME_OVERFLOW:
                CHECK(f->ids >= frame && f->ids + 4 * f->n_ids <= frame + f->size);
                for (size_t i = 1; i < f->n_ids; i++)
                        CHECK(stream_frame_overflow_id(f, i) > stream_frame_overflow_id(f, i - 1));
                break;
        case STREAM_FRAME_DURABLE_EVENT:
                check_string(frame, f->size, f->name, f->name_len);
                check_string(frame, f->size, f->path, f->path_len);
                check_string(frame, f->size, f->new_path, f->new_path_len);
                break;
        case STREAM_FRAME_DURABLE_RESCAN: {
                const char *path;
                size_t off = 0, len, n = 0;
                uint32_t flags;

                check_string(frame, f->size, f->name, f->name_len);
                check_string(frame, f->size, f->reason, f->reason_len);
                while (stream_frame_rescan_dir(f, &off, &path, &len, &flags) > 0) {
                        check_string(frame, f->size, path, len);
                        n++;
                }
                CHECK(n == f->n_dirs);
                break;
        }
        case STREAM_FRAME_DURABLE_CAUGHT_UP:
                check_string(frame, f->size, f->name, f->name_len);
                break;
        case STREAM_FRAME_DURABLE_STOPPED:
                check_string(frame, f->size, f->name, f->name_len);
                check_string(frame, f->size, f->reason, f->reason_len);
                break;
        default:
                return;
        }

        /* Nothing skipped: the frame is exactly what the encoder writes. */
        if (f->n_unknown_fields > 0 || frame[6] != 0 || frame[7] != 0)
                return;
        again = malloc(f->size);
        CHECK(again);
        switch (f->type) {
        case STREAM_FRAME_EVENT:
                k = stream_frame_encode_event(again, f->size, f->id, f->mask, f->cookie, f->path, f->path_len,
                                              f->new_path, f->new_path_len, &f->fields);
                break;
        case STREAM_FRAME_REMOVED:
                /* The encoder writes no field on a removal. */
                if (f->fields.has_cursor) {
                        free(again);
                        return;
                }
                k = stream_frame_encode_removed(again, f->size, f->id, f->reason, f->reason_len);
                break;
        case STREAM_FRAME_OVERFLOW: {
                uint32_t *ids = malloc(sizeof(uint32_t) * (f->n_ids + 1));

                CHECK(ids);
                for (size_t i = 0; i < f->n_ids; i++)
                        ids[i] = stream_frame_overflow_id(f, i);
                if (!f->fields.has_cursor)
                        k = stream_frame_encode_overflow(again, f->size, ids, f->n_ids);
                free(ids);
                if (f->fields.has_cursor) {
                        free(again);
                        return;
                }
                break;
        }
        default:
                /* The durable frames: the encoder writes no field on them. */
                if (f->fields.has_cursor) {
                        free(again);
                        return;
                }
                if (f->type == STREAM_FRAME_DURABLE_EVENT)
                        k = stream_frame_encode_durable_event(again, f->size, f->cursor, f->mask, f->cookie, f->name,
                                                              f->name_len, f->path, f->path_len, f->new_path,
                                                              f->new_path_len);
                else if (f->type == STREAM_FRAME_DURABLE_CAUGHT_UP)
                        k = stream_frame_encode_durable_caught_up(again, f->size, f->cursor, f->name);
                else if (f->type == STREAM_FRAME_DURABLE_STOPPED)
                        k = stream_frame_encode_durable_stopped(again, f->size, f->name, f->reason);
                else {
                        StreamRescanDir *dirs = malloc(sizeof(StreamRescanDir) * (f->n_dirs + 1));
                        size_t off = 0, len, n = 0;

                        CHECK(dirs);
                        while (stream_frame_rescan_dir(f, &off, &dirs[n].path, &len, &dirs[n].flags) > 0)
                                n++;
                        k = stream_frame_encode_durable_rescan(again, f->size, f->cursor, f->name, f->reason, dirs, n);
                        free(dirs);
                }
                break;
        }
        CHECK(k == (int) f->size);
        CHECK(memcmp(again, frame, f->size) == 0);
        free(again);
}

/* Decodes data at once: the frames in seen, the end (0 or -errno) returned. */
static int decode_at_once(const uint8_t *data, size_t size, Seen *seen, size_t *n_seen) {
        uint16_t version = 0;
        size_t off;
        int k;

        *n_seen = 0;
        k = stream_frame_header_decode(data, size, &version);
        if (k <= 0)
                return k;
        CHECK((size_t) k <= size && version >= 1 && version <= STREAM_FRAME_VERSION);
        off = (size_t) k;
        while (off < size && *n_seen < MAX_FRAMES) {
                StreamFrame f;

                k = stream_frame_decode(data + off, size - off, &f);
                if (k <= 0)
                        return k;
                CHECK((size_t) k == f.size && (size_t) k <= size - off);
                check_frame(data, size, data + off, &f);
                seen[(*n_seen)++] = (Seen) { f.type, f.size, off };
                off += (size_t) k;
        }
        return 0;
}

static void reader_agrees(const uint8_t *data, size_t size, size_t chunk, const Seen *seen, size_t n_seen, int end) {
        StreamFrameReader rd;
        size_t off = 0, n = 0;
        int r = 0;

        stream_frame_reader_init(&rd);
        while (off < size && n < n_seen + 1 && r >= 0) {
                void *p;
                size_t room;

                CHECK(stream_frame_reader_space(&rd, chunk, &p, &room) == 0);
                CHECK(room >= chunk);
                CHECK(rd.cap <= 2 * ((size_t) STREAM_FRAME_MAX + 256));
                room = chunk < size - off ? chunk : size - off;
                memcpy(p, data + off, room);
                off += room;
                stream_frame_reader_commit(&rd, room);
                for (;;) {
                        StreamFrame f;

                        r = stream_frame_reader_next(&rd, &f);
                        if (r <= 0 || n >= MAX_FRAMES)
                                break;
                        CHECK(n < n_seen);
                        CHECK(f.type == seen[n].type && f.size == seen[n].size);
                        CHECK(memcmp(rd.buf + rd.start - f.size, data + seen[n].offset, f.size) == 0);
                        n++;
                }
        }
        if (n < MAX_FRAMES) {
                CHECK(n == n_seen);
                CHECK(r == end);
        }
        stream_frame_reader_done(&rd);
}

static void encode_mode(const uint8_t *data, size_t size) {
        uint32_t v[4] = {};
        size_t path_len, new_len;
        StreamFields fields = {};
        const char *path, *new_path;
        uint8_t *buf;
        StreamFrame f;
        bool nul;
        int k;

        if (size < 17)
                return;
        memcpy(v, data, 16);
        fields.has_cursor = data[16] & 1;
        fields.cursor = (uint64_t) v[3] << 32 | v[0];
        data += 17;
        size -= 17;
        path_len = (v[3] & 0xffff) % (size + 1);
        path = (const char *) data;
        new_len = size - path_len;
        new_path = new_len > 0 ? (const char *) data + path_len : NULL;
        nul = memchr(path, 0, path_len) || (new_len > 0 && memchr(new_path, 0, new_len));

        buf = malloc(stream_frame_event_size(path_len, new_len, &fields));
        CHECK(buf);
        k = stream_frame_encode_event(buf, stream_frame_event_size(path_len, new_len, &fields), v[0], v[1], v[2], path,
                                      path_len, new_path, new_len, &fields);
        if (nul) {
                CHECK(k == -EINVAL);
                free(buf);
                return;
        }
        CHECK(k == (int) stream_frame_event_size(path_len, new_len, &fields));
        CHECK(stream_frame_decode(buf, (size_t) k, &f) == k);
        CHECK(f.type == STREAM_FRAME_EVENT && f.id == v[0] && f.mask == v[1] && f.cookie == v[2]);
        CHECK(f.path_len == path_len && memcmp(f.path, path, path_len) == 0);
        CHECK(f.new_path_len == new_len && (new_len == 0 || memcmp(f.new_path, new_path, new_len) == 0));
        CHECK(f.fields.has_cursor == fields.has_cursor);
        CHECK(!fields.has_cursor || f.fields.cursor == fields.cursor);
        /* One byte less room is refused, not overrun. */
        CHECK(stream_frame_encode_event(buf, (size_t) k - 1, v[0], v[1], v[2], path, path_len, new_path, new_len,
                                        &fields) == -ENOBUFS);
        free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static Seen seen[MAX_FRAMES];
        size_t chunk, n_seen;
        int end;

        if (size < 2)
                return 0;
        chunk = (size_t) data[0] + 1;
        if (data[1] & 1) {
                encode_mode(data + 2, size - 2);
                return 0;
        }
        data += 2;
        size -= 2;
        end = decode_at_once(data, size, seen, &n_seen);
        reader_agrees(data, size, chunk, seen, n_seen, end);
        return 0;
}
