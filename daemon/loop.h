/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * loop - the manager on sd-event
 *
 * The glue between the event loop and the core, above both: it watches the
 * kernel fd and hands its turns to manager_on_kernel_readable(); finishes a
 * read whose records did not fit in one turn; after every dispatch of any
 * source (the bus's too) flushes the clients' queues and sets the one timer
 * to manager_next_deadline(); and runs the RECURSIVE walks and the descents
 * of pending paths (manager_run_walks()) when nothing else waits. The core
 * never calls up into it: it is asked, after each turn, what it needs.
 */

#include <systemd/sd-event.h>

#include "manager.h"

typedef struct Loop Loop;

int loop_new(sd_event *event, Manager *m, Loop **ret);
Loop *loop_free(Loop *l);
