#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# local-queue.sh: a path whose datagrams wait in a local queue (a shaper on its interface) is
# seen as queueing, gets short sends, and is no longer seen so a second after the load ends; a
# path without a queue is never seen so. A path's datagrams of a TUN packet leave in one
# sendmmsg().
#
#   - 2 paths; a shapes pa0 to 30 Mbit/s with tbf, pa1 is a bare veth; Scheduler=weighted with
#     equal weights, so that p0 limits the tunnel to about 60 Mbit/s and its share of 200 us is
#     less than a datagram (the learned scheduler, the default, would send gigabits over p1, and
#     p0's short sends would follow the vector's smallest share of that: learned.sh's paths);
#   - idle: neither path shows queued_locally (mptctl --json show) at a;
#   - under a TCP load a -> b: p0 shows queued_locally yes within 6 s (and the plain output says
#     "queues locally"), p1 never does (sampled every 0.1 s for the whole load);
#   - a's worker threads run under strace (sendmmsg, decoded) for 1.5 s of the load: every call
#     carries one path's datagrams; in the default variant p0's UDP GSO sends are short (one or
#     two datagrams: what its share carries in 200 us; at least 97 % of them, as strace's own
#     stops make the rate measured over a moment jump now and then: measured, up to 14 datagrams
#     in one send of thousands) and some of p1's carry more; in the
#     -plain variant (one packet per system call) every call carries one datagram;
#   - 1.5 s after the load ended p0 shows no again.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require iperf3 python3 strace tc
lab_log "local-queue: a shaped path is seen queueing locally and gets short sends; a bare one is not"
lab_topology 2 none 4
lab_shape a pa0 30mbit
lab_profiles 2 4 4 'Scheduler=weighted'
it_start_pinging 10.77.0.2

queued() {
        # JSON has true/false for the protocol's yes/no.
        lab_json a '" ".join("yes" if p[n]["queued_locally"] is True else "no" if p[n]["queued_locally"] is False else "?" for n in ("p0", "p1"))'
}

got=$(queued)
[ "$got" = "no no" ] || it_fail "idle: expected queued_locally 'no no' for p0 p1, mptctl shows '$got'"

# The whole load is sampled: p0 must be seen queueing, p1 never (a sampler in the background,
# which writes one line per sample).
sampler() {
        local end=$((SECONDS + 8))
        while [ "$SECONDS" -lt "$end" ]; do
                queued
                sleep 0.1
        done
}
it_load_start 10.77.0.2 8
sampler >"$LAB_DIR/samples.txt" 2>&1 &
sampler_pid=$!
LAB_PIDS+=("$sampler_pid")
for _ in $(seq 60); do
        grep -q '^yes ' "$LAB_DIR/samples.txt" && break
        sleep 0.1
done
grep -q '^yes ' "$LAB_DIR/samples.txt" || it_fail "p0 (tbf 30mbit) was not seen queueing locally within 6 s of load"
lab_ctl a show lab | grep "queues locally" >/dev/null || it_fail "mptctl show does not say that p0 queues locally"

# 1.5 s of a's sends under strace, decoded: per sendmmsg() call its messages, each with its
# destination (the path's remote) and its iovecs (two per datagram).
ip netns exec "$(lab_ns a)" strace -f -qq -v -s 0 -e trace=sendmmsg -o "$LAB_DIR/strace-a.out" \
        -p "$LAB_PID_a" 2>"$LAB_DIR/strace-a.err" &
strace_pid=$!
LAB_PIDS+=("$strace_pid")
sleep 1.5
kill -INT "$strace_pid" 2>/dev/null || true
wait "$strace_pid" 2>/dev/null || true

it_load_wait
wait "$sampler_pid" 2>/dev/null || true
it_note "load: $IT_LOAD_MBIT Mbit/s; $(wc -l <"$LAB_DIR/samples.txt") samples of queued_locally: p0 yes in $(grep -c '^yes ' "$LAB_DIR/samples.txt"), p1 yes in $(grep -c ' yes$' "$LAB_DIR/samples.txt")"
! grep -q ' yes$' "$LAB_DIR/samples.txt" || it_fail "p1 (no shaper, nothing queues) was seen queueing locally during the load"
! grep -qv '^\(yes\|no\) \(yes\|no\)$' "$LAB_DIR/samples.txt" ||
        it_fail "unexpected samples: $(grep -v '^\(yes\|no\) \(yes\|no\)$' "$LAB_DIR/samples.txt" | head -n 3)"

# Per path: the messages (UDP GSO sends) and the datagrams each carried; calls whose messages go
# to more than one path. Calls split by another thread's ("<unfinished ...>") are left out.
read -r calls mixed m0 max0 m1 max1 single short0 < <(python3 - "$LAB_DIR/strace-a.out" "$(lab_path_addr b 0 4)" \
        "$(lab_path_addr b 1 4)" <<'EOF'
import re, sys
remote = {sys.argv[2]: 0, sys.argv[3]: 1}
calls = mixed = single = 0
msgs, most, short = [0, 0], [0, 0], [0, 0]
for line in open(sys.argv[1]):
    if "sendmmsg(" not in line or "unfinished" in line or "resumed" in line:
        continue
    dests = re.findall(r'sin_addr=inet_addr\("([0-9.]+)"\)', line)
    iovlens = [int(x) for x in re.findall(r"msg_iovlen=([0-9]+)", line)]
    if not dests or len(dests) != len(iovlens):
        continue
    calls += 1
    mixed += len(set(dests)) > 1
    single += len(dests) == 1 and iovlens[0] == 2
    for d, n in zip(dests, iovlens):
        p = remote.get(d)
        if p is None:
            continue
        msgs[p] += 1
        most[p] = max(most[p], n // 2)
        short[p] += n // 2 <= 2
print(calls, mixed, msgs[0], most[0], msgs[1], most[1], single, short[0])
EOF
)
it_note "$calls sendmmsg() calls in 1.5 s; p0: $m0 sends of at most $max0 datagrams ($short0 of one or two); p1: $m1 sends of at most $max1"
[ "$calls" -gt 0 ] || it_fail "strace saw no sendmmsg() from a's mptd under load: $(head -c 300 "$LAB_DIR/strace-a.err")"
[ "$mixed" = 0 ] || it_fail "$mixed sendmmsg() calls carried datagrams of both paths; a call is one path's datagrams of a TUN packet"
[ "$m0" -gt 0 ] && [ "$m1" -gt 0 ] || it_fail "both paths should have sent under load (p0: $m0 sends, p1: $m1)"
if [ "${MPT_DEBUG_BATCH:-}" = 1 ]; then
        [ "$single" = "$calls" ] ||
                it_fail "one packet per system call asked for, but only $single of $calls sendmmsg() calls carried one datagram"
else
        # p0's share of a tunnel of about 60 Mbit/s (p0 limits it) carries less than one datagram
        # in 200 us (SCHED_GSO_TIME_USEC): its sends are single datagrams, two at most while the
        # rate is measured high for a moment (strace's stops do that too: 97 % of the sends are
        # asked, not all). p1 queues nothing: full sends.
        [ $((short0 * 100)) -ge $((m0 * 97)) ] ||
                it_fail "p0 queues locally, yet only $short0 of its $m0 sends carried one or two datagrams (at most $max0)"
        [ "$max1" -gt 2 ] || it_fail "p1 queues nothing, yet none of its sends carried more than $max1 datagrams"
fi

sleep 1.5
got=$(queued)
[ "$got" = "no no" ] || it_fail "1.5 s after the load: expected queued_locally 'no no', mptctl shows '$got'"

it_pass "local-queue"
