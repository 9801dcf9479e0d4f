#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A restarted end is recognised by its new epoch at once (secure mode whatever MPT_LAB_MODE
# says). Two IPv4 paths, default keepalives (1 s, dead after 3 s). mptd at b is killed with
# SIGKILL and started again, three times, while a keeps running.
#
# Prints, for each round, the time from the new mptd answering mptctl to the first ping a -> b
# answered through the tunnel (the goal is under 1 s), and asserts:
#   - that time is under 3 s (generous: the machine may be busy);
#   - a's idea of b's epoch (peer_epoch) is the new b's epoch, and a counted one more epoch
#     (peer_epochs); b's epochs only grow;
#   - no blackhole: 10 pings each way answered.

set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/integration.sh
. "$here/../lib/integration.sh"

export MPT_LAB_MODE=secure
lab_init
it_require python3
lab_topology 2 none 4
lab_profiles 2 4 4
lab_start a
lab_start b
it_ping a "$(lab_tunnel_addr b 4)" 3

times=()
for round in 1 2 3; do
        old_epoch=$(lab_json b 't["epoch"]')
        epochs=$(lab_json a 't["peer_epochs"]')
        kill -KILL "$LAB_PID_b"
        { wait "$LAB_PID_b"; } 2>/dev/null || true
        lab_start b
        it_wait_ping a "$(lab_tunnel_addr b 4)" 5 ||
                it_fail "round $round: no ping a -> b answered within 5 s of the restart"
        times+=("$IT_WAITED")
        it_note "round $round: traffic resumed $IT_WAITED s after the new mptd at b answered (goal: under 1 s)"
        it_lt "$IT_WAITED" 3 || it_soft_fail "round $round: traffic resumed only after $IT_WAITED s"

        new_epoch=$(lab_json b 't["epoch"]')
        python3 -c 'import sys; sys.exit(0 if int(sys.argv[2], 16) > int(sys.argv[1], 16) else 1)' "$old_epoch" "$new_epoch" ||
                it_soft_fail "round $round: b's new epoch $new_epoch is not newer than $old_epoch"
        [ "$(lab_json a 't["peer_epoch"]')" = "$new_epoch" ] ||
                it_soft_fail "round $round: a's peer_epoch is $(lab_json a 't["peer_epoch"]'), expected b's new $new_epoch"
        got=$(lab_json a 't["peer_epochs"]')
        [ "$got" = $((epochs + 1)) ] || it_soft_fail "round $round: a's peer_epochs went from $epochs to $got, expected +1"
        it_ping a "$(lab_tunnel_addr b 4)" 10
        it_ping b "$(lab_tunnel_addr a 4)" 10
done
it_note "resume times after a restart (s): ${times[*]}"
it_finish "secure-restart"
