/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * journal_types - the words of journal.h that the journal's files share
 * through journal_internal.h too: the Journal (opaque here, its struct is
 * journal_internal.h's), its identity, the entries a reader returns and the
 * scope of a gap. journal.h and journal_internal.h include it; it includes
 * no header of the journal.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Journal Journal;

/* A journal's identity: 128 random bits, made with the journal. */
typedef struct JournalId {
        uint8_t bytes[16];
} JournalId;

/* At most this many directories in a gap's scope; past it, the whole subscription. */
#define JOURNAL_GAP_MAX_SCOPE 64

/* One directory to rescan: its entries; with recursive, its whole tree. */
typedef struct JournalScope {
        const char *path;
        bool recursive;
} JournalScope;

typedef enum JournalEntryType {
        JOURNAL_ENTRY_EVENT,
        JOURNAL_ENTRY_GAP,
} JournalEntryType;

/*
 * What a reader returns. Strings are NUL-terminated bytes owned by the
 * reader, valid until its next call.
 *
 * A gap's id is the cursor the client stores once it has rescanned the
 * scope: a stored gap has an id of its own; a gap the reader found itself
 * (damage, history lost) has the id of the last record it covers, which may
 * be the id of the entry before it. A gap whose scope is the whole
 * subscription for a cursor the reader cannot place (HISTORY_LOST, FOREIGN)
 * moves the reader to the end: after a full rescan nothing older is of use.
 */
typedef struct JournalEntry {
        JournalEntryType type;
        uint64_t id;

        /* JOURNAL_ENTRY_EVENT */
        uint32_t mask;
        uint32_t cookie;
        const char *path;
        const char *new_path; /* a paired rename's new path, else NULL */

        /* JOURNAL_ENTRY_GAP */
        uint32_t reason; /* JournalGapReason, or a newer one */
        bool whole;      /* the whole subscription; else scope[] */
        size_t n_scope;
        const JournalScope *scope;
} JournalEntry;
