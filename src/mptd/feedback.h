/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The main thread's part of the learned scheduler (Scheduler=learned, secure mode; learn.h has the
 * estimator, mptd(8) SCHEDULING the whole story). Every FEEDBACK_INTERVAL_USEC:
 *   - as the receiver of the other end's traffic, it sends a feedback frame (wire.h) about the
 *     other end's paths that delivered something since the last frame, over our path with the
 *     smallest round-trip time that can send (the counts are cumulative: a lost frame loses
 *     nothing but its news);
 *   - as the sender, it credits a path we kept sending on without news of it (while other paths'
 *     news arrives) with nothing (learn_silent()), and it starts or ends light load.
 * The other end's frames (feedback_handle()) become samples of our paths: the sending time of the
 * counter a frame reports comes from the workers' marks. When the shares move by more than
 * 1/FEEDBACK_REPUBLISH_DIV, the tunnel publishes a new sending vector. The reorder buffer's hold
 * follows the paths' spread of round-trip times (feedback_reorder_hold()). */

#include "tunnel.h"

#define FEEDBACK_INTERVAL_USEC (25 * USEC_PER_MSEC)
#define FEEDBACK_REPUBLISH_DIV 32u
/* The tunnel's load (what it sends) is measured over windows this long. */
#define FEEDBACK_LOAD_WINDOW_USEC (100 * USEC_PER_MSEC)
/* The reorder buffer's waits (peer_set_reorder_hold()): a gap may be inferred lost after the
 * paths' one-way delay spread (half the spread of their round trips, plus twice their jitter and
 * FEEDBACK_SPREAD_MARGIN_USEC, and with loss repair the fastest round trip and
 * FEEDBACK_REPAIR_MARGIN_USEC); it is given up at the latest after twice that and
 * FEEDBACK_HOLD_MARGIN_USEC, at least FEEDBACK_HOLD_MIN_USEC. Both at most ReorderMaxDelay=. */
#define FEEDBACK_SPREAD_MARGIN_USEC (2 * USEC_PER_MSEC)
/* With loss repair (mptd(8), LOSS REPAIR), inference waits the fastest path's round trip and this
 * much longer: what is sent again comes in time. */
#define FEEDBACK_REPAIR_MARGIN_USEC (5 * USEC_PER_MSEC)
#define FEEDBACK_HOLD_MARGIN_USEC (20 * USEC_PER_MSEC)
#define FEEDBACK_HOLD_MIN_USEC (20 * USEC_PER_MSEC)

/* The feedback timer of a peer (secure mode, or reordering). */
int feedback_start(Peer *peer);
void feedback_stop(Peer *peer);

/* A feedback frame from the other end (a CONTROL_EVENT_FEEDBACK). */
void feedback_handle(Tunnel *t, const ControlEvent *ev);

/* The learned scheduler's vector weights for the n paths ids[] that tunnel_publish() puts in the
 * vector; remembers them, to tell later whether the shares moved. */
void feedback_weights(Peer *peer, const uint8_t *ids, size_t n, uint32_t *ret);

/* A path begins to carry data (it came up): its silence counts from now. */
void feedback_path_up(Path *p);

/* What the reorder buffer waits for a missing packet now, from the paths' round-trip times: at
 * least (*ret_spread) before inference, at most (the return value). */
usec_t feedback_reorder_hold(const Peer *peer, usec_t *ret_spread);

/* Delay equalisation (receive side): among the paths that are up and normal (not backup) or
 * carried data within FEEDBACK_EQ_ACTIVE_USEC, each one's packets wait in the reorder buffer for the difference
 * between the slowest one-way delay and its own (half the round-trip times), when that is at
 * least FEEDBACK_EQ_MIN_USEC; changes smaller than FEEDBACK_EQ_STEP_USEC are ignored. A TCP
 * stream split over a 5 ms and a 40 ms path otherwise sees round trips of 10 ms for the packets
 * that happen to wait for nothing and 80 ms for the others: BBR takes the shortest for the
 * path's, and keeps a quarter of what it needs in flight (mptd(8), REORDERING). */
#define FEEDBACK_EQ_ACTIVE_USEC (1 * USEC_PER_SEC)
#define FEEDBACK_EQ_MIN_USEC (1 * USEC_PER_MSEC)
#define FEEDBACK_EQ_STEP_USEC (1 * USEC_PER_MSEC)
void feedback_equalize(Peer *peer, usec_t now);
