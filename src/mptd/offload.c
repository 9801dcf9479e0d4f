/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <netinet/in.h>

#include "offload.h"
#include "wire.h"

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define TCP_URG 0x20
#define TCP_ECE 0x40
#define TCP_CWR 0x80

uint32_t csum_pseudo(int family, const uint8_t *src, const uint8_t *dst, uint8_t proto, uint32_t len) {
        uint8_t tail[8] = {};
        uint32_t s;

        if (family == AF_INET) {
                s = csum_add(0, src, 4);
                s = csum_add(s, dst, 4);
                tail[1] = proto;
                wr16be(tail + 2, (uint16_t) len);
                return csum_add(s, tail, 4);
        }
        s = csum_add(0, src, 16);
        s = csum_add(s, dst, 16);
        wr32be(tail, len);
        tail[7] = proto;
        return csum_add(s, tail, 8);
}

static void ipv4_header_checksum(uint8_t *ip, size_t ihl) {
        ip[10] = ip[11] = 0;
        wr16be(ip + 10, mpt_checksum(ip, ihl));
}

/* IP and transport header lengths of a packet whose transport protocol must be proto. */
static int parse_headers(const uint8_t *pkt, size_t len, uint8_t proto, int *ret_family, size_t *ret_ip_len,
                         size_t *ret_headers_len) {
        size_t ip_len, l4_len;

        if (len < 20)
                return -EBADMSG;
        if (pkt[0] >> 4 == 4) {
                ip_len = (size_t) (pkt[0] & 0x0f) * 4;
                if (ip_len < 20 || pkt[9] != proto || (rd16be(pkt + 6) & 0x3fff) != 0)
                        return -EBADMSG; /* options are fine; fragments are not */
                *ret_family = AF_INET;
        } else if (pkt[0] >> 4 == 6) {
                ip_len = 40;
                if (len < 40 || pkt[6] != proto) /* no extension headers */
                        return -EBADMSG;
                *ret_family = AF_INET6;
        } else
                return -EBADMSG;
        if (proto == IPPROTO_TCP) {
                if (len < ip_len + 20)
                        return -EBADMSG;
                l4_len = (size_t) (pkt[ip_len + 12] >> 4) * 4;
                if (l4_len < 20)
                        return -EBADMSG;
        } else
                l4_len = 8;
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

        if (start >= len || field + 2 > len || (vh->csum_offset != 16 && vh->csum_offset != 6))
                return -EBADMSG;
        /* The kernel left the pseudo-header sum in the field: add the rest to it. */
        sum = csum_from_be(rd16be(pkt + field));
        pkt[field] = pkt[field + 1] = 0;
        c = csum_fold(csum_add(sum, pkt + start, len - start));
        if (c == 0 && vh->csum_offset == 6)
                c = 0xffff; /* UDP: 0 means "no checksum" */
        wr16be(pkt + field, c);
        return 0;
}

static int segment(const struct virtio_net_hdr *vh, uint8_t *pkt, size_t len, size_t mtu, uint8_t *headers_scratch,
                   size_t headroom, size_t first, OffloadSegment *segs, size_t max_segs, bool whole, size_t *ret_total) {
        const size_t slot = headroom + OFFLOAD_HEADERS_MAX;
        uint8_t gso = vh->gso_type & (uint8_t) ~VIRTIO_NET_HDR_GSO_ECN;
        uint8_t proto;
        size_t ip_len, hdr_len, chunk, payload, n, end;
        int family, r;
        uint32_t seq0 = 0, addr_sum;
        uint16_t id0 = 0;

        if (max_segs == 0)
                return -E2BIG;

        if (gso == VIRTIO_NET_HDR_GSO_NONE) {
                if (vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
                        r = finish_checksum(vh, pkt, len);
                        if (r < 0)
                                return r;
                }
                if (first > 0)
                        return -EINVAL;
                segs[0] = (OffloadSegment) { .headers = pkt, .headers_len = len };
                *ret_total = 1;
                return 1;
        }
        if (gso == VIRTIO_NET_HDR_GSO_TCPV4 || gso == VIRTIO_NET_HDR_GSO_TCPV6)
                proto = IPPROTO_TCP;
        else if (gso == VIRTIO_NET_HDR_GSO_UDP_L4)
                proto = IPPROTO_UDP;
        else
                return -EBADMSG;

        r = parse_headers(pkt, len, proto, &family, &ip_len, &hdr_len);
        if (r < 0)
                return r;
        if ((gso == VIRTIO_NET_HDR_GSO_TCPV4 && family != AF_INET) ||
            (gso == VIRTIO_NET_HDR_GSO_TCPV6 && family != AF_INET6))
                return -EBADMSG;
        if (vh->gso_size == 0 || mtu <= hdr_len)
                return -EBADMSG;
        /* TCP is a byte stream: cut at the MTU if gso_size would not fit. UDP datagrams keep the
         * sizes the application gave them, whatever the MTU (the outer packet then fragments). */
        chunk = proto == IPPROTO_TCP ? MIN((size_t) vh->gso_size, mtu - hdr_len) : vh->gso_size;
        payload = len - hdr_len;
        if (payload == 0) {
                /* Finish it as a plain packet. */
                if (vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
                        r = finish_checksum(vh, pkt, len);
                        if (r < 0)
                                return r;
                }
                if (first > 0)
                        return -EINVAL;
                segs[0] = (OffloadSegment) { .headers = pkt, .headers_len = len };
                *ret_total = 1;
                return 1;
        }
        n = DIV_ROUND_UP(payload, chunk);
        if (first >= n)
                return -EINVAL;
        if (whole && (n > max_segs || n > OFFLOAD_SEGMENTS_MAX))
                return -E2BIG;
        end = first + MIN(MIN(max_segs, (size_t) OFFLOAD_SEGMENTS_MAX), n - first);

        if (family == AF_INET) {
                id0 = rd16be(pkt + 4);
                addr_sum = csum_add(0, pkt + 12, 8);
        } else
                addr_sum = csum_add(0, pkt + 8, 32);
        if (proto == IPPROTO_TCP)
                seq0 = rd32be(pkt + ip_len + 4);

        for (size_t i = first; i < end; i++) {
                uint8_t *h = headers_scratch + (i - first) * slot + headroom;
                const uint8_t *data = pkt + hdr_len + i * chunk;
                size_t plen = MIN(chunk, payload - i * chunk);
                size_t l4 = hdr_len - ip_len;
                uint8_t *th = h + ip_len;
                uint8_t pseudo_tail[8] = {};
                uint32_t sum;
                uint16_t c;

                memcpy(h, pkt, hdr_len);
                if (family == AF_INET) {
                        wr16be(h + 2, (uint16_t) (hdr_len + plen));
                        wr16be(h + 4, (uint16_t) (id0 + i));
                        ipv4_header_checksum(h, ip_len);
                        pseudo_tail[1] = proto;
                        wr16be(pseudo_tail + 2, (uint16_t) (l4 + plen));
                        sum = csum_add(addr_sum, pseudo_tail, 4);
                } else {
                        wr16be(h + 4, (uint16_t) (hdr_len - 40 + plen));
                        wr32be(pseudo_tail, (uint32_t) (l4 + plen));
                        pseudo_tail[7] = proto;
                        sum = csum_add(addr_sum, pseudo_tail, 8);
                }

                if (proto == IPPROTO_TCP) {
                        wr32be(th + 4, seq0 + (uint32_t) (i * chunk));
                        /* As the kernel's TSO does: CWR on the first segment only, FIN and PSH on
                         * the last only. */
                        if (i > 0)
                                th[13] &= (uint8_t) ~TCP_CWR;
                        if (i + 1 < n)
                                th[13] &= (uint8_t) ~(TCP_FIN | TCP_PSH);
                        th[16] = th[17] = 0;
                        sum = csum_add(sum, th, l4);
                        sum = csum_add(sum, data, plen);
                        wr16be(th + 16, csum_fold(sum));
                } else {
                        wr16be(th + 4, (uint16_t) (8 + plen));
                        th[6] = th[7] = 0;
                        sum = csum_add(sum, th, 8);
                        sum = csum_add(sum, data, plen);
                        c = csum_fold(sum);
                        wr16be(th + 6, c ?: 0xffff);
                }
                segs[i - first] = (OffloadSegment) { .headers = h, .headers_len = hdr_len, .payload = data, .payload_len = plen };
        }
        *ret_total = n;
        return (int) (end - first);
}

int offload_segment(const struct virtio_net_hdr *vh, uint8_t *pkt, size_t len, size_t mtu,
                    uint8_t *headers_scratch, size_t headroom, OffloadSegment *segs, size_t max_segs) {
        size_t total;

        return segment(vh, pkt, len, mtu, headers_scratch, headroom, 0, segs, max_segs, true, &total);
}

int offload_segment_from(const struct virtio_net_hdr *vh, uint8_t *pkt, size_t len, size_t mtu,
                         uint8_t *headers_scratch, size_t headroom, size_t first, OffloadSegment *segs,
                         size_t max_segs, size_t *ret_total) {
        return segment(vh, pkt, len, mtu, headers_scratch, headroom, first, segs, max_segs, false, ret_total);
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
                .next_seq = rd32be(th + 4) + (uint32_t) (len - hdr_len),
                .next_ip_id = family == AF_INET ? (uint16_t) (rd16be(pkt + 4) + 1) : 0,
                .last_short = (th[13] & TCP_PSH) != 0,
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
        if (family == AF_INET && ip_len != 20)
                return false; /* IP options: not coalesced */
        th = pkt + ip_len;
        plen = len - hdr_len;
        /* Only data segments with nothing but ACK (and PSH) set. */
        if (plen == 0 || (th[13] & (uint8_t) ~(TCP_ACK | TCP_PSH)) != 0 || !(th[13] & TCP_ACK))
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
                if (memcmp(pkt + 12, g->headers + 12, 8) != 0 || pkt[1] != g->headers[1] || pkt[8] != g->headers[8] ||
                    rd16be(pkt + 6) != rd16be(g->headers + 6) || rd16be(pkt + 4) != g->next_ip_id)
                        return false;
        } else {
                /* Same version/class/flow label, hop limit and addresses. */
                if (memcmp(pkt, g->headers, 4) != 0 || pkt[7] != g->headers[7] || memcmp(pkt + 8, g->headers + 8, 32) != 0)
                        return false;
        }
        /* Same ports, ACK number, data offset and AE, flags but PSH, window and options; the next
         * sequence number. */
        if (memcmp(th, gth, 4) != 0 || memcmp(th + 8, gth + 8, 4) != 0 || th[12] != gth[12] || rd32be(th + 4) != g->next_seq ||
            (th[13] & (uint8_t) ~TCP_PSH) != (gth[13] & (uint8_t) ~TCP_PSH) || memcmp(th + 14, gth + 14, 2) != 0 ||
            memcmp(th + 20, gth + 20, hdr_len - ip_len - 20) != 0)
                return false;

        g->iov[g->n_iov++] = (struct iovec) { .iov_base = (void *) (pkt + hdr_len), .iov_len = plen };
        g->n_segments++;
        g->total += plen;
        g->next_seq += (uint32_t) plen;
        g->next_ip_id++;
        if (plen < g->gso_size || (th[13] & TCP_PSH)) {
                /* A short segment or PSH ends the run (as the kernel's GRO does). */
                g->last_short = true;
                if (th[13] & TCP_PSH)
                        g->headers[g->ip_len + 13] |= TCP_PSH;
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
                        wr16be(ip + 2, (uint16_t) g->total);
                        ipv4_header_checksum(ip, g->ip_len);
                        pseudo = csum_pseudo(AF_INET, ip + 12, ip + 16, IPPROTO_TCP, (uint32_t) tcp_len);
                        vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
                } else {
                        wr16be(ip + 4, (uint16_t) (g->total - 40));
                        pseudo = csum_pseudo(AF_INET6, ip + 8, ip + 24, IPPROTO_TCP, (uint32_t) tcp_len);
                        vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
                }
                /* Checksum left partial: the pseudo-header sum in the field, not complemented; the
                 * kernel finishes it if the packet ever needs one. */
                wr16be(th + 16, csum_to_be(pseudo));
                vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
                vh.hdr_len = (uint16_t) g->headers_len;
                vh.gso_size = g->gso_size;
                vh.csum_start = (uint16_t) g->ip_len;
                vh.csum_offset = 16;
        }
        memcpy(g->vnet, &vh, sizeof vh);
        n = g->n_iov;
        *ret_iov = g->iov;
        g->active = false;
        return n;
}
