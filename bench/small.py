#!/usr/bin/env python3
"""pstitch on small recordings (issue 30): interactive latency and memory
against perf 7.2 (perf-ref), measured in the same run on the same machine.

    sudo bench/small.py [--runs 7] [--workdir DIR] [--rerecord] [--pgo] [--binary PATH] [--baseline PATH]

Most `perf script` runs are on small files (a few thousand samples of one
program; CI golden diffs run it hundreds of times), where start-up, kernel
symbols and inline-frame work weigh more than the samples themselves.

1. Records (once, cached in --workdir/small; --rerecord redoes it) five
   recordings of 1k-20k samples each, with the host perf, of the programs in
   tests/workloads (built by tests/workloads/build.sh into
   /tmp/pstitch-fixtures/bin):
   - c:    `perf record -g -F 4000` of cwork (C, pthreads),
   - cpp:  the same of cppwork (C++, libstdc++),
   - rust: the same of rustwork,
   - py:   the same of Debian's python3 running pywork.py,
   - tp:   tracepoints with callchains (sched_process_exec, sys_enter_openat,
           sys_exit_mmap, sched_switch) over a shell starting /bin/true 300
           times.
2. Runs perf-ref and pstitch ALTERNATELY (perf, pstitch, perf, ...), <runs>
   times each, on every recording, with the default options (inline frames)
   and with --no-inline; kernel symbols come from /proc/kallsyms as a user
   would get them (perf-ref reads it itself; pstitch is given
   `--symfs=/ --kallsyms=/proc/kallsyms`, as in bench/run.py).
3. Prints median wall time, the perf/pstitch ratio, the median of the runs'
   peak RSS of each, and whether the outputs are identical (SHA-256 of
   stdout); and pstitch's first run apart (its wall time and peak RSS):
   with an empty cache directory it is the cold run that fills the cache
   (the medians are warm runs). --baseline PATH
   times another pstitch binary (an earlier build) in the same rounds and
   prints it beside, with the ratio taken round by round.

Goal (issue 30): default mode >= 5x faster than perf 7.2, peak RSS <= perf's,
outputs identical. Needs root (perf-ref's chroot), /usr/bin/perf, perf-ref.
"""

import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (bench/run.py: timing, hashing, the command lines)

BIN = run.BIN
TARGET = 5.0
TRACEPOINTS = ["sched:sched_process_exec", "syscalls:sys_enter_openat", "syscalls:sys_exit_mmap", "sched:sched_switch"]
RECORDINGS = [
    ("c", ["-g", "-F", "4000", "--", f"{BIN}/cwork", "400"]),
    ("cpp", ["-g", "-F", "4000", "--", f"{BIN}/cppwork", "1500"]),
    ("rust", ["-g", "-F", "4000", "--", f"{BIN}/rustwork", "1000"]),
    ("py", ["-g", "-F", "4000", "--", "python3", f"{BIN}/pywork.py", "2000"]),
    ("tp", ["-g"] + [a for t in TRACEPOINTS for a in ("-e", t)]
     + ["--", "sh", "-c", "for i in $(seq 300); do /bin/true; done"]),
]


def prepare(args):
    wd = os.path.join(args.workdir, "small")
    os.makedirs(wd, exist_ok=True)
    run.sh(["cargo", "build", "--release", "--quiet", "--bins"], cwd=run.ROOT)
    paths = []
    built = False
    for name, rec in RECORDINGS:
        path = os.path.join(wd, f"{name}.data")
        if args.rerecord or not os.path.exists(path):
            if not built:
                run.sh([os.path.join(run.ROOT, "tests/workloads/build.sh")], stdout=subprocess.DEVNULL)
                built = True
            run.sh(["perf", "record", "-q", "-o", path] + rec, cwd=wd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        paths.append((name, path))
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--workdir", default="/tmp/pstitch-bench")
    ap.add_argument("--rerecord", action="store_true")
    ap.add_argument("--pgo", action="store_true", help="measure the profile-guided build (bench/pgo-build.sh)")
    ap.add_argument("--binary", help="measure this pstitch binary instead of the cargo build")
    ap.add_argument("--baseline", help="another pstitch binary (an earlier build) to time in the same rounds")
    ap.add_argument("--settle", type=float, default=0.5,
                    help="seconds of rest before each run (bench/run.py rests 3 s after its long runs)")
    args = ap.parse_args()
    if not os.path.exists(run.PERF_REF):
        sys.exit(f"bench: {run.PERF_REF} is missing")
    run.SETTLE = args.settle
    recordings = prepare(args)
    run.BINARIES["pstitch"] = os.path.join(run.ROOT, "target/release/pstitch")
    if args.pgo:
        run.BINARIES["pstitch"] = subprocess.run([os.path.join(run.ROOT, "bench/pgo-build.sh")], check=True,
                                                 capture_output=True, text=True).stdout.strip()
    if args.binary:
        run.BINARIES["pstitch"] = os.path.abspath(args.binary)
    tools = ("perf", "pstitch")
    if args.baseline:
        run.BINARIES["baseline"] = os.path.abspath(args.baseline)
        tools += ("baseline",)
        print(f"baseline: {run.BINARIES['baseline']}")
    print(f"pstitch: {run.BINARIES['pstitch']}")
    for name, path in recordings:
        print(f"{name:<5} {path}: {run.count_samples(path)} samples, {os.path.getsize(path) / 1e6:.1f} MB")

    ok = True
    rows, baselines = [], []
    for name, path in recordings:
        for mode, extra in (("default", []), ("no-inline", ["--no-inline"])):
            times = {t: [] for t in tools}
            rss = {t: [] for t in tools}
            for _ in range(args.runs):
                for tool in tools:
                    w, r = run.timed(run.tool_cmd(tool, path, extra))
                    times[tool].append(w)
                    rss[tool].append(r)
            same = len({run.output_hash(run.tool_cmd(t, path, extra), False) for t in tools}) == 1
            tp, ts = statistics.median(times["perf"]), statistics.median(times["pstitch"])
            rp, rs = statistics.median(rss["perf"]), statistics.median(rss["pstitch"])
            met = same and rs <= rp and (mode != "default" or tp / ts >= TARGET)
            ok &= met
            rows.append((name, mode, tp, ts, rp, rs, same, met, times["pstitch"][0], rss["pstitch"][0]))
            if args.baseline:
                # Paired: each round's baseline time against the same round's pstitch time.
                pairs = [b / p for b, p in zip(times["baseline"], times["pstitch"])]
                baselines.append((name, mode, statistics.median(times["baseline"]), ts, statistics.median(pairs),
                                  statistics.median(rss["baseline"]), rs))

    print()
    print(f"{'recording':<10} {'mode':<10} {'perf 7.2':>9} {'pstitch':>9} {'ratio':>7} {'perf RSS':>9} {'pstitch RSS':>12}"
          f" {'first run':>16}  output")
    for name, mode, tp, ts, rp, rs, same, met, t0, r0 in rows:
        print(f"{name:<10} {mode:<10} {tp:>8.3f}s {ts:>8.3f}s {tp / ts:>6.1f}x {rp / 1024:>7.1f}MB {rs / 1024:>10.1f}MB"
              f" {t0:>6.3f}s {r0 / 1024:>6.1f}MB  "
              f"{'identical' if same else 'DIFFERENT'}{'' if met else '  (goal missed)'}")
    if baselines:
        print(f"\nagainst the baseline {run.BINARIES['baseline']} (same rounds; > 1: pstitch is faster):")
        print(f"{'recording':<10} {'mode':<10} {'baseline':>9} {'pstitch':>9} {'ratio':>7} {'base RSS':>9} {'pstitch RSS':>12}")
        for name, mode, tb, ts, ratio, rb, rs in baselines:
            print(f"{name:<10} {mode:<10} {tb:>8.3f}s {ts:>8.3f}s {ratio:>6.2f}x {rb / 1024:>7.1f}MB {rs / 1024:>10.1f}MB")
    print(f"\ngoal: default mode >= {TARGET:.0f}x perf 7.2's speed, peak RSS <= perf's (medians), identical output")
    print("all goals met" if ok else "SOME GOALS MISSED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
