/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * bus_stream - a client's records on a socket of its own (OpenStream), for dbus_iface.c's vtable
 */

#include <systemd/sd-bus.h>

#include "bus.h"

int bus_method_open_stream(sd_bus_message *msg, void *userdata, sd_bus_error *error);
