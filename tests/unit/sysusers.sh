#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The shipped sysusers.d file creates the user mptd runs as (mptd@.service's User=, mptd
# --user=mpt): systemd-sysusers, run on an empty root directory of its own (never the host's),
# makes a system user "mpt" with a group of the same name, no login shell and / as home. Then the
# shipped tmpfiles.d file, run by systemd-tmpfiles on the same root, gives the profile directory
# (made there with mode 700, as an older mpt installed it) to root and group mpt, mode 750, so
# that the unit can read its profiles, and makes the runtime directory user mpt's.
#
#   sysusers.sh SOURCE_DIR/data/sysusers-mpt.conf BUILD_DIR/data/mpt.conf
set -eu
conf=$1
tmpfiles=$2
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
command -v systemd-tmpfiles >/dev/null || { echo "SKIP: no systemd-tmpfiles"; exit 77; }
etc=$(sed -n 's/^z \(.*\)\/mpt 0750 root mpt -$/\1/p' "$tmpfiles")
[ -n "$etc" ] || { echo "FAIL: $tmpfiles does not give the profile directory to group mpt: $(cat "$tmpfiles")"; exit 1; }
mkdir -p "$root$etc/mpt"
chmod 700 "$root$etc/mpt"
systemd-tmpfiles --root="$root" --create "$tmpfiles"
got=$(stat -c '%a %u %g' "$root$etc/mpt")
[ "$got" = "750 0 $gid" ] || { echo "FAIL: $etc/mpt after systemd-tmpfiles: mode, owner, group $got; expected 750 0 $gid"; exit 1; }
run=$(sed -n 's/^d \([^ ]*\) 0755 mpt mpt -$/\1/p' "$tmpfiles")
[ -n "$run" ] || { echo "FAIL: $tmpfiles does not make the runtime directory user mpt's: $(cat "$tmpfiles")"; exit 1; }
rgot=$(stat -c '%a %u %g' "$root$run")
[ "$rgot" = "755 $uid $gid" ] || { echo "FAIL: $run after systemd-tmpfiles: $rgot; expected 755 $uid $gid"; exit 1; }
echo "PASS: $name ($uid:$gid, $gecos, $home, $shell); $grp; $etc/mpt: $got; $run: $rgot"
