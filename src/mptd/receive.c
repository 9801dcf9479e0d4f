/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The way in: a worker reads path sockets, opens (secure mode) and sorts what arrived, and writes
 * it to the TUN device in order (the reorder buffer, rx-shared.h); it also asks the other end
 * again for what a path lost (loss repair). See worker-internal.h. */

#include "worker-internal.h"

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
        bool reorder = false;

        /* one pool for the tunnel, lent to the reorder buffers of every peer that has them */
        for (size_t k = 0; k < t->n_peers; k++)
                reorder = reorder || t->peers[k]->reorder_enabled;
        if (!reorder)
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
        for (size_t k = 0; k < t->n_peers; k++)
                if (t->peers[k]->reorder_enabled)
                        rx_shared_set_lender(t->peers[k]->rx, &(RxLender) {
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

/* Whether this worker is one of the receiving workers of a tunnel whose receiving and sending
 * workers are apart (see path_rx_worker()). */
bool worker_rx_apart(const Worker *w) {
        const Tunnel *t = w->tunnel;

        return t->rx_workers > 0 && w->id < t->rx_workers && t->rx_workers < t->tun.n_fds;
}

/* Received packets go in through the queue their flow hashes to. The kernel sends a flow's
 * outgoing packets through the queue its incoming ones last came in by, so every flow stays
 * with one worker, which numbers its packets in order. (Writing through the worker's own queue
 * would move a flow between workers with every acknowledgement that arrives on another path.)
 * With receiving and sending workers apart that is a sending worker, except while the tunnel is
 * quiet (worker_update_quiet()): then a receiving worker writes through its own queue and so sends the
 * answers itself. */
static int worker_tun_fd(const Worker *w, const uint8_t *pkt, size_t len) {
        /* Only a receiving worker is ever quiet (worker_update_quiet()). */
        if (w->quiet)
                return w->tun_fd;
        return tunnel_tun_fd_for(w->tunnel, pkt, len);
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

/* The numbered packets of the messages handled so far go through their lanes' reorder buffers:
 * a lane at a time, under its lock, and what a lane delivers is written before it is let go
 * (another worker may deliver its next packets right after). */
static void deliver_pending(Worker *w) {
        WorkerPeer *wp = &w->peers[0];
        uint64_t lanes = 0;

        for (unsigned i = 0; i < w->n_pending; i++)
                lanes |= UINT64_C(1) << w->pending[i].lane;
        /* What was gathered without a lane goes first. */
        gro_flush(w);
        for (; lanes != 0; lanes &= lanes - 1) {
                unsigned lane = (unsigned) __builtin_ctzll(lanes);
                RxLane *l = rx_shared_lane(wp->peer->rx, lane);

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
                                COUNTER_ADD(wp->path_counters[d->path].drops[reason], 1);
                        else if (reason < -1)
                                COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_NO_MEMORY], 1);
                        if (d->rule != RX_POLICY_NONE && (reason == -1 || reason == MPT_DROP_DUPLICATE))
                                worker_policy_count(w, d->rule >= 0 ? (size_t) d->rule : POLICY_CLASS_OTHER,
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
int worker_policy_rule(const Snapshot *s, const uint8_t *pkt, size_t len) {
        return s && s->n_policy > 0 ? mpt_policy_classify(s->policy, s->n_policy, pkt, len) : -1;
}

/* A data packet of path `path`, numbered in `lane` of the other end (or not numbered). */
static void handle_data(Worker *w, unsigned path, unsigned lane, const MptFrame *f, usec_t arrival) {
        WorkerPeer *wp = &w->peers[0];
        const Snapshot *s = w->rx_snapshot;
        int rule;

        if (!wp->peer->reorder_enabled || !f->has_seq) {
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
        rule = s && s->n_policy > 0 ? worker_policy_rule(s, f->payload, f->payload_len) : RX_POLICY_NONE;
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
        WorkerPeer *wp = &w->peers[0];
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
                if (memcmp(&wp->endpoint_reported[path], src, sizeof *src) == 0)
                        return;
                wp->endpoint_reported[path] = *src;
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

/* One datagram that the socket of path socket_path received, sent on `lane` by the other end:
 * a datagram of path `path` (demux()), or with path == RX_BY_TOKEN of a path that only its
 * keepalive's token can tell. Its counters go to the path, or to the socket's while it is not
 * known. */
static void handle_datagram(Worker *w, unsigned socket_path, int path, unsigned lane, bool new_endpoint,
                            const MptSockaddr *src, const uint8_t *buf, size_t len, usec_t now) {
        WorkerPeer *wp = &w->peers[0];
        unsigned p = path >= 0 ? (unsigned) path : socket_path;
        MptFrame f;
        int reason;

        reason = mpt_frame_decode(buf, len, &f);
        if (reason >= 0) {
                COUNTER_ADD(wp->path_counters[p].drops[reason], 1);
                return;
        }

        if (f.kind == MPT_FRAME_KEEPALIVE) {
                ControlEvent ev = { .kind = CONTROL_EVENT_KEEPALIVE, .source = *src, .epoch = w->rx_epoch,
                                    .socket_path = socket_path, .peer_id = w->rx_peer_id,
                                    .peer_epoch = w->rx_peer_epoch };
                reason = mpt_keepalive_decode(&f, &ev.ka);
                if (reason >= 0) {
                        COUNTER_ADD(wp->path_counters[p].drops[reason], 1);
                        return;
                }
                if (path == RX_BY_TOKEN && !ev.ka.extended) {
                        COUNTER_ADD(wp->path_counters[socket_path].drops[MPT_DROP_UNKNOWN_SOURCE], 1);
                        return;
                }
                /* Learn first, so that the keepalive finds the new endpoint in place. */
                if (new_endpoint || path == RX_BY_TOKEN)
                        report_endpoint(w, path >= 0 ? (unsigned) path : UINT_MAX, src, ev.ka.path_token, socket_path);
                ev.path = path >= 0 ? (unsigned) path : UINT_MAX;
                ev.when = now; /* arrival: keeps RTT samples free of our own delays */
                COUNTER_ADD(wp->path_counters[p].keepalives_rx, 1);
                tunnel_queue_event(w->tunnel, &ev);
                return;
        }
        if (path == RX_BY_TOKEN) {
                /* Data from a new source on a shared socket: wait for its keepalive. */
                COUNTER_ADD(wp->path_counters[socket_path].drops[MPT_DROP_UNKNOWN_SOURCE], 1);
                return;
        }
        if (f.kind == MPT_FRAME_FEEDBACK) {
                ControlEvent ev = { .kind = CONTROL_EVENT_FEEDBACK, .path = (unsigned) path, .source = *src,
                                    .epoch = w->rx_epoch };
                /* Only authenticated feedback may move traffic: in compat mode there is none. */
                reason = w->tunnel->secure ? mpt_feedback_decode(&f, &ev.fb) : MPT_DROP_BAD_FEEDBACK;
                if (reason >= 0) {
                        COUNTER_ADD(wp->path_counters[path].drops[reason], 1);
                        return;
                }
                if (new_endpoint)
                        report_endpoint(w, (unsigned) path, src, 0, socket_path);
                ev.when = now;
                tunnel_queue_event(w->tunnel, &ev);
                return;
        }
        if (f.kind == MPT_FRAME_REPAIR) {
                MptRepair r;
                /* Only authenticated requests are served: in compat mode there are none. */
                reason = w->tunnel->secure ? mpt_repair_decode(&f, &r) : MPT_DROP_BAD_REPAIR;
                if (reason >= 0) {
                        COUNTER_ADD(wp->path_counters[path].drops[reason], 1);
                        return;
                }
                if (new_endpoint)
                        report_endpoint(w, (unsigned) path, src, 0, socket_path);
                worker_repair_request(w, &r);
                return;
        }
        if (new_endpoint)
                report_endpoint(w, (unsigned) path, src, 0, socket_path);
        if (f.kind == MPT_FRAME_PATH_STATUS) {
                ControlEvent ev = { .kind = CONTROL_EVENT_PATH_STATUS, .path = (unsigned) path, .source = *src,
                                    .epoch = w->rx_epoch };
                reason = mpt_path_status_decode(&f, &ev.ps);
                if (reason >= 0) {
                        COUNTER_ADD(wp->path_counters[path].drops[reason], 1);
                        return;
                }
                ev.when = now;
                tunnel_queue_event(w->tunnel, &ev);
                return;
        }
        COUNTER_ADD(wp->path_counters[path].rx_packets, 1);
        COUNTER_ADD(wp->path_counters[path].rx_bytes, (uint64_t) len);
        handle_data(w, (unsigned) path, lane, &f, now);
}

/* Receiving side: asks the other end for what the gaps of this batch miss, over our repair path
 * (in this worker's lane: its counters are its own). */
static void repair_ask_flush(Worker *w, const Snapshot *s) {
        WorkerPeer *wp = &w->peers[0];
        uint8_t frame[MPT_REPAIR_SIZE_MAX], out[MPT_REPAIR_SIZE_MAX + MPT_SECURE_OVERHEAD];
        uint64_t first = 0, last = 0, asked = 0;
        int q = worker_repair_path(w, s);
        size_t len;

        if (wp->repair_ask.n == 0)
                return;
        for (unsigned i = 0; i < wp->repair_ask.n; i++)
                asked += wp->repair_ask.entries[i].count;
        len = mpt_repair_encode(frame, sizeof frame, w->tunnel->ip_version == 6 ? MPT_ETH_P_IPV6 : MPT_ETH_P_IP,
                                &wp->repair_ask);
        wp->repair_ask.n = 0;
        if (q < 0 || len == 0 || worker_repair_send(w, s, (unsigned) q, frame, len, out, &first, &last) == 0)
                return;
        worker_tx_mark(w, (unsigned) q, first, last, now_usec());
        COUNTER_ADD(w->tunnel_counters.repair_asked, asked);
}

static void repair_ask_add(Worker *w, unsigned path_id, unsigned lane, uint64_t first, unsigned count) {
        WorkerPeer *wp = &w->peers[0];
        const Snapshot *s;

        if (wp->repair_ask.n == MPT_REPAIR_ENTRIES_MAX) {
                s = __atomic_load_n(&wp->peer->snapshot, __ATOMIC_ACQUIRE);
                repair_ask_flush(w, s);
        }
        wp->repair_ask.entries[wp->repair_ask.n++] = (MptRepairEntry) {
                .path_id = (uint8_t) path_id, .lane = (uint8_t) lane, .count = (uint16_t) count, .first = first,
        };
}

/* An authenticated datagram of the other end's path path_id (its secure header says which),
 * len bytes on the wire, arrived at `arrival`. */
static void rx_track(Worker *w, const uint8_t *header, size_t len, usec_t arrival) {
        WorkerPeer *wp = &w->peers[0];
        RxTrack *r = &wp->rx_track[header[MPT_SECURE_OFF_PATH_ID] % MPT_PATHS_MAX];
        unsigned lane = header[MPT_SECURE_OFF_LANE] % MPT_SECURE_LANES;
        uint64_t epoch = rd64be(header + MPT_SECURE_OFF_EPOCH),
                 counter = rd64be(header + MPT_SECURE_OFF_COUNTER);

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
                if (wp->peer->repair && lane != MPT_SECURE_LANE_CONTROL && r->lane_top[lane] != 0 && more > 1 &&
                    more - 1 <= MPT_REPAIR_COUNT_MAX)
                        repair_ask_add(w, header[MPT_SECURE_OFF_PATH_ID] % MPT_PATHS_MAX, lane, r->lane_top[lane] + 1, (unsigned) more - 1);

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
        const WorkerPeer *wp = &w->peers[0];
        const RxTrack *r = &wp->rx_track[path_id % MPT_PATHS_MAX];
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
        WorkerPeer *wp = &w->peers[0];
        RxShared *rs = wp->peer->rx;

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

static int secure_open_buffer(Worker *w, const Snapshot *s, unsigned socket_path, int path, const MptSockaddr *src,
                              uint8_t *buf, size_t len, size_t seg, usec_t now) {
        WorkerPeer *wp = &w->peers[0];
        Tunnel *t = w->tunnel;
        /* path == RX_BY_TOKEN: the path of the socket's group that the datagrams' sender (path id
         * and epoch) is (Path.peer_id); -1: none, -2: they disagree */
        int resolved = -1;
        unsigned p = path >= 0 ? (unsigned) path : socket_path;
        MptSecureHeader h[SECURE_RUN];
        int reason[SECURE_RUN];
        uint64_t new_epochs = 0, paths = 0, confirm = 0;
        usec_t hs_now = t->handshake ? session_now() : 0;
        /* The snapshot whose key pairs open the datagrams: s, or a newer one (below). */
        const Snapshot *ks = s;

        if (path >= 0)
                paths = MPT_SECURE_PATH_BIT(path);
        else
                for (unsigned i = 0; i < s->n_paths; i++)
                        if (s->paths[i].endpoint == s->paths[socket_path].endpoint)
                                paths |= MPT_SECURE_PATH_BIT(i);

        for (size_t base = 0; base < len; base += seg * SECURE_RUN) {
                size_t n = MIN((size_t) SECURE_RUN, DIV_ROUND_UP(len - base, seg));

                int held = -1;

                for (size_t i = 0; i < n; i++) {
                        size_t off = base + i * seg, dl = MIN(seg, len - off);

                        if (t->handshake && buf[off] >= MPT_HANDSHAKE_INITIATION && buf[off] <= MPT_HANDSHAKE_RETRY)
                                reason[i] = hand_on_handshake(w, socket_path, src, buf + off, dl);
                        else
                                reason[i] = mpt_secure_parse(buf + off, dl, &h[i]);
                }
                for (size_t i = 0; i < n; i++)
                        if (reason[i] < 0) {
                                secure_hold(w, &held, h[i].path_id);
                                reason[i] = mpt_secure_rx_check(wp->peer->rx->secure, &h[i], paths);
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
                                        const Snapshot *newest = __atomic_load_n(&wp->peer->snapshot, __ATOMIC_ACQUIRE);

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
                        if (h[i].epoch == wp->rx_keys.epoch)
                                keys = &wp->rx_keys;
                        else {
                                /* A newer epoch (the other end restarted): its keys, kept aside
                                 * until a datagram under it authenticates. Anyone can claim a
                                 * new epoch: derivations are rate-limited. */
                                if (h[i].epoch != wp->rx_try_keys.epoch) {
                                        if (!mpt_secure_limit_take(&wp->rx_derive_limit, now)) {
                                                reason[i] = MPT_DROP_EPOCH_LIMITED;
                                                continue;
                                        }
                                        /* (A reload may replace the profile, never the key.) */
                                        const MptProfile *prof = __atomic_load_n(&t->profile, __ATOMIC_RELAXED);

                                        if (mpt_secure_derive(prof->tunnel.psk.bytes, h[i].epoch, t->aes,
                                                              &wp->rx_try_keys) < 0) {
                                                reason[i] = MPT_DROP_CIPHER_ERROR;
                                                continue;
                                        }
                                }
                                keys = &wp->rx_try_keys;
                        }
                        reason[i] = mpt_secure_open(buf + off, MIN(seg, len - off), keys);
                        if (reason[i] < 0 && keys == &wp->rx_try_keys)
                                wp->rx_keys = wp->rx_try_keys;
                }

                for (size_t i = 0; i < n; i++) {
                        bool new_epoch;
                        if (reason[i] >= 0)
                                continue;
                        secure_hold(w, &held, h[i].path_id);
                        reason[i] = mpt_secure_rx_accept(wp->peer->rx->secure, &h[i], paths, &new_epoch);
                        new_epochs += new_epoch;
                        if (path < 0 && reason[i] < 0 && resolved != -2) {
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
                                        COUNTER_ADD(wp->path_counters[p].drops[reason[i]], 1);
                                buf[base + i * seg] = 0;
                        }
        }
        if (new_epochs > 0)
                __atomic_add_fetch(&wp->peer->peer_epochs, new_epochs, __ATOMIC_RELAXED);
        /* The initiator of the responder's new session sends under it: it may become current (once
         * per worker and set of keys is enough; the main thread republishes). */
        if (confirm != 0 && wp->confirmed_generation != ks->generation) {
                ControlEvent ev = { .kind = CONTROL_EVENT_SESSION, .path = p, .epoch = confirm, .when = now };

                if (tunnel_queue_event(t, &ev))
                        wp->confirmed_generation = ks->generation;
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

void worker_rx_process(Worker *w, const Snapshot *s, unsigned socket_path, const WorkerRxMessage *msgs, unsigned n) {
        WorkerPeer *wp = &w->peers[0];
        Tunnel *t = w->tunnel;
        /* Per message: its path (demux(); RX_UNKNOWN: dropped), datagram size. */
        int msg_path[WORKER_RX_MMSG];
        bool new_endpoint[WORKER_RX_MMSG];
        size_t seg[WORKER_RX_MMSG];

        assert(n <= WORKER_RX_MMSG);
        assert(socket_path < s->n_paths);
        w->rx_snapshot = s;

        /* First: what each message is, and in secure mode every datagram authenticated and
         * decrypted; what fails is skipped below. */
        for (unsigned m = 0; m < n; m++) {
                size_t k = msgs[m].len;
                MptAddress src_addr;
                uint16_t src_port;

                msg_path[m] = RX_UNKNOWN;
                if (msgs[m].truncated) {
                        COUNTER_ADD(wp->path_counters[socket_path].drops[MPT_DROP_TRUNCATED], 1);
                        continue;
                }
                if (sockaddr_to_address(&msgs[m].source, &src_addr, &src_port) < 0 ||
                    (msg_path[m] = demux(s, socket_path, &src_addr, src_port, &new_endpoint[m])) == RX_UNKNOWN) {
                        msg_path[m] = RX_UNKNOWN;
                        COUNTER_ADD(wp->path_counters[socket_path].drops[MPT_DROP_UNKNOWN_SOURCE], 1);
                        continue;
                }
                /* With UDP GRO the buffer holds several datagrams of one source: all of gso size
                 * but the last. */
                seg[m] = msgs[m].segment_size;
                if (seg[m] == 0 || seg[m] > k)
                        seg[m] = k;
                if (t->secure) {
                        int b = secure_open_buffer(w, s, socket_path, msg_path[m], &msgs[m].source, w->rx_cur[m], k, seg[m],
                                                   msgs[m].arrival);
                        /* A new source on a shared socket whose datagrams authenticated and come
                         * from the other end's path that one of the socket's paths knows (by its
                         * sender path id and epoch: the other end's NAT gave that path a new
                         * address or port): that path, followed at once, not only at the next
                         * keepalive. */
                        if (msg_path[m] == RX_BY_TOKEN && b >= 0 && !s->paths[b].pin_remote) {
                                msg_path[m] = b;
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

                if (msg_path[m] == RX_UNKNOWN)
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
                                        w->rx_epoch = rd64be(d + MPT_SECURE_OFF_EPOCH);
                                w->rx_peer_id = (uint8_t) (d[MPT_SECURE_OFF_PATH_ID] + 1);
                                w->rx_peer_epoch = rd64be(d + MPT_SECURE_OFF_EPOCH);
                                rx_track(w, d, dl, msgs[m].arrival);
                                lane = d[MPT_SECURE_OFF_LANE];
                                d += MPT_SECURE_HEADER_SIZE;
                                dl -= MPT_SECURE_OVERHEAD;
                        }
                        handle_datagram(w, socket_path, msg_path[m], lane, new_endpoint[m], &msgs[m].source, d, dl,
                                        msgs[m].arrival);
                        new_endpoint[m] = false; /* reported once per buffer is plenty */
                }
        }
        deliver_pending(w);
        gro_flush(w);
        repair_ask_flush(w, s);
        if (wp->peer->reorder_enabled) {
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

void worker_rx_ready(Worker *w, const Snapshot *s, unsigned *ready, unsigned n_ready) {
        WorkerPeer *wp = &w->peers[0];
        unsigned budget = dataplane_options.batch * 4;

        while (n_ready > 0 && budget > 0) {
                unsigned kept = 0;
                for (unsigned i = 0; i < n_ready && budget > 0; i++) {
                        unsigned path = ready[i];
                        unsigned turn = MIN(MIN(MAX(wp->rx_turn[path], 1u), dataplane_options.batch), budget);
                        size_t bytes;
                        unsigned got = worker_rx(w, s, path, turn, &bytes);

                        if (got > 0)
                                wp->rx_turn[path] = (uint8_t) next_turn(bytes, got);
                        budget -= MIN(got, budget);
                        if (got == turn)
                                ready[kept++] = path; /* may have more */
                }
                n_ready = kept;
        }
}

void worker_rx_expire(Worker *w, usec_t now) {
        WorkerPeer *wp = &w->peers[0];

        if (!wp->peer->reorder_enabled)
                return;
        for (uint64_t m = rx_shared_lanes(wp->peer->rx) & wp->expire_lanes; m != 0; m &= m - 1) {
                RxLane *l = rx_shared_lane_get(wp->peer->rx, (unsigned) __builtin_ctzll(m));

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

void worker_expire_reorder(Worker *w) {
        WorkerPeer *wp = &w->peers[0];
        if (wp->peer->reorder_enabled)
                worker_rx_expire(w, now_usec());
}
