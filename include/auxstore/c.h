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
  uint64_t xxh3; /* XXH3-64 of the whole blob */
} auxstore_layer_info_t;

typedef struct auxstore_stats_t {
  uint64_t snapshots, payload_bytes, hits, misses, puts, duplicate_puts;
  uint64_t evictions, expirations, quarantines, orphans_seen, orphans_removed;
  uint64_t commit_seq, durable_watermark, lost_commits_at_open;
  int index_ready; /* 1 once the background LRU index has loaded */
  int fenced;      /* 1 after a failed write: reopen to write again */
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

/* ---- store -------------------------------------------------------------------- */
/* Opens (creating when allowed) the store at `path`. `options` may be NULL
 * for the defaults. */
int auxstore_open(const char* path, const auxstore_options_t* options, auxstore_t** out,
                  char** errmsg);
/* Closes the store. Destroy pipelines using it first. NULL is a no-op. */
void auxstore_close(auxstore_t* db);

/* Registers (idempotently) a model identity and geometry; *ns_out receives
 * the namespace id (a stable fingerprint of both). */
int auxstore_register_namespace(auxstore_t* db, const char* model_id,
                                const auxstore_geometry_t* geometry, uint64_t* ns_out,
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

/* Removes a snapshot (durably: a synced commit). A prefix not stored: OK,
 * nothing changes. */
int auxstore_erase(auxstore_t* db, uint64_t ns, const uint8_t prefix[16], char** errmsg);
/* Makes every snapshot accepted so far durable, as with AUXSTORE_SYNC. */
int auxstore_flush(auxstore_t* db, char** errmsg);
int auxstore_stats(auxstore_t* db, auxstore_stats_t* out, char** errmsg);

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

/* ---- backends and device states ------------------------------------------------ */
/* AUXSTORE_BACKEND_AUTO: CUDA when built and a device is present, else the
 * host backend. AUXSTORE_BACKEND_CUDA without one: AUXSTORE_UNAVAILABLE. */
int auxstore_backend_create(int kind, auxstore_backend_t** out, char** errmsg);
/* Destroy states and pipelines using it first. NULL is a no-op. */
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
/* Frees the state's device memory and the handle (gone even when an error
 * is returned: the first failure freeing a buffer). NULL: AUXSTORE_OK. */
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
/* A restore pipeline over `db` and `backend` (both must outlive it). */
int auxstore_pipeline_create(auxstore_t* db, auxstore_backend_t* backend, auxstore_pipeline_t** out,
                             char** errmsg);
/* Waits for running restores, then frees the pipeline. NULL is a no-op. */
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AUXSTORE_C_H_ */
