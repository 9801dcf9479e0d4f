/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the three parts of a worker share, and nothing else of mptd needs (worker.h is the
 * workers' API):
 *   worker.c   the thread: its state, its loop (worker_main()), starting and stopping it;
 *   send.c     the way out: TUN device -> scheduler -> sealing -> path sockets (worker_tx());
 *   receive.c  the way in: path sockets -> opening -> reorder buffer -> TUN device
 *              (worker_rx_ready(), worker_rx_process()).
 * The way of a packet in mptd(8), DATA PLANE. */

#include <linux/sockios.h>
#include <linux/udp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "byteorder.h"
#include "log.h"
#include "sandbox.h"
#include "session.h"
#include "worker.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
/* Most datagrams one UDP GSO send may carry (UDP_MAX_SEGMENTS is 64 on older kernels), and the
 * most payload bytes (the IP length field). */
#define GSO_SEGMENTS_MAX 64u
#define GSO_BYTES_MAX 65000u

/* epoll data of the worker's own file descriptors (a path's is its index) */
#define EV_TUN UINT64_C(0xffffffff)
#define EV_WAKE UINT64_C(0xfffffffe)

/* Sequence locks over what arrived (receive.c: rx_track()) and what went out (send.c:
 * worker_tx_mark()), which the learned scheduler reads from the main thread. */

static inline void seq_write_begin(uint32_t *seq) {
        __atomic_store_n(seq, *seq + 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void seq_write_end(uint32_t *seq) {
        __atomic_store_n(seq, *seq + 1, __ATOMIC_RELEASE);
}

static inline uint32_t seq_read_begin(const uint32_t *seq) {
        uint32_t s;

        while ((s = __atomic_load_n(seq, __ATOMIC_ACQUIRE)) & 1)
                ;
        return s;
}

static inline bool seq_read_retry(const uint32_t *seq, uint32_t s) {
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        return __atomic_load_n(seq, __ATOMIC_RELAXED) != s;
}

/* worker.c */
/* A receiving worker answers its flows itself while the tunnel is quiet. */
void worker_update_quiet(Worker *w);
/* Policy= counters of a class (a rule, or POLICY_CLASS_OTHER). */
void worker_policy_count(Worker *w, size_t class, WorkerPolicyCounter c);
void worker_policy_wait(Worker *w, size_t class, uint64_t waited);

/* receive.c */
/* Which Policy= rule a packet matches (-1: none). */
int worker_policy_rule(const Snapshot *s, const uint8_t *pkt, size_t len);
/* Delivers what waited in the reorder buffers past its deadline. */
void worker_expire_reorder(Worker *w);
/* Whether this worker receives paths and leaves sending to others. */
bool worker_rx_apart(const Worker *w);
/* Reads the ready paths in turns and handles what arrived. */
void worker_rx_ready(Worker *w, const Snapshot *s, unsigned *ready, unsigned n_ready);

/* send.c */
/* Loss repair: seals and sends a kept datagram again over path q; the path to send it on; a
 * request of the other end, queued; serving the queued requests. */
size_t worker_repair_send(Worker *w, const Snapshot *s, unsigned q, const uint8_t *m, size_t len, uint8_t *out,
                          uint64_t *first, uint64_t *last);
int worker_repair_path(const Worker *w, const Snapshot *s);
void worker_repair_request(Worker *w, const MptRepair *r);
void worker_repair_serve(Worker *w, const Snapshot *s);
/* Records that path p's counters first..last went out at now (for the learned scheduler). */
void worker_tx_mark(Worker *w, unsigned p, uint64_t first, uint64_t last, usec_t now);
/* Stops reading the TUN device while every path is behind its pace (until, in ns). */
void worker_tun_pause(Worker *w, bool pause, uint64_t until);
/* Reads the TUN device and sends what it read. */
void worker_tx(Worker *w, const Snapshot *s);
