#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# meson install into a DESTDIR puts the generator, the unit, the man pages and the examples
# where systemd and man look for them: install.sh BUILD_ROOT PREFIX SBINDIR MANDIR DOCDIR SYSCONFDIR
#
# The systemd directories are taken from systemd.pc here, independently of meson.build, with
# the prefix of the build. The installed generator, run on the installed example, must point
# its unit at the installed mptd and the installed template. Needs no root; exits 77 without
# pkg-config or systemd.pc.
set -euo pipefail

build=$1
prefix=$2
sbindir=$3
mandir=$4
docdir=$5
sysconfdir=$6

command -v pkg-config >/dev/null || { echo "SKIP: needs pkg-config"; exit 77; }
pkg-config --exists systemd || { echo "SKIP: needs systemd.pc"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/mpt-install.XXXXXX")
trap 'rm -rf "$T"' EXIT
D=$T/dest
failed=0

fail() {
        echo "FAIL: $*" >&2
        failed=1
}

pcvar() {
        pkg-config --define-variable=prefix="$prefix" --variable="$1" systemd
}

generatordir=$(pcvar systemdsystemgeneratordir)
unitdir=$(pcvar systemdsystemunitdir)
tmpfilesdir=$(pcvar tmpfilesdir)
echo "systemd.pc: generators in $generatordir, units in $unitdir, tmpfiles in $tmpfilesdir"

meson install -C "$build" --destdir "$D" --no-rebuild --quiet > "$T/install.log" 2>&1 ||
        { cat "$T/install.log" >&2; fail "meson install failed"; exit 1; }

expect_file() { # PATH [MODE-TEST]
        if [ ! -f "$D$1" ]; then
                fail "$1 is not installed"
        elif [ "${2:-}" = exec ] && [ ! -x "$D$1" ]; then
                fail "$1 is not executable"
        fi
}

expect_file "$generatordir/mpt-netdev-generator" exec
expect_file "$unitdir/mptd@.service"
expect_file "$tmpfilesdir/mpt.conf"
expect_file "$sbindir/mptd" exec
expect_file "$sbindir/mptctl" exec
for page in man5/mpt.conf.5 man5/mpt.netdev.5 man8/mptd.8 man8/mptctl.8 man8/mpt-netdev-generator.8; do
        expect_file "$mandir/$page"
done
for ex in two-host-a.conf two-host-b.conf realtime-policy.conf nat-router.conf nat-server.conf mpt0.netdev mpt0.network mpt0-peer.netdev mpt0-peer.network; do
        expect_file "$docdir/examples/$ex"
done
# The NetworkManager plugin (when built): the .name file names the installed service and auth
# dialog, and tells secret agents that the dialog has an external UI mode.
if [ -f "$build/plugins/networkmanager/nm-mpt-service.name" ]; then
        name=$(find "$D" -name nm-mpt-service.name | head -n 1)
        if [ -z "$name" ]; then
                fail "nm-mpt-service.name is not installed"
        else
                for key in program auth-dialog; do
                        v=$(sed -n "s/^$key=//p" "$name")
                        case "$v" in
                        /*) [ -x "$D$v" ] || fail "$key=$v (nm-mpt-service.name) is not installed" ;;
                        *) fail "$key= of nm-mpt-service.name is not an absolute path: '$v'" ;;
                        esac
                done
                grep -qx "supports-external-ui-mode=true" "$name" || fail "no external UI mode in $name"
        fi
fi
[ "$failed" = 0 ] || { find "$D" >&2; exit 1; }

# Nothing of the build tree leaks into what is installed.
if grep -rl "$(cd "$build" && pwd)" "$D$unitdir" "$D$mandir" "$D$docdir" 2>/dev/null; then
        fail "installed files name the build tree"
fi

# mptctl's bash completion, with the runtime directory filled in.
completion=$(find "$D" -path '*/bash-completion/completions/mptctl' | head -n 1)
if [ -z "$completion" ]; then
        fail "the bash completion of mptctl is not installed (.../bash-completion/completions/mptctl)"
elif grep -q '@runtimedir@' "$completion"; then
        fail "${completion#"$D"} still has @runtimedir@"
fi

# The profile directory: root's, and readable by group mpt only (profiles may hold a key), which
# tmpfiles.d gives it (the user mptd@.service runs as); into a DESTDIR, nothing runs systemd-sysusers.
if [ ! -d "$D$sysconfdir/mpt" ]; then
        fail "$sysconfdir/mpt is not installed"
elif [ "$(stat -c %a "$D$sysconfdir/mpt")" != 750 ]; then
        fail "$sysconfdir/mpt is installed with mode $(stat -c %a "$D$sysconfdir/mpt"), expected 750"
fi
grep -qx "z $sysconfdir/mpt 0750 root mpt -" "$D$tmpfilesdir/mpt.conf" ||
        fail "$tmpfilesdir/mpt.conf does not give $sysconfdir/mpt to group mpt: $(cat "$D$tmpfilesdir/mpt.conf")"


# The template orders itself after network-pre.target without pulling it in (a passive target),
# and has systemd create the runtime directory and keep it for the other instances.
! grep -q '^Wants=.*network-pre.target' "$D$unitdir/mptd@.service" ||
        fail "mptd@.service pulls in network-pre.target (Wants=)"
grep -qx 'After=network-pre.target' "$D$unitdir/mptd@.service" || fail "mptd@.service is not After=network-pre.target"
if grep -q '^RuntimeDirectory=' "$D$unitdir/mptd@.service"; then
        grep -qx 'RuntimeDirectoryPreserve=yes' "$D$unitdir/mptd@.service" ||
                fail "mptd@.service has RuntimeDirectory= without RuntimeDirectoryPreserve=yes: stopping one tunnel would remove the sockets of all"
elif ! grep -q '^ReadWritePaths=-/' "$D$unitdir/mptd@.service"; then
        fail "mptd@.service has neither RuntimeDirectory= nor ReadWritePaths=-DIR for the control sockets"
fi

# The template runs the installed mptd.
grep -qx "ExecStart=$sbindir/mptd --log-target=journal %i" "$D$unitdir/mptd@.service" ||
        fail "mptd@.service does not run $sbindir/mptd: $(grep ExecStart "$D$unitdir/mptd@.service")"

# The installed examples are valid, checked by the installed mptctl, once their key file exists
# as they tell (PrivateKeyFile=mpt0.key next to them, private; the host's own key pair).
(umask 077; "$D$sbindir/mptctl" genkey > "$D$docdir/examples/mpt0.key") || fail "mptctl genkey failed"
"$D$sbindir/mptctl" check "$D$docdir/examples/mpt0.netdev" "$D$docdir/examples/mpt0-peer.netdev" \
        "$D$docdir/examples/two-host-a.conf" "$D$docdir/examples/two-host-b.conf" \
        "$D$docdir/examples/nat-router.conf" "$D$docdir/examples/nat-server.conf" > "$T/check.log" 2>&1 ||
        { cat "$T/check.log" >&2; fail "the installed examples do not pass mptctl check"; }
# The real-time drop-in, as it says: a drop-in of a profile (rules for both ends, no path named).
mkdir -p "$T/rt/two-host-a.conf.d"
cp -p "$D$docdir/examples/two-host-a.conf" "$D$docdir/examples/mpt0.key" "$T/rt/"
cp "$D$docdir/examples/realtime-policy.conf" "$T/rt/two-host-a.conf.d/"
"$D$sbindir/mptctl" check "$T/rt/two-host-a.conf" > "$T/check-rt.log" 2>&1 ||
        { cat "$T/check-rt.log" >&2; fail "two-host-a.conf with realtime-policy.conf does not pass mptctl check"; }

# The installed generator, on the installed example: its unit points at the installed paths.
mkdir -p "$T/network" "$T/out"
cp "$D$docdir/examples/mpt0.netdev" "$T/network/"
cp -p "$D$docdir/examples/mpt0.key" "$T/network/"
env -u SYSTEMD_SCOPE SYSTEMD_IN_INITRD=0 MPT_GENERATOR_SEARCH_PATH="$T/network" "$D$generatordir/mpt-netdev-generator" "$T/out" ||
        fail "the installed generator failed"
dropin="$T/out/mptd@mpt0.service.d/50-netdev.conf"
link="$T/out/sys-subsystem-net-devices-mpt0.device.wants/mptd@mpt0.service"
if [ -f "$dropin" ]; then
        grep -qx "ExecStart=$sbindir/mptd --log-target=journal --netdev $T/network/mpt0.netdev" "$dropin" ||
                fail "the generated ExecStart= does not run $sbindir/mptd: $(grep ExecStart "$dropin")"
else
        fail "the installed generator wrote no drop-in"
fi
[ "$(readlink "$link" 2>/dev/null)" = "$unitdir/mptd@.service" ] ||
        fail "the generated symlink does not point to $unitdir/mptd@.service: $(readlink "$link" || true)"

[ "$failed" = 0 ] && echo "ok: installed into $generatordir, $unitdir, $mandir and $docdir"
exit "$failed"
