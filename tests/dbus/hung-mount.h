/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * hung-mount - nobody's own FUSE mount that stops answering, and nobody's
 * child, for the hung-* cases of the system-style bus
 *
 * test-hung-calls.c and test-hung-changes.c share it. nobody mounts a
 * bindfs (stopped with SIGSTOP) or a hangfs (tests/dbus/hangfs.c: it holds
 * one kind of request) of its own with allow_other: the test moves into a
 * mount namespace of its own, binds a fuse.conf that says user_allow_other
 * over /etc/fuse.conf there and restarts watchd in it. A child that becomes
 * nobody runs steps (AddWatch, CreateDurable, AddWatchFd, await a record)
 * and says how each went, a line each; root's reader on a local directory
 * shows that watchd goes on (root_goes_on()). Moved from test-system-bus.c
 * unchanged; it builds on system-bus-fixture.h, and HANGFS (hangfs's path,
 * from meson.build) is needed here only.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "system-bus-fixture.h"

#define HUNG_CONFIG "[poll]\nfuse = 1\n"

#define HUNG_INOTIFY_CONFIG "[poll]\nfuse = 0\n"

/* The kernel revalidates a name of a FUSE mount once its entry timeout (1 s,
 * libfuse's default, which bindfs keeps) is over: a path walk through it
 * then asks the FUSE daemon (as in test-remote.c). */
#define ENTRY_TIMEOUT_US (1500 * 1000)

pid_t nobody_bindfs(char *bindfs, const char *back, const char *mnt);
pid_t nobody_mounts_bindfs(Fixture *f, const char *config, const char *back, const char *mnt);
pid_t hangfs_mount(Fixture *f, const char *config, const char *back, const char *mnt, const char *hang, bool statfs,
                   bool loop, const char *options);
pid_t nobody_mounts_hangfs(Fixture *f, const char *config, const char *back, const char *mnt, const char *hang,
                           bool statfs);
pid_t nobody_tree_and_mount(Fixture *f, const char *config, const char *tree, const char *back, const char *mnt);
void nobody_start(Stuck *st, Fixture *f, const char *const *steps);
void nobody_end(Stuck *st);
void root_goes_on(Fixture *f, Reader *reader, const char *what);
void make_file(const char *path);
void nobody_sees_last(Stuck *st, Reader *reader, const char *mnt, char *line);
void reader_on_local(Fixture *f, Reader *reader);
pid_t nobody_watch_in_mount(Fixture *f, const char *back, const char *mnt, const char *a, const char *file,
                            Reader *reader, Stuck *st, const char *const *steps, char **line);
