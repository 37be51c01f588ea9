#!/usr/bin/python3
"""Instructions per restored byte under callgrind (issue 25).

Runs `auxstore_bench --instructions` under valgrind's callgrind, which
counts instructions in a VM without hardware counters, and prints the table
from the dumps the bench asks for at the end of each region (their names
are "workload | region | bytes"). Every thread's instructions are counted.

  bench/instructions_callgrind.py [--bench build/bench/auxstore_bench] \
      [-- bench args, default: --bytes 67108864 --runs 1]
"""
import argparse
import collections
import glob
import os
import statistics
import subprocess
import sys
import tempfile


def self_costs(path):
    """{function: instructions in it, callees excluded} of one dump."""
    names, costs, fn, after_calls = {}, collections.Counter(), None, False
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith(("fn=", "cfn=")):
                ref, _, name = line.split("=", 1)[1].partition(" ")
                if name:
                    names[ref] = name
                if line.startswith("fn="):
                    fn = ref
            elif line.startswith("calls="):
                after_calls = True  # the next cost line is the call's inclusive cost
            elif line[:1].isdigit() or line[:1] in "+-*":
                if after_calls:
                    after_calls = False
                elif fn and len(line.split()) >= 2:
                    costs[fn] += int(line.split()[1])
    return collections.Counter({names.get(k, k): v for k, v in costs.items()})


def read_dumps(out_dir):
    """{(workload, region): [(instructions, bytes)]} from callgrind's dumps."""
    found = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(out_dir, "cg.out*"))):
        trigger, total = None, None
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("desc: Trigger: Client Request: "):
                    trigger = line[len("desc: Trigger: Client Request: "):].strip()
                elif line.startswith("summary:") or line.startswith("totals:"):
                    total = int(line.split()[1])
        if trigger and total is not None and trigger.count(" | ") == 2:
            workload, region, nbytes = trigger.split(" | ")
            found[(workload, region)].append((total, int(nbytes), path))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default="build/bench/auxstore_bench")
    ap.add_argument("--top", type=int, default=0,
                    help="also list each region's N costliest functions")
    ap.add_argument("--keep", help="keep the callgrind dumps in this directory")
    ap.add_argument("bench_args", nargs="*", default=["--bytes", "67108864", "--runs", "1"])
    a = ap.parse_args()
    out_dir = a.keep or tempfile.mkdtemp(prefix="auxstore-cg-")
    os.makedirs(out_dir, exist_ok=True)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out_dir + "/cg.out",
           a.bench, "--instructions", "--dir", out_dir + "/bench"] + a.bench_args
    print("$ " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    found = read_dumps(out_dir)
    if not found:
        sys.exit("no region dumps in " + out_dir)
    workloads = list(dict.fromkeys(w for w, _ in found))
    for w in workloads:
        per_byte = {r: statistics.median(i / b for i, b, _ in v)
                    for (wl, r), v in found.items() if wl == w}
        base = per_byte.get("memcpy")
        print("\n## %s (callgrind, every thread, user space)\n" % w)
        print("| region | instructions / byte | x memcpy |\n| --- | --- | --- |")
        for r, v in per_byte.items():
            print("| %s | %.4f | %s |" % (r, v, "%.2f" % (v / base) if base else "-"))
        for r in per_byte if a.top else []:
            total, nbytes, path = found[(w, r)][-1]
            print("\n%s, costliest functions (instructions / byte, share):" % r)
            for name, ir in self_costs(path).most_common(a.top):
                print("  %.4f  %4.1f%%  %s" % (ir / nbytes, 100.0 * ir / total, name[:100]))
    if not a.keep:
        subprocess.run(["rm", "-rf", out_dir])


if __name__ == "__main__":
    main()
