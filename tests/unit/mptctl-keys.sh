#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mptctl genkey, genpsk and pubkey (no root, no mptd).
#
# Asserts:
#   - genkey prints one line, the base64 text of 32 bytes, an X25519 private key clamped as RFC 7748
#     decodes it (as wg genkey); genpsk the same without clamping; two runs differ;
#   - pubkey prints the public key of the private key on standard input: RFC 7748's test key gives
#     RFC 7748's public key, also with whitespace around it; genkey | pubkey gives a key;
#   - pubkey refuses (exit 1, one line on stderr, no output) an empty input, a short key, 33 bytes,
#     garbage, a NUL byte, more than 4 KiB, and an argument;
#   - with umask 022, `genkey > FILE` and `genpsk > FILE` leave FILE readable by its owner only;
#     appending to a file others can read leaves its mode and warns; pubkey's output is not made
#     private (a public key).
#
# MPTCTL= names the mptctl binary.

set -eu
: "${MPTCTL:?MPTCTL= must name the mptctl binary}"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
        echo "FAIL: $*" >&2
        exit 1
}

# key_hex TEXT: TEXT is 44 characters; prints the bytes it encodes as hex.
key_hex() {
        [ "${#1}" = 44 ] || fail "not 44 characters: '$1'"
        printf '%s' "$1" | base64 -d 2> /dev/null | od -An -tx1 -v | tr -d ' \n'
}

k1=$("$MPTCTL" genkey)
k2=$("$MPTCTL" genkey)
[ "$k1" != "$k2" ] || fail "genkey printed the same key twice"
hex=$(key_hex "$k1")
[ "${#hex}" = 64 ] || fail "genkey: not 32 bytes: $k1"
first=$((16#${hex:0:2})) last=$((16#${hex:62:2}))
(((first & 7) == 0 && (last & 0xc0) == 0x40)) || fail "genkey: not clamped: $hex"
[ "$("$MPTCTL" genkey | wc -l)" = 1 ] || fail "genkey: not one line"
echo "ok: genkey"

p1=$("$MPTCTL" genpsk)
p2=$("$MPTCTL" genpsk)
[ "$p1" != "$p2" ] || fail "genpsk printed the same key twice"
hex=$(key_hex "$p1")
[ "${#hex}" = 64 ] || fail "genpsk: not 32 bytes: $p1"
echo "ok: genpsk"

# RFC 7748, section 6.1: Alice's keys.
alice_private=dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=
alice_public=hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=
[ "$(key_hex "$alice_private")" = 77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a ] &&
        [ "$(key_hex "$alice_public")" = 8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a ] ||
        fail "the test's own keys are wrong"
[ "$(printf '%s\n' "$alice_private" | "$MPTCTL" pubkey)" = "$alice_public" ] || fail "pubkey of RFC 7748's key"
[ "$(printf '  %s \n\n' "$alice_private" | "$MPTCTL" pubkey)" = "$alice_public" ] || fail "pubkey with whitespace"
pub=$(printf '%s\n' "$k1" | "$MPTCTL" pubkey)
key_hex "$pub" > /dev/null
[ "$pub" != "$k1" ] || fail "pubkey printed the private key"
echo "ok: pubkey"

# bad_input NAME: mptctl pubkey with $dir/in refuses it.
bad_input() {
        local rc=0
        "$MPTCTL" pubkey < "$dir/in" > "$dir/out" 2> "$dir/err" || rc=$?
        [ "$rc" = 1 ] || fail "pubkey ($1): exit $rc, expected 1"
        [ ! -s "$dir/out" ] || fail "pubkey ($1): printed '$(cat "$dir/out")'"
        [ "$(wc -l < "$dir/err")" = 1 ] || fail "pubkey ($1): not one line on stderr: $(cat "$dir/err")"
        grep -q "expected a private key on standard input" "$dir/err" || fail "pubkey ($1): $(cat "$dir/err")"
        echo "ok: pubkey refuses $1"
}
: > "$dir/in"
bad_input "nothing"
printf '%s\n' "${alice_private:0:43}" > "$dir/in"
bad_input "43 characters"
printf '%s' "$alice_private" | base64 -d | cat - <(printf 'x') | base64 > "$dir/in"
bad_input "33 bytes"
printf 'this is not a key at all, is it?!!!!!!!!!!\n' > "$dir/in"
bad_input "garbage"
{ printf '%s' "$alice_private"; printf '\0'; } > "$dir/in"
bad_input "a NUL byte"
{ printf '%s\n' "$alice_private"; head -c 5000 /dev/zero | tr '\0' ' '; } > "$dir/in"
bad_input "more than 4 KiB"
rc=0
"$MPTCTL" pubkey extra < /dev/null 2> "$dir/err" || rc=$?
[ "$rc" = 1 ] && grep -q "usage: mptctl pubkey" "$dir/err" ||
        fail "pubkey with an argument: exit $rc, $(cat "$dir/err")"
echo "ok: pubkey refuses an argument"

umask 022
"$MPTCTL" genkey > "$dir/private.key"
[ "$(stat -c %a "$dir/private.key")" = 600 ] || fail "genkey > FILE: mode $(stat -c %a "$dir/private.key")"
"$MPTCTL" genpsk > "$dir/psk"
[ "$(stat -c %a "$dir/psk")" = 600 ] || fail "genpsk > FILE: mode $(stat -c %a "$dir/psk")"
echo "# keys" > "$dir/keys"
"$MPTCTL" genkey >> "$dir/keys" 2> "$dir/err"
[ "$(stat -c %a "$dir/keys")" = 644 ] || fail "genkey >> FILE changed its mode"
grep -q "warning: writing a secret key to a file that others can read" "$dir/err" ||
        fail "no warning: $(cat "$dir/err")"
"$MPTCTL" pubkey < "$dir/private.key" > "$dir/public.key"
[ "$(stat -c %a "$dir/public.key")" = 644 ] || fail "pubkey > FILE: mode $(stat -c %a "$dir/public.key")"
echo "ok: private output files"
