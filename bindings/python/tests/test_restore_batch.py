"""Many snapshots restored into device states with one handle (issue 24):
Pipeline.restore_batch on the host backend, completion by snapshot index and
layer, every byte of every state checked; a snapshot's own error beside
healthy ones; one prefix in two namespaces; a lease released with its
snapshot's restore; refusals that start nothing and hand the states back."""

import pytest

import auxstore
from conftest import prefix, random_bytes

LAYERS = 3


def layer_bytes(s, layer):
    return random_bytes(600 + 977 * s + 5003 * layer, seed=31 * s + layer).tobytes()


def put(store, ns, s, bytes_of=None):
    bytes_of = s if bytes_of is None else bytes_of
    store.put(ns, prefix(s), 64, [(l, "opaque", layer_bytes(bytes_of, l)) for l in range(LAYERS)])


def fresh(backend):
    return {l: backend.opaque_state(64 * 1024) for l in range(LAYERS)}


def check(targets, bytes_of):
    for l, state in targets.items():
        assert state.read() == layer_bytes(bytes_of, l), f"layer {l}"


def release(*target_sets):
    for t in target_sets:
        for state in t.values():
            state.release()


def test_many_snapshots_with_one_handle(store, ns, backend, pipeline):
    for s in (0, 1, 3, 4):
        put(store, ns, s)
    targets = [fresh(backend) for _ in range(5)]  # snapshot 2 is not stored
    with pipeline.restore_batch([(ns, prefix(s), targets[s]) for s in range(5)]) as batch:
        assert isinstance(batch, auxstore.RestoreBatch) and len(batch) == 5
        batch.wait_layer(1, 2)
        assert batch.layer_done(1, 2)
        batch.wait_snapshot(3)
        assert batch.snapshot_done(3)
        with pytest.raises(auxstore.NotFoundError, match=r"snapshots\[2\]"):
            batch.wait_snapshot(2)
        with pytest.raises(auxstore.NotFoundError, match=r"snapshots\[2\]"):
            batch.wait()
        assert batch.poll()
        assert batch.finished() == [0, 1, 2, 3, 4]
        assert batch.finished() == []  # each once
        with pytest.raises(IndexError):
            batch.wait_snapshot(5)
        for s in (0, 1, 3, 4):
            check(targets[s], s)
    release(*targets)  # handed back: releasing them does not block


def test_one_prefix_in_two_namespaces_and_a_lease(store, ns, backend, pipeline):
    other = store.register_namespace("restore-batch-other", auxstore.Geometry())
    put(store, ns, 7)
    put(store, other, 7, bytes_of=9)
    lease = store.lease_acquire(other, prefix(7), 60_000)
    a, b = fresh(backend), fresh(backend)
    with pipeline.restore_batch([(ns, prefix(7), a), (other, prefix(7), b, lease)]) as batch:
        batch.wait()
    check(a, 7)
    check(b, 9)
    with pytest.raises(auxstore.NotFoundError):
        store.lease_release(lease)  # released with its snapshot's restore
    release(a, b)


def test_refusals_start_nothing(store, ns, backend, pipeline):
    put(store, ns, 0)
    put(store, ns, 1)
    a, b = fresh(backend), fresh(backend)
    shared = dict(b)
    shared[2] = a[0]  # a state in two snapshots
    with pytest.raises(RuntimeError, match="appears twice"):
        pipeline.restore_batch([(ns, prefix(0), a), (ns, prefix(1), shared)])
    with pytest.raises(TypeError, match=r"snapshots\[1\]"):
        pipeline.restore_batch([(ns, prefix(0), a), (ns,)])
    with pytest.raises(auxstore.InvalidArgumentError, match="stream is 0"):
        pipeline.restore_batch([(ns, prefix(0), a)], stream=0)
    # Nothing was started and every state was handed back: they restore now.
    with pipeline.restore_batch([(ns, prefix(0), a), (ns, prefix(1), b)]) as batch:
        batch.wait()
    check(a, 0)
    check(b, 1)
    release(a, b)
