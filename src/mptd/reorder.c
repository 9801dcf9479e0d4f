/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "reorder.h"
#include "wire.h"

/* A held packet that no copy buffer takes (larger than one, or none free): allocated for it, and
 * freed once it was delivered and the caller trimmed (reorder_trim()). */
typedef struct Spill {
        struct Spill *next; /* on the list of delivered ones */
        size_t len;
        uint8_t data[];
} Spill;

typedef struct Slot {
        uint32_t seq;
        bool buffered;  /* holds a packet with this seq, waiting */
        bool known;     /* expected has passed seq: delivered says whether it was delivered */
        bool delivered;
        bool early;     /* delivered ahead of expected (reorder_insert_now()): nothing to wait for */
        bool lent;      /* pkt points into the lender's memory, not into data */
        usec_t arrival;
        usec_t release; /* not delivered before (its path's extra delay), even in order */
        size_t len;
        const uint8_t *pkt; /* the held packet: lent memory, a copy buffer, or spill's */
        int32_t copy;       /* the copy buffer pkt is in, -1: none */
        Spill *spill;       /* the allocation pkt is in, NULL: none */
} Slot;

typedef struct PathFrontier {
        bool active;
        bool down;         /* told by the control plane: its packets do not count until it is up */
        uint32_t last_seq; /* newest sequence number seen from this path */
        usec_t last_rx;
        usec_t gap_max;    /* longest recent silence between its packets (slowly forgotten) */
        usec_t extra;      /* what its packets wait at least (reorder_set_path_extra()) */
} PathFrontier;


struct Reorder {
        uint32_t window;
        usec_t max_delay;
        usec_t min_hold; /* what a gap waits at least before inference may skip it */
        uint32_t mask; /* slots - 1; slots >= 2 * window, power of two */
        Slot *slots;
        /* Copies of held packets that the lender does not keep: `window` buffers of
         * REORDER_COPY_BYTES, and a stack of the free ones. The most recently freed is used
         * first, so a few pages serve ordinary reordering and the resident size grows only as
         * deep as the reordering ever was (one buffer per ring slot would become resident, slot
         * by slot, as traffic goes round the ring). */
        uint8_t *copies;
        uint32_t *copies_free;
        uint32_t n_copies_free;
        /* What was delivered since the last reorder_trim(): the caller may still use it, so
         * copy buffers go back to the free ones and spills are freed only then. */
        uint32_t *copies_delivered;
        uint32_t n_copies_delivered;
        Spill *spills_delivered;
        size_t spill_bytes; /* of all spills, held and delivered */

        bool synced;
        uint32_t expected; /* next sequence number to deliver */
        size_t n_buffered;
        size_t bytes_buffered;
        usec_t deadline;
        unsigned stale_run;

        PathFrontier paths[REORDER_PATHS_MAX];
        unsigned n_paths; /* paths[] beyond this were never seen */
        ReorderStats stats;
        ReorderLender lender;
};

Reorder *reorder_new(uint32_t window, usec_t max_delay) {
        Reorder *r;
        uint32_t n = 2;

        if (window < 1 || window > REORDER_WINDOW_MAX)
                return NULL;
        while (n < 2 * window)
                n <<= 1;
        r = calloc(1, sizeof(Reorder));
        if (!r)
                return NULL;
        r->slots = calloc(n, sizeof(Slot));
        r->copies = malloc((size_t) window * REORDER_COPY_BYTES);
        r->copies_free = malloc((size_t) window * sizeof(uint32_t));
        r->copies_delivered = malloc((size_t) window * sizeof(uint32_t));
        if (!r->slots || !r->copies || !r->copies_free || !r->copies_delivered) {
                free(r->slots);
                free(r->copies);
                free(r->copies_free);
                free(r->copies_delivered);
                return mfree(r);
        }
        for (uint32_t i = 0; i < n; i++)
                r->slots[i].copy = -1;
        for (uint32_t i = 0; i < window; i++)
                r->copies_free[i] = window - 1 - i;
        r->n_copies_free = window;
        r->window = window;
        r->max_delay = max_delay;
        r->mask = n - 1;
        r->deadline = USEC_INFINITY;
        return r;
}

void reorder_set_lender(Reorder *r, const ReorderLender *lender) {
        r->lender = lender ? *lender : (ReorderLender) {};
}

Reorder *reorder_free(Reorder *r) {
        if (!r)
                return NULL;
        for (uint32_t i = 0; i <= r->mask; i++) {
                if (r->slots[i].buffered && r->slots[i].lent)
                        r->lender.release(r->lender.userdata, r->slots[i].pkt);
                free(r->slots[i].spill);
        }
        reorder_trim(r);
        free(r->slots);
        free(r->copies);
        free(r->copies_free);
        free(r->copies_delivered);
        return mfree(r);
}

static Slot *slot_of(Reorder *r, uint32_t seq) {
        return &r->slots[seq & r->mask];
}

static void deliver_slot(Reorder *r, Slot *s, ReorderDeliver deliver, void *userdata) {
        assert(s->buffered);
        s->buffered = false;
        s->known = true;
        s->delivered = true;
        r->n_buffered--;
        r->bytes_buffered -= s->len;
        r->stats.delivered++;
        r->stats.held++;
        deliver(userdata, s->pkt, s->len);
        if (s->lent) {
                s->lent = false;
                r->lender.release(r->lender.userdata, s->pkt);
        }
        if (s->copy >= 0) {
                assert(r->n_copies_free + r->n_copies_delivered < r->window);
                r->copies_delivered[r->n_copies_delivered++] = (uint32_t) s->copy;
                s->copy = -1;
        }
        if (s->spill) {
                s->spill->next = r->spills_delivered;
                r->spills_delivered = TAKE_PTR(s->spill);
        }
}

void reorder_trim(Reorder *r) {
        /* In the order they were delivered: the last one is used first (see copies). */
        for (uint32_t i = 0; i < r->n_copies_delivered; i++)
                r->copies_free[r->n_copies_free++] = r->copies_delivered[i];
        r->n_copies_delivered = 0;
        while (r->spills_delivered) {
                Spill *sp = r->spills_delivered;
                r->spills_delivered = sp->next;
                r->spill_bytes -= sp->len;
                free(sp);
        }
}

size_t reorder_spill_bytes(const Reorder *r) {
        return r->spill_bytes;
}

/* Moves `expected` one step: delivers the held packet at expected, or skips its gap. */
static void advance_one(Reorder *r, bool timeout, ReorderDeliver deliver, void *userdata) {
        Slot *s = slot_of(r, r->expected);

        if (s->buffered && s->seq == r->expected)
                deliver_slot(r, s, deliver, userdata);
        else if (s->early && s->seq == r->expected) {
                s->early = false;
                s->known = true;
                s->delivered = true;
        } else {
                s->seq = r->expected;
                s->buffered = false;
                s->known = true;
                s->delivered = false;
                r->stats.lost++;
                if (timeout)
                        r->stats.timeouts++;
        }
        r->expected++;
}

/* Delivers the held packets in a row from expected on, up to one whose extra delay has not
 * passed yet (it is released then). */
static void drain(Reorder *r, usec_t now, ReorderDeliver deliver, void *userdata) {
        for (;;) {
                Slot *s = slot_of(r, r->expected);
                if (s->early && s->seq == r->expected) {
                        /* Delivered already: passed over. */
                        s->early = false;
                        s->known = true;
                        s->delivered = true;
                        r->expected++;
                        continue;
                }
                if (!(s->buffered && s->seq == r->expected))
                        break;
                if (s->release > now) {
                        r->deadline = MIN(r->deadline, s->release);
                        break;
                }
                deliver_slot(r, s, deliver, userdata);
                r->expected++;
        }
        if (r->n_buffered == 0)
                r->deadline = USEC_INFINITY;
}

/* The same after a forced step: nothing waits for its extra delay any more than for a gap. */
#define drain_forced(r, deliver, userdata) drain(r, USEC_INFINITY, deliver, userdata)

/* When the first held packet (the one just above the gap at expected) arrived: the gap has
 * existed at least since then. */
static usec_t first_held_arrival(Reorder *r) {
        for (uint32_t i = 1; i < r->window; i++) {
                Slot *s = slot_of(r, r->expected + i);
                if (s->buffered && s->seq == r->expected + i)
                        return s->arrival;
        }
        return 0;
}

/* Skip gaps that every active path has already passed: paths keep their order, so what is
 * missing below the oldest frontier is lost, once it has waited min_hold (the paths' delay
 * spread: a packet sent on the slowest path at the same time as one on the fastest arrives that
 * much later, and the slowest path may not have counted as active yet). */
static void infer_losses(Reorder *r, usec_t now, ReorderDeliver deliver, void *userdata) {
        bool any = false;
        uint32_t frontier = 0;

        if (r->n_buffered == 0)
                return;
        for (unsigned i = 0; i < r->n_paths; i++) {
                PathFrontier *p = &r->paths[i];
                if (!p->active)
                        continue;
                if (now > p->last_rx + CLAMP(REORDER_SILENCE_FACTOR * p->gap_max, REORDER_SILENCE_MIN, REORDER_SILENCE_MAX)) {
                        /* Silent for much longer than its own recent gaps (a path that just lost
                         * its packets, e.g. blackholed): waiting for it would only stall. Its late
                         * packets, if any, are still delivered. */
                        p->active = false;
                        continue;
                }
                if (!any || mpt_seq_diff(p->last_seq, frontier) < 0)
                        frontier = p->last_seq;
                any = true;
        }
        if (!any)
                return;
        while (r->n_buffered > 0 && mpt_seq_diff(frontier, r->expected) > 0) {
                Slot *head = slot_of(r, r->expected);

                if (head->buffered && head->seq == r->expected) {
                        /* No gap: a packet waiting for its extra delay (drain() set the deadline). */
                        return;
                }
                if (r->min_hold > 0) {
                        usec_t since = first_held_arrival(r);
                        if (now < since + r->min_hold) {
                                /* Look again when it has waited long enough. */
                                r->deadline = MIN(r->deadline, since + r->min_hold);
                                return;
                        }
                }
                advance_one(r, false, deliver, userdata);
                drain(r, now, deliver, userdata);
        }
}

/* The path delivered seq at now: it counts for loss inference (again), up to seq. */
static void path_seen(Reorder *r, unsigned path, uint32_t seq, usec_t now) {
        PathFrontier *p = &r->paths[path];

        /* A path that is down may still have packets queued here: deliver them, but they must not
         * make it count again (its frontier would stay behind and stall inference). */
        if (p->down)
                return;
        r->n_paths = MAX(r->n_paths, path + 1);
        if (p->active && now > p->last_rx) {
                usec_t gap = now - p->last_rx;
                p->gap_max = MAX(gap, p->gap_max - p->gap_max / REORDER_GAP_DECAY_DIV);
        }
        if (!p->active || mpt_seq_diff(seq, p->last_seq) > 0)
                p->last_seq = seq;
        p->active = true;
        p->last_rx = now;
}

static void flush_all(Reorder *r, ReorderDeliver deliver, void *userdata) {
        while (r->n_buffered > 0) {
                advance_one(r, false, deliver, userdata);
                drain_forced(r, deliver, userdata);
        }
        r->deadline = USEC_INFINITY;
}

static void forget_history(Reorder *r) {
        for (uint32_t i = 0; i <= r->mask; i++) {
                assert(!r->slots[i].buffered);
                r->slots[i].known = false;
                r->slots[i].delivered = false;
                r->slots[i].early = false;
        }
}

static void resync(Reorder *r, uint32_t seq, ReorderDeliver deliver, void *userdata) {
        flush_all(r, deliver, userdata);
        forget_history(r);
        for (unsigned i = 0; i < REORDER_PATHS_MAX; i++)
                r->paths[i].active = false;
        r->expected = seq;
        r->stale_run = 0;
        r->synced = true;
}

static int hold(Reorder *r, uint32_t seq, const uint8_t *pkt, size_t len, usec_t now, usec_t extra) {
        Slot *s = slot_of(r, seq);

        assert(s->copy < 0 && !s->spill);
        if (r->lender.retain && r->lender.retain(r->lender.userdata, pkt, len)) {
                s->lent = true;
                s->pkt = pkt;
        } else if (len <= REORDER_COPY_BYTES && r->n_copies_free > 0) {
                uint32_t c = r->copies_free[--r->n_copies_free];
                uint8_t *d = r->copies + (size_t) c * REORDER_COPY_BYTES;
                memcpy(d, pkt, len);
                s->copy = (int32_t) c;
                s->lent = false;
                s->pkt = d;
        } else {
                /* Just its size, and freed after delivery: what a peer can make us allocate is
                 * bounded by what may be held (REORDER_BYTES_MAX), not by the slots that ever
                 * held a large packet. */
                Spill *sp = malloc(sizeof(Spill) + len);
                if (!sp)
                        return -ENOMEM;
                sp->len = len;
                memcpy(sp->data, pkt, len);
                r->spill_bytes += len;
                s->spill = sp;
                s->lent = false;
                s->pkt = sp->data;
        }
        s->seq = seq;
        s->len = len;
        s->arrival = now;
        s->release = extra > 0 ? now + MIN(extra, r->max_delay) : 0;
        s->buffered = true;
        s->known = false;
        s->delivered = false;
        s->early = false;
        r->n_buffered++;
        r->bytes_buffered += len;
        r->deadline = MIN(r->deadline, now + r->max_delay);
        if (s->release > 0)
                r->deadline = MIN(r->deadline, s->release);
        return 0;
}

/* reorder_insert() and, at_once, reorder_insert_now(). */
static int insert(Reorder *r, uint32_t seq, unsigned path, const uint8_t *pkt, size_t len, usec_t now, bool at_once,
                  ReorderDeliver deliver, void *userdata) {
        int32_t d;
        int k;

        assert(path < REORDER_PATHS_MAX);

        if (!r->synced)
                resync(r, seq, deliver, userdata);
        /* Packets whose extra delay has passed go first. */
        if (r->n_buffered > 0)
                drain(r, now, deliver, userdata);

        d = mpt_seq_diff(seq, r->expected);
        if (d < 0) {
                Slot *s = slot_of(r, seq);
                /* Within remembered history: late or duplicate. */
                if (0u - (uint32_t) d <= r->mask + 1 - r->window && s->known && s->seq == seq) {
                        r->stale_run = 0;
                        /* A late path is alive too: without this, a path that was inactive once
                         * (start, silence) would only ever deliver late and never count again. */
                        path_seen(r, path, seq, now);
                        if (s->delivered) {
                                r->stats.duplicates++;
                                return MPT_DROP_DUPLICATE;
                        }
                        s->delivered = true;
                        r->stats.late++;
                        r->stats.delivered++;
                        deliver(userdata, pkt, len);
                        return -1;
                }
                if (++r->stale_run < REORDER_RESYNC_STALE) {
                        /* Counted only when dropped: the packet that triggers the resync is delivered. */
                        r->stats.stale++;
                        return MPT_DROP_STALE;
                }
                /* A run of packets far behind: the peer started over. */
                r->stats.resyncs++;
                resync(r, seq, deliver, userdata);
                d = 0;
        }
        r->stale_run = 0;
        path_seen(r, path, seq, now);

        if ((uint32_t) d >= r->window) {
                if ((uint32_t) d >= r->mask + 1) {
                        /* Far ahead: beyond anything a real gap can explain (the sender restarted
                         * with a new sequence space, or jumped). Deliver what is held and start
                         * over there; counting the whole distance as lost would be meaningless. */
                        flush_all(r, deliver, userdata);
                        forget_history(r);
                        r->stats.resyncs++;
                        r->expected = seq - (r->window - 1);
                } else
                        while ((uint32_t) mpt_seq_diff(seq, r->expected) >= r->window) {
                                advance_one(r, false, deliver, userdata);
                                drain_forced(r, deliver, userdata);
                        }
                d = mpt_seq_diff(seq, r->expected);
        }

        {
                /* (at expected too: a packet that waits for its path's extra delay) */
                Slot *s = slot_of(r, seq);
                if (d >= 0 && (s->buffered || s->early) && s->seq == seq) {
                        r->stats.duplicates++;
                        return MPT_DROP_DUPLICATE;
                }
        }

        /* Bound the memory a peer can make us hold: release the oldest first. */
        while (d > 0 && !at_once && r->bytes_buffered + len > REORDER_BYTES_MAX && r->n_buffered > 0) {
                r->stats.overflows++;
                advance_one(r, false, deliver, userdata);
                drain_forced(r, deliver, userdata);
                d = mpt_seq_diff(seq, r->expected);
        }

        if (d == 0 && !at_once && r->paths[path].extra > 0 && !r->paths[path].down) {
                /* In order, but its path is faster than the slowest: it waits the difference, so
                 * that every packet takes about as long (a TCP stream above sees one round trip,
                 * not the fast path's when it happens to wait for nothing). */
                k = hold(r, seq, pkt, len, now, r->paths[path].extra);
                if (k < 0)
                        return k;
                return -1;
        }
        if (d <= 0) {
                Slot *s = slot_of(r, seq);
                if (d < 0 && s->known && s->seq == seq && s->delivered) {
                        r->stats.duplicates++;
                        return MPT_DROP_DUPLICATE;
                }
                s->seq = seq;
                s->known = true;
                s->delivered = true;
                r->stats.delivered++;
                if (d < 0)
                        r->stats.late++;
                deliver(userdata, pkt, len);
                if (d == 0) {
                        r->expected++;
                        drain(r, now, deliver, userdata);
                        infer_losses(r, now, deliver, userdata);
                }
                return -1;
        }
        if (at_once) {
                /* Ahead of a gap: delivered now; the buffer passes over its number later. */
                Slot *s = slot_of(r, seq);
                s->seq = seq;
                s->early = true;
                s->known = false;
                s->delivered = false;
                r->stats.delivered++;
                r->stats.early++;
                deliver(userdata, pkt, len);
                infer_losses(r, now, deliver, userdata);
                return -1;
        }

        k = hold(r, seq, pkt, len, now, r->paths[path].down ? 0 : r->paths[path].extra);
        if (k < 0)
                return k;
        infer_losses(r, now, deliver, userdata);
        return -1;
}

int reorder_insert(Reorder *r, uint32_t seq, unsigned path, const uint8_t *pkt, size_t len, usec_t now,
                   ReorderDeliver deliver, void *userdata) {
        return insert(r, seq, path, pkt, len, now, false, deliver, userdata);
}

int reorder_insert_now(Reorder *r, uint32_t seq, unsigned path, const uint8_t *pkt, size_t len, usec_t now,
                       ReorderDeliver deliver, void *userdata) {
        return insert(r, seq, path, pkt, len, now, true, deliver, userdata);
}

void reorder_expire(Reorder *r, usec_t now, ReorderDeliver deliver, void *userdata) {
        uint32_t target = 0;
        bool found = false;
        usec_t next = USEC_INFINITY;

        if (r->n_buffered == 0) {
                r->deadline = USEC_INFINITY;
                return;
        }
        /* Packets whose extra delay passed, then gaps that waited min_hold and that every
         * active path has passed. */
        r->deadline = USEC_INFINITY;
        drain(r, now, deliver, userdata);
        infer_losses(r, now, deliver, userdata);
        if (r->n_buffered == 0)
                return;
        /* The newest held packet that waited long enough: release everything up to it. */
        for (uint32_t i = 0; i < r->window; i++) {
                uint32_t seq = r->expected + i;
                Slot *s = slot_of(r, seq);
                if (!(s->buffered && s->seq == seq))
                        continue;
                if (s->arrival + r->max_delay <= now) {
                        target = seq;
                        found = true;
                }
        }
        if (found)
                while (mpt_seq_diff(target, r->expected) >= 0) {
                        advance_one(r, true, deliver, userdata);
                        drain_forced(r, deliver, userdata);
                }
        for (uint32_t i = 0; r->n_buffered > 0 && i < r->window; i++) {
                uint32_t seq = r->expected + i;
                Slot *s = slot_of(r, seq);
                if (s->buffered && s->seq == seq)
                        next = MIN(next, s->arrival + r->max_delay);
        }
        {
                Slot *head = slot_of(r, r->expected);
                if (head->buffered && head->seq == r->expected && head->release > 0)
                        next = MIN(next, head->release);
        }
        r->deadline = r->n_buffered > 0 ? next : USEC_INFINITY;
        /* Inference that waits for min_hold wants another look then (not before: a gap that
         * the paths have not passed yet leaves only the timeout). */
        if (r->n_buffered > 0 && r->min_hold > 0) {
                usec_t at = first_held_arrival(r) + r->min_hold;
                if (at > now)
                        r->deadline = MIN(r->deadline, at);
        }
}

usec_t reorder_deadline(const Reorder *r) {
        return r->deadline;
}

void reorder_set_min_hold(Reorder *r, usec_t min_hold) {
        r->min_hold = MIN(min_hold, r->max_delay);
}

usec_t reorder_min_hold(const Reorder *r) {
        return r->min_hold;
}

void reorder_set_max_delay(Reorder *r, usec_t max_delay) {
        if (max_delay < r->max_delay && r->n_buffered > 0)
                r->deadline = 0; /* the next reorder_expire() computes it again */
        r->max_delay = max_delay;
}

usec_t reorder_max_delay(const Reorder *r) {
        return r->max_delay;
}

void reorder_set_path_extra(Reorder *r, unsigned path, usec_t extra) {
        if (path < REORDER_PATHS_MAX)
                r->paths[path].extra = MIN(extra, r->max_delay);
}

usec_t reorder_path_extra(const Reorder *r, unsigned path) {
        return path < REORDER_PATHS_MAX ? r->paths[path].extra : 0;
}

void reorder_path_down(Reorder *r, unsigned path) {
        if (path < REORDER_PATHS_MAX) {
                r->paths[path].active = false;
                r->paths[path].down = true;
        }
}

void reorder_path_up(Reorder *r, unsigned path) {
        if (path < REORDER_PATHS_MAX)
                r->paths[path].down = false;
}

void reorder_reset(Reorder *r, ReorderDeliver deliver, void *userdata) {
        flush_all(r, deliver, userdata);
        r->synced = false;
        for (unsigned i = 0; i < REORDER_PATHS_MAX; i++)
                r->paths[i].active = false;
}

const ReorderStats *reorder_stats(const Reorder *r) {
        return &r->stats;
}

size_t reorder_buffered(const Reorder *r) {
        return r->n_buffered;
}
