/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sink-watchman: a Watchman subscription over its unix socket, JSON encoding
 * (what pywatchman and the watchman CLI's -p mode speak), one PDU a line.
 *
 * Watchman reports files, not events: a subscription PDU lists the names that
 * changed since the last one, each once, after the root has been quiet for
 * `settle` ms (default 20; bench/run writes a .watchmanconfig for the settle 1
 * variant). The first PDU is the initial state and is not counted. A rename is
 * the old name with exists=false and the new one with exists=true (halves).
 * A later is_fresh_instance PDU means Watchman recrawled after losing events:
 * it is counted as a signalled loss. The socket path is given with --extra.
 */

#include <errno.h>
#include <json-glib/json-glib.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sink.h"

typedef struct Conn {
        int fd;
        char *buf;
        size_t len, alloc;
} Conn;

typedef struct Root {
        const char *dir; /* the watched root */
        char clock[128]; /* its clock before the writer starts */
} Root;

static int conn_send(Conn *c, const char *json) {
        size_t n = strlen(json);

        while (n > 0) {
                ssize_t k = write(c->fd, json, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                json += k;
                n -= (size_t) k;
        }
        return 0;
}

/* Returns the next whole line (NUL-terminated, owned by c) or NULL. Blocks up
 * to timeout_ms; *eof is set when the server went away. */
static char *conn_line(Conn *c, size_t *consumed, int timeout_ms, bool *eof) {
        for (;;) {
                char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
                struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
                ssize_t k;

                if (nl) {
                        *nl = '\0';
                        *consumed = (size_t) (nl - c->buf) + 1;
                        return c->buf;
                }
                if (c->alloc - c->len < 65536) {
                        size_t n = c->alloc ? c->alloc * 2 : 1 << 20;
                        char *p = g_realloc(c->buf, n);

                        c->buf = p;
                        c->alloc = n;
                }
                if (poll(&pfd, 1, timeout_ms) <= 0)
                        return NULL;
                k = read(c->fd, c->buf + c->len, c->alloc - c->len);
                if (k <= 0) {
                        *eof = true;
                        return NULL;
                }
                c->len += (size_t) k;
        }
}

static void conn_consume(Conn *c, size_t n) {
        memmove(c->buf, c->buf + n, c->len - n);
        c->len -= n;
}

static void handle_files(Sink *s, const Root *root, JsonArray *files) {
        guint n = json_array_get_length(files);

        for (guint i = 0; i < n; i++) {
                JsonObject *f = json_array_get_object_element(files, i);
                const char *name;
                char path[4096];

                if (!f || !json_object_has_member(f, "name")) {
                        sink_other(s);
                        continue;
                }
                name = json_object_get_string_member(f, "name");
                if (!name) {
                        sink_other(s);
                        continue;
                }
                if (s->mode == SINK_RENAME) {
                        gboolean exists = json_object_get_boolean_member_with_default(f, "exists", TRUE);

                        snprintf(path, sizeof path, "%s/%s", root->dir, name);
                        sink_half(s, exists ? SINK_MOVE_TO : SINK_MOVE_FROM, path);
                } else
                        sink_file(s, name);
        }
}

/* Handles one PDU; returns 1 for a command response (its clock, if any, is
 * copied to cur), 0 for a subscription PDU, -EIO on an error response. */
static int handle_pdu(Sink *s, Root *roots, size_t n_roots, Root *cur, const char *line) {
        g_autoptr(JsonParser) parser = json_parser_new();
        g_autoptr(GError) error = NULL;
        JsonObject *o;
        JsonNode *node;
        const char *sub;
        Root *root;

        if (!json_parser_load_from_data(parser, line, -1, &error)) {
                fprintf(stderr, "bad PDU from watchman: %s\n", error->message);
                return -EIO;
        }
        node = json_parser_get_root(parser);
        if (!node || !JSON_NODE_HOLDS_OBJECT(node))
                return -EIO;
        o = json_node_get_object(node);
        if (json_object_has_member(o, "error")) {
                fprintf(stderr, "watchman: %s\n", json_object_get_string_member(o, "error"));
                return -EIO;
        }
        if (!json_object_has_member(o, "unilateral")) {
                const char *clock = json_object_get_string_member_with_default(o, "clock", NULL);

                if (cur && clock)
                        snprintf(cur->clock, sizeof cur->clock, "%s", clock);
                return 1;
        }

        sub = json_object_get_string_member_with_default(o, "subscription", NULL);
        if (!sub || sub[0] != 'b' || sub[1] < '1' || (size_t) (sub[1] - '1') >= n_roots)
                return 0;
        root = &roots[sub[1] - '1'];
        /* Subscribed "since" a clock: a fresh instance is a recrawl after a loss. */
        if (json_object_get_boolean_member_with_default(o, "is_fresh_instance", FALSE))
                sink_lost(s);
        if (json_object_has_member(o, "files"))
                handle_files(s, root, json_object_get_array_member(o, "files"));
        return 0;
}

/* Sends a command and reads PDUs until its response arrived. */
static int command(Sink *s, Conn *c, Root *roots, size_t n_roots, Root *cur, const char *json) {
        int got = 0, r;

        r = conn_send(c, json);
        if (r < 0)
                return r;
        while (got == 0) {
                bool eof = false;
                size_t consumed;
                int timeout = sink_wait_ms(s);
                char *line = timeout > 0 ? conn_line(c, &consumed, timeout, &eof) : NULL;

                if (!line)
                        return -ETIMEDOUT;
                r = handle_pdu(s, roots, n_roots, cur, line);
                conn_consume(c, consumed);
                if (r < 0)
                        return r;
                got = r;
        }
        return 0;
}

int main(int argc, char **argv) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        Root roots[2] = {};
        size_t n_roots = 1;
        char expr[512], cmd[8192];
        Conn c = { .fd = -1 };
        Sink s;
        int r;

        sink_parse(&s, argc, argv);
        if (!s.extra || strlen(s.extra) >= sizeof sa.sun_path) {
                fprintf(stderr, "the watchman socket is given with --extra\n");
                return 2;
        }
        strcpy(sa.sun_path, s.extra);
        c.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c.fd < 0 || connect(c.fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                fprintf(stderr, "cannot connect to \"%s\": %m\n", s.extra);
                return 1;
        }

        roots[0].dir = s.dir;
        if (s.mode == SINK_LATENCY) {
                /* Watchman watches directories: the file's, restricted to its name. */
                g_autofree char *dir = g_path_get_dirname(s.dir);
                g_autofree char *base = g_path_get_basename(s.dir);

                roots[0].dir = g_strdup(dir);
                snprintf(expr, sizeof expr, "[\"name\", \"%s\"]", base);
        } else if (s.mode == SINK_RENAME) {
                snprintf(expr, sizeof expr, "[\"type\", \"f\"]");
                if (s.dir2) {
                        roots[1].dir = s.dir2;
                        n_roots = 2;
                }
        } else
                snprintf(expr, sizeof expr, "[\"type\", \"f\"]");

        s.t_start = sink_now();
        for (size_t i = 0; i < n_roots; i++) {
                snprintf(cmd, sizeof cmd, "[\"watch\", \"%s\"]\n", roots[i].dir);
                r = command(&s, &c, roots, n_roots, NULL, cmd);
                if (r < 0)
                        goto fail;
        }
        if (s.mode == SINK_TREE) {
                /* A query waits for the initial crawl: its answer means "set up". */
                snprintf(cmd, sizeof cmd,
                         "[\"query\", \"%s\", {\"expression\": [\"false\"], "
                         "\"fields\": [\"name\"]}]\n",
                         roots[0].dir);
                r = command(&s, &c, roots, n_roots, NULL, cmd);
                if (r < 0)
                        goto fail;
        } else
                for (size_t i = 0; i < n_roots; i++) {
                        /* The clock first (it waits for the crawl), then changes since it. */
                        snprintf(cmd, sizeof cmd, "[\"clock\", \"%s\", {\"sync_timeout\": 10000}]\n", roots[i].dir);
                        r = command(&s, &c, roots, n_roots, &roots[i], cmd);
                        if (r < 0)
                                goto fail;
                        snprintf(cmd, sizeof cmd,
                                 "[\"subscribe\", \"%s\", \"b%zu\", {\"expression\": %s, "
                                 "\"since\": \"%s\", \"fields\": [\"name\", \"exists\"]}]\n",
                                 roots[i].dir, i + 1, expr, roots[i].clock);
                        r = command(&s, &c, roots, n_roots, NULL, cmd);
                        if (r < 0)
                                goto fail;
                }
        sink_ready(&s, 0);

        for (;;) {
                bool eof = false;
                size_t consumed;
                int timeout = sink_wait_ms(&s);
                char *line;

                if (timeout == 0)
                        break;
                line = conn_line(&c, &consumed, timeout, &eof);
                if (eof)
                        break;
                if (!line)
                        continue;
                handle_pdu(&s, roots, n_roots, NULL, line);
                conn_consume(&c, consumed);
        }

        r = sink_report(&s);
        close(c.fd);
        g_free(c.buf);
        sink_free(&s);
        return r < 0 ? 1 : 0;

fail:
        fprintf(stderr, "watchman set-up of \"%s\" failed: %s\n", s.dir, strerror(-r));
        return 1;
}
