/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal_layout - the files of a journal's directory
 *
 * The meta file's two slots (identity, id ceiling, the "losing" flag,
 * written in turn so that a torn write leaves the other), and each
 * segment's name (its first id, in hex) and checksummed header.
 * journal_open.c opens and reads a journal through these, journal_writer.c
 * writes it.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "hex.h"
#include "journal.h"
#include "journal_internal.h"
#include "log.h"
#include "macro.h"

void journal_segment_name(uint64_t name, char ret[static SEGMENT_NAME_MAX]) {
        snprintf(ret, SEGMENT_NAME_MAX, SEGMENT_PREFIX "%016" PRIx64, name);
}

bool journal_segment_name_parse(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        if (strncmp(s, SEGMENT_PREFIX, strlen(SEGMENT_PREFIX)) != 0)
                return false;
        s += strlen(SEGMENT_PREFIX);
        if (strlen(s) != 16)
                return false;
        for (unsigned i = 0; i < 16; i++) {
                int x = hex_value(s[i], /* any_case= */ false);

                if (x < 0)
                        return false;
                v = v << 4 | (uint64_t) x;
        }
        *ret = v;
        return true;
}

static void meta_encode(const Journal *j, uint64_t seq, uint64_t ceiling, bool losing,
                        uint8_t slot[static META_SLOT_BYTES]) {
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

static bool meta_decode(const uint8_t slot[static META_SLOT_BYTES], JournalId *ret_id, uint64_t *ret_seq,
                        uint64_t *ret_ceiling, bool *ret_losing) {
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
int journal_meta_write(Journal *j, uint64_t ceiling, bool losing) {
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
int journal_meta_read(Journal *j, uint64_t *ret_ceiling, bool *ret_losing) {
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
int journal_meta_create(Journal *j) {
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

void journal_segment_header_encode(const Journal *j, uint64_t name, uint64_t prev_id,
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

        r = journal_pread_full(fd, h, sizeof(h), 0);
        if (r == -ENODATA)
                return -EBADMSG;
        if (r < 0)
                return r;
        if (memcmp(h, SEGMENT_MAGIC, 8) != 0 || get_le32(h + 8) != SEGMENT_VERSION ||
            get_le32(h + 12) != SEGMENT_HEADER_SIZE || get_le32(h + 52) != journal_crc32c(0, h, 52) ||
            memcmp(h + 16, j->identity.bytes, 16) != 0 || get_le64(h + 32) != name || get_le64(h + 40) >= name)
                return -EBADMSG;
        *ret_prev_id = get_le64(h + 40);
        return 0;
}
