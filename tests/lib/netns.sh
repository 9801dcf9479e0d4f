# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Network-namespace lab shared by the integration tests, the lab (main job) and the benchmarks.
#
#   . tests/lib/netns.sh
#   lab_init                      # unique prefix, temp dir, cleanup trap; exits 77 without root/tun
#   lab_topology 4 100mbit 4      # namespaces A and B joined by 4 veth paths (IPv4), 100 Mbit/s each
#   lab_profiles 4 4 4            # writes $LAB_DIR/a.conf and b.conf (tunnel v4, paths v4)
#   lab_start a; lab_start b      # starts mptd at each end, waits until it answers
#   lab_ctl a show                # mptctl against end a
#   lab_exec a ping -c1 10.77.0.2
#
# Unequal paths go through a path emulator (tests/lab/mpt-pathemu) in a router namespace each:
#
#   lab_emu_topology 4 'rate=100mbit,delay=5ms' 'rate=20mbit,delay=40ms,loss=0.5%'
#   lab_emu_stats 1 > "$LAB_DIR/before"         # path 1's counters ("NAME VALUE" lines)
#   lab_emu_delta "$LAB_DIR/before" "$LAB_DIR/after" ab_loss_drops
#
# Everything a lab creates is removed on exit, even on failure: the namespaces (which takes the
# veth pairs, TUN devices, qdiscs and nftables tables with them), the processes it started (by
# PID) and its temporary directory. Nothing outside the namespaces is touched.

set -o pipefail

: "${MPTD:=}"
: "${MPTCTL:=}"
: "${MPT_PATHEMU:=}"
LAB_PIDS=()
LAB_NS=()
LAB_DIR=
LAB_PREFIX=
LAB_PATHS=0
LAB_EMU_PIDS=()
LAB_EMU_SPECS=()

lab_log() {
        printf '%s\n' "$*" >&2
}

lab_die() {
        lab_log "FAIL: $*"
        exit 1
}

lab_skip() {
        lab_log "SKIP: $*"
        exit 77
}

lab_find_binaries() {
        local root
        root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
        if [ -z "$MPTD" ]; then
                for d in "${MESON_BUILD_ROOT:-}" "$root/build" "$root/build-dev"; do
                        [ -n "$d" ] && [ -x "$d/src/mptd/mptd" ] && { MPTD=$d/src/mptd/mptd; break; }
                done
        fi
        if [ -z "$MPTCTL" ]; then
                MPTCTL=$(dirname "$(dirname "$MPTD")")/mptctl/mptctl
        fi
        [ -x "$MPTD" ] || lab_die "mptd binary not found (set MPTD=)"
        [ -x "$MPTCTL" ] || lab_die "mptctl binary not found (set MPTCTL=)"
}

# lab_cleanup [RC]: the exit trap; RC (default: $?) is the test's status, which decides whether
# the logs are shown and is returned. A trap of a test's own that calls it passes its status
# (a "(exit $rc)" before the call would end a shell under set -e before the cleanup).
lab_cleanup() {
        local rc=${1:-$?}
        local pid ns
        for pid in "${LAB_PIDS[@]}"; do
                kill -TERM "$pid" 2>/dev/null || true
        done
        for pid in "${LAB_PIDS[@]}"; do
                # give mptd a moment for its clean shutdown, then insist
                for _ in 1 2 3 4 5 6 7 8 9 10; do
                        kill -0 "$pid" 2>/dev/null || break
                        sleep 0.1
                done
                kill -KILL "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
        done
        for ns in "${LAB_NS[@]}"; do
                # Whatever still runs in our namespaces was started by this lab (directly or by a
                # backgrounded helper): end it before the namespace goes.
                for pid in $(ip netns pids "$ns" 2>/dev/null); do
                        kill -KILL "$pid" 2>/dev/null || true
                done
                ip netns del "$ns" 2>/dev/null || true
        done
        if [ -n "$LAB_DIR" ] && [ -d "$LAB_DIR" ]; then
                if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -z "${LAB_KEEP_QUIET:-}" ]; then
                        for f in "$LAB_DIR"/*.log; do
                                [ -f "$f" ] || continue
                                lab_log "---- $(basename "$f") (last 30 lines) ----"
                                tail -n 30 "$f" >&2
                        done
                fi
                rm -rf "$LAB_DIR"
        fi
        return "$rc"
}

# lab_init: checks prerequisites, picks a unique prefix, installs the cleanup trap.
lab_init() {
        [ "$(id -u)" = 0 ] || lab_skip "needs root"
        [ -c /dev/net/tun ] || lab_skip "needs /dev/net/tun"
        command -v ip >/dev/null || lab_skip "needs iproute2"
        lab_find_binaries
        LAB_PREFIX="mpt-$$-$RANDOM"
        LAB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/mpt-lab.XXXXXX")
        trap lab_cleanup EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
}

lab_ns() {
        printf '%s-%s' "$LAB_PREFIX" "$1"
}

lab_add_ns() {
        local ns
        ns=$(lab_ns "$1")
        ip netns add "$ns" || lab_die "cannot create namespace $ns"
        LAB_NS+=("$ns")
        ip -n "$ns" link set lo up
}

lab_exec() {
        local side=$1
        shift
        ip netns exec "$(lab_ns "$side")" "$@"
}

# lab_spawn SIDE COMMAND...: runs COMMAND in the background in the side's namespace. Its PID (of
# the command itself, not of a subshell) is in LAB_SPAWNED and recorded for cleanup. Backgrounding
# lab_exec instead would record a subshell's PID and orphan the command.
LAB_SPAWNED=
lab_spawn() {
        local side=$1
        shift
        ip netns exec "$(lab_ns "$side")" "$@" &
        LAB_SPAWNED=$!
        LAB_PIDS+=("$LAB_SPAWNED")
}

# Path addresses: path i uses 10.77.<100+i>.1/.2 (IPv4) and fd77:<i>::1/::2 (IPv6).
lab_path_addr() { # side(a|b) index family(4|6)
        local host=1
        [ "$1" = b ] && host=2
        if [ "$3" = 6 ]; then
                printf 'fd77:%x::%s' "$2" "$host"
        else
                printf '10.77.%s.%s' "$((100 + $2))" "$host"
        fi
}

# Tunnel addresses: 10.77.0.1/.2 and fd77:ffff::1/::2.
lab_tunnel_addr() { # side family
        local host=1
        [ "$1" = b ] && host=2
        if [ "$2" = 6 ]; then printf 'fd77:ffff::%s' "$host"; else printf '10.77.0.%s' "$host"; fi
}

# lab_path_family INDEX FAMILYSPEC: FAMILYSPEC is 4, 6 or "mixed" (even paths IPv4, odd IPv6).
lab_path_family() {
        case "$2" in
        mixed) if [ $(($1 % 2)) = 0 ]; then echo 4; else echo 6; fi ;;
        *) echo "$2" ;;
        esac
}

# lab_topology N RATE FAMILYSPEC: namespaces a and b, N veth pairs pa<i> (in a) <-> pb<i> (in b).
# RATE is a tc rate ("100mbit") applied with tbf on both ends' egress, or "none".
lab_topology() {
        local n=$1 i
        LAB_PATHS=$n
        lab_add_ns a
        lab_add_ns b
        for ((i = 0; i < n; i++)); do
                lab_add_path "$i" "$2" "$(lab_path_family "$i" "$3")"
        done
}

# lab_add_path INDEX RATE FAMILY(4|6): the veth pair of path INDEX, as lab_topology makes it (also
# for a test that adds a path's link later).
lab_add_path() {
        local i=$1 rate=$2
        ip link add "pa$i" netns "$(lab_ns a)" type veth peer name "pb$i" netns "$(lab_ns b)" ||
                lab_die "cannot create veth pair $i"
        if [ "$3" = 6 ]; then
                lab_exec a ip addr add "$(lab_path_addr a "$i" 6)/64" dev "pa$i" nodad
                lab_exec b ip addr add "$(lab_path_addr b "$i" 6)/64" dev "pb$i" nodad
        else
                lab_exec a ip addr add "$(lab_path_addr a "$i" 4)/24" dev "pa$i"
                lab_exec b ip addr add "$(lab_path_addr b "$i" 4)/24" dev "pb$i"
        fi
        lab_exec a ip link set "pa$i" up
        lab_exec b ip link set "pb$i" up
        if [ "$rate" != none ]; then
                lab_shape a "pa$i" "$rate"
                lab_shape b "pb$i" "$rate"
        fi
}

# lab_shape SIDE DEV RATE: token bucket on the device's egress. The burst allows a few ms of
# line rate (kernel timers), the queue holds 20 ms.
lab_shape() {
        lab_exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" burst 64kb latency 20ms ||
                lab_die "cannot shape $2"
}

# lab_key: the pre-shared key of this lab run (one fresh key per run, from mptctl genkey).
# Call lab_key_init in the lab's shell (not in a $(...) subshell) before lab_key is used in one.
LAB_KEY=
lab_key_init() {
        if [ -z "$LAB_KEY" ]; then
                LAB_KEY=$("$MPTCTL" genkey) || lab_die "mptctl genkey failed"
        fi
}
lab_key() {
        lab_key_init
        printf '%s\n' "$LAB_KEY"
}

# lab_pair_init: a key pair per side for the handshake (MPT_LAB_MODE=handshake), fresh per run:
# LAB_PRIVATE_a/_b (mptctl genkey, unless set already, e.g. to the examples' keys) and
# LAB_PUBLIC_a/_b (mptctl pubkey of them). Call in the lab's shell.
LAB_PRIVATE_a= LAB_PRIVATE_b= LAB_PUBLIC_a= LAB_PUBLIC_b=
lab_pair_init() {
        local side k
        for side in a b; do
                eval "k=\$LAB_PRIVATE_$side"
                if [ -z "$k" ]; then
                        k=$("$MPTCTL" genkey) || lab_die "mptctl genkey failed"
                        eval "LAB_PRIVATE_$side=\$k"
                fi
                eval "LAB_PUBLIC_$side=\$(printf '%s\n' \"\$k\" | \"\$MPTCTL\" pubkey)" || lab_die "mptctl pubkey failed"
        done
}

# lab_profiles N TUNNEL_FAMILY(4|6|46) PATH_FAMILYSPEC [EXTRA_TUNNEL_KEYS] [EXTRA_PATH_KEYS]
# Writes $LAB_DIR/a.conf and b.conf. The tunnel is named "lab" at both ends; each end has its
# own runtime directory, so the names do not clash. The tunnel is in secure mode with the
# handshake and this run's key pairs (lab_pair_init; MPT_LAB_MODE unset or handshake), or with
# this run's pre-shared key alone (lab_key; MPT_LAB_MODE=secure), or in compat mode
# (MPT_LAB_MODE=compat), unless the extra tunnel keys set Mode= or keys.
lab_profiles() {
        local n=$1 tfam=$2 pfam=$3 extra_t=${4:-} extra_p=${5:-} side other i f mode_line lab_mode
        lab_mode=${MPT_LAB_MODE:-handshake}
        if printf '%b' "$extra_t" | grep -qE '^(Mode|Key|KeyFile|PrivateKey|PrivateKeyFile|PublicKey)='; then
                lab_mode=given
        elif [ "$lab_mode" = handshake ]; then
                lab_pair_init
        elif [ "$lab_mode" != compat ]; then
                lab_key_init
        fi
        for side in a b; do
                other=b
                [ "$side" = b ] && other=a
                case "$lab_mode" in
                given) mode_line= ;;
                compat) mode_line="Mode=compat" ;;
                handshake) eval "mode_line=\"PrivateKey=\$LAB_PRIVATE_$side\nPublicKey=\$LAB_PUBLIC_$other\"" ;;
                *) mode_line="Key=$LAB_KEY" ;;
                esac
                {
                        echo "# generated by tests/lib/netns.sh for this lab run"
                        echo "[Tunnel]"
                        echo "Name=lab"
                        if [ -n "$mode_line" ]; then printf '%b\n' "$mode_line"; fi
                        case "$tfam" in
                        4) echo "Address=$(lab_tunnel_addr "$side" 4)/24"
                           echo "Peer=$(lab_tunnel_addr "$other" 4)" ;;
                        6) echo "Address=$(lab_tunnel_addr "$side" 6)/64"
                           echo "Peer=$(lab_tunnel_addr "$other" 6)" ;;
                        46) echo "Address=$(lab_tunnel_addr "$side" 4)/24"
                            echo "Address=$(lab_tunnel_addr "$side" 6)/64"
                            echo "Peer=$(lab_tunnel_addr "$other" 4)"
                            echo "Peer=$(lab_tunnel_addr "$other" 6)" ;;
                        esac
                        if [ -n "$extra_t" ]; then printf '%b\n' "$extra_t"; fi
                        for ((i = 0; i < n; i++)); do
                                f=$(lab_path_family "$i" "$pfam")
                                echo
                                echo "[Path]"
                                echo "Name=p$i"
                                echo "Interface=p$side$i"
                                echo "Remote=$(lab_path_addr "$other" "$i" "$f")"
                                if [ -n "$extra_p" ]; then printf '%b\n' "$extra_p"; fi
                        done
                } > "$LAB_DIR/$side.conf"
                # It holds a secret key (PrivateKey=, Key=): private, or mptd warns about it.
                chmod 600 "$LAB_DIR/$side.conf"
        done
}

lab_ctl() {
        local side=$1
        shift
        MPT_RUNTIME_DIR="$LAB_DIR/run-$side" "$MPTCTL" "$@"
}

# lab_start SIDE [PROFILE] [MPTD ARGS...]: starts mptd in the side's namespace, waits until its
# control socket answers (at most 10 s). The PID is recorded for cleanup.
lab_start() {
        local side=$1 profile=${2:-$LAB_DIR/$1.conf}
        shift 2 2>/dev/null || shift
        local name
        # The tunnel's name: Name= of the profile, else the file name (as mptd decides).
        name=$(sed -n 's/^[[:space:]]*Name[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/\1/p' "$profile" | head -n 1)
        [ -n "$name" ] || name=$(basename "$profile" .conf)
        mkdir -p "$LAB_DIR/run-$side"
        MPT_RUNTIME_DIR="$LAB_DIR/run-$side" ip netns exec "$(lab_ns "$side")" \
                "$MPTD" --log-target=console "$@" "$profile" >>"$LAB_DIR/mptd-$side.log" 2>&1 &
        local pid=$!
        LAB_PIDS+=("$pid")
        eval "LAB_PID_$side=$pid"
        for _ in $(seq 100); do
                # Ask for this tunnel: a bare "show" also succeeds when nothing runs yet.
                if lab_ctl "$side" show "$name" >/dev/null 2>&1; then
                        return 0
                fi
                kill -0 "$pid" 2>/dev/null || lab_die "mptd ($side) exited: $(tail -n 5 "$LAB_DIR/mptd-$side.log")"
                sleep 0.1
        done
        lab_die "mptd ($side) did not answer within 10 s"
}

# lab_stop SIDE: SIGTERM and wait (clean shutdown).
lab_stop() {
        local pid
        eval "pid=\${LAB_PID_$1:-}"
        [ -n "$pid" ] || return 0
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        eval "LAB_PID_$1="
}

# lab_json SIDE PYTHON-EXPR: evaluates EXPR with `t` bound to the tunnel object of
# `mptctl --json show lab` and prints the result.
lab_json() {
        lab_ctl "$1" --json show lab | python3 -c '
import json, sys
t = json.load(sys.stdin)[0]
p = {x["name"]: x for x in t["paths"]}
print(eval(sys.argv[1]))' "$2"
}

# lab_baseline_tcp SECONDS [PATH_INDEX]: single-path TCP goodput in Mbit/s without the tunnel.
lab_baseline_tcp() {
        local secs=$1 i=${2:-0} addr
        addr=$(lab_path_addr b "$i" "$(lab_path_family "$i" "${LAB_PATH_FAMILY:-4}")")
        lab_iperf_tcp "$addr" "$secs"
}

# lab_wait_listen SIDE tcp|udp PORT: waits (at most 5 s) until something listens there.
lab_wait_listen() {
        local flag=-Htln
        [ "$2" = udp ] && flag=-Hunl
        for _ in $(seq 100); do
                lab_exec "$1" ss $flag "sport = :$3" 2>/dev/null | grep -q . && return 0
                sleep 0.05
        done
        return 1
}

# lab_iperf_tcp ADDRESS SECONDS [EXTRA IPERF3 ARGS]: TCP goodput a -> b in Mbit/s (receiver side).
lab_iperf_tcp() {
        local addr=$1 secs=$2
        shift 2
        local port=$((20000 + RANDOM % 20000))
        lab_spawn b iperf3 -s -1 -p "$port" >/dev/null 2>&1
        local spid=$LAB_SPAWNED
        # Used inside $(...), so the PID recorded above does not reach the lab's cleanup; the
        # cleanup ends whatever runs in the lab's namespaces anyway.
        lab_wait_listen b tcp "$port" || lab_die "iperf3 server did not start"
        lab_exec a iperf3 -c "$addr" -p "$port" -t "$secs" -J "$@" > "$LAB_DIR/iperf.json" 2>"$LAB_DIR/iperf.err" ||
                { wait "$spid" 2>/dev/null; lab_die "iperf3 to $addr failed: $(cat "$LAB_DIR/iperf.err")"; }
        wait "$spid" 2>/dev/null || true
        python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("%.2f" % (d["end"]["sum_received"]["bits_per_second"] / 1e6))' "$LAB_DIR/iperf.json"
}

# ---- emulated paths ----
#
# Path i runs a <-> r<i> <-> b: veth pa<i> (in a) <-> ra<i> (in r<i>) and rb<i> (in r<i>) <-> pb<i>
# (in b). mpt-pathemu in r<i> forwards frames between ra<i> and rb<i>, so the ends keep the
# addressing of lab_topology (one subnet per path, lab_path_addr) and lab_profiles works as it
# is. The router has no addresses, no IPv6 and no forwarding: the emulator is the only way
# across. Its queue is the path's bottleneck; the sending end's veth has none (noqueue), so a
# sender sees no local queue. The ends know each other's MAC address (permanent neighbour
# entries; no ARP or neighbour discovery crosses a path) and IPv4 paths have IPv6 off, so the
# emulator's counters are exactly the test's own traffic. The ends' segmentation offloads are
# off (GSO stays on: the stack segments before the veth), see tests/lab/pathemu.c.

# lab_find_pathemu: $MPT_PATHEMU, else tests/lab/mpt-pathemu in the build directory of $MPTD,
# build/ or build-dev/.
lab_find_pathemu() {
        local root d
        [ -n "$MPT_PATHEMU" ] && [ -x "$MPT_PATHEMU" ] && return 0
        root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
        for d in "${MPTD:+$(dirname "$(dirname "$(dirname "$MPTD")")")}" "${MESON_BUILD_ROOT:-}" "$root/build" \
                 "$root/build-dev"; do
                if [ -n "$d" ] && [ -x "$d/tests/lab/mpt-pathemu" ]; then
                        MPT_PATHEMU=$d/tests/lab/mpt-pathemu
                        return 0
                fi
        done
        lab_die "mpt-pathemu not found (build the project, or set MPT_PATHEMU=)"
}

# lab_emu_check SPEC: exit status 0 when mpt-pathemu accepts SPEC, else its message on stderr.
lab_emu_check() {
        lab_find_pathemu
        "$MPT_PATHEMU" --check "$1" >/dev/null
}

# lab_emu_topology FAMILYSPEC SPEC...: namespaces a and b joined by one emulated path per SPEC
# (mpt-pathemu's syntax, `mpt-pathemu --help`), path i with family lab_path_family i FAMILYSPEC.
# A bad SPEC ends the lab with mpt-pathemu's message before anything is created.
lab_emu_topology() {
        local fam=$1 i f fa fb mac
        shift
        [ $# -ge 1 ] || lab_die "lab_emu_topology: no path spec"
        lab_find_pathemu
        command -v ethtool >/dev/null || lab_skip "needs ethtool"
        i=0
        for f in "$@"; do
                lab_emu_check "$f" 2>"$LAB_DIR/emu-check.err" ||
                        lab_die "path $i: $(sed 's/^mpt-pathemu: //' "$LAB_DIR/emu-check.err")"
                i=$((i + 1))
        done
        LAB_PATHS=$#
        LAB_EMU_SPECS=("$@")
        lab_add_ns a
        lab_add_ns b
        for ((i = 0; i < LAB_PATHS; i++)); do
                lab_add_ns "r$i"
                lab_exec "r$i" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
                        net.ipv4.ip_forward=0 >/dev/null
                ip link add "pa$i" netns "$(lab_ns a)" type veth peer name "ra$i" netns "$(lab_ns "r$i")" ||
                        lab_die "cannot create veth pair pa$i/ra$i"
                ip link add "pb$i" netns "$(lab_ns b)" type veth peer name "rb$i" netns "$(lab_ns "r$i")" ||
                        lab_die "cannot create veth pair pb$i/rb$i"
                f=$(lab_path_family "$i" "$fam")
                fa=$(lab_path_addr a "$i" "$f")
                fb=$(lab_path_addr b "$i" "$f")
                if [ "$f" = 6 ]; then
                        lab_exec a ip addr add "$fa/64" dev "pa$i" nodad
                        lab_exec b ip addr add "$fb/64" dev "pb$i" nodad
                else
                        lab_exec a sysctl -qw "net.ipv6.conf.pa$i.disable_ipv6=1" >/dev/null
                        lab_exec b sysctl -qw "net.ipv6.conf.pb$i.disable_ipv6=1" >/dev/null
                        lab_exec a ip addr add "$fa/24" dev "pa$i"
                        lab_exec b ip addr add "$fb/24" dev "pb$i"
                fi
                lab_emu_offloads a "pa$i"
                lab_emu_offloads b "pb$i"
                lab_exec "r$i" ethtool -K "ra$i" gro off rx-gro-list off rx-udp-gro-forwarding off 2>/dev/null || true
                lab_exec "r$i" ethtool -K "rb$i" gro off rx-gro-list off rx-udp-gro-forwarding off 2>/dev/null || true
                mac=$(lab_exec b cat "/sys/class/net/pb$i/address")
                lab_exec a ip neigh replace "$fb" lladdr "$mac" dev "pa$i" nud permanent
                mac=$(lab_exec a cat "/sys/class/net/pa$i/address")
                lab_exec b ip neigh replace "$fa" lladdr "$mac" dev "pb$i" nud permanent
                lab_exec "r$i" ip link set "ra$i" up
                lab_exec "r$i" ip link set "rb$i" up
                lab_exec a ip link set "pa$i" up
                lab_exec b ip link set "pb$i" up
                lab_emu_start "$i" "${LAB_EMU_SPECS[$i]}"
        done
}

# lab_emu_offloads SIDE DEV: no segmentation offloads on DEV (frames reach the emulator as
# frames); checksum offload and GSO stay on.
lab_emu_offloads() {
        lab_exec "$1" ethtool -K "$2" tso off tx-udp-segmentation off tx-gso-list off tx-sctp-segmentation off \
                tx-gre-segmentation off tx-gre-csum-segmentation off tx-ipxip4-segmentation off \
                tx-ipxip6-segmentation off tx-udp_tnl-segmentation off tx-udp_tnl-csum-segmentation off \
                >/dev/null 2>&1 ||
                lab_exec "$1" ethtool -K "$2" tso off tx-udp-segmentation off >/dev/null 2>&1 ||
                lab_die "cannot turn segmentation offloads off on $2 (ethtool -K)"
}

# lab_emu_start INDEX SPEC: starts path INDEX's emulator (in r<INDEX>, a direct child of the
# lab's shell, its PID in LAB_EMU_PIDS and LAB_PIDS) and waits until it forwards (it writes its
# stats file when it is ready). Its log is $LAB_DIR/emu-INDEX.log. It runs at nice -10: on two
# CPUs shared with both ends' load, the "network" must not wait for a CPU behind iperf3.
lab_emu_start() {
        local i=$1 stats=$LAB_DIR/emu-$1.stats pid
        rm -f "$stats"
        ip netns exec "$(lab_ns "r$i")" nice -n -10 "$MPT_PATHEMU" --stats "$stats" "ra$i" "rb$i" "$2" \
                >>"$LAB_DIR/emu-$i.log" 2>&1 &
        pid=$!
        LAB_PIDS+=("$pid")
        LAB_EMU_PIDS[i]=$pid
        LAB_EMU_SPECS[i]=$2
        for _ in $(seq 200); do
                [ -s "$stats" ] && return 0
                kill -0 "$pid" 2>/dev/null ||
                        lab_die "mpt-pathemu of path $i exited: $(tail -n 3 "$LAB_DIR/emu-$i.log")"
                sleep 0.025
        done
        lab_die "mpt-pathemu of path $i did not start within 5 s"
}

# lab_emu_stop INDEX: ends path INDEX's emulator (SIGTERM); its stats file keeps the final counters.
lab_emu_stop() {
        local pid=${LAB_EMU_PIDS[$1]:-}
        [ -n "$pid" ] || return 0
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        LAB_EMU_PIDS[$1]=
}

# lab_emu_respec INDEX SPEC: path INDEX's emulator again, with a new spec (fresh counters).
lab_emu_respec() {
        lab_emu_check "$2" || lab_die "path $1: bad spec '$2'"
        lab_emu_stop "$1"
        lab_emu_start "$1" "$2"
}

# lab_emu_signal INDEX SIGNAL: sends SIGNAL (USR1: write the counters, USR2: restart the trace,
# which writes them too) and waits until the stats file shows it.
lab_emu_signal() {
        local i=$1 stats=$LAB_DIR/emu-$1.stats pid=${LAB_EMU_PIDS[$1]:-} gen new
        [ -n "$pid" ] || lab_die "path $i has no emulator running"
        gen=$(awk '$1 == "generation" { print $2 }' "$stats")
        kill "-$2" "$pid" || lab_die "mpt-pathemu of path $i is gone"
        for _ in $(seq 500); do
                new=$(awk '$1 == "generation" { print $2 }' "$stats" 2>/dev/null)
                [ -n "$new" ] && [ "$new" -gt "$gen" ] && return 0
                sleep 0.01
        done
        lab_die "mpt-pathemu of path $i did not write its counters within 5 s"
}

# lab_emu_stats INDEX: path INDEX's counters now, as "NAME VALUE" lines on stdout: per direction
# (ab_: frames from a to b, ba_: back) rx, forwarded, queue_drops, loss_drops, loss_bursts
# (_packets/_bytes), overflow/oversize/kernel drops, tx_errors, queue_bytes, queue_max_bytes and
# phase (the trace phase in force); seed, uptime_ms and trace_ms (since the trace started).
lab_emu_stats() {
        lab_emu_signal "$1" USR1
        cat "$LAB_DIR/emu-$1.stats"
}

# lab_emu_trace_restart INDEX: path INDEX's trace starts over at its first phase, now.
lab_emu_trace_restart() {
        lab_emu_signal "$1" USR2
}

# lab_emu_value FILE NAME: one counter of a lab_emu_stats snapshot.
lab_emu_value() {
        awk -v n="$2" '$1 == n { print $2; f = 1 } END { exit !f }' "$1" || lab_die "no counter '$2' in $1"
}

# lab_emu_delta BEFORE AFTER NAME: how much a counter grew between two snapshots.
lab_emu_delta() {
        echo $(($(lab_emu_value "$2" "$3") - $(lab_emu_value "$1" "$3")))
}
