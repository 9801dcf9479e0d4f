# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# The files of a private NetworkManager that runs the mpt plugin of a build tree (see
# ../shared/notes/integration-harness.md, sections 3 and 4), for tests/nm and tests/nm-gui. The
# daemon itself runs with tests/nm/nm-in-ns.sh, which bind-mounts $T/etc over
# /etc/NetworkManager.
#
# nm_lab_files T MANAGED LOGGING SERVICE PLUGIN [AUTH-DIALOG]
#   T            the test's directory; writes
#                  T/etc/NetworkManager.conf  keyfile connections only, no polkit, DNS, hostname,
#                                             connectivity check or default connections; only the
#                                             interfaces matching MANAGED are managed
#                  T/etc/VPN/nm-mpt-service.name   for the daemon
#                  T/vpn-user/nm-mpt-service.name  for the clients (export NM_VPN_PLUGIN_DIR=T/vpn-user)
#   MANAGED      an interface-name match, e.g. "pa0" or "mpt*"
#   LOGGING      the lines of the [logging] group, e.g. "level=INFO"
#   SERVICE      the VPN service program (program=)
#   PLUGIN       the libnm editor plugin (.so, [libnm] plugin=)
#   AUTH-DIALOG  the auth dialog for the secret agents ([GNOME] auth-dialog=, with external UI
#                mode and hints); none when empty or left out
# The directories T/etc and T/etc/VPN and T/vpn-user are created if need be. libnm refuses
# plugin files that others may write: the .name files are 0644; the caller sees to the .so.
nm_lab_files() {
        local t=$1 managed=$2 logging=$3 service=$4 plugin=$5 auth_dialog=${6:-} d

        mkdir -p "$t/etc/VPN" "$t/vpn-user"
        cat > "$t/etc/NetworkManager.conf" <<EOF
[main]
plugins=keyfile
auth-polkit=false
dns=none
rc-manager=unmanaged
systemd-resolved=false
hostname-mode=none
no-auto-default=*
dhcp=internal

[keyfile]
path=/etc/NetworkManager/system-connections
unmanaged-devices=*,except:interface-name:$managed

[connectivity]
enabled=false

[logging]
$logging
EOF
        for d in "$t/etc/VPN" "$t/vpn-user"; do
                {
                        cat <<EOF
[VPN Connection]
name=mpt
service=org.freedesktop.NetworkManager.mpt
program=$service
supports-multiple-connections=true

[libnm]
plugin=$plugin
EOF
                        [ -z "$auth_dialog" ] || cat <<EOF

[GNOME]
auth-dialog=$auth_dialog
supports-external-ui-mode=true
supports-hints=true
EOF
                } > "$d/nm-mpt-service.name"
                chmod 0644 "$d/nm-mpt-service.name"
        done
}
