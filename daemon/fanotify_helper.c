/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watchd-fanotify - the one privileged step of watchd's fanotify backend
 *
 * Serves fan_helper.h's three requests to root peers on a Unix socket: a
 * fanotify group for the asking connection (HELLO), and filesystem marks on
 * it (MARK, UNMARK). It keeps CAP_SYS_ADMIN (filesystem marks) and
 * CAP_DAC_READ_SEARCH (the kernel asks the marker for read permission on the
 * directory the mark is placed through) and nothing else, and sets
 * no_new_privs. Its socket comes from systemd (watchd-fanotify.socket,
 * LISTEN_FDS) or, outside systemd (the tests, the benchmark), is made with
 * --listen PATH (mode 0600).
 *
 * One poll loop over the listening socket and at most MAX_PEERS connections;
 * a peer that is not root (SO_PEERCRED) is closed at once. With --exit-idle,
 * it exits when its last connection ends and no other is waiting (systemd
 * starts it again at the next one).
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "capability.h"
#include "fan_helper.h"
#include "log.h"
#include "macro.h"

#define MAX_PEERS 8

typedef struct Peer {
        int fd;    /* the connection, -1: a free slot */
        int group; /* its fanotify group, -1: none yet */
} Peer;

static void peer_close(Peer *p) {
        p->fd = safe_close(p->fd);
        p->group = safe_close(p->group);
}

/* Receives one request and the fd that may come with it (*ret_fd, -1: none).
 * Return: 1, 0 at end of file, -errno. */
static int recv_request(int fd, FanHelperRequest *req, int *ret_fd) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * 4)];
        } control = {};
        struct iovec iov = { req, sizeof(*req) };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof(control),
        };
        ssize_t n;

        *ret_fd = -1;
        n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0)
                return negative_errno();
        /* Every fd that came is taken, the first kept, any other closed. */
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                        int x;

                        memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (*ret_fd < 0)
                                *ret_fd = x;
                        else
                                safe_close(x);
                }
        }
        if (n == 0)
                return 0;
        if ((size_t) n != sizeof(*req) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
                return -EBADMSG;
        return 1;
}

static int send_reply(int fd, uint32_t op, int error, int pass_fd) {
        FanHelperReply rep = { .magic = FAN_HELPER_MAGIC, .op = op, .error = error };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { &rep, sizeof(rep) };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
        };

        if (pass_fd >= 0) {
                struct cmsghdr *c;

                mh.msg_control = &control;
                mh.msg_controllen = sizeof(control);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
        }
        if (sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
                return negative_errno();
        return 0;
}

/* One request of p. Return: 0 to go on, < 0 to close p. */
static int serve(Peer *p) {
        _cleanup_close_ int fd = -1;
        FanHelperRequest req = {};
        int r, error = 0;

        r = recv_request(p->fd, &req, &fd);
        if (r == -EAGAIN)
                return 0;
        if (r <= 0)
                return r < 0 ? r : -ECONNRESET;
        if (req.magic != FAN_HELPER_MAGIC)
                return -EBADMSG;

        switch (req.op) {
        case FAN_HELPER_HELLO:
                if (p->group < 0) {
                        p->group = fanotify_init(FAN_HELPER_INIT_FLAGS, FAN_HELPER_EVENT_F_FLAGS);
                        if (p->group < 0) {
                                error = errno;
                                log_info_errno(-error, "fanotify_init() failed: %m");
                        }
                }
                return send_reply(p->fd, req.op, error, error ? -1 : p->group);
        case FAN_HELPER_MARK:
        case FAN_HELPER_UNMARK:
                if (p->group < 0 || req.mask == 0 || (req.mask & ~(uint64_t) FAN_HELPER_MASK_ALLOWED))
                        error = EINVAL;
                else if (fd < 0)
                        error = EBADF;
                else if (fanotify_mark(p->group,
                                       (req.op == FAN_HELPER_MARK ? FAN_MARK_ADD : FAN_MARK_REMOVE) |
                                               FAN_MARK_FILESYSTEM | FAN_MARK_ONLYDIR,
                                       req.mask, fd, ".") < 0)
                        error = errno;
                return send_reply(p->fd, req.op, error, -1);
        default:
                return send_reply(p->fd, req.op, EINVAL, -1);
        }
}

/* Whether the peer on fd is root. */
static bool peer_is_root(int fd) {
        struct ucred cred;
        socklen_t len = sizeof(cred);

        return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) >= 0 && cred.uid == 0;
}

/* Listens on path, which appears only once connections are taken: made
 * under another name and renamed into place. */
static int listen_on(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -1;
        mode_t old;
        int r;

        if (asprintf(&tmp, "%s.%u", path, (unsigned) getpid()) < 0)
                return -ENOMEM;
        if (strlen(tmp) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, tmp);
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return negative_errno();
        (void) unlink(tmp);
        old = umask(0077);
        r = bind(fd, (struct sockaddr *) &sa, sizeof(sa));
        umask(old);
        if (r < 0 || listen(fd, MAX_PEERS) < 0 || rename(tmp, path) < 0) {
                r = negative_errno();
                (void) unlink(tmp);
                return r;
        }
        return TAKE_FD(fd);
}

static void help(void) {
        printf("Usage: watchd-fanotify [--listen PATH] [--exit-idle]\n"
               "Makes fanotify groups and filesystem marks for watchd (see watchd(8), FANOTIFY).\n\n"
               "      --listen PATH  Listen on PATH (else the socket systemd passes)\n"
               "      --exit-idle    Exit when the last connection ends\n"
               "  -h, --help         Show this help\n");
}

int main(int argc, char *argv[]) {
        static const struct option options[] = { { "listen", required_argument, NULL, 'l' },
                                                 { "exit-idle", no_argument, NULL, 'x' },
                                                 { "help", no_argument, NULL, 'h' },
                                                 {} };
        const char *path = NULL;
        bool exit_idle = false;
        Peer peers[MAX_PEERS];
        int listen_fd, c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'l':
                        path = optarg;
                        break;
                case 'x':
                        exit_idle = true;
                        break;
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                default:
                        return EXIT_FAILURE;
                }
        if (optind < argc) {
                log_error("Unexpected argument '%s'.", argv[optind]);
                return EXIT_FAILURE;
        }
        (void) signal(SIGPIPE, SIG_IGN);

        if (path) {
                listen_fd = listen_on(path);
                if (listen_fd < 0) {
                        log_error_errno(listen_fd, "Failed to listen on '%s': %m", path);
                        return EXIT_FAILURE;
                }
        } else {
                r = sd_listen_fds(1);
                if (r != 1) {
                        log_error("No --listen PATH and %s socket from systemd (LISTEN_FDS).",
                                  r < 0 ? "no" : "not exactly one");
                        return EXIT_FAILURE;
                }
                listen_fd = SD_LISTEN_FDS_START;
                if (fcntl(listen_fd, F_SETFL, O_NONBLOCK) < 0 || fcntl(listen_fd, F_SETFD, FD_CLOEXEC) < 0) {
                        log_error_errno(negative_errno(), "Failed to set up the socket from systemd: %m");
                        return EXIT_FAILURE;
                }
        }
        if (capability_keep_only(UINT64_C(1) << CAP_SYS_ADMIN | UINT64_C(1) << CAP_DAC_READ_SEARCH) < 0)
                return EXIT_FAILURE;
        for (int i = 0; i < MAX_PEERS; i++)
                peers[i] = (Peer) { -1, -1 };
        log_info("Ready for watchd's requests.");

        for (;;) {
                struct pollfd pfd[MAX_PEERS + 1];
                int n = 0, idx[MAX_PEERS + 1], used = 0;

                for (int i = 0; i < MAX_PEERS; i++)
                        if (peers[i].fd >= 0) {
                                pfd[n] = (struct pollfd) { .fd = peers[i].fd, .events = POLLIN };
                                idx[n++] = i;
                                used++;
                        }
                /* Full: new connections wait in the backlog. */
                if (used < MAX_PEERS) {
                        pfd[n] = (struct pollfd) { .fd = listen_fd, .events = POLLIN };
                        idx[n++] = -1;
                }
                if (poll(pfd, (nfds_t) n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        log_error_errno(negative_errno(), "poll() failed: %m");
                        return EXIT_FAILURE;
                }
                for (int k = 0; k < n; k++) {
                        if (!pfd[k].revents)
                                continue;
                        if (idx[k] < 0) {
                                int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

                                if (fd < 0)
                                        continue;
                                if (!peer_is_root(fd)) {
                                        log_notice("Refusing a connection from a peer that is not root.");
                                        safe_close(fd);
                                        continue;
                                }
                                for (int i = 0; i < MAX_PEERS; i++)
                                        if (peers[i].fd < 0) {
                                                peers[i].fd = fd;
                                                fd = -1;
                                                break;
                                        }
                                safe_close(fd);
                                continue;
                        }
                        r = serve(&peers[idx[k]]);
                        if (r < 0) {
                                if (r != -ECONNRESET)
                                        log_info_errno(r, "Closing a connection: %m");
                                peer_close(&peers[idx[k]]);
                        }
                }
                if (exit_idle) {
                        bool any = false;

                        for (int i = 0; i < MAX_PEERS; i++)
                                any = any || peers[i].fd >= 0;
                        if (!any && used > 0) {
                                struct pollfd l = { .fd = listen_fd, .events = POLLIN };

                                if (poll(&l, 1, 0) == 0)
                                        return EXIT_SUCCESS;
                        }
                }
        }
}
