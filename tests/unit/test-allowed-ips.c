/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* AllowedIPs= routing (src/shared/allowed-ips.c): longest-prefix match over IPv4 and IPv6,
 * overlaps between values refused, removal of a value, lookups by an inner packet's source or
 * destination, and a table checked against a linear scan of random prefixes. */

#include <arpa/inet.h>

#include "allowed-ips.h"
#include "ip-header.h"

#include <glib.h>

static MptPrefix pfx(const char *s) {
        MptPrefix p;

        g_assert_cmpint(prefix_from_string(s, &p), ==, 0);
        return p;
}

static uint32_t look(const MptAllowedIps *t, const char *addr) {
        MptAddress a;

        g_assert_cmpint(address_from_string(addr, &a), ==, 0);
        return mpt_allowed_ips_lookup(t, a.family, a.addr.bytes);
}

static void add_ok(MptAllowedIps *t, const char *p, uint32_t v) {
        MptPrefix x = pfx(p);

        g_assert_cmpint(mpt_allowed_ips_add(t, &x, v, NULL), ==, 0);
}

static void test_lookup(void) {
        _cleanup_(mpt_allowed_ips_freep) MptAllowedIps *t = mpt_allowed_ips_new();

        g_assert_nonnull(t);
        g_assert_cmpuint(look(t, "10.0.0.1"), ==, MPT_ALLOWED_IPS_NONE);
        add_ok(t, "10.1.0.0/16", 1);
        add_ok(t, "10.1.2.0/24", 1); /* inside a prefix of the same value: fine */
        add_ok(t, "10.2.0.7/32", 2);
        add_ok(t, "192.168.0.0/16", 3);
        add_ok(t, "2001:db8:1::/48", 4);
        add_ok(t, "2001:db8:2::5/128", 5);
        add_ok(t, "10.1.0.0/16", 1); /* again: no change */
        g_assert_cmpuint(mpt_allowed_ips_size(t), ==, 6);

        g_assert_cmpuint(look(t, "10.1.0.1"), ==, 1);
        g_assert_cmpuint(look(t, "10.1.255.255"), ==, 1);
        g_assert_cmpuint(look(t, "10.1.2.3"), ==, 1);
        g_assert_cmpuint(look(t, "10.2.0.7"), ==, 2);
        g_assert_cmpuint(look(t, "10.2.0.8"), ==, MPT_ALLOWED_IPS_NONE);
        g_assert_cmpuint(look(t, "10.0.255.255"), ==, MPT_ALLOWED_IPS_NONE);
        g_assert_cmpuint(look(t, "192.168.77.1"), ==, 3);
        g_assert_cmpuint(look(t, "2001:db8:1:ffff::1"), ==, 4);
        g_assert_cmpuint(look(t, "2001:db8:2::5"), ==, 5);
        g_assert_cmpuint(look(t, "2001:db8:2::6"), ==, MPT_ALLOWED_IPS_NONE);
        /* The families are apart: ::ffff:10.1.0.1 is not 10.1.0.1. */
        g_assert_cmpuint(look(t, "::ffff:10.1.0.1"), ==, MPT_ALLOWED_IPS_NONE);
        g_assert_cmpuint(mpt_allowed_ips_lookup(t, AF_UNIX, "xxxx"), ==, MPT_ALLOWED_IPS_NONE);
}

static void test_longest(void) {
        /* Within one value, longer prefixes change nothing; a default route and host routes of
         * the same value as well. A table built by mptd from non-overlapping peers still needs
         * the longest match for an address outside every prefix but the widest. */
        _cleanup_(mpt_allowed_ips_freep) MptAllowedIps *t = mpt_allowed_ips_new();

        add_ok(t, "0.0.0.0/0", 7);
        add_ok(t, "10.0.0.0/8", 7);
        g_assert_cmpuint(look(t, "1.2.3.4"), ==, 7);
        g_assert_cmpuint(look(t, "10.9.9.9"), ==, 7);
        g_assert_cmpuint(look(t, "::1"), ==, MPT_ALLOWED_IPS_NONE);
        add_ok(t, "::/0", 8);
        g_assert_cmpuint(look(t, "::1"), ==, 8);
}

static void test_overlap(void) {
        _cleanup_(mpt_allowed_ips_freep) MptAllowedIps *t = mpt_allowed_ips_new();
        static const struct {
                const char *prefix;
                uint32_t other;
        } refused[] = {
                { "10.1.0.0/16", 1 },     /* equal */
                { "10.0.0.0/8", 1 },      /* contains */
                { "10.1.7.0/24", 1 },     /* contained */
                { "10.1.0.0/17", 1 },
                { "0.0.0.0/0", 1 },
                { "10.2.0.7/32", 2 },
                { "10.2.0.4/30", 2 },
                { "2001:db8::/32", 4 },
                { "::/0", 4 },
        };

        add_ok(t, "10.1.0.0/16", 1);
        add_ok(t, "10.2.0.7/32", 2);
        add_ok(t, "2001:db8:1::/48", 4);
        for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
                MptPrefix p = pfx(refused[i].prefix);
                uint32_t other = 0;

                g_assert_cmpint(mpt_allowed_ips_add(t, &p, 9, &other), ==, -EEXIST);
                g_assert_cmpuint(other, ==, refused[i].other);
        }
        /* Refusals change nothing. */
        g_assert_cmpuint(mpt_allowed_ips_size(t), ==, 3);
        g_assert_cmpuint(look(t, "10.1.7.1"), ==, 1);
        /* Neighbours do not overlap. */
        add_ok(t, "10.0.0.0/16", 9);
        add_ok(t, "10.2.0.6/32", 9);
        add_ok(t, "2001:db8:2::/48", 9);
        g_assert_cmpuint(look(t, "10.2.0.6"), ==, 9);
        g_assert_cmpuint(look(t, "10.2.0.7"), ==, 2);
}

static void test_remove(void) {
        _cleanup_(mpt_allowed_ips_freep) MptAllowedIps *t = mpt_allowed_ips_new();
        MptPrefix p;

        add_ok(t, "10.1.0.0/16", 1);
        add_ok(t, "10.1.2.0/24", 1);
        add_ok(t, "2001:db8:1::/48", 1);
        add_ok(t, "10.2.0.0/16", 2);
        g_assert_cmpuint(mpt_allowed_ips_remove_value(t, 1), ==, 3);
        g_assert_cmpuint(mpt_allowed_ips_remove_value(t, 1), ==, 0);
        g_assert_cmpuint(mpt_allowed_ips_size(t), ==, 1);
        g_assert_cmpuint(look(t, "10.1.2.3"), ==, MPT_ALLOWED_IPS_NONE);
        g_assert_cmpuint(look(t, "2001:db8:1::1"), ==, MPT_ALLOWED_IPS_NONE);
        g_assert_cmpuint(look(t, "10.2.3.4"), ==, 2);
        /* Its addresses are free for another value now. */
        p = pfx("10.1.0.0/16");
        g_assert_cmpint(mpt_allowed_ips_add(t, &p, 3, NULL), ==, 0);
        g_assert_cmpuint(look(t, "10.1.2.3"), ==, 3);
        g_assert_cmpuint(mpt_allowed_ips_remove_value(t, MPT_ALLOWED_IPS_NONE), ==, 0);
}

static void test_bad(void) {
        _cleanup_(mpt_allowed_ips_freep) MptAllowedIps *t = mpt_allowed_ips_new();
        MptPrefix p = { .family = AF_UNIX };

        g_assert_cmpint(mpt_allowed_ips_add(t, &p, 1, NULL), ==, -EAFNOSUPPORT);
        p = pfx("10.0.0.0/8");
        g_assert_cmpint(mpt_allowed_ips_add(t, &p, MPT_ALLOWED_IPS_NONE, NULL), ==, -EINVAL);
        g_assert_null(mpt_allowed_ips_free(NULL));
}

/* Inner packets: the source or the destination of IPv4 and IPv6 headers. */
static void test_packet(void) {
        _cleanup_(mpt_allowed_ips_freep) MptAllowedIps *t = mpt_allowed_ips_new();
        uint8_t v4[IP4_HEADER_MIN] = { 0x45 }, v6[IP6_HEADER_LEN] = { 0x60 };

        add_ok(t, "10.8.1.0/24", 1);
        add_ok(t, "10.8.2.0/24", 2);
        add_ok(t, "2001:db8:8:1::/64", 1);
        add_ok(t, "2001:db8:8:2::/64", 2);
        /* 10.8.1.7 -> 10.8.2.9 */
        memcpy(v4 + IP4_OFF_SRC, (const uint8_t[]) { 10, 8, 1, 7 }, 4);
        memcpy(v4 + IP4_OFF_DST, (const uint8_t[]) { 10, 8, 2, 9 }, 4);
        g_assert_cmpuint(mpt_allowed_ips_lookup_packet(t, v4, sizeof v4, true), ==, 1);
        g_assert_cmpuint(mpt_allowed_ips_lookup_packet(t, v4, sizeof v4, false), ==, 2);
        g_assert_cmpuint(mpt_allowed_ips_lookup_packet(t, v4, sizeof v4 - 1, false), ==, MPT_ALLOWED_IPS_NONE);
        /* 2001:db8:8:2::5 -> 2001:db8:9::1 */
        g_assert_cmpint(inet_pton(AF_INET6, "2001:db8:8:2::5", v6 + IP6_OFF_SRC), ==, 1);
        g_assert_cmpint(inet_pton(AF_INET6, "2001:db8:9::1", v6 + IP6_OFF_DST), ==, 1);
        g_assert_cmpuint(mpt_allowed_ips_lookup_packet(t, v6, sizeof v6, true), ==, 2);
        g_assert_cmpuint(mpt_allowed_ips_lookup_packet(t, v6, sizeof v6, false), ==, MPT_ALLOWED_IPS_NONE);
        g_assert_cmpuint(mpt_allowed_ips_lookup_packet(t, v6, sizeof v6 - 1, true), ==, MPT_ALLOWED_IPS_NONE);
        /* Neither version. */
        v4[0] = 0x55;
        g_assert_cmpuint(mpt_allowed_ips_lookup_packet(t, v4, sizeof v4, true), ==, MPT_ALLOWED_IPS_NONE);
        g_assert_cmpuint(mpt_allowed_ips_lookup_packet(t, v4, 0, true), ==, MPT_ALLOWED_IPS_NONE);
}

/* Random host prefixes of random lengths, each with its own value where it overlaps nothing:
 * every lookup agrees with a scan for the longest covering prefix. */
static bool covers(const MptPrefix *p, int family, const uint8_t *addr) {
        if (p->family != family)
                return false;
        for (unsigned i = 0; i < p->prefixlen; i++)
                if ((p->addr.bytes[i / 8] ^ addr[i / 8]) >> (7 - i % 8) & 1)
                        return false;
        return true;
}

static void test_random(void) {
        _cleanup_(mpt_allowed_ips_freep) MptAllowedIps *t = mpt_allowed_ips_new();
        g_autoptr(GRand) rnd = g_rand_new_with_seed(23);
        MptPrefix kept[400];
        uint32_t kept_v[400];
        size_t n = 0;

        for (uint32_t v = 0; v < G_N_ELEMENTS(kept); v++) {
                MptPrefix p = { .family = g_rand_boolean(rnd) ? AF_INET : AF_INET6 };
                unsigned bits = p.family == AF_INET ? 32 : 128;

                /* Few distinct leading bits, so that overlaps happen. */
                for (unsigned i = 0; i < 16; i++)
                        p.addr.bytes[i] = i < 2 ? (uint8_t) g_rand_int_range(rnd, 0, 4) : (uint8_t) g_rand_int(rnd);
                p.prefixlen = (unsigned char) g_rand_int_range(rnd, 0, (int) bits + 1);
                for (unsigned i = p.prefixlen; i < 128; i++)
                        p.addr.bytes[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));
                if (mpt_allowed_ips_add(t, &p, v, NULL) == 0) {
                        for (size_t j = 0; j < n; j++)
                                g_assert_false(kept_v[j] != v && (covers(&kept[j], p.family, p.addr.bytes) ||
                                                                  covers(&p, kept[j].family, kept[j].addr.bytes)));
                        kept[n] = p;
                        kept_v[n++] = v;
                }
        }
        g_assert_cmpuint(n, >, 10);
        for (unsigned k = 0; k < 20000; k++) {
                int family = g_rand_boolean(rnd) ? AF_INET : AF_INET6;
                uint8_t a[16];
                uint32_t want = MPT_ALLOWED_IPS_NONE;
                int best = -1;

                for (unsigned i = 0; i < 16; i++)
                        a[i] = i < 2 ? (uint8_t) g_rand_int_range(rnd, 0, 4) : (uint8_t) g_rand_int(rnd);
                /* Half of the time an address inside a kept prefix. */
                if (k % 2 && n > 0) {
                        const MptPrefix *p = &kept[g_rand_int_range(rnd, 0, (int) n)];
                        family = p->family;
                        for (unsigned i = 0; i < p->prefixlen; i++)
                                a[i / 8] = (uint8_t) ((a[i / 8] & ~(0x80u >> (i % 8))) |
                                                      (p->addr.bytes[i / 8] & (0x80u >> (i % 8))));
                }
                for (size_t j = 0; j < n; j++)
                        if (covers(&kept[j], family, a) && (int) kept[j].prefixlen > best) {
                                best = kept[j].prefixlen;
                                want = kept_v[j];
                        }
                g_assert_cmpuint(mpt_allowed_ips_lookup(t, family, a), ==, want);
        }
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/mpt/allowed-ips/lookup", test_lookup);
        g_test_add_func("/mpt/allowed-ips/longest", test_longest);
        g_test_add_func("/mpt/allowed-ips/overlap", test_overlap);
        g_test_add_func("/mpt/allowed-ips/remove", test_remove);
        g_test_add_func("/mpt/allowed-ips/bad", test_bad);
        g_test_add_func("/mpt/allowed-ips/packet", test_packet);
        g_test_add_func("/mpt/allowed-ips/random", test_random);
        return g_test_run();
}
