/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fake-watchd - a watchd played by a test (see fake-watchd.h)
 */

#include <errno.h>
#include <gio/gunixfdlist.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake-watchd.h"
#include "stream_frame.h"

#define BUS_NAME    "org.example.Inotify"
#define OBJECT_PATH "/org/example/Inotify"
#define INTERFACE   "org.example.Inotify"

typedef struct FakeReply {
        GVariant *body;
        char *error_name;
} FakeReply;

typedef struct FakeAdd {
        guint32 id;
        char *path; /* as it came: escaped if flags say so */
        guint32 mask, flags;
} FakeAdd;

struct FakeWatchd {
        GDBusConnection *c;
        guint filter_id;
        char **caps;

        GMutex lock;    /* below */
        GQueue replies; /* FakeReply* for the next AddWatch calls */
        guint32 next_id;
        guint n_adds;
        GArray *adds;    /* FakeAdd answered with an id */
        GArray *removes; /* guint32 */
        guint n_list_calls;
        GVariant *list_reply;
        GVariant *stream_reply;
        int stream_fd; /* our end, or -1 */
        gboolean hold_adds, hold_lists;
        GQueue held_adds;  /* GDBusMessage* of AddWatch calls not answered yet */
        GQueue held_lists; /* ListWatches */
        char *last_caller;
};

static void fake_reply_free(FakeReply *r) {
        if (r->body)
                g_variant_unref(r->body);
        g_free(r->error_name);
        g_free(r);
}

static void fake_add_clear(FakeAdd *a) {
        g_free(a->path);
}

static void reply(FakeWatchd *fw, GDBusMessage *call, GVariant *body, GUnixFDList *fds) {
        g_autoptr(GDBusMessage) m = g_dbus_message_new_method_reply(call);

        if (body)
                g_dbus_message_set_body(m, body);
        if (fds)
                g_dbus_message_set_unix_fd_list(m, fds);
        (void) g_dbus_connection_send_message(fw->c, m, G_DBUS_SEND_MESSAGE_FLAGS_NONE, NULL, NULL);
}

static void reply_error(FakeWatchd *fw, GDBusMessage *call, const char *name, const char *text) {
        g_autoptr(GDBusMessage) m = g_dbus_message_new_method_error_literal(call, name, text);

        (void) g_dbus_connection_send_message(fw->c, m, G_DBUS_SEND_MESSAGE_FLAGS_NONE, NULL, NULL);
}

static void answer_add(FakeWatchd *fw, GDBusMessage *call, GVariant *params) {
        FakeReply *r;
        FakeAdd a = { 0 };

        g_mutex_lock(&fw->lock);
        r = g_queue_pop_head(&fw->replies);
        if (!r) {
                a.id = ++fw->next_id;
                if (params && g_variant_is_of_type(params, G_VARIANT_TYPE("(suu)")))
                        g_variant_get(params, "(suu)", &a.path, &a.mask, &a.flags);
                else
                        a.path = g_strdup("");
                g_array_append_val(fw->adds, a);
        }
        g_mutex_unlock(&fw->lock);
        if (!r)
                reply(fw, call, g_variant_new("(u)", a.id), NULL);
        else if (r->error_name)
                reply_error(fw, call, r->error_name, "the fake watchd says no");
        else
                reply(fw, call, r->body, NULL);
        if (r)
                fake_reply_free(r);
}

static void on_add_watch(FakeWatchd *fw, GDBusMessage *call, GVariant *params) {
        gboolean hold;

        g_mutex_lock(&fw->lock);
        fw->n_adds++;
        hold = fw->hold_adds;
        if (hold)
                g_queue_push_tail(&fw->held_adds, g_object_ref(call));
        g_mutex_unlock(&fw->lock);
        if (!hold)
                answer_add(fw, call, params);
}

static void on_remove_watch(FakeWatchd *fw, GDBusMessage *call, GVariant *params) {
        guint32 id = 0;

        if (params && g_variant_is_of_type(params, G_VARIANT_TYPE("(u)")))
                g_variant_get(params, "(u)", &id);
        g_mutex_lock(&fw->lock);
        g_array_append_val(fw->removes, id);
        for (guint i = 0; i < fw->adds->len; i++)
                if (g_array_index(fw->adds, FakeAdd, i).id == id) {
                        g_array_remove_index(fw->adds, i);
                        break;
                }
        g_mutex_unlock(&fw->lock);
        reply(fw, call, NULL, NULL);
}

static void answer_list(FakeWatchd *fw, GDBusMessage *call) {
        g_autoptr(GVariant) body = NULL;

        g_mutex_lock(&fw->lock);
        if (fw->list_reply)
                body = g_variant_ref(fw->list_reply);
        else {
                GVariantBuilder b;

                g_variant_builder_init(&b, G_VARIANT_TYPE("a(usuu)"));
                for (guint i = 0; i < fw->adds->len; i++) {
                        FakeAdd *a = &g_array_index(fw->adds, FakeAdd, i);

                        g_variant_builder_add(&b, "(usuu)", a->id, a->path, a->mask, a->flags);
                }
                body = g_variant_ref_sink(g_variant_new("(a(usuu))", &b));
        }
        g_mutex_unlock(&fw->lock);
        reply(fw, call, body, NULL);
}

static void on_list_watches(FakeWatchd *fw, GDBusMessage *call) {
        gboolean hold;

        g_mutex_lock(&fw->lock);
        fw->n_list_calls++;
        hold = fw->hold_lists;
        if (hold)
                g_queue_push_tail(&fw->held_lists, g_object_ref(call));
        g_mutex_unlock(&fw->lock);
        if (!hold)
                answer_list(fw, call);
}

static void on_open_stream(FakeWatchd *fw, GDBusMessage *call) {
        g_autoptr(GUnixFDList) fds = NULL;
        g_autoptr(GVariant) body = NULL;
        guint8 header[STREAM_FRAME_HEADER_SIZE];
        int sv[2];

        g_mutex_lock(&fw->lock);
        body = fw->stream_reply ? g_variant_ref(fw->stream_reply) : NULL;
        g_mutex_unlock(&fw->lock);
        if (body) {
                reply(fw, call, body, NULL);
                return;
        }
        g_mutex_lock(&fw->lock);
        if (!fw->caps || !g_strv_contains((const char *const *) fw->caps, "stream") ||
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
                g_mutex_unlock(&fw->lock);
                reply_error(fw, call, "org.freedesktop.DBus.Error.NotSupported", "no stream");
                return;
        }
        g_mutex_unlock(&fw->lock);
        (void) stream_frame_header_encode(header, STREAM_FRAME_VERSION);
        g_assert_cmpint(write(sv[0], header, sizeof header), ==, (gssize) sizeof header);
        fds = g_unix_fd_list_new_from_array(&sv[1], 1); /* takes it */
        g_mutex_lock(&fw->lock);
        if (fw->stream_fd >= 0)
                close(fw->stream_fd);
        fw->stream_fd = sv[0];
        g_mutex_unlock(&fw->lock);
        reply(fw, call, g_variant_new("(h)", 0), fds);
}

static void on_get_all(FakeWatchd *fw, GDBusMessage *call) {
        GVariantBuilder b;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&b, "{sv}", "Version", g_variant_new_string("0.0-fake"));
        g_variant_builder_add(&b, "{sv}", "Backend", g_variant_new_string("syscall"));
        g_mutex_lock(&fw->lock);
        if (fw->caps)
                g_variant_builder_add(&b, "{sv}", "Capabilities", g_variant_new_strv((const char *const *) fw->caps, -1));
        g_mutex_unlock(&fw->lock);
        reply(fw, call, g_variant_new("(a{sv})", &b), NULL);
}

/* GDBus's worker thread of the fake's connection: every call to it is answered here. */
static GDBusMessage *fake_filter(GDBusConnection *c, GDBusMessage *m, gboolean incoming, gpointer userdata) {
        FakeWatchd *fw = userdata;
        const char *iface, *member;
        GVariant *params;

        if (!incoming || g_dbus_message_get_message_type(m) != G_DBUS_MESSAGE_TYPE_METHOD_CALL ||
            g_strcmp0(g_dbus_message_get_path(m), OBJECT_PATH) != 0)
                return m;
        iface = g_dbus_message_get_interface(m);
        member = g_dbus_message_get_member(m);
        params = g_dbus_message_get_body(m);
        g_mutex_lock(&fw->lock);
        g_free(fw->last_caller);
        fw->last_caller = g_strdup(g_dbus_message_get_sender(m));
        g_mutex_unlock(&fw->lock);
        if (g_strcmp0(iface, INTERFACE) == 0 && g_strcmp0(member, "AddWatch") == 0)
                on_add_watch(fw, m, params);
        else if (g_strcmp0(iface, INTERFACE) == 0 && g_strcmp0(member, "RemoveWatch") == 0)
                on_remove_watch(fw, m, params);
        else if (g_strcmp0(iface, INTERFACE) == 0 && g_strcmp0(member, "ListWatches") == 0)
                on_list_watches(fw, m);
        else if (g_strcmp0(iface, INTERFACE) == 0 && g_strcmp0(member, "GetStats") == 0)
                reply(fw, m, g_variant_new_parsed("(@a{sv} {},)"), NULL);
        else if (g_strcmp0(iface, INTERFACE) == 0 && g_strcmp0(member, "OpenStream") == 0)
                on_open_stream(fw, m);
        else if (g_strcmp0(iface, "org.freedesktop.DBus.Properties") == 0 && g_strcmp0(member, "GetAll") == 0)
                on_get_all(fw, m);
        else
                reply_error(fw, m, "org.freedesktop.DBus.Error.UnknownMethod", "the fake watchd has no such method");
        g_object_unref(m);
        return NULL;
}

FakeWatchd *fake_watchd_new(const char *address, const char *const *caps) {
        g_autoptr(GError) error = NULL;
        FakeWatchd *fw = g_new0(FakeWatchd, 1);

        g_mutex_init(&fw->lock);
        g_queue_init(&fw->replies);
        fw->adds = g_array_new(FALSE, FALSE, sizeof(FakeAdd));
        g_array_set_clear_func(fw->adds, (GDestroyNotify) fake_add_clear);
        fw->removes = g_array_new(FALSE, FALSE, sizeof(guint32));
        fw->caps = caps ? g_strdupv((char **) caps) : NULL;
        fw->stream_fd = -1;
        fw->c = g_dbus_connection_new_for_address_sync(
                address, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                NULL, NULL, &error);
        g_assert_no_error(error);
        g_dbus_connection_set_exit_on_close(fw->c, FALSE);
        fw->filter_id = g_dbus_connection_add_filter(fw->c, fake_filter, fw, NULL);
        return fw;
}

void fake_watchd_take_name(FakeWatchd *fw) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) r = NULL;
        guint32 ret = 0;

        r = g_dbus_connection_call_sync(fw->c, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "RequestName", g_variant_new("(su)", BUS_NAME, 4 /* DO_NOT_QUEUE */),
                                        G_VARIANT_TYPE("(u)"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
        g_assert_no_error(error);
        g_variant_get(r, "(u)", &ret);
        g_assert_cmpuint(ret, ==, 1); /* PRIMARY_OWNER */
}

FakeWatchd *fake_watchd_start(const char *address, const char *const *caps) {
        FakeWatchd *fw = fake_watchd_new(address, caps);

        fake_watchd_take_name(fw);
        return fw;
}

void fake_watchd_set_caps(FakeWatchd *fw, const char *const *caps) {
        g_mutex_lock(&fw->lock);
        g_strfreev(fw->caps);
        fw->caps = caps ? g_strdupv((char **) caps) : NULL;
        g_mutex_unlock(&fw->lock);
}

void fake_watchd_reset(FakeWatchd *fw) {
        GQueue held;

        fake_watchd_stream_close(fw);
        g_mutex_lock(&fw->lock);
        g_queue_clear_full(&fw->replies, (GDestroyNotify) fake_reply_free);
        g_queue_init(&fw->replies);
        held = fw->held_adds;
        g_queue_init(&fw->held_adds);
        fw->hold_adds = FALSE;
        g_queue_clear_full(&fw->held_lists, g_object_unref);
        g_queue_init(&fw->held_lists);
        fw->hold_lists = FALSE;
        fw->next_id = 0;
        fw->n_adds = fw->n_list_calls = 0;
        g_array_set_size(fw->adds, 0);
        g_array_set_size(fw->removes, 0);
        g_clear_pointer(&fw->list_reply, g_variant_unref);
        g_clear_pointer(&fw->stream_reply, g_variant_unref);
        g_mutex_unlock(&fw->lock);
        g_queue_clear_full(&held, g_object_unref); /* never answered: the client's call fails or times out */
}

void fake_watchd_hold_adds(FakeWatchd *fw, gboolean hold) {
        GQueue held = G_QUEUE_INIT;
        GDBusMessage *m;

        g_mutex_lock(&fw->lock);
        fw->hold_adds = hold;
        if (!hold) {
                held = fw->held_adds;
                g_queue_init(&fw->held_adds);
        }
        g_mutex_unlock(&fw->lock);
        while ((m = g_queue_pop_head(&held))) {
                answer_add(fw, m, g_dbus_message_get_body(m));
                g_object_unref(m);
        }
}

void fake_watchd_hold_lists(FakeWatchd *fw, gboolean hold) {
        GQueue held = G_QUEUE_INIT;
        GDBusMessage *m;

        g_mutex_lock(&fw->lock);
        fw->hold_lists = hold;
        if (!hold) {
                held = fw->held_lists;
                g_queue_init(&fw->held_lists);
        }
        g_mutex_unlock(&fw->lock);
        while ((m = g_queue_pop_head(&held))) {
                answer_list(fw, m);
                g_object_unref(m);
        }
}

char *fake_watchd_dup_last_caller(FakeWatchd *fw) {
        char *s;

        g_mutex_lock(&fw->lock);
        s = g_strdup(fw->last_caller);
        g_mutex_unlock(&fw->lock);
        return s;
}

void fake_watchd_stop(FakeWatchd *fw) {
        g_autoptr(GVariant) r = NULL;

        if (!fw)
                return;
        fake_watchd_stream_close(fw);
        /* Given up before the connection goes, so that a fake started next
         * can take the name at once (the bus sees the close later). */
        r = g_dbus_connection_call_sync(fw->c, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "ReleaseName", g_variant_new("(s)", BUS_NAME), NULL, G_DBUS_CALL_FLAGS_NONE, -1,
                                        NULL, NULL);
        g_dbus_connection_remove_filter(fw->c, fw->filter_id);
        (void) g_dbus_connection_close_sync(fw->c, NULL, NULL);
        g_object_unref(fw->c);
        g_queue_clear_full(&fw->replies, (GDestroyNotify) fake_reply_free);
        g_array_unref(fw->adds);
        g_array_unref(fw->removes);
        g_clear_pointer(&fw->list_reply, g_variant_unref);
        g_clear_pointer(&fw->stream_reply, g_variant_unref);
        g_strfreev(fw->caps);
        g_queue_clear_full(&fw->held_adds, g_object_unref);
        g_queue_clear_full(&fw->held_lists, g_object_unref);
        g_free(fw->last_caller);
        g_mutex_clear(&fw->lock);
        g_free(fw);
}

const char *fake_watchd_unique_name(FakeWatchd *fw) {
        return g_dbus_connection_get_unique_name(fw->c);
}

void fake_watchd_push_add_reply(FakeWatchd *fw, GVariant *body, const char *error_name) {
        FakeReply *r = g_new0(FakeReply, 1);

        r->body = body ? g_variant_ref_sink(body) : NULL;
        r->error_name = g_strdup(error_name);
        g_mutex_lock(&fw->lock);
        g_queue_push_tail(&fw->replies, r);
        g_mutex_unlock(&fw->lock);
}

guint fake_watchd_n_adds(FakeWatchd *fw) {
        guint n;

        g_mutex_lock(&fw->lock);
        n = fw->n_adds;
        g_mutex_unlock(&fw->lock);
        return n;
}

gboolean fake_watchd_was_removed(FakeWatchd *fw, guint32 id) {
        gboolean found = FALSE;

        g_mutex_lock(&fw->lock);
        for (guint i = 0; i < fw->removes->len && !found; i++)
                found = g_array_index(fw->removes, guint32, i) == id;
        g_mutex_unlock(&fw->lock);
        return found;
}

guint fake_watchd_n_removes(FakeWatchd *fw) {
        guint n;

        g_mutex_lock(&fw->lock);
        n = fw->removes->len;
        g_mutex_unlock(&fw->lock);
        return n;
}

guint fake_watchd_n_list_calls(FakeWatchd *fw) {
        guint n;

        g_mutex_lock(&fw->lock);
        n = fw->n_list_calls;
        g_mutex_unlock(&fw->lock);
        return n;
}

void fake_watchd_set_list_reply(FakeWatchd *fw, GVariant *body) {
        g_mutex_lock(&fw->lock);
        g_clear_pointer(&fw->list_reply, g_variant_unref);
        fw->list_reply = body ? g_variant_ref_sink(body) : NULL;
        g_mutex_unlock(&fw->lock);
}

void fake_watchd_set_stream_reply(FakeWatchd *fw, GVariant *body) {
        g_mutex_lock(&fw->lock);
        g_clear_pointer(&fw->stream_reply, g_variant_unref);
        fw->stream_reply = body ? g_variant_ref_sink(body) : NULL;
        g_mutex_unlock(&fw->lock);
}

void fake_watchd_signal(FakeWatchd *fw, const char *destination, const char *member, GVariant *body) {
        g_autoptr(GError) error = NULL;

        g_dbus_connection_emit_signal(fw->c, destination, OBJECT_PATH, INTERFACE, member, body, &error);
        g_assert_no_error(error);
}

gboolean fake_watchd_has_stream(FakeWatchd *fw) {
        gboolean has;

        g_mutex_lock(&fw->lock);
        has = fw->stream_fd >= 0;
        g_mutex_unlock(&fw->lock);
        return has;
}

void fake_watchd_stream_write(FakeWatchd *fw, const void *buf, size_t n) {
        const guint8 *p = buf;
        int fd;

        g_mutex_lock(&fw->lock);
        fd = fw->stream_fd;
        g_mutex_unlock(&fw->lock);
        while (fd >= 0 && n > 0) {
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return; /* the client closed its end */
                p += k;
                n -= (size_t) k;
        }
}

void fake_watchd_stream_event(FakeWatchd *fw, guint32 id, guint32 mask, guint32 cookie, const char *path,
                              const char *new_path) {
        size_t pl = strlen(path), npl = new_path ? strlen(new_path) : 0;
        size_t size = stream_frame_event_size(pl, npl, NULL);
        g_autofree guint8 *buf = NULL;
        int n;

        g_assert_cmpuint(size, <=, STREAM_FRAME_MAX);
        buf = g_malloc(size);
        n = stream_frame_encode_event(buf, size, id, mask, cookie, path, pl, new_path && *new_path ? new_path : NULL,
                                      npl, NULL);
        g_assert_cmpint(n, >, 0);
        fake_watchd_stream_write(fw, buf, (size_t) n);
}

void fake_watchd_stream_overflow(FakeWatchd *fw, const guint32 *ids, size_t n) {
        size_t size = STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_OVERFLOW_FIXED + 4 * n;
        g_autofree guint8 *buf = g_malloc(size);
        int k = stream_frame_encode_overflow(buf, size, ids, n);

        g_assert_cmpint(k, >, 0);
        fake_watchd_stream_write(fw, buf, (size_t) k);
}

void fake_watchd_stream_removed(FakeWatchd *fw, guint32 id, const char *reason) {
        size_t size = STREAM_FRAME_PREFIX_SIZE + STREAM_FRAME_REMOVED_FIXED + strlen(reason) + 1;
        g_autofree guint8 *buf = g_malloc(size);
        int k = stream_frame_encode_removed(buf, size, id, reason, strlen(reason));

        g_assert_cmpint(k, >, 0);
        fake_watchd_stream_write(fw, buf, (size_t) k);
}

void fake_watchd_stream_close(FakeWatchd *fw) {
        g_mutex_lock(&fw->lock);
        if (fw->stream_fd >= 0)
                close(fw->stream_fd);
        fw->stream_fd = -1;
        g_mutex_unlock(&fw->lock);
}
