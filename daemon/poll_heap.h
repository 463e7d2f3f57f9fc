/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * poll_heap - the poller's groups between rounds: a min-heap (Poller.heap)
 * on PollGroup.next_round, each group knowing its place (heap_index).
 */

#include <glib.h>
#include <stddef.h>

#include "poll_group.h"

PollGroup *poll_heap_at(const GPtrArray *heap, size_t i);
int poll_heap_push(GPtrArray *heap, PollGroup *g);
void poll_heap_remove(GPtrArray *heap, PollGroup *g);
