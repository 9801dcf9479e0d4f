#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Golden tests of mpt-netdev-generator: golden.sh GENERATOR CASES_DIR
#
# Each directory CASES_DIR/NAME is one case:
#   input/{etc,run,usr-local-lib,usr-lib,lib}/   networkd's search path, in this order
#   setup                                        optional: what git cannot hold, one per line:
#                                                  null PATH      PATH -> /dev/null (a mask)
#                                                  empty PATH     an empty file (a mask too)
#                                                  fifo PATH      a FIFO (must not block)
#                                                  dangling PATH  a symlink to nowhere
#   expected/tree.txt       the output tree: "TYPE PATH LINK-TARGET" per entry (find -printf '%y %P %l')
#   expected/normal/...     every regular file of the output tree, byte for byte
#   expected/messages.txt   what the generator prints (standard error, default log level)
# The input is copied to a temporary directory, whose path appears as @IN@ in the expected
# files; the test hooks point the units at /SBINDIR/mptd and /UNITDIR/mptd@.service, so the
# expected files do not depend on the build. The generator must exit 0, write nothing into
# the early and late directories and change nothing in its input.
#
# Also: the argument contract (one or three directories), nothing written in the initrd, and
# (as root only) messages on the kernel log when systemd runs the generator.
#
# MPT_UPDATE_GOLDEN=1 rewrites the expected files from the current output: review the diff.
# Needs no root.
set -euo pipefail

gen=$1
cases=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/mpt-generator-golden.XXXXXX")
trap 'rm -rf "$T"' EXIT
failed=0

fail() {
        echo "FAIL: $*" >&2
        failed=1
}

prepare() { # CASE_SRC IN
        local src=$1 in=$2 op p
        mkdir -p "$in"
        if [ -d "$src/input" ]; then
                cp -a "$src/input/." "$in/"
        fi
        [ -f "$src/setup" ] || return 0
        while read -r op p; do
                [ -n "$op" ] || continue
                mkdir -p "$(dirname "$in/$p")"
                case "$op" in
                null) ln -s /dev/null "$in/$p" ;;
                empty) : > "$in/$p" ;;
                fifo) mkfifo "$in/$p" ;;
                dangling) ln -s "does-not-exist-$RANDOM" "$in/$p" ;;
                *) echo "unknown setup operation '$op' in $src/setup" >&2; exit 2 ;;
                esac
        done < "$src/setup"
}

snapshot() { # DIR: every entry with its type, link target and (for files) checksum
        (cd "$1" && find . -mindepth 1 -printf '%y %P %l\n' | LC_ALL=C sort &&
                find . -type f -exec md5sum {} + | LC_ALL=C sort)
}

search_path() { # IN
        local in=$1
        printf '%s' "$in/etc:$in/run:$in/usr-local-lib:$in/usr-lib:$in/lib"
}

run_case() {
        local name=$1 src=$cases/$1 w=$T/$1 rc=0 failed_before=$failed
        local in=$w/in out=$w/out exp=$cases/$1/expected
        prepare "$src" "$in"
        mkdir -p "$out/normal" "$out/early" "$out/late" "$w/got/normal"
        snapshot "$in" > "$w/before"

        env -u SYSTEMD_SCOPE -u SYSTEMD_LOG_TARGET -u SYSTEMD_LOG_LEVEL SYSTEMD_IN_INITRD=0 \
                MPT_GENERATOR_SEARCH_PATH="$(search_path "$in")" \
                MPT_GENERATOR_MPTD=/SBINDIR/mptd MPT_GENERATOR_UNITDIR=/UNITDIR \
                timeout 10 "$gen" "$out/normal" "$out/early" "$out/late" 2> "$w/stderr" || rc=$?
        if [ "$rc" != 0 ]; then
                fail "$name: the generator exited with $rc (124: it blocked)"
                cat "$w/stderr" >&2
                return
        fi

        snapshot "$in" > "$w/after"
        cmp -s "$w/before" "$w/after" || fail "$name: the generator changed its input"
        [ -z "$(find "$out/early" "$out/late" -mindepth 1)" ] || fail "$name: the generator wrote into the early or late directory"

        # What was written, with the temporary directory replaced by @IN@.
        (cd "$out/normal" && find . -mindepth 1 -printf '%y %P %l\n' | LC_ALL=C sort) > "$w/got/tree.txt"
        sed "s|$in|@IN@|g" "$w/stderr" > "$w/got/messages.txt"
        while IFS= read -r -d '' f; do
                mkdir -p "$(dirname "$w/got/normal/$f")"
                sed "s|$in|@IN@|g" "$out/normal/$f" > "$w/got/normal/$f"
        done < <(cd "$out/normal" && find . -type f -printf '%P\0')

        if [ -n "${MPT_UPDATE_GOLDEN:-}" ]; then
                rm -rf "$exp"
                mkdir -p "$exp"
                cp -a "$w/got/." "$exp/"
                echo "updated $exp"
                return
        fi

        [ -d "$exp" ] || { fail "$name: no expected/ directory"; return; }
        diff -u "$exp/tree.txt" "$w/got/tree.txt" >&2 || fail "$name: the output tree differs"
        diff -u "$exp/messages.txt" "$w/got/messages.txt" >&2 || fail "$name: the messages differ"
        # git keeps no empty directories: a case that expects no unit files has no expected/normal
        # (tree.txt still pins the exact output tree).
        local expn="$exp/normal"
        if [ ! -d "$expn" ]; then
                expn="$w/empty"
                mkdir -p "$expn"
        fi
        diff -ru "$expn" "$w/got/normal" >&2 || fail "$name: the unit files differ"
        [ "$failed" != "$failed_before" ] || echo "ok: $name"
}

# The generator's contract for its arguments.
for args in "" "a b" "a b c d"; do
        rc=0
        # shellcheck disable=SC2086
        out=$(env -u SYSTEMD_SCOPE "$gen" $args 2>&1) || rc=$?
        [ "$rc" = 1 ] && [ "$out" = "mpt-netdev-generator: This program takes one or three arguments." ] ||
                fail "arguments '$args': rc=$rc, '$out'"
done

# In the initrd, the generator writes nothing (mptd is not there).
mkdir -p "$T/initrd/in" "$T/initrd/out"
cp -a "$cases/good/input/." "$T/initrd/in/"
env -u SYSTEMD_SCOPE SYSTEMD_IN_INITRD=1 MPT_GENERATOR_SEARCH_PATH="$(search_path "$T/initrd/in")" \
        "$gen" "$T/initrd/out" 2> "$T/initrd/stderr" || fail "initrd: the generator failed"
[ -z "$(find "$T/initrd/out" -mindepth 1)" ] && [ ! -s "$T/initrd/stderr" ] || fail "initrd: the generator wrote units"

# Run by systemd ($SYSTEMD_SCOPE set), the generator logs to the kernel log. Checked with a file
# bind-mounted over /dev/kmsg in a private mount namespace (root only; the host's kernel log is
# not touched).
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
        mkdir -p "$T/kmsg/in" "$T/kmsg/out"
        printf '[NetDev]\nName=mpt0\nKind=tap\n[X-MPT]\nMode=compat\n' > "$T/kmsg/in/mpt0.netdev"
        : > "$T/kmsg/log"
        env -u SYSTEMD_LOG_TARGET -u SYSTEMD_LOG_LEVEL SYSTEMD_SCOPE=system SYSTEMD_IN_INITRD=0 \
                MPT_GENERATOR_SEARCH_PATH="$T/kmsg/in" \
                unshare -m sh -c 'mount --bind "$1" /dev/kmsg && exec "$2" "$3"' sh \
                "$T/kmsg/log" "$gen" "$T/kmsg/out" 2> "$T/kmsg/stderr" || fail "kmsg: the generator failed"
        got=$(sed 's/^<\([0-9]\)>mpt-netdev-generator\[[0-9]*\]: /<\1>/' "$T/kmsg/log")
        want="<3>$T/kmsg/in/mpt0.netdev:3: Kind=tap: mpt needs Kind=tun (a multi-queue TUN device)
<3>$T/kmsg/in/mpt0.netdev: no [Tun] section with MultiQueue=yes: mptd attaches one queue per worker thread
<3>$T/kmsg/in/mpt0.netdev: no [X-MPTPath] section: a tunnel needs at least one path
<3>$T/kmsg/in/mpt0.netdev: 3 problems; no unit for this tunnel (check it with: mptctl check $T/kmsg/in/mpt0.netdev)."
        [ "$got" = "$want" ] || fail "kmsg: got '$got'"
        [ ! -s "$T/kmsg/stderr" ] || fail "kmsg: also wrote to standard error: $(cat "$T/kmsg/stderr")"
else
        echo "(not root: the kernel log target is not checked)"
fi

n=0
for c in "$cases"/*/; do
        run_case "$(basename "$c")"
        n=$((n + 1))
done
[ "$n" -ge 8 ] || fail "only $n cases found in $cases"
exit "$failed"
