/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>

#include "worker.h"

#define EV_TUN UINT64_C(0xffffffff)
#define EV_WAKE UINT64_C(0xfffffffe)

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
        /* Spread the workers over the sending vector so they do not all start on path 0. */
        w->cursor = id * 7919u;

        w->rx_buffer = malloc(WORKER_BUFFER_SIZE);
        w->tx_buffer = malloc(WORKER_BUFFER_SIZE + WORKER_HEADROOM);
        if (!w->rx_buffer || !w->tx_buffer)
                goto oom;
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
        free(w->tx_buffer);
        return mfree(w);
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
        __atomic_store_n(&w->seen_generation, s->generation, __ATOMIC_RELEASE);
}

/* Received packets go in through the queue their flow hashes to. The kernel sends a flow's
 * outgoing packets through the queue its incoming ones last came in by, so every flow stays
 * with one worker, which numbers its packets in order. (Writing through the worker's own queue
 * would move a flow between workers with every acknowledgement that arrives on another path.) */
static void tun_deliver(void *userdata, const uint8_t *pkt, size_t len) {
        Worker *w = userdata;

        if (write(tunnel_tun_fd_for(w->tunnel, pkt, len), pkt, len) < 0)
                COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_TUN_WRITE], 1);
}

static void reorder_publish_deadline(Tunnel *t) {
        __atomic_store_n(&t->reorder_deadline, reorder_deadline(t->reorder), __ATOMIC_RELEASE);
}

static void handle_data(Worker *w, unsigned path, const MptFrame *f, usec_t arrival) {
        Tunnel *t = w->tunnel;
        int reason;

        if (!t->reorder_enabled || !f->has_seq) {
                tun_deliver(w, f->payload, f->payload_len);
                return;
        }
        pthread_mutex_lock(&t->reorder_lock);
        reason = reorder_insert(t->reorder, f->seq, path, f->payload, f->payload_len, arrival, tun_deliver, w);
        reorder_publish_deadline(t);
        pthread_mutex_unlock(&t->reorder_lock);
        if (reason >= 0)
                COUNTER_ADD(w->path_counters[path].drops[reason], 1);
        else if (reason < -1)
                COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_NO_MEMORY], 1);
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

static void report_endpoint(Worker *w, unsigned path, const MptSockaddr *src, uint32_t token) {
        ControlEvent ev = {
                .kind = CONTROL_EVENT_ENDPOINT,
                .path = path,
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

static void worker_rx(Worker *w, const Snapshot *s, unsigned path) {
        int fd = w->registered[path];
        int64_t offset = clock_offset();
        usec_t latest = now_usec();

        for (unsigned n = 0; n < WORKER_BATCH; n++) {
                MptSockaddr src = {};
                struct iovec iov = { .iov_base = w->rx_buffer, .iov_len = WORKER_BUFFER_SIZE };
                union {
                        struct cmsghdr align;
                        uint8_t buf[CMSG_SPACE(sizeof(struct timespec))];
                } control;
                struct msghdr mh = {
                        .msg_name = &src,
                        .msg_namelen = sizeof src,
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = &control,
                        .msg_controllen = sizeof control,
                };
                MptAddress src_addr;
                uint16_t src_port;
                bool new_endpoint;
                MptFrame f;
                usec_t now;
                ssize_t k;
                int p, reason;

                k = recvmsg(fd, &mh, MSG_DONTWAIT);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        break; /* EAGAIN, or an ICMP error report we have no use for */
                }
                /* Never later than the moment we read it (clock adjustments). */
                now = MIN(arrival_time(&mh, offset), latest);
                if (mh.msg_flags & MSG_TRUNC) {
                        COUNTER_ADD(w->path_counters[path].drops[MPT_DROP_TRUNCATED], 1);
                        continue;
                }
                if (sockaddr_to_address(&src, &src_addr, &src_port) < 0 ||
                    (p = demux(s, path, &src_addr, src_port, &new_endpoint)) == RX_UNKNOWN) {
                        COUNTER_ADD(w->path_counters[path].drops[MPT_DROP_UNKNOWN_SOURCE], 1);
                        continue;
                }
                reason = mpt_frame_decode(w->rx_buffer, (size_t) k, &f);
                if (reason >= 0) {
                        COUNTER_ADD(w->path_counters[p >= 0 ? (unsigned) p : path].drops[reason], 1);
                        continue;
                }

                if (f.kind == MPT_FRAME_KEEPALIVE) {
                        ControlEvent ev = { .kind = CONTROL_EVENT_KEEPALIVE, .source = src };
                        unsigned counted = p >= 0 ? (unsigned) p : path;
                        reason = mpt_keepalive_decode(&f, &ev.ka);
                        if (reason >= 0) {
                                COUNTER_ADD(w->path_counters[counted].drops[reason], 1);
                                continue;
                        }
                        if (p == RX_BY_TOKEN && !ev.ka.extended) {
                                COUNTER_ADD(w->path_counters[path].drops[MPT_DROP_UNKNOWN_SOURCE], 1);
                                continue;
                        }
                        /* Learn first, so that the keepalive finds the new endpoint in place. */
                        if (new_endpoint || p == RX_BY_TOKEN)
                                report_endpoint(w, p >= 0 ? (unsigned) p : UINT_MAX, &src, ev.ka.path_token);
                        ev.path = p >= 0 ? (unsigned) p : UINT_MAX;
                        ev.when = now; /* arrival: keeps RTT samples free of our own delays */
                        COUNTER_ADD(w->path_counters[counted].keepalives_rx, 1);
                        tunnel_queue_event(w->tunnel, &ev);
                        continue;
                }
                if (p == RX_BY_TOKEN) {
                        /* Data from a new source on a shared socket: wait for its keepalive. */
                        COUNTER_ADD(w->path_counters[path].drops[MPT_DROP_UNKNOWN_SOURCE], 1);
                        continue;
                }
                if (new_endpoint)
                        report_endpoint(w, (unsigned) p, &src, 0);
                if (f.kind == MPT_FRAME_PATH_STATUS) {
                        ControlEvent ev = { .kind = CONTROL_EVENT_PATH_STATUS, .path = (unsigned) p, .source = src };
                        reason = mpt_path_status_decode(&f, &ev.ps);
                        if (reason >= 0) {
                                COUNTER_ADD(w->path_counters[p].drops[reason], 1);
                                continue;
                        }
                        ev.when = now_usec();
                        tunnel_queue_event(w->tunnel, &ev);
                        continue;
                }
                COUNTER_ADD(w->path_counters[p].rx_packets, 1);
                COUNTER_ADD(w->path_counters[p].rx_bytes, (uint64_t) k);
                handle_data(w, (unsigned) p, &f, now);
        }
}

static void worker_tx(Worker *w, const Snapshot *s) {
        Tunnel *t = w->tunnel;
        uint8_t *pkt = w->tx_buffer + WORKER_HEADROOM;

        for (unsigned n = 0; n < WORKER_BATCH; n++) {
                const SnapshotPath *sp;
                uint16_t proto;
                uint32_t seq = 0;
                unsigned p;
                size_t hl;
                ssize_t k, k2;

                k = read(w->tun_fd, pkt, WORKER_BUFFER_SIZE);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EBADFD)
                                /* The device was deleted: the queue stays readable-with-error
                                 * forever. Stop polling it; the main thread shuts down. */
                                (void) epoll_ctl(w->epoll_fd, EPOLL_CTL_DEL, w->tun_fd, NULL);
                        break;
                }
                if (k == 0)
                        break;
                proto = mpt_inner_protocol(pkt, (size_t) k);
                if (proto == 0) {
                        COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_TUN_MALFORMED], 1);
                        continue;
                }
                if (s->vector_len == 0) {
                        COUNTER_ADD(w->tunnel_counters.drops[MPT_DROP_NO_PATH], 1);
                        continue;
                }
                if (s->scheduler == MPT_SCHEDULER_FLOW)
                        p = s->vector[sched_flow_hash(pkt, (size_t) k) % s->vector_len];
                else
                        p = s->vector[w->cursor++ % s->vector_len];
                sp = &s->paths[p];
                /* Each path must carry its packets in sequence order (the receiver infers loss
                 * from it): number and send under the path's lock when workers share it. */
                if (s->sequence && t->n_workers > 1)
                        pthread_mutex_lock(&t->send_lock[p]);
                if (s->sequence)
                        seq = (uint32_t) __atomic_fetch_add(&t->tx_seq, 1, __ATOMIC_RELAXED);
                hl = mpt_gre_encode(pkt, proto, s->sequence, seq);
                k2 = sendto(sp->fds[w->id], pkt - hl, (size_t) k + hl, MSG_DONTWAIT, &sp->remote.sa, sp->remote_len);
                if (s->sequence && t->n_workers > 1)
                        pthread_mutex_unlock(&t->send_lock[p]);
                if (k2 < 0) {
                        COUNTER_ADD(w->path_counters[p].drops[errno == EAGAIN || errno == ENOBUFS
                                                                      ? MPT_DROP_SEND_BUSY
                                                                      : MPT_DROP_SEND_ERROR],
                                    1);
                        continue;
                }
                COUNTER_ADD(w->path_counters[p].tx_packets, 1);
                COUNTER_ADD(w->path_counters[p].tx_bytes, (uint64_t) k + hl);
        }
}

static int timeout_ms(Tunnel *t) {
        usec_t deadline, now;

        if (!t->reorder_enabled)
                return -1;
        deadline = __atomic_load_n(&t->reorder_deadline, __ATOMIC_ACQUIRE);
        if (deadline == USEC_INFINITY)
                return -1;
        now = now_usec();
        if (deadline <= now)
                return 0;
        return (int) MIN(DIV_ROUND_UP(deadline - now, USEC_PER_MSEC), (usec_t) 60000);
}

static void expire_reorder(Worker *w) {
        Tunnel *t = w->tunnel;
        usec_t now;

        if (!t->reorder_enabled)
                return;
        now = now_usec();
        if (__atomic_load_n(&t->reorder_deadline, __ATOMIC_ACQUIRE) > now)
                return;
        pthread_mutex_lock(&t->reorder_lock);
        reorder_expire(t->reorder, now, tun_deliver, w);
        reorder_publish_deadline(t);
        pthread_mutex_unlock(&t->reorder_lock);
}

static void *worker_main(void *userdata) {
        Worker *w = userdata;
        Tunnel *t = w->tunnel;
        struct epoll_event events[MPT_PATHS_MAX + 2];
        sigset_t all;

        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);

        while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
                const Snapshot *s;
                int n;

                n = epoll_wait(w->epoll_fd, events, (int) ELEMENTSOF(events), timeout_ms(t));
                if (n < 0 && errno != EINTR)
                        break;

                /* Pick up the newest snapshot; announcing its generation tells the main thread that
                 * older ones (and the sockets they name) are no longer used here (see tunnel.h). */
                s = __atomic_load_n(&t->snapshot, __ATOMIC_ACQUIRE);
                if (s->generation != w->seen_generation)
                        reconcile(w, s);

                for (int i = 0; i < n; i++) {
                        uint64_t tag = events[i].data.u64;
                        if (tag == EV_WAKE) {
                                uint64_t v;
                                (void) !read(w->wake_fd, &v, sizeof v);
                        } else if (tag == EV_TUN)
                                worker_tx(w, s);
                        else if (tag < s->n_paths && w->registered[tag] >= 0)
                                worker_rx(w, s, (unsigned) tag);
                }
                expire_reorder(w);
        }
        return NULL;
}

int worker_start(Worker *w) {
        char name[16];
        int r;

        r = pthread_create(&w->thread, NULL, worker_main, w);
        if (r != 0)
                return -r;
        w->started = true;
        snprintf(name, sizeof name, "mptd-w%u", w->id);
        (void) pthread_setname_np(w->thread, name);
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
