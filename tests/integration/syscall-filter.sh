#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The shipped unit's SystemCallFilter= lets mptd work. PID 1 here is not systemd, so the unit
# cannot run for real; instead mptd runs under strace, at both ends, through every code path that
# makes system calls of its own, and every system call it makes must be in the set that the unit's
# SystemCallFilter= lines allow (expanded by systemd-analyze syscall-filter). Each path is shown to
# have happened before the traced set counts:
#
#   1. root, profile files, both ends traced: start-up; traffic (pings of 1400 bytes); mptctl
#      show (text, JSON, dump), path down and up (a: admin-down then up; b: peer-down then up); a
#      link down and up (a: link-down then up); a new local address on p1 at a (a rebinds p1:
#      its "local" is the new address), which b follows (its "remote" for p1 is the new address,
#      remote_changes grew) and writes into its nftables table (the table names the address);
#      the TUN device deleted at a (a says so and exits with status 0); b stopped (status 0);
#   2. a as user nobody with only CAP_NET_ADMIN and CAP_NET_RAW (ambient), on a persistent TUN
#      device made for nobody: start-up, pings, a new address on p0 (rebound), SIGTERM (status 0,
#      the device left in place);
#   3. a with --netdev on a .netdev file, attached to a persistent device: pings, then the
#      device deleted (a exits with status 0).
# And mptd's own seccomp filters (sandbox.h): installed in each run, and none of the calls a
# worker thread made was refused by the data plane's list.
# (A profile reload joins this list once mptd has one.)

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

# A sanitizer runtime makes system calls of its own, and LeakSanitizer cannot run under ptrace.
[ -z "${MPT_SANITIZED:-}" ] || lab_skip "mptd is built with -Db_sanitize=$MPT_SANITIZED"
lab_init
it_require strace systemd-analyze setpriv nft python3
unit=$(dirname "$(dirname "$(dirname "$MPTD")")")/data/mptd@.service
[ -f "$unit" ] || it_fail "no $unit next to $MPTD"
NOBODY=65534

# The allowed set: the allow-list groups minus the deny-list groups, as systemd computes it.
expand() { # groups (nested groups are expanded too) and names
        local g x
        for g in "$@"; do
                case "$g" in
                @*) for x in $(systemd-analyze syscall-filter "$g" | sed -n 's/^    \([@a-z0-9_-]*\)$/\1/p'); do
                            if [ "${x#@}" != "$x" ]; then expand "$x"; else echo "$x"; fi
                    done ;;
                *) echo "$g" ;;
                esac
        done | sort -u
}
allow=() deny=()
while IFS= read -r line; do
        v=${line#SystemCallFilter=}
        if [ "${v#\~}" != "$v" ]; then deny+=(${v#\~}); else allow+=($v); fi
done < <(grep '^SystemCallFilter=' "$unit")
[ ${#allow[@]} -gt 0 ] || it_fail "$unit has no SystemCallFilter= allow list"
comm -23 <(expand "${allow[@]}") <(expand "${deny[@]}") > "$LAB_DIR/allowed"
it_note "the unit allows $(wc -l < "$LAB_DIR/allowed") system calls (${allow[*]} minus ${deny[*]})"

# Programs nobody can run (the build tree may sit where only root can enter).
chmod 711 "$LAB_DIR"
mkdir -p "$LAB_DIR/pub"
cp "$MPTD" "$MPTCTL" "$LAB_DIR/pub/"
chmod 755 "$LAB_DIR/pub" "$LAB_DIR/pub/mptd" "$LAB_DIR/pub/mptctl"
real_mptd=$LAB_DIR/pub/mptd

# traced NAME: a wrapper that runs mptd under strace into $LAB_DIR/strace-NAME.out.
traced() {
        cat > "$LAB_DIR/mptd-$1" <<EOS
#!/bin/sh
exec strace -f -qq -o "$LAB_DIR/strace-$1.out" "$real_mptd" "\$@"
EOS
        chmod 755 "$LAB_DIR/mptd-$1"
        printf '%s\n' "$LAB_DIR/mptd-$1"
}
# mptd_of PID: mptd, the child of strace PID (wait for strace, kill mptd: strace would detach).
mptd_of() {
        local c
        c=$(cat /proc/"$1"/task/*/children 2>/dev/null | awk '{print $1}')
        [ -n "$c" ] || it_fail "cannot find mptd under strace (pid $1)"
        printf '%s\n' "$c"
}
# field SIDE PATH KEY: a path's field from the dump.
field() {
        lab_ctl "$1" show lab dump | awk -F'\t' -v p="name=$2" -v k="$3=" '$1 == "path" && $2 == p {
                for (i = 3; i <= NF; i++) if (index($i, k) == 1) { print substr($i, length(k) + 1) } }'
}
wait_field() { # SIDE PATH KEY VALUE TIMEOUT WHAT
        local end=$((SECONDS + $5))
        while [ "$SECONDS" -le "$end" ]; do
                [ "$(field "$1" "$2" "$3")" = "$4" ] && return 0
                sleep 0.05
        done
        it_fail "$6: expected $3 of $2 at $1 to be '$4', it is '$(field "$1" "$2" "$3")'"
}
peer4=$(lab_tunnel_addr b 4)
pings() { # WHAT
        it_wait_ping a "$peer4" 20 || it_fail "$1: no ping through the tunnel"
        lab_exec a ping -n -q -c 20 -i 0.02 -s 1400 -W 2 "$peer4" >"$LAB_DIR/ping.out" 2>&1 ||
                it_fail "$1: pings lost: $(tail -n 2 "$LAB_DIR/ping.out")"
}

# ---- 1. root, both ends traced ----
lab_topology 2 none 4
lab_profiles 2 4 4
MPTD=$(traced a) lab_start a
MPTD=$(traced b) lab_start b
pings "start-up"
lab_ctl a show lab >/dev/null
lab_ctl a --json show lab >/dev/null
lab_ctl a show lab dump >/dev/null
lab_ctl a path lab p0 down >/dev/null
wait_field a p0 state admin-down 5 "mptctl path down"
wait_field b p0 state peer-down 5 "the other end of mptctl path down"
lab_ctl a path lab p0 up >/dev/null
wait_field a p0 state up 5 "mptctl path up"
wait_field b p0 state up 5 "the other end of mptctl path up"
lab_exec a ip link set pa1 down
wait_field a p1 state link-down 5 "ip link set pa1 down"
lab_exec a ip link set pa1 up
wait_field a p1 state up 10 "ip link set pa1 up"
it_note "mptctl requests, a path down and up, a link down and up: done"
# A new address on p1's interface (same subnet; the old one goes): a rebinds, b follows.
old=$(lab_path_addr a 1 4)
new=${old%.*}.11
port=$(lab_json a "t['local_port']")
changes0=$(field b p1 remote_changes)
lab_exec a sysctl -qw net.ipv4.conf.pa1.promote_secondaries=1
lab_exec a ip addr add "$new/24" dev pa1
lab_exec a ip addr del "$old/24" dev pa1
wait_field a p1 local "$new:$port" 5 "a new address on pa1"
pings "after the rebinding"
wait_field b p1 remote "$new:$port" 5 "the other end of the rebinding"
[ "$(field b p1 remote_changes)" -gt "$changes0" ] || it_fail "b's remote_changes of p1 did not grow"
lab_exec b nft list table inet mpt-lab > "$LAB_DIR/nft-b.txt" 2>&1 || it_fail "b has no nftables table: $(cat "$LAB_DIR/nft-b.txt")"
grep -qF "$new" "$LAB_DIR/nft-b.txt" || it_fail "b's nftables table does not name the new remote $new: $(cat "$LAB_DIR/nft-b.txt")"
it_note "p1 rebound at a to $new; b follows it and its nftables table names it"
# The TUN device deleted under a's mptd: it says so and exits cleanly.
mptd_a=$(mptd_of "$LAB_PID_a")
lab_exec a ip link del lab
rc=0
wait "$LAB_PID_a" || rc=$?
LAB_PID_a=
[ "$rc" = 0 ] || it_fail "a's mptd exited with status $rc after its TUN device was deleted"
grep -q "TUN device 'lab' was removed, shutting down" "$LAB_DIR/mptd-a.log" ||
        it_fail "a's mptd did not say that its device was removed: $(tail -n 3 "$LAB_DIR/mptd-a.log")"
kill -0 "$mptd_a" 2>/dev/null && it_fail "a's mptd (pid $mptd_a) still runs"
kill -TERM "$(mptd_of "$LAB_PID_b")"
rc=0
wait "$LAB_PID_b" || rc=$?
LAB_PID_b=
[ "$rc" = 0 ] || it_fail "b's mptd exited with status $rc on SIGTERM"
it_note "TUN device deleted at a (a exited cleanly), b stopped"

# ---- 2. a unprivileged, b plain ----
MPTD=$real_mptd lab_start b
lab_exec a ip tuntap add dev lab mode tun user "$NOBODY" multi_queue
mkdir -p "$LAB_DIR/run-nobody"
chown "$NOBODY" "$LAB_DIR/run-nobody"
chmod 644 "$LAB_DIR/a.conf"
MPT_RUNTIME_DIR="$LAB_DIR/run-nobody" ip netns exec "$(lab_ns a)" \
        strace -f -qq -o "$LAB_DIR/strace-nobody.out" \
        setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups \
        --inh-caps=+net_admin,+net_raw --ambient-caps=+net_admin,+net_raw \
        "$real_mptd" --log-target=console -w 2 "$LAB_DIR/a.conf" >>"$LAB_DIR/mptd-a-nobody.log" 2>&1 &
nobody_pid=$!
LAB_PIDS+=("$nobody_pid")
nobody_ctl() { MPT_RUNTIME_DIR="$LAB_DIR/run-nobody" "$MPTCTL" "$@"; }
for _ in $(seq 200); do
        nobody_ctl show lab >/dev/null 2>&1 && break
        kill -0 "$nobody_pid" 2>/dev/null || it_fail "mptd as nobody exited: $(tail -n 5 "$LAB_DIR/mptd-a-nobody.log")"
        sleep 0.1
done
nobody_ctl show lab >/dev/null 2>&1 ||
        it_fail "mptd as nobody (under strace) did not answer within 20 s: $(tail -n 5 "$LAB_DIR/mptd-a-nobody.log")"
mptd_n=$(mptd_of "$nobody_pid")
[ "$(stat -c %u /proc/"$mptd_n")" = "$NOBODY" ] || it_fail "mptd does not run as nobody"
pings "mptd as nobody"
old=$(lab_path_addr a 0 4)
new=${old%.*}.11
lab_exec a sysctl -qw net.ipv4.conf.pa0.promote_secondaries=1
lab_exec a ip addr add "$new/24" dev pa0
lab_exec a ip addr del "$old/24" dev pa0
# Up to 15 s (mptd runs under strace -f here). grep without -q on mptctl's output, here and
# below: under pipefail, a grep -q that leaves at its first match makes mptctl's next write hit a
# closed pipe once the dump is longer than one stdio buffer, and the pipeline then fails though
# the line was there (seen: "did not rebind" while show listed the new address).
for _ in $(seq 300); do
        nobody_ctl show lab dump | grep "local=$new:" >/dev/null && break
        sleep 0.05
done
nobody_ctl show lab dump | grep "local=$new:" >/dev/null ||
        it_fail "mptd as nobody did not rebind p0 to $new within 15 s: $(nobody_ctl show lab 2>&1 | grep 'local:' | tr -s ' ' | tr '\n' ';')"

pings "mptd as nobody, after the rebinding"
kill -TERM "$mptd_n"
rc=0
wait "$nobody_pid" || rc=$?
[ "$rc" = 0 ] || it_fail "mptd as nobody exited with status $rc on SIGTERM"
lab_exec a ip link show lab >/dev/null 2>&1 || it_fail "mptd as nobody removed the persistent device"
lab_exec a ip link del lab
it_note "mptd as nobody: started, carried pings, rebound p0, stopped cleanly"

# ---- 3. a with --netdev, attached to a persistent device ----
lab_exec a ip tuntap add dev lab mode tun multi_queue
{
        printf '[NetDev]\nName=lab\nKind=tun\n\n[Tun]\nMultiQueue=yes\n\n[X-MPT]\n'
        sed -n '/^\[Tunnel\]/,/^\[Path\]/p' "$LAB_DIR/a.conf" | grep -v '^\[\|^Name=\|^#'
        sed -n '/^\[Path\]/,$p' "$LAB_DIR/a.conf" | sed 's/^\[Path\]$/[X-MPTPath]/'
} > "$LAB_DIR/lab.netdev"
# The .netdev is a profile too: keep it private, it holds the key.
chmod 600 "$LAB_DIR/lab.netdev"
# p0 is back on its first address (b's profile names it).
lab_exec a ip addr add "$old/24" dev pa0
lab_exec a ip addr del "$new/24" dev pa0
mkdir -p "$LAB_DIR/run-netdev"
MPT_RUNTIME_DIR="$LAB_DIR/run-netdev" ip netns exec "$(lab_ns a)" \
        "$(traced netdev)" --log-target=console --netdev "$LAB_DIR/lab.netdev" >>"$LAB_DIR/mptd-a-netdev.log" 2>&1 &
netdev_pid=$!
LAB_PIDS+=("$netdev_pid")
for _ in $(seq 200); do
        MPT_RUNTIME_DIR="$LAB_DIR/run-netdev" "$MPTCTL" show lab >/dev/null 2>&1 && break
        kill -0 "$netdev_pid" 2>/dev/null || it_fail "mptd --netdev exited: $(tail -n 5 "$LAB_DIR/mptd-a-netdev.log")"
        sleep 0.1
done
MPT_RUNTIME_DIR="$LAB_DIR/run-netdev" "$MPTCTL" show lab >/dev/null 2>&1 ||
        it_fail "mptd --netdev (under strace) did not answer within 20 s: $(tail -n 5 "$LAB_DIR/mptd-a-netdev.log")"
MPT_RUNTIME_DIR="$LAB_DIR/run-netdev" "$MPTCTL" show lab dump | grep "device=attached" >/dev/null ||
        it_fail "mptd --netdev did not attach to the existing device"
pings "mptd --netdev"
lab_exec a ip link del lab
rc=0
wait "$netdev_pid" || rc=$?
[ "$rc" = 0 ] || it_fail "mptd --netdev exited with status $rc after its device was deleted"
grep -q "TUN device 'lab' was removed, shutting down" "$LAB_DIR/mptd-a-netdev.log" ||
        it_fail "mptd --netdev did not say that its device was removed: $(tail -n 3 "$LAB_DIR/mptd-a-netdev.log")"
it_note "mptd --netdev: attached, carried pings, exited when the device was deleted"

# ---- the traced system calls ----
# Per trace, the calls mptd made: in the unprivileged run only after setpriv executed mptd.
for t in a b nobody netdev; do
        f=$LAB_DIR/strace-$t.out
        [ -s "$f" ] || it_fail "no trace of run '$t'"
        awk -v m="$real_mptd" 'seen || index($0, "execve(\"" m "\"") && / = 0$/ { seen = 1; print }' "$f" |
                sed -n 's/^[0-9]* *\([a-z0-9_]*\)(.*/\1/p' | sort -u > "$LAB_DIR/used-$t"
        [ "$(wc -l < "$LAB_DIR/used-$t")" -gt 20 ] || it_fail "the trace of run '$t' recorded almost nothing: $(head -n 3 "$f")"
done
sort -u "$LAB_DIR"/used-* > "$LAB_DIR/used"
# mptd's own filters (sandbox.h): each run installed the process's (all threads at once) and then
# each worker thread its own, after which no system call of a worker was refused (a refusal
# returns EPERM, or ENOSYS for clone3): the data plane's list holds all it does.
: > "$LAB_DIR/worker-used"
for t in a b nobody netdev; do
        f=$LAB_DIR/strace-$t.out
        # (strace -f may split a call into "<unfinished ...>" and "<... seccomp resumed>".)
        grep -q "seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, " "$f" ||
                it_fail "run '$t' did not install mptd's process filter"
        ! grep "seccomp(SECCOMP_SET_MODE_FILTER, \|seccomp resumed>" "$f" | grep -v " = 0$" | grep -v "<unfinished ...>$" ||
                it_fail "run '$t': a seccomp filter could not be installed"
        n=$(grep "seccomp(SECCOMP_SET_MODE_FILTER, 0, " "$f" | awk '{ print $1 }' | sort -u | wc -l)
        [ "$n" -ge 2 ] || it_fail "run '$t': $n worker threads installed their filter, expected one per worker (2)"
        awk -v used="$LAB_DIR/worker-used" '
                $2 ~ /^seccomp\(SECCOMP_SET_MODE_FILTER,/ && $3 == "0," { w[$1] = 1; next }
                ($1 in w) {
                        name = $2 == "<..." ? $3 : $2
                        sub(/\(.*/, "", name)
                        if (name !~ /^[a-z0-9_]+$/ || name == "seccomp") next
                        print name > used
                        if ($0 ~ / = -1 E(PERM|NOSYS) /) print
                }' "$f" > "$LAB_DIR/worker-refused-$t"
        [ ! -s "$LAB_DIR/worker-refused-$t" ] ||
                it_fail "run '$t': mptd's worker filter refused: $(head -n 5 "$LAB_DIR/worker-refused-$t")"
done
it_note "the workers' system calls (none refused): $(sort -u "$LAB_DIR/worker-used" | tr '\n' ' ')"
# execve is strace starting mptd (systemd's own execve is not filtered either).
bad=$(comm -23 "$LAB_DIR/used" "$LAB_DIR/allowed" | grep -vx execve || true)
[ -z "$bad" ] || it_fail "mptd uses system calls the unit's SystemCallFilter= refuses: $(echo $bad)"
it_finish "mptd's $(wc -l < "$LAB_DIR/used") system calls in 4 traced runs are all allowed by the unit"
