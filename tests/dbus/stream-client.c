/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stream-client ADDRESS DIR - a stream client for test-stream's killed client
 *
 * Connects to the bus at ADDRESS, opens its record stream, watches DIR for
 * IN_CREATE, prints "ready" and waits, reading nothing, until it is killed.
 * A program of its own so that the test can SIGKILL it.
 */

#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "watchd-api.h"

int main(int argc, char **argv) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        sd_bus *bus = NULL;
        int r;

        if (argc != 3) {
                fprintf(stderr, "usage: %s ADDRESS DIR\n", argv[0]);
                return 2;
        }
        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, argv[1]);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_negotiate_fds(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r >= 0)
                r = sd_bus_call_method(bus, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "OpenStream", &error,
                                       &reply, "a{sv}", 0);
        /* The reply holds the stream's fd: kept open with it until the end. */
        if (r >= 0)
                r = sd_bus_call_method(bus, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "AddWatch", &error,
                                       NULL, "suu", argv[2], (uint32_t) IN_CREATE, (uint32_t) 0);
        if (r < 0) {
                fprintf(stderr, "%s\n", error.message ?: strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        for (;;)
                pause();
}
