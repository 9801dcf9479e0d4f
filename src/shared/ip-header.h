/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Where the fields of the IPv4 (RFC 791), IPv6 (RFC 8200), TCP (RFC 9293) and UDP (RFC 768)
 * headers lie: offsets from the start of their header, for code that reads and rewrites packets in
 * place (with byteorder.h). */

#define IP4_HEADER_MIN 20u /* without options; IHL says the length */
#define IP4_OFF_TOS 1u
#define IP4_OFF_TOTAL_LEN 2u
#define IP4_OFF_ID 4u
#define IP4_OFF_FRAG 6u /* flags and fragment offset, 16 bits */
#define IP4_OFF_TTL 8u
#define IP4_OFF_PROTOCOL 9u
#define IP4_OFF_CHECKSUM 10u
#define IP4_OFF_SRC 12u
#define IP4_OFF_DST 16u
#define IP4_ADDR_LEN 4u
/* Of the 16 bits at IP4_OFF_FRAG: MF and the fragment offset, one of which every fragment has;
 * the offset alone, which only the first fragment (or an unfragmented packet) has at 0. */
#define IP4_FRAG_MF_OFFSET 0x3fffu
#define IP4_FRAG_OFFSET 0x1fffu

#define IP6_HEADER_LEN 40u
#define IP6_OFF_PAYLOAD_LEN 4u
#define IP6_OFF_NEXT_HEADER 6u
#define IP6_OFF_HOP_LIMIT 7u
#define IP6_OFF_SRC 8u
#define IP6_OFF_DST 24u
#define IP6_ADDR_LEN 16u
/* Of the first 32 bits: the flow label. */
#define IP6_FLOW_LABEL 0x000fffffu
/* Extension headers (RFC 8200 4): each is at least 8 bytes, its next header first; the fragment
 * header's offset field (13 bits, then 2 reserved and M) is at IP6_FRAG_OFF_OFFSET. Parsers look
 * at the first IP6_EXT_HEADERS_MAX of them: more are rare and end the search. */
#define IP6_EXT_HEADER_MIN 8u
#define IP6_FRAG_OFF_OFFSET 2u
#define IP6_FRAG_OFFSET 0xfff8u
#define IP6_EXT_HEADERS_MAX 4u

#define TCP_HEADER_MIN 20u /* without options; the data offset says the length */
#define TCP_OFF_SEQ 4u
#define TCP_OFF_ACK_SEQ 8u
#define TCP_OFF_DATA_OFFSET 12u /* in its high 4 bits, in 32-bit words */
#define TCP_OFF_FLAGS 13u
#define TCP_OFF_WINDOW 14u
#define TCP_OFF_CHECKSUM 16u
/* The TCP header's flags, at TCP_OFF_FLAGS (RFC 9293 3.1; ECE and CWR: RFC 3168). */
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define TCP_URG 0x20
#define TCP_ECE 0x40
#define TCP_CWR 0x80
/* The MSS a TCP end assumes of the other when it sends no MSS option (RFC 9293 3.7.1). */
#define TCP_MSS_DEFAULT 536u

#define UDP_HEADER_LEN 8u
#define UDP_OFF_DST_PORT 2u
#define UDP_OFF_LEN 4u
#define UDP_OFF_CHECKSUM 6u
