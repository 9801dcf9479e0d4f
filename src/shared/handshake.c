/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "byteorder.h"
#include "handshake.h"

static const char *const mpt_handshake_drop_table[_MPT_HANDSHAKE_DROP_MAX] = {
        [MPT_HANDSHAKE_DROP_MALFORMED] = "handshake-malformed",
        [MPT_HANDSHAKE_DROP_MAC1] = "handshake-mac1",
        [MPT_HANDSHAKE_DROP_AUTH_FAILED] = "handshake-auth-failed",
        [MPT_HANDSHAKE_DROP_UNKNOWN_PEER] = "handshake-unknown-peer",
        [MPT_HANDSHAKE_DROP_BAD_KEY] = "handshake-bad-key",
        [MPT_HANDSHAKE_DROP_REPLAYED] = "handshake-replayed",
        [MPT_HANDSHAKE_DROP_FLOOD] = "handshake-flood",
        [MPT_HANDSHAKE_DROP_UNEXPECTED] = "handshake-unexpected",
        [MPT_HANDSHAKE_DROP_CRYPTO_ERROR] = "handshake-crypto-error",
        [MPT_HANDSHAKE_DROP_UNKNOWN_SESSION] = "unknown-session",
        [MPT_HANDSHAKE_DROP_STALE_SESSION] = "stale-session",
        [MPT_HANDSHAKE_DROP_EXPIRED] = "expired-session",
};
DEFINE_STRING_TABLE(mpt_handshake_drop, MptHandshakeDrop, _MPT_HANDSHAKE_DROP_MAX);

static const char *const mpt_handshake_reply_table[_MPT_HANDSHAKE_REPLY_MAX] = {
        [MPT_HANDSHAKE_REPLY_NONE] = "none",
        [MPT_HANDSHAKE_REPLY_RESPONSE] = "response",
        [MPT_HANDSHAKE_REPLY_COOKIE] = "cookie",
        [MPT_HANDSHAKE_REPLY_RETRY] = "retry",
        [MPT_HANDSHAKE_REPLY_INITIATION] = "initiation",
        [MPT_HANDSHAKE_REPLY_CONFIRM] = "confirm",
};
DEFINE_STRING_TABLE(mpt_handshake_reply, MptHandshakeReply, _MPT_HANDSHAKE_REPLY_MAX);

static const char *const mpt_handshake_want_table[_MPT_HANDSHAKE_WANT_MAX] = {
        [MPT_HANDSHAKE_WANT_NOTHING] = "nothing",
        [MPT_HANDSHAKE_WANT_FIRST] = "first",
        [MPT_HANDSHAKE_WANT_RETRY] = "retry",
        [MPT_HANDSHAKE_WANT_REKEY_TIME] = "rekey-time",
        [MPT_HANDSHAKE_WANT_REKEY_MESSAGES] = "rekey-messages",
        [MPT_HANDSHAKE_WANT_PEER_SILENT] = "peer-silent",
};
DEFINE_STRING_TABLE(mpt_handshake_want, MptHandshakeWant, _MPT_HANDSHAKE_WANT_MAX);

#define KEY MPT_NOISE_KEY_SIZE
#define MAC MPT_NOISE_MAC_SIZE
/* Where the Noise messages start in ours. */
#define INITIATION_NOISE 12u
#define RESPONSE_NOISE 20u
#define COOKIE_NONCE 12u
#define COOKIE_SEALED 36u
#define RETRY_SEALED 12u
/* The session ids (handshake.h): every message has one at SESSION_ID (the sender's in an
 * initiation and a response, the receiver's in a cookie reply and a retry); a response has the
 * receiver's at RESPONSE_RECEIVER_ID too. */
#define SESSION_ID 4u
#define RESPONSE_RECEIVER_ID 12u
/* The freshness payload's counter and echo; the instance is at 0. */
#define FRESHNESS_COUNTER 8u
#define FRESHNESS_ECHO 16u

_Static_assert(INITIATION_NOISE + MPT_NOISE_INITIATION_SIZE(MPT_HANDSHAKE_FRESHNESS_SIZE) == MPT_HANDSHAKE_INITIATION_MAC1,
               "layout");
_Static_assert(MPT_HANDSHAKE_INITIATION_MAC2 + MAC == MPT_HANDSHAKE_INITIATION_SIZE, "layout");
_Static_assert(RESPONSE_NOISE + MPT_NOISE_RESPONSE_SIZE(0) == MPT_HANDSHAKE_RESPONSE_MAC1, "layout");
_Static_assert(MPT_HANDSHAKE_RESPONSE_MAC2 + MAC == MPT_HANDSHAKE_RESPONSE_SIZE, "layout");
_Static_assert(COOKIE_SEALED + MAC + MPT_NOISE_TAG_SIZE == MPT_HANDSHAKE_COOKIE_REPLY_SIZE, "layout");
_Static_assert(RETRY_SEALED + MAC + MPT_NOISE_TAG_SIZE == MPT_HANDSHAKE_RETRY_SIZE, "layout");

/* A cookie the other end gave this end, for mac2 on what this end sends over one path. */
typedef struct Cookie {
        uint8_t value[MAC];
        usec_t received;
        bool valid;
} Cookie;

struct MptHandshake {
        MptNoiseKeypair s;
        uint8_t peer_public_key[KEY];
        uint8_t psk[KEY];
        bool with_aes;
        uint8_t mac1_key[KEY];        /* HASH(LABEL_MAC1 || this end's public key): checks what arrives */
        uint8_t peer_mac1_key[KEY];   /* ... || the other end's: stamps what this end sends */
        uint8_t cookie_key[KEY];      /* HASH(LABEL_COOKIE || this end's public key): seals cookie replies */
        uint8_t peer_cookie_key[KEY]; /* ... || the other end's: opens the cookie replies that arrive */

        MptHandshakeRandom random; /* NULL: libcrypto's */
        void *userdata;
        uint32_t session_tag; /* the upper half of every session id; 0: a random one per id */

        /* As initiator. */
        uint64_t instance;
        uint64_t counter; /* of the last initiation made */
        struct {
                bool active;
                MptNoiseHandshake noise; /* after writing the initiation */
                uint64_t local_id;
                usec_t started; /* the first attempt of this series */
                usec_t retry_at;
                uint8_t msg[MPT_HANDSHAKE_INITIATION_SIZE]; /* mac2 zero */
        } pending;
        Cookie cookies[MPT_PATHS_MAX];
        /* The mac1 of the last initiation or response sent, and its sender's session id: a cookie
         * reply must answer it. */
        uint8_t last_mac1[MAC];
        uint64_t last_mac1_id;
        bool have_last_mac1;

        /* As responder. */
        bool have_record;
        uint64_t record_instance, record_counter;
        usec_t last_accepted; /* 0: never */
        uint8_t challenge_key[KEY];
        uint8_t cookie_secret[KEY];
        usec_t cookie_secret_born;
        bool have_cookie_secret;

        /* Sessions and timers (0: never). */
        MptHandshakeKeys keys;
        uint64_t keys_version;
        usec_t last_session; /* the newest handshake completed */
        usec_t tx_since_rx;  /* the first send after the last receipt */
        usec_t rx_since_tx;  /* the first receipt after the last send */
        bool confirm;        /* a session this end initiated, not sent under yet */
};

/* Whether t lies at least age before now; false when now is before t (a worker's clock read before
 * the main thread made the keys it then got). */
static bool older_than(usec_t now, usec_t t, usec_t age) {
        return now >= t && now - t >= age;
}

static int get_random(MptHandshake *hs, void *buf, size_t n) {
        if (hs->random)
                return hs->random(hs->userdata, buf, n);
        assert(n <= INT_MAX);
        return RAND_priv_bytes(buf, (int) n) == 1 ? 0 : -EIO;
}

static bool keypair_empty(const MptHandshakeKeypair *kp) {
        return kp->recv.epoch == 0;
}

static void keypair_wipe(MptHandshakeKeypair *kp) {
        mpt_secure_keys_wipe(&kp->send);
        mpt_secure_keys_wipe(&kp->recv);
        explicit_bzero(kp, sizeof *kp);
}

static bool have_keys(const MptHandshake *hs) {
        return !keypair_empty(&hs->keys.current) || !keypair_empty(&hs->keys.previous) ||
                !keypair_empty(&hs->keys.next);
}

static void pending_wipe(MptHandshake *hs) {
        mpt_noise_handshake_wipe(&hs->pending.noise);
        explicit_bzero(&hs->pending, sizeof hs->pending);
}

int mpt_handshake_new_random(const uint8_t private_key[MPT_NOISE_KEY_SIZE],
                             const uint8_t peer_public_key[MPT_NOISE_KEY_SIZE], const uint8_t psk[MPT_NOISE_KEY_SIZE],
                             bool with_aes, MptHandshakeRandom fn, void *userdata, MptHandshake **ret) {
        _cleanup_(mpt_handshake_freep) MptHandshake *hs = NULL;
        uint8_t b[8];
        int r;

        r = mpt_noise_init();
        if (r < 0)
                return r;
        hs = calloc(1, sizeof *hs);
        if (!hs)
                return -ENOMEM;
        hs->random = fn;
        hs->userdata = userdata;
        hs->with_aes = with_aes;
        r = mpt_noise_keypair_set(&hs->s, private_key);
        if (r < 0)
                return r;
        /* Both ends with one key would accept each other's messages as their own. */
        if (CRYPTO_memcmp(hs->s.public_key, peer_public_key, KEY) == 0)
                return -EINVAL;
        memcpy(hs->peer_public_key, peer_public_key, KEY);
        if (psk)
                memcpy(hs->psk, psk, KEY);
        if ((r = mpt_noise_hash(hs->mac1_key, MPT_HANDSHAKE_LABEL_MAC1, STRLEN(MPT_HANDSHAKE_LABEL_MAC1),
                                hs->s.public_key, KEY)) < 0 ||
            (r = mpt_noise_hash(hs->peer_mac1_key, MPT_HANDSHAKE_LABEL_MAC1, STRLEN(MPT_HANDSHAKE_LABEL_MAC1),
                                peer_public_key, KEY)) < 0 ||
            (r = mpt_noise_hash(hs->cookie_key, MPT_HANDSHAKE_LABEL_COOKIE, STRLEN(MPT_HANDSHAKE_LABEL_COOKIE),
                                hs->s.public_key, KEY)) < 0 ||
            (r = mpt_noise_hash(hs->peer_cookie_key, MPT_HANDSHAKE_LABEL_COOKIE, STRLEN(MPT_HANDSHAKE_LABEL_COOKIE),
                                peer_public_key, KEY)) < 0)
                return r;
        r = get_random(hs, b, sizeof b);
        if (r < 0)
                return r;
        hs->instance = rd64be(b) ?: 1;
        r = get_random(hs, hs->challenge_key, sizeof hs->challenge_key);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(hs);
        return 0;
}

int mpt_handshake_new(const uint8_t private_key[MPT_NOISE_KEY_SIZE], const uint8_t peer_public_key[MPT_NOISE_KEY_SIZE],
                      const uint8_t psk[MPT_NOISE_KEY_SIZE], bool with_aes, MptHandshake **ret) {
        return mpt_handshake_new_random(private_key, peer_public_key, psk, with_aes, NULL, NULL, ret);
}

MptHandshake *mpt_handshake_free(MptHandshake *hs) {
        if (!hs)
                return NULL;
        mpt_noise_keypair_done(&hs->s);
        pending_wipe(hs);
        keypair_wipe(&hs->keys.current);
        keypair_wipe(&hs->keys.previous);
        keypair_wipe(&hs->keys.next);
        explicit_bzero(hs, sizeof *hs);
        free(hs);
        return NULL;
}

/* ---- Helpers for messages ---- */

static int noise_drop(int r) {
        switch (r) {
        case -EBADMSG:
                return MPT_HANDSHAKE_DROP_AUTH_FAILED;
        case -EPERM:
                return MPT_HANDSHAKE_DROP_UNKNOWN_PEER;
        case -EINVAL:
                return MPT_HANDSHAKE_DROP_BAD_KEY;
        default:
                return MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
        }
}

static bool header_ok(const uint8_t *msg, size_t len, uint8_t type, size_t size) {
        return len == size && msg[0] == type && msg[1] == 0 && msg[2] == 0 && msg[3] == 0;
}

/* 1 when the MAC at msg + off is key's over the off bytes before it, 0 when not, < 0 on failure. */
static int mac_check(const uint8_t *key, size_t key_len, const uint8_t *msg, size_t off) {
        uint8_t mac[MAC];
        int r;

        r = mpt_noise_mac(mac, key, key_len, msg, off);
        if (r < 0)
                return r;
        return CRYPTO_memcmp(mac, msg + off, MAC) == 0;
}

/* The cookie this end gives src: 1 with ret set, 0 when there is no current secret and make is
 * false (nothing can carry a valid mac2 then), < 0 on failure. */
static int cookie_for(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, bool make, uint8_t ret[MAC]) {
        int r;

        if (!hs->have_cookie_secret || older_than(now, hs->cookie_secret_born, MPT_HANDSHAKE_COOKIE_SECRET_MAX_AGE) ||
            now < hs->cookie_secret_born) {
                if (!make)
                        return 0;
                r = get_random(hs, hs->cookie_secret, sizeof hs->cookie_secret);
                if (r < 0)
                        return r;
                hs->cookie_secret_born = now;
                hs->have_cookie_secret = true;
        }
        r = mpt_noise_mac(ret, hs->cookie_secret, KEY, src->addr, src->addr_len);
        return r < 0 ? r : 1;
}

/* 1 when msg's mac2 (at off) is the one of src's current cookie. */
static int mac2_check(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, const uint8_t *msg, size_t off) {
        uint8_t cookie[MAC];
        int r;

        r = cookie_for(hs, now, src, false, cookie);
        if (r > 0)
                r = mac_check(cookie, MAC, msg, off);
        explicit_bzero(cookie, sizeof cookie);
        return r;
}

/* Answers a message (whose mac1 is at msg + mac1_off, and whose sender's session id is receiver)
 * with a cookie reply instead of processing it. */
static int cookie_reply(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, const uint8_t *msg,
                        size_t mac1_off, uint64_t receiver, uint8_t *reply, size_t *ret_reply_len,
                        MptHandshakeReply *ret_reply) {
        uint8_t cookie[MAC];
        int r;

        r = cookie_for(hs, now, src, true, cookie);
        if (r < 0)
                return MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
        memset(reply, 0, MPT_HANDSHAKE_COOKIE_REPLY_SIZE);
        reply[0] = MPT_HANDSHAKE_COOKIE_REPLY;
        wr64be(reply + SESSION_ID, receiver);
        r = get_random(hs, reply + COOKIE_NONCE, MPT_NOISE_XNONCE_SIZE);
        if (r >= 0)
                r = mpt_noise_xaead_seal(hs->cookie_key, reply + COOKIE_NONCE, msg + mac1_off, MAC, cookie, MAC,
                                         reply + COOKIE_SEALED);
        explicit_bzero(cookie, sizeof cookie);
        if (r < 0)
                return MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
        *ret_reply_len = MPT_HANDSHAKE_COOKIE_REPLY_SIZE;
        *ret_reply = MPT_HANDSHAKE_REPLY_COOKIE;
        return -1;
}

/* mac2 of msg (at off) for what goes out over path_id: with the other end's cookie for that path
 * while it is young enough, else zeros. */
static int stamp_mac2(MptHandshake *hs, usec_t now, unsigned path_id, uint8_t *msg, size_t off) {
        const Cookie *c = &hs->cookies[path_id];

        if (c->valid && now >= c->received &&
            !older_than(now, c->received, MPT_HANDSHAKE_COOKIE_SECRET_MAX_AGE - MPT_HANDSHAKE_COOKIE_LATENCY))
                return mpt_noise_mac(msg + off, c->value, MAC, msg, off);
        memset(msg + off, 0, MAC);
        return 0;
}

static void remember_mac1(MptHandshake *hs, const uint8_t *mac1, uint64_t id) {
        memcpy(hs->last_mac1, mac1, MAC);
        hs->last_mac1_id = id;
        hs->have_last_mac1 = true;
}

/* A new session id: the session tag or a random upper half (never 0), the next generation in the
 * lower. */
static int new_session_id(MptHandshake *hs, uint64_t *ret) {
        uint8_t b[4];
        uint32_t upper = hs->session_tag;
        int r;

        if (hs->keys.generation == UINT32_MAX)
                return -EOVERFLOW;
        if (upper == 0) {
                r = get_random(hs, b, sizeof b);
                if (r < 0)
                        return r;
                upper = rd32be(b) ?: 1;
        }
        hs->keys.generation++;
        *ret = (uint64_t) upper << 32 | hs->keys.generation;
        return 0;
}

void mpt_handshake_set_session_tag(MptHandshake *hs, uint32_t tag) {
        assert(tag != 0);
        hs->session_tag = tag;
}

static int new_ephemeral(MptHandshake *hs, MptNoiseKeypair *e) {
        uint8_t private_key[KEY];
        int r;

        r = get_random(hs, private_key, sizeof private_key);
        if (r >= 0)
                r = mpt_noise_keypair_set(e, private_key);
        explicit_bzero(private_key, sizeof private_key);
        return r;
}

/* The session's key pair from a finished handshake state. */
static int make_keypair(MptHandshake *hs, const MptNoiseHandshake *noise, bool initiator, uint64_t local_id,
                        uint64_t remote_id, usec_t now, MptHandshakeKeypair *ret) {
        uint8_t i2r[KEY], r2i[KEY];
        int r;

        r = mpt_noise_ik_split(noise, i2r, r2i);
        if (r >= 0)
                r = mpt_secure_derive(initiator ? i2r : r2i, remote_id, hs->with_aes, &ret->send);
        if (r >= 0)
                r = mpt_secure_derive(initiator ? r2i : i2r, local_id, hs->with_aes, &ret->recv);
        explicit_bzero(i2r, sizeof i2r);
        explicit_bzero(r2i, sizeof r2i);
        if (r < 0) {
                keypair_wipe(ret);
                return r;
        }
        ret->created = now;
        ret->initiator = initiator;
        return 0;
}

/* A responder's new session: next, until the initiator's first datagram under it arrives. The
 * next key pair it replaces was never confirmed; the previous one is dropped to make room (as
 * WireGuard does: current stays, so nothing in use is lost). */
static void install_responder(MptHandshake *hs, MptHandshakeKeypair *kp) {
        keypair_wipe(&hs->keys.next);
        keypair_wipe(&hs->keys.previous);
        hs->keys.next = *kp;
        explicit_bzero(kp, sizeof *kp);
        hs->keys_version++;
}

/* An initiator's new session: current at once. A pending next key pair (the other end initiated
 * at the same time, and may already send under it) becomes previous, so that its datagrams still
 * open; else the old current does. */
static void install_initiator(MptHandshake *hs, MptHandshakeKeypair *kp) {
        keypair_wipe(&hs->keys.previous);
        if (!keypair_empty(&hs->keys.next)) {
                hs->keys.previous = hs->keys.next;
                explicit_bzero(&hs->keys.next, sizeof hs->keys.next);
                keypair_wipe(&hs->keys.current);
        } else
                hs->keys.previous = hs->keys.current;
        hs->keys.current = *kp;
        explicit_bzero(kp, sizeof *kp);
        hs->keys_version++;
}

/* The retry key of a handshake after its initiation: only its two ends know the chaining key. */
static int retry_key(const MptNoiseHandshake *noise, uint8_t ret[KEY]) {
        uint8_t unused[KEY];
        int r;

        r = mpt_noise_hkdf(noise->ck, MPT_HANDSHAKE_LABEL_RETRY, STRLEN(MPT_HANDSHAKE_LABEL_RETRY), unused, ret, NULL);
        explicit_bzero(unused, sizeof unused);
        return r;
}

/* challenge = MAC(K, initiator's static key || instance || record). */
static int make_challenge(MptHandshake *hs, const uint8_t rs[KEY], uint64_t instance, uint8_t ret[MAC]) {
        uint8_t m[KEY + 8 + 1 + 8 + 8];

        memcpy(m, rs, KEY);
        wr64be(m + KEY, instance);
        m[KEY + 8] = hs->have_record;
        wr64be(m + KEY + 9, hs->record_instance);
        wr64be(m + KEY + 17, hs->record_counter);
        return mpt_noise_mac(ret, hs->challenge_key, KEY, m, sizeof m);
}

/* ---- Initiations ---- */

static int create_initiation(MptHandshake *hs, usec_t now, unsigned path_id, const uint8_t echo[MAC],
                             uint8_t ret[MPT_HANDSHAKE_INITIATION_SIZE]) {
        MptNoiseHandshake noise = {};
        uint8_t payload[MPT_HANDSHAKE_FRESHNESS_SIZE] = {}, msg[MPT_HANDSHAKE_INITIATION_SIZE] = {};
        uint64_t local_id;
        uint8_t jitter[4];
        usec_t started;
        int r;

        assert(now > 0 && path_id < MPT_PATHS_MAX);
        if (hs->counter == UINT64_MAX)
                return -EOVERFLOW;
        r = mpt_noise_ik_start(&noise, MPT_HANDSHAKE_PROLOGUE, STRLEN(MPT_HANDSHAKE_PROLOGUE), hs->peer_public_key);
        if (r >= 0)
                r = new_ephemeral(hs, &noise.e);
        if (r >= 0)
                r = new_session_id(hs, &local_id);
        if (r >= 0)
                r = get_random(hs, jitter, sizeof jitter);
        if (r < 0)
                goto fail;
        wr64be(payload, hs->instance);
        wr64be(payload + FRESHNESS_COUNTER, hs->counter + 1);
        if (echo)
                memcpy(payload + FRESHNESS_ECHO, echo, MAC);
        msg[0] = MPT_HANDSHAKE_INITIATION;
        wr64be(msg + SESSION_ID, local_id);
        r = mpt_noise_ik_write_initiation(&noise, &hs->s, payload, sizeof payload, msg + INITIATION_NOISE);
        if (r >= 0)
                r = mpt_noise_mac(msg + MPT_HANDSHAKE_INITIATION_MAC1, hs->peer_mac1_key, KEY, msg,
                                  MPT_HANDSHAKE_INITIATION_MAC1);
        if (r < 0)
                goto fail;

        hs->counter++;
        /* Another attempt of the series under way, or a new series. */
        started = hs->pending.active && !older_than(now, hs->pending.started, MPT_HANDSHAKE_REKEY_ATTEMPT_TIME) ?
                hs->pending.started : now;
        pending_wipe(hs);
        hs->pending.active = true;
        hs->pending.noise = noise; /* takes the ephemeral key pair */
        hs->pending.local_id = local_id;
        hs->pending.started = started;
        hs->pending.retry_at = now + MPT_HANDSHAKE_REKEY_TIMEOUT + rd32be(jitter) % (MPT_HANDSHAKE_REKEY_JITTER + 1);
        memcpy(hs->pending.msg, msg, sizeof msg);
        remember_mac1(hs, msg + MPT_HANDSHAKE_INITIATION_MAC1, local_id);
        hs->tx_since_rx = 0;
        explicit_bzero(payload, sizeof payload);
        return mpt_handshake_initiation_for_path(hs, now, path_id, ret);

fail:
        mpt_noise_handshake_wipe(&noise);
        explicit_bzero(payload, sizeof payload);
        return r;
}

int mpt_handshake_create_initiation(MptHandshake *hs, usec_t now, unsigned path_id,
                                    uint8_t ret[MPT_HANDSHAKE_INITIATION_SIZE]) {
        return create_initiation(hs, now, path_id, NULL, ret);
}

int mpt_handshake_initiation_for_path(MptHandshake *hs, usec_t now, unsigned path_id,
                                      uint8_t ret[MPT_HANDSHAKE_INITIATION_SIZE]) {
        assert(path_id < MPT_PATHS_MAX);
        if (!hs->pending.active)
                return -ENOENT;
        memcpy(ret, hs->pending.msg, MPT_HANDSHAKE_INITIATION_SIZE);
        return stamp_mac2(hs, now, path_id, ret, MPT_HANDSHAKE_INITIATION_MAC2);
}

int mpt_handshake_consume_initiation(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, bool under_load,
                                     const uint8_t *msg, size_t len, uint8_t reply[MPT_HANDSHAKE_REPLY_MAX],
                                     size_t *ret_reply_len, MptHandshakeReply *ret_reply) {
        MptNoiseHandshake noise = {};
        MptHandshakeKeypair kp = {};
        uint8_t payload[MPT_HANDSHAKE_FRESHNESS_SIZE], challenge[MAC];
        uint64_t sender, instance, counter, local_id;
        int r, reason;

        assert(now > 0);
        assert(src->path_id < MPT_PATHS_MAX && src->addr_len >= 1 && src->addr_len <= sizeof src->addr);
        *ret_reply_len = 0;
        *ret_reply = MPT_HANDSHAKE_REPLY_NONE;
        if (!header_ok(msg, len, MPT_HANDSHAKE_INITIATION, MPT_HANDSHAKE_INITIATION_SIZE))
                return MPT_HANDSHAKE_DROP_MALFORMED;
        sender = rd64be(msg + SESSION_ID);
        if (sender == 0)
                return MPT_HANDSHAKE_DROP_MALFORMED;
        r = mac_check(hs->mac1_key, KEY, msg, MPT_HANDSHAKE_INITIATION_MAC1);
        if (r <= 0)
                return r < 0 ? MPT_HANDSHAKE_DROP_CRYPTO_ERROR : MPT_HANDSHAKE_DROP_MAC1;
        if (under_load) {
                r = mac2_check(hs, now, src, msg, MPT_HANDSHAKE_INITIATION_MAC2);
                if (r < 0)
                        return MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
                if (r == 0)
                        return cookie_reply(hs, now, src, msg, MPT_HANDSHAKE_INITIATION_MAC1, sender, reply,
                                            ret_reply_len, ret_reply);
        }

        r = mpt_noise_ik_start(&noise, MPT_HANDSHAKE_PROLOGUE, STRLEN(MPT_HANDSHAKE_PROLOGUE), hs->s.public_key);
        if (r >= 0)
                r = mpt_noise_ik_read_initiation(&noise, &hs->s, hs->peer_public_key, msg + INITIATION_NOISE,
                                                 sizeof payload, payload);
        if (r < 0) {
                reason = noise_drop(r);
                goto finish;
        }

        /* Authentic: made by the holder of the other end's static key, at some time. Fresh? */
        instance = rd64be(payload);
        counter = rd64be(payload + FRESHNESS_COUNTER);
        if (hs->have_record && instance == hs->record_instance) {
                if (counter <= hs->record_counter) {
                        reason = MPT_HANDSHAKE_DROP_REPLAYED;
                        goto finish;
                }
        } else if (hs->have_record || have_keys(hs)) {
                r = make_challenge(hs, noise.rs, instance, challenge);
                if (r < 0) {
                        reason = MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
                        goto finish;
                }
                if (CRYPTO_memcmp(challenge, payload + FRESHNESS_ECHO, MAC) != 0) {
                        uint8_t key[KEY];

                        memset(reply, 0, MPT_HANDSHAKE_RETRY_SIZE);
                        reply[0] = MPT_HANDSHAKE_RETRY;
                        wr64be(reply + SESSION_ID, sender);
                        r = retry_key(&noise, key);
                        if (r >= 0)
                                r = mpt_noise_aead_seal(key, 0, noise.h, MPT_NOISE_HASH_SIZE, challenge, MAC,
                                                        reply + RETRY_SEALED);
                        explicit_bzero(key, sizeof key);
                        if (r < 0) {
                                reason = MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
                                goto finish;
                        }
                        *ret_reply_len = MPT_HANDSHAKE_RETRY_SIZE;
                        *ret_reply = MPT_HANDSHAKE_REPLY_RETRY;
                        reason = -1;
                        goto finish;
                }
        }
        /* else: no record and no keys, nothing a replay could reset. */
        if (hs->last_accepted != 0 && !older_than(now, hs->last_accepted, MPT_HANDSHAKE_FLOOD_INTERVAL)) {
                reason = MPT_HANDSHAKE_DROP_FLOOD;
                goto finish;
        }

        /* Accepted: the response, and the session as next key pair. */
        memset(reply, 0, MPT_HANDSHAKE_RESPONSE_SIZE);
        reply[0] = MPT_HANDSHAKE_RESPONSE;
        r = new_ephemeral(hs, &noise.e);
        if (r >= 0)
                r = new_session_id(hs, &local_id);
        if (r >= 0) {
                wr64be(reply + SESSION_ID, local_id);
                wr64be(reply + RESPONSE_RECEIVER_ID, sender);
                r = mpt_noise_ik_write_response(&noise, hs->psk, NULL, 0, reply + RESPONSE_NOISE);
        }
        if (r >= 0)
                r = mpt_noise_mac(reply + MPT_HANDSHAKE_RESPONSE_MAC1, hs->peer_mac1_key, KEY, reply,
                                  MPT_HANDSHAKE_RESPONSE_MAC1);
        if (r >= 0)
                r = stamp_mac2(hs, now, src->path_id, reply, MPT_HANDSHAKE_RESPONSE_MAC2);
        if (r >= 0)
                r = make_keypair(hs, &noise, false, local_id, sender, now, &kp);
        if (r < 0) {
                explicit_bzero(reply, MPT_HANDSHAKE_RESPONSE_SIZE);
                reason = MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
                goto finish;
        }
        hs->have_record = true;
        hs->record_instance = instance;
        hs->record_counter = counter;
        hs->last_accepted = now;
        install_responder(hs, &kp);
        remember_mac1(hs, reply + MPT_HANDSHAKE_RESPONSE_MAC1, local_id);
        hs->last_session = now;
        hs->tx_since_rx = 0;
        *ret_reply_len = MPT_HANDSHAKE_RESPONSE_SIZE;
        *ret_reply = MPT_HANDSHAKE_REPLY_RESPONSE;
        reason = -1;

finish:
        mpt_noise_handshake_wipe(&noise);
        explicit_bzero(payload, sizeof payload);
        explicit_bzero(challenge, sizeof challenge);
        return reason;
}

int mpt_handshake_consume_response(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, bool under_load,
                                   const uint8_t *msg, size_t len, uint8_t reply[MPT_HANDSHAKE_REPLY_MAX],
                                   size_t *ret_reply_len, MptHandshakeReply *ret_reply) {
        MptNoiseHandshake noise;
        MptHandshakeKeypair kp = {};
        uint64_t sender, receiver;
        uint8_t empty[1];
        int r;

        assert(now > 0);
        assert(src->path_id < MPT_PATHS_MAX && src->addr_len >= 1 && src->addr_len <= sizeof src->addr);
        *ret_reply_len = 0;
        *ret_reply = MPT_HANDSHAKE_REPLY_NONE;
        if (!header_ok(msg, len, MPT_HANDSHAKE_RESPONSE, MPT_HANDSHAKE_RESPONSE_SIZE))
                return MPT_HANDSHAKE_DROP_MALFORMED;
        sender = rd64be(msg + SESSION_ID);
        receiver = rd64be(msg + RESPONSE_RECEIVER_ID);
        if (sender == 0 || receiver == 0)
                return MPT_HANDSHAKE_DROP_MALFORMED;
        r = mac_check(hs->mac1_key, KEY, msg, MPT_HANDSHAKE_RESPONSE_MAC1);
        if (r <= 0)
                return r < 0 ? MPT_HANDSHAKE_DROP_CRYPTO_ERROR : MPT_HANDSHAKE_DROP_MAC1;
        if (under_load) {
                r = mac2_check(hs, now, src, msg, MPT_HANDSHAKE_RESPONSE_MAC2);
                if (r < 0)
                        return MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
                if (r == 0)
                        return cookie_reply(hs, now, src, msg, MPT_HANDSHAKE_RESPONSE_MAC1, sender, reply,
                                            ret_reply_len, ret_reply);
        }
        if (!hs->pending.active || receiver != hs->pending.local_id)
                return MPT_HANDSHAKE_DROP_UNEXPECTED;

        /* On a copy (sharing the ephemeral key object): a forged response must leave the
         * handshake under way as it was, for the real one. */
        noise = hs->pending.noise;
        r = mpt_noise_ik_read_response(&noise, &hs->s, hs->psk, msg + RESPONSE_NOISE, 0, empty);
        if (r >= 0)
                r = make_keypair(hs, &noise, true, hs->pending.local_id, sender, now, &kp);
        explicit_bzero(&noise, sizeof noise);
        if (r < 0)
                return noise_drop(r);

        pending_wipe(hs);
        install_initiator(hs, &kp);
        hs->last_session = now;
        hs->tx_since_rx = 0;
        hs->confirm = true;
        *ret_reply = MPT_HANDSHAKE_REPLY_CONFIRM;
        return -1;
}

int mpt_handshake_consume_cookie(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, const uint8_t *msg,
                                 size_t len) {
        uint8_t cookie[MAC];
        int r;

        assert(now > 0 && src->path_id < MPT_PATHS_MAX);
        if (!header_ok(msg, len, MPT_HANDSHAKE_COOKIE_REPLY, MPT_HANDSHAKE_COOKIE_REPLY_SIZE))
                return MPT_HANDSHAKE_DROP_MALFORMED;
        if (!hs->have_last_mac1 || rd64be(msg + SESSION_ID) != hs->last_mac1_id)
                return MPT_HANDSHAKE_DROP_UNEXPECTED;
        r = mpt_noise_xaead_open(hs->peer_cookie_key, msg + COOKIE_NONCE, hs->last_mac1, MAC, msg + COOKIE_SEALED,
                                 MAC + MPT_NOISE_TAG_SIZE, cookie);
        if (r < 0)
                return r == -EBADMSG ? MPT_HANDSHAKE_DROP_AUTH_FAILED : MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
        memcpy(hs->cookies[src->path_id].value, cookie, MAC);
        hs->cookies[src->path_id].received = now;
        hs->cookies[src->path_id].valid = true;
        explicit_bzero(cookie, sizeof cookie);
        return -1;
}

int mpt_handshake_consume_retry(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, const uint8_t *msg,
                                size_t len, uint8_t reply[MPT_HANDSHAKE_REPLY_MAX], size_t *ret_reply_len,
                                MptHandshakeReply *ret_reply) {
        uint8_t key[KEY], challenge[MAC];
        int r;

        assert(now > 0 && src->path_id < MPT_PATHS_MAX);
        *ret_reply_len = 0;
        *ret_reply = MPT_HANDSHAKE_REPLY_NONE;
        if (!header_ok(msg, len, MPT_HANDSHAKE_RETRY, MPT_HANDSHAKE_RETRY_SIZE))
                return MPT_HANDSHAKE_DROP_MALFORMED;
        if (!hs->pending.active || rd64be(msg + SESSION_ID) != hs->pending.local_id)
                return MPT_HANDSHAKE_DROP_UNEXPECTED;
        r = retry_key(&hs->pending.noise, key);
        if (r >= 0)
                r = mpt_noise_aead_open(key, 0, hs->pending.noise.h, MPT_NOISE_HASH_SIZE, msg + RETRY_SEALED,
                                        MAC + MPT_NOISE_TAG_SIZE, challenge);
        explicit_bzero(key, sizeof key);
        if (r < 0)
                return r == -EBADMSG ? MPT_HANDSHAKE_DROP_AUTH_FAILED : MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
        /* The next attempt of the same series, at once, answering the challenge. */
        r = create_initiation(hs, now, src->path_id, challenge, reply);
        explicit_bzero(challenge, sizeof challenge);
        if (r < 0)
                return MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
        *ret_reply_len = MPT_HANDSHAKE_INITIATION_SIZE;
        *ret_reply = MPT_HANDSHAKE_REPLY_INITIATION;
        return -1;
}

int mpt_handshake_receive(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, bool under_load,
                          const uint8_t *msg, size_t len, uint8_t reply[MPT_HANDSHAKE_REPLY_MAX],
                          size_t *ret_reply_len, MptHandshakeReply *ret_reply) {
        *ret_reply_len = 0;
        *ret_reply = MPT_HANDSHAKE_REPLY_NONE;
        if (len == 0)
                return MPT_HANDSHAKE_DROP_MALFORMED;
        switch (msg[0]) {
        case MPT_HANDSHAKE_INITIATION:
                return mpt_handshake_consume_initiation(hs, now, src, under_load, msg, len, reply, ret_reply_len,
                                                        ret_reply);
        case MPT_HANDSHAKE_RESPONSE:
                return mpt_handshake_consume_response(hs, now, src, under_load, msg, len, reply, ret_reply_len,
                                                      ret_reply);
        case MPT_HANDSHAKE_COOKIE_REPLY:
                return mpt_handshake_consume_cookie(hs, now, src, msg, len);
        case MPT_HANDSHAKE_RETRY:
                return mpt_handshake_consume_retry(hs, now, src, msg, len, reply, ret_reply_len, ret_reply);
        default:
                return MPT_HANDSHAKE_DROP_MALFORMED;
        }
}

/* ---- Key pairs ---- */

const MptHandshakeKeys *mpt_handshake_keys(const MptHandshake *hs) {
        return &hs->keys;
}

uint64_t mpt_handshake_keys_version(const MptHandshake *hs) {
        return hs->keys_version;
}

int mpt_handshake_keys_rx(const MptHandshakeKeys *k, uint64_t epoch, usec_t now, const MptHandshakeKeypair **ret) {
        const MptHandshakeKeypair *slots[] = { &k->current, &k->previous, &k->next };
        uint32_t generation = (uint32_t) epoch;

        if (epoch != 0)
                for (size_t i = 0; i < ELEMENTSOF(slots); i++)
                        if (slots[i]->recv.epoch == epoch) {
                                if (older_than(now, slots[i]->created, MPT_HANDSHAKE_REJECT_AFTER_TIME))
                                        return MPT_HANDSHAKE_DROP_EXPIRED;
                                *ret = slots[i];
                                return -1;
                        }
        if (generation != 0 && generation <= k->generation)
                return MPT_HANDSHAKE_DROP_STALE_SESSION;
        return MPT_HANDSHAKE_DROP_UNKNOWN_SESSION;
}

const MptHandshakeKeypair *mpt_handshake_keys_tx(const MptHandshakeKeys *k, usec_t now, uint64_t sent) {
        if (keypair_empty(&k->current) || older_than(now, k->current.created, MPT_HANDSHAKE_REJECT_AFTER_TIME) ||
            sent >= MPT_HANDSHAKE_REJECT_AFTER_MESSAGES)
                return NULL;
        return &k->current;
}

void mpt_handshake_received(MptHandshake *hs, usec_t now, uint64_t epoch) {
        MptHandshakeKeys *k = &hs->keys;

        if (epoch == 0)
                return;
        if (k->next.recv.epoch == epoch) {
                /* The initiator sent under it: it has the keys, so they are good to send with. */
                keypair_wipe(&k->previous);
                k->previous = k->current;
                k->current = k->next;
                explicit_bzero(&k->next, sizeof k->next);
                hs->keys_version++;
        } else if (k->current.recv.epoch != epoch && k->previous.recv.epoch != epoch)
                return;
        hs->tx_since_rx = 0;
        if (hs->rx_since_tx == 0)
                hs->rx_since_tx = now;
}

void mpt_handshake_sent(MptHandshake *hs, usec_t now) {
        hs->rx_since_tx = 0;
        hs->confirm = false;
        if (hs->tx_since_rx == 0)
                hs->tx_since_rx = now;
}

/* ---- Timers ---- */

static bool pending_live(const MptHandshake *hs, usec_t now) {
        return hs->pending.active && !older_than(now, hs->pending.started, MPT_HANDSHAKE_REKEY_ATTEMPT_TIME);
}

MptHandshakeWant mpt_handshake_want_initiation(const MptHandshake *hs, usec_t now, uint64_t sent) {
        const MptHandshakeKeypair *tx;

        if (pending_live(hs, now))
                return now >= hs->pending.retry_at ? MPT_HANDSHAKE_WANT_RETRY : MPT_HANDSHAKE_WANT_NOTHING;
        tx = mpt_handshake_keys_tx(&hs->keys, now, sent);
        if (!tx) {
                /* A responder waits a moment for the initiator to confirm the session it just made,
                 * rather than cross it with a handshake of its own. */
                if (!keypair_empty(&hs->keys.next) &&
                    !older_than(now, hs->keys.next.created, MPT_HANDSHAKE_REKEY_TIMEOUT))
                        return MPT_HANDSHAKE_WANT_NOTHING;
                return MPT_HANDSHAKE_WANT_FIRST;
        }
        if (sent >= MPT_HANDSHAKE_REKEY_AFTER_MESSAGES)
                return MPT_HANDSHAKE_WANT_REKEY_MESSAGES;
        /* Only the initiator rekeys on time, so that the two ends do not both start at once. */
        if (tx->initiator && older_than(now, tx->created, MPT_HANDSHAKE_REKEY_AFTER_TIME))
                return MPT_HANDSHAKE_WANT_REKEY_TIME;
        if (hs->tx_since_rx != 0 &&
            older_than(now, hs->tx_since_rx, MPT_HANDSHAKE_KEEPALIVE_TIMEOUT + MPT_HANDSHAKE_REKEY_TIMEOUT))
                return MPT_HANDSHAKE_WANT_PEER_SILENT;
        return MPT_HANDSHAKE_WANT_NOTHING;
}

bool mpt_handshake_want_keepalive(const MptHandshake *hs, usec_t now) {
        return hs->confirm ||
                (hs->rx_since_tx != 0 && older_than(now, hs->rx_since_tx, MPT_HANDSHAKE_KEEPALIVE_TIMEOUT));
}

size_t mpt_handshake_expire(MptHandshake *hs, usec_t now, uint64_t ret_epochs[3]) {
        MptHandshakeKeypair *slots[] = { &hs->keys.current, &hs->keys.previous, &hs->keys.next };
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(slots); i++)
                if (!keypair_empty(slots[i]) && older_than(now, slots[i]->created, MPT_HANDSHAKE_REJECT_AFTER_TIME)) {
                        ret_epochs[n++] = slots[i]->recv.epoch;
                        keypair_wipe(slots[i]);
                        hs->keys_version++;
                }
        if (hs->pending.active && !pending_live(hs, now))
                pending_wipe(hs); /* given up */
        if (hs->last_session != 0 && older_than(now, hs->last_session, MPT_HANDSHAKE_WIPE_AFTER)) {
                pending_wipe(hs);
                explicit_bzero(hs->cookies, sizeof hs->cookies);
                explicit_bzero(hs->last_mac1, sizeof hs->last_mac1);
                hs->have_last_mac1 = false;
                explicit_bzero(hs->cookie_secret, sizeof hs->cookie_secret);
                hs->have_cookie_secret = false;
                hs->last_session = 0;
        }
        return n;
}

usec_t mpt_handshake_next_event(const MptHandshake *hs, usec_t now) {
        const MptHandshakeKeypair *slots[] = { &hs->keys.current, &hs->keys.previous, &hs->keys.next };
        usec_t at[16];
        size_t n = 0;
        usec_t t = USEC_INFINITY;

        if (hs->pending.active) {
                at[n++] = hs->pending.retry_at;
                at[n++] = hs->pending.started + MPT_HANDSHAKE_REKEY_ATTEMPT_TIME;
        }
        for (size_t i = 0; i < ELEMENTSOF(slots); i++)
                if (!keypair_empty(slots[i]))
                        at[n++] = slots[i]->created + MPT_HANDSHAKE_REJECT_AFTER_TIME;
        if (!keypair_empty(&hs->keys.current) && hs->keys.current.initiator)
                at[n++] = hs->keys.current.created + MPT_HANDSHAKE_REKEY_AFTER_TIME;
        if (!keypair_empty(&hs->keys.next))
                at[n++] = hs->keys.next.created + MPT_HANDSHAKE_REKEY_TIMEOUT;
        if (hs->tx_since_rx != 0)
                at[n++] = hs->tx_since_rx + MPT_HANDSHAKE_KEEPALIVE_TIMEOUT + MPT_HANDSHAKE_REKEY_TIMEOUT;
        if (hs->rx_since_tx != 0)
                at[n++] = hs->rx_since_tx + MPT_HANDSHAKE_KEEPALIVE_TIMEOUT;
        if (hs->last_session != 0)
                at[n++] = hs->last_session + MPT_HANDSHAKE_WIPE_AFTER;
        assert(n <= ELEMENTSOF(at));
        /* Only what lies ahead: what fell due before was acted on then. */
        for (size_t i = 0; i < n; i++)
                if (at[i] > now && at[i] < t)
                        t = at[i];
        return t;
}

/* ---- For tests ---- */

bool mpt_handshake_pending(const MptHandshake *hs, uint64_t *ret_id) {
        if (ret_id)
                *ret_id = hs->pending.active ? hs->pending.local_id : 0;
        return hs->pending.active;
}

const uint8_t *mpt_handshake_public_key(const MptHandshake *hs) {
        return hs->s.public_key;
}

int mpt_handshake_screen(const uint8_t mac1_key[KEY], const uint8_t *msg, size_t len) {
        size_t size, mac1 = 0;
        int r;

        if (len < 1)
                return MPT_HANDSHAKE_DROP_MALFORMED;
        switch (msg[0]) {
        case MPT_HANDSHAKE_INITIATION:
                size = MPT_HANDSHAKE_INITIATION_SIZE;
                mac1 = MPT_HANDSHAKE_INITIATION_MAC1;
                break;
        case MPT_HANDSHAKE_RESPONSE:
                size = MPT_HANDSHAKE_RESPONSE_SIZE;
                mac1 = MPT_HANDSHAKE_RESPONSE_MAC1;
                break;
        case MPT_HANDSHAKE_COOKIE_REPLY:
                size = MPT_HANDSHAKE_COOKIE_REPLY_SIZE;
                break;
        case MPT_HANDSHAKE_RETRY:
                size = MPT_HANDSHAKE_RETRY_SIZE;
                break;
        default:
                return MPT_HANDSHAKE_DROP_MALFORMED;
        }
        if (!header_ok(msg, len, msg[0], size))
                return MPT_HANDSHAKE_DROP_MALFORMED;
        if (mac1 == 0)
                return -1;
        r = mac_check(mac1_key, KEY, msg, mac1);
        if (r < 0)
                return MPT_HANDSHAKE_DROP_CRYPTO_ERROR;
        return r > 0 ? -1 : MPT_HANDSHAKE_DROP_MAC1;
}

int mpt_handshake_initiator_key(const MptNoiseKeypair *s, const uint8_t *msg, size_t len, uint8_t ret[KEY]) {
        MptNoiseHandshake noise = {};
        uint8_t mac1_key[KEY];
        int r, reason;

        if (!header_ok(msg, len, MPT_HANDSHAKE_INITIATION, MPT_HANDSHAKE_INITIATION_SIZE) ||
            rd64be(msg + SESSION_ID) == 0)
                return MPT_HANDSHAKE_DROP_MALFORMED;
        r = mpt_noise_hash(mac1_key, MPT_HANDSHAKE_LABEL_MAC1, STRLEN(MPT_HANDSHAKE_LABEL_MAC1), s->public_key, KEY);
        if (r >= 0)
                r = mac_check(mac1_key, KEY, msg, MPT_HANDSHAKE_INITIATION_MAC1);
        if (r <= 0)
                return r < 0 ? MPT_HANDSHAKE_DROP_CRYPTO_ERROR : MPT_HANDSHAKE_DROP_MAC1;

        r = mpt_noise_ik_start(&noise, MPT_HANDSHAKE_PROLOGUE, STRLEN(MPT_HANDSHAKE_PROLOGUE), s->public_key);
        if (r >= 0)
                r = mpt_noise_ik_read_initiator_static(&noise, s, msg + INITIATION_NOISE);
        if (r >= 0) {
                memcpy(ret, noise.rs, KEY);
                reason = -1;
        } else
                reason = noise_drop(r);
        mpt_noise_handshake_wipe(&noise);
        return reason;
}

void mpt_handshake_mac1_key(const MptHandshake *hs, uint8_t ret[KEY]) {
        memcpy(ret, hs->mac1_key, KEY);
}
