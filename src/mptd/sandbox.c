/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <linux/audit.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"

#if defined(__x86_64__)
#define SANDBOX_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__) && defined(__AARCH64EL__)
#define SANDBOX_ARCH AUDIT_ARCH_AARCH64
#endif

/* A rule: system call nr gets action; with a condition on one argument (arg >= 0), only when it
 * holds, and otherwise `otherwise`. The conditions look at the argument's low 32 bits, which is
 * all of what they test (flags, protections, ioctl requests and a pid are ints to the kernel). */
typedef enum Test {
        TEST_NONE,
        TEST_CLEAR, /* (arg & value) == 0 */
        TEST_SET,   /* (arg & value) == value */
        TEST_EQ,    /* arg == value */
} Test;

typedef struct Rule {
        long nr;
        uint32_t action;
        Test test;
        unsigned arg;
        uint32_t value;
        uint32_t otherwise;
} Rule;

#define EPERM_ SECCOMP_RET_ERRNO | EPERM
#define ALLOW(n) { .nr = (n), .action = SECCOMP_RET_ALLOW }
#define DENY(n) { .nr = (n), .action = EPERM_ }
#define IF(n, t, a, v, yes, no) { .nr = (n), .action = (yes), .test = (t), .arg = (a), .value = (v), .otherwise = (no) }

/* What no thread of mptd does once it runs. Executable memory that is (or was) writable, as
 * systemd's MemoryDenyWriteExecute=: no mapping both writable and executable, no protection made
 * executable afterwards. */
static const Rule process_rules[] = {
        DENY(SYS_execve), DENY(SYS_execveat),
#ifdef SYS_fork
        DENY(SYS_fork),
#endif
#ifdef SYS_vfork
        DENY(SYS_vfork),
#endif
        /* Threads only; clone3's flags are in memory the filter cannot read: ENOSYS, and the C
         * library uses clone. */
        IF(SYS_clone, TEST_SET, 0, CLONE_THREAD, SECCOMP_RET_ALLOW, EPERM_),
        { .nr = SYS_clone3, .action = SECCOMP_RET_ERRNO | ENOSYS },
        DENY(SYS_ptrace), DENY(SYS_process_vm_readv), DENY(SYS_process_vm_writev), DENY(SYS_process_madvise),
        DENY(SYS_pidfd_getfd), DENY(SYS_kcmp),
        DENY(SYS_mount), DENY(SYS_umount2), DENY(SYS_pivot_root), DENY(SYS_chroot), DENY(SYS_move_mount),
        DENY(SYS_open_tree), DENY(SYS_fsopen), DENY(SYS_fsconfig), DENY(SYS_fsmount), DENY(SYS_fspick),
        DENY(SYS_mount_setattr), DENY(SYS_unshare), DENY(SYS_setns),
        DENY(SYS_setuid), DENY(SYS_setgid), DENY(SYS_setreuid), DENY(SYS_setregid), DENY(SYS_setresuid),
        DENY(SYS_setresgid), DENY(SYS_setfsuid), DENY(SYS_setfsgid), DENY(SYS_setgroups), DENY(SYS_capset),
        DENY(SYS_init_module), DENY(SYS_finit_module), DENY(SYS_delete_module), DENY(SYS_kexec_load),
        DENY(SYS_kexec_file_load), DENY(SYS_reboot), DENY(SYS_swapon), DENY(SYS_swapoff), DENY(SYS_acct),
        DENY(SYS_quotactl), DENY(SYS_syslog),
        DENY(SYS_bpf), DENY(SYS_perf_event_open), DENY(SYS_userfaultfd),
        DENY(SYS_keyctl), DENY(SYS_add_key), DENY(SYS_request_key),
        DENY(SYS_personality), DENY(SYS_open_by_handle_at), DENY(SYS_name_to_handle_at),
#ifdef SYS_iopl
        DENY(SYS_iopl), DENY(SYS_ioperm),
#endif
        DENY(SYS_settimeofday), DENY(SYS_clock_settime), DENY(SYS_clock_adjtime), DENY(SYS_adjtimex),
        DENY(SYS_sethostname), DENY(SYS_setdomainname),
        /* io_uring's operations pass no system call this filter could see. */
        DENY(SYS_io_uring_setup), DENY(SYS_io_uring_enter), DENY(SYS_io_uring_register),
        IF(SYS_mmap, TEST_SET, 2, PROT_WRITE | PROT_EXEC, EPERM_, SECCOMP_RET_ALLOW),
        IF(SYS_mprotect, TEST_CLEAR, 2, PROT_EXEC, SECCOMP_RET_ALLOW, EPERM_),
        IF(SYS_pkey_mprotect, TEST_CLEAR, 2, PROT_EXEC, SECCOMP_RET_ALLOW, EPERM_),
};

/* What a worker thread does (worker.c: worker_main() and what it calls in send.c and receive.c,
 * OpenSSL's ciphers, the C library's allocator and thread exit). PID_SELF: replaced by the
 * process's pid. */
#define PID_SELF UINT32_MAX
static const Rule worker_rules[] = {
        /* The TUN queue and the path sockets (sockets are made and bound by the main thread);
         * the wake-up eventfd. */
        ALLOW(SYS_read), ALLOW(SYS_readv), ALLOW(SYS_write), ALLOW(SYS_writev),
        ALLOW(SYS_recvmsg), ALLOW(SYS_recvmmsg), ALLOW(SYS_recvfrom),
        ALLOW(SYS_sendmsg), ALLOW(SYS_sendmmsg), ALLOW(SYS_sendto),
        /* How much a path's socket has queued (the local-queue signal). */
        IF(SYS_ioctl, TEST_EQ, 1, SIOCOUTQ, SECCOMP_RET_ALLOW, EPERM_),
        /* Waiting. */
#ifdef SYS_epoll_wait
        ALLOW(SYS_epoll_wait),
#endif
        ALLOW(SYS_epoll_pwait), ALLOW(SYS_epoll_pwait2), ALLOW(SYS_epoll_ctl),
#ifdef SYS_poll
        ALLOW(SYS_poll),
#endif
        ALLOW(SYS_ppoll), ALLOW(SYS_futex), ALLOW(SYS_sched_yield), ALLOW(SYS_nanosleep),
        ALLOW(SYS_clock_nanosleep), ALLOW(SYS_restart_syscall),
        /* Time (the vDSO answers these, unless it cannot). */
        ALLOW(SYS_clock_gettime), ALLOW(SYS_clock_getres), ALLOW(SYS_gettimeofday),
#ifdef SYS_time
        ALLOW(SYS_time),
#endif
        ALLOW(SYS_getcpu), ALLOW(SYS_getrandom),
        /* Memory: never executable. */
        IF(SYS_mmap, TEST_CLEAR, 2, PROT_EXEC, SECCOMP_RET_ALLOW, EPERM_),
        IF(SYS_mprotect, TEST_CLEAR, 2, PROT_EXEC, SECCOMP_RET_ALLOW, EPERM_),
        ALLOW(SYS_munmap), ALLOW(SYS_mremap), ALLOW(SYS_madvise), ALLOW(SYS_brk),
        /* Signals (all blocked in workers), an abort()'s own signal, and the thread's end. */
        ALLOW(SYS_rt_sigprocmask), ALLOW(SYS_rt_sigaction), ALLOW(SYS_rt_sigreturn), ALLOW(SYS_sigaltstack),
        IF(SYS_tgkill, TEST_EQ, 0, PID_SELF, SECCOMP_RET_ALLOW, EPERM_),
        ALLOW(SYS_getpid), ALLOW(SYS_gettid), ALLOW(SYS_rseq), ALLOW(SYS_set_robust_list),
        ALLOW(SYS_exit), ALLOW(SYS_exit_group),
};

typedef struct Prog {
        struct sock_filter *f;
        size_t n, max;
} Prog;

static void emit(Prog *p, struct sock_filter f) {
        if (p->n < p->max)
                p->f[p->n] = f;
        p->n++;
}

#define STMT(code, k) emit(p, (struct sock_filter) BPF_STMT(code, k))
#define JUMP(code, k, jt, jf) emit(p, (struct sock_filter) BPF_JUMP(code, k, jt, jf))

static uint32_t arg_low(unsigned i) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        return (uint32_t) offsetof(struct seccomp_data, args[i]);
#else
        return (uint32_t) offsetof(struct seccomp_data, args[i]) + 4;
#endif
}

static void emit_rule(Prog *p, const Rule *r, int pid) {
        uint32_t value = r->value == PID_SELF ? (uint32_t) pid : r->value;

        if (r->test == TEST_NONE) {
                JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) r->nr, 0, 1);
                STMT(BPF_RET | BPF_K, r->action);
                return;
        }
        /* nr? Load the argument's low word; (TEST_SET: masked;) the test; action or otherwise. */
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) r->nr, 0, r->test == TEST_SET ? 5 : 4);
        STMT(BPF_LD | BPF_W | BPF_ABS, arg_low(r->arg));
        if (r->test == TEST_SET)
                STMT(BPF_ALU | BPF_AND | BPF_K, value);
        if (r->test == TEST_CLEAR)
                JUMP(BPF_JMP | BPF_JSET | BPF_K, value, 1, 0); /* any bit set: otherwise */
        else
                JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 1);
        STMT(BPF_RET | BPF_K, r->action);
        STMT(BPF_RET | BPF_K, r->otherwise);
}

int sandbox_build(SandboxLayer layer, int pid, struct sock_filter *out, size_t max) {
#ifdef SANDBOX_ARCH
        Prog prog = { .f = out, .max = max }, *p = &prog;
        const Rule *rules = layer == SANDBOX_WORKER ? worker_rules : process_rules;
        size_t n = layer == SANDBOX_WORKER ? ELEMENTSOF(worker_rules) : ELEMENTSOF(process_rules);

        /* Another architecture's system call numbers mean other calls: the process ends. */
        STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_ARCH, 1, 0);
        STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
        STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#ifdef __x86_64__
        /* x32's calls share the architecture, with bit 30 set. */
        JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
        STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
        for (size_t i = 0; i < n; i++)
                emit_rule(p, &rules[i], pid);
        STMT(BPF_RET | BPF_K, layer == SANDBOX_WORKER ? (uint32_t) (EPERM_) : SECCOMP_RET_ALLOW);
        if (prog.n > max || prog.n > BPF_MAXINSNS)
                return -ENOBUFS;
        return (int) prog.n;
#else
        (void) layer, (void) pid, (void) out, (void) max;
        return -EOPNOTSUPP;
#endif
}

int sandbox_apply(SandboxLayer layer, unsigned flags) {
        struct sock_filter f[256];
        struct sock_fprog prog;
        int n;

        n = sandbox_build(layer, getpid(), f, ELEMENTSOF(f));
        if (n < 0)
                return n;
        prog = (struct sock_fprog) { .len = (unsigned short) n, .filter = f };
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog) != 0)
                return errno > 0 ? -errno : -EINVAL; /* TSYNC: a thread id that could not sync */
        return 0;
}

static bool process_installed;

int sandbox_install_process(void) {
        int r;

#ifdef SANDBOX_SANITIZED
        log_debug("Built with a sanitizer: no seccomp filter of mptd's own.");
        return 0;
#endif
        r = sandbox_apply(SANDBOX_PROCESS, SECCOMP_FILTER_FLAG_TSYNC);
        if (r == -EOPNOTSUPP) {
                log_notice("No seccomp filter of mptd's own on this architecture.");
                return 0;
        }
        if (r == -EINVAL && prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL) {
                log_warning("The kernel has no seccomp: mptd runs without its system call filter.");
                return 0;
        }
        /* A filter above mptd's (a unit's SystemCallFilter= without "seccomp") refuses it. */
        if (r == -EPERM && prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2) {
                log_warning("The system call filter mptd runs under refuses seccomp(): mptd's own filter is not "
                            "installed (a unit needs SystemCallFilter=seccomp, as mptd@.service has).");
                return 0;
        }
        if (r < 0)
                return log_error_errno(r, "Failed to install the seccomp filter: %m");
        process_installed = true;
        log_debug("Installed the process's seccomp filter.");
        return 1;
}

int sandbox_install_worker(void) {
        int r;

        if (!process_installed)
                return 0;
        r = sandbox_apply(SANDBOX_WORKER, 0);
        if (r < 0)
                return r;
        return 1;
}
