/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tree_unread - what the kernel reported in a directory a reporting walk
 * has linked but not read yet
 *
 * A walk that reports what it finds (a scan of new directories) links a
 * directory in one job and reads it in a later one. What the kernel
 * reports created in it meanwhile (its watch is placed) is read from the
 * kernel's queue before that read is reported: each name is noted here
 * (tree_unread_note(), from events.c), with a sequence number, under the
 * key of its subscription and directory (Tree.unread), for the frames that
 * look (Frame.unread, Frame.told: references to a key), and the scan does
 * not report it again. Without a key (no memory, too long a path) a name
 * may be reported twice, never lost. Split out of tree_jobs.c, whose jobs
 * use it.
 */

#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>

#include "event_bits.h"
#include "path.h"
#include "tree_internal.h"

static char *unread_key(uint32_t id, const char *dir) {
        return g_strdup_printf("%" PRIu32 ":%.*s", id, (int) path_prefix_len(dir), dir);
}

/* What the kernel reported in a directory, for the frames that look (Frame.unread, Frame.told). */
typedef struct Unread {
        unsigned n_ref;
        GHashTable *names; /* name -> Tree.unread_seq of its last note */
} Unread;

static void unread_free(gpointer p) {
        Unread *u = p;

        g_hash_table_destroy(u->names);
        free(u);
}

/* link's key in Tree.unread, noting from now on (a reference), or NULL
 * (no memory, too long a path: then nothing is noted for it). */
char *tree_unread_ref(Tree *t, uint32_t id, WatchLink *link) {
        char pathbuf[PATH_MAX];
        const char *path = watch_link_get_path(link, pathbuf);
        Unread *u;
        char *key;

        if (!path)
                return NULL;
        if (!t->unread)
                t->unread = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, unread_free);
        key = unread_key(id, path);
        u = g_hash_table_lookup(t->unread, key);
        if (!u) {
                u = calloc(1, sizeof(Unread));
                if (!u) {
                        free(key);
                        return NULL;
                }
                u->names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
                g_hash_table_insert(t->unread, g_strdup(key), u);
        }
        u->n_ref++;
        return key;
}

void tree_unread_unref(Tree *t, char **key) {
        Unread *u;

        if (!*key)
                return;
        u = t->unread ? g_hash_table_lookup(t->unread, *key) : NULL;
        if (u && --u->n_ref == 0)
                g_hash_table_remove(t->unread, *key);
        free(*key);
        *key = NULL;
}

static GHashTable *unread_names(Tree *t, const char *key) {
        Unread *u = key && t->unread ? g_hash_table_lookup(t->unread, key) : NULL;

        return u ? u->names : NULL;
}

/*
 * f, just linked by a reporting walk's job, is read by a later job: what
 * the kernel reports created in it meanwhile (its watch is placed) is read
 * from the kernel queue before that job's read is reported, so it is noted
 * (tree_unread_note()) and not reported by the scan again. Without a key
 * (no memory, too long a path) a name may be reported twice, never lost.
 */
void tree_unread_add(Tree *t, uint32_t id, Frame *f) {
        f->unread = tree_unread_ref(t, id, f->link);
        f->unread_since = t->unread_seq;
}

/* Whether name was noted under key after since. */
bool tree_unread_noted_since(Tree *t, const char *key, uint64_t since, const char *name) {
        GHashTable *names = unread_names(t, key);

        return names && GPOINTER_TO_SIZE(g_hash_table_lookup(names, name)) > since;
}

void tree_unread_note(Tree *t, const Subscription *s, const char *dir, uint32_t mask, const char *name, size_t name_len) {
        g_autofree char *key = NULL;
        GHashTable *names;

        /* Every name the kernel told of since the link: its records tell its
         * story. A name that was there before and went (IN_DELETE, IN_MOVED_FROM)
         * too: the job may have read it before it went, and its IN_CREATE,
         * reported after the kernel's record, would bring it back. */
        if (!t->unread || g_hash_table_size(t->unread) == 0 || !name || !(s->flags & WATCHD_FLAG_RECURSIVE) ||
            !(mask & (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM)))
                return;
        key = unread_key(s->id, dir);
        names = unread_names(t, key);
        if (names)
                g_hash_table_insert(names, g_strndup(name, name_len), GSIZE_TO_POINTER(++t->unread_seq));
}

bool tree_unread_noted(Tree *t, const Frame *f, const char *name) {
        return tree_unread_noted_since(t, f->unread, f->unread_since, name);
}

void tree_unread_drop(Tree *t, Frame *f) {
        tree_unread_unref(t, &f->unread);
        tree_unread_unref(t, &f->told);
}
