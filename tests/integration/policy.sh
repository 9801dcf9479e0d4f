#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Per-flow policy (Policy=, mpt.conf(5)) over two emulated paths of different delay: p0 15 ms
# each way, p1 1 ms. At both ends (the counts are a's):
#   Policy=proto udp dport 5001 pinned p0
#   Policy=proto icmp lowest-latency
#   Policy=proto udp dport 5002 aggregate
#   Policy=proto udp dport 5003 redundant
#
# Asserts, in secure mode (the lab's handshake) and again in compat mode:
#   - 300 UDP datagrams to port 5001 all arrive at b over p0 (b's p0 data packets grow by at
#     least 300, p1's by less than 10) and rule 0 counted exactly 300;
#   - a's lowest-latency path is p1 (the fast one), and 40 pings cross p1 only, with round trips
#     of the fast path (average below 10 ms) and rule 1 counting them;
#   - the delays swapped (p0 1 ms, p1 15 ms): the lowest-latency path becomes p0 within 10 s and
#     the pings follow it;
#   - each class's delay as a sees it: rule 0 (pinned p0) about p0's 15 ms, rule 1
#     (lowest-latency, p1) below 6 ms, the other traffic (aggregated over both) 12 ms or more;
#   - redundant over p0 losing 30 % (p1 clean): 300 datagrams to port 5003 all arrive, none twice,
#     a sent 300 copies and b dropped the copies as duplicates, and b's rule 3 counted 300
#     received and as many duplicates as it dropped (the aggregate rule's count over the same
#     paths is noted beside it);
#   - secure mode: both paths at 10 Mbit/s and bulk TCP a -> b filling them: pings (rule 1) still
#     cross in under 25 ms on average (2 without load; tens of ms when their requests wait behind
#     the bulk packets that a's pacing holds back), and the bulk still gets more than 10 Mbit/s
#     (the held bulk packets a drops after 50 ms, hold-overflow, are noted);
#   - p0 taken down at a: the pinned flow falls back to the other paths (its datagrams arrive over
#     p1), and lowest-latency moves to p1;
#   - `mptctl show` has a "policy N" line per rule with its count, and the JSON its typed objects;
#   - a rule naming a path the tunnel does not have: mptd refuses to start, with FILE:LINE.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3
lab_emu_topology 4 'delay=15ms' 'delay=1ms'
b_tun=$(lab_tunnel_addr b 4)

rx() { # SIDE PATH: the data packets that PATH received at SIDE
        lab_json "$1" "p['$2']['rx_packets']"
}
hits() { # RULE: a's count of it
        lab_json a "t['policy_hits']['$1']"
}
delay() { # RULE|other: a's delay of its class (us)
        lab_json a "t['policy_delay_us']['$1']"
}
send_udp() { # PORT COUNT
        lab_exec a python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[3])):
    s.sendto(b"x" * 200, (sys.argv[1], int(sys.argv[2])))
    time.sleep(0.002)' "$b_tun" "$1" "$2"
}
udp_count() { # PORT COUNT: COUNT numbered datagrams a -> b; prints how many arrived and how many twice
        lab_exec b python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(1.5)
seen, twice = set(), 0
try:
    while True:
        d = s.recv(2048)
        if d in seen:
            twice += 1
        seen.add(d)
except socket.timeout:
    pass
print(len(seen), twice)' "$b_tun" "$1" &
        local rx=$!
        sleep 0.3
        lab_exec a python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[3])):
    s.sendto(b"%06d" % i + b"x" * 194, (sys.argv[1], int(sys.argv[2])))
    time.sleep(0.003)' "$b_tun" "$1" "$2"
        wait "$rx"
}
wait_fastest() { # PATH TIMEOUT_S
        for _ in $(seq $(($2 * 10))); do
                [ "$(lab_json a "t['policy_fastest']")" = "$1" ] && return 0
                sleep 0.1
        done
        return 1
}

run() { # MODE_KEYS DESCRIPTION
        local what=$2 p0 p1 n
        # (DeadTime: a path that loses 30 % below must not be declared dead now and then.)
        lab_profiles 2 4 4 "$1" 'KeepaliveInterval=100ms\nDeadTime=5s'
        # Both ends: the echo replies come back the way b's rules say.
        sed -i '/^\[Tunnel\]$/a Policy=proto udp dport 5001 pinned p0\nPolicy=proto icmp lowest-latency\nPolicy=proto udp dport 5002 aggregate\nPolicy=proto udp dport 5003 redundant' \
                "$LAB_DIR/a.conf" "$LAB_DIR/b.conf"
        lab_emu_respec 0 'delay=15ms'
        lab_emu_respec 1 'delay=1ms'
        lab_start a
        lab_start b
        it_wait_ping a "$b_tun" 10 || it_fail "$what: no ping through the tunnel"

        # Pinned: port 5001 over p0 only.
        read -r p0 p1 < <(echo "$(rx b p0) $(rx b p1)")
        send_udp 5001 300
        sleep 0.5
        n=$(hits 0)
        it_note "$what: 300 datagrams to port 5001: b received $(($(rx b p0) - p0)) over p0, $(($(rx b p1) - p1)) over p1; rule 0 counted $n"
        [ "$n" = 300 ] || it_soft_fail "$what: rule 0 (pinned p0) counted $n packets, expected 300"
        [ $(($(rx b p0) - p0)) -ge 300 ] && [ $(($(rx b p1) - p1)) -lt 10 ] ||
                it_soft_fail "$what: the pinned flow did not stay on p0"

        # Lowest latency: the pings take p1 (2 ms round trip against 30).
        wait_fastest p1 10 || it_fail "$what: lowest-latency path is '$(lab_json a "t['policy_fastest']")', expected p1"
        read -r p0 p1 < <(echo "$(rx b p0) $(rx b p1)")
        n=$(hits 1)
        out=$(lab_exec a ping -c 40 -i 0.02 -W 1 "$b_tun") || it_soft_fail "$what: pings lost: $(tail -n 2 <<<"$out")"
        avg=$(sed -n 's|^rtt min/avg/max/mdev = [0-9.]*/\([0-9.]*\)/.*|\1|p' <<<"$out")
        it_note "$what: 40 pings, average $avg ms: b received $(($(rx b p0) - p0)) over p0, $(($(rx b p1) - p1)) over p1; rule 1 counted $(($(hits 1) - n))"
        [ $(($(rx b p1) - p1)) -ge 40 ] && [ $(($(rx b p0) - p0)) -lt 3 ] ||
                it_soft_fail "$what: the pings did not take the lowest-latency path p1"
        it_lt "$avg" 10 || { it_soft_fail "$what: pings averaged $avg ms, expected the fast path's round trip"; lab_ctl a show lab >&2; lab_ctl b show lab >&2; }
        [ $(($(hits 1) - n)) -ge 40 ] || it_soft_fail "$what: rule 1 counted $(($(hits 1) - n)) of 40 pings"
        it_note "$what: delays as a sees them: rule 0 (pinned p0) $(delay 0) us, rule 1 (lowest-latency) $(delay 1) us, other traffic $(delay other) us"
        [ "$(delay 0)" -ge 12000 ] && [ "$(delay 0)" -le 25000 ] || it_soft_fail "$what: rule 0's delay is $(delay 0) us, expected p0's 15 ms"
        [ "$(delay 1)" -lt 6000 ] || it_soft_fail "$what: rule 1's delay is $(delay 1) us, expected p1's 1 ms"
        [ "$(delay other)" -ge 12000 ] || it_soft_fail "$what: the other traffic's delay is $(delay other) us, expected p0's 15 ms"

        # The delays swapped: lowest-latency follows.
        lab_emu_respec 0 'delay=1ms'
        lab_emu_respec 1 'delay=15ms'
        wait_fastest p0 10 || it_soft_fail "$what: after the swap the lowest-latency path is '$(lab_json a "t['policy_fastest']")', expected p0"
        read -r p0 p1 < <(echo "$(rx b p0) $(rx b p1)")
        lab_exec a ping -c 20 -i 0.02 -W 1 "$b_tun" >/dev/null || it_soft_fail "$what: pings lost after the swap"
        [ $(($(rx b p0) - p0)) -ge 20 ] && [ $(($(rx b p1) - p1)) -lt 3 ] ||
                it_soft_fail "$what: after the swap the pings did not take p0"

        # Redundant over a lossy path: p0 loses 30 % of what it carries, p1 nothing. Every one of
        # 300 datagrams to port 5003 arrives, once; the same over the aggregate rule (port 5002)
        # for comparison (not judged: the learned scheduler may avoid the lossy path by itself).
        lab_emu_respec 0 'delay=1ms,loss=30%'
        dup0=$(lab_json b "sum(x['drops']['duplicate'] for x in t['paths'])")
        n=$(lab_json a "t['policy_copies']['3']")
        read -r brx bdup < <(lab_json b "t['policy_received']['3'], t['policy_duplicates']['3']" | tr -d '(),')
        read -r got dups < <(udp_count 5003 300)
        read -r agg _ < <(udp_count 5002 300)
        dup1=$(lab_json b "sum(x['drops']['duplicate'] for x in t['paths'])")
        copies=$(($(lab_json a "t['policy_copies']['3']") - n))
        read -r brx1 bdup1 < <(lab_json b "t['policy_received']['3'], t['policy_duplicates']['3']" | tr -d '(),')
        it_note "$what: p0 losing 30 %: redundant: $got of 300 datagrams arrived ($dups twice), a sent $copies copies, b dropped $((dup1 - dup0)) duplicates (rule 3 at b: $((brx1 - brx)) received, $((bdup1 - bdup)) duplicates); aggregate: $agg of 300"
        [ "$got" = 300 ] && [ "$dups" = 0 ] || it_soft_fail "$what: redundant: $got of 300 datagrams arrived, $dups of them twice"
        [ "$copies" = 300 ] || it_soft_fail "$what: redundant: a sent $copies copies, expected 300"
        [ $((dup1 - dup0)) -ge 150 ] || it_soft_fail "$what: b dropped only $((dup1 - dup0)) copies as duplicates"
        [ $((brx1 - brx)) = 300 ] && [ $((bdup1 - bdup)) = $((dup1 - dup0)) ] ||
                it_soft_fail "$what: b's rule 3 counted $((brx1 - brx)) received and $((bdup1 - bdup)) duplicates, expected 300 and $((dup1 - dup0))"
        lab_emu_respec 0 'delay=1ms'

        # Bulk TCP filling both paths (secure mode: the learned scheduler paces them; the -plain
        # variant runs compat mode both times): the pings' requests go out at once, past the bulk
        # packets a holds back.
        if [ "$(lab_json a "t['mode'] + ' ' + t['scheduler']")" = "secure learned" ]; then
                local hold0 hold1 avg
                # Both paths at 5 ms for the bulk, then back to 1 and 15 ms: p1's delay rises by
                # 10 ms under the next part's light load, which must not read as a queue to drain
                # (learn_pace_rate(): a queue of the path's own load needs that load), or the pace
                # holds the next part's datagrams back until they are dropped.
                lab_emu_respec 0 'rate=10mbit,delay=5ms'
                lab_emu_respec 1 'rate=10mbit,delay=5ms'
                hold0=$(lab_json a "t['drops']['hold-overflow']")
                it_load_start "$b_tun" 8
                sleep 3
                out=$(lab_exec a ping -c 50 -i 0.05 -W 2 "$b_tun") || true
                it_load_wait
                hold1=$(lab_json a "t['drops']['hold-overflow']")
                avg=$(sed -n 's|^rtt min/avg/max/mdev = [0-9.]*/\([0-9.]*\)/.*|\1|p' <<<"$out")
                it_note "$what: bulk TCP over 2 x 10 Mbit/s: $IT_LOAD_MBIT Mbit/s; pings beside it: average ${avg:-none} ms ($(grep -o '[0-9]* received' <<<"$out")); a dropped $((hold1 - hold0)) held bulk packets"
                [ -n "$avg" ] && it_lt "$avg" 25 || it_soft_fail "$what: with bulk TCP the pings averaged ${avg:-none} ms, expected under 25 (not behind the bulk)"
                it_lt 10 "$IT_LOAD_MBIT" || it_soft_fail "$what: bulk TCP beside the pings got $IT_LOAD_MBIT Mbit/s of 2 x 10, expected more than 10"
                lab_emu_respec 0 'delay=1ms'
                lab_emu_respec 1 'delay=15ms'
        fi

        # p0 down: the pinned flow is aggregated over what is left, lowest-latency moves to p1.
        lab_ctl a path lab p0 down
        it_wait b p0 peer-down 3000 || it_soft_fail "$what: b did not take p0 out of use"
        wait_fastest p1 5 || it_soft_fail "$what: with p0 down the lowest-latency path is '$(lab_json a "t['policy_fastest']")'"
        read -r p0 p1 < <(echo "$(rx b p0) $(rx b p1)")
        send_udp 5001 100
        sleep 0.5
        it_note "$what: p0 down, 100 datagrams to port 5001: b received $(($(rx b p1) - p1)) over p1"
        [ $(($(rx b p1) - p1)) -ge 100 ] || it_soft_fail "$what: with p0 down the pinned flow did not fall back to p1"

        # What mptctl shows.
        lab_ctl a show lab | grep -qx "  policy 0: proto udp dport 5001 pinned p0 (sent 400; received 0; delay ~[0-9.]*ms)" ||
                it_soft_fail "$what: mptctl show has no line for rule 0 with 400 packets: $(lab_ctl a show lab | grep policy)"
        lab_ctl a show lab | grep -qx "  other traffic (sent [0-9]*; received [0-9]*; delay ~[0-9.]*ms)" ||
                it_soft_fail "$what: mptctl show has no line for the other traffic: $(lab_ctl a show lab | grep -A1 policy)"
        lab_ctl a show lab | grep -qx "  lowest-latency path: p1" ||
                it_soft_fail "$what: mptctl show does not name the lowest-latency path"
        [ "$(lab_json a "type(t['policy_hits']['2']).__name__ + ' ' + t['policy']['2']")" = "int proto udp dport 5002 aggregate" ] ||
                it_soft_fail "$what: JSON: $(lab_json a "t['policy'], t['policy_hits']")"
        lab_ctl a path lab p0 up
        lab_stop a
        lab_stop b
}

run "" "secure"
run "Mode=compat" "compat"

# A path that does not exist.
sed -i 's/^Policy=proto udp dport 5001 pinned p0$/Policy=proto udp dport 5001 pinned lte/' "$LAB_DIR/a.conf"
line=$(grep -n '^Policy=proto udp dport 5001 pinned lte$' "$LAB_DIR/a.conf" | cut -d: -f1)
rc=0
out=$(ip netns exec "$(lab_ns a)" "$MPTD" --log-target=console "$LAB_DIR/a.conf" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "$LAB_DIR/a.conf:$line: Policy= names path 'lte', which this tunnel does not have" <<<"$out" ||
        it_soft_fail "a rule naming a missing path: expected exit 1 and FILE:LINE, got $rc: $out"

it_finish "per-flow policy: pinned, lowest-latency (with a swap of delays), redundant, fallback, counts"
