/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/stat.h>

#include "macro.h"

/* Reading a whole file into memory, bounded: one reader for profiles, .netdev files, their
 * drop-ins and key files, whose flags say how careful it is (as systemd's read_full_file_full()).
 * A file larger than the bound is refused (-EFBIG), never cut short. */

typedef enum ReadFullFileFlags {
        /* A regular file only (-EBADFD for anything else), opened without waiting: a daemon's event
         * loop must not hang on a FIFO that nobody writes. Without it a FIFO or a character device
         * (/dev/stdin) is read too. */
        READ_FULL_FILE_REGULAR = 1 << 0,
        /* A regular file only, checked before anything opens it for reading: an O_PATH descriptor
         * (which opens nothing: no device's open routine runs, a FIFO is not waited on) is checked
         * first, and the file it names is then reopened through /proc/self/fd, so that a name swapped
         * in between cannot make us open something else (-ESTALE). -EBADFD for anything but a
         * regular file (a directory too); -ENOSYS without /proc, rather than falling back. For the
         * files a profile names (key files). */
        READ_FULL_FILE_CHECK_FIRST = 1 << 1,
        /* The contents are secret: every buffer that held them is wiped before it is freed. */
        READ_FULL_FILE_SECURE = 1 << 2,
} ReadFullFileFlags;

/* Opens filename for reading as flags say (REGULAR, CHECK_FIRST; -EISDIR for a directory without
 * CHECK_FIRST): the descriptor, with what fstat() says about it in *ret_st, or a negative errno. */
int read_full_file_open(const char *filename, ReadFullFileFlags flags, struct stat *ret_st);
/* Reads what is left of fd, at most max bytes (-EFBIG when there is more), into a NUL-terminated
 * buffer; SECURE is the only flag it looks at. */
int read_full_fd(int fd, size_t max, ReadFullFileFlags flags, char **ret, size_t *ret_size);
/* Both: a whole file of at most max bytes (a regular file that says it is larger is refused before
 * it is read). ret_size and ret_st (what fstat() said about the file) may be NULL. */
int read_full_file_full(const char *filename, size_t max, ReadFullFileFlags flags, char **ret, size_t *ret_size,
                        struct stat *ret_st);
static inline int read_full_file(const char *filename, size_t max, char **ret, size_t *ret_size) {
        return read_full_file_full(filename, max, 0, ret, ret_size, NULL);
}
