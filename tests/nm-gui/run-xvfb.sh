#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs a command on a private Xvfb display (the first free one, chosen by Xvfb itself), with
# HOME, XDG dirs and TMPDIR in a temporary directory, no accessibility bus and settings in
# memory. Xvfb is a direct child and is stopped by PID on exit. Exits 77 without Xvfb.
set -eu

command -v Xvfb >/dev/null 2>&1 || { echo "run-xvfb: Xvfb not installed" >&2; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/mpt-xvfb.XXXXXX")
XPID=
cleanup() {
        [ -z "$XPID" ] || { kill "$XPID" 2>/dev/null || :; wait "$XPID" 2>/dev/null || :; }
        rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$T/home" "$T/runtime"
chmod 700 "$T/runtime"
Xvfb -displayfd 3 -screen 0 1280x900x24 -nolisten tcp -noreset 3>"$T/display" 2>"$T/xvfb.log" &
XPID=$!
# Xvfb writes the display number once it accepts connections (generous: the machine is shared).
i=0
while [ ! -s "$T/display" ]; do
        kill -0 "$XPID" 2>/dev/null || { cat "$T/xvfb.log" >&2; exit 1; }
        i=$((i + 1))
        [ "$i" -lt 600 ] || { echo "run-xvfb: Xvfb did not start" >&2; exit 1; }
        sleep 0.1
done

export DISPLAY=":$(cat "$T/display")" GDK_BACKEND=x11 HOME="$T/home" XDG_RUNTIME_DIR="$T/runtime"
export XDG_CONFIG_HOME="$T/home/.config" XDG_CACHE_HOME="$T/home/.cache" XDG_DATA_HOME="$T/home/.local/share"
export GSETTINGS_BACKEND=memory NO_AT_BRIDGE=1 GTK_A11Y=none
# No OpenGL for GTK 4: Xvfb has no GPU, and GDK would load Mesa's software driver only to probe
# it and unload it again, leaving allocations that LeakSanitizer (tests/run-tests --sanitize)
# reports from an "<unknown module>" it cannot suppress by name. GTK renders with cairo.
export GDK_DEBUG=gl-disable
unset WAYLAND_DISPLAY DBUS_SESSION_BUS_ADDRESS
"$@"
