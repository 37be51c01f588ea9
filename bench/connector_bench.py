#!/usr/bin/python3
"""Per-call figures of the connector calls from Python (issue 24;
bench/RESULTS.md, "Connector calls"): a trivial call (count_leading_stored of
no key) and exists of 64 keys whose first key misses, given as a (64, 16)
uint8 array and as a list of 64 bytes; each the median of 7 timeit runs.

    PYTHONPATH=build/bindings/python:bindings/python /usr/bin/python3 bench/connector_bench.py
"""

import statistics
import tempfile
import timeit

import numpy as np

import auxstore


def per_call(fn, calls):
    runs = timeit.repeat(fn, number=calls, repeat=7)
    per = sorted(r / calls for r in runs)
    return statistics.median(per), per[0], per[-1]


def row(what, spread, scale, unit):
    m, lo, hi = (x * scale for x in spread)
    print(f"| {what} | {m:.2f} [{lo:.2f}, {hi:.2f}] {unit} |")


def main():
    with tempfile.TemporaryDirectory() as d, auxstore.Store(d + "/store") as store:
        ns = store.register_namespace("connector-bench", auxstore.Geometry())
        keys = np.array([[i + 1] * 16 for i in range(64)], dtype=np.uint8)
        for k in keys[1:]:
            store.put(ns, k.tobytes(), 64, [(0, "opaque", bytes(256))])
        as_list = [k.tobytes() for k in keys]
        assert store.count_leading_stored(ns, keys) == 0
        row("trivial call from Python (count_leading_stored of 0 keys)",
            per_call(lambda: store.count_leading_stored(ns, []), 100_000), 1e9, "ns")
        row("exists of 64 keys from Python, first-key miss, (64, 16) uint8 array",
            per_call(lambda: store.count_leading_stored(ns, keys), 20_000), 1e6, "us")
        row("exists of 64 keys from Python, first-key miss, list of 64 bytes",
            per_call(lambda: store.count_leading_stored(ns, as_list), 20_000), 1e6, "us")


if __name__ == "__main__":
    main()
