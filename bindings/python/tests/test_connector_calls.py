"""The connector's batched calls: the consecutive-hit count over prefixes (a
first-key miss answered by one lookup) and over a block chain's pages, the
batched lookup + lease and the batched release."""

import numpy as np
import pytest

import auxstore
from conftest import GEOMETRY, prefix, qsa_blob

BLOCK, SALT = 16, 0x5eed


def put_opaque(store, ns, p):
    store.put(ns, p, 16, [(2, "opaque", np.frombuffer(p, np.uint8))])


def test_count_leading_stored_stops_at_the_first_miss(store):
    ns = store.register_namespace("m", GEOMETRY)
    ps = [prefix(i + 1) for i in range(6)]
    for p in ps[:5]:
        put_opaque(store, ns, p)
    assert store.count_leading_stored(ns, ps[:5]) == 5
    assert store.count_leading_stored(ns, ps) == 5
    assert store.count_leading_stored(ns, [ps[0], ps[5], ps[1]]) == 1
    assert store.count_leading_stored(ns, [ps[5]] + ps[:5]) == 0
    assert store.count_leading_stored(ns, []) == 0
    st = store.stats()
    assert (st.hits, st.misses) == (0, 0)  # exists counts no hit


def test_count_leading_pages_of_a_chain(store):
    ns = store.register_namespace("m", GEOMETRY)
    tokens = np.arange(4 * BLOCK, dtype=np.uint32) + 100
    other = tokens.copy()
    other[2 * BLOCK] ^= 1  # the same first two blocks
    chain = auxstore.prefix_hash(tokens, BLOCK, SALT)
    other_chain = auxstore.prefix_hash(other, BLOCK, SALT)
    assert store.count_leading_pages(ns, chain, BLOCK) == (0, BLOCK)
    store.put(ns, chain[2], 3 * BLOCK, [(0, "qsa", qsa_blob(3 * BLOCK, 6, seed=4))],
              block_chain=chain[:3], block_size=BLOCK)
    assert store.count_leading_pages(ns, chain, BLOCK) == (3, BLOCK)
    assert store.count_leading_pages(ns, other_chain, BLOCK) == (2, BLOCK)
    assert store.count_leading_stored(ns, chain[1:2]) == 0  # its pages, but no snapshot of it
    with pytest.raises(auxstore.InvalidArgumentError, match="block_size is 0"):
        store.count_leading_pages(ns, chain, 0)
    with pytest.raises(auxstore.NotFoundError):
        store.count_leading_pages(ns ^ 1, chain, BLOCK)


def test_lookup_leased_and_release_leases(store):
    ns = store.register_namespace("m", GEOMETRY)
    ps = [prefix(i + 20) for i in range(4)]
    for p in (ps[0], ps[2], ps[3]):
        put_opaque(store, ns, p)
    leading, leases = store.lookup_leased(ns, ps, 60_000)
    assert leading == 1
    assert leases[1] == 0 and all(leases[i] != 0 for i in (0, 2, 3))
    st = store.stats()
    assert (st.leases, st.hits, st.misses) == (3, 3, 1)
    assert store.release_leases(leases) == 3
    assert store.stats().leases == 0
    assert store.release_leases(leases) == 0  # already gone: skipped
    with pytest.raises(auxstore.InvalidArgumentError, match="a lease of 0 ms"):
        store.lookup_leased(ns, ps, 0)


def test_restore_of_a_subset_of_layers(store, ns, backend):
    """A pipeline-parallel stage restores only its own layers of a snapshot."""
    from conftest import dsa_blob
    dsa = dsa_blob(64)
    p = prefix(40)
    store.put(ns, p, 64, [(0, "qsa", qsa_blob(64, 8)), (1, "dsa", dsa), (2, "opaque", b"x" * 100)])
    with auxstore.Pipeline(store, backend) as pipeline, backend.dsa_state(GEOMETRY) as st:
        pipeline.restore_wait(ns, p, {1: st})
        assert bytes(st.read()) == dsa.tobytes()
        assert st.counters[0] == 64


def dsa_rows(blob, rows, first, last, dim=32):
    """Rows [first, last) of each array of a DSA blob: k_normed, gate, valid."""
    body = np.asarray(blob)[16:]
    k = body[:rows * dim * 2].reshape(rows, dim * 2)
    g = body[rows * dim * 2:rows * dim * 4].reshape(rows, dim * 2)
    v = body[rows * dim * 4:]
    return np.concatenate([k[first:last].ravel(), g[first:last].ravel(), v[first:last]])


def test_read_layer_rows_of_whole_and_paged_layers(store, ns):
    from conftest import dsa_blob
    tokens = np.arange(4 * BLOCK, dtype=np.uint32) + 900
    chain = auxstore.prefix_hash(tokens, BLOCK, SALT)
    blob = dsa_blob(64, seed=12)
    store.put(ns, chain[3], 64, [(1, "dsa", blob)], block_chain=chain, block_size=BLOCK)
    whole = prefix(50)
    store.put(ns, whole, 64, [(1, "dsa", blob)])
    for p in (chain[3], whole):
        for first, last in ((0, 64), (16, 64), (5, 37), (63, 64), (7, 7)):
            want = dsa_rows(blob, 64, first, last)
            got = np.zeros(len(want), np.uint8)
            assert store.read_layer_rows(ns, p, 1, first, last, got) == (len(want), 64)
            np.testing.assert_array_equal(got, want)
    with pytest.raises(auxstore.OutOfRangeError, match="which has 64 rows"):
        store.read_layer_rows(ns, whole, 1, 0, 65, np.zeros(1 << 16, np.uint8))
    with pytest.raises(auxstore.InvalidArgumentError, match="opaque"):
        put_opaque(store, ns, prefix(51))
        store.read_layer_rows(ns, prefix(51), 2, 0, 1, np.zeros(64, np.uint8))
