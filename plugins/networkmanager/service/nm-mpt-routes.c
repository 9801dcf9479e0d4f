/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nm-mpt-routes.h"

/* The metric of NetworkManager's own route to the VPN gateway (NM_VPN_ROUTE_METRIC_DEFAULT),
 * below the metrics of default routes, which do not compete with a host route anyway. */
#define HOST_ROUTE_METRIC 50

#define REQUEST_SIZE 512
#define REPLY_SIZE 8192

typedef struct Reply {
        MptHostRoute *route;
        bool found;
} Reply;

static int attr_cb(const struct nlattr *attr, void *data) {
        const struct nlattr **tb = data;
        int type = mnl_attr_get_type(attr);

        if (mnl_attr_type_valid(attr, RTA_MAX) < 0)
                return MNL_CB_OK;
        tb[type] = attr;
        return MNL_CB_OK;
}

static int route_cb(const struct nlmsghdr *nlh, void *data) {
        Reply *reply = data;
        const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
        const struct nlattr *tb[RTA_MAX + 1] = {};
        size_t size = family_address_size(rtm->rtm_family);

        if (nlh->nlmsg_type != RTM_NEWROUTE)
                return MNL_CB_OK;
        mnl_attr_parse(nlh, sizeof(*rtm), attr_cb, tb);
        if (!tb[RTA_OIF])
                return MNL_CB_OK;
        reply->route->ifindex = (int) mnl_attr_get_u32(tb[RTA_OIF]);
        if (tb[RTA_GATEWAY] && mnl_attr_get_payload_len(tb[RTA_GATEWAY]) == size) {
                reply->route->gateway.family = rtm->rtm_family;
                memcpy(&reply->route->gateway.addr, mnl_attr_get_payload(tb[RTA_GATEWAY]), size);
        }
        reply->found = true;
        return MNL_CB_OK;
}

static int rtnl_call(struct nlmsghdr *nlh, mnl_cb_t cb, void *data) {
        char buf[REPLY_SIZE];
        struct mnl_socket *nl;
        unsigned portid, seq;
        int r = 0;
        ssize_t n;

        nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
        if (!nl)
                return -errno;
        if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
                r = -errno;
                goto out;
        }
        portid = mnl_socket_get_portid(nl);
        seq = (unsigned) time(NULL);
        nlh->nlmsg_seq = seq;
        nlh->nlmsg_flags |= NLM_F_ACK;
        if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
                r = -errno;
                goto out;
        }
        for (;;) {
                n = mnl_socket_recvfrom(nl, buf, sizeof buf);
                if (n < 0) {
                        r = -errno;
                        break;
                }
                r = mnl_cb_run(buf, (size_t) n, seq, portid, cb, data);
                if (r < 0) {
                        r = -errno;
                        break;
                }
                if (r == MNL_CB_STOP) {
                        r = 0;
                        break;
                }
        }
out:
        mnl_socket_close(nl);
        return r;
}

int mpt_host_route_resolve(const MptAddress *dst, int ifindex, MptHostRoute *ret) {
        char buf[REQUEST_SIZE];
        size_t size = family_address_size(dst->family);
        struct nlmsghdr *nlh;
        struct rtmsg *rtm;
        Reply reply;
        int r;

        *ret = (MptHostRoute) { .family = dst->family, .dst = *dst };
        reply = (Reply) { .route = ret };
        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = RTM_GETROUTE;
        nlh->nlmsg_flags = NLM_F_REQUEST;
        rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
        rtm->rtm_family = (unsigned char) dst->family;
        rtm->rtm_dst_len = (unsigned char) (size * 8);
        mnl_attr_put(nlh, RTA_DST, size, &dst->addr);
        if (ifindex > 0)
                mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t) ifindex);
        r = rtnl_call(nlh, route_cb, &reply);
        if (r < 0)
                return r;
        return reply.found ? 0 : -EHOSTUNREACH;
}

static int route_change(const MptHostRoute *r, bool add, bool onlink) {
        char buf[REQUEST_SIZE];
        size_t size = family_address_size(r->family);
        struct nlmsghdr *nlh;
        struct rtmsg *rtm;

        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = add ? RTM_NEWROUTE : RTM_DELROUTE;
        nlh->nlmsg_flags = NLM_F_REQUEST | (add ? NLM_F_CREATE | NLM_F_EXCL : 0);
        rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
        rtm->rtm_family = (unsigned char) r->family;
        rtm->rtm_dst_len = (unsigned char) (size * 8);
        rtm->rtm_table = RT_TABLE_MAIN;
        rtm->rtm_protocol = RTPROT_STATIC;
        rtm->rtm_type = RTN_UNICAST;
        rtm->rtm_scope = r->gateway.family ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
        if (onlink)
                rtm->rtm_flags |= RTNH_F_ONLINK;
        mnl_attr_put(nlh, RTA_DST, size, &r->dst.addr);
        if (r->gateway.family)
                mnl_attr_put(nlh, RTA_GATEWAY, size, &r->gateway.addr);
        mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t) r->ifindex);
        mnl_attr_put_u32(nlh, RTA_PRIORITY, HOST_ROUTE_METRIC);
        return rtnl_call(nlh, NULL, NULL);
}

int mpt_host_route_add(const MptHostRoute *r) {
        int k = route_change(r, true, false);

        /* A gateway the kernel reaches through an on-link route (no subnet of the device
         * covers it) is refused as a next hop unless it is declared on-link, as that route does. */
        if ((k == -ENETUNREACH || k == -EINVAL) && r->gateway.family)
                k = route_change(r, true, true);
        return k;
}

int mpt_host_route_del(const MptHostRoute *r) {
        return route_change(r, false, false);
}
