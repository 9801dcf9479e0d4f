/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <netinet/in.h>
#include <stdarg.h>

#include "byteorder.h"
#include "diag.h"
#include "ip-header.h"
#include "parse-util.h"
#include "policy.h"

static const char *const mpt_policy_mode_table[_MPT_POLICY_MODE_MAX] = {
        [MPT_POLICY_AGGREGATE] = "aggregate",
        [MPT_POLICY_PINNED] = "pinned",
        [MPT_POLICY_LOWEST_LATENCY] = "lowest-latency",
        [MPT_POLICY_REDUNDANT] = "redundant",
};

DEFINE_STRING_TABLE(mpt_policy_mode, MptPolicyMode, _MPT_POLICY_MODE_MAX);

static const struct {
        const char *name;
        uint8_t proto;
} protocols[] = {
        { "icmp", IPPROTO_ICMP }, /* also ICMPv6: see proto_matches() */
        { "tcp", IPPROTO_TCP },   { "udp", IPPROTO_UDP },       { "dccp", IPPROTO_DCCP },
        { "gre", IPPROTO_GRE },   { "esp", IPPROTO_ESP },       { "ah", IPPROTO_AH },
        { "sctp", IPPROTO_SCTP }, { "udplite", IPPROTO_UDPLITE },
};

/* RFC 4594 and RFC 8622 names. */
static int dscp_from_string(const char *s) {
        unsigned v;

        if (streq(s, "EF"))
                return 46;
        if (streq(s, "VA"))
                return 44;
        if (streq(s, "LE"))
                return 1;
        if (strlen(s) == 3 && s[0] == 'C' && s[1] == 'S' && s[2] >= '0' && s[2] <= '7')
                return 8 * (s[2] - '0');
        if (strlen(s) == 4 && s[0] == 'A' && s[1] == 'F' && s[2] >= '1' && s[2] <= '4' && s[3] >= '1' && s[3] <= '3')
                return 8 * (s[2] - '0') + 2 * (s[3] - '0');
        if (safe_atou(s, &v) < 0 || v > 63)
                return -EINVAL;
        return (int) v;
}

static const char *proto_name(uint8_t p) {
        for (size_t i = 0; i < ELEMENTSOF(protocols); i++)
                if (protocols[i].proto == p)
                        return protocols[i].name;
        return NULL;
}

static bool has_ports(uint8_t proto) {
        return proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_UDPLITE || proto == IPPROTO_SCTP ||
               proto == IPPROTO_DCCP;
}

static int parse_range(const char *s, MptPortRange *ret) {
        const char *dash = strchr(s, '-');
        char lo[8];
        uint16_t a, b;

        if (!dash)
                return parse_port(s, &a) < 0 ? -EINVAL : (*ret = (MptPortRange) { a, a }, 0);
        if ((size_t) (dash - s) >= sizeof lo)
                return -EINVAL;
        memcpy(lo, s, (size_t) (dash - s));
        lo[dash - s] = 0;
        if (parse_port(lo, &a) < 0 || parse_port(dash + 1, &b) < 0 || a > b)
                return -EINVAL;
        *ret = (MptPortRange) { a, b };
        return 0;
}

/* One match's comma-separated list. */
static int parse_items(const char *word, const char *list, MptPolicyRule *r, char **reterr) {
        _cleanup_free_ char *copy = strdup(list);
        char *save = NULL;
        unsigned n = 0;

        if (!copy)
                return -ENOMEM;
        for (char *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save), n++) {
                if (n >= MPT_POLICY_ITEMS_MAX)
                        FAIL("'%s' takes at most %u items", word, MPT_POLICY_ITEMS_MAX);
                if (streq(word, "proto")) {
                        unsigned v;
                        bool found = false;
                        for (size_t i = 0; i < ELEMENTSOF(protocols); i++)
                                if (streq(it, protocols[i].name)) {
                                        r->protos[r->n_protos++] = protocols[i].proto;
                                        found = true;
                                }
                        if (found)
                                continue;
                        if (safe_atou(it, &v) < 0 || v > 255)
                                FAIL("'proto %s': expected tcp, udp, icmp, sctp, dccp, udplite, gre, esp, ah or a "
                                     "protocol number 0..255", it);
                        r->protos[r->n_protos++] = (uint8_t) v;
                } else if (streq(word, "sport") || streq(word, "dport") || streq(word, "port")) {
                        MptPortRange *to = word[0] == 's' ? r->sports : word[0] == 'd' ? r->dports : r->ports;
                        uint8_t *cnt = word[0] == 's' ? &r->n_sports : word[0] == 'd' ? &r->n_dports : &r->n_ports;
                        if (parse_range(it, &to[*cnt]) < 0)
                                FAIL("'%s %s': expected a port 1..65535 or a range A-B", word, it);
                        (*cnt)++;
                } else if (streq(word, "dscp")) {
                        int v = dscp_from_string(it);
                        if (v < 0)
                                FAIL("'dscp %s': expected 0..63, CS0..CS7, AF11..AF43, EF, VA or LE", it);
                        r->dscp |= UINT64_C(1) << v;
                } else if (streq(word, "from") || streq(word, "to")) {
                        MptPrefix *to = word[0] == 'f' ? r->from : r->to;
                        uint8_t *cnt = word[0] == 'f' ? &r->n_from : &r->n_to;
                        int q = prefix_from_string(it, &to[*cnt]);
                        if (q < 0)
                                FAIL("'%s %s': expected an IPv4 or IPv6 address or prefix", word, it);
                        (*cnt)++;
                } else { /* pinned */
                        if (!object_name_valid(it))
                                FAIL("'pinned %s': not a path's name", it);
                        for (unsigned i = 0; i < r->n_paths; i++)
                                if (streq(r->path_names[i], it))
                                        FAIL("'pinned': path '%s' is named twice", it);
                        snprintf(r->path_names[r->n_paths++], MPT_POLICY_NAME_SIZE, "%s", it);
                }
        }
        if (n == 0)
                FAIL("'%s' needs a value", word);
        return 0;
}

int mpt_policy_parse(const char *text, MptPolicyRule *ret, char **reterr) {
        static const char *const matches[] = { "proto", "sport", "dport", "port", "dscp", "from", "to" };
        _cleanup_free_ char *copy = strdup(text);
        MptPolicyRule r = { .mode = _MPT_POLICY_MODE_INVALID };
        bool seen[ELEMENTSOF(matches)] = {};
        char *save = NULL, *w;
        int q;

        if (!copy)
                return -ENOMEM;
        *reterr = NULL;
        for (w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
                size_t m;

                if (r.mode >= 0)
                        FAIL("'%s' after the mode '%s': the mode comes last", w, mpt_policy_mode_to_string(r.mode));
                for (m = 0; m < ELEMENTSOF(matches); m++)
                        if (streq(w, matches[m]))
                                break;
                if (m < ELEMENTSOF(matches)) {
                        const char *v = strtok_r(NULL, " \t", &save);
                        if (seen[m])
                                FAIL("'%s' is given twice (list the values with commas)", w);
                        seen[m] = true;
                        if (!v)
                                FAIL("'%s' needs a value", w);
                        q = parse_items(w, v, &r, reterr);
                        if (q < 0)
                                return q;
                        continue;
                }
                r.mode = mpt_policy_mode_from_string(w);
                if (r.mode < 0)
                        FAIL("unknown word '%s' (expected proto, sport, dport, port, dscp, from, to, then one of "
                             "aggregate, pinned, lowest-latency, redundant)", w);
                if (r.mode == MPT_POLICY_REDUNDANT) {
                        /* An optional number of copies. */
                        char *peek = save ? save + strspn(save, " \t") : NULL;
                        unsigned k;
                        r.copies = MPT_POLICY_COPIES_DEFAULT;
                        if (peek && *peek >= '0' && *peek <= '9') {
                                const char *v = strtok_r(NULL, " \t", &save);
                                if (safe_atou(v, &k) < 0 || k < 2 || k > MPT_POLICY_COPIES_MAX)
                                        FAIL("'redundant %s': expected a number of copies 2..%u", v, MPT_POLICY_COPIES_MAX);
                                r.copies = (uint8_t) k;
                        }
                }
                if (r.mode == MPT_POLICY_PINNED) {
                        const char *v = strtok_r(NULL, " \t", &save);
                        if (!v)
                                FAIL("'pinned' needs the names of its paths");
                        q = parse_items("pinned", v, &r, reterr);
                        if (q < 0)
                                return q;
                }
        }
        if (r.mode < 0)
                FAIL("no mode (aggregate, pinned NAMES, lowest-latency or redundant [COPIES]) at the end");
        /* Ports exist only for some protocols: a rule that asks for ports and a protocol
         * without them could never match. */
        if (r.n_sports + r.n_dports + r.n_ports > 0)
                for (unsigned i = 0; i < r.n_protos; i++)
                        if (!has_ports(r.protos[i])) {
                                const char *name = proto_name(r.protos[i]);
                                char num[4];
                                snprintf(num, sizeof num, "%u", r.protos[i]);
                                FAIL("ports are given, but protocol %s has none (tcp, udp, udplite, sctp and dccp "
                                     "have)", name ?: num);
                        }
        *ret = r;
        return 0;
}

static void append(char **s, size_t *len, const char *fmt, ...) _printf_(3, 4);
static void append(char **s, size_t *len, const char *fmt, ...) {
        va_list ap;
        char *n;
        int k;

        if (!*s)
                return;
        va_start(ap, fmt);
        k = vasprintf(&n, fmt, ap);
        va_end(ap);
        if (k < 0) {
                *s = mfree(*s);
                return;
        }
        char *grown = realloc(*s, *len + (size_t) k + 1);
        if (!grown) {
                free(n);
                *s = mfree(*s);
                return;
        }
        memcpy(grown + *len, n, (size_t) k + 1);
        *len += (size_t) k;
        *s = grown;
        free(n);
}


static void append_ranges(char **s, size_t *len, const char *word, const MptPortRange *r, unsigned n) {
        if (n == 0)
                return;
        append(s, len, "%s%s ", *len > 0 ? " " : "", word);
        for (unsigned i = 0; i < n; i++)
                if (r[i].lo == r[i].hi)
                        append(s, len, "%s%u", i > 0 ? "," : "", r[i].lo);
                else
                        append(s, len, "%s%u-%u", i > 0 ? "," : "", r[i].lo, r[i].hi);
}

static void append_prefixes(char **s, size_t *len, const char *word, const MptPrefix *p, unsigned n) {
        char buf[MPT_ADDRESS_STRLEN];

        if (n == 0)
                return;
        append(s, len, "%s%s ", *len > 0 ? " " : "", word);
        for (unsigned i = 0; i < n; i++) {
                /* A whole address as written: without its length. */
                MptAddress a = { .family = p[i].family, .addr = p[i].addr };
                bool host = p[i].prefixlen == family_address_size(p[i].family) * 8;
                append(s, len, "%s%s", i > 0 ? "," : "", host ? address_to_string(&a, buf) : prefix_to_string(&p[i], buf));
        }
}

char *mpt_policy_format(const MptPolicyRule *r) {
        char *s = strdup("");
        size_t len = 0;

        if (r->n_protos > 0) {
                append(&s, &len, "proto ");
                for (unsigned i = 0; i < r->n_protos; i++) {
                        const char *n = proto_name(r->protos[i]);
                        if (n)
                                append(&s, &len, "%s%s", i > 0 ? "," : "", n);
                        else
                                append(&s, &len, "%s%u", i > 0 ? "," : "", r->protos[i]);
                }
        }
        append_ranges(&s, &len, "sport", r->sports, r->n_sports);
        append_ranges(&s, &len, "dport", r->dports, r->n_dports);
        append_ranges(&s, &len, "port", r->ports, r->n_ports);
        if (r->dscp != 0) {
                bool first = true;
                append(&s, &len, "%sdscp ", len > 0 ? " " : "");
                for (unsigned v = 0; v < 64; v++)
                        if (r->dscp & (UINT64_C(1) << v)) {
                                append(&s, &len, "%s%u", first ? "" : ",", v);
                                first = false;
                        }
        }
        append_prefixes(&s, &len, "from", r->from, r->n_from);
        append_prefixes(&s, &len, "to", r->to, r->n_to);
        append(&s, &len, "%s%s", len > 0 ? " " : "", mpt_policy_mode_to_string(r->mode));
        if (r->mode == MPT_POLICY_REDUNDANT && r->copies != MPT_POLICY_COPIES_DEFAULT)
                append(&s, &len, " %u", r->copies);
        for (unsigned i = 0; i < r->n_paths; i++)
                append(&s, &len, "%s%s", i > 0 ? "," : " ", r->path_names[i]);
        return s;
}

/* ---- Matching ---- */

bool mpt_policy_packet_info(const uint8_t *pkt, size_t len, MptPacketInfo *ret) {
        MptPacketInfo info = {};
        size_t off;
        bool first_fragment = true;

        if (len < 1)
                return false;
        if ((pkt[0] >> 4) == 4) {
                size_t ihl = (size_t) (pkt[0] & 0x0f) * 4;
                if (len < IP4_HEADER_MIN || ihl < IP4_HEADER_MIN || len < ihl)
                        return false;
                info.family = AF_INET;
                info.dscp = pkt[IP4_OFF_TOS] >> 2;
                info.proto = pkt[IP4_OFF_PROTOCOL];
                info.src = pkt + IP4_OFF_SRC;
                info.dst = pkt + IP4_OFF_DST;
                /* A later fragment has no transport header. */
                first_fragment = (rd16be(pkt + IP4_OFF_FRAG) & IP4_FRAG_OFFSET) == 0;
                off = ihl;
        } else if ((pkt[0] >> 4) == 6) {
                uint8_t next;
                if (len < IP6_HEADER_LEN)
                        return false;
                info.family = AF_INET6;
                info.dscp = (uint8_t) ((((pkt[0] & 0x0f) << 4) | (pkt[1] >> 4)) >> 2);
                info.src = pkt + IP6_OFF_SRC;
                info.dst = pkt + IP6_OFF_DST;
                next = pkt[IP6_OFF_NEXT_HEADER];
                off = IP6_HEADER_LEN;
                /* Extension headers, the first IP6_EXT_HEADERS_MAX of them (RFC 8200 4): hop-by-hop,
                 * routing and destination options (their length in 8-byte units after the first
                 * 8), and fragment (8 bytes). */
                for (unsigned i = 0; i < IP6_EXT_HEADERS_MAX; i++) {
                        if (next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING || next == IPPROTO_DSTOPTS) {
                                if (len < off + IP6_EXT_HEADER_MIN)
                                        return false;
                                next = pkt[off];
                                off += IP6_EXT_HEADER_MIN + (size_t) pkt[off + 1] * 8;
                        } else if (next == IPPROTO_FRAGMENT) {
                                if (len < off + IP6_EXT_HEADER_MIN)
                                        return false;
                                first_fragment = (rd16be(pkt + off + IP6_FRAG_OFF_OFFSET) & IP6_FRAG_OFFSET) == 0;
                                next = pkt[off];
                                off += IP6_EXT_HEADER_MIN;
                        } else
                                break;
                }
                info.proto = next;
        } else
                return false;
        if (first_fragment && has_ports(info.proto) && len >= off + 4) {
                info.has_ports = true;
                info.sport = rd16be(pkt + off);
                info.dport = rd16be(pkt + off + UDP_OFF_DST_PORT);
        }
        *ret = info;
        return true;
}

static bool in_ranges(uint16_t port, const MptPortRange *r, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                if (port >= r[i].lo && port <= r[i].hi)
                        return true;
        return false;
}

static bool in_prefixes(int family, const uint8_t *a, const MptPrefix *p, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                unsigned bits = p[i].prefixlen, whole = bits / 8, rest = bits % 8;
                if (p[i].family != family)
                        continue;
                if (memcmp(a, p[i].addr.bytes, whole) != 0)
                        continue;
                if (rest == 0 || ((a[whole] ^ p[i].addr.bytes[whole]) & (uint8_t) (0xff << (8 - rest))) == 0)
                        return true;
        }
        return false;
}

static bool proto_matches(const MptPolicyRule *r, uint8_t proto) {
        for (unsigned i = 0; i < r->n_protos; i++)
                if (r->protos[i] == proto || (r->protos[i] == IPPROTO_ICMP && proto == IPPROTO_ICMPV6))
                        return true;
        return false;
}

bool mpt_policy_rule_matches(const MptPolicyRule *r, const MptPacketInfo *info) {
        if (r->n_protos > 0 && !proto_matches(r, info->proto))
                return false;
        if (r->dscp != 0 && !(r->dscp & (UINT64_C(1) << info->dscp)))
                return false;
        if (r->n_sports + r->n_dports + r->n_ports > 0) {
                if (!info->has_ports)
                        return false;
                if (r->n_sports > 0 && !in_ranges(info->sport, r->sports, r->n_sports))
                        return false;
                if (r->n_dports > 0 && !in_ranges(info->dport, r->dports, r->n_dports))
                        return false;
                if (r->n_ports > 0 && !in_ranges(info->sport, r->ports, r->n_ports) &&
                    !in_ranges(info->dport, r->ports, r->n_ports))
                        return false;
        }
        if (r->n_from > 0 && !in_prefixes(info->family, info->src, r->from, r->n_from))
                return false;
        if (r->n_to > 0 && !in_prefixes(info->family, info->dst, r->to, r->n_to))
                return false;
        return true;
}

int mpt_policy_classify(const MptPolicyRule *rules, size_t n, const uint8_t *pkt, size_t len) {
        MptPacketInfo info;

        if (n == 0 || !mpt_policy_packet_info(pkt, len, &info))
                return -1;
        for (size_t i = 0; i < n; i++)
                if (mpt_policy_rule_matches(&rules[i], &info))
                        return (int) i;
        return -1;
}
