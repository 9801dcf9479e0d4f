#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# rx-batch.sh: receiving several buffers of a path per system call (recvmmsg) keeps every datagram
# whole, in its place and in order, also while the reorder buffer holds packets in them.
#
#   - a sends without GSO (MPT_DEBUG_BATCH=1 at a only), datagram by datagram, alternating between
#     its 2 paths; b's receive buffers then hold one datagram each, and b reads up to 8 of them
#     per recvmmsg();
#   - path 1 is slower than path 0 (40 Mbit/s with a queue, at a), so b's reorder buffer holds
#     path 0's packets of a burst in their receive buffers while path 1's trickle in, and further
#     buffers are received meanwhile: a burst of 150 datagrams holds more of them than the
#     receive pool has buffers (64), so the worker's own buffers (held packets copied out of them)
#     are used too;
#   - an application at b checks every datagram's content (a sequence number and a pattern of it)
#     and counts them: none damaged; none missing unless dropped and counted at one end, each by
#     its own counter (it_loss_causes: e.g. stale at b, when it arrived after ReorderMaxDelay on a
#     loaded machine), at most 1 % in all; out of order at most as many as b's reorder buffer
#     delivered late;
#   - b's worker threads run under strace (recvmmsg only): in the default variant some calls
#     returned more than one message; in the -plain variant (MPT_DEBUG_BATCH=1 at b too) every
#     call asked for exactly one.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3 strace tc
lab_log "rx-batch: several single-datagram receive buffers per recvmmsg() at b, reordered over 2 paths"
lab_topology 2 none 4
lab_profiles 2 4 4
lab_exec a tc qdisc replace dev pa1 root tbf rate 40mbit burst 5kb latency 200ms || it_fail "cannot shape pa1"
MPT_DEBUG_BATCH=1 lab_start a
lab_start b
it_wait_ping a 10.77.0.2 10 || it_fail "the tunnel does not answer ping"
it_snap_loss before

# strace only b's mptd (all its threads): every recvmmsg with its raw arguments and result.
ip netns exec "$(lab_ns b)" strace -f -qq -e trace=recvmmsg -e raw=recvmmsg -o "$LAB_DIR/strace-b.out" \
        -p "$LAB_PID_b" 2>"$LAB_DIR/strace-b.err" &
strace_pid=$!
LAB_PIDS+=("$strace_pid")
# Wait until strace is attached (it logs the keepalives' receives).
for _ in $(seq 100); do
        [ -s "$LAB_DIR/strace-b.out" ] && break
        kill -0 "$strace_pid" 2>/dev/null || it_fail "strace could not attach to b's mptd: $(cat "$LAB_DIR/strace-b.err")"
        sleep 0.1
done
[ -s "$LAB_DIR/strace-b.out" ] || it_fail "strace recorded nothing from b's mptd within 10 s"

lab_exec b python3 - >"$LAB_DIR/udp-rx.txt" 2>&1 <<'EOF' &
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE: the application keeps up
s.bind(("10.77.0.2", 9000))
s.settimeout(20)
got, bad, order, last = 0, 0, 0, -1
try:
    while True:
        d = s.recv(65536)
        s.settimeout(3)
        seq, = struct.unpack("!Q", d[:8])
        if len(d) != 1000 + seq % 200 or d[8:] != bytes([(seq * 7 + i) & 0xff for i in range(len(d) - 8)]):
            bad += 1
        if seq <= last:
            order += 1
        last = max(last, seq)
        got += 1
except socket.timeout:
    pass
print("got", got, "bad", bad, "reordered", order)
EOF
rx_pid=$!
LAB_PIDS+=("$rx_pid")
sleep 0.5

# 40 bursts of 150 datagrams of 1000..1199 bytes, 50 ms apart.
lab_exec a python3 - >"$LAB_DIR/udp-tx.txt" 2>&1 <<'EOF' || it_fail "UDP sender failed: $(cat "$LAB_DIR/udp-tx.txt")"
import socket, struct, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("10.77.0.2", 9000))
seq = 0
for burst in range(40):
    for i in range(150):
        size = 1000 + seq % 200
        s.send(struct.pack("!Q", seq) + bytes([(seq * 7 + j) & 0xff for j in range(size - 8)]))
        seq += 1
    time.sleep(0.05)
print("sent", seq)
EOF
wait "$rx_pid" || true
kill -TERM "$strace_pid" 2>/dev/null || true
wait "$strace_pid" 2>/dev/null || true
it_snap_loss after

sent=$(sed -n 's/^sent //p' "$LAB_DIR/udp-tx.txt")
read -r got bad reordered < <(sed -n 's/^got \([0-9]*\) bad \([0-9]*\) reordered \([0-9]*\)$/\1 \2 \3/p' "$LAB_DIR/udp-rx.txt")
[ -n "$sent" ] && [ -n "${got:-}" ] || it_fail "no result: sent '$sent', receiver: $(cat "$LAB_DIR/udp-rx.txt")"
it_note "sent $sent datagrams; b received $got, $bad damaged, $reordered out of order"
[ "$bad" = 0 ] || it_fail "$bad of $got datagrams arrived damaged"
late=$(python3 -c '
import json, sys
a, b = (json.load(open(f))[0]["reorder"] for f in sys.argv[1:3])
print(int(b["late"]) - int(a["late"]))' "$LAB_DIR/snap-b-before.json" "$LAB_DIR/snap-b-after.json")
# Out of order only what b's reorder buffer gave up waiting for and delivered when it came (on
# a loaded machine, and under strace, a worker may not read a path for longer than it waits).
[ "$reordered" -le "$late" ] ||
        it_fail "$reordered of $got datagrams arrived out of order; b's reorder buffer delivered only $late late"
missing=$((sent - got))
if [ "$missing" -gt 0 ]; then
        read -r causes why < <(it_loss_causes before after)
        [ "$missing" -le "$causes" ] && [ $((missing * 100)) -le "$sent" ] ||
                it_fail "$missing of $sent datagrams missing; counted as dropped at either end: $causes (${why:-none})"
        it_note "$missing datagrams missing, dropped and counted: $why"
fi

# recvmmsg(fd, msgvec, vlen, flags, timeout) = n, with the arguments in strace's raw (hex) form;
# calls split by another thread's ("<unfinished ...>") are left out.
python3 - "$LAB_DIR/strace-b.out" >"$LAB_DIR/recvmmsg.txt" <<'EOF'
import re, sys
calls = multi = max_vlen = max_got = 0
for line in open(sys.argv[1]):
    m = re.search(r"recvmmsg\(([^,]+), ([^,]+), ([^,]+), .*\) += (0x[0-9a-f]+|[0-9]+)\s*$", line)
    if not m:
        continue
    vlen, n = int(m.group(3), 0), int(m.group(4), 0)
    calls += 1
    multi += n > 1
    max_vlen, max_got = max(max_vlen, vlen), max(max_got, n)
print(calls, multi, max_vlen, max_got)
EOF
read -r calls multi max_vlen max_got <"$LAB_DIR/recvmmsg.txt"
it_note "b: $calls recvmmsg calls that returned data, $multi of them more than one message (at most $max_got; vlen at most $max_vlen)"
[ "$calls" -gt 0 ] || it_fail "b received nothing with recvmmsg: $(head -n 3 "$LAB_DIR/strace-b.out")"
if [ "${MPT_DEBUG_BATCH:-}" = 1 ]; then
        [ "$max_vlen" = 1 ] || it_fail "with MPT_DEBUG_BATCH=1, b asked recvmmsg for $max_vlen messages at once"
else
        [ "$multi" -gt 0 ] || it_fail "b never received more than one message per recvmmsg"
fi
it_finish rx-batch
