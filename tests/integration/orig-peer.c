/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * orig-peer: the original MPT's data plane as a peer for compat-mode tests (../shared/spec,
 * sections 2.5 and 2.6), where it matters for how much a sender may burst at it:
 *   - every path has its own socket with the kernel's default receive buffer (net.core.rmem_default,
 *     212992 bytes on Debian) and its own thread that reads it with one recvfrom() into a 1600-byte
 *     buffer per datagram and writes the packet to the TUN device (one write() each);
 *   - the TUN device's packets go out round-robin over the paths, one sendto() each, with a 4-byte
 *     GRE header (no sequence number: the original with reorder_window = 0);
 *   - it sends no keepalives (the mptd it talks to runs with KeepaliveInterval=0).
 *
 *   orig-peer TUNNAME PORT LOCAL_ADDRESS REMOTE_ADDRESS [LOCAL_ADDRESS REMOTE_ADDRESS ...]
 *
 * IPv4 paths. It creates the TUN device (the caller configures it with ip) and runs until SIGTERM,
 * then prints one line per path: "path N: received D datagrams, B bytes". The kernel counts what
 * overflowed the receive buffers (Udp RcvbufErrors in the namespace's /proc/net/snmp).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define PATHS_MAX 8
#define RX_BUF 1600 /* the original's receive buffer: longer datagrams are cut off */

typedef struct OrigPath {
        int fd;
        struct sockaddr_in remote;
        atomic_ulong datagrams, bytes;
} OrigPath;

static int tun;
static OrigPath paths[PATHS_MAX];
static unsigned n_paths;

static void *rx_thread(void *arg) {
        OrigPath *p = arg;
        uint8_t buf[RX_BUF];

        for (;;) {
                ssize_t n = recvfrom(p->fd, buf, sizeof buf, 0, NULL, NULL);
                size_t gre;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        perror("orig-peer: recvfrom");
                        exit(1);
                }
                if (n < 8)
                        continue;
                atomic_fetch_add(&p->datagrams, 1);
                atomic_fetch_add(&p->bytes, (unsigned long) n);
                gre = (buf[0] & 0x10) ? 8 : 4;
                if ((size_t) n <= gre || buf[gre] >= 0xA0)
                        continue; /* control: the original acts on keepalives only */
                (void) write(tun, buf + gre, (size_t) n - gre);
        }
        return NULL;
}

static void *tx_thread(void *arg) {
        static uint8_t buf[65536];
        unsigned next = 0;

        (void) arg;
        for (;;) {
                ssize_t n = read(tun, buf + 4, sizeof buf - 4);
                OrigPath *p;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        perror("orig-peer: read");
                        exit(1);
                }
                if (n < 8)
                        continue;
                buf[0] = buf[1] = 0;
                buf[2] = (buf[4] >> 4) == 6 ? 0x86 : 0x08;
                buf[3] = (buf[4] >> 4) == 6 ? 0xdd : 0x00;
                p = &paths[next++ % n_paths];
                (void) sendto(p->fd, buf, (size_t) n + 4, 0, (struct sockaddr *) &p->remote, sizeof p->remote);
        }
        return NULL;
}

int main(int argc, char *argv[]) {
        struct ifreq ifr = {};
        pthread_t th;
        sigset_t mask;
        int sig, port;

        if (argc < 5 || (argc - 3) % 2 != 0 || (unsigned) (argc - 3) / 2 > PATHS_MAX) {
                fprintf(stderr, "Usage: orig-peer TUNNAME PORT LOCAL_ADDRESS REMOTE_ADDRESS [LOCAL REMOTE ...]\n");
                return 2;
        }
        port = atoi(argv[2]);

        /* SIGTERM is waited for in main; the threads must not take it. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        pthread_sigmask(SIG_BLOCK, &mask, NULL);

        tun = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
        if (tun < 0) {
                perror("orig-peer: /dev/net/tun");
                return 1;
        }
        ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", argv[1]);
        if (ioctl(tun, TUNSETIFF, &ifr) < 0) {
                perror("orig-peer: TUNSETIFF");
                return 1;
        }

        for (int i = 3; i + 1 < argc; i += 2) {
                OrigPath *p = &paths[n_paths++];
                struct sockaddr_in local = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port) };

                p->remote = (struct sockaddr_in) { .sin_family = AF_INET, .sin_port = htons((uint16_t) port) };
                if (inet_pton(AF_INET, argv[i], &local.sin_addr) != 1 ||
                    inet_pton(AF_INET, argv[i + 1], &p->remote.sin_addr) != 1) {
                        fprintf(stderr, "orig-peer: bad IPv4 address '%s' or '%s'\n", argv[i], argv[i + 1]);
                        return 2;
                }
                /* The kernel's default receive buffer: no SO_RCVBUF (ORIG_PEER_RCVBUF=BYTES sets
                 * one, to check that a test notices a receiver that overflows). */
                p->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (p->fd < 0 || bind(p->fd, (struct sockaddr *) &local, sizeof local) < 0) {
                        perror("orig-peer: UDP socket");
                        return 1;
                }
                if (getenv("ORIG_PEER_RCVBUF")) {
                        int size = atoi(getenv("ORIG_PEER_RCVBUF"));
                        (void) setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
                }
                if (pthread_create(&th, NULL, rx_thread, p) != 0) {
                        fprintf(stderr, "orig-peer: cannot start a thread\n");
                        return 1;
                }
        }
        if (pthread_create(&th, NULL, tx_thread, NULL) != 0) {
                fprintf(stderr, "orig-peer: cannot start a thread\n");
                return 1;
        }

        fprintf(stderr, "orig-peer: %u paths on port %d\n", n_paths, port);
        (void) sigwait(&mask, &sig);
        for (unsigned i = 0; i < n_paths; i++)
                printf("path %u: received %lu datagrams, %lu bytes\n", i, atomic_load(&paths[i].datagrams),
                       atomic_load(&paths[i].bytes));
        fflush(stdout);
        return 0;
}
