# pywork: a short run of Debian's python3 (the interpreter is built without frame
# pointers), recorded with `perf record --call-graph dwarf` (issue 25). The
# interpreter's C frames (_PyEval_EvalFrameDefault, call dispatch, dict and
# unicode code, the _sre regex engine) are unwound with python3.11's .eh_frame.
#
# Usage: python3 pywork.py [SCALE]   (percent of the default amount of work)
import re
import sys

scale = int(sys.argv[1]) if len(sys.argv) > 1 else 100


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def words(n):
    pat = re.compile(r"(\w+)-(\d+)")
    text = " ".join(f"w{i % 97}-{i}" for i in range(n))
    counts = {}
    for m in pat.finditer(text):
        counts[m.group(1)] = counts.get(m.group(1), 0) + int(m.group(2)) % 7
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


total = 0
for _ in range(max(1, 3 * scale // 100)):
    total += fib(20)
    total += len(words(20000))
print("pywork done", total % 256)
