/* auxstore C ABI: opaque handles and plain C99 types over the C++ library.
 *
 * Conventions (docs/c-abi.md has the full rules):
 *  - Every fallible call returns an int status code: AUXSTORE_OK (0) or one
 *    of the AUXSTORE_* codes below (the values of auxstore::StatusCode, never
 *    renumbered).
 *  - `char** errmsg` may be NULL. When it is not and the call fails, any
 *    message already in *errmsg is freed and *errmsg receives a new one
 *    (malloc'd, NUL-terminated; free it with auxstore_free). On success
 *    *errmsg is left as it was.
 *  - Memory auxstore hands out (messages, layer and state bytes) is freed
 *    with auxstore_free. Handles are freed with their own close/destroy/
 *    release call; those accept NULL.
 *  - Handles are checked: each is a token in a process-wide handle table,
 *    not an address. A handle already closed or released, of another type,
 *    or never handed out is AUXSTORE_INVALID_ARGUMENT ("db is not a live
 *    auxstore_t handle ..."); a void close/destroy/release/cancel of one
 *    does nothing and counts in auxstore_misuse_count(). A handle that uses
 *    another keeps it alive: closing a store a pipeline uses invalidates
 *    the store handle at once, and the store closes with the last such
 *    pipeline (likewise backends under states and pipelines, pipelines
 *    under restore handles). docs/c-abi.md, "Handles".
 *  - A failed call changes nothing the caller can observe.
 *  - No C++ exception crosses this interface (AUXSTORE_INTERNAL instead).
 */
#ifndef AUXSTORE_C_H_
#define AUXSTORE_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes (auxstore::StatusCode) ---------------------------------- */
enum {
  AUXSTORE_OK = 0,
  AUXSTORE_NOT_FOUND = 1,
  AUXSTORE_CORRUPTION = 2,
  AUXSTORE_INVALID_ARGUMENT = 3,
  AUXSTORE_OUT_OF_RANGE = 4,
  AUXSTORE_CAPACITY = 5,
  AUXSTORE_IO_ERROR = 6,
  AUXSTORE_BUSY = 7,
  AUXSTORE_UNAVAILABLE = 8,
  AUXSTORE_NOT_SUPPORTED = 9,
  AUXSTORE_INTERNAL = 10
};

/* "OK", "NotFound", ... ; "Unknown" for a value that is not a code. Static
 * storage, never freed. */
const char* auxstore_code_name(int code);

/* Frees anything auxstore returned through a void** / char** (NULL is a no-op). */
void auxstore_free(void* ptr);

/* How many times, in this process, a call returning void (a close, destroy,
 * release or cancel) was given a handle that is not live: a double close or
 * release, a use after one, or a pointer auxstore never handed out. Such a
 * call does nothing, writes one warning to stderr (each distinct warning
 * once per process) and counts here. Calls returning a status answer
 * AUXSTORE_INVALID_ARGUMENT ("... is not a live ... handle") instead. */
uint64_t auxstore_misuse_count(void);

/* ---- blob kinds, durability, backends -------------------------------------- */
enum { AUXSTORE_KIND_QSA = 1, AUXSTORE_KIND_DSA = 2, AUXSTORE_KIND_OPAQUE = 3 };
enum { AUXSTORE_SYNC = 0, AUXSTORE_ASYNC = 1 };
enum { AUXSTORE_BACKEND_AUTO = 0, AUXSTORE_BACKEND_HOST = 1, AUXSTORE_BACKEND_CUDA = 2 };

/* ---- opaque handles --------------------------------------------------------- */
typedef struct auxstore_t auxstore_t;                   /* an open store */
typedef struct auxstore_options_t auxstore_options_t;   /* open options */
typedef struct auxstore_backend_t auxstore_backend_t;   /* host or CUDA backend */
typedef struct auxstore_state_t auxstore_state_t;       /* one layer's device state */
typedef struct auxstore_pipeline_t auxstore_pipeline_t; /* restores store -> states */

/* ---- plain types ------------------------------------------------------------ */

/* A namespace's geometry. qsa_hd == 0: no QSA layers; dsa_index_head_dim ==
 * 0: no DSA layers (then their other fields must be 0 too). */
typedef struct auxstore_geometry_t {
  uint32_t qsa_hd, qsa_max_tokens, qsa_ratio, qsa_rot;
  float qsa_theta, qsa_eps;
  uint32_t dsa_index_head_dim, dsa_capacity;
} auxstore_geometry_t;

/* One layer of a snapshot to write: `size` bytes at `data` (NULL only when
 * size is 0) of kind AUXSTORE_KIND_*. */
typedef struct auxstore_layer_t {
  uint32_t layer;
  uint32_t kind;
  const void* data;
  size_t size;
} auxstore_layer_t;

/* One layer of a stored snapshot, as its manifest describes it. */
typedef struct auxstore_layer_info_t {
  uint32_t layer;
  uint32_t kind;
  uint64_t bytes;
  uint64_t xxh3; /* the layer digest: XXH3-64 over the header and each page's and tail's XXH3-64 */
} auxstore_layer_info_t;

typedef struct auxstore_stats_t {
  uint64_t snapshots, payload_bytes, hits, misses, puts, duplicate_puts;
  uint64_t evictions, expirations, quarantines, orphans_seen, orphans_removed;
  uint64_t commit_seq, durable_watermark, lost_commits_at_open;
  /* bytes_read: layer bytes read and verified, each layer's whole blob
   * (header included), the same bytes a restore's bytes_restored counts. */
  uint64_t bytes_written, bytes_read, capacity_bytes, leases;
  int index_ready; /* 1 once the background LRU index has loaded */
  int fenced;      /* 1 after a failed write: reopen to write again */
  /* The bytes stored for the snapshots, each shared page once: what
   * capacity_bytes budgets (payload_bytes counts every snapshot's layers in
   * full). */
  uint64_t unique_bytes;
} auxstore_stats_t;

/* Where a restore puts one layer. */
typedef struct auxstore_restore_target_t {
  uint32_t layer;
  auxstore_state_t* state;
} auxstore_restore_target_t;

/* ---- options ---------------------------------------------------------------- */
/* Defaults: sync durability, 4 MiB chunks, no capacity or TTL limit,
 * read-write, create if missing. Returns NULL only when out of memory. */
auxstore_options_t* auxstore_options_create(void);
void auxstore_options_destroy(auxstore_options_t* options);
int auxstore_options_set_capacity_bytes(auxstore_options_t* options, uint64_t bytes,
                                        char** errmsg); /* 0 = unlimited */
int auxstore_options_set_ttl_seconds(auxstore_options_t* options, uint64_t seconds,
                                     char** errmsg); /* 0 = never expire */
int auxstore_options_set_chunk_bytes(auxstore_options_t* options, uint32_t bytes,
                                     char** errmsg); /* > 0 */
int auxstore_options_set_durability(auxstore_options_t* options, int durability,
                                    char** errmsg); /* AUXSTORE_SYNC / AUXSTORE_ASYNC */
int auxstore_options_set_read_only(auxstore_options_t* options, int read_only,
                                   char** errmsg); /* 0 or 1 */
int auxstore_options_set_create_if_missing(auxstore_options_t* options, int create,
                                           char** errmsg); /* 0 or 1 */
/* Threads that copy one read's layers into caller memory at once, when the
 * layers besides the largest hold a mebibyte or more (C++
 * Options::read_lanes; their destinations must not overlap): 0 (the
 * default) = one per two cores, 2 to 8; 1 = one layer after another; at
 * most 64. */
int auxstore_options_set_read_lanes(auxstore_options_t* options, uint32_t lanes, char** errmsg);

/* The shared tier (docs/shared-tier.md): `uri` is a
 * rados://POOL?conf=PATH&namespace=NS... string; NULL or "" = none (the
 * embedded store alone, as before). `write_mode`: AUXSTORE_SHARED_THROUGH (a
 * put returns once the pool acknowledged it) or AUXSTORE_SHARED_BEHIND
 * (once committed locally; the upload queued, at most `queue_bytes` > 0 of
 * snapshots, and when full a put waits, or with `shed_when_full` 1 is not
 * queued and counted: C++ StoreStats::shared_shed). The URI is checked by
 * auxstore_open. */
enum { AUXSTORE_SHARED_THROUGH = 0, AUXSTORE_SHARED_BEHIND = 1 };
int auxstore_options_set_shared(auxstore_options_t* options, const char* uri, int write_mode,
                                uint64_t queue_bytes, int shed_when_full, char** errmsg);
/* Whether what the store reads from the shared pool is also written into its
 * local directory, behind the call, so that the next read of it is local (C++
 * Options::shared_local_copies): 1 (the default) or 0. With 0 the lookups
 * auxstore_longest_prefix and auxstore_count_leading_stored answer from the
 * pool's records and the reads of snapshots only the pool holds go straight
 * from the pool into the caller's memory each time; calls that work on a
 * local copy (manifests and so the restore pipeline, row reads,
 * leases) still write one, and a put (AUXSTORE_SHARED_THROUGH) writes the
 * pool alone: nothing into the directory, returning once the pool holds the
 * snapshot (unreachable: AUXSTORE_UNAVAILABLE, nothing stored). */
int auxstore_options_set_shared_local_copies(auxstore_options_t* options, int local_copies,
                                             char** errmsg); /* 0 or 1 */

/* Log records: auxstore's own warnings and RocksDB's info log, delivered to
 * `fn` instead of any log file. `level` and `min_level` are AUXSTORE_LOG_*;
 * `source` is "auxstore" or "rocksdb"; `message` is one line, valid only
 * during the call. `fn` may run on any auxstore or RocksDB thread, at any
 * time while a store opened with these options is open (also from its
 * close): it must be thread-safe, must not block for long and must not call
 * auxstore. Without a callback, warnings go to stderr, each distinct one once. */
enum {
  AUXSTORE_LOG_DEBUG = 0,
  AUXSTORE_LOG_INFO = 1,
  AUXSTORE_LOG_WARN = 2,
  AUXSTORE_LOG_ERROR = 3
};
typedef void (*auxstore_log_fn)(void* arg, int level, const char* source, const char* message);
/* `fn` NULL: back to stderr. `min_level`: records below it are dropped. */
int auxstore_options_set_log_callback(auxstore_options_t* options, auxstore_log_fn fn, void* arg,
                                      int min_level, char** errmsg);

/* ---- store -------------------------------------------------------------------- */
/* Opens (creating when allowed) the store at `path`. `options` may be NULL
 * for the defaults. */
int auxstore_open(const char* path, const auxstore_options_t* options, auxstore_t** out,
                  char** errmsg);
/* Closes the store handle. The store closes now, or, while pipelines still
 * use it, when the last of them is destroyed (they go on working). NULL is
 * a no-op; a handle not live: nothing happens (auxstore_misuse_count). */
void auxstore_close(auxstore_t* db);

/* Registers (idempotently) a model identity and geometry; *ns_out receives
 * the namespace id (a stable fingerprint of both). */
int auxstore_register_namespace(auxstore_t* db, const char* model_id,
                                const auxstore_geometry_t* geometry, uint64_t* ns_out,
                                char** errmsg);

/* Element types of a declared opaque layer (auxstore::DType). */
enum {
  AUXSTORE_DTYPE_U8 = 1,
  AUXSTORE_DTYPE_I8 = 2,
  AUXSTORE_DTYPE_BF16 = 3,
  AUXSTORE_DTYPE_F16 = 4,
  AUXSTORE_DTYPE_F32 = 5,
  AUXSTORE_DTYPE_I32 = 6,
  AUXSTORE_DTYPE_F64 = 7,
  AUXSTORE_DTYPE_I64 = 8
};

/* An opaque layer's declared shape: a blob of it must be exactly
 * prod(shape[0..ndim)) * sizeof(dtype) bytes. */
typedef struct auxstore_opaque_layer_desc_t {
  uint32_t layer;
  uint32_t dtype; /* AUXSTORE_DTYPE_* */
  uint32_t ndim;  /* 1..8 */
  uint64_t shape[8];
} auxstore_opaque_layer_desc_t;

/* A namespace's whole identity. Set struct_size = sizeof(auxstore_namespace_t).
 * weight_revision may be NULL (none); tp_world_size 0 is taken as 1
 * (unsharded). Every field but geometry.dsa_capacity is part of the id, so
 * a snapshot of another weight revision or shard is never returned. */
typedef struct auxstore_namespace_t {
  size_t struct_size;
  const char* model_id;
  const char* weight_revision;
  uint32_t tp_rank, tp_world_size;
  auxstore_geometry_t geometry;
  size_t n_opaque_layers; /* ascending, unique layers */
  const auxstore_opaque_layer_desc_t* opaque_layers;
  /* Rows per stored page of QSA/DSA layers (part of the id); 0: each
   * paged put's block size. A struct_size that ends before this field
   * means 0. */
  uint32_t page_tokens;
} auxstore_namespace_t;

/* Registers (idempotently) a namespace with its whole identity. */
int auxstore_register_namespace_ex(auxstore_t* db, const auxstore_namespace_t* ns, uint64_t* ns_out,
                                   char** errmsg);

/* Writes a snapshot of `n_layers` layers (unique layer indices, each checked
 * against the namespace geometry first; nothing is written on failure). A
 * prefix already stored: OK, nothing written. */
int auxstore_put_snapshot(auxstore_t* db, uint64_t ns, const uint8_t prefix[16],
                          uint64_t token_count, size_t n_layers, const auxstore_layer_t* layers,
                          char** errmsg);
/* The same, storing `token_digest` (auxstore_token_digest of the tokens the
 * prefix covers) so auxstore_longest_prefix_for_tokens checks it. */
int auxstore_put_snapshot_with_digest(auxstore_t* db, uint64_t ns, const uint8_t prefix[16],
                                      uint64_t token_count, const uint8_t token_digest[16],
                                      size_t n_layers, const auxstore_layer_t* layers,
                                      char** errmsg);

/* How a snapshot is put (auxstore_put_snapshot_ex). Zero it, then set
 * struct_size = sizeof(auxstore_put_options_t). */
typedef struct auxstore_put_options_t {
  size_t struct_size;
  const uint8_t* token_digest; /* 16 bytes (auxstore_token_digest), or NULL */
  /* The chained prefix hashes of the snapshot's tokens, one per complete
   * block of block_size tokens (auxstore_prefix_hash gives them). With a
   * chain, QSA and DSA rows are stored in pages shared with every snapshot
   * of the same namespace and chain: only pages not yet stored are written
   * (docs/format.md, "Pages"). NULL: each layer is stored whole. */
  const uint8_t (*block_chain)[16];
  size_t n_blocks;
  uint32_t block_size;
} auxstore_put_options_t;

/* auxstore_put_snapshot with options (NULL: none). */
int auxstore_put_snapshot_ex(auxstore_t* db, uint64_t ns, const uint8_t prefix[16],
                             uint64_t token_count, size_t n_layers, const auxstore_layer_t* layers,
                             const auxstore_put_options_t* options, char** errmsg);

/* One snapshot of auxstore_put_snapshots: what auxstore_put_snapshot_ex
 * takes. */
typedef struct auxstore_snapshot_put_t {
  uint64_t ns;
  uint8_t prefix[16];
  uint64_t token_count;
  size_t n_layers;
  const auxstore_layer_t* layers;
  const auxstore_put_options_t* options; /* NULL: none */
} auxstore_snapshot_put_t;
/* Puts `n` snapshots (a connector's batch of pages), each exactly as
 * auxstore_put_snapshot_ex puts it, in order; the outcome of snapshot i in
 * results[i] (an AUXSTORE_* code; `results` may be NULL). A snapshot's own
 * bad argument (a NULL pointer, an unknown kind, bad options) or refused
 * layers fail that snapshot only: the others are still put. Returns
 * AUXSTORE_OK when every snapshot was put, else the first failed one's
 * code, its message naming snapshots[i]. A call that fails as a whole (db
 * not live, out of memory) sets every results[i] to its code (unless
 * `snapshots` is NULL). On a store with a shared pool
 * (AUXSTORE_SHARED_THROUGH) the pages of all go to the pool in one window
 * rather than one snapshot after another. */
int auxstore_put_snapshots(auxstore_t* db, const auxstore_snapshot_put_t* snapshots, size_t n,
                           int* results, char** errmsg);

/* The longest stored prefix among `n` candidates ordered shortest to
 * longest: AUXSTORE_OK with its index in *found_index, or AUXSTORE_NOT_FOUND
 * (with a message; *found_index untouched) when none is stored. */
int auxstore_longest_prefix(auxstore_t* db, uint64_t ns, const uint8_t (*candidates)[16], size_t n,
                            size_t* found_index, char** errmsg);

/* The longest stored prefix of `tokens` at every block boundary
 * (auxstore_prefix_hash with `block_size` and `salt`), token digest checked
 * when stored: AUXSTORE_OK with the prefix and the tokens it covers, or
 * AUXSTORE_NOT_FOUND. */
int auxstore_longest_prefix_for_tokens(auxstore_t* db, uint64_t ns, const uint32_t* tokens,
                                       size_t n_tokens, uint32_t block_size, uint64_t salt,
                                       uint8_t prefix_out[16], uint64_t* tokens_out, char** errmsg);

/* A stored snapshot's manifest: its token count and up to `capacity` layer
 * descriptions; *n_layers receives how many it has. AUXSTORE_OUT_OF_RANGE
 * (and *n_layers set) when `capacity` is too small; `layers` may be NULL
 * when capacity is 0. */
int auxstore_get_manifest(auxstore_t* db, uint64_t ns, const uint8_t prefix[16],
                          uint64_t* token_count, auxstore_layer_info_t* layers, size_t capacity,
                          size_t* n_layers, char** errmsg);

/* One whole layer, every chunk checksum and the whole-blob XXH3 verified
 * (a mismatch: AUXSTORE_CORRUPTION and the snapshot is quarantined). *data
 * is malloc'd (non-NULL even for 0 bytes): free it with auxstore_free. */
int auxstore_get_layer(auxstore_t* db, uint64_t ns, const uint8_t prefix[16], uint32_t layer,
                       void** data, size_t* size, char** errmsg);

/* ---- leases, batched lookups, reads into caller memory ---------------------- */
/* A lease pins a snapshot against eviction, TTL expiry and compaction until
 * it is released, a restore given it completes, or `lease_ms` passes (it
 * never holds capacity forever). Leases belong to this handle; an explicit
 * erase still removes a leased snapshot. 0 is no lease. */
int auxstore_lease_acquire(auxstore_t* db, uint64_t ns, const uint8_t prefix[16], uint64_t lease_ms,
                           uint64_t* lease_out, char** errmsg);
/* AUXSTORE_NOT_FOUND when the lease is unknown, expired or released, or
 * its snapshot was erased. */
int auxstore_lease_release(auxstore_t* db, uint64_t lease, char** errmsg);

/* auxstore_longest_prefix that also leases what it found, in one step. */
int auxstore_longest_prefix_leased(auxstore_t* db, uint64_t ns, const uint8_t (*candidates)[16],
                                   size_t n, uint64_t lease_ms, size_t* found_index,
                                   uint64_t* lease_out, char** errmsg);
/* auxstore_longest_prefix_for_tokens that also leases what it found. */
int auxstore_longest_prefix_for_tokens_leased(auxstore_t* db, uint64_t ns, const uint32_t* tokens,
                                              size_t n_tokens, uint32_t block_size, uint64_t salt,
                                              uint64_t lease_ms, uint8_t prefix_out[16],
                                              uint64_t* tokens_out, uint64_t* lease_out,
                                              char** errmsg);

/* Which of `n` prefixes are stored, in one batched lookup: found[i] = 1 or 0,
 * and (when token_counts is not NULL) the token count of each one found.
 * Counts no hit and changes no recency. */
int auxstore_get_manifests(auxstore_t* db, uint64_t ns, const uint8_t (*prefixes)[16], size_t n,
                           uint8_t* found, uint64_t* token_counts, char** errmsg);

/* One layer into memory the caller provides (pinned or not). */
typedef struct auxstore_layer_dest_t {
  uint32_t layer;
  void* data;
  size_t capacity; /* bytes at data */
  size_t size;     /* out: the layer's size */
} auxstore_layer_dest_t;

/* Reads `n` layers of one snapshot straight into the callers' buffers: each
 * chunk is copied once, from the store's block into `data`, while its
 * checksum is verified; the whole-blob hash is checked too. No intermediate
 * allocation; one manifest read and one record iterator for all `n`
 * layers. AUXSTORE_OUT_OF_RANGE (before anything is read) when a capacity
 * is too small; AUXSTORE_CORRUPTION quarantines the snapshot (the buffers
 * then hold partial bytes). Each layer read whole has its `size` set. */
int auxstore_read_layers(auxstore_t* db, uint64_t ns, const uint8_t prefix[16],
                         auxstore_layer_dest_t* dests, size_t n, char** errmsg);

/* Removes a snapshot (durably: a synced commit). A prefix not stored: OK,
 * nothing changes. */
int auxstore_erase(auxstore_t* db, uint64_t ns, const uint8_t prefix[16], char** errmsg);
/* Makes every snapshot accepted so far durable, as with AUXSTORE_SYNC. */
int auxstore_flush(auxstore_t* db, char** errmsg);
int auxstore_stats(auxstore_t* db, auxstore_stats_t* out, char** errmsg);

/* The shared tier's counters, by this handle (docs/shared-tier.md); all 0
 * and `shared` 0 for a store without one. Set out->struct_size to
 * sizeof(auxstore_shared_stats_t) first: AUXSTORE_INVALID_ARGUMENT when it
 * is smaller; a later, larger struct is filled as far as this one goes. */
typedef struct auxstore_shared_stats_t {
  size_t struct_size;
  int shared;               /* 1: the store has a shared tier */
  uint64_t uploads;         /* snapshots committed to the pool (or found there) */
  uint64_t pages_stored;    /* page objects created in the pool */
  uint64_t pages_present;   /* pages the pool held already (nothing stored) */
  uint64_t upload_failures; /* upload attempts that failed (retried while queued) */
  uint64_t shed;            /* write-behind snapshots not uploaded: the queue was full */
  uint64_t queued;          /* write-behind snapshots waiting for upload now */
  uint64_t restores;        /* snapshots restored from the pool into the local store */
  uint64_t corruptions;     /* pool objects found damaged (their snapshots quarantined) */
} auxstore_shared_stats_t;
int auxstore_shared_stats(auxstore_t* db, auxstore_shared_stats_t* out, char** errmsg);

/* Prometheus text exposition (format 0.0.4) of the store's counters and
 * gauges and, when `pipeline` is not NULL, the pipeline's counters and
 * latency / throughput histograms (docs/metrics.md lists every metric).
 * `db` or `pipeline` may be NULL, not both. `labels` (may be NULL) is put on
 * every sample as it is, e.g. "instance=\"a\"". *text is malloc'd: free it
 * with auxstore_free. */
int auxstore_metrics_text(auxstore_t* db, const auxstore_pipeline_t* pipeline, const char* labels,
                          char** text, char** errmsg);

/* ---- prefix hashes ------------------------------------------------------------ */
/* Chained block hashes of `tokens` (one per complete block of `block_size`,
 * shortest first) seeded with `salt`. *n_out receives the count,
 * n_tokens / block_size; AUXSTORE_OUT_OF_RANGE when it exceeds `capacity`
 * (nothing written). `tokens` may be NULL when n_tokens is 0, `out` when
 * capacity is 0. */
int auxstore_prefix_hash(const uint32_t* tokens, size_t n_tokens, uint32_t block_size,
                         uint64_t salt, uint8_t (*out)[16], size_t capacity, size_t* n_out,
                         char** errmsg);
/* Digest of the exact token sequence (independent of the prefix hash). */
int auxstore_token_digest(const uint32_t* tokens, size_t n_tokens, uint64_t salt, uint8_t out[16],
                          char** errmsg);

/* The CPU reference of the re-pool kernel (design.md section 2): blocks
 * [0, n_blocks) of `raw_keys` (ingested * qsa_hd bf16) with the layer's
 * k_pool_k and k_norm_w (qsa_hd bf16 each) into `block_keys_out`
 * (n_blocks * qsa_hd bf16). What a restore's block keys are checked
 * against; refused (nothing written) as the kernel's launch would be. */
int auxstore_qsa_block_pool_host(const auxstore_geometry_t* geometry, const void* raw_keys,
                                 uint64_t ingested, const void* k_pool_k, const void* k_norm_w,
                                 uint32_t n_blocks, void* block_keys_out, char** errmsg);

/* ---- backends and device states ------------------------------------------------ */
/* AUXSTORE_BACKEND_AUTO: CUDA when built and a device is present, else the
 * host backend. AUXSTORE_BACKEND_CUDA without one: AUXSTORE_UNAVAILABLE.
 * Bound to the calling thread's current CUDA device. */
int auxstore_backend_create(int kind, auxstore_backend_t** out, char** errmsg);
/* The same, bound to CUDA device `device` (every call of the backend runs
 * on it; AUXSTORE_INVALID_ARGUMENT for an index that does not exist). The
 * host backend ignores it. */
int auxstore_backend_create_on_device(int kind, int device, auxstore_backend_t** out,
                                      char** errmsg);
/* The device index the backend is bound to (0 for host); -1 for NULL. */
int auxstore_backend_device(const auxstore_backend_t* backend);

/* ---- device memory, streams ---------------------------------------------------
 * Device addresses and streams are plain integers. On the CUDA backend a
 * device address is a CUdeviceptr and a stream a cudaStream_t: pass the
 * engine's own (cudaMalloc'd buffers, its streams) as they are. On the host
 * backend device memory is host memory handed out by auxstore_device_alloc
 * (auxstore checks every copy against it) and streams are in-order executors
 * from auxstore_stream_create. Stream 0 is the legacy default stream:
 * auxstore itself never uses it. */
int auxstore_device_alloc(auxstore_backend_t* backend, size_t bytes, uint64_t* ptr_out,
                          char** errmsg);
int auxstore_device_free(auxstore_backend_t* backend, uint64_t ptr, char** errmsg);
/* Copies `bytes` host bytes to ptr+offset, asynchronously on `stream`:
 * `src` must stay valid until the stream has passed the copy. */
int auxstore_device_copy_h2d(auxstore_backend_t* backend, uint64_t ptr, uint64_t offset,
                             const void* src, size_t bytes, uint64_t stream, char** errmsg);
/* Copies ptr+offset to `dst` after the stream's earlier work; returns once
 * the bytes are in `dst`. */
int auxstore_device_copy_d2h(auxstore_backend_t* backend, void* dst, uint64_t ptr, uint64_t offset,
                             size_t bytes, uint64_t stream, char** errmsg);
/* A new stream (non-blocking on CUDA). */
int auxstore_stream_create(auxstore_backend_t* backend, uint64_t* stream_out, char** errmsg);
/* Waits for the stream's work, then destroys it. */
int auxstore_stream_destroy(auxstore_backend_t* backend, uint64_t stream, char** errmsg);
int auxstore_stream_synchronize(auxstore_backend_t* backend, uint64_t stream, char** errmsg);
/* Destroys the backend handle; the backend goes now, or with the last state
 * or pipeline still using it. NULL is a no-op; a handle not live: nothing
 * happens (auxstore_misuse_count). */
void auxstore_backend_destroy(auxstore_backend_t* backend);
/* AUXSTORE_BACKEND_HOST or AUXSTORE_BACKEND_CUDA; -1 for NULL. */
int auxstore_backend_kind(const auxstore_backend_t* backend);
/* "host" or "cuda:<device>"; valid while the backend lives; "" for NULL. */
const char* auxstore_backend_name(const auxstore_backend_t* backend);

/* A fresh QSA state for a layer of `geometry` (its qsa_* fields). The layer
 * weights k_pool_k and k_norm_w (qsa_hd bf16 values each, host memory) are
 * copied to the device and owned by the state. */
int auxstore_qsa_state_create(auxstore_backend_t* backend, const auxstore_geometry_t* geometry,
                              const void* k_pool_k, const void* k_norm_w, auxstore_state_t** out,
                              char** errmsg);
/* A fresh DSA state (dsa_index_head_dim, dsa_capacity rows). */
int auxstore_dsa_state_create(auxstore_backend_t* backend, const auxstore_geometry_t* geometry,
                              auxstore_state_t** out, char** errmsg);
/* A fresh opaque state holding up to `capacity` bytes. */
int auxstore_opaque_state_create(auxstore_backend_t* backend, uint64_t capacity,
                                 auxstore_state_t** out, char** errmsg);
/* ---- engine-owned (borrowed) states --------------------------------------------
 * The engine's own device buffers for one layer of one sequence, and its
 * current counters. auxstore restores into them and snapshots from them,
 * checks every copy against the sizes given here, and never frees them:
 * auxstore_state_release frees only the handle. A restore needs the
 * counters 0; a snapshot takes what they say. */
typedef struct auxstore_qsa_buffers_t {
  uint64_t raw_keys, raw_keys_bytes;     /* >= qsa_max_tokens * qsa_hd * 2 bytes */
  uint64_t block_keys, block_keys_bytes; /* >= qsa_max_tokens / qsa_ratio * qsa_hd * 2 */
  uint64_t k_pool_k, k_norm_w;           /* the layer's weights: qsa_hd bf16 each, on the device */
} auxstore_qsa_buffers_t;
int auxstore_qsa_state_borrow(auxstore_backend_t* backend, const auxstore_geometry_t* geometry,
                              const auxstore_qsa_buffers_t* buffers, uint64_t ingested,
                              uint64_t pooled, auxstore_state_t** out, char** errmsg);

typedef struct auxstore_dsa_buffers_t {
  uint64_t capacity_rows;            /* rows every buffer holds */
  uint64_t k_normed, k_normed_bytes; /* >= capacity_rows * dsa_index_head_dim * 2 */
  uint64_t gate, gate_bytes;         /* >= capacity_rows * dsa_index_head_dim * 2 */
  uint64_t valid, valid_bytes;       /* >= capacity_rows */
} auxstore_dsa_buffers_t;
int auxstore_dsa_state_borrow(auxstore_backend_t* backend, const auxstore_geometry_t* geometry,
                              const auxstore_dsa_buffers_t* buffers, uint64_t len,
                              auxstore_state_t** out, char** errmsg);

int auxstore_opaque_state_borrow(auxstore_backend_t* backend, uint64_t buffer, uint64_t capacity,
                                 uint64_t size, auxstore_state_t** out, char** errmsg);

/* A state's device buffers: QSA raw_keys, block_keys; DSA k_normed, gate,
 * valid; opaque buffer. *n receives how many (2, 3 or 1). */
int auxstore_state_buffers(const auxstore_state_t* state, uint64_t ptrs[3], size_t* n,
                           char** errmsg);
/* 1 when the engine owns the state's buffers (a borrowed state), else 0. */
int auxstore_state_is_borrowed(const auxstore_state_t* state);
/* The engine reports what its own kernels wrote: QSA ingested / pooled,
 * DSA len, opaque size (pooled must be 0 for those), checked as a restored
 * header is. */
int auxstore_state_set_counters(auxstore_state_t* state, uint64_t count, uint64_t pooled,
                                char** errmsg);

/* Frees the state's device memory and the handle (gone even when an error
 * is returned: the first failure freeing a buffer). NULL: AUXSTORE_OK.
 * AUXSTORE_BUSY, nothing released, while a restore targets the state (until
 * it is done) or another call uses it; AUXSTORE_INVALID_ARGUMENT for a
 * state already released. */
int auxstore_state_release(auxstore_state_t* state, char** errmsg);

/* AUXSTORE_KIND_*; 0 for NULL. */
int auxstore_state_kind(const auxstore_state_t* state);
/* The counters: QSA ingested / DSA len / opaque size in *count, QSA pooled
 * blocks in *pooled (0 for other kinds). Either pointer may be NULL. */
int auxstore_state_counters(const auxstore_state_t* state, uint64_t* count, uint64_t* pooled,
                            char** errmsg);
/* Fills a fresh state from a blob of its kind (what the engine's own ingest
 * would leave), synchronously; checked as a restore is. */
int auxstore_state_load(auxstore_state_t* state, const void* blob, size_t size, char** errmsg);
/* Host readback: the state's current blob (the bytes a snapshot of it holds).
 * *data is malloc'd: free it with auxstore_free. */
int auxstore_state_read(const auxstore_state_t* state, void** data, size_t* size, char** errmsg);
/* Host readback of a QSA state's pooled block keys (pooled * qsa_hd bf16),
 * which a restore recomputes on the device. */
int auxstore_qsa_state_read_block_keys(const auxstore_state_t* state, void** data, size_t* size,
                                       char** errmsg);

/* ---- restore pipeline ------------------------------------------------------------ */
/* A restore pipeline over `db` and `backend`; it keeps both alive (closing
 * or destroying their handles first is safe). */
int auxstore_pipeline_create(auxstore_t* db, auxstore_backend_t* backend, auxstore_pipeline_t** out,
                             char** errmsg);
/* Waits for running restores and accepted snapshots, then frees the
 * pipeline; while restore handles of it are still held, that happens when
 * the last is released. NULL is a no-op; a handle not live: nothing
 * happens (auxstore_misuse_count). */
void auxstore_pipeline_destroy(auxstore_pipeline_t* pipeline);

/* Called once when a restore ends, on a pipeline thread: `code` and a
 * message (NULL when code is AUXSTORE_OK) valid only during the call. */
typedef void (*auxstore_restore_done_fn)(void* arg, int code, const char* message);

/* Starts restoring snapshot (ns, prefix) into `n` fresh target states (one
 * per layer; the snapshot's layers and the targets must match). AUXSTORE_OK:
 * started, `done` will be called; an error: refused, `done` is not called.
 * The targets must not be used or released until `done` runs. On failure no
 * target's counters move; a corrupt snapshot is also quarantined. */
int auxstore_restore(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                     const auxstore_restore_target_t* targets, size_t n,
                     auxstore_restore_done_fn done, void* arg, char** errmsg);
/* The same, waiting for the result. */
int auxstore_restore_wait(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                          const auxstore_restore_target_t* targets, size_t n, char** errmsg);

/* ---- pipeline options, stats, write-behind snapshots ------------------------- */
typedef struct auxstore_pipeline_options_t {
  size_t struct_size; /* sizeof(auxstore_pipeline_options_t) */
  size_t staging_buffers;
  size_t staging_bytes; /* >= the store's chunk size */
  size_t io_threads;
  size_t restore_read_ahead;
  size_t snapshot_queue;
  uint64_t snapshot_bytes;
} auxstore_pipeline_options_t;
/* Fills the defaults (4 x 4 MiB staging; I/O threads and layers in flight one
 * per two cores, 2 to 8; 8 snapshots and 64 MiB queued). */
void auxstore_pipeline_options_init(auxstore_pipeline_options_t* options);
/* auxstore_pipeline_create with options (NULL: the defaults). */
int auxstore_pipeline_create_with(auxstore_t* db, auxstore_backend_t* backend,
                                  const auxstore_pipeline_options_t* options,
                                  auxstore_pipeline_t** out, char** errmsg);
/* The pipeline's own stream (restores started without a stream run on it). */
uint64_t auxstore_pipeline_stream(const auxstore_pipeline_t* pipeline);

#define AUXSTORE_LATENCY_BUCKETS 24
#define AUXSTORE_THROUGHPUT_BUCKETS 18
typedef struct auxstore_pipeline_stats_t {
  uint64_t restores_ok, restores_failed, restores_cancelled, restores_running, bytes_restored;
  uint64_t snapshots_accepted, snapshots_shed, snapshots_written, snapshots_failed;
  uint64_t bytes_snapshotted, staging_waits;
  /* Restores that succeeded, by latency: bucket i counts [2^i, 2^(i+1)) us,
   * the last one everything above; and the sum. */
  uint64_t restore_latency_us[AUXSTORE_LATENCY_BUCKETS];
  uint64_t restore_latency_us_sum;
  /* Their throughput: bucket i counts [2^i, 2^(i+1)) MiB/s; and the sum. */
  uint64_t restore_throughput_mibps[AUXSTORE_THROUGHPUT_BUCKETS];
  double restore_throughput_mibps_sum;
} auxstore_pipeline_stats_t;
int auxstore_pipeline_stats(const auxstore_pipeline_t* pipeline, auxstore_pipeline_stats_t* out,
                            char** errmsg);

typedef struct auxstore_snapshot_source_t {
  uint32_t layer;
  const auxstore_state_t* state;
} auxstore_snapshot_source_t;
/* Write-behind snapshot: the sources' bytes are copied D2H on `stream` (the
 * engine's, ordered after the kernels that wrote them) into pinned memory
 * and written to the store off the caller's thread. AUXSTORE_OK: accepted
 * (the sources may change once `stream` passed the copies).
 * AUXSTORE_CAPACITY: shed (the write-behind queue or its memory is full),
 * nothing enqueued, counted in snapshots_shed: the engine never blocks.
 * Refused before anything is enqueued: a namespace the store does not know
 * (AUXSTORE_NOT_FOUND), a layer its geometry or declared opaque shape
 * refuses, and stream 0, the legacy default stream, as restores refuse it
 * (AUXSTORE_INVALID_ARGUMENT). */
int auxstore_snapshot(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                      uint64_t token_count, const auxstore_snapshot_source_t* sources, size_t n,
                      uint64_t stream, char** errmsg);
/* auxstore_snapshot put with `options` (NULL: none): a token digest, and a
 * block chain so the QSA/DSA rows go into pages shared with the chain's
 * other snapshots (auxstore_put_snapshot_ex). A bad chain is refused
 * before anything is enqueued. */
int auxstore_snapshot_ex(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                         uint64_t token_count, const auxstore_snapshot_source_t* sources, size_t n,
                         uint64_t stream, const auxstore_put_options_t* options, char** errmsg);
/* Called once when an accepted write-behind snapshot's write ends, on a
 * pipeline thread, before auxstore_pipeline_flush counts it done: `prefix`
 * (its 16 bytes), `code` AUXSTORE_OK when it was written (durable under
 * AUXSTORE_SYNC; under AUXSTORE_ASYNC once auxstore_flush returns) or the
 * write's error, and a message (NULL on success) naming the prefix. The
 * arguments are valid only during the call; it must not block for long and
 * must not call auxstore. */
typedef void (*auxstore_snapshot_done_fn)(void* arg, const uint8_t* prefix, int code,
                                          const char* message);
/* auxstore_snapshot_ex with a per-snapshot completion (`done` not NULL).
 * Called only for an accepted snapshot (AUXSTORE_OK here): a refused or
 * shed one is answered by this call's code instead. */
int auxstore_snapshot_with_done(auxstore_pipeline_t* pipeline, uint64_t ns,
                                const uint8_t prefix[16], uint64_t token_count,
                                const auxstore_snapshot_source_t* sources, size_t n,
                                uint64_t stream, const auxstore_put_options_t* options,
                                auxstore_snapshot_done_fn done, void* arg, char** errmsg);
/* Waits until every accepted snapshot is written; the first write error
 * since the last flush (its message names the snapshot's prefix). */
int auxstore_pipeline_flush(auxstore_pipeline_t* pipeline, char** errmsg);

/* ---- restores with a handle ---------------------------------------------------- */
typedef struct auxstore_restore_handle_t auxstore_restore_handle_t;
/* Called once per layer when its bytes (and QSA re-pool) are on the device,
 * on a backend thread (CUDA's callback thread): it must not block or call
 * auxstore or the CUDA runtime. */
typedef void (*auxstore_layer_done_fn)(void* arg, uint32_t layer);

typedef struct auxstore_restore_options_t {
  size_t struct_size; /* sizeof(auxstore_restore_options_t) */
  int use_stream;     /* 1: run on `stream` (not 0); 0: the pipeline's own stream */
  uint64_t stream;
  uint64_t lease; /* released when the restore completes; 0: none */
  auxstore_layer_done_fn on_layer;
  void* on_layer_arg;
  auxstore_restore_done_fn done; /* may be NULL */
  void* done_arg;
  /* use_rows 1: rows [first_row, last_row) only, of QSA and DSA targets
   * that hold exactly rows [0, first_row) (the engine has the head on its
   * device): each layer is still read and verified whole, only the range is
   * uploaded, the target's counters become last_row (QSA: the blocks
   * complete by then re-pooled from the first it has not pooled).
   * AUXSTORE_INVALID_ARGUMENT (nothing uploaded) for an opaque target, a
   * range outside the snapshot's rows, or a target holding another number
   * of rows. Callers built before these fields pass the shorter struct. */
  int use_rows;
  uint64_t first_row;
  uint64_t last_row;
} auxstore_restore_options_t;
void auxstore_restore_options_init(auxstore_restore_options_t* options);

/* Starts a restore into `n` fresh target states. AUXSTORE_OK: started, *out
 * is its handle (release it with auxstore_restore_handle_release); errors
 * found later (a missing snapshot, corruption) are the handle's result. The
 * targets must not be used or released until the restore is done. On failure
 * no counter moves. */
int auxstore_restore_start(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                           const auxstore_restore_target_t* targets, size_t n,
                           const auxstore_restore_options_t* options,
                           auxstore_restore_handle_t** out, char** errmsg);
/* 1 when done, 0 while running (-1 for NULL or a handle not live). */
int auxstore_restore_poll(const auxstore_restore_handle_t* handle);
/* Waits until done; the restore's result. */
int auxstore_restore_join(auxstore_restore_handle_t* handle, char** errmsg);
/* Asks it to stop; it then ends with AUXSTORE_UNAVAILABLE ("cancelled")
 * unless it already committed. Returns at once. */
void auxstore_restore_cancel(auxstore_restore_handle_t* handle);
/* 1 when `layer`'s bytes (and re-pool) are on the device, else 0. */
int auxstore_restore_layer_done(const auxstore_restore_handle_t* handle, uint32_t layer);
/* Waits until `layer` is done (AUXSTORE_OK) or the restore failed before it
 * (its error). Counters are still committed only when the whole restore is. */
int auxstore_restore_wait_layer(auxstore_restore_handle_t* handle, uint32_t layer, char** errmsg);
/* Makes the engine's `stream` wait, on the device, for `layer` (or, with
 * the _all variant, every layer). Blocks the host only until the layer's
 * work is enqueued, not until it completes. */
int auxstore_restore_stream_wait_layer(auxstore_restore_handle_t* handle, uint32_t layer,
                                       uint64_t stream, char** errmsg);
int auxstore_restore_stream_wait_all(auxstore_restore_handle_t* handle, uint64_t stream,
                                     char** errmsg);
/* The layers done so far, ascending, up to `capacity`; *n receives how many
 * (AUXSTORE_OUT_OF_RANGE, with *n set, when capacity is too small). For a
 * failed restore: which layers' bytes were restored. */
int auxstore_restore_layers_done(const auxstore_restore_handle_t* handle, uint32_t* layers,
                                 size_t capacity, size_t* n, char** errmsg);
/* Frees the handle. A restore still running goes on (its targets stay its
 * own until it is done). NULL is a no-op; a handle not live: nothing
 * happens (auxstore_misuse_count). */
void auxstore_restore_handle_release(auxstore_restore_handle_t* handle);

/* ---- many snapshots into device states, one handle ---------------------------- */
/* One snapshot of a batched restore: its targets (fresh states, one per
 * layer, as auxstore_restore_start's) and the lease (from
 * auxstore_lookup_leased, 0: none) released when its restore completes. */
typedef struct auxstore_restore_snapshot_t {
  uint64_t ns;
  uint8_t prefix[16];
  const auxstore_restore_target_t* targets;
  size_t n_targets;
  uint64_t lease;
} auxstore_restore_snapshot_t;
typedef struct auxstore_restore_batch_t auxstore_restore_batch_t;
/* Restores `n` snapshots (vLLM's start_load_kv of a step's requests) with
 * one handle; snapshot i's completion and each of its layers' are waited
 * for or polled by i. Every snapshot is checked first (its targets as
 * auxstore_restore_start checks them, and no state in two snapshots):
 * AUXSTORE_INVALID_ARGUMENT naming snapshots[i], nothing started. Then each
 * is one restore of the pipeline (store block -> staging, verified -> the
 * state, on `stream` when use_stream is 1, else the pipeline's stream), all
 * running at once; a snapshot's own error (missing, corrupt) never stops
 * the others. `options` may be NULL; its lease, on_layer and done must be
 * 0 / NULL (a lease is per snapshot, above); its stream and row range apply
 * to every snapshot. */
int auxstore_restore_batch_start(auxstore_pipeline_t* pipeline,
                                 const auxstore_restore_snapshot_t* snapshots, size_t n,
                                 const auxstore_restore_options_t* options,
                                 auxstore_restore_batch_t** out, char** errmsg);
/* 1 when every snapshot is done, 0 while some run (-1: handle not live). */
int auxstore_restore_batch_poll(const auxstore_restore_batch_t* batch);
/* 1 when snapshot i is done, 0 while it runs (-1: handle not live or i >= n). */
int auxstore_restore_batch_snapshot_done(const auxstore_restore_batch_t* batch, size_t i);
/* 1 when `layer` of snapshot i is on the device, else 0 (-1 as above). */
int auxstore_restore_batch_layer_done(const auxstore_restore_batch_t* batch, size_t i,
                                      uint32_t layer);
/* Waits for snapshot i: its result (the message names snapshots[i]). */
int auxstore_restore_batch_wait_snapshot(auxstore_restore_batch_t* batch, size_t i, char** errmsg);
/* Waits for `layer` of snapshot i (vLLM's wait_for_layer_load): OK once it
 * is on the device, or the snapshot's error if it failed before. */
int auxstore_restore_batch_wait_layer(auxstore_restore_batch_t* batch, size_t i, uint32_t layer,
                                      char** errmsg);
/* Waits for every snapshot: OK, or the first failed one's error. */
int auxstore_restore_batch_wait(auxstore_restore_batch_t* batch, char** errmsg);
/* The snapshots (indices) done since the last call, each once, ascending
 * (vLLM's get_finished): up to `capacity` into `indices`, *n how many; the
 * rest come with a later call. Does not wait. */
int auxstore_restore_batch_finished(auxstore_restore_batch_t* batch, size_t* indices,
                                    size_t capacity, size_t* n, char** errmsg);
/* Asks every restore to stop (each ends AUXSTORE_UNAVAILABLE, "cancelled",
 * unless it already committed). Returns at once. */
void auxstore_restore_batch_cancel(auxstore_restore_batch_t* batch);
/* Frees the handle; restores still running go on (their targets stay
 * theirs until done), as auxstore_restore_handle_release. */
void auxstore_restore_batch_release(auxstore_restore_batch_t* batch);

/* ---- the connector's batched calls (issue 24; docs/connectors.md) ---------- */
/* How many LEADING `prefixes` are stored, in *count: the consecutive-hit
 * count from index 0 (SGLang's batch_exists, LMCache's batched_contains).
 * The first prefix is looked up alone and the rest in one batched lookup,
 * so a first-key miss costs one lookup. A damaged manifest is a miss (and
 * quarantined). Counts no hit, changes no recency. `prefixes` may be NULL
 * when n is 0. */
int auxstore_count_leading_stored(auxstore_t* db, uint64_t ns, const uint8_t (*prefixes)[16],
                                  size_t n, size_t* count, char** errmsg);
/* How many LEADING pages of a block chain (`n_blocks` chained hashes of
 * blocks of `block_size` tokens, as auxstore_prefix_hash gives them) the
 * namespace stores, by whichever snapshot's paged put (block_chain in
 * auxstore_put_options_t) stored them: *pages, and (when not NULL)
 * *page_tokens, the tokens of a page (the namespace's page_tokens, else
 * block_size), so the stored rows are [0, *pages * *page_tokens). One
 * batched lookup of the page index after the first page's.
 * AUXSTORE_INVALID_ARGUMENT for block_size 0 or a page size that is not a
 * multiple of it; AUXSTORE_NOT_FOUND for an unknown namespace. */
int auxstore_count_leading_pages(auxstore_t* db, uint64_t ns, const uint8_t (*block_chain)[16],
                                 size_t n_blocks, uint32_t block_size, size_t* pages,
                                 uint32_t* page_tokens, char** errmsg);
/* Looks up `n` prefixes and leases each one stored for `lease_ms`, in one
 * batched lookup (vLLM's prepare_load, LMCache's contains with pin):
 * leases[i] receives prefixes[i]'s lease, 0 when it is not stored, and
 * *leading (when not NULL) how many LEADING prefixes are stored and leased.
 * Each hit counts and is touched (it is about to be read). Release with
 * auxstore_lease_release(_many). AUXSTORE_INVALID_ARGUMENT for lease_ms 0. */
int auxstore_lookup_leased(auxstore_t* db, uint64_t ns, const uint8_t (*prefixes)[16], size_t n,
                           uint64_t lease_ms, uint64_t* leases, size_t* leading, char** errmsg);
/* Releases `n` leases (vLLM's complete_load): 0 and leases already gone
 * (released, expired, snapshot erased) are skipped; *released (when not
 * NULL) counts the ones released. Every lease is tried; the first error
 * other than a lease gone is returned. */
int auxstore_lease_release_many(auxstore_t* db, const uint64_t* leases, size_t n, size_t* released,
                                char** errmsg);
/* Rows [first_row, last_row) of every array of a QSA or DSA layer (QSA: raw
 * keys; DSA: k_normed, gate, valid) into `dst` (`capacity` bytes): array a's
 * rows after the earlier arrays' rows, each array's rows contiguous. An
 * engine that holds rows [0, first_row) fetches only the rest; a connector
 * keyed by page reads one page. A paged layer (put with a block chain) reads
 * only the records holding the rows, each verified on its own (its envelope
 * and XXH3-64; the layer digest needs every page and is not checked: damage
 * outside the range does not fail it); any other layer is read and verified
 * whole (every record and the layer digest). Only the wanted rows are
 * copied, once, into `dst`. *size (when not NULL): the bytes written,
 * (last_row - first_row) * the row bytes of all arrays; *rows (when not
 * NULL): the layer's rows in all. AUXSTORE_INVALID_ARGUMENT for an opaque
 * layer; AUXSTORE_OUT_OF_RANGE (nothing read) for a bad range or a too-small
 * capacity; AUXSTORE_CORRUPTION quarantines the snapshot (dst then holds
 * partial bytes). */
int auxstore_read_layer_rows(auxstore_t* db, uint64_t ns, const uint8_t prefix[16], uint32_t layer,
                             uint64_t first_row, uint64_t last_row, void* dst, size_t capacity,
                             size_t* size, uint64_t* rows, char** errmsg);

/* ---- engine host memory: registered buffers, batched async reads ---------- */
/* An engine's host buffer (its KV / aux host pool), registered once with a
 * store: reads target (buffer, offset) instead of raw addresses, each one
 * bounds-checked against the registration. The memory stays the engine's;
 * it must stay valid until the buffer is unregistered. */
typedef struct auxstore_host_buffer_t auxstore_host_buffer_t;
/* Registers `size` bytes at `data` (non-NULL, size > 0) with `db`. */
int auxstore_register_host_buffer(auxstore_t* db, void* data, size_t size,
                                  auxstore_host_buffer_t** out, char** errmsg);
/* Unregisters it: AUXSTORE_BUSY (still registered) while a read that
 * targets it is not released (auxstore_host_read_release). */
int auxstore_unregister_host_buffer(auxstore_host_buffer_t* buffer, char** errmsg);

/* One layer of one snapshot (namespace `ns`, `prefix`) into [offset,
 * offset + capacity) of a registered buffer of the same store. */
typedef struct auxstore_host_read_target_t {
  uint64_t ns;
  uint8_t prefix[16];
  uint32_t layer;
  auxstore_host_buffer_t* buffer;
  size_t offset;
  size_t capacity;
} auxstore_host_read_target_t;

/* Many layers of many snapshots read into registered host buffers
 * (SGLang's batch_get_v1, Mooncake's batch_get_into), one handle for all. */
typedef struct auxstore_host_read_t auxstore_host_read_t;
/* Starts reading `n` targets and returns at once with
 * *out. Every target is checked first (its buffer live and of `db`, [offset,
 * offset + capacity) inside it, no two targets overlapping): the first bad
 * one is AUXSTORE_INVALID_ARGUMENT naming it, and nothing is read or
 * written. Each target is then read: one copy, from the store's block into
 * the buffer, verified (record envelopes and the layer digest) in the same
 * pass, as auxstore_read_layers; the small layers of one snapshot are read
 * together, under one manifest read. A target's own result (a missing layer,
 * AUXSTORE_OUT_OF_RANGE for a capacity below the layer's size) never stops
 * the others; a snapshot missing, or found damaged (AUXSTORE_CORRUPTION,
 * which quarantines it), fails each of its targets not yet read with that
 * error and no other snapshot's. Until the read is released its buffers cannot be
 * unregistered. The reads run on an Asio pool of the store handle's
 * (Options work_threads threads, at least 2). */
int auxstore_host_read_start(auxstore_t* db, const auxstore_host_read_target_t* targets, size_t n,
                             auxstore_host_read_t** out, char** errmsg);
/* Snapshots from registered memory (write-behind puts, LMCache's
 * batched_submit_put_task, Mooncake's batch_put_from): one layer's bytes
 * [offset, offset + size) of a registered buffer. */
typedef struct auxstore_host_layer_t {
  uint32_t layer;
  uint32_t kind; /* AUXSTORE_KIND_* */
  auxstore_host_buffer_t* buffer;
  size_t offset;
  size_t size;
} auxstore_host_layer_t;
typedef struct auxstore_host_put_t {
  uint64_t ns;
  uint8_t prefix[16];
  uint64_t token_count;
  size_t n_layers;
  const auxstore_host_layer_t* layers;
} auxstore_host_put_t;
/* Starts putting `n` snapshots whose layers lie in registered buffers and
 * returns at once with a handle of the same calls as a read: target i is
 * snapshot i (auxstore_host_read_wait_target: its result, *size its bytes;
 * _wait_snapshot by (ns, prefix); _finished; _poll). Every layer is checked first
 * (a known kind, its buffer live and of `db`, [offset, offset + size) inside
 * it): AUXSTORE_INVALID_ARGUMENT naming it, nothing written. Each put is
 * auxstore_put_snapshot's (validated against the namespace's geometry,
 * durable or crash-safe per the store's durability, a stored prefix OK
 * without a write), on the store handle's pool, straight from the
 * registered memory: the engine must not change those bytes until the
 * snapshot's put is done. On a shared pool (AUXSTORE_SHARED_THROUGH) small
 * snapshots (up to 1 MiB together) are put as one auxstore_put_snapshots. */
int auxstore_host_put_start(auxstore_t* db, const auxstore_host_put_t* snapshots, size_t n,
                            auxstore_host_read_t** out, char** errmsg);
/* auxstore_host_put_start with put options per snapshot: `options` is NULL
 * (none), or `n` pointers, options[i] (NULL: none) snapshot i's, e.g. a
 * block chain, so its QSA and DSA rows go into pages shared with the
 * chain's other snapshots (auxstore_put_snapshot_ex). A bad options[i] is
 * AUXSTORE_INVALID_ARGUMENT naming it, nothing written. */
int auxstore_host_put_start_ex(auxstore_t* db, const auxstore_host_put_t* snapshots, size_t n,
                               const auxstore_put_options_t* const* options,
                               auxstore_host_read_t** out, char** errmsg);
/* 1 when every target is done, 0 while some run (-1 for a handle not live). */
int auxstore_host_read_poll(const auxstore_host_read_t* read);
/* 1 when target `i` is done, 0 while it runs (-1: handle not live or i >= n). */
int auxstore_host_read_target_done(const auxstore_host_read_t* read, size_t i);
/* Waits for target `i`: its result, and (when not NULL) *size, the layer's
 * bytes written at its offset. */
int auxstore_host_read_wait_target(auxstore_host_read_t* read, size_t i, size_t* size,
                                   char** errmsg);
/* Waits for every target of the snapshot (namespace `ns`, `prefix`): one
 * prefix in two namespaces is two snapshots. AUXSTORE_OK, or the first
 * failed target's error (its message names the target).
 * AUXSTORE_INVALID_ARGUMENT when no target reads that snapshot. */
int auxstore_host_read_wait_snapshot(auxstore_host_read_t* read, uint64_t ns,
                                     const uint8_t prefix[16], char** errmsg);
/* Waits for every target: AUXSTORE_OK, or the first failed target's error.
 * The calling thread runs the parts of the read no pool thread has started
 * yet (rather than sleeping while one wakes up). */
int auxstore_host_read_wait(auxstore_host_read_t* read, char** errmsg);
/* A snapshot: its namespace and prefix. */
typedef struct auxstore_snapshot_ref_t {
  uint64_t ns;
  uint8_t prefix[16];
} auxstore_snapshot_ref_t;
/* The snapshots (namespace and prefix, in the order their first target was
 * given) whose every target has completed since the last call, each
 * reported once (vLLM's get_finished): up to `capacity` into `snapshots`, *n
 * how many; the rest come with a later call. Does not wait. */
int auxstore_host_read_finished(auxstore_host_read_t* read, auxstore_snapshot_ref_t* snapshots,
                                size_t capacity, size_t* n, char** errmsg);
/* Targets not started yet end with AUXSTORE_UNAVAILABLE ("cancelled");
 * reads in flight finish. Returns at once. */
void auxstore_host_read_cancel(auxstore_host_read_t* read);
/* Cancels what has not started, WAITS for the reads in flight (so no read
 * writes into a buffer after this returns), and frees the handle. */
void auxstore_host_read_release(auxstore_host_read_t* read);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AUXSTORE_C_H_ */
