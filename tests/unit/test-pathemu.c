/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The lab's path emulator without packets: its spec parser (tests/lab/pathemu-spec.c) and its
 * link model (tests/lab/pathemu-link.c) on a simulated clock. The namespace test
 * (tests/integration/pathemu.sh) checks the same against ping and iperf3.
 */

#include <math.h>

#include "pathemu-link.h"
#include "pathemu-spec.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>

#define US EMU_NSEC_PER_USEC
#define MS EMU_NSEC_PER_MSEC
#define SEC EMU_NSEC_PER_SEC
#define T0 (1000 * SEC) /* the simulated clock does not start at 0 */

static void spec_free(EmuSpec *s) {
        emu_spec_done(s);
        g_free(s);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmuSpec, spec_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmuLink, emu_link_free)

static EmuSpec *parse_ok(const char *text) {
        EmuSpec *s = g_new0(EmuSpec, 1);
        char err[EMU_ERROR_MAX];
        int r;

        r = emu_spec_parse(text, EMU_FRAME_DEFAULT, s, err, sizeof(err));
        if (r < 0)
                g_error("'%s' was refused: %s", text, err);
        return s;
}

/* ---- the spec ---- */

static void test_spec_defaults(void) {
        g_autoptr(EmuSpec) s = parse_ok("rate=100mbit,delay=5ms");

        for (EmuDir d = 0; d < _EMU_DIR_MAX; d++) {
                const EmuDirSpec *ds = &s->dir[d];

                g_assert_cmpuint(ds->n_phases, ==, 1);
                g_assert_false(ds->traced);
                g_assert_false(ds->reorder);
                g_assert_cmpuint(ds->phases[0].rate, ==, 100000000);
                g_assert_cmpuint(ds->phases[0].delay, ==, 5 * MS);
                g_assert_cmpuint(ds->phases[0].jitter, ==, 0);
                /* 50 ms of 100 Mbit/s */
                g_assert_cmpuint(ds->phases[0].limit, ==, 625000);
                g_assert_cmpint(ds->phases[0].loss.model, ==, EMU_LOSS_NONE);
        }
        g_assert_false(s->seed_set);
}

static void test_spec_values(void) {
        g_autoptr(EmuSpec) a = parse_ok(" rate=1.5gbit , delay=250us,jitter=100us,limit=64kib,loss=0.5%,seed=7");
        g_autoptr(EmuSpec) b = parse_ok("rate=10mbps,limit=20ms,reorder,delay=1s,jitter=0");
        g_autoptr(EmuSpec) c = parse_ok("rate=1mbit,limit=1ms");
        g_autoptr(EmuSpec) d = parse_ok("");
        const EmuPhase *p = &a->dir[EMU_DIR_BA].phases[0];

        g_assert_cmpuint(p->rate, ==, 1500000000);
        g_assert_cmpuint(p->delay, ==, 250 * US);
        g_assert_cmpuint(p->jitter, ==, 100 * US);
        g_assert_cmpuint(p->limit, ==, 65536);
        g_assert_cmpint(p->loss.model, ==, EMU_LOSS_RANDOM);
        g_assert_cmpfloat_with_epsilon(p->loss.p, 0.005, 1e-12);
        g_assert_true(a->seed_set);
        g_assert_cmpuint(a->seed, ==, 7);

        /* bytes per second; a time limit at that rate */
        g_assert_cmpuint(b->dir[0].phases[0].rate, ==, 80000000);
        g_assert_cmpuint(b->dir[0].phases[0].limit, ==, 200000);
        g_assert_true(b->dir[0].reorder);
        g_assert_cmpuint(b->dir[0].phases[0].delay, ==, SEC);

        /* 1 ms of 1 Mbit/s is 125 bytes: the floor of four frames */
        g_assert_cmpuint(c->dir[0].phases[0].limit, ==, 4 * EMU_FRAME_DEFAULT);

        /* an empty spec is a plain wire */
        g_assert_cmpuint(d->dir[0].phases[0].rate, ==, EMU_RATE_UNLIMITED);
        g_assert_cmpuint(d->dir[0].phases[0].limit, ==, UINT64_MAX);
}

static void test_spec_directions(void) {
        g_autoptr(EmuSpec) s = parse_ok("ba:rate=5mbit,rate=50mbit,delay=10ms,ab:delay=20ms,ab:loss=1%");

        g_assert_cmpuint(s->dir[EMU_DIR_AB].phases[0].rate, ==, 50000000);
        g_assert_cmpuint(s->dir[EMU_DIR_BA].phases[0].rate, ==, 5000000);
        g_assert_cmpuint(s->dir[EMU_DIR_AB].phases[0].delay, ==, 20 * MS);
        g_assert_cmpuint(s->dir[EMU_DIR_BA].phases[0].delay, ==, 10 * MS);
        g_assert_cmpint(s->dir[EMU_DIR_AB].phases[0].loss.model, ==, EMU_LOSS_RANDOM);
        g_assert_cmpint(s->dir[EMU_DIR_BA].phases[0].loss.model, ==, EMU_LOSS_NONE);
}

static void test_spec_loss_models(void) {
        g_autoptr(EmuSpec) a = parse_ok("loss=2%,burst=4");
        g_autoptr(EmuSpec) b = parse_ok("ge-p=1%,ge-r=25%,ge-bad=50%,ge-good=0.1%");
        const EmuLoss *l = &a->dir[0].phases[0].loss;

        g_assert_cmpint(l->model, ==, EMU_LOSS_GE);
        g_assert_cmpfloat_with_epsilon(l->r, 0.25, 1e-12);
        g_assert_cmpfloat_with_epsilon(emu_loss_mean(l), 0.02, 1e-12);
        g_assert_cmpfloat(l->bad, ==, 1);
        g_assert_cmpfloat(l->good, ==, 0);

        l = &b->dir[1].phases[0].loss;
        g_assert_cmpint(l->model, ==, EMU_LOSS_GE);
        g_assert_cmpfloat_with_epsilon(l->p, 0.01, 1e-12);
        g_assert_cmpfloat_with_epsilon(l->bad, 0.5, 1e-12);
        g_assert_cmpfloat_with_epsilon(emu_loss_mean(l), (0.01 * 0.5 + 0.25 * 0.001) / 0.26, 1e-12);
}

static void test_spec_trace(void) {
        g_autoptr(EmuSpec) s = parse_ok("jitter=1ms,loss=1%,trace=0s 50mbit 20ms; 10s 5mbit 60ms;"
                                        "20s 0 20ms loss=100%; 21s 50mbit 2ms jitter=0; 30s loop");
        const EmuDirSpec *d = &s->dir[EMU_DIR_AB];
        size_t i;

        g_assert_true(d->traced);
        g_assert_cmpuint(d->n_phases, ==, 4);
        g_assert_cmpuint(d->loop, ==, 30 * SEC);
        g_assert_cmpuint(d->phases[1].at, ==, 10 * SEC);
        g_assert_cmpuint(d->phases[1].rate, ==, 5000000);
        g_assert_cmpuint(d->phases[1].delay, ==, 60 * MS);
        /* the spec's jitter and loss unless the phase says otherwise */
        g_assert_cmpuint(d->phases[1].jitter, ==, MS);
        g_assert_cmpfloat_with_epsilon(d->phases[1].loss.p, 0.01, 1e-12);
        g_assert_cmpfloat(d->phases[2].loss.p, ==, 1);
        g_assert_cmpuint(d->phases[3].jitter, ==, 0);
        /* a stalled phase keeps the buffer of the one before */
        g_assert_cmpuint(d->phases[2].rate, ==, 0);
        g_assert_cmpuint(d->phases[2].limit, ==, d->phases[1].limit);
        g_assert_cmpuint(d->phases[1].limit, ==, 31250);

        g_assert_true(emu_dir_spec_phase_at(d, 0, &i) == &d->phases[0]);
        g_assert_cmpuint(i, ==, 0);
        (void) emu_dir_spec_phase_at(d, 10 * SEC - 1, &i);
        g_assert_cmpuint(i, ==, 0);
        (void) emu_dir_spec_phase_at(d, 10 * SEC, &i);
        g_assert_cmpuint(i, ==, 1);
        (void) emu_dir_spec_phase_at(d, 29 * SEC, &i);
        g_assert_cmpuint(i, ==, 3);
        /* looping */
        (void) emu_dir_spec_phase_at(d, 30 * SEC, &i);
        g_assert_cmpuint(i, ==, 0);
        (void) emu_dir_spec_phase_at(d, 72 * SEC, &i);
        g_assert_cmpuint(i, ==, 1);
        g_assert_cmpuint(emu_dir_spec_next_change(d, 0), ==, 10 * SEC);
        g_assert_cmpuint(emu_dir_spec_next_change(d, 25 * SEC), ==, 30 * SEC);
        g_assert_cmpuint(emu_dir_spec_next_change(d, 31 * SEC), ==, 40 * SEC);
}

static void test_spec_trace_file(void) {
        g_autofree char *path = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(EmuSpec) s = NULL;
        g_autofree char *text = NULL, *bad = NULL;
        EmuSpec t = {};
        char err[EMU_ERROR_MAX];
        int fd;

        fd = g_file_open_tmp("pathemu-trace-XXXXXX", &path, &error);
        g_assert_no_error(error);
        close(fd);
        g_assert_true(g_file_set_contents(path, "# scenario C\n0s 50mbit 20ms\n\n10s 5mbit 20ms  # the drop\n"
                                          "20s 50mbit 20ms\n", -1, &error));
        text = g_strdup_printf("trace-file=%s", path);
        s = parse_ok(text);
        g_assert_cmpuint(s->dir[EMU_DIR_BA].n_phases, ==, 3);
        g_assert_cmpuint(s->dir[EMU_DIR_BA].loop, ==, 0);
        g_assert_cmpuint(emu_dir_spec_next_change(&s->dir[0], 25 * SEC), ==, EMU_TIME_INFINITY);

        /* errors name the file and line */
        g_assert_true(g_file_set_contents(path, "0s 50mbit 20ms\n# fine\n10s 5mbit 20qs\n", -1, &error));
        g_assert_cmpint(emu_spec_parse(text, EMU_FRAME_DEFAULT, &t, err, sizeof(err)), ==, -EINVAL);
        bad = g_strdup_printf("%s:3: delay '20qs': unknown unit 'qs'", path);
        g_assert_true(g_str_has_prefix(err, bad));
        (void) unlink(path);
}

typedef struct BadVector {
        const char *spec;
        const char *message; /* a part of it */
} BadVector;

static const BadVector bad_vectors[] = {
        { "los=1%", "unknown key 'los' in 'los=1%' (did you mean 'loss'?)" },
        { "speed=1mbit", "unknown key 'speed'" },
        { "rate", "'rate' needs a value" },
        { "rate=", "'rate=' has an empty value" },
        { "rate=100", "rate '100' needs a unit" },
        { "rate=100mbits", "unknown unit 'mbits'" },
        { "rate=0", "must be above 0" },
        { "rate=0mbit", "must be above 0" },
        { "rate=-1mbit", "must not be negative" },
        { "rate=1e6bit", "unknown unit 'e6bit'" },
        { "rate=500bit", "below 1kbit" },
        { "delay=-5ms", "delay '-5ms' must not be negative" },
        { "delay=5", "delay '5' needs a unit" },
        { "delay=11s", "too long" },
        { "loss=150%", "loss '150%' must be from 0% to 100%" },
        { "loss=-1%", "must be from 0% to 100%" },
        { "loss=1", "not a percentage" },
        { "loss=abc%", "not a percentage" },
        { "delay=5ms,jitter=8ms", "jitter 8ms is larger than delay 5ms" },
        { "jitter=1ms", "jitter 1ms is larger than delay 0" },
        { "rate=1mbit,rate=2mbit", "'rate' given twice" },
        { "ab:rate=1mbit,ab:rate=2mbit", "'rate' given twice" },
        { "ab:seed=1", "the seed applies to both directions" },
        { "seed=x", "the seed is a number" },
        { "burst=3", "burst= needs loss=" },
        { "loss=0%,burst=3", "burst= needs loss=" },
        { "loss=1%,burst=0.5", "from 1 to 1000000" },
        { "loss=100%,burst=2", "every frame is lost" },
        { "loss=60%,burst=1", "is impossible" },
        { "loss=1%,ge-p=1%,ge-r=10%", "the loss is given twice" },
        { "ge-p=1%", "needs both ge-p= and ge-r=" },
        { "ge-p=1%,ge-r=0%", "never leaves the bad state" },
        { "limit=100", "holds not even one frame" },
        { "rate=1mbit,limit=5xb", "unknown unit 'xb'" },
        { "limit=5ms", "without rate=" },
        { "rate=1mbit,limit=0ms", "a time limit must be above 0" },
        { "reorder=maybe", "reorder is yes or no" },
        { "rate=1mbit,,delay=1ms", "empty item" },
        { "rate=1mbit,", "empty item" },
        { "rate=1gbit,delay=10s", "needs more than 256 MiB" },
        { "rate=1mbit,trace=0s 1mbit 1ms", "and a trace" },
        { "trace=0s 1mbit 1ms,trace-file=x", "both given" },
        { "trace=1s 5mbit 5ms", "trace phase 1 ('1s 5mbit 5ms'): the first phase must start at 0s" },
        { "trace=0s 5mbit 5ms; 0s 1mbit 1ms", "trace phase 2 ('0s 1mbit 1ms'): time 0s is not after" },
        { "trace=0s 5mbit", "expected TIME RATE DELAY" },
        { "trace=0s 5mbit 5ms foo=1", "unknown field 'foo=1'" },
        { "trace=0s 5mbit 5ms jitter=6ms", "jitter is larger than the delay" },
        { "trace=0s 5mbit 5ms; 1s loop; 2s 1mbit 1ms", "nothing may follow the 'loop' line" },
        { "trace=0s loop", "'loop' needs a phase before it" },
        { "trace=;", "trace has no phases" },
        { "trace-file=/nonexistent/trace", "cannot read trace file '/nonexistent/trace'" },
};

static void test_spec_bad(const void *data) {
        const BadVector *v = data;
        EmuSpec s = {};
        char err[EMU_ERROR_MAX];

        g_assert_cmpint(emu_spec_parse(v->spec, EMU_FRAME_DEFAULT, &s, err, sizeof(err)), ==, -EINVAL);
        if (!strstr(err, v->message))
                g_error("'%s': expected a message with \"%s\", got \"%s\"", v->spec, v->message, err);
        g_assert_null(s.dir[0].phases);
}

/* ---- the link ---- */

typedef struct Sent {
        uint64_t release;
        uint32_t seq;
        uint16_t len;
} Sent;

/* Frames carry their sequence number in the first 4 bytes and a pattern after it. */
static void fill(uint8_t *buf, size_t len, uint32_t seq) {
        memcpy(buf, &seq, sizeof(seq));
        for (size_t i = sizeof(seq); i < len; i++)
                buf[i] = (uint8_t) (seq * 7 + i);
}

static void collect(EmuLink *l, uint64_t now, GArray *out) {
        const EmuFrame *f;

        emu_link_advance(l, now);
        while ((f = emu_link_pop(l, now))) {
                Sent s = { .release = f->release, .len = f->len };

                g_assert_cmpuint(f->release, <=, now);
                memcpy(&s.seq, f->data, sizeof(s.seq));
                for (size_t i = sizeof(s.seq); i < f->len; i++)
                        g_assert_cmpuint(f->data[i], ==, (uint8_t) (s.seq * 7 + i));
                g_assert_cmpuint(f->meta_len, ==, 3);
                g_assert_cmpmem(f->meta, 3, "abc", 3);
                g_array_append_val(out, s);
        }
}

static EmuVerdict arrive(EmuLink *l, uint64_t now, uint32_t seq, size_t len) {
        uint8_t buf[2048];

        g_assert_cmpuint(len, <=, sizeof(buf));
        fill(buf, len, seq);
        return emu_link_arrive(l, now, "abc", 3, buf, len);
}

/* Runs the link's clock from NOW to END in steps of STEP, collecting what it releases. */
static void run_until(EmuLink *l, uint64_t now, uint64_t end, uint64_t step, GArray *out) {
        for (; now <= end; now += step)
                collect(l, now, out);
}

static void test_link_rate_delay(void) {
        g_autoptr(EmuSpec) s = parse_ok("rate=12mbit,delay=5ms,limit=1mb,seed=1");
        g_autoptr(EmuLink) l = NULL;
        g_autoptr(GArray) out = g_array_new(false, false, sizeof(Sent));
        /* 1500 bytes at 12 Mbit/s: 1 ms each */
        const uint64_t tx = MS;

        g_assert_cmpint(emu_link_new(&s->dir[0], 1, T0, &l), ==, 0);
        g_assert_cmpuint(emu_link_next_wake(l), ==, EMU_TIME_INFINITY);
        for (uint32_t i = 0; i < 100; i++)
                g_assert_cmpint(arrive(l, T0, i, 1500), ==, EMU_QUEUED);
        g_assert_cmpuint(emu_link_counters(l)->queue_bytes, ==, 150000);
        /* the first can go when it is serialised and delayed */
        g_assert_cmpuint(emu_link_next_wake(l), ==, T0 + tx + 5 * MS);
        /* collected late and at odd moments: the times stay exact */
        run_until(l, T0, T0 + 200 * MS, 3 * MS + 7, out);
        g_assert_cmpuint(out->len, ==, 100);
        for (uint32_t i = 0; i < 100; i++) {
                Sent *x = &g_array_index(out, Sent, i);
                g_assert_cmpuint(x->seq, ==, i);
                g_assert_cmpuint(x->release, ==, T0 + (i + 1) * tx + 5 * MS);
        }
        g_assert_cmpuint(emu_link_counters(l)->released_packets, ==, 100);
        g_assert_cmpuint(emu_link_counters(l)->queue_bytes, ==, 0);
        g_assert_cmpuint(emu_link_counters(l)->queue_max_bytes, ==, 150000);

        /* an idle link: a lone frame is not held back by the earlier ones */
        g_array_set_size(out, 0);
        g_assert_cmpint(arrive(l, T0 + SEC, 1000, 750), ==, EMU_QUEUED);
        run_until(l, T0 + SEC, T0 + SEC + 10 * MS, 100 * US, out);
        g_assert_cmpuint(out->len, ==, 1);
        g_assert_cmpuint(g_array_index(out, Sent, 0).release, ==, T0 + SEC + tx / 2 + 5 * MS);
}

static void test_link_tail_drop(void) {
        /* room for 10 frames of 1000 bytes */
        g_autoptr(EmuSpec) s = parse_ok("rate=8mbit,limit=10000");
        g_autoptr(EmuLink) l = NULL;
        g_autoptr(GArray) out = g_array_new(false, false, sizeof(Sent));

        g_assert_cmpint(emu_link_new(&s->dir[0], 1, T0, &l), ==, 0);
        for (uint32_t i = 0; i < 30; i++)
                (void) arrive(l, T0, i, 1000);
        g_assert_cmpuint(emu_link_counters(l)->queue_drops, ==, 20);
        g_assert_cmpuint(emu_link_counters(l)->queue_drop_bytes, ==, 20000);
        /* 1 ms per frame: after 2.5 ms two have left (the third is on the wire) and two more fit */
        for (uint32_t i = 30; i < 40; i++)
                (void) arrive(l, T0 + 2500 * US, i, 1000);
        g_assert_cmpuint(emu_link_counters(l)->queue_drops, ==, 28);
        run_until(l, T0, T0 + 50 * MS, MS, out);
        g_assert_cmpuint(out->len, ==, 12);
        g_assert_cmpuint(g_array_index(out, Sent, 9).seq, ==, 9);
        g_assert_cmpuint(g_array_index(out, Sent, 10).seq, ==, 30);
        g_assert_cmpuint(emu_link_counters(l)->rx_packets, ==, 40);
}

static void test_link_jitter(void) {
        g_autoptr(EmuSpec) s = parse_ok("rate=100mbit,delay=10ms,jitter=8ms,seed=5");
        g_autoptr(EmuSpec) sr = parse_ok("rate=100mbit,delay=10ms,jitter=8ms,reorder,seed=5");
        g_autoptr(EmuLink) l = NULL, lr = NULL;
        g_autoptr(GArray) out = g_array_new(false, false, sizeof(Sent));
        g_autoptr(GArray) outr = g_array_new(false, false, sizeof(Sent));
        unsigned reordered = 0;
        double sum = 0;

        g_assert_cmpint(emu_link_new(&s->dir[0], 5, T0, &l), ==, 0);
        g_assert_cmpint(emu_link_new(&sr->dir[0], 5, T0, &lr), ==, 0);
        /* one 125-byte frame every 100 us (10 us of serialisation each) */
        for (uint32_t i = 0; i < 2000; i++) {
                uint64_t t = T0 + i * 100 * US;

                g_assert_cmpint(arrive(l, t, i, 125), ==, EMU_QUEUED);
                g_assert_cmpint(arrive(lr, t, i, 125), ==, EMU_QUEUED);
                collect(l, t, out);
                collect(lr, t, outr);
        }
        run_until(l, T0 + 200 * MS, T0 + 300 * MS, 50 * US, out);
        run_until(lr, T0 + 200 * MS, T0 + 300 * MS, 50 * US, outr);
        g_assert_cmpuint(out->len, ==, 2000);
        g_assert_cmpuint(outr->len, ==, 2000);

        /* without reorder: in order, never earlier than delay - jitter, release times monotonic */
        for (uint32_t i = 0; i < 2000; i++) {
                Sent *x = &g_array_index(out, Sent, i);
                uint64_t finish = T0 + i * 100 * US + 10 * US;

                g_assert_cmpuint(x->seq, ==, i);
                g_assert_cmpuint(x->release, >=, finish + 2 * MS);
                g_assert_cmpuint(x->release, <=, finish + 18 * MS);
                if (i > 0)
                        g_assert_cmpuint(x->release, >=, g_array_index(out, Sent, i - 1).release);
        }
        /* with reorder: each within delay +- jitter of its own finish, uniform (mean 10 ms), and
         * frames 100 us apart with 8 ms of jitter overtake each other */
        for (uint32_t i = 0; i < 2000; i++) {
                Sent *x = &g_array_index(outr, Sent, i);
                uint64_t finish = T0 + x->seq * 100 * US + 10 * US;

                g_assert_cmpuint(x->release, >=, finish + 2 * MS);
                g_assert_cmpuint(x->release, <=, finish + 18 * MS);
                sum += (double) (x->release - finish);
                if (i > 0 && x->seq < g_array_index(outr, Sent, i - 1).seq)
                        reordered++;
        }
        g_assert_cmpfloat(fabs(sum / 2000 - 10 * MS), <, 0.5 * MS);
        g_assert_cmpuint(reordered, >, 100);
}

/* N frames, one every 10 us, through LINK; how many it lost. */
static uint64_t lose_n(EmuLink *l, uint64_t n) {
        for (uint64_t i = 0; i < n; i++) {
                g_autoptr(GArray) out = g_array_new(false, false, sizeof(Sent));

                (void) arrive(l, T0 + i * 10 * US, (uint32_t) i, 100);
                collect(l, T0 + i * 10 * US, out);
        }
        emu_link_advance(l, T0 + n * 10 * US + SEC);
        return emu_link_counters(l)->loss_drops;
}

static void test_link_loss_random(void) {
        g_autoptr(EmuSpec) s = parse_ok("loss=10%");
        g_autoptr(EmuLink) a = NULL, b = NULL, c = NULL;
        const uint64_t n = 200000;
        uint64_t la, lb, lc;
        double sd = sqrt(n * 0.1 * 0.9);

        g_assert_cmpint(emu_link_new(&s->dir[0], 42, T0, &a), ==, 0);
        g_assert_cmpint(emu_link_new(&s->dir[0], 42, T0, &b), ==, 0);
        g_assert_cmpint(emu_link_new(&s->dir[0], 43, T0, &c), ==, 0);
        la = lose_n(a, n);
        lb = lose_n(b, n);
        lc = lose_n(c, n);
        /* the same seed, the same losses; another seed, others; both within 4 sigma */
        g_assert_cmpuint(la, ==, lb);
        g_assert_cmpuint(la, !=, lc);
        g_assert_cmpfloat(fabs((double) la - n * 0.1), <, 4 * sd);
        g_assert_cmpfloat(fabs((double) lc - n * 0.1), <, 4 * sd);
        g_assert_cmpuint(emu_link_counters(a)->released_packets + la, ==, n);
}

static void test_link_loss_bursty(void) {
        g_autoptr(EmuSpec) s = parse_ok("loss=5%,burst=4");
        g_autoptr(EmuLink) l = NULL;
        const uint64_t n = 400000;
        uint64_t lost, bursts;

        g_assert_cmpint(emu_link_new(&s->dir[0], 9, T0, &l), ==, 0);
        lost = lose_n(l, n);
        bursts = emu_link_counters(l)->loss_bursts;
        /* Bursts of geometric length (mean 4) a geometric number of frames apart: about 5000
         * of them, so the loss rate is good to about 2 % and the mean burst to about 1.2 % (one
         * standard deviation); 8 % is more than four. */
        g_test_message("lost %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " in %" G_GUINT64_FORMAT " bursts",
                       lost, n, bursts);
        g_assert_cmpfloat(fabs((double) lost / n - 0.05), <, 0.05 * 0.08);
        g_assert_cmpfloat(fabs((double) lost / bursts - 4), <, 4 * 0.08);
}

static void test_link_trace(void) {
        /* 12 Mbit/s; from 10 ms the link stalls, from 30 ms it loses everything, from 40 ms it is
         * back with 1 ms more delay */
        g_autoptr(EmuSpec) s = parse_ok("trace=0s 12mbit 2ms; 10ms 0 2ms; 30ms 12mbit 2ms loss=100%; 40ms 12mbit 3ms");
        g_autoptr(EmuLink) l = NULL;
        g_autoptr(GArray) out = g_array_new(false, false, sizeof(Sent));

        g_assert_cmpint(emu_link_new(&s->dir[0], 1, T0, &l), ==, 0);
        /* 1500 bytes, 1 ms each: frame 0 at 0 ms, frame 1 at 9.5 ms (finishes in the stalled
         * phase's first half, having started before it), frame 2 at 15 ms (stalled until 30 ms,
         * then lost), frames 3 and 4 at 35 ms (lost), frame 5 at 45 ms */
        g_assert_cmpint(arrive(l, T0, 0, 1500), ==, EMU_QUEUED);
        run_until(l, T0, T0 + 9 * MS, 500 * US, out);
        g_assert_cmpint(arrive(l, T0 + 9500 * US, 1, 1500), ==, EMU_QUEUED);
        run_until(l, T0 + 9500 * US, T0 + 15 * MS, 500 * US, out);
        g_assert_cmpuint(emu_link_phase(l, T0 + 15 * MS), ==, 1);
        g_assert_cmpint(arrive(l, T0 + 15 * MS, 2, 1500), ==, EMU_QUEUED);
        /* stalled: nothing to wake for until the link runs again at 30 ms */
        g_assert_cmpuint(emu_link_next_wake(l), ==, T0 + 31 * MS + 2 * MS);
        run_until(l, T0 + 15 * MS, T0 + 35 * MS, 500 * US, out);
        g_assert_cmpint(arrive(l, T0 + 35 * MS, 3, 1500), ==, EMU_QUEUED);
        g_assert_cmpint(arrive(l, T0 + 35 * MS, 4, 1500), ==, EMU_QUEUED);
        run_until(l, T0 + 35 * MS, T0 + 45 * MS, 500 * US, out);
        g_assert_cmpint(arrive(l, T0 + 45 * MS, 5, 1500), ==, EMU_QUEUED);
        run_until(l, T0 + 45 * MS, T0 + 60 * MS, 500 * US, out);

        g_assert_cmpuint(out->len, ==, 3);
        g_assert_cmpuint(g_array_index(out, Sent, 0).release, ==, T0 + 1 * MS + 2 * MS);
        g_assert_cmpuint(g_array_index(out, Sent, 1).release, ==, T0 + 10500 * US + 2 * MS);
        g_assert_cmpuint(g_array_index(out, Sent, 2).seq, ==, 5);
        g_assert_cmpuint(g_array_index(out, Sent, 2).release, ==, T0 + 46 * MS + 3 * MS);
        g_assert_cmpuint(emu_link_counters(l)->loss_drops, ==, 3);
        g_assert_cmpuint(emu_link_counters(l)->loss_bursts, ==, 1);

        /* SIGUSR2: phase 0 again */
        emu_link_restart_trace(l, T0 + SEC);
        g_assert_cmpuint(emu_link_phase(l, T0 + SEC + 5 * MS), ==, 0);
        g_assert_cmpuint(emu_link_phase(l, T0 + SEC + 35 * MS), ==, 2);
}

static void test_link_stalled_for_good(void) {
        g_autoptr(EmuSpec) s = parse_ok("trace=0s 12mbit 1ms; 1s 0 1ms");
        g_autoptr(EmuLink) l = NULL;
        g_autoptr(GArray) out = g_array_new(false, false, sizeof(Sent));
        unsigned queued = 0;

        g_assert_cmpint(emu_link_new(&s->dir[0], 1, T0, &l), ==, 0);
        /* the queue fills (limit: 50 ms of 12 Mbit/s, 75000 bytes) and stays full */
        for (uint32_t i = 0; i < 100; i++)
                queued += arrive(l, T0 + 2 * SEC, i, 1500) == EMU_QUEUED;
        g_assert_cmpuint(queued, ==, 50);
        g_assert_cmpuint(emu_link_next_wake(l), ==, EMU_TIME_INFINITY);
        run_until(l, T0 + 2 * SEC, T0 + 3 * SEC, 10 * MS, out);
        g_assert_cmpuint(out->len, ==, 0);
}

static void test_link_ring(void) {
        /* frames of every size, five times round the buffer (16 MiB without a rate): they come
         * out intact and in order across the wrap, and nothing overflows */
        g_autoptr(EmuSpec) s = parse_ok("delay=1ms");
        g_autoptr(EmuLink) l = NULL;
        g_autoptr(GArray) out = g_array_new(false, false, sizeof(Sent));
        uint64_t t = T0;
        uint32_t seq = 0;

        g_assert_cmpint(emu_link_new(&s->dir[0], 1, T0, &l), ==, 0);
        for (unsigned round = 0; round < 20000; round++) {
                for (unsigned k = 0; k < 5; k++, seq++)
                        g_assert_cmpint(arrive(l, t, seq, 14 + (seq * 37) % 1501), ==, EMU_QUEUED);
                t += 200 * US;
                collect(l, t, out);
        }
        run_until(l, t, t + 2 * MS, 100 * US, out);
        g_assert_cmpuint(out->len, ==, seq);
        for (uint32_t i = 0; i < seq; i++) {
                g_assert_cmpuint(g_array_index(out, Sent, i).seq, ==, i);
                g_assert_cmpuint(g_array_index(out, Sent, i).len, ==, 14 + (i * 37) % 1501);
        }
        g_assert_cmpuint(emu_link_counters(l)->overflow_drops, ==, 0);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        g_test_add_func("/mpt/pathemu/spec/defaults", test_spec_defaults);
        g_test_add_func("/mpt/pathemu/spec/values", test_spec_values);
        g_test_add_func("/mpt/pathemu/spec/directions", test_spec_directions);
        g_test_add_func("/mpt/pathemu/spec/loss-models", test_spec_loss_models);
        g_test_add_func("/mpt/pathemu/spec/trace", test_spec_trace);
        g_test_add_func("/mpt/pathemu/spec/trace-file", test_spec_trace_file);
        for (size_t i = 0; i < G_N_ELEMENTS(bad_vectors); i++) {
                g_autofree char *path = g_strdup_printf("/mpt/pathemu/spec/bad/%02zu", i);
                g_test_add_data_func(path, &bad_vectors[i], test_spec_bad);
        }
        g_test_add_func("/mpt/pathemu/link/rate-delay", test_link_rate_delay);
        g_test_add_func("/mpt/pathemu/link/tail-drop", test_link_tail_drop);
        g_test_add_func("/mpt/pathemu/link/jitter", test_link_jitter);
        g_test_add_func("/mpt/pathemu/link/loss-random", test_link_loss_random);
        g_test_add_func("/mpt/pathemu/link/loss-bursty", test_link_loss_bursty);
        g_test_add_func("/mpt/pathemu/link/trace", test_link_trace);
        g_test_add_func("/mpt/pathemu/link/stalled-for-good", test_link_stalled_for_good);
        g_test_add_func("/mpt/pathemu/link/ring", test_link_ring);
        return g_test_run();
}
