/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * record - one item of a client's delivery queue
 *
 * Most records are events, as they will appear in an Events signal. The
 * queue also carries the daemon's own notices (a subscription ended, events
 * were lost) so that a client sees them in kernel order with its events.
 *
 * A record is one block with its path. A queue's records are cut from its
 * own RecordArena (record_new_in()): chunks of a few KiB, each freed when
 * its last record is, so a storm costs a malloc() a chunk, not one a record
 * and subscriber, and a client that stops reading holds only chunks of its
 * own records. record_new() makes one alone (malloc), for the tests and
 * for records that belong to no queue.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"

typedef enum RecordKind {
        RECORD_EVENT,    /* one (id, mask, cookie, path, new_path) of an Events signal */
        RECORD_REMOVED,  /* WatchRemoved(id, reason) */
        RECORD_OVERFLOW, /* Overflow(ids): the ids are kept by the queue (delivery.h) */
} RecordKind;

typedef struct RecordChunk RecordChunk;

typedef struct Record {
        uint8_t kind; /* RecordKind */
        bool packed;  /* RECORD_EVENT of a PACKED subscription: an EventsPacked frame as a signal */
        uint32_t id;
        uint32_t mask;
        uint32_t cookie;
        uint64_t time_usec; /* CLOCK_MONOTONIC when it was read from the kernel */
        const char *reason; /* RECORD_REMOVED: a static string */
        char *new_path;     /* a paired rename's new path, else NULL */
        RecordChunk *chunk; /* what it was cut from; NULL: malloc'd alone */
        uint32_t path_len;  /* strlen(path) */
        char path[];        /* absolute path the record is about; "" if none */
} Record;

/* Where a queue's records are cut from. Zero-initialized is empty. */
typedef struct RecordArena {
        RecordChunk *current;           /* records are cut from here */
        LIST_HEAD(RecordChunk, chunks); /* every chunk with records in it, current included */
} RecordArena;

/* One block: the record and its path (dir + "/" + name, or dir alone if name is NULL). */
Record *record_new(RecordKind kind, uint32_t id, uint32_t mask, uint32_t cookie, uint64_t time_usec, const char *dir,
                   const char *name, size_t name_len);
/* The same, cut from a (a path too long for a chunk gets a block of its own). */
Record *record_new_in(RecordArena *a, RecordKind kind, uint32_t id, uint32_t mask, uint32_t cookie, uint64_t time_usec,
                      const char *dir, const char *name, size_t name_len);
Record *record_free(Record *r);

/* Chunks a holds (the current one, and those with records still in them). */
size_t record_arena_n_chunks(const RecordArena *a);
/* Frees the current chunk if no record is left in it: a queue that drained keeps no memory. */
void record_arena_trim(RecordArena *a);
/* At the end of a's owner: records still alive (there should be none) free their chunk themselves. */
void record_arena_done(RecordArena *a);
/* The heap bytes r holds: the struct, its path and new path (what the memory caps count). */
size_t record_bytes(const Record *r);
