/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ip-header.h"
#include "nft.h"

/* nft's data type numbers, so that "nft list" prints the sets' types by name. */
#define NFT_TYPE_IPADDR 7
#define NFT_TYPE_IP6ADDR 8

#ifndef NFT_TABLE_F_OWNER
#define NFT_TABLE_F_OWNER 0x2 /* Linux 5.12 */
#endif

/* The base chains' priorities: the input chain's just before the filter chains (NF_IP_PRI_FILTER,
 * 0), the others' with the mangle chains (NF_IP_PRI_MANGLE), where MSS clamping is done. */
#define NFT_PRIO_INPUT (-10)
#define NFT_PRIO_MANGLE (-150)

#define NFT_BATCH_SIZE (256u * 1024u)
#define NFT_TCPOPT_MAXSEG 2

struct Nft {
        struct mnl_socket *nl;
        uint32_t portid;
        uint32_t seq;
        bool no_owner; /* the kernel refused NFT_TABLE_F_OWNER: tables are written without it */
};

int nft_open(Nft **ret) {
        Nft *n = calloc(1, sizeof(Nft));

        if (!n)
                return -ENOMEM;
        n->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
        if (!n->nl || mnl_socket_bind(n->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
                int r = -errno;
                nft_close(n);
                return r;
        }
        n->portid = mnl_socket_get_portid(n->nl);
        n->seq = (uint32_t) time(NULL);
        *ret = n;
        return 0;
}

Nft *nft_close(Nft *n) {
        if (!n)
                return NULL;
        if (n->nl)
                mnl_socket_close(n->nl);
        return mfree(n);
}

/* One batch under construction: what each message is, to name the one the kernel refuses. */
typedef struct Batch {
        struct mnl_nlmsg_batch *b;
        char *buf;
        uint32_t first_seq, next_seq;
        const char *what[512];
        size_t n;
        bool overflow;
} Batch;

static struct nlmsghdr *batch_msg(Batch *b, uint16_t type, uint16_t family, uint16_t flags, const char *what) {
        struct nlmsghdr *nlh;

        if (b->overflow || b->n >= ELEMENTSOF(b->what)) {
                b->overflow = true;
                return NULL;
        }
        nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b->b), type, family, flags | NLM_F_ACK, b->next_seq++);
        b->what[b->n++] = what;
        return nlh;
}

static void batch_next(Batch *b) {
        if (!b->overflow && !mnl_nlmsg_batch_next(b->b))
                b->overflow = true;
}

static int batch_start(Nft *n, Batch *b) {
        *b = (Batch) {};
        b->buf = malloc(NFT_BATCH_SIZE);
        if (!b->buf)
                return -ENOMEM;
        /* Leave room for the message that mnl_nlmsg_batch_next() finds no longer fits. */
        b->b = mnl_nlmsg_batch_start(b->buf, NFT_BATCH_SIZE / 2);
        if (!b->b) {
                free(b->buf);
                return -ENOMEM;
        }
        nftnl_batch_begin(mnl_nlmsg_batch_current(b->b), n->seq++);
        mnl_nlmsg_batch_next(b->b);
        b->first_seq = b->next_seq = n->seq;
        return 0;
}

static void batch_done(Batch *b) {
        if (b->b)
                mnl_nlmsg_batch_stop(b->b);
        free(b->buf);
        *b = (Batch) {};
}

/* Sends the batch and waits for an acknowledgement of every message. Returns 0, or the first
 * error with its message named in *ret_what. */
static int batch_send(Nft *n, Batch *b, const char **ret_what) {
        char rbuf[16384];
        size_t acked = 0;
        int error = 0;

        if (b->overflow)
                return -E2BIG;
        n->seq = b->next_seq + 1;
        nftnl_batch_end(mnl_nlmsg_batch_current(b->b), b->next_seq);
        mnl_nlmsg_batch_next(b->b);

        if (mnl_socket_sendto(n->nl, mnl_nlmsg_batch_head(b->b), mnl_nlmsg_batch_size(b->b)) < 0)
                return -errno;

        /* Every message carries NLM_F_ACK: exactly one answer per message, error or not. */
        while (acked < b->n) {
                ssize_t len = mnl_socket_recvfrom(n->nl, rbuf, sizeof rbuf);
                const struct nlmsghdr *nlh;
                int rem;

                if (len < 0)
                        return -errno;
                rem = (int) len;
                for (nlh = (const struct nlmsghdr *) rbuf; mnl_nlmsg_ok(nlh, rem); nlh = mnl_nlmsg_next(nlh, &rem)) {
                        const struct nlmsgerr *e;

                        if (nlh->nlmsg_type != NLMSG_ERROR)
                                continue;
                        if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(struct nlmsgerr)))
                                return -EBADMSG;
                        e = mnl_nlmsg_get_payload(nlh);
                        acked++;
                        if (e->error != 0 && error == 0) {
                                uint32_t i = nlh->nlmsg_seq - b->first_seq;
                                error = e->error;
                                if (ret_what)
                                        *ret_what = i < b->n ? b->what[i] : "batch";
                                /* The kernel aborts the transaction: the rest may not be answered. */
                                return error;
                        }
                }
        }
        return error;
}

/* table_flags: NFT_TABLE_F_*; 0 sends no flags (which leaves an existing table's as they are). */
static void table_msg(Batch *b, uint16_t type, const char *table, uint16_t flags, uint32_t table_flags,
                      const char *what) {
        struct nftnl_table *t = nftnl_table_alloc();
        struct nlmsghdr *nlh;

        if (!t) {
                b->overflow = true;
                return;
        }
        nftnl_table_set_str(t, NFTNL_TABLE_NAME, table);
        if (table_flags != 0)
                nftnl_table_set_u32(t, NFTNL_TABLE_FLAGS, table_flags);
        nlh = batch_msg(b, type, NFPROTO_INET, flags, what);
        if (nlh)
                nftnl_table_nlmsg_build_payload(nlh, t);
        nftnl_table_free(t);
        batch_next(b);
}

static void chain_msg(Batch *b, const char *table, const char *name, uint32_t hook, int32_t prio) {
        struct nftnl_chain *c = nftnl_chain_alloc();
        struct nlmsghdr *nlh;

        if (!c) {
                b->overflow = true;
                return;
        }
        nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table);
        nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
        nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, "filter");
        nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, hook);
        nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, prio);
        nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
        nlh = batch_msg(b, NFT_MSG_NEWCHAIN, NFPROTO_INET, NLM_F_CREATE, "chain");
        if (nlh)
                nftnl_chain_nlmsg_build_payload(nlh, c);
        nftnl_chain_free(c);
        batch_next(b);
}

static void set_msgs(Batch *b, const char *table, const char *name, uint32_t id, int family,
                     const MptAddress *remotes, size_t n_remotes) {
        struct nftnl_set *s = nftnl_set_alloc();
        struct nlmsghdr *nlh;
        size_t n_elems = 0;
        size_t len = family == AF_INET ? IP4_ADDR_LEN : IP6_ADDR_LEN;

        if (!s) {
                b->overflow = true;
                return;
        }
        nftnl_set_set_str(s, NFTNL_SET_TABLE, table);
        nftnl_set_set_str(s, NFTNL_SET_NAME, name);
        nftnl_set_set_u32(s, NFTNL_SET_ID, id);
        nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
        nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, family == AF_INET ? NFT_TYPE_IPADDR : NFT_TYPE_IP6ADDR);
        nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, (uint32_t) len);
        nlh = batch_msg(b, NFT_MSG_NEWSET, NFPROTO_INET, NLM_F_CREATE, "set");
        if (nlh)
                nftnl_set_nlmsg_build_payload(nlh, s);
        batch_next(b);

        for (size_t i = 0; i < n_remotes; i++) {
                struct nftnl_set_elem *e;

                if (remotes[i].family != family)
                        continue;
                e = nftnl_set_elem_alloc();
                if (!e) {
                        b->overflow = true;
                        break;
                }
                nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, &remotes[i].addr, (uint32_t) len);
                nftnl_set_elem_add(s, e);
                n_elems++;
        }
        if (n_elems > 0) {
                nlh = batch_msg(b, NFT_MSG_NEWSETELEM, NFPROTO_INET, NLM_F_CREATE, "set element");
                if (nlh)
                        nftnl_set_elems_nlmsg_build_payload(nlh, s);
                batch_next(b);
        }
        nftnl_set_free(s);
}

/* Expression helpers: each returns false on OOM (the rule is then abandoned). */
static bool add_expr(struct nftnl_rule *r, struct nftnl_expr *e) {
        if (!e)
                return false;
        nftnl_rule_add_expr(r, e);
        return true;
}

static bool e_meta_load(struct nftnl_rule *r, uint32_t key) {
        struct nftnl_expr *e = nftnl_expr_alloc("meta");
        if (e) {
                nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
                nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
        }
        return add_expr(r, e);
}

static bool e_cmp(struct nftnl_rule *r, uint32_t op, const void *data, uint32_t len) {
        struct nftnl_expr *e = nftnl_expr_alloc("cmp");
        if (e) {
                nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
                nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
                nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
        }
        return add_expr(r, e);
}

static bool e_meta_eq_u8(struct nftnl_rule *r, uint32_t key, uint8_t v) {
        return e_meta_load(r, key) && e_cmp(r, NFT_CMP_EQ, &v, 1);
}

static bool e_payload(struct nftnl_rule *r, uint32_t base, uint32_t offset, uint32_t len) {
        struct nftnl_expr *e = nftnl_expr_alloc("payload");
        if (e) {
                nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
                nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
                nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
                nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
        }
        return add_expr(r, e);
}

/* reg1 = (reg1 & mask) ^ xor */
static bool e_bitwise(struct nftnl_rule *r, const void *mask, const void *xor, uint32_t len) {
        struct nftnl_expr *e = nftnl_expr_alloc("bitwise");
        if (e) {
                nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
                nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
                nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
                nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
                nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, xor, len);
        }
        return add_expr(r, e);
}

static bool e_lookup(struct nftnl_rule *r, const char *set, uint32_t set_id) {
        struct nftnl_expr *e = nftnl_expr_alloc("lookup");
        if (e) {
                nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, NFT_REG_1);
                nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, set);
                nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SET_ID, set_id);
        }
        return add_expr(r, e);
}

static bool e_counter(struct nftnl_rule *r) {
        return add_expr(r, nftnl_expr_alloc("counter"));
}

static bool e_immediate_data(struct nftnl_rule *r, const void *data, uint32_t len) {
        struct nftnl_expr *e = nftnl_expr_alloc("immediate");
        if (e) {
                nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
                nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, data, len);
        }
        return add_expr(r, e);
}

static bool e_accept(struct nftnl_rule *r) {
        struct nftnl_expr *e = nftnl_expr_alloc("immediate");
        if (e) {
                nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
                nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, NF_ACCEPT);
        }
        return add_expr(r, e);
}

/* The TCP MSS option's value (2 bytes after kind and length), loaded into reg1 or written from it. */
static bool e_tcp_mss(struct nftnl_rule *r, bool write) {
        struct nftnl_expr *e = nftnl_expr_alloc("exthdr");
        if (e) {
                nftnl_expr_set_u32(e, write ? NFTNL_EXPR_EXTHDR_SREG : NFTNL_EXPR_EXTHDR_DREG, NFT_REG_1);
                nftnl_expr_set_u8(e, NFTNL_EXPR_EXTHDR_TYPE, NFT_TCPOPT_MAXSEG);
                nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OFFSET, 2);
                nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_LEN, 2);
                nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OP, NFT_EXTHDR_OP_TCPOPT);
        }
        return add_expr(r, e);
}

static void rule_msg(Batch *b, struct nftnl_rule *r, bool ok) {
        struct nlmsghdr *nlh;

        if (!ok) {
                b->overflow = true;
                nftnl_rule_free(r);
                return;
        }
        nlh = batch_msg(b, NFT_MSG_NEWRULE, NFPROTO_INET, NLM_F_CREATE | NLM_F_APPEND, "rule");
        if (nlh)
                nftnl_rule_nlmsg_build_payload(nlh, r);
        nftnl_rule_free(r);
        batch_next(b);
}

static struct nftnl_rule *rule_new(const char *table, const char *chain) {
        struct nftnl_rule *r = nftnl_rule_alloc();
        if (r) {
                nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
                nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);
                nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
        }
        return r;
}

/* udp dport PORT [ip[6] saddr @remoteN] counter [meta mark set mark | MARK] accept */
static void input_rule(Batch *b, const char *table, const NftRuleset *rs, int family, uint32_t set_id) {
        struct nftnl_rule *r = rule_new(table, "input");
        uint16_t port = htons(rs->port);
        bool ok = r;

        if (!r) {
                b->overflow = true;
                return;
        }
        ok = ok && e_meta_eq_u8(r, NFT_META_NFPROTO, family == AF_INET ? NFPROTO_IPV4 : NFPROTO_IPV6);
        ok = ok && e_meta_eq_u8(r, NFT_META_L4PROTO, IPPROTO_UDP);
        ok = ok && e_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, UDP_OFF_DST_PORT, 2) &&
             e_cmp(r, NFT_CMP_EQ, &port, 2);
        if (family == AF_INET ? rs->any4 : rs->any6)
                ; /* a listening path: from anywhere */
        else if (family == AF_INET)
                ok = ok && e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, IP4_OFF_SRC, IP4_ADDR_LEN) &&
                     e_lookup(r, "remote4", set_id);
        else
                ok = ok && e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, IP6_OFF_SRC, IP6_ADDR_LEN) &&
                     e_lookup(r, "remote6", set_id);
        ok = ok && e_counter(r);
        if (rs->mark != 0) {
                uint32_t mask = ~rs->mark, xor = rs->mark;
                struct nftnl_expr *e;

                ok = ok && e_meta_load(r, NFT_META_MARK) && e_bitwise(r, &mask, &xor, 4);
                e = nftnl_expr_alloc("meta");
                if (e) {
                        nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, NFT_META_MARK);
                        nftnl_expr_set_u32(e, NFTNL_EXPR_META_SREG, NFT_REG_1);
                }
                ok = ok && add_expr(r, e);
        }
        ok = ok && e_accept(r);
        rule_msg(b, r, ok);
}

/* DIRNAME TUN, IPv4/IPv6, TCP SYN (not RST), MSS option above mss: set it to mss. */
static void mss_rule(Batch *b, const char *table, const char *chain, uint32_t dir_key, const char *ifname,
                     int family, uint16_t mss) {
        struct nftnl_rule *r = rule_new(table, chain);
        char name[IFNAMSIZ] = {};
        uint8_t flags_mask = TCP_SYN | TCP_RST, flags_zero = 0, syn = TCP_SYN;
        uint16_t v = htons(mss);
        bool ok = r;

        if (!r) {
                b->overflow = true;
                return;
        }
        strncpy(name, ifname, sizeof name - 1);
        ok = ok && e_meta_load(r, dir_key) && e_cmp(r, NFT_CMP_EQ, name, sizeof name);
        ok = ok && e_meta_eq_u8(r, NFT_META_NFPROTO, family == AF_INET ? NFPROTO_IPV4 : NFPROTO_IPV6);
        ok = ok && e_meta_eq_u8(r, NFT_META_L4PROTO, IPPROTO_TCP);
        ok = ok && e_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, TCP_OFF_FLAGS, 1) &&
             e_bitwise(r, &flags_mask, &flags_zero, 1) && e_cmp(r, NFT_CMP_EQ, &syn, 1);
        ok = ok && e_tcp_mss(r, false) && e_cmp(r, NFT_CMP_GT, &v, 2);
        ok = ok && e_counter(r);
        ok = ok && e_immediate_data(r, &v, 2) && e_tcp_mss(r, true);
        rule_msg(b, r, ok);
}

static int table_name(const char *tunnel, char buf[static 32]) {
        int n = snprintf(buf, 32, "mpt-%s", tunnel);
        return n > 0 && n < 32 ? 0 : -ENAMETOOLONG;
}

static const char owned_table[] = "table (owned by this process)";

static int apply(Nft *n, const NftRuleset *rs, const char **ret_what) {
        char table[32];
        Batch b;
        int r;

        r = table_name(rs->tunnel, table);
        if (r < 0)
                return r;
        r = batch_start(n, &b);
        if (r < 0)
                return r;

        /* Add (so that the delete cannot fail), delete, and write the whole table again. The first
         * add sends no flags: it must not try to change those of a table that exists (the kernel
         * refuses to add or take away the owner flag of one). The new table belongs to this
         * netlink socket (NFT_TABLE_F_OWNER): only it may change the table, and the kernel deletes
         * the table when the socket closes, also when mptd is killed. A table that another process
         * owns cannot be looked up by us (EPERM): another mptd runs this tunnel. */
        table_msg(&b, NFT_MSG_NEWTABLE, table, NLM_F_CREATE, 0, "table");
        table_msg(&b, NFT_MSG_DELTABLE, table, 0, 0, "table (replacing it)");
        if (n->no_owner)
                table_msg(&b, NFT_MSG_NEWTABLE, table, NLM_F_CREATE, 0, "table");
        else
                table_msg(&b, NFT_MSG_NEWTABLE, table, NLM_F_CREATE, NFT_TABLE_F_OWNER, owned_table);
        set_msgs(&b, table, "remote4", 1, AF_INET, rs->remotes, rs->n_remotes);
        set_msgs(&b, table, "remote6", 2, AF_INET6, rs->remotes, rs->n_remotes);
        chain_msg(&b, table, "input", NF_INET_LOCAL_IN, NFT_PRIO_INPUT);
        chain_msg(&b, table, "forward", NF_INET_FORWARD, NFT_PRIO_MANGLE);
        chain_msg(&b, table, "output", NF_INET_LOCAL_OUT, NFT_PRIO_MANGLE);
        input_rule(&b, table, rs, AF_INET, 1);
        input_rule(&b, table, rs, AF_INET6, 2);
        for (int f = 0; f < 2; f++) {
                int family = f == 0 ? AF_INET : AF_INET6;
                uint32_t overhead = (family == AF_INET ? IP4_HEADER_MIN : IP6_HEADER_LEN) + TCP_HEADER_MIN;
                uint16_t mss = (uint16_t) (rs->mtu > overhead + TCP_MSS_DEFAULT
                                                   ? MIN(rs->mtu - overhead, (unsigned) UINT16_MAX)
                                                   : TCP_MSS_DEFAULT);

                mss_rule(&b, table, "forward", NFT_META_OIFNAME, rs->ifname, family, mss);
                mss_rule(&b, table, "forward", NFT_META_IIFNAME, rs->ifname, family, mss);
                mss_rule(&b, table, "output", NFT_META_OIFNAME, rs->ifname, family, mss);
        }

        r = batch_send(n, &b, ret_what);
        batch_done(&b);
        return r;
}

int nft_apply(Nft *n, const NftRuleset *rs, const char **ret_what) {
        const char *what = NULL;
        int r;

        r = apply(n, rs, &what);
        if (r == -EOPNOTSUPP && what == owned_table) {
                /* Before Linux 5.12 the flag is unknown: a table without it, which a killed mptd
                 * leaves behind until the next start replaces it. */
                n->no_owner = true;
                r = apply(n, rs, &what);
        }
        if (r < 0 && ret_what)
                *ret_what = what;
        return r;
}

bool nft_owned(const Nft *n) {
        return !n->no_owner;
}

int nft_remove(Nft *n, const char *tunnel) {
        const char *what = NULL;
        char table[32];
        Batch b;
        int r;

        r = table_name(tunnel, table);
        if (r < 0)
                return r;
        r = batch_start(n, &b);
        if (r < 0)
                return r;
        table_msg(&b, NFT_MSG_DELTABLE, table, 0, 0, "table");
        r = batch_send(n, &b, &what);
        batch_done(&b);
        return r == -ENOENT ? 0 : r;
}
