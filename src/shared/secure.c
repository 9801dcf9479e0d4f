/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <limits.h>
#include <pthread.h>
#include <sys/auxv.h>

#include "byteorder.h"
#include "secure.h"
#include "wire.h"

static const char *const mpt_cipher_table[_MPT_CIPHER_MAX] = {
        [MPT_CIPHER_CHACHA20_POLY1305] = "chacha20-poly1305",
        [MPT_CIPHER_AES256_GCM] = "aes-256-gcm",
};
DEFINE_STRING_TABLE(mpt_cipher, MptCipher, _MPT_CIPHER_MAX);

/* The algorithms, fetched from libcrypto's providers once (mpt_secure_init()), so that nothing
 * is looked up (or loaded from disk) on the data path. */
static EVP_CIPHER *ciphers[_MPT_CIPHER_MAX];
static EVP_MAC *blake2b_mac;
static int init_result = -EAGAIN;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Unique per derivation (never 0): which keys a thread's cipher contexts hold. */
static uint64_t next_key_id = 1;

/* libcrypto's cipher contexts hold an expanded key and per-message state, so one thread cannot
 * share them with another. Each thread keeps its own, one per cipher and direction, keyed on
 * the last keys it used (the data path uses one set at a time, so re-keying is rare). They are
 * freed (and wiped, as libcrypto does on free) when the thread ends. */
typedef struct ThreadCiphers {
        EVP_CIPHER_CTX *ctx[_MPT_CIPHER_MAX][2]; /* [cipher][1: seal, 0: open] */
        uint64_t key_id[_MPT_CIPHER_MAX][2];
} ThreadCiphers;

static _Thread_local ThreadCiphers *thread_ciphers;
static pthread_key_t thread_ciphers_key;

static void thread_ciphers_free(void *p) {
        ThreadCiphers *tc = p;

        for (size_t c = 0; c < _MPT_CIPHER_MAX; c++)
                for (size_t e = 0; e < 2; e++)
                        EVP_CIPHER_CTX_free(tc->ctx[c][e]);
        free(tc);
        thread_ciphers = NULL;
}

static void init_once_fn(void) {
        static const char *const names[_MPT_CIPHER_MAX] = {
                [MPT_CIPHER_CHACHA20_POLY1305] = "ChaCha20-Poly1305",
                [MPT_CIPHER_AES256_GCM] = "AES-256-GCM",
        };

        /* Reads the system's OpenSSL configuration (its providers); no cleanup at exit, where
         * another thread might still be sealing. */
        if (OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG | OPENSSL_INIT_NO_ATEXIT, NULL) != 1) {
                init_result = -EIO;
                return;
        }
        for (size_t c = 0; c < _MPT_CIPHER_MAX; c++) {
                ciphers[c] = EVP_CIPHER_fetch(NULL, names[c], NULL);
                if (!ciphers[c]) {
                        init_result = -EOPNOTSUPP;
                        return;
                }
        }
        blake2b_mac = EVP_MAC_fetch(NULL, "BLAKE2BMAC", NULL);
        if (!blake2b_mac) {
                init_result = -EOPNOTSUPP;
                return;
        }
        if (pthread_key_create(&thread_ciphers_key, thread_ciphers_free) != 0) {
                init_result = -ENOMEM;
                return;
        }
        init_result = 0;
}

int mpt_secure_init(void) {
        pthread_once(&init_once, init_once_fn);
        return init_result;
}

const char *mpt_secure_library(void) {
        return OpenSSL_version(OPENSSL_VERSION);
}

bool mpt_secure_aes_available(void) {
        /* libcrypto has AES-256-GCM everywhere, but only with AES instructions (and carry-less
         * multiplication for GHASH) is it both fast and free of key-dependent table lookups;
         * without them ChaCha20-Poly1305 is the faster and the safer choice. */
#if defined(__x86_64__) || defined(__i386__)
        return __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
#elif defined(__aarch64__)
        unsigned long hw = getauxval(AT_HWCAP);
        return (hw & (1ul << 3)) && (hw & (1ul << 4)); /* HWCAP_AES, HWCAP_PMULL */
#else
        return false;
#endif
}

int mpt_secure_derive_key(const uint8_t psk[MPT_KEY_SIZE], uint64_t epoch, MptCipher cipher,
                          uint8_t ret[MPT_KEY_SIZE]) {
        const char *label = cipher == MPT_CIPHER_AES256_GCM ? MPT_SECURE_KDF_LABEL_AESGCM : MPT_SECURE_KDF_LABEL_CHACHA;
        size_t n = strlen(label), out = 0, size = MPT_KEY_SIZE;
        OSSL_PARAM params[] = {
                OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
                OSSL_PARAM_construct_end(),
        };
        EVP_MAC_CTX *ctx = NULL;
        uint8_t msg[32];
        int r = -EIO;

        assert(n + 8 <= sizeof msg);
        memcpy(msg, label, n);
        wr64be(msg + n, epoch);
        /* Keyed BLAKE2b with a 32-byte digest (RFC 7693; what libsodium calls crypto_generichash). */
        if (mpt_secure_init() < 0)
                goto fail;
        ctx = EVP_MAC_CTX_new(blake2b_mac);
        if (!ctx) {
                r = -ENOMEM;
                goto fail;
        }
        if (EVP_MAC_init(ctx, psk, MPT_KEY_SIZE, params) == 1 && EVP_MAC_update(ctx, msg, n + 8) == 1 &&
            EVP_MAC_final(ctx, ret, &out, MPT_KEY_SIZE) == 1 && out == MPT_KEY_SIZE) {
                EVP_MAC_CTX_free(ctx);
                return 0;
        }
fail:
        EVP_MAC_CTX_free(ctx);
        explicit_bzero(ret, MPT_KEY_SIZE);
        return r;
}

int mpt_secure_derive(const uint8_t psk[MPT_KEY_SIZE], uint64_t epoch, bool with_aes, MptSecureKeys *ret) {
        int r;

        mpt_secure_keys_wipe(ret);
        r = mpt_secure_derive_key(psk, epoch, MPT_CIPHER_CHACHA20_POLY1305, ret->key[MPT_CIPHER_CHACHA20_POLY1305]);
        if (r >= 0 && with_aes)
                r = mpt_secure_derive_key(psk, epoch, MPT_CIPHER_AES256_GCM, ret->key[MPT_CIPHER_AES256_GCM]);
        if (r < 0) {
                mpt_secure_keys_wipe(ret);
                return r;
        }
        ret->has_aes = with_aes;
        ret->epoch = epoch;
        ret->id = __atomic_fetch_add(&next_key_id, 1, __ATOMIC_RELAXED);
        return 0;
}

void mpt_secure_keys_wipe(MptSecureKeys *k) {
        explicit_bzero(k, sizeof *k);
}

/* This thread's context for cipher and direction, holding k's key. NULL: no memory (or
 * libcrypto refused, which it does not for valid keys). */
static EVP_CIPHER_CTX *thread_ctx(const MptSecureKeys *k, MptCipher cipher, bool seal) {
        ThreadCiphers *tc = thread_ciphers;
        EVP_CIPHER_CTX *ctx;

        if (!tc) {
                if (mpt_secure_init() < 0)
                        return NULL;
                tc = calloc(1, sizeof *tc);
                if (!tc)
                        return NULL;
                if (pthread_setspecific(thread_ciphers_key, tc) != 0) {
                        free(tc);
                        return NULL;
                }
                thread_ciphers = tc;
        }
        ctx = tc->ctx[cipher][seal];
        if (ctx && tc->key_id[cipher][seal] == k->id)
                return ctx;
        if (!ctx) {
                ctx = EVP_CIPHER_CTX_new();
                if (!ctx)
                        return NULL;
                if (EVP_CipherInit_ex2(ctx, ciphers[cipher], NULL, NULL, seal, NULL) != 1) {
                        EVP_CIPHER_CTX_free(ctx);
                        return NULL;
                }
                tc->ctx[cipher][seal] = ctx;
        }
        tc->key_id[cipher][seal] = 0;
        if (EVP_CipherInit_ex2(ctx, NULL, k->key[cipher], NULL, seal, NULL) != 1)
                return NULL;
        tc->key_id[cipher][seal] = k->id;
        return ctx;
}

static void nonce_of(const uint8_t *header, uint8_t nonce[static MPT_SECURE_NONCE_SIZE]) {
        memcpy(nonce, header, 4);                              /* type, flags, path id, lane */
        memcpy(nonce + 4, header + MPT_SECURE_OFF_COUNTER, 8); /* counter */
}

size_t mpt_secure_seal(uint8_t *buf, size_t len, const MptSecureKeys *k, MptCipher cipher, uint8_t flags,
                       MptSecureSender from) {
        return mpt_secure_seal_from(buf, buf + MPT_SECURE_HEADER_SIZE, len, k, cipher, flags, from);
}

size_t mpt_secure_seal_from(uint8_t *buf, const uint8_t *m, size_t len, const MptSecureKeys *k, MptCipher cipher,
                            uint8_t flags, MptSecureSender from) {
        uint8_t nonce[MPT_SECURE_NONCE_SIZE];
        uint8_t *c = buf + MPT_SECURE_HEADER_SIZE;
        bool aes = cipher == MPT_CIPHER_AES256_GCM;
        EVP_CIPHER_CTX *ctx;
        int n;

        assert(!aes || k->has_aes);
        assert(k->id != 0);
        assert(len <= INT_MAX);
        assert(!(flags & ~MPT_SECURE_FLAG_AES));
        assert(from.path_id < MPT_PATHS_MAX && from.lane < MPT_SECURE_LANES);
        buf[0] = MPT_SECURE_V2_TRANSPORT;
        buf[MPT_SECURE_OFF_FLAGS] = flags | (aes ? MPT_SECURE_FLAG_AESGCM : 0);
        buf[MPT_SECURE_OFF_PATH_ID] = from.path_id;
        buf[MPT_SECURE_OFF_LANE] = from.lane;
        wr64be(buf + MPT_SECURE_OFF_EPOCH, k->epoch);
        wr64be(buf + MPT_SECURE_OFF_COUNTER, from.counter);
        nonce_of(buf, nonce);
        ctx = thread_ctx(k, cipher, true);
        /* In place or not (libcrypto allows c == m); the tag goes right after the ciphertext. */
        if (!ctx || EVP_CipherInit_ex2(ctx, NULL, NULL, nonce, 1, NULL) != 1 ||
            EVP_CipherUpdate(ctx, NULL, &n, buf, MPT_SECURE_HEADER_SIZE) != 1 ||
            EVP_CipherUpdate(ctx, c, &n, m, (int) len) != 1 || (size_t) n != len ||
            EVP_CipherFinal_ex(ctx, c + len, &n) != 1)
                return 0;
        /* The tag through the provider's parameters (EVP_CIPHER_CTX_ctrl() would build them and
         * look up the IV length on every call). */
        OSSL_PARAM tag[] = {
                OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, c + len, MPT_SECURE_TAG_SIZE),
                OSSL_PARAM_construct_end(),
        };
        if (EVP_CIPHER_CTX_get_params(ctx, tag) != 1)
                return 0;
        return len + MPT_SECURE_OVERHEAD;
}

int mpt_secure_parse(const uint8_t *buf, size_t len, MptSecureHeader *ret) {
        if (len == 0)
                return MPT_DROP_TOO_SHORT;
        if (buf[0] != MPT_SECURE_V2_TRANSPORT) {
                /* A GRE header as compat mode sends it (version 0, no routing or reserved bits in
                 * the first byte): a peer in compat mode, or an original MPT peer. Anything else
                 * (version 1 of an older mptd, a message type this version does not speak) is
                 * another version. */
                if ((buf[0] & (uint8_t) ((MPT_GRE_R | MPT_GRE_RESERVED0) >> 8)) == 0)
                        return MPT_DROP_COMPAT_PACKET;
                return MPT_DROP_BAD_VERSION;
        }
        /* An empty plaintext cannot be a datagram of ours either. */
        if (len <= MPT_SECURE_OVERHEAD)
                return MPT_DROP_TOO_SHORT;
        if (buf[MPT_SECURE_OFF_FLAGS] & ~MPT_SECURE_FLAGS_KNOWN)
                return MPT_DROP_BAD_HEADER;
        *ret = (MptSecureHeader) {
                .type = buf[0],
                .cipher = buf[MPT_SECURE_OFF_FLAGS] & MPT_SECURE_FLAG_AESGCM ? MPT_CIPHER_AES256_GCM
                                                                             : MPT_CIPHER_CHACHA20_POLY1305,
                .flags = buf[MPT_SECURE_OFF_FLAGS],
                .path_id = buf[MPT_SECURE_OFF_PATH_ID],
                .lane = buf[MPT_SECURE_OFF_LANE],
                .epoch = rd64be(buf + MPT_SECURE_OFF_EPOCH),
                .counter = rd64be(buf + MPT_SECURE_OFF_COUNTER),
        };
        if (ret->path_id >= MPT_PATHS_MAX || ret->lane >= MPT_SECURE_LANES || ret->epoch == 0)
                return MPT_DROP_BAD_HEADER;
        return -1;
}

int mpt_secure_open(uint8_t *buf, size_t len, const MptSecureKeys *k) {
        uint8_t nonce[MPT_SECURE_NONCE_SIZE];
        uint8_t *c = buf + MPT_SECURE_HEADER_SIZE;
        MptCipher cipher;
        EVP_CIPHER_CTX *ctx;
        size_t clen;
        int n;

        if (len <= MPT_SECURE_OVERHEAD)
                return MPT_DROP_TOO_SHORT;
        assert(len <= INT_MAX);
        clen = len - MPT_SECURE_OVERHEAD;
        nonce_of(buf, nonce);
        if (buf[MPT_SECURE_OFF_FLAGS] & MPT_SECURE_FLAG_AESGCM) {
                if (!k->has_aes)
                        return MPT_DROP_BAD_VERSION;
                cipher = MPT_CIPHER_AES256_GCM;
        } else
                cipher = MPT_CIPHER_CHACHA20_POLY1305;
        /* The expected tag goes in with the nonce, in one call. */
        OSSL_PARAM tag[] = {
                OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, c + clen, MPT_SECURE_TAG_SIZE),
                OSSL_PARAM_construct_end(),
        };
        ctx = thread_ctx(k, cipher, false);
        if (!ctx || EVP_CipherInit_ex2(ctx, NULL, NULL, nonce, 0, tag) != 1 ||
            EVP_CipherUpdate(ctx, NULL, &n, buf, MPT_SECURE_HEADER_SIZE) != 1)
                return MPT_DROP_CIPHER_ERROR;
        if (EVP_CipherUpdate(ctx, c, &n, c, (int) clen) != 1 || (size_t) n != clen) {
                explicit_bzero(c, clen);
                return MPT_DROP_CIPHER_ERROR;
        }
        /* Decrypted in place before the tag is known to be good: on failure the plaintext is
         * wiped (the datagram is dropped anyway). */
        if (EVP_CipherFinal_ex(ctx, c + clen, &n) != 1) {
                explicit_bzero(c, clen);
                return MPT_DROP_AUTH_FAILED;
        }
        return -1;
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

static_assert(MPT_PATHS_MAX <= 64, "a path is one bit of a uint64_t");
static_assert(MPT_SECURE_LANES <= 256, "a lane is one byte of the header");

MptSecureRx *mpt_secure_rx_new(uint64_t own_epoch) {
        /* Mostly windows that are never used: calloc() leaves their pages untouched. */
        MptSecureRx *rx = calloc(1, sizeof(MptSecureRx));

        if (rx)
                rx->own_epoch = own_epoch;
        return rx;
}

MptSecureRx *mpt_secure_rx_new_sessions(void) {
        MptSecureRx *rx = calloc(1, sizeof(MptSecureRx));

        if (rx)
                rx->sessions = true;
        return rx;
}

MptSecureRx *mpt_secure_rx_free(MptSecureRx *rx) {
        return mfree(rx);
}

uint64_t mpt_secure_rx_peer_epoch(const MptSecureRx *rx) {
        return __atomic_load_n(&rx->peer_epoch, __ATOMIC_ACQUIRE);
}

bool mpt_secure_rx_peer_aes(const MptSecureRx *rx) {
        return __atomic_load_n(&rx->peer_aes, __ATOMIC_RELAXED);
}

static uint64_t epoch_order(const MptSecureRx *rx, uint64_t epoch) {
        return mpt_secure_epoch_order(rx->sessions, epoch);
}

static const MptSecureRxWindow *lane_window(const MptSecureRxLane *l, uint64_t epoch) {
        for (size_t i = 0; i < MPT_SECURE_RX_WINDOWS; i++)
                if (l->windows[i].epoch == epoch)
                        return &l->windows[i];
        return NULL;
}

/* Whether a lane would take a window for epoch, which it has none for: it is newer than one of
 * those it has (an unused one counts as oldest). */
static bool lane_takes(const MptSecureRx *rx, const MptSecureRxLane *l, uint64_t epoch) {
        for (size_t i = 0; i < MPT_SECURE_RX_WINDOWS; i++)
                if (epoch_order(rx, epoch) > epoch_order(rx, l->windows[i].epoch))
                        return true;
        return false;
}

int mpt_secure_rx_bound(const MptSecureRx *rx, const MptSecureHeader *h) {
        const MptSecureRxPath *p = &rx->paths[h->path_id];

        if (!rx->sessions && h->epoch != mpt_secure_rx_peer_epoch(rx))
                return -1;
        if (p->epoch != h->epoch || p->bound == 0)
                return -1;
        return p->bound - 1;
}

int mpt_secure_rx_check(const MptSecureRx *rx, const MptSecureHeader *h, uint64_t paths) {
        const MptSecureRxPath *p = &rx->paths[h->path_id];
        const MptSecureRxLane *l = &p->lanes[h->lane];
        const MptSecureRxWindow *win = lane_window(l, h->epoch);
        uint64_t peer = mpt_secure_rx_peer_epoch(rx);

        if (!rx->sessions) {
                if (h->epoch == rx->own_epoch)
                        return MPT_DROP_OWN_EPOCH;
                /* (The sender path's own state may be of a newer epoch than peer_epoch was when it
                 * was read: another sender path raised it since.) */
                if (h->epoch < peer || h->epoch < p->epoch)
                        return MPT_DROP_STALE_EPOCH;
        }
        if (!win && !lane_takes(rx, l, h->epoch))
                return rx->sessions ? MPT_DROP_STALE_SESSION : MPT_DROP_STALE_EPOCH;
        /* Bindings are of their epoch; a newer one starts without any. (With the handshake, a
         * datagram of an older session still in flight is held to the newer binding.) */
        if (epoch_order(rx, h->epoch) <= epoch_order(rx, p->epoch) && p->bound != 0 &&
            !(paths & MPT_SECURE_PATH_BIT(p->bound - 1)))
                return MPT_DROP_PATH_MISMATCH;
        if (win && !mpt_replay_check(&win->replay, h->counter))
                return MPT_DROP_REPLAYED;
        return -1;
}

int mpt_secure_rx_accept(MptSecureRx *rx, const MptSecureHeader *h, uint64_t paths, bool *ret_new_epoch) {
        MptSecureRxPath *p = &rx->paths[h->path_id];
        MptSecureRxLane *l = &p->lanes[h->lane];
        MptSecureRxWindow *win;
        int reason = mpt_secure_rx_check(rx, h, paths);
        uint64_t peer;
        bool aes;

        *ret_new_epoch = false;
        if (reason >= 0)
                return reason;
        /* The other end restarted, or a new session began (or this is the first datagram): a new
         * key, new counters, and the other end's paths may be others (its profile may have
         * changed). Without the handshake, older epochs are refused from now on, on every sender
         * path; this one's windows and binding start afresh when its first datagram of the epoch
         * comes. */
        peer = mpt_secure_rx_peer_epoch(rx);
        while (epoch_order(rx, h->epoch) > epoch_order(rx, peer))
                if (__atomic_compare_exchange_n(&rx->peer_epoch, &peer, h->epoch, false, __ATOMIC_RELEASE,
                                                __ATOMIC_ACQUIRE)) {
                        *ret_new_epoch = true;
                        break;
                }
        if (!rx->sessions && h->epoch < peer)
                return MPT_DROP_STALE_EPOCH; /* a newer one came meanwhile */
        if (epoch_order(rx, h->epoch) > epoch_order(rx, p->epoch)) {
                p->epoch = h->epoch;
                p->bound = 0;
        }
        win = (MptSecureRxWindow *) lane_window(l, h->epoch);
        if (!win) {
                /* The older window goes (check() made sure that this epoch is newer than it). */
                win = &l->windows[0];
                for (size_t i = 1; i < MPT_SECURE_RX_WINDOWS; i++)
                        if (epoch_order(rx, l->windows[i].epoch) < epoch_order(rx, win->epoch))
                                win = &l->windows[i];
                win->epoch = h->epoch;
                win->replay.any = false;
        }
        if (!mpt_replay_update(&win->replay, h->counter))
                return MPT_DROP_REPLAYED;
        /* One path named: the datagram's path is known, and its sender path id belongs to it from
         * now on. (paths & (paths - 1)) == 0: at most one bit set. */
        if (p->bound == 0 && p->epoch == h->epoch && paths != 0 && (paths & (paths - 1)) == 0)
                p->bound = (uint8_t) (__builtin_ctzll(paths) + 1);
        /* Written only when it changes: the sending workers read it for every window. Only the
         * newest epoch's word counts. */
        aes = !!(h->flags & MPT_SECURE_FLAG_AES);
        if (h->epoch == mpt_secure_rx_peer_epoch(rx) && __atomic_load_n(&rx->peer_aes, __ATOMIC_RELAXED) != aes)
                __atomic_store_n(&rx->peer_aes, aes, __ATOMIC_RELAXED);
        return -1;
}

bool mpt_secure_limit_take(MptSecureLimit *l, usec_t now) {
        if (!l->started) {
                *l = (MptSecureLimit) { .started = true, .tokens = MPT_SECURE_DERIVE_BURST, .since = now };
        } else if (now >= l->since + MPT_SECURE_DERIVE_INTERVAL_USEC) {
                uint64_t n = (now - l->since) / MPT_SECURE_DERIVE_INTERVAL_USEC;

                if (n >= MPT_SECURE_DERIVE_BURST - l->tokens) {
                        l->tokens = MPT_SECURE_DERIVE_BURST;
                        l->since = now;
                } else {
                        l->tokens += (unsigned) n;
                        l->since += n * MPT_SECURE_DERIVE_INTERVAL_USEC;
                }
        }
        if (l->tokens == 0)
                return false;
        /* A full bucket starts its refill from the first token taken. */
        if (l->tokens == MPT_SECURE_DERIVE_BURST)
                l->since = now;
        l->tokens--;
        return true;
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
