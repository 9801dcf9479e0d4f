/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Host routes that keep the UDP packets of a path out of the tunnel.
 *
 * NetworkManager routes only the VPN gateway (the first path's Remote=) through the base device.
 * When the tunnel takes the default route, a path that is bound to its interface (Interface=,
 * SO_BINDTODEVICE) still leaves through it: the kernel only considers routes through the bound
 * device. A path without Interface= (LocalAddress= only) follows the routing table, so its remote
 * gets a host route (/32 or /128) through the gateway and device it is reached by before the
 * tunnel comes up, and the route goes when the tunnel goes. */

#include <stdbool.h>

#include "in-addr-util.h"

typedef struct MptHostRoute {
        int family;
        MptAddress dst;
        MptAddress gateway; /* family 0: on-link */
        int ifindex;
} MptHostRoute;

/* How the kernel reaches dst now (through ifindex when > 0): fills *ret (dst, gateway,
 * ifindex). Negative errno on failure (-ENETUNREACH, -EHOSTUNREACH: no route). */
int mpt_host_route_resolve(const MptAddress *dst, int ifindex, MptHostRoute *ret);
/* Adds the route to the main table (proto static); -EEXIST when a route with the same
 * destination and metric exists (it is then not ours to remove). */
int mpt_host_route_add(const MptHostRoute *r);
int mpt_host_route_del(const MptHostRoute *r);
