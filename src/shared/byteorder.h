/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Big-endian (network byte order) fields in wire buffers, byte by byte: no alignment needed; the
 * little-endian ones that ChaCha20 and the Noise nonces use; and the Internet checksum. */

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t rd16be(const uint8_t *p) {
        return (uint16_t) (p[0] << 8 | p[1]);
}

static inline uint32_t rd32be(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static inline uint64_t rd64be(const uint8_t *p) {
        return (uint64_t) rd32be(p) << 32 | rd32be(p + 4);
}

static inline void wr16be(uint8_t *p, uint16_t v) {
        p[0] = (uint8_t) (v >> 8);
        p[1] = (uint8_t) v;
}

static inline void wr32be(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t) (v >> 24);
        p[1] = (uint8_t) (v >> 16);
        p[2] = (uint8_t) (v >> 8);
        p[3] = (uint8_t) v;
}

static inline void wr64be(uint8_t *p, uint64_t v) {
        wr32be(p, (uint32_t) (v >> 32));
        wr32be(p + 4, (uint32_t) v);
}

static inline uint32_t rd32le(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static inline void wr32le(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t) v;
        p[1] = (uint8_t) (v >> 8);
        p[2] = (uint8_t) (v >> 16);
        p[3] = (uint8_t) (v >> 24);
}

static inline void wr64le(uint8_t *p, uint64_t v) {
        wr32le(p, (uint32_t) v);
        wr32le(p + 4, (uint32_t) (v >> 32));
}

/* The Internet checksum (RFC 1071) as a 32-bit running sum: csum_add() adds a buffer to it,
 * csum_fold() gives the checksum to write with wr16be() (folded, complemented). The one's
 * complement sum is independent of byte order up to a final swap (RFC 1071 2(B)): it sums native
 * words, keeps the running sum in native order and swaps when it is written out. */
static inline uint32_t csum_add(uint32_t sum, const void *data, size_t len) {
        const uint8_t *p = data;
        uint64_t s = sum;

        for (; len >= 16; p += 16, len -= 16) {
                uint32_t w[4];
                memcpy(w, p, sizeof w);
                s += (uint64_t) w[0] + w[1] + w[2] + w[3];
        }
        for (; len >= 4; p += 4, len -= 4) {
                uint32_t w;
                memcpy(&w, p, sizeof w);
                s += w;
        }
        if (len >= 2) {
                uint16_t w;
                memcpy(&w, p, sizeof w);
                s += w;
                p += 2;
                len -= 2;
        }
        if (len)
                /* A last odd byte is the high half of a network-order word. */
                s += BYTE_ORDER == LITTLE_ENDIAN ? (uint32_t) p[0] : (uint32_t) p[0] << 8;
        while (s >> 16)
                s = (s & 0xffff) + (s >> 16);
        return (uint32_t) s;
}

/* Native running sum -> the 16-bit value of the sum in network order (not complemented). */
static inline uint16_t csum_to_be(uint32_t sum) {
        while (sum >> 16)
                sum = (sum & 0xffff) + (sum >> 16);
        return BYTE_ORDER == LITTLE_ENDIAN ? (uint16_t) ((sum >> 8 | sum << 8) & 0xffff) : (uint16_t) sum;
}

/* A 16-bit value in network order (as rd16be() reads it) -> native running sum. */
static inline uint32_t csum_from_be(uint16_t v) {
        return BYTE_ORDER == LITTLE_ENDIAN ? (uint32_t) ((v >> 8 | v << 8) & 0xffff) : v;
}

static inline uint16_t csum_fold(uint32_t sum) {
        return (uint16_t) ~csum_to_be(sum);
}
