#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The zsh completion of mptctl (data/zsh-completion/_mptctl.in, as built), run by zsh with the
# completion system's compadd and _files stubbed to print what they are given, against the same
# runtime directory as completion.sh: tunnel "lab" answers on a fake control socket
# (tests/lib/fake-mptd.py, paths p0, p1 and fast), "other.sock" is a socket nobody serves. No root.
#
# Asserts (the candidates, sorted, for the words before the cursor; zsh itself filters them by
# what is typed): commands and mptctl's options; tunnel names for show, showconf, reload,
# syncconf, monitor and path, also after monitor's options and their values, not after the
# tunnel; "dump" for show; the paths of a running tunnel, then set/up/down and weight; nothing for
# an option's value; monitor's and check's options after "-"; profile files (*.conf, *.netdev) for
# check and for syncconf's second argument.
#
# ZSH_COMPLETION= names the built completion file, MPTCTL= the mptctl binary.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${ZSH_COMPLETION:?ZSH_COMPLETION= must name the built completion file}"
: "${MPTCTL:?MPTCTL= must name the mptctl binary}"
command -v zsh > /dev/null || { echo "SKIP: zsh is not installed (tests/install-deps installs it)"; exit 77; }
# $dir, $fake, cleanup on exit, fail()
. "$here/../lib/fake-mptd-lib.sh"

fake_runtime

# expect "EXPECTED WORDS" WORD...: completes the last WORD of "mptctl WORD..." in zsh.
expect() {
        local want=$1 got
        shift
        got=$(zsh -f -c '
                compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@"; }
                _files() { print -r -- "FILES $*"; }
                words=(mptctl "${@:2}")
                CURRENT=${#words}
                source "$1"' zsh "$ZSH_COMPLETION" "$@" | sort | tr '\n' ' ')
        got=${got% }
        [ "$got" = "$want" ] || fail "mptctl $*<TAB> (zsh): expected '$want', got '$got'"
        echo "ok: mptctl $*<TAB> (zsh): $got"
}

verbs="check fields genkey genpsk keys monitor path pubkey reload show showconf syncconf"
expect "$verbs" ""
expect "$verbs" --json ""
expect "--help --json --version -h -j" -
expect "dump lab other" show ""
expect "dump" show lab ""
expect "" show lab dump ""
expect "lab other" showconf ""
expect "" showconf lab ""
expect "lab other" reload ""
expect "lab other" syncconf ""
expect "FILES -g *.(conf|netdev)" syncconf lab ""
expect "" syncconf lab a.conf ""
expect "lab other" monitor ""
expect "--count --interval" monitor lab -
expect "" monitor --interval ""
expect "" monitor --interval=
expect "lab other" monitor --interval 1 ""
expect "" monitor lab ""
expect "lab other" path ""
expect "fast p0 p1" path lab ""
expect "" path other ""
expect "down set up" path lab p0 ""
expect "weight" path lab p0 set ""
expect "" path lab p0 set weight ""
expect "FILES -g *.(conf|netdev)" check ""
expect "--strict" check -
expect "" keys ""
