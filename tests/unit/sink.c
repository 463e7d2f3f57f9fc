/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sink - a delivery transport for unit tests that keeps what it is sent
 */

#include "sink.h"

static int sink_events(DeliveryQueue *q, Record **recs, size_t n, void *data) {
        Sink *s = data;

        for (size_t i = 0; i < n; i++) {
                g_array_append_val(s->events,
                                   ((SinkRecord) {
                                           .id = recs[i]->id,
                                           .mask = recs[i]->mask,
                                           .path = g_strdup(recs[i]->path),
                                           .new_path = g_strdup(recs[i]->new_path),
                                   }));
                record_free(recs[i]);
        }
        delivery_sent(q, n);
        return 0;
}

static int sink_notice(DeliveryQueue *q, const Record *rec, const uint32_t *ids, size_t n, void *data) {
        Sink *s = data;
        GString *t = g_string_new(NULL);

        if (rec->kind == RECORD_REMOVED)
                g_string_printf(t, "removed %u %s", rec->id, rec->reason);
        else {
                g_string_append(t, "overflow ");
                for (size_t i = 0; i < n; i++)
                        g_string_append_printf(t, "%u,", ids[i]);
        }
        g_ptr_array_add(s->notices, g_string_free(t, FALSE));
        return 0;
}

const DeliveryOps sink_ops = {
        .send_events = sink_events,
        .send_notice = sink_notice,
};

static void record_clear(gpointer p) {
        SinkRecord *r = p;

        g_free(r->path);
        g_free(r->new_path);
}

void sink_init(Sink *s) {
        *s = (Sink) {
                .events = g_array_new(FALSE, TRUE, sizeof(SinkRecord)),
                .notices = g_ptr_array_new_with_free_func(g_free),
        };
        g_array_set_clear_func(s->events, record_clear);
}

void sink_done(Sink *s) {
        g_array_unref(s->events);
        g_ptr_array_unref(s->notices);
        *s = (Sink) {};
}

void sink_clear(Sink *s) {
        g_array_set_size(s->events, 0);
        g_ptr_array_set_size(s->notices, 0);
}

const SinkRecord *sink_event(const Sink *s, guint i) {
        g_assert_cmpuint(i, <, s->events->len);
        return &g_array_index(s->events, SinkRecord, i);
}
