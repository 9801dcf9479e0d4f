/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A worker's held packets (Policy=, mptd(8) POLICY): while the paths are ahead of their pace,
 * a worker of a tunnel with redundant or lowest-latency rules goes on reading its TUN queue, so
 * that the packets of those rules go out at once instead of waiting behind bulk traffic. The
 * other packets wait here, in the order they were read, until the pace lets them go.
 *
 * A ring of bytes holding whole packets, each with the time it was read and the rule it matched
 * (so that it is classified once). One worker's, never shared: no locking. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct HoldPacket {
        uint64_t time; /* when it was read (CLOCK_MONOTONIC, ns) */
        int32_t rule;  /* the Policy= rule it matched, -1: none */
        uint32_t len;  /* bytes of data; HOLD_WRAP: the ring goes on at its start */
        uint8_t data[];
} HoldPacket;

#define HOLD_WRAP UINT32_MAX

typedef struct HoldQueue {
        uint8_t *buf;
        size_t size;
        size_t head; /* the oldest packet */
        size_t tail; /* where the next one goes */
        size_t n;    /* packets held */
        size_t bytes; /* their data bytes */
} HoldQueue;

/* size: the ring's bytes (untouched pages cost no memory). */
int hold_init(HoldQueue *q, size_t size);
void hold_done(HoldQueue *q);

/* Appends a copy of pkt. False: it does not fit (nothing changes). */
bool hold_push(HoldQueue *q, const uint8_t *pkt, size_t len, int rule, uint64_t time);
/* The oldest packet, NULL when none; valid until the next hold_push() or hold_pop(). */
const HoldPacket *hold_peek(const HoldQueue *q);
void hold_pop(HoldQueue *q);

static inline bool hold_empty(const HoldQueue *q) {
        return q->n == 0;
}
