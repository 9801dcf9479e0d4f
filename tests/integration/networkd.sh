#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# End to end with a real systemd-networkd (252) in a network namespace:
#
#   networkd.sh GENERATOR      (MPTD and MPTCTL from the environment, as for tests/lib/netns.sh)
#
#  1. Namespace a runs systemd-networkd by hand (tests/integration/networkd-in-ns.sh: private
#     configuration directories bind-mounted in its own mount namespace, read-only /sys, a
#     private dbus-daemon for networkctl), namespace b runs mptd with a native profile; two veth
#     pairs are the two paths.
#  2. mpt-nd.netdev (example style: MultiQueue=yes, [X-MPT] and two [X-MPTPath]) and
#     mpt-nd.network are dropped into /etc/systemd/network and networkd is reloaded: networkd
#     creates the multi-queue TUN device and gives it its address.
#  3. mpt-netdev-generator runs in networkd's mount namespace (networkd's real search path)
#     into a temporary directory; the ExecStart= of its drop-in is run as it is (with the
#     build's mptd, through the MPT_GENERATOR_MPTD test hook).
#  4. ping and iperf3 through the tunnel; both paths carried traffic.
#  5. A broken .netdev: the generator says why and writes no unit for it.
#  6. Removing the tunnel: the files are deleted and networkd reloaded (networkd then forgets
#     the device but, like for any .netdev, does not delete it), then the device is deleted
#     with "networkctl delete". mptd notices that its device is gone and exits with status 0
#     ("TUN device ... was removed"); the generator no longer writes the unit.
#
# Needs root, /dev/net/tun, iproute2, iperf3, dbus-daemon, nsenter and systemd-networkd; exits 77
# when one is missing. Everything it creates (namespaces, processes, by PID, mount points on the
# host, the temporary directory) is removed on exit.
set -euo pipefail

GEN=${1:?usage: networkd.sh GENERATOR}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../lib/netns.sh
. "$SRC/tests/lib/netns.sh"
# shellcheck source=../lib/private-bus.sh
. "$SRC/tests/lib/private-bus.sh"

NETWORKD=/lib/systemd/systemd-networkd
TUN=mpt-nd
CREATED_DIRS=()

for c in iperf3 dbus-daemon dbus-send nsenter setpriv networkctl python3; do
        command -v "$c" >/dev/null || lab_skip "needs $c"
done
[ -x "$NETWORKD" ] || lab_skip "needs $NETWORKD"
id systemd-network >/dev/null 2>&1 || lab_skip "needs the systemd-network user"
[ -x "$GEN" ] || lab_die "no generator at $GEN"

lab_init

cleanup() {
        local rc=$? d
        set +e
        # lab_cleanup kills the processes and deletes the namespaces and the temporary
        # directory; the status decides whether it shows the logs.
        lab_cleanup "$rc"
        # Mount points this test had to create on the host (the mounts themselves lived and
        # died in networkd's private mount namespace).
        for d in "${CREATED_DIRS[@]}"; do
                rmdir "$d" 2>/dev/null || true
        done
        exit "$rc"
}
trap cleanup EXIT

T=$LAB_DIR
export T

step() {
        lab_log "== $*"
}

# Creates a mount point on the host if it is missing, and remembers to remove it.
mount_point() {
        if [ ! -d "$1" ]; then
                mkdir -p "$1"
                CREATED_DIRS+=("$1")
        fi
}

# Polls a command (at most $1 tenths of a second).
wait_for() {
        local n=$1
        shift
        for _ in $(seq "$n"); do
                "$@" >/dev/null 2>&1 && return 0
                sleep 0.1
        done
        return 1
}

in_networkd() { # the network and mount namespace of networkd
        nsenter -t "$NDPID" -n -m "$@"
}

# networkd owns its name on the private bus (networkctl list alone only warns while it does not).
networkd_on_bus() {
        DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/dbusrun/system_bus_socket" dbus-send --system --print-reply \
                --dest=org.freedesktop.DBus / org.freedesktop.DBus.GetNameOwner string:org.freedesktop.network1
}

networkctl_nd() {
        in_networkd env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/dbusrun/system_bus_socket" networkctl "$@"
}

tunnel_json() { # SIDE PYTHON-EXPR: `t` is the tunnel, `p` its paths by name
        lab_ctl "$1" --json show "$TUN" | python3 -c '
import json, sys
t = json.load(sys.stdin)[0]
p = {x["name"]: x for x in t["paths"]}
print(eval(sys.argv[1]))' "$2"
}

paths_up() {
        [ "$(tunnel_json "$1" "' '.join(x['state'] for x in t['paths'])")" = "up up" ]
}

run_generator() { # OUTDIR: in networkd's mount namespace, with networkd's default search path
        rm -rf "$1"
        mkdir -p "$1/normal" "$1/early" "$1/late"
        in_networkd env -u SYSTEMD_SCOPE SYSTEMD_IN_INITRD=0 MPT_GENERATOR_MPTD="$MPTD" \
                "$GEN" "$1/normal" "$1/early" "$1/late" 2> "$1/messages" ||
                lab_die "the generator failed: $(cat "$1/messages")"
}

# ---- 1. namespaces, bus, networkd ----
step "topology: a (networkd) and b (native profile), two paths"
lab_topology 2 none 4
lab_key_init

mkdir -p "$T/etc-network" "$T/run-network" "$T/lib-network" "$T/netif" "$T/dbusrun" "$T/dbus-system.d"
chown systemd-network:systemd-network "$T/netif"
# On a normal system /dev/net/tun is 0666; in some containers it is root-only, and networkd
# (running as systemd-network) could not create the device. See networkd-in-ns.sh.
if ! setpriv --reuid=systemd-network --regid=systemd-network --clear-groups test -r /dev/net/tun -a -w /dev/net/tun; then
        mknod -m 0666 "$T/dev-net-tun" c 10 200 || lab_skip "systemd-network cannot open /dev/net/tun, and no node can be made"
fi
mount_point /run/systemd/network
mount_point /run/dbus

# networkd's policy (org.freedesktop.network1.conf) comes from /usr/share/dbus-1/system.d.
private_bus_config "$T/dbusrun/system_bus_socket" > "$T/dbus.conf"
dbus-daemon --config-file="$T/dbus.conf" --nofork > "$T/dbus.log" 2>&1 &
LAB_PIDS+=($!)
wait_for 100 test -S "$T/dbusrun/system_bus_socket" || lab_die "the private dbus-daemon did not start"

SYSTEMD_LOG_LEVEL=debug SYSTEMD_LOG_TARGET=console \
        ip netns exec "$(lab_ns a)" "$SRC/tests/integration/networkd-in-ns.sh" > "$T/networkd.log" 2>&1 &
NDPID=$!
LAB_PIDS+=("$NDPID")
wait_for 100 networkd_on_bus || lab_die "networkd is not on the bus: $(tail -n 20 "$T/networkd.log")"
wait_for 100 networkctl_nd list || lab_die "networkd does not answer: $(tail -n 20 "$T/networkd.log")"

# ---- 2. the .netdev and .network, networkd creates and addresses the device ----
step "mpt-nd.netdev and mpt-nd.network into /etc/systemd/network, networkctl reload"
cat > "$T/etc-network/mpt-nd.netdev" <<EOF
# As data/examples/mpt0.netdev, with the lab's interfaces and addresses.
[NetDev]
Name=$TUN
Kind=tun
Description=mpt tunnel made by networkd

[Tun]
MultiQueue=yes
PacketInfo=no

[X-MPT]
# Secure mode: the key file lies next to the .netdev (relative name), private to root.
KeyFile=mpt-nd.key
Workers=2
ReorderWindow=1024
ReorderMaxDelay=100ms

[X-MPTPath]
Name=p0
Interface=pa0
Remote=$(lab_path_addr b 0 4)
KeepaliveInterval=200ms

[X-MPTPath]
Name=p1
Interface=pa1
Remote=$(lab_path_addr b 1 4)
KeepaliveInterval=200ms
EOF
lab_key > "$T/etc-network/mpt-nd.key"
chmod 600 "$T/etc-network/mpt-nd.key"
cat > "$T/etc-network/mpt-nd.network" <<EOF
[Match]
Name=$TUN

[Link]
RequiredForOnline=no

[Network]
Address=$(lab_tunnel_addr a 4)/24
ConfigureWithoutCarrier=yes
EOF
networkctl_nd reload
wait_for 100 lab_exec a ip link show dev "$TUN" || lab_die "networkd did not create $TUN: $(tail -n 20 "$T/networkd.log")"
details=$(lab_exec a ip -d link show dev "$TUN")
for want in "tun type tun" "pi off" "vnet_hdr off" "multi_queue" "persist on"; do
        grep -q "$want" <<<"$details" || lab_die "$TUN is not what the .netdev says ('$want' missing): $details"
done
wait_for 100 sh -c "ip -n $(lab_ns a) -4 addr show dev $TUN | grep -q '$(lab_tunnel_addr a 4)/24'" ||
        lab_die "networkd did not give $TUN its address"
# networkd ignores our sections silently: no warning about them.
if grep -E "mpt-nd.netdev:[0-9]+: .*(Unknown|Ignoring)" "$T/networkd.log"; then
        lab_die "networkd complained about mpt-nd.netdev"
fi

# ---- 3. the generator, and mptd from its ExecStart= ----
step "mpt-netdev-generator in networkd's mount namespace"
run_generator "$T/gen"
[ ! -s "$T/gen/messages" ] || lab_die "the generator complained: $(cat "$T/gen/messages")"
dropin="$T/gen/normal/mptd@$TUN.service.d/50-netdev.conf"
link="$T/gen/normal/sys-subsystem-net-devices-mpt\\x2dnd.device.wants/mptd@$TUN.service"
[ -f "$dropin" ] || lab_die "no drop-in: $(find "$T/gen/normal")"
[ -L "$link" ] || lab_die "no symlink $link: $(find "$T/gen/normal")"
exec_line=$(grep '^ExecStart=.' "$dropin" | tail -n 1)
exec_line=${exec_line#ExecStart=}
[ "$exec_line" = "$MPTD --log-target=journal --netdev /etc/systemd/network/mpt-nd.netdev" ] ||
        lab_die "unexpected ExecStart=$exec_line"
read -ra exec_argv <<<"$exec_line"

step "peer b: mptd with a native profile"
cat > "$T/b.conf" <<EOF
[Tunnel]
Name=$TUN
Key=$(lab_key)
Address=$(lab_tunnel_addr b 4)/24
Workers=2

[Path]
Name=p0
Interface=pb0
Remote=$(lab_path_addr a 0 4)
KeepaliveInterval=200ms

[Path]
Name=p1
Interface=pb1
Remote=$(lab_path_addr a 1 4)
KeepaliveInterval=200ms
EOF
lab_start b "$T/b.conf"

step "a: ${exec_argv[*]}"
mkdir -p "$T/run-a"
# As the unit would run it (no journal here: mptd falls back to standard error).
MPT_RUNTIME_DIR="$T/run-a" nsenter -t "$NDPID" -n -m "${exec_argv[@]}" > "$T/mptd-a.log" 2>&1 &
MPTD_A=$!
LAB_PIDS+=("$MPTD_A")
wait_for 100 lab_ctl a show "$TUN" || lab_die "mptd (a) does not answer: $(tail -n 20 "$T/mptd-a.log")"
grep -q "Attached to TUN device '$TUN'" "$T/mptd-a.log" || lab_die "mptd did not attach to networkd's device"
details=$(lab_exec a ip -d link show dev "$TUN")
grep -q "numqueues 2" <<<"$details" || lab_die "mptd did not attach 2 queues: $details"
grep -q "pi off" <<<"$details" || lab_die "attaching changed the device: $details"

# ---- 4. traffic ----
step "traffic over both paths"
wait_for 100 paths_up a || lab_die "paths of a not up: $(lab_ctl a show "$TUN")"
wait_for 100 paths_up b || lab_die "paths of b not up: $(lab_ctl b show "$TUN")"
lab_exec a ping -c 5 -i 0.2 -W 2 "$(lab_tunnel_addr b 4)" > "$T/ping.log" || lab_die "ping failed: $(cat "$T/ping.log")"
mbit=$(lab_iperf_tcp "$(lab_tunnel_addr b 4)" 3)
lab_log "  iperf3 through the tunnel: $mbit Mbit/s"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 1 else 1)" "$mbit" || lab_die "iperf3: only $mbit Mbit/s"
for p in p0 p1; do
        tx=$(tunnel_json a "p['$p']['tx_packets']")
        rx=$(tunnel_json b "p['$p']['rx_packets']")
        lab_log "  path $p: a sent $tx packets, b received $rx"
        [ "$tx" -gt 100 ] && [ "$rx" -gt 100 ] || lab_die "path $p carried no traffic (tx $tx, rx $rx)"
done
state=$(networkctl_nd --no-pager --no-legend list "$TUN" | awk '{print $4 "/" $5}')
lab_log "  networkctl: $TUN is $state"

# ---- 5. a broken .netdev ----
step "a broken .netdev: a message, no unit"
cat > "$T/etc-network/mpt-bad.netdev" <<EOF
[NetDev]
Name=mpt-bad
Kind=tun

[Tun]
MultiQueue=no

[X-MPT]
Mode=compat
[X-MPTPaths]
Interface=pa0
Remote=$(lab_path_addr b 0 4)
EOF
run_generator "$T/gen2"
expected="mpt-netdev-generator: /etc/systemd/network/mpt-bad.netdev:6: MultiQueue=no: mptd needs MultiQueue=yes (it attaches one queue per worker thread)
mpt-netdev-generator: /etc/systemd/network/mpt-bad.netdev:10: unknown section [X-MPTPaths]; did you mean [X-MPTPath]?
mpt-netdev-generator: /etc/systemd/network/mpt-bad.netdev: no [X-MPTPath] section: a tunnel needs at least one path
mpt-netdev-generator: /etc/systemd/network/mpt-bad.netdev: 3 problems; no unit for this tunnel (check it with: mptctl check /etc/systemd/network/mpt-bad.netdev)."
if [ "$(cat "$T/gen2/messages")" != "$expected" ]; then
        diff -u <(echo "$expected") "$T/gen2/messages" >&2 || true
        lab_die "the generator's messages for the broken file differ"
fi
[ ! -e "$T/gen2/normal/mptd@mpt-bad.service.d" ] || lab_die "a unit was written for the broken file"
[ -f "$T/gen2/normal/mptd@$TUN.service.d/50-netdev.conf" ] || lab_die "the good tunnel lost its unit"
# mptd --netdev says the same.
rc=0
in_networkd "$MPTD" --check --netdev /etc/systemd/network/mpt-bad.netdev > "$T/check.log" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "mpt-bad.netdev has 3 errors" "$T/check.log" || lab_die "mptd --check: $(cat "$T/check.log")"
rm "$T/etc-network/mpt-bad.netdev"

# ---- 6. removing the tunnel ----
step "remove the files, networkctl reload, networkctl delete $TUN: mptd stops cleanly"
rm "$T/etc-network/mpt-nd.netdev" "$T/etc-network/mpt-nd.network"
networkctl_nd reload
sleep 1
# networkd forgets the file but does not delete the device, so mptd carries on until it is.
lab_exec a ip link show dev "$TUN" >/dev/null || lab_log "  (networkd deleted $TUN on reload)"
kill -0 "$MPTD_A" 2>/dev/null || lab_die "mptd exited before the device was deleted: $(tail -n 5 "$T/mptd-a.log")"
networkctl_nd delete "$TUN" >"$T/delete.out" 2>&1 || lab_die "networkctl delete $TUN failed: $(cat "$T/delete.out")"
for _ in $(seq 100); do
        kill -0 "$MPTD_A" 2>/dev/null || break
        sleep 0.1
done
rc=0
wait "$MPTD_A" || rc=$?
[ "$rc" = 0 ] || lab_die "mptd exited with status $rc after its device was deleted: $(tail -n 5 "$T/mptd-a.log")"
grep -q "TUN device '$TUN' was removed, shutting down." "$T/mptd-a.log" ||
        lab_die "mptd did not say why it stopped: $(tail -n 5 "$T/mptd-a.log")"
! lab_exec a ip link show dev "$TUN" >/dev/null 2>&1 || lab_die "$TUN still exists"
[ ! -e "$T/run-a/$TUN.sock" ] || lab_die "mptd left its control socket behind"
run_generator "$T/gen3"
[ -z "$(find "$T/gen3/normal" -mindepth 1)" ] || lab_die "the generator still writes units: $(find "$T/gen3/normal")"
# networkd itself is fine and did not complain about our sections at any time.
networkctl_nd list >/dev/null || lab_die "networkd stopped answering"

lab_log "PASS: networkd creates the TUN from the .netdev, the generated ExecStart= runs the tunnel, removal stops it"
