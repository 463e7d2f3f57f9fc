/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tree - following the directory tree of a RECURSIVE subscription
 *
 * A walk is a stack of frames, one per directory on the path from where it
 * started to where it is: the directory's link (held, watch_link_hold(), so
 * a link unlinked meanwhile is seen dead instead of freed), an fd open on it,
 * and the names of its subdirectories, read once right after its watch was
 * placed. A step takes the next name of the deepest frame, opens it with
 * openat(frame fd, name, O_NOFOLLOW) as the owner, links it, reads it, and
 * pushes it if it has subdirectories. So a directory costs one open, one
 * fstat, one inotify_add_watch (on the syscall backend, through the
 * directory as working directory: backend_batch()), its getdents and one
 * close; the names of a
 * tree are held only while their parent is on the stack, and the fds in use
 * are as many as the tree is deep.
 *
 * A slice of a walk runs with the owner's filesystem credentials
 * (access_become), so the kernel checks every open, and the read permission
 * inotify_add_watch wants, as the owner.
 *
 * Each open, getdents64 and close of a directory read is told to
 * self_events.h (before and after), so that the records the kernel queues
 * for them reach no one: a frame knows its directory as the kernel reports
 * it (SelfDir: its inode, its parent's, its name), which its children take
 * as their parent.
 *
 * This file is the ground floor of the tree files (tree_internal.h): the
 * tree's state, the names scans reported (and the frames' side of the
 * names the kernel reported, Tree.unread), a walk's frames, its slices on
 * the loop and its end. Where walks start is tree_open.c; a tree is made
 * and freed in tree_life.c.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "access.h"
#include "client.h"
#include "event_bits.h"
#include "fswork.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "path.h"
#include "tree.h"
#include "tree_internal.h"

bool tree_may_stop(const Tree *t, const WatchLink *l) {
        return l && t->ops.may_stop && t->ops.may_stop(l, t->userdata);
}

bool tree_has_walks(const Tree *t) {
        return t->walks != NULL;
}

/* Part of s's tree is not followed: never silently. */
void tree_overflow(Tree *t, Subscription *s) {
        client_queue_lost(s);
}

static char *scanned_key(uint32_t id, const char *dir, const char *name, size_t name_len) {
        return g_strdup_printf("%" PRIu32 ":%.*s/%.*s", id, (int) path_prefix_len(dir), dir, (int) name_len, name);
}

void tree_scanned_add(Tree *t, uint32_t id, const char *dir, const char *name, size_t name_len) {
        if (!t->scanned)
                t->scanned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_hash_table_add(t->scanned, scanned_key(id, dir, name, name_len));
}

bool tree_scanned_check(Tree *t, const Subscription *s, const char *dir, uint32_t mask, const char *name,
                        size_t name_len) {
        g_autofree char *key = NULL;

        if (!name || !(mask & (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM)) || !t->scanned ||
            g_hash_table_size(t->scanned) == 0)
                return false;
        key = scanned_key(s->id, dir, name, name_len);
        /* Gone again: a later IN_CREATE of the same name is a new object. */
        return g_hash_table_remove(t->scanned, key) && (mask & (IN_CREATE | IN_MOVED_TO));
}

/* ---- the frames' side of Tree.unread (tree_unread.h) ---- */

/* link's key in Tree.unread, noting from now on (a reference), or NULL
 * (no memory, too long a path: then nothing is noted for it). */
char *tree_unread_ref_link(Tree *t, uint32_t id, WatchLink *link) {
        char pathbuf[PATH_MAX];
        const char *path = watch_link_get_path(link, pathbuf);

        if (!path)
                return NULL;
        return tree_unread_ref(&t->unread, id, path);
}

/*
 * f, just linked by a reporting walk's job, is read by a later job: what
 * the kernel reports created in it meanwhile (its watch is placed) is read
 * from the kernel queue before that job's read is reported, so it is noted
 * (tree_unread_note()) and not reported by the scan again. Without a key
 * (no memory, too long a path) a name may be reported twice, never lost.
 */
void tree_unread_add(Tree *t, uint32_t id, Frame *f) {
        f->unread = tree_unread_ref_link(t, id, f->link);
        f->unread_since = t->unread.seq;
}

void tree_unread_note(Tree *t, const Subscription *s, const char *dir, uint32_t mask, const char *name, size_t name_len) {
        /* Every name the kernel told of since the link: its records tell its
         * story. A name that was there before and went (IN_DELETE, IN_MOVED_FROM)
         * too: the job may have read it before it went, and its IN_CREATE,
         * reported after the kernel's record, would bring it back. */
        if (tree_unread_empty(&t->unread) || !name || !(s->flags & WATCHD_FLAG_RECURSIVE) ||
            !(mask & (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM)))
                return;
        tree_unread_note_name(&t->unread, s->id, dir, name, name_len);
}

bool tree_unread_noted(Tree *t, const Frame *f, const char *name) {
        return tree_unread_noted_since(&t->unread, f->unread, f->unread_since, name);
}

void tree_unread_drop(Tree *t, Frame *f) {
        tree_unread_unref(&t->unread, &f->unread);
        tree_unread_unref(&t->unread, &f->told);
}

int tree_dirent_kind(int dfd, const struct dirent64 *de, size_t name_len) {
        struct stat st;

        if (de->d_name[0] == '.' && (name_len == 1 || (name_len == 2 && de->d_name[1] == '.')))
                return -1;
        if (de->d_type != DT_UNKNOWN)
                return de->d_type == DT_DIR;
        return fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode);
}

/* Closes fd, open for reading on the directory d: the kernel's records of
 * that close are the daemon's own. */
void tree_dir_close(Tree *t, int fd, const SelfDir *d) {
        self_events_before(t->self);
        safe_close(fd);
        self_events_did(t->self, IN_CLOSE_NOWRITE, d);
}

void tree_frame_done(Tree *t, Frame *f) {
        tree_unread_drop(t, f);
        free(f->entries);
        if (f->link)
                watch_link_release(f->link);
        if (f->closed)
                ;
        else if (f->quiet)
                safe_close(f->fd);
        else
                tree_dir_close(t, f->fd, &f->dir);
        free(f->name);
        free(f->names);
}

/*
 * Reads the directory open at fd (l's; d says where the kernel reports
 * what is done to it): reports its entries if the walk synthesizes (but
 * those the kernel reported since skip, a frame of it, was linked), and
 * pushes a frame with its subdirectories (taking fd), or closes fd if it has
 * none. Runs as the owner.
 */
int tree_frame_push(TreeWalk *w, Subscription *s, WatchLink *l, int fd, const SelfDir *d, size_t path_len,
                    const Frame *skip) {
        Tree *t = w->tree;
        char pathbuf[PATH_MAX];
        const char *path = NULL;
        g_autoptr(GByteArray) names = NULL; /* "a\0b\0", made at the first subdirectory */
        char *name = NULL;
        size_t len;
        bool report = w->synthesize && (s->mask & IN_CREATE);

        if (report) {
                path = watch_link_get_path(l, pathbuf);
                if (!path)
                        report = false;
        }
        for (;;) {
                ssize_t n;

                self_events_before(t->self);
                n = getdents64(fd, t->dents_buf, TREE_DENTS_BUF);
                if (n < 0) {
                        int r = negative_errno();

                        tree_dir_close(t, fd, d);
                        /* Gone while being read: its deletion is reported by its parent. */
                        return r == -ENOENT ? 0 : r;
                }
                self_events_did(t->self, IN_ACCESS, d);
                if (n == 0)
                        break;
                for (ssize_t off = 0; off < n;) {
                        struct dirent64 *de = (struct dirent64 *) (t->dents_buf + off);
                        size_t nl = strlen(de->d_name);
                        int kind = tree_dirent_kind(fd, de, nl);
                        bool is_dir = kind > 0;

                        off += de->d_reclen;
                        if (kind < 0)
                                continue;
                        if (report && !(skip && tree_unread_noted(t, skip, de->d_name))) {
                                client_queue_event(s, IN_CREATE | (is_dir ? IN_ISDIR : 0), 0, path, de->d_name, nl,
                                                   w->now);
                                tree_scanned_add(t, s->id, path, de->d_name, nl);
                        }
                        if (!is_dir || w->one_level)
                                continue;
                        if (!names)
                                names = g_byte_array_new();
                        g_byte_array_append(names, (const guint8 *) de->d_name, (guint) nl + 1);
                }
        }
        if (!names) {
                tree_dir_close(t, fd, d);
                return 0;
        }
        if (d->name_len > 0) {
                name = strndup(d->name, d->name_len);
                if (!name) {
                        tree_dir_close(t, fd, d);
                        return -ENOMEM;
                }
        }
        watch_link_hold(l);
        g_array_append_val(w->frames,
                           ((Frame) {
                                   .link = l,
                                   .fd = fd,
                                   .dir = *d,
                                   .name = name,
                                   .names = (char *) g_byte_array_steal(names, &len),
                                   .len = len,
                                   .path_len = path_len,
                                   .read = true,
                           }));
        g_array_index(w->frames, Frame, w->frames->len - 1).dir.name = name;
        return 0;
}

void tree_frame_pop(TreeWalk *w) {
        tree_frame_done(w->tree, &g_array_index(w->frames, Frame, w->frames->len - 1));
        g_array_set_size(w->frames, w->frames->len - 1);
}

/*
 * One directory: the next name of the deepest frame. Runs as the owner.
 * Return: 0, or an error that stops the walk.
 */
static int step(TreeWalk *w, Subscription *s) {
        Frame *f = &g_array_index(w->frames, Frame, w->frames->len - 1);
        Tree *t = w->tree;
        const char *name;
        WatchLink *l;
        struct stat st;
        SelfDir d;
        size_t nl;
        int fd, r;

        if ((f->read && f->pos >= f->len) || f->link->dead) {
                tree_frame_pop(w); /* done, or left the tree meanwhile */
                return 0;
        }
        if (!f->read) {
                /* Linked by a job, not read: the walk went on from the loop
                 * (no worker could take it). Read here, as a step does. */
                Frame g = *f;

                g_array_set_size(w->frames, w->frames->len - 1);
                r = tree_frame_push(w, s, g.link, g.fd, &g.dir, g.path_len, &g);
                tree_unread_drop(t, &g);
                watch_link_release(g.link);
                free(g.name);
                return r;
        }
        name = f->names + f->pos;
        nl = strlen(name);
        f->pos += nl + 1;

        if (f->path_len + 1 + nl >= PATH_MAX) {
                tree_overflow(w->tree, s); /* a part of the tree it cannot see */
                return 0;
        }
        /* One name from a listing, O_NOFOLLOW: no link of any kind is
         * followed, so not a magic one either (/proc/PID/cwd, access.h). */
        self_events_before(t->self);
        fd = openat(f->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                r = negative_errno();
                if (r == -EMFILE || r == -ENFILE || r == -ENOMEM)
                        return r;
                return 0; /* gone already, replaced, or not the owner's to read */
        }
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                safe_close(fd);
                return r;
        }
        /* Reported to its parent's watch under this name; a mount's root is its own parent. */
        d = (SelfDir) {
                .dev = st.st_dev,
                .ino = st.st_ino,
                .has_parent = st.st_dev == f->dir.dev,
                .pdev = f->dir.dev,
                .pino = f->dir.ino,
                .name = name,
                .name_len = nl,
        };
        /* Before linking: the watches there were when it was opened. */
        self_events_did(t->self, IN_OPEN, &d);
        r = watch_table_link(t->table, s, f->link, fd, &st, name, nl, &l);
        if (r == -EEXIST && w->rescan) {
                /* Linked already at this very place (this name, this directory; a
                 * link of a directory deleted unseen may hold the name too): what
                 * is below it may not be. */
                LIST_FOREACH(sib, c, f->link->children)
                        if (strcmp(c->name, name) == 0 && c->watch->dev == st.st_dev && c->watch->ino == st.st_ino)
                                return tree_frame_push(w, s, c, fd, &d, f->path_len + 1 + nl, NULL);
        }
        if (r < 0) {
                tree_dir_close(t, fd, &d);
                /* -EEXIST: seen already (a loop, or linked by an event's walk first). */
                return r == -EEXIST ? 0 : r;
        }
        return tree_frame_push(w, s, l, fd, &d, f->path_len + 1 + nl, NULL);
}

void tree_walk_free(TreeWalk *w) {
        while (w->frames->len > 0)
                tree_frame_pop(w);
        g_array_unref(w->frames);
        hold_unref(w->hold);
        free(w);
}

/* Runs w until it is done or until deadline. Return: whether it is done. */
bool tree_walk_run(TreeWalk *w, uint64_t deadline) {
        Tree *t = w->tree;
        Subscription *s = watch_table_get_subscription(t->table, w->id);
        AccessSaved saved;
        unsigned n = 0;
        int r;

        if (!s || w->error < 0)
                return true; /* tree_walk_end() lets go of its frames */
        r = access_become(&s->owner->caller, &saved);
        if (r < 0) {
                w->error = r;
                return true;
        }
        backend_batch(t->backend, true);
        while (w->frames->len > 0) {
                r = step(w, s);
                if (r < 0) {
                        w->error = r;
                        break;
                }
                if (++n % STEPS_PER_CLOCK == 0 && now_usec() >= deadline)
                        break;
        }
        backend_batch(t->backend, false);
        access_restore(&saved);
        return w->frames->len == 0 || w->error < 0;
}

/* A walk that ended: its subscription hears how. */
int tree_walk_end(TreeWalk *w) {
        Tree *t = w->tree;
        Subscription *s = watch_table_get_subscription(t->table, w->id);
        bool initial = w->initial, worked = w->worked;
        int r = w->error;

        while (w->frames->len > 0)
                tree_frame_pop(w);
        if (r < 0 && s) {
                if (w->initial)
                        /* The whole tree, or nothing: a limit met half-way undoes it. */
                        t->ops.end(s, t->userdata);
                else {
                        /* Part of the tree is not watched: never silently. */
                        log_info_errno(r, "Subscription %" PRIu32 " cannot follow its tree: %m; it gets Overflow.",
                                       w->id);
                        tree_overflow(t, s);
                }
        }
        if (w->done)
                w->done(w->id, r, w->userdata);
        tree_walk_free(w);
        /* A walk in jobs allocates in bulk (the names a job read, its
         * children, its buffer; up to WALK_JOBS jobs at once) and has freed
         * it all by here, in pieces malloc keeps: given back to the system
         * once no walk is left (W3: about 0.5 MB at 10,001 directories). */
        if (worked && !t->walks && !t->working)
                malloc_trim(0);
        return initial ? r : 0;
}

TreeWalk *tree_walk_new(Tree *t, Subscription *s, bool synthesize, uint64_t now) {
        TreeWalk *w = calloc(1, sizeof(TreeWalk));

        if (!w)
                return NULL;
        w->tree = t;
        w->id = s->id;
        w->synthesize = synthesize;
        w->now = now;
        w->frames = g_array_new(FALSE, FALSE, sizeof(Frame));
        return w;
}

void tree_walk_set_done(TreeWalk *w, TreeWalkDone done, void *userdata) {
        w->done = done;
        w->userdata = userdata;
}

WatchLink *tree_find(Subscription *s, const char *path) {
        const char *p = path_startswith(path, s->path);
        WatchLink *l = s->links;

        if (!p || !l || !watch_link_is_root(l))
                return NULL;
        while (l && *p) {
                size_t n = strcspn(p, "/");

                l = watch_link_child(l, p, n);
                p += n + (p[n] == '/');
        }
        return l;
}

bool tree_walks_run(Tree *t, uint64_t budget_usec) {
        /* One walk per slice, round robin: one client's huge tree does not
         * hold back another's small one. */
        TreeWalk *w = LIST_POP(walks, t->walks);

        if (!w)
                return false;
        if (tree_walk_run(w, now_usec() + budget_usec))
                (void) tree_walk_end(w);
        else
                LIST_APPEND(walks, t->walks, w);
        return t->walks != NULL;
}
