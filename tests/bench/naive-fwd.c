/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * naive-fwd: a deliberately naive point-to-point tunnel, the floor that tests/bench/compare holds
 * mpt against. It is what a first attempt at a userspace tunnel looks like: one TUN queue (no
 * multi-queue, no vnet header, so no GSO/GRO), one UDP socket, poll() on both, and for every
 * packet one read() + one sendto() out and one recvfrom() + one write() in. Each packet carries
 * a 4-byte GRE header (RFC 2784: no checksum, key or sequence number; protocol type from the IP
 * version), i.e. GRE-in-UDP like mpt's, with no sequence number.
 *
 *   naive-fwd TUNNAME LOCAL_ADDRESS PORT REMOTE_ADDRESS PORT
 *
 * It creates the TUN device (the caller configures its addresses, MTU and state with ip) and runs
 * until it is killed. Not part of mpt; built by tests/bench/compare with cc into its temp dir.
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define GRE_HEADER 4
#define BUF_SIZE 65536

static int resolve(const char *addr, const char *port, struct sockaddr_storage *ret, socklen_t *ret_len) {
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM,
                                  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
        struct addrinfo *ai = NULL;
        int r;

        r = getaddrinfo(addr, port, &hints, &ai);
        if (r != 0) {
                fprintf(stderr, "naive-fwd: bad address '%s' port '%s': %s\n", addr, port, gai_strerror(r));
                return -1;
        }
        memcpy(ret, ai->ai_addr, ai->ai_addrlen);
        *ret_len = ai->ai_addrlen;
        freeaddrinfo(ai);
        return 0;
}

int main(int argc, char *argv[]) {
        static uint8_t out[BUF_SIZE], in[BUF_SIZE];
        struct sockaddr_storage local, remote;
        socklen_t local_len, remote_len;
        struct ifreq ifr = {};
        int tun, udp;

        if (argc != 6) {
                fprintf(stderr, "Usage: naive-fwd TUNNAME LOCAL_ADDRESS PORT REMOTE_ADDRESS PORT\n");
                return 2;
        }
        if (resolve(argv[2], argv[3], &local, &local_len) < 0 ||
            resolve(argv[4], argv[5], &remote, &remote_len) < 0)
                return 2;

        tun = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
        if (tun < 0) {
                perror("naive-fwd: /dev/net/tun");
                return 1;
        }
        ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", argv[1]);
        if (ioctl(tun, TUNSETIFF, &ifr) < 0) {
                perror("naive-fwd: TUNSETIFF");
                return 1;
        }

        udp = socket(local.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (udp < 0 || bind(udp, (struct sockaddr *) &local, local_len) < 0) {
                perror("naive-fwd: UDP socket");
                return 1;
        }

        for (;;) {
                struct pollfd fds[2] = { { .fd = tun, .events = POLLIN }, { .fd = udp, .events = POLLIN } };
                ssize_t n;

                if (poll(fds, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        perror("naive-fwd: poll");
                        return 1;
                }

                if (fds[0].revents & POLLIN) {
                        /* TUN -> UDP: GRE header in front of the packet, same buffer. */
                        n = read(tun, out + GRE_HEADER, sizeof(out) - GRE_HEADER);
                        if (n > 0) {
                                uint8_t version = out[GRE_HEADER] >> 4;

                                out[0] = out[1] = 0;           /* no flags, version 0 */
                                out[2] = version == 6 ? 0x86 : 0x08;
                                out[3] = version == 6 ? 0xdd : 0x00;
                                /* A full socket buffer drops the packet, as a wire would. */
                                (void) sendto(udp, out, n + GRE_HEADER, 0, (struct sockaddr *) &remote, remote_len);
                        }
                }

                if (fds[1].revents & POLLIN) {
                        /* UDP -> TUN: only packets with a bare 4-byte GRE header. */
                        n = recvfrom(udp, in, sizeof(in), 0, NULL, NULL);
                        if (n > GRE_HEADER && in[0] == 0 && in[1] == 0)
                                (void) write(tun, in + GRE_HEADER, n - GRE_HEADER);
                }
        }
}
