"""auxstore: the persistent tier for LLM-inference aux state, from Python.

A thin, Pythonic layer over auxstore's C ABI (libauxstore_c.so, through the
native module ``auxstore._auxstore``). docs/python.md has the rules; the short
version:

* Every handle is a context manager: ``Store``, ``Backend``, ``State``,
  ``Pipeline``, ``RestoreHandle`` (and the ``Lease``, ``Stream`` and
  ``DeviceBuffer`` helpers here). Closing a parent closes its children first.
* Errors raise ``AuxstoreError`` subclasses, one per status code, with
  ``.code``, ``.code_name`` and ``.message``.
* The GIL is released during every call into auxstore (I/O, restores, waits).
* Host buffers go through the buffer protocol (numpy arrays, bytearray,
  memoryview, bytes, CPU torch tensors) and are never copied on the way in
  (``put``) or out (``read_layers_into``); device memory and streams are
  integers (``torch.Tensor.data_ptr()``, ``torch.cuda.Stream().cuda_stream``).
* Async restores are ``concurrent.futures.Future`` objects completed from the
  C done callback.
"""

from pkgutil import extend_path

# The native module is built into <build>/bindings/python/auxstore/ while this
# package lives in the source tree: with both on sys.path, both folders are
# the package's.
__path__ = extend_path(__path__, __name__)

from . import _auxstore  # noqa: E402
from ._auxstore import *  # noqa: E402,F401,F403
from ._auxstore import (  # noqa: E402,F401
    AuxstoreError,
    Backend,
    BusyError,
    CapacityError,
    CorruptionError,
    ERRORS,
    Geometry,
    InternalError,
    InvalidArgumentError,
    HostBuffer,
    HostRead,
    IoError,
    LayerInfo,
    Manifest,
    Match,
    NotFoundError,
    NotSupportedError,
    OutOfRangeError,
    Pipeline,
    PipelineStats,
    RestoreBatch,
    RestoreHandle,
    State,
    Store,
    StoreStats,
    UnavailableError,
    code_name,
    error_for_code,
    escape_label_value,
    metrics_text,
    prefix_hash,
    qsa_block_pool_host,
    token_digest,
)
from ._logsupport import LogRouter, log_to  # noqa: E402,F401
from ._helpers import DeviceBuffer, Lease, Stream, key_to_prefix  # noqa: E402,F401
from . import _signatures  # noqa: E402
from . import connector  # noqa: E402,F401  (import auxstore is enough for auxstore.connector)

_signatures.install(_auxstore)


def __getattr__(name):
    # prometheus_client is only imported when the collector is asked for.
    if name == "Collector":
        from .metrics import Collector

        return Collector
    raise AttributeError("module 'auxstore' has no attribute %r" % name)


__version__ = "0.1.0"
