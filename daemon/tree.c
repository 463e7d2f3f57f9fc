/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tree - following the directory tree of a RECURSIVE subscription
 *
 * The walk keeps a stack of paths, not of open directories, so a wide tree
 * costs memory for names, not file descriptors. Each directory is opened as
 * the owner (access_open_as: O_PATH, O_DIRECTORY|O_NOFOLLOW, read
 * permission checked), linked, then read with readdir on an fd reopened
 * from it. The walk is synchronous: a tree of
 * N directories costs N opens and N kernel watches before AddWatch returns,
 * and the owner's limits bound N.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <limits.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "event_bits.h"
#include "log.h"
#include "macro.h"
#include "tree.h"

char *tree_path_join(const char *dir, const char *name, size_t name_len) {
        size_t dl = strlen(dir);
        char *p;

        if (dl == 1 && dir[0] == '/')
                dl = 0;
        p = malloc(dl + 1 + name_len + 1);
        if (!p)
                return NULL;
        memcpy(p, dir, dl);
        p[dl] = '/';
        memcpy(p + dl + 1, name, name_len);
        p[dl + 1 + name_len] = '\0';
        return p;
}

/* Reads the directory open at fd (at path): reports its entries if
 * synthesize, and pushes its subdirectories on the stack. */
static int scan(Manager *m, Subscription *s, int fd, const char *path, bool synthesize, uint64_t now,
                GPtrArray *stack) {
        Client *c = s->owner;
        struct dirent *de;
        DIR *d;
        int dfd;

        /* fd is O_PATH (access_open_as) or a client's readable fd: reading
         * needs an fd of our own, reopened as the daemon (the owner's read
         * permission was checked when fd was opened). This open, the
         * getdents and the close are seen by this directory's watchers:
         * IN_OPEN, IN_ACCESS, IN_CLOSE_NOWRITE with IN_ISDIR. */
        {
                char proc[sizeof("/proc/self/fd/") + 12];

                snprintf(proc, sizeof(proc), "/proc/self/fd/%i", fd);
                dfd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        }
        if (dfd < 0)
                return negative_errno();
        d = fdopendir(dfd);
        if (!d) {
                int r = negative_errno();
                safe_close(dfd);
                return r;
        }

        while ((de = readdir(d))) {
                size_t l = strlen(de->d_name);
                bool is_dir = de->d_type == DT_DIR;
                char *child;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (de->d_type == DT_UNKNOWN) {
                        struct stat st;

                        is_dir = fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode);
                }
                if (synthesize && (s->mask & IN_CREATE)) {
                        manager_queue_record(m, c, record_new(RECORD_EVENT, s->id, IN_CREATE | (is_dir ? IN_ISDIR : 0),
                                                              0, now, path, de->d_name, l));
                        manager_scanned_add(m, s->id, path, de->d_name, l);
                }
                if (!is_dir)
                        continue;

                child = tree_path_join(path, de->d_name, l);
                if (!child) {
                        closedir(d);
                        return -ENOMEM;
                }
                if (strlen(child) >= PATH_MAX) {
                        free(child);
                        manager_queue_overflow(m, s);   /* a part of the tree it cannot see */
                        continue;
                }
                g_ptr_array_add(stack, child);
        }
        closedir(d);
        return 0;
}

/* Links and scans every directory on the stack, and what they push. */
static int walk(Manager *m, Subscription *s, GPtrArray *stack, bool synthesize, uint64_t now) {
        Client *c = s->owner;
        int r = 0;

        while (stack->len > 0) {
                _cleanup_free_ char *path = g_ptr_array_steal_index(stack, stack->len - 1);
                _cleanup_close_ int fd = -1;
                struct stat st;

                if (strlen(path) >= PATH_MAX) {
                        manager_queue_overflow(m, s);   /* a part of the tree it cannot see */
                        continue;
                }
                fd = access_open_as(&c->caller, path, /* only_dir= */ true, /* no_follow= */ true, &st);
                if (fd < 0)
                        continue;       /* gone already, or not the owner's to read */
                r = manager_link(m, s, fd, &st, path);
                if (r == -EEXIST) {
                        r = 0;
                        continue;       /* seen already: a loop, or linked by a scan before its IN_CREATE was read */
                }
                if (r < 0)
                        break;
                r = scan(m, s, fd, path, synthesize, now, stack);
                if (r < 0)
                        break;
        }
        return r;
}

int tree_add_below(Manager *m, Subscription *s, int dir_fd, const char *dir_path, bool synthesize, uint64_t now_usec) {
        g_autoptr(GPtrArray) stack = g_ptr_array_new_with_free_func(free);
        int r;

        r = scan(m, s, dir_fd, dir_path, synthesize, now_usec, stack);
        if (r < 0)
                return r;
        return walk(m, s, stack, synthesize, now_usec);
}

void tree_add(Manager *m, Subscription *s, const char *path, bool synthesize, uint64_t now_usec) {
        g_autoptr(GPtrArray) stack = g_ptr_array_new_with_free_func(free);
        char *p = strdup(path);
        int r;

        if (!p) {
                manager_queue_overflow(m, s);
                return;
        }
        g_ptr_array_add(stack, p);
        r = walk(m, s, stack, synthesize, now_usec);
        if (r < 0) {
                /* Part of the tree is not watched: never silently. */
                log_info_errno(r, "Subscription %" PRIu32 " cannot follow '%s': %m; it gets Overflow.", s->id, path);
                manager_queue_overflow(m, s);
        }
}

void tree_remove(Manager *m, Subscription *s, const char *path) {
        size_t l = strlen(path);
        WatchLink *next;

        for (WatchLink *k = s->links; k; k = next) {
                next = k->sub_next;
                if (k->root)
                        continue;
                if (strncmp(k->path, path, l) == 0 && (k->path[l] == '\0' || k->path[l] == '/'))
                        manager_unlink(m, k);
        }
}
