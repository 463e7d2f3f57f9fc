/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * path - joining and splitting absolute paths
 *
 * Every path here is absolute and simplified (path_simplify()): no doubled
 * slash and no trailing one, so "/" is the one path that ends in a slash.
 * That is the special case these functions exist for: a name joined to "/"
 * is "/name", not "//name", and everything absolute is below "/". Paths are
 * bytes (NUL-terminated, any other byte allowed); names come with their
 * length, as the kernel's records give them. Pure C, no allocation except
 * where a function returns a new string (NULL then means out of memory).
 */

#include <stdbool.h>
#include <stddef.h>

/* How much of dir comes before the "/" of a name joined to it: 0 for "/", else its length. */
size_t path_prefix_len(const char *dir);

/* The length of dir + "/" + name. */
size_t path_join_len(const char *dir, size_t name_len);

/* Writes dir + "/" + name and a NUL into buf (path_join_len() + 1 bytes); returns buf. */
char *path_join_to(char *buf, const char *dir, const char *name, size_t name_len);
/* The same, dir's path_prefix_len() known (prefix_len): nothing of dir is measured. */
char *path_join_prefix_to(char *buf, const char *dir, size_t prefix_len, const char *name, size_t name_len);

/* dir + "/" + name, newly allocated. */
char *path_join(const char *dir, const char *name, size_t name_len);

/*
 * Whether path is prefix or below it, component-wise ("/ab" is not below
 * "/a"). Return: what follows prefix and its slash ("" for prefix itself,
 * "b/c" for prefix + "/b/c"), pointing into path; NULL if path is not at or
 * below prefix.
 */
const char *path_startswith(const char *path, const char *prefix);

/* The last component of path; *ret_dir_len (if not NULL) is the length of
 * its directory (1 for "/name": the directory is "/"). For "/" itself: "" and 1. */
const char *path_basename(const char *path, size_t *ret_dir_len);

/* The directory of path ("/" for "/name"), newly allocated. */
char *path_dirname(const char *path);

/* "//a///b/" -> "/a/b", newly allocated. ".." and "." are kept: the
 * kernel resolves them, with the caller's credentials. */
char *path_simplify(const char *path);

/* Whether a component of path is "..". */
bool path_has_dotdot(const char *path);

/* path with its leading old (old itself or a directory above path) replaced
 * by new, newly allocated; NULL with *ret_oom false if path is not at or
 * below old. */
char *path_rebase(const char *path, const char *old, const char *new, bool *ret_oom);
