/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "feedback.h"
#include "learn.h"
#include "log.h"
#include "worker.h"

static bool learned(const Tunnel *t) {
        return t->secure && t->profile->tunnel.scheduler == MPT_SCHEDULER_LEARNED;
}

/* ---- as the receiver: what arrived of the other end's paths ---- */

/* Our usable path with the smallest round-trip time (unknown counts as long), for feedback. */
static Path *fastest_path(Peer *peer) {
        Path *best = NULL;

        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *p = peer->paths[i];
                if (p->state != PATH_STATE_UP || !path_can_send(p))
                        continue;
                if (!best || (p->rtt > 0 && (best->rtt == 0 || p->rtt < best->rtt)))
                        best = p;
        }
        return best;
}

static void send_feedback(Peer *peer, usec_t now) {
        Tunnel *t = peer->tunnel;
        Path *via = fastest_path(peer);
        MptFeedback fb = { .now = now };

        /* The workers send repair requests and repairs there too. */
        __atomic_store_n(&peer->repair_via, via ? (int) via->index : -1, __ATOMIC_RELAXED);
        if (!via)
                return;
        for (unsigned id = 0; id < MPT_PATHS_MAX; id++) {
                RxTrack sum = {}, r;

                /* One worker receives a path, but any may have: what they counted adds up (a
                 * lane's counters that one saw are not the ones another saw), and the marker
                 * that arrived last counts. */
                for (unsigned w = 0; w < t->n_workers; w++) {
                        worker_rx_track_read(t->workers[w], id, &r);
                        sum.bytes += r.bytes;
                        sum.packets += r.packets;
                        sum.sent += r.sent;
                        sum.peak = MAX(sum.peak, MAX(r.peak, r.peak_prev));
                        if (r.marker != 0 && (sum.marker == 0 || r.arrival > sum.arrival)) {
                                sum.marker = r.marker;
                                sum.lane = r.lane;
                                sum.arrival = r.arrival;
                        }
                }
                /* News of the path: a new marker, or datagrams that arrived since (control frames
                 * only, maybe: the sender learns that the path is alive). */
                if (sum.packets == 0 ||
                    (sum.marker == peer->feedback_reported[id] && sum.lane == peer->feedback_reported_lane[id] &&
                     sum.packets == peer->feedback_reported_packets[id]))
                        continue;
                peer->feedback_reported[id] = sum.marker;
                peer->feedback_reported_lane[id] = sum.lane;
                peer->feedback_reported_packets[id] = sum.packets;
                fb.entries[fb.n++] = (MptFeedbackEntry) {
                        .path_id = (uint8_t) id,
                        .lane = sum.lane,
                        .packets = sum.packets,
                        .bytes = sum.bytes,
                        .marker = sum.marker,
                        .arrival = sum.arrival,
                        .peak_rate = sum.peak,
                        .sent = sum.sent,
                };
                if (fb.n == MPT_FEEDBACK_ENTRIES_MAX) {
                        path_send_feedback(via, &fb);
                        fb.n = 0;
                }
        }
        if (fb.n > 0)
                path_send_feedback(via, &fb);
}

/* ---- as the sender: what our paths delivered ---- */

/* The paths the vector has now (up; the normal ones, or the backups when no normal one is). */
static size_t candidates(const Peer *peer, uint8_t ids[static MPT_PATHS_MAX]) {
        size_t n = 0;

        for (int pass = 0; pass < 2 && n == 0; pass++)
                for (size_t i = 0; i < peer->n_paths; i++) {
                        const Path *p = peer->paths[i];
                        if (p->state == PATH_STATE_UP && path_is_backup(p) == (pass == 1))
                                ids[n++] = (uint8_t) i;
                }
        return n;
}

static bool light_now(const Peer *peer, usec_t now) {
        return peer->learn_saturated_at + LEARN_LIGHT_AFTER_USEC < now;
}

void feedback_weights(Peer *peer, const uint8_t *ids, size_t n, uint32_t *ret) {
        const LearnPath *lp[MPT_PATHS_MAX] = {};
        uint32_t pref[MPT_PATHS_MAX] = {};

        for (size_t i = 0; i < n; i++) {
                lp[i] = &peer->paths[ids[i]]->learn;
                pref[i] = MAX(path_effective_weight(peer->paths[ids[i]]), 1u);
        }
        peer->learn_light = light_now(peer, now_usec());
        bool capped[MPT_PATHS_MAX] = {};

        peer->learn_by_rates = learn_weights(lp, pref, n, peer->learn_load, ret, capped);
        for (size_t i = 0; i < n; i++)
                peer->paths[ids[i]]->learn.capped = capped[i];
        memset(peer->learn_published, 0, sizeof peer->learn_published);
        for (size_t i = 0; i < n; i++)
                peer->learn_published[ids[i]] = ret[i];
}

/* The paths' pace rates (learn_pace_rate()) for the workers: those of the n candidates ids[]; no
 * other path is paced, nor one whose datagrams wait in a queue of this host (a qdisc or the
 * driver: worker_path_queued()). Such a bottleneck is in sight: the socket holds back what it
 * cannot take, and the path's own queue does not overflow. Pacing it instead would only keep
 * it, and the others with it, from ever looking saturated, which is what lets a path the
 * learner starved on a shared bottleneck (the hosts' CPUs, tbf on the veths of tests/lab's
 * equal paths) grow back (mptd(8), SCHEDULING). */
static void pace_update(Peer *peer, const uint8_t *ids, size_t n) {
        Tunnel *t = peer->tunnel;
        uint64_t paced = 0;

        for (size_t i = 0; i < n && dataplane_options.pace; i++) {
                if (tunnel_path_queued_locally(t, ids[i]))
                        continue;
                __atomic_store_n(&peer->pace_rate[ids[i]], learn_pace_rate(&peer->paths[ids[i]]->learn), __ATOMIC_RELAXED);
                paced |= UINT64_C(1) << ids[i];
        }
        __atomic_store_n(&peer->pace_paths, paced, __ATOMIC_RELAXED);
}

/* Publishes the vector again when a share moved by more than 1/FEEDBACK_REPUBLISH_DIV (or the
 * paths in it changed weight from or to nothing). */
static void republish(Peer *peer) {
        Tunnel *t = peer->tunnel;
        uint8_t ids[MPT_PATHS_MAX];
        uint32_t w[MPT_PATHS_MAX];
        uint64_t sum_new = 0, sum_old = 0;
        size_t n = candidates(peer, ids);
        const LearnPath *lp[MPT_PATHS_MAX] = {};
        uint32_t pref[MPT_PATHS_MAX] = {};
        bool moved = false;

        for (size_t i = 0; i < n; i++) {
                lp[i] = &peer->paths[ids[i]]->learn;
                pref[i] = MAX(path_effective_weight(peer->paths[ids[i]]), 1u);
        }
        bool by_rates = learn_weights(lp, pref, n, peer->learn_load, w, NULL);
        pace_update(peer, ids, n);
        for (size_t i = 0; i < n; i++) {
                sum_new += w[i];
                sum_old += peer->learn_published[ids[i]];
        }
        for (size_t i = 0; i < n && !moved; i++) {
                /* |new share - old share| > old share / DIV, in integers: shares are w / sum. */
                unsigned __int128 a = (unsigned __int128) w[i] * sum_old, b = (unsigned __int128) peer->learn_published[ids[i]] * sum_new;
                unsigned __int128 d = a > b ? a - b : b - a;
                moved = peer->learn_published[ids[i]] == 0 || d * FEEDBACK_REPUBLISH_DIV > b;
        }
        if (moved || by_rates != peer->learn_by_rates || light_now(peer, now_usec()) != peer->learn_light)
                (void) tunnel_publish(t);
}

void feedback_handle(Tunnel *t, const ControlEvent *ev) {
        Peer *peer = t->peers[0];
        const MptFeedback *fb = &ev->fb;
        usec_t now = now_usec();
        uint64_t total = 0;
        bool changed = false;

        peer->feedback_rx++;
        if (!learned(t))
                return;
        for (size_t i = 0; i < peer->n_paths; i++)
                total += learn_rate(&peer->paths[i]->learn);
        for (unsigned i = 0; i < fb->n; i++) {
                const MptFeedbackEntry *e = &fb->entries[i];
                bool found = false, others = false;
                usec_t sent = 0, last;
                LearnSample s;
                Path *p;

                if (e->path_id >= peer->n_paths)
                        continue;
                p = peer->paths[e->path_id];
                /* Worker i sends on lane i, with counters of its own. */
                if (e->lane < t->n_workers)
                        found = worker_tx_mark_find(t->workers[e->lane], e->path_id, e->marker, &sent, &last);
                p->learn_news = now;
                if (!found)
                        continue; /* a control frame's counter, or one too old to remember */
                /* Saturated, or at its capacity with a queue at this host (learn.h). */
                for (size_t j = 0; j < peer->n_paths; j++)
                        others |= j != e->path_id &&
                                  (peer->paths[j]->learn.saturated || peer->paths[j]->learn.queued_locally) &&
                                  peer->paths[j]->learn.updated + USEC_PER_SEC > now;
                s = (LearnSample) {
                        .datagrams = e->sent,
                        .sent = sent,
                        .arrival = e->arrival,
                        .bytes = e->bytes,
                        .packets = e->packets,
                        .peak = e->peak_rate,
                        .queued_locally = tunnel_path_queued_locally(t, e->path_id),
                };
                if (learn_sample(&p->learn, &s, now, others, total))
                        changed = true;
                if (p->learn.saturated && p->learn.updated == now)
                        peer->learn_saturated_at = now;
        }
        /* The queues moved too (learn_weights()): republish() checks whether a share did. */
        (void) changed;
        republish(peer);
}

void feedback_path_up(Path *p) {
        learn_path_restart(&p->learn);
        p->learn_news = now_usec();
}

/* Paths we keep sending on while nothing of them arrives (and news of others does). */
static bool check_silence(Peer *peer, usec_t now) {
        Tunnel *t = peer->tunnel;
        uint8_t ids[MPT_PATHS_MAX];
        size_t n = candidates(peer, ids);
        bool changed = false, news = false;

        for (size_t i = 0; i < n; i++)
                news |= peer->paths[ids[i]]->learn_news + LEARN_SILENCE_USEC > now;
        if (!news || n < 2)
                return false;
        for (size_t i = 0; i < n; i++) {
                Path *p = peer->paths[ids[i]];
                usec_t silence = MAX(LEARN_SILENCE_USEC, LEARN_SILENCE_RTTS * p->rtt), sent_last = 0;

                for (unsigned w = 0; w < t->n_workers; w++) {
                        usec_t when, last;
                        (void) worker_tx_mark_find(t->workers[w], ids[i], 0, &when, &last);
                        sent_last = MAX(sent_last, last);
                }
                /* A path that was idle and sends again: its silence counts from now. */
                if (sent_last > p->learn_sent_last && p->learn_sent_last + silence < sent_last)
                        p->learn_news = MAX(p->learn_news, sent_last);
                p->learn_sent_last = MAX(p->learn_sent_last, sent_last);
                if (p->learn_news + silence > now || p->learn.rate == LEARN_RATE_MIN)
                        continue;
                /* Only a path we are still sending on: an idle one has nothing to tell. */
                if (sent_last + FEEDBACK_INTERVAL_USEC < now)
                        continue;
                if (learn_silent(&p->learn, now)) {
                        char buf[32];
                        log_path_info(p, "Nothing of the last %s arrived at the other end: almost no traffic for it "
                                      "until it delivers again.", format_duration(silence, buf, sizeof buf));
                        changed = true;
                }
        }
        return changed;
}

usec_t feedback_reorder_hold(const Peer *peer, usec_t *ret_spread) {
        const Tunnel *t = peer->tunnel;
        usec_t lo = USEC_INFINITY, hi = 0, var = 0, max = t->profile->tunnel.reorder_max_delay, spread;
        size_t n = 0;

        for (size_t i = 0; i < peer->n_paths; i++) {
                const Path *p = peer->paths[i];
                if (p->state != PATH_STATE_UP || p->rtt == 0)
                        continue;
                lo = MIN(lo, p->rtt);
                hi = MAX(hi, p->rtt);
                var = MAX(var, p->rtt_var);
                n++;
        }
        if (n == 0) {
                /* Nothing measured yet: wait as long as allowed. */
                *ret_spread = max;
                return max;
        }
        /* Half the round trips' spread is the one-way spread of symmetric paths. A gap that loss
         * repair may fill waits a round trip of the fastest path longer: the request and what is
         * sent again take it. */
        spread = (hi - lo) / 2 + 2 * var + FEEDBACK_SPREAD_MARGIN_USEC;
        if (peer->repair)
                spread += lo + FEEDBACK_REPAIR_MARGIN_USEC;
        spread = MIN(spread, max);
        *ret_spread = spread;
        return CLAMP(2 * spread + FEEDBACK_HOLD_MARGIN_USEC, MIN(FEEDBACK_HOLD_MIN_USEC, max), max);
}

/* What the tunnel sends now (all paths), over windows of FEEDBACK_LOAD_WINDOW_USEC: the larger
 * of the last two, so that a burst counts for a while. Returns true when a window ended. */
static bool update_load(Peer *peer, usec_t now) {
        Tunnel *t = peer->tunnel;
        uint64_t bytes = 0;

        for (size_t i = 0; i < peer->n_paths; i++) {
                PathCounters c;
                tunnel_sum_counters(t, (int) i, &c);
                bytes += c.tx_bytes;
        }
        if (peer->learn_load_since == 0 || bytes < peer->learn_load_bytes) {
                peer->learn_load_since = now;
                peer->learn_load_bytes = bytes;
                return false;
        }
        if (now < peer->learn_load_since + FEEDBACK_LOAD_WINDOW_USEC)
                return false;
        peer->learn_load_win[1] = peer->learn_load_win[0];
        peer->learn_load_win[0] = (bytes - peer->learn_load_bytes) * USEC_PER_SEC / (now - peer->learn_load_since);
        peer->learn_load = MAX(peer->learn_load_win[0], peer->learn_load_win[1]);
        peer->learn_load_since = now;
        peer->learn_load_bytes = bytes;
        return true;
}

void feedback_equalize(Peer *peer, usec_t now) {
        Tunnel *t = peer->tunnel;
        usec_t slowest = 0;

        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *p = peer->paths[i];
                PathCounters pc;

                tunnel_sum_counters(t, (int) i, &pc);
                if (pc.rx_packets != p->eq_rx_packets) {
                        p->eq_rx_packets = pc.rx_packets;
                        p->eq_rx_at = now;
                }
                /* The paths the other end may send on (the normal ones: it spreads over all
                 * of them), or that carry data anyway: before the first packet of a flow, so
                 * that TCP's first round trips are what its later ones will be. */
                if (p->state == PATH_STATE_UP && path_rtt_min(p) > 0 &&
                    (!path_is_backup(p) || p->eq_rx_at + FEEDBACK_EQ_ACTIVE_USEC > now))
                        slowest = MAX(slowest, path_rtt_min(p) / 2);
        }
        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *p = peer->paths[i];
                usec_t extra = 0;

                if (p->state == PATH_STATE_UP && path_rtt_min(p) > 0 && slowest > path_rtt_min(p) / 2)
                        extra = slowest - path_rtt_min(p) / 2;
                if (extra < FEEDBACK_EQ_MIN_USEC)
                        extra = 0;
                if (extra != 0 && p->reorder_extra != 0 &&
                    (extra > p->reorder_extra ? extra - p->reorder_extra : p->reorder_extra - extra) < FEEDBACK_EQ_STEP_USEC)
                        continue;
                peer_set_reorder_extra(peer, i, extra);
        }
}

static int on_feedback_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Peer *peer = userdata;
        Tunnel *t = peer->tunnel;
        usec_t now = now_usec();

        if (t->secure)
                send_feedback(peer, now);
        if (learned(t)) {
                bool window = update_load(peer, now);
                /* A new load matters where preferences shape the split. */
                if (check_silence(peer, now) || (window && !peer->learn_by_rates) || light_now(peer, now) != peer->learn_light)
                        republish(peer);
        }
        if (peer->reorder_enabled) {
                usec_t spread, hold = feedback_reorder_hold(peer, &spread);
                peer_set_reorder_hold(peer, hold, spread);
                feedback_equalize(peer, now);
        }
        (void) sd_event_source_set_time(s, usec + FEEDBACK_INTERVAL_USEC);
        return 0;
}

int feedback_start(Peer *peer) {
        Tunnel *t = peer->tunnel;
        int r;

        if (!t->secure && !peer->reorder_enabled)
                return 0;
        r = sd_event_add_time_relative(t->event, &peer->feedback_timer, CLOCK_MONOTONIC, FEEDBACK_INTERVAL_USEC,
                                       USEC_PER_MSEC, on_feedback_timer, peer);
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to add the feedback timer: %m");
        return sd_event_source_set_enabled(peer->feedback_timer, SD_EVENT_ON);
}

void feedback_stop(Peer *peer) {

        peer->feedback_timer = sd_event_source_disable_unref(peer->feedback_timer);
}
