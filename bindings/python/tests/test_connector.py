"""The connector-shaped calls: what an SGLang HiCache storage backend or a
vLLM offloading manager over auxstore would be, as thin adapters."""

import hashlib

import numpy as np

import auxstore
from auxstore.connector import PageStore
from conftest import random_bytes

PAGE = 4096


class HiCacheShaped:
    """HiCacheStorage's batch_exists / batch_get_v1 / batch_set_v1 over a host
    page pool (rows of a numpy array): a page is read into and written from
    its pool row in place."""

    def __init__(self, pages, pool):
        self.pages, self.pool = pages, pool

    def batch_exists(self, keys):
        return self.pages.batch_exists(keys)

    def batch_get_v1(self, keys, host_indices):
        return self.pages.batch_get_into(keys, [{0: self.pool[i]} for i in host_indices])

    def batch_set_v1(self, keys, host_indices):
        return self.pages.batch_set(keys, [[(0, "opaque", self.pool[i])] for i in host_indices])


class VllmShaped:
    """OffloadingManager's lookup / prepare_load / complete_load."""

    def __init__(self, pages):
        self.pages, self.loading = pages, {}

    def lookup(self, block_hashes):
        return self.pages.lookup(block_hashes)

    def prepare_load(self, block_hashes):
        self.loading[tuple(block_hashes)] = self.pages.prepare_load(block_hashes)
        return tuple(block_hashes)

    def complete_load(self, block_hashes):
        return self.pages.complete_load(self.loading.pop(tuple(block_hashes)))


def chain(n, salt=b""):
    keys, h = [], salt
    for i in range(n):
        h = hashlib.sha256(h + i.to_bytes(4, "little")).hexdigest().encode()
        keys.append(h.decode())
    return keys


def test_key_to_prefix():
    k = auxstore.key_to_prefix
    assert k(bytes(range(16))) == bytes(range(16))
    assert k("00" * 16) == bytes(16)
    assert len(k("a" * 64)) == 16 and k("a" * 64) != k("b" * 64)
    assert len(k(b"\x01" * 32)) == 16 and len(k(12345)) == 16 and k(1) != k(2)


def test_hicache_shaped_adapter(store):
    ns = store.register_namespace("hicache-model", tp_rank=0, tp_world_size=1)
    pool = np.zeros((8, PAGE), np.uint8)
    pool[:4] = np.stack([random_bytes(PAGE, i) for i in range(4)])
    want = pool[:4].copy()
    hc = HiCacheShaped(PageStore(store, ns), pool)
    keys = chain(6)
    assert hc.batch_exists(keys) == 0
    assert hc.batch_set_v1(keys[:4], [0, 1, 2, 3]) == [True] * 4
    assert hc.batch_exists(keys) == 4
    assert hc.batch_exists(keys[:2] + keys[5:] + keys[2:4]) == 2  # leading pages only
    # Read back into other rows of the pool, in place.
    rows_before = pool[4:].ctypes.data
    assert hc.batch_get_v1(keys[:4] + keys[4:5], [4, 5, 6, 7, 0]) == [True] * 4 + [False]
    assert pool[4:].ctypes.data == rows_before
    assert np.array_equal(pool[4:8], want)


def test_vllm_shaped_manager(store):
    ns = store.register_namespace("vllm-model")
    pages = PageStore(store, ns, lease_ms=60_000)
    blocks = [hashlib.sha256(bytes([i])).digest() for i in range(5)]
    assert pages.batch_set(blocks[:3], [{0: ("opaque", b"kv%d" % i)} for i in range(3)]) == [True] * 3
    mgr = VllmShaped(pages)
    assert mgr.lookup(blocks) == 3
    spec = mgr.prepare_load(blocks[:3])
    assert store.stats().leases == 3  # pinned against eviction until complete_load
    assert mgr.complete_load(spec) == 3
    assert store.stats().leases == 0
    assert pages.exists(blocks[0]) and not pages.exists(blocks[4])
