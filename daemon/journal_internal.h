/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * journal_internal - what the journal (journal.c) shares with its readers
 * (journal_reader.c): the journal's state, its segments, and the frame and
 * record codec both sides read with. Not for anyone else: the rest of the
 * daemon sees journal.h, which its includers include first (it is not
 * included here: journal.c is that header's module, and modules do not
 * include each other both ways).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEGMENT_PREFIX          "seg-"
#define SEGMENT_NAME_MAX        (sizeof(SEGMENT_PREFIX) + 16)
#define SEGMENT_HEADER_SIZE     56u
#define FRAME_HEADER_SIZE       24u

static inline uint64_t max_u64(uint64_t a, uint64_t b) {
        return a > b ? a : b;
}

typedef struct Buf {
        uint8_t *data;
        size_t size;
        size_t alloc;
} Buf;

typedef struct Decoder {
        const uint8_t *p, *end;
        Buf prev;                       /* the previous path of the frame */
        Buf str;                        /* the current entry's strings */
        size_t scope_off[JOURNAL_GAP_MAX_SCOPE];
        JournalScope scope[JOURNAL_GAP_MAX_SCOPE];
} Decoder;

typedef struct GapScope {
        bool whole;
        size_t n;
        size_t bytes;
        char *path[JOURNAL_GAP_MAX_SCOPE];
        bool recursive[JOURNAL_GAP_MAX_SCOPE];
} GapScope;

typedef struct Segment {
        uint64_t name;          /* the first id it may hold; its file is seg-<name in hex> */
        uint64_t prev_id;       /* the last id before it; 0: none, the journal's first */
        uint64_t size;          /* bytes; the active one's: the valid bytes */
} Segment;

struct Journal {
        char *dir;              /* for messages */
        int dir_fd;
        int meta_fd;            /* holds the lock */
        JournalId identity;

        uint64_t max_bytes;
        uint64_t segment_max;

        Segment *segments;      /* oldest first; the last is the active one */
        size_t n_segments;
        size_t n_allocated;
        int active_fd;

        uint64_t next_id;       /* the next id to hand out */
        uint64_t last_written;  /* the id of the newest record in the segments */
        uint64_t ceiling;       /* ids below it may have been handed out (meta) */
        uint64_t meta_seq;
        bool meta_losing;

        Buf frame;              /* records buffered for the next frame */
        uint32_t frame_count;
        Buf prev;               /* the frame's previous path */

        bool losing;            /* records were lost and their gap is not written yet */
        GapScope lost;

        unsigned n_readers;
};

typedef struct FrameInfo {
        uint64_t first_id;
        uint32_t count;
        uint32_t size;          /* of the payload */
} FrameInfo;

void journal_buf_done(Buf *b);

/* The frame's records, one at a time: journal_decode_record() fills e (e->id is the caller's). */
void journal_decoder_start(Decoder *d, const uint8_t *p, size_t size);
void journal_decoder_done(Decoder *d);
int journal_decode_record(Decoder *d, JournalEntry *e);

void journal_segment_name(uint64_t name, char ret[static SEGMENT_NAME_MAX]);
int journal_segment_header_read(const Journal *j, int fd, uint64_t name, uint64_t *ret_prev_id);
/* A frame header h read at off, before limit: is it a frame whose ids lie after after_id and below end_id? */
bool journal_frame_header_check(const uint8_t h[static FRAME_HEADER_SIZE], uint64_t off, uint64_t limit,
                                uint64_t after_id, uint64_t end_id, FrameInfo *ret);
/* Does the CRC of header h cover this payload? */
bool journal_frame_crc_check(const uint8_t h[static FRAME_HEADER_SIZE], const uint8_t *payload, size_t size);
int journal_frame_read(int fd, uint64_t off, uint64_t limit, uint64_t after_id, uint64_t end_id,
                       Buf *payload, FrameInfo *ret);
int journal_frame_resync(int fd, uint64_t off, uint64_t limit, uint64_t after_id, uint64_t end_id, Buf *payload,
                         uint64_t *ret_off, FrameInfo *ret);

/* The segment appended to, or NULL (none yet). */
static inline Segment *journal_active(Journal *j) {
        return j->n_segments > 0 ? &j->segments[j->n_segments - 1] : NULL;
}

