/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * events_batch - an Events signal being built, that no one record can spoil
 *
 * A record is appended as the API defines it: a path that cannot go in a
 * D-Bus string as it is (not UTF-8, or a noncharacter sd-bus refuses) goes
 * escaped, with WATCHD_PATH_ESCAPED in the record's mask (shared/
 * path_escape.h; the one bit covers path and new_path). So nothing a file
 * name can hold makes an append fail.
 *
 * The check is path_needs_escape(), which is sd-bus's own rule: the bytes
 * of a path are then copied into the message unchecked by sd-bus (its
 * check of every string cost a third of building a signal). Should an
 * append fail all the same (memory), sd-bus has left the message unusable, and with it every record
 * already in it. So the batch keeps its records until the signal is sent:
 * the signal is built again without the record that failed, that record
 * alone is dropped, and its subscription is named to ops->lost (the caller
 * puts it in the client's next Overflow). A signal that could not be sent
 * names all of its records' subscriptions the same way: loss is never
 * silent.
 *
 * A signal is cut at EVENTS_BATCH_MAX_BYTES of records, well below any
 * bus's max_message_size (dbus-daemon's system bus: 32 MiB by default): a
 * full batch of the longest records (two paths of PATH_MAX + NAME_MAX
 * bytes, four times longer escaped: about 35 KB) would otherwise reach
 * 35 MB at the default batch_max_events, and a bus that receives a message
 * over its limit disconnects the sender.
 */

#include <glib.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "record.h"

#define EVENTS_BATCH_MAX_BYTES (1024u * 1024u)

typedef struct EventsBatchOps {
        /* A new Events signal with nothing in it yet. */
        int (*new_signal)(void *userdata, sd_bus_message **ret);
        /* Sends msg (its array closed), which holds n records. A failure is
         * reported here and the records' subscriptions go to lost(). */
        int (*send)(void *userdata, sd_bus_message *msg, size_t n);
        /* A record of subscription id was dropped. */
        void (*lost)(void *userdata, uint32_t id);
        /* Appends one record to msg's open a(uuuss). NULL: field by field, the
         * strings copied into the space sd-bus makes (their bytes checked
         * already). The unit test puts a failing one here. */
        int (*append)(sd_bus_message *msg, uint32_t id, uint32_t mask, uint32_t cookie, const char *path,
                      const char *new_path);
} EventsBatchOps;

typedef struct EventsBatch {
        const EventsBatchOps *ops;
        void *userdata;
        size_t max_records; /* batch_max_events */

        sd_bus_message *msg; /* the signal being built, its array open; NULL if empty */
        GPtrArray *records;  /* Record: what msg holds, in order, to build it again; NULL until the first */
        size_t size;         /* bytes of those records in msg, about */
} EventsBatch;

void events_batch_init(EventsBatch *b, const EventsBatchOps *ops, void *userdata, size_t max_records);

/*
 * Adds rec (which b takes, whatever happens). The signal is sent first if
 * rec would take it past EVENTS_BATCH_MAX_BYTES, and after rec if it then
 * holds max_records. A record that cannot be added is freed and its id
 * goes to lost().
 * Return: 0 added, or the -errno why rec was dropped.
 */
int events_batch_add(EventsBatch *b, Record *rec);

/* Sends what b holds, if anything. Return: records sent (0 if none), or -errno. */
int events_batch_send(EventsBatch *b);

/* Drops what was not sent, naming it to lost(), and frees b's memory. */
void events_batch_done(EventsBatch *b);

/* How many bytes rec takes in the signal, about (its paths escaped if need be). */
size_t events_batch_record_size(const Record *rec);
