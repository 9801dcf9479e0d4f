#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The other end's UDP source port changes mid-stream, as behind a NAT that changes its mapping:
# 2 paths of 50 Mbit/s, KeepaliveInterval=100ms, DeadTime=300ms. An nftables table in namespace
# a rewrites the source of everything mptd sends on pa0 (port 4754) to port 40000.
#
# How the NAT takes effect mid-stream without the conntrack tool: a namespace has no connection
# tracking until some rule needs it, so before the table exists mptd's flow on pa0 has no
# conntrack entry. The table is added in one transaction with two chains:
#   - raw prerouting: `notrack` for datagrams arriving on pa0 for port 4754. Without it, a
#     datagram from b (b keeps sending to port 4754 until it follows) could arrive first and
#     create the flow's conntrack entry in the b -> a direction; a's own datagrams would then be
#     its replies, which are never NATed;
#   - nat postrouting: `snat to 10.77.100.1:40000` for datagrams from port 4754 leaving on pa0.
# So a's next datagram on pa0 creates the flow's entry and is NATed from the first packet on;
# b's datagrams to port 40000 (after b follows) match that entry's reply direction and are
# translated back to port 4754.
#
# Run 1, default profile (b follows). Asserts:
#   - within 1 s of the table, p0's "remote" at b is 10.77.100.1:40000 and its remote_changes
#     is at least 1 (0 before);
#   - p0 stays "up" at both ends throughout (state_age_us reaches back to before the NAT);
#   - traffic continues over p0 in both directions: during 100 pings through the tunnel (all
#     answered) p0's tx_bytes at a and b and rx_bytes at a and b grow;
#   - b's p0 counted no "unknown-source" drops.
# Run 2, mptd restarted with PinRemote=yes on b's p0, the same NAT added mid-stream. Asserts:
#   - b drops the datagrams from the new port: its p0 "unknown-source" drops grow, its remote
#     stays 10.77.100.1:4754 and remote_changes 0;
#   - b declares p0 "dead" no later than DeadTime + 50 ms (350 ms) after the table is in place
#     (nft returned; the time is printed), and a then shows p0 "peer-down" within 1 s;
#   - the tunnel still answers every ping (over p1).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3
lab_topology 2 50mbit 4
it_require_nft
lab_profiles 2 4 4 "" 'KeepaliveInterval=100ms\nDeadTime=300ms'

a0=$(lab_path_addr a 0 4)
nat_port=40000

add_nat() {
        lab_exec a nft -f - <<EOF
table ip mpt_nat {
        chain pre {
                type filter hook prerouting priority raw; policy accept;
                iifname "pa0" udp dport $port notrack
        }
        chain post {
                type nat hook postrouting priority srcnat; policy accept;
                oifname "pa0" udp sport $port snat to $a0:$nat_port
        }
}
EOF
}

start_both() {
        it_start_both 3000
        port=$(it_get a "" local_port)
}

# ================= run 1: b follows =================
lab_log "run 1: default (b follows the new port)"
start_both
rc0=$(it_get b p0 remote_changes)
[ "$rc0" = 0 ] || it_fail "p0 at b: expected remote_changes 0 before the NAT, it is $rc0"

it_now_us
t_nat=$IT_NOW_US
add_nat
it_expect_remote p0 "$a0:$nat_port" 1000 "$t_nat" "the NAT"

it_snap_both n0
it_ping_soft a "$(lab_tunnel_addr b 4)" 100 0.005
it_snap_both n1
it_note "during the pings: tx_bytes at a $(it_deltas a n0 n1 tx_bytes p0 p1), at b $(it_deltas b n0 n1 tx_bytes p0 p1)"
it_expect_grew n0 n1 p0 "100 pings behind the NAT"
it_stayed_up p0 "$t_nat" "the port change"
d=$(it_get b p0 drop.unknown-source)
[ "$d" = 0 ] || it_soft_fail "p0 at b: expected no unknown-source drops without PinRemote=, counted $d"
[ "$IT_SOFT_FAILURES" = 0 ] || it_fail "run 1 (following) failed, see above"

# ================= run 2: b pins p0 =================
lab_log "run 2: PinRemote=yes on b's p0"
lab_stop a
lab_stop b
lab_exec a nft delete table ip mpt_nat
it_set_path_key b p0 PinRemote yes
start_both
pin=$(it_get b p0 pin_remote)
[ "$pin" = yes ] || it_fail "p0 at b: expected pin_remote yes after restarting with PinRemote=yes, mptctl shows '$pin'"
it_snap b m0

it_now_us
t_nat=$IT_NOW_US
add_nat
# The rule is in place by the time nft returns: from then on no keepalive of a's reaches b's p0,
# so b's dead timer (armed at the last accepted one) fires no later than DeadTime after that.
it_now_us
t_done=$IT_NOW_US
it_expect b p0 dead 2000 "PinRemote=yes and the other end's port changed" "$t_done"
it_note "p0 dead at b $(it_ms "$IT_AT_US") ms after the NAT was in place ($(it_ms $((IT_AT_US + t_done - t_nat))) ms after nft was started; DeadTime=300ms)"
# Sanitizer builds (tests/run-tests --sanitize) are several times slower: more slack there.
dead_max=350000
[ -z "${MPT_SANITIZED:-}" ] || dead_max=1000000
[ "$IT_AT_US" -le "$dead_max" ] ||
        it_soft_fail "p0 at b: expected 'dead' within DeadTime + $(((dead_max - 300000) / 1000)) ms = $((dead_max / 1000)) ms of the NAT, took $(it_ms "$IT_AT_US") ms"
it_expect a p0 peer-down 1000 "b no longer hears p0"
it_note "p0 at a: peer-down (reason: ${IT_REASON:-none})"
it_snap b m1
d=$(it_delta b m0 m1 drop.unknown-source p0)
it_note "p0 at b: $d datagrams dropped as unknown-source"
[ "$d" -gt 0 ] || it_soft_fail "p0 at b: expected unknown-source drops to grow with PinRemote=yes, grew by $d"
remote=$(it_get b p0 remote)
[ "$remote" = "$a0:$port" ] || it_soft_fail "p0 at b: expected remote to stay $a0:$port with PinRemote=yes, it is '$remote'"
changes=$(it_get b p0 remote_changes)
[ "$changes" = 0 ] || it_soft_fail "p0 at b: expected remote_changes 0 with PinRemote=yes, it is $changes"
it_ping_soft a "$(lab_tunnel_addr b 4)" 50 0.005

it_finish endpoint-change
