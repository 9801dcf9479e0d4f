#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A path's interface disappears and is created again: 3 paths of 50 Mbit/s,
# KeepaliveInterval=100ms, DeadTime=300ms. `ip link del pa2` in namespace a (which deletes the
# veth pair, so pb2 in b goes too), then the pair is created again with the same names and
# addresses. mptd is not told anything; it has to follow the kernel.
#
# Asserts:
#   - a shows p2 "no-interface" within 1 s of the deletion, with a reason; so does b (its pb2 is
#     gone with the pair);
#   - the other paths stay "up" and the tunnel answers pings meanwhile;
#   - after the pair is created again, p2 is "up" at a and at b within 3 s, by itself, bound to
#     the new interface (its ifindex at a is the new pa2's);
#   - traffic over p2 resumes: under a ping flood its tx_bytes at a and rx_bytes at b grow, and
#     with p0 and p1 taken down by mptctl at both ends every ping (which can then only take p2)
#     is answered.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3
lab_topology 3 50mbit 4
lab_profiles 3 4 4 "" 'KeepaliveInterval=100ms\nDeadTime=300ms'
it_start_both 3000

# ping_all SIDE COUNT: a quick burst of pings through the tunnel to the other end's tunnel
# address; every one must be answered.
ping_all() {
        it_ping "$1" "$(lab_tunnel_addr "$([ "$1" = a ] && echo b || echo a)" 4)" "$2" 0.01
}

old_ifindex=$(it_get a p2 ifindex)

# ---- delete the pair ----
it_now_us
t_del=$IT_NOW_US
lab_exec a ip link del pa2
it_expect a p2 no-interface 1000 "after ip link del pa2" "$t_del"
it_note "p2 no-interface at a after $(it_ms "$IT_AT_US") ms (reason: $IT_REASON)"
[ -n "$IT_REASON" ] || it_fail "p2 at a: expected a reason for 'no-interface', got none"
it_expect b p2 no-interface 1000 "the other end of the deleted pair" "$t_del"
it_note "p2 no-interface at b after $(it_ms "$IT_AT_US") ms (reason: $IT_REASON)"
[ -n "$IT_REASON" ] || it_fail "p2 at b: expected a reason for 'no-interface', got none"
for p in p0 p1; do
        s=$(it_get a "$p" state)
        [ "$s" = up ] || it_fail "path $p at a: expected 'up' while p2's interface is gone, it is '$s'"
done
ping_all a 20

# ---- create it again, same names and addresses ----
it_now_us
t_add=$IT_NOW_US
lab_add_path 2 50mbit 4
it_now_us
it_note "creating the pair (ip link add, addresses, up, tbf) took $(it_ms $((IT_NOW_US - t_add))) ms; times below count from its start"
new_ifindex=$(lab_exec a cat /sys/class/net/pa2/ifindex)
it_expect_up p2 3000 "$t_add" "the veth pair was created again"
ifi=$(it_get a p2 ifindex)
[ "$ifi" = "$new_ifindex" ] ||
        it_fail "p2 at a: expected ifindex $new_ifindex (the new pa2; the old one was $old_ifindex), mptctl shows $ifi"

it_snap_both r0
ping_all a 60
it_snap_both r1
it_note "tx_bytes at a during 60 pings: $(it_deltas a r0 r1 tx_bytes p0 p1 p2)"
it_expect_grew r0 r1 p2 "60 pings" a:tx_bytes b:rx_bytes b:tx_bytes

# Only p2 left: every ping has to cross it in both directions.
for side in a b; do
        for p in p0 p1; do
                lab_ctl "$side" path lab "$p" down || it_fail "mptctl path lab $p down at $side failed"
        done
done
for side in a b; do
        it_expect "$side" p0 admin-down 1000 "after mptctl path lab p0 down"
        it_expect "$side" p1 admin-down 1000 "after mptctl path lab p1 down"
done
ping_all a 20
ping_all b 20

it_finish veth-recreate
