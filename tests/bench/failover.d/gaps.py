# SPDX-License-Identifier: LGPL-2.1-or-later
"""Largest stall of a TCP stream's in-order delivery in a time window.

Usage: gaps.py CAPTURE.pcap FROM TO [FROM TO ...]

CAPTURE.pcap is a classic pcap file (dumpcap -P) of the TUN device at the receiver (raw IP,
LINKTYPE_RAW 101; LINKTYPE_IPV4 228 and IPv6 229 are accepted too) or of an Ethernet device (1),
holding one direction of the traffic. The stream is the TCP connection (IPv4 or IPv6) that
delivered the most bytes; others (iperf3's control connection) are left out.

Delivery is in-order progress: the highest sequence number up to which the receiver has every
byte. A segment delivers when it extends that contiguous range; a retransmission of bytes already
delivered, or a segment beyond a hole, delivers nothing, and the segment that fills a hole
delivers everything held behind it. The range starts after the SYN (or, without one in the
capture, at the stream's first segment). FROM and TO are wall-clock times in microseconds. For
each window it prints one line:

  GAP_US START_US DELIVERIES_IN_WINDOW

GAP_US is the longest time between two consecutive deliveries where the gap overlaps the window
(a gap that reaches beyond the window counts in full: it is the outage that matters); START_US is
when that gap began; DELIVERIES_IN_WINDOW counts deliveries inside [FROM, TO]. When the window
has no delivery at all, the gap is that between the last delivery before it and the first after
it (or to the end of the capture).
"""

import bisect
import struct
import sys

SEQ_MOD = 1 << 32


class Stream:
    """In-order progress of one direction of a TCP connection, in unwrapped sequence numbers."""

    def __init__(self):
        self.nxt = None  # first byte not yet delivered in order
        self.held = {}  # out-of-order data beyond a hole: start -> end
        self.bytes = 0
        self.times = []  # when a segment extended the in-order range

    def unwrap(self, seq):
        """seq (32 bits) as the unwrapped number nearest to nxt."""
        d = (seq - self.nxt) % SEQ_MOD
        if d >= SEQ_MOD // 2:
            d -= SEQ_MOD
        return self.nxt + d

    def syn(self, seq):
        self.nxt, self.held, self.bytes, self.times = seq + 1, {}, 0, []

    def segment(self, t, seq, length):
        if self.nxt is None:
            self.nxt = seq
        start = self.unwrap(seq)
        end = start + length
        if end <= self.nxt:
            return  # bytes already delivered: a retransmission
        if start > self.nxt:
            self.held[start] = max(end, self.held.get(start, end))
            return  # beyond a hole: delivers nothing until the hole is filled
        while True:
            ready = [s for s in self.held if s <= end]
            if not ready:
                break
            for s in ready:
                end = max(end, self.held.pop(s))
        self.bytes += end - self.nxt
        self.nxt = end
        self.times.append(t)


def delivery_times(path):
    with open(path, "rb") as f:
        hdr = f.read(24)
        if len(hdr) < 24:
            sys.exit("gaps.py: %s: not a pcap file (too short)" % path)
        magic = struct.unpack("<I", hdr[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            end = "<"
        elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
            end = ">"
        else:
            sys.exit("gaps.py: %s: not a classic pcap file (write it with dumpcap -P)" % path)
        nano = magic in (0xA1B23C4D, 0x4D3CB2A1)
        linktype = struct.unpack(end + "I", hdr[20:24])[0] & 0x0FFFFFFF
        if linktype == 1:
            l2 = 14
        elif linktype in (101, 228, 229, 12, 14):
            l2 = 0
        else:
            sys.exit("gaps.py: %s: unsupported link type %d" % (path, linktype))
        streams = {}
        rec = struct.Struct(end + "IIII")
        while True:
            rh = f.read(16)
            if len(rh) < 16:
                break
            sec, frac, incl, _orig = rec.unpack(rh)
            pkt = f.read(incl)
            if len(pkt) < incl:
                break
            p = pkt[l2:]
            if not p:
                continue
            ver = p[0] >> 4
            if ver == 4 and len(p) >= 20:
                ihl = (p[0] & 15) * 4
                total = struct.unpack("!H", p[2:4])[0]
                if p[9] != 6 or len(p) < ihl + 14:
                    continue
                addrs = p[12:20]
                tcp = p[ihl:]
                payload = total - ihl - (tcp[12] >> 4) * 4
            elif ver == 6 and len(p) >= 40:
                if p[6] != 6 or len(p) < 40 + 14:
                    continue
                plen = struct.unpack("!H", p[4:6])[0]
                addrs = p[8:40]
                tcp = p[40:]
                payload = plen - (tcp[12] >> 4) * 4
            else:
                continue
            t = sec * 1000000 + (frac // 1000 if nano else frac)
            s = streams.setdefault((addrs, tcp[0:4]), Stream())
            seq = struct.unpack("!I", tcp[4:8])[0]
            if tcp[13] & 0x02:  # SYN
                s.syn(seq)
            elif payload > 0:
                s.segment(t, seq, payload)
    if not streams:
        return []
    return sorted(max(streams.values(), key=lambda s: s.bytes).times)


def main():
    if len(sys.argv) < 4 or (len(sys.argv) - 2) % 2:
        sys.exit(__doc__)
    times = delivery_times(sys.argv[1])
    args = [int(x) for x in sys.argv[2:]]
    for w0, w1 in zip(args[0::2], args[1::2]):
        lo = bisect.bisect_left(times, w0)
        hi = bisect.bisect_right(times, w1)
        inside = hi - lo
        # consecutive pairs (i-1, i) whose interval overlaps [w0, w1]
        first = max(lo - 1, 0)
        last = min(hi, len(times) - 1)
        best, start = 0, w0
        if inside == 0:
            before = times[lo - 1] if lo > 0 else w0
            after = times[hi] if hi < len(times) else w1
            best, start = after - before, before
        for i in range(first + 1, last + 1):
            g = times[i] - times[i - 1]
            if g > best:
                best, start = g, times[i - 1]
        print("%d %d %d" % (best, start, inside))


if __name__ == "__main__":
    main()
