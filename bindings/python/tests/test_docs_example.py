"""docs/python.md's Python blocks run as written: the complete example, and
the metrics and log-hook snippets with the `store`, `pipeline` and `path`
they name."""

import os
import re

import pytest

import auxstore

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
    exec(compile(code, "docs/python.md", "exec"), {"__name__": "__doc_example__", **names})


def test_every_python_block_is_run_here():
    # A new block in docs/python.md needs a test below.
    assert len(blocks()) == 3


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
    run(block_with("my_callable", "log_to"), auxstore=auxstore, path=store_path)
