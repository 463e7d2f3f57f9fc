/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * path - joining and splitting absolute paths
 *
 * The "/" case is handled here once: a directory "/" contributes nothing
 * before the slash of a name joined to it (path_prefix_len()), and every
 * absolute path is below it (path_startswith()).
 */

#include <stdlib.h>
#include <string.h>

#include "path.h"

size_t path_prefix_len(const char *dir) {
        size_t dl = strlen(dir);

        return dl == 1 && dir[0] == '/' ? 0 : dl;
}

size_t path_join_len(const char *dir, size_t name_len) {
        return path_prefix_len(dir) + 1 + name_len;
}

char *path_join_prefix_to(char *buf, const char *dir, size_t prefix_len, const char *name, size_t name_len) {
        memcpy(buf, dir, prefix_len);
        buf[prefix_len] = '/';
        memcpy(buf + prefix_len + 1, name, name_len);
        buf[prefix_len + 1 + name_len] = '\0';
        return buf;
}

char *path_join_to(char *buf, const char *dir, const char *name, size_t name_len) {
        return path_join_prefix_to(buf, dir, path_prefix_len(dir), name, name_len);
}

char *path_join(const char *dir, const char *name, size_t name_len) {
        char *p = malloc(path_join_len(dir, name_len) + 1);

        return p ? path_join_to(p, dir, name, name_len) : NULL;
}

const char *path_startswith(const char *path, const char *prefix) {
        size_t pl = path_prefix_len(prefix);

        if (strncmp(path, prefix, pl) != 0)
                return NULL;
        if (path[pl] == '\0')
                return path + pl; /* prefix itself (not "/": that has pl 0) */
        if (path[pl] != '/')
                return NULL; /* "/ab" is not below "/a" */
        return path + pl + 1;
}

const char *path_basename(const char *path, size_t *ret_dir_len) {
        const char *slash = strrchr(path, '/');
        size_t dl = !slash ? 0 : slash == path ? 1 : (size_t) (slash - path);

        if (ret_dir_len)
                *ret_dir_len = dl;
        return slash ? slash + 1 : path;
}

char *path_dirname(const char *path) {
        size_t dl;

        (void) path_basename(path, &dl);
        return strndup(path, dl);
}

char *path_simplify(const char *path) {
        char *p = malloc(strlen(path) + 1), *o = p;

        if (!p)
                return NULL;
        for (const char *i = path; *i; i++)
                if (*i != '/' || o == p || o[-1] != '/')
                        *o++ = *i;
        if (o > p + 1 && o[-1] == '/')
                o--;
        *o = '\0';
        return p;
}

bool path_has_dotdot(const char *path) {
        for (const char *p = strstr(path, ".."); p; p = strstr(p + 1, ".."))
                if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
                        return true;
        return false;
}

char *path_rebase(const char *path, const char *old, const char *new, bool *ret_oom) {
        const char *rest = path_startswith(path, old);
        char *p;

        *ret_oom = false;
        if (!rest)
                return NULL;
        p = *rest ? path_join(new, rest, strlen(rest)) : strdup(new);
        if (!p)
                *ret_oom = true;
        return p;
}
