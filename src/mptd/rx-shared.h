/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the receiving workers of a tunnel share, and the only way they share it (mptd(8), DATA
 * PLANE and REORDERING):
 *
 * - Reorder buffers, one per lane of the other end: a lane is the sequence space of one of its
 *   sending threads (the lane byte of the secure header; compat mode has one, lane 0). Each
 *   lane's buffer has its own lock, so receiving workers that handle different lanes never wait
 *   for each other; two wait only when both have a batch of the same lane at the same moment
 *   (the lanes cross the paths, and a path is received by one worker). A lane's buffer is made
 *   when its first numbered packet arrives, with the settings the main thread gave the others.
 *   Whoever holds a lane's lock delivers its packets and writes them to the TUN device before
 *   letting go, so that a lane's packets reach the TUN device in order.
 * - The secure receive state (secure.h, MptSecureRx): the other end's epoch (an atomic) and, per
 *   sender path id, its binding and anti-replay windows, behind a lock per sender path id. A
 *   sender path arrives at one path of this end, which one worker receives: its lock is that
 *   worker's alone (only a path that moves between workers, or paths that share a socket, make
 *   two take it).
 *
 * Every lock here is taken with rx_lock(), which counts, per worker, the acquisitions that found
 * it taken and the time they waited (RxContention, `mptctl show`): the measure of what the
 * workers still share.
 *
 * The main thread changes the settings of all lanes (rx_shared_set_*(), rx_shared_path_*(),
 * rx_shared_reset()) and reads their counters. */

#include <pthread.h>

#include "reorder.h"
#include "secure.h"

#define RX_SHARED_LANES MPT_SECURE_LANES

/* Counted by one worker each, read by anyone. */
typedef struct RxContention {
        uint64_t waits;   /* lock acquisitions that had to wait */
        uint64_t wait_ns; /* how long they waited, in all */
} RxContention;

/* Takes the lock; when it is held by another thread, waits for it and counts that (c may be NULL:
 * the main thread's acquisitions are not counted). */
void rx_lock(pthread_mutex_t *m, RxContention *c);

/* Where the reorder buffers may keep held packets without copying them (see ReorderLender):
 * retain() and release() are told which worker (holder, see rx_lane_lock(); NULL: the main
 * thread) is delivering. */
typedef struct RxLender {
        bool (*retain)(void *userdata, void *holder, const uint8_t *pkt, size_t len);
        void (*release)(void *userdata, void *holder, const uint8_t *pkt);
        void *userdata;
} RxLender;

typedef struct RxLane {
        pthread_mutex_t lock;
        Reorder *reorder;
        usec_t deadline; /* atomic: reorder_deadline(), as of the last unlock */
        void *holder;    /* who holds the lock (rx_lane_lock()) */
        RxLender lender;
        unsigned index;
} _aligned_(64) RxLane;

typedef struct RxSharedPathLock {
        pthread_mutex_t lock;
} _aligned_(64) RxSharedPathLock;

typedef struct RxShared {
        /* The reorder buffers: a lane's pointer is set once (atomic), under create_lock; mask has
         * a bit per lane that has one (atomic). window 0: no reordering, no lanes. */
        uint32_t window;
        RxLane *lanes[RX_SHARED_LANES];
        uint64_t mask;
        RxLender lender;
        /* What a lane is made with, and what the main thread set since (under create_lock). */
        pthread_mutex_t create_lock;
        usec_t max_delay, min_hold;
        usec_t extra[REORDER_PATHS_MAX];
        bool down[REORDER_PATHS_MAX];

        /* Secure mode: NULL in compat mode. */
        MptSecureRx *secure;
        RxSharedPathLock secure_locks[MPT_PATHS_MAX];
} RxShared;

static_assert(RX_SHARED_LANES <= 64, "a lane is one bit of a uint64_t");

/* window: ReorderWindow= (0: no reordering); max_delay: what a packet is held at most to begin
 * with (also the first minimum hold). */
int rx_shared_new(uint32_t window, usec_t max_delay, RxShared **ret);
RxShared *rx_shared_free(RxShared *rs);
/* Before any lane is made. */
void rx_shared_set_lender(RxShared *rs, const RxLender *lender);
/* Secure mode: the receive state of an end whose epoch is own_epoch, or with the handshake
 * (sessions) one whose epochs are its session ids (mpt_secure_rx_new_sessions()). */
int rx_shared_set_secure(RxShared *rs, bool sessions, uint64_t own_epoch);

/* ---- the data plane ---- */

/* The lane's reorder buffer, made if it is new; NULL without reordering, for a lane out of range
 * or when there is no memory for it. */
RxLane *rx_shared_lane(RxShared *rs, unsigned lane);
/* The lane if it was made, else NULL (any thread). */
RxLane *rx_shared_lane_get(const RxShared *rs, unsigned lane);
/* The lanes made so far, a bit each (any thread). */
uint64_t rx_shared_lanes(const RxShared *rs);
/* holder: who delivers while the lock is held (the RxLender's callbacks are told). */
void rx_lane_lock(RxLane *l, void *holder, RxContention *c);
/* Publishes the buffer's deadline and lets go. */
void rx_lane_unlock(RxLane *l);
/* When rx_lane_lock() is worth taking for reorder_expire() (any thread): the deadline as of the last unlock. */
usec_t rx_lane_deadline(const RxLane *l);

/* The lock of a sender path id's secure receive state (mpt_secure_rx_check(), _accept()). */
void rx_shared_secure_lock(RxShared *rs, unsigned path_id, RxContention *c);
void rx_shared_secure_unlock(RxShared *rs, unsigned path_id);

/* ---- the main thread ---- */

/* What a gap waits at most and at least (reorder_set_max_delay(), reorder_set_min_hold()). */
void rx_shared_set_hold(RxShared *rs, usec_t max_delay, usec_t min_hold);
/* What the packets of a path wait at least (reorder_set_path_extra()). */
void rx_shared_set_path_extra(RxShared *rs, unsigned path, usec_t extra);
void rx_shared_path_down(RxShared *rs, unsigned path);
void rx_shared_path_up(RxShared *rs, unsigned path);
/* The other end restarted: every lane delivers what it holds and starts a new sequence space. */
void rx_shared_reset(RxShared *rs, ReorderDeliver deliver, void *userdata);
/* The counters of all lanes, summed, and how many packets they hold. */
void rx_shared_stats(RxShared *rs, ReorderStats *ret, size_t *ret_buffered);
