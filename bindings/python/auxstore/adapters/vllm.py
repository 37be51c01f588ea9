"""vLLM's CPU-offloading tier over auxstore: the scheduler-side
``OffloadingManager`` (``lookup``, ``prepare_load``, ``touch``,
``complete_load``, ``prepare_store``, ``complete_store``) and the worker
side's byte mover, ``AuxstoreBlockTransfer``, between vLLM's CPU block pool
and the store.

One ``OffloadKey`` (block hash + KV-group index, bytes) is one auxstore
snapshot (prefix ``key_to_prefix(key)``) holding the block's bytes as
layer 0. The scheduler builds the prefix itself: ``lookup`` answers one key.

Copies and waits (docs/connectors.md): ``lookup`` is one lookup;
``prepare_load`` looks up and leases every key in one batched lookup (the
leases pin the blocks against eviction until ``complete_load``);
``AuxstoreBlockTransfer.load`` copies each block once, from the store's block
into the CPU pool, verified in the same pass; ``store`` writes from the pool
in place. A store becomes visible when its put returns; ``complete_store(...,
success=False)`` erases what the job stored, so a failed job leaves nothing
visible, and ``lookup`` says HIT_PENDING for a key whose store is in flight.
"""

import enum
from dataclasses import dataclass, field
from typing import List

import auxstore

from .._helpers import key_to_prefix
from ._host import as_ints

try:  # the engine's types when vLLM is installed
    from vllm.v1.kv_offload.base import LoadStoreSpec as _SpecBase
    from vllm.v1.kv_offload.base import LookupResult
    from vllm.v1.kv_offload.base import OffloadingManager as _ManagerBase
    from vllm.v1.kv_offload.base import PrepareStoreOutput
except ImportError:  # pragma: no cover - vLLM is not installable here
    _SpecBase = object
    _ManagerBase = object

    class LookupResult(enum.Enum):
        """vLLM's ``LookupResult`` look-alike."""
        MISS = 0
        HIT = 1
        HIT_PENDING = 2
        RETRY = 3

    @dataclass
    class PrepareStoreOutput:
        """vLLM's ``PrepareStoreOutput`` look-alike."""
        keys_to_store: list
        store_spec: object
        evicted_keys: list


@dataclass
class AuxstoreLoadStoreSpec(_SpecBase):
    """Where blocks are in auxstore: their keys, prefixes and (for a load)
    the leases that pin them until ``complete_load``."""
    keys: list
    prefixes: List[bytes]
    leases: List[int] = field(default_factory=list)

    @staticmethod
    def medium():
        return "auxstore"


class AuxstoreOffloadingManager(_ManagerBase):
    """``OffloadingManager`` over one auxstore namespace."""

    def __init__(self, store, ns, *, lease_ms=30_000):
        self.store, self.ns, self.lease_ms = store, ns, lease_ms
        self._loading = {}  # tuple(keys) -> leases, until complete_load
        self._storing = {}  # key -> count of stores in flight

    @classmethod
    def open(cls, path, model_id, *, tp_rank=0, tp_world_size=1, **kw):
        """A manager over the store at ``path`` (opened here), namespace
        ``model_id`` at this tensor-parallel rank."""
        store = auxstore.Store(path)
        ns = store.register_namespace(model_id, tp_rank=tp_rank, tp_world_size=tp_world_size)
        return cls(store, ns, **kw)

    def lookup(self, key, req_context=None):
        """HIT when stored, HIT_PENDING while a store of it is in flight,
        else MISS."""
        if self.store.exists(self.ns, key_to_prefix(key)):
            return LookupResult.HIT
        if self._storing.get(key):
            return LookupResult.HIT_PENDING
        return LookupResult.MISS

    def prepare_load(self, keys, req_context=None):
        """Leases every key's block (one batched lookup) until
        ``complete_load``; a key no longer stored raises LookupError (and
        leases nothing)."""
        keys = list(keys)
        prefixes = [key_to_prefix(k) for k in keys]
        leading, leases = self.store.lookup_leased(self.ns, prefixes, self.lease_ms)
        if leading < len(keys):
            self.store.release_leases(leases)
            raise LookupError("prepare_load: key %r is not stored" % (keys[leading],))
        self._loading.setdefault(tuple(keys), []).extend(leases)
        return AuxstoreLoadStoreSpec(keys, prefixes, list(leases))

    def touch(self, keys, req_context=None):
        """Marks the blocks recently used (a batched lookup + lease, released)."""
        _, leases = self.store.lookup_leased(self.ns, [key_to_prefix(k) for k in keys],
                                             self.lease_ms)
        self.store.release_leases(leases)

    def complete_load(self, keys, req_context=None):
        """Releases the load's leases (idempotent)."""
        self.store.release_leases(self._loading.pop(tuple(keys), []))

    def prepare_store(self, keys, req_context=None):
        """The keys not stored yet (and not being stored) and where they go;
        auxstore evicts on its own, so ``evicted_keys`` is empty."""
        keys = list(keys)
        stored = self.store.exists_many(self.ns, [key_to_prefix(k) for k in keys])
        todo = [k for k, s in zip(keys, stored) if not s and not self._storing.get(k)]
        for k in todo:
            self._storing[k] = self._storing.get(k, 0) + 1
        return PrepareStoreOutput(
            keys_to_store=todo,
            store_spec=AuxstoreLoadStoreSpec(todo, [key_to_prefix(k) for k in todo]),
            evicted_keys=[])

    def complete_store(self, keys, req_context=None, success=True):
        """Ends the stores of ``keys``: on failure whatever they stored is
        erased, so nothing of a failed job stays visible."""
        for k in keys:
            n = self._storing.get(k, 0)
            if n <= 1:
                self._storing.pop(k, None)
            else:
                self._storing[k] = n - 1
            if not success:
                self.store.erase(self.ns, key_to_prefix(k))

    def on_new_request(self, req_context=None):
        return None

    def on_request_finished(self, req_context=None):
        return None


class AuxstoreBlockTransfer:
    """The worker side: bytes between vLLM's CPU block pool (``pool[block_id]``
    is one block's writable buffer: a row of a 2-D array or tensor) and the
    store, one batched call per job."""

    def __init__(self, store, ns, pool):
        self.store, self.ns, self.pool = store, ns, pool

    def load(self, spec, block_ids):
        """Reads each block of ``spec`` into ``pool[block_ids[i]]``; one bool
        per block (False: not stored, or found corrupt and quarantined)."""
        ids = as_ints(block_ids)
        items = [(p, {0: self.pool[b]}) for p, b in zip(spec.prefixes, ids)]
        return list(self.store.batch_read_into(self.ns, items))

    def store_blocks(self, spec, block_ids, tokens_per_block=0):
        """Writes ``pool[block_ids[i]]`` as each block of ``spec``; one bool
        per block (False: shed, the store is full)."""
        ids = as_ints(block_ids)
        items = [(p, tokens_per_block, [(0, "opaque", self.pool[b])])
                 for p, b in zip(spec.prefixes, ids)]
        return list(self.store.batch_put(self.ns, items))
