"""The calls a peer's storage connector is shaped around, over one namespace.

SGLang's HiCache (``HiCacheStorage``: ``batch_exists(keys) -> int``,
``batch_get_v1(keys, host_indices) -> List[bool]``,
``batch_set_v1(keys, host_indices) -> List[bool]``) and vLLM's
``OffloadingManager`` (``lookup(block_hashes) -> int``, ``prepare_load`` /
``complete_load`` pinning blocks against eviction, ``prepare_store`` that may
return None) both treat storage as pages keyed by a chained hash. ``PageStore``
maps one page to one auxstore snapshot (its layers, any kinds) so that an
adapter for either is a few lines; see docs/python.md.
"""

from ._helpers import key_to_prefix


class PageStore:
    """Pages (snapshots) of one namespace, keyed by connector keys.

    Every method is one GIL-free call into auxstore for the whole batch."""

    def __init__(self, store, ns, *, lease_ms=30_000, key=key_to_prefix):
        self.store = store
        self.ns = ns
        self.lease_ms = lease_ms
        self.key = key

    def prefixes(self, keys):
        return [self.key(k) for k in keys]

    # -- existence ----------------------------------------------------------
    def batch_exists(self, keys):
        """How many LEADING keys are stored (HiCache batch_exists, vLLM lookup)."""
        return self.store.count_leading_stored(self.ns, self.prefixes(keys))

    lookup = batch_exists

    def exists(self, key):
        return self.store.exists(self.ns, self.key(key))

    # -- reads into the connector's host buffers -----------------------------
    def batch_get_into(self, keys, dests):
        """Reads each key's layers into its buffers (``dests[i]``: {layer:
        writable buffer}); a list of bools, False where the page is not
        stored (or was found corrupt). Buffers are written in place."""
        return self.store.batch_read_into(
            self.ns, list(zip(self.prefixes(keys), dests)))

    # -- writes ----------------------------------------------------------------
    def batch_set(self, keys, layers, token_counts=None):
        """Writes each key's layers (``layers[i]``: [(layer, kind, buffer)] or
        {layer: (kind, buffer)}, read in place); a list of bools, False where
        the store shed the page (full). A page already stored is True."""
        counts = token_counts if token_counts is not None else [0] * len(layers)
        return self.store.batch_put(
            self.ns, list(zip(self.prefixes(keys), counts, layers)))

    # -- pinning (vLLM prepare_load / complete_load) ----------------------------
    def prepare_load(self, keys):
        """Leases every key's page against eviction (all or none); returns the
        lease ids for ``complete_load``."""
        return self.store.acquire_leases(self.ns, self.prefixes(keys), self.lease_ms)

    def complete_load(self, leases):
        """Releases them (ones a restore or the timeout already ended are fine)."""
        return self.store.release_leases(list(leases))
