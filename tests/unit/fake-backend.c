/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fake-backend - a kernel interface for unit tests
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "fake-backend.h"

static int fake_add(Backend *b, int fd, uint32_t mask, int *ret_wd) {
        FakeBackend *f = (FakeBackend *) b;
        uint32_t flags = mask & (IN_MASK_ADD | IN_MASK_CREATE);
        struct stat st;

        f->n_add++;
        /* The flags only where the test says the backend has them (Backend.mask_add). */
        g_assert_true(!flags || b->mask_add);
        mask &= ~flags;
        if (f->fail_add) {
                int r = f->fail_add;
                f->fail_add = 0;
                return r;
        }
        /* An fd the daemon opened: O_PATH or readable, both backends take either (backend.h). */
        g_assert_cmpint(fstat(fd, &st), ==, 0);
        g_assert_cmpint(fcntl(fd, F_GETFL), >=, 0);
        for (int wd = 0; wd < f->next_wd; wd++)
                if (f->watches[wd].live && f->watches[wd].dev == st.st_dev && f->watches[wd].ino == st.st_ino) {
                        if (flags & IN_MASK_CREATE)
                                return -EEXIST;
                        f->watches[wd].mask = (flags & IN_MASK_ADD) ? f->watches[wd].mask | mask : mask;
                        *ret_wd = wd;
                        return 0;
                }
        g_assert_cmpint(f->next_wd, <, FAKE_WATCHES_MAX);
        f->watches[f->next_wd] = (FakeWatch) { st.st_dev, st.st_ino, mask, true };
        *ret_wd = f->next_wd++;
        return 0;
}

static int fake_rm(Backend *b, int wd) {
        FakeBackend *f = (FakeBackend *) b;

        f->n_rm++;
        if (wd < 0 || wd >= f->next_wd || !f->watches[wd].live)
                return -EINVAL;
        f->watches[wd].live = false;
        return 0;
}

static ssize_t fake_read(Backend *b, void *buf, size_t size) {
        FakeBackend *f = (FakeBackend *) b;
        size_t n = 0;

        f->n_read++;
        if (f->queue->len == 0)
                return -EAGAIN;
        /* Whole records only, as the kernel hands them out. */
        while (n < f->queue->len) {
                const struct inotify_event *ev = (const struct inotify_event *) (f->queue->data + n);
                size_t l = sizeof(*ev) + ev->len;

                if (n + l > size)
                        break;
                n += l;
        }
        g_assert_cmpuint(n, >, 0);
        memcpy(buf, f->queue->data, n);
        g_byte_array_remove_range(f->queue, 0, (guint) n);
        return (ssize_t) n;
}

/* The test frees it (fake_backend_free), after what uses it. */
static void fake_free(Backend *b) {
}

static int fake_pending(Backend *b, size_t *ret) {
        *ret = ((FakeBackend *) b)->queue->len;
        return 0;
}

static const BackendOps fake_ops = {
        .name = "fake",
        .add_watch = fake_add,
        .rm_watch = fake_rm,
        .read = fake_read,
        .free = fake_free,
        .pending = fake_pending,
};

FakeBackend *fake_backend_new(void) {
        FakeBackend *f = g_new0(FakeBackend, 1);

        f->backend = (Backend) { .ops = &fake_ops, .fd = -1 };
        f->queue = g_byte_array_new();
        return f;
}

void fake_backend_free(FakeBackend *f) {
        if (!f)
                return;
        g_byte_array_unref(f->queue);
        g_free(f);
}

int fake_backend_wd(FakeBackend *f, const char *path) {
        struct stat st;

        if (stat(path, &st) < 0)
                return -1;
        for (int wd = 0; wd < f->next_wd; wd++)
                if (f->watches[wd].live && f->watches[wd].dev == st.st_dev && f->watches[wd].ino == st.st_ino)
                        return wd;
        return -1;
}

unsigned fake_backend_n_live(const FakeBackend *f) {
        unsigned n = 0;

        for (int wd = 0; wd < f->next_wd; wd++)
                n += f->watches[wd].live;
        return n;
}

void fake_backend_push(FakeBackend *f, int wd, uint32_t mask, uint32_t cookie, const char *name) {
        size_t nl = name ? strlen(name) : 0, len = name ? (nl + 1 + 15) / 16 * 16 : 0;
        struct inotify_event ev = {
                .wd = wd,
                .mask = mask,
                .cookie = cookie,
                .len = (uint32_t) len,
        };
        guint at;

        g_byte_array_append(f->queue, (const guint8 *) &ev, sizeof(ev));
        at = f->queue->len;
        g_byte_array_set_size(f->queue, at + (guint) len);
        memset(f->queue->data + at, 0, len);
        if (name)
                memcpy(f->queue->data + at, name, nl);
}

/* Until the jobs are done; dispatch: their completions too. */
static void fswork_wait(FsWork *w, bool dispatch) {
        for (int i = 0; i < 6000; i++) {
                struct pollfd p = { .fd = fswork_fd(w), .events = POLLIN };
                FsWorkStats st;

                if (dispatch)
                        fswork_dispatch(w);
                fswork_get_stats(w, &st);
                if (st.running == 0 && st.queued == 0) {
                        if (dispatch)
                                fswork_dispatch(w);
                        return;
                }
                if (dispatch)
                        (void) poll(&p, 1, 10);
                else
                        g_usleep(10000);
        }
        g_assert_not_reached();
}

void fswork_settle(FsWork *w) {
        fswork_wait(w, true);
}

void fswork_await_idle(FsWork *w) {
        fswork_wait(w, false);
}
