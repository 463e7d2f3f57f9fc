/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dbus_iface - org.example.Inotify on the bus
 *
 * The object: its vtable (the methods of bus_methods.c, bus_stream.c and,
 * below, the durable ones; the signals; bus_properties.c's properties),
 * publishing it and taking the name, and the bus layer's life. bus.h says
 * which file of the layer does what.
 *
 * Below too, until they move to a file of their own: the durable methods
 * (CreateDurable, ResumeDurable, RemoveDurable, ListDurable) and the
 * transport of durable subscriptions to a client that resumed one. They
 * call the layer's helpers by the short names they had when the layer was
 * one file; the few lines after the includes give them those names.
 */

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "bus_caller.h"
#include "bus_methods.h"
#include "bus_properties.h"
#include "bus_signals.h"
#include "bus_stream.h"
#include "dbus_iface.h"
#include "durable.h"
#include "durable_store.h"
#include "error.h"
#include "events_batch.h"
#include "log.h"
#include "macro.h"
#include "path_escape.h"
#include "watchd-api.h"

/* The durable code's names for the layer's helpers. */
#define QUOTE_MAX BUS_QUOTE_MAX

static int quote_len(const char *s, size_t max) {
        return bus_quote_len(s, max);
}

static char *what_of(const char *path) {
        return bus_what_of(path);
}

static int error_for(DbusIface *d, int r, const char *what, sd_bus_error *error) {
        return bus_error_for(d->manager, r, what, error);
}

static int validate(uint32_t mask, uint32_t flags, sd_bus_error *error) {
        return bus_check_mask_flags(mask, flags, error);
}

static int path_from_call(const char *sent, bool escaped, char **ret, sd_bus_error *error) {
        return bus_path_from_call(sent, escaped, ret, error);
}

static int client_for_call(DbusIface *d, sd_bus_message *msg, Client **ret, sd_bus_error *error) {
        return bus_client_for_call(d, msg, ret, error);
}

static int sender_uid(sd_bus_message *msg, uid_t *ret) {
        return bus_sender_uid(msg, ret);
}

static int signal_new(DbusIface *d, Client *c, const char *member, bool unicast, sd_bus_message **ret) {
        return bus_signal_new(d, c, member, unicast, ret);
}

/* ---------------------------------------------------------------------- */
/* Durable subscriptions (durable.h; watchd(8), DURABLE SUBSCRIPTIONS) */

/* A quoted name for error messages: "'NAME'" (names are plain ASCII, checked first). */
static char *what_name(const char *name) {
        char *w;

        if (asprintf(&w, "'%.*s'", quote_len(name, QUOTE_MAX), name) < 0)
                return NULL;
        return w;
}

static int check_durable_name(const char *name, bool allow_uid, sd_bus_error *error) {
        const char *slash = allow_uid ? strchr(name, '/') : NULL;

        if (durable_name_valid(slash ? slash + 1 : name))
                return 0;
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                 "'%.*s' is not a durable subscription name: 1 to %u of A-Z a-z 0-9 _ . -, "
                                 "not starting with '.'.", quote_len(name, QUOTE_MAX), name, DURABLE_NAME_MAX);
}

typedef struct PendingCreate {
        DbusIface *iface;
        sd_bus_message *msg;
} PendingCreate;

static void create_durable_done(int r, const char *journal, uint64_t cursor, void *userdata) {
        _cleanup_free_ PendingCreate *p = userdata;
        _cleanup_(message_unrefp) sd_bus_message *msg = p->msg;
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
                what = what_of(path);
                (void) error_for(p->iface, r, what ?: "the path", &error);
                r = sd_bus_reply_method_error(msg, &error);
        } else
                r = sd_bus_reply_method_return(msg, "st", journal, cursor);
        if (r < 0)
                log_debug_errno(r, "Failed to answer CreateDurable, ignoring: %m");
}

static int method_create_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
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
                                         "PATH_ESCAPED (0x%x).", WATCHD_FLAG_PATH_ESCAPED);
        if (r < 0)
                return r;
        r = check_durable_name(name, false, error);
        if (r < 0)
                return r;
        if (flags & WATCHD_FLAG_ONESHOT)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "ONESHOT (0x%x) makes no sense for a durable subscription.", WATCHD_FLAG_ONESHOT);
        r = validate(mask, flags & ~WATCHD_FLAG_PATH_ESCAPED, error);
        if (r < 0)
                return r;
        r = path_from_call(sent, flags & WATCHD_FLAG_PATH_ESCAPED, &path, error);
        if (r < 0)
                return r;
        flags &= ~WATCHD_FLAG_PATH_ESCAPED;

        r = client_for_call(d, msg, &c, error);
        if (r < 0)
                return r;
        p = malloc(sizeof(PendingCreate));
        if (!p)
                return -ENOMEM;
        *p = (PendingCreate) { d, msg };
        r = durable_create(d->durable, &c->caller, name, path, mask, flags, create_durable_done, p, journal, &cursor);
        if (r < 0) {
                _cleanup_free_ char *what = what_of(sent);

                free(p);
                if (r == -WATCHD_E_DURABLE_EXISTS) {
                        free(what);
                        what = what_name(name);
                }
                return error_for(d, r, what ?: "the path", error);
        }
        if (r > 0) {
                /* A big tree: answered when its walk ends. */
                sd_bus_message_ref(msg);
                return 1;
        }
        free(p);
        return sd_bus_reply_method_return(msg, "st", journal, cursor);
}

static int method_remove_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        DbusIface *d = userdata;
        _cleanup_free_ char *what = NULL;
        const char *name;
        uid_t uid;
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        r = sender_uid(msg, &uid);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "The bus did not tell who you are.");
        r = check_durable_name(name, uid == 0, error);
        if (r < 0)
                return r;
        r = durable_remove(d->durable, uid, name);
        if (r < 0) {
                what = what_name(name);
                return error_for(d, r, what ?: "the name", error);
        }
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_resume_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        DbusIface *d = userdata;
        _cleanup_free_ char *what = NULL;
        char current[JOURNAL_ID_STRING_MAX];
        const char *name, *journal;
        uint64_t cursor;
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
                                         quote_len(journal, QUOTE_MAX), journal);
        r = client_for_call(d, msg, &c, error);
        if (r < 0)
                return r;
        r = durable_resume(d->durable, c, name, journal, cursor, current);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "'%s' is not a journal identity (32 lowercase hexadecimal digits).", journal);
        if (r < 0) {
                what = what_name(name);
                return error_for(d, r, what ?: "the name", error);
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
                                     i->flags | (esc ? WATCHD_FLAG_PATH_ESCAPED : 0), i->journal,
                                     i->oldest_cursor, i->last_id, i->bytes, i->attached, i->state);
}

static int method_list_durable(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(message_unrefp) sd_bus_message *reply = NULL;
        DbusIface *d = userdata;
        uid_t uid;
        int r;

        r = sender_uid(msg, &uid);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "The bus did not tell who you are.");
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ssuustttbs)");
        if (r >= 0) {
                r = durable_list(d->durable, uid, list_one, reply);
                if (r < 0 && error_is_watchd(r))
                        return error_for(d, r, "", error);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static const sd_bus_vtable watchd_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("AddWatch",
                                SD_BUS_ARGS("s", path, "u", mask, "u", flags),
                                SD_BUS_RESULT("u", id),
                                bus_method_add_watch,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("AddWatchFd",
                                SD_BUS_ARGS("h", fd, "u", mask, "u", flags),
                                SD_BUS_RESULT("u", id),
                                bus_method_add_watch_fd,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemoveWatch",
                                SD_BUS_ARGS("u", id),
                                SD_BUS_NO_RESULT,
                                bus_method_remove_watch,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListWatches",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(usuu)", watches),
                                bus_method_list_watches,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetStats",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a{sv}", stats),
                                bus_method_get_stats,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OpenStream",
                                SD_BUS_ARGS("a{sv}", options),
                                SD_BUS_RESULT("h", stream),
                                bus_method_open_stream,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("CreateDurable",
                                SD_BUS_ARGS("s", name, "s", path, "u", mask, "u", flags),
                                SD_BUS_RESULT("s", journal, "t", cursor),
                                method_create_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResumeDurable",
                                SD_BUS_ARGS("s", name, "s", journal, "t", cursor),
                                SD_BUS_RESULT("s", journal),
                                method_resume_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemoveDurable",
                                SD_BUS_ARGS("s", name),
                                SD_BUS_NO_RESULT,
                                method_remove_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListDurable",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(ssuustttbs)", subscriptions),
                                method_list_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("Events", SD_BUS_ARGS("a(uuuss)", events), 0),
        SD_BUS_SIGNAL_WITH_ARGS("Overflow", SD_BUS_ARGS("au", ids), 0),
        SD_BUS_SIGNAL_WITH_ARGS("WatchRemoved", SD_BUS_ARGS("u", id, "s", reason), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableEvents", SD_BUS_ARGS("s", name, "a(tuuss)", events), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableRescan", SD_BUS_ARGS("s", name, "t", id, "s", reason, "a(su)", directories), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableCaughtUp", SD_BUS_ARGS("s", name, "t", id), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableStopped", SD_BUS_ARGS("s", name, "s", reason), 0),
        SD_BUS_PROPERTY("Version", "s", bus_property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Backend", "s", bus_property_get_backend, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Capabilities", "as", bus_property_get_capabilities, 0, SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_VTABLE_END,
};

void dbus_iface_reloaded(DbusIface *d) {
        bus_properties_reloaded(d);
}

/* ---------------------------------------------------------------------- */
/* The transport of durable subscriptions to a client that resumed one: always unicast */

static BusClient *bus_client_of(Client *c) {
        return c->queue.data;
}

static int durable_events_begin(Client *c, const char *name, void *userdata) {
        BusClient *bc = bus_client_of(c);
        int r;

        assert(!bc->durable_msg);
        if (!bc->durable_name || strcmp(bc->durable_name, name) != 0) {
                free(bc->durable_name);
                bc->durable_name = strdup(name);
                if (!bc->durable_name)
                        return -ENOMEM;
        }
        r = signal_new(bc->iface, c, "DurableEvents", true, &bc->durable_msg);
        if (r >= 0)
                r = sd_bus_message_append(bc->durable_msg, "s", name);
        if (r >= 0)
                r = sd_bus_message_open_container(bc->durable_msg, 'a', "(tuuss)");
        bc->durable_n = bc->durable_size = 0;
        return r;
}

static int durable_events_end(Client *c, void *userdata) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = bus_client_of(c);
        size_t n = bc->durable_n;
        int r;

        msg = TAKE_PTR(bc->durable_msg);
        if (!msg)
                return 0;
        r = sd_bus_message_close_container(msg);
        if (r >= 0)
                r = sd_bus_send(bc->iface->bus, msg, NULL);
        if (r < 0)
                return r;
        delivery_sent(&c->queue, n);
        return 0;
}

/* An event, its paths escaped as Events' are; a signal is cut before EVENTS_BATCH_MAX_BYTES. */
static int durable_events_add(Client *c, const JournalEntry *e, void *userdata) {
        BusClient *bc = bus_client_of(c);
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
                r = durable_events_end(c, userdata);
                if (r >= 0)
                        r = durable_events_begin(c, bc->durable_name, userdata);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_append(bc->durable_msg, "(tuuss)", e->id,
                                  e->mask | (escaped ? WATCHD_FLAG_PATH_ESCAPED : 0), e->cookie,
                                  p ?: e->path, np ?: e->new_path ?: "");
        if (r < 0)
                return r;
        bc->durable_n++;
        bc->durable_size += size;
        return 0;
}

static int durable_rescan(Client *c, const char *name, const JournalEntry *e, void *userdata) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = bus_client_of(c);
        int r;

        r = signal_new(bc->iface, c, "DurableRescan", true, &msg);
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
        if (r < 0)
                return r;
        delivery_sent(&c->queue, 1);
        return 0;
}

static int durable_caught_up(Client *c, const char *name, uint64_t id, void *userdata) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = bus_client_of(c);
        int r;

        r = signal_new(bc->iface, c, "DurableCaughtUp", true, &msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "st", name, id);
        if (r >= 0)
                r = sd_bus_send(bc->iface->bus, msg, NULL);
        if (r < 0)
                return r;
        delivery_sent(&c->queue, 1);
        return 0;
}

static int durable_stopped(Client *c, const char *name, const char *reason, void *userdata) {
        _cleanup_(message_unrefp) sd_bus_message *msg = NULL;
        BusClient *bc = bus_client_of(c);
        int r;

        bc->durable_msg = sd_bus_message_unref(bc->durable_msg);
        r = signal_new(bc->iface, c, "DurableStopped", true, &msg);
        if (r >= 0)
                r = sd_bus_message_append(msg, "ss", name, reason);
        if (r >= 0)
                r = sd_bus_send(bc->iface->bus, msg, NULL);
        if (r < 0)
                log_debug_errno(r, "Failed to tell %s that durable subscription %s stopped, ignoring: %m", c->name, name);
        return 0;
}

static const DurableOps bus_durable_ops = {
        .events_begin = durable_events_begin,
        .events_add = durable_events_add,
        .events_end = durable_events_end,
        .rescan = durable_rescan,
        .caught_up = durable_caught_up,
        .stopped = durable_stopped,
};

const DurableOps *dbus_iface_durable_ops(void) {
        return &bus_durable_ops;
}

DbusIface *dbus_iface_free(DbusIface *d) {
        if (!d)
                return NULL;
        /* The durable subscriptions went first (watchd.c): their owners, their journals closed cleanly.
         * The clients stay the manager's; what the bus held for them goes. */
        while (d->clients) {
                BusClient *bc = d->clients;
                Client *c = bc->client;

                bus_ping_end(bc);
                bus_client_free(bc);
                delivery_queue_set_transport(&c->queue, NULL, NULL);
        }
        sd_bus_slot_unref(d->vtable_slot);
        sd_bus_unref(d->bus);
        sd_event_unref(d->event);
        if (d->pings)
                g_hash_table_destroy(d->pings);
        free(d);
        return NULL;
}

int dbus_iface_new(Manager *m, sd_bus *bus, sd_event *event, DbusIface **ret) {
        DbusIface *d;

        d = calloc(1, sizeof(DbusIface));
        if (!d)
                return log_error_errno(-ENOMEM, "Out of memory.");
        d->manager = m;
        d->bus = sd_bus_ref(bus);
        d->event = sd_event_ref(event);
        d->pings = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        *ret = d;
        return 0;
}

int dbus_iface_start(DbusIface *d, Durable *durable) {
        sd_bus *bus = d->bus;
        int r;

        d->durable = durable;
        r = sd_bus_add_object_vtable(bus, &d->vtable_slot, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, watchd_vtable, d);
        if (r < 0)
                return log_error_errno(r, "Failed to publish %s: %m", WATCHD_OBJECT_PATH);

        r = sd_bus_request_name(bus, WATCHD_BUS_NAME, 0);
        if (r == -EEXIST)
                return log_error_errno(r, "The name %s is already taken: is another watchd running?", WATCHD_BUS_NAME);
        if (r < 0)
                return log_error_errno(r, "Failed to take the name %s: %m", WATCHD_BUS_NAME);

        r = sd_bus_attach_event(bus, d->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        return 0;
}
