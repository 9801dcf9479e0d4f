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
lab_start a
lab_start b

ping_all() { # COUNT
        local out
        out=$(lab_exec a ping -n -q -c "$1" -i 0.01 -W 1 -w 20 "$(lab_tunnel_addr b 4)" 2>&1) || true
        case "$out" in
        *"$1 packets transmitted, $1 received"*) it_note "ping a -> b through the tunnel: $1 of $1 answered" ;;
        *) it_fail "ping a -> b: expected $1 of $1 answered, got: $(printf '%s' "$out" | grep -E 'transmitted' || printf '%s' "$out")" ;;
        esac
}

it_expect a p0 up 3000 "after start"
it_expect b p0 up 3000 "after start"
it_expect a p1 no-route 2000 "Remote=$far without a route through pa1"
it_note "p1 at a: no-route (reason: $IT_REASON)"
case "$IT_REASON" in
*"$far"*) ;;
*) it_fail "p1 at a: expected a reason naming $far, got '$IT_REASON'" ;;
esac
it_expect b p1 'peer-down|dead' 2000 "the other end has no route for p1"
it_note "p1 at b: $IT_STATE (reason: ${IT_REASON:-none})"

# ---- add a route through the interface ----
it_now_us
t_add=$IT_NOW_US
lab_exec a ip route add 10.77.201.0/24 dev pa1
it_expect a p1 up 2000 "after adding a route to $far through pa1" "$t_add"
it_note "p1 up at a $(it_ms "$IT_AT_US") ms after the route was added"
it_expect b p1 up 2000 "after a route to $far through pa1 was added at a" "$t_add"
it_note "p1 up at b $(it_ms "$IT_AT_US") ms after the route was added"

it_snap a r0
it_snap b r0
ping_all 60
it_snap a r1
it_snap b r1
it_note "during the pings: tx_bytes at a $(it_deltas a r0 r1 tx_bytes p0 p1), at b $(it_deltas b r0 r1 tx_bytes p0 p1)"
for spec in "a tx_bytes" "b rx_bytes" "b tx_bytes" "a rx_bytes"; do
        read -r side field <<<"$spec"
        d=$(it_delta "$side" r0 r1 "$field" p1)
        [ "$d" -gt 0 ] || it_fail "p1 at $side: expected $field to grow during 60 pings once the route exists, grew by $d"
done

# ---- delete it again ----
it_now_us
t_del=$IT_NOW_US
lab_exec a ip route del 10.77.201.0/24 dev pa1
it_expect a p1 no-route 1000 "after deleting the route to $far" "$t_del"
it_note "p1 no-route at a $(it_ms "$IT_AT_US") ms after the route was deleted (reason: $IT_REASON)"
[ "$IT_AT_US" -le 500000 ] ||
        it_fail "p1 at a: expected 'no-route' within 500 ms of deleting the route, took $(it_ms "$IT_AT_US") ms"
it_expect b p1 'peer-down' 1000 "the other end lost its route" "$t_del"
it_note "p1 at b: peer-down $(it_ms "$IT_AT_US") ms after the route was deleted"

it_snap a d0
ping_all 40
it_snap a d1
d=$(it_delta a d0 d1 tx_bytes p1)
[ "$d" = 0 ] || it_fail "p1 at a: expected tx_bytes not to grow without a route, grew by $d"

lab_log "PASS: no-route"
