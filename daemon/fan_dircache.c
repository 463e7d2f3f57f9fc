/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fan_dircache - directory handles to where the directories are
 *
 * The map is a GHashTable set keyed by the FanDir itself (hash and equality
 * on its handle), so a lookup by handle builds a probe FanDir on the stack.
 * A node is one allocation with its handle inline, and its name apart (a
 * rename changes it, and the node's address must not change: children,
 * the layer above and the map point to it).
 */

#include <errno.h>
#include <glib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "fan_dircache.h"
#include "macro.h"

/* A chain longer than this is a loop (or worse): PATH_MAX holds at most half as many names. */
#define FAN_DIR_DEPTH_MAX (PATH_MAX / 2)

struct FanDirCache {
        FanDirOps ops;
        void *userdata;
        size_t max_dirs;
        GHashTable *dirs; /* FanDir (a set, keyed by handle) */
        size_t kept;      /* what the last clear kept */
        LIST_HEAD(FanDir, pinned);
};

static uint32_t handle_hash(const FanHandle *h) {
        uint32_t x = 2166136261u ^ (uint32_t) h->type;

        for (uint32_t i = 0; i < h->size; i++)
                x = (x ^ h->bytes[i]) * 16777619u;
        return x;
}

static guint dir_hash(gconstpointer p) {
        return ((const FanDir *) p)->hash;
}

static gboolean dir_equal(gconstpointer a, gconstpointer b) {
        return fan_handle_equal(&((const FanDir *) a)->handle, &((const FanDir *) b)->handle);
}

int fan_dircache_new(const FanDirOps *ops, void *userdata, size_t max_dirs, FanDirCache **ret) {
        FanDirCache *c = calloc(1, sizeof(FanDirCache));

        if (!c)
                return -ENOMEM;
        c->ops = *ops;
        c->userdata = userdata;
        c->max_dirs = max_dirs;
        c->dirs = g_hash_table_new(dir_hash, dir_equal);
        *ret = c;
        return 0;
}

static void dir_free(FanDir *d) {
        free(d->name);
        free(d);
}

FanDirCache *fan_dircache_free(FanDirCache *c) {
        GHashTableIter i;
        gpointer k;

        if (!c)
                return NULL;
        g_hash_table_iter_init(&i, c->dirs);
        while (g_hash_table_iter_next(&i, &k, NULL))
                dir_free(k);
        g_hash_table_destroy(c->dirs);
        free(c);
        return NULL;
}

size_t fan_dircache_size(const FanDirCache *c) {
        return g_hash_table_size(c->dirs);
}

FanDir *fan_dircache_get(FanDirCache *c, const FanHandle *h) {
        struct {
                FanDir d;
                uint8_t bytes[FAN_HANDLE_MAX];
        } probe;

        if (h->size > FAN_HANDLE_MAX)
                return NULL;
        probe.d.handle = *h;
        probe.d.hash = handle_hash(h);
        return g_hash_table_lookup(c->dirs, &probe.d);
}

static void dir_attach(FanDir *d, FanDir *parent) {
        d->parent = parent;
        if (parent)
                LIST_PREPEND(sib, parent->children, d);
}

static void dir_detach(FanDir *d) {
        if (d->parent)
                LIST_REMOVE(sib, d->parent->children, d);
        d->parent = NULL;
}

static FanDir *dir_new(FanDirCache *c, const FanHandle *h, const char *name, size_t name_len) {
        FanDir *d = calloc(1, sizeof(FanDir) + h->size);

        if (!d)
                return NULL;
        d->name = strndup(name, name_len);
        if (!d->name) {
                free(d);
                return NULL;
        }
        memcpy(d->handle_bytes, h->bytes, h->size);
        d->handle = *h;
        d->handle.bytes = d->handle_bytes;
        d->hash = handle_hash(h);
        g_hash_table_add(c->dirs, d);
        return d;
}

/* Forgets d and everything below it; a pinned one stays, detached. */
static void dir_drop(FanDirCache *c, FanDir *d) {
        FanDir *child;

        while ((child = d->children))
                dir_drop(c, child);
        dir_detach(d);
        if (d->n_pins > 0)
                return;
        g_hash_table_remove(c->dirs, d);
        dir_free(d);
}

/* Past max_dirs more than a clear keeps (the pinned ones and their
 * ancestors): everything else goes, as at an overflow. */
static void make_room(FanDirCache *c) {
        if (g_hash_table_size(c->dirs) >= c->max_dirs + c->kept)
                fan_dircache_clear(c);
}

/* One directory of a chain being looked up (its handle's bytes inline: the array grows). */
typedef struct Level {
        uint8_t bytes[FAN_HANDLE_MAX];
        FanHandle handle;
        char name[NAME_MAX + 1];
        bool top;
} Level;

/* Looks up h and its ancestors until a cached one (or a top), and adds them. */
static int resolve_chain(FanDirCache *c, const FanHandle *h, FanDir **ret) {
        g_autoptr(GArray) chain = g_array_new(FALSE, FALSE, sizeof(Level));
        FanDir *above = NULL, *d = NULL;
        FanHandle cur = *h;
        uint8_t cur_bytes[FAN_HANDLE_MAX];

        if (h->size > FAN_HANDLE_MAX)
                return -EINVAL;
        for (;;) {
                Level *l;
                int r;

                above = fan_dircache_get(c, &cur);
                if (above)
                        break;
                if (chain->len >= FAN_DIR_DEPTH_MAX)
                        return -ELOOP;
                g_array_set_size(chain, chain->len + 1);
                l = &g_array_index(chain, Level, chain->len - 1);
                memcpy(l->bytes, cur.bytes, cur.size);
                l->handle = cur;
                l->handle.bytes = l->bytes;
                r = c->ops.lookup(&l->handle, &cur, cur_bytes, l->name, c->userdata);
                if (r < 0)
                        return r;
                l->top = r > 0;
                if (l->top)
                        break;
                /* A filesystem that says a directory is its own parent is a top's. */
                if (fan_handle_equal(&cur, &l->handle)) {
                        l->top = true;
                        break;
                }
        }
        /* Added from the top down, each below the one before. */
        for (guint k = chain->len; k > 0; k--) {
                Level *l = &g_array_index(chain, Level, k - 1);

                l->handle.bytes = l->bytes; /* the array may have moved since */
                d = dir_new(c, &l->handle, l->top ? "" : l->name, l->top ? 0 : strlen(l->name));
                if (!d)
                        return -ENOMEM;
                d->top = l->top;
                dir_attach(d, above);
                above = d;
        }
        *ret = d ?: above;
        return 0;
}

int fan_dircache_resolve(FanDirCache *c, const FanHandle *h, FanDir **ret) {
        FanDir *d = fan_dircache_get(c, h);

        if (d) {
                *ret = d;
                return 0;
        }
        make_room(c);
        return resolve_chain(c, h, ret);
}

/* d (detached: its place unknown) is looked up again and put there. */
static void reattach(FanDirCache *c, FanDir *d) {
        uint8_t bytes[FAN_HANDLE_MAX];
        char name[NAME_MAX + 1];
        FanHandle parent;
        FanDir *p;
        char *n;
        int r;

        if (d->parent || d->top)
                return;
        r = c->ops.lookup(&d->handle, &parent, bytes, name, c->userdata);
        if (r > 0 || (r == 0 && fan_handle_equal(&parent, &d->handle))) {
                d->top = true;
                return;
        }
        if (r < 0 || resolve_chain(c, &parent, &p) < 0)
                return; /* gone, or unreachable: stays detached, what is below it stays right */
        /* Not below itself (a stale answer from a filesystem in the middle of renames). */
        for (FanDir *a = p; a; a = a->parent)
                if (a == d)
                        return;
        n = strdup(name);
        if (!n)
                return;
        free(d->name);
        d->name = n;
        dir_attach(d, p);
}

int fan_dircache_pin(FanDirCache *c, const FanHandle *h, FanDir **ret) {
        FanDir *d;
        int r;

        r = fan_dircache_resolve(c, h, &d);
        if (r < 0)
                return r;
        if (d->n_pins++ == 0)
                LIST_PREPEND(pinned, c->pinned, d);
        *ret = d;
        return 0;
}

void fan_dircache_unpin(FanDirCache *c, FanDir *d) {
        if (--d->n_pins > 0)
                return;
        LIST_REMOVE(pinned, c->pinned, d);
        /* Detached (its parent was dropped while it was pinned): no place to keep it in. */
        if (!d->parent && !d->top)
                dir_drop(c, d);
}

void fan_dircache_clear(FanDirCache *c) {
        GHashTableIter i;
        gpointer k;

        /* Every unpinned directory goes; the pinned ones stay, detached, and
         * are looked up again, each finding its new ancestors (or another
         * pinned one). */
        LIST_FOREACH(pinned, d, c->pinned) {
                dir_detach(d);
                d->top = false;
        }
        g_hash_table_iter_init(&i, c->dirs);
        while (g_hash_table_iter_next(&i, &k, NULL)) {
                FanDir *d = k;

                if (d->n_pins > 0) {
                        /* Its children list is rebuilt by reattach(). */
                        d->children = NULL;
                        continue;
                }
                g_hash_table_iter_remove(&i);
                dir_free(d);
        }
        LIST_FOREACH(pinned, d, c->pinned)
                reattach(c, d);
        c->kept = g_hash_table_size(c->dirs);
}

void fan_dircache_created(FanDirCache *c, const FanHandle *parent, const char *name, size_t name_len,
                          const FanHandle *child) {
        FanDir *p, *d;

        p = fan_dircache_get(c, parent);
        if (!p || child->size > FAN_HANDLE_MAX)
                return; /* not below anything cached: nothing to keep right */
        d = fan_dircache_get(c, child);
        if (d)
                /* Met already (looked up between its creation and this event): the same place. */
                return fan_dircache_renamed(c, parent, name, name_len, child);
        make_room(c);
        p = fan_dircache_get(c, parent); /* a clear may have taken it */
        if (!p)
                return;
        d = dir_new(c, child, name, name_len);
        if (d)
                dir_attach(d, p);
}

void fan_dircache_renamed(FanDirCache *c, const FanHandle *new_parent, const char *new_name, size_t new_name_len,
                          const FanHandle *child) {
        FanDir *d = fan_dircache_get(c, child), *p = NULL;
        char *n;
        int r;

        if (!d)
                return; /* nothing cached below it either: nothing moves */
        /* Its new parent is cached, or is looked up (which may clear the
         * cache: d is looked up again); if that fails (gone again,
         * unreachable) d is detached: what is below it stays right. */
        r = fan_dircache_resolve(c, new_parent, &p);
        d = fan_dircache_get(c, child);
        if (!d)
                return;
        if (r < 0) {
                dir_detach(d);
                d->top = false;
                return;
        }
        for (FanDir *a = p; a; a = a->parent)
                if (a == d)
                        return; /* below itself: a stale lookup; the next events set it right */
        n = strndup(new_name, new_name_len);
        if (!n)
                return;
        free(d->name);
        d->name = n;
        dir_detach(d);
        d->top = false;
        dir_attach(d, p);
}

void fan_dircache_deleted(FanDirCache *c, const FanHandle *h) {
        FanDir *d = fan_dircache_get(c, h);

        if (d)
                dir_drop(c, d);
}

void fan_dircache_attrib(FanDirCache *c, const FanHandle *h) {
        FanDir *d = fan_dircache_get(c, h);

        if (d)
                d->n_verdicts = d->next_verdict = 0;
}

int fan_dir_path_below(const FanDir *d, const FanDir *root, char *buf, size_t size) {
        size_t len = 0, at;
        const FanDir *a;

        for (a = d; a && a != root; a = a->parent)
                len += strlen(a->name) + 1;
        if (!a)
                return -ENOENT;
        if (len == 0) {
                if (size == 0)
                        return -ENAMETOOLONG;
                buf[0] = '\0';
                return 0;
        }
        len--; /* no slash before the first name */
        if (len >= size || len > INT_MAX)
                return -ENAMETOOLONG;
        buf[len] = '\0';
        at = len;
        for (a = d; a != root; a = a->parent) {
                size_t n = strlen(a->name);

                at -= n;
                memcpy(buf + at, a->name, n);
                if (at > 0)
                        buf[--at] = '/';
        }
        return (int) len;
}

/* What caller may do with d: its verdict, asked of the kernel once. */
static uint8_t dir_bits(FanDirCache *c, FanDir *d, uint32_t caller) {
        FanVerdict *v;
        int r;

        for (uint8_t i = 0; i < d->n_verdicts; i++)
                if (d->verdicts[i].caller == caller)
                        return d->verdicts[i].bits;
        r = c->ops.access(&d->handle, caller, c->userdata);
        v = &d->verdicts[d->next_verdict];
        d->next_verdict = (uint8_t) ((d->next_verdict + 1) % FAN_DIR_VERDICTS);
        if (d->n_verdicts < FAN_DIR_VERDICTS)
                d->n_verdicts++;
        *v = (FanVerdict) { caller, r < 0 ? 0 : (uint8_t) r };
        return v->bits;
}

bool fan_dircache_may_read(FanDirCache *c, const FanDir *root, FanDir *d, uint32_t caller) {
        FanDir *a;

        /* Below root at all? */
        for (a = d; a && a != root; a = a->parent)
                ;
        if (!a)
                return false;
        if (caller == 0)
                return true;
        if (!(dir_bits(c, d, caller) & FAN_DIR_MAY_READ))
                return false;
        /* Each directory a walk goes through to reach d, root included. */
        for (a = d; a != root;) {
                a = a->parent;
                if (!(dir_bits(c, a, caller) & FAN_DIR_MAY_SEARCH))
                        return false;
        }
        return true;
}
