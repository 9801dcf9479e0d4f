/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <netinet/in.h>

#include "offload.h"
#include "wire.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>

/* Everything below is checked against values computed here independently of offload.c: a byte-by-byte
 * RFC 1071 checksum, and packets assembled field by field. */

#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_PSH 0x08
#define F_ACK 0x10
#define F_URG 0x20
#define F_ECE 0x40
#define F_CWR 0x80

#define PATTERN 0xa5 /* fills the headers scratch area: what offload_segment() must not touch */

static void put16(uint8_t *p, uint16_t v) {
        p[0] = (uint8_t) (v >> 8);
        p[1] = (uint8_t) v;
}

static void put32(uint8_t *p, uint32_t v) {
        put16(p, (uint16_t) (v >> 16));
        put16(p + 2, (uint16_t) v);
}

static uint16_t get16(const uint8_t *p) {
        return (uint16_t) (p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p) {
        return (uint32_t) get16(p) << 16 | get16(p + 2);
}

static uint8_t *payload_new(size_t len, uint32_t seed) {
        g_autoptr(GRand) rng = g_rand_new_with_seed(seed);
        uint8_t *p = g_malloc(MAX(len, 1u));

        for (size_t i = 0; i < len; i++)
                p[i] = (uint8_t) g_rand_int(rng);
        return p;
}

/* ---- the reference: RFC 1071, byte by byte ---- */

/* Adds data to a sum of big-endian 16-bit words, an odd last byte being the high half of a word. The
 * sum is kept wide and folded only at the end. Chaining works for data of even length. */
static uint64_t ref_add(uint64_t acc, const uint8_t *p, size_t len) {
        for (size_t i = 0; i < len; i++)
                acc += i % 2 == 0 ? (uint64_t) p[i] << 8 : p[i];
        return acc;
}

static uint16_t ref_fold(uint64_t acc) {
        while (acc >> 16)
                acc = (acc & 0xffff) + (acc >> 16);
        return (uint16_t) acc;
}

static uint16_t ref_checksum(const uint8_t *p, size_t len) {
        return (uint16_t) ~ref_fold(ref_add(0, p, len));
}

/* The pseudo header as bytes (RFC 9293 3.1, RFC 8200 8.1). */
static size_t ref_pseudo(int family, const uint8_t *src, const uint8_t *dst, uint8_t proto, uint32_t len,
                         uint8_t out[static 40]) {
        memset(out, 0, 40);
        if (family == AF_INET) {
                memcpy(out, src, 4);
                memcpy(out + 4, dst, 4);
                out[9] = proto;
                put16(out + 10, (uint16_t) len);
                return 12;
        }
        memcpy(out, src, 16);
        memcpy(out + 16, dst, 16);
        put32(out + 32, len);
        out[39] = proto;
        return 40;
}

/* The IP header of a packet built here (no IPv6 extension headers). */
static size_t ip_header(const uint8_t *pkt, int *ret_family, uint8_t *ret_proto, const uint8_t **ret_src,
                        const uint8_t **ret_dst) {
        if (pkt[0] >> 4 == 4) {
                *ret_family = AF_INET;
                *ret_proto = pkt[9];
                *ret_src = pkt + 12;
                *ret_dst = pkt + 16;
                return (size_t) (pkt[0] & 0x0f) * 4;
        }
        g_assert_cmpuint(pkt[0] >> 4, ==, 6);
        *ret_family = AF_INET6;
        *ret_proto = pkt[6];
        *ret_src = pkt + 8;
        *ret_dst = pkt + 24;
        return 40;
}

/* The one's complement sum over pseudo header and transport segment, checksum field included: 0xffff
 * when the checksum is right. */
static uint16_t ref_l4_sum(const uint8_t *pkt, size_t len) {
        const uint8_t *src, *dst;
        uint8_t pseudo[40], proto;
        int family;
        size_t ip_len = ip_header(pkt, &family, &proto, &src, &dst), n;

        n = ref_pseudo(family, src, dst, proto, (uint32_t) (len - ip_len), pseudo);
        return ref_fold(ref_add(ref_add(0, pseudo, n), pkt + ip_len, len - ip_len));
}

/* ---- packets built field by field ---- */

typedef enum CsumMode {
        CSUM_FULL,    /* valid transport checksum (UDP: 0 sent as ffff) */
        CSUM_PARTIAL, /* the pseudo-header sum, not complemented, as the kernel leaves it (NEEDS_CSUM) */
        CSUM_GARBAGE,
} CsumMode;

typedef struct Pkt {
        int family;
        uint8_t proto;       /* IPPROTO_TCP or IPPROTO_UDP */
        uint8_t src[16], dst[16];
        uint8_t tos, ttl;    /* IPv6: traffic class, hop limit */
        uint32_t flow_label; /* IPv6 */
        uint16_t ip_id;      /* IPv4 */
        uint16_t frag;       /* IPv4 flags and fragment offset */
        size_t ip_opts_len;  /* IPv4, multiple of 4 */
        uint16_t sport, dport;
        uint32_t seq, ack;   /* TCP */
        uint8_t flags;
        uint8_t th12_low;    /* TCP: the low nibble of byte 12 (reserved, AE) */
        uint16_t window, urg;
        size_t tcp_opts_len; /* multiple of 4: NOP NOP timestamps, then experimental options */
        bool opts_eol;       /* fill after the timestamps with zeros (end of option list) instead */
        uint32_t tsval;
        const uint8_t *payload;
        size_t payload_len;
} Pkt;

static Pkt pkt_base(int family, uint8_t proto, const uint8_t *payload, size_t payload_len) {
        static const uint8_t src4[4] = { 192, 0, 2, 1 }, dst4[4] = { 198, 51, 100, 207 };
        static const uint8_t src6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0xf0, 0x0d, [14] = 0xab, [15] = 0x01 };
        static const uint8_t dst6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, [8] = 0xfe, [15] = 0x02 };
        Pkt p = {
                .family = family,
                .proto = proto,
                .tos = 0x02, /* ECT(0) */
                .ttl = 64,
                .flow_label = 0x9abcd,
                .ip_id = 0x1234,
                .frag = 0x4000, /* DF */
                .sport = 40000,
                .dport = 443,
                .seq = 0x10000000,
                .ack = 0xa0b0c0d0,
                .flags = F_ACK,
                .window = 502,
                .tcp_opts_len = 12,
                .tsval = 0x01020304,
                .payload = payload,
                .payload_len = payload_len,
        };

        if (family == AF_INET) {
                memcpy(p.src, src4, 4);
                memcpy(p.dst, dst4, 4);
        } else {
                memcpy(p.src, src6, 16);
                memcpy(p.dst, dst6, 16);
        }
        return p;
}

static size_t pkt_ip_len(const Pkt *p) {
        return p->family == AF_INET ? 20 + p->ip_opts_len : 40;
}

static size_t pkt_hdr_len(const Pkt *p) {
        return pkt_ip_len(p) + (p->proto == IPPROTO_TCP ? 20 + p->tcp_opts_len : 8);
}

static size_t pkt_len(const Pkt *p) {
        return pkt_hdr_len(p) + p->payload_len;
}

/* Writes the packet into buf (at least pkt_len() bytes). */
static size_t pkt_write(const Pkt *p, CsumMode mode, uint8_t *buf) {
        size_t ip_len = pkt_ip_len(p), hdr_len = pkt_hdr_len(p), len = pkt_len(p), l4_len = len - ip_len, n;
        uint8_t *th = buf + ip_len, *field, pseudo[40];
        uint16_t c;

        g_assert_cmpuint(p->ip_opts_len % 4, ==, 0);
        g_assert_cmpuint(p->ip_opts_len, <=, 40);
        g_assert_cmpuint(p->tcp_opts_len % 4, ==, 0);
        g_assert_cmpuint(p->tcp_opts_len, <=, 40);
        memset(buf, 0, hdr_len);
        if (p->family == AF_INET) {
                g_assert_cmpuint(len, <=, 0xffff);
                buf[0] = (uint8_t) (0x40 | ip_len / 4);
                buf[1] = p->tos;
                put16(buf + 2, (uint16_t) len);
                put16(buf + 4, p->ip_id);
                put16(buf + 6, p->frag);
                buf[8] = p->ttl;
                buf[9] = p->proto;
                memcpy(buf + 12, p->src, 4);
                memcpy(buf + 16, p->dst, 4);
                for (size_t i = 20; i < ip_len; i += 4) {
                        /* Router alert first, then NOPs. */
                        static const uint8_t ra[4] = { 0x94, 0x04, 0x00, 0x00 }, nops[4] = { 1, 1, 1, 1 };
                        memcpy(buf + i, i == 20 ? ra : nops, 4);
                }
                put16(buf + 10, ref_checksum(buf, ip_len));
        } else {
                g_assert_cmpuint(len - 40, <=, 0xffff);
                put32(buf, 6u << 28 | (uint32_t) p->tos << 20 | (p->flow_label & 0xfffff));
                put16(buf + 4, (uint16_t) (len - 40));
                buf[6] = p->proto;
                buf[7] = p->ttl;
                memcpy(buf + 8, p->src, 16);
                memcpy(buf + 24, p->dst, 16);
        }

        put16(th, p->sport);
        put16(th + 2, p->dport);
        if (p->proto == IPPROTO_TCP) {
                uint8_t *o = th + 20;
                size_t i = 0;

                put32(th + 4, p->seq);
                put32(th + 8, p->ack);
                th[12] = (uint8_t) ((5 + p->tcp_opts_len / 4) << 4 | (p->th12_low & 0x0f));
                th[13] = p->flags;
                put16(th + 14, p->window);
                put16(th + 18, p->urg);
                if (p->tcp_opts_len >= 12) {
                        o[0] = o[1] = 1;
                        o[2] = 8;
                        o[3] = 10;
                        put32(o + 4, p->tsval);
                        put32(o + 8, 0xcafef00d);
                        i = 12;
                }
                for (; i < p->tcp_opts_len && !p->opts_eol; i += 4) {
                        o[i] = 254; /* experimental, RFC 4727 */
                        o[i + 1] = 4;
                        o[i + 2] = (uint8_t) i;
                        o[i + 3] = (uint8_t) p->tsval;
                }
                field = th + 16;
        } else {
                put16(th + 4, (uint16_t) l4_len);
                field = th + 6;
        }
        if (p->payload_len > 0)
                memcpy(buf + hdr_len, p->payload, p->payload_len);

        n = ref_pseudo(p->family, p->src, p->dst, p->proto, (uint32_t) l4_len, pseudo);
        switch (mode) {
        case CSUM_FULL:
                c = (uint16_t) ~ref_fold(ref_add(ref_add(0, pseudo, n), th, l4_len));
                if (c == 0 && p->proto == IPPROTO_UDP)
                        c = 0xffff;
                break;
        case CSUM_PARTIAL:
                c = ref_fold(ref_add(0, pseudo, n));
                break;
        default:
                c = 0xdead;
        }
        put16(field, c);
        return len;
}

/* The packet in a heap block of exactly its size, so that AddressSanitizer sees any over-read. */
static uint8_t *pkt_new(const Pkt *p, CsumMode mode, size_t *ret_len) {
        uint8_t *buf = g_malloc(pkt_len(p));

        *ret_len = pkt_write(p, mode, buf);
        return buf;
}

static GBytes *pkt_bytes(const Pkt *p) {
        size_t len;
        uint8_t *buf = pkt_new(p, CSUM_FULL, &len);

        return g_bytes_new_take(buf, len);
}

/* Makes the checksum of the UDP datagram carrying payload[0..len) (len >= 2) come out as 0 before the
 * "0 means none" rule, by choosing its first two bytes. */
static void udp_force_zero(const Pkt *p, uint8_t *payload, size_t len) {
        uint8_t pseudo[40], uh[8] = {};
        size_t n = ref_pseudo(p->family, p->src, p->dst, IPPROTO_UDP, (uint32_t) (8 + len), pseudo);
        uint16_t s;

        g_assert_cmpuint(len, >=, 2);
        put16(uh, p->sport);
        put16(uh + 2, p->dport);
        put16(uh + 4, (uint16_t) (8 + len));
        payload[0] = payload[1] = 0;
        s = ref_fold(ref_add(ref_add(ref_add(0, pseudo, n), uh, 8), payload, len));
        put16(payload, (uint16_t) (0xffff - s));
        g_assert_cmphex((uint16_t) ~ref_fold(ref_add(ref_add(ref_add(0, pseudo, n), uh, 8), payload, len)), ==, 0);
}

/* ---- csum_add(), csum_fold(), csum_pseudo() ---- */

static void test_csum_rfc1071(void) {
        /* RFC 1071 section 3: the sum of 00 01 f2 03 f4 f5 f6 f7 is ddf2, the checksum its complement. */
        static const uint8_t ex[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };

        /* The reference itself first. */
        g_assert_cmphex(ref_fold(ref_add(0, ex, sizeof ex)), ==, 0xddf2);
        g_assert_cmphex(ref_checksum(ex, sizeof ex), ==, 0x220d);

        g_assert_cmphex(csum_fold(csum_add(0, ex, sizeof ex)), ==, 0x220d);
        /* In two even pieces, and in words. */
        g_assert_cmphex(csum_fold(csum_add(csum_add(0, ex, 2), ex + 2, 6)), ==, 0x220d);
        g_assert_cmphex(csum_fold(csum_add(csum_add(csum_add(csum_add(0, ex, 2), ex + 2, 2), ex + 4, 2), ex + 6, 2)),
                        ==, 0x220d);
        /* Odd lengths: the last byte is the high half of a word. */
        g_assert_cmphex(csum_fold(csum_add(0, ex, 7)), ==, (uint16_t) ~ref_fold(0xddf2 - 0xf7));
        g_assert_cmphex(csum_fold(csum_add(0, (const uint8_t[]) { 0x01 }, 1)), ==, 0xfeff);
        g_assert_cmphex(csum_fold(csum_add(0, ex, 0)), ==, 0xffff);
        g_assert_cmphex(csum_fold(0), ==, 0xffff);
}

static void test_csum_alignment(void) {
        g_autofree uint8_t *data = payload_new(8 + 300, 1071);

        /* Every start offset 0..7 and length 0..300, each time from a heap block that ends where the
         * data ends (over-reads show under AddressSanitizer). */
        for (size_t off = 0; off < 8; off++)
                for (size_t len = 0; len <= 300; len++) {
                        g_autofree uint8_t *b = g_malloc(off + len + 1);
                        uint16_t want;

                        memcpy(b + off, data, len);
                        want = ref_checksum(b + off, len);
                        g_assert_cmphex(csum_fold(csum_add(0, b + off, len)), ==, want);
                        /* Chained over pieces of even length (the last may be odd). */
                        for (size_t k = 0; k <= len; k += 2)
                                g_assert_cmphex(csum_fold(csum_add(csum_add(0, b + off, k), b + off + k, len - k)), ==,
                                                want);
                        /* Three pieces, the middle one starting at an odd address. */
                        if (len >= 10)
                                g_assert_cmphex(csum_fold(csum_add(csum_add(csum_add(0, b + off, 2), b + off + 2, 6),
                                                                   b + off + 8, len - 8)),
                                                ==, want);
                }
}

static void test_csum_large(void) {
        static const size_t lens[] = { 1499, 1500, 9000, 65535, 65536 };
        g_autofree uint8_t *ones = g_malloc(65536);
        g_autofree uint8_t *rnd = payload_new(65536, 4242);
        g_autofree uint8_t *zeros = g_malloc0(65536);

        memset(ones, 0xff, 65536);
        for (size_t i = 0; i < G_N_ELEMENTS(lens); i++) {
                size_t len = lens[i];

                /* All ones: the most carries; folds to ffff, checksum 0. Odd length: ends in ff00. */
                g_assert_cmphex(csum_fold(csum_add(0, ones, len)), ==, ref_checksum(ones, len));
                g_assert_cmphex(csum_fold(csum_add(0, rnd, len)), ==, ref_checksum(rnd, len));
                g_assert_cmphex(csum_fold(csum_add(0, zeros, len)), ==, 0xffff);
                /* A running sum carried in. */
                g_assert_cmphex(csum_fold(csum_add(csum_add(0, rnd, 40), rnd + 40, len - 40)), ==,
                                ref_checksum(rnd, len));
        }
        g_assert_cmphex(csum_fold(csum_add(0, ones, 65536)), ==, 0);
}

static void test_csum_fold(void) {
        g_autofree uint8_t *rnd = payload_new(65536, 77);

        /* csum_fold() on sums made here, unfolded: native 16-bit words added up, the running sum as
         * offload.c keeps it (in native byte order, swapped when written out). */
        for (size_t len = 0; len <= 65536; len = len * 2 + 2) {
                uint32_t s = 0;

                for (size_t i = 0; i < len; i += 2) {
                        uint16_t w;
                        memcpy(&w, rnd + i, 2);
                        s += w;
                }
                g_assert_cmphex(csum_fold(s), ==, ref_checksum(rnd, len));
        }
        /* One word: a byte pair in memory order. */
        for (unsigned v = 0; v <= 0xffff; v += 0x0fed) {
                uint8_t b[2];
                uint16_t w;

                put16(b, (uint16_t) v);
                memcpy(&w, b, 2);
                g_assert_cmphex(csum_fold(w), ==, (uint16_t) ~v);
        }
}

static void test_csum_pseudo(void) {
        g_autoptr(GRand) rng = g_rand_new_with_seed(9293);
        g_autofree uint8_t *seg = payload_new(2000, 8200);
        static const uint32_t lens6[] = { 0, 8, 20, 1480, 65535, 65536, 70000, 0x01020304 };

        for (unsigned i = 0; i < 200; i++) {
                uint8_t src[16], dst[16], pseudo[40];
                uint8_t proto = i % 2 ? IPPROTO_UDP : IPPROTO_TCP;
                uint32_t len4 = g_rand_int_range(rng, 0, 0x10000);
                uint32_t len6 = i < G_N_ELEMENTS(lens6) ? lens6[i] : g_rand_int(rng);
                size_t n, seg_len = (size_t) g_rand_int_range(rng, 0, 2001);

                for (size_t k = 0; k < 16; k++) {
                        src[k] = (uint8_t) g_rand_int(rng);
                        dst[k] = (uint8_t) g_rand_int(rng);
                }
                if (i == 0) {
                        memset(src, 0xff, 16);
                        memset(dst, 0xff, 16);
                }

                n = ref_pseudo(AF_INET, src, dst, proto, len4, pseudo);
                g_assert_cmpuint(n, ==, 12);
                g_assert_cmphex(csum_fold(csum_pseudo(AF_INET, src, dst, proto, len4)), ==, ref_checksum(pseudo, n));
                /* Followed by a segment, as for a transport checksum. */
                g_assert_cmphex(csum_fold(csum_add(csum_pseudo(AF_INET, src, dst, proto, len4), seg, seg_len)), ==,
                                (uint16_t) ~ref_fold(ref_add(ref_add(0, pseudo, n), seg, seg_len)));

                n = ref_pseudo(AF_INET6, src, dst, proto, len6, pseudo);
                g_assert_cmpuint(n, ==, 40);
                g_assert_cmphex(csum_fold(csum_pseudo(AF_INET6, src, dst, proto, len6)), ==, ref_checksum(pseudo, n));
                g_assert_cmphex(csum_fold(csum_add(csum_pseudo(AF_INET6, src, dst, proto, len6), seg, seg_len)), ==,
                                (uint16_t) ~ref_fold(ref_add(ref_add(0, pseudo, n), seg, seg_len)));
        }
}

/* ---- offload_segment(): running it ---- */

typedef struct Run {
        uint8_t *pkt; /* exact size */
        size_t len;
        size_t headroom;
        size_t max_segs;
        uint8_t *scratch; /* OFFLOAD_SEGMENTS_MAX slots, filled with PATTERN */
        OffloadSegment *segs;
        int r;
} Run;

static size_t run_slot(const Run *run) {
        return OFFLOAD_HEADERS_MAX + run->headroom;
}

static void run_segment(Run *run, const struct virtio_net_hdr *vh, size_t mtu) {
        size_t scratch_size = OFFLOAD_SEGMENTS_MAX * run_slot(run);

        run->scratch = g_malloc(scratch_size);
        memset(run->scratch, PATTERN, scratch_size);
        run->segs = g_malloc(MAX(run->max_segs, 1u) * sizeof(OffloadSegment));
        memset(run->segs, 0x5a, MAX(run->max_segs, 1u) * sizeof(OffloadSegment));
        run->r = offload_segment(vh, run->pkt, run->len, mtu, run->scratch, run->headroom, run->segs, run->max_segs);
}

static void run_done(Run *run) {
        g_free(run->pkt);
        g_free(run->scratch);
        g_free(run->segs);
        *run = (Run) {};
}

/* Nothing in the scratch area but the headers of the n segments written there: the headroom in front
 * of each is the caller's. */
static void check_scratch(const Run *run, size_t n_in_scratch) {
        size_t slot = run_slot(run);

        for (size_t j = 0; j < OFFLOAD_SEGMENTS_MAX; j++) {
                size_t used = j < n_in_scratch ? run->segs[j].headers_len : 0;

                for (size_t b = 0; b < slot; b++)
                        if (b < run->headroom || b >= run->headroom + used)
                                g_assert_cmphex(run->scratch[j * slot + b], ==, PATTERN);
        }
}

/* The segment as one packet, in a heap block of its size. */
static uint8_t *segment_join(const OffloadSegment *sg, size_t *ret_len) {
        size_t len = sg->headers_len + sg->payload_len;
        uint8_t *b = g_malloc(len);

        memcpy(b, sg->headers, sg->headers_len);
        if (sg->payload_len > 0)
                memcpy(b + sg->headers_len, sg->payload, sg->payload_len);
        *ret_len = len;
        return b;
}

static uint16_t protocol_of(const Pkt *p) {
        return p->family == AF_INET ? MPT_ETH_P_IP : MPT_ETH_P_IPV6;
}

/* Segments the super-packet p describes, handed over as the kernel does (NEEDS_CSUM, the pseudo-header
 * sum in the checksum field), and checks every segment field by field and against the packet built
 * here for it. Returns the segments as packets. */
static GPtrArray *tso_check(const Pkt *p, uint8_t gso_type, uint16_t gso_size, size_t mtu, size_t headroom) {
        size_t ip_len = pkt_ip_len(p), hdr_len = pkt_hdr_len(p), chunk, n;
        struct virtio_net_hdr vh = {
                .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
                .gso_type = gso_type,
                .hdr_len = (uint16_t) hdr_len,
                .gso_size = gso_size,
                .csum_start = (uint16_t) ip_len,
                .csum_offset = p->proto == IPPROTO_TCP ? 16 : 6,
        };
        Run run = { .headroom = headroom, .max_segs = OFFLOAD_SEGMENTS_MAX };
        GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);
        g_autofree uint8_t *joined = g_malloc(p->payload_len + 1);
        g_autofree uint8_t *super_full = NULL;
        size_t super_len;

        g_assert_cmpuint(p->payload_len, >, 0);
        super_full = pkt_new(p, CSUM_FULL, &super_len);
        run.pkt = pkt_new(p, CSUM_PARTIAL, &run.len);
        run_segment(&run, &vh, mtu);

        chunk = MIN((size_t) gso_size, mtu - hdr_len);
        n = (p->payload_len + chunk - 1) / chunk;
        g_assert_cmpint(run.r, ==, (int) n);

        for (size_t i = 0; i < n; i++) {
                const OffloadSegment *sg = &run.segs[i];
                size_t plen = MIN(chunk, p->payload_len - i * chunk), len, want_len;
                g_autofree uint8_t *seg = NULL, *want = NULL;
                const uint8_t *th;
                Pkt q = *p;

                /* Where it is: headers in slot i behind the headroom, payload in the packet. */
                g_assert_true(sg->headers == run.scratch + i * run_slot(&run) + headroom);
                g_assert_cmpuint(sg->headers_len, ==, hdr_len);
                g_assert_true(sg->payload == run.pkt + hdr_len + i * chunk);
                g_assert_cmpuint(sg->payload_len, ==, plen);
                if (i + 1 == n && p->payload_len % chunk != 0)
                        g_assert_cmpuint(sg->payload_len, <, chunk);

                seg = segment_join(sg, &len);
                g_assert_cmpuint(len, <=, mtu);
                th = seg + ip_len;
                if (p->family == AF_INET) {
                        g_assert_cmpuint(get16(seg + 2), ==, len);
                        g_assert_cmphex(get16(seg + 4), ==, (uint16_t) (p->ip_id + i));
                        g_assert_cmphex(get16(seg + 6), ==, p->frag);
                        g_assert_cmphex(mpt_checksum(seg, ip_len), ==, 0);
                        g_assert_cmpmem(seg + 20, ip_len - 20, super_full + 20, ip_len - 20);
                } else
                        g_assert_cmpuint(get16(seg + 4), ==, len - 40);
                if (p->proto == IPPROTO_TCP) {
                        uint8_t flags = p->flags;

                        if (i > 0)
                                flags &= (uint8_t) ~F_CWR;
                        if (i + 1 < n)
                                flags &= (uint8_t) ~(F_FIN | F_PSH);
                        g_assert_cmphex(get32(th + 4), ==, p->seq + (uint32_t) (i * chunk));
                        g_assert_cmphex(get32(th + 8), ==, p->ack);
                        g_assert_cmphex(th[12], ==, super_full[ip_len + 12]);
                        g_assert_cmphex(th[13], ==, flags);
                        g_assert_cmpuint(get16(th + 14), ==, p->window);
                        g_assert_cmpmem(th + 20, hdr_len - ip_len - 20, super_full + ip_len + 20,
                                        hdr_len - ip_len - 20);
                        q.flags = flags;
                } else {
                        g_assert_cmpuint(get16(th + 4), ==, 8 + plen);
                        g_assert_cmphex(get16(th + 6), !=, 0);
                }
                g_assert_cmphex(ref_l4_sum(seg, len), ==, 0xffff);
                g_assert_cmpint(mpt_inner_validate(seg, len, protocol_of(p)), ==, -1);

                /* All of it, against the packet built here. */
                q.seq = p->seq + (uint32_t) (i * chunk);
                q.ip_id = (uint16_t) (p->ip_id + i);
                q.payload = p->payload + i * chunk;
                q.payload_len = plen;
                want = pkt_new(&q, CSUM_FULL, &want_len);
                g_assert_cmpmem(seg, len, want, want_len);

                memcpy(joined + i * chunk, sg->payload, plen);
                g_ptr_array_add(out, g_bytes_new_take(g_steal_pointer(&seg), len));
        }
        g_assert_cmpmem(joined, p->payload_len, p->payload, p->payload_len);
        g_assert_cmpmem(run.pkt + hdr_len, run.len - hdr_len, p->payload, p->payload_len);
        check_scratch(&run, n);
        run_done(&run);
        return out;
}

/* ---- offload_segment(): TSO and USO ---- */

typedef struct SegCase {
        const char *name;
        int family;
        uint8_t proto;
        uint8_t gso_type;
        uint8_t flags;
        size_t ip_opts_len, tcp_opts_len;
        size_t payload_len;
        uint16_t gso_size;
        size_t mtu_payload; /* mtu = headers + this; 0: gso_size */
        uint16_t ip_id;
        uint32_t seq;
        size_t headroom;
        bool udp_zero; /* segment 1's checksum computes as 0 */
} SegCase;

#define TSO4 VIRTIO_NET_HDR_GSO_TCPV4
#define TSO6 VIRTIO_NET_HDR_GSO_TCPV6
#define USO VIRTIO_NET_HDR_GSO_UDP_L4
#define ECN VIRTIO_NET_HDR_GSO_ECN
#define TCP IPPROTO_TCP
#define UDP IPPROTO_UDP
#define APF (F_ACK | F_PSH | F_FIN)

static const SegCase seg_cases[] = {
        /* Timestamps (doff 8), ACK PSH FIN and CWR: 10000 bytes in 7 x 1400 + 200. */
        { "tcp4", AF_INET, TCP, TSO4, APF | F_CWR, 0, 12, 10000, 1400, 0, 0x1234, 0x10000000, 8 },
        { "tcp4-mtu-below-gso", AF_INET, TCP, TSO4, APF | F_CWR, 0, 12, 10000, 1400, 1100, 0x1234, 0x10000000, 8 },
        { "tcp4-exact-multiple", AF_INET, TCP, TSO4, F_ACK | F_PSH, 0, 12, 2800, 1400, 0, 7, 1, 8 },
        { "tcp4-one-segment", AF_INET, TCP, TSO4, APF | F_CWR, 0, 12, 500, 1400, 0, 7, 1, 8 },
        { "tcp4-one-byte", AF_INET, TCP, TSO4, F_ACK, 0, 12, 1, 1400, 0, 7, 1, 8 },
        { "tcp4-odd", AF_INET, TCP, TSO4, F_ACK, 0, 12, 9999, 1001, 0, 7, 1, 8 },
        { "tcp4-no-options", AF_INET, TCP, TSO4, F_ACK, 0, 0, 5000, 1460, 0, 7, 1, 8 },
        { "tcp4-ip-options", AF_INET, TCP, TSO4, APF, 8, 12, 5000, 1400, 0, 7, 1, 8 },
        { "tcp4-max-headers", AF_INET, TCP, TSO4, APF, 40, 40, 5000, 1000, 0, 7, 1, 8 },
        { "tcp4-wrap", AF_INET, TCP, TSO4, APF, 0, 12, 10000, 1400, 0, 0xfffd, 0xffffee00, 8 },
        { "tcp4-ecn", AF_INET, TCP, TSO4 | ECN, F_ACK | F_CWR | F_ECE, 0, 12, 10000, 1400, 0, 7, 1, 8 },
        { "tcp4-64k", AF_INET, TCP, TSO4, F_ACK | F_PSH, 0, 12, 65535 - 52, 1448, 0, 7, 1, 8 },
        { "tcp4-128-segments", AF_INET, TCP, TSO4, F_ACK, 0, 12, 128 * 100, 100, 0, 7, 1, 8 },
        { "tcp4-headroom-0", AF_INET, TCP, TSO4, APF, 0, 12, 10000, 1400, 0, 7, 1, 0 },
        { "tcp4-headroom-64", AF_INET, TCP, TSO4, APF, 0, 12, 10000, 1400, 0, 7, 1, 64 },
        { "tcp6", AF_INET6, TCP, TSO6, APF | F_CWR, 0, 12, 10000, 1400, 0, 0, 0x10000000, 8 },
        { "tcp6-mtu-below-gso", AF_INET6, TCP, TSO6, APF | F_CWR, 0, 12, 10000, 1400, 1000, 0, 0x10000000, 8 },
        { "tcp6-odd", AF_INET6, TCP, TSO6, F_ACK, 0, 12, 9999, 1001, 0, 0, 1, 8 },
        { "tcp6-max-options", AF_INET6, TCP, TSO6, APF, 0, 40, 5000, 1000, 0, 0, 1, 8 },
        { "tcp6-wrap", AF_INET6, TCP, TSO6, APF, 0, 12, 10000, 1400, 0, 0, 0xffffee00, 8 },
        { "tcp6-ecn", AF_INET6, TCP, TSO6 | ECN, F_ACK | F_CWR, 0, 12, 10000, 1400, 0, 0, 1, 8 },
        { "tcp6-64k", AF_INET6, TCP, TSO6, F_ACK | F_PSH, 0, 12, 65535 - 32, 1428, 0, 0, 1, 8 },
        { "udp4", AF_INET, UDP, USO, 0, 0, 0, 10000, 1200, 0, 0x1234, 0, 8 },
        { "udp4-odd", AF_INET, UDP, USO, 0, 0, 0, 9001, 999, 0, 0x1234, 0, 8 },
        { "udp4-one-segment", AF_INET, UDP, USO, 0, 0, 0, 300, 1200, 0, 0x1234, 0, 8 },
        { "udp4-ip-options", AF_INET, UDP, USO, 0, 12, 0, 5000, 1200, 0, 0xffff, 0, 8 },
        { "udp4-zero-checksum", AF_INET, UDP, USO, 0, 0, 0, 5000, 1200, 0, 0x1234, 0, 8, true },
        { "udp4-64k", AF_INET, UDP, USO, 0, 0, 0, 65535 - 28, 1472, 0, 0x1234, 0, 8 },
        { "udp6", AF_INET6, UDP, USO, 0, 0, 0, 10000, 1200, 0, 0, 0, 8 },
        { "udp6-odd", AF_INET6, UDP, USO, 0, 0, 0, 9001, 999, 0, 0, 0, 8 },
        { "udp6-zero-checksum", AF_INET6, UDP, USO, 0, 0, 0, 5000, 1200, 0, 0, 0, 8, true },
        { "udp6-64k", AF_INET6, UDP, USO, 0, 0, 0, 65535 - 8, 1452, 0, 0, 0, 8 },
};

static Pkt seg_case_pkt(const SegCase *c, const uint8_t *payload) {
        Pkt p = pkt_base(c->family, c->proto, payload, c->payload_len);

        p.flags = c->flags;
        p.ip_opts_len = c->ip_opts_len;
        p.tcp_opts_len = c->tcp_opts_len;
        p.ip_id = c->ip_id;
        p.seq = c->seq;
        return p;
}

static void test_segment(const void *data) {
        const SegCase *c = data;
        g_autofree uint8_t *payload = payload_new(c->payload_len, 1);
        g_autoptr(GPtrArray) segs = NULL;
        Pkt p = seg_case_pkt(c, payload);
        size_t mtu = pkt_hdr_len(&p) + (c->mtu_payload ?: c->gso_size);

        if (c->udp_zero)
                udp_force_zero(&p, payload + c->gso_size, MIN((size_t) c->gso_size, c->payload_len - c->gso_size));
        segs = tso_check(&p, c->gso_type, c->gso_size, mtu, c->headroom);
        if (c->udp_zero) {
                const uint8_t *seg1 = g_bytes_get_data(segs->pdata[1], NULL);

                /* Computed as 0, sent as ffff (RFC 768): 0 would mean "no checksum". */
                g_assert_cmphex(get16(seg1 + pkt_ip_len(&p) + 6), ==, 0xffff);
        }
}

/* A datagram the application sent must arrive as it was sent: USO segments are datagrams of gso_size
 * bytes (the last may be shorter), never cut elsewhere. When the MTU is below headers + gso_size (the
 * TUN device's MTU above the tunnel's), cutting at the MTU instead would hand the receiver different
 * datagrams (two pieces of 1000 and 200 bytes for each 1200-byte one); refusing the packet, or
 * keeping the boundaries, is correct. */
static void test_uso_mtu_below_gso(void) {
        g_autofree uint8_t *payload = payload_new(3600, 2);
        Pkt p = pkt_base(AF_INET, IPPROTO_UDP, payload, 3600);
        size_t hdr_len = pkt_hdr_len(&p);
        struct virtio_net_hdr vh = {
                .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
                .gso_type = VIRTIO_NET_HDR_GSO_UDP_L4,
                .hdr_len = (uint16_t) hdr_len,
                .gso_size = 1200,
                .csum_start = 20,
                .csum_offset = 6,
        };
        Run run = { .headroom = 8, .max_segs = OFFLOAD_SEGMENTS_MAX };

        run.pkt = pkt_new(&p, CSUM_PARTIAL, &run.len);
        run_segment(&run, &vh, hdr_len + 1000);
        /* A failure here is reported without aborting, so that the other tests still run. */
        for (int i = 0; i < run.r; i++) {
                size_t off = (size_t) (run.segs[i].payload - (run.pkt + hdr_len)), plen = run.segs[i].payload_len;

                if (off % vh.gso_size != 0 || plen > vh.gso_size || (plen != vh.gso_size && off + plen != 3600)) {
                        g_test_fail_printf("segment %d of %d carries bytes %zu..%zu of the 1200-byte datagrams", i,
                                           run.r, off, off + plen);
                        break;
                }
        }
        run_done(&run);
}

static void test_max_segs_exact(void) {
        g_autofree uint8_t *payload = payload_new(10000, 3);
        Pkt p = pkt_base(AF_INET, IPPROTO_TCP, payload, 10000);
        struct virtio_net_hdr vh = {
                .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
                .gso_type = VIRTIO_NET_HDR_GSO_TCPV4,
                .gso_size = 1000,
                .csum_start = 20,
                .csum_offset = 16,
        };
        Run run = { .headroom = 8, .max_segs = 10 };

        run.pkt = pkt_new(&p, CSUM_PARTIAL, &run.len);
        run_segment(&run, &vh, 1500);
        g_assert_cmpint(run.r, ==, 10);
        run_done(&run);
}

/* More segments than fit at once (UDP GSO with 100-byte datagrams, TCP with a 64-byte MSS): window
 * after window, the segments are the ones one call would make if it could, numbered on from the
 * previous window, each with valid checksums; the packet stays as it was. */
static void test_windows(const void *data) {
        const bool tcp = GPOINTER_TO_INT(data);
        const size_t payload_len = 30000, gso_size = tcp ? 64 : 100;
        g_autofree uint8_t *payload = payload_new(payload_len, 9);
        Pkt p = pkt_base(tcp ? AF_INET : AF_INET6, tcp ? IPPROTO_TCP : IPPROTO_UDP, payload, payload_len);
        size_t ip_len = pkt_ip_len(&p), hdr_len = pkt_hdr_len(&p), len, total = 0, done = 0;
        struct virtio_net_hdr vh = {
                .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
                .gso_type = tcp ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_UDP_L4,
                .hdr_len = (uint16_t) hdr_len,
                .gso_size = (uint16_t) gso_size,
                .csum_start = (uint16_t) ip_len,
                .csum_offset = tcp ? 16 : 6,
        };
        g_autofree uint8_t *pkt = pkt_new(&p, CSUM_PARTIAL, &len);
        g_autofree uint8_t *before = g_memdup2(pkt, len);
        g_autofree uint8_t *scratch = g_malloc(OFFLOAD_SEGMENTS_MAX * (OFFLOAD_HEADERS_MAX + 8));
        OffloadSegment segs[OFFLOAD_SEGMENTS_MAX];
        size_t n = (payload_len + gso_size - 1) / gso_size, windows = 0;

        /* One call refuses it. */
        g_assert_cmpint(offload_segment(&vh, pkt, len, 1500, scratch, 8, segs, OFFLOAD_SEGMENTS_MAX), ==, -E2BIG);
        while (done < n) {
                int r = offload_segment_from(&vh, pkt, len, 1500, scratch, 8, done, segs, OFFLOAD_SEGMENTS_MAX, &total);
                g_assert_cmpint(r, ==, (int) MIN((size_t) OFFLOAD_SEGMENTS_MAX, n - done));
                g_assert_cmpuint(total, ==, n);
                for (int k = 0; k < r; k++) {
                        size_t i = done + (size_t) k, seg_len;
                        g_autofree uint8_t *seg = segment_join(&segs[k], &seg_len);
                        size_t plen = MIN(gso_size, payload_len - i * gso_size);

                        g_assert_cmpuint(seg_len, ==, hdr_len + plen);
                        g_assert_cmpmem(seg + hdr_len, plen, payload + i * gso_size, plen);
                        g_assert_cmphex(ref_l4_sum(seg, seg_len), ==, 0xffff);
                        if (tcp) {
                                g_assert_cmphex(get16(seg + 4), ==, (uint16_t) (p.ip_id + i));
                                g_assert_cmphex(get32(seg + ip_len + 4), ==, (uint32_t) (p.seq + i * gso_size));
                        } else
                                g_assert_cmpuint(get16(seg + ip_len + 4), ==, 8 + plen);
                }
                done += (size_t) r;
                windows++;
        }
        g_assert_cmpuint(windows, ==, (n + OFFLOAD_SEGMENTS_MAX - 1) / OFFLOAD_SEGMENTS_MAX);
        g_assert_cmpmem(pkt, len, before, len);
        /* Past the end: refused. */
        g_assert_cmpint(offload_segment_from(&vh, pkt, len, 1500, scratch, 8, n, segs, OFFLOAD_SEGMENTS_MAX, &total), ==,
                        -EINVAL);
}

/* ---- offload_segment(): packets that need no splitting ---- */

static void test_plain(void) {
        g_autofree uint8_t *payload = payload_new(100, 4);
        static const CsumMode modes[] = { CSUM_FULL, CSUM_GARBAGE };
        static const uint8_t vflags[] = { 0, VIRTIO_NET_HDR_F_DATA_VALID };

        /* Returned in place, untouched: without NEEDS_CSUM even a wrong checksum stays. */
        for (size_t m = 0; m < G_N_ELEMENTS(modes); m++)
                for (size_t f = 0; f < G_N_ELEMENTS(vflags); f++)
                        for (size_t k = 0; k < 2; k++) {
                                Pkt p = pkt_base(k == 0 ? AF_INET : AF_INET6, IPPROTO_TCP, payload, 100);
                                struct virtio_net_hdr vh = { .flags = vflags[f] };
                                Run run = { .headroom = 8, .max_segs = 1 };
                                g_autofree uint8_t *orig = NULL;
                                size_t len;

                                orig = pkt_new(&p, modes[m], &len);
                                run.pkt = g_memdup2(orig, len);
                                run.len = len;
                                run_segment(&run, &vh, 1500);
                                g_assert_cmpint(run.r, ==, 1);
                                g_assert_true(run.segs[0].headers == run.pkt);
                                g_assert_cmpuint(run.segs[0].headers_len, ==, len);
                                g_assert_null(run.segs[0].payload);
                                g_assert_cmpuint(run.segs[0].payload_len, ==, 0);
                                g_assert_cmpmem(run.pkt, run.len, orig, len);
                                check_scratch(&run, 0);
                                run_done(&run);
                        }
}

typedef struct CsumCase {
        const char *name;
        int family;
        uint8_t proto;
        uint8_t gso_type; /* GSO_NONE, or a GSO type with nothing to split */
        size_t ip_opts_len;
        size_t payload_len;
        bool zero; /* the checksum computes as 0 */
} CsumCase;

static const CsumCase csum_cases[] = {
        { "tcp4", AF_INET, TCP, 0, 0, 1000 },
        { "tcp4-odd", AF_INET, TCP, 0, 0, 999 },
        { "tcp4-empty", AF_INET, TCP, 0, 0, 0 },
        { "tcp4-ip-options", AF_INET, TCP, 0, 16, 333 },
        { "tcp6", AF_INET6, TCP, 0, 0, 1000 },
        { "tcp6-odd", AF_INET6, TCP, 0, 0, 1 },
        { "udp4", AF_INET, UDP, 0, 0, 1000 },
        { "udp4-odd", AF_INET, UDP, 0, 0, 77 },
        { "udp4-empty", AF_INET, UDP, 0, 0, 0 },
        { "udp4-zero", AF_INET, UDP, 0, 0, 500, true },
        { "udp6", AF_INET6, UDP, 0, 0, 1000 },
        { "udp6-zero", AF_INET6, UDP, 0, 0, 501, true },
        /* A GSO packet with no payload is finished as a plain one. */
        { "tso4-no-payload", AF_INET, TCP, VIRTIO_NET_HDR_GSO_TCPV4, 0, 0 },
        { "tso6-no-payload", AF_INET6, TCP, VIRTIO_NET_HDR_GSO_TCPV6, 0, 0 },
};

static void test_needs_csum(const void *data) {
        const CsumCase *c = data;
        g_autofree uint8_t *payload = payload_new(c->payload_len, 5);
        g_autofree uint8_t *want = NULL;
        Pkt p = pkt_base(c->family, c->proto, payload, c->payload_len);
        size_t want_len, ip_len;
        Run run = { .headroom = 8, .max_segs = 4 };
        struct virtio_net_hdr vh = {
                .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
                .gso_type = c->gso_type,
                .gso_size = c->gso_type ? 1400 : 0,
                .csum_offset = c->proto == IPPROTO_TCP ? 16 : 6,
        };

        p.ip_opts_len = c->ip_opts_len;
        ip_len = pkt_ip_len(&p);
        vh.csum_start = (uint16_t) ip_len;
        vh.hdr_len = (uint16_t) pkt_hdr_len(&p);
        if (c->zero)
                udp_force_zero(&p, payload, c->payload_len);
        want = pkt_new(&p, CSUM_FULL, &want_len);
        run.pkt = pkt_new(&p, CSUM_PARTIAL, &run.len);
        run_segment(&run, &vh, 1500);

        g_assert_cmpint(run.r, ==, 1);
        g_assert_true(run.segs[0].headers == run.pkt);
        g_assert_cmpuint(run.segs[0].headers_len, ==, run.len);
        g_assert_null(run.segs[0].payload);
        g_assert_cmpuint(run.segs[0].payload_len, ==, 0);
        g_assert_cmphex(ref_l4_sum(run.pkt, run.len), ==, 0xffff);
        if (c->zero)
                g_assert_cmphex(get16(run.pkt + ip_len + 6), ==, 0xffff);
        g_assert_cmpmem(run.pkt, run.len, want, want_len);
        g_assert_cmpint(mpt_inner_validate(run.pkt, run.len, protocol_of(&p)), ==, -1);
        check_scratch(&run, 0);
        run_done(&run);
}

typedef struct BadCsum {
        const char *name;
        long start_from_end; /* csum_start = len - this */
        uint16_t offset;
        int r;
} BadCsum;

static const BadCsum bad_csum_cases[] = {
        { "start-at-end", 0, 16, -EBADMSG },
        { "start-past-end", -10, 16, -EBADMSG },
        { "start-far-past-end", -60000, 6, -EBADMSG },
        { "field-past-end", 17, 16, -EBADMSG },
        { "field-past-end-udp", 7, 6, -EBADMSG },
        { "field-at-end", 18, 16, 1 },
        { "field-at-end-udp", 8, 6, 1 },
        { "offset-0", 132, 0, -EBADMSG },
        { "offset-2", 132, 2, -EBADMSG },
        { "offset-7", 132, 7, -EBADMSG },
        { "offset-18", 132, 18, -EBADMSG },
        { "offset-ffff", 132, 0xffff, -EBADMSG },
};

static void test_bad_csum(const void *data) {
        const BadCsum *c = data;
        g_autofree uint8_t *payload = payload_new(100, 6);
        g_autofree uint8_t *orig = NULL;
        Pkt p = pkt_base(AF_INET, IPPROTO_TCP, payload, 100);
        Run run = { .headroom = 8, .max_segs = 1 };
        struct virtio_net_hdr vh = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_offset = c->offset };
        size_t len;

        orig = pkt_new(&p, CSUM_PARTIAL, &len);
        g_assert_cmpuint(len, ==, 152);
        vh.csum_start = (uint16_t) ((long) len - c->start_from_end);
        run.pkt = g_memdup2(orig, len);
        run.len = len;
        run_segment(&run, &vh, 1500);
        g_assert_cmpint(run.r, ==, c->r);
        if (c->r < 0)
                g_assert_cmpmem(run.pkt, run.len, orig, len); /* not half-finished */
        check_scratch(&run, 0);
        run_done(&run);
}

/* ---- offload_segment(): refused ---- */

typedef void (*Corrupt)(uint8_t *buf, size_t *len);

/* Inserts an IPv6 extension header. The transport header then starts 8 bytes later; its sequence
 * number is set so that, read from where the transport header would be without the extension
 * header, byte 12 is a plausible TCP data offset (a parser that skipped the check would go on). */
static void add_ipv6_ext(uint8_t *buf, size_t *len, uint8_t type, const uint8_t ext[static 8]) {
        memmove(buf + 48, buf + 40, *len - 40);
        memcpy(buf + 40, ext, 8);
        buf[6] = type;
        put16(buf + 4, (uint16_t) (get16(buf + 4) + 8));
        *len += 8;
        buf[48 + 4] = 0x50;
}

static void add_ipv6_hop_by_hop(uint8_t *buf, size_t *len) {
        static const uint8_t hbh[8] = { IPPROTO_TCP, 0, 1, 4, 0, 0, 0, 0 }; /* PadN */
        add_ipv6_ext(buf, len, 0, hbh);
}

static void add_ipv6_hop_by_hop_udp(uint8_t *buf, size_t *len) {
        static const uint8_t hbh[8] = { IPPROTO_UDP, 0, 1, 4, 0, 0, 0, 0 };
        add_ipv6_ext(buf, len, 0, hbh);
}

static void add_ipv6_fragment_header(uint8_t *buf, size_t *len) {
        static const uint8_t frag[8] = { IPPROTO_TCP, 0, 0, 0, 0, 0, 0, 1 }; /* atomic fragment */
        add_ipv6_ext(buf, len, 44, frag);
}

/* A UDP datagram whose payload, read as a TCP header, has a plausible data offset. */
static void udp_looks_like_tcp(uint8_t *buf, size_t *len) {
        size_t ip_len = buf[0] >> 4 == 4 ? (size_t) (buf[0] & 0x0f) * 4 : 40;
        buf[ip_len + 12] = 0x50;
}

static void set_version_5(uint8_t *buf, size_t *len) {
        buf[0] = (uint8_t) (0x50 | (buf[0] & 0x0f));
}

static void set_ihl_4(uint8_t *buf, size_t *len) {
        buf[0] = 0x44;
}

static void set_doff_4(uint8_t *buf, size_t *len) {
        size_t ip_len = buf[0] >> 4 == 4 ? (size_t) (buf[0] & 0x0f) * 4 : 40;
        buf[ip_len + 12] = 0x40;
}

static void set_doff_15(uint8_t *buf, size_t *len) {
        size_t ip_len = buf[0] >> 4 == 4 ? (size_t) (buf[0] & 0x0f) * 4 : 40;
        buf[ip_len + 12] = 0xf0;
}

static void truncate_19(uint8_t *buf, size_t *len) {
        *len = 19;
}

static void truncate_8(uint8_t *buf, size_t *len) {
        *len = 8; /* the protocol byte is past the end */
}

static void truncate_30(uint8_t *buf, size_t *len) {
        *len = 30;
}

static void truncate_39(uint8_t *buf, size_t *len) {
        *len = 39;
}

static void truncate_50(uint8_t *buf, size_t *len) {
        *len = 50;
}

static void truncate_options(uint8_t *buf, size_t *len) {
        *len = 20 + 20 + 4; /* doff says 12 bytes of options */
}

#define MAX_SEGS_ZERO SIZE_MAX

typedef struct ErrCase {
        const char *name;
        int family;
        uint8_t proto;
        uint8_t gso_type;
        uint16_t gso_size;
        size_t payload_len;
        size_t mtu;      /* 0: headers + gso_size */
        size_t max_segs; /* 0: OFFLOAD_SEGMENTS_MAX; MAX_SEGS_ZERO: 0 */
        uint16_t frag;   /* IPv4 flags and offset; 0: DF */
        Corrupt corrupt;
        int r;
} ErrCase;

static const ErrCase err_cases[] = {
        { "ipv6-hop-by-hop", AF_INET6, TCP, TSO6, 1400, 5000, .corrupt = add_ipv6_hop_by_hop, .r = -EBADMSG },
        { "ipv6-fragment-header", AF_INET6, TCP, TSO6, 1400, 5000, .corrupt = add_ipv6_fragment_header, .r = -EBADMSG },
        { "ipv6-hop-by-hop-udp", AF_INET6, UDP, USO, 1400, 5000, .corrupt = add_ipv6_hop_by_hop_udp, .r = -EBADMSG },
        { "tcpv6-on-ipv4", AF_INET, TCP, TSO6, 1400, 5000, .r = -EBADMSG },
        { "tcpv4-on-ipv6", AF_INET6, TCP, TSO4, 1400, 5000, .r = -EBADMSG },
        { "tcpv4-on-udp", AF_INET, UDP, TSO4, 1400, 5000, .corrupt = udp_looks_like_tcp, .r = -EBADMSG },
        { "tcpv6-on-udp", AF_INET6, UDP, TSO6, 1400, 5000, .corrupt = udp_looks_like_tcp, .r = -EBADMSG },
        { "uso-on-tcp4", AF_INET, TCP, USO, 1400, 5000, .r = -EBADMSG },
        { "uso-on-tcp6", AF_INET6, TCP, USO, 1400, 5000, .r = -EBADMSG },
        { "gso-type-2", AF_INET, TCP, 2, 1400, 5000, .r = -EBADMSG },
        { "gso-type-ufo", AF_INET, UDP, VIRTIO_NET_HDR_GSO_UDP, 1400, 5000, .corrupt = udp_looks_like_tcp,
          .r = -EBADMSG },
        { "gso-type-6", AF_INET6, TCP, 6, 1400, 5000, .r = -EBADMSG },
        { "gso-size-0", AF_INET, TCP, TSO4, 0, 5000, .mtu = 1500, .r = -EBADMSG },
        { "gso-size-0-udp", AF_INET6, UDP, USO, 0, 5000, .mtu = 1500, .r = -EBADMSG },
        { "mtu-headers", AF_INET, TCP, TSO4, 1400, 5000, .mtu = 52, .r = -EBADMSG },
        { "mtu-below-headers", AF_INET6, TCP, TSO6, 1400, 5000, .mtu = 40, .r = -EBADMSG },
        { "mtu-0", AF_INET, UDP, USO, 1400, 5000, .mtu = 0xffffffff, .r = -EBADMSG },
        { "ipv4-more-fragments", AF_INET, TCP, TSO4, 1400, 5000, .frag = 0x2000, .r = -EBADMSG },
        { "ipv4-fragment-offset", AF_INET, TCP, TSO4, 1400, 5000, .frag = 0x4001, .r = -EBADMSG },
        { "ipv4-fragment-udp", AF_INET, UDP, USO, 1400, 5000, .frag = 0x0100, .r = -EBADMSG },
        { "ip-version-5", AF_INET, TCP, TSO4, 1400, 5000, .corrupt = set_version_5, .r = -EBADMSG },
        { "ipv4-ihl-4", AF_INET, TCP, TSO4, 1400, 5000, .corrupt = set_ihl_4, .r = -EBADMSG },
        { "tcp4-doff-4", AF_INET, TCP, TSO4, 1400, 5000, .corrupt = set_doff_4, .r = -EBADMSG },
        { "tcp6-doff-4", AF_INET6, TCP, TSO6, 1400, 5000, .corrupt = set_doff_4, .r = -EBADMSG },
        { "tcp4-doff-past-end", AF_INET, TCP, TSO4, 1400, 8, .corrupt = set_doff_15, .r = -EBADMSG },
        { "truncated-19", AF_INET, TCP, TSO4, 1400, 5000, .corrupt = truncate_19, .r = -EBADMSG },
        { "ipv4-truncated-8", AF_INET, TCP, TSO4, 1400, 5000, .corrupt = truncate_8, .r = -EBADMSG },
        { "ipv6-truncated-8", AF_INET6, UDP, USO, 1400, 5000, .corrupt = truncate_8, .r = -EBADMSG },
        { "tcp4-truncated-30", AF_INET, TCP, TSO4, 1400, 5000, .corrupt = truncate_30, .r = -EBADMSG },
        { "tcp4-truncated-options", AF_INET, TCP, TSO4, 1400, 5000, .corrupt = truncate_options, .r = -EBADMSG },
        { "ipv6-truncated-39", AF_INET6, TCP, TSO6, 1400, 5000, .corrupt = truncate_39, .r = -EBADMSG },
        { "tcp6-truncated-50", AF_INET6, TCP, TSO6, 1400, 5000, .corrupt = truncate_50, .r = -EBADMSG },
        { "udp6-truncated-39", AF_INET6, UDP, USO, 1400, 5000, .corrupt = truncate_39, .r = -EBADMSG },
        /* 10 segments needed. */
        { "max-segs-9", AF_INET, TCP, TSO4, 1000, 10000, .max_segs = 9, .r = -E2BIG },
        { "max-segs-1", AF_INET6, UDP, USO, 1000, 10000, .max_segs = 1, .r = -E2BIG },
        { "max-segs-0", AF_INET, TCP, TSO4, 1000, 10000, .max_segs = MAX_SEGS_ZERO, .r = -E2BIG },
        { "max-segs-0-plain", AF_INET, TCP, 0, 0, 100, .mtu = 1500, .max_segs = MAX_SEGS_ZERO, .r = -E2BIG },
        /* 129 segments: more than OFFLOAD_SEGMENTS_MAX, though the caller has room. */
        { "129-segments", AF_INET, TCP, TSO4, 100, 12900, .max_segs = 1000, .r = -E2BIG },
        { "gso-size-1", AF_INET6, UDP, USO, 1, 1000, .max_segs = 1000, .r = -E2BIG },
};

static void test_error(const void *data) {
        const ErrCase *c = data;
        g_autofree uint8_t *payload = payload_new(c->payload_len, 7);
        g_autofree uint8_t *buf = NULL;
        Pkt p = pkt_base(c->family, c->proto, payload, c->payload_len);
        size_t hdr_len = pkt_hdr_len(&p), len;
        struct virtio_net_hdr vh = {
                .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
                .gso_type = c->gso_type,
                .hdr_len = (uint16_t) hdr_len,
                .gso_size = c->gso_size,
                .csum_start = (uint16_t) pkt_ip_len(&p),
                .csum_offset = c->proto == IPPROTO_TCP ? 16 : 6,
        };
        Run run = {
                .headroom = 8,
                .max_segs = c->max_segs == MAX_SEGS_ZERO ? 0 : c->max_segs ?: OFFLOAD_SEGMENTS_MAX,
        };
        size_t mtu = c->mtu == 0xffffffff ? 0 : c->mtu ?: hdr_len + c->gso_size;

        if (c->frag)
                p.frag = c->frag;
        buf = g_malloc(pkt_len(&p) + 64);
        len = pkt_write(&p, CSUM_PARTIAL, buf);
        if (c->corrupt)
                c->corrupt(buf, &len);
        run.pkt = g_memdup2(buf, len);
        run.len = len;
        run_segment(&run, &vh, mtu);
        g_assert_cmpint(run.r, ==, c->r);
        g_assert_cmpmem(run.pkt, run.len, buf, len);
        check_scratch(&run, 0);
        run_done(&run);
}

/* ---- GRO ---- */

/* The headers of a packet built here. */
static size_t headers_len(const uint8_t *pkt, size_t *ret_ip_len) {
        const uint8_t *src, *dst;
        uint8_t proto;
        int family;
        size_t ip_len = ip_header(pkt, &family, &proto, &src, &dst);

        *ret_ip_len = ip_len;
        return ip_len + (size_t) (pkt[ip_len + 12] >> 4) * 4;
}

/* Takes the result of a Gro holding segs[from..to) and checks it: the iovec, the virtio-net header,
 * the headers (lengths, checksums), and that segmenting it again gives back the segments byte for
 * byte. */
static void gro_check(Gro *g, GPtrArray *segs, size_t from, size_t to) {
        size_t k = to - from, n, flen, ip_len, hdr_len, total = 0, len;
        const uint8_t *first = g_bytes_get_data(segs->pdata[from], &flen);
        const uint8_t *last = g_bytes_get_data(segs->pdata[to - 1], NULL);
        g_autofree uint8_t *sp = NULL, *want = NULL;
        struct virtio_net_hdr vh;
        struct iovec *iov = NULL;
        int family;

        g_assert_cmpuint(k, >=, 1);
        hdr_len = headers_len(first, &ip_len);
        family = first[0] >> 4 == 4 ? AF_INET : AF_INET6;

        n = gro_finish(g, &iov);
        g_assert_cmpuint(n, ==, k + 2);
        g_assert_nonnull(iov);
        g_assert_cmpuint(iov[0].iov_len, ==, VNET_HDR_LEN);
        g_assert_cmpuint(iov[1].iov_len, ==, hdr_len);
        for (size_t j = 0; j < k; j++) {
                size_t l;
                const uint8_t *d = g_bytes_get_data(segs->pdata[from + j], &l);

                /* The payload is referenced, not copied. */
                g_assert_true(iov[2 + j].iov_base == d + hdr_len);
                g_assert_cmpuint(iov[2 + j].iov_len, ==, l - hdr_len);
        }
        for (size_t j = 1; j < n; j++)
                total += iov[j].iov_len;
        sp = g_malloc(total);
        len = 0;
        for (size_t j = 1; j < n; j++) {
                memcpy(sp + len, iov[j].iov_base, iov[j].iov_len);
                len += iov[j].iov_len;
        }
        memcpy(&vh, iov[0].iov_base, sizeof vh);

        if (k == 1) {
                /* A plain packet, unchanged. */
                g_assert_cmphex(vh.flags, ==, VIRTIO_NET_HDR_F_DATA_VALID);
                g_assert_cmphex(vh.gso_type, ==, VIRTIO_NET_HDR_GSO_NONE);
                g_assert_cmpuint(vh.hdr_len, ==, 0);
                g_assert_cmpuint(vh.gso_size, ==, 0);
                g_assert_cmpuint(vh.csum_start, ==, 0);
                g_assert_cmpuint(vh.csum_offset, ==, 0);
                g_assert_cmpmem(sp, total, first, flen);
        } else {
                uint8_t pseudo[40];
                size_t np;
                Run run = { .headroom = 8, .max_segs = OFFLOAD_SEGMENTS_MAX };

                g_assert_cmphex(vh.flags, ==, VIRTIO_NET_HDR_F_NEEDS_CSUM);
                g_assert_cmphex(vh.gso_type, ==,
                                family == AF_INET ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6);
                g_assert_cmpuint(vh.gso_size, ==, flen - hdr_len);
                g_assert_cmpuint(vh.hdr_len, ==, hdr_len);
                g_assert_cmpuint(vh.csum_start, ==, ip_len);
                g_assert_cmpuint(vh.csum_offset, ==, 16);
                if (family == AF_INET) {
                        g_assert_cmpuint(get16(sp + 2), ==, total);
                        g_assert_cmphex(mpt_checksum(sp, ip_len), ==, 0);
                } else
                        g_assert_cmpuint(get16(sp + 4), ==, total - 40);
                g_assert_cmpint(mpt_inner_validate(sp, total, family == AF_INET ? MPT_ETH_P_IP : MPT_ETH_P_IPV6), ==,
                                -1);
                /* Left partial: the pseudo-header sum, folded, not complemented. */
                np = ref_pseudo(family, family == AF_INET ? sp + 12 : sp + 8, family == AF_INET ? sp + 16 : sp + 24,
                                IPPROTO_TCP, (uint32_t) (total - ip_len), pseudo);
                g_assert_cmphex(get16(sp + ip_len + 16), ==, ref_fold(ref_add(0, pseudo, np)));

                /* The headers are the first segment's, but for the lengths, the checksums and PSH,
                 * which is the last's. */
                want = g_memdup2(first, hdr_len);
                if (family == AF_INET) {
                        put16(want + 2, (uint16_t) total);
                        want[10] = want[11] = 0;
                        put16(want + 10, ref_checksum(want, ip_len));
                } else
                        put16(want + 4, (uint16_t) (total - 40));
                want[ip_len + 13] |= last[ip_len + 13] & F_PSH;
                put16(want + ip_len + 16, ref_fold(ref_add(0, pseudo, np)));
                g_assert_cmpmem(sp, hdr_len, want, hdr_len);

                /* Round trip. */
                run.pkt = g_steal_pointer(&sp);
                run.len = total;
                run_segment(&run, &vh, hdr_len + vh.gso_size);
                g_assert_cmpint(run.r, ==, (int) k);
                for (size_t j = 0; j < k; j++) {
                        size_t l, sl;
                        const uint8_t *d = g_bytes_get_data(segs->pdata[from + j], &l);
                        g_autofree uint8_t *s = segment_join(&run.segs[j], &sl);

                        g_assert_cmpmem(s, sl, d, l);
                }
                run_done(&run);
        }
        /* Empty now. */
        g_assert_cmpuint(gro_finish(g, &iov), ==, 0);
}

/* Feeds the packets to a Gro as the worker does: one that is not taken finishes the Gro, and starts
 * the next. Checks every super-packet; returns how many there were. */
static size_t gro_feed(GPtrArray *segs) {
        g_autofree Gro *g = g_new0(Gro, 1);
        size_t from = 0, supers = 0;

        for (size_t i = 0; i < segs->len; i++) {
                size_t l;
                const uint8_t *d = g_bytes_get_data(segs->pdata[i], &l);

                if (gro_add(g, d, l))
                        continue;
                g_assert_cmpuint(i, >, from);
                gro_check(g, segs, from, i);
                supers++;
                from = i;
                g_assert_true(gro_add(g, d, l));
        }
        if (segs->len > from) {
                gro_check(g, segs, from, segs->len);
                supers++;
        }
        return supers;
}

/* How many super-packets the segments should make, from the limits as documented. */
static size_t gro_expected(GPtrArray *segs) {
        size_t supers = 0, count = 0, total = 0, gso = 0;
        bool ended = false;

        for (size_t i = 0; i < segs->len; i++) {
                size_t l, ip_len, hdr_len;
                const uint8_t *d = g_bytes_get_data(segs->pdata[i], &l);
                bool psh;

                hdr_len = headers_len(d, &ip_len);
                psh = d[ip_len + 13] & F_PSH;
                if (count > 0 && !ended && count < GRO_SEGMENTS_MAX && total + (l - hdr_len) <= GRO_BYTES_MAX &&
                    l - hdr_len <= gso) {
                        count++;
                        total += l - hdr_len;
                        ended = l - hdr_len < gso || psh;
                        continue;
                }
                supers++;
                count = 1;
                total = l;
                gso = l - hdr_len;
                ended = psh;
        }
        return supers;
}

typedef struct GroCase {
        const char *name;
        int family;
        uint8_t flags;
        size_t tcp_opts_len;
        size_t payload_len;
        uint16_t gso_size;
        size_t mtu_payload; /* 0: gso_size */
        uint16_t ip_id;
        uint32_t seq;
        size_t supers; /* super-packets expected */
} GroCase;

static const GroCase gro_cases[] = {
        { "tcp4", AF_INET, F_ACK | F_PSH, 12, 10000, 1400, 0, 0x1234, 0x10000000, 1 },
        { "tcp4-no-psh", AF_INET, F_ACK, 12, 10000, 1400, 0, 0x1234, 0x10000000, 1 },
        { "tcp4-exact-multiple", AF_INET, F_ACK, 12, 14000, 1400, 0, 0x1234, 0x10000000, 1 },
        { "tcp4-mtu-below-gso", AF_INET, F_ACK | F_PSH, 12, 10000, 1400, 1100, 0x1234, 0x10000000, 1 },
        { "tcp4-no-options", AF_INET, F_ACK | F_PSH, 0, 10000, 1460, 0, 1, 1, 1 },
        { "tcp4-max-options", AF_INET, F_ACK | F_PSH, 40, 10000, 1000, 0, 1, 1, 1 },
        { "tcp4-wrap", AF_INET, F_ACK | F_PSH, 12, 10000, 1400, 0, 0xfffd, 0xffffee00, 1 },
        { "tcp4-odd", AF_INET, F_ACK, 12, 9999, 1001, 0, 1, 1, 1 },
        /* 65535 bytes in all: above GRO_BYTES_MAX, two super-packets (44 + 2 segments). */
        { "tcp4-64k", AF_INET, F_ACK | F_PSH, 12, 65535 - 52, 1448, 0, 1, 1, 2 },
        /* 100 segments: more than GRO_SEGMENTS_MAX. */
        { "tcp4-100-segments", AF_INET, F_ACK | F_PSH, 12, 10000, 100, 0, 1, 1, 2 },
        /* Two segments, the second one short. */
        { "tcp4-two", AF_INET, F_ACK | F_PSH, 12, 1500, 1400, 0, 1, 1, 1 },
        { "tcp4-one", AF_INET, F_ACK | F_PSH, 12, 1000, 1400, 0, 1, 1, 1 },
        { "tcp6", AF_INET6, F_ACK | F_PSH, 12, 10000, 1400, 0, 0, 0x10000000, 1 },
        { "tcp6-mtu-below-gso", AF_INET6, F_ACK, 12, 10000, 1400, 1000, 0, 0x10000000, 1 },
        { "tcp6-wrap", AF_INET6, F_ACK | F_PSH, 12, 10000, 1400, 0, 0, 0xfffffe00, 1 },
        /* 66 segments: 64 + 2. */
        { "tcp6-64k", AF_INET6, F_ACK | F_PSH, 40, 65535 - 60, 1000, 0, 0, 1, 2 },
        { "tcp6-one", AF_INET6, F_ACK, 12, 1, 1400, 0, 0, 1, 1 },
};

/* Segments of a TSO super-packet, coalesced again: one super-packet equal to the original. */
static void test_gro(const void *data) {
        const GroCase *c = data;
        g_autofree uint8_t *payload = payload_new(c->payload_len, 8);
        g_autofree uint8_t *orig = NULL;
        g_autoptr(GPtrArray) segs = NULL;
        Pkt p = pkt_base(c->family, IPPROTO_TCP, payload, c->payload_len);
        size_t orig_len;

        p.flags = c->flags;
        p.tcp_opts_len = c->tcp_opts_len;
        p.ip_id = c->ip_id;
        p.seq = c->seq;
        segs = tso_check(&p, c->family == AF_INET ? TSO4 : TSO6, c->gso_size,
                         pkt_hdr_len(&p) + (c->mtu_payload ?: c->gso_size), 8);
        g_assert_cmpuint(gro_expected(segs), ==, c->supers);
        g_assert_cmpuint(gro_feed(segs), ==, c->supers);

        if (c->supers == 1 && segs->len > 1) {
                /* The kernel's super-packet, as it was handed over (checksum left partial). */
                g_autofree Gro *g = g_new0(Gro, 1);
                g_autofree uint8_t *sp = g_malloc(pkt_len(&p));
                struct iovec *iov;
                size_t n, len = 0;

                for (size_t i = 0; i < segs->len; i++) {
                        size_t l;
                        const uint8_t *d = g_bytes_get_data(segs->pdata[i], &l);
                        g_assert_true(gro_add(g, d, l));
                }
                n = gro_finish(g, &iov);
                for (size_t j = 1; j < n; j++) {
                        g_assert_cmpuint(len + iov[j].iov_len, <=, pkt_len(&p));
                        memcpy(sp + len, iov[j].iov_base, iov[j].iov_len);
                        len += iov[j].iov_len;
                }
                orig = pkt_new(&p, CSUM_PARTIAL, &orig_len);
                g_assert_cmpmem(sp, len, orig, orig_len);
        }
}

/* A flow of packets of 1000 bytes of payload, hand-built. */
#define FLOW_PAYLOAD 1000u

static Pkt flow_base(int family, const uint8_t *payload) {
        Pkt p = pkt_base(family, IPPROTO_TCP, payload, FLOW_PAYLOAD);

        p.ip_id = 100;
        p.seq = 1000;
        return p;
}

static Pkt flow_pkt(const Pkt *base, size_t k) {
        Pkt q = *base;

        q.seq += (uint32_t) (k * FLOW_PAYLOAD);
        q.ip_id = (uint16_t) (q.ip_id + k);
        q.payload = base->payload + k * FLOW_PAYLOAD;
        return q;
}

static void test_gro_single(void) {
        g_autofree uint8_t *payload = payload_new(64 * FLOW_PAYLOAD, 9);

        for (size_t f = 0; f < 2; f++) {
                Pkt base = flow_base(f == 0 ? AF_INET : AF_INET6, payload);
                g_autoptr(GPtrArray) segs = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);
                g_autofree Gro *g = g_new0(Gro, 1);
                size_t l;
                const uint8_t *d;

                /* A single packet: plain, with DATA_VALID, headers unchanged (PSH too). */
                base.flags = F_ACK | F_PSH;
                g_ptr_array_add(segs, pkt_bytes(&base));
                d = g_bytes_get_data(segs->pdata[0], &l);
                g_assert_true(gro_add(g, d, l));
                gro_check(g, segs, 0, 1);
        }
}

/* Builds packets 0..n-1 of the flow, each adjusted by adjust (when not NULL). */
static GPtrArray *flow_packets(const Pkt *base, size_t n, void (*adjust)(Pkt *p, size_t k)) {
        GPtrArray *segs = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);

        for (size_t k = 0; k < n; k++) {
                Pkt q = flow_pkt(base, k);
                if (adjust)
                        adjust(&q, k);
                g_ptr_array_add(segs, pkt_bytes(&q));
        }
        return segs;
}

/* Feeds segs; returns how many were taken before the first refusal; leaves g as it is. */
static size_t gro_take(Gro *g, GPtrArray *segs) {
        for (size_t i = 0; i < segs->len; i++) {
                size_t l;
                const uint8_t *d = g_bytes_get_data(segs->pdata[i], &l);

                if (!gro_add(g, d, l))
                        return i;
        }
        return segs->len;
}

static void test_gro_empty(void) {
        g_autofree uint8_t *payload = payload_new(2 * FLOW_PAYLOAD, 16);
        Pkt base = flow_base(AF_INET, payload);
        g_autoptr(GPtrArray) segs = flow_packets(&base, 2, NULL);
        g_autofree Gro *g = g_new0(Gro, 1);
        struct iovec *iov = NULL;

        g_assert_cmpuint(gro_finish(g, &iov), ==, 0);
        g_assert_cmpuint(gro_finish(g, &iov), ==, 0);
        /* And once more after use. */
        g_assert_cmpuint(gro_take(g, segs), ==, 2);
        g_assert_cmpuint(gro_finish(g, &iov), ==, 4);
        g_assert_cmpuint(gro_finish(g, &iov), ==, 0);
}

static void psh_on_1(Pkt *p, size_t k) {
        if (k == 1)
                p->flags |= F_PSH;
}

static void psh_on_0(Pkt *p, size_t k) {
        if (k == 0)
                p->flags |= F_PSH;
}

static void short_1(Pkt *p, size_t k) {
        if (k == 1)
                p->payload_len = 500;
        if (k == 2)
                p->seq -= 500;
}

static void psh_and_short_1(Pkt *p, size_t k) {
        short_1(p, k);
        psh_on_1(p, k);
}

static void test_gro_ends(void) {
        g_autofree uint8_t *payload = payload_new(64 * FLOW_PAYLOAD, 10);
        static const struct {
                void (*adjust)(Pkt *p, size_t k);
                size_t taken;
        } cases[] = {
                /* PSH ends the run, and is kept on the super-packet. */
                { psh_on_1, 2 },
                /* PSH on the first: it stays alone. */
                { psh_on_0, 1 },
                /* A short segment ends the run. */
                { short_1, 2 },
                { psh_and_short_1, 2 },
        };

        for (size_t f = 0; f < 2; f++)
                for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                        Pkt base = flow_base(f == 0 ? AF_INET : AF_INET6, payload);
                        g_autoptr(GPtrArray) segs = flow_packets(&base, 3, cases[i].adjust);
                        g_autofree Gro *g = g_new0(Gro, 1);

                        g_assert_cmpuint(gro_take(g, segs), ==, cases[i].taken);
                        gro_check(g, segs, 0, cases[i].taken);
                        g_assert_cmpuint(gro_feed(segs), ==, 2);
                }
}

static void test_gro_max_segments(void) {
        g_autofree uint8_t *payload = payload_new(100 * 100, 11);

        for (size_t f = 0; f < 2; f++) {
                Pkt base = pkt_base(f == 0 ? AF_INET : AF_INET6, IPPROTO_TCP, payload, 100);
                g_autoptr(GPtrArray) segs = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);
                g_autofree Gro *g = g_new0(Gro, 1);

                for (size_t k = 0; k < GRO_SEGMENTS_MAX + 1; k++) {
                        Pkt q = base;
                        q.seq += (uint32_t) (k * 100);
                        q.ip_id = (uint16_t) (q.ip_id + k);
                        q.payload = payload + k * 100;
                        g_ptr_array_add(segs, pkt_bytes(&q));
                }
                g_assert_cmpuint(gro_take(g, segs), ==, GRO_SEGMENTS_MAX);
                gro_check(g, segs, 0, GRO_SEGMENTS_MAX);
        }
}

static void test_gro_max_bytes(void) {
        /* IPv4 with timestamps: 52 bytes of headers; 52 x 1249 + 52 = 65000 = GRO_BYTES_MAX exactly. */
        const size_t plen = 1249, fit = (GRO_BYTES_MAX - 52) / 1249;
        g_autofree uint8_t *payload = payload_new(plen * (fit + 1) + 1, 12);
        Pkt base = pkt_base(AF_INET, IPPROTO_TCP, payload, plen);
        g_autoptr(GPtrArray) segs = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);
        g_autoptr(GPtrArray) tail = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);
        g_autofree Gro *g = g_new0(Gro, 1);

        g_assert_cmpuint(52 + fit * plen, ==, GRO_BYTES_MAX);
        g_assert_cmpuint(fit, <, GRO_SEGMENTS_MAX);
        for (size_t k = 0; k < fit + 1; k++) {
                Pkt q = base;
                q.seq += (uint32_t) (k * plen);
                q.ip_id = (uint16_t) (q.ip_id + k);
                q.payload = payload + k * plen;
                /* The one past the limit: a single byte is too many. */
                if (k == fit)
                        q.payload_len = 1;
                g_ptr_array_add(segs, pkt_bytes(&q));
        }
        g_assert_cmpuint(gro_take(g, segs), ==, fit);
        gro_check(g, segs, 0, fit);
}

/* IPv4 then IPv6 with the same header length (TCP options make up the difference), and the reverse. */
static void test_gro_family_mix(void) {
        g_autofree uint8_t *payload = payload_new(2 * FLOW_PAYLOAD, 13);

        for (size_t f = 0; f < 2; f++) {
                int first = f == 0 ? AF_INET : AF_INET6;
                Pkt a = flow_base(first, payload);
                Pkt b = flow_pkt(&a, 1);
                g_autoptr(GBytes) pa = NULL, pb = NULL;
                g_autofree Gro *g = g_new0(Gro, 1);
                Pkt other = flow_base(first == AF_INET ? AF_INET6 : AF_INET, payload);

                a.tcp_opts_len = first == AF_INET ? 32 : 12;
                memcpy(b.src, other.src, 16);
                memcpy(b.dst, other.dst, 16);
                b.family = other.family;
                b.tcp_opts_len = first == AF_INET ? 12 : 32;
                g_assert_cmpuint(pkt_hdr_len(&a), ==, pkt_hdr_len(&b));
                pa = pkt_bytes(&a);
                pb = pkt_bytes(&b);
                g_assert_true(gro_add(g, g_bytes_get_data(pa, NULL), g_bytes_get_size(pa)));
                g_assert_false(gro_add(g, g_bytes_get_data(pb, NULL), g_bytes_get_size(pb)));
        }
}

typedef struct GroReject {
        const char *name;
        int family;
        void (*mutate)(Pkt *p);
        bool alone; /* refused by an empty Gro too */
} GroReject;

static void mut_sport(Pkt *p) {
        p->sport++;
}
static void mut_dport(Pkt *p) {
        p->dport ^= 0x100;
}
static void mut_src(Pkt *p) {
        p->src[p->family == AF_INET ? 3 : 15] ^= 1;
}
static void mut_src_high(Pkt *p) {
        p->src[0] ^= 0x80;
}
static void mut_dst(Pkt *p) {
        p->dst[p->family == AF_INET ? 3 : 15] ^= 1;
}
static void mut_dst_high(Pkt *p) {
        p->dst[p->family == AF_INET ? 0 : 7] ^= 0x40;
}
static void mut_seq_gap(Pkt *p) {
        p->seq += 1;
}
static void mut_seq_back(Pkt *p) {
        p->seq -= 1;
}
static void mut_seq_retransmit(Pkt *p) {
        p->seq -= FLOW_PAYLOAD;
}
static void mut_ack(Pkt *p) {
        p->ack += 1;
}
static void mut_ack_high(Pkt *p) {
        p->ack ^= 0x80000000;
}
static void mut_tsval(Pkt *p) {
        p->tsval += 1;
}
static void mut_options_longer(Pkt *p) {
        p->tcp_opts_len = 16;
}
static void mut_options_longer_eol(Pkt *p) {
        /* The same options, padded with zeros: only the length tells. */
        p->tcp_opts_len = 16;
        p->opts_eol = true;
}
static void mut_options_none(Pkt *p) {
        p->tcp_opts_len = 0;
}
static void mut_window(Pkt *p) {
        p->window += 1;
}
static void mut_ip_options(Pkt *p) {
        p->ip_opts_len = 4;
}
static void mut_syn(Pkt *p) {
        p->flags |= F_SYN;
}
static void mut_fin(Pkt *p) {
        p->flags |= F_FIN;
}
static void mut_rst(Pkt *p) {
        p->flags |= F_RST;
}
static void mut_urg(Pkt *p) {
        p->flags |= F_URG;
        p->urg = 10;
}
static void mut_cwr(Pkt *p) {
        p->flags |= F_CWR;
}
static void mut_ece(Pkt *p) {
        p->flags |= F_ECE;
}
static void mut_no_ack(Pkt *p) {
        p->flags = F_PSH;
}
static void mut_no_payload(Pkt *p) {
        p->payload_len = 0;
}
static void mut_larger(Pkt *p) {
        p->payload_len = FLOW_PAYLOAD + 1;
}
static void mut_id_same(Pkt *p) {
        p->ip_id -= 1;
}
static void mut_id_skip(Pkt *p) {
        p->ip_id += 1;
}
static void mut_tos(Pkt *p) {
        p->tos ^= 0x01; /* ECN CE vs ECT(0) */
}
static void mut_ttl(Pkt *p) {
        p->ttl -= 1;
}
static void mut_no_df(Pkt *p) {
        p->frag = 0;
}
static void mut_fragment(Pkt *p) {
        p->frag |= 0x2000;
}
static void mut_reserved_bit(Pkt *p) {
        p->frag |= 0x8000; /* RFC 791's reserved flag (RFC 3514's evil bit) */
}
static void mut_flow_label(Pkt *p) {
        p->flow_label ^= 0x10000;
}
static void mut_flow_label_low(Pkt *p) {
        p->flow_label ^= 0x00001;
}
static void mut_udp(Pkt *p) {
        p->proto = IPPROTO_UDP;
}

static const GroReject gro_rejects[] = {
        { "sport", AF_INET, mut_sport },
        { "dport", AF_INET, mut_dport },
        { "src", AF_INET, mut_src },
        { "src-high", AF_INET, mut_src_high },
        { "dst", AF_INET, mut_dst },
        { "dst-high", AF_INET, mut_dst_high },
        { "seq-gap", AF_INET, mut_seq_gap },
        { "seq-back", AF_INET, mut_seq_back },
        { "seq-retransmit", AF_INET, mut_seq_retransmit },
        { "ack", AF_INET, mut_ack },
        { "ack-high", AF_INET, mut_ack_high },
        { "options", AF_INET, mut_tsval },
        { "options-longer", AF_INET, mut_options_longer },
        { "options-longer-eol", AF_INET, mut_options_longer_eol },
        { "options-none", AF_INET, mut_options_none },
        { "window", AF_INET, mut_window },
        { "ip-options", AF_INET, mut_ip_options, true },
        { "syn", AF_INET, mut_syn, true },
        { "fin", AF_INET, mut_fin, true },
        { "rst", AF_INET, mut_rst, true },
        { "urg", AF_INET, mut_urg, true },
        { "cwr", AF_INET, mut_cwr, true },
        { "ece", AF_INET, mut_ece, true },
        { "no-ack", AF_INET, mut_no_ack, true },
        { "no-payload", AF_INET, mut_no_payload, true },
        { "larger", AF_INET, mut_larger },
        { "ip-id-same", AF_INET, mut_id_same },
        { "ip-id-skip", AF_INET, mut_id_skip },
        { "tos", AF_INET, mut_tos },
        { "ttl", AF_INET, mut_ttl },
        { "df", AF_INET, mut_no_df },
        { "fragment", AF_INET, mut_fragment, true },
        { "reserved-bit", AF_INET, mut_reserved_bit },
        { "udp", AF_INET, mut_udp, true },
        { "sport6", AF_INET6, mut_sport },
        { "dport6", AF_INET6, mut_dport },
        { "src6", AF_INET6, mut_src },
        { "src6-high", AF_INET6, mut_src_high },
        { "dst6", AF_INET6, mut_dst },
        { "dst6-high", AF_INET6, mut_dst_high },
        { "seq-gap6", AF_INET6, mut_seq_gap },
        { "ack6", AF_INET6, mut_ack },
        { "options6", AF_INET6, mut_tsval },
        { "options-longer6", AF_INET6, mut_options_longer },
        { "options-longer-eol6", AF_INET6, mut_options_longer_eol },
        { "window6", AF_INET6, mut_window },
        { "syn6", AF_INET6, mut_syn, true },
        { "fin6", AF_INET6, mut_fin, true },
        { "rst6", AF_INET6, mut_rst, true },
        { "urg6", AF_INET6, mut_urg, true },
        { "no-payload6", AF_INET6, mut_no_payload, true },
        { "larger6", AF_INET6, mut_larger },
        { "traffic-class6", AF_INET6, mut_tos },
        { "hop-limit6", AF_INET6, mut_ttl },
        { "flow-label6", AF_INET6, mut_flow_label },
        { "flow-label6-low", AF_INET6, mut_flow_label_low },
        { "udp6", AF_INET6, mut_udp, true },
};

static void test_gro_reject(const void *data) {
        const GroReject *c = data;
        g_autofree uint8_t *payload = payload_new(3 * FLOW_PAYLOAD, 14);
        Pkt base = flow_base(c->family, payload);
        Pkt second = flow_pkt(&base, 1);
        g_autoptr(GPtrArray) segs = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);
        g_autoptr(GBytes) good = NULL, bad = NULL;
        g_autofree Gro *g = g_new0(Gro, 1);
        struct iovec *iov;

        g_ptr_array_add(segs, pkt_bytes(&base));
        good = pkt_bytes(&second);
        c->mutate(&second);
        bad = pkt_bytes(&second);

        /* Unchanged, the second packet is taken. */
        g_assert_cmpuint(gro_take(g, segs), ==, 1);
        g_assert_true(gro_add(g, g_bytes_get_data(good, NULL), g_bytes_get_size(good)));
        g_assert_cmpuint(gro_finish(g, &iov), ==, 4);

        /* Changed, it is not, and the first stays as it was. */
        g_assert_cmpuint(gro_take(g, segs), ==, 1);
        g_assert_false(gro_add(g, g_bytes_get_data(bad, NULL), g_bytes_get_size(bad)));
        gro_check(g, segs, 0, 1);

        /* On its own. */
        g_assert_cmpint(gro_add(g, g_bytes_get_data(bad, NULL), g_bytes_get_size(bad)), ==, !c->alone);
        if (!c->alone) {
                g_autoptr(GPtrArray) alone = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);

                g_ptr_array_add(alone, g_bytes_ref(bad));
                gro_check(g, alone, 0, 1);
        } else
                g_assert_cmpuint(gro_finish(g, &iov), ==, 0);
}

/* AE (RFC 9768, the flag in the low bit of byte 12) is a flag like the others: segments that differ
 * in it must not be coalesced (the kernel's GRO does not either), or the second segment's AE is lost
 * from the super-packet (with AccECN it is part of the ACE counter). Reported with
 * g_test_fail_printf() rather than aborting, so that the other tests still run. */
static void test_gro_ae_flag(void) {
        g_autofree uint8_t *payload = payload_new(2 * FLOW_PAYLOAD, 17);
        g_autoptr(GString) failed = g_string_new(NULL);

        for (size_t f = 0; f < 2; f++) {
                Pkt first = flow_base(f == 0 ? AF_INET : AF_INET6, payload);
                Pkt second = flow_pkt(&first, 1);
                g_autoptr(GBytes) a = NULL, b = NULL;
                g_autofree Gro *g = g_new0(Gro, 1);
                struct iovec *iov;

                second.th12_low = 0x01;
                a = pkt_bytes(&first);
                b = pkt_bytes(&second);
                g_assert_true(gro_add(g, g_bytes_get_data(a, NULL), g_bytes_get_size(a)));
                if (gro_add(g, g_bytes_get_data(b, NULL), g_bytes_get_size(b)))
                        g_string_append(failed, f == 0 ? " IPv4" : " IPv6");
                (void) gro_finish(g, &iov);
        }
        if (failed->len > 0)
                g_test_fail_printf("a segment with AE set was coalesced with one without (%s)", failed->str + 1);
}

/* ---- random super-packets: segment, validate, coalesce, segment again ---- */

static void test_random(void) {
        g_autoptr(GRand) rng = g_rand_new_with_seed(0x6d7074);
        g_autofree uint8_t *payload = payload_new(65536, 15);
        size_t n_gro = 0, n_split = 0;

        for (unsigned iter = 0; iter < 300; iter++) {
                int family = g_rand_boolean(rng) ? AF_INET : AF_INET6;
                bool udp = g_rand_int_range(rng, 0, 4) == 0;
                Pkt p = pkt_base(family, udp ? IPPROTO_UDP : IPPROTO_TCP, payload, 0);
                g_autoptr(GPtrArray) segs = NULL;
                size_t hdr_len, max_payload, min_chunk, mtu;
                uint16_t gso_size;
                bool coalescable;

                p.tcp_opts_len = 4 * (size_t) g_rand_int_range(rng, 0, 11);
                if (family == AF_INET && g_rand_int_range(rng, 0, 5) == 0)
                        p.ip_opts_len = 4 * (size_t) g_rand_int_range(rng, 1, 11);
                p.ip_id = (uint16_t) g_rand_int(rng);
                p.seq = g_rand_int(rng);
                p.ack = g_rand_int(rng);
                p.tsval = g_rand_int(rng);
                p.sport = (uint16_t) g_rand_int(rng);
                p.window = (uint16_t) g_rand_int(rng);
                for (size_t k = 0; k < 16; k++)
                        p.src[k] = (uint8_t) g_rand_int(rng);
                p.flags = F_ACK;
                switch (g_rand_int_range(rng, 0, 6)) {
                case 0:
                        p.flags |= F_FIN | F_PSH;
                        break;
                case 1:
                        p.flags |= F_CWR;
                        break;
                case 2:
                case 3:
                        p.flags |= F_PSH;
                        break;
                }

                hdr_len = pkt_hdr_len(&p);
                max_payload = family == AF_INET ? 0xffff - hdr_len : 0xffff - (hdr_len - 40);
                p.payload_len = g_rand_boolean(rng) ? (size_t) g_rand_int_range(rng, 1, 3001)
                                                    : (size_t) g_rand_int_range(rng, 1, (int32_t) max_payload + 1);
                min_chunk = MAX((p.payload_len + OFFLOAD_SEGMENTS_MAX - 1) / OFFLOAD_SEGMENTS_MAX, 1u);
                gso_size = (uint16_t) g_rand_int_range(rng, (int32_t) min_chunk, (int32_t) MAX(min_chunk, 9000u) + 1);
                mtu = hdr_len + gso_size;
                if (!udp && g_rand_int_range(rng, 0, 3) == 0)
                        mtu = hdr_len + (size_t) g_rand_int_range(rng, (int32_t) min_chunk, gso_size + 1);

                segs = tso_check(&p, udp ? USO : family == AF_INET ? TSO4 : TSO6, gso_size, mtu,
                                 (size_t) g_rand_int_range(rng, 0, 65));

                coalescable = !udp && p.ip_opts_len == 0 && (p.flags & ~(F_ACK | F_PSH)) == 0;
                if (coalescable) {
                        size_t supers = gro_expected(segs);

                        g_assert_cmpuint(gro_feed(segs), ==, supers);
                        n_gro++;
                        if (supers > 1)
                                n_split++;
                }
        }
        /* The seed covers both. */
        g_assert_cmpuint(n_gro, >, 50);
        g_assert_cmpuint(n_split, >, 5);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        g_test_add_func("/mpt/offload/csum/rfc1071", test_csum_rfc1071);
        g_test_add_func("/mpt/offload/csum/alignment", test_csum_alignment);
        g_test_add_func("/mpt/offload/csum/large", test_csum_large);
        g_test_add_func("/mpt/offload/csum/fold", test_csum_fold);
        g_test_add_func("/mpt/offload/csum/pseudo", test_csum_pseudo);
        g_test_add_data_func("/mpt/offload/segment/windows-uso6-100", GINT_TO_POINTER(0), test_windows);
        g_test_add_data_func("/mpt/offload/segment/windows-tso4-mss64", GINT_TO_POINTER(1), test_windows);

        g_test_add_func("/mpt/offload/plain", test_plain);
        for (size_t i = 0; i < G_N_ELEMENTS(csum_cases); i++) {
                g_autofree char *n = g_strdup_printf("/mpt/offload/needs-csum/%s", csum_cases[i].name);
                g_test_add_data_func(n, &csum_cases[i], test_needs_csum);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(bad_csum_cases); i++) {
                g_autofree char *n = g_strdup_printf("/mpt/offload/bad-csum/%s", bad_csum_cases[i].name);
                g_test_add_data_func(n, &bad_csum_cases[i], test_bad_csum);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(seg_cases); i++) {
                g_autofree char *n = g_strdup_printf("/mpt/offload/segment/%s", seg_cases[i].name);
                g_test_add_data_func(n, &seg_cases[i], test_segment);
        }
        g_test_add_func("/mpt/offload/segment/max-segs-exact", test_max_segs_exact);
        for (size_t i = 0; i < G_N_ELEMENTS(err_cases); i++) {
                g_autofree char *n = g_strdup_printf("/mpt/offload/error/%s", err_cases[i].name);
                g_test_add_data_func(n, &err_cases[i], test_error);
        }

        for (size_t i = 0; i < G_N_ELEMENTS(gro_cases); i++) {
                g_autofree char *n = g_strdup_printf("/mpt/offload/gro/%s", gro_cases[i].name);
                g_test_add_data_func(n, &gro_cases[i], test_gro);
        }
        g_test_add_func("/mpt/offload/gro/single", test_gro_single);
        g_test_add_func("/mpt/offload/gro/empty", test_gro_empty);
        g_test_add_func("/mpt/offload/gro/ends", test_gro_ends);
        g_test_add_func("/mpt/offload/gro/max-segments", test_gro_max_segments);
        g_test_add_func("/mpt/offload/gro/max-bytes", test_gro_max_bytes);
        g_test_add_func("/mpt/offload/gro/family-mix", test_gro_family_mix);
        for (size_t i = 0; i < G_N_ELEMENTS(gro_rejects); i++) {
                g_autofree char *n = g_strdup_printf("/mpt/offload/gro/reject/%s", gro_rejects[i].name);
                g_test_add_data_func(n, &gro_rejects[i], test_gro_reject);
        }

        g_test_add_func("/mpt/offload/random/tso-gro", test_random);
        /* Known bugs (see the comments at the functions): last, so that a failure there does not hide
         * the results of the tests above. */
        g_test_add_func("/mpt/offload/uso/mtu-below-gso", test_uso_mtu_below_gso);
        g_test_add_func("/mpt/offload/gro-flags/ae", test_gro_ae_flag);

        return g_test_run();
}
