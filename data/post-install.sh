#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# meson install on this machine (not into a DESTDIR, which a package builds: its scripts do the
# same): the user mptd runs as (sysusers.d), and its group on the profile directory (tmpfiles.d).
#   post-install.sh SYSUSERS_FILE TMPFILES_FILE (installed paths, without DESTDIR)
set -eu
[ -z "${DESTDIR:-}" ] || exit 0
if ! command -v systemd-sysusers >/dev/null || ! command -v systemd-tmpfiles >/dev/null; then
        echo "post-install: no systemd-sysusers/systemd-tmpfiles: create the system user mpt yourself (see $1)" >&2
        exit 0
fi
systemd-sysusers "$1"
systemd-tmpfiles --create "$2"
