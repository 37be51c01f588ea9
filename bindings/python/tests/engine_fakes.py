"""Fakes of the engines' side of the adapters' calls (the engines cannot be
installed here): SGLang's host KV pool and the HiCache controller's prefetch
and backup flows, vLLM's CPU block pool and its scheduler / worker flow.
They call the adapters exactly as the engines do (docs/connectors.md) and
hold real bytes in numpy arrays, so every byte can be checked."""

import hashlib

import numpy as np

STORAGE_BATCH_SIZE = 128  # SGLang's max pages per storage call


def page_keys(n, salt=b""):
    """SGLang's key chain: each a SHA-256 hex string over the prior hash and
    the page's token ids (4 bytes little-endian each)."""
    keys, prior = [], salt
    for i in range(n):
        tokens = np.arange(i * 4, i * 4 + 4, dtype="<u4").tobytes()
        prior = hashlib.sha256(prior + tokens).digest()
        keys.append(prior.hex())
    return keys


class FakeHostKVPool:
    """SGLang's MHA host pool in a page-first layout: token slot s holds its
    k row at k[s] and its v row at v[s] (all layers), so a page's k (or v)
    bytes are contiguous. get_page_buffer_meta gives, per page, the address
    and size of its k bytes then its v bytes, as the real pool does."""

    def __init__(self, slots, page_size, token_bytes):
        self.page_size, self.token_bytes = page_size, token_bytes
        # One host buffer, k then v, as SGLang's pool keeps its kv_buffer.
        self.kv_buffer = np.zeros((2, slots, token_bytes), np.uint8)
        self.k, self.v = self.kv_buffer[0], self.kv_buffer[1]
        self.next_free = 0

    def alloc(self, n_pages):
        """Host slots for n pages (what the controller takes from the pool)."""
        n = n_pages * self.page_size
        if self.next_free + n > len(self.k):
            raise MemoryError("host pool full")
        out = np.arange(self.next_free, self.next_free + n, dtype=np.int64)
        self.next_free += n
        return out

    def get_page_buffer_meta(self, host_indices):
        ptrs, sizes = [], []
        page_bytes = self.page_size * self.token_bytes
        for i in range(0, len(host_indices), self.page_size):
            s = int(host_indices[i])
            ptrs += [self.k.ctypes.data + s * self.token_bytes,
                     self.v.ctypes.data + s * self.token_bytes]
            sizes += [page_bytes, page_bytes]
        return ptrs, sizes

    def fill(self, host_indices, seed):
        """Deterministic bytes for the slots (what the GPU would have written)."""
        rng = np.random.default_rng(seed)
        for s in host_indices:
            self.k[s] = rng.integers(0, 256, self.token_bytes, dtype=np.uint8)
            self.v[s] = rng.integers(0, 256, self.token_bytes, dtype=np.uint8)

    def page_bytes(self, host_indices):
        idx = np.asarray(host_indices)
        return self.k[idx].tobytes() + self.v[idx].tobytes()


class FakeHiCacheController:
    """The HiCache controller's calls: a backup writes pages from host slots
    (batch_set_v1, success only when all are True); a prefetch asks
    batch_exists per batch of at most 128 pages (stopping at the first short
    answer), takes host slots for the hits and reads them (batch_get_v1),
    keeping the leading successes."""

    def __init__(self, storage, pool):
        self.storage, self.pool = storage, pool
        storage.register_mem_pool_host(pool)

    def backup(self, keys, host_indices):
        return all(self.storage.batch_set_v1(keys, host_indices))

    def prefetch(self, keys):
        hit = 0
        for i in range(0, len(keys), STORAGE_BATCH_SIZE):
            batch = keys[i:i + STORAGE_BATCH_SIZE]
            n = self.storage.batch_exists(batch)
            hit += n
            if n < len(batch):
                break
        if hit == 0:
            return 0, None
        slots = self.pool.alloc(hit)
        ok = self.storage.batch_get_v1(keys[:hit], slots)
        got = next((i for i, x in enumerate(ok) if not x), len(ok))
        return got, slots


class FakeCpuBlockPool:
    """vLLM's CPU block pool: pool[block_id] is one block's bytes."""

    def __init__(self, blocks, block_bytes):
        self.blocks = np.zeros((blocks, block_bytes), np.uint8)

    def __getitem__(self, block_id):
        return self.blocks[block_id]

    def fill(self, block_ids, seed):
        rng = np.random.default_rng(seed)
        for b in block_ids:
            self.blocks[b] = rng.integers(0, 256, self.blocks.shape[1], dtype=np.uint8)


def offload_keys(n, group=0, salt=b""):
    """vLLM's OffloadKeys: a block hash (32 bytes) + 4-byte big-endian group."""
    keys, prior = [], salt
    for i in range(n):
        prior = hashlib.sha256(prior + i.to_bytes(4, "little")).digest()
        keys.append(prior + group.to_bytes(4, "big"))
    return keys
