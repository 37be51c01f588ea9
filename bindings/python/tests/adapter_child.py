"""The first process of the adapters' two-process runs: stores pages through
an adapter over the engine fakes, then exits (the test process restores
them). Usage: adapter_child.py sglang|vllm STORE_PATH N SEED"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from engine_fakes import (FakeCpuBlockPool, FakeHiCacheController,  # noqa: E402
                          FakeHostKVPool, offload_keys, page_keys)

from auxstore.adapters.sglang import AuxstoreHiCacheStorage  # noqa: E402
from auxstore.adapters.vllm import AuxstoreBlockTransfer, AuxstoreOffloadingManager  # noqa: E402

which, path, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if which == "sglang":
    config = {"model_name": "m", "tp_rank": 0, "tp_size": 1, "is_mla_model": False,
              "extra_config": {"path": path, "interface_v1": 1}}
    storage = AuxstoreHiCacheStorage(config, {})
    pool = FakeHostKVPool(slots=n * 4, page_size=4, token_bytes=96)
    ctl = FakeHiCacheController(storage, pool)
    slots = pool.alloc(n)
    pool.fill(slots, seed)
    assert ctl.backup(page_keys(n), slots)
    storage.close()
else:
    mgr = AuxstoreOffloadingManager.open(path, "m")
    pool = FakeCpuBlockPool(blocks=n, block_bytes=512)
    pool.fill(range(n), seed)
    keys = offload_keys(n)
    out = mgr.prepare_store(keys)
    assert out.keys_to_store == keys
    ok = AuxstoreBlockTransfer(mgr.store, mgr.ns, pool).store_blocks(out.store_spec, range(n))
    mgr.complete_store(keys, success=all(ok))
    assert all(ok)
    mgr.store.close()
print("stored", n)
