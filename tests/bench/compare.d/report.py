# SPDX-License-Identifier: LGPL-2.1-or-later
"""Report of tests/bench/compare: tables with goals (stdout) and PNG plots (gnuplot).

    python3 report.py RECORDS OUT_DIR "SECTION ..."

RECORDS has one measurement per line, tab-separated KEY=VALUE fields; "rec" says what it is:
  tput  one TCP run: sec (agg, single, scale, mem, uneq), ct (contender), rep, n (paths), mbit or
        fail, cc (the sender's congestion control), cpu_ticks/hz over t0..t1 (the contender's
        processes), host_busy/host_total, path_bytes0/1; in uneq also scen (the scenario), and ct
        raw@I for path I alone
  trace like tput, a run of unequal scenario C: secs (its length), traced (the path whose trace
        restarted when b had the data connection), lag (s from then to the restart), iv_end and
        iv_bytes (the receiver's intervals: ends in s of the test, bytes) or iv_fail
  uneq_path  an emulated path of an unequal scenario: scen, path, spec (mpt-pathemu), weight
  uneq_mpt   an mpt contender of an unequal scenario as mptd at a reports it: scheduler, weights
             (WEIGHT:SOURCE per path)
  sys   system calls (perf) of the contender's processes and inner bytes delivered at b
  rtt   idle ping: med_us, min_us
  rss   VmRSS of mptd at a and b (KiB) at t seconds into a full-load run
  label, info, note, mtu, offload: descriptions
Every ratio is the median of per-repetition ratios of contenders that ran back to back.
"""

import atexit
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

records_path, out_dir, selected = sys.argv[1], sys.argv[2], sys.argv[3].split()

R = []
for line in open(records_path):
    line = line.rstrip("\n")
    if not line:
        continue
    d = {}
    for field in line.split("\t"):
        k, _, v = field.partition("=")
        d[k] = v
    R.append(d)

LABEL = {r["ct"]: r["label"] for r in R if r["rec"] == "label"}
INFO = {}
for r in R:
    if r["rec"] == "info":
        INFO.setdefault(r["key"], []).append(r["value"])
# "mpt" and the --mpt-keys contenders (mpt1, ...); not the unequal section's own mptw and mptc.
MPT_IDS = sorted({r["ct"] for r in R if r["rec"] == "label" and re.fullmatch(r"mpt[0-9]*", r["ct"])},
                 key=lambda c: (len(c), c))
OFFLOAD = {r["ct"]: r["value"] for r in R if r["rec"] == "offload"}
MTU = {}
for r in R:
    if r["rec"] == "mtu":
        MTU.setdefault((r.get("sec"), r["ct"]), set()).add(r["mtu"])


def label(ct):
    return LABEL.get(ct, ct)


def med(xs):
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    return statistics.median(xs) if xs else None


def fmt(x, f="%.3f", none="-"):
    return none if x is None else f % x


VERDICTS = []  # every goal's verdict, for the summary at the end
NOT_COMPARABLE = []  # why, for the summary (each reason once)


def verdict(x, goal, ge=True):
    v = "n/a" if x is None else "PASS" if (x >= goal if ge else x <= goal) else "MISS"
    VERDICTS.append(v)
    return v


def not_comparable(why):
    """The verdict of a goal whose yardstick did not run."""
    VERDICTS.append("not comparable")
    if why not in NOT_COMPARABLE:
        NOT_COMPARABLE.append(why)
    return "not comparable (%s)" % why


def good(r):
    return r is not None and "fail" not in r and "mbit" in r


def mbit(r):
    return float(r["mbit"]) if good(r) else None


def cores(r):
    if not good(r) or "cpu_ticks" not in r:
        return None
    span = float(r["t1"]) - float(r["t0"])
    return int(r["cpu_ticks"]) / int(r["hz"]) / span if span > 0 else None


def host_cores(r):
    if not good(r) or "host_busy" not in r:
        return None
    return int(r["host_busy"]) / max(int(r["host_total"]), 1) * int(r["ncpu"])


def paths_used(r):
    """Paths that carried at least a fifth of the mean per-path bytes of the run."""
    if not good(r) or not r.get("path_bytes0"):
        return None
    d = [int(b) - int(a) for a, b in zip(r["path_bytes0"].split(","), r["path_bytes1"].split(","))]
    mean = sum(d) / len(d)
    return sum(1 for x in d if x >= 0.2 * mean)


def by_rep(sec, **match):
    """{rep: {ct: record}} of tput records of a section (and matching fields)."""
    out = {}
    for r in R:
        if r["rec"] == "tput" and r.get("sec") == sec and all(r.get(k) == v for k, v in match.items()):
            out.setdefault(int(r["rep"]), {})[r["ct"]] = r
    return out


def ratios(reps, f):
    """Per-repetition values f(cts) (None skipped)."""
    xs = []
    for rep in sorted(reps):
        try:
            x = f(reps[rep])
        except (KeyError, ZeroDivisionError, TypeError):
            x = None
        if x is not None:
            xs.append(x)
    return xs


def fails(reps):
    return ["rep %d %s: %s" % (rep, ct, r["fail"]) for rep in sorted(reps) for ct, r in reps[rep].items()
            if "fail" in r]


def gnuplot(script):
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("  (gnuplot failed: %s)" % (getattr(e, "stderr", "") or e).strip())


def plot_name(ct):
    """A contender's name on a plot's x axis: short, lines separated by |."""
    if ct in MPT_IDS and ct != "mpt":
        return "mpt|+keys %s" % ct[3:]
    fixed = {"raw": "raw veth", "naive": "naive|forwarder", "mptcp": "MPTCP"}
    if ct in fixed:
        return fixed[ct]
    if ct in ("wgdeb", "wgnew"):
        version = label(ct).split()[1] if len(label(ct).split()) > 1 else ""
        return "wireguard-go|%s|%s" % (version, "(Debian)" if ct == "wgdeb" else "(offload)")
    return label(ct)


def xtics(cts):
    """gnuplot xtics for bars 0, 1, ... and a footnote naming the mpt contenders with extra keys."""
    out = ['"%s" %d' % (plot_name(ct).replace('"', "'").replace("|", "\\n"), i) for i, ct in enumerate(cts)]
    foot = ["%s = %s" % (plot_name(ct).replace("|", " "), label(ct)) for ct in cts if ct in MPT_IDS and ct != "mpt"]
    text = 'set xtics (%s) font ",9"\n' % ", ".join(out)
    if foot:
        text += 'set label 99 "%s" at screen 0.01, screen 0.02 left font ",9"\n' % "; ".join(foot).replace('"', "'")
    return text


TMP = tempfile.mkdtemp(prefix="mpt-compare-plot.")
atexit.register(shutil.rmtree, TMP, True)
STYLE = ('set terminal pngcairo size 1100,680 noenhanced font "DejaVu Sans,11"\n'
         'set grid\nset key top left box opaque\n')
COLORS = ["#1060c0", "#c03020", "#20a050", "#e07020", "#8040c0", "#606060", "#10a0b0", "#b08000"]
plots = []

run_info = INFO.get("run", ["?"])[0]
print()
print("=" * 100)
print("compare: %s" % run_info)
print("  mptd: %s; machine: %s" % (INFO.get("mptd", ["?"])[0], INFO.get("machine", ["?"])[0]))
print("  %s; TCP congestion control in the namespaces: %s%s"
      % (INFO.get("iperf3", ["?"])[0], INFO.get("tcp_cc", ["?"])[0],
         "; every iperf3 ran with -C %s (--cc)" % INFO["iperf_cc"][0] if "iperf_cc" in INFO else ""))
print("  load average at start %s, at the end %s" % (INFO.get("load_start", ["?"])[0], INFO.get("load_end", ["?"])[0]))
for key, what in (("wgdeb", "Debian's wireguard-go"), ("wgnew", "newer wireguard-go"), ("perf", "perf")):
    for v in INFO.get(key, []):
        print("  %s: %s" % (what, v))
for r in R:
    if r["rec"] == "note":
        print("  note: %s" % r["text"])

# The goals against wireguard-go are against the offload build (TUN TSO/GRO, UDP GSO/GRO): the
# newer one from the Go module proxy. Debian's has none of these; it is never judged against.
single = by_rep("single")
offload_ct = "wgnew" if any("wgnew" in c for c in single.values()) else None
if offload_ct is None:
    NO_OFFLOAD = INFO.get("wgnew_missing", ["it did not run"])[0]
    NO_OFFLOAD_VERDICT = "the wireguard-go offload build did not run: %s" % NO_OFFLOAD
if single and ("single" in selected or "cost" in selected):
    if offload_ct:
        print("  wireguard-go offload build: %s ran; the goals against wireguard-go are against it" % label("wgnew"))
    else:
        print("  wireguard-go offload build: NOT RUN (%s); the goals against it are \"not comparable\"," % NO_OFFLOAD)
        print("    and %s, which has no offloads, is shown without a goal" %
              (label("wgdeb") if "wgdeb" in LABEL else "Debian's wireguard-go (missing too)"))

# ---------------------------------------------------------------------------------------------
# 1. aggregation

AGG_GOALS = {  # (family, rate): (eta goal, N with an MPTCP goal, vs-MPTCP goal)
    ("4", "100mbit"): (0.95, 4, 1.03),
    ("6", "100mbit"): (0.93, None, None),
    ("4", "1gbit"): (0.93, 4, 0.95),
}
NO_DROP_TOLERANCE = 0.02

if "aggregation" in selected:
    cfgs = {}
    for r in R:
        if r["rec"] == "tput" and r.get("sec") == "agg":
            cfgs.setdefault((r["fam"], r["rate"]), set()).add(int(r["n"]))
    print()
    print("1. Aggregation efficiency  η = tunnel TCP goodput / (N x single-path TCP goodput without tunnel)")
    print("   Each repetition ran the single path, then each tunnel, back to back over the same paths;")
    print("   Mbit/s are medians, η and \"vs MPTCP\" medians of the per-repetition ratios. \"paths\": paths that")
    print("   carried traffic (per-veth byte counters, median).")
    plotdata = {}
    for (fam, rate) in sorted(cfgs, key=lambda k: (k[1] != "100mbit", k[0])):
        goal_eta, goal_n, goal_vs = AGG_GOALS.get((fam, rate), (None, None, None))
        print()
        print("   IPv%s paths, %s each (tbf)%s" % (fam, rate, "" if goal_eta is None else
                                                 "; goal η >= %.2f" % goal_eta))
        print("     %3s  %-40s %9s %7s  %-11s %8s  %-12s %6s" % ("N", "contender", "Mbit/s", "η", "goal",
                                                              "vs MPTCP", "goal", "paths"))
        etas = {}
        for n in sorted(cfgs[(fam, rate)]):
            reps = by_rep("agg", fam=fam, rate=rate, n=str(n))
            base = med([mbit(c.get("raw")) for c in reps.values()])
            print("     %3d  %-40s %9s" % (n, "single path, no tunnel", fmt(base, "%.1f")))
            cts = [c for c in MPT_IDS + ["mptcp"] if any(c in x for x in reps.values())]
            for ct in cts:
                eta = med(ratios(reps, lambda c: mbit(c[ct]) / (n * mbit(c["raw"]))))
                etas.setdefault(ct, {})[n] = eta
                plotdata.setdefault((fam, rate, ct), []).append((n, eta))
                vs = g_vs = ""
                g_eta = ""
                if ct != "mptcp":
                    if goal_eta is not None:
                        g_eta = ">= %.2f %s" % (goal_eta, verdict(eta, goal_eta))
                    if "mptcp" in cts:
                        v = med(ratios(reps, lambda c: mbit(c[ct]) / mbit(c["mptcp"])))
                        vs = fmt(v)
                        if goal_n == n:
                            g_vs = ">= %.2f %s" % (goal_vs, verdict(v, goal_vs))
                used = med([paths_used(c.get(ct)) for c in reps.values()])
                print("     %3s  %-40s %9s %7s  %-11s %8s  %-12s %6s" % (
                    "", label(ct)[:40], fmt(med([mbit(c.get(ct)) for c in reps.values()]), "%.1f"),
                    fmt(eta), g_eta, vs, g_vs, "%s/%d" % (fmt(used, "%.0f"), n)))
            for f in fails(reps):
                print("          FAILED: %s" % f)
        ns = sorted(cfgs[(fam, rate)])
        if len(ns) > 1:
            for ct in MPT_IDS:
                e = etas.get(ct, {})
                if e.get(ns[0]) is None:
                    continue
                later = [(e[n], n) for n in ns[1:] if e.get(n) is not None]
                if not later:
                    continue
                low, at = min(later)
                print("     no drop as N grows (%s): lowest η %.3f at N=%d, η at N=%d %.3f; goal >= η(N=%d) - %.2f  %s"
                      % (label(ct), low, at, ns[0], e[ns[0]], ns[0], NO_DROP_TOLERANCE,
                         verdict(low, e[ns[0]] - NO_DROP_TOLERANCE)))
    for v in sorted(set(INFO.get("mptcp_limit", []) + INFO.get("mptcp_endpoints", []))):
        print("   MPTCP: %s" % v)

    # plot: η against N
    lines = []
    k = 0
    for (fam, rate, ct), pts in sorted(plotdata.items()):
        fn = os.path.join(TMP, "agg-%s-%s-%s.dat" % (fam, rate, ct))
        with open(fn, "w") as f:
            for n, eta in pts:
                if eta is not None:
                    f.write("%d %.4f\n" % (n, eta))
        style = "linespoints lw 2 pt 7 ps 1.4" if rate == "100mbit" else "points pt 5 ps 2.2"
        dt = "" if fam == "4" else " dt 2"
        lines.append('"%s" using 1:2 with %s%s lc rgb "%s" title "%s, IPv%s paths, %s"'
                     % (fn, style, dt, COLORS[(MPT_IDS + ["mptcp"]).index(ct) % len(COLORS)] if ct in MPT_IDS + ["mptcp"] else COLORS[k % 8],
                        label(ct), fam, rate))
        k += 1
    if lines:
        png = os.path.join(out_dir, "compare-aggregation.png")
        allns = sorted({n for pts in plotdata.values() for n, _ in pts})
        gnuplot(STYLE.replace("1100,680", "1400,680") + 'set output "%s"\n' % png +
                'set title "Aggregation efficiency: TCP goodput / (N x one path without tunnel)\\n%s"\n' % run_info +
                'set xlabel "paths N"\nset ylabel "efficiency"\n'
                'set key outside right top vertical font ",10"\nset yrange [0:1.1]\n'
                'set xrange [0:%g]\nset xtics (%s)\n' % (max(allns) + 1, ", ".join(str(n) for n in allns)) +
                'plot 0.95 with lines dt 3 lc rgb "#444444" title "goal 0.95 (IPv4 paths)", '
                '0.93 with lines dt 4 lc rgb "#888888" title "goal 0.93 (IPv6 paths, 1 Gbit/s)", ' +
                ", ".join(lines) + "\n")
        plots.append(png)

# ---------------------------------------------------------------------------------------------
# 2. one unshaped path

SINGLE_ORDER = ["raw"] + MPT_IDS + ["wgdeb", "wgnew", "naive"]

if "single" in selected and single:
    print()
    print("2. One unshaped veth path (IPv4 paths, IPv4 inside): TCP goodput, one stream, medians of %d"
          % len(single))
    print("   repetitions; ratios are medians of the per-repetition ratios (contenders ran back to back)")
    print()
    print("     %-48s %8s   %s" % ("contender", "Gbit/s", "each repetition"))
    cts = [c for c in SINGLE_ORDER if any(c in x for x in single.values())]
    for ct in cts:
        xs = [mbit(single[rep].get(ct)) for rep in sorted(single)]
        print("     %-48s %8s   %s" % (label(ct), fmt(med(xs) and med(xs) / 1000, "%.2f"),
                                      " ".join(fmt(x and x / 1000, "%.2f") for x in xs)))
    print()
    print("     %-72s %7s  %s" % ("ratio", "median", "goal"))
    for m in MPT_IDS:
        if offload_ct is None:
            print("     %-72s %7s  >= 1.5 %s" % ("%s / wireguard-go offload build" % label(m), "-",
                                                  not_comparable(NO_OFFLOAD_VERDICT)))
        for other, goal in (("wgnew", 1.5), ("naive", 2.5), ("wgdeb", None), ("raw", None)):
            if other not in cts:
                continue
            v = med(ratios(single, lambda c: mbit(c[m]) / mbit(c[other])))
            name = "%s / %s%s" % (label(m), "offload build " if other == "wgnew" else "", label(other))
            if goal:
                judged = ">= %.1f %s" % (goal, verdict(v, goal))
            else:
                judged = "no goal: Debian's build, not the offload build" if other == "wgdeb" else ""
            print("     %-72s %7s  %s" % (name, fmt(v, "%.2f"), judged))
    for ct in ("wgdeb", "wgnew"):
        if ct in OFFLOAD:
            print("     %s offloads on its TUN device (ethtool -k): %s" % (label(ct), OFFLOAD[ct]))
    if ("single", "mpt") in MTU:
        print("     mpt's tunnel MTU: %s (the naive forwarder's is the same; wireguard-go's 1440)"
              % "/".join(sorted(MTU[("single", "mpt")])))
    for f in fails(single):
        print("     FAILED: %s" % f)

    fn = os.path.join(TMP, "single.dat")
    fr = os.path.join(TMP, "single-runs.dat")
    with open(fn, "w") as f, open(fr, "w") as g:
        for i, ct in enumerate(cts):
            xs = [mbit(single[rep].get(ct)) for rep in sorted(single)]
            f.write('%d %.4f "%s"\n' % (i, (med(xs) or 0) / 1000, label(ct)))
            for x in xs:
                if x is not None:
                    g.write("%d %.4f\n" % (i, x / 1000))
    png = os.path.join(out_dir, "compare-single-path.png")
    gnuplot(STYLE + 'set output "%s"\n' % png +
            'set title "One unshaped veth path: TCP goodput (median and each repetition)\\n%s"\n' % run_info +
            'set ylabel "Gbit/s"\nset style fill solid 0.6\nset boxwidth 0.6\nset yrange [0:*]\n'
            'set xrange [-0.6:%g]\nset key top right\nset bmargin 5\n' % (len(cts) - 0.4) + xtics(cts) +
            'plot "%s" using 1:2 with boxes lc rgb "#1060c0" title "median", ' % fn +
            '"" using 1:2:(sprintf("%%.2f", $2)) with labels offset 0,1 notitle, '
            '"%s" using 1:2 with points pt 1 ps 1.5 lc rgb "#e07020" title "each repetition"\n' % fr)
    plots.append(png)

# ---------------------------------------------------------------------------------------------
# 3. scaling

if "scaling" in selected:
    scale = {}
    for r in R:
        if r["rec"] == "tput" and r.get("sec") == "scale":
            scale.setdefault(int(r["rep"]), {})[(r["ct"], int(r["n"]))] = r
    ns = sorted({n for reps in scale.values() for (_, n) in reps})
    if ns:
        print()
        print("3. Unshaped IPv4 paths through mpt: TCP goodput against the number of paths (one stream;")
        print("   every N ran in each repetition, back to back); \"vs N=%d\": median of per-repetition ratios" % ns[0])
        print()
        print("     %3s  %-40s %8s  %8s  %-14s %s" % ("N", "contender", "Gbit/s", "vs N=%d" % ns[0], "goal", "paths"))
        pts = {}
        for ct in MPT_IDS:
            for n in ns:
                xs = [mbit(scale[rep].get((ct, n))) for rep in sorted(scale)]
                if all(x is None for x in xs):
                    continue
                v = med(ratios(scale, lambda c: mbit(c[(ct, n)]) / mbit(c[(ct, ns[0])])))
                g = ""
                if n == ns[-1] and n > ns[0]:
                    g = ">= 0.90 %s" % verdict(v, 0.90)
                used = med([paths_used(scale[rep].get((ct, n))) for rep in sorted(scale)])
                print("     %3d  %-40s %8s  %8s  %-14s %s/%d" % (n, label(ct)[:40], fmt(med(xs) and med(xs) / 1000, "%.2f"),
                                                           fmt(v), g, fmt(used, "%.0f"), n))
                pts.setdefault(ct, []).append((n, med(xs), xs))
        # Secure mode (the default contender "mpt") against each compat-mode contender, N by N:
        # the two ran back to back in every repetition (issue 5: >= 0.6 over 4 paths).
        compat = [ct for ct in MPT_IDS if ct != "mpt" and "Mode=compat" in label(ct)]
        for cct in compat:
            print()
            print("     secure vs %s (median of per-repetition ratios; the single ratios);" % label(cct))
            print("     CPU bound: what the ratio would be if both used the whole machine, compat's CPU per")
            print("     Gbit/s (host, /proc/stat) over secure's: the most secure mode can reach there")
            print()
            print("     %3s  %-32s %8s  %-14s %9s  %s" % ("N", "", "ratio", "goal", "CPU bound", "single ratios"))
            for n in ns:
                rs = ratios(scale, lambda c: mbit(c[("mpt", n)]) / mbit(c[(cct, n)]))
                bs = ratios(scale, lambda c: (host_cores(c[(cct, n)]) / mbit(c[(cct, n)])) /
                            (host_cores(c[("mpt", n)]) / mbit(c[("mpt", n)])))
                g = ">= 0.60 %s" % verdict(med(rs), 0.60) if n == 4 else ""
                print("     %3d  %-32s %8s  %-14s %9s  %s" % (n, "secure / compat", fmt(med(rs)), g, fmt(med(bs)),
                                                            " ".join("%.2f" % x for x in rs)))
        for rep in sorted(scale):
            for (ct, n), r in scale[rep].items():
                if "fail" in r:
                    print("     FAILED: rep %d %s N=%d: %s" % (rep, ct, n, r["fail"]))
        lines = []
        for i, (ct, p) in enumerate(sorted(pts.items())):
            fn = os.path.join(TMP, "scale-%s.dat" % ct)
            fr = os.path.join(TMP, "scale-%s-runs.dat" % ct)
            with open(fn, "w") as f, open(fr, "w") as g:
                for n, m, xs in p:
                    if m is not None:
                        f.write("%d %.4f\n" % (n, m / 1000))
                    for x in xs:
                        if x is not None:
                            g.write("%d %.4f\n" % (n, x / 1000))
            lines.append('"%s" using 1:2 with linespoints lw 2 pt 7 ps 1.4 lc rgb "%s" title "%s (median)"'
                         % (fn, COLORS[i % 8], label(ct)))
            lines.append('"%s" using 1:2 with points pt 1 ps 1.3 lc rgb "%s" notitle' % (fr, COLORS[i % 8]))
        png = os.path.join(out_dir, "compare-scaling.png")
        gnuplot(STYLE + 'set output "%s"\n' % png +
                'set title "Unshaped veth paths: TCP goodput through mpt over N paths\\n%s"\n' % run_info +
                'set xlabel "paths N"\nset ylabel "Gbit/s"\nset yrange [0:*]\nset xrange [0:%g]\nset xtics (%s)\n'
                % (max(ns) + 1, ", ".join(str(n) for n in ns)) + "plot " + ", ".join(lines) + "\n")
        plots.append(png)

# ---------------------------------------------------------------------------------------------
# 4. cost

if "cost" in selected and single:
    sysr, rtt = {}, {}
    for r in R:
        if r["rec"] == "sys" and r.get("sec") == "cost":
            sysr.setdefault(int(r["rep"]), {})[r["ct"]] = r
        elif r["rec"] == "rtt" and r.get("sec") == "cost":
            rtt.setdefault(int(r["rep"]), {})[r["ct"]] = r

    def gpc(r):
        c = cores(r)
        return mbit(r) / 1000 / c if c else None

    def spm(r):
        if r is None or "syscalls" not in r or int(r["bytes"]) <= 0:
            return None
        return int(r["syscalls"]) / (int(r["bytes"]) / 1e6)

    def rtt_us(r):
        return float(r["med_us"]) if r is not None and "med_us" in r else None

    def added(c, ct):
        return rtt_us(c[ct]) - rtt_us(c["raw"])

    cts = [c for c in SINGLE_ORDER if any(c in x for x in single.values())]
    print()
    print("4. Cost on one unshaped path (the runs of section 2): CPU of the contender's processes at both")
    print("   ends (utime + stime, /proc/PID/stat, over the middle of each run), host CPU busy (all of it:")
    print("   iperf3, softirq, the contender), system calls of the contender's processes per MB of inner")
    print("   packets delivered (perf raw_syscalls:sys_enter, separate runs of up to 6 s), idle ping round")
    print("   trip (median of a repetition's pings 10 ms apart: 4 rounds of 50, the contenders in turn in")
    print("   each; --quick: 1) and what the tunnel adds to the bare path's. Medians.")
    print()
    print("     %-44s %7s %9s %10s %9s %11s %8s %8s" % ("contender", "Gbit/s", "CPU cores", "Gbit/s per",
                                                     "host busy", "syscalls", "RTT", "added"))
    print("     %-44s %7s %9s %10s %9s %11s %8s %8s" % ("", "", "", "core", "cores", "per MB", "µs", "µs"))
    for ct in cts:
        col = lambda f, d=single: med([f(d[rep].get(ct)) for rep in sorted(d)])
        print("     %-44s %7s %9s %10s %9s %11s %8s %8s" % (
            label(ct)[:44], fmt(col(mbit) and col(mbit) / 1000, "%.2f"),
            fmt(col(cores), "%.2f") if ct != "raw" else "-", fmt(col(gpc), "%.2f") if ct != "raw" else "-",
            fmt(col(host_cores), "%.2f"), fmt(col(spm, sysr), "%.0f"), fmt(col(rtt_us, rtt), "%.0f"),
            fmt(med(ratios(rtt, lambda c: added(c, ct))), "%.0f") if ct != "raw" else "-"))
    print()
    print("     %-72s %9s  %s" % ("goal", "median", ""))
    for m in MPT_IDS:
        if offload_ct in cts:
            v = med(ratios(single, lambda c: gpc(c[m]) / gpc(c[offload_ct])))
            print("     %-72s %9s  >= 2.0 %s" % ("%s Gbit/s per core / offload build %s's" % (label(m), label(offload_ct)),
                                                 fmt(v, "%.2f"), verdict(v, 2.0)))
        else:
            print("     %-72s %9s  >= 2.0 %s" % ("%s Gbit/s per core / wireguard-go offload build's" % label(m), "-",
                                                 not_comparable(NO_OFFLOAD_VERDICT)))
            if "wgdeb" in cts:
                v = med(ratios(single, lambda c: gpc(c[m]) / gpc(c["wgdeb"])))
                print("     %-72s %9s  no goal: Debian's build, not the offload build"
                      % ("%s Gbit/s per core / %s's" % (label(m), label("wgdeb")), fmt(v, "%.2f")))
        v = med([spm(sysr[rep].get(m)) for rep in sorted(sysr)])
        print("     %-72s %9s  <= 250 %s" % ("%s system calls per MB" % label(m), fmt(v, "%.0f"), verdict(v, 250, ge=False)))
        if "naive" in cts:
            v = med(ratios(rtt, lambda c: added(c, m) / added(c, "naive")))
            print("     %-72s %9s  <= 1.5 %s" % (("%s added idle RTT / naive forwarder's" % label(m))[:72],
                                                 fmt(v, "%.2f"), verdict(v, 1.5, ge=False)))
    for rep in sorted(sysr):
        for ct, r in sysr[rep].items():
            if "fail" in r:
                print("     FAILED: rep %d %s system calls: %s" % (rep, ct, r["fail"]))
    for rep in sorted(rtt):
        for ct, r in rtt[rep].items():
            if "fail" in r:
                print("     FAILED: rep %d %s ping: %s" % (rep, ct, r["fail"]))

    costcts = [c for c in cts if c != "raw"]
    fn = os.path.join(TMP, "cost.dat")
    with open(fn, "w") as f:
        for i, ct in enumerate(costcts):
            col = lambda fun, d=single: med([fun(d[rep].get(ct)) for rep in sorted(d)])
            a = med(ratios(rtt, lambda c: added(c, ct)))
            f.write('%d %s %s %s "%s"\n' % (i, fmt(col(gpc), "%.4f", "NaN"), fmt(col(spm, sysr), "%.1f", "NaN"),
                                            fmt(a, "%.1f", "NaN"), label(ct)))
    png = os.path.join(out_dir, "compare-cost.png")
    panel = ('set style fill solid 0.6\nset boxwidth 0.6\nset xrange [-0.6:%g]\nset bmargin 5\n' % (len(costcts) - 0.4) +
             xtics(costcts) + 'unset key\n')
    gnuplot(STYLE.replace("1100,680", "1800,640") + 'set output "%s"\n' % png +
            'set multiplot layout 1,3 title "Cost on one unshaped path (medians)   %s"\n' % run_info + panel +
            'set title "Gbit/s per CPU core (tunnel processes, both ends)"\nset yrange [0:*]\n'
            'plot "%s" using 1:2 with boxes lc rgb "#1060c0", "" using 1:2:(sprintf("%%.2f", $2)) with labels offset 0,1\n' % fn +
            'set title "system calls per MB"\nset logscale y\nset yrange [*:*]\n'
            'plot "%s" using 1:3 with boxes lc rgb "#c03020", "" using 1:3:(sprintf("%%.0f", $3)) with labels offset 0,1, 250 with lines dt 2 lc rgb "#444444"\n' % fn +
            'unset logscale y\nset title "added idle round-trip time, µs"\nset yrange [0:*]\n'
            'plot "%s" using 1:4 with boxes lc rgb "#20a050", "" using 1:4:(sprintf("%%.0f", $4)) with labels offset 0,1\n' % fn +
            "unset multiplot\n")
    plots.append(png)

# ---------------------------------------------------------------------------------------------
# memory

if "memory" in selected:
    rss = {}
    for r in R:
        if r["rec"] == "rss":
            rss.setdefault(r["ct"], []).append(r)
    load = {r["ct"]: r for r in R if r["rec"] == "tput" and r.get("sec") == "mem"}
    if rss:
        print()
        print("Memory: VmRSS of mptd at each end, idle and over a full-load TCP run through 4 unshaped paths")
        print("   (%s); \"start\" is 5 s into the load, \"end\" its last sample"
              % INFO.get("mem_workers", ["default workers unless -w was given"])[0])
        print()
        print("     %-40s %4s %9s %9s %9s %9s %9s  %s" % ("contender", "side", "idle MiB", "start MiB", "end MiB",
                                                         "max MiB", "growth", "goals: max <= 64 MiB; flat"))
        for ct in [c for c in MPT_IDS if c in rss]:
            rs = rss[ct]
            idle = [r for r in rs if r["t"] == "idle"]
            samples = sorted((int(r["t"]), r) for r in rs if r["t"] != "idle")
            for side in ("a", "b"):
                if not samples:
                    continue
                kb = [int(r["%s_kb" % side]) / 1024 for _, r in samples]
                i = int(idle[0]["%s_kb" % side]) / 1024 if idle else None
                start, end, mx = kb[0], kb[-1], max(kb)
                print("     %-40s %4s %9s %9.1f %9.1f %9.1f %+8.1f   %s; %s (end - start <= max(2 MiB, 5 %%))"
                      % (label(ct)[:40], side, fmt(i, "%.1f"), start, end, mx, end - start,
                         verdict(mx, 64, ge=False), verdict(end - start, max(2.0, 0.05 * start), ge=False)))
            if ct in load:
                print("     %-40s load: %s Mbit/s over %s s" % ("", fmt(mbit(load[ct]), "%.0f"),
                                                             samples[-1][0] if samples else "?"))
        lines = []
        for i, ct in enumerate([c for c in MPT_IDS if c in rss]):
            fn = os.path.join(TMP, "rss-%s.dat" % ct)
            with open(fn, "w") as f:
                for r in sorted((r for r in rss[ct] if r["t"] != "idle"), key=lambda r: int(r["t"])):
                    f.write("%s %.2f %.2f\n" % (r["t"], int(r["a_kb"]) / 1024, int(r["b_kb"]) / 1024))
            lines.append('"%s" using 1:2 with linespoints lw 2 pt 7 lc rgb "%s" title "%s at a"'
                         % (fn, COLORS[(2 * i) % 8], label(ct)))
            lines.append('"%s" using 1:3 with linespoints lw 2 pt 5 lc rgb "%s" title "%s at b"'
                         % (fn, COLORS[(2 * i + 1) % 8], label(ct)))
        png = os.path.join(out_dir, "compare-memory.png")
        gnuplot(STYLE + 'set output "%s"\n' % png +
                'set title "mptd resident memory under full load (4 unshaped paths)"\n'
                'set xlabel "seconds into the load"\nset ylabel "VmRSS (MiB)"\nset yrange [0:*]\nset xrange [0:*]\n'
                'set key right center\n'
                'plot 64 with lines dt 2 lc rgb "#444444" title "goal: 64 MiB", ' + ", ".join(lines) + "\n")
        plots.append(png)

# ---------------------------------------------------------------------------------------------
# 5. unequal paths

UNEQ_TITLE = {
    "A": "100 Mbit/s 5 ms + 20 Mbit/s 40 ms",
    "B": "50/30/10 Mbit/s, 10/30/60 ms, 0/0.5/1 % loss",
    "C": "2 x 50 Mbit/s 20 ms; path 0 drops to 5 Mbit/s for a phase, then comes back",
    "D": "4 x 100 Mbit/s 5 ms (equal)",
    "F": "8 paths, 125, 250, ..., 1000 Mbit/s (1:2:...:8), 0.2 to 2 ms",
}
UNEQ_GOALS = {"A": (0.90, 1.00), "B": (0.85, 1.15), "F": (0.85, None)}  # of mpt: x sum, x MPTCP
UNEQ_D_SECURE, UNEQ_D_COMPAT = 0.94, 0.95  # D: x sum, secure and compat mode
UNEQ_E_GOAL = 0.97  # E: the default (learned) x hand-set weights
UNEQ_C_GAP, UNEQ_C_SHARE, UNEQ_C_AFTER = 1.0, 0.80, 2.0  # C: longest gap (s); x the new sum, AFTER..AFTER+1 s on
UNEQ_COLOR = {"sum": "#808080", "mptw": "#20a050", "mptc": "#e07020", "mptcp": "#c03020"}
UNEQ_CPU_BOUND = 0.9  # host busy >= this share of the CPUs: CPU-bound


def uneq_color(ct):
    if ct in UNEQ_COLOR:
        return UNEQ_COLOR[ct]
    return ["#1060c0", "#8040c0", "#10a0b0", "#b08000", "#606060"][MPT_IDS.index(ct) % 5] if ct in MPT_IDS else "#404040"


def uneq_name(ct):
    """A contender's name on the unequal plot's x axis (lines separated by |)."""
    return {"sum": "sum of|paths alone", "mptw": "mpt hand-|weighted", "mptc": "mpt|compat"}.get(ct, plot_name(ct))


def uneq_reps(scen, kind):
    out = {}
    for r in R:
        if r["rec"] == kind and r.get("sec") == "uneq" and r.get("scen") == scen:
            out.setdefault(int(r["rep"]), {})[r["ct"]] = r
    return out


def uneq_cts(reps):
    """The tunnel contenders that ran, in table order."""
    return [c for c in MPT_IDS + ["mptw", "mptc", "mptcp"] if any(c in x for x in reps.values())]


def uneq_split(r):
    """Each path's share of the bytes a sent, in %."""
    if not good(r) or not r.get("path_bytes0"):
        return None
    d = [int(b) - int(a) for a, b in zip(r["path_bytes0"].split(","), r["path_bytes1"].split(","))]
    return [100.0 * x / sum(d) for x in d] if sum(d) > 0 else None


def uneq_split_text(reps, ct, n):
    s = [med([(uneq_split(c.get(ct)) or [None] * n)[i] for c in reps.values()]) for i in range(n)]
    return "/".join(fmt(x, "%.0f") for x in s)


def uneq_cpu_text(reps, ct):
    c = med([host_cores(x.get(ct)) for x in reps.values()])
    ncpu = next((int(x[ct]["ncpu"]) for x in reps.values() if ct in x and "ncpu" in x[ct]), None)
    return "%s/%s" % (fmt(c, "%.2f"), ncpu or "?"), c, ncpu


def uneq_paths_text(scen):
    paths = sorted((int(r["path"]), r) for r in R if r["rec"] == "uneq_path" and r.get("scen") == scen)
    return ["path %d: %s%s" % (i, r["spec"], "  (hand-set Weight=%s)" % r["weight"] if r.get("weight") else "")
            for i, r in paths]


def uneq_mpt_text(scen):
    """What mptd at a reported for the scenario's mpt contenders: scheduler and weights."""
    for r in R:
        if r["rec"] == "uneq_mpt" and r.get("scen") == scen:
            print("      %s: %s" % (label(r["ct"]), r["fail"] if "fail" in r else "Scheduler=%s, weights %s (mptctl show at a)"
                                    % (r["scheduler"], ", ".join("%s (%s)" % tuple(w.split(":", 1))
                                                                 for w in r["weights"].split(",") if ":" in w))))


def trace_series(r):
    """The receiver's intervals of a trace run as (start, end, bytes), in s of the trace."""
    if not good(r) or not r.get("iv_end"):
        return None
    lag = float(r.get("lag") or 0)
    ends = [float(x) for x in r["iv_end"].split(",")]
    out, prev = [], 0.0
    for e, b in zip(ends, r["iv_bytes"].split(",")):
        out.append((prev - lag, e - lag, int(b)))
        prev = e
    return out


def window_mbit(series, t0, t1):
    """Goodput over t0..t1 s of the trace (intervals cut in proportion); None if not covered."""
    if not series:
        return None
    tot = covered = 0.0
    for s, e, b in series:
        o = min(e, t1) - max(s, t0)
        if o > 0 and e > s:
            tot += b * o / (e - s)
            covered += o
    return tot * 8 / (t1 - t0) / 1e6 if covered >= 0.9 * (t1 - t0) else None


def longest_gap(r):
    """The longest run of intervals in which the receiver got nothing (s), over the whole test."""
    series = trace_series(r)
    if series is None:
        return None
    end = float(r.get("secs", 0)) - float(r.get("lag") or 0)
    best = cur = 0.0
    for s, e, b in series:
        if s >= end - 0.05:  # the server's last, partial interval, after the client stopped
            break
        cur = cur + (e - s) if b == 0 else 0.0
        best = max(best, cur)
    return best


uneq_plot = []  # (scenario, [(ct, median Mbit/s)], [(y, title)] goal markers)

if "unequal" in selected:
    scens = [s for s in "ABCDF" if uneq_reps(s, "tput") or uneq_reps(s, "trace")]
    asked = INFO.get("uneq_scen", ["?"])[0]
    cc_set = INFO.get("iperf_cc", [None])[0]
    cc_seen = sorted({r["cc"] for r in R if r["rec"] in ("tput", "trace") and r.get("sec") == "uneq" and "cc" in r})
    print()
    print("5. Unequal paths, emulated (tests/lab/mpt-pathemu in a router namespace per path, IPv4), scenarios %s"
          % asked)
    print("   TCP congestion control: %s; iperf3's senders reported: %s"
          % ("%s, iperf3 -C (--cc)" % cc_set if cc_set else
             "%s, the namespaces' default (inherited from the host)" % INFO.get("tcp_cc", ["?"])[0],
             ", ".join(cc_seen) or "?"))
    print("   Each repetition ran each path alone without a tunnel (\"sum\": their sum), then every")
    print("   contender over all the paths, back to back; Mbit/s are medians, ratios medians of the")
    print("   per-repetition ratios. \"host CPU\": busy cores of the whole machine (/proc/stat, median);")
    print("   \"split\": each path's share of the bytes a sent, %.")
    why_mptcp = INFO.get("mptcp_missing", ["it did not run"])[0]
    cpu_bound = []
    for scen in scens:
        print()
        if scen == "C":
            reps = uneq_reps("C", "trace")
            n = max(int(r["n"]) for x in reps.values() for r in x.values())
            secs = next(float(r["secs"]) for x in reps.values() for r in x.values())
            P = secs / 3
            print("   C. %s:" % UNEQ_TITLE["C"])
            print("      phases of %g s, runs of %g s; the trace restarts when b has the data connection." % (P, secs))
            print("      Goodput from the receiver's bytes per 100 ms (iperf3's server, -i 0.1). Goals: no delivery gap")
            print("      > %g s (judged on the worst repetition); %g..%g s after each change >= %.2f x the new sum"
                  % (UNEQ_C_GAP, UNEQ_C_AFTER, UNEQ_C_AFTER + 1, UNEQ_C_SHARE))
            print("      (the sum of the paths alone over the second half of the new phase)")
            for t in uneq_paths_text("C"):
                print("      %s" % t)
            uneq_mpt_text("C")
            print()
            print("     %-40s %7s  %6s %6s %-10s  %-27s  %-27s  %s" % (
                "", "", "gap s", "", "", "drop at %g s: %g..%g s" % (P, P + UNEQ_C_AFTER, P + UNEQ_C_AFTER + 1),
                "return at %g s: %g..%g s" % (2 * P, 2 * P + UNEQ_C_AFTER, 2 * P + UNEQ_C_AFTER + 1), ""))
            print("     %-40s %7s  %6s %6s %-10s  %6s %6s %-13s  %6s %6s %-13s  %s" % (
                "contender", "Mbit/s", "median", "worst", "goal", "Mbit/s", "/ sum", "goal", "Mbit/s", "/ sum", "goal",
                "host CPU"))

            def steady(c, ct, k):
                return window_mbit(trace_series(c.get(ct)), (k + 0.5) * P, (k + 1) * P)

            def new_sum(c, k):
                xs = [steady(c, "raw@%d" % i, k) for i in range(n)]
                return None if any(x is None for x in xs) else sum(xs)

            def after(c, ct, k):
                return window_mbit(trace_series(c.get(ct)), k * P + UNEQ_C_AFTER, k * P + UNEQ_C_AFTER + 1)

            for i in range(n):
                ct = "raw@%d" % i
                print("     %-40s %7s  %6s %6s %-10s  %6s %6s %-13s  %6s %6s" % (
                    "path %d alone, no tunnel" % i, fmt(med([mbit(c.get(ct)) for c in reps.values()]), "%.1f"),
                    "", "", "", fmt(med([after(c, ct, 1) for c in reps.values()]), "%.1f"), "", "",
                    fmt(med([after(c, ct, 2) for c in reps.values()]), "%.1f"), ""))
            sums = [med([new_sum(c, k) for c in reps.values()]) for k in range(3)]
            print("     %-40s %7s  %6s %6s %-10s  %6s %6s %-13s  %6s %6s %s" % (
                "sum of the paths alone", fmt(med([(lambda xs: None if None in xs else sum(xs))(
                    [mbit(c.get("raw@%d" % i)) for i in range(n)]) for c in reps.values()]), "%.1f"),
                "", "", "", fmt(sums[1], "%.1f"), "", "= new sum", fmt(sums[2], "%.1f"), "", "= new sum"))
            print("     %-40s steady (second half of each phase): %s Mbit/s" % (
                "", " / ".join(fmt(x, "%.1f") for x in sums)))
            cts = uneq_cts(reps)
            for ct in cts:
                gaps = [longest_gap(c.get(ct)) for c in reps.values()]
                gaps = [g for g in gaps if g is not None]
                worst = max(gaps) if gaps else None
                judged = ct != "mptcp"
                cols = []
                for k in (1, 2):
                    v = med(ratios(reps, lambda c: after(c, ct, k) / new_sum(c, k)))
                    cols += [fmt(med([after(c, ct, k) for c in reps.values()]), "%.1f"), fmt(v),
                             ">= %.2f %s" % (UNEQ_C_SHARE, verdict(v, UNEQ_C_SHARE)) if judged else ""]
                cpu, c_med, ncpu = uneq_cpu_text(reps, ct)
                print("     %-40s %7s  %6s %6s %-10s  %6s %6s %-13s  %6s %6s %-13s  %s" % (
                    label(ct)[:40], fmt(med([mbit(c.get(ct)) for c in reps.values()]), "%.1f"),
                    fmt(med(gaps), "%.1f"), fmt(worst, "%.1f"),
                    "<= %g %s" % (UNEQ_C_GAP, verdict(worst, UNEQ_C_GAP, ge=False)) if judged else "", *cols, cpu))
            if "mptcp" not in cts:
                print("     MPTCP: not run (%s); C has no goal against it" % why_mptcp)
            lags = [float(r["lag"]) for x in reps.values() for r in x.values() if r.get("lag")]
            timeouts = sum(1 for x in reps.values() for r in x.values() if r.get("sync") == "timeout")
            print("     trace restarted %s..%s s after b had the data connection%s" % (
                fmt(min(lags) if lags else None, "%.2f"), fmt(max(lags) if lags else None, "%.2f"),
                "; %d run(s) never showed it within 3 s: restarted at a guess" % timeouts if timeouts else ""))
            for f in fails(reps):
                print("     FAILED: %s" % f)
            for x in reps.values():
                for ct, r in x.items():
                    if r.get("iv_fail"):
                        print("     FAILED: rep %s %s: %s" % (r["rep"], ct, r["iv_fail"]))
            uneq_plot.append(("C", [("sum", med([(lambda xs: None if None in xs else sum(xs))(
                [mbit(c.get("raw@%d" % i)) for i in range(n)]) for c in reps.values()]))] +
                [(ct, med([mbit(c.get(ct)) for c in reps.values()])) for ct in cts], []))

            # goodput over the trace: the repetition with the default contender's longest gap
            worst_rep = max(reps, key=lambda rep: longest_gap(reps[rep].get("mpt")) or 0)
            lines = []
            fs = os.path.join(TMP, "trace-sum.dat")
            with open(fs, "w") as f:
                for k in range(3):
                    s_k = new_sum(reps[worst_rep], k)
                    if s_k is not None:
                        f.write("%g %.3f %.3f\n%g %.3f %.3f\n\n" % (k * P, s_k, UNEQ_C_SHARE * s_k,
                                                                 (k + 1) * P, s_k, UNEQ_C_SHARE * s_k))
            lines.append('"%s" using 1:2 with lines lw 2 lc rgb "#808080" title "sum of the paths alone (steady)"' % fs)
            lines.append('"%s" using 1:3 with lines lw 1 dt 2 lc rgb "#444444" title "%.2f x sum"' % (fs, UNEQ_C_SHARE))
            for ct in cts:
                series = trace_series(reps[worst_rep].get(ct))
                if not series:
                    continue
                fn = os.path.join(TMP, "trace-%s.dat" % ct)
                with open(fn, "w") as f:
                    # means over 0.5 s (5 intervals), centred: the reader takes what arrived in bursts
                    for j in range(2, len(series) - 2):
                        part = series[j - 2:j + 3]
                        f.write("%.3f %.3f\n" % ((series[j][0] + series[j][1]) / 2,
                                                 sum(b for _, _, b in part) * 8 / (part[-1][1] - part[0][0]) / 1e6))
                lines.append('"%s" using 1:2 with lines lw 1.5 lc rgb "%s" title "%s"' % (fn, uneq_color(ct), label(ct)))
            png = os.path.join(out_dir, "compare-unequal-trace.png")
            gnuplot(STYLE.replace("1100,680", "1400,680") + 'set output "%s"\n' % png +
                    'set title "Unequal C: path 0 drops from 50 to 5 Mbit/s at %g s and returns at %g s; goodput at the '
                    'receiver (means over 0.5 s),\\nrepetition %d (the default contender\'s longest gap)   %s"\n'
                    % (P, 2 * P, worst_rep, run_info) +
                    'set xlabel "s of the trace"\nset ylabel "Mbit/s"\nset yrange [0:*]\nset xrange [0:%g]\n' % secs +
                    'set key outside right top vertical font ",10"\n'
                    'set arrow from %g, graph 0 to %g, graph 1 nohead dt 3 lc rgb "#888888"\n' % (P, P) +
                    'set arrow from %g, graph 0 to %g, graph 1 nohead dt 3 lc rgb "#888888"\n' % (2 * P, 2 * P) +
                    "plot " + ", ".join(lines) + "\n")
            plots.append(png)
            continue

        reps = uneq_reps(scen, "tput")
        n = max(int(r["n"]) for x in reps.values() for r in x.values())
        g_sum, g_vs = UNEQ_GOALS.get(scen, (None, None))
        goals = []
        if scen == "D":
            goals.append(">= %.2f x sum (secure mode), >= %.2f (compat mode)" % (UNEQ_D_SECURE, UNEQ_D_COMPAT))
        elif g_sum:
            goals.append(">= %.2f x sum" % g_sum)
        if g_vs:
            goals.append(">= %.2f x MPTCP" % g_vs)
        print("   %s. %s; goals of mpt: %s" % (scen, UNEQ_TITLE[scen], "; ".join(goals)))
        for t in uneq_paths_text(scen):
            print("      %s" % t)
        uneq_mpt_text(scen)
        print()
        print("     %-40s %9s %7s  %-12s %8s  %-12s %8s  %s" % ("contender", "Mbit/s", "/ sum", "goal", "/ MPTCP",
                                                              "goal", "host CPU", "split %"))

        def total(c):
            xs = [mbit(c.get("raw@%d" % i)) for i in range(n)]
            return None if None in xs else sum(xs)

        for i in range(n):
            ct = "raw@%d" % i
            cpu, c_med, ncpu = uneq_cpu_text(reps, ct)
            if c_med is not None and ncpu and c_med >= UNEQ_CPU_BOUND * ncpu:
                cpu_bound.append((scen, ct, c_med, ncpu))
            print("     %-40s %9s %7s  %-12s %8s  %-12s %8s" % (
                "path %d alone, no tunnel" % i, fmt(med([mbit(c.get(ct)) for c in reps.values()]), "%.1f"),
                "", "", "", "", cpu))
        s_med = med([total(c) for c in reps.values()])
        print("     %-40s %9s" % ("sum of the paths alone", fmt(s_med, "%.1f")))
        cts = uneq_cts(reps)
        bars = [("sum", s_med)]
        for ct in cts:
            v = med(ratios(reps, lambda c: mbit(c[ct]) / total(c)))
            g1 = g2 = vs = ""
            if ct != "mptcp":
                goal = None
                if scen == "D":
                    goal = UNEQ_D_COMPAT if ct == "mptc" or "Mode=compat" in label(ct) else UNEQ_D_SECURE
                elif ct in MPT_IDS:
                    goal = g_sum
                if goal is not None:
                    g1 = ">= %.2f %s" % (goal, verdict(v, goal))
                w = med(ratios(reps, lambda c: mbit(c[ct]) / mbit(c["mptcp"]))) if "mptcp" in cts else None
                vs = fmt(w) if "mptcp" in cts else "-"
                if g_vs and ct in MPT_IDS:
                    g2 = (">= %.2f %s" % (g_vs, verdict(w, g_vs)) if "mptcp" in cts else
                          ">= %.2f %s" % (g_vs, not_comparable("MPTCP did not run: %s" % why_mptcp)))
            cpu, c_med, ncpu = uneq_cpu_text(reps, ct)
            if c_med is not None and ncpu and c_med >= UNEQ_CPU_BOUND * ncpu:
                cpu_bound.append((scen, ct, c_med, ncpu))
            m = med([mbit(c.get(ct)) for c in reps.values()])
            bars.append((ct, m))
            print("     %-40s %9s %7s  %-12s %8s  %-12s %8s  %s" % (
                label(ct)[:40], fmt(m, "%.1f"), fmt(v), g1, vs, g2, cpu, uneq_split_text(reps, ct, n)))
        if "mptcp" not in cts:
            print("     MPTCP: not run (%s)" % why_mptcp)
        for f in fails(reps):
            print("     FAILED: %s" % f)
        marks = []
        if s_med is not None:
            if scen == "D":
                marks = [(UNEQ_D_SECURE * s_med, "%.2f x sum" % UNEQ_D_SECURE),
                         (UNEQ_D_COMPAT * s_med, "%.2f x sum" % UNEQ_D_COMPAT)]
            elif g_sum:
                marks = [(g_sum * s_med, "%.2f x sum" % g_sum)]
        m_mptcp = dict(bars).get("mptcp")
        if g_vs and m_mptcp:
            marks.append((g_vs * m_mptcp, "%.2f x MPTCP" % g_vs))
        uneq_plot.append((scen, bars, marks))
        if scen == "F":
            print("     CPU: both ends, iperf3 and the 8 emulators share this machine's %s CPUs. \"sum\" adds up runs"
                  % (uneq_cpu_text(reps, "mpt")[2] or "?"))
            print("     over one path at a time; a contender moves all of it at once, through all 8 emulators, with")
            print("     the CPU the \"host CPU\" column shows.")

    if "E" in asked.split():
        print()
        print("   E. The default (learned) against weights set by hand to the paths' rates (Scheduler=weighted,")
        print("      Weight= = rate in Mbit/s at both ends): the runs of A and B; goal default >= %.2f x hand-tuned"
              % UNEQ_E_GOAL)
        print()
        print("     %-4s %-40s %9s %-40s %9s %7s  %s" % ("", "default", "Mbit/s", "hand-tuned", "Mbit/s", "ratio", "goal"))
        for scen in "AB":
            reps = uneq_reps(scen, "tput")
            if not reps:
                print("     %-4s %s" % (scen, not_comparable("scenario %s did not run" % scen)))
                continue
            cts = uneq_cts(reps)
            if "mpt" not in cts or "mptw" not in cts:
                print("     %-4s %s" % (scen, not_comparable("scenario %s: the default or the hand-weighted contender "
                                                            "did not run" % scen)))
                continue
            v = med(ratios(reps, lambda c: mbit(c["mpt"]) / mbit(c["mptw"])))
            print("     %-4s %-40s %9s %-40s %9s %7s  >= %.2f %s" % (
                scen, label("mpt")[:40], fmt(med([mbit(c.get("mpt")) for c in reps.values()]), "%.1f"),
                label("mptw")[:40], fmt(med([mbit(c.get("mptw")) for c in reps.values()]), "%.1f"), fmt(v),
                UNEQ_E_GOAL, verdict(v, UNEQ_E_GOAL)))

    if cpu_bound:
        print()
        print("   CPU-bound runs: the whole machine was >= %d %% busy (median; other work on it counts too), so" %
              (UNEQ_CPU_BOUND * 100))
        print("   their figures are what its CPUs allowed, not what the paths or the scheduler can do:")
        for s, ct, c, k in cpu_bound:
            name = "path %s alone, no tunnel" % ct[4:] if ct.startswith("raw@") else label(ct)
            print("     %s  %-40s %.2f of %d CPUs busy" % (s, name[:40], c, k))

    if uneq_plot:
        png = os.path.join(out_dir, "compare-unequal.png")
        script = (STYLE.replace("1100,680", "%d,720" % max(800, 120 + 380 * len(uneq_plot))) +
                  'set output "%s"\n' % png +
                  'set multiplot layout 1,%d title "Unequal paths (emulated): TCP goodput, medians; dashed: goals of mpt\\n%s"\n'
                  % (len(uneq_plot), run_info) +
                  'set style fill solid 0.7\nset boxwidth 0.7\nset bmargin 5\nset key top right box opaque font ",8"\nset ylabel "Mbit/s"\n')
        for scen, bars, marks in uneq_plot:
            fn = os.path.join(TMP, "uneq-%s.dat" % scen)
            with open(fn, "w") as f:
                for i, (ct, m) in enumerate(bars):
                    f.write("%d %s %d\n" % (i, fmt(m, "%.3f", "NaN"), int(uneq_color(ct)[1:], 16)))
            top = max([m for _, m in bars if m is not None] + [y for y, _ in marks] + [1])
            script += ('set title "%s. %s" font ",10"\nset xrange [-0.6:%g]\nset yrange [0:%g]\n'
                       % (scen, UNEQ_TITLE[scen].replace("; path 0", ";\\npath 0"), len(bars) - 0.4, top * 1.3))
            script += "set key\n" if marks else "unset key\n"
            script += 'set xtics (%s) font ",9"\n' % ", ".join(
                '"%s" %d' % (uneq_name(ct).replace('"', "'").replace("|", "\\n"), i) for i, (ct, _) in enumerate(bars))
            goal_lines = "".join(', %g with lines dt %d lw 2 lc rgb "#222222" title "goal: %s"' % (y, 2 + j, t)
                                 for j, (y, t) in enumerate(marks))
            script += ('plot "%s" using 1:2:3 with boxes lc rgb variable notitle, "" using 1:2:(sprintf("%%.0f", $2)) '
                       'with labels offset 0,0.8 font ",9" notitle%s\n' % (fn, goal_lines))
        script += "unset multiplot\n"
        gnuplot(script)
        plots.append(png)

print()
counts = [(v, VERDICTS.count(v)) for v in ("PASS", "MISS", "not comparable", "n/a") if v in VERDICTS]
print("Goals: %s" % (", ".join("%d %s" % (n, v) for v, n in counts) or "none judged"))
for why in NOT_COMPARABLE:
    print("  not comparable: %s" % why)
if offload_ct and ("single" in selected or "cost" in selected):
    print("  the goals against wireguard-go were judged against its offload build, %s" % label(offload_ct))
for p in plots:
    if os.path.exists(p):
        print("Plot: %s" % p)
