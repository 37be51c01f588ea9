"""A prometheus_client collector for stores' and pipelines' metrics.

The engine registers one in its own registry::

    collector = auxstore.Collector(store, pipeline=pipeline, labels={"instance": "engine-0"})
    collector.add(other_store, labels={"instance": "engine-1"})  # more stores: one family each
    registry.register(collector)

Each scrape calls ``auxstore_metrics_text`` (one C call per source, the GIL
released) and parses the text with ``prometheus_client.parser``, so the
families, types, help texts and values are exactly those ``auxstore stats
--prometheus`` and the C ABI export (docs/metrics.md lists every metric).
Counters come back as families without their ``_total`` suffix, as
prometheus_client's own do, and ``generate_latest`` writes them with it.

Several stores (and pipelines) go into one collector, each with its own
label set (by default ``store="<path>"``): every family then appears once,
with a sample per store. A second collector with the same families in the
same registry is refused by ``registry.register`` (``describe()`` names
them), rather than exposing duplicate families.
"""

from prometheus_client.parser import text_string_to_metric_families

from . import _auxstore


class Collector:
    """Yields the metrics of one or more stores (and, when given, pipelines).

    ``labels`` ({name: value}) is put on every sample of that source (values
    escaped); None means ``{"store": <the store's path>}``. Sources in one
    collector must have distinct label sets. A closed store or pipeline
    contributes nothing; a scrape never raises because auxstore went away."""

    def __init__(self, store=None, pipeline=None, labels=None):
        """The first source: ``store`` and/or ``pipeline`` and its ``labels``."""
        self._sources = []
        self.add(store, pipeline=pipeline, labels=labels)

    def add(self, store=None, pipeline=None, labels=None):
        """Adds a store and/or pipeline under its own ``labels`` (see the class);
        ValueError when another source of this collector has the same labels.
        Returns the collector."""
        if store is None and pipeline is None:
            raise ValueError("give a store, a pipeline or both")
        if store is not None and not isinstance(store, _auxstore.Store):
            raise TypeError("store must be an auxstore.Store, not %s" % type(store).__name__)
        if pipeline is not None and not isinstance(pipeline, _auxstore.Pipeline):
            raise TypeError("pipeline must be an auxstore.Pipeline, not %s"
                            % type(pipeline).__name__)
        if labels is None:
            owner = store if store is not None else pipeline.store
            labels = {"store": owner.path}
        labels = {str(k): str(v) for k, v in dict(labels).items()}
        # Validates the label names now, not at the first scrape.
        text = _labels_text(labels)
        for other in self._sources:
            if other[2] == labels:
                raise ValueError("labels %r are already another source's in this collector: "
                                 "give each store its own (e.g. store=<path>)" % (labels,))
        self._sources.append((store, pipeline, labels, text))
        return self

    @property
    def store(self):
        """The first source's store (None when it has none)."""
        return self._sources[0][0]

    @property
    def pipeline(self):
        """The first source's pipeline (None when it has none)."""
        return self._sources[0][1]

    @property
    def labels(self):
        """The first source's label set."""
        return dict(self._sources[0][2])

    def text(self):
        """The exposition text of every source still open ("" when none is),
        one source after the other (use collect() for merged families)."""
        return "".join(_source_text(*src) for src in self._sources)

    def collect(self):
        """The families of every open source, each family once."""
        families = {}
        for src in self._sources:
            text = _source_text(*src)
            if not text:
                continue
            for fam in text_string_to_metric_families(text):
                have = families.get(fam.name)
                if have is None:
                    families[fam.name] = fam
                else:
                    have.samples.extend(fam.samples)
        yield from families.values()

    def describe(self):
        """The families this collector exposes (so a registry refuses a second
        collector exposing the same ones)."""
        return list(self.collect())


def _source_text(store, pipeline, labels, label_text):
    store = store if store is not None and not store.closed else None
    pipeline = pipeline if pipeline is not None and not pipeline.closed else None
    if store is None and pipeline is None:
        return ""
    try:
        return _auxstore.metrics_text(store, pipeline, label_text)
    except ValueError:  # closed under us
        return ""


def _labels_text(labels):
    # metrics_text escapes a dict itself; done here once to check names early.
    if not labels:
        return None
    for k, v in labels.items():
        if "\0" in v:
            raise ValueError("label %r holds a NUL character" % k)
    return ",".join('%s="%s"' % (_check_name(k), _auxstore.escape_label_value(str(v)))
                    for k, v in labels.items())


def _check_name(name):
    name = str(name)
    ok = (name and not name[0].isdigit() and not name.startswith("__")
          and all(c == "_" or c.isascii() and c.isalnum() for c in name))
    if not ok:
        raise ValueError("%r is not a valid Prometheus label name" % name)
    return name
