/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * config - watchd.conf, read with libinih
 *
 * libinih calls a handler per key and returns the line of the first error,
 * but does not tell the handler which line it is on. We feed it through
 * ini_parse_stream() with a reader that counts the newlines it hands out, so
 * the handler knows its line and can write "file:line: message" itself; the
 * first error wins. Numbers are parsed with strtoul and range-checked: no
 * atoi, no silent truncation.
 */

#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/un.h>

#include "config.h"
#include "fan_helper.h"
#include "journal.h"
#include "log.h"
#include "macro.h"

/* A watchd.conf is a few hundred bytes; anything near this is not one. */
#define CONFIG_MAX_SIZE (64u * 1024u)

static const char *const backend_names[_BACKEND_TYPE_MAX] = {
        [BACKEND_AUTO] = "auto",
        [BACKEND_DEVICE] = "device",
        [BACKEND_SYSCALL] = "syscall",
};

static const char *const tree_backend_names[_TREE_BACKEND_MAX] = {
        [TREE_BACKEND_AUTO] = "auto",
        [TREE_BACKEND_FANOTIFY] = "fanotify",
        [TREE_BACKEND_INOTIFY] = "inotify",
};

static const char *const delivery_names[_DELIVERY_MODE_MAX] = {
        [DELIVERY_UNICAST] = "unicast",
        [DELIVERY_BROADCAST] = "broadcast",
};

BackendType backend_type_from_string(const char *s) {
        for (int i = 0; i < _BACKEND_TYPE_MAX; i++)
                if (strcmp(backend_names[i], s) == 0)
                        return i;
        return _BACKEND_TYPE_INVALID;
}

TreeBackend tree_backend_from_string(const char *s) {
        for (int i = 0; i < _TREE_BACKEND_MAX; i++)
                if (strcmp(tree_backend_names[i], s) == 0)
                        return i;
        return _TREE_BACKEND_INVALID;
}

const char *tree_backend_to_string(TreeBackend t) {
        return t >= 0 && t < _TREE_BACKEND_MAX ? tree_backend_names[t] : NULL;
}

DeliveryMode delivery_mode_from_string(const char *s) {
        for (int i = 0; i < _DELIVERY_MODE_MAX; i++)
                if (strcmp(delivery_names[i], s) == 0)
                        return i;
        return _DELIVERY_MODE_INVALID;
}

int config_init(Config *c) {
        *c = (Config) {
                .backend = BACKEND_AUTO,
                .device = strdup("/dev/inotify"),
                .log_level = LOG_INFO,
                .tree_backend = TREE_BACKEND_AUTO,
                .fanotify_helper = strdup(FAN_HELPER_SOCKET),
                .max_watches_per_client = CONFIG_AUTO,
                .max_watches_per_user = CONFIG_AUTO,
                .max_watches_unprivileged = CONFIG_AUTO,
                .max_clients_per_user = 128,
                .max_pending_events_per_client = 65536,
                .max_pending_events_per_user = 262144,
                .max_pending_bytes_per_client = UINT64_C(16) << 20,
                .max_pending_bytes_per_user = UINT64_C(64) << 20,
                .add_watch_timeout_ms = 20000,
                .move_pair_timeout_ms = 10,
                .move_pair_max_distance = 100,
                .batch_max_events = 1024,
                .read_pause_us = 1000,
                .delivery = DELIVERY_UNICAST,
                .max_polled_dirs_per_user = 1024,
                .state_directory = strdup(WATCHD_DEFAULT_STATE_DIRECTORY),
                .journal_max_subscriptions_per_user = 16,
                .journal_max_bytes_per_subscription = UINT64_C(64) << 20,
                .journal_max_bytes_per_user = UINT64_C(256) << 20,
        };
        /* 5 s, as gamin and GLib poll NFS, for every kind the kernel cannot watch. */
        for (int k = 0; k < _FS_KIND_MAX; k++)
                c->poll_interval_sec[k] = k == FS_LOCAL ? 0 : 5;
        return c->device && c->state_directory && c->fanotify_helper ? 0 : -ENOMEM;
}

bool config_polls_remote(const Config *c) {
        for (int k = 0; k < _FS_KIND_MAX; k++)
                if (k != FS_LOCAL && c->poll_interval_sec[k] > 0)
                        return true;
        return false;
}

void config_done(Config *c) {
        free(c->device);
        c->device = NULL;
        free(c->state_directory);
        c->state_directory = NULL;
        free(c->fanotify_helper);
        c->fanotify_helper = NULL;
}

typedef struct ParseState {
        const char *name;  /* file name for messages */
        Config config;     /* being filled */
        unsigned line;     /* line the handler is on */
        unsigned newlines; /* newlines handed to inih so far */
        char *error;       /* first error, "name:line: message" */
        const char *text;  /* what the reader hands out */
        bool after_key;    /* the last line that was not blank or a comment was a key */
} ParseState;

_printf_(2, 3) static int parse_fail(ParseState *s, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        if (s->error)
                return 0; /* keep the first error */

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);

        if (asprintf(&s->error, "%s:%u: %s", s->name, s->line, msg ?: "out of memory") < 0)
                s->error = NULL;
        return 0;
}

static int parse_uint(ParseState *s, const char *key, const char *value, uint32_t min, uint32_t max, uint32_t *ret) {
        unsigned long v;
        char *end;

        if (value[0] < '0' || value[0] > '9')
                return parse_fail(s, "%s: '%s' is not a number", key, value);
        errno = 0;
        v = strtoul(value, &end, 10);
        if (errno != 0 || *end != '\0')
                return parse_fail(s, "%s: '%s' is not a number", key, value);
        if (v < min || v > max)
                return parse_fail(s, "%s: %s is out of range (%" PRIu32 "-%" PRIu32 ")", key, value, min, max);
        *ret = (uint32_t) v;
        return 1;
}

/* "64M": a number of bytes, or of KiB, MiB, GiB or TiB with K, M, G or T. */
static int parse_size(ParseState *s, const char *key, const char *value, uint64_t min, uint64_t max, uint64_t *ret) {
        static const char units[] = "KMGT";
        unsigned long long v;
        unsigned shift = 0;
        char *end;

        if (value[0] < '0' || value[0] > '9')
                goto not_a_size;
        errno = 0;
        v = strtoull(value, &end, 10);
        if (errno != 0)
                goto out_of_range;
        if (*end != '\0') {
                const char *u = strchr(units, *end);

                if (!u || end[1] != '\0')
                        goto not_a_size;
                shift = 10 * (unsigned) (u - units + 1);
                if (v > (UINT64_MAX >> shift))
                        goto out_of_range;
                v <<= shift;
        }
        if (v < min || v > max)
                goto out_of_range;
        *ret = v;
        return 1;

not_a_size:
        return parse_fail(s, "%s: '%s' is not a size (bytes, or a number followed by K, M, G or T)", key, value);
out_of_range:
        return parse_fail(s, "%s: %s is out of range (64K-1T)", key, value);
}

/* inih handler: nonzero is success. */
static int handler(void *userdata, const char *section, const char *name, const char *value) {
        ParseState *s = userdata;
        Config *c = &s->config;

        /* The handler runs once inih has read the key's line, i.e. after the newline that ends it. */
        s->line = s->newlines;

        if (strcmp(section, "daemon") == 0) {
                if (strcmp(name, "backend") == 0) {
                        BackendType t = backend_type_from_string(value);
                        if (t < 0)
                                return parse_fail(s, "backend: '%s' is not one of auto, device, syscall", value);
                        c->backend = t;
                        return 1;
                }
                if (strcmp(name, "device") == 0) {
                        char *d;

                        if (value[0] != '/')
                                return parse_fail(s, "device: '%s' is not an absolute path", value);
                        if (strlen(value) >= PATH_MAX)
                                return parse_fail(s, "device: path is too long");
                        d = strdup(value);
                        if (!d)
                                return parse_fail(s, "out of memory");
                        free(c->device);
                        c->device = d;
                        return 1;
                }
                if (strcmp(name, "tree_backend") == 0) {
                        TreeBackend t = tree_backend_from_string(value);
                        if (t < 0)
                                return parse_fail(s, "tree_backend: '%s' is not one of auto, fanotify, inotify", value);
                        c->tree_backend = t;
                        return 1;
                }
                if (strcmp(name, "fanotify_helper") == 0) {
                        char *d;

                        if (value[0] != '/')
                                return parse_fail(s, "fanotify_helper: '%s' is not an absolute path", value);
                        if (strlen(value) >= sizeof(((struct sockaddr_un *) NULL)->sun_path))
                                return parse_fail(s, "fanotify_helper: path is too long for a socket");
                        d = strdup(value);
                        if (!d)
                                return parse_fail(s, "out of memory");
                        free(c->fanotify_helper);
                        c->fanotify_helper = d;
                        return 1;
                }
                if (strcmp(name, "log_level") == 0) {
                        int l = log_level_from_string(value);
                        if (l < 0)
                                return parse_fail(s, "log_level: '%s' is not one of err, warning, notice, info, debug",
                                                  value);
                        c->log_level = l;
                        return 1;
                }
        } else if (strcmp(section, "limits") == 0) {
                static const struct {
                        const char *key;
                        size_t offset;
                        bool can_be_auto;
                } keys[] = {
                        { "max_watches_per_client", offsetof(Config, max_watches_per_client), true },
                        { "max_watches_per_user", offsetof(Config, max_watches_per_user), true },
                        { "max_watches_unprivileged", offsetof(Config, max_watches_unprivileged), true },
                        { "max_clients_per_user", offsetof(Config, max_clients_per_user), false },
                        { "max_pending_events_per_client", offsetof(Config, max_pending_events_per_client), false },
                        { "max_pending_events_per_user", offsetof(Config, max_pending_events_per_user), false },
                };

                if (strcmp(name, "max_pending_bytes_per_client") == 0)
                        return parse_size(s, name, value, CONFIG_PENDING_BYTES_MIN, CONFIG_PENDING_BYTES_MAX,
                                          &c->max_pending_bytes_per_client);
                if (strcmp(name, "max_pending_bytes_per_user") == 0)
                        return parse_size(s, name, value, CONFIG_PENDING_BYTES_MIN, CONFIG_PENDING_BYTES_MAX,
                                          &c->max_pending_bytes_per_user);
                if (strcmp(name, "add_watch_timeout_ms") == 0)
                        return parse_uint(s, name, value, 100, 600000, &c->add_watch_timeout_ms);
                for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                        uint32_t *v = (uint32_t *) ((char *) c + keys[i].offset);

                        if (strcmp(name, keys[i].key) != 0)
                                continue;
                        if (keys[i].can_be_auto && strcmp(value, "auto") == 0) {
                                *v = CONFIG_AUTO;
                                return 1;
                        }
                        return parse_uint(s, name, value, 1, UINT32_MAX, v);
                }
        } else if (strcmp(section, "events") == 0) {
                if (strcmp(name, "move_pair_timeout_ms") == 0)
                        return parse_uint(s, name, value, 0, 1000, &c->move_pair_timeout_ms);
                if (strcmp(name, "move_pair_max_distance") == 0)
                        return parse_uint(s, name, value, 1, 10000, &c->move_pair_max_distance);
                if (strcmp(name, "batch_max_events") == 0)
                        return parse_uint(s, name, value, 1, 65536, &c->batch_max_events);
                if (strcmp(name, "read_pause_us") == 0)
                        return parse_uint(s, name, value, 0, READ_PAUSE_US_MAX, &c->read_pause_us);
                if (strcmp(name, "delivery") == 0) {
                        DeliveryMode d = delivery_mode_from_string(value);
                        if (d < 0)
                                return parse_fail(s, "delivery: '%s' is not one of unicast, broadcast", value);
                        c->delivery = d;
                        c->delivery_line = s->line;
                        return 1;
                }
        } else if (strcmp(section, "poll") == 0) {
                FsKind k = fs_kind_from_string(name);

                /* A key per kind of file system, its interval in seconds. */
                if (k > FS_LOCAL)
                        return parse_uint(s, name, value, 0, CONFIG_POLL_INTERVAL_MAX, &c->poll_interval_sec[k]);
                if (strcmp(name, "max_polled_dirs_per_user") == 0)
                        return parse_uint(s, name, value, 1, UINT32_MAX, &c->max_polled_dirs_per_user);
        } else if (strcmp(section, "journal") == 0) {
                if (strcmp(name, "state_directory") == 0) {
                        char *d;

                        if (value[0] != '/')
                                return parse_fail(s, "state_directory: '%s' is not an absolute path", value);
                        if (strlen(value) >= PATH_MAX - 256)
                                return parse_fail(s, "state_directory: path is too long");
                        d = strdup(value);
                        if (!d)
                                return parse_fail(s, "out of memory");
                        free(c->state_directory);
                        c->state_directory = d;
                        return 1;
                }
                if (strcmp(name, "max_subscriptions_per_user") == 0)
                        return parse_uint(s, name, value, 1, 65536, &c->journal_max_subscriptions_per_user);
                if (strcmp(name, "max_bytes_per_subscription") == 0)
                        return parse_size(s, name, value, JOURNAL_MAX_BYTES_MIN, JOURNAL_MAX_BYTES_MAX,
                                          &c->journal_max_bytes_per_subscription);
                if (strcmp(name, "max_bytes_per_user") == 0)
                        return parse_size(s, name, value, JOURNAL_MAX_BYTES_MIN, JOURNAL_MAX_BYTES_MAX,
                                          &c->journal_max_bytes_per_user);
        } else
                return parse_fail(s, "unknown section [%s]", section);

        return parse_fail(s, "unknown key '%s' in section [%s]", name, section);
}

/*
 * inih takes a section name up to the first ']', ignores what follows it,
 * and calls no handler for a section that has no keys: "[daemon] junk", or
 * a misspelt section holding only comments, would pass unseen. So section
 * lines (and continuation lines, below) are checked here, as the reader
 * hands them out.
 */
static void check_section_line(ParseState *s, const char *line, unsigned line_no) {
        static const char *const sections[] = { "daemon", "limits", "events", "poll", "journal" };
        const char *p = line + strspn(line, " \t\r\n\f\v"), *close;
        size_t l;

        /* inih reads an indented line after a key as more of that key's value
         * (a continuation line): watchd.conf has none, so it is an error, not
         * a second value set silently. */
        if (*p != '[') {
                if (*p != '\0' && *p != '#' && *p != ';') {
                        if (p > line && s->after_key) {
                                s->line = line_no;
                                parse_fail(s, "an indented line continues the value above: not allowed in watchd.conf");
                        }
                        s->after_key = true;
                }
                return;
        }
        s->after_key = false;
        close = strchr(p, ']');
        if (!close)
                return; /* inih reports the syntax error itself */
        l = (size_t) (close - p - 1);
        s->line = line_no;
        if (close[1 + strspn(close + 1, " \t\r\n\f\v")] != '\0') {
                parse_fail(s, "unexpected text after [%.*s]", (int) l, p + 1);
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(sections); i++)
                if (strlen(sections[i]) == l && strncmp(sections[i], p + 1, l) == 0)
                        return;
        parse_fail(s, "unknown section [%.*s]", (int) l, p + 1);
}

/*
 * inih reader: one whole line per call; counts newlines. inih reads a line
 * longer than its buffer (num) in pieces and parses each piece as a line of
 * its own, so the tail of a long comment could set a key. A long comment is
 * cut short here instead (it means nothing), and any other long line is an
 * error.
 */
static char *reader(char *str, int num, void *userdata) {
        ParseState *s = userdata;
        bool ended;
        size_t n = 0;

        if (!s->text || *s->text == '\0' || s->error)
                return NULL;
        while (s->text[n] != '\0' && n + 1 < (size_t) num) {
                n++;
                if (s->text[n - 1] == '\n')
                        break;
        }
        memcpy(str, s->text, n);
        str[n] = '\0';
        s->text += n;
        ended = (n > 0 && str[n - 1] == '\n') || *s->text == '\0';

        if (!ended) {
                const char *p = str + strspn(str, " \t\r\f\v");

                s->line = s->newlines + 1;
                if (*p != '#' && *p != ';') {
                        parse_fail(s, "line is longer than %d characters", num - 2);
                        return NULL;
                }
                s->text += strcspn(s->text, "\n");
                if (*s->text == '\n')
                        s->text++;
                ended = true;
        }

        check_section_line(s, str, s->newlines + 1);
        if (ended)
                s->newlines++; /* the last line may have no newline */
        return str;
}

static int config_parse(ParseState *s, Config *ret, char **ret_error) {
        int r;

        /* Carry no state over from *ret: a reload starts from the defaults too. */
        r = config_init(&s->config);
        if (r < 0)
                return r;

        r = ini_parse_stream(reader, s, handler, s);
        if (r != 0 && !s->error) {
                if (r > 0) {
                        /* A line inih could not parse: no handler saw it. */
                        s->line = (unsigned) r;
                        parse_fail(s, "syntax error: expected [section], key = value or a comment");
                } else
                        parse_fail(s, "cannot parse: %s", r == -2 ? "out of memory" : "read error");
        }
        if (s->error) {
                config_done(&s->config);
                if (ret_error)
                        *ret_error = TAKE_PTR(s->error);
                free(s->error);
                return -EINVAL;
        }

        config_done(ret);
        *ret = s->config;
        return 0;
}

int config_load(const char *path, Config *ret, char **ret_error) {
        char *text; /* freed by hand: cppcheck does not know _cleanup_ and would call it a leak */
        ParseState s = { .name = path };
        const char *nul;
        size_t size;
        FILE *f;
        int r;

        f = fopen(path, "re");
        if (!f) {
                if (errno == ENOENT) {
                        /* A missing file means all defaults. */
                        Config c;

                        r = config_init(&c);
                        if (r < 0)
                                return r;
                        config_done(ret);
                        *ret = c;
                        return 0;
                }
                r = negative_errno();
                if (ret_error && asprintf(ret_error, "%s: cannot open: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }

        /* Read whole, so that a NUL byte (which would end a line early for
         * inih and hide the rest of it) is an error, not silently ignored. */
        text = malloc(CONFIG_MAX_SIZE + 2);
        if (!text) {
                fclose(f);
                return -ENOMEM;
        }
        size = fread(text, 1, CONFIG_MAX_SIZE + 1, f);
        r = ferror(f) ? -EIO : size > CONFIG_MAX_SIZE ? -EFBIG : 0;
        fclose(f);
        if (r < 0) {
                free(text);
                if (ret_error &&
                    asprintf(ret_error, "%s: %s", path,
                             r == -EFBIG ? "larger than 64 KiB: not a watchd.conf" : "read error") < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        text[size] = '\0';
        nul = memchr(text, '\0', size);
        if (nul) {
                unsigned line = 1;

                for (const char *p = text; p < nul; p++)
                        line += *p == '\n';
                s.line = line;
                parse_fail(&s, "contains a NUL byte");
                free(text);
                if (ret_error)
                        *ret_error = TAKE_PTR(s.error);
                free(s.error);
                return -EINVAL;
        }
        s.text = text;
        r = config_parse(&s, ret, ret_error);
        free(text);
        return r;
}

int config_load_string(const char *name, const char *text, Config *ret, char **ret_error) {
        ParseState s = { .name = name, .text = text };

        return config_parse(&s, ret, ret_error);
}
