"""SGLang HiCache's L3 storage over auxstore (``HiCacheStorage``).

One SGLang page key (a chained SHA-256 hex string naming a whole prefix) is
one auxstore snapshot (prefix ``key_to_prefix(key)``) whose opaque layers are
the page's host buffers, in the order the host pool's
``get_page_buffer_meta`` lists them (MHA: k then v; MLA: one). The tenant
(model, tensor-parallel rank unless MLA, pipeline stage) is the namespace's
identity, so ranks and models never see each other's pages.

Copies and waits (docs/connectors.md): ``batch_exists`` is one lookup for a
first-key miss, else one batched lookup; ``batch_get_v1`` copies each page
once, from the store's block into the registered host pool, verified in the
same pass; ``batch_set_v1`` writes from the host pool in place (no staging)
and skips pages already stored. Every call blocks the calling thread (the
HiCache controller calls from its prefetch / backup threads).
"""

import auxstore

from .._helpers import key_to_prefix
from ._host import as_ints, host_address, host_view

try:  # the engine's base class when SGLang is installed (its factory checks it)
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage as _Base
except ImportError:  # pragma: no cover - SGLang is not installable here
    _Base = object


def _config_value(config, name, default=None):
    if config is None:
        return default
    if isinstance(config, dict):
        return config.get(name, default)
    return getattr(config, name, default)


class AuxstoreHiCacheStorage(_Base):
    """``HiCacheStorage`` over an auxstore store.

    ``storage_config`` is SGLang's ``HiCacheStorageConfig`` (or a dict with
    the same fields); its ``extra_config`` (or ``kwargs``) names the store:
    ``path`` (required), ``lease_ms``, ``durability`` ("sync" / "async").
    ``store`` passes an open ``auxstore.Store`` instead of a path."""

    def __init__(self, storage_config=None, kwargs=None, *, store=None):
        extra = dict(_config_value(storage_config, "extra_config") or {})
        extra.update(kwargs or {})
        if store is None:
            if "path" not in extra:
                raise ValueError("AuxstoreHiCacheStorage: extra_config has no 'path' (the "
                                 "store's directory)")
            store = auxstore.Store(extra["path"], durability=extra.get("durability", "sync"))
            self._owns_store = True
        else:
            self._owns_store = False
        self.store = store
        self.lease_ms = int(extra.get("lease_ms", 30_000))
        model = _config_value(storage_config, "model_name") or extra.get("model_name") or "model"
        mla = bool(_config_value(storage_config, "is_mla_model", False))
        tp_rank = 0 if mla else int(_config_value(storage_config, "tp_rank", 0) or 0)
        tp_size = 1 if mla else int(_config_value(storage_config, "tp_size", 1) or 1)
        pp_rank = int(_config_value(storage_config, "pp_rank", 0) or 0)
        pp_size = int(_config_value(storage_config, "pp_size", 1) or 1)
        model_id = "sglang-hicache:" + model
        if pp_size > 1:
            model_id += ":pp%d/%d" % (pp_rank, pp_size)
        self.ns = self.store.register_namespace(model_id, tp_rank=tp_rank, tp_world_size=tp_size)
        self.mem_pool_host = None
        self.host_buffer = None  # the pool's kv_buffer, registered
        self._host_base = 0

    # -- registration ----------------------------------------------------------
    def register_mem_pool_host(self, mem_pool_host):
        """The host KV pool pages are read into and written from (its
        ``get_page_buffer_meta(host_indices)`` gives each page's buffers).
        Its ``kv_buffer`` (a host tensor or array), when it has one, is
        registered with the store once: pages inside it are read with one
        asynchronous batched read (``Store.read_into_host``) instead of
        through raw addresses."""
        self.mem_pool_host = mem_pool_host
        if self.host_buffer is not None:
            self.host_buffer.unregister()
        self.host_buffer, self._host_base = None, 0
        kv = getattr(mem_pool_host, "kv_buffer", None)
        if kv is not None:
            try:
                self.host_buffer = self.store.register_host_buffer(kv)
                self._host_base = host_address(kv)
            except (ValueError, TypeError, auxstore.AuxstoreError):
                self.host_buffer = None  # not one host buffer: pages by address

    # -- existence ---------------------------------------------------------------
    def batch_exists(self, keys, extra_info=None):
        """How many LEADING keys are stored (one lookup when the first misses)."""
        return self.store.count_leading_stored(self.ns, [key_to_prefix(k) for k in keys])

    def exists(self, key):
        return self.store.exists(self.ns, key_to_prefix(key))

    # -- zero-copy v1: straight into / out of the registered host pool -----------
    def _pages(self, keys, host_indices):
        if self.mem_pool_host is None:
            raise RuntimeError("AuxstoreHiCacheStorage: register_mem_pool_host was not called")
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        ptrs, sizes = as_ints(ptrs), as_ints(sizes)
        if not keys:
            return []
        if len(ptrs) != len(sizes) or len(ptrs) % len(keys) != 0:
            raise ValueError("get_page_buffer_meta gave %d pointers and %d sizes for %d keys"
                             % (len(ptrs), len(sizes), len(keys)))
        per = len(ptrs) // len(keys)
        return [[host_view(ptrs[i * per + j], sizes[i * per + j]) for j in range(per)]
                for i in range(len(keys))]

    def _registered_targets(self, keys, host_indices):
        """(prefix, layer, buffer, offset, capacity) of every page buffer, or
        None when one lies outside the registered kv_buffer."""
        if self.host_buffer is None or not keys:
            return None
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        ptrs, sizes = as_ints(ptrs), as_ints(sizes)
        if len(ptrs) != len(sizes) or len(ptrs) % len(keys) != 0:
            return None
        per, base, end = len(ptrs) // len(keys), self._host_base, self.host_buffer.size
        targets = []
        for i, k in enumerate(keys):
            p = key_to_prefix(k)
            for j in range(per):
                off, n = ptrs[i * per + j] - base, sizes[i * per + j]
                if off < 0 or off + n > end:
                    return None
                targets.append((p, j, self.host_buffer, off, n))
        return targets, per

    def batch_get_v1(self, keys, host_indices, extra_info=None):
        """Reads each key's page into its host-pool slots; one bool per key
        (False: not stored, or found corrupt and quarantined). The caller
        counts the leading Trues."""
        registered = self._registered_targets(keys, host_indices)
        if registered is not None:
            targets, per = registered
            with self.store.read_into_host(self.ns, targets) as read:
                ok = []
                for i in range(len(keys)):
                    try:
                        for j in range(per):
                            read.wait_target(i * per + j)
                        ok.append(True)
                    except auxstore.AuxstoreError:
                        ok.append(False)
                return ok
        pages = self._pages(keys, host_indices)
        items = [(key_to_prefix(k), dict(enumerate(views))) for k, views in zip(keys, pages)]
        return list(self.store.batch_read_into(self.ns, items))

    def batch_set_v1(self, keys, host_indices, extra_info=None):
        """Writes each key's page from its host-pool slots (in place); a page
        already stored is True without a write; False where the store shed
        it (full)."""
        prefixes = [key_to_prefix(k) for k in keys]
        stored = self.store.exists_many(self.ns, prefixes)
        missing = [i for i, s in enumerate(stored) if not s]
        ok = [True] * len(keys)
        if missing:
            pages = self._pages(keys, host_indices)
            page_tokens = len(host_indices) // len(keys)
            items = [(prefixes[i], page_tokens, [(j, "opaque", v) for j, v in enumerate(pages[i])])
                     for i in missing]
            for i, put in zip(missing, self.store.batch_put(self.ns, items)):
                ok[i] = bool(put)
        return ok

    # -- the older, non-zero-copy interface (dummy flat pages) --------------------
    def get(self, key, target_location=None, target_sizes=None):
        """The page's first buffer into ``target_location`` (a writable
        buffer, or a host address with ``target_sizes`` bytes) and returns
        it, or as a new memoryview; None when not stored."""
        p = key_to_prefix(key)
        if not self.store.exists(self.ns, p):
            return None
        if target_location is None:
            return self.store.get_layer(self.ns, p, 0)
        dst = (host_view(int(target_location), int(target_sizes))
               if isinstance(target_location, int) else target_location)
        self.store.read_layer_into(self.ns, p, 0, dst)
        return target_location

    def batch_get(self, keys, target_locations=None, target_sizes=None):
        locs = target_locations or [None] * len(keys)
        sizes = target_sizes or [None] * len(keys)
        return [self.get(k, t, s) for k, t, s in zip(keys, locs, sizes)]

    def set(self, key, value=None, target_location=None, target_sizes=None):
        src = value if value is not None else host_view(int(target_location), int(target_sizes))
        return self.store.batch_put(self.ns, [(key_to_prefix(key), 0, [(0, "opaque", src)])])[0]

    def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
        if values is not None:
            items = [(key_to_prefix(k), 0, [(0, "opaque", v)]) for k, v in zip(keys, values)]
        else:
            items = [(key_to_prefix(k), 0, [(0, "opaque", host_view(int(t), int(s)))])
                     for k, t, s in zip(keys, target_locations, target_sizes)]
        return all(self.store.batch_put(self.ns, items))

    def get_stats(self):
        return self.store.stats().as_dict()

    def close(self):
        if self.host_buffer is not None:
            self.host_buffer.unregister()
            self.host_buffer = None
        if self._owns_store:
            self.store.close()

