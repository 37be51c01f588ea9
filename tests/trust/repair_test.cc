// Trust finding 6: `auxstore verify --repair` removes exactly the corrupt.
// A store of many tiny snapshots (C++ API, WAL path) is closed cleanly, so
// their records are flushed into one shared records SST where a 4 KiB block
// holds records of many snapshots. Each trial, on a copy: flip 1-8 random
// bits in that SST; in a child (auxstore_trust_child, C ABI, read-only so
// nothing is quarantined) read every snapshot and note which read back
// exactly; run the real `auxstore verify --json` and `auxstore verify
// --repair --json`; read every snapshot again.
// Required: every snapshot that read back exactly before is still present and
// exact after the repair; every snapshot verify named corrupt is one whose
// own read failed; verify reports damage whenever a read failed or the open
// was refused; every snapshot whose read failed is gone after the repair (it
// reported removing it); and after the repair `verify` finds the store clean
// and it opens. Trials whose read-only open was refused (the flips hit an
// index block, footer or properties block) still run verify, which must
// report the damage, and the repair, which sets the unopenable table aside
// (refused_open_repair.h): after it the store opens and `verify` finds it
// clean (issue 20). Counts: healthy removed, corrupt removed, trials where
// verify reported damage it tied to no snapshot.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "auxstore/store.h"
#include "tests/trust/trust_spec.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

constexpr uint64_t kSnapshots = 300;

void FlipBits(const std::string& file, std::mt19937_64& rng, std::string* what) {
  const uint64_t size = FileSize(file);
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  const int flips = 1 + static_cast<int>(rng() % 8);
  *what = std::to_string(flips) + " bits at";
  for (int i = 0; i < flips; ++i) {
    const uint64_t at = rng() % size;
    const int bit = static_cast<int>(rng() % 8);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.get(c);
    c = static_cast<char>(c ^ (1 << bit));
    f.seekp(static_cast<std::streamoff>(at));
    f.put(c);
    *what += " " + std::to_string(at) + "." + std::to_string(bit);
  }
}

ReadReport ReadAll(const std::string& dir, std::string* problem) {
  ProcResult r = RunProcess({ChildPath(), "read", "--ro", "--store", dir, "--profile", "tiny",
                             "--seeds", "1-" + std::to_string(kSnapshots)});
  if (!r.Exited(0)) *problem = "reader child " + r.Describe() + ": " + r.ErrTail(600);
  return ParseRead(r);
}

std::set<std::string> Prefixes(const nlohmann::json& arr) {
  std::set<std::string> out;
  if (!arr.is_array()) return out;
  for (const auto& c : arr) out.insert(c.value("prefix", ""));
  return out;
}

TEST(TrustRepair, RepairRemovesExactlyTheCorruptSnapshots) {
  const int trials = Cycles(60);
  ScratchDir root("repair");
  const std::string ref = root.Sub("reference");
  {
    Options o;
    o.chunk_bytes = 64 << 10;
    o.background_maintenance = false;
    auto s = Store::Open(o, ref);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto ns = (*s)->RegisterNamespace(BatterySpec());
    ASSERT_TRUE(ns.ok());
    for (uint64_t seed = 1; seed <= kSnapshots; ++seed) {
      const SnapshotSpec spec = *MakeProfile("tiny", seed);
      ASSERT_TRUE(
          (*s)->PutSnapshot(*ns, spec.prefix, spec.token_count, spec.blobs(), spec.put_options())
              .ok());
    }
  }  // clean close: every record flushed into shared SSTs
  std::string records_sst;
  for (const auto& f : FilesOfType(ref, "SST")) {
    if (records_sst.empty() || FileSize(ref + "/" + f) > FileSize(ref + "/" + records_sst)) {
      records_sst = f;
    }
  }
  ASSERT_FALSE(records_sst.empty());
  std::printf("records SST: %s, %llu bytes (the largest SST)\n", records_sst.c_str(),
              (unsigned long long)FileSize(ref + "/" + records_sst));
  std::map<std::string, uint64_t> seed_of;
  for (uint64_t seed = 1; seed <= kSnapshots; ++seed) {
    seed_of[testing::PrefixFromSeed(seed).ToHex()] = seed;
  }

  struct Counts {
    int healthy_removed = 0, healthy_damaged = 0, corrupt_removed = 0, blamed_healthy = 0,
        unattributed = 0, damaged_trials = 0, verify_missed = 0, tool_errors = 0, refused_open = 0,
        reader_crashed = 0, damaged_kept = 0, unclean_after_repair = 0, refused_after_repair = 0;
  } n;
  std::mutex mu;
  std::vector<std::pair<int, std::string>> failures;  // (trial, what), a few per trial
  std::vector<std::pair<int, std::string>> lines;
  int next = 0;
  // Two workers, each on its own copy; trial i always uses rng seed 4242 + i.
  auto worker = [&](int w) {
    const std::string trial = root.Sub("trial-" + std::to_string(w));
    for (;;) {
      int i;
      {
        std::lock_guard lock(mu);
        if (next == trials) return;
        i = next++;
      }
      std::mt19937_64 rng(4242 + i);
      std::vector<std::string> fail;
      auto report = [&](const std::string& what) {
        if (fail.size() < 4) fail.push_back(what);
      };
      Counts c;
      RemoveTree(trial);
      std::string why, flips;
      if (!CopyTree(ref, trial, &why)) {
        std::lock_guard lock(mu);
        failures.push_back({i, why});
        return;
      }
      FlipBits(trial + "/" + records_sst, rng, &flips);
      std::string summary = flips;
      [&] {
        std::string problem;
        const ReadReport before = ReadAll(trial, &problem);
        if (!problem.empty()) {
          ++c.reader_crashed;
          report("before repair: " + problem);
          return;
        }
        // verify --repair, then verify again: after the repair it finds the
        // store clean (exit 0) whatever the damage held.
        auto repair_then_verify = [&](nlohmann::json* vj, nlohmann::json* rj) {
          ProcResult v = RunCli({"verify", trial, "--json"});
          *vj = nlohmann::json::parse(v.out, nullptr, false);
          ProcResult rp = RunCli({"verify", "--repair", trial, "--json"});
          *rj = nlohmann::json::parse(rp.out, nullptr, false);
          ProcResult again = RunCli({"verify", trial, "--json"});
          if (v.signal || rp.signal || again.signal || vj->is_discarded() || rj->is_discarded()) {
            ++c.tool_errors;
            report("verify " + v.Describe() + ", verify --repair " + rp.Describe() + "\n" +
                   v.out.substr(0, 500) + v.ErrTail(500) + rp.out.substr(0, 500) + rp.ErrTail(500));
            return false;
          }
          if (!again.Exited(0)) {
            ++c.unclean_after_repair;
            report("verify after the repair: " + again.Describe() + " " + again.out.substr(0, 400) +
                   again.ErrTail(300));
          }
          return true;
        };
        nlohmann::json vj, rj;
        if (!before.opened) {
          ++c.refused_open;  // the damage hit the SST's index or meta: refused, acceptable
          summary += "; read-only open refused: " + before.open_message.substr(0, 160);
          if (!repair_then_verify(&vj, &rj)) return;
          if (vj.value("clean", false)) {
            ++c.verify_missed;
            report("the open was refused, yet verify found the store clean");
          }
          // The repair set the unopenable table aside: the store opens.
          const ReadReport after = ReadAll(trial, &problem);
          if (!problem.empty()) {
            ++c.reader_crashed;
            report("after the repair: " + problem);
          }
          if (!after.opened) {
            ++c.refused_after_repair;
            report("still refused after the repair: " + after.open_message.substr(0, 300));
          }
          return;
        }
        std::set<uint64_t> healthy, damaged;
        for (const auto& [seed, v] : before.seeds) {
          if (v.verdict == "WRONG") report("seed " + std::to_string(seed) + ": " + v.detail);
          (v.verdict == "exact" ? healthy : damaged).insert(seed);
        }
        if (!damaged.empty()) ++c.damaged_trials;

        if (!repair_then_verify(&vj, &rj)) return;
        const std::set<std::string> named = Prefixes(vj["corrupt"]);
        std::set<std::string> removed;
        if (rj.contains("repair")) removed = Prefixes(rj["repair"]["removed"]);
        if (!vj["store_problems"].empty()) ++c.unattributed;
        if (!damaged.empty() && vj.value("clean", false)) {
          ++c.verify_missed;
          report(std::to_string(damaged.size()) +
                 " reads failed, yet verify found the store clean");
        }
        for (const std::string& p : named) {
          auto it = seed_of.find(p);
          const uint64_t seed = it == seed_of.end() ? 0 : it->second;
          if (!healthy.count(seed)) continue;
          ++c.blamed_healthy;
          std::string reason;
          for (const auto& x : vj["corrupt"]) {
            if (x.value("prefix", "") == p) reason = x.value("why", "");
          }
          report("verify named seed " + std::to_string(seed) + " (" + p +
                 ") corrupt, but it read back exactly: " + reason);
        }
        const ReadReport after = ReadAll(trial, &problem);
        if (!problem.empty() || !after.opened) {
          ++c.reader_crashed;
          report("after repair: " + problem + " " + after.open_message);
          return;
        }
        for (uint64_t seed : healthy) {
          const auto it = after.seeds.find(seed);
          const std::string verdict = it == after.seeds.end() ? "missing" : it->second.verdict;
          if (verdict == "exact") continue;
          const bool was_removed = removed.count(testing::PrefixFromSeed(seed).ToHex()) > 0;
          (verdict == "absent" ? c.healthy_removed : c.healthy_damaged)++;
          report("seed " + std::to_string(seed) +
                 " read back exactly before the repair, after it: " + verdict +
                 (was_removed ? " (repair reported removing it)" : ""));
        }
        for (const std::string& p : removed) {
          auto it = seed_of.find(p);
          if (it != seed_of.end() && damaged.count(it->second)) ++c.corrupt_removed;
        }
        for (uint64_t seed : damaged) {
          const auto it = after.seeds.find(seed);
          const std::string verdict = it == after.seeds.end() ? "missing" : it->second.verdict;
          const bool reported = removed.count(testing::PrefixFromSeed(seed).ToHex()) > 0;
          if (verdict == "absent" && reported) continue;
          ++c.damaged_kept;
          report("seed " + std::to_string(seed) + " failed to read before the repair; after it: " +
                 verdict + (reported ? "" : " (the repair did not report removing it)"));
        }
        summary += "; " + std::to_string(damaged.size()) + " damaged reads, verify named " +
                   std::to_string(named.size()) + ", repair removed " +
                   std::to_string(removed.size()) + " (" + std::to_string(c.healthy_removed) +
                   " healthy), store problems " + std::to_string(vj["store_problems"].size());
      }();
      std::lock_guard lock(mu);
      n.healthy_removed += c.healthy_removed;
      n.healthy_damaged += c.healthy_damaged;
      n.corrupt_removed += c.corrupt_removed;
      n.blamed_healthy += c.blamed_healthy;
      n.unattributed += c.unattributed;
      n.damaged_trials += c.damaged_trials;
      n.verify_missed += c.verify_missed;
      n.tool_errors += c.tool_errors;
      n.refused_open += c.refused_open;
      n.reader_crashed += c.reader_crashed;
      n.damaged_kept += c.damaged_kept;
      n.unclean_after_repair += c.unclean_after_repair;
      n.refused_after_repair += c.refused_after_repair;
      lines.push_back({i, summary});
      for (auto& f : fail) failures.push_back({i, records_sst + " (" + flips + "): " + f});
    }
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) workers.emplace_back(worker, w);
  for (auto& t : workers) t.join();
  std::sort(lines.begin(), lines.end());
  std::sort(failures.begin(), failures.end());
  for (const auto& [i, l] : lines) std::printf("trial %d: %s\n", i, l.c_str());
  for (const auto& [i, f] : failures) ADD_FAILURE() << "trial " << i << ": " << f;
  std::printf(
      "TRUST repair: trials=%d read_only_open_refused=%d trials_with_damaged_reads=%d "
      "healthy_removed=%d healthy_damaged=%d verify_blamed_healthy=%d corrupt_removed=%d "
      "trials_with_unattributed_damage=%d verify_clean_despite_damaged_reads=%d "
      "reader_crashed=%d tool_errors=%d damaged_kept=%d unclean_after_repair=%d "
      "still_refused_after_repair=%d\n",
      trials, n.refused_open, n.damaged_trials, n.healthy_removed, n.healthy_damaged,
      n.blamed_healthy, n.corrupt_removed, n.unattributed, n.verify_missed, n.reader_crashed,
      n.tool_errors, n.damaged_kept, n.unclean_after_repair, n.refused_after_repair);
  const int healthy_removed = n.healthy_removed, healthy_damaged = n.healthy_damaged,
            blamed_healthy = n.blamed_healthy;
  EXPECT_EQ(n.reader_crashed, 0) << "a reader child died (see above)";
  EXPECT_EQ(n.tool_errors, 0);
  EXPECT_EQ(healthy_removed, 0);
  EXPECT_EQ(healthy_damaged, 0);
  EXPECT_EQ(blamed_healthy, 0);
  EXPECT_EQ(n.verify_missed, 0) << "verify found clean stores whose reads failed";
  EXPECT_EQ(n.damaged_kept, 0) << "the repair left snapshots whose reads failed";
  EXPECT_EQ(n.unclean_after_repair, 0) << "verify still reported damage after the repair";
  EXPECT_EQ(n.refused_after_repair, 0) << "a store the open refused stayed refused after repair";
  // The trials must have damaged something the reads saw, or this proved nothing.
  EXPECT_GT(n.damaged_trials + n.refused_open, trials / 3);
}

}  // namespace
}  // namespace auxstore::trust
