/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * self_events - the records the daemon's own reads of directories make the kernel queue
 *
 * The expectations (self_events.h) are kept twice: in one queue in the order
 * they were noted (order), and per key (wd, mask, name) in that same order
 * (keys: ExpectKey -> itself, each with its own queue). A record is matched
 * against the head of its key's queue only: O(1) whatever is pending. When
 * it is met, every expectation older than it leaves the order queue, and,
 * being the oldest of its key too, the head of its key's queue.
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "event_bits.h"
#include "macro.h"
#include "path.h"
#include "self_events.h"

typedef struct ExpectKey {
        int wd;
        uint32_t mask; /* IN_OPEN, IN_ACCESS or IN_CLOSE_NOWRITE, with IN_ISDIR */
        char *name;    /* NULL: the directory's own watch */
        size_t name_len;
        GQueue queue; /* Expect, oldest first */
} ExpectKey;

typedef struct Expect {
        uint64_t gen;   /* kernel reads issued before it was noted */
        uint64_t after; /* its record lies at or past this offset of the kernel's stream */
        ExpectKey *key;
} Expect;

struct SelfEvents {
        WatchTable *table;
        Backend *backend;
        bool enabled;
        GQueue order;          /* Expect, oldest first */
        GHashTable *keys;      /* ExpectKey -> itself (owned) */
        uint64_t reads;        /* kernel reads issued */
        bool drained;          /* the last read left the queue empty: its records handled, */
        uint64_t drained_read; /* what was noted before it is done with at the next read */
        uint64_t stream;       /* bytes read from the kernel so far */
        uint64_t handled;      /* ... of which handled: the read that took them is done with */
        uint64_t last_base;    /* where the last read's bytes start in the stream */
        uint64_t end;          /* where the kernel's queue ended at the last look */
        uint64_t end_read;     /* ... and how many reads had been issued then */
        GArray *announced;     /* Announced: what workers' reads may make the kernel queue */
        SelfEventsStats stats;
};

/* What a worker's job (token) may make the kernel queue on wd (-1: any
 * watch), under name (NULL: none; any_name: any), until it is withdrawn and
 * the queue read empty. */
typedef struct Announced {
        uint64_t token;
        int wd;
        char *name;
        size_t name_len;
        bool any_name;
        bool pinned;                  /* its job has not ended */
        uint64_t gen, after;          /* as Expect's: its records come in later reads, past after */
        uint64_t until;               /* ... and before until, where the queue ended when its job ended */
        unsigned open, access, close; /* records of each kind still taken as the daemon's */
} Announced;

static guint key_hash(gconstpointer p) {
        const ExpectKey *k = p;
        guint h = (guint) k->wd * 0x9E3779B1u ^ k->mask;

        for (size_t i = 0; i < k->name_len; i++)
                h = h * 31u + (guchar) k->name[i];
        return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b) {
        const ExpectKey *x = a, *y = b;

        return x->wd == y->wd && x->mask == y->mask && x->name_len == y->name_len &&
                (x->name_len == 0 || memcmp(x->name, y->name, x->name_len) == 0);
}

static void key_free(gpointer p) {
        ExpectKey *k = p;

        free(k->name);
        free(k);
}

int self_events_new(WatchTable *table, Backend *backend, SelfEvents **ret) {
        SelfEvents *se = calloc(1, sizeof(SelfEvents));

        if (!se)
                return -ENOMEM;
        se->table = table;
        se->backend = backend;
        se->enabled = true;
        se->end_read = UINT64_MAX; /* the first self_events_before() looks */
        g_queue_init(&se->order);
        se->keys = g_hash_table_new_full(key_hash, key_equal, key_free, NULL);
        se->announced = g_array_new(FALSE, FALSE, sizeof(Announced));
        *ret = se;
        return 0;
}

/* The oldest expectation is done with (met, merged, or forgotten). */
static void forget_oldest(SelfEvents *se) {
        Expect *e = g_queue_pop_head(&se->order);
        ExpectKey *k = e->key;
        Expect *head = g_queue_pop_head(&k->queue);

        /* The oldest of all is the oldest of its key. */
        assert(head == e);
        (void) head;
        if (g_queue_is_empty(&k->queue))
                g_hash_table_remove(se->keys, k);
        free(e);
}

/* Forgets what was noted before read number gen was issued. */
static void forget_before(SelfEvents *se, uint64_t gen) {
        Expect *e;

        while ((e = g_queue_peek_head(&se->order)) && e->gen < gen)
                forget_oldest(se);
}

SelfEvents *self_events_free(SelfEvents *se) {
        if (!se)
                return NULL;
        while (!g_queue_is_empty(&se->order))
                forget_oldest(se);
        g_hash_table_destroy(se->keys);
        for (guint i = 0; i < se->announced->len; i++)
                free(g_array_index(se->announced, Announced, i).name);
        g_array_unref(se->announced);
        free(se);
        return NULL;
}

bool self_events_enabled(const SelfEvents *se) {
        return se->enabled;
}

void self_events_set_enabled(SelfEvents *se, bool enabled) {
        se->enabled = enabled;
        if (!enabled)
                forget_before(se, UINT64_MAX);
}

/* A new key like lookup, its name copied, its queue empty; NULL on ENOMEM. */
static ExpectKey *key_new(const ExpectKey *lookup) {
        ExpectKey *k = calloc(1, sizeof(ExpectKey));

        if (!k)
                return NULL;
        *k = (ExpectKey) { .wd = lookup->wd, .mask = lookup->mask, .name_len = lookup->name_len };
        if (k->name_len > 0) {
                k->name = strndup(lookup->name, lookup->name_len);
                if (!k->name) {
                        free(k);
                        return NULL;
                }
        }
        g_queue_init(&k->queue);
        return k;
}

/* Notes one record the kernel has queued: on wd, for mask, under name (NULL: none). */
static void note(SelfEvents *se, int wd, uint32_t mask, const char *name, size_t name_len) {
        ExpectKey lookup = { .wd = wd, .mask = mask, .name = (char *) name, .name_len = name ? name_len : 0 };
        ExpectKey *k;
        Expect *e;

        if (se->order.length >= SELF_EVENTS_MAX)
                forget_oldest(se); /* its record, if it comes, is reported: nothing of anyone's lost */
        /* Out of memory, nothing is noted: its record is reported, nothing of anyone's lost. */
        e = malloc(sizeof(Expect));
        if (!e)
                return;
        k = g_hash_table_lookup(se->keys, &lookup);
        if (!k) {
                k = key_new(&lookup);
                if (!k) {
                        free(e);
                        return;
                }
                g_hash_table_add(se->keys, k);
        }
        *e = (Expect) { .gen = se->reads, .after = se->end, .key = k };
        g_queue_push_tail(&k->queue, e);
        g_queue_push_tail(&se->order, e);
}

void self_events_before(SelfEvents *se) {
        size_t n;

        if (!se->enabled || se->end_read == se->reads)
                return;
        /* What is queued now was queued before the daemon's next call. If
         * the kernel cannot say, the last look stands: an earlier end is
         * still before the call, only further from it. */
        if (backend_pending(se->backend, &n) >= 0) {
                se->end = se->stream + n;
                se->end_read = se->reads;
        }
}

void self_events_did(SelfEvents *se, uint32_t what, const SelfDir *d) {
        const Watch *w;

        if (!se->enabled)
                return;
        /* The kernel tells the parent's watch first, then the directory's own. */
        if (d->has_parent && d->name_len > 0) {
                w = watch_table_find_watch(se->table, d->pdev, d->pino);
                if (w && w->wd >= 0 && w->is_dir && (w->kernel_mask & what))
                        note(se, w->wd, what | IN_ISDIR, d->name, d->name_len);
        }
        w = watch_table_find_watch(se->table, d->dev, d->ino);
        if (w && w->wd >= 0 && (w->kernel_mask & what))
                note(se, w->wd, what | IN_ISDIR, NULL, 0);
}

void self_events_root(SelfEvents *se, SelfDir *ret, int fd, dev_t dev, ino_t ino, const char *path) {
        const char *name = path_basename(path, NULL);
        struct stat pst;

        *ret = (SelfDir) { .dev = dev, .ino = ino, .name = name, .name_len = strlen(name) };
        /* A mount's root is its own parent for fsnotify: ".." then leads to
         * another file system, or (/) to itself. */
        if (se->enabled && ret->name_len > 0 && fstatat(fd, "..", &pst, AT_SYMLINK_NOFOLLOW) >= 0 &&
            pst.st_dev == dev && pst.st_ino != ino) {
                ret->has_parent = true;
                ret->pdev = pst.st_dev;
                ret->pino = pst.st_ino;
        }
}

/* Announcements of jobs that ended whose records are all read and handled:
 * those before where the queue ended when the job did (until). Without this
 * they would wait for a read that finds the queue empty (EAGAIN), which the
 * loop does not make after a short read, nor at all while nothing is queued
 * (a walk of directories whose watches do not ask for opens and reads): a
 * long walk's announcements piled up, ~60,000 (4 MB) for 10,001 directories. */
static void announced_handled(SelfEvents *se) {
        for (guint i = se->announced->len; i > 0; i--) {
                Announced *a = &g_array_index(se->announced, Announced, i - 1);

                if (!a->pinned && a->until <= se->handled) {
                        free(a->name);
                        g_array_remove_index_fast(se->announced, i - 1);
                }
        }
}

void self_events_handled(SelfEvents *se) {
        se->handled = se->stream;
        if (se->announced->len > 0)
                announced_handled(se);
}

void self_events_read(SelfEvents *se) {
        if (se->drained) {
                /* The records of that read are handled: those noted before it are all in. */
                forget_before(se, se->drained_read);
                se->drained = false;
        }
        self_events_handled(se);
        se->reads++;
}

/* Every record of the workers' reads that ended was queued before they
 * returned: read now. What they announced and was not met (the kernel merges
 * identical records in a row) is done with. */
static void announced_drained(SelfEvents *se) {
        for (guint i = se->announced->len; i > 0; i--) {
                Announced *a = &g_array_index(se->announced, Announced, i - 1);

                if (!a->pinned) {
                        free(a->name);
                        g_array_remove_index_fast(se->announced, i - 1);
                }
        }
}

void self_events_read_done(SelfEvents *se, ssize_t n, size_t size) {
        if (n == -EAGAIN) {
                forget_before(se, se->reads);
                announced_drained(se);
        }
        if (n <= 0)
                return;
        se->last_base = se->stream;
        se->stream += (uint64_t) n;
        if ((size_t) n <= size && size - (size_t) n >= BACKEND_MIN_READ) {
                /* Short by a whole record: the kernel stopped because the queue was empty. */
                se->drained = true;
                se->drained_read = se->reads;
        }
}

void self_events_announce(SelfEvents *se, uint64_t token, int wd, const char *name, size_t name_len, bool any_name,
                          unsigned open, unsigned access, unsigned close) {
        Announced a = {
                .token = token,
                .wd = wd,
                .any_name = any_name,
                .pinned = true,
                .until = UINT64_MAX,
                .open = open,
                .access = access,
                .close = close,
        };

        if (!se->enabled)
                return;
        if (name && !any_name) {
                a.name = strndup(name, name_len);
                if (!a.name)
                        return; /* its records are reported: nothing of anyone's lost */
                a.name_len = name_len;
        }
        /* Where the queue ends now: the job's system calls come after. */
        self_events_before(se);
        a.gen = se->reads;
        a.after = se->end;
        g_array_append_val(se->announced, a);
}

void self_events_unannounce(SelfEvents *se, uint64_t token) {
        uint64_t until = UINT64_MAX;
        size_t n;

        /* Every record of the job is queued by now: what comes after is someone else's. */
        if (se->announced->len > 0 && backend_pending(se->backend, &n) >= 0)
                until = se->stream + n;
        for (guint i = 0; i < se->announced->len; i++) {
                Announced *a = &g_array_index(se->announced, Announced, i);

                if (a->token == token) {
                        a->pinned = false;
                        a->until = until;
                }
        }
        announced_handled(se);
}

/* Whether ev, at offset off of the last read, is a record a worker
 * announced: then one of its kind is used up. */
static bool announced_check(SelfEvents *se, const RawEvent *ev, size_t off, uint32_t what) {
        for (guint i = 0; i < se->announced->len; i++) {
                Announced *a = &g_array_index(se->announced, Announced, i);
                unsigned *n;

                if ((a->wd >= 0 && a->wd != ev->wd) || (!a->any_name && !a->name != !ev->name))
                        continue;
                /* Read by a read issued before the job, or queued before it: someone else's. */
                if (a->gen >= se->reads || se->last_base + off < a->after || se->last_base + off >= a->until)
                        continue;
                if (a->name && (a->name_len != ev->name_len || memcmp(a->name, ev->name, a->name_len) != 0))
                        continue;
                if (a->any_name && !ev->name)
                        continue;
                n = what == IN_OPEN ? &a->open : what == IN_ACCESS ? &a->access : &a->close;
                if (*n == 0)
                        continue;
                (*n)--;
                se->stats.dropped++;
                return true;
        }
        return false;
}

static bool check_noted(SelfEvents *se, const RawEvent *ev, size_t off) {
        uint32_t what = ev->mask & ~IN_ISDIR;
        ExpectKey lookup, *k;
        Expect *e;

        if (g_queue_is_empty(&se->order))
                return false;
        if (ev->mask & IN_Q_OVERFLOW) {
                /* Noted before this read: the record, if not seen yet, may be lost. */
                forget_before(se, se->reads);
                return false;
        }
        if (!(ev->mask & IN_ISDIR) || (what != IN_OPEN && what != IN_ACCESS && what != IN_CLOSE_NOWRITE))
                return false;
        lookup = (ExpectKey) {
                .wd = ev->wd, .mask = ev->mask, .name = (char *) ev->name, .name_len = ev->name ? ev->name_len : 0
        };
        k = g_hash_table_lookup(se->keys, &lookup);
        if (!k)
                return false;
        e = g_queue_peek_head(&k->queue);
        if (e->gen >= se->reads)
                return false; /* noted after this read was issued: not in it */
        if (se->last_base + off < e->after)
                return false; /* queued before the daemon's call: someone else's */
        /* Older ones not met by now were merged away: the queue keeps the
         * order of the daemon's system calls. */
        while (g_queue_peek_head(&se->order) != e)
                forget_oldest(se);
        forget_oldest(se);
        se->stats.dropped++;
        return true;
}

bool self_events_check(SelfEvents *se, const RawEvent *ev, size_t off) {
        uint32_t what = ev->mask & ~IN_ISDIR;

        if (check_noted(se, ev, off))
                return true;
        if (se->announced->len == 0 || !(ev->mask & IN_ISDIR) ||
            (what != IN_OPEN && what != IN_ACCESS && what != IN_CLOSE_NOWRITE))
                return false;
        return announced_check(se, ev, off, what);
}

void self_events_get_stats(const SelfEvents *se, SelfEventsStats *ret) {
        *ret = se->stats;
        ret->pending = se->order.length;
        ret->announced = se->announced->len;
}
