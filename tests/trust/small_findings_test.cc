// Trust finding 9: smaller contract points, one test each.
//  a. auxstore_erase of a prefix never stored: AUXSTORE_OK (c.h: "a prefix
//     not stored: OK"), and nothing changes (stats identical).
//  b. auxstore_open on a path that is a regular file fails, names the path,
//     and leaves the file's mode, size and content alone; so does `auxstore
//     import` with that file as its store.
//  c. auxstore_open on a non-empty directory that is not a store fails with
//     AUXSTORE_INVALID_ARGUMENT and changes nothing (entries, modes, no new
//     files).
//  d. symlinks planted in a store (AUXSTORE-WATERMARK.tmp, LOCK) are not
//     followed: the files they point at keep their content and mode.
//  e. under umask 000 every directory the store makes is 0700 and every file
//     0600 (also after a put fails on a full tmpfs, when mounting is allowed);
//     a store whose parent does not exist is refused without creating
//     anything, or its parents are created 0700.
//  f. two processes creating the same new store at once (released together
//     from one pipe; the second staggered by 0-11.4 ms across the trials):
//     each gets OK or Busy (never InvalidArgument), at least one OK, and the
//     store opens and verifies.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tests/trust/trust_capi.h"
#include "tests/trust/trust_util.h"

namespace auxstore::trust {
namespace {

unsigned ModeOf(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
}

// Creates a store with `n` battery snapshots through the C ABI, closed.
void MakeStore(const std::string& path, uint64_t n) {
  int code = 0;
  std::string msg;
  auxstore_t* db = OpenC(path, false, &code, &msg);
  ASSERT_NE(db, nullptr) << code << " " << msg;
  ASSERT_EQ(RegisterBattery(db), "");
  for (uint64_t s = 1; s <= n; ++s) {
    std::string err;
    ASSERT_EQ(PutSeed(db, "battery", s, &err), AUXSTORE_OK) << err;
  }
  auxstore_close(db);
}

std::string StatsString(auxstore_t* db) {
  auxstore_stats_t s{};
  if (auxstore_stats(db, &s, nullptr) != AUXSTORE_OK) return "stats failed";
  char b[512];
  std::snprintf(b, sizeof b,
                "snapshots=%llu payload_bytes=%llu hits=%llu misses=%llu puts=%llu "
                "duplicate_puts=%llu evictions=%llu expirations=%llu quarantines=%llu "
                "orphans_seen=%llu orphans_removed=%llu commit_seq=%llu durable_watermark=%llu "
                "lost_commits_at_open=%llu fenced=%d",
                (unsigned long long)s.snapshots, (unsigned long long)s.payload_bytes,
                (unsigned long long)s.hits, (unsigned long long)s.misses,
                (unsigned long long)s.puts, (unsigned long long)s.duplicate_puts,
                (unsigned long long)s.evictions, (unsigned long long)s.expirations,
                (unsigned long long)s.quarantines, (unsigned long long)s.orphans_seen,
                (unsigned long long)s.orphans_removed, (unsigned long long)s.commit_seq,
                (unsigned long long)s.durable_watermark, (unsigned long long)s.lost_commits_at_open,
                s.fenced);
  return b;
}

// a ---------------------------------------------------------------------------
TEST(TrustSmall, EraseOfAPrefixNeverStoredIsOkAndChangesNothing) {
  ScratchDir dir("erase-unknown");
  const std::string path = dir.Sub("store");
  int code = 0;
  std::string msg;
  auxstore_t* db = OpenC(path, false, &code, &msg);
  ASSERT_NE(db, nullptr) << code << " " << msg;
  ASSERT_EQ(RegisterBattery(db), "");
  for (uint64_t s = 1; s <= 3; ++s) ASSERT_EQ(PutSeed(db, "battery", s, nullptr), AUXSTORE_OK);
  const std::string before = StatsString(db);
  const Listing files_before = List(path);
  uint8_t never[16];
  for (int i = 0; i < 16; ++i) never[i] = static_cast<uint8_t>(0xA5 ^ (i * 37));
  char* m = nullptr;
  const int rc = auxstore_erase(db, BatteryNs(), never, &m);
  EXPECT_EQ(rc, AUXSTORE_OK) << "auxstore_erase of a prefix never stored returned " << rc << " ("
                             << auxstore_code_name(rc) << "): " << (m ? m : "");
  auxstore_free(m);
  const std::string after = StatsString(db);
  EXPECT_EQ(before, after) << "stats changed across the erase of a prefix never stored";
  // Nor a file: the erase wrote nothing (compared before the close, which may
  // flush the memtable).
  const std::string changed = DiffListings(files_before, List(path), true);
  EXPECT_TRUE(changed.empty()) << "the erase of a prefix never stored changed the store's files:\n"
                               << changed;
  auxstore_close(db);
}

// b ---------------------------------------------------------------------------
TEST(TrustSmall, OpenOnARegularFileLeavesItAlone) {
  ScratchDir dir("open-file");
  const std::string file = dir.Sub("not-a-store");
  const std::string content = "this is a regular file, not a store\n";
  ASSERT_TRUE(WriteFile(file, content, 0640));
  ASSERT_EQ(ModeOf(file), 0640u);
  int code = 0;
  std::string msg;
  auxstore_t* db = OpenC(file, false, &code, &msg);
  EXPECT_EQ(db, nullptr) << "auxstore_open on a regular file succeeded";
  if (db) auxstore_close(db);
  EXPECT_NE(msg.find(file), std::string::npos)
      << "the message does not name the path: " << code << " " << msg;
  std::string now;
  ReadFile(file, &now);
  EXPECT_EQ(ModeString(ModeOf(file)), "0640") << "auxstore_open changed the file's mode";
  EXPECT_EQ(now, content) << "auxstore_open changed the file's content";
  std::printf("open on a regular file: %d %s; mode now %s\n", code, msg.c_str(),
              ModeString(ModeOf(file)).c_str());

  // `auxstore import FILE DIR`, with a valid export in DIR
  const std::string store = dir.Sub("store"), exp = dir.Sub("export");
  MakeStore(store, 1);
  ProcResult e = RunCli({"export", store, MakeProfile("battery", 1)->prefix.ToHex(), exp});
  ASSERT_TRUE(e.Exited(0)) << e.Describe() << " " << e.ErrTail();
  ASSERT_EQ(::chmod(file.c_str(), 0640), 0);
  ASSERT_TRUE(WriteFile(file, content, 0640));
  ProcResult i = RunCli({"import", file, exp});
  EXPECT_FALSE(i.Exited(0)) << "`auxstore import` into a regular file succeeded";
  EXPECT_EQ(i.signal, 0) << i.Describe();
  ReadFile(file, &now);
  EXPECT_EQ(ModeString(ModeOf(file)), "0640") << "`auxstore import` changed the file's mode ("
                                              << i.Describe() << ": " << i.ErrTail(300) << ")";
  EXPECT_EQ(now, content) << "`auxstore import` changed the file's content";
}

// c ---------------------------------------------------------------------------
TEST(TrustSmall, OpenOnAnUnrelatedDirectoryIsInvalidArgumentAndChangesNothing) {
  ScratchDir scratch("open-dir");
  const std::string dir = scratch.Sub("photos");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  ASSERT_TRUE(WriteFile(dir + "/a.txt", "alpha\n", 0644));
  ASSERT_TRUE(WriteFile(dir + "/b.jpg", std::string(5000, 'b'), 0600));
  ASSERT_EQ(::mkdir((dir + "/sub").c_str(), 0750), 0);
  ASSERT_EQ(::chmod((dir + "/sub").c_str(), 0750), 0);
  ASSERT_TRUE(WriteFile(dir + "/sub/c", "c\n", 0644));
  const Listing before = List(dir);
  int code = 0;
  std::string msg;
  auxstore_t* db = OpenC(dir, false, &code, &msg);
  if (db) auxstore_close(db);
  EXPECT_EQ(code, AUXSTORE_INVALID_ARGUMENT)
      << "auxstore_open on a non-empty directory that is not a store returned " << code << " ("
      << auxstore_code_name(code) << "): " << msg;
  const std::string diff = DiffListings(before, List(dir), /*compare_modes=*/true);
  EXPECT_TRUE(diff.empty()) << "auxstore_open changed the directory " << dir << ":\n" << diff;
}

// d ---------------------------------------------------------------------------
TEST(TrustSmall, WatermarkTmpSymlinkIsNotFollowed) {
  ScratchDir dir("watermark-link");
  const std::string store = dir.Sub("store"), outside = dir.Sub("precious");
  MakeStore(store, 1);
  const std::string content = "PRECIOUS: the store must never write here\n";
  ASSERT_TRUE(WriteFile(outside, content, 0644));
  ASSERT_EQ(::symlink(outside.c_str(), (store + "/AUXSTORE-WATERMARK.tmp").c_str()), 0);
  int code = 0;
  std::string msg;
  auxstore_t* db = OpenC(store, false, &code, &msg);
  if (db) {
    std::string err;
    EXPECT_EQ(PutSeed(db, "battery", 2, &err), AUXSTORE_OK) << err;
    auxstore_close(db);
  }
  std::string now;
  ReadFile(outside, &now);
  EXPECT_EQ(now, content) << "the file AUXSTORE-WATERMARK.tmp pointed at was overwritten: now "
                          << now.size() << " bytes: " << now.substr(0, 80) << " (open: " << code
                          << " " << msg << ")";
  EXPECT_EQ(ModeString(ModeOf(outside)), "0644") << "its mode changed";
}

TEST(TrustSmall, LockSymlinkIsNotFollowed) {
  ScratchDir dir("lock-link");
  const std::string store = dir.Sub("store"), outside = dir.Sub("lock-target");
  MakeStore(store, 1);
  const std::string content = "a file outside the store\n";
  ASSERT_TRUE(WriteFile(outside, content, 0644));
  ASSERT_EQ(::unlink((store + "/LOCK").c_str()), 0);
  ASSERT_EQ(::symlink(outside.c_str(), (store + "/LOCK").c_str()), 0);
  int code = 0;
  std::string msg;
  auxstore_t* db = OpenC(store, false, &code, &msg);
  if (db) auxstore_close(db);
  std::string now;
  ReadFile(outside, &now);
  EXPECT_EQ(ModeString(ModeOf(outside)), "0644")
      << "the file the LOCK symlink pointed at had its mode changed (open: " << code << " " << msg
      << ")";
  EXPECT_EQ(now, content) << "its content changed";
}

// e ---------------------------------------------------------------------------
struct UmaskGuard {
  mode_t old;
  explicit UmaskGuard(mode_t m) : old(::umask(m)) {}
  ~UmaskGuard() { ::umask(old); }
};

std::string BadModes(const std::string& store) {
  std::string bad;
  for (const auto& [name, e] : List(store)) {
    if (e.type == 'd' && e.mode != 0700)
      bad += "  " + name + " is a directory of mode " + ModeString(e.mode) + "\n";
    if (e.type == 'f' && e.mode != 0600)
      bad += "  " + name + " is a file of mode " + ModeString(e.mode) + "\n";
  }
  return bad;
}

TEST(TrustSmall, UnderUmask000EverythingIsOwnerOnly) {
  UmaskGuard um(0);
  ScratchDir dir("umask");
  const std::string store = dir.Sub("store");
  MakeStore(store, 8);  // a quarter of the battery snapshots are SST-ingested
  {
    int code = 0;
    std::string msg;
    auxstore_t* db = OpenC(store, false, &code, &msg);
    ASSERT_NE(db, nullptr) << code << " " << msg;
    auxstore_close(db);
  }
  const std::string bad = BadModes(store);
  EXPECT_TRUE(bad.empty()) << "under umask 000, after create/put/close/reopen:\n" << bad;

  // A put that fails on a full disk, then a reopen on it (what makes auxstore-trash).
  std::string why;
  auto mnt = TmpfsMount::Mount(dir.Sub("mnt"), 8u << 20, &why);
  if (!mnt) {
    // Reported as skipped (ctest too), never as passed: CI, where root can
    // mount, fails a run in which this part did not happen.
    GTEST_SKIP() << "the full-disk part needs a tmpfs: mounting one is not allowed here (" << why
                 << ")";
  } else {
    const std::string s2 = mnt->path() + "/store";
    ProcResult w = RunProcess({ChildPath(), "put", "--store", s2, "--profile", "wal",
                               "--until-fail", "--seed-start", "1"});
    FillUp(mnt->path() + "/filler");
    ProcResult r = RunProcess({ChildPath(), "open", "--store", s2});
    std::printf("full tmpfs: writer %s (%s), reopen %s %s\n", w.Describe().c_str(),
                w.FirstLineWith("E ").value_or("no failed put").substr(0, 120).c_str(),
                r.Describe().c_str(), r.FirstLineWith("OPEN").value_or("").substr(0, 160).c_str());
    const std::string bad2 = BadModes(s2);
    EXPECT_TRUE(bad2.empty()) << "under umask 000, after a put failed on a full tmpfs and a "
                                 "reopen on it:\n"
                              << bad2;
  }

  // A store whose parent does not exist.
  const std::string base = dir.Sub("parents");
  ASSERT_EQ(::mkdir(base.c_str(), 0700), 0);
  const std::string deep = base + "/a/b/store";
  int code = 0;
  std::string msg;
  auxstore_t* db = OpenC(deep, false, &code, &msg);
  if (db) auxstore_close(db);
  const Listing l = List(base);
  std::string made;
  for (const auto& [name, e] : l) {
    if (name == ".") continue;
    if ((e.type == 'd' && e.mode != 0700) || (e.type == 'f' && e.mode != 0600)) {
      made += "  " + name + " (" + std::string(1, e.type) + " " + ModeString(e.mode) + ")\n";
    }
  }
  if (db == nullptr) {
    EXPECT_EQ(l.size(), 1u) << "the open of " << deep << " failed (" << code << " " << msg
                            << ") but created:\n"
                            << ListingToString(l);
  }
  EXPECT_TRUE(made.empty()) << "opening " << deep << " (parents missing) under umask 000 "
                            << (db ? "succeeded" : "failed") << " and left:\n"
                            << made;
}

// f ---------------------------------------------------------------------------
TEST(TrustSmall, TwoProcessesCreatingTheSameStoreAtOnce) {
  const int trials = Cycles(20);
  ScratchDir dir("two-creators");
  int both_ok = 0, one_busy = 0, invalid = 0, other = 0, none_ok = 0;
  for (int t = 0; t < trials; ++t) {
    const std::string store = dir.Sub("store-" + std::to_string(t));
    int go[2];
    ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
    Child a, b;
    const std::string fd = std::to_string(go[0]);
    // Both wait on one pipe; the second then sleeps 0, 0.6, 1.2 ... 11.4 ms
    // (by trial) so the trials sweep every point of the first's creation.
    const std::string delay = std::to_string((t % 20) * 600);
    ASSERT_TRUE(a.Start({ChildPath(), "open", "--store", store, "--wait-fd", fd}, {go[0]}));
    ASSERT_TRUE(b.Start(
        {ChildPath(), "open", "--store", store, "--wait-fd", fd, "--delay-us", delay}, {go[0]}));
    ::close(go[0]);
    ::close(go[1]);  // EOF: both start now
    const ProcResult ra = a.Wait(), rb = b.Wait();
    int oks = 0;
    for (const ProcResult* r : {&ra, &rb}) {
      const ReadReport rep = ParseRead(*r);
      if (!r->Exited(0)) {
        ++other;
        ADD_FAILURE() << "trial " << t << ": a creating child " << r->Describe() << "\n"
                      << r->ErrTail();
      } else if (rep.opened) {
        ++oks;
      } else if (rep.open_code == AUXSTORE_BUSY) {
        ++one_busy;
      } else {
        (rep.open_code == AUXSTORE_INVALID_ARGUMENT ? invalid : other)++;
        ADD_FAILURE() << "trial " << t << ": a creator got " << rep.open_code << " ("
                      << rep.open_message << "); want AUXSTORE_OK or AUXSTORE_BUSY";
      }
    }
    if (oks == 2) ++both_ok;
    if (oks == 0) {
      ++none_ok;
      ADD_FAILURE() << "trial " << t << ": neither creator got AUXSTORE_OK";
    }
    ProcResult o = RunProcess({ChildPath(), "open", "--store", store});
    EXPECT_TRUE(ParseRead(o).opened)
        << "trial " << t << ": the store does not open afterwards: " << o.out << o.ErrTail();
    ProcResult v = RunCli({"verify", store});
    EXPECT_TRUE(v.Exited(0)) << "trial " << t << ": `auxstore verify` " << v.Describe() << "\n"
                             << v.out << v.ErrTail();
  }
  std::printf(
      "TRUST two-creators: trials=%d both_ok=%d busy=%d INVALID_ARGUMENT=%d other=%d "
      "none_ok=%d\n",
      trials, both_ok, one_busy, invalid, other, none_ok);
}

}  // namespace
}  // namespace auxstore::trust
