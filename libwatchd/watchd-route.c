/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-route - a record of watchd to the subscriptions it is for (see watchd-route.h)
 */

#include "watchd-route.h"
#include "watchd-wire.h"

WatchdRemovedReason removed_reason_from_string(const char *s) {
        if (g_str_equal(s, "deleted"))
                return WATCHD_REMOVED_DELETED;
        if (g_str_equal(s, "unmounted"))
                return WATCHD_REMOVED_UNMOUNTED;
        if (g_str_equal(s, "oneshot"))
                return WATCHD_REMOVED_ONESHOT;
        return WATCHD_REMOVED_OTHER;
}

/* Whether records about path may belong to sub: sub watches the directory
 * path is in, or is RECURSIVE above it. */
static gboolean sub_covers(WatchdSubscription *sub, const char *path) {
        const char *c = PRIV(sub)->canonical;
        size_t n = strlen(c);

        if (strncmp(path, c, n) != 0 || (path[n] != '/' && !(n == 1 && c[0] == '/')))
                return FALSE;
        if (sub->flags & WATCHD_WATCH_RECURSIVE)
                return TRUE;
        return strchr(path + n + (n == 1 ? 0 : 1), '/') == NULL;
}

/* watchd pairs the halves of a rename in the client's queue, whatever
 * subscriptions they came from, and sends the pair under the id of the
 * MOVED_FROM's. A subscription of this client that saw only the MOVED_TO
 * would then hear nothing: give it the pair too. Not needed once the daemon
 * delivers a pair to each subscription (docs/proposals/glib-semantics.md). */
static void core_fan_out_rename(Core *core, WatchdSubscription *from, WatchdEvent *ev) {
        const char *old_path = watchd_event_get_path(ev), *new_path = watchd_event_get_new_path(ev);
        g_autofree char *dir = g_path_get_dirname(new_path);

        for (;;) {
                GPtrArray *a = g_hash_table_lookup(core->by_dir, dir);
                char *up;

                for (guint i = 0; a && i < a->len; i++) {
                        WatchdSubscription *s = a->pdata[i];

                        if (s == from || PRIV(s)->state != SUB_ACTIVE || !sub_covers(s, new_path) ||
                            sub_covers(s, old_path))
                                continue;
                        core_queue_event(core, s, watchd_event_ref(ev));
                }
                if (g_str_equal(dir, "/") || g_str_equal(dir, "."))
                        break;
                up = g_path_get_dirname(dir);
                g_free(dir);
                dir = up;
        }
}

/* Lock held. Turns one record into an event for sub. */
void core_deliver_record(Core *core, WatchdSubscription *sub, guint32 mask, guint32 cookie,
                                const char *wire_path, const char *wire_new_path) {
        g_autoptr(GError) error = NULL;
        gboolean escaped = (mask & WATCHD_WIRE_PATH_ESCAPED) != 0;
        g_autofree char *path = watchd_wire_path_decode(wire_path, escaped, &error);
        g_autofree char *new_path = NULL;
        WatchdEvent *ev;

        if (path && *wire_new_path)
                new_path = watchd_wire_path_decode(wire_new_path, escaped, &error);
        if (!path || (*wire_new_path && !new_path)) {
                /* A record that cannot be read is a lost event: say so. */
                g_warning("libwatchd: %s", error->message);
                core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_DAEMON, NULL, NULL);
                return;
        }
        ev = watchd_event_new(mask & ~WATCHD_WIRE_PATH_ESCAPED, cookie, path, new_path);
        if (watchd_event_is_rename(ev) && !(core->caps & WATCHD_CAPABILITY_PAIR_PER_SUBSCRIPTION))
                core_fan_out_rename(core, sub, ev);
        core_queue_event(core, sub, ev);
}

/* What arrived for id before its AddWatch answered goes to sub, in order. */
void core_claim(Core *core, WatchdSubscription *sub, const char *sender, guint32 id) {
        GList *l = core->unclaimed.head;

        if (core->unclaimed_lost)
                core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_CLIENT, NULL, NULL);
        while (l) {
                GList *next = l->next;
                Unclaimed *u = l->data;

                if (u->id == id && g_strcmp0(u->sender, sender) == 0) {
                        g_queue_delete_link(&core->unclaimed, l);
                        if (PRIV(sub)->state == SUB_ACTIVE) {
                                if (u->kind == ITEM_EVENTS) {
                                        if (watchd_event_is_rename(u->event) &&
                                            !(core->caps & WATCHD_CAPABILITY_PAIR_PER_SUBSCRIPTION))
                                                core_fan_out_rename(core, sub, u->event);
                                        core_queue_event(core, sub, g_steal_pointer(&u->event));
                                } else if (u->kind == ITEM_OVERFLOW)
                                        core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_DAEMON, NULL,
                                                          NULL);
                                else
                                        core_end_sub(core, sub, removed_reason_from_string(u->reason), u->reason,
                                                     NULL);
                        }
                        unclaimed_free(u);
                }
                l = next;
        }
}
