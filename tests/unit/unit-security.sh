#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The shipped mptd@.service is hardened: "systemd-analyze security --offline=true" rates its
# exposure at most 2.0 (systemd 252 or later; skipped where systemd-analyze has no --offline).
#
#   unit-security.sh BUILD_DIR/data/mptd@.service
set -eu
unit=$1
max=2.0
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
systemd-analyze security --help 2>/dev/null | grep -q -- --offline ||
        { echo "SKIP: systemd-analyze security has no --offline"; exit 77; }
out=$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1) || true
level=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
if [ -z "$level" ]; then
        printf '%s\n' "$out"
        echo "FAIL: no exposure level in the output of systemd-analyze security for $unit"
        exit 1
fi
if awk -v l="$level" -v m="$max" 'BEGIN { exit !(l > m) }'; then
        printf '%s\n' "$out" | grep '✗'
        echo "FAIL: $unit: exposure level $level is above $max"
        exit 1
fi
echo "PASS: $unit: exposure level $level (at most $max)"
