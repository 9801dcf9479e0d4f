/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <semaphore.h>

#include "hold.h"
#include "offload.h"
#include "rx-shared.h"
#include "tunnel.h"

#define WORKER_BATCH 64u
/* Most receive buffers (messages) one recvmmsg() reads from one path socket. */
#define WORKER_RX_MMSG 8u
#define WORKER_BUFFER_SIZE (65536u + 64u)
#define WORKER_HEADROOM 64u
/* A receiving worker's tunnel is quiet (see worker_update_quiet() in worker.c) while it moves fewer than
 * WORKER_QUIET_PACKETS packets per SCHED_RATE_INTERVAL_USEC (1000 a second), and busy from the
 * moment it has moved more than WORKER_BUSY_PACKETS within one (4000 a second). */
#define WORKER_QUIET_PACKETS 10u
#define WORKER_BUSY_PACKETS 40u
/* Pacing (Tunnel.pace_rate): how far ahead of its pace a path may be sent on, as a burst; how far
 * ahead it may get at all (a window of segments on a path whose pace is slow would otherwise keep
 * it out of use for seconds, and a pause for as long); the longest pause of the TUN device before
 * a worker looks again (the vector or the paces may have changed). */
#define PACE_BURST_NSEC (5 * UINT64_C(1000000))
#define PACE_AHEAD_MAX_NSEC (50 * UINT64_C(1000000))
#define PACE_PAUSE_MAX_NSEC (10 * UINT64_C(1000000))
/* Policy= with redundant or lowest-latency rules (hold.h): the room for a worker's held packets,
 * and the longest a packet waits there before it is dropped (hold-overflow). Bulk TCP behind
 * the pace sees the drops as congestion, as it would a router's full queue: its own delay stays
 * bounded, while the rules' packets never wait. */
#define WORKER_HOLD_BYTES (4u << 20)
#define WORKER_HOLD_MAX_NSEC (50 * UINT64_C(1000000))
#define WORKER_GRE_ROOM 8u /* in front of every segment's headers: the GRE header */
/* Sealed datagrams of one TUN packet: its bytes, and per segment the headers and overhead. */
#define WORKER_CRYPT_SIZE \
        (WORKER_BUFFER_SIZE + OFFLOAD_SEGMENTS_MAX * (WORKER_GRE_ROOM + OFFLOAD_HEADERS_MAX + MPT_SECURE_OVERHEAD))

/* A numbered data packet of the messages being handled, waiting for its lane's reorder buffer
 * (see worker_rx_process()); at most WORKER_PENDING_MAX of them, then they are handed over. */
#define WORKER_PENDING_MAX (WORKER_RX_MMSG * 64u)
#define RX_POLICY_NONE (-2)
typedef struct RxPending {
        const uint8_t *pkt;
        uint32_t len;
        uint32_t seq;
        uint8_t lane;
        uint8_t path;
        int8_t rule; /* Policy=: the rule of this end it matches, -1: none, RX_POLICY_NONE: no rules */
        bool now;    /* Policy=: not held in the reorder buffer (reorder_insert_now()) */
        usec_t arrival;
} RxPending;

/* Secure mode, receiving: what arrived of one of the other end's paths (by the path id in the
 * secure header), for the feedback frames the main thread sends (feedback.c). The worker writes
 * it with every datagram that authenticated; the main thread reads a consistent copy (seq is odd
 * while a write is under way: a sequence lock, no waiting on either side). */
typedef struct RxTrack {
        uint32_t seq;
        /* The marker: the counter of the datagram that arrived last of those that were the
         * highest of their lane so far (of a data lane: not MPT_SECURE_LANE_CONTROL), its lane,
         * and when it arrived (CLOCK_MONOTONIC, microseconds). 0: none yet. */
        uint64_t marker;
        uint8_t lane;
        uint64_t arrival;
        uint64_t bytes;   /* datagram bytes received (cumulative) */
        uint32_t packets; /* datagrams received (cumulative) */
        /* What the sender sent on the path as far as its counters tell (cumulative): per lane
         * and epoch, the highest counter less the first one seen, plus one, summed. */
        uint64_t sent;
        /* Bursts: datagrams that arrive less than WORKER_BURST_GAP_USEC apart. The fastest burst
         * of this window (from window_start, WORKER_PEAK_WINDOW_USEC long) and of the last one:
         * the path's bottleneck rate, which a burst leaving the sender at once arrives at. */
        uint64_t peak;
        uint64_t peak_prev;
        /* (the worker's own, not read by others) */
        uint64_t epoch;                      /* the sender's epoch lane_top is of */
        uint64_t lane_top[MPT_SECURE_LANES]; /* the highest counter per lane; 0: none yet */
        usec_t burst_first, burst_last, window_start;
        uint64_t burst_bytes; /* of the burst's trains before the current one */
        uint64_t train_bytes; /* of the current train: the datagrams of one arrival time (a GRO train) */
} RxTrack;

/* See RxTrack: a gap that ends a burst (a datagram every 3 ms is 4 Mbit/s: slower paths are
 * learned from their saturation alone), the shortest burst that counts, the longest (a stream
 * that never pauses gives samples too), and the window the peak is the maximum of. */
#define WORKER_BURST_GAP_USEC (3 * USEC_PER_MSEC)
#define WORKER_BURST_MIN_USEC 500u
#define WORKER_BURST_MAX_USEC (10 * USEC_PER_MSEC)
#define WORKER_PEAK_WINDOW_USEC (100 * USEC_PER_MSEC)

/* Secure mode, sending: the counters first..last of a path went out at time. A ring of them per
 * path and worker, so that the main thread can tell when the counter a feedback frame reports was
 * sent. Sequence-locked as RxTrack. */
#define WORKER_TX_MARKS 64u
typedef struct TxMark {
        uint32_t seq;
        uint64_t first, last;
        usec_t time;
} TxMark;

/* Loss repair (mptd(8), LOSS REPAIR), sending side: the plaintexts of the datagrams a worker sent
 * (a ring of WORKER_KEEP_BYTES: about 320 ms at 100 Mbit/s), found by path and counter (a slot
 * per counter modulo WORKER_KEEP_SLOTS per path); the repair requests for its lane, at most
 * WORKER_REPAIR_QUEUE entries waiting (more are counted as missed). */
#define WORKER_KEEP_BYTES (4u << 20)
#define WORKER_KEEP_SLOTS 4096u
#define WORKER_REPAIR_QUEUE 256u
typedef struct KeepSlot {
        uint64_t counter; /* 0: none */
        uint64_t pos;     /* where it begins in the ring (of all bytes ever written) */
        uint32_t len;
} KeepSlot;

/* Policy= counters of a worker, per class (see Worker.policy). */
typedef enum WorkerPolicyCounter {
        WORKER_POLICY_HITS,       /* packets written to the tunnel that the class matched */
        WORKER_POLICY_COPIES,     /* redundant: copies of them sent besides, over other paths */
        WORKER_POLICY_RECEIVED,   /* packets of the class that arrived, numbered (first copies) */
        WORKER_POLICY_DUPLICATES, /* copies of those dropped as duplicates */
        WORKER_POLICY_WAIT_NSEC,  /* the time its packets waited in the hold queue (hold.h), a
                                   * moving average over packets (1/16 each) */
        _WORKER_POLICY_COUNTER_MAX,
} WorkerPolicyCounter;
#define POLICY_CLASS_OTHER MPT_POLICY_MAX

/* What a worker keeps about one peer (Worker.peers): its place in the peer's schedule, the
 * numbering of its lane towards the peer, what it sent (for loss repair and the learned scheduler)
 * and received of the peer's paths, its keys for the peer's epochs, and the paths' counters. */
struct WorkerPeer {
        Peer *peer;
        SchedRuns runs; /* the weighted scheduler's position */
        /* The quantum in segments (see sched_adaptive_quantum()), and where its rate measurement
         * started: the time and the tunnel's segments sent then (tunnel_tx_segments()). min_slots:
         * of the snapshot's vector. */
        unsigned quantum;
        usec_t rate_since;
        uint64_t rate_segments;
        size_t min_slots;
        uint64_t vector_paths; /* the paths in the snapshot's vector, a bit each */
        uint16_t vector_slots[MPT_PATHS_MAX]; /* and their slots in it */
        /* Paths that queue locally (see sample_queues()): when each was last seen so (atomic:
         * mptctl reads it), those that count as queueing now (a bit per path), and the most
         * datagrams per UDP GSO send there (sized in time, SCHED_GSO_TIME_USEC). */
        usec_t path_queued_at[MPT_PATHS_MAX];
        uint64_t queued_now;
        unsigned gso_queued;
        uint8_t rx_turn[MPT_PATHS_MAX]; /* per path: buffers its next turn reads, see worker_rx_ready() */
        uint64_t expire_lanes; /* the lanes of the peer's reorder buffer this worker expires, a bit each */

        /* Secure mode: this worker's lane (its index): the next sequence number, and per path the
         * next counter. */
        uint32_t tx_seq;
        uint64_t tx_counter[MPT_PATHS_MAX];

        MptSockaddr endpoint_reported[MPT_PATHS_MAX]; /* last new source reported per path */

        /* Secure mode, for the learned scheduler: what arrived of the other end's paths, and when
         * our paths' counters went out (n_paths x WORKER_TX_MARKS, a ring per path). */
        RxTrack rx_track[MPT_PATHS_MAX];
        TxMark *tx_marks;
        unsigned tx_mark_next[MPT_PATHS_MAX];

        /* Loss repair: what was sent (see KeepSlot; keep_pos: the ring's bytes ever written),
         * the requests for this worker's lane (any receiving worker adds, under repair_lock;
         * repair_queued is read without it to tell whether there are any), and the gaps the
         * datagrams received in the current batch revealed, to ask for at its end. */
        uint8_t *keep;
        uint64_t keep_pos;
        KeepSlot *keep_slots; /* n_paths x WORKER_KEEP_SLOTS */
        pthread_mutex_t repair_lock;
        bool repair_lock_init;
        MptRepairEntry repair_queue[WORKER_REPAIR_QUEUE];
        unsigned repair_queued;
        MptRepair repair_ask;
        /* Secure mode: the snapshot under which a responder's session was confirmed; the receive
         * key of the peer's current epoch, and one being tried for a newer epoch (derived at most
         * as often as the limit allows). */
        uint64_t confirmed_generation;
        MptSecureKeys rx_keys;     /* epoch 0: none yet */
        MptSecureKeys rx_try_keys;
        MptSecureLimit rx_derive_limit; /* derivations of rx_try_keys */

        PathCounters path_counters[MPT_PATHS_MAX];
};

struct Worker {
        Tunnel *tunnel;
        /* What it keeps about each peer of the tunnel, by the peer's index (n_peers of them: the
         * tunnel's one today). */
        WorkerPeer *peers;
        size_t n_peers;
        unsigned id;
        pthread_t thread;
        bool started;
        /* The snapshot of the messages worker_rx_process() handles (Policy= at the receiver). */
        const Snapshot *rx_snapshot;
        /* Policy=: per class (the index of the snapshot's rules, or POLICY_CLASS_OTHER for the
         * packets none matches) what mptctl show reads (atomic, WorkerPolicyCounter). */
        uint64_t policy[MPT_POLICY_MAX + 1][_WORKER_POLICY_COUNTER_MAX];
        uint8_t *tx_copy; /* redundant: a copy sealed for another path (allocated when first needed) */
        /* The thread's own seccomp filter (sandbox.c): its result, posted before the thread runs. */
        sem_t sandboxed;
        int sandbox_r;
        int tun_fd;
        int epoll_fd;
        int wake_fd;
        bool stop; /* atomic */

        uint64_t seen_generation; /* atomic: the snapshot generation this worker uses */
        int registered[MPT_PATHS_MAX]; /* socket registered in epoll per path, -1: none */

        /* Receive side: per message of one recvmmsg(), the (GRO) datagram buffer received into
         * next: one of the tunnel's pool (rx_pool_index[i], which this worker holds a reference
         * on) or, when the pool has none free or there is no reorder buffer, the worker's own
         * buffer for that message (rx_buffer + i * WORKER_BUFFER_SIZE, rx_pool_index[i] -1);
         * received TCP segments coalesced for the TUN, and copies of those of them that were
         * not in a receive buffer (gro_stage() in receive.c). */
        uint8_t *rx_buffer; /* WORKER_RX_MMSG x WORKER_BUFFER_SIZE */
        uint8_t *rx_cur[WORKER_RX_MMSG];
        int rx_pool_index[WORKER_RX_MMSG];
        /* This worker's part of the tunnel's receive buffer pool (pool_first .. + pool_n - 1; 0:
         * none), and where the search for a free one goes on. References to pool buffers (any
         * worker's) that its deliveries let go of are given back only after the TUN writes that
         * may still point into them (pool_release() in receive.c): a count per pool buffer, and
         * the buffers that have one. */
        unsigned pool_first, pool_n, pool_cursor;
        uint32_t *pool_released;
        uint16_t *pool_released_list;
        unsigned n_pool_released;
        RxPending *pending;
        unsigned n_pending;
        RxContention contention; /* its waits for the locks of what the workers share */
        Gro gro;
        uint8_t *gro_stage; /* WORKER_BUFFER_SIZE */
        size_t gro_staged;
        /* A receiving worker of a quiet tunnel writes what it receives through its own TUN
         * queue (see update_quiet()); the packets it wrote and the tunnel's segments sent since
         * quiet_since. */
        bool quiet;
        usec_t quiet_since;
        uint64_t quiet_rx;
        uint64_t quiet_tx;

        /* Send side. Segments sent (atomic: others sum them, tunnel_tx_segments()). */
        uint64_t tx_segments;
        /* Pacing (Tunnel.pace_rate): the TUN device is out of the epoll set until tun_resume
         * (CLOCK_MONOTONIC, ns) while tun_paused. */
        bool tun_paused;
        uint64_t tun_resume;
        /* Policy= (hold.h): instead of the pause, the packets of no redundant or lowest-latency
         * rule wait here, and go on at hold_resume (CLOCK_MONOTONIC, ns) or when the pace lets
         * them. */
        HoldQueue hold;
        uint64_t hold_resume;
        /* One TUN packet, its segments' headers, and per path the iovecs of the
         * datagrams it carries (GRE+headers, payload) for one UDP GSO send. */
        uint8_t *tx_buffer;
        uint8_t *tx_headers;
        OffloadSegment segs[OFFLOAD_SEGMENTS_MAX];
        struct iovec *path_iov;     /* MPT_PATHS_MAX x 2 * OFFLOAD_SEGMENTS_MAX */
        unsigned path_segs[MPT_PATHS_MAX];
        uint16_t seg_path[OFFLOAD_SEGMENTS_MAX];

        /* Secure mode: sealed datagrams of the TUN packet being sent. */
        uint8_t *tx_crypt;
        uint64_t rx_epoch;             /* with the handshake: the session of the datagram being handled */
        /* Secure mode: the sender path id (plus one) and epoch of the datagram being handled */
        uint8_t rx_peer_id;
        uint64_t rx_peer_epoch;

        PathCounters tunnel_counters; /* drops not tied to a path */
};

/* One message a recvmmsg() read from a path socket into the worker's receive buffer of its index
 * (message m is in w->rx_cur[m]). */
typedef struct WorkerRxMessage {
        MptSockaddr source; /* zeroed beyond the address: it is compared and passed on whole */
        size_t len;         /* bytes received */
        bool truncated;     /* larger than the buffer (MSG_TRUNC): dropped */
        size_t segment_size; /* UDP GRO: the size of every datagram in it but the last; 0: one datagram */
        usec_t arrival;     /* when the kernel received it (CLOCK_MONOTONIC) */
} WorkerRxMessage;

/* Handles n (<= WORKER_RX_MMSG) messages that arrived on the socket of path socket_path of snapshot s,
 * in order: which path each belongs to, authentication and decryption (secure mode), control
 * frames to the main thread, data through the reorder buffer (when on) to the TUN device. Then
 * picks the receive buffers for the next messages (w->rx_cur[0..n) may change). What a
 * receiving worker does after each recvmmsg(); fuzz-rx calls it directly. */
void worker_rx_process(Worker *w, const Snapshot *s, unsigned socket_path, const WorkerRxMessage *msgs, unsigned n);
/* Releases what the reorder buffer held longer than its maximum delay, as of now, when its
 * deadline has come. */
void worker_rx_expire(Worker *w, usec_t now);

bool worker_path_queued(const Worker *w, unsigned path);
/* A consistent copy of what arrived of the other end's path path_id (any thread). */
void worker_rx_track_read(const Worker *w, unsigned path_id, RxTrack *ret);
/* When this worker sent counter `counter` of path `path`, if its ring still knows it (any thread);
 * the latest time it sent on the path in *ret_last (0: not that it remembers). */
bool worker_tx_mark_find(const Worker *w, unsigned path, uint64_t counter, usec_t *ret_time, usec_t *ret_last);
int worker_new(Tunnel *t, unsigned id, int tun_fd, Worker **ret);
/* Policy=: packets rule i matched here; a reload that changes the rules resets them. */
/* A Policy= counter of class `class` (a rule's index, or POLICY_CLASS_OTHER). */
uint64_t worker_policy_counter(const Worker *w, size_t class, WorkerPolicyCounter c);
void worker_policy_reset(Worker *w);
int worker_start(Worker *w);
/* Asks the worker to stop and joins it. */
void worker_stop(Worker *w);
Worker *worker_free(Worker *w);

/* The receive buffer pool of a tunnel with reordering (t->rx_pool), lent to the reorder buffers
 * so that held packets stay where they were received: a part of it for each receiving worker.
 * Called after t->rx and t->rx_workers are set up, before the workers are made; the pool is
 * freed after t->rx. */
int worker_pool_setup(Tunnel *t);
void worker_pool_free(Tunnel *t);
/* Wakes the worker so that it picks up a new snapshot soon. */
void worker_wake(Worker *w);
