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

/* Steps between looks at the clock. */
#define STEPS_PER_CLOCK 32u
/* The first slice, inside the AddWatch call or the event that found the directory. */
#define FIRST_SLICE_USEC 2000u
/* A job in a worker: the directories it takes from the top of a walk's
 * stack, and the subdirectories it opens at most. A directory costs a
 * worker's round trip only once in so many. */
#define JOB_FRAMES 64u
#define JOB_OPENS  256u
/* What a job's reads of a directory announce (self_events.h): its getdents64
 * calls, as many as they are. */
#define JOB_ACCESS_MANY 65536u

typedef struct WalkJob WalkJob;

struct Tree {
        WatchTable *table;
        Backend *backend;
        SelfEvents *self;
        TreeOps ops;
        void *userdata;
        LIST_HEAD(TreeWalk, walks); /* going on from the loop, round robin */
        LIST_HEAD(TreeWalk, working); /* going on in workers: a job of each in a worker's lane */
        FsWork *fswork;               /* NULL: the walks run on the loop */
        uint64_t jobs;                /* jobs submitted */
        GArray *moves;              /* TreeMove: directories moved out of their place, until their IN_MOVED_TO */
        GArray *retries;            /* TreeRetry: new directories to walk once the kernel queue is read empty */
        /* "id:path" of each entry a scan of a new directory reported as
         * IN_CREATE, until the kernel queue is next read empty (tree.h). NULL
         * until first used. */
        GHashTable *scanned;
        uint8_t *dents_buf; /* getdents64 buffer of the walks */
};

typedef struct Frame {
        WatchLink *link; /* the directory (a reference is held) */
        int fd;          /* open on it (for openat) */
        bool quiet;      /* fd is O_PATH: closing it is no event */
        SelfDir dir;     /* the directory as the kernel reports it; dir.name is name */
        char *name;
        char *names; /* its subdirectories: "a\0b\0" */
        size_t len, pos;
        size_t path_len; /* of its path, to stop below PATH_MAX */
        bool read;       /* names holds its subdirectories (else it is linked and not read yet) */
        bool reopen;     /* fd is the root's (a dup, quiet): a job opens "." through it */
        bool any_parent; /* its parent's watch is unknown: a job announces on any watch under its name */
        bool closed;     /* a job closed fd: nothing is left to do with it */
        bool cross;      /* its one name is a mount point: opened in a job of lane, that file system's */
        dev_t lane;
} Frame;

struct TreeWalk {
        Tree *tree;
        uint32_t id;     /* the subscription, looked up at each slice: it may have ended */
        bool synthesize; /* report what the directories hold (they were just created) */
        bool one_level;  /* the root's entries only: a scan, not a walk (not RECURSIVE) */
        bool initial;    /* AddWatch's walk: a limit ends the subscription */
        bool rescan;     /* after a kernel overflow: go down the directories linked already too */
        uint64_t now;
        GArray *frames; /* Frame, the deepest last */
        WalkJob *job;   /* in a worker (the walk is on Tree.working) */
        int error;
        TreeWalkDone done;
        void *userdata;
        LIST_FIELDS(TreeWalk, walks); /* the walks going on from the loop */
};

static void tree_walks_free(Tree *t);
static void tree_retries_free(Tree *t);
static int walk_start_in_worker(TreeWalk *w, Subscription *s);

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
        tree_walks_free(t);
        if (t->moves)
                g_array_unref(t->moves);
        if (t->scanned)
                g_hash_table_destroy(t->scanned);
        free(t->dents_buf);
        free(t);
        return NULL;
}

bool tree_has_walks(const Tree *t) {
        return t->walks != NULL;
}

/* Part of s's tree is not followed: never silently. */
static void tree_overflow(Tree *t, Subscription *s) {
        client_queue_lost(s);
}

static char *scanned_key(uint32_t id, const char *dir, const char *name, size_t name_len) {
        return g_strdup_printf("%" PRIu32 ":%.*s/%.*s", id, (int) path_prefix_len(dir), dir, (int) name_len, name);
}

/* A scan reported dir/name to subscription id as IN_CREATE (see Tree.scanned). */
static void scanned_add(Tree *t, uint32_t id, const char *dir, const char *name, size_t name_len) {
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
        /* A rename queues both halves at once: none is coming. */
        tree_moves_end(t);
        /* Every rename is read: their new parents' paths are right now. */
        tree_retries_run(t);
}


/* Closes fd, open for reading on the directory d: the kernel's records of
 * that close are the daemon's own. */
static void dir_close(Tree *t, int fd, const SelfDir *d) {
        self_events_before(t->self);
        safe_close(fd);
        self_events_did(t->self, IN_CLOSE_NOWRITE, d);
}

static void frame_done(Tree *t, Frame *f) {
        if (f->link)
                watch_link_release(f->link);
        if (f->closed)
                ;
        else if (f->quiet)
                safe_close(f->fd);
        else
                dir_close(t, f->fd, &f->dir);
        free(f->name);
        free(f->names);
}

/*
 * Reads the directory open at fd (l's; d says where the kernel reports
 * what is done to it): reports its entries if the walk synthesizes, and
 * pushes a frame with its subdirectories (taking fd), or closes fd if it
 * has none. Runs as the owner.
 */
static int frame_push(TreeWalk *w, Subscription *s, WatchLink *l, int fd, const SelfDir *d, size_t path_len) {
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

                        dir_close(t, fd, d);
                        /* Gone while being read: its deletion is reported by its parent. */
                        return r == -ENOENT ? 0 : r;
                }
                self_events_did(t->self, IN_ACCESS, d);
                if (n == 0)
                        break;
                for (ssize_t off = 0; off < n;) {
                        struct dirent64 *de = (struct dirent64 *) (t->dents_buf + off);
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
                                client_queue_event(s, IN_CREATE | (is_dir ? IN_ISDIR : 0), 0, path, de->d_name, nl,
                                                   w->now);
                                scanned_add(t, s->id, path, de->d_name, nl);
                        }
                        if (!is_dir || w->one_level)
                                continue;
                        if (!names)
                                names = g_byte_array_new();
                        g_byte_array_append(names, (const guint8 *) de->d_name, (guint) nl + 1);
                }
        }
        if (!names) {
                dir_close(t, fd, d);
                return 0;
        }
        if (d->name_len > 0) {
                name = strndup(d->name, d->name_len);
                if (!name) {
                        dir_close(t, fd, d);
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

static void frame_pop(TreeWalk *w) {
        frame_done(w->tree, &g_array_index(w->frames, Frame, w->frames->len - 1));
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
                frame_pop(w); /* done, or left the tree meanwhile */
                return 0;
        }
        if (!f->read) {
                /* Linked by a job, not read: the walk went on from the loop
                 * (no worker could take it). Read here, as a step does. */
                Frame g = *f;

                g_array_set_size(w->frames, w->frames->len - 1);
                r = frame_push(w, s, g.link, g.fd, &g.dir, g.path_len);
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
                                return frame_push(w, s, c, fd, &d, f->path_len + 1 + nl);
        }
        if (r < 0) {
                dir_close(t, fd, &d);
                /* -EEXIST: seen already (a loop, or linked by an event's walk first). */
                return r == -EEXIST ? 0 : r;
        }
        return frame_push(w, s, l, fd, &d, f->path_len + 1 + nl);
}

static void walk_free(TreeWalk *w) {
        while (w->frames->len > 0)
                frame_pop(w);
        g_array_unref(w->frames);
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
                return true; /* walk_end() lets go of its frames */
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
static int walk_end(TreeWalk *w) {
        Tree *t = w->tree;
        Subscription *s = watch_table_get_subscription(t->table, w->id);
        bool initial = w->initial;
        int r = w->error;

        while (w->frames->len > 0)
                frame_pop(w);
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

/* Runs w's first slice; what is left goes on from the loop (manager's list). */
static int walk_start(TreeWalk *w, TreeWalk **ret) {
        Tree *t = w->tree;
        Subscription *s = watch_table_get_subscription(t->table, w->id);

        if (s && walk_start_in_worker(w, s) > 0) {
                if (ret)
                        *ret = w;
                return 0;
        }

        if (walk_run(w, now_usec() + FIRST_SLICE_USEC)) {
                if (ret)
                        *ret = NULL;
                return walk_end(w);
        }
        LIST_APPEND(walks, t->walks, w);
        if (ret)
                *ret = w;
        return 0;
}

/*
 * ---- Walks in workers ----
 *
 * With a worker pool (tree_set_fswork()), what enters the file system runs
 * in a job on the lane of the directories' file system, as the owner: the
 * opens, the getdents64 calls, the fstatat of entries of unknown type, the
 * closes. The loop keeps what touches its tables: linking (placing a watch
 * through an fd already open looks nothing up; the kernel checks the
 * owner's right to read, which a FUSE file system with default_permissions
 * may answer from its attributes: a request when they are stale).
 *
 * A job takes up to JOB_FRAMES frames from the top of the walk's stack (one
 * file system), and, the deepest first, reads those not read yet and opens
 * their subdirectories, up to JOB_OPENS in all; a frame whose names are all
 * opened is closed there. Its completion links what was opened and pushes
 * those, not read: the next job reads them, after their watches are in
 * place, so nothing made in them meanwhile is missed (the order of a walk on
 * the loop). One job of a walk at a time.
 *
 * A subdirectory that is a mount point (openat2 RESOLVE_NO_XDEV says so) is
 * not opened in the job: its open waits for the file system mounted there,
 * so a job of that file system's lane opens it, through an O_PATH fd on its
 * parent. A stopped FUSE daemon or NFS server inside a tree holds its own
 * lane, not the lane of the tree around it.
 *
 * Walks that report what they find (a scan of new directories: tree_add()
 * with synthesize, tree_appeared() with report) stay on the loop: their
 * records must come before the kernel's records read after them, which a
 * job's completion, later, would not keep. Neither do the opens of a
 * directory by its path (add_at()'s parent, tree_rescan()'s root):
 * access_open_as() on the loop, as before.
 *
 * The records the kernel queues for the job's opens, reads and closes are
 * announced to self_events.h before it is submitted, and withdrawn at its
 * completion.
 */

typedef struct JobChild {
        guint frame;      /* its parent: an index in WalkJob.frames */
        const char *name; /* in its parent's names */
        int fd;
        struct stat st;
} JobChild;

/* A subdirectory that is a mount point: a job of its own file system's lane opens it. */
typedef struct JobCross {
        guint frame;
        const char *name;
        int pfd; /* O_PATH on the parent */
        dev_t dev;
} JobCross;

struct WalkJob {
        TreeWalk *walk;
        uint64_t token;   /* its announcements (self_events.h) */
        bool one_level;
        GArray *frames;   /* Frame: taken from the top of the walk's stack, the deepest last */
        GArray *children; /* JobChild: the subdirectories it opened, in order */
        GArray *crossings; /* JobCross */
        bool overflow;    /* a name it did not follow (too long a path) */
        bool discarded;   /* fswork_free() called its completion: tree_walks_free() frees it */
        int error;
        uint8_t *buf;     /* TREE_DENTS_BUF */
};

/* What j's opens, reads and closes may make the kernel queue: on each
 * directory's own watch, on its parent's under its name, and (the opens of
 * its subdirectories) on its own under any name. */
static void job_announce(Tree *t, WalkJob *j) {
        if (!self_events_enabled(t->self))
                return;
        for (guint i = 0; i < j->frames->len; i++) {
                Frame *f = &g_array_index(j->frames, Frame, i);
                const Watch *own = f->link->watch, *pw;
                bool reads = !f->quiet || f->reopen;
                unsigned open = f->reopen ? 1 : 0;

                if (own->wd >= 0) {
                        if (reads)
                                self_events_announce(t->self, j->token, own->wd, NULL, 0, false, open, JOB_ACCESS_MANY, 1);
                        self_events_announce(t->self, j->token, own->wd, NULL, 0, true, JOB_OPENS, 0, 0);
                }
                if (!reads || f->dir.name_len == 0)
                        continue;
                if (f->any_parent)
                        self_events_announce(t->self, j->token, -1, f->dir.name, f->dir.name_len, false, open, JOB_ACCESS_MANY, 1);
                else if (f->dir.has_parent) {
                        pw = watch_table_find_watch(t->table, f->dir.pdev, f->dir.pino);
                        if (pw && pw->wd >= 0 && pw->is_dir)
                                self_events_announce(t->self, j->token, pw->wd, f->dir.name, f->dir.name_len, false, open,
                                                 JOB_ACCESS_MANY, 1);
                }
        }
}

static void job_unannounce(Tree *t, WalkJob *j) {
        self_events_unannounce(t->self, j->token);
}

/* Frees j; its frames and children are handed on or let go of already. */
static void job_free(WalkJob *j) {
        g_array_unref(j->frames);
        g_array_unref(j->children);
        g_array_unref(j->crossings);
        free(j->buf);
        free(j);
}

/* In the worker: reads f's directory (names: its subdirectories). */
static int job_read(WalkJob *j, Frame *f) {
        g_autoptr(GByteArray) names = NULL;
        size_t len;

        for (;;) {
                ssize_t n = getdents64(f->fd, j->buf, TREE_DENTS_BUF);

                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                for (ssize_t off = 0; off < n;) {
                        struct dirent64 *de = (struct dirent64 *) (j->buf + off);
                        size_t nl = strlen(de->d_name);
                        bool is_dir = de->d_type == DT_DIR;

                        off += de->d_reclen;
                        if (de->d_name[0] == '.' && (nl == 1 || (nl == 2 && de->d_name[1] == '.')))
                                continue;
                        if (de->d_type == DT_UNKNOWN) {
                                struct stat st;

                                is_dir = fstatat(f->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0 &&
                                        S_ISDIR(st.st_mode);
                        }
                        if (!is_dir || j->one_level)
                                continue;
                        if (!names)
                                names = g_byte_array_new();
                        g_byte_array_append(names, (const guint8 *) de->d_name, (guint) nl + 1);
                }
        }
        f->read = true;
        if (names) {
                f->names = (char *) g_byte_array_steal(names, &len);
                f->len = len;
        }
        return 0;
}

#define OPEN_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/* Whether openat2() is there (not filtered out, not too old a kernel). */
static int openat2_ok = 1;

/*
 * Opens the subdirectory name of dfd without crossing into another mount:
 * -EXDEV if name is a mount point (its open would wait for that other file
 * system, in this file system's lane). Return: an fd, or -errno.
 */
static int open_below(int dfd, const char *name) {
        struct open_how how = { .flags = OPEN_FLAGS, .resolve = RESOLVE_NO_XDEV };
        struct statx stx;
        int fd;

        if (__atomic_load_n(&openat2_ok, __ATOMIC_RELAXED)) {
                fd = (int) syscall(SYS_openat2, dfd, name, &how, sizeof(how));
                if (fd >= 0)
                        return fd;
                if (errno != ENOSYS && errno != EPERM)
                        return -errno;
                __atomic_store_n(&openat2_ok, 0, __ATOMIC_RELAXED);
        }
        /* Without it: a mount point's root has another file system, or is its own
         * parent; what the kernel has at hand says so (AT_STATX_DONT_SYNC: no
         * request to the file system). */
        if (statx(dfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, STATX_INO, &stx) >= 0 &&
            (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
                return -EXDEV;
        fd = openat(dfd, name, OPEN_FLAGS);
        return fd < 0 ? -errno : fd;
}

/* In a worker of the frames' file system, as the walk's owner. */
static void walk_job_run(void *data) {
        WalkJob *j = data;
        unsigned opens = 0;

        for (guint i = j->frames->len; i > 0 && j->error >= 0; i--) {
                Frame *f = &g_array_index(j->frames, Frame, i - 1);
                int r;

                if (f->reopen) {
                        /* The root, through an fd of our own: the subscription's may be
                         * O_PATH, or the client's (whose offset is not ours to move). */
                        int fd = openat(f->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

                        r = fd < 0 ? negative_errno() : 0;
                        safe_close(f->fd); /* a dup: the file stays open, no event */
                        f->fd = fd;
                        f->reopen = false;
                        f->quiet = false;
                        if (r < 0) {
                                f->closed = true;
                                j->error = r;
                                break;
                        }
                }
                if (!f->read) {
                        r = job_read(j, f);
                        if (r < 0) {
                                safe_close(f->fd);
                                f->closed = true;
                                /* Gone while being read: its deletion is reported by its parent. */
                                if (r != -ENOENT)
                                        j->error = r;
                                continue;
                        }
                }
                while (f->pos < f->len && opens < JOB_OPENS) {
                        const char *name = f->names + f->pos;
                        size_t nl = strlen(name);
                        JobChild c = { .frame = i - 1, .name = name };

                        f->pos += nl + 1;
                        if (f->path_len + 1 + nl >= PATH_MAX) {
                                j->overflow = true; /* a part of the tree it cannot see */
                                continue;
                        }
                        /* One name from a listing, O_NOFOLLOW: no link of any kind is
                         * followed, so not a magic one either (/proc/PID/cwd, access.h). */
                        if (f->cross) {
                                c.fd = openat(f->fd, name, OPEN_FLAGS);
                                if (c.fd < 0)
                                        c.fd = negative_errno();
                        } else
                                c.fd = open_below(f->fd, name);
                        if (c.fd == -EXDEV) {
                                /* A mount point: opened in a job of its own file system. */
                                JobCross x = { .frame = i - 1, .name = name, .dev = f->dir.dev };
                                struct statx stx;

                                if (statx(f->fd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, 0,
                                          &stx) >= 0)
                                        x.dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
                                x.pfd = openat(f->fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
                                if (x.pfd < 0) {
                                        j->error = negative_errno();
                                        break;
                                }
                                g_array_append_val(j->crossings, x);
                                continue;
                        }
                        if (c.fd < 0) {
                                r = c.fd;
                                if (r == -EMFILE || r == -ENFILE || r == -ENOMEM) {
                                        j->error = r;
                                        break;
                                }
                                continue; /* gone already, replaced, or not the owner's to read */
                        }
                        if (fstat(c.fd, &c.st) < 0) {
                                j->error = negative_errno();
                                safe_close(c.fd);
                                break;
                        }
                        opens++;
                        g_array_append_val(j->children, c);
                }
                if (j->error >= 0 && f->pos >= f->len) {
                        safe_close(f->fd);
                        f->closed = true;
                }
        }
}

/* Links the subdirectory c of f, opened by a job: a frame of it, not read yet, onto pushed. */
static int job_link(TreeWalk *w, Subscription *s, Frame *f, JobChild *c, GArray *pushed) {
        Tree *t = w->tree;
        size_t nl = strlen(c->name);
        SelfDir d = {
                .dev = c->st.st_dev,
                .ino = c->st.st_ino,
                .has_parent = c->st.st_dev == f->dir.dev,
                .pdev = f->dir.dev,
                .pino = f->dir.ino,
                .name = c->name,
                .name_len = nl,
        };
        WatchLink *l = NULL;
        char *name;
        int r;

        if (f->link->dead) {
                dir_close(t, c->fd, &d); /* left the tree meanwhile */
                return 0;
        }
        r = watch_table_link(t->table, s, f->link, c->fd, &c->st, c->name, nl, &l);
        if (r == -EEXIST && w->rescan) {
                /* Linked already at this very place: what is below it may not be (step()). */
                LIST_FOREACH(sib, x, f->link->children)
                        if (strcmp(x->name, c->name) == 0 && x->watch->dev == c->st.st_dev &&
                            x->watch->ino == c->st.st_ino) {
                                l = x;
                                r = 0;
                                break;
                        }
        }
        if (r < 0) {
                dir_close(t, c->fd, &d);
                /* -EEXIST: seen already (a loop, or linked by an event's walk first). */
                return r == -EEXIST ? 0 : r;
        }
        name = strndup(c->name, nl);
        if (!name) {
                dir_close(t, c->fd, &d);
                return -ENOMEM;
        }
        watch_link_hold(l);
        d.name = name;
        g_array_append_val(pushed, ((Frame) {
                                              .link = l,
                                              .fd = c->fd,
                                              .dir = d,
                                              .name = name,
                                              .path_len = f->path_len + 1 + nl,
                                      }));
        return 0;
}

/* A mount point below f, to be opened in its own file system's lane: a frame
 * on f's directory (O_PATH) with that one name, onto pushed. */
static int job_cross(TreeWalk *w, Frame *f, JobCross *x, GArray *pushed) {
        Frame cross;
        char *names;

        if (f->link->dead) {
                safe_close(x->pfd);
                return 0;
        }
        names = strdup(x->name);
        if (!names) {
                safe_close(x->pfd);
                return -ENOMEM;
        }
        watch_link_hold(f->link);
        cross = (Frame) {
                .link = f->link,
                .fd = x->pfd,
                .quiet = true, /* O_PATH: its close is no event */
                .dir = { .dev = f->dir.dev, .ino = f->dir.ino },
                .names = names, /* the frame owns it now */
                .len = strlen(names) + 1,
                .path_len = f->path_len,
                .read = true,
                .cross = true,
                .lane = x->dev,
        };
        g_array_append_val(pushed, cross);
        return 0;
}

static int walk_submit(TreeWalk *w, Subscription *s);

/*
 * fswork_free() dropped j (-ESHUTDOWN): what only the job holds is closed.
 * Its frames are its walk's: tree_walks_free() frees them with j, after;
 * if the tree went first (j->walk NULL, their links let go of), here.
 */
static void job_discard(WalkJob *j) {
        for (guint k = 0; k < j->children->len; k++)
                safe_close(g_array_index(j->children, JobChild, k).fd);
        for (guint k = 0; k < j->crossings->len; k++)
                safe_close(g_array_index(j->crossings, JobCross, k).pfd);
        g_array_set_size(j->children, 0);
        g_array_set_size(j->crossings, 0);
        if (j->walk) {
                j->discarded = true;
                return;
        }
        for (guint i = 0; i < j->frames->len; i++) {
                Frame *f = &g_array_index(j->frames, Frame, i);

                if (!f->closed)
                        safe_close(f->fd);
                free(f->name);
                free(f->names);
        }
        job_free(j);
}

/* On the loop, after a job of w. */
static void walk_job_done(void *data, int error) {
        WalkJob *j = data;
        TreeWalk *w = j->walk;
        Tree *t;
        Subscription *s;
        AccessSaved saved;
        bool become = false;
        g_autoptr(GArray) pushed = g_array_new(FALSE, FALSE, sizeof(Frame));
        guint k = 0, kx = 0;
        int r;

        if (error == -ESHUTDOWN || !w) {
                job_discard(j);
                return;
        }
        t = w->tree;
        s = watch_table_get_subscription(t->table, w->id);
        w->job = NULL;
        job_unannounce(t, j);
        if (error < 0 && j->error >= 0)
                j->error = error; /* not run: the owner's credentials could not be taken */
        if (s && j->overflow)
                tree_overflow(t, s);
        if (s && j->error >= 0 && j->children->len > 0) {
                /* The kernel checks the owner's right to read at each watch placed. */
                r = access_become(&s->owner->caller, &saved);
                if (r < 0)
                        j->error = r;
                else {
                        become = true;
                        backend_batch(t->backend, true);
                }
        }
        /* In the order the job read them: the deepest first. */
        for (guint i = j->frames->len; i > 0; i--) {
                Frame *f = &g_array_index(j->frames, Frame, i - 1);

                for (; k < j->children->len && g_array_index(j->children, JobChild, k).frame == i - 1; k++) {
                        JobChild *c = &g_array_index(j->children, JobChild, k);

                        if (!s || j->error < 0) {
                                SelfDir d = { .dev = c->st.st_dev, .ino = c->st.st_ino };

                                dir_close(t, c->fd, &d);
                                continue;
                        }
                        r = job_link(w, s, f, c, pushed);
                        if (r < 0)
                                j->error = r;
                }
                for (; kx < j->crossings->len && g_array_index(j->crossings, JobCross, kx).frame == i - 1; kx++) {
                        JobCross *x = &g_array_index(j->crossings, JobCross, kx);

                        if (!s || j->error < 0) {
                                safe_close(x->pfd);
                                continue;
                        }
                        r = job_cross(w, f, x, pushed);
                        if (r < 0)
                                j->error = r;
                }
        }
        if (become) {
                backend_batch(t->backend, false);
                access_restore(&saved);
        }
        /* Back on the stack as they were, what they hold on top; the frames
         * the job closed are done. */
        for (guint i = 0; i < j->frames->len; i++) {
                Frame *f = &g_array_index(j->frames, Frame, i);

                if (f->closed)
                        frame_done(t, f);
                else
                        g_array_append_val(w->frames, *f);
        }
        g_array_append_vals(w->frames, pushed->data, pushed->len);
        if (j->error < 0 && w->error >= 0)
                w->error = j->error;
        job_free(j);

        LIST_REMOVE(walks, t->working, w);
        if (s && w->error >= 0) {
                r = walk_submit(w, s);
                if (r > 0) {
                        LIST_APPEND(walks, t->working, w);
                        return;
                }
                if (r < 0 && w->frames->len > 0) {
                        /* No worker to be had: it goes on from the loop. */
                        LIST_APPEND(walks, t->walks, w);
                        return;
                }
        }
        (void) walk_end(w);
}

/* The file system a job on f waits for. */
static dev_t frame_lane(const Frame *f) {
        return f->cross ? f->lane : f->dir.dev;
}

/*
 * Hands the top of w's stack to a worker. Return: 1 (w->job), 0 if nothing
 * is left to do, or an error of fswork_submit() (the frames stay).
 */
static int walk_submit(TreeWalk *w, Subscription *s) {
        Tree *t = w->tree;
        WalkJob *j;
        dev_t dev;
        guint n;
        int r;

        while (w->frames->len > 0 && g_array_index(w->frames, Frame, w->frames->len - 1).link->dead)
                frame_pop(w); /* left the tree meanwhile */
        if (w->frames->len == 0)
                return 0;
        dev = frame_lane(&g_array_index(w->frames, Frame, w->frames->len - 1));
        for (n = 0; n < w->frames->len && n < JOB_FRAMES; n++) {
                Frame *f = &g_array_index(w->frames, Frame, w->frames->len - 1 - n);

                if (frame_lane(f) != dev || f->link->dead)
                        break;
        }
        j = calloc(1, sizeof(WalkJob));
        if (!j)
                return -ENOMEM;
        *j = (WalkJob) {
                .walk = w,
                .token = ++t->jobs,
                .one_level = w->one_level,
                .frames = g_array_sized_new(FALSE, FALSE, sizeof(Frame), n),
                .children = g_array_new(FALSE, FALSE, sizeof(JobChild)),
                .crossings = g_array_new(FALSE, FALSE, sizeof(JobCross)),
                .buf = malloc(TREE_DENTS_BUF),
        };
        if (!j->buf) {
                job_free(j);
                return -ENOMEM;
        }
        g_array_append_vals(j->frames, &g_array_index(w->frames, Frame, w->frames->len - n), n);
        g_array_set_size(w->frames, w->frames->len - n);
        job_announce(t, j);
        r = fswork_submit(t->fswork, dev, &s->owner->caller, walk_job_run, walk_job_done, j);
        if (r < 0) {
                job_unannounce(t, j);
                g_array_append_vals(w->frames, j->frames->data, j->frames->len);
                job_free(j);
                return r;
        }
        w->job = j;
        return 1;
}

/* w starts in workers (w->frames ready). Return: 1, or 0 and w goes on from the loop. */
static int walk_start_in_worker(TreeWalk *w, Subscription *s) {
        Tree *t = w->tree;

        /* A scan of new directories reports what it finds before the
         * records the kernel queued after it: on the loop, in step with them. */
        if (!t->fswork || w->synthesize || walk_submit(w, s) <= 0)
                return 0;
        LIST_APPEND(walks, t->working, w);
        return 1;
}

/* The root of s, open at fd, read in a worker. Return: 1 (the walk is
 * under way), or 0: w is as it was, for the loop. */
static int walk_below_in_worker(TreeWalk *w, Subscription *s, int fd) {
        const char *name = path_basename(s->path, NULL);
        char *n = NULL;
        int dfd;

        if (!w->tree->fswork || w->synthesize)
                return 0;
        dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (dfd < 0)
                return 0;
        if (*name) {
                n = strdup(name);
                if (!n) {
                        safe_close(dfd);
                        return 0;
                }
        }
        watch_link_hold(s->links);
        g_array_append_val(w->frames, ((Frame) {
                                              .link = s->links,
                                              .fd = dfd,
                                              .quiet = true,
                                              .reopen = true,
                                              .any_parent = n != NULL,
                                              .dir = { .dev = s->links->watch->dev,
                                                       .ino = s->links->watch->ino,
                                                       .name = n,
                                                       .name_len = n ? strlen(n) : 0 },
                                              .name = n,
                                              .path_len = strlen(s->path),
                                      }));
        if (walk_start_in_worker(w, s) > 0)
                return 1;
        frame_pop(w);
        return 0;
}

static int walk_below(Tree *t, Subscription *s, int fd, bool all_or_nothing, bool synthesize, bool one_level,
                      bool rescan, uint64_t now_usec, TreeWalk **ret) {
        TreeWalk *w;
        AccessSaved saved;
        int dfd, r;

        w = walk_new(t, s, synthesize, now_usec);
        if (!w)
                return -ENOMEM;
        w->initial = all_or_nothing;
        w->one_level = one_level;
        w->rescan = rescan;
        if (walk_below_in_worker(w, s, fd) > 0) {
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
                        r = frame_push(w, s, s->links, dfd, &d, strlen(s->path));
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
                          /* rescan= */ false, 0, ret);
}

void tree_rescan(Tree *t, Subscription *s) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        if (!(s->flags & WATCHD_FLAG_RECURSIVE) || s->pending || !s->links || s->fanotify)
                return;
        fd = access_open_as(&s->owner->caller, s->path, /* only_dir= */ true, /* no_follow= */ false, &st);
        if (fd < 0 || st.st_dev != s->links->watch->dev || st.st_ino != s->links->watch->ino)
                return; /* its root moved or went: its own events (still queued) say so */
        r = walk_below(t, s, fd, /* all_or_nothing= */ false, /* synthesize= */ false, /* one_level= */ false,
                       /* rescan= */ true, 0, NULL);
        if (r < 0)
                log_info_errno(r, "Subscription %" PRIu32 " cannot walk its tree again after an overflow: %m.", s->id);
}

void tree_appeared(Tree *t, Subscription *s, int fd, bool report, uint64_t now_usec) {
        bool recursive = s->flags & WATCHD_FLAG_RECURSIVE;
        int r;

        if (!recursive && !report)
                return;
        /* The subscription is placed, and stays: what cannot be walked or
         * reported (a limit, the directory unreadable) is said with
         * Overflow, as for a directory moved into a tree. */
        r = walk_below(t, s, fd, /* all_or_nothing= */ false, report, !recursive, /* rescan= */ false, now_usec, NULL);
        if (r < 0) {
                log_info_errno(r, "Subscription %" PRIu32 " cannot read '%s' (%m); it gets Overflow.", s->id, s->path);
                tree_overflow(t, s);
        }
}

void tree_walk_set_done(TreeWalk *w, TreeWalkDone done, void *userdata) {
        w->done = done;
        w->userdata = userdata;
}

/* The link of s at path (its root or a directory below), or NULL. */
static WatchLink *tree_find(Subscription *s, const char *path) {
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

/* A directory that appeared below a link whose path did not lead to it:
 * tried again once the kernel queue is read empty (tree_retries_run). */
typedef struct TreeRetry {
        uint32_t id;
        WatchLink *parent; /* held */
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
static int add_at(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize, uint64_t now_usec) {
        _cleanup_close_ int pfd = -1;
        char pathbuf[PATH_MAX];
        const char *ppath;
        struct stat st;
        TreeWalk *w;
        char *names;
        Frame frame;

        ppath = watch_link_get_path(parent, pathbuf);
        if (!ppath)
                return -ENAMETOOLONG;
        /* The parent as the link knows it, opened as the owner like everything
         * of its tree: if its path leads elsewhere, a rename of it (or above)
         * is still in the kernel queue. */
        pfd = access_open_as(&s->owner->caller, ppath, /* only_dir= */ true, /* no_follow= */ false, &st);
        if (pfd == -ENOENT || pfd == -ENOTDIR ||
            (pfd >= 0 && (st.st_dev != parent->watch->dev || st.st_ino != parent->watch->ino)))
                return -ESTALE;
        if (pfd < 0)
                return pfd;

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
                .fd = TAKE_FD(pfd),
                .quiet = true,                                 /* O_PATH: its close is no event */
                .dir = { .dev = st.st_dev, .ino = st.st_ino }, /* the parent of what the walk opens */
                .names = names,                                /* the frame owns it now */
                .len = strlen(names) + 1,
                .path_len = strlen(ppath),
                .read = true,
        };
        g_array_append_val(w->frames, frame);
        (void) walk_start(w, NULL); /* a limit gives Overflow (walk_end) */
        return 0;
}

void tree_add(Tree *t, Subscription *s, const char *path, bool synthesize, uint64_t now_usec) {
        const char *name = path_basename(path, NULL);
        _cleanup_free_ char *dir = NULL;
        WatchLink *parent;
        int r;

        dir = path_dirname(path);
        if (!dir) {
                r = -ENOMEM;
                goto overflow;
        }
        parent = tree_find(s, dir);
        if (!parent)
                return; /* its parent left the tree meanwhile */
        r = add_at(t, s, parent, name, synthesize, now_usec);
        if (r == -ESTALE && (!t->retries || t->retries->len < TREE_RETRIES_MAX)) {
                char *n = strdup(name);

                if (n) {
                        if (!t->retries)
                                t->retries = g_array_new(FALSE, FALSE, sizeof(TreeRetry));
                        watch_link_hold(parent);
                        g_array_append_val(t->retries, ((TreeRetry) { s->id, parent, n, synthesize, now_usec }));
                        return;
                }
        }
        if (r >= 0)
                return;
overflow:
        log_info_errno(r, "Subscription %" PRIu32 " cannot follow '%s' (%m); it gets Overflow.", s->id, path);
        tree_overflow(t, s);
}

void tree_retries_run(Tree *t) {
        g_autoptr(GArray) retries = NULL;

        if (!t->retries || t->retries->len == 0)
                return;
        retries = TAKE_PTR(t->retries);
        for (guint k = 0; k < retries->len; k++) {
                TreeRetry *rt = &g_array_index(retries, TreeRetry, k);
                Subscription *s = watch_table_get_subscription(t->table, rt->id);
                int r;

                /* A parent that left the tree, or a subscription that ended, takes the directory along. */
                if (s && !rt->parent->dead) {
                        r = add_at(t, s, rt->parent, rt->name, rt->synthesize, rt->now);
                        if (r < 0) {
                                log_info_errno(r, "Subscription %" PRIu32 " cannot follow '%s' (%m); it gets Overflow.",
                                               s->id, rt->name);
                                tree_overflow(t, s);
                        }
                }
                watch_link_release(rt->parent);
                free(rt->name);
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

typedef struct TreeMove {
        uint32_t id; /* the subscription */
        uint32_t cookie;
        WatchLink *link; /* the moved directory's link (held), or NULL: it was not linked yet */
} TreeMove;

void tree_moved_from(Tree *t, Subscription *s, const char *path, uint32_t cookie) {
        WatchLink *l = tree_find(s, path);

        if (l && watch_link_is_root(l))
                return; /* the root itself: its subscription follows by its path */
        if (!t->moves)
                t->moves = g_array_new(FALSE, FALSE, sizeof(TreeMove));
        if (l)
                watch_link_hold(l);
        g_array_append_val(t->moves, ((TreeMove) { s->id, cookie, l }));
}

bool tree_moves_pending(Tree *t, uint32_t cookie) {
        return t->moves && t->moves->len > 0 && g_array_index(t->moves, TreeMove, 0).cookie == cookie;
}

static void frames_relink(GArray *frames, WatchLink *old, WatchLink *new) {
        for (guint i = 0; i < frames->len; i++) {
                Frame *f = &g_array_index(frames, Frame, i);

                if (f->link == old)
                        f->link = new;
        }
}

/* A walk in a moved link goes on in it: its frames follow a reallocation
 * (a job's too: the worker does not look at links). */
static void walks_relink(Tree *t, WatchLink *old, WatchLink *new) {
        LIST_FOREACH(walks, w, t->walks)
                frames_relink(w->frames, old, new);
        LIST_FOREACH(walks, w, t->working) {
                frames_relink(w->frames, old, new);
                if (w->job)
                        frames_relink(w->job->frames, old, new);
        }
}

void tree_moved_to(Tree *t, Subscription *s, const char *path, uint32_t cookie, uint64_t now_usec) {
        const char *name = path_basename(path, NULL);
        _cleanup_free_ char *dir = NULL;
        WatchLink *parent, *l, *n;
        guint k;

        for (k = 0; t->moves && k < t->moves->len; k++) {
                TreeMove *mv = &g_array_index(t->moves, TreeMove, k);

                if (mv->id == s->id && mv->cookie == cookie)
                        break;
        }
        if (!t->moves || k == t->moves->len)
                return tree_add(t, s, path, /* synthesize= */ false, now_usec); /* from elsewhere */

        l = g_array_index(t->moves, TreeMove, k).link;
        g_array_remove_index_fast(t->moves, k);
        if (!l)
                /* Created and moved before it was linked: nothing in it was reported. */
                return tree_add(t, s, path, /* synthesize= */ true, now_usec);

        dir = path_dirname(path);
        parent = dir ? tree_find(s, dir) : NULL;
        if (l->dead || !parent) {
                if (!l->dead)
                        (void) watch_table_unlink(t->table, l);
                watch_link_release(l);
                return tree_add(t, s, path, /* synthesize= */ false, now_usec);
        }
        n = watch_table_move_link(t->table, l, parent, name, strlen(name));
        if (!n) {
                (void) watch_table_unlink(t->table, l);
                watch_link_release(l);
                return tree_add(t, s, path, /* synthesize= */ false, now_usec);
        }
        if (n != l)
                walks_relink(t, l, n);
        watch_link_release(n);
}

void tree_moves_end(Tree *t) {
        if (!t->moves || t->moves->len == 0)
                return;
        for (guint k = 0; k < t->moves->len; k++) {
                WatchLink *l = g_array_index(t->moves, TreeMove, k).link;

                if (!l)
                        continue;
                /* Moved out of the tree: unlinked with everything below it. */
                if (!l->dead)
                        (void) watch_table_unlink(t->table, l);
                watch_link_release(l);
        }
        g_array_set_size(t->moves, 0);
}

bool tree_walks_run(Tree *t, uint64_t budget_usec) {
        /* One walk per slice, round robin: one client's huge tree does not
         * hold back another's small one. */
        TreeWalk *w = LIST_POP(walks, t->walks);

        if (!w)
                return false;
        if (walk_run(w, now_usec() + budget_usec))
                (void) walk_end(w);
        else
                LIST_APPEND(walks, t->walks, w);
        return t->walks != NULL;
}

void tree_set_fswork(Tree *t, FsWork *fswork) {
        t->fswork = fswork;
}

static void tree_walks_free(Tree *t) {
        TreeWalk *w;

        /* At exit, after the workers (fswork_free()): a job still in one (its
         * file system does not answer) is left to it, with its fds; the links
         * go before the table. One fswork_free() dropped was discarded
         * (job_discard()): freed here. */
        while ((w = LIST_POP(walks, t->working))) {
                if (w->job && w->job->discarded) {
                        /* Its completion came from fswork_free(): the frames are done here. */
                        for (guint i = 0; i < w->job->frames->len; i++)
                                frame_done(t, &g_array_index(w->job->frames, Frame, i));
                        job_free(w->job);
                        w->job = NULL;
                } else if (w->job) {
                        for (guint i = 0; i < w->job->frames->len; i++)
                                g_clear_pointer(&g_array_index(w->job->frames, Frame, i).link, watch_link_release);
                        w->job->walk = NULL;
                        w->job = NULL;
                }
                LIST_APPEND(walks, t->walks, w);
        }

        while ((w = LIST_POP(walks, t->walks))) {
                w->error = -ECANCELED;
                while (w->frames->len > 0)
                        frame_pop(w);
                if (w->done)
                        w->done(w->id, -ECANCELED, w->userdata);
                walk_free(w);
        }
}
