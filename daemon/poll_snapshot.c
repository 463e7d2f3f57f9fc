/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * poll_snapshot - a directory's names and their attributes, and what changed
 *
 * A snapshot is read a system call at a time (PollReader: open, each
 * getdents64, each name's statx, with AT_STATX_FORCE_SYNC so that NFS and
 * FUSE ask the server), so a large directory costs several runs of the
 * poller, not one long one; its names are kept sorted, and two snapshots of
 * a directory are compared name by name into Changes (gone, appeared,
 * modified), which poll_round.c pairs into moves across a round's directories.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "event_bits.h"
#include "macro.h"
#include "poll_snapshot.h"

#define STATX_WANTED \
        (STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_INO | STATX_SIZE | STATX_MTIME | STATX_CTIME)
#define GETDENTS_BUFFER (32u * 1024u)

/* ---- snapshots ---- */

static void entry_done(PollEntry *e) {
        free(e->name);
        e->name = NULL;
}

void poll_snapshot_done(PollSnapshot *s) {
        for (size_t i = 0; i < poll_snapshot_size(s); i++)
                entry_done(poll_snapshot_entry(s, i));
        if (s->entries)
                g_array_unref(s->entries);
        *s = (PollSnapshot) {};
}

static int entry_cmp(const void *a, const void *b) {
        return strcmp(((const PollEntry *) a)->name, ((const PollEntry *) b)->name);
}

/* The index of name, or -(where it would go) - 1. */
static ssize_t poll_snapshot_find(const PollSnapshot *s, const char *name) {
        size_t lo = 0, hi = poll_snapshot_size(s);

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(poll_snapshot_entry(s, mid)->name, name);

                if (c == 0)
                        return (ssize_t) mid;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -(ssize_t) lo - 1;
}

/* s's array, made at its first entry. */
static GArray *snapshot_entries(PollSnapshot *s) {
        if (!s->entries)
                s->entries = g_array_new(FALSE, FALSE, sizeof(PollEntry));
        return s->entries;
}

/* Puts *e (taking its name) in its place, replacing an entry of that name. */
static int poll_snapshot_put(PollSnapshot *s, PollEntry *e) {
        ssize_t i = poll_snapshot_find(s, e->name);
        size_t at;

        if (i >= 0) {
                entry_done(poll_snapshot_entry(s, i));
                *poll_snapshot_entry(s, i) = *e;
                e->name = NULL;
                return 0;
        }
        at = (size_t) (-i - 1);
        g_array_insert_val(snapshot_entries(s), at, *e);
        e->name = NULL;
        return 0;
}

static void poll_snapshot_remove(PollSnapshot *s, const char *name) {
        ssize_t i = poll_snapshot_find(s, name);

        if (i < 0)
                return;
        entry_done(poll_snapshot_entry(s, i));
        g_array_remove_index(s->entries, (guint) i);
}

static int64_t ts_ns(const struct statx_timestamp *t) {
        return t->tv_sec * INT64_C(1000000000) + t->tv_nsec;
}

/* statx of name in dirfd into *e (name untouched). Return: 0, or -errno. */
static int entry_stat(int dirfd, const char *name, PollIo *io, PollEntry *e) {
        struct statx stx;

        io->stats++;
        if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_FORCE_SYNC, STATX_WANTED, &stx) < 0)
                return negative_errno();
        e->ino = stx.stx_ino;
        e->mode = stx.stx_mode;
        e->uid = stx.stx_uid;
        e->gid = stx.stx_gid;
        e->size = stx.stx_size;
        e->mtime_ns = ts_ns(&stx.stx_mtime);
        e->ctime_ns = ts_ns(&stx.stx_ctime);
        e->no_stat = false;
        return 0;
}

/* ---- reading a directory, a system call at a time ---- */

/* Puts name of dirfd's directory into s as it is now: stat'ed again, or
 * taken out if gone; left as it was if it cannot be stat'ed. Return: 0,
 * -ENOMEM. */
int poll_snapshot_restat(PollSnapshot *s, int dirfd, const char *name, PollIo *io) {
        PollEntry e = {};
        int k;

        k = entry_stat(dirfd, name, io, &e);
        if (k == -ENOENT || k == -ENOTDIR)
                poll_snapshot_remove(s, name);
        else if (k == 0) {
                e.name = strdup(name);
                if (!e.name || poll_snapshot_put(s, &e) < 0) {
                        entry_done(&e);
                        return -ENOMEM;
                }
        }
        return 0;
}

static void reader_hook(PollReader *r, uint32_t what) {
        if (r->hook.fn)
                r->hook.fn(what, r->hook.data);
}

static void poll_reader_close(PollReader *r) {
        if (r->dfd >= 0) {
                r->dfd = safe_close(r->dfd);
                reader_hook(r, IN_CLOSE_NOWRITE);
        }
}

void poll_reader_done(PollReader *r) {
        PollReadHook hook = r->hook;

        poll_reader_close(r);
        poll_snapshot_done(&r->snap);
        if (r->dirty)
                g_hash_table_destroy(r->dirty);
        *r = (PollReader) { .dfd = -1, .hook = hook };
}

void poll_reader_init(PollReader *r, const PollReadHook *hook) {
        *r = (PollReader) { .dfd = -1 };
        if (hook)
                r->hook = *hook;
}

static uint32_t dtype_to_mode(unsigned char t) {
        switch (t) {
        case DT_DIR:
                return S_IFDIR;
        case DT_REG:
                return S_IFREG;
        case DT_LNK:
                return S_IFLNK;
        case DT_FIFO:
                return S_IFIFO;
        case DT_SOCK:
                return S_IFSOCK;
        case DT_CHR:
                return S_IFCHR;
        case DT_BLK:
                return S_IFBLK;
        default:
                return 0;
        }
}

/* Appends the names of one getdents64 buffer. */
static int reader_take_names(PollReader *r, const char *buf, size_t len) {
        for (size_t off = 0; off < len;) {
                const struct dirent64 *de = (const struct dirent64 *) (buf + off);
                PollEntry e;

                off += de->d_reclen;
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                e = (PollEntry) {
                        .name = strdup(de->d_name),
                        .ino = de->d_ino,
                        .mode = dtype_to_mode(de->d_type),
                        .no_stat = true,
                };
                if (!e.name)
                        return -ENOMEM;
                g_array_append_val(snapshot_entries(&r->snap), e);
        }
        return 0;
}

/*
 * One step of reading the directory at fd: open, one getdents64, or one
 * statx, as long as *budget lasts. Return: 1 when the snapshot is whole,
 * 0 when the budget ran out first, -errno when the directory cannot be read.
 */
int poll_reader_step(PollReader *r, int fd, unsigned *budget, PollIo *io) {
        for (;; (*budget)--) {
                bool dirty = r->dirty && g_hash_table_size(r->dirty) > 0;

                if (r->listed && r->stat_next >= poll_snapshot_size(&r->snap) && !dirty) {
                        poll_reader_close(r);
                        return 1;
                }
                if (*budget == 0)
                        return 0;

                if (r->dfd < 0) {
                        /* Opened afresh each time: NFS checks the directory
                         * again on open (close-to-open), and permission is
                         * checked with the credentials of now. */
                        io->opens++;
                        r->dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                        if (r->dfd < 0)
                                return negative_errno();
                        reader_hook(r, IN_OPEN);
                } else if (!r->checked) {
                        struct statx stx;

                        /* Its attributes from the server: a changed
                         * directory's cached listing is then dropped. */
                        io->stats++;
                        if (statx(r->dfd, "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC, STATX_NLINK, &stx) < 0)
                                return negative_errno();
                        if ((stx.stx_mask & STATX_NLINK) && stx.stx_nlink == 0)
                                return -ENOENT; /* removed, and held open by us */
                        r->checked = true;
                } else if (!r->listed) {
                        char buf[GETDENTS_BUFFER];
                        long n;
                        int k;

                        io->getdents++;
                        n = syscall(SYS_getdents64, r->dfd, buf, sizeof(buf));
                        if (n < 0)
                                return negative_errno();
                        reader_hook(r, IN_ACCESS);
                        if (n == 0) {
                                r->listed = true;
                                if (poll_snapshot_size(&r->snap) > 1)
                                        g_array_sort(r->snap.entries, entry_cmp);
                                continue;
                        }
                        k = reader_take_names(r, buf, (size_t) n);
                        if (k < 0)
                                return k;
                } else if (r->stat_next < poll_snapshot_size(&r->snap)) {
                        PollEntry *e = poll_snapshot_entry(&r->snap, r->stat_next);
                        int k = entry_stat(r->dfd, e->name, io, e);

                        if (k == -ENOENT || k == -ENOTDIR) {
                                /* Gone between the listing and now. */
                                poll_snapshot_remove(&r->snap, e->name);
                                continue;
                        }
                        /* Any other failure (EACCES without search
                         * permission...): the name stays with what getdents
                         * said. */
                        r->stat_next++;
                } else {
                        /* A name the kernel reported while the directory was
                         * being read: what was listed of it may be older than
                         * what the kernel reported, so it is looked at again. */
                        GHashTableIter it;
                        gpointer key;

                        g_hash_table_iter_init(&it, r->dirty);
                        if (!g_hash_table_iter_next(&it, &key, NULL))
                                continue;
                        if (poll_snapshot_restat(&r->snap, r->dfd, key, io) < 0)
                                return -ENOMEM;
                        g_hash_table_iter_remove(&it);
                }
        }
}

int poll_snapshot_read(int dirfd, PollIo *io, PollSnapshot *ret) {
        PollReader r;
        int k;

        poll_reader_init(&r, NULL);
        do {
                unsigned budget = UINT_MAX;

                k = poll_reader_step(&r, dirfd, &budget, io);
        } while (k == 0);
        if (k < 0) {
                poll_reader_done(&r);
                return k;
        }
        *ret = r.snap;
        r.snap = (PollSnapshot) {};
        poll_reader_done(&r);
        return 0;
}

/* ---- comparing two snapshots ---- */

/* What changed in an entry that kept its name and inode (IN_MODIFY, IN_ATTRIB or 0). */
uint32_t poll_entry_changes(const PollEntry *o, const PollEntry *n, bool moved) {
        bool owner;

        if (o->no_stat || n->no_stat)
                return 0;
        owner = o->mode != n->mode || o->uid != n->uid || o->gid != n->gid;
        /* A directory's size and times follow its contents, which the
         * kernel does not report on its parent either. */
        if (S_ISDIR(n->mode))
                return owner ? IN_ATTRIB : 0;
        if (o->size != n->size || o->mtime_ns != n->mtime_ns)
                return IN_MODIFY;
        /* A rename changes the ctime of what was renamed on most file systems. */
        if (owner || (!moved && o->ctime_ns != n->ctime_ns))
                return IN_ATTRIB;
        return 0;
}

static Change *change_new(ChangeKind kind, PollDir *d, const PollEntry *before, const PollEntry *after) {
        const PollEntry *e = after ?: before;
        Change *c = calloc(1, sizeof(Change));

        if (!c)
                return NULL;
        c->name = strdup(e->name);
        if (!c->name) {
                free(c);
                return NULL;
        }
        c->kind = kind;
        c->dir = d;
        c->ino = e->ino;
        c->mode = e->mode;
        if (before)
                c->before = *before;
        if (after)
                c->after = *after;
        c->before.name = c->after.name = NULL;
        return c;
}

void poll_change_free(gpointer p) {
        Change *c = p;

        free(c->name);
        free(c);
}

static int add_change(GPtrArray *out, ChangeKind kind, PollDir *d, const PollEntry *before, const PollEntry *after,
                      uint32_t mask) {
        Change *c = change_new(kind, d, before, after);

        if (!c)
                return -ENOMEM;
        c->mask = mask;
        g_ptr_array_add(out, c);
        return 0;
}

bool poll_same_type(uint32_t a, uint32_t b) {
        return (a & S_IFMT) == (b & S_IFMT);
}

/* Appends to out what changed from o to n in d. */
int poll_snapshot_diff(PollDir *d, const PollSnapshot *o, const PollSnapshot *n, GPtrArray *out) {
        size_t i = 0, j = 0, on = poll_snapshot_size(o), nn = poll_snapshot_size(n);
        int r = 0;

        while (r >= 0 && (i < on || j < nn)) {
                int c = i >= on ? 1 :
                        j >= nn ? -1 :
                                  strcmp(poll_snapshot_entry(o, i)->name, poll_snapshot_entry(n, j)->name);

                if (c < 0)
                        r = add_change(out, CHANGE_GONE, d, poll_snapshot_entry(o, i++), NULL, 0);
                else if (c > 0)
                        r = add_change(out, CHANGE_APPEARED, d, NULL, poll_snapshot_entry(n, j++), 0);
                else {
                        const PollEntry *a = poll_snapshot_entry(o, i++), *b = poll_snapshot_entry(n, j++);
                        uint32_t m;

                        if (a->ino != b->ino || !poll_same_type(a->mode, b->mode)) {
                                r = add_change(out, CHANGE_GONE, d, a, NULL, 0);
                                if (r >= 0)
                                        r = add_change(out, CHANGE_APPEARED, d, NULL, b, 0);
                        } else if ((m = poll_entry_changes(a, b, false)))
                                r = add_change(out, CHANGE_MODIFIED, d, a, b, m);
                }
        }
        return r;
}
