// auxstore_trust_kill_child: a put killed by a real SIGKILL at one exact
// point, for tests/trust's interrupted-put test. The store runs on KillFs, a
// rocksdb::FileSystemWrapper (the same seam as tests/reliability/fault_fs,
// store_internal::OpenStoreOnFileSystem) that, once armed, raises SIGKILL on
// the first append to a WAL (*.log) after an SST file was linked or renamed
// into the store directory: that is, after the SST ingest of a snapshot
// (move_files links the file) and before its manifest commit reaches the WAL.
//
//   auxstore_trust_kill_child --store DIR --seed S --profile P [--pre-seeds 1,2,3]
//                             [--pre-profile small] [--chunk-bytes N]
//
// Lines: "A <seed>" for each pre-seed put, "ARMED", then nothing (killed).
// If the put returns, "RETURNED <status>" and exit 3: the failpoint never fired.
//
//   auxstore_trust_kill_child --reput 1 --store DIR --seed S --profile P
// instead puts seed S of profile P on the plain file system through the
// public C++ API with Options.background_maintenance = false (so no
// background sweep runs first): "A <seed>" or "E <seed> <status>", exit 0.
#include <rocksdb/file_system.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "store/open_on_file_system.h"
#include "tests/trust/trust_spec.h"

namespace {

using namespace auxstore;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

void Say(const std::string& line) {
  const std::string l = line + "\n";
  (void)!::write(STDOUT_FILENO, l.data(), l.size());
}

bool IsWal(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0 && name != "LOG";
}

struct KillState {
  std::string store_dir;  // lexically normal
  std::atomic<bool> armed{false};
  std::atomic<bool> sst_linked{false};
};

class KillOnAppendFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  KillOnAppendFile(std::unique_ptr<rocksdb::FSWritableFile> t, KillState* k)
      : FSWritableFileOwnerWrapper(std::move(t)), k_(k) {}
  IOStatus Append(const rocksdb::Slice& d, const IOOptions& o, IODebugContext* g) override {
    MaybeDie();
    return target()->Append(d, o, g);
  }
  IOStatus Append(const rocksdb::Slice& d, const IOOptions& o,
                  const rocksdb::DataVerificationInfo& v, IODebugContext* g) override {
    MaybeDie();
    return target()->Append(d, o, v, g);
  }
  IOStatus PositionedAppend(const rocksdb::Slice& d, uint64_t off, const IOOptions& o,
                            IODebugContext* g) override {
    MaybeDie();
    return target()->PositionedAppend(d, off, o, g);
  }

 private:
  void MaybeDie() {
    if (k_->armed && k_->sst_linked) ::raise(SIGKILL);
  }
  KillState* k_;
};

class KillFs : public rocksdb::FileSystemWrapper {
 public:
  KillFs(std::shared_ptr<rocksdb::FileSystem> base, KillState* k)
      : FileSystemWrapper(std::move(base)), k_(k) {}
  const char* Name() const override { return "AuxstoreTrustKillFs"; }

  IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                           std::unique_ptr<rocksdb::FSWritableFile>* r,
                           IODebugContext* d) override {
    return Wrap(f, target()->NewWritableFile(f, o, r, d), r);
  }
  IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                              std::unique_ptr<rocksdb::FSWritableFile>* r,
                              IODebugContext* d) override {
    return Wrap(f, target()->ReopenWritableFile(f, o, r, d), r);
  }
  IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                             const rocksdb::FileOptions& o,
                             std::unique_ptr<rocksdb::FSWritableFile>* r,
                             IODebugContext* d) override {
    return Wrap(f, target()->ReuseWritableFile(f, old, o, r, d), r);
  }
  IOStatus LinkFile(const std::string& s, const std::string& t, const IOOptions& o,
                    IODebugContext* d) override {
    IOStatus st = target()->LinkFile(s, t, o, d);
    if (st.ok()) Moved(t);
    return st;
  }
  IOStatus RenameFile(const std::string& s, const std::string& t, const IOOptions& o,
                      IODebugContext* d) override {
    IOStatus st = target()->RenameFile(s, t, o, d);
    if (st.ok()) Moved(t);
    return st;
  }

 private:
  IOStatus Wrap(const std::string& f, IOStatus s, std::unique_ptr<rocksdb::FSWritableFile>* r) {
    if (s.ok() && *r && IsWal(f)) *r = std::make_unique<KillOnAppendFile>(std::move(*r), k_);
    return s;
  }
  void Moved(const std::string& to) {
    namespace fs = std::filesystem;
    const fs::path p = fs::path(to).lexically_normal();
    if (k_->armed && p.extension() == ".sst" && p.parent_path().string() == k_->store_dir) {
      k_->sst_linked = true;
    }
  }
  KillState* k_;
};

std::vector<uint64_t> ParseList(const std::string& s) {
  std::vector<uint64_t> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    out.push_back(std::strtoull(s.substr(i, j - i).c_str(), nullptr, 10));
    i = j + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string store, profile = "bigA", pre_profile = "small";
  uint64_t seed = 0;
  uint32_t chunk = 64 * 1024;
  std::vector<uint64_t> pre;
  bool reput = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--store")
      store = v;
    else if (k == "--seed")
      seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--profile")
      profile = v;
    else if (k == "--pre-profile")
      pre_profile = v;
    else if (k == "--pre-seeds")
      pre = ParseList(v);
    else if (k == "--reput")
      reput = v == "1";
    else if (k == "--chunk-bytes")
      chunk = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
    else
      return 1;
  }
  if (store.empty() || !trust::MakeProfile(profile, seed) || !trust::MakeProfile(pre_profile, 1)) {
    return 1;
  }
  if (reput) {
    Options o;
    o.chunk_bytes = chunk;
    o.background_maintenance = false;
    auto opened = Store::Open(o, store);
    if (!opened.ok()) {
      Say("OPENFAIL " + opened.status().ToString());
      return 2;
    }
    auto ns = (*opened)->RegisterNamespace(trust::BatterySpec());
    const auto spec = *trust::MakeProfile(profile, seed);
    Status st = ns.ok() ? (*opened)->PutSnapshot(*ns, spec.prefix, spec.token_count, spec.blobs(),
                                                 spec.put_options())
                        : ns.status();
    Say(st.ok() ? "A " + std::to_string(seed) : "E " + std::to_string(seed) + " " + st.ToString());
    return 0;
  }
  KillState k;
  k.store_dir = std::filesystem::path(std::filesystem::absolute(store)).lexically_normal().string();
  Options o;
  o.chunk_bytes = chunk;
  auto fs = std::make_shared<KillFs>(rocksdb::FileSystem::Default(), &k);
  auto opened = store_internal::OpenStoreOnFileSystem(
      o, std::filesystem::absolute(store).lexically_normal().string(), fs);
  if (!opened.ok()) {
    Say("OPENFAIL " + opened.status().ToString());
    return 2;
  }
  auto db = std::move(opened).value();
  auto ns = db->RegisterNamespace(trust::BatterySpec());
  if (!ns.ok()) {
    Say("OPENFAIL " + ns.status().ToString());
    return 2;
  }
  for (uint64_t s : pre) {
    const auto spec = *trust::MakeProfile(pre_profile, s);
    Status st =
        db->PutSnapshot(*ns, spec.prefix, spec.token_count, spec.blobs(), spec.put_options());
    if (!st.ok()) {
      Say("E " + std::to_string(s) + " " + st.ToString());
      return 2;
    }
    Say("A " + std::to_string(s));
  }
  const auto spec = *trust::MakeProfile(profile, seed);
  k.armed = true;
  Say("ARMED");
  Status st = db->PutSnapshot(*ns, spec.prefix, spec.token_count, spec.blobs(), spec.put_options());
  Say("RETURNED " + st.ToString());
  return 3;
}
