#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# GUI test of nm-mpt-auth-dialog's GTK dialog (what nm-applet and GNOME Shell run when they may
# not use external UI mode), on a private Xvfb with an accessibility bus (lib-gui.sh), driven with
# real X input (xdotool) at the places AT-SPI reports. Each case runs the dialog as an agent does:
# argv -u UUID -n NAME -s SERVICE [-i] [-r] [-t HINT]..., on stdin the connection as
# DATA_KEY=/DATA_VAL=/SECRET_KEY=/SECRET_VAL= lines and DONE, QUIT once the agent has read the
# answer (GNOME Shell) or at once with stdin closed after it (nm-applet). Checked: stdout exactly
# "Key\nKEY\n\n\n" on Connect (the key only there: not on stderr), the dialog waiting for QUIT
# and then exiting 0; on Cancel and on Escape exit status 1 and no output (the agents' "canceled");
# a malformed key keeps Connect insensitive and shows the validator's message; -r and the hints
# "Key" and "x-vpn-message:" ask again even with a stored key. Screenshots:
# $MPT_GUI_ARTIFACTS (default: ARTIFACTS_DIR argument)/auth-dialog/*.png.
#
# Usage: auth-dialog.sh NM-MPT-AUTH-DIALOG ARTIFACTS_DIR
set -eu

dialog=$1
ARTIFACTS=${MPT_GUI_ARTIFACTS:-$2}/auth-dialog
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib-gui.sh"

for p in Xvfb xdotool import dbus-daemon dbus-send /usr/libexec/at-spi-bus-launcher; do
        command -v "$p" >/dev/null 2>&1 || { gui_log "SKIP: $p is not installed"; exit 77; }
done
/usr/bin/python3 -c 'import pyatspi' 2>/dev/null || { gui_log "SKIP: python3-pyatspi is not installed"; exit 77; }
[ -x "$dialog" ] || gui_fail "missing $dialog"
# Built without GTK, the dialog cannot ask: nothing to test here.
if ! ldd "$dialog" | grep -q libgtk-3; then
        gui_log "SKIP: $dialog is built without GTK"
        exit 77
fi

app=${dialog##*/}
service=org.freedesktop.NetworkManager.mpt
uuid=6b0a3f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b
# Two keys as `mptctl genkey` prints them (base64 of 32 bytes).
key1='Q2EktAd90SlpWRIo/6j2x0hnQE/FE9Gt7jppG+Skv3U='
key2=$(printf '%s' 'mpt auth dialog test, second key' | base64)

atspi() { gui_atspi "$@"; }
where() { gui_where "$app" "$@"; }
click() { gui_click "$app" "$@"; }
type_key() { gui_retype "$app" "$1" "Pre-shared key" "password text"; }

# The connection as the agents write it (nm-applet's connection_to_data, GNOME Shell's
# _writeConnection): every data item, then every secret, then DONE and an empty line.
connection() { # [STORED-KEY]
        printf 'DATA_KEY=%s\nDATA_VAL=%s\n' Name lab Address 10.7.0.1/24 Peer 10.7.0.2 \
                Path0.Interface eth0 Path0.Remote 192.0.2.1 Path1.Interface wlan0 Path1.Remote 198.51.100.1
        [ -z "${1:-}" ] || printf 'SECRET_KEY=Key\nSECRET_VAL=%s\n' "$1"
        printf 'DONE\n\n'
}

RUN_PID=
# start NAME STORED-KEY ARGS...: runs the dialog like GNOME Shell (stdin kept open for QUIT).
start() {
        local name=$1 stored=$2
        shift 2
        CASE=$name
        rm -f "$T/in" "$T/out" "$T/err"
        mkfifo "$T/in"
        "$dialog" -u "$uuid" -n mpt-test -s "$service" "$@" < "$T/in" > "$T/out" 2> "$T/err" &
        RUN_PID=$!
        GUI_PIDS="$GUI_PIDS $RUN_PID"
        exec 5> "$T/in"
        connection "$stored" >&5
}
# Whether the dialog has exited (a zombie until we wait for it).
exited() { [ ! -d "/proc/$RUN_PID" ] || [ "$(ps -o stat= -p "$RUN_PID" | cut -c1)" = Z ]; }
# RC: the dialog's exit status, once it has exited (generously).
finish() {
        RC=0
        exec 5>&-
        gui_wait 60 exited || gui_fail "$CASE: the dialog did not exit"
        wait "$RUN_PID" || RC=$?
        GUI_PIDS=${GUI_PIDS/ $RUN_PID/}
}
no_key_on_stderr() {
        ! grep -qF -e "$key1" -e "$key2" "$T/err" || gui_fail "$CASE: the key is on stderr: $(cat "$T/err")"
}
# What an agent reads for KEY, then QUIT (as GNOME Shell sends it after two empty lines): exit 0.
expect_key() {
        local key=$1
        printf 'Key\n%s\n\n\n' "$key" > "$T/want"
        gui_wait 60 cmp -s "$T/out" "$T/want" ||
                gui_fail "$CASE: stdout is '$(od -c "$T/out" | head -n 5)', expected Key, the key, two empty lines"
        # It waits for QUIT before it exits.
        sleep 0.5
        ! exited || gui_fail "$CASE: the dialog exited before QUIT"
        printf 'QUIT\n\n' >&5
        finish
        [ "$RC" = 0 ] || gui_fail "$CASE: exit status $RC after QUIT, expected 0 ($(cat "$T/err"))"
        cmp -s "$T/out" "$T/want" || gui_fail "$CASE: more output after QUIT: $(od -c "$T/out" | tail -n 3)"
        no_key_on_stderr
        gui_log "$CASE: Key returned, exit 0 after QUIT"
}
# Canceled: exit status 1 without waiting for QUIT, nothing on stdout.
expect_canceled() {
        gui_wait 60 exited || gui_fail "$CASE: the dialog did not exit on cancel"
        finish
        [ "$RC" = 1 ] || gui_fail "$CASE: exit status $RC, expected 1"
        [ ! -s "$T/out" ] || gui_fail "$CASE: output on cancel: $(od -c "$T/out" | head -n 3)"
        no_key_on_stderr
        gui_log "$CASE: canceled, exit 1, no output"
}

mkdir -p "$ARTIFACTS"
rm -f "$ARTIFACTS"/*.png "$ARTIFACTS/atspi-dump.txt"
gui_init
gui_start_display

# 1. No key stored (Key-flags=2 or 1): the description; a malformed key is refused in place; the
#    right one is returned.
start ask "" -i
where "~needs its pre-shared key" "label" > /dev/null
where find-insensitive "Connect" "push button" > /dev/null
gui_shot "1-ask"
type_key "not-a-key"
where "~vpn.secrets: Key: invalid Key=: expected the base64 text of 32 bytes" "label" > /dev/null
where find-insensitive "Connect" "push button" > /dev/null
gui_shot "2-invalid"
[ ! -s "$T/out" ] || gui_fail "ask: output before Connect"
type_key "$key1"
where find-sensitive "Connect" "push button" > /dev/null
! atspi find "$app" "~invalid Key=" "label" > /dev/null 2>&1 || gui_fail "ask: the message stays for a valid key"
gui_shot "3-valid"
click find-sensitive "Connect" "push button"
expect_key "$key1"

# 2. Cancel: nothing returned.
start cancel "" -i
type_key "$key1"
where find-sensitive "Connect" "push button" > /dev/null
click "Cancel" "push button"
expect_canceled
# Escape (the window closed) is a cancel as well.
start escape "" -i
where "Pre-shared key" "password text" > /dev/null
click "Pre-shared key" "password text"
xdotool key Escape
expect_canceled

# 3. -r: the stored key was refused; asked again (the stored one in the entry), the new one returned.
start reprompt "$key1" -i -r
where "The key was not accepted; enter it again." "label" > /dev/null
where find-sensitive "Connect" "push button" > /dev/null
gui_shot "4-reprompt"
type_key "$key2"
click find-sensitive "Connect" "push button"
expect_key "$key2"

# 4. The service's secrets request (ConnectInteractive): hints "x-vpn-message:..." and "Key",
#    without -r and with a stored key of the right form: the message is shown and the key asked for.
msg="vpn.secrets: Key: the peer refused the key (test message)"
start hints "$key1" -i -t "x-vpn-message:$msg" -t Key
where "$msg" "label" > /dev/null
gui_shot "5-hints"
type_key "$key2"
click find-sensitive "Connect" "push button"
expect_key "$key2"

# 5. A malformed stored key (no -r, no hint): asked for again, with what is wrong with it.
start stored-malformed "not-a-key" -i
where "~The stored key of 'mpt-test' is not usable: vpn.secrets: Key: invalid Key=" "label" > /dev/null
gui_shot "6-stored-malformed"
type_key "$key1"
click find-sensitive "Connect" "push button"
expect_key "$key1"

# 6. As nm-applet runs it: QUIT already on stdin, stdin closed; the Enter key in the entry connects.
CASE=applet
rm -f "$T/out" "$T/err"
{ connection ""; printf 'QUIT\n\n'; } > "$T/applet-in"
exec 5> /dev/null
"$dialog" -u "$uuid" -n mpt-test -s "$service" -i < "$T/applet-in" > "$T/out" 2> "$T/err" &
RUN_PID=$!
GUI_PIDS="$GUI_PIDS $RUN_PID"
type_key "$key1"
where find-sensitive "Connect" "push button" > /dev/null
xdotool key Return
finish
[ "$RC" = 0 ] || gui_fail "applet: exit status $RC"
printf 'Key\n%s\n\n\n' "$key1" | cmp -s - "$T/out" || gui_fail "applet: stdout $(od -c "$T/out" | head -n 5)"
no_key_on_stderr
gui_log "applet: Key returned, exit 0"

# 7. Without -i nothing is asked: the stored key is returned as is (no window).
CASE=no-interaction
{ connection "$key1"; printf 'QUIT\n\n'; } > "$T/plain-in"
"$dialog" -u "$uuid" -n mpt-test -s "$service" < "$T/plain-in" > "$T/out" 2> "$T/err" ||
        gui_fail "no-interaction: exit status $?"
printf 'Key\n%s\n\n\n' "$key1" | cmp -s - "$T/out" || gui_fail "no-interaction: stdout $(od -c "$T/out" | head -n 5)"
no_key_on_stderr

gui_log "PASS: screenshots in $ARTIFACTS"
