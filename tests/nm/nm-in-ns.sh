#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs NetworkManager in the current network namespace (entered with ip netns exec, which also
# gives a private mount namespace) on the private system bus of $T, with its configuration,
# state and VPN plugin directories bind-mounted from $T (see the integration harness notes).
# Usage: T=<dir> ip netns exec NS nm-in-ns.sh
set -e
: "${T:?T must point to the per-test directory}"
mount --bind "$T/etc" /etc/NetworkManager
mount --bind "$T/run" /run/NetworkManager
mount --bind "$T/lib" /var/lib/NetworkManager
# When the test provides them, the system's tunnels as the VPN service sees them: mptd's
# profiles and networkd's .netdev files (the service refuses their names). The caller made sure
# the mount points exist.
if [ -d "$T/etc-mpt" ]; then
        mount --bind "$T/etc-mpt" /etc/mpt
        mount --bind "$T/etc-networkd" /etc/systemd/network
fi
# No udevd: a read-only /sys makes NetworkManager skip udev.
mount -o remount,bind,ro /sys
# The private bus at the standard path: processes spawned with a clean environment find it.
mount --bind "$T/dbusrun" /run/dbus
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus/system_bus_socket
exec /usr/sbin/NetworkManager --debug --system-config-dir="$T/sysconf.d"
