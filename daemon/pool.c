/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pool - objects of one size cut from pages of their own (pool.h)
 *
 * A page is POOL_PAGE bytes mapped at an address aligned to POOL_PAGE: its
 * header, then its objects. Objects are cut in order as they are first
 * needed (n_cut), so a new page costs memory only as it fills; a freed
 * object holds the next free one of its page in its first 8 bytes.
 */

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "list.h"
#include "macro.h"
#include "pool.h"

#if defined(__SANITIZE_ADDRESS__)
#define POOL_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_MALLOC 1
#endif
#endif

#if !defined(POOL_MALLOC) && defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define POOL_VALGRIND 1
#endif
#endif
#ifndef POOL_VALGRIND
#define VALGRIND_MALLOCLIKE_BLOCK(addr, size, rz, zeroed) ((void) 0)
#define VALGRIND_FREELIKE_BLOCK(addr, rz)                 ((void) 0)
#define VALGRIND_MAKE_MEM_NOACCESS(addr, size)            ((void) 0)
#define VALGRIND_MAKE_MEM_DEFINED(addr, size)             ((void) 0)
#define VALGRIND_MAKE_MEM_UNDEFINED(addr, size)           ((void) 0)
#endif

#define POOL_PAGE ((size_t) 64 * 1024)

struct PoolPage {
        LIST_FIELDS(PoolPage, partial); /* on the pool's partial list */
        void *free;                     /* a freed object of the page, or NULL */
        uint32_t n_used;                /* objects allocated */
        uint32_t n_cut;                 /* objects ever cut from the page: the rest were never used */
        uint32_t capacity;              /* on the partial list while 0 < n_used < capacity */
};

/* Where a page's objects start: past its header, 16-aligned. */
#define POOL_FIRST ((sizeof(PoolPage) + 15) & ~(size_t) 15)

static uint8_t *page_objects(PoolPage *pg) {
        return (uint8_t *) pg + POOL_FIRST;
}

bool pool_uses_pages(void) {
#ifdef POOL_MALLOC
        return false;
#else
        return true;
#endif
}

size_t pool_page_capacity(const Pool *p) {
        return (POOL_PAGE - POOL_FIRST) / p->size;
}

/* The header (the rest inaccessible, to valgrind) of an empty page. */
static void page_reset(Pool *p, PoolPage *pg) {
        *pg = (PoolPage) { .capacity = (uint32_t) pool_page_capacity(p) };
        VALGRIND_MAKE_MEM_NOACCESS(page_objects(pg), POOL_PAGE - POOL_FIRST);
}

static PoolPage *page_new(Pool *p) {
        uint8_t *m, *a;
        size_t head;

        /* The kernel maps from the top down: a page is most often placed right
         * below the last one, aligned as it is, and the two are one mapping. */
        m = mmap(NULL, POOL_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
                return NULL;
        if ((uintptr_t) m % POOL_PAGE == 0)
                a = m;
        else {
                /* Twice the size, then the misaligned ends given back. */
                (void) munmap(m, POOL_PAGE);
                m = mmap(NULL, 2 * POOL_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED)
                        return NULL;
                a = (uint8_t *) (((uintptr_t) m + POOL_PAGE - 1) & ~(uintptr_t) (POOL_PAGE - 1));
                head = (size_t) (a - m);
                if (head > 0)
                        (void) munmap(m, head);
                (void) munmap(a + POOL_PAGE, POOL_PAGE - head);
        }
        page_reset(p, (PoolPage *) a);
        p->n_pages++;
        return (PoolPage *) a;
}

static void page_free(Pool *p, PoolPage *pg) {
        (void) munmap(pg, POOL_PAGE);
        p->n_pages--;
}

void *pool_alloc(Pool *p) {
        PoolPage *pg;
        uint8_t *obj;

        assert(p->size >= sizeof(void *) && p->size % 8 == 0 && p->size <= POOL_MAX);
        if (!pool_uses_pages())
                return malloc(p->size);
        pg = p->partial;
        if (!pg) {
                pg = TAKE_PTR(p->spare);
                if (!pg)
                        pg = page_new(p);
                if (!pg)
                        return NULL;
                LIST_PREPEND(partial, p->partial, pg);
        }

        if (pg->free) {
                obj = pg->free;
                VALGRIND_MAKE_MEM_DEFINED(obj, sizeof(void *));
                pg->free = *(void **) obj;
        } else
                obj = page_objects(pg) + (size_t) pg->n_cut++ * p->size;
        VALGRIND_MALLOCLIKE_BLOCK(obj, p->size, 0, 0);
        if (++pg->n_used == pg->capacity)
                LIST_REMOVE(partial, p->partial, pg);
        return obj;
}

void pool_free(Pool *p, void *obj) {
        PoolPage *pg;
        bool was_full;

        if (!obj)
                return;
        if (!pool_uses_pages()) {
                free(obj);
                return;
        }
        pg = (PoolPage *) ((uintptr_t) obj & ~(uintptr_t) (POOL_PAGE - 1));
        assert(pg->n_used > 0 && (uint8_t *) obj >= page_objects(pg) &&
               ((size_t) ((uint8_t *) obj - page_objects(pg))) % p->size == 0);
        VALGRIND_FREELIKE_BLOCK(obj, 0);
        VALGRIND_MAKE_MEM_UNDEFINED(obj, sizeof(void *));
        *(void **) obj = pg->free;
        VALGRIND_MAKE_MEM_NOACCESS(obj, p->size);
        pg->free = obj;

        was_full = pg->n_used-- == pg->capacity;
        if (pg->n_used > 0) {
                if (was_full)
                        LIST_PREPEND(partial, p->partial, pg);
                return;
        }
        /* Empty: kept as the spare, or given back. */
        if (!was_full)
                LIST_REMOVE(partial, p->partial, pg);
        if (p->spare)
                page_free(p, pg);
        else {
                page_reset(p, pg);
                p->spare = pg;
        }
}
