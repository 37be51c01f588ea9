// A MANIFEST whose unsynced tail a power cut kept with garbage in it
// (manifest_tail.h, rocks/capped_manifest_fs.h): only the tail is skipped,
// damage in the middle is refused, every acknowledged snapshot stays exact.
// And a CURRENT naming a MANIFEST whose directory entry a power cut dropped
// (store_dir.h, rocks/current_override_fs.h): the store opens through the
// MANIFEST before it.
#include "store/manifest_tail.h"

#include <rocksdb/db.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "store/store_dir.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::PrefixFromSeed;
using testing::StoreFixture;
using Verdict = store_internal::ManifestTailScan::Verdict;
namespace si = store_internal;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Every file's name and size under `dir`.
std::map<std::string, uintmax_t> Listing(const std::string& dir) {
  std::map<std::string, uintmax_t> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    files[e.path().string()] = e.is_regular_file() ? e.file_size() : 0;
  }
  return files;
}

// Where each record of a MANIFEST that fits one 32 KiB block starts (its
// headers' lengths only: the scan under test checks the rest).
std::vector<size_t> RecordStarts(const std::string& bytes) {
  EXPECT_LT(bytes.size(), 32768u) << "the test expects a one-block MANIFEST";
  std::vector<size_t> starts;
  for (size_t pos = 0; pos + 7 <= bytes.size();) {
    starts.push_back(pos);
    pos += 7 + (static_cast<uint8_t>(bytes[pos + 4]) | static_cast<uint8_t>(bytes[pos + 5]) << 8);
  }
  return starts;
}

class ManifestTailTest : public StoreFixture {
 protected:
  // Five acknowledged snapshots in a closed store; returns their bytes.
  void PutAndClose() {
    for (uint64_t i = 0; i < 5; ++i) blobs_.push_back(PutOpaque(PrefixFromSeed(i), 3000 + i, i));
    Close();
    manifest_ = path() + "/" + Trimmed(si::ReadCurrent(path()));
    bytes_ = ReadAll(manifest_);
    starts_ = RecordStarts(bytes_);
    ASSERT_GE(starts_.size(), 3u);
  }
  // The MANIFEST with a copy of its last record appended, one payload byte
  // flipped: an edit RocksDB appended and a power cut kept garbled.
  std::string WithGarbledEditAppended() const {
    std::string edit = bytes_.substr(starts_.back());
    edit[edit.size() - 1] ^= 0x20;
    return bytes_ + edit;
  }
  void ExpectEverySnapshotExact() {
    for (uint64_t i = 0; i < blobs_.size(); ++i) {
      auto layer = store_->GetLayer(ns_, PrefixFromSeed(i), 0);
      ASSERT_TRUE(layer.ok()) << i << ": " << layer.status().ToString();
      EXPECT_EQ(*layer, blobs_[i]) << i;
    }
  }
  static std::string Trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  }

  std::vector<std::vector<uint8_t>> blobs_;
  std::string manifest_, bytes_;
  std::vector<size_t> starts_;
};

TEST_F(ManifestTailTest, ARealManifestIsIntact) {
  PutAndClose();
  const auto scan = si::ScanManifestBytes(bytes_);
  EXPECT_EQ(scan.verdict, Verdict::kIntact) << scan.why;
  EXPECT_EQ(scan.valid_bytes, bytes_.size());
}

TEST_F(ManifestTailTest, AFlippedByteInTheLastRecordIsABrokenTail) {
  PutAndClose();
  std::string bytes = bytes_;
  bytes[bytes.size() - 2] ^= 0x01;
  const auto scan = si::ScanManifestBytes(bytes);
  EXPECT_EQ(scan.verdict, Verdict::kBrokenTail) << scan.why;
  EXPECT_EQ(scan.valid_bytes, starts_.back());
  EXPECT_NE(scan.why.find("checksum mismatch"), std::string::npos) << scan.why;
}

TEST_F(ManifestTailTest, AGarbledLengthInTheLastRecordIsABrokenTail) {
  PutAndClose();
  std::string bytes = bytes_;
  bytes[starts_.back() + 5] = static_cast<char>(0xff);  // 65 KiB: past its block
  bytes += std::string(70000, '\x5a');                  // the cut kept the size
  const auto scan = si::ScanManifestBytes(bytes);
  EXPECT_EQ(scan.verdict, Verdict::kBrokenTail) << scan.why;
  EXPECT_EQ(scan.valid_bytes, starts_.back());
}

TEST_F(ManifestTailTest, AFlippedByteInAnEarlierRecordIsRefused) {
  PutAndClose();
  for (size_t record : {size_t{0}, starts_.size() - 2}) {
    std::string bytes = bytes_;
    bytes[starts_[record] + 8] ^= 0x01;
    const auto scan = si::ScanManifestBytes(bytes);
    EXPECT_EQ(scan.verdict, Verdict::kBrokenMiddle) << record << ": " << scan.why;
    EXPECT_EQ(scan.valid_bytes, starts_[record]) << record;
  }
}

TEST_F(ManifestTailTest, ATruncatedLastRecordIsFineAsItIs) {
  PutAndClose();
  for (size_t keep : {size_t{3}, size_t{7}, size_t{12}}) {
    const auto scan =
        si::ScanManifestBytes(std::string_view(bytes_).substr(0, starts_.back() + keep));
    EXPECT_EQ(scan.verdict, Verdict::kIntact) << keep << ": " << scan.why;
    EXPECT_EQ(scan.valid_bytes, starts_.back()) << keep;
  }
}

TEST_F(ManifestTailTest, ZerosAfterTheLastRecordAreFineAsTheyAre) {
  PutAndClose();
  const auto scan = si::ScanManifestBytes(bytes_ + std::string(100, '\0'));
  EXPECT_EQ(scan.verdict, Verdict::kIntact) << scan.why;
  EXPECT_EQ(scan.valid_bytes, bytes_.size());
}

// A MANIFEST across blocks: a RocksDB database whose one edit is 40 KB (a
// column family's name), so RocksDB writes it as fragments over a block
// boundary, then a small edit after it.
TEST(ManifestTailScan, FindsTheTailOfAManifestAcrossBlocks) {
  testing::TempDir dir;
  const std::string path = dir.Sub("db");
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, path, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  const std::string manifest = path + "/" + std::string(si::ReadCurrent(path)).substr(0, 15);
  const auto size = [&] { return std::filesystem::file_size(manifest); };
  std::vector<rocksdb::ColumnFamilyHandle*> handles(2);
  const uint64_t before_big = size();
  ASSERT_TRUE(db->CreateColumnFamily({}, std::string(40000, 'x'), &handles[0]).ok());
  const uint64_t after_big = size();
  ASSERT_TRUE(db->CreateColumnFamily({}, "small", &handles[1]).ok());
  const uint64_t after_small = size();
  for (auto* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  const std::string bytes = ReadAll(manifest);
  ASSERT_EQ(bytes.size(), after_small);
  ASSERT_GT(after_big, 32768u);
  ASSERT_LT(before_big, 32768u);

  auto scan = si::ScanManifestBytes(bytes);
  EXPECT_EQ(scan.verdict, Verdict::kIntact) << scan.why;
  EXPECT_EQ(scan.valid_bytes, bytes.size());

  std::string tail = bytes;
  tail[tail.size() - 1] ^= 0x01;
  scan = si::ScanManifestBytes(tail);
  EXPECT_EQ(scan.verdict, Verdict::kBrokenTail) << scan.why;
  EXPECT_EQ(scan.valid_bytes, after_big);

  std::string middle = bytes;
  middle[after_big - 3] ^= 0x01;  // the big edit's last fragment, in the second block
  scan = si::ScanManifestBytes(middle);
  EXPECT_EQ(scan.verdict, Verdict::kBrokenMiddle) << scan.why;
  EXPECT_EQ(scan.valid_bytes, before_big);

  // Cut inside the big edit, past the block boundary: RocksDB drops the
  // incomplete edit, and so does the scan.
  scan = si::ScanManifestBytes(std::string_view(bytes).substr(0, 33000));
  EXPECT_EQ(scan.verdict, Verdict::kIntact) << scan.why;
  EXPECT_EQ(scan.valid_bytes, before_big);
  // Garbage over the big edit's second fragment, nothing after: a tail.
  std::string garbage = bytes.substr(0, after_big);
  garbage[after_big - 3] ^= 0x01;
  scan = si::ScanManifestBytes(garbage);
  EXPECT_EQ(scan.verdict, Verdict::kBrokenTail) << scan.why;
  EXPECT_EQ(scan.valid_bytes, before_big);
}

TEST_F(ManifestTailTest, AStoreWithAGarbledUnsyncedEditOpensWithEverySnapshotExact) {
  PutAndClose();
  const std::string garbled = WithGarbledEditAppended();
  WriteAll(manifest_, garbled);
  {  // a reader first: it opens, and changes nothing
    Options ro = options_;
    ro.read_only = true;
    auto reader = Store::Open(ro, path());
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    for (uint64_t i = 0; i < blobs_.size(); ++i) {
      auto layer = (*reader)->GetLayer(ns_, PrefixFromSeed(i), 0);
      ASSERT_TRUE(layer.ok()) << i << ": " << layer.status().ToString();
      EXPECT_EQ(*layer, blobs_[i]) << i;
    }
  }
  EXPECT_EQ(ReadAll(manifest_), garbled);
  // The writer opens, and RocksDB writes a new MANIFEST: the damaged one is
  // obsolete, later opens need no skipping, and new commits land.
  Open();
  ExpectEverySnapshotExact();
  EXPECT_EQ(store_->Stats().durable_watermark, blobs_.size());
  EXPECT_NE(path() + "/" + Trimmed(si::ReadCurrent(path())), manifest_);
  blobs_.push_back(PutOpaque(PrefixFromSeed(blobs_.size()), 5000, 99));
  Reopen();
  ExpectEverySnapshotExact();
}

TEST_F(ManifestTailTest, AStoreWithAGarbledManifestMiddleIsRefusedAndNothingChanges) {
  PutAndClose();
  std::string garbled = WithGarbledEditAppended();
  garbled[starts_[1] + 8] ^= 0x01;  // and an acknowledged edit before it
  WriteAll(manifest_, garbled);
  const auto before = Listing(path());
  for (bool read_only : {true, false}) {
    Options o = options_;
    o.read_only = read_only;
    auto s = Store::Open(o, path());
    ASSERT_FALSE(s.ok()) << read_only;
    EXPECT_TRUE(s.status().IsCorruption()) << s.status().ToString();
    EXPECT_NE(s.status().message().find("a valid record follows"), std::string::npos)
        << s.status().message();
  }
  EXPECT_EQ(Listing(path()), before);
  EXPECT_EQ(ReadAll(manifest_), garbled);
}

// The power cut of finding 10 (docs/durability.md): RocksDB created a new
// MANIFEST, renamed CURRENT to name it and was cut before its directory
// fsync; the cut kept the rename and dropped the MANIFEST's entry.
TEST_F(ManifestTailTest, CurrentNamingAManifestACutDroppedOpensThroughTheOneBefore) {
  PutAndClose();
  const std::string name = Trimmed(si::ReadCurrent(path()));
  const uint64_t number = std::stoull(name.substr(9));
  char lost[32];
  std::snprintf(lost, sizeof lost, "MANIFEST-%06llu\n", (unsigned long long)number + 3);
  WriteAll(path() + "/CURRENT", lost);
  {  // a reader first: it opens, reads every snapshot, and changes nothing
    Options ro = options_;
    ro.read_only = true;
    auto reader = Store::Open(ro, path());
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    for (uint64_t i = 0; i < blobs_.size(); ++i) {
      auto layer = (*reader)->GetLayer(ns_, PrefixFromSeed(i), 0);
      ASSERT_TRUE(layer.ok()) << i << ": " << layer.status().ToString();
      EXPECT_EQ(*layer, blobs_[i]) << i;
    }
  }
  EXPECT_EQ(ReadAll(path() + "/CURRENT"), lost);
  Open();  // the writer: RocksDB writes a new MANIFEST and CURRENT names it
  ExpectEverySnapshotExact();
  blobs_.push_back(PutOpaque(PrefixFromSeed(5), 4000, 5));
  Close();
  const std::string healed = Trimmed(si::ReadCurrent(path()));
  EXPECT_NE(healed + "\n", lost);
  EXPECT_TRUE(std::filesystem::exists(path() + "/" + healed)) << healed;
  Open();
  ExpectEverySnapshotExact();
}

TEST_F(ManifestTailTest, CurrentNamingAMissingManifestWithNoOlderOneIsRefusedAndNothingChanges) {
  PutAndClose();
  WriteAll(path() + "/CURRENT", "MANIFEST-000001\n");  // older than every MANIFEST there
  const auto before = Listing(path());
  for (bool read_only : {true, false}) {
    Options o = options_;
    o.read_only = read_only;
    auto s = Store::Open(o, path());
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(s.status().IsCorruption()) << s.status().ToString();
    EXPECT_NE(s.status().message().find("MANIFEST-000001, which is missing"), std::string::npos)
        << s.status().ToString();
  }
  EXPECT_EQ(Listing(path()), before);
}

}  // namespace
}  // namespace auxstore
