/* The connector's calls through the C ABI (issue 24): the prefix hash
 * against the vectors the Rust and Python bindings check too, so engines in
 * different languages get the same keys for the same tokens; the
 * consecutive-hit count over prefixes and over a chain's pages; the batched
 * lookup + lease and its release; row ranges of a layer. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auxstore/c.h"
#include "c_check.h"

static void to_hex(const uint8_t p[16], char out[33]) {
  for (int i = 0; i < 16; ++i) snprintf(out + 2 * i, 3, "%02x", p[i]);
}

/* ---- one key function: the vectors file ------------------------------------ */

/* Every vector of PREFIX_VECTORS (block_size salt n_tokens token... n_prefixes
 * hex...) gives exactly its prefixes. Returns how many vectors were read. */
static int test_prefix_hash_vectors(void) {
  FILE* f = fopen(PREFIX_VECTORS, "r");
  CHECK(f != NULL);
  if (f == NULL) return 0;
  int vectors = 0;
  char line[8192];
  while (fgets(line, sizeof line, f) != NULL) {
    if (line[0] == '#' || line[0] == '\n') continue;
    char* save = NULL;
    const char* field = strtok_r(line, " \t\n", &save);
#define NEXT() (field = strtok_r(NULL, " \t\n", &save), field ? field : "")
    const uint32_t block_size = (uint32_t)strtoul(field, NULL, 10);
    const uint64_t salt = strtoull(NEXT(), NULL, 10);
    const size_t n_tokens = (size_t)strtoull(NEXT(), NULL, 10);
    uint32_t* tokens = malloc((n_tokens + 1) * sizeof *tokens);
    for (size_t i = 0; i < n_tokens; ++i) tokens[i] = (uint32_t)strtoul(NEXT(), NULL, 10);
    const size_t n_want = (size_t)strtoull(NEXT(), NULL, 10);
    uint8_t(*got)[16] = malloc((n_want + 1) * 16);
    size_t n = 99;
    CHECK_OK(auxstore_prefix_hash(tokens, n_tokens, block_size, salt, got, n_want, &n, &err));
    CHECK(n == n_want);
    for (size_t i = 0; i < n_want && i < n; ++i) {
      const char* want = NEXT();
      char hex[33];
      to_hex(got[i], hex);
      if (strcmp(hex, want) != 0) {
        fprintf(stderr, "vector %d prefix %zu: %s, want %s\n", vectors, i, hex, want);
        ++g_failures;
      }
    }
#undef NEXT
    free(got);
    free(tokens);
    ++vectors;
  }
  fclose(f);
  return vectors;
}

/* ---- a store with a few snapshots -------------------------------------------- */

enum { DSA_DIM = 8, BLOCK = 16 };

static char g_dir[64];
static auxstore_t* g_db = NULL;
static uint64_t g_ns = 0;

/* Prefix i: distinct bytes, never all zero. */
static void prefix_of(uint32_t i, uint8_t out[16]) {
  for (int b = 0; b < 16; ++b) out[b] = (uint8_t)(i * 31 + b * 7 + 1);
}

static void put_opaque(uint32_t i) {
  uint8_t p[16], bytes[100];
  prefix_of(i, p);
  for (size_t b = 0; b < sizeof bytes; ++b) bytes[b] = (uint8_t)(i + b);
  auxstore_layer_t l = {0, AUXSTORE_KIND_OPAQUE, bytes, sizeof bytes};
  CHECK_OK(auxstore_put_snapshot(g_db, g_ns, p, 16, 1, &l, &err));
}

static void open_store(void) {
  const char* tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/auxstore-conn-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  CHECK(mkdtemp(g_dir) != NULL);
  char path[96];
  snprintf(path, sizeof path, "%s/store", g_dir);
  CHECK_OK(auxstore_open(path, NULL, &g_db, &err));
  if (g_db == NULL) return;
  auxstore_geometry_t g = {0, 0, 0, 0, 0.0f, 0.0f, DSA_DIM, 1024};
  CHECK_OK(auxstore_register_namespace(g_db, "connector-model", &g, &g_ns, &err));
}

static void close_store(void) {
  auxstore_close(g_db);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
}

/* ---- exists with early exit ------------------------------------------------------ */

static void test_count_leading_stored(void) {
  for (uint32_t i = 0; i < 5; ++i) put_opaque(i);
  uint8_t ps[6][16];
  for (uint32_t i = 0; i < 6; ++i) prefix_of(i, ps[i]); /* ps[5] is not stored */
  size_t count = 99;
  CHECK_OK(auxstore_count_leading_stored(g_db, g_ns, ps, 5, &count, &err));
  CHECK(count == 5);
  CHECK_OK(auxstore_count_leading_stored(g_db, g_ns, ps, 6, &count, &err));
  CHECK(count == 5);
  uint8_t gap[4][16]; /* stored, stored, missing, stored: 2 */
  memcpy(gap[0], ps[0], 16);
  memcpy(gap[1], ps[1], 16);
  memcpy(gap[2], ps[5], 16);
  memcpy(gap[3], ps[2], 16);
  CHECK_OK(auxstore_count_leading_stored(g_db, g_ns, gap, 4, &count, &err));
  CHECK(count == 2);
  CHECK_OK(auxstore_count_leading_stored(g_db, g_ns, ps + 5, 1, &count, &err));
  CHECK(count == 0); /* a first-key miss */
  CHECK_OK(auxstore_count_leading_stored(g_db, g_ns, NULL, 0, &count, &err));
  CHECK(count == 0);
  CHECK_OK(auxstore_count_leading_stored(g_db, g_ns + 1, ps, 5, &count, &err));
  CHECK(count == 0); /* another namespace has none of them */

  auxstore_stats_t st;
  CHECK_OK(auxstore_stats(g_db, &st, &err));
  CHECK(st.hits == 0 && st.misses == 0); /* exists counts no hit */

  CHECK_ERR(auxstore_count_leading_stored(g_db, g_ns, NULL, 2, &count, &err),
            AUXSTORE_INVALID_ARGUMENT, "prefixes is NULL");
  CHECK_ERR(auxstore_count_leading_stored(g_db, g_ns, ps, 2, NULL, &err), AUXSTORE_INVALID_ARGUMENT,
            "count is NULL");
  CHECK_ERR(auxstore_count_leading_stored(NULL, g_ns, ps, 2, &count, &err),
            AUXSTORE_INVALID_ARGUMENT, "db");
}

/* DSA v1 of `rows` rows: [len][d][k_normed][gate][valid], row r's bytes from r. */
static uint8_t* dsa_blob(uint64_t rows, uint32_t seed, size_t* size) {
  *size = 16 + rows * (4 * DSA_DIM + 1);
  uint8_t* b = malloc(*size);
  for (int i = 0; i < 8; ++i) {
    b[i] = (uint8_t)(rows >> (8 * i));
    b[8 + i] = (uint8_t)((uint64_t)DSA_DIM >> (8 * i));
  }
  for (size_t i = 16; i < *size; ++i) b[i] = (uint8_t)(i * 13 + seed);
  return b;
}

/* A paged put of the first `blocks` blocks of `tokens` (DSA rows, one per token). */
static void put_paged(const uint32_t* tokens, size_t blocks, uint32_t seed) {
  uint8_t chain[8][16];
  size_t n = 0;
  CHECK_OK(auxstore_prefix_hash(tokens, blocks * BLOCK, BLOCK, 0, chain, 8, &n, &err));
  size_t size = 0;
  uint8_t* blob = dsa_blob(blocks * BLOCK, seed, &size);
  auxstore_layer_t l = {0, AUXSTORE_KIND_DSA, blob, size};
  auxstore_put_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.block_chain = (const uint8_t(*)[16])chain;
  o.n_blocks = n;
  o.block_size = BLOCK;
  CHECK_OK(auxstore_put_snapshot_ex(g_db, g_ns, chain[n - 1], blocks * BLOCK, 1, &l, &o, &err));
  free(blob);
}

static void test_count_leading_pages(void) {
  uint32_t tokens[4 * BLOCK], other[4 * BLOCK];
  for (uint32_t i = 0; i < 4 * BLOCK; ++i) tokens[i] = other[i] = 1000 + i;
  other[2 * BLOCK] = 7; /* the same first 2 blocks, then another third */
  uint8_t chain[4][16], other_chain[4][16];
  size_t n = 0, pages = 99;
  uint32_t page_tokens = 0;
  CHECK_OK(auxstore_prefix_hash(tokens, 4 * BLOCK, BLOCK, 0, chain, 4, &n, &err));
  CHECK_OK(auxstore_prefix_hash(other, 4 * BLOCK, BLOCK, 0, other_chain, 4, &n, &err));

  CHECK_OK(auxstore_count_leading_pages(g_db, g_ns, chain, 4, BLOCK, &pages, &page_tokens, &err));
  CHECK(pages == 0 && page_tokens == BLOCK);
  put_paged(tokens, 3, 1); /* pages 0..2 of the chain */
  CHECK_OK(auxstore_count_leading_pages(g_db, g_ns, chain, 4, BLOCK, &pages, &page_tokens, &err));
  CHECK(pages == 3 && page_tokens == BLOCK);
  CHECK_OK(auxstore_count_leading_pages(g_db, g_ns, chain, 2, BLOCK, &pages, NULL, &err));
  CHECK(pages == 2); /* only as many as the chain asks */
  CHECK_OK(auxstore_count_leading_pages(g_db, g_ns, other_chain, 4, BLOCK, &pages, NULL, &err));
  CHECK(pages == 2); /* the other chain shares the first two pages only */
  /* The pages are stored, but no snapshot of the 2-block prefix is: */
  size_t count = 99;
  CHECK_OK(auxstore_count_leading_stored(g_db, g_ns, &chain[1], 1, &count, &err));
  CHECK(count == 0);
  put_paged(tokens, 4, 2); /* shares pages 0..2, adds page 3 */
  CHECK_OK(auxstore_count_leading_pages(g_db, g_ns, chain, 4, BLOCK, &pages, NULL, &err));
  CHECK(pages == 4);

  CHECK_ERR(auxstore_count_leading_pages(g_db, g_ns, chain, 4, 0, &pages, NULL, &err),
            AUXSTORE_INVALID_ARGUMENT, "block_size is 0");
  CHECK_ERR(auxstore_count_leading_pages(g_db, g_ns + 1, chain, 4, BLOCK, &pages, NULL, &err),
            AUXSTORE_NOT_FOUND, "not registered");
  CHECK_ERR(auxstore_count_leading_pages(g_db, g_ns, chain, 4, BLOCK, NULL, NULL, &err),
            AUXSTORE_INVALID_ARGUMENT, "pages is NULL");
}

/* ---- batched lookup + lease ---------------------------------------------------- */

static void test_lookup_leased(void) {
  uint8_t ps[4][16];
  prefix_of(0, ps[0]);
  prefix_of(9, ps[1]); /* not stored */
  prefix_of(2, ps[2]);
  prefix_of(3, ps[3]);
  uint64_t leases[4] = {7, 7, 7, 7};
  size_t leading = 99, released = 99;
  auxstore_stats_t st;
  CHECK_OK(auxstore_stats(g_db, &st, &err));
  const uint64_t hits = st.hits, misses = st.misses;
  CHECK_OK(auxstore_lookup_leased(g_db, g_ns, ps, 4, 60000, leases, &leading, &err));
  CHECK(leading == 1);
  CHECK(leases[0] != 0 && leases[1] == 0 && leases[2] != 0 && leases[3] != 0);
  CHECK(leases[0] != leases[2] && leases[2] != leases[3]);
  CHECK_OK(auxstore_stats(g_db, &st, &err));
  CHECK(st.leases == 3 && st.hits == hits + 3 && st.misses == misses + 1);
  CHECK_OK(auxstore_lease_release_many(g_db, leases, 4, &released, &err));
  CHECK(released == 3);
  CHECK_OK(auxstore_stats(g_db, &st, &err));
  CHECK(st.leases == 0);
  CHECK_OK(auxstore_lease_release_many(g_db, leases, 4, &released, &err));
  CHECK(released == 0); /* already gone: skipped, not an error */

  /* An erased snapshot's lease is gone with it (an erase always wins). */
  CHECK_OK(auxstore_lookup_leased(g_db, g_ns, ps + 2, 2, 60000, leases, NULL, &err));
  CHECK_OK(auxstore_erase(g_db, g_ns, ps[2], &err));
  CHECK_OK(auxstore_lease_release_many(g_db, leases, 2, &released, &err));
  CHECK(released == 1);

  CHECK_ERR(auxstore_lookup_leased(g_db, g_ns, ps, 4, 0, leases, NULL, &err),
            AUXSTORE_INVALID_ARGUMENT, "a lease of 0 ms");
  CHECK_ERR(auxstore_lookup_leased(g_db, g_ns, ps, 4, 1000, NULL, NULL, &err),
            AUXSTORE_INVALID_ARGUMENT, "leases is NULL");
  CHECK_OK(auxstore_stats(g_db, &st, &err));
  CHECK(st.leases == 0); /* a refused call leased nothing */
}

/* ---- row ranges ------------------------------------------------------------------ */

/* Rows [first, last) of every array of a DSA blob of `rows` rows: k_normed
 * and gate (2 * DSA_DIM bytes a row each), then valid (1 byte a row). */
static size_t dsa_rows(const uint8_t* blob, uint64_t rows, uint64_t first, uint64_t last,
                       uint8_t* out) {
  const size_t widths[3] = {2 * DSA_DIM, 2 * DSA_DIM, 1};
  size_t at = 0, base = 16;
  for (int a = 0; a < 3; ++a) {
    memcpy(out + at, blob + base + first * widths[a], (last - first) * widths[a]);
    at += (last - first) * widths[a];
    base += rows * widths[a];
  }
  return at;
}

/* One range of one snapshot's DSA layer 0 against the blob it was put from. */
static void check_rows(const uint8_t prefix[16], const uint8_t* blob, uint64_t rows, uint64_t first,
                       uint64_t last) {
  uint8_t* want = malloc(rows * (4 * DSA_DIM + 1) + 1);
  uint8_t* got = malloc(rows * (4 * DSA_DIM + 1) + 1);
  const size_t n = dsa_rows(blob, rows, first, last, want);
  size_t size = 99;
  uint64_t total = 0;
  CHECK_OK(
      auxstore_read_layer_rows(g_db, g_ns, prefix, 0, first, last, got, n, &size, &total, &err));
  CHECK(size == n && total == rows);
  if (size == n && memcmp(got, want, n) != 0) {
    fprintf(stderr, "rows [%llu, %llu): bytes differ\n", (unsigned long long)first,
            (unsigned long long)last);
    ++g_failures;
  }
  free(want);
  free(got);
}

static void test_read_layer_rows(void) {
  /* A whole (unpaged) layer and a paged one (pages of BLOCK rows, several
   * chunks): ranges inside a page, across pages, to the end, empty. */
  size_t size = 0;
  uint8_t* blob = dsa_blob(48, 9, &size);
  uint8_t whole[16];
  prefix_of(77, whole);
  auxstore_layer_t l = {0, AUXSTORE_KIND_DSA, blob, size};
  CHECK_OK(auxstore_put_snapshot(g_db, g_ns, whole, 48, 1, &l, &err));
  uint32_t tokens[3 * BLOCK];
  for (uint32_t i = 0; i < 3 * BLOCK; ++i) tokens[i] = 5000 + i;
  put_paged(tokens, 3, 9); /* the same blob, in pages */
  uint8_t chain[3][16];
  size_t n = 0;
  CHECK_OK(auxstore_prefix_hash(tokens, 3 * BLOCK, BLOCK, 0, chain, 3, &n, &err));
  const uint64_t ranges[][2] = {{0, 48}, {16, 48}, {5, 37}, {3, 9}, {47, 48}, {20, 20}};
  for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; ++r) {
    check_rows(whole, blob, 48, ranges[r][0], ranges[r][1]);
    check_rows(chain[2], blob, 48, ranges[r][0], ranges[r][1]);
  }
  uint8_t small[8];
  CHECK_ERR(
      auxstore_read_layer_rows(g_db, g_ns, whole, 0, 0, 1, small, sizeof small, NULL, NULL, &err),
      AUXSTORE_OUT_OF_RANGE, "the destination holds 8");
  CHECK_ERR(auxstore_read_layer_rows(g_db, g_ns, whole, 0, 10, 49, NULL, 0, NULL, NULL, &err),
            AUXSTORE_OUT_OF_RANGE, "which has 48 rows");
  CHECK_ERR(auxstore_read_layer_rows(g_db, g_ns, whole, 0, 10, 9, NULL, 0, NULL, NULL, &err),
            AUXSTORE_OUT_OF_RANGE, "rows [10, 9)");
  CHECK_ERR(auxstore_read_layer_rows(g_db, g_ns, whole, 3, 0, 1, small, 8, NULL, NULL, &err),
            AUXSTORE_NOT_FOUND, "no layer 3");
  uint8_t op[16];
  prefix_of(1, op); /* an opaque layer (test_count_leading_stored put it) */
  CHECK_ERR(auxstore_read_layer_rows(g_db, g_ns, op, 0, 0, 1, small, 8, NULL, NULL, &err),
            AUXSTORE_INVALID_ARGUMENT, "opaque");
  free(blob);
}

int main(void) {
  CHECK(test_prefix_hash_vectors() >= 4);
  open_store();
  if (g_db != NULL) {
    test_count_leading_stored();
    test_count_leading_pages();
    test_lookup_leased();
    test_read_layer_rows();
    close_store();
  }
  if (g_failures > 0) {
    fprintf(stderr, "connector_test: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("connector_test: all checks passed\n");
  return 0;
}
