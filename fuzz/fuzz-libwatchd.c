/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz-libwatchd - libwatchd's handling of what a watchd sends, driven as a
 * fake watchd would
 *
 * On the session bus any process of the user may own org.example.Inotify
 * (docs/CLIENTS.md): what the library reads is input. The fuzzer starts a
 * private dbus-daemon once and a fake watchd on it (tests/libwatchd/
 * fake-watchd.c, the tests' own), and for each input makes a WatchdClient
 * built from the library's sources, then runs a little program the input
 * spells, the fake saying what the input says:
 *
 *   byte 0      bit 0: the records over the client's stream where it has
 *               one (else as signals); bit 1: the fake says
 *               pair-per-subscription; bit 2: max-queued-bytes of 64 KiB
 *               (else 32 MiB) and max-queued-events 256; bit 3: no
 *               Capabilities at all (a watchd 0.1: no stream, no PERSIST)
 *   then ops, a byte each and their operands:
 *   ADD         a path, flags, and the answer: the fake's next id, 0, the
 *               id of another subscription, an ended one, any u32, another
 *               type, an error
 *   CANCEL      a subscription
 *   EVENTS      1-8 records: ids (a subscription's, 0, the sentinel's, an
 *               ended one, any), masks (renames, ISDIR, PATH_ESCAPED, any),
 *               paths (inside, outside, not canonical, PATH_MAX long, 2,000
 *               and 100,000 components, bytes from the input, escaped or
 *               badly escaped); as frames on the stream or an Events signal
 *   OVERFLOW    ids; REMOVED an id and a reason
 *   SIGNAL      Events, Overflow, WatchRemoved or another member with a
 *               body of any type made from the input's bytes
 *   STREAM      bytes from the input, as they are, on the stream
 *   RESTART     the fake leaves the bus and comes back (subscriptions
 *               added again, their answers what was queued)
 *   HOLD        AddWatch answers held, or released
 *   LIST        ListWatches answered with another type, or with the
 *               subscriptions at other paths
 *   BARRIER     everything sent is handled and emitted
 *
 * Checked on every input, besides ASan/UBSan/LSan and libFuzzer's memory
 * limit: every event emitted has absolute, canonical paths shorter than
 * PATH_MAX and no PATH_ESCAPED bit; nothing is emitted for a subscription
 * after watchd_subscription_cancel() returned (in the client's context);
 * no GLib critical anywhere; at most one warning of each kind per daemon
 * (four kinds, and a stream it could not read); and once closed and
 * unreferenced the client is finalized (no reference leaked by a
 * subscription or an item).
 *
 * Needs dbus-daemon and a writable $TMPDIR.
 */

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <watchd.h>

#include "fake-watchd.h"
#include "path_escape.h"
#include "stream_frame.h"

#include "fuzz-check.h"

#define MAX_SUBS 8
#define MAX_OPS  48
#define ESCAPED  0x00100000u
#define MOVE     (WATCHD_EVENT_MOVED_FROM | WATCHD_EVENT_MOVED_TO)

static struct {
        char *dir;
        char *address;
        FakeWatchd *fake;
        char *deep;      /* 2,000 components */
        char *huge;      /* 100,000 components */
        char *long_path; /* PATH_MAX bytes */
        guint warnings;  /* libwatchd's, this input */
} g;

typedef struct Input {
        const guint8 *p;
        size_t left;
} Input;

static guint8 take_u8(Input *in) {
        guint8 v = 0;

        if (in->left > 0) {
                v = in->p[0];
                in->p++;
                in->left--;
        }
        return v;
}

static guint32 take_u32(Input *in) {
        guint32 v = 0;
        size_t n = MIN(in->left, 4);

        memcpy(&v, in->p, n);
        in->p += n;
        in->left -= n;
        return v;
}

/* Up to max bytes of the input, NUL-terminated, NULs made 'x'. */
static char *take_bytes(Input *in, size_t max) {
        size_t want = take_u8(in) % (max + 1); /* not in MIN(): it would take twice */
        size_t n = MIN(want, in->left);
        char *s = g_malloc(n + 1);

        for (size_t i = 0; i < n; i++)
                s[i] = in->p[i] ? (char) in->p[i] : 'x';
        s[n] = '\0';
        in->p += n;
        in->left -= n;
        return s;
}

typedef struct Sub {
        WatchdSubscription *sub;
        gboolean finalized; /* its qdata is cleared at finalize */
        guint32 id;         /* its last id */
        gboolean cancelled; /* watchd_subscription_cancel() returned */
        gboolean starting;  /* an async start in flight */
} Sub;

typedef struct Run {
        Input in;
        WatchdClient *client;
        char *client_name;
        gboolean want_stream;
        gboolean holding; /* AddWatch answers held: starts are async */
        guint restarts;
        Sub subs[MAX_SUBS];
        guint n_subs;
        guint32 ended; /* an id of a cancelled subscription */
        WatchdSubscription *sentinel;
        gboolean sentinel_finalized;
        guint sentinel_n;
        gboolean sentinel_seen;
} Run;

/* ------------------------------------------------------------------------ */
/* What the client emits */

static gboolean canonical(const char *p) {
        size_t len = strlen(p);

        if (len == 0 || len >= PATH_MAX || p[0] != '/')
                return FALSE;
        if (len == 1)
                return TRUE;
        return p[len - 1] != '/' && !strstr(p, "//") && !strstr(p, "/./") && !strstr(p, "/../") &&
                !g_str_has_suffix(p, "/.") && !g_str_has_suffix(p, "/..");
}

static void on_events(WatchdSubscription *s, GPtrArray *events, gpointer data) {
        Sub *sub = data;

        CHECK(!sub->cancelled);
        for (guint i = 0; i < events->len; i++) {
                WatchdEvent *e = events->pdata[i];
                const char *np = watchd_event_get_new_path(e);

                CHECK(canonical(watchd_event_get_path(e)));
                CHECK(!np || canonical(np));
                CHECK(!(watchd_event_get_mask(e) & ESCAPED));
        }
}

static void on_overflow(WatchdSubscription *s, WatchdOverflowReason reason, gpointer data) {
        Sub *sub = data;

        CHECK(!sub->cancelled);
}

static void on_removed(WatchdSubscription *s, WatchdRemovedReason reason, const char *detail, const GError *error,
                       gpointer data) {
        Sub *sub = data;

        CHECK(!sub->cancelled);
}

static void on_sentinel(WatchdSubscription *s, GPtrArray *events, gpointer data) {
        Run *run = data;
        g_autofree char *want = g_strdup_printf("/sentinel/%u", run->sentinel_n);

        for (guint i = 0; i < events->len; i++)
                if (g_str_equal(watchd_event_get_path(events->pdata[i]), want))
                        run->sentinel_seen = TRUE;
}

static void on_log(const char *domain, GLogLevelFlags level, const char *message, gpointer data) {
        if (level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR)) {
                fprintf(stderr, "%s: %s\n", domain ?: "", message);
                abort();
        }
        if ((level & G_LOG_LEVEL_WARNING) && g_strcmp0(domain, "libwatchd") == 0)
                g.warnings++;
}

/* qdata is cleared at finalize (weak pointers at dispose). */
static void set_true(gpointer p) {
        *(gboolean *) p = TRUE;
}

static void dispatch(void) {
        while (g_main_context_iteration(NULL, FALSE))
                ;
}

/* Everything sent so far was handled and emitted: a GetStats round trip for
 * the signals, a record of the sentinel for the stream (or its end). */
static void barrier(Run *run) {
        g_autoptr(GVariant) stats = NULL;
        gboolean streaming = FALSE;
        gint64 deadline;

        g_object_get(run->client, "use-stream", &streaming, NULL);
        if (streaming && fake_watchd_has_stream(g.fake) && watchd_subscription_is_active(run->sentinel)) {
                g_autofree char *path = g_strdup_printf("/sentinel/%u", ++run->sentinel_n);

                run->sentinel_seen = FALSE;
                fake_watchd_stream_event(g.fake, watchd_subscription_get_id(run->sentinel), WATCHD_EVENT_CREATE, 0,
                                         path, NULL);
                deadline = g_get_monotonic_time() + 2 * G_USEC_PER_SEC;
                while (!run->sentinel_seen && g_get_monotonic_time() < deadline) {
                        g_object_get(run->client, "use-stream", &streaming, NULL);
                        if (!streaming || !watchd_subscription_is_active(run->sentinel))
                                break;
                        if (!g_main_context_iteration(NULL, FALSE))
                                g_usleep(100);
                }
        }
        stats = watchd_client_get_stats_sync(run->client, NULL, NULL);
        dispatch();
}

/* ------------------------------------------------------------------------ */
/* Choices */

static const char *const sub_paths[] = { "/w", "/w/d", "/", "/v", "/w/d/e", "//w/", "/w/a/a/a" };

/* An id: a subscription's, 0, the sentinel's, an ended one, any. */
static guint32 take_id(Run *run, Input *in) {
        guint8 c = take_u8(in);

        switch (c % 6) {
        case 0:
                return run->n_subs ? watchd_subscription_get_id(run->subs[(c >> 3) % run->n_subs].sub) : 2;
        case 1:
                return 0;
        case 2:
                return 1;
        case 3:
                return run->ended;
        case 4:
                return take_u32(in);
        default:
                return run->n_subs ? watchd_subscription_get_id(run->subs[(c >> 3) % run->n_subs].sub) + 1 : 3;
        }
}

static guint32 take_mask(Input *in) {
        static const guint32 masks[] = {
                WATCHD_EVENT_CREATE,
                WATCHD_EVENT_DELETE,
                MOVE,
                MOVE | WATCHD_EVENT_ISDIR,
                WATCHD_EVENT_MOVED_FROM,
                WATCHD_EVENT_MOVED_TO,
                WATCHD_EVENT_MOVE_SELF,
                WATCHD_EVENT_DELETE_SELF,
                WATCHD_EVENT_UNMOUNT,
                WATCHD_EVENT_CREATE | WATCHD_EVENT_ISDIR,
                0,
        };
        guint8 c = take_u8(in);

        if (c % 16 == 15)
                return take_u32(in);
        return masks[(c % 16) % G_N_ELEMENTS(masks)] | ((c & 0x80) ? ESCAPED : 0);
}

/* A path (a new string). */
static char *take_path(Input *in) {
        static const char *const fixed[] = {
                "/w/x",  "/w/d/x", "/w", "/w/d", "/v/y",  "/w/d/e/f", "/etc/passwd", "/wx",        "/w/../x",
                "/w//x", "/w/./x", "",   "w/x",  "/w/x/", "/",        "/sentinel/x", "/w/a/a/a/a",
        };
        guint8 c = take_u8(in);
        guint8 k = c % 24;

        if (k < G_N_ELEMENTS(fixed))
                return g_strdup(fixed[k]);
        switch (k) {
        case 17:
                return g_strdup(g.deep);
        case 18:
                return g_strdup(g.huge);
        case 19:
                return g_strdup(g.long_path);
        case 20: {
                g_autofree char *b = take_bytes(in, 32);

                return g_strconcat((c & 0x20) ? "/w/d/" : "/w/", b, NULL);
        }
        case 21: {
                g_autofree char *b = take_bytes(in, 32);

                return g_strconcat("/", b, NULL);
        }
        case 22:
                return g_strdup("/w/\\x4"); /* a bad escape, if the mask says escaped */
        default:
                return take_bytes(in, 64);
        }
}

/* ------------------------------------------------------------------------ */
/* Ops */

static void on_started(GObject *source, GAsyncResult *result, gpointer data) {
        Sub *sub = data;

        (void) watchd_subscription_start_finish(WATCHD_SUBSCRIPTION(source), result, NULL);
        sub->starting = FALSE;
}

static void op_add(Run *run, Input *in) {
        static const WatchdWatchFlags flag_sets[] = {
                0,
                WATCHD_WATCH_RECURSIVE,
                WATCHD_WATCH_PERSIST,
                WATCHD_WATCH_ONESHOT,
                WATCHD_WATCH_RECURSIVE | WATCHD_WATCH_PERSIST,
        };
        const char *path = sub_paths[take_u8(in) % G_N_ELEMENTS(sub_paths)];
        WatchdWatchFlags flags = flag_sets[take_u8(in) % G_N_ELEMENTS(flag_sets)];
        guint8 reply = take_u8(in);
        Sub *sub;

        if (run->n_subs == MAX_SUBS)
                return;
        switch (reply % 8) {
        case 1:
                fake_watchd_push_add_reply(g.fake, g_variant_new("(u)", 0), NULL);
                break;
        case 2:
                fake_watchd_push_add_reply(g.fake, g_variant_new("(u)", take_id(run, in)), NULL);
                break;
        case 3:
                fake_watchd_push_add_reply(g.fake, g_variant_new("(u)", run->ended), NULL);
                break;
        case 4:
                fake_watchd_push_add_reply(g.fake, g_variant_new("(u)", take_u32(in)), NULL);
                break;
        case 5:
                fake_watchd_push_add_reply(g.fake, g_variant_new("(s)", "1"), NULL);
                break;
        case 6:
                fake_watchd_push_add_reply(g.fake, NULL, "org.freedesktop.DBus.Error.LimitsExceeded");
                break;
        default:
                break; /* the next id */
        }
        sub = &run->subs[run->n_subs++];
        sub->sub = watchd_subscription_new(run->client, path, WATCHD_EVENT_ALL, flags);
        g_object_set_data_full(G_OBJECT(sub->sub), "fuzz-finalized", &sub->finalized, set_true);
        g_signal_connect(sub->sub, "events", G_CALLBACK(on_events), sub);
        g_signal_connect(sub->sub, "overflow", G_CALLBACK(on_overflow), sub);
        g_signal_connect(sub->sub, "removed", G_CALLBACK(on_removed), sub);
        if ((reply & 0x80) || run->holding) {
                /* Async: the answer may be held (HOLD). */
                sub->starting = TRUE;
                watchd_subscription_start(sub->sub, NULL, on_started, sub);
        } else if (!(reply & 0x40))
                (void) watchd_subscription_start_sync(sub->sub, NULL, NULL);
        /* else never started: cancelled or left as it is */
        sub->id = watchd_subscription_get_id(sub->sub);
}

static void op_cancel(Run *run, Input *in) {
        Sub *sub;

        if (run->n_subs == 0)
                return;
        sub = &run->subs[take_u8(in) % run->n_subs];
        if (watchd_subscription_get_id(sub->sub))
                run->ended = watchd_subscription_get_id(sub->sub);
        watchd_subscription_cancel(sub->sub);
        sub->cancelled = TRUE;
}

/* Paths for a signal are UTF-8, in watchd's escaped form if need be. */
static char *wire(const char *path, guint32 *mask) {
        if (!path_needs_escape(path))
                return g_strdup(path);
        *mask |= ESCAPED;
        return path_escape(path);
}

static gboolean on_stream(Run *run) {
        gboolean streaming = FALSE;

        g_object_get(run->client, "use-stream", &streaming, NULL);
        return run->want_stream && streaming && fake_watchd_has_stream(g.fake);
}

static void op_events(Run *run, Input *in) {
        guint n = take_u8(in) % 8 + 1;
        gboolean stream = on_stream(run);
        GVariantBuilder b;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a(uuuss)"));
        for (guint i = 0; i < n; i++) {
                guint32 id = take_id(run, in), mask = take_mask(in), cookie = take_u8(in);
                g_autofree char *path = take_path(in);
                g_autofree char *new_path = (mask & MOVE) == MOVE || (take_u8(in) & 1) ? take_path(in) : g_strdup("");

                if (stream) {
                        /* The encoder refuses what no frame can hold. */
                        if (stream_frame_event_size(strlen(path), strlen(new_path), NULL) <= STREAM_FRAME_MAX)
                                fake_watchd_stream_event(g.fake, id, mask & ~ESCAPED, cookie, path,
                                                         *new_path ? new_path : NULL);
                } else if (mask & ESCAPED)
                        /* Taken as it is: an escape, good or bad, if it is UTF-8. */
                        g_variant_builder_add(&b, "(uuuss)", id, mask, cookie,
                                              g_utf8_validate(path, -1, NULL) ? path : "/w/bad",
                                              g_utf8_validate(new_path, -1, NULL) ? new_path : "");
                else {
                        g_autofree char *p = wire(path, &mask), *np = wire(new_path, &mask);

                        g_variant_builder_add(&b, "(uuuss)", id, mask, cookie, p, np);
                }
        }
        if (stream)
                g_variant_builder_clear(&b);
        else
                fake_watchd_signal(g.fake, run->client_name, "Events", g_variant_new("(a(uuuss))", &b));
}

static void op_overflow(Run *run, Input *in) {
        guint n = take_u8(in) % 4 + 1;
        guint32 ids[4];

        for (guint i = 0; i < n; i++)
                ids[i] = take_id(run, in);
        if (on_stream(run)) {
                guint32 sorted[4];
                guint k = 0;

                /* Ascending without repeats, as the frame must be. */
                for (guint32 v = 0, i = 0; i < n; i++)
                        if (i == 0 || ids[i] > v)
                                sorted[k++] = v = ids[i];
                fake_watchd_stream_overflow(g.fake, sorted, k);
        } else {
                GVariantBuilder b;

                g_variant_builder_init(&b, G_VARIANT_TYPE("au"));
                for (guint i = 0; i < n; i++)
                        g_variant_builder_add(&b, "u", ids[i]);
                fake_watchd_signal(g.fake, run->client_name, "Overflow", g_variant_new("(au)", &b));
        }
}

static void op_removed(Run *run, Input *in) {
        static const char *const reasons[] = { "deleted", "unmounted", "oneshot", "", "other" };
        guint32 id = take_id(run, in);
        const char *reason = reasons[take_u8(in) % G_N_ELEMENTS(reasons)];

        if (on_stream(run))
                fake_watchd_stream_removed(g.fake, id, reason);
        else
                fake_watchd_signal(g.fake, run->client_name, "WatchRemoved", g_variant_new("(us)", id, reason));
}

static void op_signal(Run *run, Input *in) {
        static const char *const members[] = { "Events", "Overflow", "WatchRemoved", "DurableEvents", "Other" };
        static const char *const types[] = {
                /* Types a message can carry whatever the bytes ("v" could hold "()", which it cannot). */
                "(a(uuuss))", "(a(uuus))", "(au)", "(us)", "(u)", "(uu)", "()", "(s)", "(a(usuu))", "(ay)",
        };
        const char *member = members[take_u8(in) % G_N_ELEMENTS(members)];
        const GVariantType *type = G_VARIANT_TYPE(types[take_u8(in) % G_N_ELEMENTS(types)]);
        g_autofree char *bytes = take_bytes(in, 255);
        g_autoptr(GVariant)
                raw = g_variant_ref_sink(g_variant_new_from_data(type, bytes, strlen(bytes), FALSE, NULL, NULL));
        /* Normal form: what a message can carry (bad strings read as ""). */
        g_autoptr(GVariant) body = g_variant_get_normal_form(raw);

        fake_watchd_signal(g.fake, run->client_name, member, body);
}

static void op_stream_bytes(Run *run, Input *in) {
        g_autofree char *bytes = take_bytes(in, 255);

        if (on_stream(run))
                fake_watchd_stream_write(g.fake, bytes, strlen(bytes));
}

static const char *const caps_all[] = { "persistent", "report-appearance", "stream", NULL };
static const char *const caps_pair[] = { "persistent", "report-appearance", "stream", "pair-per-subscription", NULL };

static void op_restart(Run *run, guint8 setup) {
        if (run->restarts >= 2)
                return;
        run->restarts++;
        fake_watchd_stop(g.fake);
        g.fake = fake_watchd_start(g.address, (setup & 8) ? NULL : (setup & 2) ? caps_pair : caps_all);
        run->holding = FALSE;
}

static void op_list(Run *run, Input *in) {
        guint8 c = take_u8(in);
        GVariantBuilder b;

        if (c % 3 == 0) {
                fake_watchd_set_list_reply(g.fake, NULL);
                return;
        }
        if (c % 3 == 1) {
                fake_watchd_set_list_reply(g.fake, g_variant_new("(s)", "no"));
                return;
        }
        g_variant_builder_init(&b, G_VARIANT_TYPE("a(usuu)"));
        for (guint i = 0; i < run->n_subs; i++) {
                g_autofree char *p = take_path(in);
                guint32 flags = 0;
                g_autofree char *w = g_utf8_validate(p, -1, NULL) ? g_strdup(p) : (flags = ESCAPED, path_escape(p));

                g_variant_builder_add(&b, "(usuu)", watchd_subscription_get_id(run->subs[i].sub), w, 0u, flags);
        }
        fake_watchd_set_list_reply(g.fake, g_variant_new("(a(usuu))", &b));
}

/* ------------------------------------------------------------------------ */

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
                fprintf(stderr, "fuzz-libwatchd: dbus-daemon did not start (is it installed?)\n");
                abort();
        }
        fclose(f);
        line[strcspn(line, "\n")] = '\0';
        g.address = g_strdup(line);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        GString *s;

        g_log_set_default_handler(on_log, NULL);
        g.dir = g_dir_make_tmp("fuzz-libwatchd-XXXXXX", NULL);
        CHECK(g.dir);
        start_bus();
        g.fake = fake_watchd_start(g.address, caps_all);
        s = g_string_new("/w");
        for (int i = 0; i < 2000; i++)
                g_string_append(s, "/a");
        g.deep = g_string_free(s, FALSE);
        s = g_string_new("/w");
        for (int i = 0; i < 100000; i++)
                g_string_append(s, "/a");
        g.huge = g_string_free(s, FALSE);
        g.long_path = g_strnfill(PATH_MAX, 'l');
        g.long_path[0] = '/';
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Run run = { .in = { data, size } };
        Input *in = &run.in;
        guint8 setup = take_u8(in);
        WatchdClient *client;
        g_autoptr(GError) error = NULL;
        gint64 deadline, t0;
        guint ops = 0;

        g.warnings = 0;
        t0 = g_get_monotonic_time(); /* for the report of a client that does not go */
        fake_watchd_set_caps(g.fake, (setup & 8) ? NULL : (setup & 2) ? caps_pair : caps_all);
        run.want_stream = setup & 1;
        client = g_initable_new(WATCHD_TYPE_CLIENT, NULL, &error, "address", g.address, "use-stream", run.want_stream,
                                "call-timeout", 5000, "max-queued-bytes", (setup & 4) ? 64 * 1024 : 32 * 1024 * 1024,
                                "max-queued-events", (setup & 4) ? 256 : 65536, NULL);
        CHECK(client);
        run.client = client;
        g_object_add_weak_pointer(G_OBJECT(client), (gpointer *) &run.client);
        run.client_name = g_strdup(g_dbus_connection_get_unique_name(watchd_client_get_connection(client)));
        run.sentinel = watchd_subscription_new(client, "/sentinel", WATCHD_EVENT_ALL, 0);
        g_object_set_data_full(G_OBJECT(run.sentinel), "fuzz-finalized", &run.sentinel_finalized, set_true);
        g_signal_connect(run.sentinel, "events", G_CALLBACK(on_sentinel), &run);
        (void) watchd_subscription_start_sync(run.sentinel, NULL, NULL);

        while (in->left > 0 && ops++ < MAX_OPS) {
                switch (take_u8(in) % 13) {
                case 0:
                case 1:
                        op_add(&run, in);
                        break;
                case 2:
                        op_cancel(&run, in);
                        break;
                case 3:
                case 4:
                        op_events(&run, in);
                        break;
                case 5:
                        op_overflow(&run, in);
                        break;
                case 6:
                        op_removed(&run, in);
                        break;
                case 7:
                        op_signal(&run, in);
                        break;
                case 8:
                        op_stream_bytes(&run, in);
                        break;
                case 9:
                        op_restart(&run, setup);
                        break;
                case 10:
                        run.holding = !(take_u8(in) & 1);
                        fake_watchd_hold_adds(g.fake, run.holding);
                        break;
                case 11:
                        op_list(&run, in);
                        break;
                default:
                        barrier(&run);
                        break;
                }
        }
        fake_watchd_hold_adds(g.fake, FALSE);
        barrier(&run);
        /* One warning of each kind per daemon (four kinds, and a stream it
         * could not read), however much it got wrong. */
        CHECK(g.warnings <= 5 * (run.restarts + 1));

        for (guint i = 0; i < run.n_subs; i++) {
                watchd_subscription_cancel(run.subs[i].sub);
                run.subs[i].cancelled = TRUE;
        }
        watchd_subscription_cancel(run.sentinel);
        watchd_client_close(client);
        for (guint i = 0; i < run.n_subs; i++)
                g_object_unref(run.subs[i].sub);
        g_object_unref(run.sentinel);
        g_object_unref(client);
        /* What still holds it (a start's task, an item) goes as the context runs. */
        deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        while (run.client && g_get_monotonic_time() < deadline)
                if (!g_main_context_iteration(NULL, FALSE))
                        g_usleep(100);
        if (run.client) {
                /* Who holds it: a subscription not finalized (its qdata not
                 * cleared), or something else. */
                fprintf(stderr, "fuzz-libwatchd: the client still has %u references after %" G_GINT64_FORMAT " ms\n",
                        g_atomic_int_get(&G_OBJECT(run.client)->ref_count), (g_get_monotonic_time() - t0) / 1000);
                for (guint i = 0; i < run.n_subs; i++)
                        if (!run.subs[i].finalized)
                                fprintf(stderr, "  subscription %u not finalized (%u references)%s\n", i,
                                        g_atomic_int_get(&G_OBJECT(run.subs[i].sub)->ref_count),
                                        run.subs[i].starting ? ", its start not finished" : "");
                if (!run.sentinel_finalized)
                        fprintf(stderr, "  the sentinel not finalized (%u references)\n",
                                g_atomic_int_get(&G_OBJECT(run.sentinel)->ref_count));
        }
        CHECK(!run.client);
        fake_watchd_reset(g.fake);
        g_free(run.client_name);
        return 0;
}
