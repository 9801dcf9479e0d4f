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
} TunDevice;

/* Creates the multi-queue TUN device `name` with n_queues queues, or attaches n_queues queues
 * to an existing persistent one after checking that its flags match ours (TUN, no packet
 * information, no vnet header, multi-queue): a mismatch is an error with an explanation in
 * *reterr, never a silent mode switch. */
int tun_open(Rtnl *rtnl, const char *name, unsigned n_queues, TunDevice *ret, char **reterr);
void tun_close(TunDevice *t);
