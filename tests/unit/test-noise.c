/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "noise.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "unhex.h"

/* Where the vectors come from:
 *   X25519          RFC 7748, section 6.1
 *   BLAKE2s-256     RFC 7693, appendix B ("abc")
 *   HChaCha20,      draft-irtf-cfrg-xchacha-03, section 2.2.1 and appendix A.3.1
 *   XChaCha20-Poly1305
 *   keyed BLAKE2s-128, HMAC-BLAKE2s, Noise's HKDF: computed independently of libcrypto and of this
 *                   code (Python: hashlib.blake2s, hmac, and Noise's HKDF written out from
 *                   section 4.3 of the specification)
 *   Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s: the cacophony test vectors (Haskell implementation), as
 *                   snow ships them (tests/vectors/cacophony.txt); the handshake messages and four
 *                   transport messages. Their "handshake_hash" field is not compared: it is not the
 *                   h of the specification's GetHandshakeHash() (an independent implementation
 *                   that reproduces every message gets another value), and neither snow nor
 *                   noise-c checks it. */

#define assert_hex(buf, len, hex)                                       \
        do {                                                            \
                uint8_t _want[512];                                     \
                size_t _n = unhex((hex), _want, sizeof _want);          \
                g_assert_cmpmem((buf), (len), _want, _n);               \
        } while (0)

static void test_x25519(void) {
        uint8_t a[32], b[32], shared[32];
        MptNoiseKeypair ka = {}, kb = {};

        unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", a, sizeof a);
        unhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb", b, sizeof b);
        g_assert_cmpint(mpt_noise_keypair_set(&ka, a), ==, 0);
        g_assert_cmpint(mpt_noise_keypair_set(&kb, b), ==, 0);
        assert_hex(ka.public_key, 32, "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
        assert_hex(kb.public_key, 32, "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
        g_assert_cmpint(mpt_noise_dh(&ka, kb.public_key, shared), ==, 0);
        assert_hex(shared, 32, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
        g_assert_cmpint(mpt_noise_dh(&kb, ka.public_key, shared), ==, 0);
        assert_hex(shared, 32, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");

        g_assert_cmpint(mpt_noise_public_key(shared, a), ==, 0);
        g_assert_cmpmem(shared, 32, ka.public_key, 32);
        /* Clamping does not change the key (X25519 clamps anyway). */
        mpt_noise_clamp(a);
        g_assert_cmpuint(a[0] & 7, ==, 0);
        g_assert_cmpuint(a[31] & 0xc0, ==, 0x40);
        g_assert_cmpint(mpt_noise_public_key(shared, a), ==, 0);
        g_assert_cmpmem(shared, 32, ka.public_key, 32);

        mpt_noise_keypair_done(&ka);
        mpt_noise_keypair_done(&kb);
        g_assert_null(ka.pkey);
        mpt_noise_keypair_done(&ka); /* idempotent */
}

/* Public keys of small order give an all-zero shared secret: refused. */
static void test_x25519_small_order(void) {
        static const char *const points[] = {
                "0000000000000000000000000000000000000000000000000000000000000000", /* 0 */
                "0100000000000000000000000000000000000000000000000000000000000000", /* 1 */
                "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800", /* order 8 */
        };
        uint8_t priv[32], pub[32], shared[32];
        MptNoiseKeypair k = {};

        memset(priv, 0x42, sizeof priv);
        g_assert_cmpint(mpt_noise_keypair_set(&k, priv), ==, 0);
        for (size_t i = 0; i < G_N_ELEMENTS(points); i++) {
                unhex(points[i], pub, sizeof pub);
                memset(shared, 0xff, sizeof shared);
                g_assert_cmpint(mpt_noise_dh(&k, pub, shared), ==, -EINVAL);
                for (size_t j = 0; j < sizeof shared; j++)
                        g_assert_cmpuint(shared[j], ==, 0);
        }
        mpt_noise_keypair_done(&k);
}

static void test_hashes(void) {
        uint8_t key[32], out[32];

        for (unsigned i = 0; i < 32; i++)
                key[i] = (uint8_t) i;
        g_assert_cmpint(mpt_noise_hash(out, "abc", 3, NULL, 0), ==, 0);
        assert_hex(out, 32, "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");
        /* In two parts: the same. */
        g_assert_cmpint(mpt_noise_hash(out, "a", 1, "bc", 2), ==, 0);
        assert_hex(out, 32, "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");

        g_assert_cmpint(mpt_noise_mac(out, key, 32, "", 0), ==, 0);
        assert_hex(out, 16, "9536f9b267655743dee97b8a670f9f53");
        g_assert_cmpint(mpt_noise_mac(out, key, 32, "abc", 3), ==, 0);
        assert_hex(out, 16, "61ba5f165c194692e09d12520cc4c74a");

        g_assert_cmpint(mpt_noise_hmac(out, key, "ab", 2, "c", 1), ==, 0);
        assert_hex(out, 32, "82623be5bc0a391b24dce53e67d028eff92d586de0485ac37822e597d049c74f");
}

static void test_hkdf(void) {
        uint8_t ck[32], o1[32], o2[32], o3[32];

        for (unsigned i = 0; i < 32; i++)
                ck[i] = (uint8_t) i;
        g_assert_cmpint(mpt_noise_hkdf(ck, "input key material", 18, o1, o2, o3), ==, 0);
        assert_hex(o1, 32, "93e2a65883e34ac95485f5d0aa4b09163a4e944dab8cf9406d3a138e362851c6");
        assert_hex(o2, 32, "dd6fae42afdb2a41170f44dc5b885ec4cfd17c8dd324d38b390c548630dd0a83");
        assert_hex(o3, 32, "4125e0adfa9b7e736615e99dde6f3f0b64b949d8b480e82cab2e685dc286e45d");
        /* Split(): no input key material. */
        g_assert_cmpint(mpt_noise_hkdf(ck, NULL, 0, o1, o2, NULL), ==, 0);
        assert_hex(o1, 32, "7a38c34bf2b8738d7374ca77c44ecb309a11d2b2528304fa86052c365e722624");
        assert_hex(o2, 32, "1a17621f346abdc520746a9fb64d8eb03231d674fc15687537b0780fd9c060fd");
        /* The first output may replace the chaining key (MixKey() does that). */
        g_assert_cmpint(mpt_noise_hkdf(ck, "input key material", 18, ck, o2, NULL), ==, 0);
        assert_hex(ck, 32, "93e2a65883e34ac95485f5d0aa4b09163a4e944dab8cf9406d3a138e362851c6");
        assert_hex(o2, 32, "dd6fae42afdb2a41170f44dc5b885ec4cfd17c8dd324d38b390c548630dd0a83");
}

static void test_hchacha20(void) {
        uint8_t key[32], nonce[16], out[32];

        for (unsigned i = 0; i < 32; i++)
                key[i] = (uint8_t) i;
        unhex("000000090000004a0000000031415927", nonce, sizeof nonce);
        g_assert_cmpint(mpt_noise_hchacha20(out, key, nonce), ==, 0);
        assert_hex(out, 32, "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc");
}

#define XCHACHA_PLAIN                                                                                          \
        "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen " \
        "would be it."
#define XCHACHA_CIPHER                                                                                         \
        "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6" \
        "708c54c216cb96b72e1213b4522f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff921f9664c9763" \
        "7da9768812f615c68b13b52e"                                                                              \
        "c0875924c1c7987947deafd8780acf49"

static void test_xchacha20_poly1305(void) {
        uint8_t key[32], nonce[24], ad[12], buf[256], plain[256];
        size_t n = strlen(XCHACHA_PLAIN);

        for (unsigned i = 0; i < 32; i++)
                key[i] = (uint8_t) (0x80 + i);
        for (unsigned i = 0; i < 24; i++)
                nonce[i] = (uint8_t) (0x40 + i);
        unhex("50515253c0c1c2c3c4c5c6c7", ad, sizeof ad);
        g_assert_cmpint(mpt_noise_xaead_seal(key, nonce, ad, sizeof ad, (const uint8_t *) XCHACHA_PLAIN, n, buf), ==,
                        0);
        assert_hex(buf, n + 16, XCHACHA_CIPHER);
        g_assert_cmpint(mpt_noise_xaead_open(key, nonce, ad, sizeof ad, buf, n + 16, plain), ==, 0);
        g_assert_cmpmem(plain, n, XCHACHA_PLAIN, n);
        /* Any change: refused, and the output wiped. */
        buf[3] ^= 1;
        g_assert_cmpint(mpt_noise_xaead_open(key, nonce, ad, sizeof ad, buf, n + 16, plain), ==, -EBADMSG);
        for (size_t i = 0; i < n; i++)
                g_assert_cmpuint(plain[i], ==, 0);
        buf[3] ^= 1;
        ad[0] ^= 1;
        g_assert_cmpint(mpt_noise_xaead_open(key, nonce, ad, sizeof ad, buf, n + 16, plain), ==, -EBADMSG);
        ad[0] ^= 1;
        g_assert_cmpint(mpt_noise_xaead_open(key, nonce, ad, sizeof ad, buf, 15, plain), ==, -EINVAL);
}

static void test_aead(void) {
        uint8_t key[32], buf[64], out[64];

        memset(key, 7, sizeof key);
        /* An empty plaintext is just the tag (WireGuard's response carries one). */
        g_assert_cmpint(mpt_noise_aead_seal(key, 0, "ad", 2, NULL, 0, buf), ==, 0);
        g_assert_cmpint(mpt_noise_aead_open(key, 0, "ad", 2, buf, 16, out), ==, 0);
        g_assert_cmpint(mpt_noise_aead_open(key, 1, "ad", 2, buf, 16, out), ==, -EBADMSG);
        g_assert_cmpint(mpt_noise_aead_open(key, 0, "ae", 2, buf, 16, out), ==, -EBADMSG);
        /* In place. */
        memcpy(buf, "hello", 5);
        g_assert_cmpint(mpt_noise_aead_seal(key, 5, NULL, 0, buf, 5, buf), ==, 0);
        g_assert_cmpint(mpt_noise_aead_open(key, 5, NULL, 0, buf, 21, buf), ==, 0);
        g_assert_cmpmem(buf, 5, "hello", 5);
}

/* ---- Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s: cacophony ---- */

typedef struct CacophonyMessage {
        const char *payload, *ciphertext;
} CacophonyMessage;

static const struct {
        const char *prologue, *psk, *init_static, *init_ephemeral, *init_remote_static, *resp_static,
                *resp_ephemeral;
        CacophonyMessage messages[6];
} cacophony = {
        .prologue = "4a6f686e2047616c74",
        .psk = "54686973206973206d7920417573747269616e20706572737065637469766521",
        .init_static = "e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1",
        .init_ephemeral = "893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a",
        .init_remote_static = "31e0303fd6418d2f8c0e78b91f22e8caed0fbe48656dcf4767e4834f701b8f62",
        .resp_static = "4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893",
        .resp_ephemeral = "bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b",
        .messages = {
                { "4c756477696720766f6e204d69736573",
                  "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944001e21de9f98ddd8e2ad57527207fe"
                  "b56253c9c94a9e496782ecfcb2a75fbcaf1b52948cc48daefe660c62119ab5000980c84831215f2441eba616548e8329"
                  "85464cf17e51ee93109008399a21f7e13f" },
                { "4d757272617920526f746862617264",
                  "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f144808843cb765f2caef0751b8f007572dab032"
                  "2217755c0632f365717edbf34d33e87a" },
                { "462e20412e20486179656b", "8153ca9833bc3c1b91a7e66e5f4d4f5b59bf9e64c2f20d15f0bba7" },
                { "4361726c204d656e676572", "07af0c9c86e1b4e80f36b04ff7688d51141af3debd0332f0a705ef" },
                { "4a65616e2d426170746973746520536179",
                  "6ab1467c0448cc78394494abaaf23afce0e234315d6e2624dcbfa8a21c1c4d073d" },
                { "457567656e2042f6686d20766f6e2042617765726b",
                  "dfc346c0d2296ae6cf1acf6f12b8456a1dba228cf8d8b774aacf1c47fc53aa80ebc7a4c292" },
        },
};

static void test_cacophony_ikpsk2(void) {
        uint8_t prologue[64], psk[32], key[32], rs[32], payload[128], msg[256], got[256];
        uint8_t i2r[2][32], r2i[2][32];
        MptNoiseKeypair si = {}, sr = {};
        MptNoiseHandshake ini = {}, res = {};
        size_t prologue_len, pn, mn;

        prologue_len = unhex(cacophony.prologue, prologue, sizeof prologue);
        unhex(cacophony.psk, psk, sizeof psk);
        unhex(cacophony.init_static, key, sizeof key);
        g_assert_cmpint(mpt_noise_keypair_set(&si, key), ==, 0);
        unhex(cacophony.resp_static, key, sizeof key);
        g_assert_cmpint(mpt_noise_keypair_set(&sr, key), ==, 0);
        unhex(cacophony.init_remote_static, rs, sizeof rs);
        g_assert_cmpmem(rs, 32, sr.public_key, 32);

        g_assert_cmpint(mpt_noise_ik_start(&ini, prologue, prologue_len, rs), ==, 0);
        g_assert_cmpint(mpt_noise_ik_start(&res, prologue, prologue_len, sr.public_key), ==, 0);
        unhex(cacophony.init_ephemeral, key, sizeof key);
        g_assert_cmpint(mpt_noise_keypair_set(&ini.e, key), ==, 0);
        unhex(cacophony.resp_ephemeral, key, sizeof key);
        g_assert_cmpint(mpt_noise_keypair_set(&res.e, key), ==, 0);

        /* -> e, es, s, ss */
        pn = unhex(cacophony.messages[0].payload, payload, sizeof payload);
        g_assert_cmpint(mpt_noise_ik_write_initiation(&ini, &si, payload, pn, msg), ==, 0);
        assert_hex(msg, MPT_NOISE_INITIATION_SIZE(pn), cacophony.messages[0].ciphertext);
        g_assert_cmpint(mpt_noise_ik_read_initiation(&res, &sr, si.public_key, msg, pn, got), ==, 0);
        g_assert_cmpmem(got, pn, payload, pn);
        g_assert_cmpmem(res.rs, 32, si.public_key, 32);

        /* <- e, ee, se, psk */
        pn = unhex(cacophony.messages[1].payload, payload, sizeof payload);
        g_assert_cmpint(mpt_noise_ik_write_response(&res, psk, payload, pn, msg), ==, 0);
        assert_hex(msg, MPT_NOISE_RESPONSE_SIZE(pn), cacophony.messages[1].ciphertext);
        g_assert_cmpint(mpt_noise_ik_read_response(&ini, &si, psk, msg, pn, got), ==, 0);
        g_assert_cmpmem(got, pn, payload, pn);
        g_assert_cmpmem(ini.h, 32, res.h, 32);

        /* Transport: initiator and responder alternate, each direction's nonce counting from 0. */
        g_assert_cmpint(mpt_noise_ik_split(&ini, i2r[0], r2i[0]), ==, 0);
        g_assert_cmpint(mpt_noise_ik_split(&res, i2r[1], r2i[1]), ==, 0);
        g_assert_cmpmem(i2r[0], 32, i2r[1], 32);
        g_assert_cmpmem(r2i[0], 32, r2i[1], 32);
        for (unsigned m = 2; m < 6; m++) {
                const uint8_t *k = m % 2 == 0 ? i2r[0] : r2i[0];
                uint64_t n = (m - 2) / 2;

                pn = unhex(cacophony.messages[m].payload, payload, sizeof payload);
                g_assert_cmpint(mpt_noise_aead_seal(k, n, NULL, 0, payload, pn, msg), ==, 0);
                assert_hex(msg, pn + 16, cacophony.messages[m].ciphertext);
                mn = pn + 16;
                g_assert_cmpint(mpt_noise_aead_open(k, n, NULL, 0, msg, mn, got), ==, 0);
                g_assert_cmpmem(got, pn, payload, pn);
        }

        mpt_noise_handshake_wipe(&ini);
        mpt_noise_handshake_wipe(&res);
        mpt_noise_keypair_done(&si);
        mpt_noise_keypair_done(&sr);
}

/* The same handshake with the wrong keys fails where the pattern says it must. */
static void test_ikpsk2_failures(void) {
        uint8_t psk[32], other_psk[32], key[32], msg[256], got[64];
        MptNoiseKeypair si = {}, sr = {}, other = {};
        MptNoiseHandshake ini = {}, res = {};

        memset(psk, 1, sizeof psk);
        memset(other_psk, 2, sizeof other_psk);
        memset(key, 3, sizeof key);
        g_assert_cmpint(mpt_noise_keypair_set(&si, key), ==, 0);
        memset(key, 4, sizeof key);
        g_assert_cmpint(mpt_noise_keypair_set(&sr, key), ==, 0);
        memset(key, 5, sizeof key);
        g_assert_cmpint(mpt_noise_keypair_set(&other, key), ==, 0);

        /* An initiation for another responder key: its static key does not decrypt. */
        g_assert_cmpint(mpt_noise_ik_start(&ini, "p", 1, other.public_key), ==, 0);
        memset(key, 6, sizeof key);
        g_assert_cmpint(mpt_noise_keypair_set(&ini.e, key), ==, 0);
        g_assert_cmpint(mpt_noise_ik_write_initiation(&ini, &si, (const uint8_t *) "x", 1, msg), ==, 0);
        g_assert_cmpint(mpt_noise_ik_start(&res, "p", 1, sr.public_key), ==, 0);
        g_assert_cmpint(mpt_noise_ik_read_initiation(&res, &sr, NULL, msg, 1, got), ==, -EBADMSG);
        mpt_noise_handshake_wipe(&ini);
        mpt_noise_handshake_wipe(&res);

        /* Another prologue: refused too. */
        g_assert_cmpint(mpt_noise_ik_start(&ini, "p", 1, sr.public_key), ==, 0);
        memset(key, 6, sizeof key);
        g_assert_cmpint(mpt_noise_keypair_set(&ini.e, key), ==, 0);
        g_assert_cmpint(mpt_noise_ik_write_initiation(&ini, &si, (const uint8_t *) "x", 1, msg), ==, 0);
        g_assert_cmpint(mpt_noise_ik_start(&res, "q", 1, sr.public_key), ==, 0);
        g_assert_cmpint(mpt_noise_ik_read_initiation(&res, &sr, NULL, msg, 1, got), ==, -EBADMSG);
        mpt_noise_handshake_wipe(&res);

        /* An initiator that is not the expected one: refused before the payload. */
        g_assert_cmpint(mpt_noise_ik_start(&res, "p", 1, sr.public_key), ==, 0);
        g_assert_cmpint(mpt_noise_ik_read_initiation(&res, &sr, other.public_key, msg, 1, got), ==, -EPERM);
        mpt_noise_handshake_wipe(&res);

        /* A response with another pre-shared key fails at the initiator. */
        g_assert_cmpint(mpt_noise_ik_start(&res, "p", 1, sr.public_key), ==, 0);
        g_assert_cmpint(mpt_noise_ik_read_initiation(&res, &sr, si.public_key, msg, 1, got), ==, 0);
        memset(key, 7, sizeof key);
        g_assert_cmpint(mpt_noise_keypair_set(&res.e, key), ==, 0);
        g_assert_cmpint(mpt_noise_ik_write_response(&res, other_psk, NULL, 0, msg), ==, 0);
        g_assert_cmpint(mpt_noise_ik_read_response(&ini, &si, psk, msg, 0, got), ==, -EBADMSG);

        mpt_noise_handshake_wipe(&ini);
        mpt_noise_handshake_wipe(&res);
        mpt_noise_keypair_done(&si);
        mpt_noise_keypair_done(&sr);
        mpt_noise_keypair_done(&other);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        g_assert_cmpint(mpt_noise_init(), ==, 0);
        g_test_add_func("/mpt/noise/x25519", test_x25519);
        g_test_add_func("/mpt/noise/x25519-small-order", test_x25519_small_order);
        g_test_add_func("/mpt/noise/hashes", test_hashes);
        g_test_add_func("/mpt/noise/hkdf", test_hkdf);
        g_test_add_func("/mpt/noise/hchacha20", test_hchacha20);
        g_test_add_func("/mpt/noise/xchacha20-poly1305", test_xchacha20_poly1305);
        g_test_add_func("/mpt/noise/aead", test_aead);
        g_test_add_func("/mpt/noise/cacophony-ikpsk2", test_cacophony_ikpsk2);
        g_test_add_func("/mpt/noise/ikpsk2-failures", test_ikpsk2_failures);
        return g_test_run();
}
