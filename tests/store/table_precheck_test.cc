// store/table_precheck.h: the properties block of every table file is
// checked before RocksDB parses it, so a damaged one is a Corruption naming
// the file, never the abort Debian's RocksDB 7.8.3 gives (a live assert in
// its block parser; found by corruption_trial_test --cycles 3000).
#include "store/table_precheck.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "auxstore/store.h"
#include "tests/support/test_util.h"

namespace auxstore {
namespace {

namespace fs = std::filesystem;

// A closed store whose snapshots were ingested as table files.
void MakeStore(const std::string& path) {
  Options o;
  o.ingest_threshold_bytes = 1;
  o.background_maintenance = false;
  auto s = Store::Open(o, path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto ns = (*s)->RegisterNamespace(testing::TestSpec());
  ASSERT_TRUE(ns.ok());
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const auto bytes = testing::RandomBytes(20000, seed);
    const LayerBlob layer{2, Kind::kOpaque, bytes};
    ASSERT_TRUE((*s)->PutSnapshot(*ns, testing::PrefixFromSeed(seed), 1, {&layer, 1}).ok());
  }
}

std::vector<std::string> Tables(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".sst") out.push_back(e.path().string());
  return out;
}

// The offset of the metaindex block: the first varint after the footer's
// checksum-type byte (format_version >= 1 footers are 53 bytes).
uint64_t MetaindexOffset(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> footer(53);
  in.seekg(static_cast<std::streamoff>(fs::file_size(file) - footer.size()));
  in.read(footer.data(), static_cast<std::streamsize>(footer.size()));
  uint64_t v = 0;
  for (int i = 1, shift = 0; i < 12; ++i, shift += 7) {
    const auto b = static_cast<uint8_t>(footer[i]);
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) break;
  }
  return v;
}

void XorByte(const std::string& file, uint64_t at, uint8_t mask) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(c ^ mask));
}

TEST(TablePrecheck, EveryTableFileOfAHealthyStorePasses) {
  testing::TempDir dir;
  MakeStore(dir.path());
  const auto tables = Tables(dir.path());
  ASSERT_FALSE(tables.empty());
  for (const auto& t : tables) {
    Status s = store_internal::CheckTablePropertiesBlock(t);
    EXPECT_TRUE(s.ok()) << t << ": " << s.ToString();
  }
  EXPECT_TRUE(store_internal::CheckTablePropertiesBlocks(dir.path()).ok());
}

// The byte RocksDB's parser trips on: the high bit of the properties block's
// packed restart count (it then reads a hash index that is not there).
TEST(TablePrecheck, ADamagedPropertiesBlockIsCorruptionAtOpenNotAnAbort) {
  testing::TempDir dir;
  MakeStore(dir.path());
  const std::string table = Tables(dir.path()).front();
  // The properties block and its 5-byte trailer end where the metaindex starts.
  XorByte(table, MetaindexOffset(table) - 5 - 1, 0x80);
  Status check = store_internal::CheckTablePropertiesBlock(table);
  EXPECT_TRUE(check.IsCorruption()) << check.ToString();
  EXPECT_NE(check.message().find("properties block checksum mismatch"), std::string::npos)
      << check.message();
  for (bool read_only : {false, true}) {
    Options o;
    o.read_only = read_only;
    o.background_maintenance = false;
    auto s = Store::Open(o, dir.path());
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(s.status().IsCorruption()) << s.status().ToString();
    EXPECT_NE(s.status().message().find(fs::path(table).filename().string()), std::string::npos)
        << s.status().message();
  }
}

TEST(TablePrecheck, ADamagedMetaindexBlockOrFooterIsCorruption) {
  testing::TempDir dir;
  MakeStore(dir.path());
  const std::string table = Tables(dir.path()).front();
  const uint64_t size = fs::file_size(table);
  XorByte(table, MetaindexOffset(table), 0x01);
  EXPECT_TRUE(store_internal::CheckTablePropertiesBlock(table).IsCorruption());
  XorByte(table, MetaindexOffset(table), 0x01);  // back
  XorByte(table, size - 1, 0xff);                // the magic number
  EXPECT_TRUE(store_internal::CheckTablePropertiesBlock(table).IsCorruption());
  fs::resize_file(table, 20);
  EXPECT_TRUE(store_internal::CheckTablePropertiesBlock(table).IsCorruption());
}

}  // namespace
}  // namespace auxstore
