// SPDX-License-Identifier: GPL-2.0
/*
 * inotify_dev_user.c - /dev/inotify, the user-facing half
 *
 * The 2005 character-device inotify (the 0.23-6 ABI of
 * uapi/inotify_dev.h) rebuilt on the fsnotify API that Linux 6.1 exports
 * to modules. Each open() of the misc device (10:63) is one instance: an
 * fsnotify group, a wd table and an event queue. INOTIFY_WATCH adds or
 * updates a watch on the inode behind an open fd, INOTIFY_IGNORE removes
 * one, read() returns whole struct inotify_event records, poll() and
 * FIONREAD say how much is pending.
 *
 * This file holds the fops, the ioctls, the limits (module parameters and
 * the same knobs in /sys/class/misc/inotify/), the node's mode (dev_mode),
 * the sysfs files of the module's own counters
 * (/sys/class/misc/inotify/stats/) and the instance's fdinfo (one line a
 * watch, as inotify's). The fsnotify callbacks are in inotify_dev_fsnotify.c,
 * with the records, the counters and the per-uid usage records that those
 * callbacks give back: this file calls down into it, never the reverse.
 * What 6.1 does not export (the group's event queue, fsnotify_destroy_group,
 * fsnotify_recalc_mask, ucounts) is replaced by the module's own queue,
 * teardown loop, superset mark masks and per-uid counts.
 *
 * Who may open the node: the inotify syscalls run the LSM hook
 * security_path_notify() before placing a watch, so that SELinux and AppArmor
 * can refuse to let a task watch an object; 6.1 does not export it to modules,
 * so INOTIFY_WATCH cannot run it and such rules would not apply here. The node
 * is therefore 0600 (root) by default: the watchd daemon, which runs as root
 * and decides for its callers, is its user. dev_mode=0666 (or a udev rule)
 * opens it to every user, as 2005's device was, for programs written from the
 * article; their watches then escape the LSM's notify rules, though not the
 * read permission check (see idev_add_watch).
 *
 * Lock order: dev->watch_mutex, then group->mark_mutex (inside fsnotify) or
 * a mark's own lock, then dev->idr_lock or dev->lock (never both at once).
 * No lock of ours is held across copy_to_user()/copy_from_user().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fsnotify_backend.h>
#include <linux/idr.h>
#include <linux/inotify.h>
#include <linux/ioctl.h>
#include <linux/memcontrol.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/poll.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>
#include <asm/ioctls.h>

#include "inotify_dev_priv.h"

/* The minor every 2005 client and udev rule expects; dynamic if taken. */
#define INOTIFY_DEV_MINOR	63

/*
 * Limits. 0.23-6 defaulted to 8192 events, 128 devices and 8192 watches;
 * a system daemon watching whole trees needs more watches, and 6.1's
 * inotify queues 16384 events by default, so those are the defaults here.
 * max_queued_events is copied into an instance at open(), as in 0.23.
 */
static unsigned int max_queued_events = 16384;
static unsigned int max_user_watches = 65536;
static unsigned int max_user_devices = 128;

/* The node's mode, at load time only (see the top of this file). */
static unsigned short dev_mode = 0600;

/* Every open instance, for the queued_events counter (summed on demand). */
static LIST_HEAD(idev_devices);
static DEFINE_SPINLOCK(idev_devices_lock);

/*
 * Creates a watch on @inode for @mask (events, and IN_ONESHOT and
 * IN_EXCL_UNLINK for a @syscall_abi watch) and returns its wd.
 *
 * The new mark's initial reference becomes the wd table's. Until
 * fsnotify_add_inode_mark() succeeds, nobody but us can reach the mark: the
 * table is only searched under watch_mutex (which we hold) or by close()
 * (which cannot run during an ioctl), and fsnotify does not know it yet.
 *
 * Locking: dev->watch_mutex held; takes idr_lock; may sleep.
 */
static int idev_new_watch(struct idev_device *dev, struct inode *inode, u32 mask,
			  bool syscall_abi)
{
	struct idev_mark *imark;
	int wd, ret;

	lockdep_assert_held(&dev->watch_mutex);

	if (atomic_inc_return(&dev->user->watches) > READ_ONCE(max_user_watches)) {
		ret = -ENOSPC;
		goto out_dec_watches;
	}

	imark = kzalloc(sizeof(*imark), GFP_KERNEL_ACCOUNT);
	if (!imark) {
		ret = -ENOMEM;
		goto out_dec_watches;
	}
	/* One reference (the table's), and one on the group until free_mark. */
	fsnotify_init_mark(&imark->fsn_mark, dev->group);
	imark->fsn_mark.mask = IDEV_MARK_MASK |
			       (S_ISDIR(inode->i_mode) ? FS_EVENT_ON_CHILD : 0);
	/* Not attached yet: no lock needed (fsnotify reads it locklessly). */
	if (mask & IN_EXCL_UNLINK)
		imark->fsn_mark.flags |= FSNOTIFY_MARK_FLAG_EXCL_UNLINK;
	imark->user_mask = mask;
	imark->syscall_abi = syscall_abi;
	imark->ino = inode->i_ino;
	imark->sdev = inode->i_sb->s_dev;
	imark->wd = -1;

	/*
	 * Cyclic, as 6.1, so that a stale record of a removed wd cannot alias
	 * a new watch; within [1, INOTIFY_WD_MAX], so that INOTIFY_IGNORE can
	 * never take a wd for a pointer (uapi/inotify_dev.h). -ENOSPC when all
	 * of them are in use.
	 */
	idr_preload(GFP_KERNEL);
	spin_lock(&dev->idr_lock);
	wd = idr_alloc_cyclic(&dev->idr, imark, 1, INOTIFY_WD_MAX + 1, GFP_NOWAIT);
	if (wd >= 0)
		imark->wd = wd;
	spin_unlock(&dev->idr_lock);
	idr_preload_end();
	if (wd < 0) {
		ret = wd;
		goto out_put_mark;
	}

	/* Preallocated so that a dying watch always has its IN_IGNORED. */
	imark->ignored = idev_event_alloc(wd, IN_IGNORED, 0, NULL, GFP_KERNEL_ACCOUNT);
	if (!imark->ignored) {
		ret = -ENOMEM;
		goto out_remove_wd;
	}

	/*
	 * Counted before it goes live: freeing_mark may run as soon as the
	 * mark is attached (a racing unlink or umount) and uncounts it.
	 */
	atomic_long_inc(&idev_stat_watches);
	/*
	 * Takes a reference for the group's mark list. Fails with -ENOENT if
	 * the inode's marks are being torn down (racing unlink or umount).
	 */
	ret = fsnotify_add_inode_mark(&imark->fsn_mark, inode, 0);
	if (ret)
		goto out_uncount;
	return wd;

out_uncount:
	atomic_long_dec(&idev_stat_watches);
out_remove_wd:
	spin_lock(&dev->idr_lock);
	idr_remove(&dev->idr, wd);
	imark->wd = -1;
	spin_unlock(&dev->idr_lock);
out_put_mark:
	/* Drop the table's reference: ends in idev_free_mark(). */
	fsnotify_put_mark(&imark->fsn_mark);
out_dec_watches:
	atomic_dec(&dev->user->watches);
	return ret;
}

/*
 * Changes the mask of an existing watch: replaces it, or with IN_MASK_ADD
 * adds to it (events and flags alike), as inotify_add_watch(2) does. The
 * mark hears everything; the new mask applies from the next event on.
 *
 * Locking: dev->watch_mutex held (the only writer of user_mask); takes the
 * mark's lock for its flags, as fsnotify does.
 */
static void idev_update_watch(struct idev_device *dev, struct idev_mark *imark,
			      u32 mask, bool syscall_abi)
{
	struct fsnotify_mark *fsn_mark = &imark->fsn_mark;

	lockdep_assert_held(&dev->watch_mutex);
	if (mask & IN_MASK_ADD)
		mask |= imark->user_mask;
	mask &= INOTIFY_DEV_EVENTS | IN_ONESHOT | IN_EXCL_UNLINK;

	spin_lock(&fsn_mark->lock);
	if (mask & IN_EXCL_UNLINK)
		fsn_mark->flags |= FSNOTIFY_MARK_FLAG_EXCL_UNLINK;
	else
		fsn_mark->flags &= ~FSNOTIFY_MARK_FLAG_EXCL_UNLINK;
	spin_unlock(&fsn_mark->lock);
	WRITE_ONCE(imark->syscall_abi, syscall_abi);
	WRITE_ONCE(imark->user_mask, mask);
}

/*
 * The mask of INOTIFY_WATCH (@syscall_abi false): the 0.23 events, unknown
 * bits ignored, EINVAL if none is left. Of INOTIFY_ADD_WATCH: as
 * inotify_add_watch(2) checks it (EINVAL for a bit it does not know, for
 * IN_MASK_ADD with IN_MASK_CREATE, for no event), with IN_ONLYDIR and
 * IN_DONT_FOLLOW checked against @inode (ENOTDIR, ELOOP). Returns the mask
 * to keep, or -errno.
 *
 * Locking: none (reads only the inode's mode, stable while the caller's
 * file reference holds it).
 */
static long idev_watch_mask(u32 mask, bool syscall_abi, struct inode *inode)
{
	if (!syscall_abi) {
		mask &= INOTIFY_DEV_ALL_EVENTS;
		if (!mask)
			return -EINVAL;
		return mask;
	}

	if (mask & ~(INOTIFY_DEV_ADD_WATCH_BITS | IN_UNMOUNT | IN_Q_OVERFLOW |
		     IN_IGNORED | IN_ISDIR))
		return -EINVAL;
	if ((mask & IN_MASK_ADD) && (mask & IN_MASK_CREATE))
		return -EINVAL;
	if (!(mask & INOTIFY_DEV_EVENTS))
		return -EINVAL;
	/* The caller made the lookup: a link itself only if it said so. */
	if (S_ISLNK(inode->i_mode) && !(mask & IN_DONT_FOLLOW))
		return -ELOOP;
	if ((mask & IN_ONLYDIR) && !S_ISDIR(inode->i_mode))
		return -ENOTDIR;
	return mask & INOTIFY_DEV_ADD_WATCH_BITS;
}

/*
 * INOTIFY_WATCH and INOTIFY_ADD_WATCH: watch the inode behind req.fd for
 * req.mask and return the wd. Watching an inode this instance already
 * watches changes the mask and returns the same wd (0.23, and the syscall
 * without IN_MASK_CREATE). INOTIFY_WATCH keeps to 0.23 (unknown mask bits
 * ignored; a mask with no 0.23 event is EINVAL); INOTIFY_ADD_WATCH
 * (@syscall_abi) reads the mask as inotify_add_watch(2) does
 * (idev_watch_mask()).
 *
 * The fd may be an O_PATH fd (fget_raw): then placing the watch opens
 * nothing, so the object's watchers see no IN_OPEN/IN_CLOSE_NOWRITE for it,
 * as with inotify_add_watch(2) on /proc/self/fd/N. An fd number that is not
 * open is EBADF.
 *
 * Permission: holding the fd (0.23), and read permission on the inode for
 * the caller's current credentials, checked here for every fd, as
 * inotify_add_watch(2) requires: a write-only fd cannot be used to see who
 * reads a file, and an O_PATH open checked no permission on the object at
 * all. The LSM hook that inotify_add_watch() also runs, security_path_notify,
 * is not exported to modules: hence the node's default mode (see the top).
 *
 * Locking: takes dev->watch_mutex; may sleep.
 */
static int idev_add_watch(struct idev_device *dev,
			  struct inotify_watch_request __user *ureq,
			  bool syscall_abi)
{
	struct inotify_watch_request req;
	struct fsnotify_mark *fsn_mark;
	struct inode *inode;
	struct file *filp;
	long mask;
	int ret, wd;

	if (copy_from_user(&req, ureq, sizeof(req)))
		return -EFAULT;

	/*
	 * Takes a file reference, dropped before we return: a watch pins
	 * nothing. Unlike fget(), also finds O_PATH files.
	 */
	filp = fget_raw(req.fd);
	if (!filp)
		return -EBADF;

	inode = file_inode(filp);
	mask = idev_watch_mask(req.mask, syscall_abi, inode);
	if (mask < 0) {
		ret = mask;
		goto out_fput;
	}

	/*
	 * For every fd, and the only check an O_PATH fd gets (its open asked
	 * for no access): current's fsuid/fsgid and capabilities, through the
	 * idmapping of the fd's mount.
	 */
	ret = inode_permission(file_mnt_user_ns(filp), inode, MAY_READ);
	if (ret)
		goto out_fput;

	mutex_lock(&dev->watch_mutex);
	/* Returns the mark with a reference, or NULL. */
	fsn_mark = fsnotify_find_mark(&inode->i_fsnotify_marks, dev->group);
	/*
	 * Found means attached when found, not now: watch_mutex does not hold
	 * off fsnotify's own destruction of a mark (an IN_ONESHOT watch's
	 * first event, the inode's last unlink, umount), which detaches it
	 * and then runs idev_freeing_mark(). A mark already out of the table
	 * (wd < 0) is dying, and no longer in the inode's way: a new watch
	 * takes its place, as inotify_add_watch(2) would give one. A mark
	 * still in it is the watch: its wd is read once, and if it dies just
	 * after, its IN_IGNORED follows, as for any watch that dies.
	 */
	wd = fsn_mark ? READ_ONCE(idev_mark(fsn_mark)->wd) : -1;
	if (wd >= 0) {
		if (mask & IN_MASK_CREATE) {
			ret = -EEXIST;
		} else {
			idev_update_watch(dev, idev_mark(fsn_mark), mask, syscall_abi);
			ret = wd;
		}
	} else {
		ret = idev_new_watch(dev, inode,
				     mask & (INOTIFY_DEV_EVENTS | IN_ONESHOT | IN_EXCL_UNLINK),
				     syscall_abi);
	}
	if (fsn_mark)
		fsnotify_put_mark(fsn_mark);	/* find's reference */
	mutex_unlock(&dev->watch_mutex);
out_fput:
	fput(filp);
	return ret;
}

/*
 * Reads the INOTIFY_IGNORE argument, by value or by pointer: see the rule in
 * uapi/inotify_dev.h. Exact for every wd, because idev_new_watch() hands out
 * none at or above INOTIFY_IGNORE_PTR_MIN. Returns 0 and the wd in @wd, or
 * -EFAULT.
 */
static int idev_ignore_arg(unsigned long arg, int *wd)
{
	BUILD_BUG_ON(INOTIFY_WD_MAX >= INOTIFY_IGNORE_PTR_MIN);

	if (arg < INOTIFY_IGNORE_PTR_MIN) {
		*wd = (int)arg;
		return 0;
	}
	return get_user(*wd, (int __user *)arg);
}

/*
 * INOTIFY_IGNORE: remove watch @wd. Its IN_IGNORED is queued by
 * idev_freeing_mark(). Unknown wd: EINVAL.
 *
 * Locking: takes dev->watch_mutex, then idr_lock; may sleep.
 */
static int idev_rm_watch(struct idev_device *dev, unsigned long arg)
{
	struct idev_mark *imark = NULL;
	int wd, ret;

	ret = idev_ignore_arg(arg, &wd);
	if (ret)
		return ret;

	mutex_lock(&dev->watch_mutex);
	spin_lock(&dev->idr_lock);
	if (wd > 0)
		imark = idr_find(&dev->idr, wd);
	/* Our reference for fsnotify_destroy_mark(); the table holds one. */
	if (imark)
		refcount_inc(&imark->fsn_mark.refcnt);
	spin_unlock(&dev->idr_lock);

	if (!imark) {
		ret = -EINVAL;
		goto out_unlock;
	}
	fsnotify_destroy_mark(&imark->fsn_mark, dev->group);
	fsnotify_put_mark(&imark->fsn_mark);	/* our reference */
	ret = 0;
out_unlock:
	mutex_unlock(&dev->watch_mutex);
	return ret;
}

/* INOTIFY_GET_INFO: what this module has, so that a program can tell. Locking: none. */
static int idev_get_info(struct inotify_dev_info __user *uinfo)
{
	const struct inotify_dev_info info = {
		.version = INOTIFY_DEV_VERSION,
		.mask = INOTIFY_DEV_ADD_WATCH_BITS,
		.flags = INOTIFY_DEV_FLAGS,
		.wd_max = INOTIFY_WD_MAX,
	};

	return copy_to_user(uinfo, &info, sizeof(info)) ? -EFAULT : 0;
}

/*
 * INOTIFY_SET_FLAGS: the instance's flags. INOTIFY_DEV_EXCL_SELF names the
 * caller's thread group, whose events are left out from now on (one pid
 * reference, held until the flags change or the group is freed); without
 * it nobody's are. Unknown flags: EINVAL.
 *
 * Locking: takes dev->watch_mutex (the writers' lock of excl_tgid); may
 * sleep.
 */
static int idev_set_flags(struct idev_device *dev, u32 __user *uflags)
{
	struct pid *excl = NULL, *old;
	u32 flags;

	if (get_user(flags, uflags))
		return -EFAULT;
	if (flags & ~INOTIFY_DEV_FLAGS)
		return -EINVAL;
	if (flags & INOTIFY_DEV_EXCL_SELF)
		excl = get_pid(task_tgid(current));

	mutex_lock(&dev->watch_mutex);
	old = dev->excl_tgid;
	WRITE_ONCE(dev->excl_tgid, excl);
	mutex_unlock(&dev->watch_mutex);
	/* A handler that read it still compares only (idev_excluded()). */
	put_pid(old);
	return 0;
}

static long idev_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct idev_device *dev = file->private_data;
	size_t pending;

	switch (cmd) {
	case INOTIFY_WATCH:
		return idev_add_watch(dev, (void __user *)arg, false);
	case INOTIFY_ADD_WATCH:
		return idev_add_watch(dev, (void __user *)arg, true);
	case INOTIFY_IGNORE:
		return idev_rm_watch(dev, arg);
	case INOTIFY_GET_INFO:
		return idev_get_info((void __user *)arg);
	case INOTIFY_SET_FLAGS:
		return idev_set_flags(dev, (void __user *)arg);
	case FIONREAD:
		spin_lock(&dev->lock);
		pending = dev->q_bytes;
		spin_unlock(&dev->lock);
		/* An int, as 0.23 and inotify(7) have it. */
		return put_user((int)min_t(size_t, pending, INT_MAX), (int __user *)arg);
	default:
		return -ENOTTY;
	}
}

/*
 * Takes off the queue the oldest records that fit together in @space bytes,
 * onto @batch, or the overflow record alone (@overflow set: it is never on
 * @batch, because the handler tests whether it is queued with list_empty()).
 * Returns 0, or -EINVAL if a record is queued but the first does not fit.
 *
 * Locking: takes dev->lock.
 */
static int idev_take_batch(struct idev_device *dev, size_t space,
			   struct list_head *batch, bool *overflow)
{
	struct idev_event *ev, *last = NULL;
	size_t size, bytes = 0;
	unsigned int n = 0;
	int ret = 0;

	*overflow = false;
	spin_lock(&dev->lock);
	list_for_each_entry(ev, &dev->events, list) {
		size = idev_event_size(ev);
		if (size > space - bytes)
			break;
		if (ev == dev->overflow) {
			if (!n) {
				list_del_init(&ev->list);
				*overflow = true;
				n = 1;
				bytes = size;
			}
			break;
		}
		last = ev;
		n++;
		bytes += size;
	}
	if (last)
		list_cut_position(batch, &dev->events, &last->list);
	else if (!n && !list_empty(&dev->events))
		ret = -EINVAL;
	dev->q_len -= n;
	dev->q_bytes -= bytes;
	spin_unlock(&dev->lock);

	return ret;
}

/*
 * Copies the records of @batch to @buf, one copy_to_user() each (they are
 * stored in read() form), and frees them. Returns the bytes copied, or
 * -EFAULT if the first copy faults. On a fault the records not copied go
 * back to the head of the queue, in order: nothing is lost.
 *
 * Locking: takes dev->lock only on a fault.
 */
static ssize_t idev_copy_batch(struct idev_device *dev, char __user *buf,
			       struct list_head *batch)
{
	struct idev_event *ev, *next;
	size_t size, bytes = 0, left = 0;
	unsigned int n = 0;

	list_for_each_entry_safe(ev, next, batch, list) {
		size = idev_event_size(ev);
		if (copy_to_user(buf + bytes, &ev->rec, size))
			break;
		bytes += size;
		list_del(&ev->list);
		idev_event_free(ev);
	}
	if (list_empty(batch))
		return bytes;

	list_for_each_entry(ev, batch, list) {
		left += idev_event_size(ev);
		n++;
	}
	spin_lock(&dev->lock);
	list_splice(batch, &dev->events);
	dev->q_len += n;
	dev->q_bytes += left;
	spin_unlock(&dev->lock);
	return bytes ? bytes : -EFAULT;
}

/* Puts back the overflow record read() could not copy out: loss stays reported. */
static void idev_requeue_overflow(struct idev_device *dev)
{
	spin_lock(&dev->lock);
	if (list_empty(&dev->overflow->list)) {
		list_add(&dev->overflow->list, &dev->events);
		dev->q_len++;
		dev->q_bytes += idev_event_size(dev->overflow);
	}
	spin_unlock(&dev->lock);
}

/*
 * read(): whole records only, as many as fit. Blocks until one is queued
 * (EAGAIN with O_NONBLOCK; EINTR, as in 0.23, when a signal arrives);
 * EINVAL if the buffer cannot hold the first record; EFAULT if nothing
 * could be copied (the records stay queued).
 */
static ssize_t idev_read(struct file *file, char __user *buf, size_t count,
			 loff_t *pos)
{
	struct idev_device *dev = file->private_data;
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	size_t copied = 0;
	ssize_t ret = 0;
	bool overflow;

	add_wait_queue(&dev->wq, &wait);
	for (;;) {
		LIST_HEAD(batch);

		ret = idev_take_batch(dev, count - copied, &batch, &overflow);
		if (ret)
			break;
		if (overflow) {
			/* Immutable: safe to copy though it may be queued again. */
			ret = sizeof(dev->overflow->rec);
			if (copy_to_user(buf + copied, &dev->overflow->rec, ret)) {
				idev_requeue_overflow(dev);
				ret = -EFAULT;
			}
		} else if (!list_empty(&batch)) {
			ret = idev_copy_batch(dev, buf + copied, &batch);
		} else {
			if (copied)
				break;
			ret = -EAGAIN;
			if (file->f_flags & O_NONBLOCK)
				break;
			ret = -EINTR;
			if (signal_pending(current))
				break;
			wait_woken(&wait, TASK_INTERRUPTIBLE, MAX_SCHEDULE_TIMEOUT);
			continue;
		}
		if (ret < 0)
			break;
		copied += ret;
	}
	remove_wait_queue(&dev->wq, &wait);

	return copied ? copied : ret;
}

static __poll_t idev_poll(struct file *file, poll_table *wait)
{
	struct idev_device *dev = file->private_data;
	__poll_t ret = 0;

	poll_wait(file, &dev->wq, wait);
	spin_lock(&dev->lock);
	if (!list_empty(&dev->events))
		ret = EPOLLIN | EPOLLRDNORM;
	spin_unlock(&dev->lock);
	return ret;
}

/*
 * /proc/PID/fdinfo/FD: a line a watch, in the form of inotify's own
 * ("inotify wd:%x ino:%lx sdev:%x mask:%x ignored_mask:0"), the mask with
 * IN_ONESHOT and IN_EXCL_UNLINK when the watch has them. No file handle:
 * the exportfs helpers inotify uses for it are not for modules to call.
 *
 * Locking: takes idr_lock (seq_printf() only fills the seq_file's buffer).
 */
static void idev_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct idev_device *dev = file->private_data;
	struct idev_mark *imark;
	int wd;

	spin_lock(&dev->idr_lock);
	idr_for_each_entry(&dev->idr, imark, wd)
		seq_printf(m, "inotify wd:%x ino:%lx sdev:%x mask:%x ignored_mask:0\n",
			   wd, imark->ino, imark->sdev, READ_ONCE(imark->user_mask));
	spin_unlock(&dev->idr_lock);
}

static int idev_fasync(int fd, struct file *file, int on)
{
	struct idev_device *dev = file->private_data;

	return fasync_helper(fd, file, on, &dev->fa) >= 0 ? 0 : -EIO;
}

/*
 * open(): a new instance. EMFILE past max_user_devices instances of this
 * uid (real uid, as in 0.23; root included).
 */
static int idev_open(struct inode *inode, struct file *file)
{
	struct fsnotify_group *group;
	struct idev_device *dev;
	struct idev_user *user;
	int ret;

	/* A reference on the uid's counts, handed to dev below. */
	user = idev_user_get(current_uid());
	if (!user)
		return -ENOMEM;
	if (atomic_inc_return(&user->devices) > READ_ONCE(max_user_devices)) {
		ret = -EMFILE;
		goto out_dec_devices;
	}

	ret = -ENOMEM;
	dev = kzalloc(sizeof(*dev), GFP_KERNEL_ACCOUNT);
	if (!dev)
		goto out_dec_devices;
	dev->overflow = idev_event_alloc(-1, IN_Q_OVERFLOW, 0, NULL, GFP_KERNEL_ACCOUNT);
	if (!dev->overflow)
		goto out_free_dev;
	spin_lock_init(&dev->lock);
	INIT_LIST_HEAD(&dev->events);
	dev->max_events = READ_ONCE(max_queued_events);
	init_waitqueue_head(&dev->wq);
	mutex_init(&dev->watch_mutex);
	spin_lock_init(&dev->idr_lock);
	idr_init(&dev->idr);
	dev->user = user;

	/* One reference, ours until release(); each mark takes another. */
	group = fsnotify_alloc_group(&idev_fsnotify_ops, FSNOTIFY_GROUP_USER);
	if (IS_ERR(group)) {
		ret = PTR_ERR(group);
		goto out_free_overflow;
	}
	/* A memcg reference, put by fsnotify when the group is freed. */
	group->memcg = get_mem_cgroup_from_mm(current->mm);
	group->private = dev;
	dev->group = group;

	/*
	 * From here the group owns dev and the uid reference;
	 * idev_free_group_priv() gives them back and uncounts the group,
	 * which idev_exit() waits for.
	 */
	atomic_long_inc(&idev_stat_groups);
	atomic_long_inc(&idev_stat_instances);
	spin_lock(&idev_devices_lock);
	list_add(&dev->node, &idev_devices);
	spin_unlock(&idev_devices_lock);
	file->private_data = dev;
	return nonseekable_open(inode, file);

out_free_overflow:
	idev_event_free(dev->overflow);
out_free_dev:
	kfree(dev);
out_dec_devices:
	atomic_dec(&user->devices);
	idev_user_put(user);
	return ret;
}

/*
 * Destroys every watch of @dev. Marks may be dying concurrently (the inode's
 * last link or its filesystem going away): fsnotify_destroy_mark() on a
 * mark already being freed returns at once, and the other party's
 * freeing_mark takes it out of the table, so the loop ends.
 *
 * Locking: takes idr_lock; may sleep. Only close() calls it: no ioctl runs.
 */
static void idev_destroy_all_watches(struct idev_device *dev)
{
	struct idev_mark *imark;
	int wd;

	for (;;) {
		wd = 0;
		spin_lock(&dev->idr_lock);
		imark = idr_get_next(&dev->idr, &wd);
		/* Our reference for fsnotify_destroy_mark(); the table holds one. */
		if (imark)
			refcount_inc(&imark->fsn_mark.refcnt);
		spin_unlock(&dev->idr_lock);
		if (!imark)
			break;
		fsnotify_destroy_mark(&imark->fsn_mark, dev->group);
		fsnotify_put_mark(&imark->fsn_mark);	/* our reference */
		cond_resched();
	}
}

/*
 * close(): what fsnotify_destroy_group() would do, from exported parts.
 * No IN_IGNORED is queued (0.23 sent none on close), queued records are
 * freed, and the group reference from open() is dropped; the group and dev
 * go when the last mark has been reaped.
 */
static int idev_release(struct inode *inode, struct file *file)
{
	struct idev_device *dev = file->private_data;
	struct idev_event *ev, *next;
	LIST_HEAD(flushed);

	spin_lock(&dev->lock);
	dev->shutdown = true;
	spin_unlock(&dev->lock);
	spin_lock(&idev_devices_lock);
	list_del(&dev->node);
	spin_unlock(&idev_devices_lock);

	idev_destroy_all_watches(dev);
	/* Let fsnotify's reaper free the marks (they are ours: free_mark). */
	fsnotify_wait_marks_destroyed();

	spin_lock(&dev->lock);
	list_splice_init(&dev->events, &flushed);
	dev->q_len = 0;
	dev->q_bytes = 0;
	spin_unlock(&dev->lock);
	list_for_each_entry_safe(ev, next, &flushed, list) {
		list_del_init(&ev->list);
		if (ev != dev->overflow)
			idev_event_free(ev);
	}

	atomic_dec(&dev->user->devices);
	atomic_long_dec(&idev_stat_instances);
	fsnotify_put_group(dev->group);	/* open()'s reference; may free dev */
	return 0;
}

static const struct file_operations idev_fops = {
	.owner = THIS_MODULE,
	.open = idev_open,
	.release = idev_release,
	.read = idev_read,
	.poll = idev_poll,
	.fasync = idev_fasync,
	.show_fdinfo = idev_show_fdinfo,
	.unlocked_ioctl = idev_ioctl,
	/* Same layout for 32-bit callers: both arguments are pointers or small ints. */
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

/* Limits: one setter for the module parameters and the sysfs files. */
static int idev_set_limit(unsigned int *limit, const char *val)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (n == 0 || n > INT_MAX)
		return -EINVAL;
	WRITE_ONCE(*limit, n);
	return 0;
}

static int idev_param_set(const char *val, const struct kernel_param *kp)
{
	return idev_set_limit(kp->arg, val);
}

static const struct kernel_param_ops idev_limit_ops = {
	.set = idev_param_set,
	.get = param_get_uint,
};

module_param_cb(max_queued_events, &idev_limit_ops, &max_queued_events, 0644);
MODULE_PARM_DESC(max_queued_events,
		 "Records an instance may queue before IN_Q_OVERFLOW; read at open() (default 16384)");
module_param_cb(max_user_watches, &idev_limit_ops, &max_user_watches, 0644);
MODULE_PARM_DESC(max_user_watches, "Watches per uid over all instances (default 65536)");
module_param_cb(max_user_devices, &idev_limit_ops, &max_user_devices, 0644);
MODULE_PARM_DESC(max_user_devices, "Open instances per uid (default 128)");

/* dev_mode: octal, read and write bits only (no execute, setuid or sticky bit). */
static int idev_dev_mode_set(const char *val, const struct kernel_param *kp)
{
	u16 mode;
	int ret;

	ret = kstrtou16(val, 8, &mode);
	if (ret)
		return ret;
	if (mode & ~0666)
		return -EINVAL;
	*(unsigned short *)kp->arg = mode;
	return 0;
}

static int idev_dev_mode_get(char *buffer, const struct kernel_param *kp)
{
	return scnprintf(buffer, PAGE_SIZE, "%04o\n", *(unsigned short *)kp->arg);
}

static const struct kernel_param_ops idev_dev_mode_ops = {
	.set = idev_dev_mode_set,
	.get = idev_dev_mode_get,
};

module_param_cb(dev_mode, &idev_dev_mode_ops, &dev_mode, 0444);
MODULE_PARM_DESC(dev_mode,
		 "Mode of /dev/inotify, octal, read/write bits only (default 0600: root only, "
		 "because the LSM hook security_path_notify is not run; 0666 opens it to every user)");

#define IDEV_LIMIT_ATTR(name)						\
static ssize_t name##_show(struct device *d, struct device_attribute *a, \
			   char *buf)					\
{									\
	return sysfs_emit(buf, "%u\n", READ_ONCE(name));		\
}									\
static ssize_t name##_store(struct device *d, struct device_attribute *a, \
			    const char *buf, size_t count)		\
{									\
	int ret = idev_set_limit(&name, buf);				\
	return ret ? ret : count;					\
}									\
static DEVICE_ATTR_RW(name)

IDEV_LIMIT_ATTR(max_queued_events);
IDEV_LIMIT_ATTR(max_user_watches);
IDEV_LIMIT_ATTR(max_user_devices);

static struct attribute *idev_limit_attrs[] = {
	&dev_attr_max_queued_events.attr,
	&dev_attr_max_user_watches.attr,
	&dev_attr_max_user_devices.attr,
	NULL,
};

static const struct attribute_group idev_limit_group = {
	.attrs = idev_limit_attrs,
};

#define IDEV_STAT_ATTR(name, counter)					\
static ssize_t name##_show(struct device *d, struct device_attribute *a, \
			   char *buf)					\
{									\
	return sysfs_emit(buf, "%ld\n", atomic_long_read(&counter));	\
}									\
static DEVICE_ATTR_RO(name)

IDEV_STAT_ATTR(instances, idev_stat_instances);
IDEV_STAT_ATTR(watches, idev_stat_watches);

/* Summed here rather than counted in the event hot path. */
static ssize_t queued_events_show(struct device *d, struct device_attribute *a,
				  char *buf)
{
	struct idev_device *dev;
	unsigned long n = 0;

	spin_lock(&idev_devices_lock);
	list_for_each_entry(dev, &idev_devices, node)
		n += READ_ONCE(dev->q_len);
	spin_unlock(&idev_devices_lock);
	return sysfs_emit(buf, "%lu\n", n);
}
static DEVICE_ATTR_RO(queued_events);
IDEV_STAT_ATTR(groups, idev_stat_groups);

static struct attribute *idev_stat_attrs[] = {
	&dev_attr_instances.attr,
	&dev_attr_watches.attr,
	&dev_attr_queued_events.attr,
	&dev_attr_groups.attr,
	NULL,
};

static const struct attribute_group idev_stat_group = {
	.name = "stats",
	.attrs = idev_stat_attrs,
};

static const struct attribute_group *idev_groups[] = {
	&idev_limit_group,
	&idev_stat_group,
	NULL,
};

static struct miscdevice idev_miscdev = {
	.minor = INOTIFY_DEV_MINOR,
	.name = "inotify",
	.fops = &idev_fops,
	.groups = idev_groups,
	/* .mode is set from dev_mode at load. */
};

static int __init idev_init(void)
{
	int ret;

	idev_miscdev.mode = dev_mode;
	ret = misc_register(&idev_miscdev);
	if (ret == -EBUSY) {
		pr_info("misc minor %d is taken, using a dynamic minor\n",
			INOTIFY_DEV_MINOR);
		idev_miscdev.minor = MISC_DYNAMIC_MINOR;
		ret = misc_register(&idev_miscdev);
	}
	if (ret)
		return ret;
	/* The line 2005's instructions grep for ("dmesg | grep ^inotify"). */
	pr_info("inotify device minor=%d\n", idev_miscdev.minor);
	return 0;
}

/*
 * No instance is open here: each pins the module through fops.owner, the
 * only module reference there is (the VFS takes and drops it). But a group
 * lives until its last mark is freed, and a mark may outlive close() for a
 * moment (held by a racing unlink or umount), to be freed later by
 * fsnotify's mark reaper, which then calls idev_free_mark() and
 * idev_free_group_priv(). So wait until every group is gone, then flush the
 * reaper, so that the work that freed the last one has also returned from
 * our code, as nfsd's file cache does at shutdown. The wait is short: the
 * unlink or umount that holds such a mark is already tearing it down.
 */
static void __exit idev_exit(void)
{
	misc_deregister(&idev_miscdev);
	wait_var_event(&idev_stat_groups, !atomic_long_read(&idev_stat_groups));
	fsnotify_wait_marks_destroyed();
}

module_init(idev_init);
module_exit(idev_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("/dev/inotify: the 2005 character-device inotify ABI (0.23-6) on fsnotify");
MODULE_VERSION("0.1.0");
MODULE_ALIAS_MISCDEV(INOTIFY_DEV_MINOR);
MODULE_ALIAS("devname:inotify");
