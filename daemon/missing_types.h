/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * missing_types - the words of missing.h that missing_internal.h needs too:
 * the Missing (opaque here) and the callbacks it is given (MissingOps,
 * which it holds). missing.h and missing_internal.h include it; it includes
 * no header of the missing paths' follower.
 */

#include <stdint.h>
#include <sys/stat.h>

#include "remote_types.h"
#include "watch_table_types.h"

typedef struct Missing Missing;

typedef struct MissingOps {
        /* s's path exists now and is open at fd (st: its fstat), checked for
         * s's flags: the layer above places s's own watch. fd is not
         * consumed. Return: 0, or -errno: then s cannot be followed (gone). */
        /* hint: what remote.c asks of fd's file system, asked in the worker
         * that opened it (not valid if it was opened on the loop). */
        int (*appeared)(Subscription *s, int fd, const struct stat *st, const RemoteHint *hint, void *userdata);
        /* s cannot be followed any more (r: a limit, or what appeared cannot
         * be watched): the layer above ends it. s is no longer followed. */
        void (*gone)(Subscription *s, int r, void *userdata);
        /* The look-up missing_start() began in a worker for subscription id
         * is over: it waits in the deepest directory of its path, or was
         * placed (r 0, ops->appeared called before: the appearance may have
         * ended it, ONESHOT), or cannot be followed (r -errno, as
         * missing_add() returns: it is no longer followed, the layer above
         * ends it), or it was ended first (-ECANCELED, from
         * missing_remove()). Called once. */
        void (*found)(uint32_t id, int r, void *userdata);
} MissingOps;
