#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# systemd checks what mpt-netdev-generator writes: verify.sh GENERATOR MPTD DATADIR CASES_DIR
#
# For every golden case (see golden.sh), the generator runs again, now pointing its units at the
# build's mptd (MPTD) and mptd@.service (in DATADIR), and for every unit it wrote:
#   - the .wants symlink points to an existing template;
#   - "systemd-analyze verify" passes without a message but one (ExecReload= names the
#     installed mptctl, which a build need not have), with the output directory and DATADIR in
#     front of the unit search path (it works without systemd as PID 1);
#   - "systemd --test" (systemd's own parser, run unprivileged as it insists) loads the drop-in
#     and reads ExecStart= as "MPTD --log-target=journal --netdev FILE": specifiers, "$" and
#     blanks in the file name survive; ExecReload= as ".../mptctl reload NAME".
# The template also works for a native profile: mptd@NAME.service without a drop-in runs
# "mptd --log-target=journal NAME", also for a name with a '-'.
# Exits 77 when systemd-analyze is missing.
set -euo pipefail

gen=$1
mptd=$2
datadir=$3
cases=$4

command -v systemd-analyze >/dev/null || { echo "SKIP: needs systemd-analyze"; exit 77; }
systemd=/lib/systemd/systemd
[ -x "$systemd" ] || systemd=/usr/lib/systemd/systemd

T=$(mktemp -d "${TMPDIR:-/tmp}/mpt-generator-verify.XXXXXX")
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
# The units are read as nobody (systemd --test): copied out of the build tree, which may be in a
# directory only root can enter (a clone in mktemp -d or /root).
mkdir "$T/units"
cp "$datadir"/*.service "$T/units/"
chmod 644 "$T/units"/*
datadir=$T/units
failed=0
n_units=0

fail() {
        echo "FAIL: $*" >&2
        failed=1
}

# systemd --test refuses to run as root; nobody needs to be able to read the units.
as_user() {
        if [ "$(id -u)" = 0 ]; then
                setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
        else
                "$@"
        fi
}

# The parsed unit as "systemd --test" dumps it: one "KEY: VALUE" per line.
dump_unit() { # UNITPATH UNIT
        as_user env SYSTEMD_UNIT_PATH="$1:" "$systemd" --test --system --unit="$2" --no-pager 2>/dev/null |
                awk -v u="-> Unit $2:" '$0 ~ /^\t-> Unit / { on = (substr($0, 2) == u) } on' |
                sed 's/^\t*//'
}

check_parsed() { # UNITPATH UNIT EXPECTED_COMMAND_LINE [EXPECTED_SOURCE_PATH]
        local dump
        dump=$(dump_unit "$1" "$2")
        if [ -z "$dump" ]; then
                fail "$2: systemd --test did not load it"
                return
        fi
        # The command lines of ExecStart= (and of ExecReload=: "mptctl reload NAME").
        local start reload
        start=$(awk '/^-> Exec/ { on = ($0 == "-> ExecStart:") } on && /^Command Line:/' <<<"$dump")
        reload=$(awk '/^-> Exec/ { on = ($0 == "-> ExecReload:") } on && /^Command Line:/' <<<"$dump")
        grep -qxF "Command Line: $3" <<<"$start" ||
                fail "$2: ExecStart= is not read as '$3': $start"
        [ "$(grep -c '^Command Line:' <<<"$start")" = 1 ] || fail "$2: more than one ExecStart= command"
        local name=${2#mptd@}
        name=${name%.service}
        grep -qxE "Command Line: [^ ]*/mptctl reload $name" <<<"$reload" ||
                fail "$2: ExecReload= is not read as 'mptctl reload $name': $reload"
        if [ -n "${4:-}" ]; then
                grep -qxF "Source Path: $4" <<<"$dump" || fail "$2: SourcePath= is not '$4'"
                grep -q "^DropIn Path: .*/$2.d/50-netdev.conf$" <<<"$dump" || fail "$2: the drop-in is not loaded"
        fi
}

# systemd prints a command line with shell quoting: a word with blanks or quotes in "...", with
# \, ", $ escaped; "$$" is still doubled (it is undone when the command runs).
quote_word() {
        local w=$1
        case "$w" in
        *[\ \"\\\$]*)
                w=${w//\\/\\\\}
                w=${w//\"/\\\"}
                w=${w//\$/\\\$\\\$}
                printf '"%s"' "$w" ;;
        *) printf '%s' "$w" ;;
        esac
}

verify_unit() { # OUTDIR UNIT SOURCE
        local out=$1 unit=$2 source=$3 msgs rc=0
        msgs=$(SYSTEMD_UNIT_PATH="$out:$datadir:" systemd-analyze verify --man=no --generators=no "$unit" 2>&1) ||
                rc=$?
        # ExecReload= names the installed mptctl, which a build tree need not have: only that
        # complaint (and the failure it causes) is acceptable.
        if grep -v "Command .*/mptctl is not executable" <<<"$msgs" | grep -q .; then
                [ "$rc" = 0 ] || fail "$unit: systemd-analyze verify failed ($rc)"
                fail "$unit: systemd-analyze verify says: $msgs"
        fi
        check_parsed "$out:$datadir" "$unit" "$mptd --log-target=journal --netdev $(quote_word "$source")" "$source"
        n_units=$((n_units + 1))
}

for c in "$cases"/*/; do
        name=$(basename "$c")
        in=$T/$name/in
        out=$T/$name/out
        mkdir -p "$in" "$out"
        [ -d "$c/input" ] && cp -a "$c/input/." "$in/"
        # The masks of golden.sh matter here only in that they hide files; FIFOs are left out.
        if [ -f "$c/setup" ]; then
                while read -r op p; do
                        mkdir -p "$(dirname "$in/$p")"
                        case "$op" in
                        null) ln -s /dev/null "$in/$p" ;;
                        empty) : > "$in/$p" ;;
                        esac
                done < "$c/setup"
        fi
        chmod -R a+rX "$T"
        SYSTEMD_IN_INITRD=0 MPT_GENERATOR_SEARCH_PATH="$in/etc:$in/run:$in/usr-local-lib:$in/usr-lib:$in/lib" \
                MPT_GENERATOR_MPTD="$mptd" MPT_GENERATOR_UNITDIR="$datadir" \
                "$gen" "$out" 2>/dev/null || fail "$name: the generator failed"
        chmod -R a+rX "$out"

        for link in "$out"/*.device.wants/*; do
                [ -L "$link" ] || continue
                unit=$(basename "$link")
                [ -f "$(readlink "$link")" ] || fail "$name: $link points to a missing file"
                source=$(sed -n 's/^SourcePath=//p' "$out/$unit.d/50-netdev.conf" | sed 's/%%/%/g')
                verify_unit "$out" "$unit" "$source"
        done
done

# The template alone, as for a native profile.
mkdir -p "$T/native"
for name in mpt0 mpt-lab; do
        msgs=$(SYSTEMD_UNIT_PATH="$T/native:$datadir:" systemd-analyze verify --man=no --generators=no \
                "mptd@$name.service" 2>&1) || true
        # The template names the installed mptd, which a build tree need not have: only that
        # complaint is acceptable here.
        grep -v "Command .*/mptd is not executable\|Command .*/mptctl is not executable" <<<"$msgs" | grep . &&
                fail "mptd@$name.service (native): systemd-analyze verify says: $msgs"
        cmd=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$datadir/mptd@.service")
        check_parsed "$datadir" "mptd@$name.service" "$cmd --log-target=journal $name"
done

[ "$n_units" -ge 6 ] || fail "only $n_units units were verified"
[ "$failed" = 0 ] && echo "ok: $n_units generated units and the native template verified"
exit "$failed"
