"""Pipeline: restores (blocking, futures, handles), write-behind snapshots and
shedding, the GIL released while restoring, callback-thread rules."""

import concurrent.futures
import gc
import threading
import time

import numpy as np
import pytest

import auxstore
from conftest import GEOMETRY, HD, RATIO, prefix, qsa_blob, dsa_blob, random_bytes


def put_snapshot(store, ns, p, tokens=256, seed=3):
    blobs = {0: qsa_blob(tokens, tokens // RATIO, seed), 1: dsa_blob(tokens, seed + 1),
             2: random_bytes(70_000, seed + 2)}
    store.put(ns, p, tokens, [(0, "qsa", blobs[0]), (1, "dsa", blobs[1]),
                              (2, "opaque", blobs[2])])
    return blobs


def fresh_targets(backend, weights):
    return {0: backend.qsa_state(GEOMETRY, *weights), 1: backend.dsa_state(GEOMETRY),
            2: backend.opaque_state(100_000)}


def check_restored(targets, blobs, weights, tokens=256):
    assert targets[0].counters == (tokens, tokens // RATIO)
    assert targets[1].counters == (tokens, 0)
    assert targets[2].counters == (blobs[2].nbytes, 0)
    for layer, blob in blobs.items():
        assert targets[layer].read() == blob.tobytes()
    want = auxstore.qsa_block_pool_host(GEOMETRY, blobs[0][16:], tokens, weights[0], weights[1],
                                        tokens // RATIO)
    assert targets[0].read_block_keys() == bytes(want)


def release_all(targets):
    for t in targets.values():
        t.release()


def test_restore_wait(store, ns, backend, pipeline, weights):
    blobs = put_snapshot(store, ns, prefix(1))
    t = fresh_targets(backend, weights)
    pipeline.restore_wait(ns, prefix(1), t)
    check_restored(t, blobs, weights)
    st = pipeline.stats()
    assert st.restores_ok == 1 and st.bytes_restored == sum(b.nbytes for b in blobs.values())
    assert sum(st.restore_latency_us) == 1 and st.as_dict()["restores_ok"] == 1
    # Targets must be fresh: a second restore into them is refused, nothing moves.
    with pytest.raises(auxstore.InvalidArgumentError):
        pipeline.restore_wait(ns, prefix(1), t)
    release_all(t)
    t = fresh_targets(backend, weights)
    with pytest.raises(auxstore.NotFoundError):
        pipeline.restore_wait(ns, prefix(2), t)
    assert all(x.counters == (0, 0) for x in t.values())
    with pytest.raises(auxstore.InvalidArgumentError):
        pipeline.restore_wait(ns, prefix(1), [])
    release_all(t)


def test_row_ranges_into_states_holding_the_rows_before(store, ns, backend, pipeline, weights):
    """restore_start(..., rows=(first, last)): QSA and DSA states holding rows
    [0, first) get rows [first, last); step by step, a whole restore."""
    blobs = put_snapshot(store, ns, prefix(1))
    t = fresh_targets(backend, weights)
    rows_of = {0: t[0], 1: t[1]}
    for first, last in [(0, 40), (40, 200), (200, 256)]:
        with pipeline.restore_start(ns, prefix(1), rows_of, rows=(first, last)) as h:
            h.join()
        assert t[0].counters[0] == last and t[1].counters[0] == last
    pipeline.restore_wait(ns, prefix(1), {2: t[2]})
    check_restored(t, blobs, weights)
    release_all(t)
    t = fresh_targets(backend, weights)
    with pipeline.restore_start(ns, prefix(1), {0: t[0]}, rows=(10, 20)) as h:
        with pytest.raises(auxstore.InvalidArgumentError, match="holds 0 rows"):
            h.join()
    with pipeline.restore_start(ns, prefix(1), {2: t[2]}, rows=(0, 20)) as h:
        with pytest.raises(auxstore.InvalidArgumentError, match="opaque"):
            h.join()
    with pytest.raises(TypeError, match=r"rows must be \(first, last\)"):
        pipeline.restore_start(ns, prefix(1), {0: t[0]}, rows=(1, 2, 3))
    assert all(x.counters == (0, 0) for x in t.values())
    release_all(t)


def test_restore_async_future(store, ns, backend, pipeline, weights):
    blobs = put_snapshot(store, ns, prefix(1))
    t = fresh_targets(backend, weights)
    fut = pipeline.restore_async(ns, prefix(1), list(t.items()))
    assert isinstance(fut, concurrent.futures.Future)
    assert fut.result(timeout=30) is None
    check_restored(t, blobs, weights)
    assert fut.cancel() is False  # running from the start: cancel through a handle
    release_all(t)

    t = fresh_targets(backend, weights)
    fut = pipeline.restore_async(ns, prefix(99), t)
    with pytest.raises(auxstore.NotFoundError) as info:
        fut.result(timeout=30)
    assert info.value.code == auxstore.NOT_FOUND
    assert isinstance(fut.exception(), auxstore.NotFoundError)
    assert all(x.counters == (0, 0) for x in t.values())
    release_all(t)


def test_restore_handle_layer_by_layer(store, ns, backend, pipeline, weights):
    blobs = put_snapshot(store, ns, prefix(1))
    lease = store.lease_acquire(ns, prefix(1), 60_000)
    t = fresh_targets(backend, weights)
    engine_stream = backend.create_stream()
    with pipeline.restore_start(ns, prefix(1), t, lease=lease) as h:
        assert isinstance(h, auxstore.RestoreHandle)
        seen = list(h.each_layer([2, 0, 1]))
        assert seen == [2, 0, 1] and all(h.layer_done(x) for x in seen)
        h.stream_wait_layer(0, engine_stream)
        h.stream_wait_all(engine_stream)
        h.join()
        assert h.poll() and h.done
        assert h.future.done() and h.future.result() is None  # complete when join returns
        assert h.result(timeout=1) is None
        assert h.layers_done() == [0, 1, 2]
    assert h.closed
    with pytest.raises(ValueError, match="closed"):
        h.poll()
    backend.synchronize(engine_stream)
    check_restored(t, blobs, weights)
    with pytest.raises(auxstore.NotFoundError):  # the restore released the lease
        store.lease_release(lease)
    release_all(t)

    # On the engine's own stream; the legacy default stream is refused up front.
    t = fresh_targets(backend, weights)
    with pytest.raises(auxstore.InvalidArgumentError, match="stream is 0"):
        pipeline.restore_start(ns, prefix(1), t, stream=0)
    h = pipeline.restore_start(ns, prefix(1), t, stream=engine_stream)
    h.join()
    backend.synchronize(engine_stream)
    check_restored(t, blobs, weights)
    h.release()
    release_all(t)
    backend.destroy_stream(engine_stream)

    # A handle's failure: NotFound from join, the future and wait_layer.
    t = fresh_targets(backend, weights)
    with pipeline.restore_start(ns, prefix(5), t) as h:
        with pytest.raises(auxstore.NotFoundError):
            h.wait_layer(0)
        with pytest.raises(auxstore.NotFoundError):
            h.join()
        assert isinstance(h.future.exception(), auxstore.NotFoundError)
        assert h.layers_done() == []
    release_all(t)


def test_targets_are_owned_until_done(store, ns, backend, pipeline, weights):
    blobs = put_snapshot(store, ns, prefix(1))
    # A second snapshot with a 16 MiB layer more (256 chunks through the 64 KiB
    # staging buffers): its restore runs long enough to be caught running.
    big = random_bytes(16 << 20, 11)
    store.put(ns, prefix(2), 256, [(0, "qsa", blobs[0]), (1, "dsa", blobs[1]),
                                   (2, "opaque", blobs[2]), (3, "opaque", big)])
    refused = 0
    for _ in range(5):
        t = fresh_targets(backend, weights)
        t[3] = backend.opaque_state(16 << 20)
        h = pipeline.restore_start(ns, prefix(2), t)
        # A second restore into a target is refused while the first owns it.
        try:
            h2 = pipeline.restore_start(ns, prefix(1), {0: t[0]})
        except RuntimeError as e:
            assert "owned by a running restore" in str(e)
            refused += 1
        else:
            # Only when the first restore was already done (a loaded machine):
            # the target was free again, and it is not fresh any more.
            assert h.done
            with pytest.raises(auxstore.InvalidArgumentError):
                h2.join()
            h2.release()
        # Any call on a target waits for the restore: it sees the committed counters.
        assert t[0].counters == (256, 256 // RATIO)
        h.join()
        h.release()
        check_restored({k: t[k] for k in blobs}, blobs, weights)
        assert t[3].read() == big.tobytes()
        release_all(t)
        if refused:
            break
    assert refused, "never caught a restore running"
    same = backend.opaque_state(100_000)
    with pytest.raises(RuntimeError, match="twice"):
        pipeline.restore_start(ns, prefix(1), [(2, same), (3, same)])
    same.release()


def test_cancel(store, ns, backend, weights):
    layers = [(i, "opaque", random_bytes(1 << 20, i)) for i in range(24)]
    store.put(ns, prefix(1), 1, layers)
    with auxstore.Pipeline(store, backend, staging_bytes=64 * 1024, staging_buffers=2) as p:
        targets = {i: backend.opaque_state(1 << 20) for i in range(24)}
        h = p.restore_start(ns, prefix(1), targets)
        h.cancel()
        try:
            h.join()
            cancelled = False
        except auxstore.UnavailableError:
            cancelled = True
        if cancelled:  # a cancelled restore moves no counter
            assert all(t.counters == (0, 0) for t in targets.values())
            assert isinstance(h.future.exception(), auxstore.UnavailableError)
            assert p.stats().restores_cancelled == 1
        h.release()
        release_all(targets)


def test_snapshot_write_behind_and_shedding(store, ns, backend):
    s = backend.create_stream()
    buf = backend.alloc(64 * 1024)
    data = random_bytes(64 * 1024, 9)
    backend.copy_h2d(buf, data, stream=s)
    with auxstore.Pipeline(store, backend, staging_bytes=64 * 1024) as p:
        with backend.borrow_opaque(buf, capacity=64 * 1024, size=64 * 1024) as src:
            # Ordered after the engine's copy on the same stream: no sync needed.
            assert p.snapshot(ns, prefix(1), 64, {7: src}, stream=s) is True
            backend.synchronize(s)
        p.flush()
        st = p.stats()
        assert st.snapshots_accepted == 1 and st.snapshots_written == 1
        assert st.bytes_snapshotted == 64 * 1024
    assert bytes(store.get_layer(ns, prefix(1), 7)) == data.tobytes()

    # A write-behind arena smaller than the snapshot: shed, reported as False.
    with auxstore.Pipeline(store, backend, staging_bytes=64 * 1024, snapshot_bytes=4096) as p:
        with backend.borrow_opaque(buf, capacity=64 * 1024, size=64 * 1024) as src:
            assert p.snapshot(ns, prefix(2), 64, [(7, src)], stream=s) is False
        assert p.stats().snapshots_shed == 1
        p.flush()
    assert not store.exists(ns, prefix(2))
    with auxstore.Pipeline(store, backend) as p:
        with pytest.raises(auxstore.InvalidArgumentError):
            p.snapshot(ns, prefix(3), 1, {}, stream=s)
    backend.synchronize(s)
    backend.free(buf)
    backend.destroy_stream(s)


def test_gil_released_during_restore(store, ns, backend):
    """A Python thread counts while restore_wait waits in C (a counter, not a
    clock: see test_store.test_gil_released_during_io)."""
    n = 16
    store.put(ns, prefix(1), 1, [(i, "opaque", random_bytes(2 << 20, i)) for i in range(n)])
    ticks = [0]
    in_call = threading.Event()
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            if in_call.is_set():
                ticks[0] += 1
            time.sleep(0.0005)

    with auxstore.Pipeline(store, backend, staging_bytes=64 * 1024) as p:
        th = threading.Thread(target=spin)
        th.start()
        best = 0
        used = []
        try:
            for _ in range(5):
                targets = {i: backend.opaque_state(2 << 20) for i in range(n)}
                used.append(targets)
                ticks[0] = 0
                in_call.set()
                p.restore_wait(ns, prefix(1), targets)
                in_call.clear()
                best = max(best, ticks[0])
                if best >= 10:
                    break
        finally:
            stop.set()
            th.join()
        assert best >= 10, best
        for earlier in used[:-1]:
            release_all(earlier)
        assert targets[3].counters == (2 << 20, 0)
        release_all(targets)


def test_future_callbacks_run_safely(store, ns, backend, pipeline):
    """A future's callbacks run on the pipeline thread that completed it (with
    the GIL): a call that would wait on that thread raises instead of
    deadlocking, other calls work, and an exception stays the future's."""
    n = 16
    store.put(ns, prefix(1), 1, [(i, "opaque", random_bytes(2 << 20, i)) for i in range(n)])
    for attempt in range(5):
        t = {i: backend.opaque_state(2 << 20) for i in range(n)}
        seen = {}
        done = threading.Event()

        def callback(fut):
            seen["thread"] = threading.current_thread()
            try:
                pipeline.flush()  # would wait on the very thread running this
            except RuntimeError as e:
                seen["error"] = str(e)
            seen["stats"] = pipeline.stats().restores_ok  # non-blocking calls are fine
            done.set()
            raise ValueError("an exception in a future callback is the future's to log")

        fut = pipeline.restore_async(ns, prefix(1), t)
        fut.add_done_callback(callback)
        assert done.wait(30)
        release_all(t)
        if seen["thread"] is not threading.main_thread():
            break  # (else the restore beat add_done_callback: try again)
    assert seen["thread"] is not threading.main_thread()
    assert "completion thread" in seen["error"] and seen["stats"] >= 1


def test_dropped_pipeline_still_completes_the_future(store, ns, backend, weights):
    blobs = put_snapshot(store, ns, prefix(1))
    t = fresh_targets(backend, weights)
    fut = auxstore.Pipeline(store, backend, staging_bytes=64 * 1024).restore_async(
        ns, prefix(1), t)
    gc.collect()  # the pipeline is gone: its close waited for the restore
    assert fut.result(timeout=30) is None
    check_restored(t, blobs, weights)
    release_all(t)


def test_close_waits_for_running_restores(store, ns, backend, weights):
    put_snapshot(store, ns, prefix(1))
    p = auxstore.Pipeline(store, backend, staging_bytes=64 * 1024)
    t = fresh_targets(backend, weights)
    h = p.restore_start(ns, prefix(1), t)
    p.close()  # releases the handle, then waits for the restore
    assert h.closed and h.future.done() and h.future.result() is None
    assert t[2].counters[0] == 70_000
    release_all(t)
