"""Engine adapters over auxstore, shaped like the storage interfaces engines
already call (docs/connectors.md maps each call to auxstore's, with the
copies and waits it costs):

- ``auxstore.adapters.sglang.AuxstoreHiCacheStorage``: SGLang HiCache's
  ``HiCacheStorage`` (``batch_exists`` returning the consecutive-hit count,
  ``batch_get_v1`` / ``batch_set_v1`` straight into the registered host
  pool). Load it with ``--hicache-storage-backend dynamic`` and
  ``{"backend_name": "auxstore", "module_path":
  "auxstore.adapters.sglang", "class_name": "AuxstoreHiCacheStorage",
  "interface_v1": 1, "path": "/var/lib/auxstore"}``.
- ``auxstore.adapters.vllm.AuxstoreOffloadingManager`` (scheduler side:
  ``lookup``, ``prepare_load``, ``complete_load``, ``prepare_store``,
  ``complete_store``) and ``AuxstoreBlockTransfer`` (worker side: the bytes
  between vLLM's CPU block pool and the store).

Neither engine is imported unless it is installed: then the adapters
subclass its base classes (so the engines' factories accept them) and use
its result types; otherwise they use look-alikes defined here.
"""
