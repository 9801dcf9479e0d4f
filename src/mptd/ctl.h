/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "ctl-protocol.h"
#include "tunnel.h"

typedef struct CtlServer CtlServer;

/* Claims RUNTIME_DIR/NAME.sock (mode 0600): refuses when a live mptd already serves that name,
 * replaces a stale socket. Requests are served once a tunnel is attached. */
/* group: members of this group may use the socket too (mode 0660); (gid_t) -1: only root and our
 * own user (mode 0600). */
int ctl_server_new(sd_event *event, const char *name, gid_t group, CtlServer **ret);
void ctl_server_attach(CtlServer *s, Tunnel *t);
CtlServer *ctl_server_free(CtlServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(CtlServer *, ctl_server_free);

/* Writes the "show" records of the tunnel (exported for tests). */
void ctl_write_show(Tunnel *t, CtlWriter *w);
