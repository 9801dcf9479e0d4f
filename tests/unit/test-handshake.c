/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "byteorder.h"
#include "handshake.h"
#include "noise.h"
#include "secure.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "handshake-rng.h"
#include "unhex.h"

/* Two ends, A and B, with fixed static keys and a deterministic random stream each, so that every
 * message is reproducible. Times are a fake monotonic clock in microseconds. */

#define SEC USEC_PER_SEC
#define MSEC USEC_PER_MSEC
#define T0 (1000 * SEC)


typedef struct End {
        MptHandshake *hs;
        Rng rng;
        uint8_t private_key[32];
        uint8_t public_key[32];
} End;

static void key_bytes(uint8_t key[32], uint8_t first) {
        for (unsigned i = 0; i < 32; i++)
                key[i] = (uint8_t) (first + i);
}

/* A: private key 01..20, B: 21..40; the pre-shared key a0..bf. */
#define KEY_A 0x01
#define KEY_B 0x21
#define KEY_C 0x61

static void end_init(End *e, uint8_t key, uint8_t peer_key, const uint8_t *psk, uint8_t seed) {
        uint8_t peer_private[32], peer_public[32];

        *e = (End) { .rng = { .seed = seed } };
        key_bytes(e->private_key, key);
        g_assert_cmpint(mpt_noise_public_key(e->public_key, e->private_key), ==, 0);
        key_bytes(peer_private, peer_key);
        g_assert_cmpint(mpt_noise_public_key(peer_public, peer_private), ==, 0);
        g_assert_cmpint(mpt_handshake_new_random(e->private_key, peer_public, psk, false, rng_fill, &e->rng, &e->hs),
                        ==, 0);
        g_assert_cmpmem(mpt_handshake_public_key(e->hs), 32, e->public_key, 32);
}

static void end_done(End *e) {
        e->hs = mpt_handshake_free(e->hs);
}

static const uint8_t test_psk[32] = { 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa,
                                      0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5,
                                      0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf };

static void pair_init(End *a, End *b) {
        end_init(a, KEY_A, KEY_B, test_psk, 0x55);
        end_init(b, KEY_B, KEY_A, test_psk, 0xaa);
}

/* Where the messages come from: A's two paths and B's path (address and port). */
static const MptHandshakeSource from_a0 = { .path_id = 0, .addr_len = 6, .addr = { 192, 0, 2, 1, 0x12, 0x92 } };
static const MptHandshakeSource from_a1 = { .path_id = 1, .addr_len = 6, .addr = { 198, 51, 100, 1, 0x12, 0x92 } };
static const MptHandshakeSource from_b0 = { .path_id = 0, .addr_len = 6, .addr = { 203, 0, 113, 9, 0x12, 0x92 } };

typedef struct Msg {
        uint8_t buf[MPT_HANDSHAKE_REPLY_MAX];
        size_t len;
        MptHandshakeReply kind;
} Msg;

/* hs takes m (from src); the reply goes to *reply. Returns what receive() returns. */
static int deliver(End *to, usec_t now, const MptHandshakeSource *src, bool under_load, const uint8_t *m, size_t len,
                   Msg *reply) {
        Msg dummy;

        reply = reply ?: &dummy;
        return mpt_handshake_receive(to->hs, now, src, under_load, m, len, reply->buf, &reply->len, &reply->kind);
}

static void initiation(End *e, usec_t now, unsigned path_id, Msg *m) {
        g_assert_cmpint(mpt_handshake_create_initiation(e->hs, now, path_id, m->buf), ==, 0);
        m->len = MPT_HANDSHAKE_INITIATION_SIZE;
        m->kind = MPT_HANDSHAKE_REPLY_INITIATION;
}

/* A full handshake, A initiating: returns B's session id. */
static uint64_t handshake(End *a, End *b, usec_t now, const MptHandshakeSource *src_a,
                          const MptHandshakeSource *src_b) {
        Msg init, resp, none;

        initiation(a, now, src_a->path_id, &init);
        g_assert_cmpint(deliver(b, now, src_a, false, init.buf, init.len, &resp), ==, -1);
        g_assert_cmpint(resp.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);
        g_assert_cmpuint(resp.len, ==, MPT_HANDSHAKE_RESPONSE_SIZE);
        g_assert_cmpint(deliver(a, now, src_b, false, resp.buf, resp.len, &none), ==, -1);
        g_assert_cmpint(none.kind, ==, MPT_HANDSHAKE_REPLY_CONFIRM);
        g_assert_cmpuint(none.len, ==, 0);
        return mpt_handshake_keys(b->hs)->next.recv.epoch;
}

/* Seals a datagram with from's sending keys and opens it with to's keys for its epoch. Returns
 * what mpt_handshake_keys_rx() returns (and checks the datagram opens when it finds keys). */
static int transport(End *from, End *to, usec_t now) {
        static const uint8_t plain[] = { 0x00, 0x00, 0x08, 0x00, 0x45, 0x00, 0x00, 0x14 };
        uint8_t buf[128];
        const MptHandshakeKeypair *tx, *rx;
        MptSecureHeader h;
        size_t n;
        int r;

        tx = mpt_handshake_keys_tx(mpt_handshake_keys(from->hs), now, 0);
        g_assert_nonnull(tx);
        n = mpt_secure_seal_from(buf, plain, sizeof plain, &tx->send, MPT_CIPHER_CHACHA20_POLY1305, 0,
                                 (MptSecureSender) { .path_id = 1, .counter = 7 });
        g_assert_cmpuint(n, ==, sizeof plain + MPT_SECURE_OVERHEAD);
        mpt_handshake_sent(from->hs, now);
        g_assert_cmpint(mpt_secure_parse(buf, n, &h), ==, -1);
        r = mpt_handshake_keys_rx(mpt_handshake_keys(to->hs), h.epoch, now, &rx);
        if (r >= 0)
                return r;
        g_assert_cmpint(mpt_secure_open(buf, n, &rx->recv), ==, -1);
        g_assert_cmpmem(buf + MPT_SECURE_HEADER_SIZE, sizeof plain, plain, sizeof plain);
        mpt_handshake_received(to->hs, now, h.epoch);
        return -1;
}

static void assert_keypair_empty(const MptHandshakeKeypair *kp) {
        static const MptHandshakeKeypair zero = {};

        g_assert_cmpmem(kp, sizeof *kp, &zero, sizeof zero);
}

/* ---- An mpt-level vector ----
 * The first initiation of A and B's response, computed independently of libcrypto and of this code
 * (Python: hashlib, hmac, the "cryptography" package) from the format as handshake.h describes it,
 * with the same keys and random streams: A private key 01..20, B 21..40, pre-shared key a0..bf, A's
 * stream from 0x55, B's from 0xaa. Also the ChaCha20-Poly1305 key A seals with and the one it opens
 * with, as mpt_secure_derive() makes them from the transport keys and session ids. */
#define VEC_INITIATION                                                                                          \
        "e40000004d545b6200000001034af831f5f7930850d7baafcaf50a30de90c5526dab06891dc4c1f13106733a73ca048dc12a47" \
        "e94be39ba98526c4920f04e630e0509d3ccc91bed7b3c439f43647dfd2194014d48e91e60a0643e2bfd0a73adb6d91f7382a24" \
        "bdc0a06674bfbfe457d3cdc515f3b28d0b6e4da393d6148ec5a6151426448f60e4d356d08d8ce10fd56457895d762e65668717" \
        "26d58500000000000000000000000000000000"
#define VEC_RESPONSE                                                                                            \
        "e5000000a2a9b0b7000000014d545b6200000001f1d40272468518537a3253556dc8dab9862f71586fad189f747c3bfd5e3610" \
        "1370d41b9f134c093ad9c4c27c01c59256b14a7c4f9dada5e4950354f30849b50800000000000000000000000000000000"
#define VEC_A_SEND_EPOCH UINT64_C(0xa2a9b0b700000001)
#define VEC_A_SEND_KEY "a2004dc417b3d66ac9ee3c4669023db1c69bc6538b58a2717bd66b35b5138304"
#define VEC_A_RECV_EPOCH UINT64_C(0x4d545b6200000001)
#define VEC_A_RECV_KEY "40ffcbe332819221505ae1a35ad9f8b24311cb99f79b4326abf9ae0e28c00770"

static void test_vector(void) {
        uint8_t want[256];
        End a, b;
        Msg init, resp, none;
        const MptHandshakeKeypair *kp;
        size_t n;

        pair_init(&a, &b);
        initiation(&a, T0, 0, &init);
        n = unhex(VEC_INITIATION, want, sizeof want);
        g_assert_cmpmem(init.buf, init.len, want, n);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, init.buf, init.len, &resp), ==, -1);
        n = unhex(VEC_RESPONSE, want, sizeof want);
        g_assert_cmpmem(resp.buf, resp.len, want, n);
        g_assert_cmpint(deliver(&a, T0, &from_b0, false, resp.buf, resp.len, &none), ==, -1);

        kp = &mpt_handshake_keys(a.hs)->current;
        g_assert_cmpuint(kp->send.epoch, ==, VEC_A_SEND_EPOCH);
        unhex(VEC_A_SEND_KEY, want, sizeof want);
        g_assert_cmpmem(kp->send.key[MPT_CIPHER_CHACHA20_POLY1305], 32, want, 32);
        g_assert_cmpuint(kp->recv.epoch, ==, VEC_A_RECV_EPOCH);
        unhex(VEC_A_RECV_KEY, want, sizeof want);
        g_assert_cmpmem(kp->recv.key[MPT_CIPHER_CHACHA20_POLY1305], 32, want, 32);
        end_done(&a);
        end_done(&b);
}

/* ---- Full handshake ---- */

static void test_full(void) {
        const MptHandshakeKeys *ka, *kb;
        uint64_t version_a, version_b, id_b, id_a;
        End a, b;

        pair_init(&a, &b);
        version_a = mpt_handshake_keys_version(a.hs);
        version_b = mpt_handshake_keys_version(b.hs);
        g_assert_null(mpt_handshake_keys_tx(mpt_handshake_keys(a.hs), T0, 0));

        id_b = handshake(&a, &b, T0, &from_a0, &from_b0);
        ka = mpt_handshake_keys(a.hs);
        kb = mpt_handshake_keys(b.hs);
        g_assert_cmpuint(mpt_handshake_keys_version(a.hs), !=, version_a);
        g_assert_cmpuint(mpt_handshake_keys_version(b.hs), !=, version_b);
        g_assert_false(mpt_handshake_pending(a.hs, NULL));

        /* A: current at once, initiator. B: next, until A's first datagram. */
        g_assert_true(ka->current.initiator);
        g_assert_false(kb->next.initiator);
        assert_keypair_empty(&kb->current);
        id_a = ka->current.recv.epoch;
        g_assert_cmpuint(ka->current.send.epoch, ==, id_b);
        g_assert_cmpuint(kb->next.send.epoch, ==, id_a);
        g_assert_cmpuint(kb->next.recv.epoch, ==, id_b);
        g_assert_cmpuint(id_a, !=, id_b);
        g_assert_cmpuint((uint32_t) id_a, ==, 1); /* generation 1 of each end */
        g_assert_cmpuint((uint32_t) id_b, ==, 1);
        g_assert_cmpmem(ka->current.send.key, sizeof ka->current.send.key, kb->next.recv.key, sizeof kb->next.recv.key);
        g_assert_cmpmem(ka->current.recv.key, sizeof ka->current.recv.key, kb->next.send.key, sizeof kb->next.send.key);
        g_assert_false(ka->current.send.has_aes);

        /* A confirms; B cannot send before. */
        g_assert_true(mpt_handshake_want_keepalive(a.hs, T0));
        g_assert_null(mpt_handshake_keys_tx(kb, T0, 0));
        g_assert_cmpint(transport(&a, &b, T0 + 10 * MSEC), ==, -1);
        g_assert_false(mpt_handshake_want_keepalive(a.hs, T0 + 10 * MSEC));
        assert_keypair_empty(&kb->next);
        g_assert_cmpuint(kb->current.recv.epoch, ==, id_b);
        g_assert_cmpint(transport(&b, &a, T0 + 20 * MSEC), ==, -1);
        g_assert_cmpint(transport(&a, &b, T0 + 30 * MSEC), ==, -1);

        /* Neither wants anything now. */
        g_assert_cmpint(mpt_handshake_want_initiation(a.hs, T0 + SEC, 2), ==, MPT_HANDSHAKE_WANT_NOTHING);
        g_assert_cmpint(mpt_handshake_want_initiation(b.hs, T0 + SEC, 1), ==, MPT_HANDSHAKE_WANT_NOTHING);
        end_done(&a);
        end_done(&b);
}

/* With AES-256-GCM keys too (when the CPU has AES instructions). */
static void test_aes(void) {
        uint8_t priv[32], peer_priv[32], peer_pub[32];
        MptHandshake *a = NULL, *b = NULL;
        uint8_t init[MPT_HANDSHAKE_INITIATION_SIZE], reply[MPT_HANDSHAKE_REPLY_MAX], reply2[MPT_HANDSHAKE_REPLY_MAX];
        size_t len;
        MptHandshakeReply kind;

        if (!mpt_secure_aes_available()) {
                g_test_skip("no AES instructions");
                return;
        }
        key_bytes(priv, KEY_A);
        key_bytes(peer_priv, KEY_B);
        g_assert_cmpint(mpt_noise_public_key(peer_pub, peer_priv), ==, 0);
        g_assert_cmpint(mpt_handshake_new(priv, peer_pub, NULL, true, &a), ==, 0);
        g_assert_cmpint(mpt_noise_public_key(peer_pub, priv), ==, 0);
        g_assert_cmpint(mpt_handshake_new(peer_priv, peer_pub, NULL, true, &b), ==, 0);
        g_assert_cmpint(mpt_handshake_create_initiation(a, T0, 0, init), ==, 0);
        g_assert_cmpint(mpt_handshake_receive(b, T0, &from_a0, false, init, sizeof init, reply, &len, &kind), ==, -1);
        g_assert_cmpint(mpt_handshake_receive(a, T0, &from_b0, false, reply, len, reply2, &len, &kind), ==, -1);
        g_assert_true(mpt_handshake_keys(a)->current.send.has_aes);
        g_assert_cmpmem(mpt_handshake_keys(a)->current.send.key, sizeof(MptSecureKeys){}.key,
                        mpt_handshake_keys(b)->next.recv.key, sizeof(MptSecureKeys){}.key);
        mpt_handshake_free(a);
        mpt_handshake_free(b);
}

/* No pre-shared key at either end works (zeros, as WireGuard); a pre-shared key at one end only
 * does not, and leaves the initiator's handshake under way. */
static void test_preshared_key(void) {
        End a, b;
        Msg init, resp, none;

        end_init(&a, KEY_A, KEY_B, NULL, 1);
        end_init(&b, KEY_B, KEY_A, NULL, 2);
        handshake(&a, &b, T0, &from_a0, &from_b0);
        g_assert_cmpint(transport(&a, &b, T0), ==, -1);
        end_done(&a);
        end_done(&b);

        end_init(&a, KEY_A, KEY_B, test_psk, 1);
        end_init(&b, KEY_B, KEY_A, NULL, 2);
        initiation(&a, T0, 0, &init);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, init.buf, init.len, &resp), ==, -1);
        g_assert_cmpint(resp.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);
        g_assert_cmpint(deliver(&a, T0, &from_b0, false, resp.buf, resp.len, &none), ==,
                        MPT_HANDSHAKE_DROP_AUTH_FAILED);
        g_assert_true(mpt_handshake_pending(a.hs, NULL));
        assert_keypair_empty(&mpt_handshake_keys(a.hs)->current);
        end_done(&a);
        end_done(&b);
}

/* ---- Wrong keys: no session, no response ---- */

static void test_wrong_static_key(void) {
        End a, b, c;
        Msg init, reply;
        uint8_t mac1_key[32];

        /* A thinks B's public key is C's: mac1 is for the wrong key, B does no DH. */
        end_init(&a, KEY_A, KEY_C, NULL, 1);
        end_init(&b, KEY_B, KEY_A, NULL, 2);
        initiation(&a, T0, 0, &init);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, init.buf, init.len, &reply), ==, MPT_HANDSHAKE_DROP_MAC1);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_NONE);
        g_assert_cmpuint(reply.len, ==, 0);
        /* Even with mac1 made right for B (anyone who knows B's public key can), it does not decrypt. */
        g_assert_cmpint(mpt_noise_hash(mac1_key, MPT_HANDSHAKE_LABEL_MAC1, strlen(MPT_HANDSHAKE_LABEL_MAC1),
                                       b.public_key, 32), ==, 0);
        g_assert_cmpint(mpt_noise_mac(init.buf + MPT_HANDSHAKE_INITIATION_MAC1, mac1_key, 32, init.buf,
                                      MPT_HANDSHAKE_INITIATION_MAC1), ==, 0);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, init.buf, init.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_AUTH_FAILED);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_NONE);
        end_done(&a);

        /* C (a key B does not know) initiates to B: authentic, but not B's peer. */
        end_init(&c, KEY_C, KEY_B, NULL, 3);
        initiation(&c, T0, 0, &init);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, init.buf, init.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_UNKNOWN_PEER);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_NONE);
        assert_keypair_empty(&mpt_handshake_keys(b.hs)->next);
        end_done(&c);
        end_done(&b);

        /* The two ends must have different keys. */
        uint8_t priv[32], pub[32];
        MptHandshake *hs = NULL;
        key_bytes(priv, KEY_A);
        g_assert_cmpint(mpt_noise_public_key(pub, priv), ==, 0);
        g_assert_cmpint(mpt_handshake_new(priv, pub, NULL, false, &hs), ==, -EINVAL);
        g_assert_null(hs);
}

/* ---- Freshness ---- */

static void test_replay(void) {
        End a, b;
        Msg init1, init2, resp, reply;
        uint64_t version;

        pair_init(&a, &b);
        initiation(&a, T0, 0, &init1);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, init1.buf, init1.len, &resp), ==, -1);
        g_assert_cmpint(deliver(&a, T0, &from_b0, false, resp.buf, resp.len, &reply), ==, -1);
        g_assert_cmpint(transport(&a, &b, T0), ==, -1);

        /* The same initiation again, at once or much later: refused, nothing changes, no reply. */
        version = mpt_handshake_keys_version(b.hs);
        g_assert_cmpint(deliver(&b, T0 + SEC, &from_a0, false, init1.buf, init1.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_REPLAYED);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_NONE);
        /* The response again: its handshake is over. */
        g_assert_cmpint(deliver(&a, T0 + SEC, &from_b0, false, resp.buf, resp.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_UNEXPECTED);

        /* A rekey; then the old initiations are still refused, also after 10 minutes. */
        initiation(&a, T0 + 120 * SEC, 0, &init2);
        g_assert_cmpint(deliver(&b, T0 + 120 * SEC, &from_a0, false, init2.buf, init2.len, &resp), ==, -1);
        g_assert_cmpint(resp.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);
        version = mpt_handshake_keys_version(b.hs);
        g_assert_cmpint(deliver(&b, T0 + 600 * SEC, &from_a0, false, init1.buf, init1.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_REPLAYED);
        g_assert_cmpint(deliver(&b, T0 + 600 * SEC, &from_a0, false, init2.buf, init2.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_REPLAYED);
        g_assert_cmpuint(mpt_handshake_keys_version(b.hs), ==, version);
        end_done(&a);
        end_done(&b);
}

/* A restarts (a new instance, same keys) while B remembers it: one retry, then a session; old
 * initiations of either instance never get one. */
static void test_restart(void) {
        End a1, a2, a3, b;
        Msg old, init, retry, init2, held, resp, reply;
        uint64_t version;

        pair_init(&a1, &b);
        initiation(&a1, T0, 0, &old);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, old.buf, old.len, &resp), ==, -1);
        g_assert_cmpint(deliver(&a1, T0, &from_b0, false, resp.buf, resp.len, &reply), ==, -1);
        g_assert_cmpint(transport(&a1, &b, T0), ==, -1);
        end_done(&a1);

        end_init(&a2, KEY_A, KEY_B, test_psk, 0x33);
        initiation(&a2, T0 + 30 * SEC, 0, &init);
        version = mpt_handshake_keys_version(b.hs);
        g_assert_cmpint(deliver(&b, T0 + 30 * SEC, &from_a0, false, init.buf, init.len, &retry), ==, -1);
        g_assert_cmpint(retry.kind, ==, MPT_HANDSHAKE_REPLY_RETRY);
        g_assert_cmpuint(retry.len, ==, MPT_HANDSHAKE_RETRY_SIZE);
        g_assert_cmpuint(mpt_handshake_keys_version(b.hs), ==, version);
        /* The retry answered at once with an initiation that echoes the challenge. */
        g_assert_cmpint(deliver(&a2, T0 + 30 * SEC, &from_b0, false, retry.buf, retry.len, &init2), ==, -1);
        g_assert_cmpint(init2.kind, ==, MPT_HANDSHAKE_REPLY_INITIATION);
        g_assert_cmpuint(init2.len, ==, MPT_HANDSHAKE_INITIATION_SIZE);
        /* The retry again: that initiation is gone. */
        g_assert_cmpint(deliver(&a2, T0 + 30 * SEC, &from_b0, false, retry.buf, retry.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_UNEXPECTED);
        g_assert_cmpint(deliver(&b, T0 + 30 * SEC, &from_a0, false, init2.buf, init2.len, &resp), ==, -1);
        g_assert_cmpint(resp.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);
        g_assert_cmpint(deliver(&a2, T0 + 30 * SEC, &from_b0, false, resp.buf, resp.len, &reply), ==, -1);
        g_assert_cmpint(transport(&a2, &b, T0 + 30 * SEC), ==, -1);
        g_assert_cmpint(transport(&b, &a2, T0 + 30 * SEC), ==, -1);

        /* Replays: the echoing initiation (recorded instance, old counter), the first one of this
         * instance, the old instance's: nothing is accepted or reset. */
        version = mpt_handshake_keys_version(b.hs);
        g_assert_cmpint(deliver(&b, T0 + 40 * SEC, &from_a0, false, init2.buf, init2.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_REPLAYED);
        g_assert_cmpint(deliver(&b, T0 + 40 * SEC, &from_a0, false, init.buf, init.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_REPLAYED);
        g_assert_cmpint(deliver(&b, T0 + 40 * SEC, &from_a0, false, old.buf, old.len, &reply), ==, -1);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_RETRY);
        g_assert_cmpuint(mpt_handshake_keys_version(b.hs), ==, version);

        /* A challenge is good only for the record it was made for: A3 (another instance) gets one
         * and answers it, but the answer is held back while A2 (the recorded instance) rekeys; then
         * the answer draws a new retry instead of a session. */
        end_init(&a3, KEY_A, KEY_B, test_psk, 0x77);
        initiation(&a3, T0 + 50 * SEC, 0, &init);
        g_assert_cmpint(deliver(&b, T0 + 50 * SEC, &from_a0, false, init.buf, init.len, &retry), ==, -1);
        g_assert_cmpint(retry.kind, ==, MPT_HANDSHAKE_REPLY_RETRY);
        g_assert_cmpint(deliver(&a3, T0 + 50 * SEC, &from_b0, false, retry.buf, retry.len, &held), ==, -1);
        initiation(&a2, T0 + 51 * SEC, 0, &init);
        g_assert_cmpint(deliver(&b, T0 + 51 * SEC, &from_a0, false, init.buf, init.len, &resp), ==, -1);
        g_assert_cmpint(resp.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);
        /* The record changed: A3's held answer no longer fits. */
        g_assert_cmpint(deliver(&b, T0 + 52 * SEC, &from_a0, false, held.buf, held.len, &reply), ==, -1);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_RETRY);

        end_done(&a2);
        end_done(&a3);
        end_done(&b);
}

/* A responder that just started accepts the first initiation at once (nothing to reset): two ends
 * starting together need one round trip. With keys but no record (it initiated itself), it wants a
 * retry. */
static void test_cold_start(void) {
        End a, b;
        Msg ia, ib, ra, rb, reply;

        pair_init(&a, &b);
        initiation(&a, T0, 0, &ia);
        initiation(&b, T0, 0, &ib);
        /* B's initiation reaches A first and completes; then A's reaches B, which has keys now. */
        g_assert_cmpint(deliver(&a, T0, &from_b0, false, ib.buf, ib.len, &ra), ==, -1);
        g_assert_cmpint(ra.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, ra.buf, ra.len, &reply), ==, -1);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_CONFIRM);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, ia.buf, ia.len, &rb), ==, -1);
        g_assert_cmpint(rb.kind, ==, MPT_HANDSHAKE_REPLY_RETRY);
        g_assert_cmpint(transport(&b, &a, T0), ==, -1);
        g_assert_cmpint(transport(&a, &b, T0), ==, -1);
        end_done(&a);
        end_done(&b);
}

/* Both ends initiate at once and both handshakes complete: each sends under the session it
 * initiated, and the other still opens it (as its previous key pair). */
static void test_simultaneous(void) {
        End a, b;
        Msg ia, ib, ra, rb, reply;

        pair_init(&a, &b);
        initiation(&a, T0, 0, &ia);
        initiation(&b, T0, 0, &ib);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, ia.buf, ia.len, &rb), ==, -1);
        g_assert_cmpint(rb.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);
        /* Neither has a record or keys yet (a handshake of its own under way does not count): B's
         * initiation is answered at once too. */
        g_assert_cmpint(deliver(&a, T0, &from_b0, false, ib.buf, ib.len, &ra), ==, -1);
        g_assert_cmpint(ra.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);
        g_assert_cmpint(deliver(&a, T0 + 50 * MSEC, &from_b0, false, rb.buf, rb.len, &reply), ==, -1);
        g_assert_cmpint(deliver(&b, T0 + 50 * MSEC, &from_a0, false, ra.buf, ra.len, &reply), ==, -1);
        /* Each sends under its own session; the other opens it. */
        g_assert_cmpint(transport(&a, &b, T0 + 60 * MSEC), ==, -1);
        g_assert_cmpint(transport(&b, &a, T0 + 60 * MSEC), ==, -1);
        g_assert_cmpint(transport(&a, &b, T0 + 70 * MSEC), ==, -1);
        g_assert_cmpint(transport(&b, &a, T0 + 70 * MSEC), ==, -1);
        end_done(&a);
        end_done(&b);
}

/* Copies of one initiation over several paths: the first is answered, the others dropped. */
static void test_multipath_copies(void) {
        End a, b;
        Msg i0, i1, resp, reply;

        pair_init(&a, &b);
        initiation(&a, T0, 0, &i0);
        g_assert_cmpint(mpt_handshake_initiation_for_path(a.hs, T0, 1, i1.buf), ==, 0);
        i1.len = MPT_HANDSHAKE_INITIATION_SIZE;
        g_assert_cmpmem(i0.buf, i0.len, i1.buf, i1.len); /* no cookies: the same bytes */
        g_assert_cmpint(deliver(&b, T0, &from_a1, false, i1.buf, i1.len, &resp), ==, -1);
        g_assert_cmpint(deliver(&b, T0 + MSEC, &from_a0, false, i0.buf, i0.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_REPLAYED);
        g_assert_cmpint(deliver(&a, T0 + 2 * MSEC, &from_b0, false, resp.buf, resp.len, &reply), ==, -1);
        g_assert_cmpint(mpt_handshake_initiation_for_path(a.hs, T0, 1, i1.buf), ==, -ENOENT);
        end_done(&a);
        end_done(&b);
}

/* More than 50 initiations a second from the other end: refused. */
static void test_flood(void) {
        End a, b;
        Msg init, reply;

        pair_init(&a, &b);
        initiation(&a, T0, 0, &init);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, init.buf, init.len, &reply), ==, -1);
        initiation(&a, T0 + MSEC, 0, &init);
        g_assert_cmpint(deliver(&b, T0 + MSEC, &from_a0, false, init.buf, init.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_FLOOD);
        g_assert_cmpint(deliver(&b, T0 + 30 * MSEC, &from_a0, false, init.buf, init.len, &reply), ==, -1);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);
        end_done(&a);
        end_done(&b);
}

/* What a worker screens before it queues a message for the main thread: B's mac1 key passes A's
 * initiation and B's response to A only where they are made for it; a forged or damaged mac1,
 * another end's key, a wrong size, reserved bytes and unknown types stop there. */
static void test_screen(void) {
        End a, b, c;
        Msg init, resp, forged;
        uint8_t key_a[32], key_b[32], key_c[32], cookie[MPT_HANDSHAKE_COOKIE_REPLY_SIZE] = { MPT_HANDSHAKE_COOKIE_REPLY },
                retry[MPT_HANDSHAKE_RETRY_SIZE] = { MPT_HANDSHAKE_RETRY };

        pair_init(&a, &b);
        end_init(&c, KEY_C, KEY_B, test_psk, 0x33);
        mpt_handshake_mac1_key(a.hs, key_a);
        mpt_handshake_mac1_key(b.hs, key_b);
        mpt_handshake_mac1_key(c.hs, key_c);
        g_assert_true(memcmp(key_a, key_b, 32) != 0);

        initiation(&a, T0, 0, &init);
        g_assert_cmpint(mpt_handshake_screen(key_b, init.buf, init.len), ==, -1);
        g_assert_cmpint(mpt_handshake_screen(key_a, init.buf, init.len), ==, MPT_HANDSHAKE_DROP_MAC1);
        g_assert_cmpint(mpt_handshake_screen(key_c, init.buf, init.len), ==, MPT_HANDSHAKE_DROP_MAC1);
        /* C also knows B's public key: its initiation passes the screen (the main thread then
         * refuses the unknown peer). */
        initiation(&c, T0, 0, &forged);
        g_assert_cmpint(mpt_handshake_screen(key_b, forged.buf, forged.len), ==, -1);
        /* A flood's garbage, and damage anywhere before mac1. */
        memcpy(forged.buf, init.buf, init.len);
        forged.buf[20] ^= 1;
        g_assert_cmpint(mpt_handshake_screen(key_b, forged.buf, init.len), ==, MPT_HANDSHAKE_DROP_MAC1);
        memcpy(forged.buf, init.buf, init.len);
        forged.buf[MPT_HANDSHAKE_INITIATION_MAC1 + 3] ^= 0x80;
        g_assert_cmpint(mpt_handshake_screen(key_b, forged.buf, init.len), ==, MPT_HANDSHAKE_DROP_MAC1);
        /* mac2 is not screened (it needs the cookie secret): a changed one passes. */
        memcpy(forged.buf, init.buf, init.len);
        forged.buf[MPT_HANDSHAKE_INITIATION_MAC2] ^= 1;
        g_assert_cmpint(mpt_handshake_screen(key_b, forged.buf, init.len), ==, -1);
        /* Size, reserved bytes, type. */
        g_assert_cmpint(mpt_handshake_screen(key_b, init.buf, init.len - 1), ==, MPT_HANDSHAKE_DROP_MALFORMED);
        g_assert_cmpint(mpt_handshake_screen(key_b, init.buf, 0), ==, MPT_HANDSHAKE_DROP_MALFORMED);
        memcpy(forged.buf, init.buf, init.len);
        forged.buf[2] = 1;
        g_assert_cmpint(mpt_handshake_screen(key_b, forged.buf, init.len), ==, MPT_HANDSHAKE_DROP_MALFORMED);
        forged.buf[0] = 0xe3;
        g_assert_cmpint(mpt_handshake_screen(key_b, forged.buf, init.len), ==, MPT_HANDSHAKE_DROP_MALFORMED);

        /* The response is screened with the initiator's key. */
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, init.buf, init.len, &resp), ==, -1);
        g_assert_cmpint(resp.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);
        g_assert_cmpint(mpt_handshake_screen(key_a, resp.buf, resp.len), ==, -1);
        g_assert_cmpint(mpt_handshake_screen(key_b, resp.buf, resp.len), ==, MPT_HANDSHAKE_DROP_MAC1);
        g_assert_cmpint(mpt_handshake_screen(key_a, resp.buf, resp.len + 1), ==, MPT_HANDSHAKE_DROP_MALFORMED);
        /* Cookie replies and retries have no mac1: of the right size they go on. */
        g_assert_cmpint(mpt_handshake_screen(key_a, cookie, sizeof cookie), ==, -1);
        g_assert_cmpint(mpt_handshake_screen(key_a, cookie, sizeof cookie - 1), ==, MPT_HANDSHAKE_DROP_MALFORMED);
        g_assert_cmpint(mpt_handshake_screen(key_a, retry, sizeof retry), ==, -1);
        g_assert_cmpint(mpt_handshake_screen(key_a, retry, sizeof retry + 1), ==, MPT_HANDSHAKE_DROP_MALFORMED);
        end_done(&a);
        end_done(&b);
        end_done(&c);
}

/* ---- Cookies under load ---- */

static void test_cookie(void) {
        End a, b;
        Msg init, cookie, reply, resp;
        uint8_t zeros[16] = {};

        pair_init(&a, &b);
        initiation(&a, T0, 0, &init);
        g_assert_cmpmem(init.buf + MPT_HANDSHAKE_INITIATION_MAC2, 16, zeros, 16);
        /* Under load, B does no DH for A until A shows it can receive at its address. */
        g_assert_cmpint(deliver(&b, T0, &from_a0, true, init.buf, init.len, &cookie), ==, -1);
        g_assert_cmpint(cookie.kind, ==, MPT_HANDSHAKE_REPLY_COOKIE);
        g_assert_cmpuint(cookie.len, ==, MPT_HANDSHAKE_COOKIE_REPLY_SIZE);
        assert_keypair_empty(&mpt_handshake_keys(b.hs)->next);
        g_assert_cmpint(deliver(&a, T0, &from_b0, false, cookie.buf, cookie.len, &reply), ==, -1);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_NONE);

        /* The next attempt over the same path carries mac2 and gets through. */
        initiation(&a, T0 + 5 * SEC, 0, &init);
        g_assert_true(memcmp(init.buf + MPT_HANDSHAKE_INITIATION_MAC2, zeros, 16) != 0);
        /* ... but not from another address (the cookie is the source's), nor over another path. */
        g_assert_cmpint(deliver(&b, T0 + 5 * SEC, &from_a1, true, init.buf, init.len, &reply), ==, -1);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_COOKIE);
        g_assert_cmpint(mpt_handshake_initiation_for_path(a.hs, T0 + 5 * SEC, 1, reply.buf), ==, 0);
        g_assert_cmpmem(reply.buf + MPT_HANDSHAKE_INITIATION_MAC2, 16, zeros, 16);
        g_assert_cmpint(deliver(&b, T0 + 5 * SEC, &from_a0, true, init.buf, init.len, &resp), ==, -1);
        g_assert_cmpint(resp.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);

        /* A under load answers B's response (no cookie from A yet) with a cookie reply too; B takes
         * it (it answers B's response's mac1), and B's next response carries mac2. */
        g_assert_cmpint(deliver(&a, T0 + 5 * SEC, &from_b0, true, resp.buf, resp.len, &cookie), ==, -1);
        g_assert_cmpint(cookie.kind, ==, MPT_HANDSHAKE_REPLY_COOKIE);
        g_assert_true(mpt_handshake_pending(a.hs, NULL));
        g_assert_cmpint(deliver(&b, T0 + 5 * SEC, &from_a0, false, cookie.buf, cookie.len, &reply), ==, -1);
        initiation(&a, T0 + 10 * SEC, 0, &init);
        g_assert_cmpint(deliver(&b, T0 + 10 * SEC, &from_a0, true, init.buf, init.len, &resp), ==, -1);
        g_assert_cmpint(resp.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);
        g_assert_true(memcmp(resp.buf + MPT_HANDSHAKE_RESPONSE_MAC2, zeros, 16) != 0);
        g_assert_cmpint(deliver(&a, T0 + 10 * SEC, &from_b0, true, resp.buf, resp.len, &reply), ==, -1);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_CONFIRM);

        /* A cookie reply that answers an older message, or is damaged: refused. */
        g_assert_cmpint(deliver(&b, T0 + 10 * SEC, &from_a0, false, cookie.buf, cookie.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_UNEXPECTED);
        initiation(&a, T0 + 20 * SEC, 0, &init);
        g_assert_cmpint(deliver(&b, T0 + 20 * SEC, &from_a0, true, init.buf, init.len, &cookie), ==, -1);
        g_assert_cmpint(cookie.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE); /* A's cookie is still good */

        /* A cookie is used for 115 s; B's secret lasts 120 s. */
        initiation(&a, T0 + 116 * SEC, 0, &init);
        g_assert_cmpmem(init.buf + MPT_HANDSHAKE_INITIATION_MAC2, 16, zeros, 16);
        g_assert_cmpint(deliver(&b, T0 + 116 * SEC, &from_a0, true, init.buf, init.len, &cookie), ==, -1);
        g_assert_cmpint(cookie.kind, ==, MPT_HANDSHAKE_REPLY_COOKIE);
        cookie.buf[40] ^= 1;
        g_assert_cmpint(deliver(&a, T0 + 116 * SEC, &from_b0, false, cookie.buf, cookie.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_AUTH_FAILED);
        end_done(&a);
        end_done(&b);
}

/* ---- Timers ---- */

static void test_rekey_timing(void) {
        End a, b;
        Msg init;
        usec_t t, retry;

        pair_init(&a, &b);
        /* Nothing yet: both want a first handshake. */
        g_assert_cmpint(mpt_handshake_want_initiation(a.hs, T0, 0), ==, MPT_HANDSHAKE_WANT_FIRST);
        g_assert_cmpuint(mpt_handshake_next_event(a.hs, T0), ==, USEC_INFINITY);

        /* An unanswered initiation is sent again after 5 s plus up to 1/3 s. */
        initiation(&a, T0, 0, &init);
        retry = mpt_handshake_next_event(a.hs, T0);
        g_assert_cmpuint(retry, >=, T0 + 5 * SEC);
        g_assert_cmpuint(retry, <=, T0 + 5 * SEC + 333 * MSEC);
        g_assert_cmpint(mpt_handshake_want_initiation(a.hs, retry - 1, 0), ==, MPT_HANDSHAKE_WANT_NOTHING);
        g_assert_cmpint(mpt_handshake_want_initiation(a.hs, retry, 0), ==, MPT_HANDSHAKE_WANT_RETRY);
        /* ... for 90 s; then the series is given up, and a new one starts. */
        for (t = T0 + 5 * SEC; t < T0 + 90 * SEC; t += 5 * SEC + 400 * MSEC) {
                initiation(&a, t, 0, &init);
                g_assert_cmpint(mpt_handshake_want_initiation(a.hs, t + 1, 0), ==, MPT_HANDSHAKE_WANT_NOTHING);
        }
        g_assert_cmpint(mpt_handshake_want_initiation(a.hs, T0 + 90 * SEC, 0), ==, MPT_HANDSHAKE_WANT_FIRST);
        g_assert_true(mpt_handshake_pending(a.hs, NULL));
        g_assert_cmpuint(mpt_handshake_expire(a.hs, T0 + 90 * SEC, (uint64_t[3]) {}), ==, 0);
        g_assert_false(mpt_handshake_pending(a.hs, NULL));

        /* A session A initiated: A rekeys after 120 s, B never on time; B's keys are refused after
         * 180 s (then B wants a first handshake of its own). */
        t = T0 + 100 * SEC;
        handshake(&a, &b, t, &from_a0, &from_b0);
        g_assert_cmpint(transport(&a, &b, t), ==, -1);
        g_assert_cmpint(transport(&b, &a, t), ==, -1);
        g_assert_cmpuint(mpt_handshake_next_event(a.hs, t), ==, t + 10 * SEC); /* keepalive after B's datagram */
        g_assert_cmpint(mpt_handshake_want_initiation(a.hs, t + 120 * SEC - 1, 0), ==, MPT_HANDSHAKE_WANT_NOTHING);
        g_assert_cmpint(mpt_handshake_want_initiation(a.hs, t + 120 * SEC, 0), ==, MPT_HANDSHAKE_WANT_REKEY_TIME);
        mpt_handshake_received(b.hs, t + 170 * SEC, mpt_handshake_keys(b.hs)->current.recv.epoch);
        mpt_handshake_sent(b.hs, t + 170 * SEC);
        g_assert_cmpint(mpt_handshake_want_initiation(b.hs, t + 170 * SEC, 0), ==, MPT_HANDSHAKE_WANT_NOTHING);
        g_assert_cmpint(mpt_handshake_want_initiation(b.hs, t + 180 * SEC, 0), ==, MPT_HANDSHAKE_WANT_FIRST);
        g_assert_null(mpt_handshake_keys_tx(mpt_handshake_keys(b.hs), t + 180 * SEC, 0));

        /* After 2^60 datagrams, either end rekeys; after 2^64 - 2^13 - 1 it stops sending. */
        g_assert_cmpint(mpt_handshake_want_initiation(b.hs, t + SEC, (UINT64_C(1) << 60) - 1), ==,
                        MPT_HANDSHAKE_WANT_NOTHING);
        g_assert_cmpint(mpt_handshake_want_initiation(b.hs, t + SEC, UINT64_C(1) << 60), ==,
                        MPT_HANDSHAKE_WANT_REKEY_MESSAGES);
        g_assert_nonnull(mpt_handshake_keys_tx(mpt_handshake_keys(b.hs), t + SEC, UINT64_MAX - 8192 - 1));
        g_assert_null(mpt_handshake_keys_tx(mpt_handshake_keys(b.hs), t + SEC, UINT64_MAX - 8192));
        end_done(&a);
        end_done(&b);
}

/* An end that sends but hears nothing for 15 s starts a handshake; one that hears but does not send
 * for 10 s wants a keepalive. */
static void test_silence_timers(void) {
        End a, b;

        pair_init(&a, &b);
        handshake(&a, &b, T0, &from_a0, &from_b0);
        g_assert_cmpint(transport(&a, &b, T0), ==, -1);
        g_assert_cmpint(transport(&b, &a, T0 + SEC), ==, -1);
        /* A heard B at T0 + 1 s and says nothing: a keepalive at T0 + 11 s. */
        g_assert_false(mpt_handshake_want_keepalive(a.hs, T0 + 11 * SEC - 1));
        g_assert_true(mpt_handshake_want_keepalive(a.hs, T0 + 11 * SEC));
        /* A sends from T0 + 12 s on, B stays silent: at T0 + 27 s A wants a new handshake. */
        for (usec_t t = T0 + 12 * SEC; t < T0 + 27 * SEC; t += SEC) {
                mpt_handshake_sent(a.hs, t);
                g_assert_cmpint(mpt_handshake_want_initiation(a.hs, t, 1), ==, MPT_HANDSHAKE_WANT_NOTHING);
        }
        g_assert_cmpint(mpt_handshake_want_initiation(a.hs, T0 + 27 * SEC, 1), ==, MPT_HANDSHAKE_WANT_PEER_SILENT);
        g_assert_false(mpt_handshake_want_keepalive(a.hs, T0 + 27 * SEC));
        end_done(&a);
        end_done(&b);
}

/* After a rekey, datagrams under the previous session still open (in flight on a slow path),
 * until it expires or the next rekey drops it. */
static void test_previous(void) {
        End a, b;
        const MptHandshakeKeys *ka, *kb;
        uint64_t k1_at_a, k1_at_b, k2_at_a, epochs[3];
        uint8_t buf[64];
        const MptHandshakeKeypair *kp;
        MptSecureHeader h;
        size_t n;

        pair_init(&a, &b);
        ka = mpt_handshake_keys(a.hs);
        kb = mpt_handshake_keys(b.hs);
        handshake(&a, &b, T0, &from_a0, &from_b0);
        g_assert_cmpint(transport(&a, &b, T0), ==, -1);
        k1_at_a = ka->current.recv.epoch;
        k1_at_b = kb->current.recv.epoch;

        /* B seals under K1 (its current); the datagram is held up on its way. */
        n = mpt_secure_seal_from(buf, (const uint8_t *) "late", 4, &kb->current.send, MPT_CIPHER_CHACHA20_POLY1305, 0,
                                 (MptSecureSender) { .path_id = 2, .counter = 99 });
        g_assert_cmpuint(n, ==, 4 + MPT_SECURE_OVERHEAD);

        /* Rekey at 120 s (K2); A sends under K2 at once, B moves to it on receipt. */
        handshake(&a, &b, T0 + 120 * SEC, &from_a0, &from_b0);
        g_assert_cmpuint(ka->previous.recv.epoch, ==, k1_at_a);
        k2_at_a = ka->current.recv.epoch;
        g_assert_cmpint(transport(&a, &b, T0 + 120 * SEC), ==, -1);
        g_assert_cmpuint(kb->previous.recv.epoch, ==, k1_at_b);

        /* The late K1 datagram arrives: opens with A's previous key pair. */
        g_assert_cmpint(mpt_secure_parse(buf, n, &h), ==, -1);
        g_assert_cmpuint(h.epoch, ==, k1_at_a);
        g_assert_cmpint(mpt_handshake_keys_rx(ka, h.epoch, T0 + 121 * SEC, &kp), ==, -1);
        g_assert_true(kp == &ka->previous);
        g_assert_cmpint(mpt_secure_open(buf, n, &kp->recv), ==, -1);

        /* K1 expires 180 s after its handshake: refused, then wiped. */
        g_assert_cmpint(mpt_handshake_keys_rx(ka, k1_at_a, T0 + 180 * SEC, &kp), ==, MPT_HANDSHAKE_DROP_EXPIRED);
        g_assert_cmpuint(mpt_handshake_expire(a.hs, T0 + 180 * SEC, epochs), ==, 1);
        g_assert_cmpuint(epochs[0], ==, k1_at_a);
        assert_keypair_empty(&ka->previous);
        g_assert_cmpint(mpt_handshake_keys_rx(ka, k1_at_a, T0 + 180 * SEC, &kp), ==,
                        MPT_HANDSHAKE_DROP_STALE_SESSION);
        /* An epoch this end never gave: unknown. */
        g_assert_cmpint(mpt_handshake_keys_rx(ka, (k1_at_a & ~UINT64_C(0xffffffff)) | 1000, T0, &kp), ==,
                        MPT_HANDSHAKE_DROP_UNKNOWN_SESSION);
        g_assert_cmpint(mpt_handshake_keys_rx(ka, 0, T0, &kp), ==, MPT_HANDSHAKE_DROP_UNKNOWN_SESSION);
        /* This end's own sending epoch (a datagram reflected back at it): not one of its sessions. */
        g_assert_cmpint(mpt_handshake_keys_rx(ka, ka->current.send.epoch, T0 + 130 * SEC, &kp), >=, 0);

        /* Two more sessions: K2 leaves the previous slot (stale, not merely expired). */
        handshake(&a, &b, T0 + 240 * SEC, &from_a0, &from_b0);
        g_assert_cmpuint(ka->previous.recv.epoch, ==, k2_at_a);
        g_assert_cmpint(transport(&a, &b, T0 + 240 * SEC), ==, -1);
        handshake(&a, &b, T0 + 360 * SEC, &from_a0, &from_b0);
        g_assert_cmpint(mpt_handshake_keys_rx(ka, k2_at_a, T0 + 360 * SEC, &kp), ==,
                        MPT_HANDSHAKE_DROP_STALE_SESSION);
        end_done(&a);
        end_done(&b);
}

/* A silent tunnel loses its keys 180 s after its last handshake; the rest of the session state
 * (cookies) 540 s after it. */
static void test_wipe_after_silence(void) {
        End a, b;
        Msg init, cookie, reply;
        uint64_t epochs[3], id_a;
        usec_t t;
        uint8_t zeros[16] = {};

        pair_init(&a, &b);
        /* A gets a cookie from B first. */
        initiation(&a, T0, 0, &init);
        g_assert_cmpint(deliver(&b, T0, &from_a0, true, init.buf, init.len, &cookie), ==, -1);
        g_assert_cmpint(deliver(&a, T0, &from_b0, false, cookie.buf, cookie.len, &reply), ==, -1);
        handshake(&a, &b, T0 + SEC, &from_a0, &from_b0);
        id_a = mpt_handshake_keys(a.hs)->current.recv.epoch;

        t = mpt_handshake_next_event(a.hs, T0 + SEC);
        g_assert_cmpuint(t, ==, T0 + SEC + 120 * SEC); /* A's rekey */
        g_assert_cmpuint(mpt_handshake_expire(a.hs, T0 + 180 * SEC, epochs), ==, 0);
        g_assert_cmpuint(mpt_handshake_expire(a.hs, T0 + 181 * SEC, epochs), ==, 1);
        g_assert_cmpuint(epochs[0], ==, id_a);
        assert_keypair_empty(&mpt_handshake_keys(a.hs)->current);
        g_assert_cmpuint(mpt_handshake_expire(b.hs, T0 + 181 * SEC, epochs), ==, 1);
        assert_keypair_empty(&mpt_handshake_keys(b.hs)->next);
        g_assert_cmpint(mpt_handshake_want_initiation(a.hs, T0 + 181 * SEC, 0), ==, MPT_HANDSHAKE_WANT_FIRST);

        /* 540 s after the last handshake the rest goes too (cookies, the last mac1, the cookie
         * secret): nothing is left to time. */
        g_assert_cmpuint(mpt_handshake_next_event(a.hs, T0 + 181 * SEC), ==, T0 + SEC + 540 * SEC);
        mpt_handshake_expire(a.hs, T0 + 541 * SEC, epochs);
        g_assert_cmpuint(mpt_handshake_next_event(a.hs, T0 + 541 * SEC), ==, USEC_INFINITY);
        initiation(&a, T0 + 541 * SEC, 0, &init);
        g_assert_cmpmem(init.buf + MPT_HANDSHAKE_INITIATION_MAC2, 16, zeros, 16);
        end_done(&a);
        end_done(&b);
}

/* ---- Malformed, damaged and unexpected messages ---- */

static void fix_mac1(uint8_t *msg, size_t mac1_off, const uint8_t receiver_public[32]) {
        uint8_t key[32];

        g_assert_cmpint(mpt_noise_hash(key, MPT_HANDSHAKE_LABEL_MAC1, strlen(MPT_HANDSHAKE_LABEL_MAC1),
                                       receiver_public, 32), ==, 0);
        g_assert_cmpint(mpt_noise_mac(msg + mac1_off, key, 32, msg, mac1_off), ==, 0);
}

static void test_malformed(void) {
        static const uint8_t types[] = { MPT_HANDSHAKE_INITIATION, MPT_HANDSHAKE_RESPONSE, MPT_HANDSHAKE_COOKIE_REPLY,
                                         MPT_HANDSHAKE_RETRY };
        static const size_t sizes[] = { MPT_HANDSHAKE_INITIATION_SIZE, MPT_HANDSHAKE_RESPONSE_SIZE,
                                        MPT_HANDSHAKE_COOKIE_REPLY_SIZE, MPT_HANDSHAKE_RETRY_SIZE };
        uint8_t buf[512] = {};
        End a, b;
        Msg init, resp, reply;
        uint64_t id;

        pair_init(&a, &b);
        /* Nothing, or a type that is not a handshake message. */
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, buf, 0, &reply), ==, MPT_HANDSHAKE_DROP_MALFORMED);
        for (unsigned t = 0; t < 256; t++) {
                if (t >= MPT_HANDSHAKE_INITIATION && t <= MPT_HANDSHAKE_RETRY)
                        continue;
                buf[0] = (uint8_t) t;
                g_assert_cmpint(deliver(&b, T0, &from_a0, false, buf, 172, &reply), ==, MPT_HANDSHAKE_DROP_MALFORMED);
        }
        /* Each type at any other size, and with a reserved byte set. */
        initiation(&a, T0, 0, &init);
        for (size_t i = 0; i < ELEMENTSOF(types); i++) {
                memset(buf, 0, sizeof buf);
                buf[0] = types[i];
                for (size_t n = 1; n < 300; n++)
                        if (n != sizes[i]) {
                                g_assert_cmpint(deliver(&b, T0, &from_a0, false, buf, n, &reply), ==,
                                                MPT_HANDSHAKE_DROP_MALFORMED);
                                g_assert_cmpint(deliver(&a, T0, &from_b0, false, buf, n, &reply), ==,
                                                MPT_HANDSHAKE_DROP_MALFORMED);
                        }
                for (size_t j = 1; j < 4; j++) {
                        buf[j] = 1;
                        g_assert_cmpint(deliver(&b, T0, &from_a0, false, buf, sizes[i], &reply), ==,
                                        MPT_HANDSHAKE_DROP_MALFORMED);
                        buf[j] = 0;
                }
                g_assert_cmpuint(reply.len, ==, 0);
        }
        /* Session ids of 0. */
        memcpy(buf, init.buf, init.len);
        memset(buf + 4, 0, 8);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, buf, init.len, &reply), ==, MPT_HANDSHAKE_DROP_MALFORMED);

        /* Valid type and size, but nothing under way to answer. */
        memset(buf, 0, sizeof buf);
        buf[0] = MPT_HANDSHAKE_RETRY;
        wr64be(buf + 4, 1);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, buf, MPT_HANDSHAKE_RETRY_SIZE, &reply), ==,
                        MPT_HANDSHAKE_DROP_UNEXPECTED);
        buf[0] = MPT_HANDSHAKE_COOKIE_REPLY;
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, buf, MPT_HANDSHAKE_COOKIE_REPLY_SIZE, &reply), ==,
                        MPT_HANDSHAKE_DROP_UNEXPECTED);

        /* A damaged initiation: mac1 catches it; with mac1 made to match, decryption does. */
        for (size_t i = 4; i < MPT_HANDSHAKE_INITIATION_MAC1; i += 7) {
                memcpy(buf, init.buf, init.len);
                buf[i] ^= 0x10;
                g_assert_cmpint(deliver(&b, T0, &from_a0, false, buf, init.len, &reply), ==, MPT_HANDSHAKE_DROP_MAC1);
                fix_mac1(buf, MPT_HANDSHAKE_INITIATION_MAC1, b.public_key);
                if (i < 12)
                        continue; /* the session id is not part of the Noise message */
                g_assert_cmpint(deliver(&b, T0, &from_a0, false, buf, init.len, &reply), ==,
                                MPT_HANDSHAKE_DROP_AUTH_FAILED);
                g_assert_cmpuint(reply.len, ==, 0);
        }
        /* An ephemeral key of small order. */
        memcpy(buf, init.buf, init.len);
        memset(buf + 12, 0, 32);
        fix_mac1(buf, MPT_HANDSHAKE_INITIATION_MAC1, b.public_key);
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, buf, init.len, &reply), ==, MPT_HANDSHAKE_DROP_BAD_KEY);

        /* A damaged response leaves A's handshake as it was: the real one still works. */
        g_assert_cmpint(deliver(&b, T0, &from_a0, false, init.buf, init.len, &resp), ==, -1);
        g_assert_true(mpt_handshake_pending(a.hs, &id));
        for (size_t i = 20; i < MPT_HANDSHAKE_RESPONSE_MAC1; i += 5) {
                memcpy(buf, resp.buf, resp.len);
                buf[i] ^= 0x80;
                g_assert_cmpint(deliver(&a, T0, &from_b0, false, buf, resp.len, &reply), ==, MPT_HANDSHAKE_DROP_MAC1);
                fix_mac1(buf, MPT_HANDSHAKE_RESPONSE_MAC1, a.public_key);
                g_assert_cmpint(deliver(&a, T0, &from_b0, false, buf, resp.len, &reply), ==,
                                MPT_HANDSHAKE_DROP_AUTH_FAILED);
        }
        /* Addressed to another handshake. */
        memcpy(buf, resp.buf, resp.len);
        wr64be(buf + 12, id ^ 1);
        fix_mac1(buf, MPT_HANDSHAKE_RESPONSE_MAC1, a.public_key);
        g_assert_cmpint(deliver(&a, T0, &from_b0, false, buf, resp.len, &reply), ==, MPT_HANDSHAKE_DROP_UNEXPECTED);
        g_assert_cmpint(deliver(&a, T0, &from_b0, false, resp.buf, resp.len, &reply), ==, -1);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_CONFIRM);
        end_done(&a);
        end_done(&b);
}

/* ---- A hub: whose initiation is it? ---- */

/* A hub (B) with two peers (A, C), each with its own MptHandshake: the initiator's key tells which
 * one takes the initiation, and doing so changes nothing, so that peer's state then reads it as
 * usual. */
static void test_initiator_key(void) {
        End a, c, b_a, b_c, x;
        MptNoiseKeypair s = {};
        Msg init, reply;
        uint8_t key[32], untouched[32], priv[32];

        end_init(&a, KEY_A, KEY_B, NULL, 1);
        end_init(&c, KEY_C, KEY_B, NULL, 2);
        end_init(&b_a, KEY_B, KEY_A, NULL, 3);
        end_init(&b_c, KEY_B, KEY_C, NULL, 4);
        key_bytes(priv, KEY_B);
        g_assert_cmpint(mpt_noise_keypair_set(&s, priv), ==, 0);

        initiation(&a, T0, 0, &init);
        g_assert_cmpint(mpt_handshake_initiator_key(&s, init.buf, init.len, key), ==, -1);
        g_assert_cmpmem(key, 32, a.public_key, 32);
        /* Nothing was used up: A's state at the hub takes it. */
        g_assert_cmpint(deliver(&b_a, T0, &from_a0, false, init.buf, init.len, &reply), ==, -1);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);

        initiation(&c, T0, 0, &init);
        g_assert_cmpint(mpt_handshake_initiator_key(&s, init.buf, init.len, key), ==, -1);
        g_assert_cmpmem(key, 32, c.public_key, 32);
        /* The wrong peer's state refuses it, as for a tunnel with one other end. */
        g_assert_cmpint(deliver(&b_a, T0 + SEC, &from_b0, false, init.buf, init.len, &reply), ==,
                        MPT_HANDSHAKE_DROP_UNKNOWN_PEER);
        g_assert_cmpint(deliver(&b_c, T0 + SEC, &from_b0, false, init.buf, init.len, &reply), ==, -1);
        g_assert_cmpint(reply.kind, ==, MPT_HANDSHAKE_REPLY_RESPONSE);

        /* Refused, ret untouched: made for another responder (mac1), mac1 right but made for
         * another key (does not decrypt), damaged, and not an initiation at all. */
        memset(untouched, 0x5a, sizeof untouched);
        memcpy(key, untouched, sizeof key);
        end_init(&x, KEY_A, KEY_C, NULL, 5);
        initiation(&x, T0, 0, &init);
        g_assert_cmpint(mpt_handshake_initiator_key(&s, init.buf, init.len, key), ==, MPT_HANDSHAKE_DROP_MAC1);
        fix_mac1(init.buf, MPT_HANDSHAKE_INITIATION_MAC1, b_a.public_key);
        g_assert_cmpint(mpt_handshake_initiator_key(&s, init.buf, init.len, key), ==, MPT_HANDSHAKE_DROP_AUTH_FAILED);
        end_done(&x);
        initiation(&a, T0 + 2 * SEC, 0, &init);
        init.buf[50] ^= 1; /* in the sealed static key */
        fix_mac1(init.buf, MPT_HANDSHAKE_INITIATION_MAC1, b_a.public_key);
        g_assert_cmpint(mpt_handshake_initiator_key(&s, init.buf, init.len, key), ==, MPT_HANDSHAKE_DROP_AUTH_FAILED);
        init.buf[50] ^= 1;
        g_assert_cmpint(mpt_handshake_initiator_key(&s, init.buf, init.len - 1, key), ==, MPT_HANDSHAKE_DROP_MALFORMED);
        init.buf[0] = MPT_HANDSHAKE_RESPONSE;
        g_assert_cmpint(mpt_handshake_initiator_key(&s, init.buf, init.len, key), ==, MPT_HANDSHAKE_DROP_MALFORMED);
        g_assert_cmpmem(key, 32, untouched, 32);

        mpt_noise_keypair_done(&s);
        end_done(&a);
        end_done(&c);
        end_done(&b_a);
        end_done(&b_c);
}

/* A hub's peer: its session ids carry its tag, and keep working as ids do (a new generation
 * each, the old ones stale once dropped). */
static void test_session_tag(void) {
        End a, b;
        uint64_t id1, id2, id3;

        pair_init(&a, &b);
        mpt_handshake_set_session_tag(b.hs, 0x1234abcd);
        mpt_handshake_set_session_tag(a.hs, 0xfeed0001);
        id1 = handshake(&a, &b, T0, &from_a0, &from_b0);
        g_assert_cmpuint(id1, ==, UINT64_C(0x1234abcd00000001));
        g_assert_cmpint(transport(&a, &b, T0 + MSEC), ==, -1);
        g_assert_cmpint(transport(&b, &a, T0 + MSEC), ==, -1);
        /* The initiator's id, in the receiver field of what B sends, carries A's tag. */
        g_assert_cmpuint(mpt_handshake_keys(b.hs)->current.send.epoch >> 32, ==, 0xfeed0001);

        id2 = handshake(&a, &b, T0 + MPT_HANDSHAKE_REKEY_AFTER_TIME, &from_a0, &from_b0);
        g_assert_cmpuint(id2, ==, UINT64_C(0x1234abcd00000002));
        g_assert_cmpint(transport(&a, &b, T0 + MPT_HANDSHAKE_REKEY_AFTER_TIME + MSEC), ==, -1);
        id3 = handshake(&a, &b, T0 + 2 * MPT_HANDSHAKE_REKEY_AFTER_TIME, &from_a0, &from_b0);
        g_assert_cmpuint(id3 >> 32, ==, 0x1234abcd);
        g_assert_cmpuint((uint32_t) id3, >, (uint32_t) id2);
        {
                const MptHandshakeKeypair *kp = NULL;
                /* id1 is gone: two sessions later, it is stale; an id of another tag's future is unknown. */
                g_assert_cmpint(mpt_handshake_keys_rx(mpt_handshake_keys(b.hs), id1,
                                                      T0 + 2 * MPT_HANDSHAKE_REKEY_AFTER_TIME, &kp), ==,
                                MPT_HANDSHAKE_DROP_STALE_SESSION);
                g_assert_cmpint(mpt_handshake_keys_rx(mpt_handshake_keys(b.hs), UINT64_C(0x1234abcd000000ff),
                                                      T0 + 2 * MPT_HANDSHAKE_REKEY_AFTER_TIME, &kp), ==,
                                MPT_HANDSHAKE_DROP_UNKNOWN_SESSION);
        }
        end_done(&a);
        end_done(&b);
}

static void test_enums(void) {
        for (int i = 0; i < _MPT_HANDSHAKE_DROP_MAX; i++) {
                const char *s = mpt_handshake_drop_to_string(i);
                g_assert_nonnull(s);
                g_assert_cmpint(mpt_handshake_drop_from_string(s), ==, i);
        }
        for (int i = 0; i < _MPT_HANDSHAKE_REPLY_MAX; i++)
                g_assert_cmpint(mpt_handshake_reply_from_string(mpt_handshake_reply_to_string(i)), ==, i);
        for (int i = 0; i < _MPT_HANDSHAKE_WANT_MAX; i++)
                g_assert_cmpint(mpt_handshake_want_from_string(mpt_handshake_want_to_string(i)), ==, i);
        g_assert_null(mpt_handshake_drop_to_string(_MPT_HANDSHAKE_DROP_MAX));
        g_assert_cmpint(mpt_handshake_drop_from_string("replayed"), ==, -EINVAL);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        g_assert_cmpint(mpt_noise_init(), ==, 0);
        g_test_add_func("/mpt/handshake/vector", test_vector);
        g_test_add_func("/mpt/handshake/full", test_full);
        g_test_add_func("/mpt/handshake/aes", test_aes);
        g_test_add_func("/mpt/handshake/psk", test_preshared_key);
        g_test_add_func("/mpt/handshake/wrong-static-key", test_wrong_static_key);
        g_test_add_func("/mpt/handshake/initiator-key", test_initiator_key);
        g_test_add_func("/mpt/handshake/session-tag", test_session_tag);
        g_test_add_func("/mpt/handshake/replay", test_replay);
        g_test_add_func("/mpt/handshake/restart", test_restart);
        g_test_add_func("/mpt/handshake/cold-start", test_cold_start);
        g_test_add_func("/mpt/handshake/simultaneous", test_simultaneous);
        g_test_add_func("/mpt/handshake/multipath-copies", test_multipath_copies);
        g_test_add_func("/mpt/handshake/flood", test_flood);
        g_test_add_func("/mpt/handshake/screen", test_screen);
        g_test_add_func("/mpt/handshake/cookie", test_cookie);
        g_test_add_func("/mpt/handshake/rekey-timing", test_rekey_timing);
        g_test_add_func("/mpt/handshake/silence-timers", test_silence_timers);
        g_test_add_func("/mpt/handshake/previous", test_previous);
        g_test_add_func("/mpt/handshake/wipe-after-silence", test_wipe_after_silence);
        g_test_add_func("/mpt/handshake/malformed", test_malformed);
        g_test_add_func("/mpt/handshake/enums", test_enums);
        return g_test_run();
}
