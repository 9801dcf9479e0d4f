/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "wire.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>

#include "unhex.h"

/* ---- sample packets ---- */

/* The IPv4 header used as the checksum example on Wikipedia ("IPv4 header checksum"): 192.168.0.1 ->
 * 192.168.0.199, UDP, total length 0x73 = 115, checksum 0xb861. Independent of mpt_checksum(). */
static const uint8_t ipv4_header[20] = {
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
        0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
};
#define IPV4_LEN 115u

static void make_ipv4(uint8_t pkt[static IPV4_LEN]) {
        memcpy(pkt, ipv4_header, sizeof ipv4_header);
        for (size_t i = sizeof ipv4_header; i < IPV4_LEN; i++)
                pkt[i] = (uint8_t) (i * 7);
}

/* IPv6 UDP 2001:db8::1 -> 2001:db8::2 with an 8-byte payload (payload length 8). */
#define IPV6_LEN 48u
static void make_ipv6(uint8_t pkt[static IPV6_LEN]) {
        static const uint8_t h[8] = { 0x60, 0x00, 0x00, 0x00, 0x00, 0x08, 0x11, 0x40 };
        static const uint8_t src[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
        static const uint8_t dst[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };

        memcpy(pkt, h, sizeof h);
        memcpy(pkt + 8, src, 16);
        memcpy(pkt + 24, dst, 16);
        for (size_t i = 40; i < IPV6_LEN; i++)
                pkt[i] = (uint8_t) (0x30 + i);
}

static void ipv4_fix_checksum(uint8_t *pkt) {
        size_t ihl = (size_t) (pkt[0] & 0x0f) * 4;
        uint16_t c;

        pkt[10] = pkt[11] = 0;
        c = mpt_checksum(pkt, ihl);
        pkt[10] = c >> 8;
        pkt[11] = c & 0xff;
}

/* A frame built by hand: GRE flags and protocol, optional words, then the payload. */
static GByteArray *frame_new(uint16_t flags, uint16_t protocol, const uint32_t *words, size_t n_words,
                             const uint8_t *payload, size_t len) {
        GByteArray *b = g_byte_array_new();
        uint8_t h[4] = { flags >> 8, flags & 0xff, protocol >> 8, protocol & 0xff };

        g_byte_array_append(b, h, 4);
        for (size_t i = 0; i < n_words; i++) {
                uint8_t w[4] = {
                        words[i] >> 24, (words[i] >> 16) & 0xff, (words[i] >> 8) & 0xff, words[i] & 0xff,
                };
                g_byte_array_append(b, w, 4);
        }
        if (len > 0)
                g_byte_array_append(b, payload, (guint) len);
        return b;
}

/* Runs the decoder on an exact-size heap copy, so that AddressSanitizer sees any over-read. */
static int decode_exact(const uint8_t *data, size_t len, MptFrame *ret, uint8_t **ret_copy) {
        uint8_t *copy = len > 0 ? g_memdup2(data, len) : NULL;
        int r = mpt_frame_decode(copy, len, ret);

        if (ret_copy)
                *ret_copy = copy;
        else
                g_free(copy);
        return r;
}

/* ---- checksum, sequence arithmetic, enum ---- */

static void test_checksum(void) {
        /* RFC 1071 section 3: the sum of 00 01 f2 03 f4 f5 f6 f7 is ddf2, the checksum its complement. */
        static const uint8_t rfc1071[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
        uint8_t hdr[20], ones[1000];

        g_assert_cmphex(mpt_checksum(rfc1071, sizeof rfc1071), ==, 0x220d);
        /* An odd length is padded with a zero byte at the end (RFC 1071 4.1). */
        g_assert_cmphex(mpt_checksum((const uint8_t[]) { 0x01 }, 1), ==, 0xfeff);
        g_assert_cmphex(mpt_checksum((const uint8_t[]) { 0x00, 0x01, 0xf2 }, 3), ==, (uint16_t) ~0xf201);
        g_assert_cmphex(mpt_checksum(rfc1071, 0), ==, 0xffff);
        /* Many carries: 500 words of ffff fold back to ffff. */
        memset(ones, 0xff, sizeof ones);
        g_assert_cmphex(mpt_checksum(ones, sizeof ones), ==, 0x0000);

        /* A header with a correct checksum sums to zero; with the field cleared we get the field. */
        g_assert_cmphex(mpt_checksum(ipv4_header, sizeof ipv4_header), ==, 0);
        memcpy(hdr, ipv4_header, sizeof hdr);
        hdr[10] = hdr[11] = 0;
        g_assert_cmphex(mpt_checksum(hdr, sizeof hdr), ==, 0xb861);
}

static void test_seq_diff(void) {
        g_assert_cmpint(mpt_seq_diff(5, 0xfffffffe), ==, 7);
        g_assert_cmpint(mpt_seq_diff(0xfffffffe, 5), ==, -7);
        g_assert_cmpint(mpt_seq_diff(0, 0xffffffff), ==, 1);
        g_assert_cmpint(mpt_seq_diff(0xffffffff, 0), ==, -1);
        g_assert_cmpint(mpt_seq_diff(100, 100), ==, 0);
        g_assert_cmpint(mpt_seq_diff(0x7fffffff, 0), ==, INT32_MAX);
        g_assert_cmpint(mpt_seq_diff(0x80000000, 0), ==, INT32_MIN);
        g_assert_cmpint(mpt_seq_diff(0x80000005, 5), ==, INT32_MIN);
        g_assert_cmpint(mpt_seq_diff(1000000, 0), ==, 1000000);
}

static const char *const drop_names[_MPT_DROP_MAX] = {
        /* These names appear in mptctl's output and in the control protocol: pinned here so that a
         * rename is a deliberate change. */
        [MPT_DROP_RUNT] = "runt",
        [MPT_DROP_GRE_VERSION] = "gre-version",
        [MPT_DROP_GRE_FLAGS] = "gre-flags",
        [MPT_DROP_GRE_CHECKSUM] = "gre-checksum",
        [MPT_DROP_GRE_PROTOCOL] = "gre-protocol",
        [MPT_DROP_INNER_VERSION] = "inner-version",
        [MPT_DROP_INNER_HEADER] = "inner-header",
        [MPT_DROP_INNER_CHECKSUM] = "inner-checksum",
        [MPT_DROP_INNER_LENGTH] = "inner-length",
        [MPT_DROP_TRUNCATED] = "truncated",
        [MPT_DROP_UNKNOWN_CONTROL] = "unknown-control",
        [MPT_DROP_BAD_KEEPALIVE] = "bad-keepalive",
        [MPT_DROP_TUNNEL_MISMATCH] = "tunnel-mismatch",
        [MPT_DROP_UNKNOWN_SOURCE] = "unknown-source",
        [MPT_DROP_DUPLICATE] = "duplicate",
        [MPT_DROP_STALE] = "stale",
        [MPT_DROP_TUN_WRITE] = "tun-write",
        [MPT_DROP_NO_MEMORY] = "no-memory",
        [MPT_DROP_NO_PATH] = "no-path",
        [MPT_DROP_TUN_MALFORMED] = "tun-malformed",
        [MPT_DROP_SEND_ERROR] = "send-error",
        [MPT_DROP_SEND_BUSY] = "send-busy",
        [MPT_DROP_TOO_SHORT] = "too-short",
        [MPT_DROP_BAD_VERSION] = "bad-version",
        [MPT_DROP_BAD_HEADER] = "bad-header",
        [MPT_DROP_COMPAT_PACKET] = "compat-packet",
        [MPT_DROP_AUTH_FAILED] = "auth-failed",
        [MPT_DROP_REPLAYED] = "replayed",
        [MPT_DROP_STALE_EPOCH] = "stale-epoch",
        [MPT_DROP_OWN_EPOCH] = "own-epoch",
        [MPT_DROP_COUNTER_EXHAUSTED] = "counter-exhausted",
        [MPT_DROP_CIPHER_ERROR] = "cipher-error",
        [MPT_DROP_BAD_FEEDBACK] = "bad-feedback",
        [MPT_DROP_PATH_MISMATCH] = "path-mismatch",
        [MPT_DROP_EPOCH_LIMITED] = "epoch-limited",
        [MPT_DROP_BAD_REPAIR] = "bad-repair",
        [MPT_DROP_NO_SESSION] = "no-session",
        [MPT_DROP_UNKNOWN_SESSION] = "unknown-session",
        [MPT_DROP_STALE_SESSION] = "stale-session",
        [MPT_DROP_EXPIRED_SESSION] = "expired-session",
        [MPT_DROP_HANDSHAKE_MALFORMED] = "handshake-malformed",
        [MPT_DROP_HANDSHAKE_MAC1] = "handshake-mac1",
        [MPT_DROP_HANDSHAKE_AUTH_FAILED] = "handshake-auth-failed",
        [MPT_DROP_HANDSHAKE_UNKNOWN_PEER] = "handshake-unknown-peer",
        [MPT_DROP_HANDSHAKE_BAD_KEY] = "handshake-bad-key",
        [MPT_DROP_HANDSHAKE_REPLAYED] = "handshake-replayed",
        [MPT_DROP_HANDSHAKE_FLOOD] = "handshake-flood",
        [MPT_DROP_HANDSHAKE_UNEXPECTED] = "handshake-unexpected",
        [MPT_DROP_HANDSHAKE_CRYPTO_ERROR] = "handshake-crypto-error",
        [MPT_DROP_HANDSHAKE_OVERFLOW] = "handshake-overflow",
        [MPT_DROP_HOLD_OVERFLOW] = "hold-overflow",
};

static void test_drop_reason_enum(void) {
        g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);

        for (int i = 0; i < _MPT_DROP_MAX; i++) {
                const char *s = mpt_drop_reason_to_string(i);

                g_assert_nonnull(s);
                g_assert_cmpstr(s, ==, drop_names[i]);
                g_assert_cmpint(mpt_drop_reason_from_string(s), ==, i);
                /* kebab-case, unique */
                for (const char *p = s; *p; p++)
                        g_assert_true(g_ascii_islower(*p) || (g_ascii_isdigit(*p) && p > s) || *p == '-');
                g_assert_false(g_hash_table_contains(seen, s));
                g_hash_table_add(seen, (char *) s);
        }
        g_assert_null(mpt_drop_reason_to_string(_MPT_DROP_MAX));
        g_assert_null(mpt_drop_reason_to_string(-1));
        g_assert_null(mpt_drop_reason_to_string(_MPT_DROP_INVALID));
        g_assert_cmpint(mpt_drop_reason_from_string("Runt"), ==, _MPT_DROP_INVALID);
        g_assert_cmpint(mpt_drop_reason_from_string(""), ==, _MPT_DROP_INVALID);
        g_assert_cmpint(mpt_drop_reason_from_string(NULL), ==, _MPT_DROP_INVALID);
}

/* ---- data frames ---- */

typedef struct {
        const char *name;
        bool ipv6;
        bool with_seq;
        uint32_t seq;
        uint8_t header[8];
        size_t header_len;
} EncodeVector;

static const EncodeVector encode_vectors[] = {
        /* First byte 0x00 without and 0x10 with a sequence number, second byte 0x00, protocol type
         * from the inner packet (spec 2.3). */
        { "ipv4", false, false, 0, { 0x00, 0x00, 0x08, 0x00 }, 4 },
        { "ipv4-seq", false, true, 0x12345678, { 0x10, 0x00, 0x08, 0x00, 0x12, 0x34, 0x56, 0x78 }, 8 },
        { "ipv4-seq0", false, true, 0, { 0x10, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00 }, 8 },
        { "ipv6", true, false, 0, { 0x00, 0x00, 0x86, 0xdd }, 4 },
        { "ipv6-seq-max", true, true, 0xffffffff, { 0x10, 0x00, 0x86, 0xdd, 0xff, 0xff, 0xff, 0xff }, 8 },
};

static void test_encode_decode(const void *data) {
        const EncodeVector *v = data;
        uint8_t buf[8 + 128], inner[128], *copy = NULL;
        size_t inner_len = v->ipv6 ? IPV6_LEN : IPV4_LEN, h;
        uint16_t proto;
        MptFrame f;

        if (v->ipv6)
                make_ipv6(inner);
        else
                make_ipv4(inner);
        proto = mpt_inner_protocol(inner, inner_len);
        g_assert_cmphex(proto, ==, v->ipv6 ? MPT_ETH_P_IPV6 : MPT_ETH_P_IP);

        /* The header is written in front of the packet, into the headroom, and nothing else moves. */
        memset(buf, 0xee, sizeof buf);
        memcpy(buf + 8, inner, inner_len);
        h = mpt_gre_encode(buf + 8, proto, v->with_seq, v->seq);
        g_assert_cmpuint(h, ==, v->header_len);
        g_assert_cmpmem(buf + 8 - h, h, v->header, v->header_len);
        for (size_t i = 0; i < 8 - h; i++)
                g_assert_cmphex(buf[i], ==, 0xee);
        g_assert_cmpmem(buf + 8, inner_len, inner, inner_len);

        g_assert_cmpint(decode_exact(buf + 8 - h, h + inner_len, &f, &copy), ==, -1);
        g_assert_cmpint(f.kind, ==, MPT_FRAME_DATA);
        g_assert_cmphex(f.protocol, ==, proto);
        g_assert_cmpint(f.has_seq, ==, v->with_seq);
        g_assert_cmphex(f.seq, ==, v->with_seq ? v->seq : 0);
        g_assert_cmpuint(f.header_len, ==, h);
        g_assert_true(f.payload == copy + h);
        g_assert_cmpmem(f.payload, f.payload_len, inner, inner_len);
        g_assert_true(mpt_inner_validate(f.payload, f.payload_len, f.protocol) < 0);
        g_free(copy);
}

static void test_inner_protocol(void) {
        uint8_t p4[IPV4_LEN], p6[IPV6_LEN];

        make_ipv4(p4);
        make_ipv6(p6);
        g_assert_cmphex(mpt_inner_protocol(p4, IPV4_LEN), ==, MPT_ETH_P_IP);
        g_assert_cmphex(mpt_inner_protocol(p4, 20), ==, MPT_ETH_P_IP);
        g_assert_cmphex(mpt_inner_protocol(p4, 19), ==, 0);
        g_assert_cmphex(mpt_inner_protocol(p6, IPV6_LEN), ==, MPT_ETH_P_IPV6);
        g_assert_cmphex(mpt_inner_protocol(p6, 40), ==, MPT_ETH_P_IPV6);
        g_assert_cmphex(mpt_inner_protocol(p6, 39), ==, 0);
        g_assert_cmphex(mpt_inner_protocol(p6, 0), ==, 0);
        p4[0] = 0x55;
        g_assert_cmphex(mpt_inner_protocol(p4, IPV4_LEN), ==, 0);
        p4[0] = 0xa1;
        g_assert_cmphex(mpt_inner_protocol(p4, IPV4_LEN), ==, 0);
}

/* ---- keepalives (spec 3.6) ---- */

/* The spec's example, byte for byte: IPv4 tunnel from 10.0.0.2 to 10.0.0.3. */
static const uint8_t spec_keepalive[MPT_KEEPALIVE_SIZE] = {
        0x00, 0x00, 0x08, 0x00,
        0xa1, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x0a, 0x00, 0x00, 0x02,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x0a, 0x00, 0x00, 0x03,
};

static MptAddress addr(const char *s) {
        MptAddress a;

        g_assert_cmpint(address_from_string(s, &a), ==, 0);
        return a;
}

static void test_keepalive_spec_example(void) {
        MptKeepalive ka = { .ip_version = 4, .src_tun = addr("10.0.0.2"), .dst_tun = addr("10.0.0.3") }, got;
        MptAddress a2 = addr("10.0.0.2"), a3 = addr("10.0.0.3");
        uint8_t buf[128];
        MptFrame f;

        memset(buf, 0x55, sizeof buf);
        g_assert_cmpuint(mpt_keepalive_encode(buf, sizeof buf, &ka), ==, MPT_KEEPALIVE_SIZE);
        g_assert_cmpmem(buf, MPT_KEEPALIVE_SIZE, spec_keepalive, sizeof spec_keepalive);
        g_assert_cmphex(buf[MPT_KEEPALIVE_SIZE], ==, 0x55); /* nothing written beyond */

        /* Exactly the room it needs is enough; one byte less is not. */
        g_assert_cmpuint(mpt_keepalive_encode(buf, MPT_KEEPALIVE_SIZE, &ka), ==, MPT_KEEPALIVE_SIZE);
        g_assert_cmpuint(mpt_keepalive_encode(buf, MPT_KEEPALIVE_SIZE - 1, &ka), ==, 0);

        /* What the original sends decodes. */
        g_assert_cmpint(decode_exact(spec_keepalive, sizeof spec_keepalive, &f, NULL), ==, -1);
        g_assert_cmpint(f.kind, ==, MPT_FRAME_KEEPALIVE);
        g_assert_false(f.has_seq);
        g_assert_cmpuint(f.header_len, ==, 4);
        g_assert_cmpuint(f.payload_len, ==, 40);
        f.payload = spec_keepalive + 4; /* decode_exact() freed its copy */
        g_assert_cmpint(mpt_keepalive_decode(&f, &got), ==, -1);
        g_assert_cmpuint(got.ip_version, ==, 4);
        g_assert_true(address_equal(&got.src_tun, &a2));
        g_assert_true(address_equal(&got.dst_tun, &a3));
        g_assert_false(got.extended);
        g_assert_cmpuint(got.session, ==, 0);
}

static void test_keepalive_ipv6(void) {
        MptKeepalive ka = { .ip_version = 6, .src_tun = addr("fd00::2"), .dst_tun = addr("fd00::3") }, got;
        uint8_t buf[MPT_KEEPALIVE_SIZE];
        MptFrame f;

        g_assert_cmpuint(mpt_keepalive_encode(buf, sizeof buf, &ka), ==, MPT_KEEPALIVE_SIZE);
        /* GRE protocol type from the tunnel's IP version, S clear; tunnel version at offset 9. */
        g_assert_cmpmem(buf, 4, ((const uint8_t[]) { 0x00, 0x00, 0x86, 0xdd }), 4);
        g_assert_cmphex(buf[4], ==, 0xa1);
        g_assert_cmphex(buf[9], ==, 6);
        g_assert_cmpmem(buf + 12, 16, ka.src_tun.addr.bytes, 16);
        g_assert_cmpmem(buf + 28, 16, ka.dst_tun.addr.bytes, 16);

        g_assert_cmpint(mpt_frame_decode(buf, sizeof buf, &f), ==, -1);
        g_assert_cmpint(mpt_keepalive_decode(&f, &got), ==, -1);
        g_assert_cmpuint(got.ip_version, ==, 6);
        g_assert_true(address_equal(&got.src_tun, &ka.src_tun));
        g_assert_true(address_equal(&got.dst_tun, &ka.dst_tun));
}

static void test_keepalive_unset_addresses(void) {
        MptKeepalive ka = { .ip_version = 4 }, got;
        uint8_t buf[MPT_KEEPALIVE_SIZE];
        MptFrame f;

        /* Unset tunnel addresses go out as zeros and come back unset. */
        g_assert_cmpuint(mpt_keepalive_encode(buf, sizeof buf, &ka), ==, MPT_KEEPALIVE_SIZE);
        for (size_t i = 12; i < MPT_KEEPALIVE_SIZE; i++)
                g_assert_cmphex(buf[i], ==, 0);
        g_assert_cmpint(mpt_frame_decode(buf, sizeof buf, &f), ==, -1);
        g_assert_cmpint(mpt_keepalive_decode(&f, &got), ==, -1);
        g_assert_false(address_is_set(&got.src_tun));
        g_assert_false(address_is_set(&got.dst_tun));
}

static const MptKeepalive ext_sample = {
        .ip_version = 4,
        .extended = true,
        .flags = MPT_KA_FLAG_DOWN | MPT_KA_FLAG_RX_DEAD,
        .receive_weight = 10000,
        .session = 0xdeadbeef,
        .seq = 1,
        .echo_seq = 0xfffffffe,
        .echo_delay_us = 123456,
        .rx_count = 0x01020304,
        .path_token = 0xa1b2c3d4,
};

static void test_keepalive_extension(void) {
        MptKeepalive ka = ext_sample, plain, got;
        uint8_t buf[128], base[MPT_KEEPALIVE_SIZE];
        MptFrame f;

        ka.src_tun = addr("10.0.0.2");
        ka.dst_tun = addr("10.0.0.3");
        g_assert_cmpuint(mpt_keepalive_encode(buf, sizeof buf, &ka), ==, MPT_KEEPALIVE_EXT_SIZE);
        g_assert_cmpuint(mpt_keepalive_encode(buf, MPT_KEEPALIVE_EXT_SIZE - 1, &ka), ==, 0);
        g_assert_cmpuint(mpt_keepalive_encode(buf, sizeof buf, &ka), ==, MPT_KEEPALIVE_EXT_SIZE);

        /* The first 44 bytes are the original frame, so original peers read it as before. */
        plain = ka;
        plain.extended = false;
        g_assert_cmpuint(mpt_keepalive_encode(base, sizeof base, &plain), ==, MPT_KEEPALIVE_SIZE);
        g_assert_cmpmem(buf, MPT_KEEPALIVE_SIZE, base, MPT_KEEPALIVE_SIZE);
        g_assert_cmpmem(buf, MPT_KEEPALIVE_SIZE, spec_keepalive, MPT_KEEPALIVE_SIZE);

        /* Our extension: "MPT", version, then big-endian fields. Pinned: peers of different mptd
         * versions must agree on it. */
        {
                static const uint8_t ext[MPT_KEEPALIVE_EXT_SIZE - MPT_KEEPALIVE_SIZE] = {
                        'M', 'P', 'T', MPT_KEEPALIVE_EXT_VERSION,
                        0x03, 0x00, 0x27, 0x10,         /* flags, reserved, receive weight 10000 */
                        0xde, 0xad, 0xbe, 0xef,         /* session */
                        0x00, 0x00, 0x00, 0x01,         /* seq */
                        0xff, 0xff, 0xff, 0xfe,         /* echo_seq */
                        0x00, 0x01, 0xe2, 0x40,         /* echo_delay_us 123456 */
                        0x01, 0x02, 0x03, 0x04,         /* rx_count */
                        0xa1, 0xb2, 0xc3, 0xd4,         /* path_token */
                };
                g_assert_cmpmem(buf + MPT_KEEPALIVE_SIZE, sizeof ext, ext, sizeof ext);
        }

        g_assert_cmpint(mpt_frame_decode(buf, MPT_KEEPALIVE_EXT_SIZE, &f), ==, -1);
        g_assert_cmpint(f.kind, ==, MPT_FRAME_KEEPALIVE);
        g_assert_cmpint(mpt_keepalive_decode(&f, &got), ==, -1);
        g_assert_true(got.extended);
        g_assert_cmpuint(got.ip_version, ==, ka.ip_version);
        g_assert_true(address_equal(&got.src_tun, &ka.src_tun));
        g_assert_true(address_equal(&got.dst_tun, &ka.dst_tun));
        g_assert_cmpuint(got.flags, ==, ka.flags);
        g_assert_cmpuint(got.receive_weight, ==, ka.receive_weight);
        g_assert_cmphex(got.session, ==, ka.session);
        g_assert_cmpuint(got.seq, ==, ka.seq);
        g_assert_cmphex(got.echo_seq, ==, ka.echo_seq);
        g_assert_cmpuint(got.echo_delay_us, ==, ka.echo_delay_us);
        g_assert_cmphex(got.rx_count, ==, ka.rx_count);
        g_assert_cmphex(got.path_token, ==, ka.path_token);

        /* A path token of 0 is not one. */
        {
                uint8_t copy[MPT_KEEPALIVE_EXT_SIZE];
                memcpy(copy, buf, sizeof copy);
                memset(copy + 72, 0, 4);
                g_assert_cmpint(mpt_frame_decode(copy, sizeof copy, &f), ==, -1);
                g_assert_cmpint(mpt_keepalive_decode(&f, &got), ==, MPT_DROP_BAD_KEEPALIVE);
        }

        /* A later extension version with more fields is read as far as we understand it. */
        {
                uint8_t longer[MPT_KEEPALIVE_EXT_SIZE + 8];
                memcpy(longer, buf, MPT_KEEPALIVE_EXT_SIZE);
                longer[47] = MPT_KEEPALIVE_EXT_VERSION + 1;
                memset(longer + MPT_KEEPALIVE_EXT_SIZE, 0x77, 8);
                g_assert_cmpint(mpt_frame_decode(longer, sizeof longer, &f), ==, -1);
                g_assert_cmpint(mpt_keepalive_decode(&f, &got), ==, -1);
                g_assert_true(got.extended);
                g_assert_cmphex(got.session, ==, ka.session);
        }
}

/* Our path-status frame: pinned bytes, round trip, every truncation, bad fields. */
static void test_path_status(void) {
        MptPathStatus ps = {
                .ip_version = 6,
                .src_tun = addr("fd00::1"),
                .dst_tun = addr("fd00::2"),
                .session = 0x11223344,
                .path_token = 0x55667788,
                .flags = MPT_KA_FLAG_DOWN,
        }, got;
        uint8_t buf[MPT_PATH_STATUS_SIZE + 8];
        MptFrame f;

        g_assert_cmpuint(mpt_path_status_encode(buf, MPT_PATH_STATUS_SIZE - 1, &ps), ==, 0);
        g_assert_cmpuint(mpt_path_status_encode(buf, sizeof buf, &ps), ==, MPT_PATH_STATUS_SIZE);
        /* GRE without sequence, protocol from the tunnel's IP version, code 0xAE, the original's
         * control header layout, then "MPT", version, session, token, flags. */
        g_assert_cmphex(buf[0], ==, 0x00);
        g_assert_cmphex(buf[2] << 8 | buf[3], ==, MPT_ETH_P_IPV6);
        g_assert_cmphex(buf[4], ==, 0xAE);
        g_assert_cmpuint(buf[9], ==, 6);
        g_assert_cmpmem(buf + 44, 3, "MPT", 3);
        g_assert_cmphex(buf[48] << 24 | buf[49] << 16 | buf[50] << 8 | buf[51], ==, 0x11223344);
        g_assert_cmphex(buf[52] << 24 | buf[53] << 16 | buf[54] << 8 | buf[55], ==, 0x55667788);
        g_assert_cmpuint(buf[56], ==, MPT_KA_FLAG_DOWN);

        g_assert_cmpint(mpt_frame_decode(buf, MPT_PATH_STATUS_SIZE, &f), ==, -1);
        g_assert_cmpint(f.kind, ==, MPT_FRAME_PATH_STATUS);
        g_assert_cmpint(mpt_path_status_decode(&f, &got), ==, -1);
        g_assert_cmpuint(got.ip_version, ==, 6);
        g_assert_true(address_equal(&got.src_tun, &ps.src_tun));
        g_assert_true(address_equal(&got.dst_tun, &ps.dst_tun));
        g_assert_cmphex(got.session, ==, ps.session);
        g_assert_cmphex(got.path_token, ==, ps.path_token);
        g_assert_cmpuint(got.flags, ==, ps.flags);
        /* It is not a keepalive. */
        g_assert_cmpint(mpt_keepalive_decode(&f, &(MptKeepalive) {}), ==, MPT_DROP_BAD_KEEPALIVE);

        for (size_t len = 5; len < MPT_PATH_STATUS_SIZE; len++) {
                g_assert_cmpint(mpt_frame_decode(buf, len, &f), ==, -1);
                g_assert_cmpint(mpt_path_status_decode(&f, &got), ==, MPT_DROP_BAD_KEEPALIVE);
        }
        buf[52] = buf[53] = buf[54] = buf[55] = 0; /* token 0 */
        g_assert_cmpint(mpt_frame_decode(buf, MPT_PATH_STATUS_SIZE, &f), ==, -1);
        g_assert_cmpint(mpt_path_status_decode(&f, &got), ==, MPT_DROP_BAD_KEEPALIVE);
}

/* The feedback frame, byte by byte as wire.h describes it (written out here, not by the encoder). */
static void test_feedback(void) {
        static const char frame_hex[] =
                "00000800"                         /* GRE: no flags, IPv4 */
                "af" "02" "02" "30"                /* code, version 2, 2 entries of 48 bytes */
                "0000000000bc614e"                 /* receiver's clock: 12345678 us */
                "03050000" "000003e8" "00000000000f4240" "000000000000002a" "0000000000bc5fc8" "0000000000bebc20"
                "00000000000003f2"
                "3f3f0000" "ffffffff" "ffffffffffffffff" "0102030405060708" "8000000000000001" "0000000000000000"
                "fffffffffffffffe";
        uint8_t buf[MPT_FEEDBACK_SIZE_MAX + 64], want[sizeof buf];
        size_t n = unhex(frame_hex, want, sizeof want);
        MptFeedback fb = {
                .now = 12345678,
                .n = 2,
                .entries = {
                        { .path_id = 3, .lane = 5, .packets = 1000, .bytes = 1000000, .marker = 42,
                          .arrival = 12345288, .peak_rate = 12500000, .sent = 1010 },
                        { .path_id = 63, .lane = 63, .packets = UINT32_MAX, .bytes = UINT64_MAX,
                          .marker = 0x0102030405060708, .arrival = UINT64_C(0x8000000000000001),
                          .sent = UINT64_MAX - 1 },
                },
        }, got;
        MptFrame f;

        g_assert_cmpuint(n, ==, MPT_FEEDBACK_HEADER_SIZE + 2 * MPT_FEEDBACK_ENTRY_SIZE);
        g_assert_cmpuint(mpt_feedback_encode(buf, n - 1, MPT_ETH_P_IP, &fb), ==, 0);
        g_assert_cmpuint(mpt_feedback_encode(buf, sizeof buf, MPT_ETH_P_IP, &fb), ==, n);
        g_assert_cmpmem(buf, n, want, n);

        g_assert_cmpint(mpt_frame_decode(want, n, &f), ==, -1);
        g_assert_cmpint(f.kind, ==, MPT_FRAME_FEEDBACK);
        g_assert_cmpint(mpt_feedback_decode(&f, &got), ==, -1);
        g_assert_cmpuint(got.now, ==, fb.now);
        g_assert_cmpuint(got.n, ==, 2);
        for (unsigned i = 0; i < 2; i++) {
                g_assert_cmpuint(got.entries[i].path_id, ==, fb.entries[i].path_id);
                g_assert_cmpuint(got.entries[i].lane, ==, fb.entries[i].lane);
                g_assert_cmpuint(got.entries[i].sent, ==, fb.entries[i].sent);
                g_assert_cmpuint(got.entries[i].packets, ==, fb.entries[i].packets);
                g_assert_cmpuint(got.entries[i].bytes, ==, fb.entries[i].bytes);
                g_assert_cmpuint(got.entries[i].marker, ==, fb.entries[i].marker);
                g_assert_cmpuint(got.entries[i].arrival, ==, fb.entries[i].arrival);
                g_assert_cmpuint(got.entries[i].peak_rate, ==, fb.entries[i].peak_rate);
        }
        /* Neither a keepalive nor a path-status frame. */
        g_assert_cmpint(mpt_keepalive_decode(&f, &(MptKeepalive) {}), ==, MPT_DROP_BAD_KEEPALIVE);
        g_assert_cmpint(mpt_path_status_decode(&f, &(MptPathStatus) {}), ==, MPT_DROP_BAD_KEEPALIVE);
        /* No entry, or more than fit: nothing to encode. */
        fb.n = 0;
        g_assert_cmpuint(mpt_feedback_encode(buf, sizeof buf, MPT_ETH_P_IP, &fb), ==, 0);
        fb.n = MPT_FEEDBACK_ENTRIES_MAX + 1;
        g_assert_cmpuint(mpt_feedback_encode(buf, sizeof buf, MPT_ETH_P_IP, &fb), ==, 0);
}

/* A later version may make the entries longer: the first 48 bytes of each keep their meaning
 * and the rest is skipped. */
static void test_feedback_longer_entries(void) {
        static const char frame_hex[] =
                "00000800" "af" "02" "01" "38" "0000000000000001"
                "05070000" "00000002" "0000000000000003" "0000000000000004" "0000000000000005" "0000000000000006"
                "0000000000000007"
                "deadbeefdeadbeef";                /* 8 bytes this version does not know */
        uint8_t buf[128];
        size_t n = unhex(frame_hex, buf, sizeof buf);
        MptFeedback got;
        MptFrame f;

        g_assert_cmpint(mpt_frame_decode(buf, n, &f), ==, -1);
        g_assert_cmpint(mpt_feedback_decode(&f, &got), ==, -1);
        g_assert_cmpuint(got.n, ==, 1);
        g_assert_cmpuint(got.entries[0].path_id, ==, 5);
        g_assert_cmpuint(got.entries[0].lane, ==, 7);
        g_assert_cmpuint(got.entries[0].sent, ==, 7);
        g_assert_cmpuint(got.entries[0].packets, ==, 2);
        g_assert_cmpuint(got.entries[0].bytes, ==, 3);
        g_assert_cmpuint(got.entries[0].marker, ==, 4);
        g_assert_cmpuint(got.entries[0].arrival, ==, 5);
        g_assert_cmpuint(got.entries[0].peak_rate, ==, 6);
}

typedef struct FeedbackVector {
        const char *name, *hex;
} FeedbackVector;

#define FB_GRE "00000800"
#define FB_ENTRY_TAIL "00000001" "0000000000000002" "0000000000000003" "0000000000000004" "0000000000000005" \
        "0000000000000006"
#define FB_ENTRY "03010000" FB_ENTRY_TAIL
#define FB_ENTRY_V1 "03000000" "00000001" "0000000000000002" "0000000000000003" "0000000000000004" \
        "0000000000000005"
static const FeedbackVector bad_feedback[] = {
        { "version-0", FB_GRE "af" "00" "01" "30" "0000000000000001" FB_ENTRY },
        /* Version 1 (an mptd without lanes), as it was sent. */
        { "version-1", FB_GRE "af" "01" "01" "28" "0000000000000001" FB_ENTRY_V1 },
        { "version-1-long", FB_GRE "af" "01" "01" "30" "0000000000000001" FB_ENTRY },
        { "version-3", FB_GRE "af" "03" "01" "30" "0000000000000001" FB_ENTRY },
        { "no-entry", FB_GRE "af" "02" "00" "30" "0000000000000001" },
        { "17-entries", FB_GRE "af" "02" "11" "30" "0000000000000001" FB_ENTRY },
        { "entry-40", FB_GRE "af" "02" "01" "28" "0000000000000001" FB_ENTRY_V1 },
        { "entry-47", FB_GRE "af" "02" "01" "2f" "0000000000000001" FB_ENTRY },
        { "short", FB_GRE "af" "02" "02" "30" "0000000000000001" FB_ENTRY },
        { "long", FB_GRE "af" "02" "01" "30" "0000000000000001" FB_ENTRY "00" },
        { "header-only", FB_GRE "af" "02" "01" "30" "00000000000000" },
        { "path-id-64", FB_GRE "af" "02" "01" "30" "0000000000000001" "40000000" FB_ENTRY_TAIL },
        { "lane-64", FB_GRE "af" "02" "01" "30" "0000000000000001" "03400000" FB_ENTRY_TAIL },
        { "with-sequence", "10000800" "00000001" "af" "02" "01" "30" "0000000000000001" FB_ENTRY },
};

static void test_feedback_bad(const void *data) {
        const FeedbackVector *v = data;
        uint8_t buf[MPT_FEEDBACK_SIZE_MAX + 64];
        size_t n = unhex(v->hex, buf, sizeof buf);
        MptFeedback got;
        MptFrame f;

        g_assert_cmpint(mpt_frame_decode(buf, n, &f), ==, -1);
        g_assert_cmpint(f.kind, ==, MPT_FRAME_FEEDBACK);
        g_assert_cmpint(mpt_feedback_decode(&f, &got), ==, MPT_DROP_BAD_FEEDBACK);
}

/* Repair requests: byte for byte as mptd(8) describes them, and back. */
static void test_repair(void) {
        MptRepair r = { .n = 2 }, got;
        uint8_t buf[MPT_REPAIR_SIZE_MAX], want[64];
        size_t n, wn;
        MptFrame f;

        r.entries[0] = (MptRepairEntry) { .path_id = 3, .lane = 1, .count = 2, .first = 0x0102030405060708 };
        r.entries[1] = (MptRepairEntry) { .path_id = 63, .lane = 63, .count = MPT_REPAIR_COUNT_MAX, .first = 1 };
        n = mpt_repair_encode(buf, sizeof buf, MPT_ETH_P_IP, &r);
        wn = unhex("00000800" "b0" "01" "02" "0c" "03010002" "0102030405060708" "3f3f0040" "0000000000000001",
                        want, sizeof want);
        g_assert_cmpuint(n, ==, wn);
        g_assert_cmpmem(buf, n, want, wn);
        g_assert_cmpint(mpt_frame_decode(buf, n, &f), ==, -1);
        g_assert_cmpint(f.kind, ==, MPT_FRAME_REPAIR);
        g_assert_cmpint(mpt_repair_decode(&f, &got), ==, -1);
        g_assert_cmpuint(got.n, ==, 2);
        for (unsigned i = 0; i < 2; i++) {
                g_assert_cmpuint(got.entries[i].path_id, ==, r.entries[i].path_id);
                g_assert_cmpuint(got.entries[i].lane, ==, r.entries[i].lane);
                g_assert_cmpuint(got.entries[i].count, ==, r.entries[i].count);
                g_assert_cmpuint(got.entries[i].first, ==, r.entries[i].first);
        }
        /* Too small a buffer, no entry, too many, or an entry out of range: nothing. */
        g_assert_cmpuint(mpt_repair_encode(buf, n - 1, MPT_ETH_P_IP, &r), ==, 0);
        r.n = 0;
        g_assert_cmpuint(mpt_repair_encode(buf, sizeof buf, MPT_ETH_P_IP, &r), ==, 0);
        r.n = MPT_REPAIR_ENTRIES_MAX + 1;
        g_assert_cmpuint(mpt_repair_encode(buf, sizeof buf, MPT_ETH_P_IP, &r), ==, 0);
        r.n = 1;
        r.entries[0].count = 0;
        g_assert_cmpuint(mpt_repair_encode(buf, sizeof buf, MPT_ETH_P_IP, &r), ==, 0);
        r.entries[0].count = 1;
        r.entries[0].path_id = 64;
        g_assert_cmpuint(mpt_repair_encode(buf, sizeof buf, MPT_ETH_P_IP, &r), ==, 0);

        /* Entries of a later version, longer: the first 12 bytes count, the rest is skipped. */
        wn = unhex("00000800" "b0" "01" "01" "10" "03010002" "0000000000000009" "ffffffff", want, sizeof want);
        g_assert_cmpint(mpt_frame_decode(want, wn, &f), ==, -1);
        g_assert_cmpint(mpt_repair_decode(&f, &got), ==, -1);
        g_assert_cmpuint(got.n, ==, 1);
        g_assert_cmpuint(got.entries[0].first, ==, 9);
        g_assert_cmpuint(got.entries[0].count, ==, 2);
}

#define RP_GRE "00000800"
#define RP_ENTRY "03010002" "0000000000000009"
static const FeedbackVector bad_repair[] = {
        { "version-0", RP_GRE "b0" "00" "01" "0c" RP_ENTRY },
        { "version-2", RP_GRE "b0" "02" "01" "0c" RP_ENTRY },
        { "no-entry", RP_GRE "b0" "01" "00" "0c" },
        { "33-entries", RP_GRE "b0" "01" "21" "0c" RP_ENTRY },
        { "entry-11", RP_GRE "b0" "01" "01" "0b" "030100020000000000000009" },
        { "short", RP_GRE "b0" "01" "02" "0c" RP_ENTRY },
        { "long", RP_GRE "b0" "01" "01" "0c" RP_ENTRY "00" },
        { "header-only", RP_GRE "b0" "01" "01" },
        { "path-id-64", RP_GRE "b0" "01" "01" "0c" "40010002" "0000000000000009" },
        { "lane-64", RP_GRE "b0" "01" "01" "0c" "03400002" "0000000000000009" },
        { "count-0", RP_GRE "b0" "01" "01" "0c" "03010000" "0000000000000009" },
        { "count-65", RP_GRE "b0" "01" "01" "0c" "03010041" "0000000000000009" },
        { "counter-0", RP_GRE "b0" "01" "01" "0c" "03010002" "0000000000000000" },
        { "with-sequence", "10000800" "00000001" "b0" "01" "01" "0c" RP_ENTRY },
};

static void test_repair_bad(const void *data) {
        const FeedbackVector *v = data;
        uint8_t buf[MPT_REPAIR_SIZE_MAX + 64];
        size_t n = unhex(v->hex, buf, sizeof buf);
        MptRepair got;
        MptFrame f;

        g_assert_cmpint(mpt_frame_decode(buf, n, &f), ==, -1);
        g_assert_cmpint(f.kind, ==, MPT_FRAME_REPAIR);
        g_assert_cmpint(mpt_repair_decode(&f, &got), ==, MPT_DROP_BAD_REPAIR);
}

static void test_keepalive_truncation(void) {
        MptKeepalive ka = ext_sample;
        uint8_t buf[MPT_KEEPALIVE_EXT_SIZE];

        g_assert_cmpuint(mpt_keepalive_encode(buf, sizeof buf, &ka), ==, MPT_KEEPALIVE_EXT_SIZE);
        for (size_t len = 0; len <= MPT_KEEPALIVE_EXT_SIZE; len++) {
                uint8_t *copy = NULL;
                MptKeepalive got = {};
                MptFrame f = {};
                int r = decode_exact(buf, len, &f, &copy);

                if (len <= 4) {
                        /* Not even one byte after the GRE header. */
                        g_assert_cmpint(r, ==, MPT_DROP_RUNT);
                        g_free(copy);
                        continue;
                }
                /* The frame decoder only recognises control frames; the keepalive decoder checks them. */
                g_assert_cmpint(r, ==, -1);
                g_assert_cmpint(f.kind, ==, MPT_FRAME_KEEPALIVE);
                r = mpt_keepalive_decode(&f, &got);
                if (len < MPT_KEEPALIVE_SIZE)
                        g_assert_cmpint(r, ==, MPT_DROP_BAD_KEEPALIVE);
                else if (len < MPT_KEEPALIVE_SIZE + 3) {
                        /* Not all of "MPT": an original frame followed by some bytes. */
                        g_assert_cmpint(r, ==, -1);
                        g_assert_false(got.extended);
                } else if (len < MPT_KEEPALIVE_EXT_SIZE)
                        g_assert_cmpint(r, ==, MPT_DROP_BAD_KEEPALIVE); /* announced, but cut short */
                else {
                        g_assert_cmpint(r, ==, -1);
                        g_assert_true(got.extended);
                }
                g_free(copy);
        }
}

/* ---- every drop reason of the decoders ---- */

typedef enum {
        STAGE_FRAME,     /* mpt_frame_decode() returns the reason */
        STAGE_KEEPALIVE, /* mpt_frame_decode() accepts, mpt_keepalive_decode() returns the reason */
} Stage;

typedef struct {
        const char *name;
        GByteArray *(*build)(void);
        Stage stage;
        int reason; /* -1: accepted */
} DropVector;

static GByteArray *v4_frame(uint16_t flags, uint16_t proto, const uint32_t *words, size_t n) {
        uint8_t p[IPV4_LEN];

        make_ipv4(p);
        return frame_new(flags, proto, words, n, p, sizeof p);
}

static GByteArray *build_empty(void) {
        return g_byte_array_new();
}
static GByteArray *build_runt3(void) {
        return g_byte_array_append(g_byte_array_new(), (const uint8_t[]) { 0x00, 0x00, 0x08 }, 3);
}
static GByteArray *build_runt_no_payload(void) {
        return frame_new(0, MPT_ETH_P_IP, NULL, 0, NULL, 0);
}
static GByteArray *build_runt_seq_cut(void) {
        GByteArray *b = frame_new(MPT_GRE_S, MPT_ETH_P_IP, (const uint32_t[]) { 7 }, 1, NULL, 0);
        g_byte_array_set_size(b, 6);
        return b;
}
static GByteArray *build_runt_checksum_cut(void) {
        GByteArray *b = frame_new(MPT_GRE_C, MPT_ETH_P_IP, (const uint32_t[]) { 0 }, 1, NULL, 0);
        g_byte_array_set_size(b, 7);
        return b;
}
static GByteArray *build_runt_key_only(void) {
        /* K announces 4 more bytes; they are there, but nothing follows. */
        return frame_new(MPT_GRE_K, MPT_ETH_P_IP, (const uint32_t[]) { 0xdeadbeef }, 1, NULL, 0);
}
static GByteArray *build_gre_version1(void) {
        return v4_frame(0x0001, MPT_ETH_P_IP, NULL, 0);
}
static GByteArray *build_gre_version7(void) {
        return v4_frame(0x0007, MPT_ETH_P_IP, NULL, 0);
}
static GByteArray *build_gre_routing(void) {
        return v4_frame(MPT_GRE_R, MPT_ETH_P_IP, NULL, 0);
}
static GByteArray *build_gre_reserved_low(void) {
        return v4_frame(0x0008, MPT_ETH_P_IP, NULL, 0);
}
static GByteArray *build_gre_reserved_high(void) {
        return v4_frame(0x0800, MPT_ETH_P_IP, NULL, 0);
}
static GByteArray *build_gre_checksum(bool correct) {
        GByteArray *b = v4_frame(MPT_GRE_C, MPT_ETH_P_IP, (const uint32_t[]) { 0 }, 1);
        uint16_t c = mpt_checksum(b->data, b->len);

        /* RFC 2784: the checksum covers the GRE header (checksum field as zero) and the payload. */
        if (!correct)
                c ^= 0x0100;
        b->data[4] = c >> 8;
        b->data[5] = c & 0xff;
        return b;
}
static GByteArray *build_gre_checksum_bad(void) {
        return build_gre_checksum(false);
}
static GByteArray *build_gre_checksum_good(void) {
        return build_gre_checksum(true);
}
static GByteArray *build_gre_protocol_arp(void) {
        return v4_frame(0, 0x0806, NULL, 0);
}
static GByteArray *build_gre_protocol_teb(void) {
        return v4_frame(MPT_GRE_S, 0x6558, (const uint32_t[]) { 1 }, 1);
}
static GByteArray *build_gre_protocol_keepalive(void) {
        GByteArray *b = g_byte_array_append(g_byte_array_new(), spec_keepalive, sizeof spec_keepalive);
        b->data[2] = 0x88;
        b->data[3] = 0x0b;
        return b;
}
static GByteArray *build_inner_v4_as_v6(void) {
        return v4_frame(0, MPT_ETH_P_IPV6, NULL, 0);
}
static GByteArray *build_inner_v6_as_v4(void) {
        uint8_t p[IPV6_LEN];
        make_ipv6(p);
        return frame_new(0, MPT_ETH_P_IP, NULL, 0, p, sizeof p);
}
static GByteArray *build_inner_version5(void) {
        GByteArray *b = v4_frame(0, MPT_ETH_P_IP, NULL, 0);
        b->data[4] = 0x55;
        return b;
}
static GByteArray *build_inner_ihl4(void) {
        GByteArray *b = v4_frame(0, MPT_ETH_P_IP, NULL, 0);
        b->data[4] = 0x44; /* IHL 4: 16 bytes, shorter than any IPv4 header */
        ipv4_fix_checksum(b->data + 4);
        return b;
}
static GByteArray *build_inner_ihl_beyond(void) {
        uint8_t p[40];
        memcpy(p, ipv4_header, 20);
        memset(p + 20, 0, 20);
        p[0] = 0x4f; /* IHL 15: 60 bytes, more than the packet */
        p[2] = 0;
        p[3] = 40;
        return frame_new(0, MPT_ETH_P_IP, NULL, 0, p, sizeof p);
}
static GByteArray *build_inner_v4_short(void) {
        return frame_new(0, MPT_ETH_P_IP, NULL, 0, ipv4_header, 19);
}
static GByteArray *build_inner_v6_short(void) {
        uint8_t p[IPV6_LEN];
        make_ipv6(p);
        return frame_new(0, MPT_ETH_P_IPV6, NULL, 0, p, 39);
}
static GByteArray *build_inner_checksum(void) {
        GByteArray *b = v4_frame(0, MPT_ETH_P_IP, NULL, 0);
        b->data[4 + 8]--; /* TTL */
        return b;
}
static GByteArray *build_inner_v4_length_long(void) {
        GByteArray *b = v4_frame(0, MPT_ETH_P_IP, NULL, 0);
        b->data[4 + 3] = IPV4_LEN + 1; /* claims a byte more than there is */
        ipv4_fix_checksum(b->data + 4);
        return b;
}
static GByteArray *build_inner_v4_length_short(void) {
        GByteArray *b = v4_frame(0, MPT_ETH_P_IP, NULL, 0);
        b->data[4 + 3] = IPV4_LEN - 1; /* a trailing byte */
        ipv4_fix_checksum(b->data + 4);
        return b;
}
static GByteArray *build_inner_v6_length_long(void) {
        uint8_t p[IPV6_LEN];
        make_ipv6(p);
        p[5] = 9;
        return frame_new(0, MPT_ETH_P_IPV6, NULL, 0, p, sizeof p);
}
static GByteArray *build_inner_v6_length_short(void) {
        uint8_t p[IPV6_LEN];
        make_ipv6(p);
        p[5] = 7;
        return frame_new(MPT_GRE_S, MPT_ETH_P_IPV6, (const uint32_t[]) { 9 }, 1, p, sizeof p);
}
static GByteArray *build_control(uint8_t code) {
        GByteArray *b = g_byte_array_append(g_byte_array_new(), spec_keepalive, sizeof spec_keepalive);
        b->data[4] = code;
        return b;
}
static GByteArray *build_control_a2(void) {
        return build_control(0xa2); /* P_STATUS_CHANGE belongs on the cmd port */
}
static GByteArray *build_control_a0(void) {
        return build_control(0xa0);
}
static GByteArray *build_control_ff(void) {
        return build_control(0xff);
}
static GByteArray *build_data_9f(void) {
        /* Below 0xA0 is data: here neither IPv4 nor IPv6. */
        return build_control(0x9f);
}
static GByteArray *build_keepalive_short(void) {
        return g_byte_array_append(g_byte_array_new(), spec_keepalive, sizeof spec_keepalive - 1);
}
static GByteArray *build_keepalive_version(uint8_t v) {
        GByteArray *b = g_byte_array_append(g_byte_array_new(), spec_keepalive, sizeof spec_keepalive);
        b->data[9] = v;
        return b;
}
static GByteArray *build_keepalive_version5(void) {
        return build_keepalive_version(5);
}
static GByteArray *build_keepalive_version0(void) {
        return build_keepalive_version(0);
}
static GByteArray *build_keepalive_with_seq(void) {
        /* The original never numbers keepalives: S on a keepalive is malformed. */
        return frame_new(MPT_GRE_S, MPT_ETH_P_IP, (const uint32_t[]) { 5 }, 1, spec_keepalive + 4, 40);
}
static GByteArray *build_ext(uint32_t session, uint8_t version, uint16_t weight) {
        MptKeepalive ka = ext_sample;
        GByteArray *b = g_byte_array_sized_new(MPT_KEEPALIVE_EXT_SIZE);

        ka.session = session;
        ka.receive_weight = weight;
        g_byte_array_set_size(b, MPT_KEEPALIVE_EXT_SIZE);
        g_assert_cmpuint(mpt_keepalive_encode(b->data, b->len, &ka), ==, MPT_KEEPALIVE_EXT_SIZE);
        b->data[47] = version;
        return b;
}
static GByteArray *build_ext_ok(void) {
        return build_ext(1, MPT_KEEPALIVE_EXT_VERSION, 0);
}
static GByteArray *build_ext_session0(void) {
        return build_ext(0, MPT_KEEPALIVE_EXT_VERSION, 1);
}
static GByteArray *build_ext_version0(void) {
        return build_ext(1, 0, 1);
}
static GByteArray *build_ext_weight(void) {
        return build_ext(1, MPT_KEEPALIVE_EXT_VERSION, 10001);
}
static GByteArray *build_ext_cut(void) {
        GByteArray *b = build_ext(1, MPT_KEEPALIVE_EXT_VERSION, 1);
        g_byte_array_set_size(b, MPT_KEEPALIVE_EXT_SIZE - 1);
        return b;
}
/* C, K and S together: 16 bytes of header, fields in RFC order checksum, key, sequence. */
static GByteArray *build_cks(void) {
        GByteArray *b = v4_frame(MPT_GRE_C | MPT_GRE_K | MPT_GRE_S, MPT_ETH_P_IP,
                                 (const uint32_t[]) { 0, 0xcafef00d, 0x01020304 }, 3);
        uint16_t c = mpt_checksum(b->data, b->len);
        b->data[4] = c >> 8;
        b->data[5] = c & 0xff;
        return b;
}
static GByteArray *build_ks(void) {
        return v4_frame(MPT_GRE_K | MPT_GRE_S, MPT_ETH_P_IP, (const uint32_t[]) { 0xcafef00d, 0x0a0b0c0d }, 2);
}

static const DropVector drop_vectors[] = {
        { "runt-empty", build_empty, STAGE_FRAME, MPT_DROP_RUNT },
        { "runt-3", build_runt3, STAGE_FRAME, MPT_DROP_RUNT },
        { "runt-no-payload", build_runt_no_payload, STAGE_FRAME, MPT_DROP_RUNT },
        { "runt-seq-cut", build_runt_seq_cut, STAGE_FRAME, MPT_DROP_RUNT },
        { "runt-checksum-cut", build_runt_checksum_cut, STAGE_FRAME, MPT_DROP_RUNT },
        { "runt-key-only", build_runt_key_only, STAGE_FRAME, MPT_DROP_RUNT },
        { "gre-version-1", build_gre_version1, STAGE_FRAME, MPT_DROP_GRE_VERSION },
        { "gre-version-7", build_gre_version7, STAGE_FRAME, MPT_DROP_GRE_VERSION },
        { "gre-flags-routing", build_gre_routing, STAGE_FRAME, MPT_DROP_GRE_FLAGS },
        { "gre-flags-reserved-low", build_gre_reserved_low, STAGE_FRAME, MPT_DROP_GRE_FLAGS },
        { "gre-flags-reserved-high", build_gre_reserved_high, STAGE_FRAME, MPT_DROP_GRE_FLAGS },
        { "gre-checksum-wrong", build_gre_checksum_bad, STAGE_FRAME, MPT_DROP_GRE_CHECKSUM },
        { "gre-checksum-correct", build_gre_checksum_good, STAGE_FRAME, -1 },
        { "gre-protocol-arp", build_gre_protocol_arp, STAGE_FRAME, MPT_DROP_GRE_PROTOCOL },
        { "gre-protocol-teb", build_gre_protocol_teb, STAGE_FRAME, MPT_DROP_GRE_PROTOCOL },
        { "gre-protocol-keepalive", build_gre_protocol_keepalive, STAGE_FRAME, MPT_DROP_GRE_PROTOCOL },
        { "inner-version-v4-as-v6", build_inner_v4_as_v6, STAGE_FRAME, MPT_DROP_INNER_VERSION },
        { "inner-version-v6-as-v4", build_inner_v6_as_v4, STAGE_FRAME, MPT_DROP_INNER_VERSION },
        { "inner-version-5", build_inner_version5, STAGE_FRAME, MPT_DROP_INNER_VERSION },
        { "inner-version-9f", build_data_9f, STAGE_FRAME, MPT_DROP_INNER_VERSION },
        { "inner-header-ihl4", build_inner_ihl4, STAGE_FRAME, MPT_DROP_INNER_HEADER },
        { "inner-header-ihl-beyond", build_inner_ihl_beyond, STAGE_FRAME, MPT_DROP_INNER_HEADER },
        { "inner-header-v4-short", build_inner_v4_short, STAGE_FRAME, MPT_DROP_INNER_HEADER },
        { "inner-header-v6-short", build_inner_v6_short, STAGE_FRAME, MPT_DROP_INNER_HEADER },
        { "inner-checksum", build_inner_checksum, STAGE_FRAME, MPT_DROP_INNER_CHECKSUM },
        { "inner-length-v4-long", build_inner_v4_length_long, STAGE_FRAME, MPT_DROP_INNER_LENGTH },
        { "inner-length-v4-short", build_inner_v4_length_short, STAGE_FRAME, MPT_DROP_INNER_LENGTH },
        { "inner-length-v6-long", build_inner_v6_length_long, STAGE_FRAME, MPT_DROP_INNER_LENGTH },
        { "inner-length-v6-short", build_inner_v6_length_short, STAGE_FRAME, MPT_DROP_INNER_LENGTH },
        { "unknown-control-a2", build_control_a2, STAGE_FRAME, MPT_DROP_UNKNOWN_CONTROL },
        { "unknown-control-a0", build_control_a0, STAGE_FRAME, MPT_DROP_UNKNOWN_CONTROL },
        { "unknown-control-ff", build_control_ff, STAGE_FRAME, MPT_DROP_UNKNOWN_CONTROL },
        { "keepalive-ok", build_ext_ok, STAGE_KEEPALIVE, -1 },
        { "bad-keepalive-short", build_keepalive_short, STAGE_KEEPALIVE, MPT_DROP_BAD_KEEPALIVE },
        { "bad-keepalive-ip-version-5", build_keepalive_version5, STAGE_KEEPALIVE, MPT_DROP_BAD_KEEPALIVE },
        { "bad-keepalive-ip-version-0", build_keepalive_version0, STAGE_KEEPALIVE, MPT_DROP_BAD_KEEPALIVE },
        { "bad-keepalive-with-seq", build_keepalive_with_seq, STAGE_KEEPALIVE, MPT_DROP_BAD_KEEPALIVE },
        { "bad-keepalive-session-0", build_ext_session0, STAGE_KEEPALIVE, MPT_DROP_BAD_KEEPALIVE },
        { "bad-keepalive-ext-version-0", build_ext_version0, STAGE_KEEPALIVE, MPT_DROP_BAD_KEEPALIVE },
        { "bad-keepalive-weight", build_ext_weight, STAGE_KEEPALIVE, MPT_DROP_BAD_KEEPALIVE },
        { "bad-keepalive-ext-cut", build_ext_cut, STAGE_KEEPALIVE, MPT_DROP_BAD_KEEPALIVE },
        { "gre-cks", build_cks, STAGE_FRAME, -1 },
        { "gre-ks", build_ks, STAGE_FRAME, -1 },
};

/* The reasons the two decoders can return; the garbage test checks against this list too. */
static const int decoder_reasons[] = {
        MPT_DROP_RUNT, MPT_DROP_GRE_VERSION, MPT_DROP_GRE_FLAGS, MPT_DROP_GRE_CHECKSUM,
        MPT_DROP_GRE_PROTOCOL, MPT_DROP_INNER_VERSION, MPT_DROP_INNER_HEADER, MPT_DROP_INNER_CHECKSUM,
        MPT_DROP_INNER_LENGTH, MPT_DROP_UNKNOWN_CONTROL, MPT_DROP_BAD_KEEPALIVE,
};

static bool is_decoder_reason(int r) {
        for (size_t i = 0; i < G_N_ELEMENTS(decoder_reasons); i++)
                if (decoder_reasons[i] == r)
                        return true;
        return false;
}

static void test_drop(const void *data) {
        const DropVector *v = data;
        GByteArray *b = v->build();
        uint8_t *copy = NULL;
        MptKeepalive ka;
        MptFrame f = {};
        int r;

        r = decode_exact(b->data, b->len, &f, &copy);
        if (v->stage == STAGE_FRAME) {
                g_assert_cmpint(r, ==, v->reason);
                if (r < 0) {
                        g_assert_cmpint(f.kind, ==, MPT_FRAME_DATA);
                        g_assert_true(f.payload == copy + f.header_len);
                        g_assert_cmpuint(f.header_len + f.payload_len, ==, b->len);
                        g_assert_cmpmem(f.payload, IPV4_LEN, b->data + f.header_len, IPV4_LEN);
                }
        } else {
                g_assert_cmpint(r, ==, -1);
                g_assert_cmpint(f.kind, ==, MPT_FRAME_KEEPALIVE);
                g_assert_cmpint(mpt_keepalive_decode(&f, &ka), ==, v->reason);
        }
        g_free(copy);
        g_byte_array_unref(b);
}

static void test_drop_header_fields(void) {
        GByteArray *b;
        MptFrame f;

        /* C, K and S: the checksum and key words are skipped, the sequence number read after them. */
        b = build_cks();
        g_assert_cmpint(mpt_frame_decode(b->data, b->len, &f), ==, -1);
        g_assert_cmpuint(f.header_len, ==, 16);
        g_assert_true(f.has_seq);
        g_assert_cmphex(f.seq, ==, 0x01020304);
        g_byte_array_unref(b);

        b = build_ks();
        g_assert_cmpint(mpt_frame_decode(b->data, b->len, &f), ==, -1);
        g_assert_cmpuint(f.header_len, ==, 12);
        g_assert_cmphex(f.seq, ==, 0x0a0b0c0d);
        g_byte_array_unref(b);

        b = build_gre_checksum_good();
        g_assert_cmpint(mpt_frame_decode(b->data, b->len, &f), ==, -1);
        g_assert_cmpuint(f.header_len, ==, 8);
        g_assert_false(f.has_seq);
        g_byte_array_unref(b);

        /* Every reserved bit alone is refused. */
        for (unsigned bit = 3; bit <= 11; bit++) {
                b = v4_frame(1u << bit, MPT_ETH_P_IP, NULL, 0);
                g_assert_cmpint(mpt_frame_decode(b->data, b->len, &f), ==, MPT_DROP_GRE_FLAGS);
                g_byte_array_unref(b);
        }
        for (unsigned v = 1; v <= 7; v++) {
                b = v4_frame(v, MPT_ETH_P_IP, NULL, 0);
                g_assert_cmpint(mpt_frame_decode(b->data, b->len, &f), ==, MPT_DROP_GRE_VERSION);
                g_byte_array_unref(b);
        }
}

static void test_drop_all_covered(void) {
        /* Each reason a decoder can return has at least one crafted input above. */
        for (size_t i = 0; i < G_N_ELEMENTS(decoder_reasons); i++) {
                bool found = false;
                for (size_t j = 0; j < G_N_ELEMENTS(drop_vectors); j++)
                        if (drop_vectors[j].reason == decoder_reasons[i])
                                found = true;
                if (!found)
                        g_test_message("no vector for %s", mpt_drop_reason_to_string(decoder_reasons[i]));
                g_assert_true(found);
        }
}

static void truncate_all(const uint8_t *full, size_t full_len, size_t header_len, bool ipv6) {
        size_t min_inner = ipv6 ? 40 : 20;
        bool checksummed = full[0] & 0x80;

        for (size_t len = 0; len < full_len; len++) {
                MptFrame f;
                int r = decode_exact(full, len, &f, NULL), expect;

                if (len < header_len)
                        expect = MPT_DROP_RUNT;         /* header incomplete */
                else if (checksummed && mpt_checksum(full, len) != 0)
                        expect = MPT_DROP_GRE_CHECKSUM; /* the GRE checksum notices the cut first */
                else if (len == header_len)
                        expect = MPT_DROP_RUNT;         /* nothing after the header */
                else if (len - header_len < min_inner)
                        expect = MPT_DROP_INNER_HEADER; /* not a whole IP header */
                else
                        expect = MPT_DROP_INNER_LENGTH; /* header says more than there is */
                if (r != expect)
                        g_test_message("length %zu of %zu", len, full_len);
                g_assert_cmpint(r, ==, expect);
        }
}

static void test_truncation(void) {
        uint8_t buf[8 + IPV4_LEN], inner[IPV4_LEN];
        size_t h;

        make_ipv4(inner);
        memcpy(buf + 8, inner, IPV4_LEN);
        h = mpt_gre_encode(buf + 8, MPT_ETH_P_IP, true, 42);
        truncate_all(buf + 8 - h, h + IPV4_LEN, h, false);

        make_ipv6(inner);
        memcpy(buf + 8, inner, IPV6_LEN);
        h = mpt_gre_encode(buf + 8, MPT_ETH_P_IPV6, false, 0);
        truncate_all(buf + 8 - h, h + IPV6_LEN, h, true);

        {
                GByteArray *b = build_cks();
                truncate_all(b->data, b->len, 16, false);
                g_byte_array_unref(b);
        }
}

static void test_inner_validate(void) {
        uint8_t p4[IPV4_LEN], p6[IPV6_LEN];

        make_ipv4(p4);
        make_ipv6(p6);
        g_assert_cmpint(mpt_inner_validate(p4, IPV4_LEN, MPT_ETH_P_IP), ==, -1);
        g_assert_cmpint(mpt_inner_validate(p6, IPV6_LEN, MPT_ETH_P_IPV6), ==, -1);
        g_assert_cmpint(mpt_inner_validate(p4, IPV4_LEN, 0x0806), ==, MPT_DROP_GRE_PROTOCOL);
        g_assert_cmpint(mpt_inner_validate(p4, 0, MPT_ETH_P_IP), ==, MPT_DROP_INNER_VERSION);
        g_assert_cmpint(mpt_inner_validate(p6, 0, MPT_ETH_P_IPV6), ==, MPT_DROP_INNER_VERSION);

        /* IPv4 options: IHL 6 (24 bytes), checksum over all of it. */
        {
                uint8_t o[28] = { 0x46, 0, 0, 28, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
                                  0x01, 0x01, 0x01, 0x00, 1, 2, 3, 4 };
                ipv4_fix_checksum(o);
                g_assert_cmpint(mpt_inner_validate(o, sizeof o, MPT_ETH_P_IP), ==, -1);
                o[22] ^= 1; /* inside the options: covered by the checksum */
                g_assert_cmpint(mpt_inner_validate(o, sizeof o, MPT_ETH_P_IP), ==, MPT_DROP_INNER_CHECKSUM);
                o[22] ^= 1;
                o[25] ^= 1; /* payload: not covered */
                g_assert_cmpint(mpt_inner_validate(o, sizeof o, MPT_ETH_P_IP), ==, -1);
        }
        /* A bare IPv6 header (payload length 0) and a bare IPv4 header are whole packets. */
        p6[4] = p6[5] = 0;
        g_assert_cmpint(mpt_inner_validate(p6, 40, MPT_ETH_P_IPV6), ==, -1);
        memcpy(p4, ipv4_header, 20);
        p4[3] = 20;
        ipv4_fix_checksum(p4);
        g_assert_cmpint(mpt_inner_validate(p4, 20, MPT_ETH_P_IP), ==, -1);
}

/* ---- garbage ---- */

static void test_garbage(void) {
        GRand *rand = g_rand_new_with_seed(0x4d5054);
        GByteArray *seeds[6];
        unsigned n_data = 0, n_keepalive = 0, n_dropped = 0;
        uint8_t p4[IPV4_LEN], p6[IPV6_LEN];

        make_ipv4(p4);
        make_ipv6(p6);
        seeds[0] = frame_new(MPT_GRE_S, MPT_ETH_P_IP, (const uint32_t[]) { 1 }, 1, p4, sizeof p4);
        seeds[1] = frame_new(0, MPT_ETH_P_IPV6, NULL, 0, p6, sizeof p6);
        seeds[2] = g_byte_array_append(g_byte_array_new(), spec_keepalive, sizeof spec_keepalive);
        seeds[3] = build_ext_ok();
        seeds[4] = build_cks();
        seeds[5] = build_ks();

        /* Random bytes and mutations of valid frames, each in a heap buffer of exactly its length so
         * that AddressSanitizer catches any read beyond it. Whatever the decoder accepts must be
         * consistent and, for data, pass the inner validation. */
        for (unsigned i = 0; i < 20000; i++) {
                size_t len;
                uint8_t *buf;
                MptFrame f;
                int r;

                if (i % 4 == 0) {
                        len = g_rand_int_range(rand, 0, 200);
                        buf = g_malloc(len ?: 1);
                        for (size_t j = 0; j < len; j++)
                                buf[j] = (uint8_t) g_rand_int(rand);
                        if (len >= 5 && g_rand_boolean(rand)) {
                                /* plausible header, random rest */
                                buf[0] = g_rand_boolean(rand) ? 0x10 : 0x00;
                                buf[1] = 0;
                                buf[2] = g_rand_boolean(rand) ? 0x08 : 0x86;
                                buf[3] = buf[2] == 0x08 ? 0x00 : 0xdd;
                        }
                } else {
                        const GByteArray *s = seeds[g_rand_int_range(rand, 0, G_N_ELEMENTS(seeds))];
                        unsigned n_mut = g_rand_int_range(rand, 0, 4);

                        len = s->len;
                        switch (g_rand_int_range(rand, 0, 4)) {
                        case 0:
                                len = g_rand_int_range(rand, 0, (gint32) s->len + 1);
                                break;
                        case 1:
                                len = s->len + g_rand_int_range(rand, 1, 8);
                                break;
                        default:
                                break;
                        }
                        buf = g_malloc0(len ?: 1);
                        memcpy(buf, s->data, MIN(len, (size_t) s->len));
                        for (unsigned m = 0; m < n_mut && len > 0; m++) {
                                size_t at = g_rand_int_range(rand, 0, (gint32) len);
                                buf[at] ^= (uint8_t) (1u << g_rand_int_range(rand, 0, 8));
                        }
                }

                r = mpt_frame_decode(len > 0 ? buf : NULL, len, &f);
                if (r >= 0) {
                        g_assert_true(is_decoder_reason(r));
                        n_dropped++;
                } else {
                        g_assert_cmpint(r, ==, -1);
                        g_assert_cmpuint(f.header_len, >=, 4);
                        g_assert_cmpuint(f.header_len, <=, MPT_GRE_HEADER_MAX);
                        g_assert_cmpuint(f.header_len % 4, ==, 0);
                        g_assert_cmpuint(f.header_len + f.payload_len, ==, len);
                        g_assert_true(f.payload == buf + f.header_len);
                        g_assert_cmpuint(f.payload_len, >, 0);
                        if (f.kind == MPT_FRAME_DATA) {
                                g_assert_true(f.protocol == MPT_ETH_P_IP || f.protocol == MPT_ETH_P_IPV6);
                                g_assert_cmphex(mpt_inner_protocol(f.payload, f.payload_len), ==, f.protocol);
                                r = mpt_inner_validate(f.payload, f.payload_len, f.protocol);
                                g_assert_cmpint(r, ==, -1);
                                n_data++;
                        } else if (f.kind == MPT_FRAME_PATH_STATUS) {
                                MptPathStatus ps;
                                g_assert_cmphex(f.payload[0], ==, MPT_CONTROL_PATH_STATUS);
                                r = mpt_path_status_decode(&f, &ps);
                                if (r == -1)
                                        g_assert_true(ps.session != 0 && ps.path_token != 0);
                                else
                                        g_assert_cmpint(r, ==, MPT_DROP_BAD_KEEPALIVE);
                        } else if (f.kind == MPT_FRAME_FEEDBACK) {
                                MptFeedback fb;
                                g_assert_cmphex(f.payload[0], ==, MPT_CONTROL_FEEDBACK);
                                r = mpt_feedback_decode(&f, &fb);
                                if (r == -1)
                                        g_assert_true(fb.n >= 1 && fb.n <= MPT_FEEDBACK_ENTRIES_MAX);
                                else
                                        g_assert_cmpint(r, ==, MPT_DROP_BAD_FEEDBACK);
                        } else if (f.kind == MPT_FRAME_REPAIR) {
                                MptRepair rp;
                                g_assert_cmphex(f.payload[0], ==, MPT_CONTROL_REPAIR);
                                r = mpt_repair_decode(&f, &rp);
                                if (r == -1)
                                        g_assert_true(rp.n >= 1 && rp.n <= MPT_REPAIR_ENTRIES_MAX);
                                else
                                        g_assert_cmpint(r, ==, MPT_DROP_BAD_REPAIR);
                        } else {
                                MptKeepalive ka;
                                g_assert_cmpint(f.kind, ==, MPT_FRAME_KEEPALIVE);
                                g_assert_cmphex(f.payload[0], ==, MPT_CONTROL_KEEPALIVE);
                                r = mpt_keepalive_decode(&f, &ka);
                                if (r == -1) {
                                        g_assert_true(ka.ip_version == 4 || ka.ip_version == 6);
                                        if (ka.extended)
                                                g_assert_cmpuint(ka.session, !=, 0);
                                        n_keepalive++;
                                } else
                                        g_assert_cmpint(r, ==, MPT_DROP_BAD_KEEPALIVE);
                        }
                }
                g_free(buf);
        }
        /* The run must exercise all outcomes, or it proves nothing. */
        g_test_message("data %u, keepalives %u, dropped %u", n_data, n_keepalive, n_dropped);
        g_assert_cmpuint(n_data, >, 1000);
        g_assert_cmpuint(n_keepalive, >, 1000);
        g_assert_cmpuint(n_dropped, >, 1000);

        for (size_t i = 0; i < G_N_ELEMENTS(seeds); i++)
                g_byte_array_unref(seeds[i]);
        g_rand_free(rand);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        g_test_add_func("/mpt/wire/checksum", test_checksum);
        g_test_add_func("/mpt/wire/seq-diff", test_seq_diff);
        g_test_add_func("/mpt/wire/drop-reason-enum", test_drop_reason_enum);
        for (size_t i = 0; i < G_N_ELEMENTS(encode_vectors); i++) {
                g_autofree char *p = g_strdup_printf("/mpt/wire/encode-decode/%s", encode_vectors[i].name);
                g_test_add_data_func(p, &encode_vectors[i], test_encode_decode);
        }
        g_test_add_func("/mpt/wire/inner-protocol", test_inner_protocol);
        g_test_add_func("/mpt/wire/inner-validate", test_inner_validate);
        g_test_add_func("/mpt/wire/keepalive/spec-example", test_keepalive_spec_example);
        g_test_add_func("/mpt/wire/keepalive/ipv6", test_keepalive_ipv6);
        g_test_add_func("/mpt/wire/keepalive/unset-addresses", test_keepalive_unset_addresses);
        g_test_add_func("/mpt/wire/keepalive/extension", test_keepalive_extension);
        g_test_add_func("/mpt/wire/keepalive/truncation", test_keepalive_truncation);
        g_test_add_func("/mpt/wire/path-status", test_path_status);
        g_test_add_func("/mpt/wire/feedback", test_feedback);
        g_test_add_func("/mpt/wire/feedback/longer-entries", test_feedback_longer_entries);
        for (size_t i = 0; i < G_N_ELEMENTS(bad_feedback); i++) {
                g_autofree char *p = g_strdup_printf("/mpt/wire/feedback/bad/%s", bad_feedback[i].name);
                g_test_add_data_func(p, &bad_feedback[i], test_feedback_bad);
        }
        g_test_add_func("/mpt/wire/repair", test_repair);
        for (size_t i = 0; i < G_N_ELEMENTS(bad_repair); i++) {
                g_autofree char *p = g_strdup_printf("/mpt/wire/repair/bad/%s", bad_repair[i].name);
                g_test_add_data_func(p, &bad_repair[i], test_repair_bad);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(drop_vectors); i++) {
                g_autofree char *p = g_strdup_printf("/mpt/wire/drop/%s", drop_vectors[i].name);
                g_test_add_data_func(p, &drop_vectors[i], test_drop);
        }
        g_test_add_func("/mpt/wire/drop/header-fields", test_drop_header_fields);
        g_test_add_func("/mpt/wire/drop/all-covered", test_drop_all_covered);
        g_test_add_func("/mpt/wire/truncation", test_truncation);
        g_test_add_func("/mpt/wire/garbage", test_garbage);

        return g_test_run();
}
