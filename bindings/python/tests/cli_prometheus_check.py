#!/usr/bin/env python3
"""ctest python_cli_prometheus_test: `auxstore stats PATH --prometheus -` on a
store the Python module filled, parsed with prometheus_client's own parser.

    cli_prometheus_check.py AUXSTORE_CLI
"""

import os
import subprocess
import sys
import tempfile

from prometheus_client.parser import text_string_to_metric_families

import auxstore

STORE_FAMILIES = {
    "auxstore_snapshots": "gauge", "auxstore_payload_bytes": "gauge",
    "auxstore_capacity_bytes": "gauge", "auxstore_lookups": "counter",
    "auxstore_puts": "counter", "auxstore_duplicate_puts": "counter",
    "auxstore_written_bytes": "counter", "auxstore_read_bytes": "counter",
    "auxstore_evictions": "counter", "auxstore_expirations": "counter",
    "auxstore_quarantines": "counter", "auxstore_orphans_removed": "counter",
    "auxstore_commit_seq": "gauge", "auxstore_durable_watermark": "gauge",
    "auxstore_lost_commits_at_open": "gauge", "auxstore_leases": "gauge",
    "auxstore_fenced": "gauge", "auxstore_index_ready": "gauge",
}


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    cli = argv[1]
    with tempfile.TemporaryDirectory(prefix="auxstore-cli-prom-") as d:
        path = os.path.join(d, 'store "one"')  # a label value that needs escaping
        with auxstore.Store(path) as s:
            ns = s.register_namespace("cli-model")
            for i in range(5):
                s.put(ns, bytes([i]) * 16, 16, [(0, "opaque", bytes(1000 + i))])
        out = subprocess.run([cli, "stats", path, "--prometheus", "-"], check=True,
                             capture_output=True, text=True).stdout
        parsed = list(text_string_to_metric_families(out))
        families = {f.name: f for f in parsed}
        problems = []
        if len(families) != len(parsed):  # two TYPE lines naming one family
            names = [f.name for f in parsed]
            problems.append("clashing families: %s"
                            % sorted({n for n in names if names.count(n) > 1}))
        for name, typ in STORE_FAMILIES.items():
            if name not in families:
                problems.append("missing %s" % name)
            elif families[name].type != typ:
                problems.append("%s is %s, want %s" % (name, families[name].type, typ))
        for fam in families.values():
            for sample in fam.samples:
                if sample.labels.get("store") != path:
                    problems.append("%s labels %r" % (sample.name, sample.labels))

        def value(name, **labels):
            for sample in families[name].samples:
                if all(sample.labels.get(k) == v for k, v in labels.items()):
                    return sample.value
            return None

        if value("auxstore_snapshots") != 5:
            problems.append("auxstore_snapshots is %r, want 5" % value("auxstore_snapshots"))
        want_bytes = sum(1000 + i for i in range(5))
        if value("auxstore_payload_bytes") != want_bytes:
            problems.append("auxstore_payload_bytes is %r, want %d"
                            % (value("auxstore_payload_bytes"), want_bytes))
        if value("auxstore_commit_seq") is None or value("auxstore_commit_seq") < 5:
            problems.append("auxstore_commit_seq is %r" % value("auxstore_commit_seq"))
        if problems:
            print("\n".join(problems), file=sys.stderr)
            print(out, file=sys.stderr)
            return 1
    print("cli_prometheus_check: %d families parsed, values match" % len(families))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
