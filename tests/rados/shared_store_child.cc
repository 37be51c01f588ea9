// The other process of shared_store_test: a store with its own local
// directory on the same pool (Options::shared).
//
//   shared_store_child restore URI DIR SEED MAX
//     LongestPrefix over the chain of conversation SEED's first MAX tokens;
//     prints "longest N" (N tokens; 0: none), then "exact" when every layer
//     of it reads back byte-exact, then puts it again and prints
//     "stored S present P" (page objects it created, and found stored)
//   shared_store_child put URI DIR SEED N...
//     reads one line from stdin (the start signal), then puts the snapshots
//     of N tokens in order, printing "acked N" after each one returned OK
//   shared_store_child lookups URI DIR SEED N...
//     LongestPrefix over the chain of N tokens, for each N in order (each
//     restored from the pool, its local copy written behind), printing
//     "found N" after each; then waits for a line on stdin (the test kills
//     it meanwhile, local copies still queued)
//   shared_store_child lease URI DIR SEED N
//     leases the snapshot of N tokens (restoring it), prints "leased", waits
//     for a line on stdin, releases it and prints "released"
//
// Exits 1 printing the error when a call fails, 2 on a usage error.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/rados/shared_test_env.h"

namespace auxstore::sharedtest {
namespace {

int Fail(const Status& st) {
  std::printf("error %s\n", st.ToString().c_str());
  std::fflush(stdout);
  return 1;
}

void Say(const std::string& s) {
  std::printf("%s\n", s.c_str());
  std::fflush(stdout);
}

std::string ReadLine() {
  char buf[64];
  return std::fgets(buf, sizeof buf, stdin) ? buf : "";
}

int Main(int argc, char** argv) {
  if (argc < 6) return 2;
  const std::string mode = argv[1];
  auto store = OpenShared(argv[3], argv[2]);
  if (!store.ok()) return Fail(store.status());
  Store& s = **store;
  const Conversation conv(std::strtoull(argv[4], nullptr, 10));
  auto ns = s.RegisterNamespace(conv.spec());
  if (!ns.ok()) return Fail(ns.status());
  if (mode == "restore") {
    const uint64_t max = std::strtoull(argv[5], nullptr, 10);
    const auto chain = conv.Chain(max);
    auto found = s.LongestPrefix(*ns, chain);
    if (!found.ok()) return Fail(found.status());
    const uint64_t n = *found ? (**found + 1) * kBlock : 0;
    Say("longest " + std::to_string(n));
    if (n == 0) return 0;
    if (Status st = conv.Check(s, *ns, n); !st.ok()) return Fail(st);
    Say("exact");
    if (Status st = conv.Put(s, *ns, n); !st.ok()) return Fail(st);
    const StoreStats stats = s.Stats();
    Say("stored " + std::to_string(stats.shared_pages_stored) + " present " +
        std::to_string(stats.shared_pages_present));
    return 0;
  }
  if (mode == "put") {
    ReadLine();
    for (int i = 5; i < argc; ++i) {
      const uint64_t n = std::strtoull(argv[i], nullptr, 10);
      if (Status st = conv.Put(s, *ns, n); !st.ok()) return Fail(st);
      Say("acked " + std::to_string(n));
    }
    return 0;
  }
  if (mode == "lookups") {
    for (int i = 5; i < argc; ++i) {
      const uint64_t n = std::strtoull(argv[i], nullptr, 10);
      auto found = s.LongestPrefix(*ns, conv.Chain(n));
      if (!found.ok()) return Fail(found.status());
      const uint64_t tokens = *found ? (**found + 1) * kBlock : 0;
      Say("found " + std::to_string(tokens));
    }
    ReadLine();
    return 0;
  }
  if (mode == "lease") {
    const uint64_t n = std::strtoull(argv[5], nullptr, 10);
    auto lease = s.AcquireLease(*ns, conv.PrefixOf(n), 60'000);
    if (!lease.ok()) return Fail(lease.status());
    Say("leased");
    ReadLine();
    if (Status st = s.ReleaseLease(*lease); !st.ok()) return Fail(st);
    Say("released");
    return 0;
  }
  return 2;
}

}  // namespace
}  // namespace auxstore::sharedtest

int main(int argc, char** argv) { return auxstore::sharedtest::Main(argc, argv); }
