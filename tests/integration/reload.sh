#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Live reload (mptd(8), RELOADING) under a TCP load through the tunnel: three unshaped paths,
# Scheduler=weighted (a weight decides the shares whatever the load).
#
# Asserts:
#   1. `mptctl reload lab` after a.conf gained p0 Weight=3, MTU=1400 and Scheduler=learned, and
#      a drop-in (a.conf.d/50-route.conf) a Route=: it prints what changed (p0's Weight=, Route=, MTU=, Scheduler=); p0's
#      weight is 3, the scheduler learned, the route is in a's table on the tunnel device, the
#      device's MTU is 1400, and showconf has all three. (Compat mode, the -plain variant, has
#      no learned scheduler: the scheduler stays.)
#   2. SIGHUP after a.conf made p2 a backup (Weight=0) and the drop-in went: the route is gone,
#      p2 is a backup and carries no data from a (tx_bytes growth 0 over 1 s under the load).
#   3. Refusals leave everything as it runs, exit 1 and name FILE:LINE: LocalPort= changed
#      ("LocalPort= cannot change while the tunnel runs"; set in a drop-in, the drop-in's
#      FILE:LINE), a path renamed ("paths cannot be
#      renamed or reordered"), a syntax error (the file's own FILE:LINE error); after each, p0's
#      weight is still 3 and p2 still a backup.
#   3b. The last path (p2) removed from both profiles and reloaded at both ends: the reload
#      says "removed path 'p2'", both ends have 2 paths, and p0 and p1 go on carrying the load.
#   4. `mptctl syncconf lab FILE` with another file (p0 Weight=1, the rest as at start, p2
#      included) applies it ("added path 'p2'"), b reloads its profile with p2: p0's weight is 1,
#      the scheduler weighted again, p2 is up at both ends within 5 s and carries data again.
#   5. The TCP stream (16 s at 50 Mbit/s) lived through all of it: iperf3 completed, at 20 Mbit/s
#      or more.
#   6. Reloading an unchanged file says "nothing changed", and so does syncconf of what
#      `mptctl showconf` prints; the same key from KeyFile= instead of Key= (PrivateKeyFile=
#      instead of PrivateKey=, with the handshake) is applied ("Key=, KeyFile=") and shown;
#      another key is refused ("the keys cannot change while the tunnel runs").

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require iperf3 python3
lab_log "reload: mptd applies a changed profile in place, under load"
lab_topology 3 none 4
lab_profiles 3 4 4 'Scheduler=weighted' 'KeepaliveInterval=200ms\nDeadTime=2s'
cp "$LAB_DIR/a.conf" "$LAB_DIR/a-start.conf"
lab_start a
lab_start b
b_tun=$(lab_tunnel_addr b 4)
it_wait_ping a "$b_tun" 10 || it_fail "no ping through the tunnel"

# set_tunnel_key FILE KEY VALUE: adds KEY=VALUE to the [Tunnel] section (after Name=lab).
set_tunnel_key() {
        sed -i "/^Name=lab\$/a $2=$3" "$1"
}
# expect_refusal WANT: `mptctl reload lab` at a exits 1 with WANT on stderr.
expect_refusal() {
        local rc=0
        lab_ctl a reload lab > "$LAB_DIR/reload.out" 2> "$LAB_DIR/reload.err" || rc=$?
        [ "$rc" = 1 ] || it_fail "reload: expected exit status 1 (refused), got $rc: $(cat "$LAB_DIR/reload.out" "$LAB_DIR/reload.err")"
        grep -qF -- "$1" "$LAB_DIR/reload.err" ||
                it_fail "reload: expected '$1' on stderr, got: $(cat "$LAB_DIR/reload.err")"
        it_note "refused: $(tail -n 1 "$LAB_DIR/reload.err")"
}
weight_of() {
        lab_json a "p['$1']['weight']"
}

it_load_start "$b_tun" 16 -b 50M
sleep 2

# ---- 1. mptctl reload ----
it_set_path_key a p0 Weight 3
# (Compat mode has no learned scheduler: no feedback.)
secure=1
[ "${MPT_LAB_MODE:-handshake}" = compat ] && secure=0
((secure)) && sed -i 's/^Scheduler=weighted$/Scheduler=learned/' "$LAB_DIR/a.conf"
# The route comes from a drop-in (a.conf.d/, next to the profile).
mkdir -p "$LAB_DIR/a.conf.d"
printf '[Tunnel]\nRoute=10.99.0.0/24\n' > "$LAB_DIR/a.conf.d/50-route.conf"
set_tunnel_key "$LAB_DIR/a.conf" MTU 1400
out=$(lab_ctl a reload lab) || it_fail "mptctl reload lab failed: $out"
it_note "reload: $out"
for want in "p0: Weight=" "Route=" "MTU=" $( ((secure)) && echo "Scheduler=" ); do
        grep -qF "$want" <<<"$out" || it_fail "mptctl reload: expected '$want' among the changes, got: $out"
done
[ "$(weight_of p0)" = 3 ] || it_fail "after the reload p0's weight is $(weight_of p0), expected 3"
((!secure)) || [ "$(lab_json a "t['scheduler']")" = learned ] || it_fail "after the reload the scheduler is $(lab_json a "t['scheduler']"), expected learned"
lab_exec a ip route show 10.99.0.0/24 | grep -q "dev lab" ||
        it_fail "after the reload a has no route to 10.99.0.0/24 on lab: $(lab_exec a ip route)"
mtu=$(lab_exec a cat /sys/class/net/lab/mtu)
[ "$mtu" = 1400 ] || it_fail "after the reload lab's MTU is $mtu, expected 1400"
conf=$(lab_ctl a showconf lab)
for want in "Weight=3" "Route=10.99.0.0/24" "MTU=1400"; do
        grep -qxF "$want" <<<"$conf" || it_fail "showconf after the reload: expected a line '$want', got: $conf"
done

# ---- 2. SIGHUP ----
rm "$LAB_DIR/a.conf.d/50-route.conf"
it_set_path_key a p2 Weight 0
kill -HUP "$LAB_PID_a"
for _ in $(seq 50); do
        lab_exec a ip route show 10.99.0.0/24 | grep -q . || break
        sleep 0.1
done
lab_exec a ip route show 10.99.0.0/24 | grep -q . && it_fail "SIGHUP: the route to 10.99.0.0/24 is still there"
grep -q "Received SIGHUP, reloading" "$LAB_DIR/mptd-a.log" || it_fail "SIGHUP: mptd did not log the reload"
[ "$(lab_json a "p['p2']['backup']")" = True ] || it_fail "SIGHUP: p2 is not a backup after Weight=0"
sleep 0.3
it_snap a h0
sleep 1
it_snap a h1
d=$(it_delta a h0 h1 tx_bytes p2)
it_note "SIGHUP: p2 (backup now) sent $d bytes in 1 s"
[ "$d" -lt 20000 ] || it_fail "SIGHUP: p2 is a backup but sent $d bytes in 1 s of load"

# ---- 3. refusals ----
cp "$LAB_DIR/a.conf" "$LAB_DIR/a-good.conf"
set_tunnel_key "$LAB_DIR/a.conf" LocalPort 4999
line=$(grep -n '^LocalPort=' "$LAB_DIR/a.conf" | cut -d: -f1)
expect_refusal "$LAB_DIR/a.conf:$line: LocalPort= cannot change while the tunnel runs"
cp "$LAB_DIR/a-good.conf" "$LAB_DIR/a.conf"
printf '[Tunnel]\nLocalPort=4999\n' > "$LAB_DIR/a.conf.d/60-port.conf"
expect_refusal "$LAB_DIR/a.conf.d/60-port.conf:2: LocalPort= cannot change while the tunnel runs"
rm "$LAB_DIR/a.conf.d/60-port.conf"
sed -i 's/^Name=p1$/Name=px/' "$LAB_DIR/a.conf"
expect_refusal "paths cannot be renamed or reordered while the tunnel runs"
cp "$LAB_DIR/a-good.conf" "$LAB_DIR/a.conf"
echo "Weight=lots" >> "$LAB_DIR/a.conf"
line=$(wc -l < "$LAB_DIR/a.conf")
expect_refusal "$LAB_DIR/a.conf:$line:"
cp "$LAB_DIR/a-good.conf" "$LAB_DIR/a.conf"
[ "$(weight_of p0)" = 3 ] || it_fail "after the refusals p0's weight is $(weight_of p0), expected 3"
[ "$(lab_json a "p['p2']['backup']")" = True ] || it_fail "after the refusals p2 is no longer a backup"

# ---- 3b. the last path removed on both ends, live ----
drop_p2() { # FILE: the profile without its [Path] p2 (the last one)
        python3 - "$1" <<'EOF'
import sys
f = sys.argv[1]
text = open(f).read()
i = text.index("[Path]\nName=p2")
open(f, "w").write(text[:i])
EOF
}
cp "$LAB_DIR/b.conf" "$LAB_DIR/b-start.conf"
drop_p2 "$LAB_DIR/a.conf"
drop_p2 "$LAB_DIR/b.conf"
out=$(lab_ctl a reload lab) || it_fail "reload without p2 at a failed: $out"
it_note "remove: a: $out"
grep -qF "removed path 'p2'" <<<"$out" || it_fail "reload without p2: expected \"removed path 'p2'\", got: $out"
out=$(lab_ctl b reload lab) || it_fail "reload without p2 at b failed: $out"
for side in a b; do
        n=$(lab_json "$side" "len(t['paths'])")
        [ "$n" = 2 ] || it_fail "after removing p2 $side has $n paths, expected 2"
done
sleep 0.3
it_snap a r0
sleep 1
it_snap a r1
d=$(( $(it_delta a r0 r1 tx_bytes p0) + $(it_delta a r0 r1 tx_bytes p1) ))
[ "$d" -gt 1000000 ] || it_fail "after removing p2 the other paths sent only $d bytes in 1 s of load"
it_note "remove: p0 and p1 carried $d bytes in 1 s"
cp "$LAB_DIR/a-good.conf" "$LAB_DIR/a.conf"

# ---- 4. syncconf (p2 comes back) ----
cp "$LAB_DIR/a-start.conf" "$LAB_DIR/other.conf"
chmod 600 "$LAB_DIR/other.conf"
sed -i "/^Name=p0\$/a Weight=1" "$LAB_DIR/other.conf"
out=$(lab_ctl a syncconf lab "$LAB_DIR/other.conf") || it_fail "mptctl syncconf failed: $out"
it_note "syncconf: $out"
[ "$(weight_of p0)" = 1 ] || it_fail "after syncconf p0's weight is $(weight_of p0), expected 1"
[ "$(lab_json a "t['scheduler']")" = weighted ] || it_fail "after syncconf the scheduler is $(lab_json a "t['scheduler']"), expected weighted"
grep -qF "added path 'p2'" <<<"$out" || it_fail "syncconf with p2 again: expected \"added path 'p2'\", got: $out"
cp "$LAB_DIR/b-start.conf" "$LAB_DIR/b.conf"
out=$(lab_ctl b reload lab) || it_fail "reload with p2 again at b failed: $out"
it_expect a p2 up 5000 "after it came back"
it_expect b p2 up 5000 "after it came back"
sleep 0.3
it_snap a s0
sleep 1
it_snap a s1
d=$(it_delta a s0 s1 tx_bytes p2)
[ "$d" -gt 100000 ] || it_fail "after syncconf p2 sent only $d bytes in 1 s of load"

# ---- 5. the stream lived ----
it_load_wait
it_note "TCP through all of it: $IT_LOAD_MBIT Mbit/s"
python3 -c "import sys; sys.exit(0 if $IT_LOAD_MBIT >= 20 else 1)" ||
        it_fail "the TCP stream through the reloads made only $IT_LOAD_MBIT Mbit/s"

# ---- 6. nothing changed ----
out=$(lab_ctl a syncconf lab "$LAB_DIR/other.conf") || it_fail "mptctl syncconf (unchanged) failed: $out"
[ "$out" = "lab: nothing changed" ] || it_fail "syncconf of the running configuration: expected 'lab: nothing changed', got '$out'"
# showconf's output is the running configuration: applied, it changes nothing.
lab_ctl a showconf lab > "$LAB_DIR/shown.conf"
chmod 600 "$LAB_DIR/shown.conf"
out=$(lab_ctl a syncconf lab "$LAB_DIR/shown.conf") || it_fail "mptctl syncconf of showconf's output failed: $out"
[ "$out" = "lab: nothing changed" ] || it_fail "syncconf of showconf's output: expected 'lab: nothing changed', got '$out'"
# The same key from a KeyFile= instead of Key= (with the handshake: PrivateKeyFile= instead of
# PrivateKey=): no new key, but the configuration says where it comes from now (secure mode
# only: compat mode has no key). Another private key is refused: the keys change only with a
# restart.
if ((secure)); then
        k=Key
        grep -q '^PrivateKey=' "$LAB_DIR/shown.conf" && k=PrivateKey
        grep "^$k=" "$LAB_DIR/shown.conf" | cut -d= -f2- > "$LAB_DIR/a.key"
        chmod 600 "$LAB_DIR/a.key"
        cp "$LAB_DIR/shown.conf" "$LAB_DIR/other-key.conf"
        sed -i "s|^$k=.*|${k}File=$LAB_DIR/a.key|" "$LAB_DIR/shown.conf"
        out=$(lab_ctl a syncconf lab "$LAB_DIR/shown.conf") || it_fail "mptctl syncconf with ${k}File= failed: $out"
        [ "$out" = "lab: applied $k=, ${k}File=" ] || it_fail "syncconf with the same key in ${k}File=: got '$out'"
        lab_ctl a showconf lab | grep -qxF "${k}File=$LAB_DIR/a.key" || it_fail "showconf after ${k}File=: no ${k}File= line"
        sed -i "s|^$k=.*|$k=$("$MPTCTL" genkey)|" "$LAB_DIR/other-key.conf"
        rc=0
        out=$(lab_ctl a syncconf lab "$LAB_DIR/other-key.conf" 2>&1) || rc=$?
        [ "$rc" != 0 ] && [[ "$out" == *"the keys cannot change while the tunnel runs"* ]] ||
                it_fail "syncconf with another $k=: expected a refusal, got exit $rc: $out"
fi
it_wait_ping a "$b_tun" 5 || it_fail "no ping through the tunnel after the reloads"
lab_log "reload: OK"
