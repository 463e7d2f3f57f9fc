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

#include "poll_heap.h"

static bool heap_less(PollGroup *a, PollGroup *b) {
        return a->next_round < b->next_round;
}

PollGroup *poll_heap_at(const GPtrArray *heap, size_t i) {
        return heap->pdata[i];
}

static void heap_set(GPtrArray *heap, size_t i, PollGroup *g) {
        heap->pdata[i] = g;
        g->heap_index = i;
}

static void heap_up(GPtrArray *heap, size_t i) {
        PollGroup *g = poll_heap_at(heap, i);

        while (i > 0 && heap_less(g, poll_heap_at(heap, (i - 1) / 2))) {
                heap_set(heap, i, poll_heap_at(heap, (i - 1) / 2));
                i = (i - 1) / 2;
        }
        heap_set(heap, i, g);
}

static void heap_down(GPtrArray *heap, size_t i) {
        PollGroup *g = poll_heap_at(heap, i);

        for (;;) {
                size_t c = 2 * i + 1;

                if (c >= heap->len)
                        break;
                if (c + 1 < heap->len && heap_less(poll_heap_at(heap, c + 1), poll_heap_at(heap, c)))
                        c++;
                if (!heap_less(poll_heap_at(heap, c), g))
                        break;
                heap_set(heap, i, poll_heap_at(heap, c));
                i = c;
        }
        heap_set(heap, i, g);
}

int poll_heap_push(GPtrArray *heap, PollGroup *g) {
        g_ptr_array_add(heap, g);
        heap_set(heap, heap->len - 1, g);
        heap_up(heap, heap->len - 1);
        return 0;
}

void poll_heap_remove(GPtrArray *heap, PollGroup *g) {
        size_t i = g->heap_index;

        assert(i < heap->len && poll_heap_at(heap, i) == g);
        if (i < heap->len - 1) {
                heap_set(heap, i, poll_heap_at(heap, heap->len - 1));
                g_ptr_array_set_size(heap, heap->len - 1);
                heap_down(heap, i);
                heap_up(heap, poll_heap_at(heap, i)->heap_index);
        } else
                g_ptr_array_set_size(heap, heap->len - 1);
        g->heap_index = SIZE_MAX;
}
