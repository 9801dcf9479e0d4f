/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The secure wire format (Mode=secure; mptd(8), section "SECURE WIRE FORMAT"). Every datagram is
 * one AEAD message (ChaCha20-Poly1305, IETF variant, from libsodium):
 *
 *   offset  size  field (in the clear, all of it authenticated as associated data)
 *        0     1  type and version: 0xE1
 *        1     1  reserved, 0
 *        2     2  sender's path id (big endian): the index of the path in the sender's profile
 *        4     8  sender's epoch (big endian): fixed for the life of the sending mptd
 *       12     8  counter (big endian): per sender path, never repeated within an epoch
 *       20     n  ciphertext of the compat-mode datagram (GRE header and packet, or control frame)
 *     20+n    16  Poly1305 tag
 *
 * The nonce is bytes 0..3 and 12..19 of the header (96 bits). The key is derived per sender epoch
 * from the tunnel's pre-shared key, so each direction (and each restart) has its own key:
 *   key = BLAKE2b-256(key: PSK, message: "mpt-v1 data key" || epoch as 8 bytes big endian)
 * A receiver derives the sender's key from the epoch in the header; a newer epoch replaces the
 * old one as soon as one datagram under it authenticates, and an older epoch is never accepted
 * again. A per-path sliding window (RFC 6479) refuses replayed counters.
 *
 * Pure functions (libsodium only): no system calls, no allocation, no locking. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"

#define MPT_SECURE_V1 0xE1u
#define MPT_SECURE_HEADER_SIZE 20u
#define MPT_SECURE_TAG_SIZE 16u
#define MPT_SECURE_NONCE_SIZE 12u
/* MPT_SECURE_OVERHEAD (header + tag) is in profile.h: the automatic MTU needs it. */
#define MPT_SECURE_KDF_LABEL "mpt-v1 data key"
#define MPT_SECURE_CIPHER "chacha20-poly1305"

/* Anti-replay window: counters up to this far behind the highest one seen are still accepted
 * (once). Wide enough for the reordering within one path under batching. */
#define MPT_REPLAY_WINDOW 4096u
#define MPT_REPLAY_WORDS (MPT_REPLAY_WINDOW / 64u + 1u)

typedef struct MptSecureHeader {
        uint8_t version;
        uint16_t path_id;
        uint64_t epoch;
        uint64_t counter;
} MptSecureHeader;

typedef struct MptReplay {
        uint64_t top; /* highest counter accepted */
        bool any;     /* top is valid */
        uint64_t bits[MPT_REPLAY_WORDS];
} MptReplay;

/* What a receiver remembers about the other end's datagrams. */
typedef struct MptSecureRx {
        uint64_t own_epoch;  /* ours: a datagram that carries it was reflected back at us */
        uint64_t peer_epoch; /* the newest epoch that authenticated; 0: none yet */
        MptReplay replay[MPT_PATHS_MAX]; /* per sender path id, for peer_epoch */
} MptSecureRx;

/* libsodium's initialisation (picks the fastest implementation for the CPU). < 0 on failure. */
int mpt_secure_init(void);

/* The key for datagrams sent under epoch, from the pre-shared key. */
void mpt_secure_derive(const uint8_t psk[MPT_KEY_SIZE], uint64_t epoch, uint8_t ret[MPT_KEY_SIZE]);

/* Seals one datagram in place: buf holds the plaintext at buf + MPT_SECURE_HEADER_SIZE (len
 * bytes) and has MPT_SECURE_TAG_SIZE bytes of room after it. Writes the header in front and the
 * tag after the ciphertext; returns the datagram's length (len + MPT_SECURE_OVERHEAD). */
size_t mpt_secure_seal(uint8_t *buf, size_t len, const uint8_t key[MPT_KEY_SIZE], uint16_t path_id, uint64_t epoch,
                       uint64_t counter);

/* Reads the clear header of a received datagram. Returns -1 when it is a well-formed secure v1
 * datagram, else a drop reason: too-short, compat-packet (looks like a plain GRE datagram),
 * bad-version, bad-header (reserved bits, path id out of range). */
int mpt_secure_parse(const uint8_t *buf, size_t len, MptSecureHeader *ret);

/* Checks the tag and decrypts in place; the plaintext is at buf + MPT_SECURE_HEADER_SIZE, len -
 * MPT_SECURE_OVERHEAD bytes. Returns -1, or auth-failed. */
int mpt_secure_open(uint8_t *buf, size_t len, const uint8_t key[MPT_KEY_SIZE]);

/* Before decrypting (cheap, changes nothing): -1 when the datagram may be accepted, else
 * own-epoch, stale-epoch or replayed. */
int mpt_secure_rx_check(const MptSecureRx *rx, const MptSecureHeader *h);
/* After the datagram authenticated: records it. Returns -1 (accepted; *ret_new_epoch tells
 * whether this was the first datagram of a newer epoch, which resets the windows) or a drop
 * reason as mpt_secure_rx_check() (another thread may have recorded the same counter since). */
int mpt_secure_rx_accept(MptSecureRx *rx, const MptSecureHeader *h, bool *ret_new_epoch);

/* Sliding window: whether counter is new and within the window, and recording it. */
bool mpt_replay_check(const MptReplay *r, uint64_t counter);
bool mpt_replay_update(MptReplay *r, uint64_t counter);

/* Reserves n counters from *next (the next counter to use) for one sender path. Returns the
 * first, or fails with -EOVERFLOW when they would run past 2^64 - 1: a counter is never reused,
 * so the path must stop sending (mptd must be restarted for a new epoch, after 2^64 datagrams). */
int mpt_secure_reserve(uint64_t *next, uint64_t n, uint64_t *ret_first);
