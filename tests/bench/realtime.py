#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The streams of tests/bench/realtime: a sender and a receiver of numbered, timestamped UDP.
#
#   realtime.py send DEST SECONDS   voice to DEST:5004 (50 packets/s of 200 bytes, DSCP EF) and
#                                   video to DEST:5006 (30 frames/s of 2 Mbit/s, each frame 7
#                                   packets of about 1190 bytes as RTP packetizes it, DSCP AF41)
#   realtime.py recv ADDR SECONDS OUT.json
#
# Both ends run on one host (network namespaces share the clock), so a packet's one-way delay is
# its arrival time minus the send time it carries: both CLOCK_REALTIME, the arrival the kernel's
# (SO_TIMESTAMPNS: when the packet reached the socket), so that a receiver waiting for a CPU on a
# busy machine does not count. The receiver writes per stream: sent
# (from the highest sequence number + 1 and the sender's count), received, lost, duplicates
# (delivered twice: a failure of redundant mode), one-way delay p50/p99/max, jitter (RFC 3550:
# the mean deviation of transit differences) and the longest gap between arrivals, and each
# packet's delay by its sequence number (the first copy's; tests/bench/realtime pairs the paths'
# runs with it for what the first of two copies can achieve at best).

import json
import socket
import struct
import sys
import time

VOICE_PORT, VIDEO_PORT = 5004, 5006
HDR = struct.Struct("!BIQ")  # stream, sequence, send time (ns, CLOCK_REALTIME)
EF, AF41 = 46 << 2, 34 << 2
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; also the control message's type


def send(dest, seconds):
    voice = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    voice.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, EF)
    video = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    video.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, AF41)
    start = time.monotonic_ns()
    end = start + int(seconds * 1e9)
    next_voice, next_video = start, start
    sv = sf = 0
    frame = 2_000_000 // 8 // 30  # bytes per frame at 2 Mbit/s
    per = frame // 7
    while True:
        now = time.monotonic_ns()
        if now >= end:
            break
        if now >= next_voice:
            voice.sendto(HDR.pack(0, sv, time.time_ns()) + b"v" * (200 - HDR.size), (dest, VOICE_PORT))
            sv += 1
            next_voice += 20_000_000
        if now >= next_video:
            for _ in range(7):
                video.sendto(HDR.pack(1, sf, time.time_ns()) + b"f" * (per - HDR.size), (dest, VIDEO_PORT))
                sf += 1
            next_video += 33_333_333
        time.sleep(max(0, min(next_voice, next_video) - time.monotonic_ns()) / 1e9)
    print(json.dumps({"voice": sv, "video": sf}))


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def recv(addr, seconds, out):
    socks = []
    for port in (VOICE_PORT, VIDEO_PORT):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((addr, port))
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.setblocking(False)
        socks.append(s)
    import selectors
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    st = [{"seen": set(), "dups": 0, "delays": [], "by_seq": {}, "arrivals": [], "top": -1, "jitter": 0.0,
           "last_transit": None}
          for _ in range(2)]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=0.1):
            while True:
                try:
                    d, anc, _, _ = key.fileobj.recvmsg(4096, socket.CMSG_SPACE(16))
                except BlockingIOError:
                    break
                now = time.time_ns()
                for level, kind, data in anc:
                    if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                        sec, nsec = struct.unpack("qq", data[:16])
                        now = sec * 1_000_000_000 + nsec
                stream, seq, sent = HDR.unpack_from(d)
                x = st[stream]
                if seq in x["seen"]:
                    x["dups"] += 1
                    continue
                x["seen"].add(seq)
                transit = now - sent
                x["delays"].append(transit / 1e6)
                x["by_seq"][seq] = round(transit / 1e6, 3)
                x["arrivals"].append(now)
                x["top"] = max(x["top"], seq)
                if x["last_transit"] is not None:
                    x["jitter"] += (abs(transit - x["last_transit"]) / 1e6 - x["jitter"]) / 16
                x["last_transit"] = transit
    res = {}
    for name, x in zip(("voice", "video"), st):
        arr = x["arrivals"]
        gaps = [(b - a) / 1e6 for a, b in zip(arr, arr[1:])]
        res[name] = {
            "received": len(x["seen"]),
            "top": x["top"] + 1,
            "duplicates": x["dups"],
            "p50_ms": percentile(x["delays"], 50),
            "p99_ms": percentile(x["delays"], 99),
            "max_ms": max(x["delays"]) if x["delays"] else None,
            "jitter_ms": x["jitter"],
            "gap_max_ms": max(gaps) if gaps else None,
            "by_seq": x["by_seq"],
        }
    with open(out, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(sys.argv[2], float(sys.argv[3]))
    else:
        recv(sys.argv[2], float(sys.argv[3]), sys.argv[4])
