/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log - messages on stderr with <N> priority prefixes
 *
 * The maximum level is the one piece of process-wide state in watchd: it is
 * set from the config file and read by every logging call.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "log.h"

static int log_max_level = LOG_INFO;

void log_set_max_level(int level) {
        log_max_level = level;
}

static const char *const level_names[] = {
        [LOG_ERR] = "err",   [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

int log_level_from_string(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
                if (level_names[i] && strcmp(level_names[i], s) == 0)
                        return (int) i;
        return -EINVAL;
}

/* "%m" of one of the daemon's own codes (error.h) printed strerror()'s
 * "Unknown error N": that text, wherever it stands in buf, becomes its name. */
static void name_own_error(char *buf, size_t size, int error) {
        const char *name = error_to_string(-error), *unknown = strerror(error);
        size_t ul = strlen(unknown), nl = strlen(name);
        char out[2048], *o = out, *p, *b = buf;

        while ((p = strstr(b, unknown)) && (size_t) (o - out) + (size_t) (p - b) + nl < sizeof(out)) {
                memcpy(o, b, (size_t) (p - b));
                o += p - b;
                memcpy(o, name, nl);
                o += nl;
                b = p + ul;
        }
        snprintf(o, sizeof(out) - (size_t) (o - out), "%s", b);
        snprintf(buf, size, "%s", out);
}

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
        int saved = errno;
        va_list ap;

        if (error < 0)
                error = -error;

        if (level <= log_max_level) {
                char buf[2048];

                /* %m in fmt prints the error passed in, not whatever errno is now. */
                errno = error;
                va_start(ap, fmt);
                (void) vsnprintf(buf, sizeof(buf), fmt, ap);
                va_end(ap);
                if (error_is_watchd(-error))
                        name_own_error(buf, sizeof(buf), error);
                if (log_max_level >= LOG_DEBUG)
                        fprintf(stderr, "<%i>%s (%s:%i)\n", level, buf, file, line);
                else
                        fprintf(stderr, "<%i>%s\n", level, buf);
        }

        errno = saved;
        return -error;
}
