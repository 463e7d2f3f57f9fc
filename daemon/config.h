/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * config - watchd.conf, read with libinih
 *
 * The only caller of libinih. Every key of conf/watchd.conf is a field of
 * Config with the default shown there; a bad value or an unknown section or
 * key is an error carrying "file:line: message", which watchd prints before
 * it exits with status 78 (EX_CONFIG).
 */

#include <stdbool.h>
#include <errno.h>
#include <stdint.h>

#include "fstype.h"

#define WATCHD_DEFAULT_CONFIG          "/etc/watchd/watchd.conf"
#define WATCHD_DEFAULT_STATE_DIRECTORY "/var/lib/watchd"

/* A watch limit given as "auto" (the default). */
#define CONFIG_AUTO 0u

typedef enum BackendType {
        BACKEND_AUTO,
        BACKEND_DEVICE,
        BACKEND_SYSCALL,
        _BACKEND_TYPE_MAX,
        _BACKEND_TYPE_INVALID = -EINVAL,
} BackendType;

/* Who serves a RECURSIVE subscription (fanotify.h). */
typedef enum TreeBackend {
        TREE_BACKEND_AUTO,     /* fanotify where it can serve, else inotify */
        TREE_BACKEND_FANOTIFY, /* the same, but watchd does not start without fanotify */
        TREE_BACKEND_INOTIFY,  /* a watch a directory, as before */
        _TREE_BACKEND_MAX,
        _TREE_BACKEND_INVALID = -EINVAL,
} TreeBackend;

typedef enum DeliveryMode {
        DELIVERY_UNICAST,
        DELIVERY_BROADCAST,
        _DELIVERY_MODE_MAX,
        _DELIVERY_MODE_INVALID = -EINVAL,
} DeliveryMode;

typedef struct Config {
        /* [daemon] */
        BackendType backend;
        char *device;
        int log_level;
        TreeBackend tree_backend;
        char *fanotify_helper; /* the helper's socket (fan_helper.h) */

        /* [limits]; CONFIG_AUTO: sized from the kernel's limit (accounting.h) */
        uint32_t max_watches_per_client;
        uint32_t max_watches_per_user;
        uint32_t max_watches_unprivileged;
        uint32_t max_clients_per_user;
        uint32_t max_pending_events_per_client;
        uint32_t max_pending_events_per_user;
        uint64_t max_pending_bytes_per_client; /* bytes */
        uint64_t max_pending_bytes_per_user;
        uint32_t add_watch_timeout_ms; /* an AddWatch's open, as its caller, answered by then */

        /* [events] */
        uint32_t move_pair_timeout_ms;
        uint32_t move_pair_max_distance;
        uint32_t batch_max_events;
        uint32_t read_pause_us; /* after a read that emptied the kernel's queue (loop.c) */
        DeliveryMode delivery;
        unsigned delivery_line; /* line of "delivery=", 0 if unset: for later errors */

        /* [poll] */
        uint32_t poll_interval_sec[_FS_KIND_MAX]; /* 0: not polled; [FS_LOCAL] is always 0 */
        uint32_t max_polled_dirs_per_user;
        /* [journal]: sizes in bytes */
        char *state_directory; /* where durable subscriptions live */
        uint32_t journal_max_subscriptions_per_user;
        uint64_t journal_max_bytes_per_subscription;
        uint64_t journal_max_bytes_per_user;
} Config;

/* The byte caps of what clients hold: from one record of two long paths to a terabyte. */
#define CONFIG_PENDING_BYTES_MIN (UINT64_C(64) << 10)
#define CONFIG_PENDING_BYTES_MAX (UINT64_C(1) << 40)

/* The longest rest of the kernel fd (read_pause_us): a walk's slice, the
 * longest the daemon's own records may wait beside a user's (self_events.h). */
#define READ_PAUSE_US_MAX 5000u

/* Longest poll interval: a day. */
#define CONFIG_POLL_INTERVAL_MAX 86400u

/* Fills *c with the defaults of conf/watchd.conf. */
int config_init(Config *c);
void config_done(Config *c);

/* Whether some kind of remote file system has a poll interval. */
bool config_polls_remote(const Config *c);

/*
 * Reads the file at path over the defaults. A missing file is no error.
 * On a bad file returns -EINVAL and, if ret_error is not NULL, sets it to a
 * malloc'ed "path:line: message"; *ret is untouched on any failure.
 */
int config_load(const char *path, Config *ret, char **ret_error);

/* The same for text in memory, named name in messages (for tests). */
int config_load_string(const char *name, const char *text, Config *ret, char **ret_error);

BackendType backend_type_from_string(const char *s);
DeliveryMode delivery_mode_from_string(const char *s);
TreeBackend tree_backend_from_string(const char *s);
const char *tree_backend_to_string(TreeBackend t);
