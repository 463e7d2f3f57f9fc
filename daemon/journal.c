/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal - a durable subscription's change journal, on disk
 *
 * The layout (docs/JOURNAL.md has it byte by byte):
 *
 *   meta              two 512-byte slots, written in turn: identity, the id
 *                     ceiling, a "losing" flag; the valid slot with the
 *                     higher sequence number wins, so a torn write of one
 *                     slot leaves the other
 *   seg-<16 hex>      a segment: a header (identity, the id of the last
 *                     record before it), then frames; the name is the first
 *                     id it may hold, so names sort as ids do
 *
 * A frame is what one flush writes: a 24-byte header (magic, size, first
 * id, count, CRC-32C over header and payload) and records whose ids follow
 * from the first, each path stored as the bytes it shares with the previous
 * path and the bytes it does not. One checksum a frame, not a record: a
 * storm writes frames of thousands of records, where four bytes a record
 * would be a third of the journal.
 *
 * Ids never repeat: before an id is handed out, the meta file says that ids
 * below a ceiling may be in use (reserved a block at a time, written in
 * place in a file allocated at creation, so even a full disk does not stop
 * it). After a crash the journal starts at the ceiling: ids skip, they do
 * not repeat. Records are written without fsync (a storm would wait on the
 * disk); what a power cut loses is a torn tail, cut at the next open and
 * recorded as a gap, as is the daemon's down time by its caller.
 *
 * Readers (journal_reader.c) find damage by the checksums, the ids (which
 * must grow) and the chain of segments (each header names the last id
 * before it): they report a gap, resynchronise on the next valid frame and
 * go on. Nothing in a journal's bytes can make a reader crash or loop:
 * tested by fuzz-journal.
 *
 * This file is the ground floor of the journal's files: the Journal's
 * segments in memory, and what a journal tells of itself. It calls none of
 * the others; journal_open.c opens and closes a journal (journal_internal.h
 * has the layers).
 */

#include <errno.h>
#include <stdlib.h>

#include "journal.h"
#include "journal_internal.h"

bool journal_is_losing(const Journal *j) {
        return j->losing;
}

uint64_t journal_last_id(const Journal *j) {
        return j->next_id - 1;
}

const JournalId *journal_identity(const Journal *j) {
        return &j->identity;
}

void journal_stats(const Journal *j, JournalStats *ret) {
        *ret = (JournalStats) {
                .oldest_cursor = j->n_segments > 0 ? j->segments[0].prev_id : 0,
                .last_id = journal_last_id(j),
                .bytes = journal_usage(j),
                .segments = (unsigned) j->n_segments,
                .losing = j->losing,
        };
}

int journal_segment_room(Journal *j) {
        size_t a;
        Segment *s;

        if (j->n_segments < j->n_allocated)
                return 0;
        a = j->n_allocated ? j->n_allocated * 2 : 8;
        s = reallocarray(j->segments, a, sizeof(Segment));
        if (!s)
                return -ENOMEM;
        j->segments = s;
        j->n_allocated = a;
        return 0;
}

Segment *journal_active(Journal *j) {
        return j->n_segments > 0 ? &j->segments[j->n_segments - 1] : NULL;
}

uint64_t journal_usage(const Journal *j) {
        uint64_t sum = 2 * META_SLOT_SIZE;

        for (size_t i = 0; i < j->n_segments; i++)
                sum += j->segments[i].size;
        return sum;
}
