/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sink-gamin: gamin through its FAM API (libgamin, gam_server).
 *
 * The FAM protocol names a child of a monitored directory by its base name
 * and knows Created, Changed and Deleted; it has no rename record (a rename is
 * Deleted + Created, counted as halves), no recursion and no overflow signal.
 * A new directory monitor first lists what exists (Exists ... EndExist); the
 * watch is taken as ready at EndExist (at the Exists of a file monitor).
 * bench/run starts gam_server itself, with GAM_CLIENT_ID set for both sides,
 * so the server measured is the one this client talks to.
 */

#include <errno.h>
#include <fam.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "sink.h"

static void handle(Sink *s, const FAMEvent *fe) {
        const char *dir = fe->userdata;
        char path[2 * PATH_MAX];

        switch (s->mode) {
        case SINK_STORM:
                if (fe->code == FAMCreated || fe->code == FAMChanged)
                        sink_file(s, fe->filename);
                else
                        sink_other(s);
                break;
        case SINK_LATENCY:
                if (fe->code == FAMChanged)
                        sink_file(s, "");
                else
                        sink_other(s);
                break;
        case SINK_RENAME:
                snprintf(path, sizeof path, "%s/%s", dir, fe->filename);
                if (fe->code == FAMDeleted)
                        sink_half(s, SINK_MOVE_FROM, path);
                else if (fe->code == FAMCreated)
                        sink_half(s, SINK_MOVE_TO, path);
                else
                        sink_other(s);
                break;
        case SINK_TREE:
                sink_other(s);
                break;
        }
}

/* Reads events until the initial listing of every request has ended. */
static int wait_listing(Sink *s, FAMConnection *fc, int requests, bool file) {
        FAMEvent fe;

        while (requests > 0) {
                struct pollfd pfd = { .fd = FAMCONNECTION_GETFD(fc), .events = POLLIN };
                int timeout = sink_wait_ms(s);

                if (timeout == 0)
                        return -ETIMEDOUT;
                if (FAMPending(fc) <= 0 && poll(&pfd, 1, timeout) <= 0)
                        continue;
                if (FAMNextEvent(fc, &fe) < 0)
                        return -EIO;
                if (fe.code == FAMEndExist || (file && fe.code == FAMExists))
                        requests--;
        }
        return 0;
}

int main(int argc, char **argv) {
        FAMConnection fc;
        FAMRequest fr1, fr2;
        int r, requests = 1;
        Sink s;

        sink_parse(&s, argc, argv);
        if (s.mode == SINK_TREE) {
                fprintf(stderr, "FAM has no recursive watch\n");
                return 3;
        }
        if (FAMOpen2(&fc, "watchd-bench") < 0) {
                fprintf(stderr, "cannot connect to gam_server (FAMErrno %d)\n", FAMErrno);
                return 1;
        }

        if (s.mode == SINK_LATENCY)
                r = FAMMonitorFile(&fc, s.dir, &fr1, (void *) s.dir);
        else
                r = FAMMonitorDirectory(&fc, s.dir, &fr1, (void *) s.dir);
        if (r >= 0 && s.mode == SINK_RENAME && s.dir2) {
                r = FAMMonitorDirectory(&fc, s.dir2, &fr2, (void *) s.dir2);
                requests++;
        }
        if (r < 0) {
                fprintf(stderr, "cannot monitor \"%s\" (FAMErrno %d)\n", s.dir, FAMErrno);
                return 1;
        }
        r = wait_listing(&s, &fc, requests, s.mode == SINK_LATENCY);
        if (r < 0) {
                fprintf(stderr, "gam_server did not list \"%s\": %s\n", s.dir, strerror(-r));
                return 1;
        }
        sink_ready(&s, 0);

        for (;;) {
                struct pollfd pfd = { .fd = FAMCONNECTION_GETFD(&fc), .events = POLLIN };
                int timeout = sink_wait_ms(&s);
                FAMEvent fe;

                if (timeout == 0)
                        break;
                if (FAMPending(&fc) <= 0) {
                        r = poll(&pfd, 1, timeout);
                        if (r < 0 && errno != EINTR)
                                break;
                        if (r <= 0 || FAMPending(&fc) <= 0)
                                continue;
                }
                if (FAMNextEvent(&fc, &fe) < 0)
                        break;
                handle(&s, &fe);
        }

        r = sink_report(&s);
        FAMClose(&fc);
        sink_free(&s);
        return r < 0 ? 1 : 0;
}
