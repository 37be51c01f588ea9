// auxstore_rados_bench: the shared tier's page puts and cold reads against
// `rados bench` on the same pool, object size and queue depth, in the same
// run (issue 21's bar: puts >= 0.8 x `rados bench write`, cold reads >= 0.8 x
// `rados bench seq`). Each run, in this order:
//   rados bench SECS write --no-cleanup -b SIZE -t N; rados bench SECS seq -t N;
//   rados cleanup;
//   three times: RadosPageStore::PutPages of COUNT fresh pages of SIZE, N
//   in flight (the put figure: their median), then on a new client, N in
//   flight, one of three readers: the reads raw (librados's buffers,
//   nothing copied or checked: the client's ceiling), RadosPageStore::
//   ReadPages (a vector per page, every byte checked) and ReadPagesInto
//   (into staging buffers allocated beforehand, every byte checked, as a
//   restore reads); the pages removed. Each reader reads freshly put
//   objects, as `rados bench seq` reads what its write just left.
// Prints each run and the medians in MiB/s (what `rados bench` prints as
// "MB/sec") with the ratios. bench/RESULTS.md has the figures and command.
//
// Then, where the store is built with the shared tier, the store level
// (bench/shared_store_bench.h): snapshots put through Options::shared and
// restored cold into an empty local directory, in namespace NS.store.
//
//   auxstore_rados_bench URI [--size BYTES] [--count N] [--in-flight N]
//                            [--secs S] [--runs R] [--store-snapshots N]
//                            [--store-layers N] [--local-dir DIR]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "bench/measure.h"
#ifdef AUXSTORE_BENCH_STORE_LEVEL
#include "bench/shared_store_bench.h"
#endif
#include "store/rados/rados_aio.h"
#include "store/rados/rados_connection.h"
#include "store/rados/rados_page_reader.h"
#include "store/rados/rados_page_store.h"
#include "store/rados/rados_uri.h"

namespace auxstore::bench {
namespace {

using rados::PageKey;
using rados::RadosConnection;
using rados::RadosPageStore;
using rados::RadosUri;

constexpr double kMiB = 1024.0 * 1024.0;

struct Options {
  std::string uri;
  size_t size = 4u << 20;
  size_t count = 128;  // 512 MiB of 4 MiB pages: more than the OSDs' caches
  size_t in_flight = 16;
  int secs = 10;
  int runs = 3;
  size_t store_snapshots = 16;  // store level: snapshots of store_layers layers of --size
  size_t store_layers = 8;
  std::string local_dir = "/tmp/auxstore-rados-bench";
};

struct RunFigures {
  double bench_write = 0, bench_seq = 0, put = 0, read = 0;  // MiB/s
  double raw_read = 0;   // aio reads into librados's buffers, nothing copied or checked
  double read_into = 0;  // ReadPagesInto: into the caller's (staging) buffers, checked
  double store_put = -1, store_restore = -1, store_batch_restore = -1;  // -1: not built
  double store_put_uncopied = -1, store_batch_put = -1, store_batch_put_uncopied = -1;
  double store_into = -1, store_into_settled = -1, store_batch_settled = -1;
  // CPU per MiB: the `rados bench seq` process; this process restoring.
  double seq_cpu_ms_per_mib = 0, store_into_cpu = -1, store_batch_cpu = -1;
  // Options::shared_local_copies off: a lookup and a read each; a batch
  // lookup and one ReadSnapshotsInto. Copies on, no lookup: one call.
  double uncopied_each = -1, uncopied_batch = -1, pool_all = -1;
};

// What one `rados bench` run printed: "Bandwidth (MB/sec):" (MiB/s; -1 when
// it failed or printed none) and "Total time run:", and the CPU it used
// (the rados client's own cost per MiB, beside the store's).
struct RadosBenchRun {
  double mib_s = -1;
  double seconds = 0;
  double cpu_ms_per_mib = 0;
};

RadosBenchRun RunRadosBench(const std::string& cmd) {
  RadosBenchRun r;
  const double cpu = ChildrenCpuSeconds();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  double bw = -1;
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    if (std::sscanf(line, "Bandwidth (MB/sec): %lf", &bw) == 1) continue;
    if (std::sscanf(line, "Total time run: %lf", &r.seconds) == 1) continue;
  }
  if (pclose(p) != 0) return r;
  r.mib_s = bw;
  if (bw > 0 && r.seconds > 0) {
    r.cpu_ms_per_mib = (ChildrenCpuSeconds() - cpu) * 1000 / (bw * r.seconds);
  }
  return r;
}

// Page i of run r: distinct bytes for every (run, page), generated once per run.
std::vector<std::vector<uint8_t>> MakePages(const Options& o, int run) {
  std::vector<std::vector<uint8_t>> pages(o.count, std::vector<uint8_t>(o.size));
  for (size_t i = 0; i < o.count; ++i) {
    uint64_t x = (run + 1) * 0x9E3779B97F4A7C15ull + (i + 1) * 0xD1B54A32D192ED03ull;
    auto* words = reinterpret_cast<uint64_t*>(pages[i].data());
    for (size_t w = 0; w < o.size / 8; ++w) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      words[w] = x;
    }
  }
  return pages;
}

// The client's ceiling: the same reads, the bytes left in librados's
// buffers (no copy, no hash); the object count read back.
size_t RawRead(RadosConnection& conn, const std::vector<PageKey>& keys, size_t in_flight) {
  std::vector<librados::bufferlist> data(keys.size());
  std::vector<librados::ObjectReadOperation> ops(keys.size());
  size_t ok = 0;
  rados::RunWindowed(
      keys.size(), in_flight,
      [&](size_t i, librados::AioCompletion* c) {
        ops[i].read(0, 0, &data[i], nullptr);
        return conn.io().aio_operate(keys[i].ObjectName(), c, &ops[i], nullptr);
      },
      [&](size_t i, int rc, librados::AioCompletion*) {
        ok += rc >= 0;
        data[i].clear();
      });
  return ok;
}

bool RunOnce(const Options& o, const RadosUri& uri, int run, RunFigures& f) {
  const std::string rados = "rados -c '" + uri.conf_path + "' -p '" + uri.pool + "' ";
  const std::string t = " -t " + std::to_string(o.in_flight);
  f.bench_write = RunRadosBench(rados + "bench " + std::to_string(o.secs) +
                                " write --no-cleanup -b " + std::to_string(o.size) + t)
                      .mib_s;
  const RadosBenchRun seq = RunRadosBench(rados + "bench " + std::to_string(o.secs) + " seq" + t);
  f.bench_seq = seq.mib_s;
  f.seq_cpu_ms_per_mib = seq.cpu_ms_per_mib;
  if (std::system((rados + "cleanup > /dev/null 2>&1").c_str()) != 0 || f.bench_write < 0 ||
      f.bench_seq < 0) {
    std::fprintf(stderr, "rados bench failed (write %.1f, seq %.1f)\n", f.bench_write, f.bench_seq);
    return false;
  }

  // Each reader reads pages put just before it (as rados bench seq reads
  // what its write left): none reads objects another read already warmed.
  const double mib = static_cast<double>(o.count) * o.size / kMiB;
  std::vector<double> puts;
  for (int reader = 0; reader < 3; ++reader) {
    auto pages = MakePages(o, run * 3 + reader);
    std::vector<ByteSpan> spans(pages.begin(), pages.end());
    std::vector<PageKey> keys;
    {
      auto conn = RadosConnection::Open(uri);
      if (!conn.ok()) return std::fprintf(stderr, "%s\n", conn.status().ToString().c_str()), false;
      Stopwatch sw;
      auto put = RadosPageStore(**conn, o.in_flight).PutPages(spans);
      puts.push_back(mib / sw.Seconds());
      if (!put.ok()) return std::fprintf(stderr, "%s\n", put.status().ToString().c_str()), false;
      if (put->stored != o.count) {
        std::fprintf(stderr, "only %zu of %zu pages were new\n", put->stored, o.count);
        return false;
      }
      keys = put->keys;
    }
    auto conn = RadosConnection::Open(uri);  // a new client: nothing of the put cached
    if (!conn.ok()) return std::fprintf(stderr, "%s\n", conn.status().ToString().c_str()), false;
    size_t bad = 0;
    if (reader == 0) {
      Stopwatch sw;
      bad = keys.size() - RawRead(**conn, keys, o.in_flight);
      f.raw_read = mib / sw.Seconds();
    } else if (reader == 1) {
      Stopwatch sw;
      auto got = RadosPageStore(**conn, o.in_flight).ReadPages(keys);
      f.read = mib / sw.Seconds();
      for (size_t i = 0; i < keys.size(); ++i) bad += !got[i].ok() || *got[i] != pages[i];
    } else {
      // The restore's staging buffers: allocated and touched beforehand.
      HugeBuffer staging(o.count * o.size);
      std::vector<std::span<uint8_t>> dst;
      for (size_t i = 0; i < o.count; ++i) dst.emplace_back(staging.data() + i * o.size, o.size);
      Stopwatch sw;
      auto st = rados::ReadPagesInto(**conn, keys, dst, o.in_flight);
      f.read_into = mib / sw.Seconds();
      for (size_t i = 0; i < keys.size(); ++i) {
        bad += !st[i].ok() || std::memcmp(dst[i].data(), pages[i].data(), o.size) != 0;
      }
    }
    for (const PageKey& k : keys) (*conn)->io().remove(k.ObjectName());
    if (bad) return std::fprintf(stderr, "%zu pages read back wrong\n", bad), false;
  }
  f.put = Summarize(puts).median;
#ifdef AUXSTORE_BENCH_STORE_LEVEL
  RadosUri store_uri = uri;
  store_uri.ns += ".store";
  auto store =
      RunStoreLevel(store_uri, o.local_dir, o.store_snapshots, o.store_layers, o.size, run);
  if (!store.ok()) return std::fprintf(stderr, "%s\n", store.status().ToString().c_str()), false;
  f.store_put = store->put_mib_s;
  f.store_put_uncopied = store->uncopied_put_mib_s;
  f.store_batch_put = store->batch_put_mib_s;
  f.store_batch_put_uncopied = store->uncopied_batch_put_mib_s;
  f.store_restore = store->restore_mib_s;
  f.store_batch_restore = store->batch_restore_mib_s;
  f.store_batch_settled = store->batch_restore_settled_mib_s;
  f.store_into_cpu = store->into_cpu_ms_per_mib;
  f.store_batch_cpu = store->batch_cpu_ms_per_mib;
  f.store_into = store->restore_into_mib_s;
  f.store_into_settled = store->restore_into_settled_mib_s;
  f.uncopied_each = store->uncopied_each_mib_s;
  f.uncopied_batch = store->uncopied_batch_mib_s;
  f.pool_all = store->pool_into_all_mib_s;
#endif
  return true;
}

int Main(const Options& o) {
  auto uri = rados::ParseRadosUri(o.uri);
  if (!uri.ok()) return std::fprintf(stderr, "%s\n", uri.status().ToString().c_str()), 2;
  if (o.size == 0 || o.size % 8 != 0 || o.count == 0 || o.in_flight == 0 || o.runs < 1) {
    std::fprintf(
        stderr, "--size must be a positive multiple of 8; --count, --in-flight, --runs positive\n");
    return 2;
  }
  std::printf(
      "pool %s, objects of %zu bytes, %zu in flight; rados bench %d s; %zu pages (%.0f MiB) per "
      "run\n",
      uri->pool.c_str(), o.size, o.in_flight, o.secs, o.count,
      static_cast<double>(o.count) * o.size / kMiB);
  std::vector<double> bw, bs, put, read, put_ratio, read_ratio, into, into_ratio, raw;
  std::vector<double> sput, sput_ratio, srestore, srestore_ratio, sbatch, sbatch_ratio;
  std::vector<double> sinto, sinto_ratio, suncopied_each, suncopied_batch, spool_all;
  std::vector<double> suncopied_put, sbatch_put, suncopied_batch_put;
  for (int r = 0; r < o.runs; ++r) {
    RunFigures f;
    if (!RunOnce(o, *uri, r, f)) return 1;
    std::printf(
        "run %d: rados bench write %.1f, PutPages %.1f (%.2fx); rados bench seq %.1f, "
        "ReadPages %.1f (%.2fx), ReadPagesInto %.1f (%.2fx) MiB/s; raw aio read %.1f\n",
        r + 1, f.bench_write, f.put, f.put / f.bench_write, f.bench_seq, f.read,
        f.read / f.bench_seq, f.read_into, f.read_into / f.bench_seq, f.raw_read);
    std::fflush(stdout);
    bw.push_back(f.bench_write), bs.push_back(f.bench_seq), put.push_back(f.put),
        read.push_back(f.read);
    put_ratio.push_back(f.put / f.bench_write), read_ratio.push_back(f.read / f.bench_seq);
    into.push_back(f.read_into), into_ratio.push_back(f.read_into / f.bench_seq);
    raw.push_back(f.raw_read);
    if (f.store_put >= 0) {
      std::printf(
          "run %d, store level: PutSnapshot %.1f (%.2fx bench write), cold restore %.1f (%.2fx "
          "bench seq), batched into memory %.1f (%.2fx; local copies written %.2fx), into "
          "memory %.1f (%.2fx; local copies written %.2fx) MiB/s\n",
          r + 1, f.store_put, f.store_put / f.bench_write, f.store_restore,
          f.store_restore / f.bench_seq, f.store_batch_restore, f.store_batch_restore / f.bench_seq,
          f.store_batch_settled / f.bench_seq, f.store_into, f.store_into / f.bench_seq,
          f.store_into_settled / f.bench_seq);
      std::printf(
          "run %d, CPU ms per MiB: rados bench seq %.2f; restores until every local copy is "
          "written: batched %.2f, a LongestPrefix and a ReadLayersInto each %.2f\n",
          r + 1, f.seq_cpu_ms_per_mib, f.store_batch_cpu, f.store_into_cpu);
      std::printf(
          "run %d, no local copies (shared_local_copies off): PutSnapshot %.1f (%.2fx bench "
          "write), a LongestPrefix and a ReadLayersInto each %.1f (%.2fx bench seq), a "
          "CountLeadingStored and one ReadSnapshotsInto %.1f (%.2fx); copies on, one "
          "ReadSnapshotsInto with no lookup %.1f (%.2fx) MiB/s\n",
          r + 1, f.store_put_uncopied, f.store_put_uncopied / f.bench_write, f.uncopied_each,
          f.uncopied_each / f.bench_seq, f.uncopied_batch, f.uncopied_batch / f.bench_seq,
          f.pool_all, f.pool_all / f.bench_seq);
      std::printf(
          "run %d, one PutSnapshots of all: %.1f (%.2fx bench write), without local copies "
          "%.1f (%.2fx) MiB/s\n",
          r + 1, f.store_batch_put, f.store_batch_put / f.bench_write, f.store_batch_put_uncopied,
          f.store_batch_put_uncopied / f.bench_write);
      suncopied_put.push_back(f.store_put_uncopied / f.bench_write);
      sbatch_put.push_back(f.store_batch_put / f.bench_write);
      suncopied_batch_put.push_back(f.store_batch_put_uncopied / f.bench_write);
      suncopied_each.push_back(f.uncopied_each / f.bench_seq);
      suncopied_batch.push_back(f.uncopied_batch / f.bench_seq);
      spool_all.push_back(f.pool_all / f.bench_seq);
      sinto.push_back(f.store_into), sinto_ratio.push_back(f.store_into / f.bench_seq);
      sput.push_back(f.store_put), sput_ratio.push_back(f.store_put / f.bench_write);
      srestore.push_back(f.store_restore), srestore_ratio.push_back(f.store_restore / f.bench_seq);
      sbatch.push_back(f.store_batch_restore),
          sbatch_ratio.push_back(f.store_batch_restore / f.bench_seq);
    }
  }
  auto show = [](const char* what, const std::vector<double>& v, const char* unit) {
    Spread s = Summarize(v);
    std::printf("  %-22s %8.2f [%.2f, %.2f] %s\n", what, s.median, s.min, s.max, unit);
  };
  std::printf("median [min, max] of %d runs:\n", o.runs);
  show("rados bench write", bw, "MiB/s");
  show("PutPages", put, "MiB/s");
  show("put / bench write", put_ratio, "");
  show("rados bench seq", bs, "MiB/s");
  show("ReadPages (cold)", read, "MiB/s");
  show("read / bench seq", read_ratio, "");
  show("ReadPagesInto (cold)", into, "MiB/s");
  show("into / bench seq", into_ratio, "");
  show("raw aio read (cold)", raw, "MiB/s");
  if (!sput.empty()) {
    show("store PutSnapshot", sput, "MiB/s");
    show("store put / bench write", sput_ratio, "");
    show("store cold restore", srestore, "MiB/s");
    show("restore / bench seq", srestore_ratio, "");
    show("store batched into memory", sbatch, "MiB/s");
    show("batched / bench seq", sbatch_ratio, "");
    show("store restore into memory", sinto, "MiB/s");
    show("into memory / bench seq", sinto_ratio, "");
    show("no copies, put / write", suncopied_put, "");
    show("PutSnapshots / write", sbatch_put, "");
    show("no copies, PutSnapshots / write", suncopied_batch_put, "");
    show("no copies, each / seq", suncopied_each, "");
    show("no copies, batch / seq", suncopied_batch, "");
    show("one call, no lookup / seq", spool_all, "");
  }
  return 0;
}

}  // namespace
}  // namespace auxstore::bench

int main(int argc, char** argv) {
  auxstore::bench::Options o;
  CLI::App app{"the shared tier's page puts and cold reads beside rados bench"};
  app.add_option("uri", o.uri, "rados://POOL?conf=PATH[&namespace=NS...]")->required();
  app.add_option("--size", o.size, "object (page) size in bytes");
  app.add_option("--count", o.count, "pages put and read per run");
  app.add_option("--in-flight", o.in_flight, "aio operations in flight (rados bench -t)");
  app.add_option("--secs", o.secs, "rados bench duration");
  app.add_option("--runs", o.runs, "runs (medians over them)");
  app.add_option("--store-snapshots", o.store_snapshots, "store level: snapshots per run");
  app.add_option("--store-layers", o.store_layers, "store level: layers of --size bytes each");
  app.add_option("--local-dir", o.local_dir, "store level: the stores' local directories");
  CLI11_PARSE(app, argc, argv);
  return auxstore::bench::Main(o);
}
