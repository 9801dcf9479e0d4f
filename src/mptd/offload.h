/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* TUN offloads in user space (pure: no system calls).
 *
 * With IFF_VNET_HDR and TUNSETOFFLOAD, the kernel hands us TCP (TSO) and UDP (USO) "super-packets"
 * of up to 64 KiB with a virtio-net header, and packets whose checksum it left for us to finish
 * (NEEDS_CSUM). offload_segment() cuts them into wire-ready IP packets of the tunnel's MTU. The
 * payload is not copied: each segment is its rewritten headers (in a scratch area) plus a pointer
 * into the original packet.
 *
 * In the other direction, a Gro collects consecutive TCP segments of one flow, as they leave the
 * reorder buffer, into one super-packet with a virtio-net header, written to the TUN device with
 * one writev(): the kernel then handles a 64 KiB packet instead of 45 small ones. */

#include <linux/virtio_net.h>
#include <sys/uio.h>

#include "byteorder.h"
#include "macro.h"

/* Newer than the build headers may be (Linux 6.2). */
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif
#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#endif
#ifndef TUN_F_USO6
#define TUN_F_USO6 0x40
#endif

#define VNET_HDR_LEN sizeof(struct virtio_net_hdr)
#define OFFLOAD_HEADERS_MAX 128u  /* IP (60, or 40 + no extension headers) + TCP (60) */
#define OFFLOAD_SEGMENTS_MAX 128u /* 64 KiB in segments of at least 512 bytes of payload */

typedef struct OffloadSegment {
        uint8_t *headers;       /* complete IP + transport headers (or the whole packet) */
        size_t headers_len;
        const uint8_t *payload; /* NULL when headers holds the whole packet */
        size_t payload_len;
} OffloadSegment;

/* The running sum (byteorder.h, csum_add()) of a TCP or UDP pseudo-header (RFC 9293 3.1, RFC 8200 8.1). */
uint32_t csum_pseudo(int family, const uint8_t *src, const uint8_t *dst, uint8_t proto, uint32_t len);

/* Splits the packet pkt[0..len) that came with vnet header vh into segments of at most mtu bytes
 * (IP packet size). headers_scratch must hold OFFLOAD_SEGMENTS_MAX * (OFFLOAD_HEADERS_MAX + headroom)
 * bytes; each segment's headers start headroom bytes into its slot, so that the caller can put
 * its own header (GRE) in front. A packet that needs no splitting is returned as one segment
 * pointing into pkt itself (with its checksum finished if the kernel left it). pkt is modified.
 * Returns the number of segments (>= 1), or -EBADMSG for a malformed packet or header, -E2BIG
 * when the segments would not fit. */
int offload_segment(const struct virtio_net_hdr *vh, uint8_t *pkt, size_t len, size_t mtu,
                    uint8_t *headers_scratch, size_t headroom, OffloadSegment *segs, size_t max_segs);

/* The same, a window at a time, for packets of more segments than fit at once (UDP GSO with small
 * datagrams, TCP with a small MSS): produces segments first, first + 1, ... (at most max_segs and
 * OFFLOAD_SEGMENTS_MAX of them) into segs[0...] and the scratch area, and stores the packet's
 * number of segments in *ret_total. pkt is not modified between windows (only a packet that needs
 * no splitting is, and it is one segment). Returns the number produced, or -EBADMSG, or -E2BIG
 * when max_segs is 0, or -EINVAL when first is past the end. */
int offload_segment_from(const struct virtio_net_hdr *vh, uint8_t *pkt, size_t len, size_t mtu,
                         uint8_t *headers_scratch, size_t headroom, size_t first, OffloadSegment *segs,
                         size_t max_segs, size_t *ret_total);

/* Coalescing of received TCP segments into super-packets for the TUN device. */
#define GRO_SEGMENTS_MAX 64u
#define GRO_BYTES_MAX 65000u

typedef struct Gro {
        bool active;
        int family;
        uint8_t vnet[VNET_HDR_LEN];
        uint8_t headers[OFFLOAD_HEADERS_MAX]; /* the first segment's headers */
        size_t ip_len, headers_len;           /* IP header length; IP + TCP */
        uint16_t gso_size;                    /* payload of every segment but the last */
        uint32_t next_seq;                    /* TCP sequence number the next segment must have */
        uint16_t next_ip_id;
        bool last_short;                      /* a shorter segment (or PSH) ended the super-packet */
        size_t n_segments;
        size_t total;                         /* IP packet length so far */
        struct iovec iov[GRO_SEGMENTS_MAX + 2];
        size_t n_iov;
} Gro;

/* Tries to append one IP packet (complete, valid) to g. Returns true when it was taken (the
 * payload is referenced, not copied: it must stay valid until gro_finish()); false when it does
 * not belong (another flow, not TCP, a gap, other options...): finish g first, then try again
 * or write the packet alone. */
bool gro_add(Gro *g, const uint8_t *pkt, size_t len);
/* Completes g's headers and vnet header; returns the iovec to writev() to the TUN device (and
 * its count), or 0 when g is empty. g is empty afterwards. */
size_t gro_finish(Gro *g, struct iovec **ret_iov);
