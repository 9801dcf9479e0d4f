# SPDX-License-Identifier: LGPL-2.1-or-later
#
# For the unit tests that run mptctl against fake-mptd.py (no root, no namespaces): skips without
# python3, makes $dir (removed on exit, with the fake mptd whose PID is in $fake ended), and
# fail MESSAGE. Sourced after `set -eu`.

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
