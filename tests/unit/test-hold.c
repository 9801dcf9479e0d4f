/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The held packets of a worker (src/mptd/hold.c): packets come out whole and in order, with
 * their time and rule, across the ring's wrap; a packet is refused only when it cannot fit. */

#include "hold.h"

#include <glib.h>

typedef struct Model {
        size_t len;
        int rule;
        uint64_t time;
        uint8_t fill;
} Model;

static size_t entry(size_t len) {
        return (sizeof(HoldPacket) + len + 7) & ~(size_t) 7;
}

static void fill(uint8_t *b, size_t len, uint8_t seed) {
        for (size_t i = 0; i < len; i++)
                b[i] = (uint8_t) (seed + i * 31);
}

static void check_packet(const HoldPacket *e, const Model *m) {
        g_assert_nonnull(e);
        g_assert_cmpuint(e->len, ==, m->len);
        g_assert_cmpint(e->rule, ==, m->rule);
        g_assert_cmpuint(e->time, ==, m->time);
        for (size_t i = 0; i < m->len; i++)
                if (e->data[i] != (uint8_t) (m->fill + i * 31))
                        g_error("packet of %zu bytes: byte %zu differs", m->len, i);
}

static void test_basic(void) {
        HoldQueue q;
        uint8_t b[100];

        g_assert_cmpint(hold_init(&q, 1024), ==, 0);
        g_assert_true(hold_empty(&q));
        g_assert_null(hold_peek(&q));
        hold_pop(&q); /* nothing to pop: no change */
        g_assert_true(hold_empty(&q));

        fill(b, sizeof b, 1);
        g_assert_true(hold_push(&q, b, sizeof b, 3, 1000));
        fill(b, 0, 2);
        g_assert_true(hold_push(&q, b, 0, -1, 2000)); /* empty packets are kept too */
        g_assert_cmpuint(q.n, ==, 2);
        g_assert_cmpuint(q.bytes, ==, 100);
        check_packet(hold_peek(&q), &(Model) { 100, 3, 1000, 1 });
        hold_pop(&q);
        check_packet(hold_peek(&q), &(Model) { 0, -1, 2000, 2 });
        hold_pop(&q);
        g_assert_true(hold_empty(&q));
        g_assert_cmpuint(q.bytes, ==, 0);

        /* Too large for the ring at all, even empty. */
        {
                g_autofree uint8_t *big = g_malloc0(2000);
                g_assert_false(hold_push(&q, big, 1024, 0, 1));
                g_assert_true(hold_push(&q, big, 1024 - sizeof(HoldPacket), 0, 1));
                g_assert_false(hold_push(&q, big, 1, 0, 1)); /* full */
                hold_pop(&q);
        }
        hold_done(&q);
        g_assert_null(q.buf);
}

/* Random lengths, random pushes and pops against a model queue, over many wraps. */
static void test_random(void) {
        const size_t size = 64 * 1024;
        HoldQueue q;
        GQueue model = G_QUEUE_INIT;
        g_autoptr(GRand) rand = g_rand_new_with_seed(27);
        g_autofree uint8_t *b = g_malloc(size);
        size_t used = 0, refused = 0, wraps = 0, last_head = 0;

        g_assert_cmpint(hold_init(&q, size), ==, 0);
        for (unsigned i = 0; i < 200000; i++) {
                if (g_rand_int_range(rand, 0, 100) < 52) {
                        /* Mostly small packets, sometimes large ones (GSO). */
                        size_t len = g_rand_int_range(rand, 0, 100) < 90 ? (size_t) g_rand_int_range(rand, 0, 1500)
                                                                          : (size_t) g_rand_int_range(rand, 1500, 20000);
                        Model *m = g_new(Model, 1);

                        *m = (Model) { len, g_rand_int_range(rand, -1, 16), i, (uint8_t) i };
                        fill(b, len, m->fill);
                        if (hold_push(&q, b, len, m->rule, m->time)) {
                                g_queue_push_tail(&model, m);
                                used += entry(len);
                        } else {
                                /* Refused only when neither free part takes it: the one
                                 * before head and the one after tail are each smaller, and
                                 * the end a wrap skipped is smaller than the largest packet. */
                                g_assert_cmpuint(size - used, <, 2 * entry(len) + entry(20000));
                                refused++;
                                g_free(m);
                        }
                } else {
                        Model *m = g_queue_pop_head(&model);

                        if (!m) {
                                g_assert_null(hold_peek(&q));
                                continue;
                        }
                        check_packet(hold_peek(&q), m);
                        hold_pop(&q);
                        used -= entry(m->len);
                        g_free(m);
                        if (q.head < last_head)
                                wraps++;
                        last_head = q.head;
                }
                g_assert_cmpuint(q.n, ==, g_queue_get_length(&model));
                g_assert_cmpuint(used, <=, size);
        }
        g_assert_cmpuint(refused, >, 0);
        g_assert_cmpuint(wraps, >, 10);
        while (!g_queue_is_empty(&model)) {
                Model *m = g_queue_pop_head(&model);
                check_packet(hold_peek(&q), m);
                hold_pop(&q);
                g_free(m);
        }
        g_assert_true(hold_empty(&q));
        g_assert_cmpuint(q.bytes, ==, 0);
        hold_done(&q);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/mpt/hold/basic", test_basic);
        g_test_add_func("/mpt/hold/random", test_random);
        return g_test_run();
}
