/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "scheduler.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>

/* ---- sched_build_vector() ---- */

static size_t build(const uint32_t *w, size_t n, uint8_t out[static MPT_VECTOR_MAX]) {
        size_t len;

        memset(out, 0xee, MPT_VECTOR_MAX);
        len = sched_build_vector(w, n, out);
        g_assert_cmpuint(len, <=, MPT_VECTOR_MAX);
        for (size_t i = 0; i < len; i++)
                g_assert_cmpuint(out[i], <, n);
        /* Nothing written past the returned length. */
        for (size_t i = len; i < MPT_VECTOR_MAX; i++)
                g_assert_cmpuint(out[i], ==, 0xee);
        return len;
}

static char *vector_string(const uint8_t *v, size_t len) {
        GString *s = g_string_new(NULL);

        for (size_t i = 0; i < len; i++)
                g_string_append_printf(s, "%s%u", i > 0 ? " " : "", v[i]);
        return g_string_free(s, false);
}

typedef struct {
        const char *name;
        uint32_t weights[8];
        size_t n;
        const char *vector;
} SpecVector;

static const SpecVector spec_vectors[] = {
        /* The worked examples of spec section 4.2, verbatim. */
        { "12-18-15", { 12, 18, 15 }, 3, "1 2 0 1 2 0 1 2 1 0 2 1 0 1 2" },
        { "10-10", { 10, 10 }, 2, "0 1" },
        { "3-1", { 3, 1 }, 2, "0 0 0 1" },
        { "100-80", { 100, 80 }, 2, "0 1 0 1 0 1 0 0 1" },
        /* More, worked out by hand with the rule "smallest next finishing time (k+1)/w, ties to the
         * lowest index": for 1,3 the finishing times are 1 (path 0) and 1/3, 2/3, 1 (path 1). */
        { "1-3", { 1, 3 }, 2, "1 1 0 1" },
        { "2-3", { 2, 3 }, 2, "1 0 1 0 1" },
        { "1-1-1", { 1, 1, 1 }, 3, "0 1 2" },
        { "2-1-1", { 2, 1, 1 }, 3, "0 0 1 2" },
        { "5", { 5 }, 1, "0" },
        /* Weight 0 counts as 1 (the original divided by zero); the header asks for weights >= 1,
         * this makes a 0 harmless. */
        { "0-1", { 0, 1 }, 2, "0 1" },
        { "0-3", { 0, 3 }, 2, "1 1 0 1" },
        { "0-0", { 0, 0 }, 2, "0 1" },
};

static void test_spec_vector(const void *data) {
        const SpecVector *v = data;
        uint8_t out[MPT_VECTOR_MAX];
        size_t len = build(v->weights, v->n, out);
        g_autofree char *s = vector_string(out, len);

        g_assert_cmpstr(s, ==, v->vector);
}

static void test_n0(void) {
        uint8_t out[MPT_VECTOR_MAX];
        const uint32_t w[1] = { 5 };

        g_assert_cmpuint(build(w, 0, out), ==, 0);
}

static void test_n_max(void) {
        uint32_t w[256];
        uint8_t out[MPT_VECTOR_MAX];
        size_t len;

        /* 256 candidates of equal weight: each once, in index order (all ties). Indices fit uint8_t. */
        for (size_t i = 0; i < 256; i++)
                w[i] = 7;
        len = build(w, 256, out);
        g_assert_cmpuint(len, ==, 256);
        for (size_t i = 0; i < 256; i++)
                g_assert_cmpuint(out[i], ==, i);
}

static void counts_of(const uint8_t *v, size_t len, size_t n, unsigned *counts) {
        memset(counts, 0, n * sizeof(unsigned));
        for (size_t i = 0; i < len; i++)
                counts[v[i]]++;
}

static uint32_t gcd(uint32_t a, uint32_t b) {
        while (b) {
                uint32_t t = a % b;
                a = b;
                b = t;
        }
        return a;
}

/* Smoothness properties that follow from the construction, checked on any vector v whose candidate
 * i appears c_i times (the reduced, possibly scaled weights) in a round of length L = sum c_i.
 *
 * The rule "next = smallest (k+1)/c_i" emits the merged, sorted sequence of the points j/c_i
 * (j = 1..c_i) of all candidates, ties by index. From that:
 *
 *  1. Prefix: after k slots, candidate i has had count_i(k) slots with
 *       k c_i / L - 1 <= count_i(k) <= (k + n) c_i / L.
 *     (If t is the value of the k-th point, every candidate has floor(t c_i) or one fewer points
 *     by then; summing gives tL - n <= k <= tL.)
 *  2. Gap: between two consecutive slots of i (cyclically, the vector repeats) there are at most
 *       sum over m != i of (floor(c_m / c_i) + 1)
 *     other slots: an interval of length 1/c_i holds at most floor(c_m/c_i) + 1 points of m.
 *  3. Run: i never holds more than floor(c_i / c_m) + 1 consecutive slots (cyclically) for any
 *     other m: r consecutive points of i span (r - 1)/c_i, and an interval with no point of m inside
 *     is at most 1/c_m long.
 */
static void assert_smooth(const uint8_t *v, size_t len, size_t n) {
        g_autofree unsigned *c = g_new0(unsigned, n), *count = g_new0(unsigned, n);

        counts_of(v, len, n, c);
        for (size_t i = 0; i < n; i++)
                g_assert_cmpuint(c[i], >=, 1);

        /* 1 */
        for (size_t k = 1; k <= len; k++) {
                count[v[k - 1]]++;
                for (size_t i = 0; i < n; i++) {
                        g_assert_cmpuint((uint64_t) k * c[i], <=, (uint64_t) count[i] * len + len);
                        g_assert_cmpuint((uint64_t) count[i] * len, <=, (uint64_t) (k + n) * c[i]);
                }
        }
        for (size_t i = 0; i < n; i++)
                g_assert_cmpuint(count[i], ==, c[i]);

        for (size_t i = 0; i < n; i++) {
                uint64_t gap_bound = 0;
                unsigned run_bound = UINT_MAX;
                size_t last = SIZE_MAX, first = SIZE_MAX, run = 0, max_run = 0;

                for (size_t m = 0; m < n; m++)
                        if (m != i) {
                                gap_bound += c[m] / c[i] + 1;
                                run_bound = MIN(run_bound, c[i] / c[m] + 1);
                        }

                /* 2, and the cyclic gap from the last slot of i round to its first. */
                for (size_t k = 0; k < len; k++)
                        if (v[k] == i) {
                                if (last != SIZE_MAX)
                                        g_assert_cmpuint(k - last - 1, <=, gap_bound);
                                else
                                        first = k;
                                last = k;
                        }
                g_assert_cmpuint(len - 1 - last + first, <=, gap_bound);

                /* 3, over two rounds so that a run across the boundary counts whole. */
                if (n == 1)
                        continue;
                for (size_t k = 0; k < 2 * len; k++) {
                        run = v[k % len] == i ? run + 1 : 0;
                        max_run = MAX(max_run, run);
                }
                g_assert_cmpuint(max_run, <=, run_bound);
        }
}

static void test_spec_vector_smooth(const void *data) {
        const SpecVector *v = data;
        uint8_t out[MPT_VECTOR_MAX];
        size_t len = build(v->weights, v->n, out);

        assert_smooth(out, len, v->n);
}

typedef struct {
        const char *name;
        uint32_t weights[12];
        size_t n;
} WeightSet;

/* sum(w) / gcd(w) <= MPT_VECTOR_MAX: the exact vector. */
static const WeightSet exact_sets[] = {
        { "1", { 1 }, 1 },
        { "10000", { 10000 }, 1 },
        { "1-1-1-1", { 1, 1, 1, 1 }, 4 },
        { "2-4-6", { 2, 4, 6 }, 3 },
        { "7-3", { 7, 3 }, 2 },
        { "10000-5000", { 10000, 5000 }, 2 },
        { "1000-3000-96", { 1000, 3000, 96 }, 3 },
        { "1-to-10", { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, 10 },
        { "4095-1", { 4095, 1 }, 2 },                    /* exactly MPT_VECTOR_MAX long */
        { "2000-2000-96", { 2000, 2000, 96 }, 3 },       /* 4096 */
        { "primes", { 1009, 1013, 1019, 1021, 31 }, 5 }, /* 4093 */
        { "9999-3333", { 9999, 3333 }, 2 },              /* 3:1 */
};

static void test_exact(const void *data) {
        const WeightSet *s = data;
        uint8_t out[MPT_VECTOR_MAX];
        unsigned counts[12];
        uint32_t g = 0;
        uint64_t total = 0;
        size_t len;

        for (size_t i = 0; i < s->n; i++)
                g = gcd(s->weights[i], g);
        for (size_t i = 0; i < s->n; i++)
                total += s->weights[i] / g;
        g_assert_cmpuint(total, <=, MPT_VECTOR_MAX);

        /* Length sum(W)/gcd(W), and path i exactly W[i]/gcd(W) times (spec 4.2). */
        len = build(s->weights, s->n, out);
        g_assert_cmpuint(len, ==, total);
        counts_of(out, len, s->n, counts);
        for (size_t i = 0; i < s->n; i++)
                g_assert_cmpuint(counts[i], ==, s->weights[i] / g);
        assert_smooth(out, len, s->n);
}

/* sum(w) / gcd(w) > MPT_VECTOR_MAX: scaled. */
static const WeightSet scaled_sets[] = {
        { "9999-10000-9998-1", { 9999, 10000, 9998, 1 }, 4 },
        { "10000-1", { 10000, 1 }, 2 },
        { "4096-1", { 4096, 1 }, 2 },
        { "10000-9999", { 10000, 9999 }, 2 },
        { "7919-7907-7901", { 7919, 7907, 7901 }, 3 },
        { "5000-5001", { 5000, 5001 }, 2 },
};

static void check_scaled(const uint32_t *w, size_t n, double tolerance) {
        uint8_t out[MPT_VECTOR_MAX];
        unsigned counts[256];
        double total = 0;
        size_t len;

        len = build(w, n, out);
        g_assert_cmpuint(len, >=, n);
        counts_of(out, len, n, counts);
        for (size_t i = 0; i < n; i++)
                total += MAX(w[i], 1u);
        for (size_t i = 0; i < n; i++) {
                double exact = MAX(w[i], 1u) / total, got = (double) counts[i] / (double) len;
                double error = got > exact ? got - exact : exact - got;

                /* Every candidate keeps at least one slot. */
                g_assert_cmpuint(counts[i], >=, 1);
                if (error >= tolerance)
                        g_test_message("candidate %zu: share %.6f, exact %.6f, tolerance %.6f",
                                       i, got, exact, tolerance);
                g_assert_cmpfloat(error, <, tolerance);
        }
        assert_smooth(out, len, n);
}

static void test_scaled(const void *data) {
        const WeightSet *s = data;

        /* The header's promise: each share within 1/MPT_VECTOR_MAX of the exact one. It holds for
         * these sets; see test_random_weights() for what holds in general. */
        check_scaled(s->weights, s->n, 1.0 / MPT_VECTOR_MAX);
}

static void test_random_weights(void) {
        GRand *rand = g_rand_new_with_seed(4242);

        for (unsigned iter = 0; iter < 300; iter++) {
                size_t n = g_rand_int_range(rand, 1, iter % 10 == 0 ? 64 : 9);
                uint32_t w[64], g = 0;
                uint64_t total = 0;

                for (size_t i = 0; i < n; i++) {
                        w[i] = iter % 3 == 0 ? (uint32_t) g_rand_int_range(rand, 1, 20) * 50
                                             : (uint32_t) g_rand_int_range(rand, 1, 10001);
                        g = gcd(w[i], g);
                }
                for (size_t i = 0; i < n; i++)
                        total += w[i] / g;
                if (total <= MPT_VECTOR_MAX) {
                        uint8_t out[MPT_VECTOR_MAX];
                        unsigned counts[64];
                        size_t len = build(w, n, out);

                        g_assert_cmpuint(len, ==, total);
                        counts_of(out, len, n, counts);
                        for (size_t i = 0; i < n; i++)
                                g_assert_cmpuint(counts[i], ==, w[i] / g);
                        assert_smooth(out, len, n);
                } else {
                        /* Largest remainder: within one slot of exact, except that candidates
                         * below one slot get one, which can move every other share by up to
                         * one slot per such candidate. */
                        unsigned forced = 0;
                        uint64_t sum = 0;
                        for (size_t i = 0; i < n; i++)
                                sum += w[i];
                        for (size_t i = 0; i < n; i++)
                                if ((uint64_t) w[i] * MPT_VECTOR_MAX < sum)
                                        forced++;
                        check_scaled(w, n, (double) (forced + 1) / MPT_VECTOR_MAX);
                }
        }
        g_rand_free(rand);
}

/* ---- sched_flow_hash() ---- */

static uint32_t hash_exact(const uint8_t *pkt, size_t len) {
        /* An exact-size heap copy: AddressSanitizer sees any read beyond len. */
        uint8_t *copy = g_memdup2(pkt, len ?: 1);
        uint32_t h = sched_flow_hash(copy, len);

        g_free(copy);
        return h;
}

#define V4_LEN 40u
/* IPv4 10.0.0.1 -> 10.0.0.2, 20-byte header, ports at 20/22, frag = flags and offset word. */
static void make_v4(uint8_t p[static V4_LEN], uint8_t proto, uint16_t sport, uint16_t dport, uint16_t frag) {
        static const uint8_t h[20] = {
                0x45, 0, 0, V4_LEN, 0x12, 0x34, 0, 0, 64, 0, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        };

        memcpy(p, h, sizeof h);
        p[6] = frag >> 8;
        p[7] = frag & 0xff;
        p[9] = proto;
        p[20] = sport >> 8;
        p[21] = sport & 0xff;
        p[22] = dport >> 8;
        p[23] = dport & 0xff;
        for (size_t i = 24; i < V4_LEN; i++)
                p[i] = (uint8_t) i;
}

#define V6_LEN 60u
/* IPv6 2001:db8::1 -> 2001:db8::2, next header nh, ports at 40/42, flow label label. */
static void make_v6(uint8_t p[static V6_LEN], uint8_t nh, uint16_t sport, uint16_t dport, uint32_t label) {
        static const uint8_t src[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
        static const uint8_t dst[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };

        memset(p, 0, V6_LEN);
        p[0] = 0x60; /* version 6, traffic class 0 */
        p[1] = (label >> 16) & 0x0f;
        p[2] = (label >> 8) & 0xff;
        p[3] = label & 0xff;
        p[5] = V6_LEN - 40;
        p[6] = nh;
        p[7] = 64;
        memcpy(p + 8, src, 16);
        memcpy(p + 24, dst, 16);
        p[40] = sport >> 8;
        p[41] = sport & 0xff;
        p[42] = dport >> 8;
        p[43] = dport & 0xff;
        for (size_t i = 44; i < V6_LEN; i++)
                p[i] = (uint8_t) (i * 3);
}

static void test_hash_ipv4(void) {
        uint8_t a[V4_LEN], b[V4_LEN];
        uint32_t h;

        make_v4(a, 6, 40000, 443, 0x4000 /* DF */);
        h = hash_exact(a, sizeof a);

        /* Same flow, same hash: identification, TTL, checksum and payload do not count. */
        make_v4(b, 6, 40000, 443, 0x4000);
        b[4] = 0x99;
        b[8] = 3;
        b[10] = 0x55;
        b[30] ^= 0xff;
        g_assert_cmphex(hash_exact(b, sizeof b), ==, h);
        /* ...nor does the length (a shorter packet of the flow). */
        g_assert_cmphex(hash_exact(a, 24), ==, h);

        /* Different flows: ports, addresses, protocol. */
        make_v4(b, 6, 40001, 443, 0x4000);
        g_assert_cmphex(hash_exact(b, sizeof b), !=, h);
        make_v4(b, 6, 40000, 444, 0x4000);
        g_assert_cmphex(hash_exact(b, sizeof b), !=, h);
        make_v4(b, 6, 443, 40000, 0x4000); /* the other direction is another flow */
        g_assert_cmphex(hash_exact(b, sizeof b), !=, h);
        make_v4(b, 17, 40000, 443, 0x4000);
        g_assert_cmphex(hash_exact(b, sizeof b), !=, h);
        make_v4(b, 6, 40000, 443, 0x4000);
        b[19] = 3;
        g_assert_cmphex(hash_exact(b, sizeof b), !=, h);
        make_v4(b, 6, 40000, 443, 0x4000);
        b[12] = 11;
        g_assert_cmphex(hash_exact(b, sizeof b), !=, h);

        /* UDP, DCCP, SCTP and UDP-Lite have ports there too; other protocols do not. */
        for (size_t i = 0; i < 4; i++) {
                static const uint8_t with_ports[] = { 17, 33, 132, 136 };
                make_v4(a, with_ports[i], 1000, 2000, 0);
                make_v4(b, with_ports[i], 1000, 2001, 0);
                g_assert_cmphex(hash_exact(a, sizeof a), !=, hash_exact(b, sizeof b));
        }
        make_v4(a, 1 /* ICMP */, 0x0800, 0x1111, 0);
        make_v4(b, 1, 0x0000, 0x2222, 0);
        g_assert_cmphex(hash_exact(a, sizeof a), ==, hash_exact(b, sizeof b));
        make_v4(a, 47 /* GRE */, 1, 2, 0);
        make_v4(b, 47, 3, 4, 0);
        g_assert_cmphex(hash_exact(a, sizeof a), ==, hash_exact(b, sizeof b));
}

static void test_hash_ipv4_options(void) {
        uint8_t a[V4_LEN + 4], b[V4_LEN + 4];

        /* IHL 6: the ports follow the options. Options do not count, ports do. */
        make_v4(a, 17, 0, 0, 0);
        memmove(a + 24, a + 20, V4_LEN - 20);
        a[0] = 0x46;
        memcpy(a + 20, ((const uint8_t[]) { 0x01, 0x01, 0x01, 0x00 }), 4); /* NOP NOP NOP EOL */
        memcpy(a + 24, ((const uint8_t[]) { 0x13, 0x88, 0x00, 0x35 }), 4); /* ports 5000 -> 53 */
        memcpy(b, a, sizeof a);
        b[21] = 0x00;
        g_assert_cmphex(hash_exact(a, sizeof a), ==, hash_exact(b, sizeof b));
        b[27] = 0x36;
        g_assert_cmphex(hash_exact(a, sizeof a), !=, hash_exact(b, sizeof b));

        /* An IHL below 5 is nonsense: no ports are read. */
        make_v4(a, 6, 1, 2, 0);
        make_v4(b, 6, 3, 4, 0);
        a[0] = b[0] = 0x44;
        g_assert_cmphex(hash_exact(a, V4_LEN), ==, hash_exact(b, V4_LEN));
}

static void test_hash_ipv4_fragments(void) {
        uint8_t first[V4_LEN], later[V4_LEN], other[V4_LEN], whole[V4_LEN];
        uint32_t h;

        /* Fragments of one datagram must take one path: the first fragment (MF, offset 0) carries
         * the ports, the later ones (offset > 0) carry payload bytes where the ports would be, so
         * every fragment hashes by addresses and protocol only. */
        make_v4(first, 17, 5000, 53, 0x2000);        /* MF */
        make_v4(later, 17, 0xdead, 0xbeef, 0x00b9);  /* offset 185 * 8, last fragment */
        h = hash_exact(first, sizeof first);
        g_assert_cmphex(hash_exact(later, sizeof later), ==, h);
        make_v4(later, 17, 0x1234, 0x5678, 0x20b9); /* MF and an offset */
        g_assert_cmphex(hash_exact(later, sizeof later), ==, h);
        make_v4(other, 17, 5001, 54, 0x2000);       /* another fragmented datagram, same hosts */
        g_assert_cmphex(hash_exact(other, sizeof other), ==, h);

        /* DF is not a fragment: ports count. */
        make_v4(whole, 17, 5000, 53, 0x4000);
        make_v4(other, 17, 5001, 53, 0x4000);
        g_assert_cmphex(hash_exact(whole, sizeof whole), !=, hash_exact(other, sizeof other));
        /* ...and the reserved bit alone neither. */
        make_v4(whole, 17, 5000, 53, 0x8000);
        make_v4(other, 17, 5001, 53, 0x8000);
        g_assert_cmphex(hash_exact(whole, sizeof whole), !=, hash_exact(other, sizeof other));
}

static void test_hash_ipv6(void) {
        uint8_t a[V6_LEN], b[V6_LEN];
        uint32_t h;

        make_v6(a, 6, 40000, 443, 0);
        h = hash_exact(a, sizeof a);
        make_v6(b, 6, 40000, 443, 0);
        b[7] = 1;    /* hop limit */
        b[50] ^= 1;  /* payload */
        b[5] = 200;  /* payload length */
        g_assert_cmphex(hash_exact(b, sizeof b), ==, h);
        make_v6(b, 6, 40001, 443, 0);
        g_assert_cmphex(hash_exact(b, sizeof b), !=, h);
        make_v6(b, 6, 40000, 80, 0);
        g_assert_cmphex(hash_exact(b, sizeof b), !=, h);
        make_v6(b, 17, 40000, 443, 0);
        g_assert_cmphex(hash_exact(b, sizeof b), !=, h);
        make_v6(b, 6, 40000, 443, 0);
        b[39] = 3;
        g_assert_cmphex(hash_exact(b, sizeof b), !=, h);
        /* The flow label counts. */
        make_v6(b, 6, 40000, 443, 0x12345);
        g_assert_cmphex(hash_exact(b, sizeof b), !=, h);
        /* The traffic class does not. */
        make_v6(b, 6, 40000, 443, 0);
        b[0] = 0x6f;
        b[1] |= 0xf0;
        g_assert_cmphex(hash_exact(b, sizeof b), ==, h);

        /* Extension headers are not walked: with a fragment header (44) the bytes after the fixed
         * header are not ports, and every fragment hashes alike. */
        make_v6(a, 44, 1, 2, 7);
        make_v6(b, 44, 3, 4, 7);
        g_assert_cmphex(hash_exact(a, sizeof a), ==, hash_exact(b, sizeof b));
        make_v6(a, 58 /* ICMPv6 */, 1, 2, 0);
        make_v6(b, 58, 3, 4, 0);
        g_assert_cmphex(hash_exact(a, sizeof a), ==, hash_exact(b, sizeof b));
}

static void test_hash_garbage(void) {
        uint8_t v4[V4_LEN], v6[V6_LEN], junk[64];
        GRand *rand;

        make_v4(v4, 6, 1, 2, 0);
        make_v6(v6, 6, 1, 2, 0);

        /* Too short, or neither IPv4 nor IPv6: 0, and no read beyond the end. */
        g_assert_cmphex(hash_exact(v4, 0), ==, 0);
        g_assert_cmphex(hash_exact(v4, 1), ==, 0);
        g_assert_cmphex(hash_exact(v4, 19), ==, 0);
        g_assert_cmphex(hash_exact(v6, 39), ==, 0);
        memset(junk, 0, sizeof junk);
        g_assert_cmphex(hash_exact(junk, sizeof junk), ==, 0);
        junk[0] = 0x50;
        g_assert_cmphex(hash_exact(junk, sizeof junk), ==, 0);
        junk[0] = 0xa1; /* a keepalive's first byte */
        g_assert_cmphex(hash_exact(junk, sizeof junk), ==, 0);
        /* An IPv6 first nibble on a 20..39-byte packet is not IPv4 either. */
        g_assert_cmphex(hash_exact(v6, 20), ==, 0);

        /* Ports cut off: hashed like a packet that has none there. */
        for (size_t len = 20; len < 24; len++)
                g_assert_cmphex(hash_exact(v4, len), ==, hash_exact(v4, 20));
        for (size_t len = 40; len < 44; len++)
                g_assert_cmphex(hash_exact(v6, len), ==, hash_exact(v6, 40));
        /* IHL 15 claims 60 bytes of header in a 40-byte packet. */
        v4[0] = 0x4f;
        (void) hash_exact(v4, V4_LEN);

        rand = g_rand_new_with_seed(77);
        for (unsigned i = 0; i < 20000; i++) {
                size_t len = g_rand_int_range(rand, 0, 80);
                uint8_t *p = g_malloc(len ?: 1);
                uint32_t h;

                for (size_t j = 0; j < len; j++)
                        p[j] = (uint8_t) g_rand_int(rand);
                if (len > 0 && g_rand_boolean(rand))
                        p[0] = (p[0] & 0x0f) | (g_rand_boolean(rand) ? 0x40 : 0x60);
                h = sched_flow_hash(p, len);
                if (len < 20 || (p[0] >> 4 != 4 && p[0] >> 4 != 6) || (p[0] >> 4 == 6 && len < 40))
                        g_assert_cmphex(h, ==, 0);
                /* Deterministic. */
                g_assert_cmphex(sched_flow_hash(p, len), ==, h);
                g_free(p);
        }
        g_rand_free(rand);
}

static void test_hash_spread(void) {
        /* Not a proof of quality, but the flow scheduler needs flows spread over paths: 6000 flows
         * between the same two hosts that differ only in the source port (or only in the
         * destination port) land in 2, 3 and 4 buckets (hash % n) within 20% of even. */
        for (unsigned which = 0; which < 2; which++)
                for (unsigned n = 2; n <= 4; n++) {
                        unsigned buckets[4] = {};

                        for (unsigned port = 1024; port < 1024 + 6000; port++) {
                                uint8_t p[V4_LEN];
                                if (which)
                                        make_v4(p, 6, 40000, (uint16_t) port, 0);
                                else
                                        make_v4(p, 6, (uint16_t) port, 443, 0);
                                buckets[sched_flow_hash(p, sizeof p) % n]++;
                        }
                        for (size_t i = 0; i < n; i++) {
                                g_assert_cmpuint(buckets[i], >, 6000 / n * 8 / 10);
                                g_assert_cmpuint(buckets[i], <, 6000 / n * 12 / 10);
                        }
                }
}

/* Both directions of a flow hash alike (so they share a TUN queue), different flows mostly do
 * not, and the queues are used evenly. */
static void test_hash_symmetric(void) {
        uint8_t a[V4_LEN], b[V4_LEN], c[V6_LEN], d[V6_LEN];
        unsigned buckets[4] = {};

        make_v4(a, 6, 40000, 443, 0x4000);
        make_v4(b, 6, 443, 40000, 0x4000);
        b[12] = 10, b[15] = 2, b[19] = 1; /* swap 10.0.0.1 and 10.0.0.2 */
        g_assert_cmphex(sched_flow_hash_symmetric(a, sizeof a), ==, sched_flow_hash_symmetric(b, sizeof b));
        g_assert_cmphex(sched_flow_hash_symmetric(a, sizeof a), !=, 0);
        /* Another flow (other port) differs. */
        make_v4(b, 6, 40001, 443, 0x4000);
        g_assert_cmphex(sched_flow_hash_symmetric(a, sizeof a), !=, sched_flow_hash_symmetric(b, sizeof b));

        make_v6(c, 6, 50000, 22, 0x12345);
        make_v6(d, 6, 22, 50000, 0x54321); /* the reply: other flow label, swapped ends */
        memcpy(d + 8, c + 24, 16);
        memcpy(d + 24, c + 8, 16);
        g_assert_cmphex(sched_flow_hash_symmetric(c, sizeof c), ==, sched_flow_hash_symmetric(d, sizeof d));

        for (uint16_t port = 1000; port < 5000; port++) {
                make_v4(a, 6, port, 443, 0x4000);
                buckets[sched_flow_hash_symmetric(a, sizeof a) % 4]++;
        }
        for (size_t i = 0; i < 4; i++)
                g_assert_cmpuint(buckets[i], >, 800); /* of 4000: about 1000 each */
        g_assert_cmphex(sched_flow_hash_symmetric(a, 10), ==, 0);
}

/* Pacing's skipping: a path ahead of its pace gets no run; its run in progress ends; with every
 * path skipped the vector goes on as if none were. */
static void test_assign_runs_skip(void) {
        static const uint32_t w[3] = { 3, 2, 1 };
        uint8_t vec[MPT_VECTOR_MAX];
        size_t len = sched_build_vector(w, 3, vec);
        uint16_t paths[64];
        unsigned total[3] = {};
        SchedRuns r = {};

        for (unsigned b = 0; b < 100; b++) {
                sched_assign_runs_skip(&r, vec, len, 4, 7, UINT64_C(1) << 0, paths);
                for (size_t i = 0; i < 7; i++)
                        total[paths[i]]++;
        }
        g_assert_cmpuint(total[0], ==, 0);
        g_assert_cmpuint(total[1], >, 0);
        g_assert_cmpuint(total[2], >, 0);
        /* Path 1 carries twice what path 2 does, as the vector says of them (within a run). */
        g_assert_cmpint(abs((int) total[1] - 2 * (int) total[2]), <=, 8);

        /* A run on path 0 in progress ends when it is skipped. */
        r = (SchedRuns) {};
        sched_assign_runs(&r, vec, len, 16, 1, paths);
        g_assert_cmpuint(paths[0], ==, 0);
        sched_assign_runs_skip(&r, vec, len, 16, 1, UINT64_C(1) << 0, paths);
        g_assert_cmpuint(paths[0], !=, 0);

        /* Everything skipped: the vector's order, as without skipping. */
        SchedRuns a = {}, b = {};
        uint16_t pa[32], pb[32];
        for (unsigned k = 0; k < 10; k++) {
                sched_assign_runs(&a, vec, len, 4, 5, pa);
                sched_assign_runs_skip(&b, vec, len, 4, 5, UINT64_C(7), pb);
                for (size_t i = 0; i < 5; i++)
                        g_assert_cmpuint(pa[i], ==, pb[i]);
        }
}

/* Runs: each vector slot grants its path `run` consecutive packets, carried across calls; over
 * time the shares are exactly the vector's. */
static void test_assign_runs(void) {
        static const uint32_t w[3] = { 3, 2, 1 };
        uint8_t vec[MPT_VECTOR_MAX];
        size_t len = sched_build_vector(w, 3, vec);
        uint16_t paths[160];
        unsigned total[3] = {};
        SchedRuns r = {};

        g_assert_cmpuint(len, ==, 6);
        /* run == 1 is the plain per-packet vector. */
        for (size_t i = 0; i < 12; i++) {
                sched_assign_runs(&r, vec, len, 1, 1, paths);
                g_assert_cmpuint(paths[0], ==, vec[i % len]);
        }
        /* run == 4: a packet's segments in chunks of 4, each chunk on the path whose deficit
         * covers it; a slot's leftover stays with its path for its next turn. */
        r = (SchedRuns) {};
        sched_assign_runs(&r, vec, len, 4, 10, paths);
        for (size_t i = 0; i < 10; i++)
                g_assert_cmpuint(paths[i], ==, vec[i / 4]);
        /* vec[2] has 2 left: a 3-segment packet goes whole to the next slot's path... */
        sched_assign_runs(&r, vec, len, 4, 3, paths);
        for (size_t i = 0; i < 3; i++)
                g_assert_cmpuint(paths[i], ==, vec[3]);
        /* ... and a 1-segment one still fits there. */
        sched_assign_runs(&r, vec, len, 4, 1, paths);
        g_assert_cmpuint(paths[0], ==, vec[3]);
        /* Reset (a new snapshot): the next packet opens a new slot. */
        sched_runs_reset(&r);
        sched_assign_runs(&r, vec, len, 4, 1, paths);
        g_assert_cmpuint(paths[0], ==, vec[4]);

        /* Whole packets: every packet up to a run long stays on one path. */
        r = (SchedRuns) {};
        for (unsigned b = 0; b < 200; b++) {
                size_t n = 1 + (b * 13) % SCHED_QUANTUM_FLOOR;
                sched_assign_runs(&r, vec, len, SCHED_QUANTUM_FLOOR, n, paths);
                for (size_t i = 1; i < n; i++)
                        g_assert_cmpuint(paths[i], ==, paths[0]);
        }

        /* Over many calls of odd sizes the shares are exact (within one run). */
        r = (SchedRuns) {};
        for (unsigned b = 0; b < 600; b++) {
                size_t n = 1 + (b * 7) % 150;
                sched_assign_runs(&r, vec, len, SCHED_QUANTUM_FLOOR, n, paths);
                for (size_t i = 0; i < n; i++)
                        total[paths[i]]++;
        }
        {
                unsigned sum = total[0] + total[1] + total[2];
                g_assert_cmpint(abs((int) total[0] - (int) (sum * 3 / 6)), <=, (int) SCHED_QUANTUM_FLOOR * 3);
                g_assert_cmpint(abs((int) total[1] - (int) (sum * 2 / 6)), <=, (int) SCHED_QUANTUM_FLOOR * 2);
                g_assert_cmpint(abs((int) total[2] - (int) (sum / 6)), <=, (int) SCHED_QUANTUM_FLOOR);
        }
}

/* Segments of 1412 bytes of TCP payload (1500-byte paths over IPv4) per second at a rate. */
static uint64_t segs(double bits_per_second, uint64_t interval_usec) {
        return (uint64_t) (bits_per_second / 8 / 1412 * (double) interval_usec / 1e6);
}

static void test_adaptive_quantum(void) {
        const uint64_t iv = SCHED_RATE_INTERVAL_USEC;

        /* Nothing measured yet, no vector: the floor. */
        g_assert_cmpuint(sched_adaptive_quantum(1000, 0, 4, 1, 16, 64, false), ==, 16);
        g_assert_cmpuint(sched_adaptive_quantum(1000, iv, 0, 0, 16, 64, false), ==, 16);
        g_assert_cmpuint(sched_adaptive_quantum(1000, iv, 4, 0, 16, 64, false), ==, 16);
        /* Idle or slow: the floor. */
        g_assert_cmpuint(sched_adaptive_quantum(0, iv, 4, 1, 16, 64, false), ==, 16);
        g_assert_cmpuint(sched_adaptive_quantum(segs(10e6, iv), iv, 4, 1, 16, 64, false), ==, 16);
        /* 12 and 4 paths of 100 Mbit/s full: about 16 segments per path in 2 ms, so the quantum
         * stays where it was before it adapted. */
        g_assert_cmpuint(sched_adaptive_quantum(segs(12 * 93e6, iv), iv, 12, 1, 16, 64, false), ==, 16);
        g_assert_cmpuint(sched_adaptive_quantum(segs(4 * 93e6, iv), iv, 4, 1, 16, 64, false), ==, 16);
        /* 2 x 200 Mbit/s: 2 ms are 33 segments per path. */
        g_assert_cmpuint(sched_adaptive_quantum(segs(2 * 200e6, iv), iv, 2, 1, 16, 64, false), ==, 35);
        /* Unshaped paths: 8 carrying 6 Gbit/s get whole GSO sends; so do 4 x 1 Gbit/s. */
        g_assert_cmpuint(sched_adaptive_quantum(segs(6e9, iv), iv, 8, 1, 16, 64, false), ==, 64);
        g_assert_cmpuint(sched_adaptive_quantum(segs(4 * 930e6, iv), iv, 4, 1, 16, 64, false), ==, 64);
        /* The path with the smallest share decides: weights 3:1 (vector 0 0 0 1) at 800 Mbit/s
         * give path 1 200 Mbit/s (35 segments in 2 ms), not 400. */
        g_assert_cmpuint(sched_adaptive_quantum(segs(800e6, iv), iv, 4, 1, 16, 64, false), ==, 35);
        /* The same share over a longer interval, and a floor of 1 (no lower bound). */
        g_assert_cmpuint(sched_adaptive_quantum(segs(800e6, 10 * iv), 10 * iv, 4, 1, 16, 64, false), ==, 35);
        g_assert_cmpuint(sched_adaptive_quantum(segs(10e6, iv), iv, 4, 1, 1, 64, false), ==, 1);
        /* Slow paths: the floor gives way to runs that a slow path's share carries in 2 ms, in
         * powers of two, down to 4. 100 + 20 Mbit/s split 5:1 (vector of 6, 1 slot): the slow
         * path carries 3.5 segments in 2 ms, 4 at least. */
        g_assert_cmpuint(sched_adaptive_quantum(segs(120e6, iv), iv, 6, 1, 16, 64, true), ==, 4);
        /* 2 x 50 Mbit/s: 8.8 segments, down to 8. */
        g_assert_cmpuint(sched_adaptive_quantum(segs(100e6, iv), iv, 2, 1, 16, 64, true), ==, 8);
        /* Idle: the lowest. Fast paths: as without. */
        g_assert_cmpuint(sched_adaptive_quantum(0, iv, 2, 1, 16, 64, true), ==, 4);
        g_assert_cmpuint(sched_adaptive_quantum(segs(2 * 200e6, iv), iv, 2, 1, 16, 64, true), ==, 35);
        g_assert_cmpuint(sched_adaptive_quantum(segs(6e9, iv), iv, 8, 1, 16, 64, true), ==, 64);
        /* A floor below 4 (MPT_DEBUG_RUN) stays the lowest. */
        g_assert_cmpuint(sched_adaptive_quantum(0, iv, 2, 1, 2, 64, true), ==, 2);
        /* Absurd inputs do not overflow: the ceiling. */
        g_assert_cmpuint(sched_adaptive_quantum(UINT64_MAX, 1, MPT_VECTOR_MAX, MPT_VECTOR_MAX, 16, 64, false), ==, 64);
        g_assert_cmpuint(sched_adaptive_quantum(1, UINT64_MAX, MPT_VECTOR_MAX, 1, 16, 64, false), ==, 16);
        /* min_slots above the vector length is taken as the whole vector. */
        g_assert_cmpuint(sched_adaptive_quantum(segs(100e6, iv), iv, 1, 5, 1, 64, false), ==, 17);
}

/* The UDP GSO size of paths that queue locally: SCHED_GSO_TIME_USEC of the smallest share. */
static void test_adaptive_gso(void) {
        const uint64_t iv = SCHED_RATE_INTERVAL_USEC, t = SCHED_GSO_TIME_USEC;

        g_assert_cmpuint(t, ==, 200);
        /* Nothing measured yet: the floor. */
        g_assert_cmpuint(sched_adaptive_count(1000, 0, 4, 1, t, 1, 64), ==, 1);
        /* 12 x 100 Mbit/s full: one datagram per send (a shaper releases each at once). */
        g_assert_cmpuint(sched_adaptive_count(segs(12 * 93e6, iv), iv, 12, 1, t, 1, 64), ==, 1);
        /* 4 x 1 Gbit/s: 16 datagrams (200 us of one path). */
        g_assert_cmpuint(sched_adaptive_count(segs(4 * 930e6, iv), iv, 4, 1, t, 1, 64), ==, 16);
        /* 2 x 2 Gbit/s: 35; 2 x 5 Gbit/s and more: a whole GSO send. */
        g_assert_cmpuint(sched_adaptive_count(segs(2 * 2e9, iv), iv, 2, 1, t, 1, 64), ==, 35);
        g_assert_cmpuint(sched_adaptive_count(segs(2 * 5e9, iv), iv, 2, 1, t, 1, 64), ==, 64);
        /* Weights 3:1 at 800 Mbit/s: path 1 carries 200 Mbit/s, 3 datagrams in 200 us. */
        g_assert_cmpuint(sched_adaptive_count(segs(800e6, iv), iv, 4, 1, t, 1, 64), ==, 3);
        /* No overflow for any input; the time scales the count linearly. */
        g_assert_cmpuint(sched_adaptive_count(UINT64_MAX, 1, MPT_VECTOR_MAX, MPT_VECTOR_MAX, UINT64_MAX, 1, 64), ==, 64);
        g_assert_cmpuint(sched_adaptive_count(UINT64_MAX, UINT64_MAX, 1, 1, UINT64_MAX, 1, UINT32_MAX), ==,
                         UINT32_MAX);
        g_assert_cmpuint(sched_adaptive_count(segs(4 * 930e6, iv), iv, 4, 1, 2000, 16, 64), ==,
                         sched_adaptive_quantum(segs(4 * 930e6, iv), iv, 4, 1, 16, 64, false));
        g_assert_cmpuint(sched_adaptive_count(segs(2 * 200e6, iv), iv, 2, 1, 2000, 1, 64), ==, 35);
        g_assert_cmpuint(sched_adaptive_count(segs(2 * 200e6, iv), iv, 2, 1, 1000, 1, 64), ==, 17);
}

/* The quantum while paths queue locally: SCHED_QUEUED_QUANTUM_TIME_USEC of the whole tunnel, down
 * to a power of two, from 4 up to the floor. */
static void test_queued_quantum(void) {
        const uint64_t iv = SCHED_RATE_INTERVAL_USEC;

        g_assert_cmpuint(SCHED_QUEUED_QUANTUM_TIME_USEC, ==, 250);
        /* Nothing measured yet, or idle: the lower bound. */
        g_assert_cmpuint(sched_queued_quantum(1000, 0, 16), ==, 4);
        g_assert_cmpuint(sched_queued_quantum(0, iv, 16), ==, 4);
        /* 2 x 10 Mbit/s: less than one segment in 250 us, still 4. */
        g_assert_cmpuint(sched_queued_quantum(segs(2 * 9.3e6, iv), iv, 16), ==, 4);
        /* Paths of 100 Mbit/s, full: 2 get 4 segments, 4 get 8, 8 and 12 get 16. */
        g_assert_cmpuint(sched_queued_quantum(segs(2 * 93e6, iv), iv, 16), ==, 4);
        g_assert_cmpuint(sched_queued_quantum(segs(4 * 93e6, iv), iv, 16), ==, 8);
        g_assert_cmpuint(sched_queued_quantum(segs(8 * 93e6, iv), iv, 16), ==, 16);
        g_assert_cmpuint(sched_queued_quantum(segs(12 * 93e6, iv), iv, 16), ==, 16);
        /* Powers of two only: 3 paths (6.2 segments) get 4, 6 paths (12.3) get 8. */
        g_assert_cmpuint(sched_queued_quantum(segs(3 * 93e6, iv), iv, 16), ==, 4);
        g_assert_cmpuint(sched_queued_quantum(segs(6 * 93e6, iv), iv, 16), ==, 8);
        /* 4 x 1 Gbit/s: the floor, as before the tunnel's rate counted. */
        g_assert_cmpuint(sched_queued_quantum(segs(4 * 930e6, iv), iv, 16), ==, 16);
        /* A lower floor bounds it from above and below. */
        g_assert_cmpuint(sched_queued_quantum(segs(8 * 93e6, iv), iv, 2), ==, 2);
        g_assert_cmpuint(sched_queued_quantum(0, iv, 1), ==, 1);
        /* No overflow. */
        g_assert_cmpuint(sched_queued_quantum(UINT64_MAX, 1, 16), ==, 16);
        g_assert_cmpuint(sched_queued_quantum(1, UINT64_MAX, 16), ==, 4);
}

static void test_vector_min_slots(void) {
        static const uint32_t w3[3] = { 3, 2, 1 }, w2[2] = { 100, 80 }, w1[1] = { 7 };
        uint8_t vec[MPT_VECTOR_MAX] = {};
        size_t len;

        g_assert_cmpuint(sched_vector_min_slots(vec, 0), ==, 0);
        len = sched_build_vector(w3, 3, vec);
        g_assert_cmpuint(sched_vector_min_slots(vec, len), ==, 1);
        len = sched_build_vector(w2, 2, vec); /* 5:4 */
        g_assert_cmpuint(sched_vector_min_slots(vec, len), ==, 4);
        len = sched_build_vector(w1, 1, vec);
        g_assert_cmpuint(sched_vector_min_slots(vec, len), ==, 1);
        /* A path index that appears nowhere does not count. */
        vec[0] = 200;
        vec[1] = 200;
        vec[2] = 3;
        g_assert_cmpuint(sched_vector_min_slots(vec, 3), ==, 1);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        for (size_t i = 0; i < G_N_ELEMENTS(spec_vectors); i++) {
                g_autofree char *p = g_strdup_printf("/mpt/scheduler/vector/%s", spec_vectors[i].name);
                g_autofree char *q = g_strdup_printf("/mpt/scheduler/smooth/%s", spec_vectors[i].name);
                g_test_add_data_func(p, &spec_vectors[i], test_spec_vector);
                g_test_add_data_func(q, &spec_vectors[i], test_spec_vector_smooth);
        }
        g_test_add_func("/mpt/scheduler/vector/n0", test_n0);
        g_test_add_func("/mpt/scheduler/vector/n256", test_n_max);
        for (size_t i = 0; i < G_N_ELEMENTS(exact_sets); i++) {
                g_autofree char *p = g_strdup_printf("/mpt/scheduler/exact/%s", exact_sets[i].name);
                g_test_add_data_func(p, &exact_sets[i], test_exact);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(scaled_sets); i++) {
                g_autofree char *p = g_strdup_printf("/mpt/scheduler/scaled/%s", scaled_sets[i].name);
                g_test_add_data_func(p, &scaled_sets[i], test_scaled);
        }
        g_test_add_func("/mpt/scheduler/random-weights", test_random_weights);
        g_test_add_func("/mpt/scheduler/flow-hash/ipv4", test_hash_ipv4);
        g_test_add_func("/mpt/scheduler/flow-hash/ipv4-options", test_hash_ipv4_options);
        g_test_add_func("/mpt/scheduler/flow-hash/ipv4-fragments", test_hash_ipv4_fragments);
        g_test_add_func("/mpt/scheduler/flow-hash/ipv6", test_hash_ipv6);
        g_test_add_func("/mpt/scheduler/flow-hash/garbage", test_hash_garbage);
        g_test_add_func("/mpt/scheduler/flow-hash/spread", test_hash_spread);
        g_test_add_func("/mpt/scheduler/flow-hash/symmetric", test_hash_symmetric);
        g_test_add_func("/mpt/scheduler/assign-runs", test_assign_runs);
        g_test_add_func("/mpt/scheduler/assign-runs-skip", test_assign_runs_skip);
        g_test_add_func("/mpt/scheduler/adaptive-quantum", test_adaptive_quantum);
        g_test_add_func("/mpt/scheduler/adaptive-gso", test_adaptive_gso);
        g_test_add_func("/mpt/scheduler/queued-quantum", test_queued_quantum);
        g_test_add_func("/mpt/scheduler/vector-min-slots", test_vector_min_slots);

        return g_test_run();
}
