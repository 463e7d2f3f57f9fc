/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * backend - what both kernel interfaces share: the watch limit, freeing
 *
 * Below both implementations (backend_device.c, backend_syscall.c);
 * backend_choose.c, above them, picks one.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "macro.h"

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
