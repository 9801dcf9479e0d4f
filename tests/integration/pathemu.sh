#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# pathemu.sh: the lab's path emulator (tests/lab/mpt-pathemu) does what its spec says, on one
# plain path a <-> r0 <-> b without a tunnel (lab_emu_topology):
#
#   - bad specs: exit status 2 and the message for each kind (unknown key, missing unit,
#     negative delay, loss above 100 %, rate 0, jitter above the delay, bad trace lines with
#     FILE:LINE, ...); an interface that does not exist: exit status 1;
#   - rate=50mbit,delay=10ms: idle ping RTT (the median of 20) is 2 x 10 ms (+ serialisation)
#     within 5 %, and never less; TCP goodput (iperf3, 5 s after 1 s of warm-up) is 50 Mbit/s x 1448/1514
#     (TCP payload per Ethernet frame) within 5 %; a UDP load at twice the rate fills the
#     emulator's queue up to its limit and no further (tail drop), while the sending socket's
#     unsent bytes (what SIOCOUTQ reads, ss's skmem t) stay near 0: the queue is in the router;
#   - loss=10%: 40000 UDP datagrams each way; the emulator's counters match what the receivers
#     saw exactly (received = forwarded, sent - received = lost; up to two frames of the hosts'
#     own each way, a late TCP segment of an earlier part, must be accounted for as forwarded
#     or lost) and the loss rate is 10 %
#     within 3 standard deviations (3.2 % of it, so within the 5 % asked for);
#   - loss=5%,burst=4 (Gilbert): the same exact match, loss runs the receivers saw = the
#     emulator's loss_bursts; mean loss and mean burst length within 3 standard deviations
#     (bursty loss varies more: 12 % and 8 %);
#   - a trace (10 ms, then 40 ms, then 100 % loss, then a stalled link, then 10 ms again): ping
#     RTTs follow each phase within 5 % (and never below), pings sent while the link is stalled
#     come back when it runs again, none while it loses everything; the stats file shows the
#     last phase;
#   - delay=10ms,ba:delay=30ms: RTT 40 ms (per-direction settings).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require iperf3 python3 ping ethtool ss
lab_find_pathemu
lab_log "pathemu: rate, delay, loss and traces of the lab's path emulator on a plain path"

# ---- bad specs ----
bad() { # SPEC EXPECTED-PART-OF-MESSAGE
        local out rc=0
        out=$("$MPT_PATHEMU" --check "$1" 2>&1 >/dev/null) || rc=$?
        if [ "$rc" != 2 ]; then
                it_soft_fail "spec '$1': expected exit status 2, got $rc ($out)"
        elif [[ "$out" != *"$2"* ]]; then
                it_soft_fail "spec '$1': expected a message with \"$2\", got \"$out\""
        fi
}
bad 'los=1%' "unknown key 'los' in 'los=1%' (did you mean 'loss'?)"
bad 'rate=100' "rate '100' needs a unit"
bad 'rate=100mbits' "unknown unit 'mbits'"
bad 'rate=0' "a path's rate must be above 0"
bad 'delay=-5ms' "delay '-5ms' must not be negative"
bad 'loss=150%' "loss '150%' must be from 0% to 100%"
bad 'loss=0.5' "not a percentage"
bad 'rate=10mbit,delay=5ms,jitter=8ms' "jitter 8ms is larger than delay 5ms"
bad 'rate=1mbit,limit=100' "holds not even one frame"
bad 'burst=3' "burst= needs loss="
bad 'ab:seed=1' "the seed applies to both directions"
bad 'trace=1s 5mbit 5ms' "trace phase 1 ('1s 5mbit 5ms'): the first phase must start at 0s"
printf '0s 50mbit 20ms\n# the drop\n10s 5mbit 20qs\n' > "$LAB_DIR/bad.trace"
bad "trace-file=$LAB_DIR/bad.trace" "$LAB_DIR/bad.trace:3: delay '20qs': unknown unit 'qs'"
printf '0s 50mbit 20ms\n5s 1mbit\n' > "$LAB_DIR/bad2.trace"
bad "trace-file=$LAB_DIR/bad2.trace" "$LAB_DIR/bad2.trace:2: expected TIME RATE DELAY"
rc=0
out=$("$MPT_PATHEMU" nosuchdev0 nosuchdev1 'rate=1mbit' 2>&1) || rc=$?
[ "$rc" = 1 ] && [[ "$out" == *"interface 'nosuchdev0'"* ]] ||
        it_soft_fail "missing interface: expected exit status 1 and a message, got $rc ($out)"
it_note "bad specs: exit status 2 with their messages"

# ---- rate and delay ----
lab_emu_topology 4 'rate=50mbit,delay=10ms,seed=1'
B=$(lab_path_addr b 0 4)
A=$(lab_path_addr a 0 4)

# ping_rtt COUNT INTERVAL: "MIN MEDIAN MAX" RTT of idle pings a -> b, in ms. The median: on a
# shared machine one ping in a few dozen waits for a CPU for a while.
ping_rtt() {
        lab_exec a ping -n -c "$1" -i "$2" -W 2 "$B" |
                sed -n 's/.* time=\([0-9.]*\) ms$/\1/p' | sort -n |
                awk '{ v[NR] = $1 } END { if (NR) print v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR] }'
}
# within VALUE EXPECTED FRACTION: |VALUE - EXPECTED| <= FRACTION x EXPECTED
within() {
        awk -v v="$1" -v e="$2" -v f="$3" 'BEGIN { d = v - e; if (d < 0) d = -d; exit !(d <= f * e) }'
}

# 98-byte echo frames (84 + Ethernet) at 50 Mbit/s: 15.7 us of serialisation each way.
read -r rmin rmed rmax < <(ping_rtt 20 0.05)
expect=$(awk 'BEGIN { printf "%.3f", 2 * (10 + 98 * 8 / 50e6 * 1000) }')
it_note "delay: ping RTT min/median/max $rmin/$rmed/$rmax ms, expected $expect ms"
within "$rmed" "$expect" 0.05 || it_soft_fail "ping RTT $rmed ms is not within 5 % of $expect ms"
it_lt "$rmin" 20 && it_soft_fail "a ping came back in $rmin ms, before 2 x 10 ms"

got=$(lab_iperf_tcp "$B" 5 -O 1)
expect=$(awk 'BEGIN { printf "%.2f", 50 * 1448 / 1514 }')
it_note "rate: TCP goodput $got Mbit/s, expected $expect (50 Mbit/s of 1514-byte frames with 1448 bytes of payload)"
within "$got" "$expect" 0.05 || it_soft_fail "TCP goodput $got Mbit/s is not within 5 % of $expect Mbit/s"

# UDP at twice the rate for 3 s: the queue fills to its limit (50 ms of 50 Mbit/s) and drops
# the rest; a's socket meanwhile holds next to nothing.
lab_emu_stats 0 > "$LAB_DIR/udp-before"
port=$((20000 + RANDOM % 20000))
ip netns exec "$(lab_ns b)" iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
spid=$!
LAB_PIDS+=("$spid")
lab_wait_listen b tcp "$port" || it_fail "iperf3 server did not start"
ip netns exec "$(lab_ns a)" iperf3 -c "$B" -p "$port" -u -b 100M -l 1400 -t 3 -J >"$LAB_DIR/udp.json" 2>&1 &
cpid=$!
LAB_PIDS+=("$cpid")
sleep 1
wmem_max=0 samples=0
for _ in $(seq 10); do
        w=$(lab_exec a ss -Huamn dst "$B" | sed -n 's/.*skmem:(r[0-9]*,rb[0-9]*,t\([0-9]*\),.*/\1/p' | sort -n | tail -n 1)
        if [ -n "$w" ]; then
                samples=$((samples + 1))
                [ "$w" -gt "$wmem_max" ] && wmem_max=$w
        fi
        sleep 0.1
done
wait "$cpid" || it_fail "iperf3 -u failed: $(tail -c 300 "$LAB_DIR/udp.json")"
wait "$spid" 2>/dev/null || true
lab_emu_stats 0 > "$LAB_DIR/udp-after"
qmax=$(lab_emu_value "$LAB_DIR/udp-after" ab_queue_max_bytes)
qdrops=$(lab_emu_delta "$LAB_DIR/udp-before" "$LAB_DIR/udp-after" ab_queue_drops)
it_note "queue: UDP at 100 Mbit/s: largest queue $qmax bytes (limit 312500), $qdrops tail drops; a's socket held at most $wmem_max bytes ($samples samples)"
[ "$qmax" -le 312500 ] && [ "$qmax" -ge 300000 ] || it_soft_fail "largest queue $qmax bytes, expected just under 312500"
[ "$qdrops" -gt 1000 ] || it_soft_fail "only $qdrops tail drops at twice the rate"
[ "$samples" -ge 5 ] || it_soft_fail "found iperf3's UDP socket in only $samples of 10 samples"
[ "$wmem_max" -lt 65536 ] || it_soft_fail "the sending socket held $wmem_max bytes: the queue is not (only) in the router"
for k in oversize_drops overflow_drops kernel_drops tx_errors; do
        v=$(lab_emu_value "$LAB_DIR/udp-after" "ab_$k")
        [ "$v" = 0 ] || it_soft_fail "ab_$k is $v, expected 0"
done

# ---- loss ----
cat > "$LAB_DIR/udpcount.py" <<'EOF'
# udpcount.py send|recv ADDR PORT COUNT [PPS]: COUNT numbered datagrams; the receiver prints
# "RECEIVED RUNS" (RUNS: runs of consecutive missing numbers) when 1.5 s pass without one.
import socket, struct, sys, time
mode, addr, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
if mode == "send":
    pps = int(sys.argv[5])
    pad = b"x" * 92
    start = time.monotonic()
    for i in range(n):
        if i % 50 == 0:
            ahead = start + i / pps - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
        s.sendto(struct.pack("!I", i) + pad, (addr, port))
    print(n)
else:
    s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 8 << 20)
    s.bind((addr, port))
    s.settimeout(10)
    seen = set()
    try:
        while True:
            seen.add(struct.unpack("!I", s.recv(2048)[:4])[0])
            s.settimeout(1.5)
    except socket.timeout:
        pass
    runs = sum(1 for i in range(n) if i not in seen and (i == 0 or i - 1 in seen))
    print(len(seen), runs)
EOF

# loss_run SPEC: COUNT datagrams each way at once (a -> b and b -> a, 20000/s); checks the
# counters against the receivers; sets LOSS_LOST, LOSS_SENT, LOSS_RUNS (both directions).
COUNT=40000
loss_run() {
        local spec=$1 port=$((20000 + RANDOM % 20000)) rpid_b rpid_a spid_a spid_b dir side got runs
        local rx fwd lost bursts
        lab_emu_respec 0 "$spec"
        # What an earlier part left in flight (a closing TCP connection of iperf3's) passes first.
        sleep 1
        lab_emu_stats 0 > "$LAB_DIR/loss-before"
        ip netns exec "$(lab_ns b)" python3 "$LAB_DIR/udpcount.py" recv "$B" "$port" "$COUNT" > "$LAB_DIR/recv-b" &
        rpid_b=$!
        ip netns exec "$(lab_ns a)" python3 "$LAB_DIR/udpcount.py" recv "$A" "$port" "$COUNT" > "$LAB_DIR/recv-a" &
        rpid_a=$!
        LAB_PIDS+=("$rpid_b" "$rpid_a")
        lab_wait_listen b udp "$port" && lab_wait_listen a udp "$port" || it_fail "UDP receivers did not start"
        ip netns exec "$(lab_ns a)" python3 "$LAB_DIR/udpcount.py" send "$B" "$port" "$COUNT" 20000 >/dev/null &
        spid_a=$!
        ip netns exec "$(lab_ns b)" python3 "$LAB_DIR/udpcount.py" send "$A" "$port" "$COUNT" 20000 >/dev/null &
        spid_b=$!
        LAB_PIDS+=("$spid_a" "$spid_b")
        wait "$spid_a" "$spid_b" "$rpid_b" "$rpid_a" || it_fail "a UDP sender or receiver failed"
        lab_emu_stats 0 > "$LAB_DIR/loss-after"
        LOSS_SENT=0 LOSS_LOST=0 LOSS_RUNS=0
        # a -> b is what b received, b -> a what a received
        for dir in ab ba; do
                side=b
                [ "$dir" = ba ] && side=a
                read -r got runs < "$LAB_DIR/recv-$side"
                rx=$(lab_emu_delta "$LAB_DIR/loss-before" "$LAB_DIR/loss-after" "${dir}_rx_packets")
                fwd=$(lab_emu_delta "$LAB_DIR/loss-before" "$LAB_DIR/loss-after" "${dir}_forwarded_packets")
                lost=$(lab_emu_delta "$LAB_DIR/loss-before" "$LAB_DIR/loss-after" "${dir}_loss_drops")
                bursts=$(lab_emu_delta "$LAB_DIR/loss-before" "$LAB_DIR/loss-after" "${dir}_loss_bursts")
                # The emulator sees every frame on the path: besides the test's datagrams at most
                # a stray one or two of the hosts' own (a late segment of an earlier part's TCP),
                # each either forwarded or lost, and a lost one may make a burst of its own.
                extra=$((rx - COUNT)) extra_fwd=$((fwd - got)) extra_lost=$((lost - (COUNT - got)))
                [ "$extra" -ge 0 ] && [ "$extra" -le 2 ] && [ "$extra_fwd" -ge 0 ] && [ "$extra_lost" -ge 0 ] &&
                        [ $((extra_fwd + extra_lost)) = "$extra" ] && [ "$bursts" -ge "$runs" ] &&
                        [ "$bursts" -le $((runs + extra_lost)) ] ||
                        it_soft_fail "$dir ($spec): sent $COUNT, $side received $got with $runs runs missing; the emulator counted rx $rx, forwarded $fwd, lost $lost in $bursts bursts"
                [ "$extra" = 0 ] || it_note "$dir: the emulator also carried $extra frame(s) of the hosts' own ($extra_fwd forwarded, $extra_lost lost)"
                LOSS_SENT=$((LOSS_SENT + COUNT))
                LOSS_LOST=$((LOSS_LOST + COUNT - got))
                LOSS_RUNS=$((LOSS_RUNS + runs))
        done
}

loss_run 'loss=10%,seed=7'
# Binomial: sd = sqrt(p (1 - p) / n) = 0.00106 for 80000 frames; 3 sd is 3.2 % of 10 %.
read -r rate tol < <(awk -v l="$LOSS_LOST" -v n="$LOSS_SENT" 'BEGIN { printf "%.5f %.5f\n", l / n, 3 * sqrt(0.1 * 0.9 / n) }')
it_note "random loss: $LOSS_LOST of $LOSS_SENT lost ($rate; 0.1 +- $tol allowed), counters match the receivers"
within "$rate" 0.1 "$(awk -v t="$tol" 'BEGIN { print t / 0.1 }')" || it_soft_fail "loss rate $rate is not 0.1 +- $tol"

loss_run 'loss=5%,burst=4,seed=3'
# Gilbert with p = 0.05 r / 0.95, r = 1/4: consecutive frames are correlated (1 - p - r =
# 0.737), which multiplies the variance of the mean by (1 + 0.737) / (1 - 0.737) = 6.6; a
# burst's length is geometric (sd 3.46 frames).
read -r rate tol mb mbtol < <(awk -v l="$LOSS_LOST" -v n="$LOSS_SENT" -v b="$LOSS_RUNS" 'BEGIN {
        r = 0.25; p = 0.05 * r / 0.95; f = (2 - p - r) / (p + r)
        printf "%.5f %.5f %.3f %.3f\n", l / n, 3 * sqrt(f * 0.05 * 0.95 / n), l / b, 3 * sqrt(1 - r) / r / sqrt(b) }')
it_note "bursty loss: $LOSS_LOST of $LOSS_SENT lost ($rate; 0.05 +- $tol allowed) in $LOSS_RUNS runs, mean $mb frames (4 +- $mbtol)"
within "$rate" 0.05 "$(awk -v t="$tol" 'BEGIN { print t / 0.05 }')" || it_soft_fail "bursty loss rate $rate is not 0.05 +- $tol"
within "$mb" 4 "$(awk -v t="$mbtol" 'BEGIN { print t / 4 }')" || it_soft_fail "mean loss burst $mb is not 4 +- $mbtol"

# ---- a trace ----
# 0-1.5 s: 10 ms; 1.5-3 s: 40 ms; 3-4 s: everything lost; 4-4.5 s: stalled (rate 0); then 10 ms.
lab_emu_respec 0 'trace=0s 20mbit 10ms; 1500ms 20mbit 40ms; 3s 20mbit 40ms loss=100%; 4s 0 10ms; 4500ms 20mbit 10ms'
t0=$EPOCHREALTIME
lab_emu_trace_restart 0
lab_exec a ping -n -D -c 110 -i 0.05 -W 1 "$B" > "$LAB_DIR/trace-ping" || true
lab_emu_stats 0 > "$LAB_DIR/trace-after"
phase=$(lab_emu_value "$LAB_DIR/trace-after" ab_phase)
[ "$phase" = 4 ] || it_soft_fail "the stats file shows phase $phase at the end of the trace, expected 4"
python3 - "$LAB_DIR/trace-ping" "$t0" <<'EOF' || it_soft_fail "the trace's phases did not show as they should (above)"
import re, statistics, sys
t0 = float(sys.argv[2])
replies = {}
for line in open(sys.argv[1]):
    m = re.match(r"\[([0-9.]+)\].*icmp_seq=(\d+) .*time=([0-9.]+) ms", line)
    if m:
        replies[int(m.group(2))] = (float(m.group(1)), float(m.group(3)) / 1000)
# Send times (from t0): an answered ping's is its reply's time less its RTT; an unanswered one's
# lies between its answered neighbours' (ping's interval is not exactly 50 ms).
known = sorted(replies)
def sent(seq):
    if seq in replies:
        return replies[seq][0] - replies[seq][1] - t0
    lo = max((k for k in known if k < seq), default=None)
    hi = min((k for k in known if k > seq), default=None)
    if lo is None or hi is None:
        k = lo if hi is None else hi
        return sent(k) + (seq - k) * 0.05
    return sent(lo) + (sent(hi) - sent(lo)) * (seq - lo) / (hi - lo)
ser = 2 * 98 * 8 / 20e6
ok = True
def check(what, cond):
    global ok
    print("    %-70s %s" % (what, "ok" if cond else "FAILED"), file=sys.stderr)
    ok = ok and cond
for lo, hi, delay in ((0.1, 1.4, 0.010), (1.6, 2.9, 0.040), (4.6, 5.4, 0.010)):
    seqs = [s for s in range(1, 111) if lo <= sent(s) <= hi]
    rtts = [replies[s][1] for s in seqs if s in replies]
    want = 2 * delay + ser
    med = statistics.median(rtts) if rtts else 0
    check("sent %.1f-%.1f s: %d of %d answered, RTT min/median/max %.2f/%.2f/%.2f ms (%.2f +- 5 %%)" % (
          lo, hi, len(rtts), len(seqs), min(rtts, default=0) * 1e3, med * 1e3, max(rtts, default=0) * 1e3,
          want * 1e3),
          len(rtts) == len(seqs) > 5 and abs(med - want) <= 0.05 * want and min(rtts) >= 2 * delay)
lost = [s for s in range(1, 111) if 3.1 <= sent(s) <= 3.9]
check("sent 3.1-3.9 s (100 %% loss): %d of %d answered" % (sum(s in replies for s in lost), len(lost)),
      len(lost) > 5 and not any(s in replies for s in lost))
stalled = [s for s in range(1, 111) if 4.05 <= sent(s) <= 4.45]
back = [replies[s][0] - t0 for s in stalled if s in replies]
check("sent 4.05-4.45 s (stalled until 4.5 s): %d of %d answered, at %.3f-%.3f s" % (
      len(back), len(stalled), min(back, default=0), max(back, default=0)),
      len(back) == len(stalled) > 3 and all(4.45 <= b <= 4.65 for b in back))
sys.exit(0 if ok else 1)
EOF

# ---- a direction of its own ----
lab_emu_respec 0 'delay=10ms,ba:delay=30ms'
read -r rmin rmed rmax < <(ping_rtt 10 0.05)
it_note "per direction: a->b 10 ms, b->a 30 ms: ping RTT median $rmed ms"
within "$rmed" 40 0.05 || it_soft_fail "ping RTT $rmed ms is not within 5 % of 40 ms"

it_finish pathemu
