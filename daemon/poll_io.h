/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * poll_io - what polling cost: the system calls the poller made, by kind.
 * Counted by the reads of poll_snapshot.h, given out by poller_io(): apart
 * from both, so that poller.h shows it without the reader's state.
 */

#include <stdint.h>

/* System calls the poller made, by kind. */
typedef struct PollIo {
        uint64_t opens;    /* openat of a directory to list it */
        uint64_t getdents; /* getdents64 */
        uint64_t stats;    /* statx, of a directory or of a name */
} PollIo;

static inline uint64_t poll_io_total(const PollIo *io) {
        return io->opens + io->getdents + io->stats;
}
