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

# fake_runtime: the completion tests' runtime directory, $dir/run ($MPT_RUNTIME_DIR): tunnel "lab"
# served by fake-mptd.py (paths p0, p1 and fast; its PID in $fake), "other.sock" that nobody
# serves, notes.txt that is no socket; the mptctl of $MPTCTL first in $PATH as "mptctl".
fake_runtime() {
        local lib
        lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
        mkdir "$dir/run" "$dir/bin"
        ln -s "$(cd "$(dirname "$MPTCTL")" && pwd)/$(basename "$MPTCTL")" "$dir/bin/mptctl"
        export PATH="$dir/bin:$PATH" MPT_RUNTIME_DIR="$dir/run"
        python3 "$lib/fake-mptd.py" "$dir/run" lab p0 p1 fast &
        fake=$!
        python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind(sys.argv[1])' \
                "$dir/run/other.sock"
        touch "$dir/run/notes.txt"
        for _ in $(seq 50); do
                [ -e "$dir/run/lab.ready" ] && break
                sleep 0.1
        done
        [ -e "$dir/run/lab.ready" ] || fail "the fake control socket did not come up"
        rm "$dir/run/lab.ready"
}
