/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * events_batch - an Events signal being built, that no one record can spoil
 *
 * See events_batch.h. The records stay owned by the batch until their
 * signal is sent; that costs nothing in the common case (they are freed a
 * little later than they were appended) and is what lets a signal be built
 * again without the record that spoiled it.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "events_batch.h"
#include "macro.h"
#include "path_escape.h"

/* A record as it goes on the bus: its paths escaped if either must be. */
typedef struct Wire {
        uint32_t mask;
        const char *path, *new_path;
        size_t path_len, new_path_len;
        char *path_buf, *new_path_buf; /* the escaped forms, when used */
} Wire;

static void wire_done(Wire *w) {
        free(w->path_buf);
        free(w->new_path_buf);
}

static int wire_init(Wire *w, const Record *rec) {
        const char *new_path = rec->new_path ?: "";

        *w = (Wire) {
                .mask = rec->mask & ~WATCHD_PATH_ESCAPED,
                .path = rec->path,
                .path_len = rec->path_len,
                .new_path = new_path,
                .new_path_len = rec->new_path ? strlen(new_path) : 0,
        };
        if (!path_needs_escape_n(w->path, w->path_len) && !path_needs_escape_n(new_path, w->new_path_len))
                return 0;
        /* One flag for the record: both paths escaped, so a client reads both the same way. */
        w->path_buf = path_escape(rec->path);
        w->new_path_buf = path_escape(new_path);
        if (!w->path_buf || !w->new_path_buf) {
                wire_done(w);
                return -ENOMEM;
        }
        w->path = w->path_buf;
        w->path_len = strlen(w->path);
        w->new_path = w->new_path_buf;
        w->new_path_len = strlen(w->new_path);
        w->mask |= WATCHD_PATH_ESCAPED;
        return 0;
}

/* (uuuss) marshalled: 8-aligned, three u, two strings with their length and NUL, padding. */
static size_t wire_size(const Wire *w) {
        return 40 + w->path_len + w->new_path_len;
}

size_t events_batch_record_size(const Record *rec) {
        const char *new_path = rec->new_path ?: "";
        size_t new_len = strlen(new_path);

        if (!path_needs_escape_n(rec->path, rec->path_len) && !path_needs_escape_n(new_path, new_len))
                return 40 + rec->path_len + new_len;
        return 40 + path_escaped_len(rec->path) + path_escaped_len(new_path);
}

/* A string whose bytes wire_init() checked: sd-bus's own check of each
 * string (sd_bus_message_append_basic()) is the rule path_needs_escape()
 * applies already, and cost a third of the signal's building (callgrind:
 * docs/BENCHMARKS.md), so the bytes are copied into the space it makes. */
static int append_checked_string(sd_bus_message *msg, const char *s, size_t len) {
        char *p;
        int r;

        r = sd_bus_message_append_string_space(msg, len, &p);
        if (r < 0)
                return r;
        memcpy(p, s, len);
        return 0;
}

/* Field by field: sd_bus_message_append() parses its signature and walks a
 * va_list for each record, about a fifth of the cost of appending one
 * (callgrind, 10,000 records: see docs/BENCHMARKS.md). */
static int append_default(sd_bus_message *msg, uint32_t id, uint32_t mask, uint32_t cookie, const Wire *w) {
        int r;

        r = sd_bus_message_open_container(msg, 'r', "uuuss");
        if (r >= 0)
                r = sd_bus_message_append_basic(msg, 'u', &id);
        if (r >= 0)
                r = sd_bus_message_append_basic(msg, 'u', &mask);
        if (r >= 0)
                r = sd_bus_message_append_basic(msg, 'u', &cookie);
        if (r >= 0)
                r = append_checked_string(msg, w->path, w->path_len);
        if (r >= 0)
                r = append_checked_string(msg, w->new_path, w->new_path_len);
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        return r;
}

static int append_wire(EventsBatch *b, const Record *rec, const Wire *w) {
        if (b->ops->append)
                return b->ops->append(b->msg, rec->id, w->mask, rec->cookie, w->path, w->new_path);
        return append_default(b->msg, rec->id, w->mask, rec->cookie, w);
}

static int append(EventsBatch *b, const Record *rec) {
        _cleanup_(wire_done) Wire w = {};
        int r;

        r = wire_init(&w, rec);
        if (r < 0)
                return r;
        return append_wire(b, rec, &w);
}

void events_batch_init(EventsBatch *b, const EventsBatchOps *ops, void *userdata, size_t max_records) {
        *b = (EventsBatch) {
                .ops = ops,
                .userdata = userdata,
                .max_records = max_records > 0 ? max_records : 1,
        };
}

static size_t n_held(const EventsBatch *b) {
        return b->records ? b->records->len : 0;
}

static void drop(EventsBatch *b, Record *rec) {
        b->ops->lost(b->userdata, rec->id);
        record_free(rec);
}

/* Every record held goes to lost(); b is empty after. */
static void drop_all(EventsBatch *b) {
        for (size_t i = 0; i < n_held(b); i++)
                drop(b, b->records->pdata[i]);
        if (b->records)
                g_ptr_array_set_size(b->records, 0);
        b->size = 0;
        b->msg = sd_bus_message_unref(b->msg);
}

static int start(EventsBatch *b) {
        int r;

        r = b->ops->new_signal(b->userdata, &b->msg);
        if (r >= 0)
                r = sd_bus_message_open_container(b->msg, 'a', "(uuuss)");
        if (r < 0)
                b->msg = sd_bus_message_unref(b->msg);
        return r;
}

/* A failed append left b->msg unusable: the records it held go into a new one. */
static void rebuild(EventsBatch *b) {
        int r;

        b->msg = sd_bus_message_unref(b->msg);
        if (n_held(b) == 0)
                return;
        r = start(b);
        for (size_t i = 0; r >= 0 && i < n_held(b); i++)
                r = append(b, b->records->pdata[i]);
        if (r < 0)
                drop_all(b); /* they went in once: this is out of memory, and they are lost, not silently */
}

int events_batch_add(EventsBatch *b, Record *rec) {
        _cleanup_(wire_done) Wire w = {};
        size_t size;
        int r;

        r = wire_init(&w, rec);
        if (r < 0) {
                drop(b, rec);
                return r;
        }
        size = wire_size(&w);
        /* Cannot happen with paths shorter than PATH_MAX, but never send what a bus would refuse. */
        if (size > EVENTS_BATCH_MAX_BYTES) {
                drop(b, rec);
                return -E2BIG;
        }
        if (n_held(b) > 0 && b->size + size > EVENTS_BATCH_MAX_BYTES)
                (void) events_batch_send(b);

        if (!b->records)
                b->records = g_ptr_array_sized_new(64);
        if (!b->msg) {
                r = start(b);
                if (r < 0) {
                        drop(b, rec);
                        return r;
                }
        }

        r = append_wire(b, rec, &w);
        if (r < 0) {
                rebuild(b);
                drop(b, rec);
                return r;
        }
        g_ptr_array_add(b->records, rec);
        b->size += size;
        if (n_held(b) >= b->max_records)
                (void) events_batch_send(b);
        return 0;
}

int events_batch_send(EventsBatch *b) {
        size_t n = n_held(b);
        int r;

        if (!b->msg)
                return 0;
        r = sd_bus_message_close_container(b->msg);
        if (r >= 0)
                r = b->ops->send(b->userdata, b->msg, n);
        if (r < 0) {
                drop_all(b);
                return r;
        }
        for (size_t i = 0; i < n; i++)
                record_free(b->records->pdata[i]);
        if (b->records)
                g_ptr_array_set_size(b->records, 0);
        b->size = 0;
        b->msg = sd_bus_message_unref(b->msg);
        return n > INT32_MAX ? INT32_MAX : (int) n;
}

void events_batch_done(EventsBatch *b) {
        drop_all(b);
        if (b->records)
                g_ptr_array_unref(TAKE_PTR(b->records));
}
