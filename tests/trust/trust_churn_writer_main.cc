// auxstore_trust_churn_writer: a live writer that makes a store's files come
// and go as fast as a real engine does, for the readers-beside-a-writer test
// (verify_beside_writer_test.cc). Through the public C++ API only.
//
//   auxstore_trust_churn_writer --store DIR --stop-fd FD [--capacity BYTES]
//                               [--threads N] [--seed-base N]
//
// Each thread puts the battery's deterministic snapshots (snapshot_spec.h:
// odd seeds are chained conversation turns sharing pages, about one in four
// even seeds is over 1 MiB and SST-ingested). After each fourth turn of a
// conversation it erases that conversation's second turn, the owner of the
// pages the fourth reads, and puts it again (a re-put that now shares the
// fourth turn's pages). `--capacity` (default 12 MiB) makes LRU eviction run
// on most puts, so reclaim drops records and whole SSTs, and RocksDB flushes
// and compacts throughout. It stops when FD reaches EOF, closes the store
// and exits 0. Lines on stdout, each one write():
//   READY | A <seed> | ERASED <seed> | E <seed> <message> | CLOSED
//   OPENFAIL <message> (exit 2)
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "auxstore/store.h"
#include "tests/reliability/snapshot_spec.h"

namespace {

using namespace auxstore;

void Say(const std::string& line) {
  const std::string l = line + "\n";
  (void)!::write(STDOUT_FILENO, l.data(), l.size());
}

struct Args {
  std::string store;
  int stop_fd = -1;
  uint64_t capacity = 12u << 20;
  int threads = 2;
  uint64_t seed_base = 1;
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--store") {
      a->store = v;
    } else if (k == "--stop-fd") {
      a->stop_fd = std::atoi(v.c_str());
    } else if (k == "--capacity") {
      a->capacity = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--threads") {
      a->threads = std::atoi(v.c_str());
    } else if (k == "--seed-base") {
      a->seed_base = std::strtoull(v.c_str(), nullptr, 10);
    } else {
      return false;
    }
  }
  return !a->store.empty() && a->stop_fd >= 0 && a->threads > 0;
}

Status Put(Store& store, NamespaceId ns, uint64_t seed) {
  const reliability::SnapshotSpec spec = reliability::MakeSnapshot(seed);
  const auto blobs = spec.blobs();
  return store.PutSnapshot(ns, spec.prefix, spec.token_count, blobs, spec.put_options());
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!Parse(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: %s --store DIR --stop-fd FD [--capacity BYTES] [--threads N] "
                 "[--seed-base N]\n",
                 argv[0]);
    return 1;
  }
  Options o;
  o.chunk_bytes = reliability::kBatteryChunkBytes;
  o.capacity_bytes = args.capacity;
  auto opened = Store::Open(o, args.store);
  if (!opened.ok()) {
    Say("OPENFAIL " + opened.status().ToString());
    return 2;
  }
  std::unique_ptr<Store> store = std::move(opened).value();
  auto ns = store->RegisterNamespace(reliability::BatterySpec());
  if (!ns.ok()) {
    Say("OPENFAIL " + ns.status().ToString());
    return 2;
  }
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    char c;
    while (::read(args.stop_fd, &c, 1) > 0) {
    }
    stop = true;
  });
  Say("READY");
  // Thread t takes conversations t, t + threads, ...: every seed of a
  // conversation is put by one thread, in turn order.
  std::vector<std::thread> writers;
  for (int t = 0; t < args.threads; ++t) {
    writers.emplace_back([&, t] {
      const uint64_t per = reliability::kTurnsPerConversation;
      for (uint64_t conv = args.seed_base / per + t; !stop; conv += args.threads) {
        for (uint64_t turn = 0; turn < per && !stop; ++turn) {
          const uint64_t seed = conv * per + turn;
          Status s = Put(*store, *ns, seed);
          if (!s.ok()) {
            Say("E " + std::to_string(seed) + " " + s.ToString());
            return;
          }
          Say("A " + std::to_string(seed));
          if (turn != 3) continue;
          const uint64_t owner = conv * per + 1;  // the second turn (chained)
          s = store->Erase(*ns, reliability::MakeSnapshot(owner).prefix);
          if (!s.ok()) {
            Say("E " + std::to_string(owner) + " erase: " + s.ToString());
            return;
          }
          Say("ERASED " + std::to_string(owner));
          s = Put(*store, *ns, owner);
          if (!s.ok()) {
            Say("E " + std::to_string(owner) + " re-put: " + s.ToString());
            return;
          }
          Say("A " + std::to_string(owner));
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  watcher.join();
  store.reset();
  Say("CLOSED");
  return 0;
}
