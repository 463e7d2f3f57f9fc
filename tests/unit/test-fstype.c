/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-fstype - file system kinds and /proc/self/mountinfo
 *
 * A table of mountinfo lines, each with what the lookup must give (or that
 * it must skip the line, going on to the next): escaped spaces, tabs,
 * newlines and backslashes, bytes that are not UTF-8, a "-" inside a name,
 * optional fields from none to four, FUSE subtypes, and lines cut short.
 * libmount parses; these say what watchd counts on it for. Then the magic
 * numbers, and fs_detect() on this host's own /tmp and /proc (and on a
 * bindfs mount when bindfs and /dev/fuse work: else that case is skipped,
 * and says so).
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fstype.h"
#include "macro.h"

typedef struct LineCase {
        const char *what;
        const char *line;
        int error; /* 0: found, and the fields below must match; -ENOENT: skipped */
        int mount_id, parent_id;
        unsigned major, minor;
        const char *root, *mount_point, *fstype, *source, *super_options;
} LineCase;

static const LineCase line_cases[] = {
        { "plain ext4 with a shared peer group",
          "29 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n", 0, 29, 1, 8, 1, "/", "/", "ext4",
          "/dev/sda1", "rw,errors=remount-ro" },
        { "no optional field",
          "45 26 0:39 / /tmp/b/mnt rw,nosuid,nodev,relatime - fuse /tmp/b/back rw,user_id=0,group_id=0", 0, 45, 26, 0,
          39, "/", "/tmp/b/mnt", "fuse", "/tmp/b/back", "rw,user_id=0,group_id=0" },
        { "four optional fields",
          "100 99 0:50 /sub /mnt/x ro shared:7 master:3 propagate_from:2 unbindable - nfs4 srv:/export rw,vers=4.2\n",
          0, 100, 99, 0, 50, "/sub", "/mnt/x", "nfs4", "srv:/export", "rw,vers=4.2" },
        { "escaped space, tab, newline and backslash in the mount point",
          "50 29 0:60 / /home/a\\040b\\011c\\012d\\134e rw - fuse.sshfs u@h:/x\\040y rw\n", 0, 50, 29, 0, 60, "/",
          "/home/a b\tc\nd\\e", "fuse.sshfs", "u@h:/x y", "rw" },
        { "a dash between escaped spaces is part of the name",
          "51 29 0:61 / /mnt/a\\040-\\040b rw - cifs //srv/share rw,vers=3.1.1\n", 0, 51, 29, 0, 61, "/", "/mnt/a - b",
          "cifs", "//srv/share", "rw,vers=3.1.1" },
        { "bytes that are not UTF-8 pass through", "52 29 0:62 / /mnt/\xff\xfe\x80 rw - 9p hostshare rw,trans=virtio\n",
          0, 52, 29, 0, 62, "/", "/mnt/\xff\xfe\x80", "9p", "hostshare", "rw,trans=virtio" },
        { "a backslash that is no escape is kept", "53 29 0:63 /a\\b\\9xy /mnt/c\\4 rw - ceph 10.0.0.1:/ rw\n", 0, 53,
          29, 0, 63, "/a\\b\\9xy", "/mnt/c\\4", "ceph", "10.0.0.1:/", "rw" },
        { "an escape cut by the end of a field is kept", "54 29 0:64 / /mnt/d\\04 rw - fuse.rclone remote: rw\n", 0, 54,
          29, 0, 64, "/", "/mnt/d\\04", "fuse.rclone", "remote:", "rw" },
        { "an escaped dash field is not the separator", "55 29 0:65 / /mnt/e rw \\055 - afs #cell:root.cell. rw\n", 0,
          55, 29, 0, 65, "/", "/mnt/e", "afs", "#cell:root.cell.", "rw" },
        { "large ids and device numbers", "2147483647 2147483646 4095:1048575 / /x rw - coda /dev/cfs0 rw\n", 0,
          2147483647, 2147483646, 4095, 1048575, "/", "/x", "coda", "/dev/cfs0", "rw" },

        { "no separator", "29 1 8:1 / / rw shared:1 ext4 /dev/sda1 rw\n", -ENOENT },
        { "nothing after the separator", "29 1 8:1 / / rw -\n", -ENOENT },
        { "two fields after the separator", "29 1 8:1 / / rw - ext4 /dev/sda1\n", -ENOENT },
        { "a mount id that is not a number", "x 1 8:1 / / rw - ext4 /dev/sda1 rw\n", -ENOENT },
        { "a device without a colon", "29 1 8 / / rw - ext4 /dev/sda1 rw\n", -ENOENT },
        { "a newline inside", "29 1 8:1 / /a\nb rw - ext4 /dev/sda1 rw\n", -ENOENT },
        { "cut after the mount point", "29 1 8:1 / /\n", -ENOENT },
};

/* Writes text to a new file in dir; returns its path. */
static char *write_mountinfo(const char *dir, const char *text) {
        char *path = g_build_filename(dir, "mountinfo", NULL);

        g_assert_true(g_file_set_contents(path, text, -1, NULL));
        return path;
}

/* Each line alone, then the same line after a good one: a line skipped
 * does not hide the others. */
static void test_lines(void) {
        g_autofree char *dir = g_dir_make_tmp("test-fstype-XXXXXX", NULL);

        for (size_t i = 0; i < ELEMENTSOF(line_cases); i++) {
                const LineCase *c = &line_cases[i];
                g_autofree char *path = write_mountinfo(dir, c->line);
                g_autofree char *two = NULL, *path2 = NULL;
                MountEntry e = {}, first = {};
                int r;

                g_test_message("case: %s", c->what);
                r = mountinfo_find(path, c->error ? 29 : c->mount_id, &e);
                g_assert_cmpint(r, ==, c->error);
                two = g_strconcat("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n", c->line, NULL);
                g_unlink(path);
                path2 = write_mountinfo(dir, two);
                g_assert_cmpint(mountinfo_find(path2, 1, &first), ==, 0);
                mount_entry_done(&first);
                g_unlink(path2);
                if (r < 0)
                        continue;
                g_assert_cmpint(e.mount_id, ==, c->mount_id);
                g_assert_cmpint(e.parent_id, ==, c->parent_id);
                g_assert_cmpuint(e.major, ==, c->major);
                g_assert_cmpuint(e.minor, ==, c->minor);
                g_assert_cmpstr(e.root, ==, c->root);
                g_assert_cmpstr(e.mount_point, ==, c->mount_point);
                g_assert_cmpstr(e.fstype, ==, c->fstype);
                g_assert_cmpstr(e.source, ==, c->source);
                g_assert_cmpstr(e.super_options, ==, c->super_options);
                mount_entry_done(&e);
        }
        g_assert_cmpint(g_rmdir(dir), ==, 0);
}

static void test_find(void) {
        /* The one looked for sits between a broken line and a good one. */
        static const char text[] = "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                                   "garbage that is no mountinfo line\n"
                                   "7 1 0:40 / /mnt/\\040nfs rw shared:3 - nfs srv:/e rw,vers=3\n"
                                   "8 1 0:41 / /mnt/fuse rw - fuse.sshfs u@h: rw";
        g_autofree char *dir = g_dir_make_tmp("test-fstype-XXXXXX", NULL);
        g_autofree char *path = write_mountinfo(dir, text);
        g_autofree char *empty = NULL;
        MountEntry e = {};

        g_assert_cmpint(mountinfo_find(path, 7, &e), ==, 0);
        g_assert_cmpstr(e.mount_point, ==, "/mnt/ nfs");
        g_assert_cmpstr(e.fstype, ==, "nfs");
        mount_entry_done(&e);
        /* The last line has no newline. */
        g_assert_cmpint(mountinfo_find(path, 8, &e), ==, 0);
        g_assert_cmpstr(e.fstype, ==, "fuse.sshfs");
        mount_entry_done(&e);
        g_assert_cmpint(mountinfo_find(path, 9, &e), ==, -ENOENT);
        g_unlink(path);
        empty = write_mountinfo(dir, "");
        g_assert_cmpint(mountinfo_find(empty, 1, &e), ==, -ENOENT);
        g_unlink(empty);
        g_assert_cmpint(mountinfo_find(empty, 1, &e), <, 0); /* no file */
        g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/* Whether another mount is below a directory (fanotify.c serves a tree only if none is). */
static void test_has_below(void) {
        static const char text[] = "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                                   "2 1 0:40 / /home rw - ext4 /dev/sda2 rw\n"
                                   "3 2 0:41 / /home/u/mnt\\040x rw - tmpfs t rw\n"
                                   "4 1 0:42 / /homework rw - tmpfs t rw\n";
        g_autofree char *dir = g_dir_make_tmp("test-fstype-XXXXXX", NULL);
        g_autofree char *path = write_mountinfo(dir, text);

        g_assert_cmpint(mountinfo_has_below(path, "/home/u"), ==, 1);
        g_assert_cmpint(mountinfo_has_below(path, "/home/u/mnt x"), ==, 0); /* the mount point itself */
        g_assert_cmpint(mountinfo_has_below(path, "/home/v"), ==, 0);
        g_assert_cmpint(mountinfo_has_below(path, "/home"), ==, 1);
        g_assert_cmpint(mountinfo_has_below(path, "/"), ==, 1);
        g_assert_cmpint(mountinfo_has_below(path, "/hom"), ==, 0); /* a prefix, not a parent */
        g_assert_cmpint(mountinfo_has_below(path, "/homework"), ==, 0);
        g_unlink(path);
        g_assert_cmpint(mountinfo_has_below(path, "/"), <, 0); /* no file */
        g_assert_cmpint(g_rmdir(dir), ==, 0);
}

static void test_kinds(void) {
        static const struct {
                uint64_t magic;
                FsKind kind;
        } magics[] = {
                { NFS_SUPER_MAGIC, FS_NFS },
                { 0x517B, FS_CIFS },
                { 0xFF534D42, FS_CIFS },
                /* f_type is a signed long: the kernel's CIFS magic sign-extended. */
                { 0xFFFFFFFFFF534D42ull, FS_CIFS },
                { 0xFE534D42, FS_CIFS },
                { 0x65735546, FS_FUSE },
                { 0x01021997, FS_9P },
                { 0x5346414F, FS_AFS },
                { 0x6B414653, FS_AFS },
                { 0x00C36400, FS_CEPH },
                { 0x73757245, FS_CODA },
                { EXT4_SUPER_MAGIC, FS_LOCAL },
                { TMPFS_MAGIC, FS_LOCAL },
                { BTRFS_SUPER_MAGIC, FS_LOCAL },
                { OVERLAYFS_SUPER_MAGIC, FS_LOCAL },
                { 0, FS_LOCAL },
        };

        for (size_t i = 0; i < ELEMENTSOF(magics); i++)
                g_assert_cmpint(fs_kind_from_magic(magics[i].magic), ==, magics[i].kind);

        for (int k = 0; k < _FS_KIND_MAX; k++)
                g_assert_cmpint(fs_kind_from_string(fs_kind_to_string(k)), ==, k);
        g_assert_cmpint(fs_kind_from_string("smb"), ==, _FS_KIND_INVALID);
        g_assert_null(fs_kind_to_string(_FS_KIND_MAX));

        g_assert_cmpint(fs_kind_refine(FS_FUSE, "fuseblk"), ==, FS_LOCAL);
        g_assert_cmpint(fs_kind_refine(FS_FUSE, "fuse"), ==, FS_FUSE);
        g_assert_cmpint(fs_kind_refine(FS_FUSE, "fuse.sshfs"), ==, FS_FUSE);
        g_assert_cmpint(fs_kind_refine(FS_FUSE, NULL), ==, FS_FUSE);
        g_assert_cmpint(fs_kind_refine(FS_NFS, "fuseblk"), ==, FS_NFS);
}

static void test_detect_local(void) {
        g_autofree char *dir = g_dir_make_tmp("test-fstype-XXXXXX", NULL);
        _cleanup_close_ int fd = -1, pfd = -1;
        FsInfo info;
        int id;

        g_assert_nonnull(dir);
        fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(fs_detect(fd, NULL, &info), ==, 0);
        /* Wherever the tests run, their temporary directory is not remote. */
        if (info.kind != FS_LOCAL)
                g_test_message("TMPDIR %s is on %s", dir, fs_kind_to_string(info.kind));
        else
                g_assert_false(info.have_mount); /* local: mountinfo is not read */
        fs_info_done(&info);

        g_assert_cmpint(fs_mount_id(fd, &id), ==, 0);
        g_assert_cmpint(id, >, 0);
        pfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(pfd, >=, 0);
        g_assert_cmpint(fs_detect(pfd, NULL, &info), ==, 0);
        g_assert_cmpint(info.kind, ==, FS_LOCAL);
        g_assert_cmpuint(info.magic, ==, PROC_SUPER_MAGIC);
        fs_info_done(&info);
        g_assert_cmpint(rmdir(dir), ==, 0);
}

/* A FUSE mount for real: bindfs over a directory, when this host can. */
static void test_detect_fuse(void) {
        g_autofree char *dir = g_dir_make_tmp("test-fstype-XXXXXX", NULL);
        g_autofree char *back = NULL, *mnt = NULL, *bindfs = g_find_program_in_path("bindfs");
        _cleanup_close_ int fd = -1;
        g_autoptr(GError) error = NULL;
        int status = -1, r;
        FsInfo info;

        g_assert_nonnull(dir);
        back = g_build_filename(dir, "back dir", NULL);
        mnt = g_build_filename(dir, "mnt\tpoint", NULL); /* escaped in mountinfo */
        g_assert_cmpint(g_mkdir(back, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(mnt, 0755), ==, 0);

        if (!bindfs || access("/dev/fuse", R_OK | W_OK) < 0 ||
            !g_spawn_sync(NULL, (char *[]) { bindfs, back, mnt, NULL }, NULL, 0, NULL, NULL, NULL, NULL, &status, &error) ||
            !g_spawn_check_wait_status(status, NULL)) {
                g_test_skip("no FUSE mount here: bindfs missing, /dev/fuse unusable or not root");
                (void) rmdir(back);
                (void) rmdir(mnt);
                (void) rmdir(dir);
                return;
        }

        fd = open(mnt, O_PATH | O_DIRECTORY | O_CLOEXEC);
        r = fd < 0 ? -errno : fs_detect(fd, NULL, &info);
        fd = safe_close(fd);
        /* Unmounted before anything is checked: a failed check leaves no mount behind. */
        g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
        g_assert_cmpint(rmdir(back), ==, 0);
        g_assert_cmpint(rmdir(mnt), ==, 0);
        g_assert_cmpint(rmdir(dir), ==, 0);

        g_assert_cmpint(r, ==, 0);
        g_assert_cmpint(info.kind, ==, FS_FUSE);
        g_assert_cmpuint(info.magic, ==, FUSE_SUPER_MAGIC);
        g_assert_true(info.have_mount);
        g_assert_cmpstr(info.mount.mount_point, ==, mnt);
        /* bindfs names its source after the backing directory, or "bindfs"
         * when that has a space; its type is "fuse" or "fuse.bindfs" by
         * version: either way they are there. */
        g_assert_true(strlen(info.mount.source) > 0);
        g_assert_true(g_str_has_prefix(info.mount.fstype, "fuse"));
        g_assert_cmpint(info.mount.mount_id, ==, info.mount_id);
        fs_info_done(&info);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/fstype/mountinfo-lines", test_lines);
        g_test_add_func("/fstype/mountinfo-find", test_find);
        g_test_add_func("/fstype/mountinfo-has-below", test_has_below);
        g_test_add_func("/fstype/kinds", test_kinds);
        g_test_add_func("/fstype/detect-local", test_detect_local);
        g_test_add_func("/fstype/detect-fuse", test_detect_fuse);
        return g_test_run();
}
