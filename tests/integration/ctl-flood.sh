#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The control socket under a flood keeps serving mptctl.
#
# For 10 s, 6 flooding clients (as root, the worst case: they pass the credential check) open
# connections as fast as they can and send random bytes, oversized messages (64 KiB), requests
# with NUL bytes and endless "show" requests, or connect and hold the connection without ever
# sending (half-open, up to 100 each). Meanwhile `mptctl show lab` runs in a loop.
#
# Asserts: every `mptctl show lab` during the flood succeeds (mptctl gives up after 5 s, so each
# answer came in bounded time; the slowest is reported); garbage is answered with an error reply,
# not silence; mptd is still alive afterwards, the tunnel still carries traffic, and its file
# descriptors are back to what they were (no leaked connections).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3
lab_topology 1 none 4
lab_profiles 1 4 4
lab_start a
lab_start b
it_ping a "$(lab_tunnel_addr b 4)" 3
sock="$LAB_DIR/run-a/lab.sock"
fds_before=$(ls /proc/"$LAB_PID_a"/fd | wc -l)

# One garbage request first: an error reply, not silence.
reply=$(python3 - "$sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
s.connect(sys.argv[1])
s.send(b"hello\x00\xff world")
print(s.recv(65536).decode(errors="replace").splitlines()[0])
PY
) || it_fail "no reply to a garbage request"
[[ "$reply" == "MPT/1 error "* ]] || it_fail "expected an error reply to garbage, got: $reply"
it_note "garbage request: $reply"

cat > "$LAB_DIR/flood.py" <<'PY'
import os, random, socket, sys, time
path, kind, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
end = time.monotonic() + secs
held, sent, conns = [], 0, 0
rnd = random.Random(os.getpid())
while time.monotonic() < end:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.setblocking(False)
        s.connect(path)
        conns += 1
    except OSError:
        time.sleep(0.001)
        continue
    try:
        if kind == "hold":
            held.append(s)
            if len(held) > 100:
                held.pop(0).close()
            continue
        for _ in range(rnd.randint(1, 20)):
            if kind == "garbage":
                msg = os.urandom(rnd.randint(1, 5000))
            elif kind == "oversized":
                msg = b"MPT/1 show " + b"x" * 65536
            elif kind == "nul":
                msg = b"MPT/1 path \x00p0 down\n"
            else:
                msg = b"MPT/1 show"
            s.send(msg)
            sent += 1
    except OSError:
        pass
    if rnd.random() < 0.5:
        s.close()  # else dropped unread: closed by the garbage collector, or evicted by mptd
print(f"{kind}: {conns} connections, {sent} messages")
PY
flood_pids=()
for kind in garbage garbage oversized nul show hold; do
        python3 "$LAB_DIR/flood.py" "$sock" "$kind" 10 >>"$LAB_DIR/flood.out" 2>&1 &
        flood_pids+=($!)
done
LAB_PIDS+=("${flood_pids[@]}")

n=0 slowest=0
start=$(it_now)
while it_lt "$(it_elapsed "$start")" 9; do
        t0=$(it_now)
        out=$(lab_ctl a show lab 2>&1) || it_fail "mptctl show failed during the flood (after $n good answers): $out"
        grep -q "^tunnel: lab" <<<"$out" || it_fail "mptctl show gave no tunnel during the flood: $out"
        d=$(it_elapsed "$t0")
        it_lt "$slowest" "$d" && slowest=$d
        n=$((n + 1))
        sleep 0.1
done
for pid in "${flood_pids[@]}"; do
        wait "$pid" || it_fail "a flooding client failed: $(cat "$LAB_DIR/flood.out")"
done
it_note "$(tr '\n' ';' < "$LAB_DIR/flood.out")"
it_note "$n mptctl show answers during the flood, the slowest in $slowest s"
[ "$n" -ge 5 ] || it_fail "only $n mptctl answers in 9 s"

kill -0 "$LAB_PID_a" || it_fail "mptd died in the flood"
it_wait_ping a "$(lab_tunnel_addr b 4)" 5 || it_fail "the tunnel stopped carrying traffic after the flood"
# The flood's connections are closed (their clients exited): mptd closes them on hang-up.
fds=0
for _ in $(seq 50); do
        fds=$(ls /proc/"$LAB_PID_a"/fd | wc -l)
        [ "$fds" -le "$fds_before" ] && break
        sleep 0.1
done
[ "$fds" -le "$fds_before" ] || it_fail "mptd has $fds file descriptors after the flood, $fds_before before"
lab_ctl a show lab >/dev/null || it_fail "mptctl show failed after the flood"
it_finish "control socket flood"
