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
#     is an invalid weight, not an unknown option.
#
# MPTCTL= names the mptctl binary.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${MPTCTL:?MPTCTL= must name the mptctl binary}"
command -v python3 > /dev/null || { echo "SKIP: python3 is needed for the fake control socket"; exit 77; }

dir=$(mktemp -d)
fake=
cleanup() {
        local rc=$?
        if [ -n "$fake" ]; then
                kill "$fake" 2> /dev/null || true
                wait "$fake" 2> /dev/null || true
        fi
        rm -rf "$dir"
        exit "$rc"
}
trap cleanup EXIT
fail() {
        echo "FAIL: $*" >&2
        exit 1
}

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
