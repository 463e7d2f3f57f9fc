/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * record - one item of a client's delivery queue
 *
 * Most records are events, as they will appear in an Events signal. The
 * queue also carries the daemon's own notices (a subscription ended, events
 * were lost) so that a client sees them in kernel order with its events.
 */

#include <stddef.h>
#include <stdint.h>

typedef enum RecordKind {
        RECORD_EVENT,           /* one (id, mask, cookie, path, new_path) of an Events signal */
        RECORD_REMOVED,         /* WatchRemoved(id, reason) */
        RECORD_OVERFLOW,        /* Overflow(ids): the ids are kept by the queue (delivery.h) */
} RecordKind;

typedef struct Record {
        RecordKind kind;
        uint32_t id;
        uint32_t mask;
        uint32_t cookie;
        uint64_t time_usec;     /* CLOCK_MONOTONIC when it was read from the kernel */
        const char *reason;     /* RECORD_REMOVED: a static string */
        char *new_path;         /* a paired rename's new path, else NULL */
        char path[];            /* absolute path the record is about; "" if none */
} Record;

/* One allocation: the record and its path (dir + "/" + name, or dir alone if name is NULL). */
Record *record_new(RecordKind kind, uint32_t id, uint32_t mask, uint32_t cookie, uint64_t time_usec,
                   const char *dir, const char *name, size_t name_len);
Record *record_free(Record *r);
/* The heap bytes r holds: the struct, its path and new path (what the memory caps count). */
size_t record_bytes(const Record *r);
