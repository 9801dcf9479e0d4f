#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The shipped sysusers.d file creates the user of mptd --user=mpt: systemd-sysusers, run on an
# empty root directory of its own (never the host's), makes a system user "mpt" with a group of
# the same name, no login shell and / as home.
#
#   sysusers.sh SOURCE_DIR/data/sysusers-mpt.conf
set -eu
conf=$1
command -v systemd-sysusers >/dev/null || { echo "SKIP: no systemd-sysusers"; exit 77; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/etc"
systemd-sysusers --root="$root" "$conf"
line=$(grep '^mpt:' "$root/etc/passwd") || { echo "FAIL: no user mpt in $root/etc/passwd"; exit 1; }
IFS=: read -r name _ uid gid gecos home shell <<EOT
$line
EOT
grp=$(grep "^mpt:x:$gid:" "$root/etc/group") || { echo "FAIL: no group mpt with gid $gid: $(cat "$root/etc/group")"; exit 1; }
[ "$uid" -gt 0 ] && [ "$uid" -lt 1000 ] || { echo "FAIL: uid $uid is not a system user's"; exit 1; }
[ "$home" = / ] || { echo "FAIL: home is '$home', expected /"; exit 1; }
[ "$shell" = /usr/sbin/nologin ] || { echo "FAIL: shell is '$shell', expected /usr/sbin/nologin"; exit 1; }
echo "PASS: $name ($uid:$gid, $gecos, $home, $shell); $grp"
