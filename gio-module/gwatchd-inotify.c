/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gwatchd-inotify - the module's own inotify (see gwatchd-inotify.h)
 *
 * The layers of gio/inotify/ in one file, smaller: the kernel reader
 * (reads bounded a dispatch, records parsed whole, the two halves of a
 * rename paired by cookie, a MOVED_FROM alone at the end of a read held
 * GWATCHD_INOTIFY_PAIR_MS for its MOVED_TO), the maps (wd -> watches, a
 * watch a monitor's path), and the hand-over of events to the module.
 */

#include <errno.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <glib-unix.h>

#include "gwatchd-inotify.h"

#define READ_BUFFER      (64 * 1024)
#define READS_A_DISPATCH 8   /* bounded: a busy writer cannot trap the loop */
#define PAIR_DISTANCE    100 /* records between the halves of a rename, at most (as GLib) */

struct GWatchdInotifyWatch {
        gint ref_count;
        int wd;
        char *path;
        guint32 mask;
        gboolean file;
        gpointer owner; /* a reference (callbacks.ref) */
        const GWatchdInotifyCallbacks *cb;
        gboolean removed; /* under the instance's lock */
};

struct GWatchdInotify {
        int fd;
        GMainContext *context;
        GSource *source;
        GSource *pair_timer;
        GWatchdInotifyCallbacks cb;

        GMutex lock;
        GHashTable *by_wd; /* wd -> GPtrArray of GWatchdInotifyWatch* (references) */

        /* The reader's, in the context's thread. */
        GByteArray *held; /* a MOVED_FROM record waiting for its partner, or NULL */
        guint8 *buf;
};

typedef struct Rec {
        int wd;
        guint32 mask, cookie;
        const char *name; /* NULL or a name in the buffer */
        size_t off;       /* where the record starts in the buffer */
        int pair;         /* index of the other half, or -1 */
} Rec;

static GWatchdInotifyWatch *watch_ref(GWatchdInotifyWatch *w) {
        g_atomic_int_inc(&w->ref_count);
        return w;
}

static void watch_unref(gpointer p) {
        GWatchdInotifyWatch *w = p;

        if (!g_atomic_int_dec_and_test(&w->ref_count))
                return;
        w->cb->unref(w->owner);
        g_free(w->path);
        g_free(w);
}

gboolean gwatchd_inotify_watch_is_file(const GWatchdInotifyWatch *watch) {
        return watch->file;
}

static char *join(const char *dir, const char *name) {
        if (!name || !*name)
                return g_strdup(dir);
        if (g_str_equal(dir, "/"))
                return g_strconcat("/", name, NULL);
        return g_strconcat(dir, "/", name, NULL);
}

/* ------------------------------------------------------------------------ */
/* Handing over */

typedef struct Delivery {
        GPtrArray *watches;    /* GWatchdInotifyWatch* (references), in first-event order */
        GHashTable *events;    /* watch -> GPtrArray of WatchdEvent* */
        GPtrArray *gone;       /* GWatchdInotifyWatch* (references) */
        GPtrArray *overflowed; /* owners (references) */
} Delivery;

static void delivery_add(Delivery *d, GWatchdInotifyWatch *w, WatchdEvent *e) {
        GPtrArray *a = g_hash_table_lookup(d->events, w);

        if (!a) {
                a = g_ptr_array_new_with_free_func((GDestroyNotify) watchd_event_unref);
                g_hash_table_insert(d->events, w, a);
                g_ptr_array_add(d->watches, watch_ref(w));
        }
        g_ptr_array_add(a, e);
}

/* Lock held: w no longer gets anything; its reference in the map goes. */
static void unmap(GWatchdInotify *in, GWatchdInotifyWatch *w) {
        GPtrArray *list = g_hash_table_lookup(in->by_wd, GINT_TO_POINTER(w->wd));

        w->removed = TRUE;
        if (list && g_ptr_array_remove(list, w) && list->len == 0)
                g_hash_table_remove(in->by_wd, GINT_TO_POINTER(w->wd));
}

/* Lock held: every watch of wd is gone (IGNORED, or renamed away). */
static void wd_gone(GWatchdInotify *in, Delivery *d, int wd, gboolean remove_kernel_watch) {
        GPtrArray *list = g_hash_table_lookup(in->by_wd, GINT_TO_POINTER(wd));

        if (!list)
                return;
        g_ptr_array_ref(list);
        while (list->len > 0) {
                GWatchdInotifyWatch *w = list->pdata[0];

                g_ptr_array_add(d->gone, watch_ref(w));
                unmap(in, w);
        }
        g_ptr_array_unref(list);
        if (remove_kernel_watch)
                (void) inotify_rm_watch(in->fd, wd);
}

/* Lock held: the path a watch of wd gives its name (for the other half of
 * a rename), or NULL. */
static const char *wd_path(GWatchdInotify *in, int wd) {
        GPtrArray *list = g_hash_table_lookup(in->by_wd, GINT_TO_POINTER(wd));

        return list && list->len > 0 ? ((GWatchdInotifyWatch *) list->pdata[0])->path : NULL;
}

/* Lock held: the records, as events of the watches they concern. */
static void dispatch_records(GWatchdInotify *in, Delivery *d, Rec *recs, guint n) {
        for (guint i = 0; i < n; i++) {
                Rec *r = &recs[i];
                GPtrArray *list;

                if (r->mask & IN_Q_OVERFLOW) {
                        GHashTableIter it;
                        gpointer value;

                        g_hash_table_iter_init(&it, in->by_wd);
                        while (g_hash_table_iter_next(&it, NULL, &value))
                                for (guint j = 0; j < ((GPtrArray *) value)->len; j++) {
                                        GWatchdInotifyWatch *w = ((GPtrArray *) value)->pdata[j];

                                        if (!g_ptr_array_find(d->overflowed, w->owner, NULL))
                                                g_ptr_array_add(d->overflowed, in->cb.ref(w->owner));
                                }
                        continue;
                }
                if (r->mask & IN_IGNORED) {
                        wd_gone(in, d, r->wd, FALSE);
                        continue;
                }
                if (r->pair >= 0 && r->pair < (int) i)
                        continue; /* the MOVED_TO of a pair: said with its MOVED_FROM */
                if (r->pair >= 0) {
                        Rec *to = &recs[r->pair];
                        int wds[2] = { r->wd, to->wd };

                        for (int k = 0; k < (r->wd == to->wd ? 1 : 2); k++) {
                                list = g_hash_table_lookup(in->by_wd, GINT_TO_POINTER(wds[k]));
                                for (guint j = 0; list && j < list->len; j++) {
                                        GWatchdInotifyWatch *w = list->pdata[j];
                                        const char *from_dir = k == 0 ? w->path : wd_path(in, r->wd);
                                        const char *to_dir = k == 1 || r->wd == to->wd ? w->path : wd_path(in, to->wd);
                                        g_autofree char *from = NULL, *dest = NULL;

                                        if ((w->mask & IN_MOVE) != IN_MOVE || w->file)
                                                continue;
                                        from = from_dir ? join(from_dir, r->name) : NULL;
                                        dest = to_dir ? join(to_dir, to->name) : NULL;
                                        if (from && dest)
                                                delivery_add(d, w,
                                                             watchd_event_new((r->mask & IN_ISDIR) | IN_MOVED_FROM |
                                                                                      IN_MOVED_TO,
                                                                              r->cookie, from, dest));
                                }
                        }
                        continue;
                }
                list = g_hash_table_lookup(in->by_wd, GINT_TO_POINTER(r->wd));
                for (guint j = 0; list && j < list->len; j++) {
                        GWatchdInotifyWatch *w = list->pdata[j];
                        guint32 mask = r->mask & (w->mask | IN_UNMOUNT | IN_ISDIR);
                        g_autofree char *path = NULL;

                        if (!(mask & ~IN_ISDIR))
                                continue;
                        path = join(w->path, w->file ? NULL : r->name);
                        delivery_add(d, w, watchd_event_new(mask, r->cookie, path, NULL));
                }
                /* Renamed away: GLib's backend takes the directory for gone
                 * (inotify-path.c, ip_event_callback) and watches its path
                 * again once it is back; the kernel would go on following the
                 * inode. Deleted or unmounted: IGNORED follows. */
                if ((r->mask & IN_MOVE_SELF) && !r->name)
                        wd_gone(in, d, r->wd, TRUE);
        }
}

static void deliver(GWatchdInotify *in, Delivery *d) {
        for (guint i = 0; i < d->watches->len; i++) {
                GWatchdInotifyWatch *w = d->watches->pdata[i];
                gboolean removed;

                g_mutex_lock(&in->lock);
                removed = w->removed && !g_ptr_array_find(d->gone, w, NULL);
                g_mutex_unlock(&in->lock);
                if (!removed)
                        in->cb.events(w->owner, w, g_hash_table_lookup(d->events, w));
        }
        for (guint i = 0; i < d->gone->len; i++) {
                GWatchdInotifyWatch *w = d->gone->pdata[i];

                in->cb.gone(w->owner, w);
        }
        for (guint i = 0; i < d->overflowed->len; i++)
                in->cb.overflow(d->overflowed->pdata[i]);
}

static void delivery_clear(GWatchdInotify *in, Delivery *d) {
        g_hash_table_unref(d->events);
        g_ptr_array_unref(d->watches);
        g_ptr_array_unref(d->gone);
        for (guint i = 0; i < d->overflowed->len; i++)
                in->cb.unref(d->overflowed->pdata[i]);
        g_ptr_array_unref(d->overflowed);
}

/* ------------------------------------------------------------------------ */
/* Reading */

/* The records of data (whole ones: the kernel never splits one). */
static GArray *parse(const guint8 *data, size_t len) {
        GArray *recs = g_array_new(FALSE, FALSE, sizeof(Rec));
        size_t off = 0;

        while (off + sizeof(struct inotify_event) <= len) {
                const struct inotify_event *ev = (const struct inotify_event *) (data + off);
                Rec r = { .wd = ev->wd, .mask = ev->mask, .cookie = ev->cookie, .off = off, .pair = -1 };

                if (off + sizeof(*ev) + ev->len > len)
                        break;
                r.name = ev->len > 0 && ev->name[0] ? ev->name : NULL;
                g_array_append_val(recs, r);
                off += sizeof(*ev) + ev->len;
        }
        return recs;
}

static void pair(Rec *recs, guint n) {
        for (guint i = 0; i < n; i++) {
                if (!(recs[i].mask & IN_MOVED_FROM) || recs[i].pair >= 0)
                        continue;
                for (guint j = i + 1; j < n && j <= i + PAIR_DISTANCE; j++)
                        if ((recs[j].mask & IN_MOVED_TO) && recs[j].pair < 0 && recs[j].cookie == recs[i].cookie) {
                                recs[i].pair = (int) j;
                                recs[j].pair = (int) i;
                                break;
                        }
        }
}

static gboolean on_pair_timeout(gpointer data);

/* Hands over data (whole records); a MOVED_FROM alone at its end is held
 * for its partner unless flush. */
static void process(GWatchdInotify *in, guint8 *data, size_t len, gboolean flush) {
        g_autoptr(GArray) recs = parse(data, len);
        Rec *r = (Rec *) recs->data;
        guint n = recs->len;
        Delivery d = {
                .watches = g_ptr_array_new_with_free_func(watch_unref),
                .events = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) g_ptr_array_unref),
                .gone = g_ptr_array_new_with_free_func(watch_unref),
                .overflowed = g_ptr_array_new(),
        };

        pair(r, n);
        if (!flush && n > 0 && (r[n - 1].mask & IN_MOVED_FROM) && r[n - 1].pair < 0) {
                /* Its partner may be in the next read: kept (as bytes) until
                 * then, or until the timer says it came alone. */
                in->held = g_byte_array_new();
                g_byte_array_append(in->held, data + r[n - 1].off, (guint) (len - r[n - 1].off));
                n--;
                in->pair_timer = g_timeout_source_new(GWATCHD_INOTIFY_PAIR_MS);
                g_source_set_callback(in->pair_timer, on_pair_timeout, in, NULL);
                g_source_attach(in->pair_timer, in->context);
        }
        g_mutex_lock(&in->lock);
        dispatch_records(in, &d, r, n);
        g_mutex_unlock(&in->lock);
        deliver(in, &d);
        delivery_clear(in, &d);
}

/* Takes what was held back, to go first. */
static GByteArray *take_held(GWatchdInotify *in) {
        if (in->pair_timer) {
                g_source_destroy(in->pair_timer);
                g_clear_pointer(&in->pair_timer, g_source_unref);
        }
        return g_steal_pointer(&in->held);
}

static gboolean on_pair_timeout(gpointer data) {
        GWatchdInotify *in = data;
        g_autoptr(GByteArray) held = take_held(in);

        if (held)
                process(in, held->data, held->len, TRUE);
        return G_SOURCE_REMOVE;
}

static gboolean on_readable(int fd, GIOCondition cond, gpointer data) {
        GWatchdInotify *in = data;
        g_autoptr(GByteArray) all = take_held(in);

        if (!all)
                all = g_byte_array_new();
        for (int i = 0; i < READS_A_DISPATCH; i++) {
                ssize_t n = read(fd, in->buf, READ_BUFFER);

                if (n <= 0)
                        break;
                g_byte_array_append(all, in->buf, (guint) n);
        }
        if (all->len > 0)
                process(in, all->data, all->len, FALSE);
        return G_SOURCE_CONTINUE;
}

/* ------------------------------------------------------------------------ */

GWatchdInotify *gwatchd_inotify_new(GMainContext *context, const GWatchdInotifyCallbacks *callbacks, GError **error) {
        GWatchdInotify *in;
        int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

        if (fd < 0) {
                int e = errno;

                g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e), "inotify_init1: %s", g_strerror(e));
                return NULL;
        }
        in = g_new0(GWatchdInotify, 1);
        in->fd = fd;
        in->context = g_main_context_ref(context);
        in->cb = *callbacks;
        in->buf = g_malloc(READ_BUFFER);
        g_mutex_init(&in->lock);
        in->by_wd = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) g_ptr_array_unref);
        in->source = g_unix_fd_source_new(fd, G_IO_IN);
        g_source_set_callback(in->source, G_SOURCE_FUNC(on_readable), in, NULL);
        g_source_attach(in->source, context);
        return in;
}

GWatchdInotifyWatch *gwatchd_inotify_add(GWatchdInotify *in, const char *path, guint32 mask, gboolean file,
                                         gpointer owner, int *ret_error) {
        GWatchdInotifyWatch *w;
        GPtrArray *list;
        int wd;

        g_mutex_lock(&in->lock);
        wd = inotify_add_watch(in->fd, path, mask | IN_MASK_ADD | (file ? 0 : IN_ONLYDIR));
        if (wd < 0) {
                *ret_error = -errno;
                g_mutex_unlock(&in->lock);
                return NULL;
        }
        w = g_new0(GWatchdInotifyWatch, 1);
        *w = (GWatchdInotifyWatch) {
                .ref_count = 1,
                .wd = wd,
                .path = g_strdup(path),
                .mask = mask,
                .file = file,
                .owner = in->cb.ref(owner),
                .cb = &in->cb,
        };
        list = g_hash_table_lookup(in->by_wd, GINT_TO_POINTER(wd));
        if (!list) {
                list = g_ptr_array_new_with_free_func(watch_unref);
                g_hash_table_insert(in->by_wd, GINT_TO_POINTER(wd), list);
        }
        g_ptr_array_add(list, watch_ref(w));
        g_mutex_unlock(&in->lock);
        return w;
}

/* Drops the caller's reference too. The kernel watch goes with the last
 * watch of its inode. */
void gwatchd_inotify_remove(GWatchdInotify *in, GWatchdInotifyWatch *watch) {
        GPtrArray *list;

        g_mutex_lock(&in->lock);
        if (!watch->removed) {
                int wd = watch->wd;

                watch_ref(watch);
                unmap(in, watch);
                list = g_hash_table_lookup(in->by_wd, GINT_TO_POINTER(wd));
                if (!list)
                        (void) inotify_rm_watch(in->fd, wd);
                watch_unref(watch);
        }
        g_mutex_unlock(&in->lock);
        watch_unref(watch);
}
