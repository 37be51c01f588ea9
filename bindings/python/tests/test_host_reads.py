"""Engine host memory as a read target (issue 24): a numpy array or a host
DLPack tensor registered once (Store.register_host_buffer), many layers of
many snapshots read into it with one handle (Store.read_into_host), every
byte checked; bounds refusals that write nothing; a damaged table file's
layer beside healthy ones; a buffer held until the read is released; one
prefix in two namespaces never confused."""

import glob
import os

import numpy as np
import pytest

import auxstore
from conftest import prefix, random_bytes

FILL = 0xEE
LAYERS = 3


def layer_bytes(s, layer):
    return random_bytes(900 + 531 * s + 70001 * layer, seed=100 * s + layer)


def put_snapshots(store, ns, snapshots):
    for s in snapshots:
        store.put(ns, prefix(s + 1), 64,
                  [(layer, "opaque", layer_bytes(s, layer)) for layer in range(LAYERS)])


def packed_targets(buf, snapshots, spare=32):
    """(prefix, layer, buf, offset, capacity) for every layer, packed with gaps."""
    targets, at = [], 0
    for s in snapshots:
        for layer in range(LAYERS):
            n = layer_bytes(s, layer).size + spare
            targets.append((prefix(s + 1), layer, buf, at, n))
            at += n + 64
    return targets, at


PARTIAL = "partial"  # a target that failed with Corruption: its bytes may be partial


def check_targets(array, targets, expected):
    covered = np.zeros(array.size, bool)
    for target, want in zip(targets, expected):
        off = target[-2]
        if want is None:
            continue
        if want is PARTIAL:
            covered[off:off + target[-1]] = True
            continue
        assert np.array_equal(array[off:off + want.size], want)
        covered[off:off + want.size] = True
    assert np.all(array[~covered] == FILL)  # nothing outside the targets written


def test_many_snapshots_into_a_registered_array(store):
    ns = store.register_namespace("host-model", auxstore.Geometry())
    snaps = list(range(6))
    put_snapshots(store, ns, snaps)
    _, size = packed_targets(None, snaps)
    array = np.full(size, FILL, np.uint8)
    buf = store.register_host_buffer(array)
    assert buf.size == size
    targets, _ = packed_targets(buf, snaps)
    with store.read_into_host(ns, targets) as read:
        assert len(read) == len(targets)
        assert read.wait_target(4) == layer_bytes(1, 1).size
        read.wait_snapshot(prefix(3))
        read.wait()
        assert read.poll()
        assert all(read.target_done(i) for i in range(len(targets)))
        assert read.finished() == [(ns, prefix(s + 1)) for s in snaps]
        assert read.finished() == []  # each snapshot once
        check_targets(array, targets, [layer_bytes(s, l) for s in snaps for l in range(LAYERS)])
        with pytest.raises(auxstore.BusyError, match="read"):
            buf.unregister()  # the read holds it until released
    buf.unregister()
    buf.unregister()  # idempotent
    with pytest.raises(ValueError, match="unregistered"):
        store.read_into_host(ns, targets)


def test_typed_arrays_and_dlpack_tensors_as_targets(store):
    ns = store.register_namespace("host-model", auxstore.Geometry())
    put_snapshots(store, ns, [0])
    want = layer_bytes(0, 0)
    # A float32 array (the engine's dtype) and an object speaking only DLPack.
    f32 = np.zeros((want.size + 3) // 4, np.float32)

    class DlpackOnly:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    raw = np.zeros(want.size, np.uint8)
    a, b = store.register_host_buffer(f32), store.register_host_buffer(DlpackOnly(raw))
    with store.read_into_host(ns, [(prefix(1), 0, a, 0, a.size), (prefix(1), 0, b, 0, b.size)]) as r:
        r.wait()
    assert np.array_equal(f32.view(np.uint8)[:want.size], want)
    assert np.array_equal(raw, want)
    a.unregister()
    b.unregister()
    with pytest.raises(ValueError, match="contiguous"):
        store.register_host_buffer(np.zeros(4, np.uint8)[::2])


def test_bounds_refusals_write_nothing(store):
    ns = store.register_namespace("host-model", auxstore.Geometry())
    put_snapshots(store, ns, [0, 1])
    array = np.full(200_000, FILL, np.uint8)
    buf = store.register_host_buffer(array)
    ok = (prefix(1), 0, buf, 0, 1000)
    for bad, msg in [((prefix(2), 0, buf, 199_000, 2000), r"targets\[1\]: \["),
                     ((prefix(2), 0, buf, 500, 1000), r"targets\[1\] overlaps targets\[0\]")]:
        with pytest.raises(auxstore.InvalidArgumentError, match=msg):
            store.read_into_host(ns, [ok, bad])
    with pytest.raises(TypeError, match="HostBuffer"):
        store.read_into_host(ns, [(prefix(1), 0, array, 0, 1000)])
    assert np.all(array == FILL)
    buf.unregister()  # no read holds it


def test_a_target_error_stops_no_other(store):
    ns = store.register_namespace("host-model", auxstore.Geometry())
    put_snapshots(store, ns, [0, 1])
    array = np.full(400_000, FILL, np.uint8)
    buf = store.register_host_buffer(array)
    targets = [(prefix(1), 1, buf, 0, 100_000), (prefix(9), 1, buf, 100_000, 100_000),
               (prefix(2), 1, buf, 200_000, 100), (prefix(2), 0, buf, 300_000, 100_000)]
    with store.read_into_host(ns, targets) as read:
        with pytest.raises(auxstore.NotFoundError, match=r"targets\[1\]"):
            read.wait()
        with pytest.raises(auxstore.OutOfRangeError, match=r"targets\[2\]"):
            read.wait_target(2)
        read.wait_snapshot(prefix(1))
        assert read.wait_target(3) == layer_bytes(1, 0).size
        check_targets(array, targets, [layer_bytes(0, 1), None, None, layer_bytes(1, 0)])
    buf.unregister()


def test_damaged_layer_among_healthy_ones(store_path):
    # The damaged snapshot alone in the table files, in the namespace whose
    # records sort first; the healthy ones in the other, written after the
    # damage. (A healthy record sorting before the damaged file's keys hits
    # its damaged block too, and is quarantined: see issue 24's report.)
    def namespaces(store):
        a = store.register_namespace("host-model", auxstore.Geometry())
        b = store.register_namespace("host-other", auxstore.Geometry())
        return min(a, b), max(a, b)

    with auxstore.Store(store_path) as store:
        damaged_ns, _ = namespaces(store)
        big = random_bytes(2 << 20, seed=7)  # over the ingest threshold: a table file of its own
        store.put(damaged_ns, prefix(50), 64, [(0, "opaque", big)])
    sst = max(glob.glob(os.path.join(store_path, "*.sst")), key=os.path.getsize)
    with open(sst, "r+b") as f:  # flip a byte in the middle of its data
        f.seek(os.path.getsize(sst) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x40]))
    with auxstore.Store(store_path) as store:
        damaged_ns, ns = namespaces(store)
        put_snapshots(store, ns, [0, 1])
        _, size = packed_targets(None, [0, 1])
        array = np.full(size + big.size, FILL, np.uint8)
        buf = store.register_host_buffer(array)
        targets, _ = packed_targets(buf, [0, 1])
        targets.append((damaged_ns, prefix(50), 0, buf, size, big.size))
        with store.read_into_host(ns, targets) as read:
            with pytest.raises(auxstore.CorruptionError, match=r"targets\[6\]"):
                read.wait()
            read.wait_snapshot(prefix(1))
            read.wait_snapshot(prefix(2))
            with pytest.raises(auxstore.CorruptionError):
                read.wait_snapshot(prefix(50), ns=damaged_ns)
            with pytest.raises(auxstore.InvalidArgumentError, match="namespace, prefix"):
                read.wait_snapshot(prefix(50))  # not in the call's namespace
        check_targets(array, targets,
                      [layer_bytes(s, l) for s in (0, 1) for l in range(LAYERS)] + [PARTIAL])
        assert store.count_leading_stored(damaged_ns, [prefix(50)]) == 0  # quarantined
        buf.unregister()


def test_puts_from_registered_memory(store):
    ns = store.register_namespace("host-model", auxstore.Geometry())
    blobs = [[layer_bytes(10 + s, l) for l in range(LAYERS)] for s in range(4)]
    array = np.concatenate([b for snap in blobs for b in snap])
    buf = store.register_host_buffer(array)
    snapshots, at = [], 0
    for s, snap in enumerate(blobs):
        layers = []
        for l, b in enumerate(snap):
            layers.append((l, "opaque", buf, at, b.size))
            at += b.size
        snapshots.append((prefix(100 + s), 64, layers))
    bad = [(prefix(100), 64, [(0, "opaque", buf, at - 10, 20)])]
    with pytest.raises(auxstore.InvalidArgumentError, match=r"snapshots\[0\]\.layers\[0\]: \["):
        store.put_from_host(ns, bad)
    assert store.count_leading_stored(ns, [prefix(100)]) == 0  # nothing written
    with store.put_from_host(ns, snapshots) as put:
        assert put.wait_target(1) == sum(b.size for b in blobs[1])
        put.wait()
        assert put.finished() == [(ns, prefix(100 + s)) for s in range(4)]
    for s, snap in enumerate(blobs):
        for l, b in enumerate(snap):
            assert np.array_equal(np.frombuffer(store.get_layer(ns, prefix(100 + s), l), np.uint8), b)
    buf.unregister()


def test_one_prefix_in_two_namespaces_is_two_snapshots(store):
    ns = store.register_namespace("host-model", auxstore.Geometry())
    other = store.register_namespace("host-model-other", auxstore.Geometry())
    put_snapshots(store, ns, [0])
    # `other` holds prefix(1) too, with one layer of other bytes (no layer 1).
    theirs = layer_bytes(5, 0)
    store.put(other, prefix(1), 64, [(0, "opaque", theirs)])
    array = np.full(300_000, FILL, np.uint8)
    buf = store.register_host_buffer(array)
    targets = [(other, prefix(1), 1, buf, 0, 100_000),  # missing, and first
               (ns, prefix(1), 0, buf, 100_000, 100_000),
               (other, prefix(1), 0, buf, 200_000, 100_000)]
    with store.read_into_host(ns, targets) as read:
        read.wait_snapshot(prefix(1))  # the call's namespace: whole
        read.wait_snapshot(prefix(1), ns=ns)
        with pytest.raises(auxstore.NotFoundError, match=r"targets\[0\]"):
            read.wait_snapshot(prefix(1), ns=other)
        assert read.finished() == [(other, prefix(1)), (ns, prefix(1))]
        check_targets(array, targets, [None, layer_bytes(0, 0), theirs])
    buf.unregister()
