/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A peer: the other end of the tunnel, and everything mptd keeps about it (peer.c). A Tunnel
 * (tunnel.h) is what one mptd shares among its peers: the TUN device and its queues, the worker
 * threads, the rtnetlink monitor, the nftables table, the control queue, the profile and its
 * reload; a Peer is what belongs to one other end: its paths and their snapshot, its handshake and
 * session, its secure receive state and reorder lanes (RxShared), the learned rates, feedback,
 * pacing and loss repair, and its session and restarts. A Tunnel has exactly one Peer today.
 *
 * Threads: as for the Tunnel (tunnel.h). The main thread owns the Peer; the workers read its
 * snapshot and the fields marked atomic. */

#include "tunnel.h"

struct Peer {
        Tunnel *tunnel; /* the one it is a peer of */
        unsigned index; /* in tunnel->peers */

        Path **paths;
        size_t n_paths;

        Snapshot *snapshot; /* atomic: what the workers send to and receive from this peer with */

        /* Compat mode's sequence space towards the peer (atomic): each sending worker takes a range of it per
         * window of segments. In secure mode each worker numbers its own lane (WorkerPeer.tx_seq). */
        uint64_t tx_seq;
        /* Compat mode with sequence numbers and several workers: numbering and sending one TUN
         * packet's segments happen in one step, so that every path carries its packets in
         * sequence order (the receiver infers loss from that). Secure mode has a lane per worker
         * instead, and never takes it. */
        pthread_mutex_t tx_lock;
        /* Pacing (the learned scheduler's, learn_pace_rate()): the paths paced (a bit each; the
         * main thread sets them, see pace_update() in feedback.c), per path its rate in bytes per
         * second and when (CLOCK_MONOTONIC, ns) what was sent on it is due at that rate. A
         * worker sends no run on a path more than PACE_BURST_NSEC ahead of its pace, and stops
         * reading the TUN device while every path of the vector is. All atomic. */
        uint64_t pace_rate[MPT_PATHS_MAX];
        uint64_t pace_next[MPT_PATHS_MAX];
        uint64_t pace_paths; /* the paths with a pace rate, a bit each */
        /* Loss repair (secure mode with reordering; MPT_DEBUG_REPAIR=0: none; mptd(8), LOSS
         * REPAIR): our path with the shortest round trip, for repair requests and what we send
         * again (the main thread sets it every FEEDBACK_INTERVAL_USEC; -1: none). Atomic. */
        bool repair;
        int repair_via;
        bool reorder_enabled;
        /* What the receiving workers share: reorder buffers, secure receive state. */
        RxShared *rx;
        usec_t reorder_hold;     /* what it waits for a missing packet now (feedback.c) */
        usec_t reorder_spread;   /* and at least, before it infers that one is lost */

        uint32_t peer_session;  /* the other end's session, from its keepalives (0: none heard yet) */
        uint64_t peer_restarts; /* how often it changed (the other end restarted) */

        /* Secure mode (secure.h): this end's epoch and sending key towards the peer, fixed at
         * start; the control lane's counters per path (peer_seal()); the peer's epochs accepted. */
        uint64_t epoch;
        MptSecureKeys tx_keys;
        uint64_t tx_counter[MPT_PATHS_MAX]; /* next counter per path on the control lane */
        uint64_t peer_epochs; /* atomic: how many new epochs of the other end were accepted */
        /* The handshake with the peer (session.c; NULL: the pre-shared key alone, tx_keys and
         * epoch). Main thread. */
        MptHandshake *hs;
        sd_event_source *hs_timer;
        uint64_t hs_version;   /* mpt_handshake_keys_version() the last snapshot has */
        uint64_t hs_current;   /* the current key pair's receive epoch then (0: none) */
        uint64_t hs_initiations, hs_sessions; /* initiations sent; sessions that became current */
        usec_t hs_session_at;  /* when the current one did (session_now()) */

        /* The learned scheduler and feedback (feedback.c). */
        sd_event_source *feedback_timer;
        uint64_t feedback_rx, feedback_tx;           /* frames */
        uint64_t feedback_reported[MPT_PATHS_MAX];   /* per path id of the other end: the last marker told */
        uint8_t feedback_reported_lane[MPT_PATHS_MAX]; /* and its lane */
        uint32_t feedback_reported_packets[MPT_PATHS_MAX]; /* and the datagrams received then */
        usec_t learn_saturated_at;                   /* when a path was last saturated; 0: never */
        bool learn_light;                            /* none was for LEARN_LIGHT_AFTER_USEC (at the last publishing) */
        bool learn_by_rates;                         /* the last published weights were the rates (learn_weights()) */
        uint32_t learn_published[MPT_PATHS_MAX];     /* the weights last published, per path */
        uint64_t learn_load;                         /* bytes per second sent lately (the larger of two windows) */
        uint64_t learn_load_win[2];                  /* the last two windows' */
        uint64_t learn_load_bytes;                   /* tx bytes of all paths at this window's start */
        usec_t learn_load_since;                     /* when this window began; 0: not yet */

        unsigned paths_up;
        int fastest; /* Policy=: the path lowest-latency rules use now (-1: none); see tunnel_publish() */
};

/* Builds and publishes the peer's snapshot from the current states of its paths (main thread). */
int peer_publish(Peer *peer);

/* What the peer's reorder buffer waits for a missing packet: hold at most, and spread at least
 * before it infers that it is lost (feedback.h). */
void peer_set_reorder_hold(Peer *peer, usec_t hold, usec_t spread);
/* What the packets of the peer's path i wait at least in the reorder buffer
 * (reorder_set_path_extra()). */
void peer_set_reorder_extra(Peer *peer, size_t i, usec_t extra);

/* The peer restarted: deliver what its reorder buffer holds and start a new sequence space. */
void peer_reset_reorder(Peer *peer);
bool peer_reorder_has_delivered(Peer *peer);

/* Secure mode: seals the datagram at buf + MPT_SECURE_HEADER_SIZE (len bytes, with room for
 * the tag after it) for the peer's path index path, in place, on the control lane, its length in
 * *ret_len. Returns -1, or the drop reason for the caller to count: counter-exhausted,
 * cipher-error. Main thread only (it owns the control lane's counters). */
int peer_seal(Peer *peer, unsigned path, uint8_t *buf, size_t len, size_t *ret_len);
/* The cipher datagrams to the peer are sealed with now: AES-256-GCM when both ends can do it. */
MptCipher peer_tx_cipher(const Peer *peer);

/* Policy=: a path of the peer's round-trip time changed; republishes when the path that
 * lowest-latency rules use changes with it. */
void peer_rtt_changed(Peer *peer);

/* The functions above are in tunnel.c. */

/* A new peer of t, index index, with nothing set up yet (the Tunnel's setup does that). */
int peer_new(Tunnel *t, unsigned index, Peer **ret);
/* Frees what the Peer itself holds (its paths, snapshot and the rest are freed by tunnel_free()
 * before). */
Peer *peer_free(Peer *p);
