#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tshark.sh [TUNNEL_FAMILY(4|6|46)] [PATH_FAMILY(4|6)]: what mpt puts on the wire, as Wireshark
# decodes it. One path, captured on pb0 in namespace b while pinging through the tunnel, decoded
# with UDP port 4754 as GRE (RFC 8086 GRE-in-UDP). Default: an IPv4+IPv6 tunnel over IPv4.
#
# In secure mode (the default; MPT_LAB_MODE=compat for the other) it asserts instead that every
# datagram is sealed (a transport message of version 2: first byte E3), none decodes as GRE, and
# ping's payload is not visible.
#
# Asserts (compat mode):
#   - every outer frame of port 4754 is IPv<PATH_FAMILY>/UDP/GRE;
#   - the pings decode as ...:udp:gre:ip:icmp (IPv4 tunnel) and ...:udp:gre:ipv6:icmpv6 (IPv6
#     tunnel): at least one echo request and reply per ping;
#   - keepalives are on the wire in both directions: a GRE header without flags whose payload
#     starts with the control byte 0xA1 (not an IP packet), protocol type 0x0800 when the tunnel
#     has an IPv4 address, else 0x86DD; at KeepaliveInterval=200ms a 6 s capture holds many.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

tfam=${1:-46}
pfam=${2:-4}
case "$tfam" in 4 | 6 | 46) ;; *) lab_die "usage: $0 4|6|46 4|6" ;; esac
case "$pfam" in 4 | 6) ;; *) lab_die "usage: $0 4|6|46 4|6" ;; esac

lab_init
it_require tshark python3
lab_topology 1 none "$pfam"
lab_profiles 1 "$tfam" "$pfam" "" 'KeepaliveInterval=200ms'
lab_start a
lab_start b

cap="$LAB_DIR/pb0.pcapng"
ip netns exec "$(lab_ns b)" tshark -i pb0 -a duration:6 -w "$cap" > "$LAB_DIR/tshark.out" 2> "$LAB_DIR/tshark.err" &
tpid=$!
LAB_PIDS+=("$tpid")
for _ in $(seq 100); do
        grep -q "Capturing on" "$LAB_DIR/tshark.err" && break
        kill -0 "$tpid" 2>/dev/null || it_fail "tshark exited: $(cat "$LAB_DIR/tshark.err")"
        sleep 0.1
done
grep -q "Capturing on" "$LAB_DIR/tshark.err" || it_fail "tshark did not start capturing within 10 s: $(cat "$LAB_DIR/tshark.err")"
# "Capturing on" comes a moment before dumpcap really captures.
sleep 1

fams=$tfam
[ "$tfam" = 46 ] && fams="4 6"
count=4
for f in $fams; do
        it_ping a "$(lab_tunnel_addr b "$f")" "$count"
done
rc=0
wait "$tpid" || rc=$?
[ "$rc" = 0 ] || it_fail "tshark failed (exit $rc): $(cat "$LAB_DIR/tshark.err")"

tshark -r "$cap" -d udp.port==4754,gre -Y 'udp.port == 4754' -T fields -E separator=/t \
        -e frame.protocols -e ip.src -e ipv6.src -e udp.payload > "$LAB_DIR/decoded.txt" 2> "$LAB_DIR/decode.err" ||
        it_fail "tshark -r failed: $(cat "$LAB_DIR/decode.err")"

if [ "${MPT_LAB_MODE:-handshake}" != compat ]; then
        # Secure mode: nothing of the inner traffic may be visible. Every datagram is a sealed
        # transport message of version 2 (first byte E3), none decodes as GRE carrying IP or a keepalive,
        # and the bytes of ping's payload pattern (0x10 0x11 ... 0x1f) appear nowhere.
        python3 - "$LAB_DIR/decoded.txt" "$count" "$(lab_path_addr a 0 "$pfam")" "$(lab_path_addr b 0 "$pfam")" <<'EOF' ||
import ipaddress, sys
from collections import Counter
lines = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
count = int(sys.argv[2])
addr_a, addr_b = (str(ipaddress.ip_address(x)) for x in sys.argv[3:5])
ok = True
def fail(msg):
    global ok
    ok = False
    print("  " + msg, file=sys.stderr)
by_src = Counter()
for l in lines:
    payload = l[3] if len(l) > 3 else ""
    src = str(ipaddress.ip_address(l[1] or l[2]))
    by_src[src] += 1
    # (With the handshake, its messages e4..e7 may be in the capture too; they carry no traffic.)
    if payload[0:2] not in ("e3", "e4", "e5", "e6", "e7"):
        fail("expected every datagram to start with e3 (secure version 2) or e4..e7 (handshake), got %s from %s" % (payload[0:8], src))
    if ":gre:ip" in l[0] or payload[8:10] == "a1" and payload[0:4] == "0000":
        fail("a datagram from %s decodes as plain GRE: %s" % (src, l[0]))
    if "101112131415161718191a1b1c1d1e1f" in payload:
        fail("ping's payload pattern is visible in a datagram from %s" % src)
print("  sealed datagrams by source: %s" % dict(by_src), file=sys.stderr)
# Keepalives every 200 ms in 6 s and the pings: plenty from each end.
for who in (addr_a, addr_b):
    if by_src[who] < 5 + count:
        fail("expected at least %d datagrams from %s, found %d" % (5 + count, who, by_src[who]))
sys.exit(0 if ok else 1)
EOF
                it_fail "the capture shows more than sealed datagrams (see above)"
        it_pass "tshark $tfam/$pfam (secure)"
        exit 0
fi

python3 - "$LAB_DIR/decoded.txt" "$tfam" "$pfam" "$count" \
        "$(lab_path_addr a 0 "$pfam")" "$(lab_path_addr b 0 "$pfam")" <<'EOF' || it_fail "the capture does not show what was expected (see above)"
import ipaddress, re, sys
from collections import Counter
lines = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
tfam, pfam, count = sys.argv[2], sys.argv[3], int(sys.argv[4])
addr_a, addr_b = (str(ipaddress.ip_address(x)) for x in sys.argv[5:7])
outer = "eth:ethertype:%s:udp:gre" % ("ip" if pfam == "4" else "ipv6")
ok = True
def fail(msg):
    global ok
    ok = False
    print("  " + msg, file=sys.stderr)

protos = Counter(l[0] for l in lines)
print("  frames on UDP port 4754, by decoded protocols:", file=sys.stderr)
for p, n in protos.most_common():
    print("    %5d  %s" % (n, p), file=sys.stderr)

for l in lines:
    if not l[0].startswith(outer):
        fail("expected every frame to start with %s, got %s" % (outer, l[0]))
        break

want = []
if tfam in ("4", "46"):
    want.append((":udp:gre:ip:icmp", re.compile(r":udp:gre:ip:icmp(:|$)")))
if tfam in ("6", "46"):
    want.append((":udp:gre:ipv6:icmpv6", re.compile(r":udp:gre:ipv6:icmpv6(:|$)")))
for name, rx in want:
    n = sum(1 for l in lines if rx.search(l[0]))
    # One path: every request and every reply crosses pb0 (IPv6 adds neighbour discovery).
    if n < 2 * count:
        fail("expected at least %d frames decoded as ...%s (%d pings, request and reply), found %d"
             % (2 * count, name, count, n))

ka_proto = "0800" if tfam in ("4", "46") else "86dd"
ka = Counter()
for l in lines:
    payload = l[3] if len(l) > 3 else ""
    # A keepalive: 0xA1 where the inner packet would start, so tshark finds no inner address. A
    # data frame carries a sequence number there, whose first byte may be 0xA1 too (the
    # sequence space starts at a random point), and tshark shows its inner addresses as well.
    addrs = [x for f in l[1:3] for x in f.split(",") if x]
    if payload[8:10] == "a1" and len(addrs) == 1:
        src = str(ipaddress.ip_address(addrs[0]))
        if payload[0:4] != "0000" or payload[4:8] != ka_proto:
            fail("keepalive from %s: expected GRE flags 0000 and protocol %s, got %s %s"
                 % (src, ka_proto, payload[0:4], payload[4:8]))
        ka[src] += 1
print("  keepalives (GRE + 0xA1) by source: %s" % dict(ka), file=sys.stderr)
for who in (addr_a, addr_b):
    if ka[who] < 5:
        fail("expected at least 5 keepalives from %s in the 6 s capture (interval 200ms), found %d" % (who, ka[who]))
sys.exit(0 if ok else 1)
EOF

it_pass "tshark $tfam/$pfam"
