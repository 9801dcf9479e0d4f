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
# shellcheck source=../lib/netns.sh
. "$here/../lib/netns.sh"
# shellcheck source=links-lib.sh
. "$here/links-lib.sh"

lab_init
lk_require python3
lab_topology 3 50mbit 4
lk_profiles 3 "" 'KeepaliveInterval=100ms\nDeadTime=300ms'
lk_start a
lk_start b
for p in p0 p1 p2; do
        lk_expect a "$p" up 3000 "after start"
        lk_expect b "$p" up 3000 "after start"
done

# ping_all SIDE COUNT: a quick burst of pings through the tunnel to the other end's tunnel
# address; every one must be answered.
ping_all() {
        local out peer
        peer=$(lab_tunnel_addr "$([ "$1" = a ] && echo b || echo a)" 4)
        out=$(lab_exec "$1" ping -n -q -c "$2" -i 0.01 -W 1 -w 20 "$peer" 2>&1) || true
        case "$out" in
        *"$2 packets transmitted, $2 received"*) lk_note "ping $1 -> $peer: $2 of $2 answered" ;;
        *) lk_fail "ping $1 -> $peer: expected $2 of $2 answered, got: $(printf '%s' "$out" | grep -E 'transmitted' || printf '%s' "$out")" ;;
        esac
}

old_ifindex=$(lk_get a p2 ifindex)

# ---- delete the pair ----
lk_now
t_del=$LK_NOW
lab_exec a ip link del pa2
lk_expect a p2 no-interface 1000 "after ip link del pa2" "$t_del"
lk_note "p2 no-interface at a after $(lk_ms "$LK_AT_US") ms (reason: $LK_REASON)"
[ -n "$LK_REASON" ] || lk_fail "p2 at a: expected a reason for 'no-interface', got none"
lk_expect b p2 no-interface 1000 "the other end of the deleted pair" "$t_del"
lk_note "p2 no-interface at b after $(lk_ms "$LK_AT_US") ms (reason: $LK_REASON)"
[ -n "$LK_REASON" ] || lk_fail "p2 at b: expected a reason for 'no-interface', got none"
for p in p0 p1; do
        s=$(lk_get a "$p" state)
        [ "$s" = up ] || lk_fail "path $p at a: expected 'up' while p2's interface is gone, it is '$s'"
done
ping_all a 20

# ---- create it again, same names and addresses ----
lk_now
t_add=$LK_NOW
lk_add_path_pair 2 50mbit
lk_now
lk_note "creating the pair (ip link add, addresses, up, tbf) took $(lk_ms $((LK_NOW - t_add))) ms; times below count from its start"
new_ifindex=$(lab_exec a cat /sys/class/net/pa2/ifindex)
lk_expect a p2 up 3000 "after the veth pair was created again" "$t_add"
lk_note "p2 up at a $(lk_ms "$LK_AT_US") ms after the pair was created again"
lk_expect b p2 up 3000 "after the veth pair was created again" "$t_add"
lk_note "p2 up at b $(lk_ms "$LK_AT_US") ms after the pair was created again"
ifi=$(lk_get a p2 ifindex)
[ "$ifi" = "$new_ifindex" ] ||
        lk_fail "p2 at a: expected ifindex $new_ifindex (the new pa2; the old one was $old_ifindex), mptctl shows $ifi"

lk_snap a r0
lk_snap b r0
ping_all a 60
lk_snap a r1
lk_snap b r1
lk_note "tx_bytes at a during 60 pings: $(lk_deltas a r0 r1 tx_bytes p0 p1 p2)"
d=$(lk_delta a r0 r1 tx_bytes p2)
[ "$d" -gt 0 ] || lk_fail "p2 at a: expected tx_bytes to grow during 60 pings, grew by $d"
d=$(lk_delta b r0 r1 rx_bytes p2)
[ "$d" -gt 0 ] || lk_fail "p2 at b: expected rx_bytes to grow during 60 pings, grew by $d"
d=$(lk_delta b r0 r1 tx_bytes p2)
[ "$d" -gt 0 ] || lk_fail "p2 at b: expected tx_bytes (the replies) to grow during 60 pings, grew by $d"

# Only p2 left: every ping has to cross it in both directions.
for side in a b; do
        for p in p0 p1; do
                lab_ctl "$side" path lab "$p" down || lk_fail "mptctl path lab $p down at $side failed"
        done
done
for side in a b; do
        lk_expect "$side" p0 admin-down 1000 "after mptctl path lab p0 down"
        lk_expect "$side" p1 admin-down 1000 "after mptctl path lab p1 down"
done
ping_all a 20
ping_all b 20

lab_log "PASS: veth-recreate"
