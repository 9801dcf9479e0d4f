#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# offload.sh: super-packets of every size reach the other end whole and in order, over 2 paths.
#
#   - UDP GSO (UDP_SEGMENT) sends from an application inside the tunnel, with datagrams of 100,
#     1000 and 1400 bytes (120 of 100 bytes in one send: the kernel's limit is 128): every
#     datagram arrives at b, with its size and content; out of order at most as many as b's
#     reorder buffer delivered late (gave up waiting for, then delivered when they came);
#   - TCP with an 88-byte MSS (iperf3 -M): super-packets of many small segments; the transfer
#     completes (packets of more segments than mptd makes at once are tested in test-offload);
#   - nothing is dropped as tun-malformed at a; a missing datagram (at most 1 %) must have been
#     dropped and counted at one end, each by its own counter (it_loss_causes: mptd's drops such
#     as stale or tun-write, the kernel's such as a full receive buffer); a late delivery is no
#     loss and excuses none.
# In the -plain variant (no offloads) the kernel splits the super-packets itself; the same holds.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require iperf3 python3
lab_log "offload: UDP GSO and small-MSS TCP through a 2-path tunnel"
lab_topology 2 none 4
lab_profiles 2 4 4
it_start_pinging 10.77.0.2
it_snap_loss before

# Receiver at b: counts datagrams per size class and checks each one's content (its first 8
# bytes are a sequence number, the rest a pattern of that number); stops after 3 s of silence.
lab_exec b python3 - >"$LAB_DIR/udp-rx.txt" 2>&1 <<'EOF' &
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
# SO_RCVBUFFORCE (root): beyond net.core.rmem_max, so that a receiver that is off the CPU for a
# while on a loaded machine does not drop datagrams itself.
s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)
s.bind(("10.77.0.2", 9000))
s.settimeout(15)
got, bad, order, last = {}, 0, 0, {}
try:
    while True:
        d = s.recv(65536)
        s.settimeout(3)
        seq, = struct.unpack("!Q", d[:8])
        size = len(d)
        if d[8:] != bytes([(seq + i) & 0xff for i in range(size - 8)]):
            bad += 1
        if seq <= last.get(size, -1):
            order += 1
        last[size] = seq
        got[size] = got.get(size, 0) + 1
except socket.timeout:
    pass
print("got", " ".join("%d:%d" % kv for kv in sorted(got.items())), "bad", bad, "reordered", order)
EOF
rx_pid=$!
LAB_PIDS+=("$rx_pid")
sleep 0.5

# Sender at a: for each size, 20 sends of one UDP_SEGMENT super-packet (as many datagrams as fit
# in 12000 bytes), 50 ms apart (the receive buffer keeps up).
lab_exec a python3 - >"$LAB_DIR/udp-tx.txt" 2>&1 <<'EOF' || it_fail "UDP GSO sender failed: $(cat "$LAB_DIR/udp-tx.txt")"
import socket, struct, time
UDP_SEGMENT = 103
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("10.77.0.2", 9000))
sent = {}
seq = 0
for size in (100, 1000, 1400):
    s.setsockopt(socket.IPPROTO_UDP, UDP_SEGMENT, size)
    per = 12000 // size
    for k in range(20):
        buf = b""
        for i in range(per):
            buf += struct.pack("!Q", seq) + bytes([(seq + j) & 0xff for j in range(size - 8)])
            seq += 1
        s.send(buf)
        sent[size] = sent.get(size, 0) + per
        time.sleep(0.05)
print("sent", " ".join("%d:%d" % kv for kv in sorted(sent.items())))
EOF
wait "$rx_pid" || true
sent=$(sed -n 's/^sent //p' "$LAB_DIR/udp-tx.txt")
got=$(sed -n 's/^got \(.*\) bad.*/\1/p' "$LAB_DIR/udp-rx.txt")
it_note "UDP GSO: sent $sent; received $(cat "$LAB_DIR/udp-rx.txt")"
it_snap_loss udp
read -r missing total late < <(python3 - "$LAB_DIR/snap-b-before.json" "$LAB_DIR/snap-b-udp.json" "$sent" "$got" <<'EOF'
import json, sys
a, b = (json.load(open(f))[0]["reorder"] for f in sys.argv[1:3])
count = lambda s: sum(int(kv.split(":")[1]) for kv in s.split())
sent, got = count(sys.argv[3]), count(sys.argv[4])
print(sent - got, sent, int(b["late"]) - int(a["late"]))
EOF
)
read -r causes why < <(it_loss_causes before udp)
if [ -z "$sent" ] || [ -z "$missing" ]; then
        it_soft_fail "UDP GSO: sent '$sent' but received '$got'"
elif [ "$missing" -gt 0 ]; then
        if [ "$missing" -le "$causes" ] && [ $((missing * 100)) -le "$total" ]; then
                it_note "UDP GSO: $missing of $total datagrams missing, dropped and counted: ${why:-}"
        else
                it_soft_fail "UDP GSO: sent '$sent' but received '$got': $missing missing, counted as dropped at either end: $causes (${why:-none})"
        fi
fi
read -r bad reordered < <(sed -n 's/.* bad \([0-9]*\) reordered \([0-9]*\)$/\1 \2/p' "$LAB_DIR/udp-rx.txt")
[ "${bad:-1}" = 0 ] || it_soft_fail "UDP GSO: damaged datagrams: $(cat "$LAB_DIR/udp-rx.txt")"
[ "${reordered:-999}" -le "$late" ] ||
        it_soft_fail "UDP GSO: $reordered datagrams out of order, b's reorder buffer delivered only $late late: $(cat "$LAB_DIR/udp-rx.txt")"

# TCP with small segments: many segments per super-packet.
mbit=$(lab_iperf_tcp 10.77.0.2 3 -M 88 || true)
if [[ "$mbit" =~ ^[0-9.]+$ ]] && it_lt 1 "$mbit"; then
        it_note "TCP MSS 88: $mbit Mbit/s"
else
        it_soft_fail "TCP with MSS 88 failed: '$mbit'"
fi

it_snap_both after
python3 - "$LAB_DIR/snap-a-before.json" "$LAB_DIR/snap-a-after.json" >"$LAB_DIR/malformed.txt" <<'EOF'
import json, sys
a, b = (json.load(open(f))[0] for f in sys.argv[1:3])
print(b["drops"]["tun-malformed"] - a["drops"]["tun-malformed"])
EOF
[ "$(cat "$LAB_DIR/malformed.txt")" = 0 ] ||
        it_soft_fail "a dropped $(cat "$LAB_DIR/malformed.txt") packets from the TUN device as tun-malformed"
it_finish offload
