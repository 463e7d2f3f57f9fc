/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ptr_set - an open-addressed set of pointers: see ptr_set.h.
 *
 * Slot i holds an item whose home (its hash's low bits) is at or before i,
 * with no empty slot between: a lookup stops at the first empty slot, and a
 * removal moves back each later item of the run that may sit in the freed
 * slot, so that this stays true.
 */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "ptr_set.h"

#define TAG_SHIFT 48
#define MIN_SLOTS 16

static inline bool tags_fit(void) {
        return UINTPTR_MAX == UINT64_MAX;
}

static inline uintptr_t slot_make(const PtrSet *s, const void *item, uint64_t h) {
        if (s->untagged)
                return (uintptr_t) item;
        return (uintptr_t) item | (uintptr_t) (h >> TAG_SHIFT << TAG_SHIFT);
}

static inline void *slot_item(const PtrSet *s, uintptr_t v) {
        if (s->untagged)
                return (void *) v;
        return (void *) (v & (((uintptr_t) 1 << (tags_fit() ? TAG_SHIFT : 0)) - 1));
}

/* Whether slot v may hold an item of hash h (always, without tags). */
static inline bool slot_tag_matches(const PtrSet *s, uintptr_t v, uint64_t h) {
        if (s->untagged)
                return true;
        return (uint64_t) v >> TAG_SHIFT == h >> TAG_SHIFT;
}

void ptr_set_init(PtrSet *s, PtrSetHash hash, PtrSetMatch match) {
        *s = (PtrSet) {
                .hash = hash,
                .match = match,
                .untagged = !tags_fit(),
        };
}

void ptr_set_done(PtrSet *s) {
        free(s->slots);
        s->slots = NULL;
        s->mask = 0;
        s->n = 0;
}

void *ptr_set_slot(const PtrSet *s, size_t i) {
        return s->slots[i] ? slot_item(s, s->slots[i]) : NULL;
}

/* Places item in the first empty slot from its home: it is not in the set. */
static void place(PtrSet *s, uintptr_t *slots, size_t mask, void *item) {
        uint64_t h = s->hash(item);
        size_t i = h & mask;

        while (slots[i])
                i = (i + 1) & mask;
        slots[i] = slot_make(s, item, h);
}

static int resize(PtrSet *s, size_t n_slots) {
        uintptr_t *slots;

        assert(n_slots >= MIN_SLOTS && (n_slots & (n_slots - 1)) == 0 && s->n * 5 <= n_slots * 4);
        slots = calloc(n_slots, sizeof(uintptr_t));
        if (!slots)
                return -ENOMEM;
        if (s->slots)
                for (size_t i = 0; i <= s->mask; i++)
                        if (s->slots[i])
                                place(s, slots, n_slots - 1, slot_item(s, s->slots[i]));
        free(s->slots);
        s->slots = slots;
        s->mask = n_slots - 1;
        return 0;
}

/* A pointer with its top bits in use leaves no room for tags: from now on
 * there are none (the pointers already in had none of those bits). */
static void untag(PtrSet *s) {
        if (s->slots)
                for (size_t i = 0; i <= s->mask; i++)
                        s->slots[i] = (uintptr_t) slot_item(s, s->slots[i]);
        s->untagged = true;
}

int ptr_set_add(PtrSet *s, void *item) {
        uint64_t h;
        size_t i;
        int r;

        assert(item);
        if (!s->untagged && (uint64_t) (uintptr_t) item >> TAG_SHIFT != 0)
                untag(s);
        if (!s->slots || (s->n + 1) * 5 > (s->mask + 1) * 4) {
                r = resize(s, s->slots ? (s->mask + 1) * 2 : MIN_SLOTS);
                if (r < 0)
                        return r;
        }

        h = s->hash(item);
        for (i = h & s->mask; s->slots[i]; i = (i + 1) & s->mask)
                if (slot_tag_matches(s, s->slots[i], h) && s->match(slot_item(s, s->slots[i]), item)) {
                        s->slots[i] = slot_make(s, item, h);
                        return 0;
                }
        s->slots[i] = slot_make(s, item, h);
        s->n++;
        return 0;
}

void *ptr_set_find(const PtrSet *s, uint64_t h, PtrSetMatch match, const void *key) {
        if (!s->slots)
                return NULL;
        for (size_t i = h & s->mask; s->slots[i]; i = (i + 1) & s->mask)
                if (slot_tag_matches(s, s->slots[i], h)) {
                        void *item = slot_item(s, s->slots[i]);

                        if (match(item, key))
                                return item;
                }
        return NULL;
}

bool ptr_set_remove(PtrSet *s, const void *item) {
        size_t i, j;

        if (!s->slots)
                return false;
        for (i = s->hash(item) & s->mask; s->slots[i]; i = (i + 1) & s->mask)
                if (slot_item(s, s->slots[i]) == item)
                        break;
        if (!s->slots[i])
                return false;

        /* Shift back: an item at j whose home k is not cyclically in (i, j]
         * would not be found past the hole at i, so it moves there. */
        for (j = (i + 1) & s->mask; s->slots[j]; j = (j + 1) & s->mask) {
                size_t k = s->hash(slot_item(s, s->slots[j])) & s->mask;

                if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
                        continue;
                s->slots[i] = s->slots[j];
                i = j;
        }
        s->slots[i] = 0;
        s->n--;

        /* Shrinks at 1/8 full to 1/4 (not below MIN_SLOTS); a failure keeps the bigger table. */
        if (s->mask + 1 > MIN_SLOTS && s->n * 8 < s->mask + 1)
                (void) resize(s, (s->mask + 1) / 2);
        return true;
}
