#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The local address of a path without LocalAddress= changes: 2 paths of 50 Mbit/s,
# KeepaliveInterval=100ms, DeadTime=300ms, no LocalAddress= (mptd takes the interface's
# address). In namespace a, pa1 gets a second address in its subnet (10.77.101.11/24), then the
# old one (10.77.101.1) is deleted. promote_secondaries is turned on for pa1 first: without it
# the kernel deletes the secondary addresses of a subnet together with its primary one.
#
# Asserts:
#   - a rebinds p1: within 2 s its "local" is 10.77.101.11:PORT, and p1 is "up" at a;
#   - b follows the new source: within 2 s p1's "remote" at b is 10.77.101.11:PORT and its
#     remote_changes is at least 1 (0 before), and p1 is "up" at b;
#   - traffic continues over p1 in both directions: under a ping flood, p1's tx_bytes at a and
#     rx_bytes at b grow, and so do b's tx_bytes and a's rx_bytes on p1 (b sends to the new
#     address);
#   - pings through the tunnel are answered (every one), right after the change and a while later;
#   - p1 stays "up" at both ends through the change (state_age_us reaches back to before it):
#     a rebinding is no outage.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3
lab_topology 2 50mbit 4
lab_profiles 2 4 4 "" 'KeepaliveInterval=100ms\nDeadTime=300ms'
grep -q '^LocalAddress=' "$LAB_DIR/a.conf" && it_fail "the profile must not set LocalAddress= for this test"
it_start_both 3000
port=$(it_get a "" local_port)
old=$(lab_path_addr a 1 4)
new=10.77.101.11

local_now=$(it_get a p1 local)
[ "$local_now" = "$old:$port" ] || it_fail "p1 at a: expected local $old:$port before the change, mptctl shows '$local_now'"
rc0=$(it_get b p1 remote_changes)
[ "$rc0" = 0 ] || it_fail "p1 at b: expected remote_changes 0 before the change, it is $rc0"

# ---- replace the address ----
lab_exec a sysctl -qw net.ipv4.conf.pa1.promote_secondaries=1
it_now_us
t0=$IT_NOW_US
lab_exec a ip addr add "$new/24" dev pa1
lab_exec a ip addr del "$old/24" dev pa1
lab_exec a ip -4 addr show dev pa1 | grep -q "inet $new/" ||
        it_fail "setup: expected $new on pa1 after deleting $old, ip addr shows: $(lab_exec a ip -4 -o addr show dev pa1)"

# "local" at a
end=$((t0 + 2000000))
while :; do
        it_dump a
        it_field_of "$IT_DUMP" p1 local || true
        [ "$IT_V" = "$new:$port" ] && break
        [ "$IT_DUMP_T" -lt "$end" ] || it_fail "p1 at a: expected local $new:$port within 2 s of the address change, mptctl shows '$IT_V'"
        sleep 0.01
done
it_note "p1 at a rebound to $IT_V $(it_ms $((IT_DUMP_T - t0))) ms after the change"
it_expect a p1 up 2000 "after rebinding"

# "remote" and remote_changes at b
it_expect_remote p1 "$new:$port" 2000 "$t0" "the address change"
it_expect b p1 up 2000 "after following the new source"

# ---- traffic over p1 ----
it_snap_both t0
it_ping_soft a "$(lab_tunnel_addr b 4)" 100 0.005
it_snap_both t1
it_note "during the pings: tx_bytes at a $(it_deltas a t0 t1 tx_bytes p0 p1), tx_bytes at b $(it_deltas b t0 t1 tx_bytes p0 p1)"
it_expect_grew t0 t1 p1 "100 pings after the address change"
s=$(it_get b p1 remote)
[ "$s" = "$new:$port" ] || it_soft_fail "p1 at b: expected remote to stay $new:$port, it is '$s'"

# A rebinding is no outage (see the log for the states in between, if any).
it_stayed_up p1 "$t0" "the address change"
# and the second round of pings, well after the change, must be clean too
it_ping_soft a "$(lab_tunnel_addr b 4)" 50 0.01

it_finish address-change
