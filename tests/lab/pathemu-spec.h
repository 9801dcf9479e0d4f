/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The path emulator's spec: what one emulated path does to the frames it carries, in each
 * direction. Parsed from "KEY=VALUE,KEY=VALUE,..." (EMU_SPEC_HELP lists the keys) into one phase
 * table per direction: a path without a trace has a single phase that lasts for ever. Pure: no
 * I/O except reading a trace file (trace-file=), libc only.
 *
 * Errors come back as -EINVAL with one line of text in the caller's buffer (no logging here).
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "macro.h"

#define EMU_NSEC_PER_USEC UINT64_C(1000)
#define EMU_NSEC_PER_MSEC UINT64_C(1000000)
#define EMU_NSEC_PER_SEC UINT64_C(1000000000)
#define EMU_TIME_INFINITY UINT64_MAX
/* A phase's rate when the spec sets none: frames are not serialised, nothing queues. */
#define EMU_RATE_UNLIMITED UINT64_MAX
/* A frame of the lab's 1500-byte links with its Ethernet header: what --check assumes. */
#define EMU_FRAME_DEFAULT 1514U
/* Default queue limit: 50 ms of the phase's rate, never fewer than EMU_LIMIT_MIN_FRAMES frames. */
#define EMU_LIMIT_DEFAULT_NS (50 * EMU_NSEC_PER_MSEC)
#define EMU_LIMIT_MIN_FRAMES 4U
#define EMU_PHASES_MAX 1024U
/* Room for one error message. */
#define EMU_ERROR_MAX 512
/* What one direction may ask us to buffer (queue + frames on the wire): beyond it, refuse. */
#define EMU_BUFFER_MAX (256ULL << 20)

typedef enum EmuDir {
        EMU_DIR_AB,             /* frames from the a side to the b side */
        EMU_DIR_BA,
        _EMU_DIR_MAX,
} EmuDir;

const char *emu_dir_to_string(EmuDir d); /* "a->b", "b->a" */

typedef enum EmuLossModel {
        EMU_LOSS_NONE,
        EMU_LOSS_RANDOM,        /* Bernoulli: each frame lost with probability p */
        EMU_LOSS_GE,            /* Gilbert-Elliott: two states, see EmuLoss */
} EmuLossModel;

/* Gilbert-Elliott: per frame, a good state moves to bad with probability p and a bad one back
 * with probability r (mean burst 1/r frames); then the frame is lost with probability `bad` in the
 * bad state and `good` in the good one (1-h and 1-k in the usual notation). Stationary loss:
 * (p * bad + r * good) / (p + r). */
typedef struct EmuLoss {
        EmuLossModel model;
        double p;
        double r;
        double bad;
        double good;
} EmuLoss;

double emu_loss_mean(const EmuLoss *l) _pure_;

typedef struct EmuPhase {
        uint64_t at;            /* ns from the trace's start; phase 0 starts at 0 */
        uint64_t rate;          /* bit/s of Ethernet frames; 0 stalls the link; EMU_RATE_UNLIMITED */
        uint64_t delay;         /* one-way, ns */
        uint64_t jitter;        /* ns; each frame's delay is delay +- a uniform draw up to this */
        uint64_t limit;         /* queue bytes (frames waiting for or in serialisation) */
        EmuLoss loss;
} EmuPhase;

typedef struct EmuDirSpec {
        EmuPhase *phases;       /* at least one, increasing `at` */
        size_t n_phases;
        uint64_t loop;          /* the trace starts over after this long; 0: the last phase holds */
        uint64_t limit_time;    /* the limit as time (ns), or 0 when given in bytes */
        bool reorder;           /* jitter may reorder frames (else release times stay monotonic) */
        bool traced;
} EmuDirSpec;

typedef struct EmuSpec {
        EmuDirSpec dir[_EMU_DIR_MAX];
        uint64_t seed;
        bool seed_set;
} EmuSpec;

/* Parses SPEC for frames of up to MAX_FRAME bytes (Ethernet header included). On error returns
 * -EINVAL (or -ENOMEM) with the reason in ERROR and leaves *ret empty. */
int emu_spec_parse(const char *spec, unsigned max_frame, EmuSpec *ret, char *error, size_t error_size);
void emu_spec_done(EmuSpec *spec);

/* The phase in force at T ns after the trace's start (with looping); its index in *ret_index. */
const EmuPhase *emu_dir_spec_phase_at(const EmuDirSpec *d, uint64_t t, size_t *ret_index);
/* When the phase after the one in force at T starts (ns from the trace's start, looping
 * included), or EMU_TIME_INFINITY when nothing changes after T. */
uint64_t emu_dir_spec_next_change(const EmuDirSpec *d, uint64_t t);

/* Bytes of storage a direction needs: its largest queue plus what its rate keeps on the wire
 * for its longest delay, with room for per-frame overhead. */
uint64_t emu_dir_spec_buffer_size(const EmuDirSpec *d);

/* The effective settings, one block per direction (mpt-pathemu --check). */
void emu_spec_print(const EmuSpec *spec, FILE *f);

/* For --help: the spec's syntax. */
extern const char emu_spec_help[];
