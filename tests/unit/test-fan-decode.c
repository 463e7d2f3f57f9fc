/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-fan-decode - the fanotify decoder on events built byte by byte, on
 * noise, and on what the running kernel writes
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <linux/fanotify.h>
#include <stdio.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fan_decode.h"

/* An event under construction: the metadata, then records appended. */
typedef struct Ev {
        GByteArray *b;
} Ev;

static Ev ev_new(uint64_t mask, int32_t pid) {
        struct fanotify_event_metadata m = {
                .event_len = FAN_EVENT_METADATA_LEN,
                .vers = FANOTIFY_METADATA_VERSION,
                .metadata_len = FAN_EVENT_METADATA_LEN,
                .mask = mask,
                .fd = FAN_NOFD,
                .pid = pid,
        };
        Ev e = { g_byte_array_new() };

        g_byte_array_append(e.b, (guint8 *) &m, sizeof(m));
        return e;
}

/* A handle record: type, fsid words, handle bytes, and a name (NULL: none),
 * padded to 4 as the kernel does. */
static void ev_fid(Ev *e, uint8_t type, uint32_t fsid0, uint32_t fsid1, const char *handle, const char *name) {
        uint32_t hb = (uint32_t) strlen(handle);
        int32_t ht = 1;
        size_t nlen = name ? strlen(name) + 1 : 0;
        size_t len = 4 + 8 + 8 + hb + nlen;
        size_t padded = (len + 3) & ~(size_t) 3;
        struct fanotify_event_info_header h = { .info_type = type, .len = (uint16_t) padded };
        guint8 zero[4] = {};

        g_byte_array_append(e->b, (guint8 *) &h, sizeof(h));
        g_byte_array_append(e->b, (guint8 *) &fsid0, 4);
        g_byte_array_append(e->b, (guint8 *) &fsid1, 4);
        g_byte_array_append(e->b, (guint8 *) &hb, 4);
        g_byte_array_append(e->b, (guint8 *) &ht, 4);
        g_byte_array_append(e->b, (const guint8 *) handle, hb);
        if (name)
                g_byte_array_append(e->b, (const guint8 *) name, (guint) nlen);
        g_byte_array_append(e->b, zero, (guint) (padded - len));
}

/* Ends the event (its event_len) and appends it to out. */
static void ev_end(Ev *e, GByteArray *out) {
        uint32_t len = e->b->len;

        memcpy(e->b->data, &len, 4);
        g_byte_array_append(out, e->b->data, e->b->len);
        g_byte_array_unref(e->b);
}

static void assert_handle(const FanHandle *h, uint64_t fsid, const char *bytes) {
        g_assert_cmpuint(h->fsid, ==, fsid);
        g_assert_cmpint(h->type, ==, 1);
        g_assert_cmpuint(h->size, ==, strlen(bytes));
        g_assert_cmpmem(h->bytes, h->size, bytes, strlen(bytes));
}

static void assert_name(const FanEntry *e, const char *name) {
        g_assert_nonnull(e->name);
        g_assert_cmpuint(e->name_len, ==, strlen(name));
        g_assert_cmpmem(e->name, e->name_len, name, strlen(name));
}

static void test_create(void) {
        g_autoptr(GByteArray) buf = g_byte_array_new();
        Ev e = ev_new(FAN_CREATE | FAN_ONDIR, 42);
        FanRawEvent ev;
        size_t off = 0;

        ev_fid(&e, FAN_EVENT_INFO_TYPE_DFID_NAME, 7, 9, "PARENT01", "newdir");
        ev_fid(&e, FAN_EVENT_INFO_TYPE_FID, 7, 9, "CHILD002", NULL);
        ev_end(&e, buf);
        g_assert_cmpint(fan_decode(buf->data, buf->len, &off, &ev), ==, 1);
        g_assert_cmpuint(off, ==, buf->len);
        g_assert_cmphex(ev.mask, ==, FAN_CREATE | FAN_ONDIR);
        g_assert_cmpint(ev.pid, ==, 42);
        g_assert_cmpint(ev.fd, ==, FAN_NOFD);
        g_assert_true(ev.has_entry && ev.has_object && !ev.has_old && !ev.has_new);
        assert_handle(&ev.entry.dir, 7 | (uint64_t) 9 << 32, "PARENT01");
        assert_name(&ev.entry, "newdir");
        assert_handle(&ev.object, 7 | (uint64_t) 9 << 32, "CHILD002");
        g_assert_cmpint(fan_decode(buf->data, buf->len, &off, &ev), ==, 0);
}

static void test_rename(void) {
        g_autoptr(GByteArray) buf = g_byte_array_new();
        Ev e = ev_new(FAN_RENAME, 5);
        FanRawEvent ev;
        size_t off = 0;

        ev_fid(&e, FAN_EVENT_INFO_TYPE_OLD_DFID_NAME, 1, 0, "OLDDIR", "a");
        ev_fid(&e, FAN_EVENT_INFO_TYPE_NEW_DFID_NAME, 1, 0, "NEWDIR", "bb");
        ev_fid(&e, FAN_EVENT_INFO_TYPE_FID, 1, 0, "MOVED", NULL);
        ev_end(&e, buf);
        /* A second event behind it: the offset moves from one to the next. */
        e = ev_new(FAN_ATTRIB | FAN_ONDIR, 6);
        ev_fid(&e, FAN_EVENT_INFO_TYPE_DFID_NAME, 1, 0, "NEWDIR", ".");
        ev_end(&e, buf);

        g_assert_cmpint(fan_decode(buf->data, buf->len, &off, &ev), ==, 1);
        g_assert_true(!ev.has_entry && ev.has_old && ev.has_new && ev.has_object);
        assert_handle(&ev.old_entry.dir, 1, "OLDDIR");
        assert_name(&ev.old_entry, "a");
        assert_handle(&ev.new_entry.dir, 1, "NEWDIR");
        assert_name(&ev.new_entry, "bb");
        assert_handle(&ev.object, 1, "MOVED");
        g_assert_cmpint(fan_decode(buf->data, buf->len, &off, &ev), ==, 1);
        g_assert_cmphex(ev.mask, ==, FAN_ATTRIB | FAN_ONDIR);
        assert_name(&ev.entry, ".");
        g_assert_cmpint(fan_decode(buf->data, buf->len, &off, &ev), ==, 0);
}

static void test_overflow_and_unknown(void) {
        g_autoptr(GByteArray) buf = g_byte_array_new();
        Ev e = ev_new(FAN_Q_OVERFLOW, 0);
        struct {
                struct fanotify_event_info_header h;
                int32_t pidfd;
        } pidfd = { { .info_type = FAN_EVENT_INFO_TYPE_PIDFD, .len = 8 }, 3 };
        FanRawEvent ev;
        size_t off = 0;

        ev_end(&e, buf);
        /* A record kind the decoder does not know is skipped by its length. */
        e = ev_new(FAN_MODIFY, 9);
        g_byte_array_append(e.b, (guint8 *) &pidfd, sizeof(pidfd));
        ev_fid(&e, FAN_EVENT_INFO_TYPE_DFID_NAME, 1, 0, "D", "f");
        ev_end(&e, buf);

        g_assert_cmpint(fan_decode(buf->data, buf->len, &off, &ev), ==, 1);
        g_assert_cmphex(ev.mask, ==, FAN_Q_OVERFLOW);
        g_assert_false(ev.has_entry || ev.has_object);
        g_assert_cmpint(fan_decode(buf->data, buf->len, &off, &ev), ==, 1);
        g_assert_cmphex(ev.mask, ==, FAN_MODIFY);
        assert_name(&ev.entry, "f");
        g_assert_cmpint(fan_decode(buf->data, buf->len, &off, &ev), ==, 0);
}

/* Each malformed event is -EBADMSG, and the offset stays. */
static void assert_bad(GByteArray *buf, const char *what) {
        FanRawEvent ev;
        size_t off = 0;

        if (g_test_verbose())
                g_printerr("%s\n", what);
        g_assert_cmpint(fan_decode(buf->data, buf->len, &off, &ev), ==, -EBADMSG);
        g_assert_cmpuint(off, ==, 0);
}

static void test_malformed(void) {
        g_autoptr(GByteArray) good = g_byte_array_new();
        Ev e = ev_new(FAN_CREATE, 1);
        struct fanotify_event_metadata m;

        ev_fid(&e, FAN_EVENT_INFO_TYPE_DFID_NAME, 1, 0, "HANDLE", "name");
        ev_end(&e, good);

        for (guint cut = 1; cut < good->len; cut++) {
                g_autoptr(GByteArray) b = g_byte_array_new();

                g_byte_array_append(b, good->data, good->len - cut);
                assert_bad(b, "cut short");
        }
        {
                g_autoptr(GByteArray) b = g_byte_array_new();

                g_byte_array_append(b, good->data, good->len);
                b->data[4] = 2; /* vers */
                assert_bad(b, "another metadata version");
        }
        {
                g_autoptr(GByteArray) b = g_byte_array_new();

                g_byte_array_append(b, good->data, good->len);
                memcpy(&m, b->data, sizeof(m));
                m.event_len = 0xffffffffu;
                memcpy(b->data, &m, sizeof(m));
                assert_bad(b, "event_len past the buffer");
                m.event_len = 8;
                memcpy(b->data, &m, sizeof(m));
                assert_bad(b, "event_len below metadata_len");
                m.event_len = good->len;
                m.metadata_len = 4;
                memcpy(b->data, &m, sizeof(m));
                assert_bad(b, "metadata_len below the metadata");
        }
        {
                g_autoptr(GByteArray) b = g_byte_array_new();
                uint16_t len;

                g_byte_array_append(b, good->data, good->len);
                len = 2;
                memcpy(b->data + FAN_EVENT_METADATA_LEN + 2, &len, 2);
                assert_bad(b, "a record shorter than its header");
                len = 200;
                memcpy(b->data + FAN_EVENT_METADATA_LEN + 2, &len, 2);
                assert_bad(b, "a record past its event");
        }
        {
                g_autoptr(GByteArray) b = g_byte_array_new();
                uint32_t hb = FAN_HANDLE_MAX + 1;

                g_byte_array_append(b, good->data, good->len);
                memcpy(b->data + FAN_EVENT_METADATA_LEN + 12, &hb, 4);
                assert_bad(b, "a handle longer than MAX_HANDLE_SZ");
                hb = 0;
                memcpy(b->data + FAN_EVENT_METADATA_LEN + 12, &hb, 4);
                assert_bad(b, "an empty handle");
                hb = 40;
                memcpy(b->data + FAN_EVENT_METADATA_LEN + 12, &hb, 4);
                assert_bad(b, "a handle past its record");
        }
        {
                static const char *bad_names[] = { "..", "a/b", "" };

                for (size_t i = 0; i < G_N_ELEMENTS(bad_names); i++) {
                        g_autoptr(GByteArray) b = g_byte_array_new();
                        Ev x = ev_new(FAN_CREATE, 1);

                        ev_fid(&x, FAN_EVENT_INFO_TYPE_DFID_NAME, 1, 0, "H", bad_names[i]);
                        ev_end(&x, b);
                        assert_bad(b, bad_names[i]);
                }
        }
        {
                /* A name that fills its record to the end: no NUL. */
                g_autoptr(GByteArray) b = g_byte_array_new();
                Ev x = ev_new(FAN_CREATE, 1);
                struct fanotify_event_info_header h = { .info_type = FAN_EVENT_INFO_TYPE_DFID_NAME, .len = 24 };
                uint32_t w[4] = { 1, 0, 1, 1 };

                g_byte_array_append(x.b, (guint8 *) &h, sizeof(h));
                g_byte_array_append(x.b, (guint8 *) w, sizeof(w));
                g_byte_array_append(x.b, (const guint8 *) "Habc", 4);
                ev_end(&x, b);
                assert_bad(b, "a name without NUL");
        }
        {
                g_autoptr(GByteArray) b = g_byte_array_new();
                Ev x = ev_new(FAN_CREATE, 1);

                ev_fid(&x, FAN_EVENT_INFO_TYPE_DFID_NAME, 1, 0, "H", "a");
                ev_fid(&x, FAN_EVENT_INFO_TYPE_DFID_NAME, 1, 0, "H", "b");
                ev_end(&x, b);
                assert_bad(b, "two entries");
        }
}

/* Any bytes: the decoder returns, within the buffer. */
static void test_noise(void) {
        GRand *rand = g_rand_new_with_seed(29);
        guint8 buf[512];

        for (int round = 0; round < 20000; round++) {
                struct fanotify_event_metadata m = {
                        .event_len = (uint32_t) g_rand_int_range(rand, 0, sizeof(buf) + 8),
                        .vers = FANOTIFY_METADATA_VERSION,
                        .metadata_len = FAN_EVENT_METADATA_LEN,
                };
                size_t off = 0, len = (size_t) g_rand_int_range(rand, 0, sizeof(buf));
                FanRawEvent ev;

                for (size_t i = 0; i < sizeof(buf); i++)
                        buf[i] = (guint8) g_rand_int(rand);
                /* Mostly a plausible head, so that the records are reached. */
                if (round % 4 != 0)
                        memcpy(buf, &m, sizeof(m));
                while (fan_decode(buf, len, &off, &ev) == 1) {
                        g_assert_cmpuint(off, <=, len);
                        if (ev.has_entry && ev.entry.name)
                                g_assert_true((const guint8 *) ev.entry.name + ev.entry.name_len < buf + len);
                        if (ev.has_object)
                                g_assert_true(ev.object.bytes + ev.object.size <= buf + len);
                }
        }
        g_rand_free(rand);
}

/* What the running kernel writes, on an inode mark on a directory (no
 * privilege needed since Linux 5.13): a create, a rename with its target,
 * a delete, each with the directory's handle and the name. */
static void test_kernel(void) {
        g_autofree char *dir = g_dir_make_tmp("test-fan-decode-XXXXXX", NULL);
        g_autofree char *a = g_build_filename(dir, "a", NULL);
        g_autofree char *b = g_build_filename(dir, "b", NULL);
        uint8_t buf[8192];
        FanRawEvent ev;
        size_t off = 0;
        ssize_t n;
        int fd, seen = 0;

        g_assert_nonnull(dir);
        fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME_TARGET, O_RDONLY);
        if (fd < 0) {
                g_autofree char *why = g_strdup_printf("fanotify_init(FAN_REPORT_DFID_NAME_TARGET): %s "
                                                       "(Linux < 5.17, or no privilege)",
                                                       g_strerror(errno));

                g_test_skip(why);
                g_rmdir(dir);
                return;
        }
        g_assert_cmpint(fanotify_mark(fd, FAN_MARK_ADD, FAN_CREATE | FAN_RENAME | FAN_DELETE | FAN_ONDIR, AT_FDCWD, dir),
                        ==, 0);
        g_assert_cmpint(g_mkdir(a, 0700), ==, 0);
        g_assert_cmpint(g_rename(a, b), ==, 0);
        g_assert_cmpint(g_rmdir(b), ==, 0);
        n = read(fd, buf, sizeof(buf));
        g_assert_cmpint(n, >, 0);
        while (fan_decode(buf, (size_t) n, &off, &ev) == 1) {
                g_assert_cmpint(ev.pid, ==, getpid());
                g_assert_cmpint(ev.fd, ==, FAN_NOFD);
                g_assert_true(ev.mask & FAN_ONDIR);
                g_assert_true(ev.has_object);
                if (ev.mask & FAN_CREATE) {
                        assert_name(&ev.entry, "a");
                        seen |= 1;
                } else if (ev.mask & FAN_RENAME) {
                        assert_name(&ev.old_entry, "a");
                        assert_name(&ev.new_entry, "b");
                        g_assert_true(fan_handle_equal(&ev.old_entry.dir, &ev.new_entry.dir));
                        seen |= 2;
                } else if (ev.mask & FAN_DELETE) {
                        assert_name(&ev.entry, "b");
                        seen |= 4;
                }
        }
        g_assert_cmpuint(off, ==, (size_t) n);
        g_assert_cmpint(seen, ==, 7);
        close(fd);
        g_rmdir(dir);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/fan-decode/create", test_create);
        g_test_add_func("/fan-decode/rename", test_rename);
        g_test_add_func("/fan-decode/overflow-and-unknown", test_overflow_and_unknown);
        g_test_add_func("/fan-decode/malformed", test_malformed);
        g_test_add_func("/fan-decode/noise", test_noise);
        g_test_add_func("/fan-decode/kernel", test_kernel);
        return g_test_run();
}
