/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "byteorder.h"
#include "reorder.h"
#include "wire.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Reorder, reorder_free)

#define MS USEC_PER_MSEC

/* Packets carry their sequence number in the first 4 bytes and a pattern derived from it after
 * that, so the sink can tell that what comes out is what went in. */
typedef struct Sink {
        GArray *seqs;
        size_t len;
} Sink;

static void fill(uint8_t *pkt, size_t len, uint32_t seq) {
        wr32be(pkt, seq);
        for (size_t i = 4; i < len; i++)
                pkt[i] = (uint8_t) (seq * 31 + i);
}

static void on_deliver(void *userdata, const uint8_t *pkt, size_t len) {
        Sink *s = userdata;
        uint32_t seq;

        g_assert_cmpuint(len, ==, s->len);
        seq = rd32be(pkt);
        for (size_t i = 4; i < len; i++)
                g_assert_cmpuint(pkt[i], ==, (uint8_t) (seq * 31 + i));
        g_array_append_val(s->seqs, seq);
}

static void on_deliver_nothing(void *userdata, const uint8_t *pkt, size_t len) {
}

static Sink *sink_new(size_t len) {
        Sink *s = g_new0(Sink, 1);

        s->seqs = g_array_new(false, false, sizeof(uint32_t));
        s->len = len;
        return s;
}

static void sink_free(Sink *s) {
        g_array_unref(s->seqs);
        g_free(s);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Sink, sink_free)

/* at_once: reorder_insert_now(), else reorder_insert(). */
static int insert_as(Reorder *r, Sink *s, uint32_t seq, unsigned path, usec_t now, bool at_once) {
        /* A fresh heap buffer each time, freed right after: the buffer must copy what it holds.
         * The sink is done with what it got when the callback returns: a batch of one. */
        uint8_t *pkt = g_malloc(s->len);
        int ret;

        fill(pkt, s->len, seq);
        ret = (at_once ? reorder_insert_now : reorder_insert)(r, seq, path, pkt, s->len, now, on_deliver, s);
        reorder_trim(r);
        memset(pkt, 0xdd, s->len);
        g_free(pkt);
        return ret;
}

static int insert(Reorder *r, Sink *s, uint32_t seq, unsigned path, usec_t now) {
        return insert_as(r, s, seq, path, now, false);
}

static int insert_now(Reorder *r, Sink *s, uint32_t seq, unsigned path, usec_t now) {
        return insert_as(r, s, seq, path, now, true);
}

#define ACCEPT(r, s, seq, path, now) g_assert_cmpint(insert((r), (s), (seq), (path), (now)), ==, -1)

static void assert_delivered(const Sink *s, const uint32_t *expect, size_t n) {
        const uint32_t *got = (const uint32_t *) (const void *) s->seqs->data;

        if (s->seqs->len != n) {
                GString *m = g_string_new("delivered:");
                for (size_t i = 0; i < s->seqs->len; i++)
                        g_string_append_printf(m, " %u", got[i]);
                g_test_message("%s", m->str);
                g_string_free(m, true);
        }
        g_assert_cmpuint(s->seqs->len, ==, n);
        for (size_t i = 0; i < n; i++)
                g_assert_cmpuint(got[i], ==, expect[i]);
}
#define ASSERT_DELIVERED(s, ...)                                                       \
        do {                                                                           \
                const uint32_t _e[] = { __VA_ARGS__ };                                 \
                assert_delivered((s), _e, G_N_ELEMENTS(_e));                           \
        } while (0)

/* Every counter, so that a test states all of them. */
typedef struct {
        uint64_t delivered, held, late, lost, timeouts, duplicates, stale, resyncs, overflows;
} Counts;

static void assert_stats(const Reorder *r, Counts c) {
        const ReorderStats *st = reorder_stats(r);

        g_assert_cmpuint(st->delivered, ==, c.delivered);
        g_assert_cmpuint(st->held, ==, c.held);
        g_assert_cmpuint(st->late, ==, c.late);
        g_assert_cmpuint(st->lost, ==, c.lost);
        g_assert_cmpuint(st->timeouts, ==, c.timeouts);
        g_assert_cmpuint(st->duplicates, ==, c.duplicates);
        g_assert_cmpuint(st->stale, ==, c.stale);
        g_assert_cmpuint(st->resyncs, ==, c.resyncs);
        g_assert_cmpuint(st->overflows, ==, c.overflows);
}

/* ---- tests ---- */

static void test_new(void) {
        Reorder *r;

        g_assert_null(reorder_new(0, 100 * MS));
        g_assert_null(reorder_new(65537, 100 * MS));
        r = reorder_new(1, 100 * MS);
        g_assert_nonnull(r);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);
        assert_stats(r, (Counts) {});
        g_assert_null(reorder_free(r));
        r = reorder_new(65536, 100 * MS);
        g_assert_nonnull(r);
        reorder_free(r);
        g_assert_null(reorder_free(NULL));
}

static void test_in_order(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(64);

        /* In order, on one path or alternating between two: every packet goes out at once. The
         * first packet sets the sequence space, whatever its number. */
        for (uint32_t i = 0; i < 100; i++) {
                ACCEPT(r, s, 5000 + i, i % 3 == 0 ? 1 : 0, 1000 + i);
                g_assert_cmpuint(s->seqs->len, ==, i + 1);
                g_assert_cmpuint(g_array_index(s->seqs, uint32_t, i), ==, 5000 + i);
                g_assert_cmpuint(reorder_buffered(r), ==, 0);
                g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);
        }
        assert_stats(r, (Counts) { .delivered = 100 });
}

static void test_reordered(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(20);

        /* Path 0 carries the even, path 1 the odd numbers; path 1 is slower. */
        ACCEPT(r, s, 0, 0, 1000);
        ACCEPT(r, s, 1, 1, 1000);
        ACCEPT(r, s, 2, 0, 1000);
        ASSERT_DELIVERED(s, 0, 1, 2);
        ACCEPT(r, s, 4, 0, 1100);
        ACCEPT(r, s, 6, 0, 1200);
        /* 3 may still come on path 1 (its newest is 1): hold. */
        ASSERT_DELIVERED(s, 0, 1, 2);
        g_assert_cmpuint(reorder_buffered(r), ==, 2);
        ACCEPT(r, s, 3, 1, 1300);
        ASSERT_DELIVERED(s, 0, 1, 2, 3, 4);
        g_assert_cmpuint(reorder_buffered(r), ==, 1);
        ACCEPT(r, s, 5, 1, 1400);
        ASSERT_DELIVERED(s, 0, 1, 2, 3, 4, 5, 6);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);
        assert_stats(r, (Counts) { .delivered = 7, .held = 2 });
}

static void test_loss_inferred(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(20);

        ACCEPT(r, s, 0, 0, 1000);
        ACCEPT(r, s, 1, 1, 1000);
        ACCEPT(r, s, 2, 0, 1000);
        ACCEPT(r, s, 4, 0, 1000);
        /* Path 1 has not passed 3 yet: wait. */
        ASSERT_DELIVERED(s, 0, 1, 2);
        /* 3 was lost on path 1. Once path 1 delivers 5, both paths are past 3: each path keeps its
         * order, so 3 cannot come any more. Skipped at once, at the same time stamp (no waiting). */
        ACCEPT(r, s, 5, 1, 1000);
        ASSERT_DELIVERED(s, 0, 1, 2, 4, 5);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);
        ACCEPT(r, s, 6, 0, 1000);
        ASSERT_DELIVERED(s, 0, 1, 2, 4, 5, 6);
        assert_stats(r, (Counts) { .delivered = 6, .held = 2, .lost = 1 });
}

static void test_loss_silent_path_expire(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(20);

        ACCEPT(r, s, 0, 0, 1000);
        ACCEPT(r, s, 1, 1, 1000);
        /* 2 is lost on path 1, which then falls silent; path 0 goes on. */
        ACCEPT(r, s, 3, 0, 2000);
        ACCEPT(r, s, 4, 0, 3000);
        ASSERT_DELIVERED(s, 0, 1);
        g_assert_cmpuint(reorder_deadline(r), ==, 2000 + 50 * MS);

        /* Not before max_delay... */
        reorder_expire(r, 2000 + 50 * MS - 1, on_deliver, s);
        ASSERT_DELIVERED(s, 0, 1);
        g_assert_cmpuint(reorder_buffered(r), ==, 2);
        g_assert_cmpuint(reorder_deadline(r), ==, 2000 + 50 * MS);

        /* ...but then: 2 is given up, 3 goes out, and 4 right behind it (nothing is missing
         * between them, although 4 itself has not waited max_delay). */
        reorder_expire(r, 2000 + 50 * MS, on_deliver, s);
        ASSERT_DELIVERED(s, 0, 1, 3, 4);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);
        assert_stats(r, (Counts) { .delivered = 4, .held = 2, .lost = 1, .timeouts = 1 });

        /* Nothing held: expiring does nothing. */
        reorder_expire(r, 10 * USEC_PER_SEC, on_deliver, s);
        ASSERT_DELIVERED(s, 0, 1, 3, 4);
}

static void test_loss_silent_path_deactivated(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(20);

        ACCEPT(r, s, 0, 0, 1000);
        ACCEPT(r, s, 1, 1, 1000);
        ACCEPT(r, s, 3, 0, 2000);
        /* Path 1 has no gaps on record: silent for exactly the minimum, it still counts. */
        ACCEPT(r, s, 4, 0, 1000 + REORDER_SILENCE_MIN);
        ASSERT_DELIVERED(s, 0, 1);
        /* Longer: it stops holding back the others. */
        ACCEPT(r, s, 5, 0, 1000 + REORDER_SILENCE_MIN + 1);
        ASSERT_DELIVERED(s, 0, 1, 3, 4, 5);
        /* Inferred, not timed out; 5 was held for a moment too. */
        assert_stats(r, (Counts) { .delivered = 5, .held = 3, .lost = 1 });
}

/* A path whose packets come in bursts with long gaps between them (a shaped link) is given
 * REORDER_SILENCE_FACTOR times its longest recent gap before it counts as silent. */
static void test_loss_silent_bursty_path(void) {
        const usec_t gap = 2 * REORDER_SILENCE_MIN / REORDER_SILENCE_FACTOR + 1 * MS, last = 1000 + gap;
        g_autoptr(Reorder) r = reorder_new(64, 100 * MS);
        g_autoptr(Sink) s = sink_new(40);

        /* A gap on path 1 long enough that FACTOR times it is above the minimum. */
        g_assert_cmpuint(REORDER_SILENCE_FACTOR * gap, >, REORDER_SILENCE_MIN);
        ACCEPT(r, s, 0, 1, 1000);
        ACCEPT(r, s, 1, 1, last);
        ACCEPT(r, s, 2, 0, last);
        ACCEPT(r, s, 4, 0, last + 1000);
        /* 3 is path 1's: FACTOR times its gap after its last packet it still counts ... */
        ACCEPT(r, s, 5, 0, last + REORDER_SILENCE_FACTOR * gap);
        ASSERT_DELIVERED(s, 0, 1, 2);
        /* ... and after that no longer. */
        ACCEPT(r, s, 6, 0, last + REORDER_SILENCE_FACTOR * gap + 1);
        ASSERT_DELIVERED(s, 0, 1, 2, 4, 5, 6);
}

static void test_path_down(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(20);

        ACCEPT(r, s, 0, 0, 1000);
        ACCEPT(r, s, 1, 1, 1000);
        ACCEPT(r, s, 3, 0, 1000);
        /* Path 1 went down: it no longer holds back loss inference (from the next packet on). */
        reorder_path_down(r, 1);
        reorder_path_down(r, REORDER_PATHS_MAX); /* out of range: ignored */
        ASSERT_DELIVERED(s, 0, 1);
        ACCEPT(r, s, 4, 0, 1001);
        ASSERT_DELIVERED(s, 0, 1, 3, 4);
        /* A straggler of the path that is down is delivered, but does not make it count: 6 and 7
         * are not waited for. */
        ACCEPT(r, s, 5, 1, 1002);
        ACCEPT(r, s, 8, 0, 1003);
        ASSERT_DELIVERED(s, 0, 1, 3, 4, 5, 8);
        /* Up again: it counts from its next packet on, so 10 is waited for. */
        reorder_path_up(r, 1);
        ACCEPT(r, s, 9, 1, 1004);
        ACCEPT(r, s, 11, 0, 1005);
        ASSERT_DELIVERED(s, 0, 1, 3, 4, 5, 8, 9);
        ACCEPT(r, s, 10, 1, 1006);
        ASSERT_DELIVERED(s, 0, 1, 3, 4, 5, 8, 9, 10, 11);
        assert_stats(r, (Counts) { .delivered = 9, .held = 4, .lost = 3 });
}

/* A path that falls silent for much longer than its usual gaps (blackholed) stops holding back
 * loss inference after the minimum silence (its gaps are short), not after max_delay. */
static void test_path_silence(void) {
        g_autoptr(Reorder) r = reorder_new(1024, 100 * MS);
        g_autoptr(Sink) s = sink_new(1000);
        uint32_t seq = 0;
        usec_t t = 1000;

        /* Two paths alternating every 100 us. */
        for (unsigned i = 0; i < 100; i++, t += 100)
                ACCEPT(r, s, seq++, i % 2, t);
        g_assert_cmpuint(s->seqs->len, ==, 100);
        /* Path 1 goes silent: its packets (odd numbers) are lost from now on. Path 0 goes on for
         * just under the minimum silence. */
        for (unsigned i = 0; i < 9; i++, t += REORDER_SILENCE_MIN / 10) {
                ACCEPT(r, s, seq, 0, t);
                seq += 2;
        }
        /* Within the minimum of its last packet path 1 still counts: everything after 100
         * (which was next) waits for 101. */
        g_assert_cmpuint(s->seqs->len, ==, 101);
        g_assert_cmpuint(reorder_buffered(r), ==, 8);
        /* After that, path 0 alone decides: the gaps are skipped without waiting 100 ms. */
        ACCEPT(r, s, seq, 0, t + REORDER_SILENCE_MIN / 2);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        g_assert_cmpuint(s->seqs->len, ==, 110);
        g_assert_cmpuint(reorder_stats(r)->timeouts, ==, 0);
        g_assert_cmpuint(reorder_stats(r)->lost, ==, 9);
}

static void test_duplicate(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(20);

        ACCEPT(r, s, 0, 0, 1000);
        ACCEPT(r, s, 1, 1, 1000);
        ACCEPT(r, s, 3, 0, 1000);
        /* A copy of a held packet... */
        g_assert_cmpint(insert(r, s, 3, 0, 1001), ==, MPT_DROP_DUPLICATE);
        g_assert_cmpint(insert(r, s, 3, 1, 1001), ==, MPT_DROP_DUPLICATE);
        g_assert_cmpuint(reorder_buffered(r), ==, 1);
        /* ...and of delivered ones. Nothing is flushed (the original flushed everything). */
        g_assert_cmpint(insert(r, s, 0, 1, 1002), ==, MPT_DROP_DUPLICATE);
        g_assert_cmpint(insert(r, s, 1, 0, 1002), ==, MPT_DROP_DUPLICATE);
        ASSERT_DELIVERED(s, 0, 1);
        g_assert_cmpuint(reorder_buffered(r), ==, 1);

        ACCEPT(r, s, 2, 1, 1003);
        ASSERT_DELIVERED(s, 0, 1, 2, 3);
        /* 3 went out of the buffer, 2 directly: copies of either are duplicates. */
        g_assert_cmpint(insert(r, s, 3, 0, 1004), ==, MPT_DROP_DUPLICATE);
        g_assert_cmpint(insert(r, s, 2, 1, 1004), ==, MPT_DROP_DUPLICATE);
        ASSERT_DELIVERED(s, 0, 1, 2, 3);
        assert_stats(r, (Counts) { .delivered = 4, .held = 1, .duplicates = 6 });
}

/* reorder_insert_now() (Policy=: lowest-latency and pinned flows): delivered at once, ahead of a
 * gap and of its path's extra delay; the buffer then passes over its number without delivering
 * it again or waiting for it, and copies of it are duplicates. */
static void test_now(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(20);

        reorder_set_path_extra(r, 2, 20 * MS);
        /* Path 1 is active and behind the gap below: nothing is inferred lost. */
        ACCEPT(r, s, 0, 1, 1000);
        /* 2 ahead of the gap at 1: delivered now; 3 (normal) is held behind the gap. */
        g_assert_cmpint(insert_now(r, s, 2, 0, 1001), ==, -1);
        ACCEPT(r, s, 3, 0, 1002);
        ASSERT_DELIVERED(s, 0, 2);
        g_assert_cmpint(insert_now(r, s, 2, 1, 1003), ==, MPT_DROP_DUPLICATE);
        g_assert_cmpint(insert(r, s, 2, 0, 1003), ==, MPT_DROP_DUPLICATE);
        /* 1 fills the gap: 1 and the held 3 go out, 2 is passed over. */
        ACCEPT(r, s, 1, 1, 1004);
        ASSERT_DELIVERED(s, 0, 2, 1, 3);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        g_assert_cmpint(insert(r, s, 2, 0, 1005), ==, MPT_DROP_DUPLICATE);
        /* In order on a path with extra delay: not held. */
        g_assert_cmpint(insert_now(r, s, 4, 2, 1006), ==, -1);
        ASSERT_DELIVERED(s, 0, 2, 1, 3, 4);
        /* Ahead of a gap that is never filled: the gap is skipped in the end (held 7 goes
         * out), and the early 6 is neither delivered again nor counted lost. */
        g_assert_cmpint(insert_now(r, s, 6, 0, 2000), ==, -1);
        ACCEPT(r, s, 7, 0, 2001);
        ASSERT_DELIVERED(s, 0, 2, 1, 3, 4, 6);
        reorder_expire(r, 2001 + 50 * MS, on_deliver, s);
        ASSERT_DELIVERED(s, 0, 2, 1, 3, 4, 6, 7);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        ACCEPT(r, s, 8, 0, 2002 + 50 * MS);
        ASSERT_DELIVERED(s, 0, 2, 1, 3, 4, 6, 7, 8);
        g_assert_cmpuint(reorder_stats(r)->delivered, ==, 8);
        g_assert_cmpuint(reorder_stats(r)->lost, ==, 1);
        g_assert_cmpuint(reorder_stats(r)->duplicates, ==, 3);
        g_assert_cmpuint(reorder_stats(r)->early, ==, 2);
}

static void test_late(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(20);

        /* As in loss-inferred: 3 is skipped... */
        ACCEPT(r, s, 0, 0, 1000);
        ACCEPT(r, s, 1, 1, 1000);
        ACCEPT(r, s, 2, 0, 1000);
        ACCEPT(r, s, 4, 0, 1000);
        ACCEPT(r, s, 5, 1, 1000);
        ASSERT_DELIVERED(s, 0, 1, 2, 4, 5);
        /* ...then turns up after all (it took a third path): delivered, once. */
        ACCEPT(r, s, 3, 2, 2000);
        ASSERT_DELIVERED(s, 0, 1, 2, 4, 5, 3);
        g_assert_cmpint(insert(r, s, 3, 1, 2001), ==, MPT_DROP_DUPLICATE);
        ASSERT_DELIVERED(s, 0, 1, 2, 4, 5, 3);
        assert_stats(r, (Counts) { .delivered = 6, .held = 2, .late = 1, .lost = 1, .duplicates = 1 });

        /* The same after a skip by timeout. */
        ACCEPT(r, s, 7, 0, 3000);
        reorder_expire(r, 3000 + 50 * MS, on_deliver, s);
        ASSERT_DELIVERED(s, 0, 1, 2, 4, 5, 3, 7);
        ACCEPT(r, s, 6, 1, 3000 + 60 * MS);
        ASSERT_DELIVERED(s, 0, 1, 2, 4, 5, 3, 7, 6);
        g_assert_cmpint(insert(r, s, 6, 1, 3000 + 61 * MS), ==, MPT_DROP_DUPLICATE);
        assert_stats(r, (Counts) { .delivered = 8, .held = 3, .late = 2, .lost = 2, .timeouts = 1,
                                   .duplicates = 2 });
}

static void test_late_path_counts_again(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(20);

        /* Path 1 has not delivered yet when path 0 runs ahead, so 1 is inferred lost... */
        ACCEPT(r, s, 0, 0, 1000);
        ACCEPT(r, s, 2, 0, 1000);
        ASSERT_DELIVERED(s, 0, 2);
        /* ...and comes late on path 1. That is a delivery: path 1 counts from now on. */
        ACCEPT(r, s, 1, 1, 1100);
        ASSERT_DELIVERED(s, 0, 2, 1);
        /* So 3, which path 1 has not passed yet, is waited for, not skipped. */
        ACCEPT(r, s, 4, 0, 1200);
        ASSERT_DELIVERED(s, 0, 2, 1);
        ACCEPT(r, s, 3, 1, 1300);
        ASSERT_DELIVERED(s, 0, 2, 1, 3, 4);
        /* 2 and 4 passed through the buffer (2 only for the moment it took to skip 1). */
        assert_stats(r, (Counts) { .delivered = 5, .held = 2, .late = 1, .lost = 1 });

        /* After reorder_path_down(), a late packet does not bring the path back: only
         * reorder_path_up() does. */
        reorder_path_down(r, 1);
        ACCEPT(r, s, 6, 0, 1400);
        ASSERT_DELIVERED(s, 0, 2, 1, 3, 4, 6);
        ACCEPT(r, s, 5, 1, 1500);
        ACCEPT(r, s, 8, 0, 1600);
        ASSERT_DELIVERED(s, 0, 2, 1, 3, 4, 6, 5, 8);
        ACCEPT(r, s, 7, 1, 1700);
        ASSERT_DELIVERED(s, 0, 2, 1, 3, 4, 6, 5, 8, 7);
        assert_stats(r, (Counts) { .delivered = 9, .held = 4, .late = 3, .lost = 3 });
}

static void test_wrap_in_order(void) {
        g_autoptr(Reorder) r = reorder_new(16, 50 * MS);
        g_autoptr(Sink) s = sink_new(8);

        for (uint32_t i = 0; i < 40; i++) {
                ACCEPT(r, s, 0xfffffff0u + i, 0, 1000);
                g_assert_cmpuint(s->seqs->len, ==, i + 1);
        }
        g_assert_cmpuint(g_array_index(s->seqs, uint32_t, 15), ==, 0xffffffffu);
        g_assert_cmpuint(g_array_index(s->seqs, uint32_t, 16), ==, 0);
        g_assert_cmpuint(g_array_index(s->seqs, uint32_t, 39), ==, 23);
        assert_stats(r, (Counts) { .delivered = 40 });
}

static void test_wrap_reordered(void) {
        g_autoptr(Reorder) r = reorder_new(16, 50 * MS);
        g_autoptr(Sink) s = sink_new(8);
        const uint32_t base = 0xfffffff0u;
        GArray *expect = g_array_new(false, false, sizeof(uint32_t));
        struct { usec_t t; uint32_t k; } ev[40];
        size_t n_ev = 0;

        /* Offsets 0..39 from base: even on path 0, odd on path 1, which is 5 slots slower from offset 2
         * on (so that both paths have delivered before the reordering starts: a path that never
         * delivered does not count for loss inference); the packet numbered 0 (offset 16, right at
         * the wrap) is lost. */
        for (uint32_t k = 0; k < 40; k++)
                if (k != 16)
                        ev[n_ev++] = (typeof(ev[0])) { .t = k + (k % 2 && k > 1 ? 5 : 0), .k = k };
        /* Sort by arrival; on a tie the earlier offset first (paths stay in order either way). */
        for (size_t i = 1; i < n_ev; i++)
                for (size_t j = i; j > 0 && (ev[j - 1].t > ev[j].t ||
                                             (ev[j - 1].t == ev[j].t && ev[j - 1].k > ev[j].k)); j--) {
                        typeof(ev[0]) t = ev[j];
                        ev[j] = ev[j - 1];
                        ev[j - 1] = t;
                }
        for (size_t i = 0; i < n_ev; i++)
                ACCEPT(r, s, base + ev[i].k, ev[i].k % 2, 1000 + ev[i].t);
        for (uint32_t k = 0; k < 40; k++)
                if (k != 16) {
                        uint32_t seq = base + k;
                        g_array_append_val(expect, seq);
                }
        assert_delivered(s, (const uint32_t *) (const void *) expect->data, expect->len);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        g_assert_cmpuint(reorder_stats(r)->lost, ==, 1);
        g_assert_cmpuint(reorder_stats(r)->held, >, 10);
        g_assert_cmpuint(reorder_stats(r)->timeouts, ==, 0);
        g_array_unref(expect);
}

static void test_peer_restart(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(8);

        for (uint32_t i = 0; i < 10; i++)
                ACCEPT(r, s, 1000000 + i, 0, 1000);
        /* The peer restarts: its numbers begin at 0 again. They look far too old (stale) at first;
         * a run of REORDER_RESYNC_STALE of them means a restart, and the stream flows again
         * instead of being dropped until the numbers catch up (the original's blackhole). */
        for (uint32_t i = 0; i < REORDER_RESYNC_STALE - 1; i++)
                g_assert_cmpint(insert(r, s, i, 0, 2000), ==, MPT_DROP_STALE);
        g_assert_cmpuint(s->seqs->len, ==, 10);
        ACCEPT(r, s, REORDER_RESYNC_STALE - 1, 0, 2000);
        for (uint32_t i = REORDER_RESYNC_STALE; i < 20; i++)
                ACCEPT(r, s, i, 0, 2000);
        g_assert_cmpuint(s->seqs->len, ==, 10 + 20 - (REORDER_RESYNC_STALE - 1));
        for (uint32_t i = 0; i < 10; i++)
                g_assert_cmpuint(g_array_index(s->seqs, uint32_t, i), ==, 1000000 + i);
        for (uint32_t i = REORDER_RESYNC_STALE - 1; i < 20; i++)
                g_assert_cmpuint(g_array_index(s->seqs, uint32_t, 10 + i - (REORDER_RESYNC_STALE - 1)), ==, i);
        /* The packets dropped are counted as stale; the one that resynchronised is delivered. */
        assert_stats(r, (Counts) { .delivered = 10 + 20 - (REORDER_RESYNC_STALE - 1),
                                   .stale = REORDER_RESYNC_STALE - 1, .resyncs = 1 });
}

static void test_peer_restart_first_lost(void) {
        g_autoptr(Reorder) r = reorder_new(1024, 50 * MS);
        g_autoptr(Sink) s = sink_new(8);

        for (uint32_t i = 0; i < 1000; i++)
                ACCEPT(r, s, 1000000 + i, i % 2, 1000);
        /* Restart, and the first 60 packets are lost (the original then dropped everything up to
         * its old expected number). */
        for (uint32_t i = 60; i < 60 + REORDER_RESYNC_STALE - 1; i++)
                g_assert_cmpint(insert(r, s, i, 1, 2000), ==, MPT_DROP_STALE);
        for (uint32_t i = 60 + REORDER_RESYNC_STALE - 1; i < 200; i++)
                ACCEPT(r, s, i, i % 2, 2000);
        g_assert_cmpuint(s->seqs->len, ==, 1000 + 200 - 60 - (REORDER_RESYNC_STALE - 1));
        g_assert_cmpuint(g_array_index(s->seqs, uint32_t, s->seqs->len - 1), ==, 199);
        g_assert_cmpuint(reorder_stats(r)->resyncs, ==, 1);
}

static void test_stale_run_interrupted(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(8);

        for (uint32_t i = 0; i < 10; i++)
                ACCEPT(r, s, 1000000 + i, 0, 1000);
        /* Stray old packets mixed with the live stream are no restart: the run must be unbroken. */
        for (uint32_t i = 0; i < 3 * REORDER_RESYNC_STALE; i++) {
                g_assert_cmpint(insert(r, s, 5 + i, 1, 1000), ==, MPT_DROP_STALE);
                if (i % (REORDER_RESYNC_STALE - 1) == REORDER_RESYNC_STALE - 2)
                        ACCEPT(r, s, 1000010 + i, 0, 1000);
        }
        g_assert_cmpuint(reorder_stats(r)->resyncs, ==, 0);
        g_assert_cmpuint(reorder_stats(r)->stale, ==, 3 * REORDER_RESYNC_STALE);
}

static void test_reset(void) {
        g_autoptr(Reorder) r = reorder_new(64, 50 * MS);
        g_autoptr(Sink) s = sink_new(8);

        ACCEPT(r, s, 500, 0, 1000);
        ACCEPT(r, s, 501, 1, 1000);
        ACCEPT(r, s, 503, 0, 1000);
        ASSERT_DELIVERED(s, 500, 501);
        /* Told that the peer restarted: what is held goes out now, in order, skipping gaps... */
        reorder_reset(r, on_deliver, s);
        ASSERT_DELIVERED(s, 500, 501, 503);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);
        /* ...and the next packet starts the sequence space afresh, wherever it is: no stale drops
         * (100000 would otherwise be a far jump, 0 stale). */
        ACCEPT(r, s, 100000, 1, 1001);
        ACCEPT(r, s, 100001, 0, 1001);
        ASSERT_DELIVERED(s, 500, 501, 503, 100000, 100001);
        /* The old space is gone: 502 is far behind now. */
        g_assert_cmpint(insert(r, s, 502, 0, 1002), ==, MPT_DROP_STALE);
        g_assert_cmpuint(reorder_stats(r)->stale, ==, 1);
        g_assert_cmpuint(reorder_stats(r)->lost, ==, 1);
        g_assert_cmpuint(reorder_stats(r)->delivered, ==, 5);
}

static void test_window_overflow(void) {
        g_autoptr(Reorder) r = reorder_new(8, 50 * MS);
        g_autoptr(Sink) s = sink_new(8);

        ACCEPT(r, s, 0, 1, 1000);
        ACCEPT(r, s, 2, 0, 1000);
        ACCEPT(r, s, 3, 0, 1000);
        ASSERT_DELIVERED(s, 0);
        /* 14 is window + 5 ahead of the expected 1: the oldest numbers must make room. 1 is
         * skipped, 2 and 3 go out, 4, 5 and 6 are skipped, and 14 waits at the far end of the
         * window (expected 7). */
        ACCEPT(r, s, 14, 0, 1000);
        ASSERT_DELIVERED(s, 0, 2, 3);
        g_assert_cmpuint(reorder_buffered(r), ==, 1);
        assert_stats(r, (Counts) { .delivered = 3, .held = 2, .lost = 4 });
        for (uint32_t i = 7; i <= 13; i++)
                ACCEPT(r, s, i, 1, 1001);
        ASSERT_DELIVERED(s, 0, 2, 3, 7, 8, 9, 10, 11, 12, 13, 14);
        assert_stats(r, (Counts) { .delivered = 11, .held = 3, .lost = 4 });
}

static void test_far_ahead(void) {
        g_autoptr(Reorder) r = reorder_new(8, 50 * MS);
        g_autoptr(Sink) s = sink_new(8);

        ACCEPT(r, s, 0, 1, 1000);
        ACCEPT(r, s, 2, 0, 1000);
        ACCEPT(r, s, 3, 0, 1000);
        /* A jump far beyond the buffer (a sender that started over): flush what is held (1 is
         * lost), resynchronise with the window before 1000 still open, hold 1000. The distance
         * is not counted as lost: nothing real was lost there. */
        ACCEPT(r, s, 1000, 0, 1000);
        ASSERT_DELIVERED(s, 0, 2, 3);
        g_assert_cmpuint(reorder_buffered(r), ==, 1);
        assert_stats(r, (Counts) { .delivered = 3, .held = 2, .lost = 1, .resyncs = 1 });
        /* What was before the jump is forgotten. */
        g_assert_cmpint(insert(r, s, 1, 1, 1001), ==, MPT_DROP_STALE);
        /* The window before 1000 is still open. */
        for (uint32_t i = 993; i < 1000; i++)
                ACCEPT(r, s, i, 1, 1002);
        ASSERT_DELIVERED(s, 0, 2, 3, 993, 994, 995, 996, 997, 998, 999, 1000);
        assert_stats(r, (Counts) { .delivered = 11, .held = 3, .lost = 1, .stale = 1, .resyncs = 1 });
}

static void test_half_space(void) {
        g_autoptr(Reorder) r = reorder_new(1024, 50 * MS);
        g_autoptr(Sink) s = sink_new(8);

        ACCEPT(r, s, 0, 0, 1000);
        /* Exactly 2^31 behind the expected 1 (seq_diff is INT32_MIN): behind, not ahead. */
        g_assert_cmpint(insert(r, s, 0x80000001u, 0, 1000), ==, MPT_DROP_STALE);
        /* Far ahead, but less than 2^31: a jump. One path only, so nothing can come in between. */
        ACCEPT(r, s, 0x7fff0000u, 0, 1000);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        ASSERT_DELIVERED(s, 0, 0x7fff0000u);
        /* Only the window before the jump is skipped (inferred from the one path). */
        g_assert_cmpuint(reorder_stats(r)->lost, ==, 1023);
        g_assert_cmpuint(reorder_stats(r)->resyncs, ==, 1);
}

static void test_window_one(void) {
        g_autoptr(Reorder) r = reorder_new(1, 50 * MS);
        g_autoptr(Sink) s = sink_new(8);

        /* A window of one holds nothing: a gap is skipped at once. The history is one number deep
         * (ring of 2 slots minus the window), so 1, now two behind, is stale; a copy of 2 is
         * still recognised. */
        ACCEPT(r, s, 0, 0, 1000);
        ACCEPT(r, s, 2, 1, 1000);
        ASSERT_DELIVERED(s, 0, 2);
        g_assert_cmpint(insert(r, s, 1, 0, 1000), ==, MPT_DROP_STALE);
        g_assert_cmpint(insert(r, s, 2, 0, 1000), ==, MPT_DROP_DUPLICATE);
        ACCEPT(r, s, 3, 0, 1000);
        ASSERT_DELIVERED(s, 0, 2, 3);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        assert_stats(r, (Counts) { .delivered = 3, .lost = 1, .duplicates = 1, .stale = 1 });
}

static void test_deadline(void) {
        g_autoptr(Reorder) r = reorder_new(64, 100 * MS);
        g_autoptr(Sink) s = sink_new(8);
/* Times relative to 100 ms in; before that, path 1 shows a 61 ms gap between two packets, so that
 * it counts as silent only after max_delay and only timeouts release what is held here. */
#define T(x) (100 * MS + (x))

        g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);
        ACCEPT(r, s, 0, 1, 40 * MS);
        ACCEPT(r, s, 1, 1, T(1000));
        g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);
        ACCEPT(r, s, 3, 0, T(2000));
        g_assert_cmpuint(reorder_deadline(r), ==, T(2000) + 100 * MS);
        ACCEPT(r, s, 5, 0, T(5000));
        g_assert_cmpuint(reorder_deadline(r), ==, T(2000) + 100 * MS); /* the earliest counts */

        reorder_expire(r, T(2000) + 100 * MS - 1, on_deliver, s);
        ASSERT_DELIVERED(s, 0, 1);
        g_assert_cmpuint(reorder_deadline(r), ==, T(2000) + 100 * MS);
        reorder_expire(r, T(2000) + 100 * MS, on_deliver, s);
        ASSERT_DELIVERED(s, 0, 1, 3);
        g_assert_cmpuint(reorder_deadline(r), ==, T(5000) + 100 * MS);
        ACCEPT(r, s, 4, 1, T(5000) + 50 * MS);
        ASSERT_DELIVERED(s, 0, 1, 3, 4, 5);
        g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);

        /* When an earlier held packet leaves by other means, the deadline may stay early (allowed),
         * but never late; expiring at the early deadline releases nothing and corrects it. (Path 1
         * last delivered at 55 ms and stays active until 155 ms.) */
        ACCEPT(r, s, 7, 0, T(60 * MS));
        ACCEPT(r, s, 9, 0, T(70 * MS));
        g_assert_cmpuint(reorder_deadline(r), ==, T(160 * MS));
        ACCEPT(r, s, 6, 1, T(80 * MS));
        ASSERT_DELIVERED(s, 0, 1, 3, 4, 5, 6, 7);
        g_assert_cmpuint(reorder_buffered(r), ==, 1);
        g_assert_cmpuint(reorder_deadline(r), <=, T(170 * MS));
        reorder_expire(r, reorder_deadline(r), on_deliver, s);
        if (reorder_deadline(r) < T(170 * MS)) {
                g_test_message("deadline %" G_GUINT64_FORMAT " after expiring", reorder_deadline(r));
                g_assert_not_reached();
        }
        ASSERT_DELIVERED(s, 0, 1, 3, 4, 5, 6, 7);
        g_assert_cmpuint(reorder_deadline(r), ==, T(170 * MS));
        reorder_expire(r, T(170 * MS), on_deliver, s);
        ASSERT_DELIVERED(s, 0, 1, 3, 4, 5, 6, 7, 9);
        g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);
        g_assert_cmpuint(reorder_stats(r)->timeouts, ==, 2);
#undef T
}

static void test_byte_bound(void) {
        g_autoptr(Reorder) r = reorder_new(65536, 100 * MS);
        g_autoptr(Sink) s = sink_new(2048);
        const uint32_t n_fit = REORDER_BYTES_MAX / 2048;

        /* Path 1 lags behind at 0, so path 0's packets are held (1 may still come on path 1)
         * until REORDER_BYTES_MAX bytes are buffered; the next one forces the oldest out. */
        ACCEPT(r, s, 0, 1, 1000);
        for (uint32_t i = 0; i < n_fit; i++)
                ACCEPT(r, s, 2 + i, 0, 1000);
        g_assert_cmpuint(reorder_buffered(r), ==, n_fit);
        g_assert_cmpuint(s->seqs->len, ==, 1);
        ACCEPT(r, s, 2 + n_fit, 0, 1000);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        g_assert_cmpuint(s->seqs->len, ==, 2 + n_fit);
        for (uint32_t i = 1; i < s->seqs->len; i++)
                g_assert_cmpuint(g_array_index(s->seqs, uint32_t, i), ==, i + 1);
        assert_stats(r, (Counts) { .delivered = 2 + n_fit, .held = n_fit, .lost = 1, .overflows = 1 });
}

/* A long run with three FIFO paths of different delays, random loss, duplicates and a path that
 * falls silent for a while, checking that the counters agree with what the callback saw. */
typedef struct {
        usec_t t;
        uint32_t k; /* offset from the base sequence number */
        unsigned path;
} Event;

/* Held packets are copied into the buffer's own copy buffers (allocated at the start, one per
 * window slot) and these go back to the free ones when delivered and trimmed: round after round
 * of a full window held and released delivers every packet intact. Packets larger than a copy
 * buffer take an allocation of their own instead, which is freed again. */
static void copy_rounds(size_t len) {
        const uint32_t window = 16;
        g_autoptr(Reorder) r = reorder_new(window, 100 * MS);
        g_autoptr(Sink) s = sink_new(len);
        uint32_t seq = 1002;

        g_assert_nonnull(r);
        /* Both paths seen, in order. */
        ACCEPT(r, s, 1000, 0, 0);
        ACCEPT(r, s, 1001, 1, 0);
        for (unsigned round = 1; round <= 50; round++) {
                /* All but the first of a window arrive first on path 0 and are held (path 1 may
                 * still bring the first)... */
                for (uint32_t i = 1; i < window; i++)
                        ACCEPT(r, s, seq + i, 0, (usec_t) round * MS);
                g_assert_cmpuint(reorder_buffered(r), ==, window - 1);
                /* ...until it comes and fills the gap. */
                ACCEPT(r, s, seq, 1, (usec_t) round * MS);
                g_assert_cmpuint(reorder_buffered(r), ==, 0);
                seq += window;
        }
        g_assert_cmpuint(s->seqs->len, ==, 2 + 50 * window);
        for (guint i = 0; i < s->seqs->len; i++)
                g_assert_cmpuint(g_array_index(s->seqs, uint32_t, i), ==, 1000 + i);
        g_assert_cmpuint(reorder_spill_bytes(r), ==, 0);
}

static void test_copy_buffers(void) {
        copy_rounds(1400);
        copy_rounds(REORDER_COPY_BYTES);
        copy_rounds(REORDER_COPY_BYTES + 1);
        copy_rounds(9000);
}

/* What the data plane does with delivered packets: it gathers them (GRO) and writes them only
 * once the whole receive batch is handled, so a delivered packet must stay intact until then,
 * even when the same batch holds other packets. Here a batch is every insert between two calls
 * of reorder_trim(); the callers' own buffers stay valid for the whole batch as well. */
typedef struct Batch {
        size_t len;
        const uint8_t *pkts[64];
        uint32_t seqs[64];
        unsigned n;
        uint8_t *owned[64]; /* the inserted packets' buffers */
        unsigned n_owned;
} Batch;

static void on_deliver_batch(void *userdata, const uint8_t *pkt, size_t len) {
        Batch *b = userdata;

        g_assert_cmpuint(len, ==, b->len);
        g_assert_cmpuint(b->n, <, G_N_ELEMENTS(b->pkts));
        b->seqs[b->n] = rd32be(pkt);
        b->pkts[b->n++] = pkt;
}

static void batch_insert(Reorder *r, Batch *b, uint32_t seq, unsigned path) {
        uint8_t *pkt = g_malloc(b->len);

        fill(pkt, b->len, seq);
        g_assert_cmpuint(b->n_owned, <, G_N_ELEMENTS(b->owned));
        b->owned[b->n_owned++] = pkt;
        g_assert_cmpint(reorder_insert(r, seq, path, pkt, b->len, 0, on_deliver_batch, b), ==, -1);
}

/* The end of a batch: every packet delivered in it is still what it was, then the buffer may
 * reuse their memory. */
static void batch_end(Reorder *r, Batch *b) {
        for (unsigned i = 0; i < b->n; i++) {
                g_assert_cmpuint(rd32be(b->pkts[i]), ==, b->seqs[i]);
                for (size_t k = 4; k < b->len; k++)
                        g_assert_cmpuint(b->pkts[i][k], ==, (uint8_t) (b->seqs[i] * 31 + k));
        }
        b->n = 0;
        reorder_trim(r);
        for (unsigned i = 0; i < b->n_owned; i++)
                g_free(b->owned[i]);
        b->n_owned = 0;
}

static void batch_rounds(size_t len) {
        g_autoptr(Reorder) r = reorder_new(16, 100 * MS);
        Batch b = { .len = len };

        for (uint32_t round = 0; round < 3; round++) {
                uint32_t seq = 1000 + round * 100;

                if (round > 0)
                        reorder_reset(r, on_deliver_batch, &b);
                batch_insert(r, &b, seq, 0);
                batch_insert(r, &b, seq + 1, 1);
                /* Held (path 1 may still bring seq + 2), delivered when it does, and in the same
                 * batch two more are held: they must not land where the delivered one is. */
                batch_insert(r, &b, seq + 3, 0);
                batch_insert(r, &b, seq + 2, 1);
                batch_insert(r, &b, seq + 5, 0);
                batch_insert(r, &b, seq + 6, 0);
                g_assert_cmpuint(reorder_buffered(r), ==, 2);
                batch_end(r, &b);
                batch_insert(r, &b, seq + 4, 1);
                g_assert_cmpuint(reorder_buffered(r), ==, 0);
                batch_end(r, &b);
        }
}

static void test_batch_lifetime(void) {
        batch_rounds(100);
        batch_rounds(REORDER_COPY_BYTES + 1);
        batch_rounds(60000);
}

/* Packets larger than a copy buffer (or held when no copy buffer is free) take an allocation of
 * their size, which goes back when they were delivered and trimmed: the memory follows what is
 * held, and never exceeds the byte bound, however many slots once held a large packet. */
static void test_spill_memory(void) {
        const uint32_t window = 4096;
        g_autoptr(Reorder) r = reorder_new(window, 100 * MS);
        g_autoptr(Sink) big = sink_new(60000);
        g_autoptr(Sink) small = sink_new(100);
        const uint32_t n_fit = REORDER_BYTES_MAX / 60000;
        uint32_t seq = 0;

        /* Path 1 lags behind, so path 0's packets are held. */
        ACCEPT(r, big, seq, 0, 0);
        ACCEPT(r, big, seq + 1, 1, 0);
        seq += 2;
        for (unsigned round = 0; round < 4; round++) {
                for (uint32_t i = 1; i <= 200; i++)
                        ACCEPT(r, big, seq + i, 0, 1000);
                g_assert_cmpuint(reorder_spill_bytes(r), ==, 200 * 60000);
                /* The gap filled: all of it delivered, and trimmed (insert() does). */
                ACCEPT(r, big, seq, 1, 1000);
                g_assert_cmpuint(reorder_buffered(r), ==, 0);
                g_assert_cmpuint(reorder_spill_bytes(r), ==, 0);
                seq += 201;
        }
        /* Delivered but not trimmed yet: still there, until the caller says so. */
        for (uint32_t i = 1; i <= 2; i++) {
                static const uint8_t zeros[60000];
                int k = reorder_insert(r, seq + i, 0, zeros, sizeof zeros, 1000, on_deliver_nothing, NULL);
                g_assert_cmpint(k, ==, -1);
        }
        reorder_reset(r, on_deliver_nothing, NULL);
        g_assert_cmpuint(reorder_spill_bytes(r), ==, 2 * 60000);
        reorder_trim(r);
        g_assert_cmpuint(reorder_spill_bytes(r), ==, 0);

        /* The byte bound holds for allocations too: a flood of large packets that are all held
         * forces the oldest out before more is allocated. */
        ACCEPT(r, big, seq, 0, 2000);
        ACCEPT(r, big, seq + 1, 1, 2000);
        seq += 2;
        for (uint32_t i = 1; i <= n_fit + 50; i++) {
                ACCEPT(r, big, seq + i, 0, 2000);
                g_assert_cmpuint(reorder_spill_bytes(r), <=, REORDER_BYTES_MAX);
        }
        g_assert_cmpuint(reorder_stats(r)->overflows, >, 0);
        reorder_reset(r, on_deliver, big);
        reorder_trim(r);
        g_assert_cmpuint(reorder_spill_bytes(r), ==, 0);
        seq += n_fit + 51;

        /* Small packets take the copy buffers, allocated at the start: nothing more. */
        ACCEPT(r, small, seq, 0, 3000);
        ACCEPT(r, small, seq + 1, 1, 3000);
        seq += 2;
        for (uint32_t i = 1; i < window; i++)
                ACCEPT(r, small, seq + i, 0, 3000);
        g_assert_cmpuint(reorder_spill_bytes(r), ==, 0);
        reorder_reset(r, on_deliver, small);
        reorder_trim(r);
        g_assert_cmpuint(reorder_spill_bytes(r), ==, 0);
}

static int event_cmp(const void *a, const void *b) {
        const Event *x = a, *y = b;

        if (x->t != y->t)
                return x->t < y->t ? -1 : 1;
        return x->k < y->k ? -1 : x->k > y->k ? 1 : 0;
}

static void simulate(uint32_t base, guint32 seed) {
        const uint32_t n = 6000;
        const usec_t delay[3] = { 1 * MS, 3 * MS, 7 * MS };
        g_autoptr(Reorder) r = reorder_new(256, 20 * MS);
        g_autoptr(Sink) s = sink_new(16);
        GRand *rand = g_rand_new_with_seed(seed);
        GArray *ev = g_array_new(false, false, sizeof(Event));
        usec_t last[3] = {};
        unsigned n_dropped = 0, n_inserted = 0, n_accepted = 0, n_dup = 0, n_stale = 0, inversions = 0;
        g_autofree uint8_t *seen = g_new0(uint8_t, n);
        uint32_t max_k = 0;

        for (uint32_t k = 0; k < n; k++) {
                unsigned path = g_rand_int_range(rand, 0, 3);
                usec_t t, jitter;

                /* Path 2 carries nothing for a while (it is down, say). */
                if (path == 2 && k >= 2000 && k < 2600)
                        path = k % 2;
                /* The first packet arrives first: the buffer starts its sequence space there, and
                 * anything older that came later would be stale (there is no history before it). */
                if (k == 0)
                        path = 0;
                /* Per-path FIFO: never before the previous packet of the same path. (The jitter is
                 * drawn first: MAX() evaluates its arguments twice.) */
                jitter = k > 0 ? (usec_t) g_rand_int_range(rand, 0, 2000) : 0;
                t = MAX(last[path], (usec_t) k * 100 + delay[path] + jitter);
                last[path] = t;
                if (k != 0 && k != n - 1 && g_rand_int_range(rand, 0, 100) < 3) {
                        n_dropped++;
                        continue;
                }
                g_array_append_val(ev, ((Event) { t, k, path }));
                if (g_rand_int_range(rand, 0, 100) < 1)
                        g_array_append_val(ev, ((Event) { t, k, path }));
        }
        /* Stable enough: equal times keep sequence order, so every path stays FIFO. */
        qsort(ev->data, ev->len, sizeof(Event), event_cmp);

        for (size_t i = 0; i < ev->len; i++) {
                const Event *e = &g_array_index(ev, Event, i);
                int ret;

                if (reorder_deadline(r) <= e->t)
                        reorder_expire(r, e->t, on_deliver, s);
                ret = insert(r, s, base + e->k, e->path, e->t);
                n_inserted++;
                if (ret == -1)
                        n_accepted++;
                else if (ret == MPT_DROP_DUPLICATE)
                        n_dup++;
                else if (ret == MPT_DROP_STALE)
                        n_stale++;
                else
                        g_assert_not_reached();
        }
        reorder_reset(r, on_deliver, s);

        {
                const ReorderStats *st = reorder_stats(r);

                for (size_t i = 0; i < s->seqs->len; i++) {
                        uint32_t k = g_array_index(s->seqs, uint32_t, i) - base;
                        g_assert_cmpuint(k, <, n);
                        g_assert_cmpuint(seen[k], ==, 0); /* at most once */
                        seen[k] = 1;
                        if (i > 0 && k < max_k)
                                inversions++;
                        max_k = MAX(max_k, k);
                }
                g_test_message("inserted %u, dropped %u, delivered %u, held %" G_GUINT64_FORMAT
                               ", late %" G_GUINT64_FORMAT ", lost %" G_GUINT64_FORMAT
                               ", timeouts %" G_GUINT64_FORMAT ", duplicates %u",
                               n_inserted, n_dropped, s->seqs->len, st->held, st->late, st->lost, st->timeouts, n_dup);

                /* The window (256) is far larger than the spread of the paths (about 90 packets),
                 * so nothing is stale or forced out: every packet that arrived comes out once. */
                g_assert_cmpuint(n_stale, ==, 0);
                g_assert_cmpuint(st->overflows, ==, 0);
                g_assert_cmpuint(n_accepted + n_dup + n_stale, ==, n_inserted);
                g_assert_cmpuint(st->delivered, ==, s->seqs->len);
                g_assert_cmpuint(st->delivered, ==, n_accepted);
                g_assert_cmpuint(st->delivered, ==, n - n_dropped);
                g_assert_cmpuint(st->duplicates, ==, n_dup);
                g_assert_cmpuint(st->stale, ==, n_stale);
                g_assert_cmpuint(st->held, <=, st->delivered);
                g_assert_cmpuint(st->timeouts, <=, st->lost);
                /* A skipped number is either lost for good or comes late. */
                g_assert_cmpuint(st->lost, ==, n_dropped + st->late);
                /* Out-of-order deliveries are exactly the late ones. */
                g_assert_cmpuint(inversions, ==, st->late);
                g_assert_cmpuint(reorder_buffered(r), ==, 0);
                g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);
                /* Late deliveries only where a path was not known to be active: at the start and
                 * when the silent path comes back. A path that lags must not stay excluded (it
                 * did: every packet of the slowest path came late, about 1800 of them). */
                g_assert_cmpuint(st->late, <, 60);
                /* The scenario does exercise holding, inference and duplicates. (Timeouts it need
                 * not: the silent path may stop counting before max_delay; test_deadline() and the
                 * expire tests cover them.) */
                g_assert_cmpuint(st->held, >, 100);
                g_assert_cmpuint(st->lost, >, 100);
                g_assert_cmpuint(n_dup, >, 10);
        }
        g_array_unref(ev);
        g_rand_free(rand);
}

static void test_simulation(void) {
        simulate(0, 1);
}

static void test_simulation_wrap(void) {
        simulate(0xfffff000u, 2);
}

/* A lender that lends every packet whose sequence number is even and refuses the odd ones. Lent
 * packets stay in their own heap buffer until released; then the buffer is poisoned and freed,
 * so that a packet delivered after its release fails on_deliver's pattern check (or ASan). */
typedef struct Lender {
        GHashTable *lent;  /* pkt -> seq, retained and not yet released */
        GArray *delivered; /* seqs of the sink at the time of each release, checked below */
        Sink *sink;
        unsigned retained, refused, released;
} Lender;

static bool lender_retain(void *userdata, const uint8_t *pkt, size_t len) {
        Lender *l = userdata;
        uint32_t seq = rd32be(pkt);

        g_assert_cmpuint(len, ==, l->sink->len);
        if (seq % 2) {
                l->refused++;
                return false;
        }
        g_assert_false(g_hash_table_contains(l->lent, pkt));
        g_hash_table_insert(l->lent, (void *) pkt, GUINT_TO_POINTER(seq));
        l->retained++;
        return true;
}

static void lender_release(void *userdata, const uint8_t *pkt) {
        Lender *l = userdata;
        uint32_t seq;

        g_assert_true(g_hash_table_contains(l->lent, pkt));
        seq = GPOINTER_TO_UINT(g_hash_table_lookup(l->lent, pkt));
        /* Released right after its delivery (when the buffer is not being freed). */
        if (l->sink->seqs->len > 0)
                g_assert_cmpuint(g_array_index(l->sink->seqs, uint32_t, l->sink->seqs->len - 1), ==, seq);
        g_hash_table_remove(l->lent, pkt);
        memset((void *) pkt, 0xdd, l->sink->len);
        g_free((void *) pkt);
        l->released++;
}

/* Inserts seq; a lent packet's buffer is the lender's from then on (it may be released within
 * the same call, when loss inference lets it go at once), any other is freed at once. */
static int insert_lent(Reorder *r, Lender *l, uint32_t seq, unsigned path, usec_t now) {
        uint8_t *pkt = g_malloc(l->sink->len);
        unsigned retained = l->retained;
        int ret;

        fill(pkt, l->sink->len, seq);
        ret = reorder_insert(r, seq, path, pkt, l->sink->len, now, on_deliver, l->sink);
        if (l->retained == retained) {
                memset(pkt, 0xdd, l->sink->len);
                g_free(pkt);
        }
        return ret;
}

static void test_lender(void) {
        g_autoptr(Reorder) r = reorder_new(64, 100 * MS);
        g_autoptr(Sink) s = sink_new(200);
        Lender l = { .lent = g_hash_table_new(NULL, NULL), .sink = s };
        const ReorderLender lender = { lender_retain, lender_release, &l };
        static const uint32_t expect[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14 };

        reorder_set_lender(r, &lender);
        /* In order: delivered at once, nothing held, nothing lent. */
        g_assert_cmpint(insert_lent(r, &l, 0, 0, 0), ==, -1);
        g_assert_cmpuint(l.retained + l.refused, ==, 0);
        /* Path 1 runs ahead with 5..9 (held: 6 and 8 lent, 5, 7, 9 copied), path 0 brings 1..4. */
        for (uint32_t q = 5; q <= 9; q++)
                g_assert_cmpint(insert_lent(r, &l, q, 1, MS), ==, -1);
        g_assert_cmpuint(l.retained, ==, 2);
        g_assert_cmpuint(l.refused, ==, 3);
        g_assert_cmpuint(g_hash_table_size(l.lent), ==, 2);
        for (uint32_t q = 1; q <= 4; q++)
                g_assert_cmpint(insert_lent(r, &l, q, 0, 2 * MS), ==, -1);
        g_assert_cmpuint(l.released, ==, 2);
        g_assert_cmpuint(g_hash_table_size(l.lent), ==, 0);
        /* Held until the deadline: 12 and 14 are lent, 10 never comes, 11 and 13 are copied. */
        for (uint32_t q = 11; q <= 14; q++)
                g_assert_cmpint(insert_lent(r, &l, q, 0, 3 * MS), ==, -1);
        g_assert_cmpuint(g_hash_table_size(l.lent), ==, 2);
        reorder_expire(r, 3 * MS + 100 * MS, on_deliver, s);
        g_assert_cmpuint(g_hash_table_size(l.lent), ==, 0);
        g_assert_cmpuint(l.released, ==, l.retained);
        /* 10 was skipped; it arrives late and is delivered without being held. */
        g_assert_cmpint(insert_lent(r, &l, 10, 0, 104 * MS), ==, -1);
        {
                static const uint32_t got[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 10 };
                assert_delivered(s, got, G_N_ELEMENTS(got));
        }
        (void) expect;
        g_assert_cmpuint(reorder_stats(r)->lost, ==, 1);
        g_assert_cmpuint(reorder_stats(r)->late, ==, 1);

        /* Without a lender again: everything is copied. */
        reorder_set_lender(r, NULL);
        l.retained = l.refused = 0;
        g_assert_cmpint(insert(r, s, 16, 0, 105 * MS), ==, -1);
        g_assert_cmpint(insert(r, s, 15, 0, 105 * MS), ==, -1);
        g_assert_cmpuint(l.retained + l.refused, ==, 0);
        g_hash_table_unref(l.lent);
}

static void test_lender_free(void) {
        Reorder *r = reorder_new(64, 100 * MS);
        g_autoptr(Sink) s = sink_new(100);
        Lender l = { .lent = g_hash_table_new(NULL, NULL), .sink = s };
        const ReorderLender lender = { lender_retain, lender_release, &l };

        reorder_set_lender(r, &lender);
        g_assert_cmpint(insert_lent(r, &l, 0, 0, 0), ==, -1);
        /* Two paths, path 1 ahead with 2..9 (lent: 2, 4, 6, 8), path 0 silent after 0: held. */
        for (uint32_t q = 2; q <= 9; q++)
                g_assert_cmpint(insert_lent(r, &l, q, 1, MS), ==, -1);
        g_assert_cmpuint(g_hash_table_size(l.lent), ==, 4);
        /* Freed with packets held: every lent one is released (not delivered). */
        g_array_set_size(s->seqs, 0);
        reorder_free(r);
        g_assert_cmpuint(l.released, ==, 4);
        g_assert_cmpuint(g_hash_table_size(l.lent), ==, 0);
        g_assert_cmpuint(s->seqs->len, ==, 0);
        g_hash_table_unref(l.lent);
}

/* Delay equalisation: packets of a path with an extra delay wait that long even in order, and
 * the packets behind them wait for them. */
static void test_path_extra(void) {
        g_autoptr(Reorder) r = reorder_new(64, 100 * MS);
        g_autoptr(Sink) s = sink_new(20);

        reorder_set_path_extra(r, 0, 30 * MS);
        g_assert_cmpuint(reorder_path_extra(r, 0), ==, 30 * MS);
        g_assert_cmpuint(reorder_path_extra(r, 1), ==, 0);
        /* In order on the fast path: held 30 ms. */
        ACCEPT(r, s, 0, 0, 1000);
        g_assert_cmpuint(s->seqs->len, ==, 0);
        g_assert_cmpuint(reorder_buffered(r), ==, 1);
        g_assert_cmpuint(reorder_deadline(r), ==, 1000 + 30 * MS);
        reorder_expire(r, 1000 + 30 * MS - 1, on_deliver, s);
        g_assert_cmpuint(s->seqs->len, ==, 0);
        reorder_expire(r, 1000 + 30 * MS, on_deliver, s);
        ASSERT_DELIVERED(s, 0);
        g_assert_cmpuint(reorder_deadline(r), ==, USEC_INFINITY);
        /* 1 on the fast path, 2 on the slow one (no extra) before 1's time: 2 waits for 1. */
        ACCEPT(r, s, 1, 0, 50 * MS);
        ACCEPT(r, s, 2, 1, 60 * MS);
        ASSERT_DELIVERED(s, 0);
        /* Anything inserted after 1's time releases it first, then itself. */
        ACCEPT(r, s, 3, 1, 80 * MS);
        ASSERT_DELIVERED(s, 0, 1, 2, 3);
        /* Behind a gap: 5 on the fast path waits for 4 and for its own time. */
        ACCEPT(r, s, 5, 0, 100 * MS);
        ACCEPT(r, s, 4, 1, 105 * MS);
        ASSERT_DELIVERED(s, 0, 1, 2, 3, 4);
        g_assert_cmpuint(reorder_deadline(r), ==, 130 * MS);
        reorder_expire(r, 130 * MS, on_deliver, s);
        ASSERT_DELIVERED(s, 0, 1, 2, 3, 4, 5);
        /* Nothing was lost or timed out; the extra delay is capped by the longest hold. */
        assert_stats(r, (Counts) { .delivered = 6, .held = 4 });
        reorder_set_path_extra(r, 2, 10 * USEC_PER_SEC);
        g_assert_cmpuint(reorder_path_extra(r, 2), ==, 100 * MS);
        /* A reset delivers what waits at once. */
        ACCEPT(r, s, 6, 0, 200 * MS);
        reorder_reset(r, on_deliver, s);
        ASSERT_DELIVERED(s, 0, 1, 2, 3, 4, 5, 6);
        /* A path that is down gets no extra delay. */
        reorder_path_down(r, 0);
        ACCEPT(r, s, 100, 0, 300 * MS);
        ASSERT_DELIVERED(s, 0, 1, 2, 3, 4, 5, 6, 100);
}

/* A copy of a packet that waits at the head of the buffer for its path's extra delay is a
 * duplicate, whichever path it comes by: it is neither delivered at once (before the original,
 * which would then be delivered too) nor held in the same slot again. Either left the buffer
 * counting a packet it no longer had, and the next reset or resynchronisation looped over the
 * whole sequence space looking for it (found by fuzz-rx). */
static void test_path_extra_duplicate(void) {
        g_autoptr(Reorder) r = reorder_new(64, 100 * MS);
        g_autoptr(Sink) s = sink_new(20);

        reorder_set_path_extra(r, 0, 30 * MS);
        ACCEPT(r, s, 0, 0, 1000);
        g_assert_cmpuint(reorder_buffered(r), ==, 1);
        g_assert_cmpint(insert(r, s, 0, 1, 1001), ==, MPT_DROP_DUPLICATE);
        g_assert_cmpint(insert(r, s, 0, 0, 1002), ==, MPT_DROP_DUPLICATE);
        g_assert_cmpuint(s->seqs->len, ==, 0);
        g_assert_cmpuint(reorder_buffered(r), ==, 1);
        reorder_expire(r, 1000 + 30 * MS, on_deliver, s);
        ASSERT_DELIVERED(s, 0);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        g_assert_cmpint(insert(r, s, 0, 1, 1000 + 31 * MS), ==, MPT_DROP_DUPLICATE);

        /* The same before a reset, which delivers the original once. */
        ACCEPT(r, s, 1, 0, 40 * MS);
        g_assert_cmpint(insert(r, s, 1, 1, 41 * MS), ==, MPT_DROP_DUPLICATE);
        g_assert_cmpint(insert(r, s, 1, 0, 42 * MS), ==, MPT_DROP_DUPLICATE);
        reorder_reset(r, on_deliver, s);
        ASSERT_DELIVERED(s, 0, 1);
        g_assert_cmpuint(reorder_buffered(r), ==, 0);
        assert_stats(r, (Counts) { .delivered = 2, .held = 2, .duplicates = 5 });
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        g_test_add_func("/mpt/reorder/new", test_new);
        g_test_add_func("/mpt/reorder/copy-buffers", test_copy_buffers);
        g_test_add_func("/mpt/reorder/batch-lifetime", test_batch_lifetime);
        g_test_add_func("/mpt/reorder/spill-memory", test_spill_memory);
        g_test_add_func("/mpt/reorder/in-order", test_in_order);
        g_test_add_func("/mpt/reorder/reordered", test_reordered);
        g_test_add_func("/mpt/reorder/loss-inferred", test_loss_inferred);
        g_test_add_func("/mpt/reorder/loss-silent-path-expire", test_loss_silent_path_expire);
        g_test_add_func("/mpt/reorder/loss-silent-path-deactivated", test_loss_silent_path_deactivated);
        g_test_add_func("/mpt/reorder/loss-silent-bursty-path", test_loss_silent_bursty_path);
        g_test_add_func("/mpt/reorder/path-down", test_path_down);
        g_test_add_func("/mpt/reorder/path-silence", test_path_silence);
        g_test_add_func("/mpt/reorder/duplicate", test_duplicate);
        g_test_add_func("/mpt/reorder/now", test_now);
        g_test_add_func("/mpt/reorder/late", test_late);
        g_test_add_func("/mpt/reorder/late-path-counts-again", test_late_path_counts_again);
        g_test_add_func("/mpt/reorder/wrap-in-order", test_wrap_in_order);
        g_test_add_func("/mpt/reorder/wrap-reordered", test_wrap_reordered);
        g_test_add_func("/mpt/reorder/peer-restart", test_peer_restart);
        g_test_add_func("/mpt/reorder/peer-restart-first-lost", test_peer_restart_first_lost);
        g_test_add_func("/mpt/reorder/stale-run-interrupted", test_stale_run_interrupted);
        g_test_add_func("/mpt/reorder/reset", test_reset);
        g_test_add_func("/mpt/reorder/window-overflow", test_window_overflow);
        g_test_add_func("/mpt/reorder/far-ahead", test_far_ahead);
        g_test_add_func("/mpt/reorder/half-space", test_half_space);
        g_test_add_func("/mpt/reorder/window-one", test_window_one);
        g_test_add_func("/mpt/reorder/deadline", test_deadline);
        g_test_add_func("/mpt/reorder/byte-bound", test_byte_bound);
        g_test_add_func("/mpt/reorder/simulation", test_simulation);
        g_test_add_func("/mpt/reorder/simulation-wrap", test_simulation_wrap);
        g_test_add_func("/mpt/reorder/lender", test_lender);
        g_test_add_func("/mpt/reorder/path-extra", test_path_extra);
        g_test_add_func("/mpt/reorder/path-extra-duplicate", test_path_extra_duplicate);
        g_test_add_func("/mpt/reorder/lender-free", test_lender_free);

        return g_test_run();
}
