/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record - one item of a client's delivery queue
 *
 * A chunk is a bump allocator: records are cut one after the other from its
 * free end and never given back one by one; it counts the records alive in
 * it and is freed when the count falls to zero, unless it is its arena's
 * current one, which is then cut from its start again. Records leave a
 * queue in the order they came, but not only (a rename's second half is
 * folded into the first and freed at once; the notices outlive a dropped
 * backlog): a chunk holding one old record stays until that one goes, which
 * costs at most a chunk per record still queued.
 *
 * The chunk size is a trade: each chunk is a malloc() and a free() for the
 * records it holds (about 36 of a 100-byte path), and a queue that has
 * records keeps at least one.
 */

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "path.h"
#include "record.h"

#define CHUNK_BYTES 4096u
/* A record larger than this is malloc()'d alone (a path of more than ~1 KiB). */
#define IN_CHUNK_MAX 1024u

struct RecordChunk {
        RecordArena *arena;               /* NULL: its arena is done, its last record frees it */
        uint32_t live;                    /* records cut from it and not freed */
        uint32_t used;                    /* bytes of data[] cut */
        LIST_FIELDS(RecordChunk, chunks); /* in arena->chunks */
        _Alignas(8) uint8_t data[];
};

#define CHUNK_DATA (CHUNK_BYTES - offsetof(RecordChunk, data))

static size_t record_size(const char *dir, const char *name, size_t name_len, size_t *ret_path_len) {
        size_t l = !dir ? 0 : name ? path_join_len(dir, name_len) : strlen(dir);

        *ret_path_len = l;
        return offsetof(Record, path) + l + 1;
}

static void record_fill(Record *r, RecordKind kind, uint32_t id, uint32_t mask, uint32_t cookie, uint64_t time_usec,
                        const char *dir, const char *name, size_t name_len, size_t l) {
        r->kind = kind;
        r->packed = false;
        r->id = id;
        r->mask = mask;
        r->cookie = cookie;
        r->time_usec = time_usec;
        r->reason = NULL;
        r->new_path = NULL;
        r->path_len = (uint32_t) l;
        if (dir && name)
                /* record_size() measured dir already: l is its prefix, "/" and name. */
                path_join_prefix_to(r->path, dir, l - 1 - name_len, name, name_len);
        else
                memcpy(r->path, dir ?: "", l + 1);
}

Record *record_new(RecordKind kind, uint32_t id, uint32_t mask, uint32_t cookie, uint64_t time_usec, const char *dir,
                   const char *name, size_t name_len) {
        size_t l, size = record_size(dir, name, name_len, &l);
        Record *r = malloc(size);

        if (!r)
                return NULL;
        r->chunk = NULL;
        record_fill(r, kind, id, mask, cookie, time_usec, dir, name, name_len, l);
        return r;
}

static RecordChunk *chunk_new(RecordArena *a) {
        RecordChunk *c = malloc(CHUNK_BYTES);

        if (!c)
                return NULL;
        c->arena = a;
        c->live = c->used = 0;
        LIST_PREPEND(chunks, a->chunks, c);
        return c;
}

static void chunk_free(RecordChunk *c) {
        if (c->arena)
                LIST_REMOVE(chunks, c->arena->chunks, c);
        free(c);
}

Record *record_new_in(RecordArena *a, RecordKind kind, uint32_t id, uint32_t mask, uint32_t cookie, uint64_t time_usec,
                      const char *dir, const char *name, size_t name_len) {
        size_t l, size = record_size(dir, name, name_len, &l);
        RecordChunk *c = a->current;
        Record *r;

        if (size > IN_CHUNK_MAX)
                return record_new(kind, id, mask, cookie, time_usec, dir, name, name_len);
        size = (size + 7) & ~(size_t) 7;
        if (!c || c->used + size > CHUNK_DATA) {
                if (c && c->live == 0)
                        c->used = 0; /* all its records are gone: from its start again */
                else {
                        /* The full one stays until its last record goes (record_free()). */
                        c = chunk_new(a);
                        if (!c)
                                return NULL;
                        a->current = c;
                }
        }
        r = (Record *) (c->data + c->used);
        c->used += (uint32_t) size;
        c->live++;
        r->chunk = c;
        record_fill(r, kind, id, mask, cookie, time_usec, dir, name, name_len, l);
        return r;
}

Record *record_free(Record *r) {
        RecordChunk *c;

        if (!r)
                return NULL;
        free(r->new_path);
        c = r->chunk;
        if (!c) {
                free(r);
                return NULL;
        }
        assert(c->live > 0);
        if (--c->live > 0)
                return NULL;
        if (c->arena && c->arena->current == c)
                c->used = 0; /* kept for the next records (record_arena_trim()) */
        else
                chunk_free(c);
        return NULL;
}

size_t record_arena_n_chunks(const RecordArena *a) {
        size_t n = 0;

        LIST_FOREACH(chunks, c, a->chunks)
                n++;
        return n;
}

void record_arena_trim(RecordArena *a) {
        RecordChunk *c = a->current;

        if (c && c->live == 0) {
                a->current = NULL;
                chunk_free(c);
        }
}

void record_arena_done(RecordArena *a) {
        record_arena_trim(a);
        while (a->chunks) {
                RecordChunk *c = a->chunks;

                LIST_REMOVE(chunks, a->chunks, c);
                c->arena = NULL;
        }
        *a = (RecordArena) {};
}

size_t record_bytes(const Record *r) {
        return sizeof(Record) + r->path_len + 1 + (r->new_path ? strlen(r->new_path) + 1 : 0);
}
