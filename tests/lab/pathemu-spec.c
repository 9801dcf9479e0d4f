/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <strings.h>

#include "pathemu-spec.h"

const char emu_spec_help[] =
        "A path spec is KEY=VALUE items separated by commas, e.g. rate=20mbit,delay=40ms,loss=0.5%.\n"
        "Every key applies to both directions; prefixed with ab: or ba: it applies only to frames\n"
        "from a to b or from b to a and wins over the plain key (rate=50mbit,ba:rate=5mbit).\n"
        "  rate=RATE        serialisation rate of Ethernet frames (header included): bit, kbit,\n"
        "                   mbit, gbit, kibit, mibit, gibit, bps, kbps, mbps, gbps (e.g. 100mbit);\n"
        "                   without it frames are not serialised and nothing queues\n"
        "  delay=TIME       one-way delay after serialisation: ns, us, ms, s (e.g. 5ms; default 0)\n"
        "  jitter=TIME      each frame's delay is delay +- a uniform draw up to TIME (at most\n"
        "                   delay); frames keep their order: a frame waits for the one before it,\n"
        "                   so frames closer together than the jitter bunch towards delay + TIME\n"
        "  reorder[=yes]    let jitter reorder frames instead\n"
        "  limit=SIZE|TIME  queue limit in bytes (b, kb, mb, kib, mib; a bare number is bytes) or\n"
        "                   in time at the current rate (default 50ms, never below 4 frames);\n"
        "                   a frame that does not fit is dropped (tail drop)\n"
        "  loss=P%          random loss: each frame is lost with probability P (0% to 100%)\n"
        "  burst=N          with loss=: bursty loss (Gilbert) with mean bursts of N frames and\n"
        "                   loss P on average\n"
        "  ge-p=P%,ge-r=R%[,ge-bad=B%][,ge-good=G%]\n"
        "                   Gilbert-Elliott loss: per frame the good state turns bad with\n"
        "                   probability P and the bad state good with R; a frame is lost with\n"
        "                   probability B in the bad state (default 100%) and G in the good one\n"
        "                   (default 0%); mean loss (P*B + R*G)/(P+R)\n"
        "  seed=N           seed of the loss and jitter draws (default: random, printed in the\n"
        "                   stats): the same seed and traffic give the same losses\n"
        "  trace=PHASE;PHASE;...  or  trace-file=FILE (one phase per line, # comments)\n"
        "                   rate and delay over time: PHASE is 'TIME RATE DELAY [jitter=TIME]\n"
        "                   [loss=P%]', e.g. trace=0s 50mbit 20ms; 10s 5mbit 60ms; 20s 50mbit 20ms.\n"
        "                   TIME is counted from the emulator's start (or SIGUSR2); the first\n"
        "                   phase starts at 0s. RATE may be 0 (the link stalls, frames queue) and\n"
        "                   loss=100% drops everything. A phase without jitter= or loss= has the\n"
        "                   spec's. The last phase holds for ever, unless a last line 'TIME loop'\n"
        "                   starts the trace over at TIME. A trace excludes rate= and delay=.\n";

const char *emu_dir_to_string(EmuDir d) {
        return d == EMU_DIR_AB ? "a->b" : d == EMU_DIR_BA ? "b->a" : NULL;
}

double emu_loss_mean(const EmuLoss *l) {
        switch (l->model) {
        case EMU_LOSS_RANDOM:
                return l->p;
        case EMU_LOSS_GE:
                if (l->p + l->r <= 0)
                        return l->good;
                return (l->p * l->bad + l->r * l->good) / (l->p + l->r);
        default:
                return 0;
        }
}

/* ---- errors ---- */

typedef struct Err {
        char *buf;
        size_t size;
} Err;

_printf_(2, 3)
static int fail(Err *e, const char *fmt, ...) {
        va_list ap;

        if (e->size > 0) {
                va_start(ap, fmt);
                (void) vsnprintf(e->buf, e->size, fmt, ap);
                va_end(ap);
        }
        return -EINVAL;
}

/* ---- values ---- */

typedef struct Unit {
        const char *name;
        double factor;
} Unit;

static const Unit rate_units[] = {
        { "bit", 1 },        { "kbit", 1e3 },           { "mbit", 1e6 },           { "gbit", 1e9 },
        { "tbit", 1e12 },    { "kibit", 1024.0 },       { "mibit", 1048576.0 },    { "gibit", 1073741824.0 },
        { "bps", 8 },        { "kbps", 8e3 },           { "mbps", 8e6 },           { "gbps", 8e9 },
        { "kibps", 8192.0 }, { "mibps", 8388608.0 },    { "gibps", 8589934592.0 },
};

static const Unit time_units[] = {
        { "ns", 1 }, { "us", 1e3 }, { "usec", 1e3 }, { "ms", 1e6 }, { "msec", 1e6 }, { "s", 1e9 }, { "sec", 1e9 },
};

static const Unit size_units[] = {
        { "b", 1 }, { "kb", 1e3 }, { "mb", 1e6 }, { "kib", 1024.0 }, { "mib", 1048576.0 },
};

#define RATE_UNITS_TEXT "bit, kbit, mbit, gbit, kibit, mibit, gibit, bps, kbps, mbps or gbps"
#define TIME_UNITS_TEXT "ns, us, ms or s"

/* A plain decimal number ("12", "0.5", "-3"; no exponent, no hex, no "inf"), the rest in
 * *ret_rest. -EINVAL when S does not start with one. */
static int parse_decimal(const char *s, double *ret, const char **ret_rest) {
        const char *p = s;
        double v = 0, scale = 1;
        bool neg = false, digits = false;

        if (*p == '-' || *p == '+') {
                neg = *p == '-';
                p++;
        }
        for (; isdigit((unsigned char) *p); p++) {
                v = v * 10 + (*p - '0');
                digits = true;
        }
        if (*p == '.') {
                p++;
                for (; isdigit((unsigned char) *p); p++) {
                        scale /= 10;
                        v += (*p - '0') * scale;
                        digits = true;
                }
        }
        if (!digits || !isfinite(v))
                return -EINVAL;
        *ret = neg ? -v : v;
        *ret_rest = p;
        return 0;
}

static const Unit *find_unit(const Unit *units, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (strcasecmp(units[i].name, name) == 0)
                        return &units[i];
        return NULL;
}

/* NUMBER UNIT with UNIT from the table (a bare 0 needs none). *ret_unit is NULL for a bare
 * number; callers decide whether that is allowed. */
static int parse_quantity(const char *s, const Unit *units, size_t n_units, double *ret, const Unit **ret_unit,
                          const char *what, const char *unit_text, Err *e) {
        const char *rest;
        const Unit *u = NULL;
        double v;

        if (parse_decimal(s, &v, &rest) < 0)
                return fail(e, "%s '%s' is not a number with a unit (%s)", what, s, unit_text);
        if (v < 0)
                return fail(e, "%s '%s' must not be negative", what, s);
        if (*rest) {
                u = find_unit(units, n_units, rest);
                if (!u)
                        return fail(e, "%s '%s': unknown unit '%s' (expected %s)", what, s, rest, unit_text);
        }
        *ret = u ? v * u->factor : v;
        *ret_unit = u;
        return 0;
}

/* A rate in bit/s. ALLOW_ZERO: only trace phases may stall the link. */
static int parse_rate(const char *s, bool allow_zero, uint64_t *ret, Err *e) {
        const Unit *u;
        double v;
        int r;

        r = parse_quantity(s, rate_units, ELEMENTSOF(rate_units), &v, &u, "rate", RATE_UNITS_TEXT, e);
        if (r < 0)
                return r;
        if (v == 0) {
                if (!allow_zero)
                        return fail(e, "rate '%s': a path's rate must be above 0 (only a trace phase may stall the link)", s);
                *ret = 0;
                return 0;
        }
        if (!u)
                return fail(e, "rate '%s' needs a unit (%s), e.g. %smbit", s, RATE_UNITS_TEXT, s);
        if (v < 1000)
                return fail(e, "rate '%s' is below 1kbit", s);
        if (v > 400e9)
                return fail(e, "rate '%s' is above 400gbit", s);
        *ret = (uint64_t) (v + 0.5);
        return 0;
}

static int parse_time(const char *s, const char *what, uint64_t max, uint64_t *ret, Err *e) {
        const Unit *u;
        double v;
        int r;

        r = parse_quantity(s, time_units, ELEMENTSOF(time_units), &v, &u, what, TIME_UNITS_TEXT, e);
        if (r < 0)
                return r;
        if (v != 0 && !u)
                return fail(e, "%s '%s' needs a unit (%s), e.g. %sms", what, s, TIME_UNITS_TEXT, s);
        if (v > (double) max)
                return fail(e, "%s '%s' is too long (at most %gs)", what, s, (double) max / EMU_NSEC_PER_SEC);
        *ret = (uint64_t) (v + 0.5);
        return 0;
}

/* "P%", 0 to 100, as a probability. */
static int parse_percent(const char *s, const char *what, double *ret, Err *e) {
        const char *rest;
        double v;

        if (parse_decimal(s, &v, &rest) < 0 || !streq(rest, "%"))
                return fail(e, "%s '%s' is not a percentage such as 0.5%%", what, s);
        if (v < 0 || v > 100)
                return fail(e, "%s '%s' must be from 0%% to 100%%", what, s);
        *ret = v / 100;
        return 0;
}

static int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "yes", "true", "on" };
        static const char *const no[] = { "0", "no", "false", "off" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        return -EINVAL;
}

static int parse_u64(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        if (!*s)
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                if (v > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        *ret = v;
        return 0;
}

/* ---- keys ---- */

typedef enum Key {
        KEY_RATE,
        KEY_DELAY,
        KEY_JITTER,
        KEY_REORDER,
        KEY_LIMIT,
        KEY_LOSS,
        KEY_BURST,
        KEY_GE_P,
        KEY_GE_R,
        KEY_GE_BAD,
        KEY_GE_GOOD,
        KEY_SEED,
        KEY_TRACE,
        KEY_TRACE_FILE,
        _KEY_MAX,
} Key;

static const char *const key_names[_KEY_MAX] = {
        [KEY_RATE] = "rate",
        [KEY_DELAY] = "delay",
        [KEY_JITTER] = "jitter",
        [KEY_REORDER] = "reorder",
        [KEY_LIMIT] = "limit",
        [KEY_LOSS] = "loss",
        [KEY_BURST] = "burst",
        [KEY_GE_P] = "ge-p",
        [KEY_GE_R] = "ge-r",
        [KEY_GE_BAD] = "ge-bad",
        [KEY_GE_GOOD] = "ge-good",
        [KEY_SEED] = "seed",
        [KEY_TRACE] = "trace",
        [KEY_TRACE_FILE] = "trace-file",
};

static size_t edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b), prev[32], cur[32];

        if (la >= ELEMENTSOF(prev) || lb >= ELEMENTSOF(prev))
                return SIZE_MAX;
        for (size_t j = 0; j <= lb; j++)
                prev[j] = j;
        for (size_t i = 1; i <= la; i++) {
                cur[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t sub = prev[j - 1] + (tolower((unsigned char) a[i - 1]) != b[j - 1]);
                        cur[j] = MIN(MIN(prev[j] + 1, cur[j - 1] + 1), sub);
                }
                memcpy(prev, cur, sizeof(size_t) * (lb + 1));
        }
        return prev[lb];
}

static const char *key_hint(const char *name) {
        const char *best = NULL;
        size_t best_d = 3;

        for (size_t k = 0; k < _KEY_MAX; k++) {
                size_t d = edit_distance(name, key_names[k]);
                if (d < best_d) {
                        best_d = d;
                        best = key_names[k];
                }
        }
        return best;
}

/* The items of a spec, by scope: [0] both directions, [1 + dir] one direction. */
typedef struct Items {
        const char *value[3][_KEY_MAX];
        const char *item[3][_KEY_MAX];
} Items;

/* ---- traces ---- */

typedef struct TraceCtx {
        const char *file;       /* NULL: inline */
        unsigned line;          /* file line, or phase number (1-based) inline */
        const char *text;       /* the phase's text, for inline messages */
} TraceCtx;

_printf_(3, 4)
static int trace_fail(Err *e, const TraceCtx *c, const char *fmt, ...) {
        char msg[384];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (c->file)
                return fail(e, "%s:%u: %s", c->file, c->line, msg);
        return fail(e, "trace phase %u ('%s'): %s", c->line, c->text, msg);
}

typedef struct PhaseList {
        EmuPhase *phases;
        size_t n;
        uint64_t loop;
        bool looped;
} PhaseList;

/* One phase, "TIME RATE DELAY [jitter=TIME] [loss=P%]" or "TIME loop", into L. BASE gives the
 * jitter and loss of a phase that does not name them. LINE is modified (tokenised). */
static int trace_add(PhaseList *l, char *line, const EmuPhase *base, const TraceCtx *c, Err *e) {
        char *tok[8], *save = NULL, sub[EMU_ERROR_MAX];
        Err se = { sub, sizeof(sub) };
        size_t n = 0;
        EmuPhase ph = *base;
        uint64_t at;

        for (char *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
                if (n == ELEMENTSOF(tok))
                        return trace_fail(e, c, "too many fields (expected TIME RATE DELAY [jitter=TIME] [loss=P%%])");
                tok[n++] = t;
        }
        if (n == 0)
                return 0;
        if (l->looped)
                return trace_fail(e, c, "nothing may follow the 'loop' line");
        if (parse_time(tok[0], "time", 24 * 3600 * EMU_NSEC_PER_SEC, &at, &se) < 0)
                return trace_fail(e, c, "%s", sub);
        if (l->n == 0 && at != 0)
                return trace_fail(e, c, "the first phase must start at 0s, not at %s", tok[0]);
        if (l->n > 0 && at <= l->phases[l->n - 1].at)
                return trace_fail(e, c, "time %s is not after the previous phase's", tok[0]);

        if (n == 2 && streq(tok[1], "loop")) {
                if (l->n == 0)
                        return trace_fail(e, c, "'loop' needs a phase before it");
                l->loop = at;
                l->looped = true;
                return 0;
        }
        if (n < 3)
                return trace_fail(e, c, "expected TIME RATE DELAY [jitter=TIME] [loss=P%%] or TIME loop");
        if (l->n >= EMU_PHASES_MAX)
                return trace_fail(e, c, "more than %u phases", EMU_PHASES_MAX);

        ph.at = at;
        if (parse_rate(tok[1], true, &ph.rate, &se) < 0 ||
            parse_time(tok[2], "delay", 10 * EMU_NSEC_PER_SEC, &ph.delay, &se) < 0)
                return trace_fail(e, c, "%s", sub);
        for (size_t i = 3; i < n; i++) {
                const char *v;

                if ((v = startswith(tok[i], "jitter="))) {
                        if (parse_time(v, "jitter", 10 * EMU_NSEC_PER_SEC, &ph.jitter, &se) < 0)
                                return trace_fail(e, c, "%s", sub);
                } else if ((v = startswith(tok[i], "loss="))) {
                        if (parse_percent(v, "loss", &ph.loss.p, &se) < 0)
                                return trace_fail(e, c, "%s", sub);
                        ph.loss.model = ph.loss.p > 0 ? EMU_LOSS_RANDOM : EMU_LOSS_NONE;
                } else
                        return trace_fail(e, c, "unknown field '%s' (a phase may set jitter= and loss=)", tok[i]);
        }
        if (ph.jitter > ph.delay)
                return trace_fail(e, c, "jitter is larger than the delay (a frame would arrive before it was sent)");

        EmuPhase *np = realloc(l->phases, (l->n + 1) * sizeof(EmuPhase));
        if (!np)
                return -ENOMEM;
        l->phases = np;
        l->phases[l->n++] = ph;
        return 0;
}

static int trace_finish(PhaseList *l, const char *where, Err *e) {
        if (l->n == 0)
                return fail(e, "%s has no phases", where);
        return 0;
}

static int trace_parse_inline(const char *text, const EmuPhase *base, PhaseList *l, Err *e) {
        _cleanup_free_ char *copy = strdup(text);
        char *save = NULL;
        unsigned i = 0;
        int r;

        if (!copy)
                return -ENOMEM;
        for (char *ph = strtok_r(copy, ";", &save); ph; ph = strtok_r(NULL, ";", &save)) {
                char shown[96];
                TraceCtx c = { .line = ++i, .text = shown };

                while (isspace((unsigned char) *ph))
                        ph++;
                (void) strscpy_ok(shown, sizeof(shown), ph);
                r = trace_add(l, ph, base, &c, e);
                if (r < 0)
                        return r;
        }
        return trace_finish(l, "trace", e);
}

static int trace_parse_file(const char *path, const EmuPhase *base, PhaseList *l, Err *e) {
        _cleanup_fclose_ FILE *f = NULL;
        char buf[512];
        TraceCtx c = { .file = path };
        int r;

        f = fopen(path, "re");
        if (!f)
                return fail(e, "cannot read trace file '%s': %s", path, strerror(errno));
        while (fgets(buf, sizeof(buf), f)) {
                char *hash;

                c.line++;
                if (!strchr(buf, '\n') && !feof(f))
                        return trace_fail(e, &c, "line too long");
                buf[strcspn(buf, "\r\n")] = 0;
                hash = strchr(buf, '#');
                if (hash)
                        *hash = 0;
                r = trace_add(l, buf, base, &c, e);
                if (r < 0)
                        return r;
        }
        if (ferror(f))
                return fail(e, "cannot read trace file '%s': %s", path, strerror(errno));
        return trace_finish(l, path, e);
}

/* ---- one direction ---- */

static const char *get(const Items *it, EmuDir dir, Key k, const char **ret_item) {
        const char *v = it->value[1 + dir][k];

        if (v) {
                *ret_item = it->item[1 + dir][k];
                return v;
        }
        *ret_item = it->item[0][k];
        return it->value[0][k];
}

/* Each phase's queue limit in bytes, from a time limit and the phase's rate. A stalled phase
 * (rate 0) keeps the buffer of the phase before it, cyclically: a link that stops does not
 * lose its buffer. */
static void set_time_limits(EmuDirSpec *d, uint64_t limit_ns, unsigned max_frame) {
        uint64_t floor_bytes = (uint64_t) EMU_LIMIT_MIN_FRAMES * max_frame;

        for (size_t i = 0; i < d->n_phases; i++) {
                EmuPhase *ph = &d->phases[i];

                if (ph->rate == EMU_RATE_UNLIMITED)
                        ph->limit = UINT64_MAX;
                else if (ph->rate > 0)
                        ph->limit = MAX((uint64_t) ((double) ph->rate * limit_ns / 8 / EMU_NSEC_PER_SEC), floor_bytes);
                else
                        ph->limit = 0;
        }
        for (size_t i = 0; i < d->n_phases; i++) {
                if (d->phases[i].limit != 0)
                        continue;
                d->phases[i].limit = floor_bytes;
                for (size_t k = 1; k < d->n_phases; k++) {
                        const EmuPhase *prev = &d->phases[(i + d->n_phases - k) % d->n_phases];
                        if (prev->rate > 0) {
                                d->phases[i].limit = prev->limit;
                                break;
                        }
                }
        }
}

static int build_dir(const Items *it, EmuDir dir, unsigned max_frame, EmuDirSpec *ret, Err *e) {
        EmuPhase base = { .rate = EMU_RATE_UNLIMITED };
        PhaseList l = {};
        const char *v, *item, *limit_item = NULL;
        const char *trace = NULL, *trace_file = NULL;
        uint64_t limit_bytes = 0, limit_ns = EMU_LIMIT_DEFAULT_NS;
        double loss = 0, burst = 0;
        bool has_loss = false, has_burst = false, has_ge = false, has_limit = false;
        char sub[EMU_ERROR_MAX];
        Err se = { sub, sizeof(sub) };
        int r;

        *ret = (EmuDirSpec) {};

        if ((v = get(it, dir, KEY_RATE, &item)) && parse_rate(v, false, &base.rate, &se) < 0)
                return fail(e, "'%s': %s", item, sub);
        if ((v = get(it, dir, KEY_DELAY, &item)) && parse_time(v, "delay", 10 * EMU_NSEC_PER_SEC, &base.delay, &se) < 0)
                return fail(e, "'%s': %s", item, sub);
        if ((v = get(it, dir, KEY_JITTER, &item)) &&
            parse_time(v, "jitter", 10 * EMU_NSEC_PER_SEC, &base.jitter, &se) < 0)
                return fail(e, "'%s': %s", item, sub);
        if ((v = get(it, dir, KEY_REORDER, &item)) && parse_bool(v, &ret->reorder) < 0)
                return fail(e, "'%s': reorder is yes or no", item);

        if ((v = get(it, dir, KEY_LIMIT, &item))) {
                const char *rest;
                const Unit *u;
                double x;

                has_limit = true;
                limit_item = item;
                if (parse_decimal(v, &x, &rest) < 0)
                        return fail(e, "'%s': limit '%s' is not a size (bytes, kb, mb, kib, mib) or a time (%s)",
                                    item, v, TIME_UNITS_TEXT);
                if (x < 0)
                        return fail(e, "'%s': limit '%s' must not be negative", item, v);
                if (!*rest || (u = find_unit(size_units, ELEMENTSOF(size_units), rest))) {
                        x *= *rest ? u->factor : 1;
                        if (x < max_frame)
                                return fail(e, "'%s': a limit of %.0f bytes holds not even one frame of %u bytes",
                                            item, x, max_frame);
                        if (x > (double) EMU_BUFFER_MAX)
                                return fail(e, "'%s': limit '%s' is above %llu MiB", item, v, EMU_BUFFER_MAX >> 20);
                        limit_bytes = (uint64_t) x;
                        limit_ns = 0;
                } else if ((u = find_unit(time_units, ELEMENTSOF(time_units), rest))) {
                        x *= u->factor;
                        if (x <= 0 || x > 10.0 * EMU_NSEC_PER_SEC)
                                return fail(e, "'%s': a time limit must be above 0 and at most 10s", item);
                        limit_ns = (uint64_t) x;
                } else
                        return fail(e, "'%s': limit '%s': unknown unit '%s' (bytes: b, kb, mb, kib, mib; time: %s)",
                                    item, v, rest, TIME_UNITS_TEXT);
        }

        /* Loss: random, bursty (loss + burst) or Gilbert-Elliott (ge-*), one of them. */
        if ((v = get(it, dir, KEY_LOSS, &item))) {
                if (parse_percent(v, "loss", &loss, &se) < 0)
                        return fail(e, "'%s': %s", item, sub);
                has_loss = true;
        }
        if ((v = get(it, dir, KEY_BURST, &item))) {
                const char *rest;

                if (parse_decimal(v, &burst, &rest) < 0 || *rest || burst < 1 || burst > 1e6)
                        return fail(e, "'%s': burst is a mean burst length in frames, from 1 to 1000000", item);
                if (!has_loss || loss == 0)
                        return fail(e, "'%s': burst= needs loss= above 0%% (the mean loss of the bursty model)", item);
                if (loss >= 1)
                        return fail(e, "'%s': with loss=100%% every frame is lost; burst= makes no sense", item);
                has_burst = true;
        }
        for (Key k = KEY_GE_P; k <= KEY_GE_GOOD; k++)
                if (get(it, dir, k, &item))
                        has_ge = true;
        if (has_ge) {
                EmuLoss *g = &base.loss;
                const char *pi = NULL, *ri = NULL;

                if (has_loss) {
                        (void) get(it, dir, KEY_LOSS, &item);
                        return fail(e, "'%s' and ge-*: the loss is given twice (loss=P%%[,burst=N] or ge-p=,ge-r=)",
                                    item);
                }
                *g = (EmuLoss) { .model = EMU_LOSS_GE, .bad = 1, .good = 0 };
                static const char *const names[] = { "ge-p", "ge-r", "ge-bad", "ge-good" };
                double *dst[] = { &g->p, &g->r, &g->bad, &g->good };
                for (Key k = KEY_GE_P; k <= KEY_GE_GOOD; k++)
                        if ((v = get(it, dir, k, &item)) && parse_percent(v, names[k - KEY_GE_P], dst[k - KEY_GE_P], &se) < 0)
                                return fail(e, "'%s': %s", item, sub);
                if (!get(it, dir, KEY_GE_P, &pi) || !get(it, dir, KEY_GE_R, &ri))
                        return fail(e, "Gilbert-Elliott loss needs both ge-p= and ge-r= (the state change probabilities)");
                if (g->r == 0)
                        return fail(e, "'%s': ge-r=0%% never leaves the bad state", ri);
        } else if (has_burst) {
                /* Gilbert: all frames lost in the bad state, none in the good one; mean burst 1/r,
                 * mean loss p/(p+r). */
                EmuLoss *g = &base.loss;

                *g = (EmuLoss) { .model = EMU_LOSS_GE, .r = 1 / burst, .bad = 1, .good = 0 };
                g->p = loss * g->r / (1 - loss);
                if (g->p > 1)
                        return fail(e, "loss=%g%% with burst=%g is impossible: the gaps between bursts would be "
                                    "shorter than one frame", loss * 100, burst);
        } else if (has_loss && loss > 0)
                base.loss = (EmuLoss) { .model = EMU_LOSS_RANDOM, .p = loss };

        /* Rate and delay: the spec's, or a trace's phases. */
        trace = get(it, dir, KEY_TRACE, &item);
        trace_file = get(it, dir, KEY_TRACE_FILE, &item);
        if (trace && trace_file)
                return fail(e, "trace= and trace-file= both given: one trace per direction");
        if (trace || trace_file) {
                const char *conflict = get(it, dir, KEY_RATE, &item) ? item : get(it, dir, KEY_DELAY, &item) ? item : NULL;

                if (conflict)
                        return fail(e, "'%s' and a trace: the trace's phases set the rate and delay", conflict);
                r = trace ? trace_parse_inline(trace, &base, &l, e) : trace_parse_file(trace_file, &base, &l, e);
                if (r < 0) {
                        free(l.phases);
                        return r;
                }
                ret->phases = l.phases;
                ret->n_phases = l.n;
                ret->loop = l.loop;
                ret->traced = true;
        } else {
                if (base.jitter > base.delay)
                        return fail(e, "jitter %s is larger than delay %s: a frame would arrive before it was sent",
                                    get(it, dir, KEY_JITTER, &item), get(it, dir, KEY_DELAY, &item) ?: "0");
                if (has_limit && base.rate == EMU_RATE_UNLIMITED)
                        return fail(e, "'%s' without rate=: a path without a rate never queues", limit_item);
                ret->phases = memdup(&base, sizeof(base));
                if (!ret->phases)
                        return -ENOMEM;
                ret->n_phases = 1;
        }

        ret->limit_time = limit_ns;
        if (limit_ns > 0)
                set_time_limits(ret, limit_ns, max_frame);
        else
                for (size_t i = 0; i < ret->n_phases; i++)
                        ret->phases[i].limit = ret->phases[i].rate == EMU_RATE_UNLIMITED ? UINT64_MAX : limit_bytes;

        if (emu_dir_spec_buffer_size(ret) > EMU_BUFFER_MAX) {
                free(ret->phases);
                *ret = (EmuDirSpec) {};
                return fail(e, "%s: rate x (delay + jitter) + limit needs more than %llu MiB of buffer",
                            emu_dir_to_string(dir), EMU_BUFFER_MAX >> 20);
        }
        return 0;
}

void emu_spec_done(EmuSpec *spec) {
        for (size_t d = 0; d < _EMU_DIR_MAX; d++)
                spec->dir[d].phases = mfree(spec->dir[d].phases);
}

int emu_spec_parse(const char *text, unsigned max_frame, EmuSpec *ret, char *error, size_t error_size) {
        _cleanup_free_ char *copy = NULL;
        EmuSpec spec = {};
        Items it = {};
        Err e = { error, error_size };
        char *save = NULL;
        int r;

        if (error_size > 0)
                error[0] = 0;
        copy = strdup(text);
        if (!copy)
                return -ENOMEM;

        /* "a,,b" and a trailing comma are mistakes worth a message; items are trimmed. */
        if (!isempty(text) && (text[strlen(text) - 1] == ',' || text[0] == ',' || strstr(text, ",,")))
                return fail(&e, "empty item in spec '%s'", text);

        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *key, *val, *end;
                int scope = 0;
                Key k;

                while (isspace((unsigned char) *tok))
                        tok++;
                end = tok + strlen(tok);
                while (end > tok && isspace((unsigned char) end[-1]))
                        *--end = 0;
                if (!*tok)
                        return fail(&e, "empty item in spec '%s'", text);
                /* The item stays whole (messages quote it); its value is what follows '='. */
                key = tok;
                val = strchr(tok, '=');
                if (startswith(key, "ab:")) {
                        scope = 1 + EMU_DIR_AB;
                        key += 3;
                } else if (startswith(key, "ba:")) {
                        scope = 1 + EMU_DIR_BA;
                        key += 3;
                }
                for (k = 0; k < _KEY_MAX; k++) {
                        size_t n = strlen(key_names[k]);
                        if (strneq(key, key_names[k], n) && (key[n] == '=' || key[n] == 0))
                                break;
                }
                if (k == _KEY_MAX) {
                        char name[64];
                        const char *hint;

                        (void) strscpy_ok(name, sizeof(name), key);
                        name[strcspn(name, "=")] = 0;
                        hint = key_hint(name);
                        if (hint)
                                return fail(&e, "unknown key '%s' in '%s' (did you mean '%s'?)", name, tok, hint);
                        return fail(&e, "unknown key '%s' in '%s' (keys: rate, delay, jitter, reorder, limit, "
                                    "loss, burst, ge-p, ge-r, ge-bad, ge-good, seed, trace, trace-file; "
                                    "ab: or ba: before one applies it to one direction)", name, tok);
                }
                if (!val && k != KEY_REORDER)
                        return fail(&e, "'%s' needs a value (%s=...)", tok, key_names[k]);
                if (val && val[1] == 0)
                        return fail(&e, "'%s' has an empty value", tok);
                if (k == KEY_SEED && scope != 0)
                        return fail(&e, "'%s': the seed applies to both directions (no ab: or ba:)", tok);
                if (it.value[scope][k])
                        return fail(&e, "'%s' given twice ('%s' and '%s')", key_names[k], it.item[scope][k], tok);
                it.item[scope][k] = tok;
                it.value[scope][k] = val ? val + 1 : "yes";
        }

        if (it.value[0][KEY_SEED]) {
                r = parse_u64(it.value[0][KEY_SEED], &spec.seed);
                if (r < 0)
                        return fail(&e, "'%s': the seed is a number from 0 to %llu", it.item[0][KEY_SEED],
                                    (unsigned long long) UINT64_MAX);
                spec.seed_set = true;
        }

        for (EmuDir d = 0; d < _EMU_DIR_MAX; d++) {
                r = build_dir(&it, d, max_frame, &spec.dir[d], &e);
                if (r < 0) {
                        emu_spec_done(&spec);
                        return r;
                }
        }
        *ret = spec;
        return 0;
}

/* ---- phases over time ---- */

const EmuPhase *emu_dir_spec_phase_at(const EmuDirSpec *d, uint64_t t, size_t *ret_index) {
        size_t lo = 0, hi = d->n_phases;

        if (d->loop > 0)
                t %= d->loop;
        /* the last phase with at <= t */
        while (hi - lo > 1) {
                size_t mid = (lo + hi) / 2;
                if (d->phases[mid].at <= t)
                        lo = mid;
                else
                        hi = mid;
        }
        if (ret_index)
                *ret_index = lo;
        return &d->phases[lo];
}

uint64_t emu_dir_spec_next_change(const EmuDirSpec *d, uint64_t t) {
        size_t i;
        uint64_t base = 0, rel = t;

        if (d->n_phases <= 1 && d->loop == 0)
                return EMU_TIME_INFINITY;
        if (d->loop > 0) {
                base = t - t % d->loop;
                rel = t % d->loop;
        }
        (void) emu_dir_spec_phase_at(d, rel, &i);
        if (i + 1 < d->n_phases)
                return base + d->phases[i + 1].at;
        if (d->loop > 0)
                return base + d->loop;
        return EMU_TIME_INFINITY;
}

uint64_t emu_dir_spec_buffer_size(const EmuDirSpec *d) {
        /* A direction without a rate carries what arrives; size for 2 Gbit/s, more than the
         * lab's CPUs forward through one emulator. */
        const double unlimited_rate = 2e9;
        double rate = 0, delay = 0, limit = 0;
        bool unlimited = false;

        for (size_t i = 0; i < d->n_phases; i++) {
                const EmuPhase *ph = &d->phases[i];
                double r = ph->rate == EMU_RATE_UNLIMITED ? unlimited_rate : (double) ph->rate;

                unlimited = unlimited || ph->rate == EMU_RATE_UNLIMITED;

                rate = MAX(rate, r);
                delay = MAX(delay, (double) (ph->delay + ph->jitter));
                if (ph->limit != UINT64_MAX)
                        limit = MAX(limit, (double) ph->limit);
        }
        /* Records carry a header: small frames (ACKs) take up to twice their size. Without a
         * rate nothing limits a burst (what piled up while the emulator was not running comes
         * at once): room for a few MiB of it. */
        return (uint64_t) (2 * (limit + rate * delay / 8 / EMU_NSEC_PER_SEC)) + (unlimited ? 8 << 20 : 256 << 10);
}

/* ---- printing ---- */

static const char *format_rate(uint64_t bps, char *buf, size_t size) {
        static const Unit u[] = { { "gbit", 1e9 }, { "mbit", 1e6 }, { "kbit", 1e3 } };

        if (bps == EMU_RATE_UNLIMITED)
                return "unlimited";
        if (bps == 0)
                return "0 (stalled)";
        for (size_t i = 0; i < ELEMENTSOF(u); i++)
                if (bps >= u[i].factor) {
                        (void) snprintf(buf, size, "%.6g%s", bps / u[i].factor, u[i].name);
                        return buf;
                }
        (void) snprintf(buf, size, "%" PRIu64 "bit", bps);
        return buf;
}

static const char *format_time(uint64_t ns, char *buf, size_t size) {
        if (ns == 0)
                (void) snprintf(buf, size, "0");
        else if (ns >= EMU_NSEC_PER_SEC && ns % EMU_NSEC_PER_MSEC == 0)
                (void) snprintf(buf, size, "%.6gs", (double) ns / EMU_NSEC_PER_SEC);
        else if (ns >= EMU_NSEC_PER_MSEC)
                (void) snprintf(buf, size, "%.6gms", (double) ns / EMU_NSEC_PER_MSEC);
        else if (ns >= EMU_NSEC_PER_USEC)
                (void) snprintf(buf, size, "%.6gus", (double) ns / EMU_NSEC_PER_USEC);
        else
                (void) snprintf(buf, size, "%" PRIu64 "ns", ns);
        return buf;
}

static void print_loss(const EmuLoss *l, FILE *f) {
        switch (l->model) {
        case EMU_LOSS_RANDOM:
                fprintf(f, "random %.6g%%", l->p * 100);
                break;
        case EMU_LOSS_GE:
                fprintf(f, "Gilbert-Elliott p=%.6g%% r=%.6g%% bad=%.6g%% good=%.6g%% (mean %.6g%%, bursts of %.3g frames)",
                        l->p * 100, l->r * 100, l->bad * 100, l->good * 100, emu_loss_mean(l) * 100,
                        l->r > 0 ? 1 / l->r : 0.0);
                break;
        default:
                fputs("none", f);
        }
}

static void print_phase(const EmuPhase *ph, FILE *f) {
        char a[32], b[32], c[32];

        fprintf(f, "rate %s, delay %s, jitter %s, ", format_rate(ph->rate, a, sizeof(a)),
                format_time(ph->delay, b, sizeof(b)), format_time(ph->jitter, c, sizeof(c)));
        if (ph->limit == UINT64_MAX)
                fputs("no queue, loss ", f);
        else
                fprintf(f, "queue limit %" PRIu64 " bytes, loss ", ph->limit);
        print_loss(&ph->loss, f);
}

void emu_spec_print(const EmuSpec *spec, FILE *f) {
        char buf[32];

        for (EmuDir dir = 0; dir < _EMU_DIR_MAX; dir++) {
                const EmuDirSpec *d = &spec->dir[dir];

                fprintf(f, "%s:", emu_dir_to_string(dir));
                if (!d->traced) {
                        fputc(' ', f);
                        print_phase(&d->phases[0], f);
                } else
                        for (size_t i = 0; i < d->n_phases; i++) {
                                fprintf(f, "\n  from %s: ", format_time(d->phases[i].at, buf, sizeof(buf)));
                                print_phase(&d->phases[i], f);
                        }
                if (d->traced)
                        fprintf(f, "\n  %s", d->loop ? "then from the start, at " : "the last phase holds");
                if (d->loop)
                        fputs(format_time(d->loop, buf, sizeof(buf)), f);
                if (d->reorder)
                        fputs("; jitter may reorder frames", f);
                fputc('\n', f);
        }
        if (spec->seed_set)
                fprintf(f, "seed %" PRIu64 "\n", spec->seed);
}
