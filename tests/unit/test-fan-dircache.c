/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-fan-dircache - the handle -> directory cache on a filesystem of the
 * test's own: directories with numbers for handles, a parent and a name, and
 * a mode per caller. The test changes the filesystem and tells the cache
 * what the events would say (or not: a lost event), and checks the paths
 * the cache builds, how many lookups it made, and its permission answers.
 */

#include <errno.h>
#include <glib.h>
#include <limits.h>
#include <string.h>

#include "fan_dircache.h"

#define FS_MAX 4096

typedef struct FakeDir {
        bool exists;
        uint32_t parent; /* 0: the top */
        char name[NAME_MAX + 1];
        uint8_t bits[4]; /* per caller 1..3: FAN_DIR_MAY_* (caller 0 is root) */
} FakeDir;

typedef struct FakeFs {
        FakeDir dirs[FS_MAX]; /* [0] unused: handle 0 is no handle */
        uint32_t n;
        unsigned lookups, accesses;
} FakeFs;

/* Handle of directory id: 4 bytes, type 1, one fsid. */
typedef struct H {
        FanHandle h;
        uint8_t b[4];
} H;

static FanHandle *handle_set(H *x, uint32_t id) {
        memcpy(x->b, &id, 4);
        x->h = (FanHandle) { .fsid = 77, .type = 1, .size = 4, .bytes = x->b };
        return &x->h;
}

/* A handle that lives as long as the enclosing block. */
#define HANDLE(id) handle_set(&(H) {}, (id))

static uint32_t id_of(const FanHandle *h) {
        uint32_t id;

        g_assert_cmpuint(h->size, ==, 4);
        memcpy(&id, h->bytes, 4);
        return id;
}

static int fake_lookup(const FanHandle *h, FanHandle *ret_parent, uint8_t *parent_bytes, char *ret_name, void *userdata) {
        FakeFs *fs = userdata;
        uint32_t id = id_of(h);
        FakeDir *d;

        fs->lookups++;
        if (id == 0 || id >= fs->n || !fs->dirs[id].exists)
                return -ESTALE;
        d = &fs->dirs[id];
        if (id == 1)
                return 1; /* the top */
        strcpy(ret_name, d->name);
        memcpy(parent_bytes, &d->parent, 4);
        *ret_parent = (FanHandle) { .fsid = 77, .type = 1, .size = 4, .bytes = parent_bytes };
        return 0;
}

static int fake_access(const FanHandle *h, uint32_t caller, void *userdata) {
        FakeFs *fs = userdata;
        uint32_t id = id_of(h);

        fs->accesses++;
        g_assert_cmpuint(caller, >, 0);
        g_assert_cmpuint(caller, <, 4);
        if (id >= fs->n || !fs->dirs[id].exists)
                return -ESTALE;
        return fs->dirs[id].bits[caller];
}

static const FanDirOps fake_ops = {
        .lookup = fake_lookup,
        .access = fake_access,
};

static FakeFs *fs_new(void) {
        FakeFs *fs = g_new0(FakeFs, 1);

        fs->n = 2;
        fs->dirs[1] = (FakeDir) { .exists = true, .bits = { 3, 3, 3, 3 } };
        return fs;
}

static uint32_t fs_mkdir(FakeFs *fs, uint32_t parent, const char *name) {
        uint32_t id = fs->n++;

        g_assert_cmpuint(id, <, FS_MAX);
        fs->dirs[id] = (FakeDir) { .exists = true, .parent = parent, .bits = { 3, 3, 3, 3 } };
        g_strlcpy(fs->dirs[id].name, name, sizeof(fs->dirs[id].name));
        return id;
}

/* mkdir, and the cache told (FAN_CREATE with the new directory's handle). */
static uint32_t mkdir_ev(FakeFs *fs, FanDirCache *c, uint32_t parent, const char *name) {
        uint32_t id = fs_mkdir(fs, parent, name);

        fan_dircache_created(c, HANDLE(parent), name, strlen(name), HANDLE(id));
        return id;
}

static void fs_rename(FakeFs *fs, uint32_t id, uint32_t parent, const char *name) {
        fs->dirs[id].parent = parent;
        g_strlcpy(fs->dirs[id].name, name, sizeof(fs->dirs[id].name));
}

static void rename_ev(FakeFs *fs, FanDirCache *c, uint32_t id, uint32_t parent, const char *name) {
        fs_rename(fs, id, parent, name);
        fan_dircache_renamed(c, HANDLE(parent), name, strlen(name), HANDLE(id));
}

static void assert_path(FanDirCache *c, uint32_t root, uint32_t id, const char *want) {
        FanDir *r = fan_dircache_get(c, HANDLE(root)), *d = NULL;
        char buf[PATH_MAX];

        g_assert_nonnull(r);
        g_assert_cmpint(fan_dircache_resolve(c, HANDLE(id), &d), ==, 0);
        if (!want) {
                g_assert_cmpint(fan_dir_path_below(d, r, buf, sizeof(buf)), ==, -ENOENT);
                return;
        }
        g_assert_cmpint(fan_dir_path_below(d, r, buf, sizeof(buf)), ==, (int) strlen(want));
        g_assert_cmpstr(buf, ==, want);
}

static void test_resolve(void) {
        FakeFs *fs = fs_new();
        FanDirCache *c;
        FanDir *root, *d;
        uint32_t home, u, a, b;

        g_assert_cmpint(fan_dircache_new(&fake_ops, fs, 1000, &c), ==, 0);
        home = fs_mkdir(fs, 1, "home");
        u = fs_mkdir(fs, home, "u");
        a = fs_mkdir(fs, u, "a");
        b = fs_mkdir(fs, a, "b");

        /* The root of a subscription: looked up to the top, once. */
        g_assert_cmpint(fan_dircache_pin(c, HANDLE(u), &root), ==, 0);
        g_assert_cmpuint(fs->lookups, ==, 3);
        g_assert_cmpuint(fan_dircache_size(c), ==, 3);
        g_assert_true(fan_dircache_get(c, HANDLE(1))->top);

        /* A directory below it met for the first time: looked up until the root. */
        fs->lookups = 0;
        assert_path(c, u, b, "a/b");
        g_assert_cmpuint(fs->lookups, ==, 2);
        fs->lookups = 0;
        assert_path(c, u, b, "a/b");
        assert_path(c, u, u, "");
        assert_path(c, u, home, NULL); /* above the root */
        g_assert_cmpuint(fs->lookups, ==, 0);

        /* Gone: -ESTALE, nothing cached. */
        fs->dirs[b].exists = false;
        fan_dircache_deleted(c, HANDLE(b));
        g_assert_null(fan_dircache_get(c, HANDLE(b)));
        g_assert_cmpint(fan_dircache_resolve(c, HANDLE(b), &d), ==, -ESTALE);

        fan_dircache_unpin(c, root);
        fan_dircache_free(c);
        g_free(fs);
}

/* mkdir -p 20 deep: every directory learnt from its creation, no lookup. */
static void test_created(void) {
        FakeFs *fs = fs_new();
        FanDirCache *c;
        FanDir *root;
        uint32_t top, id;
        GString *want = g_string_new(NULL);

        g_assert_cmpint(fan_dircache_new(&fake_ops, fs, 1000, &c), ==, 0);
        top = fs_mkdir(fs, 1, "w");
        g_assert_cmpint(fan_dircache_pin(c, HANDLE(top), &root), ==, 0);
        fs->lookups = 0;
        id = top;
        for (int i = 0; i < 20; i++) {
                char name[8];

                g_snprintf(name, sizeof(name), "d%d", i);
                id = mkdir_ev(fs, c, id, name);
                g_string_append_printf(want, "%s%s", i ? "/" : "", name);
        }
        g_assert_cmpuint(fs->lookups, ==, 0);
        assert_path(c, top, id, want->str);
        g_assert_cmpuint(fs->lookups, ==, 0);

        /* Created where nothing is cached: not kept (nothing to keep right). */
        id = fs_mkdir(fs, 1, "elsewhere");
        fan_dircache_created(c, HANDLE(1), "elsewhere", 9, HANDLE(id)); /* 1 is cached: kept */
        g_assert_nonnull(fan_dircache_get(c, HANDLE(id)));
        {
                uint32_t other = fs_mkdir(fs, 1, "other"), x = fs_mkdir(fs, other, "x");

                fan_dircache_created(c, HANDLE(other), "x", 1, HANDLE(x));
                g_assert_null(fan_dircache_get(c, HANDLE(x)));
        }
        g_string_free(want, TRUE);
        fan_dircache_unpin(c, root);
        fan_dircache_free(c);
        g_free(fs);
}

static void test_renames(void) {
        FakeFs *fs = fs_new();
        FanDirCache *c;
        FanDir *root;
        uint32_t w, a, b, cc, out, far, farx;

        g_assert_cmpint(fan_dircache_new(&fake_ops, fs, 1000, &c), ==, 0);
        w = fs_mkdir(fs, 1, "w");
        out = fs_mkdir(fs, 1, "out");
        g_assert_cmpint(fan_dircache_pin(c, HANDLE(w), &root), ==, 0);
        a = mkdir_ev(fs, c, w, "a");
        b = mkdir_ev(fs, c, a, "b");
        cc = mkdir_ev(fs, c, b, "c");
        assert_path(c, w, cc, "a/b/c");

        /* An ancestor renamed in place: everything below follows. */
        rename_ev(fs, c, a, w, "A");
        assert_path(c, w, cc, "A/b/c");
        /* Moved out of the root's tree, and back under another name. */
        fs->lookups = 0;
        rename_ev(fs, c, b, out, "b");
        g_assert_cmpuint(fs->lookups, ==, 1); /* "out" was not cached: looked up once */
        assert_path(c, w, cc, NULL);
        rename_ev(fs, c, b, w, "bb");
        assert_path(c, w, cc, "bb/c");
        g_assert_cmpuint(fs->lookups, ==, 1);

        /* A directory not cached, with nothing cached below, moved in: nothing
         * changes in the cache; its subdirectory is looked up where it is. */
        far = fs_mkdir(fs, out, "far");
        farx = fs_mkdir(fs, far, "x");
        rename_ev(fs, c, far, cc, "near");
        g_assert_null(fan_dircache_get(c, HANDLE(far)));
        assert_path(c, w, farx, "bb/c/near/x");

        /* A cached directory renamed, its event not read yet: what happens
         * below it until then is where it was (the queue's order). */
        {
                uint32_t y = fs_mkdir(fs, farx, "y"), z = fs_mkdir(fs, y, "z");

                fs_rename(fs, farx, w, "moved");
                assert_path(c, w, y, "bb/c/near/x/y");
                fan_dircache_renamed(c, HANDLE(w), "moved", 5, HANDLE(farx));
                assert_path(c, w, y, "moved/y");
                /* One not cached, looked up before its rename's event is read
                 * (the filesystem is ahead of the queue): found at its new
                 * place, and the event that comes later changes nothing. */
                fs_rename(fs, z, w, "z2");
                g_assert_null(fan_dircache_get(c, HANDLE(z)));
                {
                        uint32_t zz = fs_mkdir(fs, z, "zz");

                        assert_path(c, w, zz, "z2/zz");
                        fan_dircache_renamed(c, HANDLE(w), "z2", 2, HANDLE(z));
                        assert_path(c, w, zz, "z2/zz");
                }
        }
        /* A rename that would put a directory below itself (a stale event) is ignored. */
        fan_dircache_renamed(c, HANDLE(cc), "loop", 4, HANDLE(b));
        assert_path(c, w, cc, "bb/c");
        fan_dircache_unpin(c, root);
        fan_dircache_free(c);
        g_free(fs);
}

/* An overflow lost the renames: clear, and the pinned roots are found again. */
static void test_clear(void) {
        FakeFs *fs = fs_new();
        FanDirCache *c;
        FanDir *outer, *inner;
        uint32_t w, a, in, x;

        g_assert_cmpint(fan_dircache_new(&fake_ops, fs, 1000, &c), ==, 0);
        w = fs_mkdir(fs, 1, "w");
        a = fs_mkdir(fs, w, "a");
        in = fs_mkdir(fs, a, "in");
        x = fs_mkdir(fs, in, "x");
        g_assert_cmpint(fan_dircache_pin(c, HANDLE(w), &outer), ==, 0);
        g_assert_cmpint(fan_dircache_pin(c, HANDLE(in), &inner), ==, 0);
        assert_path(c, w, x, "a/in/x");
        assert_path(c, in, x, "x");

        /* Renames the cache never hears of. */
        fs_rename(fs, a, 1, "a-out");
        fs_rename(fs, x, w, "x");
        fan_dircache_clear(c);
        g_assert_true(fan_dircache_get(c, HANDLE(w)) == outer);
        g_assert_true(fan_dircache_get(c, HANDLE(in)) == inner);
        g_assert_null(fan_dircache_get(c, HANDLE(x)));
        assert_path(c, w, x, "x");
        assert_path(c, w, in, NULL); /* left with a-out */
        assert_path(c, in, x, NULL);
        /* Nested roots find each other. */
        fs_rename(fs, a, w, "a");
        fan_dircache_clear(c);
        assert_path(c, w, in, "a/in");
        g_assert_true(inner->parent && inner->parent->parent == outer);

        fan_dircache_unpin(c, inner);
        fan_dircache_unpin(c, outer);
        fan_dircache_free(c);
        g_free(fs);
}

/* Past max_dirs the cache starts again, and keeps what is pinned. */
static void test_limit(void) {
        FakeFs *fs = fs_new();
        FanDirCache *c;
        FanDir *root;
        uint32_t w, last = 0;

        g_assert_cmpint(fan_dircache_new(&fake_ops, fs, 50, &c), ==, 0);
        w = fs_mkdir(fs, 1, "w");
        g_assert_cmpint(fan_dircache_pin(c, HANDLE(w), &root), ==, 0);
        for (int i = 0; i < 500; i++) {
                char name[16];

                g_snprintf(name, sizeof(name), "d%d", i);
                last = mkdir_ev(fs, c, w, name);
                g_assert_cmpuint(fan_dircache_size(c), <=, 50 + 2 + 1);
        }
        g_assert_true(fan_dircache_get(c, HANDLE(w)) == root);
        assert_path(c, w, last, "d499");
        {
                uint32_t old = 3; /* d0, long forgotten: looked up again */

                assert_path(c, w, old, "d0");
        }
        fan_dircache_unpin(c, root);
        fan_dircache_free(c);
        g_free(fs);
}

static void test_deleted(void) {
        FakeFs *fs = fs_new();
        FanDirCache *c;
        FanDir *root;
        uint32_t w, a, b;

        g_assert_cmpint(fan_dircache_new(&fake_ops, fs, 1000, &c), ==, 0);
        w = fs_mkdir(fs, 1, "w");
        g_assert_cmpint(fan_dircache_pin(c, HANDLE(w), &root), ==, 0);
        a = mkdir_ev(fs, c, w, "a");
        b = mkdir_ev(fs, c, a, "b");
        /* Its subdirectory's deletion was lost: both go. */
        fan_dircache_deleted(c, HANDLE(a));
        g_assert_null(fan_dircache_get(c, HANDLE(a)));
        g_assert_null(fan_dircache_get(c, HANDLE(b)));
        /* A pinned root deleted stays until unpinned, detached. */
        fan_dircache_deleted(c, HANDLE(w));
        g_assert_true(fan_dircache_get(c, HANDLE(w)) == root);
        g_assert_null(root->parent);
        fan_dircache_unpin(c, root);
        g_assert_null(fan_dircache_get(c, HANDLE(w)));
        fan_dircache_free(c);
        g_free(fs);
}

/* Search on every directory from the root down to the parent, read on the directory. */
static void test_may_read(void) {
        FakeFs *fs = fs_new();
        FanDirCache *c;
        FanDir *root, *d;
        uint32_t w, a, b, x;

        g_assert_cmpint(fan_dircache_new(&fake_ops, fs, 1000, &c), ==, 0);
        w = fs_mkdir(fs, 1, "w");
        a = fs_mkdir(fs, w, "a");
        b = fs_mkdir(fs, a, "b");
        x = fs_mkdir(fs, 1, "x");
        g_assert_cmpint(fan_dircache_pin(c, HANDLE(w), &root), ==, 0);
        g_assert_cmpint(fan_dircache_resolve(c, HANDLE(b), &d), ==, 0);

        g_assert_true(fan_dircache_may_read(c, root, d, 1));
        /* Asked once per directory and caller. */
        fs->accesses = 0;
        g_assert_true(fan_dircache_may_read(c, root, d, 1));
        g_assert_cmpuint(fs->accesses, ==, 0);

        /* a: readable but not searchable for caller 2 (r--): a's own entries
         * are, b's are not; for caller 3, a is --x: b's entries are, a's not. */
        fs->dirs[a].bits[2] = FAN_DIR_MAY_READ;
        fs->dirs[a].bits[3] = FAN_DIR_MAY_SEARCH;
        g_assert_true(fan_dircache_may_read(c, root, fan_dircache_get(c, HANDLE(a)), 2));
        g_assert_false(fan_dircache_may_read(c, root, d, 2));
        g_assert_false(fan_dircache_may_read(c, root, fan_dircache_get(c, HANDLE(a)), 3));
        g_assert_true(fan_dircache_may_read(c, root, d, 3));
        /* Caller 1's answer was kept: a chmod is heard of by its event. */
        fs->dirs[a].bits[1] = 0;
        g_assert_true(fan_dircache_may_read(c, root, d, 1));
        fan_dircache_attrib(c, HANDLE(a));
        g_assert_false(fan_dircache_may_read(c, root, d, 1));
        /* The root's own search permission counts (the walk goes through it). */
        fs->dirs[w].bits[2] = FAN_DIR_MAY_READ;
        fan_dircache_attrib(c, HANDLE(w));
        g_assert_true(fan_dircache_may_read(c, root, root, 2));
        g_assert_false(fan_dircache_may_read(c, root, fan_dircache_get(c, HANDLE(a)), 2));
        /* Root reads everything, and is not asked about. */
        fs->accesses = 0;
        g_assert_true(fan_dircache_may_read(c, root, d, 0));
        g_assert_cmpuint(fs->accesses, ==, 0);
        /* Not below the root: no, for anyone. */
        g_assert_cmpint(fan_dircache_resolve(c, HANDLE(x), &d), ==, 0);
        g_assert_false(fan_dircache_may_read(c, root, d, 0));
        g_assert_false(fan_dircache_may_read(c, root, d, 1));

        fan_dircache_unpin(c, root);
        fan_dircache_free(c);
        g_free(fs);
}

/* Random renames, creations and deletions, each told to the cache, or
 * sometimes lost and then cleared: every cached directory's path below the
 * top is the filesystem's. */
static void test_random(void) {
        GRand *rand = g_rand_new_with_seed(29);
        FakeFs *fs = fs_new();
        FanDirCache *c;
        FanDir *root;
        uint32_t w;

        g_assert_cmpint(fan_dircache_new(&fake_ops, fs, 300, &c), ==, 0);
        w = fs_mkdir(fs, 1, "w");
        g_assert_cmpint(fan_dircache_pin(c, HANDLE(w), &root), ==, 0);
        for (int round = 0; round < 20000 && fs->n < FS_MAX - 1; round++) {
                uint32_t id = (uint32_t) g_rand_int_range(rand, 2, (gint32) fs->n);
                uint32_t to = (uint32_t) g_rand_int_range(rand, 1, (gint32) fs->n);
                bool lost = g_rand_int_range(rand, 0, 50) == 0;
                char name[16];

                if (!fs->dirs[id].exists || !fs->dirs[to].exists)
                        continue;
                g_snprintf(name, sizeof(name), "n%d", round);
                switch (g_rand_int_range(rand, 0, 4)) {
                case 0:
                        if (lost)
                                fs_mkdir(fs, to, name);
                        else
                                mkdir_ev(fs, c, to, name);
                        break;
                case 1: {
                        bool below = false;

                        /* Not into itself. */
                        for (uint32_t a = to; a; a = fs->dirs[a].parent)
                                if (a == id)
                                        below = true;
                        if (below || id == w)
                                break;
                        if (lost)
                                fs_rename(fs, id, to, name);
                        else
                                rename_ev(fs, c, id, to, name);
                        break;
                }
                case 2: {
                        bool empty = true;

                        for (uint32_t k = 2; k < fs->n; k++)
                                if (fs->dirs[k].exists && fs->dirs[k].parent == id)
                                        empty = false;
                        if (!empty || id == w)
                                break;
                        fs->dirs[id].exists = false;
                        if (!lost)
                                fan_dircache_deleted(c, HANDLE(id));
                        break;
                }
                case 3: {
                        FanDir *d;

                        g_assert_cmpint(fan_dircache_resolve(c, HANDLE(id), &d), ==, 0);
                        break;
                }
                }
                if (lost)
                        fan_dircache_clear(c);
        }
        /* Every cached directory is where the filesystem says. */
        for (uint32_t id = 2; id < fs->n; id++) {
                FanDir *d = fan_dircache_get(c, HANDLE(id));
                GString *want;
                bool in = false;

                if (!d)
                        continue;
                g_assert_true(fs->dirs[id].exists);
                want = g_string_new(NULL);
                for (uint32_t a = id; a != 1; a = fs->dirs[a].parent) {
                        if (a == w) {
                                in = true;
                                break;
                        }
                        g_string_prepend(want, fs->dirs[a].name);
                        g_string_prepend_c(want, '/');
                }
                if (in && want->len > 0)
                        assert_path(c, w, id, want->str + 1);
                else if (in)
                        assert_path(c, w, id, "");
                else
                        assert_path(c, w, id, NULL);
                g_string_free(want, TRUE);
        }
        fan_dircache_unpin(c, root);
        fan_dircache_free(c);
        g_free(fs);
        g_rand_free(rand);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/fan-dircache/resolve", test_resolve);
        g_test_add_func("/fan-dircache/created", test_created);
        g_test_add_func("/fan-dircache/renames", test_renames);
        g_test_add_func("/fan-dircache/clear", test_clear);
        g_test_add_func("/fan-dircache/limit", test_limit);
        g_test_add_func("/fan-dircache/deleted", test_deleted);
        g_test_add_func("/fan-dircache/may-read", test_may_read);
        g_test_add_func("/fan-dircache/random", test_random);
        return g_test_run();
}
