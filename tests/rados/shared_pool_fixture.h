// A test with a pool namespace of its own on the test cluster: its URI, a
// connection to count and touch its objects, and a temp dir for the stores'
// local directories.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "tests/rados/rados_test_env.h"
#include "tests/support/test_util.h"

namespace auxstore::sharedtest {

class SharedPoolTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kOpTimeoutMs = 3000;

  void SetUp() override {
    rados_uri_ = rados::testenv::UriFor(rados::testenv::UniqueNamespace(), kOpTimeoutMs);
    uri_ = rados_uri_.ToString();
    conn_ = rados::testenv::Connect(rados_uri_);
    ASSERT_TRUE(conn_);
  }
  // The namespace's objects whose names start with `prefix`.
  size_t Objects(std::string_view prefix = "") {
    size_t n = 0;
    for (auto it = conn_->io().nobjects_begin(); it != conn_->io().nobjects_end(); ++it)
      if (it->get_oid().starts_with(prefix)) ++n;
    return n;
  }

  testing::TempDir tmp_;
  rados::RadosUri rados_uri_;
  std::string uri_;
  std::unique_ptr<rados::RadosConnection> conn_;
};

}  // namespace auxstore::sharedtest
