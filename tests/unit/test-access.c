/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-access - resolving a client's path through no magic link
 *
 * access_open_path() asks the kernel (openat2 RESOLVE_NO_MAGICLINKS);
 * access_open_path_userspace() does the same a component at a time, where
 * the kernel or valgrind has no openat2. Each path of the table is opened
 * both ways and must give the same object or the same error, and the
 * expected one: symbolic links (relative, absolute, chained, dangling,
 * looping, the 40 the kernel follows and the 41st), "..", "." and trailing
 * slashes, O_DIRECTORY and O_NOFOLLOW, and /proc's links, ordinary ("self",
 * "mounts") and magic ("cwd", "fd/N", "root", "ns/...": -EXDEV).
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"

typedef struct Case {
        const char *path; /* "@" is replaced by the test's directory */
        int flags;        /* O_DIRECTORY, O_NOFOLLOW */
        int want;         /* 0: opens, else -errno */
        mode_t type;      /* if it opens: S_IFDIR, S_IFREG, S_IFLNK (0: any) */
} Case;

static char *dir;

static char *expand(const char *path) {
        g_auto(GStrv) parts = g_strsplit(path, "@", -1);

        return g_strjoinv(dir, parts);
}

/* -errno, or 0 and the object's stat. */
static int open_stat(int (*open_fn)(const char *, int), const char *path, int flags, struct stat *st) {
        int fd = open_fn(path, flags), r = 0;

        if (fd < 0)
                return fd;
        g_assert_cmpint(fcntl(fd, F_GETFL) & O_PATH, ==, O_PATH);
        if (fstat(fd, st) < 0)
                r = -errno;
        close(fd);
        return r;
}

static void check(const Case *c) {
        g_autofree char *path = expand(c->path);
        struct stat a = {}, b = {};
        int ra, rb;

        ra = open_stat(access_open_path, path, c->flags, &a);
        rb = open_stat(access_open_path_userspace, path, c->flags, &b);
        g_test_message("%s (flags 0x%x): openat2 %d, userspace %d", path, c->flags, ra, rb);
        if (ra != c->want || rb != c->want)
                g_error("%s (flags 0x%x): want %d (%s), openat2 gave %d, userspace %d", path, c->flags, c->want,
                        c->want ? g_strerror(-c->want) : "opens", ra, rb);
        if (ra < 0)
                return;
        g_assert_cmpuint(a.st_dev, ==, b.st_dev);
        g_assert_cmpuint(a.st_ino, ==, b.st_ino);
        if (c->type)
                g_assert_cmpuint(a.st_mode & S_IFMT, ==, c->type);
}

static void make(const char *rel, const char *link_target) {
        g_autofree char *p = g_build_filename(dir, rel, NULL);

        if (!link_target)
                g_assert_cmpint(g_mkdir(p, 0755), ==, 0);
        else if (strcmp(link_target, "") == 0)
                g_assert_true(g_file_set_contents(p, "", 0, NULL));
        else {
                g_autofree char *t = expand(link_target);

                g_assert_cmpint(symlink(t, p), ==, 0);
        }
}

static void test_table(void) {
        g_autofree char *long_name = g_strnfill(256, 'x');
        g_autofree char *too_long = g_strdup_printf("@/%s", long_name);
        /* clang-format off */
        static const Case cases[] = {
                { "@",                  0,                      0,              S_IFDIR },
                { "@/",                 0,                      0,              S_IFDIR },
                { "@/.",                0,                      0,              S_IFDIR },
                { "@/dir",              O_DIRECTORY,            0,              S_IFDIR },
                { "@/dir/",             0,                      0,              S_IFDIR },
                { "@/dir/../file",      0,                      0,              S_IFREG },
                { "@/dir/./../dir//",   0,                      0,              S_IFDIR },
                { "@/file",             0,                      0,              S_IFREG },
                { "@/file",             O_DIRECTORY,            -ENOTDIR,       0 },
                { "@/file/",            0,                      -ENOTDIR,       0 },
                { "@/file/x",           0,                      -ENOTDIR,       0 },
                { "@/missing",          0,                      -ENOENT,        0 },
                { "@/missing/x",        0,                      -ENOENT,        0 },
                { "@/rel",              0,                      0,              S_IFDIR },
                { "@/rel",              O_NOFOLLOW,             0,              S_IFLNK },
                { "@/rel/",             O_NOFOLLOW,             0,              S_IFDIR },
                { "@/rel",              O_NOFOLLOW | O_DIRECTORY, -ENOTDIR,     0 },
                { "@/rel/../file",      0,                      0,              S_IFREG },
                { "@/abs",              0,                      0,              S_IFDIR },
                { "@/abs/",             0,                      0,              S_IFDIR },
                { "@/chain/sub",        0,                      0,              S_IFDIR },
                { "@/dir/up",           0,                      0,              S_IFREG },
                { "@/dangling",         0,                      -ENOENT,        0 },
                { "@/dangling",         O_NOFOLLOW,             0,              S_IFLNK },
                { "@/loop1",            0,                      -ELOOP,         0 },
                { "@/loop1",            O_NOFOLLOW,             0,              S_IFLNK },
                { "@/loop1/x",          O_NOFOLLOW,             -ELOOP,         0 },
                { "@/l39",              0,                      0,              S_IFDIR },      /* 40 links */
                { "@/l40",              0,                      -ELOOP,         0 },            /* 41 */
                { "@/toproc",           0,                      0,              S_IFDIR },      /* /proc/self/fd */
                { "@/toproc/0",         0,                      -EXDEV,         0 },
                { "@/toproc/0",         O_NOFOLLOW,             0,              S_IFLNK },
                { "@/tocwd/x",          0,                      -EXDEV,         0 },
                { "/",                  0,                      0,              S_IFDIR },
                { "/..",                0,                      0,              S_IFDIR },
                { "/proc/self/status",  0,                      0,              S_IFREG },
                { "/proc/thread-self/status", 0,                0,              S_IFREG },
                { "/proc/mounts",       0,                      0,              S_IFREG },
                { "/proc/self/cwd",     0,                      -EXDEV,         0 },
                { "/proc/self/cwd",     O_NOFOLLOW,             0,              S_IFLNK },
                { "/proc/self/cwd/",    O_NOFOLLOW,             -EXDEV,         0 },
                { "/proc/self/root/tmp", 0,                     -EXDEV,         0 },
                { "/proc/self/fd/0",    0,                      -EXDEV,         0 },
                { "/proc/self/ns/mnt",  0,                      -EXDEV,         0 },
                { "/proc/thread-self/cwd", 0,                   -EXDEV,         0 },
                { "/dev/fd/0",          0,                      -EXDEV,         0 },
                { "/dev/fd/0/..",       0,                      -EXDEV,         0 },
        };
        /* clang-format on */
        g_autoptr(GError) error = NULL;

        dir = g_dir_make_tmp("test-access-XXXXXX", &error);
        g_assert_no_error(error);
        make("dir", NULL);
        make("dir/sub", NULL);
        make("file", "");
        make("rel", "dir"); /* relative */
        {
                g_autofree char *rel = g_build_filename(dir, "rel", NULL);
                g_assert_cmpint(unlink(rel), ==, 0);
                g_assert_cmpint(symlink("dir", rel), ==, 0);
        }
        make("abs", "@/dir");
        make("chain", "@/rel");
        make("dir/up", "@/file");
        make("dangling", "@/nowhere");
        make("loop1", "@/loop2");
        make("loop2", "@/loop1");
        make("toproc", "/proc/self/fd");
        make("tocwd", "/proc/self/cwd");
        /* l0 -> dir, lN -> lN-1: lN is N + 1 links deep; the kernel follows 40. */
        make("l0", "@/dir");
        for (int i = 1; i <= 40; i++) {
                g_autofree char *name = g_strdup_printf("l%d", i), *target = g_strdup_printf("@/l%d", i - 1);

                make(name, target);
        }

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
                check(&cases[i]);
        check(&(Case) { too_long, 0, -ENAMETOOLONG, 0 });

        {
                const char *argv[] = { "rm", "-rf", dir, NULL };

                g_assert_true(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
                                           NULL, &error));
        }
        g_free(dir);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/access/open-path", test_table);
        return g_test_run();
}
