#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# check-examples.sh: the example profiles of the default lab stay what the lab generates.
#
# tests/lab/mpt-lab runs its default lab (4 IPv4 paths, IPv4 tunnel) from the committed
# data/examples/lab-a.conf and lab-b.conf. Asserts:
#   - each is equivalent to what lab_profiles 4 4 4 (tests/lib/netns.sh) writes for its end:
#     the same lines in the same order once comments, blank lines and surrounding white space
#     are removed;
#   - `mptctl check` accepts both (exit 0, "OK ... 4 paths").
#
# Needs no root and creates no namespace: the library is sourced for lab_profiles only, with
# LAB_DIR set here instead of by lab_init. MPTCTL= names the mptctl binary (default: the first
# of build/, build-dev/ and build-lab/ that has one).

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/tests/lib/netns.sh"

if [ -z "$MPTCTL" ]; then
        for d in "${MESON_BUILD_ROOT:-}" "$root/build" "$root/build-dev" "$root/build-lab"; do
                if [ -n "$d" ] && [ -x "$d/src/mptctl/mptctl" ]; then
                        MPTCTL=$d/src/mptctl/mptctl
                        break
                fi
        done
fi
if [ -z "$MPTCTL" ] || [ ! -x "$MPTCTL" ]; then
        lab_die "mptctl binary not found (set MPTCTL=)"
fi

LAB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/mpt-check-examples.XXXXXX")
trap 'rm -rf "$LAB_DIR"' EXIT

# Comments (# or ;) and blank lines dropped, white space around each line removed.
essence() {
        sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e '/^[#;]/d' -e '/^$/d' "$1"
}

# lab_profiles returns 1 without extra path keys although it worked (its per-path loop ends
# with `[ -n "$extra_p" ] && ...`): judge it by the files.
# The examples carry fixed (public) lab key pairs (the lab's default mode, the handshake):
# lab_profiles writes them when LAB_PRIVATE_a/b hold them.
LAB_PRIVATE_a=$(sed -n 's/^PrivateKey=//p' "$root/data/examples/lab-a.conf")
LAB_PRIVATE_b=$(sed -n 's/^PrivateKey=//p' "$root/data/examples/lab-b.conf")
[ -n "$LAB_PRIVATE_a" ] && [ -n "$LAB_PRIVATE_b" ] || lab_die "data/examples/lab-a.conf or lab-b.conf has no PrivateKey="
MPT_LAB_MODE=handshake lab_profiles 4 4 4

failures=0
for side in a b; do
        example=$root/data/examples/lab-$side.conf
        generated=$LAB_DIR/$side.conf
        [ -s "$generated" ] || lab_die "lab_profiles 4 4 4 wrote no $generated"
        [ -f "$example" ] || lab_die "missing $example"
        essence "$example" > "$LAB_DIR/example-$side"
        essence "$generated" > "$LAB_DIR/generated-$side"
        if diff -u --label "lab_profiles 4 4 4 ($side.conf)" --label "data/examples/lab-$side.conf" \
                "$LAB_DIR/generated-$side" "$LAB_DIR/example-$side" >&2; then
                lab_log "PASS: data/examples/lab-$side.conf matches lab_profiles 4 4 4"
        else
                lab_log "FAIL: data/examples/lab-$side.conf differs from lab_profiles 4 4 4 (diff above," \
                        "comments and blank lines ignored)"
                failures=$((failures + 1))
        fi

        rc=0
        out=$("$MPTCTL" check "$example" 2>&1) || rc=$?
        if [ "$rc" = 0 ] && [[ "$out" == *": OK (tunnel 'lab', 4 paths)"* ]]; then
                lab_log "PASS: mptctl check data/examples/lab-$side.conf: $out"
        else
                lab_log "FAIL: mptctl check data/examples/lab-$side.conf: expected exit 0 and" \
                        "\"OK (tunnel 'lab', 4 paths)\", got exit $rc: $out"
                failures=$((failures + 1))
        fi
done

[ "$failures" = 0 ] || lab_die "check-examples: $failures failed check(s)"
lab_log "PASS: check-examples"
