#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The shipped unit's SystemCallFilter= lets mptd work. PID 1 here is not systemd, so the unit
# cannot run for real; instead mptd runs under strace through start-up, traffic, a path going
# down and up, mptctl requests and a clean stop, and every system call it makes must be in the
# set that the unit's SystemCallFilter= lines allow (expanded by systemd-analyze syscall-filter).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib/netns.sh"
. "$here/common.sh"

# A sanitizer runtime makes system calls of its own, and LeakSanitizer cannot run under ptrace.
[ -z "${MPT_SANITIZED:-}" ] || lab_skip "mptd is built with -Db_sanitize=$MPT_SANITIZED"
lab_init
it_require strace systemd-analyze
unit=$(dirname "$(dirname "$(dirname "$MPTD")")")/data/mptd@.service
[ -f "$unit" ] || it_fail "no $unit next to $MPTD"

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

lab_topology 2 none 4
it_profiles 2 4 4
real_mptd=$MPTD
cat > "$LAB_DIR/mptd-strace" <<EOS
#!/bin/sh
exec strace -f -qq -o "$LAB_DIR/strace.out" "$real_mptd" "\$@"
EOS
chmod +x "$LAB_DIR/mptd-strace"
MPTD="$LAB_DIR/mptd-strace" it_start a
MPTD=$real_mptd it_start b
it_wait_ping a "$(lab_tunnel_addr b 4)" 20 || it_fail "no ping through the tunnel with mptd under strace"
lab_exec a ping -c 20 -i 0.02 -s 1400 "$(lab_tunnel_addr b 4)" >/dev/null || true
lab_ctl a show lab >/dev/null
lab_ctl a path lab p0 down >/dev/null || true
lab_ctl a path lab p0 up >/dev/null || true
lab_exec a ip link set pa1 down
sleep 0.5
lab_exec a ip link set pa1 up
it_wait_ping a "$(lab_tunnel_addr b 4)" 20 || true
# Stop mptd itself (not strace, which would detach) and let strace finish its log.
mptd_pid=$(cat /proc/"$LAB_PID_a"/task/*/children | awk '{print $1}')
[ -n "$mptd_pid" ] || it_fail "cannot find mptd under strace"
kill -TERM "$mptd_pid"
wait "$LAB_PID_a" || it_fail "mptd under strace did not exit cleanly"
LAB_PID_a=

sed -n 's/^[0-9]* *\([a-z0-9_]*\)(.*/\1/p' "$LAB_DIR/strace.out" | sort -u > "$LAB_DIR/used"
[ "$(wc -l < "$LAB_DIR/used")" -gt 20 ] || it_fail "strace recorded almost nothing: $(head "$LAB_DIR/strace.out")"
# execve is strace starting mptd (systemd's own execve is not filtered either).
bad=$(comm -23 "$LAB_DIR/used" "$LAB_DIR/allowed" | grep -vx execve || true)
[ -z "$bad" ] || it_fail "mptd uses system calls the unit's SystemCallFilter= refuses: $(echo $bad)"
it_finish "mptd's $(wc -l < "$LAB_DIR/used") system calls are all allowed by the unit"
