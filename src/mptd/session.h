/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The handshake in mptd (secure mode with PrivateKey=; handshake.h has the protocol): one
 * MptHandshake per peer (Peer.hs), owned by the main thread. Workers hand it the handshake messages they
 * receive (CONTROL_EVENT_HANDSHAKE) and tell it under which session the control frames they pass
 * on authenticated (ControlEvent.epoch), and a datagram that first authenticated under a new
 * session a responder made (CONTROL_EVENT_SESSION). They seal and open with the copies of the key
 * pairs in the snapshot (tunnel_publish() takes them from here whenever they change). Timers:
 * one, at mpt_handshake_next_event(), on CLOCK_BOOTTIME (keys age during suspend). */

#include "handshake.h"
#include "tunnel.h"

/* The clock of the handshake and of the key pairs' ages (workers too): CLOCK_BOOTTIME. */
usec_t session_now(void);

/* Sets up the handshake with peer from the tunnel's profile (after the paths are set up): the
 * first initiation goes out from the event loop at once. < 0 on failure, logged. */
int session_start(Peer *peer);
/* Wipes and frees it (NULL-safe on a peer without). */
void session_stop(Peer *peer);

/* A handshake message a worker received (the event's path: the socket it came in on). under_load:
 * many of them are waiting (initiations and responses then need a cookie). */
void session_handle_message(Tunnel *t, const ControlEvent *ev, bool under_load);
/* A datagram authenticated under the session whose receive epoch is epoch. */
void session_heard(Peer *peer, uint64_t epoch);
/* The main thread sent a transport datagram (sealed with session_tx_keys()). */
void session_sent(Peer *peer);
/* The keys the main thread seals with now; NULL: no session to send with. */
const MptSecureKeys *session_tx_keys(Peer *peer);
/* Copies the key pairs into a snapshot being built: the workers' receive keys, and in tx_keys
 * what they seal with (epoch 0: none). */
void session_fill_snapshot(Peer *peer, Snapshot *s);
/* The drop counter of a handshake drop reason (MptHandshakeDrop). */
MptDropReason session_drop_reason(int handshake_drop);
