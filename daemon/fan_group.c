/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fan_group - watchd's side of fan_helper.h
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "fan_group.h"
#include "fan_helper.h"
#include "macro.h"

struct FanGroup {
        int sock;
        int fd; /* the group */
};

/* Sends req (with fd, unless -1) and waits for its reply, taking the fd
 * that comes with it into *ret_fd if ret_fd. Return: 0, or -errno. */
static int request(int sock, const FanHelperRequest *req, int fd, int *ret_fd) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        FanHelperReply rep;
        struct iovec iov = { (void *) req, sizeof(*req) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        int got = -1;
        ssize_t n;

        if (fd >= 0) {
                struct cmsghdr *c;

                mh.msg_control = &control;
                mh.msg_controllen = sizeof(control);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
                return errno == EAGAIN ? -ETIMEDOUT : negative_errno();

        iov = (struct iovec) { &rep, sizeof(rep) };
        mh = (struct msghdr) {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof(control),
        };
        memset(&control, 0, sizeof(control));
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0)
                return errno == EAGAIN ? -ETIMEDOUT : negative_errno();
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&got, CMSG_DATA(c), sizeof(int));
        if (n == 0) {
                safe_close(got);
                return -ECONNRESET;
        }
        if ((size_t) n != sizeof(rep) || rep.magic != FAN_HELPER_MAGIC || rep.op != req->op ||
            (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
                safe_close(got);
                return -EBADMSG;
        }
        if (rep.error != 0) {
                safe_close(got);
                return rep.error > 0 ? -rep.error : -EIO;
        }
        if (ret_fd)
                *ret_fd = got;
        else
                safe_close(got);
        return 0;
}

int fan_group_new(const char *socket_path, FanGroup **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = FAN_GROUP_TIMEOUT_SEC };
        _cleanup_close_ int sock = -1;
        int fd = -1, r;
        FanGroup *g;

        if (strlen(socket_path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, socket_path);
        sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (sock < 0)
                return negative_errno();
        if (setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                return negative_errno();
        if (connect(sock, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return negative_errno();
        r = request(sock, &(FanHelperRequest) { .magic = FAN_HELPER_MAGIC, .op = FAN_HELPER_HELLO }, -1, &fd);
        if (r < 0)
                return r;
        if (fd < 0)
                return -EBADMSG;
        g = calloc(1, sizeof(FanGroup));
        if (!g) {
                safe_close(fd);
                return -ENOMEM;
        }
        g->sock = TAKE_FD(sock);
        g->fd = fd;
        *ret = g;
        return 0;
}

FanGroup *fan_group_free(FanGroup *g) {
        if (!g)
                return NULL;
        safe_close(g->sock);
        safe_close(g->fd);
        free(g);
        return NULL;
}

int fan_group_fd(const FanGroup *g) {
        return g->fd;
}

static int mark(FanGroup *g, uint32_t op, int dirfd, uint64_t mask) {
        if (g->sock < 0)
                return -ENOTCONN;
        return request(g->sock, &(FanHelperRequest) { .magic = FAN_HELPER_MAGIC, .op = op, .mask = mask }, dirfd, NULL);
}

int fan_group_mark(FanGroup *g, int dirfd, uint64_t mask) {
        return mark(g, FAN_HELPER_MARK, dirfd, mask);
}

int fan_group_unmark(FanGroup *g, int dirfd, uint64_t mask) {
        return mark(g, FAN_HELPER_UNMARK, dirfd, mask);
}
