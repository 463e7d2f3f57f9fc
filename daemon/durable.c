/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * durable - subscriptions that outlive their client and the daemon
 *
 * Each DurableSub has an owner (a manager Client whose delivery transport
 * is its journal: durable_journal.c, a layer below this file) and at most
 * one attachment (a client that resumed it, with a reader of its journal
 * and the transport the layer above gave at the resume). The pump
 * (durable_pump() below) runs after every flush of the manager
 * (ManagerHooks): it places again the subscriptions whose watch ended,
 * retries the journals that could not be written, keeps each user's
 * journals within their cap, and then (durable_replay.c, the layer below
 * this file) sends each attachment what its window allows, a slice at a
 * time, and asks it to confirm as its transport does (signals: the
 * client's own answer to a Ping; a stream: the socket's room, nothing to
 * ask). An attachment's window is its own, apart from the client's live
 * records (delivery.h): a replay neither waits for the live records'
 * confirmations nor holds them back, and the client's live stream keeps
 * flowing. So a replay of a million records costs the daemon its reader's
 * window of the journal (journal_reader.c) and the bus at most
 * max_pending_events_per_client unread records.
 *
 * Credentials: the uid and groups the bus reported at creation are kept in
 * the definition. At each start the groups are narrowed to those the user
 * still has (getgrouplist(3)); a user who no longer exists, or can no
 * longer open the path, has the subscription not watched (an "access" gap
 * in its journal, the state "no-access") until a later start finds access
 * again. The recorded credentials never grow: a group added to the user
 * later is not taken.
 */

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "durable.h"
#include "durable_replay.h"
#include "error.h"
#include "event_bits.h"
#include "log.h"
#include "macro.h"
#include "path.h"

/* While a journal cannot be written, it is tried again this often (the gap goes in once it can). */
#define LOSING_RETRY_USEC (1000u * 1000u)

/* An open in a worker, then maybe a walk, that may outlive what it was for:
 * looked up again when it ends. */
typedef struct WalkToken {
        Durable *d;        /* NULL once d is freed */
        ManagerOpen *open; /* while the open is in a worker */
        char *key;
        bool down_gap;       /* append a daemon-down gap once it is done */
        DurableCreated done; /* a creation's answer; NULL once its caller is answered */
        void *userdata;
        uint32_t walk_id; /* the subscription its walk is of, while it walks */
        LIST_FIELDS(struct WalkToken, tokens);
} WalkToken;

static char *sub_key(uid_t uid, const char *name) {
        char *k;

        if (asprintf(&k, "%u/%s", (unsigned) uid, name) < 0)
                return NULL;
        return k;
}

static const char *state_name(const DurableSub *s) {
        Subscription *sub;

        switch (s->state) {
        case DURABLE_WALKING:
                return "walking";
        case DURABLE_NO_ACCESS:
                return "no-access";
        case DURABLE_OPENING:
                return "opening";
        default:
                sub = s->sub_id ? manager_get_subscription(s->d->m, s->sub_id) : NULL;
                return sub && sub->pending ? "pending" : "watching";
        }
}

static uint64_t cap_of(const Durable *d) {
        const Config *c = manager_get_config(d->m);

        return MIN(c->journal_max_bytes_per_subscription, c->journal_max_bytes_per_user);
}

/* ---------------------------------------------------------------------- */
/* Watching */

/* The recorded groups the user still has: never more than either. */
static int caller_now(const DurableDef *def, Caller *ret, gid_t **ret_gids) {
        _cleanup_free_ gid_t *now = NULL, *keep = NULL;
        struct passwd *pw;
        int n = 64, k = 0;

        errno = 0;
        pw = getpwuid(def->uid);
        if (!pw)
                return errno > 0 ? -errno : -ESRCH; /* the user is gone */
        for (;;) {
                gid_t *g = reallocarray(now, (size_t) n, sizeof(gid_t));
                int want = n;

                if (!g)
                        return -ENOMEM;
                now = g;
                if (getgrouplist(pw->pw_name, pw->pw_gid, now, &want) >= 0) {
                        n = want;
                        break;
                }
                if (want <= n || want > 65536)
                        return -EIO;
                n = want;
        }
        keep = calloc(def->n_gids + 1, sizeof(gid_t));
        if (!keep)
                return -ENOMEM;
        for (size_t i = 0; i < def->n_gids; i++)
                for (int j = 0; j < n; j++)
                        if (def->gids[i] == now[j]) {
                                keep[k++] = def->gids[i];
                                break;
                        }
        *ret = (Caller) {
                .uid = def->uid,
                /* No group left: the overflow gid, which owns nothing. */
                .gid = k > 0 ? keep[0] : 65534,
                .gids = keep,
                .n_gids = (size_t) k,
        };
        *ret_gids = TAKE_PTR(keep);
        return 0;
}

static void on_walk_done(uint32_t id, int r, void *userdata);

/* What follows placing s: the state, and the gap a start appends once watching is whole again. */
static void durable_sub_placed(DurableSub *s, int r, bool down_gap) {
        if (r < 0) {
                s->state = DURABLE_NO_ACCESS;
                s->sub_id = 0;
                log_warning_errno(r,
                                  "Durable subscription %s of '%s' cannot be watched (%m): its journal says so "
                                  "(an access gap); tried again at the next start.",
                                  s->key, s->def.path);
                durable_journal_append_gap(s, JOURNAL_GAP_ACCESS);
                s->d->wake_at = 0; /* an attached client (resumed while it was opening) is sent the gap */
                return;
        }
        s->state = DURABLE_WATCHING;
        if (down_gap)
                durable_journal_append_gap(s, JOURNAL_GAP_DAEMON_DOWN);
        s->d->wake_at = 0; /* an attached client may be caught up now */
}

static void token_free(WalkToken *t) {
        if (t->d)
                LIST_REMOVE(tokens, t->d->tokens, t);
        free(t->key);
        free(t);
}

/* A pending path's look-up in workers is over (manager_when_looked_up()): as a walk's end. */
static void on_looked_up(int r, void *userdata) {
        WalkToken *t = userdata;

        if (r == -ESHUTDOWN) {
                token_free(t); /* at exit */
                return;
        }
        on_walk_done(t->walk_id, r, t);
}

/* What the open gave: placed, or walked from the loop, or its pending path
 * looked up in workers (on_walk_done() then). */
static void on_opened(Client *c, int r, uint32_t id, TreeWalk *walk, void *userdata) {
        WalkToken *t = userdata;
        DurableSub *s;

        t->open = NULL;
        if (r == -ESHUTDOWN) {
                /* At exit: the durable subscriptions went first (and gave their opens up). */
                token_free(t);
                return;
        }
        s = t->d ? g_hash_table_lookup(t->d->subs, t->key) : NULL;
        if (!s || s->opening != t) {
                /* Not reached: sub_free() gives its open up. */
                if (t->done)
                        t->done(-ECANCELED, NULL, 0, t->userdata);
                token_free(t);
                return;
        }
        s->opening = NULL;
        s->sub_id = r >= 0 ? id : 0;
        if (r >= 0 && walk) {
                s->state = DURABLE_WALKING;
                t->walk_id = id;
                tree_walk_set_done(walk, on_walk_done, t);
                return;
        }
        if (r >= 0 && manager_when_looked_up(t->d->m, c, id, on_looked_up, t) > 0) {
                /* A walk of a kind: a creation is answered, and a removal gives it up, alike. */
                s->state = DURABLE_WALKING;
                t->walk_id = id;
                return;
        }
        on_walk_done(s->sub_id, r, t);
}

/*
 * Watches s's path as its owner: the open in a worker, as the owner (a
 * durable subscription on a file system that does not answer holds that
 * worker, not the daemon's start), the rest on the loop when it returns;
 * on the loop itself without workers (unit tests). Return: 0 placed (or
 * pending), 1 opening in a worker or walked from the loop (placed, and
 * token->done called, when that ends), -errno.
 */
static int durable_sub_watch(DurableSub *s, bool down_gap, DurableCreated done, void *userdata) {
        Durable *d = s->d;
        TreeWalk *walk = NULL;
        WalkToken *t;
        uint32_t id;
        int r;

        t = calloc(1, sizeof(WalkToken));
        if (!t)
                return -ENOMEM;
        t->key = strdup(s->key);
        if (!t->key) {
                free(t);
                return -ENOMEM;
        }
        t->d = d;
        t->down_gap = down_gap;
        t->done = done;
        t->userdata = userdata;
        LIST_PREPEND(tokens, d->tokens, t);

        r = manager_add_watch_path_async(d->m, s->owner, s->def.path, s->def.mask, s->def.flags, on_opened, t, &t->open);
        if (r > 0) {
                s->sub_id = 0;
                s->opening = t;
                s->state = DURABLE_OPENING;
                return 1;
        }
        if (r != -EOPNOTSUPP && r != -EAGAIN && r != -ENOMEM) {
                token_free(t);
                return r;
        }
        /* No worker: on the loop. */
        r = manager_add_watch_path(d->m, s->owner, s->def.path, s->def.mask, s->def.flags, &id, &walk);
        if (r < 0 || !walk) {
                token_free(t);
                if (r < 0)
                        return r;
                s->sub_id = id;
                return 0;
        }
        s->sub_id = id;
        s->state = DURABLE_WALKING;
        t->walk_id = id;
        tree_walk_set_done(walk, on_walk_done, t);
        return 1;
}

static void sub_free(DurableSub *s);

static void on_walk_done(uint32_t id, int r, void *userdata) {
        WalkToken *t = userdata;
        Durable *d = t->d;
        DurableSub *s = NULL;
        char journal[JOURNAL_ID_STRING_MAX] = "";
        uint64_t cursor = 0;

        if (d) {
                s = g_hash_table_lookup(d->subs, t->key);
                if (s && s->sub_id != id)
                        s = NULL; /* removed, or watched again since */
        }
        if (!s) {
                if (t->done)
                        t->done(-ECANCELED, NULL, 0, t->userdata);
                goto out;
        }
        if (r >= 0 && !manager_get_subscription(d->m, id))
                r = -ENOENT; /* it ended during the walk */
        if (t->done) {
                /* A creation: all or nothing. */
                if (r < 0) {
                        uid_t uid = s->def.uid;
                        char *name = strdupa(s->def.name);

                        t->done(r, NULL, 0, t->userdata);
                        g_hash_table_remove(d->subs, s->key);
                        (void) durable_store_remove(d->state_dir, uid, name);
                        goto out;
                }
                s->state = DURABLE_WATCHING;
                journal_id_to_string(journal_identity(s->journal), journal);
                cursor = journal_last_id(s->journal);
                t->done(0, journal, cursor, t->userdata);
                goto out;
        }
        durable_sub_placed(s, r, t->down_gap);
out:
        token_free(t);
}

/* Makes s's owner, with caller's credentials, and watches. */
static int sub_start(DurableSub *s, const Caller *caller, bool down_gap, DurableCreated done, void *userdata) {
        Durable *d = s->d;
        _cleanup_free_ char *owner = NULL;
        int r;

        if (asprintf(&owner, "durable:%s", s->key) < 0)
                return -ENOMEM;
        r = manager_new_client(d->m, owner, caller, &s->owner);
        if (r < 0)
                return r;
        delivery_queue_set_transport(&s->owner->queue, &durable_journal_ops, s);
        return durable_sub_watch(s, down_gap, done, userdata);
}

/* ---------------------------------------------------------------------- */
/* The pump: the subscriptions placed again, their journals retried and
 * kept within their caps, then the attachments (durable_replay.c) */

static void enforce_caps(Durable *d) {
        GHashTableIter i;
        gpointer uid;

        g_hash_table_iter_init(&i, d->cap_dirty);
        while (g_hash_table_iter_next(&i, &uid, NULL)) {
                g_autoptr(GPtrArray) js = g_ptr_array_new();
                GHashTableIter si;
                gpointer v;
                int r;

                g_hash_table_iter_init(&si, d->subs);
                while (g_hash_table_iter_next(&si, NULL, &v)) {
                        DurableSub *s = v;

                        if (s->def.uid == GPOINTER_TO_UINT(uid))
                                g_ptr_array_add(js, s->journal);
                }
                r = journal_enforce_cap((Journal *const *) js->pdata, js->len,
                                        manager_get_config(d->m)->journal_max_bytes_per_user);
                if (r < 0)
                        log_warning_errno(
                                r, "Failed to keep the journals of uid %u within max_bytes_per_user, ignoring: %m",
                                GPOINTER_TO_UINT(uid));
        }
        g_hash_table_remove_all(d->cap_dirty);
}

/* The ManagerHooks: after each flush, and when the pump wants a turn. */
static void durable_pump(void *userdata) {
        Durable *d = userdata;
        uint64_t now = now_usec();
        GHashTableIter i;
        gpointer v;

        d->wake_at = UINT64_MAX;
        g_hash_table_iter_init(&i, d->subs);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                DurableSub *s = v;

                if (s->readd) {
                        int r = durable_sub_watch(s, false, NULL, NULL);

                        s->readd = false;
                        if (r <= 0)
                                durable_sub_placed(s, r, false); /* else when its walk ends */
                }
                if (journal_is_losing(s->journal)) {
                        /* Space may be back: the gap goes in now, not with the next event. */
                        durable_journal_flush_logged(s);
                        if (journal_is_losing(s->journal))
                                d->wake_at = MIN(d->wake_at, now + LOSING_RETRY_USEC);
                }
        }
        enforce_caps(d);
        durable_replay_pump(d, now);
}

static uint64_t durable_next_deadline(void *userdata) {
        Durable *d = userdata;

        return d->wake_at;
}

/* ---------------------------------------------------------------------- */
/* Life */

static void sub_free(DurableSub *s) {
        if (!s)
                return;
        if (s->opening) {
                /* Its open is given up: what it gives is closed unused; a creation is told. */
                WalkToken *t = TAKE_PTR(s->opening);

                manager_add_watch_cancel(t->open);
                if (t->done)
                        t->done(-ECANCELED, NULL, 0, t->userdata);
                token_free(t);
        }
        if (s->attach)
                durable_attach_free(s->d, s->attach);
        if (s->owner) {
                delivery_queue_set_transport(&s->owner->queue, NULL, NULL);
                manager_client_gone(s->d->m, s->owner);
        }
        journal_free(s->journal);
        durable_def_done(&s->def);
        free(s->key);
        free(s);
}

static void sub_destroy(gpointer p) {
        sub_free(p);
}

static int sub_new(Durable *d, DurableDef *def, DurableSub **ret) {
        _cleanup_free_ char *dir = NULL, *jdir = NULL;
        DurableSub *s;
        int r;

        s = calloc(1, sizeof(DurableSub));
        if (!s)
                return -ENOMEM;
        s->d = d;
        s->def = *def;
        *def = (DurableDef) {};
        s->key = sub_key(s->def.uid, s->def.name);
        dir = durable_store_dir(d->state_dir, s->def.uid, s->def.name);
        if (!s->key || !dir || asprintf(&jdir, "%s/journal", dir) < 0) {
                sub_free(s);
                return -ENOMEM;
        }
        r = journal_open(jdir, cap_of(d), &s->journal);
        if (r < 0) {
                sub_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

static int load_one(uid_t uid, const char *name, void *userdata) {
        Durable *d = userdata;
        _cleanup_free_ char *error = NULL;
        _cleanup_free_ gid_t *gids = NULL;
        DurableDef def = {};
        DurableSub *s;
        Caller caller;
        int r;

        r = durable_def_load(d->state_dir, uid, name, &def, &error);
        if (r < 0) {
                log_warning_errno(r, "Durable subscription %u/%s not loaded: %s", (unsigned) uid, name, error ?: "%m");
                return 0;
        }
        r = sub_new(d, &def, &s);
        durable_def_done(&def);
        if (r < 0) {
                log_warning_errno(r, "Failed to open the journal of durable subscription %u/%s, not loaded: %m",
                                  (unsigned) uid, name);
                return 0;
        }
        g_hash_table_insert(d->subs, s->key, s);

        r = caller_now(&s->def, &caller, &gids);
        if (r >= 0)
                r = sub_start(s, &caller, /* down_gap= */ true, NULL, NULL);
        if (r < 0)
                durable_sub_placed(s, r, false);
        else if (r == 0)
                durable_sub_placed(s, 0, true);
        log_debug("Durable subscription %s on '%s': %s.", s->key, s->def.path, state_name(s));
        return 0;
}

static int mkdir_p(const char *path) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = '\0';
                        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                                return negative_errno();
                        *s = '/';
                }
        if (mkdir(p, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

int durable_new(Manager *m, const char *state_dir, Durable **ret) {
        Durable *d;
        int r;

        d = calloc(1, sizeof(Durable));
        if (!d)
                return -ENOMEM;
        d->m = m;
        d->wake_at = UINT64_MAX;
        d->subs = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, sub_destroy);
        d->attaches = g_ptr_array_new();
        d->cap_dirty = g_hash_table_new(g_direct_hash, g_direct_equal);
        manager_set_hooks(m, &(ManagerHooks) { .after_flush = durable_pump, .next_deadline = durable_next_deadline }, d);

        if (state_dir) {
                r = mkdir_p(state_dir);
                if (r >= 0 && access(state_dir, W_OK | X_OK) < 0)
                        r = negative_errno();
                if (r < 0)
                        log_warning_errno(r, "State directory '%s' cannot be used (%m): no durable subscriptions.",
                                          state_dir);
                else {
                        d->state_dir = strdup(state_dir);
                        if (!d->state_dir) {
                                durable_free(d);
                                return -ENOMEM;
                        }
                        r = durable_store_foreach(state_dir, load_one, d);
                        if (r < 0)
                                log_warning_errno(r, "Failed to read the durable subscriptions in '%s', ignoring: %m",
                                                  state_dir);
                        log_info("%u durable subscriptions, in '%s'.", g_hash_table_size(d->subs), state_dir);
                }
        }
        *ret = d;
        return 0;
}

Durable *durable_free(Durable *d) {
        if (!d)
                return NULL;
        /* What the owners' queues hold goes to their journals first. */
        manager_flush_all(d->m);
        manager_set_hooks(d->m, NULL, NULL);
        while (d->attaches->len > 0)
                durable_attach_free(d, d->attaches->pdata[0]);
        g_hash_table_destroy(d->subs);
        LIST_FOREACH(tokens, t, d->tokens)
                t->d = NULL; /* their walks end later, with the manager */
        g_ptr_array_unref(d->attaches);
        g_hash_table_destroy(d->cap_dirty);
        free(d->state_dir);
        free(d);
        return NULL;
}

bool durable_enabled(const Durable *d) {
        return d->state_dir;
}

void durable_reload(Durable *d) {
        GHashTableIter i;
        gpointer v;

        g_hash_table_iter_init(&i, d->subs);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                DurableSub *s = v;
                int r = journal_set_max_bytes(s->journal, cap_of(d));

                if (r < 0)
                        log_warning_errno(r, "Failed to apply the new journal cap to %s, ignoring: %m", s->key);
                durable_journal_mark_cap_dirty(d, s->def.uid);
        }
        d->wake_at = 0;
}

/* name as the caller gives it: its own, or "UID/NAME" for root. */
static DurableSub *lookup(Durable *d, uid_t caller, const char *name) {
        _cleanup_free_ char *key = NULL;

        if (caller == 0 && strchr(name, '/'))
                return g_hash_table_lookup(d->subs, name);
        if (!durable_name_valid(name))
                return NULL;
        key = sub_key(caller, name);
        return key ? g_hash_table_lookup(d->subs, key) : NULL;
}

int durable_create(Durable *d, const Caller *caller, const char *name, const char *path_in, uint32_t mask,
                   uint32_t flags, DurableCreated done, void *userdata, char ret_journal[static JOURNAL_ID_STRING_MAX],
                   uint64_t *ret_cursor) {
        _cleanup_free_ char *path = NULL;
        DurableDef def = {};
        DurableSub *s;
        GHashTableIter i;
        gpointer v;
        unsigned n = 0;
        int r;

        if (!d->state_dir)
                return -WATCHD_E_NO_STATE_DIR;
        if (!durable_name_valid(name) || (flags & WATCHD_FLAG_ONESHOT))
                return -EINVAL;
        if (lookup(d, caller->uid, name))
                return -WATCHD_E_DURABLE_EXISTS;
        g_hash_table_iter_init(&i, d->subs);
        while (g_hash_table_iter_next(&i, NULL, &v))
                n += ((DurableSub *) v)->def.uid == caller->uid;
        if (n >= manager_get_config(d->m)->journal_max_subscriptions_per_user)
                return -WATCHD_E_DURABLE_LIMIT;
        path = path_simplify(path_in);
        if (!path)
                return -ENOMEM;

        def = (DurableDef) {
                .name = strdup(name),
                .uid = caller->uid,
                .gid = caller->gid,
                .gids = calloc(caller->n_gids + 1, sizeof(gid_t)),
                .n_gids = caller->n_gids,
                .path = TAKE_PTR(path),
                .mask = mask,
                .flags = flags,
                .created = (uint64_t) time(NULL),
        };
        if (!def.name || !def.gids) {
                durable_def_done(&def);
                return -ENOMEM;
        }
        if (caller->n_gids > 0)
                memcpy(def.gids, caller->gids, caller->n_gids * sizeof(gid_t));

        /* What a failed removal may have left: a new subscription starts with nothing. */
        r = durable_store_remove(d->state_dir, caller->uid, name);
        if (r < 0 && r != -ENOENT)
                log_warning_errno(r, "Failed to clear what was left of durable subscription %u/%s, ignoring: %m",
                                  (unsigned) caller->uid, name);
        r = durable_def_save(d->state_dir, &def);
        if (r < 0) {
                durable_def_done(&def);
                return log_warning_errno(r, "Failed to save durable subscription %u/%s in '%s': %m",
                                         (unsigned) caller->uid, name, d->state_dir);
        }
        r = sub_new(d, &def, &s);
        durable_def_done(&def);
        if (r < 0) {
                (void) durable_store_remove(d->state_dir, caller->uid, name);
                return r;
        }
        g_hash_table_insert(d->subs, s->key, s);

        r = sub_start(s, caller, false, done, userdata);
        if (r < 0) {
                g_hash_table_remove(d->subs, s->key);
                (void) durable_store_remove(d->state_dir, caller->uid, name);
                return r;
        }
        log_info("Durable subscription %s created on '%s' (mask 0x%" PRIx32 ", flags 0x%" PRIx32 ").", s->key,
                 s->def.path, mask, flags);
        if (r > 0)
                return 1;
        s->state = DURABLE_WATCHING;
        journal_id_to_string(journal_identity(s->journal), ret_journal);
        *ret_cursor = journal_last_id(s->journal);
        return 0;
}

unsigned durable_create_progress(Durable *d, DurableCreated done, void *userdata) {
        LIST_FOREACH(tokens, i, d->tokens)
                if (i->done == done && i->userdata == userdata) {
                        DurableSub *s = g_hash_table_lookup(d->subs, i->key);
                        const Subscription *sub;

                        if (!s || s->state != DURABLE_WALKING || s->sub_id != i->walk_id)
                                return 0;
                        sub = manager_get_subscription(d->m, s->sub_id);
                        return sub ? sub->n_links : 0;
                }
        return 0;
}

void durable_create_abandon(Durable *d, DurableCreated done, void *userdata) {
        WalkToken *t = NULL;
        DurableSub *s;
        uid_t uid;
        char *name;

        LIST_FOREACH(tokens, i, d->tokens)
                if (i->done == done && i->userdata == userdata) {
                        t = i;
                        break;
                }
        if (!t)
                return;
        t->done = NULL; /* its caller is answered */
        s = g_hash_table_lookup(d->subs, t->key);
        if (!s || (s->opening != t && !(s->state == DURABLE_WALKING && s->sub_id == t->walk_id)))
                return; /* not reached: a creation ends with its token */
        uid = s->def.uid;
        name = strdupa(s->def.name);
        log_info("Durable subscription %s not watched within %" PRIu32 " ms (add_watch_timeout_ms): its creation "
                 "is answered with Timeout, and it is removed.",
                 s->key, manager_get_config(d->m)->add_watch_timeout_ms);
        /* Its open is given up (what it gives is closed unused), or its walk left to end, discarded. */
        g_hash_table_remove(d->subs, s->key);
        (void) durable_store_remove(d->state_dir, uid, name);
}

int durable_remove(Durable *d, uid_t caller, const char *name) {
        DurableSub *s;
        uid_t uid;
        int r;

        if (!d->state_dir)
                return -WATCHD_E_NO_STATE_DIR;
        s = lookup(d, caller, name);
        if (!s)
                return -WATCHD_E_NO_SUCH_DURABLE;
        if (s->attach)
                durable_attach_stop(d, s->attach, DURABLE_STOPPED_REMOVED);
        uid = s->def.uid;
        name = strdupa(s->def.name);
        log_info("Durable subscription %s removed.", s->key);
        g_hash_table_remove(d->subs, s->key);
        r = durable_store_remove(d->state_dir, uid, name);
        if (r < 0)
                return log_warning_errno(r, "Failed to remove durable subscription %u/%s from '%s': %m", (unsigned) uid,
                                         name, d->state_dir);
        return 0;
}

int durable_resume(Durable *d, Client *c, const char *name, const char *journal, uint64_t cursor, const DurableOps *ops,
                   void *data, char ret_journal[static JOURNAL_ID_STRING_MAX]) {
        JournalReader *reader = NULL;
        JournalId id;
        DurableSub *s;
        Attach *a;
        int r;

        if (!d->state_dir)
                return -WATCHD_E_NO_STATE_DIR;
        if (!durable_name_valid(name))
                return -WATCHD_E_NO_SUCH_DURABLE; /* root resumes its own too: no "UID/NAME" */
        s = lookup(d, c->caller.uid, name);
        if (!s)
                return -WATCHD_E_NO_SUCH_DURABLE;
        if (journal[0] != '\0' && journal_id_from_string(journal, &id) < 0)
                return -EINVAL;

        r = journal_reader_new(s->journal, journal[0] != '\0' ? &id : NULL, cursor, &reader);
        if (r < 0)
                return r;
        if (s->attach) {
                if (s->attach->client != c)
                        durable_attach_stop(d, s->attach, DURABLE_STOPPED_ELSEWHERE);
                else
                        durable_attach_free(d, s->attach);
        }
        a = calloc(1, sizeof(Attach));
        if (!a) {
                journal_reader_free(reader);
                return -ENOMEM;
        }
        *a = (Attach) { .sub = s, .client = c, .reader = reader, .ops = ops, .data = data };
        s->attach = a;
        g_ptr_array_add(d->attaches, a);
        journal_id_to_string(journal_identity(s->journal), ret_journal);
        d->wake_at = 0; /* the pump after this call's flush starts it */
        return 0;
}

void durable_confirmed(Durable *d, Client *c, bool answered) {
        for (guint k = 0; k < d->attaches->len; k++) {
                Attach *a = d->attaches->pdata[k];

                if (a->client != c || !a->confirming)
                        continue;
                a->confirming = false;
                if (answered) {
                        a->read = a->confirm_at;
                        a->read_bytes = a->confirm_bytes;
                }
        }
        /* The flush after this answer's dispatch pumps: what it lets go goes then. */
}

void durable_transport_gone(Durable *d, Client *c, const DurableOps *ops, const DurableOps *instead, const char *reason) {
        for (guint k = 0; k < d->attaches->len;) {
                Attach *a = d->attaches->pdata[k];

                if (a->client == c && a->ops == ops) {
                        a->ops = instead;
                        durable_attach_stop(d, a, reason); /* the last one takes its place */
                } else
                        k++;
        }
}

void durable_client_gone(Durable *d, Client *c) {
        for (guint k = 0; k < d->attaches->len;) {
                Attach *a = d->attaches->pdata[k];

                if (a->client == c)
                        durable_attach_free(d, a);
                else
                        k++;
        }
}

int durable_list(Durable *d, uid_t caller, int (*f)(const DurableInfo *i, void *userdata), void *userdata) {
        GHashTableIter i;
        gpointer v;

        if (!d->state_dir)
                return -WATCHD_E_NO_STATE_DIR;
        g_hash_table_iter_init(&i, d->subs);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                DurableSub *s = v;
                JournalStats st;
                DurableInfo info;
                int r;

                if (s->def.uid != caller && caller != 0)
                        continue;
                journal_stats(s->journal, &st);
                info = (DurableInfo) {
                        .name = s->def.uid == caller ? s->def.name : s->key,
                        .path = s->def.path,
                        .mask = s->def.mask,
                        .flags = s->def.flags,
                        .oldest_cursor = st.oldest_cursor,
                        .last_id = st.last_id,
                        .bytes = st.bytes,
                        .attached = s->attach,
                        .state = state_name(s),
                };
                journal_id_to_string(journal_identity(s->journal), info.journal);
                r = f(&info, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}
