/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watchd - file-change notifications for many clients over D-Bus
 *
 * The main loop, and the one place that builds the daemon's objects: parse
 * the arguments, drop the capabilities it does not use (capability.h), load
 * the config, build the manager (the core, manager.h) and its loop glue
 * (loop.h), connect to the bus, build the bus layer (dbus_iface.h) and the
 * durable subscriptions (durable.h; the bus layer gives each replay its
 * transport), publish, tell systemd we are ready, run. They are freed in
 * the reverse order. SIGTERM/SIGINT stop it cleanly, SIGHUP re-reads the
 * config (a bad file is logged and the old settings kept), and the
 * watchdog is kept fed by sd-event when WatchdogSec= is set.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "capability.h"
#include "config.h"
#include "dbus_iface.h"
#include "durable.h"
#include "fswork.h"
#include "loop.h"
#include "log.h"
#include "macro.h"
#include "manager.h"

#define EXIT_CONFIG 78 /* EX_CONFIG */

typedef enum BusKind {
        BUS_SYSTEM,
        BUS_SESSION,
        BUS_ADDRESS,
} BusKind;

typedef struct Args {
        const char *config;
        BusKind bus;
        const char *address;
        BackendType backend;   /* _BACKEND_TYPE_INVALID: as configured */
        const char *state_dir; /* NULL: as configured */
} Args;

static void help(void) {
        printf("Usage: watchd [OPTION...]\n"
               "File-change notifications for many clients over D-Bus (org.example.Inotify).\n\n"
               "  -c, --config PATH      Read PATH instead of %s (missing: defaults)\n"
               "      --session          Serve on the session bus\n"
               "      --address ADDR     Serve on the bus at ADDR (e.g. unix:path=/run/bus)\n"
               "      --backend BACKEND  auto, device or syscall (overrides [daemon] backend)\n"
               "      --state-dir DIR    Keep durable subscriptions in DIR (overrides [journal] state_directory)\n"
               "  -h, --help             Show this help\n"
               "      --version          Show the version\n\n"
               "Without --session or --address it serves on the system bus.\n"
               "Exit status 78 means a bad configuration file.\n",
               WATCHD_DEFAULT_CONFIG);
}

/* Return: 1 to run, 0 to exit successfully, -EINVAL on bad usage. */
static int parse_args(int argc, char *argv[], Args *args) {
        enum {
                ARG_SESSION = 0x100,
                ARG_ADDRESS,
                ARG_BACKEND,
                ARG_STATE_DIR,
                ARG_VERSION,
        };
        static const struct option options[] = { { "config", required_argument, NULL, 'c' },
                                                 { "session", no_argument, NULL, ARG_SESSION },
                                                 { "address", required_argument, NULL, ARG_ADDRESS },
                                                 { "backend", required_argument, NULL, ARG_BACKEND },
                                                 { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                                                 { "help", no_argument, NULL, 'h' },
                                                 { "version", no_argument, NULL, ARG_VERSION },
                                                 {} };
        int c;

        while ((c = getopt_long(argc, argv, "c:h", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        args->config = optarg;
                        break;
                case ARG_SESSION:
                        args->bus = BUS_SESSION;
                        break;
                case ARG_ADDRESS:
                        args->bus = BUS_ADDRESS;
                        args->address = optarg;
                        break;
                case ARG_BACKEND:
                        args->backend = backend_type_from_string(optarg);
                        if (args->backend < 0) {
                                log_error("--backend: '%s' is not one of auto, device, syscall.", optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_STATE_DIR:
                        if (optarg[0] != '/') {
                                log_error("--state-dir: '%s' is not an absolute path.", optarg);
                                return -EINVAL;
                        }
                        args->state_dir = optarg;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("watchd %s\n", WATCHD_VERSION);
                        return 0;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                log_error("Unexpected argument '%s'; see --help.", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

static void bus_flush_close_unrefp(sd_bus **b) {
        sd_bus_flush_close_unref(*b);
}

static void event_unrefp(sd_event **e) {
        sd_event_unref(*e);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Loop *, loop_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(FsWork *, fswork_free);

static void on_lane_stalled(dev_t dev, bool stalled, void *userdata) {
        manager_lane_stalled(userdata, dev, stalled);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Durable *, durable_free);

static int bus_open(const Args *args, sd_bus **ret) {
        sd_bus *bus = NULL;
        int r;

        switch (args->bus) {
        case BUS_SYSTEM:
                r = sd_bus_open_system(&bus);
                break;
        case BUS_SESSION:
                r = sd_bus_open_user(&bus);
                break;
        case BUS_ADDRESS:
                r = sd_bus_new(&bus);
                if (r >= 0)
                        r = sd_bus_set_address(bus, args->address);
                if (r >= 0)
                        r = sd_bus_set_bus_client(bus, true);
                if (r >= 0)
                        r = sd_bus_start(bus);
                if (r < 0)
                        bus = sd_bus_unref(bus);
                break;
        default:
                r = -EINVAL;
        }
        if (r >= 0)
                /* Without its bus the daemon serves no one: exit, and let systemd restart it. */
                r = sd_bus_set_exit_on_disconnect(bus, true);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the %s bus%s%s: %m",
                                       args->bus == BUS_SYSTEM          ? "system" :
                                               args->bus == BUS_SESSION ? "session" :
                                                                          "given",
                                       args->address ? " at " : "", args->address ?: "");
        *ret = bus;
        return 0;
}

typedef struct Daemon {
        const char *config_path;
        Manager *manager;
        DbusIface *iface;
        Durable *durable;
        bool system_bus;
} Daemon;

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Daemon *dm = userdata;
        Manager *m = dm->manager;
        _cleanup_free_ char *error = NULL;
        Config c;
        int r;

        /* MONOTONIC_USEC: what Type=notify-reload (systemd >= 253) asks for; older ones ignore it. */
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading the configuration...",
                          now_usec());
        r = config_init(&c);
        if (r >= 0)
                r = config_load(dm->config_path, &c, &error);
        if (r >= 0 && c.delivery == DELIVERY_BROADCAST && dm->system_bus) {
                if (asprintf(&error, "%s:%u: delivery=broadcast is not allowed on the system bus", dm->config_path,
                             c.delivery_line) < 0)
                        error = NULL;
                r = -EINVAL;
        }
        if (r < 0)
                log_error("%s; keeping the old settings.", error ?: "Failed to reload the configuration");
        else {
                manager_reload(m, &c);
                if (dm->iface)
                        dbus_iface_reloaded(dm->iface);
                if (dm->durable)
                        durable_reload(dm->durable);
                log_info("Reloaded '%s'.", dm->config_path);
        }
        config_done(&c);
        (void) sd_notify(false, "READY=1\nSTATUS=Serving.");
        return 0;
}

/* A RECURSIVE walk holds an fd per level of the tree it is in (tree.c), for
 * each walk in progress: the soft limit (1024 under systemd) is raised to the
 * hard one. The daemon uses no select(), which is what the soft limit protects.
 * Returns the soft limit now in force (RLIM_INFINITY if it cannot be read). */
static rlim_t raise_fd_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return RLIM_INFINITY;
        if (rl.rlim_cur >= rl.rlim_max)
                return rl.rlim_cur;
        if (setrlimit(RLIMIT_NOFILE, &(struct rlimit) { rl.rlim_max, rl.rlim_max }) < 0) {
                log_warning_errno(-errno, "Failed to raise the limit on open files, ignoring: %m");
                return rl.rlim_cur;
        }
        return rl.rlim_max;
}

/* The slots of the table of fds, made before there are threads. */
#define FD_TABLE_START 4096

/* The kernel doubles a process's table of fds as it fills (64, 128, 256...),
 * and once the process has threads (fswork.c's workers) each doubling waits
 * for an RCU grace period (expand_fdtable(): synchronize_rcu()), ~10 ms
 * here: a walk holding its first 600 open directories met four of them, 40
 * of its 45 ms. Made big once now, while the daemon is one thread, the table
 * costs no wait and 33 KiB of kernel memory; it never shrinks. */
static void grow_fd_table(rlim_t fd_limit) {
        int fd, high, target = FD_TABLE_START;

        if (fd_limit < (rlim_t) target)
                target = (int) fd_limit;
        fd = open("/", O_PATH | O_CLOEXEC);
        if (fd < 0)
                return;
        high = fcntl(fd, F_DUPFD_CLOEXEC, target - 1);
        if (high < 0)
                log_debug_errno(-errno, "Failed to grow the table of fds, ignoring: %m");
        else
                (void) close(high);
        (void) close(fd);
}

static int run(int argc, char *argv[]) {
        /* Freed in the reverse order: the durable subscriptions (their journals closed, their
         * resumed clients still on the bus), the bus layer, the loop, and the manager last. */
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_(fswork_freep) FsWork *fswork = NULL;
        _cleanup_(event_unrefp) sd_event *event = NULL;
        _cleanup_(loop_freep) Loop *loop = NULL;
        _cleanup_(bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(dbus_iface_freep) DbusIface *iface = NULL;
        _cleanup_(durable_freep) Durable *durable = NULL;
        Daemon dm = {};
        _cleanup_free_ char *error = NULL;
        Args args = {
                .config = WATCHD_DEFAULT_CONFIG,
                .bus = BUS_SYSTEM,
                .backend = _BACKEND_TYPE_INVALID,
        };
        sigset_t mask;
        Config config;
        int r;

        r = parse_args(argc, argv, &args);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;

        /* Before anything a client could reach: whoever started us. */
        if (capability_drop_unneeded() < 0)
                return EXIT_FAILURE;

        r = config_init(&config);
        if (r < 0)
                return log_error_errno(r, "Out of memory."), EXIT_FAILURE;
        r = config_load(args.config, &config, &error);
        if (r >= 0 && config.delivery == DELIVERY_BROADCAST && args.bus == BUS_SYSTEM) {
                if (asprintf(&error,
                             "%s:%u: delivery=broadcast is not allowed on the system bus "
                             "(it would show file names to every local user)",
                             args.config, config.delivery_line) < 0)
                        error = NULL;
                r = -EINVAL;
        }
        if (r < 0) {
                log_error("%s", error ?: "Failed to read the configuration.");
                config_done(&config);
                return EXIT_CONFIG;
        }
        log_set_max_level(config.log_level);
        grow_fd_table(raise_fd_limit());
        if (args.backend >= 0)
                config.backend = args.backend;

        r = manager_new(&config, &m);
        config_done(&config);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the manager: %m"), EXIT_FAILURE;
        dm = (Daemon) { .config_path = args.config, .manager = m, .system_bus = args.bus == BUS_SYSTEM };
        /* Its workers are started as they are needed, after the signals are blocked. */
        r = fswork_new(&(FsWorkOps) { .stalled = on_lane_stalled }, m, &fswork);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the file system workers: %m"), EXIT_FAILURE;
        manager_set_fswork(m, fswork);

        /* Not sd_event_default(): sd-event checks a default loop's thread with a
         * gettid() system call in every sd_event_prepare(), that is on the path of
         * every notification (bench/analysis.md, "Issue 27, item 3"). */
        r = sd_event_new(&event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the event loop: %m"), EXIT_FAILURE;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(-errno, "Failed to block signals: %m"), EXIT_FAILURE;
        /* NULL handlers: SIGTERM and SIGINT end the loop. */
        r = sd_event_add_signal(event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGHUP, on_sighup, &dm);
        if (r < 0)
                return log_error_errno(r, "Failed to handle signals: %m"), EXIT_FAILURE;
        r = sd_event_set_watchdog(event, true);
        if (r < 0)
                log_warning_errno(r, "Failed to enable the watchdog, ignoring: %m");

        r = manager_start(m);
        if (r < 0)
                return EXIT_FAILURE;
        r = loop_new(event, m, &loop);
        if (r < 0)
                return EXIT_FAILURE;

        r = bus_open(&args, &bus);
        if (r < 0)
                return EXIT_FAILURE;
        r = dbus_iface_new(m, bus, event, &iface);
        if (r < 0)
                return EXIT_FAILURE;
        /* Before the name: a client that calls finds its durable subscriptions there. */
        r = durable_new(m, args.state_dir ?: manager_get_config(m)->state_directory, &durable);
        if (r < 0)
                return log_error_errno(r, "Failed to set up durable subscriptions: %m"), EXIT_FAILURE;
        r = dbus_iface_start(iface, durable);
        if (r < 0)
                return EXIT_FAILURE;
        dm.iface = iface;
        dm.durable = durable;

        log_info("watchd %s serving %s on the %s bus.", WATCHD_VERSION, WATCHD_BUS_NAME,
                 args.bus == BUS_SYSTEM          ? "system" :
                         args.bus == BUS_SESSION ? "session" :
                                                   "given");
        (void) sd_notifyf(false, "READY=1\nSTATUS=Serving (%s backend).", backend_name(manager_get_backend(m)));

        r = sd_event_loop(event);
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Shutting down...");
        if (r < 0)
                return log_error_errno(r, "The event loop failed: %m"), EXIT_FAILURE;
        log_info("Stopped.");
        return r; /* the exit code of sd_event_exit(): 0 for a signal */
}

int main(int argc, char *argv[]) {
        return run(argc, argv);
}
