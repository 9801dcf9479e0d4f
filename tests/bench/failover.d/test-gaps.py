#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Self-test of gaps.py, the failover benchmark's stall measurement (TAP).

Asserts that the gap is measured from in-order delivery: during an outage, a retransmission of
delivered bytes, a segment beyond a hole and another connection's data do not end the gap; the
segment that fills the hole does, and it delivers the data held behind the hole; sequence numbers
wrap; IPv4 and IPv6 on the raw-IP link type (the TUN device) and on Ethernet.

Each case writes a small pcap of one direction of a stream (headers only, as dumpcap -s 96 keeps
them), runs gaps.py on it as the benchmark does and compares its output line.

    test-gaps.py [GAPS_PY]   (default: gaps.py next to this file)
"""

import os
import struct
import subprocess
import sys
import tempfile

GAPS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "gaps.py")
T0 = 1700000000 * 1000000  # capture times are wall-clock microseconds
MSS = 1000
ISN = 1000000
SYN, ACK = 0x02, 0x10


def segment(t_ms, seq, length, sport=40000, flags=ACK, v6=False):
    """(time in us, IP packet: headers only, lengths as if the payload were there)."""
    tcp = struct.pack("!HHIIBBHHH", sport, 5201, seq % (1 << 32), 1, 5 << 4, flags, 65535, 0, 0)
    if v6:
        ip = struct.pack("!IHBB16s16s", 6 << 28, len(tcp) + length, 6, 64,
                         bytes.fromhex("fd000000000000000000000000000001"),
                         bytes.fromhex("fd000000000000000000000000000002"))
    else:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + length, 0, 0, 64, 6, 0,
                         bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return (T0 + int(t_ms * 1000), ip + tcp)


def pcap(path, packets, ether=False):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 96, 1 if ether else 101))
        for t, p in packets:
            if ether:
                p = b"\x02" * 12 + (b"\x86\xdd" if p[0] >> 4 == 6 else b"\x08\x00") + p
            f.write(struct.pack("<IIII", t // 1000000, t % 1000000, len(p), len(p)) + p)


def stream(t_from, t_to, first, isn=ISN, **kw):
    """Segment `first`, first + 1, ... (MSS bytes each), one per millisecond from t_from to t_to."""
    out = []
    for i, t in enumerate(range(t_from, t_to + 1)):
        out.append(segment(t, isn + 1 + (first + i) * MSS, MSS, **kw))
    return out


def seg(t_ms, k, isn=ISN, **kw):
    """Segment number k of the stream at t_ms."""
    return segment(t_ms, isn + 1 + k * MSS, MSS, **kw)


def run(packets, window_ms, ether=False):
    with tempfile.TemporaryDirectory() as d:
        fn = os.path.join(d, "run.pcap")
        pcap(fn, packets, ether)
        out = subprocess.run([sys.executable, GAPS, fn, str(T0 + window_ms[0] * 1000), str(T0 + window_ms[1] * 1000)],
                             check=True, capture_output=True, text=True).stdout.split()
    gap_us, start_us, n = (int(x) for x in out)
    return gap_us / 1000, (start_us - T0) / 1000, n


# Every case: a stream of one segment per ms from 0 to 99 ms (segments 0..99), an outage, and the
# stream again from 400 ms. In-order delivery stops at 99 ms and resumes at 400 ms: 301 ms.
def base(v6=False):
    return [segment(-1, ISN, 0, flags=SYN, v6=v6)] + stream(0, 99, 0, v6=v6)


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


@case
def plain_outage():
    """no traffic in the outage: the gap is the outage"""
    return base() + stream(400, 450, 100), (301, 99)


@case
def retransmission_in_outage():
    """a retransmission of delivered bytes at 250 ms does not end the gap"""
    return base() + [seg(250, 50)] + stream(400, 450, 100), (301, 99)


@case
def out_of_order_in_outage():
    """segments beyond a hole (150..152 at 200..202 ms) deliver nothing; the hole's fill at
    400 ms does, with the held data, and the stream goes on after it"""
    pk = base() + [seg(200 + i, 150 + i) for i in range(3)]
    pk += [segment(400, ISN + 1 + 100 * MSS, 50 * MSS)] + [seg(401, 150), seg(402, 153)] + stream(403, 450, 154)
    return pk, (301, 99)


@case
def partial_fill_in_outage():
    """a fill of part of the hole at 250 ms is in-order progress: it ends the gap"""
    pk = base() + [seg(200, 120), seg(250, 100)]
    pk += [segment(400, ISN + 1 + 101 * MSS, 19 * MSS)] + stream(401, 450, 121)
    return pk, (151, 99)


@case
def other_connection_in_outage():
    """another connection's data at 250 ms (iperf3's control connection) does not end the gap"""
    ctl = [segment(-2, 5000, 0, sport=40001, flags=SYN), segment(0, 5001, 40, sport=40001),
           segment(250, 5041, 40, sport=40001)]
    return base() + ctl + stream(400, 450, 100), (301, 99)


@case
def sequence_wraps():
    """sequence numbers that wrap past 2^32 mid-stream are still in order (and a stale one is not)"""
    isn = (1 << 32) - 50 * MSS
    pk = [segment(-1, isn, 0, flags=SYN)] + stream(0, 99, 0, isn=isn) + [seg(250, 70, isn=isn)]
    return pk + stream(400, 450, 100, isn=isn), (301, 99)


@case
def ipv6_out_of_order():
    """IPv6: a segment beyond a hole at 250 ms does not end the gap"""
    pk = base(v6=True) + [seg(250, 130, v6=True)] + stream(400, 450, 100, v6=True)
    return pk, (301, 99)


@case
def ethernet_retransmission():
    """Ethernet link type: a retransmission at 250 ms does not end the gap"""
    return (base() + [seg(250, 10)] + stream(400, 450, 100), (301, 99), True)


def main():
    print("1..%d" % len(CASES))
    failed = 0
    for i, fn in enumerate(CASES, 1):
        spec = fn()
        packets, (want_gap, want_start) = spec[0], spec[1]
        ether = len(spec) > 2 and spec[2]
        gap, start, _ = run(packets, (50, 450), ether)
        ok = abs(gap - want_gap) < 0.001 and abs(start - want_start) < 0.001
        failed += not ok
        print("%s %d - %s: %s" % ("ok" if ok else "not ok", i, fn.__name__, " ".join(fn.__doc__.split())))
        if not ok:
            print("# gap %.3f ms from %.3f ms; expected %.3f ms from %.3f ms" % (gap, start, want_gap, want_start))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
