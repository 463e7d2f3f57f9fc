/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-bus - the library's D-Bus layer: calls, replies, who owns the name
 *
 * Everything the library receives is read by one GDBus filter function, on
 * GDBus's worker thread, in the order the messages arrived: the replies to
 * its calls, NameOwnerChanged of org.example.Inotify, and the daemon's
 * signals. So the owner of the name, the replies and the events are seen
 * in one order, whatever thread called and whether or not any GMainContext
 * runs. The layer above (watchd-owner.c) gets them through a table of
 * callbacks given at construction and takes its own lock; this layer holds
 * its lock only to match a reply to its call.
 *
 * The signals are handed up as they are (sender, member, body): watchd's
 * Events/Overflow/WatchRemoved are one way records reach the client; the
 * record stream (watchd-stream.h) is the other, fed from a socket the
 * daemon hands over a call made here (watchd_bus_call_fds()).
 */

#include <gio/gio.h>
#include <gio/gunixfdlist.h>

#define WATCHD_BUS_NAME    "org.example.Inotify"
#define WATCHD_OBJECT_PATH "/org/example/Inotify"
#define WATCHD_INTERFACE   "org.example.Inotify"

typedef struct WatchdBus WatchdBus;

typedef struct WatchdBusCallbacks {
        /* NameOwnerChanged, or the answer of GetNameOwner: owner is the unique
         * name now holding org.example.Inotify, or NULL. */
        void (*owner_changed)(gpointer userdata, const char *owner);
        /* A signal of org.example.Inotify on its object, from any sender (the
         * client checks it against the owner). */
        void (*signal)(gpointer userdata, const char *sender, const char *member, GVariant *body);
        /* The connection closed; every call still waiting has failed. */
        void (*closed)(gpointer userdata, const GError *error);
} WatchdBusCallbacks;

/* The reply of a call: body (the reply's arguments) or error, sender (the
 * unique name that answered: only the owner of the name can answer a call
 * sent to it). Called once: on GDBus's worker thread for a reply, or on the
 * thread that gives up on the call (watchd_bus_call_fail()) or sees the
 * connection close. */
typedef void (*WatchdBusReplyFunc)(gpointer userdata, const char *sender, GVariant *body, const GError *error);

/* The same, with the descriptors the reply carries (NULL if none, or an error). */
typedef void (*WatchdBusReplyFdsFunc)(gpointer userdata, const char *sender, GVariant *body, GUnixFDList *fds,
                                      const GError *error);

/* userdata is kept until the last filter call has returned, then given to
 * userdata_free: GDBus may call a filter once more after it was removed. */
WatchdBus *watchd_bus_new(GDBusConnection *connection, gboolean private_connection, const WatchdBusCallbacks *callbacks,
                          gpointer userdata, GDestroyNotify userdata_free);
/* Stops the callbacks (but for one filter call that may be running), closes a
 * private connection, drops the caller's reference. */
void watchd_bus_close(WatchdBus *bus);
GDBusConnection *watchd_bus_get_connection(WatchdBus *bus);

/* Sends destination.interface.method(params) (params floating or NULL) with
 * fds; done gets the reply. Returns the call's serial, or 0 with error if it
 * could not be sent (done is then never called). */
guint32 watchd_bus_call(WatchdBus *bus, const char *destination, const char *interface, const char *method,
                        GVariant *params, GUnixFDList *fds, gboolean auto_start, WatchdBusReplyFunc done,
                        gpointer userdata, GError **error);

/* A call to watchd whose reply carries descriptors (OpenStream): done gets them. */
guint32 watchd_bus_call_fds(WatchdBus *bus, const char *destination, const char *interface, const char *method,
                            GVariant *params, WatchdBusReplyFdsFunc done, gpointer userdata, GError **error);

/* Fails the call serial with error now (a timeout, a cancellation): done runs
 * in this thread unless the reply was already handled. Returns whether it did. */
gboolean watchd_bus_call_fail(WatchdBus *bus, guint32 serial, const GError *error);

/* AddMatch for the name's owner changes and the daemon's signals, then
 * GetNameOwner: owner_changed() follows. Returns FALSE with error if the
 * calls could not be sent. */
gboolean watchd_bus_start(WatchdBus *bus, GError **error);
