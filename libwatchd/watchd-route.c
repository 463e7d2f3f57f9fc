/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-route - a record of watchd to the subscriptions it is for (see watchd-route.h)
 *
 * A subscription sees its own path (events on the watched object itself),
 * the names in its directory, and with RECURSIVE everything below it. Its
 * path is the one watchd holds now (PRIV(sub)->current): watchd follows a
 * watched directory renamed where a watch on its parent sees it
 * (watchd(8), MISSING PATHS), and watchd-receive.c asks it where the
 * subscriptions are when a record seems to be elsewhere. The subscriptions
 * a path may belong to are found with one pass over it (watchd-paths.h).
 */

#include "watchd-route.h"

WatchdRemovedReason removed_reason_from_string(const char *s) {
        if (g_str_equal(s, "deleted"))
                return WATCHD_REMOVED_DELETED;
        if (g_str_equal(s, "unmounted"))
                return WATCHD_REMOVED_UNMOUNTED;
        if (g_str_equal(s, "oneshot"))
                return WATCHD_REMOVED_ONESHOT;
        return WATCHD_REMOVED_OTHER;
}

/* Whether sub sees path (canonical): its own path, a name in it, or with
 * RECURSIVE anything below. */
static gboolean sub_sees(WatchdSubscription *sub, const char *path) {
        const char *c = PRIV(sub)->current;
        size_t n = strlen(c);
        const char *rest;

        if (n == 1)
                rest = path + 1; /* "/": every path is below */
        else if (strncmp(path, c, n) != 0 || (path[n] != '/' && path[n] != '\0'))
                return FALSE;
        else if (path[n] == '\0')
                return TRUE;
        else
                rest = path + n + 1;
        if (*rest == '\0')
                return TRUE; /* "/" itself */
        return (sub->flags & WATCHD_WATCH_RECURSIVE) || strchr(rest, '/') == NULL;
}

/* Whether a subscription at relation from path sees it (in the index's terms). */
static gboolean relation_sees(WatchdSubscription *s, PathRelation relation) {
        return relation != PATH_ANCESTOR || (s->flags & WATCHD_WATCH_RECURSIVE);
}

static gboolean find_seer(gpointer item, PathRelation relation, gpointer userdata) {
        WatchdSubscription *s = item;
        gboolean *found = userdata;

        if (PRIV(s)->state == SUB_ACTIVE && relation_sees(s, relation)) {
                *found = TRUE;
                return FALSE;
        }
        return TRUE;
}

/* Whether some active subscription of the client sees path. */
static gboolean client_sees(Core *core, const char *path) {
        gboolean found = FALSE;

        path_index_foreach_above(core->by_path, path, strlen(path), find_seer, &found);
        return found;
}

typedef struct FanOut {
        Core *core;
        WatchdSubscription *from;
        WatchdEvent *ev;
} FanOut;

static gboolean fan_out_one(gpointer item, PathRelation relation, gpointer userdata) {
        FanOut *fo = userdata;
        WatchdSubscription *s = item;

        /* Not the subscription the path is itself: it sees names in it, not its own renames here. */
        if (s != fo->from && PRIV(s)->state == SUB_ACTIVE && relation != PATH_SELF && relation_sees(s, relation) &&
            !sub_sees(s, watchd_event_get_path(fo->ev)))
                core_queue_event(fo->core, s, watchd_event_ref(fo->ev));
        return TRUE;
}

/* watchd pairs the halves of a rename in the client's queue, whatever
 * subscriptions they came from, and sends the pair under the id of the
 * MOVED_FROM's. A subscription of this client that saw only the MOVED_TO
 * would then hear nothing: give it the pair too. Not needed once the daemon
 * delivers a pair to each subscription (docs/proposals/glib-semantics.md).
 * The new path's directories are walked in place, once (watchd-paths.h). */
static void core_fan_out_rename(Core *core, WatchdSubscription *from, WatchdEvent *ev) {
        const char *new_path = watchd_event_get_new_path(ev);
        FanOut fo = { core, from, ev };

        path_index_foreach_above(core->by_path, new_path, strlen(new_path), fan_out_one, &fo);
}

gboolean core_route_event(Core *core, WatchdSubscription *sub, WatchdEvent *ev) {
        const char *path = watchd_event_get_path(ev), *new_path = watchd_event_get_new_path(ev);
        gboolean rename = watchd_event_is_rename(ev);

        /* A pair is sub's by one of its paths; its other path is one of the
         * client's (watchd pairs the halves in the client's queue). */
        if (rename ? !((sub_sees(sub, path) && client_sees(core, new_path)) ||
                       (sub_sees(sub, new_path) && client_sees(core, path))) :
                     !sub_sees(sub, path))
                return FALSE;
        if (rename && !(core->caps & WATCHD_CAPABILITY_PAIR_PER_SUBSCRIPTION))
                core_fan_out_rename(core, sub, ev);
        core_queue_event(core, sub, ev);
        return TRUE;
}

void core_drop_outside(Core *core, WatchdSubscription *sub, WatchdEvent *ev) {
        const char *np = watchd_event_get_new_path(ev);

        core_violation(core, VIOLATION_OUTSIDE,
                       "sent a path outside the subscription it names (%u, \"%s\"): \"%s\"%s%s%s", PRIV(sub)->id,
                       PRIV(sub)->current, watchd_event_get_path(ev), np ? " -> \"" : "", np ?: "", np ? "\"" : "");
        core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_DAEMON, NULL, NULL);
        watchd_event_unref(ev);
}

void core_claim(Core *core, WatchdSubscription *sub, const char *sender, guint32 id) {
        GList *l = core->unclaimed.head;

        if (core->unclaimed_lost)
                core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_CLIENT, NULL, NULL);
        while (l) {
                GList *next = l->next;
                Held *u = l->data;

                if (u->id == id && g_strcmp0(u->sender, sender) == 0) {
                        g_queue_delete_link(&core->unclaimed, l);
                        core->held_bytes -= u->bytes;
                        if (PRIV(sub)->state != SUB_ACTIVE)
                                ;
                        else if (core->resync_pending)
                                /* In order behind what waits for ListWatches. */
                                core_hold(core, sub, u->kind, g_steal_pointer(&u->event), u->reason);
                        else if (u->kind == ITEM_EVENTS) {
                                WatchdEvent *ev = g_steal_pointer(&u->event);

                                if (!core_route_event(core, sub, ev))
                                        core_drop_outside(core, sub, ev);
                        } else if (u->kind == ITEM_OVERFLOW)
                                core_queue_notice(core, ITEM_OVERFLOW, sub, WATCHD_OVERFLOW_DAEMON, NULL, NULL);
                        else
                                core_end_sub(core, sub, removed_reason_from_string(u->reason), u->reason, NULL);
                        held_free(u);
                }
                l = next;
        }
}
