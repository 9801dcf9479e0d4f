/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <linux/udp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <linux/sockios.h>
#include <sys/socket.h>
#include <time.h>

#include "byteorder.h"
#include "log.h"
#include "sandbox.h"
#include "session.h"
#include "worker.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
/* Most datagrams one UDP GSO send may carry (UDP_MAX_SEGMENTS is 64 on older kernels), and the
 * most payload bytes (the IP length field). */
#define GSO_SEGMENTS_MAX 64u
#define GSO_BYTES_MAX 65000u

#define EV_TUN UINT64_C(0xffffffff)
#define EV_WAKE UINT64_C(0xfffffffe)

static void tx_mark(Worker *w, unsigned p, uint64_t first, uint64_t last, usec_t now);
static void pace_charge(Tunnel *t, unsigned p, uint64_t now, size_t len);
static void repair_request(Worker *w, const MptRepair *r);

int worker_new(Tunnel *t, unsigned id, int tun_fd, Worker **ret) {
        Worker *w;
        struct epoll_event ev = { .events = EPOLLIN };

        w = calloc(1, sizeof(Worker));
        if (!w)
                return -ENOMEM;
        w->tunnel = t;
        w->id = id;
        w->tun_fd = tun_fd;
        w->epoll_fd = w->wake_fd = -EBADF;
        for (unsigned i = 0; i < MPT_PATHS_MAX; i++) {
                w->registered[i] = -1;
                w->rx_turn[i] = 1;
        }
        /* Secure mode: this worker's lane starts its sequence space at a random point (see
         * tunnel_new()), and its counters at 1. */
        (void) !getrandom(&w->tx_seq, sizeof w->tx_seq, 0);
        for (unsigned i = 0; i < MPT_PATHS_MAX; i++)
                w->tx_counter[i] = 1;
        /* Spread the workers over the sending vector so they do not all start on path 0. */
        w->runs.cursor = id * 7919u;
        w->run = dataplane_options.run;
        w->gso_queued = GSO_SEGMENTS_MAX;

        /* Touched only as far as used: one message per call needs only the first buffer. */
        w->rx_buffer = malloc((size_t) WORKER_RX_MMSG * WORKER_BUFFER_SIZE);
        if (w->rx_buffer) {
                for (unsigned i = 0; i < WORKER_RX_MMSG; i++) {
                        w->rx_cur[i] = w->rx_buffer + (size_t) i * WORKER_BUFFER_SIZE;
                        w->rx_pool_index[i] = -1;
                }
        }
        w->gro_stage = malloc(WORKER_BUFFER_SIZE);
        w->tx_buffer = malloc(WORKER_BUFFER_SIZE + WORKER_HEADROOM);
        w->tx_headers = malloc(OFFLOAD_SEGMENTS_MAX * (WORKER_GRE_ROOM + OFFLOAD_HEADERS_MAX));
        w->path_iov = calloc((size_t) MPT_PATHS_MAX * 2 * OFFLOAD_SEGMENTS_MAX, sizeof(struct iovec));
        if (!w->rx_buffer || !w->gro_stage || !w->tx_buffer || !w->tx_headers || !w->path_iov)
                goto oom;
        /* Touched only as far as used (a reload may add rules: not only when there are some). */
        if (hold_init(&w->hold, WORKER_HOLD_BYTES) < 0)
                goto oom;
        if (t->reorder_enabled) {
                unsigned receivers = t->rx_workers > 0 ? t->rx_workers : t->n_workers;

                w->pending = calloc(WORKER_PENDING_MAX, sizeof(RxPending));
                if (!w->pending)
                        goto oom;
                /* The lanes are spread over the receiving workers for their expiry. */
                for (unsigned l = 0; l < RX_SHARED_LANES && id < receivers; l++)
                        if (l % receivers == id)
                                w->expire_lanes |= UINT64_C(1) << l;
                if (t->rx_pool && id < receivers) {
                        w->pool_first = id * t->rx_pool_per_worker;
                        w->pool_n = t->rx_pool_per_worker;
                }
                if (t->rx_pool) {
                        w->pool_released = calloc(t->rx_pool_n, sizeof(uint32_t));
                        w->pool_released_list = calloc(t->rx_pool_n, sizeof(uint16_t));
                        if (!w->pool_released || !w->pool_released_list)
                                goto oom;
                }
        }
        if (t->repair) {
                /* Touched only as far as used. */
                w->keep = malloc(WORKER_KEEP_BYTES);
                /* For every path number: a reload may add paths (calloc: untouched pages cost
                 * no memory). */
                w->keep_slots = calloc((size_t) MPT_PATHS_MAX * WORKER_KEEP_SLOTS, sizeof(KeepSlot));
                if (!w->keep || !w->keep_slots)
                        goto oom;
                pthread_mutex_init(&w->repair_lock, NULL);
                w->repair_lock_init = true;
        }
        if (t->secure) {
                w->tx_crypt = malloc(WORKER_CRYPT_SIZE);
                w->tx_marks = calloc((size_t) MPT_PATHS_MAX * WORKER_TX_MARKS, sizeof(TxMark));
                if (!w->tx_crypt || !w->tx_marks)
                        goto oom;
        }
        w->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (w->epoll_fd < 0)
                goto fail;
        w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->wake_fd < 0)
                goto fail;
        ev.data.u64 = EV_WAKE;
        if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, w->wake_fd, &ev) < 0)
                goto fail;
        ev.data.u64 = EV_TUN;
        if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, w->tun_fd, &ev) < 0)
                goto fail;
        *ret = w;
        return 0;
oom:
        worker_free(w);
        return -ENOMEM;
fail: {
        int r = -errno;
        worker_free(w);
        return r;
}
}

Worker *worker_free(Worker *w) {
        if (!w)
                return NULL;
        assert(!w->started);
        safe_close(w->epoll_fd);
        safe_close(w->wake_fd);
        free(w->rx_buffer);
        free(w->gro_stage);
        free(w->tx_buffer);
        free(w->tx_headers);
        free(w->path_iov);
        hold_done(&w->hold);
        free(w->tx_crypt);
        free(w->tx_copy);
        free(w->tx_marks);
        free(w->keep);
        free(w->keep_slots);
        if (w->repair_lock_init)
                pthread_mutex_destroy(&w->repair_lock);
        free(w->pending);
        free(w->pool_released);
        free(w->pool_released_list);
        mpt_secure_keys_wipe(&w->rx_keys);
        mpt_secure_keys_wipe(&w->rx_try_keys);
        return mfree(w);
}

/* ---- receive buffer pool ----
 * A buffer of the pool belongs to one receiving worker, which alone receives into it and looks
 * for free ones among its own. Its references (atomic) are that worker's while it receives into
 * it, and one per held packet in it, taken by that worker (it inserts what it received) and
 * given back by whichever worker delivers the packet, after the TUN write that may point into
 * it. A buffer whose references are all gone is free again. */

static int pool_index(const Tunnel *t, const uint8_t *p) {
        if (!t->rx_pool || p < t->rx_pool || p >= t->rx_pool + (size_t) t->rx_pool_n * WORKER_BUFFER_SIZE)
                return -1;
        return (int) ((size_t) (p - t->rx_pool) / WORKER_BUFFER_SIZE);
}

static bool pool_retain(void *userdata, void *holder, const uint8_t *pkt, size_t len) {
        Tunnel *t = userdata;
        int i = pool_index(t, pkt);

        /* Only packets in a pool buffer (whose receiving worker holds it, so it is not free). */
        if (i < 0)
                return false;
        assert(__atomic_load_n(&t->rx_pool_refs[i], __ATOMIC_RELAXED) > 0);
        __atomic_add_fetch(&t->rx_pool_refs[i], 1, __ATOMIC_RELAXED);
        return true;
}

static void pool_put(Tunnel *t, int i, uint32_t n) {
        /* (release: what this thread read of the buffer comes before its next use) */
        uint32_t left = __atomic_sub_fetch(&t->rx_pool_refs[i], n, __ATOMIC_RELEASE);

        assert(left < UINT32_MAX - n);
        (void) left;
}

static void pool_release(void *userdata, void *holder, const uint8_t *pkt) {
        Tunnel *t = userdata;
        Worker *w = holder;
        int i = pool_index(t, pkt);

        assert(i >= 0);
        /* The main thread writes at once; a worker may still point into the buffer with a
         * super-packet it gathers (tun_deliver()): the reference goes back after its flush. */
        if (!w) {
                pool_put(t, i, 1);
                return;
        }
        if (w->pool_released[i]++ == 0)
                w->pool_released_list[w->n_pool_released++] = (uint16_t) i;
}

/* After gro_flush(): gives back what the deliveries since the last call let go of. */
static void pool_released_flush(Worker *w) {
        for (unsigned k = 0; k < w->n_pool_released; k++) {
                unsigned i = w->pool_released_list[k];

                pool_put(w->tunnel, (int) i, w->pool_released[i]);
                w->pool_released[i] = 0;
        }
        w->n_pool_released = 0;
}

int worker_pool_setup(Tunnel *t) {
        unsigned receivers = t->rx_workers > 0 ? t->rx_workers : t->n_workers;

        if (!t->reorder_enabled)
                return 0;
        t->rx_pool_per_worker = MAX(TUNNEL_RX_POOL / MAX(receivers, 1u), TUNNEL_RX_POOL_MIN);
        t->rx_pool_n = t->rx_pool_per_worker * MAX(receivers, 1u);
        assert(t->rx_pool_n <= UINT16_MAX);
        t->rx_pool_refs = calloc(t->rx_pool_n, sizeof(uint32_t));
        /* Touched once here, so that the resident size does not creep up under load as deeper
         * buffers of the free stack get used for the first time. */
        t->rx_pool = malloc((size_t) t->rx_pool_n * WORKER_BUFFER_SIZE);
        if (!t->rx_pool || !t->rx_pool_refs) {
                worker_pool_free(t);
                return -ENOMEM;
        }
        /* (volatile: a malloc() followed by memset(0) may become a lazily zeroed calloc()) */
        for (size_t o = 0; o < (size_t) t->rx_pool_n * WORKER_BUFFER_SIZE; o += 4096)
                ((volatile uint8_t *) t->rx_pool)[o] = 0;
        rx_shared_set_lender(t->rx, &(RxLender) {
                .retain = pool_retain,
                .release = pool_release,
                .userdata = t,
        });
        return 0;
}

void worker_pool_free(Tunnel *t) {
        t->rx_pool = mfree(t->rx_pool);
        t->rx_pool_refs = mfree(t->rx_pool_refs);
        t->rx_pool_n = 0;
}

/* After receive buffer m (message m of a recvmmsg()) was handled and what it delivered written:
 * keep it if no held packet is in it, else leave it to the held packets and take a free one of
 * this worker's part of the pool (or the worker's own buffer m, which held packets are copied out
 * of, when none is free). A buffer with held packets in it is thus never received into again
 * before they are delivered; the worker's own buffers are never lent (pool_retain()). */
static void pool_next_buffer(Worker *w, unsigned m) {
        Tunnel *t = w->tunnel;
        int i = w->rx_pool_index[m];

        if (w->pool_n == 0)
                return;
        if (i >= 0) {
                if (__atomic_load_n(&t->rx_pool_refs[i], __ATOMIC_ACQUIRE) == 1)
                        return;
                pool_put(t, i, 1);
        }
        for (unsigned k = 0; k < w->pool_n; k++) {
                unsigned j = w->pool_first + (w->pool_cursor + k) % w->pool_n;

                /* (acquire: the last reader of the buffer is done with it) */
                if (__atomic_load_n(&t->rx_pool_refs[j], __ATOMIC_ACQUIRE) != 0)
                        continue;
                __atomic_store_n(&t->rx_pool_refs[j], 1, __ATOMIC_RELAXED);
                w->pool_cursor = (w->pool_cursor + k + 1) % w->pool_n;
                w->rx_pool_index[m] = (int) j;
                w->rx_cur[m] = t->rx_pool + (size_t) j * WORKER_BUFFER_SIZE;
                return;
        }
        w->rx_pool_index[m] = -1;
        w->rx_cur[m] = w->rx_buffer + (size_t) m * WORKER_BUFFER_SIZE;
}

void worker_wake(Worker *w) {
        uint64_t one = 1;
        (void) !write(w->wake_fd, &one, sizeof one);
}

static void reconcile(Worker *w, const Snapshot *s) {
        for (unsigned i = 0; i < s->n_paths; i++) {
                int fd = s->paths[i].fds[w->id];
                struct epoll_event ev = { .events = EPOLLIN, .data.u64 = i };

                if (w->registered[i] == fd)
                        continue;
                if (w->registered[i] >= 0)
                        (void) epoll_ctl(w->epoll_fd, EPOLL_CTL_DEL, w->registered[i], NULL);
                w->registered[i] = -1;
                if (fd >= 0 && epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, fd, &ev) >= 0)
                        w->registered[i] = fd;
        }
        /* A run must not go on over a path the new snapshot may have taken out. */
        sched_runs_reset(&w->runs);
        w->min_slots = sched_vector_min_slots(s->vector, s->vector_len);
        w->vector_paths = 0;
        memset(w->vector_slots, 0, sizeof w->vector_slots);
        for (size_t i = 0; i < s->vector_len; i++) {
                w->vector_paths |= UINT64_C(1) << s->vector[i];
                w->vector_slots[s->vector[i]]++;
        }
        __atomic_store_n(&w->seen_generation, s->generation, __ATOMIC_RELEASE);
}

/* Whether this worker is one of the receiving workers of a tunnel whose receiving and sending
 * workers are apart (see path_rx_worker()). */
static bool worker_rx_apart(const Worker *w) {
        const Tunnel *t = w->tunnel;

        return t->rx_workers > 0 && w->id < t->rx_workers && t->rx_workers < t->tun.n_fds;
}

/* Received packets go in through the queue their flow hashes to. The kernel sends a flow's
 * outgoing packets through the queue its incoming ones last came in by, so every flow stays
 * with one worker, which numbers its packets in order. (Writing through the worker's own queue
 * would move a flow between workers with every acknowledgement that arrives on another path.)
 * With receiving and sending workers apart that is a sending worker, except while the tunnel is
 * quiet (update_quiet()): then a receiving worker writes through its own queue and so sends the
 * answers itself. */
static int worker_tun_fd(const Worker *w, const uint8_t *pkt, size_t len) {
        /* Only a receiving worker is ever quiet (update_quiet()). */
        if (w->quiet)
                return w->tun_fd;
        return tunnel_tun_fd_for(w->tunnel, pkt, len);
}

/* A quiet tunnel (a few pings, an interactive session, keepalives) gains nothing from
 * receiving and sending workers apart and pays for it in latency: each answer would wake a
 * second thread at each end, which on an idle machine often sleeps on another, idle CPU. So a
 * receiving worker answers its flows itself while the tunnel moves fewer than
 * WORKER_QUIET_PACKETS packets per SCHED_RATE_INTERVAL_USEC (what this worker wrote to the TUN
 * device and what the tunnel sent), and hands them back to the sending workers as soon as it
 * moves more than WORKER_BUSY_PACKETS within one: a bulk flow moves to the sending workers
 * within its first milliseconds, and one flow changes worker once when its rate crosses, while
 * its queues are nearly empty (no reordering worth the name). Pings 10 ms apart through an idle
 * tunnel of two workers per end (medians of 20 x 100): 128 us added round trip instead of 147 in
 * compat mode, 159 instead of 169 in secure mode; the naive forwarder of tests/bench adds 106. */
static void update_quiet(Worker *w) {
        Tunnel *t = w->tunnel;
        uint64_t tx, packets;
        usec_t now;

        if (!worker_rx_apart(w))
                return;
        now = now_usec();
        /* What the tunnel sent is the sum of every worker's count: read only where it can change
         * the outcome (while quiet, and once per interval). */
        if (!w->quiet && w->quiet_since != 0 && now < w->quiet_since + SCHED_RATE_INTERVAL_USEC)
                return;
        tx = tunnel_tx_segments(t);
        if (w->quiet_since == 0) {
                w->quiet = true;
                w->quiet_since = now;
                w->quiet_rx = 0;
                w->quiet_tx = tx;
                return;
        }
        packets = w->quiet_rx + (tx - w->quiet_tx);
        if (w->quiet && packets > WORKER_BUSY_PACKETS)
                w->quiet = false;
        if (now >= w->quiet_since + SCHED_RATE_INTERVAL_USEC) {
                if (!w->quiet &&
                    packets * SCHED_RATE_INTERVAL_USEC < (uint64_t) WORKER_QUIET_PACKETS * (now - w->quiet_since))
                        w->quiet = true;
                w->quiet_since = now;
                w->quiet_rx = 0;
                w->quiet_tx = tx;
        }
}

static void gro_flush(Worker *w) {
        struct iovec *iov;
        size_t n = gro_finish(&w->gro, &iov);
        const uint8_t *headers;

        if (n == 0)
                return;
        headers = iov[1].iov_base;
        if (writev(worker_tun_fd(w, headers, iov[1].iov_len), iov, (int) n) < 0)
                COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_TUN_WRITE], 1);
}

/* Whether a delivered packet stays where it is until gro_flush(): one in a receive buffer does (the
 * worker's own, or one of the pool's, which is only received into again after the flush, see
 * pool_next_buffer()). One the reorder buffer held in a copy of its own does not: that copy is
 * reused for the next packet it holds, which may be before the flush, while GRO still points
 * into it. */
static bool in_rx_buffer(const Worker *w, const uint8_t *pkt) {
        return pool_index(w->tunnel, pkt) >= 0 ||
               (pkt >= w->rx_buffer && pkt < w->rx_buffer + (size_t) WORKER_RX_MMSG * WORKER_BUFFER_SIZE);
}

/* A copy of pkt for GRO to point into, valid until the super-packet it joins is written: the
 * staging area holds only packets of the current super-packet (it starts over when there is
 * none), and is flushed when full. */
static const uint8_t *gro_stage(Worker *w, const uint8_t *pkt, size_t len) {
        uint8_t *copy;

        if (!w->gro.active)
                w->gro_staged = 0;
        if (w->gro_staged + len > WORKER_BUFFER_SIZE) {
                gro_flush(w);
                w->gro_staged = 0;
        }
        copy = w->gro_stage + w->gro_staged;
        memcpy(copy, pkt, len);
        w->gro_staged += len;
        return copy;
}

/* Every packet leaving the reorder buffer (or arriving without sequence number) ends here. With
 * offloads, consecutive TCP segments of one flow are gathered into one super-packet; the payload
 * stays where it is until gro_flush(), which the caller does before a receive buffer is used
 * again. A packet from elsewhere (the reorder buffer's copies) is copied to the staging area. */
static void tun_deliver(void *userdata, const uint8_t *pkt, size_t len) {
        Worker *w = userdata;
        Tunnel *t = w->tunnel;

        w->quiet_rx++;
        if (t->tun.vnet_hdr && dataplane_options.batch > 1) {
                if (!in_rx_buffer(w, pkt))
                        pkt = gro_stage(w, pkt, len);
                if (gro_add(&w->gro, pkt, len))
                        return;
                gro_flush(w);
                if (gro_add(&w->gro, pkt, len))
                        return;
        }
        if (tunnel_write_packet(t, worker_tun_fd(w, pkt, len), pkt, len) < 0)
                COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_TUN_WRITE], 1);
}

/* Policy=: counts one for class `class` (a rule's index or POLICY_CLASS_OTHER; read by mptctl
 * show while this worker alone writes). */
static void policy_count(Worker *w, size_t class, WorkerPolicyCounter c) {
        __atomic_store_n(&w->policy[class][c], w->policy[class][c] + 1, __ATOMIC_RELAXED);
}

/* Policy=: a packet of class `class` waited this long (ns) in the hold queue (0: not held). */
static void policy_wait(Worker *w, size_t class, uint64_t waited) {
        int64_t avg = (int64_t) w->policy[class][WORKER_POLICY_WAIT_NSEC];

        __atomic_store_n(&w->policy[class][WORKER_POLICY_WAIT_NSEC], (uint64_t) (avg + ((int64_t) waited - avg) / 16),
                         __ATOMIC_RELAXED);
}

/* The numbered packets of the messages handled so far go through their lanes' reorder buffers:
 * a lane at a time, under its lock, and what a lane delivers is written before it is let go
 * (another worker may deliver its next packets right after). */
static void deliver_pending(Worker *w) {
        Tunnel *t = w->tunnel;
        uint64_t lanes = 0;

        for (unsigned i = 0; i < w->n_pending; i++)
                lanes |= UINT64_C(1) << w->pending[i].lane;
        /* What was gathered without a lane goes first. */
        gro_flush(w);
        for (; lanes != 0; lanes &= lanes - 1) {
                unsigned lane = (unsigned) __builtin_ctzll(lanes);
                RxLane *l = rx_shared_lane(t->rx, lane);

                if (l)
                        rx_lane_lock(l, w, &w->contention);
                for (unsigned i = 0; i < w->n_pending; i++) {
                        const RxPending *d = &w->pending[i];
                        int reason;

                        if (d->lane != lane)
                                continue;
                        if (!l)
                                reason = -ENOMEM;
                        else if (d->now)
                                reason = reorder_insert_now(l->reorder, d->seq, d->path, d->pkt, d->len, d->arrival,
                                                            tun_deliver, w);
                        else
                                reason = reorder_insert(l->reorder, d->seq, d->path, d->pkt, d->len, d->arrival,
                                                        tun_deliver, w);
                        if (reason >= 0)
                                COUNTER_ADD(w->path_counters[d->path].drops[reason], 1);
                        else if (reason < -1)
                                COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_NO_MEMORY], 1);
                        if (d->rule != RX_POLICY_NONE && (reason == -1 || reason == MPT_DROP_DUPLICATE))
                                policy_count(w, d->rule >= 0 ? (size_t) d->rule : POLICY_CLASS_OTHER,
                                             reason == -1 ? WORKER_POLICY_RECEIVED : WORKER_POLICY_DUPLICATES);
                }
                if (l) {
                        gro_flush(w);
                        reorder_trim(l->reorder);
                        rx_lane_unlock(l);
                }
        }
        w->n_pending = 0;
}

/* Policy=: the rule of this end's that an IP packet (sent or received) matches first, -1: none. */
static int policy_rule(const Snapshot *s, const uint8_t *pkt, size_t len) {
        return s && s->n_policy > 0 ? mpt_policy_classify(s->policy, s->n_policy, pkt, len) : -1;
}

/* A data packet of path `path`, numbered in `lane` of the other end (or not numbered). */
static void handle_data(Worker *w, unsigned path, unsigned lane, const MptFrame *f, usec_t arrival) {
        Tunnel *t = w->tunnel;
        const Snapshot *s = w->rx_snapshot;
        int rule;

        if (!t->reorder_enabled || !f->has_seq) {
                tun_deliver(w, f->payload, f->payload_len);
                return;
        }
        /* (it stays where it is, in the receive buffer, until deliver_pending()) */
        if (w->n_pending == WORKER_PENDING_MAX)
                deliver_pending(w);
        /* A received packet that this end's rules do not aggregate (pinned, lowest-latency,
         * redundant) does not wait in the reorder buffer (behind a gap of other traffic, or its
         * path's extra delay): its flow keeps its own order, on one path (the first copy wins).
         * (This end's rules decide: both ends of a tunnel have the same, and a rule on "port"
         * matches both directions of a flow.) Counted per rule only where there are rules. */
        rule = s && s->n_policy > 0 ? policy_rule(s, f->payload, f->payload_len) : RX_POLICY_NONE;
        w->pending[w->n_pending++] = (RxPending) {
                .pkt = f->payload,
                .len = (uint32_t) f->payload_len,
                .seq = f->seq,
                .lane = (uint8_t) lane,
                .path = (uint8_t) path,
                .rule = (int8_t) rule,
                .now = rule >= 0 && s->policy[rule].mode != MPT_POLICY_AGGREGATE,
                .arrival = arrival,
        };
}

/* Which path a datagram belongs to. The socket's own path when the source is its remote; another
 * path sharing the same socket group whose remote it is; or, when the source is new: the socket's
 * path if it is the only one on the socket and may follow its peer (*ret_new_endpoint), else
 * RX_UNKNOWN (dropped) or RX_BY_TOKEN (only a keepalive can say which path it is). */
#define RX_UNKNOWN (-1)
#define RX_BY_TOKEN (-2)

static int demux(const Snapshot *s, unsigned path, const MptAddress *src, uint16_t port, bool *ret_new_endpoint) {
        const SnapshotPath *sp = &s->paths[path];

        *ret_new_endpoint = false;
        if (address_equal(&sp->remote_addr, src) && sp->remote_port == port)
                return (int) path;
        for (unsigned i = 0; i < s->n_paths; i++)
                if (i != path && s->paths[i].endpoint == sp->endpoint &&
                    address_equal(&s->paths[i].remote_addr, src) && s->paths[i].remote_port == port)
                        return (int) i;
        if (sp->endpoint_paths == 1) {
                if (sp->pin_remote)
                        return RX_UNKNOWN;
                *ret_new_endpoint = true;
                return (int) path;
        }
        /* Several paths share this socket: a new source can be any of them (unless all pin). */
        for (unsigned i = 0; i < s->n_paths; i++)
                if (s->paths[i].endpoint == sp->endpoint && !s->paths[i].pin_remote)
                        return RX_BY_TOKEN;
        return RX_UNKNOWN;
}

static void report_endpoint(Worker *w, unsigned path, const MptSockaddr *src, uint32_t token, unsigned socket_path) {
        ControlEvent ev = {
                .kind = CONTROL_EVENT_ENDPOINT,
                .path = path,
                .socket_path = socket_path,
                .peer_id = w->rx_peer_id,
                .peer_epoch = w->rx_peer_epoch,
                .source = *src,
                .token = token,
                .when = now_usec(),
        };

        /* Once per new source: the main thread switches over, and the next snapshot matches. */
        if (path < MPT_PATHS_MAX) {
                if (memcmp(&w->endpoint_reported[path], src, sizeof *src) == 0)
                        return;
                w->endpoint_reported[path] = *src;
        }
        tunnel_queue_event(w->tunnel, &ev);
}

/* When the kernel received the datagram (SO_TIMESTAMPNS), on the monotonic clock; else now. The
 * reorder buffer judges a path's silence by arrival times: a worker that was descheduled for a
 * moment must not take the other paths, whose packets wait in their sockets, for silent. */
static usec_t arrival_time(struct msghdr *mh, int64_t realtime_minus_monotonic) {
        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS &&
                    c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
                        struct timespec ts;
                        int64_t rt;
                        memcpy(&ts, CMSG_DATA(c), sizeof ts);
                        rt = (int64_t) ts.tv_sec * (int64_t) USEC_PER_SEC + ts.tv_nsec / (int64_t) NSEC_PER_USEC;
                        if (rt > realtime_minus_monotonic)
                                return (usec_t) (rt - realtime_minus_monotonic);
                }
        return now_usec();
}

static int64_t clock_offset(void) {
        struct timespec rt, mono;

        clock_gettime(CLOCK_REALTIME, &rt);
        clock_gettime(CLOCK_MONOTONIC, &mono);
        return ((int64_t) rt.tv_sec - (int64_t) mono.tv_sec) * (int64_t) USEC_PER_SEC +
               ((int64_t) rt.tv_nsec - (int64_t) mono.tv_nsec) / (int64_t) NSEC_PER_USEC;
}

/* One datagram of path p (or of a path only its keepalive token can tell: p == RX_BY_TOKEN), sent
 * on `lane` by the other end. */
static void handle_datagram(Worker *w, unsigned path, int p, unsigned lane, bool new_endpoint,
                            const MptSockaddr *src, const uint8_t *buf, size_t len, usec_t now) {
        unsigned counted = p >= 0 ? (unsigned) p : path;
        MptFrame f;
        int reason;

        reason = mpt_frame_decode(buf, len, &f);
        if (reason >= 0) {
                COUNTER_ADD(w->path_counters[counted].drops[reason], 1);
                return;
        }

        if (f.kind == MPT_FRAME_KEEPALIVE) {
                ControlEvent ev = { .kind = CONTROL_EVENT_KEEPALIVE, .source = *src, .epoch = w->rx_epoch,
                                    .socket_path = path, .peer_id = w->rx_peer_id,
                                    .peer_epoch = w->rx_peer_epoch };
                reason = mpt_keepalive_decode(&f, &ev.ka);
                if (reason >= 0) {
                        COUNTER_ADD(w->path_counters[counted].drops[reason], 1);
                        return;
                }
                if (p == RX_BY_TOKEN && !ev.ka.extended) {
                        COUNTER_ADD(w->path_counters[path].drops[MPT_DROP_UNKNOWN_SOURCE], 1);
                        return;
                }
                /* Learn first, so that the keepalive finds the new endpoint in place. */
                if (new_endpoint || p == RX_BY_TOKEN)
                        report_endpoint(w, p >= 0 ? (unsigned) p : UINT_MAX, src, ev.ka.path_token, path);
                ev.path = p >= 0 ? (unsigned) p : UINT_MAX;
                ev.when = now; /* arrival: keeps RTT samples free of our own delays */
                COUNTER_ADD(w->path_counters[counted].keepalives_rx, 1);
                tunnel_queue_event(w->tunnel, &ev);
                return;
        }
        if (p == RX_BY_TOKEN) {
                /* Data from a new source on a shared socket: wait for its keepalive. */
                COUNTER_ADD(w->path_counters[path].drops[MPT_DROP_UNKNOWN_SOURCE], 1);
                return;
        }
        if (f.kind == MPT_FRAME_FEEDBACK) {
                ControlEvent ev = { .kind = CONTROL_EVENT_FEEDBACK, .path = (unsigned) p, .source = *src,
                                    .epoch = w->rx_epoch };
                /* Only authenticated feedback may move traffic: in compat mode there is none. */
                reason = w->tunnel->secure ? mpt_feedback_decode(&f, &ev.fb) : MPT_DROP_BAD_FEEDBACK;
                if (reason >= 0) {
                        COUNTER_ADD(w->path_counters[p].drops[reason], 1);
                        return;
                }
                if (new_endpoint)
                        report_endpoint(w, (unsigned) p, src, 0, path);
                ev.when = now;
                tunnel_queue_event(w->tunnel, &ev);
                return;
        }
        if (f.kind == MPT_FRAME_REPAIR) {
                MptRepair r;
                /* Only authenticated requests are served: in compat mode there are none. */
                reason = w->tunnel->secure ? mpt_repair_decode(&f, &r) : MPT_DROP_BAD_REPAIR;
                if (reason >= 0) {
                        COUNTER_ADD(w->path_counters[p].drops[reason], 1);
                        return;
                }
                if (new_endpoint)
                        report_endpoint(w, (unsigned) p, src, 0, path);
                repair_request(w, &r);
                return;
        }
        if (new_endpoint)
                report_endpoint(w, (unsigned) p, src, 0, path);
        if (f.kind == MPT_FRAME_PATH_STATUS) {
                ControlEvent ev = { .kind = CONTROL_EVENT_PATH_STATUS, .path = (unsigned) p, .source = *src,
                                    .epoch = w->rx_epoch };
                reason = mpt_path_status_decode(&f, &ev.ps);
                if (reason >= 0) {
                        COUNTER_ADD(w->path_counters[p].drops[reason], 1);
                        return;
                }
                ev.when = now;
                tunnel_queue_event(w->tunnel, &ev);
                return;
        }
        COUNTER_ADD(w->path_counters[p].rx_packets, 1);
        COUNTER_ADD(w->path_counters[p].rx_bytes, (uint64_t) len);
        handle_data(w, (unsigned) p, lane, &f, now);
}

/* ---- loss repair (mptd(8), LOSS REPAIR) ---- */

/* Sending side: keeps the plaintext of the datagram with counter `counter` of path p. */
static void keep_store(Worker *w, unsigned p, uint64_t counter, const uint8_t *m, size_t len) {
        uint64_t pos = w->keep_pos;
        KeepSlot *slot;

        if (len > WORKER_BUFFER_SIZE || p >= MPT_PATHS_MAX)
                return;
        /* A plaintext is never split: one that would not fit before the ring's end starts over. */
        if (pos % WORKER_KEEP_BYTES + len > WORKER_KEEP_BYTES)
                pos += WORKER_KEEP_BYTES - pos % WORKER_KEEP_BYTES;
        memcpy(w->keep + pos % WORKER_KEEP_BYTES, m, len);
        slot = &w->keep_slots[(size_t) p * WORKER_KEEP_SLOTS + counter % WORKER_KEEP_SLOTS];
        *slot = (KeepSlot) { .counter = counter, .pos = pos, .len = (uint32_t) len };
        w->keep_pos = pos + len;
}

/* The plaintext of path p's datagram `counter`, if still kept. */
static const uint8_t *keep_find(const Worker *w, unsigned p, uint64_t counter, size_t *ret_len) {
        const KeepSlot *slot;

        if (p >= MPT_PATHS_MAX)
                return NULL;
        slot = &w->keep_slots[(size_t) p * WORKER_KEEP_SLOTS + counter % WORKER_KEEP_SLOTS];
        /* Overwritten once the ring was written past a whole turn after it. */
        if (slot->counter != counter || slot->len == 0 || w->keep_pos > slot->pos + WORKER_KEEP_BYTES)
                return NULL;
        *ret_len = slot->len;
        return w->keep + slot->pos % WORKER_KEEP_BYTES;
}

/* Seals a frame or a kept plaintext (len bytes at m) on path q in this worker's lane and sends
 * it; returns its length on the wire, or 0 when it could not. */
static size_t repair_send(Worker *w, const Snapshot *s, unsigned q, const uint8_t *m, size_t len, uint8_t *out,
                          uint64_t *first, uint64_t *last) {
        Tunnel *t = w->tunnel;
        const SnapshotPath *sp;
        size_t dl;
        int fd;

        if (q >= s->n_paths || q >= MPT_PATHS_MAX || (fd = s->paths[q].fds[w->id]) < 0 ||
            w->tx_counter[q] >= UINT64_MAX - 1 || s->tx_keys.epoch == 0)
                return 0;
        sp = &s->paths[q];
        dl = mpt_secure_seal_from(out, m, len, &s->tx_keys, tunnel_tx_cipher(t), t->aes ? MPT_SECURE_FLAG_AES : 0,
                                  (MptSecureSender) { .path_id = (uint8_t) q, .lane = (uint8_t) w->id,
                                                      .counter = w->tx_counter[q] });
        if (dl == 0)
                return 0;
        if (*first == 0)
                *first = w->tx_counter[q];
        *last = w->tx_counter[q]++;
        if (sendto(fd, out, dl, MSG_DONTWAIT, (const struct sockaddr *) &sp->remote, sp->remote_len) < 0) {
                COUNTER_ADD(w->path_counters[q].drops[errno == EAGAIN || errno == ENOBUFS ? MPT_DROP_SEND_BUSY
                                                                                            : MPT_DROP_SEND_ERROR],
                            1);
                return 0;
        }
        COUNTER_ADD(w->path_counters[q].tx_packets, 1);
        COUNTER_ADD(w->path_counters[q].tx_bytes, dl);
        return dl;
}

/* The repair path now: the main thread's choice, if this snapshot has it. */
static int repair_path(const Worker *w, const Snapshot *s) {
        int q = __atomic_load_n(&w->tunnel->repair_via, __ATOMIC_RELAXED);

        return q >= 0 && (unsigned) q < s->n_paths && s->paths[q].fds[w->id] >= 0 ? q : -1;
}

/* Receiving side: asks the other end for what the gaps of this batch miss, over our repair path
 * (in this worker's lane: its counters are its own). */
static void repair_ask_flush(Worker *w, const Snapshot *s) {
        uint8_t frame[MPT_REPAIR_SIZE_MAX], out[MPT_REPAIR_SIZE_MAX + MPT_SECURE_OVERHEAD];
        uint64_t first = 0, last = 0, asked = 0;
        int q = repair_path(w, s);
        size_t len;

        if (w->repair_ask.n == 0)
                return;
        for (unsigned i = 0; i < w->repair_ask.n; i++)
                asked += w->repair_ask.entries[i].count;
        len = mpt_repair_encode(frame, sizeof frame, w->tunnel->ip_version == 6 ? MPT_ETH_P_IPV6 : MPT_ETH_P_IP,
                                &w->repair_ask);
        w->repair_ask.n = 0;
        if (q < 0 || len == 0 || repair_send(w, s, (unsigned) q, frame, len, out, &first, &last) == 0)
                return;
        tx_mark(w, (unsigned) q, first, last, now_usec());
        COUNTER_ADD(w->tunnel_counters.repair_asked, asked);
}

static void repair_ask_add(Worker *w, unsigned path_id, unsigned lane, uint64_t first, unsigned count) {
        const Snapshot *s;

        if (w->repair_ask.n == MPT_REPAIR_ENTRIES_MAX) {
                s = __atomic_load_n(&w->tunnel->snapshot, __ATOMIC_ACQUIRE);
                repair_ask_flush(w, s);
        }
        w->repair_ask.entries[w->repair_ask.n++] = (MptRepairEntry) {
                .path_id = (uint8_t) path_id, .lane = (uint8_t) lane, .count = (uint16_t) count, .first = first,
        };
}

/* Sending side: the other end's requests, for the workers whose lanes they name. */
static void repair_request(Worker *w, const MptRepair *r) {
        Tunnel *t = w->tunnel;

        for (unsigned i = 0; i < r->n; i++) {
                const MptRepairEntry *e = &r->entries[i];
                Worker *to;

                COUNTER_ADD(w->tunnel_counters.repair_requested, e->count);
                if (e->lane >= t->n_workers || !t->workers[e->lane]->keep) {
                        COUNTER_ADD(w->tunnel_counters.repair_missed, e->count);
                        continue;
                }
                to = t->workers[e->lane];
                pthread_mutex_lock(&to->repair_lock);
                if (to->repair_queued < WORKER_REPAIR_QUEUE) {
                        to->repair_queue[to->repair_queued] = *e;
                        __atomic_store_n(&to->repair_queued, to->repair_queued + 1, __ATOMIC_RELEASE);
                        e = NULL;
                }
                pthread_mutex_unlock(&to->repair_lock);
                if (e)
                        COUNTER_ADD(w->tunnel_counters.repair_missed, r->entries[i].count);
                else if (to != w)
                        worker_wake(to);
        }
}

/* Sends again what the requests for this worker's lane ask for, sealed anew on the repair path. */
static void repair_serve(Worker *w, const Snapshot *s) {
        MptRepairEntry q[WORKER_REPAIR_QUEUE];
        uint64_t first = 0, last = 0, paced_now = 0;
        unsigned n;
        int via;

        if (__atomic_load_n(&w->repair_queued, __ATOMIC_ACQUIRE) == 0)
                return;
        pthread_mutex_lock(&w->repair_lock);
        n = w->repair_queued;
        memcpy(q, w->repair_queue, n * sizeof q[0]);
        __atomic_store_n(&w->repair_queued, 0, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&w->repair_lock);

        via = repair_path(w, s);
        if (__atomic_load_n(&w->tunnel->pace_paths, __ATOMIC_RELAXED) != 0)
                paced_now = now_nsec();
        for (unsigned i = 0; i < n; i++)
                for (uint64_t c = q[i].first; c < q[i].first + q[i].count; c++) {
                        const uint8_t *m;
                        size_t len, dl = 0;

                        m = keep_find(w, q[i].path_id, c, &len);
                        if (m && via >= 0)
                                dl = repair_send(w, s, (unsigned) via, m, len, w->tx_crypt, &first, &last);
                        if (dl == 0) {
                                COUNTER_ADD(w->tunnel_counters.repair_missed, 1);
                                continue;
                        }
                        COUNTER_ADD(w->tunnel_counters.repair_sent, 1);
                        if (paced_now != 0)
                                pace_charge(w->tunnel, (unsigned) via, paced_now, dl);
                }
        if (first != 0)
                tx_mark(w, (unsigned) via, first, last, now_usec());
}

/* ---- what arrived and what went out, for the learned scheduler (sequence locks) ---- */

static void seq_write_begin(uint32_t *seq) {
        __atomic_store_n(seq, *seq + 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void seq_write_end(uint32_t *seq) {
        __atomic_store_n(seq, *seq + 1, __ATOMIC_RELEASE);
}

static uint32_t seq_read_begin(const uint32_t *seq) {
        uint32_t s;

        while ((s = __atomic_load_n(seq, __ATOMIC_ACQUIRE)) & 1)
                ;
        return s;
}

static bool seq_read_retry(const uint32_t *seq, uint32_t s) {
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        return __atomic_load_n(seq, __ATOMIC_RELAXED) != s;
}

/* An authenticated datagram of the other end's path path_id (its secure header says which),
 * len bytes on the wire, arrived at `arrival`. */
static void rx_track(Worker *w, const uint8_t *header, size_t len, usec_t arrival) {
        RxTrack *r = &w->rx_track[header[2] % MPT_PATHS_MAX];
        unsigned lane = header[3] % MPT_SECURE_LANES;
        uint64_t epoch = 0, counter = 0;

        for (unsigned i = 4; i < 12; i++)
                epoch = epoch << 8 | header[i];
        for (unsigned i = 12; i < 20; i++)
                counter = counter << 8 | header[i];
        seq_write_begin(&r->seq);
        __atomic_store_n(&r->bytes, r->bytes + len, __ATOMIC_RELAXED);
        __atomic_store_n(&r->packets, r->packets + 1, __ATOMIC_RELAXED);
        /* A new epoch of the sender (it restarted) numbers every lane from 1 again; a datagram of
         * an older one that arrives after it is counted, but tells nothing of what was sent. With
         * the handshake the epoch is this end's session id, whose low half counts the sessions
         * (the high half is random): a new session starts afresh too (the other end may have
         * restarted; after a rekey its counters go on, and only the first datagram's gap goes
         * unnoticed), and datagrams of the one before are no news. */
        if (mpt_secure_epoch_order(w->tunnel->handshake, epoch) >
            mpt_secure_epoch_order(w->tunnel->handshake, r->epoch)) {
                memset(r->lane_top, 0, sizeof r->lane_top);
                r->epoch = epoch;
        }
        if (epoch == r->epoch && counter > r->lane_top[lane]) {
                /* The lane's counters up to this one were sent (those below it that did not
                 * arrive were lost, or are still on their way). A jump of more than 2^32 is no
                 * loss that happened (a sender never skips counters): it counts as that much,
                 * so that what was sent cannot wrap around. */
                uint64_t more = r->lane_top[lane] == 0 ? 1 : MIN(counter - r->lane_top[lane], (uint64_t) UINT32_MAX);

                /* A gap in a data lane: ask for it (a long one is an outage, not worth it). */
                if (w->tunnel->repair && lane != MPT_SECURE_LANE_CONTROL && r->lane_top[lane] != 0 && more > 1 &&
                    more - 1 <= MPT_REPAIR_COUNT_MAX)
                        repair_ask_add(w, header[2] % MPT_PATHS_MAX, lane, r->lane_top[lane] + 1, (unsigned) more - 1);

                r->lane_top[lane] = counter;
                __atomic_store_n(&r->sent, r->sent + more, __ATOMIC_RELAXED);
                /* The control lane's frames (keepalives, and the feedback that goes over the
                 * fastest path every 25 ms) are no marker: the sender remembers when it sent its
                 * data lanes' counters only, and a sample lost to a control frame is one less of
                 * the path, most often of a path that carries little and needs them to earn more. */
                if (lane != MPT_SECURE_LANE_CONTROL) {
                        __atomic_store_n(&r->marker, counter, __ATOMIC_RELAXED);
                        __atomic_store_n(&r->lane, (uint8_t) lane, __ATOMIC_RELAXED);
                        __atomic_store_n(&r->arrival, arrival, __ATOMIC_RELAXED);
                }
        }
        /* A burst ends at a gap (or when it is long enough); its rate is a peak sample. The
         * datagrams of one arrival time (a GRO train: the kernel stamps a train with its first
         * datagram's time) arrived between that time and the next train's, so a burst's rate is
         * the bytes of its trains but the last over the time from its first train to its last. */
        if (r->burst_first == 0 || arrival > r->burst_last + WORKER_BURST_GAP_USEC ||
            arrival >= r->burst_first + WORKER_BURST_MAX_USEC) {
                bool gap = r->burst_first == 0 || arrival > r->burst_last + WORKER_BURST_GAP_USEC;

                if (r->burst_last >= r->burst_first + WORKER_BURST_MIN_USEC && r->burst_bytes > 0) {
                        uint64_t rate = r->burst_bytes * USEC_PER_SEC / (r->burst_last - r->burst_first);
                        if (arrival >= r->window_start + WORKER_PEAK_WINDOW_USEC) {
                                __atomic_store_n(&r->peak_prev, r->peak, __ATOMIC_RELAXED);
                                __atomic_store_n(&r->peak, rate, __ATOMIC_RELAXED);
                                r->window_start = arrival;
                        } else if (rate > r->peak)
                                __atomic_store_n(&r->peak, rate, __ATOMIC_RELAXED);
                }
                r->burst_bytes = 0;
                if (gap) {
                        r->burst_first = r->burst_last = arrival;
                        r->train_bytes = len;
                } else {
                        /* Cut for its length: the next one begins with the current train. */
                        r->burst_first = r->burst_last;
                        if (arrival > r->burst_last) {
                                r->burst_bytes = r->train_bytes;
                                r->train_bytes = len;
                        } else
                                r->train_bytes += len;
                }
        } else if (arrival > r->burst_last) {
                r->burst_bytes += r->train_bytes;
                r->train_bytes = len;
        } else
                r->train_bytes += len;
        r->burst_last = MAX(r->burst_last, arrival);
        seq_write_end(&r->seq);
}

void worker_rx_track_read(const Worker *w, unsigned path_id, RxTrack *ret) {
        const RxTrack *r = &w->rx_track[path_id % MPT_PATHS_MAX];
        uint32_t s;

        do {
                s = seq_read_begin(&r->seq);
                ret->marker = __atomic_load_n(&r->marker, __ATOMIC_RELAXED);
                ret->lane = __atomic_load_n(&r->lane, __ATOMIC_RELAXED);
                ret->sent = __atomic_load_n(&r->sent, __ATOMIC_RELAXED);
                ret->arrival = __atomic_load_n(&r->arrival, __ATOMIC_RELAXED);
                ret->bytes = __atomic_load_n(&r->bytes, __ATOMIC_RELAXED);
                ret->packets = __atomic_load_n(&r->packets, __ATOMIC_RELAXED);
                ret->peak = __atomic_load_n(&r->peak, __ATOMIC_RELAXED);
                ret->peak_prev = __atomic_load_n(&r->peak_prev, __ATOMIC_RELAXED);
        } while (seq_read_retry(&r->seq, s));
        ret->seq = s;
}

/* Counters first..last of path p go out now. */
static void tx_mark(Worker *w, unsigned p, uint64_t first, uint64_t last, usec_t now) {
        TxMark *m;

        if (!w->tx_marks || p >= MPT_PATHS_MAX)
                return;
        m = &w->tx_marks[(size_t) p * WORKER_TX_MARKS + w->tx_mark_next[p]++ % WORKER_TX_MARKS];
        seq_write_begin(&m->seq);
        __atomic_store_n(&m->first, first, __ATOMIC_RELAXED);
        __atomic_store_n(&m->last, last, __ATOMIC_RELAXED);
        __atomic_store_n(&m->time, now, __ATOMIC_RELAXED);
        seq_write_end(&m->seq);
}

bool worker_tx_mark_find(const Worker *w, unsigned path, uint64_t counter, usec_t *ret_time, usec_t *ret_last) {
        bool found = false;

        *ret_last = 0;
        if (!w->tx_marks || path >= MPT_PATHS_MAX)
                return false;
        for (unsigned i = 0; i < WORKER_TX_MARKS; i++) {
                const TxMark *m = &w->tx_marks[(size_t) path * WORKER_TX_MARKS + i];
                uint64_t first, last;
                usec_t time;
                uint32_t s;

                do {
                        s = seq_read_begin(&m->seq);
                        first = __atomic_load_n(&m->first, __ATOMIC_RELAXED);
                        last = __atomic_load_n(&m->last, __ATOMIC_RELAXED);
                        time = __atomic_load_n(&m->time, __ATOMIC_RELAXED);
                } while (seq_read_retry(&m->seq, s));
                *ret_last = MAX(*ret_last, time);
                if (time > 0 && first <= counter && counter <= last) {
                        *ret_time = time;
                        found = true;
                }
        }
        return found;
}

/* Secure mode: authenticates and decrypts the datagrams of one receive buffer in place (seg
 * bytes each, the last one maybe shorter), a few dozen at a time. Headers are checked first
 * (cheap drops: malformed, reflected, old epoch, moved from another path, replayed), then the
 * tags; only then are the counters recorded and sender path ids bound to paths, so that forged
 * datagrams cannot move the anti-replay window or bind a path id. The receive state of a sender
 * path (rx_shared_secure_lock(): usually this worker's alone) is locked twice per run of its
 * datagrams, not per datagram. A datagram that fails is counted and gets
 * its first byte zeroed, which no secure datagram has; one that passes keeps its header, and its
 * plaintext is at MPT_SECURE_HEADER_SIZE, MPT_SECURE_OVERHEAD bytes shorter.
 *
 * The buffer arrived on the socket of path `path` and belongs to path p (demux()), or, with p
 * RX_BY_TOKEN, to one of the paths that share the socket: its sender path id must be bound to
 * that path, or to one of those, or not yet to any (mptd(8), SECURE WIRE FORMAT). */
#define SECURE_RUN 64u

/* Holds the lock of sender path id `id`'s receive state, and no other (-1: none); *held says which
 * is held. A run of datagrams is normally of one sender path: one lock for all of it. */
static void secure_hold(Worker *w, int *held, int id) {
        RxShared *rs = w->tunnel->rx;

        if (*held == id)
                return;
        if (*held >= 0)
                rx_shared_secure_unlock(rs, (unsigned) *held);
        if (id >= 0)
                rx_shared_secure_lock(rs, (unsigned) id, &w->contention);
        *held = id;
}

/* A handshake message (handshake.h: 0xE4..0xE7) goes to the main thread, with the path whose
 * socket it came in on and its source; not a drop. */
#define SECURE_HANDED_ON _MPT_DROP_MAX

static int hand_on_handshake(Worker *w, unsigned path, const MptSockaddr *src, const uint8_t *d, size_t len) {
        ControlEvent ev = { .kind = CONTROL_EVENT_HANDSHAKE, .path = path, .source = *src };
        int drop;

        if (len > sizeof ev.hs.msg)
                return MPT_DROP_HANDSHAKE_MALFORMED;
        /* What is not made for this end (a flood's) goes no further than this worker: it does not
         * take the room of genuine messages in the main thread's queue. */
        drop = mpt_handshake_screen(w->tunnel->hs_mac1_key, d, len);
        if (drop >= 0)
                return session_drop_reason(drop);
        memcpy(ev.hs.msg, d, len);
        ev.hs.len = len;
        if (!tunnel_queue_event(w->tunnel, &ev))
                return MPT_DROP_HANDSHAKE_OVERFLOW;
        return SECURE_HANDED_ON;
}

static int secure_open_buffer(Worker *w, const Snapshot *s, unsigned path, int p, const MptSockaddr *src,
                              uint8_t *buf, size_t len, size_t seg, usec_t now) {
        Tunnel *t = w->tunnel;
        /* p == RX_BY_TOKEN: the path of the socket's group that the datagrams' sender (path id
         * and epoch) is (Path.peer_id); -1: none, -2: they disagree */
        int resolved = -1;
        unsigned counted = p >= 0 ? (unsigned) p : path;
        MptSecureHeader h[SECURE_RUN];
        int reason[SECURE_RUN];
        uint64_t new_epochs = 0, paths = 0, confirm = 0;
        usec_t hs_now = t->handshake ? session_now() : 0;
        /* The snapshot whose key pairs open the datagrams: s, or a newer one (below). */
        const Snapshot *ks = s;

        if (p >= 0)
                paths = MPT_SECURE_PATH_BIT(p);
        else
                for (unsigned i = 0; i < s->n_paths; i++)
                        if (s->paths[i].endpoint == s->paths[path].endpoint)
                                paths |= MPT_SECURE_PATH_BIT(i);

        for (size_t base = 0; base < len; base += seg * SECURE_RUN) {
                size_t n = MIN((size_t) SECURE_RUN, DIV_ROUND_UP(len - base, seg));

                int held = -1;

                for (size_t i = 0; i < n; i++) {
                        size_t off = base + i * seg, dl = MIN(seg, len - off);

                        if (t->handshake && buf[off] >= MPT_HANDSHAKE_INITIATION && buf[off] <= MPT_HANDSHAKE_RETRY)
                                reason[i] = hand_on_handshake(w, path, src, buf + off, dl);
                        else
                                reason[i] = mpt_secure_parse(buf + off, dl, &h[i]);
                }
                for (size_t i = 0; i < n; i++)
                        if (reason[i] < 0) {
                                secure_hold(w, &held, h[i].path_id);
                                reason[i] = mpt_secure_rx_check(t->rx->secure, &h[i], paths);
                        }
                secure_hold(w, &held, -1);

                for (size_t i = 0; i < n; i++) {
                        size_t off = base + i * seg;
                        const MptSecureKeys *keys;

                        if (reason[i] >= 0)
                                continue;
                        if (t->handshake) {
                                /* The key pairs of the sessions this end has: current, previous and a
                                 * responder's next one (handshake.h). */
                                const MptHandshakeKeypair *kp;
                                int r = mpt_handshake_keys_rx(&ks->hs_keys, h[i].epoch, hs_now, &kp);

                                if (r == MPT_HANDSHAKE_DROP_UNKNOWN_SESSION) {
                                        /* A session newer than these keys: the main thread made it a
                                         * moment ago, and the other end already sends under it. The
                                         * newest snapshot may have it; it stays valid while this
                                         * worker works on this batch (it has not said that it saw a
                                         * newer generation, so the snapshot is not freed). */
                                        const Snapshot *newest = __atomic_load_n(&t->snapshot, __ATOMIC_ACQUIRE);

                                        if (newest != ks) {
                                                ks = newest;
                                                r = mpt_handshake_keys_rx(&ks->hs_keys, h[i].epoch, hs_now, &kp);
                                        }
                                }
                                if (r >= 0) {
                                        reason[i] = session_drop_reason(r);
                                        continue;
                                }
                                reason[i] = mpt_secure_open(buf + off, MIN(seg, len - off), &kp->recv);
                                if (reason[i] < 0 && kp == &ks->hs_keys.next)
                                        confirm = h[i].epoch;
                                continue;
                        }
                        if (h[i].epoch == w->rx_keys.epoch)
                                keys = &w->rx_keys;
                        else {
                                /* A newer epoch (the other end restarted): its keys, kept aside
                                 * until a datagram under it authenticates. Anyone can claim a
                                 * new epoch: derivations are rate-limited. */
                                if (h[i].epoch != w->rx_try_keys.epoch) {
                                        if (!mpt_secure_limit_take(&w->rx_derive_limit, now)) {
                                                reason[i] = MPT_DROP_EPOCH_LIMITED;
                                                continue;
                                        }
                                        /* (A reload may replace the profile, never the key.) */
                                        const MptProfile *prof = __atomic_load_n(&t->profile, __ATOMIC_RELAXED);

                                        if (mpt_secure_derive(prof->tunnel.psk.bytes, h[i].epoch, t->aes,
                                                              &w->rx_try_keys) < 0) {
                                                reason[i] = MPT_DROP_CIPHER_ERROR;
                                                continue;
                                        }
                                }
                                keys = &w->rx_try_keys;
                        }
                        reason[i] = mpt_secure_open(buf + off, MIN(seg, len - off), keys);
                        if (reason[i] < 0 && keys == &w->rx_try_keys)
                                w->rx_keys = w->rx_try_keys;
                }

                for (size_t i = 0; i < n; i++) {
                        bool new_epoch;
                        if (reason[i] >= 0)
                                continue;
                        secure_hold(w, &held, h[i].path_id);
                        reason[i] = mpt_secure_rx_accept(t->rx->secure, &h[i], paths, &new_epoch);
                        new_epochs += new_epoch;
                        if (p < 0 && reason[i] < 0 && resolved != -2) {
                                int b = -1;
                                for (unsigned j = 0; j < s->n_paths && b < 0; j++)
                                        if ((paths & MPT_SECURE_PATH_BIT(j)) && s->paths[j].peer_id == h[i].path_id + 1 &&
                                            s->paths[j].peer_epoch == h[i].epoch)
                                                b = (int) j;
                                resolved = b < 0 || (resolved >= 0 && resolved != b) ? -2 : b;
                        }
                }
                secure_hold(w, &held, -1);

                for (size_t i = 0; i < n; i++)
                        if (reason[i] >= 0) {
                                if (reason[i] != SECURE_HANDED_ON)
                                        COUNTER_ADD(w->path_counters[counted].drops[reason[i]], 1);
                                buf[base + i * seg] = 0;
                        }
        }
        if (new_epochs > 0)
                __atomic_add_fetch(&t->peer_epochs, new_epochs, __ATOMIC_RELAXED);
        /* The initiator of the responder's new session sends under it: it may become current (once
         * per worker and set of keys is enough; the main thread republishes). */
        if (confirm != 0 && w->confirmed_generation != ks->generation) {
                ControlEvent ev = { .kind = CONTROL_EVENT_SESSION, .path = counted, .epoch = confirm, .when = now };

                if (tunnel_queue_event(t, &ev))
                        w->confirmed_generation = ks->generation;
        }
        return resolved >= 0 ? resolved : -1;
}

static int gro_size(struct msghdr *mh) {
        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
                if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
                        int v;
                        memcpy(&v, CMSG_DATA(c), sizeof v);
                        return v;
                }
        return 0;
}

void worker_rx_process(Worker *w, const Snapshot *s, unsigned path, const WorkerRxMessage *msgs, unsigned n) {
        Tunnel *t = w->tunnel;
        /* Per message: its path (demux(); RX_UNKNOWN: dropped), datagram size. */
        int p[WORKER_RX_MMSG];
        bool new_endpoint[WORKER_RX_MMSG];
        size_t seg[WORKER_RX_MMSG];

        assert(n <= WORKER_RX_MMSG);
        assert(path < s->n_paths);
        w->rx_snapshot = s;

        /* First: what each message is, and in secure mode every datagram authenticated and
         * decrypted; what fails is skipped below. */
        for (unsigned m = 0; m < n; m++) {
                size_t k = msgs[m].len;
                MptAddress src_addr;
                uint16_t src_port;

                p[m] = RX_UNKNOWN;
                if (msgs[m].truncated) {
                        COUNTER_ADD(w->path_counters[path].drops[MPT_DROP_TRUNCATED], 1);
                        continue;
                }
                if (sockaddr_to_address(&msgs[m].source, &src_addr, &src_port) < 0 ||
                    (p[m] = demux(s, path, &src_addr, src_port, &new_endpoint[m])) == RX_UNKNOWN) {
                        p[m] = RX_UNKNOWN;
                        COUNTER_ADD(w->path_counters[path].drops[MPT_DROP_UNKNOWN_SOURCE], 1);
                        continue;
                }
                /* With UDP GRO the buffer holds several datagrams of one source: all of gso size
                 * but the last. */
                seg[m] = msgs[m].segment_size;
                if (seg[m] == 0 || seg[m] > k)
                        seg[m] = k;
                if (t->secure) {
                        int b = secure_open_buffer(w, s, path, p[m], &msgs[m].source, w->rx_cur[m], k, seg[m],
                                                   msgs[m].arrival);
                        /* A new source on a shared socket whose datagrams authenticated and come
                         * from the other end's path that one of the socket's paths knows (by its
                         * sender path id and epoch: the other end's NAT gave that path a new
                         * address or port): that path, followed at once, not only at the next
                         * keepalive. */
                        if (p[m] == RX_BY_TOKEN && b >= 0 && !s->paths[b].pin_remote) {
                                p[m] = b;
                                new_endpoint[m] = true;
                        }
                }
        }

        /* Then all messages in arrival order: control frames to the main thread, data without
         * a sequence number to the TUN device, numbered data to its lane's reorder buffer
         * (deliver_pending()). What they gathered for the TUN device is written before the
         * receive buffers are used again. */
        for (unsigned m = 0; m < n; m++) {
                size_t k = msgs[m].len;

                if (p[m] == RX_UNKNOWN)
                        continue;
                for (size_t off = 0; off < k; off += seg[m]) {
                        uint8_t *d = w->rx_cur[m] + off;
                        size_t dl = MIN(seg[m], k - off);
                        unsigned lane = 0;

                        /* Only what authenticated goes on: nothing else may move an endpoint. */
                        if (t->secure) {
                                if (d[0] == 0)
                                        continue;
                                if (t->handshake)
                                        w->rx_epoch = rd64be(d + 4);
                                w->rx_peer_id = (uint8_t) (d[2] + 1);
                                w->rx_peer_epoch = rd64be(d + 4);
                                rx_track(w, d, dl, msgs[m].arrival);
                                lane = d[3];
                                d += MPT_SECURE_HEADER_SIZE;
                                dl -= MPT_SECURE_OVERHEAD;
                        }
                        handle_datagram(w, path, p[m], lane, new_endpoint[m], &msgs[m].source, d, dl,
                                        msgs[m].arrival);
                        new_endpoint[m] = false; /* reported once per buffer is plenty */
                }
        }
        deliver_pending(w);
        gro_flush(w);
        repair_ask_flush(w, s);
        if (t->reorder_enabled) {
                /* Written: what the reorder buffers delivered out of the pool may be reused. */
                pool_released_flush(w);
                for (unsigned m = 0; m < n; m++)
                        pool_next_buffer(w, m);
        }
}

/* Reads at most max (<= WORKER_RX_MMSG) receive buffers of one path in one recvmmsg(), each
 * message into its own buffer (with UDP GRO, each may hold many datagrams of one source), and
 * handles them in the order they arrived; returns how many it read, and their bytes. */
static unsigned worker_rx(Worker *w, const Snapshot *s, unsigned path, unsigned max, size_t *ret_bytes) {
        int fd = w->registered[path];
        struct mmsghdr mm[WORKER_RX_MMSG];
        struct iovec iov[WORKER_RX_MMSG];
        WorkerRxMessage msgs[WORKER_RX_MMSG];
        union {
                struct cmsghdr align;
                uint8_t buf[CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(int))];
        } control[WORKER_RX_MMSG];
        int64_t offset;
        usec_t latest;
        size_t bytes = 0;
        int n;

        assert(max >= 1 && max <= WORKER_RX_MMSG);
        *ret_bytes = 0;
        for (unsigned m = 0; m < max; m++) {
                /* Zeroed: a source is compared and passed on whole (report_endpoint()). */
                msgs[m].source = (MptSockaddr) {};
                iov[m] = (struct iovec) { .iov_base = w->rx_cur[m], .iov_len = WORKER_BUFFER_SIZE };
                mm[m] = (struct mmsghdr) {
                        .msg_hdr = {
                                .msg_name = &msgs[m].source,
                                .msg_namelen = sizeof msgs[m].source,
                                .msg_iov = &iov[m],
                                .msg_iovlen = 1,
                                .msg_control = &control[m],
                                .msg_controllen = sizeof control[m],
                        },
                };
        }
        do
                n = recvmmsg(fd, mm, max, MSG_DONTWAIT, NULL);
        while (n < 0 && errno == EINTR);
        if (n <= 0)
                return 0; /* EAGAIN, or an ICMP error report we have no use for */
        offset = clock_offset();
        latest = now_usec();

        for (int m = 0; m < n; m++) {
                struct msghdr *mh = &mm[m].msg_hdr;

                bytes += mm[m].msg_len;
                msgs[m].len = mm[m].msg_len;
                msgs[m].truncated = mh->msg_flags & MSG_TRUNC;
                /* A negative size (never seen) counts as none, as one too large does. */
                msgs[m].segment_size = (size_t) gro_size(mh);
                /* Never later than the moment we read it (clock adjustments). */
                msgs[m].arrival = MIN(arrival_time(mh, offset), latest);
        }
        worker_rx_process(w, s, path, msgs, (unsigned) n);
        *ret_bytes = bytes;
        return (unsigned) n;
}

/* Reads the ready paths in turns, so that their packets reach the reorder buffer in about the
 * order they arrived: draining one path first would make the others look silent to loss
 * inference and push the window past their packets. A turn is one recvmmsg() of about
 * RX_TURN_BYTES: one buffer when the path's messages are UDP GRO trains of up to 64 KiB (fast
 * paths whose peer sends with GSO), up to WORKER_RX_MMSG when they are single datagrams (slow or
 * shaped paths, where GSO sends are split, or a peer without GSO), which then cost one system
 * call per turn rather than one each. The size of the path's last messages sets its next turn;
 * MPT_DEBUG_RX_TURN fixes it instead. */
#define RX_TURN_BYTES 65536u

static unsigned next_turn(size_t bytes, unsigned n) {
        size_t per_message = MAX(bytes / n, (size_t) 1);

        if (dataplane_options.rx_turn_fixed)
                return dataplane_options.rx_turn;
        return (unsigned) CLAMP(RX_TURN_BYTES / per_message, (size_t) 1, (size_t) dataplane_options.rx_turn);
}

static void worker_rx_ready(Worker *w, const Snapshot *s, unsigned *ready, unsigned n_ready) {
        unsigned budget = dataplane_options.batch * 4;

        while (n_ready > 0 && budget > 0) {
                unsigned kept = 0;
                for (unsigned i = 0; i < n_ready && budget > 0; i++) {
                        unsigned path = ready[i];
                        unsigned turn = MIN(MIN(MAX(w->rx_turn[path], 1u), dataplane_options.batch), budget);
                        size_t bytes;
                        unsigned got = worker_rx(w, s, path, turn, &bytes);

                        if (got > 0)
                                w->rx_turn[path] = (uint8_t) next_turn(bytes, got);
                        budget -= MIN(got, budget);
                        if (got == turn)
                                ready[kept++] = path; /* may have more */
                }
                n_ready = kept;
        }
}

/* Path p's datagrams of this TUN packet as messages for one sendmmsg(), from segment `first` on:
 * each message one UDP GSO send of up to gso_max datagrams of one size (only the last may be
 * shorter), or one datagram. Fills msgs (and their control buffers) and the segment and byte
 * count of each; returns the number of messages. */
typedef union {
        struct cmsghdr align;
        uint8_t buf[CMSG_SPACE(sizeof(uint16_t))];
} GsoControl;

static unsigned build_messages(const SnapshotPath *sp, const struct iovec *iov, unsigned first, unsigned n_segs,
                               unsigned gso_max, struct mmsghdr *msgs, GsoControl *control, unsigned *segs_of,
                               size_t *bytes_of) {
        unsigned m = 0;

        for (unsigned i = first; i < n_segs; m++) {
                size_t size = iov[2 * i].iov_len + iov[2 * i + 1].iov_len, bytes = 0;
                unsigned n = 0;
                struct msghdr *mh = &msgs[m].msg_hdr;

                do {
                        size_t d = iov[2 * (i + n)].iov_len + iov[2 * (i + n) + 1].iov_len;
                        if (n > 0 && (d > size || bytes + d > GSO_BYTES_MAX))
                                break;
                        bytes += d;
                        n++;
                        if (d < size)
                                break;
                } while (i + n < n_segs && n < gso_max);

                *mh = (struct msghdr) {
                        .msg_name = (void *) &sp->remote,
                        .msg_namelen = sp->remote_len,
                        .msg_iov = (struct iovec *) &iov[2 * i],
                        .msg_iovlen = 2 * n,
                };
                if (n > 1) {
                        struct cmsghdr *c = (struct cmsghdr *) control[m].buf;
                        uint16_t gs = (uint16_t) size;
                        c->cmsg_level = IPPROTO_UDP;
                        c->cmsg_type = UDP_SEGMENT;
                        c->cmsg_len = CMSG_LEN(sizeof gs);
                        memcpy(CMSG_DATA(c), &gs, sizeof gs);
                        mh->msg_control = &control[m];
                        mh->msg_controllen = sizeof control[m];
                }
                segs_of[m] = n;
                bytes_of[m] = bytes;
                i += n;
        }
        return m;
}

/* Pacing: the TUN device leaves the epoll set until its packets are due again (they wait in its
 * queue meanwhile), or comes back. */
static void tun_pause(Worker *w, bool pause, uint64_t until) {
        struct epoll_event ev = { .events = pause ? 0 : EPOLLIN, .data.u64 = EV_TUN };

        if (pause != w->tun_paused && epoll_ctl(w->epoll_fd, EPOLL_CTL_MOD, w->tun_fd, &ev) < 0)
                return;
        w->tun_paused = pause;
        w->tun_resume = until;
}

/* The paced paths (of paced) more than PACE_BURST_NSEC ahead of their pace at now, and when the
 * first of those of the vector is no longer (*ret_until, unless NULL; 0 when none is ahead). */
static uint64_t pace_ahead(const Tunnel *t, uint64_t paced, uint64_t vector_paths, uint64_t now, uint64_t *ret_until) {
        uint64_t ahead = 0, until = UINT64_MAX;

        for (uint64_t m = paced; m != 0; m &= m - 1) {
                unsigned p = (unsigned) __builtin_ctzll(m);
                uint64_t next = __atomic_load_n(&t->pace_next[p], __ATOMIC_RELAXED);

                if (next <= now + PACE_BURST_NSEC)
                        continue;
                ahead |= UINT64_C(1) << p;
                if (vector_paths & UINT64_C(1) << p)
                        until = MIN(until, next - PACE_BURST_NSEC);
        }
        if (ret_until)
                *ret_until = until == UINT64_MAX ? 0 : until;
        return ahead;
}

/* Charges path p's pace with len bytes sent now. */
static void pace_charge(Tunnel *t, unsigned p, uint64_t now, size_t len) {
        uint64_t rate = __atomic_load_n(&t->pace_rate[p], __ATOMIC_RELAXED), cost, old, next;

        if (rate == 0)
                return;
        cost = (uint64_t) len * UINT64_C(1000000000) / rate;
        old = __atomic_load_n(&t->pace_next[p], __ATOMIC_RELAXED);
        do
                next = MIN(MAX(old, now) + cost, now + PACE_AHEAD_MAX_NSEC);
        while (!__atomic_compare_exchange_n(&t->pace_next[p], &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* Sends path p's datagrams of this TUN packet in one sendmmsg(): as UDP GSO sends (at most
 * GSO_SEGMENTS_MAX datagrams each, or w->gso_queued on a path that queues locally), or datagram
 * by datagram when GSO is off or was refused. Returns nothing: failures are counted. */
static void send_path(Worker *w, const Snapshot *s, unsigned p, const struct iovec *iov, unsigned n_segs) {
        Tunnel *t = w->tunnel;
        const SnapshotPath *sp = &s->paths[p];
        int fd = sp->fds[w->id];
        bool gso = dataplane_options.offload && dataplane_options.batch > 1 &&
                   !__atomic_load_n(&t->gso_failed, __ATOMIC_RELAXED);
        struct mmsghdr msgs[OFFLOAD_SEGMENTS_MAX];
        GsoControl control[OFFLOAD_SEGMENTS_MAX];
        unsigned segs_of[OFFLOAD_SEGMENTS_MAX], first = 0;
        size_t bytes_of[OFFLOAD_SEGMENTS_MAX];

        assert(n_segs <= OFFLOAD_SEGMENTS_MAX);
        while (first < n_segs) {
                unsigned gso_max = !gso ? 1u : w->queued_now & UINT64_C(1) << p ? MAX(w->gso_queued, 1u) : GSO_SEGMENTS_MAX;
                unsigned m = build_messages(sp, iov, first, n_segs, gso_max, msgs, control, segs_of, bytes_of);
                unsigned done = 0;

                while (done < m) {
                        int r = sendmmsg(fd, msgs + done, m - done, MSG_DONTWAIT);
                        if (r < 0 && errno == EINTR)
                                continue;
                        if (r < 0 && segs_of[done] > 1 && (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP)) {
                                /* No GSO on this route or kernel: from now on datagram by datagram. */
                                __atomic_store_n(&t->gso_failed, true, __ATOMIC_RELAXED);
                                gso = false;
                                break;
                        }
                        if (r < 0) {
                                /* The first message failed; a full socket buffer fails the rest as
                                 * well, so they are dropped together with it. */
                                bool busy = errno == EAGAIN || errno == ENOBUFS;
                                unsigned k = busy ? m : done + 1, lost = 0;
                                for (unsigned j = done; j < k; j++)
                                        lost += segs_of[j];
                                COUNTER_ADD(w->path_counters[p].drops[busy ? MPT_DROP_SEND_BUSY : MPT_DROP_SEND_ERROR],
                                            lost);
                                first += lost;
                                done = k;
                                continue;
                        }
                        for (unsigned j = done; j < done + (unsigned) r; j++) {
                                COUNTER_ADD(w->path_counters[p].tx_packets, segs_of[j]);
                                COUNTER_ADD(w->path_counters[p].tx_bytes, bytes_of[j]);
                                first += segs_of[j];
                        }
                        done += (unsigned) r;
                }
        }
}

/* Secure mode, once per window of segments: the cipher, and for every path that sends some of
 * them as many counters of this worker's lane as it needs (*next[p]; UINT64_MAX: the path's
 * counters are exhausted, its segments are dropped). The counters are the worker's own: nothing
 * is shared with the other workers. */
static MptCipher reserve_counters(Worker *w, int n, uint64_t next[static MPT_PATHS_MAX]) {
        uint64_t used = 0;
        usec_t now = now_usec();

        static_assert(MPT_PATHS_MAX <= 64, "a path is one bit of a uint64_t");
        for (int i = 0; i < n; i++) {
                unsigned p = w->seg_path[i], k = 0;
                if (used & UINT64_C(1) << p)
                        continue;
                used |= UINT64_C(1) << p;
                for (int j = i; j < n; j++)
                        k += w->seg_path[j] == p;
                /* The last usable counter is UINT64_MAX - 1 (as mpt_secure_reserve()). */
                if (w->tx_counter[p] > UINT64_MAX - 1 - (k - 1))
                        next[p] = UINT64_MAX;
                else {
                        next[p] = w->tx_counter[p];
                        w->tx_counter[p] += k;
                        tx_mark(w, p, next[p], next[p] + k - 1, now);
                }
        }
        return tunnel_tx_cipher(w->tunnel);
}

/* Numbers w->segs[0..n), assigns them to paths and sends them. In secure mode in this worker's
 * lane: its own sequence numbers and counters. In compat mode the tunnel has one sequence space:
 * a range of it per window (one atomic addition), under tx_lock with several workers (see
 * transmit()). Either way the segments of a flow (which stays with one worker) are numbered in
 * their order, and each path carries a lane's segments in their order. */
/* What a Policy= rule chose for a packet: the path of every segment (-1: the scheduler's), and
 * the paths that carry a copy of each (redundant), and which rule (-1: none). */
typedef struct PolicyChoice {
        int path;
        uint64_t copies;
        int rule;
} PolicyChoice;

/* Policy=, redundant: a copy of segment sg (numbered, its GRE header in front of its headers)
 * over path p, at once and on its own (such flows are small; the copies need no batching).
 * In secure mode with a counter of p's own, sealed into tx_copy: the plaintext is where the
 * segment's own sealing found it. */
static void send_copy(Worker *w, const Snapshot *s, const OffloadSegment *sg, size_t hl, unsigned p, MptCipher cipher,
                      int rule) {
        Tunnel *t = w->tunnel;
        struct iovec iov[2];

        if (t->secure) {
                size_t front = hl + sg->headers_len, dl;
                const uint8_t *m = sg->payload ? sg->payload - front : sg->headers - hl;
                uint64_t c = w->tx_counter[p];

                if (!w->tx_copy) {
                        w->tx_copy = malloc(WORKER_BUFFER_SIZE + 2 * MPT_SECURE_OVERHEAD);
                        if (!w->tx_copy) {
                                COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_NO_MEMORY], 1);
                                return;
                        }
                }
                if (front + sg->payload_len > WORKER_BUFFER_SIZE || c >= UINT64_MAX - 1) {
                        COUNTER_ADD(w->path_counters[p].drops[MPT_DROP_COUNTER_EXHAUSTED], 1);
                        return;
                }
                w->tx_counter[p]++;
                tx_mark(w, p, c, c, now_usec());
                dl = mpt_secure_seal_from(w->tx_copy, m, front + sg->payload_len, &s->tx_keys, cipher,
                                          t->aes ? MPT_SECURE_FLAG_AES : 0,
                                          (MptSecureSender) { .path_id = (uint8_t) p, .lane = (uint8_t) w->id,
                                                              .counter = c });
                if (dl == 0) {
                        COUNTER_ADD(w->path_counters[p].drops[MPT_DROP_CIPHER_ERROR], 1);
                        return;
                }
                iov[0] = (struct iovec) { .iov_base = w->tx_copy, .iov_len = dl };
                iov[1] = (struct iovec) {};
        } else {
                iov[0] = (struct iovec) { .iov_base = sg->headers - hl, .iov_len = hl + sg->headers_len };
                iov[1] = (struct iovec) { .iov_base = (void *) sg->payload, .iov_len = sg->payload_len };
        }
        send_path(w, s, p, iov, 1);
        policy_count(w, (size_t) rule, WORKER_POLICY_COPIES);
}

static void transmit_segments(Worker *w, const Snapshot *s, int n, uint32_t flow, const PolicyChoice *pc) {
        int forced = pc->path;
        Tunnel *t = w->tunnel;
        uint32_t seq = 0;
        size_t crypt_used = 0;
        uint64_t next[MPT_PATHS_MAX], pending = 0, paced_now = 0;
        bool last[OFFLOAD_SEGMENTS_MAX];
        MptCipher cipher = _MPT_CIPHER_INVALID;

        if (s->sequence && t->secure) {
                seq = w->tx_seq;
                w->tx_seq += (uint32_t) n;
        } else if (s->sequence)
                seq = (uint32_t) __atomic_fetch_add(&t->tx_seq, (uint64_t) n, __ATOMIC_RELAXED);
        __atomic_store_n(&w->tx_segments, w->tx_segments + (uint64_t) n, __ATOMIC_RELAXED);
        if (forced >= 0)
                for (int i = 0; i < n; i++)
                        w->seg_path[i] = (uint16_t) forced;
        else if (s->scheduler == MPT_SCHEDULER_FLOW)
                for (int i = 0; i < n; i++)
                        w->seg_path[i] = (uint16_t) s->vector[flow % s->vector_len];
        else {
                /* Paths ahead of their pace get no run now: the vector's next path does. */
                uint64_t paced = __atomic_load_n(&t->pace_paths, __ATOMIC_RELAXED) & w->vector_paths, skip = 0;

                if (paced != 0) {
                        paced_now = now_nsec();
                        skip = pace_ahead(t, paced, w->vector_paths, paced_now, NULL);
                }
                sched_assign_runs_skip(&w->runs, s->vector, s->vector_len,
                                       dataplane_options.batch > 1 ? w->run : 1, (size_t) n, skip, w->seg_path);
        }
        if (t->secure)
                cipher = reserve_counters(w, n, next);
        /* A path's datagrams go out as soon as its last segment of the window is ready: in secure
         * mode the other end can decrypt one path's datagrams while this one still seals the next
         * path's. */
        for (int i = n - 1; i >= 0; i--) {
                uint64_t bit = UINT64_C(1) << w->seg_path[i];
                last[i] = !(pending & bit);
                pending |= bit;
        }
        for (int i = 0; i < n; i++) {
                OffloadSegment *sg = &w->segs[i];
                unsigned p = w->seg_path[i];
                uint16_t proto = (sg->headers[0] >> 4) == 6 ? MPT_ETH_P_IPV6 : MPT_ETH_P_IP;
                size_t hl = mpt_gre_encode(sg->headers, proto, s->sequence, seq + (uint32_t) i);
                struct iovec *iov = &w->path_iov[(size_t) p * 2 * OFFLOAD_SEGMENTS_MAX + 2 * w->path_segs[p]];

                if (t->secure) {
                        /* Each datagram is its own AEAD message, sealed into tx_crypt: segments of
                         * equal size stay of equal size (plus the constant overhead), so one UDP
                         * GSO send still carries them. The plaintext must be contiguous: a
                         * segment's GRE and headers are put right in front of its payload in the
                         * packet buffer. What that overwrites (the previous segment's payload, or
                         * the packet's own headers and the headroom) is sealed or copied already:
                         * segments are sealed in order, and their headers were built apart (the
                         * packet's headers are put back before the next window, see transmit()). */
                        uint8_t *d = w->tx_crypt + crypt_used;
                        const uint8_t *m = sg->headers - hl;
                        size_t dl, front = hl + sg->headers_len;

                        if (sg->payload) {
                                uint8_t *start = (uint8_t *) sg->payload - front;
                                assert(start >= w->tx_buffer);
                                memmove(start, sg->headers - hl, front);
                                m = start;
                        }
                        if (next[p] == UINT64_MAX)
                                COUNTER_ADD(w->path_counters[p].drops[MPT_DROP_COUNTER_EXHAUSTED], 1);
                        else {
                                if (w->keep)
                                        keep_store(w, p, next[p], m, front + sg->payload_len);
                                dl = mpt_secure_seal_from(d, m, front + sg->payload_len, &s->tx_keys, cipher,
                                                          t->aes ? MPT_SECURE_FLAG_AES : 0,
                                                          (MptSecureSender) { .path_id = (uint8_t) p,
                                                                              .lane = (uint8_t) w->id,
                                                                              .counter = next[p]++ });
                                if (dl == 0)
                                        COUNTER_ADD(w->path_counters[p].drops[MPT_DROP_CIPHER_ERROR], 1);
                                else {
                                        crypt_used += dl;
                                        iov[0] = (struct iovec) { .iov_base = d, .iov_len = dl };
                                        iov[1] = (struct iovec) {};
                                        w->path_segs[p]++;
                                        if (paced_now != 0)
                                                pace_charge(t, p, paced_now, dl);
                                }
                        }
                } else {
                        iov[0] = (struct iovec) { .iov_base = sg->headers - hl, .iov_len = hl + sg->headers_len };
                        iov[1] = (struct iovec) { .iov_base = (void *) sg->payload, .iov_len = sg->payload_len };
                        w->path_segs[p]++;
                        if (paced_now != 0)
                                pace_charge(t, p, paced_now, iov[0].iov_len + iov[1].iov_len);
                }
                for (uint64_t c = pc->copies; c != 0; c &= c - 1)
                        send_copy(w, s, sg, hl, (unsigned) __builtin_ctzll(c), cipher, pc->rule);
                if (last[i] && w->path_segs[p] > 0) {
                        send_path(w, s, p, &w->path_iov[(size_t) p * 2 * OFFLOAD_SEGMENTS_MAX], w->path_segs[p]);
                        w->path_segs[p] = 0;
                }
        }
}

#define POLICY_UNKNOWN (-2)

/* Policy=: what the first matching rule (i; POLICY_UNKNOWN: not looked for yet) chooses for this
 * packet, counted in its class's hits with the time it waited in the hold queue. Path -1: the
 * scheduler's (no rule matches, the rule aggregates, or none of its paths is up). */
static PolicyChoice policy_choice(Worker *w, const Snapshot *s, const uint8_t *pkt, size_t len, int i,
                                  uint64_t waited) {
        PolicyChoice pc = { .path = -1, .rule = -1 };
        const MptPolicyRule *r;

        if (s->n_policy == 0)
                return pc;
        if (i == POLICY_UNKNOWN)
                i = policy_rule(s, pkt, len);
        if (i < 0 || (size_t) i >= s->n_policy) { /* (a held packet's rule, before a reload) */
                policy_count(w, POLICY_CLASS_OTHER, WORKER_POLICY_HITS);
                policy_wait(w, POLICY_CLASS_OTHER, waited);
                return pc;
        }
        pc.rule = i;
        policy_count(w, (size_t) i, WORKER_POLICY_HITS);
        policy_wait(w, (size_t) i, waited);
        r = &s->policy[i];
        switch (r->mode) {
        case MPT_POLICY_PINNED: {
                uint64_t usable = r->paths & s->up_paths;
                unsigned pick;
                if (usable == 0)
                        break;
                /* A flow stays on one of them: the pick-th usable path by its hash. */
                pick = sched_flow_hash(pkt, len) % (unsigned) __builtin_popcountll(usable);
                for (; pick > 0; pick--)
                        usable &= usable - 1; /* the lowest bit goes */
                pc.path = __builtin_ctzll(usable);
                break;
        }
        case MPT_POLICY_LOWEST_LATENCY:
                pc.path = s->fastest;
                break;
        case MPT_POLICY_REDUNDANT:
                /* The paths that are up with the lowest round-trip times: the first carries the
                 * packet as any, the others a copy each. */
                if (s->n_by_rtt == 0)
                        break;
                pc.path = s->by_rtt[0];
                for (unsigned k = 1; k < MIN((unsigned) r->copies, s->n_by_rtt); k++)
                        pc.copies |= UINT64_C(1) << s->by_rtt[k];
                break;
        default:
                break;
        }
        return pc;
}

/* Sends one TUN packet (buf: with the vnet header if there is one) that matched Policy= rule
 * `rule` (POLICY_UNKNOWN: not looked for yet) and waited this long (ns) in the hold queue. */
static void transmit(Worker *w, const Snapshot *s, uint8_t *buf, size_t len, int rule, uint64_t waited) {
        Tunnel *t = w->tunnel;
        struct virtio_net_hdr vh = {};
        uint8_t *pkt = buf;
        uint8_t saved[OFFLOAD_HEADERS_MAX];
        uint32_t flow = 0;
        size_t total;
        PolicyChoice pc;
        int n;

        if (t->tun.vnet_hdr) {
                if (len < VNET_HDR_LEN) {
                        COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_TUN_MALFORMED], 1);
                        return;
                }
                memcpy(&vh, buf, VNET_HDR_LEN);
                pkt = buf + VNET_HDR_LEN;
                len -= VNET_HDR_LEN;
        }
        if (mpt_inner_protocol(pkt, len) == 0) {
                COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_TUN_MALFORMED], 1);
                return;
        }
        n = offload_segment_from(&vh, pkt, len, t->mtu, w->tx_headers, WORKER_GRE_ROOM, 0, w->segs,
                                 OFFLOAD_SEGMENTS_MAX, &total);
        if (n < 0) {
                COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_TUN_MALFORMED], 1);
                return;
        }
        if (s->vector_len == 0) {
                COUNTER_ADD(w->tunnel_counters.drops[s->no_session ? MPT_DROP_NO_SESSION : MPT_DROP_NO_PATH],
                            (uint64_t) total);
                return;
        }
        if (s->scheduler == MPT_SCHEDULER_FLOW)
                flow = sched_flow_hash(w->segs[0].headers, w->segs[0].headers_len);
        pc = policy_choice(w, s, pkt, len, rule, waited);
        /* Sealing in place overwrites the packet's headers; later windows are cut from them. */
        if ((size_t) n < total)
                memcpy(saved, pkt, MIN(len, sizeof saved));

        /* Compat mode, numbered: the tunnel has one sequence space, and the receiver infers loss
         * from each path carrying its packets in sequence order (reorder.h). Two workers that
         * took ranges of it could send them on a path the other way round, and the receiver
         * would skip the first range and take it late: numbering and sending are one step
         * (tx_lock). Secure mode needs none: each worker numbers its own lane. A packet of more
         * segments than fit at once is done a window of OFFLOAD_SEGMENTS_MAX at a time. */
        bool lock = s->sequence && !t->secure && t->n_workers > 1;

        if (lock)
                pthread_mutex_lock(&t->tx_lock);
        for (size_t done = 0;;) {
                transmit_segments(w, s, n, flow, &pc);
                done += (size_t) n;
                if (done >= total)
                        break;
                memcpy(pkt, saved, MIN(len, sizeof saved));
                n = offload_segment_from(&vh, pkt, len, t->mtu, w->tx_headers, WORKER_GRE_ROOM, done, w->segs,
                                         OFFLOAD_SEGMENTS_MAX, &total);
                if (n <= 0) /* cannot happen: the first window checked the packet */
                        break;
        }
        if (lock)
                pthread_mutex_unlock(&t->tx_lock);
}

/* Whether path p's datagrams of this worker wait in a local queue (a qdisc or the driver): the
 * socket's unsent bytes, sampled once per rate interval. A path counts as queueing for
 * SCHED_QUEUED_HOLD_USEC after it was last seen so (see SCHED_GSO_TIME_USEC). Returns whether
 * any path of the snapshot does. */
static bool path_queued(const Worker *w, unsigned p, usec_t now) {
        usec_t at = __atomic_load_n(&w->path_queued_at[p], __ATOMIC_RELAXED);
        return at > 0 && now < at + SCHED_QUEUED_HOLD_USEC;
}

bool worker_path_queued(const Worker *w, unsigned p) {
        return p < MPT_PATHS_MAX && path_queued(w, p, now_usec());
}

static bool sample_queues(Worker *w, const Snapshot *s, usec_t now) {
        uint64_t queued = 0;
        bool any = false;

        static_assert(MPT_PATHS_MAX <= 64, "a path is one bit of a uint64_t");
        for (unsigned p = 0; p < s->n_paths && p < MPT_PATHS_MAX; p++) {
                int fd = s->paths[p].fds[w->id], q = 0;
                /* Atomic: mptctl show reads it (worker_path_queued()). */
                if (fd >= 0 && ioctl(fd, SIOCOUTQ, &q) == 0 && q > 0)
                        __atomic_store_n(&w->path_queued_at[p], now, __ATOMIC_RELAXED);
                if (path_queued(w, p, now)) {
                        queued |= UINT64_C(1) << p;
                        any = true;
                }
        }
        w->queued_now = queued;
        return any;
}

/* The adaptive quantum: from the tunnel's send rate over the last interval (all workers: paths
 * carry the runs of every worker). An idle interval measures a low rate and gives the floor. */
static void update_run(Worker *w, const Snapshot *s) {
        Tunnel *t = w->tunnel;
        usec_t now;
        uint64_t segments;

        now = now_usec();
        if (now < w->rate_since + SCHED_RATE_INTERVAL_USEC)
                return;
        segments = tunnel_tx_segments(t);
        if (w->rate_since > 0) {
                /* Paths that queue locally: a run there waits in the queue as a whole, and the
                 * next path's run is held at the receiver meanwhile, so the quantum stays at
                 * its floor (16 segments: 0.2 ms at 1 Gbit/s; 64 would cost 4 x 1 Gbit/s
                 * nearly half its goodput), and below it when the whole tunnel is slow (see
                 * sched_queued_run()). Only a tunnel whose paths queue nothing (fast,
                 * unshaped) grows it, for fewer and larger sends. */
                bool queued = sample_queues(w, s, now);

                if (!dataplane_options.run_fixed)
                        w->run = queued ? sched_queued_run(segments - w->rate_segments, now - w->rate_since,
                                                           dataplane_options.run)
                                        : sched_adaptive_run(segments - w->rate_segments, now - w->rate_since,
                                                             s->vector_len, w->min_slots, dataplane_options.run,
                                                             SCHED_RUN_CEIL, true);
                w->gso_queued = sched_adaptive_count(segments - w->rate_segments, now - w->rate_since,
                                                     s->vector_len, w->min_slots, SCHED_GSO_TIME_USEC, 1,
                                                     GSO_SEGMENTS_MAX);
        }
        w->rate_since = now;
        w->rate_segments = segments;
}

/* Whether the paths with more than half the vector's slots are ahead of their pace (and until
 * when, *ret_until): the vector's packets wait until one of them is due again. Fewer are passed
 * over (transmit_segments()): a path with a small share, or one whose pace is slow for the slots
 * it has (a vector has at least one slot per path), must not hold back the others. */
static bool tx_behind_pace(const Worker *w, const Snapshot *s, uint64_t paced, uint64_t now, uint64_t *ret_until) {
        uint64_t until, ahead;
        size_t slots = 0;

        if (paced == 0)
                return false;
        ahead = pace_ahead(w->tunnel, paced, w->vector_paths, now, &until);
        for (uint64_t m = ahead; m != 0; m &= m - 1)
                slots += w->vector_slots[__builtin_ctzll(m)];
        if (ahead == 0 || slots * 2 <= s->vector_len)
                return false;
        *ret_until = MIN(until, now + PACE_PAUSE_MAX_NSEC);
        return true;
}

/* Whether a packet of Policy= rule i goes out even while the paths are ahead of their pace. */
static bool policy_goes_ahead(const Snapshot *s, int i) {
        return i >= 0 && (size_t) i < s->n_policy &&
                (s->policy[i].mode == MPT_POLICY_REDUNDANT || s->policy[i].mode == MPT_POLICY_LOWEST_LATENCY);
}

/* Sends the held packets (hold.h) as far as the pace lets them go, oldest first; those held
 * longer than WORKER_HOLD_MAX_NSEC are dropped. Returns whether none is left. */
static bool hold_release(Worker *w, const Snapshot *s, uint64_t paced, uint8_t *buf) {
        const HoldPacket *e;

        while ((e = hold_peek(&w->hold))) {
                uint64_t now = now_nsec(), until;
                size_t len = e->len;
                int rule = e->rule;

                if (now - e->time > WORKER_HOLD_MAX_NSEC) {
                        COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_HOLD_OVERFLOW], 1);
                        hold_pop(&w->hold);
                        continue;
                }
                if (tx_behind_pace(w, s, paced, now, &until)) {
                        w->hold_resume = until;
                        return false;
                }
                uint64_t waited = now - e->time;
                memcpy(buf, e->data, len);
                hold_pop(&w->hold);
                transmit(w, s, buf, len, rule, waited);
        }
        return true;
}

static void worker_tx(Worker *w, const Snapshot *s) {
        /* Headroom in front: a packet that is not split gets its GRE header right before it. */
        uint8_t *buf = w->tx_buffer + WORKER_HEADROOM;
        uint64_t paced = __atomic_load_n(&w->tunnel->pace_paths, __ATOMIC_RELAXED) & w->vector_paths;
        size_t inner = w->tunnel->tun.vnet_hdr ? VNET_HDR_LEN : 0;

        update_run(w, s);
        for (unsigned n = 0; n < dataplane_options.batch; n++) {
                uint64_t now = 0, until = 0;
                bool behind = false;
                int rule = POLICY_UNKNOWN;

                if (!hold_empty(&w->hold) && hold_release(w, s, paced, buf))
                        continue; /* (all went: look again whether the pace still lets them) */
                if (paced != 0) {
                        now = now_nsec();
                        behind = tx_behind_pace(w, s, paced, now, &until);
                }
                /* Behind the pace, the packets wait in the TUN device's queue until a path is
                 * due again (or PACE_PAUSE_MAX_NSEC) -- unless Policy= has rules whose packets
                 * must not wait behind the others: then the worker goes on reading, and only
                 * the others wait, in its hold queue. */
                if (behind && !s->policy_ahead) {
                        tun_pause(w, true, until);
                        break;
                }
                ssize_t k = read(w->tun_fd, buf, WORKER_BUFFER_SIZE);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        /* Drained: runs are for traffic that comes in batches. A packet after
                         * a pause opens the next slot, so that sparse traffic (pings, voice)
                         * is interleaved packet by packet as the vector says. */
                        if (errno == EAGAIN)
                                w->runs.active = false;
                        break;
                }
                if (k == 0)
                        break;
                if (behind || !hold_empty(&w->hold)) {
                        if ((size_t) k > inner)
                                rule = policy_rule(s, buf + inner, (size_t) k - inner);
                        if (!policy_goes_ahead(s, rule)) {
                                if (hold_empty(&w->hold))
                                        w->hold_resume = until;
                                if (!hold_push(&w->hold, buf, (size_t) k, rule, now != 0 ? now : now_nsec()))
                                        COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_HOLD_OVERFLOW], 1);
                                continue;
                        }
                }
                transmit(w, s, buf, (size_t) k, rule, 0);
        }
}

/* The earliest deadline of the lanes this worker expires. */
static usec_t expire_deadline(const Worker *w) {
        usec_t deadline = USEC_INFINITY;

        for (uint64_t m = rx_shared_lanes(w->tunnel->rx) & w->expire_lanes; m != 0; m &= m - 1)
                deadline = MIN(deadline, rx_lane_deadline(rx_shared_lane_get(w->tunnel->rx,
                                                                             (unsigned) __builtin_ctzll(m))));
        return deadline;
}

static int timeout_ms(const Worker *w) {
        usec_t deadline = USEC_INFINITY, now;

        if (w->tunnel->reorder_enabled)
                deadline = expire_deadline(w);
        if (w->tun_paused)
                deadline = MIN(deadline, w->tun_resume / NSEC_PER_USEC);
        if (!hold_empty(&w->hold))
                deadline = MIN(deadline, w->hold_resume / NSEC_PER_USEC);
        if (deadline == USEC_INFINITY)
                return -1;
        now = now_usec();
        if (deadline <= now)
                return 0;
        return (int) MIN(DIV_ROUND_UP(deadline - now, USEC_PER_MSEC), (usec_t) 60000);
}

void worker_rx_expire(Worker *w, usec_t now) {
        Tunnel *t = w->tunnel;

        if (!t->reorder_enabled)
                return;
        for (uint64_t m = rx_shared_lanes(t->rx) & w->expire_lanes; m != 0; m &= m - 1) {
                RxLane *l = rx_shared_lane_get(t->rx, (unsigned) __builtin_ctzll(m));

                if (rx_lane_deadline(l) > now)
                        continue;
                rx_lane_lock(l, w, &w->contention);
                reorder_expire(l->reorder, now, tun_deliver, w);
                gro_flush(w);
                reorder_trim(l->reorder);
                rx_lane_unlock(l);
        }
        pool_released_flush(w);
}

static void expire_reorder(Worker *w) {
        if (w->tunnel->reorder_enabled)
                worker_rx_expire(w, now_usec());
}

static void *worker_main(void *userdata) {
        Worker *w = userdata;
        Tunnel *t = w->tunnel;
        struct epoll_event events[MPT_PATHS_MAX + 2];
        sigset_t all;

        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        /* From here on this thread parses what arrives from the network: only the system calls
         * of the data plane (sandbox.h). worker_start() waits for the result. */
        w->sandbox_r = sandbox_install_worker();
        sem_post(&w->sandboxed);
        if (w->sandbox_r < 0)
                return NULL;

        while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
                unsigned ready[MPT_PATHS_MAX], n_ready;
                const Snapshot *s;
                int n;

                n = epoll_wait(w->epoll_fd, events, (int) ELEMENTSOF(events), timeout_ms(w));
                if (n < 0 && errno != EINTR)
                        break;

                /* Pick up the newest snapshot; announcing its generation tells the main thread that
                 * older ones (and the sockets they name) are no longer used here (see tunnel.h). */
                s = __atomic_load_n(&t->snapshot, __ATOMIC_ACQUIRE);
                if (s->generation != w->seen_generation)
                        reconcile(w, s);

                update_quiet(w);
                n_ready = 0;
                for (int i = 0; i < n; i++) {
                        uint64_t tag = events[i].data.u64;
                        if (tag == EV_WAKE) {
                                uint64_t v;
                                (void) !read(w->wake_fd, &v, sizeof v);
                        } else if (tag == EV_TUN)
                                worker_tx(w, s);
                        else if (tag < s->n_paths && w->registered[tag] >= 0)
                                ready[n_ready++] = (unsigned) tag;
                }
                worker_rx_ready(w, s, ready, n_ready);
                if (w->keep)
                        repair_serve(w, s);
                expire_reorder(w);
                if (w->tun_paused && now_nsec() >= w->tun_resume) {
                        tun_pause(w, false, 0);
                        worker_tx(w, s);
                } else if (!hold_empty(&w->hold) && now_nsec() >= w->hold_resume)
                        worker_tx(w, s);
        }
        return NULL;
}

uint64_t worker_policy_counter(const Worker *w, size_t class, WorkerPolicyCounter c) {
        if (class > POLICY_CLASS_OTHER || c < 0 || c >= _WORKER_POLICY_COUNTER_MAX)
                return 0;
        return __atomic_load_n(&w->policy[class][c], __ATOMIC_RELAXED);
}

void worker_policy_reset(Worker *w) {
        for (size_t i = 0; i <= POLICY_CLASS_OTHER; i++)
                for (size_t c = 0; c < _WORKER_POLICY_COUNTER_MAX; c++)
                        __atomic_store_n(&w->policy[i][c], 0, __ATOMIC_RELAXED);
}

int worker_start(Worker *w) {
        char name[16];
        int r;

        if (sem_init(&w->sandboxed, 0, 0) < 0)
                return -errno;
        r = pthread_create(&w->thread, NULL, worker_main, w);
        if (r != 0) {
                sem_destroy(&w->sandboxed);
                return -r;
        }
        w->started = true;
        snprintf(name, sizeof name, "mptd-w%u", w->id);
        (void) pthread_setname_np(w->thread, name);
        while (sem_wait(&w->sandboxed) < 0 && errno == EINTR)
                ;
        sem_destroy(&w->sandboxed);
        if (w->sandbox_r < 0) {
                pthread_join(w->thread, NULL);
                w->started = false;
                return log_tunnel_error_errno(w->tunnel, w->sandbox_r, "Failed to install the seccomp filter of worker %u: %m", w->id);
        }
        return 0;
}

void worker_stop(Worker *w) {
        if (!w->started)
                return;
        __atomic_store_n(&w->stop, true, __ATOMIC_RELEASE);
        worker_wake(w);
        pthread_join(w->thread, NULL);
        w->started = false;
}
