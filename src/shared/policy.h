/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "in-addr-util.h"
#include "macro.h"

/* Per-flow policy (Policy= in [Tunnel], mpt.conf(5)): rules that match the packets written to the
 * tunnel by their IP header and choose how each is sent. In order, the first rule that matches
 * decides; a packet no rule matches is aggregated (the tunnel's Scheduler=).
 *
 * A rule is one line of words: matches, any of them at most once, then the mode:
 *
 *   proto P[,P...]        IP protocol: tcp, udp, icmp (ICMP and ICMPv6), sctp, dccp, udplite,
 *                         gre, esp, ah or a number 0..255
 *   sport R[,R...]        source port or range A-B (TCP, UDP, UDP-Lite, SCTP, DCCP)
 *   dport R[,R...]        destination port or range
 *   port R[,R...]         either port
 *   dscp D[,D...]         DSCP: a number 0..63 or a name (CS0..CS7, AF11..AF43, EF, VA, LE)
 *   from PREFIX[,...]     source address or prefix
 *   to PREFIX[,...]       destination address or prefix
 *
 *   aggregate             the tunnel's scheduler (to exempt traffic from a later rule)
 *   pinned NAME[,NAME...] the named paths only (a flow stays on one of them, by its hash);
 *                         when none of them can send, the packet is aggregated
 *   lowest-latency        the path with the lowest round-trip time that can send (it changes
 *                         only when another is clearly faster: MPT_POLICY_HYSTERESIS_*)
 *   redundant [K]         a copy over each of the K paths with the lowest round-trip times that
 *                         are up (K 2..MPT_POLICY_COPIES_MAX, 2 by default); the receiver keeps
 *                         the first copy (the others are duplicates of its sequence number)
 *
 * e.g. "proto udp dport 3478-3481,5060 lowest-latency", "proto tcp dport 6881-6889 pinned wifi". */

#define MPT_POLICY_MAX 32u          /* rules per tunnel */
#define MPT_POLICY_ITEMS_MAX 8u     /* ports, ranges, prefixes or path names per match */
#define MPT_POLICY_NAME_SIZE 16u    /* a path's name (object_name_valid(): 1..15 characters) */
#define MPT_POLICY_COPIES_MAX 4u    /* redundant: copies of a packet at most */
#define MPT_POLICY_COPIES_DEFAULT 2u
/* lowest-latency moves to another path when its round-trip time is below the current one's by
 * both of these (a small difference is noise of the keepalives). */
#define MPT_POLICY_HYSTERESIS_USEC 2000u
#define MPT_POLICY_HYSTERESIS_PERCENT 10u

typedef enum MptPolicyMode {
        MPT_POLICY_AGGREGATE,
        MPT_POLICY_PINNED,
        MPT_POLICY_LOWEST_LATENCY,
        MPT_POLICY_REDUNDANT,
        _MPT_POLICY_MODE_MAX,
        _MPT_POLICY_MODE_INVALID = -EINVAL,
} MptPolicyMode;

DECLARE_STRING_TABLE(mpt_policy_mode, MptPolicyMode);

typedef struct MptPortRange {
        uint16_t lo, hi;
} MptPortRange;

/* Matching and mode: no pointers, so that mptd can copy the rules into what its workers read. */
typedef struct MptPolicyRule {
        uint8_t n_protos, n_sports, n_dports, n_ports, n_from, n_to;
        uint8_t protos[MPT_POLICY_ITEMS_MAX];
        MptPortRange sports[MPT_POLICY_ITEMS_MAX], dports[MPT_POLICY_ITEMS_MAX], ports[MPT_POLICY_ITEMS_MAX];
        uint64_t dscp; /* bit per DSCP value; 0: any */
        MptPrefix from[MPT_POLICY_ITEMS_MAX], to[MPT_POLICY_ITEMS_MAX];
        MptPolicyMode mode;
        uint8_t copies; /* redundant: how many */
        /* pinned: the paths as named, and (profile_verify()) their indexes as bits */
        uint8_t n_paths;
        char path_names[MPT_POLICY_ITEMS_MAX][MPT_POLICY_NAME_SIZE];
        uint64_t paths;
        /* Where it was written (the profile's messages): line, and file as profile_file_name(). */
        unsigned line;
        uint8_t line_src;
} MptPolicyRule;

typedef struct MptPolicyList {
        MptPolicyRule *items;
        size_t n;
} MptPolicyList;

/* Parses one rule. On failure, *reterr says why (as "...: reason", without the key's name). */
int mpt_policy_parse(const char *text, MptPolicyRule *ret, char **reterr);
/* The rule in the words it was parsed from, normalized (mpt_policy_parse() reads it back). */
char *mpt_policy_format(const MptPolicyRule *r);

/* What of an IP packet (starting at its IP header) the rules look at. Returns false for a packet
 * that is not IPv4 or IPv6 or too short for its header. Ports are set only for a first (or
 * only) fragment of a protocol that has them. */
typedef struct MptPacketInfo {
        int family;
        const uint8_t *src, *dst;
        uint8_t proto, dscp;
        bool has_ports;
        uint16_t sport, dport;
} MptPacketInfo;

bool mpt_policy_packet_info(const uint8_t *pkt, size_t len, MptPacketInfo *ret);
bool mpt_policy_rule_matches(const MptPolicyRule *r, const MptPacketInfo *info);
/* The index of the first rule that matches, or -1. */
int mpt_policy_classify(const MptPolicyRule *rules, size_t n, const uint8_t *pkt, size_t len);
