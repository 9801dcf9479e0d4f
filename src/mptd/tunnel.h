/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Runtime state of one tunnel (one mptd process runs one tunnel).
 *
 * Threads and ownership:
 * - The main thread runs the sd-event loop and owns everything in Tunnel and Path: configuration,
 *   path state machines, keepalives and dead timers, netlink, the control socket.
 * - Worker threads (worker.c) own one TUN queue each and read an immutable Snapshot of the path
 *   table. The main thread publishes a new snapshot whenever something the data plane needs
 *   changes, wakes the workers, and frees an old snapshot (and closes sockets that only it still
 *   names) once every worker has announced a newer generation: a worker takes the newest
 *   snapshot at the top of each loop iteration and never looks at an older one again.
 * - Counters are written by one thread each (per worker, per path) and summed when read.
 * - What workers share: the TX sequence counter (atomic), the reorder buffer (mutex; only when
 *   ReorderWindow= is not 0), and the keepalive queue to the main thread (mutex, rare).
 */

#include <pthread.h>
#include <systemd/sd-event.h>

#include "netlink.h"
#include "profile.h"
#include "reorder.h"
#include "scheduler.h"
#include "tun.h"
#include "wire.h"

typedef struct Tunnel Tunnel;
typedef struct Path Path;
typedef struct Worker Worker;

typedef enum PathState {
        PATH_STATE_UP,         /* carries traffic */
        PATH_STATE_DEAD,       /* no keepalive within DeadTime= (PATH_DOWN, 0x80) */
        PATH_STATE_PEER_DOWN,  /* the other end says it cannot use or hear this path */
        PATH_STATE_ADMIN_DOWN, /* taken down with mptctl (PATH_DOWN_MANUAL, 0x83) */
        _PATH_STATE_MAX,
        _PATH_STATE_INVALID = -EINVAL,
} PathState;

DECLARE_STRING_TABLE(path_state, PathState);

typedef struct PathCounters {
        uint64_t tx_packets, tx_bytes;
        uint64_t rx_packets, rx_bytes;
        uint64_t keepalives_tx, keepalives_rx;
        uint64_t drops[_MPT_DROP_MAX];
} PathCounters;

/* What the data plane needs to know about a path. */
typedef struct SnapshotPath {
        int fds[MPT_WORKERS_MAX]; /* one socket per worker, -1: none */
        MptSockaddr remote;
        socklen_t remote_len;
        MptAddress remote_addr;
        unsigned endpoint;     /* paths sharing a local socket address share this id */
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
        SnapshotPath paths[];
} Snapshot;

struct Path {
        Tunnel *tunnel;
        unsigned index;
        const MptPathConfig *config;
        const char *name;

        PathState state;
        bool admin_down;
        bool dead;
        uint8_t peer_flags;

        int ifindex;
        uint32_t link_mtu;
        MptAddress local;
        uint16_t remote_port;
        MptSockaddr remote;
        socklen_t remote_len;
        int *fds; /* n_workers sockets, SO_REUSEPORT group */

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
        usec_t rtt, rtt_var;       /* smoothed, 0: unknown */
        double rx_loss_lost, rx_loss_total; /* decaying counts of keepalives */

        PathCounters counters; /* main thread's own: keepalives, control drops */
};

typedef struct KeepaliveEvent {
        unsigned path;
        usec_t when;
        MptSockaddr source;
        MptKeepalive ka;
} KeepaliveEvent;

struct Tunnel {
        sd_event *event;
        MptProfile *profile;
        const char *name;
        Rtnl *rtnl;
        TunDevice tun;
        uint32_t mtu;
        uint8_t ip_version; /* of keepalive frames */
        MptAddress ka_src, ka_dst;
        bool *address_added; /* per profile address: we added it (remove on exit) */
        bool *route_added;

        Path **paths;
        size_t n_paths;

        Worker **workers;
        unsigned n_workers;

        Snapshot *snapshot; /* atomic */
        uint64_t generation; /* atomic */
        Snapshot *retired;
        sd_event_source *reclaim_timer;

        uint64_t tx_seq; /* atomic */
        bool reorder_enabled;
        pthread_mutex_t reorder_lock;
        Reorder *reorder;
        usec_t reorder_deadline; /* atomic copy of reorder_deadline() */

        pthread_mutex_t ka_lock;
        KeepaliveEvent *ka_queue;
        size_t ka_n;
        uint64_t ka_overflow;
        int ka_eventfd;
        sd_event_source *ka_source;

        uint64_t drops_main[_MPT_DROP_MAX]; /* counted by the main thread, not tied to a path */

        uint32_t session;
        uint32_t peer_session;
        uint64_t peer_restarts;

        usec_t started;
        unsigned paths_up;
};

/* Sets up the TUN device, addresses, routes, sockets and workers, or fails with a logged,
 * explained error. */
int tunnel_new(sd_event *event, MptProfile *profile, unsigned n_workers, Tunnel **ret);
/* Stops the workers, removes what tunnel_new() added, frees everything. */
Tunnel *tunnel_free(Tunnel *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Tunnel *, tunnel_free);

/* Builds and publishes a snapshot from the current path states (main thread). */
int tunnel_publish(Tunnel *t);
void tunnel_reclaim(Tunnel *t);

Path *tunnel_find_path(Tunnel *t, const char *name);
uint32_t path_effective_weight(const Path *p);
bool path_is_backup(const Path *p);
void path_update_state(Path *p, const char *reason);
int path_set_admin(Path *p, bool down);
int path_set_weight(Path *p, uint32_t weight);

/* Sums the per-thread counters of one path (index) or, with path == -1, the tunnel's own. */
void tunnel_sum_counters(Tunnel *t, int path, PathCounters *ret);

/* The other end restarted: deliver what the reorder buffer holds and start a new sequence space. */
void tunnel_reset_reorder(Tunnel *t);

/* Called by workers: hands a received keepalive to the main thread. */
void tunnel_queue_keepalive(Tunnel *t, const KeepaliveEvent *ev);

/* path.c */
int path_new(Tunnel *t, unsigned index, const MptPathConfig *config, Path **ret);
Path *path_free(Path *p);
int path_open_sockets(Path *p);
int path_start(Path *p);
void path_handle_keepalive(Path *p, const KeepaliveEvent *ev);

usec_t now_usec(void);
