#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Raw frames for the secure-mode tests (handshake.sh), through AF_PACKET so that nothing needs a
# port that mptd holds:
#   frames.py capture IFACE PORT SECONDS FILE   the UDP/IPv4 frames to PORT that arrive on IFACE
#                                               (as the kernel received them), saved to FILE
#   frames.py replay IFACE FILE                 sends them out of IFACE again, as they were
#   frames.py flood IFACE FILE SECONDS RATE TYPE SIZE
#                                               sends for SECONDS, at most RATE a second, frames
#                                               made from the first saved one: same addresses and
#                                               ports, the payload SIZE random bytes whose first
#                                               is TYPE
# capture prints how many frames it saved, and how many of them are of each first payload byte.
# Frames are sent with UDP checksum 0 (none): on a veth the captured one may be a partial sum.
import os
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def ipv4_checksum(hdr):
    s = sum(struct.unpack("!%dH" % (len(hdr) // 2), hdr))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def udp_payload_offset(frame):
    if len(frame) < 14 + 20 + 8 or struct.unpack("!H", frame[12:14])[0] != 0x0800:
        return None
    ihl = (frame[14] & 0x0F) * 4
    if frame[14 + 9] != 17:
        return None
    return 14 + ihl + 8


def capture(iface, port, seconds, path):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.settimeout(0.1)
    end = time.monotonic() + seconds
    frames = []
    while time.monotonic() < end:
        try:
            data, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] == PACKET_OUTGOING:
            continue
        off = udp_payload_offset(data)
        if off is None or struct.unpack("!H", data[off - 6:off - 4])[0] != port:
            continue
        frames.append(data)
    with open(path, "wb") as f:
        for fr in frames:
            f.write(struct.pack("!I", len(fr)) + fr)
    kinds = {}
    for fr in frames:
        b = fr[udp_payload_offset(fr)]
        kinds["0x%02x" % b] = kinds.get("0x%02x" % b, 0) + 1
    print(len(frames), " ".join("%s=%d" % kv for kv in sorted(kinds.items())))


def load(path):
    frames = []
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i < len(data):
        (n,) = struct.unpack("!I", data[i:i + 4])
        frames.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return frames


def replay(iface, path):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    frames = load(path)
    for fr in frames:
        # Captured on a veth, the UDP checksum may be a partial one (offload): send none (IPv4).
        fr = bytearray(fr)
        off = udp_payload_offset(fr)
        struct.pack_into("!H", fr, off - 2, 0)
        s.send(bytes(fr))
    print(len(frames))


def flood(iface, path, seconds, rate, kind, size):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    base = load(path)[0]
    off = udp_payload_offset(base)
    ip = bytearray(base[14:off - 8])
    udp = bytearray(base[off - 8:off])
    struct.pack_into("!H", ip, 2, len(ip) + 8 + size)
    struct.pack_into("!H", ip, 10, 0)
    struct.pack_into("!H", ip, 10, ipv4_checksum(bytes(ip)))
    struct.pack_into("!HH", udp, 4, 8 + size, 0)
    head = base[:14] + bytes(ip) + bytes(udp)
    sent = 0
    start = time.monotonic()
    while time.monotonic() < start + seconds:
        for _ in range(100):
            try:
                s.send(head + bytes([kind]) + os.urandom(size - 1))
                sent += 1
            except OSError:
                time.sleep(0.001)
        # At most rate a second.
        ahead = sent / rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)
    print(sent)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "capture":
        capture(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
    elif cmd == "replay":
        replay(sys.argv[2], sys.argv[3])
    elif cmd == "flood":
        flood(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6], 0), int(sys.argv[7]))
    else:
        sys.exit("usage: frames.py capture|replay|flood ...")
