/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tree - following the directory tree of a RECURSIVE subscription
 *
 * A walk is a stack of frames, one per directory on the path from where it
 * started to where it is: the directory's link (held, watch_table_hold(), so
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
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "event_bits.h"
#include "log.h"
#include "macro.h"
#include "tree.h"

/* Steps between looks at the clock. */
#define STEPS_PER_CLOCK 32u
/* The first slice, inside the AddWatch call or the event that found the directory. */
#define FIRST_SLICE_USEC 2000u

typedef struct Frame {
        WatchLink *link;        /* the directory (a reference is held) */
        int fd;                 /* open on it (for openat) */
        char *names;            /* its subdirectories: "a\0b\0" */
        size_t len, pos;
        size_t path_len;        /* of its path, to stop below PATH_MAX */
} Frame;

struct TreeWalk {
        Manager *manager;
        uint32_t id;            /* the subscription, looked up at each slice: it may have ended */
        bool synthesize;        /* report what the directories hold (they were just created) */
        bool initial;           /* AddWatch's walk: a limit ends the subscription */
        uint64_t now;
        GArray *frames;         /* Frame, the deepest last */
        int error;
        TreeWalkDone done;
        void *userdata;
        TreeWalk *next;         /* manager's list */
};

char *tree_path_join(const char *dir, const char *name, size_t name_len) {
        size_t dl = strlen(dir);
        char *p;

        if (dl == 1 && dir[0] == '/')
                dl = 0;
        p = malloc(dl + 1 + name_len + 1);
        if (!p)
                return NULL;
        memcpy(p, dir, dl);
        p[dl] = '/';
        memcpy(p + dl + 1, name, name_len);
        p[dl + 1 + name_len] = '\0';
        return p;
}

const char *tree_link_path(const WatchLink *l, char *buf) {
        if (!l->parent)
                return watch_link_is_root(l) ? l->subscription->path : l->name;
        return watch_link_path(l, buf, PATH_MAX) < 0 ? NULL : buf;
}

static void frame_done(Manager *m, Frame *f) {
        watch_table_release(m->table, f->link);
        safe_close(f->fd);
        free(f->names);
}

/*
 * Reads the directory open at fd (l's): reports its entries if the walk
 * synthesizes, and pushes a frame with its subdirectories (taking fd), or
 * closes fd if it has none. Runs as the owner.
 */
static int frame_push(TreeWalk *w, Subscription *s, WatchLink *l, int fd, size_t path_len) {
        Manager *m = w->manager;
        char pathbuf[PATH_MAX];
        const char *path = NULL;
        size_t len = 0, cap = 0;
        char *names = NULL;
        bool report = w->synthesize && (s->mask & IN_CREATE);

        if (report) {
                path = tree_link_path(l, pathbuf);
                if (!path)
                        report = false;
        }
        for (;;) {
                ssize_t n = getdents64(fd, m->dents_buf, TREE_DENTS_BUF);

                if (n < 0) {
                        int r = negative_errno();

                        free(names);
                        safe_close(fd);
                        /* Gone while being read: its deletion is reported by its parent. */
                        return r == -ENOENT ? 0 : r;
                }
                if (n == 0)
                        break;
                for (ssize_t off = 0; off < n;) {
                        struct dirent64 *de = (struct dirent64 *) (m->dents_buf + off);
                        size_t nl = strlen(de->d_name);
                        bool is_dir = de->d_type == DT_DIR;

                        off += de->d_reclen;
                        if (de->d_name[0] == '.' && (nl == 1 || (nl == 2 && de->d_name[1] == '.')))
                                continue;
                        if (de->d_type == DT_UNKNOWN) {
                                struct stat st;

                                is_dir = fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode);
                        }
                        if (report) {
                                manager_queue_record(m, s->owner, record_new(RECORD_EVENT, s->id,
                                                                             IN_CREATE | (is_dir ? IN_ISDIR : 0),
                                                                             0, w->now, path, de->d_name, nl));
                                manager_scanned_add(m, s->id, path, de->d_name, nl);
                        }
                        if (!is_dir)
                                continue;
                        if (len + nl + 1 > cap) {
                                char *p;

                                cap = MAX(cap * 2, len + nl + 1 + 256);
                                p = realloc(names, cap);
                                if (!p) {
                                        free(names);
                                        safe_close(fd);
                                        return -ENOMEM;
                                }
                                names = p;
                        }
                        memcpy(names + len, de->d_name, nl + 1);
                        len += nl + 1;
                }
        }
        if (len == 0) {
                free(names);
                safe_close(fd);
                return 0;
        }
        watch_table_hold(m->table, l);
        g_array_append_val(w->frames, ((Frame) {
                .link = l,
                .fd = fd,
                .names = names,
                .len = len,
                .path_len = path_len,
        }));
        return 0;
}

static void frame_pop(TreeWalk *w) {
        frame_done(w->manager, &g_array_index(w->frames, Frame, w->frames->len - 1));
        g_array_set_size(w->frames, w->frames->len - 1);
}

/*
 * One directory: the next name of the deepest frame. Runs as the owner.
 * Return: 0, or an error that stops the walk.
 */
static int step(TreeWalk *w, Subscription *s) {
        Frame *f = &g_array_index(w->frames, Frame, w->frames->len - 1);
        _cleanup_close_ int fd = -1;
        const char *name;
        WatchLink *l;
        struct stat st;
        size_t nl;
        int r;

        if (f->pos >= f->len || watch_table_link_dead(w->manager->table, f->link)) {
                frame_pop(w);   /* done, or left the tree meanwhile */
                return 0;
        }
        name = f->names + f->pos;
        nl = strlen(name);
        f->pos += nl + 1;

        if (f->path_len + 1 + nl >= PATH_MAX) {
                manager_queue_overflow(w->manager, s);   /* a part of the tree it cannot see */
                return 0;
        }
        /* One name from a listing, O_NOFOLLOW: no link of any kind is
         * followed, so not a magic one either (/proc/PID/cwd, access.h). */
        fd = openat(f->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                r = negative_errno();
                if (r == -EMFILE || r == -ENFILE || r == -ENOMEM)
                        return r;
                return 0;       /* gone already, replaced, or not the owner's to read */
        }
        if (fstat(fd, &st) < 0)
                return negative_errno();
        r = manager_link(w->manager, s, f->link, fd, &st, name, nl, &l);
        if (r == -EEXIST)
                return 0;       /* seen already: a loop, or linked by an event's walk first */
        if (r < 0)
                return r;
        return frame_push(w, s, l, TAKE_FD(fd), f->path_len + 1 + nl);
}

static void walk_free(TreeWalk *w) {
        while (w->frames->len > 0)
                frame_pop(w);
        g_array_unref(w->frames);
        free(w);
}

/* Runs w until it is done or until deadline. Return: whether it is done. */
static bool walk_run(TreeWalk *w, uint64_t deadline) {
        Manager *m = w->manager;
        Subscription *s = watch_table_get_subscription(m->table, w->id);
        AccessSaved saved;
        unsigned n = 0;
        int r;

        if (!s || w->error < 0)
                return true;    /* walk_end() lets go of its frames */
        r = access_become(&((Client *) s->owner)->caller, &saved);
        if (r < 0) {
                w->error = r;
                return true;
        }
        backend_batch(m->backend, true);
        while (w->frames->len > 0) {
                r = step(w, s);
                if (r < 0) {
                        w->error = r;
                        break;
                }
                if (++n % STEPS_PER_CLOCK == 0 && manager_now_usec() >= deadline)
                        break;
        }
        backend_batch(m->backend, false);
        access_restore(&saved);
        return w->frames->len == 0 || w->error < 0;
}

/* A walk that ended: its subscription hears how. */
static int walk_end(TreeWalk *w) {
        Manager *m = w->manager;
        Subscription *s = watch_table_get_subscription(m->table, w->id);
        bool initial = w->initial;
        int r = w->error;

        while (w->frames->len > 0)
                frame_pop(w);
        if (r < 0 && s) {
                if (w->initial)
                        /* The whole tree, or nothing: a limit met half-way undoes it. */
                        manager_subscription_end(m, s);
                else {
                        /* Part of the tree is not watched: never silently. */
                        log_info_errno(r, "Subscription %" PRIu32 " cannot follow its tree: %m; it gets Overflow.",
                                       w->id);
                        manager_queue_overflow(m, s);
                }
        }
        if (w->done)
                w->done(m, w->id, r, w->userdata);
        walk_free(w);
        return initial ? r : 0;
}

static TreeWalk *walk_new(Manager *m, Subscription *s, bool synthesize, uint64_t now) {
        TreeWalk *w = calloc(1, sizeof(TreeWalk));

        if (!w)
                return NULL;
        w->manager = m;
        w->id = s->id;
        w->synthesize = synthesize;
        w->now = now;
        w->frames = g_array_new(FALSE, FALSE, sizeof(Frame));
        return w;
}

/* Runs w's first slice; what is left goes on from the loop (manager's list). */
static int walk_start(TreeWalk *w, TreeWalk **ret) {
        Manager *m = w->manager;

        if (walk_run(w, manager_now_usec() + FIRST_SLICE_USEC)) {
                if (ret)
                        *ret = NULL;
                return walk_end(w);
        }
        if (m->walks_tail)
                m->walks_tail->next = w;
        else
                m->walks = w;
        m->walks_tail = w;
        manager_walks_wake(m);
        if (ret)
                *ret = w;
        return 0;
}

int tree_walk_below(Manager *m, Subscription *s, int fd, bool all_or_nothing, TreeWalk **ret) {
        TreeWalk *w;
        AccessSaved saved;
        int dfd, r;

        w = walk_new(m, s, /* synthesize= */ false, 0);
        if (!w)
                return -ENOMEM;
        w->initial = all_or_nothing;

        /* The root is read through an fd of our own: fd may be O_PATH, or the
         * client's (whose offset is not ours to move). */
        r = access_become(&((Client *) s->owner)->caller, &saved);
        if (r >= 0) {
                dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
                r = dfd < 0 ? negative_errno() : frame_push(w, s, s->links, dfd, strlen(s->path));
                access_restore(&saved);
        }
        if (r < 0) {
                walk_free(w);
                *ret = NULL;
                return r;
        }
        return walk_start(w, ret);
}

void tree_walk_set_done(TreeWalk *w, TreeWalkDone done, void *userdata) {
        w->done = done;
        w->userdata = userdata;
}

/* The link of s at path (its root or a directory below), or NULL. */
static WatchLink *tree_find(Subscription *s, const char *path) {
        size_t rl = strlen(s->path);
        WatchLink *l = s->links;
        const char *p;

        if (!l || !watch_link_is_root(l))
                return NULL;
        if (rl == 1)
                rl = 0;         /* "/" */
        if (strncmp(path, s->path, rl) != 0 || (path[rl] != '\0' && path[rl] != '/'))
                return NULL;
        for (p = path + rl; l && *p == '/';) {
                size_t n = strcspn(p + 1, "/");

                l = watch_link_child(l, p + 1, n);
                p += 1 + n;
        }
        return *p == '\0' ? l : NULL;
}

/* A directory that appeared below a link whose path did not lead to it:
 * tried again once the kernel queue is read empty (tree_retries_run). */
typedef struct TreeRetry {
        uint32_t id;
        WatchLink *parent;      /* held */
        char *name;
        bool synthesize;
        uint64_t now;
} TreeRetry;

#define TREE_RETRIES_MAX 4096u

/*
 * Walks name below parent (a link of s). Return: 0, or -ESTALE if parent's
 * path does not lead to parent's directory now (a rename not yet read), or
 * another error (the caller gives Overflow).
 */
static int add_at(Manager *m, Subscription *s, WatchLink *parent, const char *name, bool synthesize,
                  uint64_t now_usec) {
        _cleanup_close_ int pfd = -1;
        char pathbuf[PATH_MAX];
        const char *ppath;
        struct stat st;
        TreeWalk *w;
        char *names;
        Frame frame;

        ppath = tree_link_path(parent, pathbuf);
        if (!ppath)
                return -ENAMETOOLONG;
        /* The parent as the link knows it, opened as the owner like everything
         * of its tree: if its path leads elsewhere, a rename of it (or above)
         * is still in the kernel queue. */
        pfd = access_open_as(&((Client *) s->owner)->caller, ppath, /* only_dir= */ true, /* no_follow= */ false, &st);
        if (pfd == -ENOENT || pfd == -ENOTDIR ||
            (pfd >= 0 && (st.st_dev != parent->watch->dev || st.st_ino != parent->watch->ino)))
                return -ESTALE;
        if (pfd < 0)
                return pfd;

        /* A frame on the parent holding just this name: the walk's first step opens it. */
        w = walk_new(m, s, synthesize, now_usec);
        names = strdup(name);
        if (!w || !names) {
                free(names);
                if (w)
                        walk_free(w);
                return -ENOMEM;
        }
        watch_table_hold(m->table, parent);
        frame = (Frame) {
                .link = parent,
                .fd = TAKE_FD(pfd),
                .names = names,         /* the frame owns it now */
                .len = strlen(names) + 1,
                .path_len = strlen(ppath),
        };
        g_array_append_val(w->frames, frame);
        (void) walk_start(w, NULL);     /* a limit gives Overflow (walk_end) */
        return 0;
}

void tree_add(Manager *m, Subscription *s, const char *path, bool synthesize, uint64_t now_usec) {
        const char *slash = strrchr(path, '/'), *name = slash + 1;
        _cleanup_free_ char *dir = NULL;
        WatchLink *parent;
        int r;

        dir = slash == path ? strdup("/") : strndup(path, (size_t) (slash - path));
        if (!dir) {
                r = -ENOMEM;
                goto overflow;
        }
        parent = tree_find(s, dir);
        if (!parent)
                return;         /* its parent left the tree meanwhile */
        r = add_at(m, s, parent, name, synthesize, now_usec);
        if (r == -ESTALE && (!m->tree_retries || m->tree_retries->len < TREE_RETRIES_MAX)) {
                char *n = strdup(name);

                if (n) {
                        if (!m->tree_retries)
                                m->tree_retries = g_array_new(FALSE, FALSE, sizeof(TreeRetry));
                        watch_table_hold(m->table, parent);
                        g_array_append_val(m->tree_retries, ((TreeRetry) { s->id, parent, n, synthesize, now_usec }));
                        return;
                }
        }
        if (r >= 0)
                return;
overflow:
        log_info_errno(r, "Subscription %" PRIu32 " cannot follow '%s' (%m); it gets Overflow.", s->id, path);
        manager_queue_overflow(m, s);
}

void tree_retries_run(Manager *m) {
        g_autoptr(GArray) retries = NULL;

        if (!m->tree_retries || m->tree_retries->len == 0)
                return;
        retries = TAKE_PTR(m->tree_retries);
        for (guint k = 0; k < retries->len; k++) {
                TreeRetry *t = &g_array_index(retries, TreeRetry, k);
                Subscription *s = watch_table_get_subscription(m->table, t->id);
                int r;

                /* A parent that left the tree, or a subscription that ended, takes the directory along. */
                if (s && !watch_table_link_dead(m->table, t->parent)) {
                        r = add_at(m, s, t->parent, t->name, t->synthesize, t->now);
                        if (r < 0) {
                                log_info_errno(r, "Subscription %" PRIu32 " cannot follow '%s' (%m); it gets Overflow.",
                                               s->id, t->name);
                                manager_queue_overflow(m, s);
                        }
                }
                watch_table_release(m->table, t->parent);
                free(t->name);
        }
}

void tree_retries_free(Manager *m) {
        if (!m->tree_retries)
                return;
        for (guint k = 0; k < m->tree_retries->len; k++) {
                TreeRetry *t = &g_array_index(m->tree_retries, TreeRetry, k);

                watch_table_release(m->table, t->parent);
                free(t->name);
        }
        g_clear_pointer(&m->tree_retries, g_array_unref);
}

typedef struct TreeMove {
        uint32_t id;            /* the subscription */
        uint32_t cookie;
        WatchLink *link;        /* the moved directory's link (held), or NULL: it was not linked yet */
} TreeMove;

void tree_moved_from(Manager *m, Subscription *s, const char *path, uint32_t cookie) {
        WatchLink *l = tree_find(s, path);

        if (l && watch_link_is_root(l))
                return;         /* the root itself: its subscription follows by its path */
        if (!m->tree_moves)
                m->tree_moves = g_array_new(FALSE, FALSE, sizeof(TreeMove));
        if (l)
                watch_table_hold(m->table, l);
        g_array_append_val(m->tree_moves, ((TreeMove) { s->id, cookie, l }));
}

bool tree_moves_pending(Manager *m, uint32_t cookie) {
        return m->tree_moves && m->tree_moves->len > 0 &&
               g_array_index(m->tree_moves, TreeMove, 0).cookie == cookie;
}

/* A walk in a moved link goes on in it: its frames follow a reallocation. */
static void walks_relink(Manager *m, WatchLink *old, WatchLink *new) {
        for (TreeWalk *w = m->walks; w; w = w->next)
                for (guint i = 0; i < w->frames->len; i++) {
                        Frame *f = &g_array_index(w->frames, Frame, i);

                        if (f->link == old)
                                f->link = new;
                }
}

void tree_moved_to(Manager *m, Subscription *s, const char *path, uint32_t cookie, uint64_t now_usec) {
        const char *slash = strrchr(path, '/'), *name = slash + 1;
        _cleanup_free_ char *dir = NULL;
        WatchLink *parent, *l, *n;
        guint k;

        for (k = 0; m->tree_moves && k < m->tree_moves->len; k++) {
                TreeMove *mv = &g_array_index(m->tree_moves, TreeMove, k);

                if (mv->id == s->id && mv->cookie == cookie)
                        break;
        }
        if (!m->tree_moves || k == m->tree_moves->len)
                return tree_add(m, s, path, /* synthesize= */ false, now_usec);         /* from elsewhere */

        l = g_array_index(m->tree_moves, TreeMove, k).link;
        g_array_remove_index_fast(m->tree_moves, k);
        if (!l)
                /* Created and moved before it was linked: nothing in it was reported. */
                return tree_add(m, s, path, /* synthesize= */ true, now_usec);

        dir = slash == path ? strdup("/") : strndup(path, (size_t) (slash - path));
        parent = dir ? tree_find(s, dir) : NULL;
        if (watch_table_link_dead(m->table, l) || !parent) {
                if (!watch_table_link_dead(m->table, l))
                        manager_unlink(m, l);
                watch_table_release(m->table, l);
                return tree_add(m, s, path, /* synthesize= */ false, now_usec);
        }
        n = watch_table_move_link(m->table, l, parent, name, strlen(name));
        if (!n) {
                manager_unlink(m, l);
                watch_table_release(m->table, l);
                return tree_add(m, s, path, /* synthesize= */ false, now_usec);
        }
        if (n != l)
                walks_relink(m, l, n);
        watch_table_release(m->table, n);
}

void tree_moves_end(Manager *m) {
        if (!m->tree_moves)
                return;
        for (guint k = 0; k < m->tree_moves->len; k++) {
                WatchLink *l = g_array_index(m->tree_moves, TreeMove, k).link;

                if (!l)
                        continue;
                /* Moved out of the tree: unlinked with everything below it. */
                if (!watch_table_link_dead(m->table, l))
                        manager_unlink(m, l);
                watch_table_release(m->table, l);
        }
        g_array_set_size(m->tree_moves, 0);
}

bool tree_walks_run(Manager *m, uint64_t budget_usec) {
        TreeWalk *w = m->walks;

        if (!w)
                return false;
        /* One walk per slice, round robin: one client's huge tree does not
         * hold back another's small one. */
        m->walks = w->next;
        if (!m->walks)
                m->walks_tail = NULL;
        w->next = NULL;
        if (walk_run(w, manager_now_usec() + budget_usec))
                (void) walk_end(w);
        else {
                if (m->walks_tail)
                        m->walks_tail->next = w;
                else
                        m->walks = w;
                m->walks_tail = w;
        }
        return m->walks != NULL;
}

void tree_walks_free(Manager *m) {
        while (m->walks) {
                TreeWalk *w = m->walks;

                m->walks = w->next;
                w->error = -ECANCELED;
                while (w->frames->len > 0)
                        frame_pop(w);
                if (w->done)
                        w->done(m, w->id, -ECANCELED, w->userdata);
                walk_free(w);
        }
        m->walks_tail = NULL;
}
