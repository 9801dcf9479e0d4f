#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# rx-workers.sh: which worker receives a path's datagrams, and which sends a flow's packets
# (mptd(8), DESCRIPTION), judged by the per-worker data packet counts of `mptctl show`
# (worker_rx, worker_tx), with 4 paths, over a TCP transfer a -> b:
#
#   - compat mode, 2 workers: every path is received by worker 0, and the flows are sent by
#     worker 1 (b's acknowledgements as well as a's data: a packet received by worker 0 is
#     written through worker 1's TUN queue, and the kernel sends the flow's answers through it);
#   - TCP both ways at once (compat mode): every flow goes out by worker 1, at both ends;
#   - a one-way UDP stream a -> b with pings b -> a beside it (compat and secure mode): b receives
#     much and sends little, and still its echo requests go out by worker 1 (the replies come
#     in through worker 1's queue), as do a's echo replies: only a quiet tunnel's receiving
#     worker answers its flows itself;
#   - secure mode, 2 workers: the same (half of the workers receive);
#   - secure mode, 4 workers: paths 0 and 2 are received by worker 0, 1 and 3 by worker 1, and
#     workers 2 and 3 receive nothing;
#   - MPT_DEBUG_RX_SPREAD=1 (compat mode, 2 workers): paths 0 and 2 are received by worker 0,
#     1 and 3 by worker 1;
#   (these two: exactly, from the per-path and per-worker counts at b, with a's weights 1, 2, 4
#   and 8 so that no other mapping gives the same counts);
#   - a quiet tunnel (pings 20 ms apart, no other traffic), compat and secure mode, 2 workers:
#     worker 0, which receives, also sends: a's echo requests (its replies came in through
#     worker 0's own queue) and b's replies, so an idle round trip wakes one thread per end;
#   - the plain output has the per-worker line, and with 1 worker there is none.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3 iperf3
lab_log "rx-workers: receiving and sending workers, compat and secure mode, 4 paths, 2 and 4 workers"
lab_topology 4 none 4

stop_both() {
        lab_stop a
        lab_stop b
}

# start_case NAME MODE_LINE [ENV=VALUE...]: both ends with $WORKERS workers (default 2; and the
# environment) and, when $WEIGHTS lists four, those weights for a's paths; waits for the tunnel
# and takes the "before" snapshots.
start_case() {
        local name=$1 mode=$2 side kv i=0 w
        shift 2
        lab_profiles 4 4 4 "$mode"
        for w in ${WEIGHTS:-}; do
                it_set_path_key a "p$i" Weight "$w"
                i=$((i + 1))
        done
        for side in a b; do
                for kv in "$@"; do export "${kv?}"; done
                lab_start "$side" "" --workers "${WORKERS:-2}"
                for kv in "$@"; do unset "${kv%%=*}"; done
        done
        it_wait_ping a 10.77.0.2 10 || it_fail "$name: the tunnel does not answer ping"
        it_snap_both "$name-before"
}

# run_case NAME MODE_LINE [ENV=VALUE...]: start_case, a 2 s TCP transfer a -> b; sets A_RX0 A_RX1
# ... A_TX0 A_TX1 ... and B_... to the data packets each worker of each end received (RX) and
# sent (TX) during it.
run_case() {
        local name=$1
        start_case "$@"
        # shellcheck disable=SC2086 # RUN_IPERF: words of iperf3 options
        it_load_start 10.77.0.2 2 ${RUN_IPERF:-}
        it_load_wait
        worker_counts "$name"
        [ $((B_RX0 + B_RX1)) -gt 1000 ] || it_fail "$name: b received only $((B_RX0 + B_RX1)) data packets"
}

# pings NAME SIDE ADDRESS: 40 pings from SIDE to ADDRESS, 20 ms apart; none may be lost.
pings() {
        lab_exec "$2" ping -n -q -c 40 -i 0.02 -W 1 "$3" >"$LAB_DIR/$1-ping.txt" 2>&1 ||
                it_fail "$1: pings lost: $(tail -n 2 "$LAB_DIR/$1-ping.txt")"
}

# ping_case NAME MODE_LINE: start_case, then 40 pings a -> b 20 ms apart and nothing else; the
# same counts as run_case.
ping_case() {
        local name=$1
        IT_LOAD_MBIT=
        start_case "$@"
        pings "$name" a 10.77.0.2
        worker_counts "$name"
}

# oneway_case NAME MODE_LINE: start_case, then a UDP stream a -> b (300 Mbit/s, 2 s) and,
# within it, 40 pings b -> a 20 ms apart; the same counts as run_case.
oneway_case() {
        local name=$1
        start_case "$@"
        it_load_start 10.77.0.2 2 -u -b 300M -l 1200
        sleep 0.5
        pings "$name" b 10.77.0.1
        it_load_wait
        worker_counts "$name"
}

# oneway_ok NAME: after oneway_case, b's echo requests went out by worker 1 (after the first
# few, before a reply came in) and so did a's echo replies. (iperf3's first packets went out
# while the tunnel was quiet, by the receiving workers: the stream itself may go out by a's
# worker 0, since no packet of it is written to a's TUN device after its one answer, and b's
# worker 0 sends a few.)
oneway_ok() {
        [ "$B_TX1" -ge 37 ] && [ "$A_TX1" -ge 37 ] ||
                it_fail "$1: b sent $B_TX0/$B_TX1 packets by workers 0/1, a $A_TX0/$A_TX1; a tunnel that receives much is not quiet, so both should answer by worker 1"
}

# worker_counts NAME: the "after" snapshots, and per worker the data packets received and sent
# since "before", as A_RX0 ... B_TX1 ....
worker_counts() {
        local name=$1 side what="pings only"
        it_snap_both "$name-after"
        for side in a b; do
                python3 - "$LAB_DIR/snap-$side-$name-before.json" "$LAB_DIR/snap-$side-$name-after.json" \
                        >"$LAB_DIR/$name-$side.txt" <<'EOF'
import json, sys
a, b = (json.load(open(f))[0] for f in sys.argv[1:3])
for k in ("worker_rx", "worker_tx"):
    for w in sorted(b[k], key=int):
        print("%s%s=%d" % ("RX" if k == "worker_rx" else "TX", w, int(b[k][w]) - int(a[k][w])))
EOF
                eval "$(sed "s/^/${side^^}_/" "$LAB_DIR/$name-$side.txt")"
        done
        [ -z "$IT_LOAD_MBIT" ] || what="$IT_LOAD_MBIT Mbit/s"
        it_note "$name: $what; a: $(tr '\n' ' ' <"$LAB_DIR/$name-a.txt"); b: $(tr '\n' ' ' <"$LAB_DIR/$name-b.txt")"
}

# quiet_ok NAME: after ping_case, worker 0 of each end sent nearly everything (a's requests after
# the first, b's replies) and worker 1 at most the first requests, before a's worker 0 had
# written a reply.
quiet_ok() {
        [ "$A_TX0" -ge 37 ] && [ "$A_TX1" -le 3 ] && [ "$B_TX0" -ge 39 ] && [ "$B_TX1" = 0 ] ||
                it_fail "$1: a quiet tunnel's pings were sent by a's workers 0/1: $A_TX0/$A_TX1, replies by b's: $B_TX0/$B_TX1; worker 0, which receives them, should send them"
}

# paths_of_workers NAME SIDE "0 2" "1 3" [...]: the data packets each worker of SIDE received
# during case NAME are exactly those of the paths listed for it (the i-th list for worker i; every
# other worker received none), from the per-path rx_packets and per-worker worker_rx counts.
# Paths carry different numbers of packets, so another mapping would give other sums; if two
# mappings give the same sums, the case cannot tell them apart and fails.
paths_of_workers() {
        python3 - "$LAB_DIR/snap-$2-$1-before.json" "$LAB_DIR/snap-$2-$1-after.json" "${@:3}" <<'EOF'
import itertools, json, sys
a, b = (json.load(open(f))[0] for f in sys.argv[1:3])
want = [[int(p) for p in l.split()] for l in sys.argv[3:]]
pa = {x["name"]: x["rx_packets"] for x in a["paths"]}
per_path = [x["rx_packets"] - pa[x["name"]] for x in b["paths"]]
per_worker = [int(b["worker_rx"][w]) - int(a["worker_rx"][w]) for w in sorted(b["worker_rx"], key=int)]
expect = [sum(per_path[p] for p in l) for l in want] + [0] * (len(per_worker) - len(want))
print("  paths received %s; workers received %s, expected %s" % (per_path, per_worker, expect), file=sys.stderr)
if per_worker != expect:
    sys.exit(1)
# Any other assignment of the paths to the same workers that gives the same sums?
for perm in itertools.permutations(range(len(per_path))):
    other = [sorted(perm[p] for p in l) for l in want]
    if other != [sorted(l) for l in want] and [sum(per_path[p] for p in l) for l in other] == expect[:len(want)]:
        print("  ambiguous: paths %s would give the same sums" % other, file=sys.stderr)
        sys.exit(1)
EOF
}

# Compat mode: one receiving worker (0), the others send.
run_case compat "Mode=compat"
[ "$B_RX1" = 0 ] && [ "$A_RX1" = 0 ] ||
        it_fail "compat: worker 1 received data (a: $A_RX1, b: $B_RX1); all paths should arrive at worker 0"
# Worker 0 may send a flow's first packets (the ping before, or a SYN): the kernel has no queue
# of the flow yet. Everything after goes through worker 1's queue.
[ $((A_TX0 * 100)) -le "$A_TX1" ] ||
        it_fail "compat: a's worker 0 sent $A_TX0 data packets, worker 1 $A_TX1; the flow should go out by worker 1"
[ $((B_TX0 * 100)) -le "$B_TX1" ] ||
        it_fail "compat: b's worker 0 sent $B_TX0 packets, worker 1 $B_TX1; the acknowledgements should go out by worker 1"
lab_ctl b show lab >"$LAB_DIR/show-b.txt"
grep -q '^  workers (data packets): 0 received [0-9]* sent [0-9]*, 1 received 0 sent [0-9]*$' "$LAB_DIR/show-b.txt" ||
        it_fail "compat: mptctl show has no per-worker line as expected: $(grep workers "$LAB_DIR/show-b.txt")"
stop_both

# A quiet tunnel: the receiving worker answers itself.
ping_case compat-quiet "Mode=compat"
quiet_ok compat-quiet
stop_both

# Both ends send much: every flow goes out by worker 1, at both ends.
RUN_IPERF=--bidir run_case compat-bidir "Mode=compat"
[ $((A_TX0 * 100)) -le "$A_TX1" ] && [ $((B_TX0 * 100)) -le "$B_TX1" ] ||
        it_fail "compat-bidir: a's workers 0/1 sent $A_TX0/$A_TX1 packets, b's $B_TX0/$B_TX1; with data both ways the flows should go out by worker 1"
stop_both

# One end receives much and sends little: not quiet, so its answers still go out by worker 1.
oneway_case compat-oneway "Mode=compat"
oneway_ok compat-oneway
stop_both

# Compat mode, spread for comparison: paths 0 and 2 to worker 0, 1 and 3 to worker 1.
WEIGHTS="1 2 4 8" run_case compat-spread "Mode=compat" MPT_DEBUG_RX_SPREAD=1
paths_of_workers compat-spread b "0 2" "1 3" ||
        it_fail "compat-spread: b's workers 0 and 1 did not receive exactly paths 0 and 2, and 1 and 3 (see above)"
stop_both

# Secure mode, 2 workers: half of them (one) receive, as in compat mode.
lab_key_init
run_case secure "Key=$LAB_KEY"
[ "$B_RX1" = 0 ] && [ "$A_RX1" = 0 ] ||
        it_fail "secure: worker 1 received data (a: $A_RX1, b: $B_RX1); with 2 workers all paths should arrive at worker 0"
[ $((A_TX0 * 100)) -le "$A_TX1" ] ||
        it_fail "secure: a's worker 0 sent $A_TX0 data packets, worker 1 $A_TX1; the flow should go out by worker 1"
[ $((B_TX0 * 100)) -le "$B_TX1" ] ||
        it_fail "secure: b's worker 0 sent $B_TX0 packets, worker 1 $B_TX1; the acknowledgements should go out by worker 1"
stop_both
ping_case secure-quiet "Key=$LAB_KEY"
quiet_ok secure-quiet
stop_both
oneway_case secure-oneway "Key=$LAB_KEY"
oneway_ok secure-oneway
stop_both

# Secure mode, 4 workers: two receive (decrypting in parallel), two send.
WORKERS=4 WEIGHTS="1 2 4 8" run_case secure-4 "Key=$LAB_KEY"
paths_of_workers secure-4 b "0 2" "1 3" ||
        it_fail "secure-4: b's workers did not receive exactly paths 0 and 2 (worker 0), 1 and 3 (worker 1), nothing (2, 3); see above"
[ $(((A_TX0 + A_TX1) * 100)) -le $((A_TX2 + A_TX3)) ] ||
        it_fail "secure-4: a's workers 0 and 1 sent $((A_TX0 + A_TX1)) data packets, 2 and 3 $((A_TX2 + A_TX3)); the flow should go out by 2 or 3"
stop_both

# One worker: nothing to steer, and no per-worker line.
lab_profiles 4 4 4 "Mode=compat"
lab_start a "" --workers 1
lab_ctl a show lab >"$LAB_DIR/show-a1.txt"
! grep -q 'workers (data packets)' "$LAB_DIR/show-a1.txt" || it_fail "a per-worker line with one worker"
lab_ctl a --json show lab | python3 -c '
import json, sys
t = json.load(sys.stdin)[0]
assert set(t["worker_rx"]) == {"0"} and set(t["worker_tx"]) == {"0"}, t' || it_fail "JSON per-worker counts with one worker"
it_finish rx-workers
