"""Store: open/close, namespaces, puts, lookups, reads in place, leases,
batched calls, errors per status code."""

import gc
import time

import numpy as np
import pytest

import auxstore
from conftest import GEOMETRY, prefix, put_three_layers, qsa_blob, random_bytes


def test_context_manager_and_closed(store_path):
    with auxstore.Store(store_path) as s:
        assert not s.closed
        assert s.path == store_path
        assert "Store" in repr(s)
    assert s.closed
    s.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        s.stats()


def test_error_classes_per_code():
    names = {1: "NotFoundError", 2: "CorruptionError", 3: "InvalidArgumentError",
             4: "OutOfRangeError", 5: "CapacityError", 6: "IoError", 7: "BusyError",
             8: "UnavailableError", 9: "NotSupportedError", 10: "InternalError"}
    for code, name in names.items():
        cls = getattr(auxstore, name)
        assert auxstore.error_for_code(code) is cls
        assert issubclass(cls, auxstore.AuxstoreError)
        with pytest.raises(cls) as info:
            auxstore._auxstore._raise(code, "f: something")
        assert info.value.code == code
        assert info.value.code_name == auxstore.code_name(code)
        assert info.value.message == "f: something"
        assert str(info.value) == "%s: f: something" % auxstore.code_name(code)
    assert issubclass(auxstore.InvalidArgumentError, ValueError)
    assert issubclass(auxstore.NotFoundError, LookupError)
    assert issubclass(auxstore.IoError, OSError)
    with pytest.raises(auxstore.AuxstoreError) as info:
        auxstore._auxstore._raise(99, "odd")
    assert info.value.code == 99 and info.value.code_name == "Unknown"
    assert auxstore.code_name(0) == "OK"


def test_errors_from_real_calls(store, ns, store_path):
    with pytest.raises(auxstore.NotFoundError, match="auxstore_get_manifest"):
        store.get_manifest(ns, prefix(1))
    with pytest.raises(auxstore.InvalidArgumentError, match="kind is 9"):
        store.put(ns, prefix(1), 1, [(0, 9, b"x")])
    with pytest.raises(ValueError, match="kind 'bogus'"):
        store.put(ns, prefix(1), 1, [(0, "bogus", b"x")])
    # A QSA blob of the wrong size for its header: the store refuses it.
    with pytest.raises(auxstore.CorruptionError):
        store.put(ns, prefix(1), 1, [(0, "qsa", qsa_blob(4)[:-2])])
    with pytest.raises(auxstore.BusyError):
        auxstore.Store(store_path)  # a second writer on the same directory
    with pytest.raises(auxstore.InvalidArgumentError):
        store.longest_prefix_for_tokens(ns, [1, 2, 3], 0)


def test_namespaces(store):
    a = store.register_namespace("m", GEOMETRY)
    assert store.register_namespace("m", GEOMETRY) == a  # idempotent
    b = store.register_namespace("m", GEOMETRY, weight_revision="r2")
    c = store.register_namespace("m", GEOMETRY, tp_rank=1, tp_world_size=2)
    assert len({a, b, c}) == 3
    d = store.register_namespace("m", GEOMETRY, opaque_layers=[(4, "f32", (4, 64))])
    store.put(d, prefix(1), 8, [(4, "opaque", np.zeros((4, 64), np.float32))])
    with pytest.raises(auxstore.AuxstoreError):  # the declared layer must have exactly its size
        store.put(d, prefix(2), 8, [(4, "opaque", np.zeros(10, np.float32))])
    e = store.register_namespace("m", GEOMETRY, opaque_layers=[(1, auxstore.DTYPE_BF16, [8])])
    assert e not in (a, b, c, d)
    with pytest.raises(ValueError):
        store.register_namespace("m", GEOMETRY, opaque_layers=[(1, "complex128", [8])])
    with pytest.raises(auxstore.InvalidArgumentError, match="ndim"):
        store.register_namespace("m", GEOMETRY, opaque_layers=[(1, "u8", [])])


def test_put_get_manifest_layer(store, ns):
    blobs = put_three_layers(store, ns, prefix(7))
    m = store.get_manifest(ns, prefix(7))
    assert m.token_count == 256
    assert [(l.layer, l.kind, l.bytes) for l in m.layers] == [
        (0, auxstore.KIND_QSA, blobs[0].nbytes), (1, auxstore.KIND_DSA, blobs[1].nbytes),
        (2, auxstore.KIND_OPAQUE, blobs[2].nbytes)]
    assert m.layer(2).bytes == 5000 and m.layer(9) is None
    for layer, want in blobs.items():
        got = store.get_layer(ns, prefix(7), layer)
        assert isinstance(got, memoryview)
        assert isinstance(got.obj, auxstore._auxstore.Blob)  # auxstore's memory, not a copy
        assert got == want.tobytes()
    # dict form, and prefixes as hex
    store.put(ns, prefix(8).hex(), 3, {2: ("opaque", b"abc")})
    assert bytes(store.get_layer(ns, prefix(8), 2)) == b"abc"
    store.put(ns, prefix(8), 3, {2: ("opaque", b"abc")})  # already stored: a no-op
    assert store.stats().duplicate_puts == 1
    shared = store.shared_stats()  # no shared tier: it says so, every counter 0
    assert shared.pop("shared") is False and set(shared.values()) == {0} and len(shared) == 8


def test_put_reads_buffers_in_place(store, ns):
    # Read-only buffers are fine (nothing is written to them) ...
    store.put(ns, prefix(1), 1, [(2, "opaque", b"read-only bytes")])
    ro = np.arange(64, dtype=np.uint8)
    ro.flags.writeable = False
    store.put(ns, prefix(2), 1, [(2, "opaque", ro)])
    store.put(ns, prefix(3), 1, [(2, "opaque", memoryview(bytearray(b"xyz")))])
    # ... and a non-contiguous one is refused rather than silently copied.
    with pytest.raises(ValueError, match="C-contiguous"):
        store.put(ns, prefix(4), 1, [(2, "opaque", np.arange(64, dtype=np.uint8)[::2])])
    with pytest.raises(TypeError):
        store.put(ns, prefix(4), 1, [(2, "opaque", "a str is not a buffer")])
    assert bytes(store.get_layer(ns, prefix(2), 2)) == ro.tobytes()


def test_read_layers_into_caller_buffers(store, ns):
    blobs = put_three_layers(store, ns, prefix(9))
    a = np.zeros(blobs[0].nbytes, np.uint8)
    b = bytearray(blobs[1].nbytes)
    big = bytearray(10000)
    window = memoryview(big)[100:5100]  # a slice of a larger buffer
    address = a.ctypes.data
    sizes = store.read_layers_into(ns, prefix(9), {0: a, 1: b, 2: window})
    assert sizes == {0: blobs[0].nbytes, 1: blobs[1].nbytes, 2: 5000}
    # The bytes landed in the very buffers given: no intermediate object.
    assert a.ctypes.data == address and np.array_equal(a, blobs[0])
    assert bytes(b) == blobs[1].tobytes()
    assert bytes(big[100:5100]) == blobs[2].tobytes()
    assert big[:100] == bytearray(100) and big[5100:] == bytearray(4900)
    # Into an array of another dtype (bf16 as uint16): it is the bytes that count.
    keys = np.zeros((blobs[0].nbytes) // 2, np.uint16)
    assert store.read_layer_into(ns, prefix(9), 0, keys) == blobs[0].nbytes
    assert keys.tobytes() == blobs[0].tobytes()
    # Too small: OutOfRange before anything is read.
    small = bytearray(10)
    with pytest.raises(auxstore.OutOfRangeError):
        store.read_layers_into(ns, prefix(9), [(2, small)])
    assert small == bytearray(10)
    with pytest.raises(TypeError, match="writable"):
        store.read_layers_into(ns, prefix(9), {2: bytes(5000)})
    with pytest.raises(auxstore.NotFoundError):
        store.read_layers_into(ns, prefix(9), {5: bytearray(10)})


def test_read_lanes_copy_multi_mib_layers_and_are_bounded(store_path):
    # Three layers of over a MiB each: 3 lanes copy them at once.
    with auxstore.Store(store_path, read_lanes=3) as s:
        ns = s.register_namespace("test-model", GEOMETRY, weight_revision="r1")
        blobs = {i: random_bytes((1 << 20) + 1000 * i, 40 + i) for i in range(3)}
        s.put(ns, prefix(1), 1, [(i, "opaque", b) for i, b in blobs.items()])
        dests = {i: bytearray(b.nbytes) for i, b in blobs.items()}
        assert s.read_layers_into(ns, prefix(1), dests) == {i: b.nbytes for i, b in blobs.items()}
        for i, b in blobs.items():
            assert bytes(dests[i]) == b.tobytes()
    with pytest.raises(auxstore.InvalidArgumentError, match="read lanes is 65, at most 64"):
        auxstore.Store(store_path + "-65", read_lanes=65)
    with pytest.raises(ValueError, match="read_lanes"):
        auxstore.Store(store_path + "-neg", read_lanes=-1)


def test_lookups(store, ns):
    tokens = np.arange(1000, 1000 + 640, dtype=np.uint32)
    hashes = auxstore.prefix_hash(tokens, 16, 7)
    assert len(hashes) == 40 and all(len(h) == 16 for h in hashes)
    assert auxstore.prefix_hash(list(map(int, tokens)), 16, 7) == hashes  # list or array
    assert auxstore.prefix_hash(tokens.astype(np.int64), 16, 7) == hashes
    assert auxstore.prefix_hash(tokens, 16, 8) != hashes  # salted
    digest = auxstore.token_digest(tokens[:320], 7)
    assert len(digest) == 16
    store.put(ns, hashes[19], 320, [(2, "opaque", b"p")], token_digest=digest)
    store.put(ns, hashes[9], 160, [(2, "opaque", b"q")])

    m = store.longest_prefix(ns, hashes)
    assert m.index == 19 and m.prefix == hashes[19] and m.lease == 0 and m.tokens is None
    assert store.longest_prefix(ns, hashes[:12]).index == 9
    assert store.longest_prefix(ns, hashes[:5]) is None
    m = store.longest_prefix_for_tokens(ns, tokens, 16, 7)
    assert (m.prefix, m.tokens, m.index) == (hashes[19], 320, 19)
    assert store.longest_prefix_for_tokens(ns, tokens[:200], 16, 7).tokens == 160
    assert store.longest_prefix_for_tokens(ns, tokens[:150], 16, 7) is None
    arr = np.stack([np.frombuffer(h, np.uint8) for h in hashes])  # an (n, 16) array
    assert store.longest_prefix(ns, arr).index == 19

    assert store.get_manifests(ns, hashes[8:11]) == [None, 160, None]
    assert store.exists_many(ns, [hashes[9], hashes[19], hashes[0]]) == [True, True, False]
    assert store.exists(ns, hashes[9]) and not store.exists(ns, hashes[10])
    assert store.count_leading_stored(ns, [hashes[9], hashes[19], hashes[0], hashes[9]]) == 2
    assert store.count_leading_stored(ns, []) == 0
    assert store.count_leading_stored(ns, arr) == 0
    with pytest.raises(ValueError, match="16"):
        store.exists(ns, b"short")
    with pytest.raises(TypeError):
        store.count_leading_stored(ns, b"x" * 32)  # bytes are one prefix, not many


def test_leases(store, ns):
    store.put(ns, prefix(1), 1, [(2, "opaque", b"a")])
    lease = store.lease_acquire(ns, prefix(1), 60_000)
    assert lease != 0 and store.stats().leases == 1
    store.lease_release(lease)
    with pytest.raises(auxstore.NotFoundError):
        store.lease_release(lease)
    with store.lease(ns, prefix(1), 60_000) as l:
        assert isinstance(l, int) and store.stats().leases == 1
    assert store.stats().leases == 0 and l.release() is False
    with pytest.raises(auxstore.NotFoundError):
        store.lease_acquire(ns, prefix(2), 1000)
    m = store.longest_prefix(ns, [prefix(1)], lease_ms=60_000)
    assert m.lease != 0 and store.stats().leases == 1
    assert store.release_leases([m.lease, m.lease, 0]) == 1
    # All or nothing: a missing prefix releases the leases already taken.
    with pytest.raises(auxstore.NotFoundError):
        store.acquire_leases(ns, [prefix(1), prefix(3)], 60_000)
    assert store.stats().leases == 0
    leases = store.acquire_leases(ns, [prefix(1), prefix(1)], 60_000)
    assert len(leases) == 2 and store.stats().leases == 2
    assert store.release_leases(leases) == 2


def test_lease_holds_against_eviction(store_path):
    with auxstore.Store(store_path, capacity_bytes=300_000) as s:
        ns = s.register_namespace("m")
        s.put(ns, prefix(1), 1, [(9, "opaque", random_bytes(100_000, 1))])
        lease = s.lease_acquire(ns, prefix(1), 60_000)
        for i in range(2, 6):
            s.put(ns, prefix(i), 1, [(9, "opaque", random_bytes(100_000, i))])
        deadline = time.monotonic() + 20
        while s.stats().evictions < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert s.stats().evictions >= 2
        assert s.exists(ns, prefix(1))  # leased: never the victim
        s.lease_release(lease)


def test_batched_put_and_read(store, ns):
    pages = [random_bytes(3000, i) for i in range(4)]
    ok = store.batch_put(ns, [(prefix(i), 16 * (i + 1), [(2, "opaque", pages[i])])
                              for i in range(4)])
    assert ok == [True] * 4
    dests = [np.zeros(3000, np.uint8) for _ in range(5)]
    got = store.batch_read_into(ns, [(prefix(i), {2: dests[i]}) for i in range(5)])
    assert got == [True, True, True, True, False]  # the fifth page is not stored
    for i in range(4):
        assert np.array_equal(dests[i], pages[i])
    with pytest.raises(auxstore.OutOfRangeError):  # a caller bug raises
        store.batch_read_into(ns, [(prefix(0), {2: bytearray(1)})])


def test_batched_put_tries_every_snapshot_before_it_raises(store, ns):
    pages = [random_bytes(2000, 10 + i) for i in range(3)]
    items = [(prefix(10 + i), 16, [(2, "opaque", pages[i])]) for i in range(3)]
    items[1] = (prefix(11), 16, [(2, "qsa", b"not a QSA blob")])
    with pytest.raises(auxstore.AuxstoreError, match=r"snapshots\[1\]"):
        store.batch_put(ns, items)
    assert store.exists(ns, prefix(10)) and store.exists(ns, prefix(12))
    assert not store.exists(ns, prefix(11))
    assert store.get_layer(ns, prefix(12), 2) == pages[2]


def test_erase_flush_stats_read_only(store_path):
    with auxstore.Store(store_path, durability="async") as s:
        ns = s.register_namespace("m")
        s.put(ns, prefix(1), 1, [(2, "opaque", b"a" * 10)])
        s.put(ns, prefix(2), 1, [(2, "opaque", b"b" * 10)])
        s.flush()
        s.erase(ns, prefix(2))
        s.erase(ns, prefix(3))  # not stored: fine
        st = s.stats()
        assert st.snapshots == 1 and st.puts == 2 and st.payload_bytes == 10
        assert st.as_dict()["snapshots"] == 1 and not st.fenced
    with auxstore.Store(store_path, read_only=True) as r:
        assert r.read_only
        ns = r.register_namespace("m")
        assert bytes(r.get_layer(ns, prefix(1), 2)) == b"a" * 10
        with pytest.raises(auxstore.UnavailableError):
            r.put(ns, prefix(5), 1, [(2, "opaque", b"x")])
    with pytest.raises(auxstore.AuxstoreError):
        auxstore.Store(store_path + "-missing", create_if_missing=False)
    with pytest.raises(ValueError):
        auxstore.Store(store_path, durability="sometimes")


def test_store_gc_closes(store_path):
    s = auxstore.Store(store_path)
    del s
    gc.collect()
    with auxstore.Store(store_path):  # the writer's lock went with the object
        pass


def test_gil_released_during_io(store, ns):
    """Another Python thread runs while put / read_layers_into are in C.

    A counter, not a clock: a thread spinning in Python counts while the calls
    run. Holding the GIL through the calls would leave at most the ticks of a
    switch or two inside the window, whatever its length; releasing it lets
    the spinner count on. Up to five tries (on a loaded machine the spinner may
    get no core during one); none may be needed twice."""
    import threading

    data = random_bytes(48 << 20, 3)
    out = np.empty_like(data)
    ticks = [0]
    in_call = threading.Event()
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            if in_call.is_set():
                ticks[0] += 1
            time.sleep(0.0005)

    t = threading.Thread(target=spin)
    t.start()
    best = 0
    try:
        for attempt in range(5):
            ticks[0] = 0
            in_call.set()
            store.put(ns, prefix(1 + attempt), 1, [(2, "opaque", data)])
            store.read_layers_into(ns, prefix(1 + attempt), {2: out})
            in_call.clear()
            best = max(best, ticks[0])
            if best >= 10:
                break
    finally:
        stop.set()
        t.join()
    assert best >= 10, best
    assert np.array_equal(out, data)


def test_shared_tier_uri_is_checked_before_the_directory_is_touched(tmp_path):
    path = tmp_path / "store"
    with pytest.raises(auxstore.InvalidArgumentError, match="conf=PATH"):
        auxstore.Store(str(path), shared="rados://auxstore")
    assert not path.exists()
    with pytest.raises(ValueError, match="shared_write 'sideways'"):
        auxstore.Store(str(path), shared="rados://auxstore?conf=/x", shared_write="sideways")
    assert not path.exists()
    with pytest.raises(TypeError):
        auxstore.Store(str(path), shared_local_copies="no")
    assert not path.exists()
    # Without a pool the option changes nothing.
    with auxstore.Store(str(path), shared_local_copies=False) as s:
        assert s.stats().snapshots == 0
