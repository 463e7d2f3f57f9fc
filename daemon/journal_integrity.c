/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal_integrity - what of a journal's bytes can be trusted
 *
 * CRC-32C (Castagnoli) over each frame's header and payload, and over the
 * meta slots and segment headers; a frame read is checked whole (magic,
 * size, ids after the last ones and below the next segment, checksum)
 * before anything in it is used, and after damage the next valid frame is
 * found by its magic. journal_segment_scan() does this over the active segment at
 * open: where its valid frames end, and whether valid ones follow damage.
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


#include "journal.h"
#include "journal_internal.h"
#include "macro.h"

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

                crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
                        crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
                        crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
                p += 8;
                size -= 8;
        }
        while (size--)
                crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
        return ~crc;
}

int journal_pread_full(int fd, void *buf, size_t size, uint64_t off) {
        size_t done = 0;

        while (done < size) {
                ssize_t n = pread(fd, (uint8_t *) buf + done, size - done, (off_t) (off + done));

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        return -ENODATA; /* the file is shorter */
                done += (size_t) n;
        }
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
        if (get_le32(h) != FRAME_MAGIC || size > FRAME_READ_MAX || size > limit - off - FRAME_HEADER_SIZE || count == 0 ||
            count > size || first_id <= after_id || first_id > UINT64_MAX - count || first_id + count > end_id)
                return false;
        *ret = (FrameInfo) { .first_id = first_id, .count = count, .size = size };
        return true;
}

bool journal_frame_crc_check(const uint8_t h[static FRAME_HEADER_SIZE], const uint8_t *payload, size_t size) {
        uint32_t crc = journal_crc32c(0, h, 20);

        return journal_crc32c(crc, payload, size) == get_le32(h + 20);
}

int journal_frame_read(int fd, uint64_t off, uint64_t limit, uint64_t after_id, uint64_t end_id, Buf *payload,
                       FrameInfo *ret) {
        uint8_t h[FRAME_HEADER_SIZE];
        FrameInfo fi;
        int r;

        if (off > limit || limit - off < FRAME_HEADER_SIZE)
                return 0;
        r = journal_pread_full(fd, h, sizeof(h), off);
        if (r == -ENODATA)
                return 0;
        if (r < 0)
                return r;
        if (!journal_frame_header_check(h, off, limit, after_id, end_id, &fi))
                return 0;

        payload->size = 0;
        r = journal_buf_reserve(payload, fi.size);
        if (r < 0)
                return r;
        r = journal_pread_full(fd, payload->data, fi.size, off + FRAME_HEADER_SIZE);
        if (r == -ENODATA)
                return 0;
        if (r < 0)
                return r;
        if (!journal_frame_crc_check(h, payload->data, fi.size))
                return 0;
        payload->size = fi.size;
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

/* The active segment at open: its ids after after_id (the larger of its prev id and its name - 1). */
int journal_segment_scan(int fd, uint64_t size, uint64_t after_id, SegmentScan *ret) {
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
