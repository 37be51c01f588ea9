"""Shared fixtures: a fresh store per test, the host backend, blob builders."""

import os
import struct
import sys

import numpy as np
import pytest

try:
    import auxstore
except ImportError as e:  # pragma: no cover - a setup problem, said plainly
    raise ImportError(
        "auxstore is not importable: run through ctest (-L bindings), or set "
        "PYTHONPATH=<build>/bindings/python:<src>/bindings/python (%s)" % e) from e

HD, MAX_TOKENS, RATIO, ROT = 64, 1024, 8, 32
DSA_DIM, DSA_CAP = 32, 1024

GEOMETRY = auxstore.Geometry(qsa_hd=HD, qsa_max_tokens=MAX_TOKENS, qsa_ratio=RATIO, qsa_rot=ROT,
                             qsa_theta=10000.0, qsa_eps=1e-6, dsa_index_head_dim=DSA_DIM,
                             dsa_capacity=DSA_CAP)


def bf16(n, seed):
    """n random bf16 values (uint16 bit patterns) in [-2, 2)."""
    f = np.random.default_rng(seed).uniform(-2, 2, n).astype(np.float32)
    return (f.view(np.uint32) >> 16).astype(np.uint16)


def random_bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def qsa_blob(ingested, pooled=0, seed=1, hd=HD):
    return np.concatenate([np.frombuffer(struct.pack("<QQ", ingested, pooled), np.uint8),
                           bf16(ingested * hd, seed).view(np.uint8)])


def dsa_blob(rows, seed=2, d=DSA_DIM):
    parts = [np.frombuffer(struct.pack("<QQ", rows, d), np.uint8),
             random_bytes(rows * d * 2, seed), random_bytes(rows * d * 2, seed + 1),
             random_bytes(rows, seed + 2)]
    return np.concatenate(parts)


def prefix(i):
    return (i).to_bytes(8, "little") * 2


@pytest.fixture
def store_path(tmp_path):
    return str(tmp_path / "store")


@pytest.fixture
def store(store_path):
    with auxstore.Store(store_path, chunk_bytes=64 * 1024) as s:
        yield s


@pytest.fixture
def ns(store):
    return store.register_namespace("test-model", GEOMETRY, weight_revision="r1")


@pytest.fixture
def backend():
    with auxstore.Backend("host") as b:
        yield b


@pytest.fixture
def pipeline(store, backend):
    with auxstore.Pipeline(store, backend, staging_bytes=64 * 1024) as p:
        yield p


@pytest.fixture
def weights():
    return bf16(HD, 1000), bf16(HD, 1001)


def put_three_layers(store, ns, p, tokens=256, seed=5):
    """A QSA, a DSA and an opaque layer; returns the blobs by layer."""
    blobs = {0: qsa_blob(tokens, 0, seed), 1: dsa_blob(tokens, seed + 10),
             2: random_bytes(5000, seed + 20)}
    store.put(ns, p, tokens, [(0, "qsa", blobs[0]), (1, "dsa", blobs[1]),
                              (2, "opaque", blobs[2])])
    return blobs
