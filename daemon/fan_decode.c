/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fan_decode - a fanotify group's bytes to events, and nothing else
 *
 * Everything is copied out with memcpy, so the buffer needs no alignment.
 * The layout (linux/fanotify.h): the metadata (event_len, vers, metadata_len,
 * mask, fd, pid), then from metadata_len on, up to event_len, information
 * records, each a header (info_type, len) of len bytes in all. A handle
 * record is the header, the fsid (8 bytes), a struct file_handle
 * (handle_bytes, handle_type, f_handle[handle_bytes]) and, for the *_NAME
 * kinds, a NUL-terminated name; the kernel pads a record to 4 bytes, and
 * the decoder does not insist on it.
 */

#include <errno.h>
#include <linux/fanotify.h>
#include <string.h>

#include "fan_decode.h"

/* struct fanotify_event_metadata, as laid out by the kernel. */
typedef struct {
        uint32_t event_len;
        uint8_t vers, reserved;
        uint16_t metadata_len;
        uint64_t mask;
        int32_t fd, pid;
} Metadata;

/* struct fanotify_event_info_header + fsid + struct file_handle's head. */
typedef struct {
        uint8_t info_type, pad;
        uint16_t len;
} InfoHeader;

#define FSID_SIZE        8u
#define FILE_HANDLE_HEAD 8u /* handle_bytes, handle_type */

_Static_assert(sizeof(Metadata) == FAN_EVENT_METADATA_LEN, "fanotify_event_metadata layout");
_Static_assert(sizeof(InfoHeader) == sizeof(struct fanotify_event_info_header), "info header layout");

bool fan_handle_equal(const FanHandle *a, const FanHandle *b) {
        return a->fsid == b->fsid && a->type == b->type && a->size == b->size && memcmp(a->bytes, b->bytes, a->size) == 0;
}

/* A handle record of len bytes at p: the handle, and the name if with_name. */
static int decode_fid(const uint8_t *p, size_t len, bool with_name, FanEntry *ret) {
        uint32_t words[2], handle_bytes;
        int32_t handle_type;
        size_t at = sizeof(InfoHeader);

        if (len < at + FSID_SIZE + FILE_HANDLE_HEAD)
                return -EBADMSG;
        memcpy(words, p + at, FSID_SIZE);
        at += FSID_SIZE;
        memcpy(&handle_bytes, p + at, 4);
        memcpy(&handle_type, p + at + 4, 4);
        at += FILE_HANDLE_HEAD;
        if (handle_bytes == 0 || handle_bytes > FAN_HANDLE_MAX || handle_bytes > len - at)
                return -EBADMSG;
        *ret = (FanEntry) {
                .dir = {
                        .fsid = (uint64_t) words[0] | (uint64_t) words[1] << 32,
                        .type = handle_type,
                        .size = handle_bytes,
                        .bytes = p + at,
                },
        };
        at += handle_bytes;
        if (with_name) {
                const char *name = (const char *) p + at;
                const char *nul = memchr(name, '\0', len - at);
                size_t n;

                if (!nul)
                        return -EBADMSG;
                n = (size_t) (nul - name);
                /* A plain name, or "." (the directory itself): nothing that leaves it. */
                if (n == 0 || n > 255 || memchr(name, '/', n) || (n == 2 && name[0] == '.' && name[1] == '.'))
                        return -EBADMSG;
                ret->name = name;
                ret->name_len = n;
        }
        return 0;
}

int fan_decode(const void *buf, size_t size, size_t *offset, FanRawEvent *ret) {
        const uint8_t *p = buf;
        size_t off = *offset, left, at;
        FanRawEvent ev = {};
        Metadata m;

        if (off >= size)
                return 0;
        left = size - off;
        if (left < sizeof(Metadata))
                return -EBADMSG;
        p += off;
        memcpy(&m, p, sizeof(m));
        if (m.vers != FANOTIFY_METADATA_VERSION || m.metadata_len < sizeof(Metadata) || m.event_len < m.metadata_len ||
            m.event_len > left)
                return -EBADMSG;

        ev.mask = m.mask;
        ev.pid = m.pid;
        ev.fd = m.fd;
        for (at = m.metadata_len; at < m.event_len;) {
                InfoHeader h;
                FanEntry e;
                int r = 0;

                if (m.event_len - at < sizeof(h))
                        return -EBADMSG;
                memcpy(&h, p + at, sizeof(h));
                if (h.len < sizeof(h) || h.len > m.event_len - at)
                        return -EBADMSG;
                switch (h.info_type) {
                case FAN_EVENT_INFO_TYPE_DFID_NAME:
                case FAN_EVENT_INFO_TYPE_DFID:
                        if (ev.has_entry)
                                return -EBADMSG;
                        r = decode_fid(p + at, h.len, h.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME, &ev.entry);
                        ev.has_entry = true;
                        break;
                case FAN_EVENT_INFO_TYPE_OLD_DFID_NAME:
                        if (ev.has_old)
                                return -EBADMSG;
                        r = decode_fid(p + at, h.len, true, &ev.old_entry);
                        ev.has_old = true;
                        break;
                case FAN_EVENT_INFO_TYPE_NEW_DFID_NAME:
                        if (ev.has_new)
                                return -EBADMSG;
                        r = decode_fid(p + at, h.len, true, &ev.new_entry);
                        ev.has_new = true;
                        break;
                case FAN_EVENT_INFO_TYPE_FID:
                        if (ev.has_object)
                                return -EBADMSG;
                        r = decode_fid(p + at, h.len, false, &e);
                        ev.object = e.dir;
                        ev.has_object = true;
                        break;
                default:
                        break; /* a pidfd, an error record, a future kind: not ours */
                }
                if (r < 0)
                        return r;
                at += h.len;
        }
        *ret = ev;
        *offset = off + m.event_len;
        return 1;
}
