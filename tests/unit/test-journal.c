/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-journal - the change journal on real files: what goes in comes out,
 * in order and once; ids never repeat; damage, a full disk and the cap are
 * reported as gaps, never passed over in silence
 *
 * Each reader's output is turned into lines ("E<id> <mask> <path>[><new>]",
 * "G<id> <reason> whole|<dir>[+]", + for a recursive one) and compared with what the case
 * expects, so a failure shows the whole sequence. Damage is done to the
 * files the way a crash or a bad disk would: a tail cut inside a frame,
 * zeros or garbage after it, a byte flipped in a frame or in a header, a
 * segment or the meta file gone.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "journal.h"

#define MB             (1024u * 1024u)
#define IN_MODIFY      0x00000002u
#define IN_CLOSE_WRITE 0x00000008u
#define IN_MOVED_FROM  0x00000040u
#define IN_MOVED_TO    0x00000080u
#define IN_CREATE      0x00000100u
#define IN_DELETE      0x00000200u
#define IN_ISDIR       0x40000000u

/* The on-disk sizes the damage cases aim at (docs/JOURNAL.md). */
#define SEGMENT_HEADER 56
#define FRAME_HEADER   24

/* ---------------------------------------------------------------------- */
/* Helpers */

static char *tmp_journal(char **ret_top) {
        char *top = g_dir_make_tmp("test-journal-XXXXXX", NULL);

        g_assert_nonnull(top);
        *ret_top = top;
        return g_build_filename(top, "j", NULL);
}

static void rm_rf(const char *path) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", path);

        g_assert_cmpint(system(cmd), ==, 0);
}

static char *describe(const JournalEntry *e) {
        GString *s = g_string_new(NULL);

        if (e->type == JOURNAL_ENTRY_EVENT) {
                g_string_append_printf(s, "E%" PRIu64 " %x %s", e->id, e->mask, e->path);
                if (e->cookie)
                        g_string_append_printf(s, " c%u", e->cookie);
                if (e->new_path)
                        g_string_append_printf(s, ">%s", e->new_path);
        } else {
                g_string_append_printf(s, "G%" PRIu64 " %s", e->id, journal_gap_reason_to_string(e->reason));
                if (e->whole)
                        g_string_append(s, " whole");
                for (size_t i = 0; i < e->n_scope; i++)
                        g_string_append_printf(s, " %s%s", e->scope[i].path, e->scope[i].recursive ? "+" : "");
        }
        return g_string_free(s, FALSE);
}

/* Everything a reader from cursor `after` returns until it is caught up, one line an entry. */
static GPtrArray *read_from(Journal *j, const JournalId *id, uint64_t after) {
        GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
        JournalReader *r = NULL;
        JournalEntry e;
        int k;

        g_assert_cmpint(journal_reader_new(j, id, after, &r), ==, 0);
        while ((k = journal_reader_next(r, &e)) > 0)
                g_ptr_array_add(a, describe(&e));
        g_assert_cmpint(k, ==, 0);
        journal_reader_free(r);
        return a;
}

static char *joined(GPtrArray *a) {
        g_ptr_array_add(a, NULL);
        char *s = g_strjoinv("\n", (char **) a->pdata);
        g_ptr_array_remove_index(a, a->len - 1);
        return s;
}

#define assert_lines(a, expected)                    \
        do {                                         \
                g_autofree char *_got = joined(a);   \
                g_assert_cmpstr(_got, ==, expected); \
        } while (0)

static char *path_of(unsigned i) {
        return g_strdup_printf("/home/u/src/dir%02u/file%05u.c", i % 17, i);
}

/* n events numbered from first, flushed every `every` records. */
static void append_n(Journal *j, unsigned first, unsigned n, unsigned every) {
        for (unsigned i = first; i < first + n; i++) {
                g_autofree char *p = path_of(i);

                g_assert_cmpint(journal_append_event(j, IN_CLOSE_WRITE, 0, p, NULL), ==, 0);
                if (every && (i - first + 1) % every == 0)
                        g_assert_cmpint(journal_flush(j), ==, 0);
        }
        g_assert_cmpint(journal_flush(j), ==, 0);
}

/* Checks that a reader returns exactly events first..first+n-1 of append_n, after an optional gap. */
static void assert_events(GPtrArray *a, unsigned from, unsigned first, unsigned n) {
        g_assert_cmpuint(a->len, >=, from + n);
        for (unsigned i = 0; i < n; i++) {
                g_autofree char *p = path_of(first + i);
                const char *line = a->pdata[from + i];

                g_assert_true(line[0] == 'E');
                g_assert_nonnull(strstr(line, p));
        }
}

static uint64_t id_of(GPtrArray *a, unsigned i) {
        return g_ascii_strtoull((const char *) a->pdata[i] + 1, NULL, 10);
}

static int cmp_paths(gconstpointer a, gconstpointer b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static GPtrArray *segment_files(const char *jdir) {
        GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
        GDir *d = g_dir_open(jdir, 0, NULL);
        const char *n;

        g_assert_nonnull(d);
        while ((n = g_dir_read_name(d)))
                if (g_str_has_prefix(n, "seg-"))
                        g_ptr_array_add(a, g_build_filename(jdir, n, NULL));
        g_dir_close(d);
        g_ptr_array_sort(a, cmp_paths);
        return a;
}

static uint64_t file_size(const char *path) {
        struct stat st;

        g_assert_cmpint(stat(path, &st), ==, 0);
        return (uint64_t) st.st_size;
}

static uint32_t le32_at(const guint8 *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

/* Offsets of the frames of a segment file (assumed undamaged). */
static GArray *frame_offsets(const char *path) {
        GArray *a = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        g_autofree guint8 *data = NULL;
        gsize size;
        uint64_t off = SEGMENT_HEADER;

        g_assert_true(g_file_get_contents(path, (char **) &data, &size, NULL));
        while (off + FRAME_HEADER <= size) {
                g_array_append_val(a, off);
                off += FRAME_HEADER + le32_at(data + off + 4);
        }
        g_assert_cmpuint(off, ==, size);
        return a;
}

static void flip_byte(const char *path, uint64_t off) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        guint8 c;

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(pread(fd, &c, 1, (off_t) off), ==, 1);
        c ^= 0x5a;
        g_assert_cmpint(pwrite(fd, &c, 1, (off_t) off), ==, 1);
        close(fd);
}

static void append_bytes(const char *path, const void *p, size_t n) {
        int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, p, n), ==, (ssize_t) n);
        close(fd);
}

/* ---------------------------------------------------------------------- */
/* What goes in comes out */

typedef struct EventCase {
        uint32_t mask;
        uint32_t cookie;
        const char *path;
        const char *new_path;
} EventCase;

static const EventCase roundtrip_events[] = {
        { IN_CREATE, 0, "/home/u/a", NULL },
        { IN_CREATE | IN_ISDIR, 0, "/home/u/dir", NULL },
        { IN_MODIFY, 0, "/home/u/dir/file", NULL },
        { IN_MOVED_FROM | IN_MOVED_TO, 77, "/home/u/dir/file", "/home/u/dir/file.renamed" },
        { IN_MOVED_FROM | IN_MOVED_TO | IN_ISDIR, 78, "/home/u/dir", "/other/place" },
        { IN_MOVED_FROM, 79, "/home/u/gone", NULL },               /* moved out alone */
        { IN_DELETE, 0, "/home/u/\xff\xfe not utf-8 \x80", NULL }, /* names are bytes */
        { IN_DELETE, 0, "/", NULL },
        { 0x00100000u | IN_CREATE, 0, "/home/u/escaped\\x", NULL }, /* other high bits stay */
        { IN_CLOSE_WRITE, 0, "/home/u/a", NULL },                   /* shares nothing new */
        { IN_CLOSE_WRITE, 0, "/home/u/ab", NULL },                  /* longer than the previous */
        { IN_CLOSE_WRITE, 0, "/h", NULL },                          /* shorter */
};

static void test_roundtrip(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autofree char *long_path = NULL;
        Journal *j = NULL;
        JournalReader *r = NULL;
        JournalEntry e;
        uint64_t id = 0;

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        g_assert_cmpuint(journal_last_id(j), ==, 0);
        g_assert_cmpint(journal_reader_new(j, NULL, 0, &r), ==, 0);
        g_assert_cmpint(journal_reader_next(r, &e), ==, 0); /* nothing yet */

        for (size_t i = 0; i < G_N_ELEMENTS(roundtrip_events); i++) {
                const EventCase *c = &roundtrip_events[i];

                g_assert_cmpint(journal_append_event(j, c->mask, c->cookie, c->path, c->new_path), ==, 0);
                if (i == 4)
                        g_assert_cmpint(journal_flush(j), ==, 0); /* two frames */
        }
        long_path = g_strnfill(8000, 'x'); /* longer than PATH_MAX: paths are built by joining */
        long_path[0] = '/';
        g_assert_cmpint(journal_append_event(j, IN_CREATE, 0, long_path, NULL), ==, 0);
        /* A reader sees what is written: nothing before the flush. */
        g_assert_cmpint(journal_reader_next(r, &e), ==, 1);
        g_assert_cmpuint(e.id, ==, 1);
        for (int i = 1; i < 5; i++)
                g_assert_cmpint(journal_reader_next(r, &e), ==, 1);
        g_assert_cmpint(journal_reader_next(r, &e), ==, 0);
        g_assert_cmpint(journal_flush(j), ==, 0);

        /* The same reader goes on from where it was (a live client), a new one from 0 gets all. */
        for (int pass = 0; pass < 2; pass++) {
                JournalReader *rr = NULL;

                if (pass == 1)
                        g_assert_cmpint(journal_reader_new(j, journal_identity(j), 0, &rr), ==, 0);
                for (size_t i = pass == 0 ? 5 : 0; i < G_N_ELEMENTS(roundtrip_events); i++) {
                        const EventCase *c = &roundtrip_events[i];

                        g_assert_cmpint(journal_reader_next(rr ?: r, &e), ==, 1);
                        g_assert_cmpint(e.type, ==, JOURNAL_ENTRY_EVENT);
                        g_assert_cmpuint(e.id, ==, i + 1);
                        g_assert_cmphex(e.mask, ==, c->mask);
                        g_assert_cmpuint(e.cookie, ==, c->cookie);
                        g_assert_cmpstr(e.path, ==, c->path);
                        g_assert_cmpstr(e.new_path, ==, c->new_path);
                        id = e.id;
                }
                g_assert_cmpint(journal_reader_next(rr ?: r, &e), ==, 1);
                g_assert_cmpstr(e.path, ==, long_path);
                g_assert_cmpuint(e.id, ==, id + 1);
                g_assert_cmpint(journal_reader_next(rr ?: r, &e), ==, 0);
                journal_reader_free(rr);
        }
        g_assert_cmpuint(journal_reader_position(r), ==, id + 1);
        g_assert_cmpuint(journal_last_id(j), ==, id + 1);
        journal_reader_free(r);
        journal_free(j);
        rm_rf(top);
}

static void test_bad_input(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autofree char *too_long = g_strnfill(JOURNAL_PATH_MAX + 1, 'x');
        JournalScope scope = { .path = "relative" };
        Journal *j = NULL, *j2 = NULL;

        g_assert_cmpint(journal_open(jdir, JOURNAL_MAX_BYTES_MIN - 1, &j), ==, -EINVAL);
        g_assert_cmpint(journal_open(jdir, JOURNAL_MAX_BYTES_MAX + 1, &j), ==, -EINVAL);
        g_assert_cmpint(journal_open(jdir, JOURNAL_MAX_BYTES_MIN, &j), ==, 0);
        /* One writer: a second daemon (or a test mistake) is refused. */
        g_assert_cmpint(journal_open(jdir, JOURNAL_MAX_BYTES_MIN, &j2), ==, -EBUSY);

        too_long[0] = '/';
        g_assert_cmpint(journal_append_event(j, IN_CREATE, 0, "relative", NULL), ==, -EINVAL);
        g_assert_cmpint(journal_append_event(j, IN_CREATE, 0, "", NULL), ==, -EINVAL);
        g_assert_cmpint(journal_append_event(j, IN_CREATE, 0, "/a", "b"), ==, -EINVAL);
        g_assert_cmpint(journal_append_event(j, IN_CREATE, 0, too_long, NULL), ==, -ENAMETOOLONG);
        g_assert_cmpint(journal_append_gap(j, JOURNAL_GAP_OVERFLOW, false, NULL, 0), ==, -EINVAL);
        g_assert_cmpint(journal_append_gap(j, 0, true, NULL, 0), ==, -EINVAL);
        g_assert_cmpint(journal_append_gap(j, JOURNAL_GAP_OVERFLOW, false, &scope, 1), ==, -EINVAL);
        g_assert_cmpint(journal_flush(j), ==, 0);
        g_assert_cmpuint(journal_last_id(j), ==, 0); /* nothing was taken */
        journal_free(j);
        rm_rf(top);
}

static void test_gaps_stored(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        const JournalScope scope[] = { { "/home/u/a", false }, { "/home/u/a/b", true }, { "/x", true } };
        g_autoptr(GPtrArray) a = NULL;
        Journal *j = NULL;

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        g_assert_cmpint(journal_append_event(j, IN_CREATE, 0, "/home/u/a/f", NULL), ==, 0);
        g_assert_cmpint(journal_append_gap(j, JOURNAL_GAP_OVERFLOW, true, NULL, 0), ==, 0);
        g_assert_cmpint(journal_append_gap(j, JOURNAL_GAP_ACCESS, false, scope, G_N_ELEMENTS(scope)), ==, 0);
        g_assert_cmpint(journal_append_gap(j, JOURNAL_GAP_DAEMON_DOWN, true, NULL, 0), ==, 0);
        g_assert_cmpint(journal_append_event(j, IN_DELETE, 0, "/home/u/a/f", NULL), ==, 0);
        g_assert_cmpint(journal_flush(j), ==, 0);

        a = read_from(j, NULL, 0);
        assert_lines(a,
                     "E1 100 /home/u/a/f\n"
                     "G2 overflow whole\n"
                     "G3 access /home/u/a /home/u/a/b+ /x+\n"
                     "G4 daemon-down whole\n"
                     "E5 200 /home/u/a/f");
        g_ptr_array_unref(a);
        /* A cursor on a gap: what follows it. */
        a = read_from(j, NULL, 3);
        assert_lines(a, "G4 daemon-down whole\nE5 200 /home/u/a/f");
        journal_free(j);
        rm_rf(top);
}

/* Every cursor gives exactly what follows it, across many frames and segments. */
static void test_cursors(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autoptr(GPtrArray) all = NULL;
        g_autoptr(GPtrArray) segs = NULL;
        Journal *j = NULL;
        const unsigned n = 3000;

        /* 16 KiB segments, about 60 KB of records: none dropped. */
        g_assert_cmpint(journal_open(jdir, 128 * 1024, &j), ==, 0);
        append_n(j, 0, n, 37);
        segs = segment_files(jdir);
        g_assert_cmpuint(segs->len, >, 2); /* the cursors cross segments */

        all = read_from(j, NULL, 0);
        g_assert_cmpuint(all->len, ==, n);
        assert_events(all, 0, 0, n);
        for (unsigned i = 0; i < n; i++)
                g_assert_cmpuint(id_of(all, i), ==, i + 1);

        for (unsigned c = 0; c <= n; c += 97) {
                g_autoptr(GPtrArray) a = read_from(j, NULL, c);

                g_assert_cmpuint(a->len, ==, n - c);
                assert_events(a, 0, c, n - c);
        }
        journal_free(j);
        rm_rf(top);
}

/* ---------------------------------------------------------------------- */
/* Ids across restarts */

static void test_reopen_clean(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autoptr(GPtrArray) a = NULL;
        JournalId id;
        Journal *j = NULL;

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        append_n(j, 0, 10, 0);
        id = *journal_identity(j);
        journal_free(j);

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        g_assert_true(memcmp(&id, journal_identity(j), sizeof(id)) == 0);
        g_assert_cmpuint(journal_last_id(j), ==, 10); /* a clean stop skips no id */
        append_n(j, 10, 5, 0);
        a = read_from(j, &id, 8);
        g_assert_cmpuint(a->len, ==, 7);
        assert_events(a, 0, 8, 7);
        g_assert_cmpuint(id_of(a, 0), ==, 9);
        g_assert_cmpuint(id_of(a, 6), ==, 15);
        journal_free(j);
        rm_rf(top);
}

/*
 * A crash, then a power cut that loses the tail the crashed daemon had
 * written (and maybe delivered): the ids of the lost records must not come
 * back for other records, or a client that saw them would skip the new ones.
 */
static void test_ids_never_repeat(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autoptr(GPtrArray) segs = NULL;
        g_autoptr(GArray) frames = NULL;
        g_autoptr(GPtrArray) a = NULL;
        Journal *j = NULL;
        int status;
        pid_t pid;

        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                if (journal_open(jdir, 64 * MB, &j) < 0)
                        _exit(1);
                for (unsigned i = 0; i < 100; i++) {
                        g_autofree char *p = path_of(i);

                        if (journal_append_event(j, IN_CREATE, 0, p, NULL) < 0 || journal_flush(j) < 0)
                                _exit(2);
                }
                _exit(0); /* no journal_free(): a crash */
        }
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

        /* The power cut: the last 40 frames (records 61..100) never reached the disk. */
        segs = segment_files(jdir);
        g_assert_cmpuint(segs->len, ==, 1);
        frames = frame_offsets(segs->pdata[0]);
        g_assert_cmpuint(frames->len, ==, 100);
        g_assert_cmpint(truncate(segs->pdata[0], (off_t) g_array_index(frames, uint64_t, 60)), ==, 0);

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        g_assert_cmpuint(journal_last_id(j), >=, 100);
        append_n(j, 1000, 1, 0);
        a = read_from(j, NULL, 0);
        g_assert_cmpuint(a->len, ==, 61);
        assert_events(a, 0, 0, 60);
        g_assert_cmpuint(id_of(a, 60), >, 100); /* never 61 again */
        journal_free(j);
        rm_rf(top);
}

/* ---------------------------------------------------------------------- */
/* Damage */

typedef enum Damage {
        DAMAGE_CUT_IN_HEADER,  /* the last frame's header half written */
        DAMAGE_CUT_IN_PAYLOAD, /* its payload half written */
        DAMAGE_ZEROS_AFTER,    /* a power cut left a zeroed block after the end */
        DAMAGE_GARBAGE_AFTER,
        DAMAGE_FLIP_LAST_PAYLOAD, /* the last frame's checksum fails */
} Damage;

typedef struct TailCase {
        const char *name;
        Damage damage;
        unsigned kept; /* records still there of 50 (5 frames of 10) */
} TailCase;

static const TailCase tail_cases[] = {
        { "/journal/torn-tail/cut in a header", DAMAGE_CUT_IN_HEADER, 40 },
        { "/journal/torn-tail/cut in a payload", DAMAGE_CUT_IN_PAYLOAD, 40 },
        { "/journal/torn-tail/zeros after", DAMAGE_ZEROS_AFTER, 50 },
        { "/journal/torn-tail/garbage after", DAMAGE_GARBAGE_AFTER, 50 },
        { "/journal/torn-tail/last frame bad", DAMAGE_FLIP_LAST_PAYLOAD, 40 },
};

static void test_torn_tail(gconstpointer data) {
        const TailCase *c = data;
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autoptr(GPtrArray) segs = NULL;
        g_autoptr(GArray) frames = NULL;
        g_autoptr(GPtrArray) a = NULL;
        const char *seg;
        uint64_t last, size, cut_to;
        Journal *j = NULL;

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        append_n(j, 0, 50, 10);
        journal_free(j);

        segs = segment_files(jdir);
        seg = segs->pdata[0];
        frames = frame_offsets(seg);
        g_assert_cmpuint(frames->len, ==, 5);
        last = g_array_index(frames, uint64_t, 4);
        size = file_size(seg);
        switch (c->damage) {
        case DAMAGE_CUT_IN_HEADER:
                g_assert_cmpint(truncate(seg, (off_t) (last + 10)), ==, 0);
                break;
        case DAMAGE_CUT_IN_PAYLOAD:
                g_assert_cmpint(truncate(seg, (off_t) (size - 7)), ==, 0);
                break;
        case DAMAGE_ZEROS_AFTER: {
                guint8 zeros[4096] = {};

                append_bytes(seg, zeros, sizeof(zeros));
                break;
        }
        case DAMAGE_GARBAGE_AFTER:
                append_bytes(seg, "\xf7\x57\x4a\x1f garbage that looks like a frame's start", 44);
                break;
        case DAMAGE_FLIP_LAST_PAYLOAD:
                flip_byte(seg, size - 3);
                break;
        }

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        /* Cut where the valid frames end. */
        cut_to = c->kept == 50 ? size : last;
        g_assert_cmpuint(file_size(seg), >=, cut_to);
        append_n(j, 100, 2, 0);

        a = read_from(j, NULL, 0);
        g_assert_cmpuint(a->len, ==, c->kept + 3);
        assert_events(a, 0, 0, c->kept);
        /* The cut is reported, before the records written since. */
        g_assert_true(g_str_has_prefix(a->pdata[c->kept], "G"));
        g_assert_nonnull(strstr(a->pdata[c->kept], " corrupt whole"));
        g_assert_cmpuint(id_of(a, c->kept), >, 50);
        assert_events(a, c->kept + 1, 100, 2);
        journal_free(j);

        /* Once cut, it is whole again: a third open finds nothing to report. */
        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        g_ptr_array_unref(a);
        a = read_from(j, NULL, 0);
        g_assert_cmpuint(a->len, ==, c->kept + 3);
        journal_free(j);
        rm_rf(top);
}

typedef struct MiddleCase {
        const char *name;
        unsigned segment; /* which segment file, 0 = oldest */
        int frame;        /* which frame of it; -1: the segment header */
        unsigned offset;  /* byte of the frame to flip */
        bool reopen;      /* damage found at open (else by a running journal's reader) */
} MiddleCase;

static const MiddleCase middle_cases[] = {
        { "/journal/corrupt-middle/payload, closed segment", 0, 3, FRAME_HEADER + 5, false },
        { "/journal/corrupt-middle/frame magic, closed segment", 0, 3, 0, false },
        { "/journal/corrupt-middle/frame size, closed segment", 0, 3, 5, false },
        { "/journal/corrupt-middle/frame id, closed segment", 0, 3, 9, false },
        { "/journal/corrupt-middle/last frame of a closed segment", 0, -2, FRAME_HEADER + 1, false },
        { "/journal/corrupt-middle/payload, active segment", 2, 1, FRAME_HEADER + 2, true },
        { "/journal/corrupt-middle/payload, found at open", 0, 3, FRAME_HEADER + 5, true },
        { "/journal/corrupt-middle/segment header, middle", 1, -1, 20, true },
        { "/journal/corrupt-middle/segment header, running", 1, -1, 20, false },
};

typedef struct FrameRef {
        uint64_t off;
        uint64_t first_id;
        uint32_t count;
} FrameRef;

static uint64_t le64_at(const guint8 *p) {
        return (uint64_t) le32_at(p) | (uint64_t) le32_at(p + 4) << 32;
}

static GArray *frame_refs(const char *path) {
        GArray *a = g_array_new(FALSE, FALSE, sizeof(FrameRef));
        g_autofree guint8 *data = NULL;
        gsize size;
        uint64_t off = SEGMENT_HEADER;

        g_assert_true(g_file_get_contents(path, (char **) &data, &size, NULL));
        while (off + FRAME_HEADER <= size) {
                FrameRef f = { off, le64_at(data + off + 8), le32_at(data + off + 16) };

                g_array_append_val(a, f);
                off += FRAME_HEADER + le32_at(data + off + 4);
        }
        g_assert_cmpuint(off, ==, size);
        return a;
}

/*
 * Frames of 10 records in segments of a few dozen frames; one frame or one
 * segment header damaged. A reader from the start gets every record before
 * the damage, a corrupt gap whose id is the last one lost, and every record
 * after it; a reader whose cursor lies past the damage sees no gap; one
 * whose cursor lies inside it sees the gap. Damage in the segment being
 * written, found at open, is also recorded as a gap at the end (writing
 * goes on in a new segment).
 */
static void test_corrupt_middle(gconstpointer data) {
        const MiddleCase *c = data;
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autoptr(GPtrArray) segs = NULL;
        g_autoptr(GArray) frames = NULL;
        g_autoptr(GPtrArray) a = NULL;
        uint64_t lost_first, lost_last;
        const unsigned n = 2000;
        const char *seg;
        bool stored_gap;
        unsigned k;
        Journal *j = NULL;

        /* 64 KiB cap: 8 KiB segments. */
        g_assert_cmpint(journal_open(jdir, JOURNAL_MAX_BYTES_MIN, &j), ==, 0);
        append_n(j, 0, n, 10);
        if (!c->reopen) {
                /* The active segment is never damaged under a running journal: only closed ones. */
                append_n(j, n, 10, 10);
                g_assert_cmpint(journal_flush(j), ==, 0);
        }
        if (c->reopen)
                journal_free(j);

        segs = segment_files(jdir);
        g_assert_cmpuint(segs->len, >=, 3);
        g_assert_cmpuint(segs->len, <=, 7); /* under the cap: none dropped */
        seg = segs->pdata[c->segment == 2 ? segs->len - 1 : c->segment];
        frames = frame_refs(seg);
        g_assert_cmpuint(frames->len, >=, 3);

        if (c->frame == -1) {
                /* The whole segment is lost. */
                lost_first = g_array_index(frames, FrameRef, 0).first_id;
                lost_last = g_array_index(frames, FrameRef, frames->len - 1).first_id +
                        g_array_index(frames, FrameRef, frames->len - 1).count - 1;
                flip_byte(seg, c->offset);
        } else {
                FrameRef f = g_array_index(frames, FrameRef, c->frame == -2 ? frames->len - 1 : (unsigned) c->frame);

                lost_first = f.first_id;
                lost_last = f.first_id + f.count - 1;
                flip_byte(seg, f.off + c->offset);
        }
        /* Found at open in the segment being written: a stored gap too. */
        stored_gap = c->reopen && (c->segment == 2 || c->frame == -1);

        if (c->reopen)
                g_assert_cmpint(journal_open(jdir, JOURNAL_MAX_BYTES_MIN, &j), ==, 0);

        a = read_from(j, NULL, 0);
        k = 0;
        for (uint64_t id = 1; k < a->len; k++) {
                const char *line = a->pdata[k];

                if (id == lost_first) {
                        g_autofree char *gap = g_strdup_printf("G%" PRIu64 " corrupt whole", lost_last);

                        g_assert_cmpstr(line, ==, gap);
                        id = lost_last + 1;
                        continue;
                }
                if (line[0] == 'G')
                        break;
                g_assert_cmpuint(id_of(a, k), ==, id);
                id++;
        }
        if (stored_gap) {
                g_assert_cmpuint(k, ==, a->len - 1);
                g_assert_nonnull(strstr(a->pdata[k], " corrupt whole"));
                g_assert_cmpuint(id_of(a, k), >, lost_last);
        } else
                g_assert_cmpuint(k, ==, a->len);
        g_assert_cmpuint(a->len, ==, (c->reopen ? n : n + 10) - (lost_last - lost_first + 1) + 1 + stored_gap);

        /* Past the damage: no gap. Inside it: the gap. */
        g_ptr_array_unref(a);
        a = read_from(j, NULL, lost_last);
        g_assert_true(((const char *) a->pdata[0])[0] == 'E');
        g_assert_cmpuint(id_of(a, 0), ==, lost_last + 1);
        g_ptr_array_unref(a);
        a = read_from(j, NULL, lost_first + 2);
        g_assert_true(g_str_has_prefix(a->pdata[0], "G"));
        g_assert_cmpuint(id_of(a, 0), ==, lost_last);

        journal_free(j);
        rm_rf(top);
}

/* A segment file gone: in the middle, a gap; the oldest, history lost for older cursors. */
static void test_missing_segment(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autoptr(GPtrArray) segs = NULL;
        g_autoptr(GArray) first = NULL;
        g_autoptr(GArray) middle = NULL;
        g_autoptr(GPtrArray) a = NULL;
        uint64_t lost_first, lost_last, last;
        Journal *j = NULL;

        g_assert_cmpint(journal_open(jdir, JOURNAL_MAX_BYTES_MIN, &j), ==, 0);
        append_n(j, 0, 2000, 10);
        last = journal_last_id(j);
        segs = segment_files(jdir);
        g_assert_cmpuint(segs->len, >=, 3);
        middle = frame_refs(segs->pdata[1]);
        lost_first = g_array_index(middle, FrameRef, 0).first_id;
        lost_last = g_array_index(middle, FrameRef, middle->len - 1).first_id +
                g_array_index(middle, FrameRef, middle->len - 1).count - 1;
        g_assert_cmpint(unlink(segs->pdata[1]), ==, 0);

        /* Found by a reader of the running journal... */
        a = read_from(j, NULL, 0);
        g_assert_cmpuint(a->len, ==, 2000 - (lost_last - lost_first + 1) + 1);
        {
                g_autofree char *gap = g_strdup_printf("G%" PRIu64 " corrupt whole", lost_last);
                g_assert_cmpstr(a->pdata[lost_first - 1], ==, gap);
        }
        journal_free(j);

        /* ...and after a restart, where the oldest is gone too: history lost, on from the end. */
        first = frame_refs(segs->pdata[0]);
        g_assert_cmpint(unlink(segs->pdata[0]), ==, 0);
        g_assert_cmpint(journal_open(jdir, JOURNAL_MAX_BYTES_MIN, &j), ==, 0);
        g_ptr_array_unref(a);
        a = read_from(j, NULL, 0);
        {
                g_autofree char *gap = g_strdup_printf("G%" PRIu64 " history-lost whole", last);
                assert_lines(a, gap);
        }
        /* A cursor from before the first gone segment but in the kept ones: all of them, no gap. */
        g_ptr_array_unref(a);
        a = read_from(j, NULL, lost_last);
        g_assert_cmpuint(a->len, ==, last - lost_last);
        g_assert_cmpuint(id_of(a, 0), ==, lost_last + 1);
        journal_free(j);
        rm_rf(top);
}

static void test_meta(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autofree char *meta = g_build_filename(jdir, "meta", NULL);
        g_autoptr(GPtrArray) a = NULL;
        char s[JOURNAL_ID_STRING_MAX];
        JournalId id, id2;
        Journal *j = NULL;

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        append_n(j, 0, 20, 0);
        id = *journal_identity(j);
        journal_id_to_string(&id, s);
        g_assert_cmpuint(strlen(s), ==, 32);
        g_assert_cmpint(journal_id_from_string(s, &id2), ==, 0);
        g_assert_true(memcmp(&id, &id2, sizeof(id)) == 0);
        g_assert_cmpint(journal_id_from_string("0123", &id2), ==, -EINVAL);
        g_assert_cmpint(journal_id_from_string("0123456789abcdef0123456789abcdeG", &id2), ==, -EINVAL);
        journal_free(j);

        /* One slot torn: the other one holds. */
        flip_byte(meta, 20);
        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        g_assert_true(memcmp(&id, journal_identity(j), sizeof(id)) == 0);
        a = read_from(j, &id, 0);
        g_assert_cmpuint(a->len, ==, 20);
        journal_free(j);

        /* Both gone: the ids cannot be vouched for; a new journal, old cursors foreign. */
        g_assert_cmpint(truncate(meta, 0), ==, 0);
        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        g_assert_false(memcmp(&id, journal_identity(j), sizeof(id)) == 0);
        append_n(j, 100, 1, 0);
        g_ptr_array_unref(a);
        a = read_from(j, &id, 20);
        {
                g_autofree char *want = g_strdup_printf("G%" PRIu64 " foreign whole", journal_last_id(j));
                assert_lines(a, want);
        }
        journal_free(j);
        rm_rf(top);
}

static void test_foreign(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autoptr(GPtrArray) a = NULL;
        JournalReader *r = NULL;
        JournalEntry e;
        JournalId other = {};
        Journal *j = NULL;

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        append_n(j, 0, 20, 0);

        /* Another journal's cursor: rescan all, then on from now. */
        g_assert_cmpint(journal_reader_new(j, &other, 5, &r), ==, 0);
        g_assert_cmpint(journal_reader_next(r, &e), ==, 1);
        g_assert_cmpint(e.type, ==, JOURNAL_ENTRY_GAP);
        g_assert_cmpuint(e.reason, ==, JOURNAL_GAP_FOREIGN);
        g_assert_true(e.whole);
        g_assert_cmpuint(e.id, ==, 20);
        g_assert_cmpint(journal_reader_next(r, &e), ==, 0);
        append_n(j, 20, 1, 0);
        g_assert_cmpint(journal_reader_next(r, &e), ==, 1);
        g_assert_cmpuint(e.id, ==, 21);
        g_assert_cmpint(journal_reader_next(r, &e), ==, 0);
        journal_reader_free(r);

        /* A cursor this journal never gave: the same. */
        a = read_from(j, journal_identity(j), 22);
        assert_lines(a, "G21 foreign whole");
        g_ptr_array_unref(a);
        a = read_from(j, NULL, 21);
        g_assert_cmpuint(a->len, ==, 0);
        journal_free(j);
        rm_rf(top);
}

/* The cap: oldest segments go; old cursors get history-lost, recent ones all; a slow reader is caught. */
static void test_cap(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autoptr(GPtrArray) a = NULL;
        JournalReader *slow = NULL;
        JournalStats st;
        JournalEntry e;
        Journal *j = NULL;
        uint64_t last;

        g_assert_cmpint(journal_open(jdir, JOURNAL_MAX_BYTES_MIN, &j), ==, 0);
        g_assert_cmpint(journal_reader_new(j, NULL, 0, &slow), ==, 0);
        append_n(j, 0, 100, 10);
        for (int i = 0; i < 10; i++)
                g_assert_cmpint(journal_reader_next(slow, &e), ==, 1);
        g_assert_cmpuint(e.id, ==, 10);

        /* Under the cap after every flush, not only after a rotation: the active segment grows
         * between rotations into room kept for it. */
        for (unsigned k = 0; k < 200; k++) {
                append_n(j, 100 + 100 * k, 100, 50);
                journal_stats(j, &st);
                g_assert_cmpuint(st.bytes, <=, JOURNAL_MAX_BYTES_MIN);
        }
        journal_stats(j, &st);
        last = journal_last_id(j);
        g_assert_cmpuint(st.bytes, <=, JOURNAL_MAX_BYTES_MIN);
        g_assert_cmpuint(st.oldest_cursor, >, 10000);
        g_assert_cmpuint(st.last_id, ==, last);
        g_assert_cmpuint(last, ==, 20100);

        /* The slow reader's segments were dropped under it: it reads what its open segment
         * still holds, then is told, and goes on from the end. */
        for (uint64_t want = 11;; want++) {
                g_assert_cmpint(journal_reader_next(slow, &e), ==, 1);
                if (e.type != JOURNAL_ENTRY_EVENT)
                        break;
                g_assert_cmpuint(e.id, ==, want);
                g_assert_cmpuint(want, <, 1000);
        }
        g_assert_cmpint(e.type, ==, JOURNAL_ENTRY_GAP);
        g_assert_cmpuint(e.reason, ==, JOURNAL_GAP_HISTORY_LOST);
        g_assert_cmpuint(e.id, ==, last);
        g_assert_cmpint(journal_reader_next(slow, &e), ==, 0);
        append_n(j, 30000, 1, 0);
        g_assert_cmpint(journal_reader_next(slow, &e), ==, 1);
        g_assert_cmpuint(e.id, ==, last + 1);
        journal_reader_free(slow);

        a = read_from(j, NULL, 0);
        {
                g_autofree char *want = g_strdup_printf("G%" PRIu64 " history-lost whole", last + 1);
                assert_lines(a, want);
        }
        g_ptr_array_unref(a);
        a = read_from(j, NULL, st.oldest_cursor - 1);
        g_assert_true(g_str_has_prefix(a->pdata[0], "G"));
        g_ptr_array_unref(a);
        a = read_from(j, NULL, st.oldest_cursor);
        g_assert_cmpuint(a->len, ==, last + 1 - st.oldest_cursor);
        assert_events(a, 0, (unsigned) st.oldest_cursor - 1 + 100 - 100, 0);
        g_assert_cmpuint(id_of(a, 0), ==, st.oldest_cursor + 1);

        /* A smaller cap on reload drops more. */
        g_assert_cmpint(journal_set_max_bytes(j, JOURNAL_MAX_BYTES_MIN - 1), ==, -EINVAL);
        journal_free(j);
        rm_rf(top);
}

/* A user's journals share a cap: the biggest gives first. */
static void test_user_cap(void) {
        g_autofree char *top = g_dir_make_tmp("test-journal-XXXXXX", NULL);
        Journal *j[3] = {};
        JournalStats st[3];
        uint64_t total = 0;

        for (unsigned i = 0; i < 3; i++) {
                g_autofree char *d = g_strdup_printf("%s/j%u", top, i);

                g_assert_cmpint(journal_open(d, 1 * MB, &j[i]), ==, 0);
        }
        append_n(j[0], 0, 20000, 100); /* ~400 KB */
        append_n(j[1], 0, 5000, 100);  /* ~100 KB */
        append_n(j[2], 0, 100, 100);   /* ~2 KB */
        for (unsigned i = 0; i < 3; i++)
                journal_stats(j[i], &st[i]);
        g_assert_cmpuint(st[0].bytes, >, 300 * 1024);

        g_assert_cmpint(journal_enforce_cap(j, 3, 256 * 1024), ==, 0);
        for (unsigned i = 0; i < 3; i++) {
                JournalStats now;

                journal_stats(j[i], &now);
                total += now.bytes;
                if (i > 0)
                        g_assert_cmpuint(now.bytes, ==, st[i].bytes); /* the small ones keep all */
                else
                        g_assert_cmpuint(now.oldest_cursor, >, 0);
        }
        g_assert_cmpuint(total, <=, 256 * 1024);

        /* A cap below what the active segments hold: everything droppable goes, nothing breaks. */
        g_assert_cmpint(journal_enforce_cap(j, 3, 1), ==, 0);
        for (unsigned i = 0; i < 3; i++) {
                g_autoptr(GPtrArray) a = read_from(j[i], NULL, 0);
                JournalStats now;

                journal_stats(j[i], &now);
                g_assert_cmpuint(now.segments, ==, 1);
                g_assert_cmpuint(a->len, ==, 1);
                g_assert_nonnull(strstr(a->pdata[0], "history-lost"));
                journal_free(j[i]);
        }
        rm_rf(top);
}

/* ---------------------------------------------------------------------- */
/* A full disk */

typedef struct LostEvent {
        uint32_t mask;
        const char *path;
        const char *new_path;
} LostEvent;

typedef struct ScopeCase {
        const char *name;
        LostEvent events[8];
        unsigned many;     /* and this many files in as many directories */
        const char *scope; /* what the gap says */
} ScopeCase;

/* clang-format off */
static const ScopeCase scope_cases[] = {
        { "/journal/disk-full/files", {
                { IN_CREATE, "/w/a/x" }, { IN_MODIFY, "/w/a/y" }, { IN_DELETE, "/w/c/z" } },
          0, "/w/a /w/c" },
        { "/journal/disk-full/a directory appears", {
                { IN_CREATE | IN_ISDIR, "/w/b" }, { IN_CREATE, "/w/b/c/f" } },
          0, "/w /w/b+" },
        { "/journal/disk-full/a directory covers what was below", {
                { IN_CREATE, "/w/b/c/f" }, { IN_CREATE, "/w/b/g" }, { IN_MOVED_TO | IN_ISDIR, "/w/b" } },
          0, "/w /w/b+" },
        { "/journal/disk-full/renames", {
                { IN_MOVED_FROM | IN_MOVED_TO, "/w/c/f", "/w/d/g" },
                { IN_MOVED_FROM | IN_MOVED_TO | IN_ISDIR, "/w/e", "/w/f/e2" } },
          0, "/w /w/c /w/d /w/f /w/f/e2+" },
        { "/journal/disk-full/too many directories", { { IN_CREATE, "/w/a/x" } }, 64, "whole" },
};
/* clang-format on */

static char *scope_of(const char *line) {
        /* "G<id> disk-full <scope>" */
        const char *p = strstr(line, " disk-full ");

        g_assert_nonnull(p);
        return g_strdup(p + strlen(" disk-full "));
}

/*
 * Writes fail past RLIMIT_FSIZE with EFBIG, as they would with ENOSPC: the
 * records are lost, and once writing works the gap says where to rescan,
 * before anything newer.
 */
static void test_disk_full_scope(gconstpointer data) {
        const ScopeCase *c = data;
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autoptr(GPtrArray) segs = NULL;
        g_autoptr(GPtrArray) a = NULL;
        struct rlimit old, small;
        Journal *j = NULL;
        uint64_t before;

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        append_n(j, 0, 100, 0); /* past the meta file's 1 KiB: see below */
        before = journal_last_id(j);
        segs = segment_files(jdir);

        g_assert_cmpint(getrlimit(RLIMIT_FSIZE, &old), ==, 0);
        small = old;
        small.rlim_cur = (rlim_t) file_size(segs->pdata[0]) + 10;
        signal(SIGXFSZ, SIG_IGN);
        g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &small), ==, 0);

        for (unsigned i = 0; i < G_N_ELEMENTS(c->events) && c->events[i].path; i++) {
                g_assert_cmpint(journal_append_event(j, c->events[i].mask, 0, c->events[i].path, c->events[i].new_path),
                                ==, 0);
                /* A flush a record: the scope builds up over several failures. */
                g_assert_cmpint(journal_flush(j), ==, -EFBIG);
                g_assert_true(journal_is_losing(j));
        }
        for (unsigned i = 0; i < c->many; i++) {
                g_autofree char *p = g_strdup_printf("/w/many%u/f", i);

                g_assert_cmpint(journal_append_event(j, IN_CREATE, 0, p, NULL), ==, 0);
        }
        if (c->many)
                g_assert_cmpint(journal_flush(j), ==, -EFBIG);
        /* Nothing was written, nothing was given an id. */
        a = read_from(j, NULL, before);
        g_assert_cmpuint(a->len, ==, 0);
        g_assert_cmpuint(journal_last_id(j), ==, before);

        g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &old), ==, 0);
        g_assert_cmpint(journal_append_event(j, IN_DELETE, 0, "/w/after", NULL), ==, 0);
        g_assert_cmpint(journal_flush(j), ==, 0);
        g_assert_false(journal_is_losing(j));

        g_ptr_array_unref(a);
        a = read_from(j, NULL, before);
        g_assert_cmpuint(a->len, ==, 2);
        {
                g_autofree char *scope = scope_of(a->pdata[0]);
                g_assert_cmpstr(scope, ==, c->scope);
        }
        g_assert_cmpuint(id_of(a, 0), ==, before + 1);
        g_assert_true(g_str_has_suffix(a->pdata[1], " 200 /w/after"));
        journal_free(j);
        rm_rf(top);
}

/* A daemon that stops (or crashes) while losing: the gap is recorded at the next start. */
static void test_disk_full_at_stop(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        g_autoptr(GPtrArray) a = NULL;
        Journal *j = NULL;
        int status;
        pid_t pid;

        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                g_autoptr(GPtrArray) segs = NULL;
                struct rlimit small;

                if (journal_open(jdir, 64 * MB, &j) < 0)
                        _exit(1);
                /* Past the meta file's 1 KiB, which the limit must not cover (a full disk
                 * does not stop writes in place). */
                append_n(j, 0, 100, 0);
                segs = segment_files(jdir);
                signal(SIGXFSZ, SIG_IGN);
                getrlimit(RLIMIT_FSIZE, &small);
                small.rlim_cur = (rlim_t) file_size(segs->pdata[0]);
                setrlimit(RLIMIT_FSIZE, &small);
                if (journal_append_event(j, IN_CREATE, 0, "/w/lost", NULL) < 0 || journal_flush(j) >= 0)
                        _exit(2);
                _exit(0); /* a crash while losing */
        }
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        a = read_from(j, NULL, 100);
        g_assert_cmpuint(a->len, ==, 1);
        g_assert_nonnull(strstr(a->pdata[0], " disk-full whole"));
        journal_free(j);

        /* Recorded once: not again at the next start. */
        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        g_ptr_array_unref(a);
        a = read_from(j, NULL, 100);
        g_assert_cmpuint(a->len, ==, 1);
        journal_free(j);
        rm_rf(top);
}

/*
 * A real full filesystem: a 256 KiB tmpfs in a mount namespace of a child,
 * filled up by another file. Segments cannot be made, frames cannot be
 * written; the meta file, written in place, still can. Space returns: the
 * gap is written first.
 */
static int disk_full_child(const char *top) {
        g_autofree char *mnt = g_build_filename(top, "mnt", NULL);
        g_autofree char *jdir = g_build_filename(mnt, "j", NULL);
        g_autofree char *filler = g_build_filename(mnt, "filler", NULL);
        g_autoptr(GPtrArray) a = NULL;
        static char block[4096];
        Journal *j = NULL;
        uint64_t before;
        unsigned i;
        int fd, r;

        if (unshare(CLONE_NEWNS) < 0) {
                uid_t uid = getuid();
                gid_t gid = getgid();
                g_autofree char *map = NULL;

                if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                        return 77;
                map = g_strdup_printf("0 %u 1", uid);
                if (!g_file_set_contents("/proc/self/uid_map", map, -1, NULL))
                        return 77;
                (void) g_file_set_contents("/proc/self/setgroups", "deny", -1, NULL);
                g_free(map);
                map = g_strdup_printf("0 %u 1", gid);
                (void) g_file_set_contents("/proc/self/gid_map", map, -1, NULL);
        }
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return 77;
        g_assert_cmpint(g_mkdir(mnt, 0700), ==, 0);
        if (mount("watchd-test", mnt, "tmpfs", 0, "size=256k") < 0)
                return 77;

        g_assert_cmpint(journal_open(jdir, JOURNAL_MAX_BYTES_MIN, &j), ==, 0);
        append_n(j, 0, 50, 10);
        before = journal_last_id(j);

        fd = open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        g_assert_cmpint(fd, >=, 0);
        while (write(fd, block, sizeof(block)) > 0)
                ;
        g_assert_cmpint(errno, ==, ENOSPC);
        /* The last partial page: fill it byte by byte until nothing goes. */
        while (write(fd, block, 1) > 0)
                ;
        close(fd);

        /* Enough records to need new segments. What fits in the last page of the
         * segment file goes in; after the first failure, every write fails. */
        for (i = 0; i < 2000; i++) {
                g_autofree char *p = g_strdup_printf("/w/d%u/f%u", i % 3, i);

                g_assert_cmpint(journal_append_event(j, IN_CREATE, 0, p, NULL), ==, 0);
                if (i % 100 == 99) {
                        bool was_losing = journal_is_losing(j);

                        r = journal_flush(j);
                        if (was_losing || r < 0)
                                g_assert_cmpint(r, ==, -ENOSPC);
                }
        }
        g_assert_true(journal_is_losing(j));
        before = journal_last_id(j);
        g_assert_cmpuint(before, <, 50 + 1900);
        a = read_from(j, NULL, before);
        g_assert_cmpuint(a->len, ==, 0);

        g_assert_cmpint(unlink(filler), ==, 0);
        g_assert_cmpint(journal_append_event(j, IN_CREATE, 0, "/w/back", NULL), ==, 0);
        g_assert_cmpint(journal_flush(j), ==, 0);
        g_assert_false(journal_is_losing(j));
        g_ptr_array_unref(a);
        a = read_from(j, NULL, before);
        {
                g_autofree char *want = g_strdup_printf("G%" PRIu64 " disk-full /w/d0 /w/d1 /w/d2\n"
                                                        "E%" PRIu64 " 100 /w/back",
                                                        before + 1, before + 2);
                assert_lines(a, want);
        }
        journal_free(j);
        return 0;
}

static void test_disk_full_tmpfs(void) {
        g_autofree char *top = g_dir_make_tmp("test-journal-XXXXXX", NULL);
        int status;
        pid_t pid;

        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0)
                _exit(disk_full_child(top));
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        rm_rf(top);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
                g_test_skip("cannot mount a tmpfs here (no mount namespace)");
                return;
        }
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/* ---------------------------------------------------------------------- */
/* Size */

/*
 * Bytes on disk per event for what a storm looks like: files created,
 * written, closed and deleted in a few directories, flushed in batches of
 * 256 as the daemon flushes after each read of the kernel.
 */
static void test_bytes_per_event(void) {
        g_autofree char *top = NULL, *jdir = tmp_journal(&top);
        static const uint32_t masks[] = { IN_CREATE, IN_MODIFY, IN_CLOSE_WRITE, IN_DELETE };
        JournalStats st;
        Journal *j = NULL;
        const unsigned n = 100000;
        double per_event;

        g_assert_cmpint(journal_open(jdir, 64 * MB, &j), ==, 0);
        for (unsigned i = 0; i < n; i++) {
                g_autofree char *p = g_strdup_printf("/home/user/project/build/obj%02u/file-%06u.o", (i / 4) % 10, i / 4);

                g_assert_cmpint(journal_append_event(j, masks[i % 4], 0, p, NULL), ==, 0);
                if (i % 256 == 255)
                        g_assert_cmpint(journal_flush(j), ==, 0);
        }
        g_assert_cmpint(journal_flush(j), ==, 0);
        journal_stats(j, &st);
        per_event = (double) (st.bytes - 1024) / n;
        g_test_message("journal: %.2f bytes per event (%" PRIu64 " bytes, %u events, %u segments)", per_event, st.bytes,
                       n, st.segments);
        /* The paths are 46 bytes: prefix sharing must take most of them away. */
        g_assert_cmpfloat(per_event, <, 12.0);
        journal_free(j);
        rm_rf(top);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        g_test_add_func("/journal/roundtrip", test_roundtrip);
        g_test_add_func("/journal/bad input", test_bad_input);
        g_test_add_func("/journal/gaps stored", test_gaps_stored);
        g_test_add_func("/journal/cursors", test_cursors);
        g_test_add_func("/journal/reopen clean", test_reopen_clean);
        g_test_add_func("/journal/ids never repeat", test_ids_never_repeat);
        for (size_t i = 0; i < G_N_ELEMENTS(tail_cases); i++)
                g_test_add_data_func(tail_cases[i].name, &tail_cases[i], test_torn_tail);
        for (size_t i = 0; i < G_N_ELEMENTS(middle_cases); i++)
                g_test_add_data_func(middle_cases[i].name, &middle_cases[i], test_corrupt_middle);
        g_test_add_func("/journal/missing segment", test_missing_segment);
        g_test_add_func("/journal/meta", test_meta);
        g_test_add_func("/journal/foreign", test_foreign);
        g_test_add_func("/journal/cap", test_cap);
        g_test_add_func("/journal/user cap", test_user_cap);
        for (size_t i = 0; i < G_N_ELEMENTS(scope_cases); i++)
                g_test_add_data_func(scope_cases[i].name, &scope_cases[i], test_disk_full_scope);
        g_test_add_func("/journal/disk-full/at stop", test_disk_full_at_stop);
        g_test_add_func("/journal/disk-full/tmpfs", test_disk_full_tmpfs);
        g_test_add_func("/journal/bytes per event", test_bytes_per_event);
        return g_test_run();
}
