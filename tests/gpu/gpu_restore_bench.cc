// Side-by-side GPU bench: pinned H2D bandwidth (the PCIe baseline) vs the
// restore pipeline (store -> staging -> device) on the same backend.
// Usage: gpu_restore_bench [--backend auto|host|cuda] [--mib N] [--layers L] [--dir D]
// Prints one JSON object.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "auxstore/blob_hash.h"
#include "auxstore/gpu_pipeline.h"
#include "auxstore/store.h"

using namespace auxstore;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int Fail(const std::string& what, const Status& st) {
  std::fprintf(stderr, "gpu_restore_bench: %s: %s\n", what.c_str(), st.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend_arg = "auto", dir;
  uint64_t mib = 256, layers = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--backend")
      backend_arg = argv[i + 1];
    else if (k == "--mib")
      mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--layers")
      layers = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--dir")
      dir = argv[i + 1];
  }
  const BackendKind kind = backend_arg == "cuda"   ? BackendKind::kCuda
                           : backend_arg == "host" ? BackendKind::kHost
                                                   : BackendKind::kAuto;
  auto gpu_r = CreateBackend(kind);
  if (!gpu_r.ok()) return Fail("backend", gpu_r.status());
  GpuBackend& gpu = **gpu_r;
  auto stream_r = gpu.CreateStream();
  if (!stream_r.ok()) return Fail("stream", stream_r.status());
  const StreamHandle stream = *stream_r;
  const uint64_t total = mib << 20, layer_bytes = total / layers;
  const uint32_t chunk = 4u << 20;

  // 1. Pinned H2D: 4 staging buffers round-robin, as the pipeline uses them.
  auto dev = gpu.Alloc(total);
  if (!dev.ok()) return Fail("alloc", dev.status());
  std::vector<uint8_t*> pinned;
  for (int i = 0; i < 4; ++i) {
    auto p = gpu.AllocPinned(chunk);
    if (!p.ok()) return Fail("pinned", p.status());
    std::memset(*p, i, chunk);
    pinned.push_back(*p);
  }
  Clock::time_point t0;
  for (int pass = 0; pass < 2; ++pass) {  // pass 0 warms up (first-touch faults)
    t0 = Clock::now();
    for (uint64_t off = 0, i = 0; off < total; off += chunk, ++i) {
      const uint64_t n = std::min<uint64_t>(chunk, total - off);
      if (Status st = gpu.CopyH2DAsync({pinned[i % 4], n}, *dev, off, stream); !st.ok())
        return Fail("h2d", st);
    }
    if (Status st = gpu.Synchronize(stream); !st.ok()) return Fail("sync", st);
  }
  const double h2d_s = Seconds(t0, Clock::now());

  // 2. Restore pipeline: a snapshot of `layers` opaque layers.
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "auxstore-bench-XXXXXX").string();
    dir = ::mkdtemp(tmpl.data()) ? tmpl : "";
  }
  Options opts;
  opts.chunk_bytes = chunk;
  auto store_r = Store::Open(opts, dir + "/store");
  if (!store_r.ok()) return Fail("store", store_r.status());
  Store& store = **store_r;
  NamespaceSpec spec;
  spec.model_id = "gpu-bench";
  auto ns = store.RegisterNamespace(spec);
  if (!ns.ok()) return Fail("namespace", ns.status());
  std::vector<uint8_t> blob(layer_bytes);
  std::mt19937_64 rng(1);
  for (auto& b : blob) b = static_cast<uint8_t>(rng());
  std::vector<LayerBlob> put;
  for (uint32_t l = 0; l < layers; ++l) put.push_back({l, Kind::kOpaque, blob});
  Prefix prefix;
  prefix.bytes[0] = 1;
  if (Status st = store.PutSnapshot(*ns, prefix, 1, put); !st.ok()) return Fail("put", st);

  PipelineOptions po;
  po.staging_bytes = chunk;
  auto pipe = GpuPipeline::Create(store, gpu, po);
  if (!pipe.ok()) return Fail("pipeline", pipe.status());
  // Pass 0 reads what the store just wrote (the SST writer drops it from the
  // page cache: cold); pass 1 the same again (warm).
  std::vector<std::unique_ptr<OpaqueSeqState>> states;
  double restore_s[2] = {0, 0};
  bool exact = true;
  for (int pass = 0; pass < 2; ++pass) {
    states.clear();
    RestoreTargets targets;
    for (uint32_t l = 0; l < layers; ++l) {
      auto s = OpaqueSeqState::Create(gpu, layer_bytes);
      if (!s.ok()) return Fail("state", s.status());
      targets[l] = s->get();
      states.push_back(std::move(*s));
    }
    t0 = Clock::now();
    Status rs = (*pipe)->Restore(*ns, prefix, targets, stream).get();
    restore_s[pass] = Seconds(t0, Clock::now());
    if (!rs.ok()) return Fail("restore", rs);
    // Spot-check the last layer came back bit-exact.
    std::vector<uint8_t> back(layer_bytes);
    if (Status st = gpu.CopyD2HOnStream(states.back()->buffer(), 0, back, stream); !st.ok())
      return Fail("d2h", st);
    exact = exact && back == blob;
  }

  // Baseline: the store's own chunk reads into one pinned buffer, serial.
  auto manifest = store.GetManifest(*ns, prefix);
  if (!manifest.ok()) return Fail("manifest", manifest.status());
  t0 = Clock::now();
  for (const LayerEntry& e : manifest->layers) {
    for (uint32_t c = 0; c < e.chunks; ++c) {
      const uint64_t n = ChunkSize(e.bytes, manifest->chunk_bytes, c);
      if (Status st = store.ReadChunkInto(*ns, prefix, *manifest, e.layer, c, {pinned[0], n});
          !st.ok())
        return Fail("read", st);
    }
  }
  const double read_s = Seconds(t0, Clock::now());

  const double gb = total / 1e9;
  std::printf(
      "{\"backend\":\"%s\",\"bytes\":%llu,\"layers\":%llu,\"pinned_h2d_gbps\":%.3f,"
      "\"store_read_gbps\":%.3f,\"restore_cold_gbps\":%.3f,\"restore_warm_gbps\":%.3f,\"warm_over_"
      "h2d\":%.3f,"
      "\"staging_waits\":%llu,"
      "\"bit_exact\":%s}\n",
      std::string(gpu.name()).c_str(), (unsigned long long)total, (unsigned long long)layers,
      gb / h2d_s, gb / read_s, gb / restore_s[0], gb / restore_s[1], h2d_s / restore_s[1],
      (unsigned long long)(*pipe)->stats().staging_waits, exact ? "true" : "false");
  pipe->reset();
  states.clear();
  for (uint8_t* p : pinned) (void)gpu.FreePinned(p);
  (void)gpu.Free(*dev);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return exact ? 0 : 2;
}
