/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record - one item of a client's delivery queue
 */

#include <stdlib.h>
#include <string.h>

#include "path.h"
#include "record.h"

Record *record_new(RecordKind kind, uint32_t id, uint32_t mask, uint32_t cookie, uint64_t time_usec,
                   const char *dir, const char *name, size_t name_len) {
        size_t l = !dir ? 0 : name ? path_join_len(dir, name_len) : strlen(dir);
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
        if (dir && name)
                path_join_to(r->path, dir, name, name_len);
        else
                memcpy(r->path, dir ?: "", l + 1);
        return r;
}

Record *record_free(Record *r) {
        if (r) {
                free(r->new_path);
                free(r);
        }
        return NULL;
}

size_t record_bytes(const Record *r) {
        return sizeof(Record) + strlen(r->path) + 1 + (r->new_path ? strlen(r->new_path) + 1 : 0);
}
