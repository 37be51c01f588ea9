// Trust finding 1: a second auxstore_open of a store this process already has
// open for writing must answer AUXSTORE_BUSY *and leave the first handle's
// lock in place*. The writer's lock is a POSIX fcntl lock on LOCK; closing any
// descriptor of that file drops every such lock the process holds, so a probe
// that opens and closes LOCK hands the store to the next process that asks.
//
// This process holds h1 (C ABI) and keeps writing; a second open in-process
// must be Busy; then a child process (auxstore_trust_child) must also get
// Busy, and the real `auxstore compact` binary must exit 2 with "Busy". After
// h1 closes, the store verifies clean and every acknowledged snapshot reads
// back exactly.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/trust/trust_capi.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

TEST(TrustDoubleOpen, SecondOpenInProcessIsBusyAndTheLockStaysHeld) {
  ScratchDir dir("double-open");
  const std::string path = dir.Sub("store");
  std::set<uint64_t> acked;
  uint64_t next_seed = 1;
  int code = 0;
  std::string msg;

  auxstore_t* h1 = OpenC(path, false, &code, &msg);
  ASSERT_NE(h1, nullptr) << "open " << path << ": " << code << " " << msg;
  ASSERT_EQ(RegisterBattery(h1), "");
  auto put_some = [&](const char* when, int n) {
    for (int i = 0; i < n; ++i, ++next_seed) {
      std::string err;
      const int rc = PutSeed(h1, "battery", next_seed, &err);
      EXPECT_EQ(rc, AUXSTORE_OK) << "h1 put of seed " << next_seed << " " << when
                                 << " failed: " << err;
      if (rc == AUXSTORE_OK) acked.insert(next_seed);
    }
  };
  put_some("before the second open", 4);

  // (a) a second open for writing in this process
  {
    auxstore_t* h2 = OpenC(path, false, &code, &msg);
    EXPECT_EQ(code, AUXSTORE_BUSY)
        << "second auxstore_open(" << path << ") for writing in the process that holds h1 "
        << "returned " << code << " (" << auxstore_code_name(code) << "): " << msg;
    if (h2) auxstore_close(h2);
  }
  put_some("after the second open", 2);

  // (b) a child process must still find the store locked
  {
    ProcResult r = RunProcess({ChildPath(), "open", "--store", path});
    ASSERT_TRUE(r.Exited(0)) << "child " << r.Describe() << "\n" << r.ErrTail();
    const ReadReport rep = ParseRead(r);
    EXPECT_FALSE(rep.opened)
        << "after a second in-process open was refused, a CHILD PROCESS opened " << path
        << " for writing while h1 still holds it (auxstore_open returned AUXSTORE_OK): the "
        << "first handle's fcntl lock on LOCK was dropped";
    if (!rep.opened) {
      EXPECT_EQ(rep.open_code, AUXSTORE_BUSY)
          << "child open for writing returned " << rep.open_code << ": " << rep.open_message;
    }
  }
  put_some("after the child's open attempt", 2);

  // (c) the real CLI's compact must refuse
  {
    ProcResult r = RunCli({"compact", path});
    EXPECT_TRUE(r.Exited(2) && (r.err + r.out).find("Busy") != std::string::npos)
        << "`auxstore compact " << path << "` while h1 holds the store: " << r.Describe()
        << " (want exit 2 with \"Busy\")\nstdout: " << r.out << "\nstderr: " << r.ErrTail();
  }
  put_some("after `auxstore compact`", 2);
  auxstore_close(h1);

  // After h1 closes: verify clean, every acknowledged snapshot exact.
  {
    ProcResult v = RunCli({"verify", path});
    EXPECT_TRUE(v.Exited(0)) << "`auxstore verify " << path << "` after h1 closed: " << v.Describe()
                             << "\n"
                             << v.out << v.ErrTail();
    ProcResult r = RunProcess({ChildPath(), "read", "--store", path, "--seeds", SeedList(acked)});
    ASSERT_TRUE(r.Exited(0)) << "reader child " << r.Describe() << "\n" << r.ErrTail();
    const ReadReport rep = ParseRead(r);
    ASSERT_TRUE(rep.opened) << "reopen after h1 closed: " << rep.open_code << " "
                            << rep.open_message;
    for (uint64_t s : acked) {
      auto it = rep.seeds.find(s);
      ASSERT_NE(it, rep.seeds.end());
      EXPECT_EQ(it->second.verdict, "exact")
          << "acknowledged seed " << s << ": " << it->second.verdict << " " << it->second.detail;
    }
  }
  std::printf("TRUST double-open: %zu snapshots acknowledged through h1\n", acked.size());
}

}  // namespace
}  // namespace auxstore::trust
