/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * missing_open - what a pending path's look-ups open, as its caller
 *
 * The file system's part of a probe (ProbeJob: the walk from the chain's
 * top down to a node, each level checked to be the node's directory, then
 * the next components its waiters want, one openat() each) and of a new
 * waiter's start (StartJob: the prefixes of its path from "/" until one may
 * be read), made, run in a worker (or inline) and freed. What a job found
 * is applied on the loop by missing_follow.c. Split out of missing.c; it
 * calls only missing.c.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "event_bits.h"
#include "list.h"
#include "macro.h"
#include "missing_internal.h"
#include "remote.h"

void missing_job_free(ProbeJob *j) {
        if (!j)
                return;
        for (size_t k = 0; k < j->n_way; k++)
                free(j->way[k]);
        free(j->way);
        free(j->devs);
        free(j->inos);
        for (size_t k = 0; k < j->n_comps; k++) {
                free(j->comps[k].name);
                safe_close(j->comps[k].fd);
        }
        free(j->comps);
        safe_close(j->fd);
        free(j);
}

/*
 * A probe of node: what its waiters want next, each once; with walk, the way
 * down to it from the top too (then fd is -EBADF), else fd (taken) is open on
 * node. NULL: out of memory.
 */
ProbeJob *missing_job_new(Missing *m, Chain *c, WatchLink *node, bool walk, int fd) {
        _cleanup_close_ int dfd = fd;
        ProbeJob *j;
        size_t n = 0, cap = 0;

        j = calloc(1, sizeof(ProbeJob));
        if (!j)
                return NULL;
        j->fd = -EBADF;
        if (walk) {
                size_t depth = 0;

                for (WatchLink *l = node; l; l = watch_link_parent(l))
                        depth++;
                j->way = calloc(depth, sizeof(char *));
                j->devs = calloc(depth, sizeof(dev_t));
                j->inos = calloc(depth, sizeof(ino_t));
                if (!j->way || !j->devs || !j->inos)
                        goto oom;
                j->n_way = depth;
                for (WatchLink *l = node; l; l = watch_link_parent(l)) {
                        depth--;
                        j->way[depth] = strdup(l->name);
                        if (!j->way[depth])
                                goto oom;
                        j->devs[depth] = l->watch->dev;
                        j->inos[depth] = l->watch->ino;
                }
        } else
                j->fd = TAKE_FD(dfd);

        LIST_FOREACH(node, w, missing_waiters_at(m, node)) {
                const char *comp = w->s->path + w->rest;
                size_t cl = missing_component_len(comp);
                bool last = comp[cl] == '\0';
                bool only_dir = !last || (w->s->flags & WATCHD_FLAG_ONLYDIR);
                bool no_follow = last && (w->s->flags & WATCHD_FLAG_DONT_FOLLOW);
                uint32_t need_dir = 0, need_file = 0;
                ProbeComp *seen = NULL;

                if (w->ready || w->error < 0)
                        continue;
                if (last) {
                        need_dir = watch_table_need_mask(w->s->mask, w->s->flags, /* is_dir= */ true, /* root= */ true);
                        need_file = watch_table_need_mask(w->s->mask, w->s->flags, /* is_dir= */ false, /* root= */ true);
                }
                for (size_t k = 0; k < n && !seen; k++)
                        if (missing_comp_same(&j->comps[k], comp, cl, last, only_dir, no_follow))
                                seen = &j->comps[k];
                if (seen) {
                        seen->need_dir |= need_dir;
                        seen->need_file |= need_file;
                        continue;
                }
                if (n == cap) {
                        ProbeComp *more = reallocarray(j->comps, cap ? 2 * cap : 4, sizeof(ProbeComp));

                        if (!more)
                                goto oom;
                        j->comps = more;
                        cap = cap ? 2 * cap : 4;
                }
                j->comps[n] = (ProbeComp) {
                        .name = strndup(comp, cl),
                        .last = last,
                        .only_dir = only_dir,
                        .no_follow = no_follow,
                        .fd = -EBADF,
                        .need_dir = need_dir,
                        .need_file = need_file,
                };
                j->n_comps = ++n;
                if (!j->comps[n - 1].name)
                        goto oom;
        }
        c->n_waiters++;
        j->chain = c;
        watch_link_hold(node);
        j->node = node;
        j->gen = c->gen;
        return j;
oom:
        missing_job_free(j);
        return NULL;
}

/*
 * The file system's part, as the chain's caller (in a worker, or inline with
 * the credentials taken): the walk from the top, each level checked, then one
 * openat() for each component wanted. Touches nothing but j.
 */
void missing_job_run(void *data) {
        ProbeJob *j = data;
        struct stat st;

        for (size_t k = 0; k < j->n_way; k++) {
                int nfd = access_open_at(k == 0 ? AT_FDCWD : j->fd, j->way[k], /* only_dir= */ true,
                                         /* no_follow= */ false, &st);

                if (nfd < 0 || st.st_dev != j->devs[k] || st.st_ino != j->inos[k]) {
                        safe_close(nfd);
                        return; /* the components are not looked at */
                }
                safe_close(j->fd);
                j->fd = nfd;
                j->reached = k + 1;
        }
        for (size_t k = 0; k < j->n_comps; k++) {
                ProbeComp *pc = &j->comps[k];

                pc->fd = access_open_at(j->fd, pc->name, pc->only_dir, pc->no_follow, &pc->st);
                if (pc->fd < 0 || (!pc->last && !j->table))
                        continue;
                /* What placing it asks of its file system (fstatfs...): here, not on the loop. */
                remote_hint_probe(pc->fd, &pc->st, &pc->hint);
                /* And its watch, where the loop could wait for the file system to
                 * place it (watch_table.h, WatchPlaced): a link of the chain, or
                 * the path itself for its waiters' root links. */
                if (j->table && pc->hint.valid && pc->hint.kind != FS_LOCAL)
                        watch_table_place(j->table, pc->fd, &pc->st,
                                          !pc->last                       ? WATCH_PENDING_BITS :
                                                  S_ISDIR(pc->st.st_mode) ? pc->need_dir :
                                                                            pc->need_file,
                                          &pc->placed);
        }
}

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
int missing_top_open(const char *path, size_t *ret_end, struct stat *st) {
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

/* In a worker, as the waiter's caller. Touches nothing but j. */
void missing_start_run(void *data) {
        StartJob *j = data;

        j->fd = missing_top_open(j->path, &j->end, &j->st);
}

void missing_start_free(StartJob *j) {
        hold_unref(j->hold);
        safe_close(j->fd);
        free(j->path);
        free(j);
}
