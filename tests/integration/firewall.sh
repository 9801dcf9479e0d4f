#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The per-tunnel nftables table (Firewall=yes, the default) and TCP MSS clamping.
#
#   c --- a ==== tunnel (2 paths: IPv4 with a 1280-byte link MTU, IPv6) ==== b --- s
#
# Asserts:
#   - while mptd runs, "nft list table inet mpt-lab" shows the sets remote4/remote6 holding the
#     other end's path addresses, the input chain accepting the data port from them (with the
#     FirewallMark=), and the MSS clamp at the tunnel MTU - 40 / - 60 in forward and output;
#   - a host firewall with a drop policy in its own table lets the tunnel through with the one
#     rule "meta mark & MARK == MARK accept", and does not without it;
#   - with path MTU discovery blackholed (c and s drop ICMP "fragmentation needed" / "packet too
#     big"), a 20 MB TCP transfer c -> s through the tunnel completes and c's connection uses an
#     MSS no larger than the tunnel MTU - 40; the clamp rule counted the SYNs. Without the tables
#     (both ends restarted with Firewall=no) the same transfer stalls, so the clamp is what makes
#     it work;
#   - a learned endpoint enters the set: when b's path p1 moves to a new address, a rewrites its
#     table and remote6 follows;
#   - the table belongs to mptd (flags owner, Linux 5.12): nft lists it with "flags owner", and
#     another process (nft) cannot change it;
#   - a clean stop deletes the table; so does kill -9 (the kernel deletes an owned table with its
#     process); a table of the same name that is not mptd's (one an older mptd, or one on a kernel
#     without the owner flag, left behind) is replaced by the next mptd (a marker chain added to
#     it is gone).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require nft iperf3 python3
lab_topology 2 none mixed
lab_exec a ip link set pa0 mtu 1280
lab_exec b ip link set pb0 mtu 1280
lab_profiles 2 4 mixed "FirewallMark=65536"
lab_start a
lab_start b
it_ping a "$(lab_tunnel_addr b 4)" 5

mtu=$(lab_exec a cat /sys/class/net/lab/mtu)
# 1280 - IPv4 (20) - UDP (8) - GRE (8); secure mode adds its clear header and tag (36).
want_mtu=1244
[ "${MPT_LAB_MODE:-handshake}" != compat ] && want_mtu=$((1244 - 36))
[ "$mtu" = "$want_mtu" ] || it_fail "expected the tunnel MTU $want_mtu (a 1280-byte IPv4 path), got $mtu"
mss4=$((mtu - 40))
mss6=$((mtu - 60))

ruleset=$(lab_exec a nft list table inet mpt-lab) || it_fail "no table inet mpt-lab at a while mptd runs"
it_note "table at a:"
printf '%s\n' "$ruleset" | sed 's/^/    /' >&2
check() { # description, extended regex that some line of the ruleset must match
        grep -Eq -- "$2" <<<"$ruleset" || it_soft_fail "ruleset: expected $1 (/$2/)"
}
check "the table owned by mptd" "^[[:space:]]*flags owner$"
if out=$(lab_exec a nft add chain inet mpt-lab intruder 2>&1); then
        it_soft_fail "another process could add a chain to mptd's table"
else
        it_note "nft add chain to mptd's table: $(head -n 1 <<<"$out")"
fi
check "remote4 with b's IPv4 path address" "elements = \{ $(lab_path_addr b 0 4) \}"
check "remote6 with b's IPv6 path address" "elements = \{ $(lab_path_addr b 1 6) \}"
check "an input chain before the filter priority" "type filter hook input priority filter - 10; policy accept;"
check "the IPv4 data-port accept rule with the mark" \
        "udp dport 4754 ip saddr @remote4 counter packets [1-9][0-9]* bytes [0-9]+ meta mark set meta mark \| 0x00010000 accept"
check "the IPv6 data-port accept rule" "udp dport 4754 ip6 saddr @remote6 counter .* accept"
check "a forward chain at mangle priority" "type filter hook forward priority mangle; policy accept;"
check "the IPv4 clamp into the tunnel" \
        "oifname \"lab\" meta nfproto ipv4 tcp flags syn / syn,rst tcp option maxseg size > $mss4 counter .* tcp option maxseg size set $mss4"
check "the IPv4 clamp out of the tunnel" "iifname \"lab\" meta nfproto ipv4 .* maxseg size set $mss4"
check "the IPv6 clamp" "oifname \"lab\" meta nfproto ipv6 .* maxseg size > $mss6 .* maxseg size set $mss6"
check "an output chain" "type filter hook output priority mangle; policy accept;"
[ "$(printf '%s\n' "$ruleset" | grep -c 'maxseg size set')" = 6 ] || it_soft_fail "expected 6 clamp rules"

# A host firewall that drops by default lets the tunnel in with one rule on FirewallMark=, as
# mptd(8) tells; without that rule nothing passes (an accept in mpt's table cannot help).
host_fw() { # with or without the mark rule
        lab_exec a nft -f - <<EOF
table inet host
delete table inet host
table inet host {
        chain input {
                type filter hook input priority filter; policy drop;
                iifname "lo" accept
                iifname "lab" accept
                $1
        }
}
EOF
}
host_fw "meta mark & 65536 == 65536 accept"
lab_exec b ping -c 5 -i 0.2 -W 1 "$(lab_tunnel_addr a 4)" >/dev/null ||
        it_soft_fail "with a drop-policy host firewall accepting FirewallMark=65536, pings b -> a failed"
host_fw ""
if lab_exec b ping -c 3 -i 0.2 -W 1 "$(lab_tunnel_addr a 4)" >/dev/null; then
        it_soft_fail "control: the drop-policy host firewall without the mark rule let the tunnel through"
fi
lab_exec a nft delete table inet host
it_wait_ping b "$(lab_tunnel_addr a 4)" 10 || it_fail "no ping b -> a after the host firewall went"

# c behind a, s behind b, both with 1500-byte links, PMTU discovery blackholed.
lab_add_ns c
lab_add_ns s
ip link add ca netns "$(lab_ns c)" type veth peer name ac netns "$(lab_ns a)"
ip link add sb netns "$(lab_ns s)" type veth peer name bs netns "$(lab_ns b)"
lab_exec c ip addr add 10.78.1.2/24 dev ca
lab_exec a ip addr add 10.78.1.1/24 dev ac
lab_exec s ip addr add 10.78.2.2/24 dev sb
lab_exec b ip addr add 10.78.2.1/24 dev bs
for x in "c ca" "a ac" "s sb" "b bs"; do
        set -- $x
        lab_exec "$1" ip link set "$2" up
done
lab_exec c ip route add default via 10.78.1.1
lab_exec s ip route add default via 10.78.2.1
lab_exec a ip route add 10.78.2.0/24 dev lab
lab_exec b ip route add 10.78.1.0/24 dev lab
lab_exec a sysctl -qw net.ipv4.ip_forward=1
lab_exec b sysctl -qw net.ipv4.ip_forward=1
for x in c s; do
        lab_exec "$x" sysctl -qw net.ipv4.tcp_mtu_probing=0
        lab_exec "$x" nft -f - <<'EOF'
table inet blackhole {
        chain input {
                type filter hook input priority filter; policy accept;
                icmp type destination-unreachable drop
                icmpv6 type packet-too-big drop
        }
}
EOF
done

port=5201
lab_spawn s iperf3 -s -p "$port" >/dev/null 2>&1
lab_wait_listen s tcp "$port" || it_fail "iperf3 server did not start"
lab_exec c timeout 60 iperf3 -c 10.78.2.2 -p "$port" -n 20M -J > "$LAB_DIR/clamp.json" 2>&1 &
ipid=$!
rc=0
wait "$ipid" || rc=$?
[ "$rc" = 0 ] || it_fail "20 MB c -> s through the tunnel with PMTU discovery blackholed failed (rc $rc): $(tail -c 400 "$LAB_DIR/clamp.json")"
# (-n counts what the sender sent; the receiver's figure misses what was in flight when it reported)
got=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_sent"]["bytes"]))' "$LAB_DIR/clamp.json")
[ "$got" -ge 20971520 ] || it_fail "expected c to send 20 MiB, it sent $got bytes"
# iperf3 reports the connection's MSS (TCP_MAXSEG after the handshake).
conn_mss=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["start"].get("tcp_mss_default", ""))' "$LAB_DIR/clamp.json")
it_note "20 MiB through the clamped tunnel; c's connection MSS: ${conn_mss:-?}"
[ -n "$conn_mss" ] || it_soft_fail "could not read the MSS of c's connection"
[ -z "$conn_mss" ] || [ "$conn_mss" -le "$mss4" ] || it_soft_fail "c's MSS $conn_mss is above the clamp $mss4"
clamped=$(lab_exec a nft list chain inet mpt-lab forward | grep 'oifname "lab" meta nfproto ipv4' |
          grep -o 'counter packets [0-9]*' | awk '{print $3}')
[ "${clamped:-0}" -ge 1 ] || it_soft_fail "the IPv4 clamp rule at a counted no SYN"

# Control: without the tables (each end clamps both directions) the same transfer stalls in the
# PMTU blackhole. The tables are mptd's own (nft cannot delete them): both ends run with
# Firewall=no for it, and with their tables again afterwards.
for side in a b; do
        sed -e '/^FirewallMark=/d' -e '/^Name=lab$/a Firewall=no' "$LAB_DIR/$side.conf" > "$LAB_DIR/$side-nofw.conf"
        lab_stop "$side"
done
lab_start a "$LAB_DIR/a-nofw.conf"
lab_start b "$LAB_DIR/b-nofw.conf"
it_wait_ping a "$(lab_tunnel_addr b 4)" 10 || it_fail "control: the tunnel without tables does not carry pings"
lab_exec a nft list table inet mpt-lab >/dev/null 2>&1 && it_fail "control: a table inet mpt-lab at a with Firewall=no"
if lab_exec c timeout 8 iperf3 -c 10.78.2.2 -p "$port" -n 5M >/dev/null 2>&1; then
        it_soft_fail "control: without the clamp, the transfer through the PMTU blackhole should stall, it completed"
else
        it_note "control: without the table the transfer stalls, as expected"
fi
lab_stop a
lab_stop b
lab_start a
lab_start b
it_wait_ping a "$(lab_tunnel_addr b 4)" 10 || it_fail "the tunnel does not carry pings after the control"

# A learned endpoint enters the set (a rewrites its table): b's IPv6 path moves to a new
# address.
new6=fd77:1::22
lab_exec b ip addr add "$new6/64" dev pb1 nodad
lab_exec b ip addr del "$(lab_path_addr b 1 6)/64" dev pb1
found=
for _ in $(seq 100); do
        set6=$(lab_exec a nft list set inet mpt-lab remote6 2>/dev/null) || set6=
        if grep -q "$new6" <<<"$set6"; then found=1; break; fi
        sleep 0.1
done
[ -n "$found" ] || it_soft_fail "a's remote6 set did not learn b's new address $new6: $(lab_exec a nft list set inet mpt-lab remote6 2>&1)"
out=$(lab_exec a nft list chain inet mpt-lab output 2>&1) || true
grep -q "maxseg size set $mss4" <<<"$out" ||
        it_soft_fail "a's rewritten table has no clamp rule: $out"

# Clean stop: the table goes.
lab_stop a
if lab_exec a nft list table inet mpt-lab >/dev/null 2>&1; then
        it_soft_fail "the table inet mpt-lab is still there at a after a clean stop"
fi

# kill -9: the kernel deletes the table with its owner. (b's table went in the control above: a
# restart writes it again.)
lab_stop b
lab_start b
lab_exec b nft list table inet mpt-lab >/dev/null 2>&1 || it_fail "no table at b before the kill"
kill -KILL "$LAB_PID_b"
{ wait "$LAB_PID_b"; } 2>/dev/null || true
for i in $(seq 20); do
        lab_exec b nft list table inet mpt-lab >/dev/null 2>&1 || break
        sleep 0.1
done
if lab_exec b nft list table inet mpt-lab >/dev/null 2>&1; then
        it_soft_fail "the killed mptd's table stayed behind at b"
fi
# A table of that name that nobody owns (as one without the owner flag stays behind): the next
# mptd replaces it.
lab_exec b nft add table inet mpt-lab
lab_exec b nft add chain inet mpt-lab stale-marker
lab_start b
after=$(lab_exec b nft list table inet mpt-lab) || it_fail "no table at b after the restart"
if grep -q stale-marker <<<"$after"; then
        it_soft_fail "the restarted mptd kept the stale table (marker chain still there)"
fi
grep -q "maxseg size set $mss4" <<<"$after" || it_soft_fail "the restarted mptd's table has no clamp rule"
grep -Eq "^[[:space:]]*flags owner$" <<<"$after" || it_soft_fail "the restarted mptd's table is not its own (no flags owner)"
[ "$(lab_exec b nft list tables | grep -c 'inet mpt-lab')" = 1 ] || it_soft_fail "expected exactly one table mpt-lab at b"

it_finish "firewall table and MSS clamp"
