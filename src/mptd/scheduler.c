/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <netinet/in.h>

#include "byteorder.h"
#include "ip-header.h"
#include "scheduler.h"

static uint32_t gcd32(uint32_t a, uint32_t b) {
        while (b) {
                uint32_t t = a % b;
                a = b;
                b = t;
        }
        return a;
}

/* Shrinks the weights so that they sum to MPT_VECTOR_MAX, by largest remainder: every share is
 * within one slot of exact, except that a candidate whose exact share is below one slot still
 * gets one (taken from the others). */
static void scale_weights(uint32_t *w, size_t n, uint64_t total) {
        bool forced[256] = {};
        uint64_t budget = MPT_VECTOR_MAX, rest = total;
        uint32_t g = 0;
        bool again = true;

        /* Candidates too small for a slot of their own get exactly one. */
        while (again) {
                again = false;
                for (size_t i = 0; i < n; i++)
                        if (!forced[i] && (uint64_t) w[i] * budget < rest) {
                                forced[i] = true;
                                budget--;
                                rest -= w[i];
                                again = true;
                        }
        }

        {
                uint64_t rem[256] = {}, given = 0;
                uint32_t exact[256];

                for (size_t i = 0; i < n; i++) {
                        if (forced[i]) {
                                exact[i] = 1;
                                continue;
                        }
                        exact[i] = (uint32_t) ((uint64_t) w[i] * budget / rest);
                        rem[i] = (uint64_t) w[i] * budget % rest;
                        given += exact[i];
                }
                /* Hand out what flooring left over, largest remainder first (ties: lowest index). */
                while (given < budget) {
                        size_t best = SIZE_MAX;
                        for (size_t i = 0; i < n; i++)
                                if (!forced[i] && (best == SIZE_MAX || rem[i] > rem[best]))
                                        best = i;
                        assert(best != SIZE_MAX);
                        exact[best]++;
                        rem[best] = 0;
                        given++;
                }
                for (size_t i = 0; i < n; i++) {
                        w[i] = exact[i];
                        g = gcd32(w[i], g);
                }
        }
        for (size_t i = 0; i < n; i++)
                w[i] /= g;
}

size_t sched_build_vector(const uint32_t *weights, size_t n, uint8_t *out) {
        uint32_t w[256], count[256] = {};
        uint64_t total = 0;
        uint32_t g = 0;
        size_t len = 0;

        if (n == 0)
                return 0;
        assert(n <= ELEMENTSOF(w));

        for (size_t i = 0; i < n; i++) {
                w[i] = MAX(weights[i], 1u);
                g = gcd32(w[i], g);
        }
        for (size_t i = 0; i < n; i++) {
                w[i] /= g;
                total += w[i];
        }

        if (total > MPT_VECTOR_MAX)
                scale_weights(w, n, total);

        for (;;) {
                size_t best = SIZE_MAX;

                /* Next finishing time of i is (count[i] + 1) / w[i]; compare without division. */
                for (size_t i = 0; i < n; i++) {
                        if (count[i] >= w[i])
                                continue;
                        if (best == SIZE_MAX ||
                            (uint64_t) (count[i] + 1) * w[best] < (uint64_t) (count[best] + 1) * w[i])
                                best = i;
                }
                if (best == SIZE_MAX)
                        break;
                count[best]++;
                out[len++] = (uint8_t) best;
        }
        return len;
}

/* The flow hashes' start values: arbitrary constants (the symmetric one is MurmurHash2's
 * multiplier), fixed so that a flow hashes alike in every worker and every run of mptd. */
#define FLOW_HASH_SEED 0x12345678u
#define FLOW_HASH_SYMMETRIC_SEED 0x5bd1e995u

/* 2^32 divided by the golden ratio, made odd (Knuth's multiplicative hashing; xxHash's PRIME32_1):
 * multiplying by it spreads a word's bits over the high half. */
#define HASH_GOLDEN_RATIO_32 0x9e3779b1u

/* MurmurHash3's fmix32 multipliers. */
#define FMIX32_C1 0x85ebca6bu
#define FMIX32_C2 0xc2b2ae35u

/* Final avalanche (murmur3's fmix32): mix32() carries a word's high bits only upwards, so without
 * it the low bits, which "hash % n" uses, would ignore the source port. */
static inline uint32_t fmix32(uint32_t h) {
        h ^= h >> 16;
        h *= FMIX32_C1;
        h ^= h >> 13;
        h *= FMIX32_C2;
        h ^= h >> 16;
        return h;
}

static inline uint32_t mix32(uint32_t h, uint32_t v) {
        h ^= v;
        h *= HASH_GOLDEN_RATIO_32;
        return h ^ (h >> 15);
}

/* The transport protocols whose first four bytes are the source and destination ports. */
static bool flow_has_ports(uint8_t proto) {
        return proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP ||
               proto == IPPROTO_DCCP || proto == IPPROTO_UDPLITE;
}

/* The largest power of two that is at most q (q >= 1). */
static unsigned round_down_pow2(unsigned q) {
        return 1u << (31 - __builtin_clz(q));
}

void sched_assign_runs_skip(SchedRuns *r, const uint8_t *vector, size_t vector_len, unsigned quantum,
                            size_t n, uint64_t skip, uint16_t *ret_paths) {
        bool open = false;

        assert(vector_len > 0 && quantum >= 1);
        for (size_t k = 0; k < vector_len && skip != 0 && !open; k++)
                open = !(skip & UINT64_C(1) << vector[k]);
        if (!open)
                skip = 0;
        for (size_t i = 0; i < n;) {
                unsigned chunk = (unsigned) MIN(n - i, (size_t) quantum);

                /* A path's deficit stays below 2 * quantum: it is topped up only when it cannot
                 * cover a chunk (< quantum), so one quantum always suffices. */
                if (!r->active || r->deficit[r->path] < chunk || (skip & UINT64_C(1) << r->path)) {
                        /* A path not skipped is in the vector: the search ends. */
                        for (;;) {
                                r->path = vector[r->cursor++ % vector_len];
                                if (!(skip & UINT64_C(1) << r->path))
                                        break;
                        }
                        r->deficit[r->path] = MIN(r->deficit[r->path], quantum - 1) + quantum;
                        r->active = true;
                }
                r->deficit[r->path] -= chunk;
                for (unsigned k = 0; k < chunk; k++)
                        ret_paths[i + k] = r->path;
                i += chunk;
        }
}

void sched_assign_runs(SchedRuns *r, const uint8_t *vector, size_t vector_len, unsigned quantum, size_t n,
                       uint16_t *ret_paths) {
        sched_assign_runs_skip(r, vector, vector_len, quantum, n, 0, ret_paths);
}

unsigned sched_adaptive_quantum(uint64_t segments, uint64_t interval_usec, size_t vector_len,
                                size_t min_slots, unsigned floor, unsigned ceil, bool slow_paths) {
        unsigned lo = slow_paths ? MIN(SCHED_QUEUED_QUANTUM_MIN, floor) : floor, q;

        q = sched_adaptive_count(segments, interval_usec, vector_len, min_slots, SCHED_QUANTUM_TIME_USEC, lo,
                                 ceil);
        /* Below the floor: down to a power of two, as sched_queued_quantum(). */
        return q >= floor ? q : MAX(round_down_pow2(q), lo);
}

unsigned sched_adaptive_count(uint64_t segments, uint64_t interval_usec, size_t vector_len, size_t min_slots,
                              uint64_t time_usec, unsigned floor, unsigned ceil) {
        unsigned __int128 num, q;

        assert(floor >= 1 && floor <= ceil);
        if (interval_usec == 0 || vector_len == 0 || min_slots == 0)
                return floor;
        /* segments / interval * time * min_slots / vector_len; 128 bits hold every product. */
        num = (unsigned __int128) segments * time_usec * MIN(min_slots, vector_len);
        q = num / ((unsigned __int128) interval_usec * vector_len);
        return (unsigned) (q < floor ? floor : q > ceil ? ceil : q);
}

unsigned sched_queued_quantum(uint64_t segments, uint64_t interval_usec, unsigned max) {
        unsigned lo = MIN(SCHED_QUEUED_QUANTUM_MIN, max), q;

        /* The whole tunnel's rate: a vector of one slot, which the "smallest share" has; then
         * down to a power of two, but not below lo (which max may bring down). */
        q = sched_adaptive_count(segments, interval_usec, 1, 1, SCHED_QUEUED_QUANTUM_TIME_USEC, lo, max);
        return MAX(round_down_pow2(q), lo);
}

size_t sched_vector_min_slots(const uint8_t *vector, size_t vector_len) {
        size_t count[256] = {}, min = SIZE_MAX;

        for (size_t i = 0; i < vector_len; i++)
                count[vector[i]]++;
        for (size_t i = 0; i < ELEMENTSOF(count); i++)
                if (count[i] > 0)
                        min = MIN(min, count[i]);
        return min == SIZE_MAX ? 0 : min;
}

void sched_runs_reset(SchedRuns *r) {
        memset(r->deficit, 0, sizeof r->deficit);
        r->active = false;
}

uint32_t sched_flow_hash_symmetric(const uint8_t *pkt, size_t len) {
        uint32_t h = FLOW_HASH_SYMMETRIC_SEED;
        size_t alen, l4 = 0;
        uint8_t proto;
        const uint8_t *a, *b;

        if (len >= IP4_HEADER_MIN && pkt[0] >> 4 == 4) {
                size_t ihl = (size_t) (pkt[0] & 0x0f) * 4;
                bool fragment = (rd16be(pkt + IP4_OFF_FRAG) & IP4_FRAG_MF_OFFSET) != 0;
                a = pkt + IP4_OFF_SRC;
                b = pkt + IP4_OFF_DST;
                alen = IP4_ADDR_LEN;
                proto = pkt[IP4_OFF_PROTOCOL];
                if (!fragment && ihl >= IP4_HEADER_MIN)
                        l4 = ihl;
        } else if (len >= IP6_HEADER_LEN && pkt[0] >> 4 == 6) {
                a = pkt + IP6_OFF_SRC;
                b = pkt + IP6_OFF_DST;
                alen = IP6_ADDR_LEN;
                proto = pkt[IP6_OFF_NEXT_HEADER];
                l4 = IP6_HEADER_LEN;
        } else
                return 0;

        /* Order the two ends so that both directions hash alike. */
        if (memcmp(a, b, alen) > 0) {
                const uint8_t *t = a;
                a = b;
                b = t;
        }
        for (size_t i = 0; i < alen; i += 4)
                h = mix32(h, rd32be(a + i));
        for (size_t i = 0; i < alen; i += 4)
                h = mix32(h, rd32be(b + i));
        h = mix32(h, proto);
        if (l4 && flow_has_ports(proto) && len >= l4 + 4) {
                uint16_t sp = rd16be(pkt + l4), dp = rd16be(pkt + l4 + 2);
                h = mix32(h, (uint32_t) MIN(sp, dp) << 16 | MAX(sp, dp));
        }
        return fmix32(h);
}

uint32_t sched_flow_hash(const uint8_t *pkt, size_t len) {
        uint32_t h = FLOW_HASH_SEED;
        size_t l4 = 0;
        uint8_t proto = 0;

        if (len >= IP4_HEADER_MIN && pkt[0] >> 4 == 4) {
                size_t ihl = (size_t) (pkt[0] & 0x0f) * 4;
                bool fragment = (rd16be(pkt + IP4_OFF_FRAG) & IP4_FRAG_MF_OFFSET) != 0;
                for (size_t i = IP4_OFF_SRC; i < IP4_OFF_DST + IP4_ADDR_LEN; i += 4)
                        h = mix32(h, rd32be(pkt + i));
                proto = pkt[IP4_OFF_PROTOCOL];
                /* Non-first fragments carry no ports: hash every fragment (MF or an offset set)
                 * by addresses and protocol only, so that a datagram's fragments share a path. */
                if (!fragment && ihl >= IP4_HEADER_MIN)
                        l4 = ihl;
        } else if (len >= IP6_HEADER_LEN && pkt[0] >> 4 == 6) {
                for (size_t i = IP6_OFF_SRC; i < IP6_OFF_DST + IP6_ADDR_LEN; i += 4)
                        h = mix32(h, rd32be(pkt + i));
                proto = pkt[IP6_OFF_NEXT_HEADER];
                l4 = IP6_HEADER_LEN;
                /* Flow label, when set, identifies the flow without parsing extension headers. */
                h = mix32(h, rd32be(pkt) & IP6_FLOW_LABEL);
        } else
                return 0;

        h = mix32(h, proto);
        if (l4 && flow_has_ports(proto) && len >= l4 + 4)
                h = mix32(h, rd32be(pkt + l4));
        return fmix32(h);
}
