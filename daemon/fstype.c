/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fstype - which file systems the kernel cannot watch for us
 *
 * The magic numbers are linux/magic.h's; two of AFS's (OpenAFS's and kAFS's)
 * both mean AFS. mountinfo is libmount's to parse (the kernel's octal
 * escapes, the optional fields); a line it does not understand is skipped.
 */

#include <errno.h>
#include <fcntl.h>
#include <libmount.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statfs.h>

#include "fstype.h"
#include "macro.h"

#ifndef SMB2_SUPER_MAGIC
#define SMB2_SUPER_MAGIC 0xFE534D42
#endif
#ifndef AFS_FS_MAGIC
#define AFS_FS_MAGIC 0x6B414653
#endif

static const char *const kind_names[_FS_KIND_MAX] = {
        [FS_LOCAL] = "local", [FS_NFS] = "nfs", [FS_CIFS] = "cifs", [FS_FUSE] = "fuse",
        [FS_9P] = "9p",       [FS_AFS] = "afs", [FS_CEPH] = "ceph", [FS_CODA] = "coda",
};

const char *fs_kind_to_string(FsKind k) {
        return k >= 0 && k < _FS_KIND_MAX ? kind_names[k] : NULL;
}

FsKind fs_kind_from_string(const char *s) {
        for (int i = 0; i < _FS_KIND_MAX; i++)
                if (strcmp(kind_names[i], s) == 0)
                        return i;
        return _FS_KIND_INVALID;
}

FsKind fs_kind_from_magic(uint64_t f_type) {
        /* f_type is a signed long: CIFS's 0xFF534D42 comes back sign-extended
         * on 64-bit; only the low 32 bits are the magic. */
        switch ((uint32_t) f_type) {
        case NFS_SUPER_MAGIC:
                return FS_NFS;
        case SMB_SUPER_MAGIC:
        case CIFS_SUPER_MAGIC:
        case SMB2_SUPER_MAGIC:
                return FS_CIFS;
        case FUSE_SUPER_MAGIC:
                return FS_FUSE;
        case V9FS_MAGIC:
                return FS_9P;
        case AFS_SUPER_MAGIC:
        case AFS_FS_MAGIC:
                return FS_AFS;
        case CEPH_SUPER_MAGIC:
                return FS_CEPH;
        case CODA_SUPER_MAGIC:
                return FS_CODA;
        default:
                return FS_LOCAL;
        }
}

FsKind fs_kind_refine(FsKind kind, const char *fstype) {
        if (kind == FS_FUSE && fstype && strcmp(fstype, "fuseblk") == 0)
                return FS_LOCAL;
        return kind;
}

void mount_entry_done(MountEntry *e) {
        free(e->root);
        free(e->mount_point);
        free(e->mount_options);
        free(e->fstype);
        free(e->source);
        free(e->super_options);
        *e = (MountEntry) {};
}

static void table_unrefp(struct libmnt_table **t) {
        mnt_unref_table(*t);
}

static void iter_freep(struct libmnt_iter **i) {
        mnt_free_iter(*i);
}

/* A line libmount cannot parse is skipped: the mount looked for may be on another. */
static int skip_line(struct libmnt_table *tb, const char *filename, int line) {
        return 1;
}

/* The mount table in path (a mountinfo file) and an iterator over it from the top. */
static int table_open(const char *path, struct libmnt_table **ret_tb, struct libmnt_iter **ret_it) {
        int r;

        *ret_tb = mnt_new_table();
        if (!*ret_tb)
                return -ENOMEM;
        *ret_it = mnt_new_iter(MNT_ITER_FORWARD);
        if (!*ret_it)
                return -ENOMEM;
        r = mnt_table_set_parser_errcb(*ret_tb, skip_line);
        if (r >= 0)
                r = mnt_table_parse_file(*ret_tb, path);
        return r < 0 ? r : 0;
}

static int dup_field(const char *v, char **ret) {
        *ret = strdup(v ?: "");
        return *ret ? 0 : -ENOMEM;
}

int mountinfo_has_below(const char *path, const char *dir) {
        _cleanup_(table_unrefp) struct libmnt_table *tb = NULL;
        _cleanup_(iter_freep) struct libmnt_iter *it = NULL;
        size_t len = strcmp(dir, "/") == 0 ? 0 : strlen(dir);
        struct libmnt_fs *fs;
        int r;

        r = table_open(path, &tb, &it);
        if (r < 0)
                return r;
        while ((r = mnt_table_next_fs(tb, it, &fs)) == 0) {
                const char *target = mnt_fs_get_target(fs);

                if (target && strncmp(target, dir, len) == 0 && target[len] == '/' && target[len + 1] != '\0')
                        return 1;
        }
        return r < 0 ? r : 0;
}

int mountinfo_find(const char *path, int mount_id, MountEntry *ret) {
        _cleanup_(table_unrefp) struct libmnt_table *tb = NULL;
        _cleanup_(iter_freep) struct libmnt_iter *it = NULL;
        _cleanup_(mount_entry_done) MountEntry e = {};
        struct libmnt_fs *fs;
        dev_t dev;
        int r;

        r = table_open(path, &tb, &it);
        if (r < 0)
                return r;
        for (;;) {
                r = mnt_table_next_fs(tb, it, &fs);
                if (r < 0)
                        return r;
                if (r > 0)
                        return -ENOENT;
                if (mnt_fs_get_id(fs) == mount_id)
                        break;
        }

        dev = mnt_fs_get_devno(fs);
        e = (MountEntry) {
                .mount_id = mnt_fs_get_id(fs),
                .parent_id = mnt_fs_get_parent_id(fs),
                .major = major(dev),
                .minor = minor(dev),
        };
        if ((r = dup_field(mnt_fs_get_root(fs), &e.root)) < 0 ||
            (r = dup_field(mnt_fs_get_target(fs), &e.mount_point)) < 0 ||
            (r = dup_field(mnt_fs_get_vfs_options(fs), &e.mount_options)) < 0 ||
            (r = dup_field(mnt_fs_get_fstype(fs), &e.fstype)) < 0 ||
            (r = dup_field(mnt_fs_get_source(fs), &e.source)) < 0 ||
            (r = dup_field(mnt_fs_get_fs_options(fs), &e.super_options)) < 0)
                return r;
        *ret = e;
        e = (MountEntry) {};
        return 0;
}

int fs_mount_id(int fd, int *ret) {
        struct statx stx;
        union {
                struct file_handle handle;
                char space[sizeof(struct file_handle) + MAX_HANDLE_SZ];
        } h = { .handle.handle_bytes = MAX_HANDLE_SZ };
        int mnt_id;

        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) == 0 && (stx.stx_mask & STATX_MNT_ID)) {
                *ret = (int) stx.stx_mnt_id;
                return 0;
        }
        /* Before 5.8. A file system without file handles still gives the
         * mount id with EOVERFLOW (the handle did not fit) on some kernels;
         * anything else is a failure. */
        if (name_to_handle_at(fd, "", &h.handle, &mnt_id, AT_EMPTY_PATH) < 0 && errno != EOVERFLOW)
                return negative_errno();
        *ret = mnt_id;
        return 0;
}

void fs_info_done(FsInfo *i) {
        mount_entry_done(&i->mount);
        *i = (FsInfo) { .mount_id = -1 };
}

uint64_t fs_fsid(const struct statfs *sfs) {
        uint32_t w[2];

        memcpy(w, &sfs->f_fsid, sizeof(w));
        return (uint64_t) w[0] | (uint64_t) w[1] << 32;
}

int fs_detect(int fd, const char *mountinfo, FsInfo *ret) {
        FsInfo info = { .mount_id = -1 };
        struct statfs sfs;

        if (fstatfs(fd, &sfs) < 0)
                return negative_errno();
        info.magic = (uint64_t) sfs.f_type;
        info.fsid = fs_fsid(&sfs);
        info.kind = fs_kind_from_magic(info.magic);

        /* The mount is looked up for a remote kind only: its details are
         * what a client is shown, and fuseblk is told apart by it. Failing
         * that, the kind stands as fstatfs gave it. */
        if (info.kind != FS_LOCAL && fs_mount_id(fd, &info.mount_id) >= 0 &&
            mountinfo_find(mountinfo ?: "/proc/self/mountinfo", info.mount_id, &info.mount) >= 0) {
                info.have_mount = true;
                info.kind = fs_kind_refine(info.kind, info.mount.fstype);
        }

        *ret = info;
        return 0;
}
