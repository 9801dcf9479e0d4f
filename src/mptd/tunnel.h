/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Runtime state of one tunnel (one mptd process runs one tunnel): what is shared by the peers, the
 * other ends it serves (one today; peer.h has what is each one's).
 *
 * Threads and ownership:
 * - The main thread runs the sd-event loop and owns everything in Tunnel and Path: configuration,
 *   path state machines, keepalives and dead timers, netlink, the control socket.
 * - Worker threads (worker.c; the way out send.c, the way in receive.c) own one TUN queue each and read an immutable Snapshot of the path
 *   table, one per peer (Peer.snapshot). The main thread publishes a new snapshot whenever something the data plane needs
 *   changes, wakes the workers, and frees an old snapshot (and closes sockets that only it still
 *   names) once every worker has announced a newer generation: a worker takes the newest
 *   snapshot at the top of each loop iteration and never looks at an older one again.
 * - Counters are written by one thread each (per worker, per path) and summed when read.
 * - What receiving workers share is in RxShared (rx-shared.h: reorder buffers per lane, the secure
 *   receive state per sender path, each behind its own lock) and the receive buffer pool (a
 *   part per worker; atomic references); what sending workers share in compat mode is the
 *   sequence counter (atomic, a range per window); all workers share the keepalive queue to the
 *   main thread (mutex, rare).
 */

#include <pthread.h>
#include <systemd/sd-event.h>

#include "handshake.h"
#include "learn.h"
#include "netlink.h"
#include "nft.h"
#include "profile.h"
#include "reorder.h"
#include "rx-shared.h"
#include "scheduler.h"
#include "secure.h"
#include "tun.h"
#include "wire.h"

/* Receive buffers per tunnel that held packets can stay in (64 KiB each, 4 MiB in all), split
 * among the receiving workers, each of which gets TUNNEL_RX_POOL_MIN at least. */
#define TUNNEL_RX_POOL 64u
#define TUNNEL_RX_POOL_MIN 16u

typedef struct Tunnel Tunnel;
typedef struct Peer Peer;
typedef struct Path Path;
typedef struct Worker Worker;
typedef struct WorkerPeer WorkerPeer;

/* See compute_state() in path.c for the precedence between them (admin-down first, then the
 * local conditions, dead, probing, peer-down). */
typedef enum PathState {
        PATH_STATE_UP,           /* carries traffic */
        PATH_STATE_DEAD,         /* no keepalive within DeadTime= (PATH_DOWN, 0x80) */
        PATH_STATE_PEER_DOWN,    /* the other end says it cannot use or hear this path */
        PATH_STATE_ADMIN_DOWN,   /* taken down with mptctl (PATH_DOWN_MANUAL, 0x83) */
        PATH_STATE_NO_INTERFACE, /* Interface= does not exist (yet) */
        PATH_STATE_LINK_DOWN,    /* the interface is down or has no carrier (IF_DOWN, 0x81) */
        PATH_STATE_NO_ADDRESS,   /* no usable local address, or it cannot be bound (ADDRESS_DOWN, 0x82) */
        PATH_STATE_NO_ROUTE,     /* no route to Remote= through the interface */
        PATH_STATE_PROBING,      /* usable again here; waiting for the other end to answer */
        PATH_STATE_LISTENING,    /* no Remote=: waits for the other end's first authenticated datagram */
        _PATH_STATE_MAX,
        _PATH_STATE_INVALID = -EINVAL,
} PathState;

DECLARE_STRING_TABLE(path_state, PathState);

typedef struct PathCounters {
        uint64_t tx_packets, tx_bytes;
        uint64_t rx_packets, rx_bytes;
        uint64_t keepalives_tx, keepalives_rx;
        /* Loss repair (the tunnel's counters only): datagrams of the other end we asked for, its
         * requests for ours, ours we sent again, and those asked for that we no longer had (or
         * had no path for). */
        uint64_t repair_asked, repair_requested, repair_sent, repair_missed;
        uint64_t drops[_MPT_DROP_MAX];
} PathCounters;

/* What the data plane needs to know about a path. */
typedef struct SnapshotPath {
        int fds[MPT_WORKERS_MAX]; /* one socket per worker, -1: none */
        MptSockaddr remote;
        socklen_t remote_len;
        MptAddress remote_addr;
        uint16_t remote_port;
        bool pin_remote;
        unsigned endpoint;     /* paths sharing a local socket group share this id */
        /* Secure mode: the other end's sender path id (plus one; 0: none yet) and epoch of the
         * keepalives this path accepted last (Path.peer_id) */
        uint8_t peer_id;
        uint64_t peer_epoch;
        unsigned endpoint_paths; /* how many paths share it */
} SnapshotPath;

typedef struct Snapshot {
        uint64_t generation;
        unsigned n_paths;
        bool sequence;         /* put GRE sequence numbers on data */
        MptScheduler scheduler;
        size_t vector_len;     /* 0: no path up */
        uint8_t vector[MPT_VECTOR_MAX];
        struct Snapshot *retired_next;
        int *close_fds; /* sockets to close when this snapshot is freed */
        size_t n_close_fds;
        /* Secure mode: what the workers seal with (epoch 0: nothing yet, with the handshake;
         * no_session then says why nothing is sent), and with the handshake the key pairs they
         * open with (session.h). Wiped when the snapshot is freed. */
        MptSecureKeys tx_keys;
        bool no_session;
        MptHandshakeKeys hs_keys;
        /* Policy= (policy.h): the rules, a copy of the profile's (a reload frees that one while
         * workers may still read this snapshot); the paths that are up (pinned rules choose among
         * them); the path lowest-latency rules use (-1: none up). */
        MptPolicyRule *policy;
        size_t n_policy;
        /* whether a rule is redundant or lowest-latency: its packets do not wait behind the
         * paths' pace (see hold.h) */
        bool policy_ahead;
        uint64_t up_paths;
        int fastest;
        /* redundant rules: the paths that are up, normal ones first, each group by round-trip
         * time (unknown last) */
        uint8_t by_rtt[MPT_PATHS_MAX];
        unsigned n_by_rtt;
        SnapshotPath paths[];
} Snapshot;

struct Path {
        Peer *peer; /* whose path it is */
        unsigned index;
        const MptPathConfig *config;
        const char *name;

        PathState state;
        char *state_reason; /* why the path is not up, for logs and mptctl */
        bool admin_down;
        bool dead;    /* the dead timer fired */
        bool probing; /* came back locally; waits for a keepalive before it carries traffic */
        uint8_t peer_flags;

        /* What the kernel says (path_refresh() keeps it current). */
        int ifindex;  /* 0: the interface does not exist */
        bool link_up; /* IFF_UP and IFF_RUNNING */
        uint32_t link_mtu;
        int devclass; /* MptDevClass of the interface */
        bool route_ok;
        MptAddress local; /* bound address; unset when not bound */
        int *fds;         /* n_workers sockets (SO_REUSEPORT group); NULL when not bound */
        bool shares_fds;  /* the group is another path's (same local socket address) */
        sd_event_source *retry_timer; /* binding failed: try again */
        bool dirty; /* a kernel event concerns it: refresh soon */

        uint16_t remote_port;
        MptSockaddr remote; /* where we send; follows the other end unless PinRemote= */
        socklen_t remote_len;
        uint64_t remote_changes;
        uint32_t token;      /* our token for this path, in our keepalives */
        uint32_t peer_token; /* the other end's token for it */
        /* Secure mode: which of the other end's paths this is, by the sender path id (plus one;
         * 0: none yet) and epoch of its last keepalive here: the workers follow a new source of
         * it at once (receive.c), and a listening path bound to one path of the other end's
         * session is not given to another (tunnel_listening_slot()). */
        uint8_t peer_id;
        uint64_t peer_epoch;

        uint32_t weight_runtime; /* set with mptctl; valid when weight_runtime_set */
        bool weight_runtime_set;
        uint16_t peer_receive_weight;

        sd_event_source *keepalive_timer;
        sd_event_source *dead_timer;
        usec_t last_keepalive_rx; /* CLOCK_MONOTONIC; 0: never */
        usec_t state_since;
        uint32_t ka_seq;           /* last sent */
        usec_t ka_sent[64];        /* send time by seq, for RTT */
        uint32_t ka_rx_count;
        uint32_t peer_seq;         /* last received */
        usec_t peer_seq_time;
        uint32_t peer_session;
        usec_t rtt, rtt_var;       /* smoothed, 0: unknown (peer_rtt_changed() on a new sample) */
        usec_t rtt_min[2];         /* the smallest sample of this half-window and of the last (0: none) */
        usec_t rtt_min_since;      /* when this half-window began (PATH_RTT_MIN_WINDOW_USEC / 2) */
        double rx_loss_lost, rx_loss_total; /* decaying counts of keepalives from the peer */
        double tx_loss_lost, tx_loss_total; /* of ours, as the peer reports receiving them */
        uint32_t peer_echo_prev, peer_rx_count_prev;
        bool demoted;              /* loss above LossThreshold=: treated as a backup path */
        usec_t probe_answered;     /* last time we answered a probe */

        /* The learned scheduler (feedback.c): what the path delivers, and when we last heard of
         * it (or it began to carry data). */
        LearnPath learn;
        usec_t learn_news;
        usec_t learn_sent_last; /* when we last sent data on it, as the workers' marks said last tick */
        /* Receive side (feedback.c): when data last arrived on it, and what its packets wait at
         * least in the reorder buffer (delay equalisation). */
        uint64_t eq_rx_packets;
        usec_t eq_rx_at;
        usec_t reorder_extra;

        PathCounters counters; /* main thread's own: keepalives, control drops */
};

/* What workers hand to the main thread: control frames and new remote endpoints. */
typedef enum ControlEventKind {
        CONTROL_EVENT_KEEPALIVE,
        CONTROL_EVENT_PATH_STATUS,
        CONTROL_EVENT_ENDPOINT, /* well-formed traffic of this path from a new address or port */
        CONTROL_EVENT_FEEDBACK, /* what arrived of our paths at the other end (secure mode) */
        CONTROL_EVENT_HANDSHAKE, /* a handshake message (session.h), not authenticated yet */
        CONTROL_EVENT_SESSION,   /* a datagram authenticated under a responder's new session (epoch) */
} ControlEventKind;

typedef struct ControlEvent {
        ControlEventKind kind;
        unsigned path; /* the path the datagram arrived for (for ENDPOINT with a token: a guess) */
        unsigned socket_path; /* the path whose socket received it (paths may share one) */
        usec_t when;
        MptSockaddr source;
        uint32_t token; /* ENDPOINT: the peer's path token, when the datagram was a keepalive */
        /* Secure mode, KEEPALIVE and ENDPOINT: the datagram's sender path id plus one, and epoch */
        uint8_t peer_id;
        uint64_t peer_epoch;
        /* With the handshake: the session (receive epoch) the datagram authenticated under; 0:
         * none (compat mode, the pre-shared key, a handshake message). */
        uint64_t epoch;
        union {
                MptKeepalive ka;
                MptPathStatus ps;
                MptFeedback fb;
                struct {
                        uint8_t msg[MPT_HANDSHAKE_REPLY_MAX];
                        size_t len;
                } hs;
        };
} ControlEvent;

struct Tunnel {
        sd_event *event;
        MptProfile *profile; /* atomic: a reload replaces it (reload.c), a worker reads the key */
        bool owns_profile;      /* frees it (mptd's; a test's tunnel may keep its own) */
        /* Profiles a reload replaced: kept until the tunnel goes, since names and the key in
         * them may still be in use (a worker thread, a log line). A few kB each. */
        MptProfile **old_profiles;
        size_t n_old_profiles;
        char *reload_file; /* what a reload reads again: the profile, or the .netdev */
        bool reload_netdev;
        const char *name;
        Rtnl *rtnl;
        TunDevice tun;
        uint32_t mtu;
        uint8_t ip_version; /* of keepalive frames */
        MptAddress ka_src, ka_dst;
        bool *address_added; /* per profile address: we added it (remove on exit) */
        bool *route_added;

        /* The other ends this mptd serves (peer.h): exactly one today. */
        Peer **peers;
        size_t n_peers;

        Worker **workers;
        unsigned n_workers;

        uint64_t generation; /* atomic */
        Snapshot *retired;
        sd_event_source *reclaim_timer;

        bool gso_failed; /* atomic: the kernel refused UDP GSO once; send datagram by datagram */
        /* Receiving and sending workers apart (see path_rx_worker()): the paths are received
         * by workers 0 .. rx_workers - 1 and the flows sent by the others; 0: every worker
         * does both. Set before the paths bind. */
        unsigned rx_workers;
        /* Receive buffers the reorder buffers may hold packets in without copying them (see
         * receive.c), rx_pool_n of them, each receiving worker its own rx_pool_per_worker; a
         * buffer's references (atomic) are its receiving worker's (while it receives into it) and
         * the held packets'. NULL: no pool. */
        uint8_t *rx_pool;
        uint32_t *rx_pool_refs;
        unsigned rx_pool_n, rx_pool_per_worker;

        /* The control queue: every ControlEvent the workers hand to the main thread
         * (tunnel_queue_event()), control_n of them, under control_lock; control_eventfd wakes the
         * main thread when the queue stops being empty. */
        pthread_mutex_t control_lock;
        ControlEvent *control_queue;
        size_t control_n;
        uint64_t control_overflows; /* events dropped: the queue was full (mptctl: control_queue_overflows) */
        int control_eventfd;
        sd_event_source *control_source;

        uint64_t drops_main[_MPT_DROP_MAX]; /* counted by the main thread, not tied to a path */

        uint32_t session; /* this end's, in its keepalives (a new one at every start) */

        /* Secure mode (secure.h). Each peer has its epoch and sending key, fixed at start; every
         * path and lane has its own counter (the nonce is path id, lane and counter): the workers'
         * lanes are theirs (WorkerPeer.tx_counter), the control lane's counters are the main
         * thread's (Peer.tx_counter, for peer_seal()). Receive state (the peer's epoch,
         * anti-replay windows per sender path and lane) is in the peer's rx
         * (rx_shared_set_secure()); keys for the peer's epochs are derived by each worker from the
         * PSK and cached. */
        bool secure;
        bool aes; /* this end can do AES-256-GCM (and says so in every datagram) */
        /* The handshake (session.c; with one MptHandshake per peer, Peer.hs; without, the
         * pre-shared key alone, Peer.tx_keys and Peer.epoch). Set at start. The rest is the
         * main thread's, except hs_queued and hs_replies_queued (under control_lock). */
        bool handshake;
        /* handshake messages waiting in the control queue: initiations, and the others (the
         * replies to this end's initiations) */
        unsigned hs_queued;
        unsigned hs_replies_queued;
        /* this end's mac1 key (mpt_handshake_mac1_key()), set before the workers start: they
         * screen handshake messages with it (mpt_handshake_screen()) before queueing them */
        uint8_t hs_mac1_key[MPT_NOISE_KEY_SIZE];

        RtnlMonitor *monitor;
        sd_event_source *refresh_event; /* coalesces kernel events into one refresh */
        bool refresh_all;

        int *pending_close; /* retired sockets, handed to the next retired snapshot */
        size_t n_pending_close;

        /* The nftables table (Firewall=yes): what was last written, to rewrite it only on change. */
        Nft *nft;
        bool fw_applied;
        uint32_t fw_mtu;
        MptAddress *fw_remotes;
        size_t fw_n_remotes;
        unsigned fw_listen; /* the families of listening paths the table accepts from anywhere */

        usec_t started;
        bool running; /* set up; events after this are news */
};

/* Sets up the TUN device, addresses, routes, sockets and workers, or fails with a logged,
 * explained error. */
int tunnel_new(sd_event *event, MptProfile *profile, unsigned n_workers, Tunnel **ret);
/* Stops the workers, removes what tunnel_new() added, frees everything. */
Tunnel *tunnel_free(Tunnel *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Tunnel *, tunnel_free);

/* Builds and publishes every peer's snapshot from the current path states (main thread):
 * peer_publish() for each. */
int tunnel_publish(Tunnel *t);
void tunnel_reclaim(Tunnel *t);

Path *tunnel_find_path(Tunnel *t, const char *name);

/* The segments all workers sent so far (for the adaptive quantum; any thread). */
uint64_t tunnel_tx_segments(const Tunnel *t);
/* Sums the per-thread counters of one path (index) or, with path == -1, the tunnel's own. */
void tunnel_sum_counters(Tunnel *t, int path, PathCounters *ret);
/* The data packets one worker received and sent, over all paths. */
void tunnel_worker_packets(Tunnel *t, unsigned worker, uint64_t *ret_rx, uint64_t *ret_tx);
/* How often one worker found a lock of what the workers share taken, and how long it waited for
 * them in all (RxContention). */
void tunnel_worker_contention(Tunnel *t, unsigned worker, uint64_t *ret_waits, uint64_t *ret_wait_ns);
/* Whether a worker saw the path's datagrams wait in a local queue lately (send.c). */
bool tunnel_path_queued_locally(Tunnel *t, unsigned path);
/* The path's pace rate (bytes per second; 0: not paced). */
uint64_t tunnel_path_pace_rate(const Tunnel *t, unsigned path);

#define TUN_TX_QUEUE_LEN 4096u

/* Data-plane switches for testing both code paths (environment, read once at start):
 *   MPT_DEBUG_OFFLOAD=0  no TUN offloads (no virtio-net header), no UDP GSO and GRO
 *   MPT_DEBUG_BATCH=1    one packet per system call: no GSO/GRO, no coalescing, no batching
 *   MPT_DEBUG_RX_TURN=N  a fixed number of receive buffers per recvmmsg() of a ready path (1..8)
 *   MPT_DEBUG_RX_SPREAD=1  every worker receives paths and sends flows (see path_rx_worker())
 *   MPT_DEBUG_CIPHER=chacha20-poly1305  secure mode as on a CPU without AES instructions
 *   MPT_DEBUG_PACE=0     the learned scheduler paces no path (to compare; learn_pace_rate())
 *   MPT_DEBUG_REPAIR=0   no loss repair in secure mode (to compare)
 *   MPT_DEBUG_REKEY=MS   with the handshake, the initiator of a session rekeys after MS (>= 100)
 *                        milliseconds instead of 2 minutes (tests of what a rekey does) */
typedef struct DataplaneOptions {
        bool offload;
        unsigned batch; /* packets per wake and per system call, 1..WORKER_BATCH */
        unsigned quantum;    /* segments per path and vector slot (scheduler.h), 1..SCHED_QUANTUM_LIMIT */
        bool quantum_fixed;  /* MPT_DEBUG_RUN: the quantum is fixed, not adaptive */
        unsigned rx_turn; /* most receive buffers per recvmmsg() of a ready path, 1..WORKER_RX_MMSG */
        bool rx_turn_fixed; /* MPT_DEBUG_RX_TURN: always rx_turn, not by the size of the messages */
        bool no_aes;    /* as on a CPU without AES instructions: ChaCha20-Poly1305 only */
        bool rx_spread; /* MPT_DEBUG_RX_SPREAD: no receiving and sending workers apart */
        bool pace;      /* MPT_DEBUG_PACE=0: the learned scheduler paces no path (learn_pace_rate()) */
        bool repair;    /* MPT_DEBUG_REPAIR=0: no loss repair */
        usec_t rekey_usec; /* MPT_DEBUG_REKEY: rekey after this (0: as the handshake says) */
} DataplaneOptions;

extern DataplaneOptions dataplane_options;
void dataplane_options_load(void);

/* Writes one complete IP packet to the TUN device (any thread) through queue fd (one of
 * t->tun.fds: tunnel_tun_fd_for(), or a worker's own), with a virtio-net header when the device
 * has them. */
int tunnel_write_packet(const Tunnel *t, int fd, const uint8_t *pkt, size_t len);

/* The TUN queue to write a received packet through (by symmetric flow hash). */
int tunnel_tun_fd_for(const Tunnel *t, const uint8_t *pkt, size_t len);


/* Called by workers: hands a control event to the main thread. false: the queue is full (a
 * handshake message: more initiations, or more of the other messages, wait than
 * HANDSHAKE_QUEUE_MAX), counted by the caller as it sees fit. */
#define HANDSHAKE_QUEUE_MAX 64u
/* The most control events that wait at once: keepalives come a few per second per path (at most
 * MPT_PATHS_MAX paths) and the main thread takes them all at each wake, so a queue this long means
 * that it is stuck or that someone floods us; events beyond are dropped and counted rather than
 * grow the queue without bound. It grows by CONTROL_QUEUE_GROW events at a time (one realloc()
 * per so many under the lock). */
#define CONTROL_QUEUE_MAX 4096u
#define CONTROL_QUEUE_GROW 64u
bool tunnel_queue_event(Tunnel *t, const ControlEvent *ev);
/* Re-reads the kernel's state for every path soon (coalesced). */
void tunnel_schedule_refresh(Tunnel *t);
/* Recomputes the automatic MTU from the paths' links and applies it when it changed. */
void tunnel_update_mtu(Tunnel *t);
/* Writes the nftables table again when the remotes or the MTU changed (Firewall=yes). At start a
 * failure is an error; later it is logged and retried at the next change. */
int tunnel_update_firewall(Tunnel *t, bool startup);
/* A reload (reload.c) changed the tunnel section from old to what t->profile has now: addresses
 * and routes of the device (only what mptd added goes), the MTU, the keepalives' addresses.
 * Failures are logged and counted in *failed; < 0 only when out of memory. */
int tunnel_apply_device(Tunnel *t, const MptTunnelConfig *old, unsigned *failed);
/* Retires sockets: they are closed once no worker can use them any more. */
void tunnel_retire_fds(Tunnel *t, int *fds, unsigned n);

/* The path that the other end's token names (path.c); NULL: none. */
Path *tunnel_path_by_peer_token(Tunnel *t, uint32_t token);
/* A listening path (no Remote=) for the source of ev, an ENDPOINT event of a keepalive that
 * authenticated with a token no path knows, on the socket of path ev->socket_path; NULL: none. */
Path *tunnel_listening_slot(Tunnel *t, const ControlEvent *ev);

usec_t now_usec(void);
uint64_t now_nsec(void);

/* The Peer (peer.h) and the Path API (path.c) need the types above. */
#include "peer.h"
#include "path.h"
