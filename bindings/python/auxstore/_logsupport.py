"""Routing auxstore's log records (its own warnings and RocksDB's info log)
into Python's ``logging``."""

import logging

from . import _auxstore

#: AUXSTORE_LOG_* -> logging levels.
LEVELS = {
    _auxstore.LOG_DEBUG: logging.DEBUG,
    _auxstore.LOG_INFO: logging.INFO,
    _auxstore.LOG_WARN: logging.WARNING,
    _auxstore.LOG_ERROR: logging.ERROR,
}


class LogRouter:
    """A log callback ``(level, source, message)`` that hands each record to a
    ``logging.Logger``: ``source`` ("auxstore" or "rocksdb") becomes a child
    logger (``auxstore.rocksdb``) unless ``by_source`` is False, and is also
    in the record as ``auxstore_source``. Runs on auxstore's threads (with the
    GIL); logging's handlers are thread-safe."""

    def __init__(self, logger, by_source=True):
        if isinstance(logger, str):
            logger = logging.getLogger(logger)
        self.logger = logger
        self.by_source = by_source
        self._children = {}

    def _target(self, source):
        if not self.by_source or source == self.logger.name.rsplit(".", 1)[-1]:
            return self.logger
        child = self._children.get(source)
        if child is None:
            child = self._children[source] = self.logger.getChild(source)
        return child

    def __call__(self, level, source, message):
        pylevel = LEVELS.get(level, logging.WARNING)
        target = self._target(source)
        if target.isEnabledFor(pylevel):
            target.log(pylevel, "%s", message, extra={"auxstore_source": source})


def log_to(logger, by_source=True):
    """A log callback routing into ``logger`` (a ``logging.Logger`` or its
    name): ``Store(path, log=auxstore.log_to(logging.getLogger("auxstore")))``.
    (Passing the Logger itself as ``log=`` does the same.)"""
    return LogRouter(logger, by_source)
