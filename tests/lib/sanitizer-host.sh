# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# In the sanitized build (tests/run-tests' second pass, -Db_sanitize=address,undefined) our
# plugins are shared objects built with AddressSanitizer, and the programs that load them
# (nmcli, nm-connection-editor, gnome-control-center) are not: ASan refuses to start unless its
# runtime comes first. sanitizer_host_env SO prints the environment such a program needs to load
# SO (the runtime preloaded; leak checking off, since the leaks at the host's exit are the host's;
# every other finding still aborts), and nothing when SO is not sanitized.
#
#   env $(sanitizer_host_env "$PLUGIN") nmcli ...

sanitizer_host_env() {
        local lib
        lib=$(ldd "$1" 2>/dev/null | awk '/libasan\.so/ { print $3; exit }')
        [ -n "$lib" ] || return 0
        printf 'LD_PRELOAD=%s ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1\n' "$lib"
}
