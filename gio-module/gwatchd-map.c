/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gwatchd-map - watchd's events as GLib's inotify backend reports them
 * (see gwatchd-map.h)
 */

#include <string.h>

#include "gwatchd-map.h"

void gwatchd_action_clear(GWatchdAction *a) {
        g_free(a->child);
        g_free(a->rename_to);
        g_free(a->other);
}

/* The name of path in dir, if path is a child of dir ("/d/x" in "/d": "x"). */
static char *name_in_dir(const char *dir, const char *path) {
        size_t n = strlen(dir);
        const char *name;

        if (strncmp(path, dir, n) != 0)
                return NULL;
        if (n == 1 && dir[0] == '/')
                name = path + 1;
        else if (path[n] == '/')
                name = path + n + 1;
        else
                return NULL;
        /* GLib asserts that a child is a plain name. */
        if (!*name || strchr(name, '/') || g_str_equal(name, ".") || g_str_equal(name, ".."))
                return NULL;
        return g_strdup(name);
}

static void push(GArray *actions, GFileMonitorEvent event, const char *child, const char *rename_to, const char *other) {
        GWatchdAction a = {
                .event = event,
                .child = g_strdup(child),
                .rename_to = g_strdup(rename_to),
                .other = g_strdup(other),
        };

        g_array_append_val(actions, a);
}

static GWatchdAction *last(GArray *actions) {
        return &g_array_index(actions, GWatchdAction, actions->len - 1);
}

void gwatchd_map_dir_event(const GWatchdTarget *t, const WatchdEvent *e, GArray *actions) {
        guint32 mask = watchd_event_get_mask(e) & ~GWATCHD_NOT_EVENT_BITS;
        const char *path = watchd_event_get_path(e);
        g_autofree char *child = NULL;

        if (watchd_event_is_rename(e)) {
                const char *new_path = watchd_event_get_new_path(e);
                g_autofree char *from = name_in_dir(t->dirname, path);
                g_autofree char *to = name_in_dir(t->dirname, new_path);
                gboolean to_name = t->basename && g_strcmp0(to, t->basename) == 0;

                if (t->hard_links && g_strcmp0(from, t->basename) != 0 && !to_name)
                        return;
                /* ih_event_callback: a pair in one directory is RENAMED; a
                 * pair across directories is MOVED_OUT on one side and
                 * MOVED_IN on the other, each with the other end. */
                if (from && to)
                        push(actions, G_FILE_MONITOR_EVENT_RENAMED, from, to, NULL);
                else if (from)
                        push(actions, G_FILE_MONITOR_EVENT_MOVED_OUT, from, NULL, new_path);
                else if (to)
                        push(actions, G_FILE_MONITOR_EVENT_MOVED_IN, to, NULL, path);
                else
                        return;
                last(actions)->retarget = t->hard_links && to_name;
                return;
        }

        if (g_str_equal(path, t->dirname)) {
                /* The watched directory itself. Renamed away (a PERSIST
                 * subscription's MOVE_SELF) is DELETED, as GLib's backend
                 * says for IN_MOVE_SELF (ih_mask_to_EventFlags). */
                if (mask & (WATCHD_EVENT_DELETE_SELF | WATCHD_EVENT_MOVE_SELF))
                        push(actions, G_FILE_MONITOR_EVENT_DELETED, NULL, NULL, NULL);
                else if (mask & WATCHD_EVENT_UNMOUNT)
                        push(actions, G_FILE_MONITOR_EVENT_UNMOUNTED, NULL, NULL, NULL);
                else if ((mask & WATCHD_EVENT_CREATE) && (t->caps & WATCHD_CAPABILITY_REPORT_APPEARANCE)) {
                        /* The directory appeared (a watchd that reports it,
                         * "report-appearance", watchd(8) MISSING PATHS): what
                         * ih_not_missing_callback says when a missing
                         * directory can be watched, for the monitor's name
                         * (NULL: the directory itself). */
                        push(actions, G_FILE_MONITOR_EVENT_CREATED, t->basename, NULL, NULL);
                        push(actions, G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT, t->basename, NULL, NULL);
                }
                return;
        }

        child = name_in_dir(t->dirname, path);
        if (!child || (t->hard_links && g_strcmp0(child, t->basename) != 0))
                return;
        /* ih_mask_to_EventFlags: one event bit a record. */
        switch (mask) {
        case WATCHD_EVENT_MODIFY:
                push(actions, G_FILE_MONITOR_EVENT_CHANGED, child, NULL, NULL);
                break;
        case WATCHD_EVENT_CLOSE_WRITE:
                push(actions, G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT, child, NULL, NULL);
                break;
        case WATCHD_EVENT_ATTRIB:
                push(actions, G_FILE_MONITOR_EVENT_ATTRIBUTE_CHANGED, child, NULL, NULL);
                break;
        case WATCHD_EVENT_DELETE:
                push(actions, G_FILE_MONITOR_EVENT_DELETED, child, NULL, NULL);
                break;
        case WATCHD_EVENT_CREATE:
                push(actions, G_FILE_MONITOR_EVENT_CREATED, child, NULL, NULL);
                last(actions)->done_unless_created = TRUE;
                last(actions)->retarget = t->hard_links;
                break;
        case WATCHD_EVENT_MOVED_FROM:
                /* A half whose partner is not watched: moved out to nowhere known. */
                push(actions, G_FILE_MONITOR_EVENT_MOVED_OUT, child, NULL, NULL);
                break;
        case WATCHD_EVENT_MOVED_TO:
                push(actions, G_FILE_MONITOR_EVENT_MOVED_IN, child, NULL, NULL);
                last(actions)->retarget = t->hard_links;
                break;
        default:
                break;
        }
}

void gwatchd_map_file_event(const GWatchdTarget *t, const WatchdEvent *e, gboolean name_linked, GArray *actions) {
        switch (watchd_event_get_mask(e) & ~GWATCHD_NOT_EVENT_BITS) {
        case WATCHD_EVENT_MODIFY:
                push(actions, G_FILE_MONITOR_EVENT_CHANGED, t->basename, NULL, NULL);
                break;
        case WATCHD_EVENT_CLOSE_WRITE:
                push(actions, G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT, t->basename, NULL, NULL);
                break;
        case WATCHD_EVENT_DELETE_SELF:
                if (!name_linked)
                        push(actions, G_FILE_MONITOR_EVENT_DELETED, t->basename, NULL, NULL);
                break;
        default:
                break;
        }
}
