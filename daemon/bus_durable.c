/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bus_durable - durable subscriptions on the bus (watchd(8), DURABLE
 * SUBSCRIPTIONS)
 *
 * The handlers read and check a call, name its caller from the bus, and
 * call durable.c; errors become D-Bus errors in bus_error_for(). A client that
 * resumes gets its records through one of two transports, chosen at the
 * resume and kept: in its stream (bus_durable_stream_ops) if it has one
 * and asked for durable frames there (OpenStream's option "durable"), else
 * as signals (bus_durable_signal_ops). durable.c's pump calls them as the
 * client's flow control lets it: for signals, the window and the client's
 * answers to a Ping of the replay's own; for the stream, the socket's room.
 */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "bus_caller.h"
#include "bus_durable.h"
#include "bus_methods.h"
#include "bus_signals.h"
#include "durable_store.h"
#include "error.h"
#include "events_batch.h"
#include "log.h"
#include "macro.h"
#include "path_escape.h"
#include "stream.h"
#include "stream_frame.h"

/* A quoted name for error messages: "'NAME'" (names are plain ASCII, checked first). */
static char *what_name(const char *name) {
        char *w;

        if (asprintf(&w, "'%.*s'", bus_quote_len(name, BUS_QUOTE_MAX), name) < 0)
                return NULL;
        return w;
}

static int check_durable_name(const char *name, bool allow_uid, sd_bus_error *error) {
        const char *slash = allow_uid ? strchr(name, '/') : NULL;

        if (durable_name_valid(slash ? slash + 1 : name))
                return 0;
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                 "'%.*s' is not a durable subscription name: 1 to %u of A-Z a-z 0-9 _ . -, "
                                 "not starting with '.'.",
                                 bus_quote_len(name, BUS_QUOTE_MAX), name, DURABLE_NAME_MAX);
}

/* A CreateDurable whose path is opened in a worker, or whose tree is walked:
 * answered when that ends, or at add_watch_timeout_ms after the call (pushed
 * back while its walk links directories) with Timeout, the subscription
 * removed (all or nothing, as any creation). */
typedef struct PendingCreate {
        DbusIface *iface;
        sd_bus_message *msg;
        sd_event_source *timer; /* the call's deadline; NULL: none (out of memory) */
        unsigned progress;      /* its walk's links when the deadline was last armed */
} PendingCreate;

static void pending_create_free(PendingCreate *p) {
        sd_event_source_disable_unref(p->timer);
        sd_bus_message_unref(p->msg);
        free(p);
}

static void create_durable_done(int r, const char *journal, uint64_t cursor, void *userdata);

static int create_durable_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        PendingCreate *p = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        const char *path = NULL;
        unsigned n;
        int r;

        /* A walk that linked directories since the deadline was armed goes
         * on: the bound is on a file system that stops answering, not on the
         * size of a tree (as AddWatch's, bus_methods.c). */
        n = durable_create_progress(p->iface->durable, create_durable_done, p);
        if (n != p->progress &&
            sd_event_source_set_time_relative(
                    s, (uint64_t) manager_get_config(p->iface->manager)->add_watch_timeout_ms * 1000u) >= 0 &&
            sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) >= 0) {
                p->progress = n;
                return 0;
        }
        (void) sd_bus_message_rewind(p->msg, true);
        (void) sd_bus_message_skip(p->msg, "s");
        (void) sd_bus_message_read(p->msg, "s", &path);
        what = bus_what_of(path);
        (void) bus_error_for(p->iface->manager, -ETIMEDOUT, what ?: "the path", &error);
        r = sd_bus_reply_method_error(p->msg, &error);
        if (r < 0)
                log_debug_errno(r, "Failed to answer CreateDurable, ignoring: %m");
        durable_create_abandon(p->iface->durable, create_durable_done, p);
        pending_create_free(p);
        return 0;
}

static void create_durable_done(int r, const char *journal, uint64_t cursor, void *userdata) {
        PendingCreate *p = userdata;
        _cleanup_(message_unrefp) sd_bus_message *msg = TAKE_PTR(p->msg);
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *path = NULL;

        if (r == -ECANCELED)
                r = sd_bus_reply_method_errorf(msg, SD_BUS_ERROR_FAILED,
                                               "The daemon is exiting, or the subscription was removed meanwhile.");
        else if (r < 0) {
                _cleanup_free_ char *what = NULL;

                (void) sd_bus_message_rewind(msg, true);
                (void) sd_bus_message_skip(msg, "s");
                (void) sd_bus_message_read(msg, "s", &path);
                what = bus_what_of(path);
                (void) bus_error_for(p->iface->manager, r, what ?: "the path", &error);
                r = sd_bus_reply_method_error(msg, &error);
        } else
                r = sd_bus_reply_method_return(msg, "st", journal, cursor);
        if (r < 0)
                log_debug_errno(r, "Failed to answer CreateDurable, ignoring: %m");
        pending_create_free(p);
}

int method_create_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        DbusIface *d = userdata;
        _cleanup_free_ char *path = NULL;
        char journal[JOURNAL_ID_STRING_MAX];
        const char *name, *sent;
        uint32_t mask, flags;
        uint64_t cursor;
        PendingCreate *p;
        Client *c;
        int r;

        r = sd_bus_message_read(msg, "ssuu", &name, &sent, &mask, &flags);
        if (r == -EBADMSG)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The path is not a string watchd can read: send it escaped, with "
                                         "PATH_ESCAPED (0x%x).",
                                         WATCHD_FLAG_PATH_ESCAPED);
        if (r < 0)
                return r;
        r = check_durable_name(name, false, error);
        if (r < 0)
                return r;
        if (flags & (WATCHD_FLAG_ONESHOT | WATCHD_FLAG_PACKED))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "%s (0x%x) makes no sense for a durable subscription.",
                                         flags & WATCHD_FLAG_ONESHOT ? "ONESHOT" : "PACKED",
                                         flags & WATCHD_FLAG_ONESHOT ? WATCHD_FLAG_ONESHOT : WATCHD_FLAG_PACKED);
        r = bus_check_mask_flags(mask, flags & ~WATCHD_FLAG_PATH_ESCAPED, error);
        if (r < 0)
                return r;
        r = bus_path_from_call(sent, flags & WATCHD_FLAG_PATH_ESCAPED, &path, error);
        if (r < 0)
                return r;
        flags &= ~WATCHD_FLAG_PATH_ESCAPED;

        r = bus_client_for_call(d, msg, &c, error);
        if (r < 0)
                return r;
        p = malloc(sizeof(PendingCreate));
        if (!p)
                return -ENOMEM;
        *p = (PendingCreate) { d, msg, NULL, 0 };
        r = durable_create(d->durable, &c->caller, name, path, mask, flags, create_durable_done, p, journal, &cursor);
        if (r < 0) {
                _cleanup_free_ char *what = bus_what_of(sent);

                free(p);
                if (r == -WATCHD_E_DURABLE_EXISTS) {
                        free(what);
                        what = what_name(name);
                }
                return bus_error_for(d->manager, r, what ?: "the path", error);
        }
        if (r > 0) {
                /* Answered when its open and walk end, or at the deadline (without
                 * the timer, out of memory: when they end, as before the deadline). */
                uint64_t now;

                sd_bus_message_ref(msg);
                p->progress = durable_create_progress(d->durable, create_durable_done, p);
                r = sd_event_now(d->event, CLOCK_MONOTONIC, &now);
                if (r >= 0)
                        r = sd_event_add_time(d->event, &p->timer, CLOCK_MONOTONIC,
                                              now + (uint64_t) manager_get_config(d->manager)->add_watch_timeout_ms * 1000u,
                                              0, create_durable_timeout, p);
                if (r < 0)
                        log_debug_errno(r, "Failed to arm the deadline of CreateDurable, ignoring: %m");
                return 1;
        }
        free(p);
        return sd_bus_reply_method_return(msg, "st", journal, cursor);
}

int method_remove_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        DbusIface *d = userdata;
        _cleanup_free_ char *what = NULL;
        const char *name;
        uid_t uid;
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        r = bus_sender_uid(msg, &uid);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "The bus did not tell who you are.");
        r = check_durable_name(name, uid == 0, error);
        if (r < 0)
                return r;
        r = durable_remove(d->durable, uid, name);
        if (r < 0) {
                what = what_name(name);
                return bus_error_for(d->manager, r, what ?: "the name", error);
        }
        return sd_bus_reply_method_return(msg, NULL);
}

int method_resume_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        DbusIface *d = userdata;
        _cleanup_free_ char *what = NULL;
        char current[JOURNAL_ID_STRING_MAX];
        const char *name, *journal;
        uint64_t cursor;
        BusClient *bc;
        Client *c;
        int r;

        r = sd_bus_message_read(msg, "sst", &name, &journal, &cursor);
        if (r < 0)
                return r;
        r = check_durable_name(name, false, error);
        if (r < 0)
                return r;
        if (journal[0] != '\0' && strlen(journal) != 2 * sizeof(JournalId))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "'%.*s' is not a journal identity (32 hexadecimal digits, or \"\" for none).",
                                         bus_quote_len(journal, BUS_QUOTE_MAX), journal);
        r = bus_client_for_call(d, msg, &c, error);
        if (r < 0)
                return r;
        bc = c->queue.data;
        /* Its transport for good: records of one attachment never go two ways at once. */
        r = durable_resume(d->durable, c, name, journal, cursor,
                           bc->stream && bc->stream_durable ? &bus_durable_stream_ops : &bus_durable_signal_ops, bc,
                           current);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "'%s' is not a journal identity (32 lowercase hexadecimal digits).", journal);
        if (r < 0) {
                what = what_name(name);
                return bus_error_for(d->manager, r, what ?: "the name", error);
        }
        log_debug("%s resumes durable subscription %s after %" PRIu64 ".", c->name, name, cursor);
        return sd_bus_reply_method_return(msg, "s", current);
}

static int list_one(const DurableInfo *i, void *userdata) {
        sd_bus_message *reply = userdata;
        _cleanup_free_ char *esc = path_needs_escape(i->path) ? path_escape(i->path) : NULL;

        if (!esc && path_needs_escape(i->path))
                return -ENOMEM;
        return sd_bus_message_append(reply, "(ssuustttbs)", i->name, esc ?: i->path, i->mask,
                                     i->flags | (esc ? WATCHD_FLAG_PATH_ESCAPED : 0), i->journal, i->oldest_cursor,
                                     i->last_id, i->bytes, i->attached, i->state);
}

int method_list_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        DbusIface *d = userdata;
        uid_t uid;
        int r;

        r = bus_sender_uid(msg, &uid);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "The bus did not tell who you are.");
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ssuustttbs)");
        if (r >= 0) {
                r = durable_list(d->durable, uid, list_one, reply);
                if (r < 0 && error_is_watchd(r))
                        return bus_error_for(d->manager, r, "", error);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* ---------------------------------------------------------------------- */
/* As signals: DurableEvents, DurableRescan, DurableCaughtUp, DurableStopped (always unicast) */

/* The name a batch of records is for, kept for its records (and the signals a long batch is cut into). */
static int set_durable_name(BusClient *bc, const char *name) {
        if (bc->durable_name && strcmp(bc->durable_name, name) == 0)
                return 0;
        free(bc->durable_name);
        bc->durable_name = strdup(name);
        return bc->durable_name ? 0 : -ENOMEM;
}

static int signal_events_begin(Client *c, const char *name, void *data) {
        BusClient *bc = data;
        int r;

        assert(!bc->durable_msg);
        r = set_durable_name(bc, name);
        if (r < 0)
                return r;
        r = bus_signal_new(bc->iface, c, "DurableEvents", true, &bc->durable_msg);
        if (r >= 0)
                r = sd_bus_message_append(bc->durable_msg, "s", name);
        if (r >= 0)
                r = sd_bus_message_open_container(bc->durable_msg, 'a', "(tuuss)");
        bc->durable_n = bc->durable_size = 0;
        return r;
}

static int signal_events_end(Client *c, void *data) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = data;
        int r;

        msg = TAKE_PTR(bc->durable_msg);
        if (!msg)
                return 0;
        r = sd_bus_message_close_container(msg);
        if (r >= 0)
                r = sd_bus_send(bc->iface->bus, msg, NULL);
        return r;
}

/* An event, its paths escaped as Events' are; a signal is cut before EVENTS_BATCH_MAX_BYTES. */
static int signal_events_add(Client *c, const JournalEntry *e, void *data) {
        BusClient *bc = data;
        _cleanup_free_ char *p = NULL, *np = NULL;
        bool escaped = path_needs_escape(e->path) || (e->new_path && path_needs_escape(e->new_path));
        size_t size;
        int r;

        if (escaped) {
                p = path_escape(e->path);
                np = e->new_path ? path_escape(e->new_path) : strdup("");
                if (!p || !np)
                        return -ENOMEM;
        }
        size = strlen(p ?: e->path) + strlen(np ?: e->new_path ?: "") + 32;
        if (bc->durable_n > 0 && bc->durable_size + size > EVENTS_BATCH_MAX_BYTES) {
                r = signal_events_end(c, data);
                if (r >= 0)
                        r = signal_events_begin(c, bc->durable_name, data);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_append(bc->durable_msg, "(tuuss)", e->id, e->mask | (escaped ? WATCHD_FLAG_PATH_ESCAPED : 0),
                                  e->cookie, p ?: e->path,
                                  np                  ?:
                                          e->new_path ?:
                                                        "");
        if (r < 0)
                return r;
        bc->durable_n++;
        bc->durable_size += size;
        return 0;
}

static int signal_rescan(Client *c, const char *name, const JournalEntry *e, void *data) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = data;
        int r;

        r = bus_signal_new(bc->iface, c, "DurableRescan", true, &msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "sts", name, e->id, journal_gap_reason_to_string(e->reason));
        if (r >= 0)
                r = sd_bus_message_open_container(msg, 'a', "(su)");
        for (size_t i = 0; r >= 0 && i < e->n_scope; i++) {
                _cleanup_free_ char *esc = path_needs_escape(e->scope[i].path) ? path_escape(e->scope[i].path) : NULL;

                if (!esc && path_needs_escape(e->scope[i].path))
                        return -ENOMEM;
                r = sd_bus_message_append(msg, "(su)", esc ?: e->scope[i].path,
                                          (e->scope[i].recursive ? WATCHD_RESCAN_RECURSIVE : 0) |
                                                  (esc ? WATCHD_FLAG_PATH_ESCAPED : 0));
        }
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        if (r >= 0)
                r = sd_bus_send(bc->iface->bus, msg, NULL);
        return r;
}

static int signal_caught_up(Client *c, const char *name, uint64_t id, void *data) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = data;
        int r;

        r = bus_signal_new(bc->iface, c, "DurableCaughtUp", true, &msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "st", name, id);
        if (r >= 0)
                r = sd_bus_send(bc->iface->bus, msg, NULL);
        return r;
}

static int signal_stopped(Client *c, const char *name, const char *reason, void *data) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = data;
        int r;

        bc->durable_msg = sd_bus_message_unref(bc->durable_msg);
        r = bus_signal_new(bc->iface, c, "DurableStopped", true, &msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "ss", name, reason);
        if (r >= 0)
                r = sd_bus_send(bc->iface->bus, msg, NULL);
        if (r < 0)
                log_debug_errno(r, "Failed to tell %s that durable subscription %s stopped, ignoring: %m", c->name, name);
        return 0;
}

static bool signal_congested(Client *c, void *data) {
        return bus_congested(data);
}

/*
 * What counts as read, for the signals of a replay: as for Events
 * (bus_ping_confirms() in bus_signals.c), the client's own answer to a
 * Peer.Ping sent after them. The replay has a Ping of its own
 * (BusClient.durable_ping), apart from the one of the client's live
 * records: a client whose live records go to a stream has no other, and
 * one whose live records wait for their own answer does not hold the
 * replay up. Both count against the uid's PINGS_PER_USER_MAX. After an
 * answer that confirmed nothing, the next Ping waits, 10 ms doubling up to
 * 5 s, as for live records: the pump asks again meanwhile and is told
 * -EAGAIN.
 */
#define DURABLE_PING_RETRY_MIN_USEC (10u * 1000u)
#define DURABLE_PING_RETRY_MAX_USEC (5u * 1000u * 1000u)

static int on_durable_ping_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        BusClient *bc = userdata;
        bool confirmed = bus_ping_confirms(bc, reply);

        bus_ping_slot_end(bc, &bc->durable_ping);
        if (confirmed)
                bc->durable_ping_retry_usec = 0;
        else {
                const sd_bus_error *e = sd_bus_message_get_error(reply);

                bc->durable_ping_retry_usec = bc->durable_ping_retry_usec == 0 ?
                        DURABLE_PING_RETRY_MIN_USEC :
                        MIN(2 * bc->durable_ping_retry_usec, (uint64_t) DURABLE_PING_RETRY_MAX_USEC);
                bc->durable_ping_not_before = now_usec() + bc->durable_ping_retry_usec;
                log_debug("Our Ping to %s about its durable subscriptions confirmed nothing (%s), asking again later.",
                          bc->client->name, e ? e->name : "an answer from someone else");
        }
        durable_confirmed(bc->iface->durable, bc->client, confirmed);
        return 0;
}

static int signal_ask_confirm(Client *c, void *data) {
        BusClient *bc = data;

        if (bc->durable_ping || now_usec() < bc->durable_ping_not_before)
                return -EAGAIN;
        return bus_ping_send(bc, &bc->durable_ping, on_durable_ping_reply, bc);
}

const DurableOps bus_durable_signal_ops = {
        .events_begin = signal_events_begin,
        .events_add = signal_events_add,
        .events_end = signal_events_end,
        .rescan = signal_rescan,
        .caught_up = signal_caught_up,
        .stopped = signal_stopped,
        .congested = signal_congested,
        .ask_confirm = signal_ask_confirm,
};

/* ---------------------------------------------------------------------- */
/* In the client's stream (watchd-stream(5), types 4 to 7), for a client that asked ("durable") */

static Stream *stream_of(BusClient *bc) {
        return bc->stream ? stream_loop_get(bc->stream) : NULL;
}

static int stream_events_begin(Client *c, const char *name, void *data) {
        return set_durable_name(data, name);
}

static int stream_events_add(Client *c, const JournalEntry *e, void *data) {
        BusClient *bc = data;
        Stream *s = stream_of(bc);
        size_t name_len = strlen(bc->durable_name), path_len = strlen(e->path);
        size_t new_len = e->new_path ? strlen(e->new_path) : 0;
        size_t need = stream_frame_durable_event_size(name_len, path_len, new_len);
        uint8_t *p;
        int r;

        if (!s)
                return -EPIPE;
        if (need > STREAM_FRAME_MAX)
                return -E2BIG; /* cannot be: a journal's paths are 64 KiB at most */
        r = stream_reserve(s, need, &p);
        if (r >= 0)
                r = stream_frame_encode_durable_event(p, need, e->id, e->mask, e->cookie, bc->durable_name, name_len,
                                                      e->path, path_len, e->new_path, new_len);
        if (r < 0)
                return r;
        stream_commit(s, (size_t) r);
        return 0;
}

static int stream_events_end(Client *c, void *data) {
        Stream *s = stream_of(data);

        if (!s)
                return -EPIPE;
        stream_push(s);
        return 0;
}

static int stream_rescan(Client *c, const char *name, const JournalEntry *e, void *data) {
        StreamRescanDir dirs[JOURNAL_GAP_MAX_SCOPE];
        const char *reason = journal_gap_reason_to_string(e->reason);
        Stream *s = stream_of(data);
        size_t n = MIN(e->n_scope, (size_t) JOURNAL_GAP_MAX_SCOPE), need;
        uint8_t *p;
        int r;

        if (!s)
                return -EPIPE;
        for (size_t i = 0; i < n; i++)
                dirs[i] = (StreamRescanDir) {
                        .path = e->scope[i].path,
                        .flags = e->scope[i].recursive ? WATCHD_RESCAN_RECURSIVE : 0,
                };
        need = stream_frame_durable_rescan_size(name, reason, dirs, n);
        if (need > STREAM_FRAME_MAX)
                n = 0; /* too many directories for a frame: everything */
        need = stream_frame_durable_rescan_size(name, reason, dirs, n);
        r = stream_reserve(s, need, &p);
        if (r >= 0)
                r = stream_frame_encode_durable_rescan(p, need, e->id, name, reason, dirs, n);
        if (r < 0)
                return r;
        stream_commit(s, (size_t) r);
        stream_push(s);
        return 0;
}

static int stream_caught_up(Client *c, const char *name, uint64_t id, void *data) {
        Stream *s = stream_of(data);
        size_t need = STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_DURABLE_CAUGHT_UP_FIXED + strlen(name) + 1;
        uint8_t *p;
        int r;

        if (!s)
                return -EPIPE;
        r = stream_reserve(s, need, &p);
        if (r >= 0)
                r = stream_frame_encode_durable_caught_up(p, need, id, name);
        if (r < 0)
                return r;
        stream_commit(s, (size_t) r);
        stream_push(s);
        return 0;
}

static int stream_stopped(Client *c, const char *name, const char *reason, void *data) {
        Stream *s = stream_of(data);
        size_t need = STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_DURABLE_STOPPED_FIXED + strlen(name) + 1 +
                strlen(reason) + 1;
        uint8_t *p;
        int r;

        r = s ? stream_reserve(s, need, &p) : -EPIPE;
        if (r >= 0)
                r = stream_frame_encode_durable_stopped(p, need, name, reason);
        if (r < 0) {
                log_debug_errno(r, "Failed to tell %s that durable subscription %s stopped, ignoring: %m", c->name, name);
                return 0;
        }
        stream_commit(s, (size_t) r);
        stream_push(s);
        return 0;
}

/* The socket is full (what waits is the kernel's buffer's and ours), or its client closed it. */
static bool stream_congested(Client *c, void *data) {
        Stream *s = stream_of(data);

        return !s || stream_is_dead(s) || stream_pending_bytes(s) > 0;
}

const DurableOps bus_durable_stream_ops = {
        .events_begin = stream_events_begin,
        .events_add = stream_events_add,
        .events_end = stream_events_end,
        .rescan = stream_rescan,
        .caught_up = stream_caught_up,
        .stopped = stream_stopped,
        .congested = stream_congested,
        .wakes_itself = true,
        /* No ask_confirm: what the socket took is the client's, bounded by its buffer. */
};
