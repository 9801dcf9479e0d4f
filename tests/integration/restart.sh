#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mptd at b is killed with SIGKILL (no clean shutdown: stale control socket, no goodbye) and
# started again, twice, while a keeps running. Default keepalive settings (1 s, dead after 3 s).
#
# Asserts, for each restart:
#   - the new mptd starts despite the stale control socket the killed one left;
#   - a ping a -> b through the tunnel is answered within 3 s of the new mptd answering mptctl;
#   - a counts the restart: "peer_restarts" on a's tunnel goes up by exactly one (within 3 s),
#     and a's "peer_session" becomes the new b's "session";
#   - no blackhole afterwards: 10 pings a -> b and 10 pings b -> a, every one answered; every
#     path "up" at both ends; TCP a -> b through the tunnel works.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

lab_init
it_require iperf3 python3
lab_topology 3 none 4
lab_profiles 3 4 4
lab_start a
lab_start b
it_ping a "$(lab_tunnel_addr b 4)" 3

for round in 1 2; do
        # a must know b's current session before b goes, or there is nothing to tell apart.
        for _ in $(seq 40); do
                [ "$(lab_json a 't["peer_session"]')" = "$(lab_json b 't["session"]')" ] && break
                sleep 0.1
        done
        old_session=$(lab_json b 't["session"]')
        [ "$(lab_json a 't["peer_session"]')" = "$old_session" ] ||
                it_fail "round $round: a never learned b's session $old_session"
        restarts=$(lab_json a 't["peer_restarts"]')

        rc=0
        kill -KILL "$LAB_PID_b"
        # (braces: keeps bash's "Killed" job notice out of the log)
        { wait "$LAB_PID_b"; } 2>/dev/null || rc=$?
        [ "$rc" = 137 ] || it_fail "round $round: expected mptd at b to die of SIGKILL (status 137), got $rc"
        [ -S "$LAB_DIR/run-b/lab.sock" ] || it_note "round $round: (no stale control socket left behind)"

        lab_start b
        it_wait_ping a "$(lab_tunnel_addr b 4)" 3 ||
                it_fail "round $round: expected ping a -> b through the tunnel within 3 s of the restart, none answered in $IT_WAITED s"
        it_note "round $round: first ping answered $IT_WAITED s after the new mptd at b answered mptctl"

        new_session=$(lab_json b 't["session"]')
        [ "$new_session" != "$old_session" ] || it_fail "round $round: the new mptd kept the session $old_session"
        start=$(it_now)
        while it_lt "$(it_elapsed "$start")" 3; do
                [ "$(lab_json a 't["peer_restarts"]')" != "$restarts" ] && break
                sleep 0.05
        done
        got=$(lab_json a 't["peer_restarts"]')
        [ "$got" = $((restarts + 1)) ] ||
                it_fail "round $round: expected a's peer_restarts to go from $restarts to $((restarts + 1)), it is $got"
        got=$(lab_json a 't["peer_session"]')
        [ "$got" = "$new_session" ] || it_fail "round $round: expected a's peer_session $new_session (b's new session), got $got"
        it_note "round $round: a counted the restart (peer_restarts $restarts -> $((restarts + 1)), session $old_session -> $new_session)"

        it_ping a "$(lab_tunnel_addr b 4)" 10
        it_ping b "$(lab_tunnel_addr a 4)" 10
        for side in a b; do
                for p in p0 p1 p2; do
                        s=$(it_get "$side" "$p" state)
                        [ "$s" = up ] || it_fail "round $round: expected path $p at $side to be up after the restart, it is '$s'"
                done
        done
        mbit=$(lab_iperf_tcp "$(lab_tunnel_addr b 4)" 2)
        it_note "round $round: TCP after the restart: $mbit Mbit/s"
        it_lt 10 "$mbit" || it_fail "round $round: expected more than 10 Mbit/s TCP after the restart, measured $mbit"
done

it_pass "restart"
