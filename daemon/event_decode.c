/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * event_decode - the kernel's bytes to records, and nothing else
 *
 * The header is copied out with memcpy, so the buffer needs no alignment.
 * A name is well formed when it holds no '/', is not "." or "..", and has a NUL
 * within its len bytes (the kernel pads with NULs to a multiple of 16, but
 * the decoder does not insist on the padding, so a future kernel's other
 * padding still decodes). Records with len 0 have no name.
 */

#include <errno.h>
#include <string.h>

#include "event_decode.h"

int event_decode(const void *buf, size_t size, size_t *offset, RawEvent *ret) {
        const unsigned char *p = buf;
        size_t off = *offset, left;
        struct {
                int32_t wd;
                uint32_t mask, cookie, len;
        } h;
        const char *name = NULL;
        size_t name_len = 0;

        if (off >= size)
                return 0;
        left = size - off;
        if (left < EVENT_HEADER_SIZE)
                return -EBADMSG;
        memcpy(&h, p + off, EVENT_HEADER_SIZE);
        if (h.len > left - EVENT_HEADER_SIZE)
                return -EBADMSG;

        if (h.len > 0) {
                const char *nul;

                name = (const char *) p + off + EVENT_HEADER_SIZE;
                nul = memchr(name, '\0', h.len);
                if (!nul)
                        return -EBADMSG;
                name_len = (size_t) (nul - name);
                if (name_len == 0)
                        name = NULL; /* all padding: no name */
                else if (memchr(name, '/', name_len) || (name_len == 1 && name[0] == '.') ||
                         (name_len == 2 && name[0] == '.' && name[1] == '.'))
                        return -EBADMSG; /* not a plain name: would escape the watched directory */
        }

        *ret = (RawEvent) {
                .wd = h.wd,
                .mask = h.mask,
                .cookie = h.cookie,
                .name = name,
                .name_len = name_len,
        };
        *offset = off + EVENT_HEADER_SIZE + h.len;
        return 1;
}
