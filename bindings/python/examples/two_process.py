#!/usr/bin/env python3
"""auxstore from Python, across a restart: snapshot in one process, restore in
the next (the flow of tests/capi/engine_flow_test.c).

    two_process.py              runs `write DIR`, then `read DIR`, in two
                                child processes; exit 0 when every check passed
    two_process.py write DIR    process 1, the engine before the restart: fills
                                its own (engine-owned) buffers on the host
                                backend as its ingest would, snapshots them
                                write-behind from its stream, flushes, and exits
                                without closing anything (os._exit)
    two_process.py read DIR     process 2, after the restart: looks each
                                request's longest stored prefix up with a lease,
                                restores into fresh engine buffers layer by
                                layer (the engine's stream waiting on each),
                                checks every byte, the counters, the re-pooled
                                QSA block keys and the pipeline's counters

Run it with PYTHONPATH=<build>/bindings/python:<src>/bindings/python (ctest
python_two_process_example does).
"""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import auxstore

HD, MAX_TOKENS, RATIO, ROT = 64, 1024, 8, 32
DSA_DIM, DSA_CAP = 32, 1024
BLOCK, TOKENS, SALT = 16, 640, 0x5EED
OPAQUE_SHAPE = (4, 64)  # layer 2: f32, declared in the namespace
OPAQUE_BYTES = 4 * 64 * 4
SEQUENCES = (1, 2, 3)
GEOMETRY = auxstore.Geometry(qsa_hd=HD, qsa_max_tokens=MAX_TOKENS, qsa_ratio=RATIO, qsa_rot=ROT,
                             qsa_theta=10000.0, qsa_eps=1e-6, dsa_index_head_dim=DSA_DIM,
                             dsa_capacity=DSA_CAP)
RAW_BYTES = MAX_TOKENS * HD * 2
BLOCK_BYTES = MAX_TOKENS // RATIO * HD * 2
ROW_BYTES = DSA_DIM * 2


def bf16(n, seed):
    f = np.random.default_rng(seed).uniform(-2, 2, n).astype(np.float32)
    return (f.view(np.uint32) >> 16).astype(np.uint16)


def ingest(seed):
    """What the engine's kernels computed for sequence `seed` (deterministic)."""
    rng = np.random.default_rng(seed)
    return {
        "raw": [bf16(TOKENS * HD, seed * 10), bf16(TOKENS * HD, seed * 10 + 3)],
        "k_normed": rng.integers(0, 256, TOKENS * ROW_BYTES, dtype=np.uint8),
        "gate": rng.integers(0, 256, TOKENS * ROW_BYTES, dtype=np.uint8),
        "valid": rng.integers(0, 2, TOKENS, dtype=np.uint8),
        "opaque": rng.standard_normal(OPAQUE_SHAPE).astype(np.float32),
    }


WEIGHTS = (bf16(HD, 1000), bf16(HD, 1001))


def tokens_of(seed, n=TOKENS):
    return np.arange(n, dtype=np.uint32) + np.uint32(seed * 100000)


def open_store(directory):
    store = auxstore.Store(os.path.join(directory, "store"), chunk_bytes=64 * 1024)
    ns = store.register_namespace(
        "two-process", GEOMETRY, weight_revision="rev-7", tp_rank=0, tp_world_size=1,
        opaque_layers=[(2, "f32", OPAQUE_SHAPE)])
    return store, ns


class Engine:
    """One sequence's device buffers, owned by the engine (here: host-backend
    memory from Backend.buffer), wrapped in borrowed states."""

    def __init__(self, backend, stream):
        self.backend, self.stream = backend, stream
        self.raw = [backend.buffer(RAW_BYTES) for _ in range(2)]
        self.block = [backend.buffer(BLOCK_BYTES) for _ in range(2)]
        self.k_pool_k, self.k_norm_w = backend.buffer(HD * 2), backend.buffer(HD * 2)
        self.k_normed = backend.buffer(DSA_CAP * ROW_BYTES)
        self.gate = backend.buffer(DSA_CAP * ROW_BYTES)
        self.valid = backend.buffer(DSA_CAP)
        self.opaque = backend.buffer(OPAQUE_BYTES)
        self.k_pool_k.write(WEIGHTS[0], stream=stream)
        self.k_norm_w.write(WEIGHTS[1], stream=stream)
        self.states = {}

    def ingest(self, seed):
        data = ingest(seed)
        for i in range(2):
            self.raw[i].write(data["raw"][i], stream=self.stream)
        self.k_normed.write(data["k_normed"], stream=self.stream)
        self.gate.write(data["gate"], stream=self.stream)
        self.valid.write(data["valid"], stream=self.stream)
        self.opaque.write(data["opaque"], stream=self.stream)

    def borrow(self, tokens, pooled, opaque_size):
        b = self.backend
        qsa = [b.borrow_qsa(GEOMETRY, raw_keys=self.raw[i], raw_keys_bytes=RAW_BYTES,
                            block_keys=self.block[i], block_keys_bytes=BLOCK_BYTES,
                            k_pool_k=self.k_pool_k, k_norm_w=self.k_norm_w, ingested=tokens,
                            pooled=pooled) for i in range(2)]
        dsa = b.borrow_dsa(GEOMETRY, capacity_rows=DSA_CAP, k_normed=self.k_normed,
                           k_normed_bytes=DSA_CAP * ROW_BYTES, gate=self.gate,
                           gate_bytes=DSA_CAP * ROW_BYTES, valid=self.valid,
                           valid_bytes=DSA_CAP, len=tokens)
        op = b.borrow_opaque(self.opaque, capacity=OPAQUE_BYTES, size=opaque_size)
        # Layers 0 and 3 QSA, 1 DSA, 2 opaque.
        self.states = {0: qsa[0], 1: dsa, 2: op, 3: qsa[1]}
        return self.states

    def close(self):
        for s in self.states.values():
            s.release()  # the handle only: the buffers are the engine's
        for buf in (*self.raw, *self.block, self.k_pool_k, self.k_norm_w, self.k_normed,
                    self.gate, self.valid, self.opaque):
            buf.free()


def run_write(directory):
    store, ns = open_store(directory)
    backend = auxstore.Backend("host")
    stream = backend.stream()
    pipeline = auxstore.Pipeline(store, backend, staging_bytes=64 * 1024,
                                 snapshot_bytes=8 << 20)
    for seed in SEQUENCES:
        engine = Engine(backend, stream)
        engine.ingest(seed)
        sources = engine.borrow(TOKENS, TOKENS // RATIO, OPAQUE_BYTES)
        assert all(s.borrowed for s in sources.values())
        p = auxstore.prefix_hash(tokens_of(seed), BLOCK, SALT)[-1]
        # Ordered after the ingest's copies on the same stream: no sync needed.
        # False would mean shed (queue or memory full): the engine goes on.
        accepted = pipeline.snapshot(ns, p, TOKENS, sources, stream=stream)
        assert accepted, "snapshot shed"
        stream.synchronize()  # the copies passed: the buffers are free again
        engine.close()
    pipeline.flush()
    st = pipeline.stats()
    assert st.snapshots_written == len(SEQUENCES) and st.snapshots_shed == 0, st
    print("write: %d snapshots written behind (%d bytes)" % (st.snapshots_written,
                                                             st.bytes_snapshotted))
    sys.stdout.flush()
    # Sync durability: flushed snapshots survive a process that never closes.
    os._exit(0)


def read_device(backend, buf, nbytes, stream):
    return np.asarray(buf.read(stream=stream, nbytes=nbytes))


def run_read(directory):
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print("FAILED:", what, file=sys.stderr)

    store, ns = open_store(directory)
    with store, auxstore.Backend("host") as backend, backend.stream() as stream, \
            auxstore.Pipeline(store, backend, staging_bytes=64 * 1024) as pipeline:
        for seed in SEQUENCES:
            request = tokens_of(seed, TOKENS + 40)  # the snapshot's tokens, and then some
            match = store.longest_prefix_for_tokens(ns, request, BLOCK, SALT, lease_ms=60_000)
            check(match is not None and match.tokens == TOKENS and match.lease != 0,
                  "seq %d: longest prefix %r" % (seed, match))
            engine = Engine(backend, stream)
            targets = engine.borrow(0, 0, 0)  # fresh engine buffers
            with pipeline.restore_start(ns, match.prefix, targets, stream=stream,
                                        lease=match.lease) as h:
                for layer in h.each_layer([0, 1, 2, 3]):
                    # The engine's attention for `layer` could be enqueued now.
                    h.stream_wait_layer(layer, stream)
                    check(h.layer_done(layer), "seq %d: layer %d done" % (seed, layer))
                h.join()
                check(h.layers_done() == [0, 1, 2, 3], "seq %d: layers done" % seed)
                check(h.future.result() is None, "seq %d: future" % seed)
            stream.synchronize()
            want = ingest(seed)
            for i, layer in enumerate((0, 3)):
                count, pooled = targets[layer].counters
                check((count, pooled) == (TOKENS, TOKENS // RATIO),
                      "seq %d: QSA counters %r" % (seed, (count, pooled)))
                raw = read_device(backend, engine.raw[i], TOKENS * HD * 2, stream)
                check(np.array_equal(raw.view(np.uint16), want["raw"][i]),
                      "seq %d: QSA raw keys, layer %d" % (seed, layer))
                keys = read_device(backend, engine.block[i], TOKENS // RATIO * HD * 2, stream)
                ref = auxstore.qsa_block_pool_host(GEOMETRY, want["raw"][i], TOKENS, *WEIGHTS,
                                                   TOKENS // RATIO)
                check(keys.tobytes() == bytes(ref),
                      "seq %d: re-pooled block keys, layer %d" % (seed, layer))
            check(targets[1].counters == (TOKENS, 0), "seq %d: DSA len" % seed)
            for name, buf in (("k_normed", engine.k_normed), ("gate", engine.gate),
                              ("valid", engine.valid)):
                got = read_device(backend, buf, want[name].nbytes, stream)
                check(np.array_equal(got, want[name]), "seq %d: DSA %s" % (seed, name))
            check(targets[2].counters == (OPAQUE_BYTES, 0), "seq %d: opaque size" % seed)
            got = read_device(backend, engine.opaque, OPAQUE_BYTES, stream)
            check(got.tobytes() == want["opaque"].tobytes(), "seq %d: opaque bytes" % seed)
            try:
                store.lease_release(match.lease)
                check(False, "seq %d: the restore should have released its lease" % seed)
            except auxstore.NotFoundError:
                pass
            engine.close()
        ps, ss = pipeline.stats(), store.stats()
        check(ps.restores_ok == len(SEQUENCES) and ps.restores_failed == 0,
              "pipeline counters %r" % ps)
        check(ss.snapshots == len(SEQUENCES) and ss.leases == 0, "store counters %r" % ss)
        print("read: %d restores, %d bytes, every byte checked; hits %d" %
              (ps.restores_ok, ps.bytes_restored, ss.hits))
    return 1 if failures else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "write":
        return run_write(argv[2])
    if len(argv) == 3 and argv[1] == "read":
        return run_read(argv[2])
    directory = tempfile.mkdtemp(prefix="auxstore-py-two-process-")
    try:
        for mode in ("write", "read"):
            rc = subprocess.call([sys.executable, os.path.abspath(__file__), mode, directory])
            if rc != 0:
                print("two_process: %s failed (%d)" % (mode, rc), file=sys.stderr)
                return rc
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print("two_process: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
