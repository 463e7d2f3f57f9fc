/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * list - intrusive doubly linked lists
 *
 * An item that is on a list named "foo" carries the two pointers
 * LIST_FIELDS(Type, foo) declares (foo_next, foo_prev); the list itself is
 * one pointer to its first item (NULL: empty). An item may be on several
 * lists at once, each with its own name. Prepending and removing are O(1);
 * appending walks to the tail. In the style of systemd's list.h.
 *
 *   struct Tree { LIST_HEAD(TreeWalk, walks); };
 *   struct TreeWalk { LIST_FIELDS(TreeWalk, walks); };
 *   LIST_PREPEND(walks, t->walks, w);
 *   LIST_FOREACH(walks, i, t->walks) ...
 *   LIST_REMOVE(walks, t->walks, w);
 *
 * SLIST_* are the same lists singly linked, for items that are many and
 * small (a pointer less each) on lists that are short: removing walks
 * from the head to the item. LIST_FOREACH serves both.
 */

#define LIST_HEAD(t, name) t *name

#define LIST_FIELDS(t, name) t *name##_next, *name##_prev

#define LIST_INIT(name, item)                                     \
        do {                                                      \
                (item)->name##_next = (item)->name##_prev = NULL; \
        } while (0)

#define LIST_PREPEND(name, head, item)                                  \
        do {                                                            \
                __typeof__(*(head)) **_head = &(head), *_item = (item); \
                _item->name##_prev = NULL;                              \
                _item->name##_next = *_head;                            \
                if (*_head)                                             \
                        (*_head)->name##_prev = _item;                  \
                *_head = _item;                                         \
        } while (0)

#define LIST_APPEND(name, head, item)                                                    \
        do {                                                                             \
                __typeof__(*(head)) **_head = &(head), *_item = (item), *_tail = *_head; \
                _item->name##_next = NULL;                                               \
                if (!_tail) {                                                            \
                        _item->name##_prev = NULL;                                       \
                        *_head = _item;                                                  \
                        break;                                                           \
                }                                                                        \
                while (_tail->name##_next)                                               \
                        _tail = _tail->name##_next;                                      \
                _tail->name##_next = _item;                                              \
                _item->name##_prev = _tail;                                              \
        } while (0)

#define LIST_REMOVE(name, head, item)                                         \
        do {                                                                  \
                __typeof__(*(head)) **_head = &(head), *_item = (item);       \
                if (_item->name##_next)                                       \
                        _item->name##_next->name##_prev = _item->name##_prev; \
                if (_item->name##_prev)                                       \
                        _item->name##_prev->name##_next = _item->name##_next; \
                else                                                          \
                        *_head = _item->name##_next;                          \
                _item->name##_next = _item->name##_prev = NULL;               \
        } while (0)

#define SLIST_FIELDS(t, name) t *name##_next

#define SLIST_PREPEND(name, head, item)                                 \
        do {                                                            \
                __typeof__(*(head)) **_head = &(head), *_item = (item); \
                _item->name##_next = *_head;                            \
                *_head = _item;                                         \
        } while (0)

#define SLIST_REMOVE(name, head, item)                               \
        do {                                                         \
                __typeof__(*(head)) **_p = &(head), *_item = (item); \
                while (*_p != _item)                                 \
                        _p = &(*_p)->name##_next;                    \
                *_p = _item->name##_next;                            \
                _item->name##_next = NULL;                           \
        } while (0)

/* Removes and yields the first item, or NULL. */
#define LIST_POP(name, head)                                       \
        ({                                                         \
                __typeof__(*(head)) **_h = &(head), *_first = *_h; \
                if (_first)                                        \
                        LIST_REMOVE(name, *_h, _first);            \
                _first;                                            \
        })

#define LIST_FOREACH(name, i, head) for (__typeof__(*(head)) *i = (head); i; i = i->name##_next)

/* The same, where the body may remove i. */
#define LIST_FOREACH_SAFE(name, i, n, head) \
        for (__typeof__(*(head)) *n, *i = (head); i && ((n = i->name##_next), 1); i = n)
