/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * log - messages on stderr with <N> priority prefixes
 *
 * journald reads the "<N>" prefix (sd-daemon(3)) and keeps the level, so the
 * daemon needs no syslog code. The *_errno variants set errno for "%m" and
 * return the negative error code, so a failure is logged and returned in one
 * statement: return log_error_errno(r, "Failed to open '%s': %m", path);
 */

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

/* Only messages at this level or more important are printed. */
void log_set_max_level(int level);

/* "err", "warning", "notice", "info", "debug" -> LOG_*, or -EINVAL. */
int log_level_from_string(const char *s);

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) _printf_(5, 6);

#define log_full_errno(level, error, ...) log_internal((level), (error), __FILE__, __LINE__, __VA_ARGS__)

#define log_debug(...)   log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...)    log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...)  log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...)   log_full_errno(LOG_ERR, 0, __VA_ARGS__)

#define log_debug_errno(error, ...)   log_full_errno(LOG_DEBUG, (error), __VA_ARGS__)
#define log_info_errno(error, ...)    log_full_errno(LOG_INFO, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, (error), __VA_ARGS__)
#define log_error_errno(error, ...)   log_full_errno(LOG_ERR, (error), __VA_ARGS__)
