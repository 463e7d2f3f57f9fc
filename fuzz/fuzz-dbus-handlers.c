/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz-dbus-handlers - the D-Bus method handlers with arbitrary arguments
 *
 * The handlers are driven for real, not through a stub: the fuzzer starts a
 * private dbus-daemon once, builds watchd's Manager in process (syscall
 * backend, on a scratch tree), its loop glue (loop_new()) and publishes it
 * with dbus_iface_new() and dbus_iface_start(), exactly as watchd.c does (no
 * state directory: no durable subscriptions); two client connections on the same sd-event
 * loop then call the methods with argument values (and signatures) taken
 * from the input, and make the files under the tree change so that events,
 * WatchRemoved and Overflow flow too. Each input is a little program:
 *
 *   byte 0      which client (bit 0) and the op (the rest), then operands:
 *   AddWatch    path (one of the tree's objects or odd paths, or bytes from
 *               the input, absolute or not), u32 mask, u32 flags
 *   AddWatchFd  one of a set of descriptors (dir, file, O_PATH, write-only,
 *               pipe, socket, /dev/null, FIFO, eventfd), u32 mask, u32 flags
 *   RemoveWatch an id this client got, another client's, or any u32
 *   ListWatches, GetStats
 *   any method with 0-3 arguments of arbitrary types (wrong signatures)
 *   a change under the tree (create, write, rename, delete, rmdir, names
 *               that are not UTF-8, ...)
 *   disconnect the client and connect it again
 *
 * Checked on every input, besides ASan/UBSan/LSan: every call is answered
 * (no hang), with success or one of the API's errors (watchd(8), "D-BUS INTERFACE"), never
 * a generic one; ids are never handed out twice; a client receives signals
 * only about its own subscriptions; a path marked escaped (in a record or
 * a ListWatches entry) unescapes and one not marked needed no escape;
 * ListWatches lists nothing the client does not own; and once both clients are gone the daemon is back to zero
 * clients, subscriptions and kernel watches (nothing leaked).
 *
 * Needs dbus-daemon (dbus-daemon package) and a writable $TMPDIR.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "config.h"
#include "dbus_iface.h"
#include "loop.h"
#include "log.h"
#include "manager.h"
#include "path_escape.h"

#include "fuzz-check.h"

#define N_CLIENTS         2
#define CALL_TIMEOUT_USEC (10 * 1000000ull)

typedef struct FuzzClient {
        sd_bus *bus;
        GHashTable *ids;     /* ids this connection was given and has not removed: set of uint32 */
        GHashTable *all_ids; /* every id this connection was ever given */
} FuzzClient;

static struct {
        char *dir; /* the scratch tree */
        char *address;
        pid_t bus_pid;
        sd_event *event;
        Manager *manager;
        Loop *loop;
        DbusIface *iface;
        Durable *durable;
        sd_bus *daemon_bus;
        FuzzClient clients[N_CLIENTS];
        GHashTable *issued; /* every id ever returned by AddWatch*, across clients */
        int fds[9];
} g;

static const char *const allowed_errors[] = {
        SD_BUS_ERROR_INVALID_ARGS,    SD_BUS_ERROR_ACCESS_DENIED, SD_BUS_ERROR_FILE_NOT_FOUND,
        SD_BUS_ERROR_LIMITS_EXCEEDED, WATCHD_ERROR_NO_SUCH_WATCH, NULL,
};

typedef struct Input {
        const uint8_t *p;
        size_t left;
} Input;

static uint32_t take_u32(Input *in) {
        uint32_t v = 0;
        size_t n = in->left < 4 ? in->left : 4;

        memcpy(&v, in->p, n);
        in->p += n;
        in->left -= n;
        return v;
}

static uint8_t take_u8(Input *in) {
        uint8_t v = 0;

        if (in->left > 0) {
                v = in->p[0];
                in->p++;
                in->left--;
        }
        return v;
}

static char *tree(const char *rel) {
        char *p;

        CHECK(asprintf(&p, "%s/%s", g.dir, rel) >= 0);
        return p;
}

/* The tree each input starts from: what a previous input removed comes back. */
static void tree_reset(void) {
        static const char *const dirs[] = { "d", "d/sub", "d/sub/deep", "e" };
        static const char *const files[] = { "d/f", "e/g", "file" };
        char *p;

        for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
                p = tree(dirs[i]);
                (void) mkdir(p, 0755);
                free(p);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
                int fd;

                p = tree(files[i]);
                fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (fd >= 0)
                        close(fd);
                free(p);
        }
}

static void start_bus(void) {
        char conf_path[PATH_MAX], line[512];
        int pipefd[2];
        FILE *f;
        pid_t pid;

        snprintf(conf_path, sizeof(conf_path), "%s/bus.conf", g.dir);
        f = fopen(conf_path, "we");
        CHECK(f);
        fprintf(f,
                "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
                " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
                "<busconfig><type>session</type><listen>unix:path=%s/bus</listen><auth>EXTERNAL</auth>\n"
                "<policy context=\"default\"><allow user=\"*\"/><allow own=\"*\"/>"
                "<allow send_destination=\"*\"/><allow receive_sender=\"*\"/></policy></busconfig>\n",
                g.dir);
        fclose(f);

        CHECK(pipe2(pipefd, O_CLOEXEC) == 0);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                /* The bus ends with the fuzzer, however it ends. */
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                dup2(pipefd[1], STDOUT_FILENO);
                execlp("dbus-daemon", "dbus-daemon", "--nofork", "--print-address", "--config-file", conf_path,
                       (char *) NULL);
                _exit(127);
        }
        close(pipefd[1]);
        f = fdopen(pipefd[0], "re");
        CHECK(f);
        if (!fgets(line, sizeof(line), f)) {
                fprintf(stderr, "fuzz-dbus-handlers: dbus-daemon did not start (is it installed?)\n");
                abort();
        }
        fclose(f);
        line[strcspn(line, "\n")] = '\0';
        g.address = strdup(line);
        g.bus_pid = pid;
}

/* A connection to the private bus; attach: to the loop (the daemon's is attached by dbus_iface_start()). */
static sd_bus *connect_bus(bool attach) {
        sd_bus *bus = NULL;

        CHECK(sd_bus_new(&bus) >= 0);
        CHECK(sd_bus_set_address(bus, g.address) >= 0);
        CHECK(sd_bus_set_bus_client(bus, true) >= 0);
        CHECK(sd_bus_negotiate_fds(bus, true) >= 0);
        CHECK(sd_bus_start(bus) >= 0);
        if (attach)
                CHECK(sd_bus_attach_event(bus, g.event, SD_EVENT_PRIORITY_NORMAL) >= 0);
        return bus;
}

/* A record or entry marked escaped unescapes, and holds a path that needed
 * it; one not marked needed none (shared/path_escape.h). */
static void check_escaped(bool escaped, const char *path, const char *new_path) {
        char *a = NULL, *b = NULL;

        if (!escaped) {
                CHECK(!path_needs_escape(path) && !path_needs_escape(new_path));
                return;
        }
        CHECK(path_unescape(path, &a) == 0);
        CHECK(path_unescape(new_path, &b) == 0);
        CHECK(a[0] == '/');
        CHECK(path_needs_escape(a) || path_needs_escape(b));
        free(a);
        free(b);
}

/* Signals reach a client only about its own subscriptions. */
static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        FuzzClient *c = userdata;
        const char *member = sd_bus_message_get_member(m);
        uint8_t type = 0;
        uint32_t id;
        int r;

        if (sd_bus_message_get_type(m, &type) < 0 || type != SD_BUS_MESSAGE_SIGNAL ||
            strcmp(sd_bus_message_get_interface(m) ?: "", WATCHD_INTERFACE) != 0)
                return 0;

        if (strcmp(member, "Events") == 0) {
                CHECK(sd_bus_message_enter_container(m, 'a', "(uuuss)") >= 0);
                while ((r = sd_bus_message_enter_container(m, 'r', "uuuss")) > 0) {
                        const char *path, *new_path;
                        uint32_t mask, cookie;

                        CHECK(sd_bus_message_read(m, "uuuss", &id, &mask, &cookie, &path, &new_path) >= 0);
                        CHECK(g_hash_table_contains(c->all_ids, GUINT_TO_POINTER(id)));
                        CHECK(path[0] == '/');
                        check_escaped(mask & WATCHD_PATH_ESCAPED, path, new_path);
                        CHECK(sd_bus_message_exit_container(m) >= 0);
                }
                CHECK(r >= 0);
        } else if (strcmp(member, "Overflow") == 0) {
                const uint32_t *ids;
                size_t sz;

                CHECK(sd_bus_message_read_array(m, 'u', (const void **) &ids, &sz) >= 0);
                for (size_t i = 0; i < sz / sizeof(uint32_t); i++)
                        CHECK(g_hash_table_contains(c->all_ids, GUINT_TO_POINTER(ids[i])));
        } else if (strcmp(member, "WatchRemoved") == 0) {
                const char *reason;

                CHECK(sd_bus_message_read(m, "us", &id, &reason) >= 0);
                CHECK(g_hash_table_contains(c->all_ids, GUINT_TO_POINTER(id)));
                CHECK(!strcmp(reason, "deleted") || !strcmp(reason, "unmounted") || !strcmp(reason, "oneshot"));
                g_hash_table_remove(c->ids, GUINT_TO_POINTER(id));
        }
        return 0;
}

static void client_connect(FuzzClient *c) {
        c->bus = connect_bus(true);
        CHECK(sd_bus_add_filter(c->bus, NULL, on_signal, c) >= 0);
        c->ids = g_hash_table_new(g_direct_hash, g_direct_equal);
        c->all_ids = g_hash_table_new(g_direct_hash, g_direct_equal);
}

static void client_disconnect(FuzzClient *c) {
        sd_bus_flush_close_unref(c->bus);
        c->bus = NULL;
        g_hash_table_destroy(c->ids);
        g_hash_table_destroy(c->all_ids);
}

typedef struct Call {
        bool done;
        sd_bus_message *reply;
} Call;

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Call *call = userdata;

        call->done = true;
        call->reply = sd_bus_message_ref(m);
        return 0;
}

/* Sends msg on c and runs the loop (daemon and clients) until the reply. */
static sd_bus_message *call(FuzzClient *c, sd_bus_message *msg) {
        Call st = {};
        sd_bus_slot *slot = NULL;
        uint64_t deadline;

        CHECK(sd_bus_call_async(c->bus, &slot, msg, on_reply, &st, CALL_TIMEOUT_USEC) >= 0);
        CHECK(sd_event_now(g.event, CLOCK_MONOTONIC, &deadline) >= 0);
        deadline += CALL_TIMEOUT_USEC;
        while (!st.done) {
                uint64_t now;

                CHECK(sd_event_run(g.event, 100000) >= 0);
                CHECK(sd_event_now(g.event, CLOCK_MONOTONIC, &now) >= 0);
                if (now > deadline) {
                        fprintf(stderr, "fuzz-dbus-handlers: no reply to %s\n", sd_bus_message_get_member(msg));
                        abort();
                }
        }
        sd_bus_slot_unref(slot);

        if (sd_bus_message_is_method_error(st.reply, NULL)) {
                const sd_bus_error *e = sd_bus_message_get_error(st.reply);
                bool ok = false;

                for (size_t i = 0; allowed_errors[i]; i++)
                        ok = ok || strcmp(e->name, allowed_errors[i]) == 0;
                if (!ok) {
                        fprintf(stderr, "fuzz-dbus-handlers: %s answered %s: %s\n", sd_bus_message_get_member(msg),
                                e->name, e->message ?: "");
                        abort();
                }
                /* A human reads these: never empty. */
                CHECK(e->message && e->message[0]);
        }
        return st.reply;
}

static sd_bus_message *method(FuzzClient *c, const char *member) {
        sd_bus_message *m = NULL;

        CHECK(sd_bus_message_new_method_call(c->bus, &m, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE,
                                             member) >= 0);
        return m;
}

static void got_id(FuzzClient *c, sd_bus_message *reply) {
        uint32_t id;

        if (sd_bus_message_is_method_error(reply, NULL))
                return;
        CHECK(sd_bus_message_read(reply, "u", &id) >= 0);
        /* Never handed out twice while the daemon runs. */
        CHECK(!g_hash_table_contains(g.issued, GUINT_TO_POINTER(id)));
        g_hash_table_add(g.issued, GUINT_TO_POINTER(id));
        g_hash_table_add(c->ids, GUINT_TO_POINTER(id));
        g_hash_table_add(c->all_ids, GUINT_TO_POINTER(id));
}

static char *pick_path(Input *in) {
        static const char *const rel[] = { "",     "d",    "d/f",  "d/sub", "d/sub/deep", "e",       "e/g",   "file",
                                           "fifo", "link", "loop", "none",  "d/../e",     "d//sub/", "d/f/x", "sock" };
        uint8_t k = take_u8(in);
        char *p;

        switch (k % 8) {
        case 0 ... 3:
                return tree(rel[(k >> 3) % G_N_ELEMENTS(rel)]);
        case 4: {
                static const char *const odd[] = {
                        "/", "relative", "", "/proc/self/fd/0", "/dev/null", "/nonexistent", "/proc/self/root/tmp", "."
                };
                return strdup(odd[(k >> 3) % G_N_ELEMENTS(odd)]);
        }
        case 5:
                /* Longer than PATH_MAX, or a component longer than NAME_MAX. */
                p = malloc(PATH_MAX + 64);
                CHECK(p);
                p[0] = '/';
                memset(p + 1, 'a', (k & 8) ? PATH_MAX + 32 : 300);
                p[(k & 8) ? PATH_MAX + 33 : 301] = '\0';
                return p;
        default: {
                /* Bytes of the input, under the tree or as they are. */
                uint8_t n = take_u8(in);
                char *s;

                if (n > in->left)
                        n = (uint8_t) in->left;
                s = strndup((const char *) in->p, n);
                in->p += n;
                in->left -= n;
                CHECK(s);
                if (k & 8) {
                        p = tree(s);
                        free(s);
                        return p;
                }
                return s;
        }
        }
}

static void op_add_watch(FuzzClient *c, Input *in) {
        char *path = pick_path(in);
        uint32_t mask = take_u32(in), flags = take_u32(in);
        sd_bus_message *m = method(c, "AddWatch"), *reply;

        /* Bytes sd-bus would refuse to send go escaped, as a client must send them. */
        if (path_needs_escape(path)) {
                char *e = path_escape(path);

                CHECK(e);
                free(path);
                path = e;
                flags |= WATCHD_PATH_ESCAPED;
        }
        if (sd_bus_message_append(m, "suu", path, mask, flags) >= 0) {
                reply = call(c, m);
                got_id(c, reply);
                sd_bus_message_unref(reply);
        }
        sd_bus_message_unref(m);
        free(path);
}

static void op_add_watch_fd(FuzzClient *c, Input *in) {
        int fd = g.fds[take_u8(in) % G_N_ELEMENTS(g.fds)];
        uint32_t mask = take_u32(in), flags = take_u32(in);
        sd_bus_message *m = method(c, "AddWatchFd"), *reply;

        if (fd < 0) {
                sd_bus_message_unref(m);
                return;
        }
        CHECK(sd_bus_message_append(m, "huu", fd, mask, flags) >= 0);
        reply = call(c, m);
        got_id(c, reply);
        sd_bus_message_unref(reply);
        sd_bus_message_unref(m);
}

static uint32_t any_id(GHashTable *ids, uint8_t k) {
        GHashTableIter i;
        gpointer key;
        unsigned n = g_hash_table_size(ids);

        if (n == 0)
                return k;
        k %= n;
        g_hash_table_iter_init(&i, ids);
        while (g_hash_table_iter_next(&i, &key, NULL))
                if (k-- == 0)
                        break;
        return GPOINTER_TO_UINT(key);
}

static void op_remove_watch(FuzzClient *c, FuzzClient *other, Input *in) {
        uint8_t k = take_u8(in);
        uint32_t id;
        sd_bus_message *m, *reply;

        switch (k % 4) {
        case 0:
        case 1:
                id = any_id(c->ids, k >> 2);
                break;
        case 2:
                id = any_id(other->ids, k >> 2); /* not ours: must be NoSuchWatch */
                break;
        default:
                id = take_u32(in);
        }
        m = method(c, "RemoveWatch");
        CHECK(sd_bus_message_append(m, "u", id) >= 0);
        reply = call(c, m);
        if (!sd_bus_message_is_method_error(reply, NULL)) {
                /* Only the owner may remove: the id was ours (or was already removed by the daemon). */
                CHECK(g_hash_table_contains(c->all_ids, GUINT_TO_POINTER(id)));
                g_hash_table_remove(c->ids, GUINT_TO_POINTER(id));
        } else if (g_hash_table_contains(other->all_ids, GUINT_TO_POINTER(id)))
                CHECK(sd_bus_message_is_method_error(reply, WATCHD_ERROR_NO_SUCH_WATCH));
        sd_bus_message_unref(reply);
        sd_bus_message_unref(m);
}

static void op_list(FuzzClient *c) {
        sd_bus_message *m = method(c, "ListWatches"), *reply;
        const char *path;
        uint32_t id, mask, flags;
        int r;

        reply = call(c, m);
        CHECK(!sd_bus_message_is_method_error(reply, NULL));
        CHECK(sd_bus_message_enter_container(reply, 'a', "(usuu)") >= 0);
        while ((r = sd_bus_message_read(reply, "(usuu)", &id, &path, &mask, &flags)) > 0) {
                /* Ours, and not one we removed. */
                CHECK(g_hash_table_contains(c->all_ids, GUINT_TO_POINTER(id)));
                CHECK(path[0] == '/');
                CHECK(mask != 0 && (mask & ~0x7ffu) == 0);
                /* What was asked (NO_POLL included), how the path is written, whether it is polled. */
                CHECK((flags & ~(WATCHD_FLAGS_VALID | WATCHD_PATH_ESCAPED | WATCHD_FLAG_REMOTE)) == 0);
                check_escaped(flags & WATCHD_PATH_ESCAPED, path, "");
        }
        CHECK(r >= 0);
        sd_bus_message_unref(reply);
        sd_bus_message_unref(m);
}

static void op_stats(FuzzClient *c) {
        sd_bus_message *m = method(c, "GetStats"), *reply;

        reply = call(c, m);
        CHECK(!sd_bus_message_is_method_error(reply, NULL));
        sd_bus_message_unref(reply);
        sd_bus_message_unref(m);
}

/* Any method, any of a few argument types, 0-3 of them. */
static void op_wrong_signature(FuzzClient *c, Input *in) {
        static const char *const members[] = { "AddWatch", "AddWatchFd", "RemoveWatch", "ListWatches", "GetStats" };
        uint8_t k = take_u8(in), n = take_u8(in) % 4;
        sd_bus_message *m = method(c, members[k % G_N_ELEMENTS(members)]), *reply;

        for (uint8_t i = 0; i < n; i++) {
                uint8_t t = take_u8(in);
                uint32_t v = take_u32(in);
                int r;

                switch (t % 7) {
                case 0:
                        r = sd_bus_message_append(m, "u", v);
                        break;
                case 1:
                        r = sd_bus_message_append(m, "s", (t & 8) ? "/tmp" : "");
                        break;
                case 2:
                        r = sd_bus_message_append(m, "i", (int32_t) v);
                        break;
                case 3:
                        r = sd_bus_message_append(
                                m, "h", g.fds[v % G_N_ELEMENTS(g.fds)] >= 0 ? g.fds[v % G_N_ELEMENTS(g.fds)] : 0);
                        break;
                case 4:
                        r = sd_bus_message_append(m, "b", v & 1);
                        break;
                case 5:
                        r = sd_bus_message_append(m, "as", 2, "a", "b");
                        break;
                default:
                        r = sd_bus_message_append(m, "t", (uint64_t) v << 32 | v);
                        break;
                }
                CHECK(r >= 0);
        }
        reply = call(c, m);
        if (!sd_bus_message_is_method_error(reply, NULL) && strcmp(sd_bus_message_get_member(m), "AddWatch") == 0)
                got_id(c, reply);
        else if (!sd_bus_message_is_method_error(reply, NULL) && strcmp(sd_bus_message_get_member(m), "AddWatchFd") == 0)
                got_id(c, reply);
        sd_bus_message_unref(reply);
        sd_bus_message_unref(m);
}

static void op_touch_tree(Input *in) {
        uint8_t k = take_u8(in);
        char *a = NULL, *b = NULL;
        int fd;

        switch (k % 12) {
        case 0:
                a = tree("d/f");
                fd = open(a, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                if (fd >= 0) {
                        (void) !write(fd, "x", 1);
                        close(fd);
                }
                break;
        case 1:
                a = tree("d/f"), b = tree("d/moved");
                (void) rename(a, b);
                break;
        case 2:
                a = tree("d/moved"), b = tree("e/moved");
                (void) rename(a, b);
                break;
        case 3:
                a = tree("d/f");
                (void) unlink(a);
                break;
        case 4:
                a = tree("d/sub/deep");
                (void) rmdir(a);
                break;
        case 5:
                a = tree("e/g"), b = tree("e/moved");
                (void) unlink(a);
                (void) unlink(b);
                free(a);
                a = tree("e");
                (void) rmdir(a);
                break;
        case 6:
                tree_reset();
                break;
        case 7:
                a = tree("d/sub"), b = tree("d/sub2");
                (void) rename(a, b);
                break;
        case 8:
                a = tree("file");
                (void) chmod(a, (k & 16) ? 0600 : 0644);
                break;
        case 10:
                /* Names that are not UTF-8, or that sd-bus refuses. */
                a = tree((k & 16) ? "d/x\xff" : "d/\xef\xbf\xbe");
                fd = open(a, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (fd >= 0)
                        close(fd);
                if (k & 32)
                        (void) unlink(a);
                break;
        case 11:
                a = tree("d/sub"), b = tree("d/s\xff");
                if (k & 16)
                        (void) rename(a, b);
                else
                        (void) rename(b, a);
                break;
        default:
                /* A burst: enough to overflow a small per-client backlog. */
                for (int i = 0; i < 64; i++) {
                        char name[32];

                        snprintf(name, sizeof(name), "d/burst%d", i % 8);
                        a = tree(name);
                        fd = open(a, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                        if (fd >= 0)
                                close(fd);
                        (void) unlink(a);
                        free(a);
                }
                a = NULL;
        }
        free(a);
        free(b);
        /* Let the daemon read and deliver what happened. */
        for (int i = 0; i < 8 && sd_event_run(g.event, 0) > 0; i++)
                ;
}

static void await_daemon_idle(void) {
        uint64_t deadline, now;
        ManagerStats st;

        CHECK(sd_event_now(g.event, CLOCK_MONOTONIC, &deadline) >= 0);
        deadline += CALL_TIMEOUT_USEC;
        /* The daemon learns of the disconnections from the bus (NameOwnerChanged). */
        for (;;) {
                manager_get_stats(g.manager, &st);
                if (st.clients == 0 && st.subscriptions == 0 && st.kernel_watches == 0)
                        break;
                CHECK(sd_event_run(g.event, 10000) >= 0);
                CHECK(sd_event_now(g.event, CLOCK_MONOTONIC, &now) >= 0);
                if (now > deadline) {
                        fprintf(stderr,
                                "fuzz-dbus-handlers: after every client left: %u clients, %u subscriptions, "
                                "%u kernel watches\n",
                                st.clients, st.subscriptions, st.kernel_watches);
                        abort();
                }
        }
}

static void open_fds(void) {
        int p[2], s[2];
        char *a;

        a = tree("d");
        g.fds[0] = open(a, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g.fds[1] = open(a, O_PATH | O_CLOEXEC);
        free(a);
        a = tree("file");
        g.fds[2] = open(a, O_RDONLY | O_CLOEXEC);
        g.fds[3] = open(a, O_WRONLY | O_CLOEXEC);
        free(a);
        CHECK(pipe2(p, O_CLOEXEC) == 0);
        g.fds[4] = p[0];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) == 0);
        g.fds[5] = s[0];
        g.fds[6] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        a = tree("fifo");
        g.fds[7] = open(a, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        free(a);
        g.fds[8] = eventfd(0, EFD_CLOEXEC);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        Config config;
        char *a, *b;

        log_set_max_level(LOG_CRIT);
        g.dir = g_dir_make_tmp("fuzz-dbus-XXXXXX", NULL);
        CHECK(g.dir);
        tree_reset();
        a = tree("fifo");
        CHECK(mkfifo(a, 0644) == 0);
        free(a);
        a = tree("link"), b = tree("d");
        CHECK(symlink(b, a) == 0);
        free(a), free(b);
        a = tree("loop");
        CHECK(symlink(a, a) == 0);
        free(a);
        open_fds();

        start_bus();
        CHECK(sd_event_new(&g.event) >= 0);

        /* Small limits, so that inputs reach them. */
        CHECK(config_init(&config) == 0);
        config.backend = BACKEND_SYSCALL;
        config.max_watches_per_client = 6;
        config.max_watches_per_user = 10;
        config.max_pending_events_per_client = 16;
        config.batch_max_events = 4;
        config.move_pair_timeout_ms = 1;
        CHECK(manager_new(&config, &g.manager) >= 0);
        config_done(&config);
        CHECK(manager_start(g.manager) >= 0);
        CHECK(loop_new(g.event, g.manager, &g.loop) >= 0);
        g.daemon_bus = connect_bus(false);
        CHECK(dbus_iface_new(g.manager, g.daemon_bus, g.event, &g.iface) >= 0);
        CHECK(durable_new(g.manager, NULL, &g.durable) >= 0);
        CHECK(dbus_iface_start(g.iface, g.durable) >= 0);

        g.issued = g_hash_table_new(g_direct_hash, g_direct_equal);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Input in = { data, size };
        unsigned ops = 0;

        tree_reset();
        for (int i = 0; i < N_CLIENTS; i++)
                client_connect(&g.clients[i]);

        /* A bounded program: each op costs a bus round trip. */
        while (in.left > 0 && ops++ < 64) {
                uint8_t op = take_u8(&in);
                FuzzClient *c = &g.clients[op & 1], *other = &g.clients[!(op & 1)];

                switch ((op >> 1) % 9) {
                case 0:
                        op_add_watch(c, &in);
                        break;
                case 1:
                        op_add_watch_fd(c, &in);
                        break;
                case 2:
                        op_remove_watch(c, other, &in);
                        break;
                case 3:
                        op_list(c);
                        break;
                case 4:
                        op_stats(c);
                        break;
                case 5:
                        op_wrong_signature(c, &in);
                        break;
                case 6:
                case 7:
                        op_touch_tree(&in);
                        break;
                default:
                        client_disconnect(c);
                        client_connect(c);
                }
        }

        for (int i = 0; i < N_CLIENTS; i++)
                client_disconnect(&g.clients[i]);
        await_daemon_idle();
        return 0;
}
