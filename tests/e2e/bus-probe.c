/* SPDX-License-Identifier: MIT */
/*
 * bus-probe - watchd's answers, timed from inside one client, for the e2e VM
 * (tests/e2e/nfs, while an NFS server is stopped): a shell loop of watchctl
 * would time the start of a GLib program under TCG, not the daemon.
 *
 *   bus-probe stats N       N GetStats calls one after the other: each round
 *                           trip in ms, one a line
 *   bus-probe events DIR N  a subscription on DIR (CREATE), then N files made
 *                           in DIR one after the other, each awaited in an
 *                           Events signal: how late each came, in ms, one a
 *                           line
 *
 * On the system bus ($DBUS_SYSTEM_BUS_ADDRESS), as whoever runs it. Exit
 * status 1, and why on stderr, at the first call that fails or is not
 * answered within 5 s, or record that has not come 10 s after its file was
 * made. Built by tests/e2e/nfs.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "watchd-api.h"

#define PROBE_EVENT_WAIT_MS     10000.0
#define PROBE_CALL_TIMEOUT_USEC (5u * 1000000u)

static double now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static int fail(const char *what, const sd_bus_error *error, int r) {
        fprintf(stderr, "bus-probe: %s: %s\n", what, error && error->message ? error->message : strerror(-r));
        return 1;
}

static int probe_stats(sd_bus *bus, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                sd_bus_message *reply = NULL;
                double t0 = now_ms(), t1;
                int r;

                r = sd_bus_call_method(bus, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "GetStats", &error,
                                       &reply, "");
                t1 = now_ms();
                if (r < 0) {
                        fail("GetStats", &error, r);
                        sd_bus_error_free(&error);
                        return 1;
                }
                sd_bus_message_unref(reply);
                printf("%.3f\n", t1 - t0);
        }
        return 0;
}

/* The record awaited: CREATE of path, and when it came. */
typedef struct Awaited {
        const char *path;
        double came; /* 0 until it came */
} Awaited;

static int on_events(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Awaited *a = userdata;
        uint32_t id, mask, cookie;
        const char *path, *new_path;
        int r;

        (void) ret_error;
        r = sd_bus_message_enter_container(m, 'a', "(uuuss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(uuuss)", &id, &mask, &cookie, &path, &new_path)) > 0)
                if (a->path && (mask & WATCHD_IN_CREATE) && strcmp(path, a->path) == 0 && a->came == 0)
                        a->came = now_ms();
        return r;
}

static int probe_events(sd_bus *bus, const char *dir, unsigned n) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        Awaited a = {};
        uint32_t id;
        int r;

        r = sd_bus_match_signal(bus, NULL, NULL, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "Events", on_events, &a);
        if (r < 0)
                return fail("match Events", NULL, r);
        r = sd_bus_call_method(bus, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "AddWatch", &error, &reply,
                               "suu", dir, WATCHD_IN_CREATE, 0u);
        if (r >= 0)
                r = sd_bus_message_read(reply, "u", &id);
        sd_bus_message_unref(reply);
        if (r < 0) {
                fail("AddWatch", &error, r);
                sd_bus_error_free(&error);
                return 1;
        }
        for (unsigned i = 0; i < n; i++) {
                char path[4096];
                double t0;
                int fd;

                if (snprintf(path, sizeof(path), "%s/probe-%u-%ld", dir, i, (long) getpid()) >= (int) sizeof(path))
                        return fail(dir, NULL, -ENAMETOOLONG);
                a = (Awaited) { .path = path };
                t0 = now_ms();
                fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
                if (fd < 0)
                        return fail(path, NULL, -errno);
                close(fd);
                while (a.came == 0) {
                        double left = t0 + PROBE_EVENT_WAIT_MS - now_ms();

                        if (left <= 0) {
                                fprintf(stderr, "bus-probe: no CREATE record of %s within %.0f ms\n", path,
                                        PROBE_EVENT_WAIT_MS);
                                return 1;
                        }
                        r = sd_bus_process(bus, NULL);
                        if (r < 0)
                                return fail("reading the bus", NULL, r);
                        if (r == 0) {
                                r = sd_bus_wait(bus, (uint64_t) (left * 1000));
                                if (r < 0)
                                        return fail("waiting on the bus", NULL, r);
                        }
                }
                printf("%.3f\n", a.came - t0);
        }
        return 0;
}

int main(int argc, char **argv) {
        sd_bus *bus = NULL;
        unsigned long n;
        char *end;
        int r, ret;

        if (argc < 3 || (strcmp(argv[1], "stats") == 0 && argc != 3) || (strcmp(argv[1], "events") == 0 && argc != 4) ||
            (strcmp(argv[1], "stats") != 0 && strcmp(argv[1], "events") != 0)) {
                fprintf(stderr, "usage: bus-probe stats N | bus-probe events DIR N\n");
                return 2;
        }
        n = strtoul(argv[argc - 1], &end, 10);
        if (*end || n == 0 || n > 100000) {
                fprintf(stderr, "bus-probe: N: a number from 1 to 100000, not '%s'\n", argv[argc - 1]);
                return 2;
        }
        r = sd_bus_open_system(&bus);
        if (r < 0)
                return fail("the system bus", NULL, r);
        /* A daemon that waits on a file system fails the check in seconds, not D-Bus's 25. */
        r = sd_bus_set_method_call_timeout(bus, PROBE_CALL_TIMEOUT_USEC);
        if (r < 0)
                return fail("the call timeout", NULL, r);
        ret = strcmp(argv[1], "stats") == 0 ? probe_stats(bus, n) : probe_events(bus, argv[2], n);
        fflush(stdout);
        sd_bus_flush_close_unref(bus);
        return ret;
}
