/* The connector's calls through the C ABI (issue 24): the prefix hash
 * against the vectors the Rust and Python bindings check too, so engines in
 * different languages get the same keys for the same tokens. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auxstore/c.h"

static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

static char* err = NULL;

/* The call returned `want`, with a message containing `needle`. Frees it. */
static void check_err(int got, int want, const char* needle, int line) {
  if (got != want) {
    fprintf(stderr, "line %d: code %d (%s), want %d (%s); message: %s\n", line, got,
            auxstore_code_name(got), want, auxstore_code_name(want), err ? err : "(none)");
    ++g_failures;
  } else if (want != AUXSTORE_OK && (err == NULL || strstr(err, needle) == NULL)) {
    fprintf(stderr, "line %d: message '%s' lacks '%s'\n", line, err ? err : "(none)", needle);
    ++g_failures;
  }
  auxstore_free(err);
  err = NULL;
}
#define CHECK_ERR(call, want, needle) check_err((call), (want), (needle), __LINE__)
#define CHECK_OK(call) CHECK_ERR(call, AUXSTORE_OK, "")

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

int main(void) {
  CHECK(test_prefix_hash_vectors() >= 4);
  if (g_failures > 0) {
    fprintf(stderr, "connector_test: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("connector_test: all checks passed\n");
  return 0;
}
