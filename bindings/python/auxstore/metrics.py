"""A prometheus_client collector for a store's and a pipeline's metrics.

The engine registers it in its own registry::

    registry.register(auxstore.Collector(store, pipeline=pipeline,
                                         labels={"instance": "engine-0"}))

Each scrape calls ``auxstore_metrics_text`` (one C call, the GIL released) and
parses the text with ``prometheus_client.parser``, so the families, types,
help texts and values are exactly those ``auxstore stats --prometheus`` and
the C ABI export (docs/metrics.md lists every metric). Counters come back as
families without their ``_total`` suffix, as prometheus_client's own do, and
``generate_latest`` writes them with it.
"""

from prometheus_client.parser import text_string_to_metric_families

from . import _auxstore


class Collector:
    """Yields the store's (and, when given, the pipeline's) metrics.

    ``labels`` ({name: value}) is put on every sample (values escaped). A
    closed store or pipeline contributes nothing; a scrape never raises
    because auxstore went away."""

    def __init__(self, store=None, pipeline=None, labels=None):
        if store is None and pipeline is None:
            raise ValueError("give a store, a pipeline or both")
        if store is not None and not isinstance(store, _auxstore.Store):
            raise TypeError("store must be an auxstore.Store")
        if pipeline is not None and not isinstance(pipeline, _auxstore.Pipeline):
            raise TypeError("pipeline must be an auxstore.Pipeline")
        self.store = store
        self.pipeline = pipeline
        self.labels = dict(labels or {})
        # Validates the label names now, not at the first scrape.
        self._label_text = _labels_text(self.labels)

    def text(self):
        """The exposition text of what is still open ("" when nothing is)."""
        store = self.store if self.store is not None and not self.store.closed else None
        pipeline = (self.pipeline
                    if self.pipeline is not None and not self.pipeline.closed else None)
        if store is None and pipeline is None:
            return ""
        try:
            return _auxstore.metrics_text(store, pipeline, self._label_text)
        except ValueError:  # closed under us
            return ""

    def collect(self):
        text = self.text()
        if text:
            yield from text_string_to_metric_families(text)


def _labels_text(labels):
    # metrics_text escapes a dict itself; done here once to check names early.
    if not labels:
        return None
    return ",".join('%s="%s"' % (_check_name(k), _auxstore.escape_label_value(str(v)))
                    for k, v in labels.items())


def _check_name(name):
    name = str(name)
    ok = (name and not name[0].isdigit() and not name.startswith("__")
          and all(c == "_" or c.isascii() and c.isalnum() for c in name))
    if not ok:
        raise ValueError("%r is not a valid Prometheus label name" % name)
    return name
