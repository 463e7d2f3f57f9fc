/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * bus_caller - who calls, as the bus says, and what a failed call is told
 *
 * The caller's uid and groups from the bus (never from /proc); the checks
 * of the arguments every method shares; the one table that turns the
 * core's -errno into a D-Bus error (bus_error_for()).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "access.h"
#include "manager.h"

/* The caller's credentials as the bus reported them (*ret's gids are
 * *ret_gids, the caller's to free; *ret_pid its pid, 0 if the bus did not
 * say). -EPERM if the bus did not say enough. */
int bus_caller_from_message(sd_bus *bus, sd_bus_message *msg, Caller *ret, gid_t **ret_gids, pid_t *ret_pid);
/* The sender's uid as the bus reports it (never from /proc), or -EPERM. */
int bus_sender_uid(sd_bus_message *msg, uid_t *ret);

/* Sets error from r (-errno or -WATCHD_E_*) about what ("'path'", "the
 * descriptor", a name), with the limits of m in the message. Returns the
 * error's -errno, as sd_bus_error_setf(). */
int bus_error_for(const Manager *m, int r, const char *what, sd_bus_error *error);

/* A mask and flags of AddWatch (PATH_ESCAPED taken off): InvalidArgs unless valid. */
int bus_check_mask_flags(uint32_t mask, uint32_t flags, sd_bus_error *error);
/* The name errors give the object: "'path'" or "the descriptor" (NULL path); NULL: out of memory. */
char *bus_what_of(const char *path);
/* Bytes of s to quote in a message, at most max, not cutting a UTF-8 character. */
int bus_quote_len(const char *s, size_t max);
#define BUS_QUOTE_MAX 200
/* The path of a call as bytes: as sent, or unescaped with PATH_ESCAPED;
 * absolute and shorter than PATH_MAX, or InvalidArgs. */
int bus_path_from_call(const char *sent, bool escaped, char **ret, sd_bus_error *error);
