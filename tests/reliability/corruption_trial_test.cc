// Battery 4: on-disk corruption. A closed store with known contents (SSTs
// from flushes and ingests, a live WAL, MANIFEST, OPTIONS, CURRENT and the
// watermark) is copied; one file of the copy is damaged (random bytes
// flipped, a 4 KiB page zeroed, truncated at a random offset, or deleted);
// then the copy is opened and every known snapshot read. Acceptable:
//   refused   Open fails with a message (and deleted no SST file)
//   detected  Open succeeds; some reads return Corruption/IOError, the rest
//             return the right bytes
//   intact    Open succeeds; every read returns the right bytes
// Failures: a read returning wrong bytes, a committed snapshot missing
// (NotFound) though nothing reported an error for it, data files destroyed.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "auxstore/store.h"
#include "store/rocks_options.h"
#include "tests/reliability/crash_harness.h"
#include "tests/reliability/snapshot_spec.h"
#include "tests/support/test_util.h"

namespace auxstore::reliability {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kFirstSeed = 700;
constexpr uint64_t kFlushedSnapshots = 16, kWalSnapshots = 6;

Options TrialOptions() {
  Options o;
  o.chunk_bytes = kBatteryChunkBytes;
  o.background_maintenance = false;
  return o;
}

void PutSeeds(Store& store, uint64_t from, uint64_t to) {
  auto ns = store.RegisterNamespace(BatterySpec());
  ASSERT_TRUE(ns.ok()) << ns.status().ToString();
  for (uint64_t seed = from; seed < to; ++seed) {
    const SnapshotSpec spec = MakeSnapshot(seed);
    Status s =
        store.PutSnapshot(*ns, spec.prefix, spec.token_count, spec.blobs(), spec.put_options());
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
}

// Flushes every memtable to SSTs with RocksDB itself, so WAL-path snapshots
// also live in SST files (the store has no API for that).
void FlushMemtables(const std::string& dir) {
  store_internal::RocksSetup setup = store_internal::MakeRocksSetup();
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(setup.db, dir, setup.cfs, &handles, &raw).ok());
  ASSERT_TRUE(raw->Flush(rocksdb::FlushOptions(), handles).ok());
  for (auto* h : handles) (void)raw->DestroyColumnFamilyHandle(h);
  (void)raw->Close();
  delete raw;
}

std::string TypeOf(const fs::path& p) {
  const std::string name = p.filename().string();
  if (p.extension() == ".sst") return "SST";
  if (p.extension() == ".log") return "WAL";
  if (name.rfind("MANIFEST-", 0) == 0) return "MANIFEST";
  if (name.rfind("OPTIONS-", 0) == 0) return "OPTIONS";
  if (name == "CURRENT") return "CURRENT";
  if (name == "AUXSTORE-WATERMARK") return "WATERMARK";
  return "";
}

std::set<std::string> DataFiles(const std::string& dir) {
  std::set<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) {
    const std::string t = TypeOf(e.path());
    // WALs are not counted: recovery at open legitimately turns them into SSTs.
    if (t == "SST") out.insert(e.path().filename().string());
  }
  return out;
}

std::string Damage(const fs::path& file, std::mt19937_64& rng) {
  std::error_code ec;
  const uint64_t size = fs::file_size(file, ec);
  const int how = size == 0 ? 3 : static_cast<int>(rng() % 4);
  if (how == 3) {
    fs::remove(file, ec);
    return "delete";
  }
  if (how == 2) {
    fs::resize_file(file, rng() % size, ec);
    return "truncate";
  }
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  if (how == 1) {
    const uint64_t page = (rng() % ((size + 4095) / 4096)) * 4096;
    const std::string zeros(std::min<uint64_t>(4096, size - page), '\0');
    f.seekp(static_cast<std::streamoff>(page));
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
    return "zero-page";
  }
  const int flips = 1 + static_cast<int>(rng() % 8);
  for (int i = 0; i < flips; ++i) {
    const uint64_t at = rng() % size;
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.get(c);
    c = static_cast<char>(c ^ (1 << (rng() % 8)));
    f.seekp(static_cast<std::streamoff>(at));
    f.put(c);
  }
  return "flip";
}

struct Outcome {
  std::string name;  // refused / detected / intact / WRONG-BYTES / SILENT-LOSS / DESTROYED
  std::string detail;
};

Outcome RunTrial(const std::string& dir) {
  const std::set<std::string> before = DataFiles(dir);
  auto opened = Store::Open(TrialOptions(), dir);
  if (!opened.ok()) {
    const std::set<std::string> after = DataFiles(dir);
    for (const std::string& f : before) {
      if (!after.count(f)) {
        return {"DESTROYED", f + " deleted by a refused open: " + opened.status().ToString()};
      }
    }
    if (opened.status().message().empty()) return {"SILENT-LOSS", "refused without a message"};
    return {"refused", opened.status().ToString()};
  }
  auto store = std::move(opened).value();
  const NamespaceId ns = NamespaceFingerprint(BatterySpec());
  bool any_error = false;
  // Every manifest first: before any read, a snapshot missing is a loss
  // nobody reported.
  std::vector<std::pair<SnapshotSpec, Manifest>> present;
  for (uint64_t seed = kFirstSeed; seed < kFirstSeed + kFlushedSnapshots + kWalSnapshots; ++seed) {
    SnapshotSpec spec = MakeSnapshot(seed);
    auto m = store->GetManifest(ns, spec.prefix);
    if (!m.ok()) {
      if (m.error().IsNotFound()) {
        return {"SILENT-LOSS", "seed " + std::to_string(seed) + ": " + m.status().ToString()};
      }
      any_error = true;
      continue;
    }
    present.emplace_back(std::move(spec), std::move(*m));
  }
  // The puts whose records a snapshot reads (its own and its pages' owners).
  auto puts_of = [](const Manifest& m) {
    std::set<PutId> puts{m.put_id};
    for (const LayerEntry& e : m.layers)
      for (const PageRun& r : e.runs) puts.insert(r.owner);
    return puts;
  };
  std::set<PutId> reported;  // puts of snapshots whose reads reported damage
  for (const auto& [spec, manifest] : present) {
    const std::set<PutId> mine = puts_of(manifest);
    for (const SnapshotLayer& l : spec.layers) {
      auto got = store->GetLayer(ns, spec.prefix, l.layer);
      if (!got.ok()) {
        // Corruption/IOError are reports. NotFound is one only when an
        // earlier read that reported damage quarantined this snapshot too,
        // because they read records of the same put (turns of one
        // conversation share pages); otherwise it is a loss nobody reported.
        const bool shares_reported =
            std::any_of(mine.begin(), mine.end(), [&](PutId p) { return reported.count(p) > 0; });
        if (!got.error().IsNotFound()) reported.insert(mine.begin(), mine.end());
        if (got.error().IsNotFound() && !shares_reported) {
          return {"SILENT-LOSS", "seed " + std::to_string(spec.seed) + " layer " +
                                     std::to_string(l.layer) + ": " + got.status().ToString()};
        }
        any_error = true;
        break;
      }
      if (*got != l.bytes) {
        return {"WRONG-BYTES",
                "seed " + std::to_string(spec.seed) + " layer " + std::to_string(l.layer)};
      }
    }
  }
  return {any_error ? "detected" : "intact", ""};
}

TEST(Corruption, DamagedFilesAreRefusedOrDetectedNeverReturnedNorSilentlyLost) {
  const int trials = BatteryCycles(200);
  testing::TempDir root;
  const std::string build = root.Sub("build"), ref = root.Sub("reference");
  {
    auto s = Store::Open(TrialOptions(), build);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    PutSeeds(**s, kFirstSeed, kFirstSeed + kFlushedSnapshots);
  }
  FlushMemtables(build);
  {
    // The last snapshots live only in the WAL: a clean close would flush
    // them, so the reference is a copy taken while the store is open, after
    // kSync puts and Flush() (every file synced, nothing in flight) - what a
    // crash at that moment leaves.
    auto s = Store::Open(TrialOptions(), build);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    PutSeeds(**s, kFirstSeed + kFlushedSnapshots, kFirstSeed + kFlushedSnapshots + kWalSnapshots);
    ASSERT_TRUE((*s)->Flush().ok());
    std::error_code ec;
    fs::copy(build, ref, fs::copy_options::recursive, ec);
    ASSERT_FALSE(ec) << ec.message();
  }
  std::map<std::string, std::vector<fs::path>> by_type;
  for (auto& e : fs::directory_iterator(ref)) {
    const std::string t = TypeOf(e.path());
    if (!t.empty()) by_type[t].push_back(e.path().filename());
    if (!t.empty()) {
      std::printf("reference file %-24s %-9s %10llu bytes\n", e.path().filename().string().c_str(),
                  t.c_str(), static_cast<unsigned long long>(e.file_size()));
    }
  }
  for (const char* t : {"SST", "WAL", "MANIFEST", "OPTIONS", "CURRENT", "WATERMARK"}) {
    ASSERT_TRUE(by_type.count(t)) << "the reference store has no " << t << " file";
  }
  {  // undamaged, the copy reads back whole (opening `ref` itself would change its files)
    const std::string copy = root.Sub("undamaged");
    std::error_code ec;
    fs::copy(ref, copy, fs::copy_options::recursive, ec);
    ASSERT_FALSE(ec) << ec.message();
    const Outcome o = RunTrial(copy);
    ASSERT_EQ(o.name, "intact") << o.detail;
  }

  std::mt19937_64 rng(61);
  std::vector<std::string> types;
  for (auto& [t, files] : by_type) types.push_back(t);
  // type -> outcome -> count; and damage kind -> outcome -> count
  std::map<std::string, std::map<std::string, int>> table, by_damage;
  int failures = 0;
  for (int i = 0; i < trials; ++i) {
    const std::string type = types[rng() % types.size()];
    const fs::path file = by_type[type][rng() % by_type[type].size()];
    const std::string trial = root.Sub("trial");
    std::error_code ec;
    fs::remove_all(trial, ec);
    fs::copy(ref, trial, fs::copy_options::recursive, ec);
    ASSERT_FALSE(ec) << ec.message();
    const std::string damage = Damage(fs::path(trial) / file, rng);
    const Outcome o = RunTrial(trial);
    ++table[type][o.name];
    ++by_damage[damage][o.name];
    const bool bad = o.name == "WRONG-BYTES" || o.name == "SILENT-LOSS" || o.name == "DESTROYED";
    if (bad) {
      ++failures;
      ADD_FAILURE() << "trial " << i << ": " << damage << " " << file.string() << " -> " << o.name
                    << ": " << o.detail;
    }
  }
  auto print = [](const char* title, const std::map<std::string, std::map<std::string, int>>& t) {
    const char* cols[] = {"refused",     "detected",    "intact",
                          "WRONG-BYTES", "SILENT-LOSS", "DESTROYED"};
    std::printf("%-10s", title);
    for (const char* c : cols) std::printf(" %12s", c);
    std::printf("\n");
    for (const auto& [row, counts] : t) {
      std::printf("%-10s", row.c_str());
      for (const char* c : cols) {
        auto it = counts.find(c);
        std::printf(" %12d", it == counts.end() ? 0 : it->second);
      }
      std::printf("\n");
    }
  };
  std::printf("RELIABILITY corruption: trials=%d failures=%d\n", trials, failures);
  print("file", table);
  print("damage", by_damage);
}

}  // namespace
}  // namespace auxstore::reliability
