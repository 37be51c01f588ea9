// auxstore_connector_bench: the connector calls of issue 24, through the C
// ABI a connector uses, side by side in one run (bench/RESULTS.md,
// "Connector calls (issue 24)"):
//   - exists of 64 keys whose first key misses (SGLang batch_exists), and
//     of 64 stored keys, for scale;
//   - 64 small pages (4 layers of 8 KiB) read into a registered host buffer
//     with one batched read, against the same pages read one by one with
//     auxstore_read_layers into the same memory;
//   - a restore of 16 snapshots (4 layers of 1 MiB) into registered host
//     memory against auxstore_read_layers (ReadLayerInto) of the same bytes;
//   - the per-call overhead of a trivial call (count_leading_stored of no
//     key: the handle lookup, the checks, the error guard);
//   - the floor of the page read, in the same process: the same bytes
//     copied into the same buffer and hashed (XXH3, as the read verifies
//     them) in two jobs on a pool of two threads, as the read runs.
// Each figure is the median of `--runs` runs (min and max beside it).
#include <CLI/CLI.hpp>
#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "auxstore/c.h"
#include "bench/measure.h"
#include "format/xxh3.h"

namespace {

using auxstore::bench::HugeBuffer;
using auxstore::bench::Spread;
using auxstore::bench::Stopwatch;
using auxstore::bench::Summarize;

void Check(int code, char* err, const char* what) {
  if (code == AUXSTORE_OK) return;
  std::fprintf(stderr, "%s: %s (%s)\n", what, auxstore_code_name(code), err ? err : "");
  std::exit(1);
}
#define CALL(expr, what) \
  do {                   \
    char* e = nullptr;   \
    int c = (expr);      \
    Check(c, e, what);   \
  } while (0)

using Key = std::array<uint8_t, 16>;
Key KeyOf(uint32_t group, uint32_t i) {
  Key k{};
  for (int b = 0; b < 16; ++b) k[b] = static_cast<uint8_t>(group * 97 + i * 31 + b * 7 + 1);
  k[0] = static_cast<uint8_t>(group);
  std::memcpy(k.data() + 1, &i, 4);
  return k;
}

struct Store {
  auxstore_t* db = nullptr;
  uint64_t ns = 0;
};

// Puts `n` snapshots of `layers` opaque layers of `bytes` each (group g).
void PutSnapshots(Store& s, uint32_t g, uint32_t n, uint32_t layers, size_t bytes) {
  std::vector<std::vector<uint8_t>> blobs(layers, std::vector<uint8_t>(bytes));
  std::vector<auxstore_layer_t> ls(layers);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t l = 0; l < layers; ++l) {
      for (size_t b = 0; b < bytes; ++b) blobs[l][b] = static_cast<uint8_t>(b * 13 + l + i * 7);
      ls[l] = {l, AUXSTORE_KIND_OPAQUE, blobs[l].data(), bytes};
    }
    const Key k = KeyOf(g, i);
    char* e = nullptr;
    Check(auxstore_put_snapshot(s.db, s.ns, k.data(), 64, layers, ls.data(), &e), e, "put");
  }
}

// Seconds per call of `fn`, run `calls` times; median of `runs`.
Spread PerCall(int runs, int calls, const std::function<void()>& fn) {
  std::vector<double> samples;
  for (int r = 0; r < runs; ++r) {
    Stopwatch w;
    for (int c = 0; c < calls; ++c) fn();
    samples.push_back(w.Seconds() / calls);
  }
  return Summarize(samples);
}

void Row(const char* what, Spread s, double scale, const char* unit, const char* target) {
  std::printf("| %s | %.2f [%.2f, %.2f] %s | %s |\n", what, s.median * scale, s.min * scale,
              s.max * scale, unit, target);
}

// One batched read of `targets` into the registered buffer, waited for.
void HostRead(auxstore_t* db, const std::vector<auxstore_host_read_target_t>& targets) {
  auxstore_host_read_t* r = nullptr;
  CALL(auxstore_host_read_start(db, targets.data(), targets.size(), &r, &e), "host read");
  CALL(auxstore_host_read_wait(r, &e), "host read wait");
  auxstore_host_read_release(r);
}

// The same layers read snapshot by snapshot with auxstore_read_layers.
void SerialRead(Store& s, const std::vector<auxstore_host_read_target_t>& targets, uint8_t* base,
                uint32_t layers) {
  std::vector<auxstore_layer_dest_t> dests(layers);
  for (size_t t = 0; t < targets.size(); t += layers) {
    for (uint32_t l = 0; l < layers; ++l) {
      dests[l] = {targets[t + l].layer, base + targets[t + l].offset, targets[t + l].capacity, 0};
    }
    CALL(auxstore_read_layers(s.db, s.ns, targets[t].prefix, dests.data(), layers, &e), "read");
  }
}

// The copy and hash of `dst.size()` bytes in `piece`-byte pieces from
// `src`, half of them on each of two pool threads, waited for: what a
// batched page read cannot go below.
void CopyAndHash(boost::asio::thread_pool& pool, const HugeBuffer& src, HugeBuffer& dst,
                 size_t piece) {
  const size_t pieces = dst.size() / piece, half = pieces / 2;
  const auto job = [&](size_t from, size_t to) {
    uint64_t h = 0;
    for (size_t i = from; i < to; ++i) {
      std::memcpy(dst.data() + i * piece, src.data() + i * piece, piece);
      h ^= XXH3_64bits(src.data() + i * piece, piece);
    }
    return h;
  };
  auto first = boost::asio::post(pool, boost::asio::use_future([&] { return job(0, half); }));
  auto second = boost::asio::post(pool, boost::asio::use_future([&] { return job(half, pieces); }));
  volatile uint64_t sink = first.get() ^ second.get();
  (void)sink;
}

std::vector<auxstore_host_read_target_t> Targets(const Store& s, uint32_t g, uint32_t n,
                                                 uint32_t layers, size_t bytes,
                                                 auxstore_host_buffer_t* buffer) {
  std::vector<auxstore_host_read_target_t> out;
  for (uint32_t i = 0; i < n; ++i) {
    const Key k = KeyOf(g, i);
    for (uint32_t l = 0; l < layers; ++l) {
      auxstore_host_read_target_t t{};
      t.ns = s.ns;
      std::memcpy(t.prefix, k.data(), 16);
      t.layer = l;
      t.buffer = buffer;
      t.offset = (static_cast<size_t>(i) * layers + l) * bytes;
      t.capacity = bytes;
      out.push_back(t);
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"auxstore_connector_bench: the connector calls of issue 24, side by side"};
  std::string dir = "/tmp/auxstore-connector-bench";
  int runs = 7;
  app.add_option("--dir", dir, "Store directory (removed and made afresh)");
  app.add_option("--runs", runs, "Runs per figure (median, min, max)");
  bool pages_only = false;
  app.add_flag("--pages-only", pages_only, "Only the 64 pages of the pages store (to profile)");
  int page_calls = 20;
  app.add_option("--page-calls", page_calls,
                 "Reads of the 64 pages per run (more: steadier figures on a noisy machine)");
  CLI11_PARSE(app, argc, argv);
  if (std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()) != 0) return 1;

  // Store `s`: the exists keys and the pages. Store `big`: the 1 MiB
  // snapshots (ingested, one table file each) and the same pages again: a
  // page's record Seek there also reads a block of every L0 table file whose
  // key range holds its key (bench/RESULTS.md says what that costs).
  Store s, big_store;
  CALL(auxstore_open((dir + "/pages").c_str(), nullptr, &s.db, &e), "open");
  CALL(auxstore_open((dir + "/big").c_str(), nullptr, &big_store.db, &e), "open");
  auxstore_geometry_t g{};
  CALL(auxstore_register_namespace(s.db, "connector-bench", &g, &s.ns, &e), "namespace");
  CALL(auxstore_register_namespace(big_store.db, "connector-bench", &g, &big_store.ns, &e),
       "namespace");
  constexpr uint32_t kKeys = 64, kPages = 64, kPageLayers = 4, kSnaps = 16;
  constexpr size_t kPageBytes = 8 << 10, kBigBytes = 1 << 20;
  PutSnapshots(s, 1, kKeys, 1, 256);                           // exists: 64 stored keys
  PutSnapshots(s, 2, kPages, kPageLayers, kPageBytes);         // 64 pages x 4 x 8 KiB
  PutSnapshots(big_store, 3, kSnaps, kPageLayers, kBigBytes);  // 16 x 4 x 1 MiB
  PutSnapshots(big_store, 2, kPages, kPageLayers, kPageBytes);
  CALL(auxstore_flush(s.db, &e), "flush");
  CALL(auxstore_flush(big_store.db, &e), "flush");

  std::printf("| call | median [min, max] | target |\n| --- | --- | --- |\n");
  // Exists: a first-key miss, then 64 hits.
  std::vector<Key> miss, hit;
  for (uint32_t i = 0; i < kKeys; ++i) {
    miss.push_back(KeyOf(9, i));
    hit.push_back(KeyOf(1, i));
  }
  size_t count = 0;
  const auto exists = [&](const std::vector<Key>& keys) {
    CALL(auxstore_count_leading_stored(s.db, s.ns,
                                       reinterpret_cast<const uint8_t(*)[16]>(keys.data()),
                                       keys.size(), &count, &e),
         "exists");
  };
  Row("exists of 64 keys, first-key miss", PerCall(runs, 2000, [&] { exists(miss); }), 1e6, "us",
      "<= 5 us");
  Row("exists of 64 keys, all stored", PerCall(runs, 200, [&] { exists(hit); }), 1e6, "us", "-");

  // 64 pages x 4 layers x 8 KiB into a registered buffer.
  HugeBuffer pages(size_t{kPages} * kPageLayers * kPageBytes);
  auxstore_host_buffer_t* pb = nullptr;
  CALL(auxstore_register_host_buffer(s.db, pages.data(), pages.size(), &pb, &e), "register");
  const auto page_targets = Targets(s, 2, kPages, kPageLayers, kPageBytes, pb);
  HostRead(s.db, page_targets);  // warm
  Row("64 pages (4 x 8 KiB) batched registered read, per page",
      PerCall(runs, page_calls, [&] { HostRead(s.db, page_targets); }), 1e6 / kPages, "us",
      "<= 10 us");
  Row("the same pages, auxstore_read_layers one by one, per page",
      PerCall(runs, page_calls, [&] { SerialRead(s, page_targets, pages.data(), kPageLayers); }),
      1e6 / kPages, "us", "-");
  {
    HugeBuffer src(pages.size());
    for (size_t i = 0; i < src.size(); ++i) src.data()[i] = static_cast<uint8_t>(i * 13 + 7);
    boost::asio::thread_pool pool(2);
    CopyAndHash(pool, src, pages, kPageBytes);  // warm
    Row("floor: the same bytes copied and hashed, 2 threads, per page",
        PerCall(runs, page_calls, [&] { CopyAndHash(pool, src, pages, kPageBytes); }), 1e6 / kPages,
        "us", "-");
  }
  if (pages_only) return 0;
  {
    auxstore_host_buffer_t* mb = nullptr;
    CALL(auxstore_register_host_buffer(big_store.db, pages.data(), pages.size(), &mb, &e),
         "register");
    const auto mixed = Targets(big_store, 2, kPages, kPageLayers, kPageBytes, mb);
    Row("the same pages beside 16 ingested 4 MiB snapshots, batched read, per page",
        PerCall(runs, 5, [&] { HostRead(big_store.db, mixed); }), 1e6 / kPages, "us", "-");
    CALL(auxstore_unregister_host_buffer(mb, &e), "unregister");
  }

  // 16 x 4 x 1 MiB: registered host memory vs ReadLayerInto.
  HugeBuffer big(size_t{kSnaps} * kPageLayers * kBigBytes);
  auxstore_host_buffer_t* bb = nullptr;
  CALL(auxstore_register_host_buffer(big_store.db, big.data(), big.size(), &bb, &e), "register");
  const auto big_targets = Targets(big_store, 3, kSnaps, kPageLayers, kBigBytes, bb);
  HostRead(big_store.db, big_targets);  // warm
  const double bytes = static_cast<double>(big.size());
  const Spread host = PerCall(runs, 3, [&] { HostRead(big_store.db, big_targets); });
  const Spread serial =
      PerCall(runs, 3, [&] { SerialRead(big_store, big_targets, big.data(), kPageLayers); });
  Row("16 x 4 x 1 MiB into registered host memory (batched read)", host, 1e3, "ms", "-");
  Row("the same bytes, auxstore_read_layers (ReadLayerInto)", serial, 1e3, "ms", "-");
  std::printf("| registered / ReadLayerInto throughput | %.2fx (%.2f vs %.2f GB/s) | >= 0.9x |\n",
              serial.median / host.median, bytes / host.median / 1e9, bytes / serial.median / 1e9);

  // A trivial call: count_leading_stored of no key.
  Row("trivial call from C (count_leading_stored of 0 keys)",
      PerCall(runs, 200000,
              [&] {
                CALL(auxstore_count_leading_stored(s.db, s.ns, nullptr, 0, &count, &e), "trivial");
              }),
      1e9, "ns", "-");

  CALL(auxstore_unregister_host_buffer(pb, &e), "unregister");
  CALL(auxstore_unregister_host_buffer(bb, &e), "unregister");
  auxstore_close(s.db);
  auxstore_close(big_store.db);
  if (std::system(("rm -rf '" + dir + "'").c_str()) != 0) return 1;
  return 0;
}
