/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "byteorder.h"
#include "macro.h"
#include "noise.h"
#include "secure.h"

/* Fetched once (mpt_noise_init()), so that nothing is looked up or loaded on later calls. */
static EVP_MD *blake2s;
static EVP_MAC *blake2s_mac;
static EVP_MAC *hmac;
static EVP_CIPHER *chacha20_poly1305;
static EVP_CIPHER *chacha20;
static int init_result = -EAGAIN;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_once_fn(void) {
        int r;

        /* The system's OpenSSL configuration, loaded once for secure.c and here. */
        r = mpt_secure_init();
        if (r < 0) {
                init_result = r;
                return;
        }
        blake2s = EVP_MD_fetch(NULL, "BLAKE2S-256", NULL);
        blake2s_mac = EVP_MAC_fetch(NULL, "BLAKE2SMAC", NULL);
        hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        chacha20_poly1305 = EVP_CIPHER_fetch(NULL, "ChaCha20-Poly1305", NULL);
        chacha20 = EVP_CIPHER_fetch(NULL, "ChaCha20", NULL);
        init_result = blake2s && blake2s_mac && hmac && chacha20_poly1305 && chacha20 ? 0 : -EOPNOTSUPP;
}

int mpt_noise_init(void) {
        pthread_once(&init_once, init_once_fn);
        return init_result;
}

int mpt_noise_hash(uint8_t ret[MPT_NOISE_HASH_SIZE], const void *a, size_t an, const void *b, size_t bn) {
        EVP_MD_CTX *ctx;
        unsigned out = 0;
        int r;

        r = mpt_noise_init();
        if (r < 0)
                return r;
        ctx = EVP_MD_CTX_new();
        if (!ctx)
                return -ENOMEM;
        r = EVP_DigestInit_ex2(ctx, blake2s, NULL) == 1 && EVP_DigestUpdate(ctx, a, an) == 1 &&
            (bn == 0 || EVP_DigestUpdate(ctx, b, bn) == 1) && EVP_DigestFinal_ex(ctx, ret, &out) == 1 &&
            out == MPT_NOISE_HASH_SIZE ? 0 : -EIO;
        EVP_MD_CTX_free(ctx);
        return r;
}

/* One MAC computation over a || b with algorithm mac, its parameters and key. */
static int mac_two(EVP_MAC *mac, const OSSL_PARAM *params, const uint8_t *key, size_t key_len, const void *a,
                   size_t an, const void *b, size_t bn, uint8_t *ret, size_t size) {
        EVP_MAC_CTX *ctx;
        size_t out = 0;
        int r;

        r = mpt_noise_init();
        if (r < 0)
                return r;
        ctx = EVP_MAC_CTX_new(mac);
        if (!ctx)
                return -ENOMEM;
        r = EVP_MAC_init(ctx, key, key_len, params) == 1 && (an == 0 || EVP_MAC_update(ctx, a, an) == 1) &&
            (bn == 0 || EVP_MAC_update(ctx, b, bn) == 1) && EVP_MAC_final(ctx, ret, &out, size) == 1 &&
            out == size ? 0 : -EIO;
        EVP_MAC_CTX_free(ctx);
        return r;
}

int mpt_noise_mac(uint8_t ret[MPT_NOISE_MAC_SIZE], const uint8_t *key, size_t key_len, const void *m, size_t n) {
        size_t size = MPT_NOISE_MAC_SIZE;
        OSSL_PARAM params[] = {
                OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
                OSSL_PARAM_construct_end(),
        };

        assert(key_len >= 1 && key_len <= 32);
        return mac_two(blake2s_mac, params, key, key_len, m, n, NULL, 0, ret, MPT_NOISE_MAC_SIZE);
}

int mpt_noise_hmac(uint8_t ret[MPT_NOISE_HASH_SIZE], const uint8_t key[MPT_NOISE_HASH_SIZE], const void *a, size_t an,
                   const void *b, size_t bn) {
        OSSL_PARAM params[] = {
                OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *) "BLAKE2S-256", 0),
                OSSL_PARAM_construct_end(),
        };

        return mac_two(hmac, params, key, MPT_NOISE_HASH_SIZE, a, an, b, bn, ret, MPT_NOISE_HASH_SIZE);
}

int mpt_noise_hkdf(const uint8_t chaining_key[MPT_NOISE_HASH_SIZE], const void *ikm, size_t n,
                   uint8_t ret1[MPT_NOISE_HASH_SIZE], uint8_t ret2[MPT_NOISE_HASH_SIZE],
                   uint8_t ret3[MPT_NOISE_HASH_SIZE]) {
        uint8_t temp[MPT_NOISE_HASH_SIZE], out[3][MPT_NOISE_HASH_SIZE];
        uint8_t *rets[3] = { ret1, ret2, ret3 };
        int r;

        assert(ret1);
        assert(ret2 || !ret3);
        /* temp_key = HMAC(ck, ikm); output1 = HMAC(temp_key, 0x01); output_i = HMAC(temp_key,
         * output_(i-1) || i). Into local buffers: the outputs may alias the chaining key. */
        r = mpt_noise_hmac(temp, chaining_key, ikm, n, NULL, 0);
        for (unsigned i = 0; r >= 0 && i < 3 && rets[i]; i++) {
                uint8_t c = (uint8_t) (i + 1);
                r = mpt_noise_hmac(out[i], temp, i ? out[i - 1] : NULL, i ? MPT_NOISE_HASH_SIZE : 0, &c, 1);
        }
        for (unsigned i = 0; i < 3 && rets[i]; i++)
                if (r >= 0)
                        memcpy(rets[i], out[i], MPT_NOISE_HASH_SIZE);
                else
                        explicit_bzero(rets[i], MPT_NOISE_HASH_SIZE);
        explicit_bzero(temp, sizeof temp);
        explicit_bzero(out, sizeof out);
        return r;
}

/* ChaCha20-Poly1305 with a raw 96-bit nonce: seal (c and tag at ret) or open (tag at c + cn - 16). */
static int aead(bool seal, const uint8_t key[MPT_NOISE_KEY_SIZE], const uint8_t nonce[12], const void *ad, size_t adn,
                const uint8_t *in, size_t len, uint8_t *ret) {
        EVP_CIPHER_CTX *ctx;
        int n, r = -EIO;

        r = mpt_noise_init();
        if (r < 0)
                return r;
        assert(len <= INT_MAX - MPT_NOISE_TAG_SIZE && adn <= INT_MAX);
        ctx = EVP_CIPHER_CTX_new();
        if (!ctx)
                return -ENOMEM;
        r = -EIO;
        if (EVP_CipherInit_ex2(ctx, chacha20_poly1305, key, nonce, seal, NULL) != 1)
                goto finish;
        if (!seal && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, MPT_NOISE_TAG_SIZE, (void *) (in + len)) != 1)
                goto finish;
        if (adn > 0 && EVP_CipherUpdate(ctx, NULL, &n, ad, (int) adn) != 1)
                goto finish;
        if (len > 0 && (EVP_CipherUpdate(ctx, ret, &n, in, (int) len) != 1 || (size_t) n != len))
                goto finish;
        if (EVP_CipherFinal_ex(ctx, ret + len, &n) != 1) {
                /* Opening: the tag does not verify (the only way it fails for valid arguments). */
                r = seal ? -EIO : -EBADMSG;
                goto finish;
        }
        if (seal && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, MPT_NOISE_TAG_SIZE, ret + len) != 1)
                goto finish;
        r = 0;
finish:
        if (r < 0 && !seal)
                explicit_bzero(ret, len);
        EVP_CIPHER_CTX_free(ctx);
        return r;
}

static void noise_nonce(uint64_t n, uint8_t nonce[12]) {
        memset(nonce, 0, 4);
        wr64le(nonce + 4, n);
}

int mpt_noise_aead_seal(const uint8_t key[MPT_NOISE_KEY_SIZE], uint64_t n, const void *ad, size_t adn,
                        const uint8_t *p, size_t pn, uint8_t *ret) {
        uint8_t nonce[12];

        noise_nonce(n, nonce);
        return aead(true, key, nonce, ad, adn, p, pn, ret);
}

int mpt_noise_aead_open(const uint8_t key[MPT_NOISE_KEY_SIZE], uint64_t n, const void *ad, size_t adn,
                        const uint8_t *c, size_t cn, uint8_t *ret) {
        uint8_t nonce[12];

        if (cn < MPT_NOISE_TAG_SIZE)
                return -EINVAL;
        noise_nonce(n, nonce);
        return aead(false, key, nonce, ad, adn, c, cn - MPT_NOISE_TAG_SIZE, ret);
}

int mpt_noise_hchacha20(uint8_t ret[MPT_NOISE_KEY_SIZE], const uint8_t key[MPT_NOISE_KEY_SIZE],
                        const uint8_t nonce[16]) {
        /* "expand 32-byte k" */
        static const uint32_t sigma[4] = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 };
        static const uint8_t zeros[64] = {};
        uint8_t block[64];
        EVP_CIPHER_CTX *ctx;
        int n, r;

        r = mpt_noise_init();
        if (r < 0)
                return r;
        /* libcrypto's ChaCha20 takes a 16-byte IV: the block counter (32 bits little endian), then
         * the 96-bit nonce, that is the state's last row, which in HChaCha20 is the 16-byte nonce
         * as it is. Its first keystream block is the state after 20 rounds plus the input state. */
        ctx = EVP_CIPHER_CTX_new();
        if (!ctx)
                return -ENOMEM;
        r = EVP_EncryptInit_ex2(ctx, chacha20, key, nonce, NULL) == 1 &&
            EVP_EncryptUpdate(ctx, block, &n, zeros, sizeof zeros) == 1 && n == sizeof block ? 0 : -EIO;
        EVP_CIPHER_CTX_free(ctx);
        if (r >= 0)
                /* HChaCha20's output is rows 0 and 3 of the state after the rounds, without the
                 * addition: take the input words away again (mod 2^32, little endian). */
                for (unsigned i = 0; i < 8; i++) {
                        unsigned w = i < 4 ? i : 12 + (i - 4);
                        uint32_t in = i < 4 ? sigma[i] : rd32le(nonce + 4 * (w - 12));

                        wr32le(ret + 4 * i, rd32le(block + 4 * w) - in);
                }
        else
                explicit_bzero(ret, MPT_NOISE_KEY_SIZE);
        explicit_bzero(block, sizeof block);
        return r;
}

static int xaead(bool seal, const uint8_t key[MPT_NOISE_KEY_SIZE], const uint8_t nonce[MPT_NOISE_XNONCE_SIZE],
                 const void *ad, size_t adn, const uint8_t *in, size_t len, uint8_t *ret) {
        uint8_t subkey[MPT_NOISE_KEY_SIZE], n12[12] = {};
        int r;

        r = mpt_noise_hchacha20(subkey, key, nonce);
        if (r >= 0) {
                memcpy(n12 + 4, nonce + 16, 8);
                r = aead(seal, subkey, n12, ad, adn, in, len, ret);
        }
        explicit_bzero(subkey, sizeof subkey);
        return r;
}

int mpt_noise_xaead_seal(const uint8_t key[MPT_NOISE_KEY_SIZE], const uint8_t nonce[MPT_NOISE_XNONCE_SIZE],
                         const void *ad, size_t adn, const uint8_t *p, size_t pn, uint8_t *ret) {
        return xaead(true, key, nonce, ad, adn, p, pn, ret);
}

int mpt_noise_xaead_open(const uint8_t key[MPT_NOISE_KEY_SIZE], const uint8_t nonce[MPT_NOISE_XNONCE_SIZE],
                         const void *ad, size_t adn, const uint8_t *c, size_t cn, uint8_t *ret) {
        if (cn < MPT_NOISE_TAG_SIZE)
                return -EINVAL;
        return xaead(false, key, nonce, ad, adn, c, cn - MPT_NOISE_TAG_SIZE, ret);
}

void mpt_noise_clamp(uint8_t key[MPT_NOISE_KEY_SIZE]) {
        /* RFC 7748 5 (decodeScalar25519): a multiple of the cofactor 8, bit 255 clear, bit 254 set. */
        key[0] &= 248;
        key[31] &= 127;
        key[31] |= 64;
}

int mpt_noise_keypair_set(MptNoiseKeypair *k, const uint8_t private_key[MPT_NOISE_KEY_SIZE]) {
        EVP_PKEY *pkey;
        size_t n = MPT_NOISE_KEY_SIZE;
        int r;

        assert(!k->pkey);
        r = mpt_noise_init();
        if (r < 0)
                return r;
        /* libcrypto derives the public key when it makes the key object. */
        pkey = EVP_PKEY_new_raw_private_key_ex(NULL, "X25519", NULL, private_key, MPT_NOISE_KEY_SIZE);
        if (!pkey)
                return -ENOMEM;
        if (EVP_PKEY_get_raw_public_key(pkey, k->public_key, &n) != 1 || n != MPT_NOISE_KEY_SIZE) {
                EVP_PKEY_free(pkey);
                explicit_bzero(k, sizeof *k);
                return -EIO;
        }
        memcpy(k->private_key, private_key, MPT_NOISE_KEY_SIZE);
        k->pkey = pkey;
        return 0;
}

void mpt_noise_keypair_done(MptNoiseKeypair *k) {
        /* libcrypto wipes the private key of the object it frees. */
        EVP_PKEY_free(k->pkey);
        explicit_bzero(k, sizeof *k);
}

int mpt_noise_public_key(uint8_t ret[MPT_NOISE_KEY_SIZE], const uint8_t private_key[MPT_NOISE_KEY_SIZE]) {
        MptNoiseKeypair k = {};
        int r;

        r = mpt_noise_keypair_set(&k, private_key);
        if (r >= 0)
                memcpy(ret, k.public_key, MPT_NOISE_KEY_SIZE);
        mpt_noise_keypair_done(&k);
        return r;
}

int mpt_noise_dh(const MptNoiseKeypair *k, const uint8_t public_key[MPT_NOISE_KEY_SIZE],
                 uint8_t ret[MPT_NOISE_KEY_SIZE]) {
        static const uint8_t zeros[MPT_NOISE_KEY_SIZE] = {};
        EVP_PKEY *peer = NULL;
        EVP_PKEY_CTX *ctx = NULL;
        size_t n = MPT_NOISE_KEY_SIZE;
        int r = -ENOMEM;

        assert(k->pkey);
        peer = EVP_PKEY_new_raw_public_key_ex(NULL, "X25519", NULL, public_key, MPT_NOISE_KEY_SIZE);
        ctx = EVP_PKEY_CTX_new_from_pkey(NULL, k->pkey, NULL);
        if (!peer || !ctx)
                goto finish;
        /* libcrypto refuses an all-zero result itself; checked below all the same, in constant time. */
        r = EVP_PKEY_derive_init(ctx) == 1 && EVP_PKEY_derive_set_peer_ex(ctx, peer, 0) == 1 &&
            EVP_PKEY_derive(ctx, ret, &n) == 1 && n == MPT_NOISE_KEY_SIZE ? 0 : -EINVAL;
        if (r >= 0 && CRYPTO_memcmp(ret, zeros, MPT_NOISE_KEY_SIZE) == 0)
                r = -EINVAL;
finish:
        if (r < 0)
                explicit_bzero(ret, MPT_NOISE_KEY_SIZE);
        EVP_PKEY_CTX_free(ctx);
        EVP_PKEY_free(peer);
        return r;
}

/* ---- SymmetricState ---- */

static int mix_hash(MptNoiseHandshake *hs, const void *data, size_t n) {
        return mpt_noise_hash(hs->h, hs->h, MPT_NOISE_HASH_SIZE, data, n);
}

static int mix_key(MptNoiseHandshake *hs, const uint8_t *ikm, size_t n) {
        int r = mpt_noise_hkdf(hs->ck, ikm, n, hs->ck, hs->k, NULL);

        hs->n = 0;
        hs->has_k = r >= 0;
        return r;
}

static int mix_key_and_hash(MptNoiseHandshake *hs, const uint8_t *ikm, size_t n) {
        uint8_t temp_h[MPT_NOISE_HASH_SIZE];
        int r;

        r = mpt_noise_hkdf(hs->ck, ikm, n, hs->ck, temp_h, hs->k);
        if (r >= 0)
                r = mix_hash(hs, temp_h, sizeof temp_h);
        explicit_bzero(temp_h, sizeof temp_h);
        hs->n = 0;
        hs->has_k = r >= 0;
        return r;
}

/* Noise's DH token: MixKey(DH(k, public_key)). */
static int mix_dh(MptNoiseHandshake *hs, const MptNoiseKeypair *k, const uint8_t public_key[MPT_NOISE_KEY_SIZE]) {
        uint8_t shared[MPT_NOISE_KEY_SIZE];
        int r;

        r = mpt_noise_dh(k, public_key, shared);
        if (r >= 0)
                r = mix_key(hs, shared, sizeof shared);
        explicit_bzero(shared, sizeof shared);
        return r;
}

static int encrypt_and_hash(MptNoiseHandshake *hs, const uint8_t *p, size_t n, uint8_t *ret) {
        int r;

        /* Every EncryptAndHash() of IKpsk2 comes after a MixKey(). */
        assert(hs->has_k);
        r = mpt_noise_aead_seal(hs->k, hs->n, hs->h, MPT_NOISE_HASH_SIZE, p, n, ret);
        if (r < 0)
                return r;
        hs->n++;
        return mix_hash(hs, ret, n + MPT_NOISE_TAG_SIZE);
}

static int decrypt_and_hash(MptNoiseHandshake *hs, const uint8_t *c, size_t n, uint8_t *ret) {
        int r;

        assert(hs->has_k);
        r = mpt_noise_aead_open(hs->k, hs->n, hs->h, MPT_NOISE_HASH_SIZE, c, n + MPT_NOISE_TAG_SIZE, ret);
        if (r < 0)
                return r;
        hs->n++;
        return mix_hash(hs, c, n + MPT_NOISE_TAG_SIZE);
}

/* Noise's "e" token with a pre-shared key in the pattern: MixHash(e), then MixKey(e). */
static int mix_ephemeral(MptNoiseHandshake *hs, const uint8_t e[MPT_NOISE_KEY_SIZE]) {
        int r = mix_hash(hs, e, MPT_NOISE_KEY_SIZE);

        return r < 0 ? r : mix_key(hs, e, MPT_NOISE_KEY_SIZE);
}

/* ---- HandshakeState for IKpsk2 ---- */

int mpt_noise_ik_start(MptNoiseHandshake *hs, const void *prologue, size_t prologue_len,
                       const uint8_t responder_public_key[MPT_NOISE_KEY_SIZE]) {
        int r;

        assert(!hs->e.pkey);
        *hs = (MptNoiseHandshake) {};
        r = mpt_noise_hash(hs->h, MPT_NOISE_PROTOCOL_NAME, STRLEN(MPT_NOISE_PROTOCOL_NAME), NULL, 0);
        if (r < 0)
                return r;
        memcpy(hs->ck, hs->h, MPT_NOISE_HASH_SIZE);
        r = mix_hash(hs, prologue, prologue_len);
        if (r < 0)
                return r;
        memcpy(hs->rs, responder_public_key, MPT_NOISE_KEY_SIZE);
        return mix_hash(hs, responder_public_key, MPT_NOISE_KEY_SIZE);
}

int mpt_noise_ik_write_initiation(MptNoiseHandshake *hs, const MptNoiseKeypair *s, const uint8_t *payload,
                                  size_t payload_len, uint8_t *ret) {
        int r;

        assert(hs->e.pkey && s->pkey);
        /* e */
        memcpy(ret, hs->e.public_key, MPT_NOISE_KEY_SIZE);
        r = mix_ephemeral(hs, hs->e.public_key);
        /* es */
        if (r >= 0)
                r = mix_dh(hs, &hs->e, hs->rs);
        /* s */
        if (r >= 0)
                r = encrypt_and_hash(hs, s->public_key, MPT_NOISE_KEY_SIZE, ret + MPT_NOISE_KEY_SIZE);
        /* ss */
        if (r >= 0)
                r = mix_dh(hs, s, hs->rs);
        if (r >= 0)
                r = encrypt_and_hash(hs, payload, payload_len, ret + MPT_NOISE_KEY_SIZE * 2 + MPT_NOISE_TAG_SIZE);
        return r;
}

int mpt_noise_ik_read_initiator_static(MptNoiseHandshake *hs, const MptNoiseKeypair *s, const uint8_t *msg) {
        int r;

        assert(s->pkey);
        /* e */
        memcpy(hs->re, msg, MPT_NOISE_KEY_SIZE);
        r = mix_ephemeral(hs, hs->re);
        /* es */
        if (r >= 0)
                r = mix_dh(hs, s, hs->re);
        /* s */
        if (r >= 0)
                r = decrypt_and_hash(hs, msg + MPT_NOISE_KEY_SIZE, MPT_NOISE_KEY_SIZE, hs->rs);
        return r;
}

int mpt_noise_ik_read_initiation(MptNoiseHandshake *hs, const MptNoiseKeypair *s, const uint8_t *expected_rs,
                                 const uint8_t *msg, size_t payload_len, uint8_t *payload) {
        int r;

        r = mpt_noise_ik_read_initiator_static(hs, s, msg);
        if (r >= 0 && expected_rs && CRYPTO_memcmp(hs->rs, expected_rs, MPT_NOISE_KEY_SIZE) != 0)
                r = -EPERM;
        /* ss */
        if (r >= 0)
                r = mix_dh(hs, s, hs->rs);
        if (r >= 0)
                r = decrypt_and_hash(hs, msg + MPT_NOISE_KEY_SIZE * 2 + MPT_NOISE_TAG_SIZE, payload_len, payload);
        return r;
}

int mpt_noise_ik_write_response(MptNoiseHandshake *hs, const uint8_t psk[MPT_NOISE_KEY_SIZE], const uint8_t *payload,
                                size_t payload_len, uint8_t *ret) {
        int r;

        assert(hs->e.pkey);
        /* e */
        memcpy(ret, hs->e.public_key, MPT_NOISE_KEY_SIZE);
        r = mix_ephemeral(hs, hs->e.public_key);
        /* ee */
        if (r >= 0)
                r = mix_dh(hs, &hs->e, hs->re);
        /* se: the responder's side of DH(initiator's s, responder's e) */
        if (r >= 0)
                r = mix_dh(hs, &hs->e, hs->rs);
        /* psk */
        if (r >= 0)
                r = mix_key_and_hash(hs, psk, MPT_NOISE_KEY_SIZE);
        if (r >= 0)
                r = encrypt_and_hash(hs, payload, payload_len, ret + MPT_NOISE_KEY_SIZE);
        return r;
}

int mpt_noise_ik_read_response(MptNoiseHandshake *hs, const MptNoiseKeypair *s, const uint8_t psk[MPT_NOISE_KEY_SIZE],
                               const uint8_t *msg, size_t payload_len, uint8_t *payload) {
        int r;

        assert(hs->e.pkey && s->pkey);
        /* e */
        memcpy(hs->re, msg, MPT_NOISE_KEY_SIZE);
        r = mix_ephemeral(hs, hs->re);
        /* ee */
        if (r >= 0)
                r = mix_dh(hs, &hs->e, hs->re);
        /* se */
        if (r >= 0)
                r = mix_dh(hs, s, hs->re);
        /* psk */
        if (r >= 0)
                r = mix_key_and_hash(hs, psk, MPT_NOISE_KEY_SIZE);
        if (r >= 0)
                r = decrypt_and_hash(hs, msg + MPT_NOISE_KEY_SIZE, payload_len, payload);
        return r;
}

int mpt_noise_ik_split(const MptNoiseHandshake *hs, uint8_t ret_initiator_to_responder[MPT_NOISE_KEY_SIZE],
                       uint8_t ret_responder_to_initiator[MPT_NOISE_KEY_SIZE]) {
        return mpt_noise_hkdf(hs->ck, NULL, 0, ret_initiator_to_responder, ret_responder_to_initiator, NULL);
}

void mpt_noise_handshake_wipe(MptNoiseHandshake *hs) {
        mpt_noise_keypair_done(&hs->e);
        explicit_bzero(hs, sizeof *hs);
}
