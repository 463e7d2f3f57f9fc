/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tree_unread - what the kernel reported in a directory a reporting walk
 * has linked but not read yet
 *
 * A walk that reports what it finds (a scan of new directories) links a
 * directory in one job and reads it in a later one. What the kernel
 * reports created in it meanwhile (its watch is placed) is read from the
 * kernel's queue before that read is reported: each name is noted here
 * (tree_unread_note_name(), through tree_unread_note() from events.c), with
 * a sequence number, under the key of its subscription and directory
 * (TreeUnread.keys), for those that look (the tree's frames, Frame.unread,
 * Frame.told: references to a key), and the scan does not report it again.
 * Without a key (no memory, too long a path) a name may be reported twice,
 * never lost. Split out of tree_jobs.c, whose jobs use it.
 *
 * It owns its state (TreeUnread, tree_unread.h) and knows nothing of the
 * tree: the tree (Tree.unread) passes it a subscription's id, a path, a
 * key. The lowest of the tree files (tree_internal.h): it calls none of
 * them.
 */

#include <glib.h>
#include <inttypes.h>
#include <stdlib.h>

#include "path.h"
#include "tree_unread.h"

static char *unread_key(uint32_t id, const char *dir) {
        return g_strdup_printf("%" PRIu32 ":%.*s", id, (int) path_prefix_len(dir), dir);
}

/* What the kernel reported in a directory, for those that look (Frame.unread, Frame.told). */
typedef struct Unread {
        unsigned n_ref;
        GHashTable *names; /* name -> TreeUnread.seq of its last note */
} Unread;

static void unread_free(gpointer p) {
        Unread *u = p;

        g_hash_table_destroy(u->names);
        free(u);
}

char *tree_unread_ref(TreeUnread *tu, uint32_t id, const char *path) {
        Unread *u;
        char *key;

        if (!tu->keys)
                tu->keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, unread_free);
        key = unread_key(id, path);
        u = g_hash_table_lookup(tu->keys, key);
        if (!u) {
                u = calloc(1, sizeof(Unread));
                if (!u) {
                        free(key);
                        return NULL;
                }
                u->names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
                g_hash_table_insert(tu->keys, g_strdup(key), u);
        }
        u->n_ref++;
        return key;
}

void tree_unread_unref(TreeUnread *tu, char **key) {
        Unread *u;

        if (!*key)
                return;
        u = tu->keys ? g_hash_table_lookup(tu->keys, *key) : NULL;
        if (u && --u->n_ref == 0)
                g_hash_table_remove(tu->keys, *key);
        free(*key);
        *key = NULL;
}

static GHashTable *unread_names(const TreeUnread *tu, const char *key) {
        Unread *u = key && tu->keys ? g_hash_table_lookup(tu->keys, key) : NULL;

        return u ? u->names : NULL;
}

/* Whether name was noted under key after since. */
bool tree_unread_noted_since(const TreeUnread *tu, const char *key, uint64_t since, const char *name) {
        GHashTable *names = unread_names(tu, key);

        return names && GPOINTER_TO_SIZE(g_hash_table_lookup(names, name)) > since;
}

void tree_unread_note_name(TreeUnread *tu, uint32_t id, const char *dir, const char *name, size_t name_len) {
        g_autofree char *key = NULL;
        GHashTable *names;

        key = unread_key(id, dir);
        names = unread_names(tu, key);
        if (names)
                g_hash_table_insert(names, g_strndup(name, name_len), GSIZE_TO_POINTER(++tu->seq));
}

void tree_unread_clear(TreeUnread *tu) {
        if (tu->keys)
                g_hash_table_destroy(tu->keys);
        tu->keys = NULL;
}
