/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fanotify_marks - where the fanotify backend serves (fanotify.h)
 *
 * Whether a subscription can be served, the filesystems marked (FanFs:
 * the mark's mask, the fd of its mount's root that handles are opened
 * through, its directory cache) and the subscriptions on them (FanSub),
 * the directory cache's system calls (fs_lookup(), fs_access()), and the
 * callers' credentials, interned (FanCaller). The group's events, the
 * read ahead a lookup asks for and the freeing of a FanFs (fan_fs_free(),
 * which fanotify_free() needs too) are fanotify.c's, the layer below.
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

#include "access.h"
#include "event_bits.h"
#include "fanotify.h"
#include "fanotify_internal.h"
#include "fstype.h"
#include "log.h"
#include "macro.h"

/* Filesystems fanotify_can_serve() could not mark, remembered (then forgotten: a device number is reused). */
#define REFUSED_MAX 256u

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

/* Where a Later says a directory was: its name there, and its parent's handle. */
static int later_place(const Later *l, FanHandle *ret_parent, uint8_t *parent_bytes, char *ret_name) {
        if (l->name_len > NAME_MAX || l->dir.size > FAN_HANDLE_MAX)
                return -ENAMETOOLONG;
        memcpy(ret_name, l->name, l->name_len);
        ret_name[l->name_len] = '\0';
        memcpy(parent_bytes, l->dir.bytes, l->dir.size);
        *ret_parent = l->dir;
        ret_parent->bytes = parent_bytes;
        return 0;
}

/* The directory's name (the last component of the path the kernel gives
 * its fd) and its parent's handle, as they are now; a top if ".." is on
 * another mount (the mount's root) or cannot be encoded (not reachable
 * through the mount). */
static int kernel_lookup(FanFs *fs, const FanHandle *h, FanHandle *ret_parent, uint8_t *parent_bytes, char *ret_name) {
        char proc[sizeof("/proc/self/fd/") + 12], path[PATH_MAX];
        HandleBuf hb = { .fh.handle_bytes = FAN_HANDLE_MAX };
        _cleanup_close_ int fd = -1;
        const char *base;
        ssize_t n;
        int mnt;

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

/*
 * FanDirOps.lookup: where the directory was when the event being handled
 * happened. Where it is now, unless a rename or deletion of it read after
 * that event says where it was before. One the kernel queued after the
 * read being handled, perhaps after the lookup began, is read ahead for
 * that once the lookup is made: a rename done before the lookup is then
 * known, and one done after it says the place the lookup saw.
 */
static int fs_lookup(const FanHandle *h, FanHandle *ret_parent, uint8_t *parent_bytes, char *ret_name, void *userdata) {
        FanFs *fs = userdata;
        const Later *l = fanotify_later(fs->fanotify, h);
        int r;

        if (l)
                return later_place(l, ret_parent, parent_bytes, ret_name);
        r = kernel_lookup(fs, h, ret_parent, parent_bytes, ret_name);
        if (fanotify_read_ahead(fs->fanotify) && (l = fanotify_later(fs->fanotify, h)))
                return later_place(l, ret_parent, parent_bytes, ret_name);
        /* Past the read ahead, its move may not be read yet: checked when it is. */
        fanotify_note_lookup(fs->fanotify, h);
        return r;
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

        return fstatfs(fd, &sf) < 0 ? 0 : fs_fsid(&sf);
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
                        break; /* ".." is on another mount, or is itself: cur is the mount's root */
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
                        return -EXDEV; /* another filesystem with its fsid, or another mount of it */
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
                return true; /* where it is cannot be said: do not take the risk */
        dir[n] = '\0';
        return mountinfo_has_below("/proc/self/mountinfo", dir) != 0;
}

bool fanotify_can_serve(Fanotify *f, int fd, const struct stat *st, uint32_t flags, uint32_t mask, const Caller *caller,
                        const RemoteHint *hint) {
        bool hinted = hint && hint->valid && hint->dev == st->st_dev && hint->ino == st->st_ino;
        g_autofree char *key = NULL;
        HandleBuf hb;
        FsInfo info;
        uint64_t fsid;
        FanFs *fs;
        int mount_id, r;

        if (!(flags & WATCHD_FLAG_RECURSIVE) || (flags & WATCHD_FLAG_PERSIST) || !S_ISDIR(st->st_mode))
                return false;
        /* What the worker that opened it asked (remote_hint_probe()): an
         * fstatfs here would wait on the loop for a FUSE daemon (FUSE_STATFS
         * is never answered from a cache). A remote file system is inotify's
         * (below), asked nothing more. */
        if (hinted && hint->kind != FS_LOCAL)
                return false;
        fsid = hinted ? hint->fsid : fd_fsid(fd);
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
        if (!hinted) {
                if (fs_detect(fd, NULL, &info) < 0)
                        return false;
                fs_info_done(&info);
                if (info.kind != FS_LOCAL)
                        return false; /* remote: changes made elsewhere are polled (remote.h), with inotify links */
        }
        if (mounts_below(fd))
                return false;
        /* Marked now, before the subscription's root link is placed: the
         * daemon's one open of the directory (the mount fd) is not its
         * news. */
        r = fs_get(f, fd, st, fsid, mount_id, fan_bits(mask) | (caller->uid != 0 ? FAN_ATTRIB : 0), &fs);
        if (r < 0) {
                if (r != -ENOMEM && g_hash_table_size(f->refused) < REFUSED_MAX) {
                        log_info_errno(r,
                                       "fanotify cannot serve the filesystem of device %u:%u (%m): RECURSIVE "
                                       "subscriptions there are served by inotify.",
                                       major(st->st_dev), minor(st->st_dev));
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
                return -ENOENT; /* fanotify_can_serve() first */
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
