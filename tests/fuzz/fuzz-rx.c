/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* mptd's whole receive path, as a receiving worker runs it after each recvmmsg():
 * worker_rx_process() (the path a datagram belongs to by its source; authentication,
 * decryption, anti-replay windows and epochs in secure mode; control frames to the main thread;
 * the reorder buffer and its pool of receive buffers; GRO towards the TUN device) and
 * worker_rx_expire(). The tunnel is built here without a kernel: one or two receiving workers
 * (taking turns: a batch of a path goes to the worker path_rx_worker() would give it, each expires
 * its lanes), a few paths with fixed remotes, and the TUN device's writes caught at link time
 * (-Wl,--wrap=write,--wrap=writev, see meson.build) and checked as they happen.
 *
 * The input is a configuration and a sequence of operations (see "The input" below) that make
 * datagrams: data packets and control frames (keepalives, path status, feedback, well-formed or
 * not), in secure mode sealed with the tunnel's key (so that they get past authentication) under
 * the epochs, sender paths, lanes and counters the input picks, or with another key, or with a header
 * that must be refused; arbitrary bytes; replays of earlier datagrams, intact or damaged.
 * They are grouped into UDP GRO messages and batches of messages, from sources the input picks,
 * with arrival times, expiry, and what the main thread does to the reorder buffer (a path down
 * or up, a reset; the learned scheduler's maximum delay, minimum hold and extra delays).
 *
 * What must hold (fail() says which did not):
 * - Every packet written to the TUN device is a well-formed IP packet that was sent: in secure
 *   mode one sealed here with the right key, never one sealed with another key or made up; in
 *   compat mode the inner packet of one of the datagrams. A GRO super-packet has a consistent
 *   virtio-net header (and the partial checksum the kernel expects) and cuts back, as the
 *   kernel's segmentation would (offload_segment()), into such packets.
 * - Secure mode: no datagram (epoch, sender path, lane, counter) is delivered twice; none of an epoch
 *   older than the newest one authenticated before it arrived; none that must be refused (our
 *   own epoch, a bad header, a cipher this end cannot open). Control events (keepalives, path
 *   status, feedback, new endpoints) come only from authenticated datagrams whose epoch and
 *   counter were not seen before (so a replay cannot move an endpoint), no more than there were;
 *   a feedback event only from a well-formed feedback frame, with its values; a control frame's
 *   event with the time its message arrived. In compat mode no feedback reaches the main thread.
 * - Secure mode: the receive tracks of the other end's paths (rx_track(), what the feedback we
 *   send is made of) count every datagram that authenticated, and no other, under its sender
 *   path, with a marker (counter, lane, arrival time) of a fresh datagram, and what was sent
 *   growing with every new marker, only with datagrams tracked; in compat mode they stay empty.
 * - With the reorder buffers (one per lane of the other end; compat mode has only lane 0), no
 *   sequence number of a lane is delivered twice, and none below one of its lane delivered before
 *   it unless the buffer counts it as late, between two resynchronisations.
 * - The counters add up: every datagram is counted once (as received data, a keepalive, a
 *   path-status event or a drop); every received data packet is delivered, held, or dropped for a
 *   counted reason; what is held is due within the maximum delay, and once that has passed,
 *   nothing is held. Then every buffer of the receive pool is free again, but for those the
 *   workers receive into (their references add up: none is lost, none freed twice).
 * - No crash, undefined behaviour or leak (the sanitizers of the libFuzzer build). */

#include <endian.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>

#include "offload.h"
#include "reorder.h"
#include "secure.h"
#include "tunnel.h"
#include "wire.h"
#include "worker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The TUN device: writes to this descriptor are caught (see __wrap_write()). */
ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __real_writev(int fd, const struct iovec *iov, int n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
ssize_t __wrap_writev(int fd, const struct iovec *iov, int n);

#define FUZZ_PATHS_MAX 4u
#define MSG_DATAGRAMS_MAX 64u   /* as the kernel's UDP GRO */
#define MSG_BYTES_MAX 65535u
#define HISTORY 32u             /* datagrams a replay can pick from */
#define FED_BYTES_MAX (4u << 20) /* per input, so that one stays quick */
#define INNER_MAX 1400u
#define CLOCK_START (UINT64_C(1) << 40)
/* The epochs a sealed datagram can have (epochs[]): three of the other end, in order; ours (a
 * reflected datagram); and the first one under a key from another PSK (a forgery). */
#define EPOCHS 5u
#define OWN_EPOCH UINT64_C(0x5000)
#define EPOCH_FORGED 4u

static void fail(const char *what, ...) _printf_(1, 2);
static void fail(const char *what, ...) {
        va_list ap;

        fputs("fuzz-rx: ", stderr);
        va_start(ap, what);
        vfprintf(stderr, what, ap);
        va_end(ap);
        fputc('\n', stderr);
        abort();
}

#define check(cond, ...)                         \
        do {                                     \
                if (!(cond))                     \
                        fail(__VA_ARGS__);       \
        } while (0)

static inline uint16_t rd16(const uint8_t *p) {
        return (uint16_t) (p[0] << 8 | p[1]);
}
static inline void wr16(uint8_t *p, uint16_t v) {
        p[0] = v >> 8;
        p[1] = v & 0xff;
}
static inline void wr32(uint8_t *p, uint32_t v) {
        p[0] = v >> 24;
        p[1] = (v >> 16) & 0xff;
        p[2] = (v >> 8) & 0xff;
        p[3] = v & 0xff;
}

/* ---- sets of pairs of 64-bit numbers (open addressing) ---- */

typedef struct Key {
        uint64_t a, b;
        bool used;
} Key;

typedef struct Set {
        Key *slots;
        size_t n, capacity;
} Set;

static uint64_t mix64(uint64_t k) {
        k ^= k >> 33;
        k *= UINT64_C(0xff51afd7ed558ccd);
        k ^= k >> 33;
        return k;
}

/* Adds (a, b); returns false when it was there already. */
static bool set_add(Set *s, uint64_t a, uint64_t b) {
        if (2 * (s->n + 1) > s->capacity) {
                Set bigger = { .capacity = s->capacity ? 2 * s->capacity : 256 };
                bigger.slots = calloc(bigger.capacity, sizeof(Key));
                check(bigger.slots, "out of memory");
                for (size_t i = 0; i < s->capacity; i++)
                        if (s->slots[i].used)
                                (void) set_add(&bigger, s->slots[i].a, s->slots[i].b);
                free(s->slots);
                *s = bigger;
        }
        for (size_t i = mix64(mix64(a) ^ b) & (s->capacity - 1);; i = (i + 1) & (s->capacity - 1)) {
                Key *k = &s->slots[i];
                if (k->used && k->a == a && k->b == b)
                        return false;
                if (!k->used) {
                        *k = (Key) { .a = a, .b = b, .used = true };
                        s->n++;
                        return true;
                }
        }
}

static void set_clear(Set *s) {
        s->slots = mfree(s->slots);
        s->n = s->capacity = 0;
}

/* ---- the input ---- */

typedef struct Input {
        const uint8_t *p;
        size_t n;
} Input;

/* Past the end, the input reads as zeros (and the loop over operations stops). */
static uint8_t in8(Input *in) {
        if (in->n == 0)
                return 0;
        in->n--;
        return *in->p++;
}

static uint16_t in16(Input *in) {
        uint16_t hi = in8(in);
        return (uint16_t) (hi << 8 | in8(in));
}

static uint32_t in32(Input *in) {
        uint32_t hi = in16(in);
        return hi << 16 | in16(in);
}

/* ---- what was sent ---- */

typedef enum RecKind {
        REC_DATA,
        REC_KEEPALIVE,
        REC_PATH_STATUS,
        REC_FEEDBACK,
} RecKind;

/* A datagram made here (its tag, in the payload of a data packet, is its index). */
typedef struct Rec {
        RecKind kind;
        bool authentic; /* secure mode: sealed with the right key */
        /* and in a form that may pass (not of our epoch, a valid header, a cipher we can open):
         * then only its epoch and counter, or another datagram accepted with them, can make the
         * worker refuse it */
        bool acceptable;
        uint64_t epoch;
        uint16_t path_id;
        uint8_t lane;
        uint64_t counter;
        bool has_seq;
        uint32_t seq;
        bool fed;
        uint64_t epoch_floor; /* the peer epoch when it was first handed to the worker */
        uint8_t *wire; /* the datagram */
        size_t wire_len;
        MptFeedback *fb; /* REC_FEEDBACK, secure mode: what it says when it is well-formed; else NULL */
} Rec;

/* A packet that may come out of the TUN device: in secure mode the inner packet of a record (which
 * says whether it may), in compat mode of any datagram (as the worker cuts the messages into
 * datagrams). */
typedef struct Cand {
        uint64_t hash;
        uint8_t *bytes;
        size_t len;
        bool has_seq;
        uint8_t lane;
        uint32_t seq;
        int rec; /* -1: none */
        int next; /* in its hash bucket */
} Cand;

#define BUCKETS 4096u

/* A datagram handed to the worker lately, for replays. */
typedef struct Past {
        uint8_t *bytes;
        size_t len;
        int origin; /* the record it is a copy of, maybe damaged; -1: none */
} Past;

/* One message being put together: datagrams of one source, all of the first one's size but the
 * last, as UDP GRO gives them. */
typedef struct Msg {
        uint8_t *buf; /* MSG_BYTES_MAX */
        size_t len;
        unsigned n; /* datagrams */
        size_t natural; /* the first datagram's size */
        bool closed;    /* a shorter datagram ended it */
        bool truncated;
        bool seg_override;
        size_t seg;
        unsigned source;
        usec_t arrival;
        size_t offs[MSG_DATAGRAMS_MAX]; /* where each datagram starts */
        int recs[MSG_DATAGRAMS_MAX];    /* the record each is an intact copy of, -1: none */
} Msg;

typedef struct Flow {
        uint32_t tcp_seq;
        uint16_t ip_id;
} Flow;

#define SOURCES 9u

typedef struct Fuzz {
        /* configuration */
        bool secure, reorder, vnet_hdr, gro, aes;
        unsigned n_paths, n_workers;
        usec_t max_delay;

        Tunnel *t;
        Worker *workers[2];
        Worker *w; /* the one the next batch goes to */
        Snapshot *s;
        MptSockaddr sources[SOURCES];

        usec_t clock;
        unsigned socket_path; /* the path socket the next batch arrives on */
        unsigned source;      /* the source of the next message */
        Msg msgs[WORKER_RX_MMSG];
        unsigned n_msgs;
        size_t fed_bytes;

        Rec *recs;
        size_t n_recs, recs_capacity;
        Cand *cands;
        size_t n_cands, cands_capacity;
        int buckets[BUCKETS];
        Past past[HISTORY];
        unsigned n_past;

        uint32_t gre_seq[8]; /* the next sequence number per lane (secure mode: 0..7; compat: 0) */
        uint64_t counters[EPOCHS][MPT_PATHS_MAX + 1][MPT_SECURE_LANES]; /* the next, per epoch, sender path, lane */
        Flow flows[4][4];

        /* what the TUN device got */
        uint64_t sink_packets;
        Set identities;   /* (epoch, sender path, lane, counter) delivered */
        Set consumed;     /* (epoch, sender path, lane, our path; counter) of acceptable datagrams the worker saw */
        Set seqs;         /* (lane, sequence number) delivered since the last resynchronisation */
        uint32_t newest[MPT_SECURE_LANES]; /* of them, the newest of each lane */
        uint64_t have_newest; /* a bit per lane */
        struct {
                uint8_t lane;
                uint32_t seq;
        } *call_seqs; /* delivered in this call, checked against seqs at its end */
        size_t n_call_seqs, call_seqs_capacity;
        uint64_t main_delivered; /* delivered by the main thread's reorder reset */
        uint64_t resets;
        uint64_t gso_writes, events, feedback_events; /* for summary() */

        /* Secure mode, during flush_batch(): the datagrams that may authenticate (intact copies
         * of acceptable records whose epoch, sender path and counter the worker had not seen),
         * and the message each is in; used: a feedback event matched it. */
        struct {
                int rec;
                unsigned msg;
                bool used;
        } fresh[WORKER_RX_MMSG * MSG_DATAGRAMS_MAX];
        unsigned n_fresh;
} Fuzz;

static int sink_fd = -EBADF;
static Fuzz *current;
static MptProfile profile;
static MptSecureKeys epoch_keys[EPOCHS];
static bool have_aes;
static uint8_t *msg_buffers;

static const uint64_t epochs[EPOCHS] = { 0x1000, 0x2000, 0x3000, OWN_EPOCH, 0x1000 };

static void setup_once(void) {
        static const uint8_t other_psk[MPT_KEY_SIZE] = { 0xee };

        if (sink_fd >= 0)
                return;
        check(mpt_secure_init() >= 0, "libcrypto");
        have_aes = mpt_secure_aes_available();
        for (size_t i = 0; i < MPT_KEY_SIZE; i++)
                profile.tunnel.psk.bytes[i] = (uint8_t) (i * 7 + 1);
        profile.tunnel.psk.set = true;
        for (unsigned i = 0; i < EPOCHS; i++)
                check(mpt_secure_derive(i == EPOCH_FORGED ? other_psk : profile.tunnel.psk.bytes, epochs[i],
                                        have_aes, &epoch_keys[i]) >= 0,
                      "derive");
        sink_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        check(sink_fd >= 0, "eventfd");
        msg_buffers = malloc((size_t) WORKER_RX_MMSG * MSG_BYTES_MAX);
        check(msg_buffers, "out of memory");
}

/* ---- the paths and sources ---- */

static const uint8_t topologies[4][FUZZ_PATHS_MAX] = {
        { 0, 1, 2, 3 }, /* a socket per path */
        { 0, 0, 0, 0 }, /* one socket for all */
        { 0, 0, 1, 1 },
        { 0, 1, 1, 1 },
};

static void path_remote(unsigned i, bool v6, MptAddress *ret_addr, uint16_t *ret_port) {
        *ret_addr = (MptAddress) { .family = v6 ? AF_INET6 : AF_INET };
        if (v6) {
                ret_addr->addr.bytes[0] = 0x20;
                ret_addr->addr.bytes[1] = 0x01;
                ret_addr->addr.bytes[2] = 0x0d;
                ret_addr->addr.bytes[3] = 0xb8;
                ret_addr->addr.bytes[15] = (uint8_t) (1 + i);
        } else {
                ret_addr->addr.bytes[0] = 192;
                ret_addr->addr.bytes[2] = 2;
                ret_addr->addr.bytes[3] = (uint8_t) (1 + i);
        }
        *ret_port = (uint16_t) (4754 + i);
}

/* Sources 0..3: path (i % n_paths)'s remote; 4: path 0's remote as an IPv4-mapped IPv6 address
 * (the same source to the worker); 5, 6: new sources; 7: path 0's address, another port; 8: no
 * IP source at all. */
static void make_sources(Fuzz *fz) {
        for (unsigned c = 0; c < SOURCES; c++) {
                MptSockaddr *sa = &fz->sources[c];
                const SnapshotPath *p0 = &fz->s->paths[0];
                MptAddress a;

                *sa = (MptSockaddr) {};
                switch (c) {
                case 0 ... 3:
                        *sa = fz->s->paths[c % fz->n_paths].remote;
                        break;
                case 4:
                        if (p0->remote_addr.family == AF_INET) {
                                sa->in6.sin6_family = AF_INET6;
                                sa->in6.sin6_port = htobe16(p0->remote_port);
                                sa->in6.sin6_addr.s6_addr[10] = sa->in6.sin6_addr.s6_addr[11] = 0xff;
                                memcpy(&sa->in6.sin6_addr.s6_addr[12], &p0->remote_addr.addr.in, 4);
                        } else
                                *sa = p0->remote;
                        break;
                case 5:
                        a = (MptAddress) { .family = AF_INET, .addr.bytes = { 198, 51, 100, 7 } };
                        (void) sockaddr_from_address(&a, 4754, 0, sa);
                        break;
                case 6:
                        path_remote(0x70, true, &a, &(uint16_t) { 0 });
                        (void) sockaddr_from_address(&a, 4760, 0, sa);
                        break;
                case 7:
                        (void) sockaddr_from_address(&p0->remote_addr, (uint16_t) (p0->remote_port + 100), 0, sa);
                        break;
                default:
                        sa->sa.sa_family = AF_UNIX;
                        break;
                }
        }
}

/* What the worker should make of a message on the socket of path `path` from source c, as
 * demux() in receive.c documents it: the path (>= 0), -1 (dropped), -2 (only a keepalive can
 * tell, the rest is dropped). */
static int expected_path(const Fuzz *fz, unsigned path, unsigned c) {
        const SnapshotPath *sp = &fz->s->paths[path];
        MptAddress a;
        uint16_t port;

        if (sockaddr_to_address(&fz->sources[c], &a, &port) < 0)
                return -1;
        if (address_equal(&sp->remote_addr, &a) && sp->remote_port == port)
                return (int) path;
        for (unsigned i = 0; i < fz->n_paths; i++)
                if (fz->s->paths[i].endpoint == sp->endpoint && address_equal(&fz->s->paths[i].remote_addr, &a) &&
                    fz->s->paths[i].remote_port == port)
                        return (int) i;
        if (sp->endpoint_paths == 1)
                return sp->pin_remote ? -1 : (int) path;
        for (unsigned i = 0; i < fz->n_paths; i++)
                if (fz->s->paths[i].endpoint == sp->endpoint && !fz->s->paths[i].pin_remote)
                        return -2;
        return -1;
}

/* ---- the tunnel ---- */

/* The reorder buffer's maximum delays, and the minimum hold of gaps as a part of one: none, a
 * quarter, a half, all of it (what tunnel_new() starts with, before the learned scheduler has
 * measured the paths' delay spread). */
static const usec_t delays[4] = {
        2 * USEC_PER_MSEC, 10 * USEC_PER_MSEC, 50 * USEC_PER_MSEC, USEC_PER_SEC,
};

static usec_t min_hold_of(unsigned choice, usec_t max_delay) {
        return choice >= 3 ? max_delay : choice * max_delay / 4;
}

static int fuzz_new(Input *in, Fuzz **ret) {
        uint8_t c0 = in8(in), c1 = in8(in), c2 = in8(in), c3 = in8(in);
        static const uint32_t windows[8] = { 1, 2, 4, 16, 64, 256, 1024, 4096 };
        Fuzz *fz;
        Tunnel *t;
        int r;

        fz = calloc(1, sizeof(Fuzz));
        if (!fz)
                return -ENOMEM;
        fz->secure = c0 & 1;
        fz->reorder = c0 & 2;
        fz->vnet_hdr = c0 & 4;
        fz->gro = c0 & 8;
        fz->aes = (c0 & 16) && have_aes;
        fz->n_paths = 1 + (c0 >> 5 & 3);
        fz->n_workers = c1 & 0x40 ? 2 : 1;
        fz->clock = CLOCK_START;
        for (unsigned i = 0; i < BUCKETS; i++)
                fz->buckets[i] = -1;
        for (unsigned i = 0; i < ELEMENTSOF(fz->counters); i++)
                for (unsigned j = 0; j < ELEMENTSOF(fz->counters[i]); j++)
                        for (unsigned k = 0; k < ELEMENTSOF(fz->counters[i][j]); k++)
                                fz->counters[i][j][k] = 1;
        for (unsigned m = 0; m < WORKER_RX_MMSG; m++)
                fz->msgs[m].buf = msg_buffers + (size_t) m * MSG_BYTES_MAX;
        for (unsigned l = 0; l < ELEMENTSOF(fz->gre_seq); l++)
                fz->gre_seq[l] = (uint32_t) c3 << 24 ^ l << 20;

        /* What tunnel_new() sets up for the receive side. */
        t = fz->t = calloc(1, sizeof(Tunnel));
        if (!t)
                return -ENOMEM;
        t->peers = calloc(1, sizeof(Peer *));
        if (!t->peers)
                return -ENOMEM;
        r = peer_new(t, 0, &t->peers[0]);
        if (r < 0)
                return r;
        t->n_peers = 1;
        t->profile = &profile;
        t->name = "fuzz";
        t->control_eventfd = -EBADF;
        pthread_mutex_init(&t->control_lock, NULL);
        /* Every worker receives (as without receiving and sending workers apart), through one
         * TUN queue. */
        t->n_workers = fz->n_workers;
        t->workers = fz->workers;
        t->tun.fds = &sink_fd;
        t->tun.n_fds = 1;
        t->tun.vnet_hdr = fz->vnet_hdr;
        t->mtu = 1400;
        fz->max_delay = delays[c2 >> 3 & 3];
        r = rx_shared_new(fz->reorder ? windows[c2 & 7] : 0, fz->max_delay, &t->peers[0]->rx);
        if (r < 0)
                return r;
        if (fz->secure) {
                t->secure = true;
                t->aes = fz->aes;
                t->peers[0]->epoch = OWN_EPOCH;
                r = rx_shared_set_secure(t->peers[0]->rx, false, OWN_EPOCH);
                if (r < 0)
                        return r;
        }
        if (fz->reorder) {
                rx_shared_set_hold(t->peers[0]->rx, fz->max_delay, min_hold_of(c2 >> 5 & 3, fz->max_delay));
                t->peers[0]->reorder_enabled = true;
                r = worker_pool_setup(t);
                if (r < 0)
                        return r;
        }
        dataplane_options.batch = fz->gro ? WORKER_BATCH : 1;
        for (unsigned i = 0; i < fz->n_workers; i++) {
                r = worker_new(t, i, sink_fd, &fz->workers[i]);
                if (r < 0)
                        return r;
        }
        fz->w = fz->workers[0];

        fz->s = calloc(1, sizeof(Snapshot) + FUZZ_PATHS_MAX * sizeof(SnapshotPath));
        if (!fz->s)
                return -ENOMEM;
        fz->s->n_paths = fz->n_paths;
        fz->s->sequence = fz->reorder;
        for (unsigned i = 0; i < fz->n_paths; i++) {
                SnapshotPath *sp = &fz->s->paths[i];

                for (unsigned k = 0; k < MPT_WORKERS_MAX; k++)
                        sp->fds[k] = -EBADF;
                path_remote(i, (c0 & 0x80) && (i & 1), &sp->remote_addr, &sp->remote_port);
                sp->remote_len = sockaddr_from_address(&sp->remote_addr, sp->remote_port, 0, &sp->remote);
                sp->pin_remote = c1 >> (2 + i) & 1;
                sp->endpoint = topologies[c1 & 3][i];
        }
        for (unsigned i = 0; i < fz->n_paths; i++)
                for (unsigned k = 0; k < fz->n_paths; k++)
                        fz->s->paths[i].endpoint_paths += fz->s->paths[k].endpoint == fz->s->paths[i].endpoint;
        make_sources(fz);
        *ret = fz;
        return 0;
}

static void fuzz_free(Fuzz *fz) {
        Tunnel *t;

        if (!fz)
                return;
        t = fz->t;
        for (unsigned i = 0; i < ELEMENTSOF(fz->workers); i++)
                worker_free(fz->workers[i]);
        if (t) {
                if (t->peers)
                        peer_free(t->peers[0]);
                free(t->peers);
                worker_pool_free(t);
                free(t->control_queue);
                pthread_mutex_destroy(&t->control_lock);
                free(t);
        }
        free(fz->s);
        for (size_t i = 0; i < fz->n_recs; i++) {
                free(fz->recs[i].wire);
                free(fz->recs[i].fb);
        }
        free(fz->recs);
        for (size_t i = 0; i < fz->n_cands; i++)
                free(fz->cands[i].bytes);
        free(fz->cands);
        for (unsigned i = 0; i < HISTORY; i++)
                free(fz->past[i].bytes);
        set_clear(&fz->identities);
        set_clear(&fz->consumed);
        set_clear(&fz->seqs);
        free(fz->call_seqs);
        free(fz);
}

/* ---- packets ---- */

/* Where a TCP packet's TCP header starts (its checksum is at +16, its urgent pointer at +18); 0:
 * not TCP. */
static size_t tcp_offset(const uint8_t *pkt, size_t len) {
        size_t ip_len;

        if (len >= 20 && pkt[0] >> 4 == 4 && pkt[9] == IPPROTO_TCP)
                ip_len = (size_t) (pkt[0] & 0x0f) * 4;
        else if (len >= 40 && pkt[0] >> 4 == 6 && pkt[6] == IPPROTO_TCP)
                ip_len = 40;
        else
                return 0;
        return ip_len + 20 <= len ? ip_len : 0;
}

/* The bytes that identify a packet, for matching what the TUN device got with what was sent: all
 * of them but a TCP header's checksum and urgent pointer, which segmenting a GRO super-packet
 * computes anew (the checksum) or copies from its first segment (the urgent pointer, meaningless
 * without URG, which is never coalesced). */
static bool skipped(size_t tcp, size_t i) {
        return tcp > 0 && i >= tcp + 16 && i < tcp + 20;
}

static uint64_t packet_hash(const uint8_t *pkt, size_t len) {
        size_t tcp = tcp_offset(pkt, len);
        uint64_t h = UINT64_C(0xcbf29ce484222325) ^ len;

        for (size_t i = 0; i < len; i++)
                if (!skipped(tcp, i))
                        h = (h ^ pkt[i]) * UINT64_C(0x100000001b3);
        return h;
}

static bool packet_same(const uint8_t *a, const uint8_t *b, size_t len) {
        size_t tcp = tcp_offset(a, len);

        for (size_t i = 0; i < len; i++)
                if (a[i] != b[i] && !skipped(tcp, i))
                        return false;
        return true;
}

static void add_cand(Fuzz *fz, const uint8_t *pkt, size_t len, bool has_seq, uint8_t lane, uint32_t seq,
                     int rec) {
        Cand *c;

        if (fz->n_cands == fz->cands_capacity) {
                size_t n = fz->cands_capacity ? 2 * fz->cands_capacity : 64;
                Cand *a = realloc(fz->cands, n * sizeof(Cand));
                check(a, "out of memory");
                fz->cands = a;
                fz->cands_capacity = n;
        }
        c = &fz->cands[fz->n_cands];
        *c = (Cand) {
                .hash = packet_hash(pkt, len),
                .bytes = memdup(pkt, len ?: 1),
                .len = len,
                .has_seq = has_seq,
                .lane = lane,
                .seq = seq,
                .rec = rec,
                .next = fz->buckets[packet_hash(pkt, len) % BUCKETS],
        };
        check(c->bytes, "out of memory");
        fz->buckets[c->hash % BUCKETS] = (int) fz->n_cands++;
}

static int add_rec(Fuzz *fz, const Rec *r, const uint8_t *wire, size_t len) {
        Rec *new;

        if (fz->n_recs == fz->recs_capacity) {
                size_t n = fz->recs_capacity ? 2 * fz->recs_capacity : 64;
                Rec *a = realloc(fz->recs, n * sizeof(Rec));
                check(a, "out of memory");
                fz->recs = a;
                fz->recs_capacity = n;
        }
        new = &fz->recs[fz->n_recs];
        *new = *r;
        new->wire = memdup(wire, len);
        check(new->wire, "out of memory");
        if (r->fb) {
                new->fb = memdup(r->fb, sizeof(MptFeedback));
                check(new->fb, "out of memory");
        }
        new->wire_len = len;
        return (int) fz->n_recs++;
}

static uint16_t l4_checksum(int family, const uint8_t *ip, const uint8_t *l4, size_t l4_len, uint8_t proto) {
        uint32_t sum = family == AF_INET ? csum_pseudo(AF_INET, ip + 12, ip + 16, proto, (uint32_t) l4_len)
                                         : csum_pseudo(AF_INET6, ip + 8, ip + 24, proto, (uint32_t) l4_len);
        return csum_fold(csum_add(sum, l4, l4_len));
}

/* An inner packet: TCP or UDP, IPv4 or IPv6, one of four flows; its payload starts with the
 * tag. TCP segments of a flow follow each other (consecutive sequence numbers and IP IDs), so
 * that GRO coalesces them, unless `jump`. how: bit 0 IPv6, 1 UDP, 2 PSH, 3 TCP options, 4-5 the
 * flow, 6 the IPv4 reserved flag, 7 ECN CE. Returns its length. */
static size_t build_packet(Fuzz *fz, uint8_t *out, uint8_t how, size_t payload, uint32_t tag, uint32_t jump) {
        bool v6 = how & 1, udp = how & 2, psh = how & 4, options = how & 8, reserved = how & 0x40, ce = how & 0x80;
        unsigned flow = how >> 4 & 3;
        Flow *f = &fz->flows[(v6 ? 2 : 0) + udp][flow];
        size_t ip_len = v6 ? 40 : 20, l4_len = udp ? 8 : options ? 32 : 20, len;
        uint8_t *l4 = out + ip_len;

        payload = MAX(payload, (size_t) 4);
        len = ip_len + l4_len + payload;
        memset(out, 0, ip_len + l4_len);
        if (v6) {
                out[0] = 0x60;
                out[1] = ce ? 0x30 : 0;
                out[3] = (uint8_t) flow;
                wr16(out + 4, (uint16_t) (len - 40));
                out[6] = udp ? IPPROTO_UDP : IPPROTO_TCP;
                out[7] = 64;
                out[8] = out[24] = 0xfd;
                out[23] = 1;
                out[39] = (uint8_t) (2 + flow);
        } else {
                out[0] = 0x45;
                out[1] = (flow & 1 ? 0x10 : 0) | (ce ? 3 : 0);
                wr16(out + 2, (uint16_t) len);
                wr16(out + 4, f->ip_id++);
                out[6] = reserved ? 0xc0 : 0x40; /* DF */
                out[8] = 64;
                out[9] = udp ? IPPROTO_UDP : IPPROTO_TCP;
                out[12] = out[16] = 10;
                out[15] = 1;
                out[18] = (uint8_t) flow;
                out[19] = 2;
                wr16(out + 10, mpt_checksum(out, 20));
        }
        wr16(l4, (uint16_t) (40000 + flow));
        wr16(l4 + 2, 5201);
        if (udp)
                wr16(l4 + 4, (uint16_t) (l4_len + payload));
        else {
                if (jump)
                        f->tcp_seq += jump;
                wr32(l4 + 4, f->tcp_seq);
                f->tcp_seq += (uint32_t) payload;
                wr32(l4 + 8, 0x10000000u + flow);
                l4[12] = (uint8_t) (l4_len / 4) << 4;
                l4[13] = 0x10 | (psh ? 0x08 : 0); /* ACK, PSH */
                wr16(l4 + 14, 512);
                if (options) {
                        l4[20] = l4[21] = 1; /* NOP NOP, timestamps */
                        l4[22] = 8;
                        l4[23] = 10;
                        wr32(l4 + 24, 1000 + flow);
                }
        }
        out[ip_len + l4_len] = 0xa5;
        out[ip_len + l4_len + 1] = (uint8_t) (tag >> 16);
        out[ip_len + l4_len + 2] = (uint8_t) (tag >> 8);
        out[ip_len + l4_len + 3] = (uint8_t) tag;
        for (size_t i = 4; i < payload; i++)
                out[ip_len + l4_len + i] = (uint8_t) (tag * 31 + i);
        {
                uint16_t c = l4_checksum(v6 ? AF_INET6 : AF_INET, out, l4, l4_len + payload,
                                         udp ? IPPROTO_UDP : IPPROTO_TCP);
                wr16(l4 + (udp ? 6 : 16), udp ? c ?: 0xffff : c);
        }
        return len;
}

/* ---- messages ---- */

static void flush_batch(Fuzz *fz);

static Msg *open_msg(Fuzz *fz) {
        Msg *m;

        if (fz->n_msgs == WORKER_RX_MMSG)
                flush_batch(fz);
        m = &fz->msgs[fz->n_msgs++];
        m->len = 0;
        m->n = 0;
        m->natural = 0;
        m->closed = m->truncated = m->seg_override = false;
        m->seg = 0;
        m->source = fz->source;
        m->arrival = fz->clock;
        return m;
}

/* Appends a datagram (wire bytes) to the message being put together, or to a new one where it
 * does not fit (as UDP GRO would). origin: the record it is a copy of, maybe damaged; -1: none. */
static void feed(Fuzz *fz, const uint8_t *d, size_t len, int origin) {
        Msg *m = fz->n_msgs > 0 ? &fz->msgs[fz->n_msgs - 1] : NULL;
        int rec = -1;
        Past *p;

        /* A damaged copy may have been damaged back. */
        if (origin >= 0 && fz->recs[origin].wire_len == len && memcmp(fz->recs[origin].wire, d, len) == 0)
                rec = origin;

        len = MIN(len, (size_t) MSG_BYTES_MAX);
        fz->fed_bytes += len;
        if (!m || (m->n > 0 && (len > m->natural || len == 0 || m->closed || m->n >= MSG_DATAGRAMS_MAX ||
                                m->len + len > MSG_BYTES_MAX)))
                m = open_msg(fz);
        memcpy(m->buf + m->len, d, len);
        m->offs[m->n] = m->len;
        m->recs[m->n] = rec;
        m->len += len;
        if (m->n++ == 0)
                m->natural = len;
        else if (len < m->natural)
                m->closed = true;
        if (len == 0)
                m->closed = true;

        p = &fz->past[fz->n_past++ % HISTORY];
        free(p->bytes);
        p->bytes = malloc(len ?: 1);
        check(p->bytes, "out of memory");
        memcpy(p->bytes, d, len);
        p->len = len;
        p->origin = origin;
}

/* What identifies a sealed datagram: epoch, sender path and lane (the first of the pair), counter. */
static uint64_t identity(const Rec *r) {
        return r->epoch << 16 | (uint64_t) r->lane << 8 | r->path_id;
}

/* Secure mode: seals plaintext buf + MPT_SECURE_HEADER_SIZE (len bytes) in place, on r->lane. e: bits 0-2
 * the epoch (epochs[]), 3-5 the sender path id, 6-7 both 3: a path id out of range. how: bit 0
 * AES-256-GCM (where the CPU has it), 1 flag A (where the tunnel has AES), 2 a reserved flag,
 * 3-4 the counter (below), 5-6 another header: a lane out of range, version 1's type byte, a handshake
 * message's type byte; 7 flag G flipped (the other cipher claimed). */
static size_t seal(Fuzz *fz, Input *in, uint8_t *buf, size_t len, Rec *r) {
        uint8_t e = in8(in), how = in8(in);
        unsigned ei = (e & 7) % EPOCHS;
        uint64_t *next;
        MptCipher cipher = (how & 1) && have_aes ? MPT_CIPHER_AES256_GCM : MPT_CIPHER_CHACHA20_POLY1305;
        uint8_t flags = (how & 2) && fz->aes ? MPT_SECURE_FLAG_AES : 0;
        size_t n;

        if (how & 4)
                flags |= 0x80; /* a reserved bit: bad-header */
        r->path_id = (uint16_t) (e >> 3 & 7);
        if (e >> 6 == 3)
                r->path_id = MPT_PATHS_MAX; /* out of range: bad-header */
        next = &fz->counters[ei][r->path_id][r->lane];
        /* Usually the next counter; or a little back or ahead (reordering, replays of a counter
         * with other contents); or a jump (behind the window, near the end of the counter space). */
        switch (how >> 3 & 3) {
        case 0:
                r->counter = (*next)++;
                break;
        case 1:
                r->counter = *next + (uint64_t) (int64_t) (int8_t) in8(in);
                break;
        case 2:
                r->counter = *next - (uint64_t) in16(in);
                break;
        default:
                r->counter = in8(in) & 1 ? UINT64_MAX - in8(in) : *next + ((uint64_t) in16(in) << 4);
                *next = r->counter + 1;
                break;
        }
        r->epoch = epochs[ei];
        r->authentic = ei != EPOCH_FORGED;
        r->acceptable = r->authentic && r->epoch != OWN_EPOCH && r->path_id < MPT_PATHS_MAX && !(flags & 0x80) &&
                        (cipher != MPT_CIPHER_AES256_GCM || fz->aes) && !(how & 0xe0);
        /* (the header is sealed well-formed, then spoiled: mpt_secure_seal() writes only valid ones) */
        n = mpt_secure_seal(buf, len, &epoch_keys[ei], cipher, flags & MPT_SECURE_FLAG_AES,
                            (MptSecureSender) {
                                    .path_id = r->path_id < MPT_PATHS_MAX ? (uint8_t) r->path_id : 0,
                                    .lane = r->lane,
                                    .counter = r->counter,
                            });
        check(n == len + MPT_SECURE_OVERHEAD, "seal");
        buf[1] |= flags & ~MPT_SECURE_FLAG_AES;
        buf[2] = (uint8_t) r->path_id;
        switch (how >> 5 & 3) {
        case 1:
                buf[3] = (uint8_t) (MPT_SECURE_LANES + e); /* a lane that does not exist: bad-header */
                break;
        case 2:
                /* version 1 (bad-version) */
                buf[0] = cipher == MPT_CIPHER_AES256_GCM ? MPT_SECURE_V1_AESGCM : MPT_SECURE_V1_CHACHA;
                break;
        case 3:
                buf[0] = (uint8_t) (MPT_SECURE_V2_TRANSPORT + 1 + (e & 3)); /* a handshake message: bad-version */
                break;
        default:
                break;
        }
        if (how & 0x80)
                buf[1] ^= MPT_SECURE_FLAG_AESGCM; /* auth-failed, or bad-version without AES */
        return n;
}

/* A data datagram: GRE header (with a sequence number or not, sometimes a key or checksum) and
 * an inner packet. Its record's index is the tag in its payload. gre: bit 0 a sequence number, 1
 * a jump in the sequence, 2 a GRE key, 3 a GRE checksum, 4 a jump in the TCP sequence, 5-7 the
 * lane (secure mode; each lane has its own sequence numbers). */
static void op_data(Fuzz *fz, Input *in) {
        uint8_t how = in8(in), gre = in8(in), size = in8(in);
        uint8_t buf[MPT_SECURE_HEADER_SIZE + MPT_GRE_HEADER_MAX + INNER_MAX + MPT_SECURE_TAG_SIZE];
        uint8_t *g = buf + MPT_SECURE_HEADER_SIZE, *inner;
        Rec r = { .kind = REC_DATA, .authentic = true, .lane = fz->secure ? gre >> 5 : 0 };
        uint32_t *gre_seq = &fz->gre_seq[r.lane];
        size_t gl = 4, len;
        uint32_t jump = 0;
        uint16_t flags = 0;
        int i;

        if (gre & 1) {
                /* Usually the next one; or a little back or ahead: what paths of different
                 * delays make of the order, duplicates, old ones; or a jump (a restart). */
                int8_t d = (int8_t) in8(in);

                r.has_seq = true;
                r.seq = *gre_seq + (uint32_t) (int32_t) d;
                if (d >= 0)
                        *gre_seq = r.seq + 1;
                if (gre & 2) {
                        r.seq = *gre_seq + in32(in);
                        *gre_seq = r.seq + 1;
                }
                flags |= MPT_GRE_S;
        }
        if (gre & 4)
                flags |= MPT_GRE_K;
        if (gre & 8)
                flags |= MPT_GRE_C;
        if (gre & 16)
                jump = in16(in);
        gl += (flags & MPT_GRE_C ? 4 : 0) + (flags & MPT_GRE_K ? 4 : 0) + (r.has_seq ? 4 : 0);
        inner = g + gl;
        i = (int) fz->n_recs;
        len = build_packet(fz, inner, how, (size_t) size * 5, (uint32_t) i, jump);
        memset(g, 0, gl);
        wr16(g, flags);
        wr16(g + 2, how & 1 ? MPT_ETH_P_IPV6 : MPT_ETH_P_IP);
        if (r.has_seq)
                wr32(g + gl - 4, r.seq);
        if (flags & MPT_GRE_K)
                wr32(g + 4 + (flags & MPT_GRE_C ? 4 : 0), 0x12345678);
        if (flags & MPT_GRE_C)
                wr16(g + 4, mpt_checksum(g, gl + len));
        if (fz->secure) {
                /* (a candidate even when it will be sealed with the wrong key: the record says so) */
                add_cand(fz, inner, len, r.has_seq, r.lane, r.seq, i);
                len = seal(fz, in, buf, gl + len, &r);
                feed(fz, buf, len, add_rec(fz, &r, buf, len));
        } else {
                len += gl;
                feed(fz, g, len, add_rec(fz, &r, g, len));
        }
}

/* A keepalive (plain or extended) or path-status frame; in secure mode on lane v >> 5, or on the
 * control lane (where mptd's main thread sends them) for 7. */
static void op_control(Fuzz *fz, Input *in) {
        uint8_t how = in8(in), v = in8(in);
        uint8_t buf[MPT_SECURE_HEADER_SIZE + 128 + MPT_SECURE_TAG_SIZE];
        uint8_t *g = buf + MPT_SECURE_HEADER_SIZE;
        Rec r = { .authentic = true, .lane = fz->secure ? (v >> 5 == 7 ? MPT_SECURE_LANE_CONTROL : v >> 5) : 0 };
        MptAddress a = { .family = AF_INET, .addr.bytes = { 10, 0, 0, 1 } };
        size_t len;

        if (how & 1) {
                MptPathStatus ps = {
                        .ip_version = how & 2 ? 6 : 4,
                        .src_tun = a,
                        .session = v & 1 ? 0 : 0x1234,
                        .path_token = 1 + (v >> 1 & 3),
                        .flags = how >> 4,
                };
                r.kind = REC_PATH_STATUS;
                len = mpt_path_status_encode(g, 128, &ps);
        } else {
                MptKeepalive ka = {
                        .ip_version = how & 2 ? 6 : 4,
                        .src_tun = a,
                        .extended = how & 4,
                        .flags = how >> 4,
                        .receive_weight = v & 1 ? 20000 : 100,
                        .session = 0x1234,
                        .seq = in8(in),
                        .path_token = v >> 1 & 3,
                };
                r.kind = REC_KEEPALIVE;
                len = mpt_keepalive_encode(g, 128, &ka);
        }
        check(len > 0, "encode");
        if (how & 8) {
                /* with a sequence number, which control frames never have */
                memmove(g + 8, g + 4, len - 4);
                wr16(g, MPT_GRE_S);
                wr32(g + 4, fz->gre_seq[0]);
                len += 4;
        }
        if (fz->secure) {
                len = seal(fz, in, buf, len, &r);
                feed(fz, buf, len, add_rec(fz, &r, buf, len));
        } else
                feed(fz, g, len, add_rec(fz, &r, g, len));
}

/* A feedback frame (what arrived of our paths at the other end, for the learned scheduler), with
 * values from the input; well-formed or not as mpt_feedback_decode() must tell. how: bits 0-3
 * entries - 1; 4-6 what is wrong with it: 0 nothing, 1 another version (version 1, without lanes,
 * or a later one), 2 no entry, 3 more entries than there may be, 4 entries shorter than version
 * 2's (version 1's), 5 a byte more or less than its entries, 6 a path id out of range, 7 nothing
 * (entries longer than version 2's, as a later version may send them); 7 a GRE sequence number
 * (which a control frame never has). v: bit 7 IPv6 as the GRE protocol, the rest the values.
 * Compat mode: dropped however it is. */
static void op_feedback(Fuzz *fz, Input *in) {
        uint8_t how = in8(in), v = in8(in);
        uint16_t x = in16(in);
        uint8_t buf[MPT_SECURE_HEADER_SIZE + 8 + MPT_FEEDBACK_HEADER_SIZE +
                    (MPT_FEEDBACK_ENTRIES_MAX + 1) * (MPT_FEEDBACK_ENTRY_SIZE + 8) + 1 + MPT_SECURE_TAG_SIZE];
        uint8_t *g = buf + MPT_SECURE_HEADER_SIZE, *p;
        unsigned n = 1 + (how & 15), wrong = how >> 4 & 7, count;
        size_t gl = how & 0x80 ? 8 : 4, esize, len;
        MptFeedback fb = { .now = fz->clock + v, .n = n };
        Rec r = { .kind = REC_FEEDBACK, .authentic = true, .lane = fz->secure ? MPT_SECURE_LANE_CONTROL : 0 };

        count = wrong == 2 ? 0 : wrong == 3 ? MPT_FEEDBACK_ENTRIES_MAX + 1 : n;
        esize = wrong == 4 ? MPT_FEEDBACK_ENTRY_SIZE - 8 : wrong == 7 ? MPT_FEEDBACK_ENTRY_SIZE + 8 : MPT_FEEDBACK_ENTRY_SIZE;
        for (unsigned i = 0; i < n; i++)
                fb.entries[i] = (MptFeedbackEntry) {
                        .path_id = (uint8_t) ((v + i) & 7),
                        .lane = (uint8_t) ((x + i) % MPT_WIRE_LANES_MAX),
                        .packets = (uint32_t) x * (i + 1),
                        .bytes = (uint64_t) x * (i + 1) * 1400,
                        .marker = (uint64_t) x + i,
                        .arrival = fz->clock - (usec_t) i * x,
                        .peak_rate = (uint64_t) x << (v & 31),
                        .sent = (uint64_t) x * (i + 2),
                };
        if (wrong == 6)
                fb.entries[n - 1].path_id = (uint8_t) (MPT_WIRE_PATHS_MAX + (v & 63));

        memset(g, 0, gl);
        wr16(g, how & 0x80 ? MPT_GRE_S : 0);
        wr16(g + 2, v & 0x80 ? MPT_ETH_P_IPV6 : MPT_ETH_P_IP);
        if (how & 0x80)
                wr32(g + 4, fz->gre_seq[0]);
        p = g + gl;
        len = MPT_FEEDBACK_HEADER_SIZE - 4 + count * esize;
        memset(p, 0xee, len + 1);
        p[0] = MPT_CONTROL_FEEDBACK;
        p[1] = wrong == 1 ? (v & 1 ? 1 : MPT_FEEDBACK_VERSION + 1) : MPT_FEEDBACK_VERSION;
        p[2] = (uint8_t) count;
        p[3] = (uint8_t) esize;
        for (unsigned b = 0; b < 8; b++)
                p[4 + b] = (uint8_t) (fb.now >> (56 - 8 * b));
        for (unsigned i = 0; i < count; i++) {
                const MptFeedbackEntry *e = &fb.entries[i % n];
                uint8_t *q = p + MPT_FEEDBACK_HEADER_SIZE - 4 + (size_t) i * esize;
                const uint64_t fields[] = { e->bytes, e->marker, e->arrival, e->peak_rate, e->sent };

                q[0] = e->path_id;
                q[1] = e->lane;
                q[2] = q[3] = 0;
                wr32(q + 4, e->packets);
                for (unsigned f = 0; f < ELEMENTSOF(fields) && 8 + 8 * f < esize; f++)
                        for (unsigned b = 0; b < 8 && 8 + 8 * f + b < esize; b++)
                                q[8 + 8 * f + b] = (uint8_t) (fields[f] >> (56 - 8 * b));
        }
        if (wrong == 5)
                len = v & 1 ? len + 1 : len - 1;
        len += gl;
        if (fz->secure && (wrong == 0 || wrong == 7) && !(how & 0x80))
                r.fb = &fb;
        if (fz->secure) {
                len = seal(fz, in, buf, len, &r);
                feed(fz, buf, len, add_rec(fz, &r, buf, len));
        } else
                feed(fz, g, len, add_rec(fz, &r, g, len));
}

static void op_raw(Fuzz *fz, Input *in) {
        size_t len = in16(in) % 2048;

        len = MIN(len, in->n);

        feed(fz, in->p, len, -1);
        in->p += len;
        in->n -= len;
}

/* An earlier datagram again: a replay, or a duplicate from the network; maybe damaged. */
static void op_replay(Fuzz *fz, Input *in) {
        uint8_t which = in8(in), flip = in8(in);
        uint16_t where = in16(in);
        Past *p;
        uint8_t *copy;

        if (fz->n_past == 0)
                return;
        p = &fz->past[(fz->n_past - 1 - which % MIN(fz->n_past, HISTORY)) % HISTORY];
        copy = memdup(p->bytes, p->len ?: 1);
        check(copy, "out of memory");
        /* A record spoiled in its header after it was sealed (seal()) would be repaired by the
         * flip that undoes the spoiling, and be accepted: such a record's flips go past the
         * header (where they fail authentication, as the record says). */
        if (flip != 0 && p->len > MPT_SECURE_HEADER_SIZE && fz->secure && p->origin >= 0 &&
            !fz->recs[p->origin].acceptable && where % p->len < MPT_SECURE_HEADER_SIZE)
                where = (uint16_t) (MPT_SECURE_HEADER_SIZE + where % (p->len - MPT_SECURE_HEADER_SIZE));
        if (flip != 0 && p->len > 0)
                copy[where % p->len] ^= flip;
        feed(fz, copy, p->len, p->origin);
        free(copy);
}

/* Starts a new message: its source, and what the kernel says about it. */
static void op_message(Fuzz *fz, Input *in) {
        uint8_t how = in8(in), jitter = in8(in);
        Msg *m;

        fz->source = how % SOURCES;
        m = open_msg(fz);
        m->arrival = fz->clock - (usec_t) jitter * 16;
        if (how & 0x80)
                m->truncated = true;
        if (how & 0x40) {
                m->seg_override = true;
                m->seg = in16(in);
        }
}

/* ---- checks on what the TUN device gets ---- */

static void delivered(Fuzz *fz, const uint8_t *pkt, size_t len, bool segmented) {
        uint16_t proto = mpt_inner_protocol(pkt, len);
        uint64_t h = packet_hash(pkt, len);
        bool any = false, exact = false, seq_known = false, seq_ambiguous = false;
        uint32_t seq = 0;
        uint8_t lane = 0;
        int rec = -1;

        check(proto != 0 && mpt_inner_validate(pkt, len, proto) < 0, "malformed packet written to the TUN device");
        fz->sink_packets++;
        for (int i = fz->buckets[h % BUCKETS]; i >= 0; i = fz->cands[i].next) {
                const Cand *c = &fz->cands[i];

                if (c->hash != h || c->len != len || !packet_same(c->bytes, pkt, len))
                        continue;
                any = true;
                exact = exact || memcmp(c->bytes, pkt, len) == 0;
                if (c->rec >= 0)
                        rec = c->rec;
                if (!c->has_seq || (seq_known && (c->seq != seq || c->lane != lane)))
                        seq_ambiguous = true;
                seq = c->seq;
                lane = c->lane;
                seq_known = true;
        }
        check(any, "a packet that was not sent (%s, %zu bytes) was written to the TUN device",
              fz->secure ? "forged or corrupted" : "corrupted", len);
        /* Only a cut GRO super-packet has its TCP checksums computed anew. */
        check(exact || segmented, "a packet was written to the TUN device with other bytes than sent");

        if (fz->secure) {
                const Rec *r;

                /* Every record's packet has its own tag: one match. */
                check(rec >= 0, "no record");
                r = &fz->recs[rec];
                check(r->authentic, "a packet sealed with another key was delivered");
                check(r->acceptable, "a packet that should have been refused was delivered");
                check(r->fed, "delivered before it was sent");
                check(r->epoch >= r->epoch_floor,
                      "a packet of epoch %" PRIx64 " was delivered, which was older than the peer's %" PRIx64
                      " when it arrived",
                      r->epoch, r->epoch_floor);
                check(set_add(&fz->identities, identity(r), r->counter),
                      "datagram (epoch %" PRIx64 ", path %u, lane %u, counter %" PRIu64 ") delivered twice",
                      r->epoch, r->path_id, r->lane, r->counter);
        }
        if (fz->reorder && seq_known && !seq_ambiguous) {
                if (fz->n_call_seqs == fz->call_seqs_capacity) {
                        size_t n = fz->call_seqs_capacity ? 2 * fz->call_seqs_capacity : 64;
                        void *a = realloc(fz->call_seqs, n * sizeof(fz->call_seqs[0]));
                        check(a, "out of memory");
                        fz->call_seqs = a;
                        fz->call_seqs_capacity = n;
                }
                fz->call_seqs[fz->n_call_seqs].lane = lane;
                fz->call_seqs[fz->n_call_seqs++].seq = seq;
        }
}

/* One write to the TUN device: an IP packet, after a virtio-net header when the device has them;
 * with GSO, a super-packet of TCP segments. */
static void sink(Fuzz *fz, const uint8_t *rec, size_t len) {
        struct virtio_net_hdr vh;
        const uint8_t *pkt = rec;
        uint8_t copy[MSG_BYTES_MAX + 64], scratch[OFFLOAD_SEGMENTS_MAX * OFFLOAD_HEADERS_MAX];
        OffloadSegment segs[OFFLOAD_SEGMENTS_MAX];
        size_t ip_len, tcp_len, plen;
        uint32_t pseudo;
        uint16_t partial;
        int family, n;

        if (!fz->vnet_hdr) {
                delivered(fz, rec, len, false);
                return;
        }
        check(len > VNET_HDR_LEN, "short write to the TUN device");
        memcpy(&vh, rec, VNET_HDR_LEN);
        pkt += VNET_HDR_LEN;
        len -= VNET_HDR_LEN;
        if (vh.gso_type == VIRTIO_NET_HDR_GSO_NONE) {
                /* It came inside a UDP datagram whose checksum the kernel checked. */
                check(vh.flags == VIRTIO_NET_HDR_F_DATA_VALID && vh.gso_size == 0 && vh.hdr_len == 0 &&
                      vh.csum_start == 0 && vh.csum_offset == 0,
                      "virtio-net header of a plain packet");
                delivered(fz, pkt, len, false);
                return;
        }

        /* A GRO super-packet: TCP, its checksum partial (the pseudo-header's sum in the field),
         * segments of gso_size bytes of payload but the last. */
        check(vh.gso_type == VIRTIO_NET_HDR_GSO_TCPV4 || vh.gso_type == VIRTIO_NET_HDR_GSO_TCPV6, "GSO type");
        check(len <= GRO_BYTES_MAX && len < sizeof copy, "GRO super-packet too long");
        check(mpt_inner_protocol(pkt, len) != 0 &&
              mpt_inner_validate(pkt, len, mpt_inner_protocol(pkt, len)) < 0,
              "malformed GRO super-packet");
        family = pkt[0] >> 4 == 4 ? AF_INET : AF_INET6;
        check((vh.gso_type == VIRTIO_NET_HDR_GSO_TCPV4) == (family == AF_INET), "GSO type of the other family");
        ip_len = tcp_offset(pkt, len);
        check(ip_len > 0, "GRO super-packet is not TCP");
        tcp_len = (size_t) (pkt[ip_len + 12] >> 4) * 4;
        check(vh.flags == VIRTIO_NET_HDR_F_NEEDS_CSUM && vh.csum_start == ip_len && vh.csum_offset == 16 &&
              vh.hdr_len == ip_len + tcp_len && vh.gso_size > 0,
              "virtio-net header of a GRO super-packet");
        plen = len - ip_len - tcp_len;
        check(plen > vh.gso_size && DIV_ROUND_UP(plen, vh.gso_size) <= GRO_SEGMENTS_MAX,
              "GRO super-packet of %zu bytes of payload in segments of %u", plen, vh.gso_size);
        pseudo = csum_pseudo(family, pkt + (family == AF_INET ? 12 : 8), pkt + (family == AF_INET ? 16 : 24),
                             IPPROTO_TCP, (uint32_t) (len - ip_len));
        partial = (uint16_t) ~csum_fold(pseudo);
        check(rd16(pkt + ip_len + 16) == partial, "partial checksum of a GRO super-packet");

        /* Cut it as the kernel would, and check every segment. */
        fz->gso_writes++;
        memcpy(copy, pkt, len);
        n = offload_segment(&vh, copy, len, 65535, scratch, 0, segs, OFFLOAD_SEGMENTS_MAX);
        check(n >= 2, "GRO super-packet does not segment");
        for (int i = 0; i < n; i++) {
                uint8_t seg[OFFLOAD_HEADERS_MAX + 65536];

                check(i + 1 == n || segs[i].payload_len == vh.gso_size, "GRO segment size");
                memcpy(seg, segs[i].headers, segs[i].headers_len);
                memcpy(seg + segs[i].headers_len, segs[i].payload, segs[i].payload_len);
                delivered(fz, seg, segs[i].headers_len + segs[i].payload_len, true);
        }
}

static void sink_iov(const struct iovec *iov, int n) {
        static uint8_t buf[2 * MSG_BYTES_MAX];
        size_t len = 0;

        for (int i = 0; i < n; i++) {
                check(len + iov[i].iov_len <= sizeof buf, "write to the TUN device too long");
                memcpy(buf + len, iov[i].iov_base, iov[i].iov_len);
                len += iov[i].iov_len;
        }
        sink(current, buf, len);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n) {
        if (!current || fd != sink_fd)
                return __real_write(fd, buf, n);
        sink_iov(&(struct iovec) { .iov_base = (void *) buf, .iov_len = n }, 1);
        return (ssize_t) n;
}

ssize_t __wrap_writev(int fd, const struct iovec *iov, int n) {
        size_t len = 0;

        if (!current || fd != sink_fd)
                return __real_writev(fd, iov, n);
        for (int i = 0; i < n; i++)
                len += iov[i].iov_len;
        sink_iov(iov, n);
        return (ssize_t) len;
}

/* ---- counters ---- */

typedef struct Sums {
        uint64_t units; /* per datagram (or dropped message): one of these */
        /* of them, what the worker counts of a datagram after it authenticated (secure mode), but
         * the drops of messages from an unknown source */
        uint64_t authenticated;
        uint64_t rx_packets;
        uint64_t after_rx; /* of the received: dropped by the reorder buffer */
        uint64_t no_memory, tun_write;
        uint64_t delivered; /* packets the workers handed to the TUN device */
} Sums;

/* Whether the worker counts a drop for this reason before a datagram authenticates (or instead). */
static bool before_auth(unsigned reason) {
        switch (reason) {
        case MPT_DROP_TRUNCATED:
        case MPT_DROP_TOO_SHORT:
        case MPT_DROP_BAD_VERSION:
        case MPT_DROP_BAD_HEADER:
        case MPT_DROP_COMPAT_PACKET:
        case MPT_DROP_AUTH_FAILED:
        case MPT_DROP_REPLAYED:
        case MPT_DROP_STALE_EPOCH:
        case MPT_DROP_OWN_EPOCH:
        case MPT_DROP_CIPHER_ERROR:
        case MPT_DROP_PATH_MISMATCH: /* refused before or after its tag, never accepted */
        case MPT_DROP_EPOCH_LIMITED:
                return true;
        default:
                return false;
        }
}

/* Over the tunnel's paths and workers: a datagram counted for any other path would not add up. */
static Sums sums(const Fuzz *fz) {
        Sums s = {};

        for (unsigned k = 0; k < fz->n_workers; k++) {
                const Worker *w = fz->workers[k];

                for (unsigned p = 0; p < fz->n_paths; p++) {
                        const PathCounters *c = &w->peers[0].path_counters[p];

                        s.rx_packets += c->rx_packets;
                        s.units += c->rx_packets + c->keepalives_rx;
                        s.authenticated += c->rx_packets + c->keepalives_rx;
                        check(c->tx_packets == 0 && c->keepalives_tx == 0, "sent something");
                        for (unsigned r = 0; r < _MPT_DROP_MAX; r++)
                                if (r == MPT_DROP_DUPLICATE || r == MPT_DROP_STALE)
                                        s.after_rx += c->drops[r];
                                else {
                                        s.units += c->drops[r];
                                        if (!before_auth(r))
                                                s.authenticated += c->drops[r];
                                }
                }
                s.no_memory += w->tunnel_counters.drops[MPT_DROP_NO_MEMORY];
                s.tun_write += w->tunnel_counters.drops[MPT_DROP_TUN_WRITE];
                s.delivered += w->quiet_rx;
        }
        return s;
}

/* Where the reorder buffers stand before an operation: per lane, how often it started a new
 * sequence space (or was reset), and how many packets it delivered late (after their gap was
 * skipped). */
typedef struct Mark {
        uint64_t resyncs[RX_SHARED_LANES], late[RX_SHARED_LANES];
} Mark;

static Mark mark(const Fuzz *fz) {
        Mark m = {};

        if (!fz->reorder)
                return m;
        for (unsigned i = 0; i < RX_SHARED_LANES; i++) {
                const RxLane *l = rx_shared_lane_get(fz->t->peers[0]->rx, i);

                m.resyncs[i] = fz->resets + (l ? reorder_stats(l->reorder)->resyncs : 0);
                m.late[i] = l ? reorder_stats(l->reorder)->late : 0;
        }
        return m;
}

/* The pool's references: once nothing is held, each buffer is referenced by the worker that
 * receives into it, or by nobody. */
static void check_pool(const Fuzz *fz) {
        const Tunnel *t = fz->t;

        for (unsigned i = 0; t->rx_pool && i < t->rx_pool_n; i++) {
                unsigned owners = 0;

                for (unsigned k = 0; k < fz->n_workers; k++)
                        for (unsigned m = 0; m < WORKER_RX_MMSG; m++)
                                owners += fz->workers[k]->rx_pool_index[m] == (int) i;
                check(owners <= 1, "pool buffer %u is received into by %u workers", i, owners);
                check(t->rx_pool_refs[i] == owners, "pool buffer %u has %" PRIu32 " references, %u expected", i,
                      t->rx_pool_refs[i], owners);
        }
}

/* What was delivered, held and dropped adds up to what was received. */
static void check_accounts(Fuzz *fz) {
        Sums s = sums(fz);
        size_t held = 0;

        if (fz->reorder) {
                ReorderStats st;
                usec_t deadline = USEC_INFINITY;

                rx_shared_stats(fz->t->peers[0]->rx, &st, &held);
                for (unsigned i = 0; i < RX_SHARED_LANES; i++) {
                        RxLane *l = rx_shared_lane_get(fz->t->peers[0]->rx, i);

                        if (!l)
                                continue;
                        check(rx_lane_deadline(l) == reorder_deadline(l->reorder),
                              "the published deadline of lane %u is not its reorder buffer's", i);
                        deadline = MIN(deadline, rx_lane_deadline(l));
                        check(!!(rx_shared_lanes(fz->t->peers[0]->rx) & UINT64_C(1) << i), "lane %u made, not in the mask", i);
                }
                /* Everything held arrived by now: it is due within the maximum delay. */
                check(held == 0 || deadline <= fz->clock + fz->max_delay,
                      "%zu packets held, and nothing due within the maximum delay", held);
                if (held == 0)
                        check_pool(fz);
        }
        check(s.tun_write == 0, "TUN write failed");
        check(s.rx_packets == s.delivered + fz->main_delivered + held + s.after_rx + s.no_memory,
              "received %" PRIu64 " != delivered %" PRIu64 " + %" PRIu64 " + held %zu + dropped %" PRIu64
              " + %" PRIu64,
              s.rx_packets, s.delivered, fz->main_delivered, held, s.after_rx, s.no_memory);
        check(fz->sink_packets == s.delivered + fz->main_delivered,
              "the TUN device got %" PRIu64 " packets, %" PRIu64 " + %" PRIu64 " were delivered", fz->sink_packets,
              s.delivered, fz->main_delivered);
}

/* The sequence numbers delivered in this operation: none twice, and none below one delivered
 * before it unless it came late (more such than the reorder buffer counts as late means that it
 * delivered out of order). Both only while the buffer keeps its sequence space: when it started a
 * new one meanwhile, which side of that a delivery was on is not known here, so this operation's
 * numbers are not checked and the record starts over. */
static void check_seqs(Fuzz *fz, const Mark *before) {
        Mark now = mark(fz);
        uint64_t behind[RX_SHARED_LANES] = {}, restarted = 0;

        for (unsigned l = 0; l < RX_SHARED_LANES; l++)
                if (now.resyncs[l] != before->resyncs[l]) {
                        restarted |= UINT64_C(1) << l;
                        fz->have_newest &= ~(UINT64_C(1) << l);
                }
        if (restarted != 0) {
                /* The record starts over for the lanes that did (sets cannot forget a part). */
                Set kept = {};

                for (size_t i = 0; i < fz->seqs.capacity; i++)
                        if (fz->seqs.slots[i].used && !(restarted & UINT64_C(1) << fz->seqs.slots[i].a))
                                (void) set_add(&kept, fz->seqs.slots[i].a, fz->seqs.slots[i].b);
                set_clear(&fz->seqs);
                fz->seqs = kept;
        }
        for (size_t i = 0; i < fz->n_call_seqs; i++) {
                unsigned l = fz->call_seqs[i].lane;
                uint32_t seq = fz->call_seqs[i].seq;

                if (restarted & UINT64_C(1) << l)
                        continue;
                check(set_add(&fz->seqs, l, seq), "sequence number %" PRIu32 " of lane %u delivered twice", seq, l);
                if ((fz->have_newest & UINT64_C(1) << l) && mpt_seq_diff(seq, fz->newest[l]) < 0)
                        behind[l]++;
                else {
                        fz->newest[l] = seq;
                        fz->have_newest |= UINT64_C(1) << l;
                }
        }
        for (unsigned l = 0; l < RX_SHARED_LANES; l++)
                check(behind[l] <= now.late[l] - before->late[l],
                      "%" PRIu64 " packets of lane %u delivered behind a later one, %" PRIu64 " of them late",
                      behind[l], l, now.late[l] - before->late[l]);
        fz->n_call_seqs = 0;
}

/* ---- operations ---- */

static bool feedback_equal(const MptFeedback *a, const MptFeedback *b) {
        if (a->now != b->now || a->n != b->n)
                return false;
        for (unsigned i = 0; i < a->n; i++)
                if (a->entries[i].path_id != b->entries[i].path_id || a->entries[i].lane != b->entries[i].lane ||
                    a->entries[i].sent != b->entries[i].sent || a->entries[i].packets != b->entries[i].packets ||
                    a->entries[i].bytes != b->entries[i].bytes || a->entries[i].marker != b->entries[i].marker ||
                    a->entries[i].arrival != b->entries[i].arrival ||
                    a->entries[i].peak_rate != b->entries[i].peak_rate)
                        return false;
        return true;
}

/* A feedback event must come from a fresh, well-formed feedback frame of this batch (one event
 * each), with its values, its source and arrival time, for the path it arrived for. */
static void check_feedback_event(Fuzz *fz, const ControlEvent *ev, const WorkerRxMessage *msgs) {
        for (unsigned i = 0; i < fz->n_fresh; i++) {
                const Rec *r = &fz->recs[fz->fresh[i].rec];
                unsigned m = fz->fresh[i].msg;

                if (fz->fresh[i].used || r->kind != REC_FEEDBACK || !r->fb || !feedback_equal(r->fb, &ev->fb) ||
                    memcmp(&ev->source, &msgs[m].source, sizeof ev->source) != 0 || ev->when != msgs[m].arrival ||
                    (int) ev->path != expected_path(fz, fz->socket_path, fz->msgs[m].source))
                        continue;
                fz->fresh[i].used = true;
                return;
        }
        fail("a feedback event (path %u, %u entries) that no fresh well-formed feedback frame of the batch sent",
             ev->path, ev->fb.n);
}

/* Secure mode: the worker tracks what arrived of each of the other end's paths (rx_track(), for
 * the feedback it sends) with every datagram that authenticated and no other: as many as it
 * counted after authentication, on the sender paths of fresh datagrams, with a marker (counter,
 * lane, arrival) one of them had, and what was sent growing with every new marker and only with
 * datagrams tracked. */
static void check_rx_tracks(Fuzz *fz, const RxTrack before[static MPT_PATHS_MAX], const WorkerRxMessage *msgs,
                            uint64_t authenticated, uint64_t overflow) {
        uint64_t packets = 0;

        for (unsigned id = 0; id < MPT_PATHS_MAX; id++) {
                RxTrack now;
                uint64_t n, bytes, fresh = 0, fresh_bytes = 0;
                bool marker_known = false;

                worker_rx_track_read(fz->w, id, &now);
                n = now.packets - before[id].packets;
                bytes = now.bytes - before[id].bytes;
                packets += n;
                if (!fz->secure) {
                        check(n == 0 && bytes == 0 && now.marker == before[id].marker,
                              "compat mode: sender path %u tracked", id);
                        continue;
                }
                for (unsigned i = 0; i < fz->n_fresh; i++) {
                        const Rec *r = &fz->recs[fz->fresh[i].rec];

                        if (r->path_id != id)
                                continue;
                        fresh++;
                        fresh_bytes += r->wire_len;
                        marker_known = marker_known || (r->counter == now.marker && r->lane == now.lane &&
                                                        msgs[fz->fresh[i].msg].arrival == now.arrival);
                }
                check(n <= fresh && bytes <= fresh_bytes && bytes >= n * (MPT_SECURE_OVERHEAD + 1),
                      "sender path %u: %" PRIu64 " datagrams (%" PRIu64 " bytes) tracked, %" PRIu64
                      " (%" PRIu64 " bytes) could authenticate",
                      id, n, bytes, fresh, fresh_bytes);
                check((now.marker == before[id].marker && now.lane == before[id].lane &&
                       now.arrival == before[id].arrival) ||
                              marker_known,
                      "sender path %u: counter %" PRIu64 " of lane %u at %" PRIu64
                      " tracked, which no fresh datagram had",
                      id, now.marker, now.lane, now.arrival);
                /* What was sent only grows: by at least one with every new marker (a datagram
                 * new in its lane), and only with datagrams that were tracked. */
                check(now.sent >= before[id].sent, "sender path %u: what was sent went back", id);
                check(now.marker == 0 || now.lane != MPT_SECURE_LANE_CONTROL,
                      "sender path %u: a control frame's counter is the marker", id);
                check(now.sent > before[id].sent || (now.marker == before[id].marker && now.lane == before[id].lane &&
                                                     now.arrival == before[id].arrival),
                      "sender path %u: a new marker without anything sent", id);
                check(n > 0 || now.sent == before[id].sent,
                      "sender path %u: sent grew by %" PRIu64 " with nothing tracked", id, now.sent - before[id].sent);
        }
        check(!fz->secure || (authenticated <= packets && packets <= authenticated + overflow),
              "%" PRIu64 " datagrams tracked, %" PRIu64 " counted after they authenticated", packets, authenticated);
}

static void flush_batch(Fuzz *fz) {
        WorkerRxMessage msgs[WORKER_RX_MMSG];
        RxTrack tracks[MPT_PATHS_MAX];
        Tunnel *t = fz->t;
        /* The worker that receives the path (path_rx_worker(): path index mod workers). */
        Worker *w = fz->w = fz->workers[fz->socket_path % fz->n_workers];
        uint64_t units = 0, overflow, unknown_msgs = 0;
        uint64_t epoch_before = fz->secure ? mpt_secure_rx_peer_epoch(t->peers[0]->rx->secure) : 0;
        Mark mark_before = mark(fz);
        unsigned fresh_sources = 0, fresh_ka = 0, fresh_ps = 0, n_ka = 0, n_ps = 0, n_fb = 0;
        Sums before = sums(fz), after;

        if (fz->n_msgs == 0)
                return;
        fz->n_fresh = 0;
        for (unsigned m = 0; m < fz->n_msgs; m++) {
                Msg *g = &fz->msgs[m];
                int p = expected_path(fz, fz->socket_path, g->source);
                size_t seg;

                msgs[m] = (WorkerRxMessage) {
                        .source = fz->sources[g->source],
                        .len = g->len,
                        .truncated = g->truncated,
                        .segment_size = g->seg_override ? g->seg : g->n > 1 ? g->natural : 0,
                        .arrival = g->arrival,
                };
                memcpy(w->rx_cur[m], g->buf, g->len);

                if (g->truncated || p == -1) {
                        units++;
                        unknown_msgs += !g->truncated;
                        continue;
                }
                /* What the worker will see as datagrams: of the message's segment size, or as
                 * the kernel says (maybe wrongly). Those that are one of the datagrams put
                 * together, and intact copies of a record, may be accepted. */
                seg = msgs[m].segment_size == 0 || msgs[m].segment_size > g->len ? g->len : msgs[m].segment_size;
                for (size_t off = 0, i = 0; off < g->len; off += seg) {
                        size_t len = MIN(seg, g->len - off);
                        Rec *r = NULL;

                        units++;
                        while (i < g->n && g->offs[i] < off)
                                i++;
                        if (i < g->n && g->offs[i] == off && g->recs[i] >= 0 &&
                            (i + 1 < g->n ? g->offs[i + 1] : g->len) - off == len)
                                r = &fz->recs[g->recs[i]];
                        if (r && !r->fed) {
                                r->fed = true;
                                r->epoch_floor = epoch_before;
                        }
                        /* Secure mode: the first datagram seen with an epoch, sender path, lane and
                         * counter at one of our paths may be accepted (and hand a control frame to
                         * the main thread, or report its source as a new endpoint); no other after
                         * it at that path, whether it was accepted or not (then its epoch or
                         * counter is too old, or its sender path belongs to another of our paths,
                         * and stays so). At another path it may be: a sender path id bound
                         * elsewhere is refused there before its counter counts. */
                        if (r && r->acceptable &&
                            set_add(&fz->consumed, identity(r) | (uint64_t) (p + 2) << 48, r->counter)) {
                                fresh_sources |= 1u << g->source;
                                fresh_ka += r->kind == REC_KEEPALIVE;
                                fresh_ps += r->kind == REC_PATH_STATUS;
                                check(fz->n_fresh < ELEMENTSOF(fz->fresh), "fresh datagrams");
                                fz->fresh[fz->n_fresh++] = (typeof(fz->fresh[0])) { .rec = g->recs[i], .msg = m };
                        }
                        /* Compat mode: the inner packets of all of them. */
                        if (!fz->secure) {
                                MptFrame f;
                                if (mpt_frame_decode(g->buf + off, len, &f) < 0 && f.kind == MPT_FRAME_DATA)
                                        add_cand(fz, f.payload, f.payload_len, f.has_seq, 0, f.seq, -1);
                        }
                }
        }
        overflow = t->control_overflows;
        for (unsigned id = 0; id < MPT_PATHS_MAX; id++)
                worker_rx_track_read(w, id, &tracks[id]);

        worker_rx_process(w, fz->s, fz->socket_path, msgs, fz->n_msgs);

        /* The control events, as the main thread would take them. */
        fz->events += t->control_n;
        for (size_t i = 0; i < t->control_n; i++) {
                const ControlEvent *ev = &t->control_queue[i];
                unsigned c;

                n_ka += ev->kind == CONTROL_EVENT_KEEPALIVE;
                n_ps += ev->kind == CONTROL_EVENT_PATH_STATUS;
                n_fb += ev->kind == CONTROL_EVENT_FEEDBACK;
                /* A control frame's event has the time its message arrived (the kernel's). */
                if (ev->kind != CONTROL_EVENT_ENDPOINT) {
                        unsigned m;

                        for (m = 0; m < fz->n_msgs; m++)
                                if (ev->when == msgs[m].arrival &&
                                    memcmp(&ev->source, &msgs[m].source, sizeof ev->source) == 0)
                                        break;
                        check(m < fz->n_msgs, "a control event (%u) with a time no message from its source arrived at",
                              ev->kind);
                }
                if (!fz->secure) {
                        check(ev->kind != CONTROL_EVENT_FEEDBACK, "compat mode: a feedback event");
                        continue;
                }
                for (c = 0; c < SOURCES; c++)
                        if ((fresh_sources & 1u << c) &&
                            memcmp(&ev->source, &fz->sources[c], sizeof ev->source) == 0)
                                break;
                check(c < SOURCES, "a control event (%u) from a source that sent nothing authentic and new",
                      ev->kind);
                if (ev->kind == CONTROL_EVENT_FEEDBACK)
                        check_feedback_event(fz, ev, msgs);
        }
        fz->n_msgs = 0;
        fz->feedback_events += n_fb;
        if (fz->secure)
                check(n_ka <= fresh_ka && n_ps <= fresh_ps,
                      "more control events than authentic new control frames");
        t->control_n = 0;
        overflow = t->control_overflows - overflow;

        after = sums(fz);
        check(after.units - before.units + n_ps + n_fb <= units &&
                      units <= after.units - before.units + n_ps + n_fb + overflow,
              "%" PRIu64 " datagrams were counted as %" PRIu64 " (and %u path-status and %u feedback events)", units,
              after.units - before.units, n_ps, n_fb);
        check_rx_tracks(fz, tracks, msgs, after.authenticated - before.authenticated - unknown_msgs + n_ps + n_fb,
                        overflow);
        check(!fz->secure || mpt_secure_rx_peer_epoch(t->peers[0]->rx->secure) >= epoch_before, "the peer epoch went back");
        check_seqs(fz, &mark_before);
        check_accounts(fz);
}

static void op_expire(Fuzz *fz, usec_t by) {
        Mark before;

        flush_batch(fz);
        before = mark(fz);
        fz->clock += by;
        /* Each worker expires its lanes. */
        for (unsigned k = 0; k < fz->n_workers; k++)
                worker_rx_expire(fz->workers[k], fz->clock);
        check_seqs(fz, &before);
        check_accounts(fz);
}

/* What the main thread does to the reorder buffers (all lanes): a path goes down or up, the other end
 * restarted; the learned scheduler's settings (peer_set_reorder_extra(),
 * peer_set_reorder_hold()): a path's extra delay (v / 128 of the maximum delay, which caps
 * it), or the maximum delay (delays[v & 3]) and the minimum hold (min_hold_of(v >> 2 & 3)). how:
 * bits 0-1 which (3: a setting, with v), 2-3 the path, 4 (a setting) the hold, else an extra
 * delay. */
static void op_main(Fuzz *fz, Input *in) {
        uint8_t how = in8(in), v = (how & 3) == 3 ? in8(in) : 0;
        Tunnel *t = fz->t;
        uint64_t before;
        Mark m;

        if (!fz->reorder)
                return;
        flush_batch(fz);
        before = fz->sink_packets;
        m = mark(fz);
        switch (how & 3) {
        case 0:
                rx_shared_path_down(t->peers[0]->rx, how >> 2 & 3);
                break;
        case 1:
                rx_shared_path_up(t->peers[0]->rx, how >> 2 & 3);
                break;
        case 3:
                if (how & 0x10) {
                        fz->max_delay = delays[v & 3];
                        rx_shared_set_hold(t->peers[0]->rx, fz->max_delay, min_hold_of(v >> 2 & 3, fz->max_delay));
                } else
                        rx_shared_set_path_extra(t->peers[0]->rx, how >> 2 & 3, (usec_t) v * fz->max_delay / 128);
                break;
        default:
                fz->resets++;
                peer_reset_reorder(t->peers[0]);
                fz->main_delivered += fz->sink_packets - before;
                check_seqs(fz, &m);
                break;
        }
        check_accounts(fz);
}

/* What an input did, for checking that a seed does what it says (MPT_FUZZ_RX_VERBOSE=1). */
static void summary(const Fuzz *fz) {
        fprintf(stderr, "%s%s%s%s, %u paths, %u workers: %zu records, %" PRIu64 " packets to the TUN device (%" PRIu64
                " GRO writes), %" PRIu64 " events (%" PRIu64 " feedback)\n",
                fz->secure ? "secure" : "compat", fz->reorder ? " reorder" : "", fz->vnet_hdr ? " vnet" : "",
                fz->gro ? " gro" : "", fz->n_paths, fz->n_workers, fz->n_recs, fz->sink_packets, fz->gso_writes,
                fz->events, fz->feedback_events);
        for (unsigned k = 0; k < fz->n_workers; k++)
                for (unsigned p = 0; p < fz->n_paths; p++) {
                        const PathCounters *c = &fz->workers[k]->peers[0].path_counters[p];

                        fprintf(stderr, "  worker %u, path %u: rx %" PRIu64 ", keepalives %" PRIu64, k, p,
                                c->rx_packets, c->keepalives_rx);
                        for (unsigned r = 0; r < _MPT_DROP_MAX; r++)
                                if (c->drops[r] > 0)
                                        fprintf(stderr, ", %s %" PRIu64, mpt_drop_reason_to_string(r), c->drops[r]);
                        fputc('\n', stderr);
                }
        for (unsigned i = 0; fz->reorder && i < RX_SHARED_LANES; i++) {
                const RxLane *l = rx_shared_lane_get(fz->t->peers[0]->rx, i);
                const ReorderStats *st;

                if (!l)
                        continue;
                st = reorder_stats(l->reorder);
                fprintf(stderr, "  lane %u: max delay %" PRIu64 " us, min hold %" PRIu64 " us, extra delay", i,
                        reorder_max_delay(l->reorder), reorder_min_hold(l->reorder));
                for (unsigned p = 0; p < fz->n_paths; p++)
                        fprintf(stderr, " %" PRIu64, reorder_path_extra(l->reorder, p));
                fprintf(stderr, " us\n");
                fprintf(stderr,
                        "    delivered %" PRIu64 ", held %" PRIu64 ", late %" PRIu64 ", lost %" PRIu64
                        ", timeouts %" PRIu64 ", duplicates %" PRIu64 ", stale %" PRIu64 ", resyncs %" PRIu64 "\n",
                        st->delivered, st->held, st->late, st->lost, st->timeouts, st->duplicates, st->stale,
                        st->resyncs);
        }
        if (fz->reorder)
                fprintf(stderr, "  resets %" PRIu64 "\n", fz->resets);
        if (fz->secure)
                fprintf(stderr, "  peer epoch %" PRIx64 ", %" PRIu64 " new epochs\n",
                        mpt_secure_rx_peer_epoch(fz->t->peers[0]->rx->secure), fz->t->peers[0]->peer_epochs);
}

/* ---- The input ----
 * 4 bytes of configuration:
 *   0: bit 0 secure mode, 1 reorder buffer, 2 virtio-net header, 3 batches (GRO), 4 AES-256-GCM
 *      (where the CPU has it), 5-6 paths - 1, 7 odd paths IPv6
 *   1: bits 0-1 which paths share a socket (topologies), 2-5 PinRemote= per path, 6 two workers
 *   2: bits 0-2 reorder window, 3-4 maximum delay, 5-6 minimum hold (min_hold_of())
 *   3: the first sequence number's top byte
 * then operations, each a byte (the operation, below) and its arguments, to the end. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Input in = { data, size };
        Fuzz *fz = NULL;

        setup_once();
        if (size < 4 || fuzz_new(&in, &fz) < 0) {
                fuzz_free(fz);
                return 0;
        }
        current = fz;
        while (in.n > 0 && fz->fed_bytes < FED_BYTES_MAX) {
                uint8_t op = in8(&in);

                switch (op % 11) {
                case 0:
                case 1:
                case 2:
                        op_data(fz, &in);
                        break;
                case 3:
                        op_control(fz, &in);
                        break;
                case 4:
                        op_raw(fz, &in);
                        break;
                case 5:
                        op_replay(fz, &in);
                        break;
                case 6:
                        op_message(fz, &in);
                        break;
                case 7:
                        /* the batch so far to the worker; the next one arrives on this path */
                        flush_batch(fz);
                        fz->socket_path = in8(&in) % fz->n_paths;
                        fz->clock += in8(&in) * 8;
                        break;
                case 8:
                        op_expire(fz, (usec_t) in16(&in) * 16);
                        break;
                case 9:
                        op_main(fz, &in);
                        break;
                default:
                        op_feedback(fz, &in);
                        break;
                }
        }
        flush_batch(fz);
        /* Once the maximum delay has passed, nothing is held. */
        if (fz->reorder) {
                ReorderStats st;
                size_t held;

                op_expire(fz, USEC_PER_SEC + 1); /* the longest maximum delay */
                rx_shared_stats(fz->t->peers[0]->rx, &st, &held);
                check(held == 0, "packets still held after the maximum delay");
        }
        if (getenv("MPT_FUZZ_RX_VERBOSE"))
                summary(fz);
        current = NULL;
        fuzz_free(fz);
        return 0;
}
