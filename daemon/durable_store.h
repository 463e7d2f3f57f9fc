/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * durable_store - the definitions of durable subscriptions, on disk
 *
 * A durable subscription outlives its client and the daemon: what it is
 * (its owner's uid and groups as the bus reported them at creation, the
 * path, mask and flags) is a small text file in the daemon's state
 * directory, beside its journal (journal.h):
 *
 *   STATE/durable/<uid>/<name>/definition
 *   STATE/durable/<uid>/<name>/journal/
 *
 * Names are chosen by clients: 1 to 64 of [A-Za-z0-9_.-], not starting
 * with '.', so a name is a file name as it is and two users' names never
 * meet (the uid is a directory above). The file is written to a temporary
 * name, synced and renamed: a crash leaves the old definition or the new
 * one. File I/O only, and no policy: who may create what is the caller's.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DURABLE_NAME_MAX 64

typedef struct DurableDef {
        char *name;
        uid_t uid;
        gid_t gid;   /* the first of the groups the bus reported */
        gid_t *gids; /* supplementary groups */
        size_t n_gids;
        char *path; /* absolute, any bytes but NUL */
        uint32_t mask;
        uint32_t flags;
        uint64_t created; /* seconds since the epoch */
} DurableDef;

void durable_def_done(DurableDef *d);

bool durable_name_valid(const char *name);

/* STATE/durable/<uid>/<name>, malloc'ed. */
char *durable_store_dir(const char *state_dir, uid_t uid, const char *name);

/* Writes dir/definition (making dir, mode 0700, and its parents below state_dir). */
int durable_def_save(const char *state_dir, const DurableDef *d);

/*
 * Reads dir/definition. A file that is not one (a bad line, a missing
 * key, a name or uid that does not match where it lies) is -EBADMSG with a
 * message in *ret_error ("file:line: what").
 */
int durable_def_load(const char *state_dir, uid_t uid, const char *name, DurableDef *ret, char **ret_error);

/* Every (uid, name) under state_dir/durable that looks like a subscription, for each: f(uid, name, userdata). */
int durable_store_foreach(const char *state_dir, int (*f)(uid_t uid, const char *name, void *userdata), void *userdata);

/* Removes STATE/durable/<uid>/<name> and everything in it. */
int durable_store_remove(const char *state_dir, uid_t uid, const char *name);
