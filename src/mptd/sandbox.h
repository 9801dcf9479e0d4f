/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>

/* mptd's own seccomp filters (sandbox.c), in two layers:
 *
 *   - the process: once the privileges are dropped (and before any thread starts), every thread
 *     loses what an attacker who took over mptd would want and mptd never needs while it runs:
 *     running programs, new processes (threads only), tracing other processes, mounts, user,
 *     group and capability changes, kernel modules, BPF, keyrings, io_uring, clocks, writable
 *     and executable memory;
 *   - the data plane: each worker thread (the threads that parse what arrives from the network)
 *     then allows only what it does: reading and writing its TUN queue and path sockets, epoll,
 *     futexes, clocks, memory for the allocator, random bytes, its own exit. No files, no new
 *     sockets, no netlink, no threads.
 *
 * Anything refused fails with EPERM (ENOSYS for clone3, so that the C library falls back to
 * clone); a system call of another architecture (or x32) ends the process. */

/* The sanitizer runtimes (ASan, LSan, TSan) make system calls of their own that neither list
 * allows: a sanitized build installs no filter. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANDBOX_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define SANDBOX_SANITIZED 1
#endif
#endif

typedef enum SandboxLayer {
        SANDBOX_PROCESS,
        SANDBOX_WORKER,
} SandboxLayer;

/* The filter program of a layer (for pid: the process's own, which the worker layer lets
 * threads signal). Returns the number of instructions written to out (at most max), or
 * -EOPNOTSUPP on an architecture without a filter, or -ENOBUFS. */
int sandbox_build(SandboxLayer layer, int pid, struct sock_filter *out, size_t max);

/* Installs the process layer in every thread (SECCOMP_FILTER_FLAG_TSYNC). Needs no_new_privs.
 * Returns 1 when installed, 0 when this build or kernel has none (logged), < 0 on error. */
int sandbox_install_process(void);

/* Installs the worker layer in the calling thread, on top of the process layer, when that one
 * was installed. Returns 1, 0 (no process layer: nothing done) or < 0 on error. */
int sandbox_install_worker(void);

/* Installs the program of a layer in the calling thread (flags: SECCOMP_FILTER_FLAG_*), for
 * the above and the tests. */
int sandbox_apply(SandboxLayer layer, unsigned flags);
