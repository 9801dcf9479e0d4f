#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The options of mptctl's commands, parsed with getopt_long(), against a fake control socket
# (tests/lib/fake-mptd.py: no root, no tunnel).
#
# Asserts:
#   - `monitor lab --interval 0.1 --count 2`, `--interval=0.1 --count=2` and the options before
#     the tunnel (`monitor --count 2 --interval 0.1 lab`) each print two reports, at the interval
#     given (well under the 3 s that the default interval of 1 s would take), also with
#     POSIXLY_CORRECT set;
#   - `--` ends the options: `monitor -- lab` is the tunnel lab;
#   - bad options exit with status 1 and say why on one line: a missing value, an unknown long or
#     short option, an option of mptctl itself after the command (with where it goes), a value
#     out of range (nan, 0.01, 3601) or not a number, and a second tunnel;
#   - commands without options take their arguments as they are: `path lab p0 set weight -1`
#     is an invalid weight, not an unknown option;
#   - `check` of a profile with Key= that its group and others can read: OK (exit 0) with one
#     "FILE:LINE: warning:" line at Key=; with `--strict` (before or after the file) the same line
#     is a problem and the exit status 1, in JSON too ("ok": false); a private one passes
#     `--strict`; `--strict=yes` is an error; `check -- -x.conf` checks the file "-x.conf";
#   - `check` reads drop-ins (FILE.d/*.conf next to it): it names them ("1 drop-in", a
#     "drop-in:" line; "dropins" in JSON), and a problem in one is FILE:LINE of the drop-in
#     ("file" in JSON).
#
# MPTCTL= names the mptctl binary.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${MPTCTL:?MPTCTL= must name the mptctl binary}"
# $dir, $fake, cleanup on exit, fail()
. "$here/../lib/fake-mptd-lib.sh"

export MPT_RUNTIME_DIR=$dir
python3 "$here/../lib/fake-mptd.py" "$dir" lab p0 p1 &
fake=$!
for _ in $(seq 50); do
        [ -e "$dir/lab.ready" ] && break
        sleep 0.1
done
[ -e "$dir/lab.ready" ] || fail "the fake control socket did not come up"

# monitor_ok ARGS...: two JSON reports, in less than 2 s.
monitor_ok() {
        local start end n
        start=$(date +%s%N)
        "$MPTCTL" --json monitor "$@" > "$dir/out" 2> "$dir/err" || fail "mptctl monitor $*: exit $? ($(cat "$dir/err"))"
        end=$(date +%s%N)
        n=$(grep -c '"paths": \[{"name": "p0"' "$dir/out" || true)
        [ "$n" = 2 ] || fail "mptctl monitor $*: expected 2 reports, got $n: $(cat "$dir/out")"
        [ $(((end - start) / 1000000)) -lt 2000 ] ||
                fail "mptctl monitor $*: took $(((end - start) / 1000000)) ms: the interval was not taken"
        echo "ok: mptctl --json monitor $* ($(((end - start) / 1000000)) ms)"
}

monitor_ok lab --interval 0.1 --count 2
monitor_ok lab --interval=0.1 --count=2
monitor_ok --count 2 --interval 0.1 lab
monitor_ok --count 2 --interval 0.1 -- lab
POSIXLY_CORRECT=1 monitor_ok lab --interval 0.1 --count 2

# expect_error "STDERR" ARGS...: exit status 1 and exactly the one line STDERR.
expect_error() {
        local want=$1 rc=0
        shift
        "$MPTCTL" "$@" > "$dir/out" 2> "$dir/err" || rc=$?
        [ "$rc" = 1 ] || fail "mptctl $*: expected exit status 1, got $rc"
        [ "$(cat "$dir/err")" = "$want" ] || fail "mptctl $*: expected '$want' on stderr, got '$(cat "$dir/err")'"
        [ ! -s "$dir/out" ] || fail "mptctl $*: expected nothing on stdout, got '$(cat "$dir/out")'"
        echo "ok: mptctl $*: $want"
}

expect_error "mptctl: monitor: option '--interval' needs a value" monitor lab --interval
expect_error "mptctl: monitor: option '--count' needs a value" monitor lab --count
expect_error "mptctl: monitor: unknown option '--bogus' (see mptctl --help)" monitor lab --bogus
expect_error "mptctl: monitor: unknown option '-x' (see mptctl --help)" monitor lab -x
expect_error "mptctl: monitor: unknown option '--json'; mptctl's own options come before the command" \
        monitor lab --json
expect_error "mptctl: monitor: unknown option '-j'; mptctl's own options come before the command" monitor -j lab
expect_error "mptctl: invalid --interval 'nan': expected 0.05..3600 seconds" monitor lab --interval nan
expect_error "mptctl: invalid --interval '0.01': expected 0.05..3600 seconds" monitor lab --interval 0.01
expect_error "mptctl: invalid --interval '3601': expected 0.05..3600 seconds" monitor lab --interval=3601
expect_error "mptctl: invalid --interval '1s': expected 0.05..3600 seconds" monitor lab --interval 1s
expect_error "mptctl: invalid --count 'x'" monitor lab --count x
expect_error "mptctl: invalid --count '-1'" monitor lab --count -1
expect_error "mptctl: usage: mptctl monitor TUNNEL [--interval=SECONDS] [--count=N]" monitor lab other
expect_error "mptctl: usage: mptctl monitor TUNNEL [--interval=SECONDS] [--count=N]" monitor --count 1
expect_error "mptctl: invalid weight '-1': expected 0..10000 (0: backup)" path lab p0 set weight -1

# ---- check --strict ----
key=$("$MPTCTL" genkey)
printf '[Tunnel]\nAddress=10.0.0.1/30\nKey=%s\n\n[Path]\nInterface=eth0\nRemote=192.0.2.1\n' "$key" > "$dir/open.conf"
cp "$dir/open.conf" "$dir/private.conf"
chmod 644 "$dir/open.conf"
chmod 600 "$dir/private.conf"
printf '[Tunnel]\nName=x\nMode=compat\n\n[Path]\nInterface=eth0\nRemote=192.0.2.1\n' > "$dir/-x.conf"
msg="Key= holds the tunnel's secret key, and its group and others can read this file (mode 0644): make it private (chmod 600; or chmod 640 and chown root:mpt, for mptd@.service, which runs mptd as user mpt), or move the key to KeyFile="

"$MPTCTL" check "$dir/open.conf" > "$dir/out" 2> "$dir/err" || fail "check of a readable Key=: exit $?, expected 0"
[ "$(cat "$dir/out")" = "$dir/open.conf: OK (tunnel 'open', 1 path)" ] || fail "check of a readable Key=: stdout '$(cat "$dir/out")'"
[ "$(cat "$dir/err")" = "$dir/open.conf:3: warning: $msg" ] || fail "check of a readable Key=: stderr '$(cat "$dir/err")'"
echo "ok: mptctl check (Key= readable): OK and a warning"

expect_error "$dir/open.conf:3: $msg" check --strict "$dir/open.conf"
expect_error "$dir/open.conf:3: $msg" check "$dir/open.conf" --strict
"$MPTCTL" --json check --strict "$dir/open.conf" > "$dir/out" && fail "--json check --strict: expected exit status 1"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d) == 1 and d[0]["ok"] is False, d
assert d[0]["problems"] == [{"file": sys.argv[3], "line": 3, "message": sys.argv[2]}], d[0]["problems"]
assert d[0]["warnings"] == [], d[0]["warnings"]
' "$dir/out" "$msg" "$dir/open.conf" || fail "--json check --strict: $(cat "$dir/out")"
"$MPTCTL" --json check "$dir/open.conf" > "$dir/out" || fail "--json check: expected exit status 0"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d[0]["ok"] is True and d[0]["problems"] == [], d
assert d[0]["warnings"] == [{"file": sys.argv[3], "line": 3, "message": sys.argv[2]}], d[0]["warnings"]
assert d[0]["dropins"] == [], d[0]
' "$dir/out" "$msg" "$dir/open.conf" || fail "--json check: $(cat "$dir/out")"
echo "ok: mptctl --json check [--strict]: warnings, or problems with --strict"

"$MPTCTL" check --strict "$dir/private.conf" > "$dir/out" 2> "$dir/err" || fail "check --strict of a private profile: exit $?"
[ ! -s "$dir/err" ] || fail "check --strict of a private profile: stderr '$(cat "$dir/err")'"
echo "ok: mptctl check --strict (private): OK"
expect_error "mptctl: check: option '--strict' takes no value" check --strict=yes "$dir/private.conf"
(cd "$dir" && "$MPTCTL" check -- -x.conf > "$dir/out") || fail "check -- -x.conf: exit $?"
[ "$(cat "$dir/out")" = "-x.conf: OK (tunnel 'x', 1 path)" ] ||
        fail "check -- -x.conf: '$(cat "$dir/out")'"
echo "ok: mptctl check -- -x.conf: $(cat "$dir/out")"

mkdir "$dir/private.conf.d"
printf '[Tunnel]\nMTU=1400\n' > "$dir/private.conf.d/10-mtu.conf"
"$MPTCTL" check "$dir/private.conf" > "$dir/out" || fail "check with a drop-in: exit $?"
[ "$(cat "$dir/out")" = "$dir/private.conf: OK (tunnel 'private', 1 path, 1 drop-in)
  drop-in: $dir/private.conf.d/10-mtu.conf" ] || fail "check with a drop-in: '$(cat "$dir/out")'"
printf 'ReorderWindow=lots\n' >> "$dir/private.conf.d/10-mtu.conf"
expect_error "$dir/private.conf.d/10-mtu.conf:3: invalid ReorderWindow= 'lots': expected 0..65536" check "$dir/private.conf"
"$MPTCTL" --json check "$dir/private.conf" > "$dir/out" && fail "--json check of a bad drop-in: expected exit status 1"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d[0]["problems"][0]["file"] == sys.argv[2] and d[0]["problems"][0]["line"] == 3, d
' "$dir/out" "$dir/private.conf.d/10-mtu.conf" || fail "--json check of a bad drop-in: $(cat "$dir/out")"
echo "ok: mptctl check reads drop-ins, and names the drop-in of a problem"
