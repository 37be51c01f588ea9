// WalkTable (store/table_walk.h): every entry of a table file read without
// its index, so a table whose footer, index or properties block is damaged
// still gives back its data blocks; and an intact table is read whole,
// deletions and range deletions included, as its properties count them.
#include "store/table_walk.h"

#include <gtest/gtest.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_writer.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "tests/support/test_util.h"

namespace auxstore::store_internal {
namespace {

std::string KeyOf(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "key%06d", i);
  return b;
}
std::string ValueOf(int i) { return std::string(100 + i % 50, static_cast<char>('a' + i % 26)); }

// 400 entries: every seventh a deletion, and one range deletion.
void WriteTable(const std::string& file) {
  rocksdb::Options o;
  o.compression = rocksdb::kNoCompression;  // as the store writes them
  rocksdb::SstFileWriter w(rocksdb::EnvOptions(), o);
  ASSERT_TRUE(w.Open(file).ok());
  for (int i = 0; i < 400; ++i) {
    ASSERT_TRUE((i % 7 == 0 ? w.Delete(KeyOf(i)) : w.Put(KeyOf(i), ValueOf(i))).ok());
  }
  ASSERT_TRUE(w.DeleteRange(KeyOf(500), KeyOf(600)).ok());
  ASSERT_TRUE(w.Finish().ok());
}

struct Walked {
  std::map<std::string, std::string> values;
  std::map<std::string, bool> deleted;
  TableWalk walk;
};

Walked Walk(const std::string& file) {
  Walked w;
  Status s = WalkTable(
      file,
      [&](const TableEntry& e) {
        if (e.type == kTypeValue) {
          w.values[std::string(e.user_key)] = std::string(e.value);
        } else {
          w.deleted[std::string(e.user_key)] = true;
        }
        return Status::Ok();
      },
      &w.walk);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return w;
}

void ExpectEveryEntry(const Walked& w) {
  ASSERT_EQ(w.values.size() + w.deleted.size(), 400u);
  for (int i = 0; i < 400; ++i) {
    if (i % 7 == 0) {
      EXPECT_TRUE(w.deleted.count(KeyOf(i))) << i;
    } else {
      ASSERT_TRUE(w.values.count(KeyOf(i))) << i;
      EXPECT_EQ(w.values.at(KeyOf(i)), ValueOf(i)) << i;
    }
  }
}

void FlipByte(const std::string& file, uint64_t at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(c ^ 0x5a));
}

uint64_t SizeOf(const std::string& file) {
  std::ifstream f(file, std::ios::binary | std::ios::ate);
  return static_cast<uint64_t>(f.tellg());
}

TEST(TableWalkTest, ReadsAnIntactTableWholeWithItsDeletions) {
  testing::TempDir dir;
  const std::string file = dir.Sub("t.sst");
  WriteTable(file);
  const Walked w = Walk(file);
  ExpectEveryEntry(w);
  EXPECT_TRUE(w.walk.Complete()) << w.walk.Describe();
  EXPECT_GT(w.walk.blocks, 5u);
  ASSERT_EQ(w.walk.range_tombstones.size(), 1u);
  EXPECT_EQ(w.walk.range_tombstones[0].begin, KeyOf(500));
  EXPECT_EQ(w.walk.range_tombstones[0].end, KeyOf(600));
}

TEST(TableWalkTest, ReadsEveryDataBlockWhenTheFooterIsDamaged) {
  testing::TempDir dir;
  const std::string file = dir.Sub("t.sst");
  WriteTable(file);
  FlipByte(file, SizeOf(file) - 1);  // the magic number
  const Walked w = Walk(file);
  ExpectEveryEntry(w);
  EXPECT_FALSE(w.walk.Complete()) << "nothing left to count the entries with";
  EXPECT_FALSE(w.walk.range_tombstones_known);
}

TEST(TableWalkTest, ReadsEveryDataBlockWhenAMetaBlockIsDamaged) {
  testing::TempDir dir;
  const std::string file = dir.Sub("t.sst");
  WriteTable(file);
  const TableWalk intact = Walk(file).walk;
  ASSERT_TRUE(intact.data_end.has_value());
  // Every byte after the data blocks but the footer: filter, index, range
  // deletions, properties, metaindex.
  const uint64_t size = SizeOf(file);
  for (uint64_t at = *intact.data_end; at < size - 53; at += 97) {
    FlipByte(file, at);
    const Walked w = Walk(file);
    ExpectEveryEntry(w);
    EXPECT_EQ(w.walk.blocks, intact.blocks) << "flipped " << at;
    FlipByte(file, at);
  }
}

void ExpectOnlyTrueValues(const Walked& w) {
  for (const auto& [key, value] : w.values) {
    EXPECT_EQ(value, ValueOf(std::stoi(key.substr(3)))) << key;
  }
}

TEST(TableWalkTest, SkipsADamagedDataBlockTheIndexNames) {
  testing::TempDir dir;
  const std::string file = dir.Sub("t.sst");
  WriteTable(file);
  const TableWalk intact = Walk(file).walk;
  FlipByte(file, 6000);  // inside the second 4 KiB data block
  const Walked w = Walk(file);
  EXPECT_FALSE(w.walk.Complete());
  EXPECT_EQ(w.walk.damaged_blocks, 1u);
  EXPECT_EQ(w.walk.blocks, intact.blocks - 1);
  EXPECT_TRUE(w.values.count(KeyOf(1)) && w.values.count(KeyOf(398))) << "before and after it";
  EXPECT_LT(w.values.size() + w.deleted.size(), 400u);
  ExpectOnlyTrueValues(w);
}

TEST(TableWalkTest, StopsAtADamagedDataBlockWhenTheIndexIsDamagedToo) {
  testing::TempDir dir;
  const std::string file = dir.Sub("t.sst");
  WriteTable(file);
  const TableWalk intact = Walk(file).walk;
  FlipByte(file, SizeOf(file) - 1);  // the footer's magic: no index to go by
  FlipByte(file, 6000);
  const Walked w = Walk(file);
  EXPECT_FALSE(w.walk.Complete());
  EXPECT_FALSE(w.walk.stop_reason.empty());
  EXPECT_GT(w.values.size(), 0u);
  EXPECT_LT(w.walk.blocks, intact.blocks - 1);
  ExpectOnlyTrueValues(w);
}

}  // namespace
}  // namespace auxstore::store_internal
