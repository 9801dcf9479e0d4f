#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mptd refuses bad input with exit status 1 and a clear message, and leaves nothing behind.
#
# Asserts:
#   (a) malformed profiles (unknown key with a did-you-mean hint, bad address, missing Remote=,
#       missing [Tunnel], bad duration, DeadTime= not longer than KeepaliveInterval=, duplicate
#       path name, secure mode without a key, a key in compat mode, a key file everyone can read, a
#       hub's [Peer] sections, not supported yet), each with exactly one mistake: `mptd PROFILE` exits 1 and prints the exact
#       "FILE:LINE: message" (for a missing section, which has no line, "FILE: message") and no
#       other diagnostic; `mptctl check` exits 1 and prints the same diagnostic lines; no TUN
#       device (no link at all) appears in the namespace;
#   (b) a path on an interface that does not exist is waited for (state no-interface with its
#       reason; the log says so), and a path on the tunnel's own interface is a profile error;
#   (c) another socket bound to the path's address and port 4754: "Address already in use", and
#       the TUN device mptd created in the meantime is gone again;
#   (d) not root (setpriv to nobody, no capabilities): a message naming CAP_NET_ADMIN;
#   (e) a second mptd for the same tunnel (same runtime directory): "another mptd already runs";
#       the first keeps working (ping through the tunnel, mptctl answers); a second mptd with
#       another runtime directory in the same namespace stops at the bound port, and on another
#       port finds the first one's TUN device and refuses ("not persistent"), also without
#       disturbing it;
#   (f) a veth named like the tunnel: "exists and is not a TUN device", the veth is left alone;
#   (g) in all these cases the exit status is exactly 1 (not a crash, not a signal).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require python3 ss setpriv timeout
lab_topology 2 none 4
lab_profiles 2 4 4
P="$LAB_DIR/bad"
mkdir -p "$P"

# run_mptd SIDE PROFILE [RUNTIME_DIR] [COMMAND PREFIX...]: runs mptd in the side's namespace
# (never in the host's) with a time limit; RC is its exit status, $LAB_DIR/mptd.err its output.
run_mptd() {
        local side=$1 profile=$2 rundir=${3:-$LAB_DIR/run-bad}
        shift 3 2>/dev/null || shift $#
        RC=0
        MPT_RUNTIME_DIR="$rundir" timeout -k 2 10 ip netns exec "$(lab_ns "$side")" "$@" \
                "$MPTD" --log-target=console "$profile" > "$LAB_DIR/mptd.err" 2>&1 || RC=$?
}

# expect_refusal WHAT "MESSAGE": RC must be exactly 1 and the output must contain MESSAGE.
expect_refusal() {
        [ "$RC" = 1 ] || it_fail "$1: expected mptd to exit with status 1, got $RC; output: $(cat "$LAB_DIR/mptd.err")"
        grep -qF -- "$2" "$LAB_DIR/mptd.err" ||
                it_fail "$1: expected '$2' in mptd's output, got: $(cat "$LAB_DIR/mptd.err")"
        it_note "$1: exit 1: $(grep -F -- "$2" "$LAB_DIR/mptd.err" | head -n 1)"
}

links() {
        lab_exec "$1" ip -o link show | sed 's/^[0-9]*: //; s/[ \t].*//' | sort
}

# ---- (a) malformed profiles ----
# check_profile NAME "EXPECTED DIAGNOSTIC LINE": the file is $P/NAME.conf.
check_profile() {
        local f="$P/$1.conf" want=$2 before after rc=0
        before=$(links a)
        run_mptd a "$f"
        if [ "$RC" != 1 ] || ! grep -qxF -- "$want" "$LAB_DIR/mptd.err"; then
                it_soft_fail "profile $1: expected mptd to exit 1 with the line '$want', got exit $RC and: $(cat "$LAB_DIR/mptd.err")"
        else
                it_note "profile $1: mptd exit 1: $want"
        fi
        after=$(links a)
        [ "$before" = "$after" ] ||
                it_fail "profile $1: expected no new network device, links before: $before; after: $after"

        "$MPTCTL" check "$f" > "$LAB_DIR/check.out" 2> "$LAB_DIR/check.err" || rc=$?
        [ "$rc" = 1 ] || it_soft_fail "profile $1: expected 'mptctl check' to exit 1, got $rc"
        # Each of these profiles has exactly one mistake: one diagnostic, no follow-on errors.
        [ "$(cat "$LAB_DIR/check.err")" = "$want" ] ||
                it_soft_fail "profile $1: expected exactly one diagnostic from 'mptctl check', '$want'; it printed: $(cat "$LAB_DIR/check.err")"
        # The same diagnostics from both (mptd adds a summary line starting with "mptd:").
        grep -v '^mptd: ' "$LAB_DIR/mptd.err" > "$LAB_DIR/mptd.diag" || true
        diff -u "$LAB_DIR/check.err" "$LAB_DIR/mptd.diag" >&2 ||
                it_soft_fail "profile $1: 'mptctl check' and mptd print different diagnostics"
}

cat > "$P/unknown-key.conf" <<EOF
[Tunnel]
Name=lab
Mode=compat
Adress=10.77.0.1/24

[Path]
Name=p0
Interface=pa0
Remote=10.77.100.2
EOF
check_profile unknown-key "$P/unknown-key.conf:4: unknown key 'Adress' in [Tunnel]; did you mean 'Address'?"

cat > "$P/bad-address.conf" <<EOF
[Tunnel]
Name=lab
Mode=compat
Address=10.77.0.1/24

[Path]
Name=p0
Interface=pa0
Remote=10.77.300.2
EOF
check_profile bad-address "$P/bad-address.conf:9: invalid Remote= '10.77.300.2': not an IPv4 or IPv6 address"

cat > "$P/no-remote.conf" <<EOF
[Tunnel]
Name=lab
Mode=compat
Address=10.77.0.1/24

[Path]
Name=p0
Interface=pa0
EOF
check_profile no-remote "$P/no-remote.conf:6: path 'p0' has no Remote= address (only a secure tunnel, Mode=secure, may leave it out and learn the other end's address)"

cat > "$P/no-tunnel.conf" <<EOF
[Path]
Name=p0
Interface=pa0
Remote=10.77.100.2
EOF
check_profile no-tunnel "$P/no-tunnel.conf: no [Tunnel] section"

cat > "$P/bad-duration.conf" <<EOF
[Tunnel]
Name=lab
Mode=compat

[Path]
Name=p0
Interface=pa0
Remote=10.77.100.2
KeepaliveInterval=fast
EOF
check_profile bad-duration \
        "$P/bad-duration.conf:9: invalid KeepaliveInterval= 'fast': expected a duration of 0 or 100ms..3600s (e.g. \"500ms\", \"2s\")"

cat > "$P/dead-time.conf" <<EOF
[Tunnel]
Name=lab
Mode=compat

[Path]
Name=p0
Interface=pa0
Remote=10.77.100.2
KeepaliveInterval=1s
DeadTime=1s
EOF
check_profile dead-time "$P/dead-time.conf:10: path 'p0': DeadTime= must be longer than KeepaliveInterval="

cat > "$P/duplicate-path.conf" <<EOF
[Tunnel]
Name=lab
Mode=compat

[Path]
Name=p0
Interface=pa0
Remote=10.77.100.2

[Path]
Name=p0
Interface=pa1
Remote=10.77.101.2
EOF
# "first at line 4": a path is identified by its [Path] line.
check_profile duplicate-path "$P/duplicate-path.conf:11: duplicate path name 'p0' (first at line 5); set a unique Name="

cat > "$P/no-key.conf" <<EOF
[Tunnel]
Name=lab

[Path]
Name=p0
Interface=pa0
Remote=10.77.100.2
EOF
check_profile no-key "$P/no-key.conf:1: secure mode needs keys: PrivateKey= and PublicKey= (a key pair per end: \`mptctl genkey\`, \`mptctl pubkey\`), or a pre-shared Key= or KeyFile= (\`mptctl genpsk\`); or Mode=compat for original MPT peers"

cat > "$P/compat-key.conf" <<EOF
[Tunnel]
Name=lab
Mode=compat
Key=$(lab_key)

[Path]
Name=p0
Interface=pa0
Remote=10.77.100.2
EOF
check_profile compat-key "$P/compat-key.conf:4: Mode=compat sends everything in the clear and takes no key; remove Key= or use Mode=secure"

lab_key > "$P/public.key"
chmod 644 "$P/public.key"
cat > "$P/public-key.conf" <<EOF
[Tunnel]
Name=lab
KeyFile=public.key

[Path]
Name=p0
Interface=pa0
Remote=10.77.100.2
EOF
check_profile public-key "$P/public-key.conf:3: KeyFile=public.key: '$P/public.key' is readable by everyone; make it private (chmod 600 or 640)"

# A hub ([Peer] sections): checked, and refused as not supported yet, never run as a tunnel with
# one other end.
cat > "$P/hub.conf" <<EOF
[Tunnel]
Name=lab
PrivateKey=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=

[Path]
Name=p0
LocalAddress=10.77.100.1

[Peer]
Name=car-1
PublicKey=ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=
AllowedIPs=10.77.1.0/24
EOF
check_profile hub "$P/hub.conf:9: [Peer] sections (a hub: many peers on one tunnel) are not supported yet: this version checks them but cannot run them"

# ---- (b) missing interface ----
# Paths follow the links: an interface that does not exist (yet) is waited for, not a reason to
# refuse the tunnel. The clear message is the path's state and its reason, in the log and in
# mptctl; the other paths work.
sed 's/^Interface=pa0$/Interface=xyz/' "$LAB_DIR/a.conf" > "$P/no-interface.conf"
mkdir -p "$LAB_DIR/run-wait"
MPT_RUNTIME_DIR="$LAB_DIR/run-wait" ip netns exec "$(lab_ns a)" "$MPTD" --log-target=console \
        "$P/no-interface.conf" > "$LAB_DIR/wait.log" 2>&1 &
wait_pid=$!
LAB_PIDS+=("$wait_pid")
state=
for _ in $(seq 100); do
        state=$(MPT_RUNTIME_DIR="$LAB_DIR/run-wait" "$MPTCTL" --json show lab 2>/dev/null | python3 -c '
import json, sys
p = {x["name"]: x for x in json.load(sys.stdin)[0]["paths"]}
print(p["p0"]["state"], "|", p["p0"]["reason"], "|", p["p1"]["state"])' 2>/dev/null) && break
        sleep 0.1
done
case "$state" in
"no-interface | interface 'xyz' does not exist | "*) it_note "missing interface: waits ($state)" ;;
*) it_fail "missing interface: expected p0 no-interface with its reason, got '$state'; log: $(cat "$LAB_DIR/wait.log")" ;;
esac
grep -qF "path 'p0': no-interface: interface 'xyz' does not exist; waiting." "$LAB_DIR/wait.log" ||
        it_fail "missing interface: expected the waiting message in the log, got: $(cat "$LAB_DIR/wait.log")"
kill -TERM "$wait_pid"
rc=0
wait "$wait_pid" || rc=$?
[ "$rc" = 0 ] || it_fail "missing interface: expected a clean exit on SIGTERM, got $rc"

# A path on the tunnel's own interface is a profile error.
sed 's/^Interface=pa0$/Interface=lab/' "$LAB_DIR/a.conf" > "$P/own-interface.conf"
line=$(grep -n '^Interface=lab$' "$P/own-interface.conf" | cut -d: -f1)
check_profile own-interface "$P/own-interface.conf:$line: path 'p0': Interface=lab is the tunnel's own interface"

# ---- (c) port in use ----
py=$(python3 -c 'import sys; print(sys.executable)')
MPT_ADDR=$(lab_path_addr a 0 4) ip netns exec "$(lab_ns a)" "$py" -c '
import os, socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((os.environ["MPT_ADDR"], 4754))
time.sleep(60)' &
LAB_PIDS+=("$!")
for _ in $(seq 50); do
        lab_exec a ss -Hunl "sport = :4754" | grep -q . && break
        sleep 0.1
done
lab_exec a ss -Hunl "sport = :4754" | grep -q . || it_fail "could not occupy UDP port 4754 for the test"
before=$(links a)
run_mptd a "$LAB_DIR/a.conf"
expect_refusal "port in use" "Address already in use"
[ "$before" = "$(links a)" ] || it_fail "port in use: expected the TUN device to be gone after the refusal, links: $(links a)"
kill "${LAB_PIDS[-1]}"
wait "${LAB_PIDS[-1]}" 2>/dev/null || true

# ---- (d) not root ----
# The profile and the binary must be reachable for nobody; the lab directory is private, and so
# may be the build tree (a clone in mktemp -d or /root): both are copied to a public directory.
chmod 711 "$LAB_DIR"
mkdir -p "$LAB_DIR/pub"
chmod 755 "$LAB_DIR/pub"
cp "$LAB_DIR/a.conf" "$LAB_DIR/pub/a.conf"
cp "$MPTD" "$LAB_DIR/pub/mptd"
chmod 644 "$LAB_DIR/pub/a.conf"
chmod 755 "$LAB_DIR/pub/mptd"
setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$LAB_DIR/pub/mptd" -a -r "$LAB_DIR/pub/a.conf" ||
        it_fail "the copies in $LAB_DIR/pub are not accessible to user nobody"
MPTD=$LAB_DIR/pub/mptd run_mptd a "$LAB_DIR/pub/a.conf" "$LAB_DIR/pub/run" setpriv --reuid=65534 --regid=65534 --clear-groups
expect_refusal "not root" "CAP_NET_ADMIN"

# ---- (e) a second mptd for the same tunnel ----
lab_start a
lab_start b
it_ping a "$(lab_tunnel_addr b 4)" 3
run_mptd a "$LAB_DIR/a.conf" "$LAB_DIR/run-a"
expect_refusal "second mptd, same runtime directory" "another mptd already runs"
lab_ctl a show lab > /dev/null || it_fail "second mptd: expected the first mptd to still answer mptctl"
[ -S "$LAB_DIR/run-a/lab.sock" ] || it_fail "second mptd: expected the first one's control socket to stay"
# With another runtime directory, the same profile stops at the first one's sockets (they are
# bound before the TUN device is touched) ...
run_mptd a "$LAB_DIR/a.conf" "$LAB_DIR/run-other"
expect_refusal "second mptd, other runtime directory" "Address already in use (another mptd or another program uses this port)"
# ... and on another port it reaches the first one's TUN device, which it must not take over.
sed 's/^\[Tunnel\]$/[Tunnel]\nLocalPort=4800/' "$LAB_DIR/a.conf" > "$P/other-port.conf"
run_mptd a "$P/other-port.conf" "$LAB_DIR/run-other"
expect_refusal "second mptd, other runtime directory and port" "not persistent"
it_ping a "$(lab_tunnel_addr b 4)" 3
lab_ctl a show lab > /dev/null || it_fail "second mptd: expected the first mptd to still answer mptctl"
lab_stop a
lab_stop b

# ---- (f) a non-TUN interface with the tunnel's name ----
lab_exec a ip link add lab type veth peer name lab-peer
before=$(lab_exec a ip -d link show lab)
run_mptd a "$LAB_DIR/a.conf"
expect_refusal "veth named like the tunnel" "interface 'lab' exists and is not a TUN device (kind 'veth')"
after=$(lab_exec a ip -d link show lab) || it_fail "veth named like the tunnel: the veth is gone"
[ "$before" = "$after" ] || it_fail "veth named like the tunnel: expected it unchanged; before: $before; after: $after"

it_finish "bad-input"
