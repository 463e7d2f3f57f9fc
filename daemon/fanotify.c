/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fanotify - RECURSIVE subscriptions served by one fanotify mark a filesystem
 *
 * One FanFs per filesystem marked (keyed by its fsid, which is what the
 * events carry): the mark's mask (the union of what its subscriptions ask
 * for, and what its directory cache needs: creations, deletions and renames
 * of directories, and attribute changes when some owner is not root), an fd
 * of the directory its first subscription was rooted on, open for reading
 * (open_by_handle_at() wants one that is not O_PATH, and finds handles
 * through its mount), and the directory cache.
 *
 * One FanSub per subscription served: its filesystem, its root (pinned in
 * the cache; FanDir.roots lists the FanSubs rooted there) and its owner's
 * caller, interned (FanCaller: one id for every subscription of the same
 * credentials, 0 for root) so that the cache keeps one verdict a caller and
 * directory.
 *
 * An event is handled in two steps: who gets what (the subscriptions above
 * its directory, the paths, the owner's permission) is collected first, and
 * delivered after, each subscription looked up again by id: a delivery may
 * end one (ONESHOT), which detaches it from the lists the first step walks.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "event_bits.h"
#include "fan_decode.h"
#include "fan_dircache.h"
#include "fan_group.h"
#include "fanotify.h"
#include "fstype.h"
#include "log.h"
#include "macro.h"
#include "path.h"

#define READ_BUF (64u * 1024u)
#define READ_ROUNDS 16
/* Filesystems fanotify_attach() could not mark, remembered (then forgotten: a device number is reused). */
#define REFUSED_MAX 256u

/* What every mark carries, for the directory cache: directories created,
 * deleted and renamed (FAN_ONDIR: directories too). */
#define FAN_CACHE_MASK (FAN_CREATE | FAN_DELETE | FAN_RENAME | FAN_ONDIR)

typedef struct FanFs FanFs;
typedef struct FanSub FanSub;

typedef struct FanCaller {
        uint32_t id;            /* > 0 */
        Caller caller;          /* owns gids */
        unsigned refs;
} FanCaller;

struct FanFs {
        Fanotify *fanotify;
        uint64_t fsid;
        dev_t dev;
        int mount_id;
        int mount_fd;           /* O_RDONLY directory: open_by_handle_at()'s, and the marks' */
        uint64_t mask;          /* marked */
        FanDirCache *cache;
        LIST_HEAD(FanSub, subs);
};

struct FanSub {
        Subscription *subscription;
        FanFs *fs;
        FanDir *root;           /* pinned */
        uint32_t caller;        /* FanCaller.id, 0: root */
        LIST_FIELDS(FanSub, fs);        /* among fs->subs */
        LIST_FIELDS(FanSub, root);      /* among root->roots */
};

struct Fanotify {
        FanGroup *group;
        FanotifyOps ops;
        void *userdata;
        pid_t self;
        GHashTable *filesystems;        /* fsid (uint64_t *) -> FanFs */
        GHashTable *subs;               /* Subscription * -> FanSub */
        GPtrArray *callers;             /* FanCaller */
        uint32_t next_caller;
        GHashTable *refused;            /* "dev:fsid" of filesystems the kernel would not mark */
        uint32_t next_cookie;
        uint8_t *buf;                   /* the last read: buf[off, len) not handled yet */
        size_t off, len;
        GArray *later;                  /* Later: the directory renames and deletions of the last read */
        unsigned slice_events;          /* handled by the last fanotify_slice() */
        FanotifyStats stats;
};

/*
 * A directory renamed or deleted by an event of the last read: where it
 * was before. A directory looked up for an event (it was not cached) is
 * found where it is now, which a rename or a deletion queued after that
 * event, and not handled yet, has changed; where it was when the event
 * happened is where the first of those says it was (fs_lookup()).
 */
typedef struct Later {
        size_t off;             /* of the event in the read */
        FanHandle child;        /* the directory */
        FanHandle dir;          /* where it was */
        const char *name;
        size_t name_len;
} Later;

/* One record to deliver, collected before any is delivered. */
typedef struct Target {
        uint32_t id;
        uint32_t mask;          /* IN_* bits */
        uint32_t cookie;
        char *dir;
        bool owns_dir;          /* the first of a subscription's records of one event frees dir */
        const char *name;       /* in the read buffer */
        size_t name_len;
} Target;

static void fan_fs_free(FanFs *fs);

int fanotify_new(const char *helper_socket, const FanotifyOps *ops, void *userdata, Fanotify **ret) {
        Fanotify *f;
        int r;

        f = calloc(1, sizeof(Fanotify));
        if (!f)
                return -ENOMEM;
        r = fan_group_new(helper_socket, &f->group);
        if (r < 0) {
                free(f);
                return r;
        }
        f->ops = *ops;
        f->userdata = userdata;
        f->self = getpid();
        f->filesystems = g_hash_table_new(g_int64_hash, g_int64_equal);
        f->subs = g_hash_table_new(NULL, NULL);
        f->callers = g_ptr_array_new();
        f->later = g_array_new(FALSE, FALSE, sizeof(Later));
        f->refused = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        f->buf = malloc(READ_BUF);
        if (!f->buf) {
                fanotify_free(f);
                return -ENOMEM;
        }
        *ret = f;
        return 0;
}

Fanotify *fanotify_free(Fanotify *f) {
        GHashTableIter i;
        gpointer v;

        if (!f)
                return NULL;
        if (f->subs) {
                g_hash_table_iter_init(&i, f->subs);
                while (g_hash_table_iter_next(&i, NULL, &v))
                        free(v);
                g_hash_table_destroy(f->subs);
        }
        if (f->filesystems) {
                g_hash_table_iter_init(&i, f->filesystems);
                while (g_hash_table_iter_next(&i, NULL, &v))
                        fan_fs_free(v);
                g_hash_table_destroy(f->filesystems);
        }
        if (f->callers) {
                for (guint k = 0; k < f->callers->len; k++) {
                        FanCaller *c = f->callers->pdata[k];

                        free(c->caller.gids);
                        free(c);
                }
                g_ptr_array_unref(f->callers);
        }
        if (f->refused)
                g_hash_table_destroy(f->refused);
        if (f->later)
                g_array_unref(f->later);
        fan_group_free(f->group);
        free(f->buf);
        free(f);
        return NULL;
}

int fanotify_fd(const Fanotify *f) {
        return fan_group_fd(f->group);
}

void fanotify_get_stats(const Fanotify *f, FanotifyStats *ret) {
        *ret = f->stats;
        ret->marks = g_hash_table_size(f->filesystems);
        ret->subscriptions = g_hash_table_size(f->subs);
}

/* --- callers ------------------------------------------------------------------ */

static bool caller_equal(const Caller *a, const Caller *b) {
        if (a->uid != b->uid || a->gid != b->gid || a->n_gids != b->n_gids)
                return false;
        return a->n_gids == 0 || memcmp(a->gids, b->gids, a->n_gids * sizeof(gid_t)) == 0;
}

/* The id of caller's credentials (0 for root), with a reference. Return: > 0, 0, or -ENOMEM. */
static int64_t caller_ref(Fanotify *f, const Caller *caller) {
        FanCaller *c;

        if (caller->uid == 0)
                return 0;
        for (guint k = 0; k < f->callers->len; k++) {
                c = f->callers->pdata[k];
                if (caller_equal(&c->caller, caller)) {
                        c->refs++;
                        return c->id;
                }
        }
        c = calloc(1, sizeof(FanCaller));
        if (!c)
                return -ENOMEM;
        c->caller = *caller;
        c->caller.gids = caller->n_gids ? malloc(caller->n_gids * sizeof(gid_t)) : NULL;
        if (caller->n_gids && !c->caller.gids) {
                free(c);
                return -ENOMEM;
        }
        if (caller->n_gids)
                memcpy(c->caller.gids, caller->gids, caller->n_gids * sizeof(gid_t));
        /* Ids are not reused while a directory may still hold a verdict for
         * one: they only grow (2^32 distinct credentials in one run is not
         * a concern). */
        c->id = ++f->next_caller;
        c->refs = 1;
        g_ptr_array_add(f->callers, c);
        return c->id;
}

static FanCaller *caller_get(Fanotify *f, uint32_t id) {
        for (guint k = 0; k < f->callers->len; k++) {
                FanCaller *c = f->callers->pdata[k];

                if (c->id == id)
                        return c;
        }
        return NULL;
}

static void caller_unref(Fanotify *f, uint32_t id) {
        FanCaller *c = id ? caller_get(f, id) : NULL;

        if (!c || --c->refs > 0)
                return;
        g_ptr_array_remove_fast(f->callers, c);
        free(c->caller.gids);
        free(c);
}

/* --- the directory cache's system calls --------------------------------------- */

typedef struct HandleBuf {
        struct file_handle fh;
        uint8_t bytes[FAN_HANDLE_MAX];
} HandleBuf;

static int open_handle(FanFs *fs, const FanHandle *h) {
        HandleBuf hb = { .fh = { .handle_bytes = h->size, .handle_type = h->type } };
        int fd;

        if (h->size > FAN_HANDLE_MAX)
                return -EINVAL;
        memcpy(hb.fh.f_handle, h->bytes, h->size);
        fd = open_by_handle_at(fs->mount_fd, &hb.fh, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

/* FanDirOps.lookup: the directory's name (the last component of the path
 * the kernel gives its fd) and its parent's handle; a top if ".." is on
 * another mount (the mount's root) or cannot be encoded (not reachable
 * through the mount). */
static int fs_lookup(const FanHandle *h, FanHandle *ret_parent, uint8_t *parent_bytes, char *ret_name,
                     void *userdata) {
        FanFs *fs = userdata;
        char proc[sizeof("/proc/self/fd/") + 12], path[PATH_MAX];
        HandleBuf hb = { .fh.handle_bytes = FAN_HANDLE_MAX };
        _cleanup_close_ int fd = -1;
        const char *base;
        ssize_t n;
        int mnt;

        /* Renamed or deleted by an event not handled yet: where it was then. */
        for (guint k = 0; k < fs->fanotify->later->len; k++) {
                const Later *l = &g_array_index(fs->fanotify->later, Later, k);

                if (l->off < fs->fanotify->off || !fan_handle_equal(&l->child, h))
                        continue;
                if (l->name_len > NAME_MAX || l->dir.size > FAN_HANDLE_MAX)
                        break;
                memcpy(ret_name, l->name, l->name_len);
                ret_name[l->name_len] = '\0';
                memcpy(parent_bytes, l->dir.bytes, l->dir.size);
                *ret_parent = l->dir;
                ret_parent->bytes = parent_bytes;
                return 0;
        }
        fs->fanotify->stats.lookups++;
        fd = open_handle(fs, h);
        if (fd < 0)
                return fd;
        if (name_to_handle_at(fd, "..", &hb.fh, &mnt, 0) < 0 || mnt != fs->mount_id)
                return 1;
        snprintf(proc, sizeof(proc), "/proc/self/fd/%i", fd);
        n = readlink(proc, path, sizeof(path) - 1);
        if (n < 0)
                return negative_errno();
        path[n] = '\0';
        /* Removed since (its path says so), or a path the kernel cannot give. */
        if (n > 10 && strcmp(path + n - 10, " (deleted)") == 0)
                return -ESTALE;
        if (path[0] != '/')
                return 1;
        base = strrchr(path, '/') + 1;
        if (!*base || strlen(base) > NAME_MAX)
                return 1;
        strcpy(ret_name, base);
        memcpy(parent_bytes, hb.fh.f_handle, hb.fh.handle_bytes);
        *ret_parent = (FanHandle) {
                .fsid = h->fsid,
                .type = hb.fh.handle_type,
                .size = hb.fh.handle_bytes,
                .bytes = parent_bytes,
        };
        return 0;
}

/* FanDirOps.access: what the caller may do with the directory, asked of the
 * kernel with its credentials (faccessat on the directory itself). */
static int fs_access(const FanHandle *h, uint32_t caller, void *userdata) {
        FanFs *fs = userdata;
        FanCaller *c = caller_get(fs->fanotify, caller);
        _cleanup_close_ int fd = -1;
        AccessSaved saved;
        int bits = 0, r;

        if (!c)
                return -ESRCH;
        fd = open_handle(fs, h);
        if (fd < 0)
                return fd;
        r = access_become(&c->caller, &saved);
        if (r < 0)
                return r;
        if (faccessat(fd, "", R_OK, AT_EACCESS | AT_EMPTY_PATH) >= 0)
                bits |= FAN_DIR_MAY_READ;
        if (faccessat(fd, "", X_OK, AT_EACCESS | AT_EMPTY_PATH) >= 0)
                bits |= FAN_DIR_MAY_SEARCH;
        access_restore(&saved);
        return bits;
}

static const FanDirOps fs_dir_ops = {
        .lookup = fs_lookup,
        .access = fs_access,
};

/* --- filesystems and marks ------------------------------------------------------ */

static int fd_handle(int fd, HandleBuf *hb, int *ret_mount_id) {
        hb->fh.handle_bytes = FAN_HANDLE_MAX;
        if (name_to_handle_at(fd, "", &hb->fh, ret_mount_id, AT_EMPTY_PATH) < 0)
                return negative_errno();
        return 0;
}

static uint64_t fd_fsid(int fd) {
        struct statfs sf;
        uint32_t w[2];

        if (fstatfs(fd, &sf) < 0)
                return 0;
        memcpy(w, &sf.f_fsid, sizeof(w));
        return (uint64_t) w[0] | (uint64_t) w[1] << 32;
}

static char *refused_key(dev_t dev, uint64_t fsid) {
        return g_strdup_printf("%ju:%" PRIx64, (uintmax_t) dev, fsid);
}

/* The fanotify bits for a subscription's IN_* mask. */
static uint64_t fan_bits(uint32_t in) {
        uint64_t m = 0;

        if (in & IN_ACCESS)
                m |= FAN_ACCESS;
        if (in & IN_MODIFY)
                m |= FAN_MODIFY;
        if (in & IN_ATTRIB)
                m |= FAN_ATTRIB;
        if (in & IN_CLOSE_WRITE)
                m |= FAN_CLOSE_WRITE;
        if (in & IN_CLOSE_NOWRITE)
                m |= FAN_CLOSE_NOWRITE;
        if (in & IN_OPEN)
                m |= FAN_OPEN;
        if (in & (IN_MOVED_FROM | IN_MOVED_TO))
                m |= FAN_RENAME;
        if (in & IN_CREATE)
                m |= FAN_CREATE;
        if (in & IN_DELETE)
                m |= FAN_DELETE;
        return m;
}

/* What fs's mark must carry for its subscriptions. */
static uint64_t fs_need(const FanFs *fs) {
        uint64_t m = FAN_CACHE_MASK;

        LIST_FOREACH(fs, x, fs->subs) {
                m |= fan_bits(x->subscription->mask);
                /* A directory's verdicts are forgotten when its mode changes. */
                if (x->caller != 0)
                        m |= FAN_ATTRIB;
        }
        return m;
}

static void fan_fs_free(FanFs *fs) {
        if (!fs)
                return;
        fan_dircache_free(fs->cache);
        safe_close(fs->mount_fd);
        free(fs);
}

/* A filesystem's mark, set to what its subscriptions need: widened at once
 * (an error is returned), narrowed when it may (a failure only logged: the
 * events not asked for are not delivered anyway). */
static int fs_update_mark(Fanotify *f, FanFs *fs) {
        uint64_t need = fs_need(fs);
        int r;

        if (need & ~fs->mask) {
                r = fan_group_mark(f->group, fs->mount_fd, need & ~fs->mask);
                if (r < 0)
                        return r;
                fs->mask |= need;
        }
        if (fs->mask & ~need) {
                r = fan_group_unmark(f->group, fs->mount_fd, fs->mask & ~need);
                if (r < 0)
                        log_info_errno(r, "Failed to narrow a filesystem's fanotify mark, ignoring: %m");
                else
                        fs->mask = need;
        }
        return 0;
}

/*
 * The root of the mount the directory at fd is on, open for reading (as
 * the daemon, CAP_DAC_READ_SEARCH): what open_by_handle_at() finds handles
 * through, and marks are placed through. Not the subscription's own root:
 * an open directory is not freed when it is removed, and its watchers would
 * never hear of its deletion; a mount's root cannot be removed. Opening it
 * is the one open of a directory the daemon makes here, before the mark is
 * placed (its inotify watchers, if any, see it).
 */
static int open_mount_root(int fd, int mount_id) {
        char proc[sizeof("/proc/self/fd/") + 12];
        _cleanup_close_ int cur = -1;
        int r;

        cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return negative_errno();
        for (unsigned i = 0; i < PATH_MAX / 2; i++) {
                _cleanup_close_ int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                struct stat a, b;
                int mid;

                if (up < 0)
                        return negative_errno();
                r = fs_mount_id(up, &mid);
                if (r < 0)
                        return r;
                if (mid != mount_id || fstat(cur, &a) < 0 || fstat(up, &b) < 0 ||
                    (a.st_dev == b.st_dev && a.st_ino == b.st_ino))
                        break;          /* ".." is on another mount, or is itself: cur is the mount's root */
                safe_close(cur);
                cur = TAKE_FD(up);
        }
        snprintf(proc, sizeof(proc), "/proc/self/fd/%i", cur);
        r = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        return r < 0 ? negative_errno() : r;
}

/* The FanFs of the filesystem the directory at fd is on: found, or made and marked. */
static int fs_get(Fanotify *f, int fd, const struct stat *st, uint64_t fsid, int mount_id, uint64_t mask, FanFs **ret) {
        char proc[sizeof("/proc/self/fd/") + 12];
        FanFs *fs;
        int r;

        fs = g_hash_table_lookup(f->filesystems, &fsid);
        if (fs) {
                if (fs->dev != st->st_dev || fs->mount_id != mount_id)
                        return -EXDEV;  /* another filesystem with its fsid, or another mount of it */
                *ret = fs;
                return 0;
        }
        fs = calloc(1, sizeof(FanFs));
        if (!fs)
                return -ENOMEM;
        *fs = (FanFs) {
                .fanotify = f,
                .fsid = fsid,
                .dev = st->st_dev,
                .mount_id = mount_id,
                .mount_fd = -1,
        };
        fs->mount_fd = open_mount_root(fd, mount_id);
        if (fs->mount_fd < 0) {
                r = fs->mount_fd;
                fan_fs_free(fs);
                return r;
        }
        snprintf(proc, sizeof(proc), "/proc/self/fd/%i", fs->mount_fd);
        r = fan_dircache_new(&fs_dir_ops, fs, FANOTIFY_DIRS_MAX, &fs->cache);
        /* What the cache needs and what the first subscription will: one request. */
        mask |= FAN_CACHE_MASK;
        if (r >= 0)
                r = fan_group_mark(f->group, fs->mount_fd, mask);
        if (r < 0) {
                fan_fs_free(fs);
                return r;
        }
        fs->mask = mask;
        g_hash_table_insert(f->filesystems, &fs->fsid, fs);
        log_debug("fanotify: marked the filesystem of '%s' (fsid %" PRIx64 ").", proc, fsid);
        *ret = fs;
        return 0;
}

static void fs_release(Fanotify *f, FanFs *fs) {
        if (fs->subs)
                return;
        (void) fan_group_unmark(f->group, fs->mount_fd, fs->mask);
        g_hash_table_remove(f->filesystems, &fs->fsid);
        fan_fs_free(fs);
}

/* Whether a mount other than the root's own is below the directory at fd:
 * its events would not be on the root's filesystem. */
static bool mounts_below(int fd) {
        char proc[sizeof("/proc/self/fd/") + 12], dir[PATH_MAX];
        ssize_t n;

        snprintf(proc, sizeof(proc), "/proc/self/fd/%i", fd);
        n = readlink(proc, dir, sizeof(dir) - 1);
        if (n <= 0 || dir[0] != '/')
                return true;    /* where it is cannot be said: do not take the risk */
        dir[n] = '\0';
        return mountinfo_has_below("/proc/self/mountinfo", dir) != 0;
}

bool fanotify_can_serve(Fanotify *f, int fd, const struct stat *st, uint32_t flags, uint32_t mask,
                        const Caller *caller) {
        g_autofree char *key = NULL;
        HandleBuf hb;
        FsInfo info;
        uint64_t fsid;
        FanFs *fs;
        int mount_id, r;

        if (!(flags & WATCHD_FLAG_RECURSIVE) || (flags & WATCHD_FLAG_PERSIST) || !S_ISDIR(st->st_mode))
                return false;
        fsid = fd_fsid(fd);
        if (fsid == 0)
                return false;
        key = refused_key(st->st_dev, fsid);
        if (g_hash_table_contains(f->refused, key))
                return false;
        if (fd_handle(fd, &hb, &mount_id) < 0)
                return false;
        fs = g_hash_table_lookup(f->filesystems, &fsid);
        if (fs)
                return fs->dev == st->st_dev && fs->mount_id == mount_id && !mounts_below(fd);
        if (fs_detect(fd, NULL, &info) < 0)
                return false;
        fs_info_done(&info);
        if (info.kind != FS_LOCAL)
                return false;   /* remote: changes made elsewhere are polled (remote.h), with inotify links */
        if (mounts_below(fd))
                return false;
        /* Marked now, before the subscription's root link is placed: the
         * daemon's one open of the directory (the mount fd) is not its
         * news. */
        r = fs_get(f, fd, st, fsid, mount_id, fan_bits(mask) | (caller->uid != 0 ? FAN_ATTRIB : 0), &fs);
        if (r < 0) {
                if (r != -ENOMEM && g_hash_table_size(f->refused) < REFUSED_MAX) {
                        log_info_errno(r, "fanotify cannot serve the filesystem of device %u:%u (%m): RECURSIVE "
                                       "subscriptions there are served by inotify.", major(st->st_dev),
                                       minor(st->st_dev));
                        g_hash_table_add(f->refused, TAKE_PTR(key));
                }
                return false;
        }
        return true;
}

void fanotify_release_unused(Fanotify *f) {
        GHashTableIter i;
        gpointer v;

        g_hash_table_iter_init(&i, f->filesystems);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                FanFs *fs = v;

                if (fs->subs)
                        continue;
                (void) fan_group_unmark(f->group, fs->mount_fd, fs->mask);
                g_hash_table_iter_remove(&i);
                fan_fs_free(fs);
        }
}

int fanotify_attach(Fanotify *f, Subscription *s, int fd, const Caller *caller) {
        uint64_t fsid = fd_fsid(fd);
        HandleBuf hb;
        FanHandle h;
        FanSub *x;
        FanFs *fs;
        int64_t cid;
        int mount_id, r;

        fs = g_hash_table_lookup(f->filesystems, &fsid);
        if (!fs)
                return -ENOENT;         /* fanotify_can_serve() first */
        r = fd_handle(fd, &hb, &mount_id);
        if (r < 0)
                return r;
        x = calloc(1, sizeof(FanSub));
        if (!x)
                return -ENOMEM;
        cid = caller_ref(f, caller);
        h = (FanHandle) { .fsid = fsid, .type = hb.fh.handle_type, .size = hb.fh.handle_bytes, .bytes = hb.bytes };
        r = cid < 0 ? (int) cid : fan_dircache_pin(fs->cache, &h, &x->root);
        if (r < 0) {
                if (cid > 0)
                        caller_unref(f, (uint32_t) cid);
                free(x);
                return r;
        }
        x->subscription = s;
        x->fs = fs;
        x->caller = (uint32_t) cid;
        LIST_PREPEND(fs, fs->subs, x);
        LIST_PREPEND(root, *(FanSub **) &x->root->roots, x);
        r = fs_update_mark(f, fs);
        if (r < 0) {
                LIST_REMOVE(root, *(FanSub **) &x->root->roots, x);
                LIST_REMOVE(fs, fs->subs, x);
                fan_dircache_unpin(fs->cache, x->root);
                caller_unref(f, x->caller);
                free(x);
                return r;
        }
        g_hash_table_insert(f->subs, s, x);
        return 0;
}

void fanotify_detach(Fanotify *f, Subscription *s) {
        FanSub *x = g_hash_table_lookup(f->subs, s);
        FanFs *fs;

        if (!x)
                return;
        g_hash_table_remove(f->subs, s);
        fs = x->fs;
        LIST_REMOVE(root, *(FanSub **) &x->root->roots, x);
        LIST_REMOVE(fs, fs->subs, x);
        fan_dircache_unpin(fs->cache, x->root);
        caller_unref(f, x->caller);
        free(x);
        if (fs->subs)
                (void) fs_update_mark(f, fs);
        else
                fs_release(f, fs);
}

/* --- events ------------------------------------------------------------------------- */

/* The order a merged event's bits happened in (one process, one object). */
static const struct {
        uint64_t fan;
        uint32_t in;
} event_order[] = {
        { FAN_CREATE,        IN_CREATE },
        { FAN_OPEN,          IN_OPEN },
        { FAN_ACCESS,        IN_ACCESS },
        { FAN_MODIFY,        IN_MODIFY },
        { FAN_ATTRIB,        IN_ATTRIB },
        { FAN_CLOSE_WRITE,   IN_CLOSE_WRITE },
        { FAN_CLOSE_NOWRITE, IN_CLOSE_NOWRITE },
        { FAN_DELETE,        IN_DELETE },
};

static FanFs *fs_of(Fanotify *f, const FanHandle *h) {
        return g_hash_table_lookup(f->filesystems, &h->fsid);
}

/* The path of directory d for x's subscription into buf: its path, and
 * the names below its root. NULL if too long. */
static const char *sub_dir_path(const FanSub *x, const FanDir *d, char *buf) {
        const char *root = x->subscription->path;
        size_t rl = strlen(root);
        int n;

        if (d == x->root)
                return root;
        if (rl + 2 >= PATH_MAX)
                return NULL;
        memcpy(buf, root, rl);
        if (rl == 0 || buf[rl - 1] != '/')
                buf[rl++] = '/';
        n = fan_dir_path_below(d, x->root, buf + rl, PATH_MAX - rl);
        return n < 0 ? NULL : buf;
}

/*
 * Appends to targets, for every subscription served here whose tree holds
 * directory d, whose owner may read it and that asks for one of masks, a
 * record of each of masks (n of them, in order). The directory's path is
 * built once a subscription; the first of its records owns the copy.
 */
static void collect(Fanotify *f, FanFs *fs, FanDir *d, const uint32_t *masks, size_t n, uint32_t cookie,
                    const char *name, size_t name_len, GArray *targets) {
        uint32_t any = 0;
        char buf[PATH_MAX];

        for (size_t i = 0; i < n; i++)
                any |= masks[i];
        any &= ~(uint32_t) IN_ISDIR;
        for (FanDir *a = d; a; a = a->parent)
                for (FanSub *x = a->roots; x; x = x->root_next) {
                        const char *dir;
                        char *copy;

                        if (!(x->subscription->mask & any))
                                continue;       /* not asked for: no path, no permission check */
                        if (!fan_dircache_may_read(fs->cache, x->root, d, x->caller))
                                continue;
                        dir = sub_dir_path(x, d, buf);
                        copy = dir ? strdup(dir) : NULL;
                        if (!copy) {
                                f->ops.lost(x->subscription, f->userdata);     /* deeper than PATH_MAX, or no memory */
                                continue;
                        }
                        for (size_t i = 0; i < n; i++)
                                g_array_append_val(targets, ((Target) {
                                        .id = x->subscription->id,
                                        .mask = masks[i],
                                        .cookie = cookie,
                                        .dir = copy,
                                        .owns_dir = i == 0,
                                        .name = name,
                                        .name_len = name_len,
                                }));
                }
}

static void deliver_targets(Fanotify *f, GArray *targets, uint64_t now) {
        for (guint k = 0; k < targets->len; k++) {
                Target *t = &g_array_index(targets, Target, k);
                Subscription *s = f->ops.get(t->id, f->userdata);

                /* Ended meanwhile (ONESHOT), or served by inotify again. */
                if (s && g_hash_table_contains(f->subs, s))
                        (void) f->ops.deliver(s, t->mask, t->cookie, t->dir, t->name, t->name_len, now,
                                              f->userdata);
        }
        for (guint k = 0; k < targets->len; k++) {
                Target *t = &g_array_index(targets, Target, k);

                if (t->owns_dir)
                        free(t->dir);
        }
        g_array_set_size(targets, 0);
}

static uint32_t next_cookie(Fanotify *f) {
        f->next_cookie = (f->next_cookie + 1) % FAN_COOKIE_SPAN;
        return FAN_COOKIE_BASE + f->next_cookie;
}

/* FAN_RENAME: the halves to each side's subscriptions, one cookie, each
 * subscription's MOVED_TO right behind its MOVED_FROM (so that its queue
 * pairs them whatever else it gets); then the cache follows a directory. */
static void handle_rename(Fanotify *f, const FanRawEvent *ev, bool own, GArray *targets, uint64_t now) {
        uint32_t isdir = ev->mask & FAN_ONDIR ? IN_ISDIR : 0;
        FanFs *fs = fs_of(f, &ev->old_entry.dir);
        FanDir *from = NULL, *to = NULL;

        if (!fs || !ev->has_new || ev->new_entry.dir.fsid != fs->fsid)
                return;
        if (!own) {
                g_autoptr(GArray) froms = g_array_new(FALSE, FALSE, sizeof(Target));
                g_autoptr(GArray) tos = g_array_new(FALSE, FALSE, sizeof(Target));
                uint32_t cookie = next_cookie(f);

                uint32_t m_from = IN_MOVED_FROM | isdir, m_to = IN_MOVED_TO | isdir;

                if (fan_dircache_resolve(fs->cache, &ev->old_entry.dir, &from) >= 0)
                        collect(f, fs, from, &m_from, 1, cookie, ev->old_entry.name, ev->old_entry.name_len, froms);
                if (fan_dircache_resolve(fs->cache, &ev->new_entry.dir, &to) >= 0)
                        collect(f, fs, to, &m_to, 1, cookie, ev->new_entry.name, ev->new_entry.name_len, tos);
                for (guint j = 0; j < froms->len; j++) {
                        Target *a = &g_array_index(froms, Target, j);

                        g_array_append_val(targets, *a);
                        for (guint k = 0; k < tos->len; k++)
                                if (g_array_index(tos, Target, k).id == a->id) {
                                        g_array_append_val(targets, g_array_index(tos, Target, k));
                                        g_array_remove_index(tos, k);
                                        break;
                                }
                }
                g_array_append_vals(targets, tos->data, tos->len);
                deliver_targets(f, targets, now);
        }
        if (isdir && ev->has_object)
                fan_dircache_renamed(fs->cache, &ev->new_entry.dir, ev->new_entry.name, ev->new_entry.name_len,
                                     &ev->object);
}

static void handle_entry(Fanotify *f, const FanRawEvent *ev, bool own, GArray *targets, uint64_t now) {
        uint32_t isdir = ev->mask & FAN_ONDIR ? IN_ISDIR : 0;
        const FanEntry *e = &ev->entry;
        bool self = e->name && e->name_len == 1 && e->name[0] == '.';
        FanFs *fs = fs_of(f, &e->dir);
        FanDir *d = NULL;
        int r;

        if (!fs)
                return;
        /* A directory's mode or owner changed: what callers may do with it is asked again. */
        if (self && (ev->mask & FAN_ATTRIB))
                fan_dircache_attrib(fs->cache, &e->dir);

        if (!own && e->name && (r = fan_dircache_resolve(fs->cache, &e->dir, &d)) < 0)
                /* Gone before its event was read: what happened in it is not
                 * placed (a walk would not have entered it either). */
                log_debug_errno(r, "fanotify: the directory of an event (mask 0x%" PRIx64 ") is not found (%m), "
                                "dropping it.", (uint64_t) ev->mask);
        if (!own && e->name && d) {
                const char *name = e->name;
                size_t name_len = e->name_len;
                FanDir *where = d;

                /* About a directory itself: reported in its parent, under its
                 * name, as inotify reports it to the parent's watch; not for a
                 * subscription rooted on it (its root link has it). */
                if (self) {
                        where = d->parent;
                        name = d->name;
                        name_len = strlen(d->name);
                }
                if (where) {
                        uint32_t masks[ELEMENTSOF(event_order)];
                        size_t n = 0;

                        for (size_t i = 0; i < ELEMENTSOF(event_order); i++)
                                if (ev->mask & event_order[i].fan)
                                        masks[n++] = event_order[i].in | isdir;
                        collect(f, fs, where, masks, n, 0, name, name_len, targets);
                }
                /* Above, the subscriptions rooted on d itself were not
                 * reached (where is its parent): nothing to skip. */
                deliver_targets(f, targets, now);
        }
        if (isdir && ev->has_object) {
                if (ev->mask & FAN_CREATE)
                        fan_dircache_created(fs->cache, &e->dir, e->name, e->name_len, &ev->object);
                if (ev->mask & FAN_DELETE)
                        fan_dircache_deleted(fs->cache, &ev->object);
        }
}

static void handle_overflow(Fanotify *f) {
        GHashTableIter i;
        gpointer k, v;

        f->stats.overflows++;
        log_warning("The fanotify queue overflowed: every subscription it serves gets Overflow.");
        /* Renames may be among what was lost: the caches start again. */
        g_hash_table_iter_init(&i, f->filesystems);
        while (g_hash_table_iter_next(&i, NULL, &v))
                fan_dircache_clear(((FanFs *) v)->cache);
        g_hash_table_iter_init(&i, f->subs);
        while (g_hash_table_iter_next(&i, &k, NULL))
                f->ops.lost(k, f->userdata);
}

static void handle_event(Fanotify *f, const FanRawEvent *ev, GArray *targets, uint64_t now) {
        bool own = ev->pid == f->self;

        f->stats.events_read++;
        if (ev->mask & FAN_Q_OVERFLOW)
                return handle_overflow(f);
        /* watchd's own doings are no one's news; what they did to
         * directories the cache still learns. */
        if (own)
                f->stats.own_events++;
        if ((ev->mask & FAN_RENAME) && ev->has_old)
                handle_rename(f, ev, own, targets, now);
        else if (ev->has_entry)
                handle_entry(f, ev, own, targets, now);
}

/* The directory renames and deletions of the read just made (Later). */
static void index_later(Fanotify *f) {
        size_t off = 0, at;
        FanRawEvent ev;

        g_array_set_size(f->later, 0);
        for (at = off; fan_decode(f->buf, f->len, &off, &ev) == 1; at = off) {
                if (!(ev.mask & FAN_ONDIR) || !ev.has_object)
                        continue;
                if ((ev.mask & FAN_RENAME) && ev.has_old)
                        g_array_append_val(f->later, ((Later) { at, ev.object, ev.old_entry.dir, ev.old_entry.name,
                                                                ev.old_entry.name_len }));
                else if ((ev.mask & FAN_DELETE) && ev.has_entry && ev.entry.name)
                        g_array_append_val(f->later, ((Later) { at, ev.object, ev.entry.dir, ev.entry.name,
                                                                ev.entry.name_len }));
        }
}

uint64_t fanotify_pause_usec(const Fanotify *f) {
        return f->slice_events < FANOTIFY_BATCH_MIN ? FANOTIFY_PAUSE_USEC : 0;
}

bool fanotify_slice(Fanotify *f, uint64_t budget_usec) {
        uint64_t deadline = now_usec() + budget_usec;
        g_autoptr(GArray) targets = g_array_new(FALSE, FALSE, sizeof(Target));

        f->slice_events = 0;
        for (int i = 0; i < READ_ROUNDS;) {
                FanRawEvent ev;
                int r;

                if (f->off == f->len) {
                        ssize_t n = read(fanotify_fd(f), f->buf, READ_BUF);

                        if (n < 0 && errno == EAGAIN)
                                return false;
                        if (n <= 0) {
                                log_error_errno(n < 0 ? negative_errno() : -EIO, "Failed to read the fanotify "
                                                "group's events: %m");
                                return false;
                        }
                        f->off = 0;
                        f->len = (size_t) n;
                        index_later(f);
                        i++;
                }
                r = fan_decode(f->buf, f->len, &f->off, &ev);
                if (r <= 0) {
                        if (r < 0)
                                log_error("Malformed fanotify event at offset %zu of %zu bytes, dropping the rest "
                                          "of the read.", f->off, f->len);
                        f->off = f->len;
                        continue;
                }
                if (ev.fd >= 0)
                        safe_close(ev.fd);
                handle_event(f, &ev, targets, now_usec());
                f->slice_events++;
                if (now_usec() >= deadline)
                        return true;
        }
        return true;
}
