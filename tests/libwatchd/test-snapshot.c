/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-snapshot - WatchdSnapshot on real files, no daemon
 *
 * Each case makes a directory, scans it, changes it (with or without
 * telling the snapshot, as events would), and checks what
 * watchd_snapshot_rescan() reports: the differences as events marked
 * RESCANNED, in their order (renames, deletions deepest first, creations
 * shallowest first, changes), and nothing the snapshot was told about.
 * The expected events are written as lines "EVENTS path [-> new_path]",
 * paths relative to the case's directory.
 */

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include <watchd.h>

typedef struct Fixture {
        char *dir;
} Fixture;

static void setup(Fixture *f, gconstpointer data) {
        g_autoptr(GError) error = NULL;

        f->dir = g_dir_make_tmp("snapshot-XXXXXX", &error);
        g_assert_no_error(error);
}

static void remove_tree(const char *path) {
        GDir *d = g_dir_open(path, 0, NULL);
        const char *name;

        if (d) {
                while ((name = g_dir_read_name(d))) {
                        g_autofree char *p = g_build_filename(path, name, NULL);
                        struct stat sb;

                        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
                                remove_tree(p);
                        else
                                g_unlink(p);
                }
                g_dir_close(d);
        }
        g_rmdir(path);
}

static void teardown(Fixture *f, gconstpointer data) {
        remove_tree(f->dir);
        g_free(f->dir);
}

static char *in(Fixture *f, const char *rel) {
        return *rel ? g_build_filename(f->dir, rel, NULL) : g_strdup(f->dir);
}

static void write_file(Fixture *f, const char *rel, const char *text) {
        g_autofree char *p = in(f, rel);
        g_autoptr(GError) error = NULL;

        g_assert_true(g_file_set_contents(p, text, -1, &error));
        g_assert_no_error(error);
}

/* Appends to a file without changing its size class: a write mtime sees. */
static void append(Fixture *f, const char *rel, const char *text) {
        g_autofree char *p = in(f, rel);
        int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
        struct timespec later[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
        struct stat sb;

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, text, strlen(text)), ==, (ssize_t) strlen(text));
        /* mtime one second on, whatever the clock's granularity. */
        g_assert_cmpint(fstat(fd, &sb), ==, 0);
        later[1].tv_sec = sb.st_mtim.tv_sec + 1;
        g_assert_cmpint(futimens(fd, later), ==, 0);
        close(fd);
}

static void make_dir(Fixture *f, const char *rel) {
        g_autofree char *p = in(f, rel);

        g_assert_cmpint(g_mkdir(p, 0755), ==, 0);
}

static void rename_rel(Fixture *f, const char *from, const char *to) {
        g_autofree char *a = in(f, from), *b = in(f, to);

        g_assert_cmpint(g_rename(a, b), ==, 0);
}

static void unlink_rel(Fixture *f, const char *rel) {
        g_autofree char *p = in(f, rel);

        g_assert_cmpint(g_unlink(p), ==, 0);
}

static WatchdEvent *event(Fixture *f, WatchdEventMask mask, const char *rel, const char *new_rel) {
        g_autofree char *p = in(f, rel), *q = new_rel ? in(f, new_rel) : NULL;

        return watchd_event_new(mask, 0, p, q);
}

static void note(WatchdSnapshot *s, Fixture *f, WatchdEventMask mask, const char *rel, const char *new_rel) {
        g_autoptr(WatchdEvent) e = event(f, mask, rel, new_rel);

        watchd_snapshot_note_event(s, e);
}

/* The rescan's events as lines, relative to the case's directory. */
static char *rescan_lines(WatchdSnapshot *s, Fixture *f) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) events = watchd_snapshot_rescan(s, &error);
        GString *out = g_string_new(NULL);
        size_t n = strlen(f->dir);

        g_assert_no_error(error);
        g_assert_nonnull(events);
        for (guint i = 0; i < events->len; i++) {
                WatchdEvent *e = events->pdata[i];
                guint32 mask = watchd_event_get_mask(e);
                g_autofree char *names = NULL;
                const char *path = watchd_event_get_path(e), *new_path = watchd_event_get_new_path(e);
                const char *bits[] = { "MODIFY", "ATTRIB", "CLOSE_WRITE", "MOVED_FROM", "MOVED_TO",
                                       "CREATE", "DELETE", "DELETE_SELF", "ISDIR" };
                const guint32 values[] = { WATCHD_EVENT_MODIFY,     WATCHD_EVENT_ATTRIB,      WATCHD_EVENT_CLOSE_WRITE,
                                           WATCHD_EVENT_MOVED_FROM, WATCHD_EVENT_MOVED_TO,    WATCHD_EVENT_CREATE,
                                           WATCHD_EVENT_DELETE,     WATCHD_EVENT_DELETE_SELF, WATCHD_EVENT_ISDIR };
                g_autoptr(GStrvBuilder) b = g_strv_builder_new();
                g_auto(GStrv) v = NULL;

                g_assert_true(mask & WATCHD_EVENT_RESCANNED);
                g_assert_cmpuint(watchd_event_get_cookie(e), ==, 0);
                for (size_t j = 0; j < G_N_ELEMENTS(bits); j++)
                        if (mask & values[j])
                                g_strv_builder_add(b, bits[j]);
                v = g_strv_builder_end(b);
                names = g_strjoinv(",", v);
                g_assert_true(g_str_has_prefix(path, f->dir));
                g_string_append_printf(out, "%s %s", names, path[n] ? path + n + 1 : ".");
                if (new_path)
                        g_string_append_printf(out, " -> %s", new_path + n + 1);
                g_string_append_c(out, '\n');
        }
        return g_string_free(out, FALSE);
}

static void assert_rescan(WatchdSnapshot *s, Fixture *f, const char *want) {
        g_autofree char *got = rescan_lines(s, f);

        if (!g_str_equal(got, want))
                g_error("rescan said:\n%swanted:\n%s", got, want);
        /* Now it knows: a second rescan has nothing to say. */
        g_free(got);
        got = rescan_lines(s, f);
        g_assert_cmpstr(got, ==, "");
}

static WatchdSnapshot *scanned(Fixture *f, const char *rel, gboolean recursive) {
        g_autofree char *p = in(f, rel);
        g_autoptr(GError) error = NULL;
        WatchdSnapshot *s = watchd_snapshot_new(p, recursive);

        g_assert_false(watchd_snapshot_is_known(s));
        g_assert_true(watchd_snapshot_scan(s, &error));
        g_assert_no_error(error);
        g_assert_true(watchd_snapshot_is_known(s));
        return s;
}

/* ------------------------------------------------------------------------ */

/* What changed unseen, each kind once. */
static void test_differences(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSnapshot) s = NULL;
        g_autofree char *gone = in(f, "gone"), *chmodded = in(f, "chmodded");

        write_file(f, "kept", "k");
        write_file(f, "gone", "g");
        write_file(f, "written", "w");
        write_file(f, "chmodded", "c");
        write_file(f, "renamed", "r");
        write_file(f, "replaced", "1");
        make_dir(f, "d");
        s = scanned(f, "", FALSE);
        g_assert_cmpuint(watchd_snapshot_get_n_entries(s), ==, 7);
        assert_rescan(s, f, "");

        g_assert_cmpint(g_unlink(gone), ==, 0);
        write_file(f, "new", "n");
        append(f, "written", "more");
        g_assert_cmpint(g_chmod(chmodded, 0600), ==, 0);
        rename_rel(f, "renamed", "renamed-to");
        /* Another file under the name (a new inode: made before the old
         * one went, so that its number cannot be reused). */
        write_file(f, "replacement", "2");
        rename_rel(f, "replacement", "replaced");
        make_dir(f, "newdir");
        assert_rescan(s, f,
                      "MOVED_FROM,MOVED_TO renamed -> renamed-to\n"
                      "DELETE gone\n"
                      "DELETE replaced\n"
                      "CREATE new\n"
                      "CREATE,ISDIR newdir\n"
                      "CREATE replaced\n"
                      "ATTRIB chmodded\n"
                      "MODIFY written\n"
                      "CLOSE_WRITE written\n");
}

/* A rename over a name says the old one went (as inotify's MOVED_TO over
 * it does); a name renamed away and made again is both. */
static void test_rename_over(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSnapshot) s = NULL;

        write_file(f, "a", "a");
        write_file(f, "b", "b");
        write_file(f, "c", "c");
        s = scanned(f, "", FALSE);
        rename_rel(f, "a", "b");
        assert_rescan(s, f, "MOVED_FROM,MOVED_TO a -> b\n");
        rename_rel(f, "c", "c2");
        write_file(f, "c", "new c");
        assert_rescan(s, f, "MOVED_FROM,MOVED_TO c -> c2\nCREATE c\n");
}

/* What the snapshot was told (as events would) is not said again. */
static void test_noted(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSnapshot) s = NULL;

        write_file(f, "a", "a");
        write_file(f, "b", "b");
        write_file(f, "c", "c");
        s = scanned(f, "", FALSE);

        write_file(f, "new", "n");
        note(s, f, WATCHD_EVENT_CREATE, "new", NULL);
        unlink_rel(f, "a");
        note(s, f, WATCHD_EVENT_DELETE, "a", NULL);
        rename_rel(f, "b", "b2");
        note(s, f, WATCHD_EVENT_MOVED_FROM | WATCHD_EVENT_MOVED_TO, "b", "b2");
        append(f, "c", "more");
        note(s, f, WATCHD_EVENT_MODIFY, "c", NULL);
        /* Events outside, and those it made itself, change nothing. */
        {
                g_autoptr(WatchdEvent) outside = watchd_event_new(WATCHD_EVENT_DELETE, 0, "/elsewhere/c", NULL);
                g_autoptr(WatchdEvent) own = event(f, WATCHD_EVENT_DELETE | WATCHD_EVENT_RESCANNED, "c", NULL);

                watchd_snapshot_note_event(s, outside);
                watchd_snapshot_note_event(s, own);
        }
        assert_rescan(s, f, "");

        /* Made and gone before the event was handled: its stat fails, the
         * event says it is there; the rescan finds it gone. */
        note(s, f, WATCHD_EVENT_CREATE, "ephemeral", NULL);
        assert_rescan(s, f, "DELETE ephemeral\n");
        /* A rename into the directory from elsewhere, noted. */
        {
                g_autofree char *outside = g_strconcat(f->dir, "-outside", NULL);
                g_autofree char *inside = in(f, "moved-in");
                g_autoptr(WatchdEvent) e = NULL;

                g_assert_true(g_file_set_contents(outside, "x", -1, NULL));
                g_assert_cmpint(g_rename(outside, inside), ==, 0);
                e = watchd_event_new(WATCHD_EVENT_MOVED_FROM | WATCHD_EVENT_MOVED_TO, 1, outside, inside);
                watchd_snapshot_note_event(s, e);
                assert_rescan(s, f, "");
        }
}

/* The watched directory itself went, and came back with entries. */
static void test_root(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSnapshot) s = NULL;
        g_autofree char *d = in(f, "d"), *x = in(f, "d/x");

        make_dir(f, "d");
        write_file(f, "d/x", "x");
        s = scanned(f, "d", FALSE);
        g_assert_cmpuint(watchd_snapshot_get_n_entries(s), ==, 1);

        unlink_rel(f, "d/x");
        g_assert_cmpint(g_rmdir(d), ==, 0);
        assert_rescan(s, f, "DELETE_SELF,ISDIR d\n");
        g_assert_true(watchd_snapshot_is_known(s));
        make_dir(f, "d");
        write_file(f, "d/y", "y");
        assert_rescan(s, f, "CREATE,ISDIR d\nCREATE d/y\n");
        /* Noted gone (a DELETE_SELF), then back: the events said it. */
        unlink_rel(f, "d/y");
        g_assert_cmpint(g_rmdir(d), ==, 0);
        note(s, f, WATCHD_EVENT_DELETE_SELF, "d", NULL);
        assert_rescan(s, f, "");
        /* Another directory under the name: gone and come (told apart by
         * its birth time even if it got the old one's inode number: the
         * coarse clock that stamps it moves every jiffy, hence the pause). */
        make_dir(f, "d");
        assert_rescan(s, f, "CREATE,ISDIR d\n");
        g_assert_cmpint(g_rmdir(d), ==, 0);
        g_usleep(20000);
        make_dir(f, "d");
        assert_rescan(s, f, "DELETE_SELF,ISDIR d\nCREATE,ISDIR d\n");
        (void) x;
}

/* A snapshot of one file (a GLib file monitor's). */
static void test_file(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSnapshot) s = NULL;

        write_file(f, "f", "1");
        s = scanned(f, "f", FALSE);
        g_assert_cmpuint(watchd_snapshot_get_n_entries(s), ==, 0);
        append(f, "f", "2");
        assert_rescan(s, f, "MODIFY f\nCLOSE_WRITE f\n");
        /* The directory's events about it keep it current. */
        append(f, "f", "3");
        note(s, f, WATCHD_EVENT_MODIFY, "f", NULL);
        write_file(f, "other", "o");
        note(s, f, WATCHD_EVENT_CREATE, "other", NULL);
        assert_rescan(s, f, "");
        unlink_rel(f, "f");
        assert_rescan(s, f, "DELETE_SELF f\n");
        write_file(f, "f", "again");
        note(s, f, WATCHD_EVENT_CREATE, "f", NULL);
        assert_rescan(s, f, "");
}

/* A whole tree: new directories with their files, a deleted one with its
 * files (deepest first), a renamed one (one event, its entries follow). */
static void test_recursive(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSnapshot) s = NULL;

        make_dir(f, "old");
        make_dir(f, "old/sub");
        write_file(f, "old/sub/x", "x");
        make_dir(f, "moving");
        write_file(f, "moving/y", "y");
        s = scanned(f, "", TRUE);
        g_assert_cmpuint(watchd_snapshot_get_n_entries(s), ==, 5);

        unlink_rel(f, "old/sub/x");
        {
                g_autofree char *sub = in(f, "old/sub"), *old = in(f, "old");

                g_assert_cmpint(g_rmdir(sub), ==, 0);
                g_assert_cmpint(g_rmdir(old), ==, 0);
        }
        rename_rel(f, "moving", "moved");
        append(f, "moved/y", "changed in the renamed directory");
        make_dir(f, "new");
        make_dir(f, "new/deeper");
        write_file(f, "new/deeper/z", "z");
        assert_rescan(s, f,
                      "MOVED_FROM,MOVED_TO,ISDIR moving -> moved\n"
                      "MODIFY moved/y\n"
                      "CLOSE_WRITE moved/y\n"
                      "DELETE old/sub/x\n"
                      "DELETE,ISDIR old/sub\n"
                      "DELETE,ISDIR old\n"
                      "CREATE,ISDIR new\n"
                      "CREATE,ISDIR new/deeper\n"
                      "CREATE new/deeper/z\n");

        /* Noted: a directory moved in with its contents is read. */
        {
                g_autofree char *outside = g_strconcat(f->dir, "-tree", NULL);
                g_autofree char *file = g_build_filename(outside, "w", NULL);
                g_autofree char *inside = in(f, "tree");
                g_autoptr(WatchdEvent) e = NULL;

                g_assert_cmpint(g_mkdir(outside, 0755), ==, 0);
                g_assert_true(g_file_set_contents(file, "w", -1, NULL));
                g_assert_cmpint(g_rename(outside, inside), ==, 0);
                e = watchd_event_new(WATCHD_EVENT_MOVED_TO | WATCHD_EVENT_ISDIR, 0, inside, NULL);
                watchd_snapshot_note_event(s, e);
                assert_rescan(s, f, "");
                note(s, f, WATCHD_EVENT_MOVED_FROM | WATCHD_EVENT_MOVED_TO | WATCHD_EVENT_ISDIR, "tree", "tree2");
                rename_rel(f, "tree", "tree2");
                assert_rescan(s, f, "");
        }
        /* Not recursive: what happens below a subdirectory is not its business. */
        {
                g_autoptr(WatchdSnapshot) flat = scanned(f, "", FALSE);

                write_file(f, "moved/y2", "deeper");
                assert_rescan(flat, f, "");
        }
}

/* File names are bytes. */
static void test_non_utf8(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSnapshot) s = scanned(f, "", FALSE);

        write_file(f, "n\xff\xfe", "x");
        assert_rescan(s, f, "CREATE n\xff\xfe\n");
        rename_rel(f, "n\xff\xfe", "m\x80");
        assert_rescan(s, f, "MOVED_FROM,MOVED_TO n\xff\xfe -> m\x80\n");
}

/* Past max-entries a scan fails and the snapshot knows nothing; the next
 * rescan that fits knows again, and says nothing of what it cannot compare. */
static void test_max_entries(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSnapshot) s = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) events = NULL;

        for (int i = 0; i < 5; i++) {
                g_autofree char *n = g_strdup_printf("f%d", i);

                write_file(f, n, "x");
        }
        s = watchd_snapshot_new(f->dir, FALSE);
        g_assert_cmpuint(watchd_snapshot_get_max_entries(s), ==, WATCHD_SNAPSHOT_DEFAULT_MAX_ENTRIES);
        watchd_snapshot_set_max_entries(s, 4);
        g_assert_false(watchd_snapshot_scan(s, &error));
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE);
        g_assert_false(watchd_snapshot_is_known(s));
        g_assert_cmpuint(watchd_snapshot_get_n_entries(s), ==, 0);
        g_clear_error(&error);
        events = watchd_snapshot_rescan(s, &error);
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE);
        g_assert_null(events);
        g_clear_error(&error);

        watchd_snapshot_set_max_entries(s, 5);
        events = watchd_snapshot_rescan(s, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(events->len, ==, 0);
        g_assert_true(watchd_snapshot_is_known(s));
        unlink_rel(f, "f0");
        assert_rescan(s, f, "DELETE f0\n");

        /* Known, then past the limit: forgotten. */
        watchd_snapshot_set_max_entries(s, 2);
        g_ptr_array_unref(events);
        events = watchd_snapshot_rescan(s, &error);
        g_assert_null(events);
        g_assert_false(watchd_snapshot_is_known(s));
}

/* A directory the caller cannot read: an error, nothing known. */
static void test_unreadable(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSnapshot) s = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree char *d = in(f, "closed");

        if (geteuid() == 0) {
                g_test_skip("root reads every directory");
                return;
        }
        make_dir(f, "closed");
        g_assert_cmpint(g_chmod(d, 0), ==, 0);
        s = watchd_snapshot_new(d, FALSE);
        g_assert_false(watchd_snapshot_scan(s, &error));
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED);
        g_assert_cmpint(g_chmod(d, 0755), ==, 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/snapshot/differences", Fixture, NULL, setup, test_differences, teardown);
        g_test_add("/snapshot/rename-over", Fixture, NULL, setup, test_rename_over, teardown);
        g_test_add("/snapshot/noted", Fixture, NULL, setup, test_noted, teardown);
        g_test_add("/snapshot/root", Fixture, NULL, setup, test_root, teardown);
        g_test_add("/snapshot/file", Fixture, NULL, setup, test_file, teardown);
        g_test_add("/snapshot/recursive", Fixture, NULL, setup, test_recursive, teardown);
        g_test_add("/snapshot/non-utf8", Fixture, NULL, setup, test_non_utf8, teardown);
        g_test_add("/snapshot/max-entries", Fixture, NULL, setup, test_max_entries, teardown);
        g_test_add("/snapshot/unreadable", Fixture, NULL, setup, test_unreadable, teardown);
        return g_test_run();
}
