// A writer process of the two-writer tests: connects with its own librados
// client, waits until START (CLOCK_MONOTONIC ns, shared by every process of
// the machine) so two children put at the same moment, then puts a
// deterministic family of pages, first to last or (rev) last to first.
//
//   rados_test_child URI SEED COUNT SIZE START fwd|rev
//
// Prints "stored N already M" and exits 0, or prints the error and exits 1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "store/rados/rados_connection.h"
#include "store/rados/rados_page_store.h"
#include "tests/rados/rados_test_env.h"

int main(int argc, char** argv) {
  using namespace auxstore::rados;
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s URI SEED COUNT SIZE START fwd|rev\n", argv[0]);
    return 2;
  }
  auto uri = ParseRadosUri(argv[1]);
  if (!uri.ok()) return std::fprintf(stderr, "%s\n", uri.status().ToString().c_str()), 1;
  auto conn = RadosConnection::Open(*uri);
  if (!conn.ok()) return std::fprintf(stderr, "%s\n", conn.status().ToString().c_str()), 1;
  const uint64_t seed = std::strtoull(argv[2], nullptr, 10);
  const size_t count = std::strtoull(argv[3], nullptr, 10);
  const size_t size = std::strtoull(argv[4], nullptr, 10);
  std::vector<std::vector<uint8_t>> pages;
  std::vector<auxstore::ByteSpan> spans;
  for (size_t i = 0; i < count; ++i) pages.push_back(testenv::PageBytes(seed, i, size));
  if (std::string(argv[6]) == "rev") std::reverse(pages.begin(), pages.end());
  for (const auto& p : pages) spans.emplace_back(p);
  const std::chrono::steady_clock::time_point start(
      std::chrono::nanoseconds(std::strtoll(argv[5], nullptr, 10)));
  std::this_thread::sleep_until(start);
  RadosPageStore store(**conn);
  auto put = store.PutPages(spans);
  if (!put.ok()) return std::fprintf(stderr, "%s\n", put.status().ToString().c_str()), 1;
  std::printf("stored %zu already %zu\n", put->stored, put->already_stored);
  return 0;
}
