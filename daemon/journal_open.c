/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal_open - a journal opened, and closed
 *
 * Opening reads the directory back (journal.c's comment has its layout):
 * the meta file, or a new one and a new identity if neither slot is valid;
 * the segments, one whose header is damaged removed; the active one
 * scanned, a torn tail cut, writing moved to a new segment past damage,
 * each reported as a gap. A block of ids is reserved before any is handed
 * out. Closing flushes and writes down where ids stand. The top of the
 * journal's files: it calls the others, none calls it.
 */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "journal_internal.h"
#include "log.h"
#include "macro.h"

static int segment_compare(const void *a, const void *b) {
        const Segment *x = a, *y = b;

        return x->name < y->name ? -1 : x->name > y->name;
}

/* The segment files of j's directory, in readdir()'s order: the directory
 * opened by segments_open(), then each by segments_next(), which skips
 * what is no segment's name. */
static int segments_open(Journal *j, DIR **ret) {
        return fdopendir_take(openat(j->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret);
}

/* 1, the next segment's file name (valid until the next call) and first id; 0 at the end; -errno. */
static int segments_next(DIR *d, const char **ret_file, uint64_t *ret_name) {
        struct dirent *de;

        while ((errno = 0, de = readdir(d)))
                if (journal_segment_name_parse(de->d_name, ret_name)) {
                        *ret_file = de->d_name;
                        return 1;
                }
        return errno != 0 ? negative_errno() : 0;
}

/* Reads the directory's segments, oldest first; those whose header is damaged are removed. */
static int journal_load_segments(Journal *j, bool *ret_damaged) {
        _cleanup_closedir_ DIR *d = NULL;
        const char *file;
        uint64_t name;
        int r;

        r = segments_open(j, &d);
        if (r < 0)
                return r;

        while ((r = segments_next(d, &file, &name)) > 0) {
                _cleanup_close_ int sfd = -1;
                uint64_t prev_id;
                struct stat st;

                sfd = openat(j->dir_fd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (sfd < 0)
                        return negative_errno();
                if (fstat(sfd, &st) < 0)
                        return negative_errno();
                r = S_ISREG(st.st_mode) ? journal_segment_header_read(j, sfd, name, &prev_id) : -EBADMSG;
                if (r == -EBADMSG) {
                        log_warning("Journal segment '%s/%s' has no valid header: removed, reported as a gap", j->dir,
                                    file);
                        if (unlinkat(j->dir_fd, file, 0) < 0)
                                return negative_errno();
                        *ret_damaged = true;
                        continue;
                }
                if (r < 0)
                        return r;

                r = journal_segment_room(j);
                if (r < 0)
                        return r;
                j->segments[j->n_segments++] = (Segment) {
                        .name = name,
                        .prev_id = prev_id,
                        .size = (uint64_t) st.st_size,
                };
        }
        if (r < 0)
                return r;

        if (j->n_segments > 1)
                qsort(j->segments, j->n_segments, sizeof(Segment), segment_compare);
        return 0;
}

/* A journal whose meta is unreadable cannot vouch for its ids: its segments go, a new identity comes. */
static int journal_remove_segments(Journal *j, bool *ret_any) {
        _cleanup_closedir_ DIR *d = NULL;
        const char *file;
        uint64_t name;
        int r;

        r = segments_open(j, &d);
        if (r < 0)
                return r;
        while ((r = segments_next(d, &file, &name)) > 0) {
                if (unlinkat(j->dir_fd, file, 0) < 0)
                        return negative_errno();
                *ret_any = true;
        }
        return r;
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

        r = journal_meta_read(j, &ceiling, &losing);
        if (r == -ENODATA) {
                bool any = false;

                r = journal_remove_segments(j, &any);
                if (r < 0)
                        return r;
                if (any)
                        log_warning("Journal '%s' has no valid meta file: its history is dropped, "
                                    "a new identity makes every cursor foreign",
                                    dir);
                r = journal_meta_create(j);
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
                r = journal_segment_scan(j->active_fd, active->size, max_u64(active->prev_id, active->name - 1), &scan);
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
                                log_warning("Journal segment '%s/%s' ends in %" PRIu64
                                            " bytes of a torn write: cut, reported as a gap",
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
        r = journal_meta_write(j, j->next_id + ID_BLOCK, losing);
        if (r < 0)
                return r;

        if (j->n_segments == 0)
                /* Nothing before it can be vouched for: a cursor below next_id - 1 lost its history. */
                r = journal_segment_create(j, j->next_id - 1);
        else if (new_segment)
                r = journal_segment_create(j, j->last_written);
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
                (void) journal_meta_write(j, j->ceiling, false);

        return journal_enforce_own_cap(j);
}

int journal_open(const char *dir, uint64_t max_bytes, Journal **ret) {
        Journal *j; /* freed by hand: cppcheck does not know _cleanup_ and would call it a leak */
        int r;

        if (max_bytes < JOURNAL_MAX_BYTES_MIN || max_bytes > JOURNAL_MAX_BYTES_MAX)
                return -EINVAL;

        j = calloc(1, sizeof(Journal));
        if (!j)
                return -ENOMEM;
        j->dir_fd = j->meta_fd = j->active_fd = -1;
        j->max_bytes = max_bytes;
        j->segment_max = journal_segment_max_for(max_bytes);
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
                        (void) journal_meta_write(j, j->next_id, false);
        }
        return journal_release(j);
}
