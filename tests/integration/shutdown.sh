#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Clean shutdown, and what mptd does with a TUN device that exists before it starts.
#
# Asserts:
#   1. A TUN device mptd created ("device": "created"): SIGTERM at a and SIGINT at b each end
#      mptd with status 0 within 3 s; the device and the control socket file are gone.
#   2. A persistent multi-queue TUN device (`ip tuntap add dev lab mode tun multi_queue`) that
#      already has the tunnel's IPv6 address: mptd attaches ("device": "attached"), adds the
#      IPv4 address and the routes (Route=), the tunnel carries traffic. After SIGTERM (status
#      0) the device still exists with its TUN flags unchanged; the IPv4 address and the routes
#      that mptd added are gone; the IPv6 address, which mptd did not add, is still there. mptd
#      can attach to the device again.
#   3. A persistent TUN device whose flags do not fit (single queue; packet information;
#      a TAP device; virtio-net header): mptd exits 1 with a message saying what does not
#      match, and `ip -d link show` and `ip addr show` of the device are unchanged.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3 timeout
lab_topology 2 none 4
lab_profiles 2 46 4 'Route=10.88.0.0/16\nRoute=fd88::/64'

# stop_side SIDE SIGNAL: signals mptd and waits; it must exit 0 within 3 s.
stop_side() {
        local side=$1 sig=$2 pid rc=0 start
        eval "pid=\$LAB_PID_$side"
        start=$(it_now)
        kill "-$sig" "$pid"
        for _ in $(seq 30); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && it_fail "mptd at $side: still running 3 s after SIG$sig"
        wait "$pid" || rc=$?
        eval "LAB_PID_$side="
        [ "$rc" = 0 ] || it_fail "mptd at $side: expected exit status 0 after SIG$sig, got $rc"
        it_note "mptd at $side: SIG$sig -> exit 0 after $(it_elapsed "$start") s"
}

# has_route PREFIX: is there a route to PREFIX on lab in namespace a?
has_route() {
        local fam=-4
        case "$1" in *:*) fam=-6 ;; esac
        lab_exec a ip "$fam" route show "$1" dev lab | grep -q .
}

has_link() {
        lab_exec "$1" ip link show dev "$2" >/dev/null 2>&1
}

# ---- 1. a created device ----
lab_start a
lab_start b
got=$(lab_json a 't["device"]')
[ "$got" = created ] || it_fail "fresh start: expected \"device\": \"created\", got '$got'"
it_ping a "$(lab_tunnel_addr b 4)" 3
for side in a b; do
        has_link "$side" lab || it_fail "mptd at $side: expected a TUN device 'lab' while running"
        [ -S "$LAB_DIR/run-$side/lab.sock" ] || it_fail "mptd at $side: expected the control socket $LAB_DIR/run-$side/lab.sock"
done
stop_side a TERM
stop_side b INT
for side in a b; do
        if has_link "$side" lab; then
                it_fail "after shutdown at $side: expected the TUN device 'lab' to be gone, it exists"
        fi
        [ ! -e "$LAB_DIR/run-$side/lab.sock" ] || it_fail "after shutdown at $side: expected the control socket to be removed"
done

# ---- 2. a persistent multi-queue device ----
lab_exec a ip tuntap add dev lab mode tun multi_queue
lab_exec a ip addr add "$(lab_tunnel_addr a 6)/64" dev lab nodad
# The TUN flags from `ip -d link` ("tun type tun pi off vnet_hdr off multi_queue ... persist on").
# Not the rest of the line: the kernel itself switches a TUN device's addrgenmode from eui64 to
# random when it first goes up.
tun_flags() {
        lab_exec a ip -d link show dev lab | grep -o 'tun type .* persist [a-z]*' || true
}
flags_before=$(tun_flags)
it_note "persistent device: $flags_before"
lab_start a
lab_start b
got=$(lab_json a 't["device"]')
[ "$got" = attached ] || it_fail "persistent device: expected \"device\": \"attached\", got '$got'"
lab_exec a ip -4 addr show dev lab | grep -qF "inet $(lab_tunnel_addr a 4)/24" ||
        it_fail "persistent device: expected mptd to add $(lab_tunnel_addr a 4)/24: $(lab_exec a ip addr show dev lab)"
for r in 10.88.0.0/16 fd88::/64; do
        has_route "$r" || it_fail "persistent device: expected a route to $r on lab"
done
it_ping a "$(lab_tunnel_addr b 4)" 3
it_ping a "$(lab_tunnel_addr b 6)" 3
# Let b hear a keepalive from this a first, so that it recognises the restart below at once
# (a peer that restarts before its first keepalive arrived costs a few stale packets).
for _ in $(seq 40); do
        [ "$(lab_json b 't["peer_session"]')" != 00000000 ] && break
        sleep 0.1
done
stop_side a TERM
has_link a lab || it_fail "persistent device: expected 'lab' to still exist after mptd exited"
addrs=$(lab_exec a ip addr show dev lab)
if grep -qF "inet $(lab_tunnel_addr a 4)/" <<< "$addrs"; then
        it_fail "persistent device: expected the address mptd added ($(lab_tunnel_addr a 4)) to be removed: $addrs"
fi
grep -qF "inet6 $(lab_tunnel_addr a 6)/64" <<< "$addrs" ||
        it_fail "persistent device: expected the address mptd did not add ($(lab_tunnel_addr a 6)) to stay: $addrs"
for r in 10.88.0.0/16 fd88::/64; do
        if has_route "$r"; then
                it_fail "persistent device: expected the route to $r that mptd added to be removed"
        fi
done
flags_after=$(tun_flags)
[ "$flags_before" = "$flags_after" ] ||
        it_fail "persistent device: expected its TUN flags unchanged; before: $flags_before; after: $flags_after"
lab_start a
got=$(lab_json a 't["device"]')
[ "$got" = attached ] || it_fail "persistent device, second start: expected \"device\": \"attached\", got '$got'"
# b sees a restarted peer: restart.sh checks that more closely; here it only has to work.
it_wait_ping a "$(lab_tunnel_addr b 4)" 3 ||
        it_fail "persistent device, second start: expected ping through the tunnel to work within 3 s"
it_note "second start: first answered ping after $IT_WAITED s"
it_ping a "$(lab_tunnel_addr b 4)" 3
stop_side a TERM
has_link a lab || it_fail "persistent device: expected 'lab' to still exist after the second mptd exited"
lab_exec a ip link del lab

# ---- 3. persistent devices that do not fit ----
# mismatch "IP TUNTAP OPTIONS" "EXPECTED MESSAGE"
mismatch() {
        local before after rc=0
        lab_exec a ip tuntap add dev lab $1
        before=$(lab_exec a ip -d link show dev lab; lab_exec a ip addr show dev lab)
        MPT_RUNTIME_DIR="$LAB_DIR/run-a" timeout -k 2 10 ip netns exec "$(lab_ns a)" \
                "$MPTD" --log-target=console "$LAB_DIR/a.conf" > "$LAB_DIR/mismatch.err" 2>&1 || rc=$?
        [ "$rc" = 1 ] || it_fail "TUN device '$1': expected mptd to exit 1, got $rc: $(cat "$LAB_DIR/mismatch.err")"
        grep -qF -- "$2" "$LAB_DIR/mismatch.err" ||
                it_fail "TUN device '$1': expected '$2' in mptd's output, got: $(cat "$LAB_DIR/mismatch.err")"
        it_note "TUN device '$1': exit 1: $(grep -F -- "$2" "$LAB_DIR/mismatch.err")"
        after=$(lab_exec a ip -d link show dev lab; lab_exec a ip addr show dev lab) ||
                it_fail "TUN device '$1': expected it to still exist after mptd refused it"
        [ "$before" = "$after" ] || it_fail "TUN device '$1': expected it unchanged; before: $before; after: $after"
        lab_exec a ip link del lab
}
mismatch "mode tun" "TUN device 'lab' does not match: it is not multi-queue"
mismatch "mode tun multi_queue pi" "TUN device 'lab' does not match: it has packet information enabled"
mismatch "mode tap multi_queue" "TUN device 'lab' does not match: it is a TAP device"

# ---- 4. a persistent device with a virtio-net header (VNetHeader=yes) fits: it is used with its
# offloads, and its flags stay as they were ----
lab_exec a ip tuntap add dev lab mode tun multi_queue vnet_hdr
flags_before=$(tun_flags)
lab_start a
lab_start b
got=$(lab_json a 't["device"] + " " + str(t["vnet_hdr"]) + " " + t["offloads"]')
case "$got" in
"attached True csum tso4 tso6"*) it_note "virtio-net header device: $got" ;;
*) it_fail "virtio-net header device: expected it attached with TSO offloads, got '$got'" ;;
esac
it_ping a "$(lab_tunnel_addr b 4)" 3
stop_side a TERM
[ "$flags_before" = "$(tun_flags)" ] ||
        it_fail "virtio-net header device: expected its TUN flags unchanged; before: $flags_before; after: $(tun_flags)"
lab_exec a ip link del lab

it_pass "shutdown"
