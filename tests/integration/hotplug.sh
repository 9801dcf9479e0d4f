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
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3
lab_topology 1 50mbit 4        # only pa0/pb0
lab_profiles 2 4 4 "" 'KeepaliveInterval=100ms\nDeadTime=300ms'
lab_start a
lab_start b

ping_all() { # SIDE COUNT
        it_ping "$1" "$(lab_tunnel_addr "$([ "$1" = a ] && echo b || echo a)" 4)" "$2" 0.01
}

for side in a b; do
        it_expect "$side" p0 up 3000 "after start"
        it_expect "$side" p1 no-interface 1000 "after start without its interface"
        it_note "p1 at $side: no-interface (reason: $IT_REASON)"
        case "$IT_REASON" in
        *"p${side}1"*) ;;
        *) it_fail "p1 at $side: expected a reason naming interface p${side}1, got '$IT_REASON'" ;;
        esac
        up=$(it_get "$side" "" paths_up)
        total=$(it_get "$side" "" paths_total)
        [ "$up/$total" = 1/2 ] || it_fail "tunnel at $side: expected paths_up/paths_total 1/2, got $up/$total"
done

it_snap a h0
ping_all a 20
it_snap a h1
it_expect_delta a h0 h1 tx_bytes p0 -gt 0 "to grow during pings while p1 has no interface"
for side in a b; do
        eval "pid=\$LAB_PID_$side"
        kill -0 "$pid" 2>/dev/null || it_fail "mptd at $side: expected it to keep running without p1's interface, it exited"
done

# ---- the interface appears ----
it_now_us
t_add=$IT_NOW_US
lab_add_path 1 50mbit 4
it_now_us
it_note "creating the pair (ip link add, addresses, up, tbf) took $(it_ms $((IT_NOW_US - t_add))) ms; times below count from its start"
it_expect_up p1 3000 "$t_add" "the veth pair for p1 was created"
for side in a b; do
        up=$(it_get "$side" "" paths_up)
        [ "$up" = 2 ] || it_fail "tunnel at $side: expected paths_up 2 once p1 is up, got $up"
done

it_snap_both r0
ping_all a 60
it_snap_both r1
it_note "tx_bytes at a during 60 pings: $(it_deltas a r0 r1 tx_bytes p0 p1)"
it_expect_delta a r0 r1 tx_bytes p1 -gt 0 "to grow during pings"
it_expect_delta b r0 r1 rx_bytes p1 -gt 0 "to grow during pings"

for side in a b; do
        lab_ctl "$side" path lab p0 down || it_fail "mptctl path lab p0 down at $side failed"
done
it_expect a p0 admin-down 1000 "after mptctl path lab p0 down"
it_expect b p0 admin-down 1000 "after mptctl path lab p0 down"
ping_all a 20
ping_all b 20

it_finish hotplug
