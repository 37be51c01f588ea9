// Throughput of the page store on a cluster, to set beside `rados bench` on
// the same pool, object size and queue depth (docs/shared-tier.md). Not a
// test: a measurement tool (bench/ is where issue 21's bench will live).
//
//   rados_throughput URI COUNT SIZE [IN_FLIGHT]
//
// Puts COUNT distinct pages of SIZE bytes (PutPages, IN_FLIGHT aio ops, 16
// by default), reads them back (ReadPages, every byte checked), prints
// "put MB/s" and "read MB/s" (MB = 10^6 bytes, as rados bench), then removes
// them.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "store/rados/rados_connection.h"
#include "store/rados/rados_page_store.h"
#include "tests/rados/rados_test_env.h"

int main(int argc, char** argv) {
  using namespace auxstore::rados;
  using Clock = std::chrono::steady_clock;
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s URI COUNT SIZE [IN_FLIGHT]\n", argv[0]);
    return 2;
  }
  auto uri = ParseRadosUri(argv[1]);
  if (!uri.ok()) return std::fprintf(stderr, "%s\n", uri.status().ToString().c_str()), 1;
  auto conn = RadosConnection::Open(*uri);
  if (!conn.ok()) return std::fprintf(stderr, "%s\n", conn.status().ToString().c_str()), 1;
  const size_t count = std::strtoull(argv[2], nullptr, 10);
  const size_t size = std::strtoull(argv[3], nullptr, 10);
  const size_t in_flight = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 16;
  const uint64_t seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  std::vector<std::vector<uint8_t>> pages;
  for (size_t i = 0; i < count; ++i) pages.push_back(testenv::PageBytes(seed, i, size));
  std::vector<auxstore::ByteSpan> spans(pages.begin(), pages.end());
  RadosPageStore store(**conn, in_flight);

  auto t0 = Clock::now();
  auto put = store.PutPages(spans);
  double put_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!put.ok()) return std::fprintf(stderr, "%s\n", put.status().ToString().c_str()), 1;
  t0 = Clock::now();
  auto got = store.ReadPages(put->keys);
  double read_s = std::chrono::duration<double>(Clock::now() - t0).count();
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) bad += !got[i].ok() || *got[i] != pages[i];
  const double mb = static_cast<double>(count) * size / 1e6;
  std::printf(
      "RESULT %zu x %zu bytes, %zu in flight: put %.1f MB/s (%.2f s), read %.1f MB/s "
      "(%.2f s), %zu bad\n",
      count, size, in_flight, mb / put_s, put_s, mb / read_s, read_s, bad);
  for (const PageKey& k : put->keys) (*conn)->io().remove(k.ObjectName());
  return bad ? 1 : 0;
}
