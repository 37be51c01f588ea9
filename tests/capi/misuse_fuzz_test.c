/* A misuse fuzzer over the C ABI (issue 23): seeded random sequences of
 * create / use / release / close on a few stores, backends, states,
 * pipelines, restore handles and leases, where every slot keeps its last
 * handle after it is closed (so stale handles are used, closed twice, and
 * passed where another type belongs). Each sequence runs in a child process
 * that must exit 0 (a signal, a hang past the alarm, or a status code
 * outside the C ABI's is a failure); then `auxstore verify` must pass on
 * the sequence's store.
 *
 *   capi_misuse_fuzz_test [sequences [first_seed]]   (defaults 120, 1) */
#include <stdint.h>
#include <sys/stat.h>

#include "child_case.h"

enum { kOps = 60, kStores = 2, kBackends = 2, kStates = 4, kPipelines = 2, kHandles = 3 };

static uint64_t g_rng;
static int g_trace; /* AUXSTORE_FUZZ_TRACE set: each op on stderr */
static uint64_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}
static unsigned pick(unsigned n) { return (unsigned)(rnd() % n); }

typedef struct {
  const char* dir;
  uint64_t seed;
} sequence_t;

/* A status code the C ABI defines; the message freed. */
static void code(int rc, int op) {
  if (rc < AUXSTORE_OK || rc > AUXSTORE_INTERNAL) {
    fprintf(stderr, "op %d: status %d is not a C ABI code\n", op, rc);
    exit(1);
  }
  if (rc == AUXSTORE_INTERNAL) {
    fprintf(stderr, "op %d: AUXSTORE_INTERNAL: %s\n", op, g_err ? g_err : "(none)");
    exit(1);
  }
  auxstore_free(g_err);
  g_err = NULL;
}

static void prefix_of(uint8_t p[16], unsigned i) {
  memset(p, 0, 16);
  p[0] = (uint8_t)i;
  p[15] = 0x5a;
}

static uint64_t some_size(void) {
  switch (pick(6)) {
    case 0:
      return 0;
    case 1:
      return UINT64_MAX;
    case 2:
      return UINT64_MAX - 100;
    case 3:
      return (uint64_t)1 << 62;
    default:
      return 1 + pick(3000);
  }
}

/* Completions run on pipeline threads: they only count. */
static volatile int g_completions;
static void on_restore_done(void* arg, int code, const char* message) {
  (void)arg;
  (void)code;
  (void)message;
  __atomic_add_fetch(&g_completions, 1, __ATOMIC_RELAXED);
}
static void on_snapshot_done(void* arg, const uint8_t* prefix, int code, const char* message) {
  (void)arg;
  (void)prefix;
  (void)code;
  (void)message;
  __atomic_add_fetch(&g_completions, 1, __ATOMIC_RELAXED);
}

static void run_sequence(void* arg) {
  const sequence_t* sq = arg;
  alarm(60); /* a hang is a failure too */
  g_rng = sq->seed * 0x9e3779b97f4a7c15ull + 1;
  auxstore_t* db[kStores] = {0};
  auxstore_backend_t* be[kBackends] = {0};
  auxstore_state_t* st[kStates] = {0};
  auxstore_pipeline_t* pl[kPipelines] = {0};
  auxstore_restore_handle_t* rh[kHandles] = {0};
  uint64_t lease[2] = {0, 0}, streams[2] = {0, 0}, dev[2] = {0, 0};
  uint64_t ns = 0;
  uint8_t buf[4096];
  for (size_t i = 0; i < sizeof buf; ++i) buf[i] = (uint8_t)(i * 13 + sq->seed);
  auxstore_geometry_t g;
  memset(&g, 0, sizeof g);

  for (int op = 0; op < kOps; ++op) {
    auxstore_t* d = db[pick(kStores)];
    auxstore_backend_t* b = be[pick(kBackends)];
    auxstore_state_t* s = st[pick(kStates)];
    auxstore_pipeline_t* p = pl[pick(kPipelines)];
    auxstore_restore_handle_t* h = rh[pick(kHandles)];
    uint8_t pre[16];
    prefix_of(pre, pick(4));
    int rc = 0;
    const unsigned what = pick(34);
    if (g_trace) fprintf(stderr, "op %d: case %u\n", op, what);
    switch (what) {
      case 0: {
        auxstore_t* out = NULL;
        rc = auxstore_open(sq->dir, NULL, &out, &g_err);
        if (rc == AUXSTORE_OK) db[pick(kStores)] = out;
        if (rc == AUXSTORE_OK) code(auxstore_register_namespace(out, "fuzz", &g, &ns, &g_err), op);
        break;
      }
      case 1:
        auxstore_close(d);
        break;
      case 2: {
        auxstore_stats_t out;
        rc = auxstore_stats(d, &out, &g_err);
        break;
      }
      case 3: {
        auxstore_layer_t l = {0, AUXSTORE_KIND_OPAQUE, buf, 1 + pick(sizeof buf)};
        rc = auxstore_put_snapshot(d, ns, pre, 16, 1, &l, &g_err);
        break;
      }
      case 4:
        rc = auxstore_erase(d, ns, pre, &g_err);
        break;
      case 5:
        rc = auxstore_lease_acquire(d, ns, pre, 1 + pick(50), &lease[pick(2)], &g_err);
        break;
      case 6:
        rc = auxstore_lease_release(d, lease[pick(2)], &g_err);
        break;
      case 7: {
        auxstore_backend_t* out = NULL;
        rc = auxstore_backend_create(AUXSTORE_BACKEND_HOST, &out, &g_err);
        if (rc == AUXSTORE_OK) be[pick(kBackends)] = out;
        break;
      }
      case 8:
        auxstore_backend_destroy(b);
        break;
      case 9: {
        auxstore_state_t* out = NULL;
        rc = auxstore_opaque_state_create(b, pick(4) == 0 ? some_size() : 4096, &out, &g_err);
        if (rc == AUXSTORE_OK) st[pick(kStates)] = out;
        break;
      }
      case 10:
        rc = auxstore_state_load(s, buf, 1 + pick(sizeof buf), &g_err);
        break;
      case 11: {
        void* data = NULL;
        size_t size = 0;
        rc = auxstore_state_read(s, &data, &size, &g_err);
        auxstore_free(data);
        break;
      }
      case 12:
        rc = auxstore_state_release(s, &g_err);
        break;
      case 13:
        rc = auxstore_state_set_counters(s, pick(2) ? some_size() : pick(5000), 0, &g_err);
        break;
      case 14: {
        auxstore_pipeline_t* out = NULL;
        rc = auxstore_pipeline_create(d, b, &out, &g_err);
        if (rc == AUXSTORE_OK) pl[pick(kPipelines)] = out;
        break;
      }
      case 15:
        auxstore_pipeline_destroy(p);
        break;
      case 16:
        rc = auxstore_pipeline_flush(p, &g_err);
        break;
      case 17: {
        auxstore_snapshot_source_t src[2] = {{0, s}, {1, st[pick(kStates)]}};
        uint64_t stream = pick(3) == 0 ? 0 : auxstore_pipeline_stream(p);
        rc = auxstore_snapshot(p, ns, pre, 16, src, 1 + pick(2), stream, &g_err);
        break;
      }
      case 18: {
        auxstore_restore_target_t t[2] = {{0, s}, {1, st[pick(kStates)]}};
        auxstore_restore_handle_t* out = NULL;
        rc = auxstore_restore_start(p, ns, pre, t, 1 + pick(2), NULL, &out, &g_err);
        if (rc == AUXSTORE_OK) rh[pick(kHandles)] = out;
        break;
      }
      case 19:
        rc = auxstore_restore_join(h, &g_err);
        break;
      case 20:
        (void)auxstore_restore_poll(h);
        auxstore_restore_cancel(h);
        break;
      case 21:
        auxstore_restore_handle_release(h);
        break;
      case 22: {
        auxstore_restore_target_t t = {0, s};
        rc = auxstore_restore_wait(p, ns, pre, &t, 1, &g_err);
        break;
      }
      case 23: {
        unsigned i = pick(2);
        rc = auxstore_device_alloc(b, (size_t)some_size(), &dev[i], &g_err);
        break;
      }
      case 24:
        rc = auxstore_device_free(b, dev[pick(2)], &g_err);
        break;
      case 25: {
        unsigned i = pick(2);
        rc = auxstore_stream_create(b, &streams[i], &g_err);
        break;
      }
      case 26:
        rc = auxstore_stream_destroy(b, streams[pick(2)], &g_err);
        break;
      case 27: {
        char* text = NULL;
        rc = auxstore_metrics_text(d, p, NULL, &text, &g_err);
        auxstore_free(text);
        break;
      }
      case 28: {
        uint64_t ptr = dev[pick(2)];
        rc = auxstore_opaque_state_borrow(b, ptr, some_size(), pick(100), &st[pick(kStates)],
                                          &g_err);
        break;
      }
      case 29: {
        auxstore_pipeline_stats_t out;
        rc = auxstore_pipeline_stats(p, &out, &g_err);
        break;
      }
      case 30: {
        auxstore_restore_target_t t = {0, s};
        rc = auxstore_restore(p, ns, pre, &t, 1, on_restore_done, NULL, &g_err);
        break;
      }
      case 31: {
        auxstore_snapshot_source_t src = {0, s};
        rc = auxstore_snapshot_with_done(p, ns, pre, 16, &src, 1, auxstore_pipeline_stream(p), NULL,
                                         on_snapshot_done, NULL, &g_err);
        break;
      }
      case 32: {
        uint32_t layers[4];
        size_t n = 0;
        code(auxstore_restore_layers_done(h, layers, 4, &n, &g_err), op);
        (void)auxstore_restore_layer_done(h, 0);
        rc = auxstore_restore_wait_layer(h, 0, &g_err);
        break;
      }
      case 33: {
        uint64_t ptrs[3];
        size_t n = 0;
        (void)auxstore_state_kind(s);
        (void)auxstore_state_is_borrowed(s);
        rc = auxstore_state_buffers(s, ptrs, &n, &g_err);
        break;
      }
    }
    code(rc, op);
  }
  /* Tear down in a random order; most of these are stale already. */
  for (int k = 0; k < 12; ++k) {
    switch (pick(5)) {
      case 0:
        auxstore_restore_handle_release(rh[pick(kHandles)]);
        break;
      case 1:
        code(auxstore_state_release(st[pick(kStates)], &g_err), -1);
        break;
      case 2:
        auxstore_pipeline_destroy(pl[pick(kPipelines)]);
        break;
      case 3:
        auxstore_backend_destroy(be[pick(kBackends)]);
        break;
      case 4:
        auxstore_close(db[pick(kStores)]);
        break;
    }
  }
  for (int i = 0; i < kHandles; ++i) auxstore_restore_handle_release(rh[i]);
  for (int i = 0; i < kPipelines; ++i) auxstore_pipeline_destroy(pl[i]);
  for (int i = 0; i < kStates; ++i) code(auxstore_state_release(st[i], &g_err), -2);
  for (int i = 0; i < kBackends; ++i) auxstore_backend_destroy(be[i]);
  for (int i = 0; i < kStores; ++i) auxstore_close(db[i]);
}

int main(int argc, char** argv) {
  g_trace = getenv("AUXSTORE_FUZZ_TRACE") != NULL;
  const long n = argc > 1 ? atol(argv[1]) : 120;
  const uint64_t first = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
  char root[256];
  snprintf(root, sizeof root, "/tmp/auxstore_fuzz_XXXXXX");
  if (mkdtemp(root) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  /* Warnings of ignored misuse go to stderr once per process: quiet here. */
  int failures = 0;
  for (long i = 0; i < n; ++i) {
    char dir[512], name[64];
    const uint64_t seed = first + (uint64_t)i;
    snprintf(dir, sizeof dir, "%s/s%llu", root, (unsigned long long)seed);
    snprintf(name, sizeof name, "seed %llu", (unsigned long long)seed);
    sequence_t sq = {dir, seed};
    if (run_child(name, run_sequence, &sq) != 0) {
      fprintf(stderr, "  rerun: capi_misuse_fuzz_test 1 %llu\n", (unsigned long long)seed);
      ++failures;
      continue;
    }
    struct stat sb;
    if (stat(dir, &sb) == 0) {
      if (verify_store(dir) != 0) {
        fprintf(stderr, "  after seed %llu\n", (unsigned long long)seed);
        ++failures;
      }
      remove_tree(dir);
    }
  }
  remove_tree(root);
  printf("%ld sequences, %d failures\n", n, failures);
  return failures == 0 ? 0 : 1;
}
