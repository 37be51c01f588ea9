/* Handle misuse through the C ABI (issue 23), each case in its own child
 * process that must exit cleanly with the documented codes: double close,
 * destroy and release; use after close; a pipeline or state outliving its
 * store or backend; handles of the wrong type and pointers auxstore never
 * handed out. Every store a case touched must then pass `auxstore verify`. */
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#include "child_case.h"

static char g_root[256];

typedef struct {
  auxstore_t* db;
  uint64_t ns;
  auxstore_backend_t* be;
} env_t;

static auxstore_t* open_store(const char* dir) {
  auxstore_t* db = NULL;
  EXPECT(auxstore_open(dir, NULL, &db, &g_err), AUXSTORE_OK, "");
  return db;
}

static env_t open_env(const char* dir) {
  env_t e = {open_store(dir), 0, NULL};
  auxstore_geometry_t g;
  memset(&g, 0, sizeof g);
  EXPECT(auxstore_register_namespace(e.db, "misuse", &g, &e.ns, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_backend_create(AUXSTORE_BACKEND_HOST, &e.be, &g_err), AUXSTORE_OK, "");
  return e;
}

static void prefix_of(uint8_t p[16], int i) {
  memset(p, 0, 16);
  p[0] = (uint8_t)i;
  p[15] = 0xa5;
}

/* An opaque state holding `size` bytes of pattern `seed`. */
static auxstore_state_t* opaque_state(auxstore_backend_t* be, size_t size, int seed) {
  auxstore_state_t* s = NULL;
  EXPECT(auxstore_opaque_state_create(be, 4096, &s, &g_err), AUXSTORE_OK, "");
  uint8_t buf[4096];
  for (size_t i = 0; i < size; ++i) buf[i] = (uint8_t)(i * 7 + seed);
  EXPECT(auxstore_state_load(s, buf, size, &g_err), AUXSTORE_OK, "");
  return s;
}

/* Whether snapshot `i` is stored. */
static int stored(auxstore_t* db, uint64_t ns, int i) {
  uint8_t p[1][16], found = 0;
  prefix_of(p[0], i);
  EXPECT(auxstore_get_manifests(db, ns, (const uint8_t(*)[16])p, 1, &found, NULL, &g_err),
         AUXSTORE_OK, "");
  return found;
}

static void put_opaque(env_t* e, int i, size_t size) {
  uint8_t buf[4096], p[16];
  for (size_t k = 0; k < size; ++k) buf[k] = (uint8_t)(k * 7 + i);
  auxstore_layer_t l = {0, AUXSTORE_KIND_OPAQUE, buf, size};
  prefix_of(p, i);
  EXPECT(auxstore_put_snapshot(e->db, e->ns, p, 16, 1, &l, &g_err), AUXSTORE_OK, "");
}

/* ---- cases ----------------------------------------------------------------- */

static void double_close(void* dir) {
  env_t e = open_env(dir);
  auxstore_backend_destroy(e.be);
  const uint64_t before = auxstore_misuse_count();
  auxstore_close(e.db);
  auxstore_close(e.db);
  EXPECT_TRUE(auxstore_misuse_count() == before + 1);
}

static void stats_after_close(void* dir) {
  env_t e = open_env(dir);
  auxstore_backend_destroy(e.be);
  put_opaque(&e, 1, 100);
  auxstore_close(e.db);
  auxstore_stats_t st;
  uint8_t p[16];
  prefix_of(p, 1);
  EXPECT(auxstore_stats(e.db, &st, &g_err), AUXSTORE_INVALID_ARGUMENT, "not a live auxstore_t");
  EXPECT(auxstore_erase(e.db, e.ns, p, &g_err), AUXSTORE_INVALID_ARGUMENT, "db is not a live");
  EXPECT(auxstore_flush(e.db, &g_err), AUXSTORE_INVALID_ARGUMENT, "not a live");
  /* The store really closed: it opens again. */
  auxstore_t* again = open_store(dir);
  EXPECT(auxstore_stats(again, &st, &g_err), AUXSTORE_OK, "");
  EXPECT_TRUE(stored(again, e.ns, 1));
  auxstore_close(again);
}

static void double_backend_destroy(void* dir) {
  env_t e = open_env(dir);
  const uint64_t before = auxstore_misuse_count();
  auxstore_backend_destroy(e.be);
  auxstore_backend_destroy(e.be);
  EXPECT_TRUE(auxstore_misuse_count() == before + 1);
  uint64_t ptr = 0;
  EXPECT(auxstore_device_alloc(e.be, 64, &ptr, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "backend is not a live auxstore_backend_t");
  EXPECT_TRUE(auxstore_backend_kind(e.be) == -1);
  EXPECT_TRUE(strcmp(auxstore_backend_name(e.be), "") == 0);
  auxstore_close(e.db);
}

static void double_state_release(void* dir) {
  env_t e = open_env(dir);
  auxstore_state_t* s = opaque_state(e.be, 100, 1);
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "state is not a live auxstore_state_t");
  uint64_t count = 0;
  EXPECT(auxstore_state_counters(s, &count, NULL, &g_err), AUXSTORE_INVALID_ARGUMENT, "not a live");
  EXPECT_TRUE(auxstore_state_kind(s) == 0);
  auxstore_backend_destroy(e.be);
  auxstore_close(e.db);
}

static void double_pipeline_destroy(void* dir) {
  env_t e = open_env(dir);
  auxstore_pipeline_t* p = NULL;
  EXPECT(auxstore_pipeline_create(e.db, e.be, &p, &g_err), AUXSTORE_OK, "");
  const uint64_t before = auxstore_misuse_count();
  auxstore_pipeline_destroy(p);
  auxstore_pipeline_destroy(p);
  EXPECT_TRUE(auxstore_misuse_count() == before + 1);
  EXPECT(auxstore_pipeline_flush(p, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "pipeline is not a live auxstore_pipeline_t");
  EXPECT_TRUE(auxstore_pipeline_stream(p) == 0);
  auxstore_backend_destroy(e.be);
  auxstore_close(e.db);
}

static void double_restore_handle_release(void* dir) {
  env_t e = open_env(dir);
  put_opaque(&e, 1, 100);
  auxstore_pipeline_t* p = NULL;
  EXPECT(auxstore_pipeline_create(e.db, e.be, &p, &g_err), AUXSTORE_OK, "");
  auxstore_state_t* s = NULL;
  EXPECT(auxstore_opaque_state_create(e.be, 4096, &s, &g_err), AUXSTORE_OK, "");
  auxstore_restore_target_t t = {0, s};
  uint8_t pre[16];
  prefix_of(pre, 1);
  auxstore_restore_handle_t* h = NULL;
  EXPECT(auxstore_restore_start(p, e.ns, pre, &t, 1, NULL, &h, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_restore_join(h, &g_err), AUXSTORE_OK, "");
  const uint64_t before = auxstore_misuse_count();
  auxstore_restore_handle_release(h);
  auxstore_restore_handle_release(h);
  auxstore_restore_cancel(h);
  EXPECT_TRUE(auxstore_misuse_count() == before + 2);
  EXPECT_TRUE(auxstore_restore_poll(h) == -1);
  EXPECT_TRUE(auxstore_restore_layer_done(h, 0) == 0);
  EXPECT(auxstore_restore_join(h, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "handle is not a live auxstore_restore_handle_t");
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_destroy(p);
  auxstore_backend_destroy(e.be);
  auxstore_close(e.db);
}

static void double_options_destroy(void* dir) {
  (void)dir;
  auxstore_options_t* o = auxstore_options_create();
  EXPECT_TRUE(o != NULL);
  const uint64_t before = auxstore_misuse_count();
  auxstore_options_destroy(o);
  auxstore_options_destroy(o);
  EXPECT_TRUE(auxstore_misuse_count() == before + 1);
  EXPECT(auxstore_options_set_ttl_seconds(o, 5, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "options is not a live auxstore_options_t");
  auxstore_t* db = NULL;
  EXPECT(auxstore_open("/nonexistent-never", o, &db, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "options is not a live");
}

/* The store closed under a pipeline: the pipeline keeps it open; snapshots
 * and restores go on, and the store closes with the pipeline. */
static void pipeline_outlives_store(void* dir) {
  env_t e = open_env(dir);
  auxstore_pipeline_t* p = NULL;
  EXPECT(auxstore_pipeline_create(e.db, e.be, &p, &g_err), AUXSTORE_OK, "");
  auxstore_close(e.db);
  auxstore_stats_t st;
  EXPECT(auxstore_stats(e.db, &st, &g_err), AUXSTORE_INVALID_ARGUMENT, "not a live");
  auxstore_state_t* s = opaque_state(e.be, 300, 3);
  auxstore_snapshot_source_t src = {0, s};
  uint8_t pre[16];
  prefix_of(pre, 3);
  uint64_t stream = 0;
  EXPECT(auxstore_stream_create(e.be, &stream, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_snapshot(p, e.ns, pre, 16, &src, 1, stream, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_pipeline_flush(p, &g_err), AUXSTORE_OK, "");
  auxstore_state_t* t = NULL;
  EXPECT(auxstore_opaque_state_create(e.be, 4096, &t, &g_err), AUXSTORE_OK, "");
  auxstore_restore_target_t tgt = {0, t};
  EXPECT(auxstore_restore_wait(p, e.ns, pre, &tgt, 1, &g_err), AUXSTORE_OK, "");
  uint64_t count = 0;
  EXPECT(auxstore_state_counters(t, &count, NULL, &g_err), AUXSTORE_OK, "");
  EXPECT_TRUE(count == 300);
  auxstore_pipeline_destroy(p);
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_state_release(t, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_stream_destroy(e.be, stream, &g_err), AUXSTORE_OK, "");
  auxstore_backend_destroy(e.be);
  /* Closed with its pipeline: it opens again, with the snapshot. */
  auxstore_t* again = open_store(dir);
  EXPECT_TRUE(stored(again, e.ns, 3));
  auxstore_close(again);
}

/* The backend destroyed under states and a pipeline: they keep it. */
static void state_outlives_backend(void* dir) {
  env_t e = open_env(dir);
  auxstore_state_t* s = opaque_state(e.be, 200, 4);
  auxstore_pipeline_t* p = NULL;
  EXPECT(auxstore_pipeline_create(e.db, e.be, &p, &g_err), AUXSTORE_OK, "");
  auxstore_backend_destroy(e.be);
  void* data = NULL;
  size_t size = 0;
  EXPECT(auxstore_state_read(s, &data, &size, &g_err), AUXSTORE_OK, "");
  EXPECT_TRUE(size == 200);
  auxstore_free(data);
  auxstore_snapshot_source_t src = {0, s};
  uint8_t pre[16];
  prefix_of(pre, 4);
  EXPECT(auxstore_snapshot(p, e.ns, pre, 16, &src, 1, auxstore_pipeline_stream(p), &g_err),
         AUXSTORE_OK, "");
  EXPECT(auxstore_pipeline_flush(p, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_destroy(p);
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_OK, "");
  auxstore_close(e.db);
}

/* A handle of another type, and pointers auxstore never handed out. */
static void foreign_handles(void* dir) {
  env_t e = open_env(dir);
  auxstore_state_t* s = opaque_state(e.be, 10, 5);
  auxstore_stats_t st;
  EXPECT(auxstore_stats((auxstore_t*)s, &st, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "db is not a live auxstore_t");
  uint64_t ptr = 0;
  EXPECT(auxstore_device_alloc((auxstore_backend_t*)e.db, 64, &ptr, &g_err),
         AUXSTORE_INVALID_ARGUMENT, "backend is not a live");
  void* junk = calloc(1, 4096);
  EXPECT(auxstore_flush((auxstore_t*)junk, &g_err), AUXSTORE_INVALID_ARGUMENT, "not a live");
  EXPECT(auxstore_state_release((auxstore_state_t*)junk, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "not a live");
  const uint64_t before = auxstore_misuse_count();
  auxstore_close((auxstore_t*)junk);
  auxstore_pipeline_destroy((auxstore_pipeline_t*)junk);
  auxstore_backend_destroy((auxstore_backend_t*)s);
  EXPECT_TRUE(auxstore_misuse_count() == before + 3);
  free(junk);
  /* Still all live and working. */
  EXPECT(auxstore_stats(e.db, &st, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_OK, "");
  auxstore_backend_destroy(e.be);
  auxstore_close(e.db);
}

/* A restore target is refused while another restore fills it, and the same
 * state twice in one restore is refused. */
static void target_twice(void* dir) {
  env_t e = open_env(dir);
  put_opaque(&e, 6, 100);
  auxstore_pipeline_t* p = NULL;
  EXPECT(auxstore_pipeline_create(e.db, e.be, &p, &g_err), AUXSTORE_OK, "");
  auxstore_state_t* s = NULL;
  EXPECT(auxstore_opaque_state_create(e.be, 4096, &s, &g_err), AUXSTORE_OK, "");
  auxstore_restore_target_t t[2] = {{0, s}, {1, s}};
  uint8_t pre[16];
  prefix_of(pre, 6);
  EXPECT(auxstore_restore_wait(p, e.ns, pre, t, 2, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "each layer needs its own state");
  EXPECT(auxstore_restore_wait(p, e.ns, pre, t, 1, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_destroy(p);
  auxstore_backend_destroy(e.be);
  auxstore_close(e.db);
}

/* A state a restore still fills is not released or used (AUXSTORE_BUSY,
 * nothing changes); once the restore is done it is. The restore is held in
 * its on_layer callback until the main thread has tried. */
static pthread_mutex_t g_hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hold_cv = PTHREAD_COND_INITIALIZER;
static int g_held = 0, g_let_go = 0;

static void hold_layer(void* arg, uint32_t layer) {
  (void)arg;
  (void)layer;
  pthread_mutex_lock(&g_hold_mu);
  g_held = 1;
  pthread_cond_broadcast(&g_hold_cv);
  while (!g_let_go) pthread_cond_wait(&g_hold_cv, &g_hold_mu);
  pthread_mutex_unlock(&g_hold_mu);
}

static void release_during_restore(void* dir) {
  env_t e = open_env(dir);
  put_opaque(&e, 14, 300);
  auxstore_pipeline_t* p = NULL;
  EXPECT(auxstore_pipeline_create(e.db, e.be, &p, &g_err), AUXSTORE_OK, "");
  auxstore_state_t* s = NULL;
  EXPECT(auxstore_opaque_state_create(e.be, 4096, &s, &g_err), AUXSTORE_OK, "");
  auxstore_restore_target_t t = {0, s};
  uint8_t pre[16];
  prefix_of(pre, 14);
  auxstore_restore_options_t o;
  auxstore_restore_options_init(&o);
  o.on_layer = hold_layer;
  auxstore_restore_handle_t* h = NULL;
  EXPECT(auxstore_restore_start(p, e.ns, pre, &t, 1, &o, &h, &g_err), AUXSTORE_OK, "");
  pthread_mutex_lock(&g_hold_mu);
  while (!g_held) pthread_cond_wait(&g_hold_cv, &g_hold_mu);
  pthread_mutex_unlock(&g_hold_mu);
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_BUSY, "restore still running");
  void* data = NULL;
  size_t size = 0;
  EXPECT(auxstore_state_read(s, &data, &size, &g_err), AUXSTORE_BUSY, "restore still running");
  EXPECT(auxstore_restore_wait(p, e.ns, pre, &t, 1, &g_err), AUXSTORE_BUSY,
         "restore still running");
  pthread_mutex_lock(&g_hold_mu);
  g_let_go = 1;
  pthread_cond_broadcast(&g_hold_cv);
  pthread_mutex_unlock(&g_hold_mu);
  EXPECT(auxstore_restore_join(h, &g_err), AUXSTORE_OK, "");
  uint64_t count = 0;
  EXPECT(auxstore_state_counters(s, &count, NULL, &g_err), AUXSTORE_OK, "");
  EXPECT_TRUE(count == 300);
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_OK, "");
  auxstore_restore_handle_release(h);
  auxstore_pipeline_destroy(p);
  auxstore_backend_destroy(e.be);
  auxstore_close(e.db);
}

/* ---- errors and counters as documented ------------------------------------- */

static void put_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (uint8_t)(v >> (8 * i));
}

enum { QSA_HD = 64, QSA_MAX = 256 };

static auxstore_geometry_t qsa_geometry(uint32_t hd) {
  auxstore_geometry_t g;
  memset(&g, 0, sizeof g);
  g.qsa_hd = hd;
  g.qsa_max_tokens = QSA_MAX;
  g.qsa_ratio = 8;
  g.qsa_rot = 32;
  g.qsa_theta = 10000.0f;
  g.qsa_eps = 1e-6f;
  return g;
}

static auxstore_state_t* qsa_state(auxstore_backend_t* be, uint32_t hd) {
  uint16_t w[QSA_HD * 2];
  memset(w, 0, sizeof w);
  auxstore_geometry_t g = qsa_geometry(hd);
  auxstore_state_t* s = NULL;
  EXPECT(auxstore_qsa_state_create(be, &g, w, w, &s, &g_err), AUXSTORE_OK, "");
  return s;
}

/* A QSA snapshot (40 tokens, header + raw keys) at prefix `i` of namespace
 * hd QSA_HD; its size. */
static size_t put_qsa(auxstore_t* db, uint64_t ns, int i) {
  static uint8_t blob[16 + 40 * QSA_HD * 2];
  put_le64(blob, 40);
  put_le64(blob + 8, 0);
  for (size_t k = 16; k < sizeof blob; k += 2) {
    blob[k] = (uint8_t)k;
    blob[k + 1] = 0x3f;
  }
  auxstore_layer_t l = {0, AUXSTORE_KIND_QSA, blob, sizeof blob};
  uint8_t p[16];
  prefix_of(p, i);
  EXPECT(auxstore_put_snapshot(db, ns, p, 40, 1, &l, &g_err), AUXSTORE_OK, "");
  return sizeof blob;
}

/* A QSA restore into a target of another head dim is InvalidArgument, as
 * the DSA one is (it was Corruption), and quarantines nothing. */
static void qsa_other_head_dim(void* dir) {
  auxstore_t* db = open_store(dir);
  auxstore_geometry_t g = qsa_geometry(QSA_HD);
  uint64_t ns = 0;
  EXPECT(auxstore_register_namespace(db, "qsa", &g, &ns, &g_err), AUXSTORE_OK, "");
  put_qsa(db, ns, 7);
  auxstore_backend_t* be = NULL;
  EXPECT(auxstore_backend_create(AUXSTORE_BACKEND_HOST, &be, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_t* p = NULL;
  EXPECT(auxstore_pipeline_create(db, be, &p, &g_err), AUXSTORE_OK, "");
  auxstore_state_t* narrow = qsa_state(be, QSA_HD / 2);
  auxstore_restore_target_t t = {0, narrow};
  uint8_t pre[16];
  prefix_of(pre, 7);
  EXPECT(auxstore_restore_wait(p, ns, pre, &t, 1, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "head dim 64, the target's geometry has 32");
  /* Not quarantined: a target of the right geometry restores it. */
  auxstore_state_t* right = qsa_state(be, QSA_HD);
  t.state = right;
  EXPECT(auxstore_restore_wait(p, ns, pre, &t, 1, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_state_release(narrow, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_state_release(right, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_destroy(p);
  auxstore_backend_destroy(be);
  auxstore_close(db);
}

/* Releasing an expired lease, or the lease of an erased snapshot, is
 * NotFound as c.h says (both were OK). */
static void lease_release_not_found(void* dir) {
  env_t e = open_env(dir);
  put_opaque(&e, 8, 100);
  put_opaque(&e, 9, 100);
  uint8_t p8[16], p9[16];
  prefix_of(p8, 8);
  prefix_of(p9, 9);
  uint64_t expiring = 0, erased = 0, live = 0;
  EXPECT(auxstore_lease_acquire(e.db, e.ns, p8, 1, &expiring, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_lease_acquire(e.db, e.ns, p9, 600000, &erased, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_lease_acquire(e.db, e.ns, p8, 600000, &live, &g_err), AUXSTORE_OK, "");
  usleep(20 * 1000); /* past the 1 ms lease: an outcome, not a timing bound */
  EXPECT(auxstore_lease_release(e.db, expiring, &g_err), AUXSTORE_NOT_FOUND, "has expired");
  EXPECT(auxstore_erase(e.db, e.ns, p9, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_lease_release(e.db, erased, &g_err), AUXSTORE_NOT_FOUND, "was erased");
  EXPECT(auxstore_lease_release(e.db, live, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_lease_release(e.db, live, &g_err), AUXSTORE_NOT_FOUND, "released");
  auxstore_backend_destroy(e.be);
  auxstore_close(e.db);
}

/* stats.bytes_read (auxstore_read_bytes_total) and the pipeline's
 * bytes_restored (auxstore_restored_bytes_total) count the same bytes: the
 * layers' whole blobs, headers included (the headers were left out of
 * bytes_read). */
static void read_bytes_include_headers(void* dir) {
  auxstore_t* db = open_store(dir);
  auxstore_geometry_t g = qsa_geometry(QSA_HD);
  uint64_t ns = 0;
  EXPECT(auxstore_register_namespace(db, "qsa", &g, &ns, &g_err), AUXSTORE_OK, "");
  const size_t blob = put_qsa(db, ns, 10);
  auxstore_backend_t* be = NULL;
  EXPECT(auxstore_backend_create(AUXSTORE_BACKEND_HOST, &be, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_t* p = NULL;
  EXPECT(auxstore_pipeline_create(db, be, &p, &g_err), AUXSTORE_OK, "");
  auxstore_state_t* s = qsa_state(be, QSA_HD);
  auxstore_restore_target_t t = {0, s};
  uint8_t pre[16];
  prefix_of(pre, 10);
  auxstore_stats_t before, after;
  EXPECT(auxstore_stats(db, &before, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_restore_wait(p, ns, pre, &t, 1, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_stats(db, &after, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_stats_t ps;
  EXPECT(auxstore_pipeline_stats(p, &ps, &g_err), AUXSTORE_OK, "");
  EXPECT_TRUE(ps.bytes_restored == blob);
  EXPECT_TRUE(after.bytes_read - before.bytes_read == blob);
  /* A whole-layer read counts the same. */
  void* data = NULL;
  size_t size = 0;
  EXPECT(auxstore_get_layer(db, ns, pre, 0, &data, &size, &g_err), AUXSTORE_OK, "");
  auxstore_free(data);
  EXPECT(auxstore_stats(db, &before, &g_err), AUXSTORE_OK, "");
  EXPECT_TRUE(size == blob && before.bytes_read - after.bytes_read == blob);
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_destroy(p);
  auxstore_backend_destroy(be);
  auxstore_close(db);
}

/* ---- write-behind snapshots validated at enqueue ---------------------------- */

/* A namespace declaring opaque layer 0 as 100 bytes; a pipeline over it. */
static uint64_t declared_ns(auxstore_t* db) {
  auxstore_opaque_layer_desc_t d;
  memset(&d, 0, sizeof d);
  d.layer = 0;
  d.dtype = AUXSTORE_DTYPE_U8;
  d.ndim = 1;
  d.shape[0] = 100;
  auxstore_namespace_t n;
  memset(&n, 0, sizeof n);
  n.struct_size = sizeof n;
  n.model_id = "declared";
  n.n_opaque_layers = 1;
  n.opaque_layers = &d;
  uint64_t ns = 0;
  EXPECT(auxstore_register_namespace_ex(db, &n, &ns, &g_err), AUXSTORE_OK, "");
  return ns;
}

/* An unregistered namespace, a wrong-size declared opaque layer and stream
 * 0 are refused by the snapshot call itself (they were accepted and only
 * the flush failed); nothing is enqueued. */
static void snapshot_refused_at_enqueue(void* dir) {
  auxstore_t* db = open_store(dir);
  const uint64_t ns = declared_ns(db);
  auxstore_backend_t* be = NULL;
  EXPECT(auxstore_backend_create(AUXSTORE_BACKEND_HOST, &be, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_t* p = NULL;
  EXPECT(auxstore_pipeline_create(db, be, &p, &g_err), AUXSTORE_OK, "");
  auxstore_state_t* wrong = opaque_state(be, 64, 1);
  auxstore_state_t* right = opaque_state(be, 100, 2);
  uint64_t stream = 0;
  EXPECT(auxstore_stream_create(be, &stream, &g_err), AUXSTORE_OK, "");
  uint8_t pre[16];
  prefix_of(pre, 11);
  auxstore_snapshot_source_t src = {0, right};
  EXPECT(auxstore_snapshot(p, ns ^ 0x5555, pre, 16, &src, 1, stream, &g_err), AUXSTORE_NOT_FOUND,
         "is not registered");
  src.state = wrong;
  EXPECT(auxstore_snapshot(p, ns, pre, 16, &src, 1, stream, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "snapshot layer 0");
  src.state = right;
  EXPECT(auxstore_snapshot(p, ns, pre, 16, &src, 1, 0, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "legacy default stream");
  auxstore_pipeline_stats_t ps;
  EXPECT(auxstore_pipeline_stats(p, &ps, &g_err), AUXSTORE_OK, "");
  EXPECT_TRUE(ps.snapshots_accepted == 0 && ps.snapshots_failed == 0);
  /* The right one goes through, and the flush has nothing to report. */
  EXPECT(auxstore_snapshot(p, ns, pre, 16, &src, 1, stream, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_pipeline_flush(p, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_state_release(wrong, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_state_release(right, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_stream_destroy(be, stream, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_destroy(p);
  auxstore_backend_destroy(be);
  auxstore_close(db);
}

typedef struct {
  int calls;
  int code;
  uint8_t prefix[16];
  char message[512];
} done_box_t;

static void on_snapshot_done(void* arg, const uint8_t* prefix, int code, const char* message) {
  done_box_t* b = arg;
  ++b->calls;
  b->code = code;
  memcpy(b->prefix, prefix, 16);
  snprintf(b->message, sizeof b->message, "%s", message != NULL ? message : "");
}

/* The per-snapshot completion names the prefix and says written or failed;
 * the flush's error names the prefix too. A read-only store makes the
 * write itself fail after a valid enqueue. */
static void snapshot_completion(void* dir) {
  auxstore_t* db = open_store(dir);
  const uint64_t ns = declared_ns(db);
  auxstore_backend_t* be = NULL;
  EXPECT(auxstore_backend_create(AUXSTORE_BACKEND_HOST, &be, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_t* p = NULL;
  EXPECT(auxstore_pipeline_create(db, be, &p, &g_err), AUXSTORE_OK, "");
  auxstore_state_t* s = opaque_state(be, 100, 3);
  auxstore_snapshot_source_t src = {0, s};
  uint8_t pre[16];
  prefix_of(pre, 12);
  done_box_t box;
  memset(&box, 0, sizeof box);
  EXPECT(auxstore_snapshot_with_done(p, ns, pre, 16, &src, 1, auxstore_pipeline_stream(p), NULL,
                                     NULL, &box, &g_err),
         AUXSTORE_INVALID_ARGUMENT, "done is NULL");
  EXPECT(auxstore_snapshot_with_done(p, ns, pre, 16, &src, 1, auxstore_pipeline_stream(p), NULL,
                                     on_snapshot_done, &box, &g_err),
         AUXSTORE_OK, "");
  EXPECT(auxstore_pipeline_flush(p, &g_err), AUXSTORE_OK, "");
  EXPECT_TRUE(box.calls == 1 && box.code == AUXSTORE_OK && memcmp(box.prefix, pre, 16) == 0);
  auxstore_pipeline_destroy(p);
  auxstore_close(db);

  auxstore_options_t* o = auxstore_options_create();
  EXPECT(auxstore_options_set_read_only(o, 1, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_open(dir, o, &db, &g_err), AUXSTORE_OK, "");
  auxstore_options_destroy(o);
  EXPECT(auxstore_pipeline_create(db, be, &p, &g_err), AUXSTORE_OK, "");
  prefix_of(pre, 13);
  memset(&box, 0, sizeof box);
  EXPECT(auxstore_snapshot_with_done(p, ns, pre, 16, &src, 1, auxstore_pipeline_stream(p), NULL,
                                     on_snapshot_done, &box, &g_err),
         AUXSTORE_OK, "");
  char hex[33];
  for (int i = 0; i < 16; ++i) snprintf(hex + 2 * i, 3, "%02x", pre[i]);
  int rc = auxstore_pipeline_flush(p, &g_err);
  EXPECT_TRUE(rc != AUXSTORE_OK);
  EXPECT(rc, rc, hex);
  EXPECT_TRUE(box.calls == 1 && box.code == rc && memcmp(box.prefix, pre, 16) == 0);
  EXPECT_TRUE(strstr(box.message, hex) != NULL);
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_OK, "");
  auxstore_pipeline_destroy(p);
  auxstore_backend_destroy(be);
  auxstore_close(db);
}

/* ---- borrowed buffers checked against their allocation ---------------------- */

/* A 4 KiB allocation declared as 8 MiB, and a plain malloc pointer, are
 * refused at borrow time (they were accepted: the host backend caught the
 * first at copy time, CUDA would not have). */
static void borrow_checks_the_allocation(void* dir) {
  (void)dir;
  auxstore_backend_t* be = NULL;
  EXPECT(auxstore_backend_create(AUXSTORE_BACKEND_HOST, &be, &g_err), AUXSTORE_OK, "");
  uint64_t small = 0;
  EXPECT(auxstore_device_alloc(be, 4096, &small, &g_err), AUXSTORE_OK, "");
  void* host = malloc(8 << 20);
  const uint64_t plain = (uint64_t)(uintptr_t)host;
  auxstore_state_t* s = NULL;
  EXPECT(auxstore_opaque_state_borrow(be, small, 8 << 20, 0, &s, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "exceeds its 4096-byte allocation");
  EXPECT(auxstore_opaque_state_borrow(be, plain, 4096, 0, &s, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "not in any allocation");
  /* Just past the end of the only allocation: in none (the plain pointer
   * above lands there or not, as the allocator places it). */
  EXPECT(auxstore_opaque_state_borrow(be, small + 4096, 16, 0, &s, &g_err),
         AUXSTORE_INVALID_ARGUMENT, "not in any allocation");
  EXPECT(auxstore_opaque_state_borrow(be, small, UINT64_MAX, 0, &s, &g_err),
         AUXSTORE_INVALID_ARGUMENT, "buffer");
  EXPECT_TRUE(s == NULL);
  /* DSA: k_normed declared larger than its allocation. */
  auxstore_geometry_t g;
  memset(&g, 0, sizeof g);
  g.dsa_index_head_dim = 32;
  g.dsa_capacity = 100;
  uint64_t k = 0, gate = 0, valid = 0;
  EXPECT(auxstore_device_alloc(be, 100 * 64, &k, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_device_alloc(be, 100 * 64, &gate, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_device_alloc(be, 100, &valid, &g_err), AUXSTORE_OK, "");
  auxstore_dsa_buffers_t b = {100, k, 100 * 64, gate, 100 * 64, valid, 100};
  b.k_normed = plain;
  EXPECT(auxstore_dsa_state_borrow(be, &g, &b, 0, &s, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "k_normed");
  b.k_normed = k;
  b.gate_bytes = 8 << 20;
  EXPECT(auxstore_dsa_state_borrow(be, &g, &b, 0, &s, &g_err), AUXSTORE_INVALID_ARGUMENT, "gate");
  b.gate_bytes = 100 * 64;
  /* What the allocations really hold is accepted. */
  EXPECT(auxstore_dsa_state_borrow(be, &g, &b, 0, &s, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_opaque_state_borrow(be, small, 4096, 10, &s, &g_err), AUXSTORE_OK, "");
  EXPECT(auxstore_state_release(s, &g_err), AUXSTORE_OK, "");
  free(host);
  EXPECT(auxstore_device_free(be, small, &g_err), AUXSTORE_OK, "");
  auxstore_backend_destroy(be);
}

/* Sizes whose arithmetic would wrap are InvalidArgument (an alloc of
 * 2^64-1 succeeded and a copy into it crashed). */
static void huge_sizes(void* dir) {
  (void)dir;
  auxstore_backend_t* be = NULL;
  EXPECT(auxstore_backend_create(AUXSTORE_BACKEND_HOST, &be, &g_err), AUXSTORE_OK, "");
  uint64_t ptr = 0;
  EXPECT(auxstore_device_alloc(be, SIZE_MAX, &ptr, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "largest block");
  auxstore_state_t* s = NULL;
  EXPECT(auxstore_opaque_state_create(be, UINT64_MAX, &s, &g_err), AUXSTORE_INVALID_ARGUMENT,
         "largest block");
  EXPECT_TRUE(s == NULL);
  auxstore_backend_destroy(be);
}

/* ---- driver ---------------------------------------------------------------- */

typedef struct {
  const char* name;
  void (*fn)(void*);
} case_t;

static const case_t kCases[] = {
    {"double_close", double_close},
    {"stats_after_close", stats_after_close},
    {"double_backend_destroy", double_backend_destroy},
    {"double_state_release", double_state_release},
    {"double_pipeline_destroy", double_pipeline_destroy},
    {"double_restore_handle_release", double_restore_handle_release},
    {"double_options_destroy", double_options_destroy},
    {"pipeline_outlives_store", pipeline_outlives_store},
    {"state_outlives_backend", state_outlives_backend},
    {"foreign_handles", foreign_handles},
    {"target_twice", target_twice},
    {"release_during_restore", release_during_restore},
    {"qsa_other_head_dim", qsa_other_head_dim},
    {"lease_release_not_found", lease_release_not_found},
    {"read_bytes_include_headers", read_bytes_include_headers},
    {"snapshot_refused_at_enqueue", snapshot_refused_at_enqueue},
    {"snapshot_completion", snapshot_completion},
    {"borrow_checks_the_allocation", borrow_checks_the_allocation},
    {"huge_sizes", huge_sizes},
};

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : NULL;
  snprintf(g_root, sizeof g_root, "/tmp/auxstore_misuse_XXXXXX");
  if (mkdtemp(g_root) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  int failures = 0, ran = 0;
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    if (only != NULL && strcmp(only, kCases[i].name) != 0) continue;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", g_root, kCases[i].name);
    ++ran;
    if (run_child(kCases[i].name, kCases[i].fn, dir) != 0) {
      ++failures;
      continue;
    }
    struct stat sb;
    if (stat(dir, &sb) == 0 && verify_store(dir) != 0) ++failures;
    printf("ok %s\n", kCases[i].name);
  }
  remove_tree(g_root);
  printf("%d of %d cases failed\n", failures, ran);
  return failures == 0 && ran > 0 ? 0 : 1;
}
