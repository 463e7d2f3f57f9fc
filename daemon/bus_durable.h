/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * bus_durable - durable subscriptions on the bus: the CreateDurable,
 * RemoveDurable, ResumeDurable and ListDurable handlers, and the transport
 * of a resumed subscription's records to its client (DurableOps:
 * DurableEvents, DurableRescan, DurableCaughtUp, DurableStopped).
 */

#include <systemd/sd-bus.h>

#include "durable.h"

int method_create_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_remove_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_resume_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_list_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/* To the clients that resumed a durable subscription: always unicast. */
extern const DurableOps bus_durable_ops;
