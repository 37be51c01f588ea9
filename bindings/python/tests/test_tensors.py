"""numpy arrays and DLPack tensors as the sources and targets of every call
that takes a host buffer: put / batch_put read them in place, read_layers_into
/ read_layer_into / batch_read_into and the device copies write them in place
(no copy), every element checked. DLPack: any object with __dlpack__ (and
__dlpack_device__) or a bare "dltensor" capsule, host memory only."""

import numpy as np
import pytest

import auxstore
from conftest import prefix

torch = pytest.importorskip(
    "torch", reason="torch is not importable (apt-get install python3-torch)")
from torch.utils import dlpack as torch_dlpack  # noqa: E402


class EngineTensor:
    """An engine's host tensor that speaks only DLPack (no buffer protocol,
    not a torch tensor): what a framework other than numpy or torch hands in."""

    def __init__(self, tensor, device=(1, 0)):
        self.tensor = tensor
        self.device = device

    def __dlpack__(self, stream=None):
        return torch_dlpack.to_dlpack(self.tensor)

    def __dlpack_device__(self):
        return self.device


def test_numpy_arrays_as_sources_and_targets(store, ns):
    src = np.linspace(-3, 3, 64 * 33, dtype=np.float32).reshape(64, 33)
    half = np.arange(1000, dtype=np.float16)
    store.put(ns, prefix(1), 1, [(2, "opaque", src), (3, "opaque", half)])
    dst = np.zeros_like(src)
    back_half = np.empty_like(half)
    assert store.read_layers_into(ns, prefix(1), {2: dst, 3: back_half}) == {2: src.nbytes,
                                                                         3: half.nbytes}
    np.testing.assert_array_equal(dst, src)
    np.testing.assert_array_equal(back_half, half)
    # batch_put from arrays, batch_read_into arrays (2-D targets, any dtype).
    rows = [np.full((8, 16), i, dtype=np.int32) for i in range(3)]
    assert store.batch_put(ns, [(prefix(10 + i), 1, [(2, "opaque", r)])
                                for i, r in enumerate(rows)]) == [True] * 3
    targets = [np.zeros((8, 16), dtype=np.int32) for _ in rows]
    assert store.batch_read_into(ns, [(prefix(10 + i), {2: t}) for i, t in enumerate(targets)]) \
        == [True] * 3
    for r, t in zip(rows, targets):
        np.testing.assert_array_equal(t, r)
    with pytest.raises(ValueError, match="contiguous"):
        store.read_layer_into(ns, prefix(1), 2, np.zeros((33, 64), np.float32).T)
    with pytest.raises(TypeError, match="writable"):
        ro = np.zeros_like(src)
        ro.flags.writeable = False
        store.read_layer_into(ns, prefix(1), 2, ro)


def test_dlpack_tensors_as_sources_and_targets(store, ns):
    src = torch.arange(4096, dtype=torch.int32).reshape(64, 64)
    store.put(ns, prefix(2), 1, [(2, "opaque", EngineTensor(src))])
    assert bytes(store.get_layer(ns, prefix(2), 2)) == src.numpy().tobytes()
    dst = torch.zeros(64, 64, dtype=torch.int32)
    ptr = dst.data_ptr()
    assert store.read_layer_into(ns, prefix(2), 2, EngineTensor(dst)) == 4 * 4096
    assert dst.data_ptr() == ptr and torch.equal(dst, src)  # written in place
    # A bare capsule, and a bf16 target (the bytes count, not the dtype).
    bf = torch.zeros(8192, dtype=torch.bfloat16)
    store.read_layers_into(ns, prefix(2), {2: torch_dlpack.to_dlpack(bf)})
    assert torch.equal(bf.view(torch.int32).reshape(64, 64), src)
    # numpy's own __dlpack__ too (behind a wrapper: an array itself takes the
    # buffer protocol first), of a view inside a larger array.
    arr = np.zeros(5000, dtype=np.int32)
    view = arr[10:4106]
    store.read_layer_into(ns, prefix(2), 2, type("NumpyDl", (), {
        "__dlpack__": lambda self, stream=None: view.__dlpack__(),
        "__dlpack_device__": lambda self: view.__dlpack_device__()})())
    np.testing.assert_array_equal(arr[10:4106], src.numpy().ravel())
    assert arr[:10].sum() == 0 and arr[4106:].sum() == 0  # nothing outside the view


def test_dlpack_device_copies(backend):
    with backend.stream() as s, backend.buffer(4096) as buf:
        t = torch.randint(0, 255, (4096,), dtype=torch.uint8)
        buf.write(EngineTensor(t), stream=s)
        s.synchronize()
        back = torch.empty(4096, dtype=torch.uint8)
        backend.copy_d2h(EngineTensor(back), buf, stream=s)
        assert torch.equal(back, t)


def test_dlpack_refusals(store, ns):
    src = torch.arange(256, dtype=torch.int32)
    store.put(ns, prefix(3), 1, [(2, "opaque", src)])
    with pytest.raises(TypeError, match="device tensor"):
        store.read_layer_into(ns, prefix(3), 2, EngineTensor(src, device=(2, 0)))  # kDLCUDA
    with pytest.raises(ValueError, match="C-contiguous"):
        store.read_layer_into(ns, prefix(3), 2,
                              EngineTensor(torch.zeros(32, 16, dtype=torch.int32).t()))
    with pytest.raises(auxstore.OutOfRangeError):
        store.read_layer_into(ns, prefix(3), 2, EngineTensor(torch.zeros(255, dtype=torch.int32)))
    with pytest.raises(TypeError, match="DLPack"):
        store.put(ns, prefix(4), 1, [(2, "opaque", object())])
