/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal_writer - appending to a journal
 *
 * Records are buffered into a frame and written as one when it is full or
 * at a flush, after their ids are reserved in the meta file; a segment that
 * reaches its size gives way to a new one, and the oldest segments go to
 * keep the journal under its cap (and a user's journals under theirs). A
 * frame that cannot be written is folded into the lost scope
 * (journal_scope.c), written as a gap before anything newer once writing
 * works again.
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

#include <sys/uio.h>

#include "journal.h"
#include "journal_internal.h"
#include "log.h"
#include "macro.h"

/* Segment size: an eighth of the cap, so that dropping one keeps most of the history. */
uint64_t journal_segment_max_for(uint64_t max_bytes) {
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

/* Ids up to next_id + count - 1 may be handed out once this returns 0. */
static int journal_reserve(Journal *j, uint64_t count) {
        if (j->next_id + count <= j->ceiling)
                return 0;
        return journal_meta_write(j, j->next_id + count + ID_BLOCK, j->meta_losing);
}

static int fsync_dir(Journal *j) {
        return fsync(j->dir_fd) < 0 ? negative_errno() : 0;
}

/* A new active segment whose records follow prev_id. */
int journal_segment_create(Journal *j, uint64_t prev_id) {
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

        r = journal_segment_room(j);
        if (r < 0)
                return r;

        journal_segment_name(j->next_id, name);
        fd = openat(j->dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        journal_segment_header_encode(j, j->next_id, prev_id, h);
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
                        return -ENOENT; /* nothing in it */
                r = journal_segment_create(j, j->last_written);
                if (r < 0)
                        return r;
        }
        return segment_unlink_oldest(j);
}

/* Room is kept for the active segment to grow to its size: the cap holds between rotations too. */
int journal_enforce_own_cap(Journal *j) {
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
        j->segment_max = journal_segment_max_for(max_bytes);
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
                r = journal_segment_create(j, j->last_written);
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
                log_warning_errno(error,
                                  "Failed to write to journal '%s': %m; the records lost will be "
                                  "reported as a gap once it can be written",
                                  j->dir);
                j->losing = true;
                if (!j->meta_losing)
                        (void) journal_meta_write(j, j->ceiling, true);
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
        r = journal_encode_gap(&payload, &prev, JOURNAL_GAP_DISK_FULL, j->lost.whole || j->lost.n == 0, scope, j->lost.n);
        if (r >= 0)
                r = frame_write(j, &payload, 1);
        journal_buf_done(&payload);
        journal_buf_done(&prev);
        if (r < 0)
                return r;

        log_notice("Journal '%s' is written again; the records lost are reported as a gap (id %" PRIu64 ")", j->dir,
                   j->last_written);
        j->losing = false;
        gap_scope_clear(&j->lost);
        (void) journal_meta_write(j, j->ceiling, false);
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
                (void) journal_flush(j); /* a failure is a gap now, reported then */
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

        r = journal_encode_event(&j->frame, &j->prev, mask, cookie, path, new_path);
        if (r < 0) {
                j->frame.size = before;
                j->prev.size = 0; /* the next record is encoded against "" : still valid */
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

        r = journal_encode_gap(&j->frame, &j->prev, reason, whole, scope, whole ? 0 : n);
        if (r < 0) {
                j->frame.size = before;
                j->prev.size = 0;
                gap_scope_set_whole(&j->lost);
                journal_lose_frame(j, r);
                return 0;
        }
        return journal_frame_done(j);
}
