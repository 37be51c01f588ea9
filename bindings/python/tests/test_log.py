"""The log hook: a Python callable (or logging) receives auxstore's and
RocksDB's log records from their threads."""

import gc
import logging
import sys
import threading
import weakref

import pytest

import auxstore
from conftest import prefix


def exercise(s):
    ns = s.register_namespace("m")
    s.put(ns, prefix(1), 1, [(1, "opaque", b"x" * 100)])
    s.flush()


def test_callable_gets_records_from_auxstore_threads(store_path):
    records = []

    def on_log(level, source, message):
        records.append((level, source, message, threading.current_thread()))

    with auxstore.Store(store_path, log=on_log, log_level=auxstore.LOG_INFO) as s:
        exercise(s)
    assert records
    for level, source, message, _ in records:
        assert level in (auxstore.LOG_INFO, auxstore.LOG_WARN, auxstore.LOG_ERROR)
        assert source in ("auxstore", "rocksdb") and isinstance(message, str)
        # c.h says "one line"; RocksDB's stats dumps arrive as one multi-line
        # record (store/rocks_logger.cc strips only the trailing newline).
        assert not message.endswith("\n")
    # RocksDB's background threads log too: the callback ran off the Python threads.
    assert any(t is not threading.main_thread() for *_, t in records)

    records.clear()
    with auxstore.Store(store_path, log=on_log) as s:  # default: warnings and errors only
        exercise(s)
    assert all(level >= auxstore.LOG_WARN for level, *_ in records)


def test_callback_exceptions_never_escape(store_path):
    raised = []
    old = sys.unraisablehook
    sys.unraisablehook = lambda u: raised.append(u.exc_value)
    try:
        def bad(level, source, message):
            raise KeyError("from the log callback")

        with auxstore.Store(store_path, log=bad, log_level=auxstore.LOG_INFO) as s:
            exercise(s)
            assert s.exists(s.register_namespace("m"), prefix(1))
    finally:
        sys.unraisablehook = old
    assert raised and all(isinstance(e, KeyError) for e in raised)


def test_callable_kept_alive_with_the_store(store_path):
    class Sink:
        def __init__(self):
            self.n = 0

        def __call__(self, level, source, message):
            self.n += 1

    sink = Sink()
    ref = weakref.ref(sink)
    s = auxstore.Store(store_path, log=sink, log_level=auxstore.LOG_INFO)
    del sink
    gc.collect()
    assert ref() is not None  # the store holds it
    exercise(s)
    assert ref().n > 0
    s.close()
    gc.collect()
    assert ref() is None  # and lets it go once closed


def test_calling_auxstore_from_the_callback_is_refused(store_path):
    errors = []
    holder = {}

    def reentrant(level, source, message):
        if "s" in holder and not errors:
            try:
                holder["s"].stats()
            except RuntimeError as e:
                errors.append(str(e))

    with auxstore.Store(store_path, log=reentrant, log_level=auxstore.LOG_INFO) as s:
        holder["s"] = s
        exercise(s)
    assert errors and "log callback" in errors[0]


def test_routing_into_logging(store_path):
    logger = logging.getLogger("auxstore.test")
    logger.setLevel(logging.DEBUG)
    seen = []

    class Capture(logging.Handler):
        def emit(self, record):
            seen.append(record)

    handler = Capture()
    logger.addHandler(handler)
    try:
        with auxstore.Store(store_path, log=auxstore.log_to(logger),
                            log_level=auxstore.LOG_INFO) as s:
            exercise(s)
        assert seen
        assert {r.name for r in seen} <= {"auxstore.test.rocksdb", "auxstore.test.auxstore"}
        assert all(r.levelno >= logging.INFO for r in seen)
        assert all(r.auxstore_source in ("rocksdb", "auxstore") for r in seen)
        n = len(seen)
        # A Logger passed as it is routes the same way.
        with auxstore.Store(store_path, log=logger, log_level=auxstore.LOG_INFO) as s:
            exercise(s)
        assert len(seen) > n
        # Records the logger would drop are not formatted.
        logger.setLevel(logging.ERROR)
        n = len(seen)
        with auxstore.Store(store_path, log=logger, log_level=auxstore.LOG_INFO) as s:
            exercise(s)
        assert len(seen) == n
    finally:
        logger.removeHandler(handler)
    assert auxstore.LogRouter("x").logger is logging.getLogger("x")


def test_bad_log_arguments(store_path):
    with pytest.raises(TypeError):
        auxstore.Store(store_path, log=42)
    with pytest.raises(auxstore.InvalidArgumentError, match="min_level"):
        auxstore.Store(store_path, log=print, log_level=7)
