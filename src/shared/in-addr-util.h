/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "macro.h"

#define IN_SET_FAMILY(f) ((f) == AF_INET || (f) == AF_INET6)

typedef union MptInAddr {
        struct in_addr in;
        struct in6_addr in6;
        uint8_t bytes[16];
} MptInAddr;

/* An address with its family; family AF_UNSPEC means "unset". */
typedef struct MptAddress {
        int family;
        MptInAddr addr;
} MptAddress;

typedef struct MptPrefix {
        int family;
        MptInAddr addr;
        unsigned char prefixlen;
} MptPrefix;

typedef union MptSockaddr {
        struct sockaddr sa;
        struct sockaddr_in in;
        struct sockaddr_in6 in6;
        struct sockaddr_storage storage;
} MptSockaddr;

/* Longest text form of an address, with room for "[...]:65535%ifname". */
#define MPT_ADDRESS_STRLEN (INET6_ADDRSTRLEN + 2 + 6 + 17)

size_t family_address_size(int family) _const_;
bool address_is_set(const MptAddress *a) _pure_;
bool address_equal(const MptAddress *a, const MptAddress *b) _pure_;
bool address_is_null(const MptAddress *a) _pure_;
bool address_is_multicast(const MptAddress *a) _pure_;
bool address_is_link_local(const MptAddress *a) _pure_;

int address_from_string(const char *s, MptAddress *ret);
int prefix_from_string(const char *s, MptPrefix *ret);
const char *address_to_string(const MptAddress *a, char buf[static MPT_ADDRESS_STRLEN]);
const char *prefix_to_string(const MptPrefix *p, char buf[static MPT_ADDRESS_STRLEN]);

/* Build a socket address. IPv4 addresses give AF_INET; ifindex sets the IPv6 scope id. */
socklen_t sockaddr_from_address(const MptAddress *a, uint16_t port, int ifindex, MptSockaddr *ret);
/* Extract address and port, turning IPv4-mapped IPv6 into plain IPv4. Returns -EAFNOSUPPORT
 * for other families. */
int sockaddr_to_address(const MptSockaddr *sa, MptAddress *ret_addr, uint16_t *ret_port);
/* "192.0.2.1:4754" or "[2001:db8::1]:4754". */
const char *sockaddr_to_string(const MptSockaddr *sa, char buf[static MPT_ADDRESS_STRLEN]);

/* The 16-byte wire form used by MPT control frames: IPv6 as is, IPv4 as ::ffff:a.b.c.d. */
void address_to_wire16(const MptAddress *a, uint8_t out[static 16]);
void address_from_wire16(const uint8_t in[static 16], MptAddress *ret);
