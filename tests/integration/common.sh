# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Helpers shared by tests/integration/*.sh, on top of tests/lib/netns.sh (source that first).
# Everything here works on the lab's tunnel "lab" and reports failures through lab_die, so the
# lab's cleanup (namespaces, processes, temp dir) runs on every exit path.

it_fail() {
        lab_die "$*"
}

# A command that fails under `set -e` outside lab_die would end the test without a word; say
# which one and where (at the script's top level; functions are not traced).
IT_ERROR_SEEN=
it_on_error() {
        # Once: the shell is on its way out, and the exit trap's status would report again.
        [ -z "$IT_ERROR_SEEN" ] || return 0
        IT_ERROR_SEEN=1
        lab_log "FAIL: '$3' exited with status $1 (${BASH_SOURCE[1]##*/}:$2)"
}
trap 'it_on_error $? $LINENO "$BASH_COMMAND"' ERR

it_note() {
        lab_log "  $*"
}

it_pass() {
        lab_log "PASS: $*"
}

# it_soft_fail MESSAGE: records a failure but lets the test go on (for independent cases, so
# that one bug does not hide the next); it_finish then fails the test.
IT_SOFT_FAILURES=0
it_soft_fail() {
        lab_log "FAIL: $*"
        IT_SOFT_FAILURES=$((IT_SOFT_FAILURES + 1))
}

# it_finish NAME: exit 1 if it_soft_fail was called, else report success.
it_finish() {
        [ "$IT_SOFT_FAILURES" = 0 ] || lab_die "$1: $IT_SOFT_FAILURES failed check(s), see above"
        it_pass "$1"
}

# it_require COMMAND...: skip (77) when a tool the test needs is not installed.
it_require() {
        local c
        for c in "$@"; do
                command -v "$c" >/dev/null || lab_skip "needs $c"
        done
}

# it_profiles: lab_profiles with the same arguments. lab_profiles ends its per-path loop with
# `[ -n "$extra_p" ] && printf ...`, which makes the function fail under `set -e` when no extra
# path keys are given; a comment line as the extra path "key" avoids that without changing the
# profile's meaning.
it_profiles() {
        local n=$1 tfam=$2 pfam=$3 extra_t=${4:-} extra_p=${5:-}
        [ -n "$extra_p" ] || extra_p='# (no extra path keys)'
        lab_profiles "$n" "$tfam" "$pfam" "$extra_t" "$extra_p"
}

# it_set_path_key SIDE PATH KEY VALUE: appends KEY=VALUE to the [Path] section named PATH in
# $LAB_DIR/SIDE.conf (lab_profiles writes "Name=p<i>" as the first line of each path section).
it_set_path_key() {
        local f="$LAB_DIR/$1.conf"
        grep -qx "Name=$2" "$f" || it_fail "no path '$2' in $f"
        sed -i "/^Name=$2\$/a $3=$4" "$f"
}

# it_start SIDE [PROFILE] [MPTD ARGS...]: lab_start, then waits until the tunnel "lab" itself
# answers. lab_start polls `mptctl show`, which also succeeds while no tunnel runs yet ("no
# tunnels are running"), so on a busy machine it can return before mptd is up.
it_start() {
        local side=$1 pid
        lab_start "$@"
        eval "pid=\${LAB_PID_$side}"
        for _ in $(seq 100); do
                lab_ctl "$side" show lab >/dev/null 2>&1 && return 0
                kill -0 "$pid" 2>/dev/null || it_fail "mptd ($side) exited: $(tail -n 5 "$LAB_DIR/mptd-$side.log")"
                sleep 0.1
        done
        it_fail "mptd ($side) did not answer for tunnel 'lab' within 10 s"
}

it_now() {
        printf '%s' "$EPOCHREALTIME"
}

# it_elapsed START [END]: seconds between two it_now stamps, three decimals.
it_elapsed() {
        local end=${2:-$EPOCHREALTIME}
        awk -v a="$1" -v b="$end" 'BEGIN { printf "%.3f", b - a }'
}

# it_lt A B: true when the number A is less than B.
it_lt() {
        awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'
}

# it_state SIDE PATH: the path's state, read from the cheap tab-separated dump.
it_state() {
        lab_ctl "$1" show lab dump 2>/dev/null |
                awk -F'\t' -v p="name=$2" '$1 == "path" && $2 == p {
                        for (i = 3; i <= NF; i++) if ($i ~ /^state=/) { sub(/^state=/, "", $i); print $i } }'
}

# it_wait_state SIDE PATH STATE TIMEOUT: polls until the path is in STATE; IT_WAITED is the time
# that took (seconds, from the call). Returns 1 on timeout.
it_wait_state() {
        local start=$EPOCHREALTIME s
        IT_WAITED=
        while it_lt "$(it_elapsed "$start")" "$4"; do
                s=$(it_state "$1" "$2")
                if [ "$s" = "$3" ]; then
                        IT_WAITED=$(it_elapsed "$start")
                        return 0
                fi
                sleep 0.02
        done
        IT_WAITED=$(it_elapsed "$start")
        return 1
}

# it_expect_state SIDE PATH STATE TIMEOUT WHAT: it_wait_state or fail with expected/measured.
it_expect_state() {
        it_wait_state "$1" "$2" "$3" "$4" ||
                it_fail "$5: expected path $2 at $1 to be '$3' within $4 s, it is '$(it_state "$1" "$2")'"
}

# it_snap SIDE NAME: keeps a JSON snapshot of the tunnel for it_delta / it_shares.
it_snap() {
        lab_ctl "$1" --json show lab > "$LAB_DIR/snap-$1-$2.json" || it_fail "mptctl --json show at $1 failed"
}

# it_delta SIDE FROM TO FIELD [PATH]: counter growth between two snapshots, for one path or as
# "p0=N p1=N ...".
it_delta() {
        python3 - "$LAB_DIR/snap-$1-$2.json" "$LAB_DIR/snap-$1-$3.json" "$4" "${5:-}" <<'EOF'
import json, sys
a, b = (json.load(open(f))[0] for f in sys.argv[1:3])
field, only = sys.argv[3], sys.argv[4]
pa = {x["name"]: x for x in a["paths"]}
d = {x["name"]: x[field] - pa[x["name"]][field] for x in b["paths"]}
print(d[only] if only else " ".join("%s=%d" % kv for kv in d.items()))
EOF
}

# it_shares SIDE FROM TO "p0=W0 p1=W1 ..." TOLERANCE: checks that each listed path's share of
# the tx_bytes growth (among the listed paths) is within TOLERANCE (0.05 = 5 %) of its expected
# share W/sum(W), relative to that expected share. Prints a table; returns 1 when a share is off.
it_shares() {
        python3 - "$LAB_DIR/snap-$1-$2.json" "$LAB_DIR/snap-$1-$3.json" "$4" "$5" <<'EOF'
import json, sys
a, b = (json.load(open(f))[0] for f in sys.argv[1:3])
weights = dict((k, float(v)) for k, v in (x.split("=") for x in sys.argv[3].split()))
tol = float(sys.argv[4])
pa = {x["name"]: x for x in a["paths"]}
pb = {x["name"]: x for x in b["paths"]}
d = {n: pb[n]["tx_bytes"] - pa[n]["tx_bytes"] for n in weights}
total, wsum = sum(d.values()), sum(weights.values())
ok = total > 0
for n, w in weights.items():
    exp = w / wsum
    got = d[n] / total if total else 0.0
    dev = (got - exp) / exp
    bad = abs(dev) > tol
    ok = ok and not bad
    print("    %-4s weight %-5g expected share %6.2f %%  measured %6.2f %%  (%+.1f %% of expected, %d bytes)%s"
          % (n, w, exp * 100, got * 100, dev * 100, d[n], "  <-- off by more than %g %%" % (tol * 100) if bad else ""),
          file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
}

# it_ping SIDE ADDRESS [COUNT]: every echo request must be answered.
# (-w: without a deadline, ping stops waiting 2 x the largest RTT after its last request, so a
# late reply on a loaded machine counts as lost; with one, it sends more requests until COUNT
# are answered, so a loss shows as more transmitted than received.)
it_ping() {
        local out count=${3:-5}
        out=$(lab_exec "$1" ping -n -q -c "$count" -i 0.2 -W 2 -w 20 "$2" 2>&1) || true
        case "$out" in
        *"$count packets transmitted, $count received"*) it_note "ping $1 -> $2: $count/$count answered" ;;
        *) it_fail "ping $1 -> $2: expected $count of $count answered, got: $(printf '%s' "$out" | grep -E 'transmitted|rtt|unreachable' | tr '\n' ' ')" ;;
        esac
}

# it_wait_ping SIDE ADDRESS TIMEOUT: single pings until one is answered; IT_WAITED is the time.
it_wait_ping() {
        local start=$EPOCHREALTIME
        while it_lt "$(it_elapsed "$start")" "$3"; do
                if lab_exec "$1" ping -n -q -c 1 -W 0.3 "$2" >/dev/null 2>&1; then
                        IT_WAITED=$(it_elapsed "$start")
                        return 0
                fi
                sleep 0.05
        done
        IT_WAITED=$(it_elapsed "$start")
        return 1
}

# it_load_start ADDRESS SECONDS [IPERF3 CLIENT ARGS]: iperf3 from a to ADDRESS (at b) in the
# background. it_load_wait collects it.
it_load_start() {
        local addr=$1 secs=$2
        shift 2
        IT_LOAD_PORT=$((20000 + RANDOM % 20000))
        # Background processes are started with `ip netns exec` itself, not through lab_exec: a
        # backgrounded shell function is a subshell, and its $! would not be the iperf3 that
        # cleanup has to kill.
        ip netns exec "$(lab_ns b)" iperf3 -s -1 -p "$IT_LOAD_PORT" >/dev/null 2>&1 &
        IT_LOAD_SERVER=$!
        LAB_PIDS+=("$IT_LOAD_SERVER")
        sleep 0.3
        ip netns exec "$(lab_ns a)" iperf3 -c "$addr" -p "$IT_LOAD_PORT" -t "$secs" -J "$@" \
                > "$LAB_DIR/load.json" 2> "$LAB_DIR/load.err" &
        IT_LOAD_CLIENT=$!
        LAB_PIDS+=("$IT_LOAD_CLIENT")
}

# it_load_wait: waits for the background iperf3 and sets IT_LOAD_MBIT to the goodput the
# receiver saw (Mbit/s). Not in a command substitution: the iperf3 is a child of the test shell.
it_load_wait() {
        local rc=0
        wait "$IT_LOAD_CLIENT" || rc=$?
        wait "$IT_LOAD_SERVER" 2>/dev/null || true
        [ "$rc" = 0 ] || it_fail "background iperf3 failed (exit $rc): $(cat "$LAB_DIR/load.err"; tail -c 300 "$LAB_DIR/load.json")"
        IT_LOAD_MBIT=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["end"]["sum_received"]
print("%.2f" % (s["bits_per_second"] / 1e6))' "$LAB_DIR/load.json")
}

# it_iperf_udp ADDRESS SECONDS RATE: UDP a -> ADDRESS; prints "LOST SENT BYTES_RECEIVED": the
# datagrams the receiver found missing (gaps in iperf3's sequence numbers, less those that
# came late), the datagrams the sender sent, and the bytes received.
it_iperf_udp() {
        local addr=$1 secs=$2 rate=$3 port=$((20000 + RANDOM % 20000)) spid rc=0
        ip netns exec "$(lab_ns b)" iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
        spid=$!
        LAB_PIDS+=("$spid")
        sleep 0.3
        # -w: iperf3's receiving socket gets 4 MiB (passed to the server), so a receiver that
        # the (shared, busy) machine deschedules for a few ms does not overflow its own buffer:
        # the test is about what mptd delivers, not about iperf3's scheduling.
        lab_exec a iperf3 -c "$addr" -p "$port" -u -b "$rate" -l 1200 -t "$secs" -w 4M -J \
                > "$LAB_DIR/udp.json" 2> "$LAB_DIR/udp.err" || rc=$?
        wait "$spid" 2>/dev/null || true
        [ "$rc" = 0 ] || it_fail "iperf3 -u to $addr failed (exit $rc): $(cat "$LAB_DIR/udp.err"; tail -c 300 "$LAB_DIR/udp.json")"
        python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["end"]
print("%d %d %d" % (e["sum_received"]["lost_packets"], e["sum_sent"]["packets"], e["sum_received"]["bytes"]))' \
                "$LAB_DIR/udp.json"
}

# it_ksnap SIDE NAME: keeps the namespace kernel's own drop counters next to it_snap's snapshot
# of the same name: full UDP receive and send buffers (IPv4 and IPv6), the TUN device's dropped
# packets (tx: its queue to mptd was full; rx: the stack refused what mptd wrote) and every
# qdisc's drops. With it_snap's counters they name every place a datagram can be lost.
it_ksnap() {
        lab_exec "$1" python3 - > "$LAB_DIR/snap-$1-$2.kern" <<'EOF' || it_fail "cannot read the kernel's counters at $1"
import json, subprocess
out = {"udp_rcvbuf": 0, "udp_sndbuf": 0}
with open("/proc/net/snmp") as f:
    rows = [l.split() for l in f if l.startswith("Udp:")]
h = rows[0]
out["udp_rcvbuf"] += int(rows[1][h.index("RcvbufErrors")])
out["udp_sndbuf"] += int(rows[1][h.index("SndbufErrors")])
with open("/proc/net/snmp6") as f:
    for l in f:
        k, v = l.split()
        if k == "Udp6RcvbufErrors": out["udp_rcvbuf"] += int(v)
        if k == "Udp6SndbufErrors": out["udp_sndbuf"] += int(v)
links = json.loads(subprocess.run(["ip", "-s", "-j", "link", "show", "dev", "lab"], capture_output=True,
                                  text=True).stdout or "[]")
out["tun_tx_dropped"] = links[0]["stats64"]["tx"]["dropped"] if links else 0
out["tun_rx_dropped"] = links[0]["stats64"]["rx"]["dropped"] if links else 0
qd = json.loads(subprocess.run(["tc", "-s", "-j", "qdisc", "show"], capture_output=True, text=True).stdout or "[]")
out["qdisc_drops"] = sum(q.get("drops", 0) for q in qd)
print(json.dumps(out))
EOF
}

# it_loss_causes FROM TO: every counter, at either end, that says a datagram was lost between
# the snapshots FROM and TO (it_snap and it_ksnap of both a and b): mptd's drop counters of
# both ends (tunnel and paths; every reason but "duplicate", which loses nothing) and the
# kernel's (it_ksnap). Prints the total, then the counters that grew ("b:stale=3
# a:udp_sndbuf=1 ..."). A test compares the total with what its application found missing:
# a datagram that no counter accounts for is a loss mptd did not see, and fails the test.
it_loss_causes() {
        python3 - "$LAB_DIR" "$1" "$2" <<'EOF'
import json, sys
d, frm, to = sys.argv[1:4]
total, parts = 0, []
for side in ("a", "b"):
    s0, s1 = (json.load(open("%s/snap-%s-%s.json" % (d, side, n)))[0] for n in (frm, to))
    k0, k1 = (json.load(open("%s/snap-%s-%s.kern" % (d, side, n))) for n in (frm, to))
    grew = {}
    for r, v in s1["drops"].items():
        grew[r] = grew.get(r, 0) + v - s0["drops"][r]
    p0 = {x["name"]: x for x in s0["paths"]}
    for x in s1["paths"]:
        for r, v in x["drops"].items():
            grew[r] = grew.get(r, 0) + v - p0[x["name"]]["drops"][r]
    grew.pop("duplicate", None)
    for k in k1:
        grew[k] = k1[k] - k0[k]
    for k, v in sorted(grew.items()):
        if v:
            total += v
            parts.append("%s:%s=%d" % (side, k, v))
print(total, " ".join(parts))
EOF
}

# it_inject_plain CASE REASON WHAT: mpt-inject (MPT_INJECT=) sends 5 plain CASE frames from a's
# path p0 (forged source) at b's p0; b must count exactly 5 more drops of REASON on p0.
# WHAT names them in the messages.
it_inject_plain() {
        local what=$1 reason=$2 name=$3 before after
        before=$(lab_json b "p['p0']['drops']['$reason']")
        lab_exec a "$MPT_INJECT" --to "$(lab_path_addr b 0 4):4754" --spoof "$(lab_path_addr a 0 4):4754" --count 5 "$what" ||
                it_fail "mpt-inject failed"
        sleep 0.3
        after=$(lab_json b "p['p0']['drops']['$reason']")
        it_note "compat: b dropped $((after - before)) of 5 $name as $reason"
        [ $((after - before)) = 5 ] || it_soft_fail "compat: expected 5 $reason drops at b, got $((after - before))"
}
