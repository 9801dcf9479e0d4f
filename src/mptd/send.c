/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The way out: a worker reads the TUN device, chooses a path for each packet (the scheduler,
 * Policy=, the pace), seals it (secure mode) and sends it with UDP GSO; it also keeps what it
 * sent for loss repair and serves the other end's requests. See worker-internal.h. */

#include "worker-internal.h"

static void pace_charge(Peer *peer, unsigned p, uint64_t now, size_t len);

/* ---- loss repair (mptd(8), LOSS REPAIR) ---- */

/* Sending side: keeps the plaintext of the datagram with counter `counter` of path p. */
static void keep_store(Worker *w, unsigned p, uint64_t counter, const uint8_t *m, size_t len) {
        WorkerPeer *wp = &w->peers[0];
        uint64_t pos = wp->keep_pos;
        KeepSlot *slot;

        if (len > WORKER_BUFFER_SIZE || p >= MPT_PATHS_MAX)
                return;
        /* A plaintext is never split: one that would not fit before the ring's end starts over. */
        if (pos % WORKER_KEEP_BYTES + len > WORKER_KEEP_BYTES)
                pos += WORKER_KEEP_BYTES - pos % WORKER_KEEP_BYTES;
        memcpy(wp->keep + pos % WORKER_KEEP_BYTES, m, len);
        slot = &wp->keep_slots[(size_t) p * WORKER_KEEP_SLOTS + counter % WORKER_KEEP_SLOTS];
        *slot = (KeepSlot) { .counter = counter, .pos = pos, .len = (uint32_t) len };
        wp->keep_pos = pos + len;
}

/* The plaintext of path p's datagram `counter`, if still kept. */
static const uint8_t *keep_find(const Worker *w, unsigned p, uint64_t counter, size_t *ret_len) {
        const WorkerPeer *wp = &w->peers[0];
        const KeepSlot *slot;

        if (p >= MPT_PATHS_MAX)
                return NULL;
        slot = &wp->keep_slots[(size_t) p * WORKER_KEEP_SLOTS + counter % WORKER_KEEP_SLOTS];
        /* Overwritten once the ring was written past a whole turn after it. */
        if (slot->counter != counter || slot->len == 0 || wp->keep_pos > slot->pos + WORKER_KEEP_BYTES)
                return NULL;
        *ret_len = slot->len;
        return wp->keep + slot->pos % WORKER_KEEP_BYTES;
}

/* Seals a frame or a kept plaintext (len bytes at m) on path q in this worker's lane and sends
 * it; returns its length on the wire, or 0 when it could not. */
size_t worker_repair_send(Worker *w, const Snapshot *s, unsigned q, const uint8_t *m, size_t len, uint8_t *out,
                          uint64_t *first, uint64_t *last) {
        WorkerPeer *wp = &w->peers[0];
        Tunnel *t = w->tunnel;
        const SnapshotPath *sp;
        size_t dl;
        int fd;

        if (q >= s->n_paths || q >= MPT_PATHS_MAX || (fd = s->paths[q].fds[w->id]) < 0 ||
            wp->tx_counter[q] >= UINT64_MAX - 1 || s->tx_keys.epoch == 0)
                return 0;
        sp = &s->paths[q];
        dl = mpt_secure_seal_from(out, m, len, &s->tx_keys, peer_tx_cipher(wp->peer), t->aes ? MPT_SECURE_FLAG_AES : 0,
                                  (MptSecureSender) { .path_id = (uint8_t) q, .lane = (uint8_t) w->id,
                                                      .counter = wp->tx_counter[q] });
        if (dl == 0)
                return 0;
        if (*first == 0)
                *first = wp->tx_counter[q];
        *last = wp->tx_counter[q]++;
        if (sendto(fd, out, dl, MSG_DONTWAIT, (const struct sockaddr *) &sp->remote, sp->remote_len) < 0) {
                COUNTER_ADD(wp->path_counters[q].drops[errno == EAGAIN || errno == ENOBUFS ? MPT_DROP_SEND_BUSY
                                                                                            : MPT_DROP_SEND_ERROR],
                            1);
                return 0;
        }
        COUNTER_ADD(wp->path_counters[q].tx_packets, 1);
        COUNTER_ADD(wp->path_counters[q].tx_bytes, dl);
        return dl;
}

/* The repair path now: the main thread's choice, if this snapshot has it. */
int worker_repair_path(const Worker *w, const Snapshot *s) {
        const WorkerPeer *wp = &w->peers[0];
        int q = __atomic_load_n(&wp->peer->repair_via, __ATOMIC_RELAXED);

        return q >= 0 && (unsigned) q < s->n_paths && s->paths[q].fds[w->id] >= 0 ? q : -1;
}

/* Sending side: the other end's requests, for the workers whose lanes they name. */
void worker_repair_request(Worker *w, const MptRepair *r) {
        Tunnel *t = w->tunnel;

        for (unsigned i = 0; i < r->n; i++) {
                const MptRepairEntry *e = &r->entries[i];
                WorkerPeer *tp;
                Worker *to;

                COUNTER_ADD(w->tunnel_counters.repair_requested, e->count);
                if (e->lane >= t->n_workers || !t->workers[e->lane]->peers[0].keep) {
                        COUNTER_ADD(w->tunnel_counters.repair_missed, e->count);
                        continue;
                }
                to = t->workers[e->lane];
                /* what that worker sent to the peer the requests came from (the one peer) */
                tp = &to->peers[0];
                pthread_mutex_lock(&tp->repair_lock);
                if (tp->repair_queued < WORKER_REPAIR_QUEUE) {
                        tp->repair_queue[tp->repair_queued] = *e;
                        __atomic_store_n(&tp->repair_queued, tp->repair_queued + 1, __ATOMIC_RELEASE);
                        e = NULL;
                }
                pthread_mutex_unlock(&tp->repair_lock);
                if (e)
                        COUNTER_ADD(w->tunnel_counters.repair_missed, r->entries[i].count);
                else if (to != w)
                        worker_wake(to);
        }
}

/* Sends again what the requests for this worker's lane ask for, sealed anew on the repair path. */
void worker_repair_serve(Worker *w, const Snapshot *s) {
        WorkerPeer *wp = &w->peers[0];
        MptRepairEntry q[WORKER_REPAIR_QUEUE];
        uint64_t first = 0, last = 0, paced_now = 0;
        unsigned n;
        int via;

        if (__atomic_load_n(&wp->repair_queued, __ATOMIC_ACQUIRE) == 0)
                return;
        pthread_mutex_lock(&wp->repair_lock);
        n = wp->repair_queued;
        memcpy(q, wp->repair_queue, n * sizeof q[0]);
        __atomic_store_n(&wp->repair_queued, 0, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&wp->repair_lock);

        via = worker_repair_path(w, s);
        if (__atomic_load_n(&wp->peer->pace_paths, __ATOMIC_RELAXED) != 0)
                paced_now = now_nsec();
        for (unsigned i = 0; i < n; i++)
                for (uint64_t c = q[i].first; c < q[i].first + q[i].count; c++) {
                        const uint8_t *m;
                        size_t len, dl = 0;

                        m = keep_find(w, q[i].path_id, c, &len);
                        if (m && via >= 0)
                                dl = worker_repair_send(w, s, (unsigned) via, m, len, w->tx_crypt, &first, &last);
                        if (dl == 0) {
                                COUNTER_ADD(w->tunnel_counters.repair_missed, 1);
                                continue;
                        }
                        COUNTER_ADD(w->tunnel_counters.repair_sent, 1);
                        if (paced_now != 0)
                                pace_charge(wp->peer, (unsigned) via, paced_now, dl);
                }
        if (first != 0)
                worker_tx_mark(w, (unsigned) via, first, last, now_usec());
}

/* Counters first..last of path p go out now. */
void worker_tx_mark(Worker *w, unsigned p, uint64_t first, uint64_t last, usec_t now) {
        WorkerPeer *wp = &w->peers[0];
        TxMark *m;

        if (!wp->tx_marks || p >= MPT_PATHS_MAX)
                return;
        m = &wp->tx_marks[(size_t) p * WORKER_TX_MARKS + wp->tx_mark_next[p]++ % WORKER_TX_MARKS];
        seq_write_begin(&m->seq);
        __atomic_store_n(&m->first, first, __ATOMIC_RELAXED);
        __atomic_store_n(&m->last, last, __ATOMIC_RELAXED);
        __atomic_store_n(&m->time, now, __ATOMIC_RELAXED);
        seq_write_end(&m->seq);
}

bool worker_tx_mark_find(const Worker *w, unsigned path, uint64_t counter, usec_t *ret_time, usec_t *ret_last) {
        const WorkerPeer *wp = &w->peers[0];
        bool found = false;

        *ret_last = 0;
        if (!wp->tx_marks || path >= MPT_PATHS_MAX)
                return false;
        for (unsigned i = 0; i < WORKER_TX_MARKS; i++) {
                const TxMark *m = &wp->tx_marks[(size_t) path * WORKER_TX_MARKS + i];
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
void worker_tun_pause(Worker *w, bool pause, uint64_t until) {
        struct epoll_event ev = { .events = pause ? 0 : EPOLLIN, .data.u64 = EV_TUN };

        if (pause != w->tun_paused && epoll_ctl(w->epoll_fd, EPOLL_CTL_MOD, w->tun_fd, &ev) < 0)
                return;
        w->tun_paused = pause;
        w->tun_resume = until;
}

/* The paced paths (of paced) more than PACE_BURST_NSEC ahead of their pace at now, and when the
 * first of those of the vector is no longer (*ret_until, unless NULL; 0 when none is ahead). */
static uint64_t pace_ahead(const Peer *peer, uint64_t paced, uint64_t vector_paths, uint64_t now, uint64_t *ret_until) {
        uint64_t ahead = 0, until = UINT64_MAX;

        for (uint64_t m = paced; m != 0; m &= m - 1) {
                unsigned p = (unsigned) __builtin_ctzll(m);
                uint64_t next = __atomic_load_n(&peer->pace_next[p], __ATOMIC_RELAXED);

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
static void pace_charge(Peer *peer, unsigned p, uint64_t now, size_t len) {
        uint64_t rate = __atomic_load_n(&peer->pace_rate[p], __ATOMIC_RELAXED), cost, old, next;

        if (rate == 0)
                return;
        cost = (uint64_t) len * UINT64_C(1000000000) / rate;
        old = __atomic_load_n(&peer->pace_next[p], __ATOMIC_RELAXED);
        do
                next = MIN(MAX(old, now) + cost, now + PACE_AHEAD_MAX_NSEC);
        while (!__atomic_compare_exchange_n(&peer->pace_next[p], &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* Sends path p's datagrams of this TUN packet in one sendmmsg(): as UDP GSO sends (at most
 * GSO_SEGMENTS_MAX datagrams each, or w->gso_queued on a path that queues locally), or datagram
 * by datagram when GSO is off or was refused. Returns nothing: failures are counted. */
static void send_path(Worker *w, const Snapshot *s, unsigned p, const struct iovec *iov, unsigned n_segs) {
        WorkerPeer *wp = &w->peers[0];
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
                unsigned gso_max = !gso ? 1u : wp->queued_now & UINT64_C(1) << p ? MAX(wp->gso_queued, 1u) : GSO_SEGMENTS_MAX;
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
                                COUNTER_ADD(wp->path_counters[p].drops[busy ? MPT_DROP_SEND_BUSY : MPT_DROP_SEND_ERROR],
                                            lost);
                                first += lost;
                                done = k;
                                continue;
                        }
                        for (unsigned j = done; j < done + (unsigned) r; j++) {
                                COUNTER_ADD(wp->path_counters[p].tx_packets, segs_of[j]);
                                COUNTER_ADD(wp->path_counters[p].tx_bytes, bytes_of[j]);
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
        WorkerPeer *wp = &w->peers[0];
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
                if (wp->tx_counter[p] > UINT64_MAX - 1 - (k - 1))
                        next[p] = UINT64_MAX;
                else {
                        next[p] = wp->tx_counter[p];
                        wp->tx_counter[p] += k;
                        worker_tx_mark(w, p, next[p], next[p] + k - 1, now);
                }
        }
        return peer_tx_cipher(wp->peer);
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
        WorkerPeer *wp = &w->peers[0];
        Tunnel *t = w->tunnel;
        struct iovec iov[2];

        if (t->secure) {
                size_t front = hl + sg->headers_len, dl;
                const uint8_t *m = sg->payload ? sg->payload - front : sg->headers - hl;
                uint64_t c = wp->tx_counter[p];

                if (!w->tx_copy) {
                        w->tx_copy = malloc(WORKER_BUFFER_SIZE + 2 * MPT_SECURE_OVERHEAD);
                        if (!w->tx_copy) {
                                COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_NO_MEMORY], 1);
                                return;
                        }
                }
                if (front + sg->payload_len > WORKER_BUFFER_SIZE || c >= UINT64_MAX - 1) {
                        COUNTER_ADD(wp->path_counters[p].drops[MPT_DROP_COUNTER_EXHAUSTED], 1);
                        return;
                }
                wp->tx_counter[p]++;
                worker_tx_mark(w, p, c, c, now_usec());
                dl = mpt_secure_seal_from(w->tx_copy, m, front + sg->payload_len, &s->tx_keys, cipher,
                                          t->aes ? MPT_SECURE_FLAG_AES : 0,
                                          (MptSecureSender) { .path_id = (uint8_t) p, .lane = (uint8_t) w->id,
                                                              .counter = c });
                if (dl == 0) {
                        COUNTER_ADD(wp->path_counters[p].drops[MPT_DROP_CIPHER_ERROR], 1);
                        return;
                }
                iov[0] = (struct iovec) { .iov_base = w->tx_copy, .iov_len = dl };
                iov[1] = (struct iovec) {};
        } else {
                iov[0] = (struct iovec) { .iov_base = sg->headers - hl, .iov_len = hl + sg->headers_len };
                iov[1] = (struct iovec) { .iov_base = (void *) sg->payload, .iov_len = sg->payload_len };
        }
        send_path(w, s, p, iov, 1);
        worker_policy_count(w, (size_t) rule, WORKER_POLICY_COPIES);
}

static void transmit_segments(Worker *w, const Snapshot *s, int n, uint32_t flow, const PolicyChoice *pc) {
        WorkerPeer *wp = &w->peers[0];
        int forced = pc->path;
        Tunnel *t = w->tunnel;
        uint32_t seq = 0;
        size_t crypt_used = 0;
        uint64_t next[MPT_PATHS_MAX], pending = 0, paced_now = 0;
        bool last[OFFLOAD_SEGMENTS_MAX];
        MptCipher cipher = _MPT_CIPHER_INVALID;

        if (s->sequence && t->secure) {
                seq = wp->tx_seq;
                wp->tx_seq += (uint32_t) n;
        } else if (s->sequence)
                seq = (uint32_t) __atomic_fetch_add(&wp->peer->tx_seq, (uint64_t) n, __ATOMIC_RELAXED);
        __atomic_store_n(&w->tx_segments, w->tx_segments + (uint64_t) n, __ATOMIC_RELAXED);
        if (forced >= 0)
                for (int i = 0; i < n; i++)
                        w->seg_path[i] = (uint16_t) forced;
        else if (s->scheduler == MPT_SCHEDULER_FLOW)
                for (int i = 0; i < n; i++)
                        w->seg_path[i] = (uint16_t) s->vector[flow % s->vector_len];
        else {
                /* Paths ahead of their pace get no run now: the vector's next path does. */
                uint64_t paced = __atomic_load_n(&wp->peer->pace_paths, __ATOMIC_RELAXED) & wp->vector_paths, skip = 0;

                if (paced != 0) {
                        paced_now = now_nsec();
                        skip = pace_ahead(wp->peer, paced, wp->vector_paths, paced_now, NULL);
                }
                sched_assign_runs_skip(&wp->runs, s->vector, s->vector_len,
                                       dataplane_options.batch > 1 ? wp->quantum : 1, (size_t) n, skip, w->seg_path);
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
                                COUNTER_ADD(wp->path_counters[p].drops[MPT_DROP_COUNTER_EXHAUSTED], 1);
                        else {
                                if (wp->keep)
                                        keep_store(w, p, next[p], m, front + sg->payload_len);
                                dl = mpt_secure_seal_from(d, m, front + sg->payload_len, &s->tx_keys, cipher,
                                                          t->aes ? MPT_SECURE_FLAG_AES : 0,
                                                          (MptSecureSender) { .path_id = (uint8_t) p,
                                                                              .lane = (uint8_t) w->id,
                                                                              .counter = next[p]++ });
                                if (dl == 0)
                                        COUNTER_ADD(wp->path_counters[p].drops[MPT_DROP_CIPHER_ERROR], 1);
                                else {
                                        crypt_used += dl;
                                        iov[0] = (struct iovec) { .iov_base = d, .iov_len = dl };
                                        iov[1] = (struct iovec) {};
                                        w->path_segs[p]++;
                                        if (paced_now != 0)
                                                pace_charge(wp->peer, p, paced_now, dl);
                                }
                        }
                } else {
                        iov[0] = (struct iovec) { .iov_base = sg->headers - hl, .iov_len = hl + sg->headers_len };
                        iov[1] = (struct iovec) { .iov_base = (void *) sg->payload, .iov_len = sg->payload_len };
                        w->path_segs[p]++;
                        if (paced_now != 0)
                                pace_charge(wp->peer, p, paced_now, iov[0].iov_len + iov[1].iov_len);
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
                i = worker_policy_rule(s, pkt, len);
        if (i < 0 || (size_t) i >= s->n_policy) { /* (a held packet's rule, before a reload) */
                worker_policy_count(w, POLICY_CLASS_OTHER, WORKER_POLICY_HITS);
                worker_policy_wait(w, POLICY_CLASS_OTHER, waited);
                return pc;
        }
        pc.rule = i;
        worker_policy_count(w, (size_t) i, WORKER_POLICY_HITS);
        worker_policy_wait(w, (size_t) i, waited);
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
        WorkerPeer *wp = &w->peers[0];
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
                rx_lock(&wp->peer->tx_lock, &w->contention); /* (counts a wait, as for the receive locks) */
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
                pthread_mutex_unlock(&wp->peer->tx_lock);
}

/* Whether path p's datagrams of this worker wait in a local queue (a qdisc or the driver): the
 * socket's unsent bytes, sampled once per rate interval. A path counts as queueing for
 * SCHED_QUEUED_HOLD_USEC after it was last seen so (see SCHED_GSO_TIME_USEC). Returns whether
 * any path of the snapshot does. */
static bool path_queued(const Worker *w, unsigned p, usec_t now) {
        const WorkerPeer *wp = &w->peers[0];
        usec_t at = __atomic_load_n(&wp->path_queued_at[p], __ATOMIC_RELAXED);
        return at > 0 && now < at + SCHED_QUEUED_HOLD_USEC;
}

bool worker_path_queued(const Worker *w, unsigned p) {
        return p < MPT_PATHS_MAX && path_queued(w, p, now_usec());
}

static bool sample_queues(Worker *w, const Snapshot *s, usec_t now) {
        WorkerPeer *wp = &w->peers[0];
        uint64_t queued = 0;
        bool any = false;

        static_assert(MPT_PATHS_MAX <= 64, "a path is one bit of a uint64_t");
        for (unsigned p = 0; p < s->n_paths && p < MPT_PATHS_MAX; p++) {
                int fd = s->paths[p].fds[w->id], q = 0;
                /* Atomic: mptctl show reads it (worker_path_queued()). */
                if (fd >= 0 && ioctl(fd, SIOCOUTQ, &q) == 0 && q > 0)
                        __atomic_store_n(&wp->path_queued_at[p], now, __ATOMIC_RELAXED);
                if (path_queued(w, p, now)) {
                        queued |= UINT64_C(1) << p;
                        any = true;
                }
        }
        wp->queued_now = queued;
        return any;
}

/* The adaptive quantum: from the tunnel's send rate over the last interval (all workers: paths
 * carry the runs of every worker). An idle interval measures a low rate and gives the floor. */
static void update_quantum(Worker *w, const Snapshot *s) {
        WorkerPeer *wp = &w->peers[0];
        Tunnel *t = w->tunnel;
        usec_t now;
        uint64_t segments;

        now = now_usec();
        if (now < wp->rate_since + SCHED_RATE_INTERVAL_USEC)
                return;
        segments = tunnel_tx_segments(t);
        if (wp->rate_since > 0) {
                /* Paths that queue locally: a run there waits in the queue as a whole, and the
                 * next path's run is held at the receiver meanwhile, so the quantum stays at
                 * its floor (SCHED_QUANTUM_FLOOR segments: a fraction of a millisecond on a fast
                 * path; a larger run holds the other paths' packets at the receiver for as long
                 * as it waits), and below it when the whole tunnel is slow (see
                 * sched_queued_quantum()). Only a tunnel whose paths queue nothing (fast,
                 * unshaped) grows it, for fewer and larger sends. */
                bool queued = sample_queues(w, s, now);

                if (!dataplane_options.quantum_fixed)
                        wp->quantum = queued ? sched_queued_quantum(segments - wp->rate_segments, now - wp->rate_since,
                                                                   dataplane_options.quantum)
                                            : sched_adaptive_quantum(segments - wp->rate_segments,
                                                                     now - wp->rate_since, s->vector_len, wp->min_slots,
                                                                     dataplane_options.quantum, SCHED_QUANTUM_CEIL, true);
                wp->gso_queued = sched_adaptive_count(segments - wp->rate_segments, now - wp->rate_since,
                                                     s->vector_len, wp->min_slots, SCHED_GSO_TIME_USEC, 1,
                                                     GSO_SEGMENTS_MAX);
        }
        wp->rate_since = now;
        wp->rate_segments = segments;
}

/* Whether the paths with more than half the vector's slots are ahead of their pace (and until
 * when, *ret_until): the vector's packets wait until one of them is due again. Fewer are passed
 * over (transmit_segments()): a path with a small share, or one whose pace is slow for the slots
 * it has (a vector has at least one slot per path), must not hold back the others. */
static bool tx_behind_pace(const Worker *w, const Snapshot *s, uint64_t paced, uint64_t now, uint64_t *ret_until) {
        const WorkerPeer *wp = &w->peers[0];
        uint64_t until, ahead;
        size_t slots = 0;

        if (paced == 0)
                return false;
        ahead = pace_ahead(wp->peer, paced, wp->vector_paths, now, &until);
        for (uint64_t m = ahead; m != 0; m &= m - 1)
                slots += wp->vector_slots[__builtin_ctzll(m)];
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

void worker_tx(Worker *w, const Snapshot *s) {
        WorkerPeer *wp = &w->peers[0];
        /* Headroom in front: a packet that is not split gets its GRE header right before it. */
        uint8_t *buf = w->tx_buffer + WORKER_HEADROOM;
        uint64_t paced = __atomic_load_n(&wp->peer->pace_paths, __ATOMIC_RELAXED) & wp->vector_paths;
        size_t inner = w->tunnel->tun.vnet_hdr ? VNET_HDR_LEN : 0;

        update_quantum(w, s);
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
                        worker_tun_pause(w, true, until);
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
                                wp->runs.active = false;
                        break;
                }
                if (k == 0)
                        break;
                if (behind || !hold_empty(&w->hold)) {
                        if ((size_t) k > inner)
                                rule = worker_policy_rule(s, buf + inner, (size_t) k - inner);
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
