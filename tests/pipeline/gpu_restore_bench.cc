// Side-by-side restore bench: the restore pipeline (store -> staging ->
// device) against baselines measured in the same process, in alternating
// rounds (medians reported):
//   memcpy        4 MiB pieces into resident memory (the warm-restore bound)
//   pinned_h2d    CopyH2DAsync from 4 pinned buffers (the PCIe bound on CUDA)
//   raw_read      read(2) of the store's files, page cache dropped for them
//                 (posix_fadvise DONTNEED on our own files only)
//   store_read    serial LayerReader::ReadInto of every piece (Store::OpenLayer),
//                 page cache warm
//                 and after the cache drop (cold)
//   restore_cold  GpuPipeline::Restore right after the same cache drop
//   restore_warm  GpuPipeline::Restore again (page cache warm)
// With --kind qsa every layer is a QSA blob (hd 128, 4 tokens per block, 64
// RoPE'd dims), so each restore also launches the re-pool kernel over every
// pooled block; `repool` then times those launches alone on the restored
// raw keys (the kernel's share of a warm restore, and its rate in raw-key
// bytes per second next to pinned H2D's).
// Targets (issue 7): restore_cold >= 0.8 x raw_read, restore_warm >= 0.5 x
// memcpy. Usage:
//   gpu_restore_bench [--backend auto|host|cuda] [--mib N] [--layers L]
//                     [--rounds R] [--read-ahead N] [--io-threads N]
//                     [--staging-buffers N] [--dir D]
//                     [--kind opaque|qsa]
// --read-ahead and --io-threads default to DefaultRestoreLanes().
// Prints one JSON object (GB/s are 1e9 bytes per second).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/blob_hash.h"
#include "auxstore/gpu_pipeline.h"
#include "auxstore/store.h"

using namespace auxstore;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] void Die(const std::string& what, const Status& st) {
  std::fprintf(stderr, "gpu_restore_bench: %s: %s\n", what.c_str(), st.ToString().c_str());
  std::exit(1);
}

// Drops the page cache of every file under `dir` (our files only).
void DropCache(const std::string& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// Reads every file under `dir` sequentially; returns the bytes read.
uint64_t ReadAll(const std::string& dir, std::vector<uint8_t>& buf) {
  uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) > 0;) total += n;
    ::close(fd);
  }
  return total;
}

struct Args {
  std::string backend = "auto", dir, kind = "opaque";
  uint64_t mib = 256, layers = 16, rounds = 3, staging_buffers = 4;
  uint64_t read_ahead = DefaultRestoreLanes(), io_threads = DefaultRestoreLanes();
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--backend")
      a.backend = v;
    else if (k == "--mib")
      a.mib = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--layers")
      a.layers = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--rounds")
      a.rounds = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--dir")
      a.dir = v;
    else if (k == "--staging-buffers")
      a.staging_buffers = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--io-threads")
      a.io_threads = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--kind")
      a.kind = v;
    else if (k == "--read-ahead")
      a.read_ahead = std::strtoull(v.c_str(), nullptr, 10);
    else
      Die("usage", Status::InvalidArgument("unknown flag " + k));
  }
  if (a.mib == 0 || a.layers == 0 || a.rounds == 0 || a.read_ahead == 0 || a.io_threads == 0 ||
      a.staging_buffers == 0 || (a.mib << 20) % a.layers != 0 ||
      (a.kind != "opaque" && a.kind != "qsa")) {
    Die("usage",
        Status::InvalidArgument("--mib, --layers, --rounds, --read-ahead, --io-threads and "
                                "--staging-buffers must be > 0, --mib MiB must split "
                                "evenly into --layers, --kind is opaque or qsa"));
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  const BackendKind kind = args.backend == "cuda"   ? BackendKind::kCuda
                           : args.backend == "host" ? BackendKind::kHost
                                                    : BackendKind::kAuto;
  auto gpu_r = CreateBackend(kind);
  if (!gpu_r.ok()) Die("backend", gpu_r.status());
  GpuBackend& gpu = **gpu_r;
  auto stream_r = gpu.CreateStream();
  if (!stream_r.ok()) Die("stream", stream_r.status());
  const StreamHandle stream = *stream_r;
  const uint64_t total = args.mib << 20, layer_bytes = total / args.layers;
  const uint32_t chunk = 4u << 20;

  // Baseline buffers: a device buffer, 4 pinned buffers, memcpy src/dst.
  auto dev = gpu.Alloc(total);
  if (!dev.ok()) Die("alloc", dev.status());
  std::vector<uint8_t*> pinned;
  for (int i = 0; i < 4; ++i) {
    auto p = gpu.AllocPinned(chunk);
    if (!p.ok()) Die("pinned", p.status());
    std::memset(*p, i, chunk);
    pinned.push_back(*p);
  }
  // memcpy's buffers are pinned (resident, huge pages on the host backend):
  // plain 4 KiB-page vectors refault after every large free on a
  // shadow-paging VM and measured memcpy at 1-3 GB/s instead of 13.
  auto msrc_r = gpu.AllocPinned(total), mdst_r = gpu.AllocPinned(total);
  if (!msrc_r.ok() || !mdst_r.ok()) Die("pinned", msrc_r.ok() ? mdst_r.status() : msrc_r.status());
  const std::span<uint8_t> msrc(*msrc_r, total), mdst(*mdst_r, total);
  std::memset(msrc.data(), 1, total);
  std::memset(mdst.data(), 2, total);
  std::vector<uint8_t> rbuf(chunk);

  // The snapshot: `layers` opaque layers of random bytes, or QSA layers of
  // random bf16 raw keys (as many tokens as fit the layer's share, whole
  // blocks, every block pooled).
  const bool qsa = args.kind == "qsa";
  const QsaGeometry geo{
      .hd = 128, .max_tokens = 0, .ratio = 4, .rot = 64, .theta = 10000.0f, .eps = 1e-6f};
  const uint64_t tokens = (layer_bytes - kQsaHeaderBytes) / (geo.hd * 2) / geo.ratio * geo.ratio;
  std::string dir = args.dir;
  if (dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "auxstore-bench-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp", Status::IOError(tmpl));
    dir = tmpl;
  }
  Options opts;
  opts.chunk_bytes = chunk;
  auto store_r = Store::Open(opts, dir + "/store");
  if (!store_r.ok()) Die("store", store_r.status());
  Store& store = **store_r;
  NamespaceSpec spec;
  spec.model_id = "gpu-bench";
  if (qsa) {
    spec.qsa = geo;
    spec.qsa.max_tokens = static_cast<uint32_t>(tokens);
  }
  auto ns = store.RegisterNamespace(spec);
  if (!ns.ok()) Die("namespace", ns.status());
  std::vector<uint8_t> blob(qsa ? tokens * geo.hd * 2 : layer_bytes);
  std::mt19937_64 rng(1);
  if (qsa) {  // finite bf16 values in [-2, 2): sign, exponent 126..127, random mantissa
    for (size_t i = 0; i + 1 < blob.size(); i += 2) {
      const uint64_t r = rng();
      const uint16_t v =
          static_cast<uint16_t>((r & 0x8000) | ((126 + (r >> 16 & 1)) << 7) | (r & 0x7f));
      std::memcpy(&blob[i], &v, 2);
    }
  } else {
    for (auto& b : blob) b = static_cast<uint8_t>(rng());
  }
  const std::vector<uint8_t> raw_keys = blob;  // what a QSA restore must upload
  if (qsa) {
    auto encoded = EncodeQsaBlob(tokens, tokens / geo.ratio, raw_keys, geo.hd);
    if (!encoded.ok()) Die("encode", encoded.status());
    blob = std::move(*encoded);
  }
  const uint64_t stored = blob.size() * args.layers;  // the bytes a restore reads
  std::vector<LayerBlob> put;
  for (uint32_t l = 0; l < args.layers; ++l)
    put.push_back({l, qsa ? Kind::kQsa : Kind::kOpaque, blob});
  Prefix prefix;
  prefix.bytes[0] = 1;
  if (Status st = store.PutSnapshot(*ns, prefix, 1, put); !st.ok()) Die("put", st);
  auto manifest = store.GetManifest(*ns, prefix);
  if (!manifest.ok()) Die("manifest", manifest.status());

  PipelineOptions po;
  po.staging_bytes = chunk;
  po.restore_read_ahead = args.read_ahead;
  po.io_threads = args.io_threads;
  po.staging_buffers = args.staging_buffers;
  auto pipe = GpuPipeline::Create(store, gpu, po);
  if (!pipe.ok()) Die("pipeline", pipe.status());

  // The QSA layers' weights (the pooling query and the RMSNorm weight).
  std::vector<uint16_t> weights(2 * geo.hd);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<uint16_t>(0x3f80 + (i % 16));
  auto weights_dev = gpu.Alloc(weights.size() * 2);
  if (!weights_dev.ok()) Die("alloc", weights_dev.status());
  if (Status st =
          gpu.CopyH2DAsync({reinterpret_cast<const uint8_t*>(weights.data()), weights.size() * 2},
                           *weights_dev, 0, stream);
      !st.ok() || !(st = gpu.Synchronize(stream)).ok())
    Die("weights", st);
  const QsaLayer qsa_layer{
      .geometry = spec.qsa, .k_pool_k = *weights_dev, .k_norm_w = *weights_dev + geo.hd * 2};

  // One restore into fresh states (allocated, untimed, before the clock).
  std::vector<std::unique_ptr<SeqState>> states;
  bool exact = true;
  std::vector<double> alloc_s;
  auto restore = [&]() {
    states.clear();
    const auto ta = Clock::now();
    RestoreTargets targets;
    for (uint32_t l = 0; l < args.layers; ++l) {
      auto keep = [&](auto created) {
        if (!created.ok()) Die("state", created.status());
        targets[l] = created->get();
        states.push_back(std::move(*created));
      };
      if (qsa) {
        keep(QsaSeqState::Create(gpu, qsa_layer));
      } else {
        keep(OpaqueSeqState::Create(gpu, layer_bytes));
      }
    }
    alloc_s.push_back(Since(ta));
    const auto t0 = Clock::now();
    Status rs = (*pipe)->Restore(*ns, prefix, targets, stream).get();
    const double s = Since(t0);
    if (!rs.ok()) Die("restore", rs);
    std::vector<uint8_t> back(raw_keys.size());
    if (qsa) {
      const auto& last = static_cast<const QsaSeqState&>(*states.back());
      exact = exact && last.pooled() == tokens / geo.ratio && last.ingested() == tokens;
      if (Status st = gpu.CopyD2HOnStream(last.raw_keys(), 0, back, stream); !st.ok())
        Die("d2h", st);
    } else if (Status st = gpu.CopyD2HOnStream(
                   static_cast<const OpaqueSeqState&>(*states.back()).buffer(), 0, back, stream);
               !st.ok()) {
      Die("d2h", st);
    }
    exact = exact && back == raw_keys;
    return s;
  };

  // Every piece read in turn, verified, into one pinned buffer.
  auto read_store = [&]() {
    const auto t0 = Clock::now();
    for (const LayerEntry& e : manifest->layers) {
      auto reader = store.OpenLayer(*ns, prefix, *manifest, e.layer);
      if (!reader.ok()) Die("open layer", reader.status());
      while (!(*reader)->done()) {
        auto piece = (*reader)->ReadInto({pinned[0], chunk});
        if (!piece.ok()) Die("read", piece.status());
      }
    }
    return Since(t0);
  };

  // The re-pool launches of the last restore alone (QSA): every layer's
  // pooled blocks from its restored raw keys, as the restore issued them.
  auto repool = [&]() {
    const auto t0 = Clock::now();
    for (const auto& state : states) {
      const auto& q = static_cast<const QsaSeqState&>(*state);
      const QsaBlockPoolArgs a{.raw_keys = q.raw_keys(),
                               .k_pool_k = qsa_layer.k_pool_k,
                               .k_norm_w = qsa_layer.k_norm_w,
                               .block_keys = q.block_keys(),
                               .ingested = q.ingested(),
                               .start = 0,
                               .n = static_cast<uint32_t>(q.pooled()),
                               .ratio = geo.ratio,
                               .hd = geo.hd,
                               .rot = geo.rot,
                               .theta = geo.theta,
                               .eps = geo.eps};
      if (Status st = gpu.QsaBlockPool(a, stream); !st.ok()) Die("re-pool", st);
    }
    if (Status st = gpu.Synchronize(stream); !st.ok()) Die("sync", st);
    return Since(t0);
  };

  std::vector<double> memcpy_s, h2d_s, raw_s, read_s, read_cold_s, cold_s, warm_s, repool_s;
  uint64_t raw_bytes = 0;
  for (uint64_t round = 0; round <= args.rounds; ++round) {  // round 0 warms up
    auto t0 = Clock::now();
    for (uint64_t off = 0; off < total; off += chunk) {
      std::memcpy(mdst.data() + off, msrc.data() + off, std::min<uint64_t>(chunk, total - off));
    }
    const double m = Since(t0);

    t0 = Clock::now();
    for (uint64_t off = 0, i = 0; off < total; off += chunk, ++i) {
      const uint64_t n = std::min<uint64_t>(chunk, total - off);
      if (Status st = gpu.CopyH2DAsync({pinned[i % 4], n}, *dev, off, stream); !st.ok())
        Die("h2d", st);
    }
    if (Status st = gpu.Synchronize(stream); !st.ok()) Die("sync", st);
    const double h = Since(t0);

    DropCache(dir);
    t0 = Clock::now();
    raw_bytes = ReadAll(dir, rbuf);
    const double r = Since(t0);

    DropCache(dir);
    const double cold = restore();
    const double warm = restore();
    const double pool = qsa ? repool() : 0.0;

    const double sr = read_store();
    DropCache(dir);
    const double src = read_store();
    if (round == 0) continue;
    memcpy_s.push_back(m);
    h2d_s.push_back(h);
    raw_s.push_back(r);
    cold_s.push_back(cold);
    warm_s.push_back(warm);
    repool_s.push_back(pool);
    read_s.push_back(sr);
    read_cold_s.push_back(src);
  }

  // Ratios are taken within each round (the machine is shared and noisy),
  // then the median over rounds.
  auto ratio = [](const std::vector<double>& num_s, const std::vector<double>& den_s,
                  double den_scale) {
    std::vector<double> r;
    for (size_t i = 0; i < num_s.size(); ++i) r.push_back(den_s[i] * den_scale / num_s[i]);
    return Median(r);
  };
  // memcpy and H2D move `total` bytes; reads and restores the `stored` ones.
  const double gb = total / 1e9, sgb = stored / 1e9, per_total = double(stored) / total;
  const double memcpy_g = gb / Median(memcpy_s), h2d_g = gb / Median(h2d_s),
               raw_g = raw_bytes / 1e9 / Median(raw_s), read_g = sgb / Median(read_s),
               cold_g = sgb / Median(cold_s), warm_g = sgb / Median(warm_s);
  std::vector<double> pool_share;
  for (size_t i = 0; i < repool_s.size(); ++i) pool_share.push_back(repool_s[i] / warm_s[i]);
  const double repool_g = qsa ? raw_keys.size() * args.layers / 1e9 / Median(repool_s) : 0.0;
  std::printf(
      "{\"backend\":\"%s\",\"bytes\":%llu,\"layers\":%llu,\"rounds\":%llu,"
      "\"memcpy_gbps\":%.3f,\"pinned_h2d_gbps\":%.3f,\"raw_read_cold_gbps\":%.3f,"
      "\"store_read_warm_gbps\":%.3f,\"store_read_cold_gbps\":%.3f,\"restore_cold_gbps\":%.3f,"
      "\"restore_warm_gbps\":%.3f,"
      "\"cold_over_raw_read\":%.3f,\"warm_over_memcpy\":%.3f,\"warm_over_h2d\":%.3f,"
      "\"warm_over_store_read\":%.3f,\"kind\":\"%s\",\"lanes\":%llu,\"io_threads\":%llu,\"staging_"
      "buffers\":%llu,\"repool_gbps\":%.3f,"
      "\"repool_share_of_warm\":%.3f,\"state_alloc_s\":%.3f,\"staging_waits\":%llu,"
      "\"bit_exact\":%s}\n",
      std::string(gpu.name()).c_str(), (unsigned long long)stored, (unsigned long long)args.layers,
      (unsigned long long)args.rounds, memcpy_g, h2d_g, raw_g, read_g, sgb / Median(read_cold_s),
      cold_g, warm_g, ratio(cold_s, raw_s, double(stored) / raw_bytes),
      ratio(warm_s, memcpy_s, per_total), ratio(warm_s, h2d_s, per_total), ratio(warm_s, read_s, 1),
      args.kind.c_str(), (unsigned long long)args.read_ahead, (unsigned long long)args.io_threads,
      (unsigned long long)args.staging_buffers, repool_g, qsa ? Median(pool_share) : 0.0,
      Median(alloc_s), (unsigned long long)(*pipe)->stats().staging_waits,
      exact ? "true" : "false");
  pipe->reset();
  states.clear();
  for (uint8_t* p : pinned) (void)gpu.FreePinned(p);
  (void)gpu.FreePinned(msrc.data());
  (void)gpu.FreePinned(mdst.data());
  (void)gpu.Free(*dev);
  (void)gpu.Free(*weights_dev);
  store_r->reset();
  std::error_code ec;
  if (args.dir.empty()) fs::remove_all(dir, ec);
  return exact ? 0 : 2;
}
