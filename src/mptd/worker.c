/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A worker thread: its state, its loop, starting and stopping it (the way out is send.c, the way
 * in receive.c; worker-internal.h). */

#include "worker-internal.h"

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
        for (unsigned i = 0; i < MPT_PATHS_MAX; i++)
                w->registered[i] = -1;
        w->peers = calloc(t->n_peers, sizeof(WorkerPeer));
        if (!w->peers)
                goto oom;
        w->n_peers = t->n_peers;
        for (size_t k = 0; k < w->n_peers; k++) {
                WorkerPeer *wp = &w->peers[k];

                wp->peer = t->peers[k];
                for (unsigned i = 0; i < MPT_PATHS_MAX; i++)
                        wp->rx_turn[i] = 1;
                /* Secure mode: this worker's lane starts its sequence space at a random point (see
                 * tunnel_new()), and its counters at 1. */
                (void) !getrandom(&wp->tx_seq, sizeof wp->tx_seq, 0);
                for (unsigned i = 0; i < MPT_PATHS_MAX; i++)
                        wp->tx_counter[i] = 1;
                /* Spread the workers over the sending vector so they do not all start on path 0. */
                wp->runs.cursor = id * 7919u;
                wp->quantum = dataplane_options.quantum;
                wp->gso_queued = GSO_SEGMENTS_MAX;
        }

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
        for (size_t k = 0; k < w->n_peers; k++) {
                WorkerPeer *wp = &w->peers[k];
                unsigned receivers = t->rx_workers > 0 ? t->rx_workers : t->n_workers;

                if (!wp->peer->reorder_enabled)
                        continue;
                /* The lanes are spread over the receiving workers for their expiry. */
                for (unsigned l = 0; l < RX_SHARED_LANES && id < receivers; l++)
                        if (l % receivers == id)
                                wp->expire_lanes |= UINT64_C(1) << l;
                if (w->pending)
                        continue;
                w->pending = calloc(WORKER_PENDING_MAX, sizeof(RxPending));
                if (!w->pending)
                        goto oom;
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
        for (size_t k = 0; k < w->n_peers; k++) {
                WorkerPeer *wp = &w->peers[k];

                if (!wp->peer->repair)
                        continue;
                /* Touched only as far as used. */
                wp->keep = malloc(WORKER_KEEP_BYTES);
                /* For every path number: a reload may add paths (calloc: untouched pages cost
                 * no memory). */
                wp->keep_slots = calloc((size_t) MPT_PATHS_MAX * WORKER_KEEP_SLOTS, sizeof(KeepSlot));
                if (!wp->keep || !wp->keep_slots)
                        goto oom;
                pthread_mutex_init(&wp->repair_lock, NULL);
                wp->repair_lock_init = true;
        }
        if (t->secure) {
                w->tx_crypt = malloc(WORKER_CRYPT_SIZE);
                if (!w->tx_crypt)
                        goto oom;
                for (size_t k = 0; k < w->n_peers; k++) {
                        w->peers[k].tx_marks = calloc((size_t) MPT_PATHS_MAX * WORKER_TX_MARKS, sizeof(TxMark));
                        if (!w->peers[k].tx_marks)
                                goto oom;
                }
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
        for (size_t k = 0; k < w->n_peers; k++) {
                WorkerPeer *wp = &w->peers[k];

                free(wp->tx_marks);
                free(wp->keep);
                free(wp->keep_slots);
                if (wp->repair_lock_init)
                        pthread_mutex_destroy(&wp->repair_lock);
                mpt_secure_keys_wipe(&wp->rx_keys);
                mpt_secure_keys_wipe(&wp->rx_try_keys);
        }
        free(w->peers);
        free(w->pending);
        free(w->pool_released);
        free(w->pool_released_list);
        return mfree(w);
}

void worker_wake(Worker *w) {
        uint64_t one = 1;
        (void) !write(w->wake_fd, &one, sizeof one);
}

static void reconcile(Worker *w, const Snapshot *s) {
        WorkerPeer *wp = &w->peers[0];
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
        sched_runs_reset(&wp->runs);
        wp->min_slots = sched_vector_min_slots(s->vector, s->vector_len);
        wp->vector_paths = 0;
        memset(wp->vector_slots, 0, sizeof wp->vector_slots);
        for (size_t i = 0; i < s->vector_len; i++) {
                wp->vector_paths |= UINT64_C(1) << s->vector[i];
                wp->vector_slots[s->vector[i]]++;
        }
        __atomic_store_n(&w->seen_generation, s->generation, __ATOMIC_RELEASE);
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
void worker_update_quiet(Worker *w) {
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

/* Policy=: counts one for class `class` (a rule's index or POLICY_CLASS_OTHER; read by mptctl
 * show while this worker alone writes). */
void worker_policy_count(Worker *w, size_t class, WorkerPolicyCounter c) {
        __atomic_store_n(&w->policy[class][c], w->policy[class][c] + 1, __ATOMIC_RELAXED);
}

/* Policy=: a packet of class `class` waited this long (ns) in the hold queue (0: not held). */
void worker_policy_wait(Worker *w, size_t class, uint64_t waited) {
        int64_t avg = (int64_t) w->policy[class][WORKER_POLICY_WAIT_NSEC];

        __atomic_store_n(&w->policy[class][WORKER_POLICY_WAIT_NSEC], (uint64_t) (avg + ((int64_t) waited - avg) / 16),
                         __ATOMIC_RELAXED);
}

/* The earliest deadline of the lanes this worker expires. */
static usec_t expire_deadline(const Worker *w) {
        const WorkerPeer *wp = &w->peers[0];
        usec_t deadline = USEC_INFINITY;

        for (uint64_t m = rx_shared_lanes(wp->peer->rx) & wp->expire_lanes; m != 0; m &= m - 1)
                deadline = MIN(deadline, rx_lane_deadline(rx_shared_lane_get(wp->peer->rx,
                                                                             (unsigned) __builtin_ctzll(m))));
        return deadline;
}

static int timeout_ms(const Worker *w) {
        const WorkerPeer *wp = &w->peers[0];
        usec_t deadline = USEC_INFINITY, now;

        if (wp->peer->reorder_enabled)
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

static void *worker_main(void *userdata) {
        Worker *w = userdata;
        WorkerPeer *wp = &w->peers[0];
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
                s = __atomic_load_n(&wp->peer->snapshot, __ATOMIC_ACQUIRE);
                if (s->generation != w->seen_generation)
                        reconcile(w, s);

                worker_update_quiet(w);
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
                if (wp->keep)
                        worker_repair_serve(w, s);
                worker_expire_reorder(w);
                if (w->tun_paused && now_nsec() >= w->tun_resume) {
                        worker_tun_pause(w, false, 0);
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
