/* The C ABI played by an engine, across a restart: an engine that owns its
 * device buffers and streams (host backend here; tools/gpu_check.sh runs the
 * same flow on CUDA with cudaMalloc'd buffers and the engine's own stream).
 *
 *   engine_flow_test            the test: runs `write`, damages the table
 *                               file of one snapshot, runs `corrupt`, then
 *                               `read`
 *   engine_flow_test write DIR  process 1: fills its own QSA, DSA and opaque
 *                               buffers as its ingest would, snapshots them
 *                               write-behind from its own stream, flushes,
 *                               exits without closing (_exit)
 *   engine_flow_test read DIR   process 2: looks the longest prefix up with a
 *                               lease, restores into fresh engine buffers
 *                               layer by layer and checks every byte, the
 *                               counters and the re-pooled block keys against
 *                               the CPU reference; then the failure paths
 *   engine_flow_test corrupt DIR  after the parent damaged sequence 3's table
 *                               file: its restore reports corruption, no
 *                               counter moves, the snapshot is quarantined
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "auxstore/c.h"

static int g_failures = 0;
static char* err = NULL;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

#define CHECK_CODE(call, want)                                                                \
  do {                                                                                        \
    int got_ = (call);                                                                        \
    if (got_ != (want)) {                                                                     \
      fprintf(stderr, "%s:%d: %s returned %d (%s), want %d: %s\n", __FILE__, __LINE__, #call, \
              got_, auxstore_code_name(got_), (int)(want), err ? err : "");                   \
      ++g_failures;                                                                           \
    }                                                                                         \
    auxstore_free(err);                                                                       \
    err = NULL;                                                                               \
  } while (0)
#define CHECK_OK(call) CHECK_CODE(call, AUXSTORE_OK)

/* ---- the model: geometry, identity, the tokens of two requests ------------- */

enum { kHd = 64, kMaxTokens = 1024, kRatio = 8, kRot = 32, kDsaDim = 32, kDsaCap = 1024 };
enum { kBlock = 16, kTokens = 640, kOpaqueBytes = 4 * 64 * 4 };
static const uint64_t kSalt = 0x5eed;

static auxstore_geometry_t geometry(void) {
  auxstore_geometry_t g = {kHd, kMaxTokens, kRatio, kRot, 10000.0f, 1e-6f, kDsaDim, kDsaCap};
  return g;
}

static uint64_t register_ns(auxstore_t* db) {
  static const auxstore_opaque_layer_desc_t opaque = {2, AUXSTORE_DTYPE_F32, 2, {4, 64}};
  auxstore_namespace_t ns;
  memset(&ns, 0, sizeof ns);
  ns.struct_size = sizeof ns;
  ns.model_id = "engine-flow";
  ns.weight_revision = "rev-7";
  ns.tp_rank = 0;
  ns.tp_world_size = 1;
  ns.geometry = geometry();
  ns.n_opaque_layers = 1;
  ns.opaque_layers = &opaque;
  uint64_t id = 0;
  CHECK_OK(auxstore_register_namespace_ex(db, &ns, &id, &err));
  return id;
}

static void tokens_of(uint32_t* t, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i) t[i] = seed * 100000u + (uint32_t)i;
}

/* Deterministic bytes: what the engine's ingest "computed". */
static uint64_t g_rng;
static uint64_t next_random(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}
static uint16_t random_bf16(void) {
  float f = (float)((double)(next_random() % 4000000) / 1000000.0 - 2.0);
  uint32_t bits;
  memcpy(&bits, &f, 4);
  return (uint16_t)(bits >> 16);
}
static void fill_bf16(uint16_t* p, size_t n, uint64_t seed) {
  g_rng = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) p[i] = random_bf16();
}
static void fill_bytes(uint8_t* p, size_t n, uint64_t seed) {
  g_rng = seed * 0x9e3779b97f4a7c15ull + 7;
  for (size_t i = 0; i < n; ++i) p[i] = (uint8_t)next_random();
}

/* ---- the engine's own device buffers for one sequence ----------------------- */

typedef struct {
  auxstore_backend_t* backend;
  uint64_t raw_keys[2], block_keys[2]; /* QSA layers 0 and 3 */
  uint64_t k_pool_k, k_norm_w;         /* the QSA layer weights, shared by both layers */
  uint64_t k_normed, gate, valid;      /* DSA layer 1 */
  uint64_t opaque;                     /* layer 2 */
  auxstore_state_t* qsa[2];
  auxstore_state_t* dsa;
  auxstore_state_t* op;
} Engine;

static const uint64_t kRawBytes = (uint64_t)kMaxTokens * kHd * 2;
static const uint64_t kBlockBytes = (uint64_t)(kMaxTokens / kRatio) * kHd * 2;
static const uint64_t kDsaRowBytes = (uint64_t)kDsaDim * 2;

static uint64_t dev_alloc(auxstore_backend_t* b, uint64_t bytes) {
  uint64_t p = 0;
  CHECK_OK(auxstore_device_alloc(b, bytes, &p, &err));
  return p;
}

static void engine_alloc(Engine* e, auxstore_backend_t* b, uint64_t stream) {
  memset(e, 0, sizeof *e);
  e->backend = b;
  for (int i = 0; i < 2; ++i) {
    e->raw_keys[i] = dev_alloc(b, kRawBytes);
    e->block_keys[i] = dev_alloc(b, kBlockBytes);
  }
  e->k_pool_k = dev_alloc(b, kHd * 2);
  e->k_norm_w = dev_alloc(b, kHd * 2);
  static uint16_t w[2][kHd];
  fill_bf16(w[0], kHd, 1000);
  fill_bf16(w[1], kHd, 1001);
  CHECK_OK(auxstore_device_copy_h2d(b, e->k_pool_k, 0, w[0], sizeof w[0], stream, &err));
  CHECK_OK(auxstore_device_copy_h2d(b, e->k_norm_w, 0, w[1], sizeof w[1], stream, &err));
  e->k_normed = dev_alloc(b, kDsaCap * kDsaRowBytes);
  e->gate = dev_alloc(b, kDsaCap * kDsaRowBytes);
  e->valid = dev_alloc(b, kDsaCap);
  e->opaque = dev_alloc(b, kOpaqueBytes);
  CHECK_OK(auxstore_stream_synchronize(b, stream, &err));
}

/* Wraps the buffers in borrowed states carrying the engine's counters. */
static void engine_borrow(Engine* e, uint64_t qsa_tokens, uint64_t dsa_len, uint64_t opaque_size) {
  const auxstore_geometry_t g = geometry();
  for (int i = 0; i < 2; ++i) {
    auxstore_qsa_buffers_t q = {e->raw_keys[i], kRawBytes,   e->block_keys[i],
                                kBlockBytes,    e->k_pool_k, e->k_norm_w};
    CHECK_OK(auxstore_qsa_state_borrow(e->backend, &g, &q, qsa_tokens, 0, &e->qsa[i], &err));
  }
  auxstore_dsa_buffers_t d = {
      kDsaCap,  e->k_normed, kDsaCap * kDsaRowBytes, e->gate, kDsaCap * kDsaRowBytes,
      e->valid, kDsaCap};
  CHECK_OK(auxstore_dsa_state_borrow(e->backend, &g, &d, dsa_len, &e->dsa, &err));
  CHECK_OK(
      auxstore_opaque_state_borrow(e->backend, e->opaque, kOpaqueBytes, opaque_size, &e->op, &err));
}

static void engine_release_states(Engine* e) {
  for (int i = 0; i < 2; ++i) CHECK_OK(auxstore_state_release(e->qsa[i], &err));
  CHECK_OK(auxstore_state_release(e->dsa, &err));
  CHECK_OK(auxstore_state_release(e->op, &err));
  e->qsa[0] = e->qsa[1] = e->dsa = e->op = NULL;
}

static void engine_free(Engine* e) {
  uint64_t all[] = {e->raw_keys[0], e->raw_keys[1], e->block_keys[0], e->block_keys[1], e->k_pool_k,
                    e->k_norm_w,    e->k_normed,    e->gate,          e->valid,         e->opaque};
  /* The engine's memory is still the engine's: freeing it succeeds. */
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
    CHECK_OK(auxstore_device_free(e->backend, all[i], &err));
  }
}

/* What the ingest of `tokens` tokens wrote for sequence `seed`. */
typedef struct {
  uint16_t raw[2][kTokens * kHd];
  uint8_t k_normed[kTokens * kDsaDim * 2], gate[kTokens * kDsaDim * 2], valid[kTokens];
  uint8_t opaque[kOpaqueBytes];
} Ingest;

static void ingest_of(Ingest* in, uint64_t seed) {
  fill_bf16(in->raw[0], kTokens * kHd, seed * 10 + 0);
  fill_bf16(in->raw[1], kTokens * kHd, seed * 10 + 3);
  fill_bytes(in->k_normed, sizeof in->k_normed, seed * 10 + 1);
  fill_bytes(in->gate, sizeof in->gate, seed * 10 + 4);
  fill_bytes(in->valid, sizeof in->valid, seed * 10 + 5);
  fill_bytes(in->opaque, sizeof in->opaque, seed * 10 + 2);
}

static Ingest g_in;

static void engine_ingest(Engine* e, uint64_t stream, uint64_t seed, uint64_t tokens) {
  ingest_of(&g_in, seed);
  auxstore_backend_t* b = e->backend;
  for (int i = 0; i < 2; ++i) {
    CHECK_OK(auxstore_device_copy_h2d(b, e->raw_keys[i], 0, g_in.raw[i], tokens * kHd * 2, stream,
                                      &err));
  }
  CHECK_OK(auxstore_device_copy_h2d(b, e->k_normed, 0, g_in.k_normed, tokens * kDsaRowBytes, stream,
                                    &err));
  CHECK_OK(auxstore_device_copy_h2d(b, e->gate, 0, g_in.gate, tokens * kDsaRowBytes, stream, &err));
  CHECK_OK(auxstore_device_copy_h2d(b, e->valid, 0, g_in.valid, tokens, stream, &err));
  CHECK_OK(auxstore_device_copy_h2d(b, e->opaque, 0, g_in.opaque, kOpaqueBytes, stream, &err));
}

/* AUXSTORE_ENGINE_FLOW_BACKEND=cuda runs the flow on the CUDA backend:
 * auxstore_device_alloc is cudaMalloc there and streams are the engine's own
 * non-blocking cudaStream_t (tools/gpu_check.sh). */
static int backend_kind(void) {
  const char* b = getenv("AUXSTORE_ENGINE_FLOW_BACKEND");
  return b && strcmp(b, "cuda") == 0 ? AUXSTORE_BACKEND_CUDA : AUXSTORE_BACKEND_HOST;
}

static int open_store(const char* dir, uint64_t capacity, auxstore_t** db) {
  char path[512];
  snprintf(path, sizeof path, "%s/store", dir);
  auxstore_options_t* o = auxstore_options_create();
  CHECK_OK(auxstore_options_set_chunk_bytes(o, 64 * 1024, &err));
  if (capacity) CHECK_OK(auxstore_options_set_capacity_bytes(o, capacity, &err));
  int rc = auxstore_open(path, o, db, &err);
  if (rc != AUXSTORE_OK) fprintf(stderr, "open %s: %s\n", path, err ? err : "");
  auxstore_free(err);
  err = NULL;
  auxstore_options_destroy(o);
  return rc;
}

static void prefix_at(uint32_t seed, size_t tokens, uint8_t out[16]) {
  uint32_t t[kTokens];
  tokens_of(t, kTokens, seed);
  uint8_t hashes[kTokens / kBlock][16];
  size_t n = 0;
  CHECK_OK(auxstore_prefix_hash(t, tokens, kBlock, kSalt, hashes, kTokens / kBlock, &n, &err));
  memcpy(out, hashes[n - 1], 16);
}

/* ---- process 1: the engine before the restart ------------------------------- */

static int run_write(const char* dir) {
  auxstore_t* db = NULL;
  if (open_store(dir, 0, &db) != AUXSTORE_OK) return 2;
  const uint64_t ns = register_ns(db);
  auxstore_backend_t* backend = NULL;
  CHECK_OK(auxstore_backend_create(backend_kind(), &backend, &err));
  uint64_t stream = 0;
  CHECK_OK(auxstore_stream_create(backend, &stream, &err));
  CHECK(stream != 0);
  auxstore_pipeline_options_t po;
  auxstore_pipeline_options_init(&po);
  po.staging_bytes = 64 * 1024;
  po.snapshot_bytes = 8u << 20;
  auxstore_pipeline_t* p = NULL;
  CHECK_OK(auxstore_pipeline_create_with(db, backend, &po, &p, &err));

  /* Sequences 1 and 2 (both to be restored), 3 (to be damaged). */
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    Engine e;
    engine_alloc(&e, backend, stream);
    engine_ingest(&e, stream, seed, kTokens);
    engine_borrow(&e, kTokens, kTokens, kOpaqueBytes);
    CHECK(auxstore_state_is_borrowed(e.qsa[0]) == 1);
    uint8_t prefix[16];
    prefix_at(seed, kTokens, prefix);
    /* Sequence 3 also carries a 2 MiB undeclared opaque layer: over the
     * ingest threshold, it is written as an SST of its own (damaged below). */
    uint64_t big_dev = 0;
    auxstore_state_t* big = NULL;
    if (seed == 3) {
      big_dev = dev_alloc(backend, 2u << 20);
      static uint8_t big_bytes[2u << 20];
      fill_bytes(big_bytes, sizeof big_bytes, 33);
      CHECK_OK(
          auxstore_device_copy_h2d(backend, big_dev, 0, big_bytes, sizeof big_bytes, stream, &err));
      CHECK_OK(auxstore_opaque_state_borrow(backend, big_dev, 2u << 20, 2u << 20, &big, &err));
    }
    auxstore_snapshot_source_t src[] = {
        {0, e.qsa[0]}, {1, e.dsa}, {2, e.op}, {3, e.qsa[1]}, {4, big}};
    /* Ordered after the ingest's copies on the same stream: no sync needed. */
    CHECK_OK(auxstore_snapshot(p, ns, prefix, kTokens, src, seed == 3 ? 5 : 4, stream, &err));
    CHECK_OK(auxstore_stream_synchronize(backend, stream, &err));
    engine_release_states(&e);
    engine_free(&e);
    if (big) {
      CHECK_OK(auxstore_state_release(big, &err));
      CHECK_OK(auxstore_device_free(backend, big_dev, &err));
    }
  }
  CHECK_OK(auxstore_pipeline_flush(p, &err));
  auxstore_pipeline_stats_t st;
  CHECK_OK(auxstore_pipeline_stats(p, &st, &err));
  CHECK(st.snapshots_written == 3 && st.snapshots_shed == 0);
  fflush(stderr);
  /* Sync durability: flushed snapshots survive a process that never closes. */
  _exit(g_failures ? 1 : 0);
}

/* ---- process 2: the engine after the restart -------------------------------- */

typedef struct {
  int seen[8];
} LayerLog;
static void on_layer(void* arg, uint32_t layer) {
  LayerLog* log = (LayerLog*)arg;
  if (layer < 8) log->seen[layer] = 1;
}

static int same_device_bytes(auxstore_backend_t* b, uint64_t ptr, const void* want, size_t n,
                             uint64_t stream) {
  void* got = malloc(n);
  CHECK_OK(auxstore_device_copy_d2h(b, got, ptr, 0, n, stream, &err));
  int same = memcmp(got, want, n) == 0;
  free(got);
  return same;
}

static void check_restored(Engine* e, uint64_t stream, uint64_t seed) {
  const auxstore_geometry_t g = geometry();
  ingest_of(&g_in, seed);
  auxstore_backend_t* b = e->backend;
  uint64_t count = 0, pooled = 0;
  for (int i = 0; i < 2; ++i) {
    CHECK_OK(auxstore_state_counters(e->qsa[i], &count, &pooled, &err));
    CHECK(count == kTokens);
    /* The snapshot took the engine's counters: pooled 0 was stored, so no
     * re-pool; the block-key check below uses a second restore that pools. */
    CHECK(same_device_bytes(b, e->raw_keys[i], g_in.raw[i], kTokens * kHd * 2, stream));
  }
  CHECK_OK(auxstore_state_counters(e->dsa, &count, NULL, &err));
  CHECK(count == kTokens);
  CHECK(same_device_bytes(b, e->k_normed, g_in.k_normed, kTokens * kDsaRowBytes, stream));
  CHECK(same_device_bytes(b, e->gate, g_in.gate, kTokens * kDsaRowBytes, stream));
  CHECK(same_device_bytes(b, e->valid, g_in.valid, kTokens, stream));
  CHECK_OK(auxstore_state_counters(e->op, &count, NULL, &err));
  CHECK(count == kOpaqueBytes);
  CHECK(same_device_bytes(b, e->opaque, g_in.opaque, kOpaqueBytes, stream));
  (void)g;
}

static int all_fresh(Engine* e) {
  uint64_t c = 0, p = 0, sum = 0;
  auxstore_state_t* s[] = {e->qsa[0], e->qsa[1], e->dsa, e->op};
  for (int i = 0; i < 4; ++i) {
    CHECK_OK(auxstore_state_counters(s[i], &c, &p, &err));
    sum += c + p;
  }
  return sum == 0;
}

static void wait_for(int (*cond)(auxstore_t*, void*), auxstore_t* db, void* arg, const char* what) {
  for (int i = 0; i < 400; ++i) { /* up to 20 s: an eventual effect, not a timing claim */
    if (cond(db, arg)) return;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "never happened: %s\n", what);
  ++g_failures;
}

static int evicted_some(auxstore_t* db, void* arg) {
  auxstore_stats_t s;
  CHECK_OK(auxstore_stats(db, &s, &err));
  return s.evictions >= *(uint64_t*)arg;
}

static int run_read(const char* dir) {
  auxstore_t* db = NULL;
  /* A budget of about two snapshots: puts below make eviction run. */
  if (open_store(dir, 1300 * 1024, &db) != AUXSTORE_OK) return 2;
  const uint64_t ns = register_ns(db); /* the same identity: the same id */
  auxstore_backend_t* backend = NULL;
  CHECK_OK(auxstore_backend_create(backend_kind(), &backend, &err));
  uint64_t stream = 0;
  CHECK_OK(auxstore_stream_create(backend, &stream, &err));
  auxstore_pipeline_t* p = NULL;
  auxstore_pipeline_options_t po;
  auxstore_pipeline_options_init(&po);
  po.staging_bytes = 64 * 1024;
  CHECK_OK(auxstore_pipeline_create_with(db, backend, &po, &p, &err));

  /* The request: sequence 1's tokens and then some; its longest stored
   * prefix is the whole snapshot, leased. */
  uint32_t tokens[kTokens + 40];
  tokens_of(tokens, kTokens + 40, 1);
  uint8_t prefix[16];
  uint64_t covered = 0, lease = 0;
  CHECK_OK(auxstore_longest_prefix_for_tokens_leased(db, ns, tokens, kTokens + 40, kBlock, kSalt,
                                                     60000, prefix, &covered, &lease, &err));
  CHECK(covered == kTokens && lease != 0);

  /* Eviction racing the leased restore: two more puts push the store over
   * budget while sequence 1 is leased; eviction must take something else. */
  Engine e;
  engine_alloc(&e, backend, stream);
  engine_borrow(&e, 0, 0, 0);
  uint8_t big[600 * 1024];
  memset(big, 7, sizeof big);
  for (uint32_t k = 0; k < 2; ++k) {
    uint8_t other[16];
    prefix_at(50 + k, kBlock, other);
    auxstore_layer_t l = {9, AUXSTORE_KIND_OPAQUE, big, sizeof big};
    CHECK_OK(auxstore_put_snapshot(db, ns, other, kBlock, 1, &l, &err));
  }
  uint64_t want_evictions = 1;
  wait_for(evicted_some, db, &want_evictions, "an eviction over budget");
  uint8_t found = 0;
  CHECK_OK(auxstore_get_manifests(db, ns, (const uint8_t(*)[16])prefix, 1, &found, NULL, &err));
  CHECK(found == 1); /* leased: never the victim */

  /* Restore layer by layer into fresh engine buffers. */
  LayerLog log;
  memset(&log, 0, sizeof log);
  auxstore_restore_options_t ro;
  auxstore_restore_options_init(&ro);
  ro.lease = lease;
  ro.on_layer = on_layer;
  ro.on_layer_arg = &log;
  auxstore_restore_target_t t[] = {{0, e.qsa[0]}, {1, e.dsa}, {2, e.op}, {3, e.qsa[1]}};
  auxstore_restore_handle_t* h = NULL;
  CHECK_OK(auxstore_restore_start(p, ns, prefix, t, 4, &ro, &h, &err));
  uint32_t order[] = {0, 1, 2, 3};
  for (int i = 0; i < 4; ++i) {
    CHECK_OK(auxstore_restore_wait_layer(h, order[i], &err));
    CHECK(auxstore_restore_layer_done(h, order[i]) == 1);
  }
  /* The engine's stream waits on the device for everything. */
  CHECK_OK(auxstore_restore_stream_wait_all(h, stream, &err));
  CHECK_OK(auxstore_restore_join(h, &err));
  CHECK(auxstore_restore_poll(h) == 1);
  uint32_t done_layers[8];
  size_t n_done = 0;
  CHECK_OK(auxstore_restore_layers_done(h, done_layers, 8, &n_done, &err));
  CHECK(n_done == 4);
  auxstore_restore_handle_release(h);
  for (int i = 0; i < 4; ++i) CHECK(log.seen[i] == 1);
  CHECK_OK(auxstore_stream_synchronize(backend, stream, &err));
  check_restored(&e, stream, 1);
  CHECK_CODE(auxstore_lease_release(db, lease, &err), AUXSTORE_NOT_FOUND); /* the restore did */
  engine_release_states(&e);

  /* Block keys: a QSA snapshot with pooled blocks, restored, against the
   * CPU reference of the re-pool. */
  {
    const auxstore_geometry_t g = geometry();
    Engine f;
    engine_alloc(&f, backend, stream);
    ingest_of(&g_in, 1);
    const uint64_t pooled = kTokens / kRatio;
    uint16_t* blob = malloc(16 + kTokens * kHd * 2);
    const uint64_t ingested = kTokens;
    memcpy(blob, &ingested, 8);
    memcpy((uint8_t*)blob + 8, &pooled, 8);
    memcpy((uint8_t*)blob + 16, g_in.raw[0], kTokens * kHd * 2);
    uint8_t pooled_prefix[16];
    prefix_at(60, kBlock, pooled_prefix);
    auxstore_layer_t l = {0, AUXSTORE_KIND_QSA, blob, 16 + kTokens * kHd * 2};
    CHECK_OK(auxstore_put_snapshot(db, ns, pooled_prefix, kBlock, 1, &l, &err));
    free(blob);
    engine_borrow(&f, 0, 0, 0);
    auxstore_restore_target_t one[] = {{0, f.qsa[0]}};
    CHECK_OK(auxstore_restore_start(p, ns, pooled_prefix, one, 1, NULL, &h, &err));
    CHECK_OK(auxstore_restore_join(h, &err));
    auxstore_restore_handle_release(h);
    uint64_t count = 0, got_pooled = 0;
    CHECK_OK(auxstore_state_counters(f.qsa[0], &count, &got_pooled, &err));
    CHECK(count == kTokens && got_pooled == pooled);
    static uint16_t want_keys[(kTokens / kRatio) * kHd], w[2][kHd];
    fill_bf16(w[0], kHd, 1000);
    fill_bf16(w[1], kHd, 1001);
    CHECK_OK(auxstore_qsa_block_pool_host(&g, g_in.raw[0], kTokens, w[0], w[1], (uint32_t)pooled,
                                          want_keys, &err));
    CHECK(same_device_bytes(backend, f.block_keys[0], want_keys, sizeof want_keys, stream));
    engine_release_states(&f);
    engine_free(&f);
  }

  /* Failure paths, each refused or reported with nothing moved. */
  {
    const auxstore_geometry_t g = geometry();
    auxstore_state_t* s = NULL;
    auxstore_qsa_buffers_t small = {e.raw_keys[0], kRawBytes - 2, e.block_keys[0],
                                    kBlockBytes,   e.k_pool_k,    e.k_norm_w};
    CHECK_CODE(auxstore_qsa_state_borrow(backend, &g, &small, 0, 0, &s, &err),
               AUXSTORE_INVALID_ARGUMENT);
    CHECK(s == NULL);
    auxstore_dsa_buffers_t dsmall = {
        kDsaCap, e.k_normed, kDsaCap * kDsaRowBytes, e.gate, kDsaCap * kDsaRowBytes,
        e.valid, kDsaCap - 1};
    CHECK_CODE(auxstore_dsa_state_borrow(backend, &g, &dsmall, 0, &s, &err),
               AUXSTORE_INVALID_ARGUMENT);
    /* Buffers of another geometry (DSA head dim 16): the restore refuses
     * before any copy, moves no counter, and the snapshot stays. */
    auxstore_geometry_t other = g;
    other.dsa_index_head_dim = 16;
    auxstore_dsa_buffers_t d = {
        kDsaCap, e.k_normed, kDsaCap * kDsaRowBytes, e.gate, kDsaCap * kDsaRowBytes,
        e.valid, kDsaCap};
    CHECK_OK(auxstore_dsa_state_borrow(backend, &other, &d, 0, &s, &err));
    auxstore_restore_target_t wrong[] = {{1, s}};
    CHECK_CODE(auxstore_restore_wait(p, ns, prefix, wrong, 1, &err), AUXSTORE_INVALID_ARGUMENT);
    uint64_t c = 1, pl = 1;
    CHECK_OK(auxstore_state_counters(s, &c, &pl, &err));
    CHECK(c == 0 && pl == 0);
    CHECK_OK(auxstore_state_release(s, &err));
    uint8_t still = 0;
    CHECK_OK(auxstore_get_manifests(db, ns, (const uint8_t(*)[16])prefix, 1, &still, NULL, &err));
    CHECK(still == 1);
    /* The legacy default stream is refused. */
    auxstore_restore_options_t bad;
    auxstore_restore_options_init(&bad);
    bad.use_stream = 1;
    bad.stream = 0;
    engine_borrow(&e, 0, 0, 0);
    auxstore_restore_target_t tt[] = {{0, e.qsa[0]}};
    CHECK_CODE(auxstore_restore_start(p, ns, prefix, tt, 1, &bad, &h, &err),
               AUXSTORE_INVALID_ARGUMENT);
    CHECK(all_fresh(&e));
    engine_release_states(&e);
  }
  engine_free(&e);

  /* The lease is gone with the restore: sequence 1 is evictable again. */
  {
    uint8_t another[16];
    prefix_at(70, kBlock, another);
    auxstore_layer_t l = {9, AUXSTORE_KIND_OPAQUE, big, sizeof big};
    CHECK_OK(auxstore_put_snapshot(db, ns, another, kBlock, 1, &l, &err));
    auxstore_stats_t s;
    CHECK_OK(auxstore_stats(db, &s, &err));
    uint64_t more = s.evictions + 1;
    wait_for(evicted_some, db, &more, "an eviction after the lease ended");
  }

  auxstore_pipeline_destroy(p);
  CHECK_OK(auxstore_stream_destroy(backend, stream, &err));
  auxstore_backend_destroy(backend);
  auxstore_close(db);
  return g_failures ? 1 : 0;
}

/* ---- process 3: a damaged table file ---------------------------------------- */

static int run_corrupt(const char* dir) {
  auxstore_t* db = NULL;
  if (open_store(dir, 0, &db) != AUXSTORE_OK) return 2;
  const uint64_t ns = register_ns(db);
  auxstore_backend_t* backend = NULL;
  CHECK_OK(auxstore_backend_create(backend_kind(), &backend, &err));
  uint64_t stream = 0;
  CHECK_OK(auxstore_stream_create(backend, &stream, &err));
  auxstore_pipeline_options_t po;
  auxstore_pipeline_options_init(&po);
  po.staging_bytes = 64 * 1024;
  auxstore_pipeline_t* p = NULL;
  CHECK_OK(auxstore_pipeline_create_with(db, backend, &po, &p, &err));
  Engine e;
  engine_alloc(&e, backend, stream);
  engine_borrow(&e, 0, 0, 0);
  uint8_t prefix[16];
  prefix_at(3, kTokens, prefix);
  uint64_t big_dev = dev_alloc(backend, 2u << 20);
  auxstore_state_t* big = NULL;
  CHECK_OK(auxstore_opaque_state_borrow(backend, big_dev, 2u << 20, 0, &big, &err));
  auxstore_restore_target_t t[] = {{0, e.qsa[0]}, {1, e.dsa}, {2, e.op}, {3, e.qsa[1]}, {4, big}};
  auxstore_restore_handle_t* h = NULL;
  CHECK_OK(auxstore_restore_start(p, ns, prefix, t, 5, NULL, &h, &err));
  CHECK_CODE(auxstore_restore_join(h, &err), AUXSTORE_CORRUPTION);
  uint64_t big_size = 1;
  CHECK_OK(auxstore_state_counters(big, &big_size, NULL, &err));
  CHECK(big_size == 0);
  CHECK_OK(auxstore_state_release(big, &err));
  CHECK_OK(auxstore_device_free(backend, big_dev, &err));
  auxstore_restore_handle_release(h);
  CHECK(all_fresh(&e));
  uint8_t found = 1;
  CHECK_OK(auxstore_get_manifests(db, ns, (const uint8_t(*)[16])prefix, 1, &found, NULL, &err));
  CHECK(found == 0); /* quarantined */
  auxstore_stats_t s;
  CHECK_OK(auxstore_stats(db, &s, &err));
  CHECK(s.quarantines == 1);
  engine_release_states(&e);
  engine_free(&e);
  auxstore_pipeline_destroy(p);
  auxstore_backend_destroy(backend);
  auxstore_close(db);
  return g_failures ? 1 : 0;
}

/* ---- the parent --------------------------------------------------------------- */

static int run_child(const char* self, const char* mode, const char* dir) {
  pid_t pid = fork();
  if (pid == 0) {
    execl(self, self, mode, dir, (char*)NULL);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "%s child killed by signal %d\n", mode, WTERMSIG(status));
    return 1;
  }
  return WEXITSTATUS(status);
}

/* Flips a byte in the middle of the newest table file (sequence 3's SST:
 * each snapshot over the ingest threshold is one file). */
static int damage_newest_sst(const char* dir) {
  char path[512], best[600] = "";
  snprintf(path, sizeof path, "%s/store", dir);
  DIR* d = opendir(path);
  if (!d) return 0;
  struct dirent* ent;
  while ((ent = readdir(d)) != NULL) {
    const size_t n = strlen(ent->d_name);
    if (n > 4 && strcmp(ent->d_name + n - 4, ".sst") == 0) {
      char full[600];
      snprintf(full, sizeof full, "%s/%s", path, ent->d_name);
      if (strcmp(full, best) > 0) snprintf(best, sizeof best, "%s", full);
    }
  }
  closedir(d);
  if (!best[0]) return 0;
  int fd = open(best, O_RDWR);
  if (fd < 0) return 0;
  struct stat st;
  fstat(fd, &st);
  const off_t at = st.st_size / 2;
  unsigned char b = 0;
  if (pread(fd, &b, 1, at) != 1) return 0;
  b ^= 0x40;
  int ok = pwrite(fd, &b, 1, at) == 1;
  close(fd);
  return ok;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "write") == 0) return run_write(argv[2]);
  if (argc == 3 && strcmp(argv[1], "read") == 0) return run_read(argv[2]);
  if (argc == 3 && strcmp(argv[1], "corrupt") == 0) return run_corrupt(argv[2]);
  char dir[] = "/tmp/auxstore-engine-flow-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  int rc = run_child(argv[0], "write", dir);
  if (rc == 0 && !damage_newest_sst(dir)) {
    fprintf(stderr, "no table file to damage\n");
    rc = 3;
  }
  if (rc == 0) rc = run_child(argv[0], "corrupt", dir);
  if (rc == 0) rc = run_child(argv[0], "read", dir);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  if (rc == 0) printf("engine_flow_test: passed\n");
  return rc;
}
