// auxstore_bench: auxstore against the physical limits and against
// file-per-blob, all measured side by side in this one process on the same
// bytes. Prints medians with [min, max] over --runs and the ratios; --json
// for machines. See bench/RESULTS.md for the figures and the command.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "bench/baselines.h"
#include "bench/blobdb_contender.h"
#include "bench/chain_bench.h"
#include "bench/file_per_blob.h"
#include "bench/instructions.h"
#include "bench/measure.h"
#include "bench/pipeline_contender.h"
#include "bench/store_contender.h"
#include "bench/workload.h"

namespace auxstore::bench {
namespace {

struct Row {
  std::string name;
  Spread gbps;
  double amplification = -1;
};

Spread Rate(const std::vector<double>& seconds, uint64_t bytes) {
  std::vector<double> r;
  for (double s : seconds) r.push_back(s > 0 ? bytes / s / 1e9 : 0);
  return Summarize(r);
}

struct Config {
  std::string dir = "/tmp/auxstore-bench";
  uint64_t bytes = 256u << 20;
  int runs = 3;
  uint32_t realistic_tokens = 32768;
  uint64_t manifests = 0;
  uint32_t probes = 2000;
  std::string only;
  std::string contenders;  // substring filter on contender names; empty = all
  bool json = false;
  bool chains = false;
  bool instructions = false;
  uint32_t chain_block = 64, chain_scale = 1;
};

// Reads everything under `path` once, untimed. On the project's VMs the
// first read of freshly written blocks runs at about half the speed of later
// cold reads (page cache dropped each time; measured for plain files and the
// store alike), while a restore reads snapshots written long before: every
// cold contender is measured on settled data.
void SettleColdReads(const std::string& path) {
  if (std::filesystem::is_directory(path)) {
    (void)RawReadTreeCold(path);
  } else {
    (void)RawReadCold(path, UINT64_MAX);
  }
}

nlohmann::json RunWorkload(const Config& c, const Workload& w) {
  WorkloadData data(w);
  const uint64_t n = w.total_bytes();
  const std::string raw_file = c.dir + "/raw.bin";
  FilePerBlob fpb(c.dir + "/file-per-blob");
  StoreContender aux(c.dir + "/store");
  std::map<std::string, std::vector<double>> t;
  HugeBuffer memcpy_dst(n);
  std::vector<double> wa_sync, wa_async, wa_blobdb, rss_growth;
  uint64_t staging_bound = 0;
  // A contender runs when --contenders is empty or one of its comma-separated
  // parts is a substring of the contender's name. The auxstore reads need the
  // store written, so its sync write always runs.
  auto want = [&](const std::string& name) {
    if (c.contenders.empty()) return true;
    for (size_t b = 0; b <= c.contenders.size();) {
      const size_t e = std::min(c.contenders.find(',', b), c.contenders.size());
      if (e > b && name.find(c.contenders.substr(b, e - b)) != std::string::npos) return true;
      b = e + 1;
    }
    return false;
  };
  auto time = [&](const std::string& name, const std::function<double()>& f) {
    if (want(name)) t[name].push_back(f());
  };
  for (int run = 0; run < c.runs; ++run) {
    // Interleaved per run so drift on a shared machine hits every contender.
    if (want("raw write+fdatasync") || want("raw read (cold)")) {  // the read needs the file
      const double seconds = RawWrite(raw_file, data.All());
      if (want("raw write+fdatasync")) t["raw write+fdatasync"].push_back(seconds);
      SettleColdReads(raw_file);
    }
    time("raw read (cold)", [&] { return RawReadCold(raw_file, n); });
    time("memcpy", [&] { return Memcpy(data.All(), memcpy_dst.span()); });
    time("xxh3-64", [&] { return Xxh3(data.All()); });
    if (want("file-per-blob")) {
      t["file-per-blob write"].push_back(fpb.Write(data));
      SettleColdReads(c.dir + "/file-per-blob");
      t["file-per-blob read (cold)"].push_back(fpb.Read(data, true));
      t["file-per-blob read (warm)"].push_back(fpb.Read(data, false));
    }
    if (want("auxstore write async+flush")) {
      WriteResult a = aux.Write(data, Durability::kAsync);
      t["auxstore write async+flush"].push_back(a.seconds);
      wa_async.push_back(a.amplification);
    }
    if (want("rocksdb blobdb write (WAL, sync)")) {
      WriteResult b = WriteBlobDb(c.dir + "/blobdb", data);
      t["rocksdb blobdb write (WAL, sync)"].push_back(b.seconds);
      wa_blobdb.push_back(b.amplification);
      std::filesystem::remove_all(c.dir + "/blobdb");
    }
    WriteResult s = aux.Write(data, Durability::kSync);
    SettleColdReads(c.dir + "/store");
    if (want("auxstore write sync")) {
      t["auxstore write sync"].push_back(s.seconds);
      wa_sync.push_back(s.amplification);
    }
    time("auxstore read (cold)", [&] { return aux.ReadLayers(data, true); });
    time("auxstore read (warm)", [&] { return aux.ReadLayers(data, false); });
    time("auxstore read into (cold)", [&] { return aux.ReadLayersInto(data, true); });
    time("auxstore read into (warm)", [&] { return aux.ReadLayersInto(data, false); });
    // The raw read of exactly the blocks the restore reads.
    time("raw read of the store's files (cold)", [&] { return RawReadTreeCold(c.dir + "/store"); });
    if (want("auxstore restore pipeline (cold)")) {
      PipelineRestore pc = RestoreThroughPipeline(c.dir + "/store", data, true);
      t["auxstore restore pipeline (cold)"].push_back(pc.seconds);
      rss_growth.push_back(static_cast<double>(pc.peak_rss_growth_bytes));
      staging_bound = pc.staging_bound_bytes;
    }
    time("auxstore restore pipeline (warm)",
         [&] { return RestoreThroughPipeline(c.dir + "/store", data, false).seconds; });
  }
  std::filesystem::remove(raw_file);
  auto g = [&](const std::string& k) { return Rate(t[k], n); };
  auto ratio = [&](const std::string& a, const std::string& b) -> nlohmann::json {
    if (!t.count(a) || !t.count(b)) return nullptr;  // a contender filtered out
    return g(a).median / g(b).median;
  };
  nlohmann::json j;
  j["workload"] = w.name;
  j["bytes"] = n;
  j["runs"] = c.runs;
  for (auto& [k, v] : t) {
    Spread s = g(k);
    j["gbps"][k] = {{"median", s.median}, {"min", s.min}, {"max", s.max}};
  }
  auto median = [](const std::vector<double>& v) -> nlohmann::json {
    if (v.empty()) return nullptr;
    return Summarize(v).median;
  };
  j["write_amplification"] = {
      {"sync", median(wa_sync)}, {"async", median(wa_async)}, {"blobdb", median(wa_blobdb)}};
  j["ratios"] = {
      {"sync write / raw write", ratio("auxstore write sync", "raw write+fdatasync")},
      {"cold read / raw read", ratio("auxstore read (cold)", "raw read (cold)")},
      {"warm read / memcpy", ratio("auxstore read (warm)", "memcpy")},
      {"cold read into / raw read", ratio("auxstore read into (cold)", "raw read (cold)")},
      {"warm read into / memcpy", ratio("auxstore read into (warm)", "memcpy")},
      {"sync write / file-per-blob", ratio("auxstore write sync", "file-per-blob write")},
      {"sync write / blobdb write",
       ratio("auxstore write sync", "rocksdb blobdb write (WAL, sync)")},
      {"cold read / file-per-blob", ratio("auxstore read (cold)", "file-per-blob read (cold)")},
      {"warm read / file-per-blob", ratio("auxstore read (warm)", "file-per-blob read (warm)")},
      {"pipeline cold restore / raw read",
       ratio("auxstore restore pipeline (cold)", "raw read (cold)")},
      {"pipeline cold restore / raw read of the same files",
       ratio("auxstore restore pipeline (cold)", "raw read of the store's files (cold)")},
      {"pipeline warm restore / memcpy", ratio("auxstore restore pipeline (warm)", "memcpy")},
      {"pipeline cold restore / file-per-blob",
       ratio("auxstore restore pipeline (cold)", "file-per-blob read (cold)")},
  };
  j["restore_memory"] = {{"staging_bound_bytes", staging_bound},
                         {"peak_rss_growth_bytes", median(rss_growth)}};
  return j;
}

// A figure, or "-" where its contender was filtered out (--contenders).
std::string Fmt(const nlohmann::json& v, const char* format = "%.2f", double scale = 1) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v.get<double>() * scale);
  return buf;
}

void PrintWorkload(const nlohmann::json& j) {
  std::printf("\n## %s — %.0f MiB, median [min, max] of %d runs\n\n",
              j["workload"].get<std::string>().c_str(), j["bytes"].get<double>() / 1048576.0,
              j["runs"].get<int>());
  std::printf("| contender | GB/s |\n| --- | --- |\n");
  for (auto& [k, v] : j["gbps"].items()) {
    std::printf("| %s | %.2f [%.2f, %.2f] |\n", k.c_str(), v["median"].get<double>(),
                v["min"].get<double>(), v["max"].get<double>());
  }
  const auto& wa = j["write_amplification"];
  std::printf(
      "\nwrite amplification: auxstore sync %s, async %s; blobdb %s\n\n| ratio | median "
      "|\n| --- | --- |\n",
      Fmt(wa["sync"], "%.3f").c_str(), Fmt(wa["async"], "%.3f").c_str(),
      Fmt(wa["blobdb"], "%.3f").c_str());
  for (auto& [k, v] : j["ratios"].items()) std::printf("| %s | %s |\n", k.c_str(), Fmt(v).c_str());
  const auto& mem = j["restore_memory"];
  std::printf("\nrestore peak RSS growth %s MiB (staging bound %s MiB)\n",
              Fmt(mem["peak_rss_growth_bytes"], "%.1f", 1 / 1048576.0).c_str(),
              Fmt(mem["staging_bound_bytes"], "%.1f", 1 / 1048576.0).c_str());
}

int Main(int argc, char** argv) {
  Config c;
  CLI::App app{"auxstore benchmarks: ratios against raw I/O, memcpy and file-per-blob"};
  app.add_option("--dir", c.dir, "scratch directory (on the disk to measure)");
  app.add_option("--bytes", c.bytes, "payload bytes per workload");
  app.add_option("--runs", c.runs, "repetitions (median reported)")->check(CLI::Range(1, 50));
  app.add_option("--realistic-tokens", c.realistic_tokens, "tokens of the realistic snapshot");
  app.add_option("--only", c.only, "run only workloads whose name contains this");
  app.add_option("--contenders", c.contenders,
                 "run only contenders whose name contains one of these comma-separated parts "
                 "(ratios needing others print null)");
  app.add_option("--manifests", c.manifests,
                 "also measure open time and LongestPrefix with this many snapshots stored");
  app.add_option("--probes", c.probes, "LongestPrefix calls to time");
  app.add_flag("--json", c.json, "print JSON instead of tables");
  app.add_flag("--chains", c.chains,
               "run only the chain workloads: paged vs whole-blob layout (issue 14)");
  app.add_flag("--instructions", c.instructions,
               "count instructions per restored byte (warm ReadLayerInto, ReadLayer, the host "
               "restore) against memcpy's and XXH3's (issue 25); --bytes 64 MiB is plenty");
  app.add_option("--chain-block", c.chain_block, "tokens per block and page (chains)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--chain-scale", c.chain_scale, "divide the chains' token counts (quick runs)")
      ->check(CLI::Range(1, 256));
  CLI11_PARSE(app, argc, argv);

  std::filesystem::create_directories(c.dir);
  nlohmann::json out;
  out["command"] = [&] {
    std::string s;
    for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
    return s;
  }();
  if (c.chains) {
    out["chains"] =
        RunChainWorkloads({c.dir, c.runs, c.chain_block, c.chain_scale, c.only}, c.json);
    if (c.json) std::printf("%s\n", out.dump(2).c_str());
    std::filesystem::remove_all(c.dir);
    return 0;
  }
  for (const Workload& w : StandardWorkloads(c.bytes, c.realistic_tokens)) {
    if (!c.only.empty() && w.name.find(c.only) == std::string::npos) continue;
    if (c.instructions) {
      out["instructions"].push_back(CountInstructions(c.dir + "/store", w, c.runs, !c.json));
      continue;
    }
    out["workloads"].push_back(RunWorkload(c, w));
    if (!c.json) PrintWorkload(out["workloads"].back());
  }
  if (c.manifests) {
    IndexFigures f = MeasureIndex(c.dir + "/index", c.manifests, c.probes);
    out["index"] = {{"manifests", f.manifests},
                    {"open_ms", f.open_ms},
                    {"index_ready_ms", f.index_ready_ms},
                    {"longest_prefix_p50_us", f.longest_p50_us},
                    {"longest_prefix_p99_us", f.longest_p99_us}};
    if (!c.json) {
      std::printf(
          "\n## index: %llu snapshots stored\n\nopen %.1f ms (background index ready "
          "at %.0f ms); LongestPrefix over 64 candidates p50 %.1f us, p99 %.1f us\n",
          (unsigned long long)f.manifests, f.open_ms, f.index_ready_ms, f.longest_p50_us,
          f.longest_p99_us);
    }
  }
  if (c.json) std::printf("%s\n", out.dump(2).c_str());
  std::filesystem::remove_all(c.dir);
  return 0;
}

}  // namespace
}  // namespace auxstore::bench

int main(int argc, char** argv) { return auxstore::bench::Main(argc, argv); }
