#!/usr/bin/env python3
"""pstitch's report commands against perf 7.2's Python report scripts, and
`pstitch flamegraph` against the text pipeline, on the benchmark recording.

    sudo bench/reports.py [--runs 1] [--workdir /tmp/pstitch-bench] [--pstitch BIN]

Needs the recording bench/run.py makes (<workdir>/big.data: `perf record -a
-g -F 20000`, 20 s of a mixed workload), perf-ref, a release build of
pstitch, and inferno's command-line tools (`cargo install inferno`:
inferno-collapse-perf, inferno-flamegraph) for the pipeline.

Measures, <runs> times each (median wall time, peak RSS), after the same
rest before every run:
- `script report stackcollapse`: perf-ref's stackcollapse.py vs pstitch;
  outputs compared byte for byte;
- `script report flamegraph -- --format json`: perf-ref's flamegraph.py vs
  pstitch; outputs compared as parsed JSON;
- gecko: perf-ref running gecko.py (`-s ... -- --save-only`) vs
  `pstitch script report gecko --save-only`; compared as parsed JSON;
- `pstitch flamegraph` vs `pstitch script | inferno-collapse-perf |
  inferno-flamegraph` (both write an SVG; not compared: inferno's folding
  of perf script text differs from stackcollapse.py's).
Targets: each report >= 20x faster than perf's script; `pstitch flamegraph`
faster than the pipeline.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERF_REF = os.environ.get("PERF_REF", "/work/shared/reference-perf/perf-ref")
GECKO = "/usr/lib/perf-core/scripts/python/gecko.py"
SETTLE = 3.0
ENV = dict(os.environ, PERF_BUILDID_DIR="/nonexistent")


def timed(cmd, shell=False):
    """Wall seconds and peak RSS (KiB, the largest process) of one run."""
    time.sleep(SETTLE)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), cmd)
    return wall, usage.ru_maxrss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--workdir", default="/tmp/pstitch-bench")
    ap.add_argument("--pstitch", default=os.path.join(ROOT, "target/release/pstitch"))
    args = ap.parse_args()
    big = os.path.join(args.workdir, "big.data")
    if not os.path.exists(big):
        sys.exit(f"bench: no {big}: run bench/run.py first (it records it)")
    p = os.path.abspath(args.pstitch)
    # perf-ref runs in a chroot with the host at /host: outputs it writes go
    # to a host directory through that path.
    tmp = tempfile.mkdtemp(prefix="pstitch-reports-")
    out = lambda name: os.path.join(tmp, name)
    host = lambda path: "/host" + path
    sym = ["--symfs=/", "--kallsyms=/proc/kallsyms"]

    cases = [
        ("stackcollapse",
         [PERF_REF, "script", "report", "stackcollapse", "-i", big],
         [p, "script", "report", "stackcollapse", "-i", big] + sym,
         "text"),
        ("flamegraph json",
         [PERF_REF, "script", "report", "flamegraph", "-i", big, "--", "--format=json",
          "--output=" + host(out("perf-stacks.json"))],
         [p, "script", "report", "flamegraph", "-i", big] + sym + ["--", "--format=json",
                                                                   "--output=" + out("pstitch-stacks.json")],
         ("perf-stacks.json", "pstitch-stacks.json")),
        ("gecko",
         [PERF_REF, "script", "-i", big, "-s", GECKO, "--", "--save-only", host(out("perf-gecko.json"))],
         [p, "script", "report", "gecko", "-i", big] + sym + ["--save-only", out("pstitch-gecko.json")],
         ("perf-gecko.json", "pstitch-gecko.json")),
    ]
    rows, ok = [], True
    for name, perf_cmd, pstitch_cmd, compare in cases:
        tp, ts, rp, rs = [], [], [], []
        for _ in range(args.runs):
            w, r = timed(perf_cmd)
            tp.append(w), rp.append(r)
            w, r = timed(pstitch_cmd)
            ts.append(w), rs.append(r)
        if compare == "text":
            a = subprocess.run(perf_cmd, capture_output=True, env=ENV, check=True).stdout
            b = subprocess.run(pstitch_cmd, capture_output=True, env=ENV, check=True).stdout
            same = a == b
        else:
            with open(out(compare[0])) as f:
                a = json.load(f)
            with open(out(compare[1])) as f:
                b = json.load(f)
            same = a == b
        ratio = statistics.median(tp) / statistics.median(ts)
        ok &= same and ratio >= 20
        rows.append((name, statistics.median(tp), statistics.median(ts), ratio, max(rp), max(rs), same))

    svg_cmd = [p, "flamegraph", "-i", big] + sym + ["-o", out("pstitch.svg")]
    pipe_cmd = (f"{p} script -i {big} {' '.join(sym)} | inferno-collapse-perf | inferno-flamegraph > {out('pipe.svg')}")
    tf, tpipe, rf = [], [], []
    for _ in range(args.runs):
        w, r = timed(svg_cmd)
        tf.append(w), rf.append(r)
        tpipe.append(timed(pipe_cmd, shell=True)[0])
    svg_ratio = statistics.median(tpipe) / statistics.median(tf)
    ok &= svg_ratio > 1

    print(f"recording: {big} ({os.path.getsize(big) / 1e6:.0f} MB); pstitch: {p}; medians of {args.runs} run(s)")
    print(f"{'report':<16} {'perf 7.2':>10} {'pstitch':>10} {'ratio':>8} {'target':>7} {'perf RSS':>10} {'pstitch RSS':>12}  output")
    for name, tp, ts, ratio, rp, rs, same in rows:
        print(f"{name:<16} {tp:>9.2f}s {ts:>9.2f}s {ratio:>7.1f}x {20:>6}x {rp / 1024:>8.0f}MB {rs / 1024:>10.0f}MB  "
              f"{'identical' if same else 'DIFFERENT'}")
    print(f"\npstitch flamegraph {statistics.median(tf):.2f}s ({max(rf) / 1024:.0f} MB) vs "
          f"pstitch script | inferno-collapse-perf | inferno-flamegraph {statistics.median(tpipe):.2f}s: {svg_ratio:.1f}x")
    print("\nall targets met" if ok else "\nSOME TARGETS MISSED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
