#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# nm-settings-mpt(5) documents every key of the table (as `mptctl keys` lists it) under its
# vpn.data name: KEY for [Tunnel], PathN.KEY for [Path]. [Peer] has none: a connection is a
# client with one other end, and a hub (a tunnel with peers) is a server, which a profile or a
# .netdev describes.
# Usage: check-nm-man.sh MPTCTL PAGE
set -eu
mptctl=$1
page=$2
status=0
"$mptctl" keys | sed -n 's/^\[\([A-Za-z]*\)\] \([A-Za-z]*\)=.*/\1 \2/p' > "${TMPDIR:-/tmp}/nm-man-keys.$$"
n=0
while read -r section key; do
        [ "$section" = Peer ] && continue
        n=$((n + 1))
        if [ "$section" = Path ]; then
                pattern="^\\\\fBPath\\\\fR\\\\fIN\\\\fR\\\\fB\\.$key\\\\fR = "
        else
                pattern="^\\\\fB$key\\\\fR = "
        fi
        if ! grep -q "$pattern" "$page"; then
                echo "nm-settings-mpt(5) does not document [$section] $key" >&2
                status=1
        fi
done < "${TMPDIR:-/tmp}/nm-man-keys.$$"
rm -f "${TMPDIR:-/tmp}/nm-man-keys.$$"
[ "$n" -gt 10 ] || { echo "mptctl keys listed only $n keys" >&2; exit 1; }
echo "$n keys documented"
exit $status
