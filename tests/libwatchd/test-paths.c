/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-paths - the library's check of a record's path, and the index that
 * finds the subscriptions a path belongs to (libwatchd/watchd-paths.c)
 *
 * Issue 25: one rename record whose new path had 100,000 components held
 * the client 8.6 s, its ancestors walked with a copy of the path each. The
 * index walks them in place: its work, counted by the index itself, is a
 * few times the path's length, whatever its depth; and no path it is given
 * is longer than PATH_MAX.
 */

#include <limits.h>
#include <string.h>

#include <glib.h>

#include "watchd-paths.h"

static void test_canonical(void) {
        static const struct {
                const char *path;
                gboolean ok;
        } table[] = {
                { "/", TRUE },           { "/a", TRUE },       { "/a/b.c/..d/.e/e.", TRUE },
                { "/a/\xff\xfe", TRUE }, /* bytes, not text */
                { "", FALSE },           { "a", FALSE },       { "a/b", FALSE },
                { "//", FALSE },         { "//a", FALSE },     { "/a//b", FALSE },
                { "/a/", FALSE },        { "/.", FALSE },      { "/..", FALSE },
                { "/a/./b", FALSE },     { "/a/../b", FALSE }, { "/a/..", FALSE },
                { "/a/.", FALSE },
        };
        g_autofree char *max = g_strnfill(PATH_MAX - 1, 'a');
        g_autofree char *over = g_strnfill(PATH_MAX, 'a');

        for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
                if (watchd_path_is_canonical(table[i].path, strlen(table[i].path)) != table[i].ok)
                        g_error("\"%s\": want %s", table[i].path, table[i].ok ? "canonical" : "refused");
        max[0] = over[0] = '/';
        g_assert_true(watchd_path_is_canonical(max, PATH_MAX - 1));
        g_assert_false(watchd_path_is_canonical(over, PATH_MAX));
        /* A NUL inside the length (the stream's paths are counted bytes). */
        g_assert_false(watchd_path_is_canonical("/a\0b", 4));
}

typedef struct Seen {
        GString *s;
        int stop_after; /* 0: never */
        int n;
} Seen;

static gboolean record(gpointer item, PathRelation relation, gpointer userdata) {
        static const char *const rel[] = { "self", "parent", "ancestor" };
        Seen *seen = userdata;

        g_string_append_printf(seen->s, "%s:%s ", (const char *) item, rel[relation]);
        return ++seen->n != seen->stop_after;
}

static char *walk(PathIndex *ix, const char *path, int stop_after) {
        Seen seen = { g_string_new(NULL), stop_after, 0 };

        path_index_foreach_above(ix, path, strlen(path), record, &seen);
        if (seen.s->len > 0)
                g_string_truncate(seen.s, seen.s->len - 1);
        return g_string_free(seen.s, FALSE);
}

/* Nearest first: the path itself, its directory, then up to "/". */
static void test_index(void) {
        PathIndex *ix = path_index_new();
        char *s;

        path_index_add(ix, "/", "root");
        path_index_add(ix, "/a", "a");
        path_index_add(ix, "/a", "a2");
        path_index_add(ix, "/a/b", "b");
        path_index_add(ix, "/a/b/c", "c");
        path_index_add(ix, "/ab", "ab"); /* a prefix as bytes, not as a directory */
        path_index_add(ix, "/a/bc", "bc");

        s = walk(ix, "/a/b/c", 0);
        g_assert_cmpstr(s, ==, "c:self b:parent a:ancestor a2:ancestor root:ancestor");
        g_free(s);
        s = walk(ix, "/a/b/x", 0);
        g_assert_cmpstr(s, ==, "b:parent a:ancestor a2:ancestor root:ancestor");
        g_free(s);
        s = walk(ix, "/a/bcd", 0);
        g_assert_cmpstr(s, ==, "a:parent a2:parent root:ancestor");
        g_free(s);
        s = walk(ix, "/", 0);
        g_assert_cmpstr(s, ==, "root:self");
        g_free(s);
        s = walk(ix, "/x", 0);
        g_assert_cmpstr(s, ==, "root:parent");
        g_free(s);
        s = walk(ix, "/a/b/c", 2); /* the function stops the walk */
        g_assert_cmpstr(s, ==, "c:self b:parent");
        g_free(s);

        path_index_remove(ix, "/a", "a");
        path_index_remove(ix, "/", "root");
        path_index_remove(ix, "/nowhere", "x");
        s = walk(ix, "/a/b/c/d", 0);
        g_assert_cmpstr(s, ==, "c:parent b:ancestor a2:ancestor");
        g_free(s);
        path_index_free(ix);
}

static gboolean count(gpointer item, PathRelation relation, gpointer userdata) {
        (*(guint *) userdata)++;
        return TRUE;
}

/* The deepest path that fits PATH_MAX, 2,047 components: a walk hashes each
 * byte once and compares only where a subscription is, against a copy a
 * level (what issue 25 measured) of about 4 MB here. */
static void test_linear(void) {
        PathIndex *ix = path_index_new();
        g_autoptr(GString) path = g_string_new(NULL);
        g_autofree char *parent = NULL;
        const PathIndexStats *st = path_index_get_stats(ix);
        guint64 bytes0, lookups0, naive = 0;
        guint n = 0;

        while (path->len + 2 < PATH_MAX)
                g_string_append(path, "/a");
        g_assert_cmpuint(path->len, ==, PATH_MAX - 2);
        parent = g_strndup(path->str, path->len - 2);
        for (size_t k = 2; k < path->len; k += 2)
                naive += k; /* a copy of each ancestor */
        path_index_add(ix, "/", "root");
        path_index_add(ix, parent, "parent");
        path_index_add(ix, "/a/a/a", "shallow");
        bytes0 = st->bytes;
        lookups0 = st->lookups;
        path_index_foreach_above(ix, path->str, path->len, count, &n);
        g_assert_cmpuint(n, ==, 3);
        g_test_message("%zu bytes, %u components: %" G_GUINT64_FORMAT " bytes hashed or compared, %" G_GUINT64_FORMAT
                       " lookups (a copy a level: %" G_GUINT64_FORMAT " bytes)",
                       path->len, (guint) path->len / 2, st->bytes - bytes0, st->lookups - lookups0, naive);
        /* The path once, and the three directories found compared once each. */
        g_assert_cmpuint(st->bytes - bytes0, <=, 2 * path->len + 8);
        g_assert_cmpuint(st->lookups - lookups0, ==, path->len / 2 + 1);
        g_assert_cmpuint(naive, >, 1000 * path->len);
        path_index_free(ix);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/paths/canonical", test_canonical);
        g_test_add_func("/paths/index", test_index);
        g_test_add_func("/paths/linear", test_linear);
        return g_test_run();
}
