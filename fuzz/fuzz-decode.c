/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz-decode - the kernel's bytes through the decoder and the rename pairer
 *
 * The input is what a read() of the kernel fd could return, interleaved with
 * the passing of time. It is consumed as a little program:
 *
 *   byte 0      max_distance of the pairer (1..256)
 *   bytes 1-2   move_pair_timeout in milliseconds (0..1023)
 *   then ops, each one byte and its operands:
 *     0  read    u16 length L, then L bytes handed to event_decode() as one
 *                read; every record decoded is pushed to the pairer
 *     1  tick    u16 milliseconds the clock advances, then pop what is due
 *     2  force   pop the head whatever it waits for (a flush before Overflow)
 *     3  drop    drop the queued events (a client's backlog overflowed)
 *
 * Each read is also handed to fan_decode() (the fanotify group's decoder):
 * it never moves past the buffer, leaves the offset alone on -EBADMSG, and
 * returns handles and names inside the event they came from, names without
 * '/' and never "..".
 *
 * Checked on every input, besides ASan/UBSan's own checks: the decoder never
 * moves past the buffer nor returns a name with '/', a NUL or "."/".."; on
 * -EBADMSG it leaves the offset alone; records leave in the order they
 * entered (a folded MOVED_TO leaves inside its MOVED_FROM); a held head is
 * only ever an unpaired MOVED_FROM younger than the timeout with fewer than
 * max_distance records behind it, and its deadline is in the future; every
 * record pushed is accounted for as popped, folded or dropped.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_bits.h"
#include "event_decode.h"
#include "fan_decode.h"
#include "log.h"
#include "move_pairer.h"
#include "record.h"

#include "fuzz-check.h"

typedef struct Input {
        const uint8_t *p;
        size_t left;
} Input;

static int take(Input *in, void *buf, size_t n) {
        if (in->left < n)
                return 0;
        memcpy(buf, in->p, n);
        in->p += n;
        in->left -= n;
        return 1;
}

typedef struct State {
        MovePairer pairer;
        uint64_t now;
        uint32_t next_seq;    /* stamped in Record.id: the push order */
        uint32_t last_popped; /* seq of the last record that left */
        size_t pushed, popped, folded, dropped;
} State;

static void popped(State *s, Record *r) {
        /* Kernel order is kept: ids are the push sequence, so they only grow. */
        CHECK(r->id > s->last_popped);
        s->last_popped = r->id;
        if (r->new_path)
                CHECK((r->mask & (IN_MOVED_FROM | IN_MOVED_TO)) == (IN_MOVED_FROM | IN_MOVED_TO));
        s->popped++;
        record_free(r);
}

static void check_held(State *s) {
        /* pop() returned NULL: either empty, or the head is a waiting MOVED_FROM. */
        const MovePairer *p = &s->pairer;
        const Record *h;
        uint64_t d;

        if (p->n == 0) {
                CHECK(move_pairer_next_deadline(p) == UINT64_MAX);
                return;
        }
        h = p->items[p->head];
        CHECK(h->kind == RECORD_EVENT);
        CHECK((h->mask & (IN_MOVED_FROM | IN_MOVED_TO)) == IN_MOVED_FROM);
        CHECK(h->cookie != 0);
        CHECK(p->n - 1 < p->max_distance);
        d = move_pairer_next_deadline(p);
        CHECK(d != UINT64_MAX && d > s->now);
}

static void pop_due(State *s) {
        Record *r;

        while ((r = move_pairer_pop(&s->pairer, s->now)))
                popped(s, r);
        check_held(s);
}

static void dropped_one(uint32_t id, void *userdata) {
        State *s = userdata;

        CHECK(id > s->last_popped);
}

static void do_read(State *s, const uint8_t *buf, size_t size) {
        static const char *const dirs[] = { "/", "/tmp/w", "/a/very/long/watched/directory" };
        size_t off = 0, before;
        RawEvent ev;
        int r;

        for (;;) {
                before = off;
                r = event_decode(buf, size, &off, &ev);
                if (r <= 0) {
                        CHECK(off == before);
                        CHECK(r == 0 || r == -EBADMSG);
                        CHECK(r != 0 || off >= size);
                        break;
                }
                CHECK(r == 1);
                CHECK(off > before && off <= size);
                CHECK(off - before >= EVENT_HEADER_SIZE);
                if (ev.name) {
                        CHECK(ev.name_len > 0);
                        CHECK((const uint8_t *) ev.name >= buf + before + EVENT_HEADER_SIZE);
                        CHECK((const uint8_t *) ev.name + ev.name_len < buf + off); /* its NUL is inside */
                        CHECK(!memchr(ev.name, '/', ev.name_len));
                        CHECK(!memchr(ev.name, '\0', ev.name_len));
                        CHECK(!(ev.name_len == 1 && ev.name[0] == '.'));
                        CHECK(!(ev.name_len == 2 && ev.name[0] == '.' && ev.name[1] == '.'));
                } else
                        CHECK(ev.name_len == 0);

                /* As handle_event() would: a record per event, on one of a few watched paths. */
                Record *rec = record_new(RECORD_EVENT, ++s->next_seq, ev.mask, ev.cookie, s->now,
                                         dirs[(uint32_t) ev.wd % 3], ev.name, ev.name_len);
                CHECK(rec);
                size_t n = move_pairer_size(&s->pairer);
                CHECK(move_pairer_push(&s->pairer, rec) == 0);
                s->pushed++;
                if (move_pairer_size(&s->pairer) == n)
                        s->folded++;
                else
                        CHECK(move_pairer_size(&s->pairer) == n + 1);
        }
}

static void check_fan_handle(const FanHandle *h, const uint8_t *start, const uint8_t *end) {
        CHECK(h->size > 0 && h->size <= FAN_HANDLE_MAX);
        CHECK(h->bytes >= start && h->bytes + h->size <= end);
}

static void check_fan_entry(const FanEntry *e, const uint8_t *start, const uint8_t *end) {
        check_fan_handle(&e->dir, start, end);
        if (!e->name)
                return;
        CHECK(e->name_len > 0);
        CHECK((const uint8_t *) e->name > start && (const uint8_t *) e->name + e->name_len < end);
        CHECK(!memchr(e->name, '/', e->name_len));
        CHECK(!memchr(e->name, '\0', e->name_len));
        CHECK(!(e->name_len == 2 && e->name[0] == '.' && e->name[1] == '.'));
}

/* The same bytes as a read of a fanotify group. */
static void do_fan_read(const uint8_t *buf, size_t size) {
        size_t off = 0, before;
        FanRawEvent ev;
        int r;

        for (;;) {
                before = off;
                r = fan_decode(buf, size, &off, &ev);
                if (r <= 0) {
                        CHECK(off == before);
                        CHECK(r == 0 || r == -EBADMSG);
                        break;
                }
                CHECK(off > before && off <= size);
                if (ev.has_entry)
                        check_fan_entry(&ev.entry, buf + before, buf + off);
                if (ev.has_old)
                        check_fan_entry(&ev.old_entry, buf + before, buf + off);
                if (ev.has_new)
                        check_fan_entry(&ev.new_entry, buf + before, buf + off);
                if (ev.has_object)
                        check_fan_handle(&ev.object, buf + before, buf + off);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Input in = { data, size };
        State s = { .now = 1000000 };
        uint8_t distance, op;
        uint16_t timeout_ms, u16;

        log_set_max_level(LOG_EMERG);
        if (!take(&in, &distance, 1) || !take(&in, &timeout_ms, 2))
                return 0;
        move_pairer_init(&s.pairer, (uint64_t) (timeout_ms % 1024) * 1000, (size_t) distance + 1);

        while (take(&in, &op, 1)) {
                switch (op % 4) {
                case 0: {
                        uint8_t *copy;

                        if (!take(&in, &u16, 2))
                                break;
                        if (u16 > in.left)
                                u16 = (uint16_t) in.left;
                        /* A copy of exactly the read's size, so ASan sees any overread. */
                        copy = malloc(u16 ? u16 : 1);
                        CHECK(copy);
                        memcpy(copy, in.p, u16);
                        in.p += u16;
                        in.left -= u16;
                        do_read(&s, copy, u16);
                        do_fan_read(copy, u16);
                        free(copy);
                        pop_due(&s);
                        break;
                }
                case 1:
                        if (!take(&in, &u16, 2))
                                break;
                        s.now += (uint64_t) u16 * 1000;
                        pop_due(&s);
                        break;
                case 2: {
                        Record *r = move_pairer_pop_force(&s.pairer);
                        if (r)
                                popped(&s, r);
                        break;
                }
                case 3:
                        s.dropped += move_pairer_drop_events(&s.pairer, dropped_one, &s);
                        break;
                }
        }

        /* Long after everything: nothing is held any more. */
        s.now += 2000000;
        pop_due(&s);
        CHECK(move_pairer_size(&s.pairer) == 0);
        CHECK(s.pushed == s.popped + s.folded + s.dropped);
        move_pairer_done(&s.pairer);
        return 0;
}
