// DbStore's LayerReader (include/auxstore/layer_reader.h): the only code
// that verifies a layer. Records are read through one iterator per owner
// put (PieceReader), optionally up to ReadMode::read_ahead pieces ahead on
// the store's read pool while the caller verifies the ones before; each
// record is checked by CheckChunkRecord (store/record_check.h) in the same
// pass as the copy and the layer digest.
#include "auxstore/layer_reader.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/byte_order.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/record_check.h"

namespace auxstore::store_internal {
namespace {

std::string Where(NamespaceId ns, const Prefix& prefix) {
  return "prefix " + prefix.ToHex() + " in namespace " + NamespaceHex(ns);
}

Status NoLayer(NamespaceId ns, const Prefix& prefix, uint32_t layer) {
  return Status::NotFound("snapshot of " + Where(ns, prefix) + " has no layer " +
                          std::to_string(layer));
}

}  // namespace

// The records of one layer read piece by piece: one iterator per owner put,
// kept across its pieces (they ascend through its key range, so most are
// the next record or a short seek away in a block already read). A paged
// layer reads from many owners in turn; a fresh iterator per piece cost
// more than the read itself (bench/RESULTS.md, chains). A value read stays
// valid until its owner's iterator moves on; with `pin` (read-ahead, where
// the iterator moves on while the caller still verifies the value) until
// the reader goes, every block read held meanwhile. Read-ahead reads
// pieces of different owners on pool threads at once: each owner has its
// own lock.
//
// Except large pieces read ahead: each gets an iterator of its own, handed
// to the caller with the value and dropped when the caller moves on. Pinned
// in the owner's iterator, a 64 MiB layer held 16 blocks of 6 MiB, more than
// the block pool keeps, so every layer faulted fresh buffers in again; and
// the read-ahead tasks took turns on the owner's lock, one read in flight
// (bench/RESULTS.md, issue 25). An iterator per multi-MiB piece costs
// nothing beside its read, holds one block, and reads in parallel.
class DbStore::PieceReader {
  // `to` is a record of the put of record `at`, or of the put after it.
  static bool NextPutOrSame(const rocksdb::Slice& at, const std::string& to) {
    if (at.size() < kPutKeyBytes || to.size() < kPutKeyBytes) return false;
    if (std::memcmp(at.data(), to.data(), 8) != 0) return false;  // namespace
    const PutId from = internal::GetBE64(reinterpret_cast<const uint8_t*>(at.data()) + 8);
    const PutId next = internal::GetBE64(reinterpret_cast<const uint8_t*>(to.data()) + 8);
    return next - from <= 1;
  }

 public:
  PieceReader(DbStore& s, NamespaceId ns, bool pin, bool across_puts)
      : s_(s), ns_(ns), pin_(pin), across_puts_(across_puts) {}
  // A prefetch still on the pool reads through this reader's store.
  ~PieceReader() {
    if (prefetched_) prefetched_->got.wait();
  }

  // Pieces read ahead of at least this many bytes get their own iterator.
  static constexpr uint64_t kOwnIteratorBytes = 1u << 20;

  // The record `key` of `piece`: NotFound when absent. A large piece read
  // ahead (`ahead`, or any read of a pinning reader) comes with `own`, the
  // iterator holding its block.
  Status Read(const std::string& key, const LayerPiece& piece, bool ahead, rocksdb::Slice* value,
              std::unique_ptr<PinnedRecord>* own) {
    if (piece.bytes >= kOwnIteratorBytes) {
      std::optional<Prefetched> taken;
      {
        std::lock_guard lock(mu_);
        if (prefetched_ && prefetched_->key == key) taken.swap(prefetched_);
      }
      std::unique_ptr<PinnedRecord> record;
      if (taken) {
        auto [status, got] = taken->got.get();
        AUXSTORE_RETURN_IF_ERROR(status);
        record = std::move(got);
      } else if (pin_ || ahead) {
        record = std::make_unique<PinnedRecord>();
        AUXSTORE_RETURN_IF_ERROR(s_.PinRecord(key, record.get()));
      }
      if (record) {
        *value = record->value;
        *own = std::move(record);
        return Status::Ok();
      }
    }
    Owner* o;
    {
      std::lock_guard lock(mu_);
      auto& slot = owners_[across_puts_ ? 0 : piece.owner];
      if (!slot) slot = std::make_unique<Owner>();
      o = slot.get();
    }
    std::lock_guard lock(o->mu);
    if (!o->it) {
      o->upper = PutRangeEnd(ns_, across_puts_ ? ~PutId{0} : piece.owner);
      o->upper_slice = o->upper;
      rocksdb::ReadOptions r = HotReadOptions();
      r.iterate_upper_bound = &o->upper_slice;
      r.pin_data = pin_;
      o->it.reset(s_.db_->NewIterator(r, s_.cf_[kRecords]));
      o->it->Seek(key);
    } else if (!(o->it->Valid() && o->it->key() == rocksdb::Slice(key))) {
      // The next record of the same put is usually the next key, and so is
      // the first record of the put made just after it (across_puts_: a
      // handle's puts take consecutive ids); anything else is a Seek.
      if (o->it->Valid() && NextPutOrSame(o->it->key(), key) && o->it->key().compare(key) < 0) {
        o->it->Next();
      }
      if (!(o->it->Valid() && o->it->key() == rocksdb::Slice(key))) o->it->Seek(key);
    }
    if (!o->it->Valid()) {
      if (!o->it->status().ok()) return s_.RecordReadError(key, o->it->status());
      return Status::NotFound("no record");
    }
    if (o->it->key() != rocksdb::Slice(key)) return Status::NotFound("no record");
    // The value stays where it is, in RocksDB's block buffer or the
    // memtable's arena (with pin_data until the iterator goes).
    *value = o->it->value();
    return Status::Ok();
  }

  // Reads record `key` (of a piece of kOwnIteratorBytes or more) on the
  // read pool for a later Read of it; one at a time.
  void Prefetch(const std::string& key) {
    std::optional<Prefetched> stale;
    {
      std::lock_guard lock(mu_);
      if (prefetched_ && prefetched_->key == key) return;
      stale.swap(prefetched_);
      prefetched_.emplace();
      prefetched_->key = key;
      prefetched_->got =
          boost::asio::post(s_.read_pool_, boost::asio::use_future([this, key] {
                              auto record = std::make_unique<PinnedRecord>();
                              Status st = s_.PinRecord(key, record.get());
                              return std::make_pair(std::move(st), std::move(record));
                            }));
    }
    if (stale) stale->got.wait();  // its layer was never read (an error): dropped
  }

 private:
  struct Prefetched {
    std::string key;
    std::future<std::pair<Status, std::unique_ptr<PinnedRecord>>> got;
  };
  struct Owner {
    std::mutex mu;
    std::string upper;
    rocksdb::Slice upper_slice;
    std::unique_ptr<rocksdb::Iterator> it;
  };
  DbStore& s_;
  const NamespaceId ns_;
  const bool pin_;
  const bool across_puts_;  // one iterator, owners_[0], up to the namespace's end
  std::mutex mu_;
  std::map<PutId, std::unique_ptr<Owner>> owners_;
  std::optional<Prefetched> prefetched_;  // under mu_
};

class DbStore::LayerCursor final : public LayerReader {
 public:
  // `layer` is in `manifest` (OpenCursor checked).
  // `records` reads the snapshot's records (shared by the cursors of one
  // ReadLayersInto, used by one of them at a time).
  LayerCursor(DbStore& s, NamespaceId ns, const Prefix& prefix,
              std::shared_ptr<const Manifest> manifest, uint32_t layer, ReadMode mode,
              std::shared_ptr<PieceReader> records)
      : s_(s),
        ns_(ns),
        prefix_(prefix),
        m_(std::move(manifest)),
        entry_(*m_->FindLayer(layer)),
        pieces_(PlanPieces(*m_, entry_)),
        mode_(mode),
        hasher_(*m_, entry_),
        records_(std::move(records)) {}

  // Read-ahead in flight references this reader.
  ~LayerCursor() override {
    for (auto& pending : ahead_) pending.wait();
    if (s_.direct_) s_.direct_->GiveBuffer(std::move(view_));
  }

  // Feeds the header to the layer digest; a layer that is only a header
  // has its digest checked here.
  Status Start() {
    hasher_.Update(entry_.header);
    if (!pieces_.empty()) return Status::Ok();
    AUXSTORE_RETURN_IF_ERROR(CheckDigest());
    if (!mode_.verify_only) s_.bytes_read_ += entry_.header.size();
    return Status::Ok();
  }

  const LayerEntry& entry() const override { return entry_; }
  std::span<const LayerPiece> pieces() const override { return pieces_; }
  size_t next() const override { return next_; }

  Result<LayerPiece> ReadInto(std::span<uint8_t> dst) override {
    AUXSTORE_RETURN_IF_ERROR(CanRead());
    const LayerPiece piece = pieces_[next_];
    if (dst.size() < piece.bytes) {
      return Status::OutOfRange("the destination holds " + std::to_string(dst.size()) +
                                " bytes, piece " + std::to_string(next_) + " of layer " +
                                std::to_string(entry_.layer) + " is " +
                                std::to_string(piece.bytes));
    }
    AUXSTORE_RETURN_IF_ERROR(ReadNext(dst.first(piece.bytes)).status());
    return piece;
  }

  Result<View> Read() override {
    AUXSTORE_RETURN_IF_ERROR(CanRead());
    const LayerPiece piece = pieces_[next_];
    if (StreamsDirect()) {
      AUXSTORE_ASSIGN_OR_RETURN(std::optional<ByteSpan> bytes, StreamDirect(piece));
      if (bytes) return View{piece, *bytes};
    }
    AUXSTORE_ASSIGN_OR_RETURN(ByteSpan bytes, ReadNext({}));
    return View{piece, bytes};
  }

 private:
  struct Fetched {
    std::string key;  // the record's
    Status status;
    rocksdb::Slice value;               // held by records_, or by `own`
    std::unique_ptr<PinnedRecord> own;  // a large piece's own iterator
  };

  // A multi-MiB layer's pieces read from table files go through a file
  // handle of their own (DirectRecords::Stream); others through the table's.
  DirectRecords::Stream* Stream() {
    if (!stream_ && entry_.bytes >= DirectRecords::kStreamBytes) {
      stream_ = std::make_unique<DirectRecords::Stream>();
    }
    return stream_.get();
  }

  // Whether Read() takes its pieces from the table files (StreamDirect).
  bool StreamsDirect() const { return mode_.direct && !mode_.digest_first && s_.direct_; }

  // Piece next_ of a stream read from the table files into a buffer of
  // this reader's, the record's own checksum checked before the view is
  // handed on; nullopt when it is left to RocksDB (nothing was hashed).
  // A piece under DirectRecords::kOneReadBytes comes with one read of its
  // whole data block (a paged layer's pieces, a small layer's); a larger
  // one in sub-reads, each hashed while in cache.
  Result<std::optional<ByteSpan>> StreamDirect(const LayerPiece& piece) {
    if (piece.bytes >= DirectRecords::kOneReadBytes) {
      if (view_.size() < piece.bytes) {
        s_.direct_->GiveBuffer(std::move(view_));
        view_ = s_.direct_->TakeBuffer(piece.bytes);
      }
      return ReadDirect(piece, {view_.data(), piece.bytes}, DirectRecords::Check::kRecordChecksum);
    }
    // One size for every buffer in the pool (a small one given back would
    // be grown, and its pages faulted, by the next multi-MiB stream).
    if (view_.empty()) view_ = s_.direct_->TakeBuffer(DirectRecords::kOneReadBytes);
    AssignRecordKey(&taken_.key, ns_, piece.owner, entry_.layer, piece.array, piece.chunk);
    auto got = s_.direct_->ReadRecord(taken_.key, ChunkRecordKind(entry_.kind), piece.chunk_offset,
                                      piece.bytes, &view_, &hasher_);
    if (!got.ok()) return Fail(Damaged(got.error().WithContext(PieceWhere(piece)), &piece));
    if (!*got) return std::optional<ByteSpan>();
    read_direct_ = true;
    AUXSTORE_ASSIGN_OR_RETURN(ByteSpan bytes, Delivered(**got));
    return std::optional<ByteSpan>(bytes);
  }

  Status CanRead() const {
    if (!failed_.ok()) return failed_;
    if (done()) {
      return Status::OutOfRange("every piece of layer " + std::to_string(entry_.layer) + " of " +
                                Where(ns_, prefix_) + " was read");
    }
    return Status::Ok();
  }

  // Checks piece next_'s record, copying its bytes to `copy_to` when not
  // empty, and moves on; the digest is checked before the last one returns.
  Result<ByteSpan> ReadNext(std::span<uint8_t> copy_to) {
    const LayerPiece& piece = pieces_[next_];
    if (mode_.direct && mode_.digest_first && s_.direct_ && !copy_to.empty()) {
      AUXSTORE_ASSIGN_OR_RETURN(std::optional<ByteSpan> bytes,
                                ReadDirect(piece, copy_to, DirectRecords::Check::kLayerDigest));
      if (bytes) return *bytes;
    }
    Fetched& f = Take();
    current_ = std::move(f.own);  // the previous piece's block goes
    Status st = std::move(f.status);
    if (st.IsNotFound()) {
      st = Status::Corruption("snapshot is torn: missing " + PieceWhere(piece));
    } else if (!st.ok()) {
      st = st.WithContext(PieceWhere(piece));
    }
    ByteSpan bytes;
    if (st.ok()) {
      const bool digest_only = mode_.digest_first && !copy_to.empty();
      auto checked = CheckChunkRecord(
          Bytes(f.key), Bytes(f.value),
          {entry_.kind, piece.chunk_offset, piece.bytes, false, digest_only}, &hasher_, copy_to);
      if (checked.ok()) {
        bytes = *checked;
      } else {
        st = checked.error().WithContext(PieceWhere(piece));
      }
    }
    if (!st.ok()) return Fail(Damaged(std::move(st), &piece));
    return Delivered(bytes);
  }

  // Piece next_ read from the table files into `dst`, checked by `check`;
  // nullopt when it is left to RocksDB (nothing was hashed).
  Result<std::optional<ByteSpan>> ReadDirect(const LayerPiece& piece, std::span<uint8_t> dst,
                                             DirectRecords::Check check) {
    AssignRecordKey(&taken_.key, ns_, piece.owner, entry_.layer, piece.array, piece.chunk);
    // A small piece reads through the table's handle: a paged layer's
    // alternate between files, and the stream's handle follows one file.
    auto direct = s_.direct_->ReadRange(
        taken_.key, ChunkRecordKind(entry_.kind), piece.chunk_offset, dst, check, &hasher_,
        piece.bytes >= DirectRecords::kOneReadBytes ? Stream() : nullptr);
    if (!direct.ok()) return Fail(Damaged(direct.error().WithContext(PieceWhere(piece)), &piece));
    if (*direct != DirectRecords::Outcome::kRead) return std::optional<ByteSpan>();
    read_direct_ = true;
    AUXSTORE_ASSIGN_OR_RETURN(ByteSpan bytes, Delivered(dst));
    return std::optional<ByteSpan>(bytes);
  }

  // Piece next_ read as `bytes`: the digest checked after the last one.
  Result<ByteSpan> Delivered(ByteSpan bytes) {
    if (next_ + 1 == pieces_.size()) AUXSTORE_RETURN_IF_ERROR(CheckDigest());
    ++next_;
    if (!mode_.verify_only)
      s_.bytes_read_ += bytes.size() + (next_ == 1 ? entry_.header.size() : 0);
    return bytes;
  }

  // The record of piece next_ in taken_: read ahead on the pool, or read
  // here. Up to read_ahead pieces after it go on the pool first (the first
  // piece is read here: small layers pay no hand-off).
  Fetched& Take() {
    const size_t until = std::min(pieces_.size(), next_ + 1 + mode_.read_ahead);
    if (posted_ <= next_) posted_ = next_ + 1;
    for (; posted_ < until; ++posted_) {
      // A reader that does not pin reads ahead only what gets an iterator of
      // its own; the next small piece waits for its turn, and so do the ones
      // after it.
      if (mode_.ahead_large_only && pieces_[posted_].bytes < PieceReader::kOwnIteratorBytes) break;
      ahead_.push_back(
          boost::asio::post(s_.read_pool_, boost::asio::use_future([this, i = posted_] {
                              Fetched f;
                              Fetch(i, &f, /*ahead=*/true);
                              return f;
                            })));
    }
    if (ahead_.empty() || posted_ - ahead_.size() > next_) {
      Fetch(next_, &taken_, /*ahead=*/false);
    } else {
      taken_ = ahead_.front().get();
      ahead_.erase(ahead_.begin());
    }
    return taken_;
  }

  // Piece i's record into `f`, its key written over f->key's buffer;
  // `ahead`: on the read pool, while the caller checks an earlier piece.
  void Fetch(size_t i, Fetched* f, bool ahead) {
    const LayerPiece& piece = pieces_[i];
    AssignRecordKey(&f->key, ns_, piece.owner, entry_.layer, piece.array, piece.chunk);
    f->own.reset();
    f->status = records_->Read(f->key, piece, ahead, &f->value, &f->own);
  }

  Status CheckDigest() {
    Status st = CheckLayerDigest(entry_, hasher_.Digest());
    if (st.ok()) return st;
    if (mode_.digest_first) AUXSTORE_RETURN_IF_ERROR(FindDamagedRecord());
    return Fail(Damaged(st.WithContext(Where(ns_, prefix_)), nullptr));
  }

  // After a digest mismatch of a digest_first read: every record decoded
  // again with its own checksum; the first one damaged fails the read as
  // it would have failed a checked read (the record quarantined). OK when
  // every record checks: the layer itself is wrong.
  Status FindDamagedRecord() {
    // Pieces read from the table files: RocksDB's records read once more
    // first. When their bytes give the manifest's digest, the damage was
    // in what was read past RocksDB (or a record moved meanwhile): the read
    // fails, and nothing is quarantined.
    if (read_direct_) {
      LayerHasher again(*m_, entry_);
      again.Update(entry_.header);
      bool decoded = true;
      for (size_t i = 0; i < pieces_.size() && decoded; ++i) {
        const LayerPiece& piece = pieces_[i];
        Fetched f;
        Fetch(i, &f, /*ahead=*/false);
        // An error that is not damage (an I/O error) leaves the question
        // open: it fails the read, and nothing is quarantined.
        if (!f.status.ok() && !f.status.IsNotFound() && !f.status.IsCorruption()) {
          return Fail(f.status.WithContext(PieceWhere(piece)));
        }
        decoded = f.status.ok() &&
                  CheckChunkRecord(Bytes(f.key), Bytes(f.value),
                                   {entry_.kind, piece.chunk_offset, piece.bytes, false}, &again)
                      .ok();
      }
      if (decoded && CheckLayerDigest(entry_, again.Digest()).ok()) {
        // Whatever made them differ, this store reads through RocksDB from
        // now on, so the read asked for below gives the right bytes.
        s_.direct_->set_enabled(false);
        return Fail(Status::IOError(
            "layer " + std::to_string(entry_.layer) + " of " + Where(ns_, prefix_) +
            " read from its table files differs from what RocksDB reads; read it again "
            "(this store now reads through RocksDB only)"));
      }
    }
    for (size_t i = 0; i < pieces_.size(); ++i) {
      const LayerPiece& piece = pieces_[i];
      Fetched f;
      Fetch(i, &f, /*ahead=*/false);
      Status st = std::move(f.status);
      if (st.IsNotFound()) {
        st = Status::Corruption("snapshot is torn: missing " + PieceWhere(piece));
      } else {
        if (st.ok()) {
          st = CheckChunkRecord(Bytes(f.key), Bytes(f.value),
                                {entry_.kind, piece.chunk_offset, piece.bytes, false})
                   .status();
        }
        if (!st.ok()) st = st.WithContext(PieceWhere(piece));
      }
      if (!st.ok()) return Fail(Damaged(std::move(st), &piece));
    }
    return Status::Ok();
  }

  // The quarantine decision. A Corruption quarantines the snapshot (and,
  // for a damaged record, every snapshot using it), unless the snapshot was
  // erased or replaced while it was read: its records went with the
  // writer, not damage, and that reads NotFound. Verify's reads decide the
  // same and quarantine nothing.
  Status Damaged(Status why, const LayerPiece* piece) {
    if (!why.IsCorruption()) return why;
    const std::string skey = SnapshotKey(ns_, prefix_);
    const ManifestCheck same = SameManifest(skey, *m_);
    std::string now;
    if (!s_.db_->Get(rocksdb::ReadOptions(), s_.cf_[kManifests], skey, &now).ok() || !same(now)) {
      return Status::NotFound("snapshot of " + Where(ns_, prefix_) +
                              " was erased or replaced while it was being read");
    }
    if (mode_.verify_only) return why;
    if (mode_.hold_damage) {
      *mode_.hold_damage = {entry_.layer, piece ? std::optional(*piece) : std::nullopt, why};
      return why;
    }
    s_.QuarantineDamage(ns_, prefix_, same, entry_.layer, piece, why);
    return why;
  }

  Status Fail(Status st) {
    failed_ = st;
    return st;
  }

  std::string PieceWhere(const LayerPiece& piece) const {
    return "layer " + std::to_string(entry_.layer) + " array " + std::to_string(piece.array) +
           " chunk " + std::to_string(piece.chunk) + " of put " + PutHex(piece.owner) + " (" +
           Where(ns_, prefix_) + ")";
  }

  DbStore& s_;
  const NamespaceId ns_;
  const Prefix prefix_;
  const std::shared_ptr<const Manifest> m_;
  const LayerEntry& entry_;  // in *m_
  const std::vector<LayerPiece> pieces_;
  const ReadMode mode_;
  LayerHasher hasher_;
  const std::shared_ptr<PieceReader> records_;
  // Pieces [posted_ - size, posted_): a vector, which (unlike a deque)
  // allocates nothing for the reads that never read ahead.
  std::vector<std::future<Fetched>> ahead_;
  Fetched taken_;                          // the piece ReadNext checks (Take's)
  std::unique_ptr<PinnedRecord> current_;  // the last piece read, when it has its own iterator
  size_t next_ = 0;
  size_t posted_ = 0;         // pieces below it are read or being read
  bool read_direct_ = false;  // a piece came from the table files (DirectRecords)
  std::unique_ptr<DirectRecords::Stream> stream_;  // a multi-MiB layer's own file handle
  std::vector<uint8_t> view_;                      // Read()'s pieces from table files
  Status failed_;
};

std::shared_ptr<DbStore::PieceReader> DbStore::NewPieceReader(NamespaceId ns, ReadMode mode,
                                                              bool across_puts) {
  return std::make_shared<PieceReader>(*this, ns, /*pin=*/mode.read_ahead > 0, across_puts);
}

Result<std::unique_ptr<LayerReader>> DbStore::OpenCursor(NamespaceId ns, const Prefix& prefix,
                                                         Manifest manifest, uint32_t layer,
                                                         ReadMode mode) {
  return OpenCursor(ns, prefix, std::make_shared<const Manifest>(std::move(manifest)), layer, mode,
                    NewPieceReader(ns, mode));
}

Result<std::unique_ptr<LayerReader>> DbStore::OpenCursor(NamespaceId ns, const Prefix& prefix,
                                                         std::shared_ptr<const Manifest> manifest,
                                                         uint32_t layer, ReadMode mode,
                                                         std::shared_ptr<PieceReader> records) {
  if (manifest->FindLayer(layer) == nullptr) return NoLayer(ns, prefix, layer);
  auto cursor = std::make_unique<LayerCursor>(*this, ns, prefix, std::move(manifest), layer, mode,
                                              std::move(records));
  AUXSTORE_RETURN_IF_ERROR(cursor->Start());
  return std::unique_ptr<LayerReader>(std::move(cursor));
}

// ReadLayerInto's and ReadLayersInto's copy of one layer into `dst`: its
// cursor on the stack (a connector's small page reads four layers; an
// allocation each was measurable, bench/RESULTS.md issue 24).
Result<uint64_t> DbStore::CopyLayerInto(NamespaceId ns, const Prefix& prefix,
                                        const std::shared_ptr<const Manifest>& manifest,
                                        uint32_t layer, std::span<uint8_t> dst,
                                        const std::shared_ptr<PieceReader>& records,
                                        HeldDamage* hold_damage,
                                        const std::function<bool()>& abandon) {
  const LayerEntry* entry = manifest->FindLayer(layer);
  if (entry == nullptr) return NoLayer(ns, prefix, layer);
  if (dst.size() < entry->bytes) {
    return Status::OutOfRange("layer " + std::to_string(layer) + " of " + Where(ns, prefix) +
                              " is " + std::to_string(entry->bytes) +
                              " bytes; the destination holds " + std::to_string(dst.size()));
  }
  ReadMode mode;
  mode.digest_first = true;  // the bytes land in `dst` only: one hash pass
  // Pieces read from the table files straight into `dst`, the kernel's
  // readahead keeping the disk busy while this thread hashes. Otherwise
  // multi-MiB pieces are read ahead while this thread hashes and copies the
  // one before (`records` does not pin: small pieces are read in turn).
  mode.direct = DirectReads();
  mode.read_ahead = mode.direct ? 0 : 2;
  mode.ahead_large_only = true;
  mode.hold_damage = hold_damage;
  LayerCursor reader(*this, ns, prefix, manifest, layer, mode, records);
  AUXSTORE_RETURN_IF_ERROR(reader.Start());
  std::copy(entry->header.begin(), entry->header.end(), dst.begin());
  while (!reader.done()) {
    if (abandon && abandon()) return Status::Internal("read abandoned: an earlier layer ended it");
    const uint64_t at = reader.pieces()[reader.next()].blob_offset;
    AUXSTORE_RETURN_IF_ERROR(reader.ReadInto(dst.subspan(at)).status());
  }
  return entry->bytes;
}

void DbStore::QuarantineDamage(NamespaceId ns, const Prefix& prefix, const ManifestCheck& same,
                               uint32_t layer, const LayerPiece* piece, const Status& why) {
  if (piece) (void)QuarantineRecord(ns, piece->owner, layer, piece->array, piece->chunk, why);
  (void)QuarantineIf(ns, prefix, same, why);  // gone already after a record's quarantine
}

void DbStore::QuarantineHeld(NamespaceId ns, const Prefix& prefix, const Manifest& manifest,
                             const HeldDamage& held) {
  if (held.why.ok()) return;
  QuarantineDamage(ns, prefix, SameManifest(SnapshotKey(ns, prefix), manifest), held.layer,
                   held.piece ? &*held.piece : nullptr, held.why);
}

void DbStore::PrefetchFirstPiece(PieceReader& records, NamespaceId ns, const Manifest& m,
                                 uint32_t layer) {
  const LayerEntry* entry = m.FindLayer(layer);
  // Small layers (a connector's pages) and layers whose first piece cannot
  // reach the size (a piece is at most its owner's chunk) pay nothing
  // beyond this look-up.
  if (entry == nullptr || entry->bytes < PieceReader::kOwnIteratorBytes || DirectReads()) return;
  const uint32_t first_chunk_bytes =
      entry->runs.empty() ? m.chunk_bytes : entry->runs.front().owner_chunk_bytes;
  if (first_chunk_bytes < PieceReader::kOwnIteratorBytes) return;
  const std::vector<LayerPiece> pieces = PlanPieces(m, *entry);
  if (pieces.empty() || pieces.front().bytes < PieceReader::kOwnIteratorBytes) return;
  const LayerPiece& first = pieces.front();
  records.Prefetch(RecordKey(ns, first.owner, layer, first.array, first.chunk));
}

Result<std::unique_ptr<LayerReader>> DbStore::OpenLayer(NamespaceId ns, const Prefix& prefix,
                                                        const Manifest& manifest, uint32_t layer,
                                                        PieceChecks checks) {
  ReadMode mode;
  mode.digest_first = checks == PieceChecks::kLayerDigest;
  mode.direct = mode.digest_first && DirectReads();
  return OpenCursor(ns, prefix, manifest, layer, mode);
}

}  // namespace auxstore::store_internal
