#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Bad datagrams at a secure tunnel's data port (secure mode whatever MPT_LAB_MODE says). Two
# IPv4 paths; mpt-inject (tests/integration/mpt-inject.c, MPT_INJECT=) sends from namespace a at
# b's data port of path p0, most cases with a's real path address and port as a forged source
# (raw socket), so that b takes them for the path's own; garbage, an oversized datagram and a
# moved one also come from a new source port.
#
# Asserts, for each case (garbage, truncated, oversized, bad-version, bad-header, compat,
# feedback (plain), feedback-bad (sealed, version 9), repair (plain), repair-bad (sealed, version
# 9), wrong-key, stale, own-epoch, replay, moved
# (authentic, sealed as a's path p1 seals, far ahead of its counters)):
#   - the named drop counter of path p0 at b goes up by exactly the number of datagrams sent
#     (replay: the first copy is authentic and counts as gre-protocol, every re-sent copy as
#     replayed; moved: path-mismatch), and no other drop counter of p0 changes;
#   - after the moved datagrams, b's path p1 still takes a's p1 traffic: its keepalives keep
#     arriving and none is refused as replayed (accepted, a moved datagram would have pushed
#     p1's anti-replay window past them);
#   - a flood of 2000 forged datagrams, each claiming a new epoch of a: b derives keys for at
#     most a burst and about 10 a second per worker (auth-failed), the rest is dropped as
#     epoch-limited, together exactly the flood; pings through the tunnel during the flood are
#     all answered;
# and over the whole run:
#   - nothing but what a sent through the tunnel (the pings during the flood) reached b's TUN
#     device (its RX packet counter) or was delivered by mptd (rx_packets of b's paths);
#   - b's path did not move (remote_changes 0, remote still a's address and port 4754), and the
#     other end's epoch b knows is still a's;
#   - afterwards the tunnel still works (ping a -> b).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

export MPT_LAB_MODE=secure
: "${MPT_INJECT:=}"
lab_init
it_require python3
[ -x "$MPT_INJECT" ] || it_fail "mpt-inject not found (set MPT_INJECT=)"
lab_topology 2 none 4
lab_profiles 2 4 4
lab_start a
lab_start b
it_ping a "$(lab_tunnel_addr b 4)" 3

a_addr=$(lab_path_addr a 0 4)
b_addr=$(lab_path_addr b 0 4)
key=$(lab_key)
a_epoch=$(lab_json a 't["epoch"]')
b_epoch=$(lab_json b 't["epoch"]')
# b must have seen a's epoch (the pings above went both ways).
[ "$(lab_json b 't["peer_epoch"]')" = "$a_epoch" ] || it_fail "b does not know a's epoch $a_epoch"

# a's path p1 is bound at b to b's p1 once one of its datagrams arrived there.
for i in $(seq 50); do
        [ "$(lab_json b 'p["p1"]["keepalives_rx"]')" -gt 0 ] && break
        sleep 0.1
done

# Everything below is a datagram at b; keepalives go on, but nothing crosses the tunnel.
drops() { # [PATH]
        lab_ctl b --json show lab | python3 -c '
import json, sys
t = json.load(sys.stdin)[0]
p = {x["name"]: x for x in t["paths"]}[sys.argv[1]]
print(" ".join("%s=%d" % kv for kv in sorted(p["drops"].items())))' "${1:-p0}"
}
tun_rx() {
        lab_exec b cat /sys/class/net/lab/statistics/rx_packets
}

# Nothing else may cross the tunnel meanwhile: no IPv6 on the TUN devices (router solicitations,
# MLD reports). Whatever a still sends through it is counted at a and allowed for.
for side in a b; do
        lab_exec "$side" sysctl -qw net.ipv6.conf.lab.disable_ipv6=1
done
sleep 0.5
a_tx_before=$(lab_json a 'sum(x["tx_packets"] for x in t["paths"])')
rx_before=$(lab_json b 'sum(x["rx_packets"] for x in t["paths"])')
tun_before=$(tun_rx)

# inject CASE EXPECTED_REASON COUNT [--spoof|--new-source] [MPT-INJECT ARGS...]
inject() {
        local what=$1 reason=$2 n=$3 how=$4
        shift 4
        local before after spoof=() i
        [ "$how" = --spoof ] && spoof=(--spoof "$a_addr:4754")
        before=$(drops)
        lab_exec a "$MPT_INJECT" --to "$b_addr:4754" "${spoof[@]}" --key "$key" --epoch "${a_epoch#0x}" \
                --own-epoch "${b_epoch#0x}" --count "$n" "$@" "$what" || it_fail "$what: mpt-inject failed"
        for i in $(seq 50); do
                after=$(drops)
                python3 - "$before" "$after" "$reason" "$n" <<'EOF' && break
import sys
b = dict(x.split("=") for x in sys.argv[1].split())
a = dict(x.split("=") for x in sys.argv[2].split())
sys.exit(0 if int(a[sys.argv[3]]) - int(b[sys.argv[3]]) >= int(sys.argv[4]) else 1)
EOF
                sleep 0.1
        done
        python3 - "$before" "$after" "$reason" "$n" "$what" <<'EOF' || it_soft_fail "$what: the drop counters did not change as expected (see above)"
import sys
b = dict(x.split("=") for x in sys.argv[1].split())
a = dict(x.split("=") for x in sys.argv[2].split())
reason, n, what = sys.argv[3], int(sys.argv[4]), sys.argv[5]
delta = {k: int(a[k]) - int(b[k]) for k in a if int(a[k]) != int(b[k])}
want = {reason: n} if n else {}
print("  %-12s -> %s" % (what, delta), file=sys.stderr)
sys.exit(0 if delta == want else 1)
EOF
}

inject garbage bad-version 5 --spoof
inject garbage bad-version 5 --new-source
inject truncated too-short 5 --spoof
inject oversized auth-failed 3 --new-source
inject bad-version bad-version 5 --spoof
inject bad-header bad-header 5 --spoof
inject compat compat-packet 5 --spoof
# Feedback moves traffic: unauthenticated it is nothing, authenticated but malformed it is named.
inject feedback compat-packet 5 --spoof
inject feedback-bad bad-feedback 5 --spoof
# So does a repair request (it makes the sender send again): the same.
inject repair compat-packet 5 --spoof
inject repair-bad bad-repair 5 --spoof
inject wrong-key auth-failed 5 --spoof
inject stale stale-epoch 5 --spoof
inject own-epoch own-epoch 5 --spoof
# A datagram sealed with the key, sent once: authentic, but a GRE frame of no IP protocol.
inject replay gre-protocol 1 --spoof --counter 7
# The same datagram again, four times: replayed.
inject replay replayed 4 --spoof --counter 7
# A counter far behind the newest one of the path (7 + 10000 > 4096 ahead): also replayed.
inject replay gre-protocol 1 --spoof --counter 10007
inject replay replayed 1 --spoof --counter 7
# a's path p1's datagrams (its path id 1) moved to p0, as a's own (forged source) or from a new
# source: authentic, but not p0's; they neither count for p0 nor move it.
p1_ka_before=$(lab_json b 'p["p1"]["keepalives_rx"]')
p1_drops_before=$(drops p1)
inject moved path-mismatch 5 --spoof --path-id 1 --counter 1000000000
inject moved path-mismatch 3 --new-source --path-id 1 --counter 1000000100

# A flood of datagrams that claim new epochs of a, while pings cross the tunnel.
flood_n=2000
flood_before=$(drops)
flood_start=$(it_now)
lab_exec a "$MPT_INJECT" --to "$b_addr:4754" --spoof "$a_addr:4754" --key "$key" --epoch "${a_epoch#0x}" \
        --count "$flood_n" --interval-us 250 new-epochs &
flood_pid=$!
LAB_PIDS+=("$flood_pid")
it_ping a "$(lab_tunnel_addr b 4)" 5
wait "$flood_pid" || it_fail "new-epochs: mpt-inject failed"
flood_time=$(it_elapsed "$flood_start")
for i in $(seq 50); do
        flood_after=$(drops)
        python3 - "$flood_before" "$flood_after" "$flood_n" <<'EOF' && break
import sys
b = dict(x.split("=") for x in sys.argv[1].split())
a = dict(x.split("=") for x in sys.argv[2].split())
d = lambda k: int(a.get(k, 0)) - int(b.get(k, 0))
sys.exit(0 if d("auth-failed") + d("epoch-limited") >= int(sys.argv[3]) else 1)
EOF
        sleep 0.1
done
# Derivations: a burst of 8 and one per 100 ms, per worker (mptd runs two here).
python3 - "$flood_before" "$flood_after" "$flood_n" "$flood_time" <<'EOF' ||
import sys
b = dict(x.split("=") for x in sys.argv[1].split())
a = dict(x.split("=") for x in sys.argv[2].split())
n, secs = int(sys.argv[3]), float(sys.argv[4])
delta = {k: int(a.get(k, 0)) - int(b.get(k, 0)) for k in a if int(a.get(k, 0)) != int(b.get(k, 0))}
bound = 2 * (8 + 10 * secs + 1)
print("  %-12s -> %s in %.2f s (at most %d derivations)" % ("new-epochs", delta, secs, bound), file=sys.stderr)
ok = set(delta) <= {"auth-failed", "epoch-limited"} and sum(delta.values()) == n and delta.get("auth-failed", 0) <= bound
sys.exit(0 if ok else 1)
EOF
        it_soft_fail "new-epochs: key derivations were not limited as expected (see above)"

sleep 0.3
# a's keepalives on p1 (every 1 s by default) still arrive, none refused.
for i in $(seq 30); do
        [ "$(lab_json b 'p["p1"]["keepalives_rx"]')" -gt "$p1_ka_before" ] && break
        sleep 0.1
done
p1_ka_after=$(lab_json b 'p["p1"]["keepalives_rx"]')
p1_drops_after=$(drops p1)
[ "$p1_ka_after" -gt "$p1_ka_before" ] || it_soft_fail "b's path p1 received no keepalive after the moved datagrams"
[ "$p1_drops_after" = "$p1_drops_before" ] ||
        it_soft_fail "b's path p1 dropped a's traffic after the moved datagrams: $(python3 -c '
import sys
b = dict(x.split("=") for x in sys.argv[1].split())
a = dict(x.split("=") for x in sys.argv[2].split())
print({k: int(a[k]) - int(b[k]) for k in a if a[k] != b[k]})' "$p1_drops_before" "$p1_drops_after")"
it_note "b: p1 keepalives_rx $p1_ka_before -> $p1_ka_after"
a_sent=$(( $(lab_json a 'sum(x["tx_packets"] for x in t["paths"])') - a_tx_before ))
rx_after=$(lab_json b 'sum(x["rx_packets"] for x in t["paths"])')
tun_after=$(tun_rx)
[ $((rx_after - rx_before)) = "$a_sent" ] ||
        it_soft_fail "mptd at b delivered data that a did not send: rx_packets of its paths went from $rx_before to $rx_after, a sent $a_sent"
[ $((tun_after - tun_before)) = "$a_sent" ] ||
        it_soft_fail "b's TUN device received packets that a did not send: rx_packets went from $tun_before to $tun_after, a sent $a_sent"
it_note "b: rx_packets $rx_before -> $rx_after, TUN rx_packets $tun_before -> $tun_after (a sent $a_sent)"

changes=$(lab_json b 'p["p0"]["remote_changes"]')
remote=$(lab_json b 'p["p0"]["remote"]')
[ "$changes" = 0 ] || it_soft_fail "b's path p0 followed a forged source: remote_changes $changes"
[ "$remote" = "$a_addr:4754" ] || it_soft_fail "b's path p0 sends to $remote, expected $a_addr:4754"
[ "$(lab_json b 't["peer_epoch"]')" = "$a_epoch" ] || it_soft_fail "b's idea of a's epoch changed"

it_ping a "$(lab_tunnel_addr b 4)" 3
it_finish "secure-inject"
