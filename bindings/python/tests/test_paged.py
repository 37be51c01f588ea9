"""Paged storage: chained puts (block_chain / block_size) of one growing
sequence share pages, stats count them once (unique_bytes), a bad chain is
refused and changes nothing, page_tokens is part of the namespace id."""

import numpy as np
import pytest

import auxstore
from conftest import GEOMETRY, HD, RATIO, bf16

BLOCK, SALT = 16, 7
ROW = HD * 2  # one QSA row: qsa_hd bf16


def qsa_of(raw, n):
    """The QSA layer of the first n tokens of one sequence (its raw keys)."""
    header = np.array([n, n // RATIO], "<u8").view(np.uint8)
    return np.concatenate([header, raw[:n * HD].view(np.uint8)])


@pytest.fixture
def seq():
    tokens = np.arange(1000, 1128, dtype=np.uint32)
    raw = bf16(128 * HD, 42)
    return tokens, auxstore.prefix_hash(tokens, BLOCK, SALT), qsa_of(raw, 64), qsa_of(raw, 128)


def test_chained_puts_share_pages(store, ns, seq):
    tokens, chain, a, b = seq
    assert len(chain) == 8 and a[16:].tobytes() == b[16:16 + 64 * ROW].tobytes()
    store.put(ns, chain[3], 64, [(0, "qsa", a)], block_chain=chain[:4], block_size=BLOCK)
    assert store.stats().unique_bytes == 64 * ROW
    # The chain as an (n, 16) uint8 array works too, with the digest.
    store.put(ns, chain[7], 128, {0: ("qsa", b)},
              token_digest=auxstore.token_digest(tokens, SALT),
              block_chain=np.frombuffer(b"".join(chain), np.uint8).reshape(8, 16),
              block_size=BLOCK)

    assert bytes(store.get_layer(ns, chain[3], 0)) == a.tobytes()
    assert bytes(store.get_layer(ns, chain[7], 0)) == b.tobytes()
    out = np.zeros(b.size, np.uint8)
    assert store.read_layers_into(ns, chain[7], {0: out}) == {0: b.size}
    assert np.array_equal(out, b)

    st = store.stats()
    assert (st.snapshots, st.puts) == (2, 2)
    assert st.payload_bytes == a.size + b.size  # each snapshot in full
    assert st.unique_bytes == 128 * ROW  # each row once
    assert st.unique_bytes < st.payload_bytes
    assert st.bytes_written == 128 * ROW  # the second put wrote only its new rows
    d = st.as_dict()
    assert d["unique_bytes"] == st.unique_bytes and d["payload_bytes"] == st.payload_bytes
    assert "unique_bytes" in repr(st)

    m = store.longest_prefix_for_tokens(ns, tokens, BLOCK, SALT)
    assert m.tokens == 128 and m.prefix == chain[7]
    store.erase(ns, chain[3])  # the pages the 128-token snapshot uses stay
    assert bytes(store.get_layer(ns, chain[7], 0)) == b.tobytes()


def test_a_bad_chain_changes_nothing(store, ns, seq):
    _, chain, a, _ = seq
    before = store.stats()
    with pytest.raises(auxstore.InvalidArgumentError, match="needs a block size") as info:
        store.put(ns, chain[3], 64, [(0, "qsa", a)], block_chain=chain[:4])
    assert "auxstore_put_snapshot_ex" in info.value.message
    with pytest.raises(auxstore.InvalidArgumentError,
                       match="the block chain has 8 blocks of 16 tokens"):
        store.put(ns, chain[3], 64, [(0, "qsa", a)], block_chain=chain, block_size=BLOCK)
    with pytest.raises(ValueError, match=r"block_chain\[1\]"):
        store.put(ns, chain[3], 64, [(0, "qsa", a)], block_chain=[chain[0], b"short"],
                  block_size=BLOCK)
    with pytest.raises(TypeError, match="block_chain"):
        store.put(ns, chain[3], 64, [(0, "qsa", a)], block_chain=chain[0], block_size=BLOCK)
    after = store.stats()
    assert after.puts == before.puts and after.snapshots == 0 and after.unique_bytes == 0
    assert not store.exists(ns, chain[3])
    store.put(ns, chain[3], 64, [(0, "qsa", a)], block_chain=chain[:4], block_size=BLOCK)
    assert store.stats().puts == before.puts + 1


def test_page_tokens_is_part_of_the_namespace_id(store, seq):
    plain = store.register_namespace("m", GEOMETRY)
    assert store.register_namespace("m", GEOMETRY, page_tokens=0) == plain
    p32 = store.register_namespace("m", GEOMETRY, page_tokens=32)
    assert p32 != plain and store.register_namespace("m", GEOMETRY, page_tokens=32) == p32
    assert store.register_namespace("m", GEOMETRY, page_tokens=64) not in (plain, p32)

    _, chain, a, b = seq
    store.put(p32, chain[3], 64, [(0, "qsa", a)], block_chain=chain[:4], block_size=BLOCK)
    store.put(p32, chain[7], 128, [(0, "qsa", b)], block_chain=chain, block_size=BLOCK)
    assert bytes(store.get_layer(p32, chain[3], 0)) == a.tobytes()
    assert bytes(store.get_layer(p32, chain[7], 0)) == b.tobytes()
    assert store.stats().unique_bytes == 128 * ROW
    assert store.get_manifests(plain, chain[3:8:4]) == [None, None]

    p24 = store.register_namespace("m", GEOMETRY, page_tokens=24)
    with pytest.raises(auxstore.InvalidArgumentError, match="not a whole number"):
        store.put(p24, chain[3], 64, [(0, "qsa", a)], block_chain=chain[:4], block_size=BLOCK)


def test_paged_puts_from_registered_memory_share_pages(store, ns, seq):
    """put_from_host with (prefix, token_count, layers, block_chain, block_size):
    the snapshots of one growing sequence, put one after the other from one
    registered array, store each row once and read back exactly."""
    _, chain, a, b = seq
    memory = np.concatenate([a, b])
    buf = store.register_host_buffer(memory)
    first = (chain[3], 64, [(0, "qsa", buf, 0, a.size)], chain[:4], BLOCK)
    second = (chain[7], 128, [(0, "qsa", buf, a.size, b.size)], chain, BLOCK)
    with pytest.raises(TypeError, match=r"snapshots\[0\] must be"):
        store.put_from_host(ns, [first[:4]])
    for snapshot in (first, second):
        with store.put_from_host(ns, [snapshot]) as put:
            put.wait()
    # A chain too long for its snapshot: that put's own error, nothing written.
    before = store.stats()
    with store.put_from_host(ns, [(chain[2], 48, first[2], chain[:4], BLOCK)]) as put:
        with pytest.raises(auxstore.InvalidArgumentError, match="block chain"):
            put.wait_target(0)
    buf.unregister()
    assert bytes(store.get_layer(ns, chain[3], 0)) == a.tobytes()
    assert bytes(store.get_layer(ns, chain[7], 0)) == b.tobytes()
    st = store.stats()
    assert st.payload_bytes == a.size + b.size and st.unique_bytes == 128 * ROW
    assert (st.snapshots, st.bytes_written) == (2, before.bytes_written)
