/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * poll_round - a round's changes (poll_snapshot.h) paired into moves and
 * given out, through the caller's emit: deletions, moves, creations,
 * modifications.
 */

#include <glib.h>
#include <stdint.h>

#include "poll_snapshot.h"

/* One record: name in d, or a move from name in d to new_name in nd (else NULL). */
typedef void (*PollRoundEmit)(void *data, uint32_t mask, PollDir *d, const char *name, PollDir *nd, const char *new_name);

/* Gives out a round's changes through emit: deletions, moves, creations, modifications. */
void poll_round_emit(GPtrArray *changes, PollRoundEmit emit, void *data);
