/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "nm-mpt-notify.h"

int mpt_notify_socket_open(char *ret_name, size_t size) {
        static unsigned counter;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        unsigned rnd = 0;
        socklen_t sa_len;
        int fd, one = 1, n;

        (void) !getrandom(&rnd, sizeof rnd, GRND_NONBLOCK);
        n = snprintf(ret_name, size, "@mpt-nm-%d-%u-%u", (int) getpid(), rnd, counter++);
        if (n < 0 || (size_t) n >= size || (size_t) n > sizeof sa.sun_path)
                return -ENAMETOOLONG;
        memcpy(sa.sun_path + 1, ret_name + 1, (size_t) n - 1);
        sa_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + (size_t) n);
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* Before bind(): no message may arrive without the sender's credentials. */
        if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        if (bind(fd, (struct sockaddr *) &sa, sa_len) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

ssize_t mpt_notify_recv(int fd, pid_t sender, char *buf, size_t size) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(struct ucred))];
        } control;
        struct iovec iov = { .iov_base = buf, .iov_len = size - 1 };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof control,
        };
        struct ucred cred = {};
        bool have_cred = false;
        ssize_t n;

        if (size < 1)
                return -EINVAL;
        n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
                    c->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
                        memcpy(&cred, CMSG_DATA(c), sizeof cred);
                        have_cred = true;
                } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        /* Nobody has a reason to send us descriptors: close them. */
                        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        for (size_t i = 0; i < k; i++) {
                                int f;
                                memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
                                close(f);
                        }
                }
        }
        if (!have_cred || sender <= 0 || cred.pid != sender)
                return -EPERM;
        buf[n] = 0;
        return n;
}
