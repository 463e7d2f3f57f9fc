/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * durable_store - the definitions of durable subscriptions, on disk
 *
 * The definition file is text an administrator can read:
 *
 *   # watchd durable subscription: see watchd(8), DURABLE SUBSCRIPTIONS
 *   name=indexer
 *   uid=1000
 *   gid=1000
 *   groups=24 27 1000
 *   path=/home/u/Documents
 *   mask=0x3c6
 *   flags=0x1
 *   created=1733280000
 *
 * A path is any bytes but NUL: bytes outside printable ASCII, and the
 * backslash, are written \xNN. Every key once, all of them; anything else
 * is an error, and a subscription whose definition does not read is left
 * alone by the daemon (logged), never half-loaded.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "durable_store.h"
#include "hex.h"
#include "log.h"
#include "macro.h"

#define DEFINITION_NAME "definition"
#define DEFINITION_MAX  (64u * 1024u)
#define GROUPS_MAX      65536u

void durable_def_done(DurableDef *d) {
        free(d->name);
        free(d->gids);
        free(d->path);
        *d = (DurableDef) {};
}

bool durable_name_valid(const char *name) {
        size_t l = strlen(name);

        if (l == 0 || l > DURABLE_NAME_MAX || name[0] == '.')
                return false;
        for (size_t i = 0; i < l; i++) {
                char c = name[i];

                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '.' || c == '-'))
                        return false;
        }
        return true;
}

char *durable_store_dir(const char *state_dir, uid_t uid, const char *name) {
        char *p;

        if (asprintf(&p, "%s/durable/%u/%s", state_dir, (unsigned) uid, name) < 0)
                return NULL;
        return p;
}

static int mkdir_one(const char *path) {
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

/* STATE/durable/<uid>/<name>, each level made if need be. */
static int make_dirs(const char *state_dir, uid_t uid, const char *name) {
        _cleanup_free_ char *durable = NULL, *user = NULL, *sub = NULL;
        int r;

        if (asprintf(&durable, "%s/durable", state_dir) < 0 || asprintf(&user, "%s/%u", durable, (unsigned) uid) < 0 ||
            asprintf(&sub, "%s/%s", user, name) < 0)
                return -ENOMEM;
        r = mkdir_one(state_dir);
        if (r >= 0)
                r = mkdir_one(durable);
        if (r >= 0)
                r = mkdir_one(user);
        if (r >= 0)
                r = mkdir_one(sub);
        return r;
}

static void put_escaped(FILE *f, const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p > 0x20 && *p < 0x7f && *p != '\\')
                        fputc(*p, f);
                else
                        fprintf(f, "\\x%02x", *p);
}

int durable_def_save(const char *state_dir, const DurableDef *d) {
        _cleanup_free_ char *dir = NULL, *tmp = NULL, *final = NULL;
        FILE *f;
        int fd, r;

        if (!durable_name_valid(d->name) || !d->path || d->path[0] != '/')
                return -EINVAL;
        r = make_dirs(state_dir, d->uid, d->name);
        if (r < 0)
                return r;
        dir = durable_store_dir(state_dir, d->uid, d->name);
        if (!dir || asprintf(&tmp, "%s/.%s.tmp", dir, DEFINITION_NAME) < 0 ||
            asprintf(&final, "%s/%s", dir, DEFINITION_NAME) < 0)
                return -ENOMEM;

        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return negative_errno();
        f = fdopen(fd, "w");
        if (!f) {
                r = negative_errno();
                safe_close(fd);
                (void) unlink(tmp);
                return r;
        }
        fprintf(f, "# watchd durable subscription: see watchd(8), DURABLE SUBSCRIPTIONS\n");
        fprintf(f, "name=%s\nuid=%u\ngid=%u\ngroups=", d->name, (unsigned) d->uid, (unsigned) d->gid);
        for (size_t i = 0; i < d->n_gids; i++)
                fprintf(f, "%s%u", i > 0 ? " " : "", (unsigned) d->gids[i]);
        fprintf(f, "\npath=");
        put_escaped(f, d->path);
        fprintf(f, "\nmask=0x%" PRIx32 "\nflags=0x%" PRIx32 "\ncreated=%" PRIu64 "\n", d->mask, d->flags, d->created);

        r = fflush(f) != 0 || ferror(f) ? negative_errno() : 0;
        if (r >= 0 && fsync(fileno(f)) < 0)
                r = negative_errno();
        if (fclose(f) != 0 && r >= 0)
                r = negative_errno();
        if (r >= 0 && rename(tmp, final) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
                (void) fsync(fd);
                safe_close(fd);
        }
        return 0;
}

typedef struct Parse {
        const char *file;
        unsigned line;
        char *error;
} Parse;

_printf_(2, 3) static int parse_fail(Parse *p, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (!p->error && asprintf(&p->error, "%s:%u: %s", p->file, p->line, msg ?: "out of memory") < 0)
                p->error = NULL;
        return -EBADMSG;
}

static int parse_u64(const char *v, int base, uint64_t max, uint64_t *ret) {
        unsigned long long x;
        char *end;

        if (!((v[0] >= '0' && v[0] <= '9')))
                return -EINVAL;
        errno = 0;
        x = strtoull(v, &end, base);
        if (errno != 0 || *end != '\0' || end == v || x > max)
                return -EINVAL;
        *ret = x;
        return 0;
}

static int unescape(const char *v, char **ret) {
        size_t l = strlen(v), o = 0;
        char *s = malloc(l + 1);

        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < l; i++) {
                int b;

                if (v[i] != '\\') {
                        s[o++] = v[i];
                        continue;
                }
                if (i + 3 >= l || v[i + 1] != 'x' || (b = hex_byte(v + i + 2, /* any_case= */ false)) <= 0) {
                        free(s);
                        return -EINVAL;
                }
                s[o++] = (char) b;
                i += 3;
        }
        s[o] = '\0';
        *ret = s;
        return 0;
}

static int parse_groups(const char *v, gid_t **ret, size_t *ret_n) {
        g_autoptr(GArray) g = g_array_new(FALSE, FALSE, sizeof(gid_t));
        const char *p = v;
        size_t n;

        while (*p) {
                char *end;
                unsigned long x;

                if (*p < '0' || *p > '9')
                        return -EINVAL;
                errno = 0;
                x = strtoul(p, &end, 10);
                if (errno != 0 || x > UINT32_MAX - 1 || (*end != ' ' && *end != '\0'))
                        return -EINVAL;
                if (g->len >= GROUPS_MAX)
                        return -EINVAL;
                g_array_append_val(g, ((gid_t) { x }));
                p = *end ? end + 1 : end;
                if (*end == ' ' && *p == '\0')
                        return -EINVAL; /* a trailing space */
        }
        n = g->len;
        *ret = n > 0 ? g_array_steal(g, NULL) : NULL;
        *ret_n = n;
        return 0;
}

enum {
        KEY_NAME = 1 << 0,
        KEY_UID = 1 << 1,
        KEY_GID = 1 << 2,
        KEY_GROUPS = 1 << 3,
        KEY_PATH = 1 << 4,
        KEY_MASK = 1 << 5,
        KEY_FLAGS = 1 << 6,
        KEY_CREATED = 1 << 7,
        KEY_ALL = (1 << 8) - 1,
};

static int parse_line(Parse *p, char *line, DurableDef *d, unsigned *seen) {
        static const struct {
                const char *key;
                unsigned bit;
        } keys[] = {
                { "name", KEY_NAME }, { "uid", KEY_UID },   { "gid", KEY_GID },     { "groups", KEY_GROUPS },
                { "path", KEY_PATH }, { "mask", KEY_MASK }, { "flags", KEY_FLAGS }, { "created", KEY_CREATED },
        };
        char *eq = strchr(line, '='), *v;
        unsigned bit = 0;
        uint64_t x;
        int r = 0;

        if (line[0] == '#' || line[0] == '\0')
                return 0;
        if (!eq)
                return parse_fail(p, "expected key=value");
        *eq = '\0';
        v = eq + 1;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (strcmp(line, keys[i].key) == 0)
                        bit = keys[i].bit;
        if (!bit)
                return parse_fail(p, "unknown key '%s'", line);
        if (*seen & bit)
                return parse_fail(p, "'%s' given twice", line);
        *seen |= bit;

        switch (bit) {
        case KEY_NAME:
                if (!durable_name_valid(v))
                        return parse_fail(p, "name: '%s' is not a valid name", v);
                d->name = strdup(v);
                r = d->name ? 0 : -ENOMEM;
                break;
        case KEY_UID:
                r = parse_u64(v, 10, UINT32_MAX - 1, &x);
                d->uid = (uid_t) x;
                break;
        case KEY_GID:
                r = parse_u64(v, 10, UINT32_MAX - 1, &x);
                d->gid = (gid_t) x;
                break;
        case KEY_GROUPS:
                r = parse_groups(v, &d->gids, &d->n_gids);
                break;
        case KEY_PATH:
                r = unescape(v, &d->path);
                if (r >= 0 && (d->path[0] != '/' || strlen(d->path) >= PATH_MAX))
                        return parse_fail(p, "path: not an absolute path shorter than PATH_MAX");
                break;
        case KEY_MASK:
        case KEY_FLAGS:
                if (strncmp(v, "0x", 2) != 0)
                        return parse_fail(p, "%s: '%s' is not a hexadecimal number (0x...)", line, v);
                r = parse_u64(v + 2, 16, UINT32_MAX, &x);
                if (bit == KEY_MASK)
                        d->mask = (uint32_t) x;
                else
                        d->flags = (uint32_t) x;
                break;
        case KEY_CREATED:
                r = parse_u64(v, 10, UINT64_MAX, &d->created);
                break;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return parse_fail(p, "%s: '%s' is not valid", line, v);
        return 0;
}

int durable_def_load(const char *state_dir, uid_t uid, const char *name, DurableDef *ret, char **ret_error) {
        _cleanup_free_ char *dir = NULL, *file = NULL;
        char *text = NULL; /* freed by hand: cppcheck does not know _cleanup_ */
        DurableDef d = {};
        Parse p = {};
        unsigned seen = 0;
        ssize_t n;
        int fd, r = 0;

        if (!durable_name_valid(name))
                return -EINVAL;
        dir = durable_store_dir(state_dir, uid, name);
        if (!dir || asprintf(&file, "%s/%s", dir, DEFINITION_NAME) < 0)
                return -ENOMEM;
        p.file = file;

        fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return negative_errno();
        text = malloc(DEFINITION_MAX + 1);
        if (!text) {
                safe_close(fd);
                return -ENOMEM;
        }
        n = read(fd, text, DEFINITION_MAX + 1);
        r = n < 0 ? negative_errno() : 0;
        safe_close(fd);
        if (r < 0)
                goto out;
        if ((size_t) n > DEFINITION_MAX || memchr(text, '\0', (size_t) n)) {
                r = parse_fail(&p, "not a definition (too large, or a NUL byte)");
                goto out;
        }
        text[n] = '\0';

        for (char *line = text, *nl; *line; line = nl) {
                nl = strchr(line, '\n');
                if (!nl) {
                        p.line++;
                        r = parse_fail(&p, "no newline at the end: a torn write?");
                        goto out;
                }
                *nl++ = '\0';
                p.line++;
                r = parse_line(&p, line, &d, &seen);
                if (r < 0)
                        goto out;
        }
        p.line++;
        if (seen != KEY_ALL)
                r = parse_fail(&p, "keys missing");
        else if (strcmp(d.name, name) != 0 || d.uid != uid)
                r = parse_fail(&p, "name or uid is not those of its directory");
out:
        free(text);
        if (r < 0) {
                durable_def_done(&d);
                if (ret_error)
                        *ret_error = TAKE_PTR(p.error);
                free(p.error);
                return r;
        }
        *ret = d;
        return 0;
}

int durable_store_foreach(const char *state_dir, int (*f)(uid_t uid, const char *name, void *userdata), void *userdata) {
        _cleanup_free_ char *top = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        if (asprintf(&top, "%s/durable", state_dir) < 0)
                return -ENOMEM;
        d = opendir(top);
        if (!d)
                return errno == ENOENT ? 0 : negative_errno();
        while ((errno = 0, de = readdir(d))) {
                _cleanup_closedir_ DIR *u = NULL;
                struct dirent *ue;
                uint64_t uid;
                int fd, r;

                if (parse_u64(de->d_name, 10, UINT32_MAX - 1, &uid) < 0)
                        continue;
                fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        continue;
                r = fdopendir_take(fd, &u);
                if (r < 0)
                        return r;
                while ((errno = 0, ue = readdir(u))) {
                        if (!durable_name_valid(ue->d_name))
                                continue;
                        r = f((uid_t) uid, ue->d_name, userdata);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Removes what is in dirfd, depth first; symbolic links are removed, never followed. */
static int remove_below(int dirfd, unsigned depth) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd, r = 0;

        if (depth > 8)
                return -ELOOP; /* ours are two deep */
        r = fdopendir_take(dup(dirfd), &d);
        if (r < 0)
                return r;
        while ((errno = 0, de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (unlinkat(dirfd, de->d_name, 0) >= 0)
                        continue;
                if (errno != EISDIR && errno != EPERM)
                        return negative_errno();
                fd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return negative_errno();
                r = remove_below(fd, depth + 1);
                safe_close(fd);
                if (r < 0)
                        return r;
                if (unlinkat(dirfd, de->d_name, AT_REMOVEDIR) < 0)
                        return negative_errno();
        }
        return 0;
}

int durable_store_remove(const char *state_dir, uid_t uid, const char *name) {
        _cleanup_free_ char *dir = NULL;
        int fd, r;

        if (!durable_name_valid(name))
                return -EINVAL;
        dir = durable_store_dir(state_dir, uid, name);
        if (!dir)
                return -ENOMEM;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        r = remove_below(fd, 0);
        safe_close(fd);
        if (r < 0)
                return r;
        if (rmdir(dir) < 0)
                return negative_errno();
        return 0;
}
