/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The socket on which the mptd that nm-mpt-service runs tells it that the tunnel is up, as it
 * tells systemd: sd_notify() messages ("READY=1", "STATUS=...") to $NOTIFY_SOCKET, here an
 * abstract datagram socket of the service. Any local process can send to an abstract socket, so
 * every message is taken only from the mptd the service started: the socket has SO_PASSCRED, and
 * the kernel attaches to each message the sender's process id, which the sender cannot forge
 * without CAP_SYS_ADMIN (systemd checks its notify socket the same way). */

#include <stddef.h>
#include <sys/types.h>

/* Opens and binds a new abstract socket (SOCK_DGRAM, non-blocking, close-on-exec) with a unique
 * name, which goes to ret_name in the form $NOTIFY_SOCKET takes ("@..."). Returns the fd, or a
 * negative errno. */
int mpt_notify_socket_open(char *ret_name, size_t size);

/* Receives one message into buf (NUL-terminated; longer ones are cut). Returns its length when
 * process `sender` sent it; -EPERM when another process did or the message carries no
 * credentials (it is dropped); else a negative errno (-EAGAIN: nothing there). */
ssize_t mpt_notify_recv(int fd, pid_t sender, char *buf, size_t size);
