/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * event_decode - the kernel's bytes to records, and nothing else
 *
 * Both backends return the same record layout (struct inotify_event: 16
 * bytes, then len bytes of NUL-padded name), so one decoder serves both.
 * It is pure: bytes in, records out. It never reads past the buffer and is
 * safe on any input: a record that does not fit, or a name that is not a
 * plain file name, is reported as -EBADMSG and decoding stops there.
 */

#include <stddef.h>
#include <stdint.h>

typedef struct RawEvent {
        int32_t wd; /* may be 0 on the device backend: 0 is a valid wd */
        uint32_t mask;
        uint32_t cookie;
        const char *name; /* points into the buffer; NULL if the record has none */
        size_t name_len;  /* bytes before the first NUL */
} RawEvent;

/* Size of the fixed part of a record. */
#define EVENT_HEADER_SIZE 16u

/*
 * Decodes the record at *offset of buf[0..size) into *ret and moves *offset
 * past it.
 * Return: 1 if a record was decoded, 0 at the end of the buffer, -EBADMSG if
 * the bytes at *offset are not a whole, well-formed record (*offset is then
 * left where it was).
 */
int event_decode(const void *buf, size_t size, size_t *offset, RawEvent *ret);
