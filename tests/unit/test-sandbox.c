/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* mptd's own seccomp filters (src/mptd/sandbox.c), installed for real: each test forks, the child
 * installs a layer and tries what the layer must allow and what it must refuse, and exits with
 * the line of the first check that failed (0: all held). A filter cannot be taken back, so the
 * test process itself never installs one. */

#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "sandbox.h"

#include <glib.h>

/* In the child: the line of the first check that does not hold is its exit status. */
#define CHECK(x)                                                        \
        do {                                                            \
                if (!(x)) {                                             \
                        fprintf(stderr, "check failed at line %d: %s (errno %d)\n", __LINE__, #x, errno); \
                        _exit(__LINE__ & 0xff ?: 1);                    \
                }                                                       \
        } while (0)
#define REFUSED(call) CHECK((call) < 0 && errno == EPERM)

/* Runs fn in a child; returns its wait status. */
static int in_child(void (*fn)(void)) {
        int status;
        pid_t pid;

        fflush(NULL);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                fn();
                _exit(0);
        }
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        return status;
}

static void assert_passed(int status) {
        if (WIFSIGNALED(status))
                g_error("the child was killed by signal %d", WTERMSIG(status));
        if (WEXITSTATUS(status) != 0)
                g_error("a check failed in the child: exit status %d (the low byte of its line)", WEXITSTATUS(status));
}

static void test_build(void) {
        struct sock_filter f[256];
        int n_process, n_worker;

        n_process = sandbox_build(SANDBOX_PROCESS, 1, f, G_N_ELEMENTS(f));
        n_worker = sandbox_build(SANDBOX_WORKER, 1, f, G_N_ELEMENTS(f));
        if (n_process == -EOPNOTSUPP) {
                g_test_skip("no filter on this architecture");
                return;
        }
        g_assert_cmpint(n_process, >, 20);
        g_assert_cmpint(n_worker, >, 20);
        /* The first instruction loads the architecture; the last one is the default action. */
        g_assert_cmpint(f[0].code, ==, BPF_LD | BPF_W | BPF_ABS);
        g_assert_cmpint(f[n_worker - 1].code, ==, BPF_RET | BPF_K);
        /* Too little room is an error, never a truncated program. */
        g_assert_cmpint(sandbox_build(SANDBOX_WORKER, 1, f, (size_t) n_worker - 1), ==, -ENOBUFS);
        g_assert_cmpint(sandbox_build(SANDBOX_WORKER, 1, f, (size_t) n_worker), ==, n_worker);
}

static void *thread_ok(void *arg) {
        return arg;
}

static void process_layer(void) {
        pthread_t t;
        void *res = NULL;
        void *m;
        int fd;

        CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
        CHECK(sandbox_apply(SANDBOX_PROCESS, 0) == 0);
        /* Refused: programs, processes, user changes, namespaces, tracing, W+X memory. */
        REFUSED(execl("/bin/true", "true", (char *) NULL));
        REFUSED(fork());
        REFUSED(setuid(getuid()));
        REFUSED(setresgid(getgid(), getgid(), getgid()));
        REFUSED(unshare(0));
        REFUSED(syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0));
        CHECK(mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED &&
              errno == EPERM);
        m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(m != MAP_FAILED);
        REFUSED(mprotect(m, 4096, PROT_READ | PROT_EXEC));
        CHECK(syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS);
        /* Allowed: threads (clone3 refused, the C library falls back to clone), files, sockets,
         * read-only executable mappings (a library). */
        CHECK(pthread_create(&t, NULL, thread_ok, (void *) 0x42) == 0);
        CHECK(pthread_join(t, &res) == 0 && res == (void *) 0x42);
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0);
        close(fd);
        fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0);
        close(fd);
        CHECK(mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED);
        CHECK(mprotect(m, 4096, PROT_READ) == 0);
}

static void test_process(void) {
        assert_passed(in_child(process_layer));
}

/* The worker layer, in a thread, on top of the process layer: what worker.c does works, the rest
 * is refused; the main thread keeps what the process layer allows. */
static int pipe_fds[2], udp_fd, epoll_fd;
static struct sockaddr_in udp_addr;

static void *worker_thread(void *arg) {
        struct sockaddr_in from;
        socklen_t len = sizeof from;
        struct epoll_event ev;
        pthread_t t;
        char buf[16];
        int q, n;
        void *m;

        CHECK(sandbox_apply(SANDBOX_WORKER, 0) == 0);
        /* The data plane. */
        CHECK(write(pipe_fds[1], "x", 1) == 1);
        CHECK(read(pipe_fds[0], buf, sizeof buf) == 1);
        CHECK(epoll_wait(epoll_fd, &ev, 1, 0) == 0);
        CHECK(sendto(udp_fd, "y", 1, 0, (struct sockaddr *) &udp_addr, sizeof udp_addr) == 1);
        CHECK(epoll_wait(epoll_fd, &ev, 1, 1000) == 1);
        CHECK(recvfrom(udp_fd, buf, sizeof buf, 0, (struct sockaddr *) &from, &len) == 1);
        CHECK(ioctl(udp_fd, SIOCOUTQ, &q) == 0);
        CHECK(getrandom(buf, sizeof buf, 0) == sizeof buf);
        m = malloc(1 << 20); /* a mapping of its own */
        CHECK(m);
        memset(m, 1, 1 << 20);
        free(m);
        CHECK(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), 0) == 0);
        n = sched_getcpu();
        CHECK(n >= 0);
        /* Everything else. */
        REFUSED(open("/dev/null", O_RDONLY | O_CLOEXEC));
        REFUSED(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        REFUSED(ioctl(udp_fd, FIONREAD, &q));
        REFUSED(getsockname(udp_fd, (struct sockaddr *) &from, &len));
        REFUSED(syscall(SYS_tgkill, getppid(), getppid(), 0));
        REFUSED(fcntl(udp_fd, F_GETFL));
        REFUSED(unlink("/nonexistent-mpt-sandbox-test"));
        CHECK(mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED &&
              errno == EPERM);
        CHECK(pthread_create(&t, NULL, thread_ok, NULL) != 0);
        return (void *) 1;
}

static void worker_layer(void) {
        struct epoll_event ev = { .events = EPOLLIN };
        pthread_t t;
        void *res = NULL;
        int fd;

        CHECK(pipe2(pipe_fds, O_CLOEXEC) == 0);
        socklen_t len = sizeof udp_addr;

        udp_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        CHECK(udp_fd >= 0);
        udp_addr = (struct sockaddr_in) { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        CHECK(bind(udp_fd, (struct sockaddr *) &udp_addr, sizeof udp_addr) == 0);
        CHECK(getsockname(udp_fd, (struct sockaddr *) &udp_addr, &len) == 0);
        epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        CHECK(epoll_fd >= 0);
        CHECK(epoll_ctl(epoll_fd, EPOLL_CTL_ADD, udp_fd, &ev) == 0);
        CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
        CHECK(sandbox_apply(SANDBOX_PROCESS, 0x1 /* TSYNC */) == 0);
        CHECK(pthread_create(&t, NULL, worker_thread, NULL) == 0);
        CHECK(pthread_join(t, &res) == 0);
        if (res != (void *) 1)
                _exit(2); /* the thread's own check already said which */
        /* The main thread is not narrowed. */
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0);
        close(fd);
}

static void test_worker(void) {
        assert_passed(in_child(worker_layer));
}

/* A system call of x32 (x86-64's other ABI) ends the process: its numbers mean other calls. */
static void x32_call(void) {
        CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
        CHECK(sandbox_apply(SANDBOX_PROCESS, 0) == 0);
        (void) syscall(0x40000000 | SYS_getpid);
        _exit(3); /* not reached */
}

static void test_x32(void) {
#ifdef __x86_64__
        int status = in_child(x32_call);

        g_assert_true(WIFSIGNALED(status));
        g_assert_cmpint(WTERMSIG(status), ==, SIGSYS);
#else
        g_test_skip("x86-64 only");
#endif
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/mpt/sandbox/build", test_build);
#ifdef SANDBOX_SANITIZED
        /* The sanitizer runtime's own calls (and mptd installs no filter in such a build). */
        (void) test_process, (void) test_worker, (void) test_x32;
#else
        g_test_add_func("/mpt/sandbox/process", test_process);
        g_test_add_func("/mpt/sandbox/worker", test_worker);
        g_test_add_func("/mpt/sandbox/x32", test_x32);
#endif
        return g_test_run();
}
