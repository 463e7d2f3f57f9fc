// SPDX-License-Identifier: GPL-2.0
/*
 * inotify_dev_ioctl.c - the ioctls of /dev/inotify
 *
 * INOTIFY_WATCH and INOTIFY_ADD_WATCH add a watch on the inode behind an
 * open fd or change the mask of the one there is, INOTIFY_IGNORE removes
 * one, INOTIFY_GET_INFO says what this module has, INOTIFY_SET_FLAGS sets
 * the instance's flags, FIONREAD says how many bytes read() would return.
 * The watches are fsnotify inode marks in the instance's wd table
 * (dev->idr); each dies through fsnotify, whose freeing_mark callback
 * (inotify_dev_fsnotify.c) takes it out of the table and queues its
 * IN_IGNORED.
 *
 * idev_ioctl() is the instance's unlocked_ioctl, in the fops of
 * inotify_dev_user.c; max_user_watches, the limit the watches are counted
 * against, is defined here and set by that file's module parameter and
 * sysfs file. This file calls down into inotify_dev_fsnotify.c (records,
 * counters) and uses no name defined in inotify_dev_user.c (see
 * inotify_dev_priv.h, with the lock order).
 *
 * Permission to place a watch is read permission on the inode; the LSM hook
 * of the inotify syscalls is not exported (see the top of
 * inotify_dev_user.c, and idev_add_watch()).
 */
#include <linux/atomic.h>
#include <linux/build_bug.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fsnotify_backend.h>
#include <linux/idr.h>
#include <linux/inotify.h>
#include <linux/ioctl.h>
#include <linux/minmax.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <asm/ioctls.h>

#include "inotify_dev_priv.h"

/*
 * Watches per uid over all instances (see the limits in
 * inotify_dev_user.c, which sets it).
 */
unsigned int max_user_watches = 65536;

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
 * is not exported to modules: hence the node's default mode (see the top of
 * inotify_dev_user.c).
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

/* The instance's unlocked_ioctl (and, through compat_ptr_ioctl, compat_ioctl). */
long idev_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
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
