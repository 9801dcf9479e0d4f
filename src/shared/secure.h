/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The secure wire format, version 2 (Mode=secure; mptd(8), section "SECURE WIRE FORMAT"). Every
 * datagram is one AEAD message, ChaCha20-Poly1305 (IETF variant, RFC 8439) or AES-256-GCM, from
 * OpenSSL's libcrypto:
 *
 *   offset  size  field (in the clear, all of it authenticated as associated data)
 *        0     1  message type, which is also the version: 0xE3 a transport message (data or
 *                 control) of version 2. 0xE4..0xE7 are kept for the handshake's messages;
 *                 0xE1 and 0xE2 were version 1 (refused as bad-version)
 *        1     1  flags: bit 0 (A) the sender can receive AES-256-GCM; bit 1 (G) this datagram is
 *                 sealed with AES-256-GCM, else with ChaCha20-Poly1305; the other bits 0 (a
 *                 receiver refuses a bit it does not know: new ones come with a new version or
 *                 a capability the other end announced)
 *        2     1  sender's path id: the index of the path in the sender's profile (< 64)
 *        3     1  sender's lane (< 64): the sequence space its sender numbered it in, one per
 *                 sending thread (mptd: worker i sends on lane i, the main thread's control
 *                 frames go on lane 63); other values are refused
 *        4     8  sender's epoch (big endian): which keys sealed it, fixed for the life of the
 *                 sending mptd
 *       12     8  counter (big endian): per sender path and lane, never repeated within an epoch
 *       20     n  ciphertext of the compat-mode datagram (GRE header and packet, or control frame;
 *                 wire.h: data, keepalive, path status, path feedback)
 *     20+n    16  tag
 *
 * The nonce is bytes 0..3 and 12..19 of the header (96 bits): type, flags, path id and lane,
 * then the counter, so it never repeats under one key. The key is derived per sender epoch and
 * cipher from the tunnel's pre-shared key, so each direction (and each restart) has its own:
 *   key = BLAKE2b-256(key: PSK, message: LABEL || epoch as 8 bytes big endian)
 * with LABEL "mpt-v2 chacha20-poly1305" or "mpt-v2 aes-256-gcm".
 * A receiver derives the sender's keys from the epoch in the header; a newer epoch replaces the
 * old one as soon as one datagram under it authenticates, and an older epoch is never accepted
 * again. A sliding window (RFC 6479) per sender path and lane refuses replayed counters. Each
 * sender path id is
 * bound, for the epoch, to the receiver's path where its first datagram authenticated: the two
 * profiles need not list their paths in the same order, and a datagram moved to another path is
 * refused (path-mismatch). A sender uses
 * AES-256-GCM when its CPU has AES instructions and the other end's datagrams (of its current
 * epoch) say that it can receive it; otherwise ChaCha20-Poly1305, which every receiver takes.
 *
 * No system calls and no locking on the data path: the receive state is serialised by the caller
 * per sender path id (mptd: one lock each, which the worker that receives the path is the only
 * one to take as long as the path's datagrams arrive at one worker), except for the other end's
 * epoch, which is atomic. Sealing and opening use cipher contexts of
 * the calling thread, made on its first use of a cipher (the only allocation) and re-keyed when
 * it uses other keys; they are freed when the thread ends. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"

#define MPT_SECURE_V2_TRANSPORT 0xE3u
#define MPT_SECURE_V1_CHACHA 0xE1u /* version 1: recognised only to be refused */
#define MPT_SECURE_V1_AESGCM 0xE2u
#define MPT_SECURE_FLAG_AES 0x01u    /* A: the sender can receive AES-256-GCM */
#define MPT_SECURE_FLAG_AESGCM 0x02u /* G: sealed with AES-256-GCM */
#define MPT_SECURE_FLAGS_KNOWN (MPT_SECURE_FLAG_AES | MPT_SECURE_FLAG_AESGCM)
/* Lanes: lane ids 0 .. MPT_SECURE_LANES - 1. Every lane of a sender path numbers its datagrams
 * on its own (counters from 1 in each epoch), so that each sending thread owns one and no two
 * threads ever share a counter. The last one is mptd's control lane (its main thread's
 * keepalives, path-status and feedback frames): its workers take lanes 0 .. 62. */
#define MPT_SECURE_LANES MPT_WORKERS_MAX
#define MPT_SECURE_LANE_CONTROL (MPT_SECURE_LANES - 1u)
#define MPT_SECURE_HEADER_SIZE 20u
/* Where the header's fields lie (the table above); the type is byte 0. */
#define MPT_SECURE_OFF_FLAGS 1u
#define MPT_SECURE_OFF_PATH_ID 2u
#define MPT_SECURE_OFF_LANE 3u
#define MPT_SECURE_OFF_EPOCH 4u
#define MPT_SECURE_OFF_COUNTER 12u
#define MPT_SECURE_TAG_SIZE 16u
#define MPT_SECURE_NONCE_SIZE 12u
/* MPT_SECURE_OVERHEAD (header + tag) is in profile.h: the automatic MTU needs it. */
#define MPT_SECURE_KDF_LABEL_CHACHA "mpt-v2 chacha20-poly1305"
#define MPT_SECURE_KDF_LABEL_AESGCM "mpt-v2 aes-256-gcm"

/* Anti-replay window: counters up to this far behind the highest one seen are still accepted
 * (once). Wide enough for the reordering within one path under batching. */
#define MPT_REPLAY_WINDOW 4096u
#define MPT_REPLAY_WORDS (MPT_REPLAY_WINDOW / 64u + 1u)

typedef enum MptCipher {
        MPT_CIPHER_CHACHA20_POLY1305,
        MPT_CIPHER_AES256_GCM,
        _MPT_CIPHER_MAX,
        _MPT_CIPHER_INVALID = -EINVAL,
} MptCipher;

DECLARE_STRING_TABLE(mpt_cipher, MptCipher);

typedef struct MptSecureHeader {
        uint8_t type;
        MptCipher cipher; /* from flag G */
        uint8_t flags;
        uint8_t path_id;
        uint8_t lane;
        uint64_t epoch;
        uint64_t counter;
} MptSecureHeader;

typedef struct MptReplay {
        uint64_t top; /* highest counter accepted */
        bool any;     /* top is valid */
        uint64_t bits[MPT_REPLAY_WORDS];
} MptReplay;

/* The anti-replay window of one lane of a sender path, in one epoch. */
typedef struct MptSecureRxWindow {
        uint64_t epoch; /* what replay is of; 0: unused */
        MptReplay replay;
} MptSecureRxWindow;

/* A lane keeps the windows of the two newest epochs it saw: with the handshake, datagrams of the
 * previous session may still arrive (slower paths) after the first ones of the next. A datagram
 * of an epoch older than both is stale; one of a newer epoch takes the older window. */
#define MPT_SECURE_RX_WINDOWS 2u

typedef struct MptSecureRxLane {
        MptSecureRxWindow windows[MPT_SECURE_RX_WINDOWS];
} MptSecureRxLane;

/* What a receiver remembers of one sender path id of the other end. Serialised by the caller. */
typedef struct MptSecureRxPath {
        uint64_t epoch; /* what bound is of */
        /* The receiver's path (index) the sender path id is bound to in epoch, plus one; 0: not
         * bound yet. */
        uint8_t bound;
        MptSecureRxLane lanes[MPT_SECURE_LANES];
} MptSecureRxPath;

/* What a receiver remembers about the other end's datagrams (mpt_secure_rx_new(): about 2 MiB
 * of address space, of which only the lanes in use are ever touched). */
typedef struct MptSecureRx {
        /* With the handshake (mpt_secure_rx_new_sessions()) an epoch is the receiver's own session
         * id (handshake.h), whose low 32 bits count up per process: that orders them, and which
         * of them may still be received is the key pairs' business (mpt_handshake_keys_rx()), so
         * older epochs are not refused here as such. Without it, an epoch is the sender's (from
         * the wall clock), and an older one is never accepted once a newer one authenticated. */
        bool sessions;
        uint64_t own_epoch;  /* ours: a datagram that carries it was reflected back at us */
        uint64_t peer_epoch; /* atomic: the newest epoch that authenticated; 0: none yet */
        bool peer_aes;       /* atomic: the other end (in peer_epoch) can receive AES-256-GCM */
        MptSecureRxPath paths[MPT_PATHS_MAX]; /* per sender path id */
} MptSecureRx;

/* The keys of one epoch: plain bytes, so they may be copied (a copy keeps the id, and with it
 * the threads' cipher contexts that hold them). */
typedef struct MptSecureKeys {
        uint64_t epoch; /* 0: no keys */
        uint64_t id;    /* unique per derivation, never 0 */
        bool has_aes;
        uint8_t key[_MPT_CIPHER_MAX][MPT_KEY_SIZE]; /* the AES-256-GCM one valid when has_aes */
} MptSecureKeys;

/* libcrypto's initialisation (the system's OpenSSL configuration) and fetching the algorithms:
 * call before any system call filter is in place. Idempotent and thread-safe. < 0 on failure:
 * -EOPNOTSUPP when the configured providers lack one of the algorithms. */
int mpt_secure_init(void);
/* The crypto library's name and version, for logs and benchmarks. */
const char *mpt_secure_library(void);
/* Whether this CPU has AES instructions (and carry-less multiplication) for AES-256-GCM. */
bool mpt_secure_aes_available(void);

/* The key of one cipher for datagrams sent under epoch, from the pre-shared key. < 0 on failure
 * (no memory), with ret wiped. */
int mpt_secure_derive_key(const uint8_t psk[MPT_KEY_SIZE], uint64_t epoch, MptCipher cipher,
                          uint8_t ret[MPT_KEY_SIZE]);
/* The keys of an epoch (the AES-256-GCM one only with_aes, which needs mpt_secure_aes_available()).
 * < 0 on failure, with *ret wiped (epoch 0). */
int mpt_secure_derive(const uint8_t psk[MPT_KEY_SIZE], uint64_t epoch, bool with_aes, MptSecureKeys *ret);
void mpt_secure_keys_wipe(MptSecureKeys *k);

/* Where a sealed datagram comes from: the sender's path and lane, and the datagram's counter. */
typedef struct MptSecureSender {
        uint8_t path_id;
        uint8_t lane;
        uint64_t counter;
} MptSecureSender;

/* Seals one datagram in place: buf holds the plaintext at buf + MPT_SECURE_HEADER_SIZE (len
 * bytes) and has MPT_SECURE_TAG_SIZE bytes of room after it. Writes the header (the epoch is the
 * keys', flag G the cipher's; flags are the others, MPT_SECURE_FLAG_AES) in front and the tag
 * after the ciphertext; returns the datagram's length (len + MPT_SECURE_OVERHEAD), or 0 when this
 * thread could not get a cipher context (no memory; drop the datagram as cipher-error).
 * AES-256-GCM needs keys with has_aes. */
size_t mpt_secure_seal(uint8_t *buf, size_t len, const MptSecureKeys *k, MptCipher cipher, uint8_t flags,
                       MptSecureSender from);
/* The same with the plaintext elsewhere (m, len bytes; it must not overlap buf). */
size_t mpt_secure_seal_from(uint8_t *buf, const uint8_t *m, size_t len, const MptSecureKeys *k, MptCipher cipher,
                            uint8_t flags, MptSecureSender from);

/* Which of two epochs is newer compares these: with the handshake (sessions) a session id's
 * generation, its low 32 bits (the high half is random); else the epoch itself. */
static inline uint64_t mpt_secure_epoch_order(bool sessions, uint64_t epoch) {
        return sessions ? (uint32_t) epoch : epoch;
}

/* The receive state of an end whose own epoch is own_epoch; NULL: no memory. */
MptSecureRx *mpt_secure_rx_new(uint64_t own_epoch);
/* The receive state of an end that runs the handshake: epochs are its own session ids. */
MptSecureRx *mpt_secure_rx_new_sessions(void);
MptSecureRx *mpt_secure_rx_free(MptSecureRx *rx);
/* The newest epoch of the other end that authenticated (any thread); 0: none yet. */
uint64_t mpt_secure_rx_peer_epoch(const MptSecureRx *rx);
/* Whether the other end can receive AES-256-GCM, as its latest datagram said (any thread). */
bool mpt_secure_rx_peer_aes(const MptSecureRx *rx);

/* Reads the clear header of a received datagram. Returns -1 when it is a well-formed transport
 * message of this version, else a drop reason: too-short, compat-packet (looks like a plain GRE
 * datagram), bad-version (another version or message type: version 1, or a handshake message),
 * bad-header (unknown flags, path id or lane out of range, epoch 0). */
int mpt_secure_parse(const uint8_t *buf, size_t len, MptSecureHeader *ret);

/* Checks the tag and decrypts in place with the cipher flag G names; the plaintext is at
 * buf + MPT_SECURE_HEADER_SIZE, len - MPT_SECURE_OVERHEAD bytes. Returns -1, auth-failed (the
 * decrypted bytes are wiped), bad-version for AES-256-GCM with keys without it (a CPU without
 * AES instructions), or cipher-error (no cipher context: no memory). */
int mpt_secure_open(uint8_t *buf, size_t len, const MptSecureKeys *k);

/* The receiver's paths a datagram may belong to (a bit per path index): the one it arrived for,
 * or, when only its content can tell (paths that share a socket, a new source), all of those
 * that share the socket. */
#define MPT_SECURE_PATH_BIT(i) (UINT64_C(1) << (i))

/* Before decrypting (cheap, changes nothing): -1 when the datagram may be accepted, else
 * own-epoch, stale-epoch (with the handshake: stale-session, an epoch older than both windows of
 * its lane), path-mismatch (its sender path id is bound to a path of ours that is
 * not in paths) or replayed. This and mpt_secure_rx_accept() must be serialised per sender path
 * id (h->path_id); calls for different ones may run at once. */
int mpt_secure_rx_check(const MptSecureRx *rx, const MptSecureHeader *h, uint64_t paths);
/* After the datagram authenticated: records it in the window of its sender path and lane (and
 * whether the other end takes AES-256-GCM), and binds its sender path id to the path in paths
 * when that names exactly one and the id is not bound yet. Returns -1 (accepted;
 * *ret_new_epoch tells whether this was the first datagram of a newer epoch, which makes every
 * window and binding of older epochs void) or a drop reason as mpt_secure_rx_check() (another
 * datagram may have been recorded with the same counter, or bound the id, since; or a newer
 * epoch authenticated on another sender path). */
int mpt_secure_rx_accept(MptSecureRx *rx, const MptSecureHeader *h, uint64_t paths, bool *ret_new_epoch);
/* The receiver's path (index) the sender path id of h is bound to in the current epoch, or -1. */
int mpt_secure_rx_bound(const MptSecureRx *rx, const MptSecureHeader *h);

/* Work that a datagram can cause before it authenticated is a header check and one tag check,
 * except for a datagram of an epoch newer than the other end's current one: its keys must be
 * derived first (and the thread's cipher context re-keyed). Forged datagrams with ever newer
 * epochs would cost that every time, so such derivations are rate-limited: a token bucket of
 * MPT_SECURE_DERIVE_BURST, one token back every MPT_SECURE_DERIVE_INTERVAL_USEC. A datagram
 * that finds it empty is dropped (epoch-limited) without a derivation. A restarted other end
 * needs one derivation per receiving thread. */
#define MPT_SECURE_DERIVE_BURST 8u
#define MPT_SECURE_DERIVE_INTERVAL_USEC (100 * USEC_PER_MSEC)

typedef struct MptSecureLimit {
        bool started;
        unsigned tokens;
        usec_t since; /* when the last token came back (or the bucket was last full) */
} MptSecureLimit;

/* Whether one more derivation may be done at now (monotonic); takes a token if so. */
bool mpt_secure_limit_take(MptSecureLimit *l, usec_t now);

/* Sliding window: whether counter is new and within the window, and recording it. */
bool mpt_replay_check(const MptReplay *r, uint64_t counter);
bool mpt_replay_update(MptReplay *r, uint64_t counter);

/* Reserves n counters from *next (the next counter to use; atomic) for one sender path and lane. Returns
 * the first, or fails with -EOVERFLOW when they would run past 2^64 - 2: a counter is never
 * reused, so the path must stop sending (mptd must be restarted for a new epoch). */
int mpt_secure_reserve(uint64_t *next, uint64_t n, uint64_t *ret_first);
