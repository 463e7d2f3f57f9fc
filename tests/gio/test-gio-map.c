/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-gio-map - watchd events to GFileMonitor events, by tables
 *
 * Each row: a monitor (directory, file, hard links; the daemon's
 * capabilities), one libwatchd event, and the calls to
 * g_file_monitor_source_handle_event() GLib's inotify backend would make
 * for the same kernel events (gio/inotify/inotify-helper.c, GLib 2.74).
 * The rows with WATCHD_CAPABILITY_REPORT_APPEARANCE are what the module
 * does with a watchd that reports a pending path's appearance (watchd(8),
 * MISSING PATHS), those without it what it does with an older one.
 */

#include <gio/gio.h>

#include "gwatchd-map.h"

#define D         "/d"
#define CREATED   G_FILE_MONITOR_EVENT_CREATED
#define CHANGED   G_FILE_MONITOR_EVENT_CHANGED
#define DONE      G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT
#define DELETED   G_FILE_MONITOR_EVENT_DELETED
#define ATTRIB    G_FILE_MONITOR_EVENT_ATTRIBUTE_CHANGED
#define RENAMED   G_FILE_MONITOR_EVENT_RENAMED
#define MOVED_IN  G_FILE_MONITOR_EVENT_MOVED_IN
#define MOVED_OUT G_FILE_MONITOR_EVENT_MOVED_OUT
#define UNMOUNTED G_FILE_MONITOR_EVENT_UNMOUNTED

typedef struct Expect {
        int event; /* -1 ends the list */
        const char *child;
        const char *rename_to;
        const char *other;
        gboolean done_unless_created;
        gboolean retarget;
} Expect;

typedef enum {
        DIR_MON,
        FILE_MON,
        HARD_LINKS
} Kind;

typedef struct Row {
        const char *name;
        Kind kind;
        WatchdCapabilities caps;
        gboolean file_sub; /* the event is the file's own subscription's (hard links) */
        gboolean name_linked;
        guint32 mask;
        const char *path, *new_path;
        Expect expect[3];
} Row;

#define END \
        { -1, NULL, NULL, NULL, FALSE, FALSE }

static const Row rows[] = {
        /* A directory monitor: its children, with their names. */
        { "create",
          DIR_MON,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_CREATE,
          D "/a",
          NULL,
          { { CREATED, "a", NULL, NULL, TRUE, FALSE }, END } },
        { "mkdir",
          DIR_MON,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_CREATE | WATCHD_EVENT_ISDIR,
          D "/sub",
          NULL,
          { { CREATED, "sub", NULL, NULL, TRUE, FALSE }, END } },
        { "modify", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_MODIFY, D "/a", NULL, { { CHANGED, "a" }, END } },
        /* Found by watchd's polling (issue 17), or by the module comparing
         * the directory with what it reported (issue 26): events all the
         * same. Before issue 26 these fell through the switch, dropped. */
        { "polled-create",
          DIR_MON,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_CREATE | WATCHD_EVENT_POLLED,
          D "/a",
          NULL,
          { { CREATED, "a", NULL, NULL, TRUE, FALSE }, END } },
        { "rescanned-delete",
          DIR_MON,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_DELETE | WATCHD_EVENT_RESCANNED,
          D "/a",
          NULL,
          { { DELETED, "a" }, END } },
        { "rescanned-modify",
          FILE_MON,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_MODIFY | WATCHD_EVENT_RESCANNED,
          D "/f",
          NULL,
          { { CHANGED, "f" }, END } },
        { "rescanned-rename",
          DIR_MON,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_MOVED_FROM | WATCHD_EVENT_MOVED_TO | WATCHD_EVENT_RESCANNED,
          D "/a",
          D "/b",
          { { RENAMED, "a", "b" }, END } },
        { "close-write", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_CLOSE_WRITE, D "/a", NULL, { { DONE, "a" }, END } },
        { "attrib", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_ATTRIB, D "/a", NULL, { { ATTRIB, "a" }, END } },
        { "delete", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_DELETE, D "/a", NULL, { { DELETED, "a" }, END } },
        /* Renames: in the directory, out of it, into it, halves alone. */
        { "rename", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_MOVE, D "/a", D "/b", { { RENAMED, "a", "b" }, END } },
        { "move-out", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_MOVE, D "/a", "/e/a", { { MOVED_OUT, "a", NULL, "/e/a" }, END } },
        { "move-in",
          DIR_MON,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_MOVE | WATCHD_EVENT_ISDIR,
          "/e/x",
          D "/y",
          { { MOVED_IN, "y", NULL, "/e/x" }, END } },
        { "moved-from-alone", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_MOVED_FROM, D "/a", NULL, { { MOVED_OUT, "a" }, END } },
        { "moved-to-alone", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_MOVED_TO, D "/a", NULL, { { MOVED_IN, "a" }, END } },
        { "rename-elsewhere", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_MOVE, "/e/a", "/e/b", { END } },
        /* The directory itself. */
        { "delete-self",
          DIR_MON,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_DELETE_SELF | WATCHD_EVENT_ISDIR,
          D,
          NULL,
          { { DELETED, NULL }, END } },
        { "unmount", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_UNMOUNT, D, NULL, { { UNMOUNTED, NULL }, END } },
        /* Renamed away (PERSIST): GLib's backend says DELETED for IN_MOVE_SELF. */
        { "move-self",
          DIR_MON,
          WATCHD_CAPABILITY_PERSISTENT,
          FALSE,
          TRUE,
          WATCHD_EVENT_MOVE_SELF,
          D,
          NULL,
          { { DELETED, NULL }, END } },
        { "ignored", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_IGNORED, D, NULL, { END } },
        { "grandchild", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_CREATE, D "/sub/x", NULL, { END } },
        { "dot-dot", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_CREATE, D "/..", NULL, { END } },
        /* Appearance of the watched directory: nothing from a watchd that
         * does not report it; from one that does, what
         * ih_not_missing_callback says. */
        { "appeared-not-reported", DIR_MON, 0, FALSE, TRUE, WATCHD_EVENT_CREATE | WATCHD_EVENT_ISDIR, D, NULL, { END } },
        { "appeared-dir-monitor",
          DIR_MON,
          WATCHD_CAPABILITY_REPORT_APPEARANCE,
          FALSE,
          TRUE,
          WATCHD_EVENT_CREATE | WATCHD_EVENT_ISDIR,
          D,
          NULL,
          { { CREATED, NULL }, { DONE, NULL }, END } },
        { "appeared-file-monitor",
          FILE_MON,
          WATCHD_CAPABILITY_REPORT_APPEARANCE,
          FALSE,
          TRUE,
          WATCHD_EVENT_CREATE | WATCHD_EVENT_ISDIR,
          D,
          NULL,
          { { CREATED, "f" }, { DONE, "f" }, END } },
        /* A file monitor: the directory's events (GLib keeps the name's). */
        { "file-monitor-other-name",
          FILE_MON,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_CREATE,
          D "/g",
          NULL,
          { { CREATED, "g", NULL, NULL, TRUE, FALSE }, END } },
        /* Hard links: the name's events from the directory (writes come from
         * the file itself), other names dropped; a new file under the name
         * is followed. */
        { "hl-other-name", HARD_LINKS, 0, FALSE, TRUE, WATCHD_EVENT_CREATE, D "/f2", NULL, { END } },
        { "hl-create",
          HARD_LINKS,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_CREATE,
          D "/f",
          NULL,
          { { CREATED, "f", NULL, NULL, TRUE, TRUE }, END } },
        { "hl-renamed-over",
          HARD_LINKS,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_MOVE,
          D "/.tmp",
          D "/f",
          { { RENAMED, ".tmp", "f", NULL, FALSE, TRUE }, END } },
        { "hl-renamed-away",
          HARD_LINKS,
          0,
          FALSE,
          TRUE,
          WATCHD_EVENT_MOVE,
          D "/f",
          D "/g",
          { { RENAMED, "f", "g", NULL, FALSE, FALSE }, END } },
        { "hl-rename-others", HARD_LINKS, 0, FALSE, TRUE, WATCHD_EVENT_MOVE, D "/x", D "/y", { END } },
        { "hl-file-modify", HARD_LINKS, 0, TRUE, TRUE, WATCHD_EVENT_MODIFY, D "/f", NULL, { { CHANGED, "f" }, END } },
        { "hl-file-close", HARD_LINKS, 0, TRUE, TRUE, WATCHD_EVENT_CLOSE_WRITE, D "/f", NULL, { { DONE, "f" }, END } },
        /* DELETE_SELF comes before the directory's DELETE of the same
         * unlink: while the name links the file, the DELETE says it. */
        { "hl-file-deleted-by-name", HARD_LINKS, 0, TRUE, TRUE, WATCHD_EVENT_DELETE_SELF, D "/f", NULL, { END } },
        { "hl-file-deleted-by-other-link",
          HARD_LINKS,
          0,
          TRUE,
          FALSE,
          WATCHD_EVENT_DELETE_SELF,
          D "/f",
          NULL,
          { { DELETED, "f" }, END } },
};

static void test_row(gconstpointer data) {
        const Row *row = data;
        GWatchdTarget t = {
                .dirname = D,
                .basename = row->kind == DIR_MON ? NULL : "f",
                .hard_links = row->kind == HARD_LINKS,
                .caps = row->caps,
        };
        g_autoptr(WatchdEvent) e = NULL;
        g_autoptr(GArray) actions = g_array_new(FALSE, TRUE, sizeof(GWatchdAction));
        guint n = 0;

        g_array_set_clear_func(actions, (GDestroyNotify) gwatchd_action_clear);
        e = watchd_event_new(row->mask, row->mask & WATCHD_EVENT_MOVE ? 7 : 0, row->path, row->new_path);
        if (row->file_sub)
                gwatchd_map_file_event(&t, e, row->name_linked, actions);
        else
                gwatchd_map_dir_event(&t, e, actions);

        for (; row->expect[n].event != -1; n++) {
                const Expect *x = &row->expect[n];
                const GWatchdAction *a;

                g_assert_cmpuint(n, <, actions->len);
                a = &g_array_index(actions, GWatchdAction, n);
                g_assert_cmpint(a->event, ==, x->event);
                g_assert_cmpstr(a->child, ==, x->child);
                g_assert_cmpstr(a->rename_to, ==, x->rename_to);
                g_assert_cmpstr(a->other, ==, x->other);
                g_assert_cmpint(a->done_unless_created, ==, x->done_unless_created);
                g_assert_cmpint(a->retarget, ==, x->retarget);
        }
        g_assert_cmpuint(actions->len, ==, n);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
                g_autofree char *name = g_strdup_printf("/gio-map/%s", rows[i].name);

                g_test_add_data_func(name, &rows[i], test_row);
        }
        return g_test_run();
}
