#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A path's link goes down and up again under a TCP load: 4 paths of 50 Mbit/s (shaped, to keep
# the CPU use moderate), KeepaliveInterval=100ms, DeadTime=300ms, iperf3 TCP a -> b for 12 s;
# meanwhile `ip link set pa1 down` in namespace a, and up again about 3 s later.
#
# Asserts:
#   - a reports p1 "link-down", and mptd changed the state no later than 100 ms after the
#     command was started (from state_age_us; the time the poll first saw it is printed too and
#     must be under 500 ms);
#   - b takes p1 out of use ("peer-down", told over the other paths, or "link-down", from the
#     veth's lost carrier) within 1.5 s;
#   - while the link is down, p1's tx_bytes at a do not grow (over 2 s) and each other path's
#     tx_bytes at a grow by more than 2 MB (they carry the load);
#   - after `ip link set pa1 up`, p1 is "up" at a and at b within 2 s each, and its tx_bytes at a
#     and rx_bytes at b grow by more than 1 MB over the next second;
#   - iperf3 exits 0 with no error in its JSON (the TCP connection survived) and moved more
#     than 10 MB.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require iperf3 python3 ss
lab_topology 4 50mbit 4
lab_profiles 4 4 4 "" 'KeepaliveInterval=100ms\nDeadTime=300ms'
it_start_both 3000

it_load_start "$(lab_tunnel_addr b 4)" 12
it_wait_flow 1000000 5000 p0 p1 p2 p3

# ---- link down ----
it_timed "ip link set pa1 down" lab_exec a ip link set pa1 down
t_down=$IT_T0_US
it_expect a p1 link-down 1000 "after ip link set pa1 down" "$t_down"
it_note "p1 link-down at a: state changed $(it_ms "$IT_AT_US") ms after the command started, seen by the poll after $(it_ms "$IT_SEEN_US") ms (reason: $IT_REASON)"
[ "$IT_AT_US" -le 100000 ] ||
        it_fail "p1 at a: expected 'link-down' within 100 ms of the command, mptd changed the state after $(it_ms "$IT_AT_US") ms"
[ "$IT_SEEN_US" -le 500000 ] ||
        it_fail "p1 at a: expected the poll to see 'link-down' within 500 ms, it took $(it_ms "$IT_SEEN_US") ms"

it_expect b p1 'peer-down|link-down' 1500 "the other end of a link that went down" "$t_down"
it_note "p1 at b: '$IT_STATE' $(it_ms "$IT_AT_US") ms after the command (reason: $IT_REASON)"

it_snap a d0
sleep 2
it_snap a d1
s=$(it_get a p1 state)
[ "$s" = link-down ] || it_fail "p1 at a: expected it to stay 'link-down' while the link is down, it is '$s'"
it_note "while pa1 is down, tx_bytes at a over 2 s: $(it_deltas a d0 d1 tx_bytes p0 p1 p2 p3)"
it_expect_delta a d0 d1 tx_bytes p1 -eq 0 "not to grow while its link is down"
for p in p0 p2 p3; do
        it_expect_delta a d0 d1 tx_bytes "$p" -gt 2000000 "to grow by more than 2 MB in 2 s while p1 is down"
done

# ---- link up again, about 3 s after it went down ----
it_sleep_until $((t_down + 3000000))
it_timed "ip link set pa1 up" lab_exec a ip link set pa1 up
it_expect_up p1 2000 "$IT_T0_US" "ip link set pa1 up"

it_snap_both u0
sleep 1
it_snap_both u1
it_note "after the link came back, tx_bytes at a over 1 s: $(it_deltas a u0 u1 tx_bytes p0 p1 p2 p3)"
it_expect_delta a u0 u1 tx_bytes p1 -gt 1000000 "to grow by more than 1 MB in 1 s after the link came back"
it_expect_delta b u0 u1 rx_bytes p1 -gt 1000000 "to grow by more than 1 MB in 1 s after the link came back"

it_load_wait
it_note "iperf3 TCP a -> b: $IT_LOAD_MBIT Mbit/s, $IT_LOAD_BYTES bytes, $IT_LOAD_RETRANS retransmissions"
[ "$IT_LOAD_BYTES" -gt 10000000 ] || it_fail "iperf3: expected more than 10 MB moved, got $IT_LOAD_BYTES bytes"

it_finish link-updown
