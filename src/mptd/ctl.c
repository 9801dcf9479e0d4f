/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ctl-protocol.h"
#include "ctl.h"
#include "session.h"
#include "worker.h"
#include "devclass.h"
#include "log.h"
#include "reload.h"

#define CTL_CONNECTIONS_MAX 64

typedef struct CtlConnection CtlConnection;

struct CtlServer {
        sd_event *event;
        Tunnel *tunnel;
        char *path;
        int fd;
        sd_event_source *source;
        CtlConnection *connections;
        unsigned n_connections;
        uint64_t refused;
        gid_t group; /* members may use the socket too; (gid_t) -1: none */
};

struct CtlConnection {
        CtlServer *server;
        int fd;
        sd_event_source *source;
        CtlConnection *next, *prev;
};

static void connection_free(CtlConnection *c) {
        CtlServer *s = c->server;

        if (c->prev)
                c->prev->next = c->next;
        else
                s->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_connections--;
        sd_event_source_disable_unref(c->source);
        safe_close(c->fd);
        free(c);
}

static void write_counters(CtlWriter *w, const PathCounters *c, bool traffic) {
        if (traffic) {
                ctl_writer_field(w, "tx_packets", "%" PRIu64, c->tx_packets);
                ctl_writer_field(w, "tx_bytes", "%" PRIu64, c->tx_bytes);
                ctl_writer_field(w, "rx_packets", "%" PRIu64, c->rx_packets);
                ctl_writer_field(w, "rx_bytes", "%" PRIu64, c->rx_bytes);
                ctl_writer_field(w, "keepalives_tx", "%" PRIu64, c->keepalives_tx);
                ctl_writer_field(w, "keepalives_rx", "%" PRIu64, c->keepalives_rx);
        }
        for (MptDropReason r = 0; r < _MPT_DROP_MAX; r++) {
                char key[64];
                snprintf(key, sizeof key, "drop.%s", mpt_drop_reason_to_string(r));
                ctl_writer_field(w, key, "%" PRIu64, c->drops[r]);
        }
}

/* A path's one-way delay as this end sees it now (µs; 0: unknown): half its round trip, and with
 * the learned scheduler what queues on it one way now. */
static uint64_t path_delay(const Tunnel *t, const Path *p) {
        if (p->rtt == 0)
                return 0;
        if (t->secure && t->profile->tunnel.scheduler == MPT_SCHEDULER_LEARNED)
                return p->rtt / 2 + learn_queue_delay(&p->learn);
        return p->rtt / 2;
}

/* Policy=: the one-way delay the packets of rule r (NULL: of no rule) get now, as far as this end
 * can tell (µs; 0: unknown): over the paths they take, the quickest of a redundant rule's (the
 * first copy wins), the slowest of the others (the other end delivers a flow that several paths
 * carry in order, and a pinned rule's flows may be on any of its paths); and the mean time they
 * waited in the hold queue (hold.h). */
static uint64_t policy_delay(const Tunnel *t, const MptPolicyRule *r, size_t class) {
        Peer *peer = t->peers[0];
        const Snapshot *s = peer->snapshot;
        uint64_t paths = 0, delay = 0, wait = 0;
        unsigned workers = 0;

        if (!s)
                return 0;
        if (r && r->mode == MPT_POLICY_REDUNDANT) {
                for (unsigned k = 0; k < MIN((unsigned) r->copies, s->n_by_rtt); k++) {
                        uint64_t d = s->by_rtt[k] < peer->n_paths ? path_delay(t, peer->paths[s->by_rtt[k]]) : 0;
                        if (d > 0 && (delay == 0 || d < delay))
                                delay = d;
                }
        } else {
                if (r && r->mode == MPT_POLICY_LOWEST_LATENCY)
                        paths = s->fastest >= 0 ? UINT64_C(1) << s->fastest : 0;
                else if (r && r->mode == MPT_POLICY_PINNED && (r->paths & s->up_paths) != 0)
                        paths = r->paths & s->up_paths;
                else
                        for (size_t i = 0; i < s->vector_len; i++)
                                paths |= UINT64_C(1) << s->vector[i];
                for (uint64_t m = paths; m != 0; m &= m - 1) {
                        unsigned p = (unsigned) __builtin_ctzll(m);
                        if (p < peer->n_paths)
                                delay = MAX(delay, path_delay(t, peer->paths[p]));
                }
        }
        if (delay == 0)
                return 0;
        for (unsigned k = 0; k < t->n_workers; k++)
                if (worker_policy_counter(t->workers[k], class, WORKER_POLICY_HITS) > 0) {
                        wait += worker_policy_counter(t->workers[k], class, WORKER_POLICY_WAIT_NSEC);
                        workers++;
                }
        return delay + (workers > 0 ? wait / workers / NSEC_PER_USEC : 0);
}

static uint64_t policy_sum(const Tunnel *t, size_t class, WorkerPolicyCounter counter) {
        uint64_t v = 0;

        for (unsigned k = 0; k < t->n_workers; k++)
                v += worker_policy_counter(t->workers[k], class, counter);
        return v;
}

/* Policy=: a class's counters and delay: a rule's ("policy_hits.3", member `member` the rule's
 * number), or those of the traffic no rule matches (r NULL, member "other"). */
static void write_policy_class(CtlWriter *w, const Tunnel *t, const MptPolicyRule *r, size_t class, const char *member) {
        uint64_t delay = policy_delay(t, r, class);
        char key[48];

        snprintf(key, sizeof key, "policy_hits.%s", member);
        ctl_writer_field(w, key, "%" PRIu64, policy_sum(t, class, WORKER_POLICY_HITS));
        if (r) {
                snprintf(key, sizeof key, "policy_copies.%s", member);
                ctl_writer_field(w, key, "%" PRIu64, policy_sum(t, class, WORKER_POLICY_COPIES));
        }
        snprintf(key, sizeof key, "policy_received.%s", member);
        ctl_writer_field(w, key, "%" PRIu64, policy_sum(t, class, WORKER_POLICY_RECEIVED));
        snprintf(key, sizeof key, "policy_duplicates.%s", member);
        ctl_writer_field(w, key, "%" PRIu64, policy_sum(t, class, WORKER_POLICY_DUPLICATES));
        snprintf(key, sizeof key, "policy_delay_us.%s", member);
        if (delay > 0)
                ctl_writer_field(w, key, "%" PRIu64, delay);
        else
                ctl_writer_field(w, key, "%s", "");
}

/* How packets move between the TUN device and the sockets. */
static void write_offloads(Tunnel *t, CtlWriter *w) {
        char off[64];

        ctl_writer_field(w, "vnet_hdr", "%s", t->tun.vnet_hdr ? "yes" : "no");
        ctl_writer_field(w, "offloads", "%s", tun_offloads_to_string(t->tun.offloads, off, sizeof off));
        ctl_writer_field(w, "udp_gso", "%s",
                         dataplane_options.offload && dataplane_options.batch > 1 &&
                                         !__atomic_load_n(&t->gso_failed, __ATOMIC_RELAXED)
                                 ? "yes"
                                 : "no");
        ctl_writer_field(w, "udp_gro", "%s", dataplane_options.offload && dataplane_options.batch > 1 ? "yes" : "no");
        ctl_writer_field(w, "batch", "%u", dataplane_options.batch);
}

/* Secure mode: where the keys come from, and the epochs (none in compat mode). */
static void write_keys(Tunnel *t, CtlWriter *w) {
        Peer *peer = t->peers[0];

        if (peer->hs) {
                /* With the handshake the epochs are the current session's ids: this end's (what the
                 * other end puts in its datagrams) and the other end's. */
                const MptHandshakeKeys *k = mpt_handshake_keys(peer->hs);
                char pub[MPT_KEY_BASE64_LEN + 1];
                MptKey pk = { .set = true };

                memcpy(pk.bytes, mpt_handshake_public_key(peer->hs), sizeof pk.bytes);
                ctl_writer_field(w, "keys", "handshake");
                ctl_writer_field(w, "public_key", "%s", mpt_key_to_base64(&pk, pub));
                ctl_writer_field(w, "epoch", "0x%016" PRIx64, k->current.recv.epoch);
                ctl_writer_field(w, "peer_epoch", "0x%016" PRIx64, k->current.send.epoch);
                ctl_writer_field(w, "peer_epochs", "%" PRIu64, __atomic_load_n(&peer->peer_epochs, __ATOMIC_RELAXED));
                ctl_writer_field(w, "handshakes", "%" PRIu64, peer->hs_initiations);
                ctl_writer_field(w, "sessions", "%" PRIu64, peer->hs_sessions);
                /* Absent while there is no session. */
                if (k->current.recv.epoch != 0)
                        ctl_writer_field(w, "session_age_us", "%" PRIu64, session_now() - peer->hs_session_at);
        } else if (t->secure) {
                uint64_t peer_epoch = mpt_secure_rx_peer_epoch(peer->rx->secure);

                ctl_writer_field(w, "keys", "pre-shared");
                ctl_writer_field(w, "epoch", "0x%016" PRIx64, peer->epoch);
                ctl_writer_field(w, "peer_epoch", "0x%016" PRIx64, peer_epoch);
                ctl_writer_field(w, "peer_epochs", "%" PRIu64, __atomic_load_n(&peer->peer_epochs, __ATOMIC_RELAXED));
        }
}

/* What the reorder buffers did (their counters summed over the lanes). */
static void write_reorder(Tunnel *t, CtlWriter *w) {
        ReorderStats st;
        size_t held;

        rx_shared_stats(t->peers[0]->rx, &st, &held);
        ctl_writer_field(w, "reorder.delivered", "%" PRIu64, st.delivered);
        ctl_writer_field(w, "reorder.held", "%" PRIu64, st.held);
        ctl_writer_field(w, "reorder.late", "%" PRIu64, st.late);
        ctl_writer_field(w, "reorder.lost", "%" PRIu64, st.lost);
        ctl_writer_field(w, "reorder.timeouts", "%" PRIu64, st.timeouts);
        ctl_writer_field(w, "reorder.duplicates", "%" PRIu64, st.duplicates);
        ctl_writer_field(w, "reorder.stale", "%" PRIu64, st.stale);
        ctl_writer_field(w, "reorder.resyncs", "%" PRIu64, st.resyncs);
        ctl_writer_field(w, "reorder.overflows", "%" PRIu64, st.overflows);
        ctl_writer_field(w, "reorder.early", "%" PRIu64, st.early);
        ctl_writer_field(w, "reorder.buffered", "%zu", held);
}

static void write_policy(Tunnel *t, CtlWriter *w) {
        Peer *peer = t->peers[0];
        const MptTunnelConfig *c = &t->profile->tunnel;

        /* Policy=: each rule as it reads, its counters and delay, those of the traffic no rule
         * matches, and the path of lowest-latency. */
        for (size_t i = 0; i < c->policy.n; i++) {
                _cleanup_free_ char *rule = mpt_policy_format(&c->policy.items[i]);
                char key[48], member[24];

                snprintf(member, sizeof member, "%zu", i);
                snprintf(key, sizeof key, "policy.%s", member);
                ctl_writer_field(w, key, "%s", strna(rule));
                write_policy_class(w, t, &c->policy.items[i], i, member);
        }
        if (c->policy.n > 0)
                write_policy_class(w, t, NULL, POLICY_CLASS_OTHER, "other");
        for (size_t i = 0; i < c->policy.n; i++)
                if (c->policy.items[i].mode == MPT_POLICY_LOWEST_LATENCY) {
                        ctl_writer_field(w, "policy_fastest", "%s",
                                         peer->fastest >= 0 && (size_t) peer->fastest < peer->n_paths ? peer->paths[peer->fastest]->name : "");
                        break;
                }
}

static void write_workers(Tunnel *t, CtlWriter *w) {
        /* Which workers move the data: packets each received and sent, over all paths. */
        for (unsigned k = 0; k < t->n_workers; k++) {
                uint64_t rx, tx;
                char key[32];

                tunnel_worker_packets(t, k, &rx, &tx);
                snprintf(key, sizeof key, "worker_rx.%u", k);
                ctl_writer_field(w, key, "%" PRIu64, rx);
                snprintf(key, sizeof key, "worker_tx.%u", k);
                ctl_writer_field(w, key, "%" PRIu64, tx);
        }
        /* And how much they wait for each other: the locks of what they share. */
        for (unsigned k = 0; k < t->n_workers; k++) {
                uint64_t waits, wait_ns;
                char key[32];

                tunnel_worker_contention(t, k, &waits, &wait_ns);
                snprintf(key, sizeof key, "worker_lock_waits.%u", k);
                ctl_writer_field(w, key, "%" PRIu64, waits);
                snprintf(key, sizeof key, "worker_lock_wait_us.%u", k);
                ctl_writer_field(w, key, "%" PRIu64, wait_ns / 1000);
        }
}

/* One path's record: its configuration, state, measurements and counters. */
static void write_path(Tunnel *t, CtlWriter *w, size_t i, usec_t now) {
        Peer *peer = t->peers[0];
        const MptTunnelConfig *c = &t->profile->tunnel;
        Path *p = peer->paths[i];
        MptSockaddr local;
        PathCounters pc;
        char buf[MPT_ADDRESS_STRLEN];

        sockaddr_from_address(&p->local, c->local_port, p->ifindex, &local);
        ctl_writer_record(w, "path");
        ctl_writer_field(w, "name", "%s", p->name);
        ctl_writer_field(w, "state", "%s", path_state_to_string(p->state));
        ctl_writer_field(w, "state_age_us", "%" PRIu64, now - p->state_since);
        ctl_writer_field(w, "reason", "%s", strempty(path_reason(p)));
        ctl_writer_field(w, "interface", "%s", strempty(p->config->interface));
        ctl_writer_field(w, "ifindex", "%i", p->ifindex);
        ctl_writer_field(w, "class", "%s", mpt_devclass_to_string(p->devclass));
        ctl_writer_field(w, "local", "%s", p->fds ? sockaddr_to_string(&local, buf) : "");
        ctl_writer_field(w, "remote", "%s", sockaddr_to_string(&p->remote, buf));
        ctl_writer_field(w, "remote_changes", "%" PRIu64, p->remote_changes);
        ctl_writer_field(w, "pin_remote", "%s", p->config->pin_remote ? "yes" : "no");
        ctl_writer_field(w, "listens", "%s", path_config_listens(p->config) ? "yes" : "no");
        ctl_writer_field(w, "weight", "%" PRIu32, path_effective_weight(p));
        ctl_writer_field(w, "weight_source", "%s", path_weight_source_to_string(path_weight_source(p)));
        ctl_writer_field(w, "receive_weight", "%" PRIu32, p->config->receive_weight);
        ctl_writer_field(w, "peer_receive_weight", "%u", p->peer_receive_weight);
        ctl_writer_field(w, "backup", "%s", path_is_backup(p) ? "yes" : "no");
        ctl_writer_field(w, "demoted", "%s", p->demoted ? "yes" : "no");
        ctl_writer_field(w, "loss_threshold_permille", "%" PRIu32, p->config->loss_threshold);
        ctl_writer_field(w, "keepalive_interval_us", "%" PRIu64, p->config->keepalive_interval);
        ctl_writer_field(w, "dead_time_us", "%" PRIu64, p->config->dead_time);
        if (p->last_keepalive_rx > 0)
                ctl_writer_field(w, "last_keepalive_us", "%" PRIu64, now - p->last_keepalive_rx);
        else
                ctl_writer_field(w, "last_keepalive_us", "%s", "");
        if (p->rtt > 0) {
                ctl_writer_field(w, "rtt_us", "%" PRIu64, p->rtt);
                ctl_writer_field(w, "rtt_var_us", "%" PRIu64, p->rtt_var);
        } else {
                ctl_writer_field(w, "rtt_us", "%s", "");
                ctl_writer_field(w, "rtt_var_us", "%s", "");
        }
        if (p->rx_loss_total >= 1.0)
                ctl_writer_field(w, "loss_rx", "%.3f", p->rx_loss_lost / p->rx_loss_total);
        else
                ctl_writer_field(w, "loss_rx", "%s", "");
        if (p->tx_loss_total >= 1.0)
                ctl_writer_field(w, "loss_tx", "%.3f", p->tx_loss_lost / p->tx_loss_total);
        else
                ctl_writer_field(w, "loss_tx", "%s", "");
        ctl_writer_field(w, "peer_flags", "%u", p->peer_flags);
        ctl_writer_field(w, "queued_locally", "%s", tunnel_path_queued_locally(t, i) ? "yes" : "no");
        /* The learned scheduler's view (secure mode): what the path delivers, its queueing
         * delay, its share of the vector. */
        if (t->secure && t->profile->tunnel.scheduler == MPT_SCHEDULER_LEARNED) {
                uint64_t share = 0;
                for (size_t j = 0; j < peer->n_paths; j++)
                        share += peer->learn_published[j];
                share = share > 0 ? peer->learn_published[i] * UINT64_C(1000) / share : 0;
                ctl_writer_field(w, "learned_rate_bps", "%" PRIu64,
                                 p->learn.rate > 0 ? p->learn.rate * 8 : UINT64_C(0));
                ctl_writer_field(w, "delivered_bps", "%" PRIu64, p->learn.delivered * 8);
                ctl_writer_field(w, "pace_rate_bps", "%" PRIu64, tunnel_path_pace_rate(t, i) * 8);
                ctl_writer_field(w, "burst_rate_bps", "%" PRIu64, p->learn.peak * 8);
                ctl_writer_field(w, "queue_delay_us", "%" PRIu64, learn_queue_delay(&p->learn));
                /* Half the round trip (the path's own delay, if symmetric), and what
                 * queues one way now. */
                if (p->rtt > 0)
                        ctl_writer_field(w, "one_way_delay_us", "%" PRIu64, path_delay(t, p));
                ctl_writer_field(w, "saturated", "%s", p->learn.saturated ? "yes" : "no");
                ctl_writer_field(w, "share_permille", "%" PRIu64, share);
        }
        if (peer->reorder_enabled)
                ctl_writer_field(w, "reorder_extra_us", "%" PRIu64, p->reorder_extra);
        tunnel_sum_counters(t, (int) i, &pc);
        write_counters(w, &pc, true);
}

void ctl_write_show(Tunnel *t, CtlWriter *w) {
        Peer *peer = t->peers[0];
        const MptTunnelConfig *c = &t->profile->tunnel;
        usec_t now = now_usec();
        PathCounters pc;
        char buf[MPT_ADDRESS_STRLEN];

        ctl_writer_record(w, "tunnel");
        ctl_writer_field(w, "name", "%s", t->name);
        ctl_writer_field(w, "ifname", "%s", t->tun.ifname);
        ctl_writer_field(w, "ifindex", "%i", t->tun.ifindex);
        ctl_writer_field(w, "device", "%s", t->tun.persistent ? "attached" : "created");
        write_offloads(t, w);
        ctl_writer_field(w, "pid", "%i", (int) getpid());
        ctl_writer_field(w, "profile", "%s", strempty(t->profile->filename));
        ctl_writer_field(w, "mtu", "%" PRIu32, t->mtu);
        ctl_writer_field(w, "workers", "%u", t->n_workers);
        ctl_writer_field(w, "scheduler", "%s", mpt_scheduler_to_string(c->scheduler));
        ctl_writer_field(w, "mode", "%s", mpt_mode_to_string(c->mode));
        ctl_writer_field(w, "cipher", "%s", t->secure ? mpt_cipher_to_string(peer_tx_cipher(t->peers[0])) : "none");
        write_keys(t, w);
        ctl_writer_field(w, "local_port", "%u", c->local_port);
        ctl_writer_field(w, "remote_port", "%u", c->remote_port);
        ctl_writer_field(w, "reorder_window", "%" PRIu32, c->reorder_window);
        ctl_writer_field(w, "reorder_max_delay_us", "%" PRIu64, c->reorder_max_delay);
        ctl_writer_field(w, "paths_total", "%zu", peer->n_paths);
        ctl_writer_field(w, "paths_up", "%u", peer->paths_up);
        ctl_writer_field(w, "session", "0x%08x", t->session);
        ctl_writer_field(w, "peer_session", "0x%08x", peer->peer_session);
        ctl_writer_field(w, "control_queue_overflows", "%" PRIu64, __atomic_load_n(&t->control_overflows, __ATOMIC_RELAXED));
        ctl_writer_field(w, "peer_restarts", "%" PRIu64, peer->peer_restarts);
        if (t->secure) {
                ctl_writer_field(w, "feedback_rx", "%" PRIu64, peer->feedback_rx);
                ctl_writer_field(w, "feedback_tx", "%" PRIu64, peer->feedback_tx);
                if (c->scheduler == MPT_SCHEDULER_LEARNED) {
                        ctl_writer_field(w, "split", "%s", peer->learn_by_rates ? "rates" : "filling");
                        ctl_writer_field(w, "load", "%s", peer->learn_light ? "light" : "saturating");
                        ctl_writer_field(w, "load_bps", "%" PRIu64, peer->learn_load * 8);
                }
        }
        if (peer->reorder_enabled) {
                ctl_writer_field(w, "reorder_hold_us", "%" PRIu64, __atomic_load_n(&peer->reorder_hold, __ATOMIC_RELAXED));
                ctl_writer_field(w, "reorder_spread_us", "%" PRIu64,
                                 __atomic_load_n(&peer->reorder_spread, __ATOMIC_RELAXED));
        }
        ctl_writer_field(w, "uptime_us", "%" PRIu64, now - t->started);
        {
                size_t n = 0;
                char list[MPT_ADDRESSES_MAX * MPT_ADDRESS_STRLEN] = "";
                for (size_t i = 0; i < c->addresses.n; i++) {
                        n += (size_t) snprintf(list + n, sizeof list - n, "%s%s", i ? "," : "",
                                               prefix_to_string(&c->addresses.items[i], buf));
                }
                ctl_writer_field(w, "addresses", "%s", list);
        }
        if (peer->reorder_enabled)
                write_reorder(t, w);
        tunnel_sum_counters(t, -1, &pc);
        write_counters(w, &pc, false);
        if (peer->repair) {
                ctl_writer_field(w, "repair.asked", "%" PRIu64, pc.repair_asked);
                ctl_writer_field(w, "repair.requested", "%" PRIu64, pc.repair_requested);
                ctl_writer_field(w, "repair.sent", "%" PRIu64, pc.repair_sent);
                ctl_writer_field(w, "repair.missed", "%" PRIu64, pc.repair_missed);
        }
        write_policy(t, w);
        write_workers(t, w);

        for (size_t i = 0; i < peer->n_paths; i++)
                write_path(t, w, i, now);
}

/* The peer's credentials as the kernel recorded them at connect(). */
static bool peer_cred(int fd, struct ucred *ret) {
        socklen_t len = sizeof *ret;

        return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, ret, &len) >= 0 && len == sizeof *ret;
}

/* Root or mptd's own user (not a member of the control group). */
static bool peer_privileged(int fd) {
        struct ucred cred;

        return peer_cred(fd, &cred) && (cred.uid == 0 || cred.uid == geteuid());
}

typedef struct ShowconfContext {
        Tunnel *t;
        bool show_key;
} ShowconfContext;

static int showconf_override(const MptConfKey *k, size_t path_index, void *userdata, char **value) {
        ShowconfContext *ctx = userdata;

        if (path_index == SIZE_MAX) {
                /* The key itself only to root and mptd's own user, not to a control group. */
                if (!ctx->show_key && (k->flags & MPT_CONF_SECRET)) {
                        *value = NULL;
                        return 1;
                }
                return 0;
        }
        if (path_index < ctx->t->peers[0]->n_paths && ctx->t->peers[0]->paths[path_index]->weight_runtime_set &&
            k == conf_key(MPT_KEY_PATH_WEIGHT))
                return asprintf(value, "%" PRIu32, ctx->t->peers[0]->paths[path_index]->weight_runtime) < 0 ? -ENOMEM : 1;
        return 0;
}

/* The one field of a showconf "line" record (not a show field: see show-fields.h). */
#define SHOWCONF_TEXT "text"

/* mptctl showconf: the running configuration as a profile, one "line" record per line: the
 * profile as mptd read it, with the weights set at run time (mptctl path ... set weight); a path
 * taken down by mptctl gets a comment. */
static int ctl_write_showconf(Tunnel *t, CtlWriter *w, bool show_key) {
        Peer *peer = t->peers[0];
        ShowconfContext ctx = { .t = t, .show_key = show_key };
        _cleanup_free_ char *text = NULL;
        char *line, *save = NULL;
        /* [Path] sections seen: profile_to_text() writes them in the paths' order, each with its
         * Name= first. */
        size_t path = 0;
        int r;

        r = profile_to_text_with(t->profile, showconf_override, &ctx, &text);
        if (r < 0)
                return r;
        for (line = text; line; line = save) {
                save = strchr(line, '\n');
                if (save)
                        *save++ = 0;
                if (!save && *line == 0)
                        break; /* after the last newline */
                ctl_writer_record(w, "line");
                ctl_writer_field(w, SHOWCONF_TEXT, "%s", line);
                if (streq(line, "[Path]"))
                        path++;
                else if (path > 0 && path <= peer->n_paths && startswith(line, "Name=") &&
                         peer->paths[path - 1]->admin_down) {
                        ctl_writer_record(w, "line");
                        ctl_writer_field(w, SHOWCONF_TEXT, "%s", "# taken down with mptctl path ... down (not a profile key)");
                }
        }
        if (t->profile->tunnel.key.set && !show_key) {
                ctl_writer_record(w, "line");
                ctl_writer_field(w, SHOWCONF_TEXT, "%s", "");
                ctl_writer_record(w, "line");
                ctl_writer_field(w, SHOWCONF_TEXT, "%s", "# Key= is left out: only root and mptd's own user see it");
        }
        return 0;
}

static void handle_request(CtlConnection *c, const char *buf, size_t len, bool authorized) {
        Tunnel *t = c->server->tunnel;
        char denied[160];
        _cleanup_free_ char *reply = NULL, *msg = NULL, *reload_msg = NULL;
        const char *err = NULL;
        CtlRequest req;
        CtlWriter w;
        size_t reply_len;
        int r;

        if (!authorized) {
                struct group *g = c->server->group != (gid_t) -1 ? getgrgid(c->server->group) : NULL;

                if (c->server->group == (gid_t) -1)
                        snprintf(denied, sizeof denied, "permission denied: only root and the user mptd runs as "
                                 "may use the control socket of tunnel '%s'", t->name);
                else if (g)
                        snprintf(denied, sizeof denied, "permission denied: only root, the user mptd runs as and "
                                 "members of group '%s' may use the control socket of tunnel '%s'", g->gr_name, t->name);
                else
                        snprintf(denied, sizeof denied, "permission denied: only root, the user mptd runs as and "
                                 "members of group %u may use the control socket of tunnel '%s'",
                                 (unsigned) c->server->group, t->name);
                r = -EPERM, err = denied;
        } else {
                r = ctl_request_parse(buf, len, &req, &err);
                if (r >= 0 && (req.command == CTL_COMMAND_RELOAD || req.command == CTL_COMMAND_SYNCCONF)) {
                        /* It rewrites addresses, routes and the firewall: no less than who could
                         * start mptd. */
                        if (!peer_privileged(c->fd)) {
                                r = -EPERM;
                                snprintf(denied, sizeof denied, "permission denied: only root and the user mptd "
                                         "runs as may reload tunnel '%s'", t->name);
                                err = denied;
                        } else {
                                r = tunnel_reload_file(t, req.command == CTL_COMMAND_SYNCCONF ? req.file : NULL,
                                                       &reload_msg);
                                if (r < 0)
                                        err = r == -EBUSY ? "reload refused, nothing changed"
                                                          : r == -EINVAL ? "the file has errors, nothing changed"
                                                                         : "reload failed, nothing changed";
                        }
                } else if (r >= 0 && req.command != CTL_COMMAND_SHOW && req.command != CTL_COMMAND_SHOWCONF) {
                        Path *p = tunnel_find_path(t, req.path);
                        if (!p) {
                                r = -ENOENT;
                                if (asprintf(&msg, "tunnel '%s' has no path '%s'", t->name, req.path) >= 0)
                                        err = msg;
                        } else if (req.command == CTL_COMMAND_PATH_WEIGHT)
                                r = path_set_weight(p, req.weight);
                        else
                                r = path_set_admin(p, req.command == CTL_COMMAND_PATH_DOWN);
                        if (r < 0 && !err)
                                err = strerror(-r);
                }
        }

        if (ctl_writer_begin(&w, r < 0 ? r : 0, err) < 0)
                return;
        if (reload_msg) {
                /* One record per line: what changed, or each problem. */
                char *save = NULL;
                for (char *line = strtok_r(reload_msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                        ctl_writer_record(&w, r < 0 ? "problem" : "line");
                        ctl_writer_field(&w, SHOWCONF_TEXT, "%s", line);
                }
        }
        if (r >= 0 && req.command == CTL_COMMAND_SHOW) {
                static bool reported = false;

                ctl_write_show(t, &w);
                /* A field the table of show fields lacks (or of another type) is a bug of this
                 * build: mptctl would give it a wrong type. Once per process. */
                if (w.bad > 0 && !reported) {
                        log_tunnel_error_errno(t, 0, "BUG: %zu show field%s not in the table of show fields, the first: %s",
                                         w.bad, w.bad == 1 ? "" : "s", w.bad_key);
                        reported = true;
                }
        }
        if (r >= 0 && req.command == CTL_COMMAND_SHOWCONF) {
                r = ctl_write_showconf(t, &w, peer_privileged(c->fd));
                if (r < 0) {
                        ctl_writer_abandon(&w);
                        if (ctl_writer_begin(&w, r, strerror(-r)) < 0)
                                return;
                }
        }
        if (ctl_writer_finish(&w, &reply, &reply_len) < 0)
                return;
        if (send(c->fd, reply, reply_len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                log_debug_errno(errno, "Failed to send control reply, ignoring: %m");
}

/* The peer's credentials as the kernel recorded them at connect(): root, our own user, or (with a
 * control group) a member of it, by primary or supplementary group. */
static bool peer_authorized(CtlServer *srv, int fd) {
        struct ucred cred;
        socklen_t len;
        gid_t groups[256];

        if (!peer_cred(fd, &cred))
                return false;
        if (cred.uid == 0 || cred.uid == geteuid())
                return true;
        if (srv->group == (gid_t) -1)
                return false;
        if (cred.gid == srv->group)
                return true;
        len = sizeof groups;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
                return false; /* ERANGE: more groups than we look at; refuse rather than guess */
        for (size_t i = 0; i < len / sizeof(gid_t); i++)
                if (groups[i] == srv->group)
                        return true;
        return false;
}

static int on_connection(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        CtlConnection *c = userdata;
        char buf[MPT_CTL_REQUEST_MAX + 1];
        ssize_t n;

        if (revents & EPOLLIN) {
                n = recv(fd, buf, sizeof buf, MSG_DONTWAIT | MSG_TRUNC);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        connection_free(c);
                        return 0;
                }
                if (n == 0) {
                        connection_free(c);
                        return 0;
                }
                /* A message longer than the buffer arrives cut; MSG_TRUNC gives its real size. */
                handle_request(c, buf, MIN((size_t) n, sizeof buf), peer_authorized(c->server, fd));
                return 0;
        }
        if (revents & (EPOLLHUP | EPOLLERR))
                connection_free(c);
        return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        CtlServer *srv = userdata;
        _cleanup_close_ int cfd = -EBADF;
        CtlConnection *c;
        int r;

        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0)
                return 0;
        if (srv->n_connections >= CTL_CONNECTIONS_MAX) {
                /* Under a flood, the oldest idle connection makes room: a client that holds
                 * connections open cannot lock out mptctl. */
                srv->refused++;
                connection_free(srv->connections);
        }
        c = calloc(1, sizeof(CtlConnection));
        if (!c)
                return 0;
        c->server = srv;
        c->fd = TAKE_FD(cfd);
        r = sd_event_add_io(srv->event, &c->source, c->fd, EPOLLIN, on_connection, c);
        if (r < 0) {
                safe_close(c->fd);
                free(c);
                return 0;
        }
        /* Newest last: the list head is the oldest connection. */
        if (!srv->connections)
                srv->connections = c;
        else {
                CtlConnection *last = srv->connections;
                while (last->next)
                        last = last->next;
                last->next = c;
                c->prev = last;
        }
        srv->n_connections++;
        return 0;
}

int ctl_server_new(sd_event *event, const char *name, gid_t group, CtlServer **ret) {
        _cleanup_(ctl_server_freep) CtlServer *s = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        const char *dir = ctl_runtime_dir();
        mode_t old;
        int r, probe;

        s = calloc(1, sizeof(CtlServer));
        if (!s)
                return log_oom();
        s->fd = -EBADF;
        s->group = group;
        r = ctl_socket_path(name, &s->path);
        if (r < 0)
                return log_error_errno(r, "%s: control socket path is unusable: %m", name);
        strcpy(sa.sun_path, s->path);

        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "%s: failed to create %s: %m", name, dir);

        /* Is somebody serving this tunnel already? */
        probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (probe >= 0) {
                if (connect(probe, (struct sockaddr *) &sa, sizeof sa) >= 0) {
                        safe_close(probe);
                        s->path = mfree(s->path);
                        return log_error_errno(SYNTHETIC_ERRNO(EADDRINUSE),
                                               "%s: another mptd already runs this tunnel (%s is live).",
                                               name, sa.sun_path);
                }
                safe_close(probe);
        }
        (void) unlink(s->path);

        s->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s->fd < 0)
                return log_error_errno(errno, "%s: failed to create control socket: %m", name);
        /* 0600, or 0660 for the control group: connect() needs write permission on the file. The
         * peer's credentials are checked again for every request (SO_PEERCRED). */
        old = umask(group == (gid_t) -1 ? 0177 : 0117);
        r = bind(s->fd, (struct sockaddr *) &sa, sizeof sa);
        umask(old);
        if (r < 0)
                return log_error_errno(errno, "%s: failed to bind control socket %s: %m", name, s->path);
        if (group != (gid_t) -1 && chown(s->path, (uid_t) -1, group) < 0)
                return log_error_errno(errno, "%s: failed to give control socket %s to group %u: %m%s", name,
                                       s->path, (unsigned) group,
                                       errno == EPERM ? " (mptd needs CAP_CHOWN for --control-group, unless it "
                                                        "is a member of the group)" : "");
        if (listen(s->fd, 16) < 0)
                return log_error_errno(errno, "%s: failed to listen on %s: %m", name, s->path);
        s->event = sd_event_ref(event);
        r = sd_event_add_io(event, &s->source, s->fd, EPOLLIN, on_accept, s);
        if (r < 0)
                return log_error_errno(r, "%s: failed to watch control socket: %m", name);
        /* Nothing is served before a tunnel is attached. */
        (void) sd_event_source_set_enabled(s->source, SD_EVENT_OFF);
        *ret = TAKE_PTR(s);
        return 0;
}

CtlServer *ctl_server_free(CtlServer *s) {
        if (!s)
                return NULL;
        while (s->connections)
                connection_free(s->connections);
        sd_event_source_disable_unref(s->source);
        safe_close(s->fd);
        if (s->path)
                (void) unlink(s->path);
        free(s->path);
        sd_event_unref(s->event);
        return mfree(s);
}

void ctl_server_attach(CtlServer *s, Tunnel *t) {
        s->tunnel = t;
        (void) sd_event_source_set_enabled(s->source, SD_EVENT_ON);
}
