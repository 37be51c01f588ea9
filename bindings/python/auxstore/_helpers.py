"""Pure-Python helpers over the native handles: streams and device buffers as
context-managed integers, leases, connector keys, and a few conveniences
attached to the native classes."""

import hashlib

from . import _auxstore


class Stream(int):
    """A backend stream: an ``int`` (pass it wherever a stream is asked for)
    that is also a context manager destroying it on exit."""

    def __new__(cls, backend, handle):
        self = super().__new__(cls, handle)
        self.backend = backend
        self._destroyed = False
        return self

    def synchronize(self):
        """Waits for the stream's work (``Backend.synchronize``)."""
        self.backend.synchronize(self)

    def destroy(self):
        """Waits for the stream's work, then destroys it (once; also on exit)."""
        if not self._destroyed and not self.backend.closed:
            self._destroyed = True
            self.backend.destroy_stream(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __repr__(self):
        return "Stream(0x%x)" % int(self)


class DeviceBuffer(int):
    """Device memory from ``Backend.alloc``: an ``int`` (its address) with its
    size, freed by ``free()`` or on leaving a ``with`` block."""

    def __new__(cls, backend, ptr, nbytes):
        self = super().__new__(cls, ptr)
        self.backend = backend
        self.nbytes = nbytes
        self._freed = False
        return self

    def write(self, src, *, stream, offset=0):
        """Asynchronous H2D copy of the host buffer ``src`` on ``stream``."""
        self.backend.copy_h2d(self, src, stream=stream, offset=offset)

    def read(self, *, stream, nbytes=None, offset=0):
        """The bytes (a new bytearray) once the stream's earlier work is done."""
        n = self.nbytes - offset if nbytes is None else nbytes
        return self.backend.read(self, n, stream=stream, offset=offset)

    def read_into(self, dst, *, stream, offset=0, nbytes=None):
        """Copies into the writable host buffer ``dst`` (``Backend.copy_d2h``);
        returns ``dst``."""
        self.backend.copy_d2h(dst, self, stream=stream, offset=offset, nbytes=nbytes)
        return dst

    def free(self):
        """Frees the memory (once; also on leaving a ``with`` block)."""
        if not self._freed and not self.backend.closed:
            self._freed = True
            self.backend.free(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __repr__(self):
        return "DeviceBuffer(0x%x, nbytes=%d)" % (int(self), self.nbytes)


class Lease(int):
    """A lease id (an ``int``) that releases itself on leaving a ``with`` block
    (a lease a restore already released, or one that expired, is fine)."""

    def __new__(cls, store, lease):
        self = super().__new__(cls, lease)
        self.store = store
        return self

    def release(self):
        """True when this call released it; False when it was already gone."""
        if int(self) == 0 or self.store.closed:
            return False
        return self.store.release_leases([int(self)]) == 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def key_to_prefix(key):
    """A connector's page key as an auxstore prefix (16 bytes): 16 bytes as
    they are, 32 hex digits decoded, anything else (SGLang's SHA-256 hex
    keys, vLLM's block-hash bytes, ints) hashed with BLAKE2b-128.

    This is not the token hash: it maps a key the ENGINE already computed to
    a prefix (Python adapters only). Keys computed from tokens, the ones
    auxstore's own lookups use and every language shares, come from
    prefix_hash (auxstore_prefix_hash in C, prefix_hashes in Rust)."""
    if isinstance(key, (bytes, bytearray, memoryview)):
        key = bytes(key)
        if len(key) == 16:
            return key
        return hashlib.blake2b(key, digest_size=16).digest()
    if isinstance(key, str):
        if len(key) == 32:
            try:
                return bytes.fromhex(key)
            except ValueError:
                pass
        return hashlib.blake2b(key.encode(), digest_size=16).digest()
    if isinstance(key, int):
        return hashlib.blake2b(key.to_bytes((key.bit_length() + 8) // 8, "little", signed=True),
                               digest_size=16).digest()
    raise TypeError("a key must be bytes, str or int, not %s" % type(key).__name__)


# ---- conveniences on the native classes ---------------------------------------


def _store_lease(self, ns, prefix, lease_ms):
    """``Lease`` (a context manager) on a stored snapshot."""
    return Lease(self, self.lease_acquire(ns, prefix, lease_ms))


def _store_metrics_text(self, pipeline=None, labels=None):
    """The Prometheus text exposition of this store (and ``pipeline``)."""
    return _auxstore.metrics_text(self, pipeline, labels)


def _pipeline_metrics_text(self, labels=None, store=None):
    """The Prometheus text exposition of this pipeline (and ``store``)."""
    return _auxstore.metrics_text(store, self, labels)


def _backend_stream(self):
    """A new ``Stream`` (a context manager destroying it)."""
    return Stream(self, self.create_stream())


def _backend_buffer(self, nbytes):
    """``nbytes`` of device memory as a ``DeviceBuffer`` (a context manager)."""
    return DeviceBuffer(self, self.alloc(nbytes), nbytes)


def _handle_each_layer(self, layers):
    """Yields each of ``layers`` (in the order given) once its bytes are on the
    device: ``for layer in h.each_layer(range(n)): attend(layer)``."""
    for layer in layers:
        self.wait_layer(layer)
        yield layer


_auxstore.Store.lease = _store_lease
_auxstore.Store.metrics_text = _store_metrics_text
_auxstore.Pipeline.metrics_text = _pipeline_metrics_text
_auxstore.Backend.stream = _backend_stream
_auxstore.Backend.buffer = _backend_buffer
_auxstore.RestoreHandle.each_layer = _handle_each_layer
