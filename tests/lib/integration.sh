# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash disable=SC2034
# (SC2034: the IT_* results are read by the scripts that source this file)
#
# The helper layer of the integration tests (tests/integration/*.sh), the soak test and the failover
# bench, on the lab of tests/lib/netns.sh, which this file sources. The lab itself (lab_init,
# lab_topology, lab_profiles, lab_start, lab_ctl, lab_exec, lab_json, ...) is netns.sh's. Everything
# here works on the lab's tunnel "lab" at ends a and b and fails through it_fail, so the lab's
# cleanup (namespaces, processes, temp dir) runs on every exit path.
#
# Helper API:
#   Outcome
#     it_fail MSG                      FAIL: MSG (stating expected and measured), both ends' state, exit 1
#     it_soft_fail MSG                 FAIL: MSG, counted; the test goes on (independent checks all report)
#     it_finish NAME                   exit 1 (as it_fail) after a soft failure, else PASS: NAME
#     it_pass MSG                      PASS: MSG
#     it_note MSG                      an indented line in the log
#     it_show_all                      `mptctl show` of each end whose mptd runs, for the log
#     it_require COMMAND...            skip (77) unless each COMMAND is installed
#     it_require_nft                   skip (77) without nftables in the kernel
#   Profiles and start
#     it_set_path_key SIDE PATH K V    appends K=V to the [Path] Name=PATH of $LAB_DIR/SIDE.conf
#     it_start_both MS [PATH...]       lab_start a and b; each PATH (default: all) up at both within MS
#     it_start_pinging ADDRESS         lab_start a and b; a ping a -> ADDRESS answered within 10 s
#   Time
#     it_now                           prints the wall clock in seconds (six decimals)
#     it_elapsed START [END]           seconds between two it_now stamps (three decimals)
#     it_lt A B                        true when the number A is less than B
#     it_now_us                        IT_NOW_US: the wall clock in microseconds
#     it_ms US                         prints microseconds as milliseconds, one decimal
#     it_sleep_until US                sleeps until the wall clock (microseconds) reaches US
#     it_timed WHAT COMMAND...         runs COMMAND (it_fail if it fails); IT_T0_US: when it started
#   Path state, read from `mptctl show lab dump` (cheap enough to poll every few ms)
#     it_dump SIDE                     IT_DUMP: the dump now; IT_DUMP_T: when it was read (µs)
#     it_field_of DUMP PATH FIELD      IT_V: FIELD of PATH in DUMP (PATH "": the tunnel); 1 if none
#     it_get SIDE PATH FIELD           prints FIELD of PATH at SIDE now
#     it_wait SIDE PATH RE MS [T0]     polls until PATH's state matches ^(RE)$; IT_STATE, IT_REASON,
#                                      IT_SEEN_US (first dump showing it) and IT_AT_US (when mptd
#                                      changed it, from state_age_us), both minus T0 (µs, default now)
#     it_expect SIDE PATH RE MS WHAT [T0]       it_wait or it_fail
#     it_expect_up PATH MS T0 WHAT     PATH up at a, then at b, each within MS of T0 (after WHAT), noted
#     it_expect_remote PATH REMOTE MS T0 WHAT   b's PATH follows a new source (remote REMOTE)
#     it_stayed_up PATH T0 WHAT        PATH is up at both ends since before T0, else it_soft_fail
#   Counter snapshots (`mptctl --json show lab` in $LAB_DIR/snap-SIDE-NAME.json; a FIELD
#   "drop.REASON" is a drop counter)
#     it_snap SIDE NAME                keeps a snapshot
#     it_snap_both NAME                it_snap at a and at b
#     it_snap_value SIDE NAME PATH F   prints field F of PATH (PATH "": the tunnel) in a snapshot
#     it_delta SIDE FROM TO F PATH     prints how much counter F of PATH grew between two snapshots
#     it_deltas SIDE FROM TO F [PATH...]  "p0=N p1=N ..." (every path when none is named)
#     it_drops SIDE FROM TO [REASON...]   the drop counters that grew (tunnel and paths summed):
#                                      "reason=N ..." (only REASONs when given), empty when none
#     it_expect_delta SIDE FROM TO F PATH TEST N WHAT   the growth passes `[ D TEST N ]`, else it_fail
#     it_expect_grew FROM TO PATH WHAT [SIDE:F...]  each counter grew (default: both ends' tx and rx
#                                      bytes), else it_soft_fail
#     it_shares SIDE FROM TO "p0=W ..." TOL  each path's share of the tx_bytes growth within TOL
#     it_check_growth SIDE FROM TO F   runs the Python check on stdin with d (path: growth of F) and total
#     it_ksnap SIDE NAME               the namespace kernel's drop counters beside snapshot NAME
#     it_snap_loss NAME                it_snap and it_ksnap at both ends: what it_loss_causes compares
#     it_loss_causes FROM TO           every counter of both ends that counts a lost datagram
#   Traffic
#     it_ping SIDE ADDRESS [COUNT [INTERVAL]]   every echo request must be answered, else it_fail
#     it_ping_soft SIDE ADDRESS COUNT [INTERVAL]  the same, a miss is an it_soft_fail
#     it_wait_ping SIDE ADDRESS S      single pings until one is answered; IT_WAITED
#     it_tcp_between FROM TO S WHAT    TCP a -> b for S seconds between snapshots FROM and TO at a;
#                                      IT_TCP_MBIT: its goodput, noted with a's tx_bytes growth
#     it_load_start ADDRESS S [ARGS]   iperf3 from a to ADDRESS (at b) in the background
#     it_wait_flow BYTES MS PATH...    waits until a's tx_bytes grew by more than BYTES on each PATH
#     it_load_wait                     collects it_load_start's iperf3: IT_LOAD_MBIT, _BYTES, _RETRANS
#     it_load_stop                     ends it_load_start's iperf3 when its result does not matter
#     it_iperf_udp ADDRESS S RATE      UDP a -> ADDRESS; prints "LOST SENT BYTES_RECEIVED"
#     it_inject_plain CASE REASON WHAT 5 forged compat frames at b's p0 must count 5 REASON drops

# shellcheck source=netns.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"

export LC_ALL=C

# ---- outcome ----

# A command that fails under `set -e` outside it_fail would end the test without a word; say
# which one and where (at the script's top level; functions are not traced).
IT_ERROR_SEEN=
it_on_error() {
        # Once: the shell is on its way out, and the exit trap's status would report again.
        [ -z "$IT_ERROR_SEEN" ] || return 0
        IT_ERROR_SEEN=1
        local src=${BASH_SOURCE[1]:-?}
        lab_log "FAIL: '$3' exited with status $1 (${src##*/}:$2)"
}
trap 'it_on_error $? $LINENO "$BASH_COMMAND"' ERR

it_note() {
        lab_log "  $*"
}

it_pass() {
        lab_log "PASS: $*"
}

it_show_all() {
        local side pid
        for side in a b; do
                eval "pid=\${LAB_PID_$side:-}"
                [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
                lab_log "---- mptctl show at $side ----"
                lab_ctl "$side" show >&2 2>&1 || lab_log "(mptctl show at $side failed)"
        done
}

# it_fail MESSAGE: the lab's cleanup then prints the mptd logs.
it_fail() {
        lab_log "FAIL: $*"
        it_show_all
        exit 1
}

IT_SOFT_FAILURES=0
it_soft_fail() {
        lab_log "FAIL: $*"
        IT_SOFT_FAILURES=$((IT_SOFT_FAILURES + 1))
}

it_finish() {
        [ "$IT_SOFT_FAILURES" = 0 ] || it_fail "$1: $IT_SOFT_FAILURES failed check(s), see above"
        it_pass "$1"
}

it_require() {
        local c
        for c in "$@"; do
                command -v "$c" >/dev/null || lab_skip "needs $c"
        done
}

# it_require_nft: probed in namespace a.
it_require_nft() {
        it_require nft
        lab_exec a nft add table inet mpt_probe 2>/dev/null || lab_skip "needs nftables in the kernel"
        lab_exec a nft delete table inet mpt_probe
}

# ---- profiles and start ----

# it_set_path_key SIDE PATH KEY VALUE: lab_profiles writes "Name=p<i>" as the first line of each
# path section.
it_set_path_key() {
        local f="$LAB_DIR/$1.conf"
        grep -qx "Name=$2" "$f" || it_fail "no path '$2' in $f"
        sed -i "/^Name=$2\$/a $3=$4" "$f"
}

# it_start_both TIMEOUT_MS [PATH...]: the paths default to lab_topology's p0 .. p<N-1>.
it_start_both() {
        local timeout=$1 p i
        shift
        if [ $# = 0 ]; then
                for ((i = 0; i < LAB_PATHS; i++)); do
                        set -- "$@" "p$i"
                done
        fi
        lab_start a
        lab_start b
        for p in "$@"; do
                it_expect a "$p" up "$timeout" "after start"
                it_expect b "$p" up "$timeout" "after start"
        done
}

# it_start_pinging ADDRESS: for tests that need the tunnel to carry traffic, whatever its paths.
it_start_pinging() {
        lab_start a
        lab_start b
        it_wait_ping a "$1" 10 || it_fail "no ping a -> $1 through the tunnel within 10 s of the start"
}

# ---- time ----
#
# Seconds ($EPOCHREALTIME, compared with awk) for timeouts and measured waits; integer
# microseconds (shell arithmetic) where times are compared with mptd's state_age_us or with
# packet capture timestamps.

it_now() {
        printf '%s' "$EPOCHREALTIME"
}

it_elapsed() {
        local end=${2:-$EPOCHREALTIME}
        awk -v a="$1" -v b="$end" 'BEGIN { printf "%.3f", b - a }'
}

it_lt() {
        awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'
}

it_now_us() {
        IT_NOW_US=${EPOCHREALTIME/./}
}

it_ms() {
        local us=$1 sign='' tenths
        if [ "$us" -lt 0 ]; then
                sign=-
                us=$((-us))
        fi
        tenths=$(((us + 50) / 100))
        printf '%s%d.%d' "$sign" $((tenths / 10)) $((tenths % 10))
}

it_sleep_until() {
        local rest=$(($1 - ${EPOCHREALTIME/./}))
        [ "$rest" -le 0 ] || sleep "$((rest / 1000000)).$(printf '%06d' $((rest % 1000000)))"
}

# it_timed WHAT COMMAND...: the event a test times its expectations from (it_wait's T0).
it_timed() {
        local what=$1
        shift
        IT_T0_US=${EPOCHREALTIME/./}
        "$@" || it_fail "$what failed"
}

# ---- path state ----
#
# The dump has one tab-separated line per path, "key=value". A transition's time is taken from
# the path's state_age_us in the first dump that shows the new state: "seen at" minus the age,
# which does not depend on how fast the shell polls.

it_dump() {
        IT_DUMP=$(lab_ctl "$1" show lab dump 2>/dev/null) || IT_DUMP=
        IT_DUMP_T=${EPOCHREALTIME/./}
}

it_field_of() {
        local line f want=$'path\tname='$2$'\t'
        local -a fs
        IT_V=
        [ -n "$2" ] || want=$'tunnel\t'
        while IFS= read -r line; do
                [[ "$line" == "$want"* ]] || continue
                IFS=$'\t' read -r -a fs <<<"$line"
                for f in "${fs[@]}"; do
                        if [[ "$f" == "$3="* ]]; then
                                IT_V=${f#*=}
                                return 0
                        fi
                done
                return 1
        done <<<"$1"
        return 1
}

it_get() {
        it_dump "$1"
        it_field_of "$IT_DUMP" "$2" "$3" || true
        printf '%s' "$IT_V"
}

# it_wait SIDE PATH REGEX TIMEOUT_MS [T0_US]: on timeout returns 1 with IT_STATE/IT_REASON as
# last seen.
it_wait() {
        local side=$1 path=$2 re="^($3)\$" timeout_us=$(($4 * 1000)) t0=${5:-${EPOCHREALTIME/./}} age
        IT_STATE='' IT_REASON='' IT_SEEN_US='' IT_AT_US=''
        while :; do
                it_dump "$side"
                if it_field_of "$IT_DUMP" "$path" state; then
                        IT_STATE=$IT_V
                        it_field_of "$IT_DUMP" "$path" reason || true
                        IT_REASON=$IT_V
                        if [[ "$IT_STATE" =~ $re ]]; then
                                it_field_of "$IT_DUMP" "$path" state_age_us || IT_V=0
                                age=$IT_V
                                IT_SEEN_US=$((IT_DUMP_T - t0))
                                IT_AT_US=$((IT_DUMP_T - age - t0))
                                return 0
                        fi
                fi
                [ $((IT_DUMP_T - t0)) -lt "$timeout_us" ] || return 1
                sleep 0.005
        done
}

it_expect() {
        it_wait "$1" "$2" "$3" "$4" "${6:-}" ||
                it_fail "$5: expected path $2 at $1 to be '$3' within $4 ms, it is '$IT_STATE' (reason: ${IT_REASON:-none})"
}

# it_expect_up PATH TIMEOUT_MS T0_US WHAT: the path came back (after WHAT, at T0) at both ends.
it_expect_up() {
        local side
        for side in a b; do
                it_expect "$side" "$1" up "$2" "after $4" "$3"
                it_note "$1 up at $side $(it_ms "$IT_AT_US") ms after $4"
        done
}

# it_expect_remote PATH REMOTE TIMEOUT_MS T0_US WHAT: b took a's datagrams on PATH from a new
# source (WHAT changed it, at T0) and sends there now.
it_expect_remote() {
        local path=$1 want=$2 end=$(($4 + $3 * 1000)) remote changes
        while :; do
                it_dump b
                it_field_of "$IT_DUMP" "$path" remote || true
                remote=$IT_V
                it_field_of "$IT_DUMP" "$path" remote_changes || true
                changes=$IT_V
                [ "$remote" = "$want" ] && [ "$changes" -ge 1 ] && break
                [ "$IT_DUMP_T" -lt "$end" ] ||
                        it_fail "$path at b: expected remote $want and remote_changes >= 1 within $3 ms of $5, mptctl shows remote '$remote', remote_changes $changes"
                sleep 0.005
        done
        it_note "$path at b follows: remote $remote, remote_changes $changes, seen $(it_ms $((IT_DUMP_T - $4))) ms after $5"
}

# it_stayed_up PATH T0_US WHAT: a change of addresses or ports (WHAT, at T0) is no outage: the
# path's state_age_us reaches back to before it.
it_stayed_up() {
        local side st since
        for side in a b; do
                it_dump "$side"
                it_field_of "$IT_DUMP" "$1" state || true
                st=$IT_V
                it_field_of "$IT_DUMP" "$1" state_age_us || true
                since=$((IT_DUMP_T - IT_V - $2))
                if [ "$st" != up ] || [ "$since" -gt 0 ]; then
                        it_soft_fail "$1 at $side: expected it to stay 'up' through $3, it is '$st' since $(it_ms "$since") ms after it"
                fi
        done
}

# ---- counter snapshots ----

it_snap() {
        lab_ctl "$1" --json show lab > "$LAB_DIR/snap-$1-$2.json" || it_fail "mptctl --json show at $1 failed"
}

it_snap_both() {
        it_snap a "$1"
        it_snap b "$1"
}

# it_snapshots_py MODE SIDE FROM TO FIELD PATH...: the snapshots' reader behind it_snap_value,
# it_delta, it_deltas and it_drops (one Python for any number of paths; for "drops", the PATHs
# are the reasons to report).
it_snapshots_py() {
        python3 - "$LAB_DIR" "$@" <<'EOF'
import json, sys
d, mode, side, frm, to, field, *paths = sys.argv[1:]

def load(name):
    return json.load(open("%s/snap-%s-%s.json" % (d, side, name)))[0]

def value(t, path):
    rec = t if not path else {x["name"]: x for x in t["paths"]}[path]
    group, _, member = field.rpartition(".")
    if group:
        rec = rec["drops" if group == "drop" else group]
    return rec[member]

def drops(t):
    d = dict(t["drops"])
    for x in t["paths"]:
        for k, v in x["drops"].items():
            d[k] = d.get(k, 0) + v
    return d

a = load(frm)
if mode == "value":
    print(value(a, paths[0]))
    sys.exit(0)
b = load(to)
if mode == "delta":
    print(value(b, paths[0]) - value(a, paths[0]))
elif mode == "drops":
    da, db = drops(a), drops(b)
    print(" ".join("%s=%d" % (k, db[k] - da.get(k, 0)) for k in sorted(db)
                   if db[k] != da.get(k, 0) and (not paths or k in paths)))
else:
    paths = paths or [x["name"] for x in b["paths"]]
    print(" ".join("%s=%d" % (p, value(b, p) - value(a, p)) for p in paths))
EOF
}

it_snap_value() {
        it_snapshots_py value "$1" "$2" "$2" "$4" "$3" || it_fail "no field $4 of path '$3' in snapshot $2 of $1"
}

it_delta() {
        it_snapshots_py delta "$1" "$2" "$3" "$4" "$5" ||
                it_fail "no field $4 of path '$5' in snapshots $2 and $3 of $1"
}

it_deltas() {
        it_snapshots_py deltas "$@" || it_fail "no field $4 in snapshots $2 and $3 of $1"
}

it_drops() {
        local side=$1 from=$2 to=$3
        shift 3
        it_snapshots_py drops "$side" "$from" "$to" "" "$@" || it_fail "cannot read snapshots $from and $to of $side"
}

# it_expect_delta SIDE FROM TO FIELD PATH TEST N WHAT: WHAT completes "expected FIELD ...", e.g.
# "to grow by more than 1 MB under load" (TEST -gt, N 1000000).
it_expect_delta() {
        local d
        d=$(it_delta "$1" "$2" "$3" "$4" "$5")
        [ "$d" "$6" "$7" ] || it_fail "$5 at $1: expected $4 $8, grew by $d"
}

# it_expect_grew FROM TO PATH WHAT [SIDE:FIELD...]: WHAT (traffic between the snapshots of both
# ends) went over PATH in both directions.
it_expect_grew() {
        local from=$1 to=$2 path=$3 what=$4 spec d
        shift 4
        [ $# -gt 0 ] || set -- a:tx_bytes b:rx_bytes b:tx_bytes a:rx_bytes
        for spec in "$@"; do
                d=$(it_delta "${spec%%:*}" "$from" "$to" "${spec#*:}" "$path")
                [ "$d" -gt 0 ] || it_soft_fail "$path at ${spec%%:*}: expected ${spec#*:} to grow during $what, grew by $d"
        done
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

# it_check_growth SIDE FROM TO FIELD: the check (Python on stdin) sees d, each path's growth of
# FIELD by name, and total, their sum; its exit status is the check's.
it_check_growth() {
        python3 -c '
import json, sys
a, b = (json.load(open(f))[0] for f in sys.argv[1:3])
pa = {x["name"]: x[sys.argv[3]] for x in a["paths"]}
d = {x["name"]: x[sys.argv[3]] - pa[x["name"]] for x in b["paths"]}
total = sum(d.values())
exec(sys.stdin.read())' "$LAB_DIR/snap-$1-$2.json" "$LAB_DIR/snap-$1-$3.json" "$4"
}

# it_ksnap SIDE NAME: full UDP receive and send buffers (IPv4 and IPv6), the TUN device's dropped
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

it_snap_loss() {
        it_snap_both "$1"
        it_ksnap a "$1"
        it_ksnap b "$1"
}

# it_loss_causes FROM TO: from the snapshots FROM and TO (it_snap and it_ksnap of both a and b):
# mptd's drop counters of both ends (tunnel and paths; every reason but "duplicate", which loses
# nothing) and the kernel's (it_ksnap). Prints the total, then the counters that grew
# ("b:stale=3 a:udp_sndbuf=1 ..."). A test compares the total with what its application found
# missing: a datagram that no counter accounts for is a loss mptd did not see, and fails the test.
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

# ---- traffic ----

# it_ping_with FAIL SIDE ADDRESS COUNT INTERVAL: it_ping and it_ping_soft, FAIL reporting a miss.
# -w: without a deadline, ping stops waiting 2 x the largest RTT after its last request, so a
# late reply on a loaded machine counts as lost; with one, it sends more requests until COUNT
# are answered, so a loss shows as more transmitted than received.
it_ping_with() {
        local out count=$4
        out=$(lab_exec "$2" ping -n -q -c "$count" -i "$5" -W 2 -w 20 "$3" 2>&1) || true
        case "$out" in
        *"$count packets transmitted, $count received"*) it_note "ping $2 -> $3: $count/$count answered" ;;
        *) "$1" "ping $2 -> $3: expected $count of $count answered, got: $(printf '%s' "$out" | grep -E 'transmitted|rtt|unreachable' | tr '\n' ' ')" ;;
        esac
}

it_ping() {
        it_ping_with it_fail "$1" "$2" "${3:-5}" "${4:-0.2}"
}

it_ping_soft() {
        it_ping_with it_soft_fail "$1" "$2" "$3" "${4:-0.2}"
}

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

# it_tcp_between FROM TO SECONDS WHAT: to b's IPv4 tunnel address; WHAT names the case in the note.
it_tcp_between() {
        it_snap a "$1"
        IT_TCP_MBIT=$(lab_iperf_tcp "$(lab_tunnel_addr b 4)" "$3")
        it_snap a "$2"
        it_note "$4: $IT_TCP_MBIT Mbit/s; tx_bytes at a: $(it_deltas a "$1" "$2" tx_bytes)"
}

# it_load_start ADDRESS SECONDS [IPERF3 CLIENT ARGS]: the client's JSON goes to
# $LAB_DIR/load.json. Not in a command substitution: the iperf3s must be children of the test's
# shell, for it_load_wait and for the cleanup.
it_load_start() {
        local addr=$1 secs=$2
        shift 2
        IT_LOAD_PORT=$((20000 + RANDOM % 20000))
        lab_spawn b iperf3 -s -1 -p "$IT_LOAD_PORT" >"$LAB_DIR/load-server.log" 2>&1
        IT_LOAD_SERVER=$LAB_SPAWNED
        lab_wait_listen b tcp "$IT_LOAD_PORT" || it_fail "iperf3 server did not start"
        lab_spawn a iperf3 -c "$addr" -p "$IT_LOAD_PORT" -t "$secs" -J "$@" >"$LAB_DIR/load.json" 2>"$LAB_DIR/load.err"
        IT_LOAD_CLIENT=$LAB_SPAWNED
}

# it_wait_flow BYTES TIMEOUT_MS PATH...: the load runs over every PATH; fails after TIMEOUT_MS.
it_wait_flow() {
        local min=$1 timeout_ms=$2 end=$((${EPOCHREALTIME/./} + $2 * 1000)) d ok
        shift 2
        it_snap a flow0
        while :; do
                it_snap a flow1
                ok=yes
                for d in $(it_deltas a flow0 flow1 tx_bytes "$@"); do
                        [ "${d#*=}" -gt "$min" ] || ok=no
                done
                [ "$ok" = no ] || return 0
                [ "${EPOCHREALTIME/./}" -lt "$end" ] ||
                        it_fail "load: expected tx_bytes at a to grow by more than $min on $* within $timeout_ms ms of starting iperf3, grew by $(it_deltas a flow0 flow1 tx_bytes "$@")"
                sleep 0.05
        done
}

# it_load_wait: fails unless the iperf3 client exited 0 and its JSON has no "error". Sets
# IT_LOAD_MBIT (goodput at the receiver), IT_LOAD_BYTES (received) and IT_LOAD_RETRANS (TCP
# retransmissions; 0 for UDP). Not in a command substitution (see it_load_start).
it_load_wait() {
        local rc=0 out
        wait "$IT_LOAD_CLIENT" || rc=$?
        wait "$IT_LOAD_SERVER" 2>/dev/null || true
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
        *) it_fail "iperf3: expected a clean run (exit 0, no error in its JSON), got exit $rc: ${out#ERROR } $(cat "$LAB_DIR/load.err")" ;;
        esac
        [ "$rc" = 0 ] || it_fail "iperf3: expected exit status 0, got $rc: $(cat "$LAB_DIR/load.err")"
        read -r _ IT_LOAD_MBIT IT_LOAD_BYTES IT_LOAD_RETRANS <<<"$out"
}

it_load_stop() {
        kill -TERM "$IT_LOAD_CLIENT" "$IT_LOAD_SERVER" 2>/dev/null || true
        wait "$IT_LOAD_CLIENT" 2>/dev/null || true
        wait "$IT_LOAD_SERVER" 2>/dev/null || true
}

# it_iperf_udp ADDRESS SECONDS RATE: LOST is the datagrams the receiver found missing (gaps in
# iperf3's sequence numbers, less those that came late), SENT the datagrams the sender sent.
it_iperf_udp() {
        local addr=$1 secs=$2 rate=$3 port=$((20000 + RANDOM % 20000)) spid rc=0
        lab_spawn b iperf3 -s -1 -p "$port" >/dev/null 2>&1
        spid=$LAB_SPAWNED
        lab_wait_listen b tcp "$port" || it_fail "iperf3 server did not start"
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

# it_inject_plain CASE REASON WHAT: mpt-inject (MPT_INJECT=) sends 5 plain CASE frames from a's
# path p0 (forged source) at b's p0; b must count exactly 5 more drops of REASON on p0. WHAT
# names them in the messages.
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
