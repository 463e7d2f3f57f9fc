/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * journal_scope - the scope of records that could not be written
 *
 * When a frame cannot be written (the disk is full), its records are lost,
 * and the gap that says so names what to rescan: the directories of their
 * paths (a directory that appeared, with its tree), at most
 * JOURNAL_GAP_MAX_SCOPE of them and GAP_SCOPE_BYTES_MAX bytes, past which
 * the whole subscription.
 */

#include <stdlib.h>
#include <string.h>

#include "journal_internal.h"
#include "macro.h"

void gap_scope_clear(GapScope *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->path[i]);
        *s = (GapScope) {};
}

void gap_scope_set_whole(GapScope *s) {
        gap_scope_clear(s);
        s->whole = true;
}

/* Is path at or below dir? */
static bool path_below(const char *path, const char *dir) {
        size_t l = strlen(dir);

        if (strncmp(path, dir, l) != 0)
                return false;
        return path[l] == '\0' || path[l] == '/' || (l > 0 && dir[l - 1] == '/');
}

void gap_scope_add(GapScope *s, const char *path, size_t len, bool recursive) {
        _cleanup_free_ char *p = NULL;
        size_t k = 0;

        if (s->whole)
                return;
        p = strndup(path, len);
        if (!p)
                return gap_scope_set_whole(s); /* the honest answer when we cannot say more */

        for (size_t i = 0; i < s->n; i++) {
                if (strcmp(s->path[i], p) == 0 && (s->recursive[i] || !recursive))
                        return;
                if (s->recursive[i] && path_below(p, s->path[i]))
                        return;
        }
        /* A recursive entry covers what is below it: those go. */
        for (size_t i = 0; i < s->n; i++) {
                if ((recursive && path_below(s->path[i], p)) || strcmp(s->path[i], p) == 0) {
                        s->bytes -= strlen(s->path[i]);
                        free(s->path[i]);
                        continue;
                }
                s->path[k] = s->path[i];
                s->recursive[k++] = s->recursive[i];
        }
        s->n = k;

        if (s->n >= JOURNAL_GAP_MAX_SCOPE || s->bytes + len > GAP_SCOPE_BYTES_MAX)
                return gap_scope_set_whole(s);
        s->path[s->n] = TAKE_PTR(p);
        s->recursive[s->n++] = recursive;
        s->bytes += len;
}

static size_t parent_len(const char *path) {
        const char *slash = strrchr(path, '/');

        if (!slash || slash == path)
                return 1; /* "/" */
        return (size_t) (slash - path);
}

/*
 * What a lost event leaves to rescan: the directory it happened in (its
 * entries: a file created, changed or deleted there shows in a listing with
 * stat), and a directory that appeared, whole (what it holds is unknown).
 * For the watched directory itself that is its parent, which may lie
 * outside the subscription: a client rescans the part inside.
 */
void gap_scope_add_event(GapScope *s, uint32_t mask, const char *path, const char *new_path) {
        const char *where = new_path ?: path;

        gap_scope_add(s, path, parent_len(path), false);
        if (new_path)
                gap_scope_add(s, new_path, parent_len(new_path), false);
        if ((mask & JOURNAL_ISDIR) && (new_path || (mask & EVENTS_NEW_OBJECT)))
                gap_scope_add(s, where, strlen(where), true);
}
