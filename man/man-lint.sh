#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Lints man pages with mandoc: man-lint.sh MANDOC PAGE...
# Any message at warning level or above fails ("mandoc -T lint -W warning"), and so does any
# style message ("-W style": lines over 80 bytes, and the like): the pages are clean. Should a
# style message ever become unavoidable, filter exactly that message below, with the reason.
# Exits 77 (skip) when mandoc is not installed.
set -u

mandoc="$1"
shift
if [ -z "$mandoc" ] || ! command -v "$mandoc" >/dev/null 2>&1; then
        echo "mandoc is not installed; skipping the man page lint"
        exit 77
fi

status=0
for page in "$@"; do
        "$mandoc" -T lint -W warning "$page" || status=1
        style=$("$mandoc" -T lint -W style "$page" 2>&1)
        if [ -n "$style" ]; then
                echo "$style"
                status=1
        fi
done
exit $status
