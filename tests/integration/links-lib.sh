# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash disable=SC2034
# (SC2034: the LK_* results are read by the scripts that source this file)
#
# Helpers for the "paths follow the links" integration tests (link-updown.sh, veth-recreate.sh,
# address-change.sh, endpoint-change.sh, hotplug.sh, no-route.sh, loss-demote.sh, peer-told.sh)
# and tests/bench/failover. Source tests/lib/netns.sh first. Not a test itself.
#
# State is read from `mptctl show lab dump` (one tab-separated line per path, "key=value"), which
# is cheap enough to poll every few milliseconds. Times are wall-clock microseconds
# ($EPOCHREALTIME without the dot), so they can be compared with packet capture timestamps.
#
# A transition's time is taken from the path's state_age_us in the first dump that shows the new
# state: "seen at" minus the age. That does not depend on how fast the shell polls.

export LC_ALL=C

# lk_now: sets LK_NOW to the wall clock in microseconds.
lk_now() {
        LK_NOW=${EPOCHREALTIME/./}
}

# lk_ms MICROSECONDS: prints milliseconds with one decimal (rounded).
lk_ms() {
        local us=$1 sign='' tenths
        if [ "$us" -lt 0 ]; then
                sign=-
                us=$((-us))
        fi
        tenths=$(((us + 50) / 100))
        printf '%s%d.%d' "$sign" $((tenths / 10)) $((tenths % 10))
}

# lk_sleep_until TIME_US: sleeps until the wall clock reaches TIME_US (not at all if it has).
lk_sleep_until() {
        local rest=$(($1 - ${EPOCHREALTIME/./}))
        [ "$rest" -le 0 ] || sleep "$((rest / 1000000)).$(printf '%06d' $((rest % 1000000)))"
}

lk_note() {
        lab_log "  $*"
}

# lk_show_all: both ends' `mptctl show`, for the log of a failed test.
lk_show_all() {
        local side
        for side in a b; do
                lab_log "---- mptctl show at $side ----"
                lab_ctl "$side" show lab >&2 2>&1 || lab_log "(mptctl show at $side failed)"
        done
}

# lk_fail MESSAGE: prints MESSAGE (which states expected and measured), both ends' state, and
# exits 1; the lab's cleanup then prints the mptd logs.
lk_fail() {
        lab_log "FAIL: $*"
        lk_show_all
        exit 1
}

# lk_soft_fail MESSAGE: records a failure and goes on, so that independent checks all report;
# lk_finish then fails the test.
LK_SOFT_FAILURES=0
lk_soft_fail() {
        lab_log "FAIL: $*"
        LK_SOFT_FAILURES=$((LK_SOFT_FAILURES + 1))
}

# lk_finish NAME: exit 1 (with both ends' state) if lk_soft_fail was called, else PASS.
lk_finish() {
        [ "$LK_SOFT_FAILURES" = 0 ] || lk_fail "$1: $LK_SOFT_FAILURES failed check(s), see above"
        lab_log "PASS: $1"
}

# lk_require COMMAND...: skip (77) when a tool the test needs is not installed.
lk_require() {
        local c
        for c in "$@"; do
                command -v "$c" >/dev/null || lab_skip "needs $c"
        done
}

# lk_require_nft: skip (77) when the kernel has no nftables (probed in namespace a).
lk_require_nft() {
        lk_require nft
        lab_exec a nft add table inet mpt_probe 2>/dev/null || lab_skip "needs nftables in the kernel"
        lab_exec a nft delete table inet mpt_probe
}

# lk_profiles N ["TUNNEL KEYS"] ["PATH KEYS"]: lab_profiles with an IPv4 tunnel and IPv4 paths.
lk_profiles() {
        lab_profiles "$1" 4 4 "${2:-}" "${3:-}"
}

# lk_set_path_key SIDE PATH KEY VALUE: adds KEY=VALUE to the [Path] section Name=PATH.
lk_set_path_key() {
        local f="$LAB_DIR/$1.conf"
        grep -qx "Name=$2" "$f" || lk_fail "no path '$2' in $f"
        sed -i "/^Name=$2\$/a $3=$4" "$f"
}

# lk_start SIDE: lab_start (which waits until the tunnel "lab" answers).
lk_start() {
        lab_start "$1"
}

# lk_dump SIDE: LK_DUMP is the tunnel's dump, LK_DUMP_T the time it was read (µs).
lk_dump() {
        LK_DUMP=$(lab_ctl "$1" show lab dump 2>/dev/null) || LK_DUMP=
        LK_DUMP_T=${EPOCHREALTIME/./}
}

# lk_field_of DUMP PATH FIELD: LK_V is FIELD of PATH ("" for the tunnel line); returns 1 when
# there is no such field.
lk_field_of() {
        local line f want=$'path\tname='$2$'\t'
        local -a fs
        LK_V=
        [ -n "$2" ] || want=$'tunnel\t'
        while IFS= read -r line; do
                [[ "$line" == "$want"* ]] || continue
                IFS=$'\t' read -r -a fs <<<"$line"
                for f in "${fs[@]}"; do
                        if [[ "$f" == "$3="* ]]; then
                                LK_V=${f#*=}
                                return 0
                        fi
                done
                return 1
        done <<<"$1"
        return 1
}

# lk_get SIDE PATH FIELD: prints FIELD of PATH at SIDE, now.
lk_get() {
        lk_dump "$1"
        lk_field_of "$LK_DUMP" "$2" "$3" || true
        printf '%s' "$LK_V"
}

# lk_wait SIDE PATH REGEX TIMEOUT_MS [T0_US]: polls until the state of PATH matches ^(REGEX)$.
# On success: LK_STATE, LK_REASON, LK_SEEN_US (first dump showing it, minus T0) and LK_AT_US
# (when mptd changed the state, from state_age_us, minus T0). T0 defaults to the call. On
# timeout returns 1 with LK_STATE/LK_REASON as last seen.
lk_wait() {
        local side=$1 path=$2 re="^($3)\$" timeout_us=$(($4 * 1000)) t0=${5:-${EPOCHREALTIME/./}} age
        LK_STATE='' LK_REASON='' LK_SEEN_US='' LK_AT_US=''
        while :; do
                lk_dump "$side"
                if lk_field_of "$LK_DUMP" "$path" state; then
                        LK_STATE=$LK_V
                        lk_field_of "$LK_DUMP" "$path" reason || true
                        LK_REASON=$LK_V
                        if [[ "$LK_STATE" =~ $re ]]; then
                                lk_field_of "$LK_DUMP" "$path" state_age_us || LK_V=0
                                age=$LK_V
                                LK_SEEN_US=$((LK_DUMP_T - t0))
                                LK_AT_US=$((LK_DUMP_T - age - t0))
                                return 0
                        fi
                fi
                [ $((LK_DUMP_T - t0)) -lt "$timeout_us" ] || return 1
                sleep 0.005
        done
}

# lk_expect SIDE PATH REGEX TIMEOUT_MS WHAT [T0_US]: lk_wait or fail with expected/measured.
lk_expect() {
        lk_wait "$1" "$2" "$3" "$4" "${6:-}" ||
                lk_fail "$5: expected path $2 at $1 to be '$3' within $4 ms, it is '$LK_STATE' (reason: ${LK_REASON:-none})"
}

# lk_snap SIDE NAME: keeps the dump for lk_delta.
lk_snap() {
        lab_ctl "$1" show lab dump > "$LAB_DIR/snap-$1-$2" || lk_fail "mptctl show dump at $1 failed"
}

# lk_delta SIDE FROM TO FIELD PATH: growth of a counter between two snapshots.
lk_delta() {
        local a b
        lk_field_of "$(cat "$LAB_DIR/snap-$1-$2")" "$5" "$4" || lk_fail "no field $4 of path $5 in snapshot $2"
        a=$LK_V
        lk_field_of "$(cat "$LAB_DIR/snap-$1-$3")" "$5" "$4" || lk_fail "no field $4 of path $5 in snapshot $3"
        b=$LK_V
        printf '%s' $((b - a))
}

# lk_deltas SIDE FROM TO FIELD PATH...: "p0=N p1=N ..." for the log.
lk_deltas() {
        local side=$1 from=$2 to=$3 field=$4 p out=
        shift 4
        for p in "$@"; do
                out+="$p=$(lk_delta "$side" "$from" "$to" "$field" "$p") "
        done
        printf '%s' "${out% }"
}

# lk_add_path_pair I [RATE]: creates veth pair I (pa<I> in a, pb<I> in b) with the lab's
# addresses, up, shaped like lab_topology does (RATE "none": unshaped).
lk_add_path_pair() {
        local i=$1 rate=${2:-none}
        ip link add "pa$i" netns "$(lab_ns a)" type veth peer name "pb$i" netns "$(lab_ns b)" ||
                lk_fail "cannot create veth pair $i"
        lab_exec a ip addr add "$(lab_path_addr a "$i" 4)/24" dev "pa$i"
        lab_exec b ip addr add "$(lab_path_addr b "$i" 4)/24" dev "pb$i"
        lab_exec a ip link set "pa$i" up
        lab_exec b ip link set "pb$i" up
        if [ "$rate" != none ]; then
                lab_shape a "pa$i" "$rate"
                lab_shape b "pb$i" "$rate"
        fi
}

# lk_load_start SECONDS [IPERF3 CLIENT ARGS]: iperf3 from a to b's tunnel address in the
# background, JSON to $LAB_DIR/load.json. lk_load_wait collects it.
lk_load_start() {
        local secs=$1
        shift
        LK_LOAD_PORT=$((20000 + RANDOM % 20000))
        # Started with `ip netns exec` itself rather than lab_exec: a backgrounded shell function
        # is a subshell, and its $! would not be the process the cleanup has to kill.
        ip netns exec "$(lab_ns b)" iperf3 -s -1 -p "$LK_LOAD_PORT" >"$LAB_DIR/load-server.log" 2>&1 &
        LK_LOAD_SERVER=$!
        LAB_PIDS+=("$LK_LOAD_SERVER")
        # wait for the server's socket rather than for a fixed time
        for _ in $(seq 100); do
                lab_exec b ss -Htln "sport = :$LK_LOAD_PORT" 2>/dev/null | grep -q . && break
                sleep 0.02
        done
        ip netns exec "$(lab_ns a)" iperf3 -c "$(lab_tunnel_addr b 4)" -p "$LK_LOAD_PORT" -t "$secs" -J "$@" \
                >"$LAB_DIR/load.json" 2>"$LAB_DIR/load.err" &
        LK_LOAD_CLIENT=$!
        LAB_PIDS+=("$LK_LOAD_CLIENT")
}

# lk_wait_flow BYTES TIMEOUT_MS PATH...: waits until the tx_bytes at a of every PATH grew by more
# than BYTES (the load runs over them); fails after TIMEOUT_MS.
lk_wait_flow() {
        local min=$1 timeout_ms=$2 end=$((${EPOCHREALTIME/./} + $2 * 1000)) p ok
        shift 2
        lk_snap a flow0
        while :; do
                lk_snap a flow1
                ok=yes
                for p in "$@"; do
                        [ "$(lk_delta a flow0 flow1 tx_bytes "$p")" -gt "$min" ] || ok=no
                done
                [ "$ok" = no ] || return 0
                [ "${EPOCHREALTIME/./}" -lt "$end" ] ||
                        lk_fail "load: expected tx_bytes at a to grow by more than $min on $* within $timeout_ms ms of starting iperf3, grew by $(lk_deltas a flow0 flow1 tx_bytes "$@")"
                sleep 0.05
        done
}

# lk_load_wait: waits for the background iperf3; fails unless it exited 0 and its JSON has no
# "error". Sets LK_LOAD_MBIT (goodput at the receiver), LK_LOAD_BYTES (received) and
# LK_LOAD_RETRANS (TCP retransmissions; 0 for UDP).
lk_load_wait() {
        local rc=0 out
        wait "$LK_LOAD_CLIENT" || rc=$?
        wait "$LK_LOAD_SERVER" 2>/dev/null || true
        out=$(python3 - "$LAB_DIR/load.json" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("ERROR unreadable JSON: %s" % e)
    sys.exit(0)
if "error" in d:
    print("ERROR " + d["error"].replace("\n", " "))
    sys.exit(0)
end = d["end"]
r = end.get("sum_received") or end.get("sum")
retr = end.get("sum_sent", {}).get("retransmits", 0)
print("OK %.2f %d %d" % (r["bits_per_second"] / 1e6, r["bytes"], retr))
EOF
)
        case "$out" in
        OK*) ;;
        *) lk_fail "iperf3: expected a clean run (exit 0, no error in its JSON), got exit $rc: ${out#ERROR } $(cat "$LAB_DIR/load.err")" ;;
        esac
        [ "$rc" = 0 ] || lk_fail "iperf3: expected exit status 0, got $rc: $(cat "$LAB_DIR/load.err")"
        read -r _ LK_LOAD_MBIT LK_LOAD_BYTES LK_LOAD_RETRANS <<<"$out"
}

# lk_load_stop: ends the background iperf3 (client and server, by PID) when it only served as a
# carrier of traffic and its result does not matter.
lk_load_stop() {
        kill -TERM "$LK_LOAD_CLIENT" "$LK_LOAD_SERVER" 2>/dev/null || true
        wait "$LK_LOAD_CLIENT" 2>/dev/null || true
        wait "$LK_LOAD_SERVER" 2>/dev/null || true
}
