/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * poll_heap - the poller's groups between rounds
 *
 * A binary min-heap on the start of each group's next round
 * (PollGroup.next_round) in Poller.heap, each group knowing its place
 * (PollGroup.heap_index, SIZE_MAX when it is not in the heap: in a round, or
 * ending one), so that a group is taken out from anywhere when it is freed,
 * and poller_run() finds the rounds that are due at the top.
 */

#include <assert.h>
#include <glib.h>
#include <stdint.h>

#include "poller_internal.h"

static bool heap_less(PollGroup *a, PollGroup *b) {
        return a->next_round < b->next_round;
}

PollGroup *poll_heap_at(const Poller *p, size_t i) {
        return p->heap->pdata[i];
}

static void heap_set(Poller *p, size_t i, PollGroup *g) {
        p->heap->pdata[i] = g;
        g->heap_index = i;
}

static void heap_up(Poller *p, size_t i) {
        PollGroup *g = poll_heap_at(p, i);

        while (i > 0 && heap_less(g, poll_heap_at(p, (i - 1) / 2))) {
                heap_set(p, i, poll_heap_at(p, (i - 1) / 2));
                i = (i - 1) / 2;
        }
        heap_set(p, i, g);
}

static void heap_down(Poller *p, size_t i) {
        PollGroup *g = poll_heap_at(p, i);

        for (;;) {
                size_t c = 2 * i + 1;

                if (c >= p->heap->len)
                        break;
                if (c + 1 < p->heap->len && heap_less(poll_heap_at(p, c + 1), poll_heap_at(p, c)))
                        c++;
                if (!heap_less(poll_heap_at(p, c), g))
                        break;
                heap_set(p, i, poll_heap_at(p, c));
                i = c;
        }
        heap_set(p, i, g);
}

int poll_heap_push(Poller *p, PollGroup *g) {
        g_ptr_array_add(p->heap, g);
        heap_set(p, p->heap->len - 1, g);
        heap_up(p, p->heap->len - 1);
        return 0;
}

void poll_heap_remove(Poller *p, PollGroup *g) {
        size_t i = g->heap_index;

        assert(i < p->heap->len && poll_heap_at(p, i) == g);
        if (i < p->heap->len - 1) {
                heap_set(p, i, poll_heap_at(p, p->heap->len - 1));
                g_ptr_array_set_size(p->heap, p->heap->len - 1);
                heap_down(p, i);
                heap_up(p, poll_heap_at(p, i)->heap_index);
        } else
                g_ptr_array_set_size(p->heap, p->heap->len - 1);
        g->heap_index = SIZE_MAX;
}
