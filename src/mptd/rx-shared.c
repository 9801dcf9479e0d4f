/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <time.h>

#include "rx-shared.h"

static uint64_t monotonic_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

void rx_lock(pthread_mutex_t *m, RxContention *c) {
        uint64_t start;

        if (pthread_mutex_trylock(m) == 0)
                return;
        /* Only a wait costs the clock. */
        start = c ? monotonic_ns() : 0;
        pthread_mutex_lock(m);
        if (c) {
                COUNTER_ADD(c->waits, 1);
                COUNTER_ADD(c->wait_ns, monotonic_ns() - start);
        }
}

/* Aligned (the lanes and locks are a cache line each, so that workers holding different ones
 * never write to the same line) and zeroed. */
static void *alloc0_aligned(size_t size) {
        size_t n = ALIGN_TO(size, (size_t) 64);
        void *p = aligned_alloc(64, n);

        if (p)
                memset(p, 0, n);
        return p;
}

int rx_shared_new(uint32_t window, usec_t max_delay, RxShared **ret) {
        RxShared *rs = alloc0_aligned(sizeof(RxShared));

        if (!rs)
                return -ENOMEM;
        rs->window = window;
        rs->max_delay = rs->min_hold = max_delay;
        pthread_mutex_init(&rs->create_lock, NULL);
        for (unsigned i = 0; i < MPT_PATHS_MAX; i++)
                pthread_mutex_init(&rs->secure_locks[i].lock, NULL);
        *ret = rs;
        return 0;
}

RxShared *rx_shared_free(RxShared *rs) {
        if (!rs)
                return NULL;
        for (unsigned i = 0; i < RX_SHARED_LANES; i++) {
                RxLane *l = rs->lanes[i];

                if (!l)
                        continue;
                /* Held packets lent by the workers go back to the main thread's account. */
                l->holder = NULL;
                reorder_free(l->reorder);
                pthread_mutex_destroy(&l->lock);
                free(l);
        }
        for (unsigned i = 0; i < MPT_PATHS_MAX; i++)
                pthread_mutex_destroy(&rs->secure_locks[i].lock);
        pthread_mutex_destroy(&rs->create_lock);
        mpt_secure_rx_free(rs->secure);
        free(rs);
        return NULL;
}

void rx_shared_set_lender(RxShared *rs, const RxLender *lender) {
        assert(rs->mask == 0);
        rs->lender = *lender;
}

int rx_shared_set_secure(RxShared *rs, bool sessions, uint64_t own_epoch) {
        assert(!rs->secure);
        rs->secure = sessions ? mpt_secure_rx_new_sessions() : mpt_secure_rx_new(own_epoch);
        return rs->secure ? 0 : -ENOMEM;
}

/* The reorder buffer's lender: the RxLender, told who delivers. */
static bool lane_retain(void *userdata, const uint8_t *pkt, size_t len) {
        RxLane *l = userdata;
        return l->lender.retain(l->lender.userdata, l->holder, pkt, len);
}

static void lane_release(void *userdata, const uint8_t *pkt) {
        RxLane *l = userdata;
        l->lender.release(l->lender.userdata, l->holder, pkt);
}

RxLane *rx_shared_lane_get(const RxShared *rs, unsigned lane) {
        if (lane >= RX_SHARED_LANES)
                return NULL;
        return __atomic_load_n(&rs->lanes[lane], __ATOMIC_ACQUIRE);
}

uint64_t rx_shared_lanes(const RxShared *rs) {
        return __atomic_load_n(&rs->mask, __ATOMIC_ACQUIRE);
}

RxLane *rx_shared_lane(RxShared *rs, unsigned lane) {
        RxLane *l = rx_shared_lane_get(rs, lane);

        if (l || rs->window == 0 || lane >= RX_SHARED_LANES)
                return l;
        /* The first numbered packet of the lane: rare (once per lane of the other end), so one
         * lock for all. */
        pthread_mutex_lock(&rs->create_lock);
        l = rs->lanes[lane];
        if (!l) {
                l = alloc0_aligned(sizeof(RxLane));
                if (l)
                        l->reorder = reorder_new(rs->window, rs->max_delay);
                if (l && l->reorder) {
                        pthread_mutex_init(&l->lock, NULL);
                        l->index = lane;
                        l->deadline = USEC_INFINITY;
                        l->lender = rs->lender;
                        if (rs->lender.retain)
                                reorder_set_lender(l->reorder, &(ReorderLender) {
                                        .retain = lane_retain,
                                        .release = lane_release,
                                        .userdata = l,
                                });
                        reorder_set_min_hold(l->reorder, rs->min_hold);
                        for (unsigned p = 0; p < REORDER_PATHS_MAX; p++) {
                                reorder_set_path_extra(l->reorder, p, rs->extra[p]);
                                if (rs->down[p])
                                        reorder_path_down(l->reorder, p);
                        }
                        __atomic_store_n(&rs->lanes[lane], l, __ATOMIC_RELEASE);
                        __atomic_or_fetch(&rs->mask, UINT64_C(1) << lane, __ATOMIC_RELEASE);
                } else {
                        if (l)
                                reorder_free(l->reorder);
                        l = mfree(l);
                }
        }
        pthread_mutex_unlock(&rs->create_lock);
        return l;
}

void rx_lane_lock(RxLane *l, void *holder, RxContention *c) {
        rx_lock(&l->lock, c);
        l->holder = holder;
}

void rx_lane_unlock(RxLane *l) {
        __atomic_store_n(&l->deadline, reorder_deadline(l->reorder), __ATOMIC_RELEASE);
        l->holder = NULL;
        pthread_mutex_unlock(&l->lock);
}

usec_t rx_lane_deadline(const RxLane *l) {
        return __atomic_load_n(&l->deadline, __ATOMIC_ACQUIRE);
}

void rx_shared_secure_lock(RxShared *rs, unsigned path_id, RxContention *c) {
        assert(path_id < MPT_PATHS_MAX);
        rx_lock(&rs->secure_locks[path_id].lock, c);
}

void rx_shared_secure_unlock(RxShared *rs, unsigned path_id) {
        pthread_mutex_unlock(&rs->secure_locks[path_id].lock);
}

/* ---- the main thread ---- */

/* Runs f on every lane made so far, under its lock, after the settings changed under
 * create_lock: a lane made meanwhile had the new settings already (doing it twice is harmless). */
#define FOREACH_LANE(rs, l)                                                                              \
        for (uint64_t _m = rx_shared_lanes(rs), _i; _m != 0 && (_i = (uint64_t) __builtin_ctzll(_m), 1); \
             _m &= _m - 1)                                                                               \
                for (RxLane *l = rx_shared_lane_get(rs, (unsigned) _i); l; l = NULL)

void rx_shared_set_hold(RxShared *rs, usec_t max_delay, usec_t min_hold) {
        pthread_mutex_lock(&rs->create_lock);
        rs->max_delay = max_delay;
        rs->min_hold = min_hold;
        pthread_mutex_unlock(&rs->create_lock);
        FOREACH_LANE(rs, l) {
                rx_lane_lock(l, NULL, NULL);
                reorder_set_max_delay(l->reorder, max_delay);
                reorder_set_min_hold(l->reorder, min_hold);
                rx_lane_unlock(l);
        }
}

void rx_shared_set_path_extra(RxShared *rs, unsigned path, usec_t extra) {
        if (path >= REORDER_PATHS_MAX)
                return;
        pthread_mutex_lock(&rs->create_lock);
        rs->extra[path] = extra;
        pthread_mutex_unlock(&rs->create_lock);
        FOREACH_LANE(rs, l) {
                rx_lane_lock(l, NULL, NULL);
                reorder_set_path_extra(l->reorder, path, extra);
                rx_lane_unlock(l);
        }
}

static void set_path_down(RxShared *rs, unsigned path, bool down) {
        if (path >= REORDER_PATHS_MAX)
                return;
        pthread_mutex_lock(&rs->create_lock);
        rs->down[path] = down;
        pthread_mutex_unlock(&rs->create_lock);
        FOREACH_LANE(rs, l) {
                rx_lane_lock(l, NULL, NULL);
                if (down)
                        reorder_path_down(l->reorder, path);
                else
                        reorder_path_up(l->reorder, path);
                rx_lane_unlock(l);
        }
}

void rx_shared_path_down(RxShared *rs, unsigned path) {
        set_path_down(rs, path, true);
}

void rx_shared_path_up(RxShared *rs, unsigned path) {
        set_path_down(rs, path, false);
}

void rx_shared_reset(RxShared *rs, ReorderDeliver deliver, void *userdata) {
        FOREACH_LANE(rs, l) {
                rx_lane_lock(l, NULL, NULL);
                reorder_reset(l->reorder, deliver, userdata);
                reorder_trim(l->reorder);
                rx_lane_unlock(l);
        }
}

void rx_shared_stats(RxShared *rs, ReorderStats *ret, size_t *ret_buffered) {
        ReorderStats sum = {};
        size_t buffered = 0;

        FOREACH_LANE(rs, l) {
                const ReorderStats *st;

                rx_lane_lock(l, NULL, NULL);
                st = reorder_stats(l->reorder);
                sum.delivered += st->delivered;
                sum.held += st->held;
                sum.late += st->late;
                sum.lost += st->lost;
                sum.timeouts += st->timeouts;
                sum.duplicates += st->duplicates;
                sum.stale += st->stale;
                sum.resyncs += st->resyncs;
                sum.overflows += st->overflows;
                sum.early += st->early;
                buffered += reorder_buffered(l->reorder);
                rx_lane_unlock(l);
        }
        *ret = sum;
        if (ret_buffered)
                *ret_buffered = buffered;
}
