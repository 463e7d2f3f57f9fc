// SPDX-License-Identifier: GPL-2.0
/*
 * inotify_dev_fsnotify.c - the fsnotify-facing half of /dev/inotify
 *
 * fsnotify calls in here: handle_inode_event for every event on a watched
 * inode (or on a child of a watched directory), freeing_mark once when a
 * watch dies for any reason (INOTIFY_IGNORE, close(), the inode's last link
 * going, its filesystem being unmounted), free_mark when the last reference
 * to a mark is dropped, free_group_priv when the last reference to an
 * instance's group is dropped.
 *
 * The handler runs in the context of whoever touched the file, inside
 * fsnotify's SRCU read section, often with directory locks held: it may
 * allocate, but it never sleeps on anything of ours except dev->lock (a
 * spinlock held only for list operations) and never waits for the reader.
 *
 * It also holds what those callbacks give back when a watch or a group dies:
 * the module's counters and the per-uid usage records. inotify_dev_user.c
 * and inotify_dev_ioctl.c sit above this file: they take records, usage and
 * counts from here, and nothing here calls into them (see inotify_dev_priv.h).
 */
#include <linux/atomic.h>
#include <linux/fsnotify_backend.h>
#include <linux/hashtable.h>
#include <linux/memcontrol.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/wait_bit.h>

#include "inotify_dev_priv.h"

/*
 * The module's own live counters, shown in /sys/class/misc/inotify/stats/
 * (inotify_dev_user.c's sysfs files).
 */
atomic_long_t idev_stat_instances = ATOMIC_LONG_INIT(0);	/* open instances */
atomic_long_t idev_stat_watches = ATOMIC_LONG_INIT(0);		/* live watches */
atomic_long_t idev_stat_groups = ATOMIC_LONG_INIT(0);		/* groups not yet freed */

/* uid -> struct idev_user, for the per-user limits (ucounts are not exported). */
static DEFINE_HASHTABLE(idev_users, 6);
static DEFINE_SPINLOCK(idev_users_lock);

/* Returns @uid's usage record with a reference, or NULL on ENOMEM. */
struct idev_user *idev_user_get(kuid_t uid)
{
	struct idev_user *user, *new;

	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return NULL;

	spin_lock(&idev_users_lock);
	hash_for_each_possible(idev_users, user, node, __kuid_val(uid)) {
		if (uid_eq(user->uid, uid)) {
			/* Not zero: the last put removes it under this lock. */
			refcount_inc(&user->ref);
			goto out_unlock;
		}
	}
	user = new;
	new = NULL;
	user->uid = uid;
	refcount_set(&user->ref, 1);
	hash_add(idev_users, &user->node, __kuid_val(uid));
out_unlock:
	spin_unlock(&idev_users_lock);
	kfree(new);
	return user;
}

void idev_user_put(struct idev_user *user)
{
	if (!refcount_dec_and_lock(&user->ref, &idev_users_lock))
		return;
	hash_del(&user->node);
	spin_unlock(&idev_users_lock);
	WARN_ON_ONCE(atomic_read(&user->devices) || atomic_read(&user->watches));
	kfree(user);
}

/*
 * Allocates a record in its read() form; @name may be NULL. The name is
 * NUL-padded to a multiple of 16 bytes (0.23 and 6.1 alike). NULL on ENOMEM.
 */
struct idev_event *idev_event_alloc(s32 wd, u32 mask, u32 cookie,
				    const struct qstr *name, gfp_t gfp)
{
	u32 name_len = name ? name->len : 0;
	u32 len = name_len ? roundup(name_len + 1, sizeof(struct inotify_event)) : 0;
	struct idev_event *ev;

	ev = kmalloc(sizeof(*ev) + len, gfp);
	if (!ev)
		return NULL;
	INIT_LIST_HEAD(&ev->list);
	ev->rec.wd = wd;
	ev->rec.mask = mask & INOTIFY_DEV_REPORTED_BITS;
	ev->rec.cookie = cookie;
	ev->rec.len = len;
	if (len) {
		memcpy(ev->rec.name, name->name, name_len);
		memset(ev->rec.name + name_len, 0, len - name_len);
	}
	return ev;
}

void idev_event_free(struct idev_event *ev)
{
	kfree(ev);
}

/*
 * Is @ev the same as the newest queued record? Then it is merged into it
 * (dropped), as inotify has done since 2.6.25. Never onto an IN_IGNORED or
 * the overflow record: those end a wd's or the queue's history.
 */
static bool idev_event_is_dup(struct idev_device *dev, struct idev_event *ev)
{
	struct idev_event *last;

	assert_spin_locked(&dev->lock);
	if (list_empty(&dev->events))
		return false;
	last = list_last_entry(&dev->events, struct idev_event, list);
	if (last == dev->overflow || (last->rec.mask & IN_IGNORED))
		return false;
	return last->rec.wd == ev->rec.wd && last->rec.mask == ev->rec.mask &&
	       last->rec.cookie == ev->rec.cookie && last->rec.len == ev->rec.len &&
	       !memcmp(last->rec.name, ev->rec.name, ev->rec.len);
}

/* Appends @ev to the queue. Must be called with dev->lock held. */
static void idev_enqueue_locked(struct idev_device *dev, struct idev_event *ev)
{
	assert_spin_locked(&dev->lock);
	list_add_tail(&ev->list, &dev->events);
	dev->q_len++;
	dev->q_bytes += idev_event_size(ev);
}

/*
 * Wakes read()/poll() sleepers and O_ASYNC owners after a record was queued.
 * wq_has_sleeper() (a full barrier, paired with the one in wait_woken() and
 * poll_wait()'s queueing) spares the wait-queue lock when nobody sleeps.
 */
static void idev_wake_readers(struct idev_device *dev)
{
	if (wq_has_sleeper(&dev->wq))
		wake_up(&dev->wq);
	kill_fasync(&dev->fa, SIGIO, POLL_IN);
}

/*
 * Queues the overflow record if it is not queued already. Used when a record
 * could not be allocated: the loss is reported, never silent.
 */
static void idev_queue_overflow(struct idev_device *dev)
{
	bool queued = false;

	spin_lock(&dev->lock);
	if (!dev->shutdown && list_empty(&dev->overflow->list)) {
		idev_enqueue_locked(dev, dev->overflow);
		queued = true;
	}
	spin_unlock(&dev->lock);
	if (queued)
		idev_wake_readers(dev);
}

/*
 * Queues @ev, taking ownership of it: it is freed here if it is merged, if
 * the queue is full, if the device is shutting down, or if @imark (the watch
 * the event is for, NULL for IN_IGNORED) has been removed meanwhile.
 *
 * The last check is made under dev->lock, which idev_freeing_mark() takes
 * to queue IN_IGNORED after setting the wd to -1: so no record of a watch is
 * ever queued after its IN_IGNORED.
 *
 * A full queue (max_events records) gets one {wd=-1, IN_Q_OVERFLOW} record
 * (cookie 0, as 6.1); every later event is dropped until read() has taken
 * that record out.
 *
 * Locking: takes dev->lock; callable from any context that may spin.
 */
void idev_queue_event(struct idev_device *dev, struct idev_event *ev,
		      struct idev_mark *imark)
{
	spin_lock(&dev->lock);
	if (dev->shutdown || (imark && READ_ONCE(imark->wd) < 0) ||
	    idev_event_is_dup(dev, ev))
		goto out_drop;
	if (dev->q_len >= dev->max_events) {
		if (!list_empty(&dev->overflow->list))
			goto out_drop;
		idev_event_free(ev);
		ev = dev->overflow;
	}
	idev_enqueue_locked(dev, ev);
	spin_unlock(&dev->lock);

	idev_wake_readers(dev);
	return;

out_drop:
	spin_unlock(&dev->lock);
	idev_event_free(ev);
}

/*
 * Whether the current task's thread group asked this instance to leave its
 * events out (INOTIFY_DEV_EXCL_SELF). Only pointers are compared: the
 * current task's own struct pid is live, so no other live one, and no
 * one we still hold, can share its address (see struct idev_device).
 *
 * Locking: none (READ_ONCE of a pointer that is never dereferenced here).
 */
static bool idev_excluded(struct idev_device *dev)
{
	struct pid *excl = READ_ONCE(dev->excl_tgid);

	return excl && excl == task_tgid(current);
}

/*
 * The event handler. @mask has one event bit (plus FS_ISDIR, and
 * FS_EVENT_ON_CHILD when the event is about a child of the watched directory
 * @dir named @name). @cookie is non-zero for the two halves of a rename.
 *
 * The mark listens to every event a watch may ask for (IDEV_MARK_MASK);
 * what this watch asked for is applied here, before anything is allocated,
 * so that a watch whose mask was narrowed stops seeing the old events at
 * once. fsnotify itself drops an unlinked child's events for a mark with
 * FSNOTIFY_MARK_FLAG_EXCL_UNLINK (IN_EXCL_UNLINK) before calling us.
 *
 * An IN_ONESHOT watch takes one record, then destroys its own mark here, as
 * inotify does (the SRCU read section keeps the mark alive meanwhile); its
 * IN_IGNORED follows from idev_freeing_mark(). Two events racing on two CPUs
 * cannot both be taken: the first to set oneshot_fired wins.
 *
 * Context: the task doing the filesystem operation, in fsnotify's SRCU read
 * section; may sleep in the allocator and, for IN_ONESHOT, in
 * fsnotify_destroy_mark() (group->mark_mutex, which no path of ours holds
 * while causing an event). Takes dev->lock.
 */
static int idev_handle_inode_event(struct fsnotify_mark *fsn_mark, u32 mask,
				   struct inode *inode, struct inode *dir,
				   const struct qstr *name, u32 cookie)
{
	struct idev_mark *imark = idev_mark(fsn_mark);
	struct fsnotify_group *group = fsn_mark->group;
	struct idev_device *dev = group->private;
	struct mem_cgroup *old_memcg;
	struct idev_event *ev;
	u32 user_mask, report;
	int wd;

	/* The watch is being removed: its IN_IGNORED is, or will be, queued. */
	wd = READ_ONCE(imark->wd);
	if (wd < 0)
		return 0;

	user_mask = READ_ONCE(imark->user_mask);
	report = (mask & user_mask & INOTIFY_DEV_EVENTS) | (mask & FS_UNMOUNT);
	if (!report)
		return 0;
	/* Asked for by the owner: its own doings, but never an unmount. */
	if (!(mask & FS_UNMOUNT) && idev_excluded(dev))
		return 0;
	/*
	 * 0.23 marks directories, DELETE_SELF included; inotify(7) takes
	 * IN_ISDIR off IN_MOVE_SELF and IN_DELETE_SELF. Nothing else leaks.
	 */
	if (!READ_ONCE(imark->syscall_abi) || !(mask & (FS_MOVE_SELF | FS_DELETE_SELF)))
		report |= mask & FS_ISDIR;

	if ((user_mask & IN_ONESHOT) && atomic_xchg(&imark->oneshot_fired, 1))
		return 0;

	/* Charge the record to the reader's memcg, as inotify does. */
	old_memcg = set_active_memcg(group->memcg);
	ev = idev_event_alloc(wd, report, cookie, name,
			      GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL);
	set_active_memcg(old_memcg);
	if (unlikely(!ev))
		idev_queue_overflow(dev);
	else
		idev_queue_event(dev, ev, imark);

	if (user_mask & IN_ONESHOT)
		fsnotify_destroy_mark(fsn_mark, group);
	return 0;
}

/*
 * A watch is dying: removed by INOTIFY_IGNORE or close(), or because its
 * inode lost its last link or its filesystem is being unmounted (after the
 * IN_DELETE_SELF or IN_UNMOUNT record, so IN_IGNORED comes last). fsnotify
 * calls this once per mark, with a reference held by the caller.
 *
 * Takes the mark out of the wd table, queues its IN_IGNORED (dropped by
 * idev_queue_event() if close() is under way: close() sends none), gives
 * back the watch to the user's count and drops the table's reference.
 *
 * Locking: process context; takes idr_lock, then dev->lock (not nested).
 */
static void idev_freeing_mark(struct fsnotify_mark *fsn_mark,
			      struct fsnotify_group *group)
{
	struct idev_mark *imark = idev_mark(fsn_mark);
	struct idev_device *dev = group->private;
	struct idev_event *ignored;
	int wd;

	spin_lock(&dev->idr_lock);
	wd = imark->wd;
	if (wd >= 0) {
		idr_remove(&dev->idr, wd);
		WRITE_ONCE(imark->wd, -1);
	}
	ignored = imark->ignored;
	imark->ignored = NULL;
	spin_unlock(&dev->idr_lock);

	/* Never reached the table: nothing to undo (cannot happen today). */
	if (WARN_ON_ONCE(wd < 0)) {
		idev_event_free(ignored);
		return;
	}

	if (ignored)
		idev_queue_event(dev, ignored, NULL);
	atomic_dec(&dev->user->watches);
	atomic_long_dec(&idev_stat_watches);
	/* Drop the table's reference; our caller still holds one. */
	fsnotify_put_mark(fsn_mark);
}

/* The last reference to a mark is gone (maybe in fsnotify's reaper). */
static void idev_free_mark(struct fsnotify_mark *fsn_mark)
{
	struct idev_mark *imark = idev_mark(fsn_mark);

	/* Still here if the mark never became live (add failed). */
	idev_event_free(imark->ignored);
	kfree(imark);
}

/*
 * The last reference to an instance's group is gone: close() has run and
 * every mark has been freed. The queue was flushed by close().
 *
 * Called from close() (the open file pins the module through fops.owner) or
 * from fsnotify's mark reaper, when a mark that outlived close() (held for a
 * moment by a racing unlink or umount) is freed. The group holds no module
 * reference: a module cannot drop its own last reference from its own code,
 * whose remaining instructions would run after rmmod may have freed it.
 * idev_exit() instead waits for the groups counter to reach 0, then flushes
 * the reaper, which returns only once this function has returned.
 */
static void idev_free_group_priv(struct fsnotify_group *group)
{
	struct idev_device *dev = group->private;

	WARN_ON_ONCE(!idr_is_empty(&dev->idr));
	idr_destroy(&dev->idr);
	idev_event_free(dev->overflow);
	put_pid(dev->excl_tgid);	/* INOTIFY_SET_FLAGS's reference, if any */
	idev_user_put(dev->user);
	kfree(dev);
	/* Last use of the module's data; fully ordered before the wake-up. */
	if (atomic_long_dec_and_test(&idev_stat_groups))
		wake_up_var(&idev_stat_groups);
}

const struct fsnotify_ops idev_fsnotify_ops = {
	.handle_inode_event = idev_handle_inode_event,
	.freeing_mark = idev_freeing_mark,
	.free_mark = idev_free_mark,
	.free_group_priv = idev_free_group_priv,
};
