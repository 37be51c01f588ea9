// Pages in a real RADOS pool (the ctest fixture's cluster): stored once by
// content, read back exact, damage behind our back detected and never
// returned, and connection errors named.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "store/rados/rados_page_store.h"
#include "tests/rados/rados_test_env.h"

namespace auxstore::rados {
namespace {

using testenv::Connect;
using testenv::PageBytes;
using testenv::UniqueNamespace;
using testenv::UriFor;

std::vector<ByteSpan> Spans(const std::vector<std::vector<uint8_t>>& pages) {
  return {pages.begin(), pages.end()};
}

TEST(RadosConnect, AMissingPoolIsNotFound) {
  RadosUri uri = UriFor("x");
  uri.pool = "no-such-pool";
  auto conn = RadosConnection::Open(uri);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), StatusCode::kNotFound) << conn.status().ToString();
  EXPECT_NE(conn.status().message().find("no-such-pool"), std::string::npos);
}

TEST(RadosConnect, AnUnreadableConfIsInvalidArgumentNamingIt) {
  RadosUri uri = UriFor("x");
  uri.conf_path = "/nonexistent/ceph.conf";
  auto conn = RadosConnection::Open(uri);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), StatusCode::kInvalidArgument) << conn.status().ToString();
  EXPECT_NE(conn.status().message().find("/nonexistent/ceph.conf"), std::string::npos);
}

TEST(RadosPages, PutThenReadReturnsTheExactBytes) {
  auto conn = Connect(UriFor(UniqueNamespace()));
  ASSERT_TRUE(conn);
  RadosPageStore store(*conn);
  std::vector<std::vector<uint8_t>> pages;
  for (size_t i = 0; i < 40; ++i) pages.push_back(PageBytes(1, i, 1000 + 997 * i));
  pages.push_back({});  // an empty page is a page too
  auto put = store.PutPages(Spans(pages));
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(put->stored, pages.size());
  EXPECT_EQ(put->already_stored, 0u);

  auto got = store.ReadPages(put->keys);
  ASSERT_EQ(got.size(), pages.size());
  for (size_t i = 0; i < pages.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << i << ": " << got[i].status().ToString();
    EXPECT_EQ(*got[i], pages[i]) << "page " << i;
  }
  EXPECT_EQ(testenv::CountObjects(*conn), pages.size());
}

TEST(RadosPages, PuttingThePagesAgainStoresNothingNew) {
  auto conn = Connect(UriFor(UniqueNamespace()));
  ASSERT_TRUE(conn);
  RadosPageStore store(*conn);
  std::vector<std::vector<uint8_t>> pages = {PageBytes(2, 0, 4096), PageBytes(2, 1, 4096),
                                             PageBytes(2, 0, 4096)};  // a duplicate in the batch
  auto first = store.PutPages(Spans(pages));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->stored, 2u);
  EXPECT_EQ(first->already_stored, 1u);
  EXPECT_EQ(first->keys[0], first->keys[2]);
  auto again = store.PutPages(Spans(pages));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->stored, 0u);
  EXPECT_EQ(again->already_stored, 3u);
  EXPECT_EQ(testenv::CountObjects(*conn), 2u);
}

TEST(RadosPages, AMissingPageIsNotFoundAndTheOthersStillRead) {
  auto conn = Connect(UriFor(UniqueNamespace()));
  ASSERT_TRUE(conn);
  RadosPageStore store(*conn);
  std::vector<std::vector<uint8_t>> pages = {PageBytes(3, 0, 512)};
  auto put = store.PutPages(Spans(pages));
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  std::vector<PageKey> keys = {PageKey::Of(PageBytes(3, 99, 512)), put->keys[0]};
  auto got = store.ReadPages(keys);
  EXPECT_EQ(got[0].status().code(), StatusCode::kNotFound) << got[0].status().ToString();
  ASSERT_TRUE(got[1].ok()) << got[1].status().ToString();
  EXPECT_EQ(*got[1], pages[0]);
}

// Two writer processes, each with its own librados client, put the same 64
// pages at the same moment, one first to last, the other last to first: each
// page is stored exactly once, and the pool holds 64.
TEST(RadosPages, TwoProcessesPuttingTheSamePagesStoreEachOnce) {
  const std::string ns = UniqueNamespace();
  const size_t count = 64, size = 65536;
  // CLOCK_MONOTONIC (steady_clock) is one clock for every process here
  const auto start = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  const std::string cmd =
      std::string(AUXSTORE_RADOS_CHILD) + " pages '" + UriFor(ns).ToString() + "' 7 " +
      std::to_string(count) + " " + std::to_string(size) + " " +
      std::to_string(std::chrono::nanoseconds(start.time_since_epoch()).count());
  FILE* a = popen((cmd + " fwd").c_str(), "r");
  FILE* b = popen((cmd + " rev").c_str(), "r");
  ASSERT_TRUE(a && b);
  size_t stored[2] = {0, 0}, already[2] = {0, 0};
  int parsed[2] = {std::fscanf(a, "stored %zu already %zu", &stored[0], &already[0]),
                   std::fscanf(b, "stored %zu already %zu", &stored[1], &already[1])};
  EXPECT_EQ(pclose(a), 0);
  EXPECT_EQ(pclose(b), 0);
  ASSERT_EQ(parsed[0], 2);
  ASSERT_EQ(parsed[1], 2);
  std::printf("writer A stored %zu (found %zu), writer B stored %zu (found %zu)\n", stored[0],
              already[0], stored[1], already[1]);
  EXPECT_EQ(stored[0] + stored[1], count) << "each page created by exactly one writer";
  EXPECT_EQ(already[0] + already[1], count) << "and found already stored by the other";

  auto conn = Connect(UriFor(ns));
  ASSERT_TRUE(conn);
  EXPECT_EQ(testenv::CountObjects(*conn), count);
  std::vector<PageKey> keys;
  for (size_t i = 0; i < count; ++i) keys.push_back(PageKey::Of(PageBytes(7, i, size)));
  RadosPageStore store(*conn);
  auto got = store.ReadPages(keys);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
    EXPECT_EQ(*got[i], PageBytes(7, i, size));
  }
}

// `rados put` over a page object (same length, one byte different; then a
// shorter body): the read is Corruption, and no bytes come back.
TEST(RadosPages, ARawRadosPutOverAPageIsDetectedOnRead) {
  const std::string ns = UniqueNamespace();
  auto conn = Connect(UriFor(ns));
  ASSERT_TRUE(conn);
  RadosPageStore store(*conn);
  std::vector<std::vector<uint8_t>> pages = {PageBytes(4, 0, 8192), PageBytes(4, 1, 8192)};
  auto put = store.PutPages(Spans(pages));
  ASSERT_TRUE(put.ok()) << put.status().ToString();

  std::vector<uint8_t> damaged = pages[0];
  damaged[4000] ^= 0x01;
  const std::string file = ::testing::TempDir() + "/damaged_page_" + std::to_string(getpid());
  for (size_t len : {damaged.size(), size_t{100}}) {
    FILE* f = std::fopen(file.c_str(), "wb");
    ASSERT_TRUE(f);
    ASSERT_EQ(std::fwrite(damaged.data(), 1, len, f), len);
    std::fclose(f);
    const std::string cmd = "rados -c " + testenv::ConfPath() + " -p " + testenv::kPool + " -N '" +
                            ns + "' put " + put->keys[0].ObjectName() + " " + file;
    ASSERT_EQ(testenv::Shell(cmd), 0) << cmd;

    auto got = store.ReadPages(put->keys);
    ASSERT_FALSE(got[0].ok()) << "damaged bytes (" << len << ") came back";
    EXPECT_EQ(got[0].status().code(), StatusCode::kCorruption) << got[0].status().ToString();
    EXPECT_NE(got[0].status().message().find(put->keys[0].ObjectName()), std::string::npos);
    ASSERT_TRUE(got[1].ok()) << "the undamaged page still reads";
    EXPECT_EQ(*got[1], pages[1]);
  }
  std::remove(file.c_str());
}

}  // namespace
}  // namespace auxstore::rados
