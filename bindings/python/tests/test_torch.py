"""torch tensors: CPU tensors as host buffers (no copy), data_ptr() integers
as device addresses. Skipped when torch is not importable."""

import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not importable (apt-get install python3-torch)")

import auxstore  # noqa: E402
from conftest import prefix  # noqa: E402


def test_cpu_tensors_as_host_buffers(store, ns):
    src = torch.arange(1024, dtype=torch.int32)
    store.put(ns, prefix(1), 1, [(2, "opaque", src)])
    dst = torch.zeros(1024, dtype=torch.int32)
    ptr = dst.data_ptr()
    assert store.read_layers_into(ns, prefix(1), {2: dst}) == {2: 4096}
    assert dst.data_ptr() == ptr and torch.equal(dst, src)  # written in place
    half = torch.zeros(2048, dtype=torch.bfloat16)  # any dtype: the bytes count
    store.read_layer_into(ns, prefix(1), 2, half)
    assert half.view(torch.int32).equal(src)
    with pytest.raises(ValueError, match="contiguous"):
        store.put(ns, prefix(2), 1, [(2, "opaque", src[::2])])


def test_device_api_with_tensors(backend):
    with backend.stream() as s, backend.buffer(4096) as buf:
        t = torch.randint(0, 255, (4096,), dtype=torch.uint8)
        buf.write(t, stream=s)
        s.synchronize()
        back = torch.empty(4096, dtype=torch.uint8)
        backend.copy_d2h(back, buf, stream=s)
        assert torch.equal(back, t)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_are_engine_owned_buffers(store, ns):
    try:
        b = auxstore.Backend("cuda")
    except (auxstore.UnavailableError, auxstore.NotSupportedError):
        pytest.skip("auxstore built without CUDA")
    with b:
        store.put(ns, prefix(3), 1, [(2, "opaque", torch.arange(256, dtype=torch.uint8))])
        dev = torch.zeros(256, dtype=torch.uint8, device="cuda")
        stream = torch.cuda.Stream()
        with b.borrow_opaque(dev.data_ptr(), capacity=256) as st, \
                auxstore.Pipeline(store, b) as p:
            h = p.restore_start(ns, prefix(3), {2: st}, stream=stream.cuda_stream)
            h.stream_wait_all(stream.cuda_stream)
            h.join()
        stream.synchronize()
        assert torch.equal(dev.cpu(), torch.arange(256, dtype=torch.uint8))
        with pytest.raises(TypeError, match="device tensor"):
            store.put(ns, prefix(4), 1, [(2, "opaque", dev)])
