// A test fixture holding an open store in a temp dir with one namespace.
#pragma once

#include <gtest/gtest.h>

#include "auxstore/store.h"
#include "tests/support/test_util.h"

namespace auxstore::testing {

class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.chunk_bytes = 64 * 1024;
    Open();
    ns_ = store_->RegisterNamespace(TestSpec()).value();
  }
  void Open() {
    auto s = Store::Open(options_, path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  void Close() { store_.reset(); }
  void Reopen() {
    Close();
    Open();
  }
  std::string path() const { return dir_.Sub("store"); }

  // Puts one opaque layer of `size` random bytes (seeded) under `prefix`.
  std::vector<uint8_t> PutOpaque(const Prefix& prefix, size_t size, uint64_t seed,
                                 uint32_t layer = 0) {
    auto blob = RandomBytes(size, seed);
    LayerBlob l{layer, Kind::kOpaque, blob};
    Status s = store_->PutSnapshot(ns_, prefix, 1, {&l, 1});
    EXPECT_TRUE(s.ok()) << s.ToString();
    return blob;
  }

  TempDir dir_;
  Options options_;
  std::unique_ptr<Store> store_;
  NamespaceId ns_ = 0;
};

}  // namespace auxstore::testing
