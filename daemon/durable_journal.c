/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * durable_journal - what a durable subscription's owner writes to its journal
 *
 * The owner of a durable subscription (a manager Client, durable.c) has its
 * journal for a delivery transport (durable_journal_ops): each batch its
 * queue lets go is appended and flushed as one frame, an Overflow becomes
 * an "overflow" gap, and the end of its watch a "removed" gap (its path is
 * then followed until it is back: placed again at the next pump). Every
 * flush marks its user's journals for the pump to keep within their cap.
 * A journal reads what it is sent at once: no window, no confirmation.
 *
 * Below durable.c, which gives each owner this transport and appends the
 * gaps of its own (access, daemon-down) through it too; it calls nothing of
 * durable.c nor of durable_replay.c (durable_replay.h has what the files
 * of the durable subscriptions share).
 */

#include <stdint.h>
#include <sys/types.h>

#include "durable_replay.h"
#include "log.h"
#include "record.h"

void durable_journal_mark_cap_dirty(Durable *d, uid_t uid) {
        g_hash_table_add(d->cap_dirty, GUINT_TO_POINTER(uid));
}

void durable_journal_flush_logged(DurableSub *s) {
        int r = journal_flush(s->journal);

        /* The journal logs a loss itself, once; and reports it as a gap. */
        if (r < 0)
                log_debug_errno(r, "Journal of durable subscription %s not written now: %m", s->key);
        durable_journal_mark_cap_dirty(s->d, s->def.uid);
}

void durable_journal_append_gap(DurableSub *s, JournalGapReason reason) {
        int r = journal_append_gap(s->journal, reason, true, NULL, 0);

        if (r < 0)
                log_warning_errno(r, "Failed to record a gap in the journal of %s, ignoring: %m", s->key);
        durable_journal_flush_logged(s);
}

/* ---------------------------------------------------------------------- */
/* The owner's transport */

static int journal_send_events(DeliveryQueue *q, Record **recs, size_t n, void *data) {
        DurableSub *s = data;

        for (size_t i = 0; i < n; i++) {
                Record *rec = recs[i];

                /* Not a path the journal holds (none, or longer than 64 KiB): never silently. */
                if (rec->path[0] != '/' ||
                    journal_append_event(s->journal, rec->mask, rec->cookie, rec->path, rec->new_path) < 0)
                        (void) journal_append_gap(s->journal, JOURNAL_GAP_OVERFLOW, true, NULL, 0);
                record_free(rec);
        }
        /* One frame a batch. A journal reads what it is sent at once: no window to count against. */
        durable_journal_flush_logged(s);
        return 0;
}

static int journal_send_notice(DeliveryQueue *q, const Record *rec, const uint32_t *ids, size_t n_ids, void *data) {
        DurableSub *s = data;

        if (rec->kind == RECORD_OVERFLOW)
                durable_journal_append_gap(s, JOURNAL_GAP_OVERFLOW);
        else {
                /* Its path went (deleted, unmounted): followed until it is back. */
                log_info("The path of durable subscription %s is gone (%s): following it until it is back.", s->key,
                         rec->reason);
                durable_journal_append_gap(s, JOURNAL_GAP_REMOVED);
                s->sub_id = 0;
                s->readd = true;
                s->d->wake_at = 0;
        }
        return 0;
}

const DeliveryOps durable_journal_ops = {
        .send_events = journal_send_events,
        .send_notice = journal_send_notice,
        /* A read of many records before a flush must not overflow a journal with a small window. */
        .reads_at_once = true,
};
