#include "bench/blobdb_contender.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <filesystem>
#include <memory>

#include "bench/measure.h"

namespace auxstore::bench {

WriteResult WriteBlobDb(const std::string& dir, const WorkloadData& data) {
  std::filesystem::remove_all(dir);
  rocksdb::Options o;
  o.create_if_missing = true;
  o.enable_blob_files = true;
  o.min_blob_size = 0;
  o.advise_random_on_open = false;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::Open(o, dir, &raw).ok()) return {};
  std::unique_ptr<rocksdb::DB> db(raw);
  const Workload& w = data.workload();
  constexpr uint64_t kChunk = 4u << 20;  // the store's default chunk size
  rocksdb::WriteOptions sync;
  sync.sync = true;
  const uint64_t written_before = ProcessWriteBytes();
  Stopwatch t;
  for (uint32_t s = 0; s < w.snapshots; ++s) {
    rocksdb::WriteBatch batch;
    for (uint32_t l = 0; l < w.layers; ++l) {
      auto layer = data.Layer(s, l);
      for (uint64_t off = 0, c = 0; off < layer.size() || c == 0; off += kChunk, ++c) {
        const std::string key =
            std::to_string(s) + "/" + std::to_string(l) + "/" + std::to_string(c);
        const uint64_t n = std::min<uint64_t>(kChunk, layer.size() - off);
        (void)batch.Put(key, rocksdb::Slice(reinterpret_cast<const char*>(layer.data() + off), n));
      }
    }
    (void)batch.Put("manifest/" + std::to_string(s), "m");
    if (!db->Write(sync, &batch).ok()) return {};
  }
  WriteResult r;
  r.seconds = t.Seconds();
  // Bytes written so far; the memtable's flush to blob files comes later and
  // is counted by flushing now (what the WAL-based path eventually costs).
  (void)db->Flush(rocksdb::FlushOptions());
  r.amplification = static_cast<double>(ProcessWriteBytes() - written_before) /
                    static_cast<double>(w.total_bytes());
  (void)db->Close();
  return r;
}

}  // namespace auxstore::bench
