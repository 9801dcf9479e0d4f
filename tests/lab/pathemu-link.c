/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <sys/mman.h>

#include "pathemu-link.h"

enum {
        FRAME_QUEUED,
        FRAME_DELAYED,
        FRAME_DONE,             /* released or lost: its space comes back when the tail passes */
        FRAME_SKIP,             /* padding up to the ring's end */
};

#define FRAME_ALIGN 16

struct EmuLink {
        const EmuDirSpec *spec;
        bool any_rate;          /* some phase serialises (else a queue never drains) */

        uint8_t *ring;
        uint64_t ring_size;     /* a power of two */
        /* Monotonic byte offsets: [tail, serve) delay line and finished records, [serve, head)
         * the queue. */
        uint64_t tail, serve, head;

        uint64_t link_free;     /* when the serialiser is free (virtual clock) */
        uint64_t last_release;
        uint64_t last_arrival;
        uint64_t trace_start;

        /* reorder: the delay line as a min-heap of ring offsets by release time */
        uint64_t *heap;
        size_t n_heap, heap_cap;

        bool ge_bad;
        bool last_lost;
        uint64_t rng_loss[4], rng_jitter[4];

        EmuCounters c;
};

/* ---- random numbers: xoshiro256** seeded by splitmix64 ---- */

static uint64_t splitmix64(uint64_t *x) {
        uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

static void rng_seed(uint64_t s[4], uint64_t seed) {
        for (size_t i = 0; i < 4; i++)
                s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) {
        return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(uint64_t s[4]) {
        uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return result;
}

/* Uniform in [0, 1). */
static double rng_uniform(uint64_t s[4]) {
        return (double) (rng_next(s) >> 11) * 0x1.0p-53;
}

/* ---- the ring ---- */

static EmuFrame *at(const EmuLink *l, uint64_t off) {
        return (EmuFrame *) (void *) (l->ring + (off & (l->ring_size - 1)));
}

int emu_link_new(const EmuDirSpec *spec, uint64_t seed, uint64_t now, EmuLink **ret) {
        EmuLink *l;
        uint64_t want = emu_dir_spec_buffer_size(spec), size = 64 << 10;

        while (size < want)
                size <<= 1;
        l = calloc(1, sizeof(EmuLink));
        if (!l)
                return -ENOMEM;
        l->spec = spec;
        l->ring_size = size;
        /* Only the pages the traffic reaches are ever backed. */
        l->ring = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (l->ring == MAP_FAILED) {
                free(l);
                return -errno;
        }
        if (spec->reorder) {
                l->heap_cap = size / (ALIGN_TO(sizeof(EmuFrame) + 14, FRAME_ALIGN));
                l->heap = calloc(l->heap_cap, sizeof(uint64_t));
                if (!l->heap) {
                        (void) munmap(l->ring, size);
                        free(l);
                        return -ENOMEM;
                }
        }
        for (size_t i = 0; i < spec->n_phases; i++)
                if (spec->phases[i].rate > 0)
                        l->any_rate = true;
        /* Two independent streams: a change of jitter does not change which frames are lost. */
        rng_seed(l->rng_loss, seed);
        rng_seed(l->rng_jitter, seed ^ 0x6a09e667f3bcc909ULL);
        l->trace_start = now;
        l->link_free = now;
        l->last_arrival = now;
        *ret = l;
        return 0;
}

EmuLink *emu_link_free(EmuLink *l) {
        if (!l)
                return NULL;
        (void) munmap(l->ring, l->ring_size);
        free(l->heap);
        free(l);
        return NULL;
}

void emu_link_restart_trace(EmuLink *l, uint64_t now) {
        l->trace_start = now;
}

const EmuCounters *emu_link_counters(const EmuLink *l) {
        return &l->c;
}

static const EmuPhase *phase_at(const EmuLink *l, uint64_t t, size_t *ret_index) {
        return emu_dir_spec_phase_at(l->spec, t > l->trace_start ? t - l->trace_start : 0, ret_index);
}

size_t emu_link_phase(const EmuLink *l, uint64_t now) {
        size_t i;

        (void) phase_at(l, now, &i);
        return i;
}

/* When frame F finishes serialisation, on the virtual clock, or EMU_TIME_INFINITY while the
 * link stalls for good. A frame starts in the first phase with a rate, and takes that phase's
 * serialisation time even when the phase ends meanwhile. */
static uint64_t finish_time(const EmuLink *l, const EmuFrame *f) {
        uint64_t start = MAX(l->link_free, f->arrival);

        if (!l->any_rate)
                return EMU_TIME_INFINITY;
        /* A full cycle of a looping trace meets a phase with a rate. */
        for (size_t i = 0; i <= l->spec->n_phases + 1; i++) {
                const EmuPhase *ph = phase_at(l, start, NULL);
                uint64_t next;

                if (ph->rate == EMU_RATE_UNLIMITED)
                        return start;
                if (ph->rate > 0)
                        return start + DIV_ROUND_UP((uint64_t) f->len * 8 * EMU_NSEC_PER_SEC, ph->rate);
                next = emu_dir_spec_next_change(l->spec, start > l->trace_start ? start - l->trace_start : 0);
                if (next == EMU_TIME_INFINITY)
                        return EMU_TIME_INFINITY;
                start = l->trace_start + next;
        }
        return EMU_TIME_INFINITY;
}

static bool lose(EmuLink *l, const EmuLoss *m) {
        bool lost = false;

        switch (m->model) {
        case EMU_LOSS_RANDOM:
                lost = rng_uniform(l->rng_loss) < m->p;
                break;
        case EMU_LOSS_GE:
                /* State change first, then the frame's fate in the new state. */
                if (l->ge_bad)
                        l->ge_bad = !(rng_uniform(l->rng_loss) < m->r);
                else
                        l->ge_bad = rng_uniform(l->rng_loss) < m->p;
                lost = rng_uniform(l->rng_loss) < (l->ge_bad ? m->bad : m->good);
                break;
        default:
                break;
        }
        if (lost && !l->last_lost)
                l->c.loss_bursts++;
        l->last_lost = lost;
        return lost;
}

static int64_t jitter(EmuLink *l, uint64_t j) {
        if (j == 0)
                return 0;
        return (int64_t) (rng_uniform(l->rng_jitter) * (double) (2 * j + 1)) - (int64_t) j;
}

/* ---- the reorder heap ---- */

static bool heap_less(const EmuLink *l, size_t a, size_t b) {
        return at(l, l->heap[a])->release < at(l, l->heap[b])->release;
}

static void heap_swap(EmuLink *l, size_t a, size_t b) {
        uint64_t t = l->heap[a];

        l->heap[a] = l->heap[b];
        l->heap[b] = t;
}

static void heap_push(EmuLink *l, uint64_t off) {
        size_t i = l->n_heap++;

        assert(l->n_heap <= l->heap_cap);
        l->heap[i] = off;
        while (i > 0 && heap_less(l, i, (i - 1) / 2)) {
                heap_swap(l, i, (i - 1) / 2);
                i = (i - 1) / 2;
        }
}

static uint64_t heap_pop(EmuLink *l) {
        uint64_t top = l->heap[0];
        size_t i = 0;

        l->heap[0] = l->heap[--l->n_heap];
        for (;;) {
                size_t m = i, a = 2 * i + 1, b = 2 * i + 2;

                if (a < l->n_heap && heap_less(l, a, m))
                        m = a;
                if (b < l->n_heap && heap_less(l, b, m))
                        m = b;
                if (m == i)
                        break;
                heap_swap(l, i, m);
                i = m;
        }
        return top;
}

/* ---- the path ---- */

void emu_link_advance(EmuLink *l, uint64_t now) {
        while (l->serve != l->head) {
                EmuFrame *f = at(l, l->serve);
                const EmuPhase *ph;
                uint64_t finish, release;

                if (f->state == FRAME_SKIP) {
                        l->serve += f->size;
                        continue;
                }
                finish = finish_time(l, f);
                if (finish > now)
                        break;
                l->link_free = finish;
                l->serve += f->size;
                l->c.queue_bytes -= f->len;

                ph = phase_at(l, finish, NULL);
                if (lose(l, &ph->loss)) {
                        f->state = FRAME_DONE;
                        l->c.loss_drops++;
                        l->c.loss_drop_bytes += f->len;
                        continue;
                }
                release = (uint64_t) ((int64_t) (finish + ph->delay) + jitter(l, ph->jitter));
                f->state = FRAME_DELAYED;
                if (l->spec->reorder) {
                        f->release = release;
                        heap_push(l, l->serve - f->size);
                } else {
                        /* A frame does not overtake the one before it: it waits for it. */
                        f->release = MAX(release, l->last_release);
                        l->last_release = f->release;
                }
        }
}

static void advance_tail(EmuLink *l) {
        while (l->tail != l->serve) {
                EmuFrame *f = at(l, l->tail);

                if (f->state != FRAME_DONE && f->state != FRAME_SKIP)
                        break;
                l->tail += f->size;
        }
}

EmuVerdict emu_link_arrive(EmuLink *l, uint64_t now, const void *meta, size_t meta_len, const void *data,
                           size_t len) {
        uint64_t need = ALIGN_TO(sizeof(EmuFrame) + len, FRAME_ALIGN), pos, to_end, total;
        const EmuPhase *ph;
        EmuFrame *f;

        assert(len <= UINT16_MAX && meta_len <= EMU_META_MAX);
        now = MAX(now, l->last_arrival);
        l->last_arrival = now;
        l->c.rx_packets++;
        l->c.rx_bytes += len;

        emu_link_advance(l, now);
        ph = phase_at(l, now, NULL);
        if (l->c.queue_bytes + len > ph->limit) {
                l->c.queue_drops++;
                l->c.queue_drop_bytes += len;
                return EMU_DROP_QUEUE;
        }

        advance_tail(l);
        pos = l->head & (l->ring_size - 1);
        to_end = l->ring_size - pos;
        total = to_end < need ? to_end + need : need;
        if (l->head - l->tail + total > l->ring_size) {
                l->c.overflow_drops++;
                return EMU_DROP_OVERFLOW;
        }
        if (to_end < need) {
                f = at(l, l->head);
                f->size = (uint32_t) to_end;
                f->state = FRAME_SKIP;
                l->head += to_end;
        }

        f = at(l, l->head);
        f->size = (uint32_t) need;
        f->len = (uint16_t) len;
        f->state = FRAME_QUEUED;
        f->meta_len = (uint8_t) meta_len;
        f->arrival = now;
        f->release = 0;
        if (meta_len > 0)
                memcpy(f->meta, meta, meta_len);
        memcpy(f->data, data, len);
        l->head += need;

        l->c.queue_bytes += len;
        l->c.queue_max_bytes = MAX(l->c.queue_max_bytes, l->c.queue_bytes);
        return EMU_QUEUED;
}

const EmuFrame *emu_link_pop(EmuLink *l, uint64_t now) {
        EmuFrame *f;

        if (l->spec->reorder) {
                if (l->n_heap == 0 || at(l, l->heap[0])->release > now)
                        return NULL;
                f = at(l, heap_pop(l));
        } else {
                advance_tail(l);
                if (l->tail == l->serve)
                        return NULL;
                f = at(l, l->tail);
                if (f->release > now)
                        return NULL;
        }
        /* Its space comes back now; the record stays intact until the next arrival. */
        f->state = FRAME_DONE;
        advance_tail(l);
        l->c.released_packets++;
        l->c.released_bytes += f->len;
        return f;
}

uint64_t emu_link_next_wake(EmuLink *l) {
        uint64_t t = EMU_TIME_INFINITY;

        if (l->spec->reorder) {
                if (l->n_heap > 0)
                        t = at(l, l->heap[0])->release;
        } else {
                advance_tail(l);
                if (l->tail != l->serve)
                        t = at(l, l->tail)->release;
        }
        while (l->serve != l->head && at(l, l->serve)->state == FRAME_SKIP)
                l->serve += at(l, l->serve)->size;
        if (l->serve != l->head) {
                uint64_t finish = finish_time(l, at(l, l->serve));

                if (finish != EMU_TIME_INFINITY) {
                        const EmuPhase *ph = phase_at(l, finish, NULL);
                        /* The earliest its release can be; it is drawn when it finishes. */
                        t = MIN(t, finish + ph->delay - ph->jitter);
                }
        }
        return t;
}
