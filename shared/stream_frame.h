/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * stream_frame - the binary framing of a client's record stream
 *
 * watchd can hand a client a socket over which that client's records flow
 * instead of D-Bus signals (OpenStream, watchd(8)). What travels on it is
 * defined here, once, for the daemon that writes it and for the clients
 * that read it (libwatchd, watchctl, the tests, the benchmark): the
 * specification is watchd-stream(5), and this file is its C spelling.
 *
 * A stream is a header, then frames, each frame one record:
 *
 *   header   "WDST", u16 version, u16 header size (8 in version 1)
 *   frame    u32 size (of the whole frame), u16 type, u16 reserved, payload
 *   EVENT    u32 id, u32 mask, u32 cookie, u32 path length, u32 new path
 *            length, path, NUL, new path, NUL
 *   OVERFLOW u32 count, count x u32 ids (ascending, none twice)
 *   REMOVED  u32 id, u32 reason length, reason, NUL
 *   DURABLE_RESCAN     u64 cursor, u32 name length, u32 reason length,
 *            u32 count, name, NUL, reason, NUL, count x (u32 flags, u32
 *            path length, path, NUL)
 *   DURABLE_CAUGHT_UP  u64 cursor, u32 name length, name, NUL
 *   DURABLE_EVENT      u64 cursor, u32 mask, u32 cookie, u32 name length,
 *            u32 path length, u32 new path length, name, NUL, path, NUL,
 *            new path, NUL
 *   DURABLE_STOPPED    u32 name length, u32 reason length, name, NUL,
 *            reason, NUL
 *
 * and after a frame's own payload, optional fields (u16 tag, u16 length,
 * value) to the end of the frame. Integers are little-endian whatever the
 * host. Paths are bytes as the kernel gave them, never escaped (no
 * WATCHD_PATH_ESCAPED here): each is followed by a NUL, so a decoded path
 * is a C string in place, and a path holding a NUL is malformed. A frame
 * type, a field or a header byte the decoder does not know is skipped: a
 * newer daemon adds them without breaking older clients (and sends them
 * only to clients that asked, see watchd-stream(5)); the version changes
 * only for what an older client could not skip.
 *
 * Pure C (libc only), no allocation but the reader's buffer: linked by the
 * daemon and, being LGPL, by the client library too.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STREAM_FRAME_MAGIC       "WDST"          /* the header's first 4 bytes */
#define STREAM_FRAME_VERSION     1u              /* the newest version this file speaks */
#define STREAM_FRAME_HEADER_SIZE 8u              /* version 1's header */
#define STREAM_FRAME_HEADER_MAX  4096u           /* a header longer than this is malformed */
#define STREAM_FRAME_PREFIX_SIZE 8u              /* size, type, reserved */
#define STREAM_FRAME_MAX         (1024u * 1024u) /* the longest frame, prefix included */

typedef enum StreamFrameType {
        STREAM_FRAME_EVENT = 1,
        STREAM_FRAME_OVERFLOW = 2,
        STREAM_FRAME_REMOVED = 3,
        /* What a resumed durable subscription is sent (the DurableRescan,
         * DurableCaughtUp, DurableEvents and DurableStopped signals), only to
         * a client that asked for them (OpenStream's option "durable"). 0 is
         * never used. */
        STREAM_FRAME_DURABLE_RESCAN = 4,
        STREAM_FRAME_DURABLE_CAUGHT_UP = 5,
        STREAM_FRAME_DURABLE_EVENT = 6,
        STREAM_FRAME_DURABLE_STOPPED = 7,
} StreamFrameType;

/* Optional fields' tags. 0 is never used. */
typedef enum StreamFieldTag {
        /* u64: a cursor. Kept: no frame carries it (durable frames have
         * their cursor in their payload). */
        STREAM_FIELD_CURSOR = 1,
} StreamFieldTag;

/* Fixed payload sizes, for the encoder's callers that size buffers. */
#define STREAM_FRAME_EVENT_FIXED              20u
#define STREAM_FRAME_OVERFLOW_FIXED           4u
#define STREAM_FRAME_REMOVED_FIXED            8u
#define STREAM_FRAME_DURABLE_RESCAN_FIXED     20u
#define STREAM_FRAME_DURABLE_RESCAN_DIR_FIXED 8u /* each directory: flags, length */
#define STREAM_FRAME_DURABLE_CAUGHT_UP_FIXED  12u
#define STREAM_FRAME_DURABLE_EVENT_FIXED      28u
#define STREAM_FRAME_DURABLE_STOPPED_FIXED    8u
/* Most ids one OVERFLOW frame holds (a longer list goes in several frames). */
#define STREAM_FRAME_OVERFLOW_MAX_IDS ((STREAM_FRAME_MAX - STREAM_FRAME_PREFIX_SIZE - STREAM_FRAME_OVERFLOW_FIXED) / 4u)

/* The optional fields a frame carries, as far as this file knows them. */
typedef struct StreamFields {
        bool has_cursor;
        uint64_t cursor;
} StreamFields;

/*
 * One decoded frame. The pointers are into the buffer that was decoded and
 * live as long as it does; each string is NUL-terminated in place.
 */
typedef struct StreamFrame {
        uint16_t type; /* StreamFrameType, or one this file does not know */
        uint32_t size; /* bytes of the frame, prefix included */

        /* STREAM_FRAME_EVENT; and id for STREAM_FRAME_REMOVED */
        uint32_t id, mask, cookie;
        const char *path, *new_path; /* new_path: "" unless a paired rename */
        size_t path_len, new_path_len;

        /* STREAM_FRAME_OVERFLOW: n_ids little-endian u32s, stream_frame_overflow_id() */
        size_t n_ids;
        const uint8_t *ids;

        /* STREAM_FRAME_REMOVED; STREAM_FRAME_DURABLE_RESCAN, _STOPPED: why */
        const char *reason;
        size_t reason_len;

        /* The durable frames (a STREAM_FRAME_DURABLE_EVENT has mask, cookie,
         * path and new_path as an EVENT): the subscription's name, and the
         * entry's id in its journal (the cursor; not in _STOPPED). */
        const char *name;
        size_t name_len;
        uint64_t cursor;

        /* STREAM_FRAME_DURABLE_RESCAN: n_dirs directories to rescan, none
         * for the whole subscription: stream_frame_rescan_dir(). */
        size_t n_dirs;
        const uint8_t *dirs;
        size_t dirs_size; /* bytes of them */

        StreamFields fields;
        unsigned n_unknown_fields; /* fields skipped: a newer daemon's */
} StreamFrame;

/* --- encoding (the daemon) ------------------------------------------------------------------- */

/* Writes version's header into buf (STREAM_FRAME_HEADER_SIZE bytes). Returns the bytes written. */
size_t stream_frame_header_encode(void *buf, uint16_t version);

/* Bytes an EVENT frame takes with paths of these lengths (fields: NULL for none);
 * more than STREAM_FRAME_MAX means it cannot be sent. */
size_t stream_frame_event_size(size_t path_len, size_t new_path_len, const StreamFields *fields);

/*
 * Writes an EVENT frame into buf, which has size bytes. new_path may be
 * NULL (none); fields may be NULL. The paths must hold no NUL in their
 * lengths (the caller's: they are file names, or kernel paths).
 * Return: bytes written, -ENOBUFS if size is too small, -E2BIG if the frame
 * would be longer than STREAM_FRAME_MAX, -EINVAL if a path holds a NUL.
 */
int stream_frame_encode_event(void *buf, size_t size, uint32_t id, uint32_t mask, uint32_t cookie, const char *path,
                              size_t path_len, const char *new_path, size_t new_path_len, const StreamFields *fields);

/* Writes an OVERFLOW frame naming ids (n at most STREAM_FRAME_OVERFLOW_MAX_IDS), which must be
 * ascending without repeats. Return: bytes written, -ENOBUFS, -E2BIG, or -EINVAL (not ascending). */
int stream_frame_encode_overflow(void *buf, size_t size, const uint32_t *ids, size_t n);

/* Writes a REMOVED frame. Return: bytes written, -ENOBUFS, -E2BIG, or -EINVAL (reason holds a NUL). */
int stream_frame_encode_removed(void *buf, size_t size, uint32_t id, const char *reason, size_t reason_len);

/* One directory of a durable rescan; flags: WATCHD_RESCAN_RECURSIVE (0x1): the whole tree below. */
typedef struct StreamRescanDir {
        const char *path;
        uint32_t flags;
} StreamRescanDir;

/* Bytes a DURABLE_EVENT frame takes (more than STREAM_FRAME_MAX: it cannot be sent). */
size_t stream_frame_durable_event_size(size_t name_len, size_t path_len, size_t new_path_len);

/*
 * Writes a DURABLE_EVENT frame of subscription name: the journal's entry
 * cursor, an event as in an EVENT frame (new_path NULL: none). Return as
 * stream_frame_encode_event().
 */
int stream_frame_encode_durable_event(void *buf, size_t size, uint64_t cursor, uint32_t mask, uint32_t cookie,
                                      const char *name, size_t name_len, const char *path, size_t path_len,
                                      const char *new_path, size_t new_path_len);

/* Bytes a DURABLE_RESCAN frame takes. */
size_t stream_frame_durable_rescan_size(const char *name, const char *reason, const StreamRescanDir *dirs, size_t n);
/* Writes a DURABLE_RESCAN frame: rescan dirs[0..n), or everything if n is 0. Return as above. */
int stream_frame_encode_durable_rescan(void *buf, size_t size, uint64_t cursor, const char *name, const char *reason,
                                       const StreamRescanDir *dirs, size_t n);

/* Writes a DURABLE_CAUGHT_UP frame: everything up to cursor was sent. Return as above. */
int stream_frame_encode_durable_caught_up(void *buf, size_t size, uint64_t cursor, const char *name);

/* Writes a DURABLE_STOPPED frame: nothing more comes for name, for reason. Return as above. */
int stream_frame_encode_durable_stopped(void *buf, size_t size, const char *name, const char *reason);

/* --- decoding (the clients) ------------------------------------------------------------------ */

/*
 * Reads the stream header at the start of buf[0..size).
 * Return: the header's size (consumed; > 0) and its version in *ret_version;
 * 0 if more bytes are needed; -EBADMSG if this is not a watchd stream (or the
 * header is malformed); -EPROTONOSUPPORT if its version is newer than
 * STREAM_FRAME_VERSION (the client cannot read it; it was offered a version
 * it did not ask for).
 */
int stream_frame_header_decode(const void *buf, size_t size, uint16_t *ret_version);

/*
 * Decodes the frame at the start of buf[0..size).
 * Return: the frame's size (consumed; > 0) with *ret filled; 0 if more bytes
 * are needed (as soon as the size is known to be acceptable); -EBADMSG if the
 * frame is malformed, after which the stream cannot be trusted: the caller
 * stops reading it. A frame of a type this file does not know is returned
 * with only type and size set: skip it.
 */
int stream_frame_decode(const void *buf, size_t size, StreamFrame *ret);

/* The i-th id of an OVERFLOW frame. */
uint32_t stream_frame_overflow_id(const StreamFrame *f, size_t i);

/*
 * The next directory of a DURABLE_RESCAN frame: *offset starts at 0. 1 and
 * the directory (its path a C string in place, its length, its flags), or
 * 0 when there is none left. The decoder checked them all.
 */
int stream_frame_rescan_dir(const StreamFrame *f, size_t *offset, const char **ret_path, size_t *ret_len,
                            uint32_t *ret_flags);

/*
 * StreamFrameReader: bytes as read() gives them in, whole frames out. The
 * buffer holds at most one frame (STREAM_FRAME_MAX) and one read, and the
 * frames returned by _next() point into it until the next _space() call.
 *
 *     stream_frame_reader_init(&r);
 *     for (;;) {
 *             r = stream_frame_reader_space(&rd, 65536, &p, &n);   // where to read
 *             k = read(fd, p, n);                                   // (0: end of stream)
 *             stream_frame_reader_commit(&rd, k);
 *             while ((r = stream_frame_reader_next(&rd, &frame)) > 0)
 *                     use(&frame);
 *             if (r < 0) ... stop reading: the stream is broken
 *     }
 */
typedef struct StreamFrameReader {
        uint8_t *buf;
        size_t start, end, cap; /* undecoded bytes: buf[start..end) */
        bool header_seen;
        uint16_t version; /* the header's, once seen */
} StreamFrameReader;

void stream_frame_reader_init(StreamFrameReader *r);
void stream_frame_reader_done(StreamFrameReader *r);

/* Makes room for at least min bytes (at most STREAM_FRAME_MAX) after the
 * undecoded ones: *ret_p, *ret_n is where to read into.
 * Return: 0, or -ENOMEM. */
int stream_frame_reader_space(StreamFrameReader *r, size_t min, void **ret_p, size_t *ret_n);

/* n bytes were read into the space _space() gave. */
void stream_frame_reader_commit(StreamFrameReader *r, size_t n);

/* The next whole frame: 1 (in *ret), 0 if more bytes are needed, or the
 * -errno of stream_frame_header_decode()/stream_frame_decode(). */
int stream_frame_reader_next(StreamFrameReader *r, StreamFrame *ret);

/* Bytes received and not yet returned as a frame: at the end of the
 * stream, more than 0 means it was cut in the middle of a frame. */
size_t stream_frame_reader_pending(const StreamFrameReader *r);
