/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * backend - choosing and freeing a kernel interface
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "log.h"
#include "macro.h"

int backend_new(BackendType type, const char *device, Backend **ret) {
        int r;

        switch (type) {
        case BACKEND_DEVICE:
                return backend_device_new(device, ret);
        case BACKEND_SYSCALL:
                return backend_syscall_new(ret);
        case BACKEND_AUTO:
                r = backend_device_new(device, ret);
                if (r >= 0)
                        return r;
                log_info_errno(r, "Cannot use '%s' (%m), using the inotify syscalls.", device);
                return backend_syscall_new(ret);
        default:
                return -EINVAL;
        }
}

int backend_watch_limit(const Backend *b, uint32_t *ret) {
        unsigned long v;
        char line[32], *end;
        FILE *f;
        bool ok;

        if (!b->limit_path)
                return -ENOENT;
        f = fopen(b->limit_path, "re");
        if (!f)
                return negative_errno();
        ok = fgets(line, sizeof(line), f);
        (void) fclose(f);
        if (!ok)
                return -EIO;
        errno = 0;
        v = strtoul(line, &end, 10);
        if (errno != 0 || end == line || (*end != '\n' && *end != '\0') || v == 0 || v > UINT32_MAX)
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

Backend *backend_free(Backend *b) {
        if (b)
                b->ops->free(b);
        return NULL;
}
