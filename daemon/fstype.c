/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fstype - which file systems the kernel cannot watch for us
 *
 * The magic numbers are linux/magic.h's; two of AFS's (OpenAFS's and kAFS's)
 * both mean AFS. mountinfo is parsed field by field over a length, never with
 * sscanf: its paths are bytes with the kernel's octal escapes, and a line
 * this parser does not understand is skipped rather than half-read.
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "fstype.h"
#include "macro.h"

#ifndef SMB2_SUPER_MAGIC
#define SMB2_SUPER_MAGIC 0xFE534D42
#endif
#ifndef AFS_FS_MAGIC
#define AFS_FS_MAGIC 0x6B414653
#endif

/* mountinfo of a host with thousands of mounts is a few hundred KiB. */
#define MOUNTINFO_MAX_SIZE (16u * 1024u * 1024u)

static const char *const kind_names[_FS_KIND_MAX] = {
        [FS_LOCAL] = "local",
        [FS_NFS] = "nfs",
        [FS_CIFS] = "cifs",
        [FS_FUSE] = "fuse",
        [FS_9P] = "9p",
        [FS_AFS] = "afs",
        [FS_CEPH] = "ceph",
        [FS_CODA] = "coda",
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

static bool is_octal(char c) {
        return c >= '0' && c <= '7';
}

/* The field at *p (up to a space or the end), unescaped; *p moves past it and
 * the space. NULL with *ret_error set: -EBADMSG (empty field) or -ENOMEM. */
static char *next_field(const char **p, const char *end, int *ret_error) {
        const char *s = *p, *e;
        size_t n = 0;
        char *out;

        e = memchr(s, ' ', (size_t) (end - s));
        if (!e)
                e = end;
        if (e == s) {
                *ret_error = -EBADMSG;
                return NULL;
        }
        out = malloc((size_t) (e - s) + 1);
        if (!out) {
                *ret_error = -ENOMEM;
                return NULL;
        }
        while (s < e) {
                /* The kernel writes "\ooo" (mangle(): space, tab, newline, backslash);
                 * the first digit is at most 3 so that it fits in a byte. */
                if (s[0] == '\\' && e - s >= 4 && s[1] >= '0' && s[1] <= '3' &&
                    is_octal(s[2]) && is_octal(s[3])) {
                        out[n++] = (char) (((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
                        s += 4;
                } else
                        out[n++] = *s++;
        }
        out[n] = '\0';
        *p = e < end ? e + 1 : e;
        return out;
}

/* A decimal number followed by stop (or the end of the field); *p moves past stop. */
static int parse_number(const char **p, const char *end, char stop, unsigned long max, unsigned long *ret) {
        const char *s = *p;
        unsigned long v = 0;

        if (s >= end || *s < '0' || *s > '9')
                return -EBADMSG;
        for (; s < end && *s >= '0' && *s <= '9'; s++) {
                if (v > (max - (unsigned long) (*s - '0')) / 10)
                        return -EBADMSG;
                v = v * 10 + (unsigned long) (*s - '0');
        }
        if (s < end ? *s != stop : stop != ' ')
                return -EBADMSG;
        *p = s < end ? s + 1 : s;
        *ret = v;
        return 0;
}

int mountinfo_parse_line(const char *line, size_t len, MountEntry *ret) {
        const char *p = line, *end = line + len;
        _cleanup_(mount_entry_done) MountEntry e = {};
        unsigned long v;
        int r = 0;

        if (len > 0 && end[-1] == '\n')
                end--;
        if (memchr(p, '\n', (size_t) (end - p)) || memchr(p, '\0', (size_t) (end - p)))
                return -EBADMSG;

        r = parse_number(&p, end, ' ', INT32_MAX, &v);
        if (r < 0)
                return r;
        e.mount_id = (int) v;
        r = parse_number(&p, end, ' ', INT32_MAX, &v);
        if (r < 0)
                return r;
        e.parent_id = (int) v;
        r = parse_number(&p, end, ':', UINT32_MAX, &v);
        if (r < 0)
                return r;
        e.major = (unsigned) v;
        r = parse_number(&p, end, ' ', UINT32_MAX, &v);
        if (r < 0)
                return r;
        e.minor = (unsigned) v;

        if (!(e.root = next_field(&p, end, &r)) ||
            !(e.mount_point = next_field(&p, end, &r)) ||
            !(e.mount_options = next_field(&p, end, &r)))
                return r;

        /* Optional fields, zero or more, up to a field that is exactly "-". */
        for (;;) {
                const char *s = p, *f;

                if (p >= end)
                        return -EBADMSG;
                f = memchr(s, ' ', (size_t) (end - s));
                if (!f)
                        return -EBADMSG;        /* "-" must be followed by three fields */
                p = f + 1;
                if (f - s == 1 && s[0] == '-')
                        break;
                if (f == s)
                        return -EBADMSG;
        }

        if (!(e.fstype = next_field(&p, end, &r)) ||
            !(e.source = next_field(&p, end, &r)) ||
            !(e.super_options = next_field(&p, end, &r)))
                return r;
        /* Nothing after the last field, not even a space (next_field() steps
         * over the space that ends a field). */
        if (p != end || p[-1] == ' ')
                return -EBADMSG;

        *ret = e;
        e = (MountEntry) {};
        return 0;
}

int mountinfo_find(const char *text, size_t len, int mount_id, MountEntry *ret) {
        const char *p = text, *end = text + len;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *next;
                size_t l = nl ? (size_t) (nl - p) : (size_t) (end - p);
                MountEntry e;
                int r;

                next = nl ? nl + 1 : end;
                r = mountinfo_parse_line(p, l, &e);
                p = next;
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue;
                if (e.mount_id == mount_id) {
                        *ret = e;
                        return 0;
                }
                mount_entry_done(&e);
        }
        return -ENOENT;
}

int fs_mount_id(int fd, int *ret) {
        struct statx stx;
        union {
                struct file_handle handle;
                char space[sizeof(struct file_handle) + MAX_HANDLE_SZ];
        } h = { .handle.handle_bytes = MAX_HANDLE_SZ };
        int mnt_id;

        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) == 0 &&
            (stx.stx_mask & STATX_MNT_ID)) {
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

static int read_all(const char *path, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;
        FILE *f;
        int r = 0;

        f = fopen(path, "re");
        if (!f)
                return negative_errno();
        for (;;) {
                size_t n;

                if (cap - len < 4096) {
                        char *b;

                        if (cap >= MOUNTINFO_MAX_SIZE) {
                                r = -EFBIG;
                                break;
                        }
                        cap = cap ? cap * 2 : 16384;
                        b = realloc(buf, cap);
                        if (!b) {
                                r = -ENOMEM;
                                break;
                        }
                        buf = b;
                }
                n = fread(buf + len, 1, cap - len, f);
                len += n;
                if (n == 0) {
                        if (ferror(f))
                                r = -EIO;
                        break;
                }
        }
        fclose(f);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

void fs_info_done(FsInfo *i) {
        mount_entry_done(&i->mount);
        *i = (FsInfo) { .mount_id = -1 };
}

int fs_detect(int fd, const char *mountinfo, FsInfo *ret) {
        FsInfo info = { .mount_id = -1 };
        _cleanup_free_ char *text = NULL;
        struct statfs sfs;
        size_t len;

        if (fstatfs(fd, &sfs) < 0)
                return negative_errno();
        info.magic = (uint64_t) sfs.f_type;
        info.kind = fs_kind_from_magic(info.magic);

        /* The mount is looked up for a remote kind only: its details are
         * what a client is shown, and fuseblk is told apart by it. Failing
         * that, the kind stands as fstatfs gave it. */
        if (info.kind != FS_LOCAL &&
            fs_mount_id(fd, &info.mount_id) >= 0 &&
            read_all(mountinfo ?: "/proc/self/mountinfo", &text, &len) >= 0 &&
            mountinfo_find(text, len, info.mount_id, &info.mount) >= 0) {
                info.have_mount = true;
                info.kind = fs_kind_refine(info.kind, info.mount.fstype);
        }

        *ret = info;
        return 0;
}
