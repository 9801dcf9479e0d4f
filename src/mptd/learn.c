/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "learn.h"
#include <assert.h>

#include "macro.h"
#include "profile.h"

void learn_path_reset(LearnPath *p) {
        *p = (LearnPath) {
                .owd_min = { INT64_MAX, INT64_MAX },
        };
}

void learn_path_restart(LearnPath *p) {
        uint64_t rate = MAX(p->rate, p->rate_before_silence);

        learn_path_reset(p);
        p->rate = rate;
}

static int64_t owd_min(const LearnPath *p) {
        return MIN(p->owd_min[0], p->owd_min[1]);
}

/* The one-way delay of the sample (offset included), its rolling minimum and its jitter. */
static void update_owd(LearnPath *p, const LearnSample *s, usec_t now) {
        int64_t owd = (int64_t) s->arrival - (int64_t) s->sent;

        if (p->have_owd) {
                uint64_t d = (uint64_t) (owd > p->owd ? owd - p->owd : p->owd - owd);
                p->owd_jitter = p->owd_jitter + d / LEARN_JITTER_GAIN_DIV -
                                p->owd_jitter / LEARN_JITTER_GAIN_DIV;
        }
        p->owd = owd;
        p->have_owd = true;
        if (p->owd_min_since == 0 || now >= p->owd_min_since + LEARN_OWD_WINDOW_USEC / 2) {
                /* A new half-window: the minimum forgets what is older than a whole window. */
                p->owd_min[1] = p->owd_min[0];
                p->owd_min[0] = owd;
                p->owd_min_since = now;
        } else
                p->owd_min[0] = MIN(p->owd_min[0], owd);
}

uint64_t learn_queue_delay(const LearnPath *p) {
        int64_t m = owd_min(p);

        if (!p->have_owd || m == INT64_MAX || p->owd <= m)
                return 0;
        return (uint64_t) (p->owd - m);
}

uint64_t learn_rate(const LearnPath *p) {
        return p->rate > 0 ? p->rate : LEARN_RATE_INITIAL;
}

uint64_t learn_pace_rate(const LearnPath *p) {
        uint64_t rate = learn_rate(p), q = learn_queue_delay(p);

        /* Only a queue that stands above the path's own jitter, as for saturation (learn_sample()):
         * a radio link's delay swings by tens of ms without any queue. And only on a path that
         * carried at least half its credit: a queue of our own needs the load to build it. On a
         * lightly loaded path a higher delay is the path's (a route that changed, until the
         * minimum ages out) or someone else's queue, and pacing it at what it delivered (its load)
         * would hold back even the little it carries. */
        if (q >= LEARN_PACE_DRAIN_QUEUE_USEC && q > LEARN_JITTER_FACTOR * p->owd_jitter && p->delivered > 0 &&
            p->delivered >= rate / LEARN_PACE_DRAIN_LOAD_DEN)
                return MAX(MIN(rate, p->delivered / LEARN_PACE_DRAIN_DEN * LEARN_PACE_DRAIN_NUM), LEARN_RATE_MIN);
        if (!p->was_saturated)
                return rate * LEARN_PACE_START_GAIN;
        if (q < LEARN_PACE_PROBE_QUEUE_USEC)
                return rate / LEARN_PACE_PROBE_DEN * LEARN_PACE_PROBE_NUM;
        return rate;
}

bool learn_sample(LearnPath *p, const LearnSample *s, usec_t now, bool others_saturated, uint64_t tunnel_rate) {
        uint64_t dt_tx, dt_rx, dbytes, dpk_tx, dpk_rx, delivered, old = p->rate, q;
        bool changed_by_peak = false;
        bool newer = !p->have_prev || (s->datagrams >= p->prev.datagrams && s->arrival > p->prev.arrival &&
                                       s->sent > p->prev.sent && s->bytes >= p->prev.bytes);

        if (!newer)
                return false;
        update_owd(p, s, now);
        p->span_queue_max = MAX(p->span_queue_max, learn_queue_delay(p));
        p->peak = s->peak;
        /* A peak rate credits the path at once (no span needed), unless a saturated span was
         * more recent than it can be. It only ever raises the credit: before the first span, a
         * burst of a few datagrams of light traffic (a ping, a handshake) is no measure of the
         * path, and must not put it below the initial credit of the others. */
        if (s->peak > 0 && now >= p->peak_ignore_until &&
            s->peak / LEARN_DRAIN_DEN * LEARN_DRAIN_NUM > learn_rate(p)) {
                p->rate = MAX(s->peak / LEARN_DRAIN_DEN * LEARN_DRAIN_NUM, LEARN_RATE_MIN);
                changed_by_peak = true;
        }
        if (!p->have_prev) {
                p->prev = *s;
                p->prev_owd = p->owd;
                p->have_prev = true;
                return changed_by_peak;
        }
        dt_tx = s->sent - p->prev.sent;
        if (dt_tx < LEARN_SPAN_MIN_USEC)
                return changed_by_peak; /* the span goes on */
        dt_rx = s->arrival - p->prev.arrival;
        dbytes = s->bytes - p->prev.bytes;
        dpk_tx = s->datagrams - p->prev.datagrams;
        dpk_rx = (uint32_t) (s->packets - p->prev.packets);
        /* bytes < 2^64 / 10^6 over any span a feedback frame can describe (18 TB). */
        delivered = dbytes > UINT64_MAX / USEC_PER_SEC ? UINT64_MAX / dt_rx : dbytes * USEC_PER_SEC / dt_rx;
        p->loss_ppm = dpk_tx > dpk_rx && dpk_tx < UINT64_MAX / 1000000
                              ? (uint32_t) ((dpk_tx - dpk_rx) * 1000000 / dpk_tx)
                              : 0;
        q = learn_queue_delay(p);
        /* Loss over a span in which no queue stood is the path's own (radio, a lossy line): its
         * average is the floor above which loss says that a queue overflowed. */
        if (p->span_queue_max < LEARN_QUEUE_SAT_USEC && dpk_tx >= LEARN_LOSS_FLOOR_MIN_DATAGRAMS) {
                if (!p->have_loss_floor)
                        p->loss_floor_ppm = p->loss_ppm;
                else
                        p->loss_floor_ppm = p->loss_floor_ppm - p->loss_floor_ppm / LEARN_LOSS_FLOOR_DIV +
                                            p->loss_ppm / LEARN_LOSS_FLOOR_DIV;
                p->have_loss_floor = true;
        }
        /* The receiver took longer than we did for the same datagrams: they queued. */
        if (dt_rx * LEARN_STRETCH_DIV > dt_tx * (LEARN_STRETCH_DIV + 1) ||
            (q > LEARN_QUEUE_SAT_USEC && q > LEARN_JITTER_FACTOR * p->owd_jitter) ||
            ((uint64_t) p->loss_ppm >=
                     LEARN_LOSS_SAT_PPM + LEARN_LOSS_FLOOR_FACTOR * (uint64_t) p->loss_floor_ppm &&
             p->span_queue_max > LEARN_QUEUE_SAT_USEC &&
             p->span_queue_max > LEARN_LOSS_JITTER_FACTOR * p->owd_jitter))
                p->sat_spans++;
        else
                p->sat_spans = 0;
        /* One span that looks saturated may be a moment of the hosts' scheduling (a sending
         * thread held up between its send marks and the send): only a second one in a row says
         * that the path no longer keeps up. */
        p->saturated = p->sat_spans >= LEARN_SAT_SPANS;
        p->was_saturated |= p->saturated;
        if (p->saturated) {
                int64_t m = owd_min(p);
                bool busy = m != INT64_MAX && p->prev_owd > m && (uint64_t) (p->prev_owd - m) >= LEARN_BUSY_QUEUE_USEC;
                uint64_t cur = learn_rate(p);

                if (busy) {
                        /* Busy throughout: it delivered what it can carry. */
                        p->rate = MAX(delivered / LEARN_DRAIN_DEN * LEARN_DRAIN_NUM, LEARN_RATE_MIN);
                        p->peak_ignore_until = now + LEARN_PEAK_IGNORE_USEC;
                }
                else
                        /* The queue built up within the span: it can carry at least what it
                         * delivered, and less than it was given. */
                        p->rate = MAX(MIN(cur, MAX(delivered, cur / LEARN_DRAIN_DEN * LEARN_DRAIN_NUM)),
                                      LEARN_RATE_MIN);
                /* Never below half its burst rate now: when the paths share one bottleneck (the
                 * hosts' CPUs, one uplink behind them), each delivers in proportion to what it is
                 * sent, and cuts by what they delivered would let the split drift anywhere; the
                 * burst rate is what the path itself carries. */
                p->rate = MAX(p->rate, MIN(s->peak / LEARN_PEAK_FLOOR_DIV, cur));
        } else {
                /* What it carried is what it can carry at least (and before any span, it keeps
                 * the initial credit: a trickle at the start says nothing). */
                uint64_t cur = MAX(learn_rate(p), MAX(delivered, LEARN_RATE_MIN));

                /* Growth goes no further than a little above what the path was seen to carry,
                 * over the span or in a burst (whose rate is the bottleneck's when the burst
                 * queued there), once the receiver reports bursts: a credit far above both is a
                 * guess that the next split turns into a standing queue, and the cut after it
                 * into a swing. */
                uint64_t limit = p->peak == 0 ? UINT64_MAX
                                              : MAX(MIN(MAX(p->peak, delivered), UINT64_MAX / 8) /
                                                            LEARN_GROW_LIMIT_DEN * LEARN_GROW_LIMIT_NUM,
                                                    learn_rate(p));

                if (cur >= UINT64_MAX / 4 || delivered < cur / LEARN_GROW_USED_DIV)
                        ; /* it did not even use what it is credited with */
                else if (others_saturated)
                        /* It kept up where another did not: it is owed more of the traffic. */
                        cur = MIN(cur + cur / LEARN_GROW_DIV +
                                          MIN(tunnel_rate, UINT64_MAX / 4) / LEARN_GROW_TUNNEL_DIV,
                                  limit);
                else if (p->capped && delivered >= cur / LEARN_CAPPED_USED_DEN * LEARN_CAPPED_USED_NUM &&
                         q < LEARN_BUSY_QUEUE_USEC)
                        /* Water-filling wants to give it more than its credit (it is preferred),
                         * and it carried most of what it got without a queue: try more. */
                        cur = MIN(cur / LEARN_CAPPED_GROW_DEN * LEARN_CAPPED_GROW_NUM, limit);
                /* Otherwise the credit does not grow by itself: splitting by the rates needs
                 * only how they compare, which saturations (and burst rates) tell; credits that
                 * grew with what each path happened to be given would drift apart when the
                 * paths share a bottleneck (the hosts' CPUs), where each delivers what it is
                 * sent. */
                p->rate = cur;
        }
        if (s->queued_locally && p->prev.queued_locally)
                p->rate = MIN(p->rate, MAX(delivered / LEARN_LOCAL_CEIL_DEN * LEARN_LOCAL_CEIL_NUM, LEARN_RATE_MIN));
        p->queued_locally = s->queued_locally && p->prev.queued_locally;
        p->delivered = delivered;
        p->span_queue_max = q;
        p->prev = *s;
        p->prev_owd = p->owd;
        p->updated = now;
        p->spans++;
        return p->rate != old;
}

bool learn_silent(LearnPath *p, usec_t now) {
        uint64_t old = p->rate;

        if (p->rate > LEARN_RATE_MIN)
                p->rate_before_silence = p->rate;
        p->rate = LEARN_RATE_MIN;
        p->delivered = 0;
        p->saturated = true;
        p->updated = now;
        /* What follows the silence starts a span of its own. */
        p->have_prev = false;
        return p->rate != old;
}

static uint32_t to_weight(unsigned __int128 bytes_per_sec) {
        unsigned __int128 w = bytes_per_sec / LEARN_WEIGHT_UNIT;

        return (uint32_t) MAX(MIN(w, (unsigned __int128) UINT32_MAX), (unsigned __int128) 1);
}

/* What water-filling gives a path at most: 7/8 of its credit, and no more than its pace while its
 * queue drains (learn_pace_rate()). A part above the pace would stall the whole tunnel, not only
 * the path: the workers leave the packets in the TUN device's queue while a path with most of the
 * vector's slots is ahead of its pace, so what the tunnel sends, and with it the load that
 * water-filling splits, sinks to the path's pace over its part, and the other paths' parts with
 * it (mptd(8), SCHEDULING). */
static uint64_t cap(const LearnPath *p) {
        return MIN(learn_rate(p) / LEARN_FILL_CAP_DEN * LEARN_FILL_CAP_NUM, learn_pace_rate(p));
}

bool learn_weights(const LearnPath *const *paths, const uint32_t *pref, size_t n, uint64_t load, uint32_t *ret,
                   bool *ret_capped) {
        unsigned __int128 left, total = 0, rates = 0, alloc[MPT_PATHS_MAX];
        bool capped[MPT_PATHS_MAX], differ = false;
        size_t open = n;

        assert(n <= MPT_PATHS_MAX);
        for (size_t i = 1; i < n && !differ; i++)
                differ = MAX(pref[i], 1u) != MAX(pref[0], 1u);
        /* Water-filling: what is left goes to the paths not capped yet, by preference; a path
         * whose part exceeds its rate is capped there, and the others share the rest again. */
        left = MAX((unsigned __int128) load + load / LEARN_HEADROOM_DIV, (unsigned __int128) n * LEARN_RATE_MIN);
        for (size_t i = 0; i < n; i++)
                capped[i] = false;
        for (bool again = differ; again && open > 0;) {
                uint64_t sum = 0;

                again = false;
                for (size_t i = 0; i < n; i++)
                        if (!capped[i])
                                sum += MAX(pref[i], 1u);
                for (size_t i = 0; i < n; i++) {
                        if (capped[i])
                                continue;
                        alloc[i] = left * MAX(pref[i], 1u) / sum;
                        if (alloc[i] > cap(paths[i])) {
                                alloc[i] = cap(paths[i]);
                                capped[i] = true;
                                left -= alloc[i];
                                open--;
                                again = true;
                                break; /* the others' parts grow: start over */
                        }
                }
        }
        for (size_t i = 0; ret_capped && i < n; i++)
                ret_capped[i] = differ && capped[i];
        if (!differ || open == 0) {
                /* Equal preferences, or even the credits do not carry the load: the rates, each
                 * less the longer its queue stands above the shortest one (queue balance). */
                uint64_t qmin = UINT64_MAX;

                for (size_t i = 0; i < n; i++)
                        qmin = MIN(qmin, learn_queue_delay(paths[i]));
                for (size_t i = 0; i < n; i++) {
                        uint64_t q = learn_queue_delay(paths[i]);
                        unsigned __int128 r = learn_rate(paths[i]);
                        unsigned __int128 w = r * (LEARN_QUEUE_BALANCE_USEC + qmin) / (LEARN_QUEUE_BALANCE_USEC + q);

                        ret[i] = to_weight(MAX(w, r / LEARN_QUEUE_BALANCE_MIN_DIV));
                }
                return true;
        }
        /* Weights are relative, but on the scale of the rates: the parts, scaled to add up to the
         * credited rates' sum. */
        for (size_t i = 0; i < n; i++) {
                total += alloc[i];
                rates += learn_rate(paths[i]);
        }
        for (size_t i = 0; i < n; i++)
                ret[i] = to_weight(alloc[i] * rates / total);
        return false;
}
