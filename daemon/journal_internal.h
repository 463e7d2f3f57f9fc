/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * journal_internal - what the journal's files share, and no one else
 *
 * journal.c: the Journal, its segments in memory, what it tells of itself.
 * journal_codec.c: records to bytes and back. journal_scope.c: the scope
 * of records that could not be written. journal_integrity.c: the
 * checksums, checking a frame read and finding the next valid one.
 * journal_layout.c: the directory's files (meta slots, segment names and
 * headers). journal_writer.c: frames appended, segments rotated, the caps
 * enforced. journal_reader.c: the readers. journal_open.c: opening a
 * journal, closing it.
 * The layout is docs/JOURNAL.md's, and journal.c's comment.
 *
 * They stand in layers, each calling only those before it: journal.c,
 * journal_codec.c, journal_scope.c, journal_integrity.c, journal_layout.c,
 * journal_writer.c, journal_reader.c, journal_open.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "journal_types.h"

#define META_NAME        "meta"
#define META_SLOT_SIZE   512u
#define META_SLOT_BYTES  52u
#define META_MAGIC       0x4d4a5457u /* "WTJM" */
#define META_VERSION     1u
#define META_FLAG_LOSING 0x1u

#define SEGMENT_PREFIX      "seg-"
#define SEGMENT_NAME_MAX    (sizeof(SEGMENT_PREFIX) + 16)
#define SEGMENT_MAGIC       "WATCHDJ1"
#define SEGMENT_HEADER_SIZE 56u
#define SEGMENT_VERSION     1u

#define FRAME_MAGIC       0x1f4a57f7u /* f7 57 4a 1f: not text, not UTF-8 */
#define FRAME_HEADER_SIZE 24u
#define FRAME_READ_MAX    (1024u * 1024u) /* what a reader accepts */
#define FRAME_WRITE_MAX   (64u * 1024u)   /* what a flush writes at most (but one record) */

/* Ids reserved a block at a time: one meta write (and fdatasync) per block. */
#define ID_BLOCK UINT64_C(65536)

/* A gap's scope paths together: past it, the whole subscription. */
#define GAP_SCOPE_BYTES_MAX (256u * 1024u)

/* Record tags: the kind in the low two bits, flags above. */
#define TAG_KIND           0x03u
#define TAG_EVENT          0x00u
#define TAG_GAP            0x01u
#define TAG_EVENT_NEW_PATH 0x04u
#define TAG_EVENT_ISDIR    0x08u
#define TAG_EVENT_COOKIE   0x10u
#define TAG_EVENT_VALID    (TAG_KIND | TAG_EVENT_NEW_PATH | TAG_EVENT_ISDIR | TAG_EVENT_COOKIE)
#define TAG_GAP_WHOLE      0x04u
#define TAG_GAP_VALID      (TAG_KIND | TAG_GAP_WHOLE)
#define SCOPE_RECURSIVE    0x01u

/* IN_ISDIR, stored as a tag bit: it would cost a varint four bytes. */
#define JOURNAL_ISDIR 0x40000000u

/* IN_CREATE | IN_MOVED_TO: a directory that appeared, whose tree is unknown. */
#define EVENTS_NEW_OBJECT 0x00000180u

/* Byte order on disk: little endian. */

static inline uint64_t max_u64(uint64_t a, uint64_t b) {
        return a > b ? a : b;
}

static inline void put_le32(uint8_t *p, uint32_t v) {
        for (unsigned i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static inline void put_le64(uint8_t *p, uint64_t v) {
        for (unsigned i = 0; i < 8; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static inline uint32_t get_le32(const uint8_t *p) {
        uint32_t v = 0;

        for (unsigned i = 0; i < 4; i++)
                v |= (uint32_t) p[i] << (8 * i);
        return v;
}

static inline uint64_t get_le64(const uint8_t *p) {
        uint64_t v = 0;

        for (unsigned i = 0; i < 8; i++)
                v |= (uint64_t) p[i] << (8 * i);
        return v;
}

/* ---------------------------------------------------------------------- */
/* journal_codec.c */

typedef struct Buf {
        uint8_t *data;
        size_t size;
        size_t alloc;
} Buf;

typedef struct Decoder {
        const uint8_t *p, *end;
        Buf prev; /* the previous path of the frame */
        Buf str;  /* the current entry's strings */
        size_t scope_off[JOURNAL_GAP_MAX_SCOPE];
        JournalScope scope[JOURNAL_GAP_MAX_SCOPE];
} Decoder;

void journal_buf_done(Buf *b);

int journal_buf_reserve(Buf *b, size_t more);

int journal_buf_put(Buf *b, const void *p, size_t n);

int journal_buf_put_varint(Buf *b, uint64_t v);

int journal_encode_event(Buf *b, Buf *prev, uint32_t mask, uint32_t cookie, const char *path, const char *new_path);

int journal_encode_gap(Buf *b, Buf *prev, uint32_t reason, bool whole, const JournalScope *scope, size_t n);

void journal_decoder_start(Decoder *d, const uint8_t *p, size_t size);

void journal_decoder_done(Decoder *d);

/* One record; e->id is the caller's. 0, or -EBADMSG (or -ENOMEM). */
int journal_decode_record(Decoder *d, JournalEntry *e);

/* ---------------------------------------------------------------------- */
/* journal_integrity.c */

typedef struct FrameInfo {
        uint64_t first_id;
        uint32_t count;
        uint32_t size; /* of the payload */
} FrameInfo;

typedef struct SegmentScan {
        uint64_t valid_end;  /* where the first run of valid frames ends */
        uint64_t last_id;    /* the newest id in that run (prev_id if none) */
        uint64_t highest_id; /* the newest id of any valid frame */
        bool damaged;        /* valid frames lie after invalid bytes */
} SegmentScan;

int journal_pread_full(int fd, void *buf, size_t size, uint64_t off);

/*
 * Reads the frame at off (before limit) into payload and checks it: its
 * ids must lie after after_id and below end_id (the next segment's name).
 * 1 if valid, 0 if not, -errno on I/O error.
 */
int journal_frame_read(int fd, uint64_t off, uint64_t limit, uint64_t after_id, uint64_t end_id, Buf *payload,
                       FrameInfo *ret);
/* The checks of journal_frame_read() on a frame already in memory (a reader's window): the
 * header h read at off, before limit; and whether its CRC covers the payload. */
bool journal_frame_header_check(const uint8_t h[static FRAME_HEADER_SIZE], uint64_t off, uint64_t limit,
                                uint64_t after_id, uint64_t end_id, FrameInfo *ret);
bool journal_frame_crc_check(const uint8_t h[static FRAME_HEADER_SIZE], const uint8_t *payload, size_t size);

/*
 * After damage at off: the offset of the next valid frame (whose ids come
 * after after_id) before limit, and 1; or 0 if there is none.
 */
int journal_frame_resync(int fd, uint64_t off, uint64_t limit, uint64_t after_id, uint64_t end_id, Buf *payload,
                         uint64_t *ret_off, FrameInfo *ret);

/* The active segment at open: its ids after after_id (the larger of its prev id and its name - 1). */
int journal_segment_scan(int fd, uint64_t size, uint64_t after_id, SegmentScan *ret);

/* ---------------------------------------------------------------------- */
/* journal_scope.c */

typedef struct GapScope {
        bool whole;
        size_t n;
        size_t bytes;
        char *path[JOURNAL_GAP_MAX_SCOPE];
        bool recursive[JOURNAL_GAP_MAX_SCOPE];
} GapScope;

void gap_scope_clear(GapScope *s);

void gap_scope_set_whole(GapScope *s);

void gap_scope_add(GapScope *s, const char *path, size_t len, bool recursive);

/*
 * What a lost event leaves to rescan: the directory it happened in (its
 * entries: a file created, changed or deleted there shows in a listing with
 * stat), and a directory that appeared, whole (what it holds is unknown).
 * For the watched directory itself that is its parent, which may lie
 * outside the subscription: a client rescans the part inside.
 */
void gap_scope_add_event(GapScope *s, uint32_t mask, const char *path, const char *new_path);

/* ---------------------------------------------------------------------- */
/* journal.c */

typedef struct Segment {
        uint64_t name;    /* the first id it may hold; its file is seg-<name in hex> */
        uint64_t prev_id; /* the last id before it; 0: none, the journal's first */
        uint64_t size;    /* bytes; the active one's: the valid bytes */
} Segment;

struct Journal {
        char *dir; /* for messages */
        int dir_fd;
        int meta_fd; /* holds the lock */
        JournalId identity;

        uint64_t max_bytes;
        uint64_t segment_max;

        Segment *segments; /* oldest first; the last is the active one */
        size_t n_segments;
        size_t n_allocated;
        int active_fd;

        uint64_t next_id;      /* the next id to hand out */
        uint64_t last_written; /* the id of the newest record in the segments */
        uint64_t ceiling;      /* ids below it may have been handed out (meta) */
        uint64_t meta_seq;
        bool meta_losing;

        Buf frame; /* records buffered for the next frame */
        uint32_t frame_count;
        Buf prev; /* the frame's previous path */

        bool losing; /* records were lost and their gap is not written yet */
        GapScope lost;

        unsigned n_readers;
};

/* Room in j->segments for one more (they are indexed by the readers: a plain array). */
int journal_segment_room(Journal *j);
/* The segment being written, the last; NULL if none. */
Segment *journal_active(Journal *j);
/* Bytes the journal holds: its meta file and its segments. */
uint64_t journal_usage(const Journal *j);

/* journal_layout.c */
void journal_segment_name(uint64_t name, char ret[static SEGMENT_NAME_MAX]);
/* The first id of the segment file named s, or false if s is no segment's name. */
bool journal_segment_name_parse(const char *s, uint64_t *ret);
/* Writes the older slot in place, and waits for it: ids past the old ceiling are used only after. */
int journal_meta_write(Journal *j, uint64_t ceiling, bool losing);
/* The newer valid slot's ceiling and flag (its identity and sequence into j); -ENODATA if neither is valid. */
int journal_meta_read(Journal *j, uint64_t *ret_ceiling, bool *ret_losing);
/* A new journal's meta: both slots written whole, so the file's blocks exist before the disk fills up. */
int journal_meta_create(Journal *j);
void journal_segment_header_encode(const Journal *j, uint64_t name, uint64_t prev_id,
                                   uint8_t h[static SEGMENT_HEADER_SIZE]);
/* Reads and checks a segment's header: 0 and its prev_id, or -EBADMSG. */
int journal_segment_header_read(const Journal *j, int fd, uint64_t name, uint64_t *ret_prev_id);

/* journal_writer.c */

/* Segment size: an eighth of the cap, so that dropping one keeps most of the history. */
uint64_t journal_segment_max_for(uint64_t max_bytes);

/* A new active segment whose records follow prev_id. */
int journal_segment_create(Journal *j, uint64_t prev_id);

/* Room is kept for the active segment to grow to its size: the cap holds between rotations too. */
int journal_enforce_own_cap(Journal *j);
