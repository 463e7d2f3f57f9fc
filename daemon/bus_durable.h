/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * bus_durable - durable subscriptions on the bus: the CreateDurable,
 * RemoveDurable, ResumeDurable and ListDurable handlers, and the transport
 * of a resumed subscription's records to its client (DurableOps): the
 * DurableEvents, DurableRescan, DurableCaughtUp and DurableStopped
 * signals, or their frames in the client's stream (watchd-stream(5)).
 */

#include <systemd/sd-bus.h>

#include "durable.h"

int method_create_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_remove_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_resume_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_list_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/* To the clients that resumed a durable subscription: as signals (always
 * unicast, confirmed by a Ping of their own), or in the client's stream. */
extern const DurableOps bus_durable_signal_ops;
extern const DurableOps bus_durable_stream_ops;
