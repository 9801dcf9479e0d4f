/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A path (path.c; struct Path and its states in tunnel.h): what the main thread does with one of
 * the tunnel's paths. It follows the kernel (interface, link, local address, route, sockets),
 * keeps the path's state (up, dead, probing, listening, ...), sends keepalives and control
 * frames over it, measures its round trip and loss, and follows the other end's address
 * (mptd(8), PATHS AND KEEPALIVES, FOLLOWING THE LINKS, ENDPOINT LEARNING). The workers see a
 * path only through the Snapshot (tunnel.h). */

#include "tunnel.h"

int path_new(Peer *peer, unsigned index, const MptPathConfig *config, Path **ret);
Path *path_free(Path *p);
/* Brings the path in line with the kernel: interface, link, address, sockets, route. At start
 * (startup == true) a bind conflict is an error; later it is retried. */
int path_refresh(Path *p, bool startup);
int path_start(Path *p);
/* After a reload gave p->config a new configuration (old: the one before). */
int path_apply_config(Path *p, const MptPathConfig *old, bool remote_changed);
/* A reload removed the path: it stops (timers, sockets, its reorder state). */
void path_retire(Path *p);

/* State */
void path_update_state(Path *p, const char *reason);
/* Why the path is not up (NULL when it is). */
const char *path_reason(const Path *p);
int path_set_admin(Path *p, bool down);
int path_set_weight(Path *p, uint32_t weight);
/* Where a path's weight comes from, first that applies: set at run time (mptctl), Weight= in the
 * profile, the weight the other end asked for (its ReceiveWeight=), else the default. */
typedef enum PathWeightSource {
        PATH_WEIGHT_RUNTIME,
        PATH_WEIGHT_PROFILE,
        PATH_WEIGHT_PEER,
        PATH_WEIGHT_DEFAULT,
        _PATH_WEIGHT_SOURCE_MAX,
        _PATH_WEIGHT_SOURCE_INVALID = -EINVAL,
} PathWeightSource;

DECLARE_STRING_TABLE(path_weight_source, PathWeightSource);

PathWeightSource path_weight_source(const Path *p);
uint32_t path_effective_weight(const Path *p);
bool path_is_backup(const Path *p);
/* Whether it has sockets and its link is up (handshake replies go out then, even while it
 * listens). */
bool path_can_send(const Path *p);

/* What the workers hand over (a keepalive, a path-status frame, a new source of the other end). */
void path_handle_event(Path *p, const ControlEvent *ev);
/* Secure mode: p is the other end's path that sent ev, an authenticated keepalive or endpoint
 * event (see Path.peer_id). */
void path_note_peer(Path *p, const ControlEvent *ev);

/* Sending */
/* Sends a keepalive over the path now (when it can send and knows where to). */
void path_send_keepalive(Path *p);
/* Sends a feedback frame (secure mode) over the path. */
void path_send_feedback(Path *p, const MptFeedback *fb);

/* Measures */
/* The path's smallest round-trip time over the last PATH_RTT_MIN_WINDOW_USEC or so (its delay
 * without queues, outliers of a moment excluded); 0: none measured. */
#define PATH_RTT_MIN_WINDOW_USEC (10 * USEC_PER_SEC)
usec_t path_rtt_min(const Path *p);
