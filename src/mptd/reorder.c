/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "reorder.h"
#include "wire.h"

typedef struct Slot {
        uint32_t seq;
        bool buffered;  /* holds a packet with this seq, waiting */
        bool known;     /* expected has passed seq: delivered says whether it was delivered */
        bool delivered;
        bool lent;      /* pkt points into the lender's memory, not into data */
        usec_t arrival;
        size_t len;
        const uint8_t *pkt; /* the held packet: lent memory, a copy buffer, or data */
        int32_t copy;       /* the copy buffer pkt is in, -1: none */
        size_t capacity;
        uint8_t *data;      /* for copies larger than a copy buffer, or when none is free */
} Slot;

typedef struct PathFrontier {
        bool active;
        bool down;         /* told by the control plane: its packets do not count until it is up */
        uint32_t last_seq; /* newest sequence number seen from this path */
        usec_t last_rx;
        usec_t gap_max;    /* longest recent silence between its packets (slowly forgotten) */
} PathFrontier;


struct Reorder {
        uint32_t window;
        usec_t max_delay;
        uint32_t mask; /* slots - 1; slots >= 2 * window, power of two */
        Slot *slots;
        /* Copies of held packets that the lender does not keep: `window` buffers of
         * REORDER_COPY_BYTES, and a stack of the free ones. The most recently freed is used
         * first, so a few pages serve ordinary reordering and the resident size grows only as
         * deep as the reordering ever was (before, each ring slot had a buffer of its own, and as
         * traffic went round the ring ever more of them became resident). */
        uint8_t *copies;
        uint32_t *copies_free;
        uint32_t n_copies_free;

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

        if (window < 1 || window > 65536)
                return NULL;
        while (n < 2 * window)
                n <<= 1;
        r = calloc(1, sizeof(Reorder));
        if (!r)
                return NULL;
        r->slots = calloc(n, sizeof(Slot));
        r->copies = malloc((size_t) window * REORDER_COPY_BYTES);
        r->copies_free = malloc((size_t) window * sizeof(uint32_t));
        if (!r->slots || !r->copies || !r->copies_free) {
                free(r->slots);
                free(r->copies);
                free(r->copies_free);
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
                free(r->slots[i].data);
        }
        free(r->slots);
        free(r->copies);
        free(r->copies_free);
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
                assert(r->n_copies_free < r->window);
                r->copies_free[r->n_copies_free++] = (uint32_t) s->copy;
                s->copy = -1;
        }
}

/* Moves `expected` one step: delivers the held packet at expected, or skips its gap. */
static void advance_one(Reorder *r, bool timeout, ReorderDeliver deliver, void *userdata) {
        Slot *s = slot_of(r, r->expected);

        if (s->buffered && s->seq == r->expected)
                deliver_slot(r, s, deliver, userdata);
        else {
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

/* Delivers the run of held packets starting at expected. */
static void drain(Reorder *r, ReorderDeliver deliver, void *userdata) {
        for (;;) {
                Slot *s = slot_of(r, r->expected);
                if (!(s->buffered && s->seq == r->expected))
                        break;
                deliver_slot(r, s, deliver, userdata);
                r->expected++;
        }
        if (r->n_buffered == 0)
                r->deadline = USEC_INFINITY;
}

/* Skip gaps that every active path has already passed: paths keep their order, so what is
 * missing below the oldest frontier is lost. */
static void infer_losses(Reorder *r, usec_t now, ReorderDeliver deliver, void *userdata) {
        bool any = false;
        uint32_t frontier = 0;

        if (r->n_buffered == 0)
                return;
        for (unsigned i = 0; i < r->n_paths; i++) {
                PathFrontier *p = &r->paths[i];
                if (!p->active)
                        continue;
                if (now > p->last_rx + CLAMP(REORDER_SILENCE_FACTOR * p->gap_max, REORDER_SILENCE_MIN, r->max_delay)) {
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
                advance_one(r, false, deliver, userdata);
                drain(r, deliver, userdata);
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
                p->gap_max = MAX(gap, p->gap_max - p->gap_max / 1024);
        }
        if (!p->active || mpt_seq_diff(seq, p->last_seq) > 0)
                p->last_seq = seq;
        p->active = true;
        p->last_rx = now;
}

static void flush_all(Reorder *r, ReorderDeliver deliver, void *userdata) {
        while (r->n_buffered > 0) {
                advance_one(r, false, deliver, userdata);
                drain(r, deliver, userdata);
        }
        r->deadline = USEC_INFINITY;
}

static void forget_history(Reorder *r) {
        for (uint32_t i = 0; i <= r->mask; i++) {
                assert(!r->slots[i].buffered);
                r->slots[i].known = false;
                r->slots[i].delivered = false;
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

static int hold(Reorder *r, uint32_t seq, const uint8_t *pkt, size_t len, usec_t now) {
        Slot *s = slot_of(r, seq);

        assert(s->copy < 0);
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
                if (s->capacity < len) {
                        size_t cap = MAX(len, (size_t) 2048);
                        uint8_t *d = realloc(s->data, cap);
                        if (!d)
                                return -ENOMEM;
                        s->data = d;
                        s->capacity = cap;
                }
                memcpy(s->data, pkt, len);
                s->lent = false;
                s->pkt = s->data;
        }
        s->seq = seq;
        s->len = len;
        s->arrival = now;
        s->buffered = true;
        s->known = false;
        s->delivered = false;
        r->n_buffered++;
        r->bytes_buffered += len;
        r->deadline = MIN(r->deadline, now + r->max_delay);
        return 0;
}

int reorder_insert(Reorder *r, uint32_t seq, unsigned path, const uint8_t *pkt, size_t len, usec_t now,
                   ReorderDeliver deliver, void *userdata) {
        int32_t d;
        int k;

        assert(path < REORDER_PATHS_MAX);

        if (!r->synced)
                resync(r, seq, deliver, userdata);

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
                                drain(r, deliver, userdata);
                        }
                d = mpt_seq_diff(seq, r->expected);
        }

        {
                Slot *s = slot_of(r, seq);
                if (d > 0 && s->buffered && s->seq == seq) {
                        r->stats.duplicates++;
                        return MPT_DROP_DUPLICATE;
                }
        }

        /* Bound the memory a peer can make us hold: release the oldest first. */
        while (d > 0 && r->bytes_buffered + len > REORDER_BYTES_MAX && r->n_buffered > 0) {
                r->stats.overflows++;
                advance_one(r, false, deliver, userdata);
                drain(r, deliver, userdata);
                d = mpt_seq_diff(seq, r->expected);
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
                        drain(r, deliver, userdata);
                        infer_losses(r, now, deliver, userdata);
                }
                return -1;
        }

        k = hold(r, seq, pkt, len, now);
        if (k < 0)
                return k;
        infer_losses(r, now, deliver, userdata);
        return -1;
}

void reorder_expire(Reorder *r, usec_t now, ReorderDeliver deliver, void *userdata) {
        uint32_t target = 0;
        bool found = false;
        usec_t next = USEC_INFINITY;

        if (r->n_buffered == 0) {
                r->deadline = USEC_INFINITY;
                return;
        }
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
                        drain(r, deliver, userdata);
                }
        for (uint32_t i = 0; r->n_buffered > 0 && i < r->window; i++) {
                uint32_t seq = r->expected + i;
                Slot *s = slot_of(r, seq);
                if (s->buffered && s->seq == seq)
                        next = MIN(next, s->arrival + r->max_delay);
        }
        r->deadline = r->n_buffered > 0 ? next : USEC_INFINITY;
}

usec_t reorder_deadline(const Reorder *r) {
        return r->deadline;
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
