#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# GUI end-to-end test of the mpt editor in its real hosts, against a real NetworkManager on a
# private bus (lib-gui.sh):
#   gtk3: nm-connection-editor --edit UUID (GTK3 editor)
#   gtk4: GNOME Settings' network panel, the connection's Options… dialog, Identity page (GTK4 editor)
# It changes a path weight with real X input (xdotool) at the positions the accessibility tree
# reports, checks that invalid input shows the validator's message and disables Save/Apply, saves,
# and checks with nmcli that vpn.data changed (and nothing else). Screenshots of every step go to
# $MPT_GUI_ARTIFACTS (default: ARTIFACTS_DIR argument).
#
# Usage: gui-e2e.sh gtk3|gtk4 FACTORY.so GTK3-EDITOR.so GTK4-EDITOR.so ARTIFACTS_DIR
set -eu

variant=$1 factory=$2 editor_gtk3=$3 editor_gtk4=$4
ARTIFACTS=${MPT_GUI_ARTIFACTS:-$5}/$variant
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/private-bus.sh
. "$here/../lib/private-bus.sh"
. "$here/lib-gui.sh"

case $variant in
gtk3) host=nm-connection-editor ;;
gtk4) host=gnome-control-center ;;
*) gui_fail "unknown variant '$variant'" ;;
esac
gui_require Xvfb xdotool import dbus-daemon dbus-send nmcli ip /usr/sbin/NetworkManager \
            /usr/libexec/at-spi-bus-launcher "$host"
/usr/bin/python3 -c 'import pyatspi' 2>/dev/null || { gui_log "SKIP: python3-pyatspi is not installed"; exit 77; }
for f in "$factory" "$editor_gtk3" "$editor_gtk4"; do
        [ -f "$f" ] || gui_fail "missing $f"
done

atspi() { gui_atspi "$@"; }
where() { gui_where "$host" "$@"; }
click() { gui_click "$host" "$@"; }
retype() { gui_retype "$host" "$2" "$1"; }
vpn_data() { nmcli -g vpn.data connection show mpt-gui; }
data_is() { [ "$(vpn_data)" = "$1" ]; }

mkdir -p "$ARTIFACTS"
rm -f "$ARTIFACTS"/*.png
gui_init
gui_start_system_bus
gui_install_plugin "$factory" "$editor_gtk3" "$editor_gtk4" /bin/false
gui_start_nm
gui_start_display

nmcli connection add type vpn con-name mpt-gui vpn-type org.freedesktop.NetworkManager.mpt \
      vpn.data "Address=10.7.0.1/24, Path0.Interface=eth0, Path0.Remote=192.0.2.1, Path0.Weight=3, Path1.Interface=wlan0, Path1.Remote=198.51.100.1, Path1.Name=wifi" \
      ipv4.never-default yes ipv6.method ignore > "$T/nmcli-add.log"
uuid=$(nmcli -g connection.uuid connection show mpt-gui)
before=$(vpn_data)
gui_log "vpn.data before: $before"
case $before in *"Path1.Weight"*) gui_fail "unexpected Path1.Weight before the edit" ;; esac

if [ "$variant" = gtk3 ]; then
        save="Save"
        nm-connection-editor --edit="$uuid" > "$T/host.log" 2>&1 &
        GUI_PIDS="$GUI_PIDS $!"
else
        save="~Apply"
        XDG_CURRENT_DESKTOP=GNOME GSK_RENDERER=cairo gnome-control-center -v network > "$T/host.log" 2>&1 &
        GUI_PIDS="$GUI_PIDS $!"
        where "mpt-gui" "label" > /dev/null
        gui_shot "$variant-0-panel"
        click "Options…" "push button" --in "mpt-gui"
        click "Identity"
fi

where "Path 2 weight" "text" > /dev/null
# The widgets show the connection (GTK 4.8 exposes no entry text over AT-SPI; the screenshot does).
if [ "$variant" = gtk3 ]; then
        [ "$(atspi text "$host" "Path 1 interface")" = eth0 ] || gui_fail "Path 1 interface does not show eth0"
        [ "$(atspi text "$host" "Path 1 weight")" = 3 ] || gui_fail "Path 1 weight does not show 3"
fi
gui_shot "$variant-1-opened"

# Invalid input: the validator's message is shown and Save/Apply is disabled.
retype "Path 2 weight" "abc"
where "vpn.data: Path1.Weight: invalid Weight= 'abc': expected 0..10000" "label" > /dev/null
where find-insensitive "$save" "push button" > /dev/null
gui_shot "$variant-2-invalid"

# A valid weight: the message goes, Save/Apply works, NetworkManager has the new vpn.data.
retype "Path 2 weight" "7"
where find-sensitive "$save" "push button" > /dev/null
gui_shot "$variant-3-edited"
click find-sensitive "$save" "push button"
expected="${before}, Path1.Weight = 7"
# nmcli lists the items sorted by name; Path1.Weight sorts last here.
gui_wait 120 data_is "$expected" || gui_fail "vpn.data after saving: '$(vpn_data)', expected '$expected'"
gui_shot "$variant-4-saved"
gui_log "vpn.data after: $(vpn_data)"
gui_log "PASS ($variant): screenshots in $ARTIFACTS"
