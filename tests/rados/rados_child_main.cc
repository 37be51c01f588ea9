// The other process of the multi-process tests: its own librados client.
//
//   rados_test_child pages URI SEED COUNT SIZE START fwd|rev
//     waits until START (CLOCK_MONOTONIC ns, one clock for every process of
//     the machine) so two children put at the same moment, then puts a
//     deterministic family of pages, first to last or last to first; prints
//     "stored N already M".
//   rados_test_child snapshots URI SEED
//     for s = 0, 1, ...: puts 8 pages of family SEED + s, prints "put s",
//     commits manifest "snap-s" naming them, prints "committed s"; for ever
//     (the test kills it with SIGKILL).
//
// Exits 1 printing the error when a call fails, 2 on a usage error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "store/rados/rados_connection.h"
#include "store/rados/rados_manifests.h"
#include "store/rados/rados_page_store.h"
#include "tests/rados/rados_test_env.h"

namespace auxstore::rados {
namespace {

int Fail(const Status& st) {
  std::fprintf(stderr, "%s\n", st.ToString().c_str());
  return 1;
}

int PutPagesAt(RadosConnection& conn, char** args) {
  const uint64_t seed = std::strtoull(args[0], nullptr, 10);
  const size_t count = std::strtoull(args[1], nullptr, 10);
  const size_t size = std::strtoull(args[2], nullptr, 10);
  std::vector<std::vector<uint8_t>> pages;
  for (size_t i = 0; i < count; ++i) pages.push_back(testenv::PageBytes(seed, i, size));
  if (std::string(args[4]) == "rev") std::reverse(pages.begin(), pages.end());
  std::vector<ByteSpan> spans(pages.begin(), pages.end());
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point(
      std::chrono::nanoseconds(std::strtoll(args[3], nullptr, 10))));
  auto put = RadosPageStore(conn).PutPages(spans);
  if (!put.ok()) return Fail(put.status());
  std::printf("stored %zu already %zu\n", put->stored, put->already_stored);
  return 0;
}

int PutSnapshotsForEver(RadosConnection& conn, uint64_t seed) {
  RadosPageStore pages(conn);
  RadosManifests manifests(conn);
  for (uint64_t s = 0;; ++s) {
    std::vector<std::vector<uint8_t>> bytes;
    for (size_t i = 0; i < 8; ++i) bytes.push_back(testenv::PageBytes(seed + s, i, 131072));
    std::vector<ByteSpan> spans(bytes.begin(), bytes.end());
    auto put = pages.PutPages(spans);
    if (!put.ok()) return Fail(put.status());
    std::printf("put %llu\n", static_cast<unsigned long long>(s));
    std::fflush(stdout);
    const std::string id = "snap-" + std::to_string(s);
    auto c = manifests.Commit(ByteSpan(reinterpret_cast<const uint8_t*>(id.data()), id.size()),
                              spans.front(), put->keys);
    if (!c.ok()) return Fail(c.status());
    std::printf("committed %llu\n", static_cast<unsigned long long>(s));
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace auxstore::rados

int main(int argc, char** argv) {
  using namespace auxstore::rados;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "pages" && argc == 8) || (mode == "snapshots" && argc == 4))) {
    std::fprintf(stderr,
                 "usage: %s pages URI SEED COUNT SIZE START fwd|rev\n"
                 "       %s snapshots URI SEED\n",
                 argv[0], argv[0]);
    return 2;
  }
  auto uri = ParseRadosUri(argv[2]);
  if (!uri.ok()) return Fail(uri.status());
  auto conn = RadosConnection::Open(*uri);
  if (!conn.ok()) return Fail(conn.status());
  if (mode == "pages") return PutPagesAt(**conn, argv + 3);
  return PutSnapshotsForEver(**conn, std::strtoull(argv[3], nullptr, 10));
}
