/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A hub's routing by inner address (AllowedIPs= of its [Peer] sections): prefixes of IPv4 and
 * IPv6, each with a value (the index of its peer), and longest-prefix match over them. Pure: no
 * locking, no syscalls; the owner publishes a finished table to readers (a snapshot) and never
 * changes a published one. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "in-addr-util.h"

/* What a lookup returns when no prefix covers the address. */
#define MPT_ALLOWED_IPS_NONE UINT32_MAX
/* Bounds what a profile or mptctl can make one table allocate. */
#define MPT_ALLOWED_IPS_MAX 65536u

typedef struct MptAllowedIps MptAllowedIps;

MptAllowedIps *mpt_allowed_ips_new(void);
MptAllowedIps *mpt_allowed_ips_free(MptAllowedIps *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(MptAllowedIps *, mpt_allowed_ips_free);

/* Adds prefix p (its host bits ignored) with value v (not MPT_ALLOWED_IPS_NONE). -EEXIST when
 * the table holds a prefix that overlaps it (equal, containing or contained) with another value,
 * its value in *ret_other (may be NULL); adding a prefix again with the same value, or one that
 * overlaps only prefixes of the same value, is fine. -E2BIG past MPT_ALLOWED_IPS_MAX prefixes,
 * -EAFNOSUPPORT for a family other than IPv4 and IPv6, -ENOMEM. */
int mpt_allowed_ips_add(MptAllowedIps *t, const MptPrefix *p, uint32_t v, uint32_t *ret_other);
/* Removes every prefix of value v; returns how many. */
size_t mpt_allowed_ips_remove_value(MptAllowedIps *t, uint32_t v);
/* The value of the longest prefix of family that covers addr (4 or 16 bytes), or
 * MPT_ALLOWED_IPS_NONE. */
uint32_t mpt_allowed_ips_lookup(const MptAllowedIps *t, int family, const void *addr);
/* The same for an inner packet (an IPv4 or IPv6 header first, by its version): the value of its
 * source address (source: a packet a peer sent, which must be within that peer's prefixes) or of
 * its destination (a packet to send: which peer it goes to). MPT_ALLOWED_IPS_NONE also for a packet
 * too short for its addresses or of another version. */
uint32_t mpt_allowed_ips_lookup_packet(const MptAllowedIps *t, const uint8_t *pkt, size_t len, bool source);
/* How many prefixes the table holds. */
size_t mpt_allowed_ips_size(const MptAllowedIps *t);
