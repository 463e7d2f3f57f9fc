/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watch_table - subscriptions and the kernel watches they share
 *
 * Widening a mask is done on the fd the caller opened. Narrowing happens
 * when a subscription ends, when there is no caller's fd: the table reopens
 * the watch's recorded path (as the daemon, O_PATH only, so no device is
 * ever opened and no IN_OPEN is generated), checks that it is still the same inode, and re-adds the
 * watch with the smaller mask. If any of that fails, the kernel keeps the
 * wider mask: nothing is lost, because events are filtered per subscription
 * anyway, and the watch is released for good when its last link goes.
 *
 * With a worker pool (watch_table_set_fswork()) the narrowing is a job in
 * the lane of the watch's file system (watch_narrow.h): the path walk and
 * the add's permission check can wait for a file system that does not
 * answer, which on the loop froze the daemon for everyone.
 */

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "event_bits.h"
#include "error.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "pool.h"
#include "ptr_set.h"
#include "watch_narrow.h"
#include "watch_placed.h"
#include "watch_table.h"
#include "watch_table_internal.h"

static void narrow_done(const void *key, const NarrowResult *res, void *userdata);
static void stray_sweep(int wd, void *userdata);
static void watch_narrow(WatchTable *t, Watch *w, const WatchLink *l, uint32_t mask, uid_t uid);

/* Every wd the table removes goes through here: while jobs that may place
 * are out, one of them may have found its watch (WatchPlaced). */
static int table_rm_wd(WatchTable *t, int wd) {
        int r = backend_rm_watch(t->backend, wd);

        placed_ledger_removed(&t->ledger, wd);
        return r;
}

/* Both maps are sets of Watch pointers (ptr_set.h: 8 bytes a slot) hashed
 * on the fields they map from, looked up with a Watch on the stack: no key
 * allocated per watch. A wd's hash keeps the wd itself in its low bits (the
 * slot): the kernel hands out wds in sequence, so they fill the slots in
 * order without colliding. */
static uint64_t wd_hash(int wd) {
        return ptr_set_mix((uint32_t) wd) << 32 | (uint32_t) wd;
}

static uint64_t watch_wd_hash(const void *p) {
        return wd_hash(((const Watch *) p)->wd);
}

static bool watch_wd_equal(const void *a, const void *b) {
        return ((const Watch *) a)->wd == ((const Watch *) b)->wd;
}

static uint64_t inode_hash(dev_t dev, ino_t ino) {
        return ptr_set_mix((uint64_t) ino * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t) dev);
}

static uint64_t watch_inode_hash(const void *p) {
        const Watch *w = p;
        return inode_hash(w->dev, w->ino);
}

static bool watch_inode_equal(const void *a, const void *b) {
        const Watch *x = a, *y = b;
        return x->dev == y->dev && x->ino == y->ino;
}

/* Every Watch of every table: the loop's thread makes and frees them (pool.h). */
static Pool watch_pool = POOL_INIT(sizeof(Watch));
_Static_assert(sizeof(Watch) == 32, "a Watch is 32 bytes (watch_table_types.h)");

static void watch_free(Watch *w) {
        pool_free(&watch_pool, w);
}

static void subscription_free(gpointer p) {
        Subscription *s = p;

        free(s->path);
        free(s);
}

static void link_free(WatchLink *l, Subscription *s) {
        if (l->n_holds > 0) {
                /* Its last holder frees it (watch_link_release); until then it
                 * is a top of its own, so that it still names its subscription
                 * once its parent is gone. */
                l->dead = true;
                l->top = true;
                l->up.subscription = s;
                return;
        }
        watch_link_dealloc(l);
}

int watch_table_new(Backend *backend, WatchTable **ret) {
        WatchTable *t;

        t = calloc(1, sizeof(WatchTable));
        if (!t)
                return -ENOMEM;
        t->backend = backend;
        t->next_id = 1;
        ptr_set_init(&t->by_wd, watch_wd_hash, watch_wd_equal);
        ptr_set_init(&t->by_inode, watch_inode_hash, watch_inode_equal);
        t->subscriptions = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, subscription_free);
        placed_ledger_init(&t->ledger, stray_sweep, t);
        if (narrower_new(backend, narrow_done, t, &t->narrower) < 0) {
                g_hash_table_destroy(t->subscriptions);
                free(t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

/* Frees every link of s without telling the kernel (watch_table_free). */
static void links_free_all(Subscription *s) {
        WatchLink *l = s->links;

        /* Post-order: always down to the first child, so a freed link is its parent's first. */
        while (l) {
                WatchLink *p;
                Watch *w;

                while (l->children)
                        l = l->children;
                p = watch_link_parent(l);
                if (p)
                        p->children = l->sib_next;
                w = l->watch;
                if (w->wd < 0 && --w->n_links == 0)
                        watch_free(w);
                watch_link_dealloc(l);
                l = p;
        }
        s->links = NULL;
}

WatchTable *watch_table_free(WatchTable *t) {
        GHashTableIter i;
        gpointer v;
        Watch *w;

        if (!t)
                return NULL;
        /* Links, and watches whose wd was detached (they belong to their links). */
        g_hash_table_iter_init(&i, t->subscriptions);
        while (g_hash_table_iter_next(&i, NULL, &v))
                links_free_all(v);
        g_hash_table_destroy(t->subscriptions);
        /* Jobs still out: their completions only free them. */
        t->narrower = narrower_free(t->narrower);
        ptr_set_done(&t->by_inode);
        PTR_SET_FOREACH(w, &t->by_wd)
                watch_free(w);
        ptr_set_done(&t->by_wd);
        placed_ledger_done(&t->ledger);
        free(t);
        return NULL;
}

void watch_table_set_fswork(WatchTable *t, FsWork *fswork) {
        narrower_set_fswork(t->narrower, fswork);
}

void watch_table_closing(WatchTable *t) {
        t->closing = true;
        narrower_set_fswork(t->narrower, NULL);
}

void watch_table_set_ops(WatchTable *t, const WatchTableOps *ops, void *userdata) {
        t->ops = *ops;
        t->ops_userdata = userdata;
}

Watch *watch_table_find_watch(WatchTable *t, dev_t dev, ino_t ino) {
        if (dev > UINT32_MAX)
                return NULL; /* none is made (watch_new()) */
        return ptr_set_find(&t->by_inode, inode_hash(dev, ino), watch_inode_equal, &(Watch) { .dev = dev, .ino = ino });
}

Watch *watch_table_get_watch(WatchTable *t, int wd) {
        Watch *w;

        if (t->last && t->last->wd == wd)
                return t->last;
        w = ptr_set_find(&t->by_wd, wd_hash(wd), watch_wd_equal, &(Watch) { .wd = wd });
        if (w)
                t->last = w;
        return w;
}

Subscription *watch_table_get_subscription(WatchTable *t, uint32_t id) {
        return g_hash_table_lookup(t->subscriptions, GUINT_TO_POINTER(id));
}

unsigned watch_table_n_watches(const WatchTable *t) {
        return ptr_set_size(&t->by_wd);
}

unsigned watch_table_n_subscriptions(const WatchTable *t) {
        return g_hash_table_size(t->subscriptions);
}

/* What subscription s needs from the kernel on a link (root: its own
 * object). A PERSIST root also asks to hear of its object's rename away
 * (the syscalls have IN_MOVE_SELF; the device drops the bit it does not
 * know, backend_device.c). */
static uint32_t need_bits(uint32_t mask, uint32_t flags, bool is_dir, bool root, bool chain) {
        return mask | ((flags & WATCHD_FLAG_RECURSIVE) && is_dir ? WATCH_TREE_BITS : 0) |
                (is_dir && !chain ? WATCH_ACCESS_BITS : 0) | ((flags & WATCHD_FLAG_PERSIST) && root ? IN_MOVE_SELF : 0);
}

uint32_t watch_table_need_mask(uint32_t mask, uint32_t flags, bool is_dir, bool root) {
        return need_bits(mask, flags, is_dir, root, /* chain= */ false);
}

static uint32_t need_mask(const Subscription *s, bool is_dir, bool root) {
        if (s->pending)
                return WATCH_PENDING_BITS;
        /* Its tree is fanotify's (fanotify.h), the root's own events too: the
         * root's watch asks only for what the mark does not report, and
         * always for its deletion (a mask is never empty). */
        if (s->fanotify)
                return (s->mask & WATCH_FANOTIFY_ROOT_BITS) | IN_DELETE_SELF;
        return need_bits(s->mask, s->flags, is_dir, root, s->chain);
}

static uint32_t link_mask(const WatchLink *l, const Watch *w) {
        return need_mask(watch_link_subscription(l), w->is_dir, !watch_link_parent(l));
}

static uint32_t union_mask(const Watch *w) {
        uint32_t m = 0;

        LIST_FOREACH(watch, l, w->links)
                m |= link_mask(l, w);
        return m;
}

/* w's narrowing out, if any, is done with (watch_narrow.h: wait to widen w next). */
static void narrow_settle(WatchTable *t, Watch *w, bool wait) {
        uint32_t mask;

        if (!w->narrowing)
                return;
        if (narrower_settle(t->narrower, w, wait, &mask))
                w->kernel_mask = mask;
        w->narrowing = false;
}

/* Takes w out of by_inode, so that a new watch may be made for its inode. */
static void watch_make_stale(WatchTable *t, Watch *w) {
        narrow_settle(t, w, false);
        if (w->stale)
                return;
        (void) ptr_set_remove(&t->by_inode, w);
        w->stale = true;
}

static int watch_new(WatchTable *t, int wd, const struct stat *st, uint32_t mask, Watch **ret) {
        Watch *w, *old;

        /* Linux's device numbers are 32 bits (its stat() fills st_dev with
         * new_encode_dev(); statx()'s major and minor are 12 and 20 bits). */
        if (st->st_dev > UINT32_MAX)
                return -EOVERFLOW;
        w = pool_alloc(&watch_pool);
        if (!w)
                return -ENOMEM;
        *w = (Watch) {
                .wd = wd,
                .dev = st->st_dev,
                .ino = st->st_ino,
                .is_dir = S_ISDIR(st->st_mode),
                .kernel_mask = mask,
        };

        /* A wd we still hold is one the kernel has released and reused (its
         * IN_IGNORED is not read yet): that watch is dead. Its subscriptions
         * hear of it when the IN_IGNORED arrives; it can no longer be found by wd. */
        old = watch_table_get_watch(t, wd);
        if (old)
                watch_table_watch_gone(t, old);
        if (ptr_set_add(&t->by_wd, w) < 0) {
                watch_free(w);
                return -ENOMEM;
        }
        if (ptr_set_add(&t->by_inode, w) < 0) {
                (void) ptr_set_remove(&t->by_wd, w);
                watch_free(w);
                return -ENOMEM;
        }
        *ret = w;
        return 0;
}

/* Finds or makes the watch for the inode at fd with at least mask. */
static int watch_get(WatchTable *t, int fd, const struct stat *st, uint32_t mask, Watch **ret) {
        Watch *w;
        int wd, r;

        w = watch_table_find_watch(t, st->st_dev, st->st_ino);
        if (w && w->narrowing) {
                uint32_t target = 0;

                /* Bits the job out would take away: it must not land after this. */
                if (narrower_out(t->narrower, w, &target) && (target | mask) != target)
                        narrow_settle(t, w, true);
        }
        if (w && (w->kernel_mask | mask) == w->kernel_mask) {
                *ret = w;
                return 0;
        }

        /* IN_MASK_ADD where the backend has it: a job may have placed bits
         * of its own meanwhile (WatchPlaced), which the loop does not know yet. */
        r = backend_add_watch(t->backend, fd,
                              ((w ? w->kernel_mask : 0) | mask) | (t->backend->mask_add ? IN_MASK_ADD : 0), &wd);
        if (r < 0)
                return r;
        if (w && w->wd != wd) {
                /* The inode number was reused: the old watch is on a deleted inode. */
                watch_make_stale(t, w);
                w = NULL;
        }
        if (w) {
                w->kernel_mask |= mask;
                *ret = w;
                return 0;
        }
        r = watch_new(t, wd, st, mask, &w);
        if (r < 0) {
                (void) table_rm_wd(t, wd);
                return r;
        }
        *ret = w;
        return 0;
}

bool watch_table_can_place(const WatchTable *t) {
        return t->backend->mask_add;
}

void watch_table_place(WatchTable *t, int fd, const struct stat *st, uint32_t mask, WatchPlaced *ret) {
        *ret = (WatchPlaced) {
                .valid = true,
                .wd = -1,
                .dev = st->st_dev,
                .ino = st->st_ino,
                .mask = mask,
                .seq = narrower_seq(),
                .rm_seq = placed_ledger_seq(&t->ledger),
        };
        ret->r = backend_add_watch_any_thread(t->backend, fd, mask | IN_MASK_CREATE, &ret->wd);
        ret->created = ret->r >= 0;
        if (ret->r == -EEXIST)
                ret->r = backend_add_watch_any_thread(t->backend, fd, mask | IN_MASK_ADD, &ret->wd);
}

void watch_table_set_placed(WatchTable *t, WatchPlaced *p) {
        t->placed = p && p->valid ? p : NULL;
}

/* PlacedSweep: a stray no link took since is removed. */
static void stray_sweep(int wd, void *userdata) {
        WatchTable *t = userdata;

        if (!watch_table_get_watch(t, wd))
                (void) table_rm_wd(t, wd);
}

void watch_table_placed_done(WatchTable *t, WatchPlaced *p) {
        if (t->placed == p)
                t->placed = NULL;
        if (!p->valid || p->r < 0)
                return;
        p->valid = false;
        if (!watch_table_get_watch(t, p->wd)) /* not a link's, nor one the loop had */
                placed_ledger_stray(&t->ledger, p->wd);
}

void watch_table_placing(WatchTable *t, bool begin) {
        if (begin)
                placed_ledger_begin(&t->ledger);
        else
                placed_ledger_end(&t->ledger);
}

/* watch_get() with the watch a job placed (WatchPlaced in watch_table.h).
 * *ret_reset: the watch is to be set to what its links need, once linked. */
static int watch_get_placed(WatchTable *t, WatchPlaced *p, const struct stat *st, uint32_t mask, bool *ret_reset,
                            Watch **ret) {
        Watch *w = watch_table_find_watch(t, st->st_dev, st->st_ino);
        uint32_t target = 0;
        int r;

        p->used = true;
        if (p->r < 0)
                return p->r;
        if (w && w->wd == p->wd) {
                if (w->narrowing && narrower_out(t->narrower, w, &target) && (target | mask) != target) {
                        /* A narrowing out may land after the add, or has: its
                         * completion sets the watch to what its links need, this one's too. */
                        p->lost = true;
                        *ret = w;
                        return 0;
                }
                if (!w->narrowing && (w->kernel_mask | mask) != w->kernel_mask && narrower_touched(w->dev, w->ino, p->seq))
                        p->lost = true; /* one may have landed after the add: set it again */
                else
                        w->kernel_mask |= p->mask;
        } else {
                if (w)
                        /* Another watch of the inode, which the kernel no longer has
                         * (the inode number reused, or the watch removed). */
                        watch_make_stale(t, w);
                /* A watch the loop removed since the job placed it is gone (one it
                 * found, or one it made that another job found and no link took). */
                if (placed_ledger_gone(&t->ledger, p->wd, p->rm_seq))
                        return -WATCHD_E_PLACED_GONE;
                r = watch_new(t, p->wd, st, p->mask, &w);
                if (r < 0)
                        return r;
        }
        /* Bits the link needs that the job did not add (a mask of another
         * making): set in a job, as a narrowing, once linked. */
        if ((w->kernel_mask | mask) != w->kernel_mask) {
                p->lost = true;
                *ret_reset = true;
        }
        *ret = w;
        return 0;
}

/* Links s to the object at fd; parent NULL makes the top link, whose name
 * is an absolute path, or "" for the root (its path is s->path). */
static int link_new(WatchTable *t, Subscription *s, WatchLink *parent, int fd, const struct stat *st, const char *name,
                    size_t name_len, WatchLink **ret) {
        uint32_t need = need_mask(s, S_ISDIR(st->st_mode), !parent);
        WatchPlaced *p = t->placed;
        bool reset = false;
        WatchLink *l;
        Watch *w;
        int r;

        if (p && (p->used || p->dev != st->st_dev || p->ino != st->st_ino))
                p = NULL;
        /* The limits first: a link over them costs no kernel call. */
        if (s->account) {
                r = account_charge(s->account, 1);
                if (r < 0)
                        return r;
        }
        l = watch_link_alloc(name_len);
        if (!l) {
                r = -ENOMEM;
                goto fail;
        }
        *l = (WatchLink) {
                .up.parent = parent,
                .top = !parent,
        };
        if (!parent)
                l->up.subscription = s;
        memcpy(l->name, name, name_len);
        l->name[name_len] = '\0';

        r = p ? watch_get_placed(t, p, st, need, &reset, &w) : watch_get(t, fd, st, need, &w);
        if (r < 0) {
                watch_link_dealloc(l);
                goto fail;
        }
        LIST_FOREACH(watch, o, w->links)
                if (watch_link_subscription(o) == s && !s->chain) {
                        /* Already linked: a loop. The watch existed, so nothing to undo. */
                        watch_link_dealloc(l);
                        r = -EEXIST;
                        goto fail;
                }

        l->watch = w;
        SLIST_PREPEND(watch, w->links, l);
        assert(w->n_links < WATCH_LINKS_MAX); /* the limits keep far below */
        w->n_links++;
        if (parent)
                LIST_PREPEND(sib, parent->children, l);
        else {
                assert(!s->links);
                s->links = l;
        }
        s->n_links++;
        if (reset && !w->narrowing)
                watch_narrow(t, w, l, union_mask(w), s->account ? s->account->uid : 0);
        if (t->ops.link_added) {
                r = t->ops.link_added(l, fd, st, t->ops_userdata);
                if (r < 0) {
                        /* Refused above (a limit of its own): as if never made. */
                        watch_table_unlink(t, l);
                        return r;
                }
        }
        *ret = l;
        return 0;

fail:
        if (s->account)
                account_uncharge(s->account, 1);
        return r;
}

static int subscription_new(WatchTable *t, const char *path, Client *owner, Account *account, uint32_t mask,
                            uint32_t flags, Subscription **ret) {
        Subscription *s;

        if (t->next_id == UINT32_MAX)
                return -WATCHD_E_IDS_USED_UP;
        s = calloc(1, sizeof(Subscription));
        if (!s)
                return -ENOMEM;
        s->path = strdup(path);
        if (!s->path) {
                free(s);
                return -ENOMEM;
        }
        s->owner = owner;
        s->account = account;
        s->mask = mask;
        s->flags = flags;
        *ret = s;
        return 0;
}

static void subscription_insert(WatchTable *t, Subscription *s) {
        s->id = t->next_id++;
        g_hash_table_insert(t->subscriptions, GUINT_TO_POINTER(s->id), s);
        if (s->flags & WATCHD_FLAG_PERSIST)
                t->n_persist++;
}

static int subscribe(WatchTable *t, int fd, const struct stat *st, const char *path, Client *owner, Account *account,
                     uint32_t mask, uint32_t flags, bool fanotify, Subscription **ret) {
        Subscription *s;
        WatchLink *l;
        int r;

        r = subscription_new(t, path, owner, account, mask, flags, &s);
        if (r < 0)
                return r;
        s->fanotify = fanotify;
        r = link_new(t, s, NULL, fd, st, "", 0, &l);
        if (r < 0) {
                subscription_free(s);
                return r;
        }
        subscription_insert(t, s);
        *ret = s;
        return 0;
}

int watch_table_subscribe(WatchTable *t, int fd, const struct stat *st, const char *path, Client *owner,
                          Account *account, uint32_t mask, uint32_t flags, Subscription **ret) {
        return subscribe(t, fd, st, path, owner, account, mask, flags, /* fanotify= */ false, ret);
}

int watch_table_subscribe_fanotify(WatchTable *t, int fd, const struct stat *st, const char *path, Client *owner,
                                   Account *account, uint32_t mask, uint32_t flags, Subscription **ret) {
        return subscribe(t, fd, st, path, owner, account, mask, flags, /* fanotify= */ true, ret);
}

int watch_table_subscribe_pending(WatchTable *t, const char *path, Client *owner, Account *account, uint32_t mask,
                                  uint32_t flags, Subscription **ret) {
        Subscription *s;
        int r;

        r = subscription_new(t, path, owner, account, mask, flags, &s);
        if (r < 0)
                return r;
        s->pending = true;
        subscription_insert(t, s);
        *ret = s;
        return 0;
}

int watch_table_chain_new(WatchTable *t, const char *top, Subscription **ret) {
        Subscription *s;
        int r;

        r = subscription_new(t, top, NULL, NULL, 0, 0, &s);
        if (r < 0)
                return r;
        s->pending = s->chain = true;
        *ret = s;
        return 0;
}

void watch_table_chain_free(WatchTable *t, Subscription *s) {
        if (!s)
                return;
        assert(s->chain);
        if (s->links)
                (void) watch_table_unlink(t, s->links);
        subscription_free(s);
}

int watch_table_link_root(WatchTable *t, Subscription *s, int fd, const struct stat *st) {
        WatchLink *l;

        s->pending = false;
        return link_new(t, s, NULL, fd, st, "", 0, &l);
}

void watch_table_unplace(WatchTable *t, Subscription *s) {
        assert(!s->chain);
        if (s->links)
                (void) watch_table_unlink(t, s->links);
        s->pending = true;
}

int watch_table_link(WatchTable *t, Subscription *s, WatchLink *parent, int fd, const struct stat *st, const char *name,
                     size_t name_len, WatchLink **ret) {
        assert(parent && watch_link_subscription(parent) == s && !parent->dead);
        return link_new(t, s, parent, fd, st, name, name_len, ret);
}

int watch_table_link_pending(WatchTable *t, Subscription *s, int fd, const struct stat *st, const char *path,
                             WatchLink **ret) {
        return link_new(t, s, NULL, fd, st, path, strlen(path), ret);
}

/* On the loop, at the end of a narrowing in a worker (key: its Watch, or NULL). */
static void narrow_done(const void *key, const NarrowResult *res, void *userdata) {
        WatchTable *t = userdata;
        Watch *w = (Watch *) key, *other;

        if (w)
                w->narrowing = false;
        if (res->error < 0)
                return; /* at exit (-ESHUTDOWN) */
        if (res->other_wd >= 0) {
                /* The add made or found another watch of the inode: one the
                 * loop does not know is removed; one it knows (a new watch of
                 * the inode, or its inode number reused) has the job's mask
                 * now, and is set back to what its links need. */
                other = watch_table_get_watch(t, res->other_wd);
                if (!other)
                        (void) table_rm_wd(t, res->other_wd);
                else {
                        other->kernel_mask = res->mask;
                        if (union_mask(other) != other->kernel_mask && other->links && !other->stale)
                                watch_narrow(t, other, other->links, union_mask(other), 0);
                }
        }
        if (!w)
                return;
        if (res->applied) {
                w->kernel_mask = res->mask;
                /* More links went meanwhile: narrower still. */
                if (union_mask(w) != w->kernel_mask && w->links && !w->stale)
                        watch_narrow(t, w, w->links, union_mask(w), 0);
        } else
                log_debug_errno(res->r, "Failed to narrow the watch on '%s', keeping its mask: %m", res->path);
}

/* Best effort: see the top of the file. uid: whose link went (the job is counted as its). */
static void watch_narrow(WatchTable *t, Watch *w, const WatchLink *l, uint32_t mask, uid_t uid) {
        _cleanup_close_ int pfd = -1;
        char path[PATH_MAX];
        struct stat st;
        int wd, r;

        if (t->closing)
                return; /* every link goes: nothing to narrow for */
        if (w->narrowing)
                return; /* its completion narrows again to what is needed then */
        if (watch_link_path(l, path, sizeof(path)) < 0)
                return;
        if (narrower_has_fswork(t->narrower)) {
                r = narrower_submit(t->narrower, w, path, w->dev, w->ino, w->wd, mask, uid);
                if (r < 0)
                        log_debug_errno(r, "Failed to narrow the watch on '%s', keeping its mask: %m", path);
                else
                        w->narrowing = true;
                return;
        }
        /* As the daemon, but through no magic link (access.h), like every path from a client. */
        pfd = access_open_path(path, 0);
        if (pfd < 0 || fstat(pfd, &st) < 0)
                return;
        if (st.st_dev != w->dev || st.st_ino != w->ino || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
                return;
        r = backend_add_watch(t->backend, pfd, mask, &wd); /* O_PATH: see backend.h */
        if (r < 0) {
                log_debug_errno(r, "Failed to narrow the watch on '%s', keeping its mask: %m", path);
                return;
        }
        if (wd != w->wd) {
                /* Cannot happen for the same inode; undo rather than leak a watch. */
                (void) table_rm_wd(t, wd);
                return;
        }
        w->kernel_mask = mask;
}

/* Forgets w's wd: from now on w is owned by its links and freed with the last. */
static void watch_detach_wd(WatchTable *t, Watch *w) {
        narrow_settle(t, w, false);
        if (t->last == w)
                t->last = NULL;
        watch_make_stale(t, w);
        if (w->wd >= 0)
                (void) ptr_set_remove(&t->by_wd, w);
        w->wd = -1;
}

static void watch_release(WatchTable *t, Watch *w) {
        int r;

        /* The kernel queues IN_IGNORED for it; with the watch gone from the
         * table, that record and any still queued for the wd are dropped. A
         * watch whose wd was detached is already gone from the kernel. */
        if (w->wd >= 0) {
                r = table_rm_wd(t, w->wd);
                if (r < 0 && r != -EINVAL)
                        log_warning_errno(r, "Failed to remove kernel watch %i, ignoring: %m", w->wd);
        }
        watch_detach_wd(t, w);
        watch_free(w);
}

/* Removes one link that has no children. */
static void link_remove(WatchTable *t, WatchLink *l) {
        Subscription *s = watch_link_subscription(l);
        uid_t uid = s->account ? s->account->uid : 0;
        Watch *w = l->watch;

        assert(!l->children);
        if (t->ops.link_gone)
                t->ops.link_gone(l, t->ops_userdata);
        SLIST_REMOVE(watch, w->links, l);
        w->n_links--;

        if (!l->top)
                LIST_REMOVE(sib, l->up.parent->children, l);
        else
                s->links = NULL;
        s->n_links--;
        if (s->account)
                account_uncharge(s->account, 1);
        watch_link_set_access(l, false, false);
        link_free(l, s);

        if (w->n_links == 0)
                watch_release(t, w);
        else {
                uint32_t m = union_mask(w);

                if (m != w->kernel_mask && !w->stale)
                        watch_narrow(t, w, w->links, m, uid);
        }
}

unsigned watch_table_unlink(WatchTable *t, WatchLink *top) {
        WatchLink *l = top;
        unsigned n = 0;

        /* Post-order, so each link removed has no children left. */
        for (;;) {
                WatchLink *p;
                bool last;

                while (l->children)
                        l = l->children;
                p = watch_link_parent(l);
                last = l == top;
                link_remove(t, l);
                n++;
                if (last)
                        return n;
                l = p;
        }
}

void watch_table_unsubscribe(WatchTable *t, Subscription *s) {
        if (s->links)
                (void) watch_table_unlink(t, s->links);
        if (s->flags & WATCHD_FLAG_PERSIST)
                t->n_persist--;
        g_hash_table_remove(t->subscriptions, GUINT_TO_POINTER(s->id));
}

void watch_table_watch_gone(WatchTable *t, Watch *w) {
        watch_detach_wd(t, w);
        if (w->n_links == 0)
                watch_free(w);
}
