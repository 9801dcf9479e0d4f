/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hold.h"

/* Every header in the ring starts at a multiple of this, so that HoldPacket's uint64_t is aligned
 * on every ABI. */
#define HOLD_ALIGN ((size_t) 8)

/* A packet's bytes in the ring: its header and data, rounded up so that the next header is
 * aligned. */
static size_t entry_size(size_t len) {
        return (sizeof(HoldPacket) + len + HOLD_ALIGN - 1) & ~(HOLD_ALIGN - 1);
}

int hold_init(HoldQueue *q, size_t size) {
        *q = (HoldQueue) {};
        q->buf = malloc(size);
        if (!q->buf)
                return -ENOMEM;
        q->size = size & ~(HOLD_ALIGN - 1);
        return 0;
}

void hold_done(HoldQueue *q) {
        free(q->buf);
        *q = (HoldQueue) {};
}

bool hold_push(HoldQueue *q, const uint8_t *pkt, size_t len, int rule, uint64_t time) {
        size_t need = entry_size(len), at;
        HoldPacket *e;

        if (len >= HOLD_WRAP || need > q->size)
                return false;
        if (q->n == 0)
                q->head = q->tail = at = 0;
        else if (q->tail > q->head) {
                /* In use: [head, tail). The packet goes after tail, or (when the end is too
                 * near) at the start, before head: the rest of the end is then skipped. Never
                 * up to head itself, so that tail == head means empty only after a pop. */
                if (need <= q->size - q->tail)
                        at = q->tail;
                else if (need < q->head) {
                        if (q->size - q->tail >= sizeof(HoldPacket))
                                ((HoldPacket *) (q->buf + q->tail))->len = HOLD_WRAP;
                        at = 0;
                } else
                        return false;
        } else {
                /* In use: [head, size) and [0, tail). */
                if (need < q->head - q->tail)
                        at = q->tail;
                else
                        return false;
        }
        e = (HoldPacket *) (q->buf + at);
        e->time = time;
        e->rule = rule;
        e->len = (uint32_t) len;
        memcpy(e->data, pkt, len);
        q->tail = at + need;
        q->n++;
        q->bytes += len;
        return true;
}

/* Moves head past a skipped end of the ring. */
static void skip_wrap(HoldQueue *q) {
        if (q->n > 0 && (q->size - q->head < sizeof(HoldPacket) ||
                         ((const HoldPacket *) (q->buf + q->head))->len == HOLD_WRAP))
                q->head = 0;
}

const HoldPacket *hold_peek(const HoldQueue *q) {
        if (q->n == 0)
                return NULL;
        return (const HoldPacket *) (q->buf + q->head);
}

void hold_pop(HoldQueue *q) {
        const HoldPacket *e = hold_peek(q);

        if (!e)
                return;
        q->head += entry_size(e->len);
        q->bytes -= e->len;
        q->n--;
        if (q->n == 0)
                q->head = q->tail = 0;
        else
                skip_wrap(q);
}
