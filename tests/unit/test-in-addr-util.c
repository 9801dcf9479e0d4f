/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <arpa/inet.h>
#include <sys/un.h>

#include "in-addr-util.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>

static void add_vector(const char *group, size_t i, const char *input, const void *data, GTestDataFunc fn) {
        g_autofree char *name = g_strdup(input ?: "NULL");
        g_autofree char *path = NULL;

        for (char *p = name; *p; p++)
                if (!g_ascii_isalnum(*p) && !strchr("._-", *p))
                        *p = '_';
        path = g_strdup_printf("/mpt/in-addr-util/%s/%02zu-%s", group, i, name);
        g_test_add_data_func(path, data, fn);
}

/* ---- address_from_string(), address_to_string() ---- */

typedef struct {
        const char *s;
        int r;
        int family;
        uint8_t bytes[16];
        const char *canonical; /* address_to_string() of the result */
} AddressVector;

static const AddressVector address_vectors[] = {
        { "192.0.2.1", 0, AF_INET, { 192, 0, 2, 1 }, "192.0.2.1" },
        { "0.0.0.0", 0, AF_INET, { 0 }, "0.0.0.0" },
        { "255.255.255.255", 0, AF_INET, { 255, 255, 255, 255 }, "255.255.255.255" },
        { "2001:db8::1", 0, AF_INET6, { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 }, "2001:db8::1" },
        { "2001:DB8:0:0:0:0:0:1", 0, AF_INET6, { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 }, "2001:db8::1" },
        { "::1", 0, AF_INET6, { [15] = 1 }, "::1" },
        { "::", 0, AF_INET6, { 0 }, "::" },
        { "fe80::1", 0, AF_INET6, { 0xfe, 0x80, [15] = 1 }, "fe80::1" },
        /* A mapped address written as IPv6 stays IPv6 here; only sockaddrs are unmapped. */
        { "::ffff:10.0.0.1", 0, AF_INET6, { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 }, "::ffff:10.0.0.1" },
        { "", -EINVAL },
        { NULL, -EINVAL },
        { "1.2.3", -EINVAL },
        { "1.2.3.4.5", -EINVAL },
        { "256.0.0.1", -EINVAL },
        { "010.0.0.1", -EINVAL }, /* no octal octets, and no silent decimal reading either */
        { "0x7f.0.0.1", -EINVAL },
        { "1.2.3.4/24", -EINVAL },
        { " 1.2.3.4", -EINVAL },
        { "1.2.3.4 ", -EINVAL },
        { "fe80::1%eth0", -EINVAL },
        { "2001:db8:::1", -EINVAL },
        { "[::1]", -EINVAL },
        { "localhost", -EINVAL },
};

static void test_address_from_string(const void *data) {
        const AddressVector *v = data;
        MptAddress a = { .family = 4242 };
        char buf[MPT_ADDRESS_STRLEN];

        g_assert_cmpint(address_from_string(v->s, &a), ==, v->r);
        if (v->r < 0) {
                g_assert_cmpint(a.family, ==, 4242); /* untouched */
                return;
        }
        g_assert_cmpint(a.family, ==, v->family);
        g_assert_cmpmem(a.addr.bytes, family_address_size(v->family), v->bytes, family_address_size(v->family));
        g_assert_cmpstr(address_to_string(&a, buf), ==, v->canonical);
        g_assert_true(address_is_set(&a));
}

static void test_address_to_string_unset(void) {
        char buf[MPT_ADDRESS_STRLEN];
        MptAddress a = {};

        g_assert_cmpstr(address_to_string(&a, buf), ==, "-");
        g_assert_cmpstr(address_to_string(NULL, buf), ==, "-");
        a.family = AF_UNIX;
        g_assert_cmpstr(address_to_string(&a, buf), ==, "-");
}

static void test_address_longest(void) {
        char buf[MPT_ADDRESS_STRLEN];
        MptAddress a;
        MptPrefix p;

        /* The longest text forms must fit (INET6_ADDRSTRLEN - 1 characters, plus "/128"). */
        g_assert_cmpint(address_from_string("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", &a), ==, 0);
        g_assert_cmpstr(address_to_string(&a, buf), ==, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
        g_assert_cmpint(address_from_string("1111:2222:3333:4444:5555:6666:7777:8888", &a), ==, 0);
        g_assert_cmpstr(address_to_string(&a, buf), ==, "1111:2222:3333:4444:5555:6666:7777:8888");
        g_assert_cmpint(prefix_from_string("1111:2222:3333:4444:5555:6666:7777:8888/128", &p), ==, 0);
        g_assert_cmpstr(prefix_to_string(&p, buf), ==, "1111:2222:3333:4444:5555:6666:7777:8888/128");
}

/* ---- prefix_from_string(), prefix_to_string() ---- */

typedef struct {
        const char *s;
        int r;
        int family;
        unsigned prefixlen;
        const char *canonical;
} PrefixVector;

static const PrefixVector prefix_vectors[] = {
        { "10.0.0.0/8", 0, AF_INET, 8, "10.0.0.0/8" },
        { "10.0.0.1", 0, AF_INET, 32, "10.0.0.1/32" },        /* no length: a host */
        { "10.0.0.1/32", 0, AF_INET, 32, "10.0.0.1/32" },
        { "10.1.2.3/24", 0, AF_INET, 24, "10.1.2.3/24" },     /* an interface address keeps its host bits */
        { "0.0.0.0/0", 0, AF_INET, 0, "0.0.0.0/0" },
        { "10.0.0.0/08", 0, AF_INET, 8, "10.0.0.0/8" },       /* decimal */
        { "2001:db8::/32", 0, AF_INET6, 32, "2001:db8::/32" },
        { "::1", 0, AF_INET6, 128, "::1/128" },
        { "::/0", 0, AF_INET6, 0, "::/0" },
        { "fd00::1/128", 0, AF_INET6, 128, "fd00::1/128" },
        { "10.0.0.0/33", -ERANGE },
        { "10.0.0.0/99999999999", -ERANGE },
        { "2001:db8::/129", -ERANGE },
        { "10.0.0.0/", -EINVAL },
        { "10.0.0.0/x", -EINVAL },
        { "10.0.0.0/-1", -EINVAL },
        { "10.0.0.0/ 8", -EINVAL },
        { "10.0.0.0/8/8", -EINVAL },
        { "/8", -EINVAL },
        { "", -EINVAL },
        { NULL, -EINVAL },
        { "10.0.0/8", -EINVAL },
        { "host/8", -EINVAL },
};

static void test_prefix_from_string(const void *data) {
        const PrefixVector *v = data;
        MptPrefix p = { .family = 4242 };
        char buf[MPT_ADDRESS_STRLEN];

        g_assert_cmpint(prefix_from_string(v->s, &p), ==, v->r);
        if (v->r < 0) {
                g_assert_cmpint(p.family, ==, 4242);
                return;
        }
        g_assert_cmpint(p.family, ==, v->family);
        g_assert_cmpuint(p.prefixlen, ==, v->prefixlen);
        g_assert_cmpstr(prefix_to_string(&p, buf), ==, v->canonical);
}

static void test_prefix_to_string_unset(void) {
        char buf[MPT_ADDRESS_STRLEN];
        MptPrefix p = {};

        g_assert_cmpstr(prefix_to_string(&p, buf), ==, "-");
}

/* ---- predicates ---- */

static MptAddress addr(const char *s) {
        MptAddress a = {};

        g_assert_cmpint(address_from_string(s, &a), ==, 0);
        return a;
}

static void test_predicates(void) {
        MptAddress a, b, unset = {};

        g_assert_cmpuint(family_address_size(AF_INET), ==, 4);
        g_assert_cmpuint(family_address_size(AF_INET6), ==, 16);
        g_assert_cmpuint(family_address_size(AF_UNSPEC), ==, 0);
        g_assert_cmpuint(family_address_size(AF_UNIX), ==, 0);

        g_assert_false(address_is_set(&unset));
        g_assert_false(address_is_set(NULL));

        a = addr("192.0.2.1");
        b = addr("192.0.2.1");
        g_assert_true(address_equal(&a, &b));
        b = addr("192.0.2.2");
        g_assert_false(address_equal(&a, &b));
        /* Same bytes, different family. */
        b = addr("c000:201::");
        g_assert_false(address_equal(&a, &b));
        b.family = AF_INET;
        g_assert_true(address_equal(&a, &b)); /* only the family's bytes count */

        a = addr("0.0.0.0");
        g_assert_true(address_is_null(&a));
        a = addr("::");
        g_assert_true(address_is_null(&a));
        a = addr("::1");
        g_assert_false(address_is_null(&a));
        a = addr("0.0.0.1");
        g_assert_false(address_is_null(&a));

        a = addr("224.0.0.1");
        g_assert_true(address_is_multicast(&a));
        a = addr("239.255.255.255");
        g_assert_true(address_is_multicast(&a));
        a = addr("223.255.255.255");
        g_assert_false(address_is_multicast(&a));
        a = addr("240.0.0.1");
        g_assert_false(address_is_multicast(&a));
        a = addr("ff02::1");
        g_assert_true(address_is_multicast(&a));
        a = addr("fe80::1");
        g_assert_false(address_is_multicast(&a));
        g_assert_false(address_is_multicast(&unset));

        a = addr("169.254.1.1");
        g_assert_true(address_is_link_local(&a));
        a = addr("169.255.1.1");
        g_assert_false(address_is_link_local(&a));
        a = addr("fe80::1");
        g_assert_true(address_is_link_local(&a));
        a = addr("fec0::1");
        g_assert_false(address_is_link_local(&a));
        a = addr("2001:db8::1");
        g_assert_false(address_is_link_local(&a));
        g_assert_false(address_is_link_local(&unset));
}

/* ---- socket addresses ---- */

static void test_sockaddr_from_address(void) {
        MptSockaddr sa;
        MptAddress a;

        a = addr("192.0.2.1");
        g_assert_cmpuint(sockaddr_from_address(&a, 4754, 3, &sa), ==, sizeof(struct sockaddr_in));
        g_assert_cmpint(sa.sa.sa_family, ==, AF_INET);
        g_assert_cmpuint(sa.in.sin_port, ==, htons(4754));
        g_assert_cmpuint(sa.in.sin_addr.s_addr, ==, htonl(0xc0000201));

        a = addr("2001:db8::1");
        g_assert_cmpuint(sockaddr_from_address(&a, 65535, 3, &sa), ==, sizeof(struct sockaddr_in6));
        g_assert_cmpint(sa.sa.sa_family, ==, AF_INET6);
        g_assert_cmpuint(sa.in6.sin6_port, ==, htons(65535));
        g_assert_cmpmem(&sa.in6.sin6_addr, 16, a.addr.bytes, 16);
        g_assert_cmpuint(sa.in6.sin6_scope_id, ==, 0); /* global: no scope */
        g_assert_cmpuint(sa.in6.sin6_flowinfo, ==, 0);

        a = addr("fe80::1");
        g_assert_cmpuint(sockaddr_from_address(&a, 1, 7, &sa), ==, sizeof(struct sockaddr_in6));
        g_assert_cmpuint(sa.in6.sin6_scope_id, ==, 7);
        g_assert_cmpuint(sockaddr_from_address(&a, 1, 0, &sa), ==, sizeof(struct sockaddr_in6));
        g_assert_cmpuint(sa.in6.sin6_scope_id, ==, 0);
        g_assert_cmpuint(sockaddr_from_address(&a, 1, -1, &sa), ==, sizeof(struct sockaddr_in6));
        g_assert_cmpuint(sa.in6.sin6_scope_id, ==, 0);

        a = (MptAddress) {};
        g_assert_cmpuint(sockaddr_from_address(&a, 1, 0, &sa), ==, 0);
}

static void test_sockaddr_to_address(void) {
        MptSockaddr sa = {};
        MptAddress a = {}, expect;
        uint16_t port = 0;

        sa.in = (struct sockaddr_in) { .sin_family = AF_INET, .sin_port = htons(23456) };
        sa.in.sin_addr.s_addr = htonl(0x0a000002);
        g_assert_cmpint(sockaddr_to_address(&sa, &a, &port), ==, 0);
        expect = addr("10.0.0.2");
        g_assert_true(address_equal(&a, &expect));
        g_assert_cmpuint(port, ==, 23456);

        /* IPv4-mapped IPv6 (what a dual-stack socket reports) turns into plain IPv4. */
        sa = (MptSockaddr) {};
        sa.in6.sin6_family = AF_INET6;
        sa.in6.sin6_port = htons(4754);
        g_assert_cmpint(inet_pton(AF_INET6, "::ffff:10.0.0.1", &sa.in6.sin6_addr), ==, 1);
        g_assert_cmpint(sockaddr_to_address(&sa, &a, &port), ==, 0);
        g_assert_cmpint(a.family, ==, AF_INET);
        expect = addr("10.0.0.1");
        g_assert_true(address_equal(&a, &expect));
        g_assert_cmpuint(port, ==, 4754);

        /* Not mapped: ::10.0.0.1 (IPv4-compatible, deprecated) stays IPv6. */
        g_assert_cmpint(inet_pton(AF_INET6, "::10.0.0.1", &sa.in6.sin6_addr), ==, 1);
        g_assert_cmpint(sockaddr_to_address(&sa, &a, NULL), ==, 0);
        g_assert_cmpint(a.family, ==, AF_INET6);

        g_assert_cmpint(inet_pton(AF_INET6, "2001:db8::5", &sa.in6.sin6_addr), ==, 1);
        g_assert_cmpint(sockaddr_to_address(&sa, NULL, &port), ==, 0);
        g_assert_cmpuint(port, ==, 4754);
        g_assert_cmpint(sockaddr_to_address(&sa, &a, NULL), ==, 0);
        expect = addr("2001:db8::5");
        g_assert_true(address_equal(&a, &expect));

        /* Other families are refused and leave the outputs alone. */
        sa = (MptSockaddr) {};
        sa.sa.sa_family = AF_UNIX;
        a = (MptAddress) { .family = 4242 };
        port = 4242;
        g_assert_cmpint(sockaddr_to_address(&sa, &a, &port), ==, -EAFNOSUPPORT);
        g_assert_cmpint(a.family, ==, 4242);
        g_assert_cmpuint(port, ==, 4242);
        sa.sa.sa_family = AF_UNSPEC;
        g_assert_cmpint(sockaddr_to_address(&sa, &a, &port), ==, -EAFNOSUPPORT);
}

static void test_sockaddr_roundtrip(void) {
        static const char *const addrs[] = { "192.0.2.1", "10.255.0.1", "2001:db8::1", "fe80::42", "::1" };

        for (size_t i = 0; i < G_N_ELEMENTS(addrs); i++) {
                MptAddress a = addr(addrs[i]), b;
                MptSockaddr sa;
                uint16_t port;

                g_assert_cmpuint(sockaddr_from_address(&a, (uint16_t) (1000 + i), 2, &sa), >, 0);
                g_assert_cmpint(sockaddr_to_address(&sa, &b, &port), ==, 0);
                g_assert_true(address_equal(&a, &b));
                g_assert_cmpuint(port, ==, 1000 + i);
        }
}

static void test_sockaddr_to_string(void) {
        char buf[MPT_ADDRESS_STRLEN];
        MptSockaddr sa;
        MptAddress a;

        a = addr("192.0.2.1");
        sockaddr_from_address(&a, 4754, 0, &sa);
        g_assert_cmpstr(sockaddr_to_string(&sa, buf), ==, "192.0.2.1:4754");

        a = addr("2001:db8::1");
        sockaddr_from_address(&a, 4754, 0, &sa);
        g_assert_cmpstr(sockaddr_to_string(&sa, buf), ==, "[2001:db8::1]:4754");

        a = addr("1111:2222:3333:4444:5555:6666:7777:8888");
        sockaddr_from_address(&a, 65535, 0, &sa);
        g_assert_cmpstr(sockaddr_to_string(&sa, buf), ==, "[1111:2222:3333:4444:5555:6666:7777:8888]:65535");

        /* Mapped addresses print as IPv4, without brackets. */
        sa = (MptSockaddr) {};
        sa.in6.sin6_family = AF_INET6;
        sa.in6.sin6_port = htons(1);
        g_assert_cmpint(inet_pton(AF_INET6, "::ffff:10.0.0.1", &sa.in6.sin6_addr), ==, 1);
        g_assert_cmpstr(sockaddr_to_string(&sa, buf), ==, "10.0.0.1:1");

        sa = (MptSockaddr) {};
        g_assert_cmpstr(sockaddr_to_string(&sa, buf), ==, "-");
}

/* ---- the 16-byte wire form (spec 0.2) ---- */

static void test_wire16(void) {
        static const uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff, 0x0a, 0x00, 0x00, 0x02 };
        uint8_t out[16];
        MptAddress a, b;

        /* IPv4 as ::ffff:a.b.c.d: bytes 0-9 zero, 10-11 0xff, 12-15 the address. */
        a = addr("10.0.0.2");
        memset(out, 0xaa, sizeof out);
        address_to_wire16(&a, out);
        g_assert_cmpmem(out, 16, mapped, 16);
        address_from_wire16(out, &b);
        g_assert_cmpint(b.family, ==, AF_INET);
        g_assert_true(address_equal(&a, &b));

        a = addr("2001:db8::7");
        address_to_wire16(&a, out);
        g_assert_cmpmem(out, 16, a.addr.bytes, 16);
        address_from_wire16(out, &b);
        g_assert_cmpint(b.family, ==, AF_INET6);
        g_assert_true(address_equal(&a, &b));

        /* Unset: all zero, which reads back as "::". */
        a = (MptAddress) {};
        memset(out, 0xaa, sizeof out);
        address_to_wire16(&a, out);
        for (size_t i = 0; i < 16; i++)
                g_assert_cmpuint(out[i], ==, 0);
        address_from_wire16(out, &b);
        g_assert_cmpint(b.family, ==, AF_INET6);
        g_assert_true(address_is_null(&b));

        /* Almost mapped (0xfe at byte 11) is IPv6. */
        memcpy(out, mapped, 16);
        out[11] = 0xfe;
        address_from_wire16(out, &b);
        g_assert_cmpint(b.family, ==, AF_INET6);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        for (size_t i = 0; i < G_N_ELEMENTS(address_vectors); i++)
                add_vector("address_from_string", i, address_vectors[i].s, &address_vectors[i],
                           test_address_from_string);
        g_test_add_func("/mpt/in-addr-util/address_to_string/unset", test_address_to_string_unset);
        g_test_add_func("/mpt/in-addr-util/address_to_string/longest", test_address_longest);
        for (size_t i = 0; i < G_N_ELEMENTS(prefix_vectors); i++)
                add_vector("prefix_from_string", i, prefix_vectors[i].s, &prefix_vectors[i],
                           test_prefix_from_string);
        g_test_add_func("/mpt/in-addr-util/prefix_to_string/unset", test_prefix_to_string_unset);
        g_test_add_func("/mpt/in-addr-util/predicates", test_predicates);
        g_test_add_func("/mpt/in-addr-util/sockaddr_from_address", test_sockaddr_from_address);
        g_test_add_func("/mpt/in-addr-util/sockaddr_to_address", test_sockaddr_to_address);
        g_test_add_func("/mpt/in-addr-util/sockaddr_roundtrip", test_sockaddr_roundtrip);
        g_test_add_func("/mpt/in-addr-util/sockaddr_to_string", test_sockaddr_to_string);
        g_test_add_func("/mpt/in-addr-util/wire16", test_wire16);

        return g_test_run();
}
