/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _unused_ __attribute__((__unused__))
#define _pure_ __attribute__((__pure__))
#define _const_ __attribute__((__const__))
#define _printf_(a, b) __attribute__((__format__(printf, a, b)))
#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))
#define _warn_unused_result_ __attribute__((__warn_unused_result__))
#define _fallthrough_ __attribute__((__fallthrough__))
#define _aligned_(n) __attribute__((__aligned__(n)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
/* GLib defines the same three; keep whichever came first. */
#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif
#ifndef CLAMP
#define CLAMP(x, lo, hi) ((x) < (lo) ? (lo) : (x) > (hi) ? (hi) : (x))
#endif
#define DIV_ROUND_UP(x, y) (((x) + (y) - 1) / (y))
#define ALIGN_TO(x, a) (((x) + (a) - 1) & ~((a) - 1))

#define STRLEN(s) (sizeof(s) - 1)
#define streq(a, b) (strcmp((a), (b)) == 0)
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)
#define isempty(s) (!(s) || (s)[0] == '\0')
#define strempty(s) ((s) ?: "")
#define strna(s) ((s) ?: "n/a")

#define SYNTHETIC_ERRNO(e) (e)
#define ERRNO_VALUE(e) (abs(e))

/* Cleanup helpers (systemd style). */
#define _cleanup_(f) __attribute__((__cleanup__(f)))

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline FILE *safe_fclose(FILE *f) {
        if (f)
                (void) fclose(f);
        return NULL;
}
static inline void fclosep(FILE **f) {
        safe_fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                 \
        static inline void func##p(type *p) {                   \
                if (*p)                                         \
                        func(*p);                               \
        }

#define TAKE_PTR(p)                                             \
        ({                                                      \
                __typeof__(p) _ptr_ = (p);                      \
                (p) = NULL;                                     \
                _ptr_;                                          \
        })

#define TAKE_FD(fd)                                             \
        ({                                                      \
                int _fd_ = (fd);                                \
                (fd) = -EBADF;                                  \
                _fd_;                                           \
        })

#define mfree(p) ({ free(p); (__typeof__(p)) NULL; })

/* Single-writer counters: the owning thread increments, any thread may read. The relaxed
 * load/store pair compiles to a plain add (no lock prefix) but is not a data race in C11. */
#define COUNTER_ADD(c, n) __atomic_store_n(&(c), __atomic_load_n(&(c), __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define COUNTER_READ(c) __atomic_load_n(&(c), __ATOMIC_RELAXED)

static inline void *memdup(const void *p, size_t n) {
        void *q = malloc(n ?: 1);
        if (q && n)
                memcpy(q, p, n);
        return q;
}

/* Bounded, always NUL-terminated copy. Returns true when nothing was cut. */
static inline bool strscpy_ok(char *dst, size_t size, const char *src) {
        size_t n = strlen(src);
        if (size == 0)
                return false;
        if (n >= size) {
                memcpy(dst, src, size - 1);
                dst[size - 1] = 0;
                return false;
        }
        memcpy(dst, src, n + 1);
        return true;
}

static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

/* Enum <-> string tables. */
#define DECLARE_STRING_TABLE(name, type)                        \
        const char *name##_to_string(type i) _const_;           \
        type name##_from_string(const char *s) _pure_;

#define DEFINE_STRING_TABLE(name, type, max)                                    \
        const char *name##_to_string(type i) {                                  \
                if ((int) i < 0 || (size_t) i >= ELEMENTSOF(name##_table))      \
                        return NULL;                                            \
                return name##_table[i];                                         \
        }                                                                       \
        type name##_from_string(const char *s) {                                \
                if (!s)                                                         \
                        return (type) -EINVAL;                                  \
                for (size_t i = 0; i < (size_t) (max); i++)                     \
                        if (name##_table[i] && streq(name##_table[i], s))      \
                                return (type) i;                                \
                return (type) -EINVAL;                                          \
        }
