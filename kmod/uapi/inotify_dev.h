/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * inotify_dev.h - the /dev/inotify character-device ABI (inotify 0.23-6, 2005)
 *
 * Shared by the kernel module (kmod/), the watchd daemon and the tests. The
 * values are those of the last /dev/inotify release, so that a client written
 * from the 2005 article compiles and works unchanged.
 *
 * The header may be included after <sys/inotify.h> or <linux/inotify.h>: the
 * event record and the event bits have the same layout and values there, so
 * whatever is already defined is kept and only what is missing is added.
 *
 * Beyond 0.23-6 (ABI version 2, INOTIFY_GET_INFO says which a module has;
 * a 2005 module answers ENOTTY): INOTIFY_ADD_WATCH takes the mask of the
 * merged syscalls, inotify_add_watch(2), with the bits inotify gained after
 * 2005 (IN_MOVE_SELF, IN_ONESHOT, IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK,
 * IN_MASK_ADD, IN_MASK_CREATE) and its errors; INOTIFY_SET_FLAGS lets the
 * caller leave out of the instance the events its own thread group causes.
 * INOTIFY_WATCH is unchanged: the 0.23 events, unknown bits dropped. Nothing
 * changes for a program that does not ask.
 *
 * INOTIFY_IGNORE argument: the 2005 kernel read the watch descriptor through a
 * pointer (ioctl(fd, INOTIFY_IGNORE, &wd)), while the article wrote it by value
 * (ioctl(fd, INOTIFY_IGNORE, wd)). Both work, and no wd is ever misread:
 *   - every wd the module hands out lies in [1, INOTIFY_WD_MAX], 65535: wds
 *     are allocated cyclically within that range, and an instance that holds
 *     INOTIFY_WD_MAX watches already gets ENOSPC for a new one (a program that
 *     needs more watches opens a second instance);
 *   - so an argument below INOTIFY_IGNORE_PTR_MIN (64 KiB) is the wd itself,
 *     and any other argument is a pointer to an int holding the wd (EFAULT if
 *     it cannot be read).
 * The only pointers taken for a wd are those below 64 KiB, where no user
 * memory lies unless a process privileged to do so (CAP_SYS_RAWIO) maps it
 * there on purpose: vm.mmap_min_addr is 65536 on Debian.
 */
#ifndef _UAPI_INOTIFY_DEV_H
#define _UAPI_INOTIFY_DEV_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <linux/types.h>
#include <sys/ioctl.h>
#endif

/* The record read() returns: 16 bytes, then len bytes of NUL-padded name. */
#if !defined(_SYS_INOTIFY_H) && !defined(_LINUX_INOTIFY_H) && !defined(_UAPI_LINUX_INOTIFY_H)
struct inotify_event {
	__s32 wd;	/* watch descriptor, -1 for IN_Q_OVERFLOW */
	__u32 mask;	/* IN_* bits of this event */
	__u32 cookie;	/* ties IN_MOVED_FROM to its IN_MOVED_TO, else 0 */
	__u32 len;	/* bytes of name[], a multiple of 16, 0 if no name */
	char name[];	/* child's name, NUL-terminated and NUL-padded */
};
#endif

/*
 * The INOTIFY_WATCH argument: an open fd of the object and the events wanted.
 * Any fd of the object will do, O_PATH included (then nothing is opened to
 * place the watch); the caller needs read permission on the object (EACCES).
 * Older builds of the module (fget() rather than fget_raw()) refuse an O_PATH
 * fd with EBADF: a caller may fall back to an fd open for reading.
 */
struct inotify_watch_request {
	int fd;
	__u32 mask;
};

#ifndef __KERNEL__
/* The 2005 article's spelling of the same struct. */
#define inotify_request inotify_watch_request
#endif

/* What INOTIFY_GET_INFO fills in (16 bytes). */
struct inotify_dev_info {
	__u32 version;		/* INOTIFY_DEV_VERSION */
	__u32 mask;		/* every bit INOTIFY_ADD_WATCH acts on: INOTIFY_DEV_ADD_WATCH_BITS */
	__u32 flags;		/* every flag INOTIFY_SET_FLAGS takes: INOTIFY_DEV_FLAGS */
	__u32 wd_max;		/* the largest wd handed out: INOTIFY_WD_MAX */
};

#define INOTIFY_IOCTL_MAGIC	'Q'
#define INOTIFY_IOCTL_MAXNR	5	/* 0.23-6 had 2 */
/* _IOR although the kernel reads the argument: kept as 2005 numbered them. */
#define INOTIFY_WATCH		_IOR(INOTIFY_IOCTL_MAGIC, 1, struct inotify_watch_request) /* 0x80085101 */
#define INOTIFY_IGNORE		_IOR(INOTIFY_IOCTL_MAGIC, 2, int)                          /* 0x80045102 */
/*
 * ABI version 2. INOTIFY_ADD_WATCH: as INOTIFY_WATCH, with req.mask read as
 * inotify_add_watch(2) reads its mask (see "Beyond 0.23-6" below); returns
 * the wd. INOTIFY_GET_INFO: fills in a struct inotify_dev_info.
 * INOTIFY_SET_FLAGS: sets the instance's flags (INOTIFY_DEV_FLAGS) to the
 * __u32 the argument points to.
 */
#define INOTIFY_ADD_WATCH	_IOW(INOTIFY_IOCTL_MAGIC, 3, struct inotify_watch_request) /* 0x40085103 */
#define INOTIFY_GET_INFO	_IOR(INOTIFY_IOCTL_MAGIC, 4, struct inotify_dev_info)       /* 0x80105104 */
#define INOTIFY_SET_FLAGS	_IOW(INOTIFY_IOCTL_MAGIC, 5, __u32)                         /* 0x40045105 */

/* 1: the 0.23-6 ABI alone (no INOTIFY_GET_INFO: ENOTTY). 2: this header. */
#define INOTIFY_DEV_VERSION	2

/* Below this an INOTIFY_IGNORE argument is a wd by value (see above). */
#define INOTIFY_IGNORE_PTR_MIN	0x10000UL
/* The largest wd the module hands out, and the most watches of one instance. */
#define INOTIFY_WD_MAX		0xffff

/* Events a watch may ask for. */
#ifndef IN_ACCESS
#define IN_ACCESS		0x00000001	/* file was read */
#define IN_MODIFY		0x00000002	/* file was written */
#define IN_ATTRIB		0x00000004	/* metadata changed */
#define IN_CLOSE_WRITE		0x00000008	/* writable file closed */
#define IN_CLOSE_NOWRITE	0x00000010	/* unwritable file closed */
#define IN_OPEN			0x00000020	/* file was opened */
#define IN_MOVED_FROM		0x00000040	/* file moved out of the directory */
#define IN_MOVED_TO		0x00000080	/* file moved into the directory */
#define IN_CREATE		0x00000100	/* entry created in the directory */
#define IN_DELETE		0x00000200	/* entry deleted from the directory */
#define IN_DELETE_SELF		0x00000400	/* the watched object was deleted */
/* Sent as needed to any watch, whatever its mask. */
#define IN_UNMOUNT		0x00002000	/* its filesystem was unmounted */
#define IN_Q_OVERFLOW		0x00004000	/* the event queue overflowed */
#define IN_IGNORED		0x00008000	/* the watch was removed */
#define IN_CLOSE		(IN_CLOSE_WRITE | IN_CLOSE_NOWRITE)
#define IN_MOVE			(IN_MOVED_FROM | IN_MOVED_TO)
#define IN_ISDIR		0x40000000	/* the subject is a directory */
#define IN_ONESHOT		0x80000000	/* INOTIFY_ADD_WATCH only (0.23-6 ignored it) */
#endif

/* The eleven events of 0.23-6 (the merged syscalls' IN_ALL_EVENTS is 0xfff). */
#define INOTIFY_DEV_ALL_EVENTS	0x000007ffU
#ifndef IN_ALL_EVENTS
#define IN_ALL_EVENTS		INOTIFY_DEV_ALL_EVENTS
#endif

/*
 * Beyond 0.23-6: the bits inotify gained after 2005, with the merged
 * syscalls' values, for INOTIFY_ADD_WATCH only (INOTIFY_WATCH drops them,
 * as 0.23 did). Each does what it does for inotify_add_watch(2):
 *   IN_MOVE_SELF	the watched object was renamed (no IN_ISDIR, no name)
 *   IN_ONESHOT		the watch ends (IN_IGNORED) after its first record
 *   IN_ONLYDIR		ENOTDIR unless req.fd is a directory
 *   IN_DONT_FOLLOW	req.fd may be a symbolic link itself (O_PATH|O_NOFOLLOW);
 *			without it such an fd is ELOOP, as the syscall follows
 *   IN_EXCL_UNLINK	no events of a child once it is unlinked
 *   IN_MASK_ADD	add to the watch's mask and flags instead of replacing them
 *   IN_MASK_CREATE	EEXIST if the object is watched already (EINVAL with IN_MASK_ADD)
 */
#ifndef IN_MOVE_SELF
#define IN_MOVE_SELF		0x00000800
#endif
#ifndef IN_ONLYDIR
#define IN_ONLYDIR		0x01000000
#endif
#ifndef IN_DONT_FOLLOW
#define IN_DONT_FOLLOW		0x02000000
#endif
#ifndef IN_EXCL_UNLINK
#define IN_EXCL_UNLINK		0x04000000
#endif
#ifndef IN_MASK_CREATE
#define IN_MASK_CREATE		0x10000000
#endif
#ifndef IN_MASK_ADD
#define IN_MASK_ADD		0x20000000
#endif

/* The events INOTIFY_ADD_WATCH takes: the eleven and IN_MOVE_SELF. */
#define INOTIFY_DEV_EVENTS	0x00000fffU
/* Its flags. */
#define INOTIFY_DEV_WATCH_FLAGS \
	(IN_ONESHOT | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_MASK_ADD | IN_MASK_CREATE)
/* Every bit it acts on (0xb7000fff); INOTIFY_GET_INFO's mask. Like the
 * syscall it also accepts, and ignores, IN_UNMOUNT, IN_Q_OVERFLOW,
 * IN_IGNORED and IN_ISDIR; any other bit is EINVAL, and so is a mask
 * without an event. */
#define INOTIFY_DEV_ADD_WATCH_BITS	(INOTIFY_DEV_EVENTS | INOTIFY_DEV_WATCH_FLAGS)

/*
 * INOTIFY_SET_FLAGS. INOTIFY_DEV_EXCL_SELF: events caused by the caller's
 * thread group (the process that sets the flag, all its threads) are left
 * out of this instance: nothing is queued for them, not even an
 * IN_ONESHOT watch's end. IN_UNMOUNT and IN_IGNORED always come. Off for
 * every new instance; setting the flags again moves it to the new caller,
 * 0 turns it off.
 */
#define INOTIFY_DEV_EXCL_SELF	0x00000001U
#define INOTIFY_DEV_FLAGS	INOTIFY_DEV_EXCL_SELF

/* Every bit a record read from the device may carry (IN_MOVE_SELF only
 * for a watch that asked for it with INOTIFY_ADD_WATCH). */
#define INOTIFY_DEV_REPORTED_BITS \
	(INOTIFY_DEV_ALL_EVENTS | IN_MOVE_SELF | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED | IN_ISDIR)

#endif /* _UAPI_INOTIFY_DEV_H */
