/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <sodium.h>

#include "secure.h"
#include "wire.h"

static inline void wr64(uint8_t *p, uint64_t v) {
        for (int i = 7; i >= 0; i--, v >>= 8)
                p[i] = (uint8_t) v;
}

static inline uint64_t rd64(const uint8_t *p) {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
                v = v << 8 | p[i];
        return v;
}

static const char *const mpt_cipher_table[_MPT_CIPHER_MAX] = {
        [MPT_CIPHER_CHACHA20_POLY1305] = "chacha20-poly1305",
        [MPT_CIPHER_AES256_GCM] = "aes-256-gcm",
};
DEFINE_STRING_TABLE(mpt_cipher, MptCipher, _MPT_CIPHER_MAX);

int mpt_secure_init(void) {
        return sodium_init() < 0 ? -EIO : 0;
}

bool mpt_secure_aes_available(void) {
        return crypto_aead_aes256gcm_is_available() == 1;
}

void mpt_secure_derive_key(const uint8_t psk[MPT_KEY_SIZE], uint64_t epoch, MptCipher cipher,
                           uint8_t ret[MPT_KEY_SIZE]) {
        const char *label = cipher == MPT_CIPHER_AES256_GCM ? MPT_SECURE_KDF_LABEL_AESGCM : MPT_SECURE_KDF_LABEL_CHACHA;
        size_t n = strlen(label);
        uint8_t msg[32];

        assert(n + 8 <= sizeof msg);
        memcpy(msg, label, n);
        wr64(msg + n, epoch);
        crypto_generichash(ret, MPT_KEY_SIZE, msg, n + 8, psk, MPT_KEY_SIZE);
}

void mpt_secure_derive(const uint8_t psk[MPT_KEY_SIZE], uint64_t epoch, bool with_aes, MptSecureKeys *ret) {
        ret->epoch = epoch;
        mpt_secure_derive_key(psk, epoch, MPT_CIPHER_CHACHA20_POLY1305, ret->chacha);
        ret->has_aes = with_aes;
        if (with_aes) {
                uint8_t k[MPT_KEY_SIZE];
                mpt_secure_derive_key(psk, epoch, MPT_CIPHER_AES256_GCM, k);
                crypto_aead_aes256gcm_beforenm(&ret->aes, k);
                sodium_memzero(k, sizeof k);
        }
}

void mpt_secure_keys_wipe(MptSecureKeys *k) {
        sodium_memzero(k, sizeof *k);
}

static void nonce_of(const uint8_t *header, uint8_t nonce[static MPT_SECURE_NONCE_SIZE]) {
        memcpy(nonce, header, 4);          /* version, reserved, path id */
        memcpy(nonce + 4, header + 12, 8); /* counter */
}

size_t mpt_secure_seal(uint8_t *buf, size_t len, const MptSecureKeys *k, MptCipher cipher, uint8_t flags,
                       uint16_t path_id, uint64_t counter) {
        return mpt_secure_seal_from(buf, buf + MPT_SECURE_HEADER_SIZE, len, k, cipher, flags, path_id, counter);
}

size_t mpt_secure_seal_from(uint8_t *buf, const uint8_t *m, size_t len, const MptSecureKeys *k, MptCipher cipher,
                            uint8_t flags, uint16_t path_id, uint64_t counter) {
        uint8_t nonce[MPT_SECURE_NONCE_SIZE];
        uint8_t *c = buf + MPT_SECURE_HEADER_SIZE;
        bool aes = cipher == MPT_CIPHER_AES256_GCM;

        assert(!aes || k->has_aes);
        buf[0] = aes ? MPT_SECURE_V1_AESGCM : MPT_SECURE_V1_CHACHA;
        buf[1] = flags;
        buf[2] = (uint8_t) (path_id >> 8);
        buf[3] = (uint8_t) path_id;
        wr64(buf + 4, k->epoch);
        wr64(buf + 12, counter);
        nonce_of(buf, nonce);
        /* In place or not (libsodium allows c == m); the tag goes right after the ciphertext. */
        if (aes)
                crypto_aead_aes256gcm_encrypt_detached_afternm(c, c + len, NULL, m, len, buf, MPT_SECURE_HEADER_SIZE,
                                                               NULL, nonce, &k->aes);
        else
                crypto_aead_chacha20poly1305_ietf_encrypt_detached(c, c + len, NULL, m, len, buf,
                                                                   MPT_SECURE_HEADER_SIZE, NULL, nonce, k->chacha);
        return len + MPT_SECURE_OVERHEAD;
}

int mpt_secure_parse(const uint8_t *buf, size_t len, MptSecureHeader *ret) {
        if (len == 0)
                return MPT_DROP_TOO_SHORT;
        if (buf[0] != MPT_SECURE_V1_CHACHA && buf[0] != MPT_SECURE_V1_AESGCM) {
                /* A GRE header as compat mode sends it (version 0, no routing or reserved bits in
                 * the first byte): a peer in compat mode, or an original MPT peer. */
                if ((buf[0] & 0x4f) == 0)
                        return MPT_DROP_COMPAT_PACKET;
                return MPT_DROP_BAD_VERSION;
        }
        /* An empty plaintext cannot be a datagram of ours either. */
        if (len <= MPT_SECURE_OVERHEAD)
                return MPT_DROP_TOO_SHORT;
        if (buf[1] & ~MPT_SECURE_FLAG_AES)
                return MPT_DROP_BAD_HEADER;
        *ret = (MptSecureHeader) {
                .version = buf[0],
                .cipher = buf[0] == MPT_SECURE_V1_AESGCM ? MPT_CIPHER_AES256_GCM : MPT_CIPHER_CHACHA20_POLY1305,
                .flags = buf[1],
                .path_id = (uint16_t) (buf[2] << 8 | buf[3]),
                .epoch = rd64(buf + 4),
                .counter = rd64(buf + 12),
        };
        if (ret->path_id >= MPT_PATHS_MAX || ret->epoch == 0)
                return MPT_DROP_BAD_HEADER;
        return -1;
}

int mpt_secure_open(uint8_t *buf, size_t len, const MptSecureKeys *k) {
        uint8_t nonce[MPT_SECURE_NONCE_SIZE];
        uint8_t *c = buf + MPT_SECURE_HEADER_SIZE;
        size_t clen;
        int r;

        if (len <= MPT_SECURE_OVERHEAD)
                return MPT_DROP_TOO_SHORT;
        clen = len - MPT_SECURE_OVERHEAD;
        nonce_of(buf, nonce);
        if (buf[0] == MPT_SECURE_V1_AESGCM) {
                if (!k->has_aes)
                        return MPT_DROP_BAD_VERSION;
                r = crypto_aead_aes256gcm_decrypt_detached_afternm(c, NULL, c, clen, c + clen, buf,
                                                                   MPT_SECURE_HEADER_SIZE, nonce, &k->aes);
        } else
                r = crypto_aead_chacha20poly1305_ietf_decrypt_detached(c, NULL, c, clen, c + clen, buf,
                                                                       MPT_SECURE_HEADER_SIZE, nonce, k->chacha);
        return r != 0 ? MPT_DROP_AUTH_FAILED : -1;
}

/* RFC 6479: a ring of 64-bit words; bit (counter mod ring size). Advancing clears the words the
 * window moves into. One word more than the window, so that a counter within the window never
 * shares a word with one that is being cleared. */
#define RING_BITS (MPT_REPLAY_WORDS * 64u)

bool mpt_replay_check(const MptReplay *r, uint64_t counter) {
        uint64_t bit;

        if (!r->any || counter > r->top)
                return true;
        if (r->top - counter >= MPT_REPLAY_WINDOW)
                return false;
        bit = counter % RING_BITS;
        return !(r->bits[bit / 64] & (UINT64_C(1) << (bit % 64)));
}

bool mpt_replay_update(MptReplay *r, uint64_t counter) {
        uint64_t bit;

        if (!mpt_replay_check(r, counter))
                return false;
        if (!r->any) {
                memset(r->bits, 0, sizeof r->bits);
                r->any = true;
                r->top = counter;
        } else if (counter > r->top) {
                uint64_t from = r->top / 64 + 1, to = counter / 64;
                if (to - from + 1 >= MPT_REPLAY_WORDS || to < from - 1)
                        memset(r->bits, 0, sizeof r->bits);
                else
                        for (uint64_t i = from; i <= to; i++)
                                r->bits[i % MPT_REPLAY_WORDS] = 0;
                r->top = counter;
        }
        bit = counter % RING_BITS;
        r->bits[bit / 64] |= UINT64_C(1) << (bit % 64);
        return true;
}

int mpt_secure_rx_check(const MptSecureRx *rx, const MptSecureHeader *h) {
        if (h->epoch == rx->own_epoch)
                return MPT_DROP_OWN_EPOCH;
        if (h->epoch < rx->peer_epoch)
                return MPT_DROP_STALE_EPOCH;
        if (h->epoch == rx->peer_epoch && !mpt_replay_check(&rx->replay[h->path_id], h->counter))
                return MPT_DROP_REPLAYED;
        return -1;
}

int mpt_secure_rx_accept(MptSecureRx *rx, const MptSecureHeader *h, bool *ret_new_epoch) {
        int reason = mpt_secure_rx_check(rx, h);

        *ret_new_epoch = false;
        if (reason >= 0)
                return reason;
        if (h->epoch > rx->peer_epoch) {
                /* The other end restarted (or this is its first datagram): a new key, new counters. */
                rx->peer_epoch = h->epoch;
                for (size_t i = 0; i < MPT_PATHS_MAX; i++)
                        rx->replay[i].any = false;
                *ret_new_epoch = true;
        }
        if (!mpt_replay_update(&rx->replay[h->path_id], h->counter))
                return MPT_DROP_REPLAYED;
        __atomic_store_n(&rx->peer_aes, !!(h->flags & MPT_SECURE_FLAG_AES), __ATOMIC_RELAXED);
        return -1;
}

int mpt_secure_reserve(uint64_t *next, uint64_t n, uint64_t *ret_first) {
        uint64_t cur = __atomic_load_n(next, __ATOMIC_RELAXED);

        do {
                /* The last usable counter is UINT64_MAX - 1: *next must stay representable. */
                if (n == 0 || cur > UINT64_MAX - 1 - (n - 1) || cur + n < cur)
                        return -EOVERFLOW;
        } while (!__atomic_compare_exchange_n(next, &cur, cur + n, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
        *ret_first = cur;
        return 0;
}
