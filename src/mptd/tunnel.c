/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <sys/eventfd.h>
#include <sys/random.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "feedback.h"
#include "log.h"
#include "offload.h"
#include "session.h"
#include "tunnel.h"
#include "worker.h"

static const char *const path_state_table[_PATH_STATE_MAX] = {
        [PATH_STATE_UP] = "up",
        [PATH_STATE_DEAD] = "dead",
        [PATH_STATE_PEER_DOWN] = "peer-down",
        [PATH_STATE_ADMIN_DOWN] = "admin-down",
        [PATH_STATE_NO_INTERFACE] = "no-interface",
        [PATH_STATE_LINK_DOWN] = "link-down",
        [PATH_STATE_NO_ADDRESS] = "no-address",
        [PATH_STATE_NO_ROUTE] = "no-route",
        [PATH_STATE_PROBING] = "probing",
        [PATH_STATE_LISTENING] = "listening",
};
DEFINE_STRING_TABLE(path_state, PathState, _PATH_STATE_MAX);

usec_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / NSEC_PER_USEC;
}

uint64_t now_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

static uint64_t now_realtime_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

MptCipher peer_tx_cipher(const Peer *peer) {
        return peer->tunnel->aes && mpt_secure_rx_peer_aes(peer->rx->secure) ? MPT_CIPHER_AES256_GCM
                                                                             : MPT_CIPHER_CHACHA20_POLY1305;
}

int peer_seal(Peer *peer, unsigned path, uint8_t *buf, size_t len, size_t *ret_len) {
        Tunnel *t = peer->tunnel;
        uint64_t counter;

        assert(path < MPT_PATHS_MAX);
        const MptSecureKeys *keys = peer->hs ? session_tx_keys(peer) : &peer->tx_keys;

        if (!keys)
                return MPT_DROP_NO_SESSION;
        if (mpt_secure_reserve(&peer->tx_counter[path], 1, &counter) < 0)
                return MPT_DROP_COUNTER_EXHAUSTED;
        if (peer->hs)
                session_sent(peer);
        *ret_len = mpt_secure_seal(buf, len, keys, peer_tx_cipher(peer), t->aes ? MPT_SECURE_FLAG_AES : 0,
                                   (MptSecureSender) {
                                           .path_id = (uint8_t) path,
                                           .lane = MPT_SECURE_LANE_CONTROL,
                                           .counter = counter,
                                   });
        return *ret_len == 0 ? MPT_DROP_CIPHER_ERROR : -1;
}

Path *tunnel_find_path(Tunnel *t, const char *name) {
        Peer *peer = t->peers[0];

        for (size_t i = 0; i < peer->n_paths; i++)
                if (streq(peer->paths[i]->name, name))
                        return peer->paths[i];
        return NULL;
}

static const char *const path_weight_source_table[_PATH_WEIGHT_SOURCE_MAX] = {
        [PATH_WEIGHT_RUNTIME] = "runtime",
        [PATH_WEIGHT_PROFILE] = "profile",
        [PATH_WEIGHT_PEER] = "peer",
        [PATH_WEIGHT_DEFAULT] = "default",
};
DEFINE_STRING_TABLE(path_weight_source, PathWeightSource, _PATH_WEIGHT_SOURCE_MAX);

PathWeightSource path_weight_source(const Path *p) {
        if (p->weight_runtime_set)
                return PATH_WEIGHT_RUNTIME;
        if (path_config_is_set(p->config, MPT_KEY_PATH_WEIGHT))
                return PATH_WEIGHT_PROFILE;
        if (p->peer_receive_weight > 0)
                return PATH_WEIGHT_PEER;
        return PATH_WEIGHT_DEFAULT;
}

uint32_t path_effective_weight(const Path *p) {
        switch (path_weight_source(p)) {
        case PATH_WEIGHT_RUNTIME:
                return p->weight_runtime;
        case PATH_WEIGHT_PEER:
                return p->peer_receive_weight;
        default:
                return p->config->weight;
        }
}

bool path_is_backup(const Path *p) {
        /* Backup=yes holds whatever the weight; a weight of 0 (from anywhere) makes a backup; the
         * device-class default applies while nobody chose a weight; too much loss demotes. */
        if (p->demoted || path_effective_weight(p) == 0)
                return true;
        if (p->weight_runtime_set && !path_config_is_set(p->config, MPT_KEY_PATH_BACKUP))
                return false;
        return path_config_is_backup(p->config, p->devclass);
}

static Snapshot *snapshot_free(Snapshot *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_close_fds; i++)
                safe_close(s->close_fds[i]);
        free(s->close_fds);
        free(s->policy);
        explicit_bzero(s, sizeof(Snapshot));
        return mfree(s);
}

static bool workers_have_seen(Tunnel *t, uint64_t generation) {
        for (unsigned i = 0; i < t->n_workers; i++)
                if (t->workers[i]->started &&
                    __atomic_load_n(&t->workers[i]->seen_generation, __ATOMIC_ACQUIRE) < generation)
                        return false;
        return true;
}

void tunnel_reclaim(Tunnel *t) {
        Snapshot **s = &t->retired;
        uint64_t current = __atomic_load_n(&t->generation, __ATOMIC_ACQUIRE);

        /* A retired snapshot is safe to free once every worker uses a newer one. */
        if (!workers_have_seen(t, current)) {
                /* Check the older ones individually: they may be done even if the newest is not. */
                while (*s) {
                        Snapshot *x = *s;
                        if (workers_have_seen(t, x->generation + 1)) {
                                *s = x->retired_next;
                                snapshot_free(x);
                        } else
                                s = &x->retired_next;
                }
        } else
                while (*s) {
                        Snapshot *x = *s;
                        *s = x->retired_next;
                        snapshot_free(x);
                }

        if (t->reclaim_timer)
                (void) sd_event_source_set_enabled(t->reclaim_timer, t->retired ? SD_EVENT_ON : SD_EVENT_OFF);
}

/* How often retired snapshots are looked at again while some wait to be freed: a worker announces
 * a newer generation at the top of its next loop, within a wake or a batch, so a few milliseconds
 * free most at the first look without the timer firing for nothing. */
#define RECLAIM_INTERVAL_USEC (10 * USEC_PER_MSEC)

static int on_reclaim_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Tunnel *t = userdata;

        tunnel_reclaim(t);
        if (t->retired) {
                (void) sd_event_source_set_time_relative(s, RECLAIM_INTERVAL_USEC);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        return 0;
}

/* The paths that are up, normal ones first, each group by smoothed round-trip time (unknown
 * last): what lowest-latency rules take the first of and redundant rules their copies from.
 * Returns how many. */
static unsigned paths_by_rtt(Peer *peer, uint8_t out[static MPT_PATHS_MAX]) {
        unsigned n = 0;

        for (int pass = 0; pass < 2; pass++) {
                unsigned first = n;
                for (size_t i = 0; i < peer->n_paths && i < MPT_PATHS_MAX; i++) {
                        Path *p = peer->paths[i];
                        unsigned j;
                        if (p->state != PATH_STATE_UP || path_is_backup(p) != (pass == 1))
                                continue;
                        /* Insertion: after those that are faster (or as fast). */
                        for (j = n; j > first; j--) {
                                usec_t o = peer->paths[out[j - 1]]->rtt;
                                if (p->rtt != 0 && (o == 0 || o > p->rtt))
                                        out[j] = out[j - 1];
                                else
                                        break;
                        }
                        out[j] = (uint8_t) i;
                        n++;
                }
        }
        return n;
}

/* The path for lowest-latency rules: the first of paths_by_rtt() (order, n); the current one
 * stays while it is up, of the same kind, unless the other is faster by MPT_POLICY_HYSTERESIS_USEC
 * and _PERCENT. -1: none is up. */
static int fastest_path(Peer *peer, const uint8_t *order, unsigned n) {
        int cur = peer->fastest;
        Path *c, *b;

        if (n == 0)
                return -1;
        if (cur < 0 || (size_t) cur >= peer->n_paths || cur == order[0])
                return order[0];
        c = peer->paths[cur];
        b = peer->paths[order[0]];
        if (c->state != PATH_STATE_UP || path_is_backup(c) != path_is_backup(b) || c->rtt == 0)
                return order[0];
        if (b->rtt + MPT_POLICY_HYSTERESIS_USEC <= c->rtt &&
            b->rtt * 100 <= c->rtt * (100 - MPT_POLICY_HYSTERESIS_PERCENT))
                return order[0];
        return cur;
}

/* The most copies a redundant rule of the profile asks for (0: no such rule). */
static unsigned copies_max(const Tunnel *t) {
        unsigned k = 0;

        for (size_t i = 0; i < t->profile->tunnel.policy.n; i++)
                if (t->profile->tunnel.policy.items[i].mode == MPT_POLICY_REDUNDANT)
                        k = MAX(k, (unsigned) t->profile->tunnel.policy.items[i].copies);
        return k;
}

void peer_rtt_changed(Peer *peer) {
        Tunnel *t = peer->tunnel;
        const Snapshot *s = peer->snapshot;
        uint8_t order[MPT_PATHS_MAX];
        unsigned n, k;
        uint64_t now_set = 0, was = 0;

        if (t->profile->tunnel.policy.n == 0 || !s)
                return;
        n = paths_by_rtt(peer, order);
        /* Republished when the path of lowest-latency rules changes, or the set of the fastest
         * paths that redundant rules send copies over. */
        k = MIN(copies_max(t), n);
        for (unsigned i = 0; i < k; i++)
                now_set |= UINT64_C(1) << order[i];
        for (unsigned i = 0; i < MIN(k, s->n_by_rtt); i++)
                was |= UINT64_C(1) << s->by_rtt[i];
        if (fastest_path(peer, order, n) != peer->fastest || now_set != was)
                (void) peer_publish(peer);
}

int peer_publish(Peer *peer) {
        Tunnel *t = peer->tunnel;
        uint32_t weights[MPT_PATHS_MAX];
        uint8_t ids[MPT_PATHS_MAX];
        size_t n = 0;
        Snapshot *s, *old;

        s = calloc(1, sizeof(Snapshot) + peer->n_paths * sizeof(SnapshotPath));
        if (!s)
                return log_oom_tunnel(t);
        s->n_paths = (unsigned) peer->n_paths;
        s->scheduler = t->profile->tunnel.scheduler;
        /* The flow scheduler keeps each flow on one path: nothing to reorder at the other end. */
        s->sequence = profile_uses_sequence(t->profile);

        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *p = peer->paths[i];
                SnapshotPath *sp = &s->paths[i];
                for (unsigned w = 0; w < MPT_WORKERS_MAX; w++)
                        sp->fds[w] = w < t->n_workers && p->fds ? p->fds[w] : -1;
                sp->remote = p->remote;
                sp->remote_len = p->remote_len;
                (void) sockaddr_to_address(&p->remote, &sp->remote_addr, &sp->remote_port);
                sp->pin_remote = p->config->pin_remote;
                sp->peer_id = p->peer_id;
                sp->peer_epoch = p->peer_epoch;
                sp->endpoint = (unsigned) i;
                for (size_t j = 0; j < i; j++)
                        if (p->fds && peer->paths[j]->fds && peer->paths[j]->ifindex == p->ifindex &&
                            address_equal(&peer->paths[j]->local, &p->local)) {
                                sp->endpoint = s->paths[j].endpoint;
                                break;
                        }
        }
        for (size_t i = 0; i < peer->n_paths; i++)
                for (size_t j = 0; j < peer->n_paths; j++)
                        if (s->paths[j].endpoint == s->paths[i].endpoint)
                                s->paths[i].endpoint_paths++;

        /* Normal paths that are up; if there are none, the backup paths that are up. */
        for (int pass = 0; pass < 2 && n == 0; pass++)
                for (size_t i = 0; i < peer->n_paths; i++) {
                        Path *p = peer->paths[i];
                        if (p->state != PATH_STATE_UP || path_is_backup(p) != (pass == 1))
                                continue;
                        ids[n] = (uint8_t) i;
                        weights[n] = MAX(path_effective_weight(p), 1u);
                        n++;
                }
        if (t->secure && t->profile->tunnel.scheduler == MPT_SCHEDULER_LEARNED)
                feedback_weights(peer, ids, n, weights);
        peer->paths_up = 0;
        for (size_t i = 0; i < peer->n_paths; i++)
                if (peer->paths[i]->state == PATH_STATE_UP)
                        peer->paths_up++;
        s->vector_len = sched_build_vector(weights, n, s->vector);
        for (size_t i = 0; i < s->vector_len; i++)
                s->vector[i] = ids[s->vector[i]];
        s->fastest = -1;
        if (t->profile->tunnel.policy.n > 0) {
                const MptPolicyList *pl = &t->profile->tunnel.policy;
                s->policy = memdup(pl->items, pl->n * sizeof(MptPolicyRule));
                if (!s->policy) {
                        free(s);
                        return log_oom_tunnel(t);
                }
                s->n_policy = pl->n;
                for (size_t i = 0; i < pl->n; i++)
                        if (pl->items[i].mode == MPT_POLICY_REDUNDANT ||
                            pl->items[i].mode == MPT_POLICY_LOWEST_LATENCY)
                                s->policy_ahead = true;
                for (size_t i = 0; i < peer->n_paths && i < MPT_PATHS_MAX; i++)
                        if (peer->paths[i]->state == PATH_STATE_UP)
                                s->up_paths |= UINT64_C(1) << i;
                s->n_by_rtt = paths_by_rtt(peer, s->by_rtt);
                peer->fastest = s->fastest = fastest_path(peer, s->by_rtt, s->n_by_rtt);
        }
        if (peer->hs) {
                session_fill_snapshot(peer, s);
                if (s->tx_keys.epoch == 0) {
                        /* Nothing to seal with yet: the workers drop what comes (no-session). */
                        s->no_session = true;
                        s->vector_len = 0;
                }
        } else if (t->secure)
                s->tx_keys = peer->tx_keys;

        old = peer->snapshot;
        if (old) {
                /* Sockets retired since the last snapshot are named by the old one at most. */
                old->close_fds = t->pending_close;
                old->n_close_fds = t->n_pending_close;
        } else
                free(t->pending_close);
        t->pending_close = NULL;
        t->n_pending_close = 0;
        s->generation = __atomic_load_n(&t->generation, __ATOMIC_RELAXED) + 1;
        __atomic_store_n(&peer->snapshot, s, __ATOMIC_RELEASE);
        __atomic_store_n(&t->generation, s->generation, __ATOMIC_RELEASE);

        if (old) {
                old->retired_next = t->retired;
                t->retired = old;
        }
        for (unsigned i = 0; i < t->n_workers; i++)
                worker_wake(t->workers[i]);
        if (t->running)
                (void) tunnel_update_firewall(t, false);
        if (t->retired && t->reclaim_timer) {
                (void) sd_event_source_set_time_relative(t->reclaim_timer, 1 * USEC_PER_MSEC);
                (void) sd_event_source_set_enabled(t->reclaim_timer, SD_EVENT_ONESHOT);
        }
        return 0;
}

int tunnel_publish(Tunnel *t) {
        int r = 0;

        for (size_t k = 0; k < t->n_peers; k++) {
                int q = peer_publish(t->peers[k]);

                if (q < 0 && r == 0)
                        r = q;
        }
        return r;
}

void tunnel_retire_fds(Tunnel *t, int *fds, unsigned n) {
        int *l = realloc(t->pending_close, (t->n_pending_close + n) * sizeof(int));

        if (!l) {
                /* Out of memory: better a brief error on a worker than a leak. */
                for (unsigned i = 0; i < n; i++)
                        safe_close(fds[i]);
                return;
        }
        t->pending_close = l;
        for (unsigned i = 0; i < n; i++)
                t->pending_close[t->n_pending_close++] = fds[i];
}

int tunnel_tun_fd_for(const Tunnel *t, const uint8_t *pkt, size_t len) {
        /* Any queue injects into the same stack; the choice decides which queue (and worker) the
         * kernel uses for the flow's outgoing packets. See tun_deliver() in receive.c. */
        if (t->tun.n_fds <= 1)
                return t->tun.fds[0];
        /* With receiving and sending workers apart, the flows go out through the sending
         * workers' queues. */
        if (t->rx_workers > 0 && t->rx_workers < t->tun.n_fds)
                return t->tun.fds[t->rx_workers +
                                  sched_flow_hash_symmetric(pkt, len) % (t->tun.n_fds - t->rx_workers)];
        return t->tun.fds[sched_flow_hash_symmetric(pkt, len) % t->tun.n_fds];
}

DataplaneOptions dataplane_options = {
        .offload = true, .batch = WORKER_BATCH, .quantum = SCHED_QUANTUM_FLOOR, .rx_turn = WORKER_RX_MMSG, .pace = true,
        .repair = true,
};

void dataplane_options_load(void) {
        const char *e;
        unsigned v;

        e = getenv("MPT_DEBUG_OFFLOAD");
        if (e && parse_boolean(e) == 0)
                dataplane_options.offload = false;
        e = getenv("MPT_DEBUG_BATCH");
        if (e && safe_atou(e, &v) >= 0 && v >= 1)
                dataplane_options.batch = MIN(v, WORKER_BATCH);
        e = getenv("MPT_DEBUG_RUN");
        if (e && safe_atou(e, &v) >= 0 && v >= 1) {
                dataplane_options.quantum = MIN(v, SCHED_QUANTUM_LIMIT);
                dataplane_options.quantum_fixed = true;
        }
        e = getenv("MPT_DEBUG_RX_TURN");
        if (e && safe_atou(e, &v) >= 0 && v >= 1) {
                dataplane_options.rx_turn = MIN(v, WORKER_RX_MMSG);
                dataplane_options.rx_turn_fixed = true;
        }
        e = getenv("MPT_DEBUG_RX_SPREAD");
        if (e && parse_boolean(e) > 0)
                dataplane_options.rx_spread = true;
        e = getenv("MPT_DEBUG_REPAIR");
        if (e && parse_boolean(e) == 0)
                dataplane_options.repair = false;
        e = getenv("MPT_DEBUG_PACE");
        if (e && parse_boolean(e) == 0)
                dataplane_options.pace = false;
        e = getenv("MPT_DEBUG_REKEY");
        if (e && safe_atou(e, &v) >= 0 && v >= 100)
                dataplane_options.rekey_usec = (usec_t) v * USEC_PER_MSEC;
        e = getenv("MPT_DEBUG_CIPHER");
        if (e && mpt_cipher_from_string(e) == MPT_CIPHER_CHACHA20_POLY1305)
                dataplane_options.no_aes = true;
}

int tunnel_write_packet(const Tunnel *t, int fd, const uint8_t *pkt, size_t len) {
        /* A packet that came inside a UDP datagram the kernel checksummed. */
        static const struct virtio_net_hdr valid = { .flags = VIRTIO_NET_HDR_F_DATA_VALID };
        struct iovec iov[2] = {
                { .iov_base = (void *) &valid, .iov_len = VNET_HDR_LEN },
                { .iov_base = (void *) pkt, .iov_len = len },
        };

        if (t->tun.vnet_hdr)
                return writev(fd, iov, 2) < 0 ? -errno : 0;
        return write(fd, pkt, len) < 0 ? -errno : 0;
}

static void deliver_from_main(void *userdata, const uint8_t *pkt, size_t len) {
        Tunnel *t = userdata;

        if (tunnel_write_packet(t, tunnel_tun_fd_for(t, pkt, len), pkt, len) < 0)
                COUNTER_ADD(t->drops_main[MPT_DROP_TUN_WRITE], 1);
}

bool peer_reorder_has_delivered(Peer *peer) {
        ReorderStats st;

        if (!peer->reorder_enabled)
                return false;
        rx_shared_stats(peer->rx, &st, NULL);
        return st.delivered > 0;
}

/* Whether a is within 1 ms or 1/CLOSE_TO_DIV of b: a change of the reorder buffer's waits that
 * small is not worth taking its lock for (the feedback timer recomputes them every tick). */
#define CLOSE_TO_DIV 16u

static bool close_to(usec_t a, usec_t b) {
        usec_t d = a > b ? a - b : b - a;
        return d < USEC_PER_MSEC || d * CLOSE_TO_DIV < b;
}

void peer_set_reorder_hold(Peer *peer, usec_t hold, usec_t spread) {
        Tunnel *t = peer->tunnel;
        usec_t cur = __atomic_load_n(&peer->reorder_hold, __ATOMIC_RELAXED),
               cur_spread = __atomic_load_n(&peer->reorder_spread, __ATOMIC_RELAXED);

        if (!peer->reorder_enabled || (close_to(hold, cur) && close_to(spread, cur_spread)))
                return;
        rx_shared_set_hold(peer->rx, hold, spread);
        __atomic_store_n(&peer->reorder_hold, hold, __ATOMIC_RELAXED);
        __atomic_store_n(&peer->reorder_spread, spread, __ATOMIC_RELAXED);
        /* The receiving workers wait until the (maybe earlier) deadlines of their lanes. */
        for (unsigned i = 0; t->workers && i < (t->rx_workers > 0 ? t->rx_workers : t->n_workers); i++)
                worker_wake(t->workers[i]);
}

void peer_set_reorder_extra(Peer *peer, size_t i, usec_t extra) {
        Path *p = peer->paths[i];

        if (!peer->reorder_enabled || p->reorder_extra == extra)
                return;
        rx_shared_set_path_extra(peer->rx, (unsigned) i, extra);
        p->reorder_extra = extra;
}

void peer_reset_reorder(Peer *peer) {
        if (!peer->reorder_enabled)
                return;
        rx_shared_reset(peer->rx, deliver_from_main, peer->tunnel);
}

bool tunnel_queue_event(Tunnel *t, const ControlEvent *ev) {
        uint64_t one = 1;
        bool wake, initiation = false;

        pthread_mutex_lock(&t->control_lock);
        /* Handshake messages need work (a DH or more) before they are known to be genuine: only
         * so many may wait, and then more are dropped rather than delaying the rest. Initiations
         * (which anyone can send: what a flood is made of) and the replies to this end's own
         * (responses, cookie replies, retries) have room apart, so that a flood of initiations
         * does not crowd out the response that completes this end's handshake (it would then
         * send its initiation again only after REKEY_TIMEOUT, 5 s). */
        if (ev->kind == CONTROL_EVENT_HANDSHAKE) {
                initiation = ev->hs.len > 0 && ev->hs.msg[0] == MPT_HANDSHAKE_INITIATION;
                if ((initiation ? t->hs_queued : t->hs_replies_queued) >= HANDSHAKE_QUEUE_MAX) {
                        pthread_mutex_unlock(&t->control_lock);
                        return false;
                }
        }
        if (t->control_n >= CONTROL_QUEUE_MAX) {
                t->control_overflows++;
                pthread_mutex_unlock(&t->control_lock);
                return false;
        }
        if (t->control_n % CONTROL_QUEUE_GROW == 0) {
                ControlEvent *q = realloc(t->control_queue, (t->control_n + CONTROL_QUEUE_GROW) * sizeof(ControlEvent));
                if (!q) {
                        t->control_overflows++;
                        pthread_mutex_unlock(&t->control_lock);
                        return false;
                }
                t->control_queue = q;
        }
        t->control_queue[t->control_n++] = *ev;
        if (ev->kind == CONTROL_EVENT_HANDSHAKE && initiation)
                t->hs_queued++;
        else if (ev->kind == CONTROL_EVENT_HANDSHAKE)
                t->hs_replies_queued++;
        wake = t->control_n == 1;
        pthread_mutex_unlock(&t->control_lock);
        if (wake)
                (void) !write(t->control_eventfd, &one, sizeof one);
        return true;
}

static int on_control_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Tunnel *t = userdata;
        Peer *peer = t->peers[0];
        ControlEvent *q;
        unsigned handshakes;
        uint64_t v;
        size_t n;

        (void) !read(fd, &v, sizeof v);
        pthread_mutex_lock(&t->control_lock);
        q = TAKE_PTR(t->control_queue);
        n = t->control_n;
        t->control_n = 0;
        handshakes = t->hs_queued + t->hs_replies_queued;
        t->hs_queued = t->hs_replies_queued = 0;
        pthread_mutex_unlock(&t->control_lock);

        for (size_t i = 0; i < n; i++) {
                Path *p = NULL;

                if (peer->hs) {
                        /* Under load when more than an eighth of what may wait did, as WireGuard. */
                        if (q[i].kind == CONTROL_EVENT_HANDSHAKE) {
                                session_handle_message(t, &q[i], handshakes > HANDSHAKE_QUEUE_MAX / 8);
                                continue;
                        }
                        if (q[i].epoch != 0)
                                session_heard(peer, q[i].epoch);
                }
                if (q[i].kind == CONTROL_EVENT_HANDSHAKE || q[i].kind == CONTROL_EVENT_SESSION)
                        continue;
                /* Datagrams whose path the worker could not tell (paths sharing a socket, traffic
                 * from a new address) name it by the other end's token. */
                if (q[i].kind == CONTROL_EVENT_FEEDBACK) {
                        feedback_handle(t, &q[i]);
                        continue;
                }
                if (q[i].path < peer->n_paths)
                        p = peer->paths[q[i].path];
                else if (q[i].kind == CONTROL_EVENT_KEEPALIVE)
                        p = tunnel_path_by_peer_token(t, q[i].ka.path_token);
                else if (q[i].kind == CONTROL_EVENT_ENDPOINT) {
                        p = tunnel_path_by_peer_token(t, q[i].token);
                        if (!p && (p = tunnel_listening_slot(t, &q[i]))) {
                                /* Its keepalive, next in the queue, names it by this token. */
                                p->peer_token = q[i].token;
                                path_note_peer(p, &q[i]);
                        }
                        else if (!p && q[i].socket_path < peer->n_paths)
                                COUNTER_ADD(peer->paths[q[i].socket_path]->counters.drops[MPT_DROP_UNKNOWN_SOURCE], 1);
                }
                else if (q[i].kind == CONTROL_EVENT_PATH_STATUS && peer->n_paths > 0)
                        p = peer->paths[0]; /* names its path itself */
                if (p)
                        path_handle_event(p, &q[i]);
        }
        free(q);
        return 0;
}

/* Among the listening paths (no Remote=) that share the socket of ev->socket_path: the one that
 * knows the sender (path id and epoch) already; else, skipping those that belong to another path
 * of the sender's session, the first one never reached, else a dead one (silent for DeadTime=):
 * one whose remote has the source's address (a NAT gave the other end's path a new port), else
 * the one dead the longest. */
Path *tunnel_listening_slot(Tunnel *t, const ControlEvent *ev) {
        Peer *peer = t->peers[0];
        Path *v, *same_addr = NULL, *oldest = NULL;
        MptAddress src;

        if (ev->socket_path >= peer->n_paths || !(v = peer->paths[ev->socket_path])->fds ||
            sockaddr_to_address(&ev->source, &src, NULL) < 0)
                return NULL;
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < peer->n_paths; i++) {
                        Path *p = peer->paths[i];
                        MptAddress remote;

                        if (!path_config_listens(p->config) || !p->fds || p->ifindex != v->ifindex ||
                            !address_equal(&p->local, &v->local))
                                continue;
                        if (pass == 0) {
                                if (ev->peer_id != 0 && p->peer_id == ev->peer_id && p->peer_epoch == ev->peer_epoch)
                                        return p;
                                continue;
                        }
                        if (ev->peer_id != 0 && p->peer_id != 0 && p->peer_epoch == ev->peer_epoch)
                                continue;
                        if (p->remote_len == 0)
                                return p;
                        if (p->state != PATH_STATE_DEAD)
                                continue;
                        if (!same_addr && sockaddr_to_address(&p->remote, &remote, NULL) >= 0 &&
                            address_equal(&remote, &src))
                                same_addr = p;
                        if (!oldest || p->state_since < oldest->state_since)
                                oldest = p;
                }
        return same_addr ?: oldest;
}

uint64_t tunnel_path_pace_rate(const Tunnel *t, unsigned path) {
        Peer *peer = t->peers[0];

        if (path >= MPT_PATHS_MAX || !(__atomic_load_n(&peer->pace_paths, __ATOMIC_RELAXED) & UINT64_C(1) << path))
                return 0;
        return __atomic_load_n(&peer->pace_rate[path], __ATOMIC_RELAXED);
}

bool tunnel_path_queued_locally(Tunnel *t, unsigned path) {
        if (path >= MPT_PATHS_MAX || !t->workers)
                return false;
        for (unsigned w = 0; w < t->n_workers; w++)
                if (t->workers[w] && worker_path_queued(t->workers[w], path))
                        return true;
        return false;
}

void tunnel_worker_packets(Tunnel *t, unsigned worker, uint64_t *ret_rx, uint64_t *ret_tx) {
        const Worker *w = t->workers && worker < t->n_workers ? t->workers[worker] : NULL;

        *ret_rx = *ret_tx = 0;
        for (size_t k = 0; w && k < w->n_peers; k++)
                for (size_t i = 0; i < t->peers[k]->n_paths; i++) {
                        *ret_rx += COUNTER_READ(w->peers[k].path_counters[i].rx_packets);
                        *ret_tx += COUNTER_READ(w->peers[k].path_counters[i].tx_packets);
                }
}

void tunnel_worker_contention(Tunnel *t, unsigned worker, uint64_t *ret_waits, uint64_t *ret_wait_ns) {
        const Worker *w = t->workers && worker < t->n_workers ? t->workers[worker] : NULL;

        *ret_waits = w ? COUNTER_READ(w->contention.waits) : 0;
        *ret_wait_ns = w ? COUNTER_READ(w->contention.wait_ns) : 0;
}

uint64_t tunnel_tx_segments(const Tunnel *t) {
        uint64_t sum = 0;

        for (unsigned w = 0; t->workers && w < t->n_workers; w++)
                if (t->workers[w])
                        sum += __atomic_load_n(&t->workers[w]->tx_segments, __ATOMIC_RELAXED);
        return sum;
}

void tunnel_sum_counters(Tunnel *t, int path, PathCounters *ret) {
        PathCounters sum = {};

#define ADD(dst, src)                                                                   \
        do {                                                                            \
                dst.tx_packets += COUNTER_READ(src.tx_packets);                         \
                dst.tx_bytes += COUNTER_READ(src.tx_bytes);                             \
                dst.rx_packets += COUNTER_READ(src.rx_packets);                         \
                dst.rx_bytes += COUNTER_READ(src.rx_bytes);                             \
                dst.keepalives_tx += COUNTER_READ(src.keepalives_tx);                   \
                dst.keepalives_rx += COUNTER_READ(src.keepalives_rx);                   \
                dst.repair_asked += COUNTER_READ(src.repair_asked);                     \
                dst.repair_requested += COUNTER_READ(src.repair_requested);             \
                dst.repair_sent += COUNTER_READ(src.repair_sent);                       \
                dst.repair_missed += COUNTER_READ(src.repair_missed);                   \
                for (size_t _i = 0; _i < _MPT_DROP_MAX; _i++)                           \
                        dst.drops[_i] += COUNTER_READ(src.drops[_i]);                   \
        } while (0)

        for (unsigned w = 0; w < t->n_workers; w++) {
                if (path >= 0)
                        ADD(sum, t->workers[w]->peers[0].path_counters[path]);
                else
                        ADD(sum, t->workers[w]->tunnel_counters);
        }
        if (path >= 0)
                ADD(sum, t->peers[0]->paths[path]->counters);
        else
                for (size_t _i = 0; _i < _MPT_DROP_MAX; _i++)
                        sum.drops[_i] += COUNTER_READ(t->drops_main[_i]);
#undef ADD
        *ret = sum;
}

static int find_keepalive_addresses(Tunnel *t) {
        const MptTunnelConfig *c = &t->profile->tunnel;
        int family = AF_UNSPEC;

        /* Keepalives name one pair of tunnel addresses, as the original's connection has one IP
         * version: IPv4 if the tunnel has an IPv4 address, else IPv6. */
        for (size_t i = 0; i < c->addresses.n && family != AF_INET; i++)
                family = c->addresses.items[i].family;
        if (family == AF_UNSPEC && c->peers.n > 0)
                family = c->peers.items[0].family;
        t->ip_version = family == AF_INET6 ? 6 : 4;
        for (size_t i = 0; i < c->addresses.n; i++)
                if (c->addresses.items[i].family == family) {
                        t->ka_src = (MptAddress) { .family = family, .addr = c->addresses.items[i].addr };
                        break;
                }
        for (size_t i = 0; i < c->peers.n; i++)
                if (c->peers.items[i].family == family) {
                        t->ka_dst = (MptAddress) { .family = family, .addr = c->peers.items[i].addr };
                        break;
                }
        return 0;
}

/* The link MTU assumed while no path has a link: Ethernet's (RFC 894), what nearly every uplink
 * offers. */
#define ASSUMED_LINK_MTU 1500u

static uint32_t auto_mtu(Tunnel *t) {
        Peer *peer = t->peers[0];
        uint32_t mtu = UINT32_MAX;

        /* Paths without a link yet do not count; with none at all, assume ASSUMED_LINK_MTU. */
        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *p = peer->paths[i];
                uint32_t link = p->link_mtu;
                uint32_t overhead = profile_path_overhead(t->profile, p->config);
                if (p->ifindex <= 0 || link == 0)
                        continue;
                if (link > overhead)
                        mtu = MIN(mtu, link - overhead);
        }
        if (mtu == UINT32_MAX) {
                for (size_t i = 0; i < peer->n_paths; i++)
                        mtu = MIN(mtu, ASSUMED_LINK_MTU - profile_path_overhead(t->profile, peer->paths[i]->config));
        }
        return MAX(mtu, MPT_MTU_MIN);
}

void tunnel_update_mtu(Tunnel *t) {
        uint32_t mtu;
        int r;

        if (t->profile->tunnel.mtu > 0 || t->tun.ifindex <= 0)
                return;
        mtu = auto_mtu(t);
        for (size_t i = 0; i < t->profile->tunnel.addresses.n; i++)
                if (t->profile->tunnel.addresses.items[i].family == AF_INET6)
                        mtu = MAX(mtu, (uint32_t) MPT_IPV6_MIN_MTU);
        if (mtu == t->mtu)
                return;
        r = rtnl_link_set_mtu(t->rtnl, t->tun.ifindex, mtu);
        if (r < 0) {
                log_tunnel_warning_errno(t, r, "Failed to change MTU to %u, ignoring: %m", mtu);
                return;
        }
        log_tunnel_info(t, "The paths' links changed: MTU %u -> %u.", t->mtu, mtu);
        t->mtu = mtu;
        (void) tunnel_update_firewall(t, false);
}

static int address_compare(const void *a, const void *b) {
        const MptAddress *x = a, *y = b;

        if (x->family != y->family)
                return x->family < y->family ? -1 : 1;
        return memcmp(&x->addr, &y->addr, sizeof x->addr);
}

int tunnel_update_firewall(Tunnel *t, bool startup) {
        Peer *peer = t->peers[0];
        _cleanup_free_ MptAddress *remotes = NULL;
        const char *what = "batch";
        size_t n = 0, u = 0;
        unsigned listen = 0; /* bit 0: an IPv4 path listens, bit 1: an IPv6 one */
        int r;

        if (!t->profile->tunnel.firewall || !t->nft)
                return 0;

        /* Every configured remote, and where each path sends now (it follows the other end). */
        remotes = calloc(2 * peer->n_paths + 1, sizeof(MptAddress));
        if (!remotes)
                return log_oom_tunnel(t);
        for (size_t i = 0; i < peer->n_paths; i++) {
                const MptPathConfig *c = peer->paths[i]->config;
                MptAddress a;
                uint16_t port;

                /* A listening path is reached from anywhere: its first datagram must come in. */
                if (path_config_listens(c))
                        listen |= path_config_family(c) == AF_INET6 ? 2 : 1;
                if (address_is_set(&peer->paths[i]->config->remote))
                        remotes[n++] = peer->paths[i]->config->remote;
                if (peer->paths[i]->remote_len > 0 && sockaddr_to_address(&peer->paths[i]->remote, &a, &port) >= 0)
                        remotes[n++] = a;
        }
        qsort(remotes, n, sizeof(MptAddress), address_compare);
        for (size_t i = 0; i < n; i++)
                if (u == 0 || address_compare(&remotes[u - 1], &remotes[i]) != 0)
                        remotes[u++] = remotes[i];

        if (t->fw_applied && t->fw_mtu == t->mtu && t->fw_n_remotes == u && t->fw_listen == listen &&
            (u == 0 || memcmp(t->fw_remotes, remotes, u * sizeof(MptAddress)) == 0))
                return 0;

        r = nft_apply(t->nft, &(NftRuleset) {
                        .tunnel = t->name,
                        .ifname = t->tun.ifname,
                        .port = t->profile->tunnel.local_port,
                        .mark = t->profile->tunnel.firewall_mark,
                        .mtu = t->mtu,
                        .remotes = remotes,
                        .n_remotes = u,
                        .any4 = listen & 1,
                        .any6 = listen & 2,
                }, &what);
        if (r < 0) {
                if (startup)
                        return log_tunnel_error_errno(t, r, "Failed to write nftables table 'inet mpt-%s' (the "
                                                      "kernel refused the %s): %m. Set Firewall=no to run "
                                                      "without it.", t->name, what);
                log_tunnel_warning_errno(t, r, "Failed to update nftables table 'inet mpt-%s' (%s), ignoring: %m",
                                         t->name, what);
                return r;
        }
        log_tunnel_debug(t, "nftables table 'inet mpt-%s' written: %zu remote address%s, MTU %u.", t->name, u,
                         u == 1 ? "" : "es", t->mtu);
        if (startup && !nft_owned(t->nft))
                log_tunnel_info(t, "The kernel cannot tie the nftables table to this process (flag owner, "
                                "Linux 5.12); if mptd is killed, the table stays until it starts again.");
        free(t->fw_remotes);
        t->fw_remotes = TAKE_PTR(remotes);
        t->fw_n_remotes = u;
        t->fw_listen = listen;
        t->fw_mtu = t->mtu;
        t->fw_applied = true;
        return 0;
}

static int compute_mtu(Tunnel *t) {
        if (t->profile->tunnel.mtu > 0) {
                t->mtu = t->profile->tunnel.mtu;
                return 0;
        }
        t->mtu = auto_mtu(t);
        for (size_t i = 0; i < t->profile->tunnel.addresses.n; i++)
                if (t->profile->tunnel.addresses.items[i].family == AF_INET6 && t->mtu < MPT_IPV6_MIN_MTU)
                        return log_tunnel_error_errno(t, SYNTHETIC_ERRNO(EINVAL),
                                                      "The paths leave room for an MTU of only %u bytes, below "
                                                      "the %u that the tunnel's IPv6 address needs.", t->mtu,
                                                      MPT_IPV6_MIN_MTU);
        return 0;
}

/* ---- following the kernel ---- */

static int on_refresh(sd_event_source *s, void *userdata) {
        Tunnel *t = userdata;
        Peer *peer = t->peers[0];
        bool all = t->refresh_all;

        t->refresh_all = false;
        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *p = peer->paths[i];
                if (!all && !p->dirty)
                        continue;
                p->dirty = false;
                (void) path_refresh(p, false);
        }
        return 0;
}

void tunnel_schedule_refresh(Tunnel *t) {
        t->refresh_all = true;
        if (t->refresh_event)
                (void) sd_event_source_set_enabled(t->refresh_event, SD_EVENT_ONESHOT);
}

static void mark_dirty(Tunnel *t, Path *p) {
        p->dirty = true;
        if (t->refresh_event)
                (void) sd_event_source_set_enabled(t->refresh_event, SD_EVENT_ONESHOT);
}

static void on_link_event(void *userdata, bool removed, const RtnlLink *l) {
        Tunnel *t = userdata;
        Peer *peer = t->peers[0];

        if (removed && t->tun.ifindex > 0 && l->ifindex == t->tun.ifindex) {
                /* Someone deleted our device (ip link delete, networkctl delete, a networkd
                 * .netdev that went away): the tunnel is over. A clean exit, so that a unit
                 * with Restart=on-failure stays stopped. */
                log_tunnel_info(t, "TUN device '%s' was removed, shutting down.", t->tun.ifname);
                t->tun.ifindex = 0; /* nothing left to take back from it */
                (void) sd_notify(false, "STOPPING=1");
                (void) sd_event_exit(t->event, 0);
                return;
        }

        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *p = peer->paths[i];
                /* By name (appears, disappears, is renamed) or by index (the one we use). */
                if ((p->config->interface && streq(p->config->interface, l->ifname)) || p->ifindex == l->ifindex)
                        mark_dirty(t, p);
        }
}

static void on_address_event(void *userdata, bool removed, const RtnlAddress *a) {
        Tunnel *t = userdata;
        Peer *peer = t->peers[0];

        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *p = peer->paths[i];
                if (a->address.family != path_config_family(p->config))
                        continue;
                /* Paths without Interface= find their link through the address: any may matter. */
                if (p->ifindex == a->ifindex || !p->config->interface)
                        mark_dirty(t, p);
        }
}

static void on_route_event(void *userdata) {
        tunnel_schedule_refresh(userdata);
}

static const RtnlMonitorHandlers monitor_handlers = {
        .link = on_link_event,
        .address = on_address_event,
        .route = on_route_event,
        .overrun = on_route_event,
};

static int configure_device(Tunnel *t) {
        const MptTunnelConfig *c = &t->profile->tunnel;
        char buf[MPT_ADDRESS_STRLEN];
        int r;

        r = rtnl_link_set_mtu(t->rtnl, t->tun.ifindex, t->mtu);
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to set MTU %u on '%s': %m", t->mtu, t->tun.ifname);
        if (t->tun.created) {
                /* The TUN default of 500 packets overflows when a worker is descheduled for a
                 * moment at several hundred thousand packets per second; TCP would see the drops
                 * as congestion. */
                r = rtnl_link_set_txqlen(t->rtnl, t->tun.ifindex, TUN_TX_QUEUE_LEN);
                if (r < 0)
                        log_tunnel_warning_errno(t, r, "Failed to set the queue length of '%s', ignoring: %m",
                                                 t->tun.ifname);
        }

        t->address_added = calloc(MAX(c->addresses.n, (size_t) 1), sizeof(bool));
        t->route_added = calloc(MAX(c->routes.n, (size_t) 1), sizeof(bool));
        if (!t->address_added || !t->route_added)
                return log_oom_tunnel(t);

        for (size_t i = 0; i < c->addresses.n; i++) {
                r = rtnl_addr_add(t->rtnl, t->tun.ifindex, &c->addresses.items[i]);
                if (r == -EEXIST) {
                        log_tunnel_debug(t, "Address %s already present.", prefix_to_string(&c->addresses.items[i], buf));
                        continue;
                }
                if (r < 0)
                        return log_tunnel_error_errno(t, r, "Failed to add address %s to '%s': %m",
                                                      prefix_to_string(&c->addresses.items[i], buf), t->tun.ifname);
                t->address_added[i] = true;
        }

        r = rtnl_link_set_up(t->rtnl, t->tun.ifindex, true);
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to bring '%s' up: %m", t->tun.ifname);

        for (size_t i = 0; i < c->routes.n; i++) {
                r = rtnl_route_add(t->rtnl, t->tun.ifindex, &c->routes.items[i]);
                if (r == -EEXIST) {
                        log_tunnel_warning(t, "Route to %s exists already, leaving it alone.",
                                           prefix_to_string(&c->routes.items[i], buf));
                        continue;
                }
                if (r < 0)
                        return log_tunnel_error_errno(t, r, "Failed to add route to %s via '%s': %m",
                                                      prefix_to_string(&c->routes.items[i], buf), t->tun.ifname);
                t->route_added[i] = true;
        }
        return 0;
}

static bool prefix_same(const MptPrefix *a, const MptPrefix *b) {
        return a->family == b->family && a->prefixlen == b->prefixlen &&
               memcmp(&a->addr, &b->addr, family_address_size(a->family)) == 0;
}

static ssize_t prefix_find(const MptPrefixList *l, const MptPrefix *x) {
        for (size_t i = 0; i < l->n; i++)
                if (prefix_same(&l->items[i], x))
                        return (ssize_t) i;
        return -1;
}

/* One prefix list of the device (addresses or routes) from old to new: what we added and the new
 * list lacks goes, what it adds comes; *added (per item of old) becomes per item of new. Failures
 * are logged and counted in *failed, and the rest goes on. */
static int reconcile_prefixes(Tunnel *t, const MptPrefixList *old, const MptPrefixList *new, bool **added,
                              bool routes, unsigned *failed) {
        _cleanup_free_ bool *now = calloc(MAX(new->n, (size_t) 1), sizeof(bool));
        char buf[MPT_ADDRESS_STRLEN];
        const char *what = routes ? "route to" : "address";
        int r;

        if (!now)
                return log_oom_tunnel(t);
        for (size_t i = 0; i < old->n; i++) {
                ssize_t j = prefix_find(new, &old->items[i]);

                if (j >= 0) {
                        now[j] = *added && (*added)[i];
                        continue;
                }
                if (!*added || !(*added)[i])
                        continue; /* not ours: leave it */
                r = routes ? rtnl_route_del(t->rtnl, t->tun.ifindex, &old->items[i])
                           : rtnl_addr_del(t->rtnl, t->tun.ifindex, &old->items[i]);
                if (r < 0 && r != -ESRCH && r != -EADDRNOTAVAIL) {
                        log_tunnel_warning_errno(t, r, "Reload: failed to remove %s %s: %m", what,
                                                 prefix_to_string(&old->items[i], buf));
                        (*failed)++;
                } else
                        log_tunnel_info(t, "Reload: removed %s %s.", what, prefix_to_string(&old->items[i], buf));
        }
        for (size_t j = 0; j < new->n; j++) {
                if (prefix_find(old, &new->items[j]) >= 0)
                        continue;
                r = routes ? rtnl_route_add(t->rtnl, t->tun.ifindex, &new->items[j])
                           : rtnl_addr_add(t->rtnl, t->tun.ifindex, &new->items[j]);
                if (r == -EEXIST)
                        log_tunnel_warning(t, "Reload: %s %s exists already, leaving it alone.", what,
                                           prefix_to_string(&new->items[j], buf));
                else if (r < 0) {
                        log_tunnel_warning_errno(t, r, "Reload: failed to add %s %s: %m", what,
                                                 prefix_to_string(&new->items[j], buf));
                        (*failed)++;
                } else {
                        now[j] = true;
                        log_tunnel_info(t, "Reload: added %s %s.", what, prefix_to_string(&new->items[j], buf));
                }
        }
        free(*added);
        *added = TAKE_PTR(now);
        return 0;
}

int tunnel_apply_device(Tunnel *t, const MptTunnelConfig *old, unsigned *failed) {
        const MptTunnelConfig *c = &t->profile->tunnel;
        int r;

        r = reconcile_prefixes(t, &old->addresses, &c->addresses, &t->address_added, false, failed);
        if (r < 0)
                return r;
        r = reconcile_prefixes(t, &old->routes, &c->routes, &t->route_added, true, failed);
        if (r < 0)
                return r;
        t->ka_src = t->ka_dst = (MptAddress) {};
        find_keepalive_addresses(t);
        if (c->mtu > 0 && c->mtu != t->mtu) {
                r = rtnl_link_set_mtu(t->rtnl, t->tun.ifindex, c->mtu);
                if (r < 0) {
                        log_tunnel_warning_errno(t, r, "Reload: failed to set MTU %u: %m", c->mtu);
                        (*failed)++;
                } else {
                        log_tunnel_info(t, "Reload: MTU %u -> %u.", t->mtu, c->mtu);
                        t->mtu = c->mtu;
                }
        } else if (c->mtu == 0)
                tunnel_update_mtu(t);
        return 0;
}

static void unconfigure_device(Tunnel *t) {
        const MptTunnelConfig *c = &t->profile->tunnel;
        char buf[MPT_ADDRESS_STRLEN];
        int r;

        /* A device we created disappears with its last queue, taking addresses and routes along.
         * On a persistent device, take back exactly what we added. */
        if (!t->tun.persistent || t->tun.ifindex <= 0)
                return;
        for (size_t i = 0; t->route_added && i < c->routes.n; i++)
                if (t->route_added[i]) {
                        r = rtnl_route_del(t->rtnl, t->tun.ifindex, &c->routes.items[i]);
                        if (r < 0 && r != -ESRCH && r != -ENODEV)
                                log_tunnel_warning_errno(t, r, "Failed to remove route to %s, ignoring: %m",
                                                         prefix_to_string(&c->routes.items[i], buf));
                }
        for (size_t i = 0; t->address_added && i < c->addresses.n; i++)
                if (t->address_added[i]) {
                        r = rtnl_addr_del(t->rtnl, t->tun.ifindex, &c->addresses.items[i]);
                        if (r < 0 && r != -EADDRNOTAVAIL && r != -ENODEV)
                                log_tunnel_warning_errno(t, r, "Failed to remove address %s, ignoring: %m",
                                                         prefix_to_string(&c->addresses.items[i], buf));
                }
}

/* Secure mode: the cipher library, this run's epoch and, with the pre-shared key alone, the
 * sending keys (with the handshake they come with sessions, session.c). */
static int secure_setup(Tunnel *t) {
        Peer *peer = t->peers[0];
        const MptProfile *profile = t->profile;
        uint16_t rnd = 0;
        int r;

        assert(profile->tunnel.psk.set || profile_uses_handshake(profile)); /* profile_verify() */
        r = mpt_secure_init();
        if (r == -EOPNOTSUPP)
                return log_tunnel_error_errno(t, r, "%s provides no ChaCha20-Poly1305, AES-256-GCM or "
                                              "BLAKE2b MAC (a FIPS-only OpenSSL configuration?): %m",
                                              mpt_secure_library());
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to initialise %s: %m", mpt_secure_library());
        /* The epoch grows from one run to the next (the other end never goes back to an
         * older one): wall-clock nanoseconds, the low 16 bits random so that both ends
         * never pick the same one. */
        (void) !getrandom(&rnd, sizeof rnd, 0);
        peer->epoch = ((uint64_t) now_realtime_nsec() & ~UINT64_C(0xffff)) | rnd;
        if (peer->epoch == 0)
                peer->epoch = 1;
        t->aes = mpt_secure_aes_available() && !dataplane_options.no_aes;
        if (profile_uses_handshake(profile)) {
                /* Keys come with sessions (session.c); the epoch in each datagram is then the
                 * receiver's session id. */
                t->handshake = true;
                peer->epoch = 0;
        } else {
                r = mpt_secure_derive(profile->tunnel.psk.bytes, peer->epoch, t->aes, &peer->tx_keys);
                if (r < 0)
                        return log_tunnel_error_errno(t, r, "Failed to derive the data keys: %m");
        }
        for (size_t i = 0; i < MPT_PATHS_MAX; i++)
                peer->tx_counter[i] = 1;
        t->secure = true;
        return 0;
}

/* rtnetlink: a socket to ask and a subscription to follow the kernel, and with a .netdev the
 * device networkd made. */
static int kernel_setup(Tunnel *t) {
        int r;

        r = rtnl_open(&t->rtnl);
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to open rtnetlink socket: %m");
        /* Listen before looking, so that nothing that happens in between is missed. */
        r = rtnl_monitor_new(t->event, &monitor_handlers, t, &t->monitor);
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to subscribe to rtnetlink events: %m");
        if (t->profile->from_netdev) {
                RtnlLink l;

                /* networkd owns the device: never create one behind its back. */
                r = rtnl_link_get_by_name(t->rtnl, t->name, &l);
                if (r == -ENODEV)
                        return log_tunnel_error_errno(t, r,
                                                      "TUN device '%s' does not exist. systemd-networkd creates it "
                                                      "from %s: is networkd running, and has it read the file "
                                                      "('networkctl reload')?", t->name, t->profile->filename);
                if (r < 0)
                        return log_tunnel_error_errno(t, r, "Failed to look up interface '%s': %m", t->name);
        }
        r = sd_event_add_defer(t->event, &t->refresh_event, on_refresh, t);
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to add event source: %m");
        (void) sd_event_source_set_enabled(t->refresh_event, SD_EVENT_OFF);
        return 0;
}

/* What the receiving workers share (reorder buffers, secure receive state, the buffer pool), and
 * which workers receive. Before the paths bind: whether it reorders decides where they are
 * received (path_rx_worker()). */
static int receive_setup(Tunnel *t) {
        Peer *peer = t->peers[0];
        const MptTunnelConfig *c = &t->profile->tunnel;

        if (rx_shared_new(c->reorder_window, c->reorder_max_delay, &peer->rx) < 0)
                return log_oom();
        if (t->secure && rx_shared_set_secure(peer->rx, t->handshake, peer->epoch) < 0)
                return log_oom();
        if (c->reorder_window > 0) {
                peer->reorder_hold = peer->reorder_spread = c->reorder_max_delay;
                peer->reorder_enabled = true;
        }
        peer->repair = t->secure && peer->reorder_enabled && dataplane_options.repair;
        peer->repair_via = -1;
        if (t->n_workers > 1 && peer->reorder_enabled && !dataplane_options.rx_spread)
                t->rx_workers = t->secure ? t->n_workers / 2 : 1;
        if (worker_pool_setup(t) < 0)
                return log_oom();
        return 0;
}

/* The paths, each as the kernel has its interface and addresses now: one whose interface or
 * address is missing waits for it. */
static int paths_setup(Tunnel *t) {
        Peer *peer = t->peers[0];
        int r;

        peer->n_paths = t->profile->n_paths;
        peer->paths = calloc(peer->n_paths, sizeof(Path *));
        if (!peer->paths)
                return log_oom();
        for (size_t i = 0; i < peer->n_paths; i++) {
                r = path_new(peer, (unsigned) i, &t->profile->paths[i], &peer->paths[i]);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < peer->n_paths; i++) {
                r = path_refresh(peer->paths[i], true);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The TUN device (created, or networkd's attached to), one queue per worker, and its addresses,
 * routes and MTU. */
static int device_setup(Tunnel *t) {
        _cleanup_free_ char *err = NULL;
        char off[64];
        int r;

        r = compute_mtu(t);
        if (r < 0)
                return r;
        find_keepalive_addresses(t);

        r = tun_open(t->rtnl, t->name, t->n_workers, dataplane_options.offload, &t->tun, &err);
        if (r < 0)
                return log_tunnel_error_errno(t, r, "%s", err ?: "Failed to open the TUN device");
        if (t->profile->from_netdev && !t->tun.persistent)
                /* It went away between the look-up and the attach: what we opened is ours, not
                 * networkd's, and goes away with us. */
                return log_tunnel_error_errno(t, SYNTHETIC_ERRNO(ENODEV),
                                              "TUN device '%s' disappeared while mptd attached to it.", t->name);
        log_tunnel_info(t, "%s TUN device '%s' (ifindex %i) with %u queue%s, MTU %u, offloads: %s%s.",
                        t->tun.persistent ? "Attached to" : "Created", t->tun.ifname, t->tun.ifindex,
                        t->n_workers, t->n_workers == 1 ? "" : "s", t->mtu,
                        tun_offloads_to_string(t->tun.offloads, off, sizeof off),
                        t->tun.vnet_hdr ? "" : " (the device has no virtio-net header)");
        return configure_device(t);
}

/* The workers (not started yet: tunnel_publish() first gives them a snapshot), the control queue
 * they hand events to the main thread by, and the timer that frees retired snapshots. */
static int workers_setup(Tunnel *t) {
        int r;

        t->workers = calloc(t->n_workers, sizeof(Worker *));
        if (!t->workers)
                return log_oom();
        for (unsigned i = 0; i < t->n_workers; i++) {
                r = worker_new(t, i, t->tun.fds[i], &t->workers[i]);
                if (r < 0)
                        return log_tunnel_error_errno(t, r, "Failed to set up worker %u: %m", i);
        }

        t->control_eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (t->control_eventfd < 0)
                return log_tunnel_error_errno(t, errno, "Failed to create eventfd: %m");
        r = sd_event_add_io(t->event, &t->control_source, t->control_eventfd, EPOLLIN, on_control_event, t);
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to watch keepalive queue: %m");
        r = sd_event_add_time_relative(t->event, &t->reclaim_timer, CLOCK_MONOTONIC, RECLAIM_INTERVAL_USEC, 0,
                                       on_reclaim_timer, t);
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to add timer: %m");
        (void) sd_event_source_set_enabled(t->reclaim_timer, SD_EVENT_OFF);
        return 0;
}

/* Firewall=yes: the nftables table. */
static int firewall_setup(Tunnel *t) {
        int r;

        r = nft_open(&t->nft);
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to open nftables netlink socket: %m. Set "
                                              "Firewall=no to run without the firewall table.");
        return tunnel_update_firewall(t, true);
}

int tunnel_new(sd_event *event, MptProfile *profile, unsigned n_workers, Tunnel **ret) {
        _cleanup_(tunnel_freep) Tunnel *t = NULL;
        int r;

        assert(n_workers >= 1 && n_workers <= MPT_WORKERS_MAX);
        assert(profile->tunnel.mode != MPT_MODE_SECURE || n_workers <= MPT_SECURE_LANE_CONTROL);

        t = calloc(1, sizeof(Tunnel));
        if (!t)
                return log_oom();
        /* The one peer, before anything else: tunnel_free() expects it. */
        t->peers = calloc(1, sizeof(Peer *));
        if (!t->peers || peer_new(t, 0, &t->peers[0]) < 0) {
                free(t->peers);
                free(t);
                return log_oom();
        }
        t->n_peers = 1;
        t->event = sd_event_ref(event);
        t->profile = profile;
        t->name = profile->tunnel.name;
        t->n_workers = n_workers;
        t->control_eventfd = -EBADF;
        t->started = now_usec();
        pthread_mutex_init(&t->control_lock, NULL);
        do
                if (getrandom(&t->session, sizeof t->session, 0) != sizeof t->session)
                        t->session = (uint32_t) now_usec();
        while (t->session == 0);
        /* Start the sequence space at a random point: a restarted peer is then told apart from
         * a slightly reordered one by the receiver's resynchronisation, not by luck. (Compat
         * mode's; each worker's lane in secure mode starts at one of its own.) */
        (void) !getrandom(&t->peers[0]->tx_seq, sizeof(uint32_t), 0);

        if (profile->tunnel.mode == MPT_MODE_SECURE) {
                r = secure_setup(t);
                if (r < 0)
                        return r;
        }
        r = kernel_setup(t);
        if (r < 0)
                return r;
        r = receive_setup(t);
        if (r < 0)
                return r;
        r = paths_setup(t);
        if (r < 0)
                return r;
        r = device_setup(t);
        if (r < 0)
                return r;
        r = workers_setup(t);
        if (r < 0)
                return r;
        for (size_t k = 0; k < t->n_peers; k++) {
                r = feedback_start(t->peers[k]);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < t->peers[0]->n_paths; i++) {
                r = path_start(t->peers[0]->paths[i]);
                if (r < 0)
                        return r;
        }
        if (profile->tunnel.firewall) {
                r = firewall_setup(t);
                if (r < 0)
                        return r;
        }
        for (size_t k = 0; t->handshake && k < t->n_peers; k++) {
                r = session_start(t->peers[k]);
                if (r < 0)
                        return r;
        }

        r = tunnel_publish(t);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < n_workers; i++) {
                r = worker_start(t->workers[i]);
                if (r < 0)
                        return log_tunnel_error_errno(t, r, "Failed to start worker thread %u: %m", i);
        }
        t->running = true;

        *ret = TAKE_PTR(t);
        return 0;
}

Tunnel *tunnel_free(Tunnel *t) {
        if (!t)
                return NULL;

        for (unsigned i = 0; t->workers && i < t->n_workers; i++)
                if (t->workers[i])
                        worker_stop(t->workers[i]);
        for (unsigned i = 0; t->workers && i < t->n_workers; i++)
                worker_free(t->workers[i]);
        free(t->workers);

        for (size_t k = 0; k < t->n_peers; k++) {
                Peer *peer = t->peers[k];

                for (size_t i = 0; peer->paths && i < peer->n_paths; i++)
                        path_free(peer->paths[i]);
                peer->paths = mfree(peer->paths);
        }

        while (t->retired) {
                Snapshot *s = t->retired;
                t->retired = s->retired_next;
                snapshot_free(s);
        }
        for (size_t k = 0; k < t->n_peers; k++)
                t->peers[k]->snapshot = snapshot_free(t->peers[k]->snapshot);

        if (t->rtnl)
                unconfigure_device(t);
        tun_close(&t->tun);
        if (t->nft) {
                int r = nft_remove(t->nft, t->name);
                if (r < 0)
                        log_tunnel_warning_errno(t, r, "Failed to delete nftables table 'inet mpt-%s', ignoring: %m",
                                                 t->name);
                nft_close(t->nft);
        }
        free(t->fw_remotes);

        sd_event_source_disable_unref(t->control_source);
        sd_event_source_disable_unref(t->reclaim_timer);
        for (size_t k = 0; k < t->n_peers; k++) {
                session_stop(t->peers[k]);
                feedback_stop(t->peers[k]);
        }
        sd_event_source_disable_unref(t->refresh_event);
        rtnl_monitor_free(t->monitor);
        for (size_t i = 0; i < t->n_pending_close; i++)
                safe_close(t->pending_close[i]);
        free(t->pending_close);
        safe_close(t->control_eventfd);
        free(t->control_queue);
        for (size_t k = 0; k < t->n_peers; k++)
                peer_free(t->peers[k]);
        free(t->peers);
        worker_pool_free(t);
        pthread_mutex_destroy(&t->control_lock);
        free(t->address_added);
        free(t->route_added);
        rtnl_close(t->rtnl);
        sd_event_unref(t->event);
        for (size_t i = 0; i < t->n_old_profiles; i++)
                profile_free(t->old_profiles[i]);
        free(t->old_profiles);
        if (t->owns_profile)
                profile_free(t->profile);
        free(t->reload_file);
        return mfree(t);
}
