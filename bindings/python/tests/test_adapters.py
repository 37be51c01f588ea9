"""The engine adapters (auxstore.adapters) against fakes of the engines'
host pools and calls (engine_fakes.py): every byte a prefetch or load brings
back is the byte the backup or store wrote, the consecutive-hit counts stop
at the first miss, leases pin a load, a failed store leaves nothing
visible, and a second process restores what the first stored."""

import os
import subprocess
import sys

import numpy as np
import pytest

import auxstore
from auxstore.adapters.sglang import AuxstoreHiCacheStorage
from auxstore.adapters.vllm import (AuxstoreBlockTransfer, AuxstoreOffloadingManager,
                                    LookupResult)
from engine_fakes import (FakeCpuBlockPool, FakeHiCacheController, FakeHostKVPool,
                          offload_keys, page_keys)

CHILD = os.path.join(os.path.dirname(__file__), "adapter_child.py")


def sglang_config(path, tp_rank=0, tp_size=1, mla=False):
    return {"model_name": "m", "tp_rank": tp_rank, "tp_size": tp_size, "is_mla_model": mla,
            "extra_config": {"path": path, "interface_v1": 1}}


# ---- SGLang HiCache ----------------------------------------------------------------


def test_hicache_backup_then_prefetch_every_byte(store_path):
    storage = AuxstoreHiCacheStorage(sglang_config(store_path), {})
    pool = FakeHostKVPool(slots=2048, page_size=4, token_bytes=96)
    ctl = FakeHiCacheController(storage, pool)
    # The pool's kv_buffer is registered: prefetches read into it with one
    # asynchronous batched read (read_into_host), not through addresses.
    assert storage.host_buffer is not None and storage.host_buffer.size == pool.kv_buffer.nbytes
    keys = page_keys(200)  # more than one 128-page batch
    written = pool.alloc(150)
    pool.fill(written, seed=1)
    assert ctl.backup(keys[:150], written)
    assert storage.batch_exists(keys) == 150
    assert storage.batch_exists(keys[150:]) == 0  # a first-key miss
    got, slots = ctl.prefetch(keys)
    assert got == 150
    np.testing.assert_array_equal(pool.k[slots], pool.k[written])
    np.testing.assert_array_equal(pool.v[slots], pool.v[written])
    # Setting again is idempotent (stored pages are skipped, still True).
    assert storage.batch_set_v1(keys[:3], written[:12]) == [True] * 3
    # A gap: the prefetch keeps the leading run only.
    storage.store.erase(storage.ns, auxstore.key_to_prefix(keys[10]))
    got, _ = ctl.prefetch(keys)
    assert got == 10
    storage.close()


def test_hicache_tenants_do_not_share(store_path):
    a = AuxstoreHiCacheStorage(sglang_config(store_path, tp_rank=0, tp_size=2), {})
    b = AuxstoreHiCacheStorage(None, {"model_name": "m"}, store=a.store)  # another tenant
    pool = FakeHostKVPool(slots=64, page_size=4, token_bytes=32)
    FakeHiCacheController(a, pool).backup(page_keys(4), pool.alloc(4))
    assert a.batch_exists(page_keys(4)) == 4
    assert b.batch_exists(page_keys(4)) == 0  # rank 0 of 2 is its own namespace
    # MLA shares one namespace across tensor-parallel ranks.
    m0 = AuxstoreHiCacheStorage(sglang_config(store_path, 0, 2, mla=True), {}, store=a.store)
    m1 = AuxstoreHiCacheStorage(sglang_config(store_path, 1, 2, mla=True), {}, store=a.store)
    assert m0.ns == m1.ns != a.ns
    a.close()


def test_hicache_legacy_get_set(store_path):
    storage = AuxstoreHiCacheStorage(sglang_config(store_path), {})
    value = np.arange(256, dtype=np.uint8)
    assert storage.set("k1", value)
    assert storage.exists("k1") and not storage.exists("k2")
    assert bytes(storage.get("k1")) == value.tobytes()
    dst = np.zeros(256, np.uint8)
    assert storage.get("k1", dst.ctypes.data, 256) == dst.ctypes.data
    np.testing.assert_array_equal(dst, value)
    assert storage.get("k2") is None
    assert storage.batch_set(["a", "b"], [value[:8], value[8:16]])
    assert [bytes(x) for x in storage.batch_get(["a", "b"])] == [value[:8].tobytes(),
                                                              value[8:16].tobytes()]
    with pytest.raises(ValueError, match="path"):
        AuxstoreHiCacheStorage({"model_name": "m"}, {})
    storage.close()


def test_hicache_two_processes_across_a_restart(store_path):
    run = subprocess.run([sys.executable, CHILD, "sglang", store_path, "40", "7"],
                         capture_output=True, text=True, env=os.environ.copy(), timeout=120)
    assert run.returncode == 0, run.stderr
    storage = AuxstoreHiCacheStorage(sglang_config(store_path), {})
    pool = FakeHostKVPool(slots=40 * 4 * 2, page_size=4, token_bytes=96)
    want = FakeHostKVPool(slots=40 * 4, page_size=4, token_bytes=96)
    want.fill(want.alloc(40), seed=7)  # what the first process wrote
    got, slots = FakeHiCacheController(storage, pool).prefetch(page_keys(40))
    assert got == 40
    np.testing.assert_array_equal(pool.k[slots], want.k)
    np.testing.assert_array_equal(pool.v[slots], want.v)
    storage.close()


# ---- vLLM offloading --------------------------------------------------------------


def vllm_manager(store_path):
    return AuxstoreOffloadingManager.open(store_path, "m")


def test_vllm_store_lookup_load_every_byte(store_path):
    mgr = vllm_manager(store_path)
    pool = FakeCpuBlockPool(blocks=64, block_bytes=512)
    xfer = AuxstoreBlockTransfer(mgr.store, mgr.ns, pool)
    keys = offload_keys(16)
    pool.fill(range(16), seed=3)
    out = mgr.prepare_store(keys)
    assert out.keys_to_store == keys and out.evicted_keys == []
    assert mgr.lookup(keys[0]) == LookupResult.HIT_PENDING  # in flight, not yet stored
    assert all(xfer.store_blocks(out.store_spec, range(16)))
    mgr.complete_store(keys)
    assert [mgr.lookup(k) for k in keys] == [LookupResult.HIT] * 16
    assert mgr.prepare_store(keys).keys_to_store == []  # stored: nothing to do

    spec = mgr.prepare_load(keys)
    assert mgr.store.stats().leases == 16  # pinned until complete_load
    assert xfer.load(spec, range(32, 48)) == [True] * 16
    np.testing.assert_array_equal(pool.blocks[32:48], pool.blocks[0:16])
    mgr.complete_load(keys)
    mgr.complete_load(keys)  # idempotent
    assert mgr.store.stats().leases == 0
    mgr.touch(keys[:2])
    assert mgr.store.stats().leases == 0

    missing = offload_keys(1, group=1)[0]
    assert mgr.lookup(missing) == LookupResult.MISS
    with pytest.raises(LookupError):
        mgr.prepare_load([keys[0], missing])
    assert mgr.store.stats().leases == 0  # nothing leased by the refused load
    mgr.store.close()


def test_vllm_failed_store_leaves_nothing_visible(store_path):
    mgr = vllm_manager(store_path)
    pool = FakeCpuBlockPool(blocks=8, block_bytes=256)
    keys = offload_keys(4, salt=b"f")
    out = mgr.prepare_store(keys)
    AuxstoreBlockTransfer(mgr.store, mgr.ns, pool).store_blocks(out.store_spec, range(2))
    mgr.complete_store(keys, success=False)  # the job failed after two blocks
    assert [mgr.lookup(k) for k in keys] == [LookupResult.MISS] * 4
    mgr.store.close()


def test_vllm_two_processes_across_a_restart(store_path):
    run = subprocess.run([sys.executable, CHILD, "vllm", store_path, "24", "11"],
                         capture_output=True, text=True, env=os.environ.copy(), timeout=120)
    assert run.returncode == 0, run.stderr
    mgr = vllm_manager(store_path)
    keys = offload_keys(24)
    assert all(mgr.lookup(k) == LookupResult.HIT for k in keys)
    pool = FakeCpuBlockPool(blocks=24, block_bytes=512)
    want = FakeCpuBlockPool(blocks=24, block_bytes=512)
    want.fill(range(24), seed=11)
    spec = mgr.prepare_load(keys)
    assert AuxstoreBlockTransfer(mgr.store, mgr.ns, pool).load(spec, range(24)) == [True] * 24
    mgr.complete_load(keys)
    np.testing.assert_array_equal(pool.blocks, want.blocks)
    mgr.store.close()
