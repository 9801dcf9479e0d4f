/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "byteorder.h"
#include "ip-header.h"
#include "profile.h"
#include "wire.h"

static const char *const mpt_drop_reason_table[_MPT_DROP_MAX] = {
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
DEFINE_STRING_TABLE(mpt_drop_reason, MptDropReason, _MPT_DROP_MAX);

uint16_t mpt_checksum(const void *data, size_t len) {
        return csum_fold(csum_add(0, data, len));
}

uint16_t mpt_inner_protocol(const uint8_t *pkt, size_t len) {
        if (len < 1)
                return 0;
        switch (pkt[0] >> 4) {
        case 4:
                return len >= 20 ? MPT_ETH_P_IP : 0;
        case 6:
                return len >= 40 ? MPT_ETH_P_IPV6 : 0;
        default:
                return 0;
        }
}

int mpt_inner_validate(const uint8_t *pkt, size_t len, uint16_t protocol) {
        unsigned version = len > 0 ? pkt[0] >> 4 : 0;

        if (protocol == MPT_ETH_P_IP) {
                size_t ihl, total;
                if (version != 4)
                        return MPT_DROP_INNER_VERSION;
                if (len < IP4_HEADER_MIN)
                        return MPT_DROP_INNER_HEADER;
                ihl = (size_t) (pkt[0] & 0x0f) * 4;
                if (ihl < IP4_HEADER_MIN || ihl > len)
                        return MPT_DROP_INNER_HEADER;
                total = rd16be(pkt + IP4_OFF_TOTAL_LEN);
                if (total != len)
                        return MPT_DROP_INNER_LENGTH;
                if (mpt_checksum(pkt, ihl) != 0)
                        return MPT_DROP_INNER_CHECKSUM;
                return -1;
        }
        if (protocol == MPT_ETH_P_IPV6) {
                if (version != 6)
                        return MPT_DROP_INNER_VERSION;
                if (len < IP6_HEADER_LEN)
                        return MPT_DROP_INNER_HEADER;
                if ((size_t) rd16be(pkt + IP6_OFF_PAYLOAD_LEN) + IP6_HEADER_LEN != len)
                        return MPT_DROP_INNER_LENGTH;
                return -1;
        }
        return MPT_DROP_GRE_PROTOCOL;
}

int mpt_frame_decode(const uint8_t *buf, size_t len, MptFrame *ret) {
        MptFrame f = {};
        uint16_t flags;
        size_t off = MPT_GRE_HEADER_BASE;

        if (len < MPT_GRE_HEADER_BASE)
                return MPT_DROP_RUNT;
        flags = rd16be(buf);
        if (flags & MPT_GRE_VERSION)
                return MPT_DROP_GRE_VERSION;
        if (flags & (MPT_GRE_R | MPT_GRE_RESERVED0))
                return MPT_DROP_GRE_FLAGS;
        f.protocol = rd16be(buf + 2);

        if (flags & MPT_GRE_C)
                off += MPT_GRE_FIELD_SIZE;
        if (flags & MPT_GRE_K)
                off += MPT_GRE_FIELD_SIZE;
        if (flags & MPT_GRE_S) {
                if (len < off + MPT_GRE_FIELD_SIZE)
                        return MPT_DROP_RUNT;
                f.has_seq = true;
                f.seq = rd32be(buf + off);
                off += MPT_GRE_FIELD_SIZE;
        }
        if (len < off)
                return MPT_DROP_RUNT;
        /* RFC 2784: the checksum covers the GRE header and the payload. */
        if ((flags & MPT_GRE_C) && mpt_checksum(buf, len) != 0)
                return MPT_DROP_GRE_CHECKSUM;
        if (f.protocol != MPT_ETH_P_IP && f.protocol != MPT_ETH_P_IPV6)
                return MPT_DROP_GRE_PROTOCOL;

        f.header_len = off;
        f.payload = buf + off;
        f.payload_len = len - off;
        if (f.payload_len == 0)
                return MPT_DROP_RUNT;

        if (f.payload[0] >= MPT_CONTROL_MIN) {
                /* In-band control, told apart by its first byte as the original does (spec 2.4). */
                if (f.payload[0] == MPT_CONTROL_KEEPALIVE)
                        f.kind = MPT_FRAME_KEEPALIVE;
                else if (f.payload[0] == MPT_CONTROL_PATH_STATUS)
                        f.kind = MPT_FRAME_PATH_STATUS;
                else if (f.payload[0] == MPT_CONTROL_FEEDBACK)
                        f.kind = MPT_FRAME_FEEDBACK;
                else if (f.payload[0] == MPT_CONTROL_REPAIR)
                        f.kind = MPT_FRAME_REPAIR;
                else
                        return MPT_DROP_UNKNOWN_CONTROL;
        } else {
                int reason = mpt_inner_validate(f.payload, f.payload_len, f.protocol);
                if (reason >= 0)
                        return reason;
                f.kind = MPT_FRAME_DATA;
        }
        *ret = f;
        return -1;
}

size_t mpt_gre_encode(uint8_t *end, uint16_t protocol, bool with_seq, uint32_t seq) {
        if (with_seq) {
                uint8_t *h = end - MPT_GRE_HEADER_SEQ;
                wr16be(h, MPT_GRE_S);
                wr16be(h + 2, protocol);
                wr32be(h + MPT_GRE_HEADER_BASE, seq);
                return MPT_GRE_HEADER_SEQ;
        }
        wr16be(end - MPT_GRE_HEADER_BASE, 0);
        wr16be(end - 2, protocol);
        return MPT_GRE_HEADER_BASE;
}

/* The original's control header (spec 2.4), from the control code, the GRE payload's first byte:
 * the code at 0, the IP version at 5, the tunnel's source and destination addresses (16 bytes
 * each, IPv4 mapped) at 8 and 24, 40 bytes in all; what lies between (value, authentication,
 * round) we send as 0. Our extension follows it: "MPT", its version, then its fields. */
#define CONTROL_OFF_IP_VERSION 5u
#define CONTROL_OFF_SRC 8u
#define CONTROL_OFF_DST 24u
#define CONTROL_HEADER_SIZE 40u
#define EXT_OFF_MAGIC CONTROL_HEADER_SIZE
#define EXT_OFF_VERSION 43u
/* The keepalive extension's fields (mptd(8), "keepalive extension"). */
#define KA_OFF_FLAGS 44u
#define KA_OFF_RECEIVE_WEIGHT 46u
#define KA_OFF_SESSION 48u
#define KA_OFF_SEQ 52u
#define KA_OFF_ECHO_SEQ 56u
#define KA_OFF_ECHO_DELAY 60u
#define KA_OFF_RX_COUNT 64u
#define KA_OFF_PATH_TOKEN 68u
/* The path-status frame's. */
#define PS_OFF_SESSION 44u
#define PS_OFF_PATH_TOKEN 48u
#define PS_OFF_FLAGS 52u

static const uint8_t ext_magic[3] = { 'M', 'P', 'T' };

static void control_header(uint8_t *p, uint8_t code, uint8_t ip_version, const MptAddress *src,
                           const MptAddress *dst);

size_t mpt_keepalive_encode(uint8_t *buf, size_t size, const MptKeepalive *ka) {
        size_t len = ka->extended ? MPT_KEEPALIVE_EXT_SIZE : MPT_KEEPALIVE_SIZE;
        uint8_t *c = buf + MPT_GRE_HEADER_BASE;

        if (size < len)
                return 0;
        memset(buf, 0, len);
        /* GRE: no flags, protocol type from the tunnel's IP version (the original's rule). */
        wr16be(buf + 2, ka->ip_version == 6 ? MPT_ETH_P_IPV6 : MPT_ETH_P_IP);
        /* value, auth type, auth length, round: all 0 */
        control_header(c, MPT_CONTROL_KEEPALIVE, ka->ip_version, &ka->src_tun, &ka->dst_tun);
        if (!ka->extended)
                return len;

        memcpy(c + EXT_OFF_MAGIC, ext_magic, 3);
        c[EXT_OFF_VERSION] = MPT_KEEPALIVE_EXT_VERSION;
        c[KA_OFF_FLAGS] = ka->flags;
        wr16be(c + KA_OFF_RECEIVE_WEIGHT, ka->receive_weight);
        wr32be(c + KA_OFF_SESSION, ka->session);
        wr32be(c + KA_OFF_SEQ, ka->seq);
        wr32be(c + KA_OFF_ECHO_SEQ, ka->echo_seq);
        wr32be(c + KA_OFF_ECHO_DELAY, ka->echo_delay_us);
        wr32be(c + KA_OFF_RX_COUNT, ka->rx_count);
        wr32be(c + KA_OFF_PATH_TOKEN, ka->path_token);
        return len;
}

int mpt_keepalive_decode(const MptFrame *frame, MptKeepalive *ret) {
        const uint8_t *p = frame->payload; /* the control code byte; frame offset 4 in the original */
        size_t len = frame->payload_len;
        static const uint8_t zero[16];
        MptKeepalive ka = {};

        if (frame->kind != MPT_FRAME_KEEPALIVE || frame->has_seq)
                return MPT_DROP_BAD_KEEPALIVE;
        if (len < MPT_KEEPALIVE_SIZE - MPT_GRE_HEADER_BASE)
                return MPT_DROP_BAD_KEEPALIVE;
        ka.ip_version = p[CONTROL_OFF_IP_VERSION];
        if (ka.ip_version != 4 && ka.ip_version != 6)
                return MPT_DROP_BAD_KEEPALIVE;
        if (memcmp(p + CONTROL_OFF_SRC, zero, 16) != 0)
                address_from_wire16(p + CONTROL_OFF_SRC, &ka.src_tun);
        if (memcmp(p + CONTROL_OFF_DST, zero, 16) != 0)
                address_from_wire16(p + CONTROL_OFF_DST, &ka.dst_tun);

        if (len >= EXT_OFF_MAGIC + sizeof ext_magic && memcmp(p + EXT_OFF_MAGIC, ext_magic, 3) == 0) {
                if (len < MPT_KEEPALIVE_EXT_SIZE - MPT_GRE_HEADER_BASE ||
                    p[EXT_OFF_VERSION] < MPT_KEEPALIVE_EXT_VERSION)
                        return MPT_DROP_BAD_KEEPALIVE;
                ka.extended = true;
                ka.flags = p[KA_OFF_FLAGS];
                ka.receive_weight = rd16be(p + KA_OFF_RECEIVE_WEIGHT);
                ka.session = rd32be(p + KA_OFF_SESSION);
                ka.seq = rd32be(p + KA_OFF_SEQ);
                ka.echo_seq = rd32be(p + KA_OFF_ECHO_SEQ);
                ka.echo_delay_us = rd32be(p + KA_OFF_ECHO_DELAY);
                ka.rx_count = rd32be(p + KA_OFF_RX_COUNT);
                ka.path_token = rd32be(p + KA_OFF_PATH_TOKEN);
                if (ka.session == 0 || ka.receive_weight > MPT_WEIGHT_MAX || ka.path_token == 0)
                        return MPT_DROP_BAD_KEEPALIVE;
        }
        *ret = ka;
        return -1;
}

/* The control header shared by our frames: the original's 40 bytes, no authentication. */
static void control_header(uint8_t *p, uint8_t code, uint8_t ip_version, const MptAddress *src,
                           const MptAddress *dst) {
        p[0] = code;
        p[CONTROL_OFF_IP_VERSION] = ip_version;
        address_to_wire16(src, p + CONTROL_OFF_SRC);
        address_to_wire16(dst, p + CONTROL_OFF_DST);
}

size_t mpt_path_status_encode(uint8_t *buf, size_t size, const MptPathStatus *ps) {
        uint8_t *c = buf + MPT_GRE_HEADER_BASE;

        if (size < MPT_PATH_STATUS_SIZE)
                return 0;
        memset(buf, 0, MPT_PATH_STATUS_SIZE);
        wr16be(buf + 2, ps->ip_version == 6 ? MPT_ETH_P_IPV6 : MPT_ETH_P_IP);
        control_header(c, MPT_CONTROL_PATH_STATUS, ps->ip_version, &ps->src_tun, &ps->dst_tun);
        memcpy(c + EXT_OFF_MAGIC, ext_magic, 3);
        c[EXT_OFF_VERSION] = MPT_KEEPALIVE_EXT_VERSION;
        wr32be(c + PS_OFF_SESSION, ps->session);
        wr32be(c + PS_OFF_PATH_TOKEN, ps->path_token);
        c[PS_OFF_FLAGS] = ps->flags;
        return MPT_PATH_STATUS_SIZE;
}

int mpt_path_status_decode(const MptFrame *frame, MptPathStatus *ret) {
        const uint8_t *p = frame->payload;
        static const uint8_t zero[16];
        MptPathStatus ps = {};

        if (frame->kind != MPT_FRAME_PATH_STATUS || frame->has_seq)
                return MPT_DROP_BAD_KEEPALIVE;
        if (frame->payload_len < MPT_PATH_STATUS_SIZE - MPT_GRE_HEADER_BASE ||
            memcmp(p + EXT_OFF_MAGIC, ext_magic, 3) != 0 || p[EXT_OFF_VERSION] < MPT_KEEPALIVE_EXT_VERSION)
                return MPT_DROP_BAD_KEEPALIVE;
        ps.ip_version = p[CONTROL_OFF_IP_VERSION];
        if (ps.ip_version != 4 && ps.ip_version != 6)
                return MPT_DROP_BAD_KEEPALIVE;
        if (memcmp(p + CONTROL_OFF_SRC, zero, 16) != 0)
                address_from_wire16(p + CONTROL_OFF_SRC, &ps.src_tun);
        if (memcmp(p + CONTROL_OFF_DST, zero, 16) != 0)
                address_from_wire16(p + CONTROL_OFF_DST, &ps.dst_tun);
        ps.session = rd32be(p + PS_OFF_SESSION);
        ps.path_token = rd32be(p + PS_OFF_PATH_TOKEN);
        ps.flags = p[PS_OFF_FLAGS];
        if (ps.session == 0 || ps.path_token == 0)
                return MPT_DROP_BAD_KEEPALIVE;
        *ret = ps;
        return -1;
}

/* The header of our frames that carry a list (feedback, repair; wire.h), from the code byte:
 * the version, the number of entries and their size follow it. */
#define LIST_OFF_VERSION 1u
#define LIST_OFF_COUNT 2u
#define LIST_OFF_ENTRY_SIZE 3u
#define FEEDBACK_OFF_CLOCK 4u /* the receiver's clock, after the list header */

static void list_header_encode(uint8_t *buf, uint16_t protocol, uint8_t code, uint8_t version, unsigned n,
                               uint8_t entry_size) {
        uint8_t *c = buf + MPT_GRE_HEADER_BASE;

        wr16be(buf + 2, protocol);
        c[0] = code;
        c[LIST_OFF_VERSION] = version;
        c[LIST_OFF_COUNT] = (uint8_t) n;
        c[LIST_OFF_ENTRY_SIZE] = entry_size;
}

/* Checks the header of a received list frame of the given kind and version, whose header
 * (GRE header included) is header_size bytes: 1 to max entries of at least min_size bytes each,
 * which fill the frame exactly. Returns the number of entries and stores their size in
 * *ret_size, or returns 0 when it is malformed. */
static size_t list_header_decode(const MptFrame *frame, MptFrameKind kind, uint8_t version,
                                 size_t header_size, size_t max, size_t min_size, size_t *ret_size) {
        const uint8_t *p = frame->payload;
        size_t len = frame->payload_len, n, size;

        if (frame->kind != kind || frame->has_seq || len < header_size - MPT_GRE_HEADER_BASE)
                return 0;
        n = p[LIST_OFF_COUNT];
        size = p[LIST_OFF_ENTRY_SIZE];
        if (p[LIST_OFF_VERSION] != version || n == 0 || n > max || size < min_size ||
            len != header_size - MPT_GRE_HEADER_BASE + n * size)
                return 0;
        *ret_size = size;
        return n;
}

size_t mpt_feedback_encode(uint8_t *buf, size_t size, uint16_t protocol, const MptFeedback *fb) {
        size_t len = MPT_FEEDBACK_HEADER_SIZE + (size_t) fb->n * MPT_FEEDBACK_ENTRY_SIZE;

        if (fb->n == 0 || fb->n > MPT_FEEDBACK_ENTRIES_MAX || size < len)
                return 0;
        memset(buf, 0, len);
        list_header_encode(buf, protocol, MPT_CONTROL_FEEDBACK, MPT_FEEDBACK_VERSION, fb->n,
                           MPT_FEEDBACK_ENTRY_SIZE);
        wr64be(buf + MPT_GRE_HEADER_BASE + FEEDBACK_OFF_CLOCK, fb->now);
        for (unsigned i = 0; i < fb->n; i++) {
                uint8_t *e = buf + MPT_FEEDBACK_HEADER_SIZE + (size_t) i * MPT_FEEDBACK_ENTRY_SIZE;
                const MptFeedbackEntry *x = &fb->entries[i];

                e[0] = x->path_id;
                e[1] = x->lane;
                wr32be(e + 4, x->packets);
                wr64be(e + 8, x->bytes);
                wr64be(e + 16, x->marker);
                wr64be(e + 24, x->arrival);
                wr64be(e + 32, x->peak_rate);
                wr64be(e + 40, x->sent);
        }
        return len;
}

int mpt_feedback_decode(const MptFrame *frame, MptFeedback *ret) {
        const uint8_t *p = frame->payload; /* the code byte */
        size_t n, size = 0;
        MptFeedback fb = {};

        n = list_header_decode(frame, MPT_FRAME_FEEDBACK, MPT_FEEDBACK_VERSION, MPT_FEEDBACK_HEADER_SIZE,
                               MPT_FEEDBACK_ENTRIES_MAX, MPT_FEEDBACK_ENTRY_SIZE, &size);
        if (n == 0)
                return MPT_DROP_BAD_FEEDBACK;
        fb.now = rd64be(p + FEEDBACK_OFF_CLOCK);
        fb.n = (unsigned) n;
        for (size_t i = 0; i < n; i++) {
                const uint8_t *e = p + MPT_FEEDBACK_HEADER_SIZE - MPT_GRE_HEADER_BASE + i * size;
                MptFeedbackEntry *x = &fb.entries[i];

                if (e[0] >= MPT_WIRE_PATHS_MAX || e[1] >= MPT_WIRE_LANES_MAX)
                        return MPT_DROP_BAD_FEEDBACK;
                x->path_id = e[0];
                x->lane = e[1];
                x->packets = rd32be(e + 4);
                x->bytes = rd64be(e + 8);
                x->marker = rd64be(e + 16);
                x->arrival = rd64be(e + 24);
                x->peak_rate = rd64be(e + 32);
                x->sent = rd64be(e + 40);
        }
        *ret = fb;
        return -1;
}

size_t mpt_repair_encode(uint8_t *buf, size_t size, uint16_t protocol, const MptRepair *r) {
        size_t len = MPT_REPAIR_HEADER_SIZE + (size_t) r->n * MPT_REPAIR_ENTRY_SIZE;

        if (r->n == 0 || r->n > MPT_REPAIR_ENTRIES_MAX || size < len)
                return 0;
        memset(buf, 0, len);
        list_header_encode(buf, protocol, MPT_CONTROL_REPAIR, MPT_REPAIR_VERSION, r->n,
                           MPT_REPAIR_ENTRY_SIZE);
        for (unsigned i = 0; i < r->n; i++) {
                uint8_t *e = buf + MPT_REPAIR_HEADER_SIZE + (size_t) i * MPT_REPAIR_ENTRY_SIZE;
                const MptRepairEntry *x = &r->entries[i];

                if (x->path_id >= MPT_WIRE_PATHS_MAX || x->lane >= MPT_WIRE_LANES_MAX || x->count == 0 ||
                    x->count > MPT_REPAIR_COUNT_MAX || x->first == 0)
                        return 0;
                e[0] = x->path_id;
                e[1] = x->lane;
                wr16be(e + 2, x->count);
                wr64be(e + 4, x->first);
        }
        return len;
}

int mpt_repair_decode(const MptFrame *frame, MptRepair *ret) {
        const uint8_t *p = frame->payload; /* the code byte */
        size_t n, size = 0;
        MptRepair r = {};

        n = list_header_decode(frame, MPT_FRAME_REPAIR, MPT_REPAIR_VERSION, MPT_REPAIR_HEADER_SIZE,
                               MPT_REPAIR_ENTRIES_MAX, MPT_REPAIR_ENTRY_SIZE, &size);
        if (n == 0)
                return MPT_DROP_BAD_REPAIR;
        r.n = (unsigned) n;
        for (size_t i = 0; i < n; i++) {
                const uint8_t *e = p + MPT_REPAIR_HEADER_SIZE - MPT_GRE_HEADER_BASE + i * size;
                MptRepairEntry *x = &r.entries[i];

                x->path_id = e[0];
                x->lane = e[1];
                x->count = rd16be(e + 2);
                x->first = rd64be(e + 4);
                if (x->path_id >= MPT_WIRE_PATHS_MAX || x->lane >= MPT_WIRE_LANES_MAX || x->count == 0 ||
                    x->count > MPT_REPAIR_COUNT_MAX || x->first == 0)
                        return MPT_DROP_BAD_REPAIR;
        }
        *ret = r;
        return -1;
}
