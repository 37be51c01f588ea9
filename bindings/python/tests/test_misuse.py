"""Misuse from Python never crashes the process and never raises pybind11's
"Unable to cast" RuntimeError: None, object and structured dtypes, negative,
too-large and wrongly-typed values raise TypeError, ValueError or
OverflowError naming the argument, and the store verifies afterwards.

The calls that used to crash the interpreter run in a child process each, so
one regression cannot hide the others."""

import inspect
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import auxstore
from conftest import GEOMETRY, prefix

# The child's world: a store with one opaque snapshot, a host backend, a
# pipeline, a stream and a state.
CHILD_SETUP = textwrap.dedent(r'''
    import json, sys
    import numpy as np
    import auxstore
    path = sys.argv[1]
    g = auxstore.Geometry(qsa_hd=64, qsa_max_tokens=1024, qsa_ratio=8, qsa_rot=32,
                          qsa_theta=10000.0, qsa_eps=1e-6, dsa_index_head_dim=32,
                          dsa_capacity=1024)
    store = auxstore.Store(path)
    ns = store.register_namespace("m", g, opaque_layers=[(2, "u8", (4,))])
    be = auxstore.Backend("host")
    pl = auxstore.Pipeline(store, be)
    P = b"\x01" * 16
    store.put(ns, P, 16, [(2, "opaque", b"abcd")])
    state = be.opaque_state(4)
    stream = be.create_stream()
    result = {"raised": None, "message": None}
    try:
        exec(sys.argv[2])
    except BaseException as e:
        result = {"raised": type(e).__name__, "message": str(e)}
    # The store still serves, and closes cleanly, after the misuse.
    out = bytearray(4)
    store.read_layers_into(ns, P, {2: out})
    result["intact"] = bytes(out) == b"abcd"
    pl.close(); state.close(); be.close(); store.close()
    print(json.dumps(result))
''')


def cli():
    """The auxstore CLI: $AUXSTORE_CLI (ctest sets it), else <build>/tools/auxstore."""
    if os.environ.get("AUXSTORE_CLI"):
        return os.environ["AUXSTORE_CLI"]
    # The module is built into <build>/bindings/python/auxstore/.
    guess = pathlib.Path(auxstore._auxstore.__file__).resolve().parents[3] / "tools" / "auxstore"
    if not guess.exists():
        pytest.skip("no auxstore CLI to verify with (set AUXSTORE_CLI)")
    return str(guess)


def verify(path):
    r = subprocess.run([cli(), "verify", path], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.stdout, r.stderr)


def run_child(tmp_path, code):
    """Runs `code` in a child process after CHILD_SETUP; returns what it raised."""
    path = str(tmp_path / "child-store")
    r = subprocess.run([sys.executable, "-c", CHILD_SETUP, path, code], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, "child died (rc %d): %s" % (r.returncode, r.stderr[-2000:])
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["intact"], result
    verify(path)
    return result


# (call, exception, words the message must contain). Each crashed the
# interpreter (SIGSEGV) before.
CRASHERS = {
    "restore_wait_none": ("pl.restore_wait(ns, P, {2: None})", "TypeError", "targets[2]"),
    "restore_async_none": ("pl.restore_async(ns, P, {2: None}).result()", "TypeError",
                           "targets[2]"),
    "restore_start_none": ("pl.restore_start(ns, P, [(2, None)]).join()", "TypeError",
                           "targets[2]"),
    "snapshot_none": ("pl.snapshot(ns, b'\\x02' * 16, 16, {0: None}, stream=stream)",
                      "TypeError", "sources[0]"),
    "alloc_huge": ("p = be.alloc(2**64 - 1); be.copy_h2d(p, bytes(1 << 20), stream=stream); "
                   "be.synchronize(stream)", "OverflowError", "nbytes"),
    "opaque_state_huge": ("s = be.opaque_state(2**64 - 1); s.load(bytes(1 << 20))",
                          "OverflowError", "capacity"),
    "read_into_object_array": ("a = np.array([object() for _ in range(4)], dtype=object); "
                               "store.read_layers_into(ns, P, {2: a}); print(a)",
                               "TypeError", "dests[2]"),
    "put_object_array": ("store.put(ns, b'\\x02' * 16, 1, [(2, 'opaque', "
                         "np.array([object() for _ in range(4)], dtype=object)[:1])])",
                         "TypeError", "layers[0] data"),
    "pipeline_of_none": ("auxstore.Pipeline(None, be)", "TypeError", "store"),
    "pipeline_of_none_backend": ("auxstore.Pipeline(store, None)", "TypeError", "backend"),
}


@pytest.mark.parametrize("case", sorted(CRASHERS))
def test_former_crashers_raise_in_a_child(tmp_path, case):
    code, exc, words = CRASHERS[case]
    result = run_child(tmp_path, code)
    assert result["raised"] == exc, result
    assert words in result["message"], result


# (call, exception class, words in the message). Each raised pybind11's
# RuntimeError "Unable to cast Python instance to C++ type" before.
def cast_cases(store, ns, backend, pipeline, state, stream, store_path):
    p = prefix(1)
    return [
        (lambda: store.put(ns, p, 1, [(-1, "opaque", b"x")]), ValueError, "layers[0] layer"),
        (lambda: store.put(ns, p, 1, [(2**40, "opaque", b"x")]), OverflowError,
         "layers[0] layer"),
        (lambda: store.put(ns, p, 1, [("zero", "opaque", b"x")]), TypeError, "layers[0] layer"),
        (lambda: store.put(ns, p, 1, {"zero": ("opaque", b"x")}), TypeError, "layers layer"),
        (lambda: store.put(ns, p, 1, [(2, -1, b"x")]), ValueError, "layers[0] kind"),
        (lambda: store.put(ns, p, 1, [(2, "opaque")]), ValueError, "layers[0]"),
        (lambda: store.put(ns, p, 1, [7]), TypeError, "layers[0]"),
        (lambda: store.put(ns, p, 1, None), TypeError, "layers"),
        (lambda: store.batch_put(ns, [(p, -1, [(2, "opaque", b"x")])]), ValueError,
         "items[0] token_count"),
        (lambda: store.batch_put(ns, [(p, 1)]), ValueError, "items[0]"),
        (lambda: store.batch_read_into(ns, [(p, {2: 5})]), TypeError, "items[0] dests[2]"),
        (lambda: store.read_layers_into(ns, p, {-1: bytearray(8)}), ValueError, "dests layer"),
        (lambda: store.read_layers_into(ns, p, [(2,)]), ValueError, "dests[0]"),
        (lambda: pipeline.restore_wait(ns, p, {2: b"bytes"}), TypeError, "targets[2]"),
        (lambda: pipeline.restore_wait(ns, p, None), TypeError, "targets"),
        (lambda: auxstore.Store(store_path + "-2", chunk_bytes=-1), ValueError, "chunk_bytes"),
        (lambda: auxstore.Store(store_path + "-3", durability=None), TypeError, "durability"),
        (lambda: backend.copy_d2h(bytearray(8), backend.alloc(8), stream=stream, nbytes=-1),
         ValueError, "nbytes"),
        (lambda: backend.read(backend.alloc(8), -1, stream=stream), ValueError, "nbytes"),
        (lambda: backend.opaque_state(-1), ValueError, "capacity"),
        (lambda: backend.borrow_opaque(backend.alloc(8), capacity=2**64 - 1), OverflowError,
         "capacity"),
        (lambda: store.register_namespace("m2", GEOMETRY, opaque_layers=[(2, "f32", (-1,))]),
         ValueError, "opaque_layers[0] shape[0]"),
        (lambda: store.register_namespace("m2", GEOMETRY, opaque_layers=[(2, "f32", None)]),
         TypeError, "opaque_layers[0] shape"),
        (lambda: store.register_namespace("m2", GEOMETRY, opaque_layers=[(-2, "f32", 4)]),
         ValueError, "opaque_layers[0] layer"),
        (lambda: store.register_namespace("m2", GEOMETRY, opaque_layers=[(2, -3, 4)]),
         ValueError, "dtype"),
        (lambda: auxstore.prefix_hash([1, -2, 3], 1), ValueError, "tokens[1]"),
        (lambda: auxstore.prefix_hash(None, 1), TypeError, "tokens"),
        (lambda: store.exists_many(ns, None), TypeError, "prefixes"),
        (lambda: auxstore.Backend("host", device="zero"), TypeError, "device"),
        # Top-level integer arguments name themselves too.
        (lambda: store.read_layer_into(ns, p, -1, bytearray(8)), ValueError, "layer is -1"),
        (lambda: store.read_layer_into(ns, p, 2**40, bytearray(8)), OverflowError, "layer"),
        (lambda: store.read_layer_into(ns, p, "zero", bytearray(8)), TypeError, "layer"),
        (lambda: store.get_layer(ns, p, -1), ValueError, "layer"),
        (lambda: store.exists(None, p), TypeError, "ns must be an int"),
        (lambda: store.lease_acquire(ns, p, -5), ValueError, "lease_ms"),
        (lambda: store.put(ns, p, -1, [(2, "opaque", b"x")]), ValueError, "token_count"),
        (lambda: backend.synchronize(-1), ValueError, "stream"),
        (lambda: backend.borrow_opaque(-8, capacity=8), ValueError, "buffer"),
        (lambda: state.set_counters(-1), ValueError, "count"),
        (lambda: auxstore.prefix_hash([1, 2], -1), ValueError, "block_size"),
        (lambda: auxstore.Store(store_path + "-4", capacity_bytes=-1), ValueError,
         "capacity_bytes"),
        (lambda: auxstore.Pipeline(store, backend, staging_bytes=-3), ValueError,
         "staging_bytes"),
    ]


def test_bad_values_name_the_argument(store, ns, backend, pipeline, store_path):
    store.put(ns, prefix(1), 16, [(2, "opaque", b"abcd")])
    with backend.opaque_state(4) as state, backend.stream() as stream:
        for i, (call, exc, words) in enumerate(
                cast_cases(store, ns, backend, pipeline, state, stream, store_path)):
            with pytest.raises(exc) as info:
                call()
            assert words in str(info.value), (i, str(info.value))
            assert "Unable to cast" not in str(info.value)
        # Nothing was written by any of them, and the snapshot still reads.
        out = bytearray(4)
        store.read_layers_into(ns, prefix(1), {2: out})
        assert bytes(out) == b"abcd"
        assert store.stats().snapshots == 1
    pipeline.close()
    store.close()
    verify(store_path)


def test_object_and_structured_dtypes_are_not_bytes(store, ns, backend, store_path):
    objects = np.array([object() for _ in range(4)], dtype=object)
    structured = np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")])
    subarray = np.zeros(2, dtype=("<i4", (2,)))
    for bad in (objects, structured):
        with pytest.raises(TypeError, match="layers\\[0\\] data"):
            store.put(ns, prefix(2), 1, [(2, "opaque", bad)])
        with pytest.raises(TypeError, match="dests\\[2\\]"):
            store.read_layers_into(ns, prefix(2), {2: bad})
        with pytest.raises(TypeError, match="buffer"):
            store.read_layer_into(ns, prefix(2), 2, bad)
        with pytest.raises(TypeError, match="src"):
            backend.copy_h2d(backend.alloc(64), bad, stream=0)
        with pytest.raises(TypeError, match="dst"):
            backend.copy_d2h(bad, backend.alloc(64), stream=0)
        with pytest.raises(TypeError, match="prefix"):
            store.exists(ns, bad)
    # Plain dtypes of any kind are bytes (a sub-array dtype is plain int32s).
    goods = (np.arange(4, dtype=np.float32), np.arange(8, dtype=np.complex64),
             np.array([b"ab", b"cd", b"ef"], "S4"), subarray + 7)
    for i, good in enumerate(goods):
        store.put(ns, prefix(10 + i), 1, [(2, "opaque", good)])
        back = np.empty_like(good)
        store.read_layers_into(ns, prefix(10 + i), {2: back})
        assert back.tobytes() == good.tobytes()
    assert not store.exists(ns, prefix(2))
    store.close()
    verify(store_path)


def test_strings_with_nul_refused(tmp_path, store, ns):
    target = tmp_path / "x"
    with pytest.raises(ValueError, match="path contains a NUL"):
        auxstore.Store(str(target) + "\0y")
    assert not target.exists()  # "x\0y" used to open "x"
    with pytest.raises(ValueError, match="model_id"):
        store.register_namespace("model\0evil", GEOMETRY)
    with pytest.raises(ValueError, match="weight_revision"):
        store.register_namespace("model", GEOMETRY, weight_revision="r\x001")
    with pytest.raises(ValueError, match="labels"):
        store.metrics_text(labels='a="b\0"')


# Every argument of every public call, given None, a negative int, 2**64, a
# str with a NUL, an object array or a float, with good values for the other
# arguments: an exception (TypeError, ValueError, OverflowError or an
# AuxstoreError) or success, never a crash or pybind11's "Unable to cast".
# One child process per class; it says which call it is in before each.
FUZZ_CHILD = CHILD_SETUP.split("result = {")[0] + textwrap.dedent(r'''
    import inspect
    buf = be.alloc(64)
    h = pl.restore_start(ns, P, {2: be.opaque_state(4)}, stream=stream)
    h.join()
    objs = {"Store": store, "Backend": be, "Pipeline": pl, "State": state, "RestoreHandle": h,
            "-": auxstore}
    good = {"ns": ns, "prefix": P, "token_count": 16, "layers": [(2, "opaque", b"abcd")],
            "stream": stream, "ptr": buf, "nbytes": 8, "layer": 2, "buffer": bytearray(4),
            "dests": {2: bytearray(4)}, "targets": {2: be.opaque_state(4)},
            "sources": {2: state}, "geometry": g, "capacity": 8, "tokens": [1, 2, 3],
            "block_size": 1, "lease_ms": 10, "lease": 0, "leases": [], "prefixes": [P],
            "candidates": [P], "items": [], "model_id": "m", "src": b"x", "dst": bytearray(8),
            "count": 1, "blob": b"", "k_pool_k": bytes(128), "k_norm_w": bytes(128), "salt": 0,
            "code": 1, "value": "v", "raw_keys": bytes(128), "ingested": 1, "n_blocks": 0}
    bads = [None, -1, 2**64, "x\0y", np.array([object()] * 4, dtype=object), 1.5]
    owner = objs[sys.argv[2]]
    for name in sys.argv[3].split(","):
        f = getattr(owner, name)
        params = list(inspect.signature(f).parameters.values())
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            for b, bad in enumerate(bads):
                args, kwargs = [], {}
                for q in params:
                    if q.kind in (q.VAR_POSITIONAL, q.VAR_KEYWORD):
                        continue
                    v = bad if q is p else good.get(
                        q.name, q.default if q.default is not q.empty else 0)
                    if q.kind == q.KEYWORD_ONLY:
                        kwargs[q.name] = v
                    else:
                        args.append(v)
                print(json.dumps({"call": name, "arg": p.name, "bad": b}), flush=True)
                try:
                    r = f(*args, **kwargs)
                    if hasattr(r, "result"):
                        try:
                            r.result(timeout=10)
                        except Exception:
                            pass
                    got = "ok"
                except BaseException as e:
                    got = type(e).__name__ + ": " + str(e)[:200]
                    ok = isinstance(e, (TypeError, ValueError, OverflowError,
                                        auxstore.AuxstoreError))
                    if not ok or "Unable to cast" in str(e):
                        print(json.dumps({"bad_exception": got}), flush=True)
    pl.close(); h.close(); state.close(); be.close(); store.close()
    print(json.dumps({"done": True}))
''')


def public_methods(cls):
    skip = {"close", "release", "free", "destroy_stream"}  # tried with bad values only
    names = []
    for attr, member in vars(cls).items():
        if attr.startswith("_") or attr in skip or isinstance(member, property):
            continue
        if callable(getattr(cls, attr)):
            names.append(attr)
    return sorted(names)


@pytest.mark.parametrize("owner", ["Store", "Backend", "Pipeline", "State", "RestoreHandle",
                                   "-"])
def test_every_argument_refuses_bad_values_without_crashing(tmp_path, owner):
    if owner == "-":
        calls = ["prefix_hash", "token_digest", "metrics_text", "qsa_block_pool_host",
                 "code_name", "error_for_code", "escape_label_value"]
    else:
        calls = public_methods(getattr(auxstore, owner))
    path = str(tmp_path / "fuzz-store")
    r = subprocess.run([sys.executable, "-c", FUZZ_CHILD, path, owner, ",".join(calls)],
                       capture_output=True, text=True, timeout=240)
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert r.returncode == 0, "crashed (rc %d) in %s: %s" % (
        r.returncode, lines[-1] if lines else None, r.stderr[-2000:])
    assert lines and lines[-1] == {"done": True}, r.stdout[-2000:]
    owner_obj = auxstore if owner == "-" else getattr(auxstore, owner)
    with_args = {c for c in calls if len(inspect.signature(getattr(owner_obj, c)).parameters)
                 > (0 if owner == "-" else 1)}
    assert {x["call"] for x in lines if "call" in x} == with_args
    bad = [(prev, x["bad_exception"]) for prev, x in zip(lines, lines[1:])
           if "bad_exception" in x]
    assert not bad, bad
    verify(path)


def test_huge_reads_and_borrows_name_the_size(backend):
    """A read bigger than anything allocatable names nbytes (MemoryError, not a
    bare std::bad_alloc); a borrow claiming more than its allocation is refused
    by the backend's allocation table."""
    p = backend.alloc(8)
    try:
        with backend.stream() as s:
            with pytest.raises(MemoryError, match="nbytes=9223372036854775807"):
                backend.read(p, 2**63 - 1, stream=s)
        with pytest.raises(auxstore.InvalidArgumentError, match="exceeds its 8-byte allocation"):
            backend.borrow_opaque(p, capacity=2**63 - 1)
    finally:
        backend.free(p)
