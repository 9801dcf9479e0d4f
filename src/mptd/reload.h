/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "profile.h"

typedef struct Tunnel Tunnel;

/* Applies profile n to the running tunnel in place: every key that can change live (mptd(8),
 * RELOADING), paths added after the last one and the last ones removed. Refuses all of it when a
 * key that cannot change did (Name=, Mode=, the key, ...) or a path was renamed or moved (its
 * place is its number on the wire): -EBUSY, nothing changed, the reasons as
 * "FILE:LINE: ..." lines in *ret_message. On success (0) the tunnel owns n, and *ret_message says
 * what changed. */
int tunnel_reload(Tunnel *t, MptProfile *n, char **ret_message);
/* Logs what a profile just read deserves: warnings (a Key= that others can read, [X-MPT...] in a
 * .netdev's drop-ins) and the drop-ins it read. At start and at every reload. */
void profile_log_read(const MptProfile *p, bool netdev);
/* Reads a profile (or a .netdev) for a reload: -EINVAL with its problems in *ret_message. */
int reload_read(const char *filename, bool netdev, MptProfile **ret, char **ret_message);
/* Reads filename (NULL: the file mptd was started with, t->reload_file) and reloads from it,
 * telling systemd (RELOADING=1, then READY=1). */
int tunnel_reload_file(Tunnel *t, const char *filename, char **ret_message);
