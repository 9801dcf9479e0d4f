/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* nm-mpt-service's readiness socket (plugins/networkmanager/service/nm-mpt-notify.h): it takes
 * sd_notify() messages from the process it is told (the mptd it started) and no other. */

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "nm-mpt-notify.h"

#include <glib.h>

/* In a child process: sd_notify() as mptd sends it. Returns the child's pid once it exited. */
static pid_t notify_from_child(const char *socket_name, const char *message) {
        int status;
        pid_t pid = fork();

        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                if (setenv("NOTIFY_SOCKET", socket_name, 1) < 0)
                        _exit(2);
                _exit(sd_notify(0, message) > 0 ? 0 : 1);
        }
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        return pid;
}

static void test_sender(void) {
        char name[108], buf[256];
        pid_t child;
        int fd;

        fd = mpt_notify_socket_open(name, sizeof name);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(name[0], ==, '@');
        g_assert_cmpint(mpt_notify_recv(fd, getpid(), buf, sizeof buf), ==, -EAGAIN);

        /* From the process it waits for: taken. */
        child = notify_from_child(name, "READY=1\nSTATUS=lab: 2 of 2 paths up");
        g_assert_cmpint(mpt_notify_recv(fd, child, buf, sizeof buf), ==, (ssize_t) strlen(buf));
        g_assert_cmpstr(buf, ==, "READY=1\nSTATUS=lab: 2 of 2 paths up");

        /* From any other local process: dropped, also when it is the service's own. */
        notify_from_child(name, "READY=1");
        g_assert_cmpint(mpt_notify_recv(fd, child, buf, sizeof buf), ==, -EPERM);
        g_setenv("NOTIFY_SOCKET", name, TRUE);
        g_assert_cmpint(sd_notify(0, "READY=1"), >, 0);
        g_unsetenv("NOTIFY_SOCKET");
        g_assert_cmpint(mpt_notify_recv(fd, child, buf, sizeof buf), ==, -EPERM);
        /* No process to wait for (mptd exited): nothing is taken. */
        child = notify_from_child(name, "READY=1");
        g_assert_cmpint(mpt_notify_recv(fd, 0, buf, sizeof buf), ==, -EPERM);

        /* A message longer than the buffer is cut, and still NUL-terminated. */
        child = notify_from_child(name, "STATUS=0123456789");
        g_assert_cmpint(mpt_notify_recv(fd, child, buf, 8), ==, 7);
        g_assert_cmpstr(buf, ==, "STATUS=");
        g_assert_cmpint(mpt_notify_recv(fd, child, buf, sizeof buf), ==, -EAGAIN);
        close(fd);
}

/* Two sockets get two names. */
static void test_names(void) {
        char a[108], b[108];
        int fa, fb;

        fa = mpt_notify_socket_open(a, sizeof a);
        fb = mpt_notify_socket_open(b, sizeof b);
        g_assert_cmpint(fa, >=, 0);
        g_assert_cmpint(fb, >=, 0);
        g_assert_cmpstr(a, !=, b);
        close(fa);
        close(fb);
        g_assert_cmpint(mpt_notify_socket_open(a, 8), ==, -ENAMETOOLONG);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/mpt/nm-notify/sender", test_sender);
        g_test_add_func("/mpt/nm-notify/names", test_names);
        return g_test_run();
}
