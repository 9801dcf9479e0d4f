/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Big-endian (network byte order) fields in wire buffers, byte by byte: no alignment needed. */

#include <stdint.h>

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
