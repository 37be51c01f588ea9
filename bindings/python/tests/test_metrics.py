"""The prometheus_client collector, checked with prometheus_client's own parser."""

import pytest

prometheus_client = pytest.importorskip(
    "prometheus_client", reason="apt-get install python3-prometheus-client")
from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

import auxstore  # noqa: E402
from conftest import GEOMETRY, prefix, random_bytes  # noqa: E402

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
PIPELINE_FAMILIES = {
    "auxstore_restores": "counter", "auxstore_restores_cancelled": "counter",
    "auxstore_restores_running": "gauge", "auxstore_restored_bytes": "counter",
    "auxstore_write_behind_snapshots": "counter", "auxstore_snapshotted_bytes": "counter",
    "auxstore_staging_waits": "counter", "auxstore_restore_latency_seconds": "histogram",
    "auxstore_restore_throughput_bytes_per_second": "histogram",
}


def samples(text):
    """{(sample name, frozenset(labels)): value} of an exposition, parsed."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def scrape(registry):
    return generate_latest(registry).decode()


def test_collector_in_the_engines_registry(store, ns, backend, weights):
    for i in range(3):
        store.put(ns, prefix(i), 16, [(2, "opaque", random_bytes(1000, i))])
    store.longest_prefix(ns, [prefix(0)])
    store.longest_prefix(ns, [prefix(9)])
    with auxstore.Pipeline(store, backend, staging_bytes=64 * 1024) as p:
        for i in range(2):
            with backend.opaque_state(1000) as t:
                p.restore_wait(ns, prefix(i), {2: t})
        registry = CollectorRegistry()
        registry.register(auxstore.Collector(store, pipeline=p,
                                             labels={"instance": 'engine "0"\\a'}))
        text = scrape(registry)
        families = {}
        for fam in text_string_to_metric_families(text):
            families.setdefault(fam.name, set()).add(fam.type)
        for name, typ in list(STORE_FAMILIES.items()) + list(PIPELINE_FAMILIES.items()):
            assert typ in families.get(name, set()), (name, typ, families.get(name))
        got = samples(text)
        inst = ("instance", 'engine "0"\\a')  # escaped on the way out, unescaped by the parser
        st, ps = store.stats(), p.stats()
        assert got[("auxstore_snapshots", frozenset([inst]))] == st.snapshots == 3
        assert got[("auxstore_payload_bytes", frozenset([inst]))] == 3000
        assert got[("auxstore_puts_total", frozenset([inst]))] == 3
        assert got[("auxstore_lookups_total", frozenset([inst, ("result", "hit")]))] == st.hits
        assert got[("auxstore_lookups_total", frozenset([inst, ("result", "miss")]))] == st.misses
        assert got[("auxstore_index_ready", frozenset([inst]))] == 1
        assert got[("auxstore_restores_total", frozenset([inst, ("result", "ok")]))] == 2
        assert got[("auxstore_restored_bytes_total", frozenset([inst]))] == ps.bytes_restored
        assert got[("auxstore_restore_latency_seconds_count", frozenset([inst]))] == 2
        assert got[("auxstore_restore_latency_seconds_bucket",
                    frozenset([inst, ("le", "+Inf")]))] == 2
        assert got[("auxstore_restore_latency_seconds_sum", frozenset([inst]))] == pytest.approx(
            ps.restore_latency_us_sum * 1e-6)
        assert got[("auxstore_restore_throughput_bytes_per_second_count",
                    frozenset([inst]))] == 2
        # Histogram buckets are cumulative and end at the count.
        buckets = sorted((float(dict(k[1])["le"]), v) for k, v in got.items()
                         if k[0] == "auxstore_restore_latency_seconds_bucket")
        assert [v for _, v in buckets] == sorted(v for _, v in buckets)
        assert len(buckets) == auxstore.LATENCY_BUCKETS
        assert got[("auxstore_write_behind_snapshots_total",
                    frozenset([inst, ("result", "shed")]))] == ps.snapshots_shed
    # The pipeline closed: the store's metrics only; then nothing once closed.
    text = scrape(registry)
    assert "auxstore_restores_total" not in text and "auxstore_snapshots{" in text
    store.close()
    assert "auxstore_" not in scrape(registry)


def test_metrics_text_matches_the_c_exposition(store, ns):
    store.put(ns, prefix(1), 1, [(2, "opaque", b"abc")])
    raw = store.metrics_text(labels={"a": "b"})
    assert raw == auxstore.metrics_text(store, None, 'a="b"')
    c = auxstore.Collector(store, labels={"a": "b"})
    assert c.text() == raw
    assert samples(raw) == {k: v for fam in c.collect() for k, v in
                            (((s.name, frozenset(s.labels.items())), s.value)
                             for s in fam.samples)}
    assert "auxstore_snapshots{a=\"b\"} 1" in raw


def test_collector_arguments(store):
    with pytest.raises(ValueError):
        auxstore.Collector()
    with pytest.raises(TypeError, match="store"):
        auxstore.Collector(store).add("not a store")
    with pytest.raises(ValueError, match="NUL"):
        auxstore.Collector(store, labels={"a": "b\0c"})
    with pytest.raises(ValueError, match="label name"):
        auxstore.Collector(store, labels={"bad-name": "x"})
    with pytest.raises(TypeError):
        auxstore.Collector("not a store")
    with pytest.raises(ValueError, match="label name"):
        store.metrics_text(labels={"0x": "y"})


def family_names(text):
    """The family names of a 0.0.4 exposition, as OpenMetrics and
    prometheus_client see them (a counter's without its _total)."""
    names = []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ")
            if typ == "counter" and name.endswith("_total"):
                name = name[:-len("_total")]
            names.append(name)
    return names


def test_c_exposition_has_no_clashing_families(store, ns, pipeline):
    # Store gauge auxstore_snapshots and the pipeline's write-behind counter
    # were both the family "auxstore_snapshots".
    names = family_names(auxstore.metrics_text(store, pipeline))
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert "auxstore_snapshots" in names and "auxstore_write_behind_snapshots" in names


def test_register_and_unregister_cleanly(store, ns, pipeline):
    # An auto-describing registry (as prometheus_client.REGISTRY is).
    registry = CollectorRegistry(auto_describe=True)
    c = auxstore.Collector(store, pipeline=pipeline)
    registry.register(c)
    registry.unregister(c)  # raised KeyError and left half the names behind
    registry.register(auxstore.Collector(store, pipeline=pipeline))
    assert scrape(registry).count("# TYPE auxstore_snapshots gauge") == 1


def test_several_stores_in_one_registry(tmp_path, backend):
    from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
    from prometheus_client.openmetrics.parser import (
        text_string_to_metric_families as openmetrics_families)
    paths = [str(tmp_path / "a"), str(tmp_path / 'b "2"')]
    with auxstore.Store(paths[0]) as a, auxstore.Store(paths[1]) as b, \
            auxstore.Pipeline(a, backend) as pa:
        for i, s in enumerate((a, b)):
            ns_i = s.register_namespace("m")
            for k in range(i + 1):
                s.put(ns_i, prefix(k), 1, [(2, "opaque", b"xyz")])
        collector = auxstore.Collector(a, pipeline=pa).add(b)
        assert collector.labels == {"store": paths[0]}
        with pytest.raises(ValueError, match="already"):
            collector.add(b)  # the same labels twice could not be told apart
        registry = CollectorRegistry()
        registry.register(collector)
        # Another collector exposing the same families is refused, not duplicated.
        with pytest.raises(ValueError, match="Duplicated"):
            registry.register(auxstore.Collector(b, labels={"store": "other"}))
        text = scrape(registry)
        names = family_names(text)
        assert len(names) == len(set(names)), text
        got = samples(text)
        for i, path in enumerate(paths):
            assert got[("auxstore_snapshots", frozenset([("store", path)]))] == i + 1
            assert got[("auxstore_puts_total", frozenset([("store", path)]))] == i + 1
        assert ("auxstore_restores_running", frozenset([("store", paths[0])])) in got
        assert ("auxstore_restores_running", frozenset([("store", paths[1])])) not in got
        # OpenMetrics: prometheus_client's strict parser takes its own output.
        om = openmetrics_latest(registry).decode()
        fams = list(openmetrics_families(om))
        assert len({f.name for f in fams}) == len(fams)
        snap = next(f for f in fams if f.name == "auxstore_snapshots")
        assert sorted(s.labels["store"] for s in snap.samples) == sorted(paths)
        wb = next(f for f in fams if f.name == "auxstore_write_behind_snapshots")
        assert wb.type == "counter"
