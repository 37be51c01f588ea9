// Shared helpers for auxstore tests: temp dirs, random blobs, namespaces.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/geometry.h"
#include "auxstore/prefix.h"

namespace auxstore::testing {

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "auxstore-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937_64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t x = rng();
    for (int b = 0; b < 8; ++b) v[i + b] = static_cast<uint8_t>(x >> (8 * b));
  }
  for (; i < n; ++i) v[i] = static_cast<uint8_t>(rng());
  return v;
}

inline Prefix PrefixFromSeed(uint64_t seed) {
  Prefix p;
  auto b = RandomBytes(16, seed * 7919 + 1);
  std::copy(b.begin(), b.end(), p.bytes.begin());
  return p;
}

inline NamespaceSpec TestSpec(std::string model = "test-model") {
  NamespaceSpec s;
  s.model_id = std::move(model);
  s.qsa = {/*hd=*/64,    /*max_tokens=*/4096, /*ratio=*/4, /*rot=*/32, /*theta=*/10000.0f,
           /*eps=*/1e-6f};
  s.dsa = {/*index_head_dim=*/32, /*capacity=*/4096};
  return s;
}

inline std::vector<uint8_t> QsaBlob(const NamespaceSpec& s, uint64_t ingested, uint64_t pooled,
                                    uint64_t seed) {
  auto keys = RandomBytes(ingested * s.qsa.hd * 2, seed);
  return EncodeQsaBlob(ingested, pooled, keys, s.qsa.hd).value();
}

inline std::vector<uint8_t> DsaBlob(const NamespaceSpec& s, uint64_t len, uint64_t seed) {
  const uint64_t key_bytes = len * s.dsa.index_head_dim * 2;
  auto k = RandomBytes(key_bytes, seed), g = RandomBytes(key_bytes, seed + 1),
       v = RandomBytes(len, seed + 2);
  return EncodeDsaBlob(len, s.dsa.index_head_dim, k, g, v).value();
}

inline uint64_t DirBytes(const std::string& dir) {
  uint64_t total = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) total += e.file_size();
  }
  return total;
}

}  // namespace auxstore::testing
