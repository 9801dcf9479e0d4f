#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Two ends of a secure tunnel with different keys (secure mode whatever MPT_LAB_MODE says). Two
# IPv4 paths, keepalives every 200 ms.
#
# Asserts:
#   - no ping crosses the tunnel in either direction (5 of 5 lost each way);
#   - both ends count auth-failed on every path (their keepalives and pings at least), receive
#     no keepalive (keepalives_rx 0) and deliver nothing (rx_packets 0, TUN rx_packets 0);
#   - no end learns an epoch of the other (peer_epochs 0), and the paths are declared dead;
#   - with the same key at b (restarted), pings cross both ways: it was the key.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

export MPT_LAB_MODE=secure
lab_init
it_require python3
lab_topology 2 none 4
lab_profiles 2 4 4 "" "KeepaliveInterval=200ms"
cp "$LAB_DIR/b.conf" "$LAB_DIR/b-right.conf"
other=$("$MPTCTL" genkey)
sed -i "s|^Key=.*|Key=$other|" "$LAB_DIR/b.conf"
[ "$(grep -c "^Key=$other\$" "$LAB_DIR/b.conf")" = 1 ] || it_fail "setup: could not give b another key"
lab_start a
lab_start b

out=$(lab_exec a ping -n -q -c 5 -i 0.2 -W 1 "$(lab_tunnel_addr b 4)" 2>&1) || true
case "$out" in *" 0 received"*) it_note "ping a -> b: none answered" ;; *) it_fail "ping a -> b with mismatched keys: expected none answered, got: $out" ;; esac
out=$(lab_exec b ping -n -q -c 5 -i 0.2 -W 1 "$(lab_tunnel_addr a 4)" 2>&1) || true
case "$out" in *" 0 received"*) it_note "ping b -> a: none answered" ;; *) it_fail "ping b -> a with mismatched keys: expected none answered, got: $out" ;; esac

for side in a b; do
        for p in p0 p1; do
                got=$(lab_json "$side" "(p['$p']['drops']['auth-failed'], p['$p']['keepalives_rx'], p['$p']['rx_packets'], p['$p']['state'])")
                it_note "$side $p: (auth-failed, keepalives_rx, rx_packets, state) = $got"
                python3 -c '
import ast, sys
af, ka, rx, state = ast.literal_eval(sys.argv[1])
sys.exit(0 if af >= 5 and ka == 0 and rx == 0 and state == "dead" else 1)' "$got" ||
                        it_soft_fail "$side $p: expected auth-failed >= 5, no keepalive or data received and state dead, got $got"
        done
        [ "$(lab_json "$side" 't["peer_epochs"]')" = 0 ] || it_soft_fail "$side learned an epoch of the other end"
        n=$(lab_exec "$side" cat /sys/class/net/lab/statistics/rx_packets)
        [ "$n" = 0 ] || it_soft_fail "$side: the TUN device received $n packets"
done

# The same key: the tunnel works.
lab_stop b
lab_start b "$LAB_DIR/b-right.conf"
it_wait_ping a "$(lab_tunnel_addr b 4)" 10 || it_fail "with the same key: no ping a -> b within 10 s"
it_ping a "$(lab_tunnel_addr b 4)" 3
it_ping b "$(lab_tunnel_addr a 4)" 3
it_finish "secure-mismatch"
