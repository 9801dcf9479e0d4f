# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Harness of the GUI tests (sourced by gui-e2e.sh): a real NetworkManager in a network namespace
# of its own on a private system bus, the mpt plugin files of the build tree, a private Xvfb with a
# session bus and an accessibility bus, all in a temporary directory $T. Every daemon is a direct
# child of the test (or a child of one), stopped by PID at exit; the namespace, the mount points
# the test created and $T are removed even on failure. See /work/shared/notes/integration-harness.md.

set -eu

GUI_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/nm-lab.sh
. "$GUI_HERE/../lib/nm-lab.sh"

gui_log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
gui_fail() { gui_log "FAIL: $*"; exit 1; }

# Waits up to $1 seconds (generous: the machine is shared) until the command succeeds.
gui_wait() {
        local secs=$1 i=0
        shift
        while ! "$@" >/dev/null 2>&1; do
                i=$((i + 1))
                [ "$i" -lt $((secs * 5)) ] || return 1
                sleep 0.2
        done
}

gui_require() {
        [ "$(id -u)" = 0 ] || { gui_log "SKIP: needs root"; exit 77; }
        for p in "$@"; do
                command -v "$p" >/dev/null 2>&1 || { gui_log "SKIP: $p is not installed"; exit 77; }
        done
        [ -c /dev/net/tun ] || { gui_log "SKIP: no /dev/net/tun"; exit 77; }
}

GUI_PIDS=""
GUI_CREATED_DIRS=""
GUI_NS=""

# All descendants of a PID, deepest first (to stop helpers that D-Bus activated for our buses).
gui_descendants() {
        local c
        for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
                gui_descendants "$c"
                echo "$c"
        done
}

gui_cleanup() {
        local rc=$? pid all=""
        set +e
        for pid in $GUI_PIDS; do
                all="$all $(gui_descendants "$pid") $pid"
        done
        for pid in $all; do
                kill "$pid" 2>/dev/null
        done
        for pid in $GUI_PIDS; do
                wait "$pid" 2>/dev/null
        done
        for pid in $all; do
                i=0
                while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
                kill -KILL "$pid" 2>/dev/null
        done
        [ -z "$GUI_NS" ] || ip netns del "$GUI_NS" 2>/dev/null
        for d in $GUI_CREATED_DIRS; do
                rmdir "$d" 2>/dev/null
        done
        if [ "$rc" != 0 ] && [ -n "${T:-}" ]; then
                for f in "$T"/*.log; do
                        [ -f "$f" ] || continue
                        echo "---- ${f##*/} (last lines)" >&2
                        tail -n 40 "$f" >&2
                done
        fi
        [ -z "${T:-}" ] || rm -rf "$T"
        exit "$rc"
}

gui_init() {
        T=$(mktemp -d /tmp/mpt-gui.XXXXXX)
        export T
        trap gui_cleanup EXIT
        trap 'exit 1' INT TERM
        GUI_NS="mpt-$$-gui"
        mkdir -p "$T/etc/system-connections" "$T/etc/VPN" "$T/run" "$T/lib" "$T/sysconf.d" "$T/vpn-user" \
                 "$T/dbusrun" "$T/dbus-system.d" "$T/plugins" "$T/home" "$T/runtime"
        chmod 700 "$T/runtime"
        export TMPDIR="$T"
}

gui_start_system_bus() {
        private_bus_config "$T/dbusrun/system_bus_socket" "$T/dbus-system.d" > "$T/dbus.conf"
        dbus-daemon --config-file="$T/dbus.conf" --nofork > "$T/dbus-system.log" 2>&1 &
        GUI_PIDS="$GUI_PIDS $!"
        gui_wait 60 test -S "$T/dbusrun/system_bus_socket" || gui_fail "system bus did not start"
        export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/dbusrun/system_bus_socket"
}

# The plugin files under test, from the build tree: the factory and both editors in one directory
# (the factory loads the editors from its own directory), owned by root and not group-writable
# (libnm refuses them otherwise), and the .name file for the clients (NM_VPN_PLUGIN_DIR) and the
# daemon.
gui_install_plugin() {
        local factory=$1 gtk3=$2 gtk4=$3 service=$4
        cp "$factory" "$gtk3" "$gtk4" "$T/plugins/"
        chmod 0644 "$T/plugins/"*
        nm_lab_files "$T" 'mpt*' level=INFO "$service" "$T/plugins/${factory##*/}"
        export NM_VPN_PLUGIN_DIR="$T/vpn-user"
}

gui_start_nm() {
        for d in /run/NetworkManager /etc/NetworkManager /var/lib/NetworkManager; do
                if [ ! -d "$d" ]; then
                        mkdir -p "$d"
                        GUI_CREATED_DIRS="$d $GUI_CREATED_DIRS"
                fi
        done
        ip netns add "$GUI_NS"
        ip -n "$GUI_NS" link set lo up
        ip netns exec "$GUI_NS" "$GUI_HERE/../nm/nm-in-ns.sh" > "$T/nm.log" 2>&1 &
        GUI_PIDS="$GUI_PIDS $!"
        gui_wait 120 nmcli -t -f RUNNING general || gui_fail "NetworkManager did not start"
}

# Xvfb (display number chosen by Xvfb), a session bus and the accessibility bus, and the
# environment of the GUI programs.
gui_start_display() {
        Xvfb -displayfd 3 -screen 0 1280x1000x24 -nolisten tcp -noreset 3>"$T/display" 2>"$T/xvfb.log" &
        GUI_PIDS="$GUI_PIDS $!"
        gui_wait 60 test -s "$T/display" || gui_fail "Xvfb did not start"
        export DISPLAY=":$(cat "$T/display")" GDK_BACKEND=x11
        export HOME="$T/home" XDG_RUNTIME_DIR="$T/runtime" XDG_CONFIG_HOME="$T/home/.config"
        export XDG_CACHE_HOME="$T/home/.cache" XDG_DATA_HOME="$T/home/.local/share"
        export GSETTINGS_BACKEND=memory NO_AT_BRIDGE=0 GTK_A11Y=atspi
        unset WAYLAND_DISPLAY
        dbus-daemon --session --nofork --address="unix:path=$T/session_bus_socket" > "$T/dbus-session.log" 2>&1 &
        GUI_PIDS="$GUI_PIDS $!"
        gui_wait 60 test -S "$T/session_bus_socket" || gui_fail "session bus did not start"
        export DBUS_SESSION_BUS_ADDRESS="unix:path=$T/session_bus_socket"
        /usr/libexec/at-spi-bus-launcher --launch-immediately > "$T/atspi.log" 2>&1 &
        GUI_PIDS="$GUI_PIDS $!"
        gui_wait 60 dbus-send --session --dest=org.a11y.Bus --print-reply /org/a11y/bus org.a11y.Bus.GetAddress ||
                gui_fail "accessibility bus did not start"
}

# Screenshot of the whole screen into the artifacts directory.
gui_shot() {
        import -window root "$ARTIFACTS/$1.png" 2>/dev/null || gui_log "screenshot $1 failed"
        gui_log "screenshot: $ARTIFACTS/$1.png"
}

# AT-SPI queries (atspi.py) and real X input at the places they report, in application APP. On
# failure the tree goes to $ARTIFACTS/atspi-dump.txt and the screen to failed.png.
gui_atspi() { /usr/bin/python3 "$GUI_HERE/atspi.py" "$@"; }
# gui_where APP [find-sensitive|find-insensitive] NAME [ROLE] [--in NAME]: waits (generously)
# until the accessible exists (and is (in)sensitive), then prints its centre "X Y".
gui_where() {
        local app=$1 cmd=find
        shift
        case $1 in find-*) cmd=$1; shift ;; esac
        gui_wait 120 gui_atspi "$cmd" "$app" "$@" || { gui_atspi dump "$app" > "$ARTIFACTS/atspi-dump.txt" 2>&1 || :;
                                                     gui_shot failed; gui_fail "no accessible '$*' ($cmd)"; }
        gui_atspi "$cmd" "$app" "$@"
}
# gui_click APP [find-...] NAME [ROLE] [--in NAME]
gui_click() {
        local xy
        xy=$(gui_where "$@")
        # shellcheck disable=SC2086
        xdotool mousemove $xy click 1
}
# gui_retype APP TEXT NAME [ROLE]: replaces the text of an entry the way a user does: click into
# it, select all, type.
gui_retype() {
        local app=$1 text=$2
        shift 2
        gui_click "$app" "$@"
        xdotool key --delay 50 ctrl+a
        xdotool type --delay 60 "$text"
}
