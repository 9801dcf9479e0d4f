#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# local-queue.sh: a path whose datagrams wait in a local queue (a shaper on its interface) is
# seen as queueing, gets short sends, and is no longer seen so a second after the load ends; a
# path without a queue is never seen so. A path's datagrams of a TUN packet leave in one
# sendmmsg().
#
#   - 2 paths; a shapes pa0 to 30 Mbit/s with tbf, pa1 is a bare veth;
#   - idle: neither path shows queued_locally (mptctl --json show) at a;
#   - under a TCP load a -> b: p0 shows queued_locally yes within 5 s (and the plain output says
#     "queues locally"), p1 never does (sampled all along);
#   - a's worker threads run under strace (sendmmsg only) for a second of the load: in the
#     default variant some call carried more than one message (the shaped path's short sends of
#     one window); in the -plain variant (one packet per system call) every call carried one;
#   - 1.5 s after the load ended p0 shows no again.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/netns.sh"
. "$here/common.sh"

lab_init
it_require iperf3 python3 strace tc
lab_log "local-queue: a shaped path is seen queueing locally and gets short sends; a bare one is not"
lab_topology 2 none 4
lab_shape a pa0 30mbit
it_profiles 2 4 4
it_start a
it_start b
it_wait_ping a 10.77.0.2 10 || it_fail "the tunnel does not answer ping"

queued() {
        # JSON has true/false for the protocol's yes/no.
        lab_json a '" ".join("yes" if p[n]["queued_locally"] is True else "no" if p[n]["queued_locally"] is False else "?" for n in ("p0", "p1"))'
}

got=$(queued)
[ "$got" = "no no" ] || it_fail "idle: expected queued_locally 'no no' for p0 p1, mptctl shows '$got'"

it_load_start 10.77.0.2 8
seen0=no
end=$((SECONDS + 6))
while [ "$SECONDS" -lt "$end" ]; do
        got=$(queued)
        [ "${got#* }" = no ] || it_fail "p1 (no shaper, nothing queues) was seen queueing locally: '$got'"
        if [ "${got% *}" = yes ]; then
                seen0=yes
                break
        fi
        sleep 0.1
done
[ "$seen0" = yes ] || it_fail "p0 (tbf 30mbit) was not seen queueing locally within 6 s of load"
lab_ctl a show lab | grep -q "queues locally" || it_fail "mptctl show does not say that p0 queues locally"
it_note "p0 seen queueing locally, p1 not"

# One second of a's sends under strace: the number of messages each sendmmsg() carried.
ip netns exec "$(lab_ns a)" strace -f -qq -e trace=sendmmsg -e raw=sendmmsg -o "$LAB_DIR/strace-a.out" \
        -p "$LAB_PID_a" 2>"$LAB_DIR/strace-a.err" &
strace_pid=$!
LAB_PIDS+=("$strace_pid")
sleep 1.5
kill -INT "$strace_pid" 2>/dev/null || true
wait "$strace_pid" 2>/dev/null || true
# Lines like "123 sendmmsg(0x5, 0x7ffc..., 0x3, 0x40) = 0x3"; resumed calls are split in two.
read -r calls multi single < <(python3 - "$LAB_DIR/strace-a.out" <<'EOF'
import re, sys
calls = multi = single = 0
for line in open(sys.argv[1]):
    m = re.search(r"sendmmsg\(0x[0-9a-f]+, 0x[0-9a-f]+, 0x([0-9a-f]+)", line)
    if not m:
        continue
    calls += 1
    if int(m.group(1), 16) > 1:
        multi += 1
    else:
        single += 1
print(calls, multi, single)
EOF
)
[ "$calls" -gt 0 ] || it_fail "strace saw no sendmmsg() from a's mptd under load: $(head -c 300 "$LAB_DIR/strace-a.err")"
if [ "${MPT_DEBUG_BATCH:-}" = 1 ]; then
        [ "$multi" = 0 ] || it_fail "one packet per system call asked for, but $multi of $calls sendmmsg() calls carried several messages"
else
        [ "$multi" -gt 0 ] || it_fail "none of $calls sendmmsg() calls carried more than one message (short sends of a window should)"
fi
it_note "$calls sendmmsg() calls in 1.5 s, $multi with several messages"

it_load_wait
it_note "load: $IT_LOAD_MBIT Mbit/s"
sleep 1.5
got=$(queued)
[ "$got" = "no no" ] || it_fail "1.5 s after the load: expected queued_locally 'no no', mptctl shows '$got'"

it_pass "local-queue"
