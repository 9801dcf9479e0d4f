#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fake-mptd.py DIR TUNNEL PATH...: answers mptctl on DIR/TUNNEL.sock as mptd would, without a
# tunnel, for the tests that need no root: the options of mptctl's commands (mptctl-options.sh)
# and its shell completion (completion.sh).
#
# It speaks the control protocol of src/shared/ctl-protocol.h (SOCK_SEQPACKET, "MPT/1 show"): a
# "tunnel" record and one "path" record per PATH, whose tx/rx counters grow by 125000 bytes per
# request (1 Mbit/s at one request per second), so that `mptctl monitor` has rates to print.
# "path NAME weight N|up|down" is answered "ok" for a known path. Anything else gets an error
# reply. It writes DIR/TUNNEL.ready once it listens, and runs until killed (by PID, by the test
# that started it).

import os
import socket
import sys
import threading


def serve(conn, tunnel, paths, counter):
    with conn:
        while True:
            try:
                req = conn.recv(4096)
            except OSError:
                return
            if not req:
                return
            words = req.decode("ascii", "replace").split(" ")
            if words[:2] == ["MPT/1", "show"] and len(words) == 2:
                with counter["lock"]:
                    counter["n"] += 1
                    n = counter["n"]
                lines = ["MPT/1 ok",
                         "tunnel\tname=%s\tifname=%s\tpid=%d\tpaths_total=%d\tpaths_up=%d"
                         % (tunnel, tunnel, os.getpid(), len(paths), len(paths))]
                for p in paths:
                    b = n * 125000
                    lines.append("path\tname=%s\tstate=up\tweight=1\ttx_bytes=%d\trx_bytes=%d\t"
                                 "tx_packets=%d\trx_packets=%d\trtt_us=1000\tloss_rx=0.000\tloss_tx=0.000"
                                 % (p, b, b, n, n))
                reply = "\n".join(lines) + "\n"
            elif words[:2] == ["MPT/1", "path"] and len(words) >= 4 and words[2] in paths:
                reply = "MPT/1 ok\n"
            elif words[:2] == ["MPT/1", "path"] and len(words) >= 3:
                reply = "MPT/1 error 2 tunnel '%s' has no path '%s'\n" % (tunnel, words[2])
            else:
                reply = "MPT/1 error 22 unknown request\n"
            conn.send(reply.encode())


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: fake-mptd.py DIR TUNNEL PATH...")
    directory, tunnel, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    path = os.path.join(directory, tunnel + ".sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.bind(path)
    sock.listen(16)
    with open(os.path.join(directory, tunnel + ".ready"), "w"):
        pass
    counter = {"n": 0, "lock": threading.Lock()}
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=serve, args=(conn, tunnel, paths, counter), daemon=True).start()


if __name__ == "__main__":
    main()
