/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * remote_own - the kernel's records on polled directories: a change the
 * kernel saw is noted for the next poll (remote_on_event), and what the
 * poller's own reads made the kernel queue is told apart from everyone
 * else's (reads on the loop through self_events.h, reads in workers through
 * the OwnRead announcements remote.c makes as it submits them).
 */

#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "event_bits.h"
#include "macro.h"
#include "remote.h"
#include "remote_internal.h"

/* ---- the kernel's records ---- */

void remote_on_event(Remote *r, const Watch *w, const RawEvent *ev) {
        GPtrArray *on_watch;
        _cleanup_free_ char *name = NULL;

        /* Only what changes a snapshot: opens, reads and closes without
         * writing of the directory's files change nothing a poll compares. */
        if (!ev->name || g_hash_table_size(r->by_watch) == 0 ||
            !(ev->mask & (IN_CREATE | IN_DELETE | IN_MOVE | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE)))
                return;
        on_watch = g_hash_table_lookup(r->by_watch, w);
        if (!on_watch)
                return;
        name = strndup(ev->name, ev->name_len);
        if (!name)
                return; /* then the poll may tell it again, marked POLLED: no loss */
        for (guint i = 0; i < on_watch->len; i++) {
                RemoteDir *d = on_watch->pdata[i];

                (void) poller_dir_note(d->pd, name);
        }
}

bool remote_own_read(Remote *r, const Watch *w, const RawEvent *ev) {
        uint32_t what = ev->mask & ~IN_ISDIR;
        unsigned *n;
        OwnRead *o;

        if (r->own_reads->len == 0 || !(ev->mask & IN_ISDIR) ||
            (what != IN_OPEN && what != IN_ACCESS && what != IN_CLOSE_NOWRITE))
                return false;
        o = remote_own_read_get(r, ev->wd, ev->name, ev->name_len, false);
        if (!o)
                return false;
        n = what == IN_OPEN ? &o->open : what == IN_ACCESS ? &o->access : &o->close;
        if (*n == 0)
                return false;
        (*n)--;
        return true;
}

void remote_queue_read_empty(Remote *r) {
        /* Every record the reads of workers that ended made was queued before
         * their system calls returned: all read now. What was announced and not
         * met (the kernel merges identical records in a row) is done with. */
        for (guint i = r->own_reads->len; i > 0; i--) {
                OwnRead *o = &g_array_index(r->own_reads, OwnRead, i - 1);

                if (o->pinned == 0)
                        g_array_remove_index_fast(r->own_reads, i - 1);
        }
}
