/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * durable - subscriptions that outlive their client and the daemon
 *
 * A durable subscription is made by a client with a name of its choosing
 * (per uid), a path, a mask and flags. Its definition is kept in the state
 * directory (durable_store.h) and it is watched by an owner of its own: a
 * Client of the manager named "durable:<uid>/<name>", with the credentials
 * recorded at creation, whose delivery transport is its journal
 * (journal.h): every record a live subscriber would have had (renames
 * paired, by the same delivery queue) is appended there, and an Overflow
 * or the end of the watch becomes a gap.
 *
 * A client resumes with (name, journal identity, cursor): a reader of the
 * journal is attached to its Client and pumped after each flush, as its
 * flow control lets it (a window as large as that of live delivery, of
 * its own, confirmed as the transport says: the client's answer to a
 * Ping, or a socket's room; the records come from disk in slices, never
 * all at once), through the transport the bus layer gives at the resume
 * (DurableOps): events, rescans (gaps), "caught up" once, then what comes
 * live.
 *
 * At start, every definition is loaded and watched again with its owner's
 * credentials, restricted to the groups the user still has; once watching
 * is complete again (a RECURSIVE tree walked), a "daemon-down" gap is
 * appended: what changed while the daemon was not watching is unknown.
 * A subscription that cannot be watched (access lost, a limit) gets an
 * "access" gap and is tried again at the next start.
 *
 * Above the manager (it calls it), below the bus layer; no sd-bus here.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "client.h"
#include "durable_types.h"
#include "journal.h"
#include "manager.h"

/* The Durable, DurableOps (how an attached client is sent its records) and
 * the DURABLE_STOPPED_* reasons: durable_types.h. */

/*
 * Loads and watches every durable subscription under state_dir (NULL, or
 * one that cannot be made: none, and the methods say so), and hooks itself
 * into the manager's flush.
 */
int durable_new(Manager *m, const char *state_dir, Durable **ret);
/* Closes the journals cleanly (the next start skips no id); ends the owners. */
Durable *durable_free(Durable *d);
/* The caps of a reloaded config. */
void durable_reload(Durable *d);
bool durable_enabled(const Durable *d);

/* A creation whose RECURSIVE walk went on from the loop: its result. */
typedef void (*DurableCreated)(int r, const char *journal, uint64_t cursor, void *userdata);

/*
 * Makes a durable subscription name for caller: watched as caller, its
 * definition saved, its journal new. Return: 0 and the journal identity and
 * the cursor to resume from; 1 if its path is opened in a worker or its
 * tree walked (done is called with them later); or -errno: -EINVAL (a bad name, ONESHOT),
 * -WATCHD_E_NO_STATE_DIR, -WATCHD_E_DURABLE_EXISTS, -WATCHD_E_DURABLE_LIMIT,
 * and those of manager_add_watch_path().
 */
int durable_create(Durable *d, const Caller *caller, const char *name, const char *path, uint32_t mask, uint32_t flags,
                   DurableCreated done, void *userdata, char ret_journal[static JOURNAL_ID_STRING_MAX],
                   uint64_t *ret_cursor);
/* A creation not done by its deadline (add_watch_timeout_ms), whose caller
 * was told so: the subscription it made is removed (its open given up, its
 * walk left to end and discarded), and done(userdata) is not called. */
/* How far the creation answered by done(userdata) has gone: the links its
 * walk has made so far (0: not walking). */
unsigned durable_create_progress(Durable *d, DurableCreated done, void *userdata);
void durable_create_abandon(Durable *d, DurableCreated done, void *userdata);

/*
 * Removes it, journal and all; an attached client is told (stopped).
 * name is the caller's, or "UID/NAME" when the caller is root.
 */
int durable_remove(Durable *d, uid_t caller, const char *name);

/*
 * Attaches c to its subscription name from cursor (journal: the identity
 * the cursor came with, "" for none): what follows is pumped to c through
 * ops (with data), as its flow control lets it: at most
 * max_pending_events_per_client entries sent and not confirmed, a window
 * of its own beside the one of c's live records. A client attached before
 * is told (stopped, resumed-elsewhere) unless it is c. -EINVAL for a
 * journal that is not an identity.
 */
int durable_resume(Durable *d, Client *c, const char *name, const char *journal, uint64_t cursor, const DurableOps *ops,
                   void *data, char ret_journal[static JOURNAL_ID_STRING_MAX]);

/* The answer to ask_confirm() for c: answered (by the client itself), its
 * attachments that asked have read what was sent before it; else nothing
 * is confirmed. */
void durable_confirmed(Durable *d, Client *c, bool answered);

/* c's attachments sent through ops cannot be any more (a stream closed):
 * each is told stopped(reason) through instead, and ends. */
void durable_transport_gone(Durable *d, Client *c, const DurableOps *ops, const DurableOps *instead, const char *reason);

/* c is going: its attachments end. */
void durable_client_gone(Durable *d, Client *c);

typedef struct DurableInfo {
        const char *name; /* "UID/NAME" if not the caller's own */
        const char *path;
        uint32_t mask, flags;
        char journal[JOURNAL_ID_STRING_MAX];
        uint64_t oldest_cursor, last_id, bytes;
        bool attached;
        const char *state; /* watching, walking, pending, no-access */
} DurableInfo;

/* Calls f for the caller's durable subscriptions (root: everyone's). */
int durable_list(Durable *d, uid_t caller, int (*f)(const DurableInfo *i, void *userdata), void *userdata);
