/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One direction of an emulated path, as a pure model (no system calls but mmap for its buffer,
 * no clock of its own: the caller passes the time, in ns of any monotonic clock):
 *
 *   arrive -> queue (FIFO, byte limit, tail drop) -> serialisation at the phase's rate
 *          -> loss (the phase's model) -> delay (+ jitter) -> release
 *
 * A frame is lost on the wire: it has used its serialisation time. Serialisation is computed on
 * a virtual clock (a frame starts when the link is free and it has arrived, and takes
 * len * 8 / rate), so the rate holds exactly however late the caller comes to collect frames;
 * only the release waits for the caller. Release times are monotonic unless the spec allows
 * reordering, so jitter never reorders a path's frames by default: a frame whose draw would
 * overtake the one before it leaves with it instead, so under load (frames closer together than
 * the jitter) delays bunch towards delay + jitter, as on a link that holds its queue in order.
 *
 * Frames are copied into one ring buffer per direction, in arrival order, and released from
 * it: queue and delay line are two ranges of the same ring (with `reorder`, a heap orders the
 * delay line and the ring's space comes back in arrival order).
 */

#include <stddef.h>
#include <stdint.h>

#include "pathemu-spec.h"

/* Per-frame bytes the caller keeps with a frame (mpt-pathemu: the virtio_net_hdr it came with). */
#define EMU_META_MAX 12

typedef struct EmuFrame {
        uint32_t size;          /* the record in the ring, header included */
        uint16_t len;           /* bytes of data */
        uint8_t state;
        uint8_t meta_len;
        uint64_t arrival;
        uint64_t release;
        uint8_t meta[EMU_META_MAX];
        uint8_t data[];
} EmuFrame;

typedef struct EmuCounters {
        uint64_t rx_packets, rx_bytes;                  /* every frame that arrived */
        uint64_t released_packets, released_bytes;      /* frames due for the other side */
        uint64_t queue_drops, queue_drop_bytes;         /* tail drop: the queue was full */
        uint64_t loss_drops, loss_drop_bytes;           /* lost on the wire (loss model) */
        uint64_t loss_bursts;                           /* runs of consecutive lost frames */
        uint64_t overflow_drops;                        /* no room in the ring (sized so that it never is) */
        uint64_t queue_bytes;                           /* now: waiting for or in serialisation */
        uint64_t queue_max_bytes;
} EmuCounters;

typedef enum EmuVerdict {
        EMU_QUEUED,
        EMU_DROP_QUEUE,
        EMU_DROP_OVERFLOW,
} EmuVerdict;

typedef struct EmuLink EmuLink;

/* SPEC must outlive the link. The trace starts at NOW. */
int emu_link_new(const EmuDirSpec *spec, uint64_t seed, uint64_t now, EmuLink **ret);
EmuLink *emu_link_free(EmuLink *l);

/* The trace starts over at NOW (phase 0). */
void emu_link_restart_trace(EmuLink *l, uint64_t now);

/* A frame of LEN bytes (and META_LEN <= EMU_META_MAX bytes of metadata) arrived at NOW, which
 * must not go back in time between calls. */
EmuVerdict emu_link_arrive(EmuLink *l, uint64_t now, const void *meta, size_t meta_len, const void *data,
                           size_t len);

/* Serialises what has finished by NOW: into the delay line, or lost. */
void emu_link_advance(EmuLink *l, uint64_t now);

/* The next frame due by NOW, in release order, or NULL. It stays valid (and unchanged) until the
 * next emu_link_arrive(), so a batch of them can be sent at once. */
const EmuFrame *emu_link_pop(EmuLink *l, uint64_t now);

/* When something may next be due (a lower bound), or EMU_TIME_INFINITY. */
uint64_t emu_link_next_wake(EmuLink *l);

const EmuCounters *emu_link_counters(const EmuLink *l);
/* The index of the trace phase in force at NOW. */
size_t emu_link_phase(const EmuLink *l, uint64_t now);
