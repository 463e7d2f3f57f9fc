/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record - one item of a client's delivery queue
 */

#include <stdlib.h>
#include <string.h>

#include "record.h"

Record *record_new(RecordKind kind, uint32_t id, uint32_t mask, uint32_t cookie, uint64_t time_usec,
                   const char *dir, const char *name, size_t name_len) {
        size_t dl = dir ? strlen(dir) : 0;
        size_t l = dl + (name ? 1 + name_len : 0);
        Record *r;

        r = malloc(sizeof(Record) + l + 1);
        if (!r)
                return NULL;
        *r = (Record) {
                .kind = kind,
                .id = id,
                .mask = mask,
                .cookie = cookie,
                .time_usec = time_usec,
        };
        if (dl > 0)
                memcpy(r->path, dir, dl);
        if (name) {
                /* "/" + name, except under "/" itself */
                if (dl == 1 && dir[0] == '/')
                        dl = 0, l--;
                r->path[dl] = '/';
                memcpy(r->path + dl + 1, name, name_len);
        }
        r->path[l] = '\0';
        return r;
}

Record *record_free(Record *r) {
        if (r) {
                free(r->new_path);
                free(r);
        }
        return NULL;
}
