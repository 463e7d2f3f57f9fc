/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * missing_start - the look-up of a new waiter's top, in a worker
 *
 * The look-up of a new waiter (missing_start(), for AddWatch), and of one
 * cut off at its chain's top (missing_restart_all()), runs off the loop
 * too, as the probes do (missing_probe.c): a StartJob opens the prefixes of
 * its path from "/" as its caller, in a worker on its lane, until one may
 * be read; on the loop, the waiter joins (or makes) the chain of that top
 * and its descent is queued as the chain's.
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "fswork.h"
#include "list.h"
#include "macro.h"
#include "missing_internal.h"
#include "path.h"

/* The prefix of path after the one that ends at end: "/" (end 1), "/a", "/a/b"... */
static size_t next_prefix(const char *path, size_t end) {
        if (end == 1)
                return 1 + missing_component_len(path + 1);
        return end + 1 + missing_component_len(path + end + 1);
}

/*
 * Opens the first prefix of path from "/" that the caller (whose
 * credentials are taken) may read: its length in *ret_end. Return: the fd
 * (st), -EACCES (no directory of the path may be read), or -errno.
 */
static int top_open(const char *path, size_t *ret_end, struct stat *st) {
        for (size_t end = 1; path[end] != '\0'; end = next_prefix(path, end)) {
                _cleanup_free_ char *top = strndup(path, end);
                int fd;

                if (!top)
                        return -ENOMEM;
                fd = access_open_at(AT_FDCWD, top, /* only_dir= */ true, /* no_follow= */ false, st);
                if (fd == -ENOENT || fd == -ENOTDIR)
                        break; /* nothing above it could be watched */
                if (fd == -EACCES)
                        continue; /* not readable: the chain starts below it; renames above are not seen */
                if (fd >= 0)
                        *ret_end = end;
                return fd;
        }
        return -EACCES; /* no directory of the path may be read */
}

/*
 * w joins the chain of its top (the first end bytes of its path, open at fd,
 * taken), made if need be: placed at the top, charged, and its descent from
 * there queued (inline_: in m->steps, for missing_probe_run(); else the chain's, kicked).
 * Return: 0, -ESTALE (the chain's top was replaced: its waiters start again,
 * and so must w), or -errno (w is in no chain then).
 */
static int waiter_join(Missing *m, Waiter *w, size_t end, int fd_in, const struct stat *st, bool inline_) {
        _cleanup_close_ int fd = fd_in;
        _cleanup_free_ char *top = strndup(w->s->path, end);
        Subscription *s = w->s;
        Chain *c;
        int r;

        if (!top)
                return -ENOMEM;
        r = missing_chain_get(m, w->caller, top, &c);
        if (r < 0)
                return r;
        if (!c->s->links) {
                WatchLink *l;

                r = watch_table_link_pending(m->table, c->s, fd, st, top, &l);
                if (r < 0) {
                        missing_chain_put(m, c);
                        return r;
                }
        } else if (c->s->links->watch->dev != st->st_dev || c->s->links->watch->ino != st->st_ino) {
                /* The top itself was replaced: every waiter of the chain starts again. */
                g_autoptr(GPtrArray) restart = g_ptr_array_new();

                c->n_waiters++;
                missing_cut(m, c, c->s->links, restart);
                missing_restart_all(m, restart);
                c->n_waiters--;
                missing_chain_put(m, c);
                return -ESTALE;
        }
        r = account_charge(s->account, 1);
        if (r < 0) {
                missing_prune(m, c->s->links);
                missing_chain_put(m, c);
                return r;
        }
        w->chain = c;
        c->n_waiters++;
        w->charged = 1;
        w->rest = path_prefix_len(top) + 1;
        missing_waiter_place(m, w, c->s->links);
        missing_probe_step_push(m, c, c->s->links, TAKE_FD(fd), inline_);
        if (!inline_)
                missing_chain_kick(m, c); /* may place or end w: not touched after */
        return 0;
}

/*
 * Looks w's path up from the top, as its caller, here: the first directory
 * of it that may be read is its chain's top (normally "/"), and w descends
 * from there. Runs with the daemon's credentials (it switches for itself).
 * Return: 0, -ESTALE (the chain's top was replaced: try again), or -errno
 * (w is in no chain then).
 */
int missing_waiter_start(Missing *m, Waiter *w) {
        AccessSaved saved;
        struct stat st;
        size_t end = 0;
        int fd, r;

        r = access_become(w->caller, &saved);
        if (r < 0)
                return r;
        fd = top_open(w->s->path, &end, &st);
        access_restore(&saved);
        if (fd < 0)
                return fd;
        return waiter_join(m, w, end, fd, &st, /* inline_= */ true);
}

/* In a worker, as the waiter's caller. Touches nothing but j. */
static void start_run(void *data) {
        StartJob *j = data;

        j->fd = top_open(j->path, &j->end, &j->st);
}

static void start_free(StartJob *j) {
        hold_unref(j->hold);
        safe_close(j->fd);
        free(j->path);
        free(j);
}

/* On the loop: the waiter (if still followed) joins the chain of the top
 * found, or starts again (its top replaced meanwhile), or is told it fails. */
static void start_done(void *data, int error) {
        StartJob *j = data;
        Missing *m = j->missing;
        Waiter *w = j->w;
        Hold *hold, *previous = NULL, *trigger = NULL;
        Subscription *s;
        const Caller *caller;
        bool answer;
        unsigned rounds;
        int r;

        if (m)
                LIST_REMOVE(starts, m->starts, j);
        if (w)
                w->start = NULL;
        if (!m || !w || error == -ESHUTDOWN) {
                /* No longer followed (its fd closed unused), or at exit: nothing more is asked. */
                start_free(j);
                return;
        }
        /* What it finds goes before the records that waited for it; a job of
         * the chain it joins holds them on (its hold is this one, or takes
         * its clients: the trigger's, as for a record's probe). */
        hold = TAKE_PTR(j->hold);
        if (hold) {
                previous = holds_apply_begin(m->holds, hold);
                trigger = holds_get_trigger(m->holds);
                holds_set_trigger(m->holds, hold);
        }
        r = error < 0 ? error : j->fd;
        if (r >= 0)
                r = waiter_join(m, w, j->end, TAKE_FD(j->fd), &j->st, /* inline_= */ false);
        start_free(j);
        if (r >= 0)
                (void) missing_finish(m, NULL); /* what an inline descent (no worker) found */
        else {
                s = w->s;
                caller = w->caller;
                answer = w->answer;
                rounds = w->rounds + 1;
                missing_waiter_destroy(m, w);
                if (r == -ESTALE && rounds < PROBE_ROUNDS)
                        missing_waiter_restart(m, s, caller, answer, rounds);
                else
                        missing_tell(m, s, s->id, r == -ESTALE ? -ELOOP : r, answer);
        }
        if (hold) {
                holds_set_trigger(m->holds, trigger);
                holds_apply_end(m->holds, previous);
                hold_unref(hold);
        }
}

/* A waiter for s whose top is looked up in a worker. Return: 0, -EAGAIN (no
 * worker could take it: nothing made), -errno. */
int missing_waiter_add_async(Missing *m, Subscription *s, const Caller *caller, bool answer, unsigned rounds) {
        StartJob *j;
        Waiter *w;
        int r;

        assert(s->pending && !s->links);
        w = calloc(1, sizeof(Waiter));
        j = calloc(1, sizeof(StartJob));
        if (!w || !j) {
                free(w);
                free(j);
                return -ENOMEM;
        }
        *j = (StartJob) {
                .missing = m,
                .w = w,
                .path = strdup(s->path),
                .fd = -EBADF,
        };
        if (!j->path) {
                free(w);
                start_free(j);
                return -ENOMEM;
        }
        /* The caller's own lane: a prefix may cross a symlink or a mount point
         * into a file system that does not answer (a FUSE mount of the
         * caller's), which must hold no one else's work. */
        r = fswork_submit(m->fswork, FSWORK_USER_LANE(caller->uid), caller, start_run, start_done, j);
        if (r < 0) {
                free(w);
                start_free(j);
                return r;
        }
        /* Followed again (no AddWatch waits): a PERSIST path whose object
         * left, where an atomic save's new file may be already. What the
         * look-up finds goes before the owner's records read after it, as
         * it did inline; not on a lane that does not answer already. */
        if (!answer && m->holds && s->owner && !fswork_stalled(m->fswork, FSWORK_USER_LANE(caller->uid))) {
                Hold *trigger = holds_get_trigger(m->holds);

                j->hold = trigger ? hold_ref(trigger) : hold_new(m->holds, now_usec());
                if (j->hold) {
                        client_hold(s->owner, j->hold);
                        hold_note_subscription(j->hold, s->id);
                }
        }
        w->s = s;
        w->caller = caller;
        w->fd = -EBADF;
        w->start = j;
        w->answer = answer;
        w->rounds = rounds;
        g_hash_table_insert(m->waiters, s, w);
        LIST_PREPEND(starts, m->starts, j);
        return 0;
}
