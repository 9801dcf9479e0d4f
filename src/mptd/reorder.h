/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Receive-side reordering of one tunnel's data packets by their GRE sequence numbers (RFC 1982
 * serial arithmetic). Pure: no locking, no clock, no system calls; the caller serialises calls
 * and passes the time in.
 *
 * - Packets are delivered in sequence order. A packet ahead of the next expected one is held,
 *   at most `window` sequence numbers ahead and at most `max_delay` long.
 * - Loss is inferred without waiting for the timeout: each path delivers in order, so once every
 *   active path has delivered a packet later than a gap, and the gap has waited min_hold (the
 *   paths' delay spread, reorder_set_min_hold(); 0 by default), it is lost and skipped. A path that falls
 *   silent for REORDER_SILENCE_FACTOR times its longest recent gap (at least REORDER_SILENCE_MIN,
 *   at most REORDER_SILENCE_MAX) stops counting until it delivers again.
 * - Packets of a path with an extra delay (reorder_set_path_extra()) are held that long even when
 *   they are in order, and packets behind them wait for them.
 * - A packet that arrives after its gap was skipped is delivered anyway ("late") unless it was
 *   delivered before (a duplicate); one older than the remembered history is dropped ("stale").
 * - A peer restart (sequence numbers starting over) is recognised after a run of stale packets,
 *   or told explicitly with reorder_reset(); the buffer resynchronises instead of blackholing.
 */

#include "macro.h"
#include "parse-util.h"

#define REORDER_PATHS_MAX 64u
#define REORDER_RESYNC_STALE 8u           /* consecutive stale packets that mean "peer restarted" */
#define REORDER_BYTES_MAX (64u * 1024u * 1024u) /* bound on buffered bytes */
#define REORDER_COPY_BYTES 2048u /* a copy buffer: a datagram of a 1500-byte (or 2000-byte) path */
/* A path counts as silent (and stops holding back loss inference) after this many times its
 * longest recent gap between packets, but not sooner than REORDER_SILENCE_MIN (a receiving
 * thread descheduled for a moment must not make the paths it reads look silent to the others)
 * nor later than REORDER_SILENCE_MAX. Not capped by max_delay: what a gap waits for is bounded by
 * max_delay anyway; silence only decides whether it is skipped before that. A path whose packets
 * come in bursts (TCP's, one per round trip) is quiet between them for longer than the hold, and
 * must still count: a gap it would fill, skipped at once, makes its packets late, which TCP takes
 * for loss. */
#define REORDER_SILENCE_FACTOR 4u
#define REORDER_SILENCE_MIN (10 * USEC_PER_MSEC)
#define REORDER_SILENCE_MAX (1 * USEC_PER_SEC)
/* The longest recent gap is forgotten by 1/REORDER_GAP_DECAY_DIV of it per packet. */
#define REORDER_GAP_DECAY_DIV 1024u
/* The largest window (ReorderWindow='s maximum): 2^16 sequence numbers, far inside the 2^31 of
 * RFC 1982 serial arithmetic. */
#define REORDER_WINDOW_MAX 65536u

typedef struct Reorder Reorder;

typedef struct ReorderStats {
        uint64_t delivered;   /* all packets handed to the callback */
        uint64_t held;        /* delivered after waiting in the buffer */
        uint64_t late;        /* delivered after their gap was skipped */
        uint64_t lost;        /* sequence numbers skipped (never arrived in time) */
        uint64_t timeouts;    /* skips caused by max_delay rather than inference */
        uint64_t duplicates;
        uint64_t stale;
        uint64_t resyncs;
        uint64_t overflows;   /* forced deliveries because the byte bound was hit */
        uint64_t early;       /* delivered ahead of a gap by reorder_insert_now() */
} ReorderStats;

/* Called for every packet leaving the buffer, in order. A packet that was held stays where it is
 * until reorder_trim() (or, when lent, until the lender reuses it after release()), so the
 * callback may keep a pointer to it until then. */
typedef void (*ReorderDeliver)(void *userdata, const uint8_t *pkt, size_t len);

/* Where held packets live. By default the buffer copies a packet it holds. A lender lets it keep
 * a pointer into the caller's memory instead: retain() is asked for every packet about to be
 * held and may refuse (the packet is copied then); release() is called once for every packet
 * retained, right after the deliver callback returned for it (or when the buffer is freed).
 * Both are called from within reorder_*() calls, under the caller's serialisation. */
typedef struct ReorderLender {
        bool (*retain)(void *userdata, const uint8_t *pkt, size_t len);
        void (*release)(void *userdata, const uint8_t *pkt);
        void *userdata;
} ReorderLender;

/* window: 1..REORDER_WINDOW_MAX packets. Returns NULL on OOM (or a window out of range). */
Reorder *reorder_new(uint32_t window, usec_t max_delay);
Reorder *reorder_free(Reorder *r);
/* NULL: copy every held packet (the default). */
void reorder_set_lender(Reorder *r, const ReorderLender *lender);
DEFINE_TRIVIAL_CLEANUP_FUNC(Reorder *, reorder_free);

/* Offers a packet that arrived on path `path` (< REORDER_PATHS_MAX). Delivers whatever is in
 * order now. Returns -1 when the packet was accepted (delivered or held) or the drop reason
 * (MPT_DROP_DUPLICATE, MPT_DROP_STALE) when not; -ENOMEM (< -1) when it could not be held. */
int reorder_insert(Reorder *r, uint32_t seq, unsigned path, const uint8_t *pkt, size_t len, usec_t now,
                   ReorderDeliver deliver, void *userdata);

/* The same for a packet that must not wait (a flow that Policy= sends lowest-latency or pinned,
 * which keeps its own order): delivered at once, also ahead of a gap or its path's extra delay.
 * Its sequence number counts as delivered: nothing waits for it, and a copy is a duplicate. */
int reorder_insert_now(Reorder *r, uint32_t seq, unsigned path, const uint8_t *pkt, size_t len, usec_t now,
                       ReorderDeliver deliver, void *userdata);

/* Releases packets held longer than max_delay (skipping the gaps before them). */
void reorder_expire(Reorder *r, usec_t now, ReorderDeliver deliver, void *userdata);

/* What a gap waits at least before inference may skip it (at most max_delay): how much later a
 * packet on the slowest path arrives than one sent at the same time on the fastest. */
void reorder_set_min_hold(Reorder *r, usec_t min_hold);
usec_t reorder_min_hold(const Reorder *r);

/* Changes what a packet may be held at most (from now on; held packets keep their arrival). */
void reorder_set_max_delay(Reorder *r, usec_t max_delay);
usec_t reorder_max_delay(const Reorder *r);

/* Packets of the path wait at least `extra` before they are delivered, even in order (at most
 * max_delay): delay equalisation. A path whose one-way delay is shorter than the slowest path's
 * that carries data by `extra` then looks as slow as that one, to TCP above the tunnel: every
 * packet takes about the same time, whichever path it took. 0 (the default): none. */
void reorder_set_path_extra(Reorder *r, unsigned path, usec_t extra);
usec_t reorder_path_extra(const Reorder *r, unsigned path);

/* When reorder_expire() next needs to run; USEC_INFINITY when nothing is held. May be early. */
usec_t reorder_deadline(const Reorder *r);

/* The path went down: it stops counting for loss inference, also for packets of it that are still
 * on their way, until reorder_path_up(). */
void reorder_path_down(Reorder *r, unsigned path);
/* The path carries traffic again: its next packet makes it count. */
void reorder_path_up(Reorder *r, unsigned path);

/* Delivers everything held in order and forgets the sequence space (peer restarted). */
void reorder_reset(Reorder *r, ReorderDeliver deliver, void *userdata);

/* Takes back the memory of the packets delivered since the last call (copy buffers, and the
 * allocations of packets larger than a copy buffer): call it once the caller no longer uses
 * them, e.g. at the end of each receive batch. Until then they are not reused. */
void reorder_trim(Reorder *r);

const ReorderStats *reorder_stats(const Reorder *r);
size_t reorder_buffered(const Reorder *r);
/* Bytes allocated for held packets that no copy buffer takes (held, or delivered and not trimmed
 * yet): at most REORDER_BYTES_MAX plus what was delivered since the last reorder_trim(). */
size_t reorder_spill_bytes(const Reorder *r);
