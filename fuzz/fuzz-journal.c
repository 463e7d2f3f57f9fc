/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz-journal - any bytes in a journal's segment, through open and the reader
 *
 * A journal is made in a directory of its own (on /dev/shm, where fsync
 * costs nothing), closed, and its segment's frames replaced by the input;
 * then it is opened again (which cuts a torn tail, or moves on to a new
 * segment after damage) and read. The input:
 *
 *   byte 0     mode: bit 0  frames are built from the input with valid
 *                           checksums (else the input is the raw bytes
 *                           after the segment header);
 *                    bit 1  the fuzzed segment is a closed one, followed by
 *                           an empty active segment whose prev id is the
 *                           next 2 input bytes
 *   bytes 1-2  a cursor to resume from besides 0
 *   the rest   raw bytes, or (bit 0) frames, each:
 *                u16 payload size, u8 count (0 -> 1), u8 id step (the
 *                first id is the last one + 1 + step; 255: the last one,
 *                which must be refused), then the payload
 *
 * Checked on every input, besides ASan/UBSan's own checks: open succeeds;
 * a reader ends (caught up) after at most as many entries as the input
 * could hold; events come with growing ids, a gap's id is never below the
 * entry before it; every path is absolute, NUL-free and at most
 * JOURNAL_PATH_MAX bytes; a gap is whole or has 1 to 64 directories; a
 * reader from the cursor returns exactly the tail of the reader from 0
 * that lies after the cursor (gaps aside); the journal takes a new record
 * after any damage, gives it an id above every other, and, opened once
 * more, returns what it returned before and that record.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "log.h"

#include "fuzz-check.h"

#define SEGMENT_HEADER 56
#define FRAME_HEADER   24
#define MAX_LINES      (1 << 16)

static char *top; /* our directory, made once */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void clear_dir(const char *dir);

/* libFuzzer ends with exit(): our directory goes with it. */
static void remove_top(void) {
        char dir[4096];

        snprintf(dir, sizeof(dir), "%s/j", top);
        clear_dir(dir);
        (void) rmdir(top);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        static char tmpl[] = "/dev/shm/fuzz-journal-XXXXXX";
        static char tmpl2[] = "/tmp/fuzz-journal-XXXXXX";

        log_set_max_level(LOG_CRIT); /* damage is logged: quiet, it is the point */
        top = mkdtemp(tmpl);
        if (!top)
                top = mkdtemp(tmpl2);
        CHECK(top);
        CHECK(atexit(remove_top) == 0);
        return 0;
}

static void put_le32(uint8_t *p, uint32_t v) {
        for (unsigned i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v) {
        for (unsigned i = 0; i < 8; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static void write_file(const char *path, const void *p, size_t n) {
        FILE *f = fopen(path, "we");

        CHECK(f);
        CHECK(fwrite(p, 1, n, f) == n);
        CHECK(fclose(f) == 0);
}

static void clear_dir(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        CHECK(unlinkat(dirfd(d), de->d_name, 0) == 0);
        closedir(d);
        CHECK(rmdir(dir) == 0);
}

typedef struct Lines {
        char *line[MAX_LINES];
        uint64_t id[MAX_LINES];
        bool gap[MAX_LINES];
        size_t n;
} Lines;

static void lines_clear(Lines *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->line[i]);
        l->n = 0;
}

static void check_path(const char *p) {
        CHECK(p);
        CHECK(p[0] == '/');
        CHECK(strlen(p) <= JOURNAL_PATH_MAX);
}

/* Reads all from after; checks each entry; returns them as lines. */
static void read_all(Journal *j, uint64_t after, size_t max, Lines *ret) {
        JournalReader *r = NULL;
        uint64_t last = after;
        JournalEntry e;
        int k;

        CHECK(journal_reader_new(j, NULL, after, &r) == 0);
        while ((k = journal_reader_next(r, &e)) > 0) {
                char buf[256];

                CHECK(ret->n < max && ret->n < MAX_LINES);
                if (e.type == JOURNAL_ENTRY_EVENT) {
                        CHECK(e.id > last);
                        check_path(e.path);
                        if (e.new_path)
                                check_path(e.new_path);
                        snprintf(buf, sizeof(buf), "E%" PRIu64 " %x %u %zu %zu", e.id, e.mask, e.cookie, strlen(e.path),
                                 e.new_path ? strlen(e.new_path) : 0);
                } else {
                        CHECK(e.type == JOURNAL_ENTRY_GAP);
                        CHECK(e.id >= last);
                        CHECK(e.reason != 0);
                        CHECK(e.whole == (e.n_scope == 0));
                        CHECK(e.n_scope <= JOURNAL_GAP_MAX_SCOPE);
                        for (size_t i = 0; i < e.n_scope; i++)
                                check_path(e.scope[i].path);
                        snprintf(buf, sizeof(buf), "G%" PRIu64 " %u %zu", e.id, e.reason, e.n_scope);
                }
                CHECK(journal_reader_position(r) == e.id);
                last = e.id;
                ret->line[ret->n] = strdup(buf);
                CHECK(ret->line[ret->n]);
                ret->id[ret->n] = e.id;
                ret->gap[ret->n] = e.type == JOURNAL_ENTRY_GAP;
                ret->n++;
        }
        CHECK(k == 0);
        journal_reader_free(r);
}

/* Frames with valid checksums from the input. */
static size_t build_frames(const uint8_t *in, size_t n, uint8_t *out) {
        uint64_t last = 0;
        size_t o = 0;

        while (n >= 4) {
                size_t size = (size_t) (in[0] | in[1] << 8);
                uint32_t count = in[2] ? in[2] : 1;
                uint8_t step = in[3];
                uint64_t first = step == 255 ? last : last + 1 + step;
                uint32_t crc;

                in += 4;
                n -= 4;
                if (size > n)
                        size = n;
                put_le32(out + o, 0x1f4a57f7u);
                put_le32(out + o + 4, (uint32_t) size);
                put_le64(out + o + 8, first);
                put_le32(out + o + 16, count);
                crc = journal_crc32c(0, out + o, 20);
                crc = journal_crc32c(crc, in, size);
                put_le32(out + o + 20, crc);
                memcpy(out + o + FRAME_HEADER, in, size);
                o += FRAME_HEADER + size;
                in += size;
                n -= size;
                if (first + count - 1 > last)
                        last = first + count - 1;
        }
        return o;
}

static void segment_header(const JournalId *id, uint64_t name, uint64_t prev, uint8_t h[static SEGMENT_HEADER]) {
        memset(h, 0, SEGMENT_HEADER);
        memcpy(h, "WATCHDJ1", 8);
        put_le32(h + 8, 1);
        put_le32(h + 12, SEGMENT_HEADER);
        memcpy(h + 16, id->bytes, 16);
        put_le64(h + 32, name);
        put_le64(h + 40, prev);
        put_le32(h + 52, journal_crc32c(0, h, 52));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static Lines all, tail, again;
        char dir[4096], seg[4200];
        uint8_t *body;
        size_t body_size;
        uint64_t cursor, last;
        JournalId id;
        Journal *j = NULL;
        uint8_t mode;

        if (size < 3 || size > 256 * 1024)
                return 0;
        mode = data[0];
        cursor = (uint64_t) (data[1] | data[2] << 8);
        data += 3;
        size -= 3;

        snprintf(dir, sizeof(dir), "%s/j", top);
        CHECK(journal_open(dir, JOURNAL_MAX_BYTES_MIN * 16, &j) == 0);
        id = *journal_identity(j);
        journal_free(j);

        body = malloc(SEGMENT_HEADER + size + (size / 4 + 1) * FRAME_HEADER);
        CHECK(body);
        segment_header(&id, 1, 0, body);
        if (mode & 1)
                body_size = SEGMENT_HEADER + build_frames(data, size, body + SEGMENT_HEADER);
        else {
                memcpy(body + SEGMENT_HEADER, data, size);
                body_size = SEGMENT_HEADER + size;
        }
        snprintf(seg, sizeof(seg), "%s/seg-%016x", dir, 1);
        write_file(seg, body, body_size);
        if (mode & 2) {
                /* A closed segment then an empty active one: its prev id from the cursor bytes. */
                uint8_t h[SEGMENT_HEADER];

                segment_header(&id, UINT64_C(1) << 40, cursor, h);
                snprintf(seg, sizeof(seg), "%s/seg-%016" PRIx64, dir, UINT64_C(1) << 40);
                write_file(seg, h, sizeof(h));
        }
        free(body);

        CHECK(journal_open(dir, JOURNAL_MAX_BYTES_MIN * 16, &j) == 0);
        lines_clear(&all);
        read_all(j, 0, size + 16, &all);

        /* From the cursor: the same records as the tail of the whole read. */
        if (cursor <= journal_last_id(j)) {
                size_t k = 0;

                lines_clear(&tail);
                read_all(j, cursor, size + 16, &tail);
                for (size_t i = 0; i < all.n; i++) {
                        if (all.gap[i] || all.id[i] <= cursor)
                                continue;
                        while (k < tail.n && tail.gap[k])
                                k++;
                        CHECK(k < tail.n);
                        CHECK(strcmp(all.line[i], tail.line[k]) == 0);
                        k++;
                }
                while (k < tail.n && tail.gap[k])
                        k++;
                CHECK(k == tail.n);
        }

        /* Still a journal: a new record, with an id above all. */
        last = journal_last_id(j);
        for (size_t i = 0; i < all.n; i++)
                CHECK(all.id[i] <= last);
        CHECK(journal_append_event(j, 0x100, 0, "/fuzz/new", NULL) == 0);
        CHECK(journal_flush(j) == 0);
        CHECK(journal_last_id(j) > last);
        journal_free(j);

        /* Opened again: what it gave before, then that record. */
        CHECK(journal_open(dir, JOURNAL_MAX_BYTES_MIN * 16, &j) == 0);
        lines_clear(&again);
        read_all(j, 0, size + 16, &again);
        CHECK(again.n == all.n + 1);
        for (size_t i = 0; i < all.n; i++)
                CHECK(strcmp(all.line[i], again.line[i]) == 0);
        CHECK(!again.gap[all.n] && again.id[all.n] > last);
        journal_free(j);

        clear_dir(dir);
        return 0;
}
