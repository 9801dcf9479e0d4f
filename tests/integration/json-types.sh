#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Typed JSON: `mptctl --json show` takes every member's type from the table of show fields
# (src/shared/show-fields.c, printed by `mptctl fields`), never from the look of its value.
# A tunnel over three paths named "1", "yes" and "0x10", with some traffic: in secure mode (the
# default variant) with the learned scheduler, so that it writes every field it can (learned
# rates, repair, reorder, epochs); in compat mode (the -plain variant) the fields it has there.
#
# Asserts:
#   - `mptctl --json fields` is an array of {record, field, type, unit}; every type is one of
#     string, integer, decimal, boolean, list;
#   - every member of the tunnel object, of its "reorder", "repair", "drops" and "worker_*"
#     objects, and of every path object (and its "drops") has a field in that table, and its
#     JSON type is the table's: string -> str (or null), integer -> int (not bool), decimal ->
#     number, boolean -> true/false, list -> array of strings (or null where the text was
#     empty);
#   - the paths' names are the strings "1", "yes" and "0x10" (jq: .[0].paths[].name), the
#     tunnel's addresses an array holding "10.77.0.1/24";
#   - `show dump` has the same records and fields as the JSON (nothing dropped on the way);
#   - mptd logged no "BUG: ... show field" line (its writer checks the table too);
#   - `mptctl fields` (text) has one line per table entry, e.g. "path rtt_us integer us".

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require jq python3 iperf3
lab_topology 3 none 4
lab_profiles 3 4 4
for side in a b; do
        sed -i 's/^Name=p0$/Name=1/; s/^Name=p1$/Name=yes/; s/^Name=p2$/Name=0x10/' "$LAB_DIR/$side.conf"
done
it_start_pinging 10.77.0.2
it_load_start 10.77.0.2 2
it_load_wait
it_note "TCP for 2 s: $IT_LOAD_MBIT Mbit/s"

lab_ctl a --json fields > "$LAB_DIR/fields.json"
lab_ctl a fields > "$LAB_DIR/fields.txt"
lab_ctl a --json show lab > "$LAB_DIR/show.json"
lab_ctl a show lab dump > "$LAB_DIR/dump.txt"

n_text=$(wc -l < "$LAB_DIR/fields.txt")
n_json=$(jq length "$LAB_DIR/fields.json")
[ "$n_text" = "$n_json" ] || it_fail "mptctl fields: $n_text lines, but --json has $n_json entries"
grep -Eq '^path +rtt_us +integer +us$' "$LAB_DIR/fields.txt" ||
        it_fail "mptctl fields: no line 'path rtt_us integer us' in: $(head -n 5 "$LAB_DIR/fields.txt")"

names=$(jq -c '[.[0].paths[].name]' "$LAB_DIR/show.json")
[ "$names" = '["1","yes","0x10"]' ] || it_fail "path names in JSON: expected [\"1\",\"yes\",\"0x10\"], got $names"
addrs=$(jq -c '.[0].addresses' "$LAB_DIR/show.json")
[ "$addrs" = '["10.77.0.1/24"]' ] || it_fail "tunnel addresses in JSON: expected [\"10.77.0.1/24\"], got $addrs"

python3 - "$LAB_DIR/fields.json" "$LAB_DIR/show.json" "$LAB_DIR/dump.txt" "${MPT_LAB_MODE:-handshake}" <<'EOF' || it_fail "mptctl --json show: members not of their fields' types (above)"
import json, sys

fields = json.load(open(sys.argv[1]))
show = json.load(open(sys.argv[2]))
types = {"string", "integer", "decimal", "boolean", "list"}
table = {}
for f in fields:
    assert set(f) == {"record", "field", "type", "unit"}, "fields entry %r" % f
    assert f["type"] in types, "unknown type in %r" % f
    table[(f["record"], f["field"])] = f["type"]

def lookup(record, key):
    if (record, key) in table:
        return table[(record, key)]
    if "." in key:
        return table.get((record, key.split(".")[0] + ".*"))
    return None

def ok(t, v):
    if v is None:
        return t != "boolean"
    return {"string": lambda: isinstance(v, str),
            "integer": lambda: isinstance(v, int) and not isinstance(v, bool),
            "decimal": lambda: isinstance(v, (int, float)) and not isinstance(v, bool),
            "boolean": lambda: isinstance(v, bool),
            "list": lambda: isinstance(v, list) and all(isinstance(x, str) for x in v)}[t]()

bad = []
checked = 0
def check(record, obj):
    global checked
    for k, v in obj.items():
        if k == "paths" and record == "tunnel":
            continue
        if isinstance(v, dict):  # a group: drops -> drop.*, reorder, repair, worker_rx ...
            group = "drop" if k == "drops" else k
            for m, mv in v.items():
                t = lookup(record, group + "." + m)
                checked += 1
                if t is None or not ok(t, mv):
                    bad.append("%s %s.%s = %r (table: %s)" % (record, group, m, mv, t))
            continue
        t = lookup(record, k)
        checked += 1
        if t is None or not ok(t, v):
            bad.append("%s %s = %r (table: %s)" % (record, k, v, t))

assert len(show) == 1
check("tunnel", show[0])
for p in show[0]["paths"]:
    check("path", p)
# Fields that must be there for the check to mean something (with traffic; secure and learned
# in the default variant).
secure = sys.argv[4] != "compat"
t0, p0 = show[0], show[0]["paths"][0]
for k, want in (("mtu", int), ("udp_gso", bool), ("ifname", str)) + ((("epoch", str), ("load_bps", int)) if secure else ()):
    assert isinstance(t0.get(k), want), "tunnel %s: %r" % (k, t0.get(k))
for k, want in (("backup", bool), ("rtt_us", int), ("loss_rx", (int, float)), ("remote", str), ("tx_bytes", int)) + \
        ((("learned_rate_bps", int), ("saturated", bool)) if secure else ()):
    assert isinstance(p0.get(k), want) and not (want is int and isinstance(p0.get(k), bool)), \
        "path %s: %r" % (k, p0.get(k))
assert p0["tx_bytes"] > 0, "no traffic on path 1"

# The dump: the same records and fields.
recs = [l.rstrip("\n").split("\t") for l in open(sys.argv[3]) if l.strip()]
dump_keys = [[f.split("=", 1)[0] for f in r[1:]] for r in recs]
def flat(obj, skip_paths):
    keys = []
    for k, v in obj.items():
        if skip_paths and k == "paths":
            continue
        if isinstance(v, dict):
            g = "drop" if k == "drops" else k
            keys += [g + "." + m for m in v]
        else:
            keys.append(k)
    return sorted(keys)
assert [r[0] for r in recs] == ["tunnel", "path", "path", "path"], [r[0] for r in recs]
assert sorted(dump_keys[0]) == flat(t0, True), "tunnel: dump and JSON differ: %r" % (
    set(dump_keys[0]) ^ set(flat(t0, True)))
for i, p in enumerate(show[0]["paths"]):
    assert sorted(dump_keys[i + 1]) == flat(p, False), "path %d: dump and JSON differ" % i

for b in bad:
    print("  " + b, file=sys.stderr)
print("%d members checked, %d not of their type" % (checked, len(bad)))
sys.exit(1 if bad else 0)
EOF

for side in a b; do
        ! grep -F "show field" "$LAB_DIR/mptd-$side.log" ||
                it_fail "mptd ($side) logged a show field missing from the table (above)"
done
it_note "paths $names, addresses $addrs; $(jq length "$LAB_DIR/fields.json") fields in the table"
it_pass "json-types"
