/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fanotify - RECURSIVE subscriptions served by one fanotify mark a filesystem
 *
 * The group (from the helper, fan_group.h), its reading in slices, and each
 * event to the subscriptions it is for. Where it serves (the filesystems
 * marked, FanFs; the subscriptions on them, FanSub; the directory cache's
 * lookups; the callers) is fanotify_marks.c's, the layer above, which calls
 * down into this file and never the other way; what both share,
 * fanotify_internal.h. The Fanotify is freed here, with all it holds
 * (fan_fs_free()).
 *
 * An event is handled in two steps: who gets what (the subscriptions above
 * its directory, the paths, the owner's permission) is collected first, and
 * delivered after, each subscription looked up again by id: a delivery may
 * end one (ONESHOT), which detaches it from the lists the first step walks.
 */

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include "event_bits.h"
#include "fanotify.h"
#include "fanotify_internal.h"
#include "log.h"
#include "macro.h"

#define READ_BUF    (64u * 1024u)
#define READ_ROUNDS 16
/* Reads a lookup may make ahead of the one being handled: 1 MiB, some
 * 10,000 events. A directory renamed past that before it was looked up is
 * found where it is now, and its subscriptions get Overflow when the rename
 * is read (Fanotify.unsure, watchd(8)). */
#define READ_AHEAD_MAX 16u
/* Directories looked up past the read ahead that are kept (Fanotify.unsure);
 * past it, any directory's rename or deletion read before the queue is
 * next empty gives Overflow. */
#define UNSURE_MAX 4096u

/* A read made ahead of the one being handled. */
typedef struct FanRead {
        uint8_t *buf; /* READ_BUF bytes */
        size_t len;
        uint64_t base;
} FanRead;

/* One record to deliver, collected before any is delivered. */
typedef struct Target {
        uint32_t id;
        uint32_t mask; /* IN_* bits */
        uint32_t cookie;
        char *dir;
        bool owns_dir;    /* the first of a subscription's records of one event frees dir */
        const char *name; /* in the read buffer */
        size_t name_len;
} Target;

int fanotify_new(const char *helper_socket, const FanotifyOps *ops, void *userdata, Fanotify **ret) {
        Fanotify *f;
        int r;

        f = calloc(1, sizeof(Fanotify));
        if (!f)
                return -ENOMEM;
        r = fan_group_new(helper_socket, &f->group);
        if (r < 0) {
                free(f);
                return r;
        }
        f->ops = *ops;
        f->userdata = userdata;
        f->self = getpid();
        f->filesystems = g_hash_table_new(g_int64_hash, g_int64_equal);
        f->subs = g_hash_table_new(NULL, NULL);
        f->callers = g_ptr_array_new();
        f->later = g_array_new(FALSE, FALSE, sizeof(Later));
        f->refused = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        f->buf = malloc(READ_BUF);
        if (!f->buf) {
                fanotify_free(f);
                return -ENOMEM;
        }
        *ret = f;
        return 0;
}

void fan_fs_free(FanFs *fs) {
        if (!fs)
                return;
        fan_dircache_free(fs->cache);
        safe_close(fs->mount_fd);
        free(fs);
}

Fanotify *fanotify_free(Fanotify *f) {
        GHashTableIter i;
        gpointer v;

        if (!f)
                return NULL;
        if (f->subs) {
                g_hash_table_iter_init(&i, f->subs);
                while (g_hash_table_iter_next(&i, NULL, &v))
                        free(v);
                g_hash_table_destroy(f->subs);
        }
        if (f->filesystems) {
                g_hash_table_iter_init(&i, f->filesystems);
                while (g_hash_table_iter_next(&i, NULL, &v))
                        fan_fs_free(v);
                g_hash_table_destroy(f->filesystems);
        }
        if (f->callers) {
                for (guint k = 0; k < f->callers->len; k++) {
                        FanCaller *c = f->callers->pdata[k];

                        free(c->caller.gids);
                        free(c);
                }
                g_ptr_array_unref(f->callers);
        }
        if (f->refused)
                g_hash_table_destroy(f->refused);
        if (f->later)
                g_array_unref(f->later);
        if (f->unsure)
                g_hash_table_destroy(f->unsure);
        fan_group_free(f->group);
        for (FanRead *a; (a = g_queue_pop_head(&f->ahead));) {
                free(a->buf);
                free(a);
        }
        free(f->spare);
        free(f->buf);
        free(f);
        return NULL;
}

int fanotify_fd(const Fanotify *f) {
        return fan_group_fd(f->group);
}

void fanotify_get_stats(const Fanotify *f, FanotifyStats *ret) {
        *ret = f->stats;
        ret->marks = g_hash_table_size(f->filesystems);
        ret->subscriptions = g_hash_table_size(f->subs);
}

/* --- events ------------------------------------------------------------------------- */

/* The order a merged event's bits happened in (one process, one object). */
static const struct {
        uint64_t fan;
        uint32_t in;
} event_order[] = {
        { FAN_CREATE, IN_CREATE },
        { FAN_OPEN, IN_OPEN },
        { FAN_ACCESS, IN_ACCESS },
        { FAN_MODIFY, IN_MODIFY },
        { FAN_ATTRIB, IN_ATTRIB },
        { FAN_CLOSE_WRITE, IN_CLOSE_WRITE },
        { FAN_CLOSE_NOWRITE, IN_CLOSE_NOWRITE },
        { FAN_DELETE, IN_DELETE },
};

static FanFs *fs_of(Fanotify *f, const FanHandle *h) {
        return g_hash_table_lookup(f->filesystems, &h->fsid);
}

/* The path of directory d for x's subscription into buf: its path, and
 * the names below its root. NULL if too long. */
static const char *sub_dir_path(const FanSub *x, const FanDir *d, char *buf) {
        const char *root = x->subscription->path;
        size_t rl = strlen(root);
        int n;

        if (d == x->root)
                return root;
        if (rl + 2 >= PATH_MAX)
                return NULL;
        memcpy(buf, root, rl);
        if (rl == 0 || buf[rl - 1] != '/')
                buf[rl++] = '/';
        n = fan_dir_path_below(d, x->root, buf + rl, PATH_MAX - rl);
        return n < 0 ? NULL : buf;
}

/*
 * Appends to targets, for every subscription served here whose tree holds
 * directory d, whose owner may read it and that asks for one of masks, a
 * record of each of masks (n of them, in order), about name in d; without
 * a name, about d itself, for the subscriptions rooted on d. The
 * directory's path is built once a subscription; the first of its records
 * owns the copy.
 */
static void collect(Fanotify *f, FanFs *fs, FanDir *d, const uint32_t *masks, size_t n, uint32_t cookie,
                    const char *name, size_t name_len, GArray *targets) {
        uint32_t any = 0;
        char buf[PATH_MAX];

        for (size_t i = 0; i < n; i++)
                any |= masks[i];
        any &= ~(uint32_t) IN_ISDIR;
        /* Without a name: d's own event, for the subscriptions rooted on d
         * alone (above them it is an entry of d's parent). */
        for (FanDir *a = d; a; a = name ? a->parent : NULL)
                for (FanSub *x = a->roots; x; x = x->root_next) {
                        const char *dir;
                        char *copy;

                        if (!(x->subscription->mask & any))
                                continue; /* not asked for: no path, no permission check */
                        if (!fan_dircache_may_read(fs->cache, x->root, d, x->caller))
                                continue;
                        dir = sub_dir_path(x, d, buf);
                        copy = dir ? strdup(dir) : NULL;
                        if (!copy) {
                                f->ops.lost(x->subscription, f->userdata); /* deeper than PATH_MAX, or no memory */
                                continue;
                        }
                        for (size_t i = 0; i < n; i++)
                                g_array_append_val(targets,
                                                   ((Target) {
                                                           .id = x->subscription->id,
                                                           .mask = masks[i],
                                                           .cookie = cookie,
                                                           .dir = copy,
                                                           .owns_dir = i == 0,
                                                           .name = name,
                                                           .name_len = name_len,
                                                   }));
                }
}

static void deliver_targets(Fanotify *f, GArray *targets, uint64_t now) {
        for (guint k = 0; k < targets->len; k++) {
                Target *t = &g_array_index(targets, Target, k);
                Subscription *s = f->ops.get(t->id, f->userdata);

                /* Ended meanwhile (ONESHOT), or served by inotify again. */
                if (s && g_hash_table_contains(f->subs, s))
                        (void) f->ops.deliver(s, t->mask, t->cookie, t->dir, t->name, t->name_len, now, f->userdata);
        }
        for (guint k = 0; k < targets->len; k++) {
                Target *t = &g_array_index(targets, Target, k);

                if (t->owns_dir)
                        free(t->dir);
        }
        g_array_set_size(targets, 0);
}

static uint32_t next_cookie(Fanotify *f) {
        f->next_cookie = (f->next_cookie + 1) % FAN_COOKIE_SPAN;
        return FAN_COOKIE_BASE + f->next_cookie;
}

/* FAN_RENAME: the halves to each side's subscriptions, one cookie, each
 * subscription's MOVED_TO right behind its MOVED_FROM (so that its queue
 * pairs them whatever else it gets); then the cache follows a directory. */
static void handle_rename(Fanotify *f, const FanRawEvent *ev, bool own, GArray *targets, uint64_t now) {
        uint32_t isdir = ev->mask & FAN_ONDIR ? IN_ISDIR : 0;
        FanFs *fs = fs_of(f, &ev->old_entry.dir);
        FanDir *from = NULL, *to = NULL;

        if (!fs || !ev->has_new || ev->new_entry.dir.fsid != fs->fsid)
                return;
        if (!own) {
                g_autoptr(GArray) froms = g_array_new(FALSE, FALSE, sizeof(Target));
                g_autoptr(GArray) tos = g_array_new(FALSE, FALSE, sizeof(Target));
                uint32_t cookie = next_cookie(f);

                uint32_t m_from = IN_MOVED_FROM | isdir, m_to = IN_MOVED_TO | isdir;

                if (fan_dircache_resolve(fs->cache, &ev->old_entry.dir, &from) >= 0)
                        collect(f, fs, from, &m_from, 1, cookie, ev->old_entry.name, ev->old_entry.name_len, froms);
                if (fan_dircache_resolve(fs->cache, &ev->new_entry.dir, &to) >= 0)
                        collect(f, fs, to, &m_to, 1, cookie, ev->new_entry.name, ev->new_entry.name_len, tos);
                for (guint j = 0; j < froms->len; j++) {
                        Target *a = &g_array_index(froms, Target, j);

                        g_array_append_val(targets, *a);
                        for (guint k = 0; k < tos->len; k++)
                                if (g_array_index(tos, Target, k).id == a->id) {
                                        g_array_append_val(targets, g_array_index(tos, Target, k));
                                        g_array_remove_index(tos, k);
                                        break;
                                }
                }
                g_array_append_vals(targets, tos->data, tos->len);
                deliver_targets(f, targets, now);
        }
        if (isdir && ev->has_object)
                fan_dircache_renamed(fs->cache, &ev->new_entry.dir, ev->new_entry.name, ev->new_entry.name_len,
                                     &ev->object);
}

static void handle_entry(Fanotify *f, const FanRawEvent *ev, bool own, GArray *targets, uint64_t now) {
        uint32_t isdir = ev->mask & FAN_ONDIR ? IN_ISDIR : 0;
        const FanEntry *e = &ev->entry;
        bool self = e->name && e->name_len == 1 && e->name[0] == '.';
        FanFs *fs = fs_of(f, &e->dir);
        FanDir *d = NULL;
        int r;

        if (!fs)
                return;
        /* A directory's mode or owner changed: what callers may do with it is asked again. */
        if (self && (ev->mask & FAN_ATTRIB))
                fan_dircache_attrib(fs->cache, &e->dir);

        if (!own && e->name && (r = fan_dircache_resolve(fs->cache, &e->dir, &d)) < 0)
                /* Gone before its event was read: what happened in it is not
                 * placed (a walk would not have entered it either). */
                log_debug_errno(r,
                                "fanotify: the directory of an event (mask 0x%" PRIx64 ") is not found (%m), "
                                "dropping it.",
                                (uint64_t) ev->mask);
        if (!own && e->name && d) {
                uint32_t masks[ELEMENTSOF(event_order)];
                size_t n = 0;

                for (size_t i = 0; i < ELEMENTSOF(event_order); i++)
                        if (ev->mask & event_order[i].fan)
                                masks[n++] = event_order[i].in | isdir;
                if (!self)
                        collect(f, fs, d, masks, n, 0, e->name, e->name_len, targets);
                else {
                        /* About a directory itself: for a subscription rooted on
                         * it, its own event, as inotify reports it to a watch of
                         * the directory (the root's watch does not ask for it:
                         * watch_table.c); above, an entry of its parent, under
                         * its name, as inotify reports it to the parent's watch. */
                        collect(f, fs, d, masks, n, 0, NULL, 0, targets);
                        if (d->parent)
                                collect(f, fs, d->parent, masks, n, 0, d->name, strlen(d->name), targets);
                }
                deliver_targets(f, targets, now);
        }
        if (isdir && ev->has_object) {
                if (ev->mask & FAN_CREATE)
                        fan_dircache_created(fs->cache, &e->dir, e->name, e->name_len, &ev->object);
                if (ev->mask & FAN_DELETE)
                        fan_dircache_deleted(fs->cache, &ev->object);
        }
}

/* Every subscription the group serves gets Overflow. */
static void lose_all(Fanotify *f) {
        GHashTableIter i;
        gpointer k;

        g_hash_table_iter_init(&i, f->subs);
        while (g_hash_table_iter_next(&i, &k, NULL))
                f->ops.lost(k, f->userdata);
}

static void handle_overflow(Fanotify *f) {
        GHashTableIter i;
        gpointer v;

        f->stats.overflows++;
        log_warning("The fanotify queue overflowed: every subscription it serves gets Overflow.");
        /* Renames may be among what was lost: the caches start again. */
        g_hash_table_iter_init(&i, f->filesystems);
        while (g_hash_table_iter_next(&i, NULL, &v))
                fan_dircache_clear(((FanFs *) v)->cache);
        lose_all(f);
}

static void handle_event(Fanotify *f, const FanRawEvent *ev, GArray *targets, uint64_t now) {
        bool own = ev->pid == f->self;

        f->stats.events_read++;
        if (ev->mask & FAN_Q_OVERFLOW)
                return handle_overflow(f);
        /* watchd's own doings are no one's news; what they did to
         * directories the cache still learns. */
        if (own)
                f->stats.own_events++;
        if ((ev->mask & FAN_RENAME) && ev->has_old)
                handle_rename(f, ev, own, targets, now);
        else if (ev->has_entry)
                handle_entry(f, ev, own, targets, now);
}

/* A handle as a key of Fanotify.unsure. */
static GBytes *handle_key(const FanHandle *h) {
        GByteArray *b = g_byte_array_sized_new(sizeof(h->fsid) + sizeof(h->type) + h->size);

        g_byte_array_append(b, (const guint8 *) &h->fsid, sizeof(h->fsid));
        g_byte_array_append(b, (const guint8 *) &h->type, sizeof(h->type));
        g_byte_array_append(b, h->bytes, h->size);
        return g_byte_array_free_to_bytes(b);
}

void fanotify_note_lookup(Fanotify *f, const FanHandle *h) {
        /* Right after fanotify_read_ahead(): a full read ahead stopped at its
         * bound, not at an empty queue. */
        if (g_queue_get_length(&f->ahead) < READ_AHEAD_MAX || f->unsure_all)
                return;
        if (!f->unsure)
                f->unsure = g_hash_table_new_full(g_bytes_hash, g_bytes_equal, (GDestroyNotify) g_bytes_unref, NULL);
        if (g_hash_table_size(f->unsure) >= UNSURE_MAX) {
                f->unsure_all = true;
                g_clear_pointer(&f->unsure, g_hash_table_destroy);
                return;
        }
        g_hash_table_add(f->unsure, handle_key(h));
}

/* The queue was read empty: what was queued at every lookup is indexed. */
static void unsure_clear(Fanotify *f) {
        f->unsure_all = false;
        g_clear_pointer(&f->unsure, g_hash_table_destroy);
}

/* A directory renamed or deleted, read now: was it looked up past the read
 * ahead, before this was read? (A rename queued after the lookup may count
 * too: an Overflow more, never a loss unsaid.) */
static bool unsure_of(const Fanotify *f, const FanHandle *h) {
        g_autoptr(GBytes) key = NULL;

        if (f->unsure_all)
                return true;
        if (!f->unsure)
                return false;
        key = handle_key(h);
        return g_hash_table_contains(f->unsure, key);
}

/* The directory renames and deletions of a read just made (Later), its
 * len bytes at buf starting at base. */
static void index_later(Fanotify *f, const uint8_t *buf, size_t len, uint64_t base) {
        size_t off = 0, at;
        FanRawEvent ev;

        for (at = off; fan_decode(buf, len, &off, &ev) == 1; at = off) {
                if (!(ev.mask & FAN_ONDIR) || !ev.has_object)
                        continue;
                if ((ev.mask & FAN_RENAME) && ev.has_old)
                        g_array_append_val(f->later,
                                           ((Later) { base + at, ev.object, ev.old_entry.dir, ev.old_entry.name,
                                                      ev.old_entry.name_len }));
                else if ((ev.mask & FAN_DELETE) && ev.has_entry && ev.entry.name)
                        g_array_append_val(
                                f->later,
                                ((Later) { base + at, ev.object, ev.entry.dir, ev.entry.name, ev.entry.name_len }));
                else
                        continue;
                if (unsure_of(f, &ev.object))
                        f->misplaced = true;
        }
}

/* A directory looked up past the read ahead was moved or deleted before the
 * lookup: what was reported in it since may be under the wrong path, or was
 * dropped as outside every tree. */
static void handle_misplaced(Fanotify *f) {
        f->misplaced = false;
        log_warning("A directory was looked up past the fanotify read ahead (1 MiB of events) and had moved: every "
                    "subscription it serves gets Overflow.");
        lose_all(f);
}

const Later *fanotify_later(const Fanotify *f, const FanHandle *h) {
        uint64_t next = f->base + f->off;

        for (guint k = 0; k < f->later->len; k++) {
                const Later *l = &g_array_index(f->later, Later, k);

                if (l->pos >= next && fan_handle_equal(&l->child, h))
                        return l;
        }
        return NULL;
}

bool fanotify_read_ahead(Fanotify *f) {
        bool any = false;

        /* Outside a slice (a subscription's root pinned) nothing is being
         * handled; and what is read ahead waits for a slice, which only the
         * group's fd, no longer readable then, would start. */
        if (!f->in_slice)
                return false;
        while (g_queue_get_length(&f->ahead) < READ_AHEAD_MAX) {
                g_autofree FanRead *a = NULL;
                ssize_t n;

                /* Both before the read: what is read is never dropped for want of memory. */
                if (!f->spare && !(f->spare = malloc(READ_BUF)))
                        break;
                a = malloc(sizeof(FanRead));
                if (!a)
                        break;
                n = read(fanotify_fd(f), f->spare, READ_BUF);
                if (n < 0 && errno == EAGAIN)
                        unsure_clear(f);
                if (n <= 0)
                        break; /* nothing more (EAGAIN), or an error the next read of the slice meets again */
                a->buf = f->spare;
                a->len = (size_t) n;
                a->base = f->end;
                f->spare = NULL;
                f->end += (uint64_t) n;
                index_later(f, a->buf, a->len, a->base);
                g_queue_push_tail(&f->ahead, TAKE_PTR(a));
                any = true;
        }
        return any;
}

/* The next read to handle: one made ahead, or a read of the group now.
 * Returns its size, 0 if nothing is queued, or a negative errno. */
static ssize_t next_read(Fanotify *f) {
        FanRead *a = g_queue_pop_head(&f->ahead);
        ssize_t n;
        guint done = 0;

        if (a) {
                free(f->spare);
                f->spare = f->buf;
                f->buf = a->buf;
                f->len = a->len;
                f->base = a->base;
                free(a);
                n = (ssize_t) f->len;
        } else {
                n = read(fanotify_fd(f), f->buf, READ_BUF);
                if (n < 0 && errno == EAGAIN)
                        unsure_clear(f);
                if (n < 0)
                        return errno == EAGAIN ? 0 : negative_errno();
                if (n == 0)
                        return -EIO;
                f->base = f->end;
                f->len = (size_t) n;
                f->end += (uint64_t) n;
                index_later(f, f->buf, f->len, f->base);
        }
        f->off = 0;
        /* The Laters of the reads handled point into buffers that are gone. */
        while (done < f->later->len && g_array_index(f->later, Later, done).pos < f->base)
                done++;
        g_array_remove_range(f->later, 0, done);
        return n;
}

static bool slice_run(Fanotify *f, uint64_t budget_usec) {
        uint64_t deadline = now_usec() + budget_usec;
        g_autoptr(GArray) targets = g_array_new(FALSE, FALSE, sizeof(Target));

        for (int i = 0; i < READ_ROUNDS;) {
                FanRawEvent ev;
                int r;

                if (f->off == f->len) {
                        ssize_t n = next_read(f);

                        if (n == 0)
                                return false;
                        if (n < 0) {
                                log_error_errno((int) n, "Failed to read the fanotify group's events: %m");
                                return false;
                        }
                        i++;
                }
                r = fan_decode(f->buf, f->len, &f->off, &ev);
                if (r <= 0) {
                        if (r < 0)
                                log_error("Malformed fanotify event at offset %zu of %zu bytes, dropping the rest "
                                          "of the read.",
                                          f->off, f->len);
                        f->off = f->len;
                        continue;
                }
                if (ev.fd >= 0)
                        safe_close(ev.fd);
                handle_event(f, &ev, targets, now_usec());
                if (f->misplaced)
                        handle_misplaced(f);
                if (now_usec() >= deadline)
                        return true;
        }
        return true;
}

bool fanotify_slice(Fanotify *f, uint64_t budget_usec) {
        bool more;

        f->in_slice = true;
        more = slice_run(f, budget_usec);
        f->in_slice = false;
        return more;
}
