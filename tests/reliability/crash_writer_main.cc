// auxstore_crash_writer: the process the kill -9 and power-loss tests kill.
// Opens a store, then writes deterministic snapshots (snapshot_spec.h) from
// several threads until it is killed (or has written --count per thread).
// On stdout, one line per event, each in a single write():
//   READY                 the store is open
//   B <seed>              a put of snapshot <seed> is about to start
//   A <seed>              PutSnapshot(<seed>) returned OK (acknowledged)
//   E <seed> <message>    PutSnapshot(<seed>) failed
//   OPENFAIL <message>    Store::Open failed (exit status 2)
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "store/open_on_file_system.h"
#include "tests/reliability/fault_fs.h"
#include "tests/reliability/snapshot_spec.h"

namespace {

using namespace auxstore;

void Say(const std::string& line) {
  const std::string l = line + "\n";
  (void)!::write(STDOUT_FILENO, l.data(), l.size());
}

struct Args {
  std::string store;
  std::string event_log;  // non-empty: run on FaultFs logging sync events
  Durability mode = Durability::kSync;
  int threads = 4;
  uint64_t seed_base = 1;
  uint64_t capacity = 0;
  uint64_t count = 0;  // per thread; 0 = until killed
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--store") {
      a->store = v;
    } else if (k == "--event-log") {
      a->event_log = v;
    } else if (k == "--mode") {
      if (v != "sync" && v != "async") return false;
      a->mode = v == "sync" ? Durability::kSync : Durability::kAsync;
    } else if (k == "--threads") {
      a->threads = std::atoi(v.c_str());
    } else if (k == "--seed-base") {
      a->seed_base = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--capacity") {
      a->capacity = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--count") {
      a->count = std::strtoull(v.c_str(), nullptr, 10);
    } else {
      return false;
    }
  }
  return !a->store.empty() && a->threads > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!Parse(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: %s --store DIR [--mode sync|async] [--threads N] [--seed-base N] "
                 "[--capacity BYTES] [--count N] [--event-log FILE]\n",
                 argv[0]);
    return 1;
  }
  Options o;
  o.durability = args.mode;
  o.chunk_bytes = reliability::kBatteryChunkBytes;
  o.capacity_bytes = args.capacity;
  std::shared_ptr<rocksdb::FileSystem> fs;
  if (!args.event_log.empty()) {
    fs = std::make_shared<reliability::FaultFs>(rocksdb::FileSystem::Default(), args.event_log,
                                                args.seed_base);
  }
  auto opened = store_internal::OpenStoreOnFileSystem(o, args.store, fs);
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
  Say("READY");
  std::vector<std::thread> writers;
  for (int t = 0; t < args.threads; ++t) {
    writers.emplace_back([&, t] {
      for (uint64_t k = 0; args.count == 0 || k < args.count; ++k) {
        const uint64_t seed = args.seed_base + t + k * args.threads;
        const reliability::SnapshotSpec spec = reliability::MakeSnapshot(seed);
        const auto blobs = spec.blobs();
        Say("B " + std::to_string(seed));
        Status s =
            store->PutSnapshot(*ns, spec.prefix, spec.token_count, blobs, spec.put_options());
        if (s.ok()) {
          Say("A " + std::to_string(seed));
        } else {
          Say("E " + std::to_string(seed) + " " + s.ToString());
          return;
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  return 0;
}
