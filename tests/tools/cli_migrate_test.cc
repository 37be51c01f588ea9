// `auxstore migrate`: a store written by auxstore before paged storage
// (format version 1; tests/fixtures/v1-store, made by that release's
// `auxstore import`) converted offline, crash-safe, every byte kept.
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "auxstore/blob_hash.h"
#include "auxstore/maintenance.h"
#include "tests/tools/cli_test_util.h"

namespace auxstore::testing {
namespace {

namespace fs = std::filesystem;

struct ExpectedLayer {
  NamespaceId ns = 0;
  Prefix prefix;
  uint32_t layer = 0;
  uint64_t bytes = 0, xxh3 = 0, token_count = 0;
  int64_t created_unix_ms = 0;
};

// tests/fixtures/v1-store.expected: what the old release's `inspect` said.
std::vector<ExpectedLayer> Expected() {
  std::ifstream in(AUXSTORE_V1_FIXTURE ".expected");
  std::vector<ExpectedLayer> out;
  std::string ns, prefix, kind, xxh3;
  ExpectedLayer e;
  while (in >> ns >> prefix >> e.layer >> kind >> e.bytes >> xxh3 >> e.token_count >>
         e.created_unix_ms) {
    e.ns = std::stoull(ns, nullptr, 16);
    e.prefix = Prefix::FromHex(prefix).value();
    e.xxh3 = std::stoull(xxh3, nullptr, 16);
    out.push_back(e);
  }
  return out;
}

std::string Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Every file of the fixture is in `dir` with the same bytes.
::testing::AssertionResult SameAsFixture(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(AUXSTORE_V1_FIXTURE)) {
    if (!e.is_regular_file()) continue;
    const fs::path mine = fs::path(dir) / e.path().filename();
    if (!fs::exists(mine)) return ::testing::AssertionFailure() << mine << " is gone";
    if (Slurp(mine) != Slurp(e.path())) return ::testing::AssertionFailure() << mine << " changed";
  }
  return ::testing::AssertionSuccess();
}

// `dir` is a store of this version holding exactly the fixture's snapshots.
::testing::AssertionResult HoldsTheFixturesSnapshots(const std::string& dir) {
  Options o;
  o.read_only = true;
  auto store = Store::Open(o, dir);
  if (!store.ok()) return ::testing::AssertionFailure() << store.status().ToString();
  const auto expected = Expected();
  if (expected.size() != 4) return ::testing::AssertionFailure() << "fixture list unreadable";
  for (const ExpectedLayer& e : expected) {
    auto m = (*store)->GetManifest(e.ns, e.prefix);
    if (!m.ok()) return ::testing::AssertionFailure() << m.status().ToString();
    if (m->token_count != e.token_count || m->created_unix_ms != e.created_unix_ms) {
      return ::testing::AssertionFailure() << "manifest of " << e.prefix.ToHex() << " differs";
    }
    auto blob = (*store)->GetLayer(e.ns, e.prefix, e.layer);
    if (!blob.ok()) return ::testing::AssertionFailure() << blob.status().ToString();
    if (blob->size() != e.bytes || BlobHasher::Hash(*blob) != e.xxh3) {
      return ::testing::AssertionFailure()
             << e.prefix.ToHex() << " layer " << e.layer << " differs";
    }
  }
  uint64_t n = 0;
  (void)(*store)->List(std::nullopt, [&](const SnapshotInfo&) { return ++n, true; });
  if (n != 2) return ::testing::AssertionFailure() << n << " snapshots, not 2";
  return ::testing::AssertionSuccess();
}

class MigrateTest : public ::testing::Test {
 protected:
  void SetUp() override { fs::copy(AUXSTORE_V1_FIXTURE, path(), fs::copy_options::recursive); }
  std::string path() const { return dir_.Sub("store"); }
  TempDir dir_;
};

TEST_F(MigrateTest, AVersionOneStoreIsRefusedUntilMigrated) {
  auto s = Store::Open(Options{}, path());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotSupported);
  EXPECT_TRUE(SameAsFixture(path())) << "the refused open changed nothing";
}

TEST_F(MigrateTest, CarriesEverySnapshotOverAndKeepsTheOldStore) {
  CliRun r = RunInProcess({"migrate", path(), "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = r.Json();
  EXPECT_EQ(j["from_version"].get<uint64_t>(), 1u);
  EXPECT_EQ(j["to_version"].get<uint64_t>(), 2u);
  EXPECT_EQ(j["snapshots"].get<uint64_t>(), 2u);
  EXPECT_EQ(j["namespaces"].get<uint64_t>(), 1u);
  EXPECT_TRUE(j["skipped"].empty());
  EXPECT_TRUE(HoldsTheFixturesSnapshots(path()));
  EXPECT_TRUE(SameAsFixture(path() + ".v1")) << "the old store is kept as it was";
  EXPECT_FALSE(fs::exists(path() + ".migrate-tmp"));
  CliRun verify = RunInProcess({"verify", path()});
  EXPECT_EQ(verify.code, 0) << verify.out;

  CliRun again = RunInProcess({"migrate", path()});
  EXPECT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("already format version 2"), std::string::npos) << again.out;
}

TEST_F(MigrateTest, AnExistingBackupIsNeverOverwritten) {
  fs::create_directory(path() + ".v1");
  std::ofstream(path() + ".v1/keep") << "mine";
  auto r = MigrateStoreAt(path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("already exists"), std::string::npos) << r.error().message();
  EXPECT_TRUE(SameAsFixture(path()));
  EXPECT_EQ(Slurp(path() + ".v1/keep"), "mine");
  EXPECT_FALSE(fs::exists(path() + ".migrate-tmp"));
}

TEST_F(MigrateTest, AStoreWithALiveWriterIsBusyAndUntouched) {
  const std::string lock = path() + "/AUXSTORE-LOCK";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  auto r = MigrateStoreAt(path());
  ::close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), StatusCode::kBusy) << r.error().ToString();
  EXPECT_TRUE(SameAsFixture(path()));
  EXPECT_FALSE(fs::exists(path() + ".migrate-tmp"));
}

TEST_F(MigrateTest, NotAStoreIsAnErrorNamingThePath) {
  auto r = MigrateStoreAt(dir_.Sub("nothing-here"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("nothing-here"), std::string::npos) << r.error().message();
}

TEST_F(MigrateTest, KilledAtAnyMomentTheOldStoreIsIntactOrTheNewOneCompleteAndARerunFinishes) {
  // How long a whole run takes here: kills land across it and past its end.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(RunBinary({"migrate", path()}).code, 0);
  const auto whole =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  std::mt19937_64 rng(14);
  int old_seen = 0, new_seen = 0;
  // 24 kills, and more (up to 64) until both outcomes were seen: the load
  // on the machine moves how long a run takes.
  for (int trial = 0; trial < 64 && (trial < 24 || old_seen == 0 || new_seen == 0); ++trial) {
    SCOPED_TRACE(trial);
    fs::remove_all(path());
    fs::remove_all(path() + ".v1");
    fs::remove_all(path() + ".migrate-tmp");
    fs::copy(AUXSTORE_V1_FIXTURE, path(), fs::copy_options::recursive);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string p = path();
      ::execl(AUXSTORE_CLI_BINARY, AUXSTORE_CLI_BINARY, "migrate", p.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % (whole * 3 / 2 + 1)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    // At the kill: the old store as it was, or the new one whole.
    auto s = Store::Open(
        [] {
          Options o;
          o.read_only = true;
          return o;
        }(),
        path());
    if (!s.ok()) {
      ASSERT_EQ(s.status().code(), StatusCode::kNotSupported) << s.status().ToString();
      ASSERT_TRUE(SameAsFixture(path()));
      ++old_seen;
    } else {
      s->reset();
      ASSERT_TRUE(HoldsTheFixturesSnapshots(path()));
      ++new_seen;
    }
    // Running it again finishes the job, whatever the kill left.
    auto r = MigrateStoreAt(path());
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    ASSERT_TRUE(HoldsTheFixturesSnapshots(path()));
    ASSERT_TRUE(SameAsFixture(path() + ".v1"));
    ASSERT_FALSE(fs::exists(path() + ".migrate-tmp"));
  }
  std::printf("migrate kills: %d left the old store, %d the new one\n", old_seen, new_seen);
  EXPECT_GT(old_seen, 0);
  EXPECT_GT(new_seen, 0);
}

}  // namespace
}  // namespace auxstore::testing
