#include "store/rocks/xxh3_file_checksum.h"

#include <string>

#include "format/xxh3.h"

namespace auxstore::store_internal {
namespace {

class Xxh3FileChecksumGenerator : public rocksdb::FileChecksumGenerator {
 public:
  Xxh3FileChecksumGenerator() : state_(XXH3_createState()) { XXH3_64bits_reset(state_); }
  ~Xxh3FileChecksumGenerator() override { XXH3_freeState(state_); }

  void Update(const char* data, size_t n) override { XXH3_64bits_update(state_, data, n); }
  void Finalize() override {
    // Canonical (big-endian) bytes, like RocksDB's own CRC32c generator.
    XXH64_canonical_t c;
    XXH64_canonicalFromHash(&c, XXH3_64bits_digest(state_));
    checksum_.assign(reinterpret_cast<const char*>(c.digest), sizeof c.digest);
  }
  std::string GetChecksum() const override { return checksum_; }
  const char* Name() const override { return kXxh3ChecksumName; }

 private:
  XXH3_state_t* state_;
  std::string checksum_;
};

class Xxh3FileChecksumGenFactory : public rocksdb::FileChecksumGenFactory {
 public:
  std::unique_ptr<rocksdb::FileChecksumGenerator> CreateFileChecksumGenerator(
      const rocksdb::FileChecksumGenContext& context) override {
    // A requested name we don't produce means another generator wrote the
    // file's checksum; returning null makes RocksDB report the mismatch.
    if (!context.requested_checksum_func_name.empty() &&
        context.requested_checksum_func_name != kXxh3ChecksumName) {
      return nullptr;
    }
    return std::make_unique<Xxh3FileChecksumGenerator>();
  }
  const char* Name() const override { return "auxstore.Xxh3FileChecksumGenFactory"; }
};

}  // namespace

std::shared_ptr<rocksdb::FileChecksumGenFactory> NewXxh3FileChecksumGenFactory() {
  return std::make_shared<Xxh3FileChecksumGenFactory>();
}

}  // namespace auxstore::store_internal
