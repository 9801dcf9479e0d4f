#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mptd starts while one path's interface does not exist yet: profiles with 2 paths
# (KeepaliveInterval=100ms, DeadTime=300ms), but only the veth pair of p0 (pa0/pb0, 50 Mbit/s)
# exists when both mptd start. Later the pair for p1 (pa1/pb1) is created with its addresses.
#
# Asserts:
#   - both mptd start and keep running; a and b show p1 "no-interface" with a reason naming the
#     interface, and p0 "up"; the tunnel shows paths_up 1 of paths_total 2;
#   - p0 carries traffic meanwhile: pings through the tunnel are all answered, and p0's
#     tx_bytes at a grow;
#   - after the pair is created, p1 is "up" at a and at b within 3 s, by itself (the times are
#     printed), paths_up is 2 at both ends;
#   - p1 carries traffic: during pings its tx_bytes at a and rx_bytes at b grow, and with p0
#     taken down by mptctl at both ends every ping is answered (over p1 alone).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/netns.sh
. "$here/../lib/netns.sh"
# shellcheck source=links-lib.sh
. "$here/links-lib.sh"

lab_init
lk_require python3
lab_topology 1 50mbit 4        # only pa0/pb0
lk_profiles 2 "" 'KeepaliveInterval=100ms\nDeadTime=300ms'
lk_start a
lk_start b

ping_all() { # SIDE COUNT
        local out peer
        peer=$(lab_tunnel_addr "$([ "$1" = a ] && echo b || echo a)" 4)
        out=$(lab_exec "$1" ping -n -q -c "$2" -i 0.01 -W 1 -w 20 "$peer" 2>&1) || true
        case "$out" in
        *"$2 packets transmitted, $2 received"*) lk_note "ping $1 -> $peer: $2 of $2 answered" ;;
        *) lk_fail "ping $1 -> $peer: expected $2 of $2 answered, got: $(printf '%s' "$out" | grep -E 'transmitted' || printf '%s' "$out")" ;;
        esac
}

for side in a b; do
        lk_expect "$side" p0 up 3000 "after start"
        lk_expect "$side" p1 no-interface 1000 "after start without its interface"
        lk_note "p1 at $side: no-interface (reason: $LK_REASON)"
        case "$LK_REASON" in
        *"p${side}1"*) ;;
        *) lk_fail "p1 at $side: expected a reason naming interface p${side}1, got '$LK_REASON'" ;;
        esac
        up=$(lk_get "$side" "" paths_up)
        total=$(lk_get "$side" "" paths_total)
        [ "$up/$total" = 1/2 ] || lk_fail "tunnel at $side: expected paths_up/paths_total 1/2, got $up/$total"
done

lk_snap a h0
ping_all a 20
lk_snap a h1
d=$(lk_delta a h0 h1 tx_bytes p0)
[ "$d" -gt 0 ] || lk_fail "p0 at a: expected tx_bytes to grow during pings while p1 has no interface, grew by $d"
for side in a b; do
        eval "pid=\$LAB_PID_$side"
        kill -0 "$pid" 2>/dev/null || lk_fail "mptd at $side: expected it to keep running without p1's interface, it exited"
done

# ---- the interface appears ----
lk_now
t_add=$LK_NOW
lk_add_path_pair 1 50mbit
lk_now
lk_note "creating the pair (ip link add, addresses, up, tbf) took $(lk_ms $((LK_NOW - t_add))) ms; times below count from its start"
lk_expect a p1 up 3000 "after the veth pair for p1 was created" "$t_add"
lk_note "p1 up at a $(lk_ms "$LK_AT_US") ms after the pair was created"
lk_expect b p1 up 3000 "after the veth pair for p1 was created" "$t_add"
lk_note "p1 up at b $(lk_ms "$LK_AT_US") ms after the pair was created"
for side in a b; do
        up=$(lk_get "$side" "" paths_up)
        [ "$up" = 2 ] || lk_fail "tunnel at $side: expected paths_up 2 once p1 is up, got $up"
done

lk_snap a r0
lk_snap b r0
ping_all a 60
lk_snap a r1
lk_snap b r1
lk_note "tx_bytes at a during 60 pings: $(lk_deltas a r0 r1 tx_bytes p0 p1)"
d=$(lk_delta a r0 r1 tx_bytes p1)
[ "$d" -gt 0 ] || lk_fail "p1 at a: expected tx_bytes to grow during pings, grew by $d"
d=$(lk_delta b r0 r1 rx_bytes p1)
[ "$d" -gt 0 ] || lk_fail "p1 at b: expected rx_bytes to grow during pings, grew by $d"

for side in a b; do
        lab_ctl "$side" path lab p0 down || lk_fail "mptctl path lab p0 down at $side failed"
done
lk_expect a p0 admin-down 1000 "after mptctl path lab p0 down"
lk_expect b p0 admin-down 1000 "after mptctl path lab p0 down"
ping_all a 20
ping_all b 20

lab_log "PASS: hotplug"
