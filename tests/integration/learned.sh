#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Scheduler=learned (the default in secure mode) over emulated, unequal paths: each path runs
# through a router namespace whose mpt-pathemu has the bottleneck, where the sender cannot see
# its queue (lab_emu_topology).
#
# Asserts:
#   1. 100 Mbit/s 5 ms + 20 Mbit/s 40 ms, a TCP load a -> b for 8 s: over its last 5 s the 20
#      Mbit/s path carries 6..30 % of a's bytes (its capacity share is 16.7 %); a's learned rates
#      are 0.35..2.5 times the paths' rates (a snapshot: TCP's rate swings, and a saturated path
#      is credited with 7/8 of what it delivered in its last span); every path of a has learned_rate_bps, delivered_bps,
#      share_permille, one_way_delay_us and queue_delay_us in `mptctl --json show`, and the
#      plain output a "learned:" line per path; the shares add up to 1000 (+-2); b equalises the
#      delays: p0's packets wait 25..45 ms (reorder_extra_us), p1's nothing; feedback frames
#      went both ways.
#   2. The 100 Mbit/s path drops to 10 Mbit/s under the load: within 3 s a's learned rate of it
#      is below 25 Mbit/s.
#   3. Weight=4 on the 20 Mbit/s path and 1 on the other (a preference): UDP at 8 Mbit/s goes at
#      least 65 % over the preferred path (4/5 by preference, none of it capped), with at most
#      1 % lost; UDP at 40 Mbit/s fills the preferred path up to 7/8 of what it is credited with
#      (a's tx on it 11..22 Mbit/s) and spills the rest, with at most 2 % lost and without holding
#      datagrams back (iperf3's 5 s take at most 6.5).
#   4. Compat mode (no feedback): a's scheduler is "weighted", no learned fields; plain
#      feedback frames at b's port are dropped as bad-feedback, exactly as many as were sent.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

: "${MPT_INJECT:=}"
lab_init
it_require iperf3 python3 ethtool
[ -x "$MPT_INJECT" ] || it_fail "mpt-inject not found (set MPT_INJECT=)"
lab_log "learned: the learned scheduler over emulated unequal paths"
lab_emu_topology 4 'rate=100mbit,delay=5ms' 'rate=20mbit,delay=40ms'
b_tun=$(lab_tunnel_addr b 4)

# share_of SIDE FROM TO PATH: PATH's part of the tx_bytes growth between two snapshots.
share_of() {
        python3 - "$LAB_DIR/snap-$1-$2.json" "$LAB_DIR/snap-$1-$3.json" "$4" <<'EOF'
import json, sys
a, b = (json.load(open(f))[0] for f in sys.argv[1:3])
d = {x["name"]: x["tx_bytes"] for x in b["paths"]}
for x in a["paths"]:
    d[x["name"]] -= x["tx_bytes"]
print("%.3f" % (d[sys.argv[3]] / max(sum(d.values()), 1)))
EOF
}
# mbit_of SIDE FROM TO PATH SECONDS: PATH's tx rate between two snapshots, Mbit/s.
mbit_of() {
        local d
        d=$(it_delta "$1" "$2" "$3" tx_bytes "$4")
        python3 -c "print('%.1f' % ($d * 8 / $5 / 1e6))"
}
in_range() { # VALUE LOW HIGH
        python3 -c "import sys; sys.exit(0 if $2 <= $1 <= $3 else 1)"
}

# ---- 1. the split follows the paths' rates ----
lab_profiles 2 4 4
it_start_pinging "$b_tun"
it_load_start "$b_tun" 8
sleep 3
it_snap a l0
sleep 4.5
it_snap a l1
# While the load still runs: what a learned and what b waits.
json=$(lab_ctl a --json show lab)
text=$(lab_ctl a show lab)
extra0=$(lab_json b 'p["p0"]["reorder_extra_us"]')
extra1=$(lab_json b 'p["p1"]["reorder_extra_us"]')
it_load_wait
s1=$(share_of a l0 l1 p1)
it_note "TCP: $IT_LOAD_MBIT Mbit/s; share of the 20 Mbit/s path $s1 (capacity share 0.167)"
in_range "$s1" 0.06 0.30 || it_soft_fail "the 20 Mbit/s path carried $s1 of the bytes, expected 0.06..0.30"
python3 - "$json" <<'EOF' || it_soft_fail "a's learned fields are wrong (see above)"
import json, sys
t = json.loads(sys.argv[1])[0]
ok = True
rates = {"p0": 100e6, "p1": 20e6}
total = 0
for p in t["paths"]:
    for k in ("learned_rate_bps", "delivered_bps", "share_permille", "one_way_delay_us", "queue_delay_us"):
        if not isinstance(p.get(k), int):
            print("    path %s: no integer %s" % (p["name"], k), file=sys.stderr)
            ok = False
    r = p.get("learned_rate_bps", 0) / rates[p["name"]]
    print("    %s: learned %.1f Mbit/s (%.2f of its rate), share %s/1000, one-way delay %s us"
          % (p["name"], p.get("learned_rate_bps", 0) / 1e6, r, p.get("share_permille"), p.get("one_way_delay_us")),
          file=sys.stderr)
    if not 0.35 <= r <= 2.5:
        ok = False
    total += p.get("share_permille", 0)
if abs(total - 1000) > 2:
    print("    shares add up to %d" % total, file=sys.stderr)
    ok = False
if not (t.get("feedback_rx", 0) > 0 and t.get("feedback_tx", 0) > 0):
    print("    feedback frames: %s received, %s sent" % (t.get("feedback_rx"), t.get("feedback_tx")), file=sys.stderr)
    ok = False
sys.exit(0 if ok else 1)
EOF
[ "$(grep -c '^    learned: rate ' <<<"$text")" = 2 ] ||
        it_soft_fail "mptctl show at a: expected a 'learned:' line per path, got: $(grep learned <<<"$text")"
it_note "b equalises: p0 waits $extra0 us, p1 $extra1 us"
in_range "$extra0" 25000 45000 || it_soft_fail "b: p0's packets wait $extra0 us, expected 25..45 ms (the paths' one-way spread)"
[ "$extra1" = 0 ] || it_soft_fail "b: p1 (the slowest) waits $extra1 us, expected 0"

# ---- 2. a capacity drop is learned ----
it_load_start "$b_tun" 6
sleep 2
lab_emu_respec 0 'rate=10mbit,delay=5ms'
start=$(it_now)
learned=
while it_lt "$(it_elapsed "$start")" 3; do
        learned=$(lab_json a 'p["p0"]["learned_rate_bps"]')
        [ "$learned" -lt 25000000 ] && break
        sleep 0.1
done
after=$(it_elapsed "$start")
it_load_wait
it_note "p0 down to 10 Mbit/s: learned $((learned / 1000000)) Mbit/s after $after s"
[ "$learned" -lt 25000000 ] || it_soft_fail "p0 dropped to 10 Mbit/s: a still credits it with $learned bit/s after 3 s"
lab_emu_respec 0 'rate=100mbit,delay=5ms'
lab_stop a
lab_stop b

# ---- 3. Weight= is a preference ----
lab_profiles 2 4 4
it_set_path_key a p0 Weight 1
it_set_path_key a p1 Weight 4
it_start_pinging "$b_tun"
sleep 1
it_snap a u0
read -r lost sent _ <<<"$(it_iperf_udp "$b_tun" 4 8M)"
it_snap a u1
s1=$(share_of a u0 u1 p1)
it_note "UDP 8 Mbit/s: preferred (20 Mbit/s) path's share $s1; $lost of $sent lost"
in_range "$s1" 0.65 1 || it_soft_fail "UDP 8 Mbit/s: the preferred path carried $s1, expected at least 0.65"
[ $((lost * 100)) -le "$sent" ] || it_soft_fail "UDP 8 Mbit/s: $lost of $sent datagrams lost"
it_snap a u2
t0=$(it_now)
read -r lost sent _ <<<"$(it_iperf_udp "$b_tun" 5 40M)"
took=$(it_elapsed "$t0")
it_snap a u3
# (it_iperf_udp waits 0.3 s for the server before the client's 5 s.)
secs=$(python3 -c "print('%.2f' % ($took - 0.3))")
m1=$(mbit_of a u2 u3 p1 "$secs")
it_note "UDP 40 Mbit/s: preferred path carried $m1 Mbit/s, the other $(mbit_of a u2 u3 p0 "$secs"); $lost of $sent lost; the client took $secs s"
in_range "$m1" 11 22 || it_soft_fail "UDP 40 Mbit/s: the preferred 20 Mbit/s path carried $m1 Mbit/s, expected 11..22"
# A tunnel that sends less than is offered holds the rest back at a (in the socket and the TUN
# device's queue), and the client's 5 s stretch while that drains.
in_range "$secs" 4.5 6.5 || it_soft_fail "UDP 40 Mbit/s: the client's 5 s took $secs s: a held the datagrams back"
[ $((lost * 50)) -le "$sent" ] || it_soft_fail "UDP 40 Mbit/s: $lost of $sent datagrams lost"
lab_stop a
lab_stop b

# ---- 4. compat mode has no feedback ----
MPT_LAB_MODE=compat lab_profiles 2 4 4
it_start_pinging "$b_tun"
sched=$(lab_json a 't["scheduler"]')
[ "$sched" = weighted ] || it_soft_fail "compat mode: a's scheduler is '$sched', expected 'weighted'"
has=$(lab_json a '"learned_rate_bps" in p["p0"] or "split" in t')
[ "$has" = False ] || it_soft_fail "compat mode: a shows learned fields"
it_inject_plain feedback bad-feedback "feedback frames"
it_ping a "$b_tun" 3

it_finish "learned"
