/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The learned scheduler's estimator (src/mptd/learn.c), driven by synthetic feedback: a simulated
 * sender splits its traffic by learn_weights() over paths that each have a bottleneck (a FIFO of
 * a given capacity that drops what would wait longer than its limit), a base delay and random
 * loss; a simulated receiver reports every 25 ms what arrived, as mptd's feedback frames do, and
 * the reports reach the sender after a delay. The shares must converge to the capacities and
 * follow their changes. */

#include <math.h>

#include "learn.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>

#define DGRAM 1400.0 /* bytes */
#define STEP (1 * USEC_PER_MSEC)
#define FEEDBACK_EVERY (25 * USEC_PER_MSEC)
#define PATHS 4

typedef struct InFlight {
        uint64_t marker;
        usec_t sent, arrival;
} InFlight;

typedef struct SimPath {
        double cap;    /* bytes per second; 0: dead (everything dropped) */
        usec_t delay;  /* base one-way delay */
        double loss;   /* random loss after the queue */
        usec_t limit;  /* most a datagram may queue before it is dropped */
        double busy;   /* seconds: when the bottleneck is free again */
        uint64_t marker;
        GQueue flight; /* InFlight, in arrival order */
        /* The receiver's view: cumulative counts, and the newest datagram. */
        uint64_t rx_bytes;
        uint32_t rx_packets;
        LearnSample last;
        bool reported_changed;
        /* The sender's view. */
        LearnPath learn;
        uint32_t pref;
        double credit;
        usec_t last_sent, last_progress;
        usec_t queued_at;    /* when a datagram last had to wait at the bottleneck */
        uint64_t sent_bytes; /* over the current measuring window */
        uint64_t delivered_bytes;
        uint64_t dropped;    /* by the queue, since the elastic sender last looked */
} SimPath;

typedef struct Report {
        usec_t due;
        unsigned path;
        LearnSample s;
} Report;

typedef struct Sim {
        SimPath p[PATHS];
        unsigned n;
        usec_t now;
        double demand;      /* bytes per second offered; < 0: this many times the sum of the capacities */
        bool elastic;       /* the demand reacts to loss as TCP does (AIMD, every 50 ms) */
        double budget;
        uint32_t weights[PATHS];
        GQueue reports;     /* Report, in order of due time */
        bool by_rates;
        bool light;
        usec_t last_saturated;
        uint64_t load, load_win[2], load_bytes; /* as the tunnel measures its load (feedback.c) */
        usec_t feedback_delay;
        GRand *rand;
} Sim;

static void sim_init(Sim *sim, unsigned n) {
        /* (Time starts late enough that "never saturated" is long ago.) */
        *sim = (Sim) { .n = n, .now = 10 * USEC_PER_SEC, .feedback_delay = 5 * USEC_PER_MSEC, .rand = g_rand_new_with_seed(4242) };
        for (unsigned i = 0; i < n; i++) {
                sim->p[i].last_progress = sim->now; /* silence counts from when it began to carry data */
                learn_path_reset(&sim->p[i].learn);
                sim->p[i].pref = 1;
                sim->p[i].limit = 100 * USEC_PER_MSEC;
                g_queue_init(&sim->p[i].flight);
        }
        g_queue_init(&sim->reports);
}

static void sim_done(Sim *sim) {
        for (unsigned i = 0; i < sim->n; i++)
                g_queue_clear_full(&sim->p[i].flight, g_free);
        g_queue_clear_full(&sim->reports, g_free);
        g_rand_free(sim->rand);
}

static void sim_path(Sim *sim, unsigned i, double mbit, double delay_ms, double loss) {
        sim->p[i].cap = mbit * 1e6 / 8;
        sim->p[i].delay = (usec_t) (delay_ms * USEC_PER_MSEC);
        sim->p[i].loss = loss;
}

static void update_weights(Sim *sim) {
        const LearnPath *lp[PATHS];
        uint32_t pref[PATHS];

        for (unsigned i = 0; i < sim->n; i++) {
                lp[i] = &sim->p[i].learn;
                pref[i] = sim->p[i].pref;
                if (sim->p[i].learn.saturated)
                        sim->last_saturated = sim->now;
        }
        sim->light = sim->last_saturated + LEARN_LIGHT_AFTER_USEC < sim->now;
        bool capped[PATHS] = {};

        sim->by_rates = learn_weights(lp, pref, sim->n, sim->load, sim->weights, capped);
        for (unsigned i = 0; i < sim->n; i++)
                sim->p[i].learn.capped = capped[i];
}

/* One datagram on path i, sent now. */
static void send_one(Sim *sim, unsigned i) {
        SimPath *p = &sim->p[i];
        double now = sim->now / 1e6, depart;
        InFlight *f;

        p->marker++;
        p->last_sent = sim->now;
        p->sent_bytes += (uint64_t) DGRAM;
        sim->load_bytes += (uint64_t) DGRAM;
        if (p->cap <= 0)
                return;
        depart = MAX(now, p->busy) + DGRAM / p->cap;
        if (depart - now > p->limit / 1e6) {
                p->dropped++; /* the queue is full: tail drop */
                return;
        }
        if (depart - DGRAM / p->cap > now)
                p->queued_at = sim->now; /* it waits behind another: they leave back to back */
        p->busy = depart;
        if (g_rand_double(sim->rand) < p->loss)
                return;
        f = g_new(InFlight, 1);
        *f = (InFlight) { .marker = p->marker, .sent = sim->now, .arrival = (usec_t) (depart * 1e6) + p->delay };
        g_queue_push_tail(&p->flight, f);
}

/* The receiver's clock runs 7 s ahead of the sender's: only differences may matter. */
#define RX_OFFSET (7 * USEC_PER_SEC)

static void sim_step(Sim *sim) {
        double cap_sum = 0, demand;

        sim->now += STEP;
        /* Arrivals at the receiver. */
        for (unsigned i = 0; i < sim->n; i++) {
                SimPath *p = &sim->p[i];
                InFlight *f;

                while ((f = g_queue_peek_head(&p->flight)) && f->arrival <= sim->now) {
                        g_queue_pop_head(&p->flight);
                        p->rx_bytes += (uint64_t) DGRAM;
                        p->delivered_bytes += (uint64_t) DGRAM;
                        p->rx_packets++;
                        p->last = (LearnSample) {
                                .datagrams = f->marker, /* one lane, counters from 1 */
                                .sent = f->sent,
                                .arrival = f->arrival + RX_OFFSET,
                                .bytes = p->rx_bytes,
                                .packets = p->rx_packets,
                        };
                        p->reported_changed = true;
                        g_free(f);
                }
                cap_sum += p->cap;
        }
        /* The receiver's feedback, every 25 ms, about the paths that changed. */
        if (sim->now % FEEDBACK_EVERY == 0)
                for (unsigned i = 0; i < sim->n; i++) {
                        Report *r;

                        if (!sim->p[i].reported_changed)
                                continue;
                        sim->p[i].reported_changed = false;
                        r = g_new(Report, 1);
                        *r = (Report) { .due = sim->now + sim->feedback_delay, .path = i, .s = sim->p[i].last };
                        /* The receiver's burst rate: datagrams that left the bottleneck back to
                         * back lately arrived at its rate. */
                        if (sim->p[i].queued_at > 0 && sim->p[i].queued_at + 200 * USEC_PER_MSEC >= sim->now)
                                r->s.peak = (uint64_t) sim->p[i].cap;
                        g_queue_push_tail(&sim->reports, r);
                }
        /* The sender takes the feedback that has come. */
        for (Report *r; (r = g_queue_peek_head(&sim->reports)) && r->due <= sim->now;) {
                SimPath *p = &sim->p[r->path];

                bool others = false;
                uint64_t total = 0;

                g_queue_pop_head(&sim->reports);
                for (unsigned j = 0; j < sim->n; j++) {
                        others |= j != r->path && sim->p[j].learn.saturated;
                        total += learn_rate(&sim->p[j].learn);
                }
                if (learn_sample(&p->learn, &r->s, sim->now, others, total))
                        update_weights(sim);
                p->last_progress = sim->now;
                g_free(r);
        }
        /* The silence rule (as the tunnel applies it): sent on, no news, while others have news. */
        for (unsigned i = 0; i < sim->n; i++) {
                SimPath *p = &sim->p[i];
                bool others = false;

                for (unsigned j = 0; j < sim->n; j++)
                        others |= j != i && sim->p[j].last_progress + LEARN_SILENCE_USEC > sim->now;
                if (others && p->last_sent + STEP >= sim->now && p->last_progress + LEARN_SILENCE_USEC < sim->now &&
                    p->learn.rate != LEARN_RATE_MIN && learn_silent(&p->learn, sim->now))
                        update_weights(sim);
        }
        /* The load, over 100 ms windows (the larger of the last two), as the tunnel measures it. */
        if (sim->now % (100 * USEC_PER_MSEC) == 0) {
                sim->load_win[1] = sim->load_win[0];
                sim->load_win[0] = sim->load_bytes * 10;
                sim->load_bytes = 0;
                sim->load = MAX(sim->load_win[0], sim->load_win[1]);
                if (!sim->by_rates)
                        update_weights(sim);
        }
        /* Light load begins or ends (as the tunnel checks it, with every feedback frame). */
        if (sim->now % FEEDBACK_EVERY == 0 && sim->light != (sim->last_saturated + LEARN_LIGHT_AFTER_USEC < sim->now)) {
                update_weights(sim);
        }
        /* An elastic sender (TCP above the tunnel, roughly): every 50 ms it halves its rate after a
         * drop in a queue, else adds 2 %. */
        if (sim->elastic && sim->now % (50 * USEC_PER_MSEC) == 0) {
                uint64_t dropped = 0;
                for (unsigned i = 0; i < sim->n; i++) {
                        dropped += sim->p[i].dropped;
                        sim->p[i].dropped = 0;
                }
                sim->demand = dropped > 0 ? sim->demand * 0.5 : MAX(sim->demand * 1.02, 1e6 / 8);
        }
        /* The sender's traffic, split by the weights (smooth weighted round robin). */
        demand = sim->demand < 0 ? -sim->demand * cap_sum : sim->demand;
        sim->budget += demand * STEP / 1e6;
        while (sim->budget >= DGRAM) {
                double wsum = 0;
                unsigned best = 0;

                for (unsigned i = 0; i < sim->n; i++) {
                        sim->p[i].credit += sim->weights[i];
                        wsum += sim->weights[i];
                        if (sim->p[i].credit > sim->p[best].credit)
                                best = i;
                }
                sim->p[best].credit -= wsum;
                send_one(sim, best);
                sim->budget -= DGRAM;
        }
}

static void sim_run(Sim *sim, usec_t duration) {
        usec_t end = sim->now + duration;

        if (sim->weights[0] == 0)
                update_weights(sim);
        while (sim->now < end)
                sim_step(sim);
}

/* The shares of what the sender sent over the next `window`. */
static void sim_shares(Sim *sim, usec_t window, double *ret) {
        double total = 0;

        for (unsigned i = 0; i < sim->n; i++)
                sim->p[i].sent_bytes = sim->p[i].delivered_bytes = 0;
        sim_run(sim, window);
        for (unsigned i = 0; i < sim->n; i++)
                total += (double) sim->p[i].sent_bytes;
        for (unsigned i = 0; i < sim->n; i++)
                ret[i] = total > 0 ? sim->p[i].sent_bytes / total : 0;
}

/* Megabits per second the paths delivered over the last sim_shares() window. */
static double sim_delivered(const Sim *sim, usec_t window) {
        double total = 0;

        for (unsigned i = 0; i < sim->n; i++)
                total += (double) sim->p[i].delivered_bytes;
        return total * 8 / (window / 1e6) / 1e6;
}

static void assert_share(double got, double want, double tol, const char *what) {
        if (fabs(got - want) > tol)
                g_test_message("%s: share %.3f, expected %.3f +- %.3f", what, got, want, tol);
        g_assert_cmpfloat(fabs(got - want), <=, tol);
}

/* Scenario A of the benchmark: 100 Mbit/s 5 ms and 20 Mbit/s 40 ms, a backlogged sender. */
static void test_two_unequal(void) {
        Sim sim;
        double share[PATHS];

        sim_init(&sim, 2);
        sim_path(&sim, 0, 100, 5, 0);
        sim_path(&sim, 1, 20, 40, 0);
        sim.elastic = true;
        sim.demand = 10e6 / 8;
        sim_run(&sim, 5 * USEC_PER_SEC);
        sim_shares(&sim, 2 * USEC_PER_SEC, share);
        g_test_message("shares %.3f %.3f, rates %.1f %.1f Mbit/s, delivered %.1f Mbit/s", share[0], share[1],
                       learn_rate(&sim.p[0].learn) * 8e-6, learn_rate(&sim.p[1].learn) * 8e-6, sim_delivered(&sim, 2 * USEC_PER_SEC));
        assert_share(share[0], 100.0 / 120, 0.05, "100 Mbit/s path");
        assert_share(share[1], 20.0 / 120, 0.05, "20 Mbit/s path");
        /* What it learned is about what the paths can carry: a path that kept up while the other
         * did not is credited with more (a quarter per span), until a saturation trims it. */
        g_assert_cmpfloat(learn_rate(&sim.p[0].learn) * 8e-6, >=, 70);
        g_assert_cmpfloat(learn_rate(&sim.p[0].learn) * 8e-6, <=, 200);
        g_assert_cmpfloat(learn_rate(&sim.p[1].learn) * 8e-6, >=, 14);
        g_assert_cmpfloat(learn_rate(&sim.p[1].learn) * 8e-6, <=, 26);
        sim_done(&sim);
}

/* Scenario B: 50, 30 and 10 Mbit/s, 10, 30 and 60 ms, 0, 0.5 and 1 % loss: random loss is no
 * queue, and does not move the shares off the capacities. */
static void test_three_lossy(void) {
        Sim sim;
        double share[PATHS];

        sim_init(&sim, 3);
        sim_path(&sim, 0, 50, 10, 0);
        sim_path(&sim, 1, 30, 30, 0.005);
        sim_path(&sim, 2, 10, 60, 0.01);
        sim.elastic = true;
        sim.demand = 10e6 / 8;
        sim_run(&sim, 5 * USEC_PER_SEC);
        sim_shares(&sim, 2 * USEC_PER_SEC, share);
        g_test_message("shares %.3f %.3f %.3f, delivered %.1f Mbit/s", share[0], share[1], share[2], sim_delivered(&sim, 2 * USEC_PER_SEC));
        assert_share(share[0], 50.0 / 90, 0.06, "50 Mbit/s path");
        assert_share(share[1], 30.0 / 90, 0.06, "30 Mbit/s path");
        assert_share(share[2], 10.0 / 90, 0.04, "10 Mbit/s path");
        sim_done(&sim);
}

/* Scenario C: 2 x 50 Mbit/s 20 ms; one drops to 5 Mbit/s for 10 s, then comes back. Within a
 * second of each change the shares follow. */
static void test_capacity_step(void) {
        Sim sim;
        double share[PATHS];
        usec_t waited;

        sim_init(&sim, 2);
        sim_path(&sim, 0, 50, 20, 0);
        sim_path(&sim, 1, 50, 20, 0);
        sim.elastic = true;
        sim.demand = 10e6 / 8;
        sim_run(&sim, 5 * USEC_PER_SEC);
        sim_shares(&sim, USEC_PER_SEC, share);
        assert_share(share[0], 0.5, 0.05, "equal paths");

        sim_path(&sim, 0, 5, 20, 0);
        sim_run(&sim, USEC_PER_SEC);
        sim_shares(&sim, USEC_PER_SEC, share);
        g_test_message("1 s after the drop: shares %.3f %.3f, delivered %.1f Mbit/s", share[0], share[1], sim_delivered(&sim, USEC_PER_SEC));
        /* The path that dropped to 5 Mbit/s is given about that, not more (the elastic sender
         * backed off, so its share of a smaller total may be larger than 5/55). */
        g_test_message("  the 5 Mbit/s path carried %.1f Mbit/s", sim.p[0].sent_bytes * 8 / 1e6);
        g_assert_cmpfloat(sim.p[0].sent_bytes * 8 / 1e6, <=, 6.0);
        g_assert_cmpfloat(share[0], <=, 0.25);

        /* Back up: nothing changes while the sender needs no more than the other path carries
         * (the elastic sender ramps up slowly after its last loss, which may have been just
         * before the path came back); once it does (the other path saturates), the path that
         * came back is learned again within about half a second. */
        sim_run(&sim, 8 * USEC_PER_SEC);
        sim_path(&sim, 0, 50, 20, 0);
        for (waited = 0; !sim.p[1].learn.saturated; waited += 10 * USEC_PER_MSEC) {
                g_assert_cmpuint(waited, <, 8 * USEC_PER_SEC);
                sim_run(&sim, 10 * USEC_PER_MSEC);
        }
        sim_run(&sim, USEC_PER_SEC);
        sim_shares(&sim, USEC_PER_SEC, share);
        g_test_message("the path came back; the other saturated %.2f s later; 1 s after that: shares %.3f %.3f, delivered %.1f Mbit/s",
                       waited / 1e6, share[0], share[1], sim_delivered(&sim, USEC_PER_SEC));
        assert_share(share[0], 0.5, 0.08, "the path that came back");
        sim_done(&sim);
}

/* A path that dies (delivers nothing) is credited with the minimum within the silence time;
 * when it delivers again it is learned again. */
static void test_dying_path(void) {
        Sim sim;
        double share[PATHS];

        sim_init(&sim, 2);
        sim_path(&sim, 0, 50, 10, 0);
        sim_path(&sim, 1, 50, 10, 0);
        sim.elastic = true;
        sim.demand = 10e6 / 8;
        sim_run(&sim, 3 * USEC_PER_SEC);
        sim_path(&sim, 1, 0, 10, 0);
        sim_run(&sim, LEARN_SILENCE_USEC + 200 * USEC_PER_MSEC);
        g_assert_cmpuint(sim.p[1].learn.rate, ==, LEARN_RATE_MIN);
        sim_shares(&sim, USEC_PER_SEC, share);
        g_test_message("while path 1 is dead: shares %.4f %.4f", share[0], share[1]);
        g_assert_cmpfloat(share[1], <, 0.01);

        sim_path(&sim, 1, 50, 10, 0);
        sim_run(&sim, 3 * USEC_PER_SEC);
        sim_shares(&sim, USEC_PER_SEC, share);
        g_test_message("path 1 back: shares %.3f %.3f", share[0], share[1]);
        assert_share(share[1], 0.5, 0.08, "the path that came back");
        sim_done(&sim);
}

/* A path that loses 5 % of its datagrams at random but keeps up is not taken for a slow one. */
static void test_lossy_not_slow(void) {
        Sim sim;
        double share[PATHS];

        sim_init(&sim, 2);
        sim_path(&sim, 0, 50, 10, 0);
        sim_path(&sim, 1, 50, 10, 0.05);
        sim.elastic = true;
        sim.demand = 10e6 / 8;
        sim_run(&sim, 5 * USEC_PER_SEC);
        sim_shares(&sim, 2 * USEC_PER_SEC, share);
        g_test_message("shares %.3f %.3f, loss %u ppm", share[0], share[1], sim.p[1].learn.loss_ppm);
        /* Not taken for a slow path (one of 5 % less capacity would be cut to 7/8 of what it
         * delivered, and keep falling): its half, within what queue balance and the elastic
         * sender's backoffs move (about a tenth either way). */
        g_assert_cmpfloat(share[1], >=, 0.38);
        g_assert_cmpfloat(share[1], <=, 0.62);
        g_assert_cmpuint(sim.p[1].learn.loss_ppm, >, 20000);
        sim_done(&sim);
}

/* A sender that needs less than the paths carry saturates none; the learned rates stay bounded,
 * and the traffic is split as Weight= says (3:1). */
static void test_light_load(void) {
        Sim sim;
        double share[PATHS];

        sim_init(&sim, 2);
        sim_path(&sim, 0, 100, 5, 0);
        sim_path(&sim, 1, 100, 5, 0);
        sim.p[0].pref = 3;
        sim.p[1].pref = 1;
        sim.demand = 40e6 / 8;
        sim_run(&sim, 10 * USEC_PER_SEC);
        sim_shares(&sim, 2 * USEC_PER_SEC, share);
        g_test_message("shares %.3f %.3f, rates %.1f %.1f Mbit/s", share[0], share[1],
                       learn_rate(&sim.p[0].learn) * 8e-6, learn_rate(&sim.p[1].learn) * 8e-6);
        assert_share(share[0], 0.75, 0.03, "the preferred path");
        g_assert_false(sim.p[0].learn.saturated);
        g_assert_false(sim.p[1].learn.saturated);
        g_assert_cmpfloat(learn_rate(&sim.p[0].learn) * 8e-6, <, 200);
        sim_done(&sim);
}

/* A preferred path too slow for the load: it carries what it can, the rest spills to the other,
 * and nothing is lost on the way. */
static void test_light_load_spill(void) {
        Sim sim;
        double share[PATHS], got;

        sim_init(&sim, 2);
        sim_path(&sim, 0, 20, 5, 0);
        sim_path(&sim, 1, 100, 20, 0);
        sim.p[0].pref = 4;
        sim.p[1].pref = 1;
        sim.demand = 40e6 / 8;
        sim_run(&sim, 10 * USEC_PER_SEC);
        sim_shares(&sim, 2 * USEC_PER_SEC, share);
        got = sim_delivered(&sim, 2 * USEC_PER_SEC);
        g_test_message("shares %.3f %.3f, rates %.1f %.1f Mbit/s, delivered %.1f Mbit/s", share[0], share[1],
                       learn_rate(&sim.p[0].learn) * 8e-6, learn_rate(&sim.p[1].learn) * 8e-6, got);
        g_assert_cmpfloat(got, >=, 0.97 * 40);
        /* The preferred path is used up to most of its 20 Mbit/s of the 40: water-filling gives it
         * 7/8 of its burst rate, 17.5 of the 50 it splits (40 and a quarter spare), 0.35. */
        g_assert_cmpfloat(share[0], >=, 0.33);
        g_assert_cmpfloat(share[0], <=, 0.52);
        sim_done(&sim);
}

/* Under a load that needs both paths, Weight= no longer counts: each carries what it can. */
static void test_preference_full_load(void) {
        Sim sim;
        double share[PATHS];

        sim_init(&sim, 2);
        sim_path(&sim, 0, 20, 5, 0);
        sim_path(&sim, 1, 80, 5, 0);
        sim.p[0].pref = 10;
        sim.p[1].pref = 1;
        sim.elastic = true;
        sim.demand = 10e6 / 8;
        sim_run(&sim, 10 * USEC_PER_SEC);
        sim_shares(&sim, 2 * USEC_PER_SEC, share);
        g_test_message("shares %.3f %.3f, rates %.1f %.1f Mbit/s", share[0], share[1],
                       learn_rate(&sim.p[0].learn) * 8e-6, learn_rate(&sim.p[1].learn) * 8e-6);
        assert_share(share[1], 0.8, 0.06, "the 80 Mbit/s path, less preferred");
        sim_done(&sim);
}

/* A sender that offers more than the paths carry whatever happens (UDP at a fixed rate): every
 * queue stays full and drops, which no span reads as a growing queue once the delay's minimum is
 * that of a full queue. Nothing may starve: the paths deliver what they can. */
static void test_overload(void) {
        Sim sim;
        double share[PATHS];

        sim_init(&sim, 2);
        sim_path(&sim, 0, 100, 5, 0);
        sim_path(&sim, 1, 20, 40, 0);
        sim.demand = -1.5;
        sim_run(&sim, 20 * USEC_PER_SEC);
        sim_shares(&sim, 2 * USEC_PER_SEC, share);
        g_test_message("shares %.3f %.3f, delivered %.1f Mbit/s", share[0], share[1], sim_delivered(&sim, 2 * USEC_PER_SEC));
        g_assert_cmpfloat(sim_delivered(&sim, 2 * USEC_PER_SEC), >=, 0.9 * 120);
        sim_done(&sim);
}

/* The queueing delay: the one-way delay above its minimum, whatever the clocks' offset. */
static void test_queue_delay(void) {
        LearnPath p;
        usec_t now = 100 * USEC_PER_SEC;

        learn_path_reset(&p);
        g_assert_cmpuint(learn_queue_delay(&p), ==, 0);
        g_assert_cmpuint(learn_rate(&p), ==, LEARN_RATE_INITIAL);
        learn_sample(&p, &(LearnSample) { .datagrams = 1, .sent = now, .arrival = 5000000 + now + 20000 }, now, false, 0);
        learn_sample(&p, &(LearnSample) { .datagrams = 2, .sent = now + 1000, .arrival = 5000000 + now + 1000 + 50000 },
                     now + 1000, false, 0);
        g_assert_cmpuint(learn_queue_delay(&p), ==, 30000);
        /* Reordered or repeated samples change nothing. */
        g_assert_false(learn_sample(&p, &(LearnSample) { .datagrams = 1, .sent = now, .arrival = 1 }, now + 2000, false, 0));
        g_assert_cmpuint(learn_queue_delay(&p), ==, 30000);
}

/* Pacing (learn_pace_rate()): twice the credit until the path was first saturated, then 5/4 of
 * it with hardly a queue, the credit with some, and below what it delivered with a long one. */
static void test_pace_rate(void) {
        LearnPath p;
        usec_t now = 100 * USEC_PER_SEC;

        learn_path_reset(&p);
        g_assert_cmpuint(learn_pace_rate(&p), ==, LEARN_RATE_INITIAL * LEARN_PACE_START_GAIN);
        p.rate = 10 * UINT64_C(125000);
        p.was_saturated = true;
        g_assert_cmpuint(learn_pace_rate(&p), ==, p.rate / 4 * 5);
        /* A queue of 5 ms: the credit as it is. */
        learn_sample(&p, &(LearnSample) { .datagrams = 1, .sent = now, .arrival = 5000000 + now + 20000 }, now, false, 0);
        learn_sample(&p, &(LearnSample) { .datagrams = 2, .sent = now + 1000, .arrival = 5000000 + now + 1000 + 25000 },
                     now + 1000, false, 0);
        g_assert_cmpuint(learn_queue_delay(&p), ==, 5000);
        p.rate = 10 * UINT64_C(125000);
        g_assert_cmpuint(learn_pace_rate(&p), ==, p.rate);
        /* Of 30 ms: 15/16 of what it delivered, when that is less than the credit. */
        learn_sample(&p, &(LearnSample) { .datagrams = 3, .sent = now + 2000, .arrival = 5000000 + now + 2000 + 50000 },
                     now + 2000, false, 0);
        g_assert_cmpuint(learn_queue_delay(&p), ==, 30000);
        p.rate = 10 * UINT64_C(125000);
        p.delivered = 8 * UINT64_C(125000);
        g_assert_cmpuint(learn_pace_rate(&p), ==, p.delivered / 16 * 15);
        p.delivered = 20 * UINT64_C(125000);
        g_assert_cmpuint(learn_pace_rate(&p), ==, p.rate);
        /* Nothing delivered (no span yet): the credit. */
        p.delivered = 0;
        g_assert_cmpuint(learn_pace_rate(&p), ==, p.rate);
        /* A light load (under half the credit): the higher delay is not its queue (a route that
         * changed, someone else's queue); pacing it at its load would hold back what it carries.
         * The credit. From half the credit on, the drain. */
        p.delivered = 1000;
        g_assert_cmpuint(learn_pace_rate(&p), ==, p.rate);
        p.delivered = p.rate / 2 - 1;
        g_assert_cmpuint(learn_pace_rate(&p), ==, p.rate);
        p.delivered = p.rate / 2;
        g_assert_cmpuint(learn_pace_rate(&p), ==, p.delivered / 16 * 15);
        /* Never below the least. */
        p.rate = LEARN_RATE_MIN;
        p.delivered = LEARN_RATE_MIN / 2;
        g_assert_cmpuint(learn_pace_rate(&p), ==, LEARN_RATE_MIN);
        p.rate = 10 * UINT64_C(125000);
        p.delivered = 8 * UINT64_C(125000);
        /* A 30 ms "queue" on a path whose delay jitters by 10 ms (a radio link): no drain, the
         * credit. Above 4 times the jitter: the drain again. */
        p.owd_jitter = 10000;
        g_assert_cmpuint(learn_pace_rate(&p), ==, p.rate);
        p.owd_jitter = 7000;
        g_assert_cmpuint(learn_pace_rate(&p), ==, p.delivered / 16 * 15);
}

static double share_of(const uint32_t *w, size_t n, size_t i) {
        double sum = 0;

        for (size_t j = 0; j < n; j++)
                sum += w[j];
        return w[i] / sum;
}

static void test_weights(void) {
        LearnPath a, b, c;
        const LearnPath *lp[] = { &a, &b, &c };
        uint32_t pref[] = { 1, 1, 1 }, w[3];
        uint64_t mbit = UINT64_C(125000); /* bytes per second */

        learn_path_reset(&a);
        learn_path_reset(&b);
        learn_path_reset(&c);
        /* Nothing learned, nothing sent: equal; by preference if there is one. */
        g_assert_true(learn_weights(lp, pref, 3, 0, w, NULL));
        g_assert_cmpuint(w[0], ==, LEARN_RATE_INITIAL / LEARN_WEIGHT_UNIT);
        g_assert_cmpuint(w[0], ==, w[1]);
        g_assert_cmpuint(w[1], ==, w[2]);
        pref[0] = 4;
        g_assert_false(learn_weights(lp, pref, 3, 0, w, NULL));
        g_assert_cmpfloat(fabs(share_of(w, 3, 0) - 4.0 / 6), <, 1e-4);

        /* Learned rates of 100, 20 and 50 Mbit/s (water-filling caps at 87.5, 17.5, 43.75). */
        a.rate = 100 * mbit;
        b.rate = 20 * mbit;
        c.rate = 50 * mbit;
        /* Equal preferences: the rates, whatever the load (no queues: no balance). */
        pref[0] = 1;
        for (uint64_t load = 0; load < 300 * mbit; load += 37 * mbit) {
                g_assert_true(learn_weights(lp, pref, 3, load, w, NULL));
                g_assert_cmpuint(w[0], ==, 100 * mbit / LEARN_WEIGHT_UNIT);
                g_assert_cmpuint(w[1], ==, 20 * mbit / LEARN_WEIGHT_UNIT);
                g_assert_cmpuint(w[2], ==, 50 * mbit / LEARN_WEIGHT_UNIT);
        }
        /* Queue balance: 20 ms of queue on the 100 Mbit/s path, 5 on the others: it gets
         * (B + 5) / (B + 20) of its rate (B = LEARN_QUEUE_BALANCE_USEC, 25 ms: 2/3); with 8 ms,
         * (B + 5) / (B + 8); 60 ms would give 30/85, but not below 1/2. */
        a.have_owd = b.have_owd = c.have_owd = true;
        a.owd_min[0] = b.owd_min[0] = c.owd_min[0] = 1000;
        a.owd = 1000 + 20000;
        b.owd = c.owd = 1000 + 5000;
        learn_weights(lp, pref, 3, 0, w, NULL);
        g_assert_cmpuint(w[0], ==, 100 * mbit * (LEARN_QUEUE_BALANCE_USEC + 5000) / (LEARN_QUEUE_BALANCE_USEC + 20000) / LEARN_WEIGHT_UNIT);
        g_assert_cmpuint(w[0], <, 100 * mbit * 3 / 4 / LEARN_WEIGHT_UNIT);
        g_assert_cmpuint(w[1], ==, 20 * mbit / LEARN_WEIGHT_UNIT);
        a.owd = 1000 + 60000;
        learn_weights(lp, pref, 3, 0, w, NULL);
        g_assert_cmpuint(w[0], ==, 50 * mbit / LEARN_WEIGHT_UNIT);
        a.owd = 1000 + 8000;
        learn_weights(lp, pref, 3, 0, w, NULL);
        g_assert_cmpuint(w[0], ==, 100 * mbit * (LEARN_QUEUE_BALANCE_USEC + 5000) / (LEARN_QUEUE_BALANCE_USEC + 8000) / LEARN_WEIGHT_UNIT);
        learn_path_reset(&a);
        learn_path_reset(&b);
        learn_path_reset(&c);
        a.rate = 100 * mbit;
        b.rate = 20 * mbit;
        c.rate = 50 * mbit;
        /* Preference 1:1:2. 24 Mbit/s sent (30): parts 7.5, 7.5, 15, none capped. */
        pref[2] = 2;
        {
                g_assert_false(learn_weights(lp, pref, 3, 24 * mbit, w, NULL));
                g_assert_cmpfloat(fabs(share_of(w, 3, 0) - 0.25), <, 1e-4);
                g_assert_cmpfloat(fabs(share_of(w, 3, 2) - 0.5), <, 1e-4);
        }
        /* 96 Mbit/s (120): 30, 30, 60 would exceed the second's cap (17.5); 102.5 is left for
         * 1:2, which exceeds the third's (43.75); the first takes the 58.75 left. */
        g_assert_false(learn_weights(lp, pref, 3, 96 * mbit, w, NULL));
        g_assert_cmpfloat(fabs(share_of(w, 3, 1) - 17.5 / 120), <, 1e-4);
        g_assert_cmpfloat(fabs(share_of(w, 3, 2) - 43.75 / 120), <, 1e-4);
        g_assert_cmpfloat(fabs(share_of(w, 3, 0) - 58.75 / 120), <, 1e-4);
        /* More than the caps carry (148.75): the rates. */
        g_assert_true(learn_weights(lp, pref, 3, 120 * mbit, w, NULL));
        g_assert_cmpuint(w[0], ==, 100 * mbit / LEARN_WEIGHT_UNIT);
        g_assert_cmpuint(w[2], ==, 50 * mbit / LEARN_WEIGHT_UNIT);
        /* Preference 4:1:1 at 16 Mbit/s (20): the preferred path takes 2/3 of it. */
        pref[0] = 4;
        pref[2] = 1;
        learn_weights(lp, pref, 3, 16 * mbit, w, NULL);
        g_assert_cmpfloat(fabs(share_of(w, 3, 0) - 4.0 / 6), <, 1e-4);
        /* Preference 1:4:1 at 40 Mbit/s (50): the preferred 20 Mbit/s path is at its cap, the
         * others share the rest equally. */
        pref[0] = 1;
        pref[1] = 4;
        learn_weights(lp, pref, 3, 40 * mbit, w, NULL);
        g_assert_cmpfloat(fabs(share_of(w, 3, 1) - 17.5 / 50), <, 1e-4);
        g_assert_cmpfloat(fabs(share_of(w, 3, 0) - 16.25 / 50), <, 1e-4);
        /* The preferred path's queue stands at 12 ms (its credit ran ahead of it): its part is
         * no more than its pace, 15/16 of the 16 Mbit/s it delivered (learn_pace_rate()), not
         * 7/8 of the 20 credited; the others share the rest. Without it, the workers would hold
         * the whole tunnel back to that pace. */
        b.have_owd = true;
        b.owd_min[0] = 1000;
        b.owd = 1000 + 12000;
        b.delivered = 16 * mbit;
        learn_weights(lp, pref, 3, 40 * mbit, w, NULL);
        g_assert_cmpfloat(fabs(share_of(w, 3, 1) - 15.0 / 50), <, 1e-4);
        g_assert_cmpfloat(fabs(share_of(w, 3, 0) - 17.5 / 50), <, 1e-4);
        /* A queue that does not stand that long leaves the cap at 7/8 of the credit. */
        b.owd = 1000 + 9000;
        learn_weights(lp, pref, 3, 40 * mbit, w, NULL);
        g_assert_cmpfloat(fabs(share_of(w, 3, 1) - 17.5 / 50), <, 1e-4);
        b.have_owd = false;
        /* The floor of 1, and huge rates do not overflow. */
        pref[0] = pref[1] = pref[2] = 1;
        c.rate = 10;
        learn_weights(lp, pref, 3, 0, w, NULL);
        g_assert_cmpuint(w[2], ==, 1);
        a.rate = UINT64_MAX;
        learn_weights(lp, pref, 3, 0, w, NULL);
        g_assert_cmpuint(w[0], ==, UINT32_MAX);
        pref[1] = 4;
        learn_weights(lp, pref, 3, UINT64_MAX, w, NULL);
        g_assert_cmpuint(w[0], >, w[1]);
        learn_weights(lp, pref, 0, 0, w, NULL);
}

/* A path back from an outage keeps what it carried before it fell silent. */
static void test_restart(void) {
        LearnPath p;

        learn_path_reset(&p);
        learn_path_restart(&p);
        g_assert_cmpuint(learn_rate(&p), ==, LEARN_RATE_INITIAL);
        p.rate = 40 * UINT64_C(125000);
        g_assert_true(learn_silent(&p, 5 * USEC_PER_SEC));
        g_assert_cmpuint(learn_rate(&p), ==, LEARN_RATE_MIN);
        g_assert_false(learn_silent(&p, 6 * USEC_PER_SEC));
        learn_path_restart(&p);
        g_assert_cmpuint(learn_rate(&p), ==, 40 * UINT64_C(125000));
        g_assert_false(p.saturated);
        g_assert_false(p.have_prev);
}

/* Peak rates only raise a path's credit: a slow burst of light traffic before the first span (a
 * ping's two datagrams) leaves it at the initial credit, which the other paths start with too;
 * a fast one raises it at once. */
static void test_peak_raises_only(void) {
        LearnPath p;
        LearnSample s = { .datagrams = 2, .sent = 1000, .arrival = 5000, .bytes = 200, .packets = 2,
                          .peak = 64000 /* 512 kbit/s */ };

        learn_path_reset(&p);
        learn_sample(&p, &s, 10 * USEC_PER_MSEC, false, 0);
        g_assert_cmpuint(learn_rate(&p), ==, LEARN_RATE_INITIAL);
        g_assert_cmpuint(learn_pace_rate(&p), ==, LEARN_RATE_INITIAL * LEARN_PACE_START_GAIN);
        s.datagrams++, s.sent += 1000, s.arrival += 1000, s.bytes += 1400, s.packets++;
        s.peak = 8 * LEARN_RATE_INITIAL;
        g_assert_true(learn_sample(&p, &s, 20 * USEC_PER_MSEC, false, 0));
        g_assert_cmpuint(learn_rate(&p), ==, 7 * LEARN_RATE_INITIAL);
        /* and a later slow burst does not take it back */
        s.datagrams++, s.sent += 1000, s.arrival += 1000, s.bytes += 1400, s.packets++;
        s.peak = 64000;
        g_assert_false(learn_sample(&p, &s, 30 * USEC_PER_MSEC, false, 0));
        g_assert_cmpuint(learn_rate(&p), ==, 7 * LEARN_RATE_INITIAL);
}

/* Feeds the path a span of 100 ms in four feedback samples 25 ms apart, 100 datagrams of 1000
 * bytes sent, `lost` of them lost; `spike` (us) of queueing delay at the second sample only. */
static void feed_span(LearnPath *p, LearnSample *s, usec_t *now, unsigned lost, usec_t spike) {
        for (unsigned i = 0; i < 4; i++) {
                unsigned rx = 25 - (i < lost % 4 ? lost / 4 + 1 : lost / 4);

                *now += 25 * USEC_PER_MSEC;
                s->datagrams += 25;
                s->sent = *now - 20 * USEC_PER_MSEC;
                s->arrival = *now + RX_OFFSET + (i == 1 ? spike : 0);
                s->bytes += 1000 * rx;
                s->packets += rx;
                learn_sample(p, s, *now, false, 0);
        }
}

/* Random loss (a radio link) is the path's own: the same loss next to a short queue is no
 * overflow; much more than it is. */
static void test_loss_floor(void) {
        LearnPath p;
        LearnSample s = {};
        usec_t now = USEC_PER_SEC;

        learn_path_reset(&p);
        for (unsigned i = 0; i < 20; i++)
                feed_span(&p, &s, &now, 2, 0); /* 2 %, no queue */
        g_assert_true(p.have_loss_floor);
        g_assert_cmpuint(p.loss_floor_ppm, >=, 15000);
        g_assert_cmpuint(p.loss_floor_ppm, <=, 25000);
        g_assert_false(p.saturated);
        for (unsigned i = 0; i < 3; i++) {
                feed_span(&p, &s, &now, 2, 12 * USEC_PER_MSEC);
                g_assert_false(p.saturated);
        }
        for (unsigned i = 0; i < 3; i++) /* the spans of learn_sample() begin a sample later */
                feed_span(&p, &s, &now, 8, 12 * USEC_PER_MSEC);
        g_assert_true(p.saturated);

        /* Without a floor (a clean path), 2 % next to the same queue is an overflow. */
        learn_path_reset(&p);
        s = (LearnSample) {};
        for (unsigned i = 0; i < 20; i++)
                feed_span(&p, &s, &now, 0, 0);
        g_assert_cmpuint(p.loss_floor_ppm, ==, 0);
        for (unsigned i = 0; i < 3; i++)
                feed_span(&p, &s, &now, 2, 12 * USEC_PER_MSEC);
        g_assert_true(p.saturated);
}

/* A path whose datagrams queue at this host is credited with little more than it delivers, however
 * high its burst rates took it; only a queue at both ends of a span counts. */
static void test_local_queue(void) {
        LearnPath p;
        LearnSample s = {};
        usec_t now = USEC_PER_SEC;

        learn_path_reset(&p);
        p.rate = 200 * UINT64_C(125000); /* 200 Mbit/s */
        for (unsigned i = 0; i < 8; i++) /* 100 datagrams of 1000 bytes per 100 ms: 8 Mbit/s */
                feed_span(&p, &s, &now, 0, 0);
        g_assert_cmpuint(p.rate, ==, 200 * UINT64_C(125000));
        g_assert_false(p.queued_locally);
        s.queued_locally = true; /* from the next sample on: the span that ends at it began without */
        feed_span(&p, &s, &now, 0, 0);
        feed_span(&p, &s, &now, 0, 0);
        g_assert_true(p.queued_locally);
        g_assert_cmpuint(p.rate, >=, 8 * UINT64_C(125000));
        g_assert_cmpuint(p.rate, <=, 8 * UINT64_C(125000) / LEARN_LOCAL_CEIL_DEN * LEARN_LOCAL_CEIL_NUM + 1000);
        g_assert_false(p.saturated);
        s.queued_locally = false;
        feed_span(&p, &s, &now, 0, 0);
        g_assert_false(p.queued_locally);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/mpt/learn/weights", test_weights);
        g_test_add_func("/mpt/learn/restart", test_restart);
        g_test_add_func("/mpt/learn/peak-raises-only", test_peak_raises_only);
        g_test_add_func("/mpt/learn/loss-floor", test_loss_floor);
        g_test_add_func("/mpt/learn/local-queue", test_local_queue);
        g_test_add_func("/mpt/learn/queue-delay", test_queue_delay);
        g_test_add_func("/mpt/learn/pace-rate", test_pace_rate);
        g_test_add_func("/mpt/learn/two-unequal", test_two_unequal);
        g_test_add_func("/mpt/learn/three-lossy", test_three_lossy);
        g_test_add_func("/mpt/learn/capacity-step", test_capacity_step);
        g_test_add_func("/mpt/learn/dying-path", test_dying_path);
        g_test_add_func("/mpt/learn/lossy-not-slow", test_lossy_not_slow);
        g_test_add_func("/mpt/learn/light-load", test_light_load);
        g_test_add_func("/mpt/learn/light-load-spill", test_light_load_spill);
        g_test_add_func("/mpt/learn/preference-full-load", test_preference_full_load);
        g_test_add_func("/mpt/learn/overload", test_overload);
        return g_test_run();
}
