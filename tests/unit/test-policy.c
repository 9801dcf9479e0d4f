/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Policy= rules (src/shared/policy.c): parsing with its reasons, the normalized text read back,
 * and matching real IPv4 and IPv6 headers (ports, DSCP, fragments, extension headers). */

#include <arpa/inet.h>
#include <netinet/in.h>

#include "policy.h"

#include <glib.h>

static MptPolicyRule parse_ok(const char *text) {
        MptPolicyRule r;
        char *err = NULL;

        if (mpt_policy_parse(text, &r, &err) != 0)
                g_error("'%s' refused: %s", text, err);
        g_assert_null(err);
        return r;
}

static void assert_refused(const char *text, const char *reason) {
        MptPolicyRule r;
        char *err = NULL;

        g_assert_cmpint(mpt_policy_parse(text, &r, &err), ==, -EINVAL);
        g_assert_nonnull(err);
        if (!strstr(err, reason))
                g_error("'%s': expected a reason with '%s', got '%s'", text, reason, err);
        free(err);
}

static void test_parse(void) {
        static const struct {
                const char *in, *out;
        } good[] = {
                { "lowest-latency", "lowest-latency" },
                { "proto udp dport 3478-3481,5060 lowest-latency", "proto udp dport 3478-3481,5060 lowest-latency" },
                { "dport 5060  proto   udp\tlowest-latency", "proto udp dport 5060 lowest-latency" },
                { "dscp EF,AF41,CS3,LE,VA,7 pinned lte,wifi", "dscp 1,7,24,34,44,46 pinned lte,wifi" },
                { "proto tcp,17,icmp port 22 aggregate", NULL }, /* icmp: refused below (no ports) */
                { "from 10.0.0.0/8,fd00::/8 to 192.0.2.1 aggregate", "from 10.0.0.0/8,fd00::/8 to 192.0.2.1 aggregate" },
                { "proto 47 pinned p0", "proto gre pinned p0" },
                { "dscp EF redundant", "dscp 46 redundant" },
                { "dscp EF redundant 2", "dscp 46 redundant" },
                { "proto udp redundant 4", "proto udp redundant 4" },
                { "sport 1-65535 port 80 proto sctp,dccp,udplite aggregate",
                  "proto sctp,dccp,udplite sport 1-65535 port 80 aggregate" },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
                MptPolicyRule r, again;
                g_autofree char *text = NULL, *text2 = NULL;
                char *err = NULL;

                if (!good[i].out)
                        continue;
                r = parse_ok(good[i].in);
                text = mpt_policy_format(&r);
                g_assert_cmpstr(text, ==, good[i].out);
                /* What it writes reads back as the same rule. */
                g_assert_cmpint(mpt_policy_parse(text, &again, &err), ==, 0);
                text2 = mpt_policy_format(&again);
                g_assert_cmpstr(text2, ==, text);
        }

        assert_refused("", "no mode");
        assert_refused("proto udp", "no mode");
        assert_refused("foo lowest-latency", "unknown word 'foo'");
        assert_refused("lowest-latency proto udp", "the mode comes last");
        assert_refused("pinned", "needs the names of its paths");
        assert_refused("pinned a,a", "named twice");
        assert_refused("pinned -x", "not a path's name");
        assert_refused("proto udp proto tcp aggregate", "given twice");
        assert_refused("proto", "needs a value");
        assert_refused("proto bogus aggregate", "'proto bogus'");
        assert_refused("proto 256 aggregate", "'proto 256'");
        assert_refused("dport 0 aggregate", "'dport 0'");
        assert_refused("dport 9-3 aggregate", "'dport 9-3'");
        assert_refused("dport 70000 aggregate", "'dport 70000'");
        assert_refused("dscp 64 aggregate", "'dscp 64'");
        assert_refused("dscp AF44 aggregate", "'dscp AF44'");
        assert_refused("to 10.0.0.0/33 aggregate", "'to 10.0.0.0/33'");
        assert_refused("port 1,2,3,4,5,6,7,8,9 aggregate", "at most 8");
        assert_refused("proto icmp port 80 aggregate", "protocol icmp has none");
        assert_refused("proto 47 dport 1 aggregate", "protocol gre has none");
        assert_refused("proto 200 dport 1 aggregate", "protocol 200 has none");
        assert_refused("redundant 1", "'redundant 1'");
        assert_refused("redundant 5", "'redundant 5'");
        assert_refused("redundant 3 x", "the mode comes last");
}

/* An IPv4 header (20 bytes) and the first 4 bytes of what follows. */
static size_t ipv4(uint8_t *b, uint8_t tos, uint8_t proto, const char *src, const char *dst, uint16_t sport,
                   uint16_t dport, bool later_fragment) {
        memset(b, 0, 28);
        b[0] = 0x45;
        b[1] = tos;
        b[3] = 28;
        if (later_fragment)
                b[7] = 10; /* offset 80 bytes */
        b[9] = proto;
        g_assert_cmpint(inet_pton(AF_INET, src, b + 12), ==, 1);
        g_assert_cmpint(inet_pton(AF_INET, dst, b + 16), ==, 1);
        b[20] = (uint8_t) (sport >> 8), b[21] = (uint8_t) sport;
        b[22] = (uint8_t) (dport >> 8), b[23] = (uint8_t) dport;
        return 28;
}

/* An IPv6 header, optionally a hop-by-hop options header and a fragment header, then 4 bytes. */
static size_t ipv6(uint8_t *b, uint8_t tclass, uint8_t proto, const char *src, const char *dst, uint16_t sport,
                   uint16_t dport, bool hop_by_hop, int fragment /* -1: none, 0: first, 1: later */) {
        size_t off = 40;
        uint8_t *next = b + 6;

        memset(b, 0, 80);
        b[0] = (uint8_t) (0x60 | tclass >> 4);
        b[1] = (uint8_t) (tclass << 4);
        g_assert_cmpint(inet_pton(AF_INET6, src, b + 8), ==, 1);
        g_assert_cmpint(inet_pton(AF_INET6, dst, b + 24), ==, 1);
        if (hop_by_hop) {
                *next = 0;
                next = b + off;
                b[off + 1] = 0; /* 8 bytes */
                off += 8;
        }
        if (fragment >= 0) {
                *next = 44;
                next = b + off;
                if (fragment > 0)
                        b[off + 3] = 0x10; /* offset 2 * 8 bytes */
                off += 8;
        }
        *next = proto;
        b[off] = (uint8_t) (sport >> 8), b[off + 1] = (uint8_t) sport;
        b[off + 2] = (uint8_t) (dport >> 8), b[off + 3] = (uint8_t) dport;
        return off + 4;
}

static void test_match(void) {
        MptPolicyRule rules[] = {
                parse_ok("proto udp dport 5060,10000-20000 lowest-latency"),
                parse_ok("dscp EF pinned lte"),
                parse_ok("proto icmp aggregate"),
                parse_ok("from 10.1.0.0/16,2001:db8::/32 to 192.0.2.0/25 pinned wifi"),
                parse_ok("port 22 pinned p0"),
        };
        size_t n = G_N_ELEMENTS(rules);
        uint8_t b[128];
        size_t len;

        /* Ports (and the first rule wins over the later one that also matches). */
        len = ipv4(b, 0xb8 /* EF */, IPPROTO_UDP, "10.0.0.1", "10.0.0.2", 40000, 5060, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, 0);
        len = ipv4(b, 0, IPPROTO_UDP, "10.0.0.1", "10.0.0.2", 40000, 15000, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, 0);
        len = ipv4(b, 0, IPPROTO_UDP, "10.0.0.1", "10.0.0.2", 40000, 20001, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, -1);
        /* DSCP (EF is 46: TOS 0xb8, ECN bits aside). */
        len = ipv4(b, 0xb8 | 0x01, IPPROTO_UDP, "10.0.0.1", "10.0.0.2", 40000, 80, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, 1);
        len = ipv4(b, 0xa0 /* CS5 */, IPPROTO_UDP, "10.0.0.1", "10.0.0.2", 40000, 80, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, -1);
        /* "icmp" is ICMP and ICMPv6. */
        len = ipv4(b, 0, IPPROTO_ICMP, "10.0.0.1", "10.0.0.2", 0x0800, 0, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, 2);
        len = ipv6(b, 0, IPPROTO_ICMPV6, "fd00::1", "fd00::2", 0x8000, 0, false, -1);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, 2);
        /* Prefixes, both families. */
        len = ipv4(b, 0, IPPROTO_TCP, "10.1.2.3", "192.0.2.100", 1, 2, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, 3);
        len = ipv4(b, 0, IPPROTO_TCP, "10.1.2.3", "192.0.2.200", 1, 2, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, -1);
        len = ipv4(b, 0, IPPROTO_TCP, "10.2.2.3", "192.0.2.100", 1, 2, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, -1);
        /* "port": either direction. */
        len = ipv4(b, 0, IPPROTO_TCP, "10.9.9.9", "10.0.0.2", 22, 50000, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, 4);
        len = ipv4(b, 0, IPPROTO_TCP, "10.9.9.9", "10.0.0.2", 50000, 22, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, 4);
        /* A later fragment has no ports. */
        len = ipv4(b, 0, IPPROTO_TCP, "10.9.9.9", "10.0.0.2", 50000, 22, true);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, -1);
        /* IPv6: traffic class, extension headers, fragments. */
        len = ipv6(b, 0, IPPROTO_UDP, "fd00::1", "fd00::2", 1234, 5060, false, -1);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, 0);
        len = ipv6(b, 0, IPPROTO_UDP, "fd00::1", "fd00::2", 1234, 5060, true, 0);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, 0);
        len = ipv6(b, 0, IPPROTO_UDP, "fd00::1", "fd00::2", 1234, 5060, true, 1);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, -1);
        len = ipv6(b, 0xb8, IPPROTO_TCP, "fd00::1", "fd00::2", 1, 2, false, -1);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, 1);
        len = ipv6(b, 0, IPPROTO_TCP, "2001:db8::5", "fd00::2", 1, 2, false, -1);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, -1); /* "to" is IPv4 only */
        /* Not IP, or cut short: nothing matches, nothing is read past the end. */
        len = ipv4(b, 0, IPPROTO_UDP, "10.0.0.1", "10.0.0.2", 40000, 5060, false);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, 19), ==, -1);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, 20), ==, -1); /* no ports: rule 0 cannot match */
        b[0] = 0x55;
        g_assert_cmpint(mpt_policy_classify(rules, n, b, len), ==, -1);
        len = ipv6(b, 0, IPPROTO_UDP, "fd00::1", "fd00::2", 1234, 5060, true, -1);
        g_assert_cmpint(mpt_policy_classify(rules, n, b, 44), ==, -1);
        g_assert_cmpint(mpt_policy_classify(rules, 0, b, len), ==, -1);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/mpt/policy/parse", test_parse);
        g_test_add_func("/mpt/policy/match", test_match);
        return g_test_run();
}
