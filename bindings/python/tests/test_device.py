"""Backend, device memory and streams as integers, owned and engine-owned states."""

import numpy as np
import pytest

import auxstore
from conftest import DSA_CAP, DSA_DIM, GEOMETRY, HD, MAX_TOKENS, RATIO, bf16, dsa_blob, qsa_blob


def test_backend_properties(backend):
    assert backend.kind == auxstore.BACKEND_HOST
    assert backend.name == "host" and backend.device == 0
    assert "host" in repr(backend)
    with auxstore.Backend(auxstore.BACKEND_HOST) as b2:
        assert b2.kind == auxstore.BACKEND_HOST
    assert b2.closed
    with pytest.raises(ValueError, match="closed"):
        b2.alloc(10)
    with pytest.raises(auxstore.InvalidArgumentError):
        auxstore.Backend(7)
    with pytest.raises(ValueError):
        auxstore.Backend("tpu")


def test_cuda_backend_without_a_device():
    try:
        b = auxstore.Backend("cuda")
    except (auxstore.UnavailableError, auxstore.NotSupportedError) as e:
        assert e.code in (auxstore.UNAVAILABLE, auxstore.NOT_SUPPORTED)
        return
    with b:  # a machine with a GPU
        assert b.kind == auxstore.BACKEND_CUDA and b.name.startswith("cuda")


def test_memory_and_streams(backend):
    ptr = backend.alloc(4096)
    assert isinstance(ptr, int) and ptr != 0
    s = backend.create_stream()
    assert isinstance(s, int) and s != 0
    src = bytearray(np.arange(4096, dtype=np.uint32).astype(np.uint8).tobytes())
    backend.copy_h2d(ptr, src, stream=s)
    # The asynchronous copy keeps `src` exported until the stream is synchronized.
    with pytest.raises(BufferError):
        src.extend(b"more")
    backend.synchronize(s)
    out = np.zeros(4096, np.uint8)
    backend.copy_d2h(out, ptr, stream=s)
    assert out.tobytes() == bytes(src)
    src.extend(b"more")  # released
    part = backend.read(ptr, 100, stream=s, offset=10)
    assert bytes(part) == bytes(src[10:110])
    backend.copy_h2d(ptr, b"\xff" * 8, stream=s, offset=4088)
    backend.synchronize(s)
    assert bytes(backend.read(ptr, 8, stream=s, offset=4088)) == b"\xff" * 8
    with pytest.raises(auxstore.AuxstoreError):  # past the allocation: refused
        backend.copy_h2d(ptr, b"x" * 16, stream=s, offset=4090)
    backend.destroy_stream(s)
    backend.free(ptr)
    with pytest.raises(auxstore.AuxstoreError):
        backend.free(ptr)  # not an allocation any more


def test_stream_and_buffer_helpers(backend):
    with backend.stream() as s, backend.buffer(256) as buf:
        assert isinstance(s, int) and isinstance(buf, int) and buf.nbytes == 256
        buf.write(bytes(range(256)), stream=s)
        s.synchronize()
        assert bytes(buf.read(stream=s)) == bytes(range(256))
        dst = np.zeros(16, np.uint8)
        assert buf.read_into(dst, stream=s, offset=16, nbytes=16) is dst
        assert bytes(dst) == bytes(range(16, 32))


def test_owned_states(backend, weights):
    k_pool_k, k_norm_w = weights
    ingested, pooled = 256, 256 // RATIO
    blob = qsa_blob(ingested, pooled, seed=4)
    with backend.qsa_state(GEOMETRY, k_pool_k, k_norm_w) as q:
        assert q.kind == auxstore.KIND_QSA and q.kind_name == "qsa" and not q.borrowed
        assert q.counters == (0, 0)
        assert len(q.buffers) == 2
        q.load(blob)
        assert q.counters == (ingested, pooled)
        assert q.read() == blob.tobytes()
        keys = q.read_block_keys()
        want = auxstore.qsa_block_pool_host(GEOMETRY, blob[16:], ingested, k_pool_k, k_norm_w,
                                            pooled)
        assert isinstance(want, bytearray) and len(want) == pooled * HD * 2
        assert keys == bytes(want)
        with pytest.raises(auxstore.InvalidArgumentError, match="not fresh"):
            q.load(blob)
    assert q.closed
    with pytest.raises(ValueError, match="closed"):
        q.counters

    d = backend.dsa_state(GEOMETRY)
    rows = dsa_blob(100)
    d.load(rows)
    assert d.counters == (100, 0) and d.read() == rows.tobytes() and len(d.buffers) == 3
    with pytest.raises(auxstore.InvalidArgumentError):
        d.read_block_keys()
    d.release()

    with backend.opaque_state(1000) as o:
        o.load(b"hello")
        assert o.counters == (5, 0) and bytes(o.read()) == b"hello"
    with backend.opaque_state(4) as o:
        with pytest.raises(auxstore.AuxstoreError):
            o.load(b"too long")
    with pytest.raises(ValueError, match="qsa_hd"):
        backend.qsa_state(GEOMETRY, b"\0" * 2, b"\0" * 2)
    with pytest.raises(auxstore.AuxstoreError):  # a bad blob for its kind
        with backend.dsa_state(GEOMETRY) as bad:
            bad.load(b"\0" * 7)


def test_borrowed_states(backend):
    raw_bytes = MAX_TOKENS * HD * 2
    block_bytes = MAX_TOKENS // RATIO * HD * 2
    s = backend.create_stream()
    raw, block = backend.alloc(raw_bytes), backend.alloc(block_bytes)
    kq, kn = backend.alloc(HD * 2), backend.alloc(HD * 2)
    backend.copy_h2d(kq, bf16(HD, 1), stream=s)
    backend.copy_h2d(kn, bf16(HD, 2), stream=s)
    keys = bf16(128 * HD, 3)
    backend.copy_h2d(raw, keys, stream=s)
    backend.synchronize(s)
    with backend.borrow_qsa(GEOMETRY, raw_keys=raw, raw_keys_bytes=raw_bytes, block_keys=block,
                            block_keys_bytes=block_bytes, k_pool_k=kq, k_norm_w=kn,
                            ingested=128) as q:
        assert q.borrowed and q.buffers == [raw, block]
        assert q.counters == (128, 0)
        assert q.read()[16:] == keys.tobytes()  # the engine's bytes, as a snapshot holds them
        q.set_counters(64, 0)
        assert q.counters == (64, 0)
    # The buffers are still the engine's: freeing them works.
    with pytest.raises(auxstore.InvalidArgumentError):
        backend.borrow_qsa(GEOMETRY, raw_keys=raw, raw_keys_bytes=raw_bytes - 2,
                           block_keys=block, block_keys_bytes=block_bytes, k_pool_k=kq,
                           k_norm_w=kn)

    rb = DSA_CAP * DSA_DIM * 2
    kb, gb, vb = backend.alloc(rb), backend.alloc(rb), backend.alloc(DSA_CAP)
    with backend.borrow_dsa(GEOMETRY, capacity_rows=DSA_CAP, k_normed=kb, k_normed_bytes=rb,
                            gate=gb, gate_bytes=rb, valid=vb, valid_bytes=DSA_CAP) as d:
        assert d.borrowed and d.buffers == [kb, gb, vb] and d.counters == (0, 0)
    with pytest.raises(auxstore.InvalidArgumentError):
        backend.borrow_dsa(GEOMETRY, capacity_rows=DSA_CAP, k_normed=kb, k_normed_bytes=rb,
                           gate=gb, gate_bytes=rb, valid=vb, valid_bytes=DSA_CAP - 1)
    ob = backend.alloc(64)
    with backend.borrow_opaque(ob, capacity=64, size=10) as o:
        assert o.borrowed and o.buffers == [ob] and o.counters == (10, 0)
    for p in (raw, block, kq, kn, kb, gb, vb, ob):
        backend.free(p)
    backend.destroy_stream(s)


def test_backend_close_closes_children(store, backend):
    st = backend.opaque_state(10)
    p = auxstore.Pipeline(store, backend)
    backend.close()
    assert st.closed and p.closed and backend.closed
    st.release()  # fine after the cascade
    p.close()


def test_store_close_closes_pipelines(store_path):
    with auxstore.Backend("host") as b:
        s = auxstore.Store(store_path)
        p = auxstore.Pipeline(s, b)
        assert p.store is s and p.backend is b
        s.close()
        assert p.closed
        with pytest.raises(ValueError, match="closed"):
            p.stats()
        with pytest.raises(ValueError, match="closed"):
            auxstore.Pipeline(s, b)


class FakeTensor:
    """Just what auxstore reads of a CPU torch.Tensor (no torch needed)."""

    def __init__(self, array, device="cpu", contiguous=True):
        self.array = array
        self.device = type("Device", (), {"type": device})()
        self._contiguous = contiguous

    def data_ptr(self):
        return self.array.ctypes.data

    def element_size(self):
        return self.array.itemsize

    def numel(self):
        return self.array.size

    def is_contiguous(self):
        return self._contiguous


def test_tensor_like_objects_are_host_buffers(store, ns, backend):
    from conftest import prefix

    src = np.arange(256, dtype=np.int32)
    store.put(ns, prefix(1), 1, [(2, "opaque", FakeTensor(src))])
    dst = np.zeros(256, np.int32)
    store.read_layers_into(ns, prefix(1), {2: FakeTensor(dst)})
    assert np.array_equal(dst, src)  # written through data_ptr(), in place
    with pytest.raises(TypeError, match="device tensor"):
        store.put(ns, prefix(2), 1, [(2, "opaque", FakeTensor(src, device="cuda"))])
    with pytest.raises(ValueError, match="contiguous"):
        store.put(ns, prefix(2), 1, [(2, "opaque", FakeTensor(src, contiguous=False))])
    with backend.stream() as s, backend.buffer(1024) as buf:
        buf.write(FakeTensor(src), stream=s)
        s.synchronize()
        assert bytes(buf.read(stream=s)) == src.tobytes()
