#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A client behind NAT and a server whose paths have no Remote= (issue 23, "client-initiated
# paths"). Namespaces:
#
#   a (client) pa0 192.168.1.2 -- n1 (masquerade) ------------------- pb0 100.64.1.1 b (server)
#              pa1 192.168.2.2 -- n2 (masquerade) -- n3 (masquerade) -- pb1 100.64.2.1
#
# The server's one address, 203.0.113.1, is on b's pb0; both of its paths listen there on
# one socket (LocalAddress=203.0.113.1, no Remote=). The client's paths name it as Remote=. n1
# is a NAT that changes the client's external port: at each remap its masquerade rule takes
# another port range and its conntrack entries are deleted, so the client's next datagram gets
# a new mapping (a home router or CGNAT does this when a mapping times out or it restarts; here
# every 4 s rather than every 30 s, to keep the test short). The path through n2 and n3 is
# behind two NATs. Secure mode with the handshake (mptd(8), ENDPOINT LEARNING). The server's
# host firewall drops by default and accepts what mptd's table marks (FirewallMark=).
#
# Asserts:
#   - before the client starts, both server paths are "listening" with remote "-";
#   - the tunnel comes up: the client's paths and both server paths "up" within 5 s, the server
#     paths' remotes are the two NATs' outer addresses (100.64.1.2 and 100.64.2.2) with
#     remote_changes 1, and 20 pings through the tunnel are all answered; mptd's firewall
#     table at the server accepts and marks IPv4 datagrams to the port from any source (its
#     counter grew) and keeps the source set for IPv6 (no IPv6 path listens);
#   - a TCP stream from the server to the client (4 Mbit/s of 1 KB writes) runs across 3 remaps
#     of n1: after each, the server's path through n1 follows the new external port within
#     1 s (remote_changes grows; the client has no new handshake: hs_sessions stays the same
#     at both ends), the stream never stalls longer than 100 ms at the client (the largest gap
#     between two reads; 400 ms under the sanitizers), no byte is lost and both server paths
#     carry the stream;
#   - forgeries from a new address (n1's outer address, another port) move no endpoint: a copy
#     of a genuine datagram of the client (captured as it reaches n1) is dropped as
#     replayed, a datagram with a made-up header and tag as auth-failed; the server's remotes
#     and remote_changes stay as they were;
#   - the client restarts (new path tokens, a new session) while n1 gives it a new port: both
#     server paths go "dead", then "up" again within 5 s of the start, the one through n1 at
#     the new port (a dead listening path is taken by a keepalive with a token it never saw);
#     20 pings answered;
#   - a configuration check: in compat mode, and without LocalAddress=, a path without
#     Remote= is refused with FILE:LINE and the reason.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3
it_require nft
it_require conntrack

server=203.0.113.1
n1_out=100.64.1.2
n3_out=100.64.2.2

# ---- the topology ----
for ns in a b n1 n2 n3; do
        lab_add_ns "$ns"
done
lab_exec n1 nft add table inet mpt_probe 2>/dev/null || lab_skip "needs nftables in the kernel"
lab_exec n1 nft delete table inet mpt_probe

# veth NS1 DEV1 ADDR1 NS2 DEV2 ADDR2 (addresses with /24)
veth() {
        ip link add "$2" netns "$(lab_ns "$1")" type veth peer name "$5" netns "$(lab_ns "$4")" ||
                lab_die "cannot create veth $2-$5"
        lab_exec "$1" ip addr add "$3/24" dev "$2"
        lab_exec "$4" ip addr add "$6/24" dev "$5"
        lab_exec "$1" ip link set "$2" up
        lab_exec "$4" ip link set "$5" up
}
veth a pa0 192.168.1.2 n1 n1i 192.168.1.1
veth n1 n1o "$n1_out" b pb0 100.64.1.1
veth a pa1 192.168.2.2 n2 n2i 192.168.2.1
veth n2 n2o 10.200.0.2 n3 n3i 10.200.0.1
veth n3 n3o "$n3_out" b pb1 100.64.2.1
lab_exec b ip addr add "$server/32" dev pb0
for ns in n1 n2 n3; do
        lab_exec "$ns" sysctl -qw net.ipv4.ip_forward=1
done
lab_exec n1 ip route add "$server/32" via 100.64.1.1
lab_exec n2 ip route add default via 10.200.0.1
lab_exec n3 ip route add "$server/32" via 100.64.2.1
# The client reaches the server over either link (a path's socket is bound to its interface).
lab_exec a ip route add "$server/32" via 192.168.1.1 dev pa0
lab_exec a ip route add "$server/32" via 192.168.2.1 dev pa1 metric 10

# n1's masquerade takes external ports from range $1 (20000-29999 or 30000-39999).
n1_nat() {
        lab_exec n1 nft -f - <<EOF
table ip mpt_nat
delete table ip mpt_nat
table ip mpt_nat {
        chain post {
                type nat hook postrouting priority srcnat; policy accept;
                oifname "n1o" meta l4proto udp masquerade to :$1
                oifname "n1o" masquerade
        }
}
EOF
}
n1_nat 20000-29999
for ns in n2 n3; do
        lab_exec "$ns" nft -f - <<EOF
table ip mpt_nat {
        chain post {
                type nat hook postrouting priority srcnat; policy accept;
                oifname "${ns}o" masquerade
        }
}
EOF
done

# ---- the profiles ----
lab_pair_init
cat > "$LAB_DIR/a.conf" <<EOF
[Tunnel]
Name=lab
PrivateKey=$LAB_PRIVATE_a
PublicKey=$LAB_PUBLIC_b
Address=10.77.0.1/24
Peer=10.77.0.2

[Path]
Name=p0
Interface=pa0
Remote=$server

[Path]
Name=p1
Interface=pa1
Remote=$server
EOF
cat > "$LAB_DIR/b.conf" <<EOF
[Tunnel]
Name=lab
PrivateKey=$LAB_PRIVATE_b
PublicKey=$LAB_PUBLIC_a
Address=10.77.0.2/24
Peer=10.77.0.1
FirewallMark=65536

[Path]
Name=s0
LocalAddress=$server

[Path]
Name=s1
LocalAddress=$server
EOF
chmod 600 "$LAB_DIR/a.conf" "$LAB_DIR/b.conf"

# ---- configuration errors ----
bad=$LAB_DIR/bad.conf
printf '[Tunnel]\nName=bad\nMode=compat\nAddress=10.9.0.1/24\n\n[Path]\nName=x\nLocalAddress=%s\n' "$server" > "$bad"
out=$("$MPTD" --check "$bad" 2>&1) && it_fail "a compat-mode path without Remote= was accepted"
case "$out" in
*"$bad:6: path 'x' has no Remote= address (only a secure tunnel"*) it_note "compat mode, no Remote=: $out" ;;
*) it_fail "compat mode, no Remote=: expected '$bad:6: path 'x' has no Remote= address (only a secure tunnel...', got: $out" ;;
esac
printf '[Tunnel]\nName=bad\nKey=%s\nAddress=10.9.0.1/24\n\n[Path]\nName=x\nInterface=pa0\n' "$(lab_key)" > "$bad"
chmod 600 "$bad"
out=$("$MPTD" --check "$bad" 2>&1) && it_fail "a path with neither Remote= nor LocalAddress= was accepted"
case "$out" in
*"$bad:6: path 'x' has no Remote= address (a path without one listens for the other end, and then needs LocalAddress="*) it_note "no Remote=, no LocalAddress=: $out" ;;
*) it_fail "no Remote= nor LocalAddress=: expected '$bad:6: path 'x' has no Remote= address (a path without one listens ... needs LocalAddress=...', got: $out" ;;
esac

# The server's host firewall drops what it does not know: only datagrams that mptd's table
# marks (FirewallMark=) come in on the uplinks, and the tunnel's own traffic.
lab_exec b nft -f - <<EOF
table inet host_fw {
        chain input {
                type filter hook input priority filter; policy drop;
                iifname { "lo", "lab" } accept
                meta mark & 0x10000 == 0x10000 accept
                ct state established,related accept
        }
}
EOF

# start_client WHAT: starts mptd at a; all four paths must come up within 5 s.
start_client() {
        lab_start a
        for p in p0 p1; do
                it_expect a "$p" up 5000 "$1"
        done
        for s in s0 s1; do
                it_expect b "$s" up 5000 "$1"
        done
}

# ping_tunnel WHAT: 20 pings a -> b through the tunnel, all answered.
ping_tunnel() {
        local out
        out=$(lab_exec a ping -n -q -c 20 -i 0.02 -W 1 10.77.0.2 2>&1) || true
        case "$out" in
        *"20 packets transmitted, 20 received"*) it_note "ping a -> b $1: 20 of 20 answered" ;;
        *) it_fail "ping a -> b $1: expected 20 of 20 answered, got: $(printf '%s' "$out" | grep transmitted || printf '%s' "$out")" ;;
        esac
}

# ---- up ----
lab_start b
for s in s0 s1; do
        it_expect b "$s" listening 2000 "server started, no client yet"
        r=$(it_get b "$s" remote)
        [ "$r" = - ] || it_fail "$s at b: expected remote '-' while listening, mptctl shows '$r'"
done
it_note "server: s0 and s1 listening on $server"
start_client "client started"
remotes=
for s in s0 s1; do
        r=$(it_get b "$s" remote)
        c=$(it_get b "$s" remote_changes)
        [ "$c" = 1 ] || it_fail "$s at b: expected remote_changes 1 after the client reached it, mptctl shows $c"
        remotes+="${r%:*} "
        it_note "$s at b: learned remote $r"
        case "$r" in
        "$n1_out":*) via_n1=$s ;;
        esac
done
case "$remotes" in
"$n1_out $n3_out " | "$n3_out $n1_out ") ;;
*) it_fail "server paths: expected the remotes $n1_out and $n3_out (the NATs' outer addresses), mptctl shows $remotes" ;;
esac
ruleset=$(lab_exec b nft list chain inet mpt-lab input) || it_fail "no table inet mpt-lab at b"
printf '%s\n' "$ruleset" | grep -Eq "udp dport 4754 counter packets [1-9][0-9]* bytes [0-9]+ meta mark set meta mark \| 0x00010000 accept" ||
        it_fail "b's firewall table: expected its IPv4 rule to accept (and mark) datagrams to port 4754 from any source while a path listens, and to have counted some; it is: $ruleset"
printf '%s\n' "$ruleset" | grep -q "ip6 saddr @remote6" ||
        it_fail "b's firewall table: expected the IPv6 rule (no IPv6 path listens) to keep its source set; it is: $ruleset"
it_note "b's firewall table accepts and marks IPv4 datagrams to port 4754 from anywhere (a path listens)"
ping_tunnel "through the tunnel"
sessions_a=$(it_get a "" sessions)
sessions_b=$(it_get b "" sessions)

# ---- a stream across remaps ----
gap_max_ms=100
[ -z "${MPT_SANITIZED:-}" ] || gap_max_ms=400
stream_s=14
cat > "$LAB_DIR/stream.py" <<'EOF'
import socket, sys, time
role, addr, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
if role == "recv":
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, 5201)); ls.listen(1)
    open(sys.argv[4], "w").close()  # listening
    c, _ = ls.accept()
    total, gap, last, expect = 0, 0.0, None, 0
    bad = 0
    while True:
        d = c.recv(65536)
        now = time.monotonic()
        if not d:
            break
        for b in d:  # the stream counts bytes 0..255 over and over: a lost or changed byte shows
            if b != expect:
                bad += 1
            expect = (b + 1) & 255
        if last is not None:
            gap = max(gap, now - last)
        last = now
        total += len(d)
    print(f"bytes={total} gap_ms={gap * 1000:.1f} bad={bad}")
else:
    s = socket.create_connection((addr, 5201))
    chunk = bytes(range(256)) * 4
    end = time.monotonic() + secs
    sent = 0
    while time.monotonic() < end:
        s.sendall(chunk)
        sent += len(chunk)
        time.sleep(0.002)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    print(f"sent={sent}")
EOF
ready=$LAB_DIR/stream.ready
lab_exec a python3 "$LAB_DIR/stream.py" recv 10.77.0.1 0 "$ready" > "$LAB_DIR/stream.recv" 2>&1 &
recv_pid=$!
LAB_PIDS+=("$recv_pid")
for _ in $(seq 100); do
        [ -e "$ready" ] && break
        sleep 0.05
done
[ -e "$ready" ] || it_fail "the stream's receiver did not start"
it_snap b t0
lab_exec b python3 "$LAB_DIR/stream.py" send 10.77.0.1 "$stream_s" > "$LAB_DIR/stream.send" 2>&1 &
send_pid=$!
LAB_PIDS+=("$send_pid")

ranges=(30000-39999 20000-29999 30000-39999)
for i in 0 1 2; do
        sleep 4
        before=$(it_get b "$via_n1" remote)
        changes_before=$(it_get b "$via_n1" remote_changes)
        n1_nat "${ranges[$i]}"
        lab_exec n1 conntrack -D -p udp >/dev/null 2>&1 || true
        it_now_us
        t_remap=$IT_NOW_US
        lo=${ranges[$i]%-*}
        hi=${ranges[$i]#*-}
        while :; do
                it_dump b
                it_field_of "$IT_DUMP" "$via_n1" remote || true
                r=$IT_V
                port=${r##*:}
                if [ "${r%:*}" = "$n1_out" ] && [ "$port" -ge "$lo" ] && [ "$port" -le "$hi" ]; then
                        break
                fi
                [ $((IT_DUMP_T - t_remap)) -lt 1000000 ] ||
                        it_fail "remap $((i + 1)): expected $via_n1 at b to follow to $n1_out:$lo-$hi within 1 s, mptctl shows '$r' (before: '$before')"
                sleep 0.01
        done
        changes=$(it_get b "$via_n1" remote_changes)
        [ "$changes" -gt "$changes_before" ] ||
                it_soft_fail "remap $((i + 1)): expected remote_changes of $via_n1 at b to grow, it stayed $changes"
        it_note "remap $((i + 1)): $via_n1 at b followed $before -> $r in $(it_ms $((IT_DUMP_T - t_remap))) ms (remote_changes $changes)"
done
wait "$send_pid" || it_fail "the stream's sender failed: $(cat "$LAB_DIR/stream.send")"
wait "$recv_pid" || it_fail "the stream's receiver failed: $(cat "$LAB_DIR/stream.recv")"
it_snap b t1
sent=$(sed -n 's/^sent=//p' "$LAB_DIR/stream.send")
read -r bytes gap bad < <(sed -n 's/^bytes=\([0-9]*\) gap_ms=\([0-9.]*\) bad=\([0-9]*\)$/\1 \2 \3/p' "$LAB_DIR/stream.recv")
it_note "stream b -> a over ${stream_s} s and 3 remaps: sent $sent bytes, received $bytes, longest gap between reads $gap ms, $bad bytes out of order"
[ "$bytes" = "$sent" ] && [ "$bad" = 0 ] || it_soft_fail "the stream: expected all $sent bytes in order, received $bytes ($bad out of order)"
python3 -c "import sys; sys.exit(0 if float('$gap') <= $gap_max_ms else 1)" ||
        it_soft_fail "the stream: expected no gap longer than $gap_max_ms ms across the remaps, the longest was $gap ms"
for s in s0 s1; do
        d=$(it_delta b t0 t1 tx_bytes "$s")
        [ "$d" -gt 100000 ] || it_soft_fail "$s at b: expected it to carry part of the stream, tx_bytes grew by $d"
done
it_note "server paths during the stream: tx_bytes $(it_deltas b t0 t1 tx_bytes s0 s1)"
for side in a b; do
        eval "was=\$sessions_$side"
        now=$(it_get "$side" "" sessions)
        [ "$now" = "$was" ] || it_soft_fail "at $side: expected no new handshake across the remaps, hs_sessions went from $was to $now"
done

# ---- forgeries from a new address ----
cat > "$LAB_DIR/forge.py" <<'EOF'
import os, socket, struct, sys, time
dev, server, src = sys.argv[1], sys.argv[2], sys.argv[3]
port = 4754
# One genuine datagram of the client, as it arrives at n1 (a packet socket bound to one protocol
# sees only what comes in).
cap = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0800))
cap.bind((dev, 0x0800))  # (Python puts the protocol in network byte order itself)
cap.settimeout(10)
end = time.monotonic() + 10
seen = []
while True:
    if time.monotonic() > end:
        sys.exit(f"no datagram of the client to capture within 10 s; saw {seen[:5]}")
    pkt = cap.recv(65535)
    seen.append(pkt[:32].hex())
    ihl = (pkt[0] & 15) * 4
    if pkt[9] != 17 or socket.inet_ntoa(pkt[16:20]) != server:
        continue
    dport = struct.unpack("!H", pkt[ihl + 2:ihl + 4])[0]
    if dport == port and pkt[ihl + 8] == 0xE3:  # a sealed datagram (not a handshake message)
        payload = pkt[ihl + 8:]
        break
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((src, 5555))
for _ in range(5):
    s.sendto(payload, (server, port))  # a replay from a new address
forged = bytearray(payload)
forged[12:20] = os.urandom(8)  # another counter: the tag no longer fits
forged[-16:] = os.urandom(16)
for _ in range(5):
    s.sendto(bytes(forged), (server, port))
print(f"replayed {len(payload)} bytes 5 times, forged 5")
EOF
it_snap b f0
out=$(lab_exec n1 python3 "$LAB_DIR/forge.py" n1i "$server" "$n1_out" 2>&1) || it_fail "forge.py failed: $out"
it_note "from $n1_out:5555: $out"
sleep 0.5
it_snap b f1
for s in s0 s1; do
        for f in remote remote_changes; do
                v0=$(it_snap_value b f0 "$s" "$f")
                v1=$(it_snap_value b f1 "$s" "$f")
                [ "$v1" = "$v0" ] || it_soft_fail "$s at b: a forged datagram moved it: $f went from $v0 to $v1"
        done
done
replayed=$(($(it_delta b f0 f1 drop.replayed s0) + $(it_delta b f0 f1 drop.replayed s1)))
failed=$(($(it_delta b f0 f1 drop.auth-failed s0) + $(it_delta b f0 f1 drop.auth-failed s1)))
it_note "server: $replayed dropped as replayed, $failed as auth-failed"
[ "$replayed" -ge 5 ] || it_soft_fail "server: expected the 5 replayed copies dropped as replayed, counted $replayed"
[ "$failed" -ge 5 ] || it_soft_fail "server: expected the 5 forged datagrams dropped as auth-failed, counted $failed"

# ---- the client restarts behind a NAT that gives it a new port ----
# Its paths come back with new tokens; the server's paths were silent for DeadTime= (3 s):
# the path through n3 comes from the address it knows, the one through n1 from a new port,
# which only its keepalive can place (on the dead listening path).
lab_stop a
n1_nat 20000-29999
lab_exec n1 conntrack -D -p udp >/dev/null 2>&1 || true
for s in s0 s1; do
        it_expect b "$s" dead 5000 "the client stopped"
done
start_client "client restarted"
r=$(it_get b "$via_n1" remote)
port=${r##*:}
{ [ "${r%:*}" = "$n1_out" ] && [ "$port" -ge 20000 ] && [ "$port" -le 29999 ]; } ||
        it_fail "client restarted: expected $via_n1 at b to take the new mapping $n1_out:20000-29999, mptctl shows '$r'"
it_note "client restarted: $via_n1 at b now sends to $r"
ping_tunnel "after the restart"

it_finish nat
