/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <arpa/inet.h>
#include <net/if.h>

#include "macro.h"
#include "in-addr-util.h"
#include "parse-util.h"

size_t family_address_size(int family) {
        switch (family) {
        case AF_INET:
                return 4;
        case AF_INET6:
                return 16;
        default:
                return 0;
        }
}

bool address_is_set(const MptAddress *a) {
        return a && IN_SET_FAMILY(a->family);
}

bool address_equal(const MptAddress *a, const MptAddress *b) {
        if (a->family != b->family)
                return false;
        return memcmp(&a->addr, &b->addr, family_address_size(a->family)) == 0;
}

bool address_is_null(const MptAddress *a) {
        static const uint8_t zero[16];
        return memcmp(&a->addr, zero, family_address_size(a->family)) == 0;
}

bool address_is_multicast(const MptAddress *a) {
        if (a->family == AF_INET)
                return IN_MULTICAST(ntohl(a->addr.in.s_addr));
        if (a->family == AF_INET6)
                return IN6_IS_ADDR_MULTICAST(&a->addr.in6);
        return false;
}

bool address_is_link_local(const MptAddress *a) {
        if (a->family == AF_INET)
                return (ntohl(a->addr.in.s_addr) & 0xffff0000u) == 0xa9fe0000u;
        if (a->family == AF_INET6)
                return IN6_IS_ADDR_LINKLOCAL(&a->addr.in6);
        return false;
}

int address_from_string(const char *s, MptAddress *ret) {
        MptAddress a = {};

        if (isempty(s))
                return -EINVAL;
        if (inet_pton(AF_INET, s, &a.addr.in) == 1)
                a.family = AF_INET;
        else if (inet_pton(AF_INET6, s, &a.addr.in6) == 1)
                a.family = AF_INET6;
        else
                return -EINVAL;
        *ret = a;
        return 0;
}

int prefix_from_string(const char *s, MptPrefix *ret) {
        _cleanup_free_ char *addr = NULL;
        const char *slash;
        MptAddress a;
        unsigned len;
        int r;

        if (isempty(s))
                return -EINVAL;
        slash = strchr(s, '/');
        addr = slash ? strndup(s, slash - s) : strdup(s);
        if (!addr)
                return -ENOMEM;
        r = address_from_string(addr, &a);
        if (r < 0)
                return r;
        if (slash) {
                r = safe_atou_full(slash + 1, 10, &len);
                if (r < 0)
                        return r; /* -EINVAL for "/", "/x"; -ERANGE for a huge number */
                if (len > family_address_size(a.family) * 8)
                        return -ERANGE;
        } else
                len = family_address_size(a.family) * 8;

        *ret = (MptPrefix) { .family = a.family, .addr = a.addr, .prefixlen = len };
        return 0;
}

const char *address_to_string(const MptAddress *a, char buf[static MPT_ADDRESS_STRLEN]) {
        if (!a || !IN_SET_FAMILY(a->family))
                return strcpy(buf, "-");
        if (!inet_ntop(a->family, &a->addr, buf, MPT_ADDRESS_STRLEN))
                return strcpy(buf, "?");
        return buf;
}

const char *prefix_to_string(const MptPrefix *p, char buf[static MPT_ADDRESS_STRLEN]) {
        MptAddress a = { .family = p->family, .addr = p->addr };
        size_t l;

        address_to_string(&a, buf);
        if (!IN_SET_FAMILY(p->family))
                return buf;
        l = strlen(buf);
        snprintf(buf + l, MPT_ADDRESS_STRLEN - l, "/%u", p->prefixlen);
        return buf;
}

socklen_t sockaddr_from_address(const MptAddress *a, uint16_t port, int ifindex, MptSockaddr *ret) {
        *ret = (MptSockaddr) {};
        if (a->family == AF_INET) {
                ret->in.sin_family = AF_INET;
                ret->in.sin_port = htons(port);
                ret->in.sin_addr = a->addr.in;
                return sizeof(struct sockaddr_in);
        }
        if (a->family == AF_INET6) {
                ret->in6.sin6_family = AF_INET6;
                ret->in6.sin6_port = htons(port);
                ret->in6.sin6_addr = a->addr.in6;
                if (IN6_IS_ADDR_LINKLOCAL(&a->addr.in6))
                        ret->in6.sin6_scope_id = ifindex > 0 ? (uint32_t) ifindex : 0;
                return sizeof(struct sockaddr_in6);
        }
        return 0;
}

int sockaddr_to_address(const MptSockaddr *sa, MptAddress *ret_addr, uint16_t *ret_port) {
        MptAddress a = {};
        uint16_t port;

        switch (sa->sa.sa_family) {
        case AF_INET:
                a.family = AF_INET;
                a.addr.in = sa->in.sin_addr;
                port = ntohs(sa->in.sin_port);
                break;
        case AF_INET6:
                if (IN6_IS_ADDR_V4MAPPED(&sa->in6.sin6_addr)) {
                        a.family = AF_INET;
                        memcpy(&a.addr.in, sa->in6.sin6_addr.s6_addr + 12, 4);
                } else {
                        a.family = AF_INET6;
                        a.addr.in6 = sa->in6.sin6_addr;
                }
                port = ntohs(sa->in6.sin6_port);
                break;
        default:
                return -EAFNOSUPPORT;
        }
        if (ret_addr)
                *ret_addr = a;
        if (ret_port)
                *ret_port = port;
        return 0;
}

const char *sockaddr_to_string(const MptSockaddr *sa, char buf[static MPT_ADDRESS_STRLEN]) {
        char a[INET6_ADDRSTRLEN];
        MptAddress addr;
        uint16_t port;

        if (sockaddr_to_address(sa, &addr, &port) < 0 || !inet_ntop(addr.family, &addr.addr, a, sizeof a))
                return strcpy(buf, "-");
        if (addr.family == AF_INET6)
                snprintf(buf, MPT_ADDRESS_STRLEN, "[%s]:%u", a, port);
        else
                snprintf(buf, MPT_ADDRESS_STRLEN, "%s:%u", a, port);
        return buf;
}

void address_to_wire16(const MptAddress *a, uint8_t out[static 16]) {
        memset(out, 0, 16);
        if (a->family == AF_INET) {
                out[10] = out[11] = 0xff;
                memcpy(out + 12, &a->addr.in, 4);
        } else if (a->family == AF_INET6)
                memcpy(out, &a->addr.in6, 16);
}

void address_from_wire16(const uint8_t in[static 16], MptAddress *ret) {
        static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

        *ret = (MptAddress) {};
        if (memcmp(in, mapped, 12) == 0) {
                ret->family = AF_INET;
                memcpy(&ret->addr.in, in + 12, 4);
        } else {
                ret->family = AF_INET6;
                memcpy(&ret->addr.in6, in, 16);
        }
}
