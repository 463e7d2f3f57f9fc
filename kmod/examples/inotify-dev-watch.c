// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * inotify-dev-watch - watch paths through /dev/inotify, print each event
 *
 * The example program the 2005 article sends its readers to (its
 * "inotify-utils" test program), for the inotify_dev module: it uses the
 * device's own calls and nothing more. open("/dev/inotify"), one
 * ioctl(INOTIFY_WATCH) per path given, then select() and read() for the
 * events, printed as they come; on SIGINT or SIGTERM, ioctl(INOTIFY_IGNORE)
 * for each watch, the records still queued (the IN_IGNORED ones last), exit.
 * It also ends when every watched object is gone (deleted or unmounted).
 *
 * Usage: inotify-dev-watch PATH...
 *
 * stdout, one event a line:  WD <TAB> MASK <TAB> COOKIE <TAB> NAME
 *   MASK    the event's bits by name, joined by '|' (IN_CREATE|IN_ISDIR);
 *   COOKIE  ties an IN_MOVED_FROM to its IN_MOVED_TO, else 0;
 *   NAME    the entry of a watched directory, empty for the object itself.
 *           File names are bytes, not text: a byte that is not printable
 *           ASCII, and '\', is written \xHH.
 * stderr: "watching PATH as wd N" for each path, then "ready".
 * Exit status: 0 when stopped by a signal or when every watch is gone, 1 on
 * an error, 2 on bad usage.
 *
 * /dev/inotify is root's by default (docs/KERNEL-MODULE.md): run it as root,
 * or load the module with dev_mode=0666.
 *
 * Build: make -C kmod examples (or meson, as kmod/examples/inotify-dev-watch).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_PATH */
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <unistd.h>

#include "inotify_dev.h"

static const struct {
        unsigned int bit;
        const char *name;
} mask_names[] = {
        {IN_ACCESS, "IN_ACCESS"},
        {IN_MODIFY, "IN_MODIFY"},
        {IN_ATTRIB, "IN_ATTRIB"},
        {IN_CLOSE_WRITE, "IN_CLOSE_WRITE"},
        {IN_CLOSE_NOWRITE, "IN_CLOSE_NOWRITE"},
        {IN_OPEN, "IN_OPEN"},
        {IN_MOVED_FROM, "IN_MOVED_FROM"},
        {IN_MOVED_TO, "IN_MOVED_TO"},
        {IN_CREATE, "IN_CREATE"},
        {IN_DELETE, "IN_DELETE"},
        {IN_DELETE_SELF, "IN_DELETE_SELF"},
        {IN_UNMOUNT, "IN_UNMOUNT"},
        {IN_Q_OVERFLOW, "IN_Q_OVERFLOW"},
        {IN_IGNORED, "IN_IGNORED"},
        {IN_ISDIR, "IN_ISDIR"},
};

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
        (void) sig;
        stop = 1;
}

static void print_mask(unsigned int mask) {
        const char *sep = "";
        size_t i;

        for (i = 0; i < sizeof(mask_names) / sizeof(mask_names[0]); i++)
                if (mask & mask_names[i].bit) {
                        printf("%s%s", sep, mask_names[i].name);
                        mask &= ~mask_names[i].bit;
                        sep = "|";
                }
        if (mask)
                printf("%s%#x", sep, mask);
}

static void print_name(const char *name, size_t len) {
        size_t i;

        for (i = 0; i < len && name[i]; i++) {
                unsigned char c = (unsigned char) name[i];

                if (c < 0x20 || c > 0x7e || c == '\\')
                        printf("\\x%02x", c);
                else
                        putchar(c);
        }
}

/*
 * Prints the records of one read(); marks the wds whose IN_IGNORED came
 * (their watch is gone: nothing to remove at the end). -EIO on a record
 * that overruns the read (cannot happen with this module).
 */
static int print_events(const char *buf, size_t n, const int *wds, bool *gone, int nwds) {
        size_t off = 0;

        while (off < n) {
                struct inotify_event ev;
                int i;

                if (n - off < sizeof(ev))
                        return -EIO;
                memcpy(&ev, buf + off, sizeof(ev));
                if (ev.len > n - off - sizeof(ev))
                        return -EIO;
                printf("%d\t", ev.wd);
                print_mask(ev.mask);
                printf("\t%u\t", ev.cookie);
                print_name(buf + off + sizeof(ev), ev.len);
                putchar('\n');
                if (ev.mask & IN_IGNORED)
                        for (i = 0; i < nwds; i++)
                                if (wds[i] == ev.wd)
                                        gone[i] = true;
                off += sizeof(ev) + ev.len;
        }
        return 0;
}

/*
 * Waits with select() until the device is readable (@timeout NULL: until a
 * record comes or a signal stops us), then reads and prints. Returns 1 if
 * it printed, 0 on timeout or a signal, -errno on an error.
 */
static int read_events(int dev, const sigset_t *unblocked, const struct timespec *timeout,
                       const int *wds, bool *gone, int nwds) {
        /* Aligned for struct inotify_event; 4096 bytes hold 15 records of any name. */
        static char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        fd_set rfds;
        ssize_t n;
        int r;

        FD_ZERO(&rfds);
        FD_SET(dev, &rfds);
        /* pselect(): SIGINT and SIGTERM are let in only while it waits, so none is missed. */
        r = pselect(dev + 1, &rfds, NULL, NULL, timeout, unblocked);
        if (r < 0)
                return errno == EINTR ? 0 : -errno;
        if (r == 0)
                return 0;
        n = read(dev, buf, sizeof(buf));
        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? 0 : -errno;
        r = print_events(buf, (size_t) n, wds, gone, nwds);
        return r < 0 ? r : 1;
}

/* Places the watches, prints events until told to stop, removes the watches. */
static int watch_paths(const char *prog, char **paths, int nwds, int *wds, bool *gone) {
        static const struct timespec no_wait = {0, 0};
        struct sigaction sa = {.sa_handler = on_signal};
        sigset_t block, unblocked;
        int dev, i, r;

        /* Blocked except inside pselect(); no SA_RESTART: it returns EINTR. */
        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &block, &unblocked) < 0 || sigaction(SIGINT, &sa, NULL) < 0 ||
            sigaction(SIGTERM, &sa, NULL) < 0) {
                fprintf(stderr, "%s: signals: %s\n", prog, strerror(errno));
                return 1;
        }

        dev = open("/dev/inotify", O_RDONLY | O_CLOEXEC);
        if (dev < 0) {
                fprintf(stderr, "%s: /dev/inotify: %s\n", prog, strerror(errno));
                return 1;
        }
        for (i = 0; i < nwds; i++) {
                /*
                 * The article opens the object O_RDONLY; an O_PATH fd does
                 * as well and opens nothing, so that placing a watch is not
                 * itself an event (IN_OPEN, IN_CLOSE_NOWRITE) in the output.
                 */
                int fd = open(paths[i], O_PATH | O_CLOEXEC);
                struct inotify_request request;

                if (fd < 0) {
                        fprintf(stderr, "%s: %s: %s\n", prog, paths[i], strerror(errno));
                        goto fail;
                }
                request.fd = fd;
                request.mask = IN_ALL_EVENTS;
                wds[i] = ioctl(dev, INOTIFY_WATCH, &request);
                r = errno;
                close(fd);
                if (wds[i] < 0) {
                        fprintf(stderr, "%s: INOTIFY_WATCH %s: %s\n", prog, paths[i], strerror(r));
                        goto fail;
                }
                fprintf(stderr, "watching %s as wd %d\n", paths[i], wds[i]);
        }
        fprintf(stderr, "ready\n");

        while (!stop) {
                r = read_events(dev, &unblocked, NULL, wds, gone, nwds);
                if (r < 0)
                        goto fail_read;
                /* Every watched object deleted or unmounted: nothing more can come. */
                for (i = 0; i < nwds && gone[i]; i++)
                        ;
                if (i == nwds)
                        break;
        }

        /* Remove every watch still there (by value, as the article does); each queues IN_IGNORED. */
        for (i = 0; i < nwds; i++) {
                if (gone[i])
                        continue;
                /* EINVAL: the same wd twice (one object, two paths), or it died meanwhile. */
                if (ioctl(dev, INOTIFY_IGNORE, wds[i]) < 0 && errno != EINVAL) {
                        fprintf(stderr, "%s: INOTIFY_IGNORE %d: %s\n", prog, wds[i], strerror(errno));
                        goto fail;
                }
        }
        /* Then print what is queued, up to those IN_IGNORED records. */
        do
                r = read_events(dev, &unblocked, &no_wait, wds, gone, nwds);
        while (r > 0);
        if (r < 0)
                goto fail_read;
        close(dev);
        return 0;

fail_read:
        fprintf(stderr, "%s: /dev/inotify: %s\n", prog, strerror(-r));
fail:
        close(dev);
        return 1;
}

int main(int argc, char **argv) {
        bool *gone;
        int *wds, r;

        if (argc < 2) {
                fprintf(stderr, "usage: %s PATH...\n", argv[0]);
                return 2;
        }
        /* Each event on its own line as it happens, also into a pipe or a file. */
        setvbuf(stdout, NULL, _IOLBF, 0);
        wds = calloc((size_t) argc - 1, sizeof(*wds));
        gone = calloc((size_t) argc - 1, sizeof(*gone));
        if (!wds || !gone) {
                fprintf(stderr, "%s: out of memory\n", argv[0]);
                r = 1;
        } else {
                r = watch_paths(argv[0], argv + 1, argc - 1, wds, gone);
        }
        free(wds);
        free(gone);
        return r;
}
