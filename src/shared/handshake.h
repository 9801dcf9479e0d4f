/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* mpt's handshake for secure mode (issue 21): one Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s handshake
 * (noise.h) per session, modelled on WireGuard's protocol (its whitepaper, section 5), with a
 * freshness scheme that needs no wall clock in place of WireGuard's TAI64N timestamp. A pure
 * module: no sockets, no timers, no threads, no logging; time is a monotonic clock the caller
 * passes in (usec_t, CLOCK_BOOTTIME recommended, so that keys age during suspend as WireGuard's
 * do; never 0), randomness comes from libcrypto unless a test installs its own.
 *
 * ---- Keys ----
 * Each end has a static X25519 key pair and knows the other end's static public key; both may
 * share a 32-byte pre-shared key, mixed in after the second message (psk2; all zeros when there is
 * none, as WireGuard does). A session gives one transport key per direction (Noise's Split()).
 *
 * ---- Messages ----
 * All integers big endian. The first byte is the message type (secure.h: 0xE3 is the transport
 * message, 0xE4..0xE7 are these). Reserved bytes are sent as 0 and a message with any other value
 * is refused (a new use comes with a new type). Session ids are 8 bytes, never 0.
 *
 *   Initiation, 0xE4, 172 bytes           Response, 0xE5, 100 bytes
 *     0   1  type                           0   1  type
 *     1   3  reserved                       1   3  reserved
 *     4   8  sender's session id            4   8  sender's (responder's) session id
 *    12  32  ephemeral public key          12   8  receiver's (initiator's) session id
 *    44  48  static public key, sealed     20  32  ephemeral public key
 *    92  48  freshness, sealed (below)     52  16  empty payload, sealed (a tag only)
 *   140  16  mac1                          68  16  mac1
 *   156  16  mac2                          84  16  mac2
 *
 *   Cookie reply, 0xE6, 68 bytes           Retry, 0xE7, 44 bytes
 *     0   1  type                           0   1  type
 *     1   3  reserved                       1   3  reserved
 *     4   8  receiver's session id          4   8  receiver's (initiator's) session id
 *    12  24  nonce                         12  32  challenge (16), sealed
 *    36  32  cookie (16), sealed
 *
 * The Noise messages are those of the pattern: "-> e, es, s, ss" with a 32-byte payload, "<- e,
 * ee, se, psk" with an empty one; the prologue is MPT_HANDSHAKE_PROLOGUE, which keeps them apart
 * from WireGuard's and from any other protocol's. The session ids, type and reserved bytes are not
 * part of the Noise messages (as in WireGuard): changing them only misdirects a message, which then
 * fails to decrypt or finds no handshake under way.
 *
 * ---- mac1, mac2 and cookies (as WireGuard) ----
 * mac1 = MAC(HASH(LABEL_MAC1 || receiver's static public key), the message up to mac1): a receiver
 * drops what does not carry it (handshake-mac1) before any DH, so only who knows its public key
 * can make it work. mac2 = MAC(cookie, the message up to mac2), or zeros without a cookie. A
 * receiver under load (the caller says when) processes an initiation or response only with a valid
 * mac2, and otherwise answers with a cookie reply: cookie = MAC(secret, the source address and
 * port), the secret random and replaced every 2 minutes; sealed with XChaCha20-Poly1305 under
 * HASH(LABEL_COOKIE || sender's static public key), a random nonce, and the mac1 of the message it
 * answers as associated data, so that only who sent that message can use it. The cookie proves
 * that the sender can receive at its source address; it is kept per path (the address differs from
 * path to path) for 2 minutes less 5 seconds.
 *
 * ---- Freshness instead of a timestamp ----
 * WireGuard's initiation carries a TAI64N timestamp, and a responder refuses one that is not newer
 * than the last it accepted from that peer, so that a replayed initiation cannot make it start a
 * new session and drop the keys in use. That needs a wall clock that never goes back, also across
 * restarts. Ours carries, sealed (only the holder of the initiator's static key can make it):
 *     0   8  instance: random, nonzero, chosen when the process starts (mpt_handshake_new())
 *     8   8  counter: 1, 2, 3, ... per initiation this instance makes, never repeated
 *    16  16  echo: the challenge of a retry this initiation answers, or zeros
 * The responder remembers the instance and counter of the last initiation it accepted (the record;
 * only in memory, kept for the life of the process, not secret). It accepts an authentic initiation
 * when:
 *   (a) its instance is the recorded one and its counter is higher: the usual rekey, 1 round trip;
 *   (b) its echo is the responder's current challenge for it:
 *         challenge = MAC(K, initiator's static key || instance || record)
 *       with K random per responder process; the record is in it, so a challenge is good only until
 *       the next initiation is accepted, and a responder restart makes every old one useless;
 *   (c) the responder has no record and no session keys at all (it has completed no handshake with
 *       the other end since it started; one of its own under way does not count): there is nothing
 *       a replay could reset, 1 round trip.
 * Otherwise an initiation with the recorded instance and a counter not higher is dropped
 * (handshake-replayed), and any other is answered with a retry: the challenge, sealed with
 * ChaCha20-Poly1305 under a key derived from the handshake's chaining key (HKDF(ck, LABEL_RETRY),
 * its second output), nonce 0, the handshake hash h as associated data; only the initiator that made
 * the initiation (its ephemeral key) can open it. The initiator then at once sends a new initiation
 * (new ephemeral key, next counter) that echoes the challenge. So after a restart of the initiator
 * while the responder remembers it, the first handshake takes 2 round trips; every other one takes 1.
 * Why a replay gains nothing: a replayed initiation carries an instance and counter the responder
 * accepted (or refused) before; with the recorded instance it is dropped; with an older instance it
 * can only draw a retry, and answering that needs the initiator's static key. In case (c) it may be
 * accepted: the responder then makes a response and keys nobody can use (they need the initiator's
 * ephemeral private key), which it never sends with (a responder uses new keys only once the
 * initiator's first datagram under them arrived), and the record it sets only costs the real
 * initiator one retry. Responses, retries and cookie replies are tied to the sender's handshake
 * under way (its session id, ephemeral key and mac1) and are refused once it is over. Transport
 * datagrams need keys that only the two ends have. Nothing here reads the wall clock; a clock that
 * jumps changes nothing, a restart of either end costs at most one extra round trip.
 *
 * ---- Sessions on the wire ----
 * A session's keys seal transport messages in the existing format (secure.h, 0xE3) unchanged:
 *   - the header's 8-byte epoch field carries the RECEIVER's session id: the initiator's id (from
 *     the initiation) on datagrams to the initiator, the responder's id (from the response) on
 *     datagrams to the responder, so that a receiver finds the keys by the value it chose itself;
 *   - a session id is (random 32 bits, never 0) << 32 | generation, the generation counting from 1
 *     per process the ids this end has handed out (initiations and responses), so ids never repeat
 *     within a process and hardly ever across processes, and a receiver tells an id it dropped
 *     (stale-session: generation not newer than its newest) from one it never gave (unknown-session);
 *   - the cipher keys are derived as mpt_secure_derive() does from the pre-shared key, with the
 *     session's transport key of that direction in its place and the receiver's session id as
 *     epoch: key = BLAKE2b-256(key: transport key, LABEL || session id), one per cipher; so the
 *     nonces (path id, lane, counter) restart with each session and never repeat under a key, and
 *     flags A and G work as before.
 * One session serves the whole tunnel, every path: the handshake may run over any usable path, and
 * its replies go back over the path (and to the address) the message came from. An initiation may
 * be sent over several paths at once (mpt_handshake_initiation_for_path() stamps mac2 for each);
 * the responder answers the first copy and drops the others as handshake-replayed.
 *
 * ---- Key pairs and timers (WireGuard's, section 6 of its whitepaper) ----
 * Per tunnel: current (what this end sends with), previous (the one before, kept so that datagrams
 * still in flight on slower paths open) and next (a responder's new session, used to receive only,
 * until the initiator's first datagram under it arrives: then it becomes current). An initiator's
 * new session becomes current at once (the old current becomes previous) and it should send a
 * datagram at once to confirm it. A key pair is refused after REJECT_AFTER_TIME (180 s) from its
 * handshake or REJECT_AFTER_MESSAGES; the end that initiated a session starts a new handshake after
 * REKEY_AFTER_TIME (120 s), either end after REKEY_AFTER_MESSAGES (2^60); an unanswered initiation
 * is sent again (new ephemeral, next counter) after REKEY_TIMEOUT (5 s) plus up to 1/3 s of random
 * jitter, for up to REKEY_ATTEMPT_TIME (90 s), then given up (a new series starts as soon as there
 * is something to send, in mpt always: keepalives); an end that has sent for KEEPALIVE_TIMEOUT +
 * REKEY_TIMEOUT (15 s) without receiving anything starts a new handshake; an end that has received
 * but not sent for KEEPALIVE_TIMEOUT (10 s) sends a keepalive (mpt's path keepalives do that
 * anyway). Key pairs are wiped when they are dropped or expire (mpt_handshake_expire(): the keys of
 * a silent tunnel are gone 3 minutes after its last handshake), and the rest of the session state
 * (cookies, the last mac1, the cookie secret) after 3 x REJECT_AFTER_TIME without a handshake. An
 * initiation from the other end less than 1/50 s after the last accepted one is dropped
 * (handshake-flood), as WireGuard does.
 *
 * ---- Threads ----
 * An MptHandshake belongs to one thread (in mptd the main loop: handshake messages are rare, and
 * the timers live there). Workers get copies of its key pairs (MptHandshakeKeys: plain bytes, a copy
 * keeps the keys' ids and with them the threads' cipher contexts; secure.h), republished whenever
 * mpt_handshake_keys_version() changes, and use the pure mpt_handshake_keys_rx()/_tx() on their
 * copy. They report back, through the control queue, the session a datagram authenticated under
 * (mpt_handshake_received(): that is how a responder learns that it may send with a new session)
 * and that they sent (mpt_handshake_sent(), at least once a second while sending).
 *
 * ---- What integration does (src/mptd/session.c, receive.c; here as the contract) ----
 * Profile keys (in profile-keys.c, so every front door carries them): PrivateKey= and
 * PrivateKeyFile= (this end's, base64 as `mptctl genkey` prints it; a file others can read refused
 * as KeyFile= is), PublicKey= (the other end's, `mptctl pubkey`), PresharedKey= and
 * PresharedKeyFile= (optional, `mptctl genpsk`). Key= and KeyFile= stay version 2's pre-shared key
 * without handshake, the simpler option (they exclude the handshake's keys). mptd:
 *   - calls mpt_handshake_new() at start (one MptHandshake per tunnel) and mpt_noise_init() before
 *     any system call filter;
 *   - demultiplexes received datagrams on the first byte before mpt_secure_parse() (which refuses
 *     0xE4..0xE7 as bad-version): 0xE4..0xE7 go to the main thread (a bounded queue: when it is more
 *     than 1/8 full, pass under_load = true, as WireGuard does; rate-limit cookie replies per source
 *     address) and mpt_handshake_receive(), whose reply goes back to the same address over the same
 *     path; drop reasons are counted with the names of mpt_handshake_drop_to_string();
 *   - for transport datagrams replaces the epoch logic of mpt_secure_rx_check() and _rx_accept()
 *     (own-epoch, stale-epoch: "a newer epoch replaces the old one") by mpt_handshake_keys_rx(): one
 *     anti-replay state (MptSecureRx's windows) per key pair, created with the key pair and dropped
 *     with it; stale-epoch counts stale-session, and unknown-session and expired-session need names of
 *     their own (or map to stale-epoch); own-epoch goes away (a reflected datagram carries the other
 *     end's session id: unknown-session);
 *   - seals with mpt_handshake_keys_tx() and counts datagrams sent per key pair (the sum over paths
 *     is `sent`); with no key pair to send with, holds or drops data (no-session) and lets the
 *     timers start a handshake;
 *   - on its timer (armed at mpt_handshake_next_event()) calls mpt_handshake_expire() (and drops the
 *     epochs it returns from the workers' copies, wiping them), mpt_handshake_want_initiation() and,
 *     when it wants one, mpt_handshake_create_initiation() over the best path that is up (and
 *     mpt_handshake_initiation_for_path() for the others, if it sends copies), rotating paths on
 *     retries so that a dead path cannot hold the handshake up;
 *   - after a response (MPT_HANDSHAKE_REPLY_CONFIRM) sends a keepalive under the new session on
 *     every path that is up.
 * mptd(8) SECURE WIRE FORMAT then describes the handshake messages and the epoch as the receiver's
 * session id (instead of "Epoch" and "Keys" from the pre-shared key and the wall clock), DROP COUNTERS
 * the new reasons, and SECURITY should say: the ends authenticate each other by their static keys
 * (Noise IK: the initiator's static key travels encrypted, so an observer learns neither identity
 * from a handshake; a responder's static public key must be known to start one); each session's keys
 * come from fresh ephemeral keys, so recorded traffic stays secret when a static key or the
 * pre-shared key leaks later (forward secrecy, once the session's keys are wiped: at most 3 minutes
 * after its handshake); the pre-shared key adds a symmetric secret (protection if X25519 falls to a
 * quantum computer, as WireGuard's); keys change every 2 minutes; the responder does no DH for
 * anyone who does not know its public key (mac1) and, under load, for no source address that
 * cannot receive (cookies); replayed handshake messages are refused (as above) without any clock;
 * what a leaked static key allows (impersonating its owner, and, as always in IK, impersonating
 * others to its owner); and that `mptctl genkey` keys must be kept as private as Key= is today. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "noise.h"
#include "parse-util.h"
#include "profile.h"
#include "secure.h"

#define MPT_HANDSHAKE_INITIATION 0xE4u
#define MPT_HANDSHAKE_RESPONSE 0xE5u
#define MPT_HANDSHAKE_COOKIE_REPLY 0xE6u
#define MPT_HANDSHAKE_RETRY 0xE7u

#define MPT_HANDSHAKE_INITIATION_SIZE 172u
#define MPT_HANDSHAKE_RESPONSE_SIZE 100u
#define MPT_HANDSHAKE_COOKIE_REPLY_SIZE 68u
#define MPT_HANDSHAKE_RETRY_SIZE 44u
#define MPT_HANDSHAKE_REPLY_MAX MPT_HANDSHAKE_INITIATION_SIZE /* a retry is answered with an initiation */
#define MPT_HANDSHAKE_FRESHNESS_SIZE 32u                      /* the initiation's payload */
#define MPT_HANDSHAKE_INITIATION_MAC1 140u                    /* offsets of mac1 and mac2 */
#define MPT_HANDSHAKE_INITIATION_MAC2 156u
#define MPT_HANDSHAKE_RESPONSE_MAC1 68u
#define MPT_HANDSHAKE_RESPONSE_MAC2 84u

#define MPT_HANDSHAKE_PROLOGUE "mpt handshake v1"
#define MPT_HANDSHAKE_LABEL_MAC1 "mpt mac1"
#define MPT_HANDSHAKE_LABEL_COOKIE "mpt cookie"
#define MPT_HANDSHAKE_LABEL_RETRY "mpt retry"

#define MPT_HANDSHAKE_REKEY_AFTER_MESSAGES (UINT64_C(1) << 60)
#define MPT_HANDSHAKE_REJECT_AFTER_MESSAGES (UINT64_MAX - (UINT64_C(1) << 13)) /* 2^64 - 2^13 - 1 */
#define MPT_HANDSHAKE_REKEY_AFTER_TIME (120 * USEC_PER_SEC)
#define MPT_HANDSHAKE_REJECT_AFTER_TIME (180 * USEC_PER_SEC)
#define MPT_HANDSHAKE_REKEY_ATTEMPT_TIME (90 * USEC_PER_SEC)
#define MPT_HANDSHAKE_REKEY_TIMEOUT (5 * USEC_PER_SEC)
#define MPT_HANDSHAKE_REKEY_JITTER (333 * USEC_PER_MSEC) /* at most this much is added to REKEY_TIMEOUT */
#define MPT_HANDSHAKE_KEEPALIVE_TIMEOUT (10 * USEC_PER_SEC)
#define MPT_HANDSHAKE_COOKIE_SECRET_MAX_AGE (120 * USEC_PER_SEC)
#define MPT_HANDSHAKE_COOKIE_LATENCY (5 * USEC_PER_SEC) /* a cookie is used for MAX_AGE less this */
#define MPT_HANDSHAKE_WIPE_AFTER (3 * MPT_HANDSHAKE_REJECT_AFTER_TIME)
#define MPT_HANDSHAKE_FLOOD_INTERVAL (USEC_PER_SEC / 50) /* initiations accepted per peer: 50 a second */

/* Why a handshake message (or, for the last three, a transport datagram) was dropped. Integration
 * adds them to the drop counters (wire.h) under these names, or maps the transport ones onto
 * stale-epoch; see above. */
typedef enum MptHandshakeDrop {
        MPT_HANDSHAKE_DROP_MALFORMED,       /* wrong size for its type, reserved bytes set, session id 0, other type */
        MPT_HANDSHAKE_DROP_MAC1,            /* mac1 does not verify: not made for this end's public key */
        MPT_HANDSHAKE_DROP_AUTH_FAILED,     /* does not decrypt: another static or pre-shared key, forged or damaged */
        MPT_HANDSHAKE_DROP_UNKNOWN_PEER,    /* an initiation from a static key that is not the other end's */
        MPT_HANDSHAKE_DROP_BAD_KEY,         /* a public key of small order (X25519 gives all zeros) */
        MPT_HANDSHAKE_DROP_REPLAYED,        /* an initiation no newer than one accepted before */
        MPT_HANDSHAKE_DROP_FLOOD,           /* an initiation less than 1/50 s after the last accepted one */
        MPT_HANDSHAKE_DROP_UNEXPECTED,      /* a response, cookie reply or retry for no handshake under way */
        MPT_HANDSHAKE_DROP_CRYPTO_ERROR,    /* libcrypto failed (no memory), or session ids ran out */
        MPT_HANDSHAKE_DROP_UNKNOWN_SESSION, /* transport: the epoch names no session this end ever had */
        MPT_HANDSHAKE_DROP_STALE_SESSION,   /* transport: a session this end has dropped */
        MPT_HANDSHAKE_DROP_EXPIRED,         /* transport: the session is older than REJECT_AFTER_TIME */
        _MPT_HANDSHAKE_DROP_MAX,
        _MPT_HANDSHAKE_DROP_INVALID = -EINVAL,
} MptHandshakeDrop;

DECLARE_STRING_TABLE(mpt_handshake_drop, MptHandshakeDrop);

/* What to send back after a handshake message was taken. */
typedef enum MptHandshakeReply {
        MPT_HANDSHAKE_REPLY_NONE,       /* nothing (a cookie was stored) */
        MPT_HANDSHAKE_REPLY_RESPONSE,   /* a response: a new session, as next key pair */
        MPT_HANDSHAKE_REPLY_COOKIE,     /* a cookie reply: under load, the message was not processed */
        MPT_HANDSHAKE_REPLY_RETRY,      /* a retry: the initiation is authentic but not provably fresh */
        MPT_HANDSHAKE_REPLY_INITIATION, /* an initiation that answers a retry */
        MPT_HANDSHAKE_REPLY_CONFIRM,    /* no message; a new session is current: send a datagram under it now */
        _MPT_HANDSHAKE_REPLY_MAX,
        _MPT_HANDSHAKE_REPLY_INVALID = -EINVAL,
} MptHandshakeReply;

DECLARE_STRING_TABLE(mpt_handshake_reply, MptHandshakeReply);

/* Why a handshake should start now (mpt_handshake_want_initiation()). */
typedef enum MptHandshakeWant {
        MPT_HANDSHAKE_WANT_NOTHING,
        MPT_HANDSHAKE_WANT_FIRST,          /* no keys to send with */
        MPT_HANDSHAKE_WANT_RETRY,          /* the last initiation went unanswered for REKEY_TIMEOUT */
        MPT_HANDSHAKE_WANT_REKEY_TIME,     /* this end initiated the current session REKEY_AFTER_TIME ago */
        MPT_HANDSHAKE_WANT_REKEY_MESSAGES, /* REKEY_AFTER_MESSAGES sent under it */
        MPT_HANDSHAKE_WANT_PEER_SILENT,    /* sent for KEEPALIVE_TIMEOUT + REKEY_TIMEOUT, nothing received */
        _MPT_HANDSHAKE_WANT_MAX,
        _MPT_HANDSHAKE_WANT_INVALID = -EINVAL,
} MptHandshakeWant;

DECLARE_STRING_TABLE(mpt_handshake_want, MptHandshakeWant);

/* One session's keys. Empty: recv.epoch == 0. Plain bytes: copies may be handed to workers. */
typedef struct MptHandshakeKeypair {
        MptSecureKeys send; /* epoch: the other end's session id */
        MptSecureKeys recv; /* epoch: this end's session id */
        usec_t created;     /* when the handshake completed here */
        bool initiator;     /* this end initiated it */
} MptHandshakeKeypair;

typedef struct MptHandshakeKeys {
        MptHandshakeKeypair current, previous, next;
        uint32_t generation; /* the newest generation of this end's session ids (0: none yet) */
} MptHandshakeKeys;

/* Where a handshake message came from: the path (this end's index) and the source address and
 * port, as cookies bind them (4 or 16 address bytes, then the port, big endian). */
typedef struct MptHandshakeSource {
        unsigned path_id; /* < MPT_PATHS_MAX */
        uint8_t addr_len; /* 1 .. sizeof addr */
        uint8_t addr[18];
} MptHandshakeSource;

typedef struct MptHandshake MptHandshake;

/* Fills buf with n random bytes; 0 or < 0. Tests and fuzzers install a deterministic one. */
typedef int (*MptHandshakeRandom)(void *userdata, uint8_t *buf, size_t n);

/* A tunnel's handshake state: this end's static private key, the other end's static public key, the
 * pre-shared key (NULL: none), whether the keys it derives include AES-256-GCM (secure.h: only with
 * mpt_secure_aes_available()). Picks the instance. < 0 on failure: -EINVAL for a private key whose
 * public key is the other end's (the two ends must differ), -ENOMEM, -EIO. */
int mpt_handshake_new(const uint8_t private_key[MPT_NOISE_KEY_SIZE], const uint8_t peer_public_key[MPT_NOISE_KEY_SIZE],
                      const uint8_t psk[MPT_NOISE_KEY_SIZE], bool with_aes, MptHandshake **ret);
/* For a hub (one MptHandshake per peer, one socket for all of them): every session id hs hands out
 * from now on is tag << 32 | generation, instead of a random upper half per id. A datagram's epoch
 * (this end's session id) then names its peer by its upper half: the hub looks the tag up in a
 * table that changes only when peers come and go, not at every handshake, and that peer's keys
 * (mpt_handshake_keys_rx()) decide as always. The tag: random per peer and process (never 0, no
 * two peers the same), so that ids still hardly ever repeat across processes. */
void mpt_handshake_set_session_tag(MptHandshake *hs, uint32_t tag);
/* Wipes every secret and frees hs. NULL-safe; returns NULL. */
MptHandshake *mpt_handshake_free(MptHandshake *hs);
DEFINE_TRIVIAL_CLEANUP_FUNC(MptHandshake *, mpt_handshake_free);
/* The same with every random byte (the instance, ephemeral keys, session ids, secrets, nonces,
 * jitter) from fn: for tests and fuzzers. fn NULL: libcrypto's (what mpt_handshake_new() uses). */
int mpt_handshake_new_random(const uint8_t private_key[MPT_NOISE_KEY_SIZE],
                             const uint8_t peer_public_key[MPT_NOISE_KEY_SIZE], const uint8_t psk[MPT_NOISE_KEY_SIZE],
                             bool with_aes, MptHandshakeRandom fn, void *userdata, MptHandshake **ret);

/* ---- Handshake messages ---- */

/* Starts a handshake (or the next attempt of the one under way, whose state it replaces): writes
 * an initiation with mac2 for path_id into ret. 0, or < 0: -EOVERFLOW when the session ids or the
 * counter ran out (never in practice), other errors from libcrypto. */
int mpt_handshake_create_initiation(MptHandshake *hs, usec_t now, unsigned path_id,
                                    uint8_t ret[MPT_HANDSHAKE_INITIATION_SIZE]);
/* The initiation under way again, with mac2 for path_id: a copy to send over another path. -ENOENT
 * when none is under way. */
int mpt_handshake_initiation_for_path(MptHandshake *hs, usec_t now, unsigned path_id,
                                      uint8_t ret[MPT_HANDSHAKE_INITIATION_SIZE]);

/* Takes a handshake message (any of the four types) that came from src. Returns -1 when it was
 * taken: *ret_reply says what to send back (to the source address, over src->path_id), the message
 * in reply, *ret_reply_len bytes (0 for NONE and CONFIRM). Else a drop reason (MptHandshakeDrop),
 * with nothing to send. under_load: initiations and responses need a valid mac2 (else a cookie
 * reply answers them). */
int mpt_handshake_receive(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, bool under_load,
                          const uint8_t *msg, size_t len, uint8_t reply[MPT_HANDSHAKE_REPLY_MAX],
                          size_t *ret_reply_len, MptHandshakeReply *ret_reply);
/* The same for each type; mpt_handshake_receive() calls the one its first byte names. */
int mpt_handshake_consume_initiation(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, bool under_load,
                                     const uint8_t *msg, size_t len, uint8_t reply[MPT_HANDSHAKE_REPLY_MAX],
                                     size_t *ret_reply_len, MptHandshakeReply *ret_reply);
int mpt_handshake_consume_response(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, bool under_load,
                                   const uint8_t *msg, size_t len, uint8_t reply[MPT_HANDSHAKE_REPLY_MAX],
                                   size_t *ret_reply_len, MptHandshakeReply *ret_reply);
int mpt_handshake_consume_cookie(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, const uint8_t *msg,
                                 size_t len);
int mpt_handshake_consume_retry(MptHandshake *hs, usec_t now, const MptHandshakeSource *src, const uint8_t *msg,
                                size_t len, uint8_t reply[MPT_HANDSHAKE_REPLY_MAX], size_t *ret_reply_len,
                                MptHandshakeReply *ret_reply);

/* ---- Key pairs ---- */

const MptHandshakeKeys *mpt_handshake_keys(const MptHandshake *hs);
/* Changes whenever a key pair is added, promoted, dropped or wiped: time to republish the copies. */
uint64_t mpt_handshake_keys_version(const MptHandshake *hs);

/* Which key pair of k opens a transport datagram whose header carries epoch (pure; on a copy).
 * Returns -1 with *ret set, or a drop reason: unknown-session, stale-session, expired-session. */
int mpt_handshake_keys_rx(const MptHandshakeKeys *k, uint64_t epoch, usec_t now, const MptHandshakeKeypair **ret);
/* The key pair to seal with: current, unless it is empty, expired or has sent (sent datagrams
 * under it) REJECT_AFTER_MESSAGES. NULL: none, do not send. */
const MptHandshakeKeypair *mpt_handshake_keys_tx(const MptHandshakeKeys *k, usec_t now, uint64_t sent);

/* A transport datagram under the session whose receive epoch is epoch authenticated (at now): a
 * next key pair becomes current (the initiator confirmed it). Unknown epochs are ignored. */
void mpt_handshake_received(MptHandshake *hs, usec_t now, uint64_t epoch);
/* The data plane sent a transport datagram at now. */
void mpt_handshake_sent(MptHandshake *hs, usec_t now);

/* ---- Timers: pure functions of now, except _expire() ---- */

/* Whether to create an initiation now, and why; sent: datagrams sent under the current key pair. */
MptHandshakeWant mpt_handshake_want_initiation(const MptHandshake *hs, usec_t now, uint64_t sent);
/* Whether to send a datagram now only to let the other end hear from this one (a session this end
 * initiated that it has not sent under yet, or KEEPALIVE_TIMEOUT since a receipt with no send). */
bool mpt_handshake_want_keepalive(const MptHandshake *hs, usec_t now);
/* Drops and wipes what has expired at now: key pairs older than REJECT_AFTER_TIME (their receive
 * epochs go to ret_epochs, at most 3; returns how many), an initiation unanswered for
 * REKEY_ATTEMPT_TIME, and the rest of the session state WIPE_AFTER after the last handshake. */
size_t mpt_handshake_expire(MptHandshake *hs, usec_t now, uint64_t ret_epochs[3]);
/* When the next of these timers falls due after now (USEC_INFINITY: none): arm a timer for it, and
 * then call _expire(), _want_initiation() and _want_keepalive(). */
usec_t mpt_handshake_next_event(const MptHandshake *hs, usec_t now);

/* ---- For tests ---- */

/* Whether an initiation is under way, and the session id it carries. */
bool mpt_handshake_pending(const MptHandshake *hs, uint64_t *ret_id);
/* This end's static public key. */
const uint8_t *mpt_handshake_public_key(const MptHandshake *hs);

/* For a hub (a tunnel with many peers, each with an MptHandshake of its own): whose initiation this
 * is. Checks the message as mpt_handshake_screen() does (with the mac1 key of s's public key), then
 * opens its "e, es, s" (mpt_noise_ik_read_initiator_static()) with this end's static key pair s and
 * puts the initiator's static public key in ret; the caller looks it up among its peers and hands
 * the message to that peer's mpt_handshake_consume_initiation(), which checks it all again and
 * reads the rest; a key that is no peer's is dropped (unknown-peer) with no answer. One DH per
 * call: under load, a caller first asks for a cookie (mac2) as
 * mpt_handshake_consume_initiation() does, so that it does no DH for a source that cannot receive.
 * Returns -1 with ret set, else the MptHandshakeDrop reason (MALFORMED, MAC1, AUTH_FAILED,
 * BAD_KEY, CRYPTO_ERROR) with ret untouched. No state: any thread. */
int mpt_handshake_initiator_key(const MptNoiseKeypair *s, const uint8_t *msg, size_t len,
                                uint8_t ret[MPT_NOISE_KEY_SIZE]);

/* For the data plane, before it hands a message on to the thread that owns the MptHandshake: a
 * message of one of the four types of the wrong size or with reserved bytes set, or an initiation
 * or response whose mac1 does not verify with mac1_key (this end's, mpt_handshake_mac1_key()), is
 * dropped right there, so that a flood of them never waits in the queue beside genuine ones
 * (mpt_handshake_receive() checks all of it again). Returns -1 when it may be handed on, else the
 * MptHandshakeDrop reason (MALFORMED, MAC1, CRYPTO_ERROR). No state: any thread. */
int mpt_handshake_screen(const uint8_t mac1_key[MPT_NOISE_KEY_SIZE], const uint8_t *msg, size_t len);
void mpt_handshake_mac1_key(const MptHandshake *hs, uint8_t ret[MPT_NOISE_KEY_SIZE]);
