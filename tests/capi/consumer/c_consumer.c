/* Uses the installed C ABI: a snapshot written, read back and compared. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auxstore/c.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_consumer <store dir>\n");
    return 2;
  }
  char* err = NULL;
  auxstore_t* db = NULL;
  uint64_t ns = 0;
  auxstore_geometry_t no_qsa_or_dsa = {0, 0, 0, 0, 0.0f, 0.0f, 0, 0};
  uint32_t tokens[32];
  for (int i = 0; i < 32; ++i) tokens[i] = (uint32_t)i;
  uint8_t prefixes[2][16];
  size_t n = 0;
  const char payload[] = "layer bytes from an installed auxstore";
  auxstore_layer_t layer = {0, AUXSTORE_KIND_OPAQUE, payload, sizeof payload};
  void* data = NULL;
  size_t size = 0;
  if (auxstore_open(argv[1], NULL, &db, &err) != AUXSTORE_OK ||
      auxstore_register_namespace(db, "consumer", &no_qsa_or_dsa, &ns, &err) != AUXSTORE_OK ||
      auxstore_prefix_hash(tokens, 32, 16, 1, prefixes, 2, &n, &err) != AUXSTORE_OK ||
      auxstore_put_snapshot(db, ns, prefixes[1], 32, 1, &layer, &err) != AUXSTORE_OK ||
      auxstore_get_layer(db, ns, prefixes[1], 0, &data, &size, &err) != AUXSTORE_OK) {
    fprintf(stderr, "c_consumer: %s\n", err ? err : "(no message)");
    auxstore_free(err);
    auxstore_close(db);
    return 1;
  }
  const int same = size == sizeof payload && memcmp(data, payload, size) == 0;
  auxstore_free(data);
  auxstore_close(db);
  printf("c_consumer: %s\n", same ? "round trip ok" : "MISMATCH");
  return same ? 0 : 1;
}
