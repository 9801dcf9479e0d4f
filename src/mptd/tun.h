/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <net/if.h>

#include "netlink.h"

typedef struct TunDevice {
        char ifname[IFNAMSIZ];
        int ifindex;
        int *fds; /* one per queue, non-blocking */
        unsigned n_fds;
        bool created;    /* we created it: it goes away with our last queue */
        bool persistent; /* it existed (e.g. made by systemd-networkd) and stays */
        bool vnet_hdr;   /* every read and write starts with a struct virtio_net_hdr */
        unsigned offloads; /* TUN_F_* the kernel accepted (0 without vnet_hdr) */
} TunDevice;

/* Creates the multi-queue TUN device `name` with n_queues queues, or attaches n_queues queues
 * to an existing persistent one after checking that its flags match (TUN, no packet information,
 * multi-queue): a mismatch is an error with an explanation in *reterr, never a silent mode
 * switch. A device we create gets a virtio-net header when want_offloads; an existing one is
 * used the way it was made (VNetHeader= in a .netdev). With the header, the offloads the kernel
 * supports are enabled (checksum, TSO, USO: probed, the best accepted set is kept). */
int tun_open(Rtnl *rtnl, const char *name, unsigned n_queues, bool want_offloads, TunDevice *ret, char **reterr);
/* "csum tso4 tso6 uso4 uso6" style text of t->offloads, for logs and mptctl. */
const char *tun_offloads_to_string(unsigned offloads, char *buf, size_t size);
void tun_close(TunDevice *t);
