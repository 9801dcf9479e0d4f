# SPDX-License-Identifier: LGPL-2.1-or-later
"""Largest gap between consecutive delivered TCP data packets in a time window.

Usage: gaps.py CAPTURE.pcap FROM TO [FROM TO ...]

CAPTURE.pcap is a classic pcap file (dumpcap -P) of the TUN device (raw IP, LINKTYPE_RAW 101;
LINKTYPE_IPV4 228 and IPv6 229 are accepted too) or of an Ethernet device (1). A data packet is
a TCP segment with payload (IPv4 or IPv6). FROM and TO are wall-clock times in microseconds.
For each window it prints one line:

  GAP_US START_US PACKETS_IN_WINDOW

GAP_US is the longest time between two consecutive data packets where the gap overlaps the
window (a gap that reaches beyond the window counts in full: it is the outage that matters);
START_US is when that gap began; PACKETS_IN_WINDOW counts data packets inside [FROM, TO]. When
the window has no data packet at all, the gap is that between the last packet before it and the
first after it (or to the end of the capture).
"""

import bisect
import struct
import sys


def data_times(path):
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
        times = []
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
                if p[9] != 6 or len(p) < ihl + 13:
                    continue
                tcp = p[ihl:]
                payload = total - ihl - (tcp[12] >> 4) * 4
            elif ver == 6 and len(p) >= 40:
                if p[6] != 6 or len(p) < 40 + 13:
                    continue
                plen = struct.unpack("!H", p[4:6])[0]
                tcp = p[40:]
                payload = plen - (tcp[12] >> 4) * 4
            else:
                continue
            if payload > 0:
                times.append(sec * 1000000 + (frac // 1000 if nano else frac))
    times.sort()
    return times


def main():
    if len(sys.argv) < 4 or (len(sys.argv) - 2) % 2:
        sys.exit(__doc__)
    times = data_times(sys.argv[1])
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
