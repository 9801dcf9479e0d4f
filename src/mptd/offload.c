/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <netinet/in.h>

#include "ip-header.h"
#include "offload.h"
#include "wire.h"

/* Adds the part of a pseudo-header after the addresses (RFC 9293 3.1, RFC 8200 8.1) to sum: the
 * protocol and the transport length. */
static uint32_t csum_pseudo_tail(uint32_t sum, int family, uint8_t proto, uint32_t len) {
        uint8_t tail[8] = {};

        if (family == AF_INET) {
                tail[1] = proto;
                wr16be(tail + 2, (uint16_t) len);
                return csum_add(sum, tail, 4);
        }
        wr32be(tail, len);
        tail[7] = proto;
        return csum_add(sum, tail, 8);
}

uint32_t csum_pseudo(int family, const uint8_t *src, const uint8_t *dst, uint8_t proto, uint32_t len) {
        size_t addr_len = family == AF_INET ? IP4_ADDR_LEN : IP6_ADDR_LEN;

        return csum_pseudo_tail(csum_add(csum_add(0, src, addr_len), dst, addr_len), family, proto, len);
}

static void ipv4_header_checksum(uint8_t *ip, size_t ihl) {
        ip[IP4_OFF_CHECKSUM] = ip[IP4_OFF_CHECKSUM + 1] = 0;
        wr16be(ip + IP4_OFF_CHECKSUM, mpt_checksum(ip, ihl));
}

/* IP and transport header lengths of a packet whose transport protocol must be proto. */
static int parse_headers(const uint8_t *pkt, size_t len, uint8_t proto, int *ret_family, size_t *ret_ip_len,
                         size_t *ret_headers_len) {
        size_t ip_len, l4_len;

        if (len < IP4_HEADER_MIN)
                return -EBADMSG;
        if (pkt[0] >> 4 == 4) {
                ip_len = (size_t) (pkt[0] & 0x0f) * 4;
                if (ip_len < IP4_HEADER_MIN || pkt[IP4_OFF_PROTOCOL] != proto ||
                    (rd16be(pkt + IP4_OFF_FRAG) & IP4_FRAG_MF_OFFSET) != 0)
                        return -EBADMSG; /* options are fine; fragments are not */
                *ret_family = AF_INET;
        } else if (pkt[0] >> 4 == 6) {
                ip_len = IP6_HEADER_LEN;
                if (len < IP6_HEADER_LEN || pkt[IP6_OFF_NEXT_HEADER] != proto) /* no extension headers */
                        return -EBADMSG;
                *ret_family = AF_INET6;
        } else
                return -EBADMSG;
        if (proto == IPPROTO_TCP) {
                if (len < ip_len + TCP_HEADER_MIN)
                        return -EBADMSG;
                l4_len = (size_t) (pkt[ip_len + TCP_OFF_DATA_OFFSET] >> 4) * 4;
                if (l4_len < TCP_HEADER_MIN)
                        return -EBADMSG;
        } else
                l4_len = UDP_HEADER_LEN;
        if (ip_len + l4_len > len || ip_len + l4_len > OFFLOAD_HEADERS_MAX)
                return -EBADMSG;
        *ret_ip_len = ip_len;
        *ret_headers_len = ip_len + l4_len;
        return 0;
}

static int finish_checksum(const struct virtio_net_hdr *vh, uint8_t *pkt, size_t len) {
        size_t start = vh->csum_start, field = (size_t) vh->csum_start + vh->csum_offset;
        uint32_t sum;
        uint16_t c;

        if (start >= len || field + 2 > len ||
            (vh->csum_offset != TCP_OFF_CHECKSUM && vh->csum_offset != UDP_OFF_CHECKSUM))
                return -EBADMSG;
        /* The kernel left the pseudo-header sum in the field: add the rest to it. */
        sum = csum_from_be(rd16be(pkt + field));
        pkt[field] = pkt[field + 1] = 0;
        c = csum_fold(csum_add(sum, pkt + start, len - start));
        if (c == 0 && vh->csum_offset == UDP_OFF_CHECKSUM)
                c = 0xffff; /* UDP: 0 means "no checksum" */
        wr16be(pkt + field, c);
        return 0;
}

/* How a super-packet is cut, from its checked headers. */
typedef struct SegmentPlan {
        int family;
        uint8_t proto;
        size_t ip_len, headers_len; /* IP header; IP + transport */
        size_t chunk;               /* payload of every segment but the last */
        size_t payload;             /* payload of them all */
        size_t n;                   /* the number of segments */
        uint16_t ip_id;             /* IPv4: the first segment's ID */
        uint32_t tcp_seq;           /* TCP: the first segment's sequence number */
        uint32_t addr_sum;          /* running sum of the pseudo-header's addresses */
} SegmentPlan;

/* Checks the headers of the packet that came with vh and plans its cut into segments of at most
 * mtu bytes. Returns 1 with *ret filled in; 0 for a packet that leaves as it is, one segment (no
 * GSO, or no payload), with its checksum finished if the kernel left it; or -EBADMSG. */
static int plan_segments(const struct virtio_net_hdr *vh, uint8_t *pkt, size_t len, size_t mtu,
                         SegmentPlan *ret) {
        uint8_t gso = vh->gso_type & (uint8_t) ~VIRTIO_NET_HDR_GSO_ECN;
        SegmentPlan p = {};
        int r;

        if (gso == VIRTIO_NET_HDR_GSO_NONE)
                goto whole;
        if (gso == VIRTIO_NET_HDR_GSO_TCPV4 || gso == VIRTIO_NET_HDR_GSO_TCPV6)
                p.proto = IPPROTO_TCP;
        else if (gso == VIRTIO_NET_HDR_GSO_UDP_L4)
                p.proto = IPPROTO_UDP;
        else
                return -EBADMSG;

        r = parse_headers(pkt, len, p.proto, &p.family, &p.ip_len, &p.headers_len);
        if (r < 0)
                return r;
        if ((gso == VIRTIO_NET_HDR_GSO_TCPV4 && p.family != AF_INET) ||
            (gso == VIRTIO_NET_HDR_GSO_TCPV6 && p.family != AF_INET6))
                return -EBADMSG;
        if (vh->gso_size == 0 || mtu <= p.headers_len)
                return -EBADMSG;
        /* TCP is a byte stream: cut at the MTU if gso_size would not fit. UDP datagrams keep the
         * sizes the application gave them, whatever the MTU (the outer packet then fragments). */
        p.chunk = p.proto == IPPROTO_TCP ? MIN((size_t) vh->gso_size, mtu - p.headers_len) : vh->gso_size;
        p.payload = len - p.headers_len;
        if (p.payload == 0)
                goto whole;
        p.n = DIV_ROUND_UP(p.payload, p.chunk);

        if (p.family == AF_INET) {
                p.ip_id = rd16be(pkt + IP4_OFF_ID);
                p.addr_sum = csum_add(0, pkt + IP4_OFF_SRC, 2 * IP4_ADDR_LEN);
        } else
                p.addr_sum = csum_add(0, pkt + IP6_OFF_SRC, 2 * IP6_ADDR_LEN);
        if (p.proto == IPPROTO_TCP)
                p.tcp_seq = rd32be(pkt + p.ip_len + TCP_OFF_SEQ);
        *ret = p;
        return 1;

whole:
        if (vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
                r = finish_checksum(vh, pkt, len);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Segment i's IP header, with plen bytes of payload, in h (which holds a copy of the packet's
 * headers); returns the running sum of its pseudo-header. */
static uint32_t segment_ip_header(const SegmentPlan *p, size_t i, size_t plen, uint8_t *h) {
        size_t l4_len = p->headers_len - p->ip_len;

        if (p->family == AF_INET) {
                wr16be(h + IP4_OFF_TOTAL_LEN, (uint16_t) (p->headers_len + plen));
                wr16be(h + IP4_OFF_ID, (uint16_t) (p->ip_id + i));
                ipv4_header_checksum(h, p->ip_len);
        } else
                wr16be(h + IP6_OFF_PAYLOAD_LEN, (uint16_t) (p->headers_len - IP6_HEADER_LEN + plen));
        return csum_pseudo_tail(p->addr_sum, p->family, p->proto, (uint32_t) (l4_len + plen));
}

/* Segment i's transport header th, over its plen bytes of payload data, with its checksum
 * (sum: the pseudo-header's). */
static void segment_transport_header(const SegmentPlan *p, size_t i, const uint8_t *data, size_t plen,
                                     uint32_t sum, uint8_t *th) {
        size_t l4_len = p->headers_len - p->ip_len;
        uint16_t c;

        if (p->proto == IPPROTO_TCP) {
                wr32be(th + TCP_OFF_SEQ, p->tcp_seq + (uint32_t) (i * p->chunk));
                /* As the kernel's TSO does: CWR on the first segment only, FIN and PSH on the last
                 * only. */
                if (i > 0)
                        th[TCP_OFF_FLAGS] &= (uint8_t) ~TCP_CWR;
                if (i + 1 < p->n)
                        th[TCP_OFF_FLAGS] &= (uint8_t) ~(TCP_FIN | TCP_PSH);
                th[TCP_OFF_CHECKSUM] = th[TCP_OFF_CHECKSUM + 1] = 0;
                sum = csum_add(sum, th, l4_len);
                sum = csum_add(sum, data, plen);
                wr16be(th + TCP_OFF_CHECKSUM, csum_fold(sum));
        } else {
                wr16be(th + UDP_OFF_LEN, (uint16_t) (UDP_HEADER_LEN + plen));
                th[UDP_OFF_CHECKSUM] = th[UDP_OFF_CHECKSUM + 1] = 0;
                sum = csum_add(sum, th, UDP_HEADER_LEN);
                sum = csum_add(sum, data, plen);
                c = csum_fold(sum);
                wr16be(th + UDP_OFF_CHECKSUM, c ?: 0xffff);
        }
}

/* Segments first .. first + count - 1 of the plan into segs[0..count) and the scratch area. */
static int cut_segments(const SegmentPlan *p, const uint8_t *pkt, uint8_t *headers_scratch, size_t headroom,
                        size_t first, size_t count, OffloadSegment *segs) {
        const size_t slot = headroom + OFFLOAD_HEADERS_MAX;

        for (size_t i = first; i < first + count; i++) {
                uint8_t *h = headers_scratch + (i - first) * slot + headroom;
                const uint8_t *data = pkt + p->headers_len + i * p->chunk;
                size_t plen = MIN(p->chunk, p->payload - i * p->chunk);
                uint32_t sum;

                memcpy(h, pkt, p->headers_len);
                sum = segment_ip_header(p, i, plen, h);
                segment_transport_header(p, i, data, plen, sum, h + p->ip_len);
                segs[i - first] = (OffloadSegment) {
                        .headers = h, .headers_len = p->headers_len, .payload = data, .payload_len = plen
                };
        }
        return (int) count;
}

/* What both entry points do first. Returns 1 with *ret for a packet to cut from segment first on;
 * 0 for a packet that leaves as it is, then segs[0]; or < 0 (see offload_segment_from()). */
static int segment_begin(const struct virtio_net_hdr *vh, uint8_t *pkt, size_t len, size_t mtu, size_t first,
                         OffloadSegment *segs, size_t max_segs, SegmentPlan *ret) {
        int r;

        if (max_segs == 0)
                return -E2BIG;
        r = plan_segments(vh, pkt, len, mtu, ret);
        if (r < 0)
                return r;
        if (r == 0) {
                if (first > 0)
                        return -EINVAL;
                segs[0] = (OffloadSegment) { .headers = pkt, .headers_len = len };
                return 0;
        }
        if (first >= ret->n)
                return -EINVAL;
        return 1;
}

int offload_segment(const struct virtio_net_hdr *vh, uint8_t *pkt, size_t len, size_t mtu,
                    uint8_t *headers_scratch, size_t headroom, OffloadSegment *segs, size_t max_segs) {
        SegmentPlan p;
        int r;

        r = segment_begin(vh, pkt, len, mtu, 0, segs, max_segs, &p);
        if (r <= 0)
                return r < 0 ? r : 1;
        if (p.n > max_segs || p.n > OFFLOAD_SEGMENTS_MAX)
                return -E2BIG;
        return cut_segments(&p, pkt, headers_scratch, headroom, 0, p.n, segs);
}

int offload_segment_from(const struct virtio_net_hdr *vh, uint8_t *pkt, size_t len, size_t mtu,
                         uint8_t *headers_scratch, size_t headroom, size_t first, OffloadSegment *segs,
                         size_t max_segs, size_t *ret_total) {
        SegmentPlan p;
        int r;

        r = segment_begin(vh, pkt, len, mtu, first, segs, max_segs, &p);
        if (r < 0)
                return r;
        if (r == 0) {
                *ret_total = 1;
                return 1;
        }
        *ret_total = p.n;
        return cut_segments(&p, pkt, headers_scratch, headroom, first,
                            MIN(MIN(max_segs, (size_t) OFFLOAD_SEGMENTS_MAX), p.n - first), segs);
}

/* ---- GRO ---- */

static bool gro_start(Gro *g, const uint8_t *pkt, size_t len, int family, size_t ip_len, size_t hdr_len) {
        const uint8_t *th = pkt + ip_len;

        *g = (Gro) {
                .active = true,
                .family = family,
                .ip_len = ip_len,
                .headers_len = hdr_len,
                .gso_size = (uint16_t) (len - hdr_len),
                .next_seq = rd32be(th + TCP_OFF_SEQ) + (uint32_t) (len - hdr_len),
                .next_ip_id = family == AF_INET ? (uint16_t) (rd16be(pkt + IP4_OFF_ID) + 1) : 0,
                .last_short = (th[TCP_OFF_FLAGS] & TCP_PSH) != 0,
                .n_segments = 1,
                .total = len,
        };
        memcpy(g->headers, pkt, hdr_len);
        g->iov[0] = (struct iovec) { .iov_base = g->vnet, .iov_len = VNET_HDR_LEN };
        g->iov[1] = (struct iovec) { .iov_base = g->headers, .iov_len = hdr_len };
        g->iov[2] = (struct iovec) { .iov_base = (void *) (pkt + hdr_len), .iov_len = len - hdr_len };
        g->n_iov = 3;
        return true;
}

bool gro_add(Gro *g, const uint8_t *pkt, size_t len) {
        size_t ip_len, hdr_len, plen;
        const uint8_t *th, *gth;
        int family;

        if (parse_headers(pkt, len, IPPROTO_TCP, &family, &ip_len, &hdr_len) < 0)
                return false;
        if (family == AF_INET && ip_len != IP4_HEADER_MIN)
                return false; /* IP options: not coalesced */
        th = pkt + ip_len;
        plen = len - hdr_len;
        /* Only data segments with nothing but ACK (and PSH) set. */
        if (plen == 0 || (th[TCP_OFF_FLAGS] & (uint8_t) ~(TCP_ACK | TCP_PSH)) != 0 ||
            !(th[TCP_OFF_FLAGS] & TCP_ACK))
                return false;

        if (!g->active)
                return gro_start(g, pkt, len, family, ip_len, hdr_len);

        gth = g->headers + g->ip_len;
        if (family != g->family || hdr_len != g->headers_len || g->last_short)
                return false;
        if (g->n_segments >= GRO_SEGMENTS_MAX || g->total + plen > GRO_BYTES_MAX || plen > g->gso_size)
                return false;
        if (family == AF_INET) {
                /* Same addresses, TOS, TTL, protocol and flags (DF and the reserved one: segmenting
                 * gives every packet the first one's); consecutive IDs. */
                if (memcmp(pkt + IP4_OFF_SRC, g->headers + IP4_OFF_SRC, 2 * IP4_ADDR_LEN) != 0 ||
                    pkt[IP4_OFF_TOS] != g->headers[IP4_OFF_TOS] ||
                    pkt[IP4_OFF_TTL] != g->headers[IP4_OFF_TTL] ||
                    rd16be(pkt + IP4_OFF_FRAG) != rd16be(g->headers + IP4_OFF_FRAG) ||
                    rd16be(pkt + IP4_OFF_ID) != g->next_ip_id)
                        return false;
        } else {
                /* Same version/class/flow label, hop limit and addresses. */
                if (memcmp(pkt, g->headers, IP6_OFF_PAYLOAD_LEN) != 0 ||
                    pkt[IP6_OFF_HOP_LIMIT] != g->headers[IP6_OFF_HOP_LIMIT] ||
                    memcmp(pkt + IP6_OFF_SRC, g->headers + IP6_OFF_SRC, 2 * IP6_ADDR_LEN) != 0)
                        return false;
        }
        /* Same ports, ACK number, data offset and AE, flags but PSH, window and options; the next
         * sequence number. */
        if (memcmp(th, gth, TCP_OFF_SEQ) != 0 ||
            memcmp(th + TCP_OFF_ACK_SEQ, gth + TCP_OFF_ACK_SEQ, 4) != 0 ||
            th[TCP_OFF_DATA_OFFSET] != gth[TCP_OFF_DATA_OFFSET] || rd32be(th + TCP_OFF_SEQ) != g->next_seq ||
            (th[TCP_OFF_FLAGS] & (uint8_t) ~TCP_PSH) != (gth[TCP_OFF_FLAGS] & (uint8_t) ~TCP_PSH) ||
            memcmp(th + TCP_OFF_WINDOW, gth + TCP_OFF_WINDOW, 2) != 0 ||
            memcmp(th + TCP_HEADER_MIN, gth + TCP_HEADER_MIN, hdr_len - ip_len - TCP_HEADER_MIN) != 0)
                return false;

        g->iov[g->n_iov++] = (struct iovec) { .iov_base = (void *) (pkt + hdr_len), .iov_len = plen };
        g->n_segments++;
        g->total += plen;
        g->next_seq += (uint32_t) plen;
        g->next_ip_id++;
        if (plen < g->gso_size || (th[TCP_OFF_FLAGS] & TCP_PSH)) {
                /* A short segment or PSH ends the super-packet (as the kernel's GRO does). */
                g->last_short = true;
                if (th[TCP_OFF_FLAGS] & TCP_PSH)
                        g->headers[g->ip_len + TCP_OFF_FLAGS] |= TCP_PSH;
        }
        return true;
}

size_t gro_finish(Gro *g, struct iovec **ret_iov) {
        struct virtio_net_hdr vh = {};
        size_t n;

        if (!g->active)
                return 0;
        if (g->n_segments == 1) {
                /* A plain packet: it arrived inside a UDP datagram whose checksum the kernel checked. */
                vh.flags = VIRTIO_NET_HDR_F_DATA_VALID;
        } else {
                uint8_t *ip = g->headers, *th = g->headers + g->ip_len;
                size_t tcp_len = g->total - g->ip_len;
                uint32_t pseudo;

                if (g->family == AF_INET) {
                        wr16be(ip + IP4_OFF_TOTAL_LEN, (uint16_t) g->total);
                        ipv4_header_checksum(ip, g->ip_len);
                        pseudo = csum_pseudo(AF_INET, ip + IP4_OFF_SRC, ip + IP4_OFF_DST, IPPROTO_TCP,
                                             (uint32_t) tcp_len);
                        vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
                } else {
                        wr16be(ip + IP6_OFF_PAYLOAD_LEN, (uint16_t) (g->total - IP6_HEADER_LEN));
                        pseudo = csum_pseudo(AF_INET6, ip + IP6_OFF_SRC, ip + IP6_OFF_DST, IPPROTO_TCP,
                                             (uint32_t) tcp_len);
                        vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
                }
                /* Checksum left partial: the pseudo-header sum in the field, not complemented; the
                 * kernel finishes it if the packet ever needs one. */
                wr16be(th + TCP_OFF_CHECKSUM, csum_to_be(pseudo));
                vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
                vh.hdr_len = (uint16_t) g->headers_len;
                vh.gso_size = g->gso_size;
                vh.csum_start = (uint16_t) g->ip_len;
                vh.csum_offset = TCP_OFF_CHECKSUM;
        }
        memcpy(g->vnet, &vh, sizeof vh);
        n = g->n_iov;
        *ret_iov = g->iov;
        g->active = false;
        return n;
}
