/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Noise protocol framework (revision 34) as WireGuard uses it: the handshake pattern IK with
 * the pre-shared key mixed in after the second message (IKpsk2), over X25519, ChaCha20-Poly1305
 * and BLAKE2s: Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s. Also the primitives WireGuard's protocol
 * adds around it: keyed BLAKE2s with a 16-byte output for its MACs, and XChaCha20-Poly1305 for
 * its cookie replies. handshake.h builds mpt's handshake on these.
 *
 * Every primitive is libcrypto's, fetched once from the providers the system's OpenSSL
 * configuration loads (mpt_noise_init()):
 *   X25519             EVP_PKEY "X25519" (raw keys; libcrypto clamps the scalar)
 *   HASH               BLAKE2s-256, EVP_MD "BLAKE2S-256"
 *   MAC                keyed BLAKE2s with a 16-byte digest (RFC 7693), EVP_MAC "BLAKE2SMAC"
 *   HMAC               HMAC-BLAKE2s (RFC 2104, block size 64), EVP_MAC "HMAC" over BLAKE2S-256
 *   AEAD               ChaCha20-Poly1305 (RFC 8439), EVP_CIPHER "ChaCha20-Poly1305"
 * Built here from them, exactly as their specifications define, and tested against published
 * vectors (tests/unit/test-noise.c):
 *   HKDF               the Noise specification's (section 4.3): three HMAC calls
 *   nonce              Noise's ChaChaPoly nonce: 4 zero bytes, then the 64-bit counter little endian
 *   HChaCha20          (draft-irtf-cfrg-xchacha, section 2.2) from one 64-byte block of libcrypto's
 *                      ChaCha20 keystream: HChaCha20 is the ChaCha20 block function without its final
 *                      addition of the input state, so subtracting the known input words (constants
 *                      and nonce) from the keystream's first and last rows gives its output
 *   XAEAD              XChaCha20-Poly1305 (same draft, section 2.3): ChaCha20-Poly1305 under the
 *                      HChaCha20 subkey of the key and the nonce's first 16 bytes, with 4 zero bytes
 *                      and the nonce's last 8 bytes as nonce
 *
 * The state machine (Noise's SymmetricState and HandshakeState for IKpsk2) is ours. Secrets it
 * holds are wiped (explicit_bzero) when they are dropped; the ephemeral key pair is freed with
 * its handshake state. Nothing here logs, sleeps or keeps global state besides the fetched
 * algorithms; all functions are thread-safe, a handshake state belongs to one thread at a time. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MPT_NOISE_PROTOCOL_NAME "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s"
#define MPT_NOISE_KEY_SIZE 32u    /* X25519 keys and shared secrets, cipher keys, pre-shared keys */
#define MPT_NOISE_HASH_SIZE 32u   /* BLAKE2s-256 */
#define MPT_NOISE_TAG_SIZE 16u    /* Poly1305 */
#define MPT_NOISE_MAC_SIZE 16u    /* keyed BLAKE2s-128 */
#define MPT_NOISE_XNONCE_SIZE 24u /* XChaCha20-Poly1305 */
/* An initiation (-> e, es, s, ss) is e (32), the encrypted s (32 + 16), then the encrypted payload. */
#define MPT_NOISE_INITIATION_SIZE(payload) \
        (MPT_NOISE_KEY_SIZE * 2 + MPT_NOISE_TAG_SIZE + (payload) + MPT_NOISE_TAG_SIZE)
/* A response (<- e, ee, se, psk) is e (32), then the encrypted payload. */
#define MPT_NOISE_RESPONSE_SIZE(payload) (MPT_NOISE_KEY_SIZE + (payload) + MPT_NOISE_TAG_SIZE)

/* Fetches the algorithms (idempotent, thread-safe; call before any system call filter is in place).
 * < 0 on failure: -EOPNOTSUPP when the configured providers lack one of them. Every other function
 * calls it. */
int mpt_noise_init(void);

/* HASH(a || b) (b may be NULL when bn is 0). 0, or < 0 when libcrypto failed (no memory). */
int mpt_noise_hash(uint8_t ret[MPT_NOISE_HASH_SIZE], const void *a, size_t an, const void *b, size_t bn);
/* MAC(key, m): keyed BLAKE2s with a 16-byte digest; key_len 1..32. */
int mpt_noise_mac(uint8_t ret[MPT_NOISE_MAC_SIZE], const uint8_t *key, size_t key_len, const void *m, size_t n);
/* HMAC-BLAKE2s(key, a || b). */
int mpt_noise_hmac(uint8_t ret[MPT_NOISE_HASH_SIZE], const uint8_t key[MPT_NOISE_HASH_SIZE], const void *a, size_t an,
                   const void *b, size_t bn);
/* Noise's HKDF(chaining_key, ikm, n) with n the number of non-NULL outputs (ret1, then ret2, then
 * ret3; 1 to 3). The outputs may alias chaining_key. On failure they are wiped. */
int mpt_noise_hkdf(const uint8_t chaining_key[MPT_NOISE_HASH_SIZE], const void *ikm, size_t n,
                   uint8_t ret1[MPT_NOISE_HASH_SIZE], uint8_t ret2[MPT_NOISE_HASH_SIZE],
                   uint8_t ret3[MPT_NOISE_HASH_SIZE]);

/* ChaCha20-Poly1305 with Noise's nonce for counter n: seals pn bytes of p (may be 0) with ad into
 * ret (pn + 16 bytes; ret may equal p). */
int mpt_noise_aead_seal(const uint8_t key[MPT_NOISE_KEY_SIZE], uint64_t n, const void *ad, size_t adn,
                        const uint8_t *p, size_t pn, uint8_t *ret);
/* Opens cn bytes (at least the tag) into ret (cn - 16 bytes; may equal c). -EBADMSG when the tag
 * does not verify (ret is wiped), -EINVAL when cn is too short, other < 0 when libcrypto failed. */
int mpt_noise_aead_open(const uint8_t key[MPT_NOISE_KEY_SIZE], uint64_t n, const void *ad, size_t adn,
                        const uint8_t *c, size_t cn, uint8_t *ret);
/* XChaCha20-Poly1305, otherwise the same. */
int mpt_noise_xaead_seal(const uint8_t key[MPT_NOISE_KEY_SIZE], const uint8_t nonce[MPT_NOISE_XNONCE_SIZE],
                         const void *ad, size_t adn, const uint8_t *p, size_t pn, uint8_t *ret);
int mpt_noise_xaead_open(const uint8_t key[MPT_NOISE_KEY_SIZE], const uint8_t nonce[MPT_NOISE_XNONCE_SIZE],
                         const void *ad, size_t adn, const uint8_t *c, size_t cn, uint8_t *ret);
/* HChaCha20(key, nonce): the subkey of XChaCha20. */
int mpt_noise_hchacha20(uint8_t ret[MPT_NOISE_KEY_SIZE], const uint8_t key[MPT_NOISE_KEY_SIZE],
                        const uint8_t nonce[16]);

/* Clamps an X25519 private key as RFC 7748 section 5 decodes scalars (what `wg genkey` stores;
 * X25519 itself clamps, so clamped and unclamped keys are the same key). */
void mpt_noise_clamp(uint8_t key[MPT_NOISE_KEY_SIZE]);
/* The X25519 public key of a private key. */
int mpt_noise_public_key(uint8_t ret[MPT_NOISE_KEY_SIZE], const uint8_t private_key[MPT_NOISE_KEY_SIZE]);

/* An X25519 key pair with libcrypto's key object, made once, for repeated DH. Not copyable: the
 * key object is owned. A zeroed struct is empty (done() on it is a no-op). */
typedef struct MptNoiseKeypair {
        uint8_t private_key[MPT_NOISE_KEY_SIZE];
        uint8_t public_key[MPT_NOISE_KEY_SIZE];
        struct evp_pkey_st *pkey; /* NULL: empty */
} MptNoiseKeypair;

/* Sets k (which must be empty) from a private key. On failure k stays empty. */
int mpt_noise_keypair_set(MptNoiseKeypair *k, const uint8_t private_key[MPT_NOISE_KEY_SIZE]);
/* Frees and wipes k; it is empty afterwards. */
void mpt_noise_keypair_done(MptNoiseKeypair *k);
/* DH(k, public_key): the X25519 shared secret. -EINVAL when it is all zeros (the other key has small
 * order: Noise and WireGuard abort then), with ret wiped. */
int mpt_noise_dh(const MptNoiseKeypair *k, const uint8_t public_key[MPT_NOISE_KEY_SIZE],
                 uint8_t ret[MPT_NOISE_KEY_SIZE]);

/* A handshake in progress: Noise's SymmetricState (ck, h, and the CipherState k, n) and the parts of
 * its HandshakeState that are not configuration (e, re, rs; s and psk are passed in where they are
 * needed, so that they stay with their owner). A zeroed struct is empty. */
typedef struct MptNoiseHandshake {
        uint8_t ck[MPT_NOISE_HASH_SIZE];
        uint8_t h[MPT_NOISE_HASH_SIZE];
        uint8_t k[MPT_NOISE_KEY_SIZE];
        uint64_t n;
        bool has_k;
        MptNoiseKeypair e;                 /* the local ephemeral key pair: set it before writing */
        uint8_t re[MPT_NOISE_KEY_SIZE];    /* the remote ephemeral public key, once known */
        uint8_t rs[MPT_NOISE_KEY_SIZE];    /* the remote static public key (the initiator's, at the responder) */
} MptNoiseHandshake;

/* Starts an IKpsk2 handshake at either end: h = HASH(protocol name) (it is longer than 32 bytes),
 * ck = h, MixHash(prologue), then the pre-message "<- s": MixHash(the responder's static public
 * key). hs must be empty or wiped. */
int mpt_noise_ik_start(MptNoiseHandshake *hs, const void *prologue, size_t prologue_len,
                       const uint8_t responder_public_key[MPT_NOISE_KEY_SIZE]);

/* The initiator writes "-> e, es, s, ss" and the payload (payload_len bytes, may be 0) into ret,
 * MPT_NOISE_INITIATION_SIZE(payload_len) bytes. s is the initiator's static key pair; hs->e must be
 * set, and hs->rs holds the responder's static public key (mpt_noise_ik_start() puts it there). */
int mpt_noise_ik_write_initiation(MptNoiseHandshake *hs, const MptNoiseKeypair *s, const uint8_t *payload,
                                  size_t payload_len, uint8_t *ret);
/* The responder (static key pair s) reads an initiation with a payload of payload_len bytes (msg
 * holds MPT_NOISE_INITIATION_SIZE(payload_len) bytes) into payload (payload_len bytes); hs->rs is
 * the initiator's static public key afterwards. When expected_rs is not NULL, an initiator with
 * another static key is refused (-EPERM) before the last DH. Other failures: -EBADMSG (a tag did
 * not verify: not made for s, or damaged), -EINVAL (a key of small order). */
int mpt_noise_ik_read_initiation(MptNoiseHandshake *hs, const MptNoiseKeypair *s, const uint8_t *expected_rs,
                                 const uint8_t *msg, size_t payload_len, uint8_t *payload);
/* The first part of mpt_noise_ik_read_initiation(), "e, es, s": hs->rs is the initiator's static
 * public key afterwards, authenticated only as far as "s" goes (a tag under es: made by someone who
 * knows the responder's public key; "ss" and the payload, which prove the initiator holds its
 * private key, are not read). For a responder that must know who initiates before it knows which
 * state to go on with (a hub, with one per peer). Failures as mpt_noise_ik_read_initiation(). */
int mpt_noise_ik_read_initiator_static(MptNoiseHandshake *hs, const MptNoiseKeypair *s, const uint8_t *msg);
/* The responder writes "<- e, ee, se, psk" and the payload into ret, MPT_NOISE_RESPONSE_SIZE(payload_len)
 * bytes. hs->e must be set. psk: 32 bytes (all zeros when the ends share none, as WireGuard). */
int mpt_noise_ik_write_response(MptNoiseHandshake *hs, const uint8_t psk[MPT_NOISE_KEY_SIZE], const uint8_t *payload,
                                size_t payload_len, uint8_t *ret);
/* The initiator (static key pair s) reads a response. Failures as mpt_noise_ik_read_initiation(). */
int mpt_noise_ik_read_response(MptNoiseHandshake *hs, const MptNoiseKeypair *s, const uint8_t psk[MPT_NOISE_KEY_SIZE],
                               const uint8_t *msg, size_t payload_len, uint8_t *payload);
/* Split(): the transport keys, initiator to responder and responder to initiator. */
int mpt_noise_ik_split(const MptNoiseHandshake *hs, uint8_t ret_initiator_to_responder[MPT_NOISE_KEY_SIZE],
                       uint8_t ret_responder_to_initiator[MPT_NOISE_KEY_SIZE]);

/* Wipes hs and frees its ephemeral key pair; it is empty afterwards. After a failed write or
 * read, hs is in an undefined state: wipe it. */
void mpt_noise_handshake_wipe(MptNoiseHandshake *hs);
