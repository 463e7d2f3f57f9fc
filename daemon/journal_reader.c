/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal_reader - the readers of a durable subscription's journal
 *
 * A reader resumes after a cursor and returns every record after it, in
 * order, then "caught up"; later, what was appended since. It reads the
 * segment a window of READ_AHEAD bytes at a time (one pread for many
 * frames: a storm's frames hold a few records each, and a pread a frame was
 * most of a replay's system calls), the frames decoded where they lie in
 * it: a replay of any length costs the window (or one frame, if larger). What it cannot give it says with a gap entry: a
 * cursor of another journal or older than what is kept (the whole
 * subscription, and on from the end), damage found by the checksums, the
 * ids or the chain of segments (a CORRUPT gap, then on from the next valid
 * frame). The format is docs/JOURNAL.md; journal_writer.c writes it.
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "journal_internal.h"
#include "macro.h"

/* Bytes read ahead of the next frame. */
#define READ_AHEAD (256u * 1024u)

struct JournalReader {
        Journal *j;
        uint64_t pos;       /* the id of the last entry returned, or the starting cursor */
        uint64_t last_seen; /* the newest id of the frames read, returned or skipped */
        uint64_t seg;       /* the name of the segment being read */
        int fd;             /* -1: not open yet */
        uint64_t off;       /* the next frame's offset */
        Buf window;         /* bytes of fd from win_off on, read ahead */
        uint64_t win_off;
        Buf payload; /* a frame found by resynchronising after damage */
        Decoder dec;
        uint64_t frame_next_id;
        uint32_t frame_left;
        bool damage;          /* records lost since last_seen: a gap before what comes next */
        uint32_t jump_reason; /* a whole gap, then on from the end */
};

static ssize_t reader_segment_index(const JournalReader *r) {
        for (size_t i = 0; i < r->j->n_segments; i++)
                if (r->j->segments[i].name == r->seg)
                        return (ssize_t) i;
        return -1;
}

int journal_reader_new(Journal *j, const JournalId *identity, uint64_t after, JournalReader **ret) {
        JournalReader *r;

        r = calloc(1, sizeof(JournalReader));
        if (!r)
                return -ENOMEM;
        *r = (JournalReader) { .j = j, .pos = after, .fd = -1 };

        if (identity && memcmp(identity->bytes, j->identity.bytes, sizeof(identity->bytes)) != 0)
                r->jump_reason = JOURNAL_GAP_FOREIGN;
        else if (after > journal_last_id(j))
                r->jump_reason = JOURNAL_GAP_FOREIGN; /* not a cursor this journal gave out */
        else if (after < j->segments[0].prev_id)
                r->jump_reason = JOURNAL_GAP_HISTORY_LOST;
        else {
                size_t k = 0;

                /* The segment that holds after + 1, if it is not in a later one. */
                for (size_t i = 0; i < j->n_segments; i++)
                        if (j->segments[i].name <= after + 1)
                                k = i;
                r->seg = j->segments[k].name;
                r->last_seen = j->segments[k].prev_id; /* raised to name - 1 when it is opened */
        }
        j->n_readers++;
        *ret = r;
        return 0;
}

JournalReader *journal_reader_free(JournalReader *r) {
        if (!r)
                return NULL;
        assert(r->j->n_readers > 0);
        r->j->n_readers--;
        safe_close(r->fd);
        journal_buf_done(&r->window);
        journal_buf_done(&r->payload);
        journal_decoder_done(&r->dec);
        free(r);
        return NULL;
}

uint64_t journal_reader_position(const JournalReader *r) {
        return r->pos;
}

/*
 * The bytes [off, off + need) of the segment (which holds limit bytes), in
 * the window: 1 and where they are, 0 if the file has fewer, -errno.
 */
static int reader_window(JournalReader *r, uint64_t off, size_t need, uint64_t limit, const uint8_t **ret) {
        size_t want, got = 0;

        if (off >= r->win_off && r->window.size >= need && off - r->win_off <= r->window.size - need) {
                *ret = r->window.data + (off - r->win_off);
                return 1;
        }
        if (off > limit || limit - off < need)
                return 0;
        want = need > READ_AHEAD ? need : READ_AHEAD;
        if (want > limit - off)
                want = (size_t) (limit - off);
        r->window.size = 0;
        if (r->window.alloc < want) {
                uint8_t *p = realloc(r->window.data, want);

                if (!p)
                        return -ENOMEM;
                r->window.data = p;
                r->window.alloc = want;
        }
        r->win_off = off;
        while (got < want) {
                ssize_t n = pread(r->fd, r->window.data + got, want - got, (off_t) (off + got));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break; /* shorter than it was: what it holds is all there is */
                got += (size_t) n;
        }
        r->window.size = got;
        if (got < need)
                return 0;
        *ret = r->window.data;
        return 1;
}

/* The frame at r->off, through the window: as journal_frame_read(), the payload where it lies. */
static int reader_frame(JournalReader *r, uint64_t limit, uint64_t end_id, FrameInfo *ret, const uint8_t **ret_payload) {
        const uint8_t *h, *payload;
        FrameInfo fi;
        int k;

        k = reader_window(r, r->off, FRAME_HEADER_SIZE, limit, &h);
        if (k <= 0)
                return k;
        if (!journal_frame_header_check(h, r->off, limit, r->last_seen, end_id, &fi))
                return 0;
        k = reader_window(r, r->off, FRAME_HEADER_SIZE + fi.size, limit, &h);
        if (k <= 0)
                return k;
        payload = h + FRAME_HEADER_SIZE;
        if (!journal_frame_crc_check(h, payload, fi.size))
                return 0;
        *ret = fi;
        *ret_payload = payload;
        return 1;
}

/* On at the end of the active segment, all before it passed over. */
static int reader_to_end(JournalReader *r) {
        Segment *active = journal_active(r->j);
        char name[SEGMENT_NAME_MAX];

        r->fd = safe_close(r->fd);
        r->window.size = 0;
        journal_segment_name(active->name, name);
        r->fd = openat(r->j->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (r->fd < 0)
                return negative_errno();
        r->seg = active->name;
        r->off = active->size;
        r->pos = r->last_seen = journal_last_id(r->j);
        r->frame_left = 0;
        r->damage = false;
        return 0;
}

static void reader_gap(JournalReader *r, JournalEntry *e, uint32_t reason, uint64_t id) {
        *e = (JournalEntry) {
                .type = JOURNAL_ENTRY_GAP,
                .id = id,
                .reason = reason,
                .whole = true,
        };
        r->pos = id;
}

/* 1: a frame to decode; 0: nothing more for now; 2: history lost (jump_reason set); -errno. */
static int reader_next_frame(JournalReader *r) {
        Journal *j = r->j;

        for (;;) {
                ssize_t idx = reader_segment_index(r);
                uint64_t limit, end_id;
                const uint8_t *payload;
                FrameInfo fi;
                size_t next;
                int k;

                if (r->fd < 0 && idx >= 0) {
                        char name[SEGMENT_NAME_MAX];
                        uint64_t prev_id;

                        journal_segment_name(r->seg, name);
                        r->window.size = 0;
                        r->fd = openat(j->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                        if (r->fd < 0 && errno != ENOENT)
                                return negative_errno();
                        r->off = SEGMENT_HEADER_SIZE;
                        /* Its ids are at least its name: anything below is damage. */
                        r->last_seen = max_u64(r->last_seen, r->seg - 1);
                        if (r->fd >= 0) {
                                k = journal_segment_header_read(j, r->fd, r->seg, &prev_id);
                                if (k == -EBADMSG || (k >= 0 && prev_id != j->segments[idx].prev_id)) {
                                        r->damage = true;
                                        r->fd = safe_close(r->fd);
                                } else if (k < 0)
                                        return k;
                        }
                }

                if (r->fd >= 0) {
                        /* Its ids are below the next one's name. */
                        for (next = 0; next < j->n_segments; next++)
                                if (j->segments[next].name > r->seg)
                                        break;
                        end_id = next < j->n_segments ? j->segments[next].name : UINT64_MAX;
                        if (idx >= 0)
                                limit = j->segments[idx].size;
                        else {
                                /* Dropped while we read it: what the file holds is all it will. */
                                struct stat st;

                                if (fstat(r->fd, &st) < 0)
                                        return negative_errno();
                                limit = (uint64_t) st.st_size;
                        }

                        k = reader_frame(r, limit, end_id, &fi, &payload);
                        if (k < 0)
                                return k;
                        if (k > 0) {
                                r->off += FRAME_HEADER_SIZE + fi.size;
                                r->last_seen = fi.first_id + fi.count - 1;
                                r->frame_next_id = fi.first_id;
                                r->frame_left = fi.count;
                                /* Decoded in the window, which stays until the next frame is read. */
                                journal_decoder_start(&r->dec, payload, fi.size);
                                return 1;
                        }
                        if (r->off < limit) {
                                uint64_t at;

                                r->damage = true;
                                k = journal_frame_resync(r->fd, r->off, limit, r->last_seen, end_id, &r->payload, &at,
                                                         &fi);
                                if (k < 0)
                                        return k;
                                if (k > 0) {
                                        r->off = at;
                                        continue;
                                }
                                r->off = limit;
                        }
                        if (idx >= 0 && (size_t) idx == j->n_segments - 1)
                                return 0; /* the active segment: caught up */
                }

                /* This segment is done: on to the first one after it. */
                for (next = 0; next < j->n_segments; next++)
                        if (j->segments[next].name > r->seg)
                                break;
                if (next == j->n_segments)
                        return 0;
                if (j->segments[next].prev_id > r->last_seen) {
                        /* Records between them are gone: dropped past the cap if nothing older is left. */
                        if (next == 0) {
                                r->jump_reason = JOURNAL_GAP_HISTORY_LOST;
                                return 2;
                        }
                        r->damage = true;
                        r->last_seen = j->segments[next].prev_id;
                }
                r->fd = safe_close(r->fd);
                r->seg = j->segments[next].name;
        }
}

int journal_reader_next(JournalReader *r, JournalEntry *ret) {
        int k;

        for (;;) {
                if (r->jump_reason) {
                        uint32_t reason = r->jump_reason;

                        r->jump_reason = 0;
                        k = reader_to_end(r);
                        if (k < 0)
                                return k;
                        reader_gap(r, ret, reason, r->pos);
                        return 1;
                }

                if (r->frame_left > 0) {
                        if (r->damage) {
                                /* What was lost lies before this frame. */
                                r->damage = false;
                                if (r->frame_next_id - 1 > r->pos) {
                                        reader_gap(r, ret, JOURNAL_GAP_CORRUPT, r->frame_next_id - 1);
                                        return 1;
                                }
                        }
                        ret->id = r->frame_next_id;
                        k = journal_decode_record(&r->dec, ret);
                        if (k == -ENOMEM)
                                return k;
                        if (k < 0) {
                                /* A valid checksum over records that do not parse: the rest of the frame is lost. */
                                r->frame_left = 0;
                                r->damage = true;
                                continue;
                        }
                        r->frame_next_id++;
                        r->frame_left--;
                        if (ret->id <= r->pos)
                                continue; /* before the cursor */
                        r->pos = ret->id;
                        return 1;
                }

                k = reader_next_frame(r);
                if (k == 2)
                        continue;
                if (k == 0 && r->damage) {
                        r->damage = false;
                        if (journal_last_id(r->j) > r->pos) {
                                reader_gap(r, ret, JOURNAL_GAP_CORRUPT, journal_last_id(r->j));
                                return 1;
                        }
                }
                if (k <= 0)
                        return k;
        }
}
