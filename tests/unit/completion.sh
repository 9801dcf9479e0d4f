#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The bash completion of mptctl (data/bash-completion/mptctl.in, as built), sourced into this
# shell and called as bash calls it, against a runtime directory of this test: tunnel "lab" answers
# on a fake control socket (tests/lib/fake-mptd.py, paths p0, p1 and fast), "other.sock" is a
# socket that nobody serves, notes.txt is no socket. The built mptctl is first in $PATH as
# "mptctl". No root.
#
# Asserts (COMPREPLY, sorted, for the words before the cursor):
#   - commands, and mptctl's options (after "-");
#   - tunnel names from the runtime directory ($MPT_RUNTIME_DIR) for show, monitor and path,
#     also after options and option values (--interval 1, --interval=1), not after the tunnel;
#     "dump" for show;
#   - the paths of a running tunnel for "path TUNNEL", from `mptctl show TUNNEL dump`; nothing for
#     a tunnel that does not answer; then set/up/down and weight;
#   - nothing for an option's value (--interval, --count, "--interval=");
#   - the options of monitor and check after "-";
#   - for check: *.conf and *.netdev files and directories, nothing else; after "--" a name that
#     starts with "-" is a file too.
#
# BASH_COMPLETION= names the built completion file, MPTCTL= the mptctl binary.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${BASH_COMPLETION:?BASH_COMPLETION= must name the built completion file}"
: "${MPTCTL:?MPTCTL= must name the mptctl binary}"
# $dir, $fake, cleanup on exit, fail()
. "$here/../lib/fake-mptd-lib.sh"

fake_runtime
mkdir "$dir/files" "$dir/files/sub.d"
touch "$dir/files/a.conf" "$dir/files/b.netdev" "$dir/files/c.txt" "$dir/files/-x.conf" "$dir/files/a.conf.bak"

# shellcheck source=/dev/null
. "$BASH_COMPLETION"
[ "$(complete -p mptctl)" = "complete -F _mptctl mptctl" ] || fail "no completion registered for mptctl"

# expect "EXPECTED WORDS" WORD...: completes the last WORD (the one under the cursor) of the line
# "mptctl WORD...", as bash splits it ("=" is a word of its own), and compares the sorted replies.
expect() {
        local want=$1 got
        shift
        COMP_WORDS=(mptctl "$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE="${COMP_WORDS[*]}"
        COMP_POINT=${#COMP_LINE}
        COMPREPLY=(stale)
        _mptctl mptctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ')
        got=${got% }
        [ "$got" = "$want" ] || fail "mptctl $*<TAB>: expected '$want', got '$got'"
        echo "ok: mptctl $*<TAB>: $got"
}

expect "check fields genkey genpsk keys monitor path pubkey reload show showconf syncconf" ""
expect "show showconf" sh
expect "--help --json --version -h -j" -
expect "--json" --j
expect "check fields genkey genpsk keys monitor path pubkey reload show showconf syncconf" --json ""

expect "dump lab other" show ""
expect "lab" --json show l
expect "dump" show lab ""
expect "" show lab dump ""

expect "lab other" showconf ""
expect "" showconf lab ""
expect "lab other" reload ""
expect "" reload lab ""
expect "lab other" syncconf ""
expect "" syncconf lab other ""
expect "lab other" monitor ""
expect "--count --interval" monitor lab --
expect "" monitor --interval ""
expect "" monitor --interval = ""
expect "" monitor --count = 1
expect "lab" monitor --interval 1 l
expect "lab" monitor --interval = 1 l
expect "lab other" monitor --count 2 --interval = 0.5 ""
expect "" monitor lab ""

expect "lab other" path ""
expect "fast p0 p1" path lab ""
expect "p0 p1" path lab p
expect "" path other ""
expect "" path nosuch ""
expect "down set up" path lab p0 ""
expect "weight" path lab p0 set ""
expect "" path lab p0 set weight ""

cd "$dir/files"
expect "-x.conf a.conf b.netdev sub.d" check ""
expect "a.conf" check a
expect "--strict" check --s
expect "-x.conf" check -- -
expect "-x.conf a.conf b.netdev sub.d" check --strict a.conf ""
expect "-x.conf a.conf b.netdev sub.d" syncconf lab ""
expect "a.conf" syncconf lab a
expect "" keys ""
expect "" fields ""
expect "" genkey ""
expect "" genpsk ""
expect "" pubkey ""
