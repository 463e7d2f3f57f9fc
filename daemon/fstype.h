/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * fstype - which file systems the kernel cannot watch for us
 *
 * inotify reports what passes through this kernel's VFS. On a network file
 * system (NFS, SMB/CIFS, 9p, AFS, Ceph, Coda) another machine changes files
 * without this kernel knowing; on FUSE the daemon's backing store (the
 * directory under bindfs, the remote host of sshfs) does. Such a directory
 * is watched by the kernel for the changes made here, and polled for the
 * others (poller.h).
 *
 * The kind comes from fstatfs(2)'s f_type, which costs one system call and
 * no parsing; the mount (its mount point, source and file system type with
 * FUSE's subtype, "fuse.sshfs") from /proc/self/mountinfo, found by the
 * mount id of statx(STATX_MNT_ID) or, on kernels before 5.8,
 * name_to_handle_at(2). mountinfo is read only for a remote kind: a local
 * directory costs the fstatfs and nothing else.
 *
 * "fuseblk" (ntfs-3g, exfat-fuse: a block device served by a FUSE daemon) has
 * FUSE's f_type but its changes all pass through this kernel, so with a
 * mount found it counts as local.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/statfs.h>
#include <sys/types.h>

typedef enum FsKind {
        FS_LOCAL, /* every change passes through this kernel */
        FS_NFS,
        FS_CIFS, /* SMB 1 (smbfs), CIFS, SMB 2/3 */
        FS_FUSE,
        FS_9P,
        FS_AFS, /* OpenAFS and the kernel's kAFS */
        FS_CEPH,
        FS_CODA,
        _FS_KIND_MAX,
        _FS_KIND_INVALID = -22, /* -EINVAL */
} FsKind;

/* "local", "nfs", "cifs", "fuse", "9p", "afs", "ceph", "coda": the keys of
 * watchd.conf's [poll] section and what ListWatches' details show. */
const char *fs_kind_to_string(FsKind k);
FsKind fs_kind_from_string(const char *s);

/* The kind of a statfs f_type. */
FsKind fs_kind_from_magic(uint64_t f_type);

/* The kind once the mount's file system type (mountinfo's, "fuseblk",
 * "fuse.sshfs", "nfs4"...) is known; fstype may be NULL (not found). */
FsKind fs_kind_refine(FsKind kind, const char *fstype);

/* One line of /proc/PID/mountinfo (proc(5)), every field unescaped. */
typedef struct MountEntry {
        int mount_id;
        int parent_id;
        unsigned major, minor;
        char *root; /* the mount's root within its file system */
        char *mount_point;
        char *mount_options;
        char *fstype; /* "ext4", "nfs4", "fuse.sshfs" */
        char *source; /* "server:/export", "/dev/sda1", "none" */
        char *super_options;
} MountEntry;

void mount_entry_done(MountEntry *e);

/*
 * Finds mount_id in the mountinfo file at path, parsed by libmount (the
 * kernel's "\ooo" escapes undone; names are bytes and pass through). A
 * line it cannot parse is skipped. Return: 0, -ENOENT (not there),
 * -ENOMEM, or -errno of reading the file.
 */
int mountinfo_find(const char *path, int mount_id, MountEntry *ret);

/* Whether a mount point in the mountinfo file at path is strictly below the
 * absolute directory dir (fanotify.c: a mark would not see that file
 * system). Return: 1, 0, or -errno of reading the file. */
int mountinfo_has_below(const char *path, const char *dir);

/* The mount id of fd (any fd, O_PATH included): statx(STATX_MNT_ID), else
 * name_to_handle_at(). Return: 0, or -errno. */
int fs_mount_id(int fd, int *ret);

typedef struct FsInfo {
        FsKind kind;
        uint64_t magic;   /* statfs f_type */
        uint64_t fsid;    /* statfs f_fsid (0: none) */
        int mount_id;     /* -1 if not looked up (a local kind) or unknown */
        MountEntry mount; /* filled when mount_id >= 0 was found in mountinfo */
        bool have_mount;
} FsInfo;

void fs_info_done(FsInfo *i);

/*
 * What fd is on. mountinfo: the file to read (NULL: /proc/self/mountinfo).
 * A remote kind whose mount cannot be found is still that kind (the fstatfs
 * decides); have_mount is then false. Return: 0, or -errno of fstatfs.
 */
int fs_detect(int fd, const char *mountinfo, FsInfo *ret);
/* The file system id statfs gave (f_fsid), as one number (0: none). */
uint64_t fs_fsid(const struct statfs *sfs);
