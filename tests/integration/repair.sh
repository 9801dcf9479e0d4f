#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Loss repair (secure mode with reordering; mptd(8), LOSS REPAIR) over emulated paths: p0 50
# Mbit/s 10 ms, p1 30 Mbit/s 25 ms with 2 % random loss (lab_emu_topology). UDP a -> b at 20
# Mbit/s for 5 s.
#
# Asserts:
#   1. With repair (the default): iperf3 finds at most 0.15 % of the datagrams missing (a third
#      of what the lossy path's share of 2 % would lose); b asked for datagrams, a was asked
#      for exactly as many as b asked for and sent at least 90 % of them again, the rest counted
#      as no longer kept (sent + missed = requested); b refused none of them (no replayed, no
#      bad-repair drops), and `mptctl show` has a "loss repair:" line.
#   2. Without (MPT_DEBUG_REPAIR=0 at both ends): at least 0.3 % missing, nothing asked or sent
#      again: the check of 1. would catch repair that does nothing.
#   3. Compat mode: a plain repair request at b's port is dropped as bad-repair, exactly as many
#      as were sent, and the tunnel shows no repair counters.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

: "${MPT_INJECT:=}"
lab_init
it_require iperf3 python3
[ -x "$MPT_INJECT" ] || it_fail "mpt-inject not found (set MPT_INJECT=)"
lab_log "repair: loss repair over a lossy emulated path"
lab_emu_topology 4 'rate=50mbit,delay=10ms' 'rate=30mbit,delay=25ms,loss=2%'
b_tun=$(lab_tunnel_addr b 4)

# repair SIDE: "asked requested sent missed" of the tunnel's repair counters.
repair() {
        lab_json "$1" '" ".join(str(t["repair"][k]) for k in ("asked", "requested", "sent", "missed"))'
}
# udp_run LABEL: UDP a -> b; sets LOST SENT (and the loss in per mille, PERMILLE).
udp_run() {
        local out
        # iperf3 once (of about 20 runs) ended without a result here (no sum_received): once more.
        out=$(it_iperf_udp "$b_tun" 5 20M) || {
                it_note "$1: iperf3 gave no result; once more"
                out=$(it_iperf_udp "$b_tun" 5 20M)
        }
        read -r LOST SENT _ <<<"$out"
        PERMILLE=$(python3 -c "print('%.2f' % ($LOST * 1000 / max($SENT, 1)))")
        it_note "$1: $LOST of $SENT datagrams missing ($PERMILLE per mille)"
}

# ---- 1. with repair ----
lab_profiles 2 4 4
it_start_pinging "$b_tun"
udp_run "repair"
sleep 0.5 # what is still on its way
read -r b_asked _ _ _ <<<"$(repair b)"
read -r _ a_req a_sent a_missed <<<"$(repair a)"
it_note "b asked for $b_asked; a was asked for $a_req, sent $a_sent again, $a_missed no longer kept"
python3 -c "import sys; sys.exit(0 if $LOST * 1000 <= 1.5 * $SENT else 1)" ||
        it_soft_fail "with repair, $PERMILLE per mille of the datagrams were missing, expected at most 1.5"
[ "$b_asked" -gt 0 ] || it_soft_fail "b asked for nothing (2 % of p1 was lost)"
[ "$a_req" = "$b_asked" ] || it_soft_fail "a was asked for $a_req datagrams, b asked for $b_asked"
[ $((a_sent + a_missed)) = "$a_req" ] || it_soft_fail "a: sent $a_sent + missed $a_missed != requested $a_req"
[ $((a_sent * 10)) -ge $((a_req * 9)) ] || it_soft_fail "a sent only $a_sent of the $a_req datagrams asked for again"
for r in replayed bad-repair; do
        n=$(lab_json b "sum(x['drops']['$r'] for x in t['paths'])")
        [ "$n" = 0 ] || it_soft_fail "b dropped $n datagrams as $r"
done
lab_ctl a show lab | grep "loss repair:" >/dev/null || it_soft_fail "mptctl show at a has no 'loss repair:' line"
lab_stop a
lab_stop b

# ---- 2. without ----
MPT_DEBUG_REPAIR=0 lab_start a
MPT_DEBUG_REPAIR=0 lab_start b
it_wait_ping a "$b_tun" 10 || it_fail "no ping through the tunnel (no repair)"
udp_run "no repair"
python3 -c "import sys; sys.exit(0 if $LOST * 1000 >= 3 * $SENT else 1)" ||
        it_soft_fail "without repair only $PERMILLE per mille were missing, expected at least 3: the path is not lossy enough for part 1 to mean anything"
has=$(lab_json a '"repair" in t')
[ "$has" = False ] || it_soft_fail "MPT_DEBUG_REPAIR=0: a shows repair counters"
lab_stop a
lab_stop b

# ---- 3. compat mode: no repair ----
MPT_LAB_MODE=compat lab_profiles 2 4 4
it_start_pinging "$b_tun"
has=$(lab_json a '"repair" in t')
[ "$has" = False ] || it_soft_fail "compat mode: a shows repair counters"
it_inject_plain repair bad-repair "repair requests"

it_finish "repair"
