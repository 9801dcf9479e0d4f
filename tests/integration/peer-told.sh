#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The other end is told at once when a path goes down here, instead of finding out by its dead
# timer: 2 paths, KeepaliveInterval=200ms, DeadTime=2s at both ends. p0 is a plain veth pair;
# p1 runs through a bridge in a third namespace (pa1 - bridge - pb1), so that taking pa1 down
# at a does not take pb1's carrier away at b, as with a real link whose far end stays up: b can
# only learn it from a.
#
# Asserts:
#   - `mptctl path lab p1 down` at a: a shows "admin-down", and b shows p1 "peer-down" no later
#     than 400 ms after the command was started (from state_age_us; printed), i.e. well before
#     its DeadTime of 2 s; after `mptctl path lab p1 up`, p1 is "up" at both ends within 2 s;
#   - `ip link set pa1 down` at a: a shows "link-down", and b shows p1 "peer-down" no later than
#     400 ms after the command was started (printed), while pb1 keeps its carrier (b does not
#     show "link-down"); after `ip link set pa1 up`, p1 is "up" at both ends within 3 s;
#   - pings through the tunnel are answered (every one) while p1 is down;
#   - b's "reason" for p1 is not empty while it is "peer-down" (checked last, after the timing
#     checks: a missing reason does not hide a late notification).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3
lab_topology 1 50mbit 4 # p0: pa0 <-> pb0
# p1: pa1 <-> ma1 [bridge br1 in namespace m] mb1 <-> pb1
lab_add_ns m
ip link add pa1 netns "$(lab_ns a)" type veth peer name ma1 netns "$(lab_ns m)" || it_fail "cannot create veth pa1/ma1"
ip link add pb1 netns "$(lab_ns b)" type veth peer name mb1 netns "$(lab_ns m)" || it_fail "cannot create veth pb1/mb1"
lab_exec m ip link add br1 type bridge || lab_skip "needs bridge devices"
for dev in ma1 mb1; do
        lab_exec m ip link set "$dev" master br1
        lab_exec m ip link set "$dev" up
done
lab_exec m ip link set br1 up
lab_exec a ip addr add "$(lab_path_addr a 1 4)/24" dev pa1
lab_exec b ip addr add "$(lab_path_addr b 1 4)/24" dev pb1
lab_exec a ip link set pa1 up
lab_exec b ip link set pb1 up

lab_profiles 2 4 4 "" 'KeepaliveInterval=200ms\nDeadTime=2s'
it_start_both 5000 p0 p1
dt=$(it_get b p1 dead_time_us)
[ "$dt" = 2000000 ] || it_fail "p1 at b: expected dead_time_us 2000000, got '$dt'"

# told_down STATE_AT_A WHAT COMMAND...: COMMAND takes p1 down at a (a shows STATE_AT_A); b must
# show p1 "peer-down" no later than 400 ms after COMMAND started, with a reason, and every ping
# through the tunnel (over p0) is answered meanwhile.
told_down() {
        local state=$1 what=$2 at
        shift 2
        it_timed "$what" "$@"
        it_expect b p1 peer-down 1000 "after $what at a" "$IT_T0_US"
        at=$IT_AT_US
        it_note "$state at a: b shows p1 peer-down $(it_ms "$at") ms after $what (seen by the poll after $(it_ms "$IT_SEEN_US") ms; DeadTime 2 s; reason: ${IT_REASON:-none})"
        [ -n "$IT_REASON" ] || it_soft_fail "p1 at b: expected a reason with 'peer-down' (mptctl's reason field says why a path is not up), got none"
        [ "$at" -le 400000 ] ||
                it_fail "p1 at b: expected 'peer-down' within 400 ms of $what at a, took $(it_ms "$at") ms"
        it_expect a p1 "$state" 500 "after $what"
        it_ping a "$(lab_tunnel_addr b 4)" 20 0.01
}

# ---- 1: admin-down by mptctl ----
told_down admin-down "mptctl path lab p1 down" lab_ctl a path lab p1 down
it_timed "mptctl path lab p1 up" lab_ctl a path lab p1 up
it_expect_up p1 2000 "$IT_T0_US" "mptctl path lab p1 up at a"

# ---- 2: link down ----
told_down link-down "ip link set pa1 down" lab_exec a ip link set pa1 down
s=$(it_get b p1 state)
case "$s" in
peer-down | dead) ;;
*) it_fail "p1 at b: expected 'peer-down' (pb1 keeps its carrier behind the bridge), it is '$s'" ;;
esac
it_timed "ip link set pa1 up" lab_exec a ip link set pa1 up
it_expect_up p1 3000 "$IT_T0_US" "ip link set pa1 up at a"

it_finish peer-told
