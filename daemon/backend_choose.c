/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * backend_choose - which kernel interface the daemon uses
 *
 * Above both implementations (backend_device.c, backend_syscall.c), which
 * know only backend.h: the configured one, or with BACKEND_AUTO the device
 * if it can be opened, else the syscalls.
 */

#include <errno.h>

#include "backend.h"
#include "log.h"

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
