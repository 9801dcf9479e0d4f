/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What each path delivers, learned from the other end's feedback (Scheduler=learned, the default
 * in secure mode; mptd(8), SCHEDULING). Pure: no clock, no locking, no system calls; the main
 * thread feeds it and reads it.
 *
 * The receiver reports, per path of ours, the highest counter it received, when (its clock), and
 * how many bytes and datagrams had arrived by then (wire.h, MptFeedback). We know when we sent
 * that counter (our clock). Two such samples of a path, at least LEARN_SPAN_MIN_USEC apart on our
 * clock, tell:
 *   - what the path delivered over the span: bytes / receiver time;
 *   - whether it kept up: the receiver's span is longer than ours (the datagrams came out of the
 *     path more slowly than they went in) only when they queued somewhere on the way, i.e. we
 *     sent faster than the path carries; the two clocks' offset cancels out of the difference;
 *   - the one-way delay up to a constant offset (arrival - sending), whose minimum over a window
 *     is the path's delay without a queue, so that the rest is its queueing delay.
 * Before any queue builds up, the receiver's peak rate (how fast the path's datagrams arrived
 * back to back in a burst: at the path's bottleneck rate) credits a path with 7/8 of it at least,
 * so that the split is about right within a round trip of the first bursts (TCP's slow start
 * ends when the slowest path of a wrong split fills, and grows slowly after); a saturation
 * reading overrides it for LEARN_PEAK_IGNORE_USEC.
 * A path that did not keep up ("saturated") is set to 7/8 of what it delivered, which drains the
 * queue it built, when a queue stood already at the span's start (the path was busy throughout, so
 * what it delivered is what it can carry); when the queue only built up during the span (a burst,
 * TCP's slow start) what it delivered says less, and the credit shrinks by at most 1/8. One that
 * kept up while another path did not is credited with too little
 * against that one: its rate grows by a quarter per span and by 1/32 of the whole tunnel's, so a
 * path that was starved (or just came up) finds its capacity within a second. One that kept up
 * while none is saturated grows by 1/8 when it carried most of what it was credited with, ready
 * for more load.
 * The idea (delivery spread against sending spread, a 7/8 drain and a growing probe) is the one of
 * glorytun's mud (mud_update_rl()); the window, the queueing criterion, the silence rule and the
 * allocation below are ours.
 *
 * The tunnel then sends each path a share of its traffic in proportion to its learned rate: all
 * paths then saturate together under a load that needs them all, as MPTCP's schedulers try to
 * achieve per subflow, and none holds the others back. Weight= is a preference that counts while
 * the load leaves a choice (learn_weights()). */

#include <stdbool.h>
#include <stdint.h>

#include "parse-util.h"

/* A rate sample spans at least this much of our sending time: long enough that a few ms of jitter
 * do not read as a queue. */
#define LEARN_SPAN_MIN_USEC (100 * USEC_PER_MSEC)
/* A queue of at least this at a span's start: the path was busy for the whole span. */
#define LEARN_BUSY_QUEUE_USEC (2 * USEC_PER_MSEC)
/* Saturated when this many spans in a row look so: */
#define LEARN_SAT_SPANS 2u
/* ... the receiver's span exceeds ours by more than 1/LEARN_STRETCH_DIV of it, */
#define LEARN_STRETCH_DIV 8u
/* ... or when the queueing delay stands above this (and above LEARN_JITTER_FACTOR times the
 * delay's jitter: a radio link's delay swings by tens of ms without any queue). */
#define LEARN_QUEUE_SAT_USEC (8 * USEC_PER_MSEC)
#define LEARN_JITTER_FACTOR 4u
/* The delay's jitter: a moving average of how much the one-way delay changes from one sample to
 * the next, of gain 1/LEARN_JITTER_GAIN_DIV (RFC 3550's interarrival jitter, 6.4.1). */
#define LEARN_JITTER_GAIN_DIV 16u
/* ... or when the span lost at least this (parts per million) while a queue of more than
 * LEARN_QUEUE_SAT_USEC (and LEARN_LOSS_JITTER_FACTOR times the jitter) stood at some sample in it:
 * a queue that is full
 * and drops at its tail no longer grows, and its delay swings as TCP backs off and comes again,
 * so that neither of the first two may see it; random loss comes without a queue. */
#define LEARN_LOSS_SAT_PPM 5000u
#define LEARN_LOSS_JITTER_FACTOR 2u
/* ... above LEARN_LOSS_FLOOR_FACTOR times the path's own loss: the average loss (weight
 * 1/LEARN_LOSS_FLOOR_DIV per span) of spans in which no queue of LEARN_QUEUE_SAT_USEC stood (and that sent at least
 * LEARN_LOSS_FLOOR_MIN_DATAGRAMS): a radio link or a noisy line loses that much at any load, and
 * its random loss next to a queue of a few ms must not read as an overflow (which would cut it,
 * and grow the others past what they carry). */
#define LEARN_LOSS_FLOOR_DIV 8u
#define LEARN_LOSS_FLOOR_MIN_DATAGRAMS 20u
#define LEARN_LOSS_FLOOR_FACTOR 2u
/* A rate measured at the path's bottleneck (what it delivered while busy throughout, a burst's)
 * is credited at LEARN_DRAIN_NUM/LEARN_DRAIN_DEN of it, so that the queue the path built drains,
 * and a queue that built up within a span cuts the credit by no more than the rest (the 7/8 of
 * glorytun's mud). */
#define LEARN_DRAIN_NUM 7u
#define LEARN_DRAIN_DEN 8u
/* A path that kept up while another did not grows per span by 1/LEARN_GROW_DIV of its credit
 * plus 1/LEARN_GROW_TUNNEL_DIV of the tunnel's rate (so that one starved near 0 comes back within
 * a second), unless it used less than 1/LEARN_GROW_USED_DIV of its credit. A preferred path that
 * water-filling capped grows to LEARN_CAPPED_GROW_NUM/LEARN_CAPPED_GROW_DEN of its credit when it
 * carried at least LEARN_CAPPED_USED_NUM/LEARN_CAPPED_USED_DEN of it without a queue. */
#define LEARN_GROW_DIV 4u
#define LEARN_GROW_TUNNEL_DIV 32u
#define LEARN_GROW_USED_DIV 2u
#define LEARN_CAPPED_USED_NUM 5u
#define LEARN_CAPPED_USED_DEN 8u
#define LEARN_CAPPED_GROW_NUM 9u
#define LEARN_CAPPED_GROW_DEN 8u
/* After a span that was saturated throughout, peak rates are not trusted for this long: what
 * the path delivered while busy is a better measure than a burst's rate, which the receiving
 * thread's scheduling can inflate (a batch read late looks like a fast burst); a path whose
 * capacity grew is found by the growth rules meanwhile. */
#define LEARN_PEAK_IGNORE_USEC (10 * USEC_PER_SEC)
/* A saturated path is credited with at least 1/LEARN_PEAK_FLOOR_DIV of its current burst rate. */
#define LEARN_PEAK_FLOOR_DIV 2u
/* A path whose datagrams wait in a queue of this host (a qdisc, the driver: tbf on the veths of
 * tests/lab's equal paths, a slow local link) at both ends of a span was busy throughout, and its
 * bottleneck is here, out of sight of the one-way delays and of loss: what it delivered is what
 * it carries. It is credited with at most LEARN_LOCAL_CEIL_NUM/LEARN_LOCAL_CEIL_DEN of that, and
 * counts as saturated for the others' growth (feedback.c), so that a path with room takes more
 * until it queues too. Otherwise burst rates alone raise credits far above such a path's rate,
 * and the path with the largest share bounds the tunnel (mptd(8), SCHEDULING). */
#define LEARN_LOCAL_CEIL_NUM 9u
#define LEARN_LOCAL_CEIL_DEN 8u
/* While the receiver reports a burst rate for the path, its credit grows (learn_sample()) to at
 * most LEARN_GROW_LIMIT_NUM/LEARN_GROW_LIMIT_DEN of the larger of that and what the path
 * delivered over the span (it is never cut for that: a credit that stood higher stays). */
#define LEARN_GROW_LIMIT_NUM 5u
#define LEARN_GROW_LIMIT_DEN 4u
/* The one-way delay's minimum is taken over this window (two halves, as a rolling minimum). */
#define LEARN_OWD_WINDOW_USEC (10 * USEC_PER_SEC)
/* Rates are bytes per second; a path is never credited with less than this. */
#define LEARN_RATE_MIN UINT64_C(12500) /* 100 kbit/s */
/* Before the first sample: what a path is credited with (times its Weight= share). */
#define LEARN_RATE_INITIAL UINT64_C(1250000) /* 10 Mbit/s */
/* No news of a path we kept sending on for this long (counted from when it began to carry data,
 * and longer than LEARN_SILENCE_RTTS round trips), while feedback of others arrives: it delivers
 * nothing now. */
#define LEARN_SILENCE_USEC (300 * USEC_PER_MSEC)
#define LEARN_SILENCE_RTTS 4u

typedef struct LearnSample {
        uint64_t datagrams; /* what the receiver counts as sent on the path by then (cumulative) */
        usec_t sent;      /* when we sent the marker the receiver reported (our clock) */
        uint64_t arrival; /* when it arrived (the receiver's clock, microseconds) */
        uint64_t bytes;   /* bytes received of the path by then (cumulative) */
        uint32_t packets; /* datagrams received by then (cumulative, mod 2^32) */
        uint64_t peak;    /* the receiver's peak rate of the path lately (bytes/s; 0: unknown) */
        bool queued_locally; /* our datagrams of the path wait in a queue of this host now */
} LearnSample;

typedef struct LearnPath {
        bool have_prev;
        LearnSample prev;      /* the start of the next span */
        bool have_owd;
        int64_t owd;           /* the latest one-way delay, offset included */
        int64_t prev_owd;      /* that of the span's start */
        int64_t owd_min[2];    /* rolling minimum: this half-window and the last */
        usec_t owd_min_since;  /* when this half-window began */
        uint64_t owd_jitter;   /* mean deviation of consecutive delays (RFC 3550 style) */
        uint64_t rate;         /* learned: bytes per second the path can take; 0 before any sample */
        uint64_t delivered;    /* measured over the last span, bytes per second */
        uint32_t loss_ppm;     /* datagrams lost over the last span, parts per million */
        bool have_loss_floor;
        uint32_t loss_floor_ppm; /* the path's own loss, without a queue (LEARN_LOSS_FLOOR_DIV) */
        bool saturated;        /* over the last LEARN_SAT_SPANS spans */
        bool was_saturated;    /* at some span since the last reset: its rate was measured full */
        unsigned sat_spans;    /* spans in a row that looked saturated */
        bool capped;           /* the last split wanted to give it more than its credit */
        bool queued_locally;   /* at the start and the end of the last span (LearnSample) */
        usec_t updated;        /* our clock at the last span's end; 0: never */
        uint64_t peak;         /* the receiver's latest peak rate */
        usec_t peak_ignore_until;
        uint64_t spans;        /* spans taken into account */
        uint64_t rate_before_silence; /* what it was credited with before it fell silent */
        uint64_t span_queue_max; /* the largest queueing delay sampled within the current span */
} LearnPath;

void learn_path_reset(LearnPath *p);

/* The path is usable again after it was not (dead, peer-down, a new address): what was measured
 * is history, but it is credited with what it carried before (or before it fell silent), so that
 * a path back from a short outage takes its share at once; a path that came back slower is cut
 * within a span, as any saturated one. */
void learn_path_restart(LearnPath *p);

/* Takes a sample of the path (now: our clock). others_saturated: another path of the tunnel is
 * saturated now; tunnel_rate: what all paths together are credited with. Returns true when the
 * learned rate changed. Samples that are not newer than the last (a reordered or repeated
 * feedback frame) change nothing. */
bool learn_sample(LearnPath *p, const LearnSample *s, usec_t now, bool others_saturated, uint64_t tunnel_rate);

/* The path got nothing through for a while although we sent on it (see LEARN_SILENCE_USEC): it
 * is credited with the minimum. Returns true when that changed the rate. */
bool learn_silent(LearnPath *p, usec_t now);

/* The queueing delay now: the latest one-way delay above its minimum (0 when unknown). */
uint64_t learn_queue_delay(const LearnPath *p);

/* What the path is credited with: the learned rate, or LEARN_RATE_INITIAL before any sample. */
uint64_t learn_rate(const LearnPath *p);

/* Pacing: the rate (bytes per second) the tunnel sends the path's datagrams at, at most; what it
 * reads from the TUN device beyond the rates of all paths waits in the TUN device's queue (the
 * workers stop reading it), where TCP's pacing and congestion control see it as the tunnel's own
 * bottleneck, instead of overflowing the queue of the path's bottleneck somewhere on the way (a
 * DSL modem's, 50 ms long in tests/lab). A TCP stream over paths of unequal delay sees the
 * slowest path's round trip (the receiver holds the fast paths' packets until the slow ones come)
 * and keeps as much in flight as that takes; without pacing, the fast path's share of it stands
 * in its 50 ms queue and overflows it (mptd(8), SCHEDULING).
 *   - a path whose queueing delay stands at LEARN_PACE_DRAIN_QUEUE_USEC or more, and above 4
 *     times the delay's jitter (LEARN_QUEUE_SAT_USEC's rule), and that delivered at least
 *     1/LEARN_PACE_DRAIN_LOAD_DEN of its learned rate over the last span (it was busy: the queue
 *     is its load's, not a delay that rose under a light load): what it delivered times
 *     LEARN_PACE_DRAIN_NUM/LEARN_PACE_DRAIN_DEN, or its learned rate if lower: the queue drains;
 *   - until it was first saturated (learn_sample()) its learned rate comes from bursts and growth
 *     and may be far below what it carries: LEARN_PACE_START_GAIN times it, so that the pacing
 *     does not hold back the learning (nor TCP's slow start);
 *   - with hardly a queue (below LEARN_PACE_PROBE_QUEUE_USEC), 5/4 of the learned rate: room to
 *     find more capacity (the learned rate grows when a path carries what it is credited with);
 *   - else the learned rate.
 * The idea of pacing each path at a measured rate with gains to probe and to drain is BBR's (its
 * pacing_gain cycle); the rules by queueing delay are ours. */
#define LEARN_PACE_DRAIN_QUEUE_USEC (10 * USEC_PER_MSEC)
#define LEARN_PACE_DRAIN_LOAD_DEN 2u
#define LEARN_PACE_DRAIN_NUM 15u
#define LEARN_PACE_DRAIN_DEN 16u
#define LEARN_PACE_START_GAIN 2u
#define LEARN_PACE_PROBE_QUEUE_USEC (2 * USEC_PER_MSEC)
#define LEARN_PACE_PROBE_NUM 5u
#define LEARN_PACE_PROBE_DEN 4u
uint64_t learn_pace_rate(const LearnPath *p);

/* A tunnel none of whose paths was saturated for this long is lightly loaded. */
#define LEARN_LIGHT_AFTER_USEC (2 * USEC_PER_SEC)

/* The sending vector's weights for n paths (at least 1 each, in units of LEARN_WEIGHT_UNIT bytes
 * per second) from their credited rates, the paths' preferences (Weight=; pref[i] >= 1, relative
 * to the others) and what the tunnel sends now (load, bytes per second).
 * With equal preferences (the default), each path's weight is its credited rate, at any load: all
 * paths then fill up together, none is the first to overflow and make TCP back off while the
 * others have room (as MPTCP's coupled schedulers try to achieve); a split that followed the load
 * would give a slow path too much of a TCP slow start's burst, since the load is measured after
 * the fact. Queue balance corrects the rates (LEARN_QUEUE_BALANCE_USEC).
 * With unequal preferences, the load with 1/LEARN_HEADROOM_DIV to spare is split in proportion
 * to them, and a path whose part would exceed 7/8 of its credit (or its pace while its queue
 * drains: learn_pace_rate()) gets that, the others sharing the rest in proportion to theirs
 * (water-filling): light traffic stays on the preferred paths (a
 * fixed line before a metered LTE link) and spills to the others as the load grows; a load that
 * needs every path's credit is split by the rates again.
 * Returns true when the split is by the rates, false when water-filling made it; ret_capped
 * (unless NULL) says which paths water-filling capped at their credit (they would get more). */
#define LEARN_WEIGHT_UNIT UINT64_C(1000)
/* Queue balance: split by the rates, a path's weight is scaled by (Q + the shortest queueing
 * delay of the paths) / (Q + its own), at least 1/2: a path whose queue stands longer than the
 * others' (its credit ran ahead of it, or the load grew past it first) gets less until the queues
 * stand alike, so that they fill, and overflow, together. */
/* Q is 25 ms: the feedback takes a round trip to show the effect of a split, and with a smaller Q
 * a path whose queue swings by a few ms swings between much larger and smaller parts of the
 * traffic, half a round trip behind its queue, and delivers less than it carries (mptd(8),
 * SCHEDULING). */
#define LEARN_QUEUE_BALANCE_USEC (25 * USEC_PER_MSEC)
#define LEARN_QUEUE_BALANCE_MIN_DIV 2u /* the scale is at least 1/2 */
/* Water-filling gives a path at most LEARN_FILL_CAP_NUM/LEARN_FILL_CAP_DEN of its credit. */
#define LEARN_FILL_CAP_NUM 7u
#define LEARN_FILL_CAP_DEN 8u
#define LEARN_HEADROOM_DIV 4u /* plus a quarter */
bool learn_weights(const LearnPath *const *paths, const uint32_t *pref, size_t n, uint64_t load, uint32_t *ret,
                   bool *ret_capped);
