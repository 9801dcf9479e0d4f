/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A deterministic "random" stream for the handshake's tests and fuzzer
 * (mpt_handshake_new_random()), so that every message is reproducible: byte k of the stream is
 * seed + 7k (mod 256), simple enough to repeat in another language. */

#include <stddef.h>
#include <stdint.h>

typedef struct Rng {
        uint8_t seed;
        uint64_t k;
} Rng;

static inline int rng_fill(void *userdata, uint8_t *buf, size_t n) {
        Rng *rng = userdata;

        for (size_t i = 0; i < n; i++)
                buf[i] = (uint8_t) (rng->seed + 7 * rng->k++);
        return 0;
}
