#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mptctl against a running lab tunnel (three unshaped paths; Scheduler=weighted, so that a
# runtime weight decides the shares whatever the load).
#
# Asserts:
#   - `mptctl check` accepts the lab's profile ("OK"), `mptctl keys` lists Weight=;
#   - `mptctl show` (all tunnels, text) names the tunnel and every path;
#   - `mptctl --json show` and `--json show lab` parse, with the tunnel and its three paths;
#   - `mptctl show lab dump` is tab-separated records: one "tunnel" record, then one "path"
#     record per path, every field KEY=VALUE;
#   - `mptctl --json monitor lab --interval=0.2 --count=2` prints two JSON rate lines;
#   - `path lab p0 set weight 3` takes effect at once: weight 3 (source "runtime"), and under a
#     TCP load the shares follow 3:1:1 within ±5 % (relative to the expected share);
#   - `path lab p1 down`: p1 is "admin-down" at a, "peer-down" at b (within 1 s), and neither end
#     sends data on it (tx_bytes growth 0 under load);
#   - `showconf lab` then prints a profile that `mptctl check` accepts, with Weight=3 in p0's
#     section, a "taken down" comment in p1's, the profile's keys (and its Key=, as root);
#   - `path lab p1 up`: "up" again on both
#     ends and p1 carries traffic again;
#   - errors exit with status 1 and say why: unknown path ("tunnel 'lab' has no path ..."),
#     unknown tunnel ("... is not running"), weight 10001, -1 or "abc" ("invalid weight"),
#     an unknown command; a rejected weight leaves the weight unchanged; 10000 is accepted.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

# expect_error "STDERR SUBSTRING" MPTCTL_ARGS...: runs mptctl at a, which must
# exit with status 1 and print the substring on stderr.
expect_error() {
        local want=$1 rc=0
        shift
        lab_ctl a "$@" > "$LAB_DIR/err.out" 2> "$LAB_DIR/err.txt" || rc=$?
        [ "$rc" = 1 ] || it_fail "mptctl $*: expected exit status 1, got $rc (stderr: $(cat "$LAB_DIR/err.txt"))"
        grep -qF -- "$want" "$LAB_DIR/err.txt" ||
                it_fail "mptctl $*: expected '$want' on stderr, got: $(cat "$LAB_DIR/err.txt")"
        it_note "mptctl $*: exit 1, $(head -n 1 "$LAB_DIR/err.txt")"
}

lab_init
it_require iperf3 python3
lab_topology 3 none 4
lab_profiles 3 4 4 'Scheduler=weighted' 'KeepaliveInterval=200ms\nDeadTime=2s'
lab_start a
lab_start b

# ---- check, keys ----
out=$(lab_ctl a check "$LAB_DIR/a.conf") || it_fail "mptctl check on a good profile: expected exit 0"
[ "$out" = "$LAB_DIR/a.conf: OK (tunnel 'lab', 3 paths)" ] ||
        it_fail "mptctl check on a good profile: expected '$LAB_DIR/a.conf: OK (tunnel 'lab', 3 paths)', got '$out'"
lab_ctl a keys | grep -F "[Path] Weight=0..10000" >/dev/null || it_fail "mptctl keys: expected a line for [Path] Weight="

# ---- show, text ----
lab_ctl a show > "$LAB_DIR/show.txt"
for want in "tunnel: lab" "path: p0" "path: p1" "path: p2"; do
        grep -qF "$want" "$LAB_DIR/show.txt" || it_fail "mptctl show: expected '$want' in the output, got: $(cat "$LAB_DIR/show.txt")"
done

# ---- show, JSON ----
for args in "--json show" "--json show lab"; do
        # shellcheck disable=SC2086
        lab_ctl a $args | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert isinstance(d, list) and len(d) == 1, "expected an array of one tunnel, got %r" % d
t = d[0]
assert t["name"] == "lab", "name: %r" % t["name"]
assert [p["name"] for p in t["paths"]] == ["p0", "p1", "p2"], "paths: %r" % [p["name"] for p in t["paths"]]
for key in ("mtu", "paths_up", "reorder", "drops", "peer_restarts"):
    assert key in t, "tunnel field %r missing" % key
for p in t["paths"]:
    for key in ("state", "weight", "weight_source", "tx_packets", "tx_bytes", "rx_packets", "rx_bytes",
                "keepalives_tx", "keepalives_rx", "last_keepalive_us", "rtt_us", "drops"):
        assert key in p, "path field %r missing" % key
' || it_fail "mptctl $args: output is not the expected JSON"
done

# ---- show dump ----
lab_ctl a show lab dump > "$LAB_DIR/dump.txt"
awk -F'\t' '
        NR == 1 && $1 != "tunnel" { print "line 1: expected a tunnel record, got " $1; bad = 1 }
        NR > 1 && $1 != "path" { print "line " NR ": expected a path record, got " $1; bad = 1 }
        NF < 5 { print "line " NR ": expected tab-separated fields, got " NF " field(s)"; bad = 1 }
        { for (i = 2; i <= NF; i++) if ($i !~ /^[a-z0-9_.-]+=/) { print "line " NR ": field " i " is not KEY=VALUE: " $i; bad = 1 } }
        NR > 1 { names = names " " $2 }
        END {
                if (NR != 4) { print "expected 4 records, got " NR; bad = 1 }
                if (names != " name=p0 name=p1 name=p2") { print "path records:" names; bad = 1 }
                exit bad
        }' "$LAB_DIR/dump.txt" >&2 || it_fail "mptctl show lab dump: not the expected tab-separated records"

# ---- monitor ----
lab_ctl a --json monitor lab --interval=0.2 --count=2 > "$LAB_DIR/monitor.txt" ||
        it_fail "mptctl monitor failed"
python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, "expected 2 lines, got %d" % len(lines)
for l in lines:
    d = json.loads(l)
    assert [p["name"] for p in d["paths"]] == ["p0", "p1", "p2"], d
' "$LAB_DIR/monitor.txt" || it_fail "mptctl --json monitor: unexpected output: $(cat "$LAB_DIR/monitor.txt")"

# ---- set weight ----
lab_ctl a path lab p0 set weight 3
got=$(lab_json a '"%s/%s" % (p["p0"]["weight"], p["p0"]["weight_source"])')
[ "$got" = 3/runtime ] || it_fail "after 'set weight 3': expected p0 weight 3/runtime, mptctl shows $got"
it_tcp_between w0 w1 3 "TCP load with weights 3:1:1"
it_shares a w0 w1 "p0=3 p1=1 p2=1" 0.05 || it_fail "shares do not follow the runtime weights 3:1:1 within ±5 %"

# ---- path down ----
lab_ctl a path lab p1 down
it_expect a p1 admin-down 500 "after 'path lab p1 down' at a"
it_expect b p1 peer-down 1000 "at b after 'path lab p1 down' at a"
it_note "p1 peer-down at b $(it_ms "$IT_SEEN_US") ms after 'down' at a"
it_snap_both d0
mbit=$(lab_iperf_tcp "$(lab_tunnel_addr b 4)" 2)
it_snap_both d1
it_note "p1 down: $mbit Mbit/s; tx_bytes at a: $(it_deltas a d0 d1 tx_bytes); at b: $(it_deltas b d0 d1 tx_bytes)"
for side in a b; do
        it_expect_delta "$side" d0 d1 tx_bytes p1 -eq 0 "not to grow (no data sent on a downed path)"
        for p in p0 p2; do
                it_expect_delta "$side" d0 d1 tx_bytes "$p" -gt 0 "to grow under load"
        done
done

# ---- showconf: the running configuration, with the runtime weight and the downed path ----
(umask 077; lab_ctl a showconf lab > "$LAB_DIR/showconf.conf")
# The [Path] section of p0 (from its Name= to the next section) has Weight=3, the one of p1 the
# comment; every key of a's profile file is there with its value (as the parser writes it back).
awk '/^\[/ { sec = $0 } /^Name=/ { name = $0 } sec == "[Path]" && name == "Name=p0" && $0 == "Weight=3" { w = 1 }
     sec == "[Path]" && name == "Name=p1" && /^# taken down/ { d = 1 } END { exit !(w && d) }' "$LAB_DIR/showconf.conf" ||
        it_fail "mptctl showconf lab: expected Weight=3 for p0 and a 'taken down' comment for p1, got: $(cat "$LAB_DIR/showconf.conf")"
for key in Name Address Peer Scheduler KeepaliveInterval DeadTime Remote Interface; do
        grep -q "^$key=" "$LAB_DIR/showconf.conf" || it_fail "mptctl showconf lab: no $key= line in: $(cat "$LAB_DIR/showconf.conf")"
done
if grep -q '^Key=' "$LAB_DIR/a.conf"; then
        grep -qxF "$(grep '^Key=' "$LAB_DIR/a.conf")" "$LAB_DIR/showconf.conf" ||
                it_fail "mptctl showconf lab (as root): the profile's Key= is missing"
fi
out=$(lab_ctl a check "$LAB_DIR/showconf.conf") || it_fail "mptctl check of showconf's output: $out"
[ "$out" = "$LAB_DIR/showconf.conf: OK (tunnel 'lab', 3 paths)" ] ||
        it_fail "mptctl check of showconf's output: expected OK with 3 paths, got '$out'"
it_note "showconf: $(wc -l < "$LAB_DIR/showconf.conf") lines, a valid profile; p0 Weight=3, p1 marked down"

# ---- path up ----
lab_ctl a path lab p1 up
it_expect a p1 up 500 "after 'path lab p1 up' at a"
it_expect b p1 up 1000 "at b after 'path lab p1 up' at a"
it_tcp_between u0 u1 2 "p1 up again"
it_shares a u0 u1 "p0=3 p1=1 p2=1" 0.05 || it_fail "after 'up', shares do not follow 3:1:1 within ±5 %"

# ---- errors ----
expect_error "tunnel 'lab' has no path 'nosuch'" path lab nosuch down
expect_error "tunnel 'lab' has no path 'nosuch'" path lab nosuch set weight 2
expect_error "tunnel 'nosuch' is not running" show nosuch
expect_error "tunnel 'nosuch' is not running" path nosuch p0 down
expect_error "invalid weight '10001'" path lab p0 set weight 10001
expect_error "invalid weight '-1'" path lab p0 set weight -1
expect_error "invalid weight 'abc'" path lab p0 set weight abc
expect_error "unknown command 'frobnicate'" frobnicate
got=$(lab_json a 'p["p0"]["weight"]')
[ "$got" = 3 ] || it_fail "after rejected weights: expected p0 weight still 3, mptctl shows $got"
lab_ctl a path lab p0 set weight 10000 || it_fail "set weight 10000: expected success (the maximum)"
got=$(lab_json a 'p["p0"]["weight"]')
[ "$got" = 10000 ] || it_fail "after 'set weight 10000': expected weight 10000, mptctl shows $got"

it_pass "mptctl"
