// Issue 20 break 4: a full disk whose WAL is larger than a memtable. A real
// 88 MiB tmpfs is mounted, 48 MiB of it held back by a reserve file (skipped where mounting is not
// allowed):
//  1. a child (auxstore_trust_child, C ABI) puts WAL-path snapshots (sync)
//     until a put fails, then closes: RocksDB's flush of the 32 MiB records
//     memtable cannot fit beside the WAL, so the store stops with a WAL of
//     more than 30 MB;
//  2. a filler file takes every free byte; a reopen must be refused with
//     AUXSTORE_IO_ERROR "needs N bytes free" and change nothing in the store
//     directory (no file created, none removed, no trash);
//  3. exactly N bytes (rounded up to the 4 KiB page) are freed: the reopen
//     must succeed, every acknowledged snapshot read back exactly, and no
//     auxstore-trash entry be left.
// On 42e77ae the store said it needed about 1 MiB, then failed the open on
// RocksDB's recovery flush ("No space left") and left its partial SST in
// auxstore-trash/ at every attempt.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <set>
#include <string>

#include "tests/trust/trust_capi.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

uint64_t WalBytes(const std::string& store) {
  uint64_t n = 0;
  for (const auto& f : FilesOfType(store, "WAL")) n += FileSize(store + "/" + f);
  return n;
}

std::string TrashEntries(const Listing& l) {
  std::string out;
  for (const auto& [name, e] : l) {
    if (name.rfind("auxstore-trash/", 0) == 0) out += "\n    " + name;
  }
  return out;
}

std::string NotExact(const ReadReport& rep, const std::set<uint64_t>& acked) {
  std::string bad;
  for (uint64_t s : acked) {
    auto it = rep.seeds.find(s);
    if (it == rep.seeds.end()) {
      bad += "\n    seed " + std::to_string(s) + ": not read";
    } else if (it->second.verdict != "exact") {
      bad +=
          "\n    seed " + std::to_string(s) + ": " + it->second.verdict + " " + it->second.detail;
    }
  }
  return bad;
}

TEST(TrustFullDisk, ABigWalReopensOnceTheStatedBytesAreFree) {
  ScratchDir scratch("full-disk-wal");
  std::string why;
  auto mnt = TmpfsMount::Mount(scratch.Sub("mnt"), 88u << 20, &why);
  if (!mnt) GTEST_SKIP() << "mounting a tmpfs is not allowed here (" << why << ")";
  const std::string store = mnt->path() + "/store";
  const std::string filler = mnt->path() + "/filler";

  // 1. fill 40 MiB: a reserve file keeps the rest, so the test can free
  //    whatever the store asks for later.
  const std::string reserve = mnt->path() + "/reserve";
  ASSERT_TRUE(WriteFile(reserve, std::string(48u << 20, 'R'), 0600)) << "cannot write " << reserve;
  ProcResult w = RunProcess({ChildPath(), "put", "--store", store, "--profile", "wal",
                             "--until-fail", "--seed-start", "1"});
  ASSERT_TRUE(w.FirstLineWith("OPEN OK")) << w.out << w.ErrTail();
  ASSERT_TRUE(w.Exited(0) && w.FirstLineWith("CLOSED")) << "the writer " << w.Describe() << "\n"
                                                        << w.ErrTail();
  ASSERT_TRUE(w.FirstLineWith("E ")) << "no put failed: the disk never filled";
  const std::set<uint64_t> acked = SeedsOnLines(w.lines, "A");
  const uint64_t wal = WalBytes(store);
  std::printf("filled: %zu snapshots acknowledged, WAL %llu bytes, failed put: %s\n", acked.size(),
              (unsigned long long)wal, w.FirstLineWith("E ")->substr(0, 200).c_str());
  ASSERT_GT(wal, 16u << 20) << "the WAL stayed small: the test would prove nothing";

  // 2. reopen on the full disk: refused with N, nothing changed
  ::unlink(reserve.c_str());
  FillUp(filler);
  std::printf("the store holds:\n%s", ListingToString(List(store)).c_str());
  const Listing before = List(store);
  ProcResult r1 = RunProcess(
      {ChildPath(), "read", "--store", store, "--profile", "wal", "--seeds", SeedList(acked)});
  ReadReport rep1 = ParseRead(r1);
  ASSERT_TRUE(r1.Exited(0)) << r1.Describe() << r1.ErrTail();
  EXPECT_EQ(DiffListings(before, List(store), false), "")
      << "the reopen on the full disk changed the store directory";
  uint64_t need = 0;
  if (rep1.opened) {
    EXPECT_EQ(NotExact(rep1, acked), "") << "opened on the full disk, but reads were not exact";
  } else {
    std::smatch m;
    const std::regex needs("needs ([0-9]+) bytes free");
    ASSERT_TRUE(rep1.open_code == AUXSTORE_IO_ERROR &&
                std::regex_search(rep1.open_message, m, needs))
        << "the refusal does not say how many bytes it needs: " << rep1.open_code << " "
        << rep1.open_message;
    need = std::stoull(m[1].str());
    std::printf("full-disk reopen refused: %s\n", rep1.open_message.c_str());
  }

  // 3. free exactly what it asked for, reopen
  if (!rep1.opened) {
    const uint64_t have = FileSize(filler);
    const uint64_t free_bytes = (need + 4095) / 4096 * 4096;
    ASSERT_LT(free_bytes, have) << "the store asks for more than the filler holds";
    ASSERT_EQ(::truncate(filler.c_str(), static_cast<off_t>(have - free_bytes)), 0);
    const Listing before2 = List(store);
    ProcResult r2 = RunProcess(
        {ChildPath(), "read", "--store", store, "--profile", "wal", "--seeds", SeedList(acked)});
    ReadReport rep2 = ParseRead(r2);
    const Listing after2 = List(store);
    ASSERT_TRUE(r2.Exited(0)) << r2.Describe() << r2.ErrTail();
    EXPECT_TRUE(rep2.opened) << "after freeing the " << need << " bytes the refusal asked for ("
                             << free_bytes << " freed), the store did not open: " << rep2.open_code
                             << " " << rep2.open_message;
    if (rep2.opened) {
      uint64_t sst = 0;
      for (const auto& f : FilesOfType(store, "SST")) sst += FileSize(store + "/" + f);
      std::printf("opened after freeing %llu bytes: SSTs now %llu bytes, WAL %llu bytes\n",
                  (unsigned long long)free_bytes, (unsigned long long)sst,
                  (unsigned long long)WalBytes(store));
      EXPECT_EQ(NotExact(rep2, acked), "") << "acknowledged snapshots did not read back exactly";
    } else {
      EXPECT_EQ(DiffListings(before2, after2, false), "")
          << "the failed open changed the store directory";
    }
    EXPECT_EQ(TrashEntries(after2), "") << "the open left files in auxstore-trash/";
  }
}

}  // namespace
}  // namespace auxstore::trust
