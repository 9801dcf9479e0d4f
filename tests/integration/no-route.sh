#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A path whose Remote= has no route through its interface: 2 paths of 50 Mbit/s,
# KeepaliveInterval=100ms, DeadTime=300ms. At a, p1's Remote= is 10.77.201.2, a subnet that a
# has no route for; b holds that address on pb1 (as a /32) and binds p1 to it
# (LocalAddress=10.77.201.2), so that traffic works once a has a route.
#
# Asserts:
#   - a shows p1 "no-route" with a reason that names the remote address; b does not use p1
#     ("peer-down" or "dead"); p0 is "up" at both ends;
#   - `ip route add 10.77.201.0/24 dev pa1` at a brings p1 "up" at a and at b within 2 s each
#     (times printed), and p1 then carries pings in both directions (tx_bytes and rx_bytes of p1
#     grow at both ends; every ping answered);
#   - `ip route del` of that route takes p1 to "no-route" at a within 500 ms (time printed,
#     from state_age_us) and out of use at b ("peer-down") within 1 s; p1's tx_bytes at a do not
#     grow during pings afterwards, and every ping is still answered (over p0).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3
lab_topology 2 50mbit 4
far=10.77.201.2
lab_exec b ip addr add "$far/32" dev pb1
lab_profiles 2 4 4 "" 'KeepaliveInterval=100ms\nDeadTime=300ms'
grep -qx "Remote=$(lab_path_addr b 1 4)" "$LAB_DIR/a.conf" || it_fail "setup: no Remote=$(lab_path_addr b 1 4) in a.conf"
sed -i "s/^Remote=$(lab_path_addr b 1 4)\$/Remote=$far/" "$LAB_DIR/a.conf"
it_set_path_key b p1 LocalAddress "$far"
it_start_both 3000 p0
it_expect a p1 no-route 2000 "Remote=$far without a route through pa1"
it_note "p1 at a: no-route (reason: $IT_REASON)"
case "$IT_REASON" in
*"$far"*) ;;
*) it_fail "p1 at a: expected a reason naming $far, got '$IT_REASON'" ;;
esac
it_expect b p1 'peer-down|dead' 2000 "the other end has no route for p1"
it_note "p1 at b: $IT_STATE (reason: ${IT_REASON:-none})"

# ---- add a route through the interface ----
it_timed "ip route add" lab_exec a ip route add 10.77.201.0/24 dev pa1
it_expect_up p1 2000 "$IT_T0_US" "a route to $far through pa1 was added at a"

it_snap_both r0
it_ping a "$(lab_tunnel_addr b 4)" 60 0.01
it_snap_both r1
it_note "during the pings: tx_bytes at a $(it_deltas a r0 r1 tx_bytes p0 p1), at b $(it_deltas b r0 r1 tx_bytes p0 p1)"
it_expect_grew r0 r1 p1 "60 pings once the route exists"

# ---- delete it again ----
it_timed "ip route del" lab_exec a ip route del 10.77.201.0/24 dev pa1
t_del=$IT_T0_US
it_expect a p1 no-route 1000 "after deleting the route to $far" "$t_del"
it_note "p1 no-route at a $(it_ms "$IT_AT_US") ms after the route was deleted (reason: $IT_REASON)"
[ "$IT_AT_US" -le 500000 ] ||
        it_fail "p1 at a: expected 'no-route' within 500 ms of deleting the route, took $(it_ms "$IT_AT_US") ms"
it_expect b p1 'peer-down' 1000 "the other end lost its route" "$t_del"
it_note "p1 at b: peer-down $(it_ms "$IT_AT_US") ms after the route was deleted"

it_snap a d0
it_ping a "$(lab_tunnel_addr b 4)" 40 0.01
it_snap a d1
it_expect_delta a d0 d1 tx_bytes p1 -eq 0 "not to grow without a route"

it_finish no-route
