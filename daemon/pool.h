/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * pool - objects of one size cut from pages of their own, for the watch
 * table's Watches and WatchLinks
 *
 * A watched directory is a Watch and a WatchLink (watch_table_types.h). As
 * malloc() chunks, glibc adds 8 bytes to each and rounds up to 16: a 32-byte
 * Watch takes 48, a link with a 5-byte name (70 bytes) 80, and a tree of a
 * million directories pays the difference a million times. A pool cuts
 * objects of one size (a multiple of 8) from 64 KiB pages it maps itself,
 * aligned to their size, so that an object's page is its address rounded
 * down: no header an object. A page keeps its freed objects on a list of its
 * own, and pages with a free object are on the pool's list; a page whose
 * last object is freed is unmapped (one is kept for the next allocation), so
 * a tree that goes gives its memory back, as free() would.
 *
 * Used from one thread (the loop's, where the table lives): no lock.
 *
 * Built with AddressSanitizer, a pool is malloc() and free(), so that ASan
 * sees every object. Under valgrind, every object is a block of its own to
 * memcheck (its client requests: valgrind/memcheck.h), freed objects are
 * inaccessible, and a leaked object is reported as a malloc()ed one would be.
 */

#include <stdbool.h>
#include <stddef.h>

typedef struct PoolPage PoolPage;

typedef struct Pool {
        size_t size;       /* of an object: a multiple of 8 */
        PoolPage *partial; /* pages with a free object */
        PoolPage *spare;   /* an empty page, kept */
        size_t n_pages;    /* mapped, the spare included */
} Pool;

/* A pool of objects of size bytes (rounded up to 8; at most POOL_MAX). */
#define POOL_INIT(sz) \
        { .size = ((sz) + 7) & ~(size_t) 7 }
#define POOL_MAX 1024

/* An object of p->size bytes, not zeroed; NULL when out of memory. */
void *pool_alloc(Pool *p);
/* Frees an object of p's (NULL: nothing). */
void pool_free(Pool *p, void *obj);
/* Whether pools cut objects from pages (false: they are malloc()'s, under ASan). */
bool pool_uses_pages(void);
/* The objects of p->size bytes a page holds. */
size_t pool_page_capacity(const Pool *p);
/* How many pages p has mapped, the spare included. */
static inline size_t pool_n_pages(const Pool *p) {
        return p->n_pages;
}
