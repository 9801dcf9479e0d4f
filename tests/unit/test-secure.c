/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "secure.h"
#include "wire.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>
#include <openssl/crypto.h>
#include <stdlib.h>

#include "unhex.h"

/* ---- a fixed vector ----
 * Computed independently of libcrypto and of this code (Python: hashlib.blake2b and the
 * "cryptography" package's ChaCha20Poly1305 and AESGCM) from version 2 of the format as mptd(8)
 * describes it:
 *   PSK = 00 01 .. 1f, epoch = 0x187a3c5e9d2b41f7, path id 3, lane 0, counter 42,
 *   plaintext = a GRE header (0000 0800) and an ICMP echo request in IPv4. */
static const uint8_t vec_psk[32] = { 0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                     16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31 };
#define VEC_EPOCH UINT64_C(0x187a3c5e9d2b41f7)
#define VEC_KEY "e936d6c300128f1953a95fa6886d00cf4d7cffad676156fe8991d69995a04ea3"
#define VEC_PLAIN "000008004500001c0001000040017cdf0a4d00010a4d00020800f7ff00000000"
#define VEC_DGRAM                                                                                   \
        "e3000300187a3c5e9d2b41f7000000000000002a928cecfb563403122cb64978a65792eaceb5d8cf79372ff8" \
        "6295a481a8765ddb3e011abb714322b94bd371b01f86ea0e"
/* The same with AES-256-GCM (flag G) and the flag "can receive AES-256-GCM" (A). */
#define VEC_KEY_AES "31188594abd74b75412ce776269ef8edd63b0c34a9f0c44c5cd6f69940e455a0"
#define VEC_DGRAM_AES                                                                               \
        "e3030300187a3c5e9d2b41f7000000000000002a9b4082c412395eb57fa07d677cc78cffb42063628aa65ccf" \
        "9cf7aa31ac29b3e597cd90ba56a0a6655d97febeeed0d247"
/* The same as VEC_DGRAM on lane 5, and as VEC_DGRAM_AES on lane 62 (the lane is in the nonce and
 * the associated data: the ciphertexts and tags all differ). */
#define VEC_DGRAM_LANE5                                                                             \
        "e3000305187a3c5e9d2b41f7000000000000002a291a40e9bc71130ec81037ddddf3499cb1d1626f31e649e7" \
        "3d1d6e82172972b3580ab010f05a3dbd5a5db47dd88e307e"
#define VEC_DGRAM_AES_LANE62                                                                        \
        "e303033e187a3c5e9d2b41f7000000000000002ad615692a5380d66eb346d351574ca795d0c7a60db500a7d1" \
        "5a4962d499af510e6ebc49d06a3a77eca33ac9e9650372d2"

/* AES-256-GCM needs AES instructions; where there are none, its cases are skipped. */
static bool have_aes;

typedef struct CipherVector {
        MptCipher cipher;
        uint8_t flags;  /* given to seal: the capabilities (A) */
        uint8_t header; /* the flags byte it writes: the capabilities and the cipher (G) */
        uint8_t lane;
        const char *key, *dgram;
} CipherVector;

static const CipherVector cipher_vectors[] = {
        { MPT_CIPHER_CHACHA20_POLY1305, 0, 0, 0, VEC_KEY, VEC_DGRAM },
        { MPT_CIPHER_AES256_GCM, MPT_SECURE_FLAG_AES, MPT_SECURE_FLAG_AES | MPT_SECURE_FLAG_AESGCM, 0, VEC_KEY_AES,
          VEC_DGRAM_AES },
        { MPT_CIPHER_CHACHA20_POLY1305, 0, 0, 5, VEC_KEY, VEC_DGRAM_LANE5 },
        { MPT_CIPHER_AES256_GCM, MPT_SECURE_FLAG_AES, MPT_SECURE_FLAG_AES | MPT_SECURE_FLAG_AESGCM, 62, VEC_KEY_AES,
          VEC_DGRAM_AES_LANE62 },
};

static void test_vector_key(const void *data) {
        const CipherVector *v = data;
        uint8_t key[MPT_KEY_SIZE], want[MPT_KEY_SIZE];

        unhex(v->key, want, sizeof want);
        g_assert_cmpint(mpt_secure_derive_key(vec_psk, VEC_EPOCH, v->cipher, key), ==, 0);
        g_assert_cmpmem(key, sizeof key, want, sizeof want);
}

static void test_vector_seal(const void *data) {
        const CipherVector *v = data;
        uint8_t buf[256], want[256];
        MptSecureKeys k;
        size_t n, plain, want_n;

        if (v->cipher == MPT_CIPHER_AES256_GCM && !have_aes) {
                g_test_skip("no AES instructions");
                return;
        }
        g_assert_cmpint(mpt_secure_derive(vec_psk, VEC_EPOCH, have_aes, &k), ==, 0);
        plain = unhex(VEC_PLAIN, buf + MPT_SECURE_HEADER_SIZE, sizeof buf - MPT_SECURE_OVERHEAD);
        want_n = unhex(v->dgram, want, sizeof want);
        n = mpt_secure_seal(buf, plain, &k, v->cipher, v->flags, (MptSecureSender) { .path_id = 3, .lane = v->lane, .counter = 42 });
        g_assert_cmpuint(n, ==, plain + MPT_SECURE_OVERHEAD);
        g_assert_cmpmem(buf, n, want, want_n);
}

static void test_vector_open(const void *data) {
        const CipherVector *v = data;
        uint8_t buf[256], plain[256];
        MptSecureHeader h;
        MptSecureKeys k;
        size_t n, plain_n;

        g_assert_cmpint(mpt_secure_derive(vec_psk, VEC_EPOCH, have_aes, &k), ==, 0);
        n = unhex(v->dgram, buf, sizeof buf);
        plain_n = unhex(VEC_PLAIN, plain, sizeof plain);
        g_assert_cmpint(mpt_secure_parse(buf, n, &h), ==, -1);
        g_assert_cmpint(h.cipher, ==, v->cipher);
        g_assert_cmpuint(h.type, ==, MPT_SECURE_V2_TRANSPORT);
        g_assert_cmpuint(h.flags, ==, v->header);
        g_assert_cmpuint(h.path_id, ==, 3);
        g_assert_cmpuint(h.lane, ==, v->lane);
        g_assert_cmpuint(h.epoch, ==, VEC_EPOCH);
        g_assert_cmpuint(h.counter, ==, 42);
        if (v->cipher == MPT_CIPHER_AES256_GCM && !have_aes) {
                /* Without AES instructions: refused as a version this end cannot read. */
                g_assert_cmpint(mpt_secure_open(buf, n, &k), ==, MPT_DROP_BAD_VERSION);
                return;
        }
        g_assert_cmpint(mpt_secure_open(buf, n, &k), ==, -1);
        g_assert_cmpmem(buf + MPT_SECURE_HEADER_SIZE, n - MPT_SECURE_OVERHEAD, plain, plain_n);
        /* Keys without AES-256-GCM (a CPU without AES instructions) cannot open it. */
        if (v->cipher == MPT_CIPHER_AES256_GCM) {
                n = unhex(v->dgram, buf, sizeof buf);
                g_assert_cmpint(mpt_secure_derive(vec_psk, VEC_EPOCH, false, &k), ==, 0);
                g_assert_cmpint(mpt_secure_open(buf, n, &k), ==, MPT_DROP_BAD_VERSION);
        }
}

/* ---- round trips and tampering ---- */

typedef struct Sealed {
        uint8_t buf[2048];
        size_t len;
        uint8_t plain[2048 - MPT_SECURE_OVERHEAD];
        size_t plain_len;
        MptSecureKeys key;
} Sealed;

/* The cipher the tests below use: both in turn, where the CPU can do AES-256-GCM. */
static MptCipher cur_cipher = MPT_CIPHER_CHACHA20_POLY1305;

static void seal_random(Sealed *s, size_t plain_len, uint8_t path, uint64_t epoch, uint64_t counter) {
        g_assert_cmpuint(plain_len, <=, sizeof s->plain);
        for (size_t i = 0; i < plain_len; i++)
                s->plain[i] = (uint8_t) g_test_rand_int();
        s->plain_len = plain_len;
        g_assert_cmpint(mpt_secure_derive(vec_psk, epoch, have_aes, &s->key), ==, 0);
        memcpy(s->buf + MPT_SECURE_HEADER_SIZE, s->plain, plain_len);
        s->len = mpt_secure_seal(s->buf, plain_len, &s->key, cur_cipher, have_aes ? MPT_SECURE_FLAG_AES : 0,
                                 (MptSecureSender) { .path_id = path, .counter = counter });
}

static void test_round_trip(void) {
        static const size_t sizes[] = { 1, 4, 15, 16, 17, 63, 64, 65, 1400, 1500, 2048 - MPT_SECURE_OVERHEAD };

        for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
                Sealed s;
                MptSecureHeader h;

                seal_random(&s, sizes[i], (uint8_t) (i % MPT_PATHS_MAX), 7 + i, 1 + i);
                g_assert_cmpuint(s.len, ==, sizes[i] + MPT_SECURE_OVERHEAD);
                /* Encrypted: the plaintext is not there any more (for a few bytes, by chance). */
                if (sizes[i] >= 16)
                        g_assert_true(memcmp(s.buf + MPT_SECURE_HEADER_SIZE, s.plain, sizes[i]) != 0);
                g_assert_cmpint(mpt_secure_parse(s.buf, s.len, &h), ==, -1);
                g_assert_cmpuint(h.path_id, ==, i % MPT_PATHS_MAX);
                g_assert_cmpuint(h.epoch, ==, 7 + i);
                g_assert_cmpuint(h.counter, ==, 1 + i);
                g_assert_cmpint(mpt_secure_open(s.buf, s.len, &s.key), ==, -1);
                g_assert_cmpmem(s.buf + MPT_SECURE_HEADER_SIZE, s.len - MPT_SECURE_OVERHEAD, s.plain, s.plain_len);
        }
}

static void test_wrong_key(void) {
        Sealed s;
        uint8_t other_psk[MPT_KEY_SIZE];
        MptSecureKeys key;

        seal_random(&s, 100, 0, 1000, 1);
        /* Another PSK, one bit off. */
        memcpy(other_psk, vec_psk, sizeof other_psk);
        other_psk[31] ^= 1;
        g_assert_cmpint(mpt_secure_derive(other_psk, 1000, have_aes, &key), ==, 0);
        g_assert_cmpint(mpt_secure_open(s.buf, s.len, &key), ==, MPT_DROP_AUTH_FAILED);
        /* The right PSK, but the keys of another epoch. */
        g_assert_cmpint(mpt_secure_derive(vec_psk, 1001, have_aes, &key), ==, 0);
        g_assert_cmpint(mpt_secure_open(s.buf, s.len, &key), ==, MPT_DROP_AUTH_FAILED);
        /* The other cipher's key of the right epoch: the flags byte is authenticated too. */
        if (have_aes) {
                g_assert_cmpint(mpt_secure_derive(vec_psk, 1000, have_aes, &key), ==, 0);
                s.buf[1] ^= MPT_SECURE_FLAG_AESGCM;
                g_assert_cmpint(mpt_secure_open(s.buf, s.len, &key), ==, MPT_DROP_AUTH_FAILED);
        }
}

/* Every single bit flipped, anywhere in the datagram (clear header, ciphertext or tag), makes
 * it fail: the header is associated data, part of the nonce, or both. */
static void test_tamper_every_bit(void) {
        Sealed s;

        seal_random(&s, 40, 5, 77, 123);
        for (size_t i = 0; i < s.len; i++)
                for (unsigned b = 0; b < 8; b++) {
                        uint8_t copy[sizeof s.buf];
                        MptSecureHeader h;
                        int r;

                        memcpy(copy, s.buf, s.len);
                        copy[i] ^= (uint8_t) (1u << b);
                        r = mpt_secure_parse(copy, s.len, &h);
                        if (r >= 0) {
                                /* Only header bytes can fail the parse: the type, unknown flags, the
                                 * path id's and the lane's high bits (out of range). */
                                g_assert_cmpuint(i, <, 4);
                                continue;
                        }
                        if (!have_aes && (copy[1] & MPT_SECURE_FLAG_AESGCM)) {
                                g_assert_cmpint(mpt_secure_open(copy, s.len, &s.key), ==, MPT_DROP_BAD_VERSION);
                                continue;
                        }
                        g_assert_cmpint(mpt_secure_open(copy, s.len, &s.key), ==, MPT_DROP_AUTH_FAILED);
                }
        /* Truncated by one byte, or extended by one: fails as well. */
        g_assert_cmpint(mpt_secure_open(s.buf, s.len - 1, &s.key), ==, MPT_DROP_AUTH_FAILED);
        s.buf[s.len] = 0;
        g_assert_cmpint(mpt_secure_open(s.buf, s.len + 1, &s.key), ==, MPT_DROP_AUTH_FAILED);
}

/* A datagram that does not authenticate leaves no unauthenticated plaintext behind. */
static void test_auth_failed_wipes(void) {
        Sealed s;

        seal_random(&s, 300, 2, 99, 5);
        s.buf[s.len - 1] ^= 0x40; /* the tag */
        g_assert_cmpint(mpt_secure_open(s.buf, s.len, &s.key), ==, MPT_DROP_AUTH_FAILED);
        for (size_t i = MPT_SECURE_HEADER_SIZE; i < s.len - MPT_SECURE_TAG_SIZE; i++)
                g_assert_cmpuint(s.buf[i], ==, 0);
}

/* ---- no memory for a cipher context ----
 * libcrypto allocates through these (installed before its first allocation, in main()); a thread
 * that sets fail_alloc gets NULL from every libcrypto allocation, as when memory is exhausted. */
static _Thread_local bool fail_alloc;

static void *test_malloc(size_t n, const char *file, int line) {
        (void) file, (void) line;
        return fail_alloc ? NULL : malloc(n);
}

static void *test_realloc(void *p, size_t n, const char *file, int line) {
        (void) file, (void) line;
        return fail_alloc ? NULL : realloc(p, n);
}

static void test_free(void *p, const char *file, int line) {
        (void) file, (void) line;
        free(p);
}

typedef struct NoMemoryJob {
        const MptSecureKeys *keys;
        uint8_t *sealed;
        size_t sealed_len;
        size_t seal_failed, seal_after;
        int open_failed, open_after;
        bool buf_untouched;
} NoMemoryJob;

/* A fresh thread, so that it has no cipher contexts yet. */
static void *no_memory_thread(void *data) {
        NoMemoryJob *j = data;
        uint8_t buf[256], copy[256];

        memset(buf, 0x5a, sizeof buf);
        fail_alloc = true;
        j->seal_failed = mpt_secure_seal(buf, 100, j->keys, cur_cipher, 0,
                                         (MptSecureSender) { .path_id = 1, .counter = 1 });
        memcpy(copy, j->sealed, j->sealed_len);
        j->open_failed = mpt_secure_open(copy, j->sealed_len, j->keys);
        /* Nothing was decrypted (and so nothing needs wiping): the datagram is as it came. */
        j->buf_untouched = memcmp(copy, j->sealed, j->sealed_len) == 0;
        fail_alloc = false;
        /* Memory again: the same thread gets its contexts and works. */
        j->seal_after = mpt_secure_seal(buf, 100, j->keys, cur_cipher, 0,
                                        (MptSecureSender) { .path_id = 1, .counter = 2 });
        memcpy(copy, j->sealed, j->sealed_len);
        j->open_after = mpt_secure_open(copy, j->sealed_len, j->keys);
        return NULL;
}

/* Sealing and opening without memory for a cipher context fail with cipher-error (mptd counts
 * the datagram as dropped for that reason) and recover when there is memory again. */
static void test_no_memory(void) {
        Sealed s;
        NoMemoryJob j;
        GThread *th;

        seal_random(&s, 200, 1, 31, 9);
        g_assert_cmpuint(s.len, ==, 200 + MPT_SECURE_OVERHEAD);
        j = (NoMemoryJob) { .keys = &s.key, .sealed = s.buf, .sealed_len = s.len };
        th = g_thread_new("no-memory", no_memory_thread, &j);
        g_thread_join(th);
        g_assert_cmpuint(j.seal_failed, ==, 0);
        g_assert_cmpint(j.open_failed, ==, MPT_DROP_CIPHER_ERROR);
        g_assert_true(j.buf_untouched);
        g_assert_cmpuint(j.seal_after, ==, 100 + MPT_SECURE_OVERHEAD);
        g_assert_cmpint(j.open_after, ==, -1);
}

/* Keys are plain values: a copy opens what the original sealed; wiped keys are no keys; two
 * sets used in turn on one thread (which re-keys its cipher contexts each time) stay apart. */
static void test_keys_copy_and_switch(void) {
        MptSecureKeys a, b, copy;
        Sealed sa, sb;

        seal_random(&sa, 200, 1, 500, 9);
        seal_random(&sb, 200, 1, 501, 9);
        a = sa.key;
        b = sb.key;
        g_assert_cmpuint(a.id, !=, 0);
        g_assert_cmpuint(a.id, !=, b.id);
        copy = a;
        for (int round = 0; round < 3; round++) {
                uint8_t ba[sizeof sa.buf], bb[sizeof sb.buf];
                memcpy(ba, sa.buf, sa.len);
                memcpy(bb, sb.buf, sb.len);
                g_assert_cmpint(mpt_secure_open(bb, sb.len, &a), ==, MPT_DROP_AUTH_FAILED);
                memcpy(bb, sb.buf, sb.len);
                g_assert_cmpint(mpt_secure_open(ba, sa.len, &copy), ==, -1);
                g_assert_cmpmem(ba + MPT_SECURE_HEADER_SIZE, sa.plain_len, sa.plain, sa.plain_len);
                g_assert_cmpint(mpt_secure_open(bb, sb.len, &b), ==, -1);
                g_assert_cmpmem(bb + MPT_SECURE_HEADER_SIZE, sb.plain_len, sb.plain, sb.plain_len);
        }
        mpt_secure_keys_wipe(&copy);
        g_assert_cmpuint(copy.epoch, ==, 0);
        g_assert_cmpuint(copy.id, ==, 0);
        g_assert_false(copy.has_aes);
}

/* Threads seal and open with the same keys at once (mptd's workers share the sending keys):
 * each has its own cipher contexts. Datagrams sealed on one thread are opened on another. */
#define THREADS 4
#define PER_THREAD 400

typedef struct ThreadJob {
        const MptSecureKeys *keys;
        const MptSecureKeys *other; /* used in turn with keys: re-keying under way */
        unsigned id;
        uint8_t (*sealed)[1500];    /* [PER_THREAD], sealed here, opened by the next thread */
        size_t *len;
        const uint8_t (*to_open)[1500];
        const size_t *to_open_len;
        unsigned bad;
} ThreadJob;

static size_t job_plain(unsigned thread, unsigned i, uint8_t *out) {
        size_t n = 64 + (thread * 131 + i * 17) % 1300;
        for (size_t j = 0; j < n; j++)
                out[j] = (uint8_t) (thread * 7 + i * 3 + j);
        return n;
}

static gpointer seal_thread(gpointer data) {
        ThreadJob *j = data;

        for (unsigned i = 0; i < PER_THREAD; i++) {
                size_t n = job_plain(j->id, i, j->sealed[i] + MPT_SECURE_HEADER_SIZE);
                const MptSecureKeys *k = i % 3 == 2 ? j->other : j->keys;
                j->len[i] = mpt_secure_seal(j->sealed[i], n, k, cur_cipher, 0,
                                            (MptSecureSender) { .path_id = (uint8_t) j->id,
                                                                .counter = (uint64_t) j->id << 32 | i });
                if (j->len[i] != n + MPT_SECURE_OVERHEAD)
                        j->bad++;
        }
        return NULL;
}

static gpointer open_thread(gpointer data) {
        ThreadJob *j = data;
        unsigned from = (j->id + THREADS - 1) % THREADS;

        for (unsigned i = 0; i < PER_THREAD; i++) {
                uint8_t copy[1500], want[1500];
                size_t n = job_plain(from, i, want);
                const MptSecureKeys *k = i % 3 == 2 ? j->other : j->keys;

                memcpy(copy, j->to_open[i], j->to_open_len[i]);
                if (mpt_secure_open(copy, j->to_open_len[i], k) != -1 ||
                    j->to_open_len[i] != n + MPT_SECURE_OVERHEAD ||
                    memcmp(copy + MPT_SECURE_HEADER_SIZE, want, n) != 0)
                        j->bad++;
        }
        return NULL;
}

static void test_threads(void) {
        static uint8_t sealed[THREADS][PER_THREAD][1500];
        static size_t len[THREADS][PER_THREAD];
        MptSecureKeys keys, other;
        ThreadJob jobs[THREADS];
        GThread *th[THREADS];

        g_assert_cmpint(mpt_secure_derive(vec_psk, 4242, have_aes, &keys), ==, 0);
        g_assert_cmpint(mpt_secure_derive(vec_psk, 4243, have_aes, &other), ==, 0);
        for (unsigned t = 0; t < THREADS; t++)
                jobs[t] = (ThreadJob) { .keys = &keys, .other = &other, .id = t, .sealed = sealed[t], .len = len[t],
                                        .to_open = (const uint8_t (*)[1500]) sealed[(t + THREADS - 1) % THREADS],
                                        .to_open_len = len[(t + THREADS - 1) % THREADS] };
        for (unsigned t = 0; t < THREADS; t++)
                th[t] = g_thread_new("seal", seal_thread, &jobs[t]);
        for (unsigned t = 0; t < THREADS; t++)
                g_thread_join(th[t]);
        for (unsigned t = 0; t < THREADS; t++)
                th[t] = g_thread_new("open", open_thread, &jobs[t]);
        for (unsigned t = 0; t < THREADS; t++)
                g_thread_join(th[t]);
        for (unsigned t = 0; t < THREADS; t++)
                g_assert_cmpuint(jobs[t].bad, ==, 0);
}

typedef struct ParseVector {
        const char *name;
        const char *hex;
        int reason;
} ParseVector;

#define H_OK "e3000300187a3c5e9d2b41f7000000000000002a"
#define TAG "00112233445566778899aabbccddeeff"
static const ParseVector parse_vectors[] = {
        { "empty", "", MPT_DROP_TOO_SHORT },
        { "header-only", H_OK, MPT_DROP_TOO_SHORT },
        { "header-and-tag", H_OK TAG, MPT_DROP_TOO_SHORT },
        { "one-byte", "e3", MPT_DROP_TOO_SHORT },
        { "compat-gre", "00000800450000", MPT_DROP_COMPAT_PACKET },
        { "compat-gre-seq", "10000800000000014500", MPT_DROP_COMPAT_PACKET },
        { "compat-keepalive", "00000800a1", MPT_DROP_COMPAT_PACKET },
        /* Version 1 (an older mptd) and the types kept for the handshake: another version. */
        { "version-1-e1", "e1000003187a3c5e9d2b41f7000000000000002a" TAG "00", MPT_DROP_BAD_VERSION },
        { "version-1-e2", "e2010003187a3c5e9d2b41f7000000000000002a" TAG "00", MPT_DROP_BAD_VERSION },
        { "type-e4", "e4000300187a3c5e9d2b41f7000000000000002a" TAG "00", MPT_DROP_BAD_VERSION },
        { "type-e0", "e0000300187a3c5e9d2b41f7000000000000002a" TAG "00", MPT_DROP_BAD_VERSION },
        { "flag-aes", "e3010300187a3c5e9d2b41f7000000000000002a" TAG "00", -1 },
        { "flag-aesgcm", "e3030300187a3c5e9d2b41f7000000000000002a" TAG "00", -1 },
        { "garbage-ff", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", MPT_DROP_BAD_VERSION },
        { "gre-routing-bit", "40000800", MPT_DROP_BAD_VERSION },
        { "reserved-flag", "e3040300187a3c5e9d2b41f7000000000000002a" TAG "00", MPT_DROP_BAD_HEADER },
        { "reserved-flags", "e3800300187a3c5e9d2b41f7000000000000002a" TAG "00", MPT_DROP_BAD_HEADER },
        { "path-id-64", "e3004000187a3c5e9d2b41f7000000000000002a" TAG "00", MPT_DROP_BAD_HEADER },
        { "path-id-ff", "e300ff00187a3c5e9d2b41f7000000000000002a" TAG "00", MPT_DROP_BAD_HEADER },
        /* Lanes 0 .. 63 (one per sending thread); 64 and above do not exist. */
        { "lane-64", "e3000340187a3c5e9d2b41f7000000000000002a" TAG "00", MPT_DROP_BAD_HEADER },
        { "lane-ff", "e30003ff187a3c5e9d2b41f7000000000000002a" TAG "00", MPT_DROP_BAD_HEADER },
        { "epoch-0", "e30003000000000000000000000000000000002a" TAG "00", MPT_DROP_BAD_HEADER },
        { "good", H_OK TAG "00", -1 },
        { "path-id-63", "e3003f00187a3c5e9d2b41f7000000000000002a" TAG "00", -1 },
        { "lane-1", "e3000301187a3c5e9d2b41f7000000000000002a" TAG "00", -1 },
        { "lane-63", "e300033f187a3c5e9d2b41f7000000000000002a" TAG "00", -1 },
};

static void test_parse(const void *data) {
        const ParseVector *v = data;
        uint8_t buf[256];
        size_t n = unhex(v->hex, buf, sizeof buf);
        MptSecureHeader h;

        g_assert_cmpint(mpt_secure_parse(buf, n, &h), ==, v->reason);
}

/* ---- anti-replay window ---- */

static void test_replay_basic(void) {
        MptReplay r = {};

        g_assert_true(mpt_replay_update(&r, 1));
        g_assert_false(mpt_replay_update(&r, 1));
        g_assert_true(mpt_replay_update(&r, 3));
        g_assert_true(mpt_replay_update(&r, 2)); /* late, but new */
        g_assert_false(mpt_replay_update(&r, 2));
        g_assert_false(mpt_replay_update(&r, 3));
        g_assert_true(mpt_replay_check(&r, 4));
        g_assert_true(mpt_replay_check(&r, 4)); /* check changes nothing */
        g_assert_true(mpt_replay_update(&r, 4));
        g_assert_false(mpt_replay_check(&r, 4));
}

static void test_replay_window_edges(void) {
        MptReplay r = {};
        uint64_t top = 100000;

        g_assert_true(mpt_replay_update(&r, top));
        /* The oldest counter still inside the window, and the first outside. */
        g_assert_true(mpt_replay_check(&r, top - (MPT_REPLAY_WINDOW - 1)));
        g_assert_false(mpt_replay_check(&r, top - MPT_REPLAY_WINDOW));
        g_assert_true(mpt_replay_update(&r, top - (MPT_REPLAY_WINDOW - 1)));
        g_assert_false(mpt_replay_update(&r, top - (MPT_REPLAY_WINDOW - 1)));
        g_assert_false(mpt_replay_update(&r, top - MPT_REPLAY_WINDOW));
        g_assert_false(mpt_replay_update(&r, 0));
        /* Every counter of the window is taken once, in any order (here: descending). */
        for (uint64_t c = top - 1; c > top - (MPT_REPLAY_WINDOW - 1); c--)
                g_assert_true(mpt_replay_update(&r, c));
        for (uint64_t c = top - (MPT_REPLAY_WINDOW - 1); c <= top; c++)
                g_assert_false(mpt_replay_update(&r, c));
        /* One step forward: the oldest one falls out of the window. */
        g_assert_true(mpt_replay_update(&r, top + 1));
        g_assert_false(mpt_replay_check(&r, top + 1 - MPT_REPLAY_WINDOW));
}

/* A jump forward by more than the window forgets everything older, a jump by a little less
 * keeps what is still in the window. Checked against a model (a set of seen counters). */
static void test_replay_model(void) {
        MptReplay r = {};
        GHashTable *seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
        uint64_t top = 0;
        bool any = false;

        for (unsigned i = 0; i < 200000; i++) {
                uint64_t c;
                bool expect, got;
                switch (g_test_rand_int_range(0, 10)) {
                case 0: /* big jump */
                        c = top + (uint64_t) g_test_rand_int_range(MPT_REPLAY_WINDOW - 70, 3 * MPT_REPLAY_WINDOW);
                        break;
                case 1: /* far behind */
                        c = top > 10000 ? top - (uint64_t) g_test_rand_int_range(4000, 10000) : top;
                        break;
                default: /* around the top */
                        c = top + 200 > 500 ? top + 200 - (uint64_t) g_test_rand_int_range(0, 500) : top + 1;
                }
                expect = !any || c > top || (top - c < MPT_REPLAY_WINDOW && !g_hash_table_contains(seen, &c));
                got = mpt_replay_update(&r, c);
                g_assert_cmpint(got, ==, expect);
                if (got) {
                        gint64 *k = g_new(gint64, 1);
                        *k = (gint64) c;
                        g_hash_table_add(seen, k);
                        if (!any || c > top)
                                top = c;
                        any = true;
                }
        }
        g_hash_table_unref(seen);
}

/* ---- epochs ---- */

/* Received at the path of this end whose index is the sender's path id (profiles in the same
 * order). */
#define AT_OWN(h) MPT_SECURE_PATH_BIT((h).path_id)

static MptSecureHeader hdr(uint8_t path, uint64_t epoch, uint64_t counter) {
        return (MptSecureHeader) { .type = MPT_SECURE_V2_TRANSPORT, .path_id = path, .epoch = epoch, .counter = counter };
}

static void test_epochs(void) {
        MptSecureRx *rx = mpt_secure_rx_new(500);
        g_assert_nonnull(rx);
        MptSecureHeader h;
        bool new_epoch;

        /* Our own epoch: reflected. */
        h = hdr(0, 500, 1);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, MPT_DROP_OWN_EPOCH);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, MPT_DROP_OWN_EPOCH);

        /* The first epoch of the peer. */
        h = hdr(0, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        g_assert_true(new_epoch);
        g_assert_cmpuint(rx->peer_epoch, ==, 1000);
        g_assert_false(rx->peer_aes);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, MPT_DROP_REPLAYED);
        g_assert_false(new_epoch);
        /* Windows are per sender path: the same counter on another path is new. */
        h = hdr(1, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        g_assert_false(new_epoch);
        h = hdr(0, 1000, 2);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);

        /* The peer restarts: a newer epoch, counters from 1 again; now it can do AES-256-GCM. */
        h = hdr(0, 2000, 1);
        h.flags = MPT_SECURE_FLAG_AES;
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, -1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        g_assert_true(new_epoch);
        g_assert_cmpuint(rx->peer_epoch, ==, 2000);
        g_assert_true(rx->peer_aes);
        h = hdr(1, 2000, 1);
        h.flags = MPT_SECURE_FLAG_AES;
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        g_assert_false(new_epoch);

        /* Never back to an older epoch, even with counters never seen in it. */
        h = hdr(0, 1000, 3);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, MPT_DROP_STALE_EPOCH);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, MPT_DROP_STALE_EPOCH);
        h = hdr(5, 1999, 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, MPT_DROP_STALE_EPOCH);
        g_assert_cmpuint(rx->peer_epoch, ==, 2000);
        g_assert_true(rx->peer_aes); /* a refused datagram changes nothing */
        mpt_secure_rx_free(rx);
}

/* With the handshake, epochs are this end's session ids (random high half, generation low): a
 * datagram of the previous session still in flight is taken after the first of the next one, with
 * its own window (a replay of it is still refused); one of an epoch older than both windows of
 * its lane is stale; a datagram under a newer session rebinds nothing it should not. */
#define SID(rnd, gen) ((UINT64_C(rnd) << 32) | (gen))

static void test_sessions(void) {
        MptSecureRx *rx = mpt_secure_rx_new_sessions();
        g_assert_nonnull(rx);
        MptSecureHeader h;
        bool new_epoch;

        h = hdr(0, SID(0xf0000000, 1), 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        g_assert_true(new_epoch);
        h.counter = 2;
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        /* The next session: its random half is smaller, its generation newer. */
        h = hdr(0, SID(0x10000000, 2), 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        g_assert_true(new_epoch);
        g_assert_cmpuint(rx->peer_epoch, ==, SID(0x10000000, 2));
        /* A straggler of the previous one: taken once, in its own window. */
        h = hdr(0, SID(0xf0000000, 1), 3);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        g_assert_false(new_epoch);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, MPT_DROP_REPLAYED);
        h.counter = 2;
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, MPT_DROP_REPLAYED);
        g_assert_cmpuint(rx->peer_epoch, ==, SID(0x10000000, 2));
        /* A third session takes the oldest window: the first session is stale from then on. */
        h = hdr(0, SID(0x20000000, 3), 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        h = hdr(0, SID(0xf0000000, 1), 4);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, MPT_DROP_STALE_SESSION);
        h = hdr(0, SID(0x10000000, 2), 2);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        /* The binding of the newest session holds older sessions' datagrams too. */
        h = hdr(0, SID(0x10000000, 2), 3);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(5)), ==, MPT_DROP_PATH_MISMATCH);
        h = hdr(0, SID(0x20000000, 3), 2);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(5)), ==, MPT_DROP_PATH_MISMATCH);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, 0);
        /* No own-epoch check: a reflected datagram has no key pair (mpt_handshake_keys_rx()). */
        mpt_secure_rx_free(rx);
}

static MptSecureHeader hdr_lane(uint8_t path, uint8_t lane, uint64_t epoch, uint64_t counter) {
        MptSecureHeader h = hdr(path, epoch, counter);

        h.lane = lane;
        return h;
}

/* Every lane of a sender path has its own counters and its own window; a newer epoch on any
 * sender path makes every older epoch stale, on every path and lane, and each lane's window
 * starts afresh with its first datagram of the new epoch. */
static void test_lanes(void) {
        MptSecureRx *rx = mpt_secure_rx_new(7);
        MptSecureHeader h;
        bool new_epoch;

        g_assert_nonnull(rx);
        /* The same counter on two lanes of one path, and on the control lane: all new. */
        h = hdr_lane(0, 0, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        g_assert_true(new_epoch);
        h = hdr_lane(0, 1, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, -1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        g_assert_false(new_epoch);
        h = hdr_lane(0, MPT_SECURE_LANE_CONTROL, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        /* Replays are per lane. */
        h = hdr_lane(0, 1, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, MPT_DROP_REPLAYED);
        h = hdr_lane(0, 2, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, -1);
        /* A lane far ahead moves only its own window. */
        h = hdr_lane(0, 1, 1000, 1 + 10 * MPT_REPLAY_WINDOW);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        h = hdr_lane(0, 1, 1000, 2);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, MPT_DROP_REPLAYED);
        h = hdr_lane(0, 0, 1000, 2);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        /* The binding is the sender path's, whatever the lane. */
        h = hdr_lane(0, 5, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(1)), ==, MPT_DROP_PATH_MISMATCH);

        /* A new epoch arrives on sender path 1: path 0's datagrams of the old one are stale, on
         * every lane, although path 0 has seen nothing of the new epoch yet. */
        h = hdr_lane(1, 3, 2000, 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        g_assert_true(new_epoch);
        g_assert_cmpuint(mpt_secure_rx_peer_epoch(rx), ==, 2000);
        h = hdr_lane(0, 0, 1000, 3);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, MPT_DROP_STALE_EPOCH);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, MPT_DROP_STALE_EPOCH);
        /* Path 0 in the new epoch: its lanes start afresh (counter 1 again), unbound. */
        h = hdr_lane(0, 1, 2000, 1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, -1);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(2)), ==, -1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(2), &new_epoch), ==, -1);
        g_assert_false(new_epoch);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, 2);
        h = hdr_lane(0, 0, 2000, 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(2), &new_epoch), ==, -1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(2), &new_epoch), ==, MPT_DROP_REPLAYED);
        /* The highest lane fits. */
        h = hdr_lane(63, MPT_SECURE_LANES - 1, 2000, 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
        mpt_secure_rx_free(rx);
}

/* Threads that each receive one sender path (as mptd's workers do) need no common lock: only the
 * epoch is shared. One of them sees the other end's restart first; from then on every thread
 * refuses the old epoch, and none accepts a counter twice. */
#define LANE_THREADS 4u
#define LANE_COUNTERS 20000u

typedef struct LaneJob {
        MptSecureRx *rx;
        uint8_t path;
        unsigned accepted_old, accepted_new, new_epochs;
        bool stale_after_new; /* an old-epoch datagram was refused after this thread saw the new one */
} LaneJob;

static void *lane_thread(void *data) {
        LaneJob *j = data;

        for (unsigned i = 1; i <= LANE_COUNTERS; i++) {
                /* The first thread's other end restarts half way; the others follow later. */
                uint64_t epoch = i > LANE_COUNTERS / (j->path == 0 ? 2 : 1) * 3 / 4 ? 2000 : 1000;
                MptSecureHeader h = hdr_lane(j->path, (uint8_t) (i % 3), epoch, i);
                bool new_epoch;
                int r;

                r = mpt_secure_rx_check(j->rx, &h, AT_OWN(h));
                if (r < 0)
                        r = mpt_secure_rx_accept(j->rx, &h, AT_OWN(h), &new_epoch);
                if (r < 0) {
                        j->accepted_old += epoch == 1000;
                        j->accepted_new += epoch == 2000;
                        j->new_epochs += new_epoch;
                } else
                        g_assert_cmpint(r, ==, MPT_DROP_STALE_EPOCH);
                /* Accepted again: never. */
                r = mpt_secure_rx_check(j->rx, &h, AT_OWN(h));
                g_assert_cmpint(r, >=, 0);
        }
        return NULL;
}

static void test_lanes_threads(void) {
        MptSecureRx *rx = mpt_secure_rx_new(7);
        LaneJob jobs[LANE_THREADS];
        GThread *th[LANE_THREADS];
        unsigned new_epochs = 0;

        g_assert_nonnull(rx);
        for (unsigned i = 0; i < LANE_THREADS; i++) {
                jobs[i] = (LaneJob) { .rx = rx, .path = (uint8_t) i };
                th[i] = g_thread_new("lane", lane_thread, &jobs[i]);
        }
        for (unsigned i = 0; i < LANE_THREADS; i++) {
                g_thread_join(th[i]);
                new_epochs += jobs[i].new_epochs;
                g_assert_cmpuint(jobs[i].accepted_old + jobs[i].accepted_new, <=, LANE_COUNTERS);
                g_assert_cmpuint(jobs[i].accepted_new, >, 0);
        }
        /* Exactly one thread saw epoch 1000 begin, and one saw 2000 begin. */
        g_assert_cmpuint(new_epochs, ==, 2);
        g_assert_cmpuint(mpt_secure_rx_peer_epoch(rx), ==, 2000);
        mpt_secure_rx_free(rx);
}

/* Each sender path id belongs to the path of this end where it first authenticated in the
 * epoch; a datagram moved to another path is refused before its tag is checked, and after it
 * (another thread may have bound the id meanwhile). */
static void test_path_binding(void) {
        MptSecureRx *rx = mpt_secure_rx_new(42);
        g_assert_nonnull(rx);
        const uint64_t shared = MPT_SECURE_PATH_BIT(0) | MPT_SECURE_PATH_BIT(1) | MPT_SECURE_PATH_BIT(2);
        MptSecureHeader h;
        bool new_epoch;

        /* The other end lists its paths in another order: its path 0 arrives at our path 1. */
        h = hdr(0, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, -1);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(1)), ==, -1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(1), &new_epoch), ==, -1);
        g_assert_true(new_epoch);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, 1);
        h = hdr(1, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(0), &new_epoch), ==, -1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, 0);

        /* Moved: path id 0 at our path 0, and path id 1 at our path 1. Refused, and the window
         * of the path id is untouched: the same counter is still new on its own path. */
        h = hdr(0, 1000, 2);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(0)), ==, MPT_DROP_PATH_MISMATCH);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(0), &new_epoch), ==,
                        MPT_DROP_PATH_MISMATCH);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(1), &new_epoch), ==, -1);
        h = hdr(1, 1000, 2);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(1)), ==, MPT_DROP_PATH_MISMATCH);
        /* Moved and replayed: the move is named first. */
        h = hdr(1, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(1)), ==, MPT_DROP_PATH_MISMATCH);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(0)), ==, MPT_DROP_REPLAYED);

        /* Only its content can tell the path (a new source on a shared socket): any of the
         * paths that share the socket will do, and nothing is bound. */
        h = hdr(0, 1000, 3);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, shared, &new_epoch), ==, -1);
        h = hdr(0, 1000, 4);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(0) | MPT_SECURE_PATH_BIT(2)), ==,
                        MPT_DROP_PATH_MISMATCH);
        h = hdr(2, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, shared, &new_epoch), ==, -1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, -1);
        h = hdr(2, 1000, 2);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(2), &new_epoch), ==, -1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, 2);

        /* A datagram that only passed the header check (its tag may be forged) binds nothing. */
        h = hdr(5, 1000, 1);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(3)), ==, -1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, -1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(4), &new_epoch), ==, -1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, 4);

        /* Older epochs and our own are refused as such, wherever they arrive. */
        h = hdr(0, 999, 9);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(0)), ==, MPT_DROP_STALE_EPOCH);
        h = hdr(0, 42, 9);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(0)), ==, MPT_DROP_OWN_EPOCH);

        /* The other end restarts, now with its paths in our order: a newer epoch is not held to
         * the old bindings, and starts its own. */
        h = hdr(0, 2000, 1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, -1);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(0)), ==, -1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(0), &new_epoch), ==, -1);
        g_assert_true(new_epoch);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, 0);
        h = hdr(1, 2000, 1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, -1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(1), &new_epoch), ==, -1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, 1);
        h = hdr(5, 2000, 1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, -1);
        h = hdr(0, 2000, 2);
        g_assert_cmpint(mpt_secure_rx_check(rx, &h, MPT_SECURE_PATH_BIT(1)), ==, MPT_DROP_PATH_MISMATCH);

        /* The highest path index fits. */
        h = hdr(63, 2000, 1);
        g_assert_cmpint(mpt_secure_rx_accept(rx, &h, MPT_SECURE_PATH_BIT(63), &new_epoch), ==, -1);
        g_assert_cmpint(mpt_secure_rx_bound(rx, &h), ==, 63);
        mpt_secure_rx_free(rx);
}

/* Key derivations for new epochs: a burst, then one per interval, never more than a burst saved. */
static void test_derive_limit(void) {
        const usec_t iv = MPT_SECURE_DERIVE_INTERVAL_USEC, t0 = 5 * USEC_PER_SEC;
        MptSecureLimit l = {};
        unsigned n = 0;

        for (unsigned i = 0; i < 100; i++)
                n += mpt_secure_limit_take(&l, t0);
        g_assert_cmpuint(n, ==, MPT_SECURE_DERIVE_BURST);
        g_assert_false(mpt_secure_limit_take(&l, t0 + iv - 1));
        /* One back per interval since the first was taken. */
        g_assert_true(mpt_secure_limit_take(&l, t0 + iv));
        g_assert_false(mpt_secure_limit_take(&l, t0 + iv));
        g_assert_true(mpt_secure_limit_take(&l, t0 + 2 * iv + iv / 2));
        g_assert_false(mpt_secure_limit_take(&l, t0 + 2 * iv + iv / 2));
        /* Three intervals later: three. */
        n = 0;
        for (unsigned i = 0; i < 100; i++)
                n += mpt_secure_limit_take(&l, t0 + 5 * iv);
        g_assert_cmpuint(n, ==, 3);
        /* A flood over ten seconds gets the burst and one per interval, no more. */
        n = 0;
        for (usec_t t = t0 + 6 * iv; t < t0 + 6 * iv + 10 * USEC_PER_SEC; t += 1000)
                n += mpt_secure_limit_take(&l, t);
        g_assert_cmpuint(n, <=, MPT_SECURE_DERIVE_BURST + 10 * USEC_PER_SEC / iv);
        g_assert_cmpuint(n, >=, 10 * USEC_PER_SEC / iv);
        /* After a long quiet time, a full burst again, not more. */
        n = 0;
        for (unsigned i = 0; i < 100; i++)
                n += mpt_secure_limit_take(&l, t0 + 3600 * USEC_PER_SEC);
        g_assert_cmpuint(n, ==, MPT_SECURE_DERIVE_BURST);
        /* An arrival stamped a little earlier than the last one changes nothing. */
        g_assert_false(mpt_secure_limit_take(&l, t0 + 3600 * USEC_PER_SEC - 10));
}

/* ---- counters ---- */

static void test_counter_reserve(void) {
        uint64_t next = 1, first = 0;

        g_assert_cmpint(mpt_secure_reserve(&next, 1, &first), ==, 0);
        g_assert_cmpuint(first, ==, 1);
        g_assert_cmpint(mpt_secure_reserve(&next, 64, &first), ==, 0);
        g_assert_cmpuint(first, ==, 2);
        g_assert_cmpuint(next, ==, 66);

        /* The last counters: up to UINT64_MAX - 1, then refused for good. */
        next = UINT64_MAX - 3;
        g_assert_cmpint(mpt_secure_reserve(&next, 4, &first), ==, -EOVERFLOW);
        g_assert_cmpuint(next, ==, UINT64_MAX - 3); /* unchanged */
        g_assert_cmpint(mpt_secure_reserve(&next, 3, &first), ==, 0);
        g_assert_cmpuint(first, ==, UINT64_MAX - 3);
        g_assert_cmpuint(next, ==, UINT64_MAX);
        g_assert_cmpint(mpt_secure_reserve(&next, 1, &first), ==, -EOVERFLOW);
        g_assert_cmpint(mpt_secure_reserve(&next, 1, &first), ==, -EOVERFLOW);
        g_assert_cmpuint(next, ==, UINT64_MAX);
        g_assert_cmpint(mpt_secure_reserve(&next, 0, &first), ==, -EOVERFLOW);
}

/* Counters reserved by several threads at once are never handed out twice. */
typedef struct ReserveThread {
        uint64_t *next;
        uint64_t got[20000];
} ReserveThread;

static void *reserve_thread(void *data) {
        ReserveThread *t = data;
        for (size_t i = 0; i < G_N_ELEMENTS(t->got); i++)
                g_assert_cmpint(mpt_secure_reserve(t->next, 1, &t->got[i]), ==, 0);
        return NULL;
}

static void test_counter_threads(void) {
        uint64_t next = 1;
        ReserveThread *t = g_new0(ReserveThread, 4);
        GThread *th[4];
        GHashTable *all = g_hash_table_new(g_int64_hash, g_int64_equal);

        for (int i = 0; i < 4; i++) {
                t[i].next = &next;
                th[i] = g_thread_new("reserve", reserve_thread, &t[i]);
        }
        for (int i = 0; i < 4; i++)
                g_thread_join(th[i]);
        for (int i = 0; i < 4; i++)
                for (size_t j = 0; j < G_N_ELEMENTS(t[i].got); j++) {
                        g_assert_false(g_hash_table_contains(all, &t[i].got[j]));
                        g_hash_table_add(all, &t[i].got[j]);
                }
        g_assert_cmpuint(next, ==, 1 + 4 * G_N_ELEMENTS(t[0].got));
        g_hash_table_unref(all);
        g_free(t);
}

/* ---- a whole exchange: sender and receiver state together ---- */

static void test_exchange_replay_and_restart(void) {
        MptSecureRx *rx = mpt_secure_rx_new(42);
        g_assert_nonnull(rx);
        uint64_t next = 1;
        Sealed captured[3];
        bool new_epoch;

        for (int i = 0; i < 3; i++) {
                uint64_t c;
                MptSecureHeader h;
                Sealed s;

                g_assert_cmpint(mpt_secure_reserve(&next, 1, &c), ==, 0);
                seal_random(&s, 60, 2, 9000, c);
                captured[i] = s;
                g_assert_cmpint(mpt_secure_parse(s.buf, s.len, &h), ==, -1);
                g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, -1);
                g_assert_cmpint(mpt_secure_open(s.buf, s.len, &s.key), ==, -1);
                g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
                g_assert_cmpint(new_epoch, ==, i == 0);
        }
        /* Re-sent as captured: replayed, caught before the tag is even checked. */
        for (int i = 0; i < 3; i++) {
                MptSecureHeader h;
                g_assert_cmpint(mpt_secure_parse(captured[i].buf, captured[i].len, &h), ==, -1);
                g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, MPT_DROP_REPLAYED);
        }
        /* A restart of the sender (new epoch); the old captures are now stale. */
        {
                Sealed s;
                MptSecureHeader h;
                seal_random(&s, 60, 2, 9001, 1);
                g_assert_cmpint(mpt_secure_parse(s.buf, s.len, &h), ==, -1);
                g_assert_cmpint(mpt_secure_open(s.buf, s.len, &s.key), ==, -1);
                g_assert_cmpint(mpt_secure_rx_accept(rx, &h, AT_OWN(h), &new_epoch), ==, -1);
                g_assert_true(new_epoch);
        }
        for (int i = 0; i < 3; i++) {
                MptSecureHeader h;
                g_assert_cmpint(mpt_secure_parse(captured[i].buf, captured[i].len, &h), ==, -1);
                g_assert_cmpint(mpt_secure_rx_check(rx, &h, AT_OWN(h)), ==, MPT_DROP_STALE_EPOCH);
        }
        mpt_secure_rx_free(rx);
}

/* ---- profile keys ---- */

static void test_key_base64(void) {
        MptKey k = {};
        char b64[MPT_KEY_BASE64_LEN + 1];

        g_assert_cmpint(mpt_key_from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", &k), ==, 0);
        g_assert_true(k.set);
        g_assert_cmpmem(k.bytes, sizeof k.bytes, vec_psk, sizeof vec_psk);
        g_assert_cmpstr(mpt_key_to_base64(&k, b64), ==, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
        g_assert_cmpint(mpt_key_from_base64("  AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", &k), ==, 0);
        g_assert_cmpint(mpt_key_from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", &k), ==, -EINVAL);
        g_assert_cmpint(mpt_key_from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g", &k), ==, -EINVAL);
        g_assert_cmpint(mpt_key_from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8= x", &k), ==, -EINVAL);
        g_assert_cmpint(mpt_key_from_base64("", &k), ==, -EINVAL);
}

/* Runs a test once per cipher this CPU can do. */
static void each_cipher(const void *data) {
        void (*test)(void) = (void (*)(void)) (uintptr_t) data;

        for (MptCipher c = 0; c < _MPT_CIPHER_MAX; c++) {
                if (c == MPT_CIPHER_AES256_GCM && !have_aes) {
                        g_test_message("no AES instructions: AES-256-GCM not tested here");
                        continue;
                }
                cur_cipher = c;
                test();
        }
        cur_cipher = MPT_CIPHER_CHACHA20_POLY1305;
}

static void test_cipher_enum(void) {
        for (MptCipher c = 0; c < _MPT_CIPHER_MAX; c++)
                g_assert_cmpint(mpt_cipher_from_string(mpt_cipher_to_string(c)), ==, c);
        g_assert_cmpstr(mpt_cipher_to_string(MPT_CIPHER_CHACHA20_POLY1305), ==, "chacha20-poly1305");
        g_assert_cmpstr(mpt_cipher_to_string(MPT_CIPHER_AES256_GCM), ==, "aes-256-gcm");
        g_assert_cmpint(mpt_cipher_from_string("aes"), ==, -EINVAL);
}

#define ADD_EACH(path, fn) g_test_add_data_func(path, (const void *) (uintptr_t) (fn), each_cipher)

int main(int argc, char *argv[]) {
        /* Before anything allocates through libcrypto (it refuses once it has). */
        g_assert_true(CRYPTO_set_mem_functions(test_malloc, test_realloc, test_free));
        g_test_init(&argc, &argv, NULL);
        g_assert_cmpint(mpt_secure_init(), ==, 0);
        have_aes = mpt_secure_aes_available();

        for (size_t i = 0; i < G_N_ELEMENTS(cipher_vectors); i++) {
                const char *c = mpt_cipher_to_string(cipher_vectors[i].cipher);
                unsigned lane = cipher_vectors[i].lane;
                g_autofree char *k = g_strdup_printf("/mpt/secure/vector/%s/lane-%u/key", c, lane);
                g_autofree char *s = g_strdup_printf("/mpt/secure/vector/%s/lane-%u/seal", c, lane);
                g_autofree char *o = g_strdup_printf("/mpt/secure/vector/%s/lane-%u/open", c, lane);
                g_test_add_data_func(k, &cipher_vectors[i], test_vector_key);
                g_test_add_data_func(s, &cipher_vectors[i], test_vector_seal);
                g_test_add_data_func(o, &cipher_vectors[i], test_vector_open);
        }
        g_test_add_func("/mpt/secure/cipher-enum", test_cipher_enum);
        ADD_EACH("/mpt/secure/round-trip", test_round_trip);
        ADD_EACH("/mpt/secure/wrong-key", test_wrong_key);
        ADD_EACH("/mpt/secure/tamper-every-bit", test_tamper_every_bit);
        ADD_EACH("/mpt/secure/auth-failed-wipes", test_auth_failed_wipes);
        ADD_EACH("/mpt/secure/no-memory", test_no_memory);
        ADD_EACH("/mpt/secure/keys-copy-and-switch", test_keys_copy_and_switch);
        ADD_EACH("/mpt/secure/threads", test_threads);
        for (size_t i = 0; i < G_N_ELEMENTS(parse_vectors); i++) {
                g_autofree char *name = g_strdup_printf("/mpt/secure/parse/%s", parse_vectors[i].name);
                g_test_add_data_func(name, &parse_vectors[i], test_parse);
        }
        g_test_add_func("/mpt/secure/replay/basic", test_replay_basic);
        g_test_add_func("/mpt/secure/replay/window-edges", test_replay_window_edges);
        g_test_add_func("/mpt/secure/replay/model", test_replay_model);
        g_test_add_func("/mpt/secure/epochs", test_epochs);
        g_test_add_func("/mpt/secure/sessions", test_sessions);
        g_test_add_func("/mpt/secure/path-binding", test_path_binding);
        g_test_add_func("/mpt/secure/lanes", test_lanes);
        g_test_add_func("/mpt/secure/lanes-threads", test_lanes_threads);
        g_test_add_func("/mpt/secure/derive-limit", test_derive_limit);
        g_test_add_func("/mpt/secure/counter/reserve", test_counter_reserve);
        g_test_add_func("/mpt/secure/counter/threads", test_counter_threads);
        ADD_EACH("/mpt/secure/exchange", test_exchange_replay_and_restart);
        g_test_add_func("/mpt/secure/key-base64", test_key_base64);

        return g_test_run();
}
