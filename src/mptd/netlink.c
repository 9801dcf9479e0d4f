/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>

#include "netlink.h"

struct Rtnl {
        struct mnl_socket *nl;
        unsigned portid;
        unsigned seq;
};

#define RTNL_BUFFER_SIZE (32u * 1024u)
/* The monitor's receive buffer: large enough that a burst of events (an interface with many
 * addresses going away) does not overrun it. */
#define RTNL_MONITOR_RCVBUF (4 * 1024 * 1024)
/* Messages the monitor reads per wake-up at most, so that a storm of events does not starve the
 * rest of the event loop (what is left wakes it again). */
#define RTNL_MONITOR_BATCH 64u
/* rtnetlink message types come in fours (NEW, DEL, GET, SET: linux/rtnetlink.h); a GET's type is
 * 2 modulo 4. */
#define RTNL_IS_GET(type) (((type) & 3) == 2)
#define RTNL_REQUEST_SIZE 4096

int rtnl_open(Rtnl **ret) {
        Rtnl *rtnl;
        int one = 1;

        rtnl = calloc(1, sizeof(Rtnl));
        if (!rtnl)
                return -ENOMEM;
        rtnl->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
        if (!rtnl->nl) {
                int r = -errno;
                free(rtnl);
                return r;
        }
        if (mnl_socket_bind(rtnl->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
                int r = -errno;
                mnl_socket_close(rtnl->nl);
                free(rtnl);
                return r;
        }
        /* Errors carry the offending request's attributes; we only want the error code. */
        (void) mnl_socket_setsockopt(rtnl->nl, NETLINK_CAP_ACK, &one, sizeof one);
        (void) mnl_socket_setsockopt(rtnl->nl, NETLINK_EXT_ACK, &one, sizeof one);
        rtnl->portid = mnl_socket_get_portid(rtnl->nl);
        rtnl->seq = (unsigned) time(NULL);
        *ret = rtnl;
        return 0;
}

Rtnl *rtnl_close(Rtnl *rtnl) {
        if (!rtnl)
                return NULL;
        mnl_socket_close(rtnl->nl);
        return mfree(rtnl);
}

/* Sends one request and runs the callback on every answer until the ACK or DONE. */
static int rtnl_call(Rtnl *rtnl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data) {
        _cleanup_free_ char *buf = NULL;
        unsigned seq;
        int r;

        buf = malloc(RTNL_BUFFER_SIZE);
        if (!buf)
                return -ENOMEM;
        seq = nlh->nlmsg_seq = ++rtnl->seq;
        /* NLM_F_DUMP shares its bits with NLM_F_EXCL|NLM_F_REPLACE: only a GET request dumps. */
        if (!(RTNL_IS_GET(nlh->nlmsg_type) && (nlh->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP))
                nlh->nlmsg_flags |= NLM_F_ACK;
        if (mnl_socket_sendto(rtnl->nl, nlh, nlh->nlmsg_len) < 0)
                return -errno;
        for (;;) {
                ssize_t n = mnl_socket_recvfrom(rtnl->nl, buf, RTNL_BUFFER_SIZE);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                r = mnl_cb_run(buf, (size_t) n, seq, rtnl->portid, cb, data);
                if (r < 0)
                        return -errno;
                if (r == MNL_CB_STOP)
                        return 0;
        }
}

static int link_attr_cb(const struct nlattr *attr, void *data) {
        const struct nlattr **tb = data;
        int type = mnl_attr_get_type(attr);

        if (mnl_attr_type_valid(attr, IFLA_MAX) < 0)
                return MNL_CB_OK;
        tb[type] = attr;
        return MNL_CB_OK;
}

static int generic_attr_cb(const struct nlattr *attr, void *data) {
        const struct nlattr **tb = data;
        tb[mnl_attr_get_type(attr)] = attr;
        return MNL_CB_OK;
}

static void parse_tun_info(const struct nlattr *data, RtnlTunInfo *t) {
        const struct nlattr *tb[IFLA_TUN_MAX + 1] = {};
        const struct nlattr *a;

        mnl_attr_for_each_nested(a, data) {
                unsigned type = mnl_attr_get_type(a);
                if (type <= IFLA_TUN_MAX)
                        tb[type] = a;
        }
        t->valid = true;
        if (tb[IFLA_TUN_TYPE] && mnl_attr_get_payload_len(tb[IFLA_TUN_TYPE]) >= 1)
                t->type = mnl_attr_get_u8(tb[IFLA_TUN_TYPE]);
        if (tb[IFLA_TUN_PI])
                t->pi = mnl_attr_get_u8(tb[IFLA_TUN_PI]);
        if (tb[IFLA_TUN_VNET_HDR])
                t->vnet_hdr = mnl_attr_get_u8(tb[IFLA_TUN_VNET_HDR]);
        if (tb[IFLA_TUN_PERSIST])
                t->persist = mnl_attr_get_u8(tb[IFLA_TUN_PERSIST]);
        if (tb[IFLA_TUN_MULTI_QUEUE])
                t->multi_queue = mnl_attr_get_u8(tb[IFLA_TUN_MULTI_QUEUE]);
        if (tb[IFLA_TUN_NUM_QUEUES] && mnl_attr_get_payload_len(tb[IFLA_TUN_NUM_QUEUES]) >= 4)
                t->num_queues = mnl_attr_get_u32(tb[IFLA_TUN_NUM_QUEUES]);
        if (tb[IFLA_TUN_OWNER] && mnl_attr_get_payload_len(tb[IFLA_TUN_OWNER]) >= 4) {
                t->has_owner = true;
                t->owner = mnl_attr_get_u32(tb[IFLA_TUN_OWNER]);
        }
        if (tb[IFLA_TUN_GROUP] && mnl_attr_get_payload_len(tb[IFLA_TUN_GROUP]) >= 4) {
                t->has_group = true;
                t->group = mnl_attr_get_u32(tb[IFLA_TUN_GROUP]);
        }
}

int rtnl_parse_link(const struct nlmsghdr *nlh, RtnlLink *ret) {
        const struct nlattr *tb[IFLA_MAX + 1] = {};
        const struct ifinfomsg *ifi;
        RtnlLink l = {};

        if (nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK)
                return -EINVAL;
        if (mnl_nlmsg_get_payload_len(nlh) < sizeof(struct ifinfomsg))
                return -EBADMSG;
        ifi = mnl_nlmsg_get_payload(nlh);
        if (mnl_attr_parse(nlh, sizeof(*ifi), link_attr_cb, tb) < 0)
                return -EBADMSG;

        l.ifindex = ifi->ifi_index;
        l.flags = ifi->ifi_flags;
        if (tb[IFLA_IFNAME]) {
                const char *n = mnl_attr_get_str(tb[IFLA_IFNAME]);
                size_t len = strnlen(n, mnl_attr_get_payload_len(tb[IFLA_IFNAME]));
                if (len >= IFNAMSIZ)
                        return -EBADMSG;
                memcpy(l.ifname, n, len);
        }
        if (tb[IFLA_MTU] && mnl_attr_get_payload_len(tb[IFLA_MTU]) >= 4)
                l.mtu = mnl_attr_get_u32(tb[IFLA_MTU]);
        if (tb[IFLA_OPERSTATE] && mnl_attr_get_payload_len(tb[IFLA_OPERSTATE]) >= 1)
                l.operstate = mnl_attr_get_u8(tb[IFLA_OPERSTATE]);
        if (tb[IFLA_LINKINFO]) {
                const struct nlattr *li[IFLA_INFO_MAX + 1] = {};
                if (mnl_attr_parse_nested(tb[IFLA_LINKINFO], generic_attr_cb, li) >= 0) {
                        if (li[IFLA_INFO_KIND]) {
                                const char *k = mnl_attr_get_str(li[IFLA_INFO_KIND]);
                                size_t len = strnlen(k, mnl_attr_get_payload_len(li[IFLA_INFO_KIND]));
                                memcpy(l.kind, k, MIN(len, sizeof(l.kind) - 1));
                        }
                        if (streq(l.kind, "tun") && li[IFLA_INFO_DATA])
                                parse_tun_info(li[IFLA_INFO_DATA], &l.tun);
                }
        }
        *ret = l;
        return 0;
}

static int link_cb(const struct nlmsghdr *nlh, void *data) {
        RtnlLink *l = data;
        return rtnl_parse_link(nlh, l) < 0 ? MNL_CB_ERROR : MNL_CB_OK;
}

static int link_get(Rtnl *rtnl, const char *name, int ifindex, RtnlLink *ret) {
        char buf[RTNL_REQUEST_SIZE];
        struct nlmsghdr *nlh;
        struct ifinfomsg *ifi;
        RtnlLink l = {};
        int r;

        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = RTM_GETLINK;
        nlh->nlmsg_flags = NLM_F_REQUEST;
        ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
        ifi->ifi_family = AF_UNSPEC;
        ifi->ifi_index = ifindex;
        if (name)
                mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
        mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);

        r = rtnl_call(rtnl, nlh, link_cb, &l);
        if (r == -ENODEV || r == -ENOENT)
                return -ENODEV;
        if (r < 0)
                return r;
        if (l.ifindex <= 0)
                return -ENODEV;
        *ret = l;
        return 0;
}

int rtnl_link_get_by_name(Rtnl *rtnl, const char *name, RtnlLink *ret) {
        return link_get(rtnl, name, 0, ret);
}

int rtnl_link_get_by_index(Rtnl *rtnl, int ifindex, RtnlLink *ret) {
        return link_get(rtnl, NULL, ifindex, ret);
}

static int link_set(Rtnl *rtnl, int ifindex, uint32_t mtu, int up, uint32_t txqlen) {
        char buf[RTNL_REQUEST_SIZE];
        struct nlmsghdr *nlh;
        struct ifinfomsg *ifi;

        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = RTM_NEWLINK;
        nlh->nlmsg_flags = NLM_F_REQUEST;
        ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
        ifi->ifi_family = AF_UNSPEC;
        ifi->ifi_index = ifindex;
        if (up >= 0) {
                ifi->ifi_change = IFF_UP;
                ifi->ifi_flags = up ? IFF_UP : 0;
        }
        if (mtu > 0)
                mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
        if (txqlen > 0)
                mnl_attr_put_u32(nlh, IFLA_TXQLEN, txqlen);
        return rtnl_call(rtnl, nlh, NULL, NULL);
}

int rtnl_link_set_mtu(Rtnl *rtnl, int ifindex, uint32_t mtu) {
        return link_set(rtnl, ifindex, mtu, -1, 0);
}

int rtnl_link_set_up(Rtnl *rtnl, int ifindex, bool up) {
        return link_set(rtnl, ifindex, 0, up, 0);
}

int rtnl_link_set_txqlen(Rtnl *rtnl, int ifindex, uint32_t txqlen) {
        return link_set(rtnl, ifindex, 0, -1, txqlen);
}

static int addr_change(Rtnl *rtnl, int ifindex, const MptPrefix *p, bool add) {
        char buf[RTNL_REQUEST_SIZE];
        struct nlmsghdr *nlh;
        struct ifaddrmsg *ifa;
        size_t size = family_address_size(p->family);

        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = add ? RTM_NEWADDR : RTM_DELADDR;
        nlh->nlmsg_flags = NLM_F_REQUEST | (add ? NLM_F_CREATE | NLM_F_EXCL : 0);
        ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
        ifa->ifa_family = (uint8_t) p->family;
        ifa->ifa_prefixlen = p->prefixlen;
        ifa->ifa_index = (uint32_t) ifindex;
        ifa->ifa_scope = RT_SCOPE_UNIVERSE;
        mnl_attr_put(nlh, IFA_LOCAL, size, &p->addr);
        mnl_attr_put(nlh, IFA_ADDRESS, size, &p->addr);
        if (add && p->family == AF_INET6) {
                ifa->ifa_flags = IFA_F_NODAD;
                mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NODAD);
        }
        return rtnl_call(rtnl, nlh, NULL, NULL);
}

int rtnl_addr_add(Rtnl *rtnl, int ifindex, const MptPrefix *prefix) {
        return addr_change(rtnl, ifindex, prefix, true);
}

int rtnl_addr_del(Rtnl *rtnl, int ifindex, const MptPrefix *prefix) {
        return addr_change(rtnl, ifindex, prefix, false);
}

int rtnl_parse_addr(const struct nlmsghdr *nlh, RtnlAddress *ret) {
        const struct nlattr *tb[IFA_MAX + 1] = {};
        const struct ifaddrmsg *ifa;
        const struct nlattr *a;
        RtnlAddress r = {};
        size_t size;

        if (nlh->nlmsg_type != RTM_NEWADDR && nlh->nlmsg_type != RTM_DELADDR)
                return -EINVAL;
        if (mnl_nlmsg_get_payload_len(nlh) < sizeof(struct ifaddrmsg))
                return -EBADMSG;
        ifa = mnl_nlmsg_get_payload(nlh);
        mnl_attr_for_each(a, nlh, sizeof(*ifa)) {
                unsigned type = mnl_attr_get_type(a);
                if (type <= IFA_MAX)
                        tb[type] = a;
        }
        size = family_address_size(ifa->ifa_family);
        if (size == 0)
                return -EAFNOSUPPORT;
        /* IFA_LOCAL is the local address on point-to-point links; IFA_ADDRESS otherwise. */
        a = tb[IFA_LOCAL] ?: tb[IFA_ADDRESS];
        if (!a || mnl_attr_get_payload_len(a) != size)
                return -EBADMSG;
        r.ifindex = (int) ifa->ifa_index;
        r.address.family = ifa->ifa_family;
        memcpy(&r.address.addr, mnl_attr_get_payload(a), size);
        r.prefixlen = ifa->ifa_prefixlen;
        r.scope = ifa->ifa_scope;
        r.flags = ifa->ifa_flags;
        if (tb[IFA_FLAGS] && mnl_attr_get_payload_len(tb[IFA_FLAGS]) >= 4)
                r.flags = mnl_attr_get_u32(tb[IFA_FLAGS]);
        *ret = r;
        return 0;
}

typedef struct AddrList {
        int ifindex;
        int family;
        RtnlAddress *items;
        size_t n;
        bool oom;
} AddrList;

static int addr_list_cb(const struct nlmsghdr *nlh, void *data) {
        AddrList *l = data;
        RtnlAddress a;
        RtnlAddress *items;

        if (rtnl_parse_addr(nlh, &a) < 0)
                return MNL_CB_OK;
        if (l->ifindex > 0 && a.ifindex != l->ifindex)
                return MNL_CB_OK;
        if (l->family != AF_UNSPEC && a.address.family != l->family)
                return MNL_CB_OK;
        items = realloc(l->items, (l->n + 1) * sizeof(RtnlAddress));
        if (!items) {
                l->oom = true;
                return MNL_CB_ERROR;
        }
        l->items = items;
        l->items[l->n++] = a;
        return MNL_CB_OK;
}

int rtnl_addr_list(Rtnl *rtnl, int ifindex, int family, RtnlAddress **ret, size_t *ret_n) {
        char buf[RTNL_REQUEST_SIZE];
        struct nlmsghdr *nlh;
        struct ifaddrmsg *ifa;
        AddrList l = { .ifindex = ifindex, .family = family };
        int r;

        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = RTM_GETADDR;
        nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
        ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
        ifa->ifa_family = (uint8_t) family;
        r = rtnl_call(rtnl, nlh, addr_list_cb, &l);
        if (l.oom)
                r = -ENOMEM;
        if (r < 0) {
                free(l.items);
                return r;
        }
        *ret = l.items;
        *ret_n = l.n;
        return 0;
}

static int route_change(Rtnl *rtnl, int ifindex, const MptPrefix *dst, bool add) {
        char buf[RTNL_REQUEST_SIZE];
        struct nlmsghdr *nlh;
        struct rtmsg *rtm;
        MptInAddr masked = dst->addr;

        /* The kernel insists on a network address: clear the host bits. */
        for (unsigned i = dst->prefixlen; i < family_address_size(dst->family) * 8; i++)
                masked.bytes[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));

        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = add ? RTM_NEWROUTE : RTM_DELROUTE;
        nlh->nlmsg_flags = NLM_F_REQUEST | (add ? NLM_F_CREATE | NLM_F_EXCL : 0);
        rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
        rtm->rtm_family = (uint8_t) dst->family;
        rtm->rtm_dst_len = dst->prefixlen;
        rtm->rtm_table = RT_TABLE_MAIN;
        rtm->rtm_protocol = RTPROT_STATIC;
        rtm->rtm_scope = RT_SCOPE_LINK;
        rtm->rtm_type = RTN_UNICAST;
        mnl_attr_put(nlh, RTA_DST, family_address_size(dst->family), &masked);
        mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t) ifindex);
        return rtnl_call(rtnl, nlh, NULL, NULL);
}

int rtnl_route_add(Rtnl *rtnl, int ifindex, const MptPrefix *dst) {
        return route_change(rtnl, ifindex, dst, true);
}

int rtnl_route_del(Rtnl *rtnl, int ifindex, const MptPrefix *dst) {
        return route_change(rtnl, ifindex, dst, false);
}

int rtnl_route_check(Rtnl *rtnl, const MptAddress *dst, int ifindex) {
        char buf[RTNL_REQUEST_SIZE];
        struct nlmsghdr *nlh;
        struct rtmsg *rtm;
        int r;

        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = RTM_GETROUTE;
        nlh->nlmsg_flags = NLM_F_REQUEST;
        rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
        rtm->rtm_family = (uint8_t) dst->family;
        rtm->rtm_dst_len = (uint8_t) (family_address_size(dst->family) * 8);
        rtm->rtm_flags = RTM_F_FIB_MATCH;
        mnl_attr_put(nlh, RTA_DST, family_address_size(dst->family), &dst->addr);
        if (ifindex > 0)
                mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t) ifindex);
        r = rtnl_call(rtnl, nlh, NULL, NULL);
        return r;
}

struct RtnlMonitor {
        struct mnl_socket *nl;
        sd_event_source *source;
        RtnlMonitorHandlers handlers;
        void *userdata;
        char *buf;
};

static int monitor_cb(const struct nlmsghdr *nlh, void *data) {
        RtnlMonitor *m = data;

        switch (nlh->nlmsg_type) {
        case RTM_NEWLINK:
        case RTM_DELLINK: {
                RtnlLink l;
                if (rtnl_parse_link(nlh, &l) >= 0 && m->handlers.link)
                        m->handlers.link(m->userdata, nlh->nlmsg_type == RTM_DELLINK, &l);
                break;
        }
        case RTM_NEWADDR:
        case RTM_DELADDR: {
                RtnlAddress a;
                if (rtnl_parse_addr(nlh, &a) >= 0 && m->handlers.address)
                        m->handlers.address(m->userdata, nlh->nlmsg_type == RTM_DELADDR, &a);
                break;
        }
        case RTM_NEWROUTE:
        case RTM_DELROUTE:
                if (m->handlers.route)
                        m->handlers.route(m->userdata);
                break;
        default:
                break;
        }
        return MNL_CB_OK;
}

static int on_monitor(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        RtnlMonitor *m = userdata;

        for (unsigned i = 0; i < RTNL_MONITOR_BATCH; i++) {
                ssize_t n = recv(fd, m->buf, RTNL_BUFFER_SIZE, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == ENOBUFS) {
                                /* The kernel dropped events: resynchronise from scratch. */
                                if (m->handlers.overrun)
                                        m->handlers.overrun(m->userdata);
                                continue;
                        }
                        break; /* EAGAIN, EINTR */
                }
                /* Notifications carry sequence 0 and port 0: accept them all. */
                (void) mnl_cb_run(m->buf, (size_t) n, 0, 0, monitor_cb, m);
        }
        return 0;
}

int rtnl_monitor_new(sd_event *event, const RtnlMonitorHandlers *handlers, void *userdata, RtnlMonitor **ret) {
        _cleanup_(rtnl_monitor_freep) RtnlMonitor *m = NULL;
        static const unsigned groups[] = {
                RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE,
        };
        int size = RTNL_MONITOR_RCVBUF, r;

        m = calloc(1, sizeof(RtnlMonitor));
        if (!m)
                return -ENOMEM;
        m->handlers = *handlers;
        m->userdata = userdata;
        m->buf = malloc(RTNL_BUFFER_SIZE);
        if (!m->buf)
                return -ENOMEM;
        m->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (!m->nl)
                return -errno;
        if (mnl_socket_bind(m->nl, 0, MNL_SOCKET_AUTOPID) < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(groups); i++) {
                unsigned g = groups[i];
                if (mnl_socket_setsockopt(m->nl, NETLINK_ADD_MEMBERSHIP, &g, sizeof g) < 0)
                        return -errno;
        }
        if (setsockopt(mnl_socket_get_fd(m->nl), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
                (void) setsockopt(mnl_socket_get_fd(m->nl), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
        r = sd_event_add_io(event, &m->source, mnl_socket_get_fd(m->nl), EPOLLIN, on_monitor, m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

RtnlMonitor *rtnl_monitor_free(RtnlMonitor *m) {
        if (!m)
                return NULL;
        sd_event_source_disable_unref(m->source);
        if (m->nl)
                mnl_socket_close(m->nl);
        free(m->buf);
        return mfree(m);
}
