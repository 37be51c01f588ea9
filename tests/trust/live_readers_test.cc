// Trust finding 2: readers beside a live sync writer. docs/cli.md promises
// that the read-only commands (`ls`, `verify` without --repair) "run beside
// the engine's live writer", and the C ABI's read-only open is documented to
// work "while another process has the store open for writing".
//
// A child (auxstore_trust_child put, sync, the battery's deterministic
// snapshots, a quarter of them SST-ingested) puts snapshots throughout, paced
// by tokens from this process so the store stays small enough for the run to
// be short. Meanwhile this process runs 30x `auxstore ls`,
// 10x a read-only C ABI open + get_manifest/get_layer of every snapshot
// acknowledged before the open, and 10x `auxstore verify`, interleaved.
// Each attempt must succeed (ls exit 0; verify exit 0 and "verify: clean";
// every read exactly the bytes of the deterministic spec) or fail with a
// retryable error (AUXSTORE_BUSY / AUXSTORE_UNAVAILABLE; CLI exit 2 with
// "Busy" or "Unavailable"). Never Corruption, never verify exit 1, never an
// I/O error naming a file that vanished, never wrong bytes. And at least half
// of the attempts of each kind must succeed, so "always Busy" cannot pass.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include "tests/trust/trust_capi.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

struct Tally {
  int attempts = 0, ok = 0, retryable = 0, failed = 0;
  std::vector<std::string> failures;
  void Fail(const std::string& what) {
    ++failed;
    if (failures.size() < 8) failures.push_back(what);
  }
};

bool Retryable(const std::string& text) {
  return text.find("Busy") != std::string::npos || text.find("Unavailable") != std::string::npos;
}

void CliAttempt(const char* kind, const std::vector<std::string>& args, Tally* t, int i) {
  ++t->attempts;
  ProcResult r = RunCli(args);
  const bool verify = std::string(kind) == "verify";
  if (r.Exited(0) && (!verify || r.out.find("verify: clean") != std::string::npos)) {
    ++t->ok;
    return;
  }
  if (r.Exited(2) && Retryable(r.err)) {
    ++t->retryable;
    return;
  }
  std::string tail = r.ErrTail(600);
  if (verify) {
    for (const auto& l : r.lines) {
      if (l.rfind("CORRUPT", 0) == 0 || l.rfind("verify:", 0) == 0) tail += "\n    " + l;
    }
  }
  t->Fail(std::string(kind) + " attempt " + std::to_string(i) + ": " + r.Describe() + ": " + tail);
}

void CapiAttempt(const std::string& path, const std::set<uint64_t>& acked, Tally* t, int i) {
  ++t->attempts;
  int code = 0;
  std::string msg;
  auxstore_t* db = OpenC(path, /*read_only=*/true, &code, &msg);
  if (!db) {
    if (code == AUXSTORE_BUSY || code == AUXSTORE_UNAVAILABLE) {
      ++t->retryable;
    } else {
      t->Fail("C ABI attempt " + std::to_string(i) + ": read-only auxstore_open returned " +
              std::to_string(code) + " (" + auxstore_code_name(code) + "): " + msg);
    }
    return;
  }
  bool retry = false;
  std::string failure;
  for (uint64_t seed : acked) {
    const std::string v = ReadSeed(db, BatteryNs(), *MakeProfile("battery", seed));
    if (v == "exact") continue;
    const std::string busy = "error " + std::to_string(AUXSTORE_BUSY) + " ";
    const std::string unav = "error " + std::to_string(AUXSTORE_UNAVAILABLE) + " ";
    if (v.rfind(busy, 0) == 0 || v.rfind(unav, 0) == 0) {
      retry = true;
      continue;
    }
    failure = "C ABI attempt " + std::to_string(i) + ": seed " + std::to_string(seed) +
              " (acknowledged before the read-only open): " + v;
    break;
  }
  auxstore_close(db);
  if (!failure.empty()) {
    t->Fail(failure);
  } else if (retry) {
    ++t->retryable;
  } else {
    ++t->ok;
  }
}

TEST(TrustLiveReaders, LsVerifyAndReadOnlyOpensBesideASyncWriter) {
  ScratchDir dir("live-readers");
  const std::string path = dir.Sub("store");
  // The writer puts one snapshot per byte it reads from this pipe, so the
  // store grows by a bounded amount per round (a few puts land during each
  // reader attempt) and the run stays short on 2 cores.
  int pace[2];
  ASSERT_EQ(::pipe2(pace, O_CLOEXEC), 0);
  Child writer;
  ASSERT_TRUE(writer.Start(
      {ChildPath(), "put", "--store", path, "--profile", "battery", "--chunk-bytes", "65536",
       "--until-fail", "--seed-start", "1", "--pace-fd", std::to_string(pace[0])},
      {pace[0]}));
  ::close(pace[0]);
  auto give = [&](int n) {
    const std::string tokens(static_cast<size_t>(n), 'p');
    (void)!::write(pace[1], tokens.data(), tokens.size());
  };
  give(10);
  std::string line;
  ASSERT_TRUE(writer.WaitForLine("A 10", &line)) << "writer did not acknowledge 10 snapshots";

  std::map<std::string, Tally> tally;
  const int rounds = 30, per_round = 6;
  for (int i = 0; i < rounds; ++i) {
    give(per_round);
    CliAttempt("ls", {"ls", path}, &tally["ls"], i);
    if (i % 3 == 0) {
      const std::set<uint64_t> acked = SeedsOnLines(writer.Lines(), "A");
      give(per_round);
      CapiAttempt(path, acked, &tally["C ABI read-only"], i / 3);
    } else if (i % 3 == 1) {
      give(per_round);
      CliAttempt("verify", {"verify", path}, &tally["verify"], i / 3);
    }
  }
  ::close(pace[1]);  // EOF: the writer puts what it was given, closes the store and exits
  const size_t acked_during = SeedsOnLines(writer.Lines(), "A").size();
  const ProcResult w = writer.Wait();
  EXPECT_TRUE(w.Exited(0) && w.FirstLineWith("CLOSED"))
      << "the writer: " << w.Describe() << ": " << w.ErrTail();
  for (const auto& l : w.LinesWith("E ")) ADD_FAILURE() << "writer: a put failed: " << l;

  std::printf("TRUST live-readers: writer acknowledged %zu snapshots during the run\n",
              acked_during);
  std::printf("%-16s %9s %6s %10s %7s\n", "reader", "attempts", "ok", "retryable", "FAILED");
  for (const auto& [kind, t] : tally) {
    std::printf("%-16s %9d %6d %10d %7d\n", kind.c_str(), t.attempts, t.ok, t.retryable, t.failed);
  }
  for (const auto& [kind, t] : tally) {
    EXPECT_EQ(t.failed, 0) << kind << ": " << t.failed << " of " << t.attempts
                           << " attempts failed with a non-retryable error";
    for (const auto& f : t.failures) ADD_FAILURE() << f;
    EXPECT_GE(2 * t.ok, t.attempts) << kind << ": only " << t.ok << " of " << t.attempts
                                    << " attempts succeeded (" << t.retryable << " retryable)";
  }
}

}  // namespace
}  // namespace auxstore::trust
