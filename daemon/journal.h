/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * journal - a durable subscription's change journal, on disk
 *
 * One journal is one directory: a "meta" file (the journal's identity and
 * how far ids have been handed out) and segment files "seg-<16 hex>" that
 * are only ever appended to, the newest one at a time. Records are events
 * (mask, cookie, path, new path) and gaps (events were lost: rescan this
 * scope). Every record gets a 64-bit id that only grows and is never used
 * twice, across crashes and restarts too; ids may skip (after a crash, a
 * restart, records lost to a full disk), so a hole in the ids means nothing:
 * only a gap says that something was lost.
 *
 * A reader resumes after a cursor (the id of the last entry its client
 * processed) and gets, in order, every record after it, then "caught up";
 * the same reader later gets the records appended since. Whatever it cannot
 * give (the cursor is older than the oldest record kept, it comes from
 * another journal, the file is damaged) it says with a gap entry, never by
 * silence.
 *
 * File I/O only: no bus, no event loop. The on-disk format, and why it is
 * what it is, is in docs/JOURNAL.md.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "journal_types.h"

typedef struct JournalReader JournalReader;

#define JOURNAL_ID_STRING_MAX 33 /* 32 lowercase hex digits and a NUL */

/* Why a gap: the numbers are stored on disk, never reuse one. */
typedef enum JournalGapReason {
        JOURNAL_GAP_DAEMON_DOWN = 1,  /* the daemon was not watching (stored) */
        JOURNAL_GAP_OVERFLOW = 2,     /* the kernel's queue overflowed (stored) */
        JOURNAL_GAP_DISK_FULL = 3,    /* records could not be written (stored) */
        JOURNAL_GAP_CORRUPT = 4,      /* the journal is damaged (stored: a torn tail cut;
                                       * or found by a reader) */
        JOURNAL_GAP_HISTORY_LOST = 5, /* the cursor is older than what is kept (reader) */
        JOURNAL_GAP_FOREIGN = 6,      /* the cursor is not one of this journal's (reader) */
        JOURNAL_GAP_ACCESS = 7,       /* watches could not be placed (stored) */
        JOURNAL_GAP_REMOVED = 8,      /* the watched path went (deleted, unmounted); followed
                                       * until it is back (stored) */
} JournalGapReason;

/* Longest path a record holds, in bytes (no NUL, else any bytes). */
#define JOURNAL_PATH_MAX 65535

/* Smallest and largest max_bytes of one journal. */
#define JOURNAL_MAX_BYTES_MIN (64u * 1024u)
#define JOURNAL_MAX_BYTES_MAX (UINT64_C(1) << 40)

typedef struct JournalStats {
        uint64_t oldest_cursor; /* the oldest cursor a reader resumes from without loss */
        uint64_t last_id;       /* the newest id handed out; 0: none yet */
        uint64_t bytes;         /* on disk */
        unsigned segments;
        bool losing; /* records being lost (disk full); a gap pending */
} JournalStats;

/*
 * Opens the journal in directory dir, making both if need be (mode 0700).
 * The directory is locked: a second open fails with -EBUSY. A torn tail (a
 * crash in the middle of a write) is cut and a CORRUPT gap appended for it;
 * a journal that was losing records when it stopped gets its DISK_FULL gap.
 * max_bytes: the cap of the segments, the oldest dropped past it.
 */
int journal_open(const char *dir, uint64_t max_bytes, Journal **ret);

/* Flushes, and writes down where ids stand (so a clean stop skips none). */
Journal *journal_free(Journal *j);

/*
 * Appending buffers a record; journal_flush() writes what is buffered as one
 * frame. Records get their ids when written. Paths are absolute, at most
 * JOURNAL_PATH_MAX bytes. -EINVAL/-ENAMETOOLONG for a bad record; a record
 * that cannot be written is never an error here: it becomes part of a gap.
 */
int journal_append_event(Journal *j, uint32_t mask, uint32_t cookie, const char *path, const char *new_path);
/* whole, or scope[0..n): n == 0 with whole false is -EINVAL. */
int journal_append_gap(Journal *j, JournalGapReason reason, bool whole, const JournalScope *scope, size_t n);

/*
 * Writes the buffered records. On a write failure (ENOSPC, EDQUOT, EIO...)
 * they are turned into a pending DISK_FULL gap scoped to their directories,
 * written first by a later flush that succeeds; the failure is returned
 * (the journal logs the start and the end of a loss, once each).
 */
int journal_flush(Journal *j);

bool journal_is_losing(const Journal *j);
uint64_t journal_last_id(const Journal *j);
const JournalId *journal_identity(const Journal *j);
void journal_stats(const Journal *j, JournalStats *ret);

/* A new cap (on reload); drops the oldest segments past it. */
int journal_set_max_bytes(Journal *j, uint64_t max_bytes);

/* Drops the oldest segment (rotating first if only one is left): -ENOENT if nothing can go. */
int journal_drop_oldest(Journal *j);

/* Drops segments of the largest journals until the n together use at most cap bytes. */
int journal_enforce_cap(Journal *const *journals, size_t n, uint64_t cap);

/*
 * A reader that returns what comes after cursor `after`. identity: the
 * journal the cursor came from, NULL if it is known to be this one. The
 * reader sees what journal_flush() has written.
 */
int journal_reader_new(Journal *j, const JournalId *identity, uint64_t after, JournalReader **ret);
JournalReader *journal_reader_free(JournalReader *r);

/* 1 and an entry; 0 when caught up (call again after the next flush); -errno on an I/O error. */
int journal_reader_next(JournalReader *r, JournalEntry *ret);

/* The id of the last entry returned (the cursor), or the starting cursor. */
uint64_t journal_reader_position(const JournalReader *r);

void journal_id_to_string(const JournalId *id, char ret[static JOURNAL_ID_STRING_MAX]);
int journal_id_from_string(const char *s, JournalId *ret);

const char *journal_gap_reason_to_string(uint32_t reason);

/* CRC-32C (Castagnoli), as the format uses it: also for the fuzzer that builds frames. */
uint32_t journal_crc32c(uint32_t crc, const void *buf, size_t size);
