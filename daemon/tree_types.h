/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * tree_types - the words of tree.h that the tree's files share through
 * tree_internal.h too: the Tree and the TreeWalk (opaque here), what the
 * layer above is asked through (TreeOps) and what a walk tells when it
 * ends (TreeWalkDone). tree.h and tree_internal.h include it; it includes
 * no other header of the tree, so that tree_internal.h need not include
 * tree.h: each tree*.c file includes those of the two it uses.
 */

#include <stdbool.h>
#include <stdint.h>

#include "remote.h"
#include "watch_table.h"

typedef struct Tree Tree;
typedef struct TreeWalk TreeWalk;

typedef struct TreeOps {
        /* AddWatch's walk of s met a limit or an error: the whole tree or
         * nothing, so s ends (no notice: its AddWatch is answered with r). */
        void (*end)(Subscription *s, void *userdata);
        /* Whether l's directory is on a file system that may stop answering
         * (FUSE, a network one: remote.h): a new directory there is opened and
         * read in jobs from the start. NULL: none is. */
        bool (*may_stop)(const WatchLink *l, void *userdata);
        /* What the links made until it is called again (NULL: none) are on,
         * asked in the job that opened them (remote_set_hint()). NULL: not asked. */
        void (*hint)(const RemoteHint *hint, void *userdata);
} TreeOps;

/* Called once when a walk ends: r is 0, or the error that stopped it
 * (-WATCHD_E_*_WATCHES: the owner's limits, -ENOSPC: the kernel's, -ENOMEM,
 * -EMFILE), or -ECANCELED when the daemon exits first. */
typedef void (*TreeWalkDone)(uint32_t id, int r, void *userdata);
