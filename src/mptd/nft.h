/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The tunnel's nftables table, through libnftnl (no shelling out to nft). One table per tunnel,
 * "inet mpt-NAME", always written as a whole in one atomic batch (add, delete, add again and fill),
 * so that no half-written state is ever visible. The table belongs to the process (flag owner,
 * NFT_TABLE_F_OWNER, Linux 5.12): only its netlink socket may change it, and the kernel deletes it
 * when that socket closes, so a killed mptd leaves nothing behind. Where the kernel does not know
 * the flag, the table is written without it, and one left behind by a killed mptd is replaced by
 * the next start:
 *
 *   table inet mpt-NAME {
 *       set remote4 { type ipv4_addr; elements = { ... } }   configured and learned remotes
 *       set remote6 { type ipv6_addr; elements = { ... } }
 *       chain input {                                       priority filter - 10
 *           udp dport PORT ip saddr @remote4 counter [meta mark set mark | MARK] accept
 *           udp dport PORT ip6 saddr @remote6 counter [meta mark set mark | MARK] accept
 *           (without "saddr @remoteN" for a family a listening path uses: any4, any6)
 *       }
 *       chain forward {                                     priority mangle (-150)
 *           oifname/iifname TUN, IPv4/IPv6 TCP SYN with MSS above the tunnel's: clamp it
 *       }
 *       chain output { ... the same for oifname TUN ... }   priority mangle (-150)
 *   }
 *
 * An accept verdict ends only the evaluation of its own base chain: a drop in another table's
 * chain at the same hook (the host firewall) still drops the packet. That is why the accept rule
 * can also set a packet mark (FirewallMark=): a default-drop host firewall lets the data port in
 * with one static rule ("meta mark & MARK == MARK accept") while mptd keeps the set of remote
 * addresses current. See mptd(8), "Firewall and MTU". */

#include "in-addr-util.h"

typedef struct NftRuleset {
        const char *tunnel;     /* table "mpt-<tunnel>" */
        const char *ifname;     /* the TUN device */
        uint16_t port;          /* LocalPort= */
        uint32_t mark;          /* 0: do not mark */
        uint32_t mtu;           /* of the TUN device: MSS is clamped to mtu - 40 (IPv4), mtu - 60 (IPv6) */
        const MptAddress *remotes;
        size_t n_remotes;
        /* A path listens (no Remote=): datagrams of that family to the port are accepted (and
         * marked) from any source, not only from the set. */
        bool any4, any6;
} NftRuleset;

typedef struct Nft Nft;

int nft_open(Nft **ret);
Nft *nft_close(Nft *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(Nft *, nft_close);

/* Creates or atomically replaces the tunnel's table, owned by n's socket where the kernel can.
 * On failure nothing changed; *ret_what (static) names the object the kernel refused (-EPERM for
 * the table: another process owns it). */
int nft_apply(Nft *n, const NftRuleset *rs, const char **ret_what);
/* Whether the tables n writes belong to it (the kernel took NFT_TABLE_F_OWNER; true until a
 * write found otherwise). */
bool nft_owned(const Nft *n);
/* Deletes the tunnel's table; 0 also when there was none. */
int nft_remove(Nft *n, const char *tunnel);
