/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>

#include "fileio.h"

/* read() asks for at least a page at a time, into a buffer that starts at two and doubles as it
 * grows: few calls for a profile, and at most about twice the memory a file needs. */
#define READ_CHUNK 4096u
#define READ_BUFFER_MIN (2u * READ_CHUNK)

/* READ_FULL_FILE_CHECK_FIRST: see fileio.h. */
static int open_checked_first(const char *filename, struct stat *ret_st) {
        _cleanup_close_ int pfd = -EBADF;
        char proc[STRLEN("/proc/self/fd/") + 12];
        struct stat st, st2;
        int fd;

        pfd = open(filename, O_PATH | O_CLOEXEC);
        if (pfd < 0)
                return -errno;
        if (fstat(pfd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        (void) snprintf(proc, sizeof proc, "/proc/self/fd/%i", pfd);
        fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errno == ENOENT ? -ENOSYS : -errno; /* no /proc: say so, do not fall back */
        if (fstat(fd, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
                safe_close(fd);
                return -ESTALE;
        }
        *ret_st = st;
        return fd;
}

int read_full_file_open(const char *filename, ReadFullFileFlags flags, struct stat *ret_st) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (flags & READ_FULL_FILE_CHECK_FIRST)
                return open_checked_first(filename, ret_st);

        /* O_NONBLOCK: opening a FIFO does not wait for a writer (it is refused below). */
        fd = open(filename, O_RDONLY | O_CLOEXEC | O_NOCTTY | (flags & READ_FULL_FILE_REGULAR ? O_NONBLOCK : 0));
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode) &&
            ((flags & READ_FULL_FILE_REGULAR) || (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))))
                return -EBADFD;
        *ret_st = st;
        return TAKE_FD(fd);
}

/* realloc(), but for SECURE what the old buffer held is wiped, not left behind in freed memory. */
static char *grow(char *buf, size_t used, size_t n, ReadFullFileFlags flags) {
        char *b;

        if (!(flags & READ_FULL_FILE_SECURE))
                return realloc(buf, n);
        b = malloc(n);
        if (!b)
                return NULL;
        if (buf) {
                memcpy(b, buf, used);
                explicit_bzero(buf, used);
                free(buf);
        }
        return b;
}

int read_full_fd(int fd, size_t max, ReadFullFileFlags flags, char **ret, size_t *ret_size) {
        char *buf = NULL;
        size_t size = 0, allocated = 0;
        int r;

        for (;;) {
                ssize_t k;

                if (size + READ_CHUNK + 1 > allocated) {
                        size_t n = MAX(allocated * 2, (size_t) READ_BUFFER_MIN);
                        char *b = grow(buf, size, n, flags);
                        if (!b) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        buf = b;
                        allocated = n;
                }
                k = read(fd, buf + size, allocated - size - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        goto fail;
                }
                if (k == 0)
                        break;
                size += (size_t) k;
                if (size > max) {
                        r = -EFBIG;
                        goto fail;
                }
        }
        buf[size] = 0;
        *ret = buf;
        if (ret_size)
                *ret_size = size;
        return 0;
fail:
        if (buf && (flags & READ_FULL_FILE_SECURE))
                explicit_bzero(buf, size);
        free(buf);
        return r;
}

int read_full_file_full(const char *filename, size_t max, ReadFullFileFlags flags, char **ret, size_t *ret_size,
                        struct stat *ret_st) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        fd = read_full_file_open(filename, flags, &st);
        if (fd < 0)
                return fd;
        if (S_ISREG(st.st_mode) && (uint64_t) st.st_size > max)
                return -EFBIG;
        r = read_full_fd(fd, max, flags, ret, ret_size);
        if (r < 0)
                return r;
        if (ret_st)
                *ret_st = st;
        return 0;
}
