/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loop - the manager on sd-event
 *
 * Priorities: the kernel fd, the bus and the signals share the normal
 * priority, and sd-event serves the one that has been pending longest, so
 * they take turns. The backlog of a read and the walks are defer sources,
 * which stay pending once enabled: below the others, or they would starve
 * them.
 *
 * After each dispatch, whatever it was, what it queued goes out and the
 * timer is set: in the timer's prepare callback, which sd-event runs before
 * it next polls, in every iteration. (A post source did that before, in an
 * iteration of its own: an epoll_wait() and a gettid() more for each
 * dispatch, two system calls of the seven a wake-up of a storm cost.) So
 * the timer is always enabled, at UINT64_MAX when nothing waits, and its
 * priority is above the bus's: sd-event runs prepare callbacks by priority,
 * and sd-bus's own, which asks epoll for room to write when messages wait,
 * must see the messages this flush queued.
 *
 * A turn of the kernel fd (or the fanotify group's) that read its queue
 * empty lets it rest (manager_read_pause_usec()): a record that comes within
 * the rest wakes the loop, which then turns the fd off until the rest ends
 * and reads what gathered meanwhile at once. One after the rest is read at
 * once, at no cost: no timer is armed for a record that does not come.
 */

#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "loop.h"
#include "macro.h"

/* A slice of the RECURSIVE walks and pending-path descents, between two looks at the kernel and the bus. */
#define WALK_SLICE_USEC 5000u

/* An fd read in turns, which rests after a turn that read its queue empty. */
typedef struct Rested {
        sd_event_source *io;    /* the fd */
        sd_event_source *timer; /* the end of its rest, while it is off */
        uint64_t until;         /* not read before (CLOCK_MONOTONIC µs) */
} Rested;

struct Loop {
        Manager *manager;
        Rested kernel;                 /* the kernel fd */
        sd_event_source *backlog;      /* what is left of a read */
        Rested fanotify;               /* the fanotify group's fd, if any */
        sd_event_source *fan_backlog;  /* what is left of its read */
        sd_event_source *timer;        /* the earliest pairing deadline, or a retry; before each poll: flush, arm */
        sd_event_source *walker;       /* walks and descents */
        uint64_t armed;                /* the timer's time, UINT64_MAX: none */
        sd_event_source *fswork;       /* completions of file system work in workers */
        sd_event_source *fswork_timer; /* a job's deadline */
        uint64_t fswork_armed;
};

static int on_fswork(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;

        fswork_dispatch(manager_get_fswork(l->manager));
        return 0;
}

static int on_fswork_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        Loop *l = userdata;

        l->fswork_armed = UINT64_MAX;
        fswork_check(manager_get_fswork(l->manager), usec);
        return 0;
}

/* The timer of the jobs' deadlines, at the earliest one. */
static void fswork_arm(Loop *l) {
        FsWork *w = manager_get_fswork(l->manager);
        uint64_t next;
        int r;

        if (!w)
                return;
        next = fswork_next_deadline(w);
        if (next == l->fswork_armed)
                return;
        if (next == UINT64_MAX)
                r = sd_event_source_set_enabled(l->fswork_timer, SD_EVENT_OFF);
        else {
                r = sd_event_source_set_time(l->fswork_timer, next);
                if (r >= 0)
                        r = sd_event_source_set_enabled(l->fswork_timer, SD_EVENT_ONESHOT);
        }
        if (r < 0)
                log_warning_errno(r, "Failed to arm the file system deadline timer, ignoring: %m");
        else
                l->fswork_armed = next;
}

static void backlog_set(Loop *l, bool on) {
        int r = sd_event_source_set_enabled(l->backlog, on ? SD_EVENT_ON : SD_EVENT_OFF);

        if (r < 0)
                log_warning_errno(r, "Failed to set the kernel backlog source, ignoring: %m");
}

/* Whether r's fd may be read now; if not, it is off until its rest ends
 * (its timer turns it on again: on_rest_end()). */
static bool rest_over(Rested *r) {
        int k;

        if (now_usec() >= r->until)
                return true;
        k = sd_event_source_set_enabled(r->io, SD_EVENT_OFF);
        if (k >= 0)
                k = sd_event_source_set_time(r->timer, r->until);
        if (k >= 0)
                k = sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT);
        if (k < 0) {
                log_warning_errno(k, "Failed to let an fd rest, reading it now: %m");
                (void) sd_event_source_set_enabled(r->io, SD_EVENT_ON);
                return true;
        }
        return false;
}

/* A turn of r's fd read its queue empty: it rests. */
static void rest_start(Loop *l, Rested *r) {
        r->until = now_usec() + manager_read_pause_usec(l->manager);
}

static int on_rest_end(sd_event_source *source, uint64_t usec, void *userdata) {
        Rested *r = userdata;
        int k = sd_event_source_set_enabled(r->io, SD_EVENT_ON);

        if (k < 0)
                log_warning_errno(k, "Failed to turn an fd on after its rest, ignoring: %m");
        return 0;
}

/* r's timer, off: armed only when a record comes while r's fd rests. */
static int rested_add_timer(sd_event *event, Rested *r, const char *description) {
        int k = sd_event_add_time(event, &r->timer, CLOCK_MONOTONIC, UINT64_MAX, /* accuracy= */ 1, on_rest_end, r);

        if (k < 0)
                return k;
        (void) sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(r->timer, description);
        return 0;
}

/* A turn of the kernel fd: a slice; what is left of its read, or a rest. */
static void kernel_turn(Loop *l) {
        if (manager_on_kernel_readable(l->manager))
                return backlog_set(l, true);
        backlog_set(l, false);
        rest_start(l, &l->kernel);
}

static int on_kernel(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;

        if (rest_over(&l->kernel))
                kernel_turn(l);
        return 0;
}

static int on_backlog(sd_event_source *source, void *userdata) {
        kernel_turn(userdata);
        return 0;
}

static void fan_backlog_set(Loop *l, bool on) {
        int r = sd_event_source_set_enabled(l->fan_backlog, on ? SD_EVENT_ON : SD_EVENT_OFF);

        if (r < 0)
                log_warning_errno(r, "Failed to set the fanotify backlog source, ignoring: %m");
}

/* A turn of the group: a slice; what is left of its read, or a rest. The
 * mark sees the whole file system, whose small writes, most often outside
 * every subscription, would otherwise wake the daemon for each. */
static void fanotify_turn(Loop *l) {
        if (manager_on_fanotify_readable(l->manager))
                return fan_backlog_set(l, true);
        fan_backlog_set(l, false);
        rest_start(l, &l->fanotify);
}

static int on_fanotify(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Loop *l = userdata;

        if (rest_over(&l->fanotify))
                fanotify_turn(l);
        return 0;
}

static int on_fan_backlog(sd_event_source *source, void *userdata) {
        fanotify_turn(userdata);
        return 0;
}

static void timer_set(Loop *l, uint64_t next) {
        int r = sd_event_source_set_time(l->timer, next);

        if (r < 0)
                log_warning_errno(r, "Failed to arm the pairing timer, ignoring: %m");
        else
                l->armed = next;
}

static int on_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        Loop *l = userdata;

        /* Not again until on_prepare() says when. */
        timer_set(l, UINT64_MAX);
        backlog_set(l, manager_on_deadline(l->manager));
        return 0;
}

static int on_walker(sd_event_source *source, void *userdata) {
        Loop *l = userdata;

        if (!manager_run_walks(l->manager, WALK_SLICE_USEC))
                (void) sd_event_source_set_enabled(l->walker, SD_EVENT_OFF);
        return 0;
}

/* Before each poll, so after any dispatch: what it queued goes out, and the loop learns what the core waits for. */
static int on_prepare(sd_event_source *source, void *userdata) {
        Loop *l = userdata;
        uint64_t next;
        int r;

        manager_flush(l->manager);
        next = manager_next_deadline(l->manager);
        if (next != l->armed)
                timer_set(l, next);
        if (manager_has_walks(l->manager)) {
                r = sd_event_source_set_enabled(l->walker, SD_EVENT_ON);
                if (r < 0)
                        log_warning_errno(r, "Failed to start the walker, ignoring: %m");
        }
        fswork_arm(l);
        return 0;
}

Loop *loop_free(Loop *l) {
        if (!l)
                return NULL;
        sd_event_source_disable_unref(l->kernel.timer);
        sd_event_source_disable_unref(l->kernel.io);
        sd_event_source_disable_unref(l->backlog);
        sd_event_source_disable_unref(l->fanotify.timer);
        sd_event_source_disable_unref(l->fanotify.io);
        sd_event_source_disable_unref(l->fan_backlog);
        sd_event_source_disable_unref(l->timer);
        sd_event_source_disable_unref(l->walker);
        sd_event_source_disable_unref(l->fswork);
        sd_event_source_disable_unref(l->fswork_timer);
        free(l);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Loop *, loop_free);

int loop_new(sd_event *event, Manager *m, Loop **ret) {
        _cleanup_(loop_freep) Loop *l = NULL;
        int r;

        l = calloc(1, sizeof(Loop));
        if (!l)
                return -ENOMEM;
        l->manager = m;
        l->armed = UINT64_MAX;

        r = sd_event_add_io(event, &l->kernel.io, manager_kernel_fd(m), EPOLLIN, on_kernel, l);
        if (r >= 0)
                r = rested_add_timer(event, &l->kernel, "kernel-rest");
        if (r < 0)
                return log_error_errno(r, "Failed to watch the kernel fd: %m");
        (void) sd_event_source_set_description(l->kernel.io, "kernel");

        /* Enabled while a turn of the kernel fd left records of a read. */
        r = sd_event_add_defer(event, &l->backlog, on_backlog, l);
        if (r >= 0)
                r = sd_event_source_set_priority(l->backlog, SD_EVENT_PRIORITY_NORMAL + 5);
        if (r < 0)
                return log_error_errno(r, "Failed to add the kernel backlog source: %m");
        (void) sd_event_source_set_enabled(l->backlog, SD_EVENT_OFF);
        (void) sd_event_source_set_description(l->backlog, "kernel-backlog");

        /* The fanotify group, at the kernel fd's priority, with its own backlog source. */
        if (manager_fanotify_fd(m) >= 0) {
                r = sd_event_add_io(event, &l->fanotify.io, manager_fanotify_fd(m), EPOLLIN, on_fanotify, l);
                if (r >= 0)
                        r = rested_add_timer(event, &l->fanotify, "fanotify-rest");
                if (r < 0)
                        return log_error_errno(r, "Failed to watch the fanotify fd: %m");
                (void) sd_event_source_set_description(l->fanotify.io, "fanotify");
                r = sd_event_add_defer(event, &l->fan_backlog, on_fan_backlog, l);
                if (r >= 0)
                        r = sd_event_source_set_priority(l->fan_backlog, SD_EVENT_PRIORITY_NORMAL + 5);
                if (r < 0)
                        return log_error_errno(r, "Failed to add the fanotify backlog source: %m");
                (void) sd_event_source_set_enabled(l->fan_backlog, SD_EVENT_OFF);
                (void) sd_event_source_set_description(l->fan_backlog, "fanotify-backlog");
        }

        /* Due only while a client's queue waits for the partner of a rename, or a congested
         * bus; UINT64_MAX otherwise, which sd-event never dispatches (sd_event_add_time(3)). */
        r = sd_event_add_time(event, &l->timer, CLOCK_MONOTONIC, UINT64_MAX, /* accuracy= */ 1, on_timer, l);
        if (r >= 0)
                r = sd_event_source_set_priority(l->timer, SD_EVENT_PRIORITY_IMPORTANT);
        if (r >= 0)
                r = sd_event_source_set_prepare(l->timer, on_prepare);
        if (r >= 0)
                r = sd_event_source_set_enabled(l->timer, SD_EVENT_ON); /* a time source is made ONESHOT */
        if (r < 0)
                return log_error_errno(r, "Failed to add the pairing timer: %m");
        (void) sd_event_source_set_description(l->timer, "move-pairing");

        /* Enabled only while a walk or a descent is in progress. */
        r = sd_event_add_defer(event, &l->walker, on_walker, l);
        if (r >= 0)
                r = sd_event_source_set_priority(l->walker, SD_EVENT_PRIORITY_NORMAL + 10);
        if (r < 0)
                return log_error_errno(r, "Failed to add the walker: %m");
        (void) sd_event_source_set_enabled(l->walker, SD_EVENT_OFF);
        (void) sd_event_source_set_description(l->walker, "tree-walker");

        if (manager_get_fswork(m)) {
                r = sd_event_add_io(event, &l->fswork, fswork_fd(manager_get_fswork(m)), EPOLLIN, on_fswork, l);
                if (r < 0)
                        return log_error_errno(r, "Failed to watch the file system workers: %m");
                (void) sd_event_source_set_description(l->fswork, "fswork");
                r = sd_event_add_time(event, &l->fswork_timer, CLOCK_MONOTONIC, UINT64_MAX, /* accuracy= */ 100000,
                                      on_fswork_timer, l);
                if (r < 0)
                        return log_error_errno(r, "Failed to add the file system deadline timer: %m");
                (void) sd_event_source_set_enabled(l->fswork_timer, SD_EVENT_OFF);
                (void) sd_event_source_set_description(l->fswork_timer, "fswork-deadline");
        }
        l->fswork_armed = UINT64_MAX;

        *ret = TAKE_PTR(l);
        return 0;
}
