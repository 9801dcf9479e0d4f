# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# private_bus_config SOCKET [INCLUDEDIR...]: prints the configuration of a private D-Bus "system"
# bus listening on SOCKET (see ../shared/notes/integration-harness.md): anyone may connect and
# receive, method calls only as the policies allow, the host's policies from
# /usr/share/dbus-1/system.d plus each INCLUDEDIR. No <servicedir>: nothing is bus-activated.
private_bus_config() {
        local socket=$1 dir
        shift
        cat <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/><allow receive_type="method_return"/>
    <allow receive_type="error"/><allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <includedir>/usr/share/dbus-1/system.d</includedir>
EOF
        for dir in "$@"; do
                printf '  <includedir>%s</includedir>\n' "$dir"
        done
        printf '</busconfig>\n'
}
