/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz-config - arbitrary files through the config loader
 *
 * The input is written to a file and loaded with config_load(), as watchd
 * does at start and on SIGHUP. The loader must never crash or leak, and
 * must never accept garbage silently: when it accepts a file, an independent
 * reading of the same bytes by the grammar of watchd.conf(5) must accept it
 * too and find the same values. When it refuses one, the message must be
 * "path:line: ..." with a line that exists in the file.
 *
 * The reference grammar is the strict one the man page promises: per line,
 * blank, a comment (';' or '#' first), "[section]" with a known section, or
 * "key = value" with a known key of that section and a valid value; inih's
 * continuation lines (leading whitespace) are not part of watchd.conf, so
 * the reference refuses them (an indented line after a key), and an
 * accepted file that has one is reported.
 */

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

#include "fuzz-check.h"

static char *strip(char *s) {
        char *e;

        while (*s && isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = '\0';
        return s;
}

static bool ref_uint(const char *v, uint32_t min, uint32_t max, uint32_t *ret) {
        unsigned long long x = 0;

        if (!*v)
                return false;
        for (const char *p = v; *p; p++) {
                if (*p < '0' || *p > '9')
                        return false;
                x = x * 10 + (unsigned) (*p - '0');
                if (x > UINT32_MAX)
                        return false;
        }
        if (x < min || x > max)
                return false;
        *ret = (uint32_t) x;
        return true;
}

/* A watch limit: a number, or "auto" (CONFIG_AUTO). */
static bool ref_watches(const char *v, uint32_t *ret) {
        if (!strcmp(v, "auto")) {
                *ret = CONFIG_AUTO;
                return true;
        }
        return ref_uint(v, 1, UINT32_MAX, ret);
}

/* A journal size: digits, then at most one of K, M, G, T (powers of 1024), from 64 KiB to 1 TiB. */
static bool ref_size(const char *v, uint64_t *ret) {
        uint64_t n = 0;
        size_t i = 0;

        if (!isdigit((unsigned char) v[0]))
                return false;
        for (; isdigit((unsigned char) v[i]); i++)
                if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, (uint64_t) (v[i] - '0'), &n))
                        return false;
        if (v[i] != '\0') {
                const char *units = "KMGT", *u = strchr(units, v[i]);

                if (v[i + 1] != '\0' || !u)
                        return false;
                for (const char *k = units; k <= u; k++)
                        if (__builtin_mul_overflow(n, 1024, &n))
                                return false;
        }
        if (n < 64 * 1024 || n > (UINT64_C(1) << 40))
                return false;
        *ret = n;
        return true;
}

/* The reference reading: true if the bytes are a valid watchd.conf; fills *c. */
static bool ref_parse(const uint8_t *data, size_t size, Config *c) {
        char section[64] = "";
        bool prev_key = false;
        size_t i = 0;

        if (memchr(data, '\0', size))
                return false;
        while (i < size) {
                const uint8_t *nl = memchr(data + i, '\n', size - i);
                size_t len = nl ? (size_t) (nl - (data + i)) : size - i;
                char *line = strndup((const char *) data + i, len), *s, *eq, *key, *value;
                bool ok = true;

                CHECK(line);
                i += len + 1;
                s = strip(line);
                /* An indented line after a key is inih's continuation line. */
                if (s > line && prev_key && *s != '\0' && *s != ';' && *s != '#')
                        ok = false;
                if (!ok || *s == '\0' || *s == ';' || *s == '#') {
                        free(line);
                        if (!ok)
                                return false;
                        continue;
                }
                if (*s == '[') {
                        size_t l = strlen(s);
                        if (s[l - 1] != ']' || l - 2 >= sizeof(section)) {
                                free(line);
                                return false;
                        }
                        prev_key = false;
                        memcpy(section, s + 1, l - 2);
                        section[l - 2] = '\0';
                        ok = !strcmp(section, "daemon") || !strcmp(section, "limits") || !strcmp(section, "events") ||
                                !strcmp(section, "poll") || !strcmp(section, "journal");
                        free(line);
                        if (!ok)
                                return false;
                        continue;
                }
                eq = strpbrk(s, "=:");
                if (!eq) {
                        free(line);
                        return false;
                }
                *eq = '\0';
                prev_key = true;
                key = strip(s);
                value = eq + 1;
                /* inih's inline comments: " ;" starts one. */
                for (char *p = value; *p; p++)
                        if (*p == ';' && p > value && isspace((unsigned char) p[-1])) {
                                *p = '\0';
                                break;
                        }
                value = strip(value);

                if (!strcmp(section, "daemon") && !strcmp(key, "backend")) {
                        BackendType t = backend_type_from_string(value);
                        ok = t >= 0;
                        if (ok)
                                c->backend = t;
                } else if (!strcmp(section, "daemon") && !strcmp(key, "device")) {
                        ok = value[0] == '/' && strlen(value) < 4096;
                        if (ok) {
                                free(c->device);
                                c->device = strdup(value);
                                CHECK(c->device);
                        }
                } else if (!strcmp(section, "daemon") && !strcmp(key, "tree_backend")) {
                        TreeBackend t = tree_backend_from_string(value);
                        ok = t >= 0;
                        if (ok)
                                c->tree_backend = t;
                } else if (!strcmp(section, "daemon") && !strcmp(key, "fanotify_helper")) {
                        ok = value[0] == '/' && strlen(value) < 108;
                        if (ok) {
                                free(c->fanotify_helper);
                                c->fanotify_helper = strdup(value);
                                CHECK(c->fanotify_helper);
                        }
                } else if (!strcmp(section, "daemon") && !strcmp(key, "log_level")) {
                        int l = log_level_from_string(value);
                        ok = l >= 0;
                        if (ok)
                                c->log_level = l;
                } else if (!strcmp(section, "limits") && !strcmp(key, "max_watches_per_client"))
                        ok = ref_watches(value, &c->max_watches_per_client);
                else if (!strcmp(section, "limits") && !strcmp(key, "max_watches_per_user"))
                        ok = ref_watches(value, &c->max_watches_per_user);
                else if (!strcmp(section, "limits") && !strcmp(key, "max_watches_unprivileged"))
                        ok = ref_watches(value, &c->max_watches_unprivileged);
                else if (!strcmp(section, "limits") && !strcmp(key, "max_clients_per_user"))
                        ok = ref_uint(value, 1, UINT32_MAX, &c->max_clients_per_user);
                else if (!strcmp(section, "limits") && !strcmp(key, "max_pending_events_per_client"))
                        ok = ref_uint(value, 1, UINT32_MAX, &c->max_pending_events_per_client);
                else if (!strcmp(section, "limits") && !strcmp(key, "max_pending_events_per_user"))
                        ok = ref_uint(value, 1, UINT32_MAX, &c->max_pending_events_per_user);
                else if (!strcmp(section, "limits") && !strcmp(key, "max_pending_bytes_per_client"))
                        ok = ref_size(value, &c->max_pending_bytes_per_client);
                else if (!strcmp(section, "limits") && !strcmp(key, "max_pending_bytes_per_user"))
                        ok = ref_size(value, &c->max_pending_bytes_per_user);
                else if (!strcmp(section, "limits") && !strcmp(key, "add_watch_timeout_ms"))
                        ok = ref_uint(value, 100, 600000, &c->add_watch_timeout_ms);
                else if (!strcmp(section, "events") && !strcmp(key, "move_pair_timeout_ms"))
                        ok = ref_uint(value, 0, 1000, &c->move_pair_timeout_ms);
                else if (!strcmp(section, "events") && !strcmp(key, "move_pair_max_distance"))
                        ok = ref_uint(value, 1, 10000, &c->move_pair_max_distance);
                else if (!strcmp(section, "events") && !strcmp(key, "batch_max_events"))
                        ok = ref_uint(value, 1, 65536, &c->batch_max_events);
                else if (!strcmp(section, "events") && !strcmp(key, "delivery")) {
                        DeliveryMode d = delivery_mode_from_string(value);
                        ok = d >= 0;
                        if (ok)
                                c->delivery = d;
                } else if (!strcmp(section, "poll") && !strcmp(key, "max_polled_dirs_per_user"))
                        ok = ref_uint(value, 1, UINT32_MAX, &c->max_polled_dirs_per_user);
                else if (!strcmp(section, "poll")) {
                        /* One key a kind of remote file system, written out here
                         * rather than taken from fstype.c: the reference is apart. */
                        static const struct {
                                const char *key;
                                FsKind kind;
                        } kinds[] = {
                                { "nfs", FS_NFS }, { "cifs", FS_CIFS }, { "fuse", FS_FUSE }, { "9p", FS_9P },
                                { "afs", FS_AFS }, { "ceph", FS_CEPH }, { "coda", FS_CODA },
                        };

                        ok = false;
                        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
                                if (!strcmp(key, kinds[k].key))
                                        ok = ref_uint(value, 0, 86400, &c->poll_interval_sec[kinds[k].kind]);
                } else if (!strcmp(section, "journal") && !strcmp(key, "state_directory")) {
                        /* An absolute path with room for the names below it. */
                        ok = value[0] == '/' && strlen(value) < 4096 - 256;
                        if (ok) {
                                free(c->state_directory);
                                c->state_directory = strdup(value);
                                CHECK(c->state_directory);
                        }
                } else if (!strcmp(section, "journal") && !strcmp(key, "max_subscriptions_per_user"))
                        ok = ref_uint(value, 1, 65536, &c->journal_max_subscriptions_per_user);
                else if (!strcmp(section, "journal") && !strcmp(key, "max_bytes_per_subscription"))
                        ok = ref_size(value, &c->journal_max_bytes_per_subscription);
                else if (!strcmp(section, "journal") && !strcmp(key, "max_bytes_per_user"))
                        ok = ref_size(value, &c->journal_max_bytes_per_user);
                else
                        ok = false;
                free(line);
                if (!ok)
                        return false;
        }
        return true;
}

static int memfd = -1;
static char memfd_path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *error = NULL;
        Config c, ref;
        size_t lines = 1;
        int r;

        log_set_max_level(LOG_EMERG);
        if (memfd < 0) {
                memfd = memfd_create("watchd.conf", MFD_CLOEXEC);
                CHECK(memfd >= 0);
                snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
        }
        CHECK(ftruncate(memfd, 0) == 0);
        CHECK(pwrite(memfd, data, size, 0) == (ssize_t) size);
        for (size_t i = 0; i < size; i++)
                lines += data[i] == '\n';

        CHECK(config_init(&c) == 0);
        r = config_load(memfd_path, &c, &error);
        if (r < 0) {
                const char *p;
                char *end;
                unsigned long line;

                /* "path:line: message", the line within the file. */
                CHECK(r == -EINVAL);
                CHECK(error);
                CHECK(strncmp(error, memfd_path, strlen(memfd_path)) == 0);
                p = error + strlen(memfd_path);
                CHECK(*p == ':');
                line = strtoul(p + 1, &end, 10);
                CHECK(*end == ':');
                CHECK(line >= 1 && line <= lines);
                free(error);
                config_done(&c);
                return 0;
        }
        CHECK(r == 0);
        CHECK(!error);

        /* Accepted: the reference reading agrees, value for value. */
        CHECK(config_init(&ref) == 0);
        if (!ref_parse(data, size, &ref)) {
                fprintf(stderr, "config_load() accepted a file the grammar refuses\n");
                abort();
        }
        CHECK(c.backend == ref.backend);
        CHECK(strcmp(c.device, ref.device) == 0);
        CHECK(c.log_level == ref.log_level);
        CHECK(c.tree_backend == ref.tree_backend);
        CHECK(strcmp(c.fanotify_helper, ref.fanotify_helper) == 0);
        CHECK(c.max_watches_per_client == ref.max_watches_per_client);
        CHECK(c.max_watches_per_user == ref.max_watches_per_user);
        CHECK(c.max_watches_unprivileged == ref.max_watches_unprivileged);
        CHECK(c.max_clients_per_user == ref.max_clients_per_user);
        CHECK(c.max_pending_events_per_client == ref.max_pending_events_per_client);
        CHECK(c.max_pending_events_per_user == ref.max_pending_events_per_user);
        CHECK(c.max_pending_bytes_per_client == ref.max_pending_bytes_per_client);
        CHECK(c.max_pending_bytes_per_user == ref.max_pending_bytes_per_user);
        CHECK(c.add_watch_timeout_ms == ref.add_watch_timeout_ms);
        CHECK(c.move_pair_timeout_ms == ref.move_pair_timeout_ms);
        CHECK(c.move_pair_max_distance == ref.move_pair_max_distance);
        CHECK(c.batch_max_events == ref.batch_max_events);
        CHECK(c.delivery == ref.delivery);
        CHECK(memcmp(c.poll_interval_sec, ref.poll_interval_sec, sizeof(c.poll_interval_sec)) == 0);
        CHECK(c.max_polled_dirs_per_user == ref.max_polled_dirs_per_user);
        CHECK(strcmp(c.state_directory, ref.state_directory) == 0);
        CHECK(c.journal_max_subscriptions_per_user == ref.journal_max_subscriptions_per_user);
        CHECK(c.journal_max_bytes_per_subscription == ref.journal_max_bytes_per_subscription);
        CHECK(c.journal_max_bytes_per_user == ref.journal_max_bytes_per_user);
        config_done(&ref);
        config_done(&c);
        return 0;
}
