#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The cipher of secure mode (secure mode whatever MPT_LAB_MODE says): AES-256-GCM when both ends
# can do it, else ChaCha20-Poly1305. b first runs as on a CPU without AES instructions
# (MPT_DEBUG_CIPHER=chacha20-poly1305), then normally. Skipped (77) without AES instructions.
#
# Asserts:
#   - with b unable: both ends send ChaCha20-Poly1305 ("cipher" in mptctl show), pings cross;
#   - b restarted able: both ends switch to AES-256-GCM, pings cross both ways and TCP works;
#   - in both cases no datagram was refused for its version (bad-version 0 on every path).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

export MPT_LAB_MODE=secure
lab_init
it_require python3 iperf3
grep -qw aes /proc/cpuinfo || lab_skip "no AES instructions on this CPU"
lab_topology 2 none 4
lab_profiles 2 4 4
lab_start a
MPT_DEBUG_CIPHER=chacha20-poly1305 lab_start b
it_ping a "$(lab_tunnel_addr b 4)" 3

# wait_cipher SIDE CIPHER: the side's sending cipher becomes CIPHER within 5 s.
wait_cipher() {
        local c=
        for _ in $(seq 50); do
                c=$(lab_json "$1" 't["cipher"]')
                [ "$c" = "$2" ] && return 0
                sleep 0.1
        done
        it_fail "$1 sends with '$c', expected '$2'"
}
bad_versions() {
        lab_json "$1" 'sum(x["drops"]["bad-version"] for x in t["paths"])'
}

wait_cipher a chacha20-poly1305
wait_cipher b chacha20-poly1305
it_ping b "$(lab_tunnel_addr a 4)" 3
it_note "b without AES: both ends send chacha20-poly1305"
for side in a b; do
        [ "$(bad_versions "$side")" = 0 ] || it_fail "$side refused datagrams for their version"
done

lab_stop b
lab_start b
it_wait_ping a "$(lab_tunnel_addr b 4)" 5 || it_fail "no ping a -> b after b's restart"
wait_cipher a aes-256-gcm
wait_cipher b aes-256-gcm
it_ping a "$(lab_tunnel_addr b 4)" 5
it_ping b "$(lab_tunnel_addr a 4)" 5
mbit=$(lab_iperf_tcp "$(lab_tunnel_addr b 4)" 2)
it_note "both with AES: aes-256-gcm at both ends; TCP $mbit Mbit/s"
it_lt 10 "$mbit" || it_fail "expected more than 10 Mbit/s TCP over AES-256-GCM, measured $mbit"
for side in a b; do
        [ "$(bad_versions "$side")" = 0 ] || it_fail "$side refused datagrams for their version"
done
it_pass "secure-cipher"
