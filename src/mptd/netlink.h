/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* rtnetlink through libmnl (sd-netlink is not exported by libsystemd): synchronous requests for
 * set-up and teardown, and message parsers shared with the event monitor. */

#include <linux/netlink.h>
#include <net/if.h>
#include <systemd/sd-event.h>

#include "in-addr-util.h"

typedef struct Rtnl Rtnl;

typedef struct RtnlTunInfo {
        bool valid;
        uint8_t type; /* IFF_TUN or IFF_TAP */
        bool pi, vnet_hdr, persist, multi_queue;
        uint32_t num_queues;
        bool has_owner, has_group;
        uint32_t owner, group;
} RtnlTunInfo;

typedef struct RtnlLink {
        int ifindex;
        char ifname[IFNAMSIZ];
        unsigned flags; /* IFF_* */
        uint8_t operstate;
        uint32_t mtu;
        char kind[32]; /* IFLA_INFO_KIND, "" when none */
        RtnlTunInfo tun;
} RtnlLink;

typedef struct RtnlAddress {
        int ifindex;
        MptAddress address;
        uint8_t prefixlen;
        uint8_t scope;
        uint32_t flags; /* IFA_F_* */
} RtnlAddress;

int rtnl_open(Rtnl **ret);
Rtnl *rtnl_close(Rtnl *rtnl);
DEFINE_TRIVIAL_CLEANUP_FUNC(Rtnl *, rtnl_close);

/* -ENODEV when there is no such interface. */
int rtnl_link_get_by_name(Rtnl *rtnl, const char *name, RtnlLink *ret);
int rtnl_link_get_by_index(Rtnl *rtnl, int ifindex, RtnlLink *ret);
int rtnl_link_set_mtu(Rtnl *rtnl, int ifindex, uint32_t mtu);
int rtnl_link_set_up(Rtnl *rtnl, int ifindex, bool up);
int rtnl_link_set_txqlen(Rtnl *rtnl, int ifindex, uint32_t txqlen);

/* IPv6 addresses are added without duplicate address detection (the tunnel is point to point).
 * -EEXIST when the address is already there. */
int rtnl_addr_add(Rtnl *rtnl, int ifindex, const MptPrefix *prefix);
int rtnl_addr_del(Rtnl *rtnl, int ifindex, const MptPrefix *prefix);
/* All addresses (family AF_UNSPEC: both) of one interface (ifindex 0: all interfaces). */
int rtnl_addr_list(Rtnl *rtnl, int ifindex, int family, RtnlAddress **ret, size_t *ret_n);

int rtnl_route_add(Rtnl *rtnl, int ifindex, const MptPrefix *dst);
int rtnl_route_del(Rtnl *rtnl, int ifindex, const MptPrefix *dst);

/* Parsers for RTM_NEWLINK/RTM_DELLINK and RTM_NEWADDR/RTM_DELADDR messages. */
int rtnl_parse_link(const struct nlmsghdr *nlh, RtnlLink *ret);
int rtnl_parse_addr(const struct nlmsghdr *nlh, RtnlAddress *ret);

/* 0 when the routing table has an entry for dst through ifindex (any interface when 0), as
 * `ip route get fibmatch DST oif DEV` would find it; -ENETUNREACH or -EHOSTUNREACH when not. (A
 * plain lookup with an output interface "assumes on-link" for IPv4 and always succeeds.) */
int rtnl_route_check(Rtnl *rtnl, const MptAddress *dst, int ifindex);

/* Link, address and route events on the sd-event loop. */
typedef struct RtnlMonitor RtnlMonitor;

typedef struct RtnlMonitorHandlers {
        void (*link)(void *userdata, bool removed, const RtnlLink *link);
        void (*address)(void *userdata, bool removed, const RtnlAddress *address);
        void (*route)(void *userdata);
        /* Events were lost (the socket overran): everything must be looked at again. */
        void (*overrun)(void *userdata);
} RtnlMonitorHandlers;

int rtnl_monitor_new(sd_event *event, const RtnlMonitorHandlers *handlers, void *userdata, RtnlMonitor **ret);
RtnlMonitor *rtnl_monitor_free(RtnlMonitor *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(RtnlMonitor *, rtnl_monitor_free);
