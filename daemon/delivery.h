/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * delivery - the records of each owner's queue, to its transport
 *
 * Every owner of subscriptions (a client) has a DeliveryQueue: its records
 * in kernel order, renames paired (a MovePairer), the daemon's notices in
 * their place (a subscription removed, events lost), and the ids its next
 * Overflow names. A queue holds at most max_pending records: past that its
 * events are dropped and an Overflow queued, so a client that stops reading
 * costs bounded memory and the others are not held back.
 *
 * How a queue's records leave is the policy here, and the transport only
 * carries them out: the layer above registers a DeliveryOps table (and its
 * data) per queue. A transport sends a batch of events and a notice, may
 * be asked to have the client confirm it read what was sent (D-Bus: a
 * Peer.Ping; the answer comes back as delivery_confirmed()), and may say
 * it is congested (D-Bus: the bus is not reading us). The policy: never
 * more than max_pending records sent and not confirmed; a confirmation is
 * asked for once CONFIRM_MIN_UNREAD records are unconfirmed (a record now
 * and then is not followed by a request of its own); while a
 * confirmation is awaited and at least HOLD_MIN_UNREAD records are
 * unconfirmed (a burst), new events are held and go as one batch when it
 * comes, or at once when a batch is full, a notice is queued, or a rename
 * half's pairing time is up. So a storm is cut into batches by the client's
 * own round trip, and a record after a quiet moment goes at once.
 */

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "list.h"
#include "move_pairer.h"
#include "record.h"

typedef struct Delivery Delivery;
typedef struct DeliveryQueue DeliveryQueue;
typedef struct DeliveryUser DeliveryUser;

typedef struct DeliveryOps {
        /* Sends n event records (in order; taken: the transport frees them), in one message or more.
         * For each message sent it calls delivery_sent(); for each record it could not send,
         * delivery_lost() (the client hears of it in an Overflow). Return: 0, or -errno (logged). */
        int (*send_events)(DeliveryQueue *q, Record **recs, size_t n, void *data);
        /* Sends a notice: RECORD_REMOVED, or RECORD_OVERFLOW with the ids it names. Return: 0, or -errno. */
        int (*send_notice)(DeliveryQueue *q, const Record *rec, const uint32_t *ids, size_t n_ids, void *data);
        /* Optional: asks the client to confirm it has read everything sent so far; its answer is
         * delivery_confirmed(). Return: 0 (asked), -EAGAIN (not now: the transport calls
         * delivery_ask_confirm() when it may), or -errno. */
        int (*ask_confirm)(DeliveryQueue *q, void *data);
        /* Optional: the transport takes no more now; delivery tries again after DELIVERY_RETRY_USEC,
         * or, if wakes_itself, at the flush after the transport's own event (a socket writable again). */
        bool (*congested)(void *data);
        bool wakes_itself;
        /* The transport takes whatever it is sent at once and never holds it (a journal on
         * disk): a queue that fills between two flushes is handed to it then, not dropped. */
        bool reads_at_once;
} DeliveryOps;

#define DELIVERY_RETRY_USEC 10000u

/*
 * What a client may hold is bounded twice, in records and in bytes
 * (record_bytes(): long paths cost what they weigh): its queue, and what it
 * was sent and has not confirmed, each at most max_pending records and
 * max_bytes bytes. The clients of one uid together hold at most
 * max_pending_user records and max_bytes_user bytes, queued and unconfirmed
 * counted together: past that, the backlog of that user's largest queue is
 * dropped (an Overflow for it), so one user's clients that do not read cost
 * that user, and bounded memory, never another user's records.
 */
typedef struct DeliveryLimits {
        uint32_t max_pending;       /* records queued, and records sent and not confirmed */
        uint64_t max_bytes;         /* bytes of records queued, and of records sent and not confirmed */
        uint32_t max_pending_user;  /* records queued and unconfirmed, all clients of a uid together */
        uint64_t max_bytes_user;    /* bytes of the same */
        uint32_t batch_max;         /* records in one batch */
        uint64_t pair_timeout_usec; /* MovePairer's */
        uint32_t pair_max_distance;
} DeliveryLimits;

typedef struct DeliveryStats {
        uint64_t events_delivered; /* records sent in batches */
        uint64_t batches_sent;
        uint64_t overflows;      /* Overflow notices sent */
        uint64_t events_dropped; /* records dropped from backlogs, or that could not be sent */
} DeliveryStats;

/* A uid's clients together. */
struct DeliveryUser {
        uid_t uid;
        LIST_HEAD(DeliveryQueue, queues);
        uint64_t held, held_bytes; /* its queues' records and bytes, queued or unconfirmed */
};

struct DeliveryQueue {
        const char *name;  /* for logs: the owner's */
        MovePairer pairer; /* records not yet sent, kernel order */
        DeliveryUser *user;
        LIST_FIELDS(DeliveryQueue, by_user);
        /* What was last added to user->held: size and bytes of the pairer, unconfirmed records and bytes. */
        uint64_t counted, counted_bytes;
        GArray *lost_ids; /* uint32_t: ids for the next Overflow, unsorted, may repeat; NULL: none */
        size_t n_lost_compacted;
        bool overflow_queued; /* a RECORD_OVERFLOW is in the pairer */
        size_t n_notices;     /* RECORD_OVERFLOW and RECORD_REMOVED in the pairer: never held */

        /* Flow control: records sent, and how many of them the client has
         * confirmed reading; the count at the request in flight. */
        uint64_t sent, read, confirm_at;
        uint64_t sent_bytes, read_bytes, confirm_at_bytes;
        size_t batch_n;       /* of the batch being sent: records not yet delivery_sent(), */
        uint64_t batch_bytes; /* and their bytes */
        bool confirming;      /* a confirmation request is in flight */
        /* Its last request was answered (a timeout is no answer): records are
         * held behind a request in flight only for such a client, else one
         * that never answers would hold them for the transport's timeout. */
        bool answers;

        /* Its own share of the stats (a caller's GetStats sees its uid's). */
        uint64_t n_dropped, n_overflows;

        bool dirty; /* on the list delivery_flush() goes through */
        Delivery *delivery;
        LIST_FIELDS(DeliveryQueue, dirty);
        const DeliveryOps *ops;
        void *data;
};

int delivery_new(const DeliveryLimits *limits, Delivery **ret);
/* Its limits (the current ones, after a reload). */
const DeliveryLimits *delivery_get_limits(const Delivery *d);
Delivery *delivery_free(Delivery *d);
/* New limits apply at once; the pairing limits to queues set up from now on and to q by delivery_queue_update(). */
void delivery_set_limits(Delivery *d, const DeliveryLimits *limits);
const DeliveryStats *delivery_get_stats(const Delivery *d);

/* q's records count with those of uid's other clients. Return: 0, -ENOMEM. */
int delivery_queue_init(Delivery *d, DeliveryQueue *q, const char *name, uid_t uid);
/* Drops what is queued; q is off every list. */
void delivery_queue_done(Delivery *d, DeliveryQueue *q);
void delivery_queue_update(Delivery *d, DeliveryQueue *q);
/* The client's records go to another transport from now on. What the last one
 * sent is out of its hands, confirmed or not: nothing more is awaited of it. */
void delivery_queue_set_transport(DeliveryQueue *q, const DeliveryOps *ops, void *data);
static inline size_t delivery_queue_size(const DeliveryQueue *q) {
        return move_pairer_size(&q->pairer);
}
/* Where the records queued on q are made (record_new_in()). */
static inline RecordArena *delivery_queue_arena(DeliveryQueue *q) {
        return &q->pairer.arena;
}
static inline size_t delivery_queue_bytes(const DeliveryQueue *q) {
        return move_pairer_bytes(&q->pairer);
}
/* What q may be sent now without confirming first: records and bytes (a
 * transport that reads on its own, the durable pump, asks before sending). */
void delivery_window(const DeliveryQueue *q, uint64_t *ret_records, uint64_t *ret_bytes);
/* Records and bytes the clients of uid hold, queued or unconfirmed. */
void delivery_user_held(const Delivery *d, uid_t uid, uint64_t *ret_records, uint64_t *ret_bytes);

/* Queues rec (taken; NULL: out of memory, logged). Past max_pending, the
 * queue's events are dropped and an Overflow queued instead. */
void delivery_submit(Delivery *d, DeliveryQueue *q, Record *rec);
/* The transport sent a message of n event records of q. */
void delivery_sent(DeliveryQueue *q, size_t n);
/* The same, with the bytes they weigh, for records that did not come from q's
 * queue (a replay from disk): counted against the byte window too. */
void delivery_sent_bytes(DeliveryQueue *q, size_t n, uint64_t bytes);
/* The transport may ask q's client for a confirmation again (after -EAGAIN). */
void delivery_ask_confirm(DeliveryQueue *q);
/* Everything sent to q's client counts as read: a transport that bounds what
 * is unread by itself (a socket's buffer) says so when it has handed over
 * all it was given, instead of asking the client. */
void delivery_all_read(DeliveryQueue *q);

/* Queues an Overflow naming id (its subscription lost events, or coverage). */
void delivery_lost(Delivery *d, DeliveryQueue *q, uint32_t id);
/* The transport could not send a record of subscription id: it costs only
 * itself, counted as dropped, and the client hears of it in an Overflow. */
void delivery_dropped(DeliveryQueue *q, uint32_t id);
/* Queues one Overflow naming every id of ids (the kernel lost events). */
void delivery_lost_all(Delivery *d, DeliveryQueue *q, const uint32_t *ids, size_t n);

/* Sends what every queue with records lets go at now_usec. */
void delivery_flush(Delivery *d, uint64_t now_usec);
/* When a flush will have something to do that it has not now: the earliest
 * pairing deadline, or a retry after congestion; UINT64_MAX if nothing waits. */
uint64_t delivery_next_deadline(const Delivery *d);

/* The answer to q's request (ask_confirm): confirmed (the client itself
 * answered), or not (the transport could not tell: then nothing is held
 * for it until it confirms again). What was held for it goes now. */
void delivery_confirmed(Delivery *d, DeliveryQueue *q, bool answered, uint64_t now_usec);
