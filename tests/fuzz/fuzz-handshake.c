/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The consumers of handshake messages (handshake.h): initiation, response, cookie reply and retry,
 * each at an end in the state where a genuine message of its type is expected, so that mutations
 * of genuine messages reach the cryptography and the state machine, not only the length checks.
 *
 * Input: a mode byte, then data.
 *   mode & 3     which message, to whom: 0 an initiation to B (just started); 1 a response to A
 *                (its initiation under way); 2 a cookie reply to A (likewise); 3 a retry to A2 (A
 *                restarted while B remembers A's earlier instance)
 *   mode & 4     raw: the message is the data as it is; else the genuine message XOR the data
 *   mode & 8     then make mac1 right for the receiver (as anyone who knows its public key can)
 *   mode & 16    the receiver is under load
 *   mode & 32    the message is as long as the data; else as long as the genuine one
 * Whatever the receiver answers is delivered to the other end once more. Every end is made afresh
 * for each input, with fixed keys and deterministic randomness, so inputs replay exactly. */

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "byteorder.h"
#include "handshake.h"
#include "../unit/handshake-rng.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEC USEC_PER_SEC
#define T0 (1000 * SEC)


static const MptHandshakeSource from_a = { .path_id = 0, .addr_len = 6, .addr = { 192, 0, 2, 1, 0x12, 0x92 } };
static const MptHandshakeSource from_b = { .path_id = 3, .addr_len = 18,
                                           .addr = { 0x20, 0x01, 0x0d, 0xb8, [15] = 9, 0x12, 0x92 } };

typedef struct Ends {
        uint8_t priv_a[32], priv_b[32], pub_a[32], pub_b[32];
        Rng rng_a, rng_b, rng_a2;
        MptHandshake *a, *b, *a2;
} Ends;

static void ends_init(Ends *e) {
        *e = (Ends) { .rng_a = { .seed = 0x55 }, .rng_b = { .seed = 0xaa }, .rng_a2 = { .seed = 0x33 } };
        for (unsigned i = 0; i < 32; i++) {
                e->priv_a[i] = (uint8_t) (1 + i);
                e->priv_b[i] = (uint8_t) (0x21 + i);
        }
        assert(mpt_noise_public_key(e->pub_a, e->priv_a) == 0);
        assert(mpt_noise_public_key(e->pub_b, e->priv_b) == 0);
        assert(mpt_handshake_new_random(e->priv_a, e->pub_b, NULL, false, rng_fill, &e->rng_a, &e->a) == 0);
        assert(mpt_handshake_new_random(e->priv_b, e->pub_a, NULL, false, rng_fill, &e->rng_b, &e->b) == 0);
}

static void ends_done(Ends *e) {
        mpt_handshake_free(e->a);
        mpt_handshake_free(e->b);
        mpt_handshake_free(e->a2);
}

static size_t expected_len(MptHandshakeReply kind) {
        switch (kind) {
        case MPT_HANDSHAKE_REPLY_RESPONSE:
                return MPT_HANDSHAKE_RESPONSE_SIZE;
        case MPT_HANDSHAKE_REPLY_COOKIE:
                return MPT_HANDSHAKE_COOKIE_REPLY_SIZE;
        case MPT_HANDSHAKE_REPLY_RETRY:
                return MPT_HANDSHAKE_RETRY_SIZE;
        case MPT_HANDSHAKE_REPLY_INITIATION:
                return MPT_HANDSHAKE_INITIATION_SIZE;
        default:
                return 0;
        }
}

static int receive(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, bool under_load, const uint8_t *msg,
                   size_t len, uint8_t reply[MPT_HANDSHAKE_REPLY_MAX], size_t *reply_len, MptHandshakeReply *kind) {
        int r;

        r = mpt_handshake_receive(hs, now, src, under_load, msg, len, reply, reply_len, kind);
        assert(r == -1 || (r >= 0 && r < _MPT_HANDSHAKE_DROP_MAX));
        assert(*kind >= 0 && *kind < _MPT_HANDSHAKE_REPLY_MAX);
        assert(*reply_len == expected_len(*kind));
        assert(r == -1 || *kind == MPT_HANDSHAKE_REPLY_NONE);
        if (*kind == MPT_HANDSHAKE_REPLY_RESPONSE)
                assert(mpt_handshake_keys(hs)->next.recv.epoch != 0);
        if (*kind == MPT_HANDSHAKE_REPLY_CONFIRM)
                assert(mpt_handshake_keys_tx(mpt_handshake_keys(hs), now, 0));
        return r;
}

/* A genuine message of the kind, and who receives it (from where), with its mac1 offset (0: none). */
static void genuine(Ends *e, unsigned kind, uint8_t *msg, size_t *len, MptHandshake **to,
                    const MptHandshakeSource **src, size_t *mac1, const uint8_t **to_public) {
        uint8_t init[MPT_HANDSHAKE_INITIATION_SIZE], reply[MPT_HANDSHAKE_REPLY_MAX], reply2[MPT_HANDSHAKE_REPLY_MAX];
        MptHandshakeReply k;
        size_t n;

        assert(mpt_handshake_create_initiation(e->a, T0, from_a.path_id, init) == 0);
        *mac1 = 0;
        switch (kind) {
        case 0:
                memcpy(msg, init, sizeof init);
                *len = sizeof init;
                *to = e->b;
                *src = &from_a;
                *mac1 = MPT_HANDSHAKE_INITIATION_MAC1;
                *to_public = e->pub_b;
                return;
        case 1:
        case 2:
                assert(receive(e->b, T0, &from_a, kind == 2, init, sizeof init, reply, &n, &k) == -1);
                memcpy(msg, reply, n);
                *len = n;
                *to = e->a;
                *src = &from_b;
                if (kind == 1)
                        *mac1 = MPT_HANDSHAKE_RESPONSE_MAC1;
                *to_public = e->pub_a;
                return;
        default:
                /* A's session with B, then A restarts as A2. */
                assert(receive(e->b, T0, &from_a, false, init, sizeof init, reply, &n, &k) == -1);
                assert(receive(e->a, T0, &from_b, false, reply, n, reply2, &n, &k) == -1);
                assert(mpt_handshake_new_random(e->priv_a, e->pub_b, NULL, false, rng_fill, &e->rng_a2, &e->a2) == 0);
                assert(mpt_handshake_create_initiation(e->a2, T0 + SEC, from_a.path_id, init) == 0);
                assert(receive(e->b, T0 + SEC, &from_a, false, init, sizeof init, reply, &n, &k) == -1);
                assert(k == MPT_HANDSHAKE_REPLY_RETRY);
                memcpy(msg, reply, n);
                *len = n;
                *to = e->a2;
                *src = &from_b;
                *to_public = e->pub_a;
                return;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t base[MPT_HANDSHAKE_REPLY_MAX], reply[MPT_HANDSHAKE_REPLY_MAX], reply2[MPT_HANDSHAKE_REPLY_MAX];
        const MptHandshakeSource *src;
        const uint8_t *to_public;
        MptHandshake *to, *other;
        MptHandshakeReply kind;
        size_t base_len, len, mac1, n;
        uint8_t mode, *msg;
        Ends e;
        int r;

        if (size == 0 || size > 4096)
                return 0;
        mode = data[0];
        data++;
        size--;
        ends_init(&e);
        genuine(&e, mode & 3, base, &base_len, &to, &src, &mac1, &to_public);
        other = to == e.b ? e.a : e.b;

        /* An exact-size copy, so that ASan sees any read past the message. */
        len = mode & 36 ? size : base_len;
        msg = malloc(len ?: 1);
        assert(msg);
        for (size_t i = 0; i < len; i++)
                msg[i] = (mode & 4 ? 0 : i < base_len ? base[i] : 0) ^ (i < size ? data[i] : 0);
        if (mode & 8 && mac1 && len >= mac1 + MPT_NOISE_MAC_SIZE) {
                uint8_t key[32];
                assert(mpt_noise_hash(key, MPT_HANDSHAKE_LABEL_MAC1, strlen(MPT_HANDSHAKE_LABEL_MAC1), to_public, 32) ==
                       0);
                assert(mpt_noise_mac(msg + mac1, key, 32, msg, mac1) == 0);
        }

        r = receive(to, T0 + 2 * SEC, src, mode & 16, msg, len, reply, &n, &kind);
        /* One more step: the answer to the other end (a response to its initiation, the initiation
         * that answers a retry, a cookie). */
        if (r == -1 && n > 0)
                (void) receive(to == e.a2 ? e.b : other, T0 + 2 * SEC, to == e.b ? &from_b : &from_a, false, reply, n,
                               reply2, &n, &kind);

        /* The transport lookup with what the data says. */
        if (size >= 8) {
                const MptHandshakeKeypair *kp;
                r = mpt_handshake_keys_rx(mpt_handshake_keys(to), rd64be(data), T0 + 2 * SEC, &kp);
                assert(r == -1 || (r >= 0 && r < _MPT_HANDSHAKE_DROP_MAX));
        }
        (void) mpt_handshake_next_event(to, T0 + 2 * SEC);
        (void) mpt_handshake_want_initiation(to, T0 + 2 * SEC, 0);

        free(msg);
        ends_done(&e);
        return 0;
}
