#include "store/rocks/rocks_options.h"

#include <rocksdb/cache.h>
#include <rocksdb/file_system.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/table.h>

#include "store/rocks/buffer_pool_allocator.h"
#include "store/rocks/deferred_delete_fs.h"
#include "store/rocks/owner_only_fs.h"
#include "store/rocks/rocks_logger.h"
#include "store/rocks/xxh3_file_checksum.h"

namespace auxstore::store_internal {
namespace {

// Turns off RocksDB's automatic recovery from background errors (NoSpace via
// the SstFileManager, retryable I/O errors via the resume thread). The store
// fences the handle after a failed write and recovers by reopening; 7.8.3's
// DBImpl::ResumeImpl aborts the process after a failed MANIFEST write (live
// assert `!versions_->descriptor_log_`), found by tests/reliability/
// io_fault_test (ENOSPC/EIO injected on MANIFEST writes).
class NoAutoRecovery : public rocksdb::EventListener {
 public:
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status bg_error,
                            bool* auto_recovery) override {
    bg_error.PermitUncheckedError();
    *auto_recovery = false;
  }
};

rocksdb::ColumnFamilyOptions BaseCfOptions(std::shared_ptr<rocksdb::Cache> cache) {
  rocksdb::ColumnFamilyOptions cf;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = std::move(cache);
  // XXH3 block checksums: hardware-speed, unlike the package's software CRC32c.
  t.checksum = rocksdb::kXXH3;
  auto factory = std::shared_ptr<rocksdb::TableFactory>(rocksdb::NewBlockBasedTableFactory(t));
  cf.table_factory = factory;
  cf.compression = rocksdb::kNoCompression;  // bf16 activations do not compress
  return cf;
}

}  // namespace

RocksSetup MakeRocksSetup(std::shared_ptr<rocksdb::FileSystem> base_fs, LogSink log_sink,
                          LogLevel log_level) {
  RocksSetup s;
  if (!base_fs) base_fs = rocksdb::FileSystem::Default();
  s.env = rocksdb::NewCompositeEnv(
      NewDeferredDeleteFileSystem(NewOwnerOnlyFileSystem(std::move(base_fs))));

  rocksdb::DBOptions& db = s.db;
  db.env = s.env.get();
  // Each open decides: only a new store's open may create (store_dir.h).
  db.create_if_missing = false;
  db.create_missing_column_families = true;
  // The default kPointInTimeRecovery silently drops acknowledged writes after
  // one flipped WAL bit; this mode refuses to open instead and still opens
  // after every kill -9 (reliability-notes #3).
  db.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  db.paranoid_checks = true;
  // Multi-MiB values need kernel readahead (perf-notes cause 3).
  db.advise_random_on_open = false;
  // Blob/SST file checksums in the MANIFEST, so VerifyFileChecksums covers
  // every file (reliability-notes #4).
  db.file_checksum_gen_factory = NewXxh3FileChecksumGenFactory();
  db.max_background_jobs = 2;
  // No LOG file: its writer asserts after a failed write (a full disk
  // aborted the process on close), and the engine gets the records instead.
  db.info_log = NewSinkLogger(std::move(log_sink), log_level);
  db.info_log_level = db.info_log->GetInfoLogLevel();
  // No preallocation: a reopen after the disk filled must not need 4 MiB for
  // an empty MANIFEST (and a WAL the size of a memtable) before it can say
  // how much it needs (store_dir.h, CheckSpaceToOpen).
  db.allow_fallocate = false;
  // Files written by SstFileWriter and ingested carry no unique id in the
  // MANIFEST; the check would only warn about each of them at every open.
  db.verify_sst_unique_id_in_manifest = false;
  // Recovery replays the WALs into memtables and keeps them instead of
  // flushing them at open: an open after a crash then writes only a new
  // MANIFEST, OPTIONS and an empty WAL, so a store that filled its disk
  // opens again once about a MANIFEST's worth is free (CheckSpaceToOpen).
  // Only while every memtable fits, though: 7.8.3 flushes one that fills
  // during the replay, and then all of them at the end, so a WAL larger
  // than a memtable needs about its size again in SSTs (issue 20 break 4;
  // db_store_open.cc, RecoveryFlushes, tells which case an open is in).
  db.avoid_flush_during_recovery = true;
  // Obsolete WAL files are deleted right away: snapshot data is ingested,
  // the WAL only ever holds small snapshots and manifests.
  db.max_total_wal_size = 64u << 20;
  // No automatic recovery from background errors (see NoAutoRecovery).
  db.max_bgerror_resume_count = 0;
  db.listeners.push_back(std::make_shared<NoAutoRecovery>());

  // A small cache for manifests and metadata; its allocator recycles the
  // multi-MiB read buffers of chunk records, which bypass it (fill_cache off).
  rocksdb::LRUCacheOptions cache;
  cache.capacity = 32u << 20;
  cache.memory_allocator = NewBufferPoolAllocator(64u << 20);
  std::shared_ptr<rocksdb::Cache> cache_ptr = rocksdb::NewLRUCache(cache);
  rocksdb::ColumnFamilyOptions base = BaseCfOptions(cache_ptr);
  rocksdb::ColumnFamilyOptions records = base;
  // Small snapshots reach the records family through the WAL; keep its
  // memtable modest so they flush soon and the WAL stays short.
  records.write_buffer_size = 32u << 20;
  rocksdb::ColumnFamilyOptions small = base;
  small.write_buffer_size = 8u << 20;
  // LongestPrefix probes up to every block boundary and most probes miss: a
  // Bloom filter answers those without touching data blocks.
  rocksdb::ColumnFamilyOptions manifests = small;
  {
    rocksdb::BlockBasedTableOptions t;
    t.checksum = rocksdb::kXXH3;
    t.block_cache = cache_ptr;
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    t.optimize_filters_for_memory = true;
    manifests.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  }

  s.cfs = {
      {rocksdb::kDefaultColumnFamilyName, small},
      {kMetaCf, small},
      {kNamespacesCf, small},
      {kManifestsCf, manifests},
      {kRecordsCf, records},
      {kRecencyCf, small},
      {kRunsCf, small},
      // Puts look pages up by chain hash, most of them absent: a Bloom filter.
      {kPagesCf, manifests},
      {kRefsCf, small},
  };
  return s;
}

rocksdb::Options RecordsSstWriterOptions(const RocksSetup& setup) {
  return rocksdb::Options(setup.db, setup.cfs[kRecords].options);
}

rocksdb::ReadOptions HotReadOptions() {
  rocksdb::ReadOptions r;
  // RocksDB's XXH3 block checksum is checked before the block is parsed:
  // without it a damaged block's restart array and key lengths are parsed
  // unverified, and Debian's 7.8.3 (built with live asserts) aborts the
  // reading process in ExtractUserKey (issue 12 finding 5). The store's own
  // envelope is checked after, over the value only.
  r.verify_checksums = true;
  r.fill_cache = false;  // snapshot chunks are read once per restore
  return r;
}

}  // namespace auxstore::store_internal
