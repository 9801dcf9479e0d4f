#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The NetworkManager plugin's translations (po/) and AppStream metadata (no root, no NetworkManager).
#
# Asserts:
#   - every source file of the plugin that marks strings (_() or N_()) is in po/POTFILES;
#   - every catalogue of po/LINGUAS passes msgfmt --check, and translates every string that the
#     sources mark now (xgettext over POTFILES, then msgcmp), none of them fuzzy or left empty;
#   - the built catalogue is used: nm-mpt-auth-dialog --external-ui-mode in a Hungarian locale
#     (built with localedef into a scratch directory) prints the prompt's title, description and
#     label in Hungarian, and in the C locale in English;
#   - data/metainfo/network-manager-mpt.metainfo.xml passes `appstreamcli validate --strict`,
#     and its newest release is the project's version.
#
# SOURCE_ROOT=, BUILD_ROOT=, AUTH_DIALOG= and VERSION= come from meson.

set -eu
: "${SOURCE_ROOT:?}" "${BUILD_ROOT:?}" "${AUTH_DIALOG:?}" "${VERSION:?}"
fail() {
        echo "FAIL: $*" >&2
        exit 1
}
for t in xgettext msgfmt msgcmp localedef appstreamcli; do
        command -v "$t" >/dev/null || fail "$t is missing (tests/install-deps installs it)"
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$SOURCE_ROOT"

# ---- POTFILES lists every file with marked strings ----
while IFS= read -r f; do
        grep -qxF "$f" po/POTFILES || fail "$f marks strings for translation but is not in po/POTFILES"
done < <(grep -rlE '\b(N_|_)\("' plugins/networkmanager --include='*.c' | sort)
echo "ok: po/POTFILES lists every file that marks strings"

# ---- each catalogue is valid and complete ----
xgettext --package-name=NetworkManager-mpt --from-code=UTF-8 --keyword=_ --keyword=N_ \
        --files-from=po/POTFILES -o "$dir/now.pot"
n=$(grep -c '^msgid "' "$dir/now.pot")
[ "$n" -gt 30 ] || fail "xgettext found only $n strings in po/POTFILES' files"
for lang in $(sed 's/#.*//' po/LINGUAS); do
        stats=$(msgfmt --check --statistics -o /dev/null "po/$lang.po" 2>&1) || fail "po/$lang.po: $stats"
        case "$stats" in
        *fuzzy* | *untranslated*) fail "po/$lang.po: $stats" ;;
        esac
        msgcmp "po/$lang.po" "$dir/now.pot" 2> "$dir/cmp" ||
                fail "po/$lang.po lacks strings the sources mark now (meson compile NetworkManager-mpt-update-po): $(head -n 5 "$dir/cmp")"
        echo "ok: po/$lang.po: $stats; it has all $((n - 1)) strings of the sources"
done

# ---- the catalogue is used at run time ----
[ -f "$BUILD_ROOT/po/hu/LC_MESSAGES/NetworkManager-mpt.mo" ] || fail "no built catalogue in $BUILD_ROOT/po/hu"
localedef -i hu_HU -f UTF-8 "$dir/hu_HU.UTF-8" 2> "$dir/localedef.err" ||
        [ -d "$dir/hu_HU.UTF-8" ] || fail "localedef hu_HU.UTF-8: $(cat "$dir/localedef.err")"
ask() { # LANG: the dialog's external-UI description of connection "office"
        printf 'DATA_KEY=%s\nDATA_VAL=%s\n\n' Address 10.0.0.1/24 Path0.Interface eth0 Path0.Remote 192.0.2.1 >"$dir/in"
        printf 'DONE\n\nQUIT\n' >>"$dir/in"
        <"$dir/in" \
                env -u LANGUAGE -u LC_ALL -u LC_MESSAGES LOCPATH="$dir" LANG="$1" MPT_NM_LOCALEDIR="$BUILD_ROOT/po" \
                "$AUTH_DIALOG" -u 0 -n office -s org.freedesktop.NetworkManager.mpt -i --external-ui-mode
}
out=$(ask hu_HU.UTF-8) || fail "the auth dialog (hu_HU) failed: $out"
for want in "Title=VPN-hitelesítés: office" "Label=Előre megosztott kulcs" "Description=A(z) „office” mpt-kapcsolathoz"; do
        grep -qF "$want" <<<"$out" || fail "auth dialog in hu_HU.UTF-8: expected '$want' in: $out"
done
out=$(ask C.UTF-8) || fail "the auth dialog (C) failed: $out"
grep -qxF "Title=Authenticate VPN office" <<<"$out" || fail "auth dialog in C.UTF-8: expected the English title in: $out"
echo "ok: nm-mpt-auth-dialog speaks Hungarian in hu_HU.UTF-8, English in C.UTF-8"

# ---- AppStream ----
m=data/metainfo/network-manager-mpt.metainfo.xml
appstreamcli validate --no-net --strict "$m" > "$dir/as" 2>&1 || fail "appstreamcli validate $m: $(cat "$dir/as")"
newest=$(sed -n 's/.*<release version="\([^"]*\)".*/\1/p' "$m" | head -n 1)
[ "$newest" = "$VERSION" ] || fail "$m: newest release $newest, but the project is $VERSION (add a <release>)"
echo "ok: $m validates (appstreamcli --strict), release $newest"
