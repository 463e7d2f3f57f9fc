/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "access.h"
#include "client.h"
#include "error.h"
#include "event_bits.h"
#include "fswork.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "path.h"
#include "tree.h"
#include "tree_internal.h"

/*
 * tree_jobs - a RECURSIVE walk's reads in workers (split out of tree.c;
 * the opens of a tree's directories by path are in tree_open.c)
 *
 * With a worker pool (tree_set_fswork()), what enters the file system runs
 * in a job on the lane of the directories' file system, as the owner: the
 * opens, the getdents64 calls, the fstatat of entries of unknown type, the
 * closes. The loop keeps what touches its tables: linking. Placing a watch
 * through an fd already open looks nothing up, but the kernel checks the
 * owner's right to read, which FUSE with default_permissions answers from
 * its attributes (a request when they are stale), NFS from its access
 * cache, and a batch's fchdir() asks FUSE without it (FUSE_ACCESS). So on a
 * file system that may stop answering (TreeOps.may_stop; a crossing's
 * hint) the job places the watches of what it opens as well
 * (watch_table_place()), and the completion links with them
 * (WatchPlaced, watch_table.h): a link whose watch may have lost bits
 * meanwhile tells its subscription (Overflow), one whose watch went is
 * walked again (tree_rescan()).
 *
 * A job takes up to JOB_FRAMES frames from the top of the walk's stack (one
 * file system), and, the deepest first, reads those not read yet and opens
 * their subdirectories, up to JOB_OPENS in all; a frame whose names are all
 * opened is closed there. Its completion links what was opened and pushes
 * those, not read: the next job reads them, after their watches are in
 * place, so nothing made in them meanwhile is missed (the order of a walk on
 * the loop). A walk that reports nothing has up to WALK_JOBS jobs out, on
 * frames of its stack none of the others has: one reads in a worker while
 * the loop links what another opened (the lane runs them one after the
 * other); a reporting walk has one at a time, its reports in order.
 *
 * A subdirectory that is a mount point (openat2 RESOLVE_NO_XDEV says so) is
 * not opened in the job: its open waits for the file system mounted there,
 * so a job of that file system's lane opens it, through an O_PATH fd on its
 * parent. A stopped FUSE daemon or NFS server inside a tree holds its own
 * lane, not the lane of the tree around it.
 *
 * A walk that reports what it finds (a scan of new directories: tree_add()
 * with synthesize, tree_appeared() with report) runs its first slice on
 * the loop: its records must come before the kernel's records read after
 * it, which a job's completion, later, would not keep. What it leaves
 * after that slice (a large new tree) goes on in jobs
 * (tree_walk_go_on_in_worker()), whose records come after later records,
 * as a later slice's did: a job's reads keep every entry (Frame.entries),
 * its completion reports them. A directory a job linked is read by a
 * later job, after the loop may have read the kernel's records of names
 * made or gone in it meanwhile: those are noted (Tree.unread,
 * tree_unread_note()) and not reported again (a name gone after the job read
 * it would come back). A key of Tree.unread is shared by every frame of its
 * directory, and each looks only at what was noted after it took the key
 * (Frame.unread_since, Frame.told_since): a name noted before, for another
 * frame, is not this one's to skip. The opens of a directory by its path
 * (tree_add_at()'s parent, tree_rescan()'s root) are jobs too (TreeOpen,
 * tree_open.c), in a lane of the owner's uid; for a scan, with
 * its owner's records held meanwhile (hold.h).
 *
 * On a file system that may stop answering (TreeOps.may_stop: FUSE, a
 * network one), the first slice of a new directory's scan would wait on
 * the loop for it (its open, a FUSE_OPENDIR, is never answered from a
 * cache). There the scan runs in jobs from its start (TreeWalk.off_loop;
 * tree_appeared()'s too, holding with the hold of the probe that found the
 * path, or telling its subscription when that hold is over):
 * a first job opens the new directory below its parent's fd, its
 * completion links it, a second reads it, and so on, while its owner's
 * records stay held (TreeWalk.hold, the open's): what the scan reports goes
 * before them, as a first slice's did, until the walk ends or, past
 * WALK_HOLD_USEC, a job that read completes; then the rest comes after
 * later records, as after a first slice. A file system that does not
 * answer holds the lane and the hold: at HOLD_USEC the owner's records go
 * on and the subscription gets Overflow. Its names are those the loop
 * knows when the read is reported: in a burst of renames read late, a
 * name the scan reports may be one the directory had before a rename
 * that follows it in the records.
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
        RemoteHint hint;    /* a mount point's root (a crossing frame's): what it is on */
        WatchPlaced placed; /* its watch, placed by the job (watch_table.h) */
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
        uint64_t token; /* its announcements (self_events.h) */
        bool one_level;
        bool report;       /* a reporting walk's: its reads keep every entry (Frame.entries) */
        GArray *frames;    /* Frame: taken from the top of the walk's stack, the deepest last */
        GArray *children;  /* JobChild: the subdirectories it opened, in order */
        GArray *crossings; /* JobCross */
        bool overflow;     /* a name it did not follow (too long a path) */
        bool read;         /* it read a directory (not only opened names of frames read before) */
        bool discarded;    /* fswork_free() called its completion: tree_walks_free() frees it */
        /* On a file system that may stop answering, the job places the
         * watches of what it opens (watch_table.h's WatchPlaced): */
        WatchTable *table;   /* not NULL: it may (and counts in watch_table_placing()) */
        bool place;          /* the frames' file system may stop answering (a crossing's: its hint says) */
        uint32_t place_mask; /* what a directory of the walk's subscription needs */
        int error;
        uint8_t *buf; /* TREE_DENTS_BUF */
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
                                self_events_announce(t->self, j->token, own->wd, NULL, 0, false, open, JOB_ACCESS_MANY,
                                                     1);
                        self_events_announce(t->self, j->token, own->wd, NULL, 0, true, JOB_OPENS, 0, 0);
                }
                if (!reads || f->dir.name_len == 0)
                        continue;
                if (f->any_parent)
                        self_events_announce(t->self, j->token, -1, f->dir.name, f->dir.name_len, false, open,
                                             JOB_ACCESS_MANY, 1);
                else if (f->dir.has_parent) {
                        pw = watch_table_find_watch(t->table, f->dir.pdev, f->dir.pino);
                        if (pw && pw->wd >= 0 && pw->is_dir)
                                self_events_announce(t->self, j->token, pw->wd, f->dir.name, f->dir.name_len, false,
                                                     open, JOB_ACCESS_MANY, 1);
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
        g_autoptr(GByteArray) names = NULL, entries = NULL;
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
                        int kind = tree_dirent_kind(f->fd, de, nl);

                        off += de->d_reclen;
                        if (kind >= 0 && j->report) {
                                guint8 k = kind > 0 ? 'D' : 'F';

                                if (!entries)
                                        entries = g_byte_array_new();
                                g_byte_array_append(entries, &k, 1);
                                g_byte_array_append(entries, (const guint8 *) de->d_name, (guint) nl + 1);
                        }
                        if (kind <= 0 || j->one_level)
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
        if (entries) {
                f->entries = (char *) g_byte_array_steal(entries, &len);
                f->entries_len = len;
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
                        j->read = true;
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
                        /* Another file system: what kind it is (an fstatfs, never
                         * answered from a cache on FUSE) is asked here, not as the
                         * loop links it (remote.h). */
                        if (f->cross)
                                remote_hint_probe(c.fd, &c.st, &c.hint);
                        if (j->table && (f->cross ? c.hint.valid && c.hint.kind != FS_LOCAL : j->place))
                                watch_table_place(j->table, c.fd, &c.st, j->place_mask, &c.placed);
                        opens++;
                        g_array_append_val(j->children, c);
                }
                if (j->error >= 0 && f->pos >= f->len) {
                        safe_close(f->fd);
                        f->closed = true;
                }
        }
}

/* What a job read of f's directory (a reporting walk's): reported as
 * IN_CREATE, but the names the kernel reported in it since it was linked. */
static void job_report(Tree *t, TreeWalk *w, Subscription *s, Frame *f) {
        char pathbuf[PATH_MAX];
        const char *path;

        if (!f->entries || !(s->mask & IN_CREATE) || f->link->dead)
                return;
        path = watch_link_get_path(f->link, pathbuf);
        if (!path)
                return;
        for (size_t off = 0; off < f->entries_len;) {
                bool is_dir = f->entries[off] == 'D';
                const char *name = f->entries + off + 1;
                size_t nl = strlen(name);

                off += 1 + nl + 1;
                if (tree_unread_noted(t, f, name))
                        continue;
                client_queue_event(s, IN_CREATE | (is_dir ? IN_ISDIR : 0), 0, path, name, nl, w->now);
                tree_scanned_add(t, s->id, path, name, nl);
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
                tree_dir_close(t, c->fd, &d); /* left the tree meanwhile */
                return 0;
        }
        /* The kernel told of this name while the job was out (renamed,
         * deleted, made again): what the job opened may be known by another
         * name now, and linked under this one it would keep a name it no
         * longer has. The records of the name link what is there (as they
         * do for a name the job never saw). */
        if (tree_unread_noted_since(&t->unread, f->told, f->told_since, c->name)) {
                tree_dir_close(t, c->fd, &d);
                return 0;
        }
        if (c->hint.valid && t->ops.hint)
                t->ops.hint(&c->hint, t->userdata);
        watch_table_set_placed(t->table, &c->placed);
        r = watch_table_link(t->table, s, f->link, c->fd, &c->st, c->name, nl, &l);
        watch_table_set_placed(t->table, NULL);
        if (c->hint.valid && t->ops.hint)
                t->ops.hint(NULL, t->userdata);
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
                tree_dir_close(t, c->fd, &d);
                /* -EEXIST: seen already (a loop, or linked by an event's walk first). */
                return r == -EEXIST ? 0 : r;
        }
        name = strndup(c->name, nl);
        if (!name) {
                tree_dir_close(t, c->fd, &d);
                return -ENOMEM;
        }
        watch_link_hold(l);
        d.name = name;
        g_array_append_val(pushed,
                           ((Frame) {
                                   .link = l,
                                   .fd = c->fd,
                                   .dir = d,
                                   .name = name,
                                   .path_len = f->path_len + 1 + nl,
                           }));
        if (w->synthesize)
                tree_unread_add(t, w->id, &g_array_index(pushed, Frame, pushed->len - 1));
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

static int walk_fill(TreeWalk *w, Subscription *s);

static unsigned walk_jobs_out(const TreeWalk *w) {
        unsigned n = 0;

        for (unsigned i = 0; i < WALK_JOBS; i++)
                n += w->jobs[i] != NULL;
        return n;
}

/* j, completed, is no longer out. */
static void walk_job_drop(TreeWalk *w, WalkJob *j) {
        for (unsigned i = 0; i < WALK_JOBS; i++)
                if (w->jobs[i] == j)
                        w->jobs[i] = NULL;
}

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
                free(f->entries);
                free(f->unread);
                free(f->told);
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
        bool become = false, applied = false, lost = false, again = false;
        Hold *previous = NULL;
        g_autoptr(GArray) pushed = g_array_new(FALSE, FALSE, sizeof(Frame));
        guint k = 0, kx = 0;
        int r;

        if (error == -ESHUTDOWN || !w) {
                job_discard(j);
                return;
        }
        t = w->tree;
        s = watch_table_get_subscription(t->table, w->id);
        walk_job_drop(w, j);
        job_unannounce(t, j);
        if (error < 0 && j->error >= 0)
                j->error = error; /* not run: the owner's credentials could not be taken */
        if (w->error < 0 && j->error >= 0)
                j->error = w->error; /* another job of w failed: nothing more is linked */
        if (s && j->overflow)
                tree_overflow(t, s);
        /* What it read is reported (a directory before what is below it,
         * siblings as listed), after the records read meanwhile, as a later
         * slice on the loop reports; in a walk with a hold (its first
         * directory read, and the rest of a small new tree, up to
         * WALK_HOLD_USEC), before the owner's records that waited for it, as
         * a first slice on the loop did. */
        if (w->hold && t->holds) {
                previous = holds_apply_begin(t->holds, w->hold);
                applied = true;
        }
        for (guint i = 0; i < j->frames->len; i++) {
                Frame *f = &g_array_index(j->frames, Frame, i);

                if (s && f->entries)
                        job_report(t, w, s, f);
                free(f->entries);
                f->entries = NULL;
                f->entries_len = 0;
                if (f->read)
                        tree_unread_unref(&t->unread, &f->unread);
        }
        if (applied)
                holds_apply_end(t->holds, previous);
        if (w->hold && j->read && now_usec() >= w->hold_until)
                /* What waited goes on: what is read after comes after it, as
                 * after a first slice on the loop. */
                w->hold = hold_unref(w->hold);
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

                                tree_dir_close(t, c->fd, &d);
                                continue;
                        }
                        r = job_link(w, s, f, c, pushed);
                        lost = lost || c->placed.lost;
                        if (r == -WATCHD_E_PLACED_GONE)
                                /* Its placed watch went meanwhile: placed again by a walk anew. */
                                again = true;
                        else if (r < 0)
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
        if (j->table) {
                for (guint i = 0; i < j->children->len; i++)
                        watch_table_placed_done(t->table, &g_array_index(j->children, JobChild, i).placed);
                watch_table_placing(t->table, false);
        }
        if (s && (lost || again))
                tree_overflow(t, s);
        /* Back on the stack as they were, what they hold on top; the frames
         * the job closed are done. */
        for (guint i = 0; i < j->frames->len; i++) {
                Frame *f = &g_array_index(j->frames, Frame, i);

                tree_unread_unref(&t->unread, &f->told);
                if (f->closed)
                        tree_frame_done(t, f);
                else
                        g_array_append_val(w->frames, *f);
        }
        g_array_append_vals(w->frames, pushed->data, pushed->len);
        if (j->error < 0 && w->error >= 0)
                w->error = j->error;
        job_free(j);
        if (s && again)
                t->rescan(t, s); /* tree_rescan(), a layer above (Tree.rescan) */

        r = s && w->error >= 0 ? walk_fill(w, s) : 0;
        if (walk_jobs_out(w) > 0)
                return; /* still on t->working: the last job's completion goes on */
        LIST_REMOVE(walks, t->working, w);
        if (r < 0 && w->frames->len > 0) {
                /* No worker to be had: it goes on from the loop. */
                LIST_APPEND(walks, t->walks, w);
                return;
        }
        (void) tree_walk_end(w);
}

/* The file system a job on f waits for. */
static dev_t frame_lane(const Frame *f) {
        return f->cross ? f->lane : f->dir.dev;
}

/*
 * Hands the top of w's stack to a worker (a free slot of w->jobs). Return:
 * 1, 0 if nothing is left to do, or an error of fswork_submit() (the frames
 * stay).
 */
static int walk_submit(TreeWalk *w, Subscription *s) {
        Tree *t = w->tree;
        WalkJob *j;
        bool cross = false;
        unsigned slot;
        dev_t dev;
        guint n;
        int r;

        while (w->frames->len > 0 && g_array_index(w->frames, Frame, w->frames->len - 1).link->dead)
                tree_frame_pop(w); /* left the tree meanwhile */
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
                .report = w->synthesize,
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
        /* What the kernel tells of their names while the job is out. */
        for (guint i = 0; i < j->frames->len; i++) {
                Frame *f = &g_array_index(j->frames, Frame, i);

                f->told = tree_unread_ref_link(t, w->id, f->link);
                f->told_since = t->unread.seq;
                if (!f->cross)
                        j->place = j->place || tree_may_stop(t, f->link); /* one file system */
                cross = cross || f->cross;
        }
        if ((j->place || cross) && watch_table_can_place(t->table)) {
                j->table = t->table;
                j->place_mask = watch_table_need_mask(s->mask, s->flags, /* is_dir= */ true, /* root= */ false);
        }
        job_announce(t, j);
        r = fswork_submit(t->fswork, dev, &s->owner->caller, walk_job_run, walk_job_done, j);
        if (r < 0) {
                for (guint i = 0; i < j->frames->len; i++)
                        tree_unread_unref(&t->unread, &g_array_index(j->frames, Frame, i).told);
                job_unannounce(t, j);
                g_array_append_vals(w->frames, j->frames->data, j->frames->len);
                job_free(j);
                return r;
        }
        if (j->table)
                watch_table_placing(t->table, true);
        slot = 0;
        while (w->jobs[slot])
                slot++;
        assert(slot < WALK_JOBS); /* walk_fill() submits only with a slot free */
        w->jobs[slot] = j;
        w->worked = true;
        return 1;
}

/*
 * Jobs for w while it has frames and room for them (WALK_JOBS). Return:
 * the jobs out (w belongs on t->working), 0 if none is and nothing is left
 * to do, or, none out, the error of walk_submit() (the frames stay).
 */
static int walk_fill(TreeWalk *w, Subscription *s) {
        unsigned out;
        int r = 0;

        for (;;) {
                out = walk_jobs_out(w);
                if (out > 0 && (out >= WALK_JOBS || w->synthesize))
                        break;
                if (out > 0 && w->frames->len > WALK_JOBS_FRAMES) {
                        if (!w->capped)
                                log_debug("Subscription %" PRIu32 "'s walk holds %u directories open on its stack, "
                                          "over %u: no more jobs out until it holds fewer.",
                                          w->id, w->frames->len, WALK_JOBS_FRAMES);
                        w->capped = true;
                        break;
                }
                r = walk_submit(w, s);
                if (r <= 0)
                        break;
        }
        return out > 0 ? (int) out : r;
}

/* w starts in workers (w->frames ready). Return: 1, or 0 and w goes on from the loop. */
int tree_walk_start_in_worker(TreeWalk *w, Subscription *s) {
        Tree *t = w->tree;

        /* A scan of new directories reports what its first slice finds
         * before the records the kernel queued after it: on the loop, in
         * step with them, and the rest goes on in workers after it
         * (tree_walk_go_on_in_worker()); or, off_loop, in a job while its
         * owner's records wait (w->hold), or with its subscription told. */
        if (!t->fswork || (w->synthesize && !w->off_loop) || walk_fill(w, s) <= 0)
                return 0;
        LIST_APPEND(walks, t->working, w);
        return 1;
}

int tree_walk_go_on_in_worker(TreeWalk *w, Subscription *s) {
        Tree *t = w->tree;

        /* What it reports from here on comes after later records, as a later
         * slice's did; a job's reads keep every entry for its completion
         * to report (Frame.entries). */
        if (!t->fswork || walk_fill(w, s) <= 0)
                return 0;
        LIST_APPEND(walks, t->working, w);
        return 1;
}

/* The root of s, open at fd, read in a worker. Return: 1 (the walk is
 * under way), or 0: w is as it was, for the loop. */
int tree_walk_below_in_worker(TreeWalk *w, Subscription *s, int fd) {
        const char *name = path_basename(s->path, NULL);
        char *n = NULL;
        int dfd;

        if (!w->tree->fswork || (w->synthesize && !w->off_loop))
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
        g_array_append_val(w->frames,
                           ((Frame) {
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
        if (tree_walk_start_in_worker(w, s) > 0)
                return 1;
        tree_frame_pop(w);
        return 0;
}


GArray *tree_job_frames(WalkJob *j) {
        return j->frames;
}

/* At exit, after the workers (fswork_free()): the walks in workers go back
 * to the loop's list, to be ended with it (tree_walks_free()). */
void tree_jobs_free(Tree *t) {
        TreeWalk *w;

        /* A job still in a worker (its file system does not answer) is left
         * to it, with its fds; the links go before the table. One
         * fswork_free() dropped was discarded (job_discard()): freed here. */
        while ((w = LIST_POP(walks, t->working))) {
                for (unsigned k = 0; k < WALK_JOBS; k++) {
                        WalkJob *j = w->jobs[k];

                        if (!j)
                                continue;
                        if (j->discarded) {
                                /* Its completion came from fswork_free(): the frames are done here. */
                                for (guint i = 0; i < j->frames->len; i++)
                                        tree_frame_done(t, &g_array_index(j->frames, Frame, i));
                                job_free(j);
                        } else {
                                for (guint i = 0; i < j->frames->len; i++)
                                        g_clear_pointer(&g_array_index(j->frames, Frame, i).link, watch_link_release);
                                j->walk = NULL;
                        }
                        w->jobs[k] = NULL;
                }
                LIST_APPEND(walks, t->walks, w);
        }
}
