/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "mptctl.h"
#include "parse-util.h"

int client_connect(const char *tunnel, int *ret_fd) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = 5 };
        int r;

        r = ctl_socket_path(tunnel, &path);
        if (r == -EINVAL) {
                fprintf(stderr, "mptctl: '%s' is not a valid tunnel name\n", tunnel);
                return r;
        }
        if (r < 0) {
                fprintf(stderr, "mptctl: control socket path for '%s': %s\n", tunnel, strerror(-r));
                return r;
        }
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                fprintf(stderr, "mptctl: socket: %s\n", strerror(errno));
                return -errno;
        }
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        strcpy(sa.sun_path, path);
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                r = -errno;
                if (r == -ENOENT || r == -ECONNREFUSED)
                        fprintf(stderr, "mptctl: tunnel '%s' is not running (no mptd listens on %s)\n", tunnel, path);
                else if (r == -EACCES || r == -EPERM)
                        fprintf(stderr, "mptctl: permission denied on %s: only root, the user mptd runs as and "
                                "members of mptd's --control-group may use it\n", path);
                else
                        fprintf(stderr, "mptctl: cannot connect to %s: %s\n", path, strerror(-r));
                return r;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int client_call(int fd, const CtlRequest *req, CtlReply *ret) {
        char buf[MPT_CTL_REQUEST_MAX];
        _cleanup_free_ char *reply = NULL;
        ssize_t n;
        int r;

        r = ctl_request_format(req, buf, sizeof buf);
        if (r < 0) {
                fprintf(stderr, "mptctl: cannot format request: %s\n", strerror(-r));
                return r;
        }
        if (send(fd, buf, (size_t) r, MSG_NOSIGNAL) < 0) {
                fprintf(stderr, "mptctl: cannot send request: %s\n", strerror(errno));
                return -errno;
        }
        reply = malloc(MPT_CTL_REPLY_MAX);
        if (!reply)
                return -ENOMEM;
        n = recv(fd, reply, MPT_CTL_REPLY_MAX, MSG_TRUNC);
        if (n < 0) {
                r = -errno;
                fprintf(stderr, "mptctl: no reply from mptd: %s\n",
                        r == -EAGAIN ? "timed out after 5s" : strerror(-r));
                return r;
        }
        if (n == 0 || (size_t) n > MPT_CTL_REPLY_MAX) {
                fprintf(stderr, "mptctl: %s reply from mptd\n", n == 0 ? "empty" : "oversized");
                return -EBADMSG;
        }
        r = ctl_reply_parse(reply, (size_t) n, ret);
        if (r < 0) {
                fprintf(stderr, "mptctl: malformed reply from mptd\n");
                return r;
        }
        if (ret->error != 0) {
                fprintf(stderr, "mptctl: %s\n", ret->message ?: strerror(ret->error));
                /* Problems in detail (a refused reload: one per problem, "FILE:LINE: ..."). */
                for (size_t i = 0; i < ret->n_records; i++)
                        if (streq(ret->records[i].type, "problem"))
                                fprintf(stderr, "%s\n", strempty(ctl_record_get(&ret->records[i], "text")));
                r = -ret->error;
                ctl_reply_done(ret);
                return r;
        }
        return 0;
}

void strv_free_n(char **l, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(l[i]);
        free(l);
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int client_request(const char *tunnel, const CtlRequest *req, CtlReply *ret) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = client_connect(tunnel, &fd);
        if (r < 0)
                return r;
        return client_call(fd, req, ret);
}

int client_list_tunnels(char ***ret, size_t *ret_n) {
        DIR *d;
        struct dirent *de;
        char **l = NULL;
        size_t n = 0;

        d = opendir(ctl_runtime_dir());
        if (!d) {
                if (errno == ENOENT) {
                        *ret = NULL;
                        *ret_n = 0;
                        return 0;
                }
                fprintf(stderr, "mptctl: cannot read %s: %s\n", ctl_runtime_dir(), strerror(errno));
                return -errno;
        }
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                char **nl;
                if (len <= 5 || !streq(de->d_name + len - 5, ".sock"))
                        continue;
                nl = realloc(l, (n + 1) * sizeof(char *));
                if (!nl)
                        break;
                l = nl;
                l[n] = strndup(de->d_name, len - 5);
                if (!l[n])
                        break;
                if (!object_name_valid(l[n])) {
                        free(l[n]);
                        continue;
                }
                n++;
        }
        closedir(d);
        qsort(l, n, sizeof(char *), cmp_str);
        *ret = l;
        *ret_n = n;
        return 0;
}
