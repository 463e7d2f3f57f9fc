/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * remote_own - the kernel's records on polled directories: a change the
 * kernel saw is noted for the next poll (remote_on_event), and what the
 * poller's own reads made the kernel queue is told apart from everyone
 * else's (reads on the loop through self_events.h, reads in workers through
 * the OwnRead announcements kept here).
 */

#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "event_bits.h"
#include "macro.h"
#include "remote_internal.h"

void remote_own_read_clear(gpointer p) {
        free(((OwnRead *) p)->name);
}

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

/* The poller opened, listed or closed d's directory: the kernel queued what
 * that makes on its watch, and on its parent's under its name; those
 * records are nobody's (self_events.h). */
void remote_on_read_op(void *group, void *dir, uint32_t what, void *userdata) {
        Remote *r = userdata;
        RemoteDir *d = dir;
        WatchLink *l = remote_dir_link(d);
        SelfDir sd = { .dev = d->w->dev, .ino = d->w->ino };
        const char *name;

        if (l && l->parent) {
                /* Its parent's directory, unless it is a mount's root (its own parent then). */
                sd.has_parent = l->parent->watch->dev == d->w->dev;
                sd.pdev = l->parent->watch->dev;
                sd.pino = l->parent->watch->ino;
                sd.name = l->name;
        } else if (d->have_parent) {
                name = strrchr(d->s->path, '/');
                sd.has_parent = name && name[1];
                sd.pdev = d->pdev;
                sd.pino = d->pino;
                sd.name = sd.has_parent ? name + 1 : NULL;
        }
        sd.name_len = sd.name ? strlen(sd.name) : 0;
        self_events_did(r->self, what, &sd);
}

OwnRead *remote_own_read_get(Remote *r, int wd, const char *name, size_t name_len, bool add) {
        OwnRead o = { .wd = wd };

        for (guint i = 0; i < r->own_reads->len; i++) {
                OwnRead *x = &g_array_index(r->own_reads, OwnRead, i);

                if (x->wd != wd || !x->name != !name)
                        continue;
                if (!name || (strncmp(x->name, name, name_len) == 0 && x->name[name_len] == '\0'))
                        return x;
        }
        if (!add)
                return NULL;
        if (name) {
                o.name = strndup(name, name_len);
                if (!o.name)
                        return NULL;
        }
        g_array_append_val(r->own_reads, o);
        return &g_array_index(r->own_reads, OwnRead, r->own_reads->len - 1);
}


/* The watch of d's parent, and d's name there, where its reads show up too. */
static const Watch *dir_parent_watch(Remote *r, RemoteDir *d, const char **ret_name) {
        WatchLink *l = remote_dir_link(d);
        const Watch *pw = NULL;
        const char *name = NULL;

        if (l && l->parent) {
                pw = l->parent->watch;
                name = l->name;
        } else if (d->have_parent) {
                pw = watch_table_find_watch(r->table, d->pdev, d->pino);
                name = strrchr(d->s->path, '/');
                name = name && name[1] ? name + 1 : NULL;
        }
        *ret_name = name;
        return pw && pw->wd >= 0 && name ? pw : NULL;
}

void remote_own_read_pin(OwnRead *o, int delta) {
        if (!o)
                return;
        if (delta > 0) {
                o->open++;
                o->access += OWN_ACCESS_MANY;
                o->close++;
                o->pinned++;
        } else if (o->pinned > 0)
                o->pinned--;
}

/* d is read in a worker from now until on_job_end(): its records may come
 * at any time in between, on its watch and its parent's. */
void remote_own_read_announce(Remote *r, RemoteDir *d) {
        const Watch *pw;
        const char *name;

        /* The kernel leaves out every event of the daemon's threads (the device's
         * INOTIFY_DEV_EXCL_SELF): nothing to announce, nothing of anyone's dropped. */
        if (d->announced || (r->self && !self_events_enabled(r->self)))
                return;
        d->announced = true;
        d->own_wd = d->w->wd;
        pw = dir_parent_watch(r, d, &name);
        d->parent_wd = pw ? pw->wd : -1;
        d->parent_name = pw ? strdup(name) : NULL;
        if (pw && !d->parent_name)
                d->parent_wd = -1;
        if (d->own_wd >= 0)
                remote_own_read_pin(remote_own_read_get(r, d->own_wd, NULL, 0, true), +1);
        if (d->parent_wd >= 0)
                remote_own_read_pin(remote_own_read_get(r, d->parent_wd, d->parent_name, strlen(d->parent_name), true),
                                    +1);
}

/* Its reads are over: what they announced and was not met goes at the next
 * empty read of the kernel queue, as for reads made here. */
void remote_own_read_unannounce(Remote *r, RemoteDir *d) {
        if (!d->announced)
                return;
        d->announced = false;
        if (d->own_wd >= 0)
                remote_own_read_pin(remote_own_read_get(r, d->own_wd, NULL, 0, false), -1);
        if (d->parent_wd >= 0)
                remote_own_read_pin(remote_own_read_get(r, d->parent_wd, d->parent_name, strlen(d->parent_name), false),
                                    -1);
        free(d->parent_name);
        d->parent_name = NULL;
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
