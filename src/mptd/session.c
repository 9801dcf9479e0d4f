/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <time.h>

#include "log.h"
#include "session.h"

static_assert(MPT_DROP_HANDSHAKE_CRYPTO_ERROR - MPT_DROP_HANDSHAKE_MALFORMED ==
                      MPT_HANDSHAKE_DROP_CRYPTO_ERROR - MPT_HANDSHAKE_DROP_MALFORMED,
              "the handshake's drop reasons and the counters' are in the same order");

usec_t session_now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / NSEC_PER_USEC;
}

MptDropReason session_drop_reason(int d) {
        switch (d) {
        case MPT_HANDSHAKE_DROP_UNKNOWN_SESSION:
                return MPT_DROP_UNKNOWN_SESSION;
        case MPT_HANDSHAKE_DROP_STALE_SESSION:
                return MPT_DROP_STALE_SESSION;
        case MPT_HANDSHAKE_DROP_EXPIRED:
                return MPT_DROP_EXPIRED_SESSION;
        default:
                if (d >= MPT_HANDSHAKE_DROP_MALFORMED && d <= MPT_HANDSHAKE_DROP_CRYPTO_ERROR)
                        return (MptDropReason) (MPT_DROP_HANDSHAKE_MALFORMED + (d - MPT_HANDSHAKE_DROP_MALFORMED));
                return MPT_DROP_HANDSHAKE_MALFORMED;
        }
}

const MptSecureKeys *session_tx_keys(Peer *peer) {
        const MptHandshakeKeypair *kp = mpt_handshake_keys_tx(mpt_handshake_keys(peer->hs), session_now(), 0);

        return kp ? &kp->send : NULL;
}

void session_fill_snapshot(Peer *peer, Snapshot *s) {
        const MptHandshakeKeys *k = mpt_handshake_keys(peer->hs);
        /* The number of messages sent under a key pair is bounded by the counters: every path and
         * lane has 2^64 - 1 of its own, and REJECT_AFTER_MESSAGES is beyond what any one reaches. */
        const MptHandshakeKeypair *kp = mpt_handshake_keys_tx(k, session_now(), 0);

        s->hs_keys = *k;
        if (kp)
                s->tx_keys = kp->send;
}

static int sync_keys(Peer *peer);

/* Sends a handshake message (in the clear: it protects itself) over path p to dst. */
static bool send_raw(Path *p, const uint8_t *msg, size_t len, const MptSockaddr *dst, socklen_t dst_len) {
        if (!path_can_send(p))
                return false;
        if (sendto(p->fds[0], msg, len, MSG_DONTWAIT, &dst->sa, dst_len) < 0) {
                COUNTER_ADD(p->counters.drops[errno == EAGAIN || errno == ENOBUFS ? MPT_DROP_SEND_BUSY
                                                                                  : MPT_DROP_SEND_ERROR],
                            1);
                return false;
        }
        return true;
}

/* A new initiation over every path that can send: the handshake must not wait for a dead path,
 * and the other end answers the first copy (and drops the others as handshake-replayed). */
static void initiate(Peer *peer, usec_t now, MptHandshakeWant why) {
        Tunnel *t = peer->tunnel;
        uint8_t msg[MPT_HANDSHAKE_INITIATION_SIZE];
        bool created = false;
        unsigned sent = 0;
        int r;

        for (size_t i = 0; i < peer->n_paths; i++) {
                Path *p = peer->paths[i];

                if (!path_can_send(p) || p->remote_len == 0)
                        continue;
                r = created ? mpt_handshake_initiation_for_path(peer->hs, now, (unsigned) i, msg)
                            : mpt_handshake_create_initiation(peer->hs, now, (unsigned) i, msg);
                if (r < 0) {
                        log_tunnel_warning_errno(t, r, "Failed to create a handshake initiation: %m");
                        return;
                }
                created = true;
                sent += send_raw(p, msg, sizeof msg, &p->remote, p->remote_len);
        }
        if (sent > 0)
                peer->hs_initiations++;
        log_tunnel_debug(t, "Handshake: initiation (%s) sent over %u path(s)", mpt_handshake_want_to_string(why), sent);
}

/* MPT_DEBUG_REKEY: when the initiator of the current session rekeys early (as the handshake does
 * after REKEY_AFTER_TIME; no initiation of its own under way); USEC_INFINITY: never. */
static usec_t debug_rekey_due(Peer *peer, usec_t now) {
        const MptHandshakeKeys *k = mpt_handshake_keys(peer->hs);

        if (dataplane_options.rekey_usec == 0 || k->current.recv.epoch == 0 || !k->current.initiator ||
            mpt_handshake_pending(peer->hs, NULL))
                return USEC_INFINITY;
        return k->current.created + dataplane_options.rekey_usec;
}

static void keepalives(Peer *peer) {
        for (size_t i = 0; i < peer->n_paths; i++)
                path_send_keepalive(peer->paths[i]);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Peer *peer = userdata;
        usec_t now = session_now();
        uint64_t dropped[3];
        MptHandshakeWant want;

        (void) mpt_handshake_expire(peer->hs, now, dropped);
        want = mpt_handshake_want_initiation(peer->hs, now, 0);
        if (want == MPT_HANDSHAKE_WANT_NOTHING && debug_rekey_due(peer, now) <= now)
                want = MPT_HANDSHAKE_WANT_REKEY_TIME;
        if (want != MPT_HANDSHAKE_WANT_NOTHING)
                initiate(peer, now, want);
        if (mpt_handshake_want_keepalive(peer->hs, now))
                keepalives(peer);
        return sync_keys(peer);
}

/* After anything that may have changed the key pairs or the timers: republish the keys for the
 * workers when they changed, and arm the timer for what falls due next. */
static int sync_keys(Peer *peer) {
        Tunnel *t = peer->tunnel;
        const MptHandshakeKeys *k = mpt_handshake_keys(peer->hs);
        usec_t now = session_now(), next;
        uint64_t v = mpt_handshake_keys_version(peer->hs);

        if (v != peer->hs_version) {
                uint64_t current = k->current.recv.epoch;
                bool had = peer->hs_current != 0;

                peer->hs_version = v;
                if (current != peer->hs_current && current != 0) {
                        peer->hs_sessions++;
                        peer->hs_session_at = now;
                        if (had)
                                log_tunnel_debug(t, "Handshake: new session (%" PRIu64 " so far)", peer->hs_sessions);
                        else
                                log_tunnel_info(t, "Handshake complete: session keys established with the other end");
                } else if (current == 0 && had)
                        log_tunnel_notice(t, "Session keys expired: nothing is sent until a new handshake completes");
                peer->hs_current = current;
                (void) tunnel_publish(t);
        }
        next = MIN(mpt_handshake_next_event(peer->hs, now), debug_rekey_due(peer, now));
        if (next == USEC_INFINITY)
                return sd_event_source_set_enabled(peer->hs_timer, SD_EVENT_OFF);
        /* The timer's clock is the handshake's: absolute CLOCK_BOOTTIME. */
        (void) sd_event_source_set_time(peer->hs_timer, MAX(next, now));
        return sd_event_source_set_enabled(peer->hs_timer, SD_EVENT_ONESHOT);
}

int session_start(Peer *peer) {
        Tunnel *t = peer->tunnel;
        const MptTunnelConfig *c = &t->profile->tunnel;
        int r;

        r = mpt_noise_init();
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to initialise the handshake's algorithms in %s: %m",
                                              mpt_secure_library());
        r = mpt_handshake_new(c->hs_private.bytes, c->public_key.bytes, c->hs_psk.set ? c->hs_psk.bytes : NULL,
                              t->aes, &peer->hs);
        if (r == -EINVAL)
                return log_tunnel_error_errno(t, r, "PublicKey= is this end's own public key: give the other end's");
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to set up the handshake: %m");
        mpt_handshake_mac1_key(peer->hs, t->hs_mac1_key);
        r = sd_event_add_time(t->event, &peer->hs_timer, CLOCK_BOOTTIME, session_now(), 0, on_timer, peer);
        if (r < 0)
                return log_tunnel_error_errno(t, r, "Failed to add the handshake's timer: %m");
        (void) sd_event_source_set_description(peer->hs_timer, "handshake");
        return 0;
}

void session_stop(Peer *peer) {
        peer->hs_timer = sd_event_source_disable_unref(peer->hs_timer);
        peer->hs = mpt_handshake_free(peer->hs);
}

void session_handle_message(Tunnel *t, const ControlEvent *ev, bool under_load) {
        Peer *peer = t->peers[0]; /* the one peer; a hub picks it by the initiation's key */
        uint8_t reply[MPT_HANDSHAKE_REPLY_MAX];
        size_t reply_len = 0;
        MptHandshakeReply what;
        MptHandshakeSource src = { .path_id = ev->path };
        MptAddress a;
        uint16_t port;
        socklen_t dst_len;
        Path *p;
        int r;

        if (ev->path >= peer->n_paths)
                return;
        p = peer->paths[ev->path];
        if (sockaddr_to_address(&ev->source, &a, &port) < 0)
                return;
        src.addr_len = (uint8_t) (family_address_size(a.family) + 2);
        memcpy(src.addr, a.addr.bytes, family_address_size(a.family));
        src.addr[src.addr_len - 2] = (uint8_t) (port >> 8);
        src.addr[src.addr_len - 1] = (uint8_t) port;
        dst_len = a.family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);

        r = mpt_handshake_receive(peer->hs, session_now(), &src, under_load, ev->hs.msg, ev->hs.len, reply, &reply_len,
                                  &what);
        /* The workers get new keys before the reply goes: the other end sends under a new
         * session as soon as it has the response. */
        (void) sync_keys(peer);
        if (r >= 0) {
                COUNTER_ADD(p->counters.drops[session_drop_reason(r)], 1);
                log_tunnel_debug(t, "Handshake message (type 0x%02x) on path %s dropped: %s", ev->hs.msg[0], p->name,
                                 mpt_handshake_drop_to_string(r));
        } else {
                log_tunnel_debug(t, "Handshake message (type 0x%02x) on path %s: %s", ev->hs.msg[0], p->name,
                                 mpt_handshake_reply_to_string(what));
                if (reply_len > 0)
                        (void) send_raw(p, reply, reply_len, &ev->source, dst_len);
                if (what == MPT_HANDSHAKE_REPLY_INITIATION)
                        peer->hs_initiations++;
        }
        explicit_bzero(reply, sizeof reply);
        /* A session this end initiated is current now: the other end starts sending under it once a
         * datagram under it arrived, so send one at once over every path. */
        if (r < 0 && what == MPT_HANDSHAKE_REPLY_CONFIRM)
                keepalives(peer);
}

void session_heard(Peer *peer, uint64_t epoch) {
        mpt_handshake_received(peer->hs, session_now(), epoch);
        (void) sync_keys(peer);
}

void session_sent(Peer *peer) {
        mpt_handshake_sent(peer->hs, session_now());
}
