#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs systemd-networkd in the network namespace and (private) mount namespace that
# "ip netns exec" gives it, with private configuration and state directories:
#
#   T=<per-test dir> ip netns exec NS tests/integration/networkd-in-ns.sh
#
# $T must hold etc-network/, run-network/, lib-network/ (all three are networkd's search path),
# netif/ (owned by systemd-network) and dbusrun/ (the private bus, or empty: never the host's).
# The bind mounts stay inside this process's mount namespace and vanish with it. /sys is
# remounted read-only so that networkd does not wait for udev (there is none). The caller
# creates the mount points that do not exist (/run/systemd/network, /run/dbus) and removes
# them afterwards. Everything exec's, so the caller's $! is networkd itself.
set -e
: "${T:?T must point to the per-test directory}"
mount --bind "$T/etc-network" /etc/systemd/network
mount --bind "$T/run-network" /run/systemd/network
# Hides Debian's 80-container-*.network and friends (with merged /usr, also /usr/lib/...).
mount --bind "$T/lib-network" /lib/systemd/network
if [ -d /usr/local/lib/systemd/network ]; then
        mount --bind "$T/lib-network" /usr/local/lib/systemd/network
fi
mount --bind "$T/netif" /run/systemd/netif
# networkd runs as systemd-network and opens /dev/net/tun to create TUN devices: where the
# host's node is root-only (some containers), the caller provides a world-accessible node
# with the same numbers ($T/dev-net-tun), seen only in this mount namespace.
if [ -c "$T/dev-net-tun" ]; then
        mount --bind "$T/dev-net-tun" /dev/net/tun
fi
mount -o remount,bind,ro /sys
mount --bind "$T/dbusrun" /run/dbus
exec /lib/systemd/systemd-networkd
