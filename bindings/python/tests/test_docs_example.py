"""docs/python.md's Python blocks run as written: the complete example, and
the metrics, log-hook and paged-put snippets with the `store`, `pipeline`,
`path` (...) they name."""

import os
import re

import numpy as np
import pytest

import auxstore
from conftest import HD, RATIO, bf16

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "python.md")


def blocks():
    if not os.path.exists(DOC):
        pytest.skip("docs/python.md is not next to this tree")
    with open(DOC, encoding="utf-8") as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def block_with(*needles):
    found = [b for b in blocks() if all(n in b for n in needles)]
    assert len(found) == 1, "docs/python.md: %d python blocks contain %r" % (len(found), needles)
    return found[0]


def run(code, **names):
    """Runs a block; returns the names it left (its globals)."""
    env = {"__name__": "__doc_example__", **names}
    exec(compile(code, "docs/python.md", "exec"), env)
    return env


def test_every_python_block_is_run_here():
    # A new block in docs/python.md needs a test below.
    assert len(blocks()) == 4


def test_the_example_in_docs_python_md_runs(capsys):
    run(block_with("import auxstore", "restore_start"))
    assert "snapshots;" in capsys.readouterr().out


def test_the_metrics_snippet_runs(store, ns, pipeline):
    pytest.importorskip("prometheus_client", reason="python3-prometheus-client is not installed")
    from prometheus_client.parser import text_string_to_metric_families

    store.put(ns, b"\x01" * 16, 1, [(2, "opaque", b"abc")])
    names = {}
    # The snippet as written, then its registry scraped once more and parsed.
    code = block_with("CollectorRegistry", "generate_latest")
    code += "\nnames['text'] = generate_latest(registry).decode()\n"
    run(code, auxstore=auxstore, store=store, pipeline=pipeline, names=names)
    families = {f.name: f for f in text_string_to_metric_families(names["text"])}
    assert families["auxstore_payload_bytes"].samples[0].value == 3
    assert families["auxstore_payload_bytes"].samples[0].labels == {"instance": "e0"}
    assert families["auxstore_restores"].type == "counter"


def test_the_log_hook_snippet_runs(store_path):
    left = run(block_with("my_callable", "log_to"), auxstore=auxstore, path=store_path)
    records = left["records"]
    # What the callable was given: (int level, "auxstore" | "rocksdb", text).
    assert records, "the log callable was never called"
    for level, source, message in records:
        assert isinstance(level, int) and level >= auxstore.LOG_INFO
        assert source in ("auxstore", "rocksdb")
        assert isinstance(message, str) and message
    # The three opens left one store behind, as the first made it.
    with auxstore.Store(store_path) as s:
        assert s.stats().snapshots == 0


def test_the_paged_put_snippet_runs(store, ns):
    tokens = list(range(500, 628))
    raw = bf16(128 * HD, 3)

    def qsa(n):
        return np.concatenate([np.array([n, n // RATIO], "<u8").view(np.uint8),
                               raw[:n * HD].view(np.uint8)])

    run(block_with("block_chain=chain[:4]"), auxstore=auxstore, store=store, ns=ns,
        tokens=tokens, qsa_64=qsa(64), qsa_128=qsa(128))
    chain = auxstore.prefix_hash(tokens, 16, 0)
    assert bytes(store.get_layer(ns, chain[7], 0)) == qsa(128).tobytes()
    st = store.stats()
    assert st.payload_bytes == qsa(64).size + qsa(128).size
    assert st.unique_bytes == 128 * HD * 2  # the 64 shared rows once
