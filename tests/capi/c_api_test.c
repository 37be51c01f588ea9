/* The C ABI from C: every entry point, the status code and message of each
 * bad input, a snapshot round trip, and a restore into host-backend states
 * (wait and callback) checked bit-exact by host readback. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auxstore/c.h"

static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

/* The call returned `want`, with a message containing `needle`. Frees it. */
#define CHECK_ERR(call, want, needle) check_err((call), (want), (needle), &err, __LINE__)

static char* err = NULL;

static void check_err(int got, int want, const char* needle, char** msg, int line) {
  if (got != want) {
    fprintf(stderr, "line %d: code %d (%s), want %d (%s); message: %s\n", line, got,
            auxstore_code_name(got), want, auxstore_code_name(want), *msg ? *msg : "(none)");
    ++g_failures;
  } else if (want != AUXSTORE_OK && (*msg == NULL || strstr(*msg, needle) == NULL)) {
    fprintf(stderr, "line %d: message '%s' lacks '%s'\n", line, *msg ? *msg : "(none)", needle);
    ++g_failures;
  }
  auxstore_free(*msg);
  *msg = NULL;
}

#define CHECK_OK(call) CHECK_ERR(call, AUXSTORE_OK, "")

/* ---- test data ------------------------------------------------------------- */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

/* A finite bf16 in [-2, 2): the top 16 bits of a float. */
static uint16_t random_bf16(void) {
  float f = (float)((double)(next_random() % 4000000) / 1000000.0 - 2.0);
  uint32_t bits;
  memcpy(&bits, &f, 4);
  return (uint16_t)(bits >> 16);
}

static void put_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (uint8_t)(v >> (8 * i));
}

enum { HD = 64, MAX_TOKENS = 512, RATIO = 8, DSA_DIM = 32, DSA_CAP = 300 };

static auxstore_geometry_t geometry(void) {
  auxstore_geometry_t g = {HD, MAX_TOKENS, RATIO, 32, 10000.0f, 1e-6f, DSA_DIM, DSA_CAP};
  return g;
}

/* QSA v1: [ingested][pooled][ingested*HD bf16]. */
static uint8_t* qsa_blob(uint64_t ingested, uint64_t pooled, size_t* size) {
  *size = 16 + ingested * HD * 2;
  uint8_t* b = malloc(*size);
  put_le64(b, ingested);
  put_le64(b + 8, pooled);
  for (size_t i = 16; i < *size; i += 2) {
    uint16_t v = random_bf16();
    memcpy(b + i, &v, 2);
  }
  return b;
}

/* DSA v1: [len][d][k_normed][gate][valid]. */
static uint8_t* dsa_blob(uint64_t len, size_t* size) {
  *size = 16 + len * (4 * DSA_DIM + 1);
  uint8_t* b = malloc(*size);
  put_le64(b, len);
  put_le64(b + 8, DSA_DIM);
  for (size_t i = 16; i < *size; ++i) b[i] = (uint8_t)next_random();
  return b;
}

static int same_bytes(const void* a, size_t an, const void* b, size_t bn) {
  return an == bn && memcmp(a, b, an) == 0;
}

/* ---- the tests ---------------------------------------------------------------- */

static void test_codes(void) {
  CHECK(strcmp(auxstore_code_name(AUXSTORE_OK), "OK") == 0);
  CHECK(strcmp(auxstore_code_name(AUXSTORE_NOT_FOUND), "NotFound") == 0);
  CHECK(strcmp(auxstore_code_name(AUXSTORE_INTERNAL), "Internal") == 0);
  CHECK(strcmp(auxstore_code_name(11), "Unknown") == 0);
  CHECK(strcmp(auxstore_code_name(-1), "Unknown") == 0);
  auxstore_free(NULL);
}

static void test_options(void) {
  auxstore_options_t* o = auxstore_options_create();
  CHECK(o != NULL);
  CHECK_OK(auxstore_options_set_capacity_bytes(o, 1 << 20, &err));
  CHECK_OK(auxstore_options_set_ttl_seconds(o, 3600, &err));
  CHECK_OK(auxstore_options_set_chunk_bytes(o, 4096, &err));
  CHECK_OK(auxstore_options_set_durability(o, AUXSTORE_ASYNC, &err));
  CHECK_OK(auxstore_options_set_read_only(o, 0, &err));
  CHECK_OK(auxstore_options_set_create_if_missing(o, 1, &err));
  CHECK_OK(auxstore_options_set_read_lanes(o, 3, &err));
  CHECK_ERR(auxstore_options_set_read_lanes(o, 65, &err), AUXSTORE_INVALID_ARGUMENT,
            "auxstore_options_set_read_lanes: read lanes is 65, at most 64");
  CHECK_ERR(auxstore_options_set_chunk_bytes(o, 0, &err), AUXSTORE_INVALID_ARGUMENT,
            "auxstore_options_set_chunk_bytes: chunk bytes is 0");
  CHECK_ERR(auxstore_options_set_durability(o, 7, &err), AUXSTORE_INVALID_ARGUMENT,
            "durability 7 is neither");
  CHECK_ERR(auxstore_options_set_read_only(o, 2, &err), AUXSTORE_INVALID_ARGUMENT,
            "read_only is 2, must be 0 or 1");
  CHECK_ERR(auxstore_options_set_create_if_missing(o, -1, &err), AUXSTORE_INVALID_ARGUMENT,
            "create_if_missing is -1");
  CHECK_ERR(auxstore_options_set_shared(o, "rados://p?conf=/c", 2, 1 << 20, 0, &err),
            AUXSTORE_INVALID_ARGUMENT, "write_mode 2 is neither");
  CHECK_ERR(auxstore_options_set_shared(o, "rados://p?conf=/c", AUXSTORE_SHARED_BEHIND, 0, 0, &err),
            AUXSTORE_INVALID_ARGUMENT, "queue_bytes is 0");
  CHECK_ERR(
      auxstore_options_set_shared(o, "rados://p?conf=/c", AUXSTORE_SHARED_THROUGH, 1, 2, &err),
      AUXSTORE_INVALID_ARGUMENT, "shed_when_full is 2");
  CHECK_OK(auxstore_options_set_shared(o, NULL, AUXSTORE_SHARED_THROUGH, 1, 0, &err)); /* none */
  CHECK_ERR(auxstore_options_set_shared_local_copies(o, 2, &err), AUXSTORE_INVALID_ARGUMENT,
            "local_copies is 2, must be 0 or 1");
  CHECK_OK(auxstore_options_set_shared_local_copies(o, 0, &err));
  CHECK_OK(auxstore_options_set_shared_local_copies(o, 1, &err));
  CHECK_ERR(auxstore_options_set_ttl_seconds(NULL, 1, &err), AUXSTORE_INVALID_ARGUMENT,
            "options is NULL");
  CHECK_ERR(auxstore_options_set_capacity_bytes(NULL, 1, &err), AUXSTORE_INVALID_ARGUMENT,
            "options is NULL");
  /* A NULL errmsg still gets the code. */
  CHECK(auxstore_options_set_chunk_bytes(o, 0, NULL) == AUXSTORE_INVALID_ARGUMENT);
  /* A message already in *errmsg is replaced (freed), not leaked. */
  CHECK(auxstore_options_set_chunk_bytes(o, 0, &err) == AUXSTORE_INVALID_ARGUMENT);
  CHECK_ERR(auxstore_options_set_read_only(o, 5, &err), AUXSTORE_INVALID_ARGUMENT, "read_only");
  auxstore_options_destroy(o);
  auxstore_options_destroy(NULL);
}

static void test_prefix_hash(void) {
  uint32_t tokens[64];
  for (int i = 0; i < 64; ++i) tokens[i] = (uint32_t)(i * 7 + 3);
  uint8_t p64[4][16], p32[2][16], small[2][16], d1[16], d2[16];
  size_t n = 0;
  CHECK_OK(auxstore_prefix_hash(tokens, 64, 16, 42, p64, 4, &n, &err));
  CHECK(n == 4);
  CHECK_OK(auxstore_prefix_hash(tokens, 40, 16, 42, p32, 2, &n, &err));
  CHECK(n == 2);
  /* Chained: a shorter sequence's prefixes are the longer one's first ones. */
  CHECK(memcmp(p32, p64, sizeof p32) == 0);
  CHECK(memcmp(p64[0], p64[1], 16) != 0);
  CHECK_OK(auxstore_prefix_hash(tokens, 64, 16, 43, p64, 4, &n, &err));
  CHECK(memcmp(p32[0], p64[0], 16) != 0); /* the salt changes every prefix */
  CHECK_ERR(auxstore_prefix_hash(tokens, 64, 16, 42, small, 2, &n, &err), AUXSTORE_OUT_OF_RANGE,
            "make 4 prefixes, more than the capacity of 2");
  CHECK(n == 4);
  CHECK_ERR(auxstore_prefix_hash(tokens, 64, 0, 42, small, 2, &n, &err), AUXSTORE_INVALID_ARGUMENT,
            "block_size is 0");
  CHECK_ERR(auxstore_prefix_hash(NULL, 64, 16, 42, small, 2, &n, &err), AUXSTORE_INVALID_ARGUMENT,
            "tokens is NULL");
  CHECK_ERR(auxstore_prefix_hash(tokens, 64, 16, 42, NULL, 4, &n, &err), AUXSTORE_INVALID_ARGUMENT,
            "out is NULL");
  CHECK_ERR(auxstore_prefix_hash(tokens, 64, 16, 42, small, 2, NULL, &err),
            AUXSTORE_INVALID_ARGUMENT, "n_out is NULL");
  CHECK_OK(auxstore_prefix_hash(NULL, 0, 16, 42, NULL, 0, &n, &err));
  CHECK(n == 0);

  CHECK_OK(auxstore_token_digest(tokens, 32, 42, d1, &err));
  CHECK_OK(auxstore_token_digest(tokens, 32, 42, d2, &err));
  CHECK(memcmp(d1, d2, 16) == 0);
  CHECK_OK(auxstore_token_digest(tokens, 33, 42, d2, &err));
  CHECK(memcmp(d1, d2, 16) != 0);
  CHECK_ERR(auxstore_token_digest(NULL, 3, 42, d1, &err), AUXSTORE_INVALID_ARGUMENT,
            "tokens is NULL");
  CHECK_ERR(auxstore_token_digest(tokens, 3, 42, NULL, &err), AUXSTORE_INVALID_ARGUMENT,
            "out is NULL");
}

/* State shared by the store and restore tests. */
static char g_dir[64];
static auxstore_t* g_db = NULL;
static uint64_t g_ns = 0;
static uint8_t g_prefixes[4][16];
static uint32_t g_tokens[64];
static uint8_t *g_qsa, *g_dsa, *g_opaque;
static size_t g_qsa_size, g_dsa_size, g_opaque_size = 5000;

static void test_open_and_namespace(void) {
  auxstore_options_t* o = auxstore_options_create();
  CHECK_OK(auxstore_options_set_chunk_bytes(o, 4096, &err)); /* many chunks per layer */
  char path[96];
  snprintf(path, sizeof path, "%s/store", g_dir);
  auxstore_t* db = NULL;
  CHECK_ERR(auxstore_open(NULL, o, &db, &err), AUXSTORE_INVALID_ARGUMENT,
            "auxstore_open: path is NULL");
  CHECK_ERR(auxstore_open(path, o, NULL, &err), AUXSTORE_INVALID_ARGUMENT, "out is NULL");
  CHECK_ERR(auxstore_open("", o, &db, &err), AUXSTORE_INVALID_ARGUMENT, "path is empty");
  CHECK_OK(auxstore_options_set_create_if_missing(o, 0, &err));
  CHECK(auxstore_open(path, o, &db, &err) != AUXSTORE_OK); /* not there, not created */
  CHECK(err != NULL && db == NULL);
  auxstore_free(err);
  err = NULL;
  CHECK_OK(auxstore_options_set_create_if_missing(o, 1, &err));
  CHECK_OK(auxstore_open(path, o, &g_db, &err));
  auxstore_options_destroy(o);
  CHECK(g_db != NULL);

  auxstore_geometry_t g = geometry();
  uint64_t ns = 0;
  CHECK_ERR(auxstore_register_namespace(NULL, "m", &g, &ns, &err), AUXSTORE_INVALID_ARGUMENT,
            "db is NULL");
  CHECK_ERR(auxstore_register_namespace(g_db, NULL, &g, &ns, &err), AUXSTORE_INVALID_ARGUMENT,
            "model_id is NULL");
  CHECK_ERR(auxstore_register_namespace(g_db, "m", NULL, &ns, &err), AUXSTORE_INVALID_ARGUMENT,
            "geometry is NULL");
  CHECK_ERR(auxstore_register_namespace(g_db, "m", &g, NULL, &err), AUXSTORE_INVALID_ARGUMENT,
            "ns_out is NULL");
  CHECK_ERR(auxstore_register_namespace(g_db, "", &g, &ns, &err), AUXSTORE_INVALID_ARGUMENT,
            "model_id is empty");
  g.qsa_ratio = 0;
  CHECK_ERR(auxstore_register_namespace(g_db, "m", &g, &ns, &err), AUXSTORE_INVALID_ARGUMENT,
            "QSA ratio is 0");
  CHECK(ns == 0);
  g = geometry();
  CHECK_OK(auxstore_register_namespace(g_db, "c-api-model", &g, &g_ns, &err));
  CHECK(g_ns != 0);
  CHECK_OK(auxstore_register_namespace(g_db, "c-api-model", &g, &ns, &err));
  CHECK(ns == g_ns); /* idempotent: the same fingerprint */
}

static void test_snapshots(void) {
  size_t n = 0, found = 99;
  uint64_t covered = 0;
  uint8_t digest[16], got_prefix[16];
  for (int i = 0; i < 64; ++i) g_tokens[i] = (uint32_t)(1000 + i);
  CHECK_OK(auxstore_prefix_hash(g_tokens, 64, 16, 7, g_prefixes, 4, &n, &err));
  CHECK_OK(auxstore_token_digest(g_tokens, 48, 7, digest, &err));

  g_qsa = qsa_blob(301, 37, &g_qsa_size);
  g_dsa = dsa_blob(120, &g_dsa_size);
  g_opaque = malloc(g_opaque_size);
  for (size_t i = 0; i < g_opaque_size; ++i) g_opaque[i] = (uint8_t)next_random();
  auxstore_layer_t layers[3] = {{0, AUXSTORE_KIND_QSA, g_qsa, g_qsa_size},
                                {1, AUXSTORE_KIND_DSA, g_dsa, g_dsa_size},
                                {2, AUXSTORE_KIND_OPAQUE, g_opaque, g_opaque_size}};

  /* Bad input: an error naming what was wrong, and nothing written. */
  auxstore_layer_t bad[3];
  memcpy(bad, layers, sizeof bad);
  bad[1].kind = 9;
  CHECK_ERR(auxstore_put_snapshot(g_db, g_ns, g_prefixes[2], 48, 3, bad, &err),
            AUXSTORE_INVALID_ARGUMENT, "layers[1].kind is 9, not a known kind");
  memcpy(bad, layers, sizeof bad);
  bad[2].data = NULL;
  CHECK_ERR(auxstore_put_snapshot(g_db, g_ns, g_prefixes[2], 48, 3, bad, &err),
            AUXSTORE_INVALID_ARGUMENT, "layers[2].data is NULL with size 5000");
  memcpy(bad, layers, sizeof bad);
  bad[0].size -= 2; /* a truncated QSA blob */
  CHECK_ERR(auxstore_put_snapshot(g_db, g_ns, g_prefixes[2], 48, 3, bad, &err), AUXSTORE_CORRUPTION,
            "QSA aux blob size mismatch");
  memcpy(bad, layers, sizeof bad);
  bad[1].layer = 0;
  CHECK(auxstore_put_snapshot(g_db, g_ns, g_prefixes[2], 48, 3, bad, &err) ==
        AUXSTORE_INVALID_ARGUMENT);
  CHECK(err != NULL);
  auxstore_free(err);
  err = NULL;
  CHECK_ERR(auxstore_put_snapshot(g_db, g_ns, g_prefixes[2], 48, 3, NULL, &err),
            AUXSTORE_INVALID_ARGUMENT, "layers is NULL");
  CHECK_ERR(auxstore_put_snapshot(g_db, g_ns, NULL, 48, 3, layers, &err), AUXSTORE_INVALID_ARGUMENT,
            "prefix is NULL");
  CHECK_ERR(auxstore_put_snapshot(NULL, g_ns, g_prefixes[2], 48, 3, layers, &err),
            AUXSTORE_INVALID_ARGUMENT, "db is NULL");
  CHECK_ERR(auxstore_put_snapshot(g_db, g_ns, g_prefixes[2], 48, 0, layers, &err),
            AUXSTORE_INVALID_ARGUMENT, "at least one layer");
  CHECK_ERR(auxstore_put_snapshot_with_digest(g_db, g_ns, g_prefixes[2], 48, NULL, 3, layers, &err),
            AUXSTORE_INVALID_ARGUMENT, "token_digest is NULL");
  CHECK_ERR(auxstore_longest_prefix(g_db, g_ns, (const uint8_t(*)[16])g_prefixes, 4, &found, &err),
            AUXSTORE_NOT_FOUND, "none of the 4 candidates is stored");
  CHECK(found == 99);

  CHECK_OK(
      auxstore_put_snapshot_with_digest(g_db, g_ns, g_prefixes[2], 48, digest, 3, layers, &err));
  CHECK_OK(auxstore_put_snapshot(g_db, g_ns, g_prefixes[2], 48, 3, layers, &err)); /* no-op */

  /* Lookups. */
  CHECK_OK(auxstore_longest_prefix(g_db, g_ns, (const uint8_t(*)[16])g_prefixes, 4, &found, &err));
  CHECK(found == 2);
  CHECK_ERR(auxstore_longest_prefix(g_db, g_ns, (const uint8_t(*)[16])g_prefixes, 2, &found, &err),
            AUXSTORE_NOT_FOUND, "none of the 2 candidates");
  CHECK_ERR(auxstore_longest_prefix(g_db, g_ns, NULL, 4, &found, &err), AUXSTORE_INVALID_ARGUMENT,
            "candidates is NULL");
  CHECK_ERR(auxstore_longest_prefix(g_db, g_ns, (const uint8_t(*)[16])g_prefixes, 4, NULL, &err),
            AUXSTORE_INVALID_ARGUMENT, "found_index is NULL");
  CHECK_ERR(auxstore_longest_prefix(g_db, g_ns, NULL, 0, &found, &err), AUXSTORE_NOT_FOUND,
            "none of the 0 candidates");
  CHECK_OK(auxstore_longest_prefix_for_tokens(g_db, g_ns, g_tokens, 64, 16, 7, got_prefix, &covered,
                                              &err));
  CHECK(covered == 48 && memcmp(got_prefix, g_prefixes[2], 16) == 0);
  CHECK_ERR(auxstore_longest_prefix_for_tokens(g_db, g_ns, g_tokens, 64, 16, 8, got_prefix,
                                               &covered, &err),
            AUXSTORE_NOT_FOUND, "no stored prefix of the 64 tokens");
  CHECK_ERR(auxstore_longest_prefix_for_tokens(g_db, g_ns, g_tokens, 64, 0, 7, got_prefix, &covered,
                                               &err),
            AUXSTORE_INVALID_ARGUMENT, "block_size is 0");

  /* Manifest and layers, bit-exact. */
  auxstore_layer_info_t info[3];
  uint64_t token_count = 0;
  CHECK_OK(auxstore_get_manifest(g_db, g_ns, g_prefixes[2], &token_count, info, 3, &n, &err));
  CHECK(n == 3 && token_count == 48);
  CHECK(info[0].layer == 0 && info[0].kind == AUXSTORE_KIND_QSA && info[0].bytes == g_qsa_size);
  CHECK(info[1].kind == AUXSTORE_KIND_DSA && info[2].kind == AUXSTORE_KIND_OPAQUE);
  CHECK_ERR(auxstore_get_manifest(g_db, g_ns, g_prefixes[2], &token_count, info, 1, &n, &err),
            AUXSTORE_OUT_OF_RANGE, "the snapshot has 3 layers, more than the capacity of 1");
  CHECK(n == 3);
  CHECK(auxstore_get_manifest(g_db, g_ns, g_prefixes[0], &token_count, info, 3, &n, &err) ==
        AUXSTORE_NOT_FOUND);
  auxstore_free(err);
  err = NULL;
  const uint8_t* want[3] = {g_qsa, g_dsa, g_opaque};
  const size_t want_size[3] = {g_qsa_size, g_dsa_size, g_opaque_size};
  for (uint32_t l = 0; l < 3; ++l) {
    void* data = NULL;
    size_t size = 0;
    CHECK_OK(auxstore_get_layer(g_db, g_ns, g_prefixes[2], l, &data, &size, &err));
    CHECK(same_bytes(data, size, want[l], want_size[l]));
    auxstore_free(data);
  }
  void* data = NULL;
  size_t size = 0;
  CHECK(auxstore_get_layer(g_db, g_ns, g_prefixes[2], 7, &data, &size, &err) == AUXSTORE_NOT_FOUND);
  CHECK(data == NULL && err != NULL);
  auxstore_free(err);
  err = NULL;
  CHECK_ERR(auxstore_get_layer(g_db, g_ns, g_prefixes[2], 0, NULL, &size, &err),
            AUXSTORE_INVALID_ARGUMENT, "data is NULL");
  CHECK_ERR(auxstore_get_layer(g_db, g_ns, g_prefixes[2], 0, &data, NULL, &err),
            AUXSTORE_INVALID_ARGUMENT, "size is NULL");

  auxstore_stats_t st;
  CHECK_OK(auxstore_stats(g_db, &st, &err));
  CHECK(st.snapshots == 1 && st.puts == 1 && st.duplicate_puts == 1);
  CHECK(st.payload_bytes == g_qsa_size + g_dsa_size + g_opaque_size && st.fenced == 0);
  CHECK_ERR(auxstore_stats(g_db, NULL, &err), AUXSTORE_INVALID_ARGUMENT, "out is NULL");
  CHECK_OK(auxstore_flush(g_db, &err));
  CHECK_ERR(auxstore_flush(NULL, &err), AUXSTORE_INVALID_ARGUMENT, "db is NULL");
}

static auxstore_backend_t* g_backend = NULL;
static uint16_t g_k_pool_k[HD], g_k_norm_w[HD];

static void test_backend_and_states(void) {
  auxstore_backend_t* b = NULL;
  CHECK_ERR(auxstore_backend_create(5, &b, &err), AUXSTORE_INVALID_ARGUMENT,
            "backend kind 5 is not AUTO (0), HOST (1) or CUDA (2)");
  CHECK_ERR(auxstore_backend_create(AUXSTORE_BACKEND_HOST, NULL, &err), AUXSTORE_INVALID_ARGUMENT,
            "out is NULL");
  int cuda = auxstore_backend_create(AUXSTORE_BACKEND_CUDA, &b, &err);
  CHECK(cuda == AUXSTORE_OK || cuda == AUXSTORE_UNAVAILABLE);
  if (cuda == AUXSTORE_OK) {
    CHECK(auxstore_backend_kind(b) == AUXSTORE_BACKEND_CUDA);
    CHECK(strncmp(auxstore_backend_name(b), "cuda:", 5) == 0);
  }
  auxstore_backend_destroy(b);
  auxstore_free(err);
  err = NULL;
  CHECK_OK(auxstore_backend_create(AUXSTORE_BACKEND_HOST, &g_backend, &err));
  CHECK(auxstore_backend_kind(g_backend) == AUXSTORE_BACKEND_HOST);
  CHECK(strcmp(auxstore_backend_name(g_backend), "host") == 0);
  CHECK(auxstore_backend_kind(NULL) == -1 && strcmp(auxstore_backend_name(NULL), "") == 0);
  auxstore_backend_destroy(NULL);

  for (int i = 0; i < HD; ++i) {
    g_k_pool_k[i] = random_bf16();
    g_k_norm_w[i] = random_bf16();
  }
  auxstore_geometry_t g = geometry();
  auxstore_state_t* s = NULL;
  CHECK_ERR(auxstore_qsa_state_create(NULL, &g, g_k_pool_k, g_k_norm_w, &s, &err),
            AUXSTORE_INVALID_ARGUMENT, "backend is NULL");
  CHECK_ERR(auxstore_qsa_state_create(g_backend, &g, NULL, g_k_norm_w, &s, &err),
            AUXSTORE_INVALID_ARGUMENT, "k_pool_k is NULL");
  CHECK_ERR(auxstore_qsa_state_create(g_backend, &g, g_k_pool_k, g_k_norm_w, NULL, &err),
            AUXSTORE_INVALID_ARGUMENT, "out is NULL");
  g.qsa_hd = 0;
  CHECK_ERR(auxstore_qsa_state_create(g_backend, &g, g_k_pool_k, g_k_norm_w, &s, &err),
            AUXSTORE_INVALID_ARGUMENT, "geometry has no QSA (qsa_hd is 0)");
  g = geometry();
  g.dsa_index_head_dim = 0;
  CHECK_ERR(auxstore_dsa_state_create(g_backend, &g, &s, &err), AUXSTORE_INVALID_ARGUMENT,
            "geometry has no DSA");
  CHECK_ERR(auxstore_dsa_state_create(g_backend, NULL, &s, &err), AUXSTORE_INVALID_ARGUMENT,
            "geometry is NULL");
  CHECK_ERR(auxstore_opaque_state_create(NULL, 10, &s, &err), AUXSTORE_INVALID_ARGUMENT,
            "backend is NULL");
  CHECK(s == NULL);

  /* Load, read back, counters; a second load into a used state is refused. */
  g = geometry();
  CHECK_OK(auxstore_qsa_state_create(g_backend, &g, g_k_pool_k, g_k_norm_w, &s, &err));
  CHECK(auxstore_state_kind(s) == AUXSTORE_KIND_QSA && auxstore_state_kind(NULL) == 0);
  uint64_t count = 9, pooled = 9;
  CHECK_OK(auxstore_state_counters(s, &count, &pooled, &err));
  CHECK(count == 0 && pooled == 0);
  g_qsa[0] ^= 1; /* 300 ingested: the size no longer matches */
  CHECK_ERR(auxstore_state_load(s, g_qsa, g_qsa_size, &err), AUXSTORE_CORRUPTION,
            "QSA aux blob size mismatch");
  g_qsa[0] ^= 1;
  CHECK_OK(auxstore_state_counters(s, &count, &pooled, &err));
  CHECK(count == 0 && pooled == 0); /* a failed load moved nothing */
  CHECK_ERR(auxstore_state_load(s, NULL, 5, &err), AUXSTORE_INVALID_ARGUMENT, "blob is NULL");
  CHECK_OK(auxstore_state_load(s, g_qsa, g_qsa_size, &err));
  CHECK_OK(auxstore_state_counters(s, &count, NULL, &err));
  CHECK(count == 301);
  CHECK_ERR(auxstore_state_load(s, g_qsa, g_qsa_size, &err), AUXSTORE_INVALID_ARGUMENT,
            "state is not fresh");
  void* data = NULL;
  size_t size = 0;
  CHECK_OK(auxstore_state_read(s, &data, &size, &err));
  CHECK(same_bytes(data, size, g_qsa, g_qsa_size));
  auxstore_free(data);
  CHECK_OK(auxstore_qsa_state_read_block_keys(s, &data, &size, &err));
  CHECK(size == 37 * HD * 2);
  auxstore_free(data);
  CHECK_ERR(auxstore_state_read(NULL, &data, &size, &err), AUXSTORE_INVALID_ARGUMENT,
            "state is NULL");
  CHECK_ERR(auxstore_state_counters(NULL, &count, &pooled, &err), AUXSTORE_INVALID_ARGUMENT,
            "state is NULL");
  CHECK_OK(auxstore_state_release(s, &err));
  CHECK_OK(auxstore_state_release(NULL, &err));

  CHECK_OK(auxstore_opaque_state_create(g_backend, 100, &s, &err));
  CHECK_ERR(auxstore_qsa_state_read_block_keys(s, &data, &size, &err), AUXSTORE_INVALID_ARGUMENT,
            "state is opaque, not QSA");
  CHECK_ERR(auxstore_state_load(s, g_opaque, g_opaque_size, &err), AUXSTORE_OUT_OF_RANGE,
            "opaque blob of 5000");
  CHECK_OK(auxstore_state_release(s, &err));
}

/* Fresh targets for layers 0 (QSA), 1 (DSA), 2 (opaque). */
static void make_targets(auxstore_restore_target_t t[3]) {
  auxstore_geometry_t g = geometry();
  t[0].layer = 0;
  t[1].layer = 1;
  t[2].layer = 2;
  CHECK_OK(auxstore_qsa_state_create(g_backend, &g, g_k_pool_k, g_k_norm_w, &t[0].state, &err));
  CHECK_OK(auxstore_dsa_state_create(g_backend, &g, &t[1].state, &err));
  CHECK_OK(auxstore_opaque_state_create(g_backend, 6000, &t[2].state, &err));
}

static void release_targets(auxstore_restore_target_t t[3]) {
  for (int i = 0; i < 3; ++i) CHECK_OK(auxstore_state_release(t[i].state, &err));
}

/* Every target holds the stored blob; QSA's re-pooled block keys equal a
 * state loaded from the same blob directly. */
static void expect_restored(auxstore_restore_target_t t[3]) {
  const uint8_t* want[3] = {g_qsa, g_dsa, g_opaque};
  const size_t want_size[3] = {g_qsa_size, g_dsa_size, g_opaque_size};
  for (int i = 0; i < 3; ++i) {
    void* data = NULL;
    size_t size = 0;
    CHECK_OK(auxstore_state_read(t[i].state, &data, &size, &err));
    CHECK(same_bytes(data, size, want[i], want_size[i]));
    auxstore_free(data);
  }
  uint64_t count = 0, pooled = 0;
  CHECK_OK(auxstore_state_counters(t[0].state, &count, &pooled, &err));
  CHECK(count == 301 && pooled == 37);
  auxstore_geometry_t g = geometry();
  auxstore_state_t* ref = NULL;
  CHECK_OK(auxstore_qsa_state_create(g_backend, &g, g_k_pool_k, g_k_norm_w, &ref, &err));
  CHECK_OK(auxstore_state_load(ref, g_qsa, g_qsa_size, &err));
  void *a = NULL, *b = NULL;
  size_t an = 0, bn = 0;
  CHECK_OK(auxstore_qsa_state_read_block_keys(t[0].state, &a, &an, &err));
  CHECK_OK(auxstore_qsa_state_read_block_keys(ref, &b, &bn, &err));
  CHECK(an == 37 * HD * 2 && same_bytes(a, an, b, bn));
  auxstore_free(a);
  auxstore_free(b);
  CHECK_OK(auxstore_state_release(ref, &err));
}

struct done_box {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, code;
  char message[256];
};

static void on_done(void* arg, int code, const char* message) {
  struct done_box* box = arg;
  pthread_mutex_lock(&box->mu);
  box->code = code;
  snprintf(box->message, sizeof box->message, "%s", message ? message : "");
  box->done = 1;
  pthread_cond_signal(&box->cv);
  pthread_mutex_unlock(&box->mu);
}

static int wait_done(struct done_box* box) {
  pthread_mutex_lock(&box->mu);
  while (!box->done) pthread_cond_wait(&box->cv, &box->mu);
  pthread_mutex_unlock(&box->mu);
  return box->code;
}

static void test_restore(void) {
  auxstore_pipeline_t* p = NULL;
  CHECK_ERR(auxstore_pipeline_create(NULL, g_backend, &p, &err), AUXSTORE_INVALID_ARGUMENT,
            "db is NULL");
  CHECK_ERR(auxstore_pipeline_create(g_db, NULL, &p, &err), AUXSTORE_INVALID_ARGUMENT,
            "backend is NULL");
  CHECK_OK(auxstore_pipeline_create(g_db, g_backend, &p, &err));

  auxstore_restore_target_t t[3];
  make_targets(t);
  /* Refused up front: nothing starts. */
  CHECK_ERR(auxstore_restore_wait(p, g_ns, g_prefixes[2], t, 0, &err), AUXSTORE_INVALID_ARGUMENT,
            "no restore targets");
  CHECK_ERR(auxstore_restore_wait(p, g_ns, g_prefixes[2], NULL, 3, &err), AUXSTORE_INVALID_ARGUMENT,
            "targets is NULL");
  CHECK_ERR(auxstore_restore_wait(NULL, g_ns, g_prefixes[2], t, 3, &err), AUXSTORE_INVALID_ARGUMENT,
            "pipeline is NULL");
  CHECK_ERR(auxstore_restore_wait(p, g_ns, NULL, t, 3, &err), AUXSTORE_INVALID_ARGUMENT,
            "prefix is NULL");
  auxstore_restore_target_t dup[3];
  memcpy(dup, t, sizeof dup);
  dup[2].layer = 1;
  CHECK_ERR(auxstore_restore_wait(p, g_ns, g_prefixes[2], dup, 3, &err), AUXSTORE_INVALID_ARGUMENT,
            "targets[2].layer 1 repeats an earlier target's layer");
  dup[2].layer = 2;
  dup[1].state = NULL;
  CHECK_ERR(auxstore_restore_wait(p, g_ns, g_prefixes[2], dup, 3, &err), AUXSTORE_INVALID_ARGUMENT,
            "targets[1].state is NULL");
  CHECK_ERR(auxstore_restore(p, g_ns, g_prefixes[2], t, 3, NULL, NULL, &err),
            AUXSTORE_INVALID_ARGUMENT, "done is NULL");
  /* Ends with an error, no counter moved. */
  CHECK(auxstore_restore_wait(p, g_ns, g_prefixes[0], t, 3, &err) == AUXSTORE_NOT_FOUND);
  CHECK(err != NULL);
  auxstore_free(err);
  err = NULL;
  uint64_t count = 1;
  CHECK_OK(auxstore_state_counters(t[0].state, &count, NULL, &err));
  CHECK(count == 0);

  /* Wait. */
  CHECK_OK(auxstore_restore_wait(p, g_ns, g_prefixes[2], t, 3, &err));
  expect_restored(t);
  /* A used target is refused at completion, with a message. */
  CHECK_ERR(auxstore_restore_wait(p, g_ns, g_prefixes[2], t, 3, &err), AUXSTORE_INVALID_ARGUMENT,
            "not fresh");
  release_targets(t);

  /* Callback. */
  make_targets(t);
  struct done_box box;
  memset(&box, 0, sizeof box);
  pthread_mutex_init(&box.mu, NULL);
  pthread_cond_init(&box.cv, NULL);
  CHECK_OK(auxstore_restore(p, g_ns, g_prefixes[2], t, 3, on_done, &box, &err));
  CHECK(wait_done(&box) == AUXSTORE_OK);
  expect_restored(t);
  box.done = 0;
  CHECK_OK(auxstore_restore(p, g_ns, g_prefixes[2], t, 3, on_done, &box, &err));
  CHECK(wait_done(&box) == AUXSTORE_INVALID_ARGUMENT && strstr(box.message, "not fresh"));
  pthread_cond_destroy(&box.cv);
  pthread_mutex_destroy(&box.mu);
  release_targets(t);

  /* Row ranges (options->use_rows): QSA and DSA targets that hold rows
   * [0, N) restore rows [N, M); step by step they end as a whole restore. */
  make_targets(t);
  auxstore_restore_options_t o;
  auxstore_restore_options_init(&o);
  o.use_rows = 1;
  const uint64_t steps[4] = {0, 100, 120, 301}; /* DSA has 120 rows, QSA 301 */
  for (int k = 0; k < 3; ++k) {
    o.first_row = steps[k];
    o.last_row = steps[k + 1];
    auxstore_restore_handle_t* h = NULL;
    CHECK_OK(auxstore_restore_start(p, g_ns, g_prefixes[2], t, k < 2 ? 2 : 1, &o, &h, &err));
    CHECK_OK(auxstore_restore_join(h, &err));
    auxstore_restore_handle_release(h);
    CHECK_OK(auxstore_state_counters(t[0].state, &count, NULL, &err));
    CHECK(count == steps[k + 1]);
  }
  CHECK_OK(auxstore_restore_wait(p, g_ns, g_prefixes[2], &t[2], 1, &err)); /* opaque: whole */
  expect_restored(t);
  release_targets(t);
  /* Refused by the restore: a range that does not start at the rows the
   * target holds; an opaque target. A caller built before the row fields
   * (the shorter struct) restores whole layers. */
  make_targets(t);
  o.first_row = 10;
  o.last_row = 20;
  auxstore_restore_handle_t* h = NULL;
  CHECK_OK(auxstore_restore_start(p, g_ns, g_prefixes[2], t, 2, &o, &h, &err));
  CHECK_ERR(auxstore_restore_join(h, &err), AUXSTORE_INVALID_ARGUMENT, "holds 0 rows");
  auxstore_restore_handle_release(h);
  o.first_row = 0;
  CHECK_OK(auxstore_restore_start(p, g_ns, g_prefixes[2], &t[2], 1, &o, &h, &err));
  CHECK_ERR(auxstore_restore_join(h, &err), AUXSTORE_INVALID_ARGUMENT, "opaque");
  auxstore_restore_handle_release(h);
  o.first_row = 30;
  CHECK_ERR(auxstore_restore_start(p, g_ns, g_prefixes[2], t, 2, &o, &h, &err),
            AUXSTORE_INVALID_ARGUMENT, "first_row 30 is after last_row 20");
  o.struct_size = offsetof(auxstore_restore_options_t, use_rows);
  CHECK_OK(auxstore_restore_start(p, g_ns, g_prefixes[2], t, 3, &o, &h, &err));
  CHECK_OK(auxstore_restore_join(h, &err));
  auxstore_restore_handle_release(h);
  expect_restored(t);
  release_targets(t);
  auxstore_pipeline_destroy(p);
  auxstore_pipeline_destroy(NULL);
}

/* A store without a shared tier: shared 0, every counter 0; the struct's
 * size is checked first. */
static void test_shared_stats_without_a_tier(void) {
  auxstore_shared_stats_t s;
  memset(&s, 0xff, sizeof s);
  s.struct_size = sizeof s - 8;
  CHECK_ERR(auxstore_shared_stats(g_db, &s, &err), AUXSTORE_INVALID_ARGUMENT,
            "expected sizeof(auxstore_shared_stats_t)");
  CHECK_ERR(auxstore_shared_stats(g_db, NULL, &err), AUXSTORE_INVALID_ARGUMENT, "out is NULL");
  s.struct_size = sizeof s;
  CHECK_OK(auxstore_shared_stats(g_db, &s, &err));
  CHECK(s.struct_size == sizeof s && s.shared == 0 && s.uploads == 0 && s.queued == 0 &&
        s.restores == 0 && s.corruptions == 0 && s.shed == 0);
}

/* Many snapshots in one call: each put as auxstore_put_snapshot_ex puts it,
 * each with its own outcome; a bad argument fails its snapshot alone. */
static void test_put_snapshots(void) {
  uint8_t data[4][128];
  for (int i = 0; i < 4; ++i)
    for (int b = 0; b < 128; ++b) data[i][b] = (uint8_t)next_random();
  auxstore_layer_t layers[4];
  auxstore_snapshot_put_t puts[4];
  memset(puts, 0, sizeof puts);
  for (int i = 0; i < 4; ++i) {
    layers[i].layer = 0;
    layers[i].kind = AUXSTORE_KIND_OPAQUE;
    layers[i].data = data[i];
    layers[i].size = (size_t)(100 + i);
    puts[i].ns = g_ns;
    memset(puts[i].prefix, 0xB0 + i, 16);
    puts[i].token_count = 8;
    puts[i].n_layers = 1;
    puts[i].layers = &layers[i];
  }
  layers[1].kind = 9; /* not a kind */
  auxstore_put_options_t short_options;
  memset(&short_options, 0, sizeof short_options);
  short_options.struct_size = 1;
  puts[3].options = &short_options;
  int results[4] = {-1, -1, -1, -1};
  CHECK_ERR(auxstore_put_snapshots(g_db, puts, 4, results, &err), AUXSTORE_INVALID_ARGUMENT,
            "snapshots[1]: layers[0].kind is 9");
  CHECK(results[0] == AUXSTORE_OK && results[1] == AUXSTORE_INVALID_ARGUMENT &&
        results[2] == AUXSTORE_OK && results[3] == AUXSTORE_INVALID_ARGUMENT);
  for (int i = 0; i < 4; i += 2) {
    void* got = NULL;
    size_t size = 0;
    CHECK_OK(auxstore_get_layer(g_db, g_ns, puts[i].prefix, 0, &got, &size, &err));
    CHECK(got != NULL && size == layers[i].size && memcmp(got, data[i], size) == 0);
    auxstore_free(got);
  }
  void* none = NULL;
  size_t none_size = 0;
  CHECK_ERR(auxstore_get_layer(g_db, g_ns, puts[3].prefix, 0, &none, &none_size, &err),
            AUXSTORE_NOT_FOUND, "");
  int stale[2] = {-1, -1};
  CHECK_ERR(auxstore_put_snapshots(NULL, puts, 2, stale, &err), AUXSTORE_INVALID_ARGUMENT,
            "db is NULL");
  CHECK(stale[0] == AUXSTORE_INVALID_ARGUMENT && stale[1] == AUXSTORE_INVALID_ARGUMENT);
  CHECK_ERR(auxstore_put_snapshots(g_db, NULL, 2, NULL, &err), AUXSTORE_INVALID_ARGUMENT,
            "snapshots is NULL");
  CHECK_OK(auxstore_put_snapshots(g_db, NULL, 0, NULL, &err));
  for (int i = 0; i < 4; ++i) CHECK_OK(auxstore_erase(g_db, g_ns, puts[i].prefix, &err));
}

static void test_erase_and_read_only(void) {
  size_t found = 0;
  CHECK_ERR(auxstore_erase(g_db, g_ns, NULL, &err), AUXSTORE_INVALID_ARGUMENT, "prefix is NULL");
  CHECK_OK(auxstore_erase(g_db, g_ns, g_prefixes[2], &err));
  /* Erasing what is not stored is OK and changes nothing. */
  auxstore_stats_t before, after;
  CHECK_OK(auxstore_stats(g_db, &before, &err));
  CHECK_OK(auxstore_erase(g_db, g_ns, g_prefixes[2], &err));
  CHECK_OK(auxstore_stats(g_db, &after, &err));
  CHECK(before.commit_seq == after.commit_seq && before.snapshots == after.snapshots);
  CHECK(auxstore_longest_prefix(g_db, g_ns, (const uint8_t(*)[16])g_prefixes, 4, &found, &err) ==
        AUXSTORE_NOT_FOUND);
  auxstore_free(err);
  err = NULL;
  auxstore_layer_t layer = {3, AUXSTORE_KIND_OPAQUE, g_opaque, 100};
  CHECK_OK(auxstore_put_snapshot(g_db, g_ns, g_prefixes[1], 32, 1, &layer, &err));
  auxstore_close(g_db);
  auxstore_close(NULL);

  /* Reopened read-only: the snapshot is there, writes are refused. */
  auxstore_options_t* o = auxstore_options_create();
  CHECK_OK(auxstore_options_set_read_only(o, 1, &err));
  char path[96];
  snprintf(path, sizeof path, "%s/store", g_dir);
  auxstore_t* db = NULL;
  CHECK_OK(auxstore_open(path, o, &db, &err));
  auxstore_options_destroy(o);
  CHECK_OK(auxstore_longest_prefix(db, g_ns, (const uint8_t(*)[16])g_prefixes, 4, &found, &err));
  CHECK(found == 1);
  CHECK_ERR(auxstore_put_snapshot(db, g_ns, g_prefixes[3], 64, 1, &layer, &err),
            AUXSTORE_UNAVAILABLE, "auxstore_put_snapshot: ");
  auxstore_close(db);
}

static void remove_tree(const char* dir) {
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int main(void) {
  const char* tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/auxstore-capi-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(g_dir) == NULL) {
    perror("mkdtemp");
    return 2;
  }
  test_codes();
  test_options();
  test_prefix_hash();
  test_open_and_namespace();
  if (g_db != NULL) {
    test_snapshots();
    test_shared_stats_without_a_tier();
    test_put_snapshots();
    test_backend_and_states();
    if (g_backend != NULL) test_restore();
    auxstore_backend_destroy(g_backend);
    test_erase_and_read_only();
  }
  free(g_qsa);
  free(g_dsa);
  free(g_opaque);
  remove_tree(g_dir);
  if (g_failures > 0) {
    fprintf(stderr, "c_api_test: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("c_api_test: all checks passed\n");
  return 0;
}
