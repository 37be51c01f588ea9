/* Many snapshots restored into device states with one handle through the C
 * ABI (issue 24), on the host backend: per-snapshot and per-layer completion
 * by index, every byte of every state checked; a snapshot's own error beside
 * healthy ones; one prefix in two namespaces; a lease released with its
 * snapshot's restore; refusals that start nothing. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auxstore/c.h"
#include "c_check.h"

enum { kSnapshots = 6, kLayers = 3, kMissing = 4 };

static char g_dir[48];
static auxstore_t* g_db = NULL;
static auxstore_backend_t* g_backend = NULL;
static auxstore_pipeline_t* g_pipeline = NULL;
static uint64_t g_ns = 0, g_other = 0;

static void prefix_of(uint32_t s, uint8_t out[16]) {
  for (int b = 0; b < 16; ++b) out[b] = (uint8_t)(s * 37 + b * 3 + 1);
}
static size_t layer_size(uint32_t s, uint32_t l) { return 700 + 911 * s + 4099 * l; }
static uint8_t byte_of(uint32_t s, uint32_t l, size_t b) {
  return (uint8_t)(s * 101 + l * 29 + b * 13 + (b >> 9));
}

/* Snapshot s's layers (bytes of snapshot `bytes_of`) under prefix_of(s). */
static void put(uint64_t ns, uint32_t s, uint32_t bytes_of) {
  auxstore_layer_t layers[kLayers];
  uint8_t* bytes[kLayers];
  for (uint32_t l = 0; l < kLayers; ++l) {
    const size_t n = layer_size(bytes_of, l);
    bytes[l] = malloc(n);
    for (size_t b = 0; b < n; ++b) bytes[l][b] = byte_of(bytes_of, l, b);
    layers[l] = (auxstore_layer_t){l, AUXSTORE_KIND_OPAQUE, bytes[l], n};
  }
  uint8_t p[16];
  prefix_of(s, p);
  CHECK_OK(auxstore_put_snapshot(g_db, ns, p, 64, kLayers, layers, &err));
  for (uint32_t l = 0; l < kLayers; ++l) free(bytes[l]);
}

/* Fresh opaque states for every layer of `n` snapshots, big enough for any. */
static void make_targets(auxstore_restore_target_t (*t)[kLayers], size_t n) {
  for (size_t s = 0; s < n; ++s) {
    for (uint32_t l = 0; l < kLayers; ++l) {
      t[s][l].layer = l;
      CHECK_OK(auxstore_opaque_state_create(g_backend, 64 * 1024, &t[s][l].state, &err));
    }
  }
}
static void release_targets(auxstore_restore_target_t (*t)[kLayers], size_t n) {
  for (size_t s = 0; s < n; ++s)
    for (uint32_t l = 0; l < kLayers; ++l) CHECK_OK(auxstore_state_release(t[s][l].state, &err));
}

/* Every layer of the state holds snapshot `bytes_of`'s bytes, exactly. */
static void expect_state(const auxstore_restore_target_t* t, uint32_t bytes_of) {
  for (uint32_t l = 0; l < kLayers; ++l) {
    void* data = NULL;
    size_t size = 0;
    CHECK_OK(auxstore_state_read(t[l].state, &data, &size, &err));
    CHECK(size == layer_size(bytes_of, l));
    size_t bad = 0;
    for (size_t b = 0; data != NULL && b < size; ++b)
      bad += ((uint8_t*)data)[b] != byte_of(bytes_of, l, b);
    if (bad) fprintf(stderr, "snapshot bytes %u layer %u: %zu wrong bytes\n", bytes_of, l, bad);
    CHECK(bad == 0);
    auxstore_free(data);
  }
}

static void test_many_snapshots_one_handle(void) {
  for (uint32_t s = 0; s < kSnapshots; ++s) {
    if (s != kMissing) put(g_ns, s, s);
  }
  auxstore_restore_target_t t[kSnapshots][kLayers];
  make_targets(t, kSnapshots);
  auxstore_restore_snapshot_t snaps[kSnapshots];
  for (uint32_t s = 0; s < kSnapshots; ++s) {
    snaps[s] = (auxstore_restore_snapshot_t){g_ns, {0}, t[s], kLayers, 0};
    prefix_of(s, snaps[s].prefix);
  }
  auxstore_restore_batch_t* b = NULL;
  CHECK_OK(auxstore_restore_batch_start(g_pipeline, snaps, kSnapshots, NULL, &b, &err));
  /* Per layer, then per snapshot, then all. */
  CHECK_OK(auxstore_restore_batch_wait_layer(b, 1, 2, &err));
  CHECK(auxstore_restore_batch_layer_done(b, 1, 2) == 1);
  CHECK_OK(auxstore_restore_batch_wait_snapshot(b, 3, &err));
  CHECK(auxstore_restore_batch_snapshot_done(b, 3) == 1);
  CHECK_ERR(auxstore_restore_batch_wait_snapshot(b, kMissing, &err), AUXSTORE_NOT_FOUND,
            "snapshots[4]");
  CHECK_ERR(auxstore_restore_batch_wait(b, &err), AUXSTORE_NOT_FOUND, "snapshots[4]");
  CHECK(auxstore_restore_batch_poll(b) == 1);
  for (uint32_t s = 0; s < kSnapshots; ++s) {
    if (s != kMissing) expect_state(t[s], s);
  }
  /* get_finished: each index once, ascending, across calls. */
  size_t fin[kSnapshots], nf = 99;
  CHECK_OK(auxstore_restore_batch_finished(b, fin, 4, &nf, &err));
  CHECK(nf == 4 && fin[0] == 0 && fin[3] == 3);
  CHECK_OK(auxstore_restore_batch_finished(b, fin, kSnapshots, &nf, &err));
  CHECK(nf == 2 && fin[0] == 4 && fin[1] == 5);
  CHECK_OK(auxstore_restore_batch_finished(b, fin, kSnapshots, &nf, &err));
  CHECK(nf == 0);
  /* Out of range. */
  CHECK(auxstore_restore_batch_snapshot_done(b, kSnapshots) == -1);
  CHECK_ERR(auxstore_restore_batch_wait_snapshot(b, kSnapshots, &err), AUXSTORE_INVALID_ARGUMENT,
            "the batch has 6 snapshots");
  auxstore_restore_batch_release(b);
  release_targets(t, kSnapshots);
}

static void test_one_prefix_in_two_namespaces_and_a_lease(void) {
  put(g_other, 0, 9); /* prefix_of(0) in g_other: snapshot 9's bytes */
  auxstore_restore_target_t t[2][kLayers];
  make_targets(t, 2);
  uint8_t p[16];
  prefix_of(0, p);
  uint64_t lease = 0;
  CHECK_OK(
      auxstore_lookup_leased(g_db, g_other, (const uint8_t(*)[16])p, 1, 60000, &lease, NULL, &err));
  CHECK(lease != 0);
  auxstore_restore_snapshot_t snaps[2] = {{g_ns, {0}, t[0], kLayers, 0},
                                          {g_other, {0}, t[1], kLayers, lease}};
  memcpy(snaps[0].prefix, p, 16);
  memcpy(snaps[1].prefix, p, 16);
  auxstore_restore_batch_t* b = NULL;
  CHECK_OK(auxstore_restore_batch_start(g_pipeline, snaps, 2, NULL, &b, &err));
  CHECK_OK(auxstore_restore_batch_wait(b, &err));
  expect_state(t[0], 0);
  expect_state(t[1], 9);
  auxstore_restore_batch_release(b);
  /* The lease went with its snapshot's restore. */
  CHECK_ERR(auxstore_lease_release(g_db, lease, &err), AUXSTORE_NOT_FOUND, "");
  release_targets(t, 2);
}

static void test_refusals_start_nothing(void) {
  auxstore_restore_target_t t[2][kLayers];
  make_targets(t, 2);
  auxstore_restore_snapshot_t snaps[2] = {{g_ns, {0}, t[0], kLayers, 0},
                                          {g_ns, {0}, t[1], kLayers, 0}};
  prefix_of(0, snaps[0].prefix);
  prefix_of(1, snaps[1].prefix);
  auxstore_restore_batch_t* b = NULL;
  /* A state in two snapshots. */
  auxstore_state_t* second = t[1][2].state;
  t[1][2].state = t[0][0].state;
  CHECK_ERR(auxstore_restore_batch_start(g_pipeline, snaps, 2, NULL, &b, &err),
            AUXSTORE_INVALID_ARGUMENT, "snapshots[1].targets[2].state is snapshots[0].targets[0]");
  t[1][2].state = second;
  snaps[1].n_targets = 0;
  CHECK_ERR(auxstore_restore_batch_start(g_pipeline, snaps, 2, NULL, &b, &err),
            AUXSTORE_INVALID_ARGUMENT, "snapshots[1]: no restore targets");
  snaps[1].n_targets = kLayers;
  auxstore_restore_options_t o;
  auxstore_restore_options_init(&o);
  o.lease = 5;
  CHECK_ERR(auxstore_restore_batch_start(g_pipeline, snaps, 2, &o, &b, &err),
            AUXSTORE_INVALID_ARGUMENT, "per restore");
  CHECK_ERR(auxstore_restore_batch_start(NULL, snaps, 2, NULL, &b, &err), AUXSTORE_INVALID_ARGUMENT,
            "pipeline");
  CHECK_ERR(auxstore_restore_batch_start(g_pipeline, NULL, 2, NULL, &b, &err),
            AUXSTORE_INVALID_ARGUMENT, "snapshots");
  /* Nothing started: the targets are fresh, and restore now. */
  CHECK_OK(auxstore_restore_batch_start(g_pipeline, snaps, 2, NULL, &b, &err));
  CHECK_OK(auxstore_restore_batch_wait(b, &err));
  expect_state(t[0], 0);
  expect_state(t[1], 1);
  auxstore_restore_batch_release(b);
  /* States already restored into: each restore refuses them ("not fresh"). */
  CHECK_OK(auxstore_restore_batch_start(g_pipeline, snaps, 2, NULL, &b, &err));
  CHECK_ERR(auxstore_restore_batch_wait(b, &err), AUXSTORE_INVALID_ARGUMENT, "not fresh");
  auxstore_restore_batch_release(b);
  release_targets(t, 2);
}

int main(void) {
  const char* tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/auxstore-batch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  CHECK(mkdtemp(g_dir) != NULL);
  char path[96];
  snprintf(path, sizeof path, "%s/store", g_dir);
  CHECK_OK(auxstore_open(path, NULL, &g_db, &err));
  if (g_db != NULL) {
    auxstore_geometry_t g = {0, 0, 0, 0, 0.0f, 0.0f, 0, 0};
    CHECK_OK(auxstore_register_namespace(g_db, "batch-model", &g, &g_ns, &err));
    CHECK_OK(auxstore_register_namespace(g_db, "batch-other-model", &g, &g_other, &err));
    CHECK_OK(auxstore_backend_create(AUXSTORE_BACKEND_HOST, &g_backend, &err));
    CHECK_OK(auxstore_pipeline_create(g_db, g_backend, &g_pipeline, &err));
    if (g_pipeline != NULL) {
      test_many_snapshots_one_handle();
      test_one_prefix_in_two_namespaces_and_a_lease();
      test_refusals_start_nothing();
    }
    auxstore_pipeline_destroy(g_pipeline);
    auxstore_backend_destroy(g_backend);
    auxstore_close(g_db);
  }
  char cmd[120];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  if (g_failures > 0) {
    fprintf(stderr, "restore_batch_test: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("restore_batch_test: all checks passed\n");
  return 0;
}
