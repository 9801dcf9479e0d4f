/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "macro.h"
#include "profile.h"

/* Longest sending vector we build. Longer exact vectors are approximated by scaling the weights
 * (largest remainder), which keeps every share within 1/MPT_VECTOR_MAX of its exact value,
 * except that a candidate whose exact share is below 1/MPT_VECTOR_MAX still gets one slot, taken
 * from the others. */
#define MPT_VECTOR_MAX 4096u

/* Builds the sending vector of the original MPT (spec section 4.2) over n candidates with the
 * given weights (each >= 1): slot k holds the candidate index that sends the k-th packet of a
 * round. Candidate i appears weight[i] / gcd times per round, interleaved as evenly as the
 * rule allows (next = smallest next finishing time k/w, ties to the lowest index). Returns the
 * vector length (>= 1), or 0 when n == 0. out must hold MPT_VECTOR_MAX entries. */
size_t sched_build_vector(const uint32_t *weights, size_t n, uint8_t *out);

/* A hash of an inner packet's flow (addresses, protocol, ports) for the flow scheduler. */
uint32_t sched_flow_hash(const uint8_t *pkt, size_t len);

/* The same for both directions of a flow (source and destination swapped give the same value):
 * which TUN queue a received packet is written through, so that the kernel sends the flow's
 * outgoing packets through that queue too and one worker sees all of them, in order. */
uint32_t sched_flow_hash_symmetric(const uint8_t *pkt, size_t len);

/* Runs of packets per path, by deficit round robin over the sending vector. A run is a stretch of
 * consecutive segments that go to one path. Each slot of the vector grants its path a quantum of
 * `quantum` segments; a TUN packet's segments (in chunks of at most `quantum`) go to the current
 * path while its deficit covers the whole chunk, else to the next slot's path, and what a path
 * leaves unused it keeps for its next turn. Over time every path gets exactly its vector share, a
 * super-packet leaves whole in one UDP GSO send on one path, and each path carries stretches of
 * consecutive sequence numbers, which the receiver passes on as they arrive. With quantum == 1 it
 * is the plain per-packet vector of the original MPT. */
typedef struct SchedRuns {
        uint32_t cursor; /* next vector slot */
        uint8_t path;    /* path of the current run */
        bool active;     /* path is valid (false: the next chunk opens a slot) */
        uint32_t deficit[MPT_PATHS_MAX];
} SchedRuns;

/* The quantum's floor and ceiling, in segments. The floor is what a share of 100 Mbit/s gets (a
 * slower one may get less: sched_adaptive_quantum()'s slow_paths): 16 segments of 1500 bytes are
 * about 2 ms at 100 Mbit/s (SCHED_QUANTUM_TIME_USEC). The ceiling is one full UDP GSO send (64
 * datagrams, GSO_SEGMENTS_MAX), so that a super-packet leaves in one system call and arrives as
 * one GRO train. MPT_DEBUG_RUN may fix the quantum at up to SCHED_QUANTUM_LIMIT. */
#define SCHED_QUANTUM_FLOOR 16u
#define SCHED_QUANTUM_CEIL 64u
#define SCHED_QUANTUM_LIMIT 256u

/* Adaptive quantum. A run of q segments on a path keeps the receiver waiting about as long as the
 * path takes to carry them (the next path's segments arrive meanwhile and are held), so the
 * quantum is sized in time: as many segments as the path with the smallest share of the vector
 * carries in SCHED_QUANTUM_TIME_USEC at the tunnel's current send rate, between
 * SCHED_QUANTUM_FLOOR and SCHED_QUANTUM_CEIL. The rate is measured every SCHED_RATE_INTERVAL_USEC. */
#define SCHED_QUANTUM_TIME_USEC 2000u
#define SCHED_RATE_INTERVAL_USEC 10000u

/* Paths whose datagrams wait in a local queue (the socket has unsent bytes when a worker looks,
 * once per rate interval; a path counts as queueing for SCHED_QUEUED_HOLD_USEC after). A
 * shaper in that queue (tbf, cake without split-gso) lets a UDP GSO send go only as a whole,
 * once it has the tokens for all of it: its first datagram waits for the last, and the path's
 * delay jumps by a whole send at a time (16 datagrams are 2 ms at 100 Mbit/s), which a TCP stream
 * inside the tunnel reads as a fatter, slower pipe than it is. So such a path gets sends of what
 * its share of the tunnel's rate carries in SCHED_GSO_TIME_USEC (1 datagram at 100 Mbit/s, 16 at
 * 1 Gbit/s; one sendmmsg() still carries them all). And while any path queues, the quantum stays
 * at its floor: a run waits in the queue as a whole while the receiver holds the other paths'
 * packets behind it. Paths that queue nothing keep full sends and the adaptive quantum. */
#define SCHED_GSO_TIME_USEC 200u
#define SCHED_QUEUED_HOLD_USEC 1000000u

/* The quantum while paths queue: what the whole tunnel sends in SCHED_QUEUED_QUANTUM_TIME_USEC,
 * rounded down to a power of two, at least SCHED_QUEUED_QUANTUM_MIN and at most the floor
 * (SCHED_QUANTUM_FLOOR). A TCP stream inside a slow tunnel keeps little more than one round of the
 * vector in flight; long runs then leave shaped paths idle while another carries its run, so a
 * slow tunnel gets short runs (4 segments over 2 paths of 100 Mbit/s, 8 over 4, 16 over 8 or
 * more and at 1 Gbit/s). Powers of two, because TCP's super-packets are mostly 2, 4 or 8
 * segments long and a chunk goes only to a path whose quantum left covers it whole: other lengths
 * make the runs uneven (mptd(8), DATA PLANE). */
#define SCHED_QUEUED_QUANTUM_TIME_USEC 250u
#define SCHED_QUEUED_QUANTUM_MIN 4u

/* The quantum for a tunnel that sent `segments` segments in `interval_usec`, over a vector of
 * vector_len slots in which the path with the fewest slots has min_slots, clamped to
 * [floor, ceil]. Pure; interval_usec == 0 or vector_len == 0 gives floor.
 * slow_paths: the floor gives way down to SCHED_QUEUED_QUANTUM_MIN (in powers of two) for a path
 * whose share is slower than the floor's 16 segments in SCHED_QUANTUM_TIME_USEC (100 Mbit/s): a
 * 20 Mbit/s path beside a 100 Mbit/s one would otherwise carry runs of 10 ms, during which the
 * receiver holds the fast path's packets, and TCP reads the tunnel as burstier and slower than
 * it is. */
unsigned sched_adaptive_quantum(uint64_t segments, uint64_t interval_usec, size_t vector_len,
                                size_t min_slots, unsigned floor, unsigned ceil, bool slow_paths);

/* The same for any span of time: how many segments the path with the smallest share carries in
 * time_usec at that rate, clamped to [floor, ceil]. */
unsigned sched_adaptive_count(uint64_t segments, uint64_t interval_usec, size_t vector_len, size_t min_slots,
                              uint64_t time_usec, unsigned floor, unsigned ceil);

/* The quantum while paths queue locally (see SCHED_QUEUED_QUANTUM_TIME_USEC), for a tunnel that
 * sent `segments` segments in `interval_usec`, at most `max` (the adaptive quantum's floor). */
unsigned sched_queued_quantum(uint64_t segments, uint64_t interval_usec, unsigned max);

/* The fewest slots any path has in the vector (0 when it is empty). */
size_t sched_vector_min_slots(const uint8_t *vector, size_t vector_len);

/* Assigns the n segments of one TUN packet to paths (ret_paths[0..n)), in runs of whole chunks of
 * at most `quantum` segments. */
void sched_assign_runs(SchedRuns *r, const uint8_t *vector, size_t vector_len, unsigned quantum, size_t n,
                       uint16_t *ret_paths);
/* The same, passing over the paths in skip (a bit each: paced paths ahead of their pace) to the
 * vector's next slot of another path; a run on one of them ends. When every path of the vector is
 * in skip, as if none were. */
void sched_assign_runs_skip(SchedRuns *r, const uint8_t *vector, size_t vector_len, unsigned quantum,
                            size_t n, uint64_t skip, uint16_t *ret_paths);

/* A new path table: deficits and the current run start over (the cursor stays). */
void sched_runs_reset(SchedRuns *r);
