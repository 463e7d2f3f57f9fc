/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * remote - directories the kernel cannot watch for everything, polled
 *
 * A polled directory is a RemoteDir, keyed by its subscription and its
 * Watch (a subscription has at most one link on a watch; the pair outlives
 * watch_table_move_link(), which may reallocate the link itself). Its link
 * is found again through the watch's few links when needed. RemoteGroup is
 * the poller's group of a subscription on one device.
 *
 * Everything the poller calls back with runs inside remote_run(): reads as
 * the owner between begin and end, records and errors as the daemon. A
 * record may end its subscription (ONESHOT), which frees the group's
 * directories through remote_link_gone() while the poller is giving out the
 * group's records: the poller allows it (poller.h), and nothing here looks
 * at a directory or group again after delivering.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client.h"
#include "error.h"
#include "event_bits.h"
#include "fstype.h"
#include "log.h"
#include "macro.h"
#include "path.h"
#include "remote.h"
#include "remote_internal.h"

/* System calls per poller_run(): small, so that the time budget is kept to within a few. */
#define OPS_PER_STEP 32u
/* System calls for a directory's first snapshot when it is added (in AddWatch,
 * in a walk's slice): a directory of about a thousand names; a larger one is
 * finished from the loop. */
#define PRIME_OPS 1024u
/* The poller's moves: cookies the kernel (a counter from 1) does not reach in practice. */
#define COOKIE_BASE 0xC0000000u

static guint key_hash(gconstpointer p) {
        const Key *k = p;

        return g_direct_hash(k->a) ^ (guint) (k->b * 0x9E3779B1u) ^ (guint) ((uint64_t) k->b >> 32);
}

static gboolean key_equal(gconstpointer a, gconstpointer b) {
        const Key *x = a, *y = b;

        return x->a == y->a && x->b == y->b;
}

static Key *key_new(const void *a, uintptr_t b) {
        Key *k = g_new(Key, 1);

        *k = (Key) { a, b };
        return k;
}

/* ---- the poller's own reads: told to self_events.h (on the loop), announced (in workers) ---- */

static void remote_own_read_clear(gpointer p) {
        free(((OwnRead *) p)->name);
}

/* The poller opened, listed or closed d's directory: the kernel queued what
 * that makes on its watch, and on its parent's under its name; those
 * records are nobody's (self_events.h). */
static void remote_on_read_op(void *group, void *dir, uint32_t what, void *userdata) {
        Remote *r = userdata;
        RemoteDir *d = dir;
        WatchLink *l = remote_dir_link(d), *parent = l ? watch_link_parent(l) : NULL;
        SelfDir sd = { .dev = d->w->dev, .ino = d->w->ino };
        const char *name;

        if (parent) {
                /* Its parent's directory, unless it is a mount's root (its own parent then). */
                sd.has_parent = parent->watch->dev == d->w->dev;
                sd.pdev = parent->watch->dev;
                sd.pino = parent->watch->ino;
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

        if (l && watch_link_parent(l)) {
                pw = watch_link_parent(l)->watch;
                name = l->name;
        } else if (d->have_parent) {
                pw = watch_table_find_watch(r->table, d->pdev, d->pino);
                name = strrchr(d->s->path, '/');
                name = name && name[1] ? name + 1 : NULL;
        }
        *ret_name = name;
        return pw && pw->wd >= 0 && name ? pw : NULL;
}

static void remote_own_read_pin(OwnRead *o, int delta) {
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
static void remote_own_read_announce(Remote *r, RemoteDir *d) {
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
static void remote_own_read_unannounce(Remote *r, RemoteDir *d) {
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

static int on_begin(void *group, void *dir, void *userdata);
static void on_end(void *group, void *dir, void *userdata);
static int on_submit(void *group, void *dir, PollDir *pd, void *userdata);
static void on_job_end(void *group, void *dir, void *userdata);
static void on_primed(void *group, void *dir, void *userdata);
static void on_record(void *group, const PollRecord *rec, void *userdata);
static void on_error(void *group, void *dir, int error, void *userdata);

static const PollerCallbacks poller_callbacks = {
        .begin = on_begin,
        .end = on_end,
        .submit = on_submit,
        .job_end = on_job_end,
        .primed = on_primed,
        .record = on_record,
        .error = on_error,
        .read_op = remote_on_read_op,
};

static void config_apply(Remote *r, const Config *config) {
        memcpy(r->interval_sec, config->poll_interval_sec, sizeof(r->interval_sec));
        r->interval_sec[FS_LOCAL] = 0;
        if (r->poller)
                poller_set_limits(r->poller, OPS_PER_STEP, config->max_polled_dirs_per_user);
}

int remote_new(WatchTable *table, SelfEvents *self, const Config *config, FsWork *fswork, const RemoteOps *ops,
               void *userdata, Remote **ret) {
        Remote *r;
        int k;

        r = calloc(1, sizeof(Remote));
        if (!r)
                return -ENOMEM;
        *r = (Remote) {
                .table = table,
                .ops = *ops,
                .userdata = userdata,
                .dirs = g_hash_table_new_full(key_hash, key_equal, g_free, NULL),
                .groups = g_hash_table_new_full(key_hash, key_equal, g_free, NULL),
                .by_watch = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) g_ptr_array_unref),
                .subs = g_hash_table_new(g_direct_hash, g_direct_equal),
                .unpolled = g_hash_table_new_full(key_hash, key_equal, g_free, NULL),
                .remote_subs = g_hash_table_new(g_direct_hash, g_direct_equal),
                .self = self,
                .own_reads = g_array_new(false, false, sizeof(OwnRead)),
                .fswork = fswork,
                .priming = g_hash_table_new(g_direct_hash, g_direct_equal),
        };
        g_array_set_clear_func(r->own_reads, remote_own_read_clear);
        k = poller_new(&poller_callbacks, r, config->max_polled_dirs_per_user, &r->poller);
        if (k < 0) {
                remote_free(r);
                return k;
        }
        config_apply(r, config);
        *ret = r;
        return 0;
}

Remote *remote_free(Remote *r) {
        GHashTableIter i;
        gpointer v;

        if (!r)
                return NULL;
        /* The groups own their poller groups and directories. */
        r->poller = poller_free(r->poller);
        g_hash_table_iter_init(&i, r->dirs);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                free(((RemoteDir *) v)->parent_name);
                free(v);
        }
        g_hash_table_iter_init(&i, r->groups);
        while (g_hash_table_iter_next(&i, NULL, &v))
                free(v);
        g_hash_table_destroy(r->dirs);
        g_hash_table_destroy(r->groups);
        g_hash_table_destroy(r->by_watch);
        g_hash_table_destroy(r->subs);
        g_hash_table_destroy(r->unpolled);
        g_hash_table_destroy(r->remote_subs);
        g_hash_table_destroy(r->priming);
        g_array_unref(r->own_reads);
        free(r);
        return NULL;
}

void remote_reload(Remote *r, const Config *config) {
        config_apply(r, config);
}

/* ---- the table's links ---- */

static RemoteDir *dir_get(const Remote *r, const Subscription *s, const Watch *w) {
        Key k = { s, (uintptr_t) w };

        return g_hash_table_lookup(r->dirs, &k);
}

WatchLink *remote_dir_link(const RemoteDir *d) {
        LIST_FOREACH(watch, l, d->w->links)
                if (watch_link_subscription(l) == d->s)
                        return l;
        return NULL;
}

/* Counts directories of s in h (Subscription -> count). */
static void sub_count(GHashTable *h, Subscription *s, int delta) {
        unsigned n = GPOINTER_TO_UINT(g_hash_table_lookup(h, s)) + (unsigned) delta;

        if (n == 0)
                g_hash_table_remove(h, s);
        else
                g_hash_table_insert(h, s, GUINT_TO_POINTER(n));
}

/* The kind of a remote directory of s that is not polled, FS_LOCAL if none. */
static FsKind unpolled_get(const Remote *r, const Subscription *s, const Watch *w) {
        Key k = { s, (uintptr_t) w };

        return (FsKind) GPOINTER_TO_UINT(g_hash_table_lookup(r->unpolled, &k));
}

/* w's directory is on a remote file system of kind, and not polled for s:
 * only ListWatches (REMOTE) and the links below it need to know. */
static int unpolled_add(Remote *r, Subscription *s, Watch *w, FsKind kind) {
        g_hash_table_insert(r->unpolled, key_new(s, (uintptr_t) w), GUINT_TO_POINTER((unsigned) kind));
        sub_count(r->remote_subs, s, +1);
        return 0;
}

static int group_get(Remote *r, Subscription *s, dev_t dev, FsKind kind, RemoteGroup **ret) {
        Key k = { s, (uintptr_t) dev };
        RemoteGroup *g;
        int e;

        g = g_hash_table_lookup(r->groups, &k);
        if (g) {
                *ret = g;
                return 0;
        }
        g = calloc(1, sizeof(RemoteGroup));
        if (!g)
                return -ENOMEM;
        *g = (RemoteGroup) { .remote = r, .s = s, .dev = dev, .kind = kind };
        e = poller_group_new(r->poller, s->owner->caller.uid, (uint64_t) r->interval_sec[kind] * 1000000u, now_usec(),
                             g, &g->pg);
        if (e < 0) {
                free(g);
                return e;
        }
        g_hash_table_insert(r->groups, key_new(s, (uintptr_t) dev), g);
        *ret = g;
        return 0;
}

static void group_put(Remote *r, RemoteGroup *g) {
        Key k = { g->s, (uintptr_t) g->dev };

        if (g->n_dirs > 0)
                return;
        g_hash_table_remove(r->groups, &k);
        poller_group_free(g->pg);
        free(g);
}

void remote_hint_probe(int fd, const struct stat *st, RemoteHint *ret) {
        struct stat pst;
        FsInfo info;

        *ret = (RemoteHint) { .valid = true, .dev = st->st_dev, .ino = st->st_ino, .kind = FS_LOCAL };
        if (fs_detect(fd, NULL, &info) >= 0) {
                ret->kind = info.kind;
                ret->fsid = info.fsid;
                fs_info_done(&info);
        }
        if (S_ISDIR(st->st_mode) && fstatat(fd, "..", &pst, AT_SYMLINK_NOFOLLOW) >= 0 && pst.st_dev == st->st_dev) {
                ret->have_parent = true;
                ret->pdev = pst.st_dev;
                ret->pino = pst.st_ino;
        }
}

void remote_set_hint(Remote *r, const RemoteHint *hint) {
        r->hint = hint ? *hint : (RemoteHint) {};
}

static bool hint_for(const Remote *r, const struct stat *st) {
        return r->hint.valid && r->hint.dev == st->st_dev && r->hint.ino == st->st_ino;
}

/* What l's directory is on: the kind of its parent link's, if on the same
 * device (no system call); else asked of the kernel. Return: the kind, and
 * the parent's group in *ret_parent if that decided. */
static FsKind link_kind(Remote *r, WatchLink *l, int fd, const struct stat *st) {
        WatchLink *parent = watch_link_parent(l);
        FsInfo info;
        FsKind kind;

        if (parent && parent->watch->dev == st->st_dev) {
                Subscription *s = watch_link_subscription(l);
                RemoteDir *p = dir_get(r, s, parent->watch);

                return p ? p->group->kind : unpolled_get(r, s, parent->watch);
        }
        if (hint_for(r, st))
                return r->hint.kind; /* asked in the worker that opened it */
        if (fs_detect(fd, NULL, &info) < 0)
                return FS_LOCAL;
        kind = info.kind;
        if (kind != FS_LOCAL)
                log_debug("'%s' is on %s (f_type 0x%" PRIx64 "%s%s%s%s), [poll] interval %" PRIu32 " s.",
                          parent ? l->name : watch_link_subscription(l)->path, fs_kind_to_string(kind), info.magic,
                          info.have_mount ? ", " : "", info.have_mount ? info.mount.fstype : "",
                          info.have_mount ? " at " : "", info.have_mount ? info.mount.mount_point : "",
                          r->interval_sec[kind]);
        fs_info_done(&info);
        return kind;
}

FsKind remote_link_kind(const Remote *r, const WatchLink *l) {
        Subscription *s = watch_link_subscription(l);
        const RemoteDir *d = dir_get(r, s, l->watch);

        return d ? d->group->kind : unpolled_get(r, s, l->watch);
}

int remote_link_added(Remote *r, WatchLink *l, int fd, const struct stat *st) {
        Subscription *s = watch_link_subscription(l);
        RemoteGroup *g;
        RemoteDir *d;
        GPtrArray *on_watch;
        FsKind kind;
        int e;

        /* Chains of pending paths follow names, not contents. */
        if (s->chain || !s->owner)
                return 0;
        kind = link_kind(r, l, fd, st);
        if (kind == FS_LOCAL || dir_get(r, s, l->watch) || unpolled_get(r, s, l->watch) != FS_LOCAL)
                return 0;
        /* Not polled (a file is not: its directory can be), but the
         * subscription says it is remote all the same. */
        if (!S_ISDIR(st->st_mode) || (s->flags & WATCHD_FLAG_NO_POLL) || r->interval_sec[kind] == 0)
                return unpolled_add(r, s, l->watch, kind);

        e = group_get(r, s, st->st_dev, kind, &g);
        if (e < 0)
                return e;
        d = calloc(1, sizeof(RemoteDir));
        if (!d) {
                group_put(r, g);
                return -ENOMEM;
        }
        *d = (RemoteDir) { .remote = r, .group = g, .s = s, .w = l->watch };
        if (!watch_link_parent(l)) {
                struct stat pst;

                /* Its reads show up on its parent's watch too, if anyone watches that. */
                if (hint_for(r, st)) {
                        d->pdev = r->hint.pdev;
                        d->pino = r->hint.pino;
                        d->have_parent = r->hint.have_parent;
                } else if (fstatat(fd, "..", &pst, AT_SYMLINK_NOFOLLOW) >= 0 && pst.st_dev == st->st_dev) {
                        d->pdev = pst.st_dev;
                        d->pino = pst.st_ino;
                        d->have_parent = true;
                }
        }
        e = poller_dir_add(g->pg, fd, r->linking_found, d, &d->pd);
        if (e < 0) {
                free(d);
                group_put(r, g);
                if (e != -EDQUOT)
                        return e;
                /* An AddWatch (its subscription has no id until its root is
                 * placed) is refused; a directory found later is the
                 * kernel's only, and the owner hears that it misses some. */
                if (!watch_link_parent(l) && s->id == 0)
                        return -WATCHD_E_USER_POLLED;
                log_debug("Directory of subscription %" PRIu32 " not polled: max_polled_dirs_per_user reached.", s->id);
                client_queue_lost(s);
                return unpolled_add(r, s, l->watch, kind);
        }
        g->n_dirs++;
        r->n_dirs++;
        g_hash_table_insert(r->dirs, key_new(s, (uintptr_t) l->watch), d);
        on_watch = g_hash_table_lookup(r->by_watch, l->watch);
        if (!on_watch) {
                on_watch = g_ptr_array_new();
                g_hash_table_insert(r->by_watch, l->watch, on_watch);
        }
        g_ptr_array_add(on_watch, d);
        sub_count(r->subs, s, +1);
        sub_count(r->remote_subs, s, +1);
        /* Its first snapshot now, within bounds: a change made once AddWatch
         * has answered (or the walk has passed) is one the next poll finds.
         * In a worker, the answer waits for it (remote_priming()). */
        e = poller_dir_prime(d->pd, PRIME_OPS);
        if (e > 0) {
                d->priming = true;
                sub_count(r->priming, s, +1);
                e = 0;
        }
        return e;
}

bool remote_priming(const Remote *r, const Subscription *s) {
        return g_hash_table_size(r->priming) > 0 && g_hash_table_contains(r->priming, s);
}

static void dir_primed(Remote *r, RemoteDir *d) {
        if (!d->priming)
                return;
        d->priming = false;
        sub_count(r->priming, d->s, -1);
        if (!g_hash_table_contains(r->priming, d->s) && r->ops.primed)
                r->ops.primed(d->s, r->userdata);
}

void remote_link_gone(Remote *r, WatchLink *l) {
        Subscription *s = watch_link_subscription(l);
        Key k = { s, (uintptr_t) l->watch };
        RemoteDir *d;
        GPtrArray *on_watch;

        if (g_hash_table_size(r->unpolled) > 0 && g_hash_table_remove(r->unpolled, &k)) {
                sub_count(r->remote_subs, s, -1);
                return;
        }
        if (g_hash_table_size(r->dirs) == 0)
                return;
        d = g_hash_table_lookup(r->dirs, &k);
        if (!d)
                return;
        g_hash_table_remove(r->dirs, &k);
        on_watch = g_hash_table_lookup(r->by_watch, d->w);
        if (on_watch) {
                g_ptr_array_remove_fast(on_watch, d);
                if (on_watch->len == 0)
                        g_hash_table_remove(r->by_watch, d->w);
        }
        remote_own_read_unannounce(r, d);
        poller_dir_remove(d->pd);
        dir_primed(r, d);
        sub_count(r->subs, d->s, -1);
        sub_count(r->remote_subs, d->s, -1);
        r->n_dirs--;
        d->group->n_dirs--;
        group_put(r, d->group);
        free(d);
}

static int table_link_added(WatchLink *l, int fd, const struct stat *st, void *userdata) {
        return remote_link_added(userdata, l, fd, st);
}

static void table_link_gone(WatchLink *l, void *userdata) {
        remote_link_gone(userdata, l);
}

const WatchTableOps remote_table_ops = {
        .link_added = table_link_added,
        .link_gone = table_link_gone,
};

bool remote_subscription_polled(const Remote *r, const Subscription *s) {
        return g_hash_table_contains(r->subs, s);
}

bool remote_subscription_remote(const Remote *r, const Subscription *s) {
        return g_hash_table_contains(r->remote_subs, s);
}

void remote_get_stats(const Remote *r, RemoteStats *ret) {
        *ret = (RemoteStats) {
                .polled_dirs = r->n_dirs,
                .poll_syscalls = poll_io_total(poller_io(r->poller)),
        };
}

/* ---- the poller's callbacks ---- */

static int on_begin(void *group, void *dir, void *userdata) {
        Remote *r = userdata;
        RemoteGroup *g = group;

        /* No kernel read comes before the stretch's end: one look covers it. */
        self_events_before(r->self);
        return access_become(&g->s->owner->caller, &r->saved);
}

static void on_end(void *group, void *dir, void *userdata) {
        Remote *r = userdata;

        access_restore(&r->saved);
}

/* A read of dir, in a worker of its file system's lane, as its subscriber. */
static int on_submit(void *group, void *dir, PollDir *pd, void *userdata) {
        Remote *r = userdata;
        RemoteGroup *g = group;
        int e;

        if (!r->fswork)
                return -EOPNOTSUPP;
        e = fswork_submit(r->fswork, g->dev, &g->s->owner->caller, poller_dir_job_run, poller_dir_job_done, pd);
        if (e < 0)
                return e;
        remote_own_read_announce(r, dir);
        return 0;
}

static void on_job_end(void *group, void *dir, void *userdata) {
        remote_own_read_unannounce(userdata, dir);
}

static void on_primed(void *group, void *dir, void *userdata) {
        dir_primed(userdata, dir);
}

void remote_lane_stalled(Remote *r, dev_t dev, bool stalled) {
        GHashTableIter i;
        gpointer v;

        /* Their polls wait for it: the owners hear that changes may be missed
         * (and, when it answers, that it is time to look again). */
        g_hash_table_iter_init(&i, r->groups);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                RemoteGroup *g = v;

                if (g->dev == dev)
                        client_queue_lost(g->s);
        }
}

static void on_error(void *group, void *dir, int error, void *userdata) {
        Remote *r = userdata;
        RemoteDir *d = dir;
        WatchLink *l = remote_dir_link(d);
        Subscription *s = d->s;

        if (error == 0) {
                d->overflowed = false;
                return;
        }
        if (l && !watch_link_parent(l) && (error == -ENOENT || error == -ESTALE)) {
                /* The root itself went away on the server: the kernel cannot say so. */
                log_debug_errno(error, "Polled directory '%s' is gone (%m): ending subscription %" PRIu32 ".", s->path,
                                s->id);
                r->ops.gone(s, r->userdata);
                return;
        }
        if (l && watch_link_parent(l) && (error == -ENOENT || error == -ESTALE))
                return; /* its parent's poll reports it deleted */
        /* Readable no more (permissions changed, the server refuses):
         * changes in it are missed from now on, and the owner hears so. */
        log_debug_errno(error, "Cannot poll a directory of subscription %" PRIu32 " (%m).", s->id);
        if (!d->overflowed) {
                d->overflowed = true;
                client_queue_lost(s);
        }
}

/* Links the directory fd (opened as s's owner) at name under parent, and
 * polls it from its first snapshot on, which reports what it holds.
 * placed: its watch, if the job that opened it placed it (watch_table.h). */
static void link_found_opened(Remote *r, Subscription *s, WatchLink *parent, const char *name, int fd,
                              const struct stat *st, WatchPlaced *placed) {
        WatchLink *child;
        int e;

        e = access_become(&s->owner->caller, &r->saved);
        if (e < 0)
                return;
        r->linking_found = true;
        watch_table_set_placed(r->table, placed);
        e = watch_table_link(r->table, s, parent, fd, st, name, strlen(name), &child);
        watch_table_set_placed(r->table, NULL);
        r->linking_found = false;
        access_restore(&r->saved);
        if (e == -WATCHD_E_CLIENT_WATCHES || e == -WATCHD_E_USER_WATCHES || e == -WATCHD_E_UNPRIVILEGED_WATCHES ||
            e == -ENOSPC || e == -WATCHD_E_PLACED_GONE || (placed && placed->lost))
                client_queue_lost(s); /* a part of the tree it cannot see, or may have missed */
}

/*
 * The open of a directory found created, made in a worker of its file
 * system's lane as the subscriber (as the poller's reads are): a file
 * system that stops answering holds that worker, not the loop. The parent
 * is found again on the loop by its subscription's id and its watch (it may
 * have gone meanwhile); the open's IN_OPEN on the parent's watch (with ISDIR,
 * under name) is announced as the reads' records are (OwnRead), so it
 * reaches no one. What is created in the directory before
 * it is watched is reported by its first snapshot, taken after the watch.
 */
typedef struct FoundJob {
        Remote *remote;
        uint32_t id; /* the subscription */
        dev_t pdev;  /* the parent's watch */
        ino_t pino;
        int parent_wd; /* announced on, -1: nothing announced */
        int pfd;       /* the parent, dup'ed: its PollDir may go meanwhile */
        int fd;        /* the directory, or -errno */
        struct stat st;
        WatchTable *table;  /* not NULL: the job places the directory's watch (watch_table.h) */
        uint32_t mask;      /* with this mask */
        WatchPlaced placed; /* what it placed */
        char name[];
} FoundJob;

static void found_job_run(void *data) {
        FoundJob *j = data;

        j->fd = access_open_at(j->pfd, j->name, /* only_dir= */ true, /* no_follow= */ true, &j->st);
        /* A polled file system may stop answering: placing the watch on the loop would wait. */
        if (j->fd >= 0 && j->table)
                watch_table_place(j->table, j->fd, &j->st, j->mask, &j->placed);
}

static void found_job_done(void *data, int error) {
        _cleanup_free_ FoundJob *j = data;
        Remote *r = j->remote;
        Subscription *s;
        WatchLink *parent = NULL;
        Watch *pw;

        safe_close(j->pfd);
        if (error == -ESHUTDOWN) {
                safe_close(j->fd); /* at exit: the tables may be gone */
                return;
        }
        if (error < 0)
                j->placed.valid = false; /* not run */
        s = watch_table_get_subscription(r->table, j->id);
        pw = s ? watch_table_find_watch(r->table, j->pdev, j->pino) : NULL;
        if (pw)
                LIST_FOREACH(watch, l, pw->links)
                        if (watch_link_subscription(l) == s) {
                                parent = l;
                                break;
                        }
        /* Not if its parent went meanwhile, or the name was linked since. */
        if (error >= 0 && j->fd >= 0 && parent && !watch_link_child(parent, j->name, strlen(j->name)))
                link_found_opened(r, s, parent, j->name, j->fd, &j->st, &j->placed);
        if (j->table) {
                watch_table_placed_done(r->table, &j->placed);
                watch_table_placing(r->table, false);
        }
        /* The PollDir keeps a dup: the close that ends the open comes when its polling ends. */
        safe_close(j->fd);
        if (j->parent_wd >= 0)
                remote_own_read_pin(remote_own_read_get(r, j->parent_wd, j->name, strlen(j->name), false), -1);
}

/* A directory found created by polling in a RECURSIVE tree: opened in a
 * worker (FoundJob), or here without workers, then linked. */
static void link_found(Remote *r, RemoteDir *d, WatchLink *parent, const char *name) {
        Subscription *s = d->s;
        _cleanup_close_ int fd = -1;
        struct stat st;
        FoundJob *j;
        int e;

        if (r->fswork && (j = calloc(1, sizeof(FoundJob) + strlen(name) + 1))) {
                *j = (FoundJob) {
                        .remote = r,
                        .id = s->id,
                        .pdev = parent->watch->dev,
                        .pino = parent->watch->ino,
                        .parent_wd = -1,
                        .pfd = fcntl(poller_dir_fd(d->pd), F_DUPFD_CLOEXEC, 3),
                        .fd = -EBADF,
                        .table = watch_table_can_place(r->table) ? r->table : NULL,
                        .mask = watch_table_need_mask(s->mask, s->flags, /* is_dir= */ true, /* root= */ false),
                };
                strcpy(j->name, name);
                if (j->pfd >= 0 &&
                    fswork_submit(r->fswork, d->group->dev, &s->owner->caller, found_job_run, found_job_done, j) >= 0) {
                        if (j->table)
                                watch_table_placing(r->table, true);
                        if (parent->watch->wd >= 0 && !(r->self && !self_events_enabled(r->self))) {
                                OwnRead *o = remote_own_read_get(r, parent->watch->wd, name, strlen(name), true);

                                if (o) {
                                        remote_own_read_pin(o, +1);
                                        j->parent_wd = parent->watch->wd;
                                }
                        }
                        return;
                }
                safe_close(j->pfd);
                free(j); /* then on the loop, as without workers */
        }
        e = access_become(&s->owner->caller, &r->saved);
        if (e < 0)
                return;
        fd = access_open_at(poller_dir_fd(d->pd), name, /* only_dir= */ true, /* no_follow= */ true, &st);
        access_restore(&r->saved);
        if (fd >= 0)
                link_found_opened(r, s, parent, name, fd, &st, NULL);
}

static void on_record(void *group, const PollRecord *rec, void *userdata) {
        Remote *r = userdata;
        RemoteDir *d = rec->dir, *nd = rec->new_dir;
        Subscription *s = d->s;
        WatchLink *l = remote_dir_link(d), *nl = nd ? remote_dir_link(nd) : NULL;
        char buf[PATH_MAX], nbuf[PATH_MAX];
        const char *dir, *ndir = NULL;
        uint32_t id = s->id, isdir = rec->mask & IN_ISDIR;
        uint64_t now = now_usec();
        bool recursive = s->flags & WATCHD_FLAG_RECURSIVE;

        if (!l || (nd && !nl))
                return;
        dir = watch_link_get_path(l, buf);
        if (nl)
                ndir = watch_link_get_path(nl, nbuf);
        if (!dir || (nl && !ndir)) {
                client_queue_lost(s); /* deeper than PATH_MAX */
                return;
        }

        if (rec->new_name) {
                uint32_t cookie = COOKIE_BASE | (r->cookie++ & ~COOKIE_BASE);
                _cleanup_free_ char *old_path = NULL, *new_path = NULL;
                WatchLink *child;

                if (recursive && isdir) {
                        old_path = path_join(dir, rec->name, strlen(rec->name));
                        new_path = path_join(ndir, rec->new_name, strlen(rec->new_name));
                }
                /* Both halves, one cookie: delivery pairs them into one record. */
                r->ops.deliver(s, IN_MOVED_FROM | isdir | WATCHD_IN_POLLED, cookie, dir, rec->name, strlen(rec->name),
                               now, r->userdata);
                if (!watch_table_get_subscription(r->table, id))
                        return; /* ONESHOT: it ended */
                r->ops.deliver(s, IN_MOVED_TO | isdir | WATCHD_IN_POLLED, cookie, ndir, rec->new_name,
                               strlen(rec->new_name), now, r->userdata);
                if (!watch_table_get_subscription(r->table, id) || !recursive || !isdir)
                        return;
                /* The directory keeps its links (and polling) at its new place;
                 * subscriptions rooted at or below it follow. */
                child = watch_link_child(l, rec->name, strlen(rec->name));
                if (child && !watch_table_move_link(r->table, child, nl, rec->new_name, strlen(rec->new_name)))
                        (void) watch_table_unlink(r->table, child);
                else if (!child)
                        link_found(r, nd, nl, rec->new_name);
                if (old_path && new_path)
                        (void) watch_table_rename_paths(r->table, old_path, new_path);
                return;
        }

        r->ops.deliver(s, rec->mask | WATCHD_IN_POLLED, 0, dir, rec->name, strlen(rec->name), now, r->userdata);
        if (!watch_table_get_subscription(r->table, id) || !recursive || !isdir)
                return;
        if (rec->mask & IN_CREATE)
                link_found(r, d, l, rec->name);
        else if (rec->mask & IN_DELETE) {
                WatchLink *child = watch_link_child(l, rec->name, strlen(rec->name));

                if (child)
                        (void) watch_table_unlink(r->table, child);
        }
}

/* ---- running ---- */

bool remote_run(Remote *r, uint64_t budget_usec) {
        uint64_t start = now_usec(), now = start;

        do {
                int k = poller_run(r->poller, now);

                if (k < 0) {
                        log_warning_errno(k, "Polling failed, trying again later: %m");
                        return false;
                }
                if (k == 0)
                        return false;
                now = now_usec();
        } while (now - start < budget_usec);
        return true;
}

uint64_t remote_next(const Remote *r) {
        return poller_next(r->poller);
}
