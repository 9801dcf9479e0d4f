#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Least privilege.
#
# Asserts:
#   - mptd started as root keeps only CAP_NET_ADMIN (and CAP_NET_RAW on kernels before 5.7) in
#     its effective, permitted and bounding sets, in every thread, no inheritable or ambient
#     capabilities, and NoNewPrivs; mptd's own seccomp filter in every thread, and the data
#     plane's second one in each worker thread (not in a sanitized build, which has none);
#   - the control socket: with --control-group=GID, "nobody" is refused (mptctl says permission
#     denied), "nobody" with that supplementary group is served; and when the socket file is
#     opened up by hand (mode 0666), mptd itself refuses "nobody" (SO_PEERCRED) with a clear
#     message, and still serves root; showconf gives the profile's Key= to root, and to a
#     member of the group only a comment that it is left out; a member of the group may not
#     reload the tunnel ("only root and the user mptd runs as may reload");
#   - mptd runs as an unprivileged user on a persistent multi-queue TUN device created for that
#     user (ip tuntap ... user), with only ambient CAP_NET_ADMIN and CAP_NET_RAW: traffic flows,
#     also after a path binds again to a new address (with the other path taken down, so that
#     the pings can only cross the rebound one, whose packet counters grow at both ends), and it
#     keeps only what it needs;
#   - a parent-death signal asked for by mptd's starter (as nm-mpt-service does) survives
#     --user=nobody: the starter killed, mptd exits;
#   - mptd started as root with --user=nobody sets up as root (its own TUN device, the control
#     socket in a root-owned directory) and then runs as nobody (uid and gid 65534, no
#     supplementary groups) with only CAP_NET_ADMIN in every set and a cut bounding set: traffic
#     flows, a path binds again to a new address, root's mptctl is served, and SIGTERM ends it
#     cleanly (status 0, its TUN device and nftables table gone); --user with an unknown user or
#     root is refused before anything is set up;
#   - as mptd@.service runs it (User=, AmbientCapabilities=, ExecReload=): an unprivileged user
#     with ambient network capabilities creates its own TUN device, reads a profile of mode 640
#     through its group, carries traffic, keeps only what it needs, reloads as that user, and
#     exits cleanly; a profile private to root is refused with what to change.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require setpriv python3
NOBODY=65534
GROUP=4242 # no such group needs to exist: gids are numbers
# nobody must reach the runtime directories and profiles inside the lab directory.
chmod 711 "$LAB_DIR"
# ... and the programs, which may sit in a build tree only root can enter (a clone in mktemp -d
# or /root): copies in a public directory.
mkdir -p "$LAB_DIR/pub"
cp "$MPTD" "$MPTCTL" "$LAB_DIR/pub/"
chmod 755 "$LAB_DIR/pub" "$LAB_DIR/pub/mptd" "$LAB_DIR/pub/mptctl"
MPTD=$LAB_DIR/pub/mptd
MPTCTL=$LAB_DIR/pub/mptctl
setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups test -x "$MPTD" -a -x "$MPTCTL" ||
        it_fail "the copies in $LAB_DIR/pub are not usable by user nobody"

lab_topology 2 none 4
lab_profiles 2 4 4
chmod 644 "$LAB_DIR/a.conf" "$LAB_DIR/b.conf"
lab_start a "$LAB_DIR/a.conf" --control-group="$GROUP"
lab_start b
it_ping a "$(lab_tunnel_addr b 4)" 5

# Capabilities: bit 12 (CAP_NET_ADMIN), and bit 13 (CAP_NET_RAW) on kernels before 5.7, where
# SO_BINDTODEVICE needs it.
want=0000000000001000
IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
if [ "$kmaj" -lt 5 ] || { [ "$kmaj" = 5 ] && [ "$kmin" -lt 7 ]; }; then want=0000000000003000; fi
check_caps() { # pid, description, expected bounding set
        local pid=$1 what=$2 bnd=$3 task st filters
        for task in /proc/"$pid"/task/*; do
                st=$(cat "$task/status") || continue
                for f in "CapEff:$want" "CapPrm:$want" "CapInh:0000000000000000" "CapAmb:0000000000000000" \
                         "CapBnd:$bnd" "NoNewPrivs:1"; do
                        grep -qx "${f%%:*}:[[:space:]]*${f#*:}" <<<"$st" ||
                                it_soft_fail "$what, thread $(basename "$task"): expected ${f%%:*} ${f#*:}, got: $(grep "^${f%%:*}:" <<<"$st")"
                done
                # mptd's own seccomp filters (none in a sanitized build): the process's in every
                # thread, and the data plane's on top in each worker.
                [ -z "${MPT_SANITIZED:-}" ] || continue
                filters=1
                case "$(cat "$task/comm")" in mptd-w*) filters=2 ;; esac
                grep -qx "Seccomp:[[:space:]]*2" <<<"$st" && grep -qx "Seccomp_filters:[[:space:]]*$filters" <<<"$st" ||
                        it_soft_fail "$what, thread $(basename "$task") ($(cat "$task/comm")): expected $filters seccomp filters, got: $(grep "^Seccomp" <<<"$st" | tr '\n' ' ')"
        done
        it_note "$what: $(ls /proc/"$pid"/task | wc -l) threads checked"
}
check_caps "$LAB_PID_a" "mptd as root" "$want"

# The control socket.
sock="$LAB_DIR/run-a/lab.sock"
mode=$(stat -c '%a %g' "$sock")
[ "$mode" = "660 $GROUP" ] || it_soft_fail "expected the control socket to be mode 660, group $GROUP; it is $mode"
as_nobody() {
        setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups "$@"
}
out=$(MPT_RUNTIME_DIR="$LAB_DIR/run-a" as_nobody "$MPTCTL" show lab 2>&1) &&
        it_soft_fail "nobody (not in group $GROUP) was served: $out"
grep -q "permission denied" <<<"$out" || it_soft_fail "expected 'permission denied' for nobody, got: $out"
it_note "nobody: $out"
MPT_RUNTIME_DIR="$LAB_DIR/run-a" setpriv --reuid="$NOBODY" --regid="$NOBODY" --groups="$GROUP" \
        "$MPTCTL" show lab >/dev/null 2>&1 || it_soft_fail "nobody with supplementary group $GROUP was refused"
MPT_RUNTIME_DIR="$LAB_DIR/run-a" setpriv --reuid="$NOBODY" --regid="$GROUP" --clear-groups \
        "$MPTCTL" show lab >/dev/null 2>&1 || it_soft_fail "nobody with primary group $GROUP was refused"
# showconf: the pre-shared key (secure variant: Key= in the profile) goes to root only, never to
# a member of the control group, who gets a comment instead.
if grep -q '^Key=' "$LAB_DIR/a.conf"; then
        conf=$(MPT_RUNTIME_DIR="$LAB_DIR/run-a" setpriv --reuid="$NOBODY" --regid="$NOBODY" --groups="$GROUP" \
                "$MPTCTL" showconf lab 2>&1) || it_soft_fail "showconf as a member of group $GROUP failed: $conf"
        ! grep -q '^Key=' <<<"$conf" || it_soft_fail "showconf gave the key to a member of group $GROUP"
        grep -qF "# Key= is left out" <<<"$conf" || it_soft_fail "showconf for group $GROUP: no comment about Key=: $conf"
        lab_ctl a showconf lab | grep -qxF "$(grep '^Key=' "$LAB_DIR/a.conf")" ||
                it_soft_fail "showconf as root: the profile's Key= is missing"
        it_note "showconf: Key= for root only, a comment for group $GROUP"
fi
# reload rewrites addresses, routes and the firewall: root and mptd's user only.
rc=0
out=$(MPT_RUNTIME_DIR="$LAB_DIR/run-a" setpriv --reuid="$NOBODY" --regid="$NOBODY" --groups="$GROUP" \
        "$MPTCTL" reload lab 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "only root and the user mptd runs as may reload tunnel 'lab'" <<<"$out" ||
        it_soft_fail "reload as a member of group $GROUP: expected exit 1 and permission denied, got $rc: $out"
chmod 666 "$sock"
out=$(MPT_RUNTIME_DIR="$LAB_DIR/run-a" as_nobody "$MPTCTL" show lab 2>&1) &&
        it_soft_fail "with the socket opened up, nobody was served: $out"
grep -q "permission denied: only root, the user mptd runs as and members of group $GROUP may use the control socket of tunnel 'lab'" <<<"$out" ||
        it_soft_fail "expected mptd's own refusal, got: $out"
it_note "nobody, socket mode 0666: $out"
lab_ctl a show lab >/dev/null || it_soft_fail "root was refused"

# mptd as nobody on a TUN device created for nobody.
lab_stop a
lab_exec a ip tuntap add dev lab mode tun user "$NOBODY" multi_queue
mkdir -p "$LAB_DIR/run-nobody"
chown "$NOBODY" "$LAB_DIR/run-nobody"
MPT_RUNTIME_DIR="$LAB_DIR/run-nobody" ip netns exec "$(lab_ns a)" \
        setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups \
        --inh-caps=+net_admin,+net_raw --ambient-caps=+net_admin,+net_raw \
        "$MPTD" --log-target=console -w 2 "$LAB_DIR/a.conf" >>"$LAB_DIR/mptd-a-nobody.log" 2>&1 &
pid=$!
LAB_PIDS+=("$pid")
# wait_answers RUNTIME_DIR PID LOG WHAT: the mptd of PID answers mptctl within 10 s, or the test ends.
wait_answers() {
        for _ in $(seq 100); do
                MPT_RUNTIME_DIR="$1" "$MPTCTL" show lab >/dev/null 2>&1 && return 0
                kill -0 "$2" 2>/dev/null || it_fail "$4 exited: $(tail -n 5 "$3")"
                sleep 0.1
        done
        it_fail "$4 did not answer within 10 s"
}
wait_answers "$LAB_DIR/run-nobody" "$pid" "$LAB_DIR/mptd-a-nobody.log" "mptd as nobody"
[ "$(stat -c %u /proc/"$pid")" = "$NOBODY" ] || it_fail "mptd does not run as nobody"
it_wait_ping a "$(lab_tunnel_addr b 4)" 10 || it_fail "no ping through the tunnel of mptd running as nobody"
lab_exec a ping -c 20 -i 0.05 -W 1 "$(lab_tunnel_addr b 4)" >/dev/null || it_soft_fail "pings lost with mptd as nobody"
# A new address on p0's interface: the path binds a new socket to the device (SO_BINDTODEVICE).
lab_exec a ip addr flush dev pa0
lab_exec a ip addr add 10.77.100.11/24 dev pa0
bound_to() { # RUNTIME_DIR ADDRESS: the mptd there shows a path bound to ADDRESS within 10 s
        for _ in $(seq 100); do
                MPT_RUNTIME_DIR="$1" "$MPTCTL" show lab 2>/dev/null | grep "local: $2:4754" >/dev/null && return 0
                sleep 0.1
        done
        return 1
}
bound_to "$LAB_DIR/run-nobody" 10.77.100.11 || it_soft_fail "mptd as nobody did not bind p0 to its new address: $(tail -n 3 "$LAB_DIR/mptd-a-nobody.log")"
lab_exec a ip route add 10.77.100.0/24 dev pa0 2>/dev/null || true
# Only p0 may carry the pings: p1 out of use (the other end is told and stops using it too).
nobody_ctl() { MPT_RUNTIME_DIR="$LAB_DIR/run-nobody" "$MPTCTL" "$@"; }
nobody_ctl path lab p1 down || it_soft_fail "mptctl path lab p1 down (mptd as nobody) failed"
it_wait b p1 peer-down 3000 || it_soft_fail "b did not take p1 out of use: it is '$(it_get b p1 state)'"
p0_packets() { # SIDE: p0's tx and rx data packets
        python3 -c '
import json, sys
p = [x for x in json.load(sys.stdin)[0]["paths"] if x["name"] == "p0"][0]
print(p["tx_packets"], p["rx_packets"])'
}
read -r a_tx0 a_rx0 < <(nobody_ctl --json show lab | p0_packets)
read -r b_tx0 b_rx0 < <(lab_ctl b --json show lab | p0_packets)
it_wait_ping a "$(lab_tunnel_addr b 4)" 10 || it_soft_fail "no ping through the tunnel after p0 moved to a new address"
lab_exec a ping -c 10 -i 0.05 -W 1 "$(lab_tunnel_addr b 4)" >/dev/null || it_soft_fail "pings lost over the rebound p0"
read -r a_tx1 a_rx1 < <(nobody_ctl --json show lab | p0_packets)
read -r b_tx1 b_rx1 < <(lab_ctl b --json show lab | p0_packets)
it_note "p0 after the rebinding: a sent $((a_tx1 - a_tx0)) and received $((a_rx1 - a_rx0)) data packets, b sent $((b_tx1 - b_tx0)) and received $((b_rx1 - b_rx0))"
[ $((a_tx1 - a_tx0)) -ge 10 ] && [ $((b_rx1 - b_rx0)) -ge 10 ] && [ $((b_tx1 - b_tx0)) -ge 10 ] &&
        [ $((a_rx1 - a_rx0)) -ge 10 ] || it_soft_fail "the pings did not cross p0 after it was bound to its new address"
# Unprivileged, mptd cannot shrink the bounding set (no CAP_SETPCAP); no_new_privs makes that moot.
check_caps "$pid" "mptd as nobody" "$(awk '/^CapBnd:/ {print $2}' /proc/self/status)"
nobody_ctl path lab p1 up || it_soft_fail "mptctl path lab p1 up (mptd as nobody) failed"
kill -TERM "$pid"
wait "$pid" || it_soft_fail "mptd as nobody did not exit cleanly (status $?)"
lab_exec a ip link show lab >/dev/null 2>&1 || it_soft_fail "mptd removed the persistent TUN device it did not create"

# mptd started as root with --user=nobody: set up as root, then nobody.
lab_exec a ip link del lab
for bad in no-such-user-mpt-test root; do
        out=$(ip netns exec "$(lab_ns a)" "$MPTD" --log-target=console --user="$bad" "$LAB_DIR/a.conf" 2>&1) &&
                it_soft_fail "--user=$bad was accepted: $out"
        it_note "--user=$bad: $out"
        lab_exec a ip link show lab >/dev/null 2>&1 && it_soft_fail "--user=$bad refused, but a TUN device was created"
done
lab_start a "$LAB_DIR/a.conf" --user=nobody
pid=$LAB_PID_a
st=$(cat /proc/"$pid"/status)
for f in "Uid:$NOBODY $NOBODY $NOBODY $NOBODY" "Gid:$NOBODY $NOBODY $NOBODY $NOBODY" "Groups:"; do
        got=$(grep "^${f%%:*}:" <<<"$st" | sed 's/^[^:]*:[[:space:]]*//; s/[[:space:]]\+/ /g; s/ $//')
        [ "$got" = "${f#*:}" ] || it_soft_fail "mptd --user=nobody: expected ${f%%:*} '${f#*:}', got '$got'"
done
grep -q "Running as user nobody (uid $NOBODY, gid $NOBODY)" "$LAB_DIR/mptd-a.log" ||
        it_soft_fail "mptd --user=nobody does not say so in its log: $(tail -n 3 "$LAB_DIR/mptd-a.log")"
check_caps "$pid" "mptd --user=nobody" "$want"
it_wait_ping a "$(lab_tunnel_addr b 4)" 10 || it_fail "no ping through the tunnel of mptd --user=nobody"
lab_exec a ping -c 20 -i 0.05 -W 1 "$(lab_tunnel_addr b 4)" >/dev/null || it_soft_fail "pings lost with mptd --user=nobody"
lab_exec a ip addr flush dev pa0
lab_exec a ip addr add 10.77.100.12/24 dev pa0
bound_to "$LAB_DIR/run-a" 10.77.100.12 || it_soft_fail "mptd --user=nobody did not bind p0 to its new address: $(tail -n 3 "$LAB_DIR/mptd-a.log")"
lab_exec a ip route add 10.77.100.0/24 dev pa0 2>/dev/null || true
lab_ctl a path lab p1 down || it_soft_fail "mptctl path lab p1 down (root, mptd --user=nobody) failed"
it_wait b p1 peer-down 3000 || it_soft_fail "b did not take p1 out of use: it is '$(it_get b p1 state)'"
read -r a_tx0 a_rx0 < <(lab_ctl a --json show lab | p0_packets)
it_wait_ping a "$(lab_tunnel_addr b 4)" 10 || it_soft_fail "no ping after p0 moved to a new address (mptd --user=nobody)"
lab_exec a ping -c 10 -i 0.05 -W 1 "$(lab_tunnel_addr b 4)" >/dev/null || it_soft_fail "pings lost over the rebound p0 (--user=nobody)"
read -r a_tx1 a_rx1 < <(lab_ctl a --json show lab | p0_packets)
it_note "mptd --user=nobody, p0 after the rebinding: a sent $((a_tx1 - a_tx0)) and received $((a_rx1 - a_rx0)) data packets"
[ $((a_tx1 - a_tx0)) -ge 10 ] && [ $((a_rx1 - a_rx0)) -ge 10 ] ||
        it_soft_fail "the pings did not cross p0 after it was bound to its new address (--user=nobody)"
had_table=$(lab_exec a nft list tables 2>/dev/null | grep -c "inet mpt-lab" || true)
kill -TERM "$pid"
wait "$pid" || it_soft_fail "mptd --user=nobody did not exit cleanly (status $?)"
lab_exec a ip link show lab >/dev/null 2>&1 && it_soft_fail "mptd --user=nobody left its TUN device behind"
if [ "$had_table" -gt 0 ]; then
        ! lab_exec a nft list tables 2>/dev/null | grep -q "inet mpt-lab" ||
                it_soft_fail "mptd --user=nobody left its nftables table behind"
fi
it_note "mptd --user=nobody: nftables table while running: $had_table, gone after exit"

# The parent-death signal a starter asks for (nm-mpt-service: mptd must not outlive it) survives
# the change of user (the kernel clears it then): the starter killed, mptd --user=nobody exits.
MPT_RUNTIME_DIR="$LAB_DIR/run-a" ip netns exec "$(lab_ns a)" python3 -c '
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
pid = os.fork()
if pid == 0:
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    os.execv(sys.argv[1], sys.argv[1:])
print(pid, flush=True)
time.sleep(3600)' "$MPTD" --log-target=console --user=nobody "$LAB_DIR/a.conf" \
        > "$LAB_DIR/starter.out" 2>> "$LAB_DIR/mptd-a-starter.log" &
starter=$!
LAB_PIDS+=("$starter")
for _ in $(seq 100); do
        [ -s "$LAB_DIR/starter.out" ] && lab_ctl a show lab >/dev/null 2>&1 && break
        sleep 0.1
done
child=$(head -n 1 "$LAB_DIR/starter.out")
[ -n "$child" ] && lab_ctl a show lab >/dev/null 2>&1 || it_fail "mptd --user=nobody under a starter did not come up: $(tail -n 3 "$LAB_DIR/mptd-a-starter.log")"
[ "$(awk '/^Uid:/ { print $2 }' "/proc/$child/status")" = 65534 ] || it_soft_fail "mptd under the starter is not nobody"
kill -KILL "$starter"
wait "$starter" 2>/dev/null || true
gone=0
for _ in $(seq 50); do
        if [ ! -d "/proc/$child" ] || [ "$(ps -o stat= -p "$child" 2>/dev/null | cut -c1)" = Z ]; then
                gone=1
                break
        fi
        sleep 0.1
done
if [ "$gone" = 1 ]; then
        it_note "mptd --user=nobody exited when its starter was killed (parent-death signal kept)"
else
        kill -TERM "$child" 2>/dev/null || true
        it_soft_fail "mptd --user=nobody outlived its starter: the parent-death signal was lost with the user change"
fi

# As mptd@.service runs it: an unprivileged user from the start (User=mpt; here nobody, with group
# $GROUP as mpt's) with the network capabilities as ambient ones (AmbientCapabilities=), creating
# its own TUN device, reading a profile that is root's and readable by its group only, and
# reloading as that user (ExecReload=mptctl reload). A profile private to root: a clear refusal.
lab_exec a ip link show lab >/dev/null 2>&1 && it_fail "the TUN device of the last mptd is still there"
mkdir -p "$LAB_DIR/etc-unit" "$LAB_DIR/run-unit"
cp "$LAB_DIR/a.conf" "$LAB_DIR/etc-unit/lab.conf"
chown "$NOBODY:$GROUP" "$LAB_DIR/run-unit"
chown "0:$GROUP" "$LAB_DIR/etc-unit" "$LAB_DIR/etc-unit/lab.conf"
chmod 750 "$LAB_DIR/etc-unit"
chmod 600 "$LAB_DIR/etc-unit/lab.conf"
as_unit() { # (exec: in the background, $! is mptd)
        MPT_RUNTIME_DIR="$LAB_DIR/run-unit" exec ip netns exec "$(lab_ns a)" \
                setpriv --reuid="$NOBODY" --regid="$GROUP" --clear-groups \
                --inh-caps=+net_admin,+net_raw --ambient-caps=+net_admin,+net_raw "$@"
}
rc=0
out=$(as_unit "$MPTD" --log-target=console "$LAB_DIR/etc-unit/lab.conf" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "cannot read $LAB_DIR/etc-unit/lab.conf: Permission denied (mptd runs as user nobody: let it read the profile" <<<"$out" ||
        it_soft_fail "a profile private to root, mptd as the unit's user: expected exit 1 and a clear reason, got $rc: $out"
it_note "profile private to root: $out"
chmod 640 "$LAB_DIR/etc-unit/lab.conf"
# The private key in a key file next to it: private to root, refused with what to change; root's
# and readable by the group, used.
if grep -q '^PrivateKey=' "$LAB_DIR/etc-unit/lab.conf"; then
        sed -n 's/^PrivateKey=//p' "$LAB_DIR/etc-unit/lab.conf" > "$LAB_DIR/etc-unit/lab.key"
        chmod 600 "$LAB_DIR/etc-unit/lab.key"
        sed -i 's/^PrivateKey=.*/PrivateKeyFile=lab.key/' "$LAB_DIR/etc-unit/lab.conf"
        rc=0
        out=$(as_unit "$MPTD" --log-target=console "$LAB_DIR/etc-unit/lab.conf" 2>&1) || rc=$?
        [ "$rc" = 1 ] && grep -qF "PrivateKeyFile=lab.key: cannot open '$LAB_DIR/etc-unit/lab.key': Permission denied (this runs as uid $NOBODY: mptd@.service runs mptd as user mpt, which reads key files through its group: chown root:mpt and chmod 640)" <<<"$out" ||
                it_soft_fail "a key file private to root, mptd as the unit's user: expected exit 1 and a clear reason, got $rc: $out"
        chgrp "$GROUP" "$LAB_DIR/etc-unit/lab.key"
        chmod 640 "$LAB_DIR/etc-unit/lab.key"
        it_note "key file private to root: refused with what to change; mode 640 with the group: used"
fi
as_unit "$MPTD" --log-target=console -w 2 "$LAB_DIR/etc-unit/lab.conf" >>"$LAB_DIR/mptd-a-unit.log" 2>&1 &
pid=$!
LAB_PIDS+=("$pid")
wait_answers "$LAB_DIR/run-unit" "$pid" "$LAB_DIR/mptd-a-unit.log" "mptd as the unit's user"
grep -q "Created TUN device 'lab'" "$LAB_DIR/mptd-a-unit.log" ||
        it_soft_fail "mptd as the unit's user did not create its TUN device: $(tail -n 5 "$LAB_DIR/mptd-a-unit.log")"
it_wait_ping a "$(lab_tunnel_addr b 4)" 10 || it_fail "no ping through the tunnel of mptd as the unit's user"
lab_exec a ping -c 20 -i 0.05 -W 1 "$(lab_tunnel_addr b 4)" >/dev/null || it_soft_fail "pings lost with mptd as the unit's user"
check_caps "$pid" "mptd as the unit's user" "$(awk '/^CapBnd:/ {print $2}' /proc/self/status)"
out=$(as_unit "$MPTCTL" reload lab 2>&1) || it_soft_fail "mptctl reload as the unit's user (ExecReload=) failed: $out"
it_note "reload as the unit's user: $out"
kill -TERM "$pid"
wait "$pid" || it_soft_fail "mptd as the unit's user did not exit cleanly (status $?)"
lab_exec a ip link show lab >/dev/null 2>&1 && it_soft_fail "the TUN device of mptd as the unit's user outlived it"

it_finish "least privilege"
