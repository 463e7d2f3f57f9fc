/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-config - watchd.conf: a table of files and what each must give
 *
 * Every key with a good and a bad value, the "file:line: message" of each
 * error, and the shipped conf/watchd.conf: as shipped (all commented) and
 * with every key uncommented, it must give exactly the defaults, so the
 * file and the parser cannot drift apart.
 */

#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <syslog.h>

#include "config.h"

typedef struct Case {
        const char *what;
        const char *text;
        const char *error; /* NULL: must parse; else the whole "name:line: message" */
        size_t offset;     /* a uint32_t field of Config to check, with its value */
        uint32_t value;
} Case;

#define AT(field) offsetof(Config, field)
#define X10       "xxxxxxxxxx"
#define X100      X10 X10 X10 X10 X10 X10 X10 X10 X10 X10

static const Case cases[] = {
        { "empty", "", NULL, AT(batch_max_events), 1024 },
        { "comments only", "# nothing\n; nothing\n\n", NULL, AT(max_watches_per_client), CONFIG_AUTO },
        { "auto", "[limits]\nmax_watches_per_client = 3\nmax_watches_per_client = auto\n", NULL,
          AT(max_watches_per_client), CONFIG_AUTO },
        { "max_watches_unprivileged", "[limits]\nmax_watches_unprivileged = 7\n", NULL, AT(max_watches_unprivileged), 7 },
        { "auto is for watches only", "[limits]\nmax_clients_per_user = auto\n",
          "t.conf:2: max_clients_per_user: 'auto' is not a number" },
        { "max_watches_per_client", "[limits]\nmax_watches_per_client = 3\n", NULL, AT(max_watches_per_client), 3 },
        { "max_watches_per_user", "[limits]\nmax_watches_per_user=4000000000\n", NULL, AT(max_watches_per_user),
          4000000000u },
        { "max_clients_per_user", "[limits]\n  max_clients_per_user = 1  \n", NULL, AT(max_clients_per_user), 1 },
        { "max_pending_events_per_client", "[limits]\nmax_pending_events_per_client = 16\n", NULL,
          AT(max_pending_events_per_client), 16 },
        { "max_pending_events_per_user", "[limits]\nmax_pending_events_per_user = 100\n", NULL,
          AT(max_pending_events_per_user), 100 },
        { "move_pair_timeout_ms 0", "[events]\nmove_pair_timeout_ms = 0\n", NULL, AT(move_pair_timeout_ms), 0 },
        { "add_watch_timeout_ms default", "", NULL, AT(add_watch_timeout_ms), 20000 },
        { "add_watch_timeout_ms 100", "[limits]\nadd_watch_timeout_ms = 100\n", NULL, AT(add_watch_timeout_ms), 100 },
        { "move_pair_timeout_ms 1000", "[events]\nmove_pair_timeout_ms = 1000\n", NULL, AT(move_pair_timeout_ms), 1000 },
        { "move_pair_max_distance", "[events]\nmove_pair_max_distance = 10000\n", NULL, AT(move_pair_max_distance),
          10000 },
        { "batch_max_events", "[events]\nbatch_max_events = 65536\n", NULL, AT(batch_max_events), 65536 },
        { "read_pause_us default", "", NULL, AT(read_pause_us), 1000 },
        { "read_pause_us 0", "[events]\nread_pause_us = 0\n", NULL, AT(read_pause_us), 0 },
        { "read_pause_us 5000", "[events]\nread_pause_us = 5000\n", NULL, AT(read_pause_us), 5000 },
        { "backend", "[daemon]\nbackend = device\n", NULL, AT(backend), BACKEND_DEVICE },
        { "log_level", "[daemon]\nlog_level = debug\n", NULL, AT(log_level), LOG_DEBUG },
        { "tree_backend", "[daemon]\ntree_backend = inotify\n", NULL, AT(tree_backend), TREE_BACKEND_INOTIFY },
        { "tree_backend fanotify", "[daemon]\ntree_backend=fanotify\n", NULL, AT(tree_backend), TREE_BACKEND_FANOTIFY },
        { "delivery", "[events]\n\ndelivery = broadcast\n", NULL, AT(delivery_line), 3 },
        { "poll nfs", "[poll]\nnfs = 30\n", NULL, AT(poll_interval_sec[FS_NFS]), 30 },
        { "poll 9p off", "[poll]\n9p = 0\n", NULL, AT(poll_interval_sec[FS_9P]), 0 },
        { "poll fuse a day", "[poll]\nfuse = 86400\n", NULL, AT(poll_interval_sec[FS_FUSE]), 86400 },
        { "poll defaults", "", NULL, AT(poll_interval_sec[FS_CIFS]), 5 },
        { "local is never polled", "", NULL, AT(poll_interval_sec[FS_LOCAL]), 0 },
        { "max_polled_dirs_per_user", "[poll]\nmax_polled_dirs_per_user = 7\n", NULL, AT(max_polled_dirs_per_user), 7 },
        { "max_subscriptions_per_user", "[journal]\nmax_subscriptions_per_user = 3\n", NULL,
          AT(journal_max_subscriptions_per_user), 3 },
        { "too many durable", "[journal]\nmax_subscriptions_per_user = 65537\n",
          "t.conf:2: max_subscriptions_per_user: 65537 is out of range (1-65536)" },
        { "the last value wins", "[limits]\nmax_clients_per_user = 5\nmax_clients_per_user = 6\n", NULL,
          AT(max_clients_per_user), 6 },

        { "unknown section", "[daemon]\nbackend = syscall\n[nonsense]\nkey = 1\n",
          "t.conf:3: unknown section [nonsense]" }, /* the section's own line */
        { "unknown key", "[limits]\n\n\nmax_watches = 3\n", "t.conf:4: unknown key 'max_watches' in section [limits]" },
        { "key before any section", "backend = auto\n", "t.conf:1: unknown section []" },
        { "syntax error", "[limits]\nthis line has no equals sign\n",
          "t.conf:2: syntax error: expected [section], key = value or a comment" },
        { "not a number", "[limits]\nmax_watches_per_client = lots\n",
          "t.conf:2: max_watches_per_client: 'lots' is not a number" },
        { "negative", "[limits]\nmax_watches_per_client = -1\n",
          "t.conf:2: max_watches_per_client: '-1' is not a number" },
        { "trailing junk", "[limits]\nmax_watches_per_client = 12k\n",
          "t.conf:2: max_watches_per_client: '12k' is not a number" },
        { "zero limit", "[limits]\nmax_clients_per_user = 0\n",
          "t.conf:2: max_clients_per_user: 0 is out of range (1-4294967295)" },
        { "past 32 bits", "[limits]\nmax_watches_per_user = 4294967296\n",
          "t.conf:2: max_watches_per_user: 4294967296 is out of range (1-4294967295)" },
        { "add_watch_timeout_ms too short", "[limits]\nadd_watch_timeout_ms = 99\n",
          "t.conf:2: add_watch_timeout_ms: 99 is out of range (100-600000)" },
        { "add_watch_timeout_ms too long", "[limits]\nadd_watch_timeout_ms = 600001\n",
          "t.conf:2: add_watch_timeout_ms: 600001 is out of range (100-600000)" },
        { "timeout too long", "[events]\nmove_pair_timeout_ms = 1001\n",
          "t.conf:2: move_pair_timeout_ms: 1001 is out of range (0-1000)" },
        { "distance 0", "[events]\nmove_pair_max_distance = 0\n",
          "t.conf:2: move_pair_max_distance: 0 is out of range (1-10000)" },
        { "batch too big", "[events]\nbatch_max_events = 65537\n",
          "t.conf:2: batch_max_events: 65537 is out of range (1-65536)" },
        { "read pause too long", "[events]\nread_pause_us = 5001\n",
          "t.conf:2: read_pause_us: 5001 is out of range (0-5000)" },
        { "bad backend", "[daemon]\nbackend = kernel\n",
          "t.conf:2: backend: 'kernel' is not one of auto, device, syscall" },
        { "relative device", "[daemon]\ndevice = dev/inotify\n",
          "t.conf:2: device: 'dev/inotify' is not an absolute path" },
        { "bad tree backend", "[daemon]\ntree_backend = fsnotify\n",
          "t.conf:2: tree_backend: 'fsnotify' is not one of auto, fanotify, inotify" },
        { "relative fanotify helper", "[daemon]\nfanotify_helper = run/x.sock\n",
          "t.conf:2: fanotify_helper: 'run/x.sock' is not an absolute path" },
        { "fanotify helper too long for a socket", "[daemon]\nfanotify_helper = /" X100 X10 "\n",
          "t.conf:2: fanotify_helper: path is too long for a socket" },
        { "bad log level", "[daemon]\nlog_level = loud\n",
          "t.conf:2: log_level: 'loud' is not one of err, warning, notice, info, debug" },
        { "poll interval too long", "[poll]\nceph = 86401\n", "t.conf:2: ceph: 86401 is out of range (0-86400)" },
        { "poll interval with a unit", "[poll]\nnfs = 5s\n", "t.conf:2: nfs: '5s' is not a number" },
        { "poll of local", "[poll]\nlocal = 5\n", "t.conf:2: unknown key 'local' in section [poll]" },
        { "poll of smb", "[poll]\nsmb = 5\n", "t.conf:2: unknown key 'smb' in section [poll]" },
        { "no polled directory at all", "[poll]\nmax_polled_dirs_per_user = 0\n",
          "t.conf:2: max_polled_dirs_per_user: 0 is out of range (1-4294967295)" },
        { "bad delivery", "[events]\ndelivery = multicast\n",
          "t.conf:2: delivery: 'multicast' is not one of unicast, broadcast" },
        { "the first error is reported", "[limits]\nmax_clients_per_user = 0\nbogus = 1\n",
          "t.conf:2: max_clients_per_user: 0 is out of range (1-4294967295)" },
        { "no newline at the end", "[limits]\nbogus = 1", "t.conf:2: unknown key 'bogus' in section [limits]" },
        /* Found by fuzz/fuzz-config: inih ignores what follows ']' and never
         * reports a section without keys, so these passed silently. */
        { "text after a section", "[limits]\n[daemon] junk\nbackend = syscall\n",
          "t.conf:2: unexpected text after [daemon]" },
        { "unknown section without keys", "[events]\n[dents]&devicaemon]\n#naebcd = nope\n",
          "t.conf:2: unexpected text after [dents]" },
        { "unknown section with comments only", "[dents]\n# backend = device\n", "t.conf:1: unknown section [dents]" },
        /* Found by fuzz/fuzz-config: inih parsed the tail of a line past 199
         * characters as a line of its own, so a long comment could set a key. */
        { "long comment",
          "[daemon]\n# " X100 "x" X10 X10 X10 X10 X10 X10 X10 X10 X10 "xxxxxx"
          "backend = device\n",
          NULL, AT(backend), BACKEND_AUTO },
        { "continuation line", "[daemon]\nbackend = syscall\n\n    syscall\n",
          "t.conf:4: an indented line continues the value above: not allowed in watchd.conf" },
        { "indented comment", "[daemon]\nbackend = syscall\n  # a comment\n", NULL, AT(backend), BACKEND_SYSCALL },
        { "long line", "[daemon]\ndevice = /" X100 X100 "\n", "t.conf:2: line is longer than 198 characters" },
};

typedef struct SizeCase {
        const char *what;
        const char *text;
        const char *error;
        size_t offset; /* a uint64_t field */
        uint64_t value;
} SizeCase;

static const SizeCase size_cases[] = {
        { "default per subscription", "", NULL, AT(journal_max_bytes_per_subscription), UINT64_C(64) << 20 },
        { "default per user", "", NULL, AT(journal_max_bytes_per_user), UINT64_C(256) << 20 },
        { "bytes", "[journal]\nmax_bytes_per_subscription = 65536\n", NULL, AT(journal_max_bytes_per_subscription),
          65536 },
        { "K", "[journal]\nmax_bytes_per_subscription = 100K\n", NULL, AT(journal_max_bytes_per_subscription), 102400 },
        { "G", "[journal]\nmax_bytes_per_user = 3G\n", NULL, AT(journal_max_bytes_per_user), UINT64_C(3) << 30 },
        { "T", "[journal]\nmax_bytes_per_user = 1T\n", NULL, AT(journal_max_bytes_per_user), UINT64_C(1) << 40 },
        { "client bytes default", "", NULL, AT(max_pending_bytes_per_client), UINT64_C(16) << 20 },
        { "user bytes default", "", NULL, AT(max_pending_bytes_per_user), UINT64_C(64) << 20 },
        { "client bytes", "[limits]\nmax_pending_bytes_per_client = 1M\n", NULL, AT(max_pending_bytes_per_client),
          UINT64_C(1) << 20 },
        { "user bytes too small", "[limits]\nmax_pending_bytes_per_user = 1K\n",
          "t.conf:2: max_pending_bytes_per_user: 1K is out of range (64K-1T)" },
        { "too small", "[journal]\nmax_bytes_per_subscription = 63K\n",
          "t.conf:2: max_bytes_per_subscription: 63K is out of range (64K-1T)" },
        { "too big", "[journal]\nmax_bytes_per_user = 1025G\n",
          "t.conf:2: max_bytes_per_user: 1025G is out of range (64K-1T)" },
        { "past 64 bits", "[journal]\nmax_bytes_per_user = 99999999999999999T\n",
          "t.conf:2: max_bytes_per_user: 99999999999999999T is out of range (64K-1T)" },
        { "past strtoull", "[journal]\nmax_bytes_per_user = 999999999999999999999\n",
          "t.conf:2: max_bytes_per_user: 999999999999999999999 is out of range (64K-1T)" },
        { "bad unit", "[journal]\nmax_bytes_per_user = 3X\n",
          "t.conf:2: max_bytes_per_user: '3X' is not a size (bytes, or a number followed by K, M, G or T)" },
        { "two units", "[journal]\nmax_bytes_per_user = 3MB\n",
          "t.conf:2: max_bytes_per_user: '3MB' is not a size (bytes, or a number followed by K, M, G or T)" },
        { "negative size", "[journal]\nmax_bytes_per_user = -1M\n",
          "t.conf:2: max_bytes_per_user: '-1M' is not a size (bytes, or a number followed by K, M, G or T)" },
        { "state_directory", "[journal]\nstate_directory = /srv/watchd\n", NULL, AT(journal_max_bytes_per_user),
          UINT64_C(256) << 20 },
        { "relative state_directory", "[journal]\nstate_directory = var/lib\n",
          "t.conf:2: state_directory: 'var/lib' is not an absolute path" },
        { "unknown journal key", "[journal]\nmax_bytes = 1M\n", "t.conf:2: unknown key 'max_bytes' in section [journal]" },
};

static void test_size_case(gconstpointer data) {
        const SizeCase *c = data;
        g_autofree char *error = NULL;
        Config config;
        int r;

        g_assert_cmpint(config_init(&config), ==, 0);
        r = config_load_string("t.conf", c->text, &config, &error);
        if (c->error) {
                g_assert_cmpint(r, ==, -EINVAL);
                g_assert_cmpstr(error, ==, c->error);
        } else {
                g_assert_cmpint(r, ==, 0);
                g_assert_null(error);
                g_assert_cmpuint(*(uint64_t *) ((char *) &config + c->offset), ==, c->value);
        }
        config_done(&config);
}

static void test_case(gconstpointer data) {
        const Case *c = data;
        g_autofree char *error = NULL;
        Config config;
        int r;

        g_assert_cmpint(config_init(&config), ==, 0);
        config.max_watches_per_client = 77; /* must not survive a load: a load starts from the defaults */
        r = config_load_string("t.conf", c->text, &config, &error);
        if (c->error) {
                g_assert_cmpint(r, ==, -EINVAL);
                g_assert_cmpstr(error, ==, c->error);
                g_assert_cmpuint(config.max_watches_per_client, ==, 77); /* untouched on failure */
        } else {
                g_assert_cmpint(r, ==, 0);
                g_assert_null(error);
                g_assert_cmpuint(*(uint32_t *) ((char *) &config + c->offset), ==, c->value);
        }
        config_done(&config);
}

static void assert_defaults(const Config *c) {
        Config d;

        g_assert_cmpint(config_init(&d), ==, 0);
        g_assert_cmpint(c->backend, ==, d.backend);
        g_assert_cmpstr(c->device, ==, d.device);
        g_assert_cmpint(c->log_level, ==, d.log_level);
        g_assert_cmpint(c->tree_backend, ==, d.tree_backend);
        g_assert_cmpstr(c->fanotify_helper, ==, d.fanotify_helper);
        g_assert_cmpuint(c->max_watches_per_client, ==, d.max_watches_per_client);
        g_assert_cmpuint(c->max_watches_per_user, ==, d.max_watches_per_user);
        g_assert_cmpuint(c->max_watches_unprivileged, ==, d.max_watches_unprivileged);
        g_assert_cmpuint(c->max_clients_per_user, ==, d.max_clients_per_user);
        g_assert_cmpuint(c->max_pending_events_per_client, ==, d.max_pending_events_per_client);
        g_assert_cmpuint(c->max_pending_events_per_user, ==, d.max_pending_events_per_user);
        g_assert_cmpuint(c->max_pending_bytes_per_client, ==, d.max_pending_bytes_per_client);
        g_assert_cmpuint(c->max_pending_bytes_per_user, ==, d.max_pending_bytes_per_user);
        g_assert_cmpuint(c->add_watch_timeout_ms, ==, d.add_watch_timeout_ms);
        g_assert_cmpuint(c->move_pair_timeout_ms, ==, d.move_pair_timeout_ms);
        g_assert_cmpuint(c->move_pair_max_distance, ==, d.move_pair_max_distance);
        g_assert_cmpuint(c->batch_max_events, ==, d.batch_max_events);
        g_assert_cmpuint(c->read_pause_us, ==, d.read_pause_us);
        g_assert_cmpint(c->delivery, ==, d.delivery);
        for (int k = 0; k < _FS_KIND_MAX; k++)
                g_assert_cmpuint(c->poll_interval_sec[k], ==, d.poll_interval_sec[k]);
        g_assert_cmpuint(c->max_polled_dirs_per_user, ==, d.max_polled_dirs_per_user);
        g_assert_cmpuint(c->journal_max_bytes_per_subscription, ==, d.journal_max_bytes_per_subscription);
        g_assert_cmpuint(c->journal_max_bytes_per_user, ==, d.journal_max_bytes_per_user);
        g_assert_cmpuint(c->journal_max_subscriptions_per_user, ==, d.journal_max_subscriptions_per_user);
        g_assert_cmpstr(c->state_directory, ==, d.state_directory);
        config_done(&d);
}

/* The shipped file, as is and with every "#key = value" line uncommented. */
static void test_shipped(void) {
        g_autofree char *text = NULL, *error = NULL;
        g_autoptr(GRegex) re = g_regex_new("^#([a-z0-9_]+ = )", G_REGEX_MULTILINE, 0, NULL);
        g_autofree char *uncommented = NULL;
        Config c;
        int n = 0;

        g_assert_true(g_file_get_contents(WATCHD_CONF, &text, NULL, NULL));
        g_assert_cmpint(config_init(&c), ==, 0);
        g_assert_cmpint(config_load(WATCHD_CONF, &c, &error), ==, 0);
        assert_defaults(&c);

        uncommented = g_regex_replace(re, text, -1, 0, "\\1", 0, NULL);
        for (const char *p = uncommented; (p = strstr(p, " = ")); p++)
                n++;
        g_assert_cmpint(n, ==, 31); /* every key of the file */
        g_assert_cmpint(config_load_string(WATCHD_CONF, uncommented, &c, &error), ==, 0);
        g_assert_null(error);
        assert_defaults(&c);
        config_done(&c);
}

static void test_missing_file(void) {
        g_autofree char *error = NULL;
        Config c;

        g_assert_cmpint(config_init(&c), ==, 0);
        c.batch_max_events = 3;
        g_assert_cmpint(config_load("/nonexistent/watchd.conf", &c, &error), ==, 0);
        assert_defaults(&c);
        config_done(&c);
}

/* Found by fuzz/fuzz-config: inih stopped the line at a NUL and ignored the rest of it. */
static void test_nul_byte(void) {
        static const char text[] = "[daemon]\nbackend = syscall\0 and then anything\n";
        g_autofree char *dir = g_dir_make_tmp("test-config-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "watchd.conf", NULL);
        g_autofree char *error = NULL, *expected = NULL;
        Config c;

        g_assert_true(g_file_set_contents(path, text, sizeof(text) - 1, NULL));
        g_assert_cmpint(config_init(&c), ==, 0);
        g_assert_cmpint(config_load(path, &c, &error), ==, -EINVAL);
        expected = g_strdup_printf("%s:2: contains a NUL byte", path);
        g_assert_cmpstr(error, ==, expected);
        assert_defaults(&c);
        config_done(&c);
        g_unlink(path);
        g_rmdir(dir);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *name = g_strdup_printf("/config/%s", cases[i].what);
                g_test_add_data_func(name, &cases[i], test_case);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(size_cases); i++) {
                g_autofree char *name = g_strdup_printf("/config/size/%s", size_cases[i].what);
                g_test_add_data_func(name, &size_cases[i], test_size_case);
        }
        g_test_add_func("/config/shipped file", test_shipped);
        g_test_add_func("/config/missing file", test_missing_file);
        g_test_add_func("/config/NUL byte", test_nul_byte);
        return g_test_run();
}
