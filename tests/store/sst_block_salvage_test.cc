// SalvageDataBlock: the entries of a damaged SST data block, read with every
// bound checked, so repair can keep the intact entries of a block RocksDB
// refuses whole.
#include "store/sst_block_salvage.h"

#include <gtest/gtest.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
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

// An SST of 400 entries; returns the RocksDB message of the first damaged
// block after one byte of `at` is flipped.
std::string WriteAndDamage(const std::string& file, uint64_t at) {
  rocksdb::Options o;
  o.compression = rocksdb::kNoCompression;  // as the store writes them
  rocksdb::SstFileWriter w(rocksdb::EnvOptions(), o);
  EXPECT_TRUE(w.Open(file).ok());
  for (int i = 0; i < 400; ++i) EXPECT_TRUE(w.Put(KeyOf(i), ValueOf(i)).ok());
  EXPECT_TRUE(w.Finish().ok());
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(c ^ 0x20));
  }
  rocksdb::SstFileReader r(o);
  EXPECT_TRUE(r.Open(file).ok());
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<rocksdb::Iterator> it(r.NewIterator(ro));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
  }
  EXPECT_FALSE(it->status().ok()) << "the flip was not detected";
  return it->status().ToString();
}

TEST(SstBlockSalvageTest, KeepsEveryEntryOfADamagedBlockButTheDamagedOne) {
  testing::TempDir dir;
  const std::string file = dir.Sub("t.sst");
  const std::string message = WriteAndDamage(file, 6000);  // inside the second 4 KiB block
  auto b = DamagedBlockOf(message);
  ASSERT_TRUE(b.has_value()) << message;
  EXPECT_EQ(b->file, file);
  EXPECT_LE(b->offset, 6000u);
  EXPECT_GT(b->offset + b->size, 6000u);
  const auto entries = SalvageDataBlock(*b);
  ASSERT_GT(entries.size(), 10u);
  int exact = 0, other = 0;
  for (const SalvagedEntry& e : entries) {
    EXPECT_TRUE(e.is_value);
    int i = -1;
    if (std::sscanf(e.user_key.c_str(), "key%d", &i) == 1 && e.user_key == KeyOf(i) &&
        e.value == ValueOf(i)) {
      ++exact;
    } else {
      ++other;
    }
  }
  EXPECT_EQ(other, 1) << "one byte changes one entry";
  EXPECT_EQ(exact + other, static_cast<int>(entries.size()));
}

TEST(SstBlockSalvageTest, MessagesWithoutABlockAndUnreadableFilesGiveNothing) {
  EXPECT_FALSE(DamagedBlockOf("Corruption: bad block contents").has_value());
  EXPECT_TRUE(SalvageDataBlock({"/nonexistent/x.sst", 0, 4096}).empty());
  EXPECT_TRUE(SalvageDataBlock({"/nonexistent/x.sst", 0, 2}).empty());
}

// One hand-made block: entry "k" (sequence 7, a Put) -> "abc", one restart
// point; then the trailer's compression type byte.
std::string OneEntryBlock(char compression) {
  std::string b;
  b += '\0';    // shared
  b += '\x09';  // non-shared: "k" + 8 bytes of (sequence << 8 | type)
  b += '\x03';  // value length
  b += 'k';
  const uint64_t packed = (uint64_t{7} << 8) | 0x1;
  for (int i = 0; i < 8; ++i) b += static_cast<char>(packed >> (8 * i));
  b += "abc";
  b.append("\0\0\0\0", 4);    // restart point 0
  b.append("\x01\0\0\0", 4);  // one restart point
  b += compression;
  return b;
}

TEST(SstBlockSalvageTest, ReadsAPlainBlockAndNeverGuessesAtACompressedOne) {
  testing::TempDir dir;
  for (char compression : {'\0', '\x01'}) {
    const std::string file = dir.Sub("block");
    const std::string block = OneEntryBlock(compression);
    std::ofstream(file, std::ios::binary) << block;
    const auto entries = SalvageDataBlock({file, 0, block.size() - 1});
    if (compression == 0) {
      ASSERT_EQ(entries.size(), 1u);
      EXPECT_EQ(entries[0].user_key, "k");
      EXPECT_EQ(entries[0].value, "abc");
      EXPECT_EQ(entries[0].sequence, 7u);
      EXPECT_TRUE(entries[0].is_value);
    } else {
      EXPECT_TRUE(entries.empty()) << "a compressed block was parsed as a plain one";
    }
  }
}

}  // namespace
}  // namespace auxstore::store_internal
