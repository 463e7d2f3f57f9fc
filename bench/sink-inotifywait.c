/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sink-inotifywait: inotifywait -m (inotify-tools) as a user's script runs it,
 * one line per event on a pipe.
 *
 * inotifywait prints "Watches established." on stderr once every watch is in
 * place; that is its readiness, and for a recursive watch the end of its
 * set-up. It has no rename pairing: MOVED_FROM and MOVED_TO come as separate
 * lines and are counted as halves.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sink.h"

typedef struct LineBuf {
        char buf[65536];
        size_t len;
} LineBuf;

/* Lines are "EVENTS NAME"; an overflow is a Q_OVERFLOW line. */
static void handle_line(Sink *s, char *line) {
        char *sp = strchr(line, ' ');

        if (!sp) {
                sink_other(s);
                return;
        }
        *sp = '\0';
        if (strstr(line, "Q_OVERFLOW"))
                sink_lost(s);
        else if (s->mode == SINK_RENAME) {
                if (strcmp(line, "MOVED_FROM") == 0)
                        sink_half(s, SINK_MOVE_FROM, sp + 1);
                else if (strcmp(line, "MOVED_TO") == 0)
                        sink_half(s, SINK_MOVE_TO, sp + 1);
                else
                        sink_other(s);
        } else if (s->mode == SINK_TREE)
                sink_other(s);
        else
                sink_file(s, sp + 1);
}

/* Reads what is there; calls handle_line for each whole line. 0 at EOF. */
static ssize_t pump(Sink *s, int fd, LineBuf *lb) {
        ssize_t n = read(fd, lb->buf + lb->len, sizeof lb->buf - lb->len - 1);
        char *start, *nl;

        if (n <= 0)
                return n;
        lb->len += (size_t) n;
        lb->buf[lb->len] = '\0';
        start = lb->buf;
        while ((nl = memchr(start, '\n', lb->len - (size_t) (start - lb->buf)))) {
                *nl = '\0';
                handle_line(s, start);
                start = nl + 1;
        }
        lb->len -= (size_t) (start - lb->buf);
        memmove(lb->buf, start, lb->len);
        if (lb->len == sizeof lb->buf - 1)
                lb->len = 0; /* a line longer than the buffer: drop it */
        return n;
}

int main(int argc, char **argv) {
        static LineBuf out, err;
        int pout[2], perr[2], status, r;
        bool err_open = true;
        const char *args[16];
        size_t k = 0;
        pid_t pid;
        Sink s;

        sink_parse(&s, argc, argv);

        args[k++] = "inotifywait";
        args[k++] = "-m";
        switch (s.mode) {
        case SINK_STORM:
                args[k++] = "-e";
                args[k++] = "close_write";
                args[k++] = "--format";
                args[k++] = "%e %f";
                break;
        case SINK_LATENCY:
                args[k++] = "-e";
                args[k++] = "modify";
                args[k++] = "--format";
                args[k++] = "%e x";
                break;
        case SINK_RENAME:
                args[k++] = "-e";
                args[k++] = "moved_from,moved_to";
                args[k++] = "--format";
                args[k++] = "%e %w%f";
                break;
        case SINK_TREE:
                args[k++] = "-r";
                args[k++] = "-e";
                args[k++] = "create,delete,modify,move,close_write,attrib";
                break;
        }
        args[k++] = "--";
        args[k++] = s.dir;
        if (s.dir2)
                args[k++] = s.dir2;
        args[k] = NULL;

        if (pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
                fprintf(stderr, "pipe: %m\n");
                return 1;
        }
        s.t_start = sink_now();
        pid = fork();
        if (pid < 0) {
                fprintf(stderr, "fork: %m\n");
                return 1;
        }
        if (pid == 0) {
                if (dup2(pout[1], STDOUT_FILENO) < 0 || dup2(perr[1], STDERR_FILENO) < 0)
                        _exit(127);
                execvp(args[0], (char **) args);
                _exit(127);
        }
        close(pout[1]);
        close(perr[1]);

        /* Wait for "Watches established." on stderr. */
        for (;;) {
                struct pollfd pfd = { .fd = perr[0], .events = POLLIN };
                int timeout = sink_wait_ms(&s);
                ssize_t n;

                if (timeout == 0 || poll(&pfd, 1, timeout) <= 0) {
                        fprintf(stderr, "inotifywait did not establish its watches\n");
                        kill(pid, SIGTERM);
                        waitpid(pid, NULL, 0);
                        return 1;
                }
                n = read(perr[0], err.buf + err.len, sizeof err.buf - err.len - 1);
                if (n <= 0) {
                        fprintf(stderr, "inotifywait exited: %s\n", err.buf);
                        waitpid(pid, NULL, 0);
                        return 1;
                }
                err.len += (size_t) n;
                err.buf[err.len] = '\0';
                if (strstr(err.buf, "Watches established."))
                        break;
                if (err.len == sizeof err.buf - 1)
                        err.len = 0;
        }
        sink_ready(&s, pid);

        for (;;) {
                struct pollfd pfd[2] = {
                        { .fd = pout[0], .events = POLLIN },
                        { .fd = err_open ? perr[0] : -1, .events = POLLIN },
                };
                int timeout = sink_wait_ms(&s);

                if (timeout == 0)
                        break;
                if (poll(pfd, 2, timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (pfd[0].revents && pump(&s, pout[0], &out) <= 0)
                        break;
                if (pfd[1].revents) {
                        char junk[4096];

                        /* Diagnostics only; drained so that inotifywait never blocks on them. */
                        if (read(perr[0], junk, sizeof junk) <= 0)
                                err_open = false;
                }
        }

        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        r = sink_report(&s);
        sink_free(&s);
        return r < 0 ? 1 : 0;
}
