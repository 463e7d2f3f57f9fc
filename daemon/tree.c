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
#include "tree_internal.h"

static void tree_walks_free(Tree *t);
static void tree_retries_free(Tree *t);

int tree_new(WatchTable *table, Backend *backend, SelfEvents *self, const TreeOps *ops, void *userdata, Tree **ret) {
        Tree *t = calloc(1, sizeof(Tree));

        if (!t)
                return -ENOMEM;
        *t = (Tree) {
                .table = table,
                .backend = backend,
                .self = self,
                .ops = *ops,
                .userdata = userdata,
                .dents_buf = malloc(TREE_DENTS_BUF),
        };
        if (!t->dents_buf) {
                free(t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

Tree *tree_free(Tree *t) {
        if (!t)
                return NULL;
        /* Walks, moves and retries hold links: they go before the table. */
        tree_moves_end(t);
        tree_retries_free(t);
        tree_opens_free(t);
        tree_walks_free(t);
        if (t->moves)
                g_array_unref(t->moves);
        if (t->scanned)
                g_hash_table_destroy(t->scanned);
        if (t->unread)
                g_hash_table_destroy(t->unread);
        free(t->dents_buf);
        free(t);
        return NULL;
}

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

bool tree_waits_read_empty(const Tree *t) {
        return (t->scanned && g_hash_table_size(t->scanned) > 0) || (t->moves && t->moves->len > 0) ||
                (t->retries && t->retries->len > 0);
}

void tree_queue_read_empty(Tree *t) {
        /* Everything queued before any scan so far has been read. */
        if (t->scanned)
                g_hash_table_remove_all(t->scanned);
        /* A rename's second half may not be queued yet: the kernel queues
         * IN_MOVED_FROM and IN_MOVED_TO one after the other, and a read can
         * come between them. Ended as if it left the tree, a directory
         * renamed within it would be walked again at its new name, without
         * reporting what was made in it meanwhile. So it waits, for its
         * IN_MOVED_TO, any other record, or the grace. */
        if (t->moves && t->moves->len > 0) {
                if (t->moves_until == 0)
                        t->moves_until = now_usec() + TREE_MOVE_GRACE_USEC;
                return;
        }
        /* Every rename is read: their new parents' paths are right now. */
        tree_retries_run(t);
}

uint64_t tree_next_deadline(const Tree *t) {
        return t->moves && t->moves->len > 0 && t->moves_until > 0 ? t->moves_until : UINT64_MAX;
}

void tree_expire(Tree *t, uint64_t now_usec) {
        if (tree_next_deadline(t) > now_usec)
                return;
        log_debug("A directory moved out of its place had no IN_MOVED_TO within %u ms: it left the tree.",
                  TREE_MOVE_GRACE_USEC / 1000u);
        tree_moves_end(t);
        tree_retries_run(t);
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
static int frame_push(TreeWalk *w, Subscription *s, WatchLink *l, int fd, const SelfDir *d, size_t path_len,
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
                r = frame_push(w, s, g.link, g.fd, &g.dir, g.path_len, &g);
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
                                return frame_push(w, s, c, fd, &d, f->path_len + 1 + nl, NULL);
        }
        if (r < 0) {
                tree_dir_close(t, fd, &d);
                /* -EEXIST: seen already (a loop, or linked by an event's walk first). */
                return r == -EEXIST ? 0 : r;
        }
        return frame_push(w, s, l, fd, &d, f->path_len + 1 + nl, NULL);
}

static void walk_free(TreeWalk *w) {
        while (w->frames->len > 0)
                tree_frame_pop(w);
        g_array_unref(w->frames);
        hold_unref(w->hold);
        free(w);
}

/* Runs w until it is done or until deadline. Return: whether it is done. */
static bool walk_run(TreeWalk *w, uint64_t deadline) {
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
        walk_free(w);
        /* A walk in jobs allocates in bulk (the names a job read, its
         * children, its buffer; up to WALK_JOBS jobs at once) and has freed
         * it all by here, in pieces malloc keeps: given back to the system
         * once no walk is left (W3: about 0.5 MB at 10,001 directories). */
        if (worked && !t->walks && !t->working)
                malloc_trim(0);
        return initial ? r : 0;
}

static TreeWalk *walk_new(Tree *t, Subscription *s, bool synthesize, uint64_t now) {
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

/* Runs w's first slice, or hands w to workers (tree_walk_start_in_worker());
 * what a reporting walk leaves after its first slice goes on in workers
 * (tree_walk_go_on_in_worker()), or from the loop (manager's list). */
static int walk_start(TreeWalk *w, TreeWalk **ret) {
        Tree *t = w->tree;
        Subscription *s = watch_table_get_subscription(t->table, w->id);

        if (s && tree_walk_start_in_worker(w, s) > 0) {
                if (ret)
                        *ret = w;
                return 0;
        }

        /* Here its first slice reports in step with the records (under the
         * hold applied by the caller, if any): the hold is not needed after. */
        w->hold = hold_unref(w->hold);
        if (walk_run(w, now_usec() + FIRST_SLICE_USEC)) {
                if (ret)
                        *ret = NULL;
                return tree_walk_end(w);
        }
        if (ret)
                *ret = w;
        if (s && tree_walk_go_on_in_worker(w, s) > 0)
                return 0;
        LIST_APPEND(walks, t->walks, w);
        return 0;
}

/* A reporting walk w of s reads in workers (off_loop): hold, the hold
 * applied now (not a reference), holds its owner's records from now on,
 * as tree_add_opened()'s walk holds them (tree_jobs.c), so that what it
 * reports goes before them. Without one (the probe that found the path outlasted its hold, or
 * its lane was stalled: its owner's records went on), s is told: what the
 * scan reports comes after some of them. Without workers or holds, w stays
 * on the loop for its first slice. */
static void hold_off_loop(Tree *t, Subscription *s, Hold *hold, TreeWalk *w) {
        if (!t->fswork || !t->holds || !s->owner)
                return;
        if (hold && !hold_over(hold)) {
                w->hold = hold_ref(hold);
                w->hold_until = now_usec() + WALK_HOLD_USEC;
                client_hold(s->owner, hold);
                hold_note_subscription(hold, s->id); /* past its time, s gets Overflow */
        } else {
                log_debug("Subscription %" PRIu32 " scans '%s' after records that came later; it gets Overflow.", s->id,
                          s->path);
                tree_overflow(t, s);
        }
        w->off_loop = true;
}

static int walk_below(Tree *t, Subscription *s, int fd, bool all_or_nothing, bool synthesize, bool one_level,
                      bool rescan, uint64_t now_usec, bool off_loop, Hold *hold, TreeWalk **ret) {
        TreeWalk *w;
        AccessSaved saved;
        int dfd, r;

        w = walk_new(t, s, synthesize, now_usec);
        if (!w)
                return -ENOMEM;
        w->initial = all_or_nothing;
        w->one_level = one_level;
        w->rescan = rescan;
        if (synthesize && off_loop)
                hold_off_loop(t, s, hold, w);
        if (tree_walk_below_in_worker(w, s, fd) > 0) {
                if (ret)
                        *ret = w;
                return 0;
        }

        /* The root is read through an fd of our own: fd may be O_PATH, or the
         * client's (whose offset is not ours to move). */
        r = access_become(&s->owner->caller, &saved);
        if (r >= 0) {
                self_events_before(t->self);
                dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
                if (dfd < 0)
                        r = negative_errno();
                else {
                        SelfDir d;

                        self_events_root(t->self, &d, dfd, s->links->watch->dev, s->links->watch->ino, s->path);
                        self_events_did(t->self, IN_OPEN, &d);
                        r = frame_push(w, s, s->links, dfd, &d, strlen(s->path), NULL);
                }
                access_restore(&saved);
        }
        if (r < 0) {
                walk_free(w);
                if (ret)
                        *ret = NULL;
                return r;
        }
        return walk_start(w, ret);
}

int tree_walk_below(Tree *t, Subscription *s, int fd, bool all_or_nothing, TreeWalk **ret) {
        return walk_below(t, s, fd, all_or_nothing, /* synthesize= */ false, /* one_level= */ false,
                          /* rescan= */ false, 0, /* off_loop= */ false, NULL, ret);
}

/* After an overflow, s's root open at fd (as its owner, by its path): walked again. */
void tree_rescan_opened(Tree *t, Subscription *s, int fd, const struct stat *st) {
        int r;

        if (fd < 0 || st->st_dev != s->links->watch->dev || st->st_ino != s->links->watch->ino)
                return; /* its root moved or went: its own events (still queued) say so */
        r = walk_below(t, s, fd, /* all_or_nothing= */ false, /* synthesize= */ false, /* one_level= */ false,
                       /* rescan= */ true, 0, /* off_loop= */ false, NULL, NULL);
        if (r < 0)
                log_info_errno(r, "Subscription %" PRIu32 " cannot walk its tree again after an overflow: %m.", s->id);
}

void tree_rescan(Tree *t, Subscription *s) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (!(s->flags & WATCHD_FLAG_RECURSIVE) || s->pending || !s->links || s->fanotify)
                return;
        if (tree_open_submit(t, s, s->links, NULL, /* synthesize= */ false, /* retry= */ false, 0, NULL) >= 0)
                return;
        fd = access_open_as(&s->owner->caller, s->path, /* only_dir= */ true, /* no_follow= */ false, &st);
        tree_rescan_opened(t, s, fd, &st);
}

void tree_appeared(Tree *t, Subscription *s, int fd, bool report, uint64_t now_usec) {
        bool recursive = s->flags & WATCHD_FLAG_RECURSIVE;
        int r;

        if (!recursive && !report)
                return;
        /* The subscription is placed, and stays: what cannot be walked or
         * reported (a limit, the directory unreadable) is said with
         * Overflow, as for a directory moved into a tree. */
        /* On a file system that may stop answering, the scan is read in jobs,
         * and what it reports goes before the owner's records that wait for
         * the probe that found the path (the hold applied now); elsewhere its
         * first slice runs here. */
        r = walk_below(t, s, fd, /* all_or_nothing= */ false, report, !recursive, /* rescan= */ false, now_usec,
                       tree_may_stop(t, s->links), t->holds ? holds_get_applying(t->holds) : NULL, NULL);
        if (r < 0) {
                log_info_errno(r, "Subscription %" PRIu32 " cannot read '%s' (%m); it gets Overflow.", s->id, s->path);
                tree_overflow(t, s);
        }
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

#define TREE_RETRIES_MAX 4096u

/*
 * Walks name below parent (a link of s), parent open at pfd (an O_PATH fd
 * from its path, as the owner: taken) or pfd the open's -errno. Return: 0,
 * or -ESTALE if parent's path does not lead to parent's directory now (a
 * rename not yet read), or another error (the caller gives Overflow).
 */
int tree_add_opened(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize, uint64_t now_usec,
                    int pfd, const struct stat *st, bool off_loop, Hold *hold) {
        _cleanup_close_ int fd = pfd;
        char pathbuf[PATH_MAX];
        const char *ppath;
        TreeWalk *w;
        char *names;
        Frame frame;

        /* If its path leads elsewhere, a rename of it (or above) is still in the kernel queue. */
        if (fd == -ENOENT || fd == -ENOTDIR ||
            (fd >= 0 && (st->st_dev != parent->watch->dev || st->st_ino != parent->watch->ino)))
                return -ESTALE;
        if (fd < 0)
                return fd;
        ppath = watch_link_get_path(parent, pathbuf);
        if (!ppath)
                return -ENAMETOOLONG;

        /* A frame on the parent holding just this name: the walk's first step opens it. */
        w = walk_new(t, s, synthesize, now_usec);
        names = strdup(name);
        if (!w || !names) {
                free(names);
                if (w)
                        walk_free(w);
                return -ENOMEM;
        }
        watch_link_hold(parent);
        frame = (Frame) {
                .link = parent,
                .fd = TAKE_FD(fd),
                .quiet = true,                                   /* O_PATH: its close is no event */
                .dir = { .dev = st->st_dev, .ino = st->st_ino }, /* the parent of what the walk opens */
                .names = names,                                  /* the frame owns it now */
                .len = strlen(names) + 1,
                .path_len = strlen(ppath),
                .read = true,
        };
        g_array_append_val(w->frames, frame);
        if (synthesize && off_loop) {
                /* Opened and read in jobs, the owner's records held (hold), or
                 * told (tree_open_submit() gave Overflow: its lane stalled). */
                w->off_loop = true;
                w->hold = hold_ref(hold);
                w->hold_until = now_usec + WALK_HOLD_USEC; /* from the record that found it */
        }
        (void) walk_start(w, NULL); /* a limit gives Overflow (walk_end) */
        return 0;
}

/* What tree_add_opened() returned for name below parent: -ESTALE is tried again
 * once the kernel queue is read empty (unless this was that retry), another
 * error gives Overflow. */
void tree_add_result(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize, bool retry,
                     uint64_t now_usec, int r) {
        if (r == -ESTALE && !retry && (!t->retries || t->retries->len < TREE_RETRIES_MAX)) {
                TreeRetry rt = { s->id, parent, strdup(name), synthesize, now_usec };

                if (rt.name) {
                        if (!t->retries)
                                t->retries = g_array_new(FALSE, FALSE, sizeof(TreeRetry));
                        watch_link_hold(parent);
                        g_array_append_val(t->retries, rt);
                        return;
                }
        }
        if (r >= 0)
                return;
        log_info_errno(r, "Subscription %" PRIu32 " cannot follow '%s' (%m); it gets Overflow.", s->id, name);
        tree_overflow(t, s);
}

/* name appeared below parent (a link of s): parent opened by its path as
 * the owner, in a job (tree_open_submit(); for a directory just created,
 * synthesize, with its owner held: see tree_open.c), or
 * here where no job can be had. */
void tree_add_at(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize, bool retry,
                 uint64_t now_usec) {
        if (tree_open_submit(t, s, parent, name, synthesize, retry, now_usec, NULL) >= 0)
                return;
        tree_add_here(t, s, parent, name, synthesize, retry, now_usec);
}

void tree_add_here(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize, bool retry,
                   uint64_t now_usec) {
        char pathbuf[PATH_MAX];
        const char *ppath;
        struct stat st;
        int pfd;

        ppath = watch_link_get_path(parent, pathbuf);
        if (!ppath)
                return tree_add_result(t, s, parent, name, synthesize, retry, now_usec, -ENAMETOOLONG);
        pfd = access_open_as(&s->owner->caller, ppath, /* only_dir= */ true, /* no_follow= */ false, &st);
        tree_add_result(t, s, parent, name, synthesize, retry, now_usec,
                        tree_add_opened(t, s, parent, name, synthesize, now_usec, pfd, &st, /* off_loop= */ false, NULL));
}

void tree_add(Tree *t, Subscription *s, const char *path, bool synthesize, uint64_t now_usec) {
        const char *name = path_basename(path, NULL);
        _cleanup_free_ char *dir = NULL;
        WatchLink *parent;

        dir = path_dirname(path);
        if (!dir) {
                log_info_errno(-ENOMEM, "Subscription %" PRIu32 " cannot follow '%s' (%m); it gets Overflow.", s->id,
                               path);
                return tree_overflow(t, s);
        }
        parent = tree_find(s, dir);
        if (!parent)
                return; /* its parent left the tree meanwhile */
        tree_add_at(t, s, parent, name, synthesize, /* retry= */ false, now_usec);
}

void tree_retries_run(Tree *t) {
        g_autoptr(GArray) retries = NULL;

        if (!t->retries || t->retries->len == 0)
                return;
        retries = TAKE_PTR(t->retries);
        for (guint k = 0; k < retries->len; k++) {
                TreeRetry *rt = &g_array_index(retries, TreeRetry, k);
                Subscription *s = watch_table_get_subscription(t->table, rt->id);

                /* A parent that left the tree, or a subscription that ended, takes the directory along. */
                if (s && !rt->parent->dead)
                        tree_add_at(t, s, rt->parent, rt->name, rt->synthesize, /* retry= */ true, rt->now);
                watch_link_release(rt->parent);
                free(rt->name);
        }
}

void tree_retries_try(Tree *t) {
        /* A rename was just read (its IN_MOVED_TO): the scans of new
         * directories that waited for their parent's path to lead to it again
         * (-ESTALE) go now if it does, right after the rename's record, not
         * after the later records the queue holds until it is read empty (a
         * client that heard of those, a marker of its own, would find the
         * new directory's files not reported yet). Those whose path still
         * leads elsewhere keep waiting for the read-empty retry. Opened on
         * the loop: whether the path leads there again is asked here, in
         * step with the rename just read (a parent on a file system that
         * does not answer holds the loop here still; RELIABILITY.md). With
         * workers, retries wait here only when no job could be had
         * (open_done() submits an -ESTALE open again at once), so a job for
         * this open would most likely not be had either. */
        if (!t->retries || t->retries->len == 0)
                return;
        for (guint k = 0; t->retries && k < t->retries->len;) {
                TreeRetry *rt = &g_array_index(t->retries, TreeRetry, k);
                Subscription *s = watch_table_get_subscription(t->table, rt->id);
                TreeRetry r = *rt;
                char pathbuf[PATH_MAX];
                const char *ppath;
                struct stat st;
                int pfd;

                if (!rt->synthesize || !s || rt->parent->dead) {
                        k++;
                        continue;
                }
                ppath = watch_link_get_path(rt->parent, pathbuf);
                if (!ppath) {
                        k++;
                        continue;
                }
                pfd = access_open_as(&s->owner->caller, ppath, /* only_dir= */ true, /* no_follow= */ false, &st);
                if (pfd == -ENOENT || pfd == -ENOTDIR ||
                    (pfd >= 0 && (st.st_dev != rt->parent->watch->dev || st.st_ino != rt->parent->watch->ino))) {
                        safe_close(pfd);
                        k++;
                        continue;
                }
                g_array_remove_index(t->retries, k); /* the array may grow in what follows: r is a copy */
                tree_add_result(t, s, r.parent, r.name, r.synthesize, /* retry= */ true, r.now,
                                tree_add_opened(t, s, r.parent, r.name, r.synthesize, r.now, pfd, &st,
                                                /* off_loop= */ false, NULL));
                watch_link_release(r.parent);
                free(r.name);
        }
}

static void tree_retries_free(Tree *t) {
        if (!t->retries)
                return;
        for (guint k = 0; k < t->retries->len; k++) {
                TreeRetry *rt = &g_array_index(t->retries, TreeRetry, k);

                watch_link_release(rt->parent);
                free(rt->name);
        }
        g_clear_pointer(&t->retries, g_array_unref);
}

bool tree_walks_run(Tree *t, uint64_t budget_usec) {
        /* One walk per slice, round robin: one client's huge tree does not
         * hold back another's small one. */
        TreeWalk *w = LIST_POP(walks, t->walks);

        if (!w)
                return false;
        if (walk_run(w, now_usec() + budget_usec))
                (void) tree_walk_end(w);
        else
                LIST_APPEND(walks, t->walks, w);
        return t->walks != NULL;
}

void tree_set_fswork(Tree *t, FsWork *fswork) {
        t->fswork = fswork;
}

void tree_set_holds(Tree *t, Holds *holds) {
        t->holds = holds;
}

static void tree_walks_free(Tree *t) {
        TreeWalk *w;

        tree_jobs_free(t);
        while ((w = LIST_POP(walks, t->walks))) {
                w->error = -ECANCELED;
                while (w->frames->len > 0)
                        tree_frame_pop(w);
                if (w->done)
                        w->done(w->id, -ECANCELED, w->userdata);
                walk_free(w);
        }
}
