/* SPDX-License-Identifier: GPL-2.0 */
/*
 * inotify_dev_priv.h - what the two halves of the inotify_dev module share
 *
 * inotify_dev_user.c and inotify_dev_ioctl.c are the user-facing half:
 * the first the misc device, its fops, read/poll, limits, sysfs and module
 * init/exit, the second the ioctls (the watches, INOTIFY_GET_INFO,
 * INOTIFY_SET_FLAGS, FIONREAD). inotify_dev_fsnotify.c is the
 * fsnotify-facing half (the event handler and the mark callbacks). They
 * meet here: the per-open instance, the mark wrapper and the queued record.
 *
 * They stand in layers, each calling only those before it:
 * inotify_dev_fsnotify.c, inotify_dev_ioctl.c, inotify_dev_user.c. The
 * fsnotify half is the ground floor: besides the callbacks it has the
 * records' alloc/free and their queueing, the module's counters and the
 * per-uid usage records, which its callbacks give back when a watch or a
 * group dies. The user half calls down (the ops for its groups, records,
 * usage, counters); nothing in inotify_dev_fsnotify.c uses a name defined in
 * the other two files, nor anything in inotify_dev_ioctl.c one defined in
 * inotify_dev_user.c (the ioctl file holds max_user_watches, which the user
 * file's parameter and sysfs file set).
 *
 * Lock order: dev->watch_mutex, then group->mark_mutex (inside fsnotify) or
 * a mark's own lock, then dev->idr_lock or dev->lock (never both at once).
 * No lock of ours is held across copy_to_user()/copy_from_user().
 *
 * Lifetimes, in one place:
 *  - struct idev_device lives as long as its fsnotify group: it is the
 *    group's private data and is freed by free_group_priv, after the last
 *    mark of the group is gone. close() only shuts it down.
 *  - struct idev_mark is created with one reference, the idr's (the "table
 *    ref"). Anyone who finds it in the idr under idr_lock may take another
 *    with refcount_inc() while the table still holds its own. freeing_mark
 *    removes it from the idr and drops the table ref, exactly once.
 *  - struct idev_event is owned by whoever holds it: the handler until it is
 *    queued, the queue (under dev->lock) until read() pops it, then read().
 *  - The module itself: an open instance pins it (fops.owner; the VFS takes
 *    and drops that reference, never our code). A group may outlive its
 *    close() until fsnotify's reaper frees its last mark; module_exit waits
 *    for idev_stat_groups to reach 0, then flushes the reaper.
 */
#ifndef _INOTIFY_DEV_PRIV_H
#define _INOTIFY_DEV_PRIV_H

#include <linux/fsnotify_backend.h>
#include <linux/idr.h>
#include <linux/inotify.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>

#include "uapi/inotify_dev.h"

/* Per-uid usage, for max_user_devices and max_user_watches. */
struct idev_user {
	struct hlist_node node;		/* in idev_users, under idev_users_lock */
	kuid_t uid;
	refcount_t ref;			/* one per open device of this uid */
	atomic_t devices;		/* open instances */
	atomic_t watches;		/* live watches */
};

/*
 * One queued record, kept in the form read() copies out: rec, then rec.len
 * bytes of NUL-padded name. Immutable once queued.
 */
struct idev_event {
	struct list_head list;		/* in dev->events [dev->lock] */
	struct inotify_event rec;	/* must be last: rec.name[] follows */
};

/* One open of /dev/inotify. */
struct idev_device {
	struct fsnotify_group *group;	/* group->private points back here */
	struct idev_user *user;		/* the opener's uid, one ref */
	struct list_head node;		/* in idev_devices while open [idev_devices_lock] */

	/* The event queue. */
	spinlock_t lock;		/* protects the fields down to shutdown */
	struct list_head events;	/* struct idev_event, oldest first */
	unsigned int q_len;		/* records queued, the overflow one included */
	size_t q_bytes;			/* bytes read() would return for all of them */
	unsigned int max_events;	/* max_queued_events, copied at open() */
	bool shutdown;			/* close() began: queue nothing more */
	struct idev_event *overflow;	/* preallocated {-1, IN_Q_OVERFLOW, 0, 0}; */
					/* queued iff on a list [dev->lock] */
	wait_queue_head_t wq;		/* read() and poll() wait here */
	struct fasync_struct *fa;	/* O_ASYNC readers */

	/* The watches: wd -> struct idev_mark, holding the table ref. */
	struct mutex watch_mutex;	/* serializes the watch ioctls and INOTIFY_SET_FLAGS */
	spinlock_t idr_lock;		/* protects idr and every mark's wd */
	struct idr idr;

	/*
	 * INOTIFY_DEV_EXCL_SELF: the thread group whose events are left out,
	 * one reference, or NULL. Written under watch_mutex, read with
	 * READ_ONCE by the handler, which only compares it with the current
	 * task's own (live) thread group: a pointer read just before it is
	 * replaced and put is still not that of any live task but its own.
	 */
	struct pid *excl_tgid;
};

/* One watch: an fsnotify inode mark plus what the user asked for. */
struct idev_mark {
	struct fsnotify_mark fsn_mark;
	int wd;				/* -1 once removed from the idr [idr_lock] */
	u32 user_mask;			/* IN_* events wanted, and IN_ONESHOT and
					 * IN_EXCL_UNLINK if asked for; READ_ONCE in
					 * the handler, written under watch_mutex */
	bool syscall_abi;		/* placed or last changed by INOTIFY_ADD_WATCH:
					 * reported as inotify(7) does (no IN_ISDIR on
					 * IN_DELETE_SELF) [as user_mask] */
	atomic_t oneshot_fired;		/* IN_ONESHOT: its one record was taken */
	unsigned long ino;		/* the inode's, for fdinfo */
	dev_t sdev;
	struct idev_event *ignored;	/* preallocated IN_IGNORED record */
};

/*
 * The mark always carries every event a watch may ask for (and
 * FS_EVENT_ON_CHILD for a directory): fsnotify_recalc_mask() is not
 * exported, so a mark's mask cannot be widened after it is attached. The
 * user's mask is applied in the handler.
 */
#define IDEV_MARK_MASK		(INOTIFY_DEV_EVENTS | FS_UNMOUNT)

static inline struct idev_mark *idev_mark(struct fsnotify_mark *fsn_mark)
{
	return container_of(fsn_mark, struct idev_mark, fsn_mark);
}

/* Bytes a record takes in read()'s buffer: the header, then the padded name. */
static inline size_t idev_event_size(const struct idev_event *ev)
{
	return sizeof(ev->rec) + ev->rec.len;
}

/* inotify_dev_fsnotify.c */
extern const struct fsnotify_ops idev_fsnotify_ops;
struct idev_event *idev_event_alloc(s32 wd, u32 mask, u32 cookie,
				    const struct qstr *name, gfp_t gfp);
void idev_event_free(struct idev_event *ev);
void idev_queue_event(struct idev_device *dev, struct idev_event *ev,
		      struct idev_mark *imark);
struct idev_user *idev_user_get(kuid_t uid);
void idev_user_put(struct idev_user *user);

/* inotify_dev_fsnotify.c: the module's own counters, for the stress test. */
extern atomic_long_t idev_stat_instances;
extern atomic_long_t idev_stat_watches;
extern atomic_long_t idev_stat_groups;

/* inotify_dev_ioctl.c */
extern unsigned int max_user_watches;
long idev_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

#endif /* _INOTIFY_DEV_PRIV_H */
