#!/usr/bin/env python3
"""pstitch benchmark: speed and memory against perf 7.2 (perf-ref), measured
in the same run on the same machine.

    sudo bench/run.py [--runs 3] [--seconds 20] [--freq 20000] [--workdir DIR] [--rerecord] [--no-pgo]
                      [--only no-inline,inline,lagging,dwarf]

1. Prepares (once, cached in --workdir; --rerecord redoes it):
   - a large real recording: `perf record -a -g -F <freq>` over a mixed
     workload (the C, C++ and Rust programs from tests/workloads in loops,
     plus compression and file-system work) for <seconds> seconds;
   - its deferred form (pstitch-defer) and a variant whose deferred records
     lag ~20000 records behind their samples (pstitch-defer --delay-records);
   - a `--call-graph dwarf` recording (issue 25) of the programs without
     frame pointers (C, C++, Rust, libc-heavy, Debian's python3) in loops:
     `perf record --call-graph dwarf -F 12500` for 24 s, about 100,000
     samples and 850 MB (each sample carries an 8 KiB stack copy), unwound
     by perf through libdw and by pstitch in process.
2. Builds pstitch twice: `cargo build --release`, and the profile-guided
   release build of bench/pgo-build.sh (trained on the golden tests'
   recordings, never on the benchmark's), which is the one the targets are
   checked against (--no-pgo: the cargo build instead).
3. Runs perf-ref and both pstitch builds in turn, <runs> times each (each
   run after a rest of SETTLE seconds; each build with a cache directory of
   its own in --workdir, filled by an untimed run first; each case's
   recording first dropped from the page cache and read back once, see
   `warm`), on:
   - the recording with --no-inline,
   - the recording with inline frames (the default),
   - the lagging deferred variant with --no-inline,
   - the same deferred variant without lag (pstitch only: the 1.5x lag budget),
   - the dwarf recording (default output: unwound, inline frames),
   and prints median wall time, the perf/pstitch ratio and peak RSS, and
   pstitch's CPU time per case against the wall time each target allows
   (a run cannot take less wall time than its CPU time over the cores);
   then `pstitch inject` on the deferred variant (to a file in --workdir)
   against `pstitch script --no-inline` on it (budget: no slower), and
   inject from a pipe-mode copy of it on standard input (its peak RSS).
4. Checks that all three printed the same output (hashes; for deferred input
   the comm of sample lines is left out of the comparison, since pstitch
   deliberately prints the comm a thread had when the sample was taken —
   see man/pstitch-script.1, COMPATIBILITY).

Needs root (perf record -a, perf-ref's chroot), /usr/bin/perf, perf-ref
(/work/shared/reference-perf/setup.sh), cargo.
"""

import argparse
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERF_REF = os.environ.get("PERF_REF", "/work/shared/reference-perf/perf-ref")
BIN = "/tmp/pstitch-fixtures/bin"
TARGETS = {"no-inline": 10.0, "inline": 20.0, "lagging": 50.0, "dwarf": 30.0}
# The comm at the start of a sample line: up to the tid before " [cpu]".
SAMPLE_HEAD = re.compile(rb"^(.*?)\s+\d+(?:/\d+)?\s+\[")


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), check=True, **kw)


def prepare(args):
    wd = args.workdir
    os.makedirs(wd, exist_ok=True)
    sh(["cargo", "build", "--release", "--quiet", "--bins"], cwd=ROOT)
    big = os.path.join(wd, "big.data")
    if args.rerecord or not os.path.exists(big):
        sh([os.path.join(ROOT, "tests/workloads/build.sh")], stdout=subprocess.DEVNULL)
        secs = args.seconds
        # A mixed workload: our three programs in loops on both CPUs, plus
        # kernel-heavy work (compression through a pipe, file system walks).
        workload = (
            f"timeout {secs} sh -c 'while :; do {BIN}/cwork 60 >/dev/null; done' & "
            f"timeout {secs} sh -c 'while :; do {BIN}/cppwork >/dev/null; done' & "
            f"timeout {secs} sh -c 'while :; do {BIN}/rustwork >/dev/null; done' & "
            f"timeout {secs} sh -c 'while :; do head -c 20000000 /dev/urandom | gzip -1 >/dev/null; done' & "
            f"timeout {secs} sh -c 'while :; do find /usr/lib -name \"*.so*\" >/dev/null 2>&1; done' & "
            "wait"
        )
        sh(["perf", "record", "-q", "-a", "-g", "-F", str(args.freq), "-o", "big.data", "--", "sh", "-c", workload],
           cwd=wd, stderr=subprocess.DEVNULL)
    defer = os.path.join(ROOT, "target/release/pstitch-defer")
    deferred = os.path.join(wd, "deferred.data")
    lagging = os.path.join(wd, "lagging.data")
    if args.rerecord or not os.path.exists(lagging):
        sh([defer, big, deferred])
        sh([defer, "--delay-records", "20000", big, lagging])
    dwarf = os.path.join(wd, "dwarf.data")
    if args.rerecord or not os.path.exists(dwarf):
        sh([os.path.join(ROOT, "tests/workloads/build.sh")], stdout=subprocess.DEVNULL)
        secs = 24
        # The programs built without frame pointers, each in a loop: user
        # stacks through the programs, libc, libstdc++, libm and libpython.
        loops = [f"{BIN}/dwarfwork 800", f"{BIN}/cppdwarf 1200", f"{BIN}/rustdwarf 4000",
                 f"{BIN}/libcwork 1800", f"python3 {BIN}/pywork.py 2400"]
        workload = " ".join(f"timeout {secs} sh -c 'while :; do {cmd} >/dev/null; done' &" for cmd in loops) + " wait"
        # 16 MiB ring buffers: 8 KiB per sample overflows the default ones.
        sh(["perf", "record", "-q", "-m", "16M", "-e", "cpu-clock", "-F", "12500", "--call-graph", "dwarf",
            "-o", "dwarf.data", "--", "sh", "-c", workload], cwd=wd, stderr=subprocess.DEVNULL)
    return big, deferred, lagging, dwarf


def count_samples(path):
    out = subprocess.run([os.path.join(ROOT, "target/release/pstitch"), "script", "-i", path, "-F", "tid", "-G"],
                         check=True, capture_output=True).stdout
    return out.count(b"\n")


# The pstitch builds measured: "pstitch" (checked against the targets) and
# "cargo" (`cargo build --release`, shown beside it); set in main.
BINARIES = {}


# Where each pstitch build keeps its cache (set in main). One directory per
# build: builds of different versions may write different cache formats, and
# sharing a directory, each run would find the other build's files, ignore
# them and decode afresh.
CACHE_ROOT = None


def tool_cmd(tool, path, extra):
    if tool == "perf":
        return [PERF_REF, "script", "-i", path] + extra
    return ["env", f"XDG_CACHE_HOME={os.path.join(CACHE_ROOT, tool)}", BINARIES[tool], "script", "-i", path,
            "--symfs=/", "--kallsyms=/proc/kallsyms"] + extra


# The environment of every run, perf's and pstitch's (as perf-ref runs).
ENV = dict(os.environ, PERF_BUILDID_DIR="/nonexistent")


# Seconds of rest before each timed run. On the 2-vCPU VM this was built
# on, a program started right after a 14 s CPU-bound run (perf's, or a shell
# loop's) took 5-15% longer than the same program started a few seconds
# later; alternating the two tools would hand that penalty to whichever
# runs second. Every run, perf's and pstitch's, starts after the same rest.
SETTLE = 3.0


def timed(cmd, stdin=None):
    """Wall seconds and peak RSS (KiB) of one run, output discarded;
    `stdin`: a file to read standard input from."""
    wall, rss, _ = timed_cpu(cmd, stdin)
    return wall, rss


def timed_cpu(cmd, stdin=None):
    """`timed`, and the CPU seconds (user + system) the run took."""
    time.sleep(SETTLE)
    src = open(stdin, "rb") if stdin else subprocess.DEVNULL
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=src, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    if stdin:
        src.close()
    # wait4 gives the child's peak RSS (and its waited-for descendants',
    # as in perf-ref's chroot) as GNU time does, without a process between.
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, cmd)
    return wall, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def warm(path):
    """Puts `path` in the page cache as a first read from disk does, so
    that no timed run, perf's or pstitch's, is the one that reads the
    recording from disk, and every case starts from the same state: the
    file's cached pages are dropped (POSIX_FADV_DONTNEED), then it is read
    once. How the cache holds a file decides a large part of both
    programs' time: as writing leaves a file (4 KiB pages), mapping the
    2.7 GB dwarf recording costs pstitch about 0.3 s more system time than
    when it was read back (mostly 2 MiB folios); the VM the benchmark was
    last run on also split large folios and dropped files from the cache
    on its own (DAMON). The state is printed with each case
    (`FileHugePages`)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


def file_huge_pages():
    """The page cache's files held in 2 MiB folios (/proc/meminfo), in MB."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("FileHugePages:"):
                return int(line.split()[1]) / 1024
    return None


def output_hash(cmd, drop_comm):
    """SHA-256 of a run's output (sample-line comms dropped if asked)."""
    h = hashlib.sha256()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)
    for line in p.stdout:
        if drop_comm and line[:1] not in (b"\t", b"\n", b" "):
            # Everything before the tid: a comm may hold spaces.
            m = SAMPLE_HEAD.match(line)
            if m:
                line = line[m.end(1):]
        h.update(line)
    p.wait()
    return h.hexdigest()


def inject_line(args, deferred):
    """`pstitch inject` on the deferred recording against `pstitch script
    --no-inline` on it, in turn, <runs> times: the budget is no slower.
    Also inject from a pipe-mode copy of it on standard input (a stream: its
    peak RSS is memory the process holds, where a mapped file's pages count
    once touched)."""
    out = os.path.join(args.workdir, "injected.data")
    # The deferred recording as a stream: the original in pipe mode (inject
    # passes a recording without deferred callchains through), deferred.
    stream = os.path.join(args.workdir, "deferred.pipe")
    if not os.path.exists(stream):
        big_pipe = os.path.join(args.workdir, "big.pipe")
        sh(f"{BINARIES['cargo']} inject -i {os.path.join(args.workdir, 'big.data')} -o - > {big_pipe}")
        sh([os.path.join(ROOT, "target/release/pstitch-defer"), big_pipe, stream])
        os.remove(big_pipe)
    commands = {
        "script --no-inline": (tool_cmd("pstitch", deferred, ["--no-inline"]), None),
        "inject": ([BINARIES["pstitch"], "inject", "-i", deferred, "-o", out], None),
        "inject from a stream": ([BINARIES["pstitch"], "inject", "-i", "-", "-o", out], stream),
    }
    times = {k: [] for k in commands}
    rss = {k: [] for k in commands}
    cpu = {k: [] for k in commands}
    for _ in range(args.runs):
        for k, (cmd, stdin) in commands.items():
            w, r, c = timed_cpu(cmd, stdin)
            times[k].append(w)
            rss[k].append(r)
            cpu[k].append(c)
    ts, ti = statistics.median(times["script --no-inline"]), statistics.median(times["inject"])
    met = ti <= ts
    print(f"\npstitch inject on {os.path.basename(deferred)} ({os.path.getsize(out) / 1e6:.0f} MB written): {ti:.2f} s, "
          f"{max(rss['inject']) / 1024:.0f} MB RSS; pstitch script --no-inline on it: {ts:.2f} s, "
          f"{max(rss['script --no-inline']) / 1024:.0f} MB RSS ({ts / ti:.2f}x; budget: no slower)"
          + ("" if met else "  (budget missed)"))
    print(f"CPU time (user + system), medians: inject {statistics.median(cpu['inject']):.2f} s, "
          f"script --no-inline {statistics.median(cpu['script --no-inline']):.2f} s")
    tp = statistics.median(times["inject from a stream"])
    print(f"pstitch inject from a stream ({os.path.getsize(stream) / 1e6:.0f} MB on standard input): {tp:.2f} s, "
          f"{max(rss['inject from a stream']) / 1024:.0f} MB RSS")
    return met


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--freq", type=int, default=20000)
    ap.add_argument("--workdir", default="/tmp/pstitch-bench")
    ap.add_argument("--rerecord", action="store_true")
    ap.add_argument("--only", help="comma-separated subset of: no-inline,inline,lagging,inject,dwarf")
    ap.add_argument("--no-pgo", action="store_true", help="measure the cargo build alone")
    ap.add_argument("--baseline", help="another pstitch binary (an earlier build) to time in the same runs and compare")
    args = ap.parse_args()
    if not os.path.exists(PERF_REF):
        sys.exit(f"bench: {PERF_REF} is missing")
    cargo_build = os.path.join(ROOT, "target/release/pstitch")
    BINARIES["cargo"] = cargo_build
    BINARIES["pstitch"] = cargo_build

    big, deferred, lagging, dwarf = prepare(args)
    global CACHE_ROOT
    CACHE_ROOT = os.path.join(args.workdir, "cache")
    if not args.no_pgo:
        BINARIES["pstitch"] = subprocess.run([os.path.join(ROOT, "bench/pgo-build.sh")], check=True,
                                             capture_output=True, text=True).stdout.strip()
    tools = ("perf", "pstitch", "cargo") if not args.no_pgo else ("perf", "pstitch")
    if args.baseline:
        BINARIES["baseline"] = os.path.abspath(args.baseline)
        tools = tools + ("baseline",)
    n = count_samples(big)
    print(f"recording: {big}: {n} samples, {os.path.getsize(big) / 1e6:.0f} MB; "
          f"deferred variants: {os.path.basename(deferred)}, {os.path.basename(lagging)} (records lag 20000 behind)")
    print(f"dwarf recording: {dwarf}: {count_samples(dwarf)} samples, {os.path.getsize(dwarf) / 1e6:.0f} MB")

    cases = [("no-inline", big, ["--no-inline"], False), ("inline", big, [], False),
             ("lagging", lagging, ["--no-inline"], True), ("dwarf", dwarf, [], False)]
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in cases if c[0] in keep]
    rows, ok, baselines, cpus, huge = [], True, [], {}, {}
    for name, path, extra, deviates in cases:
        times = {t: [] for t in tools}
        rss = {t: [] for t in tools}
        cpu = {t: [] for t in tools}
        warm(path)
        huge_before = file_huge_pages()
        # Every timed run of a build finds the cache its first run leaves.
        for tool in tools:
            if tool != "perf":
                subprocess.run(tool_cmd(tool, path, extra), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV,
                               check=True)
        for _ in range(args.runs):
            for tool in tools:
                w, r, c = timed_cpu(tool_cmd(tool, path, extra))
                times[tool].append(w)
                rss[tool].append(r)
                cpu[tool].append(c)
        hashes = {output_hash(tool_cmd(t, path, extra), deviates) for t in tools}
        same = len(hashes) == 1
        ok &= same
        cargo = (statistics.median(times["cargo"]), max(rss["cargo"])) if "cargo" in tools else None
        if "baseline" in tools:
            # Paired: each round's baseline time against the same round's pstitch time.
            pairs = [b / p for b, p in zip(times["baseline"], times["pstitch"])]
            baselines.append((name, statistics.median(times["baseline"]), statistics.median(times["pstitch"]),
                              statistics.median(pairs), max(rss["baseline"]), max(rss["pstitch"])))
        rows.append((name, statistics.median(times["perf"]), statistics.median(times["pstitch"]),
                     max(rss["perf"]), max(rss["pstitch"]), same, cargo))
        cpus[name] = statistics.median(cpu["pstitch"])
        huge[name] = (huge_before, file_huge_pages())

    # The lag budget: pstitch on the lagging file vs the same file without lag.
    lag_budget = None
    if not args.only or "lagging" in args.only:
        plain = [timed(tool_cmd("pstitch", deferred, ["--no-inline"]))[0] for _ in range(args.runs)]
        lagged = [r[2] for r in rows if r[0] == "lagging"][0]
        lag_budget = lagged / statistics.median(plain)

    print()
    print("pstitch: " + ("the profile-guided build (bench/pgo-build.sh)" if not args.no_pgo else "the cargo build")
          + f", {BINARIES['pstitch']}")
    print(f"{'case':<10} {'perf 7.2':>10} {'pstitch':>10} {'ratio':>8} {'target':>7} {'perf RSS':>10} {'pstitch RSS':>12}  output")
    for name, tp, ts, rp, rs, same, _ in rows:
        ratio = tp / ts
        target = TARGETS[name]
        met = ratio >= target and rs <= rp
        ok &= met
        print(f"{name:<10} {tp:>9.2f}s {ts:>9.2f}s {ratio:>7.1f}x {target:>6.0f}x {rp / 1024:>8.0f}MB {rs / 1024:>10.0f}MB  "
              f"{'identical' if same else 'DIFFERENT'}{'' if met else '  (target missed)'}")
    # What the machine allows: a run cannot take less wall time than its
    # CPU time spread over every core.
    cores = os.cpu_count() or 1
    print(f"\npstitch's CPU time (user + system, medians), and the least wall time it allows on {cores} cores:")
    for name, tp, *_ in rows:
        print(f"{name:<10} {cpus[name]:>9.2f}s  >= {cpus[name] / cores:.2f} s of wall time "
              f"(the {TARGETS[name]:.0f}x target allows {tp / TARGETS[name]:.2f} s)")
    print("\nthe page cache's files in 2 MiB folios (FileHugePages), after warming each case's recording / after its runs:")
    for name, *_ in rows:
        before, after = huge[name]
        print(f"{name:<10} {before:>7.0f} MB / {after:.0f} MB")
    if not args.no_pgo:
        print("\nthe cargo build (`cargo build --release`), same runs, for comparison (not checked):")
        for name, tp, _, _, _, _, (tc, rc) in rows:
            print(f"{name:<10} {tp:>9.2f}s {tc:>9.2f}s {tp / tc:>7.1f}x {'':>7} {'':>10} {rc / 1024:>10.0f}MB")
    if baselines:
        print(f"\nagainst the baseline {BINARIES['baseline']} (same runs; > 1: pstitch is faster):")
        print(f"{'case':<10} {'baseline':>10} {'pstitch':>10} {'ratio':>8} {'base RSS':>10} {'pstitch RSS':>12}")
        for name, tb, tp, ratio, rb, rp in baselines:
            print(f"{name:<10} {tb:>9.2f}s {tp:>9.2f}s {ratio:>7.3f}x {rb / 1024:>8.0f}MB {rp / 1024:>10.0f}MB")
    if lag_budget is not None:
        print(f"\npstitch on the lagging variant takes {lag_budget:.2f}x the time of the same file without lag (budget 1.5x)")
        ok &= lag_budget <= 1.5
    if not args.only or "inject" in args.only:
        ok &= inject_line(args, deferred)
    print("\nall targets met" if ok else "\nSOME TARGETS MISSED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
