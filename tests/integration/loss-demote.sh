#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A lossy path is demoted to a backup path and promoted again: 3 paths of 50 Mbit/s,
# KeepaliveInterval=100ms, DeadTime=1s, LossThreshold=10% at a (b has none). An nftables rule in
# namespace b drops 40 % of p1's datagrams arriving on pb1 (`numgen random mod 100 < 40`), so a's
# keepalives on p1 are lost at 40 % (loss_tx at a); a UDP load of 30 Mbit/s runs a -> b.
# DeadTime=1s rather than 300ms: with 40 % loss, three keepalives in a row are lost every few
# seconds, and the path would flap between dead and up instead of staying a (demoted) path.
#
# Asserts:
#   - within 6 s of the rule, a reports p1 "demoted": true and "backup": true, and loss_tx or
#     loss_rx above 0.1 (within 2 s more: the estimate is noisy; values and times are printed);
#     p1 stays "up" (a demoted path is a backup path, not a dead one) and b does not demote p1
#     (no LossThreshold= there);
#   - while demoted and the other paths are up, p1 carries no new data: over 1 s of load its
#     tx_bytes at a do not grow, while p0's and p2's do;
#   - after the rule is removed, p1 is no longer demoted (nor backup) within 8 s (the loss has
#     to decay below half the threshold, about 40 keepalives), and then carries data again.
# "Carries data" is at least a third of an equal share of the 30 Mbit/s (3.75 MB/s) over 1 s:
# 625 kB each of p0 and p2 while p1 is demoted, 417 kB of p1 once it is back.
# Scheduler=weighted: the paths are unshaped, so their common bottleneck is the hosts' CPUs,
# where the learned scheduler (the default) has no capacities to learn and its split wanders
# (issue 19's closing notes): under the sanitizers it once left the promoted p1 351 kB of the
# 1 s, below the third of an equal share this test asks for, where five other runs gave 528 kB
# to 1.2 MB; this test is about demotion, learned.sh about the learner (as families.sh and
# blackhole.sh).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require iperf3 python3 ss
lab_topology 3 50mbit 4
it_require_nft
lab_profiles 3 4 4 'Scheduler=weighted' 'KeepaliveInterval=100ms\nDeadTime=1s'
it_set_path_key a p1 LossThreshold 10%
it_start_both 3000
th=$(it_get a p1 loss_threshold_permille)
[ "$th" = 100 ] || it_fail "p1 at a: expected loss_threshold_permille 100 for LossThreshold=10%, got '$th'"
port=$(it_get b "" local_port)

it_load_start "$(lab_tunnel_addr b 4)" 30 -u -b 30M -l 1200
# before the loss: iperf3 sets its UDP stream up with single datagrams that must not be lost
it_wait_flow 300000 5000 p0 p1 p2

# wait_demoted SIDE WANT(yes|no) TIMEOUT_MS: polls p1's "demoted"; IT_SEEN_US is the time.
wait_demoted() {
        local t0=${EPOCHREALTIME/./}
        while :; do
                it_dump "$1"
                it_field_of "$IT_DUMP" p1 demoted || true
                [ "$IT_V" = "$2" ] && { IT_SEEN_US=$((IT_DUMP_T - t0)); return 0; }
                [ $((IT_DUMP_T - t0)) -lt $(($3 * 1000)) ] || return 1
                sleep 0.02
        done
}

loss_text() {
        printf 'loss_rx %s, loss_tx %s' "$(it_get a p1 loss_rx)" "$(it_get a p1 loss_tx)"
}

# ---- 40 % loss on p1, a -> b ----
lab_exec b nft -f - <<EOF
table inet mpt_loss {
        chain input {
                type filter hook input priority 0; policy accept;
                iifname "pb1" udp dport $port numgen random mod 100 < 40 drop
        }
}
EOF
wait_demoted a yes 6000 ||
        it_fail "p1 at a: expected \"demoted\": true within 6 s of 40 % loss (LossThreshold=10%), it is '$(it_get a p1 demoted)' with $(loss_text)"
it_note "p1 demoted at a $(it_ms "$IT_SEEN_US") ms after the loss started; $(loss_text)"
# The loss estimate is a decaying average of random drops: it crosses the threshold and then
# climbs towards 0.4, with noise. Poll (2 s at most) until a value above 0.1 shows.
end=$((${EPOCHREALTIME/./} + 2000000))
while :; do
        read -r lrx ltx <<<"$(it_get a p1 loss_rx) $(it_get a p1 loss_tx)"
        awk -v r="$lrx" -v t="$ltx" 'BEGIN { exit !(r > 0.1 || t > 0.1) }' && break
        [ "${EPOCHREALTIME/./}" -lt "$end" ] ||
                it_fail "p1 at a: expected loss_rx or loss_tx above 0.1 while demoted, got loss_rx $lrx, loss_tx $ltx for 2 s"
        sleep 0.05
done
it_note "p1 at a while demoted: loss_rx $lrx, loss_tx $ltx"
read -r bk st <<<"$(it_get a p1 backup) $(it_get a p1 state)"
[ "$bk" = yes ] || it_fail "p1 at a: expected \"backup\": true while demoted, got '$bk'"
[ "$st" = up ] || it_fail "p1 at a: expected state 'up' while demoted (a backup path), got '$st'"
d=$(it_get b p1 demoted)
[ "$d" = no ] || it_fail "p1 at b: expected not demoted (b has no LossThreshold=), got '$d'"

it_snap a m0
sleep 1
it_snap a m1
it_note "while p1 is demoted, tx_bytes at a over 1 s: $(it_deltas a m0 m1 tx_bytes p0 p1 p2)"
it_expect_delta a m0 m1 tx_bytes p1 -eq 0 "not to grow (no new data on a demoted path while others are up)"
for p in p0 p2; do
        it_expect_delta a m0 m1 tx_bytes "$p" -gt 625000 "to grow by more than 625 kB in 1 s while p1 is demoted"
done
d=$(it_get a p1 demoted)
[ "$d" = yes ] || it_fail "p1 at a: expected it to stay demoted while the loss goes on, got '$d' with $(loss_text)"

# ---- loss gone ----
lab_exec b nft delete table inet mpt_loss
wait_demoted a no 8000 ||
        it_fail "p1 at a: expected \"demoted\": false within 8 s of the loss ending, it is '$(it_get a p1 demoted)' with $(loss_text)"
it_note "p1 no longer demoted at a $(it_ms "$IT_SEEN_US") ms after the loss ended; $(loss_text)"
bk=$(it_get a p1 backup)
[ "$bk" = no ] || it_fail "p1 at a: expected \"backup\": false once no longer demoted, got '$bk'"

it_snap a p0
sleep 1
it_snap a p1
it_note "after promotion, tx_bytes at a over 1 s: $(it_deltas a p0 p1 tx_bytes p0 p1 p2)"
it_expect_delta a p0 p1 tx_bytes p1 -gt 417000 "to grow by more than 417 kB in 1 s once promoted again"

# the UDP load only carried traffic; it runs long enough for the slowest pass (6 + 1 + 8 + 1 s)
it_load_stop

it_finish loss-demote
