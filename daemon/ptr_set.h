/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * ptr_set - an open-addressed set of pointers, for the watch table's maps
 *
 * The watch table holds one kernel watch a watched directory, found by wd
 * (every kernel record) and by inode (every link made). GHashTable spends
 * 12 bytes a slot (the pointer and its hash) and keeps its tables between
 * 3/16 and 15/16 full; this set spends 8: each slot is the pointer alone,
 * with 16 bits of its hash in the pointer's top bits, which no user-space
 * pointer uses on x86-64 or arm64 (a pointer that does turns the tags off
 * for the whole set, which then compares through the pointer). A probe
 * compares tags, so a miss touches no item; an item is read only on a tag
 * match. Linear probing, at most 4/5 full, removal by shifting back (no
 * tombstones).
 *
 * The set keeps no keys: hash() computes an item's hash from the item (for
 * growing and for removal), and lookups take the hash of what they look for
 * and a match function.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t (*PtrSetHash)(const void *item);
/* Whether item is what key (of the caller's type) looks for. */
typedef bool (*PtrSetMatch)(const void *item, const void *key);

typedef struct PtrSet {
        uintptr_t *slots; /* 0: empty; NULL while the set is empty */
        size_t mask;      /* the number of slots - 1 */
        size_t n;
        bool untagged; /* an item's pointer uses the top bits: no tags */
        PtrSetHash hash;
        PtrSetMatch match; /* two items that are the same key (ptr_set_add replaces) */
} PtrSet;

void ptr_set_init(PtrSet *s, PtrSetHash hash, PtrSetMatch match);
void ptr_set_done(PtrSet *s);

/* Adds item; an item of the same key (match(old, item)) is replaced.
 * Return: 0, or -ENOMEM (the set is unchanged). */
int ptr_set_add(PtrSet *s, void *item);
/* The item whose hash is h and that matches key, or NULL. */
void *ptr_set_find(const PtrSet *s, uint64_t h, PtrSetMatch match, const void *key);
/* Removes item itself (not an item of its key). Return: whether it was there. */
bool ptr_set_remove(PtrSet *s, const void *item);

static inline size_t ptr_set_size(const PtrSet *s) {
        return s->n;
}

/* The item in slot i (0 ≤ i ≤ mask), or NULL: for iterating, without
 * changing the set meanwhile. */
void *ptr_set_slot(const PtrSet *s, size_t i);
#define PTR_SET_FOREACH(item, s)                                 \
        for (size_t _i = 0; (s)->slots && _i <= (s)->mask; _i++) \
                if (((item) = ptr_set_slot((s), _i)))

/* The hash functions the watch table uses: mix a key's bits over all 64. */
static inline uint64_t ptr_set_mix(uint64_t x) {
        x ^= x >> 33;
        x *= UINT64_C(0xff51afd7ed558ccd);
        x ^= x >> 33;
        x *= UINT64_C(0xc4ceb9fe1a85ec53);
        x ^= x >> 33;
        return x;
}
