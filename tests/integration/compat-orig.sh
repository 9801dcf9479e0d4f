#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Compat mode toward a receiver like the original MPT (issue 20): mptd at a sends TCP to
# tests/integration/orig-peer at b, which reads each path with one recvfrom() per datagram in a
# thread of its own, with the kernel's default receive buffer (212992 bytes), as the original
# does. 2 unshaped veth paths, Mode=compat, KeepaliveInterval=0 (orig-peer sends none).
#
# Asserts, for a TCP stream at 300 Mbit/s (iperf3 -b 300M) for 5 s:
#   - no datagram overflowed a receive buffer at b (Udp RcvbufErrors in b's /proc/net/snmp);
#   - the stream's goodput is at least 270 Mbit/s (90 % of its rate);
#   - both paths carried a share (orig-peer's counts).
# TCP's retransmissions are only printed: orig-peer, like the original with reorder_window=0,
# writes packets in the order they arrive, and the two paths reorder them.
# The -plain variant (one datagram per system call) is the control. ORIG_WORKERS=N runs mptd
# with N workers (to try more workers than CPUs).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3
it_require iperf3
[ -n "${MPT_ORIG_PEER:-}" ] && [ -x "$MPT_ORIG_PEER" ] || lab_skip "needs orig-peer (MPT_ORIG_PEER=)"
[ -z "${MPT_SANITIZED:-}" ] || lab_skip "a sanitized mptd does not send at 300 Mbit/s on this machine"

lab_topology 2 none 4
lab_profiles 2 4 4 'Mode=compat' 'KeepaliveInterval=0'
lab_start a "$LAB_DIR/a.conf" ${ORIG_WORKERS:+--workers=$ORIG_WORKERS}

# b: the original's data plane on a TUN device of the same name and addresses.
lab_spawn b "$MPT_ORIG_PEER" lab 4754 "$(lab_path_addr b 0 4)" "$(lab_path_addr a 0 4)" \
        "$(lab_path_addr b 1 4)" "$(lab_path_addr a 1 4)" > "$LAB_DIR/orig-peer.out" 2>>"$LAB_DIR/orig-peer.log"
peer_pid=$LAB_SPAWNED
for _ in $(seq 100); do
        lab_exec b ip link show lab >/dev/null 2>&1 && break
        sleep 0.05
done
lab_exec b ip addr add "$(lab_tunnel_addr b 4)/24" dev lab
lab_exec b ip link set lab mtu "$(lab_exec a cat /sys/class/net/lab/mtu)" up

rcvbuf_errors() {
        lab_exec b awk '/^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) n[$i] = i; h = 1 } else print $n["RcvbufErrors"] }' /proc/net/snmp
}

# Warm up (ARP, TCP's first window), then measure.
lab_exec a ping -n -q -c 3 -i 0.1 -W 1 "$(lab_tunnel_addr b 4)" >/dev/null || it_fail "no ping through the tunnel to orig-peer"
before=$(rcvbuf_errors)
goodput=$(lab_iperf_tcp "$(lab_tunnel_addr b 4)" 5 -b 300M)
after=$(rcvbuf_errors)
retrans=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["end"]["sum_sent"].get("retransmits", 0))' "$LAB_DIR/iperf.json")
kill -TERM "$peer_pid"
wait "$peer_pid" 2>/dev/null || true
overflow=$((after - before))
it_note "TCP at 300 Mbit/s to orig-peer: goodput $goodput Mbit/s, $retrans retransmissions, $overflow datagrams overflowed b's receive buffers"
[ "$overflow" = 0 ] || it_soft_fail "expected no receive-buffer overflow at the original-like receiver, counted $overflow"
python3 -c "import sys; sys.exit(0 if float('$goodput') >= 270 else 1)" ||
        it_soft_fail "expected at least 270 Mbit/s of the 300 Mbit/s stream, got $goodput"
for i in 0 1; do
        n=$(sed -n "s/^path $i: received \([0-9]*\) datagrams.*/\1/p" "$LAB_DIR/orig-peer.out")
        it_note "orig-peer's path $i: ${n:-?} datagrams"
        [ "${n:-0}" -gt 1000 ] || it_soft_fail "expected path $i to carry part of the stream, orig-peer received ${n:-no} datagrams on it"
done

it_finish compat-orig
