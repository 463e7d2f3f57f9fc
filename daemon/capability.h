/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

/*
 * capability - giving up, at start, every privilege the daemon does not use
 *
 * Whoever starts it (the unit, an administrator's shell, a test), the daemon
 * keeps only what access.c needs to open files as its callers:
 *
 *   CAP_SETUID, CAP_SETGID  setfsuid(), setfsgid(), setgroups() to a
 *                           non-root caller's credentials;
 *   CAP_DAC_READ_SEARCH     a root caller's reach: read and search any
 *                           directory, read any file (all that opening
 *                           O_PATH, faccessat(R_OK) and placing an inotify
 *                           watch ask: MAY_READ, and MAY_EXEC on directories).
 *
 * and only when it runs as root: a daemon started as another user serves its
 * own uid only (access.c) and keeps nothing, so that it never lends a
 * capability to the callers of its uid. CAP_DAC_OVERRIDE is not kept: it
 * adds write and execute, which nothing here asks for. CAP_SYS_PTRACE in
 * particular goes: the kernel checks it to resolve /proc/PID/ links.
 *
 * Dropped from the effective, permitted and inheritable sets, the ambient
 * set, and the bounding set (when CAP_SETPCAP allows: the unit starts the
 * daemon with its bounding set already cut to these); and no_new_privs is
 * set, so that no exec could bring anything back (the daemon execs nothing).
 * Moving fsuid away from 0 still clears CAP_DAC_READ_SEARCH from the
 * effective set for the time of a non-root caller's open, and moving it back
 * raises it again from the permitted set (capabilities(7)).
 */

/* Logs what is kept. Return: 0, or -errno (then the daemon must not start). */
int capability_drop_unneeded(void);

/* For watchd-fanotify (fan_helper.h): keeps only keep (bits 1 << CAP_*, of
 * what it has), drops the rest as above, sets no_new_privs. Return: 0, or
 * -errno (logged). */
int capability_keep_only(uint64_t keep);
