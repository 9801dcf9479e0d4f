/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* mpt-inject: sends bad datagrams at a running mptd's data port, for secure-inject.sh.
 *
 *   mpt-inject --to ADDR:PORT [--spoof ADDR:PORT] [--key BASE64 --epoch HEX]
 *              [--own-epoch HEX] [--count N] [--counter N] [--path-id N] [--interval-us N] CASE
 * (--key and --epoch are needed by every case but garbage, compat, feedback and repair.)
 *
 * CASE (and the drop reason mptd must count for it in secure mode):
 *   garbage      100 random bytes, first byte FF                        bad-version
 *   truncated    E1 and 15 more bytes                                    too-short
 *   oversized    60000 bytes: a plausible header (--epoch), random rest   auth-failed
 *   bad-version  a well-formed datagram but version byte E3              bad-version
 *   bad-header   a reserved flag bit set                                 bad-header
 *   compat       plain GRE-in-UDP with an ICMP echo request (compat mode) compat-packet
 *   feedback     a well-formed feedback frame, plain GRE-in-UDP: compat-packet in secure mode,
 *                bad-feedback in compat mode (no feedback without authentication)
 *   feedback-bad a feedback frame of version 9, sealed with --key           bad-feedback
 *   repair       a well-formed repair request, plain GRE-in-UDP: compat-packet in secure mode,
 *                bad-repair in compat mode (nothing is sent again without authentication)
 *   repair-bad   a repair request of version 9, sealed with --key (path id 58) bad-repair
 *   wrong-key    sealed with a random key under --epoch                   auth-failed
 *   stale        sealed with --key under --epoch minus 1                  stale-epoch
 *   own-epoch    sealed with --key under --own-epoch (the receiver's)     own-epoch
 *   replay       sealed with --key under --epoch, path id 63, counter --counter, carrying a GRE
 *                frame of an unknown protocol type: sent --count times, the first copy counts as
 *                gre-protocol (authentic, but nothing for the TUN device), every further copy as
 *                replayed
 *   moved        sealed with --key under --epoch as the real sender would seal its path --path-id
 *                (default 1; counters from --counter on), carrying the frame of replay: when it
 *                arrives at another path than the one that id is bound to   path-mismatch
 *   new-epochs   sealed with a random key, each under a new epoch after --epoch (--epoch + 1,
 *                + 2, ...): a flood that claims ever newer epochs of the sender. Each costs the
 *                receiver a key derivation, as long as the rate limit allows   auth-failed, and
 *                beyond that                                                  epoch-limited
 * Every case but replay is sent --count times (default 1), each a fresh datagram, --interval-us
 * apart (default 2000).
 *
 * --spoof sends through a raw IPv4 socket with the given source address and port (the real
 * other end's, so that the receiver takes the datagrams for its path's and not for a move);
 * without it, from an ordinary UDP socket on an ephemeral port. The key is the tunnel's, as
 * an attacker would not have it: it is needed to make the datagrams that must get past the
 * tag (replay) or to show that a check comes before the tag (stale, own-epoch). */

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "profile.h"
#include "secure.h"
#include "wire.h"

#define BUF_MAX 65536

static int parse_endpoint(const char *s, struct sockaddr_in *ret) {
        char host[64];
        const char *colon = strrchr(s, ':');

        if (!colon || (size_t) (colon - s) >= sizeof host)
                return -1;
        memcpy(host, s, (size_t) (colon - s));
        host[colon - s] = 0;
        *ret = (struct sockaddr_in) { .sin_family = AF_INET, .sin_port = htons((uint16_t) atoi(colon + 1)) };
        return inet_pton(AF_INET, host, &ret->sin_addr) == 1 ? 0 : -1;
}

static uint16_t ip_checksum(const void *data, size_t len) {
        const uint8_t *p = data;
        uint32_t sum = 0;

        for (size_t i = 0; i + 1 < len; i += 2)
                sum += (uint32_t) (p[i] << 8 | p[i + 1]);
        if (len & 1)
                sum += (uint32_t) p[len - 1] << 8;
        while (sum >> 16)
                sum = (sum & 0xffff) + (sum >> 16);
        return (uint16_t) ~sum;
}

static int send_one(int fd, bool spoof, const struct sockaddr_in *from, const struct sockaddr_in *to,
                    const uint8_t *data, size_t len) {
        static uint8_t pkt[BUF_MAX + 64];
        struct iphdr *ip = (struct iphdr *) pkt;
        struct udphdr *udp = (struct udphdr *) (pkt + sizeof *ip);

        if (!spoof)
                return sendto(fd, data, len, 0, (const struct sockaddr *) to, sizeof *to) < 0 ? -1 : 0;
        if (len + sizeof *ip + sizeof *udp > sizeof pkt)
                return -1;
        memset(pkt, 0, sizeof *ip + sizeof *udp);
        ip->version = 4;
        ip->ihl = 5;
        ip->ttl = 64;
        ip->protocol = IPPROTO_UDP;
        ip->tot_len = htons((uint16_t) (sizeof *ip + sizeof *udp + len));
        ip->saddr = from->sin_addr.s_addr;
        ip->daddr = to->sin_addr.s_addr;
        ip->check = htons(ip_checksum(ip, sizeof *ip));
        udp->source = from->sin_port;
        udp->dest = to->sin_port;
        udp->len = htons((uint16_t) (sizeof *udp + len));
        udp->check = 0; /* none (allowed over IPv4) */
        memcpy(pkt + sizeof *ip + sizeof *udp, data, len);
        return sendto(fd, pkt, sizeof *ip + sizeof *udp + len, 0, (const struct sockaddr *) to, sizeof *to) < 0 ? -1 : 0;
}

/* A feedback frame claiming that path 0 delivered a lot; version: its version byte. */
static size_t feedback_frame(uint8_t *buf, size_t size, uint8_t version) {
        MptFeedback fb = { .now = 1000000, .n = 1 };
        size_t len;

        fb.entries[0] = (MptFeedbackEntry) { .path_id = 0, .packets = 1000, .bytes = 1u << 30, .marker = 1, .arrival = 1000000, .peak_rate = UINT64_C(1) << 40 };
        len = mpt_feedback_encode(buf, size, MPT_ETH_P_IP, &fb);
        buf[5] = version;
        return len;
}

/* A repair request for counters 1..64 of path 0, lane 0; version: its version byte. */
static size_t repair_frame(uint8_t *buf, size_t size, uint8_t version) {
        MptRepair r = { .n = 1 };
        size_t len;

        r.entries[0] = (MptRepairEntry) { .path_id = 0, .lane = 0, .count = MPT_REPAIR_COUNT_MAX, .first = 1 };
        len = mpt_repair_encode(buf, size, MPT_ETH_P_IP, &r);
        buf[5] = version;
        return len;
}

/* A GRE header (no flags) and an ICMP echo request, as compat mode would carry it. */
static size_t compat_frame(uint8_t *buf, uint16_t protocol) {
        static const uint8_t icmp[] = {
                0x45, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x01, 0x00, 0x00, /* IPv4 header */
                0x0a, 0x4d, 0x00, 0x01, 0x0a, 0x4d, 0x00, 0x02,                         /* 10.77.0.1 -> .2 */
                0x08, 0x00, 0xf7, 0xff, 0x00, 0x00, 0x00, 0x00,                         /* echo request */
        };
        uint16_t sum;

        buf[0] = 0;
        buf[1] = 0;
        buf[2] = (uint8_t) (protocol >> 8);
        buf[3] = (uint8_t) protocol;
        memcpy(buf + 4, icmp, sizeof icmp);
        sum = ip_checksum(buf + 4, 20);
        buf[4 + 10] = (uint8_t) (sum >> 8);
        buf[4 + 11] = (uint8_t) sum;
        return 4 + sizeof icmp;
}

static void random_fill(uint8_t *p, size_t n) {
        while (n > 0) {
                ssize_t k = getrandom(p, n, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        perror("mpt-inject: getrandom");
                        exit(1);
                }
                p += k;
                n -= (size_t) k;
        }
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "to", required_argument, NULL, 't' },         { "spoof", required_argument, NULL, 's' },
                { "key", required_argument, NULL, 'k' },        { "epoch", required_argument, NULL, 'e' },
                { "own-epoch", required_argument, NULL, 'o' },  { "count", required_argument, NULL, 'n' },
                { "counter", required_argument, NULL, 'c' },    { "path-id", required_argument, NULL, 'p' },
                { "interval-us", required_argument, NULL, 'i' }, {}
        };
        static uint8_t buf[BUF_MAX];
        struct sockaddr_in to = {}, from = {};
        bool spoof = false, have_to = false;
        uint64_t epoch = 0, own_epoch = 0, counter = 1;
        MptSecureKeys keys = {};
        MptKey psk = {};
        unsigned count = 1, path_id = 1, interval_us = 2000;
        const char *what;
        int c, fd;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 't':
                        have_to = parse_endpoint(optarg, &to) == 0;
                        break;
                case 's':
                        spoof = parse_endpoint(optarg, &from) == 0;
                        if (!spoof) {
                                fprintf(stderr, "mpt-inject: bad --spoof '%s'\n", optarg);
                                return 2;
                        }
                        break;
                case 'k':
                        if (mpt_key_from_base64(optarg, &psk) < 0) {
                                fprintf(stderr, "mpt-inject: bad --key\n");
                                return 2;
                        }
                        break;
                case 'e':
                        epoch = strtoull(optarg, NULL, 16);
                        break;
                case 'o':
                        own_epoch = strtoull(optarg, NULL, 16);
                        break;
                case 'n':
                        count = (unsigned) atoi(optarg);
                        break;
                case 'c':
                        counter = strtoull(optarg, NULL, 10);
                        break;
                case 'i':
                        interval_us = (unsigned) atoi(optarg);
                        break;
                case 'p':
                        path_id = (unsigned) atoi(optarg);
                        if (path_id >= MPT_PATHS_MAX) {
                                fprintf(stderr, "mpt-inject: bad --path-id '%s'\n", optarg);
                                return 2;
                        }
                        break;
                default:
                        return 2;
                }
        if (optind + 1 != argc || !have_to ||
            ((!psk.set || epoch == 0) && !(optind < argc && (streq(argv[optind], "compat") || streq(argv[optind], "feedback") ||
                                                              streq(argv[optind], "repair") ||
                                                              streq(argv[optind], "garbage"))))) {
                fprintf(stderr, "usage: mpt-inject --to ADDR:PORT [--spoof ADDR:PORT] [--key BASE64 --epoch HEX] "
                                "[--own-epoch HEX] [--count N] [--counter N] [--path-id N] "
                                "[--interval-us N] CASE\n");
                return 2;
        }
        what = argv[optind];
        if (mpt_secure_init() < 0)
                return 1;
        fd = spoof ? socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW) : socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                perror("mpt-inject: socket");
                return 1;
        }

        for (unsigned i = 0; i < count; i++) {
                size_t len = 0, plain;

                if (streq(what, "garbage")) {
                        len = 100;
                        random_fill(buf, len);
                        buf[0] = 0xff;
                } else if (streq(what, "truncated")) {
                        len = 16;
                        random_fill(buf, len);
                        buf[0] = MPT_SECURE_V2_TRANSPORT;
                } else if (streq(what, "oversized")) {
                        len = 60000;
                        random_fill(buf, len);
                        if (mpt_secure_derive(psk.bytes, epoch, false, &keys) < 0)
                                return 1;
                        /* A plausible header, then anything: the tag cannot match. */
                        mpt_secure_seal(buf, 8, &keys, MPT_CIPHER_CHACHA20_POLY1305, 0,
                                        (MptSecureSender) { .path_id = 62, .counter = counter + i });
                } else if (streq(what, "bad-version") || streq(what, "bad-header") || streq(what, "wrong-key") ||
                           streq(what, "stale") || streq(what, "own-epoch") || streq(what, "replay") ||
                           streq(what, "moved") || streq(what, "new-epochs")) {
                        uint64_t e = epoch;
                        uint16_t path = 61;
                        if (streq(what, "wrong-key") || streq(what, "new-epochs"))
                                random_fill(psk.bytes, sizeof psk.bytes);
                        if (streq(what, "new-epochs"))
                                e = epoch + 1 + i;
                        if (streq(what, "stale"))
                                e = epoch - 1;
                        if (streq(what, "own-epoch")) {
                                if (own_epoch == 0) {
                                        fprintf(stderr, "mpt-inject: own-epoch needs --own-epoch\n");
                                        return 2;
                                }
                                e = own_epoch;
                        }
                        if (streq(what, "replay"))
                                path = 63;
                        if (streq(what, "moved"))
                                path = (uint16_t) path_id;
                        /* GRE of an experimental protocol type (88B5): even when authentic,
                         * nothing for the TUN device. */
                        plain = compat_frame(buf + MPT_SECURE_HEADER_SIZE, 0x88b5);
                        if (mpt_secure_derive(psk.bytes, e, false, &keys) < 0)
                                return 1;
                        len = mpt_secure_seal(buf, plain, &keys, MPT_CIPHER_CHACHA20_POLY1305, 0,
                                              (MptSecureSender) {
                                                      .path_id = (uint8_t) path,
                                                      .counter = streq(what, "replay") ? counter : counter + i,
                                              });
                        if (streq(what, "bad-version"))
                                buf[0] = MPT_SECURE_V1_CHACHA; /* an older mptd's version 1 */
                        if (streq(what, "bad-header"))
                                buf[1] = 0x80;
                } else if (streq(what, "compat")) {
                        len = compat_frame(buf, MPT_ETH_P_IP);
                } else if (streq(what, "feedback")) {
                        len = feedback_frame(buf, sizeof buf, MPT_FEEDBACK_VERSION);
                } else if (streq(what, "feedback-bad")) {
                        plain = feedback_frame(buf + MPT_SECURE_HEADER_SIZE, sizeof buf - MPT_SECURE_HEADER_SIZE - 64, 9);
                        if (mpt_secure_derive(psk.bytes, epoch, false, &keys) < 0)
                                return 1;
                        len = mpt_secure_seal(buf, plain, &keys, MPT_CIPHER_CHACHA20_POLY1305, 0,
                                              (MptSecureSender) { .path_id = 60, .counter = counter + i });
                } else if (streq(what, "repair")) {
                        len = repair_frame(buf, sizeof buf, MPT_REPAIR_VERSION);
                } else if (streq(what, "repair-bad")) {
                        plain = repair_frame(buf + MPT_SECURE_HEADER_SIZE, sizeof buf - MPT_SECURE_HEADER_SIZE - 64, 9);
                        if (mpt_secure_derive(psk.bytes, epoch, false, &keys) < 0)
                                return 1;
                        len = mpt_secure_seal(buf, plain, &keys, MPT_CIPHER_CHACHA20_POLY1305, 0,
                                              (MptSecureSender) { .path_id = 58, .counter = counter + i });
                } else {
                        fprintf(stderr, "mpt-inject: unknown case '%s'\n", what);
                        return 2;
                }
                if (send_one(fd, spoof, &from, &to, buf, len) < 0) {
                        perror("mpt-inject: send");
                        return 1;
                }
                /* No burst: the receiver's socket buffer must not be what drops them. */
                if (interval_us > 0)
                        usleep(interval_us);
        }
        mpt_secure_keys_wipe(&keys);
        explicit_bzero(&psk, sizeof psk);
        close(fd);
        return 0;
}
