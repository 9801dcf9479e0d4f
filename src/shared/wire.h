/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The MPT wire format (GRE-in-UDP, RFC 8086, as the original MPT puts it on the wire; see the
 * protocol description, sections 2 and 3.6). Pure functions: no system calls, no allocation. */

#include "in-addr-util.h"

#define MPT_ETH_P_IP 0x0800u
#define MPT_ETH_P_IPV6 0x86DDu

#define MPT_GRE_C 0x8000u /* checksum present */
#define MPT_GRE_R 0x4000u /* routing present (RFC 1701; not supported) */
#define MPT_GRE_K 0x2000u /* key present */
#define MPT_GRE_S 0x1000u /* sequence number present */
#define MPT_GRE_RESERVED0 0x0ff8u
#define MPT_GRE_VERSION 0x0007u

#define MPT_GRE_HEADER_BASE 4u    /* flags and version, protocol type (RFC 2784) */
#define MPT_GRE_FIELD_SIZE 4u     /* each optional field: checksum + reserved1, key, sequence (RFC 2890) */
#define MPT_GRE_HEADER_MAX 16u    /* base + checksum + key + sequence */
#define MPT_GRE_HEADER_SEQ 8u     /* what we send when sequencing: base + sequence */
#define MPT_CONTROL_MIN 0xA0u     /* first payload byte at or above this: in-band control */
#define MPT_CONTROL_KEEPALIVE 0xA1u
#define MPT_KEEPALIVE_SIZE 44u    /* GRE 4 + control header 40, as the original sends */
#define MPT_KEEPALIVE_EXT_SIZE 76u /* with our extension (section "keepalive extension" in mptd(8)) */
#define MPT_CONTROL_PATH_STATUS 0xAEu /* our extension: the state of another path; original peers drop it */
#define MPT_PATH_STATUS_SIZE 60u  /* GRE 4 + control header 40 + extension 16 */
#define MPT_KEEPALIVE_EXT_VERSION 1u
/* Our extension, secure mode only: what arrived of the other end's paths (see MptFeedback). */
#define MPT_CONTROL_FEEDBACK 0xAFu
#define MPT_FEEDBACK_VERSION 2u
#define MPT_FEEDBACK_HEADER_SIZE 16u /* GRE 4, code, version, count, entry size, receiver's clock 8 */
#define MPT_FEEDBACK_ENTRY_SIZE 48u  /* of version 2; a later one may append fields */
#define MPT_FEEDBACK_ENTRIES_MAX 16u
/* Our extension, secure mode only: counters of our paths that did not arrive; please send them
 * again (see MptRepair). */
#define MPT_CONTROL_REPAIR 0xB0u
#define MPT_REPAIR_VERSION 1u
#define MPT_REPAIR_HEADER_SIZE 8u  /* GRE 4, code, version, count, entry size */
#define MPT_REPAIR_ENTRY_SIZE 12u  /* of version 1; a later one may append fields */
#define MPT_REPAIR_ENTRIES_MAX 32u
#define MPT_REPAIR_SIZE_MAX (MPT_REPAIR_HEADER_SIZE + MPT_REPAIR_ENTRIES_MAX * MPT_REPAIR_ENTRY_SIZE)
#define MPT_WIRE_PATHS_MAX 64u /* path ids on the wire: 0..63 (MPT_PATHS_MAX) */
#define MPT_WIRE_LANES_MAX 64u /* lanes of the secure format: 0..63 (MPT_SECURE_LANES) */
#define MPT_FEEDBACK_SIZE_MAX (MPT_FEEDBACK_HEADER_SIZE + MPT_FEEDBACK_ENTRIES_MAX * MPT_FEEDBACK_ENTRY_SIZE)

/* Why a datagram or packet was dropped. The names are part of mptctl's output and the control
 * protocol, so they never change meaning. */
typedef enum MptDropReason {
        MPT_DROP_RUNT,            /* shorter than the GRE header it announces */
        MPT_DROP_GRE_VERSION,     /* GRE version not 0 */
        MPT_DROP_GRE_FLAGS,       /* routing bit or reserved bits set */
        MPT_DROP_GRE_CHECKSUM,    /* C bit set and the checksum does not verify */
        MPT_DROP_GRE_PROTOCOL,    /* protocol type not IPv4 or IPv6 */
        MPT_DROP_INNER_VERSION,   /* first nibble does not match the protocol type */
        MPT_DROP_INNER_HEADER,    /* inner IP header malformed or truncated */
        MPT_DROP_INNER_CHECKSUM,  /* inner IPv4 header checksum wrong */
        MPT_DROP_INNER_LENGTH,    /* inner IP length field does not match the datagram */
        MPT_DROP_TRUNCATED,       /* datagram larger than the receive buffer */
        MPT_DROP_UNKNOWN_CONTROL, /* control code other than keepalive */
        MPT_DROP_BAD_KEEPALIVE,   /* keepalive too short or malformed extension */
        MPT_DROP_TUNNEL_MISMATCH, /* keepalive names other tunnel addresses */
        MPT_DROP_UNKNOWN_SOURCE,  /* not from the path's remote address */
        MPT_DROP_DUPLICATE,       /* sequence number already delivered */
        MPT_DROP_STALE,           /* sequence number too old to tell */
        MPT_DROP_TUN_WRITE,       /* the TUN device refused the packet */
        MPT_DROP_NO_MEMORY,       /* no memory to hold the packet for reordering */
        MPT_DROP_NO_PATH,         /* TX: no path up */
        MPT_DROP_TUN_MALFORMED,   /* TX: packet from the TUN device is not IPv4 or IPv6 */
        MPT_DROP_SEND_ERROR,      /* TX: the path socket refused the datagram */
        MPT_DROP_SEND_BUSY,       /* TX: the path socket's buffer is full */
        /* Secure mode (secure.h) */
        MPT_DROP_TOO_SHORT,       /* shorter than the secure header and tag */
        MPT_DROP_BAD_VERSION,     /* first byte is no secure format version we know */
        MPT_DROP_BAD_HEADER,      /* reserved bits set, or sender path id out of range */
        MPT_DROP_COMPAT_PACKET,   /* a plain (compat-mode) datagram in secure mode */
        MPT_DROP_AUTH_FAILED,     /* the AEAD tag does not verify: wrong key, forged or damaged */
        MPT_DROP_REPLAYED,        /* counter seen before, or behind the anti-replay window */
        MPT_DROP_STALE_EPOCH,     /* from an older epoch (a previous run) of the other end */
        MPT_DROP_OWN_EPOCH,       /* carries our own epoch: our datagram reflected back at us */
        MPT_DROP_COUNTER_EXHAUSTED, /* TX: the path's 64-bit counter would wrap */
        MPT_DROP_CIPHER_ERROR,    /* the crypto library failed (no memory for a cipher context) */
        MPT_DROP_BAD_FEEDBACK,    /* a path feedback frame that is malformed, of another version, or in compat mode */
        MPT_DROP_PATH_MISMATCH,   /* its sender path id belongs to another path of ours (moved there) */
        MPT_DROP_EPOCH_LIMITED,   /* of a new epoch, while key derivations for new epochs are rate-limited */
        MPT_DROP_BAD_REPAIR,      /* a repair request that is malformed, of another version, or in compat mode */
        /* Secure mode with the handshake (handshake.h). */
        MPT_DROP_NO_SESSION,      /* TX: no session keys to seal with yet (the handshake is under way) */
        MPT_DROP_UNKNOWN_SESSION, /* its receiver's session id names no session this end ever had */
        MPT_DROP_STALE_SESSION,   /* of a session this end has dropped (an older one, or a replay after it) */
        MPT_DROP_EXPIRED_SESSION, /* of a session older than 180 s */
        /* Handshake messages, in the order of MptHandshakeDrop (handshake.h). */
        MPT_DROP_HANDSHAKE_MALFORMED,
        MPT_DROP_HANDSHAKE_MAC1,
        MPT_DROP_HANDSHAKE_AUTH_FAILED,
        MPT_DROP_HANDSHAKE_UNKNOWN_PEER,
        MPT_DROP_HANDSHAKE_BAD_KEY,
        MPT_DROP_HANDSHAKE_REPLAYED,
        MPT_DROP_HANDSHAKE_FLOOD,
        MPT_DROP_HANDSHAKE_UNEXPECTED,
        MPT_DROP_HANDSHAKE_CRYPTO_ERROR,
        MPT_DROP_HANDSHAKE_OVERFLOW, /* more handshake messages waiting than the main thread takes */
        /* Policy= */
        MPT_DROP_HOLD_OVERFLOW,   /* TX: held behind the paths' pace too long, or beyond the worker's room */
        _MPT_DROP_MAX,
        _MPT_DROP_INVALID = -EINVAL,
} MptDropReason;

DECLARE_STRING_TABLE(mpt_drop_reason, MptDropReason);

typedef enum MptFrameKind {
        MPT_FRAME_DATA,
        MPT_FRAME_KEEPALIVE,
        MPT_FRAME_PATH_STATUS,
        MPT_FRAME_FEEDBACK,
        MPT_FRAME_REPAIR,
} MptFrameKind;

typedef struct MptFrame {
        MptFrameKind kind;
        uint16_t protocol;
        bool has_seq;
        uint32_t seq;
        size_t header_len;     /* GRE header length */
        const uint8_t *payload; /* inner packet or control frame (starting at its code byte) */
        size_t payload_len;
} MptFrame;

/* Decodes and validates one UDP payload. Returns -1 and fills ret on success, or the drop
 * reason (>= 0). Data must be a complete, well-formed IPv4 or IPv6 packet matching the GRE
 * protocol type; control frames are only recognised here, see mpt_keepalive_decode(). */
int mpt_frame_decode(const uint8_t *buf, size_t len, MptFrame *ret);

/* Writes a GRE header so that it ends at 'end' (the first byte of the inner packet) and returns
 * its length (4, or 8 with a sequence number). The caller guarantees 8 bytes of headroom. */
size_t mpt_gre_encode(uint8_t *end, uint16_t protocol, bool with_seq, uint32_t seq);

/* Inner-packet protocol type from its first nibble; 0 if neither IPv4 nor IPv6. */
uint16_t mpt_inner_protocol(const uint8_t *pkt, size_t len);
/* Full inner packet validation as done on receive; -1 when good, else a drop reason. */
int mpt_inner_validate(const uint8_t *pkt, size_t len, uint16_t protocol);

/* RFC 1071 Internet checksum of a buffer (folded, complemented). */
uint16_t mpt_checksum(const void *data, size_t len);

enum {
        MPT_KA_FLAG_DOWN = 1 << 0,    /* the sender does not send data on this path (taken down by hand) */
        MPT_KA_FLAG_RX_DEAD = 1 << 1, /* the sender hears nothing from us here (dead timer, rejoining) */
        MPT_KA_FLAG_PROBE = 1 << 2,   /* please answer with a keepalive at once (rejoining path) */
        _MPT_KA_FLAGS_KNOWN = (1 << 3) - 1,
};

typedef struct MptKeepalive {
        uint8_t ip_version;  /* tunnel IP version, 4 or 6 */
        MptAddress src_tun;  /* sender's tunnel address (may be unset) */
        MptAddress dst_tun;  /* receiver's tunnel address (may be unset) */
        bool extended;       /* the MPT extension is present */
        uint8_t flags;
        uint16_t receive_weight;
        uint32_t session;    /* random per daemon start; never 0 */
        uint32_t seq;        /* keepalive sequence of this path, from 1 */
        uint32_t echo_seq;   /* last seq received from the peer on this path; 0: none */
        uint32_t echo_delay_us; /* time between receiving echo_seq and sending this */
        uint32_t rx_count;   /* keepalives received from the peer on this path in its session */
        uint32_t path_token; /* random per path and session: names the sender's path in path-status frames */
} MptKeepalive;

/* Our extension: tells the other end the state of one of the sender's paths, sent over the
 * paths that still work when that one cannot carry its own keepalives (its link went down). */
typedef struct MptPathStatus {
        uint8_t ip_version;
        MptAddress src_tun, dst_tun;
        uint32_t session;
        uint32_t path_token; /* the path it is about (the sender's token for it) */
        uint8_t flags;       /* MPT_KA_FLAG_* */
} MptPathStatus;

/* Our extension, secure mode only: a receiver tells the sender what arrived of each of the
 * sender's paths, so that the sender learns what each path delivers and how long it takes
 * (scheduler "learned", mptd(8) SCHEDULING). Sent every few tens of milliseconds while data
 * arrives; the counts are cumulative, so a lost frame costs nothing but its news. The frame,
 * after a GRE header without sequence number:
 *
 *   0  1  code AF            1  1  version (2)      2  1  entries N (1..16)
 *   3  1  entry size E (48 in version 2; entries of a later version may be longer: the first 48
 *         bytes keep their meaning, the rest is skipped)
 *   4  8  the receiver's clock when it sent the frame (microseconds, monotonic, its own)
 *  12  N x E entries, each:
 *         0  1  path id: the sender's, as in its datagrams' secure headers
 *         1  1  lane of the marker (< 64): the sender's lane, as in the secure header
 *         2  2  reserved (0; ignored)
 *         4  4  datagrams received of that path, all lanes (cumulative, mod 2^32)
 *         8  8  bytes received of it (cumulative; the UDP payloads as they arrived)
 *        16  8  marker: the counter (in its lane) of the datagram of the path that arrived last
 *               of those that were the highest of their lane so far, on a data lane (mptd: not
 *               its control lane, 63, whose frames have no sending time the sender keeps); 0:
 *               none yet (the entry tells only that control frames arrived)
 *        24  8  when the marker arrived (the receiver's clock, as above); the counts are those at
 *               that moment
 *        32  8  peak rate: the fastest the path's datagrams arrived back to back lately, bytes
 *               per second (0: unknown). A burst leaves the sender at once, so it arrives at the
 *               rate of the path's bottleneck: a measure of what the path can carry that needs
 *               no queue to build up
 *        40  8  sent: how many datagrams the sender sent on the path, as far as the receiver can
 *               tell (cumulative): per lane, the highest counter received less the first one it
 *               saw, plus one, summed over the lanes. Counters of a lane are consecutive on a
 *               path, so what is missing below a lane's highest (sent - received) was lost
 * All big endian. Version 1 (an mptd without lanes: 40-byte entries without lane and sent, the
 * marker the path's highest counter) is refused. */
typedef struct MptFeedbackEntry {
        uint8_t path_id;
        uint8_t lane;
        uint32_t packets;
        uint64_t bytes;
        uint64_t marker;
        uint64_t arrival;
        uint64_t peak_rate;
        uint64_t sent;
} MptFeedbackEntry;

typedef struct MptFeedback {
        uint64_t now;
        unsigned n;
        MptFeedbackEntry entries[MPT_FEEDBACK_ENTRIES_MAX];
} MptFeedback;

/* Our extension, secure mode only: a receiver asks the sender to send again datagrams of one of
 * the sender's paths that did not arrive (mptd(8), LOSS REPAIR). The counters of a path and lane
 * are consecutive, so a datagram whose counter is more than one above the lane's highest so far
 * tells of a gap: those in between were lost (or come later, reordered on the path). The sender
 * keeps what it sent for a while and sends it again, sealed anew, over its fastest path; the
 * reorder buffer puts it in its place when it comes before the gap is given up. The frame, after
 * a GRE header without sequence number:
 *
 *   0  1  code B0            1  1  version (1)      2  1  entries N (1..32)
 *   3  1  entry size E (12 in version 1; entries of a later version may be longer: the first 12
 *         bytes keep their meaning, the rest is skipped)
 *   4  N x E entries, each:
 *         0  1  path id: the sender's, as in its datagrams' secure headers (< 64)
 *         1  1  lane (< 64)
 *         2  2  count: how many consecutive counters (1..MPT_REPAIR_COUNT_MAX)
 *         4  8  the first of them (not 0)
 * All big endian. */
#define MPT_REPAIR_COUNT_MAX 64u
typedef struct MptRepairEntry {
        uint8_t path_id;
        uint8_t lane;
        uint16_t count;
        uint64_t first;
} MptRepairEntry;

typedef struct MptRepair {
        unsigned n;
        MptRepairEntry entries[MPT_REPAIR_ENTRIES_MAX];
} MptRepair;

/* Whole datagram (GRE header included), MPT_REPAIR_HEADER_SIZE + n * MPT_REPAIR_ENTRY_SIZE bytes;
 * 0 if size is too small, the frame has no entry or too many, or an entry is out of range. */
size_t mpt_repair_encode(uint8_t *buf, size_t size, uint16_t protocol, const MptRepair *r);
/* -1 on success, else MPT_DROP_BAD_REPAIR. */
int mpt_repair_decode(const MptFrame *frame, MptRepair *ret);

/* Whole datagram (GRE header included), MPT_FEEDBACK_HEADER_SIZE + n * MPT_FEEDBACK_ENTRY_SIZE
 * bytes; 0 if size is too small or the frame has no entry or too many. */
size_t mpt_feedback_encode(uint8_t *buf, size_t size, uint16_t protocol, const MptFeedback *fb);
/* -1 on success, else MPT_DROP_BAD_FEEDBACK (wrong version, no entry or too many, entries shorter
 * than version 2's, a length that does not match, a path id or a lane of 64 or more). */
int mpt_feedback_decode(const MptFrame *frame, MptFeedback *ret);

/* Whole datagram, MPT_PATH_STATUS_SIZE bytes; 0 if size is too small. */
size_t mpt_path_status_encode(uint8_t *buf, size_t size, const MptPathStatus *ps);
int mpt_path_status_decode(const MptFrame *frame, MptPathStatus *ret);

/* Whole datagram (GRE header included). Returns its length, or 0 if size is too small. With
 * extended == false, exactly the 44-byte frame of the original. */
size_t mpt_keepalive_encode(uint8_t *buf, size_t size, const MptKeepalive *ka);
/* Decodes a control frame found by mpt_frame_decode() (payload starts at the code byte).
 * Returns -1 on success or a drop reason. */
int mpt_keepalive_decode(const MptFrame *frame, MptKeepalive *ret);

/* RFC 1982 serial number arithmetic on 32-bit sequence numbers: a - b as a signed distance. */
static inline int32_t mpt_seq_diff(uint32_t a, uint32_t b) {
        return (int32_t) (a - b);
}
