// What the `ceph` tests share: the cluster ctest's fixture started
// (tests/rados/ceph_fixture.sh), a fresh namespace per test, deterministic
// pages, and the pool's object count as RADOS itself reports it.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "store/rados/rados_connection.h"
#include "store/rados/rados_uri.h"

namespace auxstore::rados::testenv {

inline std::string ClusterDir() { return AUXSTORE_CEPH_DIR; }
inline std::string ConfPath() { return ClusterDir() + "/ceph.conf"; }
inline std::string ClusterSh() { return AUXSTORE_CEPH_CLUSTER_SH; }
inline constexpr const char* kPool = "auxstore";

// A namespace no other test (or earlier run) uses.
inline std::string UniqueNamespace() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name() + "." +
         std::to_string(getpid()) + "." + std::to_string(time(nullptr));
}

inline RadosUri UriFor(const std::string& ns, uint32_t op_timeout_ms = 10000) {
  RadosUri uri;
  uri.pool = kPool;
  uri.conf_path = ConfPath();
  uri.ns = ns;
  uri.op_timeout_ms = op_timeout_ms;
  return uri;
}

inline std::unique_ptr<RadosConnection> Connect(const RadosUri& uri) {
  auto conn = RadosConnection::Open(uri);
  EXPECT_TRUE(conn.ok()) << conn.status().ToString()
                         << " (is the ctest fixture's cluster up? ctest -L ceph starts it)";
  return conn.ok() ? std::move(conn).value() : nullptr;
}

// Page `i` of a deterministic family `seed`: `size` bytes.
inline std::vector<uint8_t> PageBytes(uint64_t seed, uint64_t i, size_t size) {
  std::vector<uint8_t> b(size);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xD1B54A32D192ED03ull + 1;
  for (auto& v : b) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = static_cast<uint8_t>(x);
  }
  return b;
}

// Objects in the connection's namespace, listed by RADOS.
inline size_t CountObjects(RadosConnection& conn) {
  size_t n = 0;
  for (auto it = conn.io().nobjects_begin(); it != conn.io().nobjects_end(); ++it) ++n;
  return n;
}

// Runs a shell command; its exit status.
inline int Shell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

}  // namespace auxstore::rados::testenv
