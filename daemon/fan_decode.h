/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * fan_decode - a fanotify group's bytes to events, and nothing else
 *
 * The fanotify group of the tree backend (fanotify.h) reports file handles
 * and names (FAN_REPORT_DFID_NAME | FAN_REPORT_FID | FAN_REPORT_TARGET_FID,
 * Linux >= 5.17): each event is a struct fanotify_event_metadata followed by
 * information records, of which this decoder knows four:
 *
 *   DFID_NAME      the directory (its handle) and the name in it the event
 *                  is about; "." when it is about the directory itself
 *   DFID           a directory, no name
 *   OLD_DFID_NAME  FAN_RENAME: where the entry was
 *   NEW_DFID_NAME  FAN_RENAME: where it is now
 *   FID            the object itself (a created, deleted or renamed entry's
 *                  own handle, with FAN_REPORT_TARGET_FID)
 *
 * and skips any other (a pidfd, an error record) by its length. Like
 * event_decode.h it is pure, never reads past the buffer and is safe on any
 * input: an event that does not fit, a record that overruns its event, a
 * handle longer than MAX_HANDLE_SZ, a name without its NUL or that is not a
 * plain file name (or "."), two records of one kind: -EBADMSG, and decoding
 * stops there. Handles and names point into the buffer.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The kernel's MAX_HANDLE_SZ: no file handle is longer. */
#define FAN_HANDLE_MAX 128u

typedef struct FanHandle {
        uint64_t fsid;        /* the filesystem's f_fsid: val[0] in the low half */
        int32_t type;         /* file_handle.handle_type */
        uint32_t size;        /* bytes in bytes[] (file_handle.handle_bytes) */
        const uint8_t *bytes; /* file_handle.f_handle, into the buffer */
} FanHandle;

/* A directory and, unless name is NULL, a name in it. */
typedef struct FanEntry {
        FanHandle dir;
        const char *name; /* NUL-terminated in the buffer; "." : the directory itself */
        size_t name_len;
} FanEntry;

typedef struct FanRawEvent {
        uint64_t mask; /* FAN_* bits, FAN_ONDIR for a directory */
        int32_t pid;   /* the actor (thread group) */
        int32_t fd;    /* FAN_NOFD (-1) with handles; the caller closes any other */
        bool has_entry, has_old, has_new, has_object;
        FanEntry entry;     /* DFID_NAME or DFID */
        FanEntry old_entry; /* OLD_DFID_NAME */
        FanEntry new_entry; /* NEW_DFID_NAME */
        FanHandle object;   /* FID */
} FanRawEvent;

/*
 * Decodes the event at *offset of buf[0..size) into *ret and moves *offset
 * past it.
 * Return: 1 if an event was decoded, 0 at the end of the buffer, -EBADMSG if
 * the bytes at *offset are not a whole, well-formed event (*offset is then
 * left where it was).
 */
int fan_decode(const void *buf, size_t size, size_t *offset, FanRawEvent *ret);

/* Whether two handles name the same object (same filesystem, type and bytes). */
bool fan_handle_equal(const FanHandle *a, const FanHandle *b);
