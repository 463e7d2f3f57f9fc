/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * tree_unread - the names the kernel reported in a directory, under the
 * key of a subscription and that directory, for whoever holds a reference
 * to the key (tree_unread.c). It knows nothing of the tree: the tree embeds
 * a TreeUnread (Tree.unread) and passes it plain values.
 */

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct TreeUnread {
        /* "id:path" -> the names the kernel reported in that directory
         * (Unread) while someone holds a reference to the key. NULL until
         * first used. */
        GHashTable *keys;
        /* The last note in keys: a name's value there is its last note's.
         * A key is shared by those who look at its directory, each looking
         * only at what was noted after it looked first. */
        uint64_t seq;
} TreeUnread;

/* Whether no key is held: then nothing is noted (the common case, before any work). */
static inline bool tree_unread_empty(const TreeUnread *u) {
        return !u->keys || g_hash_table_size(u->keys) == 0;
}

/* The key of subscription id's directory path, noting from now on (a
 * reference), or NULL (no memory: then nothing is noted for it). */
char *tree_unread_ref(TreeUnread *u, uint32_t id, const char *path);
/* *key's reference let go of (NULL after). */
void tree_unread_unref(TreeUnread *u, char **key);
/* Whether name was noted under key after since. */
bool tree_unread_noted_since(const TreeUnread *u, const char *key, uint64_t since, const char *name);
/* The kernel reported name in subscription id's directory dir: noted if
 * its key is held. */
void tree_unread_note_name(TreeUnread *u, uint32_t id, const char *dir, const char *name, size_t name_len);
/* Every key let go of (the tree freed). */
void tree_unread_clear(TreeUnread *u);
