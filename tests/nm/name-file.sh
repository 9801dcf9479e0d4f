#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The .name file of the NetworkManager plugin names the service and the auth dialog where meson
# installs them: name-file.sh MESON BUILD_ROOT SOURCE_ROOT
#
# Asserts, from the generated nm-mpt-service.name and `meson introspect --installed` (nothing is
# built or installed):
#   - in this build: program= and auth-dialog= are the install paths of nm-mpt-service and
#     nm-mpt-auth-dialog, which are PREFIX/lib/NetworkManager unless -Dnm_libexecdir= says
#     otherwise;
#   - in two throwaway configurations of the same source: -Dnm_libexecdir=/opt/mpt-nm-test (an
#     absolute directory, taken as it is) and -Dnm_libexecdir=libexec with -Dprefix=/usr (a
#     relative one, below the prefix: /usr/libexec), the same holds with those directories.
set -euo pipefail

meson=$1
build=$2
source=$3
command -v python3 > /dev/null || { echo "SKIP: needs python3"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/mpt-name-file.XXXXXX")
trap 'rm -rf "$T"' EXIT

# check BUILD_DIR EXPECTED_DIR ("" for any)
check() {
        local b=$1 want=$2
        "$meson" introspect --installed "$b" > "$T/installed.json"
        python3 - "$b" "$want" "$T/installed.json" << 'EOF'
import json, os, sys
build, want, installed = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
name = os.path.join(build, "plugins/networkmanager/nm-mpt-service.name")
keys = {}
for line in open(name):
    if "=" in line:
        k, v = line.rstrip("\n").split("=", 1)
        keys[k] = v
by_name = {os.path.basename(src): dst for src, dst in installed.items()}
ok = True
for key, program in (("program", "nm-mpt-service"), ("auth-dialog", "nm-mpt-auth-dialog")):
    dst = by_name.get(program)
    if dst is None:
        print("FAIL: %s: %s is not installed" % (build, program)); ok = False; continue
    if keys.get(key) != dst:
        print("FAIL: %s: %s=%s, but %s is installed as %s" % (name, key, keys.get(key), program, dst)); ok = False
    elif want and os.path.dirname(dst) != want:
        print("FAIL: %s: %s is installed as %s, expected in %s" % (build, program, dst, want)); ok = False
    else:
        print("ok: %s=%s, where %s is installed" % (key, dst, program))
if not by_name.get("nm-mpt-service.name", "").endswith("/nm-mpt-service.name"):
    print("FAIL: %s: the .name file is not installed" % build); ok = False
sys.exit(0 if ok else 1)
EOF
}

check "$build" ""

# setup NAME OPTIONS...: a configuration of the source without building anything.
setup() {
        local dir=$T/$1
        shift
        "$meson" setup "$dir" "$source" -Dtests=false -Dnetworkmanager=enabled "$@" > "$T/setup.log" 2>&1 ||
                { cat "$T/setup.log" >&2; echo "FAIL: meson setup $*"; exit 1; }
}

setup absolute -Dnm_libexecdir=/opt/mpt-nm-test
check "$T/absolute" /opt/mpt-nm-test
setup relative -Dprefix=/usr -Dnm_libexecdir=libexec
check "$T/relative" /usr/libexec
