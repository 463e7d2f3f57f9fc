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
 * This file holds the fops (open, release, read, poll, fasync), the limits
 * (module parameters and the same knobs in /sys/class/misc/inotify/), the
 * node's mode (dev_mode), the sysfs files of the module's own counters
 * (/sys/class/misc/inotify/stats/), the instance's fdinfo (one line a
 * watch, as inotify's) and the module's init and exit. The ioctls (the
 * watches, INOTIFY_GET_INFO, INOTIFY_SET_FLAGS, FIONREAD) are in
 * inotify_dev_ioctl.c, idev_ioctl() for the fops. The fsnotify callbacks are
 * in inotify_dev_fsnotify.c, with the records, the counters and the per-uid
 * usage records that those callbacks give back. This file calls down into
 * both, never the reverse.
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
 * read permission check (see idev_add_watch() in inotify_dev_ioctl.c).
 *
 * The lock order is in inotify_dev_priv.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/fsnotify_backend.h>
#include <linux/idr.h>
#include <linux/inotify.h>
#include <linux/memcontrol.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>

#include "inotify_dev_priv.h"

/* The minor every 2005 client and udev rule expects; dynamic if taken. */
#define INOTIFY_DEV_MINOR	63

/*
 * Limits. 0.23-6 defaulted to 8192 events, 128 devices and 8192 watches;
 * a system daemon watching whole trees needs more watches, and 6.1's
 * inotify queues 16384 events by default, so those are the defaults here.
 * max_queued_events is copied into an instance at open(), as in 0.23.
 * max_user_watches is defined in inotify_dev_ioctl.c, which counts the
 * watches against it; it is set here, as the others are.
 */
static unsigned int max_queued_events = 16384;
static unsigned int max_user_devices = 128;

/* The node's mode, at load time only (see the top of this file). */
static unsigned short dev_mode = 0600;

/* Every open instance, for the queued_events counter (summed on demand). */
static LIST_HEAD(idev_devices);
static DEFINE_SPINLOCK(idev_devices_lock);

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
