#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Writes the corpus of fuzz-rx (tests/fuzz/rx/): a few inputs (seed-*) in the format that
# fuzz-rx.c describes under "The input", each a scenario the fuzzer then varies; and the inputs
# of bugs it found (regress-*), as scenarios of their own. Run it again after changing that
# format:
#
#   tests/fuzz/rx-seeds.py [DIR]

import os
import struct
import sys

SECURE, REORDER, VNET, GRO, AES = 1, 2, 4, 8, 16


def config(flags, paths=2, v6=False, topology=0, pin=0, window=3, delay=1, seq_top=0, min_hold=0, workers=1):
    # delay: 2, 10, 50 ms, 1 s; min_hold: none, a quarter, a half, all of the delay; workers: 1 or 2
    c0 = flags | (paths - 1) << 5 | (0x80 if v6 else 0)
    return bytes([c0, topology | pin << 2 | (0x40 if workers == 2 else 0), window | delay << 3 | min_hold << 5,
                  seq_top])


class Seed:
    def __init__(self, cfg, secure):
        self.b = bytearray(cfg)
        self.secure = secure

    def seal(self, epoch=0, path=0, aes=False, counter=None, reserved=False, bad_path=False, header=0,
             flip_g=False):
        # epoch: index into epochs[] (3: our own, 4: another key); counter None: the next one,
        # else a step back (negative) or ahead (-128..127). What makes the header bad: a reserved
        # flag, a path id out of range, header 1 a lane out of range, 2 version 1's type byte, 3 a
        # handshake message's; flag G flipped.
        e = epoch | path << 3 | (0xc0 if bad_path else 0)
        how = (1 if aes else 0) | (2 if aes else 0) | (4 if reserved else 0) | header << 5 | \
            (0x80 if flip_g else 0)
        if counter is None:
            self.b += bytes([e, how])
        else:
            self.b += bytes([e, how | 1 << 3, counter & 0xff])

    def data(self, how=0, seq=0, size=60, key=False, csum=False, far=None, jump=None, lane=0, **seal):
        # how: bit 0 IPv6, 1 UDP, 2 PSH, 3 TCP options, 4-5 flow; seq: the step from the lane's
        # next sequence number (None: no sequence number); far: a jump of the sequence numbers;
        # jump: of the TCP sequence numbers (a gap in the flow); lane: 0..7 (secure mode)
        gre = (1 if seq is not None else 0) | (2 if far else 0) | (4 if key else 0) | (8 if csum else 0) | \
            (16 if jump else 0) | lane << 5
        self.b += bytes([0, how, gre, size])
        if seq is not None:
            self.b += bytes([seq & 0xff])
        if far:
            self.b += struct.pack(">I", far)
        if jump:
            self.b += struct.pack(">H", jump)
        if self.secure:
            self.seal(**seal)

    def keepalive(self, extended=True, token=1, v6=False, seq=1, lane=0, **seal):
        # lane: 0..6, or 7 for the control lane (63)
        self.b += bytes([3, (2 if v6 else 0) | (4 if extended else 0), token << 1 | lane << 5, seq])
        if self.secure:
            self.seal(**seal)

    def path_status(self, token=1, lane=0, **seal):
        self.b += bytes([3, 1, token << 1 | lane << 5])
        if self.secure:
            self.seal(**seal)

    def feedback(self, entries=2, wrong=0, seq=False, v=0, x=1000, **seal):
        # wrong: 0 well-formed, 1 another version, 2 no entry, 3 too many, 4 short entries, 5 a
        # byte more (v odd) or less, 6 a path id out of range, 7 longer entries (well-formed)
        self.b += bytes([10, (entries - 1) | wrong << 4 | (0x80 if seq else 0), v]) + struct.pack(">H", x)
        if self.secure:
            self.seal(**seal)

    def raw(self, data):
        self.b += bytes([4]) + struct.pack(">H", len(data)) + data

    def replay(self, back=0, flip=0, where=0):
        self.b += bytes([5, back, flip]) + struct.pack(">H", where)

    def message(self, source=0, jitter=0, truncated=False, seg=None):
        how = source | (0x80 if truncated else 0) | (0x40 if seg is not None else 0)
        self.b += bytes([6, how, jitter])
        if seg is not None:
            self.b += struct.pack(">H", seg)

    def flush(self, path=0, advance=10):
        self.b += bytes([7, path, advance])

    def expire(self, by=1000):
        self.b += bytes([8]) + struct.pack(">H", by)

    def main(self, what, path=0):
        # what: 0 path down, 1 path up, 2 the other end restarted (reorder reset)
        self.b += bytes([9, what | path << 2])

    def extra(self, path, v):
        # the path's packets wait at least v / 128 of the maximum delay (which caps it)
        self.b += bytes([9, 3 | path << 2, v])

    def hold(self, delay, min_hold):
        # the maximum delay and minimum hold as config() takes them
        self.b += bytes([9, 3 | 0x10, delay | min_hold << 2])


def checksum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack('>%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def gre_ipv4_tcp(seq, ip_id, frag, payload=100):
    # A compat-mode datagram: GRE without sequence number, an IPv4 TCP segment with ACK (its TCP
    # checksum left 0: nothing on the way checks it).
    tcp = struct.pack('>HHIIBBHHH', 40000, 5201, seq, 1, 5 << 4, 0x10, 512, 0, 0)
    ip = struct.pack('>BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp) + payload, ip_id, frag, 64, 6, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    ip = ip[:10] + struct.pack('>H', checksum(ip)) + ip[12:]
    return struct.pack('>HH', 0, 0x0800) + ip + tcp + bytes([0xa5]) * payload


def seeds():
    # A TCP flow over two paths, in order, GRO trains of equal segments.
    s = Seed(config(SECURE | REORDER | VNET | GRO), True)
    for i in range(16):
        s.data(size=200, path=i // 4 % 2)
        if i % 4 == 3:
            s.flush(path=i // 4 % 2)
    s.data(how=4, size=100)
    yield 'secure-tcp-train', s

    # Reordering between paths, a gap that is filled late, duplicates, replays (intact and
    # damaged), a datagram under another key, our own epoch, and a new epoch of the other end
    # after which the old one is stale.
    s = Seed(config(SECURE | REORDER | VNET | GRO, window=4), True)
    s.data(seq=0, path=0)
    s.data(seq=2, path=1)
    s.flush(path=1)
    s.data(seq=-2, path=0)
    s.replay()
    s.replay(flip=1, where=30)
    s.flush()
    s.data(seq=0, epoch=4)
    s.data(seq=0, epoch=3)
    s.data(seq=0, path=1, counter=-1)
    s.flush()
    s.data(seq=0, epoch=1)
    s.data(seq=0, epoch=0)
    s.flush()
    s.expire(5000)
    yield 'secure-reorder-epochs', s

    # Keepalives and path status: from the paths' remotes, from a new source on a shared socket
    # (only an extended keepalive can say which path), from nothing that is an IP address.
    s = Seed(config(SECURE | REORDER, paths=3, topology=1), True)
    s.keepalive(token=1)
    s.message(source=5)
    s.keepalive(token=2)
    s.keepalive(extended=False)
    s.data(seq=0)
    s.message(source=8)
    s.path_status(token=1)
    s.message(source=1)
    s.path_status(token=2)
    s.flush()
    yield 'secure-control', s

    # Compat mode: one GRO message of equal TCP segments and a short last one, a UDP packet, a
    # checksum and a key in the GRE header; then a message the kernel cut wrongly.
    s = Seed(config(REORDER | VNET | GRO, v6=True), False)
    s.message(source=0)
    for i in range(6):
        s.data(size=120)
    s.data(size=40)
    s.data(how=2, csum=True, key=True)
    s.data(how=1 | 0x10, size=120)
    s.flush()
    s.message(source=1, seg=100)
    s.data(size=120)
    s.data(size=120)
    s.flush(path=1)
    s.expire(60000)
    yield 'compat-gro', s

    # Compat mode without reordering or virtio-net header: arbitrary datagrams, a truncated
    # message, one from a new source, keepalives with and without a sequence number.
    s = Seed(config(0, paths=1), False)
    s.raw(bytes([0, 0, 8, 0]) + bytes(16))
    s.raw(bytes([0x30, 0, 8, 0, 0, 0, 0, 1]))
    s.message(truncated=True)
    s.data(seq=None)
    s.message(source=6)
    s.data(seq=None)
    s.keepalive()
    s.flush()
    yield 'compat-raw', s

    # The sequence space: a stale run (the other end restarted) that resynchronises, a jump far
    # ahead, a path that goes down and up, a reset by the main thread, expiry of a gap.
    s = Seed(config(REORDER, paths=2, window=2, delay=0, seq_top=0x80), False)
    for i in range(4):
        s.data(seq=0, path=i % 2)
    s.data(seq=3)
    s.flush()
    s.main(0, path=1)
    s.data(seq=0, far=0x40000000)
    for i in range(9):
        s.data(seq=-100 & 0xff)
    s.flush()
    s.main(1, path=1)
    s.data(seq=0)
    s.data(seq=5)
    s.flush()
    s.main(2)
    s.data(seq=0)
    s.expire(20000)
    yield 'compat-resync', s

    # Feedback frames (secure mode): well-formed ones from both sender paths, one with entries
    # longer than version 1's; malformed ones (another version, too many entries, a byte too
    # many, a path id out of range, a GRE sequence number); a replay; one from a new source
    # (a new endpoint too), and the largest.
    s = Seed(config(SECURE | REORDER, paths=2), True)
    s.data(seq=0)
    s.feedback(entries=2)
    s.feedback(entries=1, v=1, path=1)
    s.feedback(entries=3, wrong=7)
    s.feedback(wrong=1)
    s.feedback(wrong=3)
    s.feedback(wrong=5, v=1)
    s.feedback(wrong=6, v=5)
    s.feedback(seq=True)
    s.replay(back=8)
    s.flush()
    s.message(source=5)
    s.feedback(entries=1, x=7)
    s.flush(path=1)
    s.feedback(entries=16, x=65535, path=1)
    s.flush(path=1)
    yield 'secure-feedback', s

    # Compat mode: a feedback frame, well-formed or not, is dropped (bad-feedback).
    s = Seed(config(REORDER, paths=1), False)
    s.data(seq=0)
    s.feedback()
    s.feedback(wrong=1)
    s.flush()
    yield 'compat-feedback', s

    # Secure headers of version 2 that are refused: a lane out of range, version 1, a handshake message, flag
    # G flipped, a reserved flag, a path id out of range; then one that is not.
    s = Seed(config(SECURE | REORDER, paths=2), True)
    s.data(seq=0)
    s.data(seq=0, header=1)
    s.data(seq=0, header=2)
    s.data(seq=0, header=3)
    s.data(seq=0, flip_g=True)
    s.data(seq=0, reserved=True)
    s.data(seq=0, bad_path=True)
    s.data(seq=0, path=1)
    s.flush()
    yield 'secure-headers', s

    # The learned scheduler's delay equalisation: path 0 (the faster) gets an extra delay of half
    # the maximum (25 of 50 ms). Its packets wait that long even in order, and path 1's behind
    # them wait for them; expiry before it has passed releases nothing, after it everything. Then,
    # without it, a shorter maximum delay (10 ms) with a minimum hold of half of it: a gap that
    # both paths have passed is skipped only once it has waited that long. Last, a path that is
    # down ignores its extra delay, and one that is up again waits it (capped at 10 ms).
    s = Seed(config(SECURE | REORDER | VNET | GRO, delay=2, min_hold=1), True)
    s.data(seq=0)
    s.flush()
    s.extra(0, 64)
    s.data(seq=0, size=200)
    s.data(seq=0, size=200)
    s.flush(path=1)
    s.message(source=1)
    s.data(seq=0, size=200, path=1)
    s.flush()
    s.expire(1000)
    s.expire(700)
    s.extra(0, 0)
    s.hold(1, 2)
    s.message(source=0)
    s.data(seq=1)
    s.flush(path=1)
    s.message(source=1)
    s.data(seq=0, path=1)
    s.flush()
    s.expire(200)
    s.expire(200)
    s.main(0, path=0)
    s.extra(0, 255)
    s.message(source=0)
    s.data(seq=0)
    s.flush()
    s.main(1, path=0)
    s.data(seq=0)
    s.flush()
    yield 'reorder-extra-delay', s

    # Lanes (secure mode, two receiving workers, three paths): four lanes of the other end, each
    # with its own sequence numbers and counters, over all paths; paths 0 and 2 arrive at worker
    # 0, path 1 at worker 1. A lane's gap is filled by a packet that another worker receives
    # (its held packets in the first worker's pool are delivered, and given back, by the
    # second); the same sequence number and counter on different lanes are different packets; a
    # replay on one lane; keepalives on a data lane and on the control lane; expiry (lane 0 and 2
    # by worker 0, 1 and 3 by worker 1), a path down, and a reset of all lanes.
    s = Seed(config(SECURE | REORDER | VNET | GRO, paths=3, window=4, min_hold=3, workers=2), True)
    for lane in range(4):
        s.data(seq=0, lane=lane, size=100)
    s.data(seq=1, lane=1, size=100)
    s.data(seq=1, lane=2, size=100)
    s.flush(path=1)
    s.message(source=1)
    s.data(seq=-2, lane=1, size=100, path=1)
    s.data(seq=0, lane=3, size=100, path=1)
    s.keepalive(token=2, lane=1, path=1)
    s.flush(path=2)
    s.message(source=2)
    s.data(seq=-2, lane=2, size=100, path=2)
    s.data(seq=0, lane=0, size=100, path=2)
    s.replay()
    s.keepalive(token=3, lane=7, path=2)
    s.flush()
    s.data(seq=2, lane=0)
    s.data(seq=3, lane=3)
    s.flush(path=1)
    s.expire(5000)
    s.main(0, path=1)
    s.message(source=1)
    s.data(seq=0, lane=1, path=1)
    s.flush()
    s.data(seq=1, lane=2)
    s.flush()
    s.main(2)
    s.data(seq=0, lane=2)
    s.expire(20000)
    yield 'secure-lanes', s


def regressions():
    # Held packets are copied out of the worker's own receive buffers (the pool's are lent); GRO
    # gathered two of them as they were released (sequence numbers 2 and 3), and the next packet
    # held in the same batch (5) was copied over the second before the super-packet was written.
    s = Seed(config(REORDER | VNET | GRO, paths=1, window=2), False)
    s.data(seq=0)
    s.data(seq=1)
    s.data(seq=0)
    s.data(seq=-3)
    s.data(seq=1)
    s.flush()
    yield 'gro-held-copy', s

    # GRO gathered two segments whose IPv4 flags differed in the reserved bit only; segmenting the
    # super-packet gave the second the first one's flags.
    s = Seed(config(VNET | GRO, paths=1), False)
    s.raw(gre_ipv4_tcp(1000, 7, 0x4000))
    s.raw(gre_ipv4_tcp(1100, 8, 0xc000))
    s.flush()
    yield 'gro-ip-reserved-bit', s

    # A copy of a packet that waited at the head of the reorder buffer for its path's extra delay
    # (a duplicate from the network, in compat mode) was delivered at once, ahead of the original,
    # and the buffer went on counting the original where it no longer looked for it: the reset
    # after it looped over the whole sequence space.
    s = Seed(config(REORDER, paths=2, delay=2), False)
    s.data(seq=0)
    s.flush()
    s.extra(0, 64)
    s.data(seq=0)
    s.flush(path=1)
    s.message(source=1)
    s.replay()
    s.flush()
    s.main(2)
    yield 'reorder-extra-duplicate', s

    # A datagram refused at one of our paths because its sender path belongs to another
    # (path-mismatch) leaves its counter unused: the same counter at the right path, from a new
    # source, is accepted and moves the endpoint. The fuzzer took the first refusal for the
    # counter's only chance.
    s = Seed(config(SECURE | REORDER, paths=2), True)
    s.data(seq=0)
    s.flush(path=1)
    s.message(source=1)
    s.keepalive(token=1, counter=0)
    s.flush(path=0)
    s.message(source=5)
    s.keepalive(token=1, counter=0)
    s.flush()
    yield 'mismatch-then-right-path', s


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'rx')
    os.makedirs(out, exist_ok=True)
    for prefix, scenarios in (('seed-', seeds()), ('regress-', regressions())):
        for name, s in scenarios:
            with open(os.path.join(out, prefix + name), 'wb') as f:
                f.write(s.b)


if __name__ == '__main__':
    main()
