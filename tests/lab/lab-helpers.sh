# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Helpers shared by tests/lab/mpt-lab and tests/bench/aggregation, on top of tests/lib/netns.sh
# (source that first). Every process started here is recorded in LAB_PIDS, so the lab's cleanup
# trap kills it on every exit path, including Ctrl-C in the middle of a measurement.

# ml_profiles N TUNNEL_FAMILY PATH_FAMILYSPEC: lab_profiles, judged by the files it writes.
# lab_profiles ends its per-path loop with `[ -n "$extra_p" ] && printf ...`, so without extra
# path keys it returns 1 although it worked (which would abort a `set -e` script); its status
# says nothing, the files do.
ml_profiles() {
        local side
        rm -f "$LAB_DIR/a.conf" "$LAB_DIR/b.conf"
        lab_profiles "$@"
        for side in a b; do
                [ "$(grep -c '^\[Path\]$' "$LAB_DIR/$side.conf" 2>/dev/null)" = "$1" ] ||
                        lab_die "lab_profiles $* did not write $LAB_DIR/$side.conf with $1 [Path] sections"
        done
}

# ml_reap PID SECONDS: waits up to SECONDS for PID to exit, then kills it.
ml_reap() {
        local pid=$1 i
        for ((i = 0; i < $2 * 10; i++)); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
        done
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
}

# ml_wait_ping SIDE ADDRESS SECONDS: single pings until one is answered; 1 on timeout.
ml_wait_ping() {
        local end=$((SECONDS + $3))
        while [ "$SECONDS" -le "$end" ]; do
                lab_exec "$1" ping -n -q -c 1 -W 1 "$2" >/dev/null 2>&1 && return 0
                sleep 0.1
        done
        return 1
}

# ml_iperf ADDRESS SECONDS [IPERF3 CLIENT ARGS]: one TCP transfer from a to ADDRESS (at b).
# Sets ML_MBIT (goodput the receiver saw, Mbit/s) and ML_RETRANS (sender's retransmissions);
# the JSON report stays in $LAB_DIR/iperf.json. Both iperf3 processes are started with
# `ip netns exec` directly (a backgrounded shell function would be a subshell, and its $! not
# the iperf3 to kill), and this must not run in a command substitution (LAB_PIDS would not
# reach the cleanup).
ml_iperf() {
        local addr=$1 secs=$2 port spid cpid rc=0 i
        shift 2
        port=$((20000 + RANDOM % 20000))
        ip netns exec "$(lab_ns b)" iperf3 -s -1 -p "$port" >"$LAB_DIR/iperf-server.log" 2>&1 &
        spid=$!
        LAB_PIDS+=("$spid")
        for ((i = 0; i < 50; i++)); do
                [ -n "$(lab_exec b ss -Hltn "sport = :$port" 2>/dev/null)" ] && break
                sleep 0.05
        done
        ip netns exec "$(lab_ns a)" iperf3 -c "$addr" -p "$port" -t "$secs" -J "$@" \
                >"$LAB_DIR/iperf.json" 2>"$LAB_DIR/iperf.err" &
        cpid=$!
        LAB_PIDS+=("$cpid")
        wait "$cpid" || rc=$?
        ml_reap "$spid" 2
        if [ "$rc" != 0 ]; then
                # Ctrl-C reaches iperf3 too, and it may exit before the shell runs its INT trap.
                if grep -qs 'interrupt - the client has terminated' "$LAB_DIR/iperf.err" "$LAB_DIR/iperf.json"; then
                        lab_log "interrupted"
                        exit 130
                fi
                lab_die "iperf3 to $addr failed (exit $rc): $(cat "$LAB_DIR/iperf.err")$(python3 -c '
import json, sys
try:
    print(" " + json.load(open(sys.argv[1])).get("error", ""))
except Exception:
    pass' "$LAB_DIR/iperf.json")"
        fi
        # shellcheck disable=SC2034 # results for the caller
        read -r ML_MBIT ML_RETRANS < <(python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["end"]
print("%.2f %d" % (e["sum_received"]["bits_per_second"] / 1e6, e["sum_sent"].get("retransmits", 0)))' \
                "$LAB_DIR/iperf.json")
}

# ml_snap SIDE FILE: `mptctl --json show lab` at SIDE into FILE, with the time of the snapshot
# (seconds, monotonic enough for differences) as the first line.
ml_snap() {
        local json
        json=$(lab_ctl "$1" --json show lab) || lab_die "mptctl --json show lab at $1 failed"
        printf '%s\n%s\n' "$EPOCHREALTIME" "$json" > "$2"
}

# ml_cpu_ticks PID: user + system CPU time of the process (all its threads) in clock ticks.
ml_cpu_ticks() {
        # Fields after the ")" that closes the command name: state is 1, utime 12, stime 13.
        sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# ml_host_ticks: "BUSY TOTAL" CPU ticks of the whole machine, from /proc/stat.
ml_host_ticks() {
        awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit }' /proc/stat
}

# ml_kstats SIDE FILE: kernel counters of SIDE's namespace as "NAME VALUE" lines: the tunnel
# device's statistics (tun_tx_dropped: packets the kernel could not queue to mptd), the packets
# the paths' qdiscs dropped (qdisc_dropped), UDP receive buffer overflows (udp_rcvbuf_errors,
# IPv4 and IPv6) and the TcpExt counters of /proc/net/netstat (TCPSACKReorder, TCPTSReorder:
# reordering TCP saw). `ip netns exec` mounts the namespace's own /sys, and /proc/net is the
# reader's namespace.
ml_kstats() {
        {
                for k in tx_dropped rx_dropped tx_packets; do
                        printf 'tun_%s %s\n' "$k" "$(lab_exec "$1" cat "/sys/class/net/lab/statistics/$k" 2>/dev/null || echo 0)"
                done
                printf 'qdisc_dropped %s\n' "$(lab_exec "$1" tc -s qdisc show |
                        awk '/^qdisc/ { path = ($5 ~ /^p[ab][0-9]+$/) } path && /dropped/ { sub(",", "", $7); n += $7 }
                             END { print n + 0 }')"
                printf 'udp_rcvbuf_errors %s\n' "$(lab_exec "$1" cat /proc/net/snmp /proc/net/snmp6 |
                        awk '$1 == "Udp:" { if (!h) { for (i = 2; i <= NF; i++) if ($i == "RcvbufErrors") c = i; h = 1 }
                                            else n += $c }
                             $1 == "Udp6RcvbufErrors" { n += $2 }
                             END { print n + 0 }')"
                lab_exec "$1" cat /proc/net/netstat |
                        awk '$1 == "TcpExt:" { if (!h) { for (i = 2; i <= NF; i++) n[i] = $i; h = 1 }
                                               else for (i = 2; i <= NF; i++) print n[i], $i }'
        } > "$2"
}
